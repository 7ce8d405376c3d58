// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: zero copy on transmit: payload pages handed to TCP by reference
 * (MSG_ZEROCOPY), and the work requests they belong to completed once TCP
 * lets go of them (the socket's error queue).
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
int kiwi_tx_message_zc(struct kiwi_qp *qp, const struct kiwi_tx_msg *m,
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
bool kiwi_tx_zc_ok(struct kiwi_qp *qp, const struct kiwi_tx_msg *m,
		   u32 sent)
{
	unsigned int min = READ_ONCE(kiwi_zcopy_min);

	return min && m->len >= min && !qp->tx->direct && !sent &&
	       !m->inline_data && !m->rdmap_len;
}

/* The entry at tx->next starts going out without copying. */
void kiwi_tx_zc_open(struct kiwi_qp *qp)
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
			kiwi_cm_sq_drained(cep);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (chain)
		chain(sk);
}
