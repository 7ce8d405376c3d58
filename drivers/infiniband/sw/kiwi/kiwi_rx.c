// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: the receive engine.
 *
 * Runs in the socket's data-ready callback (softirq, socket lock held) and
 * walks the byte stream FPDU by FPDU with tcp_read_sock(): kiwi_fpdu.c,
 * plain C the host fuzzer runs too, collects and validates the headers
 * (kiwi_wire.c), MSN and MO, and the trailer's CRC when negotiated; here
 * are the checks against connection state it calls out for (STags, the
 * receive WQE, RDMA Reads), and placement of payload straight from the skb
 * into registered memory (RDMA Write, Read Response) or into the receive
 * WQE's buffers (Send). With MPA CRCs nothing is placed before the FPDU's
 * CRC matched: payload of an FPDU whose end is in a later skb waits in
 * the QP's hold buffer (rx->hold_buf, allocated when the connection comes up).
 * Any violation queues a Terminate with the RFC 5040/5041/5044 code and
 * stops the engine; the connection manager then fails the QP.
 *
 * Context: softirq or process context with the socket lock held; never
 * sleeps. Takes qp->rq_lock, qp->sq_lock and tx->irq_lock (interrupts
 * off); lock order: the table in Documentation/infiniband/kiwi.rst.
 */

#include <linux/highmem.h>
#include <linux/skbuff.h>
#include <net/tcp.h>

#include "kiwi.h"
#include "kiwi_trace.h"
#include "kiwi_fault.h"
#include "kiwi_mem.h"
#include "kiwi_wqe.h"

/* CRC32c over skb bytes, for the MPA CRC of payload. */
static __wsum kiwi_rx_crc_update(const void *buf, int len, __wsum crc)
{
	return (__force __wsum)kiwi_crc32c_update((__force u32)crc, buf, len);
}

static __wsum kiwi_rx_crc_combine(__wsum crc, __wsum crc2, int off, int len)
{
	return (__force __wsum)__crc32c_le_combine((__force u32)crc,
						   (__force u32)crc2, len);
}

static const struct skb_checksum_ops kiwi_crc_ops = {
	.update = kiwi_rx_crc_update,
	.combine = kiwi_rx_crc_combine,
};

static void kiwi_rx_put_rqe(struct kiwi_rx *rx)
{
	int i;

	for (i = 0; i < KIWI_MAX_SGE; i++) {
		if (rx->rqe_mem[i])
			kiwi_mem_put(rx->rqe_mem[i]);
		rx->rqe_mem[i] = NULL;
	}
	rx->have_rqe = false;
}

/*
 * The port counter of a protocol violation the receive engine found, by
 * the Terminate code it sends; a site whose code is shared with other
 * causes named its counter in qp->rx_err_stat.
 */
static enum kiwi_stat kiwi_rx_err_stat(struct kiwi_qp *qp, u32 tc)
{
	if (qp->rx_err_stat)
		return qp->rx_err_stat;
	switch (tc) {
	case KIWI_TC_MPA_CRC:
		return KIWI_STAT_RX_CRC_ERR;
	case KIWI_TC_DDP_LOCAL_CATA:
		/* Else only kiwi_ddp_parse() and fpdu_hdr() send it. */
		return KIWI_STAT_RX_FPDU_LEN_ERR;
	case KIWI_TC_DDP_T_INV_STAG:
		return KIWI_STAT_RX_DDP_INV_STAG;
	case KIWI_TC_DDP_T_BASE_BOUNDS:
	case KIWI_TC_DDP_T_TO_WRAP:
		return KIWI_STAT_RX_DDP_BOUNDS_ERR;
	case KIWI_TC_DDP_T_STAG_NOT_ASSOC:
		return KIWI_STAT_RX_DDP_ACCESS_ERR;
	case KIWI_TC_DDP_T_INV_VERSION:
	case KIWI_TC_DDP_U_INV_VERSION:
		return KIWI_STAT_RX_DDP_VERSION_ERR;
	case KIWI_TC_DDP_U_INV_QN:
		return KIWI_STAT_RX_DDP_INV_QN;
	case KIWI_TC_DDP_U_NO_BUF:
		return KIWI_STAT_RX_NO_RECV_BUF;
	case KIWI_TC_DDP_U_INV_MSN:
		return KIWI_STAT_RX_DDP_INV_MSN;
	case KIWI_TC_DDP_U_INV_MO:
		return KIWI_STAT_RX_DDP_INV_MO;
	case KIWI_TC_DDP_U_TOO_LONG:
		return KIWI_STAT_RX_DDP_TOO_LONG;
	case KIWI_TC_RDMAP_INV_STAG:
		return KIWI_STAT_RX_RDMAP_INV_STAG;
	case KIWI_TC_RDMAP_BASE_BOUNDS:
	case KIWI_TC_RDMAP_TO_WRAP:
		return KIWI_STAT_RX_RDMAP_BOUNDS_ERR;
	case KIWI_TC_RDMAP_ACCESS:
	case KIWI_TC_RDMAP_STAG_NOT_ASSOC:
		return KIWI_STAT_RX_RDMAP_ACCESS_ERR;
	case KIWI_TC_RDMAP_PROT_CANT_INV:
		return KIWI_STAT_RX_INVAL_ERR;
	case KIWI_TC_RDMAP_INV_VERSION:
		return KIWI_STAT_RX_RDMAP_VERSION_ERR;
	case KIWI_TC_RDMAP_UNEXP_OPCODE:
		return KIWI_STAT_RX_RDMAP_OPCODE_ERR;
	case KIWI_TC_RDMAP_OP_UNSPEC:
	case KIWI_TC_RDMAP_CATA_STREAM:
		return KIWI_STAT_RX_RDMAP_OP_ERR;
	default:
		/* KIWI_TC_MPA_LOCAL_CATA: a copy out of the skb failed. */
		return KIWI_STAT_RX_LOCAL_ERR;
	}
}

/*
 * Stop receiving and have the transmit engine send a Terminate for @tc
 * about the current FPDU, then fail the connection; count the error in
 * port counter @stat.
 */
static void kiwi_rx_terminate(struct kiwi_qp *qp, u32 tc, enum kiwi_stat stat)
{
	struct kiwi_rx *rx = qp->rx;
	struct kiwi_term t;

	if (rx->state == KIWI_RX_DEAD)
		return;
	rx->state = KIWI_RX_DEAD;
	kiwi_stat_inc(qp->kdev, stat);
	ibdev_info_ratelimited(&qp->kdev->ibdev,
			       "QP %u: peer violated the protocol, sending Terminate %08x (opcode %u, ULPDU %u)\n",
			       qp->base_qp.qp_num, tc, rx->ddp.opcode,
			       rx->ulpdu_len);
	kiwi_fpdu_term(rx, tc, &t);
	/* Not when the QP is terminating already: it heard of that. */
	if (kiwi_qp_terminate(qp, &t))
		kiwi_qp_terminated(qp, tc);
}

static void kiwi_rx_complete_rqe(struct kiwi_qp *qp, u8 status);

/*
 * Take the next receive WQE for a new Send message, from the QP's receive
 * queue or its SRQ; an empty SRQ is an empty receive queue (V-SRQ-8).
 * The WQE's STags must belong to the PD of the queue it came from: the
 * SRQ's for an SRQ (V-SRQ-9); a WQE that fails that check completes with
 * a protection error (V-STAG0-3, V-SRQ-10). Return: 0 or a tc.
 */
static u32 kiwi_rx_take_rqe(struct kiwi_qp *qp)
{
	struct ib_srq *srq = qp->base_qp.srq;
	struct ib_pd *pd = srq ? srq->pd : qp->base_qp.pd;
	struct kiwi_rx *rx = qp->rx;
	struct kiwi_rqe *rqe;
	unsigned long flags;
	u32 max_sge;
	u64 len = 0;
	int i;

	if (srq) {
		if (!kiwi_srq_take(to_ksrq(srq), &rx->rqe))
			return KIWI_TC_DDP_U_NO_BUF;
		max_sge = to_ksrq(srq)->max_sge;
	} else {
		spin_lock_irqsave(&qp->rq_lock, flags);
		rqe = (struct kiwi_rqe *)qp->rq.ring +
		      (qp->rq.head & (qp->rq.num - 1));
		if (!(kiwi_ring_flags(&rqe->flags) & KIWI_WQE_VALID)) {
			spin_unlock_irqrestore(&qp->rq_lock, flags);
			return KIWI_TC_DDP_U_NO_BUF;
		}
		memcpy(&rx->rqe, rqe, sizeof(rx->rqe));
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		max_sge = qp->rq.max_sge;
	}

	rx->have_rqe = true;
	if (!kiwi_rqe_check(&rx->rqe, max_sge)) {
		qp->rx_err_stat = KIWI_STAT_RX_LOCAL_ERR;
		return KIWI_TC_DDP_LOCAL_CATA;
	}
	for (i = 0; i < rx->rqe.num_sge; i++) {
		struct kiwi_sge *sge = &rx->rqe.sge[i];

		len += sge->length;
		if (!sge->length)
			continue;
		rx->rqe_mem[i] = kiwi_mem_get(qp->kdev, sge->lkey);
		if (!rx->rqe_mem[i] ||
		    kiwi_mem_check(rx->rqe_mem[i], pd,
				   IB_ACCESS_LOCAL_WRITE, sge->addr, sge->length)) {
			/*
			 * The consumer's fault (V-ACC-5, V-PROT-4): the
			 * receive completes in error, not as flushed.
			 */
			kiwi_rx_complete_rqe(qp, IB_WC_LOC_PROT_ERR);
			qp->rx_err_stat = KIWI_STAT_RX_LOCAL_ERR;
			return KIWI_TC_DDP_LOCAL_CATA;
		}
	}
	rx->rqe_len = min_t(u64, len, U32_MAX);
	return 0;
}

/*
 * Complete the receive WQE of a finished Send message, or of RFC 7306
 * Immediate Data standing alone (after an RDMA Write: a Write with
 * Immediate, byte count the Write's).
 */
static void kiwi_rx_complete_rqe(struct kiwi_qp *qp, u8 status)
{
	struct kiwi_rx *rx = qp->rx;
	u8 op = rx->ddp.opcode;
	bool imm = op == KIWI_OP_IMM || op == KIWI_OP_IMM_SE;
	struct kiwi_cqe cqe = {
		.id = rx->rqe.id,
		.opcode = imm ? IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV,
		.status = status,
		.bytes = imm ? rx->write_bytes : rx->mo,
		.qp_num = qp->base_qp.qp_num,
	};
	struct kiwi_rqe *rqe;
	unsigned long flags;

	if (op == KIWI_OP_SEND_SE || op == KIWI_OP_SEND_SE_INV ||
	    op == KIWI_OP_IMM_SE)
		cqe.flags |= KIWI_CQE_SOLICITED;
	/* A WQE that failed took no message: it invalidated nothing. */
	if (status == IB_WC_SUCCESS && rx->ddp.inv_stag) {
		cqe.flags |= KIWI_CQE_INVALIDATED;
		cqe.inval_stag = rx->ddp.inv_stag;
	}
	/* Immediate Data: alone, or for this Send (never with invalidate) */
	if (status == IB_WC_SUCCESS && (imm || rx->imm_pending)) {
		cqe.flags |= KIWI_CQE_WITH_IMM;
		cqe.imm_data = rx->imm_data;
	}
	rx->imm_pending = false;
	rx->write_bytes = 0;
	kiwi_rx_put_rqe(rx);
	/* An SRQ's WQE left its ring when it was taken. */
	if (!qp->base_qp.srq) {
		spin_lock_irqsave(&qp->rq_lock, flags);
		rqe = (struct kiwi_rqe *)qp->rq.ring +
		      (qp->rq.head & (qp->rq.num - 1));
		kiwi_ring_set_flags(&rqe->flags, 0);
		qp->rq.head++;
		spin_unlock_irqrestore(&qp->rq_lock, flags);
	}
	if (kiwi_cq_add(qp->rcq, &cqe))
		kiwi_qp_cq_error(qp);
}

/*
 * A new segment passed kiwi_fpdu.c's checks: a Send takes a receive WQE if
 * it has none yet; a tagged segment is checked against its sink buffer.
 */
u32 kiwi_fpdu_start(struct kiwi_rx *rx, void *arg)
{
	struct kiwi_qp *qp = arg;
	struct kiwi_ddp_hdr *h = &rx->ddp;
	u32 seg = rx->data_left;
	/* Write or Read Response: place at (STag, TO). */
	int access = h->opcode == KIWI_OP_WRITE ?
		     IB_ACCESS_REMOTE_WRITE : IB_ACCESS_LOCAL_WRITE;
	u32 tc;

	if (h->opcode == KIWI_OP_IMM || h->opcode == KIWI_OP_IMM_SE) {
		struct kiwi_imm imm;

		/* One Immediate Data per Send at most, then that Send. */
		if (rx->imm_pending)
			return KIWI_TC_RDMAP_OP_UNSPEC;
		kiwi_imm_parse(rx->hdr + KIWI_MPA_LEN_SIZE +
			       KIWI_UNTAGGED_HDR_LEN, &imm);
		rx->imm_data = imm.data;
		/* For the Send behind it: that takes the receive WQE. */
		if (imm.kiwi == KIWI_IMM_WITH_SEND)
			return 0;
		/* Not inside a Send that holds a WQE (a zero-length start) */
		if (rx->have_rqe)
			return KIWI_TC_DDP_U_INV_MO;
		return kiwi_rx_take_rqe(qp);
	}
	if (!h->tagged)
		return rx->have_rqe ? 0 : kiwi_rx_take_rqe(qp);
	if (h->opcode == KIWI_OP_READ_RESP) {
		/* A response must answer our oldest Read, in place. */
		struct kiwi_orq_entry *o = kiwi_orq_oldest(qp);

		/* An atomic is answered by an Atomic Response, not this. */
		if (!o || o->atomic) {
			qp->rx_err_stat = KIWI_STAT_RX_RESP_ERR;
			return KIWI_TC_RDMAP_UNEXP_OPCODE;
		}
		if (h->stag != o->sink_stag || h->to != o->sink_to + o->got ||
		    o->got + seg > o->len) {
			qp->rx_err_stat = KIWI_STAT_RX_RESP_ERR;
			return KIWI_TC_DDP_T_BASE_BOUNDS;
		}
	}
	if (!seg)
		return 0;	/* zero length: no STag to check */
	rx->tmem = kiwi_mem_get(qp->kdev, h->stag);
	if (!rx->tmem)
		return KIWI_TC_DDP_T_INV_STAG;
	rx->to = h->to;
	tc = kiwi_mem_check_tagged(&rx->tmem, &qp->base_qp, access,
				   &rx->to, seg);
	/*
	 * DDP has no access-rights code (R-AMB-6): the RDMAC verbs
	 * (Fig. 24) report missing rights like a foreign PD, 0x1102.
	 */
	if (tc)
		return tc == KIWI_TC_RDMAP_BASE_BOUNDS ?
		       KIWI_TC_DDP_T_BASE_BOUNDS :
		       tc == KIWI_TC_RDMAP_TO_WRAP ? KIWI_TC_DDP_T_TO_WRAP :
		       tc == KIWI_TC_RDMAP_STAG_NOT_ASSOC ||
		       tc == KIWI_TC_RDMAP_ACCESS ?
		       KIWI_TC_DDP_T_STAG_NOT_ASSOC : KIWI_TC_DDP_T_INV_STAG;
	return 0;
}

u32 kiwi_fpdu_crc(const void *src, unsigned int off, unsigned int len,
		  u32 crc)
{
	return (__force u32)__skb_checksum(src, off, len, (__force __wsum)crc,
					   &kiwi_crc_ops);
}

/* Write @len bytes to @mem at @addr: from @skb at @off, or (NULL) @buf. */
static int kiwi_rx_write(struct kiwi_mem *mem, u64 addr,
			 const struct sk_buff *skb, const u8 *buf,
			 unsigned int off, unsigned int len)
{
	if (skb)
		return kiwi_mem_write_skb(mem, addr, skb, off, len);
	return kiwi_mem_write(mem, addr, buf + off, len);
}

/*
 * Place @len payload bytes of the current segment from @src at @off, or,
 * when @src is NULL, from rx->hold_buf at @off.
 */
u32 kiwi_fpdu_place(struct kiwi_rx *rx, void *arg, const void *src,
		    unsigned int off, unsigned int len)
{
	const struct sk_buff *skb = src;
	struct kiwi_qp *qp = arg;
	u32 pos = rx->mo;

	if (!skb)
		atomic64_add(len, &qp->kdev->stats[KIWI_STAT_RX_HELD_BYTES]);
	if (rx->ddp.tagged) {
		if (kiwi_rx_write(rx->tmem, rx->to, skb, rx->hold_buf, off, len)) {
			qp->rx_err_stat = KIWI_STAT_RX_LOCAL_ERR;
			return KIWI_TC_DDP_LOCAL_CATA;
		}
		rx->to += len;
		return 0;
	}
	/* Send payload: scatter over the receive WQE's SGEs. */
	while (len) {
		struct kiwi_sge *sge;
		u32 in, at;
		int i;

		i = kiwi_sge_find(rx->rqe.sge, rx->rqe.num_sge, pos, &at);
		if (i < 0)
			return KIWI_TC_DDP_U_TOO_LONG;
		sge = &rx->rqe.sge[i];
		in = min(len, sge->length - at);
		if (kiwi_rx_write(rx->rqe_mem[i], sge->addr + at, skb,
				  rx->hold_buf, off, in)) {
			qp->rx_err_stat = KIWI_STAT_RX_LOCAL_ERR;
			return KIWI_TC_DDP_LOCAL_CATA;
		}
		pos += in;
		off += in;
		len -= in;
	}
	return 0;
}

/*
 * A Terminate that echoes our oldest outstanding Read Request relates to
 * that Read: it completes with the peer's verdict, not as flushed (V-CS-1,
 * "Remote Termination Error"; a protection error is an access error).
 * One that echoes the DDP header of our oldest Atomic Request (its MSN)
 * does the same for the atomic; a Remote Operation error there, such as a
 * peer without RFC 7306 (Unexpected OpCode) or an address not 8-byte
 * aligned, is the verbs' Remote Invalid Request.
 */
static void kiwi_rx_term_read(struct kiwi_qp *qp, const struct kiwi_term *t)
{
	struct kiwi_orq_entry *o = kiwi_orq_oldest(qp);
	struct kiwi_read_req rr;
	u8 status;

	if (o && o->atomic && t->ddp_hdr && t->opcode == KIWI_OP_ATOMIC_REQ &&
	    t->ddp_hdr_len == KIWI_UNTAGGED_HDR_LEN &&
	    get_unaligned_be32(t->ddp_hdr + 10) == o->msn) {
		if (kiwi_tc_access(t->code))
			status = IB_WC_REM_ACCESS_ERR;
		else if (KIWI_TC_LAYER(t->code) == KIWI_LAYER_RDMAP &&
			 KIWI_TC_ETYPE(t->code) == 2)
			status = IB_WC_REM_INV_REQ_ERR;
		else
			status = IB_WC_REM_OP_ERR;
		if (kiwi_orq_retire(qp, o, status))
			kiwi_sq_complete(qp);
		return;
	}
	if (!t->rdmap_hdr || t->opcode != KIWI_OP_READ_REQ || !o ||
	    o->slot == KIWI_ORQ_RTR || o->atomic)
		return;
	kiwi_read_req_parse(t->rdmap_hdr, &rr);
	if (rr.sink_stag == o->sink_stag && rr.sink_to == o->sink_to &&
	    kiwi_orq_retire(qp, o, kiwi_tc_access(t->code) ?
			    IB_WC_REM_ACCESS_ERR : IB_WC_REM_OP_ERR))
		kiwi_sq_complete(qp);
}

/* The peer asks for an RDMA Read: check it and queue it for transmit. */
static u32 kiwi_rx_read_req(struct kiwi_qp *qp)
{
	struct kiwi_read_req rr;
	u32 tc = 0;

	kiwi_read_req_parse(qp->rx->hdr + KIWI_MPA_LEN_SIZE +
			    KIWI_UNTAGGED_HDR_LEN, &rr);
	if (rr.size) {
		struct kiwi_mem *mem = kiwi_mem_get(qp->kdev, rr.src_stag);

		/* The response reads the MR behind a window: resolve it. */
		tc = mem ? kiwi_mem_check_tagged(&mem, &qp->base_qp,
						 IB_ACCESS_REMOTE_READ,
						 &rr.src_to, rr.size) :
			   KIWI_TC_RDMAP_INV_STAG;
		if (!tc)
			rr.src_stag = READ_ONCE(mem->stag);
		if (mem)
			kiwi_mem_put(mem);
		if (tc)
			return tc;
	}
	/* Beyond the IRD we granted: RDMAC verbs Fig. 24, 0x1203. */
	if (kiwi_irq_add(qp, &rr, NULL)) {
		qp->rx_err_stat = KIWI_STAT_RX_IRD_OVERFLOW;
		return KIWI_TC_DDP_U_INV_MSN;
	}
	qp->rx->answer_due = true;	/* once the stream is read */
	return 0;
}

/*
 * The read-modify-write of an atomic on the 8 bytes at @p: a
 * compare-exchange loop, so it is atomic against any other atomic on the
 * same bytes, whichever QP or device it came in on, and against the CPU.
 * A value that does not change (a failed compare, adding 0) is only read.
 * Return: the original value.
 */
static u64 kiwi_rx_atomic_rmw(u64 *p, const struct kiwi_atomic_req *ar)
{
	u64 old = READ_ONCE(*p), seen, new;

	for (;;) {
		new = kiwi_atomic_apply(ar, old);
		if (new == old)
			return old;
		seen = cmpxchg64(p, old, new);
		if (seen == old)
			return old;
		old = seen;
	}
}

/*
 * RFC 7306 Atomic Request: check the 8 bytes it names (STag, remote
 * atomic access, bounds, 8-byte alignment), carry it out now, and queue
 * its response behind the Read Responses owed before it. It takes an IRD
 * slot like a Read. Misaligned: Remote Operation Error, Catastrophic error
 * localized to the RDMAP Stream (RFC 7306 section 8.2).
 */
static u32 kiwi_rx_atomic_req(struct kiwi_qp *qp)
{
	struct kiwi_atomic_resp resp;
	struct kiwi_atomic_req ar;
	struct kiwi_mem *mem;
	struct page *page;
	unsigned int off;
	u64 to;
	void *va;
	u32 tc;

	tc = kiwi_atomic_req_parse(qp->rx->hdr + KIWI_MPA_LEN_SIZE +
				   KIWI_UNTAGGED_HDR_LEN, &ar);
	if (tc)
		return tc;
	if (kiwi_irq_full(qp)) {
		qp->rx_err_stat = KIWI_STAT_RX_IRD_OVERFLOW;
		return KIWI_TC_DDP_U_INV_MSN;
	}
	mem = kiwi_mem_get(qp->kdev, ar.stag);
	if (!mem)
		return KIWI_TC_RDMAP_INV_STAG;
	to = ar.to;
	tc = kiwi_mem_check_tagged(&mem, &qp->base_qp, IB_ACCESS_REMOTE_ATOMIC,
				   &to, sizeof(u64));
	if (!tc && !kiwi_atomic_aligned(ar.to))
		tc = KIWI_TC_RDMAP_CATA_STREAM;
	if (!tc) {
		/* Aligned, the 8 bytes never straddle a page. */
		page = kiwi_mem_page(mem, to, &off);
		if (!page || !kiwi_atomic_aligned(off))
			tc = page ? KIWI_TC_RDMAP_CATA_STREAM :
				    KIWI_TC_RDMAP_BASE_BOUNDS;
	}
	if (!tc) {
		va = kmap_local_page(page);
		resp.orig = kiwi_rx_atomic_rmw(va + off, &ar);
		kunmap_local(va);
		flush_dcache_page(page);
		resp.req_id = ar.req_id;
	}
	kiwi_mem_put(mem);
	if (tc)
		return tc;
	if (kiwi_irq_add(qp, NULL, &resp))
		return KIWI_TC_DDP_U_INV_MSN;	/* not reached: room seen */
	qp->rx->answer_due = true;
	return 0;
}

/*
 * The Atomic Response to our oldest outstanding request, which must be an
 * atomic with its Request Identifier: the original value goes to the
 * local 8 bytes, and the atomic completes.
 */
static u32 kiwi_rx_atomic_resp(struct kiwi_qp *qp)
{
	struct kiwi_orq_entry *o = kiwi_orq_oldest(qp);
	struct kiwi_atomic_resp resp;
	u8 status = IB_WC_SUCCESS;
	struct kiwi_mem *mem;

	if (!o || !o->atomic) {
		qp->rx_err_stat = KIWI_STAT_RX_RESP_ERR;
		return KIWI_TC_RDMAP_UNEXP_OPCODE;
	}
	kiwi_atomic_resp_parse(qp->rx->hdr + KIWI_MPA_LEN_SIZE +
			       KIWI_UNTAGGED_HDR_LEN, &resp);
	if (resp.req_id != o->msn) {
		qp->rx_err_stat = KIWI_STAT_RX_RESP_ERR;
		return KIWI_TC_RDMAP_OP_UNSPEC;
	}
	/* The local buffer, checked when posted, may be gone since. */
	mem = kiwi_mem_get(qp->kdev, o->sink_stag);
	if (!mem || kiwi_mem_check(mem, qp->base_qp.pd, IB_ACCESS_LOCAL_WRITE,
				   o->sink_to, sizeof(u64)) ||
	    kiwi_mem_write(mem, o->sink_to, &resp.orig, sizeof(u64)))
		status = IB_WC_LOC_PROT_ERR;
	if (mem)
		kiwi_mem_put(mem);
	if (!kiwi_orq_retire(qp, o, status))
		return 0;	/* flushed meanwhile */
	kiwi_sq_complete(qp);
	if (status != IB_WC_SUCCESS)
		kiwi_qp_error(qp);
	else
		kiwi_tx_response_in(qp);	/* a stalled Read or atomic may go */
	return 0;
}

/* The last FPDU of a Read Response is in: complete the Read. */
static u32 kiwi_rx_read_resp_end(struct kiwi_qp *qp, struct kiwi_rx *rx)
{
	struct kiwi_ddp_hdr *h = &rx->ddp;
	/* kiwi_fpdu_check() found it, and nothing retired it since */
	struct kiwi_orq_entry *o = kiwi_orq_oldest(qp);
	u8 status = IB_WC_SUCCESS;

	if (!o) {
		qp->rx_err_stat = KIWI_STAT_RX_RESP_ERR;
		return KIWI_TC_RDMAP_UNEXP_OPCODE;
	}
	o->got += rx->ulpdu_len - h->hdr_len;
	if (!h->last)
		return 0;
	if (o->got != o->len) {
		qp->rx_err_stat = KIWI_STAT_RX_RESP_ERR;
		return KIWI_TC_DDP_T_BASE_BOUNDS;
	}
	/*
	 * Read with Invalidate: the sink STag is invalid before the Read
	 * completes. A failure is the consumer's (a wrong STag), not the
	 * peer's: the Read fails, and the QP.
	 */
	if (o->invalidate &&
	    kiwi_mem_invalidate(qp->kdev, o->inv_stag, &qp->base_qp, false))
		status = IB_WC_LOC_PROT_ERR;
	if (!kiwi_orq_retire(qp, o, status))
		return 0;	/* flushed meanwhile */
	kiwi_sq_complete(qp);
	if (status != IB_WC_SUCCESS) {
		kiwi_qp_error(qp);
		return 0;
	}
	kiwi_tx_response_in(qp);	/* a stalled Read may go now */
	return 0;
}

/* RFC 7306 Immediate Data: for the next Send, or a completion of its own. */
static void kiwi_rx_imm_end(struct kiwi_qp *qp, struct kiwi_rx *rx)
{
	struct kiwi_imm imm;

	kiwi_imm_parse(rx->hdr + KIWI_MPA_LEN_SIZE + KIWI_UNTAGGED_HDR_LEN,
		       &imm);
	if (imm.kiwi == KIWI_IMM_WITH_SEND)
		rx->imm_pending = true;
	else
		kiwi_rx_complete_rqe(qp, IB_WC_SUCCESS);
}

/* A Send's last FPDU: invalidate what it names, complete the receive. */
static u32 kiwi_rx_send_end(struct kiwi_qp *qp, struct kiwi_rx *rx)
{
	struct kiwi_ddp_hdr *h = &rx->ddp;
	u32 tc;

	if (!h->last)
		return 0;
	/* Immediate Data is for a Send without invalidation. */
	if (h->inv_stag && rx->imm_pending)
		return KIWI_TC_RDMAP_OP_UNSPEC;
	if (h->inv_stag) {
		tc = kiwi_mem_invalidate(qp->kdev, h->inv_stag, &qp->base_qp,
					 true);
		if (tc)
			return tc;
	}
	/* kiwi_fpdu.c sets the MSN and MO for the next message. */
	kiwi_rx_complete_rqe(qp, IB_WC_SUCCESS);
	return 0;
}

/* The peer's Terminate: the QP fails, the receive engine stops. */
static void kiwi_rx_terminate_end(struct kiwi_qp *qp, struct kiwi_rx *rx)
{
	struct kiwi_term t;

	/* A Terminate is never answered with one (V-ST-R9). */
	atomic_set(&qp->tx->term_claimed, 1);
	kiwi_stat_inc(qp->kdev, KIWI_STAT_TERM_RCVD);
	if (!kiwi_term_parse(rx->hdr + KIWI_MPA_LEN_SIZE + KIWI_UNTAGGED_HDR_LEN,
			     rx->ulpdu_len - KIWI_UNTAGGED_HDR_LEN, &t)) {
		ibdev_info_ratelimited(&qp->kdev->ibdev,
				       "QP %u: peer sent Terminate %08x\n",
				       qp->base_qp.qp_num, t.code);
		trace_kiwi_terminate(&qp->base_qp, false, &t);
		kiwi_rx_term_read(qp, &t);
		kiwi_qp_terminated(qp, t.code);
	}
	rx->state = KIWI_RX_DEAD;
	if (qp->cep)
		kiwi_cm_terminated(qp->cep);
}

/* A whole segment is in and its CRC checked: act on it. */
u32 kiwi_fpdu_end(struct kiwi_rx *rx, void *arg)
{
	struct kiwi_qp *qp = arg;
	struct kiwi_ddp_hdr *h = &rx->ddp;
	bool was_rtr = qp->rtr_pending && !qp->initiator;
	u32 tc = 0;

	if (rx->tmem) {
		kiwi_mem_put(rx->tmem);
		rx->tmem = NULL;
	}
	switch (h->opcode) {
	case KIWI_OP_READ_RESP:
		tc = kiwi_rx_read_resp_end(qp, rx);
		break;
	case KIWI_OP_WRITE:
		rx->write_bytes += rx->ulpdu_len - h->hdr_len;
		break;
	case KIWI_OP_IMM:
	case KIWI_OP_IMM_SE:
		kiwi_rx_imm_end(qp, rx);
		break;
	case KIWI_OP_ATOMIC_REQ:
		tc = kiwi_rx_atomic_req(qp);
		break;
	case KIWI_OP_ATOMIC_RESP:
		tc = kiwi_rx_atomic_resp(qp);
		break;
	case KIWI_OP_SEND:
	case KIWI_OP_SEND_INV:
	case KIWI_OP_SEND_SE:
	case KIWI_OP_SEND_SE_INV:
		tc = kiwi_rx_send_end(qp, rx);
		break;
	case KIWI_OP_READ_REQ:
		tc = kiwi_rx_read_req(qp);
		break;
	case KIWI_OP_TERMINATE:
		kiwi_rx_terminate_end(qp, rx);
		return 0;
	default:
		break;
	}
	if (!tc && was_rtr && h->last) {
		/* The peer's ready-to-receive message: we may transmit. */
		qp->rtr_pending = false;
		kiwi_tx_kick(qp);
	}
	return tc;
}

int kiwi_fpdu_copy(const void *src, unsigned int off, void *dst,
		   unsigned int len)
{
	return skb_copy_bits(src, off, dst, len);
}

/* tcp_read_sock() actor: consume as much of @skb as there is. */
static int kiwi_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			 unsigned int off, size_t avail)
{
	struct kiwi_qp *qp = desc->arg.data;
	u32 tc;

	tc = kiwi_fpdu_recv(qp->rx, qp, skb, off, avail);
	if (tc)
		kiwi_rx_terminate(qp, tc, kiwi_rx_err_stat(qp, tc));
	return avail;
}

/*
 * Socket data-ready callback of a connected QP. Context: softirq, or
 * process context with softirqs enabled when release_sock() works off
 * the socket's backlog: hence read_lock_bh(). With a plain read_lock()
 * there, lockdep sees sk_callback_lock taken softirq-unsafe, which TCP
 * takes under a listener's softirq-safe slock when the listener stops
 * with children not yet accepted (inet_csk_listen_stop).
 * The socket lock is held either way.
 */
void kiwi_rx_data_ready(struct sock *sk)
{
	read_descriptor_t desc = { .count = 1 };
	struct kiwi_cep *cep;
	struct kiwi_qp *qp;

	lockdep_assert(lockdep_sock_is_held(sk));
	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	qp = cep ? cep->qp : NULL;
	/*
	 * A dead engine still reads, and discards: bytes left unread would
	 * turn the close into a reset that may destroy our Terminate.
	 */
	if (qp && qp->rx) {
		desc.arg.data = qp;
		tcp_read_sock(sk, &desc, kiwi_rx_actor);
		/* All the Reads that came in, answered at once. */
		if (qp->rx->answer_due) {
			qp->rx->answer_due = false;
			kiwi_tx_answer(qp);
		}
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

/* Read what is queued on the socket already. Context: process context. */
void kiwi_rx_drain(struct kiwi_qp *qp)
{
	read_descriptor_t desc = { .count = 1, .arg.data = qp };
	struct sock *sk = qp->sock->sk;

	lock_sock(sk);
	if (qp->rx->state != KIWI_RX_DEAD)
		tcp_read_sock(sk, &desc, kiwi_rx_actor);
	if (qp->rx->answer_due) {
		qp->rx->answer_due = false;
		kiwi_tx_kick(qp);
	}
	release_sock(sk);
}

/**
 * kiwi_rx_terminate_llp() - stop receiving and terminate for an LLP event
 * @qp: the connected QP
 * @tc: the Terminate code
 * @stat: the port counter of the event
 *
 * The Terminate names no segment: the cause is the stream (a FIN with
 * work outstanding, a Bad LLP Close), not an FPDU. Nothing happens when
 * the engine stopped already.
 *
 * Context: process context; takes the socket lock.
 */
void kiwi_rx_terminate_llp(struct kiwi_qp *qp, u32 tc, enum kiwi_stat stat)
{
	struct sock *sk = qp->sock->sk;

	lock_sock(sk);
	qp->rx->hdr_got = 0;
	kiwi_rx_terminate(qp, tc, stat);
	release_sock(sk);
}

/**
 * kiwi_rx_prepare() - get the receive engine ready for a connection
 * @qp: the QP, with qp->crc set as negotiated
 *
 * With MPA CRCs the engine needs its hold buffer: allocated here, the
 * first time, and kept until the QP is destroyed (kiwi_engines_free()).
 *
 * Context: process context; may sleep.
 * Return: 0, or -ENOMEM.
 */
int kiwi_rx_prepare(struct kiwi_qp *qp)
{
	struct kiwi_rx *rx = qp->rx;

	if (!qp->crc || rx->hold_buf)
		return 0;
	rx->hold_buf = kiwi_fault() ? NULL : kvmalloc(KIWI_RX_HOLD_MAX, GFP_KERNEL);
	return rx->hold_buf ? 0 : -ENOMEM;
}

/*
 * Reset the receive state for a new connection, or when the engines stop.
 * A WQE taken from an SRQ for a message in progress is left for the flush
 * to complete (a receive queue's stays on its ring for that).
 */
void kiwi_rx_reset(struct kiwi_qp *qp)
{
	struct kiwi_rx *rx = qp->rx;
	unsigned long flags;

	if (rx->have_rqe && qp->base_qp.srq) {
		spin_lock_irqsave(&qp->rq_lock, flags);
		qp->srq_held = true;
		qp->srq_held_id = rx->rqe.id;
		spin_unlock_irqrestore(&qp->rq_lock, flags);
	}
	kiwi_rx_put_rqe(rx);
	if (rx->tmem)
		kiwi_mem_put(rx->tmem);
	rx->tmem = NULL;
	rx->write_bytes = 0;
	rx->imm_pending = false;
	qp->rx_err_stat = 0;
	kiwi_fpdu_reset(rx, qp->crc);
}
