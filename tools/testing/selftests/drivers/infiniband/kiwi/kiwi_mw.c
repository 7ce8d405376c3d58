// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_mw: memory windows, type 1 and type 2, between two hosts, and the
 * protection rules around them and MRs: local rights and window STags in
 * SGEs, invalidation through another QP, Bind and Invalidate ordering in
 * one post, two MRs over one buffer, unused WR modifiers, zero SGEs.
 *
 *   kiwi_mw server ADDR PORT	(owns the memory and binds the windows)
 *   kiwi_mw client ADDR PORT	(RDMA Writes and Reads through them)
 *
 * Both run the same list of cases, one rdma_cm connection each (two for
 * the case that needs a second QP), and exchange window addresses and
 * STags in Sends. Both print TAP, each point with the RDMA Verbs digest ID
 * it proves (shared/spec/digest-verbs.md). A case whose QP must fail comes
 * last on its connection.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

#define BUF	65536
#define R2	4096		/* type 2 window: [R2, R2 + R2LEN) of the MR */
#define R2LEN	8192
#define R1	16384		/* type 1 window: [R1, R1 + R1LEN), zero-based */
#define R1LEN	4096
#define NRECV	4
#define KIWI_MAX_MW 4096	/* kiwi_mem.h */

struct msg {
	uint32_t op;
	uint32_t rkey;
	uint32_t rkey2;
	uint32_t pad;
	uint64_t addr;
};

struct conn {
	struct rdma_cm_id *id;
	struct kp_peer p;
	struct ibv_cq *cq;		/* p's one CQ */
	struct msg rx[NRECV], tx;
	struct ibv_mr *rxmr, *txmr;
	struct ibv_wc stash[NRECV];
	int nstash;
	int disconnected;
};

static struct rdma_event_channel *ch;
static struct ibv_pd *pd;
static int server_side;
static uint8_t *lbuf;		/* the client's local buffer */
static struct ibv_mr *lmr;

/* Does p[0..len) hold pattern @seed as laid at offset @off? */
static bool same(const uint8_t *p, size_t len, unsigned int seed, size_t off)
{
	return !kt_differs(p, len, seed, off);
}

/* kc_ended: a connection that ended while we waited for another event. */
static void conn_ended(struct rdma_cm_id *id)
{
	if (id->context)
		((struct conn *)id->context)->disconnected = 1;
}

/* Wait for @c's DISCONNECTED, unless it came already. */
static void wait_disconnected(struct conn *c)
{
	if (!c->disconnected &&
	    kc_wait(ch, c->id, RDMA_CM_EVENT_DISCONNECTED, -1))
		bail("no DISCONNECTED");
	c->disconnected = 1;
}

static void post_recv(struct conn *c, int i)
{
	struct ibv_sge sge = { (uintptr_t)&c->rx[i], sizeof(c->rx[i]),
			       c->rxmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (ibv_post_recv(c->id->qp, &wr, &bad))
		die("ibv_post_recv");
}

/* A QP, CQ and receives for @id; the process's one PD on first use. */
static struct conn *setup(struct rdma_cm_id *id)
{
	struct kp_caps caps = {
		.send_wr = 16, .recv_wr = NRECV, .send_sge = 1, .recv_sge = 1,
		.cqe = 32,
	};
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		die("calloc");
	c->id = id;
	id->context = c;
	if (!pd && !(pd = ibv_alloc_pd(id->verbs)))
		die("ibv_alloc_pd");
	caps.pd = pd;
	kp_open_or_die(&c->p, id, &caps);
	c->cq = c->p.scq;
	c->rxmr = ibv_reg_mr(pd, c->rx, sizeof(c->rx), IBV_ACCESS_LOCAL_WRITE);
	c->txmr = ibv_reg_mr(pd, &c->tx, sizeof(c->tx), 0);
	if (!c->rxmr || !c->txmr)
		die("ibv_reg_mr");
	for (int i = 0; i < NRECV; i++)
		post_recv(c, i);
	return c;
}

static struct conn *accept_one(struct rdma_cm_id *lid)
{
	struct rdma_conn_param cp = kc_param(1, 1, NULL, 0);
	struct conn *c;

	(void)lid;
	c = setup(kc_request(ch, NULL, 0));
	if (rdma_accept(c->id, &cp))
		die("rdma_accept");
	if (kc_wait(ch, c->id, RDMA_CM_EVENT_ESTABLISHED, -1))
		bail("no ESTABLISHED");
	return c;
}

static struct conn *connect_one(const char *addr, const char *port)
{
	struct rdma_conn_param cp = kc_param(1, 1, NULL, 0);
	struct rdma_cm_id *id = kc_resolve_or_die(ch, addr, port);
	struct conn *c;

	c = setup(id);
	if (!lmr) {
		lbuf = calloc(1, BUF);
		lmr = lbuf ? ibv_reg_mr(pd, lbuf, BUF, IBV_ACCESS_LOCAL_WRITE) :
			     NULL;
		if (!lmr)
			die("ibv_reg_mr");
	}
	if (rdma_connect(id, &cp))
		die("rdma_connect");
	expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED);
	return c;
}

/* Both ends close; each waits for its own DISCONNECTED. */
static void finish(struct conn *c)
{
	rdma_disconnect(c->id);
	wait_disconnected(c);
	ibv_dereg_mr(c->rxmr);
	ibv_dereg_mr(c->txmr);
	kp_close(&c->p);
	rdma_destroy_id(c->id);
	free(c);
}

/*
 * The next completion: a receive when @recv (keeping others for later),
 * otherwise the next send-queue one (receives seen meanwhile are kept).
 */
static struct ibv_wc next_wc(struct conn *c, int recv)
{
	/* Under faults.sh's 60 s limit: a wait that ends is no hang. */
	double end = now() + 30;
	struct ibv_wc wc;
	int n;

	if (recv && c->nstash) {
		wc = c->stash[0];
		memmove(c->stash, c->stash + 1, --c->nstash * sizeof(wc));
		return wc;
	}
	for (;;) {
		n = ibv_poll_cq(c->cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n && wc.status == IBV_WC_SUCCESS &&
		    wc.opcode == IBV_WC_RECV && !recv) {
			c->stash[c->nstash++] = wc;
			continue;
		}
		/*
		 * A receive flushed: the QP failed (the peer may have died
		 * on an error of its own). Waiting for a send-queue
		 * completion, that one still comes; a message never will.
		 */
		if (n && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id < NRECV) {
			if (recv)
				bail("the QP failed: a receive was flushed");
			continue;
		}
		if (n)
			return wc;
		if (now() > end)
			bail("no completion in 30 s");
	}
}

static void send_msg(struct conn *c, uint32_t op, uint64_t addr,
		     uint32_t rkey, uint32_t rkey2)
{
	struct ibv_sge sge = { (uintptr_t)&c->tx, sizeof(c->tx),
			       c->txmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 100, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	c->tx = (struct msg){ op, rkey, rkey2, 0, addr };
	if (ibv_post_send(c->id->qp, &wr, &bad))
		die("ibv_post_send");
	wc = next_wc(c, 0);
	if (wc.status != IBV_WC_SUCCESS)
		bail("Send: %s", ibv_wc_status_str(wc.status));
}

/* Wait for the peer's message @op; returns it. */
static struct msg recv_msg(struct conn *c, uint32_t op)
{
	struct ibv_wc wc = next_wc(c, 1);
	struct msg m;

	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
	    wc.wr_id >= NRECV)
		bail("waiting for message %u: %s opcode %d", op,
		     ibv_wc_status_str(wc.status), wc.opcode);
	m = c->rx[wc.wr_id];
	post_recv(c, wc.wr_id);
	if (m.op != op)
		bail("message %u, wanted %u", m.op, op);
	return m;
}

/* Post one signaled send-queue WR and return its completion status. */
static enum ibv_wc_status post_wait(struct conn *c, struct ibv_send_wr *wr,
				    enum ibv_wc_opcode *op)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int ret;

	wr->wr_id = 200;
	wr->send_flags |= IBV_SEND_SIGNALED;
	ret = ibv_post_send(c->id->qp, wr, &bad);
	if (ret) {
		errno = ret;
		die("ibv_post_send");
	}
	wc = next_wc(c, 0);
	if (op)
		*op = wc.opcode;
	return wc.status;
}

/* Client: RDMA Write or Read of lbuf[0..len) at (@raddr, @rkey). */
static enum ibv_wc_status rdma(struct conn *c, enum ibv_wr_opcode opcode,
			       size_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)lbuf, (uint32_t)len, lmr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = opcode };

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return post_wait(c, &wr, NULL);
}

/* Server: bind type 2 window @mw with a new key; the status. */
static enum ibv_wc_status bind2(struct conn *c, struct ibv_mw *mw,
				struct ibv_mr *mr, uint64_t addr, uint64_t len,
				unsigned int access)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };
	enum ibv_wc_opcode op;
	enum ibv_wc_status st;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ mr, addr, len,
							  access };
	st = post_wait(c, &wr, &op);
	if (st == IBV_WC_SUCCESS) {
		check(op == IBV_WC_BIND_MW, "V-MW-6: bind completes as IBV_WC_BIND_MW");
		mw->rkey = wr.bind_mw.rkey;	/* the consumer keeps it */
	}
	return st;
}

/* Server: ibv_bind_mw() of type 1 window @mw; the completion status. */
static enum ibv_wc_status bind1(struct conn *c, struct ibv_mw *mw,
				struct ibv_mr *mr, uint64_t addr, uint64_t len,
				unsigned int access)
{
	struct ibv_mw_bind b = { .wr_id = 300,
				 .send_flags = IBV_SEND_SIGNALED,
				 .bind_info = { mr, addr, len, access } };
	uint32_t old = mw->rkey;
	struct ibv_wc wc;
	int ret;

	ret = ibv_bind_mw(c->id->qp, mw, &b);
	if (!check(!ret, "ibv_bind_mw() posts (%s)", strerror(ret)))
		return IBV_WC_GENERAL_ERR;
	check(mw->rkey != old && (mw->rkey >> 8) == (old >> 8),
	      "V-MW-6: ibv_bind_mw() gives the window a new key, same index");
	wc = next_wc(c, 0);
	if (wc.status == IBV_WC_SUCCESS)
		check(wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 300,
		      "V-MW-6: type 1 bind completes as IBV_WC_BIND_MW");
	return wc.status;
}

static enum ibv_wc_status local_inv(struct conn *c, uint32_t rkey)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_LOCAL_INV,
				  .invalidate_rkey = rkey };

	return post_wait(c, &wr, NULL);
}

/*
 * The first async event on @c's QP within about @ms ms, or -1; events of
 * other objects are skipped.
 */
static int qp_async(struct conn *c, int ms)
{
	double end = now() + ms / 1000.0;
	struct ibv_async_event ev;

	while (now() < end)
		if (kp_async(c->id->verbs, &ev, 100) &&
		    ev.element.qp == c->id->qp)
			return ev.event_type;
	return -1;
}

/* The next affiliated async event of @c's QP, within a minute. */
static enum ibv_event_type qp_event(struct conn *c)
{
	return (enum ibv_event_type)qp_async(c, 60000);
}

/* @c's QP state once it is @want, or after 60 s of something else. */
static int qp_state(struct conn *c, int want)
{
	return kp_wait_state(c->id->qp, want, 60000);
}

#define RW (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define MR_ALL (IBV_ACCESS_LOCAL_WRITE | RW | IBV_ACCESS_MW_BIND)

static uint8_t *sbuf;	/* the server's memory */

static struct ibv_mr *sreg(int access)
{
	struct ibv_mr *mr;

	kt_fill(sbuf, BUF, 0, 0);
	mr = ibv_reg_mr(pd, sbuf, BUF, access);
	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

static struct ibv_mw *salloc(enum ibv_mw_type type)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, type);

	if (!mw)
		die("ibv_alloc_mw");
	return mw;
}

/* Server: device limits, and max_mw enforced (V-MW-1). */
static void srv_limits(struct ibv_context *ctx)
{
	static struct ibv_mw *mws[KIWI_MAX_MW + 1];
	struct ibv_device_attr attr;
	int n = 0, err = 0;

	if (ibv_query_device(ctx, &attr))
		die("ibv_query_device");
	check(attr.max_mw == KIWI_MAX_MW, "device reports max_mw %d", attr.max_mw);
	check((attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
	      (attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B),
	      "device reports memory windows of type 1 and 2B");
	while (n <= attr.max_mw) {
		mws[n] = ibv_alloc_mw(pd, n % 2 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1);
		if (!mws[n]) {
			err = errno;
			break;
		}
		n++;
	}
	check(n == attr.max_mw && err == ENOMEM,
	      "V-MW-1: %d windows allocated, the next refused with ENOMEM (%s)",
	      n, strerror(err));
	while (n--)
		if (ibv_dealloc_mw(mws[n]))
			die("ibv_dealloc_mw");
}

/* Case A: data through both types; dereg and dealloc while bound. */
static void srv_data(struct conn *c)
{
	struct ibv_mr *mr = sreg(MR_ALL);
	struct ibv_mw *mw2 = salloc(IBV_MW_TYPE_2), *mw1 = salloc(IBV_MW_TYPE_1);
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };
	struct ibv_mw_bind b = { .bind_info = { mr, 0, 1, RW } };
	struct ibv_send_wr *bad;
	int ret, err;

	check(mw1->type == IBV_MW_TYPE_1 && mw2->type == IBV_MW_TYPE_2 &&
	      mw1->rkey && mw2->rkey && mw1->rkey != mw2->rkey,
	      "V-MW-1: two windows allocated with distinct STags");
	/* Each kind of bind through the other's verb: immediate EINVAL. */
	check(ibv_bind_mw(c->id->qp, mw2, &b) == EINVAL,
	      "ibv_bind_mw() of a type 2 window refused with EINVAL");
	wr.bind_mw.mw = mw1;
	wr.bind_mw.rkey = ibv_inc_rkey(mw1->rkey);
	wr.bind_mw.bind_info = b.bind_info;
	check(ibv_post_send(c->id->qp, &wr, &bad) == EINVAL,
	      "IBV_WR_BIND_MW of a type 1 window refused with EINVAL");

	check(bind2(c, mw2, mr, (uintptr_t)sbuf + R2, R2LEN, RW) ==
	      IBV_WC_SUCCESS, "V-MW-6: type 2 window bound (VA-based)");
	check(bind1(c, mw1, mr, (uintptr_t)sbuf + R1, R1LEN,
		    RW | IBV_ACCESS_ZERO_BASED) == IBV_WC_SUCCESS,
	      "V-MW-3: type 1 window bound (zero-based)");
	send_msg(c, 1, (uintptr_t)sbuf + R2, mw2->rkey, mw1->rkey);
	recv_msg(c, 2);
	check(same(sbuf + R2 + 100, 1000, 2, 0) &&
	      same(sbuf + R2 + 99, 1, 0, R2 + 99) &&
	      same(sbuf + R2 + 1100, 1, 0, R2 + 1100),
	      "V-PROT-2: the Write through the type 2 window landed, to the byte");
	check(same(sbuf + R1, R1LEN, 3, 0) && same(sbuf + R1 - 1, 1, 0, R1 - 1) &&
	      same(sbuf + R1 + R1LEN, 1, 0, R1 + R1LEN),
	      "V-PROT-2: the Write at TO 0 of the zero-based window landed at its base");

	check(ibv_dereg_mr(mr) == EBUSY,
	      "V-DEALLOC-2: dereg of an MR with bound windows refused with EBUSY");
	errno = 0;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE);
	err = errno;
	check(ret == IBV_REREG_MR_ERR_CMD && err == EBUSY,
	      "V-MR-5: rereg of an MR with bound windows refused with EBUSY (%d, %s)",
	      ret, strerror(err));
	check(ibv_dealloc_mw(mw1) == 0,
	      "V-DEALLOC-1: dealloc of a bound type 1 window");
	check(ibv_dereg_mr(mr) == EBUSY,
	      "V-DEALLOC-2: still EBUSY while the type 2 window is bound");
	check(local_inv(c, mw2->rkey) == IBV_WC_SUCCESS,
	      "V-INV-1: Local Invalidate of the type 2 window");
	check(local_inv(c, mw2->rkey) == IBV_WC_SUCCESS,
	      "V-INV-4: Local Invalidate of the invalid window again");
	check(ibv_dereg_mr(mr) == 0,
	      "V-INV-8: the invalidated window let go of the MR: dereg succeeds");
	check(ibv_dealloc_mw(mw2) == 0, "V-DEALLOC-1: dealloc of an invalid window");
	send_msg(c, 3, 0, 0, 0);
}

static void cli_data(struct conn *c)
{
	struct msg m = recv_msg(c, 1);

	check(rdma(c, IBV_WR_RDMA_READ, R2LEN, m.addr, m.rkey) ==
	      IBV_WC_SUCCESS && same(lbuf, R2LEN, 0, R2),
	      "V-PROT-2: RDMA Read of the whole type 2 window, data checked");
	kt_fill(lbuf, 1000, 2, 0);
	check(rdma(c, IBV_WR_RDMA_WRITE, 1000, m.addr + 100, m.rkey) ==
	      IBV_WC_SUCCESS, "RDMA Write into the type 2 window");
	kt_fill(lbuf, R1LEN, 3, 0);
	check(rdma(c, IBV_WR_RDMA_WRITE, R1LEN, 0, m.rkey2) == IBV_WC_SUCCESS,
	      "RDMA Write of the whole zero-based type 1 window at TO 0");
	memset(lbuf, 0, R1LEN);
	check(rdma(c, IBV_WR_RDMA_READ, R1LEN, 0, m.rkey2) == IBV_WC_SUCCESS &&
	      same(lbuf, R1LEN, 3, 0),
	      "RDMA Read back through the type 1 window, data checked");
	send_msg(c, 2, 0, 0, 0);
	recv_msg(c, 3);
}

/*
 * Case B: the window is bound, used, then invalidated (locally, or by the
 * client's Send with Invalidate when @remote) or deallocated (@dealloc);
 * the next access must fail and leave the memory alone.
 */
static void srv_revoke(struct conn *c, int remote, int dealloc)
{
	struct ibv_mr *mr = sreg(MR_ALL);
	struct ibv_mw *mw2 = salloc(IBV_MW_TYPE_2);
	const char *how = remote ? "Send with Invalidate" :
			  dealloc ? "dealloc" : "Local Invalidate";

	check(bind2(c, mw2, mr, (uintptr_t)sbuf + R2, R2LEN, RW) ==
	      IBV_WC_SUCCESS, "type 2 window bound (%s case)", how);
	send_msg(c, 1, (uintptr_t)sbuf + R2, mw2->rkey, 0);
	if (remote) {
		struct ibv_wc wc = next_wc(c, 1);

		check(wc.status == IBV_WC_SUCCESS &&
		      (wc.wc_flags & IBV_WC_WITH_INV) &&
		      wc.invalidated_rkey == mw2->rkey,
		      "V-INV-10: the receive completes with the window's STag invalidated");
		post_recv(c, wc.wr_id);
	} else {
		recv_msg(c, 2);
		if (dealloc)
			check(ibv_dealloc_mw(mw2) == 0,
			      "V-DEALLOC-1: dealloc of the bound window");
		else
			check(local_inv(c, mw2->rkey) == IBV_WC_SUCCESS,
			      "V-INV-1: Local Invalidate of the bound window");
	}
	check(same(sbuf + R2, 64, 4, 0), "%s case: the first Write landed", how);
	send_msg(c, 3, 0, 0, 0);
	check(qp_event(c) == IBV_EVENT_QP_ACCESS_ERR,
	      "V-PROT-6: access after %s: IBV_EVENT_QP_ACCESS_ERR on the responder", how);
	check(same(sbuf + R2 + 64, R2LEN - 64, 0, R2 + 64) &&
	      same(sbuf + R2, 64, 4, 0),
	      "V-PROT-2: the refused %s placed nothing",
	      remote ? "Write" : "Read");
	if (!dealloc)
		check(ibv_dealloc_mw(mw2) == 0, "dealloc of the invalid window");
	check(ibv_dereg_mr(mr) == 0, "dereg of the MR once no window is bound");
}

static void cli_revoke(struct conn *c, int remote, int dealloc)
{
	struct msg m = recv_msg(c, 1);
	const char *how = remote ? "Send with Invalidate" :
			  dealloc ? "dealloc" : "Local Invalidate";
	enum ibv_wc_status st;

	kt_fill(lbuf, 64, 4, 0);
	check(rdma(c, IBV_WR_RDMA_WRITE, 64, m.addr, m.rkey) == IBV_WC_SUCCESS,
	      "%s case: Write through the bound window", how);
	if (remote) {
		struct ibv_sge sge = { (uintptr_t)&c->tx, sizeof(c->tx),
				       c->txmr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND_WITH_INV,
					  .invalidate_rkey = m.rkey };

		c->tx.op = 2;
		check(post_wait(c, &wr, NULL) == IBV_WC_SUCCESS,
		      "V-INV-1: Send with Invalidate of the window");
	} else {
		send_msg(c, 2, 0, 0, 0);
	}
	recv_msg(c, 3);
	kt_fill(lbuf, 64, 5, 0);
	if (remote) {
		/* A Write completes once sent; the Terminate comes after. */
		check(rdma(c, IBV_WR_RDMA_WRITE, 64, m.addr + 64, m.rkey) ==
		      IBV_WC_SUCCESS, "Write after %s sent", how);
		check(qp_event(c) == IBV_EVENT_QP_ACCESS_ERR,
		      "V-PROT-8: Write after %s: the peer's Terminate gives IBV_EVENT_QP_ACCESS_ERR",
		      how);
		return;
	}
	st = rdma(c, IBV_WR_RDMA_READ, 64, m.addr, m.rkey);
	check(st == IBV_WC_REM_ACCESS_ERR,
	      "V-PROT-8: Read after %s fails with IBV_WC_REM_ACCESS_ERR (%s)",
	      how, ibv_wc_status_str(st));
}

/* Case C: a type 1 window bound again; its old key is dead (V-STAG-6). */
static void srv_rebind(struct conn *c)
{
	struct ibv_mr *mr = sreg(MR_ALL);
	struct ibv_mw *mw1 = salloc(IBV_MW_TYPE_1);
	uint32_t first;

	check(bind1(c, mw1, mr, (uintptr_t)sbuf + R1, R1LEN, RW) ==
	      IBV_WC_SUCCESS, "type 1 window bound (VA-based)");
	first = mw1->rkey;
	send_msg(c, 1, (uintptr_t)sbuf + R1, first, 0);
	recv_msg(c, 2);
	check(bind1(c, mw1, mr, (uintptr_t)sbuf + R1, R1LEN, RW) ==
	      IBV_WC_SUCCESS, "V-MW-3: a bound type 1 window bound again");
	send_msg(c, 3, (uintptr_t)sbuf + R1, mw1->rkey, first);
	check(qp_event(c) == IBV_EVENT_QP_ACCESS_ERR,
	      "V-PROT-6: the old key: IBV_EVENT_QP_ACCESS_ERR on the responder");
	check(same(sbuf + R1, 64, 6, 0) && same(sbuf + R1 + 64, 64, 0, R1 + 64),
	      "the Write with the new key landed, the one with the old did not");
	check(ibv_dealloc_mw(mw1) == 0 && ibv_dereg_mr(mr) == 0,
	      "V-DEALLOC-1: dealloc of the bound window frees the MR for dereg");
}

static void cli_rebind(struct conn *c)
{
	struct msg m = recv_msg(c, 1);
	enum ibv_wc_status st;

	kt_fill(lbuf, 64, 4, 0);
	check(rdma(c, IBV_WR_RDMA_WRITE, 64, m.addr, m.rkey) == IBV_WC_SUCCESS,
	      "Write through the type 1 window");
	send_msg(c, 2, 0, 0, 0);
	m = recv_msg(c, 3);
	kt_fill(lbuf, 64, 6, 0);
	check(rdma(c, IBV_WR_RDMA_WRITE, 64, m.addr, m.rkey) == IBV_WC_SUCCESS,
	      "V-STAG-6: Write with the key of the latest bind");
	kt_fill(lbuf, 64, 7, 0);
	st = rdma(c, IBV_WR_RDMA_WRITE, 64, m.addr + 64, m.rkey2);
	check(st == IBV_WC_SUCCESS, "Write with the key of the earlier bind sent");
	check(qp_event(c) == IBV_EVENT_QP_ACCESS_ERR,
	      "V-STAG-6: the earlier key: the peer's Terminate gives IBV_EVENT_QP_ACCESS_ERR");
}

/*
 * Case D: two connections a and b of one PD. The type 1 window, bound
 * through a, serves b too; the type 2 window serves only a.
 */
static void srv_two_qps(struct conn *a, struct conn *b)
{
	struct ibv_mr *mr = sreg(MR_ALL);
	struct ibv_mw *mw2 = salloc(IBV_MW_TYPE_2), *mw1 = salloc(IBV_MW_TYPE_1);

	check(bind2(a, mw2, mr, (uintptr_t)sbuf + R2, R2LEN, RW) ==
	      IBV_WC_SUCCESS, "type 2 window bound through QP a");
	check(bind1(a, mw1, mr, (uintptr_t)sbuf + R1, R1LEN, RW) ==
	      IBV_WC_SUCCESS, "type 1 window bound through QP a");
	send_msg(a, 1, (uintptr_t)sbuf, mw2->rkey, mw1->rkey);
	recv_msg(a, 2);
	check(same(sbuf + R1, 64, 8, 0) && same(sbuf + R2, 64, 9, 0),
	      "V-MW-6: Writes through QP b (type 1) and QP a (type 2) landed");
	send_msg(a, 3, 0, 0, 0);
	check(qp_event(b) == IBV_EVENT_QP_ACCESS_ERR,
	      "V-PROT-2: type 2 window used through QP b: IBV_EVENT_QP_ACCESS_ERR on b");
	recv_msg(a, 4);
	check(same(sbuf + R2, 64, 11, 0) && same(sbuf + R2 + 64, 64, 0, R2 + 64),
	      "QP a's Write after the refusal landed, and only it");
	check(ibv_dealloc_mw(mw1) == 0 && ibv_dealloc_mw(mw2) == 0 &&
	      ibv_dereg_mr(mr) == 0, "dealloc of both windows, then dereg");
	send_msg(a, 5, 0, 0, 0);
}

static void cli_two_qps(struct conn *a, struct conn *b)
{
	struct msg m = recv_msg(a, 1);
	enum ibv_wc_status st;

	kt_fill(lbuf, 64, 8, 0);
	check(rdma(b, IBV_WR_RDMA_WRITE, 64, m.addr + R1, m.rkey2) ==
	      IBV_WC_SUCCESS, "V-MW-6: type 1 window usable from another QP of its PD");
	kt_fill(lbuf, 64, 9, 0);
	check(rdma(a, IBV_WR_RDMA_WRITE, 64, m.addr + R2, m.rkey) ==
	      IBV_WC_SUCCESS, "type 2 window usable from the QP it is bound to");
	send_msg(a, 2, 0, 0, 0);
	recv_msg(a, 3);
	st = rdma(b, IBV_WR_RDMA_READ, 128, m.addr + R2, m.rkey);
	check(st == IBV_WC_REM_ACCESS_ERR,
	      "V-PROT-2: Read of a type 2 window through another QP fails with IBV_WC_REM_ACCESS_ERR (%s)",
	      ibv_wc_status_str(st));
	kt_fill(lbuf, 64, 11, 0);
	check(rdma(a, IBV_WR_RDMA_WRITE, 64, m.addr + R2, m.rkey) ==
	      IBV_WC_SUCCESS, "the type 2 window still serves its own QP");
	send_msg(a, 4, 0, 0, 0);
	recv_msg(a, 5);
}

/*
 * Refused binds and invalidations (V-MW-4, V-MW-5): each is a completion
 * error that fails the QP, so each has a connection of its own.
 */
enum { REF_NO_MW_BIND, REF_BEYOND, REF_RIGHTS, REF_NO_RIGHT, REF_BOUND,
       REF_INV_TYPE1, REF_WRAP, REF_NUM };

static void srv_refuse(struct conn *c, int k)
{
	static const char *const what[REF_NUM] = {
		"V-MW-4: bind to an MR without MW_BIND access",
		"V-MW-4: window reaching one byte beyond the MR",
		"V-MW-5: remote write on an MR without local write",
		"V-MW-5: window without any remote right",
		"V-MW-4: bind of a type 2 window that is bound",
		"V-INV-1: Local Invalidate of a type 1 window",
		"V-ADDR-9: window whose range wraps",
	};
	int access = k == REF_NO_MW_BIND ? IBV_ACCESS_LOCAL_WRITE | RW :
		     k == REF_RIGHTS ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND :
		     MR_ALL;
	struct ibv_mr *mr = sreg(access);
	struct ibv_mw *mw = salloc(k == REF_INV_TYPE1 ? IBV_MW_TYPE_1 :
				   IBV_MW_TYPE_2);
	uint64_t base = (uintptr_t)sbuf;
	enum ibv_wc_status st;
	int ev;

	switch (k) {
	case REF_BEYOND:
		st = bind2(c, mw, mr, base + BUF - 100, 101, RW);
		break;
	case REF_NO_RIGHT:
		st = bind2(c, mw, mr, base, 100, 0);
		break;
	case REF_BOUND:
		check(bind2(c, mw, mr, base, 100, RW) == IBV_WC_SUCCESS,
		      "type 2 window bound");
		st = bind2(c, mw, mr, base, 100, RW);
		break;
	case REF_INV_TYPE1:
		check(bind1(c, mw, mr, base, 100, RW) == IBV_WC_SUCCESS,
		      "type 1 window bound");
		st = local_inv(c, mw->rkey);
		break;
	case REF_WRAP:
		st = bind2(c, mw, mr, base, UINT64_MAX - 10, RW);
		break;
	default:
		st = bind2(c, mw, mr, base, 100, RW);
		break;
	}
	check(st == IBV_WC_MW_BIND_ERR, "%s: IBV_WC_MW_BIND_ERR (%s)",
	      what[k], ibv_wc_status_str(st));
	/*
	 * The QP goes through Terminate to Error after the completion (the
	 * client checks the Terminate, V-AMB-7), with no async event: the
	 * error was reported in the completion (V-ST-T7).
	 */
	check(qp_state(c, IBV_QPS_ERR) == IBV_QPS_ERR, "%s: the QP goes to ERR",
	      what[k]);
	ev = qp_async(c, 2000);
	check(ev == -1, "V-ST-T7: %s: no async event on the QP (%s)",
	      what[k], ev == -1 ? "none" : ibv_event_type_str(ev));
	check(ibv_dealloc_mw(mw) == 0 && ibv_dereg_mr(mr) == 0,
	      "%s: dealloc and dereg afterwards", what[k]);
}

/*
 * ---- Memory-protection semantics around windows and MRs ----
 *
 * Cases E to I. A case that needs the server's next receive to be one of
 * its own first has the client use up the message receives (fill_recvs,
 * take_recvs); the server then posts what it needs.
 */

/* Client: RDMA Write of 64 bytes of pattern @seed to (@raddr, @rkey). */
static enum ibv_wc_status write64(struct conn *c, unsigned int seed,
				  uint64_t raddr, uint32_t rkey)
{
	kt_fill(lbuf, 64, seed, 0);
	return rdma(c, IBV_WR_RDMA_WRITE, 64, raddr, rkey);
}

/* Client: NRECV messages, one for each of the server's message receives. */
static void fill_recvs(struct conn *c)
{
	for (int i = 0; i < NRECV; i++)
		send_msg(c, 90, 0, 0, 0);
}

/* Server: complete its message receives without posting them again. */
static void take_recvs(struct conn *c)
{
	for (int i = 0; i < NRECV; i++) {
		struct ibv_wc wc = next_wc(c, 1);

		if (wc.status != IBV_WC_SUCCESS || wc.wr_id >= NRECV ||
		    c->rx[wc.wr_id].op != 90)
			bail("using up the receives: %s",
			     ibv_wc_status_str(wc.status));
	}
}

static void post_recv_sgl(struct conn *c, uint64_t id, struct ibv_sge *sge,
			  int num_sge)
{
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = sge,
				  .num_sge = num_sge }, *bad;

	if (ibv_post_recv(c->id->qp, &wr, &bad))
		die("ibv_post_recv");
}

/*
 * Server: tell the client to Send (message 1), and return the completion
 * of receive @id, which that Send takes. The receive may fail the QP
 * before our own Send's completion is reaped: take the two in any order.
 */
static struct ibv_wc go_and_recv(struct conn *c, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)&c->tx, sizeof(c->tx),
			       c->txmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 100, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc, rwc = { .wr_id = 0 };
	double end = now() + 60;
	int sent = 0;

	c->tx = (struct msg){ .op = 1 };
	if (ibv_post_send(c->id->qp, &wr, &bad))
		die("ibv_post_send");
	while (!sent || rwc.wr_id != id) {
		int n = ibv_poll_cq(c->cq, 1, &wc);

		if (n < 0)
			die("ibv_poll_cq");
		if (!n && now() > end)
			bail("no completion in 60 s");
		if (n && wc.wr_id == 100)
			sent = 1;
		else if (n && wc.wr_id == id)
			rwc = wc;
		else if (n && !(wc.wr_id < NRECV &&
				wc.status == IBV_WC_WR_FLUSH_ERR))
			bail("unexpected completion %llu: %s",
			     (unsigned long long)wc.wr_id,
			     ibv_wc_status_str(wc.status));
	}
	return rwc;
}

/* Client: once the connection is down, did a receive of @c complete? */
static int no_recv_landed(struct conn *c)
{
	struct ibv_wc wc;
	int got = c->nstash;

	wait_disconnected(c);
	while (ibv_poll_cq(c->cq, 1, &wc) == 1)
		if (wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV)
			got++;
	return !got;
}

/*
 * Case E: an SGE the local rights do not allow (V-ACC-5), or an SGE
 * naming a window (V-PROT-4, a window has remote rights only): a
 * Completion Error on the server's side that places and sends nothing.
 */
enum { LKEY_NO_LW, LKEY_MW_RECV, LKEY_MW_SEND, LKEY_MW_WRITE, LKEY_NUM };

#define CBUF 32768		/* the client's exposed part of lbuf */

static void srv_bad_lkey(struct conn *c, int k)
{
	static const char *const what[LKEY_NUM] = {
		"V-ACC-5: a receive into an MR without local write",
		"V-PROT-4: a window's STag as the lkey of a receive",
		"V-PROT-4: a window's STag as the lkey of a Send",
		"V-PROT-4: a window's STag as the lkey of an RDMA Write source",
	};
	struct ibv_mr *mr = sreg(k == LKEY_NO_LW ? IBV_ACCESS_REMOTE_READ :
				 MR_ALL);
	struct ibv_mw *mw2 = salloc(IBV_MW_TYPE_2);
	struct ibv_sge sge = { (uintptr_t)sbuf + R2, 256, mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	enum ibv_wc_status st;

	if (k != LKEY_NO_LW) {
		check(bind2(c, mw2, mr, (uintptr_t)sbuf + R2, R2LEN, RW) ==
		      IBV_WC_SUCCESS, "%s: window bound over the SGE", what[k]);
		sge.lkey = mw2->rkey;
	}
	if (k == LKEY_NO_LW || k == LKEY_MW_RECV) {
		struct ibv_wc wc;

		take_recvs(c);
		post_recv_sgl(c, 50, &sge, 1);
		wc = go_and_recv(c, 50);
		st = wc.status;
	} else {
		if (k == LKEY_MW_WRITE) {
			struct msg m = recv_msg(c, 1);

			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.wr.rdma.remote_addr = m.addr;
			wr.wr.rdma.rkey = m.rkey;
		}
		st = post_wait(c, &wr, NULL);
	}
	check(st == IBV_WC_LOC_PROT_ERR, "%s: IBV_WC_LOC_PROT_ERR (%s)",
	      what[k], ibv_wc_status_str(st));
	check(qp_state(c, IBV_QPS_ERR) == IBV_QPS_ERR, "%s: the QP goes to ERR",
	      what[k]);
	check(same(sbuf, BUF, 0, 0), "%s: nothing placed in the server's memory",
	      what[k]);
	check(ibv_dealloc_mw(mw2) == 0 && ibv_dereg_mr(mr) == 0,
	      "%s: dealloc and dereg afterwards", what[k]);
}

static void cli_bad_lkey(struct conn *c, int k)
{
	struct ibv_mr *cmr = NULL;

	if (k == LKEY_NO_LW || k == LKEY_MW_RECV) {
		struct ibv_sge sge = { (uintptr_t)lbuf, 256, lmr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND };
		enum ibv_wc_status st;

		fill_recvs(c);
		recv_msg(c, 1);
		kt_fill(lbuf, 256, 20, 0);
		/* Sent, then refused at the server; not asserted here. */
		st = post_wait(c, &wr, NULL);
		note("the Send into the refused receive: %s",
		     ibv_wc_status_str(st));
	} else if (k == LKEY_MW_WRITE) {
		kt_fill(lbuf + CBUF, 4096, 0, 0);
		cmr = ibv_reg_mr(pd, lbuf + CBUF, 4096,
				 IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE);
		if (!cmr)
			die("ibv_reg_mr");
		send_msg(c, 1, (uintptr_t)lbuf + CBUF, cmr->rkey, 0);
	}
	if (k == LKEY_MW_SEND)
		check(no_recv_landed(c),
		      "V-PROT-4: the Send from a window STag delivered no message");
	else
		wait_disconnected(c);
	if (cmr) {
		check(same(lbuf + CBUF, 4096, 0, 0),
		      "V-PROT-4: the Write from a window STag placed nothing at the client");
		ibv_dereg_mr(cmr);
	}
}

/*
 * Case F (V-INV-3, V-AMB-9): a type 2 window bound through QP a of the PD
 * cannot be invalidated through QP b of the same PD, neither by b's Local
 * Invalidate nor by the peer's Send with Invalidate arriving on b; it
 * stays bound and a's peer still writes through it. Each refusal fails b,
 * so the second uses a new connection b.
 */
static void srv_inv_other(void)
{
	struct ibv_mr *mr = sreg(MR_ALL);
	struct ibv_mw *mw2 = salloc(IBV_MW_TYPE_2);
	struct conn *a = accept_one(NULL), *b = accept_one(NULL);
	enum ibv_wc_status st;

	check(bind2(a, mw2, mr, (uintptr_t)sbuf + R2, R2LEN, RW) ==
	      IBV_WC_SUCCESS, "type 2 window bound through QP a");
	st = local_inv(b, mw2->rkey);
	check(st == IBV_WC_MW_BIND_ERR,
	      "V-INV-3: Local Invalidate through QP b of a window bound through QP a: IBV_WC_MW_BIND_ERR (%s)",
	      ibv_wc_status_str(st));
	check(qp_state(b, IBV_QPS_ERR) == IBV_QPS_ERR,
	      "V-INV-3: QP b goes to ERR after its refused Local Invalidate");
	send_msg(a, 1, (uintptr_t)sbuf + R2, mw2->rkey, 0);
	recv_msg(a, 2);
	check(same(sbuf + R2, 64, 30, 0),
	      "V-INV-3: the window stayed bound: a Write through QP a landed after QP b's Local Invalidate");
	finish(b);

	b = accept_one(NULL);
	send_msg(a, 3, 0, 0, 0);
	check(qp_event(b) == IBV_EVENT_QP_ACCESS_ERR,
	      "V-AMB-9: a peer's Send with Invalidate on QP b of a window bound through QP a: IBV_EVENT_QP_ACCESS_ERR on b");
	send_msg(a, 4, 0, 0, 0);
	recv_msg(a, 5);
	check(same(sbuf + R2 + 64, 64, 31, 0) &&
	      same(sbuf + R2 + 128, 64, 0, R2 + 128),
	      "V-AMB-9: the window stayed bound: a Write through QP a landed after the refused Send with Invalidate");
	check(local_inv(a, mw2->rkey) == IBV_WC_SUCCESS,
	      "V-INV-3: QP a, which bound the window, invalidates it");
	check(ibv_dealloc_mw(mw2) == 0 && ibv_dereg_mr(mr) == 0,
	      "dealloc and dereg after the invalidation tests");
	send_msg(a, 6, 0, 0, 0);
	finish(b);
	finish(a);
}

static void cli_inv_other(const char *addr, const char *port)
{
	struct conn *a = connect_one(addr, port), *b = connect_one(addr, port);
	struct msg m = recv_msg(a, 1);
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV };
	enum ibv_wc_status st;

	check(write64(a, 30, m.addr, m.rkey) == IBV_WC_SUCCESS,
	      "Write through the window on QP a after QP b's Local Invalidate");
	send_msg(a, 2, 0, 0, 0);
	finish(b);

	b = connect_one(addr, port);
	recv_msg(a, 3);
	sge = (struct ibv_sge){ (uintptr_t)&b->tx, sizeof(b->tx),
				b->txmr->lkey };
	b->tx.op = 7;
	wr.invalidate_rkey = m.rkey;
	st = post_wait(b, &wr, NULL);
	note("Send with Invalidate on QP b: %s", ibv_wc_status_str(st));
	recv_msg(a, 4);
	check(write64(a, 31, m.addr + 64, m.rkey) == IBV_WC_SUCCESS,
	      "Write through the window on QP a after the refused Send with Invalidate");
	send_msg(a, 5, 0, 0, 0);
	recv_msg(a, 6);
	finish(b);
	finish(a);
}

/* Post the list @wr (each signaled); their completion statuses in order. */
static int post_list(struct conn *c, struct ibv_send_wr *wr, int num,
		     enum ibv_wc_status *st, enum ibv_wc_opcode *op)
{
	struct ibv_send_wr *bad;
	int ret;

	for (int i = 0; i < num; i++) {
		wr[i].wr_id = 400 + i;
		wr[i].send_flags |= IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < num ? &wr[i + 1] : NULL;
	}
	ret = ibv_post_send(c->id->qp, wr, &bad);
	if (ret)
		return ret;
	for (int i = 0; i < num; i++) {
		struct ibv_wc wc = next_wc(c, 0);

		if (wc.wr_id != 400u + i)
			return -1;
		st[i] = wc.status;
		op[i] = wc.opcode;
	}
	return 0;
}

static void bind_wr(struct ibv_send_wr *wr, struct ibv_mw *mw, uint32_t key,
		    struct ibv_mr *mr)
{
	*wr = (struct ibv_send_wr){ .opcode = IBV_WR_BIND_MW };
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = key;
	wr->bind_mw.bind_info = (struct ibv_mw_bind_info){
		mr, (uintptr_t)sbuf + R2, R2LEN, RW };
}

static void inv_wr(struct ibv_send_wr *wr, uint32_t key)
{
	*wr = (struct ibv_send_wr){ .opcode = IBV_WR_LOCAL_INV,
				    .invalidate_rkey = key };
}

/* A Send of message @op carrying @rkey, for a post list. */
static void msg_wr(struct conn *c, struct ibv_send_wr *wr,
		   struct ibv_sge *sge, uint32_t op, uint32_t rkey)
{
	c->tx = (struct msg){ op, rkey, 0, 0, (uintptr_t)sbuf + R2 };
	*sge = (struct ibv_sge){ (uintptr_t)&c->tx, sizeof(c->tx),
				 c->txmr->lkey };
	*wr = (struct ibv_send_wr){ .sg_list = sge, .num_sge = 1,
				    .opcode = IBV_WR_SEND };
}

/*
 * Case G (V-FEN-1, V-INV-12): a Bind or a Local Invalidate takes effect
 * before the WRs posted behind it in the same ibv_post_send() list. Each
 * list's outcome depends on that: a Local Invalidate of the key a Bind
 * just gave, a Bind of a type 2 window just invalidated (a bound one
 * cannot be bound), and a Send whose receiver then uses the key.
 */
static void srv_same_post(struct conn *c)
{
	struct ibv_mr *mr = sreg(MR_ALL);
	struct ibv_mw *mw2 = salloc(IBV_MW_TYPE_2);
	uint32_t k1 = ibv_inc_rkey(mw2->rkey), k2 = ibv_inc_rkey(k1);
	uint32_t k3 = ibv_inc_rkey(k2);
	enum ibv_wc_status st[3] = { IBV_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR,
				     IBV_WC_GENERAL_ERR };
	enum ibv_wc_opcode op[3] = { 0 };
	struct ibv_send_wr wr[3];
	struct ibv_sge sge;
	int ret;

	bind_wr(&wr[0], mw2, k1, mr);
	inv_wr(&wr[1], k1);
	ret = post_list(c, wr, 2, st, op);
	check(!ret && st[0] == IBV_WC_SUCCESS &&
	      op[0] == IBV_WC_BIND_MW && st[1] == IBV_WC_SUCCESS &&
	      op[1] == IBV_WC_LOCAL_INV,
	      "V-FEN-1: a Bind and a Local Invalidate of its new key in one post both succeed (%s, %s)",
	      ibv_wc_status_str(st[0]), ibv_wc_status_str(st[1]));

	bind_wr(&wr[0], mw2, k2, mr);
	msg_wr(c, &wr[1], &sge, 1, k2);
	ret = post_list(c, wr, 2, st, op);
	check(!ret && st[0] == IBV_WC_SUCCESS &&
	      st[1] == IBV_WC_SUCCESS,
	      "V-FEN-1: a Bind and a Send carrying its new key in one post");
	recv_msg(c, 2);
	check(same(sbuf + R2, 64, 40, 0),
	      "V-FEN-1: the peer's Write with the key from the Send behind the Bind landed");

	inv_wr(&wr[0], k2);
	bind_wr(&wr[1], mw2, k3, mr);
	msg_wr(c, &wr[2], &sge, 3, k3);
	ret = post_list(c, wr, 3, st, op);
	check(!ret && st[0] == IBV_WC_SUCCESS &&
	      st[1] == IBV_WC_SUCCESS && op[1] == IBV_WC_BIND_MW &&
	      st[2] == IBV_WC_SUCCESS,
	      "V-INV-12: a Local Invalidate takes effect before the Bind of the same type 2 window behind it (%s, %s)",
	      ibv_wc_status_str(st[0]), ibv_wc_status_str(st[1]));
	recv_msg(c, 4);
	check(same(sbuf + R2 + 64, 64, 41, 0),
	      "V-INV-12: the peer's Write with the key of that Bind landed");

	inv_wr(&wr[0], k3);
	msg_wr(c, &wr[1], &sge, 5, k3);
	ret = post_list(c, wr, 2, st, op);
	check(!ret && st[0] == IBV_WC_SUCCESS &&
	      st[1] == IBV_WC_SUCCESS,
	      "V-INV-12: a Local Invalidate and a Send naming its key in one post");
	check(qp_event(c) == IBV_EVENT_QP_ACCESS_ERR,
	      "V-INV-12: the peer's Write with the key invalidated ahead of the Send: IBV_EVENT_QP_ACCESS_ERR");
	check(same(sbuf + R2 + 128, 64, 0, R2 + 128) &&
	      same(sbuf + R2 + 64, 64, 41, 0),
	      "V-INV-12: the Write with the invalidated key placed nothing");
	check(ibv_dealloc_mw(mw2) == 0 && ibv_dereg_mr(mr) == 0,
	      "dealloc and dereg after the same-post tests");
}

static void cli_same_post(struct conn *c)
{
	struct msg m = recv_msg(c, 1);

	check(write64(c, 40, m.addr, m.rkey) == IBV_WC_SUCCESS,
	      "Write with the key sent behind the Bind");
	send_msg(c, 2, 0, 0, 0);
	m = recv_msg(c, 3);
	check(write64(c, 41, m.addr + 64, m.rkey) == IBV_WC_SUCCESS,
	      "Write with the key of the Bind behind the Local Invalidate");
	send_msg(c, 4, 0, 0, 0);
	m = recv_msg(c, 5);
	check(write64(c, 42, m.addr + 128, m.rkey) == IBV_WC_SUCCESS,
	      "Write with the key invalidated ahead of the Send sent");
	check(qp_event(c) == IBV_EVENT_QP_ACCESS_ERR,
	      "V-INV-12: the invalidated key: the peer's Terminate gives IBV_EVENT_QP_ACCESS_ERR");
}

/*
 * Case H (V-DEALLOC-3): two MRs over one buffer; after one is
 * deregistered the other still takes Writes, and a Write through the
 * first places nothing and fails the connection.
 */
static void srv_two_mrs(struct conn *c)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *mra, *mrb;

	kt_fill(sbuf, BUF, 0, 0);
	mra = ibv_reg_mr(pd, sbuf, BUF, acc);
	mrb = ibv_reg_mr(pd, sbuf, BUF, acc);
	if (!mra || !mrb)
		die("ibv_reg_mr");
	send_msg(c, 1, (uintptr_t)sbuf, mra->rkey, mrb->rkey);
	recv_msg(c, 2);
	check(same(sbuf, 64, 50, 0) && same(sbuf + 4096, 64, 51, 0),
	      "V-DEALLOC-3: two MRs over one buffer both take Writes");
	check(ibv_dereg_mr(mra) == 0, "V-DEALLOC-3: dereg of the first MR");
	send_msg(c, 3, 0, 0, 0);
	check(qp_event(c) == IBV_EVENT_QP_ACCESS_ERR,
	      "V-DEALLOC-3: Write through the deregistered MR: IBV_EVENT_QP_ACCESS_ERR");
	check(same(sbuf + 8192, 64, 52, 0),
	      "V-DEALLOC-3: the Write through the other MR over the same memory landed");
	check(same(sbuf + 12288, 64, 0, 12288),
	      "V-DEALLOC-3: the Write through the deregistered MR placed nothing");
	check(ibv_dereg_mr(mrb) == 0, "dereg of the second MR");
}

static void cli_two_mrs(struct conn *c)
{
	struct msg m = recv_msg(c, 1);

	check(write64(c, 50, m.addr, m.rkey) == IBV_WC_SUCCESS,
	      "Write through the first of two MRs over one buffer");
	check(write64(c, 51, m.addr + 4096, m.rkey2) == IBV_WC_SUCCESS,
	      "Write through the second");
	send_msg(c, 2, 0, 0, 0);
	recv_msg(c, 3);
	check(write64(c, 52, m.addr + 8192, m.rkey2) == IBV_WC_SUCCESS,
	      "Write through the MR left, after the other's dereg");
	check(write64(c, 53, m.addr + 12288, m.rkey) == IBV_WC_SUCCESS,
	      "Write through the deregistered MR sent");
	check(qp_event(c) == IBV_EVENT_QP_ACCESS_ERR,
	      "V-DEALLOC-3: the deregistered MR: the peer's Terminate gives IBV_EVENT_QP_ACCESS_ERR");
}

/*
 * Case I: modifiers an opcode does not use change nothing (V-ARCH-7): a
 * Send with a remote address, rkey and imm_data, an RDMA Write with an
 * invalidate rkey (the window's own). Zero SGEs (V-AMB-25): a Send into a
 * receive with no SGE, and an RDMA Write, both of length 0.
 */
static void srv_modifiers(struct conn *c)
{
	struct ibv_mr *mr = sreg(MR_ALL);
	struct ibv_mw *mw2 = salloc(IBV_MW_TYPE_2);
	struct ibv_sge sge = { (uintptr_t)sbuf, 2048, mr->lkey };
	struct ibv_wc wc;

	check(bind2(c, mw2, mr, (uintptr_t)sbuf + R2, R2LEN, RW) ==
	      IBV_WC_SUCCESS, "type 2 window bound (modifier tests)");
	take_recvs(c);
	post_recv_sgl(c, 60, &sge, 1);
	post_recv_sgl(c, 61, NULL, 0);
	post_recv(c, 0);
	post_recv(c, 1);
	send_msg(c, 1, (uintptr_t)sbuf + R2, mw2->rkey, 0);
	wc = next_wc(c, 1);
	check(wc.wr_id == 60 && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RECV && wc.byte_len == 1000 &&
	      !(wc.wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)) &&
	      same(sbuf, 1000, 60, 0) && same(sbuf + 1000, 1048, 0, 1000),
	      "V-ARCH-7: a Send with a remote address, rkey and imm_data arrives as a plain Send, data checked (%s, %u bytes, flags 0x%x)",
	      ibv_wc_status_str(wc.status), wc.byte_len, wc.wc_flags);
	wc = next_wc(c, 1);
	check(wc.wr_id == 61 && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RECV && wc.byte_len == 0,
	      "V-AMB-25: a Send with no SGE completes a receive with no SGE, byte_len 0 (%s, %u)",
	      ibv_wc_status_str(wc.status), wc.byte_len);
	recv_msg(c, 2);
	check(same(sbuf + R2 + 192, 1000 - 192, 0, R2 + 192),
	      "V-ARCH-7: the Send's remote address and rkey were not written to");
	check(same(sbuf + R2, 64, 61, 0) && same(sbuf + R2 + 128, 64, 62, 0),
	      "V-ARCH-7: the Write with an invalidate rkey landed and left the window valid");
	check(same(sbuf + R2 + 64, 64, 0, R2 + 64),
	      "V-AMB-25: the Write with no SGE placed nothing");
	check(local_inv(c, mw2->rkey) == IBV_WC_SUCCESS &&
	      ibv_dealloc_mw(mw2) == 0 && ibv_dereg_mr(mr) == 0,
	      "invalidate, dealloc and dereg after the modifier tests");
	send_msg(c, 3, 0, 0, 0);
}

static void cli_modifiers(struct conn *c)
{
	struct ibv_sge sge = { (uintptr_t)lbuf, 1000, lmr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct msg m;

	fill_recvs(c);
	m = recv_msg(c, 1);
	kt_fill(lbuf, 1000, 60, 0);
	wr.wr.rdma.remote_addr = m.addr;
	wr.wr.rdma.rkey = m.rkey;
	wr.imm_data = htobe32(0x12345678);
	check(post_wait(c, &wr, NULL) == IBV_WC_SUCCESS,
	      "V-ARCH-7: Send with a remote address, rkey and imm_data");
	wr = (struct ibv_send_wr){ .opcode = IBV_WR_SEND };
	check(post_wait(c, &wr, NULL) == IBV_WC_SUCCESS,
	      "V-AMB-25: Send with no SGE");
	kt_fill(lbuf, 64, 61, 0);
	sge.length = 64;
	wr = (struct ibv_send_wr){ .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE,
				   .invalidate_rkey = m.rkey };
	wr.wr.rdma.remote_addr = m.addr;
	wr.wr.rdma.rkey = m.rkey;
	check(post_wait(c, &wr, NULL) == IBV_WC_SUCCESS,
	      "V-ARCH-7: RDMA Write with an invalidate rkey");
	wr = (struct ibv_send_wr){ .opcode = IBV_WR_RDMA_WRITE };
	wr.wr.rdma.remote_addr = m.addr + 64;
	wr.wr.rdma.rkey = m.rkey;
	check(post_wait(c, &wr, NULL) == IBV_WC_SUCCESS,
	      "V-AMB-25: RDMA Write with no SGE");
	check(write64(c, 62, m.addr + 128, m.rkey) == IBV_WC_SUCCESS,
	      "Write through the window after the one with an invalidate rkey");
	send_msg(c, 2, 0, 0, 0);
	recv_msg(c, 3);
}

static int server(const char *addr, const char *port)
{
	struct rdma_cm_id *lid = kc_listen_or_die(ch, addr, port, 4);
	struct conn *a, *b;

	if (posix_memalign((void **)&sbuf, 4096, BUF))
		die("posix_memalign");
	pd = ibv_alloc_pd(lid->verbs);
	if (!pd)
		die("ibv_alloc_pd");
	srv_limits(lid->verbs);
	note("listening");

	a = accept_one(lid);
	srv_data(a);
	finish(a);
	for (int k = 0; k < 3; k++) {
		a = accept_one(lid);
		srv_revoke(a, k == 1, k == 2);
		finish(a);
	}
	a = accept_one(lid);
	srv_rebind(a);
	finish(a);
	a = accept_one(lid);
	b = accept_one(lid);
	srv_two_qps(a, b);
	finish(b);
	finish(a);
	for (int k = 0; k < LKEY_NUM; k++) {
		a = accept_one(lid);
		srv_bad_lkey(a, k);
		finish(a);
	}
	srv_inv_other();
	a = accept_one(lid);
	srv_same_post(a);
	finish(a);
	a = accept_one(lid);
	srv_two_mrs(a);
	finish(a);
	a = accept_one(lid);
	srv_modifiers(a);
	finish(a);
	for (int k = 0; k < REF_NUM; k++) {
		a = accept_one(lid);
		srv_refuse(a, k);
		finish(a);
	}
	/*
	 * Last, exit with windows of both types bound: the kernel's cleanup
	 * must release them before their MR (mw.sh checks for leftovers and
	 * the kernel log).
	 */
	a = accept_one(lid);
	{
		struct ibv_mr *mr = sreg(MR_ALL);

		check(bind2(a, salloc(IBV_MW_TYPE_2), mr, (uintptr_t)sbuf,
			    100, RW) == IBV_WC_SUCCESS &&
		      bind1(a, salloc(IBV_MW_TYPE_1), mr, (uintptr_t)sbuf,
			    100, RW) == IBV_WC_SUCCESS,
		      "both types bound at exit");
	}
	return kt_end();
}

static int client(const char *addr, const char *port)
{
	struct conn *a, *b;

	a = connect_one(addr, port);
	cli_data(a);
	finish(a);
	for (int k = 0; k < 3; k++) {
		a = connect_one(addr, port);
		cli_revoke(a, k == 1, k == 2);
		finish(a);
	}
	a = connect_one(addr, port);
	cli_rebind(a);
	finish(a);
	a = connect_one(addr, port);
	b = connect_one(addr, port);
	cli_two_qps(a, b);
	finish(b);
	finish(a);
	for (int k = 0; k < LKEY_NUM; k++) {
		a = connect_one(addr, port);
		cli_bad_lkey(a, k);
		finish(a);
	}
	cli_inv_other(addr, port);
	a = connect_one(addr, port);
	cli_same_post(a);
	finish(a);
	a = connect_one(addr, port);
	cli_two_mrs(a);
	finish(a);
	a = connect_one(addr, port);
	cli_modifiers(a);
	finish(a);
	/* Refusals fail the server's QP; then it exits with windows bound. */
	for (int k = 0; k <= REF_NUM; k++) {
		int ev;

		a = connect_one(addr, port);
		wait_disconnected(a);
		/* The server's refused bind or invalidation sent a Terminate. */
		if (k < REF_NUM) {
			ev = qp_async(a, 5000);
			check(ev == IBV_EVENT_QP_FATAL,
			      "V-AMB-7, V-CS-3: refusal %d: the server's Terminate raised IBV_EVENT_QP_FATAL on our QP (%s)",
			      k, ev < 0 ? "none" : ibv_event_type_str(ev));
		}
		finish(a);
	}
	return kt_end();
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: kiwi_mw server|client ADDR PORT\n");
		return 2;
	}
	kt_start();
	/*
	 * The client starts its next connection as soon as it sees the last
	 * one up or ended: here its request may come before that event.
	 */
	kc_ended = conn_ended;
	kc_defer_requests = true;
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	server_side = !strcmp(argv[1], "server");
	if (server_side)
		return server(argv[2], argv[3]);
	if (!strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	return 2;
}
