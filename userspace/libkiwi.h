/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libkiwi: shared definitions of the provider.
 */
#ifndef LIBKIWI_H
#define LIBKIWI_H

#include <pthread.h>
#include <rdma/kiwi-abi.h>

#include "verbs_pabi.h"

/* A ring in our own memory that the kernel pins (see kiwi-abi.h). */
struct kiwi_ring {
	void *addr;
	size_t bytes;
};

int kiwi_ring_alloc(struct kiwi_ring *ring, size_t bytes);
void kiwi_ring_free(struct kiwi_ring *ring);

/*
 * A CQ, polled with ibv_poll_cq() or, made by ibv_create_cq_ex(), also
 * through ibv_start_poll(): @cur is then the entry the readers read, held
 * (with the lock) until ibv_next_poll() or ibv_end_poll() gives it back.
 */
struct kiwi_ucq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	struct kiwi_ring ring;
	struct kiwi_cqe *queue;
	struct kiwi_cq_ctrl *ctrl;
	struct kiwi_cqe *cur;
	uint32_t num_cqe;
	uint32_t get;
};

/* A shared receive queue: a ring of RQEs, posted into without a system call. */
struct kiwi_usrq {
	struct ibv_srq ibv_srq;
	pthread_spinlock_t lock;
	struct kiwi_ring ring;
	struct kiwi_rqe *rq;
	uint32_t num_rqe;
	uint32_t tail;
	uint32_t max_sge;
};

/*
 * A QP. One made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS also takes work
 * requests through ibv_wr_*() (kiwi_wr.c): between ibv_wr_start() and
 * ibv_wr_complete() or ibv_wr_abort() it holds sq_lock, and fills the
 * @wr_count entries from @wr_first on without publishing them (VALID
 * clear); @wr_cur is the one the setters complete, @wr_err the first error.
 */
struct kiwi_uqp {
	struct verbs_qp vqp;
	pthread_spinlock_t sq_lock;
	pthread_spinlock_t rq_lock;
	struct kiwi_ring sq_ring;
	struct kiwi_ring rq_ring;
	struct kiwi_sqe *sq;
	struct kiwi_rqe *rq;
	struct kiwi_sq_ctrl *ctrl;
	uint32_t num_sqe;
	uint32_t num_rqe;
	uint32_t sq_tail;
	uint32_t rq_tail;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
	uint32_t wr_first;
	uint32_t wr_count;
	struct kiwi_sqe *wr_cur;
	int wr_err;
};

static inline uint32_t kiwi_pow2_roundup(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static inline struct kiwi_ucq *to_ucq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct kiwi_ucq, vcq.cq);
}

static inline struct kiwi_uqp *to_uqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct kiwi_uqp, vqp.qp);
}

/* kiwi_cq.c */
struct ibv_cq *kiwi_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel, int vector);
struct ibv_cq_ex *kiwi_create_cq_ex(struct ibv_context *ctx,
				    struct ibv_cq_init_attr_ex *attr);
int kiwi_destroy_cq(struct ibv_cq *ibcq);
int kiwi_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc);
int kiwi_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
int kiwi_resize_cq(struct ibv_cq *ibcq, int cqe);

/* kiwi_qp.c */
struct ibv_qp *kiwi_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *kiwi_create_qp_ex(struct ibv_context *ctx,
				 struct ibv_qp_init_attr_ex *attr);
uint32_t kiwi_qp_state(struct kiwi_uqp *qp);
int kiwi_sqe_bind(struct kiwi_sqe *sqe, struct ibv_mw *mw, uint32_t rkey,
		  const struct ibv_mw_bind_info *bi, bool type1);
int kiwi_destroy_qp(struct ibv_qp *ibqp);
int kiwi_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask);
int kiwi_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init);
int kiwi_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
void kiwi_doorbell(struct ibv_qp *ibqp);
int kiwi_post_sqes(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr, uint16_t wqe_flags);
int kiwi_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
int kiwi_post_rqes(pthread_spinlock_t *lock, struct kiwi_rqe *ring,
		   uint32_t num, uint32_t *tail, uint32_t max_sge,
		   struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/* kiwi_wr.c */
#define KIWI_SEND_OPS	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND | \
			 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_LOCAL_INV | \
			 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV | \
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			 IBV_QP_EX_WITH_SEND_WITH_IMM | \
			 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
void kiwi_wr_ops_init(struct kiwi_uqp *qp);

/* kiwi_srq.c */
struct ibv_srq *kiwi_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
int kiwi_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		    int mask);
int kiwi_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int kiwi_destroy_srq(struct ibv_srq *ibsrq);
int kiwi_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);

/* kiwi_mr.c */
struct ibv_mr *kiwi_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t hca_va, int access);
int kiwi_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access);
int kiwi_dereg_mr(struct verbs_mr *vmr);

/* kiwi_mw.c */
struct ibv_mw *kiwi_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int kiwi_dealloc_mw(struct ibv_mw *mw);
int kiwi_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind);

#endif /* LIBKIWI_H */
