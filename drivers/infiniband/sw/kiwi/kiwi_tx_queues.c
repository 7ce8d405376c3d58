// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: the transmit engine's queues: send queue entries completed in
 * order, the ORQ (our RDMA Reads and atomics awaiting their response) and
 * the IRQ (the peer's, awaiting ours).
 *
 * Context and locks: kiwi_tx.c's header.
 */

#include <linux/errqueue.h>
#include <linux/highmem.h>
#include <linux/tcp.h>
#include <net/tcp.h>

#include "kiwi.h"
#include "kiwi_trace.h"
#include "kiwi_fault.h"
#include "kiwi_mem.h"
#include "kiwi_wqe.h"
#include "kiwi_tx.h"

/*
 * The oldest inbound Read is answered: free its IRQ slot. This happens
 * just before the batch holding the response's last FPDU goes to TCP: the
 * peer may send its next Read Request as soon as that arrives, before
 * kernel_sendmsg() returns, and must find the slot free; before then the
 * Read is still outstanding and counts against the IRD (R-RRQ-15).
 */
void kiwi_tx_irq_retire(struct kiwi_tx *tx)
{
	unsigned long flags;

	spin_lock_irqsave(&tx->irq_lock, flags);
	tx->irq_head++;
	spin_unlock_irqrestore(&tx->irq_lock, flags);
}

void kiwi_tx_put_cur(struct kiwi_tx *tx)
{
	int i;

	for (i = 0; i < KIWI_MAX_SGE; i++) {
		if (tx->cur_mem[i])
			kiwi_mem_put(tx->cur_mem[i]);
		tx->cur_mem[i] = NULL;
	}
	WRITE_ONCE(tx->cur_active, false);
}

/*
 * The entry at tx->next is finished with @status: move past it and
 * complete in order. tx->next changes under qp->sq_lock because
 * kiwi_sq_complete() reads it from the receive engine too.
 */
void kiwi_tx_slot_done(struct kiwi_qp *qp, u8 status)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_sq_slot *slot;
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	slot = &tx->slots[tx->next & (qp->sq.num - 1)];
	slot->status = status;
	tx->next++;
	if (slot->zc_open) {
		/* Sent without copying: done once TCP lets go of its pages. */
		slot->zc_open = false;
		tx->zc_sending = false;
		slot->zc_count = atomic_read(&qp->sock->sk->sk_zckey) -
				 slot->zc_first;
		if (slot->zc_done < slot->zc_count) {
			tx->zc_waiting++;
			spin_unlock_irqrestore(&qp->sq_lock, flags);
			return;
		}
	}
	slot->done = true;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	kiwi_sq_complete(qp);
}

/**
 * kiwi_sq_complete() - post completions for finished send queue entries
 * @qp: the QP
 *
 * Entries complete in the order they were posted: an entry waits for every
 * earlier one, RDMA Reads included. Unsignalled successes complete
 * silently; errors always complete.
 * Context: any; takes qp->sq_lock.
 */
void kiwi_sq_complete(struct kiwi_qp *qp)
{
	struct kiwi_cqe cqe = { .qp_num = qp->base_qp.qp_num };
	unsigned long flags;
	bool lost = false;

	spin_lock_irqsave(&qp->sq_lock, flags);
	while (qp->sq.head != qp->tx->next) {
		u32 i = qp->sq.head & (qp->sq.num - 1);
		struct kiwi_sq_slot *slot = &qp->tx->slots[i];
		struct kiwi_sqe *sqe = (struct kiwi_sqe *)qp->sq.ring + i;

		if (!slot->done)
			break;
		/*
		 * The slot goes back before the completion is visible: a
		 * consumer that sees the completion may post into it at once.
		 */
		slot->done = false;
		slot->zc = false;
		kiwi_ring_set_flags(&sqe->flags, 0);
		qp->sq.head++;
		if (slot->signaled || qp->sig_all || slot->status != IB_WC_SUCCESS) {
			cqe.id = slot->id;
			cqe.opcode = kiwi_wc_opcode(slot->opcode);
			cqe.status = slot->status;
			cqe.bytes = slot->bytes;
			lost |= kiwi_cq_add(qp->scq, &cqe) != 0;
		}
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (lost)
		kiwi_qp_cq_error(qp);
}

/*
 * The ORQ and the IRQ as the receive engine sees them. While the engines
 * run the transmit loop only appends to the ORQ and the receive engine
 * only retires from it, so the oldest entry stays put until the receive
 * engine retires it; the IRQ is the other way round.
 */

/**
 * kiwi_orq_oldest() - the oldest RDMA Read this QP has in flight
 * @qp: the QP
 *
 * Context: the receive engine (socket lock held).
 * Return: its ORQ entry, or NULL when no Read is outstanding.
 */
struct kiwi_orq_entry *kiwi_orq_oldest(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;

	lockdep_assert(!qp->sock || lockdep_sock_is_held(qp->sock->sk));
	if (tx->orq_head == tx->orq_tail)
		return NULL;
	return &tx->orq[tx->orq_head % KIWI_MAX_ORD];
}

/**
 * kiwi_orq_retire() - the oldest Read has its answer: free its ORQ entry
 * @qp: the QP
 * @o: the entry kiwi_orq_oldest() returned
 * @status: ib_wc_status its send queue entry completes with (the RTR's
 *	Read has none)
 *
 * The caller then posts the completion with kiwi_sq_complete().
 * Context: the receive engine; takes qp->sq_lock.
 * Return: false if @o was no longer the oldest (the queue was flushed).
 */
bool kiwi_orq_retire(struct kiwi_qp *qp, const struct kiwi_orq_entry *o,
		     u8 status)
{
	struct kiwi_tx *tx = qp->tx;
	unsigned long flags;
	bool oldest;

	spin_lock_irqsave(&qp->sq_lock, flags);
	oldest = kiwi_orq_oldest(qp) == o;
	if (oldest) {
		tx->orq_head++;
		if (o->slot != KIWI_ORQ_RTR) {
			struct kiwi_sq_slot *slot =
				&tx->slots[o->slot & (qp->sq.num - 1)];

			slot->status = status;
			slot->done = true;
		}
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	return oldest;
}

/**
 * kiwi_irq_full() - does the peer have as many Reads and atomics
 * outstanding as the IRD allows?
 * @qp: the QP
 *
 * Only the receive engine adds to the IRQ: room it sees stays there.
 * Context: the receive engine; takes tx->irq_lock.
 */
bool kiwi_irq_full(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	unsigned long flags;
	bool full;

	spin_lock_irqsave(&tx->irq_lock, flags);
	full = tx->irq_tail - tx->irq_head >= max_t(u32, qp->ird, 1);
	spin_unlock_irqrestore(&tx->irq_lock, flags);
	return full;
}

/**
 * kiwi_irq_add() - queue an inbound RDMA Read Request for its response,
 *	or the Atomic Response to an atomic carried out
 * @qp: the QP
 * @rr: the Read Request, its source already checked, or NULL
 * @ar: else the Atomic Response
 *
 * Responses go out in the order of the requests (RFC 7306: atomics take
 * IRD like Reads and are answered in order with them).
 * Context: the receive engine; takes tx->irq_lock.
 * Return: 0, or -ENOSPC when the peer already has as many Reads and
 * atomics outstanding as the IRD allows.
 */
int kiwi_irq_add(struct kiwi_qp *qp, const struct kiwi_read_req *rr,
		 const struct kiwi_atomic_resp *ar)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_irq_entry *e;
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&tx->irq_lock, flags);
	if (tx->irq_tail - tx->irq_head >= max_t(u32, qp->ird, 1)) {
		ret = -ENOSPC;
	} else {
		e = &tx->irq[tx->irq_tail % KIWI_MAX_IRD];
		e->atomic = !rr;
		if (rr)
			e->req = *rr;
		else
			e->aresp = *ar;
		e->sent = 0;
		tx->irq_tail++;
	}
	spin_unlock_irqrestore(&tx->irq_lock, flags);
	return ret;
}
