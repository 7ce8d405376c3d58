// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: where the transmit loop runs: the QP's work item, a user
 * poster's system call, a kernel consumer's post and the receive softirq
 * (small Read and atomic responses), each owning the transmit state by
 * the owner bit (kiwi_tx_assert_owned()).
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
 * A loop in process context owns the transmit state once it holds
 * tx->run_lock and the owner bit. The loops that never wait (the receive
 * softirq's answers, a kernel consumer's post) hold the bit only while
 * they frame a few small messages for TCP, with bottom halves off, and
 * never wait for it: spinning here is short, and never on the holder's
 * own CPU.
 */
void kiwi_tx_own(struct kiwi_tx *tx)
{
	lockdep_assert_held(&tx->run_lock);
	while (test_and_set_bit_lock(KIWI_TX_OWNED, &tx->owner))
		cpu_relax();
}

void kiwi_tx_disown(struct kiwi_tx *tx)
{
	clear_bit_unlock(KIWI_TX_OWNED, &tx->owner);
}

/* A loop under run_lock ends: tell kiwi_qp_work_left(), if it waits. */
static void kiwi_tx_unlock(struct kiwi_tx *tx)
{
	mutex_unlock(&tx->run_lock);
	if (wq_has_sleeper(&tx->done_wq))
		wake_up(&tx->done_wq);
}

void kiwi_tx_work(struct work_struct *work)
{
	struct kiwi_tx *tx = container_of(work, struct kiwi_tx, work);

	mutex_lock(&tx->run_lock);
	kiwi_tx_own(tx);
	kiwi_tx_run(tx->qp);
	kiwi_tx_disown(tx);
	kiwi_tx_unlock(tx);
}

void kiwi_tx_kick(struct kiwi_qp *qp)
{
	if (qp->tx && !qp->tx->stopped)
		queue_work(kiwi_tx_wq, &qp->tx->work);
}

/**
 * kiwi_tx_response_in() - kick the loop a Read or atomic response may free
 * @qp: the QP whose oldest ORQ entry was just retired
 *
 * The loop waits on outstanding Reads only when it stopped at an entry
 * for them (ORD full, or a Read fence: tx->orq_wait), and a graceful
 * close waits for the ORQ to empty; otherwise nothing waits, and a kick
 * would only wake a worker to find no work, on the path of every Read's
 * round trip. A loop merely running meanwhile (the response often comes
 * in while the poster's own system call is still in TCP) needs none.
 *
 * Context: softirq (the receive path), after kiwi_orq_retire().
 */
void kiwi_tx_response_in(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;

	/*
	 * Our retire, then orq_wait; the loop's orq_wait, then the ORQ:
	 * each side sees the other's store.
	 */
	smp_mb();
	if (READ_ONCE(tx->orq_wait) ||
	    (qp->cep && test_bit(KIWI_CEP_CLOSE_GRACEFUL, &qp->cep->close_req)))
		kiwi_tx_kick(qp);
}

/**
 * kiwi_tx_kick_direct() - transmit a user QP's new entries right away
 * @qp: the QP, in RTS
 *
 * Runs the transmit loop in the caller's context when no other loop runs,
 * for as long as the entries are small and TCP takes them without waiting;
 * the work item does the rest.
 *
 * Context: process context (POST_SEND); may wait for the socket lock,
 * never for room in TCP.
 */
void kiwi_tx_kick_direct(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	bool more;

	if (!tx || tx->stopped)
		return;
	if (!mutex_trylock(&tx->run_lock)) {
		kiwi_tx_kick(qp);	/* the running loop may have looked */
		return;
	}
	kiwi_tx_own(tx);
	tx->direct = true;
	more = kiwi_tx_run(qp);
	tx->direct = false;
	kiwi_tx_disown(tx);
	/* Under run_lock, so that kiwi_engines_stop() can wait this out. */
	if (more)
		kiwi_tx_kick(qp);
	kiwi_tx_unlock(tx);
}

/*
 * Send the responses queued on the IRQ, oldest first, as long as each is
 * small and TCP takes it without waiting. Return: true when some are left
 * for the work item (or its carry, or an error).
 */
static bool kiwi_tx_answer_queued(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_irq_entry resp;
	int ret;

	while (kiwi_tx_resp_take(tx, &resp, true)) {
		ret = kiwi_tx_resp_send(qp, &resp);
		if (ret == -EAGAIN)
			return true;
		if (ret) {
			/* Not from softirq: kiwi_tx_fail() calls the CM. */
			tx->answer_err = ret;
			return true;
		}
		atomic64_inc(&qp->kdev->stats[KIWI_STAT_RESP_SOFTIRQ]);
	}
	return tx->carry_len;
}

/*
 * Run @fn, a loop that never waits, with the socket taken as TCP's receive
 * path takes it (its spinlock held, bottom halves off, no owner) and the
 * transmit state owned: the bytes go to tcp_sendmsg_locked(), and the
 * socket's allocations turn atomic meanwhile (the socket never copies into
 * the task's page fragment: kiwi_engines_start()).
 * Return: @fn's: true when work is left for the work item.
 */
static bool kiwi_tx_run_atomic(struct kiwi_qp *qp,
			       bool (*fn)(struct kiwi_qp *qp))
{
	struct kiwi_tx *tx = qp->tx;
	struct sock *sk = qp->sock->sk;
	gfp_t gfp = sk->sk_allocation;
	bool more;

	sk->sk_allocation = GFP_ATOMIC | __GFP_NOWARN;
	tx->direct = true;
	tx->locked = true;
	more = fn(qp);
	tx->locked = false;
	tx->direct = false;
	sk->sk_allocation = gfp;
	return more;
}

/* Can the transmit state go to a loop that never waits? (owner bit held) */
static bool kiwi_tx_atomic_ok(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;

	return !tx->stopped && qp->sock && !tx->term_pending &&
	       !qp->rtr_pending && !tx->carry_len && !tx->answer_err &&
	       (READ_ONCE(qp->state) == IB_QPS_RTS ||
		READ_ONCE(qp->state) == IB_QPS_SQD);
}

/**
 * kiwi_tx_answer() - answer the peer's Reads and atomics from the receive
 *	path, without a wake-up
 * @qp: the QP whose receive engine queued them (kiwi_irq_add())
 *
 * A worker's wake-up took longer than the whole round trip of a small
 * Read; hardware answers without the host, so this sends small responses
 * right where their requests came in, when no transmit loop runs. TCP's
 * receive path holds the socket (kiwi_tx_run_atomic()); TCP sends ACKs
 * and queued data from this context too. Everything else, and a response
 * that finds a loop running, goes to the work item.
 *
 * Context: the socket's data-ready callback: in softirq, with the
 * socket's bh lock held and no owner; or in process context from
 * release_sock(), where this only kicks the work item.
 */
void kiwi_tx_answer(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	bool more = true;

	lockdep_assert(lockdep_sock_is_held(qp->sock->sk));
	if (!in_serving_softirq() || sock_owned_by_user(qp->sock->sk) ||
	    test_and_set_bit_lock(KIWI_TX_OWNED, &tx->owner)) {
		kiwi_tx_kick(qp);
		return;
	}
	if (kiwi_tx_atomic_ok(qp))
		more = kiwi_tx_run_atomic(qp, kiwi_tx_answer_queued);
	kiwi_tx_disown(tx);
	/* The work item also tells a graceful close that the IRQ is empty. */
	if (more || (qp->cep &&
		     test_bit(KIWI_CEP_CLOSE_GRACEFUL, &qp->cep->close_req)))
		kiwi_tx_kick(qp);
}

/*
 * Has TCP sent every byte it was given (the socket held)? If not, the
 * connection streams: new bytes would only queue behind the rest, and
 * the work item, which sends entries back to back, does better.
 */
static bool kiwi_tx_sent_all(struct sock *sk)
{
	return tcp_sk(sk)->write_seq == tcp_sk(sk)->snd_nxt;
}

/*
 * The owner bit held, bottom halves off: take the socket as TCP's receive
 * path does, if it is free, and run the loop there. Return: true when work
 * is left for the work item.
 */
static bool kiwi_tx_run_sk(struct kiwi_qp *qp)
{
	struct sock *sk = qp->sock->sk;
	bool more = true;

	if (!spin_trylock(&sk->sk_lock.slock))
		return true;
	if (!sock_owned_by_user(sk) && kiwi_tx_sent_all(sk))
		more = kiwi_tx_run_atomic(qp, kiwi_tx_run);
	spin_unlock(&sk->sk_lock.slock);
	return more;
}

/**
 * kiwi_tx_kick_kernel() - transmit a kernel consumer's new entries right
 *	away
 * @qp: the QP, in RTS
 *
 * Kernel consumers post from atomic context as often as not (a block
 * driver's queue_rq, a completion handler, under their own spinlocks),
 * where neither tx->run_lock nor the socket lock may be waited for. So
 * this only tries: for the owner bit, then for the socket's spinlock,
 * which with no owner makes the socket ours as in TCP's receive path. With
 * both, and with everything TCP had sent (kiwi_tx_sent_all()), it runs
 * the loop as a direct one, small entries only, never waiting
 * (kiwi_tx_run_atomic()), and saves the work item's wake-up on every
 * storage command. A try that fails (a loop runs, the socket is
 * busy, or this CPU holds its spinlock already: a completion handler
 * posting from kiwi's own receive path) and whatever the loop leaves go
 * to the work item.
 *
 * Context: any; with hard interrupts or interrupts off, the work item.
 */
void kiwi_tx_kick_kernel(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	bool more = true;

	if (!tx || tx->stopped)
		return;
	if (in_hardirq() || irqs_disabled()) {
		kiwi_tx_kick(qp);
		return;
	}
	local_bh_disable();
	if (!test_and_set_bit_lock(KIWI_TX_OWNED, &tx->owner)) {
		/* @stopped is set before the socket may go (engines_stop) */
		if (kiwi_tx_atomic_ok(qp))
			more = kiwi_tx_run_sk(qp);
		kiwi_tx_disown(tx);
	}
	local_bh_enable();
	if (more)
		kiwi_tx_kick(qp);
}
