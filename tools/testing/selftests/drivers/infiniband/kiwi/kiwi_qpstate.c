// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_qpstate: the QP state machine and work request rules as a verbs
 * consumer sees them through libkiwi. Prints TAP.
 *
 *   kiwi_qpstate local DEVICE
 *   kiwi_qpstate server ADDR PORT [NCONN]
 *   kiwi_qpstate client ADDR PORT
 *   kiwi_qpstate hold ADDR PORT
 *   kiwi_qpstate rdserver ADDR PORT
 *   kiwi_qpstate rdclient ADDR PORT
 *
 * local: every (from, to) pair of ibv_modify_qp for the states an
 * unconnected QP can be in (RESET, INIT, RTR, ERR) to all seven
 * IBV_QPS_* values, on a fresh QP each, then all-or-nothing modifies.
 *
 * server: serves NCONN (default 4) connections one after the other. Each Send it
 * receives is counted; a one-byte Send "?" is answered with a Send of a
 * struct report (the count, the last message, whether the Write target
 * holds the pattern, its QP's state, ORD and IRD). It exits 0 when every
 * connection ended with DISCONNECTED and its QP in ERR.
 *
 * client: connection 1 checks query_qp after connect, the RTS row of the
 * state machine and the work request rules, and closes gracefully with
 * receives posted. Connections 2 and 3 need $KIWI_BLOCK and $KIWI_UNBLOCK,
 * commands that stop and restart the server's packets: with them an RDMA
 * Read stays outstanding, which holds connection 2 in SQD (graceful close
 * waits for it) to check the SQD row and an abort from SQD, and connection
 * 3 is aborted from RTS (RTS -> ERR); both must flush every outstanding WR
 * in order, signalled or not. Connection 4 checks the asynchronous event
 * a Terminate from the peer raises. With $KIWI_PORT2 too, where a second
 * server serves one connection, three more connections end in a Terminate
 * of ours: a Write from an lkey that names no MR (5), Modify RTS -> SQE
 * (6), and (7) an overflow of a one-entry send CQ, while a connection to
 * the second server, on CQs of its own, must keep working. The server
 * reports the first async event of its previous connection's QP.
 *
 * hold: connects, prints "# connected" and waits to be killed, holding a
 * PD, an MR, two CQs, a QP and a connection.
 *
 * rdserver/rdclient: RDMA Read resources (ORD 0, ORD lowered in RTS, many
 * QPs with a Read each); see rd_ord0(), rd_lower() and rd_many(). The
 * client needs $KIWI_BLOCK and $KIWI_UNBLOCK, the server $KIWI_BLOCKED.
 *
 * The allowed transitions are those of the RDMAC verbs (V-ST-1, V-ST-2) in
 * the Linux mapping (RESET/INIT/RTR = Idle, SQD = Closing, SQE = Terminate),
 * with the deviations Linux consumers need, named where they are checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

#define BUF_SIZE	(1024 * 1024)
#define READ_OFF	0		/* server: pattern, read by the client */
#define READ_LEN	(256 * 1024)
#define WRITE_OFF	(512 * 1024)	/* server: the fenced Write's target */
#define NRECV		16
#define RECV_SIZE	256
#define MAX_INLINE	64
#define CLIENT_IRD	5
#define CLIENT_ORD	6
#define SERVER_IRD	3
#define SERVER_ORD	4
#define NCONN		4
#define CLIENT_ACCESS	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

struct info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

struct report {
	uint32_t nmsg;		/* Sends before this "?" */
	uint32_t lastlen;
	uint32_t w_ok;		/* the Write target holds the pattern */
	uint32_t state, ord, ird;
	int32_t prev_async;	/* first async event of the last QP, or -1 */
	uint8_t last[128];
};

static const char *const st_name[] = {
	"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
};

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 9));
}

static int qp_query(struct ibv_qp *qp, struct ibv_qp_attr *a)
{
	struct ibv_qp_init_attr init;

	memset(a, 0, sizeof(*a));
	return ibv_query_qp(qp, a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
			    IBV_QP_CAP | IBV_QP_MAX_QP_RD_ATOMIC |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PATH_MTU, &init);
}

/* Wait up to about 10 s for @want completions on @cq. */
static int drain(struct ibv_cq *cq, struct ibv_wc *wc, int want)
{
	return kp_poll(cq, wc, want, 10000);
}

/* Whether @cq stays empty for a while. */
static bool cq_quiet(struct ibv_cq *cq)
{
	return kp_cq_quiet(cq, 200);
}

/*
 * The transitions kiwi allows, [from][to]. Idle is RESET, INIT and RTR
 * (V-ST-I3: RTS only through the connection manager); ERR -> SQD is the
 * close librdmacm's rdma_disconnect asks for after the peer closed first,
 * and ERR -> ERR the one ib_drain_qp() makes: both succeed and change
 * nothing (a deviation from V-ST-2, which refuses Error -> Error).
 * SQD -> SQD is a repeated close request; SQD -> ERR aborts a close
 * (ib_drain_qp again; V-ST-C1 would refuse it). RTS -> SQE is the
 * consumer's Terminate (V-ST-R6): it ends the connection, so it is
 * checked on a connection of its own.
 */
static const char allowed[7][8] = {
	[IBV_QPS_RESET] = "yy....y",
	[IBV_QPS_INIT]	= "yyy...y",
	[IBV_QPS_RTR]	= "y.y...y",
	[IBV_QPS_RTS]	= "...yyyy",
	[IBV_QPS_SQD]	= "....y.y",
	[IBV_QPS_ERR]	= "y...y.y",
};

/* The state a successful modify @from -> @to leaves. */
static int after(int from, int to)
{
	return from == IBV_QPS_ERR && to == IBV_QPS_SQD ? from : to;
}

/* One point: modify @qp (in @from) to @to; exact result and state. */
static void transition(struct ibv_qp *qp, int from, int to, const char *why)
{
	int ok = allowed[from][to] == 'y';
	int ret = kp_modify(qp, to);
	int now = kp_qp_state(qp);

	if (ok)
		check(ret == 0 && now == after(from, to),
		      "%s -> %s succeeds, query_qp reports %s (ret %d, state %d) %s",
		      st_name[from], st_name[to], st_name[after(from, to)],
		      ret, now, why);
	else
		check(ret == EINVAL && now == from,
		      "%s -> %s refused with EINVAL, query_qp still %s (ret %d, state %d) %s",
		      st_name[from], st_name[to], st_name[from], ret, now, why);
}

/* Bring a new QP (INIT: the iWARP verbs' Idle) to @st without a connection. */
static int reach(struct ibv_qp *qp, int st)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};

	if (st == IBV_QPS_RESET || st == IBV_QPS_ERR)
		return kp_modify(qp, st);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS))
		return -1;
	return st == IBV_QPS_RTR ? kp_modify(qp, IBV_QPS_RTR) : 0;
}

/* Create a QP with @cap; 0 or the errno, the QP destroyed again. */
static int try_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_qp_cap cap)
{
	const struct kp_caps caps = {
		.pd = pd, .scq = cq, .send_wr = cap.max_send_wr,
		.recv_wr = cap.max_recv_wr, .send_sge = cap.max_send_sge,
		.recv_sge = cap.max_recv_sge,
		.inline_data = cap.max_inline_data,
	};
	struct kp_peer p;

	if (!cq)	/* kp_open() would make one */
		return -1;
	errno = 0;
	if (kp_open(&p, NULL, &caps))
		return errno ?: -1;
	return kp_close(&p) ? -1 : 0;
}

/* Modify a QP in INIT with @mask/@a; 0 or the errno, and what query says. */
static int try_rd(struct ibv_qp *qp, int mask, struct ibv_qp_attr *a)
{
	int ret;

	a->qp_state = IBV_QPS_INIT;
	ret = ibv_modify_qp(qp, a, IBV_QP_STATE | mask);
	qp_query(qp, a);
	return ret;
}

/*
 * V-LIM-3: every advertised maximum is accepted, one over it is refused
 * with EINVAL, and a count limit (max_pd) is reached exactly.
 */
static void limits(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_cap cap = { .max_send_wr = 1, .max_recv_wr = 1,
				  .max_send_sge = 1, .max_recv_sge = 1 };
	struct ibv_device_attr da;
	struct ibv_qp_attr a;
	struct ibv_pd **pds;
	struct kp_caps caps;
	struct ibv_cq *big;
	struct kp_peer p;
	struct ibv_qp *qp;
	int ret, got;

	if (ibv_query_device(ctx, &da))
		die("ibv_query_device");
	big = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
	check(big && !ibv_destroy_cq(big), "V-LIM-3: a CQ of max_cqe (%d) entries",
	      da.max_cqe);
	errno = 0;
	big = ibv_create_cq(ctx, da.max_cqe + 1, NULL, NULL, 0);
	check(!big && errno == EINVAL, "V-LIM-3: max_cqe + 1 refused with EINVAL");
	{
		struct ibv_qp_cap c = cap;

		c.max_send_wr = da.max_qp_wr;
		c.max_recv_wr = da.max_qp_wr;
		check(!try_qp(pd, big = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0), c),
		      "V-LIM-3: a QP of max_qp_wr (%d) send and receive WRs", da.max_qp_wr);
		if (big)
			ibv_destroy_cq(big);
		c.max_send_wr = da.max_qp_wr + 1;
		ret = try_qp(pd, cq, c);
		c.max_send_wr = 1;
		c.max_recv_wr = da.max_qp_wr + 1;
		got = try_qp(pd, cq, c);
		check(ret == EINVAL && got == EINVAL,
		      "V-LIM-3: max_qp_wr + 1 send or receive WRs refused with EINVAL (%d, %d)",
		      ret, got);
		c = cap;
		c.max_send_sge = da.max_sge;
		c.max_recv_sge = da.max_sge;
		check(!try_qp(pd, cq, c), "V-LIM-3: a QP of max_sge (%d) send and receive SGEs",
		      da.max_sge);
		c.max_send_sge = da.max_sge + 1;
		ret = try_qp(pd, cq, c);
		c.max_send_sge = 1;
		c.max_recv_sge = da.max_sge + 1;
		got = try_qp(pd, cq, c);
		check(ret == EINVAL && got == EINVAL,
		      "V-QP-6: max_sge + 1 send or receive SGEs refused with EINVAL (%d, %d)",
		      ret, got);
	}

	/* ORD is the initiator's depth, IRD the responder's. */
	caps = (struct kp_caps){
		.pd = pd, .scq = cq, .send_wr = cap.max_send_wr,
		.recv_wr = cap.max_recv_wr, .send_sge = cap.max_send_sge,
		.recv_sge = cap.max_recv_sge,
	};
	if (kp_open(&p, NULL, &caps) || reach(p.qp, IBV_QPS_INIT))
		die("a QP in INIT");
	qp = p.qp;
	memset(&a, 0, sizeof(a));
	a.max_rd_atomic = da.max_qp_init_rd_atom;
	a.max_dest_rd_atomic = da.max_qp_rd_atom;
	ret = try_rd(qp, IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC, &a);
	check(!ret && a.max_rd_atomic == da.max_qp_init_rd_atom &&
	      a.max_dest_rd_atomic == da.max_qp_rd_atom,
	      "V-LIM-3: ORD max_qp_init_rd_atom (%d) and IRD max_qp_rd_atom (%d) taken (%d: %u, %u)",
	      da.max_qp_init_rd_atom, da.max_qp_rd_atom, ret, a.max_rd_atomic,
	      a.max_dest_rd_atomic);
	memset(&a, 0, sizeof(a));
	a.max_rd_atomic = da.max_qp_init_rd_atom + 1;
	ret = try_rd(qp, IBV_QP_MAX_QP_RD_ATOMIC, &a);
	memset(&a, 0, sizeof(a));
	a.max_dest_rd_atomic = da.max_qp_rd_atom + 1;
	got = try_rd(qp, IBV_QP_MAX_DEST_RD_ATOMIC, &a);
	check(ret == EINVAL && got == EINVAL &&
	      a.max_rd_atomic == da.max_qp_init_rd_atom &&
	      a.max_dest_rd_atomic == da.max_qp_rd_atom,
	      "V-QP-6: ORD or IRD one over the maximum refused with EINVAL, both unchanged (%d, %d)",
	      ret, got);
	if (kp_close(&p))
		die("ibv_destroy_qp");

	/* A count limit: PDs, one of which the test holds already. */
	pds = calloc(da.max_pd + 1, sizeof(*pds));
	if (!pds)
		die("calloc");
	errno = 0;
	for (got = 0; got <= da.max_pd; got++) {
		pds[got] = ibv_alloc_pd(ctx);
		if (!pds[got])
			break;
	}
	ret = errno;
	check(got == da.max_pd - 1 && ret == ENOMEM,
	      "V-LIM-3: max_pd (%d) PDs, one more refused with ENOMEM (%d more, errno %d)",
	      da.max_pd, got, ret);
	while (got > 0)
		if (ibv_dealloc_pd(pds[--got]))
			die("ibv_dealloc_pd");
	free(pds);
}

static int local(const char *dev)
{
	static const int froms[] = {
		IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_ERR,
	};
	struct kp_caps caps = {
		.send_wr = 4, .recv_wr = 4, .send_sge = 1, .recv_sge = 1,
	};
	struct ibv_context *ctx = open_dev(dev);
	struct ibv_qp_attr a;
	struct kp_peer p;
	int ret;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	if (!ctx)
		die("open the device");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!pd || !cq)
		die("alloc PD and CQ");
	caps.pd = pd;
	caps.scq = cq;

	for (unsigned int f = 0; f < sizeof(froms) / sizeof(froms[0]); f++) {
		for (int to = IBV_QPS_RESET; to <= IBV_QPS_ERR; to++) {
			if (kp_open(&p, NULL, &caps) ||
			    reach(p.qp, froms[f]) ||
			    kp_qp_state(p.qp) != froms[f])
				die("create a QP and bring it to the start state");
			transition(p.qp, froms[f], to,
				   to == IBV_QPS_RTS ? "(V-ST-I3: no LLP stream)" :
				   "(V-ST-1, V-ST-2)");
			if (kp_close(&p))
				die("ibv_destroy_qp");
		}
	}

	/* V-QP-8: a refused modify changes no attribute either. */
	if (kp_open(&p, NULL, &caps) || reach(p.qp, IBV_QPS_INIT))
		die("create a QP in INIT");
	qp = p.qp;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.qp_access_flags = 0;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS);
	qp_query(qp, &a);
	check(ret == EINVAL && a.qp_state == IBV_QPS_INIT &&
	      a.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
	      "V-QP-8: INIT -> SQD with new access flags refused, the flags are unchanged (%d, 0x%x)",
	      ret, a.qp_access_flags);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.max_rd_atomic = 255;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC) == EINVAL &&
	      kp_qp_state(qp) == IBV_QPS_INIT,
	      "V-QP-8: INIT -> RTR with ORD 255 (over max_qp_init_rd_atom) refused, still INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.cur_qp_state = IBV_QPS_RESET;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE) == EINVAL &&
	      kp_qp_state(qp) == IBV_QPS_INIT,
	      "V-QP-8: a wrong IBV_QP_CUR_STATE (RESET while INIT) is refused, still INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR + 1;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL &&
	      kp_qp_state(qp) == IBV_QPS_INIT,
	      "a state value beyond IBV_QPS_ERR is refused with EINVAL, still INIT");
	if (kp_close(&p))
		die("ibv_destroy_qp");
	limits(ctx, pd, cq);
	if (ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		die("free the PD, CQ and device");
	return kt_end();
}

/* ---- connected ---- */

static struct rdma_event_channel *ch;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static uint8_t *buf;

/*
 * Create the QP of @id on its own send and receive CQs, in INIT; its
 * objects hang on @id's context until free_qp().
 */
static int send_cq_size = 64;

static void make_qp(struct rdma_cm_id *id)
{
	struct kp_caps caps = {
		.send_wr = 16, .recv_wr = NRECV, .send_sge = 2, .recv_sge = 2,
		.inline_data = MAX_INLINE, .two_cqs = true, .cqe = 64,
		.send_cqe = send_cq_size,
	};
	struct kp_peer *p = calloc(1, sizeof(*p));

	if (!p)
		die("calloc");
	if (!pd) {
		pd = ibv_alloc_pd(id->verbs);
		buf = calloc(1, BUF_SIZE);
		mr = pd && buf ? ibv_reg_mr(pd, buf, BUF_SIZE,
					    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ) : NULL;
		if (!mr)
			die("alloc PD, register the buffer");
	}
	caps.pd = pd;
	kp_open_or_die(p, id, &caps);
	id->context = p;
}

static void free_qp(struct rdma_cm_id *id)
{
	struct kp_peer *p = id->context;

	if (kp_close(p))
		die("ibv_destroy_cq");
	free(p);
	id->context = NULL;
}

static int post_recv(struct ibv_qp *qp, uint64_t id, void *at, int nsge)
{
	struct ibv_sge sge[3];
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = sge,
				  .num_sge = nsge }, *bad = NULL;
	int ret;

	for (int i = 0; i < nsge; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)at + i * 8, 8, mr->lkey };
	sge[0].length = RECV_SIZE - 8 * (nsge - 1);
	ret = ibv_post_recv(qp, &wr, &bad);
	if (ret && bad != &wr)
		return -1;
	return ret;
}

/* The next asynchronous event within about @ms ms; 0 when one came. */
static int async_within(struct ibv_context *ctx, struct ibv_async_event *ev,
			int ms)
{
	return kp_async(ctx, ev, ms) ? 0 : -1;
}

static int next_async(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	return async_within(ctx, ev, 5000);
}

/* The first async event @qp raised, or -1; waits a second for none. */
static int qp_async(struct ibv_qp *qp)
{
	struct ibv_async_event ev;
	int first = -1;

	while (!async_within(qp->context, &ev, first < 0 ? 1000 : 0))
		if (first < 0 && ev.element.qp == qp)
			first = ev.event_type;
	return first;
}

/* Server: one connection, until the client ends it. */
static int serve_one(void)
{
	static int prev_async = -1;
	struct rdma_conn_param cp = { .responder_resources = SERVER_IRD,
				      .initiator_depth = SERVER_ORD };
	struct report rep = { 0 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_qp_attr a;
	struct info info;
	int done = 0, flushed = 0;
	uint8_t *rbuf;

	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	rdma_ack_cm_event(ev);
	make_qp(id);
	rbuf = buf + BUF_SIZE - NRECV * RECV_SIZE;
	for (int i = 0; i < NRECV; i++)
		if (post_recv(id->qp, i, rbuf + i * RECV_SIZE, 1))
			die("server: post_recv");
	for (size_t i = 0; i < READ_LEN; i++)
		buf[READ_OFF + i] = pattern(i);
	memset(buf + WRITE_OFF, 0, READ_LEN);
	info = (struct info){ (uintptr_t)buf, mr->rkey, 0 };
	cp.private_data = &info;
	cp.private_data_len = sizeof(info);
	if (rdma_accept(id, &cp))
		die("rdma_accept");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED));

	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	while (!done) {
		struct ibv_wc wc;
		int r = ibv_poll_cq(id->qp->recv_cq, 1, &wc);

		if (r == 1 && wc.status == IBV_WC_SUCCESS) {
			uint8_t *msg = rbuf + wc.wr_id * RECV_SIZE;

			if (wc.byte_len == 1 && msg[0] == '?') {
				struct ibv_sge sge = { (uintptr_t)&rep,
						       sizeof(rep), 0 };
				struct ibv_send_wr swr = {
					.sg_list = &sge, .num_sge = 1,
					.opcode = IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED |
						      IBV_SEND_INLINE,
				}, *bad;

				rep.w_ok = !memcmp(buf + WRITE_OFF,
						   buf + READ_OFF, READ_LEN);
				qp_query(id->qp, &a);
				rep.state = a.qp_state;
				rep.ord = a.max_rd_atomic;
				rep.ird = a.max_dest_rd_atomic;
				rep.prev_async = prev_async;
				/* too big to go inline: copy to the MR */
				memcpy(buf + BUF_SIZE / 2 - sizeof(rep), &rep,
				       sizeof(rep));
				sge.addr = (uintptr_t)buf + BUF_SIZE / 2 -
					   sizeof(rep);
				sge.lkey = mr->lkey;
				swr.send_flags = IBV_SEND_SIGNALED;
				if (ibv_post_send(id->qp, &swr, &bad) ||
				    drain(id->qp->send_cq, &wc, 1) != 1)
					note("server: the report was not sent");
			} else {
				rep.nmsg++;
				rep.lastlen = wc.byte_len;
				memcpy(rep.last, msg, sizeof(rep.last));
			}
			post_recv(id->qp, wc.wr_id, msg, 1);
		} else if (r == 1) {
			flushed++;
		} else if (!rdma_get_cm_event(ch, &ev)) {
			note("server: %s", rdma_event_str(ev->event));
			done = ev->event == RDMA_CM_EVENT_DISCONNECTED;
			rdma_ack_cm_event(ev);
		} else {
			poll(NULL, 0, 1);
		}
	}
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) & ~O_NONBLOCK);
	rdma_disconnect(id);	/* librdmacm asks for SQD: ERR -> SQD */
	qp_query(id->qp, &a);
	{
		struct ibv_wc wc[NRECV];

		flushed += drain(id->qp->recv_cq, wc, NRECV - flushed);
	}
	prev_async = qp_async(id->qp);
	if (prev_async >= 0)
		note("server: async event %s", ibv_event_type_str(prev_async));
	free_qp(id);
	rdma_destroy_id(id);
	note("server: connection over, QP state %s, %d receives flushed",
	     st_name[a.qp_state], flushed);
	return a.qp_state == IBV_QPS_ERR && flushed == NRECV;
}

/* Listen on @addr:@port with a backlog of @backlog; prints "listening". */
static struct rdma_cm_id *listen_on(const char *addr, const char *port,
				    int backlog)
{
	struct rdma_cm_id *lid;

	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	lid = kc_listen_or_die(ch, addr, port, backlog);
	note("server: listening");
	return lid;
}

static int server(const char *addr, const char *port, int nconn)
{
	struct rdma_cm_id *lid = listen_on(addr, port, 4);
	int ok = 1;

	for (int c = 0; c < nconn; c++)
		ok &= serve_one();
	rdma_destroy_id(lid);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(ch);
	check(ok, "all %d connections ended with DISCONNECTED, the QP in ERR, receives flushed",
	      nconn);
	return kt_end();
}

/* ---- client ---- */

static struct info peer;

/* Connect with IRD @ird and ORD @ord (responder_resources, initiator_depth). */
static struct rdma_cm_id *connect_rd(const char *addr, const char *port,
				     uint8_t ird, uint8_t ord)
{
	struct rdma_conn_param cp = kc_param(ird, ord, NULL, 0);
	struct rdma_cm_id *id = kc_resolve_or_die(ch, addr, port);

	make_qp(id);
	/* rdma_cm's INIT grants no remote access before the iw_cm id exists. */
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .qp_access_flags = CLIENT_ACCESS };

		if (ibv_modify_qp(id->qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS))
			die("INIT -> INIT with remote access");
	}
	/* One slot of the receive queue stays free for conn_sqd/conn_abort. */
	for (int i = 0; i < NRECV - 1; i++)
		if (post_recv(id->qp, i, buf + BUF_SIZE - (i + 1) * RECV_SIZE, 1))
			die("client: post_recv");
	kc_connect_or_die(ch, id, &cp, &peer, sizeof(peer));
	return id;
}

static struct rdma_cm_id *connect_to(const char *addr, const char *port)
{
	return connect_rd(addr, port, CLIENT_IRD, CLIENT_ORD);
}

/* Post one send WR; @sig: signalled. Returns ibv_post_send's result. */
static int post1(struct ibv_qp *qp, uint64_t id, enum ibv_wr_opcode op,
		 int flags, uint8_t *at, uint32_t len, uint64_t raddr)
{
	struct ibv_sge sge = { (uintptr_t)at, len, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1,
		.opcode = op, .send_flags = flags,
	}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = peer.rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* Ask the server for its report (a "?" Send); 0 when it came. */
static int ask(struct ibv_qp *qp, struct report *rep)
{
	static const uint8_t q = '?';
	struct ibv_wc wc;
	struct ibv_sge sge = { (uintptr_t)&q, 1, 0 };
	struct ibv_send_wr wr = {
		.wr_id = 0x3f, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
	}, *bad;

	if (ibv_post_send(qp, &wr, &bad) || drain(qp->send_cq, &wc, 1) != 1 ||
	    wc.status != IBV_WC_SUCCESS || wc.wr_id != 0x3f)
		return -1;
	if (drain(qp->recv_cq, &wc, 1) != 1 || wc.status != IBV_WC_SUCCESS ||
	    wc.byte_len != sizeof(*rep))
		return -1;
	memcpy(rep, buf + BUF_SIZE - (wc.wr_id + 1) * RECV_SIZE, sizeof(*rep));
	return post_recv(qp, wc.wr_id, buf + BUF_SIZE - (wc.wr_id + 1) * RECV_SIZE, 1);
}

/* Connection 1: after connect, the RTS row, work requests, graceful close. */
static void conn_main(struct rdma_cm_id *id)
{
	struct ibv_qp *qp = id->qp;
	struct ibv_wc wc[32];
	struct report rep;
	struct ibv_qp_attr a;
	uint8_t data[MAX_INLINE + 1];
	int ret, got, ok;

	qp_query(qp, &a);
	check(a.qp_state == IBV_QPS_RTS, "V-ST-R1: query_qp after ESTABLISHED reports RTS (%d)",
	      a.qp_state);
	check(a.max_rd_atomic == SERVER_IRD && a.max_dest_rd_atomic == CLIENT_IRD,
	      "V-QP-7: max_rd_atomic is the negotiated ORD min(%d, server IRD %d), max_dest_rd_atomic our IRD %d (%u, %u)",
	      CLIENT_ORD, SERVER_IRD, CLIENT_IRD, a.max_rd_atomic,
	      a.max_dest_rd_atomic);
	check(a.qp_access_flags == CLIENT_ACCESS,
	      "V-QP-7: qp_access_flags are those set in INIT (0x%x)",
	      a.qp_access_flags);
	check(a.cap.max_send_wr >= 16 && a.cap.max_recv_wr >= NRECV &&
	      a.cap.max_send_sge == 2 && a.cap.max_recv_sge == 2 &&
	      a.cap.max_inline_data == MAX_INLINE,
	      "V-QP-7: cap: %u/%u WRs, %u/%u SGEs, %u B inline", a.cap.max_send_wr,
	      a.cap.max_recv_wr, a.cap.max_send_sge, a.cap.max_recv_sge,
	      a.cap.max_inline_data);
	check(a.path_mtu >= IBV_MTU_256 && a.path_mtu <= IBV_MTU_4096,
	      "path_mtu is an IBV_MTU_* value (%d)", a.path_mtu);
	ret = ask(qp, &rep);
	check(!ret && rep.state == IBV_QPS_RTS &&
	      rep.ord == SERVER_ORD && rep.ird == SERVER_IRD,
	      "V-QP-7: the server's QP is RTS, ORD min(%d, client IRD %d), IRD %d (%u, %u, %u)",
	      SERVER_ORD, CLIENT_IRD, SERVER_IRD, rep.state, rep.ord, rep.ird);

	/* The RTS row. */
	for (int to = IBV_QPS_RESET; to < IBV_QPS_SQD; to++)
		transition(qp, IBV_QPS_RTS, to,
			   to == IBV_QPS_RTS ? "(V-ST-R3)" : "(V-ST-2)");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS);
	check(ret == EINVAL && !qp_query(qp, &a) && a.qp_state == IBV_QPS_RTS &&
	      a.qp_access_flags == CLIENT_ACCESS,
	      "V-QP-8: RTS -> INIT with access flags 0 refused, flags unchanged (%d, 0x%x)",
	      ret, a.qp_access_flags);

	/* Inline data: up to max_inline_data exactly, copied at post time. */
	for (int i = 0; i <= MAX_INLINE; i++)
		data[i] = (uint8_t)(0xa0 + i);
	{
		struct ibv_sge sge = { (uintptr_t)data, MAX_INLINE, 0 };
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge,
					  .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_INLINE |
							IBV_SEND_SIGNALED }, *bad = NULL;

		ret = ibv_post_send(qp, &wr, &bad);
		memset(data, 0, MAX_INLINE);	/* the WR holds its own copy */
		got = drain(qp->send_cq, wc, 1);
		check(!ret && got == 1 && wc[0].status == IBV_WC_SUCCESS,
		      "V-NOTDEF-1: inline Send of exactly max_inline_data (%d B) completes",
		      MAX_INLINE);
		ok = !ask(qp, &rep) && rep.nmsg == 1 && rep.lastlen == MAX_INLINE;
		for (int i = 0; ok && i < MAX_INLINE; i++)
			ok = rep.last[i] == (uint8_t)(0xa0 + i);
		check(ok, "the peer got the %d inline bytes as they were at post time",
		      MAX_INLINE);
		sge.length = MAX_INLINE + 1;
		bad = NULL;
		ret = ibv_post_send(qp, &wr, &bad);
		check(ret == EINVAL && bad == &wr && cq_quiet(qp->send_cq),
		      "inline Send of max_inline_data + 1 B refused with EINVAL, bad_wr set, no completion (%d)",
		      ret);
		ret = ask(qp, &rep);
		check(!ret && rep.nmsg == 1,
		      "the refused inline Send never reached the peer (%u Sends)",
		      rep.nmsg);
	}

	/* SGE limits; a post list stops at its first bad WR. */
	{
		struct ibv_sge sge[3];
		struct ibv_send_wr wr[4], *bad = NULL;
		uint8_t *src = buf + WRITE_OFF;

		memcpy(src, "gather-1", 8);
		memcpy(src + 64, "gather-2", 8);
		sge[0] = (struct ibv_sge){ (uintptr_t)src, 8, mr->lkey };
		sge[1] = (struct ibv_sge){ (uintptr_t)src + 64, 8, mr->lkey };
		sge[2] = sge[0];
		memset(wr, 0, sizeof(wr));
		for (int i = 0; i < 4; i++) {
			wr[i].wr_id = 10 + i;
			wr[i].opcode = IBV_WR_SEND;
			wr[i].send_flags = IBV_SEND_SIGNALED;
			wr[i].sg_list = &sge[i == 0 ? 0 : 1];
			wr[i].num_sge = 1;
			wr[i].next = i < 3 ? &wr[i + 1] : NULL;
		}
		wr[1].sg_list = sge;
		wr[1].num_sge = 2;	/* max_send_sge: a gather of two */
		wr[2].sg_list = sge;
		wr[2].num_sge = 3;	/* one over max_send_sge */
		ret = ibv_post_send(qp, wr, &bad);
		check(ret == EINVAL && bad == &wr[2],
		      "V-QP-6: a list [ok, ok (2 SGEs), 3 SGEs > max_send_sge, ok] fails with EINVAL, bad_wr the third (%d, %ld)",
		      ret, bad ? (long)(bad - wr) : -1L);
		got = drain(qp->send_cq, wc, 2);
		check(got == 2 && cq_quiet(qp->send_cq) && wc[0].wr_id == 10 && wc[1].wr_id == 11 &&
		      wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS,
		      "the two WRs before it completed, nothing after (%d completions)",
		      got);
		ret = ask(qp, &rep);
		check(!ret && rep.nmsg == 3 && rep.lastlen == 16 &&
		      !memcmp(rep.last, "gather-1gather-2", 16),
		      "the peer got the two, the second gathered from 2 SGEs in order (%u Sends)",
		      rep.nmsg);
		{
			struct ibv_recv_wr rwr = { .wr_id = 99, .sg_list = sge,
						   .num_sge = 3 }, *rbad = NULL;

			check(ibv_post_recv(qp, &rwr, &rbad) == EINVAL &&
			      rbad == &rwr,
			      "V-QP-6: a receive with 3 SGEs (max_recv_sge 2) refused with EINVAL");
		}
	}

	/*
	 * V-FEN-1: a fenced Write after a Read waits for the Read's
	 * response: the Write sends what the Read brought, not the poison
	 * that was there when both were posted.
	 */
	memset(buf, 0x5a, READ_LEN);
	ret = post1(qp, 20, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, buf, READ_LEN,
		    peer.addr + READ_OFF);
	ret = ret ?: post1(qp, 21, IBV_WR_RDMA_WRITE,
			   IBV_SEND_SIGNALED | IBV_SEND_FENCE, buf, READ_LEN,
			   peer.addr + WRITE_OFF);
	got = drain(qp->send_cq, wc, 2);
	check(!ret && got == 2 && wc[0].wr_id == 20 && wc[1].wr_id == 21 &&
	      wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS,
	      "a 256 KiB Read, then a fenced Write of its sink, both complete in order");
	check(!ask(qp, &rep) && rep.w_ok,
	      "V-FEN-1: the fenced Write carried the Read's data, not the poison (IBV_SEND_FENCE)");

	/* V-RD-3: more Reads than ORD queue up; they never fail the post. */
	memset(buf, 0x5a, READ_LEN);
	ret = 0;
	for (int i = 0; i < 8 && !ret; i++)
		ret = post1(qp, 30 + i, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED,
			    buf + i * 4096, 4096, peer.addr + READ_OFF + i * 4096);
	got = drain(qp->send_cq, wc, 8);
	ok = !ret && got == 8;
	for (int i = 0; ok && i < 8; i++)
		ok = wc[i].wr_id == (uint64_t)(30 + i) &&
		     wc[i].status == IBV_WC_SUCCESS &&
		     wc[i].opcode == IBV_WC_RDMA_READ;
	for (int i = 0; ok && i < 8 * 4096; i++)
		ok = buf[i] == pattern(i);
	check(ok, "V-RD-3: 8 Reads posted at once with ORD %d all complete, in order, with the right data (%d)",
	      SERVER_IRD, got);

	/*
	 * V-AMB-20: unsignalled WRs produce no completion, and a signalled
	 * one behind them frees their slots: 4 rounds of a full send queue.
	 */
	qp_query(qp, &a);
	ok = 1;
	for (int r = 0; r < 4 && ok; r++) {
		for (uint32_t i = 0; i < a.cap.max_send_wr && ok; i++)
			ok = !post1(qp, 100 * r + i, IBV_WR_RDMA_WRITE,
				    i + 1 == a.cap.max_send_wr ? IBV_SEND_SIGNALED : 0,
				    buf, 64, peer.addr + WRITE_OFF);
		got = ok ? drain(qp->send_cq, wc, 1) : 0;
		ok = got == 1 && wc[0].wr_id == 100u * r + a.cap.max_send_wr - 1 &&
		     wc[0].status == IBV_WC_SUCCESS;
	}
	check(ok && cq_quiet(qp->send_cq), "V-AMB-20: 4 x %u Writes, one signalled per full send queue: only those complete, every post fits",
	      a.cap.max_send_wr);

	/* Graceful close with receives posted: flushed in order. */
	check(!rdma_disconnect(id), "V-ST-R5: rdma_disconnect (RTS -> SQD)");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	check(kp_qp_state(qp) == IBV_QPS_ERR,
	      "V-ST-C5: after DISCONNECTED the QP is in ERR");
	got = drain(qp->recv_cq, wc, NRECV - 1);
	ok = got == NRECV - 1 && cq_quiet(qp->recv_cq);
	for (int i = 0; ok && i < got; i++)
		ok = wc[i].status == IBV_WC_WR_FLUSH_ERR && wc[i].opcode == IBV_WC_RECV;
	check(ok, "V-ST-C4: the %d receives left posted were flushed (%d)",
	      NRECV - 1, got);
	/* Receive ids cycle as the server's replies came in: check the order. */
	for (int i = 1; ok && i < got; i++)
		ok = wc[i].wr_id == (wc[i - 1].wr_id + 1) % (NRECV - 1);
	check(ok, "V-FL-9: ... in the order they were posted");
}

/*
 * Post, with the server's packets stopped: a signalled Read (held at the
 * peer: no response), an unsignalled Write and a signalled Write behind
 * it, whose completions wait for the Read's. Returns 0 when all posted.
 */
static int post_stuck(struct ibv_qp *qp)
{
	run_env("KIWI_BLOCK");
	return post1(qp, 40, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, buf, 4096,
		     peer.addr + READ_OFF) ||
	       post1(qp, 41, IBV_WR_RDMA_WRITE, 0, buf, 64, peer.addr + WRITE_OFF) ||
	       post1(qp, 42, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, buf, 64,
		     peer.addr + WRITE_OFF);
}

/* After an abort: everything flushed, in order, unsignalled too. */
static void check_flushed(struct ibv_qp *qp, const char *how)
{
	struct ibv_wc wc[NRECV + 4];
	int got, ok;

	got = drain(qp->send_cq, wc, 3);
	ok = got == 3 && cq_quiet(qp->send_cq);
	for (int i = 0; ok && i < 3; i++)
		ok = wc[i].wr_id == (uint64_t)(40 + i) &&
		     wc[i].status == IBV_WC_WR_FLUSH_ERR;
	check(ok && wc[0].opcode == IBV_WC_RDMA_READ &&
	      wc[1].opcode == IBV_WC_RDMA_WRITE,
	      "V-ST-E2, V-FL-9: %s: Read, unsignalled Write, Write flushed in order (%d)",
	      how, got);
	got = drain(qp->recv_cq, wc, NRECV);
	ok = got == NRECV && cq_quiet(qp->recv_cq);
	for (int i = 0; ok && i < got; i++)
		ok = wc[i].status == IBV_WC_WR_FLUSH_ERR &&
		     wc[i].wr_id == (uint64_t)i;
	check(ok, "V-ST-E2: %s: the %d receives flushed in order (%d)", how,
	      NRECV, got);
}

/* Connection 2: held in SQD by an outstanding Read; the SQD row; abort. */
static void conn_sqd(struct rdma_cm_id *id)
{
	struct ibv_qp *qp = id->qp;
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND }, *bad = NULL;
	int ret;

	check(!post_stuck(qp), "post a Read the peer cannot answer, then 2 Writes");
	ret = kp_modify(qp, IBV_QPS_SQD);
	check(!ret && kp_qp_state(qp) == IBV_QPS_SQD,
	      "V-ST-R5: RTS -> SQD with a Read outstanding: the QP stays in SQD (%d)",
	      ret);
	for (int to = IBV_QPS_RESET; to <= IBV_QPS_SQE; to++)
		transition(qp, IBV_QPS_SQD, to, "(V-ST-C1)");
	check(ibv_post_send(qp, &wr, &bad) == EINVAL && bad == &wr,
	      "V-ST-C3: post_send in SQD refused with EINVAL");
	check(!post_recv(qp, NRECV - 1, buf, 1),
	      "V-ST-C3: post_recv in SQD is taken (to be flushed)");
	transition(qp, IBV_QPS_SQD, IBV_QPS_ERR, "(abort a close; ib_drain_qp)");
	check_flushed(qp, "SQD -> ERR");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	run_env("KIWI_UNBLOCK");
}

/* Connection 3: aborted from RTS with the same WRs outstanding. */
static void conn_abort(struct rdma_cm_id *id)
{
	struct ibv_qp *qp = id->qp;

	check(!post_stuck(qp), "post a Read the peer cannot answer, then 2 Writes");
	check(!post_recv(qp, NRECV - 1, buf, 1), "post one more receive");
	transition(qp, IBV_QPS_RTS, IBV_QPS_ERR, "(V-ST-R10 abortive close)");
	check_flushed(qp, "RTS -> ERR");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	run_env("KIWI_UNBLOCK");
}

/*
 * Connection 4: an RDMA Write to a bad STag; the peer answers with a
 * Terminate, which reaches us as IBV_EVENT_QP_ACCESS_ERR on this QP.
 */
static void conn_access(struct rdma_cm_id *id)
{
	struct ibv_async_event ev;
	struct ibv_wc wc = { 0 };
	int ret;

	ret = next_async(id->verbs, &ev);
	check(ret, "V-ST-R10, V-ST-T7: the closes asked for by modify_qp raised no async event (%s)",
	      ret ? "none" : ibv_event_type_str(ev.event_type));
	peer.rkey ^= 0x80000000;	/* an STag index beyond any table */
	ret = post1(id->qp, 50, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, buf, 64,
		    peer.addr + WRITE_OFF);
	peer.rkey ^= 0x80000000;
	ret = ret ?: next_async(id->verbs, &ev);
	check(!ret && ev.event_type == IBV_EVENT_QP_ACCESS_ERR &&
	      ev.element.qp == id->qp,
	      "V-ST-R9: a Write to an invalid STag: the peer's Terminate raises IBV_EVENT_QP_ACCESS_ERR on our QP (%s)",
	      ret ? "none" : ibv_event_type_str(ev.event_type));
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	check(kp_qp_state(id->qp) == IBV_QPS_ERR,
	      "V-ST-T8: after the Terminate the QP is in ERR");
	check(drain(id->qp->send_cq, &wc, 1) == 1 && wc.wr_id == 50,
	      "the Write completed (status %d)", wc.status);
}

/* After our Terminate: ERR, receives flushed, no async event of ours. */
static void after_term(struct rdma_cm_id *id, const char *how)
{
	struct ibv_async_event ev;
	struct ibv_wc wc[NRECV];
	int got, ok, ret;

	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	check(kp_qp_state(id->qp) == IBV_QPS_ERR, "%s: the QP is then in ERR", how);
	got = drain(id->qp->recv_cq, wc, NRECV - 1);
	ok = got == NRECV - 1 && cq_quiet(id->qp->recv_cq);
	for (int i = 0; ok && i < got; i++)
		ok = wc[i].status == IBV_WC_WR_FLUSH_ERR;
	check(ok, "%s: the %d receives flushed (%d)", how, NRECV - 1, got);
	ret = next_async(id->verbs, &ev);
	check(ret, "V-ST-T7, V-LLP-10: %s: no async event on our QP (%s)", how,
	      ret ? "none" : ibv_event_type_str(ev.event_type));
}

/* What the server's previous QP raised: the Terminate we sent it. */
static void peer_got_term(struct rdma_cm_id *id, const char *how)
{
	struct report rep;
	int ret = ask(id->qp, &rep);

	check(!ret && rep.prev_async == IBV_EVENT_QP_FATAL,
	      "%s: our Terminate raised IBV_EVENT_QP_FATAL on the peer's QP (%s)",
	      how, ret ? "no report" : rep.prev_async < 0 ? "none" :
	      ibv_event_type_str(rep.prev_async));
}

/*
 * Connection 5: a Write from an lkey that names no MR, a Send behind it.
 * The Write completes with IBV_WC_LOC_PROT_ERR, the Send is flushed, and
 * the QP terminates without an async event (V-CS-3).
 */
static void conn_lkey(struct rdma_cm_id *id)
{
	struct ibv_qp *qp = id->qp;
	struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey ^ 0x80000000 };
	struct ibv_send_wr wr[2] = {
		{ .wr_id = 60, .sg_list = &sge, .num_sge = 1, .next = &wr[1],
		  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
		{ .wr_id = 61, .opcode = IBV_WR_SEND,
		  .send_flags = IBV_SEND_SIGNALED },
	}, *bad;
	struct ibv_wc wc[2];
	int ret, got;

	wr[0].wr.rdma.remote_addr = peer.addr + WRITE_OFF;
	wr[0].wr.rdma.rkey = peer.rkey;
	ret = ibv_post_send(qp, wr, &bad);
	got = drain(qp->send_cq, wc, 2);
	check(!ret && got == 2 && wc[0].wr_id == 60 &&
	      wc[0].status == IBV_WC_LOC_PROT_ERR &&
	      wc[0].opcode == IBV_WC_RDMA_WRITE && wc[1].wr_id == 61 &&
	      wc[1].status == IBV_WC_WR_FLUSH_ERR && cq_quiet(qp->send_cq),
	      "V-CS-3, V-ST-R8: a Write from a bad lkey: IBV_WC_LOC_PROT_ERR, the Send behind it flushed (%d: %s, %s)",
	      got, got > 0 ? ibv_wc_status_str(wc[0].status) : "-",
	      got > 1 ? ibv_wc_status_str(wc[1].status) : "-");
	after_term(id, "bad lkey");
}

/* Connection 6: the consumer's Terminate, Modify RTS -> SQE. */
static void conn_sqe(struct rdma_cm_id *id)
{
	struct ibv_qp *qp = id->qp;
	int ret, st;

	peer_got_term(id, "V-CS-3, V-ERR-1: bad lkey");
	ret = kp_modify(qp, IBV_QPS_SQE);
	st = kp_qp_state(qp);
	/* ERR follows as soon as the connection manager closes. */
	check(!ret && (st == IBV_QPS_SQE || st == IBV_QPS_ERR),
	      "V-ST-R6, V-LLP-8: RTS -> SQE succeeds, query_qp reports SQE or already ERR (ret %d, %s)",
	      ret, st >= 0 ? st_name[st] : "?");
	after_term(id, "RTS -> SQE");
}

/*
 * Connection 7, with one on the second server (@port2) open alongside:
 * the send CQ of this one has a single entry, and 4 signalled Writes
 * overflow it. Its QP terminates with IBV_EVENT_QP_FATAL (and the CQ
 * reports IBV_EVENT_CQ_ERR); the other connection, on other CQs, still
 * sends and receives (V-ERR-8).
 */
static void conn_cq_overflow(const char *addr, const char *port,
			     const char *port2)
{
	struct rdma_cm_id *keep, *id;
	struct ibv_async_event ev;
	struct report rep;
	int ret, qp_fatal = 0, cq_err = 0, other = 0;

	keep = connect_to(addr, port2);
	send_cq_size = 1;
	id = connect_to(addr, port);
	send_cq_size = 64;
	peer_got_term(id, "V-ST-R6, V-LLP-8: RTS -> SQE");
	ret = 0;
	for (int i = 0; i < 4 && !ret; i++)
		ret = post1(id->qp, 70 + i, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
			    buf, 64, peer.addr + WRITE_OFF);
	while (!(qp_fatal && cq_err) && !next_async(id->verbs, &ev)) {
		if (ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == id->qp)
			qp_fatal++;
		else if (ev.event_type == IBV_EVENT_CQ_ERR &&
			 ev.element.cq == id->qp->send_cq)
			cq_err++;
		else
			other++;
	}
	check(!ret && qp_fatal == 1 && cq_err == 1 && !other,
	      "V-ERR-7: 4 Writes on a 1-entry send CQ: IBV_EVENT_CQ_ERR on it, IBV_EVENT_QP_FATAL on its QP (%d, %d, %d others)",
	      cq_err, qp_fatal, other);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	check(kp_qp_state(id->qp) == IBV_QPS_ERR,
	      "V-ERR-7: the QP of the overflowed CQ goes to ERR");
	ret = ask(keep->qp, &rep);
	check(!ret && rep.nmsg == 0 && rep.state == IBV_QPS_RTS,
	      "V-ERR-8: another QP on other CQs still sends and receives after the overflow (%d)",
	      ret);
	free_qp(id);
	rdma_destroy_id(id);
	check(!rdma_disconnect(keep), "V-ERR-8: ... and closes gracefully");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	free_qp(keep);
	rdma_destroy_id(keep);
}

/* Connect, run @fn on the connection, and free it. */
static void one_conn(const char *addr, const char *port,
		     void (*fn)(struct rdma_cm_id *id))
{
	struct rdma_cm_id *id = connect_to(addr, port);

	fn(id);
	free_qp(id);
	rdma_destroy_id(id);
}

static int client(const char *addr, const char *port)
{
	const char *port2 = getenv("KIWI_PORT2");

	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	one_conn(addr, port, conn_main);
	if (getenv("KIWI_BLOCK") && getenv("KIWI_UNBLOCK")) {
		one_conn(addr, port, conn_sqd);
		one_conn(addr, port, conn_abort);
		one_conn(addr, port, conn_access);
	}
	if (getenv("KIWI_BLOCK") && port2) {
		one_conn(addr, port, conn_lkey);
		one_conn(addr, port, conn_sqe);
		conn_cq_overflow(addr, port, port2);
	}
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(ch);
	return kt_end();
}

/* ---- Read resources: rdserver / rdclient ---- */

/*
 * Connections rdclient makes: ORD 0, ORD lowered in RTS, then RD_NQP at
 * once. kiwi's max_qp (16384) is too many TCP connections for the test VM
 * (emulated, 2 CPUs, and two processes holding every QP): RD_NQP stands
 * for "every QP" in V-RD-8.
 */
#define RD_NQP		128
#define RD_NCONN	(3 + RD_NQP)
#define RD_SINK		2048	/* bytes each of the RD_NQP Reads brings */

/* A server QP: its cm_id, and whether a marker Send came while blocked. */
struct rd_conn {
	struct rdma_cm_id *id;
	struct kp_peer p;
	uint32_t nmsg;
	uint8_t marker;
};

static void rd_post_recv(struct ibv_qp *qp, int slot, int k)
{
	uint8_t *at = buf + BUF_SIZE / 2 + (slot * 2 + k) * RECV_SIZE;

	if (post_recv(qp, slot * 2 + k, at, 1))
		die("rdserver: post_recv");
}

/*
 * Accept one connection on shared CQs, with the peer's ORD as our IRD and
 * its IRD as our ORD (so that the client's request is what it gets).
 */
static void rd_accept(struct rdma_cm_event *ev, struct rd_conn *c, int slot,
		      struct ibv_cq *scq, struct ibv_cq *rcq)
{
	const struct kp_caps caps = {
		.pd = pd, .scq = scq, .rcq = rcq, .send_wr = 4, .recv_wr = 2,
		.send_sge = 1, .recv_sge = 1,
	};
	struct info info = { (uintptr_t)buf, mr->rkey, 0 };
	struct rdma_conn_param cp =
		kc_param(ev->param.conn.responder_resources,
			 ev->param.conn.initiator_depth, &info, sizeof(info));

	c->id = ev->id;
	c->id->context = c;
	if (kp_open(&c->p, c->id, &caps))
		die("rdserver: rdma_create_qp");
	rd_post_recv(c->id->qp, slot, 0);
	rd_post_recv(c->id->qp, slot, 1);
	if (rdma_accept(c->id, &cp))
		die("rdserver: rdma_accept");
}

/*
 * A Send came in: "M" is a marker (note whether $KIWI_BLOCKED, a command
 * that succeeds while our packets are held back, said they were), "?"
 * asks for a struct report: last[0] is 'B' when the marker came while
 * blocked, 'F' when our packets flowed; ord and ird are the QP's.
 */
static void rd_message(struct rd_conn *c, uint8_t *msg, struct ibv_cq *scq)
{
	struct report *rep = (struct report *)(buf + BUF_SIZE / 2 - sizeof(*rep));
	struct ibv_sge sge = { (uintptr_t)rep, sizeof(*rep), mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_qp_attr a;
	struct ibv_wc wc;

	if (msg[0] == 'M') {
		const char *cmd = getenv("KIWI_BLOCKED");

		c->marker = cmd && !system(cmd) ? 'B' : 'F';
		c->nmsg++;
		return;
	}
	memset(rep, 0, sizeof(*rep));
	rep->nmsg = c->nmsg;
	rep->last[0] = c->marker;
	qp_query(c->id->qp, &a);
	rep->state = a.qp_state;
	rep->ord = a.max_rd_atomic;
	rep->ird = a.max_dest_rd_atomic;
	if (ibv_post_send(c->id->qp, &wr, &bad) || drain(scq, &wc, 1) != 1)
		note("rdserver: the report was not sent");
}

/*
 * The peer of rdclient: serves @nconn connections, as many at a time as
 * come, Reads from a buffer holding pattern(), and exits 0 when every one
 * ended with DISCONNECTED.
 */
static int rdserver(const char *addr, const char *port, int nconn)
{
	struct rdma_cm_id *lid = listen_on(addr, port, RD_NCONN);
	struct rd_conn *conn = calloc(nconn, sizeof(*conn));
	struct ibv_cq *scq, *rcq;
	int accepted = 0, ended = 0;

	if (!conn)
		die("calloc");
	pd = ibv_alloc_pd(lid->verbs);
	buf = calloc(1, BUF_SIZE);
	mr = pd && buf ? ibv_reg_mr(pd, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_READ) : NULL;
	scq = ibv_create_cq(lid->verbs, 64, NULL, NULL, 0);
	rcq = ibv_create_cq(lid->verbs, 4 * nconn, NULL, NULL, 0);
	if (!mr || !scq || !rcq)
		die("rdserver: PD, MR and CQs");
	for (size_t i = 0; i < READ_LEN; i++)
		buf[READ_OFF + i] = pattern(i);
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	while (ended < nconn) {
		struct rdma_cm_event *ev;
		struct ibv_wc wc;
		struct rd_conn *c;

		if (ibv_poll_cq(rcq, 1, &wc) == 1) {
			int slot = wc.wr_id / 2;

			if (wc.status != IBV_WC_SUCCESS)
				continue;	/* flushed at disconnect */
			rd_message(&conn[slot],
				   buf + BUF_SIZE / 2 + wc.wr_id * RECV_SIZE, scq);
			rd_post_recv(conn[slot].id->qp, slot, wc.wr_id % 2);
			continue;
		}
		if (rdma_get_cm_event(ch, &ev)) {
			poll(NULL, 0, 1);
			continue;
		}
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if (accepted == nconn)
				die("rdserver: one connection too many");
			rd_accept(ev, &conn[accepted], accepted, scq, rcq);
			accepted++;
			rdma_ack_cm_event(ev);
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			rdma_ack_cm_event(ev);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			c = ev->id->context;
			rdma_ack_cm_event(ev);
			kp_close(&c->p);
			rdma_destroy_id(c->id);
			ended++;
			break;
		default:
			note("rdserver: %s (status %d)",
			     rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			check(false, "every connection ended with DISCONNECTED");
			return kt_end();
		}
	}
	/* Flushed receives of the last connections: nothing more to do. */
	rdma_destroy_id(lid);
	if (ibv_destroy_cq(scq) || ibv_destroy_cq(rcq))
		die("rdserver: ibv_destroy_cq");
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(ch);
	free(conn);
	check(accepted == nconn && ended == nconn,
	      "all %d connections accepted and over (%d, %d)", nconn, accepted,
	      ended);
	return kt_end();
}

/*
 * V-RD-4, V-ORD-13: a connection made with initiator_depth 0 has ORD 0; a
 * Read on it completes in error and fails the QP, flushing what follows.
 */
static void rd_ord0(const char *addr, const char *port)
{
	struct rdma_cm_id *id = connect_rd(addr, port, 1, 0);
	struct ibv_qp *qp = id->qp;
	struct ibv_wc wc[NRECV];
	struct ibv_qp_attr a;
	int ret, got, ok;

	qp_query(qp, &a);
	check(a.max_rd_atomic == 0 && a.qp_state == IBV_QPS_RTS,
	      "V-RD-4: a connection made with initiator_depth 0 is in RTS with ORD 0 (%u)",
	      a.max_rd_atomic);
	memset(buf, 0x5a, 4096);
	ret = post1(qp, 60, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, buf, 4096,
		    peer.addr + READ_OFF);
	ret = ret ?: post1(qp, 61, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, buf, 64,
			   peer.addr + WRITE_OFF);
	got = drain(qp->send_cq, wc, 2);
	check(!ret && got >= 1 && wc[0].wr_id == 60 &&
	      wc[0].status == IBV_WC_LOC_QP_OP_ERR &&
	      wc[0].opcode == IBV_WC_RDMA_READ,
	      "V-RD-4: a Read with ORD 0 completes with IBV_WC_LOC_QP_OP_ERR (status %d, opcode %d)",
	      got >= 1 ? (int)wc[0].status : -1, got >= 1 ? (int)wc[0].opcode : -1);
	ok = buf[0] == 0x5a && !memcmp(buf, buf + 1, 4095);
	check(ok, "V-RD-4: nothing was placed in the failed Read's sink");
	check(got == 2 && wc[1].wr_id == 61 &&
	      wc[1].status == IBV_WC_WR_FLUSH_ERR && cq_quiet(qp->send_cq),
	      "V-RD-4: the Write posted behind it is flushed, not sent (status %d)",
	      got == 2 ? (int)wc[1].status : -1);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	check(kp_qp_state(qp) == IBV_QPS_ERR,
	      "V-RD-4: the QP failed: DISCONNECTED, query_qp reports ERR");
	got = drain(qp->recv_cq, wc, NRECV - 1);
	ok = got == NRECV - 1;
	for (int i = 0; ok && i < got; i++)
		ok = wc[i].status == IBV_WC_WR_FLUSH_ERR;
	check(ok, "V-RD-4: its %d receives were flushed (%d)", NRECV - 1, got);
	free_qp(id);
	rdma_destroy_id(id);
}

/* Modify @qp (in RTS) with @mask, ORD and IRD @val; query into @a. */
static int rd_modify(struct ibv_qp *qp, int mask, uint8_t val,
		     struct ibv_qp_attr *a)
{
	int ret;

	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->max_rd_atomic = val;
	a->max_dest_rd_atomic = val;
	ret = ibv_modify_qp(qp, a, mask);
	qp_query(qp, a);
	return ret;
}

/*
 * V-RD-7, V-ST-R3: ORD lowered from 4 to 1 in RTS with 2 Reads held
 * outstanding (the server's packets stopped): the 2 complete, the next
 * Reads go one at a time, and the SQ pauses behind them: a marker Send
 * posted behind a third Read (which ORD 4 would have let out) reaches the
 * server only once its packets flow again.
 * Raising ORD, or changing IRD, in RTS is refused.
 * V-RD-9: another connection, with 3 Reads outstanding meanwhile, keeps
 * its ORD of 4 and its Reads complete.
 */
static void rd_lower(const char *addr, const char *port)
{
	static const uint8_t m = 'M';
	struct rdma_cm_id *id = connect_rd(addr, port, 1, 4);
	struct rdma_cm_id *oid = connect_rd(addr, port, 1, 4);
	uint8_t *obuf = buf + 8 * 4096;
	struct ibv_sge sge = { (uintptr_t)&m, 1, 0 };
	struct ibv_send_wr wr = { .wr_id = 73, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED |
						IBV_SEND_INLINE }, *bad;
	struct ibv_qp *qp = id->qp;
	struct ibv_wc wc[8];
	struct ibv_qp_attr a;
	struct report rep;
	int ret, got, ok;

	qp_query(qp, &a);
	check(a.max_rd_atomic == 4, "V-RD-7: connected with ORD 4 (%u)",
	      a.max_rd_atomic);
	run_env("KIWI_BLOCK");
	memset(buf, 0x5a, 6 * 4096);
	ret = 0;
	for (int i = 0; i < 2 && !ret; i++)
		ret = post1(qp, 70 + i, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED,
			    buf + i * 4096, 4096, peer.addr + READ_OFF + i * 4096);
	check(!ret, "V-RD-7: 2 Reads posted, held outstanding");
	memset(obuf, 0x5a, 3 * 4096);
	for (int i = 0; i < 3 && !ret; i++)
		ret = post1(oid->qp, 80 + i, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED,
			    obuf + i * 4096, 4096, peer.addr + READ_OFF + i * 4096);
	check(!ret, "V-RD-9: 3 Reads posted on another connection, held outstanding");
	ret = rd_modify(qp, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC, 1, &a);
	check(!ret && a.max_rd_atomic == 1 && a.qp_state == IBV_QPS_RTS,
	      "V-RD-7, V-ST-R3: RTS -> RTS lowering ORD from 4 to 1 with Reads outstanding succeeds, query_qp reports ORD 1 (%d, %u)",
	      ret, a.max_rd_atomic);
	ret = rd_modify(qp, IBV_QP_MAX_QP_RD_ATOMIC, 2, &a);
	check(ret == EINVAL && a.max_rd_atomic == 1,
	      "V-RD-7: raising ORD in RTS (1 -> 2) refused with EINVAL, ORD stays 1 (%d, %u)",
	      ret, a.max_rd_atomic);
	ret = rd_modify(qp, IBV_QP_MAX_DEST_RD_ATOMIC, 2, &a);
	check(ret == EINVAL && a.max_dest_rd_atomic == 1,
	      "V-RD-7: changing IRD in RTS (1 -> 2) refused with EINVAL, IRD stays 1 (%d, %u)",
	      ret, a.max_dest_rd_atomic);
	qp_query(oid->qp, &a);
	check(a.max_rd_atomic == 4 && a.qp_state == IBV_QPS_RTS,
	      "V-RD-9: the other connection's QP kept ORD 4 and RTS (%u)",
	      a.max_rd_atomic);
	/*
	 * A third Read, within the old ORD but not the new one, then the
	 * marker (wr_id 73), then 3 more Reads: Reads k = 0..5 are wr_ids
	 * 70, 71, 72, 74, 75, 76.
	 */
	ret = 0;
	for (int k = 2; k < 6 && !ret; k++) {
		if (k == 3)
			ret = ibv_post_send(qp, &wr, &bad);
		ret = ret ?: post1(qp, 70 + k + (k >= 3), IBV_WR_RDMA_READ,
				   IBV_SEND_SIGNALED, buf + k * 4096, 4096,
				   peer.addr + READ_OFF + k * 4096);
	}
	/* Time for a marker that did not wait to reach the server. */
	poll(NULL, 0, 1500);
	run_env("KIWI_UNBLOCK");
	got = drain(qp->send_cq, wc, 7);
	ok = !ret && got == 7;
	for (int i = 0; ok && i < 7; i++)
		ok = wc[i].wr_id == (uint64_t)(70 + i) &&
		     wc[i].status == IBV_WC_SUCCESS &&
		     wc[i].opcode == (i == 3 ? IBV_WC_SEND : IBV_WC_RDMA_READ);
	for (int i = 0; ok && i < 6 * 4096; i++)
		ok = buf[i] == pattern(i);
	check(ok, "V-RD-7: the 2 Reads outstanding, and the marker and 4 Reads posted after lowering ORD, all complete in order, the Reads with the right data (%d)",
	      got);
	ret = ask(qp, &rep);
	check(!ret && rep.nmsg == 1 && rep.last[0] == 'F',
	      "V-RD-7, V-RD-3: with ORD lowered to 1 the SQ paused behind the Reads: the marker Send reached the peer only when its packets flowed again (%c)",
	      ret ? '?' : rep.last[0]);
	check(!ret && rep.ird == 4,
	      "V-RD-7: the peer's IRD stayed 4 (%u)", rep.ird);
	got = drain(oid->qp->send_cq, wc, 3);
	ok = got == 3;
	for (int i = 0; ok && i < 3; i++)
		ok = wc[i].wr_id == (uint64_t)(80 + i) &&
		     wc[i].status == IBV_WC_SUCCESS;
	for (int i = 0; ok && i < 3 * 4096; i++)
		ok = obuf[i] == pattern(i);
	check(ok, "V-RD-9: the other connection's 3 Reads complete in order with the right data (%d)",
	      got);
	check(!rdma_disconnect(id), "V-RD-7: rdma_disconnect");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	free_qp(id);
	rdma_destroy_id(id);
	check(!rdma_disconnect(oid), "V-RD-9: rdma_disconnect of the other");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	free_qp(oid);
	rdma_destroy_id(oid);
}

/*
 * V-RD-8, V-LIM-2: RD_NQP connections with ORD = IRD = 1 each, and an
 * RDMA Read outstanding on every one at the same time (the server's
 * packets held back while all are posted).
 */
static void rd_many(const char *addr, const char *port)
{
	struct rdma_cm_id **ids = calloc(RD_NQP, sizeof(*ids));
	struct ibv_qp_attr a;
	struct ibv_wc wc;
	int ok = 1, ret = 0, done = 0;

	if (!ids)
		die("calloc");
	for (int i = 0; i < RD_NQP; i++) {
		ids[i] = connect_rd(addr, port, 1, 1);
		qp_query(ids[i]->qp, &a);
		ok &= a.max_rd_atomic == 1 && a.max_dest_rd_atomic == 1;
	}
	check(ok, "V-RD-8: %d connections, each with ORD 1 and IRD 1", RD_NQP);
	run_env("KIWI_BLOCK");
	memset(buf, 0x5a, RD_NQP * RD_SINK);
	for (int i = 0; i < RD_NQP && !ret; i++)
		ret = post1(ids[i]->qp, i, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED,
			    buf + i * RD_SINK, RD_SINK,
			    peer.addr + READ_OFF + i * RD_SINK);
	poll(NULL, 0, 500);
	run_env("KIWI_UNBLOCK");
	for (int i = 0; i < RD_NQP; i++)
		done += drain(ids[i]->qp->send_cq, &wc, 1) == 1 &&
			wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i;
	ok = !ret && done == RD_NQP;
	for (int i = 0; ok && i < RD_NQP * RD_SINK; i++)
		ok = buf[i] == pattern(i);
	check(ok, "V-RD-8, V-LIM-2: a Read outstanding on each of the %d QPs at once: all complete with the right data (%d)",
	      RD_NQP, done);
	for (int i = 0; i < RD_NQP; i++)
		rdma_disconnect(ids[i]);
	for (int i = 0; i < RD_NQP; i++)
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	for (int i = 0; i < RD_NQP; i++) {
		free_qp(ids[i]);
		rdma_destroy_id(ids[i]);
	}
	free(ids);
}

static int rdclient(const char *addr, const char *port)
{
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (!getenv("KIWI_BLOCK") || !getenv("KIWI_UNBLOCK"))
		die("rdclient needs $KIWI_BLOCK and $KIWI_UNBLOCK");
	rd_ord0(addr, port);
	rd_lower(addr, port);
	rd_many(addr, port);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(ch);
	return kt_end();
}

int main(int argc, char **argv)
{
	kt_start();
	if (argc == 3 && !strcmp(argv[1], "local"))
		return local(argv[2]);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3], argc == 5 ? atoi(argv[4]) : NCONN);
	if (argc == 4 && !strcmp(argv[1], "hold")) {
		ch = rdma_create_event_channel();
		if (!ch)
			die("rdma_create_event_channel");
		connect_to(argv[2], argv[3]);
		note("connected");
		for (;;)
			poll(NULL, 0, -1);
	}
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "rdserver"))
		return rdserver(argv[2], argv[3], RD_NCONN);
	if (argc == 4 && !strcmp(argv[1], "rdclient"))
		return rdclient(argv[2], argv[3]);
	fprintf(stderr, "usage: %s local DEVICE | server|client|hold|rdserver|rdclient ADDR PORT\n",
		argv[0]);
	return 2;
}
