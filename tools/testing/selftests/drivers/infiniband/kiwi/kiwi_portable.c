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
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* PD, CQ, buffer and QP on @id's device; the QP brought up as IB does. */
static void end_open(struct end *e, struct rdma_cm_id *id)
{
	struct ibv_qp_attr a;
	int ret;

	memset(e, 0, sizeof(*e));
	e->id = id;
	e->buf = aligned_alloc(4096, BUF_SIZE);
	if (!e->buf)
		die("a buffer");
	memset(e->buf, 0, BUF_SIZE);
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
	a = init_attr();
	ret = ibv_modify_qp(e->qp, &a, IB_INIT_MASK);
	check(!ret, "RESET -> INIT with the IB mask (%s)", strerror(ret));
	a = rtr_attr(4);
	ret = ibv_modify_qp(e->qp, &a, IB_RTR_MASK);
	check(!ret, "INIT -> RTR with the IB mask (%s)", strerror(ret));
}

static void end_close(struct end *e)
{
	check(!ibv_destroy_qp(e->qp) && !ibv_dereg_mr(e->mr) &&
	      !ibv_destroy_cq(e->scq) && !ibv_destroy_cq(e->rcq) &&
	      !ibv_dealloc_pd(e->pd), "QP, MR, CQs and PD freed");
	free(e->buf);
}

static int post_recv(struct end *e, int i)
{
	return kp_post_recv(e->qp, i, e->buf + RECV_OFF + i * SLOT, SLOT,
			    e->mr->lkey);
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

static int server(const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = kc_param(4, 4, NULL, 0);
	struct rdma_cm_id *lid, *id;
	struct kc_info info;
	struct ibv_wc wc;
	struct end e;
	int i, n = 0;

	lid = kc_listen_or_die(ch, addr, port, 1);
	id = kc_request(ch, NULL, 0);
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
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	return kt_end();
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

static int client(const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
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
