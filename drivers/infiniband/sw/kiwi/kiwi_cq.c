// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: completion queues.
 *
 * A CQ is a ring of struct kiwi_cqe handed between producer (the kernel)
 * and consumer (libkiwi or a kernel poller) by each entry's VALID flag; see
 * include/uapi/rdma/kiwi-abi.h. A full ring is never overwritten: the
 * completion is refused, the CQ reports IB_EVENT_CQ_ERR and the caller moves
 * the QP to error.
 *
 * Completion vector N is the N-th online CPU (device creation made one
 * vector per online CPU), and a CQ's completion handler runs on its
 * vector's CPU: inline when the completion arises there, else from an
 * asynchronous cross-CPU call to that CPU (hard interrupt context, as a
 * NIC's MSI-X vector would run it). So a consumer that spreads CQs over vectors
 * spreads its completion processing over CPUs, and a CQ's processing stays
 * on one CPU's caches.
 *
 * Context: kiwi_cq_add() may run in any context, softirq included; it takes
 * cq->lock with interrupts off and calls, or queues, the consumer's
 * completion handler after dropping it.
 */

#include <linux/log2.h>
#include <linux/vmalloc.h>
#include <rdma/ib_user_verbs.h>

#include "kiwi.h"
#include "kiwi_trace.h"
#include "kiwi_fault.h"

static size_t kiwi_cq_ring_bytes(u32 num_cqe)
{
	return KIWI_RING_BYTES(num_cqe, sizeof(struct kiwi_cqe),
			       struct kiwi_cq_ctrl);
}

/*
 * Pin and map the ring libkiwi names in @udata (create and resize), of at
 * least @cqe entries, and tell libkiwi its size.
 */
static int kiwi_cq_user_ring(struct ib_device *ibdev, int cqe,
			     struct ib_udata *udata, struct kiwi_user_ring *user_ring,
			     u32 *num_cqe)
{
	struct kiwi_create_cq_resp resp = {};
	struct kiwi_create_cq_req req;
	int ret;

	ret = kiwi_udata_req(udata, &req, sizeof(req), sizeof(resp));
	if (ret)
		return ret;
	if (req.reserved || !is_power_of_2(req.num_cqe) ||
	    req.num_cqe < cqe || req.num_cqe > KIWI_MAX_CQE)
		return -EINVAL;

	ret = kiwi_user_ring_pin(ibdev, req.ring_va, kiwi_cq_ring_bytes(req.num_cqe),
				 user_ring);
	if (ret)
		return ret;
	resp.num_cqe = req.num_cqe;
	ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (ret) {
		kiwi_user_ring_unpin(user_ring);
		return ret;
	}
	*num_cqe = req.num_cqe;
	return 0;
}

/* The CPU of completion vector @vector: the @vector-th online CPU. */
static int kiwi_vector_cpu(int vector)
{
	int cpu, n = 0;

	for_each_online_cpu(cpu)
		if (n++ == vector)
			return cpu;
	/* CPUs went offline since the device counted them. */
	return cpumask_first(cpu_online_mask);
}

/**
 * kiwi_get_vector_affinity() - the CPU a completion vector's events run on
 * @ibdev: the device
 * @comp_vector: the vector
 *
 * Lets kernel consumers (blk-mq's RDMA queue mapping, for one) place their
 * queues next to the CPU their completions arrive on.
 *
 * Return: a mask of that one CPU.
 */
const struct cpumask *kiwi_get_vector_affinity(struct ib_device *ibdev,
					       int comp_vector)
{
	if (comp_vector < 0 || comp_vector >= ibdev->num_comp_vectors)
		return NULL;
	return cpumask_of(kiwi_vector_cpu(comp_vector));
}

static void kiwi_cq_notify_remote(void *arg)
{
	struct kiwi_cq *cq = arg;

	/* A notice from now on queues again (the csd is free already). */
	atomic_set(&cq->notify_pending, 0);
	this_cpu_inc(kiwi_cq_cpu_stats.handlers);
	this_cpu_inc(kiwi_cq_cpu_stats.remote);
	cq->base_cq.comp_handler(&cq->base_cq, cq->base_cq.cq_context);
	atomic_dec(&cq->notify_busy);
}

/*
 * Run a kernel CQ's completion handler on its vector's CPU. A notice that
 * comes while an earlier one is queued merges with it: the handler still
 * runs after both completions, and the consumer polls everything there is.
 *
 * A user CQ's handler runs here: all it does is wake the process waiting
 * on the completion channel, whose polling runs wherever that process
 * does. A hop through the vector's CPU would only add a cross-CPU call,
 * and when the waiter is this CPU's own task (a Send's completion arises
 * in its own POST_SEND call) it would put that task to sleep on the event
 * it was about to read (kiwi.rst, "Completion vectors").
 */
static void kiwi_cq_notify(struct kiwi_cq *cq)
{
	int cpu;

	if (!cq->base_cq.comp_handler)
		return;
	cpu = get_cpu();
	if (cpu != cq->cpu && !cq->base_cq.uobject && cpu_online(cq->cpu)) {
		put_cpu();
		if (atomic_xchg(&cq->notify_pending, 1))
			return;
		atomic_inc(&cq->notify_busy);
		if (!smp_call_function_single_async(cq->cpu, &cq->notify_csd))
			return;
		/* The CPU went away: run it here after all. */
		atomic_set(&cq->notify_pending, 0);
		atomic_dec(&cq->notify_busy);
		cpu = get_cpu();
	}
	this_cpu_inc(kiwi_cq_cpu_stats.handlers);
	cq->base_cq.comp_handler(&cq->base_cq, cq->base_cq.cq_context);
	put_cpu();
}

int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   KIWI_CQ_UARG *uarg)
{
	struct ib_udata *udata = kiwi_cq_udata(uarg);
	struct kiwi_device *kdev = to_kdev(ibcq->device);
	struct kiwi_cq *cq = to_kcq(ibcq);
	int ret;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > KIWI_MAX_CQE ||
	    attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	if (atomic_inc_return(&kdev->num_cq) > KIWI_MAX_CQ) {
		ret = -ENOMEM;
		goto err;
	}
	spin_lock_init(&cq->lock);
	cq->cpu = kiwi_vector_cpu(attr->comp_vector);
	INIT_CSD(&cq->notify_csd, kiwi_cq_notify_remote, cq);
	atomic_set(&cq->notify_pending, 0);
	atomic_set(&cq->notify_busy, 0);

	if (udata) {
		ret = kiwi_cq_user_ring(ibcq->device, attr->cqe, udata,
					&cq->user_ring, &cq->num_cqe);
		if (ret)
			goto err;
		cq->queue = cq->user_ring.addr;
	} else {
		cq->num_cqe = roundup_pow_of_two(attr->cqe);
		cq->queue = kiwi_fault() ? NULL :
			    vzalloc(kiwi_cq_ring_bytes(cq->num_cqe));
		if (!cq->queue) {
			ret = -ENOMEM;
			goto err;
		}
	}
	cq->ctrl = (struct kiwi_cq_ctrl *)(cq->queue + cq->num_cqe);
	ibcq->cqe = cq->num_cqe;
	return 0;
err:
	atomic_dec(&kdev->num_cq);
	return ret;
}

/*
 * The queued CQEs of a ring, oldest first from *@first. A kernel CQ knows
 * its consumer index; libkiwi's is its own, but libkiwi clears VALID in
 * order, so the queued entries are the run of VALID ones that ends just
 * before the producer index.
 */
static u32 kiwi_cq_queued(struct kiwi_cq *cq, bool user, u32 *first)
{
	u32 n;

	if (!user) {
		*first = cq->get;
		return cq->put - cq->get;
	}
	for (n = 0; n < cq->num_cqe; n++) {
		u32 i = (cq->put - 1 - n) & (cq->num_cqe - 1);

		if (!(kiwi_ring_flags(&cq->queue[i].flags) & KIWI_CQE_VALID))
			break;
	}
	*first = cq->put - n;
	return n;
}

/**
 * kiwi_resize_cq() - give a CQ a ring of another size (V-CQ-7)
 * @ibcq: the CQ
 * @cqe: entries wanted, 1 to KIWI_MAX_CQE
 * @udata: user CQs: struct kiwi_create_cq_req naming the new ring, which
 *	libkiwi allocated as for create; struct kiwi_create_cq_resp back
 *
 * The queued CQEs move, in order, to the start of the new ring, and the
 * notification request moves with them; the old ring is released. Nothing
 * is lost: producers and kernel pollers wait on cq->lock meanwhile, and
 * libkiwi holds its own CQ lock around the command.
 *
 * Context: process context; sleeps.
 * Return: 0, -EINVAL for @cqe out of range, a bad request, or @cqe below
 * the number of CQEs queued (the CQ is unchanged then), -ENOMEM, or the
 * errors of pinning a user ring.
 */
int kiwi_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct kiwi_cq *cq = to_kcq(ibcq);
	struct kiwi_user_ring user_ring = {};
	struct kiwi_cqe *queue, *old;
	struct kiwi_cq_ctrl *ctrl;
	unsigned long flags;
	u32 num, n, first, i;
	int ret;

	if (cqe < 1 || cqe > KIWI_MAX_CQE)
		return -EINVAL;
	if (udata) {
		ret = kiwi_cq_user_ring(ibcq->device, cqe, udata, &user_ring, &num);
		if (ret)
			return ret;
		queue = user_ring.addr;
	} else {
		num = roundup_pow_of_two(cqe);
		queue = kiwi_fault() ? NULL : vzalloc(kiwi_cq_ring_bytes(num));
		if (!queue)
			return -ENOMEM;
	}
	ctrl = (struct kiwi_cq_ctrl *)(queue + num);

	spin_lock_irqsave(&cq->lock, flags);
	n = kiwi_cq_queued(cq, udata, &first);
	if (n > cqe) {
		spin_unlock_irqrestore(&cq->lock, flags);
		ret = -EINVAL;
		goto err;
	}
	for (i = 0; i < n; i++) {
		const struct kiwi_cqe *src;

		src = &cq->queue[(first + i) & (cq->num_cqe - 1)];
		queue[i] = *src;
		queue[i].flags = kiwi_ring_flags(&src->flags);
	}
	ctrl->notify = READ_ONCE(cq->ctrl->notify);
	old = cq->queue;
	swap(cq->user_ring, user_ring);
	cq->queue = queue;
	cq->ctrl = ctrl;
	cq->num_cqe = num;
	cq->put = n;
	cq->get = 0;
	ibcq->cqe = num;
	spin_unlock_irqrestore(&cq->lock, flags);
	queue = old;
	ret = 0;
err:
	/* The ring not in use: the old one, or the new one refused. */
	if (udata)
		kiwi_user_ring_unpin(&user_ring);
	else
		vfree(queue);
	return ret;
}

int kiwi_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct kiwi_cq *cq = to_kcq(ibcq);

	/* No QP uses the CQ any more; a handler may still be on its way. */
	while (atomic_read(&cq->notify_busy))
		cpu_relax();
	if (cq->user_ring.umem)
		kiwi_user_ring_unpin(&cq->user_ring);
	else
		vfree(cq->queue);
	atomic_dec(&to_kdev(ibcq->device)->num_cq);
	return 0;
}

static void kiwi_cq_event(struct kiwi_cq *cq, enum ib_event_type type)
{
	struct ib_event event = {
		.device = cq->base_cq.device,
		.element.cq = &cq->base_cq,
		.event = type,
	};

	if (cq->base_cq.event_handler)
		cq->base_cq.event_handler(&event, cq->base_cq.cq_context);
}

/*
 * An error completion went into @cq: count it by its status. Only error
 * completions come here; the success path counts nothing.
 */
static void kiwi_cq_count_error(struct kiwi_cq *cq, u8 status)
{
	struct kiwi_device *kdev = to_kdev(cq->base_cq.device);

	if (status == IB_WC_WR_FLUSH_ERR) {
		kiwi_stat_inc(kdev, KIWI_STAT_CQE_FLUSH_ERR);
		return;
	}
	kiwi_stat_inc(kdev, KIWI_STAT_CQE_ERR);
	switch (status) {
	case IB_WC_LOC_PROT_ERR:
		kiwi_stat_inc(kdev, KIWI_STAT_CQE_LOC_PROT_ERR);
		break;
	case IB_WC_LOC_LEN_ERR:
		kiwi_stat_inc(kdev, KIWI_STAT_CQE_LOC_LEN_ERR);
		break;
	case IB_WC_LOC_QP_OP_ERR:
		kiwi_stat_inc(kdev, KIWI_STAT_CQE_LOC_QP_OP_ERR);
		break;
	case IB_WC_MW_BIND_ERR:
		kiwi_stat_inc(kdev, KIWI_STAT_CQE_MW_BIND_ERR);
		break;
	case IB_WC_REM_ACCESS_ERR:
	case IB_WC_REM_OP_ERR:
	case IB_WC_REM_INV_REQ_ERR:
		kiwi_stat_inc(kdev, KIWI_STAT_CQE_REM_ERR);
		break;
	default:
		break;
	}
}

/**
 * kiwi_cq_add() - post one completion
 * @cq: the CQ
 * @src: the completion; its flags may hold KIWI_CQE_SOLICITED,
 *	KIWI_CQE_INVALIDATED and KIWI_CQE_WITH_IMM, VALID is set here
 *
 * Return: 0, or -ENOSPC when the ring was full (the CQ is then broken and
 * has reported IB_EVENT_CQ_ERR once).
 */
int kiwi_cq_add(struct kiwi_cq *cq, const struct kiwi_cqe *src)
{
	struct kiwi_cqe *cqe;
	unsigned long flags;
	bool notify = false;
	bool overflow;
	u32 arm;

	spin_lock_irqsave(&cq->lock, flags);
	cqe = &cq->queue[cq->put & (cq->num_cqe - 1)];
	overflow = cq->overflow || (READ_ONCE(cqe->flags) & KIWI_CQE_VALID);
	if (overflow) {
		notify = !cq->overflow;
		cq->overflow = true;
		spin_unlock_irqrestore(&cq->lock, flags);
		if (notify) {
			kiwi_stat_inc(to_kdev(cq->base_cq.device),
				      KIWI_STAT_CQ_OVERFLOW);
			kiwi_cq_event(cq, IB_EVENT_CQ_ERR);
		}
		return -ENOSPC;
	}

	cqe->id = src->id;
	cqe->opcode = src->opcode;
	cqe->status = src->status;
	cqe->bytes = src->bytes;
	cqe->qp_num = src->qp_num;
	cqe->inval_stag = src->inval_stag;	/* or imm_data: a union */
	/* The consumer may read the entry as soon as it sees VALID. */
	kiwi_ring_set_flags(&cqe->flags, src->flags | KIWI_CQE_VALID);
	cq->put++;
	this_cpu_inc(kiwi_cq_cpu_stats.cqes);

	/*
	 * V-NOT-8: libkiwi arms without the lock, storing the arm and then
	 * polling; we store the entry and then read the arm. A full barrier
	 * on both sides: one of the two sees the other's store.
	 */
	smp_mb();
	/* A solicited-only arm fires on errors too (flushes included). */
	arm = READ_ONCE(cq->ctrl->notify);
	if (arm == KIWI_NOTIFY_NEXT ||
	    (arm == KIWI_NOTIFY_SOLICITED && ((src->flags & KIWI_CQE_SOLICITED) ||
					      src->status != IB_WC_SUCCESS))) {
		WRITE_ONCE(cq->ctrl->notify, KIWI_NOTIFY_NONE);
		notify = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (src->status != IB_WC_SUCCESS) {
		kiwi_cq_count_error(cq, src->status);
		trace_kiwi_cqe_error(&cq->base_cq, src->id, src->qp_num,
				     src->opcode, src->status);
	}
	if (notify)
		kiwi_cq_notify(cq);
	return 0;
}

static void kiwi_cqe_to_wc(const struct kiwi_cqe *cqe, struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->byte_len = cqe->bytes;
	wc->qp = NULL;	/* set by the caller, which knows the QP */
	if (cqe->flags & KIWI_CQE_INVALIDATED) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = cqe->inval_stag;
	}
	if (cqe->flags & KIWI_CQE_WITH_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = (__force __be32)cqe->imm_data;
	}
}

int kiwi_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct kiwi_cq *cq = to_kcq(ibcq);
	struct kiwi_cqe *cqe;
	unsigned long flags;
	int i;

	spin_lock_irqsave(&cq->lock, flags);
	for (i = 0; i < num_entries; i++) {
		cqe = &cq->queue[cq->get & (cq->num_cqe - 1)];
		if (!(kiwi_ring_flags(&cqe->flags) & KIWI_CQE_VALID))
			break;
		kiwi_cqe_to_wc(cqe, &wc[i]);
		wc[i].qp = kiwi_qp_lookup_ib(to_kdev(ibcq->device), cqe->qp_num);
		/* Hand the slot back only after reading it. */
		kiwi_ring_set_flags(&cqe->flags, 0);
		cq->get++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return i;
}

int kiwi_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct kiwi_cq *cq = to_kcq(ibcq);
	u32 arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		  KIWI_NOTIFY_SOLICITED : KIWI_NOTIFY_NEXT;

	unsigned long irqflags;
	int missed = 0;

	/*
	 * Under the lock: kiwi_cq_add() and kiwi_resize_cq() see the arm.
	 * An arm only adds to the one there (V-NOT-7): a solicited-only
	 * request does not undo an earlier "next" one (the values are
	 * ordered NONE < SOLICITED < NEXT).
	 */
	spin_lock_irqsave(&cq->lock, irqflags);
	if (READ_ONCE(cq->ctrl->notify) < arm)
		WRITE_ONCE(cq->ctrl->notify, arm);
	if (flags & IB_CQ_REPORT_MISSED_EVENTS) {
		struct kiwi_cqe *cqe = &cq->queue[cq->get & (cq->num_cqe - 1)];

		missed = !!(kiwi_ring_flags(&cqe->flags) & KIWI_CQE_VALID);
	}
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return missed;
}
