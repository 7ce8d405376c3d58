// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: the engines' lifecycle: allocated with the QP, started on the
 * connected socket (its callbacks taken), stopped for good when the
 * connection ends, freed with the QP; whether work is still pending when
 * the peer closes.
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

struct workqueue_struct *kiwi_tx_wq;

/*
 * Work the peer's FIN would cut short: send queue entries not yet sent,
 * our RDMA Reads awaiting their response, the peer's awaiting ours.
 */
bool kiwi_qp_work_pending(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;

	return tx && !tx->stopped &&
	       (tx->cur_active || tx->orq_head != tx->orq_tail ||
		tx->irq_head != tx->irq_tail || READ_ONCE(tx->resp_active) ||
		(kiwi_ring_flags(&((struct kiwi_sqe *)qp->sq.ring +
				   (tx->next & (qp->sq.num - 1)))->flags) &
		 KIWI_WQE_VALID));
}

/**
 * kiwi_qp_work_left() - is work pending once the transmit loop settled?
 * @qp: the connected QP
 *
 * The peer may send its FIN the moment our last bytes reach it, while the
 * transmit loop that sent them has yet to retire the entry. A loop still
 * running is given 100 ms to finish (woken as it lets go of tx->run_lock);
 * one that stays busy (blocked in TCP on a long message) has work pending.
 *
 * Context: process context; takes tx->run_lock; sleeps.
 */
bool kiwi_qp_work_left(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	long left = msecs_to_jiffies(100);
	bool pending;

	while (kiwi_qp_work_pending(qp)) {
		if (mutex_trylock(&tx->run_lock)) {
			pending = kiwi_qp_work_pending(qp);
			mutex_unlock(&tx->run_lock);
			return pending;
		}
		left = wait_event_timeout(tx->done_wq,
					  !mutex_is_locked(&tx->run_lock) ||
					  !kiwi_qp_work_pending(qp), left);
		if (!left)
			break;
	}
	return kiwi_qp_work_pending(qp);
}

/**
 * kiwi_qp_fin_cuts_work() - would the peer's FIN cut work short?
 * @qp: the connected QP
 * @cep: its endpoint
 *
 * Work left (kiwi_qp_work_left()) when the peer's FIN is in makes its
 * close a Bad LLP Close (V-ST-R4, V-LLP-11).
 *
 * Context: process context, @cep's lock held; takes tx->run_lock; sleeps.
 */
bool kiwi_qp_fin_cuts_work(struct kiwi_qp *qp, struct kiwi_cep *cep)
{
	lockdep_assert_held(&cep->lock);
	return kiwi_qp_work_left(qp);
}

bool kiwi_qp_tx_idle(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;

	return !tx || tx->stopped ||
	       (!kiwi_qp_work_pending(qp) && !READ_ONCE(tx->zc_waiting));
}

int kiwi_engines_alloc(struct kiwi_qp *qp)
{
	qp->tx = kiwi_fault() ? NULL : kvzalloc(sizeof(*qp->tx), GFP_KERNEL);
	qp->rx = kiwi_fault() ? NULL : kzalloc(sizeof(*qp->rx), GFP_KERNEL);
	if (qp->tx && !kiwi_fault())
		qp->tx->slots = kvcalloc(qp->sq.num, sizeof(*qp->tx->slots),
					 GFP_KERNEL);
	if (!qp->tx || !qp->rx || !qp->tx->slots) {
		kiwi_engines_free(qp);
		return -ENOMEM;
	}
	qp->tx->qp = qp;
	qp->tx->stopped = true;
	INIT_WORK(&qp->tx->work, kiwi_tx_work);
	mutex_init(&qp->tx->run_lock);
	init_waitqueue_head(&qp->tx->done_wq);
	spin_lock_init(&qp->tx->irq_lock);
	qp->rx->state = KIWI_RX_DEAD;
	return 0;
}

void kiwi_engines_free(struct kiwi_qp *qp)
{
	if (qp->tx) {
		kvfree(qp->tx->slots);
		if (qp->tx->zc_page)
			put_page(qp->tx->zc_page);
	}
	kvfree(qp->tx);
	if (qp->rx)
		kvfree(qp->rx->hold_buf);
	kfree(qp->rx);
	qp->tx = NULL;
	qp->rx = NULL;
}

/*
 * Hand the connected socket to the engines: the receive engine takes its
 * data-ready callback and reads what already arrived behind the MPA frame.
 * Context: process context, qp->state_lock held.
 */
void kiwi_engines_start(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	struct sock *sk = qp->sock->sk;

	lockdep_assert_held(&qp->state_lock);
	memset(tx->msn, 0, sizeof(tx->msn));
	tx->next = qp->sq.head;
	tx->orq_head = 0;
	tx->orq_wait = false;
	tx->orq_tail = 0;
	tx->irq_head = 0;
	tx->irq_tail = 0;
	tx->term_pending = false;
	atomic_set(&tx->term_claimed, 0);
	tx->resp_active = false;
	tx->carry_len = 0;
	tx->answer_err = 0;
	tx->zc_waiting = 0;
	tx->zc_sending = false;
	tx->sq_failed = false;
	tx->stopped = false;

	lock_sock(sk);
	sk->sk_sndtimeo = KIWI_TX_TIMEOUT;
	/*
	 * TCP copies into the socket's own page fragment, never the current
	 * task's: the direct loops send from softirq and from any task's
	 * atomic context (kiwi_tx_run_atomic()).
	 */
	sk->sk_use_task_frag = false;
	kiwi_rx_reset(qp);
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_data_ready = kiwi_rx_data_ready;
	sk->sk_error_report = kiwi_tx_zc_report;
	write_unlock_bh(&sk->sk_callback_lock);
	sock_set_flag(sk, SOCK_ZEROCOPY);
	release_sock(sk);
	kiwi_rx_drain(qp);
	kiwi_tx_kick(qp);
}

/*
 * Stop both engines for good: nothing more is sent or placed. Context:
 * process context; qp->state_lock held (the engines never take it).
 */
void kiwi_engines_stop(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;

	lockdep_assert_held(&qp->state_lock);
	if (!tx || !qp->sock)
		return;
	/* A Terminate queued or being sent goes out before the socket closes. */
	if (READ_ONCE(tx->term_pending))
		flush_work(&tx->work);
	tx->stopped = true;
	kernel_sock_shutdown(qp->sock, SHUT_RDWR);
	/*
	 * Wait out a direct loop, be it a poster's, a kernel consumer's or
	 * the receive softirq's answers; one that starts later sees @stopped.
	 */
	mutex_lock(&tx->run_lock);
	kiwi_tx_own(tx);
	kiwi_tx_disown(tx);
	mutex_unlock(&tx->run_lock);
	cancel_work_sync(&tx->work);
	kiwi_tx_put_cur(tx);
	tx->carry_len = 0;

	lock_sock(qp->sock->sk);
	qp->rx->state = KIWI_RX_DEAD;
	kiwi_rx_reset(qp);
	qp->rx->state = KIWI_RX_DEAD;
	release_sock(qp->sock->sk);
}

int kiwi_tx_init(void)
{
	kiwi_tx_wq = kiwi_fault() ? NULL :
		     alloc_workqueue("kiwi_tx", WQ_HIGHPRI | WQ_MEM_RECLAIM |
				     WQ_UNBOUND, 0);
	return kiwi_tx_wq ? 0 : -ENOMEM;
}

void kiwi_tx_exit(void)
{
	destroy_workqueue(kiwi_tx_wq);
}
