// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_xfer: checked transfers through rdma_cm, and connection churn (see
 * "Churn" below).
 *
 *   kiwi_xfer server ADDR PORT SIZE COUNT
 *   kiwi_xfer client ADDR PORT SIZE COUNT
 *   kiwi_xfer -S send|recv [-d DEPTH] [-l [-t SECONDS]] server|client ADDR PORT SIZE COUNT
 *   kiwi_xfer churn-server ADDR PORT SIZE COUNT
 *   kiwi_xfer churn ADDR PORT SIZE COUNT
 *   kiwi_xfer churn-kills ADDR PORT SIZE COUNT
 *
 * Without -S: RDMA Write + Send rounds, with the sender reusing its one
 * buffer the moment a work request completes. For each of COUNT rounds
 * the client fills its buffer with that round's pattern, posts an RDMA
 * Write of it into the server's buffer and a Send of it, and, as soon as
 * the Send completes, overwrites the buffer with a poison pattern. The
 * server checks both copies against the pattern and answers with a Send
 * of its verdict, which the client waits for before the next round. A
 * completion that came before the transport was done with the buffer (for
 * example a zero-copy send whose data TCP must still retransmit) shows as
 * poison at the server, or as a CRC error there.
 *
 * With -S: a stream of Sends of SIZE bytes in one direction, up to DEPTH
 * (default 64) of them outstanding: the side with "send" posts them, each
 * message numbered and filled with its number's pattern; the side with
 * "recv" keeps DEPTH receives posted, checks every message in order, and
 * returns credits (Sends of the count checked so far) that let the sender
 * go on. Every WR is signalled, and both sides count what they posted and
 * what completed. COUNT messages are sent, then the sender disconnects.
 *
 * With -l the connection is expected to be lost under the stream (its
 * peer killed or frozen): COUNT is ignored, the stream runs until the QP
 * fails, and then every posted WR must complete, those not done before
 * the failure with IBV_WC_WR_FLUSH_ERR; the QP must report
 * IBV_EVENT_QP_FATAL and be in ERR, and rdma_cm must report DISCONNECTED.
 * With -t it gives up waiting for the failure after SECONDS.
 * It prints "streaming" once 16 messages went through, and at the end a
 * line "# lost: ..." with what it counted, when it saw the failure, and
 * when the last completion and the last receive came (CLOCK_REALTIME, for
 * a script that knows when the peer went away).
 *
 * All print TAP: points for the data, and with -l for the failure. A
 * server prints "listening" once it listens.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

struct verdict {
	uint32_t round;
	uint32_t bad;		/* offset + 1 of the first wrong byte, or 0 */
};

static struct rdma_event_channel *ch;
static struct kp_peer me;
static size_t size;
static unsigned int count;

static const struct kp_caps caps = {
	.send_wr = 8, .recv_wr = 8, .send_sge = 1, .recv_sge = 1, .cqe = 32,
};

static struct ibv_mr *reg(void *buf, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(me.pd, buf, len, access);

	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

static void post_recv(struct ibv_mr *mr, void *buf, size_t len,
		      uint64_t wr_id)
{
	if (kp_post_recv(me.qp, wr_id, buf, len, mr->lkey))
		die("ibv_post_recv");
}

/* A Send of @buf, or an RDMA Write of it to @dst. */
static void post_send(struct ibv_mr *mr, void *buf, size_t len,
		      const struct kc_info *dst)
{
	int ret;

	if (dst)	/* unsignalled: the Send behind it completes both */
		ret = kp_post_send(me.qp, 0, IBV_WR_RDMA_WRITE, 0, buf, len,
				   mr->lkey, dst->addr, dst->rkey);
	else
		ret = kp_post_send(me.qp, 0, IBV_WR_SEND, IBV_SEND_SIGNALED,
				   buf, len, mr->lkey, 0, 0);
	if (ret)
		die("ibv_post_send");
}

/*
 * The next completion, which must be a success of @op; of a Send or a
 * receive for @op == ANY_OP.
 */
#define ANY_OP	((enum ibv_wc_opcode)-1)

static struct ibv_wc next_wc(enum ibv_wc_opcode op)
{
	struct ibv_wc wc;
	int n;

	while (!(n = ibv_poll_cq(me.scq, 1, &wc)))
		;
	if (n < 0)
		die("ibv_poll_cq");
	if (wc.status != IBV_WC_SUCCESS ||
	    (op == ANY_OP ? wc.opcode != IBV_WC_SEND && wc.opcode != IBV_WC_RECV :
			    wc.opcode != op)) {
		errno = EIO;
		die("completion %s opcode %d, wanted %d",
		    ibv_wc_status_str(wc.status), wc.opcode, op);
	}
	return wc;
}

/* Offset + 1 of the first byte of @buf not of round @round's pattern, or 0. */
static uint32_t bad_at(const uint8_t *buf, unsigned int round)
{
	return kt_differs(buf, size, round, 0);
}

static int server(const char *addr, const char *port)
{
	struct rdma_cm_id *lid = kc_listen_or_die(ch, addr, port, 1), *id;
	uint8_t *rbuf = malloc(2 * size), *wbuf = calloc(1, size);
	struct verdict *v = calloc(1, sizeof(*v));
	struct ibv_mr *rmr, *wmr, *vmr;
	struct ibv_wc early = { .opcode = IBV_WC_SEND };	/* none yet */
	struct rdma_conn_param cp;
	struct kc_info info;
	unsigned int r;

	if (!rbuf || !wbuf || !v)
		die("malloc");
	printf("listening\n");
	id = kc_request(ch, NULL, 0);
	kp_open_or_die(&me, id, &caps);
	rmr = reg(rbuf, 2 * size, IBV_ACCESS_LOCAL_WRITE);
	wmr = reg(wbuf, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	vmr = reg(v, sizeof(*v), 0);
	post_recv(rmr, rbuf, size, 0);
	post_recv(rmr, rbuf + size, size, 1);
	info = (struct kc_info){ (uintptr_t)wbuf, wmr->rkey, 0 };
	cp = kc_param(1, 1, &info, sizeof(info));
	if (rdma_accept(id, &cp))
		die("rdma_accept");
	expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED);
	rdma_destroy_id(lid);	/* one connection only */

	for (r = 0; r < count; r++) {
		struct ibv_wc wc = early.opcode == IBV_WC_RECV ? early :
				   next_wc(IBV_WC_RECV);
		uint8_t *got = rbuf + wc.wr_id * size;

		early.opcode = IBV_WC_SEND;

		if (wc.byte_len != size) {
			note("round %u: %u bytes received", r, wc.byte_len);
			break;
		}
		v->round = r;
		v->bad = bad_at(got, r);
		if (v->bad) {
			note("round %u: Send data wrong at %u", r, v->bad - 1);
		} else {
			v->bad = bad_at(wbuf, r);
			if (v->bad)
				note("round %u: Write data wrong at %u", r,
				     v->bad - 1);
		}
		post_recv(rmr, got, size, wc.wr_id);
		post_send(vmr, v, sizeof(*v), NULL);
		/*
		 * The client's next round may be in before the verdict's
		 * completion: TCP sent the verdict before kiwi completed it.
		 */
		for (;;) {
			struct ibv_wc c = next_wc(ANY_OP);

			if (c.opcode == IBV_WC_SEND)
				break;
			early = c;
		}
		if (v->bad)
			break;
	}
	if (r == count)
		expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED);
	check(r == count, "%u rounds of %zu bytes: Send and Write data intact",
	      count, size);
	return kt_end();
}

static int client(const char *addr, const char *port)
{
	struct rdma_conn_param cp = kc_param(1, 1, NULL, 0);
	uint8_t *buf = malloc(size);
	struct verdict *v = calloc(2, sizeof(*v));
	struct ibv_mr *mr, *vmr;
	struct rdma_cm_id *id;
	struct kc_info dst;
	unsigned int r;

	if (!buf || !v)
		die("malloc");
	id = kc_resolve_or_die(ch, addr, port);
	kp_open_or_die(&me, id, &caps);
	mr = reg(buf, size, IBV_ACCESS_LOCAL_WRITE);
	vmr = reg(v, 2 * sizeof(*v), IBV_ACCESS_LOCAL_WRITE);
	post_recv(vmr, &v[0], sizeof(*v), 0);
	post_recv(vmr, &v[1], sizeof(*v), 1);
	kc_connect_or_die(ch, id, &cp, &dst, sizeof(dst));

	for (r = 0; r < count; r++) {
		struct ibv_wc wc = { .opcode = IBV_WC_SEND }, got;
		int sent = 0;

		kt_fill(buf, size, r, 0);
		post_send(mr, buf, size, &dst);
		post_send(mr, buf, size, NULL);
		/*
		 * The Send's and the verdict's completions come in either
		 * order: they are on different queues, and a zero-copy Send
		 * completes only once TCP has the ACK the verdict may carry.
		 */
		while (!sent || wc.opcode != IBV_WC_RECV) {
			got = next_wc(ANY_OP);
			if (got.opcode == IBV_WC_RECV) {
				wc = got;
				continue;
			}
			sent = 1;
			/* Completed: the buffer is the consumer's again. */
			memset(buf, 0xee, size);
		}
		if (v[wc.wr_id].round != r || v[wc.wr_id].bad) {
			note("round %u: server says round %u bad %u", r,
			     v[wc.wr_id].round, v[wc.wr_id].bad);
			break;
		}
		post_recv(vmr, &v[wc.wr_id], sizeof(*v), wc.wr_id);
	}
	if (r == count && kc_disconnect(ch, id, -1))
		die("disconnect");
	check(r == count, "%u rounds of %zu bytes: the server found them intact",
	      count, size);
	return kt_end();
}

/*
 * Churn: connections made and ended over and over, each moving checked
 * data both ways, everything made anew for each: cm_id, completion
 * channel, PD, CQ, QP, buffer and MR.
 *
 * The server accepts each connection with the address and rkey of its
 * buffer and its number N for the connection. The client, with a length
 * n (1 to SIZE) that follows from N, RDMA Writes pattern 2N into the
 * buffer, Sends the same, and RDMA Reads pattern 2N+1, which the server
 * laid behind it. The server checks the Write and the Send and sends its
 * verdict; the client checks the Read and the verdict, and Sends "bye".
 * Then the connection ends, by N mod 3: the client disconnects, or the
 * server does (on the bye), or the client destroys its QP and cm_id with
 * no disconnect at all (a reset).
 *
 * With COUNT > 0 the server serves COUNT connections, the client makes
 * COUNT, and every one must pass: one point. With COUNT 0 both go on
 * until SIGTERM; a cycle cut short (connection refused, device gone,
 * peer killed, time out) is counted and the next one follows, a server
 * whose device goes away listens again once there is one, and the point
 * is that none moved wrong data. Every wait has a time limit.
 *
 * churn-kills runs COUNT clients in turn, each forked from it (it loaded
 * the providers already, so that a client starts at once), and each
 * killed with SIGKILL a random time into a step of its first or second
 * cycle that gets there, the steps in turn: "connect" (rdma_connect()
 * issued; up to 20 ms in), "data" (Write, Send and Read posted; up to
 * 250 ms in, so that a large Read is in flight) or "end" (the connection
 * ending, as its mode ends it; up to 20 ms in). Each must be gone within
 * 30 s of its kill: one point for all.
 */
enum churn_result { CHURN_OK, CHURN_CUT, CHURN_BAD };

struct churn_conn {
	struct rdma_cm_id *id;
	struct ibv_comp_channel *cc;
	struct kp_peer p;
	struct kc_info info;	/* the server's buffer, from ESTABLISHED */
	bool addr_ok, route_ok;	/* resolved */
	bool established;
	bool gone;		/* DISCONNECTED or DEVICE_REMOVAL came */
	int failed;		/* the connect failed: its rdma_cm event */
};

static bool churn_stop;		/* SIGTERM or SIGINT came */
static int churn_sigfd = -1;		/* they come here (signalfd) */
static struct rdma_cm_id *churn_lid;	/* the server's listener */
static bool churn_lid_gone;		/* its device went away */
/* A churn-kills client: where it dies, and the pipe it says so on. */
static const char *churn_kill_step;
static unsigned int churn_kill_cycle, churn_kill_usec;
static int churn_kill_fd = -1;
/* Requests that came while the server was busy, oldest first. */
#define CHURN_PENDING	16
static struct rdma_cm_id *churn_pending[CHURN_PENDING];
static int churn_npending;

/* The length of connection @n's transfers: 1 to size, odd ones too. */
static size_t churn_len(uint32_t n)
{
	return (n * 2654435761u >> 7) % size + 1;
}

/*
 * A comment about a cycle cut short: the first few of a run of them, so
 * that a client looping while its server is away does not flood its log.
 */
static int churn_notes = 3;

static void churn_note(const char *fmt, ...) KT_PRINTF(1, 2);
static void churn_note(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	if (churn_notes <= 0)
		return;
	churn_notes--;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	note("%s", buf);
}

/* A churn-kills client dies here when it is the step it was given. */
static void churn_step(const char *step, unsigned int k)
{
	if (!churn_kill_step || k < churn_kill_cycle ||
	    strcmp(step, churn_kill_step))
		return;
	fflush(stdout);
	if (write(churn_kill_fd, &k, sizeof(k)) != sizeof(k))
		_exit(5);
	usleep(churn_kill_usec);
	raise(SIGKILL);
}

/* Sleep @ms, or until a stop. */
static void churn_ms_sleep(int ms)
{
	struct pollfd pf = { .fd = churn_sigfd, .events = POLLIN };
	struct signalfd_siginfo si;

	if (poll(&pf, 1, ms) == 1 && read(churn_sigfd, &si, sizeof(si)) > 0)
		churn_stop = true;
}

/* Take one rdma_cm event that poll() saw, and note what it means. */
static void churn_cm_event(struct churn_conn *c)
{
	struct rdma_cm_event *ev;
	int i;

	if (rdma_get_cm_event(ch, &ev))
		return;
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		struct rdma_cm_id *id = ev->id;

		rdma_ack_cm_event(ev);
		if (churn_npending < CHURN_PENDING) {
			churn_pending[churn_npending++] = id;
		} else {
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
		}
		return;
	}
	if (c && ev->id == c->id) {
		switch (ev->event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			c->addr_ok = true;
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			c->route_ok = true;
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (ev->param.conn.private_data_len >= sizeof(c->info))
				memcpy(&c->info, ev->param.conn.private_data,
				       sizeof(c->info));
			c->established = true;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			c->gone = true;
			break;
		default:
			c->failed = ev->event;
			break;
		}
	} else if (ev->id == churn_lid &&
		   ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		churn_lid_gone = true;
	} else if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		/* A request still waiting: it is dead, let it go. */
		for (i = 0; i < churn_npending; i++)
			if (churn_pending[i] == ev->id)
				break;
		if (i < churn_npending) {
			memmove(&churn_pending[i], &churn_pending[i + 1],
				(--churn_npending - i) * sizeof(*churn_pending));
			rdma_ack_cm_event(ev);
			rdma_destroy_id(ev->id);
			return;
		}
	}
	rdma_ack_cm_event(ev);
}

/*
 * Wait up to @ms for something to happen: an rdma_cm event (handled) or
 * a completion event on @c's channel (acked). Returns false when the
 * channel broke (its device went away).
 */
static bool churn_pump(struct churn_conn *c, int ms)
{
	struct pollfd pf[3] = { { .fd = ch->fd, .events = POLLIN },
				{ .fd = -1, .events = POLLIN },
				{ .fd = churn_sigfd, .events = POLLIN } };
	struct signalfd_siginfo si;
	struct ibv_cq *cq;
	void *ctx;

	if (c && c->cc)
		pf[1].fd = c->cc->fd;
	if (poll(pf, 3, ms) <= 0)
		return true;
	if (pf[2].revents && read(churn_sigfd, &si, sizeof(si)) > 0)
		churn_stop = true;
	if (pf[0].revents)
		churn_cm_event(c);
	if (pf[1].revents) {
		if (ibv_get_cq_event(c->cc, &cq, &ctx))
			return false;
		ibv_ack_cq_events(cq, 1);
	}
	return true;
}

/*
 * Wait up to @ms for @c's flag @what to be set; false if it was not, or
 * the connection failed or went away first.
 */
static bool churn_until(struct churn_conn *c, const bool *what, int ms)
{
	double end = now() + ms / 1000.0;

	while (!*what && !c->failed && !churn_stop &&
	       (!c->gone || what == &c->gone)) {
		double left = end - now();

		if (left <= 0 || !churn_pump(c, (int)(left * 1000) + 1))
			break;
	}
	return *what;
}

/*
 * The next completion of @c within @ms: 1, 0 when none came, -1 when
 * the connection or its device went away with none left.
 */
static int churn_wc(struct churn_conn *c, struct ibv_wc *wc, int ms)
{
	double end = now() + ms / 1000.0;

	for (;;) {
		double left = end - now();
		int n = ibv_poll_cq(c->p.scq, 1, wc);

		if (n)
			return n < 0 ? -1 : 1;
		if (ibv_req_notify_cq(c->p.scq, 0))
			return -1;
		n = ibv_poll_cq(c->p.scq, 1, wc);
		if (n)
			return n < 0 ? -1 : 1;
		if (c->gone || c->failed)
			return -1;
		if (left <= 0 || churn_stop)
			return 0;
		if (!churn_pump(c, (int)(left * 1000) + 1))
			return -1;
	}
}

/* Kinds of completion, for churn_wcs(). */
#define CW_SEND		1u
#define CW_READ		2u
#define CW_RECV		4u

static unsigned int churn_kind(enum ibv_wc_opcode op)
{
	return op == IBV_WC_SEND ? CW_SEND : op == IBV_WC_RDMA_READ ? CW_READ :
	       op == IBV_WC_RECV ? CW_RECV : 0;
}

/*
 * Completions until every kind in @want (CW_*) came, each a success,
 * within @ms. A receive's completion goes to @recv.
 */
static bool churn_wcs(struct churn_conn *c, unsigned int want,
		      struct ibv_wc *recv, int ms, uint32_t n)
{
	double end = now() + ms / 1000.0;
	struct ibv_wc wc;

	while (want) {
		int left = (int)((end - now()) * 1000);
		int got = churn_wc(c, &wc, left > 0 ? left : 0);

		if (got <= 0) {
			churn_note("connection %u: %s", n,
				   got ? "ended before its work completed" :
					 "no completion in time");
			return false;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			churn_note("connection %u: completion %s (opcode %d)",
				   n, ibv_wc_status_str(wc.status), wc.opcode);
			return false;
		}
		want &= ~churn_kind(wc.opcode);
		if (wc.opcode == IBV_WC_RECV && recv)
			*recv = wc;
	}
	return true;
}

/* The verbs objects of a connection, with a buffer of @len bytes. */
static bool churn_open(struct churn_conn *c, size_t len, int access)
{
	struct kp_caps caps = {
		.send_wr = 4, .recv_wr = 2, .send_sge = 1, .recv_sge = 1,
		.cqe = 8, .buf_len = len, .access = access,
	};
	int fl;

	c->cc = ibv_create_comp_channel(c->id->verbs);
	if (!c->cc) {
		churn_note("ibv_create_comp_channel: %s", strerror(errno));
		return false;
	}
	fl = fcntl(c->cc->fd, F_GETFL);
	fcntl(c->cc->fd, F_SETFL, fl | O_NONBLOCK);
	caps.chan = c->cc;
	return !kp_open(&c->p, c->id, &caps);
}

/* Free everything of @c, whatever state it is in. */
static void churn_close(struct churn_conn *c)
{
	if (c->p.pd)
		kp_close(&c->p);
	if (c->cc)
		ibv_destroy_comp_channel(c->cc);
	if (c->id)
		rdma_destroy_id(c->id);
	memset(c, 0, sizeof(*c));
}

/* Server side layout: Write target, Read source, Send target, verdict, bye. */
#define CH_WR(b)	(b)
#define CH_RD(b)	((b) + size)
#define CH_SEND(b)	((b) + 2 * size)
#define CH_VERDICT(b)	((b) + 3 * size)
#define CH_BYE(b)	((b) + 3 * size + 64)
#define CH_SRV_LEN	(3 * size + 128)

static enum churn_result churn_serve(struct rdma_cm_id *id, uint32_t n)
{
	struct churn_conn c = { .id = id };
	size_t len = churn_len(n);
	struct rdma_conn_param cp;
	struct verdict *v;
	struct ibv_wc wc;
	uint8_t *b;
	int mode = n % 3;
	enum churn_result res = CHURN_CUT;

	if (!churn_open(&c, CH_SRV_LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)) {
		rdma_reject(id, NULL, 0);
		goto out;
	}
	b = c.p.buf;
	v = (struct verdict *)CH_VERDICT(b);
	kt_fill(CH_RD(b), len, 2 * n + 1, 0);
	if (kp_post_recv(c.p.qp, 0, CH_SEND(b), size, c.p.mr->lkey) ||
	    kp_post_recv(c.p.qp, 1, CH_BYE(b), 64, c.p.mr->lkey)) {
		churn_note("connection %u: ibv_post_recv: %s", n, strerror(errno));
		goto out;
	}
	c.info = (struct kc_info){ (uintptr_t)b, c.p.mr->rkey, n };
	cp = kc_param(1, 1, &c.info, sizeof(c.info));
	if (rdma_accept(id, &cp)) {
		churn_note("connection %u: rdma_accept: %s", n, strerror(errno));
		goto out;
	}
	if (!churn_until(&c, &c.established, 10000)) {
		churn_note("connection %u: not established", n);
		goto out;
	}
	if (!churn_wcs(&c, CW_RECV, &wc, 30000, n))
		goto out;
	v->round = n;
	v->bad = wc.byte_len != len;
	if (v->bad)
		note("connection %u: %u bytes sent, wanted %zu", n,
		     wc.byte_len, len);
	if (!v->bad) {
		v->bad = kt_differs(CH_SEND(b), len, 2 * n, 0);
		if (v->bad)
			note("connection %u: Send data wrong at %u", n,
			     v->bad - 1);
	}
	if (!v->bad) {
		v->bad = kt_differs(CH_WR(b), len, 2 * n, 0);
		if (v->bad)
			note("connection %u: Write data wrong at %u", n,
			     v->bad - 1);
	}
	if (kp_post_send(c.p.qp, 0, IBV_WR_SEND, IBV_SEND_SIGNALED, v,
			 sizeof(*v), c.p.mr->lkey, 0, 0)) {
		churn_note("connection %u: ibv_post_send: %s", n, strerror(errno));
		goto out;
	}
	/*
	 * The verdict's completion, and the bye that may come before it.
	 * The client resets in mode 2: its bye may be lost with the rest.
	 */
	res = v->bad ? CHURN_BAD : CHURN_OK;
	if (!churn_wcs(&c, CW_SEND | (mode != 2 ? CW_RECV : 0), NULL, 30000,
		       n)) {
		res = v->bad ? CHURN_BAD : CHURN_CUT;
		goto out;
	}
	if (mode == 1 && rdma_disconnect(id))
		churn_note("connection %u: rdma_disconnect: %s", n, strerror(errno));
	if (!churn_until(&c, &c.gone, 20000)) {
		churn_note("connection %u: no DISCONNECTED", n);
		res = res == CHURN_OK ? CHURN_CUT : res;
	}
out:
	churn_close(&c);
	return res;
}

/* The next connection request, or NULL (stopped, device gone, timeout). */
static struct rdma_cm_id *churn_request(int ms)
{
	double end = now() + ms / 1000.0;
	struct rdma_cm_id *id;

	while (!churn_npending && !churn_lid_gone && !churn_stop &&
	       (ms < 0 || now() < end))
		churn_pump(NULL, 500);
	if (!churn_npending)
		return NULL;
	id = churn_pending[0];
	memmove(churn_pending, churn_pending + 1,
		--churn_npending * sizeof(*churn_pending));
	return id;
}

/* A summary point, with what a SIGTERM or a lost device cut short. */
static int churn_report(const char *who, unsigned int cycles,
			unsigned int ok, unsigned int cut, unsigned int bad,
			double t0)
{
	double t = now() - t0;

	note("%s: %u cycles in %.1f s (%.1f ms each): %u passed, %u cut short, %u with wrong data",
	     who, cycles, t, cycles ? t * 1000 / cycles : 0.0, ok, cut, bad);
	if (count)
		check(ok == count && !bad,
		      "%u connections with Send, RDMA Write and RDMA Read of up to %zu bytes checked, each passed",
		      count, size);
	else
		check(!bad, "%u connections until stopped, none moved wrong data",
		      cycles);
	return kt_end();
}

/*
 * The listener's device went away: let go of it and of the requests
 * waiting, then listen again once a device has the address (a looping
 * server), or stop (false).
 */
static bool churn_relisten(const char *addr, const char *port)
{
	struct rdma_cm_id *id;

	note("the device went away");
	while ((id = churn_request(0)))
		rdma_destroy_id(id);
	rdma_destroy_id(churn_lid);
	churn_lid = NULL;
	churn_lid_gone = false;
	if (count)
		return false;
	while (!churn_stop) {
		struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
					       .ai_port_space = RDMA_PS_TCP };
		struct rdma_addrinfo *ai;
		int ret;

		churn_ms_sleep(200);
		if (rdma_getaddrinfo(addr, port, &hints, &ai))
			continue;
		ret = rdma_create_id(ch, &id, NULL, RDMA_PS_TCP);
		if (!ret) {
			ret = rdma_bind_addr(id, ai->ai_src_addr) ||
			      rdma_listen(id, 16);
			if (ret)
				rdma_destroy_id(id);
		}
		rdma_freeaddrinfo(ai);
		if (!ret) {
			churn_lid = id;
			note("listening on %s:%s again", addr, port);
			return true;
		}
	}
	return false;
}

static int churn_server(const char *addr, const char *port)
{
	unsigned int k = 0, ok = 0, cut = 0, bad = 0;
	uint32_t base = (uint32_t)getpid() << 12;
	enum churn_result res;
	double t0 = now();
	struct rdma_cm_id *id;

	churn_lid = kc_listen_or_die(ch, addr, port, 16);
	note("listening on %s:%s", addr, port);
	while (!churn_stop && (!count || k < count)) {
		if (churn_lid_gone && !churn_relisten(addr, port))
			break;
		id = churn_request(count ? 60000 : -1);
		if (!id) {
			if (count && !churn_stop && !churn_lid_gone)
				note("no connection request in 60 s");
			if (count)
				break;
			continue;
		}
		res = churn_serve(id, base + k);
		/* One a stop cut short does not count. */
		if (res == CHURN_CUT && churn_stop)
			break;
		k++;
		switch (res) {
		case CHURN_OK:
			ok++;
			churn_notes = 3;
			break;
		case CHURN_CUT:
			cut++;
			break;
		case CHURN_BAD:
			bad++;
			break;
		}
	}
	while ((id = churn_request(0)))
		rdma_destroy_id(id);
	if (churn_lid)
		rdma_destroy_id(churn_lid);
	return churn_report("server", k, ok, cut, bad, t0);
}

/* Client side layout: Write/Send source, Read sink, verdict, bye. */
#define CC_SRC(b)	(b)
#define CC_RD(b)	((b) + size)
#define CC_VERDICT(b)	((b) + 2 * size)
#define CC_BYE(b)	((b) + 2 * size + 64)
#define CC_LEN		(2 * size + 128)

/* A new cm_id for @c with its address and route to @addr:@port resolved. */
static bool churn_resolve(struct churn_conn *c, const char *addr,
			  const char *port)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	int ret;

	if (rdma_getaddrinfo(addr, port, &hints, &ai)) {
		churn_note("rdma_getaddrinfo %s: %s", addr, strerror(errno));
		return false;
	}
	ret = rdma_create_id(ch, &c->id, NULL, RDMA_PS_TCP);
	if (!ret)
		ret = rdma_resolve_addr(c->id, NULL, ai->ai_dst_addr, 5000);
	rdma_freeaddrinfo(ai);
	if (ret) {
		churn_note("resolve %s: %s", addr, strerror(errno));
		return false;
	}
	if (!churn_until(c, &c->addr_ok, 10000) ||
	    rdma_resolve_route(c->id, 5000) ||
	    !churn_until(c, &c->route_ok, 10000)) {
		churn_note("resolve %s: %s", addr, c->failed ?
			   rdma_event_str(c->failed) : "failed");
		return false;
	}
	return true;
}

static enum churn_result churn_cycle(const char *addr, const char *port,
				     unsigned int k)
{
	struct rdma_conn_param cp = kc_param(1, 1, NULL, 0);
	struct churn_conn c = { 0 };
	enum churn_result res = CHURN_CUT;
	struct verdict *v;
	uint32_t n = k;
	size_t len;
	uint8_t *b;
	int mode;

	if (!churn_resolve(&c, addr, port) ||
	    !churn_open(&c, CC_LEN, IBV_ACCESS_LOCAL_WRITE))
		goto out;
	b = c.p.buf;
	v = (struct verdict *)CC_VERDICT(b);
	if (kp_post_recv(c.p.qp, 0, v, sizeof(*v), c.p.mr->lkey)) {
		churn_note("cycle %u: ibv_post_recv: %s", k, strerror(errno));
		goto out;
	}
	if (rdma_connect(c.id, &cp)) {
		churn_note("cycle %u: rdma_connect: %s", k, strerror(errno));
		goto out;
	}
	churn_step("connect", k);
	if (!churn_until(&c, &c.established, 20000)) {
		churn_note("cycle %u: not connected (%s)", k,
			   c.failed ? rdma_event_str(c.failed) :
			   c.gone ? "the device went away" :
				    "no event in time");
		goto out;
	}
	n = c.info.idx;
	len = churn_len(n);
	mode = n % 3;
	kt_fill(CC_SRC(b), len, 2 * n, 0);
	if (kp_post_send(c.p.qp, 0, IBV_WR_RDMA_WRITE, 0, CC_SRC(b), len,
			 c.p.mr->lkey, c.info.addr, c.info.rkey) ||
	    kp_post_send(c.p.qp, 1, IBV_WR_SEND, IBV_SEND_SIGNALED,
			 CC_SRC(b), len, c.p.mr->lkey, 0, 0) ||
	    kp_post_send(c.p.qp, 2, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED,
			 CC_RD(b), len, c.p.mr->lkey, c.info.addr + size,
			 c.info.rkey)) {
		churn_note("connection %u: ibv_post_send: %s", n, strerror(errno));
		goto out;
	}
	churn_step("data", k);
	if (!churn_wcs(&c, CW_SEND | CW_READ | CW_RECV, NULL, 30000, n))
		goto out;
	if (v->round != n || v->bad) {
		note("connection %u: the server says connection %u, wrong at %u",
		     n, v->round, v->bad);
		res = CHURN_BAD;
		goto out;
	}
	if (kt_differs(CC_RD(b), len, 2 * n + 1, 0)) {
		note("connection %u: Read data wrong at %zu", n,
		     kt_differs(CC_RD(b), len, 2 * n + 1, 0) - 1);
		res = CHURN_BAD;
		goto out;
	}
	memcpy(CC_BYE(b), &n, sizeof(n));
	if (kp_post_send(c.p.qp, 3, IBV_WR_SEND, IBV_SEND_SIGNALED,
			 CC_BYE(b), sizeof(n), c.p.mr->lkey, 0, 0) ||
	    !churn_wcs(&c, CW_SEND, NULL, 30000, n))
		goto out;
	if (mode == 0 && rdma_disconnect(c.id)) {
		churn_note("connection %u: rdma_disconnect: %s", n, strerror(errno));
		goto out;
	}
	churn_step("end", k);
	/* Mode 2: churn_close() destroys QP and cm_id: a reset. */
	if (mode != 2 && !churn_until(&c, &c.gone, 20000)) {
		churn_note("connection %u: no DISCONNECTED", n);
		goto out;
	}
	res = CHURN_OK;
out:
	churn_close(&c);
	return res;
}

static int churn_client(const char *addr, const char *port)
{
	unsigned int k, ok = 0, cut = 0, bad = 0, run = 0;
	enum churn_result res;
	double t0 = now();

	for (k = 0; !churn_stop && (!count || k < count); k++) {
		res = churn_cycle(addr, port, k);
		/* One a stop cut short does not count. */
		if (res == CHURN_CUT && churn_stop)
			break;
		switch (res) {
		case CHURN_OK:
			ok++;
			if (run)
				note("cycle %u passed again after %u cut short",
				     k, run);
			run = 0;
			churn_notes = 3;
			break;
		case CHURN_CUT:
			cut++;
			/* Gone for a while (device removed, peer restarting). */
			if (++run > 1)
				churn_ms_sleep(100);
			break;
		case CHURN_BAD:
			bad++;
			break;
		}
	}
	return churn_report("client", k, ok, cut, bad, t0);
}

static const char *const churn_steps[] = { "connect", "data", "end" };

/* Reap @pid within @s seconds; false (with its stack shown) if it hangs. */
static bool churn_reap(pid_t pid, double s, int *status)
{
	double end = now() + s;
	char path[64], line[256];
	FILE *f;

	while (waitpid(pid, status, WNOHANG) != pid) {
		if (now() > end) {
			note("pid %d has not exited; its kernel stack:", pid);
			snprintf(path, sizeof(path), "/proc/%d/stack", pid);
			f = fopen(path, "r");
			while (f && fgets(line, sizeof(line), f))
				note("  %.*s", (int)strcspn(line, "\n"), line);
			if (f)
				fclose(f);
			return false;
		}
		poll(NULL, 0, 10);
	}
	return true;
}

/*
 * Round @r of churn-kills: a client killed at step @s. Returns the
 * seconds it took to go after the kill, or -1 when it did not die there
 * and so.
 */
static double churn_kill_one(const char *addr, const char *port,
			     unsigned int r, unsigned int s)
{
	unsigned int cycle = rand() % 2;
	unsigned int us = rand() % (s == 1 ? 250000 : 20000);
	struct pollfd pf;
	unsigned int k;
	int fd[2], st;
	double t;
	pid_t pid;

	if (pipe(fd))
		die("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		close(fd[0]);
		churn_kill_fd = fd[1];
		churn_kill_step = churn_steps[s];
		churn_kill_cycle = cycle;
		churn_kill_usec = us;
		count = 0;	/* cycles until the kill */
		ch = rdma_create_event_channel();
		if (!ch)
			die("rdma_create_event_channel");
		churn_client(addr, port);
		_exit(4);	/* not killed: the parent says so */
	}
	close(fd[1]);
	pf = (struct pollfd){ .fd = fd[0], .events = POLLIN };
	if (poll(&pf, 1, 120000) != 1 ||
	    read(fd[0], &k, sizeof(k)) != sizeof(k)) {
		note("round %u: the client %s %s", r,
		     pf.revents ? "ended before it got to" :
				  "did not get in 120 s to", churn_steps[s]);
		close(fd[0]);
		kill(pid, SIGKILL);
		churn_reap(pid, 30, &st);
		return -1;
	}
	close(fd[0]);
	t = now() + us / 1e6;		/* about when it kills itself */
	if (!churn_reap(pid, 30 + us / 1e6, &st))
		return -1;
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) {
		note("round %u: the client ended with status %#x, not killed",
		     r, st);
		return -1;
	}
	/* It may be gone before this process saw its message. */
	t = now() > t ? now() - t : 0;
	note("round %u: killed %u us into %s of cycle %u, gone %.0f ms later",
	     r, us, churn_steps[s], k, t * 1000);
	return t;
}

static int churn_kills(const char *addr, const char *port)
{
	unsigned int r, s, killed[3] = { 0 };
	double worst[3] = { 0 }, t;
	struct ibv_device **list;

	/* Load the providers here, once, rather than in every child. */
	list = ibv_get_device_list(NULL);
	if (list)
		ibv_free_device_list(list);
	srand(getpid());
	for (r = 0; r < count; r++) {
		s = r % 3;
		t = churn_kill_one(addr, port, r, s);
		if (t < 0)
			continue;
		killed[s]++;
		if (t > worst[s])
			worst[s] = t;
	}
	for (s = 0; s < 3; s++)
		note("killed at %s: %u, the slowest gone %.1f s after its kill",
		     churn_steps[s], killed[s], worst[s]);
	check(killed[0] + killed[1] + killed[2] == count,
	      "%u clients SIGKILLed while connecting, with Send, Write and Read of up to %zu bytes in flight, and ending; each gone within 30 s",
	      count, size);
	return kt_end();
}

static int churn_main(bool server, const char *addr, const char *port)
{
	sigset_t set;

	/* Every wait polls for them: the run stops at the next one. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	churn_sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (churn_sigfd < 0)
		die("signalfd");
	return server ? churn_server(addr, port) : churn_client(addr, port);
}

/* ---- stream mode (-S) */

#define NCREDIT		16	/* credit messages in flight either way */
#define LOST_WAIT	20.0	/* seconds the failure may take to be whole */

/* A credit: the sink has checked this many messages, the first bad at. */
struct credit {
	uint64_t checked;
	uint32_t bad;		/* offset + 1 of the first wrong byte, or 0 */
	uint32_t pad;
};

/* What one queue of the QP saw: [0] the send queue, [1] the receive queue. */
struct qcount {
	uint64_t posted, ok, flushed, other;
	int other_status;	/* the first status that was neither */
};

static struct {
	bool source;		/* posts the data Sends; else checks them */
	bool lost;		/* the connection is expected to fail */
	unsigned int depth;
	struct rdma_cm_id *id;
	uint8_t *data;		/* depth slots of @size bytes */
	struct credit *cr;	/* NCREDIT receive and NCREDIT send slots */
	struct ibv_mr *dmr, *cmr;
	struct qcount q[2];
	uint64_t msgs;		/* source: posted; sink: checked */
	uint64_t credit;	/* source: checked by the sink; sink: sent */
	uint64_t cr_next;	/* sink: the next credit send slot */
	uint32_t bad;		/* sink: first wrong byte + 1; source: as told */
	double t_progress;	/* realtime of the last successful completion */
	double t_heard;		/* ... of the last successful receive */
	double t_fail;		/* realtime of the first sign of failure */
	const char *fail_by;
	int event;		/* the QP's first async event, or -1 */
	double t_event;
	bool disconnected;
	double t_disc;
	double give_up;		/* -l: realtime to stop waiting for a failure */
} st = { .event = -1 };

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void st_failed(const char *by)
{
	if (!st.t_fail) {
		st.t_fail = wall();
		st.fail_by = by;
	}
}

static uint64_t outstanding(int q)
{
	return st.q[q].posted - st.q[q].ok - st.q[q].flushed - st.q[q].other;
}

/* Every message of a stream without -l went through. */
static bool st_whole(void)
{
	return !st.lost && (st.source ? st.credit : st.msgs) >= count;
}

/* Receive slots: data slot n (sink), credit slot n (source). */
static void st_post_recv(unsigned int n)
{
	int ret;

	if (st.source)
		ret = kp_post_recv(me.qp, n, &st.cr[n], sizeof(*st.cr),
				   st.cmr->lkey);
	else
		ret = kp_post_recv(me.qp, n, st.data + (size_t)n * size, size,
				   st.dmr->lkey);
	if (ret) {
		st_failed("a failed ibv_post_recv");
		return;
	}
	st.q[1].posted++;
}

static void st_post_send(void *buf, uint32_t len, uint32_t lkey)
{
	if (kp_post_send(me.qp, st.msgs, IBV_WR_SEND, IBV_SEND_SIGNALED, buf,
			 len, lkey, 0, 0)) {
		st_failed("a failed ibv_post_send");
		return;
	}
	st.q[0].posted++;
}

/* Post what may be posted now: data within the credit, or a credit. */
static void st_post(void)
{
	if (st.t_fail || st.bad)
		return;
	if (st.source) {
		while ((st.lost || st.msgs < count) &&
		       st.msgs - st.credit < st.depth &&
		       outstanding(0) < st.depth) {
			uint8_t *slot = st.data + (st.msgs % st.depth) * size;

			kt_fill(slot, size, (uint32_t)st.msgs, 0);
			st_post_send(slot, size, st.dmr->lkey);
			if (st.t_fail)
				return;
			st.msgs++;
		}
		return;
	}
	/* A credit every quarter of the depth, and for the last message. */
	if ((st.msgs - st.credit >= (st.depth + 3) / 4 ||
	     (st.msgs > st.credit && (st.msgs == count || st.bad))) &&
	    outstanding(0) < NCREDIT) {
		struct credit *c = &st.cr[NCREDIT + st.cr_next++ % NCREDIT];

		c->checked = st.msgs;
		c->bad = st.bad;
		st_post_send(c, sizeof(*c), st.cmr->lkey);
		if (!st.t_fail)
			st.credit = st.msgs;
	}
}

/* One completion of queue @q (0 send, 1 receive). */
static void st_complete(int q, const struct ibv_wc *wc)
{
	struct qcount *c = &st.q[q];

	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		c->flushed++;
		/* Receives left over at the end are flushed by the close. */
		if (!st_whole())
			st_failed("a flushed completion");
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		if (!c->other++)
			c->other_status = wc->status;
		st_failed("an error completion");
		return;
	}
	c->ok++;
	st.t_progress = wall();
	if (q == 0)
		return;
	st.t_heard = st.t_progress;
	if (st.source) {
		const struct credit *cr = &st.cr[wc->wr_id];

		if (cr->checked > st.credit)
			st.credit = cr->checked;
		if (cr->bad && !st.bad) {
			st.bad = cr->bad;
			note("the receiver found message %llu wrong at byte %u",
			     (unsigned long long)cr->checked - 1, cr->bad - 1);
		}
	} else if (!st.bad) {
		const uint8_t *got = st.data + wc->wr_id * size;

		if (wc->byte_len != size) {
			note("message %llu: %u bytes, not %zu",
			     (unsigned long long)st.msgs, wc->byte_len, size);
			st.bad = 1;
		} else {
			st.bad = bad_at(got, (uint32_t)st.msgs);
			if (st.bad)
				note("message %llu wrong at byte %u",
				     (unsigned long long)st.msgs, st.bad - 1);
		}
		st.msgs++;
	}
	if (!st.t_fail && !st.bad)
		st_post_recv(wc->wr_id);
}

/* Async events and rdma_cm events, waiting up to @ms for one. */
static void st_events(int ms)
{
	struct pollfd p[2] = {
		{ .fd = me.ctx->async_fd, .events = POLLIN },
		{ .fd = ch->fd, .events = POLLIN },
	};
	struct ibv_async_event ae;
	struct rdma_cm_event *ev;

	if (poll(p, 2, ms) <= 0)
		return;
	if ((p[0].revents & POLLIN) && !ibv_get_async_event(me.ctx, &ae)) {
		if (ae.element.qp == me.qp && st.event < 0) {
			st.event = ae.event_type;
			st.t_event = wall();
			st_failed("the async event");
		} else {
			note("async event %s", ibv_event_type_str(ae.event_type));
		}
		ibv_ack_async_event(&ae);
	}
	if ((p[1].revents & POLLIN) && !rdma_get_cm_event(ch, &ev)) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED && ev->id == st.id) {
			st.disconnected = true;
			st.t_disc = wall();
			/* Only the sink of a whole stream expects it. */
			if (st.lost || st.source || st.msgs < count)
				st_failed("rdma_cm DISCONNECTED");
		} else if (ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			note("rdma_cm event %s", rdma_event_str(ev->event));
		}
		rdma_ack_cm_event(ev);
	}
}

static bool st_done(void)
{
	if (st.t_fail) {
		/* The failure is whole once every WR is back, and reported. */
		bool whole = !outstanding(0) && !outstanding(1) &&
			     st.event >= 0 && st.disconnected;

		return whole || wall() - st.t_fail > LOST_WAIT;
	}
	if (st.lost)
		return st.give_up && wall() > st.give_up;
	if (st.bad)
		return !outstanding(0);
	if (st.source)
		return st.credit >= count && !outstanding(0);
	/* The sink is done once the source's disconnect is here. */
	return st.msgs >= count && st.credit >= count && !outstanding(0) &&
	       st.disconnected;
}

/* Take what both CQs have; return how many completions that was. */
static int st_poll(void)
{
	struct ibv_wc wc[16];
	int i, n, got = 0;

	for (int q = 0; q < 2; q++) {
		n = ibv_poll_cq(q ? me.rcq : me.scq, 16, wc);
		if (n < 0)
			die("ibv_poll_cq");
		for (i = 0; i < n; i++)
			st_complete(q, &wc[i]);
		got += n;
	}
	return got;
}

static void st_loop(void)
{
	bool said = false;
	int busy;

	st.t_progress = wall();
	while (!st_done()) {
		st_post();
		busy = st_poll();
		if (!said && (st.source ? st.credit : st.msgs) >= 16) {
			said = true;
			printf("streaming\n");
		}
		st_events(busy ? 0 : 1);
	}
}

/* What is still outstanding completes: flushed, once the QP is in ERR. */
static void st_drain(double secs)
{
	double end = now() + secs;

	while ((outstanding(0) || outstanding(1)) && now() < end)
		if (!st_poll())
			poll(NULL, 0, 1);
}

/* An async event's name as the verbs header spells it, where known. */
static const char *event_name(int e)
{
	switch (e) {
	case -1:
		return "none";
	case IBV_EVENT_QP_FATAL:
		return "IBV_EVENT_QP_FATAL";
	case IBV_EVENT_QP_REQ_ERR:
		return "IBV_EVENT_QP_REQ_ERR";
	case IBV_EVENT_QP_ACCESS_ERR:
		return "IBV_EVENT_QP_ACCESS_ERR";
	case IBV_EVENT_COMM_EST:
		return "IBV_EVENT_COMM_EST";
	case IBV_EVENT_SQ_DRAINED:
		return "IBV_EVENT_SQ_DRAINED";
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return "IBV_EVENT_QP_LAST_WQE_REACHED";
	default:
		return ibv_event_type_str(e);
	}
}

static const char *qp_state_str(int s)
{
	static const char *const names[] = {
		"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
	};

	return s >= 0 && s < 7 ? names[s] : "unknown";
}

static void st_report_queue(int q)
{
	static const char *const what[] = { "send", "receive" };
	const struct qcount *c = &st.q[q];

	check(!outstanding(q),
	      "every %s WR completed: posted %llu, completed %llu (%llu ok, %llu flushed, %llu other)",
	      what[q], (unsigned long long)c->posted,
	      (unsigned long long)(c->ok + c->flushed + c->other),
	      (unsigned long long)c->ok, (unsigned long long)c->flushed,
	      (unsigned long long)c->other);
	check(!c->other,
	      "%s WRs not done %s completed with IBV_WC_WR_FLUSH_ERR%s%s",
	      what[q], st.lost ? "before the failure" : "at the close",
	      c->other ? ", not " : "",
	      c->other ? ibv_wc_status_str(c->other_status) : "");
}

static int stream(bool server_side, const char *addr, const char *port)
{
	const struct kp_caps caps = {
		.send_wr = st.source ? st.depth : NCREDIT,
		.recv_wr = st.source ? NCREDIT : st.depth,
		.send_sge = 1, .recv_sge = 1, .two_cqs = true,
		.cqe = (int)(st.depth + NCREDIT),
	};
	struct rdma_conn_param cp = kc_param(1, 1, NULL, 0);
	struct rdma_cm_id *lid = NULL;
	size_t dlen = (size_t)st.depth * size;
	unsigned int i;
	int state;

	if (server_side) {
		lid = kc_listen_or_die(ch, addr, port, 1);
		printf("listening\n");
		st.id = kc_request(ch, NULL, 0);
	} else {
		st.id = kc_resolve_or_die(ch, addr, port);
	}
	kp_open_or_die(&me, st.id, &caps);
	st.data = aligned_alloc(4096, (dlen + 4095) & ~(size_t)4095);
	st.cr = calloc(2 * NCREDIT, sizeof(*st.cr));
	if (!st.data || !st.cr)
		die("malloc");
	memset(st.data, 0, dlen);
	st.dmr = reg(st.data, dlen, IBV_ACCESS_LOCAL_WRITE);
	st.cmr = reg(st.cr, 2 * NCREDIT * sizeof(*st.cr),
		     IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < (st.source ? NCREDIT : st.depth); i++)
		st_post_recv(i);
	if (server_side) {
		kc_accept_or_die(ch, st.id, &cp);
		rdma_destroy_id(lid);	/* one connection only */
	} else {
		kc_connect_or_die(ch, st.id, &cp, NULL, 0);
	}
	note("stream of %zu-byte Sends, %u deep, %s", size, st.depth,
	     st.source ? "sending" : "receiving");

	if (st.lost && st.give_up)
		st.give_up += wall();
	st_loop();

	if (!st.lost) {
		if (st.source && !st.t_fail &&
		    kc_disconnect(ch, st.id, 10000))
			note("no DISCONNECTED after rdma_disconnect");
		st_drain(10);
		check(!st.t_fail && !st.bad &&
		      (st.source ? st.credit : st.msgs) == count,
		      "stream: %llu messages of %zu bytes, each checked and intact%s%s",
		      (unsigned long long)count, size,
		      st.t_fail ? "; failed: " : "",
		      st.t_fail ? st.fail_by : "");
		st_report_queue(0);
		st_report_queue(1);
		return kt_end();
	}

	state = kp_qp_state(me.qp);
	printf("# lost: fail_at=%.3f progress_at=%.3f heard_at=%.3f by=\"%s\" event=%s event_at=%.3f disc_at=%.3f msgs=%llu sq_posted=%llu sq_ok=%llu sq_flushed=%llu sq_other=%llu rq_posted=%llu rq_ok=%llu rq_flushed=%llu rq_other=%llu state=%s\n",
	       st.t_fail, st.t_progress, st.t_heard, st.fail_by ?: "-",
	       event_name(st.event),
	       st.t_event, st.t_disc,
	       (unsigned long long)(st.source ? st.credit : st.msgs),
	       (unsigned long long)st.q[0].posted,
	       (unsigned long long)st.q[0].ok,
	       (unsigned long long)st.q[0].flushed,
	       (unsigned long long)st.q[0].other,
	       (unsigned long long)st.q[1].posted,
	       (unsigned long long)st.q[1].ok,
	       (unsigned long long)st.q[1].flushed,
	       (unsigned long long)st.q[1].other, qp_state_str(state));
	check(st.t_fail && !st.bad && (st.source ? st.credit : st.msgs) > 0,
	      "stream: %llu messages of %zu bytes checked and intact, then the connection failed%s",
	      (unsigned long long)(st.source ? st.credit : st.msgs), size,
	      st.t_fail ? "" : " (it did not, within the time given)");
	check(st.event == IBV_EVENT_QP_FATAL,
	      "the QP reported IBV_EVENT_QP_FATAL (got %s)",
	      event_name(st.event));
	check(state == IBV_QPS_ERR, "the QP is in ERR (%s)",
	      qp_state_str(state));
	st_report_queue(0);
	st_report_queue(1);
	check(st.q[1].flushed > 0,
	      "the posted receives were flushed (%llu)",
	      (unsigned long long)st.q[1].flushed);
	check(st.disconnected, "rdma_cm reported DISCONNECTED");
	return kt_end();
}

static noreturn void usage(void)
{
	fprintf(stderr, "usage: see the top of kiwi_xfer.c\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int opt;

	st.depth = 64;
	while ((opt = getopt(argc, argv, "S:d:lt:")) != -1) {
		switch (opt) {
		case 'S':
			dir = optarg;
			break;
		case 'd':
			st.depth = strtoul(optarg, NULL, 0);
			break;
		case 'l':
			st.lost = true;
			break;
		case 't':
			st.give_up = strtod(optarg, NULL);
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 5 || (dir && strcmp(dir, "send") &&
				   strcmp(dir, "recv")) ||
	    (st.lost && !dir) || !st.depth || st.depth > 4096)
		usage();
	argv += optind - 1;
	size = strtoul(argv[4], NULL, 0);
	count = strtoul(argv[5], NULL, 0);
	if (!size || size > (1u << 30) || (size_t)st.depth * size > (1u << 30))
		return 2;
	kt_start();
	/* Its children make their own channels. */
	if (!strcmp(argv[1], "churn-kills"))
		return churn_kills(argv[2], argv[3]);
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (dir) {
		st.source = !strcmp(dir, "send");
		if (strcmp(argv[1], "server") && strcmp(argv[1], "client"))
			usage();
		return stream(!strcmp(argv[1], "server"), argv[2], argv[3]);
	}
	if (!strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (!strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	if (!strcmp(argv[1], "churn-server"))
		return churn_main(true, argv[2], argv[3]);
	if (!strcmp(argv[1], "churn"))
		return churn_main(false, argv[2], argv[3]);
	return 2;
}
