// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libkiwi: completion queues, polled and armed without a system call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libkiwi.h"

struct kiwi_create_cq_cmd {
	struct ibv_create_cq ibv_cmd;
	struct kiwi_create_cq_req req;
};

struct kiwi_create_cq_uresp {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct kiwi_create_cq_resp resp;
};

/* Page-aligned, zeroed, and not inherited by fork()ed children. */
int kiwi_ring_alloc(struct kiwi_ring *ring, size_t bytes)
{
	long page = sysconf(_SC_PAGESIZE);

	ring->bytes = (bytes + page - 1) & ~(size_t)(page - 1);
	ring->addr = mmap(NULL, ring->bytes, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ring->addr == MAP_FAILED) {
		ring->addr = NULL;
		return errno;
	}
	madvise(ring->addr, ring->bytes, MADV_DONTFORK);
	return 0;
}

void kiwi_ring_free(struct kiwi_ring *ring)
{
	if (ring->addr)
		munmap(ring->addr, ring->bytes);
	ring->addr = NULL;
}

/* The CQ's ring, and the CQ in the kernel; 0 or an errno. */
static int kiwi_cq_init(struct kiwi_ucq *cq, struct ibv_context *ctx, int cqe,
			struct ibv_comp_channel *channel, int vector)
{
	struct kiwi_create_cq_uresp resp;
	struct kiwi_create_cq_cmd cmd;
	int ret;

	if (cqe < 1 || cqe > KIWI_MAX_CQE)
		return EINVAL;
	cq->num_cqe = kiwi_pow2_roundup(cqe);
	ret = kiwi_ring_alloc(&cq->ring,
			      KIWI_RING_BYTES(cq->num_cqe, sizeof(struct kiwi_cqe),
					      struct kiwi_cq_ctrl));
	if (ret)
		return ret;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->queue = cq->ring.addr;
	cq->ctrl = (struct kiwi_cq_ctrl *)(cq->queue + cq->num_cqe);

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	cmd.req.ring_va = (uintptr_t)cq->ring.addr;
	cmd.req.num_cqe = cq->num_cqe;
	ret = ibv_cmd_create_cq(ctx, cqe, channel, vector, &cq->vcq.cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		pthread_spin_destroy(&cq->lock);
		kiwi_ring_free(&cq->ring);
	}
	return ret;
}

struct ibv_cq *kiwi_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel, int vector)
{
	struct kiwi_ucq *cq = calloc(1, sizeof(*cq));
	int ret;

	if (!cq)
		return NULL;
	ret = kiwi_cq_init(cq, ctx, cqe, channel, vector);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	return &cq->vcq.cq;
}

struct kiwi_resize_cq_cmd {
	struct ibv_resize_cq ibv_cmd;
	struct kiwi_create_cq_req req;
};

struct kiwi_resize_cq_uresp {
	struct ib_uverbs_resize_cq_resp ibv_resp;
	struct kiwi_create_cq_resp resp;
};

/*
 * A new ring for the kernel to move the queued CQEs into (to its start, in
 * order); the CQ lock keeps pollers and arming off both rings meanwhile.
 */
int kiwi_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct kiwi_ucq *cq = to_ucq(ibcq);
	struct kiwi_resize_cq_uresp resp;
	struct kiwi_resize_cq_cmd cmd;
	struct kiwi_ring ring, old;
	uint32_t num;
	int ret;

	if (cqe < 1 || cqe > KIWI_MAX_CQE)
		return EINVAL;
	num = kiwi_pow2_roundup(cqe);
	ret = kiwi_ring_alloc(&ring, KIWI_RING_BYTES(num, sizeof(struct kiwi_cqe),
						     struct kiwi_cq_ctrl));
	if (ret)
		return ret;
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	cmd.req.ring_va = (uintptr_t)ring.addr;
	cmd.req.num_cqe = num;

	pthread_spin_lock(&cq->lock);
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret) {
		pthread_spin_unlock(&cq->lock);
		kiwi_ring_free(&ring);
		return ret;
	}
	old = cq->ring;
	cq->ring = ring;
	cq->num_cqe = num;
	cq->queue = ring.addr;
	cq->ctrl = (struct kiwi_cq_ctrl *)(cq->queue + num);
	cq->get = 0;
	pthread_spin_unlock(&cq->lock);
	kiwi_ring_free(&old);
	return 0;
}

int kiwi_destroy_cq(struct ibv_cq *ibcq)
{
	struct kiwi_ucq *cq = to_ucq(ibcq);
	int ret = ibv_cmd_destroy_cq(ibcq);

	if (ret)
		return ret;
	kiwi_ring_free(&cq->ring);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

int kiwi_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
	struct kiwi_ucq *cq = to_ucq(ibcq);
	int i;

	pthread_spin_lock(&cq->lock);
	for (i = 0; i < num; i++) {
		struct kiwi_cqe *cqe = &cq->queue[cq->get & (cq->num_cqe - 1)];
		uint8_t flags = __atomic_load_n(&cqe->flags, __ATOMIC_ACQUIRE);

		if (!(flags & KIWI_CQE_VALID))
			break;
		memset(&wc[i], 0, sizeof(wc[i]));
		wc[i].wr_id = cqe->id;
		wc[i].status = cqe->status;
		wc[i].opcode = cqe->opcode;
		wc[i].byte_len = cqe->bytes;
		wc[i].qp_num = cqe->qp_num;
		if (flags & KIWI_CQE_INVALIDATED) {
			wc[i].wc_flags |= IBV_WC_WITH_INV;
			wc[i].invalidated_rkey = cqe->inval_stag;
		}
		if (flags & KIWI_CQE_WITH_IMM) {
			wc[i].wc_flags |= IBV_WC_WITH_IMM;
			wc[i].imm_data = (__be32)cqe->imm_data;
		}
		/* Give the slot back to the kernel after reading it. */
		__atomic_store_n(&cqe->flags, 0, __ATOMIC_RELEASE);
		cq->get++;
	}
	pthread_spin_unlock(&cq->lock);
	return i;
}

/* The kernel disarms the CQ when it delivers the event. */
int kiwi_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct kiwi_ucq *cq = to_ucq(ibcq);
	uint32_t want = solicited_only ? KIWI_NOTIFY_SOLICITED : KIWI_NOTIFY_NEXT;
	uint32_t cur;

	/* The lock keeps a resize from moving the ring under us. */
	pthread_spin_lock(&cq->lock);
	/*
	 * Raise the arm, never lower it (V-NOT-7): a solicited-only request
	 * leaves an earlier "next" one in place. The kernel clears the word
	 * when it fires, so compare and swap. Sequentially consistent, a
	 * full barrier before the consumer polls again (V-NOT-8); an arm
	 * already in place needs none, the kernel fires on the next entry.
	 */
	cur = __atomic_load_n(&cq->ctrl->notify, __ATOMIC_SEQ_CST);
	while (cur < want &&
	       !__atomic_compare_exchange_n(&cq->ctrl->notify, &cur, want, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	pthread_spin_unlock(&cq->lock);
	return 0;
}

/*
 * The extended CQ (ibv_create_cq_ex). It is the same ring: ibv_poll_cq()
 * works on it too. ibv_start_poll() takes the lock and makes the oldest
 * entry current, ibv_next_poll() gives it back to the kernel and moves
 * on, ibv_end_poll() gives back the current one, if any, and unlocks.
 */
static inline struct kiwi_ucq *ex_to_ucq(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct kiwi_ucq, vcq.cq_ex);
}

/* Make the entry at cq->get current, if it is there. Context: locked. */
static int kiwi_cq_take(struct kiwi_ucq *cq)
{
	struct kiwi_cqe *cqe = &cq->queue[cq->get & (cq->num_cqe - 1)];

	if (!(__atomic_load_n(&cqe->flags, __ATOMIC_ACQUIRE) & KIWI_CQE_VALID)) {
		cq->cur = NULL;
		return ENOENT;
	}
	cq->cur = cqe;
	cq->vcq.cq_ex.wr_id = cqe->id;
	cq->vcq.cq_ex.status = cqe->status;
	return 0;
}

/* Give the current entry back to the kernel. Context: locked. */
static void kiwi_cq_give(struct kiwi_ucq *cq)
{
	if (!cq->cur)
		return;
	__atomic_store_n(&cq->cur->flags, 0, __ATOMIC_RELEASE);
	cq->cur = NULL;
	cq->get++;
}

static int kiwi_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct kiwi_ucq *cq = ex_to_ucq(ibcq);
	int ret;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	ret = kiwi_cq_take(cq);
	/* Without an entry, the consumer does not call ibv_end_poll(). */
	if (ret)
		pthread_spin_unlock(&cq->lock);
	return ret;
}

static int kiwi_next_poll(struct ibv_cq_ex *ibcq)
{
	struct kiwi_ucq *cq = ex_to_ucq(ibcq);

	kiwi_cq_give(cq);
	return kiwi_cq_take(cq);
}

static void kiwi_end_poll(struct ibv_cq_ex *ibcq)
{
	struct kiwi_ucq *cq = ex_to_ucq(ibcq);

	kiwi_cq_give(cq);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode kiwi_read_opcode(struct ibv_cq_ex *ibcq)
{
	return ex_to_ucq(ibcq)->cur->opcode;
}

static uint32_t kiwi_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return 0;
}

static uint32_t kiwi_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return ex_to_ucq(ibcq)->cur->bytes;
}

/*
 * The immediate data (RFC 7306), as the sender gave it; or the STag a
 * Send with Invalidate invalidated, which ibv_wc_read_invalidated_rkey()
 * reads here too and takes as it is, in host order (rdma-core's
 * providers do the same). One field holds either.
 */
static __be32 kiwi_read_imm_data(struct ibv_cq_ex *ibcq)
{
	const struct kiwi_cqe *cqe = ex_to_ucq(ibcq)->cur;

	return cqe->flags & (KIWI_CQE_INVALIDATED | KIWI_CQE_WITH_IMM) ?
	       (__be32)cqe->inval_stag : 0;
}

static uint32_t kiwi_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return ex_to_ucq(ibcq)->cur->qp_num;
}

static unsigned int kiwi_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	uint8_t flags = ex_to_ucq(ibcq)->cur->flags;

	return (flags & KIWI_CQE_INVALIDATED ? IBV_WC_WITH_INV : 0) |
	       (flags & KIWI_CQE_WITH_IMM ? IBV_WC_WITH_IMM : 0);
}

/* Datagram and IB link fields: 0, as ibv_poll_cq() reports them. */
static uint32_t kiwi_read_zero32(struct ibv_cq_ex *ibcq)
{
	return 0;
}

static uint8_t kiwi_read_zero8(struct ibv_cq_ex *ibcq)
{
	return 0;
}

/* What a kiwi CQ can report: no timestamps, VLANs, flow tags or TM. */
#define KIWI_WC_EX_FLAGS	IBV_WC_STANDARD_FLAGS

struct ibv_cq_ex *kiwi_create_cq_ex(struct ibv_context *ctx,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_ex *x;
	struct kiwi_ucq *cq;
	int ret;

	/* No parent domains; a CQ cannot ignore overruns. */
	if ((attr->wc_flags & ~(uint64_t)KIWI_WC_EX_FLAGS) ||
	    (attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = kiwi_cq_init(cq, ctx, attr->cqe, attr->channel, attr->comp_vector);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}
	x = &cq->vcq.cq_ex;
	x->start_poll = kiwi_start_poll;
	x->next_poll = kiwi_next_poll;
	x->end_poll = kiwi_end_poll;
	x->read_opcode = kiwi_read_opcode;
	x->read_vendor_err = kiwi_read_vendor_err;
	x->read_byte_len = kiwi_read_byte_len;
	x->read_imm_data = kiwi_read_imm_data;
	x->read_qp_num = kiwi_read_qp_num;
	x->read_src_qp = kiwi_read_zero32;
	x->read_wc_flags = kiwi_read_wc_flags;
	x->read_slid = kiwi_read_zero32;
	x->read_sl = kiwi_read_zero8;
	x->read_dlid_path_bits = kiwi_read_zero8;
	return x;
}
