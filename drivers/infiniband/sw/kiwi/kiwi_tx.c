// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: the transmit engine.
 *
 * Each connected QP has one transmit loop that turns, in this order, a
 * pending Terminate, the ready-to-receive message owed to the peer, RDMA
 * Read Responses the peer asked for, and send queue entries into FPDUs
 * (RFC 5044 framing around RFC 5041/5040 headers), sized to the
 * connection's MULPDU and handed to TCP in batches. The payload is gathered
 * straight from registered memory; TCP makes the only copy.
 *
 * The loop runs in the QP's work item on kiwi_tx_wq, or, for small entries,
 * directly where they are posted: in the POST_SEND system call that rang
 * the kernel for a user QP (kiwi_tx_kick_direct), in a kernel consumer's
 * post with the socket's spinlock taken (kiwi_tx_kick_kernel); small Read
 * and atomic responses go out from the receive softirq that read their
 * requests (kiwi_tx_answer). A direct loop never waits for TCP, and leaves
 * anything large or blocked to the work item.
 *
 * This file holds the loop and what each of its steps puts on the wire;
 * the framing, zero copy, the queues, where the loop runs and the engines'
 * lifecycle have files of their own (kiwi_tx.h names them).
 *
 * The loop's steps (a message, a send queue entry, a Read Response, the
 * Terminate, the RTR) return 0 once their bytes are with TCP, -EAGAIN when
 * they cannot go now and the loop stops until it is kicked again (ORD
 * full, or left to the work item), and any other negative errno
 * when the connection fails. An entry that is itself wrong is not a
 * connection failure: it completes in error and the QP fails.
 *
 * Context: the work item and a user poster's loop run in process context
 * under tx->run_lock; the other direct loops run atomic, with the socket's
 * spinlock. The owner bit (tx->owner) makes the loop single; only the
 * work item sleeps in TCP. The send queue's completion shadows and the ORQ
 * are protected by qp->sq_lock because the receive engine completes RDMA
 * Reads in softirq. The loop takes neither qp->state_lock nor the socket
 * lock. Lock order: the table in Documentation/infiniband/kiwi.rst.
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
 * Take the entry at tx->next: copy it out of the ring, validate it, and
 * resolve its local memory. Return: 0, -ENOENT if the ring has no entry
 * there, or -EINVAL for an entry that completes in error with *@status
 * (the QP then fails).
 */
static int kiwi_tx_load(struct kiwi_qp *qp, u8 *status)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_sqe *sqe = (struct kiwi_sqe *)qp->sq.ring +
			       (tx->next & (qp->sq.num - 1));
	struct kiwi_sq_slot *slot = &tx->slots[tx->next & (qp->sq.num - 1)];
	struct kiwi_sqe *c = &tx->cur;
	u64 len = 0;
	int i;

	if (tx->next - qp->sq.head >= qp->sq.num ||
	    !(kiwi_ring_flags(&sqe->flags) & KIWI_WQE_VALID))
		return -ENOENT;
	memcpy(c, sqe, sizeof(*c));
	slot->id = c->id;
	slot->opcode = c->opcode;
	slot->signaled = c->flags & KIWI_WQE_SIGNALED;
	slot->bytes = 0;
	slot->zc = false;
	slot->zc_open = false;
	tx->cur_sent = 0;
	WRITE_ONCE(tx->cur_active, true);

	/* Opcode and lengths: kiwi_wqe.c, fuzzed on the host. */
	switch (kiwi_sqe_check(c, !!qp->base_qp.uobject, qp->sq.max_sge,
			       qp->max_inline)) {
	case KIWI_SQE_OK:
		break;
	case KIWI_SQE_BAD_OP:
		*status = IB_WC_LOC_QP_OP_ERR;
		return -EINVAL;
	default:
		*status = IB_WC_LOC_LEN_ERR;
		return -EINVAL;
	}
	if (!kiwi_sqe_has_payload(c))
		return 0;
	if (c->flags & KIWI_WQE_INLINE) {
		tx->cur_len = c->inline_len;
		slot->bytes = c->inline_len;
		return 0;
	}
	for (i = 0; i < c->num_sge; i++) {
		int access = kiwi_wr_uses_ord(c->opcode) ?
			     IB_ACCESS_LOCAL_WRITE : 0;
		struct kiwi_mem *mem;

		len += c->sge[i].length;
		if (!c->sge[i].length)
			continue;	/* zero-length SGEs are not checked */
		mem = kiwi_mem_get(qp->kdev, c->sge[i].lkey);
		tx->cur_mem[i] = mem;
		if (!mem || kiwi_mem_check(mem, qp->base_qp.pd, access,
					   c->sge[i].addr, c->sge[i].length)) {
			*status = IB_WC_LOC_PROT_ERR;
			return -EINVAL;
		}
	}
	if (len > U32_MAX) {
		*status = IB_WC_LOC_LEN_ERR;
		return -EINVAL;
	}
	tx->cur_len = len;
	slot->bytes = len;
	return 0;
}

/*
 * Send a request on QN 1 that a response will answer (an RDMA Read
 * Request, an RFC 7306 Atomic Request), its RDMAP header @rdmap of @len
 * bytes built, and queue @e, filled in but for its slot, on the ORQ for
 * that response: as the current entry's.
 */
static int kiwi_tx_orq_req(struct kiwi_qp *qp, u8 opcode, u8 *rdmap,
			   unsigned int len, const struct kiwi_orq_entry *e)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_tx_msg m = {
		.opcode = opcode,
		.qn = KIWI_QN_READ_REQ,
		.msn = tx->msn[KIWI_QN_READ_REQ] + 1,
		.rdmap_hdr = rdmap,
		.rdmap_len = len,
		.inline_data = rdmap,	/* no payload */
	};
	struct kiwi_orq_entry *o;
	unsigned long flags;
	u32 sent = 0;
	int ret;

	if (tx->direct && !kiwi_tx_direct_ok(qp, &m, 0))
		return -EAGAIN;
	/*
	 * The response may be in before kernel_sendmsg() returns: the entry
	 * must be on the ORQ, and counted as transmitted, before the request
	 * goes out, or its completion would wait for a later one.
	 */
	spin_lock_irqsave(&qp->sq_lock, flags);
	o = &tx->orq[tx->orq_tail % KIWI_MAX_ORD];
	*o = *e;	/* all of it: the slot may have held an atomic */
	o->slot = tx->next;
	tx->orq_tail++;
	tx->next++;
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	ret = kiwi_tx_message(qp, &m, &sent);
	if (!ret)
		tx->msn[KIWI_QN_READ_REQ]++;
	return ret;
}

/* Send the current RDMA Read's request and queue it on the ORQ. */
static int kiwi_tx_read_req(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_sqe *c = &tx->cur;
	struct kiwi_read_req rr = {
		.sink_stag = c->num_sge ? c->sge[0].lkey : 0,
		.sink_to = c->num_sge ? c->sge[0].addr : 0,
		.size = tx->cur_len,
		.src_stag = c->rkey,
		.src_to = c->raddr,
	};
	struct kiwi_orq_entry e = {
		.sink_stag = rr.sink_stag,
		.sink_to = rr.sink_to,
		.len = rr.size,
		.invalidate = c->opcode == KIWI_WR_READ_INV,
		.inv_stag = c->inv_stag,
	};
	u8 rdmap[KIWI_READ_REQ_LEN];

	kiwi_read_req_build(rdmap, &rr);
	return kiwi_tx_orq_req(qp, KIWI_OP_READ_REQ, rdmap, sizeof(rdmap), &e);
}

/*
 * Send the current atomic's RFC 7306 Atomic Request and queue it on the
 * ORQ, like a Read: on QN 1, in sequence with Read Requests, its MSN its
 * Request Identifier. The verbs' operands: FetchAdd adds compare_add,
 * CmpSwap compares compare_add and swaps in swap, all 64 bits.
 */
static int kiwi_tx_atomic_req(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_sqe *c = &tx->cur;
	u32 msn = tx->msn[KIWI_QN_READ_REQ] + 1;
	struct kiwi_atomic_req ar = {
		.req_id = msn,
		.stag = c->rkey,
		.to = c->raddr,
	};
	struct kiwi_orq_entry e = {
		.atomic = true,
		.msn = msn,
		.sink_stag = c->atomic_sge.lkey,
		.sink_to = c->atomic_sge.addr,
		.len = sizeof(u64),
	};
	u8 rdmap[KIWI_ATOMIC_REQ_LEN];

	if (c->opcode == KIWI_WR_ATOMIC_CMP_SWP) {
		ar.code = KIWI_ATOMIC_CMP_SWAP;
		ar.compare = c->compare_add;
		ar.compare_mask = ~0ull;
		ar.add_swap = c->swap;
		ar.add_swap_mask = ~0ull;
	} else {
		ar.code = KIWI_ATOMIC_FETCH_ADD;
		ar.add_swap = c->compare_add;
	}
	kiwi_atomic_req_build(rdmap, &ar);
	return kiwi_tx_orq_req(qp, KIWI_OP_ATOMIC_REQ, rdmap, sizeof(rdmap),
			       &e);
}

/*
 * An RFC 7306 Immediate Data message on queue 0: @imm from the current
 * entry, and kiwi's word (KIWI_IMM_WITH_SEND or 0). Context: the work
 * item (kiwi_tx_sqe() leaves these entries to it).
 */
static int kiwi_tx_imm(struct kiwi_qp *qp, u8 opcode, u32 word)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_imm imm = { .data = tx->cur.imm_data, .kiwi = word };
	u8 buf[KIWI_IMM_LEN];
	struct kiwi_tx_msg m = {
		.opcode = opcode,
		.qn = KIWI_QN_SEND,
		.msn = tx->msn[KIWI_QN_SEND] + 1,
		.rdmap_hdr = buf,
		.rdmap_len = sizeof(buf),
		.inline_data = buf,	/* no payload */
	};
	u32 sent = 0;
	int ret;

	kiwi_imm_build(buf, &imm);
	ret = kiwi_tx_message(qp, &m, &sent);
	if (!ret)
		tx->msn[KIWI_QN_SEND]++;
	return ret;
}

/*
 * A kernel consumer's IB_WR_REG_MR: the MR, its new key and its rights
 * (kiwi_sqe_from_wr). Return: 0 or a negative errno.
 */
static int kiwi_tx_reg_mr(struct kiwi_qp *qp, const struct kiwi_sqe *c)
{
	struct ib_mr *mr = (struct ib_mr *)(uintptr_t)c->reg_mr;

	if (mr->pd != qp->base_qp.pd)
		return -EINVAL;
	return kiwi_mem_fastreg(qp->kdev, mr, c->rkey, c->reg_access);
}

/*
 * Transmit the entry at tx->next. Return: 0 done, -EAGAIN not now (ORD
 * full, or not for a direct loop), or another negative errno: the
 * connection fails.
 */
static int kiwi_tx_sqe(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_sqe *c = &tx->cur;
	struct kiwi_tx_msg m = {
		.len = tx->cur_len,
		.mem = tx->cur_mem,
		.sge = c->sge,
		.num_sge = c->num_sge,
		.inline_data = c->flags & KIWI_WQE_INLINE ? (u8 *)c->sge : NULL,
	};
	int ret;

	/*
	 * With immediate data two messages go out: not from a poster's
	 * context, where the second might find no room (kiwi_tx_keep_unsent()).
	 */
	if (tx->direct && (c->opcode == KIWI_WR_WRITE_IMM ||
			   c->opcode == KIWI_WR_SEND_IMM))
		return -EAGAIN;
	switch (c->opcode) {
	case KIWI_WR_RDMA_READ:
	case KIWI_WR_READ_INV:
	case KIWI_WR_ATOMIC_CMP_SWP:
	case KIWI_WR_ATOMIC_FETCH_ADD:
		/*
		 * ORD is full (it may have been lowered in RTS): wait, for
		 * a kick once a response retires an entry.
		 */
		WRITE_ONCE(tx->orq_wait, true);
		smp_mb();	/* pairs with kiwi_tx_response_in()'s */
		if (tx->orq_tail - READ_ONCE(tx->orq_head) >= READ_ONCE(qp->ord))
			return -EAGAIN;
		WRITE_ONCE(tx->orq_wait, false);
		/* Completes when the response is in (kiwi_rx.c). */
		ret = kiwi_wr_is_read(c->opcode) ? kiwi_tx_read_req(qp) :
						   kiwi_tx_atomic_req(qp);
		if (ret != -EAGAIN)
			kiwi_tx_put_cur(tx);
		return ret;
	case KIWI_WR_RDMA_WRITE:
	case KIWI_WR_WRITE_IMM:
		m.opcode = KIWI_OP_WRITE;
		m.tagged = true;
		m.stag = c->rkey;
		m.to = c->raddr;
		break;
	case KIWI_WR_SEND_IMM:
		/*
		 * RFC 7306 has no Send with Immediate: the Immediate Data
		 * goes first, marked for the Send behind it, and the peer
		 * completes both with the Send's receive WQE.
		 */
		if (!tx->cur_sent) {
			ret = kiwi_tx_imm(qp, KIWI_OP_IMM, KIWI_IMM_WITH_SEND);
			if (ret)
				return ret;
		}
		fallthrough;
	case KIWI_WR_SEND:
	case KIWI_WR_SEND_INV:
		m.opcode = c->opcode == KIWI_WR_SEND_INV ?
			(c->flags & KIWI_WQE_SOLICITED ? KIWI_OP_SEND_SE_INV :
							 KIWI_OP_SEND_INV) :
			(c->flags & KIWI_WQE_SOLICITED ? KIWI_OP_SEND_SE :
							 KIWI_OP_SEND);
		m.qn = KIWI_QN_SEND;
		m.msn = tx->msn[KIWI_QN_SEND] + 1;
		m.inv_stag = c->opcode == KIWI_WR_SEND_INV ? c->rkey : 0;
		break;
	case KIWI_WR_LOCAL_INV:
	case KIWI_WR_REG_MR:
	case KIWI_WR_BIND_MW:
		if (c->opcode == KIWI_WR_LOCAL_INV)
			ret = kiwi_mem_invalidate(qp->kdev, c->rkey,
						  &qp->base_qp, false);
		else if (c->opcode == KIWI_WR_BIND_MW)
			ret = kiwi_mem_bind(qp->kdev, &qp->base_qp, c);
		else
			ret = kiwi_tx_reg_mr(qp, c);
		kiwi_tx_put_cur(tx);
		kiwi_tx_slot_done(qp, ret ? IB_WC_MW_BIND_ERR : IB_WC_SUCCESS);
		/* A refused one terminates the QP, the loop stops (V-AMB-7). */
		if (ret) {
			tx->sq_failed = true;
			kiwi_qp_error(qp);
		}
		return 0;
	default:
		return -EINVAL;
	}

	if (tx->direct && !kiwi_tx_direct_ok(qp, &m, tx->cur_sent))
		return -EAGAIN;
	if (kiwi_tx_zc_ok(qp, &m, tx->cur_sent)) {
		kiwi_tx_zc_open(qp);
		ret = kiwi_tx_message_zc(qp, &m, &tx->cur_sent);
	} else {
		ret = kiwi_tx_message(qp, &m, &tx->cur_sent);
	}
	if (ret)
		return ret;
	if (!m.tagged)
		tx->msn[KIWI_QN_SEND]++;
	/* The Write's Immediate Data follows it, with its SE. */
	if (c->opcode == KIWI_WR_WRITE_IMM) {
		ret = kiwi_tx_imm(qp, c->flags & KIWI_WQE_SOLICITED ?
				  KIWI_OP_IMM_SE : KIWI_OP_IMM, 0);
		if (ret)
			return ret;
	}
	kiwi_tx_put_cur(tx);
	kiwi_tx_slot_done(qp, IB_WC_SUCCESS);
	return 0;
}

/* Send the Atomic Response for the oldest inbound atomic (carried out). */
static int kiwi_tx_atomic_resp(struct kiwi_qp *qp, struct kiwi_irq_entry *e)
{
	struct kiwi_tx *tx = qp->tx;
	u8 rdmap[KIWI_ATOMIC_RESP_LEN];
	struct kiwi_tx_msg m = {
		.opcode = KIWI_OP_ATOMIC_RESP,
		.qn = KIWI_QN_ATOMIC_RESP,
		.msn = tx->msn[KIWI_QN_ATOMIC_RESP] + 1,
		.rdmap_hdr = rdmap,
		.rdmap_len = sizeof(rdmap),
		.inline_data = rdmap,	/* no payload */
		.retires_irq = true,
	};
	int ret;

	if (tx->direct && !kiwi_tx_direct_ok(qp, &m, e->sent))
		return -EAGAIN;
	kiwi_atomic_resp_build(rdmap, &e->aresp);
	ret = kiwi_tx_message(qp, &m, &e->sent);
	if (!ret)
		tx->msn[KIWI_QN_ATOMIC_RESP]++;
	return ret;
}

/* Answer the oldest inbound RDMA Read Request. */
static int kiwi_tx_read_resp(struct kiwi_qp *qp, struct kiwi_irq_entry *e)
{
	struct kiwi_mem *mem = NULL;
	struct kiwi_tx_msg m = {
		.opcode = KIWI_OP_READ_RESP,
		.tagged = true,
		.stag = e->req.sink_stag,
		.to = e->req.sink_to,
		.len = e->req.size,
		.single = true,
		.src_addr = e->req.src_to,
		.mem = &mem,
		.retires_irq = true,
	};
	int ret;

	if (qp->tx->direct && !kiwi_tx_direct_ok(qp, &m, e->sent))
		return -EAGAIN;
	if (e->req.size) {
		mem = kiwi_mem_get(qp->kdev, e->req.src_stag);
		if (!mem)
			return -EFAULT;
	} else {
		m.inline_data = (const u8 *)e;	/* nothing to gather */
	}
	if (kiwi_tx_zc_ok(qp, &m, e->sent))
		ret = kiwi_tx_message_zc(qp, &m, &e->sent);
	else
		ret = kiwi_tx_message(qp, &m, &e->sent);
	if (mem)
		kiwi_mem_put(mem);
	return ret;
}

/*
 * Is a Read or atomic response due? With @take, copy the oldest into
 * @resp and mark it active: the response works from a copy, as its slot
 * is freed, and may be taken again, while its last bytes go out.
 */
bool kiwi_tx_resp_take(struct kiwi_tx *tx, struct kiwi_irq_entry *resp,
		       bool take)
{
	unsigned long flags;
	bool due;

	spin_lock_irqsave(&tx->irq_lock, flags);
	due = tx->irq_head != tx->irq_tail;
	if (due && take) {
		*resp = tx->irq[tx->irq_head % KIWI_MAX_IRD];
		tx->resp_active = true;
	}
	spin_unlock_irqrestore(&tx->irq_lock, flags);
	return due;
}

/* Send the response kiwi_tx_resp_take() copied into @resp. */
int kiwi_tx_resp_send(struct kiwi_qp *qp, struct kiwi_irq_entry *resp)
{
	int ret;

	ret = resp->atomic ? kiwi_tx_atomic_resp(qp, resp) :
			     kiwi_tx_read_resp(qp, resp);
	WRITE_ONCE(qp->tx->resp_active, false);
	return ret;
}

static int kiwi_tx_terminate(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_tx_msg m = {
		.opcode = KIWI_OP_TERMINATE,
		.qn = KIWI_QN_TERMINATE,
		.msn = tx->msn[KIWI_QN_TERMINATE] + 1,
		.rdmap_hdr = tx->term_buf,
		.rdmap_len = tx->term_len,
		.inline_data = tx->term_buf,
	};
	u32 sent = 0;
	int ret;

	/*
	 * Nothing goes out after it; term_pending stays set while it is on
	 * its way, so that kiwi_engines_stop() waits for it.
	 */
	tx->stopped = true;
	ret = kiwi_tx_message(qp, &m, &sent);
	if (!ret)
		kiwi_stat_inc(qp->kdev, KIWI_STAT_TERM_SENT);
	if (!ret && trace_kiwi_terminate_enabled()) {
		struct kiwi_term t;

		if (!kiwi_term_parse(tx->term_buf, tx->term_len, &t))
			trace_kiwi_terminate(&qp->base_qp, true, &t);
	}
	WRITE_ONCE(tx->term_pending, false);
	return ret;
}

/* The zero-length message RFC 6581 has the initiator send first. */
static int kiwi_tx_rtr(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_tx_msg m = { .inline_data = (const u8 *)tx };
	u32 sent = 0;
	int ret;

	if (qp->rtr & KIWI_RTR_READ) {
		struct kiwi_read_req rr = {};
		u8 rdmap[KIWI_READ_REQ_LEN];
		unsigned long flags;

		/* Its (empty) response takes an ORQ slot like any Read. */
		spin_lock_irqsave(&qp->sq_lock, flags);
		tx->orq[tx->orq_tail % KIWI_MAX_ORD] = (struct kiwi_orq_entry){
			.slot = KIWI_ORQ_RTR,
		};
		tx->orq_tail++;
		spin_unlock_irqrestore(&qp->sq_lock, flags);
		kiwi_read_req_build(rdmap, &rr);
		m.opcode = KIWI_OP_READ_REQ;
		m.qn = KIWI_QN_READ_REQ;
		m.msn = tx->msn[KIWI_QN_READ_REQ] + 1;
		m.rdmap_hdr = rdmap;
		m.rdmap_len = sizeof(rdmap);
		ret = kiwi_tx_message(qp, &m, &sent);
		if (!ret)
			tx->msn[KIWI_QN_READ_REQ]++;
		return ret;
	}
	if (qp->rtr & KIWI_RTR_WRITE) {
		m.opcode = KIWI_OP_WRITE;
		m.tagged = true;
	} else {
		m.opcode = KIWI_OP_SEND;
		m.qn = KIWI_QN_SEND;
		m.msn = tx->msn[KIWI_QN_SEND] + 1;
	}
	ret = kiwi_tx_message(qp, &m, &sent);
	if (!ret && !m.tagged)
		tx->msn[KIWI_QN_SEND]++;
	return ret;
}

/*
 * The transmit state is this loop's: it holds the owner bit, and with it
 * tx->run_lock (process context) or the socket's spinlock (the loops that
 * never wait). Checked where lockdep is on.
 */
static void kiwi_tx_assert_owned(struct kiwi_qp *qp)
{
	lockdep_assert(test_bit(KIWI_TX_OWNED, &qp->tx->owner));
	lockdep_assert(lockdep_is_held(&qp->tx->run_lock) ||
		       lockdep_is_held(&qp->sock->sk->sk_lock.slock));
}

/* Context: the transmit loop (kiwi_tx_assert_owned()); qp->sock is set. */
static void kiwi_tx_fail(struct kiwi_qp *qp, int err)
{
	struct sock *sk = qp->sock->sk;
	bool stopped = qp->tx->stopped;

	kiwi_tx_assert_owned(qp);
	/* The MSS and TCP state tell a dead route (-EMSGSIZE) from a reset. */
	if (!stopped)
		ibdev_info_ratelimited(&qp->kdev->ibdev,
				       "QP %u: transmit failed (%d, MSS %u, TCP state %u), closing the connection\n",
				       qp->base_qp.qp_num, err,
				       tcp_sk(sk)->mss_cache, sk->sk_state);
	qp->tx->stopped = true;
	/* Counted once, and not when the engines were stopping anyway. */
	if (qp->cep && kiwi_cm_lost(qp->cep) && !stopped)
		kiwi_stat_inc(qp->kdev, err == -ETIMEDOUT ?
			      KIWI_STAT_LLP_TIMEOUT : KIWI_STAT_LLP_RESET);
}

/*
 * The transmit loop. Context: the owner bit held, with tx->run_lock or
 * the socket's spinlock (kiwi_tx_assert_owned()). Return: true when a
 * direct loop stopped at work only the work item may do (a Terminate, the
 * RTR, a Read Response, a large entry, a full socket, its budget spent).
 */
bool kiwi_tx_run(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	bool direct = tx->direct;
	int budget = KIWI_TX_DIRECT_BUDGET;
	int ret = 0;

	kiwi_tx_assert_owned(qp);
	if (tx->stopped || !qp->sock)
		return false;
	if (direct && (tx->term_pending || qp->rtr_pending || tx->carry_len ||
		       tx->answer_err))
		return true;
	if (tx->answer_err) {
		ret = tx->answer_err;
		goto fail;
	}
	if (tx->carry_len) {
		ret = kiwi_tx_flush_carry(qp);
		if (ret)
			goto fail;
	}
	if (tx->term_pending) {
		kiwi_tx_terminate(qp);
		return false;
	}
	if (READ_ONCE(qp->state) != IB_QPS_RTS &&
	    READ_ONCE(qp->state) != IB_QPS_SQD)
		goto idle;
	if (qp->rtr_pending) {
		if (!qp->initiator)
			return false;	/* nothing goes out before the peer's RTR */
		ret = kiwi_tx_rtr(qp);
		if (ret)
			goto fail;
		qp->rtr_pending = false;
	}

	for (;;) {
		struct kiwi_irq_entry resp;
		u8 status;

		/* A Terminate goes next, at a message boundary (R-TRM-6). */
		if (tx->stopped || READ_ONCE(tx->term_pending) ||
		    (READ_ONCE(qp->state) != IB_QPS_RTS &&
		     READ_ONCE(qp->state) != IB_QPS_SQD))
			break;
		if (kiwi_tx_resp_take(tx, &resp, !direct)) {
			if (direct)
				return true;	/* the work item answers Reads */
			ret = kiwi_tx_resp_send(qp, &resp);
			if (ret)
				goto fail;
			atomic64_inc(&qp->kdev->stats[KIWI_STAT_RESP_WORKER]);
			continue;
		}

		if (direct && !budget--)
			return true;
		if (tx->sq_failed)
			break;	/* the rest is flushed when the QP fails */
		ret = tx->cur_active ? 0 : kiwi_tx_load(qp, &status);
		if (ret == -ENOENT)
			break;
		/*
		 * V-RD-4: a Read with no Read resources (ORD 0) is a local
		 * error of the QP: Linux has no "Zero RDMA Read Resources"
		 * status, and IB_WC_LOC_QP_OP_ERR is the one for a WR the
		 * QP's own configuration cannot carry out.
		 */
		if (!ret && kiwi_wr_uses_ord(tx->cur.opcode) &&
		    !READ_ONCE(qp->ord)) {
			status = IB_WC_LOC_QP_OP_ERR;
			ret = -EINVAL;
		}
		if (ret) {
			kiwi_tx_put_cur(tx);
			kiwi_tx_slot_done(qp, status);
			tx->sq_failed = true;
			kiwi_qp_error(qp);
			return false;
		}
		if (tx->cur.flags & KIWI_WQE_READ_FENCE) {
			WRITE_ONCE(tx->orq_wait, true);
			smp_mb();	/* as before the ORD check */
			if (READ_ONCE(tx->orq_head) != tx->orq_tail)
				break;	/* fenced behind outstanding Reads */
			WRITE_ONCE(tx->orq_wait, false);
		}
		ret = kiwi_tx_sqe(qp);
		if (ret == -EAGAIN) {
			if (direct)
				return true;
			break;
		}
		if (ret)
			goto fail;
	}
idle:
	/* A graceful close waits for the queue to run dry. */
	if (qp->cep && kiwi_qp_tx_idle(qp))
		kiwi_cm_sq_drained(qp->cep);
	return false;
fail:
	kiwi_tx_fail(qp, ret);
	return false;
}
