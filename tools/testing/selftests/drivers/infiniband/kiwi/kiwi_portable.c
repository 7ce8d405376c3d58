// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_portable: a verbs program written the way programs for IB and RoCE
 * devices are (the kind test suites and middleware are), run on kiwi
 * unchanged. Prints TAP.
 *
 *   kiwi_portable local DEVICE
 *   kiwi_portable server ADDR PORT
 *   kiwi_portable client ADDR PORT
 *
 * local: ibv_modify_qp with the attribute masks of the IB verbs on an
 * unconnected QP: RESET -> INIT with IBV_QP_STATE | IBV_QP_PKEY_INDEX |
 * IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, INIT -> RTR with the path attributes,
 * what query_qp then reports, and the exact errno of every attribute kiwi
 * cannot honour.
 *
 * server, client: each end makes its own CQ and QP (not rdma_cm's), brings
 * the QP to INIT and RTR with the IB masks, and connects it through
 * rdma_cm by its number; the client then moves data it checks (RDMA
 * Write, RDMA Read, Send echoed by the server) and disconnects.
 */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

#define BUF_SIZE	(256 * 1024)
#define W_OFF		0		/* server: the client Writes here */
#define R_OFF		(64 * 1024)	/* server: a pattern the client Reads */
#define RECV_OFF	(128 * 1024)	/* receive slots */
#define SEND_OFF	(192 * 1024)	/* what an end sends from */
#define XFER		(48 * 1024)
#define SLOT		4096
#define NRECV		8
#define ACCESS		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)
#define SEED_R		7		/* the server's pattern at R_OFF */

/* The mask IB programs bring a QP to INIT with (ibv_rc_pingpong's). */
#define IB_INIT_MASK	(IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | \
			 IBV_QP_ACCESS_FLAGS)
/* ... and to RTR, without a connection manager. */
#define IB_RTR_MASK	(IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | \
			 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | \
			 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
/* ... and to RTS. */
#define IB_RTS_MASK	(IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
			 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | \
			 IBV_QP_MAX_QP_RD_ATOMIC)

static const char *const st_name[] = {
	"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
};

static const char *state_str(int st)
{
	return st >= 0 && st <= IBV_QPS_ERR ? st_name[st] : "?";
}

/* The attributes an IB program fills for RESET -> INIT. */
static struct ibv_qp_attr init_attr(void)
{
	return (struct ibv_qp_attr){
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
}

/* ... and for INIT -> RTR: a RoCE-style address vector (GID index 0). */
static struct ibv_qp_attr rtr_attr(uint8_t ird)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = 0x1234,
		.rq_psn = 0x5678,
		.max_dest_rd_atomic = ird,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .sgid_index = 0, .hop_limit = 64 },
		},
	};

	a.ah_attr.grh.dgid.raw[15] = 1;
	return a;
}

/* ... and for RTR -> RTS. */
static struct ibv_qp_attr rts_attr(void)
{
	return (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.sq_psn = 0x9abc,
		.max_rd_atomic = 4,
	};
}

/* Modify with @mask; a point that it returned @want and left @qp in @st. */
static bool modify_is(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		      int want, enum ibv_qp_state st, const char *what)
{
	int ret = ibv_modify_qp(qp, a, mask);
	int now = kp_qp_state(qp);

	return check(ret == want && now == (int)st,
		     "%s: %s, QP in %s", what, ret ? strerror(ret) : "0",
		     state_str(now));
}

/* ---- local: the masks on an unconnected QP ---- */

static void local_ex(struct ibv_context *ctx, struct ibv_pd *pd);

static int local(const char *dev)
{
	struct ibv_context *ctx = open_dev(dev);
	struct ibv_qp_init_attr qinit;
	struct ibv_qp_attr a, q;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int ret;

	if (!ctx)
		die("open %s", dev);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	qp = cq ? ibv_create_qp(pd, &(struct ibv_qp_init_attr){
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 } }) : NULL;
	if (!qp)
		die("a PD, a CQ and an RC QP");

	/*
	 * A new QP reports INIT (the iWARP verbs' Idle); an IB program's
	 * QP, after an error, goes RESET -> INIT again, which is tested here.
	 */
	memset(&q, 0, sizeof(q));
	ret = ibv_query_qp(qp, &q, IBV_QP_STATE, &qinit);
	check(!ret && q.qp_state == IBV_QPS_INIT, "a new QP reports INIT (%s)",
	      state_str(q.qp_state));
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET };
	modify_is(qp, &a, IBV_QP_STATE, 0, IBV_QPS_RESET, "INIT -> RESET");
	a = init_attr();
	a.pkey_index = 1;
	modify_is(qp, &a, IB_INIT_MASK, EINVAL, IBV_QPS_RESET,
		  "RESET -> INIT with P_Key index 1 (iWARP has no P_Key table) is EINVAL");
	a = init_attr();
	a.port_num = 2;
	modify_is(qp, &a, IB_INIT_MASK, EINVAL, IBV_QPS_RESET,
		  "RESET -> INIT on port 2 (kiwi has one) is EINVAL");
	a = init_attr();
	a.min_rnr_timer = 12;
	modify_is(qp, &a, IB_INIT_MASK | IBV_QP_MIN_RNR_TIMER, EINVAL,
		  IBV_QPS_RESET,
		  "RESET -> INIT with IBV_QP_MIN_RNR_TIMER (an RTR attribute in the IB verbs) is EINVAL");
	a = init_attr();
	modify_is(qp, &a, IB_INIT_MASK, 0, IBV_QPS_INIT,
		  "RESET -> INIT with IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS");
	memset(&q, 0, sizeof(q));
	q.port_num = 9;
	q.pkey_index = 9;
	ret = ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_PORT |
			   IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS, &qinit);
	check(!ret && q.qp_state == IBV_QPS_INIT && q.port_num == 1 &&
	      q.pkey_index == 0 && q.qp_access_flags == a.qp_access_flags,
	      "query_qp: INIT, port 1, P_Key index 0, the access flags set (%u, %u, %#x)",
	      q.port_num, q.pkey_index, q.qp_access_flags);
	modify_is(qp, &a, IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS, 0,
		  IBV_QPS_INIT, "INIT -> INIT with P_Key index 0 and access flags");

	a.qkey = 0x11111111;
	modify_is(qp, &a, IBV_QP_QKEY, EINVAL, IBV_QPS_INIT,
		  "IBV_QP_QKEY (datagram QPs only) is EINVAL");
	a.path_mig_state = IBV_MIG_MIGRATED;
	modify_is(qp, &a, IBV_QP_PATH_MIG_STATE, EOPNOTSUPP, IBV_QPS_INIT,
		  "IBV_QP_PATH_MIG_STATE (no path migration) is EOPNOTSUPP");
	a.alt_port_num = 1;
	a.alt_ah_attr.port_num = 1;
	modify_is(qp, &a, IBV_QP_ALT_PATH, EINVAL, IBV_QPS_INIT,
		  "IBV_QP_ALT_PATH (the RDMA core allows it on IB only) is EINVAL");
	a.en_sqd_async_notify = 1;
	modify_is(qp, &a, IBV_QP_EN_SQD_ASYNC_NOTIFY, EOPNOTSUPP, IBV_QPS_INIT,
		  "IBV_QP_EN_SQD_ASYNC_NOTIFY (no SQ Drained event) is EOPNOTSUPP");
	a.cap.max_send_wr = 8;
	modify_is(qp, &a, IBV_QP_CAP, EOPNOTSUPP, IBV_QPS_INIT,
		  "IBV_QP_CAP (no queue resize) is EOPNOTSUPP");

	a = rtr_attr(3);
	a.timeout = 14;
	modify_is(qp, &a, IB_RTR_MASK | IBV_QP_TIMEOUT, EINVAL, IBV_QPS_INIT,
		  "INIT -> RTR with IBV_QP_TIMEOUT (an RTS attribute in the IB verbs) is EINVAL");
	a = rtr_attr(3);
	modify_is(qp, &a, IB_RTR_MASK, 0, IBV_QPS_RTR,
		  "INIT -> RTR with IBV_QP_AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER");
	memset(&q, 0, sizeof(q));
	ret = ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_MAX_DEST_RD_ATOMIC |
			   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, &qinit);
	check(!ret && q.qp_state == IBV_QPS_RTR && q.max_dest_rd_atomic == 3 &&
	      q.port_num == 1 && q.qp_access_flags == init_attr().qp_access_flags,
	      "query_qp: RTR, the IRD set (3), port 1, access flags kept (%u)",
	      q.max_dest_rd_atomic);
	a = rts_attr();
	modify_is(qp, &a, IB_RTS_MASK, EINVAL, IBV_QPS_RTR,
		  "RTR -> RTS by the consumer is EINVAL: an iWARP QP enters RTS when its connection is up");

	check(!ibv_qp_to_qp_ex(qp),
	      "ibv_create_qp(): ibv_qp_to_qp_ex() is NULL (no ibv_wr_*() asked for)");
	local_ex(ctx, pd);
	check(!ibv_destroy_qp(qp) && !ibv_destroy_cq(cq) &&
	      !ibv_dealloc_pd(pd) && !ibv_close_device(ctx),
	      "QP, CQ, PD and device closed");
	return kt_end();
}

/* ---- server and client: a QP of our own, connected by its number ---- */

struct end {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

/* A zeroed, page-aligned buffer of BUF_SIZE bytes. */
static uint8_t *zbuf(void)
{
	uint8_t *buf = aligned_alloc(4096, BUF_SIZE);

	if (!buf)
		die("a buffer");
	return memset(buf, 0, BUF_SIZE);
}

/* RESET -> INIT -> RTR with the masks of the IB verbs; 0 or the errno. */
static int ib_bring_up(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = init_attr();
	int ret = ibv_modify_qp(qp, &a, IB_INIT_MASK);

	a = rtr_attr(4);
	return ret ?: ibv_modify_qp(qp, &a, IB_RTR_MASK);
}

/* PD, CQs, buffer and QP on @id's device; the QP brought up as IB does. */
static void end_open(struct end *e, struct rdma_cm_id *id)
{
	int ret;

	memset(e, 0, sizeof(*e));
	e->id = id;
	e->buf = zbuf();
	e->pd = ibv_alloc_pd(id->verbs);
	e->scq = e->pd ? ibv_create_cq(id->verbs, 32, NULL, NULL, 0) : NULL;
	e->rcq = e->scq ? ibv_create_cq(id->verbs, 32, NULL, NULL, 0) : NULL;
	e->mr = e->rcq ? ibv_reg_mr(e->pd, e->buf, BUF_SIZE, ACCESS) : NULL;
	e->qp = e->mr ? ibv_create_qp(e->pd, &(struct ibv_qp_init_attr){
			.send_cq = e->scq, .recv_cq = e->rcq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = NRECV,
				 .max_send_sge = 2, .max_recv_sge = 1 } }) :
		NULL;
	if (!e->qp)
		die("PD, CQs, MR and QP");
	ret = ib_bring_up(e->qp);
	check(!ret, "RESET -> INIT -> RTR with the IB masks (%s)",
	      strerror(ret));
}

static void end_close(struct end *e)
{
	check(!ibv_destroy_qp(e->qp) && !ibv_dereg_mr(e->mr) &&
	      !ibv_destroy_cq(e->scq) && !ibv_destroy_cq(e->rcq) &&
	      !ibv_dealloc_pd(e->pd), "QP, MR, CQs and PD freed");
	free(e->buf);
}

/* Receive slot @i of @buf (registered as @mr) on @qp. */
static int slot_recv(struct ibv_qp *qp, uint8_t *buf, struct ibv_mr *mr, int i)
{
	return kp_post_recv(qp, i, buf + RECV_OFF + i * SLOT, SLOT, mr->lkey);
}

static int post_recv(struct end *e, int i)
{
	return slot_recv(e->qp, e->buf, e->mr, i);
}

/* One completion on @cq, which must be a success of opcode @op. */
static bool one_wc(struct ibv_cq *cq, enum ibv_wc_opcode op, struct ibv_wc *wc)
{
	if (kp_poll(cq, wc, 1, 20000) != 1) {
		note("no completion (wanted opcode %d)", op);
		return false;
	}
	if (wc->status != IBV_WC_SUCCESS || wc->opcode != op) {
		note("completion %s, opcode %d (wanted %d)",
		     ibv_wc_status_str(wc->status), wc->opcode, op);
		return false;
	}
	return true;
}

/* Connection 1: a QP of ibv_create_qp(), posted to with ibv_post_send(). */
static void serve_plain(struct rdma_event_channel *ch, struct rdma_cm_id *id)
{
	struct rdma_conn_param cp = kc_param(4, 4, NULL, 0);
	struct kc_info info;
	struct ibv_wc wc;
	struct end e;
	int i, n = 0;

	end_open(&e, id);
	kt_fill(e.buf + R_OFF, XFER, SEED_R, 0);
	for (i = 0; i < NRECV; i++)
		post_recv(&e, i);
	info = (struct kc_info){ .addr = (uintptr_t)e.buf, .rkey = e.mr->rkey };
	cp.private_data = &info;
	cp.private_data_len = sizeof(info);
	cp.qp_num = e.qp->qp_num;
	kc_accept_or_die(ch, id, &cp);
	check(kp_qp_state(e.qp) == IBV_QPS_RTS,
	      "server: the QP accepted by its number is RTS");

	/* Echo each Send until an empty one. */
	while (one_wc(e.rcq, IBV_WC_RECV, &wc) && wc.byte_len) {
		uint8_t *msg = e.buf + RECV_OFF + wc.wr_id * SLOT;

		memcpy(e.buf + SEND_OFF, msg, wc.byte_len);
		post_recv(&e, wc.wr_id);
		if (kp_post_send(e.qp, 100 + n, IBV_WR_SEND, IBV_SEND_SIGNALED,
				 e.buf + SEND_OFF, wc.byte_len, e.mr->lkey, 0,
				 0) || !one_wc(e.scq, IBV_WC_SEND, &wc))
			break;
		n++;
	}
	check(n > 0, "server: echoed %d Sends", n);
	check(!kc_wait(ch, id, RDMA_CM_EVENT_DISCONNECTED, 20000),
	      "server: the client disconnected");
	end_close(&e);
	rdma_destroy_id(id);
}

/* Post one WR of one SGE from our buffer at @off and wait for it. */
static bool xfer(struct end *e, enum ibv_wr_opcode op, size_t off,
		 uint32_t len, uint64_t raddr, uint32_t rkey)
{
	static const enum ibv_wc_opcode wc_op[] = {
		[IBV_WR_RDMA_WRITE] = IBV_WC_RDMA_WRITE,
		[IBV_WR_RDMA_READ] = IBV_WC_RDMA_READ,
		[IBV_WR_SEND] = IBV_WC_SEND,
	};
	struct ibv_wc wc;

	return !kp_post_send(e->qp, op, op, IBV_SEND_SIGNALED, e->buf + off,
			     len, e->mr->lkey, raddr, rkey) &&
	       one_wc(e->scq, wc_op[op], &wc);
}

static void client_plain(struct rdma_event_channel *ch, const char *addr,
			 const char *port)
{
	struct rdma_conn_param cp = kc_param(4, 4, NULL, 0);
	struct rdma_cm_id *id;
	struct kc_info peer;
	struct ibv_wc wc;
	struct end e;
	bool ok;

	id = kc_resolve_or_die(ch, addr, port);
	end_open(&e, id);
	post_recv(&e, 0);
	cp.qp_num = e.qp->qp_num;
	kc_connect_or_die(ch, id, &cp, &peer, sizeof(peer));
	check(kp_qp_state(e.qp) == IBV_QPS_RTS,
	      "client: the QP connected by its number is RTS");

	kt_fill(e.buf + SEND_OFF, XFER, 1, 0);
	ok = xfer(&e, IBV_WR_RDMA_WRITE, SEND_OFF, XFER, peer.addr + W_OFF,
		  peer.rkey) &&
	     xfer(&e, IBV_WR_RDMA_READ, 0, XFER, peer.addr + W_OFF, peer.rkey);
	check(ok && !kt_differs(e.buf, XFER, 1, 0),
	      "an RDMA Write of %d KiB, read back with an RDMA Read, is intact",
	      XFER / 1024);
	ok = xfer(&e, IBV_WR_RDMA_READ, 0, XFER, peer.addr + R_OFF, peer.rkey);
	check(ok && !kt_differs(e.buf, XFER, SEED_R, 0),
	      "an RDMA Read of the server's %d KiB pattern is intact",
	      XFER / 1024);
	kt_fill(e.buf + SEND_OFF, SLOT, 2, 0);
	ok = xfer(&e, IBV_WR_SEND, SEND_OFF, SLOT, 0, 0) &&
	     one_wc(e.rcq, IBV_WC_RECV, &wc);
	check(ok && wc.byte_len == SLOT &&
	      !kt_differs(e.buf + RECV_OFF, SLOT, 2, 0),
	      "a Send of %d bytes comes back from the server intact", SLOT);
	post_recv(&e, 0);
	xfer(&e, IBV_WR_SEND, SEND_OFF, 0, 0, 0);	/* the server's last */

	check(!kc_disconnect(ch, id, 20000) && kp_qp_state(e.qp) == IBV_QPS_ERR,
	      "client: disconnected, the QP in ERR");
	end_close(&e);
	rdma_destroy_id(id);
}

/*
 * ---- the extended API: ibv_create_qp_ex() with ibv_wr_*(), and
 * ibv_create_cq_ex() polled with ibv_start_poll() and the readers ----
 */

#define X_OFF		(112 * 1024)	/* server: the window's range */
#define X_LEN		(16 * 1024)
#define X_SEND_WR	16		/* the send queue holds this many */
#define X_SGE		4
#define X_INLINE	64
#define X_OPS		(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV | \
			 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ | \
			 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)
#define X_ACCESS	(ACCESS | IBV_ACCESS_MW_BIND)

/* A request (client to server) and its reply, in Sends. */
struct msg {
	uint32_t op;		/* 'E'cho, 'X' check, 'B'ind, 'L'ocal inv, 'Q'uit */
	uint32_t seed, len;	/* 'X': the pattern the window range holds */
	uint32_t pad;
	uint8_t data[];		/* 'E': echoed */
};

struct reply {
	uint32_t op, ok;
	uint32_t req_len;	/* the request's byte_len */
	uint32_t wc_flags;	/* its ibv_wc_read_wc_flags() */
	uint32_t inv_rkey;	/* its ibv_wc_read_invalidated_rkey() */
	uint32_t rkey;		/* 'B': the window's new rkey */
	uint32_t nrecv;		/* requests the server received so far */
	uint32_t opcode;	/* the request's ibv_wc_read_opcode() */
	uint8_t data[];
};

/* One completion as the ibv_wc_read_*() readers give it. */
struct xwc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len, qp_num, wc_flags, inv_rkey, vendor_err;
	uint32_t src_qp, slid, sl, dlid_path_bits;
};

struct xend {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct ibv_cq_ex *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static void xread(struct ibv_cq_ex *cq, struct xwc *w)
{
	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->opcode = ibv_wc_read_opcode(cq);
	w->byte_len = ibv_wc_read_byte_len(cq);
	w->qp_num = ibv_wc_read_qp_num(cq);
	w->wc_flags = ibv_wc_read_wc_flags(cq);
	w->inv_rkey = w->wc_flags & IBV_WC_WITH_INV ?
		      ibv_wc_read_invalidated_rkey(cq) : 0;
	w->vendor_err = ibv_wc_read_vendor_err(cq);
	w->src_qp = ibv_wc_read_src_qp(cq);
	w->slid = ibv_wc_read_slid(cq);
	w->sl = ibv_wc_read_sl(cq);
	w->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
}

/*
 * Up to @want completions of @cq in one ibv_start_poll() ...
 * ibv_end_poll() session, waiting up to about 10 s for the first; how
 * many came.
 */
static int xpoll(struct ibv_cq_ex *cq, struct xwc *w, int want)
{
	struct ibv_poll_cq_attr attr = {};
	double end = now() + 10;
	int n = 0, ret;

	while ((ret = ibv_start_poll(cq, &attr)) == ENOENT && now() < end)
		usleep(1000);
	if (ret)
		return 0;
	do {
		xread(cq, &w[n]);
	} while (++n < want && !ibv_next_poll(cq));
	ibv_end_poll(cq);
	return n;
}

/* One completion of @cq: a success of @op with @wr_id. */
static bool xone(struct ibv_cq_ex *cq, uint64_t wr_id, enum ibv_wc_opcode op,
		 struct xwc *w)
{
	if (xpoll(cq, w, 1) != 1) {
		note("no completion (wanted wr_id %llu)",
		     (unsigned long long)wr_id);
		return false;
	}
	if (w->status != IBV_WC_SUCCESS || w->opcode != op || w->wr_id != wr_id) {
		note("completion %llu %s, opcode %d (wanted %llu, opcode %d)",
		     (unsigned long long)w->wr_id,
		     ibv_wc_status_str(w->status), w->opcode,
		     (unsigned long long)wr_id, op);
		return false;
	}
	return true;
}

/* The next receive completion, waiting on the completion channel. */
static bool xrecv(struct xend *e, struct xwc *w)
{
	struct ibv_cq *cq = ibv_cq_ex_to_cq(e->rcq);
	struct ibv_poll_cq_attr attr = {};
	double end = now() + 20;

	while (now() < end) {
		/* Armed, then looked at: nothing slips between. */
		if (ibv_req_notify_cq(cq, 0))
			return false;
		if (!ibv_start_poll(e->rcq, &attr)) {
			xread(e->rcq, w);
			ibv_end_poll(e->rcq);
			return w->status == IBV_WC_SUCCESS &&
			       w->opcode == IBV_WC_RECV;
		}
		kp_cq_event(e->chan, cq, 1000);
	}
	note("no receive completion");
	return false;
}

static int xpost_recv(struct xend *e, int i)
{
	return slot_recv(e->qp, e->buf, e->mr, i);
}

/* PD, CQs (the receive CQ on a channel), MR and a QP for ibv_wr_*(). */
static void xend_open(struct xend *e, struct rdma_cm_id *id)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 32,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
		.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
	};
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = X_SEND_WR, .max_recv_wr = NRECV,
			 .max_send_sge = X_SGE, .max_recv_sge = 1,
			 .max_inline_data = X_INLINE },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = X_OPS,
	};
	int ret;

	memset(e, 0, sizeof(*e));
	e->id = id;
	e->buf = zbuf();
	e->pd = ibv_alloc_pd(id->verbs);
	e->chan = ibv_create_comp_channel(id->verbs);
	if (!e->pd || !e->chan)
		die("a PD and a completion channel");
	e->scq = ibv_create_cq_ex(id->verbs, &ca);
	ca.channel = e->chan;
	ca.comp_mask = 0;
	e->rcq = e->scq ? ibv_create_cq_ex(id->verbs, &ca) : NULL;
	check(e->scq && e->rcq,
	      "ibv_create_cq_ex with the standard wc_flags, single-threaded and on a channel (%s)",
	      e->rcq ? "made" : strerror(errno));
	if (!e->rcq)
		die("the CQs");
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF_SIZE, X_ACCESS);
	qa.pd = e->pd;
	qa.send_cq = ibv_cq_ex_to_cq(e->scq);
	qa.recv_cq = ibv_cq_ex_to_cq(e->rcq);
	e->qp = e->mr ? ibv_create_qp_ex(id->verbs, &qa) : NULL;
	e->qpx = e->qp ? ibv_qp_to_qp_ex(e->qp) : NULL;
	check(e->qpx && &e->qpx->qp_base == e->qp,
	      "ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: ibv_qp_to_qp_ex() gives its ibv_qp_ex (%s)",
	      e->qp ? "made" : strerror(errno));
	if (!e->qpx)
		die("an extended QP");
	ret = ib_bring_up(e->qp);
	check(!ret, "the extended QP: RESET -> INIT -> RTR with the IB masks (%s)",
	      strerror(ret));
}

static void xend_close(struct xend *e)
{
	check(!ibv_destroy_qp(e->qp) && !ibv_dereg_mr(e->mr) &&
	      !ibv_destroy_cq(ibv_cq_ex_to_cq(e->scq)) &&
	      !ibv_destroy_cq(ibv_cq_ex_to_cq(e->rcq)) &&
	      !ibv_destroy_comp_channel(e->chan) && !ibv_dealloc_pd(e->pd),
	      "QP, MR, extended CQs, channel and PD freed");
	free(e->buf);
}

/* ibv_wr_*(): one signalled Send of @len bytes at @off; its completion. */
static bool xsend(struct xend *e, uint64_t wr_id, size_t off, uint32_t len)
{
	struct xwc w;
	int ret;

	ibv_wr_start(e->qpx);
	e->qpx->wr_id = wr_id;
	e->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(e->qpx);
	ibv_wr_set_sge(e->qpx, e->mr->lkey, (uintptr_t)e->buf + off, len);
	ret = ibv_wr_complete(e->qpx);
	if (ret)
		note("ibv_wr_complete: %s", strerror(ret));
	return !ret && xone(e->scq, wr_id, IBV_WC_SEND, &w);
}

/* Server: bind type 2 window @mw over the X range with the next key. */
static bool xbind(struct xend *e, struct ibv_mw *mw, uint32_t *rkey)
{
	struct ibv_mw_bind_info bi = {
		.mr = e->mr, .addr = (uintptr_t)e->buf + X_OFF,
		.length = X_LEN,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	uint32_t key = ibv_inc_rkey(mw->rkey);
	struct xwc w;

	ibv_wr_start(e->qpx);
	e->qpx->wr_id = 900;
	e->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(e->qpx, mw, key, &bi);
	if (ibv_wr_complete(e->qpx) || !xone(e->scq, 900, IBV_WC_BIND_MW, &w))
		return false;
	mw->rkey = key;		/* the consumer keeps a type 2 window's key */
	*rkey = key;
	return true;
}

/* Server: invalidate the window locally. */
static bool xlocal_inv(struct xend *e, struct ibv_mw *mw)
{
	struct xwc w;

	ibv_wr_start(e->qpx);
	e->qpx->wr_id = 901;
	e->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(e->qpx, mw->rkey);
	return !ibv_wr_complete(e->qpx) &&
	       xone(e->scq, 901, IBV_WC_LOCAL_INV, &w);
}

/* Connection 2: every request answered with a reply, until 'Q'. */
static void serve_ex(struct rdma_event_channel *ch, struct rdma_cm_id *id)
{
	struct rdma_conn_param cp = kc_param(4, 4, NULL, 0);
	struct kc_info info;
	uint32_t nrecv = 0;
	struct ibv_mw *mw;
	struct xend e;
	struct xwc w;
	int i;

	xend_open(&e, id);
	mw = ibv_alloc_mw(e.pd, IBV_MW_TYPE_2);
	if (!mw)
		die("a type 2 window");
	kt_fill(e.buf + R_OFF, XFER, SEED_R, 0);
	for (i = 0; i < NRECV; i++)
		xpost_recv(&e, i);
	info = (struct kc_info){ .addr = (uintptr_t)e.buf, .rkey = e.mr->rkey };
	cp.private_data = &info;
	cp.private_data_len = sizeof(info);
	cp.qp_num = e.qp->qp_num;
	kc_accept_or_die(ch, id, &cp);

	while (xrecv(&e, &w)) {
		const struct msg *m = (void *)(e.buf + RECV_OFF + w.wr_id * SLOT);
		struct reply *r = (void *)(e.buf + SEND_OFF);
		uint32_t len = sizeof(*r);

		memset(r, 0, sizeof(*r));
		r->op = m->op;
		r->req_len = w.byte_len;
		r->wc_flags = w.wc_flags;
		r->inv_rkey = w.inv_rkey;
		r->nrecv = ++nrecv;
		r->opcode = w.opcode;
		switch (m->op) {
		case 'E':
			if (w.byte_len >= sizeof(*m)) {
				memcpy(r->data, m->data, w.byte_len - sizeof(*m));
				len += w.byte_len - sizeof(*m);
				r->ok = w.qp_num == e.qp->qp_num;
			}
			break;
		case 'X':
			r->ok = m->len <= X_LEN &&
				!kt_differs(e.buf + X_OFF, m->len, m->seed, 0);
			break;
		case 'B':
			r->ok = xbind(&e, mw, &r->rkey);
			break;
		case 'L':
			r->ok = xlocal_inv(&e, mw);
			break;
		case 'Q':
			r->ok = 1;
			break;
		}
		xpost_recv(&e, w.wr_id);
		if (!xsend(&e, 1000 + nrecv, SEND_OFF, len) || m->op == 'Q')
			break;
	}
	check(nrecv > 1, "server: answered %u requests on the extended QP", nrecv);
	check(!kc_wait(ch, id, RDMA_CM_EVENT_DISCONNECTED, 20000),
	      "server: the client disconnected");
	check(!ibv_dealloc_mw(mw), "server: the window deallocated");
	xend_close(&e);
	rdma_destroy_id(id);
}

/* Client: the reply to the last request, copied out of its slot. */
static bool xreply(struct xend *e, struct reply *r, size_t size)
{
	struct xwc w;

	memset(r, 0, size);
	if (!xrecv(e, &w))
		return false;
	if (w.byte_len > size || w.byte_len < sizeof(*r) ||
	    w.qp_num != e->qp->qp_num || w.wc_flags) {
		note("reply of %u bytes, qp_num %u, wc_flags %#x", w.byte_len,
		     w.qp_num, w.wc_flags);
		return false;
	}
	memcpy(r, e->buf + RECV_OFF + w.wr_id * SLOT, w.byte_len);
	xpost_recv(e, w.wr_id);
	return true;
}

/* Client: request @op (no payload) with one Send; its reply. */
static bool xrequest(struct xend *e, uint32_t op, uint32_t seed, uint32_t len,
		     struct reply *r)
{
	struct msg *m = (void *)(e->buf + SEND_OFF);

	*m = (struct msg){ .op = op, .seed = seed, .len = len };
	return xsend(e, op, SEND_OFF, sizeof(*m)) &&
	       xreply(e, r, sizeof(*r)) && r->op == op;
}

/* Client: a batch that ibv_wr_complete() must refuse with @want. */
static int xbad_batch(struct xend *e, int kind)
{
	struct ibv_qp_ex *x = e->qpx;
	uint64_t a = (uintptr_t)e->buf + SEND_OFF;
	struct ibv_sge sge[X_SGE + 1];
	int i;

	for (i = 0; i <= X_SGE; i++)
		sge[i] = (struct ibv_sge){ a + i * 16, 16, e->mr->lkey };
	ibv_wr_start(x);
	x->wr_id = 66;
	x->wr_flags = IBV_SEND_SIGNALED;
	switch (kind) {
	case 0:	/* one more SGE than the QP takes */
		ibv_wr_send(x);
		ibv_wr_set_sge_list(x, X_SGE + 1, sge);
		break;
	case 1:	/* one more inline byte than the QP takes */
		ibv_wr_send(x);
		ibv_wr_set_inline_data(x, e->buf + SEND_OFF, X_INLINE + 1);
		break;
	case 2:	/* an RDMA Read into two SGEs (max_sge_rd is 1) */
		ibv_wr_rdma_read(x, e->mr->rkey, a);
		ibv_wr_set_sge_list(x, 2, sge);
		break;
	case 3:	/* a setter with no work request to set */
		ibv_wr_set_sge(x, e->mr->lkey, a, 16);
		break;
	case 4:	/* more Sends than the send queue holds */
		for (i = 0; i <= X_SEND_WR; i++) {
			ibv_wr_send(x);
			ibv_wr_set_sge(x, e->mr->lkey, a, 16);
		}
		break;
	case 5:	/* inline data on an RDMA Read */
		ibv_wr_rdma_read(x, e->mr->rkey, a);
		ibv_wr_set_inline_data(x, e->buf + SEND_OFF, 8);
		break;
	case 6:	/* an atomic's local buffer is 8 bytes */
		ibv_wr_atomic_fetch_add(x, e->mr->rkey, a, 1);
		ibv_wr_set_sge(x, e->mr->lkey, a, 16);
		break;
	}
	return ibv_wr_complete(x);
}

static void client_ex(struct rdma_event_channel *ch, const char *addr,
		      const char *port)
{
	static const char *const bad_name[] = {
		"one SGE more than max_send_sge: EINVAL",
		"one inline byte more than max_inline_data: EINVAL",
		"an RDMA Read into 2 SGEs (max_sge_rd 1): EINVAL",
		"a data setter before any builder: EINVAL",
		"one Send more than the send queue holds: ENOMEM",
		"inline data on an RDMA Read: EINVAL",
		"ibv_wr_atomic_fetch_add into 16 local bytes (not 8): EINVAL",
	};
	static const int bad_errno[] = {
		EINVAL, EINVAL, EINVAL, EINVAL, ENOMEM, EINVAL, EINVAL,
	};
	struct rdma_conn_param cp = kc_param(4, 4, NULL, 0);
	uint8_t rbuf[SLOT];
	struct reply *r = (void *)rbuf;
	struct ibv_qp_ex *x;
	struct rdma_cm_id *id;
	struct kc_info peer;
	struct xwc w[5];
	struct xend e;
	uint32_t win, nrecv;
	uint64_t wa;
	bool ok;
	int i, ret;

	id = kc_resolve_or_die(ch, addr, port);
	xend_open(&e, id);
	x = e.qpx;
	for (i = 0; i < NRECV; i++)
		xpost_recv(&e, i);
	cp.qp_num = e.qp->qp_num;
	kc_connect_or_die(ch, id, &cp, &peer, sizeof(peer));
	check(kp_qp_state(e.qp) == IBV_QPS_RTS,
	      "client: the extended QP connected by its number is RTS");
	wa = (uintptr_t)e.buf;

	/* A Send gathered from three SGEs, echoed. */
	{
		struct msg *m = (void *)(e.buf + SEND_OFF);
		struct ibv_sge sg[3] = {
			{ wa + SEND_OFF, sizeof(*m), e.mr->lkey },
			{ wa + SEND_OFF + 1024, 700, e.mr->lkey },
			{ wa + SEND_OFF + 2048, 300, e.mr->lkey },
		};

		*m = (struct msg){ .op = 'E' };
		kt_fill(e.buf + SEND_OFF + 1024, 700, 11, 0);
		kt_fill(e.buf + SEND_OFF + 2048, 300, 11, 700);
		ibv_wr_start(x);
		x->wr_id = 1;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x);
		ibv_wr_set_sge_list(x, 3, sg);
		ret = ibv_wr_complete(x);
		ok = !ret && xone(e.scq, 1, IBV_WC_SEND, &w[0]);
		check(ok && w[0].qp_num == e.qp->qp_num && !w[0].wc_flags &&
		      !w[0].vendor_err,
		      "ibv_wr_send + ibv_wr_set_sge_list(3): IBV_WC_SEND, wr_id, qp_num read back (%s)",
		      strerror(ret));
		ok = ok && xreply(&e, r, sizeof(rbuf));
		check(ok && r->ok && r->req_len == sizeof(*m) + 1000 &&
		      r->opcode == IBV_WC_RECV && !r->wc_flags &&
		      !kt_differs(r->data, 1000, 11, 0),
		      "the server received the 3 SGEs as one %zu-byte message and echoed it intact",
		      sizeof(*m) + 1000);
	}

	/* Inline data from a list of buffers, echoed. */
	{
		struct msg m = { .op = 'E' };
		uint8_t pay[40];
		struct ibv_data_buf bl[2] = {
			{ &m, sizeof(m) }, { pay, sizeof(pay) },
		};

		kt_fill(pay, sizeof(pay), 12, 0);
		ibv_wr_start(x);
		x->wr_id = 2;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x);
		ibv_wr_set_inline_data_list(x, 2, bl);
		/* Inline: the buffers may change once the setter returned. */
		memset(pay, 0, sizeof(pay));
		ret = ibv_wr_complete(x);
		ok = !ret && xone(e.scq, 2, IBV_WC_SEND, &w[0]) &&
		     xreply(&e, r, sizeof(rbuf));
		check(ok && r->ok && r->req_len == sizeof(m) + 40 &&
		      !kt_differs(r->data, 40, 12, 0),
		      "ibv_wr_set_inline_data_list: a Send of 2 buffers copied at the setter arrives intact (%s)",
		      strerror(ret));
	}

	/* RDMA Write (SGE, then inline), read back with RDMA Read. */
	kt_fill(e.buf + SEND_OFF, XFER, 13, 0);
	ibv_wr_start(x);
	x->wr_id = 3;
	x->wr_flags = 0;
	ibv_wr_rdma_write(x, peer.rkey, peer.addr + W_OFF);
	ibv_wr_set_sge(x, e.mr->lkey, wa + SEND_OFF, XFER);
	x->wr_id = 4;
	ibv_wr_rdma_write(x, peer.rkey, peer.addr + W_OFF + XFER);
	ibv_wr_set_inline_data(x, e.buf + SEND_OFF + XFER - 64, 64);
	x->wr_id = 5;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(x, peer.rkey, peer.addr + W_OFF);
	ibv_wr_set_sge(x, e.mr->lkey, wa, XFER + 64);
	ret = ibv_wr_complete(x);
	ok = !ret && xone(e.scq, 5, IBV_WC_RDMA_READ, &w[0]);
	check(ok && w[0].byte_len == XFER + 64 &&
	      !kt_differs(e.buf, XFER, 13, 0) &&
	      !kt_differs(e.buf + XFER, 64, 13, XFER - 64),
	      "ibv_wr_rdma_write (SGE, then inline) and ibv_wr_rdma_read in one batch: the Read sees both Writes, byte_len %u",
	      w[0].byte_len);
	check(kp_cq_quiet(ibv_cq_ex_to_cq(e.scq), 100),
	      "the unsignalled Writes completed nothing");
	ibv_wr_start(x);
	x->wr_id = 6;
	ibv_wr_rdma_read(x, peer.rkey, peer.addr + R_OFF);
	ibv_wr_set_sge(x, e.mr->lkey, wa, XFER);
	ret = ibv_wr_complete(x);
	check(!ret && xone(e.scq, 6, IBV_WC_RDMA_READ, &w[0]) &&
	      !kt_differs(e.buf, XFER, SEED_R, 0),
	      "ibv_wr_rdma_read of the server's %d KiB pattern is intact",
	      XFER / 1024);

	/*
	 * Three signalled Writes and a Send, read in one polling session
	 * once the Send's echo is back (so all four have completed).
	 */
	{
		struct msg *m = (void *)(e.buf + SEND_OFF + 1024);

		*m = (struct msg){ .op = 'E' };
		ibv_wr_start(x);
		x->wr_flags = IBV_SEND_SIGNALED;
		for (i = 0; i < 3; i++) {
			x->wr_id = 10 + i;
			ibv_wr_rdma_write(x, peer.rkey,
					  peer.addr + W_OFF + i * 64);
			ibv_wr_set_sge(x, e.mr->lkey, wa + SEND_OFF, 64);
		}
		x->wr_id = 13;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, e.mr->lkey, wa + SEND_OFF + 1024, sizeof(*m));
		ret = ibv_wr_complete(x);
		i = !ret && xreply(&e, r, sizeof(rbuf)) ? xpoll(e.scq, w, 5) : 0;
		check(i == 4 && w[0].wr_id == 10 && w[1].wr_id == 11 &&
		      w[2].wr_id == 12 && w[3].wr_id == 13 &&
		      w[2].opcode == IBV_WC_RDMA_WRITE &&
		      w[3].opcode == IBV_WC_SEND &&
		      w[3].status == IBV_WC_SUCCESS,
		      "ibv_start_poll/ibv_next_poll: 3 Writes' and a Send's completions in posting order, then ENOENT (%d)",
		      i);
	}

	/* An aborted batch posts nothing; the next one goes out. */
	{
		struct msg *m = (void *)(e.buf + SEND_OFF);

		*m = (struct msg){ .op = 'E' };
		ibv_wr_start(x);
		x->wr_id = 20;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, e.mr->lkey, wa + SEND_OFF, sizeof(*m) + 100);
		ibv_wr_abort(x);
		ok = kp_cq_quiet(ibv_cq_ex_to_cq(e.scq), 100) &&
		     xsend(&e, 21, SEND_OFF, sizeof(*m) + 7) &&
		     xreply(&e, r, sizeof(rbuf));
		check(ok && r->req_len == sizeof(*m) + 7,
		      "ibv_wr_abort: the Send is not posted, the next one is what the server gets");
		nrecv = r->nrecv;
	}

	/* Batches ibv_wr_complete() refuses: nothing of them goes out. */
	for (i = 0; i < 7; i++) {
		ret = xbad_batch(&e, i);
		check(ret == bad_errno[i], "ibv_wr_complete refuses %s (%s)",
		      bad_name[i], strerror(ret));
	}
	ok = kp_cq_quiet(ibv_cq_ex_to_cq(e.scq), 100) &&
	     xrequest(&e, 'E', 0, 0, r);
	check(ok && r->nrecv == nrecv + 1,
	      "nothing of the refused batches was posted: the server's next request is the echo (%u after %u)",
	      r->nrecv, nrecv);

	/* A Write, then a Send checking it, in one batch, only the Send signalled. */
	{
		struct msg *m = (void *)(e.buf + SEND_OFF);

		*m = (struct msg){ .op = 'X', .seed = 14, .len = 4096 };
		kt_fill(e.buf + SEND_OFF + 1024, 4096, 14, 0);
		ibv_wr_start(x);
		x->wr_id = 30;
		x->wr_flags = 0;
		ibv_wr_rdma_write(x, peer.rkey, peer.addr + X_OFF);
		ibv_wr_set_sge(x, e.mr->lkey, wa + SEND_OFF + 1024, 4096);
		x->wr_id = 31;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, e.mr->lkey, wa + SEND_OFF, sizeof(*m));
		ret = ibv_wr_complete(x);
		ok = !ret && xone(e.scq, 31, IBV_WC_SEND, &w[0]) &&
		     kp_cq_quiet(ibv_cq_ex_to_cq(e.scq), 50) &&
		     xreply(&e, r, sizeof(rbuf));
		check(ok && r->ok,
		      "a Write and a Send in one batch: one completion (the Send's), and the Write landed before the Send");
	}

	/* A window: bound, written through, invalidated by Send with Invalidate. */
	ok = xrequest(&e, 'B', 0, 0, r) && r->ok;
	check(ok, "server: ibv_wr_bind_mw of a type 2 window completes as IBV_WC_BIND_MW (rkey %#x)",
	      r->rkey);
	win = r->rkey;
	{
		struct msg *m = (void *)(e.buf + SEND_OFF);

		*m = (struct msg){ .op = 'X', .seed = 15, .len = 8192 };
		kt_fill(e.buf + SEND_OFF + 1024, 8192, 15, 0);
		ibv_wr_start(x);
		x->wr_id = 40;
		x->wr_flags = 0;
		ibv_wr_rdma_write(x, win, peer.addr + X_OFF);
		ibv_wr_set_sge(x, e.mr->lkey, wa + SEND_OFF + 1024, 8192);
		x->wr_id = 41;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_inv(x, win);
		ibv_wr_set_sge(x, e.mr->lkey, wa + SEND_OFF, sizeof(*m));
		ret = ibv_wr_complete(x);
		ok = ok && !ret && xone(e.scq, 41, IBV_WC_SEND, &w[0]) &&
		     xreply(&e, r, sizeof(rbuf));
		check(ok && r->ok, "an RDMA Write through the window lands in its range (%s)",
		      strerror(ret));
		check(ok && (r->wc_flags & IBV_WC_WITH_INV) && r->inv_rkey == win,
		      "ibv_wr_send_inv: the server's receive has IBV_WC_WITH_INV and ibv_wc_read_invalidated_rkey() the window's rkey (%#x, %#x)",
		      r->wc_flags, r->inv_rkey);
	}
	ok = xrequest(&e, 'B', 0, 0, r) && r->ok;
	check(ok && r->rkey != win && (r->rkey >> 8) == (win >> 8),
	      "the invalidated window binds again, with the next key (%#x)",
	      r->rkey);
	ok = xrequest(&e, 'L', 0, 0, r) && r->ok;
	check(ok, "server: ibv_wr_local_inv of the window completes as IBV_WC_LOCAL_INV");
	ok = xrequest(&e, 'B', 0, 0, r) && r->ok;
	check(ok, "the locally invalidated window binds again (%#x)", r->rkey);

	/* A fenced Send waits for the Read before it. */
	{
		struct msg *m = (void *)(e.buf + SEND_OFF);

		*m = (struct msg){ .op = 'E' };
		ibv_wr_start(x);
		x->wr_id = 50;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_read(x, peer.rkey, peer.addr + R_OFF);
		ibv_wr_set_sge(x, e.mr->lkey, wa, XFER);
		x->wr_id = 51;
		x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, e.mr->lkey, wa + SEND_OFF, sizeof(*m));
		ret = ibv_wr_complete(x);
		i = 0;
		while (!ret && i < 2 && xpoll(e.scq, &w[i], 1) == 1)
			i++;
		check(i == 2 && w[0].wr_id == 50 && w[1].wr_id == 51 &&
		      w[0].status == IBV_WC_SUCCESS &&
		      w[1].status == IBV_WC_SUCCESS &&
		      !kt_differs(e.buf, XFER, SEED_R, 0) &&
		      xreply(&e, r, sizeof(rbuf)),
		      "IBV_SEND_FENCE: the Read, then the fenced Send, complete in order");
	}

	/* The last reply, polled with ibv_poll_cq() on the extended CQ. */
	{
		struct msg *m = (void *)(e.buf + SEND_OFF);
		struct ibv_wc wc;

		*m = (struct msg){ .op = 'Q' };
		ok = xsend(&e, 60, SEND_OFF, sizeof(*m)) &&
		     kp_poll(ibv_cq_ex_to_cq(e.rcq), &wc, 1, 20000) == 1;
		check(ok && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_RECV && wc.byte_len == sizeof(*r) &&
		      wc.qp_num == e.qp->qp_num,
		      "ibv_poll_cq() on an extended CQ: the server's last reply");
	}

	check(!kc_disconnect(ch, id, 20000) && kp_qp_state(e.qp) == IBV_QPS_ERR,
	      "client: the extended QP disconnected, in ERR");
	xend_close(&e);
	rdma_destroy_id(id);
}

/*
 * What the extended API refuses, and a QP's work requests flushed through
 * it, on an unconnected QP. The QP and CQs of the connected test come
 * later (xend_open()); these are of their own.
 */
static void local_ex(struct ibv_context *ctx, struct ibv_pd *pd)
{
	static const struct {
		uint64_t ops;
		const char *name;
	} no_ops[] = {
		{ IBV_QP_EX_WITH_TSO, "TSO" },
		{ IBV_QP_EX_WITH_ATOMIC_WRITE, "ATOMIC_WRITE" },
	};
	static const struct {
		uint64_t wc_flags;
		uint32_t comp_mask, flags;
		int cqe, err;
		const char *name;
	} cq_bad[] = {
		{ IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, 0, 0, 8, EOPNOTSUPP,
		  "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP (no clock): EOPNOTSUPP" },
		{ IBV_WC_EX_WITH_CVLAN, 0, 0, 8, EOPNOTSUPP,
		  "IBV_WC_EX_WITH_CVLAN (no raw packet QPs): EOPNOTSUPP" },
		{ IBV_WC_EX_WITH_FLOW_TAG, 0, 0, 8, EOPNOTSUPP,
		  "IBV_WC_EX_WITH_FLOW_TAG: EOPNOTSUPP" },
		{ 0, IBV_CQ_INIT_ATTR_MASK_FLAGS,
		  IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN, 8, EOPNOTSUPP,
		  "IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: EOPNOTSUPP" },
		{ 0, IBV_CQ_INIT_ATTR_MASK_PD, 0, 8, EOPNOTSUPP,
		  "IBV_CQ_INIT_ATTR_MASK_PD (no parent domains): EOPNOTSUPP" },
		{ 0, 0, 0, 0, EINVAL, "0 entries: EINVAL" },
		/* -1: the device's max_cqe + 1 */
		{ 0, 0, 0, -1, EINVAL, "max_cqe + 1 entries: EINVAL" },
	};
	struct ibv_device_attr da;
	struct ibv_cq_init_attr_ex ca = { .cqe = 8,
					  .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC, .pd = pd,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = X_OPS,
	};
	struct ibv_poll_cq_attr pa = {};
	struct ibv_qp_ex *qpx;
	struct ibv_cq_ex *cq;
	struct ibv_qp *qp;
	struct xwc w[3];
	unsigned int i;
	int ret;

	if (ibv_query_device(ctx, &da))
		die("ibv_query_device");
	for (i = 0; i < sizeof(cq_bad) / sizeof(cq_bad[0]); i++) {
		struct ibv_cq_init_attr_ex b = {
			.cqe = cq_bad[i].cqe < 0 ? da.max_cqe + 1 : cq_bad[i].cqe,
			.wc_flags = cq_bad[i].wc_flags,
			.comp_mask = cq_bad[i].comp_mask,
			.flags = cq_bad[i].flags, .parent_domain = pd,
		};

		errno = 0;
		cq = ibv_create_cq_ex(ctx, &b);
		check(!cq && errno == cq_bad[i].err,
		      "ibv_create_cq_ex refuses %s (%s)", cq_bad[i].name,
		      strerror(errno));
		if (cq)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	}
	cq = ibv_create_cq_ex(ctx, &ca);
	if (!cq)
		die("ibv_create_cq_ex");
	ret = ibv_start_poll(cq, &pa);
	check(ret == ENOENT, "ibv_start_poll on an empty CQ: ENOENT (%s)",
	      strerror(ret));
	pa.comp_mask = 1;
	ret = ibv_start_poll(cq, &pa);
	check(ret == EINVAL,
	      "ibv_start_poll with an unknown comp_mask bit: EINVAL (%s)",
	      strerror(ret));
	qa.send_cq = ibv_cq_ex_to_cq(cq);
	qa.recv_cq = ibv_cq_ex_to_cq(cq);

	for (i = 0; i < sizeof(no_ops) / sizeof(no_ops[0]); i++) {
		qa.send_ops_flags = IBV_QP_EX_WITH_SEND | no_ops[i].ops;
		errno = 0;
		qp = ibv_create_qp_ex(ctx, &qa);
		check(!qp && errno == EOPNOTSUPP,
		      "ibv_create_qp_ex with IBV_QP_EX_WITH_%s: EOPNOTSUPP (%s)",
		      no_ops[i].name, strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
	}
	qa.send_ops_flags = X_OPS;
	qa.qp_type = IBV_QPT_UD;
	errno = 0;
	qp = ibv_create_qp_ex(ctx, &qa);
	check(!qp && errno == EOPNOTSUPP,
	      "ibv_create_qp_ex of a UD QP: EOPNOTSUPP (%s)", strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	qa.qp_type = IBV_QPT_RC;
	qa.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qa.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	qp = ibv_create_qp_ex(ctx, &qa);
	check(!qp && errno == EOPNOTSUPP,
	      "ibv_create_qp_ex with create flags: EOPNOTSUPP (%s)",
	      strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	qa.comp_mask &= ~IBV_QP_INIT_ATTR_CREATE_FLAGS;

	/* Without IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: no ibv_qp_ex. */
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qp = ibv_create_qp_ex(ctx, &qa);
	check(qp && !ibv_qp_to_qp_ex(qp),
	      "ibv_create_qp_ex without IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: a QP, and ibv_qp_to_qp_ex() is NULL");
	if (qp)
		ibv_destroy_qp(qp);

	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qp = ibv_create_qp_ex(ctx, &qa);
	qpx = qp ? ibv_qp_to_qp_ex(qp) : NULL;
	check(qpx && &qpx->qp_base == qp && qp->qp_type == IBV_QPT_RC &&
	      qp->state == IBV_QPS_RESET && qp->send_cq == qa.send_cq,
	      "ibv_create_qp_ex with SEND, SEND_WITH_INV, RDMA_WRITE, RDMA_READ, BIND_MW, LOCAL_INV: an RC QP in RESET with its ibv_qp_ex (%s)",
	      qp ? "made" : strerror(errno));
	if (!qpx)
		die("an extended QP");

	/* Posting in RESET or INIT is EINVAL, as for ibv_post_send(). */
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 0, 0, 0);
	ret = ibv_wr_complete(qpx);
	check(ret == EINVAL, "ibv_wr_complete in RESET: EINVAL (%s)",
	      strerror(ret));
	ret = kp_modify(qp, IBV_QPS_ERR);
	/* In ERR, what is posted completes as flushed, in order. */
	ibv_wr_start(qpx);
	qpx->wr_id = 2;
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, "x", 0);
	qpx->wr_id = 3;
	qpx->wr_flags = 0;
	ibv_wr_local_inv(qpx, 0x100);
	qpx->wr_id = 4;
	ibv_wr_rdma_read(qpx, 0x100, 0);
	ibv_wr_set_sge(qpx, 0, 0, 0);
	ret = ret ?: ibv_wr_complete(qpx);
	usleep(100000);
	i = ret ? 0 : xpoll(cq, w, 3);
	check(i == 3 && w[0].wr_id == 2 && w[1].wr_id == 3 &&
	      w[2].wr_id == 4 && w[0].status == IBV_WC_WR_FLUSH_ERR &&
	      w[1].status == IBV_WC_WR_FLUSH_ERR &&
	      w[2].status == IBV_WC_WR_FLUSH_ERR &&
	      w[0].opcode == IBV_WC_SEND && w[1].opcode == IBV_WC_LOCAL_INV &&
	      w[2].opcode == IBV_WC_RDMA_READ && w[0].qp_num == qp->qp_num &&
	      !w[0].src_qp && !w[0].slid && !w[0].sl && !w[0].dlid_path_bits,
	      "in ERR, a batch (an unsignalled WR too) completes flushed, in order, each read back with its opcode (%d)",
	      i);
	check(!ibv_destroy_qp(qp) && !ibv_destroy_cq(ibv_cq_ex_to_cq(cq)),
	      "the extended QP and CQ destroyed");
}

static int server(const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *lid;

	/* The client's next connection may come before its last one ends. */
	kc_defer_requests = true;
	lid = kc_listen_or_die(ch, addr, port, 2);
	serve_plain(ch, kc_request(ch, NULL, 0));
	serve_ex(ch, kc_request(ch, NULL, 0));
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	return kt_end();
}

static int client(const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	client_plain(ch, addr, port);
	client_ex(ch, addr, port);
	rdma_destroy_event_channel(ch);
	return kt_end();
}

int main(int argc, char **argv)
{
	kt_start();
	if (argc == 3 && !strcmp(argv[1], "local"))
		return local(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: %s local DEVICE | server|client ADDR PORT\n",
		argv[0]);
	return 2;
}
