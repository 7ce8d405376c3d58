// SPDX-License-Identifier: GPL-2.0
/*
 * The verbs objects of one end of a connection (see kiwi_peer.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "kiwi_peer.h"
#include "kiwi_test.h"

/* The objects after the PD; the PD, CQs and SRQ are made by then. */
static int open_qp_mem(struct kp_peer *p, const struct kp_caps *c)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = p->scq, .recv_cq = p->rcq, .srq = p->srq,
		.qp_type = IBV_QPT_RC, .sq_sig_all = c->sig_all,
		.cap = { .max_send_wr = c->send_wr, .max_recv_wr = c->recv_wr,
			 .max_send_sge = c->send_sge,
			 .max_recv_sge = c->recv_sge,
			 .max_inline_data = c->inline_data },
	};

	if (c->buf_len) {
		p->buf = aligned_alloc(4096, (c->buf_len + 4095) & ~4095ul);
		if (!p->buf)
			return -1;
		memset(p->buf, 0, c->buf_len);
		p->mr = ibv_reg_mr(p->pd, p->buf, c->buf_len, c->access);
		if (!p->mr)
			return -1;
	}
	if (p->id && c->send_ops) {
		struct ibv_qp_init_attr_ex qx = {
			.send_cq = qa.send_cq, .recv_cq = qa.recv_cq,
			.srq = qa.srq, .qp_type = IBV_QPT_RC,
			.sq_sig_all = qa.sq_sig_all, .cap = qa.cap, .pd = p->pd,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = c->send_ops,
		};

		if (rdma_create_qp_ex(p->id, &qx))
			return -1;
		p->qp = p->id->qp;
	} else if (p->id) {
		if (rdma_create_qp(p->id, p->pd, &qa))
			return -1;
		p->qp = p->id->qp;
	} else {
		p->qp = ibv_create_qp(p->pd, &qa);
		if (!p->qp)
			return -1;
	}
	return 0;
}

int kp_open(struct kp_peer *p, struct rdma_cm_id *id,
	    const struct kp_caps *c)
{
	int cqe = c->cqe ?: (int)(c->send_wr + c->recv_wr);

	memset(p, 0, sizeof(*p));
	p->id = id;
	p->ctx = id ? id->verbs : c->pd->context;
	p->pd = c->pd;
	p->scq = c->scq;
	p->rcq = c->rcq;
	p->srq = c->srq;
	if (!p->pd) {
		p->pd = ibv_alloc_pd(p->ctx);
		p->own_pd = p->pd;
	}
	if (p->pd && !p->scq) {
		p->scq = ibv_create_cq(p->ctx, c->send_cqe ?: cqe, NULL,
				       c->chan, 0);
		p->own_scq = p->scq;
	}
	if (!p->rcq && !c->two_cqs) {
		p->rcq = p->scq;
	} else if (p->scq && !p->rcq) {
		p->rcq = ibv_create_cq(p->ctx, cqe, NULL, c->chan, 0);
		p->own_rcq = p->rcq;
	}
	if (p->rcq && c->srq_wr) {
		struct ibv_srq_init_attr sa = {
			.attr = { .max_wr = c->srq_wr,
				  .max_sge = c->recv_sge },
		};

		p->srq = ibv_create_srq(p->pd, &sa);
		p->own_srq = p->srq;
	}
	if (!p->rcq || (c->srq_wr && !p->srq) || open_qp_mem(p, c)) {
		int err = errno;

		note("make the QP and its objects: %s", strerror(err));
		kp_close(p);
		errno = err;
		return -1;
	}
	return 0;
}

void kp_open_or_die(struct kp_peer *p, struct rdma_cm_id *id,
		    const struct kp_caps *caps)
{
	if (kp_open(p, id, caps))
		die("make the QP and its objects");
}

int kp_close(struct kp_peer *p)
{
	int ret = 0;

	/* A QP its owner destroyed already is NULL in the cm_id. */
	if (p->id && p->id->qp)
		rdma_destroy_qp(p->id);
	else if (!p->id && p->qp)
		ret = ibv_destroy_qp(p->qp);
	if (p->own_srq)
		ret = ret ?: ibv_destroy_srq(p->srq);
	if (p->mr)
		ret = ret ?: ibv_dereg_mr(p->mr);
	if (p->own_rcq && p->rcq != p->scq)
		ret = ret ?: ibv_destroy_cq(p->rcq);
	if (p->own_scq)
		ret = ret ?: ibv_destroy_cq(p->scq);
	if (p->own_pd)
		ret = ret ?: ibv_dealloc_pd(p->pd);
	free(p->buf);
	memset(p, 0, sizeof(*p));
	return ret;
}

int kp_post_recv(struct ibv_qp *qp, uint64_t wr_id, const void *addr,
		 uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

int kp_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, const void *addr,
		     uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

int kp_post_send(struct ibv_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op,
		 unsigned int flags, const void *addr, uint32_t len,
		 uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = op,
				  .send_flags = flags }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

int kp_poll(struct ibv_cq *cq, struct ibv_wc *wc, int want, int ms)
{
	int got = 0;

	for (int spin = 0; spin < ms && got < want; spin++) {
		int r = ibv_poll_cq(cq, want - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (got < want)
			poll(NULL, 0, 1);
	}
	return got;
}

bool kp_cq_quiet(struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc;

	poll(NULL, 0, ms);
	return ibv_poll_cq(cq, 1, &wc) == 0;
}

bool kp_cq_event(struct ibv_comp_channel *ch, struct ibv_cq *cq, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (poll(&p, 1, ms) != 1 || ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
		return false;
	ibv_ack_cq_events(ev_cq, 1);
	return ev_cq == cq;
}

bool kp_async(struct ibv_context *ctx, struct ibv_async_event *ev, int ms)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };

	/* Another reader may have taken the event poll() saw. */
	fcntl(ctx->async_fd, F_SETFL,
	      fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	if (poll(&p, 1, ms) != 1 || ibv_get_async_event(ctx, ev))
		return false;
	ibv_ack_async_event(ev);
	return true;
}

int kp_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	return ibv_query_qp(qp, &a, IBV_QP_STATE, &init) ? -1 :
							   (int)a.qp_state;
}

int kp_modify(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = { .qp_state = state };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

int kp_wait_state(struct ibv_qp *qp, enum ibv_qp_state want, int ms)
{
	double end = now() + ms / 1000.0;
	int st;

	while ((st = kp_qp_state(qp)) != (int)want && st >= 0 && now() < end)
		poll(NULL, 0, 1);
	return st;
}
