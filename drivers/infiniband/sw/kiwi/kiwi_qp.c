// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: queue pairs - creation, the verbs state machine, posting work
 * requests into the rings, flushing, and destruction.
 *
 * iWARP QPs move to RTS only when their connection is established (the
 * connection manager does that); a consumer can bring a QP from RESET to
 * INIT and RTR, close it gracefully (SQD) or move it to ERR at any time,
 * and reset it from ERR. Every WR outstanding when the QP enters ERR, and
 * every WR posted while it is there, completes with IB_WC_WR_FLUSH_ERR, in
 * order, signalled or not.
 *
 * A QP created on an SRQ has no receive ring: its receive engine takes WQEs
 * from the SRQ (kiwi_srq.c), and post_recv on it fails with -EINVAL.
 *
 * Locking: state_lock (a mutex) serialises state changes; sq_lock and
 * rq_lock (spinlocks, interrupts off) the rings. Lock order: the table in
 * Documentation/infiniband/kiwi.rst ("Locking and context").
 */

#include <linux/log2.h>
#include <linux/vmalloc.h>
#include <net/tcp.h>
#include <rdma/ib_user_verbs.h>

#include "kiwi.h"
#include "kiwi_trace.h"
#include "kiwi_fault.h"
#include "kiwi_mem.h"

/* A bind's named fields are where libkiwi has always put them: over sge[0]. */
static_assert(offsetof(struct kiwi_sqe, bind.length) ==
	      offsetof(struct kiwi_sqe, sge[0].addr));
static_assert(offsetof(struct kiwi_sqe, bind.access) ==
	      offsetof(struct kiwi_sqe, sge[0].length));
static_assert(offsetof(struct kiwi_sqe, bind.mr_lkey) ==
	      offsetof(struct kiwi_sqe, sge[0].lkey));

static size_t kiwi_sq_bytes(u32 num)
{
	return KIWI_RING_BYTES(num, sizeof(struct kiwi_sqe), struct kiwi_sq_ctrl);
}

static size_t kiwi_rq_bytes(u32 num)
{
	return (size_t)num * sizeof(struct kiwi_rqe);
}

struct ib_qp *kiwi_qp_lookup_ib(struct kiwi_device *kdev, u32 qpn)
{
	struct kiwi_qp *qp = xa_load(&kdev->qp_xa, qpn);

	return qp ? &qp->base_qp : NULL;
}

void kiwi_qp_get(struct kiwi_qp *qp)
{
	refcount_inc(&qp->refs);
}

/* Look a QP up by number and take a reference; NULL if none. */
struct kiwi_qp *kiwi_qp_get_by_num(struct kiwi_device *kdev, u32 qpn)
{
	struct kiwi_qp *qp;

	xa_lock(&kdev->qp_xa);
	qp = xa_load(&kdev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->refs))
		qp = NULL;
	xa_unlock(&kdev->qp_xa);
	return qp;
}

/**
 * kiwi_qp_all_lost() - the netdev is going away: reset every connection
 * @kdev: the device
 *
 * The streams run over the netdev's addresses, which go with it: TCP would
 * retransmit into nothing for minutes, and a kernel ULP that waits for its
 * I/O before it lets go of the device would hold the netdev that long.
 * Every connected QP fails now, as when its stream is lost: its WRs flush
 * and its consumer gets IB_EVENT_QP_FATAL.
 *
 * Context: process context, RTNL held; takes the QP table's lock, then
 * each QP's state_lock.
 */
void kiwi_qp_all_lost(struct kiwi_device *kdev)
{
	unsigned long qpn;
	struct kiwi_qp *qp;

	ASSERT_RTNL();
	for (qpn = 0;; qpn++) {
		/* Under the table's lock a QP found is not yet freed. */
		xa_lock(&kdev->qp_xa);
		qp = xa_find(&kdev->qp_xa, &qpn, ULONG_MAX, XA_PRESENT);
		if (qp && !refcount_inc_not_zero(&qp->refs))
			qp = ERR_PTR(-ENOENT);	/* being destroyed: skip it */
		xa_unlock(&kdev->qp_xa);
		if (!qp)
			return;
		if (IS_ERR(qp))
			continue;
		mutex_lock(&qp->state_lock);
		if (qp->cep)
			kiwi_cm_lost(qp->cep);
		mutex_unlock(&qp->state_lock);
		kiwi_qp_put(qp);
	}
}

/* iw_cm hooks: it holds QPs by these while it works on them. */
void kiwi_iw_add_ref(struct ib_qp *ibqp)
{
	kiwi_qp_get(to_kqp(ibqp));
}

void kiwi_iw_rem_ref(struct ib_qp *ibqp)
{
	kiwi_qp_put(to_kqp(ibqp));
}

struct ib_qp *kiwi_iw_get_qp(struct ib_device *ibdev, int qpn)
{
	return kiwi_qp_lookup_ib(to_kdev(ibdev), qpn);
}

void kiwi_qp_put(struct kiwi_qp *qp)
{
	if (refcount_dec_and_test(&qp->refs))
		complete(&qp->released);
}

static int kiwi_qp_check_caps(struct ib_qp_init_attr *attr,
			      struct ib_udata *udata)
{
	struct ib_qp_cap *cap = &attr->cap;

	/* On an SRQ the receive queue sizes are ignored (V-SRQ-4). */
	if (attr->srq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	if (attr->qp_type != IB_QPT_RC || attr->create_flags)
		return -EOPNOTSUPP;
	if (!attr->send_cq || !attr->recv_cq)
		return -EINVAL;
	/* A user QP needs a user SRQ, a kernel QP a kernel one. */
	if (attr->srq && !!udata != !!attr->srq->uobject)
		return -EINVAL;
	if (cap->max_send_wr > KIWI_MAX_QP_WR ||
	    cap->max_recv_wr > KIWI_MAX_QP_WR ||
	    cap->max_send_sge > KIWI_MAX_SGE ||
	    cap->max_recv_sge > KIWI_MAX_SGE ||
	    cap->max_inline_data > KIWI_MAX_INLINE)
		return -EINVAL;
	return 0;
}

static int kiwi_qp_user_rings(struct kiwi_qp *qp, struct ib_qp_init_attr *attr,
			      struct ib_udata *udata)
{
	struct kiwi_create_qp_resp resp = {};
	struct ib_device *ibdev = qp->base_qp.device;
	struct kiwi_create_qp_req req;
	int ret;

	ret = kiwi_udata_req(udata, &req, sizeof(req), sizeof(resp));
	if (ret)
		return ret;
	if (!is_power_of_2(req.num_sqe) || req.num_sqe > KIWI_MAX_QP_WR ||
	    req.num_sqe < attr->cap.max_send_wr)
		return -EINVAL;
	/* On an SRQ there is no receive ring; otherwise there must be one. */
	if (attr->srq ? req.num_rqe || req.rq_va :
	    !is_power_of_2(req.num_rqe) || req.num_rqe > KIWI_MAX_QP_WR ||
	    req.num_rqe < attr->cap.max_recv_wr)
		return -EINVAL;

	ret = kiwi_user_ring_pin(ibdev, req.sq_va, kiwi_sq_bytes(req.num_sqe),
				 &qp->sq.user_ring);
	if (ret)
		return ret;
	if (req.num_rqe) {
		ret = kiwi_user_ring_pin(ibdev, req.rq_va, kiwi_rq_bytes(req.num_rqe),
					 &qp->rq.user_ring);
		if (ret)
			goto err_sq;
	}
	qp->sq.num = req.num_sqe;
	qp->sq.ring = qp->sq.user_ring.addr;
	qp->rq.num = req.num_rqe;
	qp->rq.ring = qp->rq.user_ring.addr;

	resp.qp_id = qp->base_qp.qp_num;
	resp.num_sqe = qp->sq.num;
	resp.num_rqe = qp->rq.num;
	ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (ret)
		goto err_rq;
	return 0;
err_rq:
	kiwi_user_ring_unpin(&qp->rq.user_ring);
err_sq:
	kiwi_user_ring_unpin(&qp->sq.user_ring);
	return ret;
}

static int kiwi_qp_kernel_rings(struct kiwi_qp *qp,
				struct ib_qp_init_attr *attr)
{
	qp->sq.num = roundup_pow_of_two(max(attr->cap.max_send_wr, 1U));
	qp->rq.num = attr->srq ? 0 :
		     roundup_pow_of_two(max(attr->cap.max_recv_wr, 1U));
	qp->sq.ring = kiwi_fault() ? NULL : vzalloc(kiwi_sq_bytes(qp->sq.num));
	qp->rq.ring = !qp->rq.num || kiwi_fault() ? NULL :
		      vzalloc(kiwi_rq_bytes(qp->rq.num));
	if (!qp->sq.ring || (qp->rq.num && !qp->rq.ring)) {
		vfree(qp->sq.ring);
		vfree(qp->rq.ring);
		return -ENOMEM;
	}
	return 0;
}

static void kiwi_qp_free_rings(struct kiwi_qp *qp)
{
	if (qp->sq.user_ring.umem) {
		kiwi_user_ring_unpin(&qp->sq.user_ring);
		kiwi_user_ring_unpin(&qp->rq.user_ring);
	} else {
		vfree(qp->sq.ring);
		vfree(qp->rq.ring);
	}
}

int kiwi_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibqp->device);
	struct kiwi_qp *qp = to_kqp(ibqp);
	u32 qpn;
	int ret;

	ret = kiwi_qp_check_caps(attr, udata);
	if (ret)
		return ret;

	qp->kdev = kdev;
	refcount_set(&qp->refs, 1);
	init_completion(&qp->released);
	mutex_init(&qp->state_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	/*
	 * A new QP is in the iWARP verbs' Idle state, in which receives may
	 * be posted before the connection. Idle is reported as INIT, as the
	 * hardware iWARP driver cxgb4 reports it (and rdma-core's tests
	 * expect of an iWARP device); a consumer may still move it to RESET.
	 */
	qp->state = IB_QPS_INIT;
	qp->scq = to_kcq(attr->send_cq);
	qp->rcq = to_kcq(attr->recv_cq);
	qp->sig_all = attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->sq.max_sge = attr->cap.max_send_sge;
	qp->rq.max_sge = attr->cap.max_recv_sge;
	/*
	 * Inline data is held in the SQE's SGE array, so a QP takes at least
	 * as many inline bytes as its send SGEs cover, as the IB providers
	 * round it up: programs post small inline Sends on QPs that asked for
	 * no inline data at all (librdmacm's rdma_xclient does).
	 */
	attr->cap.max_inline_data = max_t(u32, attr->cap.max_inline_data,
					  attr->cap.max_send_sge *
					  sizeof(struct kiwi_sge));
	qp->max_inline = attr->cap.max_inline_data;

	/* Numbers start at 1; a full table is a resource shortage. */
	ret = kiwi_fault() ? -ENOMEM :
	      xa_alloc(&kdev->qp_xa, &qpn, NULL, XA_LIMIT(1, KIWI_MAX_QP),
		       GFP_KERNEL);
	if (ret)
		return ret == -EBUSY ? -ENOMEM : ret;
	ibqp->qp_num = qpn;

	ret = udata ? kiwi_qp_user_rings(qp, attr, udata) :
		      kiwi_qp_kernel_rings(qp, attr);
	if (ret)
		goto err_xa;
	qp->ctrl = (struct kiwi_sq_ctrl *)((struct kiwi_sqe *)qp->sq.ring +
					   qp->sq.num);
	/* libkiwi reads the state from the zeroed ring: RESET until told. */
	WRITE_ONCE(qp->ctrl->state, qp->state);
	ret = kiwi_engines_alloc(qp);
	if (ret) {
		kiwi_qp_free_rings(qp);
		goto err_xa;
	}

	/* Report what the QP really holds. */
	attr->cap.max_send_wr = qp->sq.num;
	attr->cap.max_recv_wr = qp->rq.num;

	xa_store(&kdev->qp_xa, qpn, qp, GFP_KERNEL);
	return 0;
err_xa:
	xa_erase(&kdev->qp_xa, qpn);
	return ret;
}

u8 kiwi_wc_opcode(u8 wr_opcode)
{
	switch (wr_opcode) {
	case KIWI_WR_RDMA_WRITE:
		return IB_WC_RDMA_WRITE;
	case KIWI_WR_RDMA_READ:
	case KIWI_WR_READ_INV:
		return IB_WC_RDMA_READ;
	case KIWI_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case KIWI_WR_REG_MR:
		return IB_WC_REG_MR;
	case KIWI_WR_BIND_MW:
		return IB_WC_BIND_MW;
	case KIWI_WR_ATOMIC_CMP_SWP:
		return IB_WC_COMP_SWAP;
	case KIWI_WR_ATOMIC_FETCH_ADD:
		return IB_WC_FETCH_ADD;
	case KIWI_WR_WRITE_IMM:
		return IB_WC_RDMA_WRITE;
	default:
		return IB_WC_SEND;
	}
}

/* Complete every posted WR of both queues with IB_WC_WR_FLUSH_ERR. */
static void kiwi_qp_flush(struct kiwi_qp *qp)
{
	struct kiwi_cqe cqe = {
		.status = IB_WC_WR_FLUSH_ERR,
		.qp_num = qp->base_qp.qp_num,
	};
	unsigned long flags;
	u32 left;

	/*
	 * At most one ring's worth each: a process that keeps setting VALID
	 * in its ring must not hold us here with interrupts off (V-SEC-16).
	 */
	spin_lock_irqsave(&qp->sq_lock, flags);
	for (left = qp->sq.num; left; left--) {
		struct kiwi_sqe *sqe = (struct kiwi_sqe *)qp->sq.ring +
				       (qp->sq.head & (qp->sq.num - 1));

		if (!(kiwi_ring_flags(&sqe->flags) & KIWI_WQE_VALID))
			break;
		cqe.id = READ_ONCE(sqe->id);
		cqe.opcode = kiwi_wc_opcode(READ_ONCE(sqe->opcode));
		kiwi_ring_set_flags(&sqe->flags, 0);
		qp->sq.head++;
		if (kiwi_cq_add(qp->scq, &cqe))
			break;
	}
	/* The transmit engine, stopped, restarts after what was flushed. */
	if (qp->tx) {
		qp->tx->next = qp->sq.head;
		qp->tx->orq_head = qp->tx->orq_tail;
		qp->tx->zc_waiting = 0;
		qp->tx->zc_sending = false;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	cqe.opcode = IB_WC_RECV;
	spin_lock_irqsave(&qp->rq_lock, flags);
	/*
	 * On an SRQ only the WQE this QP had taken is flushed; the others
	 * stay on the SRQ for the other QPs (V-FL-6).
	 */
	if (qp->srq_held) {
		cqe.id = qp->srq_held_id;
		qp->srq_held = false;
		kiwi_cq_add(qp->rcq, &cqe);
	}
	for (left = qp->rq.num; left; left--) {
		struct kiwi_rqe *rqe = (struct kiwi_rqe *)qp->rq.ring +
				       (qp->rq.head & (qp->rq.num - 1));

		if (!(kiwi_ring_flags(&rqe->flags) & KIWI_WQE_VALID))
			break;
		cqe.id = READ_ONCE(rqe->id);
		kiwi_ring_set_flags(&rqe->flags, 0);
		qp->rq.head++;
		if (kiwi_cq_add(qp->rcq, &cqe))
			break;
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
}

/* Context: qp->state_lock held. Publishes the state to libkiwi too. */
static void kiwi_qp_set_state(struct kiwi_qp *qp, enum ib_qp_state state,
			      bool reset)
{
	bool failing = state == IB_QPS_ERR && qp->state != IB_QPS_ERR;

	lockdep_assert_held(&qp->state_lock);
	trace_kiwi_qp_state(&qp->base_qp, qp->state, state);
	WRITE_ONCE(qp->state, state);
	/* Full barrier: a later post sees the new state in the ring. */
	smp_store_mb(qp->ctrl->state, state);
	/*
	 * An abortive close resets the stream before the engines stop, which
	 * would end it with a FIN; the connection manager, seeing the reset,
	 * finds the QP in ERR already and raises no event.
	 */
	if (reset && qp->sock)
		tcp_abort(qp->sock->sk, ECONNABORTED);
	/* What was posted before the QP failed completes as flushed. */
	if (state == IB_QPS_ERR) {
		kiwi_engines_stop(qp);
		kiwi_qp_flush(qp);
	}
	/*
	 * The engines are stopped and the WQE they held from the SRQ is
	 * flushed: this QP takes no more from it.
	 */
	if (failing && qp->base_qp.srq)
		kiwi_qp_async_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

void kiwi_qp_async_event(struct kiwi_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->base_qp.device,
		.element.qp = &qp->base_qp,
		.event = type,
	};

	if (type == IB_EVENT_QP_FATAL)
		kiwi_stat_inc(qp->kdev, KIWI_STAT_QP_FATAL_EVENT);
	else if (type == IB_EVENT_QP_ACCESS_ERR)
		kiwi_stat_inc(qp->kdev, KIWI_STAT_QP_ACCESS_EVENT);
	if (qp->base_qp.event_handler)
		qp->base_qp.event_handler(&ev, qp->base_qp.qp_context);
}

/*
 * A Terminate with @code was sent or received: tell the consumer, the same
 * way for both, protection errors being access errors.
 */
void kiwi_qp_terminated(struct kiwi_qp *qp, u32 code)
{
	kiwi_qp_async_event(qp, kiwi_tc_access(code) ? IB_EVENT_QP_ACCESS_ERR :
						       IB_EVENT_QP_FATAL);
}

/**
 * kiwi_qp_terminate() - send a Terminate to the peer, then close
 * @qp: the QP
 * @t: the Terminate: its code, and the headers its M, D and R bits echo
 *
 * The transmit engine sends the Terminate in place of the next message,
 * so the stream stops at an FPDU boundary, and nothing after it (RDMAC
 * verbs 6.4, R-TRM-6); the connection then closes with a FIN and the QP
 * enters ERR. A connection sends at most one Terminate, and none once the
 * peer's arrived (V-ST-R9), its stream failed or it is not connected.
 * The caller raises the async event, if one is due.
 *
 * Context: any, softirq and spinlocks included; takes no lock.
 * Return: true when this call queued the Terminate.
 */
bool kiwi_qp_terminate(struct kiwi_qp *qp, const struct kiwi_term *t)
{
	struct kiwi_cep *cep = READ_ONCE(qp->cep);
	struct kiwi_tx *tx = qp->tx;

	if (!cep || !tx || READ_ONCE(tx->stopped) ||
	    atomic_xchg(&tx->term_claimed, 1))
		return false;
	tx->term_len = kiwi_term_build(tx->term_buf, t);
	/* The loop that sees term_pending reads the buffer written above. */
	smp_store_release(&tx->term_pending, true);
	kiwi_tx_kick(qp);
	kiwi_cm_terminated(cep);
	return true;
}

/*
 * A local error ends a connected QP: terminate with @code, header bits
 * zero (V-TERM-5, V-TERM-7), raising IB_EVENT_QP_FATAL when @event; a
 * stream that no longer works is reset instead (V-LLP-10).
 */
static void kiwi_qp_local_term(struct kiwi_qp *qp, u32 code, bool event)
{
	const struct kiwi_term t = { .code = code };
	struct kiwi_cep *cep = READ_ONCE(qp->cep);

	if (!cep)
		return;
	if (!kiwi_qp_terminate(qp, &t)) {
		kiwi_cm_close(cep, true);
		return;
	}
	ibdev_info_ratelimited(&qp->kdev->ibdev,
			       "QP %u: local error, sending Terminate %08x\n",
			       qp->base_qp.qp_num, code);
	if (event)
		kiwi_qp_async_event(qp, IB_EVENT_QP_FATAL);
}

/*
 * A local error failed a work request of a connected QP, and its
 * completion says so: Local Catastrophic Error (V-CS-3), and no async
 * event (V-ST-T7). Context: any; takes no lock.
 */
void kiwi_qp_error(struct kiwi_qp *qp)
{
	kiwi_qp_local_term(qp, KIWI_TC_RDMAP_LOCAL_CATA, false);
}

/*
 * A completion of a connected QP was lost to its full CQ (which reported
 * IB_EVENT_CQ_ERR): the QP stops, RDMAC verbs Fig. 24 "CQ/SQ Error" and
 * "CQ/RQ Error" (V-ERR-7). Context: any; takes no lock of the QP.
 */
void kiwi_qp_cq_error(struct kiwi_qp *qp)
{
	kiwi_qp_local_term(qp, KIWI_TC_RDMAP_CATA_STREAM, true);
}

/*
 * Ask the connection, if any, to close: gracefully, by reset (@abrupt), or
 * at once with a FIN (@fin, kiwi_qp_close_clean()).
 * Context: qp->state_lock held.
 */
static void kiwi_qp_close_conn(struct kiwi_qp *qp, bool abrupt, bool fin)
{
	lockdep_assert_held(&qp->state_lock);
	if (qp->cep && fin)
		kiwi_cm_close_fin(qp->cep);
	else if (qp->cep)
		kiwi_cm_close(qp->cep, abrupt);
}

/*
 * The consumer fails or destroys a QP in SQD (Closing), whose graceful
 * close it asked for on entering SQD (kiwi_modify_qp() is the only way
 * in), with nothing left to send or to answer: the close ends with the
 * FIN it was on its way to, not a reset. Linux consumers do this in every
 * orderly close: ib_drain_qp() moves the QP to ERR right after
 * rdma_disconnect(), and librdmacm programs destroy it there. They ask
 * for no abort, and a reset after the FIN would fail the peer's QP with
 * IB_EVENT_QP_FATAL (LLP Connection Lost in Closing) after a close it had
 * taken as graceful. Work still pending keeps the abortive close
 * (V-ST-R10).
 * Context: qp->state_lock held; waits up to 100 ms for a transmit loop.
 */
static bool kiwi_qp_close_clean(struct kiwi_qp *qp)
{
	lockdep_assert_held(&qp->state_lock);
	return qp->state == IB_QPS_SQD && qp->cep && !kiwi_qp_work_left(qp);
}

/*
 * The consumer's Terminate (Modify RTS -> SQE): Local Catastrophic Error,
 * and no async event (V-ST-T7). The transmit engine never takes the
 * state lock, so waiting for it here is safe. Context: qp->state_lock held.
 */
static void kiwi_qp_close_term(struct kiwi_qp *qp)
{
	const struct kiwi_term t = { .code = KIWI_TC_RDMAP_LOCAL_CATA };

	lockdep_assert_held(&qp->state_lock);
	if (kiwi_qp_terminate(qp, &t))
		flush_work(&qp->tx->work);
	else
		kiwi_qp_close_conn(qp, true, false);
}

/*
 * Transitions a consumer may ask for. RTS is entered only by the
 * connection manager when the connection is up; a connected QP (RTS, SQD,
 * SQE) can only close or fail, never go back to RESET directly.
 */
static bool kiwi_qp_transition_ok(enum ib_qp_state cur, enum ib_qp_state new)
{
	switch (new) {
	case IB_QPS_RESET:
		return cur == IB_QPS_RESET || cur == IB_QPS_INIT ||
		       cur == IB_QPS_RTR || cur == IB_QPS_ERR;
	case IB_QPS_INIT:
		return cur == IB_QPS_RESET || cur == IB_QPS_INIT;
	case IB_QPS_RTR:
		return cur == IB_QPS_INIT || cur == IB_QPS_RTR;
	case IB_QPS_SQD:
		return cur == IB_QPS_RTS || cur == IB_QPS_SQD;
	case IB_QPS_SQE:
		return cur == IB_QPS_RTS;
	case IB_QPS_ERR:
		return true;
	default:
		return false;
	}
}

/*
 * Read depths of a connected QP (V-RD-7): in RTS, staying there, ORD may
 * be lowered (Reads beyond the new ORD that are already out complete; new
 * ones wait until fewer are outstanding). Raising ORD, and any change of
 * IRD, are optional and refused: the peer sized its IRD, and we our inbound
 * queue, for what the connection negotiated.
 */
static bool kiwi_qp_rd_change_ok(const struct kiwi_qp *qp,
				 const struct ib_qp_attr *attr, int mask,
				 enum ib_qp_state cur, enum ib_qp_state new)
{
	return cur == IB_QPS_RTS && new == IB_QPS_RTS &&
	       !(mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	       attr->max_rd_atomic <= qp->ord;
}

/*
 * Attributes of the IB state machine that mean nothing on iWARP: the P_Key
 * index (no partitions), the address vector, path MTU, remote QP number
 * and PSNs (the TCP stream is the path; TCP numbers its bytes and picks
 * the segment size), and the ACK and RNR timers and retry counts (TCP
 * retransmits, llp_timeout bounds a stalled stream, and a Send that finds
 * no receive is fatal on iWARP whatever the RNR settings say). kiwi accepts
 * them where the IB verbs require or allow them for an RC QP, so that a
 * consumer need not know its transport to bring a QP up, and ignores them.
 */
#define KIWI_QP_IB_ONLY	(IB_QP_PKEY_INDEX | IB_QP_AV | IB_QP_PATH_MTU | \
			 IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_SQ_PSN | \
			 IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | \
			 IB_QP_MIN_RNR_TIMER)

/* Which of KIWI_QP_IB_ONLY the IB verbs take for an RC QP in @cur -> @new. */
static int kiwi_qp_ib_only_ok(enum ib_qp_state cur, enum ib_qp_state new)
{
	if (cur == IB_QPS_RESET && new == IB_QPS_INIT)
		return IB_QP_PKEY_INDEX;
	if (cur == IB_QPS_INIT && new == IB_QPS_INIT)
		return IB_QP_PKEY_INDEX;
	if (cur == IB_QPS_INIT && new == IB_QPS_RTR)
		return IB_QP_PKEY_INDEX | IB_QP_AV | IB_QP_PATH_MTU |
		       IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MIN_RNR_TIMER;
	if (cur == IB_QPS_RTR && new == IB_QPS_RTS)
		return IB_QP_SQ_PSN | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
		       IB_QP_RNR_RETRY | IB_QP_MIN_RNR_TIMER;
	if ((cur == IB_QPS_RTS || cur == IB_QPS_SQD) && new == IB_QPS_RTS)
		return IB_QP_MIN_RNR_TIMER;
	if (cur == IB_QPS_SQD && new == IB_QPS_SQD)
		return IB_QP_PKEY_INDEX | IB_QP_AV | IB_QP_TIMEOUT |
		       IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MIN_RNR_TIMER;
	return 0;
}

int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	enum ib_qp_state cur, new;
	bool fin = false;
	int ret = 0;

	/*
	 * Refused, as changing what kiwi cannot do: an alternate path and
	 * its migration (the RDMA core refuses IB_QP_ALT_PATH on iWARP
	 * already), an SQ Drained event, resizing the queues, a rate limit.
	 */
	if (mask & ~(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS |
		     IB_QP_PORT | IB_QP_MAX_QP_RD_ATOMIC |
		     IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_QKEY | KIWI_QP_IB_ONLY))
		return -EOPNOTSUPP;
	/* Q_Keys are for datagram QPs only, on any device. */
	if (mask & IB_QP_QKEY)
		return -EINVAL;
	/* rdma_cm names the port of iWARP QPs; kiwi has one. */
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	/*
	 * No P_Key table: index 0, what IB consumers pass for the default
	 * partition, is taken; another index names a P_Key kiwi lacks.
	 */
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > KIWI_MAX_ORD)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > KIWI_MAX_IRD)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(IB_ACCESS_LOCAL_WRITE |
				       IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_REMOTE_ATOMIC)))
		return -EINVAL;

	mutex_lock(&qp->state_lock);
	cur = qp->state;
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		ret = -EINVAL;
		goto out;
	}
	new = mask & IB_QP_STATE ? attr->qp_state : cur;
	/*
	 * librdmacm closes an iWARP connection by moving its QP to SQD, also
	 * when the peer closed first and the QP has failed already: that
	 * close request succeeds and changes nothing.
	 */
	if ((cur == IB_QPS_ERR || cur == IB_QPS_SQE) && new == IB_QPS_SQD)
		new = cur;
	if (new != cur && !kiwi_qp_transition_ok(cur, new)) {
		ret = -EINVAL;
		goto out;
	}
	if (mask & KIWI_QP_IB_ONLY & ~kiwi_qp_ib_only_ok(cur, new)) {
		ret = -EINVAL;
		goto out;
	}
	if ((mask & (IB_QP_MAX_QP_RD_ATOMIC | IB_QP_MAX_DEST_RD_ATOMIC)) &&
	    cur != IB_QPS_RESET && cur != IB_QPS_INIT && cur != IB_QPS_RTR &&
	    !kiwi_qp_rd_change_ok(qp, attr, mask, cur, new)) {
		ret = -EINVAL;
		goto out;
	}

	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		WRITE_ONCE(qp->ord, attr->max_rd_atomic);
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->ird = attr->max_dest_rd_atomic;

	/* Modify to ERR is an abortive close (V-ST-R10), but see above. */
	fin = new == IB_QPS_ERR && kiwi_qp_close_clean(qp);
	kiwi_qp_set_state(qp, new, new == IB_QPS_ERR && !fin &&
			  (cur == IB_QPS_RTS || cur == IB_QPS_SQD));
	/*
	 * A connected QP closes: gracefully from SQD, by reset from ERR, and
	 * from SQE with a Terminate, sent before this call returns (V-ST-R6,
	 * V-LLP-8); the connection manager then moves the QP on to ERR.
	 */
	if (new != cur && new == IB_QPS_SQE)
		kiwi_qp_close_term(qp);
	else if (new != cur && (new == IB_QPS_SQD || new == IB_QPS_ERR))
		kiwi_qp_close_conn(qp, new == IB_QPS_ERR, fin);
out:
	mutex_unlock(&qp->state_lock);
	return ret;
}

int kiwi_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init)
{
	struct kiwi_qp *qp = to_kqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = READ_ONCE(qp->state);
	attr->cur_qp_state = attr->qp_state;
	attr->qp_access_flags = qp->access;
	attr->max_rd_atomic = qp->ord;
	attr->max_dest_rd_atomic = qp->ird;
	attr->cap.max_send_wr = qp->sq.num;
	attr->cap.max_recv_wr = qp->rq.num;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_recv_sge = qp->rq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;
	attr->path_mtu = IB_MTU_4096;
	/* The one port; the P_Key index is the 0 modify_qp alone accepts. */
	attr->port_num = 1;

	init->qp_type = IB_QPT_RC;
	init->srq = qp->base_qp.srq;
	init->send_cq = &qp->scq->base_cq;
	init->recv_cq = &qp->rcq->base_cq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	return 0;
}

/**
 * kiwi_qp_cm_bind() - attach a connection endpoint to an unconnected QP
 * @qp: the QP, in INIT or RTR
 * @cep: the endpoint; the QP takes a reference
 *
 * Context: process context; cep->lock held, takes qp->state_lock.
 * Return: 0, or -EINVAL when the QP is connected or in another state.
 */
int kiwi_qp_cm_bind(struct kiwi_qp *qp, struct kiwi_cep *cep)
{
	int ret = 0;

	lockdep_assert_held(&cep->lock);
	mutex_lock(&qp->state_lock);
	if (qp->cep || (qp->state != IB_QPS_INIT && qp->state != IB_QPS_RTR)) {
		ret = -EINVAL;
	} else {
		kref_get(&cep->ref);
		qp->cep = cep;
	}
	mutex_unlock(&qp->state_lock);
	return ret;
}

/* Context: process context; cep->lock held, takes qp->state_lock. */
void kiwi_qp_cm_unbind(struct kiwi_qp *qp, struct kiwi_cep *cep)
{
	bool put = false;

	lockdep_assert_held(&cep->lock);
	mutex_lock(&qp->state_lock);
	if (qp->cep == cep) {
		qp->cep = NULL;
		put = true;
	}
	mutex_unlock(&qp->state_lock);
	if (put)
		kiwi_cep_put(cep);	/* never the last: the caller has one */
}

/**
 * kiwi_qp_cm_established() - the MPA exchange is done: enter RTS
 * @qp: the bound QP
 * @cep: its endpoint, with the negotiated parameters
 * @initiator: we sent the MPA Request (and owe the RTR message, if any)
 *
 * Context: process context; cep->lock held, takes qp->state_lock.
 * Return: 0, -ECONNABORTED when the consumer failed the QP meanwhile, or
 * -ENOMEM when the receive engine's hold buffer (MPA CRCs) is not to be had.
 */
int kiwi_qp_cm_established(struct kiwi_qp *qp, struct kiwi_cep *cep,
			   bool initiator)
{
	int ret = 0;

	lockdep_assert_held(&cep->lock);
	mutex_lock(&qp->state_lock);
	if (qp->cep != cep ||
	    (qp->state != IB_QPS_INIT && qp->state != IB_QPS_RTR)) {
		ret = -ECONNABORTED;
		goto out;
	}
	qp->crc = cep->crc;
	qp->large_fpdus = cep->large_fpdus;
	ret = kiwi_rx_prepare(qp);
	if (ret)
		goto out;
	qp->ird = cep->ird;
	qp->ord = cep->ord;
	qp->rtr = cep->rtr;
	/*
	 * The responder sends nothing before the initiator's first message:
	 * its ready-to-receive message, or without one whatever it sends
	 * first (RFC 5044's connection set-up: a responder receives and
	 * validates an FPDU before it sends one, so that the initiator never
	 * meets an FPDU in place of the MPA Reply's end). An initiator may
	 * send at once, its RTR first.
	 */
	qp->rtr_pending = cep->rtr != KIWI_RTR_NONE || !initiator;
	qp->initiator = initiator;
	qp->sock = cep->sock;
	trace_kiwi_mpa(&qp->base_qp, initiator, cep);
	kiwi_qp_set_state(qp, IB_QPS_RTS, false);
	kiwi_engines_start(qp);
out:
	mutex_unlock(&qp->state_lock);
	return ret;
}

/*
 * The connection is going away: fail the QP (flushing its WRs) and let go
 * of the socket. Context: process context; @cep's lock held.
 */
void kiwi_qp_cm_disconnected(struct kiwi_qp *qp, struct kiwi_cep *cep)
{
	lockdep_assert_held(&cep->lock);
	mutex_lock(&qp->state_lock);
	if (qp->state != IB_QPS_ERR)
		kiwi_qp_set_state(qp, IB_QPS_ERR, false);
	else
		kiwi_engines_stop(qp);
	qp->sock = NULL;
	mutex_unlock(&qp->state_lock);
}

int kiwi_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	bool fin;

	/*
	 * A destroyed QP completes nothing more: its outstanding WRs vanish
	 * with it, and no completion may name a QP that no longer exists.
	 */
	mutex_lock(&qp->state_lock);
	fin = kiwi_qp_close_clean(qp);
	trace_kiwi_qp_state(&qp->base_qp, qp->state, IB_QPS_ERR);
	WRITE_ONCE(qp->state, IB_QPS_ERR);
	kiwi_qp_close_conn(qp, true, fin);
	mutex_unlock(&qp->state_lock);

	kiwi_mem_qp_gone(qp->kdev, ibqp->qp_num);
	xa_erase(&qp->kdev->qp_xa, ibqp->qp_num);
	/* Wait until the connection manager and the engines let go. */
	kiwi_qp_put(qp);
	wait_for_completion(&qp->released);
	kiwi_engines_free(qp);
	kiwi_qp_free_rings(qp);
	return 0;
}

/* The remote buffer of an RDMA Write or Read. */
static void kiwi_sqe_remote(struct kiwi_sqe *sqe, const struct ib_send_wr *wr)
{
	sqe->raddr = rdma_wr(wr)->remote_addr;
	sqe->rkey = rdma_wr(wr)->rkey;
}

/*
 * IB_WR_RDMA_READ_WITH_INV: how rdma_rw reads into an MR it registered for
 * one I/O. The STag invalidated is the data sink's (RDMA Read with Local
 * Invalidate). rdma_rw fills ex.invalidate_rkey when it sets the context
 * up and bumps the MR's key only when it posts, so that field may carry an
 * older key of the same MR: it must name the sink's MR, but its key byte
 * is not compared. The sink's STag itself is checked in full at placement.
 */
static int kiwi_sqe_read_inv(const struct ib_send_wr *wr, struct kiwi_sqe *sqe)
{
	if (wr->num_sge != 1 ||
	    KIWI_STAG_INDEX(wr->ex.invalidate_rkey) !=
	    KIWI_STAG_INDEX(wr->sg_list[0].lkey))
		return -EINVAL;
	sqe->opcode = KIWI_WR_READ_INV;
	sqe->inv_stag = wr->sg_list[0].lkey;
	kiwi_sqe_remote(sqe, wr);
	return 0;
}

/*
 * An atomic: the original value lands in one 8-byte SGE, refused here
 * otherwise, as kiwi_sqe_check() would only fail the QP at transmit. The
 * operands lie over sge[1], which the one SGE leaves alone.
 */
static int kiwi_sqe_atomic(const struct ib_send_wr *wr, struct kiwi_sqe *sqe)
{
	if (wr->num_sge != 1 || (wr->send_flags & IB_SEND_INLINE) ||
	    wr->sg_list[0].length != sizeof(u64))
		return -EINVAL;
	sqe->opcode = wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ?
		      KIWI_WR_ATOMIC_CMP_SWP : KIWI_WR_ATOMIC_FETCH_ADD;
	sqe->raddr = atomic_wr(wr)->remote_addr;
	sqe->rkey = atomic_wr(wr)->rkey;
	sqe->compare_add = atomic_wr(wr)->compare_add;
	sqe->swap = atomic_wr(wr)->swap;
	return 0;
}

/* IB_WR_REG_MR, in a kernel ring only: the MR never reaches user space. */
static void kiwi_sqe_reg_mr(const struct ib_send_wr *wr, struct kiwi_sqe *sqe)
{
	sqe->opcode = KIWI_WR_REG_MR;
	sqe->reg_mr = (uintptr_t)reg_wr(wr)->mr;
	sqe->rkey = reg_wr(wr)->key;
	sqe->reg_access = reg_wr(wr)->access;
	sqe->id = wr->wr_id;
	kiwi_ring_set_flags(&sqe->flags, KIWI_WQE_VALID |
			    (wr->send_flags & IB_SEND_SIGNALED ?
			     KIWI_WQE_SIGNALED : 0));
}

/* The opcode, and what only it names: the remote buffer, an STag, data. */
static int kiwi_sqe_op(const struct ib_send_wr *wr, struct kiwi_sqe *sqe)
{
	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
		sqe->opcode = KIWI_WR_RDMA_WRITE;
		kiwi_sqe_remote(sqe, wr);
		return 0;
	case IB_WR_RDMA_READ:
		if (wr->num_sge > 1)	/* max_sge_rd */
			return -EINVAL;
		sqe->opcode = KIWI_WR_RDMA_READ;
		kiwi_sqe_remote(sqe, wr);
		return 0;
	case IB_WR_RDMA_READ_WITH_INV:
		return kiwi_sqe_read_inv(wr, sqe);
	case IB_WR_SEND:
		sqe->opcode = KIWI_WR_SEND;
		return 0;
	case IB_WR_SEND_WITH_IMM:
		sqe->opcode = KIWI_WR_SEND_IMM;
		sqe->imm_data = (__force u32)wr->ex.imm_data;
		return 0;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		sqe->opcode = KIWI_WR_WRITE_IMM;
		sqe->imm_data = (__force u32)wr->ex.imm_data;
		kiwi_sqe_remote(sqe, wr);
		return 0;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return kiwi_sqe_atomic(wr, sqe);
	case IB_WR_SEND_WITH_INV:
		sqe->opcode = KIWI_WR_SEND_INV;
		sqe->rkey = wr->ex.invalidate_rkey;
		return 0;
	case IB_WR_LOCAL_INV:
		sqe->opcode = KIWI_WR_LOCAL_INV;
		sqe->rkey = wr->ex.invalidate_rkey;
		return 0;
	default:
		return -EINVAL;
	}
}

/* The payload: copied inline (up to max_inline), or its SGEs. */
static int kiwi_sqe_payload(struct kiwi_qp *qp, const struct ib_send_wr *wr,
			    struct kiwi_sqe *sqe)
{
	u8 *dst = (u8 *)sqe->sge;
	u32 len = 0;
	int i;

	if (!(wr->send_flags & IB_SEND_INLINE)) {
		for (i = 0; i < wr->num_sge; i++) {
			sqe->sge[i].addr = wr->sg_list[i].addr;
			sqe->sge[i].length = wr->sg_list[i].length;
			sqe->sge[i].lkey = wr->sg_list[i].lkey;
		}
		sqe->num_sge = wr->num_sge;
		return 0;
	}
	if (sqe->opcode == KIWI_WR_RDMA_READ || sqe->opcode == KIWI_WR_READ_INV)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		if (wr->sg_list[i].length > qp->max_inline - len)
			return -EINVAL;
		memcpy(dst + len, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		len += wr->sg_list[i].length;
	}
	sqe->inline_len = len;
	return 0;
}

static int kiwi_sqe_from_wr(struct kiwi_qp *qp, const struct ib_send_wr *wr,
			    struct kiwi_sqe *sqe)
{
	u16 flags = 0;
	int ret;

	if (wr->num_sge > qp->sq.max_sge)
		return -EINVAL;
	if (wr->opcode == IB_WR_REG_MR) {
		kiwi_sqe_reg_mr(wr, sqe);
		return 0;
	}
	ret = kiwi_sqe_op(wr, sqe);
	if (!ret)
		ret = kiwi_sqe_payload(qp, wr, sqe);
	if (ret)
		return ret;
	if (wr->send_flags & IB_SEND_SIGNALED)
		flags |= KIWI_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		flags |= KIWI_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		flags |= KIWI_WQE_READ_FENCE;
	if (wr->send_flags & IB_SEND_INLINE)
		flags |= KIWI_WQE_INLINE;
	sqe->id = wr->wr_id;
	/* Publish the entry last. */
	kiwi_ring_set_flags(&sqe->flags, flags | KIWI_WQE_VALID);
	return 0;
}

/*
 * Kernel consumers post into the ring like libkiwi does; for user QPs the
 * call only kicks the kernel (the WRs are in the ring already).
 */
int kiwi_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	enum ib_qp_state state = READ_ONCE(qp->state);
	unsigned long flags;
	int ret = 0;

	if (!ibqp->uobject) {
		if (state != IB_QPS_RTS && state != IB_QPS_ERR) {
			*bad_wr = wr;
			return -EINVAL;
		}
		spin_lock_irqsave(&qp->sq_lock, flags);
		for (; wr; wr = wr->next) {
			struct kiwi_sqe *sqe = (struct kiwi_sqe *)qp->sq.ring +
					       (qp->sq.tail & (qp->sq.num - 1));

			if (sqe->flags & KIWI_WQE_VALID) {
				ret = -ENOMEM;
				break;
			}
			memset(sqe, 0, sizeof(*sqe));
			ret = kiwi_sqe_from_wr(qp, wr, sqe);
			if (ret)
				break;
			qp->sq.tail++;
		}
		spin_unlock_irqrestore(&qp->sq_lock, flags);
		if (ret)
			*bad_wr = wr;
		/*
		 * The QP may have failed since the state was read: its flush
		 * took qp->sq_lock after setting ERR, so either it flushed
		 * these entries or this read sees ERR, and flushes them.
		 */
		state = READ_ONCE(qp->state);
	}
	if (state == IB_QPS_ERR)
		kiwi_qp_flush(qp);
	else if (state == IB_QPS_RTS && ibqp->uobject)
		kiwi_tx_kick_direct(qp);	/* the POST_SEND system call */
	else if (state == IB_QPS_RTS)
		kiwi_tx_kick_kernel(qp);	/* may be atomic */
	return ret;
}

/* Fill a receive WQE (the caller checked its size) and publish it. */
void kiwi_rqe_from_wr(struct kiwi_rqe *rqe, const struct ib_recv_wr *wr)
{
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		rqe->sge[i].addr = wr->sg_list[i].addr;
		rqe->sge[i].length = wr->sg_list[i].length;
		rqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
	rqe->num_sge = wr->num_sge;
	rqe->id = wr->wr_id;
	kiwi_ring_set_flags(&rqe->flags, KIWI_WQE_VALID);
}

int kiwi_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	enum ib_qp_state state = READ_ONCE(qp->state);
	unsigned long flags;
	int ret = 0;

	/* A QP on an SRQ takes receives from it only (V-SRQ-5). */
	if (ibqp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}
	if (!ibqp->uobject) {
		if (state == IB_QPS_RESET) {
			*bad_wr = wr;
			return -EINVAL;
		}
		spin_lock_irqsave(&qp->rq_lock, flags);
		for (; wr; wr = wr->next) {
			struct kiwi_rqe *rqe = (struct kiwi_rqe *)qp->rq.ring +
					       (qp->rq.tail & (qp->rq.num - 1));

			if (rqe->flags & KIWI_WQE_VALID) {
				ret = -ENOMEM;
				break;
			}
			if (wr->num_sge > qp->rq.max_sge) {
				ret = -EINVAL;
				break;
			}
			kiwi_rqe_from_wr(rqe, wr);
			qp->rq.tail++;
		}
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		if (ret)
			*bad_wr = wr;
		state = READ_ONCE(qp->state);	/* as in kiwi_post_send() */
	}
	if (state == IB_QPS_ERR)
		kiwi_qp_flush(qp);
	return ret;
}
