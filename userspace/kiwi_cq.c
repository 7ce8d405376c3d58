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

struct ibv_cq *kiwi_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel, int vector)
{
	struct kiwi_create_cq_uresp resp;
	struct kiwi_create_cq_cmd cmd;
	struct kiwi_ucq *cq;
	int ret;

	if (cqe < 1 || cqe > 65536) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	cq->num_cqe = kiwi_pow2_roundup(cqe);
	ret = kiwi_ring_alloc(&cq->ring,
			      KIWI_RING_BYTES(cq->num_cqe, sizeof(struct kiwi_cqe),
					      struct kiwi_cq_ctrl));
	if (ret)
		goto err;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->queue = cq->ring.addr;
	cq->ctrl = (struct kiwi_cq_ctrl *)(cq->queue + cq->num_cqe);

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	cmd.req.ring_va = (uintptr_t)cq->ring.addr;
	cmd.req.num_cqe = cq->num_cqe;
	ret = ibv_cmd_create_cq(ctx, cqe, channel, vector, &cq->ibv_cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto err_ring;
	return &cq->ibv_cq;

err_ring:
	kiwi_ring_free(&cq->ring);
err:
	free(cq);
	errno = ret;
	return NULL;
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
	struct kiwi_ucq *cq = container_of(ibcq, struct kiwi_ucq, ibv_cq);
	struct kiwi_resize_cq_uresp resp;
	struct kiwi_resize_cq_cmd cmd;
	struct kiwi_ring ring, old;
	uint32_t num;
	int ret;

	if (cqe < 1 || cqe > 65536)
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
	struct kiwi_ucq *cq = container_of(ibcq, struct kiwi_ucq, ibv_cq);
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
	struct kiwi_ucq *cq = container_of(ibcq, struct kiwi_ucq, ibv_cq);
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
	struct kiwi_ucq *cq = container_of(ibcq, struct kiwi_ucq, ibv_cq);
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
