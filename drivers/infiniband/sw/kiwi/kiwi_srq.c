// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: shared receive queues.
 *
 * An SRQ is a ring of receive WQEs (struct kiwi_rqe) like a QP's receive
 * queue: in kernel memory for kernel consumers, in pinned user memory for
 * libkiwi, which posts into it without a system call. Producers fill the
 * entry at their tail and publish it with its VALID flag; the receive
 * engines of every QP on the SRQ take entries at @head, in ring order, when
 * a new Send message starts. A taken entry is copied into the QP's receive
 * engine and its slot freed at once, so the consumer can post again before
 * the message even completes (V-SRQ-6); the completion goes to the QP's
 * receive CQ (V-SRQ-3).
 *
 * Entries are filled in ring order and taken in ring order, so the posted
 * entries are exactly those from @head onwards that have VALID set: at
 * least n are posted when the entry n - 1 places after @head is VALID.
 * That is how the limit event (V-SRQ-15) is detected without a count that
 * user space would have to maintain.
 *
 * WQEs no QP has taken stay on the SRQ when a QP fails (V-FL-6); the one a
 * QP had taken for a message in progress is completed as flushed by that QP
 * (kiwi_qp_flush()), after which the QP reports IB_EVENT_QP_LAST_WQE_REACHED.
 *
 * Locking: @lock is innermost; it is taken with interrupts off by kernel
 * posters (any context) and by the receive engines (softirq, socket lock
 * held), and nothing else is taken under it. Events are dispatched after it
 * is dropped.
 */

#include <linux/log2.h>
#include <linux/vmalloc.h>
#include <rdma/ib_user_verbs.h>

#include "kiwi.h"
#include "kiwi_fault.h"

static size_t kiwi_srq_bytes(u32 num)
{
	return (size_t)num * sizeof(struct kiwi_rqe);
}

static int kiwi_srq_user_ring(struct kiwi_srq *srq, u32 max_wr,
			      struct ib_udata *udata)
{
	struct kiwi_create_srq_resp resp = {};
	struct kiwi_create_srq_req req;
	int ret;

	ret = kiwi_udata_req(udata, &req, sizeof(req), sizeof(resp));
	if (ret)
		return ret;
	if (req.reserved || !is_power_of_2(req.num_rqe) ||
	    req.num_rqe > KIWI_MAX_SRQ_WR || req.num_rqe < max_wr)
		return -EINVAL;
	ret = kiwi_user_ring_pin(srq->base_srq.device, req.ring_va,
				 kiwi_srq_bytes(req.num_rqe), &srq->user_ring);
	if (ret)
		return ret;
	srq->num = req.num_rqe;
	srq->ring = srq->user_ring.addr;

	resp.num_rqe = srq->num;
	ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (ret)
		kiwi_user_ring_unpin(&srq->user_ring);
	return ret;
}

/**
 * kiwi_create_srq() - create a basic SRQ
 * @ibsrq: the core's SRQ, allocated with ours around it
 * @init: max_wr, max_sge and srq_limit asked for; max_wr and max_sge are
 *	set to what the SRQ holds
 * @udata: struct kiwi_create_srq_req in and _resp out for libkiwi
 *
 * A non-zero srq_limit arms the limit event at once (V-SRQ-15).
 *
 * Context: process context; sleeps.
 * Return: 0; -EOPNOTSUPP for XRC and tag-matching SRQs; -EINVAL when
 * max_wr, max_sge or srq_limit exceed what the device reports or the SRQ
 * holds; -ENOMEM beyond max_srq or without memory.
 */
int kiwi_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibsrq->device);
	struct kiwi_srq *srq = to_ksrq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	int ret;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (attr->max_wr > KIWI_MAX_SRQ_WR || attr->max_sge > KIWI_MAX_SGE)
		return -EINVAL;
	if (atomic_inc_return(&kdev->num_srq) > KIWI_MAX_SRQ) {
		ret = -ENOMEM;
		goto err_count;
	}

	spin_lock_init(&srq->lock);
	srq->max_sge = attr->max_sge;
	if (udata) {
		ret = kiwi_srq_user_ring(srq, attr->max_wr, udata);
	} else {
		srq->num = roundup_pow_of_two(max(attr->max_wr, 1U));
		srq->ring = kiwi_fault() ? NULL :
			    vzalloc(kiwi_srq_bytes(srq->num));
		ret = srq->ring ? 0 : -ENOMEM;
	}
	if (ret)
		goto err_count;
	if (attr->srq_limit > srq->num) {
		ret = -EINVAL;
		goto err_ring;
	}
	srq->limit = attr->srq_limit;
	attr->max_wr = srq->num;
	return 0;

err_ring:
	if (srq->user_ring.umem)
		kiwi_user_ring_unpin(&srq->user_ring);
	else
		vfree(srq->ring);
err_count:
	atomic_dec(&kdev->num_srq);
	return ret;
}

/**
 * kiwi_modify_srq() - arm the limit event
 * @ibsrq: the SRQ
 * @attr: srq_limit to arm (0 disarms)
 * @mask: IB_SRQ_LIMIT; IB_SRQ_MAX_WR is refused, kiwi does not resize
 *	SRQs (V-SRQ-13 is optional, and IB_DEVICE_SRQ_RESIZE is not set)
 * @udata: unused
 *
 * Re-arming an armed limit just replaces it (V-SRQ-15).
 *
 * Context: any; takes @lock.
 * Return: 0, or -EINVAL for a resize, an unknown mask bit or a limit beyond
 * the SRQ's size (V-SRQ-16).
 */
int kiwi_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);
	unsigned long flags;

	if (mask & ~IB_SRQ_LIMIT)
		return -EINVAL;
	if ((mask & IB_SRQ_LIMIT) && attr->srq_limit > srq->num)
		return -EINVAL;
	if (mask & IB_SRQ_LIMIT) {
		spin_lock_irqsave(&srq->lock, flags);
		srq->limit = attr->srq_limit;
		spin_unlock_irqrestore(&srq->lock, flags);
	}
	return 0;
}

/* srq_limit reads 0 once the limit event has fired (it disarms). */
int kiwi_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);

	attr->max_wr = srq->num;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

/*
 * The core refuses to destroy an SRQ while a QP uses it (srq->usecnt,
 * -EBUSY, V-SRQ-14), so no receive engine can reach the ring any more.
 */
int kiwi_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);

	if (srq->user_ring.umem)
		kiwi_user_ring_unpin(&srq->user_ring);
	else
		vfree(srq->ring);
	atomic_dec(&to_kdev(ibsrq->device)->num_srq);
	return 0;
}

/*
 * Kernel consumers post into the ring like libkiwi does. User SRQs are
 * posted to in user space only.
 */
int kiwi_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);
	unsigned long flags;
	int ret = 0;

	if (ibsrq->uobject) {
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		struct kiwi_rqe *rqe = srq->ring + (srq->tail & (srq->num - 1));

		if (rqe->flags & KIWI_WQE_VALID) {
			ret = -ENOMEM;
			break;
		}
		if (wr->num_sge > srq->max_sge) {
			ret = -EINVAL;
			break;
		}
		kiwi_rqe_from_wr(rqe, wr);
		srq->tail++;
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/**
 * kiwi_srq_take() - take the next WQE off an SRQ for a new Send message
 * @srq: the SRQ of the receiving QP
 * @rqe: where to copy the WQE; the caller validates every field
 *
 * When the WQEs left drop below the armed limit, the limit disarms and
 * IB_EVENT_SRQ_LIMIT_REACHED goes to the SRQ's handler, once (V-SRQ-15).
 *
 * Context: the receive engine (softirq or process context); takes @lock
 * with interrupts off.
 * Return: true, or false when the SRQ is empty.
 */
bool kiwi_srq_take(struct kiwi_srq *srq, struct kiwi_rqe *rqe)
{
	u32 mask = srq->num - 1;
	struct kiwi_rqe *slot;
	unsigned long flags;
	bool fire = false;

	spin_lock_irqsave(&srq->lock, flags);
	slot = srq->ring + (srq->head & mask);
	if (!(kiwi_ring_flags(&slot->flags) & KIWI_WQE_VALID)) {
		spin_unlock_irqrestore(&srq->lock, flags);
		return false;
	}
	memcpy(rqe, slot, sizeof(*rqe));
	kiwi_ring_set_flags(&slot->flags, 0);
	srq->head++;
	/* Fewer than @limit left: the one @limit - 1 after @head is free. */
	if (srq->limit) {
		slot = srq->ring + ((srq->head + srq->limit - 1) & mask);
		if (!(kiwi_ring_flags(&slot->flags) & KIWI_WQE_VALID)) {
			WRITE_ONCE(srq->limit, 0);
			fire = true;
		}
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (fire && srq->base_srq.event_handler) {
		struct ib_event ev = {
			.device = srq->base_srq.device,
			.element.srq = &srq->base_srq,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
		};

		srq->base_srq.event_handler(&ev, srq->base_srq.srq_context);
	}
	return true;
}
