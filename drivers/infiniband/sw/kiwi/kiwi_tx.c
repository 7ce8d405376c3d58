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

static struct workqueue_struct *kiwi_tx_wq;

/* One message to frame: where its payload comes from, and its headers. */
struct kiwi_tx_msg {
	u8 opcode;
	bool tagged;
	u32 stag;		/* tagged: sink STag */
	u64 to;			/* tagged: sink offset of the first byte */
	u32 qn;			/* untagged */
	u32 msn;
	u32 inv_stag;
	const u8 *rdmap_hdr;	/* Read Request or Terminate header */
	unsigned int rdmap_len;
	u32 len;		/* payload bytes */
	const u8 *inline_data;	/* payload given inline, or */
	struct kiwi_mem **mem;	/* gathered from these objects */
	const struct kiwi_sge *sge;
	unsigned int num_sge;
	u64 src_addr;		/* single source: mem[0] at src_addr */
	bool single;
	bool retires_irq;	/* a Read Response: see kiwi_tx_irq_retire() */
};

/*
 * The oldest inbound Read is answered: free its IRQ slot. This happens
 * just before the batch holding the response's last FPDU goes to TCP: the
 * peer may send its next Read Request as soon as that arrives, before
 * kernel_sendmsg() returns, and must find the slot free; before then the
 * Read is still outstanding and counts against the IRD (R-RRQ-15).
 */
static void kiwi_tx_irq_retire(struct kiwi_tx *tx)
{
	unsigned long flags;

	spin_lock_irqsave(&tx->irq_lock, flags);
	tx->irq_head++;
	spin_unlock_irqrestore(&tx->irq_lock, flags);
}

/* The MSS every IPv4 path takes (RFC 1122's 576-byte datagrams). */
#define KIWI_TX_MSS_FLOOR	536

/*
 * FPDUs are sized to the connection's MSS, times fpdu_segs where both ends
 * agreed to large FPDUs, with the MSS never taken below the floor: a
 * socket whose route went away with its link (the cached route moves to the
 * blackhole device, MTU 68) syncs its MSS down to 36 until the route is
 * back, which fits no FPDU header, and a link that is down for a moment
 * must not fail the connection. TCP splits a larger FPDU; the receiver
 * does not need FPDUs aligned with segments.
 */
static unsigned int kiwi_tx_mulpdu(struct kiwi_qp *qp)
{
	unsigned int mss = tcp_sk(qp->sock->sk)->mss_cache;
	unsigned int segs = qp->large_fpdus ? READ_ONCE(kiwi_fpdu_segs) : 1;

	/* kiwi_mpa_mulpdu() caps it at the 16-bit ULPDU_Length. */
	return kiwi_mpa_mulpdu(max(mss, KIWI_TX_MSS_FLOOR) * segs);
}

/*
 * The pages under @len payload bytes of @m from message offset @off, as at
 * most @cap bio_vecs in @bv (not for inline payloads).
 * Return: the number used, -ENOSPC if @cap is too few, or -EFAULT.
 */
static int kiwi_tx_pages(const struct kiwi_tx_msg *m, u32 off, u32 len,
			 struct bio_vec *bv, int cap)
{
	int n = 0;
	u32 i, in;

	for (i = 0; len && (m->single || i < m->num_sge); i++) {
		struct kiwi_mem *mem = m->mem[m->single ? 0 : i];
		u64 base = m->single ? m->src_addr : m->sge[i].addr;
		u32 slen = m->single ? m->len : m->sge[i].length;

		if (off >= slen) {
			off -= slen;
			continue;
		}
		in = min(slen - off, len);
		while (in) {
			unsigned int pgoff;
			struct page *page = kiwi_mem_page(mem, base + off, &pgoff);
			u32 chunk = min_t(u32, in, PAGE_SIZE - pgoff);

			if (!page)
				return -EFAULT;
			if (n == cap)
				return -ENOSPC;
			bv[n].bv_page = page;
			bv[n].bv_offset = pgoff;
			bv[n].bv_len = chunk;
			n++;
			off += chunk;
			in -= chunk;
			len -= chunk;
		}
		off = 0;
		if (m->single)
			break;
	}
	return len ? -EFAULT : n;
}

/*
 * Map @len payload bytes at message offset @off into at most @cap iovs.
 * Return: the number of iovs used, -ENOSPC, or -EFAULT.
 */
static int kiwi_tx_map(struct kiwi_tx *tx, const struct kiwi_tx_msg *m,
		       u32 off, u32 len, struct kvec *iov, int cap,
		       int *nmapped)
{
	int n, k;

	if (m->inline_data) {
		iov[0].iov_base = (void *)m->inline_data + off;
		iov[0].iov_len = len;
		return len ? 1 : 0;
	}
	cap = min3(cap, (int)ARRAY_SIZE(tx->bvec),
		   (int)ARRAY_SIZE(tx->kmapped) - *nmapped);
	n = kiwi_tx_pages(m, off, len, tx->bvec, cap);
	for (k = 0; k < n; k++) {
		void *va = kmap_local_page(tx->bvec[k].bv_page);

		tx->kmapped[(*nmapped)++] = va;
		iov[k].iov_base = va + tx->bvec[k].bv_offset;
		iov[k].iov_len = tx->bvec[k].bv_len;
	}
	return n;
}

static void kiwi_tx_unmap(struct kiwi_tx *tx, int nmapped)
{
	while (nmapped--)
		kunmap_local(tx->kmapped[nmapped]);
}

/* Write the length field and DDP/RDMAP headers of one FPDU into @hdr. */
static void kiwi_tx_fpdu_hdr(const struct kiwi_tx_msg *m, u8 *hdr,
			     unsigned int hlen, u32 off, u32 seg)
{
	bool last = off + seg == m->len;

	put_unaligned_be16(hlen + seg, hdr);
	if (m->tagged)
		kiwi_ddp_build_tagged(hdr + KIWI_MPA_LEN_SIZE, m->opcode, last,
				      m->stag, m->to + off);
	else
		kiwi_ddp_build_untagged(hdr + KIWI_MPA_LEN_SIZE, m->opcode,
					last, m->inv_stag, m->qn, m->msn, off);
	if (m->rdmap_len)
		memcpy(hdr + KIWI_MPA_LEN_SIZE + hlen - m->rdmap_len,
		       m->rdmap_hdr, m->rdmap_len);
}

/* Bytes message @m takes on the wire from payload offset @off on. */
static size_t kiwi_tx_wire_len(const struct kiwi_tx_msg *m, unsigned int hlen,
			       u32 room, u32 off)
{
	size_t total = 0;
	bool first = true;

	while (first || off < m->len) {
		u32 seg = min(m->len - off, room);

		total += KIWI_MPA_LEN_SIZE + hlen + seg +
			 kiwi_mpa_pad(hlen + seg) + KIWI_MPA_CRC_SIZE;
		off += seg;
		first = false;
	}
	return total;
}

static unsigned int kiwi_tx_hlen(const struct kiwi_tx_msg *m)
{
	return (m->tagged ? KIWI_TAGGED_HDR_LEN : KIWI_UNTAGGED_HDR_LEN) +
	       m->rdmap_len;
}

/* Payload bytes one FPDU with @hlen header bytes carries; 0: none fit. */
static u32 kiwi_tx_room(struct kiwi_qp *qp, unsigned int hlen)
{
	unsigned int mulpdu = kiwi_tx_mulpdu(qp);

	return mulpdu > hlen ? mulpdu - hlen : 0;
}

/*
 * May a direct loop send @m from payload offset @off? Only a small message
 * that TCP can take whole without waiting, and that fits the carry buffer
 * should TCP take less after all.
 */
static bool kiwi_tx_direct_ok(struct kiwi_qp *qp, const struct kiwi_tx_msg *m,
			      u32 off)
{
	unsigned int hlen = kiwi_tx_hlen(m);
	u32 room = kiwi_tx_room(qp, hlen);
	size_t wire;

	if (qp->tx->carry_len || m->len - off > KIWI_TX_DIRECT_MAX ||
	    room < 256)
		return false;
	wire = kiwi_tx_wire_len(m, hlen, room, off);
	/* skbs cost more than their payload: ask for twice the room */
	return wire <= KIWI_TX_CARRY_MAX &&
	       sk_stream_wspace(qp->sock->sk) >= (int)(2 * wire);
}

/*
 * TCP took @done of the @total bytes in tx->iov[0..@nvec) without waiting:
 * keep the rest, in stream order, for the work item. Return: @total, or
 * -EMSGSIZE if it does not fit (kiwi_tx_direct_ok() rules that out).
 */
static int kiwi_tx_carry(struct kiwi_tx *tx, int nvec, size_t total,
			 size_t done)
{
	struct iov_iter it;
	size_t left = total - done;

	if (WARN_ON_ONCE(tx->carry_len + left > sizeof(tx->carry)))
		return -EMSGSIZE;
	iov_iter_kvec(&it, ITER_SOURCE, tx->iov, nvec, total);
	iov_iter_advance(&it, done);
	if (copy_from_iter(tx->carry + tx->carry_len, left, &it) != left)
		return -EFAULT;
	tx->carry_len += left;
	return total;
}

/*
 * Hand TCP all @total bytes of @msg, waiting for room as long as the peer
 * makes progress. TCP stops waiting once the socket's send timeout (the
 * LLP timeout) has passed in one call, however much the peer acknowledged
 * meanwhile: a slow peer, or a large send buffer that drains slowly, is
 * not a stalled one. So a call cut short while TCP's unacknowledged data
 * moved on is followed by another for the rest; only a whole timeout
 * without an acknowledgment is a stall. Not with a Terminate waiting:
 * kiwi_engines_stop() waits for it under the endpoint's lock, which a
 * peer taking a byte now and then must not hold for long. A zero-copy
 * batch TCP has no notification room for (-ENOBUFS, before it took
 * anything) goes on copied. Context: the work item.
 * Return: @total, or a negative errno (-ETIMEDOUT for a stall).
 */
static int kiwi_tx_send_all(struct kiwi_qp *qp, struct msghdr *msg,
			    size_t total)
{
	struct tcp_sock *tp = tcp_sk(qp->sock->sk);
	size_t done = 0;
	int ret;

	for (;;) {
		u32 una = READ_ONCE(tp->snd_una);

		ret = sock_sendmsg(qp->sock, msg);
		if (ret == -ENOBUFS && (msg->msg_flags & MSG_ZEROCOPY)) {
			atomic64_inc(&qp->kdev->stats[KIWI_STAT_ZCOPY_NOBUFS]);
			msg->msg_flags &= ~MSG_ZEROCOPY;
			continue;
		}
		if (ret > 0 && (msg->msg_flags & MSG_ZEROCOPY))
			atomic64_add(ret, &qp->kdev->stats[KIWI_STAT_ZCOPY_BYTES]);
		if (ret > 0)
			done += ret;
		if (done == total)
			return total;
		if (ret < 0 && ret != -EAGAIN)
			return ret;
		if (READ_ONCE(tp->snd_una) == una || READ_ONCE(qp->tx->stopped) ||
		    READ_ONCE(qp->tx->term_pending))
			return -ETIMEDOUT;
	}
}

/* The work item sends what a direct loop left, before anything else. */
static int kiwi_tx_flush_carry(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	struct kvec iov = { .iov_base = tx->carry, .iov_len = tx->carry_len };
	int ret;

	iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &iov, 1, tx->carry_len);
	ret = kiwi_tx_send_all(qp, &msg, tx->carry_len);
	if (ret < 0)
		return ret;
	tx->carry_len = 0;
	return 0;
}

/*
 * Frame and send message @m from payload offset *@sent to its end.
 * Context: the transmit loop. The work item sleeps in TCP; a direct loop
 * does not, and carries what TCP did not take.
 * Return: 0 when all of it went out, or a negative errno.
 */
static int kiwi_tx_message(struct kiwi_qp *qp, const struct kiwi_tx_msg *m,
			   u32 *sent)
{
	struct kiwi_tx *tx = qp->tx;
	unsigned int hlen = kiwi_tx_hlen(m);
	u32 room = kiwi_tx_room(qp, hlen);
	bool first = true;

	if (!room)
		return -EMSGSIZE;

	/* A zero-length message is one empty segment. */
	while (first || *sent < m->len) {
		struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
		int nvec = 0, nmapped = 0, f, ret;
		size_t total = 0;
		u32 off = *sent;

		for (f = 0; f < KIWI_TX_BATCH && (first || off < m->len); f++) {
			u32 seg = min(m->len - off, room);
			unsigned int pad = kiwi_mpa_pad(hlen + seg);
			u8 *hdr = tx->hdr[f];
			u8 *trl = tx->trl[f];
			int k, n;
			u32 crc;

			n = kiwi_tx_map(tx, m, off, seg, &tx->iov[nvec + 1],
					ARRAY_SIZE(tx->iov) - nvec - 2, &nmapped);
			if (n == -ENOSPC && f)
				break;	/* the next batch takes this FPDU */
			if (n < 0) {
				kiwi_tx_unmap(tx, nmapped);
				return n;
			}
			first = false;
			kiwi_tx_fpdu_hdr(m, hdr, hlen, off, seg);
			tx->iov[nvec].iov_base = hdr;
			tx->iov[nvec].iov_len = KIWI_MPA_LEN_SIZE + hlen;
			memset(trl, 0, pad);
			crc = 0;
			if (qp->crc) {
				crc = kiwi_mpa_crc_init();
				for (k = 0; k <= n; k++)
					crc = kiwi_crc32c_update(crc,
								 tx->iov[nvec + k].iov_base,
								 tx->iov[nvec + k].iov_len);
				crc = kiwi_mpa_crc_final(kiwi_crc32c_update(crc, trl,
									    pad));
			}
			kiwi_mpa_crc_put(crc, trl + pad);
			for (k = 0; k <= n; k++)
				total += tx->iov[nvec + k].iov_len;
			nvec += n + 1;
			tx->iov[nvec].iov_base = trl;
			tx->iov[nvec].iov_len = pad + KIWI_MPA_CRC_SIZE;
			total += pad + KIWI_MPA_CRC_SIZE;
			nvec++;
			off += seg;
		}
		if (off < m->len)
			msg.msg_flags |= MSG_MORE;
		else if (m->retires_irq)
			kiwi_tx_irq_retire(tx);
		if (tx->direct)
			msg.msg_flags |= MSG_DONTWAIT;
		iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, tx->iov, nvec, total);
		if (tx->carry_len)	/* behind bytes TCP has yet to take */
			ret = kiwi_tx_carry(tx, nvec, total, 0);
		else if (tx->locked)
			ret = tcp_sendmsg_locked(qp->sock->sk, &msg, total);
		else if (tx->direct)
			ret = sock_sendmsg(qp->sock, &msg);
		else
			ret = kiwi_tx_send_all(qp, &msg, total);
		if (tx->direct && (ret == -EAGAIN ||
				   (ret >= 0 && ret < total)))
			ret = kiwi_tx_carry(tx, nvec, total, max(ret, 0));
		kiwi_tx_unmap(tx, nmapped);
		if (ret < 0)
			return ret;
		if (ret != total)
			return -ECONNRESET;
		*sent = off;
	}
	return 0;
}

/*
 * Room for one batch of FPDU headers and trailers in tx->zc_page. Bytes
 * once handed to TCP are never written again: a full page is left to the
 * skbs that reference it, and a new one started.
 */
static int kiwi_tx_zc_refill(struct kiwi_tx *tx)
{
	if (tx->zc_page && tx->zc_off + KIWI_TX_ZC_HDR_ROOM <= PAGE_SIZE)
		return 0;
	if (tx->zc_page)
		put_page(tx->zc_page);
	tx->zc_off = 0;
	tx->zc_page = kiwi_fault() ? NULL : alloc_page(GFP_KERNEL);
	return tx->zc_page ? 0 : -ENOMEM;
}

/*
 * Append @len bytes at @off in tx->zc_page to the batch's vectors; a
 * trailer and the next FPDU's header lie side by side and share one.
 */
static void kiwi_tx_zc_vec(struct kiwi_tx *tx, int *nvec, unsigned int off,
			   unsigned int len)
{
	struct bio_vec *bv = &tx->bvec[*nvec];

	if (*nvec && bv[-1].bv_page == tx->zc_page &&
	    bv[-1].bv_offset + bv[-1].bv_len == off) {
		bv[-1].bv_len += len;
		return;
	}
	bv->bv_page = tx->zc_page;
	bv->bv_offset = off;
	bv->bv_len = len;
	(*nvec)++;
}

static u32 kiwi_tx_crc_bvec(u32 crc, const struct bio_vec *bv, int n)
{
	while (n--) {
		u8 *va = kmap_local_page(bv->bv_page);

		crc = kiwi_crc32c_update(crc, va + bv->bv_offset, bv->bv_len);
		kunmap_local(va);
		bv++;
	}
	return crc;
}

/*
 * May TCP hold references to these pages? Not to slab memory (a kernel
 * consumer's kmalloc'ed buffer behind the DMA MR), whose objects are freed
 * without regard to page references; nor to a page nobody holds.
 */
static bool kiwi_tx_pages_zc_ok(const struct bio_vec *bv, int n)
{
	while (n--)
		if (!sendpage_ok((bv++)->bv_page))
			return false;
	return true;
}

/*
 * Frame and transmit Send, Write or Read Response @m from payload offset
 * *@sent without copying its payload: TCP takes references to the pages
 * (MSG_ZEROCOPY) and numbers each such call; a send queue entry completes
 * only when TCP reports all its calls released (kiwi_tx_zc_report()), so
 * the pages, and the CRC over them, stay as sent until the peer has them.
 * A Read Response completes nothing: its pages stay the responder's, as
 * an RNIC reads them again for a retransmission. A batch TCP has no
 * notification room for (-ENOBUFS), or with a page TCP may not reference,
 * is copied.
 * Context: the work item. Return: 0 or a negative errno.
 */
static int kiwi_tx_message_zc(struct kiwi_qp *qp, const struct kiwi_tx_msg *m,
			      u32 *sent)
{
	struct kiwi_tx *tx = qp->tx;
	unsigned int hlen = kiwi_tx_hlen(m);
	u32 room = kiwi_tx_room(qp, hlen);

	if (!room)
		return -EMSGSIZE;
	while (*sent < m->len) {
		struct msghdr msg = {
			.msg_flags = MSG_NOSIGNAL | MSG_ZEROCOPY,
		};
		int nvec = 0, f, ret;
		size_t total = 0;
		u32 off = *sent;
		bool zc = true;

		ret = kiwi_tx_zc_refill(tx);
		if (ret)
			return ret;
		for (f = 0; f < KIWI_TX_BATCH && off < m->len; f++) {
			u32 seg = min(m->len - off, room);
			unsigned int pad = kiwi_mpa_pad(hlen + seg);
			unsigned int hoff = tx->zc_off;
			unsigned int toff = hoff + KIWI_MPA_LEN_SIZE + hlen;
			u8 *hdr = page_address(tx->zc_page) + hoff;
			u8 *trl = hdr + KIWI_MPA_LEN_SIZE + hlen;
			int at = nvec, n;
			u32 crc = 0;

			/* pages first, at the slot after the header's */
			n = kiwi_tx_pages(m, off, seg, &tx->bvec[at + 1],
					  ARRAY_SIZE(tx->bvec) - at - 2);
			if (n == -ENOSPC && f)
				break;
			if (n < 0)
				return n;
			zc = zc && kiwi_tx_pages_zc_ok(&tx->bvec[at + 1], n);
			kiwi_tx_fpdu_hdr(m, hdr, hlen, off, seg);
			kiwi_tx_zc_vec(tx, &nvec, hoff, KIWI_MPA_LEN_SIZE + hlen);
			if (nvec == at)	/* the header joined the last trailer */
				memmove(&tx->bvec[nvec], &tx->bvec[at + 1],
					n * sizeof(*tx->bvec));
			memset(trl, 0, pad);
			if (qp->crc) {
				crc = kiwi_crc32c_update(kiwi_mpa_crc_init(), hdr,
							 KIWI_MPA_LEN_SIZE + hlen);
				crc = kiwi_tx_crc_bvec(crc, &tx->bvec[nvec], n);
				crc = kiwi_mpa_crc_final(kiwi_crc32c_update(crc, trl,
									    pad));
			}
			kiwi_mpa_crc_put(crc, trl + pad);
			nvec += n;
			kiwi_tx_zc_vec(tx, &nvec, toff, pad + KIWI_MPA_CRC_SIZE);
			tx->zc_off = toff + pad + KIWI_MPA_CRC_SIZE;
			total += KIWI_MPA_LEN_SIZE + hlen + seg + pad +
				 KIWI_MPA_CRC_SIZE;
			off += seg;
		}
		if (off < m->len)
			msg.msg_flags |= MSG_MORE;
		else if (m->retires_irq)
			kiwi_tx_irq_retire(tx);
		if (!zc)
			msg.msg_flags &= ~MSG_ZEROCOPY;
		iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, tx->bvec, nvec, total);
		ret = kiwi_tx_send_all(qp, &msg, total);
		if (ret < 0)
			return ret;
		*sent = off;
	}
	return 0;
}

/*
 * Is Send, Write or Read Response @m, @sent bytes of which are out, sent
 * without copying? Only by the work item, and only payloads of at least
 * kiwi_zcopy_min bytes, from the start, from memory objects: user memory,
 * a kernel consumer's fast-registered pages or DMA MR addresses (a batch
 * with a slab page among them is copied: kiwi_tx_pages_zc_ok()).
 */
static bool kiwi_tx_zc_ok(struct kiwi_qp *qp, const struct kiwi_tx_msg *m,
			  u32 sent)
{
	unsigned int min = READ_ONCE(kiwi_zcopy_min);

	return min && m->len >= min && !qp->tx->direct && !sent &&
	       !m->inline_data && !m->rdmap_len;
}

/* The entry at tx->next starts going out without copying. */
static void kiwi_tx_zc_open(struct kiwi_qp *qp)
{
	struct kiwi_tx *tx = qp->tx;
	struct kiwi_sq_slot *slot = &tx->slots[tx->next & (qp->sq.num - 1)];
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	slot->zc = true;
	slot->zc_open = true;
	slot->zc_first = atomic_read(&qp->sock->sk->sk_zckey);
	slot->zc_done = 0;
	tx->zc_sending = true;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/*
 * TCP released the pages of zero-copy calls @lo..@hi: count them against
 * the entries that made them, and complete the entries TCP is done with.
 * Return: true when that left no entry waiting for TCP.
 * Context: any; takes qp->sq_lock.
 */
static bool kiwi_tx_zc_done(struct kiwi_qp *qp, u32 lo, u32 hi)
{
	struct kiwi_tx *tx = qp->tx;
	bool any = false, none_left;
	unsigned long flags;
	u32 seq, end;

	spin_lock_irqsave(&qp->sq_lock, flags);
	/* Live entries: transmitted and not completed, and the one going out. */
	end = tx->next + tx->zc_sending;
	for (seq = qp->sq.head; seq != end; seq++) {
		struct kiwi_sq_slot *slot = &tx->slots[seq & (qp->sq.num - 1)];
		s32 a = (s32)(lo - slot->zc_first);
		s32 b = (s32)(hi - slot->zc_first);

		if (!slot->zc || slot->done)
			continue;
		if (!slot->zc_open && b >= (s32)slot->zc_count)
			b = (s32)slot->zc_count - 1;
		if (a < 0)
			a = 0;
		if (a <= b)
			slot->zc_done += b - a + 1;
		if (!slot->zc_open && slot->zc_done >= slot->zc_count) {
			slot->done = true;
			tx->zc_waiting--;
			any = true;
		}
	}
	none_left = any && !tx->zc_waiting;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (any)
		kiwi_sq_complete(qp);
	return none_left;
}

/**
 * kiwi_tx_zc_report() - error-report callback of a connected QP's socket
 * @sk: the socket
 *
 * TCP queues a notice on the socket's error queue each time it lets go of
 * the pages of zero-copy sends (kiwi_tx_message_zc()): complete the work
 * requests they belong to. Other reports go on to the socket's own
 * callback.
 *
 * Context: any: softirq when an ACK frees the data, process context when
 * the sending call does.
 */
void kiwi_tx_zc_report(struct sock *sk)
{
	void (*chain)(struct sock *sk) = NULL;
	bool poke = false;
	struct kiwi_cep *cep;
	struct sk_buff *skb;

	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep) {
		chain = cep->saved_error_report;
		while ((skb = skb_dequeue(&sk->sk_error_queue))) {
			struct sock_exterr_skb *serr = SKB_EXT_ERR(skb);

			if (serr->ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY &&
			    cep->qp && cep->qp->tx) {
				u32 lo = serr->ee.ee_info, hi = serr->ee.ee_data;

				if (serr->ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
					atomic64_add(hi - lo + 1,
						     &cep->qp->kdev->stats[KIWI_STAT_ZCOPY_COPIED]);
				poke |= kiwi_tx_zc_done(cep->qp, lo, hi);
			}
			consume_skb(skb);
		}
		/* A graceful close waits for these completions. */
		if (poke)
			kiwi_cm_poke(cep);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (chain)
		chain(sk);
}

static void kiwi_tx_put_cur(struct kiwi_tx *tx)
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
static void kiwi_tx_slot_done(struct kiwi_qp *qp, u8 status)
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
 * A kernel consumer's IB_WR_REG_MR: raddr carries the MR, rkey the key and
 * inline_len the access rights (kiwi_sqe_from_wr). Return: 0 or a
 * negative errno.
 */
static int kiwi_tx_reg_mr(struct kiwi_qp *qp, const struct kiwi_sqe *c)
{
	struct ib_mr *mr = (struct ib_mr *)(uintptr_t)c->raddr;

	if (mr->pd != qp->base_qp.pd)
		return -EINVAL;
	return kiwi_mem_fastreg(qp->kdev, mr, c->rkey, c->inline_len);
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
	 * context, where the second might find no room (kiwi_tx_carry()).
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
static bool kiwi_tx_resp_take(struct kiwi_tx *tx, struct kiwi_irq_entry *resp,
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
static int kiwi_tx_resp_send(struct kiwi_qp *qp, struct kiwi_irq_entry *resp)
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
static bool kiwi_tx_run(struct kiwi_qp *qp)
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
		kiwi_cm_poke(qp->cep);
	return false;
fail:
	kiwi_tx_fail(qp, ret);
	return false;
}

/*
 * A loop in process context owns the transmit state once it holds
 * tx->run_lock and the owner bit. The loops that never wait (the receive
 * softirq's answers, a kernel consumer's post) hold the bit only while
 * they frame a few small messages for TCP, with bottom halves off, and
 * never wait for it: spinning here is short, and never on the holder's
 * own CPU.
 */
static void kiwi_tx_own(struct kiwi_tx *tx)
{
	lockdep_assert_held(&tx->run_lock);
	while (test_and_set_bit_lock(KIWI_TX_OWNED, &tx->owner))
		cpu_relax();
}

static void kiwi_tx_disown(struct kiwi_tx *tx)
{
	clear_bit_unlock(KIWI_TX_OWNED, &tx->owner);
}

/* A loop under run_lock ends: tell kiwi_qp_fin_cuts_work(), if it waits. */
static void kiwi_tx_unlock(struct kiwi_tx *tx)
{
	mutex_unlock(&tx->run_lock);
	if (wq_has_sleeper(&tx->done_wq))
		wake_up(&tx->done_wq);
}

static void kiwi_tx_work(struct work_struct *work)
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
 * kiwi_qp_fin_cuts_work() - would the peer's FIN cut work short?
 * @qp: the connected QP
 * @cep: its endpoint
 *
 * The peer may send its FIN the moment our last bytes reach it, while the
 * transmit loop that sent them has yet to retire the entry. A loop still
 * running is given 100 ms to finish (woken as it lets go of tx->run_lock);
 * one that stays busy (blocked in TCP on a long message) has work pending
 * (V-ST-R4, V-LLP-11).
 *
 * Context: process context, @cep's lock held; takes tx->run_lock; sleeps.
 */
bool kiwi_qp_fin_cuts_work(struct kiwi_qp *qp, struct kiwi_cep *cep)
{
	struct kiwi_tx *tx = qp->tx;
	long left = msecs_to_jiffies(100);
	bool pending;

	lockdep_assert_held(&cep->lock);
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
		kvfree(qp->rx->hold);
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
