// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libkiwi: the work request API (ibv_wr_start(), the builders and setters,
 * ibv_wr_complete(), ibv_wr_abort()) of QPs made with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.
 *
 * Each builder fills the next send queue entry in the ring the kernel
 * reads, but leaves its VALID flag clear, so the kernel does not see it;
 * ibv_wr_complete() publishes the batch in order and kicks the kernel as
 * ibv_post_send() does, ibv_wr_abort() forgets it. The verbs give the
 * builders no way to fail: the first error is kept, and
 * ibv_wr_complete() returns it having posted nothing.
 */
#include <errno.h>
#include <string.h>

#include "libkiwi.h"

static struct kiwi_uqp *ex_to_uqp(struct ibv_qp_ex *qpx)
{
	return container_of(qpx, struct kiwi_uqp, vqp.qp_ex);
}

static void kiwi_wr_fail(struct kiwi_uqp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
	qp->wr_cur = NULL;
}

/* The @i-th entry of the batch. */
static struct kiwi_sqe *kiwi_wr_sqe(struct kiwi_uqp *qp, uint32_t i)
{
	return &qp->sq[(qp->wr_first + i) & (qp->num_sqe - 1)];
}

/*
 * A builder: the next entry, for @opcode, with the consumer's wr_id and
 * wr_flags; NULL once the batch has failed.
 */
static struct kiwi_sqe *kiwi_wr_new(struct ibv_qp_ex *qpx, uint8_t opcode)
{
	struct kiwi_uqp *qp = ex_to_uqp(qpx);
	struct kiwi_sqe *sqe;
	uint16_t flags = 0;

	if (qp->wr_err)
		return NULL;
	/* The ring has no room for another entry. */
	sqe = kiwi_wr_sqe(qp, qp->wr_count);
	if (qp->wr_count == qp->num_sqe ||
	    __atomic_load_n(&sqe->flags, __ATOMIC_ACQUIRE) & KIWI_WQE_VALID) {
		kiwi_wr_fail(qp, ENOMEM);
		return NULL;
	}
	memset(sqe, 0, sizeof(*sqe));
	if (qpx->wr_flags & IBV_SEND_SIGNALED)
		flags |= KIWI_WQE_SIGNALED;
	if (qpx->wr_flags & IBV_SEND_SOLICITED)
		flags |= KIWI_WQE_SOLICITED;
	if (qpx->wr_flags & IBV_SEND_FENCE)
		flags |= KIWI_WQE_READ_FENCE;
	sqe->opcode = opcode;
	sqe->id = qpx->wr_id;
	/* Not VALID: ibv_wr_complete() publishes it. */
	sqe->flags = flags;
	qp->wr_count++;
	qp->wr_cur = sqe;
	return sqe;
}

static void kiwi_wr_send(struct ibv_qp_ex *qpx)
{
	kiwi_wr_new(qpx, KIWI_WR_SEND);
}

static void kiwi_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct kiwi_sqe *sqe = kiwi_wr_new(qpx, KIWI_WR_SEND_INV);

	if (sqe)
		sqe->rkey = invalidate_rkey;
}

static void kiwi_wr_rdma(struct ibv_qp_ex *qpx, uint8_t opcode, uint32_t rkey,
			 uint64_t remote_addr)
{
	struct kiwi_sqe *sqe = kiwi_wr_new(qpx, opcode);

	if (sqe) {
		sqe->rkey = rkey;
		sqe->raddr = remote_addr;
	}
}

static void kiwi_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr)
{
	kiwi_wr_rdma(qpx, KIWI_WR_RDMA_WRITE, rkey, remote_addr);
}

static void kiwi_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr)
{
	kiwi_wr_rdma(qpx, KIWI_WR_RDMA_READ, rkey, remote_addr);
}

static void kiwi_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t remote_addr, __be32 imm)
{
	kiwi_wr_rdma(qpx, KIWI_WR_WRITE_IMM, rkey, remote_addr);
	if (ex_to_uqp(qpx)->wr_cur)
		ex_to_uqp(qpx)->wr_cur->imm_data = (uint32_t)imm;
}

static void kiwi_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct kiwi_sqe *sqe = kiwi_wr_new(qpx, KIWI_WR_SEND_IMM);

	if (sqe)
		sqe->imm_data = (uint32_t)imm;
}

/* RFC 7306 atomics: the local 8 bytes come with ibv_wr_set_sge(). */
static void kiwi_wr_atomic(struct ibv_qp_ex *qpx, uint8_t opcode,
			   uint32_t rkey, uint64_t remote_addr,
			   uint64_t compare_add, uint64_t swap)
{
	struct kiwi_sqe *sqe = kiwi_wr_new(qpx, opcode);

	if (sqe) {
		sqe->rkey = rkey;
		sqe->raddr = remote_addr;
		sqe->compare_add = compare_add;
		sqe->swap = swap;
	}
}

static void kiwi_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t remote_addr, uint64_t compare,
				   uint64_t swap)
{
	kiwi_wr_atomic(qpx, KIWI_WR_ATOMIC_CMP_SWP, rkey, remote_addr,
		       compare, swap);
}

static void kiwi_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				     uint64_t remote_addr, uint64_t add)
{
	kiwi_wr_atomic(qpx, KIWI_WR_ATOMIC_FETCH_ADD, rkey, remote_addr,
		       add, 0);
}

static void kiwi_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct kiwi_sqe *sqe = kiwi_wr_new(qpx, KIWI_WR_LOCAL_INV);

	if (sqe)
		sqe->rkey = invalidate_rkey;
}

/* A type 2 window, as with IBV_WR_BIND_MW; the consumer keeps the key. */
static void kiwi_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			    uint32_t rkey,
			    const struct ibv_mw_bind_info *bind_info)
{
	struct kiwi_uqp *qp = ex_to_uqp(qpx);
	struct kiwi_sqe *sqe = kiwi_wr_new(qpx, KIWI_WR_BIND_MW);
	int ret;

	if (!sqe)
		return;
	ret = kiwi_sqe_bind(sqe, mw, rkey, bind_info, false);
	if (ret)
		kiwi_wr_fail(qp, ret);
	/* No data setter applies to a bind. */
	qp->wr_cur = NULL;
}

/* The entry a data setter completes, or NULL (and EINVAL) if none may. */
static struct kiwi_sqe *kiwi_wr_data(struct kiwi_uqp *qp)
{
	struct kiwi_sqe *sqe = qp->wr_cur;

	if (qp->wr_err)
		return NULL;
	if (!sqe || sqe->opcode == KIWI_WR_LOCAL_INV) {
		kiwi_wr_fail(qp, EINVAL);
		return NULL;
	}
	return sqe;
}

static void kiwi_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				 const struct ibv_sge *sg_list)
{
	struct kiwi_uqp *qp = ex_to_uqp(qpx);
	struct kiwi_sqe *sqe = kiwi_wr_data(qp);
	size_t i;

	if (!sqe)
		return;
	/*
	 * An RDMA Read has one sink (max_sge_rd); an atomic one 8-byte
	 * buffer, and its operands lie over the SGEs after it.
	 */
	if (num_sge > qp->max_send_sge ||
	    (sqe->opcode == KIWI_WR_RDMA_READ && num_sge > 1) ||
	    ((sqe->opcode == KIWI_WR_ATOMIC_CMP_SWP ||
	      sqe->opcode == KIWI_WR_ATOMIC_FETCH_ADD) &&
	     (num_sge != 1 || sg_list[0].length != 8))) {
		kiwi_wr_fail(qp, EINVAL);
		return;
	}
	for (i = 0; i < num_sge; i++) {
		sqe->sge[i].addr = sg_list[i].addr;
		sqe->sge[i].length = sg_list[i].length;
		sqe->sge[i].lkey = sg_list[i].lkey;
	}
	sqe->num_sge = num_sge;
	sqe->flags &= ~KIWI_WQE_INLINE;
}

static void kiwi_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			    uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	kiwi_wr_set_sge_list(qpx, 1, &sge);
}

static void kiwi_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
					 const struct ibv_data_buf *buf_list)
{
	struct kiwi_uqp *qp = ex_to_uqp(qpx);
	struct kiwi_sqe *sqe = kiwi_wr_data(qp);
	uint8_t *dst;
	size_t i, len = 0;

	if (!sqe)
		return;
	/* Inline data is for Sends and RDMA Writes only. */
	if (sqe->opcode == KIWI_WR_RDMA_READ ||
	    sqe->opcode == KIWI_WR_ATOMIC_CMP_SWP ||
	    sqe->opcode == KIWI_WR_ATOMIC_FETCH_ADD) {
		kiwi_wr_fail(qp, EINVAL);
		return;
	}
	dst = (uint8_t *)sqe->sge;
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->max_inline - len) {
			kiwi_wr_fail(qp, EINVAL);
			return;
		}
		memcpy(dst + len, buf_list[i].addr, buf_list[i].length);
		len += buf_list[i].length;
	}
	sqe->num_sge = 0;
	sqe->inline_len = len;
	sqe->flags |= KIWI_WQE_INLINE;
}

static void kiwi_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				    size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	kiwi_wr_set_inline_data_list(qpx, 1, &buf);
}

static void kiwi_wr_start(struct ibv_qp_ex *qpx)
{
	struct kiwi_uqp *qp = ex_to_uqp(qpx);

	pthread_spin_lock(&qp->sq_lock);
	qp->wr_first = qp->sq_tail;
	qp->wr_count = 0;
	qp->wr_cur = NULL;
	qp->wr_err = 0;
}

/* Forget the batch: its entries were never VALID. Context: sq_lock held. */
static void kiwi_wr_drop(struct kiwi_uqp *qp)
{
	uint32_t i;

	for (i = 0; i < qp->wr_count; i++)
		kiwi_wr_sqe(qp, i)->flags = 0;
	qp->wr_count = 0;
	qp->wr_cur = NULL;
}

static int kiwi_wr_complete(struct ibv_qp_ex *qpx)
{
	struct kiwi_uqp *qp = ex_to_uqp(qpx);
	uint32_t state = kiwi_qp_state(qp);
	uint32_t i, n = qp->wr_count;
	int ret = qp->wr_err;

	/* Verbs: the send queue takes WRs in RTS, and in ERR to flush them. */
	if (!ret && state != IBV_QPS_RTS && state != IBV_QPS_ERR)
		ret = EINVAL;
	if (ret) {
		kiwi_wr_drop(qp);
		pthread_spin_unlock(&qp->sq_lock);
		return ret;
	}
	/* In order: the kernel stops at the first entry not VALID. */
	for (i = 0; i < n; i++) {
		struct kiwi_sqe *sqe = kiwi_wr_sqe(qp, i);

		__atomic_store_n(&sqe->flags, sqe->flags | KIWI_WQE_VALID,
				 __ATOMIC_RELEASE);
	}
	qp->sq_tail += n;
	qp->wr_count = 0;
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq_lock);
	/* Kick the kernel: it sends (RTS) or flushes (ERR) what is queued. */
	if (n)
		kiwi_doorbell(&qp->vqp.qp);
	return 0;
}

static void kiwi_wr_abort(struct ibv_qp_ex *qpx)
{
	struct kiwi_uqp *qp = ex_to_uqp(qpx);

	kiwi_wr_drop(qp);
	pthread_spin_unlock(&qp->sq_lock);
}

/*
 * Operations kiwi does not offer (create_qp_ex refuses to be asked for
 * them): a call fails the batch rather than crash the program.
 */
static void kiwi_wr_no_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz,
			   uint16_t mss)
{
	kiwi_wr_fail(ex_to_uqp(qpx), EOPNOTSUPP);
}

static void kiwi_wr_no_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			       uint32_t remote_qpn, uint32_t remote_qkey)
{
	kiwi_wr_fail(ex_to_uqp(qpx), EOPNOTSUPP);
}

static void kiwi_wr_no_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	kiwi_wr_fail(ex_to_uqp(qpx), EOPNOTSUPP);
}

static void kiwi_wr_no_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, const void *atomic_wr)
{
	kiwi_wr_fail(ex_to_uqp(qpx), EOPNOTSUPP);
}

void kiwi_wr_ops_init(struct kiwi_uqp *qp)
{
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;

	x->wr_start = kiwi_wr_start;
	x->wr_complete = kiwi_wr_complete;
	x->wr_abort = kiwi_wr_abort;
	x->wr_send = kiwi_wr_send;
	x->wr_send_inv = kiwi_wr_send_inv;
	x->wr_rdma_write = kiwi_wr_rdma_write;
	x->wr_rdma_read = kiwi_wr_rdma_read;
	x->wr_local_inv = kiwi_wr_local_inv;
	x->wr_bind_mw = kiwi_wr_bind_mw;
	x->wr_set_sge = kiwi_wr_set_sge;
	x->wr_set_sge_list = kiwi_wr_set_sge_list;
	x->wr_set_inline_data = kiwi_wr_set_inline_data;
	x->wr_set_inline_data_list = kiwi_wr_set_inline_data_list;
	x->wr_atomic_cmp_swp = kiwi_wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = kiwi_wr_atomic_fetch_add;
	x->wr_rdma_write_imm = kiwi_wr_rdma_write_imm;
	x->wr_send_imm = kiwi_wr_send_imm;
	x->wr_send_tso = kiwi_wr_no_tso;
	x->wr_set_ud_addr = kiwi_wr_no_ud_addr;
	x->wr_set_xrc_srqn = kiwi_wr_no_xrc_srqn;
	x->wr_atomic_write = kiwi_wr_no_atomic_write;
}
