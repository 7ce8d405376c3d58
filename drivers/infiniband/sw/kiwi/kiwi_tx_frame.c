// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: FPDU framing for the transmit loop: a message cut into FPDUs of
 * the connection's MULPDU (RFC 5044 framing around RFC 5041/5040 headers),
 * their payload gathered from registered memory, handed to TCP in batches
 * (and a batch TCP took only in part carried to the next call).
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
int kiwi_tx_pages(const struct kiwi_tx_msg *m, u32 off, u32 len,
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
void kiwi_tx_fpdu_hdr(const struct kiwi_tx_msg *m, u8 *hdr,
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

unsigned int kiwi_tx_hlen(const struct kiwi_tx_msg *m)
{
	return (m->tagged ? KIWI_TAGGED_HDR_LEN : KIWI_UNTAGGED_HDR_LEN) +
	       m->rdmap_len;
}

/* Payload bytes one FPDU with @hlen header bytes carries; 0: none fit. */
u32 kiwi_tx_room(struct kiwi_qp *qp, unsigned int hlen)
{
	unsigned int mulpdu = kiwi_tx_mulpdu(qp);

	return mulpdu > hlen ? mulpdu - hlen : 0;
}

/*
 * May a direct loop send @m from payload offset @off? Only a small message
 * that TCP can take whole without waiting, and that fits the carry buffer
 * should TCP take less after all.
 */
bool kiwi_tx_direct_ok(struct kiwi_qp *qp, const struct kiwi_tx_msg *m,
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
static int kiwi_tx_keep_unsent(struct kiwi_tx *tx, int nvec, size_t total,
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
int kiwi_tx_send_all(struct kiwi_qp *qp, struct msghdr *msg,
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
int kiwi_tx_flush_carry(struct kiwi_qp *qp)
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
int kiwi_tx_message(struct kiwi_qp *qp, const struct kiwi_tx_msg *m,
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
			ret = kiwi_tx_keep_unsent(tx, nvec, total, 0);
		else if (tx->locked)
			ret = tcp_sendmsg_locked(qp->sock->sk, &msg, total);
		else if (tx->direct)
			ret = sock_sendmsg(qp->sock, &msg);
		else
			ret = kiwi_tx_send_all(qp, &msg, total);
		if (tx->direct && (ret == -EAGAIN ||
				   (ret >= 0 && ret < total)))
			ret = kiwi_tx_keep_unsent(tx, nvec, total, max(ret, 0));
		kiwi_tx_unmap(tx, nmapped);
		if (ret < 0)
			return ret;
		if (ret != total)
			return -ECONNRESET;
		*sent = off;
	}
	return 0;
}
