// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_wrflow: work request flow, error completions and ordering, as a
 * verbs consumer sees them through libkiwi and rdma_cm. Prints TAP.
 *
 *   kiwi_wrflow server ADDR PORT
 *   kiwi_wrflow client ADDR PORT
 *
 * The server accepts NCONN connections (up to MAXCONN at a time), all on
 * one 16 MiB buffer that keeps its contents from one connection to the
 * next: a pattern the client reads, a Write area that starts zeroed, and
 * its receive and send slots. The client reads the Write area back to see
 * what its Writes placed, on a later connection when the one that wrote
 * failed. A Send starting with struct cmd asks the server for a reply
 * (OP_ECHO) or for a burst of numbered Sends (OP_BURST, on a group of
 * connections if it says so); other Sends are just received. The server exits 0 once every connection ended.
 *
 * The client's cases, one connection each unless said: a full send queue
 * (V-POST-3), a failing unsignalled WR among others (V-FL-1, V-CMP-3,
 * V-ERR-9, V-AMB-11; no async event for it: V-ST-T7, V-AE-7), completions
 * left unpolled when the QP fails (V-FL-7), a Send behind a large Read
 * (V-ORD-2), a burst of Sends from the peer (V-ORD-8), bursts on three
 * QPs that share an SRQ (V-SRQ-7, three connections), a QP destroyed with
 * a Read in flight next to a QP on the same CQ (V-QP-13, twice two
 * connections),
 * and one QP connected twice through rdma_cm by its number (V-ST-4, two
 * connections). $KIWI_BLOCK and $KIWI_UNBLOCK are commands that stop and
 * restart the server's packets, to hold an RDMA Read outstanding.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

#define BUF_SIZE	(16u << 20)	/* each side's registered buffer */
#define PAT_LEN		(8u << 20)	/* server: [0, PAT_LEN) the pattern */
#define WAREA		(8u << 20)	/* server: Write targets, zeroed */
#define RAREA		(12u << 20)	/* server: receive slots */
#define SAREA		(14u << 20)	/* server: send slots */
#define SLOT		4096
#define SRV_NRECV	64
#define MAXCONN		8
#define NCONN		14
#define SRV_SQ		512
#define BURST		400
#define NSRQ		3
#define SRQ_BURST	100
#define CSRC		(12u << 20)	/* client: Write sources */
#define CRECV		(8u << 20)	/* client: receive slots */
#define CMD_MAGIC	0x77726674u	/* "wrft" */
#define ACCESS		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)

/* Each client case writes into its own part of the server's Write area. */
#define W_POST3		(WAREA + (0u << 20))
#define W_FLOW		(WAREA + (1u << 20))
#define W_FL7		(WAREA + (2u << 20))
#define W_OTHER		(WAREA + (3u << 20))

enum { OP_ECHO = 1, OP_BURST = 2 };

struct cmd {
	uint32_t magic;
	uint32_t op;
	uint32_t count;
	uint32_t conn;		/* echo: the server's connection number; burst: group size */
};

static struct rdma_event_channel *ch;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static uint8_t *buf;

/* The server's read pattern, position-dependent at every scale. */
static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 9) + (i >> 17));
}

/* The bytes a Write of source number @k carries. */
static uint8_t wfill(uint32_t k, size_t i)
{
	return (uint8_t)(k * 0x35 + i * 3 + (i >> 8) + 1);
}

static uint32_t burst_len(uint32_t seq)
{
	return 4 + (seq * 613) % (SLOT - 3);
}

static uint8_t burst_byte(uint32_t seq, uint32_t j)
{
	return (uint8_t)(seq * 31 + j * 7 + (j >> 8));
}

static void setup_mem(struct ibv_context *ctx)
{
	pd = ibv_alloc_pd(ctx);
	buf = aligned_alloc(4096, BUF_SIZE);
	if (!pd || !buf)
		die("ibv_alloc_pd");
	memset(buf, 0, BUF_SIZE);
	mr = ibv_reg_mr(pd, buf, BUF_SIZE, ACCESS);
	if (!mr)
		die("ibv_reg_mr");
}

static int post_recv(struct ibv_qp *qp, uint64_t id, uint8_t *at, uint32_t len)
{
	return kp_post_recv(qp, id, at, len, mr->lkey);
}

/* ---- server ---- */

struct sconn {
	struct rdma_cm_id *id;
	struct kp_peer p;
	uint32_t num;
};

static struct sconn sc[MAXCONN];
static struct ibv_cq *srv_cq;

static struct sconn *by_qpn(uint32_t qpn)
{
	for (int i = 0; i < MAXCONN; i++)
		if (sc[i].id && sc[i].id->qp && sc[i].id->qp->qp_num == qpn)
			return &sc[i];
	return NULL;
}

static struct sconn *by_id(struct rdma_cm_id *id)
{
	for (int i = 0; i < MAXCONN; i++)
		if (sc[i].id == id)
			return &sc[i];
	return NULL;
}

static void srv_send(struct ibv_qp *qp, uint8_t *at, uint32_t len, uint64_t id)
{
	if (kp_post_send(qp, id, IBV_WR_SEND, IBV_SEND_SIGNALED, at, len,
			 mr->lkey, 0, 0))
		note("server: post_send failed");
}

static struct ibv_qp *group[MAXCONN];
static uint32_t ngroup;

/* A receive of @len bytes in @msg on @c: answer a command, repost. */
static void srv_recv(struct sconn *c, uint64_t wr_id, uint8_t *msg, uint32_t len)
{
	struct ibv_qp *qp = c->id->qp;
	struct cmd cm;

	memcpy(&cm, msg, sizeof(cm));
	if (len == sizeof(cm) && cm.magic == CMD_MAGIC && cm.op == OP_ECHO) {
		uint8_t *out = buf + SAREA + (c - sc) * SLOT;

		cm.conn = c->num;
		memcpy(out, &cm, sizeof(cm));
		srv_send(qp, out, sizeof(cm), 0);
	} else if (len == sizeof(cm) && cm.magic == CMD_MAGIC &&
		   cm.op == OP_BURST && cm.count <= SRV_SQ &&
		   cm.conn <= MAXCONN) {
		/*
		 * Back to back: all posted before any completion is reaped;
		 * for a group of cm.conn connections, once all have asked,
		 * taking turns.
		 */
		group[ngroup++] = qp;
		if (ngroup < cm.conn)
			goto repost;
		for (uint32_t s = 0; s < cm.count; s++) {
			uint8_t *out = buf + SAREA + (size_t)s * SLOT;

			memcpy(out, &s, 4);
			for (uint32_t j = 4; j < burst_len(s); j++)
				out[j] = burst_byte(s, j);
			for (uint32_t g = 0; g < ngroup; g++)
				srv_send(group[g], out, burst_len(s), s);
		}
		ngroup = 0;
	}
repost:
	post_recv(qp, wr_id, msg, SLOT);
}

static void srv_connect(struct rdma_cm_id *id, uint32_t num)
{
	const struct kp_caps caps = {
		.pd = pd, .scq = srv_cq, .rcq = srv_cq,
		.send_wr = SRV_SQ, .recv_wr = SRV_NRECV,
		.send_sge = 1, .recv_sge = 1,
	};
	struct kc_info info = { (uintptr_t)buf, mr->rkey, num };
	struct rdma_conn_param cp = kc_param(4, 4, &info, sizeof(info));
	struct sconn *c = by_id(NULL);

	if (!c || kp_open(&c->p, id, &caps)) {
		note("server: no room or no QP for connection %u", num);
		rdma_reject(id, NULL, 0);
		return;
	}
	c->id = id;
	c->num = num;
	for (int i = 0; i < SRV_NRECV; i++) {
		uint64_t wr_id = (c - sc) * SRV_NRECV + i;

		if (post_recv(id->qp, wr_id, buf + RAREA + wr_id * SLOT, SLOT))
			die("server: post_recv");
	}
	if (rdma_accept(id, &cp))
		note("server: rdma_accept: %s", strerror(errno));
}

static int server(const char *addr, const char *port)
{
	struct rdma_cm_id *lid;
	uint32_t accepted = 0, ended = 0, send_err = 0;

	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	lid = kc_listen(ch, addr, port, MAXCONN);
	if (!lid || !lid->verbs)
		die("listen");
	setup_mem(lid->verbs);
	for (size_t i = 0; i < PAT_LEN; i++)
		buf[i] = pattern(i);
	srv_cq = ibv_create_cq(lid->verbs, 4096, NULL, NULL, 0);
	if (!srv_cq)
		die("ibv_create_cq");
	note("server: listening");
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);

	while (ended < NCONN) {
		struct rdma_cm_event *ev;
		struct ibv_wc wc;
		int r = ibv_poll_cq(srv_cq, 1, &wc);

		if (r == 1) {
			struct sconn *c = by_qpn(wc.qp_num);

			if (c && wc.status == IBV_WC_SUCCESS &&
			    wc.opcode == IBV_WC_RECV)
				srv_recv(c, wc.wr_id, buf + RAREA + wc.wr_id * SLOT,
					 wc.byte_len);
			else if (wc.status != IBV_WC_SUCCESS &&
				 wc.status != IBV_WC_WR_FLUSH_ERR)
				send_err++;
			continue;
		}
		if (rdma_get_cm_event(ch, &ev)) {
			poll(NULL, 0, 1);
			continue;
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_cm_id *id = ev->id;

			rdma_ack_cm_event(ev);
			srv_connect(id, accepted++);
		} else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			rdma_ack_cm_event(ev);
		} else {
			struct sconn *c = by_id(ev->id);

			note("server: connection %d: %s", c ? (int)c->num : -1,
			     rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
			if (c) {
				rdma_disconnect(c->id);
				kp_close(&c->p);
				rdma_destroy_id(c->id);
				c->id = NULL;
				ended++;
			}
		}
	}
	note("server: %u connections ended, %u error completions", ended,
	     send_err);
	ibv_destroy_cq(srv_cq);
	rdma_destroy_id(lid);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* ---- client ---- */

struct cconn {
	struct rdma_cm_id *id;
	struct kp_peer p;
	struct ibv_qp *qp;		/* p's */
	struct ibv_cq *scq, *rcq;
	struct kc_info peer;
	int closed;
};

static const char *srv_addr, *srv_port;
static struct ibv_context *ctx;

static struct rdma_cm_id *resolve(void)
{
	struct rdma_cm_id *id = kc_resolve_or_die(ch, srv_addr, srv_port);

	if (!pd) {
		ctx = id->verbs;
		setup_mem(ctx);
	}
	return id;
}

/*
 * Connect @c with an SQ of 16 on @scq and an RQ of @nrq (or @srq) on @rcq;
 * a NULL CQ is made for @c alone.
 */
static void open_conn_on(struct cconn *c, struct ibv_cq *scq,
			 struct ibv_cq *rcq, uint32_t nrq, struct ibv_srq *srq)
{
	struct kp_caps caps = {
		.scq = scq, .rcq = rcq, .srq = srq, .cqe = 1024,
		.two_cqs = true, .send_wr = 16, .recv_wr = nrq,
		.send_sge = 1, .recv_sge = 1,
	};
	struct rdma_conn_param cp = kc_param(4, 4, NULL, 0);

	memset(c, 0, sizeof(*c));
	c->id = resolve();
	caps.pd = pd;	/* resolve() makes it on first use */
	kp_open_or_die(&c->p, c->id, &caps);
	c->qp = c->p.qp;
	c->scq = c->p.scq;
	c->rcq = c->p.rcq;
	kc_connect_or_die(ch, c->id, &cp, &c->peer, sizeof(c->peer));
}

/* Connect @c with both queues on @cq, or on CQs of its own. */
static void open_conn(struct cconn *c, struct ibv_cq *cq, uint32_t nrq)
{
	open_conn_on(c, cq, cq, nrq, NULL);
}

/* Disconnect (if still connected), then free everything of @c. */
static void close_conn(struct cconn *c)
{
	if (!c->closed && kc_disconnect(ch, c->id, 20000))
		note("no DISCONNECTED on closing");
	kp_close(&c->p);
	rdma_destroy_id(c->id);
}

/* The peer ended @c's connection (its QP failed): wait for that. */
static void ended(struct cconn *c)
{
	if (!kc_wait(ch, c->id, RDMA_CM_EVENT_DISCONNECTED, 20000))
		c->closed = 1;
}

/* Print @got completions of @wc as a comment. */
static void show_wcs(const struct ibv_wc *wc, int got)
{
	printf("# %d completions:", got);	/* one comment, built up */
	for (int i = 0; i < got; i++)
		printf(" %llu/%s", (unsigned long long)wc[i].wr_id,
		       ibv_wc_status_str(wc[i].status));
	printf("\n");
}

/*
 * Whether @cq gives exactly @count flushed receives, wr_ids @first on, in
 * order; how many came in *@got.
 */
static int rq_flushed(struct ibv_cq *cq, uint64_t first, int count, int *got)
{
	struct ibv_wc wc[16];
	int ok;

	*got = kp_poll(cq, wc, count, 20000);
	ok = *got == count && kp_cq_quiet(cq, 100);
	for (int i = 0; ok && i < count; i++)
		ok = wc[i].wr_id == first + i &&
		     wc[i].status == IBV_WC_WR_FLUSH_ERR;
	return ok;
}

/* Fill @wr/@sge: @op of @len bytes at our offset @off, @roff at the peer. */
static void mkwr(struct ibv_send_wr *wr, struct ibv_sge *sge,
		 const struct cconn *c, uint64_t id, enum ibv_wr_opcode op,
		 int flags, size_t off, uint32_t len, size_t roff)
{
	*sge = (struct ibv_sge){ (uintptr_t)buf + off, len, mr->lkey };
	*wr = (struct ibv_send_wr){ .wr_id = id, .sg_list = sge, .num_sge = 1,
				    .opcode = op, .send_flags = flags };
	wr->wr.rdma.remote_addr = c->peer.addr + roff;
	wr->wr.rdma.rkey = c->peer.rkey;
}

static int post1(const struct cconn *c, uint64_t id, enum ibv_wr_opcode op,
		 int flags, size_t off, uint32_t len, size_t roff)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	mkwr(&wr, &sge, c, id, op, flags, off, len, roff);
	return ibv_post_send(c->qp, &wr, &bad);
}

/* Source number @k: one SLOT at CSRC + @k * SLOT, filled with wfill(@k). */
static size_t src(uint32_t k)
{
	uint8_t *p = buf + CSRC + (size_t)k * SLOT;

	for (size_t i = 0; i < SLOT; i++)
		p[i] = wfill(k, i);
	return CSRC + (size_t)k * SLOT;
}

/* Whether @len bytes at @p are wfill(@k), or zero when @k is 0. */
static int is_src(const uint8_t *p, uint32_t k, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (k ? wfill(k, i) : 0))
			return 0;
	return 1;
}

/* Read @len bytes of the server's buffer at @roff into ours at 0. */
static int read_back(const struct cconn *c, size_t roff, uint32_t len)
{
	struct ibv_wc wc;

	memset(buf, 0x5a, len);
	if (post1(c, 0xbac, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 0, len, roff) ||
	    kp_poll(c->scq, &wc, 1, 30000) != 1 || wc.status != IBV_WC_SUCCESS ||
	    wc.wr_id != 0xbac)
		return -1;
	return 0;
}

/* Send an OP_ECHO command and wait for its answer on receive @rid. */
static int echo(const struct cconn *c, uint64_t id, uint64_t rid)
{
	struct cmd cm = { CMD_MAGIC, OP_ECHO, 0, 0 };
	struct ibv_wc wc;

	memcpy(buf + CSRC - SLOT, &cm, sizeof(cm));
	if (post1(c, id, IBV_WR_SEND, IBV_SEND_SIGNALED, CSRC - SLOT,
		  sizeof(cm), 0))
		return -1;
	if (kp_poll(c->rcq, &wc, 1, 20000) != 1 || wc.status != IBV_WC_SUCCESS ||
	    wc.wr_id != rid || wc.byte_len != sizeof(cm))
		return -1;
	return 0;
}

/* An lkey that names no MR: that of one registered and deregistered. */
static uint32_t dead_lkey(void)
{
	struct ibv_mr *m = ibv_reg_mr(pd, buf + CSRC, SLOT, IBV_ACCESS_LOCAL_WRITE);
	uint32_t key;

	if (!m)
		die("ibv_reg_mr");
	key = m->lkey;
	if (ibv_dereg_mr(m))
		die("ibv_dereg_mr");
	return key;
}

/* Throw away asynchronous events already queued on the context. */
static void async_discard(void)
{
	struct ibv_async_event ev;

	while (kp_async(ctx, &ev, 0))
		note("earlier async event %s", ibv_event_type_str(ev.event_type));
}

/* The next asynchronous event within @ms; 0 and its type in @type if one came. */
static int async_next(int ms, enum ibv_event_type *type)
{
	struct ibv_async_event ev;

	if (!kp_async(ctx, &ev, ms))
		return -1;
	*type = ev.event_type;
	return 0;
}

/*
 * V-POST-3: a send queue held full by a Read at its head (the server's
 * packets stopped) refuses one more WR with ENOMEM and bad_wr on it;
 * once the Read's completion is reaped, the same post is taken.
 */
static void case_post3(void)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_qp_init_attr init;
	struct ibv_wc wc[20];
	struct ibv_qp_attr a;
	struct ibv_sge sge;
	struct cconn c;
	uint32_t depth;
	int ret, got, ok;

	open_conn(&c, NULL, 4);
	if (ibv_query_qp(c.qp, &a, IBV_QP_CAP, &init))
		die("ibv_query_qp");
	depth = a.cap.max_send_wr;
	check(depth == 16, "V-POST-3: the send queue holds 16 WRs (%u)", depth);
	memset(buf, 0x5a, 65536);
	run_env("KIWI_BLOCK");
	ret = post1(&c, 0, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 0, 65536, 0);
	for (uint32_t k = 1; k < depth && !ret; k++)
		ret = post1(&c, k, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, src(k),
			    SLOT, W_POST3 + k * SLOT);
	check(!ret, "fill it: a Read the server cannot answer, then %u Writes (%d)",
	      depth - 1, ret);
	mkwr(&wr, &sge, &c, depth, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
	     src(depth), SLOT, W_POST3 + depth * SLOT);
	ret = ibv_post_send(c.qp, &wr, &bad);
	check(ret == ENOMEM && bad == &wr,
	      "V-POST-3: one more WR on the full send queue refused with ENOMEM, bad_wr on it (%d)",
	      ret);
	check(kp_cq_quiet(c.scq, 300), "nothing completed while the Read is held");
	run_env("KIWI_UNBLOCK");
	got = kp_poll(c.scq, wc, 1, 30000);
	check(got == 1 && wc[0].wr_id == 0 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[0].opcode == IBV_WC_RDMA_READ,
	      "the server's packets flow again: reap the Read's completion (%d, %s)",
	      got, got == 1 ? ibv_wc_status_str(wc[0].status) : "none");
	mkwr(&wr, &sge, &c, depth + 1, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
	     src(depth + 1), SLOT, W_POST3 + (depth + 1) * SLOT);
	ret = ibv_post_send(c.qp, &wr, &bad);
	check(!ret, "V-POST-3: after reaping one completion, a WR is taken again (%d)",
	      ret);
	got = kp_poll(c.scq, wc, depth, 30000);
	ok = got == (int)depth && kp_cq_quiet(c.scq, 100);
	for (int i = 0; ok && i < got; i++)
		ok = wc[i].status == IBV_WC_SUCCESS &&
		     wc[i].wr_id == (i + 1 < (int)depth ? (uint64_t)i + 1 : depth + 1);
	check(ok, "the %u Writes complete in order, the refused one not among them (%d)",
	      depth, got);
	ok = 1;
	for (size_t i = 0; ok && i < 65536; i++)
		ok = buf[i] == pattern(i);
	check(ok, "the held Read brought the server's pattern");
	ok = !read_back(&c, W_POST3, (depth + 2) * SLOT);
	for (uint32_t k = 0; ok && k <= depth + 1; k++)
		ok = is_src(buf + k * SLOT, k == depth ? 0 : k, SLOT);
	check(ok, "V-POST-3: the server holds the %u Writes taken, and nothing where the refused one would have written",
	      depth);
	close_conn(&c);
}

/*
 * V-FL-1, V-CMP-3, V-ERR-9, V-AMB-11: WRs 1-8 posted as one list, where
 * WR 4, unsignalled, names an lkey that does not exist. Then V-ST-T7 and
 * V-AE-7: that error, reported in a WC, raises no async event.
 */
static void case_flow(void)
{
	static const struct {
		enum ibv_wr_opcode op;
		int sig;
	} w[9] = {
		[1] = { IBV_WR_RDMA_WRITE, 1 }, [2] = { IBV_WR_RDMA_WRITE, 0 },
		[3] = { IBV_WR_SEND, 0 }, [4] = { IBV_WR_RDMA_WRITE, 0 },
		[5] = { IBV_WR_RDMA_WRITE, 1 }, [6] = { IBV_WR_RDMA_WRITE, 0 },
		[7] = { IBV_WR_SEND, 1 }, [8] = { IBV_WR_RDMA_READ, 0 },
	};
	struct ibv_send_wr wr[9], *bad = NULL;
	struct ibv_sge sge[9];
	enum ibv_event_type type;
	struct ibv_wc wc[16];
	struct cconn c;
	int ret, got, ok;

	open_conn(&c, NULL, 8);
	async_discard();
	for (int i = 0; i < 8; i++)
		if (post_recv(c.qp, 100 + i, buf + CRECV + i * SLOT, SLOT))
			die("post_recv");
	for (int k = 1; k <= 8; k++) {
		mkwr(&wr[k], &sge[k], &c, k, w[k].op,
		     w[k].sig ? IBV_SEND_SIGNALED : 0, src(k),
		     w[k].op == IBV_WR_SEND ? 64 : SLOT, W_FLOW + (k - 1) * SLOT);
		wr[k].next = k < 8 ? &wr[k + 1] : NULL;
	}
	wr[8].wr.rdma.remote_addr = c.peer.addr;	/* the pattern */
	sge[4].lkey = dead_lkey();
	ret = ibv_post_send(c.qp, &wr[1], &bad);
	check(!ret, "post 8 WRs: Write, unsignalled Write and Send, an unsignalled Write with a dead lkey, Write, unsignalled Write, Send, unsignalled Read (%d)",
	      ret);
	got = kp_poll(c.scq, wc, 6, 20000);
	ok = got == 6 && kp_cq_quiet(c.scq, 300);
	show_wcs(wc, got);
	check(ok && wc[0].wr_id == 1 && wc[0].status == IBV_WC_SUCCESS,
	      "V-CMP-3: the signalled Write before the failing WR succeeded; the unsignalled ones gave no completion");
	check(ok && wc[1].wr_id == 4 && wc[1].status == IBV_WC_LOC_PROT_ERR &&
	      wc[1].opcode == IBV_WC_RDMA_WRITE && wc[1].qp_num == c.qp->qp_num,
	      "V-CMP-3: the unsignalled Write with a dead lkey completes with IBV_WC_LOC_PROT_ERR, its wr_id and opcode");
	for (int i = 2; ok && i < 6; i++)
		ok = wc[i].wr_id == (uint64_t)i + 3 &&
		     wc[i].status == IBV_WC_WR_FLUSH_ERR;
	check(ok, "V-FL-1, V-AMB-11: the 4 WRs after it, signalled or not, come back IBV_WC_WR_FLUSH_ERR in posting order, after the error");
	ok = got >= 2;
	for (int i = 0; ok && i < got; i++)
		ok = (i == 1) == (wc[i].status != IBV_WC_SUCCESS &&
				  wc[i].status != IBV_WC_WR_FLUSH_ERR);
	check(ok, "V-ERR-9: exactly one completion with an error other than a flush");
	ok = rq_flushed(c.rcq, 100, 8, &got);
	check(ok, "V-FL-1: the 8 receives are flushed in order (%d)", got);
	check(kp_qp_state(c.qp) == IBV_QPS_ERR, "V-ST-E1: the QP is in ERR (%d)",
	      kp_qp_state(c.qp));
	/* Generous: the failure closed the connection long ago. */
	ret = async_next(3000, &type);
	check(ret, "V-ST-T7, V-AE-7: an error already reported in a WC raises no async event (%s)",
	      ret ? "none in 3 s" : ibv_event_type_str(type));
	ended(&c);
	close_conn(&c);
}

/*
 * V-FL-7: three completions sit unpolled on the send CQ (the peer's answer
 * to the Send shows they were all made) when a WR with a dead lkey fails
 * the QP; they come out unchanged, ahead of the error and the flush.
 * First, what case_flow's WRs placed at the server before their QP failed.
 */
static void case_fl7(void)
{
	struct ibv_wc wc[8];
	struct cconn c;
	int ret, got, ok;

	open_conn(&c, NULL, 4);
	ok = !read_back(&c, W_FLOW, 6 * SLOT) && is_src(buf, 1, SLOT) &&
	     is_src(buf + SLOT, 2, SLOT);
	check(ok, "V-CMP-3: the Writes before the failing WR, signalled and not, placed their data");
	ok = ok && is_src(buf + 3 * SLOT, 0, 3 * SLOT);
	check(ok, "V-FL-1: the failing Write and the flushed Writes after it placed nothing");

	for (int i = 0; i < 4; i++)
		if (post_recv(c.qp, 200 + i, buf + CRECV + i * SLOT, SLOT))
			die("post_recv");
	ret = post1(&c, 1, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, src(1), SLOT, W_FL7);
	ret = ret ?: post1(&c, 2, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, src(2),
			   SLOT, W_FL7 + SLOT);
	ret = ret ?: post1(&c, 3, IBV_WR_RDMA_WRITE, 0, src(3), SLOT,
			   W_FL7 + 2 * SLOT);
	ret = ret ?: echo(&c, 4, 200);
	check(!ret, "Write, Write, unsignalled Write, Send, answered by the server; nothing polled from the send CQ");
	{
		struct ibv_send_wr wr[2], *bad;
		struct ibv_sge sge[2];

		mkwr(&wr[0], &sge[0], &c, 5, IBV_WR_RDMA_WRITE, 0, src(4), SLOT,
		     W_FL7 + 3 * SLOT);
		mkwr(&wr[1], &sge[1], &c, 6, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
		     src(5), SLOT, W_FL7 + 4 * SLOT);
		sge[0].lkey = dead_lkey();
		wr[0].next = &wr[1];
		ret = ibv_post_send(c.qp, wr, &bad);
	}
	got = kp_poll(c.scq, wc, 5, 20000);
	ok = !ret && got == 5 && kp_cq_quiet(c.scq, 300);
	show_wcs(wc, got);
	check(ok && wc[0].wr_id == 1 && wc[1].wr_id == 2 && wc[2].wr_id == 4 &&
	      wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS &&
	      wc[2].status == IBV_WC_SUCCESS &&
	      wc[0].opcode == IBV_WC_RDMA_WRITE && wc[2].opcode == IBV_WC_SEND &&
	      wc[2].qp_num == c.qp->qp_num,
	      "V-FL-7: the 3 completions left unpolled when the QP failed come out unchanged: success, wr_ids 1 2 4, opcodes");
	check(ok && wc[3].wr_id == 5 && wc[3].status == IBV_WC_LOC_PROT_ERR &&
	      wc[4].wr_id == 6 && wc[4].status == IBV_WC_WR_FLUSH_ERR,
	      "V-FL-7: ... ahead of the failing WR's error and the flush behind it");
	ok = rq_flushed(c.rcq, 201, 3, &got);
	check(ok, "the 3 receives left are flushed in order (%d)", got);
	ended(&c);
	close_conn(&c);
}

/* V-ORD-2: a Send behind an 8 MiB Read does not complete before it. */
static void case_ord2(void)
{
	struct ibv_wc wc[4];
	struct cconn c;
	int ret, got, ok;

	open_conn(&c, NULL, 4);
	memset(buf, 0x5a, PAT_LEN);
	memset(buf + CSRC, 'm', 64);
	ret = post1(&c, 1, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 0, PAT_LEN, 0);
	ret = ret ?: post1(&c, 2, IBV_WR_SEND, IBV_SEND_SIGNALED, CSRC, 64, 0);
	got = kp_poll(c.scq, wc, 2, 60000);
	check(!ret && got == 2 && wc[0].wr_id == 1 && wc[1].wr_id == 2 &&
	      wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS &&
	      wc[0].opcode == IBV_WC_RDMA_READ && wc[1].opcode == IBV_WC_SEND,
	      "V-ORD-2: an 8 MiB Read, then a Send: the Read's completion comes first (%d: %llu, %llu)",
	      got, got > 0 ? (unsigned long long)wc[0].wr_id : 0ULL,
	      got > 1 ? (unsigned long long)wc[1].wr_id : 0ULL);
	ok = 1;
	for (size_t i = 0; ok && i < PAT_LEN; i++)
		ok = buf[i] == pattern(i);
	check(ok, "the Read brought the server's 8 MiB pattern");
	close_conn(&c);
}

/* V-ORD-8: the server's burst of BURST Sends, of many sizes, in order. */
static void case_ord8(void)
{
	static struct ibv_wc wc[BURST + 1];
	struct cmd cm = { CMD_MAGIC, OP_BURST, BURST, 0 };
	struct cconn c;
	int ret, got, ok;
	uint32_t bad = 0;

	open_conn(&c, NULL, 512);
	for (int i = 0; i < BURST; i++)
		if (post_recv(c.qp, i, buf + CRECV + (size_t)i * SLOT, SLOT))
			die("post_recv");
	memcpy(buf + CSRC, &cm, sizeof(cm));
	ret = post1(&c, 1, IBV_WR_SEND, IBV_SEND_SIGNALED, CSRC, sizeof(cm), 0);
	got = ret ? 0 : kp_poll(c.scq, wc, 1, 20000);
	check(got == 1 && wc[0].status == IBV_WC_SUCCESS,
	      "ask the server for %d Sends back to back", BURST);
	got = kp_poll(c.rcq, wc, BURST, 60000);
	ok = got == BURST && kp_cq_quiet(c.rcq, 100);
	for (int i = 0; ok && i < got; i++) {
		uint8_t *m = buf + CRECV + wc[i].wr_id * SLOT;
		uint32_t seq;

		memcpy(&seq, m, 4);
		ok = wc[i].status == IBV_WC_SUCCESS &&
		     wc[i].opcode == IBV_WC_RECV && wc[i].wr_id == (uint64_t)i &&
		     seq == (uint32_t)i && wc[i].byte_len == burst_len(i);
		for (uint32_t j = 4; ok && j < burst_len(i); j++)
			ok = m[j] == burst_byte(i, j);
		if (!ok)
			bad = i + 1;
	}
	check(ok, "V-ORD-8: %d Sends of 4 to 4096 B complete in the order sent, each in the next receive, length and data right (%d received, first wrong %d)",
	      BURST, got, (int)bad - 1);
	close_conn(&c);
}

/*
 * V-SRQ-7: NSRQ QPs take their receives from one SRQ; the server sends a
 * burst of SRQ_BURST numbered Sends on each, all at once. Per QP, they
 * complete in the order sent, whatever the order across QPs.
 */
static void case_srq(void)
{
	static struct ibv_wc wc[NSRQ * SRQ_BURST + 1];
	struct cmd cm = { CMD_MAGIC, OP_BURST, SRQ_BURST, NSRQ };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 512, .max_sge = 1 } };
	uint32_t next[NSRQ] = { 0 };
	struct cconn c[NSRQ];
	struct ibv_srq *srq;
	struct ibv_cq *rcq;
	int got, ok, q, switches = 0, last = -1;

	srq = ibv_create_srq(pd, &sa);
	rcq = ibv_create_cq(ctx, 1024, NULL, NULL, 0);
	if (!srq || !rcq)
		die("ibv_create_srq/cq");
	for (int i = 0; i < NSRQ * SRQ_BURST; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + CRECV + (size_t)i * SLOT,
				       SLOT, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			die("ibv_post_srq_recv");
	}
	memcpy(buf + CSRC, &cm, sizeof(cm));
	for (q = 0; q < NSRQ; q++)
		open_conn_on(&c[q], NULL, rcq, 0, srq);
	ok = 1;
	for (q = 0; q < NSRQ && ok; q++)
		ok = !post1(&c[q], 1, IBV_WR_SEND, IBV_SEND_SIGNALED, CSRC,
			    sizeof(cm), 0);
	for (q = 0; q < NSRQ && ok; q++)
		ok = kp_poll(c[q].scq, wc, 1, 20000) == 1 &&
		     wc[0].status == IBV_WC_SUCCESS;
	check(ok, "ask the server for %d Sends on each of %d QPs on one SRQ",
	      SRQ_BURST, NSRQ);
	got = kp_poll(rcq, wc, NSRQ * SRQ_BURST, 60000);
	ok = got == NSRQ * SRQ_BURST && kp_cq_quiet(rcq, 100);
	for (int i = 0; ok && i < got; i++) {
		uint8_t *m = buf + CRECV + wc[i].wr_id * SLOT;
		uint32_t seq;

		for (q = 0; q < NSRQ && c[q].qp->qp_num != wc[i].qp_num; q++)
			;
		memcpy(&seq, m, 4);
		ok = q < NSRQ && wc[i].status == IBV_WC_SUCCESS &&
		     wc[i].wr_id < NSRQ * SRQ_BURST && seq == next[q]++ &&
		     wc[i].byte_len == burst_len(seq);
		for (uint32_t j = 4; ok && j < burst_len(seq); j++)
			ok = m[j] == burst_byte(seq, j);
		if (!ok)
			note("completion %d: qp_num %u, seq %u, %u B, %s", i,
			     wc[i].qp_num, seq, wc[i].byte_len,
			     ibv_wc_status_str(wc[i].status));
		switches += last != -1 && q != last;
		last = q;
	}
	note("completions switched QP %d times", switches);
	check(ok, "V-SRQ-7: %d Sends on each of %d QPs on one SRQ: per QP they complete in the order sent, data right (%d)",
	      SRQ_BURST, NSRQ, got);
	for (q = 0; q < NSRQ; q++)
		close_conn(&c[q]);
	check(!ibv_destroy_srq(srq) && !ibv_destroy_cq(rcq),
	      "the SRQ and its CQ are destroyed");
}

/*
 * V-QP-13: QP a is destroyed with an 8 MiB Read outstanding: @held, with
 * the server's packets stopped (nothing of it can have come), or else as
 * soon as it is posted, its response streaming in. QP b shares a's CQ and
 * keeps working; no completion of a's appears on the CQ after the destroy.
 */
static void case_destroy(int held)
{
	const char *how = held ? "held" : "streaming";
	struct ibv_wc wc[8];
	struct ibv_cq *cq;
	struct cconn a, b;
	int ret, ok, nb, pre, of_a = 0;
	uint32_t qpn;

	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq");
	open_conn(&a, cq, 4);
	open_conn(&b, cq, 4);
	qpn = a.qp->qp_num;
	memset(buf, 0x5a, PAT_LEN);
	if (held)
		run_env("KIWI_BLOCK");
	ret = post1(&a, 1, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 0, PAT_LEN, 0);
	if (held)
		poll(NULL, 0, 300);
	pre = ibv_poll_cq(cq, 1, wc);
	ok = !ret && (!held || !pre);
	ret = ibv_destroy_qp(a.qp);
	a.id->qp = NULL;	/* kp_close() leaves it be */
	check(ok && !ret, "V-QP-13: %s: destroy QP a with an 8 MiB Read outstanding (%d; %d completion before)",
	      how, ret, pre);
	if (held)
		run_env("KIWI_UNBLOCK");
	memset(buf + CRECV, 0x5a, 2 * SLOT);
	ret = post1(&b, 2, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, src(6), SLOT,
		    W_OTHER);
	ret = ret ?: post1(&b, 3, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, CRECV,
			   2 * SLOT, W_OTHER);
	/* b's two completions, and any of a's that comes meanwhile. */
	nb = 0;
	for (int spin = 0; !ret && spin < 30000 && nb < 2; spin++) {
		if (ibv_poll_cq(cq, 1, &wc[nb]) != 1) {
			poll(NULL, 0, 1);
			continue;
		}
		if (wc[nb].qp_num == qpn)
			of_a++;
		else
			nb++;
	}
	ok = nb == 2 && wc[0].wr_id == 2 && wc[1].wr_id == 3 &&
	     wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS &&
	     wc[0].qp_num == b.qp->qp_num && wc[1].qp_num == b.qp->qp_num &&
	     is_src(buf + CRECV, 6, SLOT) && is_src(buf + CRECV + SLOT, 0, SLOT);
	if (!ok)
		show_wcs(wc, nb);
	check(ok, "V-QP-13: %s: QP b on the same CQ moves data after it (%d)",
	      how, nb);
	/* Let a's connection end and anything late arrive; then look. */
	ended(&a);
	poll(NULL, 0, 1000);
	while (ibv_poll_cq(cq, 1, wc) == 1) {
		note("late completion: qp %u wr_id %llu %s", wc[0].qp_num,
		     (unsigned long long)wc[0].wr_id,
		     ibv_wc_status_str(wc[0].status));
		of_a += wc[0].qp_num == qpn;
	}
	check(!of_a, "V-QP-13: %s: no completion of the destroyed QP appears on the CQ (%d)",
	      how, of_a);
	if (held) {
		/* The server's answer was held until after the destroy. */
		ok = 1;
		for (size_t i = 0; ok && i < PAT_LEN; i++)
			ok = buf[i] == 0x5a;
		check(ok, "V-QP-13: held: the destroyed QP's Read placed nothing in its sink");
	}
	close_conn(&a);
	close_conn(&b);
	check(!ibv_destroy_cq(cq), "the shared CQ is destroyed: nothing holds it");
}

/*
 * V-ST-4: a QP made with ibv_create_qp connects through rdma_cm by its
 * number (conn_param.qp_num, cma_connect_iw), is disconnected, goes
 * ERR -> RESET -> INIT, and connects again on a new cm_id and stream.
 */
static void case_reuse(void)
{
	struct rdma_conn_param cp = kc_param(4, 4, NULL, 0);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ };
	const struct kp_caps caps = {
		.pd = pd, .cqe = 64, .two_cqs = true,
		.send_wr = 16, .recv_wr = 4, .send_sge = 1, .recv_sge = 1,
	};
	struct cconn c;
	struct ibv_wc wc;
	struct ibv_qp *qp;
	int ret;

	memset(&c, 0, sizeof(c));
	c.id = resolve();
	/* Not rdma_cm's QP: it connects by its number. */
	if (kp_open(&c.p, NULL, &caps) ||
	    ibv_modify_qp(c.p.qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS))
		die("a QP in INIT");
	qp = c.p.qp;
	c.qp = qp;
	c.scq = c.p.scq;
	c.rcq = c.p.rcq;
	cp.qp_num = qp->qp_num;
	for (int round = 1; round <= 2; round++) {
		ret = post_recv(qp, 300, buf + CRECV, SLOT);
		ret = ret ?: kc_connect(ch, c.id, &cp, &c.peer, sizeof(c.peer));
		check(!ret && kp_qp_state(qp) == IBV_QPS_RTS,
		      "V-ST-4: round %d: QP %u connects on a new cm_id by its number, RTS",
		      round, qp->qp_num);
		ret = ret ?: post1(&c, round, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
				   src(10 + round), SLOT, W_OTHER + round * SLOT);
		ret = ret ?: kp_poll(c.scq, &wc, 1, 20000) != 1 ||
			      wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)round;
		ret = ret ?: read_back(&c, W_OTHER + SLOT, 2 * SLOT);
		ret = ret ?: !is_src(buf, 11, SLOT) ||
			      !is_src(buf + SLOT, round == 2 ? 12 : 0, SLOT);
		ret = ret ?: echo(&c, 10, 300);
		check(!ret, "V-ST-4: round %d: a Write, a Read and a Send move the right data",
		      round);
		ret = kc_disconnect(ch, c.id, 20000);
		check(!ret && kp_qp_state(qp) == IBV_QPS_ERR,
		      "V-ST-4: round %d: disconnected, the QP in ERR (%d)", round,
		      kp_qp_state(qp));
		rdma_destroy_id(c.id);
		if (round == 2)
			break;
		ret = ibv_modify_qp(qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET },
				    IBV_QP_STATE);
		ret = ret ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS);
		check(!ret && kp_qp_state(qp) == IBV_QPS_INIT,
		      "V-ST-4: ERR -> RESET -> INIT (%d)", ret);
		while (ibv_poll_cq(c.scq, 1, &wc) == 1 || ibv_poll_cq(c.rcq, 1, &wc) == 1)
			;
		c.id = resolve();
	}
	check(!ibv_destroy_qp(qp), "the QP is destroyed");
	c.p.qp = NULL;
	kp_close(&c.p);
}

static int client(void)
{
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	case_post3();
	case_flow();
	case_fl7();
	case_ord2();
	case_ord8();
	case_srq();
	case_destroy(1);
	case_destroy(0);
	case_reuse();
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(ch);
	return kt_end();
}

int main(int argc, char **argv)
{
	kt_start();
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "client")) {
		srv_addr = argv[2];
		srv_port = argv[3];
		return client();
	}
	fprintf(stderr, "usage: %s server|client ADDR PORT\n", argv[0]);
	return 2;
}
