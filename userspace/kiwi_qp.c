// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libkiwi: queue pairs. Work requests go straight into the rings the
 * kernel reads; a system call only kicks the kernel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libkiwi.h"

struct kiwi_create_qp_cmd {
	struct ibv_create_qp ibv_cmd;
	struct kiwi_create_qp_req req;
};

struct kiwi_create_qp_uresp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct kiwi_create_qp_resp resp;
};

/*
 * What libkiwi makes: RC QPs with the device's limits, whose ibv_wr_*()
 * opcodes, if asked for, are among KIWI_SEND_OPS. Return: 0 or the errno.
 */
static int kiwi_qp_attr_check(struct ibv_qp_init_attr_ex *attr)
{
	if (attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return EOPNOTSUPP;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;
	if (attr->qp_type != IBV_QPT_RC)
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & ~(uint64_t)KIWI_SEND_OPS))
		return EOPNOTSUPP;
	/* On an SRQ the receive queue sizes are ignored (V-SRQ-4). */
	if (attr->srq) {
		attr->cap.max_recv_wr = 0;
		attr->cap.max_recv_sge = 0;
	}
	if (attr->cap.max_send_wr > 16384 || attr->cap.max_recv_wr > 16384 ||
	    attr->cap.max_send_sge > KIWI_MAX_SGE ||
	    attr->cap.max_recv_sge > KIWI_MAX_SGE ||
	    attr->cap.max_inline_data > KIWI_MAX_INLINE)
		return EINVAL;
	return 0;
}

struct ibv_qp *kiwi_create_qp_ex(struct ibv_context *ctx,
				 struct ibv_qp_init_attr_ex *attr)
{
	struct kiwi_create_qp_uresp resp;
	struct kiwi_create_qp_cmd cmd;
	struct kiwi_uqp *qp;
	int ret;

	ret = kiwi_qp_attr_check(attr);
	if (ret) {
		errno = ret;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	qp->num_sqe = kiwi_pow2_roundup(attr->cap.max_send_wr ?: 1);
	/* A QP on an SRQ has no receive ring of its own. */
	qp->num_rqe = attr->srq ? 0 : kiwi_pow2_roundup(attr->cap.max_recv_wr ?: 1);
	ret = kiwi_ring_alloc(&qp->sq_ring,
			      KIWI_RING_BYTES(qp->num_sqe, sizeof(struct kiwi_sqe),
					      struct kiwi_sq_ctrl));
	if (ret)
		goto err;
	if (qp->num_rqe) {
		ret = kiwi_ring_alloc(&qp->rq_ring, (size_t)qp->num_rqe *
						    sizeof(struct kiwi_rqe));
		if (ret)
			goto err_sq;
	}
	qp->sq = qp->sq_ring.addr;
	qp->rq = qp->rq_ring.addr;
	qp->ctrl = (struct kiwi_sq_ctrl *)(qp->sq + qp->num_sqe);
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	cmd.req.sq_va = (uintptr_t)qp->sq_ring.addr;
	cmd.req.rq_va = (uintptr_t)qp->rq_ring.addr;	/* NULL with an SRQ */
	cmd.req.num_sqe = qp->num_sqe;
	cmd.req.num_rqe = qp->num_rqe;
	ret = ibv_cmd_create_qp_ex(ctx, &qp->vqp, attr, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_rq;

	qp->max_send_sge = attr->cap.max_send_sge;
	qp->max_recv_sge = attr->cap.max_recv_sge;
	qp->max_inline = attr->cap.max_inline_data;
	attr->cap.max_send_wr = qp->num_sqe;
	attr->cap.max_recv_wr = qp->num_rqe;
	/* ibv_qp_to_qp_ex() answers for QPs that asked for ibv_wr_*(). */
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		kiwi_wr_ops_init(qp);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;

err_rq:
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	kiwi_ring_free(&qp->rq_ring);
err_sq:
	kiwi_ring_free(&qp->sq_ring);
err:
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *kiwi_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ax = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp = kiwi_create_qp_ex(pd->context, &ax);

	if (qp)
		attr->cap = ax.cap;
	return qp;
}

int kiwi_destroy_qp(struct ibv_qp *ibqp)
{
	struct kiwi_uqp *qp = to_uqp(ibqp);
	int ret = ibv_cmd_destroy_qp(ibqp);

	if (ret)
		return ret;
	kiwi_ring_free(&qp->sq_ring);
	kiwi_ring_free(&qp->rq_ring);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	free(qp);
	return 0;
}

int kiwi_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct ibv_modify_qp cmd;

	memset(&cmd, 0, sizeof(cmd));
	return ibv_cmd_modify_qp(ibqp, attr, mask, &cmd, sizeof(cmd));
}

int kiwi_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init)
{
	struct ibv_query_qp cmd;

	memset(&cmd, 0, sizeof(cmd));
	return ibv_cmd_query_qp(ibqp, attr, mask, init, &cmd, sizeof(cmd));
}

uint32_t kiwi_qp_state(struct kiwi_uqp *qp)
{
	return __atomic_load_n(&qp->ctrl->state, __ATOMIC_ACQUIRE);
}

/*
 * A Bind MW request (see kiwi-abi.h) into @sqe: window @mw of the type
 * asked for, new key @rkey, which must keep the window's index.
 */
int kiwi_sqe_bind(struct kiwi_sqe *sqe, struct ibv_mw *mw, uint32_t rkey,
		  const struct ibv_mw_bind_info *bi, bool type1)
{
	if (!mw || mw->type != (type1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2) ||
	    (rkey >> 8) != (mw->rkey >> 8))
		return EINVAL;
	sqe->opcode = KIWI_WR_BIND_MW;
	sqe->rkey = rkey;
	sqe->raddr = bi->addr;
	sqe->bind.length = bi->length;
	sqe->bind.mr_lkey = bi->mr ? bi->mr->lkey : 0;
	sqe->bind.access = bi->mw_access_flags;
	return 0;
}

/* Fill @sqe from @wr; 0 or the errno verbs give for a bad WR. */
static int kiwi_fill_sqe(struct kiwi_uqp *qp, struct ibv_send_wr *wr,
			 struct kiwi_sqe *sqe, uint16_t flags)
{
	int i, ret;

	flags |= KIWI_WQE_VALID;
	memset(sqe, 0, sizeof(*sqe));
	if (wr->opcode == IBV_WR_BIND_MW) {
		ret = kiwi_sqe_bind(sqe, wr->bind_mw.mw, wr->bind_mw.rkey,
				    &wr->bind_mw.bind_info,
				    flags & KIWI_WQE_BIND_TYPE1);
		if (ret)
			return ret;
		goto done;
	}
	if (flags & KIWI_WQE_BIND_TYPE1)
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge)
		return EINVAL;
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
		sqe->opcode = KIWI_WR_RDMA_WRITE;
		break;
	case IBV_WR_RDMA_READ:
		sqe->opcode = KIWI_WR_RDMA_READ;
		break;
	case IBV_WR_SEND:
		sqe->opcode = KIWI_WR_SEND;
		break;
	case IBV_WR_SEND_WITH_IMM:
		sqe->opcode = KIWI_WR_SEND_IMM;
		sqe->imm_data = (uint32_t)wr->imm_data;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		sqe->opcode = KIWI_WR_WRITE_IMM;
		sqe->imm_data = (uint32_t)wr->imm_data;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		/* RFC 7306: the original value lands in one 8-byte SGE. */
		if (wr->num_sge != 1 || wr->sg_list[0].length != 8 ||
		    (wr->send_flags & IBV_SEND_INLINE))
			return EINVAL;
		sqe->opcode = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
			      KIWI_WR_ATOMIC_CMP_SWP : KIWI_WR_ATOMIC_FETCH_ADD;
		sqe->raddr = wr->wr.atomic.remote_addr;
		sqe->rkey = wr->wr.atomic.rkey;
		sqe->atomic_sge.addr = wr->sg_list[0].addr;
		sqe->atomic_sge.length = 8;
		sqe->atomic_sge.lkey = wr->sg_list[0].lkey;
		sqe->num_sge = 1;
		sqe->compare_add = wr->wr.atomic.compare_add;
		sqe->swap = wr->wr.atomic.swap;
		goto done;
	case IBV_WR_SEND_WITH_INV:
		sqe->opcode = KIWI_WR_SEND_INV;
		sqe->rkey = wr->invalidate_rkey;
		break;
	case IBV_WR_LOCAL_INV:
		sqe->opcode = KIWI_WR_LOCAL_INV;
		sqe->rkey = wr->invalidate_rkey;
		break;
	default:
		return EINVAL;
	}
	if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_READ ||
	    wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
		sqe->raddr = wr->wr.rdma.remote_addr;
		sqe->rkey = wr->wr.rdma.rkey;
	}
	if (wr->send_flags & IBV_SEND_SOLICITED)
		flags |= KIWI_WQE_SOLICITED;
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint8_t *dst = (uint8_t *)sqe->sge;
		uint32_t len = 0;

		if (wr->opcode == IBV_WR_RDMA_READ)
			return EINVAL;
		for (i = 0; i < wr->num_sge; i++) {
			if (wr->sg_list[i].length > qp->max_inline - len)
				return EINVAL;
			memcpy(dst + len, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		sqe->inline_len = len;
		flags |= KIWI_WQE_INLINE;
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			sqe->sge[i].addr = wr->sg_list[i].addr;
			sqe->sge[i].length = wr->sg_list[i].length;
			sqe->sge[i].lkey = wr->sg_list[i].lkey;
		}
		sqe->num_sge = wr->num_sge;
	}
done:
	if (wr->send_flags & IBV_SEND_SIGNALED)
		flags |= KIWI_WQE_SIGNALED;
	if (wr->send_flags & IBV_SEND_FENCE)
		flags |= KIWI_WQE_READ_FENCE;
	sqe->id = wr->wr_id;
	__atomic_store_n(&sqe->flags, flags, __ATOMIC_RELEASE);
	return 0;
}

/*
 * The doorbell: a POST_SEND command without work requests, written to the
 * command file (the uverbs write interface, stable since the beginning).
 * ibv_cmd_post_send() takes the ioctl interface's INVOKE_WRITE method,
 * which costs about 3 us more per post on the benchmark's VM (make
 * bench-profile), on the path of every small message's latency. Should
 * the write be refused, the doorbell falls back to ibv_cmd_post_send().
 */
void kiwi_doorbell(struct ibv_qp *ibqp)
{
	struct ib_uverbs_post_send_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} req = {
		.hdr = {
			.command = IB_USER_VERBS_CMD_POST_SEND,
			.in_words = sizeof(req) / 4,
			.out_words = sizeof(resp) / 4,
		},
		.cmd = {
			.response = (uintptr_t)&resp,
			.qp_handle = ibqp->handle,
			.wqe_size = sizeof(struct ib_uverbs_send_wr),
		},
	};
	struct ibv_send_wr *dummy;

	if (write(ibqp->context->cmd_fd, &req, sizeof(req)) != sizeof(req))
		ibv_cmd_post_send(ibqp, NULL, &dummy);
}

int kiwi_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	return kiwi_post_sqes(ibqp, wr, bad_wr, 0);
}

/* Post @wr's chain, each entry with @wqe_flags besides its own. */
int kiwi_post_sqes(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr, uint16_t wqe_flags)
{
	struct kiwi_uqp *qp = to_uqp(ibqp);
	uint32_t state = kiwi_qp_state(qp);
	int ret = 0;

	/* Verbs: the send queue takes WRs in RTS, and in ERR to flush them. */
	if (state != IBV_QPS_RTS && state != IBV_QPS_ERR) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->sq_lock);
	for (; wr; wr = wr->next) {
		struct kiwi_sqe *sqe = &qp->sq[qp->sq_tail & (qp->num_sqe - 1)];

		if (__atomic_load_n(&sqe->flags, __ATOMIC_ACQUIRE) &
		    KIWI_WQE_VALID) {
			ret = ENOMEM;
			break;
		}
		ret = kiwi_fill_sqe(qp, wr, sqe, wqe_flags);
		if (ret)
			break;
		qp->sq_tail++;
	}
	pthread_spin_unlock(&qp->sq_lock);
	if (ret)
		*bad_wr = wr;
	/* Kick the kernel: it sends (RTS) or flushes (ERR) what is queued. */
	kiwi_doorbell(ibqp);
	return ret;
}

/*
 * Post @wr.. into a receive ring (a QP's or an SRQ's) at *@tail under
 * @lock; 0 or the errno verbs give, with *@bad_wr set.
 */
int kiwi_post_rqes(pthread_spinlock_t *lock, struct kiwi_rqe *ring,
		   uint32_t num, uint32_t *tail, uint32_t max_sge,
		   struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	int ret = 0;
	int i;

	pthread_spin_lock(lock);
	for (; wr; wr = wr->next) {
		struct kiwi_rqe *rqe = &ring[*tail & (num - 1)];

		if (__atomic_load_n(&rqe->flags, __ATOMIC_ACQUIRE) &
		    KIWI_WQE_VALID) {
			ret = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge) {
			ret = EINVAL;
			break;
		}
		for (i = 0; i < wr->num_sge; i++) {
			rqe->sge[i].addr = wr->sg_list[i].addr;
			rqe->sge[i].length = wr->sg_list[i].length;
			rqe->sge[i].lkey = wr->sg_list[i].lkey;
		}
		rqe->num_sge = wr->num_sge;
		rqe->id = wr->wr_id;
		__atomic_store_n(&rqe->flags, KIWI_WQE_VALID, __ATOMIC_RELEASE);
		(*tail)++;
	}
	pthread_spin_unlock(lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

int kiwi_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct kiwi_uqp *qp = to_uqp(ibqp);
	uint32_t state = kiwi_qp_state(qp);
	struct ibv_recv_wr *dummy;
	int ret;

	/* A QP on an SRQ takes receives from it only (V-SRQ-5). */
	if (state == IBV_QPS_RESET || ibqp->srq) {
		*bad_wr = wr;
		return EINVAL;
	}
	ret = kiwi_post_rqes(&qp->rq_lock, qp->rq, qp->num_rqe, &qp->rq_tail,
			     qp->max_recv_sge, wr, bad_wr);
	/* Receives are consumed by arriving data; only a failed QP needs a
	 * kick, to flush them.
	 */
	if (kiwi_qp_state(qp) == IBV_QPS_ERR)
		ibv_cmd_post_recv(ibqp, NULL, &dummy);
	return ret;
}
