// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_ringabuse: a process does to the rings libkiwi shares with the
 * kernel what a corrupted provider library could, over a real connection
 * to an echo server in another namespace. The kernel must refuse what is
 * privileged, fail only the abuser's own QP, and stay healthy.
 *
 *   kiwi_ringabuse server ADDR PORT NCONN
 *	echo every message back, on NCONN connections one after another;
 *	notes "conn I echoed N" as each ends
 *   kiwi_ringabuse regmr ADDR PORT
 *	a REG_MR SQE written into the ring (V-ARCH-4, V-SEC-2)
 *   kiwi_ringabuse bind ADDR PORT
 *	Bind MW with a window or an MR of another PD than the QP's (V-PD-5)
 *   kiwi_ringabuse badsqe ADDR PORT
 *	Send SQEs with one SGE too many, or too much inline data (V-SEC-16)
 *   kiwi_ringabuse lkey ADDR PORT LKEY BUF
 *	a Send, then a receive, naming a kernel PD's local_dma_lkey LKEY
 *	over its page at BUF (kiwi_ktest_lkey.ko) (V-STAG0-3, V-SEC-2)
 *   kiwi_ringabuse srq ADDR PORT LKEY BUF
 *	the same receive through an SRQ (V-SRQ-10)
 *   kiwi_ringabuse garbage ADDR PORT ROUNDS SEED
 *	garbage SQEs, RQEs, CQEs and control words, doorbells rung, a
 *	thread flipping VALID flags meanwhile; one connection a round
 *	(V-SEC-16)
 *   kiwi_ringabuse victim ADDR PORT STOPFILE
 *	checked echoes until STOPFILE exists (the bystander of "garbage")
 *
 * Each prints TAP and exits 1 if a point failed. IDs:
 * shared/spec/digest-verbs.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"
#include "libkiwi.h"

#define MSG		4096	/* largest message, one buffer slot */
#define SLOTS		16	/* receive slots, then as many send slots */
#define DEPTH		32	/* WRs of each queue, CQEs */
#define WAIT_MS		20000	/* a completion that must come: generous */
#define KLK_FILL	0x5a	/* kiwi_ktest_lkey's page */
#define KLK_INTACT	"/sys/module/kiwi_ktest_lkey/parameters/intact"

/* One connection and what it uses; the pointers after @p are p's. */
struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct kp_peer p;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;		/* 2 * SLOTS slots of MSG bytes */
};

/* PD (unless @c has one), CQ, buffers and QP (on an SRQ when @use_srq). */
static void conn_verbs(struct conn *c, bool use_srq)
{
	const struct kp_caps caps = {
		.pd = c->pd, .cqe = 4 * DEPTH,
		.send_wr = DEPTH, .recv_wr = DEPTH, .send_sge = 2,
		.recv_sge = 2, .srq_wr = use_srq ? DEPTH : 0,
		.buf_len = 2 * SLOTS * MSG,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_MW_BIND,
	};

	kp_open_or_die(&c->p, c->id, &caps);
	c->pd = c->p.pd;
	c->cq = c->p.scq;
	c->srq = c->p.srq;
	c->qp = c->p.qp;
	c->mr = c->p.mr;
	c->buf = c->p.buf;
}

static void conn_free(struct conn *c)
{
	kp_close(&c->p);
	rdma_destroy_id(c->id);
	memset(c, 0, sizeof(*c));
}

static uint8_t *slot(struct conn *c, int i)
{
	return c->buf + (size_t)i * MSG;
}

static int post_recv_sge(struct conn *c, uint64_t id, uint64_t addr,
			 uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return c->srq ? ibv_post_srq_recv(c->srq, &wr, &bad) :
			ibv_post_recv(c->qp, &wr, &bad);
}

static int post_recv(struct conn *c, int i)
{
	return post_recv_sge(c, i, (uintptr_t)slot(c, i), MSG, c->mr->lkey);
}

static int post_send_sge(struct conn *c, uint64_t id, uint64_t addr,
			 uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { addr, len, lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;

	return ibv_post_send(c->qp, &wr, &bad);
}

/* Completions polled while waiting for others, in arrival order. */
static struct ibv_wc stash[2 * SLOTS];
static int nstash;

/*
 * The completion of @c's CQ with @wr_id, within WAIT_MS of the last one:
 * completions may come in any order (an echo before its Send's).
 */
static bool wait_wc(struct conn *c, uint64_t wr_id, struct ibv_wc *wc)
{
	for (int i = 0; i < nstash; i++) {
		if (stash[i].wr_id != wr_id)
			continue;
		*wc = stash[i];
		memmove(stash + i, stash + i + 1,
			(--nstash - i) * sizeof(*stash));
		return true;
	}
	while (kp_poll(c->cq, wc, 1, WAIT_MS) == 1) {
		if (wc->wr_id == wr_id)
			return true;
		if (nstash == (int)(sizeof(stash) / sizeof(*stash)))
			break;
		stash[nstash++] = *wc;
	}
	note("no completion of wr_id %llu", (unsigned long long)wr_id);
	return false;
}

static enum ibv_qp_state qp_state(struct conn *c)
{
	return (enum ibv_qp_state)kp_qp_state(c->qp);
}

/* Wait up to WAIT_MS for the QP to reach @want: errors move it after the
 * completion that reports them.
 */
static enum ibv_qp_state wait_state(struct conn *c, enum ibv_qp_state want)
{
	return (enum ibv_qp_state)kp_wait_state(c->qp, want, WAIT_MS);
}

/* ---- the echo server ---- */

static void serve(struct rdma_event_channel *ch, struct conn *c, int idx)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	int echoed = 0, next_send = 0;
	bool up = true;

	for (int i = 0; i < SLOTS; i++)
		if (post_recv(c, i))
			die("ibv_post_recv");
	if (rdma_accept(c->id, NULL))
		die("rdma_accept");
	while (up) {
		struct rdma_cm_event *ev;
		struct ibv_wc wc[8];
		int got = ibv_poll_cq(c->cq, 8, wc);

		for (int i = 0; i < got; i++) {
			uint8_t *dst;

			if (wc[i].status != IBV_WC_SUCCESS ||
			    wc[i].opcode != IBV_WC_RECV)
				continue;
			/* Echo from a send slot; the receive slot goes back. */
			dst = slot(c, SLOTS + next_send);
			next_send = (next_send + 1) % SLOTS;
			memcpy(dst, slot(c, wc[i].wr_id), wc[i].byte_len);
			if (post_recv(c, wc[i].wr_id) ||
			    post_send_sge(c, ~0ull, (uintptr_t)dst,
					  wc[i].byte_len, c->mr->lkey))
				continue;	/* the connection is failing */
			echoed++;
		}
		if (got || poll(&p, 1, 1) != 1 || rdma_get_cm_event(ch, &ev))
			continue;
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		    ev->event == RDMA_CM_EVENT_CONNECT_ERROR)
			up = false;
		rdma_ack_cm_event(ev);
	}
	note("conn %d echoed %d", idx, echoed);
	conn_free(c);
}

static int cmd_server(const char *addr, const char *port, int nconn)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *lid;

	if (!ch)
		die("rdma_create_event_channel");
	lid = kc_listen_or_die(ch, addr, port, 4);
	for (int i = 0; i < nconn; i++) {
		struct conn c = { .id = kc_request(ch, NULL, 0) };

		conn_verbs(&c, false);
		serve(ch, &c, i);
	}
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	/*
	 * No point of its own: each connection's echo count (its note above)
	 * and this exit status are what ringabuse.sh checks.
	 */
	note("served %d connections", nconn);
	return kt_end();
}

/* ---- clients ---- */

/* Connect @c, with its QP on @pd if not NULL. */
static void conn_open_pd(struct conn *c, const char *addr, const char *port,
			 bool use_srq, struct ibv_pd *pd)
{
	memset(c, 0, sizeof(*c));
	nstash = 0;
	c->pd = pd;
	c->ch = rdma_create_event_channel();
	if (!c->ch)
		die("rdma_create_event_channel");
	c->id = kc_resolve_or_die(c->ch, addr, port);
	conn_verbs(c, use_srq);
	kc_connect_or_die(c->ch, c->id, NULL, NULL, 0);
}

static void conn_open(struct conn *c, const char *addr, const char *port,
		      bool use_srq)
{
	conn_open_pd(c, addr, port, use_srq, NULL);
}

static void conn_close(struct conn *c)
{
	struct rdma_event_channel *ch = c->ch;

	rdma_disconnect(c->id);
	conn_free(c);
	rdma_destroy_event_channel(ch);
}

static uint8_t pattern(uint32_t seq, uint32_t i)
{
	return (uint8_t)((seq + 1) * 151 + i * 7 + (i >> 8));
}

/*
 * Send message @seq of @len bytes from send slot 0 and check its echo in
 * receive slot @rs (posted here). Return: it came back intact.
 */
static bool echo(struct conn *c, uint32_t seq, uint32_t len, int rs)
{
	uint8_t *out = slot(c, SLOTS), *in = slot(c, rs);
	struct ibv_wc wc;

	for (uint32_t i = 0; i < len; i++)
		out[i] = pattern(seq, i);
	memset(in, 0, MSG);
	if (post_recv(c, rs) ||
	    post_send_sge(c, 1000 + seq, (uintptr_t)out, len, c->mr->lkey) ||
	    !wait_wc(c, 1000 + seq, &wc) || wc.status != IBV_WC_SUCCESS ||
	    !wait_wc(c, rs, &wc) || wc.status != IBV_WC_SUCCESS ||
	    wc.byte_len != len)
		return false;
	return !memcmp(in, out, len);
}

static bool klk_intact(void)
{
	char v = 0;
	FILE *f = fopen(KLK_INTACT, "r");

	if (f) {
		if (fread(&v, 1, 1, f) != 1)
			v = 0;
		fclose(f);
	}
	return v == 'Y';
}

/* The SQE libkiwi would fill next, taken over by hand. */
static struct kiwi_sqe *raw_sqe(struct conn *c)
{
	struct kiwi_uqp *q = to_uqp(c->qp);
	struct kiwi_sqe *sqe = &q->sq[q->sq_tail++ & (q->num_sqe - 1)];

	memset(sqe, 0, sizeof(*sqe));
	return sqe;
}

/* Ring the send queue's doorbell: a POST_SEND system call. */
static void doorbell(struct conn *c)
{
	struct ibv_send_wr *bad;

	ibv_post_send(c->qp, NULL, &bad);
}

/* V-ARCH-4, V-SEC-2: IB_WR_REG_MR from a user ring. */
static int cmd_regmr(const char *addr, const char *port)
{
	struct conn c;
	struct kiwi_sqe *sqe;
	struct ibv_wc wc;
	bool ok;

	conn_open(&c, addr, port, false);
	check(echo(&c, 1, 100, 0), "regmr: a message echoes intact first");
	/*
	 * What kiwi's kernel posting puts there: raddr the ib_mr (here a
	 * user address posing as one), rkey the key, inline_len the rights.
	 */
	sqe = raw_sqe(&c);
	sqe->id = 0x5e9;
	sqe->opcode = KIWI_WR_REG_MR;
	sqe->raddr = (uintptr_t)slot(&c, 1);
	sqe->rkey = (c.mr->lkey & ~0xffu) | ((c.mr->lkey + 1) & 0xff);
	sqe->inline_len = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ;
	__atomic_store_n(&sqe->flags, KIWI_WQE_VALID | KIWI_WQE_SIGNALED,
			 __ATOMIC_RELEASE);
	doorbell(&c);
	ok = wait_wc(&c, 0x5e9, &wc);
	check(ok && wc.status == IBV_WC_LOC_QP_OP_ERR,
	      "V-ARCH-4: a REG_MR SQE written into a user QP's ring completes with IBV_WC_LOC_QP_OP_ERR (%s)",
	      ok ? ibv_wc_status_str(wc.status) : "no completion");
	check(wait_state(&c, IBV_QPS_ERR) == IBV_QPS_ERR,
	      "regmr: and the QP goes to ERR");
	conn_close(&c);
	return kt_end();
}

/*
 * One SQE of a length libkiwi would never post, written into the ring: it
 * must complete with IBV_WC_LOC_LEN_ERR, and nothing go out (V-SEC-16).
 * @inl: too much inline data; else one SGE more than the QP has.
 */
static void bad_len(const char *addr, const char *port, bool inl)
{
	struct kiwi_uqp *q;
	struct kiwi_sqe *sqe;
	struct ibv_wc wc;
	struct conn c;
	bool ok;

	conn_open(&c, addr, port, false);
	check(echo(&c, 6, 64, 0), "badsqe: a message echoes intact first");
	q = to_uqp(c.qp);
	sqe = raw_sqe(&c);
	sqe->id = 0xba1;
	sqe->opcode = KIWI_WR_SEND;
	if (inl) {
		sqe->inline_len = KIWI_MAX_INLINE + 1;
	} else {
		sqe->num_sge = q->max_send_sge + 1;
		for (int i = 0; i < sqe->num_sge; i++)
			sqe->sge[i] = (struct kiwi_sge){
				(uintptr_t)slot(&c, SLOTS) + 64 * i, 64,
				c.mr->lkey };
	}
	__atomic_store_n(&sqe->flags, KIWI_WQE_VALID | KIWI_WQE_SIGNALED |
			 (inl ? KIWI_WQE_INLINE : 0), __ATOMIC_RELEASE);
	doorbell(&c);
	ok = wait_wc(&c, 0xba1, &wc);
	/* Rung again: a kernel that had kept the entry would now send it. */
	doorbell(&c);
	if (inl)
		check(ok && wc.status == IBV_WC_LOC_LEN_ERR,
		      "V-SEC-16: a Send SQE with %d bytes of inline data (max %u) completes with IBV_WC_LOC_LEN_ERR (%s)",
		      KIWI_MAX_INLINE + 1, q->max_inline,
		      ok ? ibv_wc_status_str(wc.status) : "no completion");
	else
		check(ok && wc.status == IBV_WC_LOC_LEN_ERR,
		      "V-SEC-16: a Send SQE with %u SGEs on a QP of %u completes with IBV_WC_LOC_LEN_ERR (%s)",
		      q->max_send_sge + 1, q->max_send_sge,
		      ok ? ibv_wc_status_str(wc.status) : "no completion");
	check(wait_state(&c, IBV_QPS_ERR) == IBV_QPS_ERR,
	      "badsqe: and the QP goes to ERR");
	conn_close(&c);
}

static int cmd_badsqe(const char *addr, const char *port)
{
	bad_len(addr, port, false);
	bad_len(addr, port, true);
	return kt_end();
}

/*
 * A receive (@use_srq: an SRQ WQE) naming a kernel PD's local_dma_lkey
 * @lkey over its page @kbuf takes the server's echo: it must complete with
 * IBV_WC_LOC_PROT_ERR, fail the QP and leave the page alone. @say: the
 * texts of the four points.
 */
static void recv_kernel(const char *addr, const char *port, uint32_t lkey,
			uint64_t kbuf, bool use_srq, const char *const say[4])
{
	struct ibv_wc wc;
	struct conn c;
	bool ok;

	conn_open(&c, addr, port, use_srq);
	check(echo(&c, 2, 100, 0), "%s", say[0]);
	if (post_recv_sge(&c, 0x1e2, kbuf, 64, lkey) ||
	    post_send_sge(&c, 0x1e3, (uintptr_t)slot(&c, SLOTS), 64,
			  c.mr->lkey))
		die("post");
	ok = wait_wc(&c, 0x1e3, &wc) && wait_wc(&c, 0x1e2, &wc);
	check(ok && wc.status == IBV_WC_LOC_PROT_ERR,
	      "%s 0x%x completes it with IBV_WC_LOC_PROT_ERR (%s)", say[1],
	      lkey, ok ? ibv_wc_status_str(wc.status) : "no completion");
	check(wait_state(&c, IBV_QPS_ERR) == IBV_QPS_ERR, "%s", say[2]);
	check(klk_intact(), "%s", say[3]);
	conn_close(&c);
}

/* V-STAG0-3, V-SEC-2: a Send from, then a receive into, a kernel PD's page. */
static int cmd_lkey(const char *addr, const char *port, uint32_t lkey,
		    uint64_t kbuf)
{
	struct conn c;
	struct ibv_wc wc;
	bool ok;

	check(klk_intact(), "lkey: kiwi_ktest_lkey's page holds its fill");
	conn_open(&c, addr, port, false);
	check(echo(&c, 1, 100, 0), "lkey: a message echoes intact first");
	if (post_recv(&c, 1) || post_send_sge(&c, 0x1e1, kbuf, 64, lkey))
		die("post");
	ok = wait_wc(&c, 0x1e1, &wc);
	check(ok && wc.status == IBV_WC_LOC_PROT_ERR,
	      "V-STAG0-3: a Send whose SGE names a kernel PD's local_dma_lkey 0x%x completes with IBV_WC_LOC_PROT_ERR (%s)",
	      lkey, ok ? ibv_wc_status_str(wc.status) : "no completion");
	ok = wait_wc(&c, 1, &wc);
	check(ok && wc.status == IBV_WC_WR_FLUSH_ERR,
	      "lkey: nothing came back for it: the receive is flushed (%s)",
	      ok ? ibv_wc_status_str(wc.status) : "no completion");
	conn_close(&c);

	recv_kernel(addr, port, lkey, kbuf, false, (const char *const[]){
		"lkey: a new connection echoes intact",
		"V-STAG0-3: the echo into a receive naming local_dma_lkey",
		"lkey: and the QP goes to ERR",
		"lkey: the kernel PD's page still holds only its fill" });
	return kt_end();
}

/* V-SRQ-10: the same receive through an SRQ. */
static int cmd_srq(const char *addr, const char *port, uint32_t lkey,
		   uint64_t kbuf)
{
	recv_kernel(addr, port, lkey, kbuf, true, (const char *const[]){
		"srq: a message echoes intact through the SRQ first",
		"V-SRQ-10: the echo into an SRQ WQE naming local_dma_lkey",
		"V-SRQ-10: the QP that took the WQE goes to ERR",
		"srq: the kernel PD's page still holds only its fill" });
	return kt_end();
}

/* Bind type 2 window @mw over @len bytes of @mr at @addr with STag @rkey. */
static int bind_mw(struct conn *c, struct ibv_mw *mw, uint32_t rkey,
		   struct ibv_mr *mr, void *addr, uint32_t len)
{
	struct ibv_send_wr wr = {
		.wr_id = 0xb1d,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_mw = {
			.mw = mw,
			.rkey = rkey,
			.bind_info = { mr, (uintptr_t)addr, len,
				       IBV_ACCESS_REMOTE_WRITE },
		},
	};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	if (ibv_post_send(c->qp, &wr, &bad))
		return -1;
	return wait_wc(c, 0xb1d, &wc) ? (int)wc.status : -1;
}

static const char *status_str(int st)
{
	return st < 0 ? "not posted or no completion" :
			ibv_wc_status_str((enum ibv_wc_status)st);
}

/*
 * V-PD-5: Bind needs PD(QP) = PD(MW) = PD(MR). A window of another PD,
 * then a window over an MR of another PD, are refused, the MR keeps no
 * window; on a QP of that PD the first window binds with the same STag.
 */
static int cmd_bind(const char *addr, const char *port)
{
	struct ibv_mr *mr2, *mr2b;
	struct ibv_mw *mw2, *mw1;
	struct ibv_pd *pd2;
	uint8_t *buf2;
	uint32_t rkey;
	struct conn c;
	int st;

	conn_open(&c, addr, port, false);
	pd2 = ibv_alloc_pd(c.id->verbs);
	buf2 = aligned_alloc(4096, 2 * MSG);
	if (!pd2 || !buf2)
		die("ibv_alloc_pd");
	mr2 = ibv_reg_mr(pd2, buf2, MSG, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	mr2b = ibv_reg_mr(pd2, buf2 + MSG, MSG, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	mw2 = ibv_alloc_mw(pd2, IBV_MW_TYPE_2);
	if (!mr2 || !mr2b || !mw2)
		die("ibv_reg_mr/ibv_alloc_mw");
	rkey = ibv_inc_rkey(mw2->rkey);
	check(echo(&c, 4, 300, 0), "bind: a message echoes intact first");
	st = bind_mw(&c, mw2, rkey, c.mr, c.buf, MSG);
	check(st == IBV_WC_MW_BIND_ERR,
	      "V-PD-5: binding a window of another PD than the QP's completes with IBV_WC_MW_BIND_ERR (%s)",
	      status_str(st));
	check(wait_state(&c, IBV_QPS_ERR) == IBV_QPS_ERR,
	      "bind: and the QP goes to ERR");
	conn_close(&c);

	conn_open(&c, addr, port, false);
	mw1 = ibv_alloc_mw(c.pd, IBV_MW_TYPE_2);
	if (!mw1)
		die("ibv_alloc_mw");
	st = bind_mw(&c, mw1, ibv_inc_rkey(mw1->rkey), mr2b, buf2 + MSG, MSG);
	check(st == IBV_WC_MW_BIND_ERR,
	      "V-PD-5: binding a window of the QP's PD over an MR of another PD completes with IBV_WC_MW_BIND_ERR (%s)",
	      status_str(st));
	/* A window bound to an MR keeps it registered (EBUSY). */
	st = ibv_dereg_mr(mr2b);
	check(!st, "V-PD-5: nothing was bound to that MR: ibv_dereg_mr of it succeeds while the QP exists (%s)",
	      strerror(st));
	ibv_dealloc_mw(mw1);
	conn_close(&c);

	conn_open_pd(&c, addr, port, false, pd2);
	st = bind_mw(&c, mw2, rkey, mr2, buf2, MSG);
	check(st == IBV_WC_SUCCESS,
	      "V-PD-5: on a QP of its own PD the window binds with that STag 0x%x (%s)",
	      rkey, status_str(st));
	check(echo(&c, 5, 300, 0), "bind: and that connection echoes intact");
	conn_close(&c);
	ibv_dealloc_mw(mw2);
	ibv_dereg_mr(mr2);
	ibv_dealloc_pd(pd2);
	free(buf2);
	return kt_end();
}

/* ---- garbage ---- */

struct racer {
	struct conn *c;
	unsigned int seed;
	volatile bool stop;
};

/*
 * Flip VALID flags of SQEs and RQEs, and consume CQEs behind the kernel's
 * back, while the main thread rings doorbells: the kernel must copy each
 * entry once and never loop on what the process keeps handing it.
 */
static void *race(void *arg)
{
	struct racer *r = arg;
	struct kiwi_uqp *q = to_uqp(r->c->qp);
	struct kiwi_ucq *cq = to_ucq(r->c->cq);

	while (!r->stop) {
		uint32_t x = rand_r(&r->seed);

		__atomic_fetch_xor(&q->sq[x % q->num_sqe].flags,
				   KIWI_WQE_VALID, __ATOMIC_RELEASE);
		__atomic_fetch_or(&q->rq[(x >> 8) % q->num_rqe].flags,
				  KIWI_WQE_VALID, __ATOMIC_RELEASE);
		__atomic_store_n(&cq->queue[(x >> 16) % cq->num_cqe].flags, 0,
				 __ATOMIC_RELEASE);
	}
	return NULL;
}

static uint32_t rnd(unsigned int *seed)
{
	return (uint32_t)rand_r(seed) << 16 ^ (uint32_t)rand_r(seed);
}

/* One garbage SGE: random, or the real MR with bad bounds. */
static void garbage_sge(struct conn *c, struct kiwi_sge *s, unsigned int *seed)
{
	uint32_t k = rnd(seed);

	s->addr = (uint64_t)rnd(seed) << 32 | rnd(seed);
	s->length = rnd(seed) >> (k & 31);
	s->lkey = rnd(seed);
	if (k & 0x100) {
		s->lkey = c->mr->lkey;
		s->addr = (uintptr_t)c->buf + (int32_t)(rnd(seed) % (4 * MSG)) -
			  MSG;
	}
}

/* Fill @len bytes at @p with random ones. */
static void garbage_bytes(void *p, size_t len, unsigned int *seed)
{
	for (size_t i = 0; i < len; i++)
		((uint8_t *)p)[i] = rnd(seed);
}

/*
 * Half the time random bytes; otherwise an entry that looks sound but
 * has an opcode up to 9, SGE counts and lengths out of range, random
 * STags and addresses, and VALID set. @sqe: a struct kiwi_sqe, else a
 * struct kiwi_rqe.
 */
static void garbage_wqe(struct conn *c, void *e, bool sqe, unsigned int *seed)
{
	struct kiwi_sqe *s = e;
	struct kiwi_rqe *r = e;
	size_t len = sqe ? sizeof(*s) : sizeof(*r);
	struct kiwi_sge *sge = sqe ? s->sge : r->sge;
	uint32_t k = rnd(seed);

	if (k & 1) {
		garbage_bytes(e, len, seed);
		return;
	}
	memset(e, 0, len);
	for (int i = 0; i < KIWI_MAX_SGE; i++)
		garbage_sge(c, &sge[i], seed);
	if (sqe) {
		s->num_sge = k & 2 ? rnd(seed) : rnd(seed) % 4;
		s->opcode = rnd(seed) % 10;
		s->rkey = rnd(seed);
		s->raddr = (uint64_t)rnd(seed) << 32 | rnd(seed);
		s->inline_len = k & 4 ? rnd(seed) : rnd(seed) % 128;
		s->inv_stag = rnd(seed);
		s->id = rnd(seed);
	} else {
		r->num_sge = k & 2 ? rnd(seed) : rnd(seed) % 4;
		r->id = rnd(seed);
	}
	/* The flags last, as a producer hands an entry over. */
	__atomic_store_n(sqe ? &s->flags : &r->flags,
			 (sqe ? rnd(seed) & 0x7e : 0) | KIWI_WQE_VALID,
			 __ATOMIC_RELEASE);
}

/* One round: a connection whose rings get @steps garbage writes. */
static bool garbage_round(const char *addr, const char *port, unsigned int seed,
			  int steps)
{
	struct racer r = { .seed = seed ^ 0x9e3779b9u };
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc[DEPTH];
	struct kiwi_uqp *q;
	struct kiwi_ucq *cq;
	pthread_t thr;
	struct conn c;
	bool ok;

	conn_open(&c, addr, port, false);
	ok = echo(&c, seed, 1 + seed % 3000, 0);
	q = to_uqp(c.qp);
	cq = to_ucq(c.cq);
	r.c = &c;
	if (pthread_create(&thr, NULL, race, &r))
		die("pthread_create");
	for (int s = 0; s < steps; s++) {
		uint32_t k = rnd(&seed);

		switch (k % 8) {
		case 0:
		case 1:
			garbage_wqe(&c, &q->sq[rnd(&seed) % q->num_sqe], true,
				    &seed);
			break;
		case 2:
			garbage_wqe(&c, &q->rq[rnd(&seed) % q->num_rqe], false,
				    &seed);
			break;
		case 3:	/* the control words the kernel and libkiwi share */
			q->ctrl->state = rnd(&seed);
			cq->ctrl->notify = rnd(&seed);
			cq->queue[rnd(&seed) % cq->num_cqe].flags = rnd(&seed);
			break;
		case 4:	/* libkiwi's own indices, thrown off */
			q->sq_tail += rnd(&seed);
			q->rq_tail += rnd(&seed);
			break;
		case 5:	/* a valid post, wherever the indices point now */
			post_send_sge(&c, s, (uintptr_t)slot(&c, SLOTS), k % MSG,
				      c.mr->lkey);
			break;
		case 6:	/* receive doorbell: libkiwi rings it in ERR */
			q->ctrl->state = IBV_QPS_ERR;
			ibv_post_recv(c.qp, NULL, &rbad);
			break;
		default:
			q->ctrl->state = IBV_QPS_RTS;
			doorbell(&c);
			break;
		}
		if (k & 0x10000)
			ibv_req_notify_cq(c.cq, k & 0x20000);
		ibv_poll_cq(c.cq, DEPTH, wc);
	}
	r.stop = true;
	pthread_join(thr, NULL);
	conn_close(&c);
	return ok;
}

static int cmd_garbage(const char *addr, const char *port, int rounds,
		       unsigned int seed)
{
	int good = 0;

	for (int i = 0; i < rounds; i++) {
		note("round %d of %d", i + 1, rounds);
		good += garbage_round(addr, port, seed + i, 400);
	}
	check(good == rounds,
	      "V-SEC-16: %d rounds of garbage rings (seed %u): each connection echoed intact before its abuse (%d)",
	      rounds, seed, good);
	return kt_end();
}

/* The bystander: checked echoes until @stop exists. */
static int cmd_victim(const char *addr, const char *port, const char *stop)
{
	uint32_t seq = 0, bad = 0;
	struct conn c;

	conn_open(&c, addr, port, false);
	while (access(stop, F_OK) || seq < 20) {
		if (!echo(&c, seq, 1 + (seq * 337) % MSG, seq % SLOTS))
			bad++;
		seq++;
		if (bad)
			break;
	}
	check(!bad && qp_state(&c) == IBV_QPS_RTS,
	      "V-SEC-16: another process's QP echoed %u messages intact meanwhile, and is in RTS",
	      seq - bad);
	conn_close(&c);
	return kt_end();
}

int main(int argc, char **argv)
{
	kt_start();
	if (argc == 5 && !strcmp(argv[1], "server"))
		return cmd_server(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "regmr"))
		return cmd_regmr(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "badsqe"))
		return cmd_badsqe(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "bind"))
		return cmd_bind(argv[2], argv[3]);
	if (argc == 6 && !strcmp(argv[1], "lkey"))
		return cmd_lkey(argv[2], argv[3], strtoul(argv[4], NULL, 0),
				strtoull(argv[5], NULL, 0));
	if (argc == 6 && !strcmp(argv[1], "srq"))
		return cmd_srq(argv[2], argv[3], strtoul(argv[4], NULL, 0),
			       strtoull(argv[5], NULL, 0));
	if (argc == 6 && !strcmp(argv[1], "garbage"))
		return cmd_garbage(argv[2], argv[3], atoi(argv[4]),
				   strtoul(argv[5], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "victim"))
		return cmd_victim(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: see the top of %s.c\n", argv[0]);
	return 2;
}
