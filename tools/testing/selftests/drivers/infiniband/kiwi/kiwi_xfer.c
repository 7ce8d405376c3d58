// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_xfer: checked transfers through rdma_cm.
 *
 *   kiwi_xfer server ADDR PORT SIZE COUNT
 *   kiwi_xfer client ADDR PORT SIZE COUNT
 *   kiwi_xfer -S send|recv [-d DEPTH] [-l [-t SECONDS]] server|client ADDR PORT SIZE COUNT
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
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
		if (v->bad)
			note("round %u: Send data wrong at %u", r, v->bad - 1);
		else if ((v->bad = bad_at(wbuf, r)))
			note("round %u: Write data wrong at %u", r, v->bad - 1);
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
	return 2;
}
