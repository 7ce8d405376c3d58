// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: the receive engine's walk over the byte stream, FPDU by FPDU. See
 * kiwi_fpdu.h for the contract; the module's kiwi_rx.c and the host fuzzer
 * tools/fuzz/fuzz_rx.c both run this code.
 *
 * An FPDU is a 2-byte ULPDU_Length, the ULPDU (DDP header, maybe an RDMAP
 * header, payload), 0 to 3 pad bytes and a 4-byte CRC (RFC 5044 section
 * 4). The headers are collected into @rx->hdr first: the length field,
 * then a byte that tells the DDP header's length (the T flag), then an
 * untagged header tells whether a Read Request or Terminate header
 * follows, and only then are they parsed. Every length is bounded before
 * bytes are copied for it.
 *
 * With MPA CRCs the FPDU is verified before the ULPDU goes to DDP (RFC
 * 5044 sections 3 and 6): the headers are only collected and sized, the
 * payload only checksummed - and copied to @rx->hold_buf when the rest of the
 * FPDU is not in the same piece of the stream - and once the CRC matched
 * the headers are parsed and checked and the payload placed, from @hold_buf
 * and from the stream. A violation the headers show before that waits in
 * @rx->pending: a bad CRC is reported first, whatever else is wrong.
 */

#include "kiwi_fpdu.h"

#define FPDU_DDP_T	0x80	/* DDP control: tagged */
#define FPDU_RDMAP_OP	0x0f	/* RDMAP control: opcode */

static unsigned int fpdu_min(unsigned int a, unsigned int b)
{
	return a < b ? a : b;
}

void kiwi_fpdu_next(struct kiwi_rx *rx)
{
	rx->state = KIWI_RX_HDR;
	rx->hdr_got = 0;
	rx->hdr_need = KIWI_MPA_LEN_SIZE;
	rx->hold_len = 0;
	rx->pending = 0;
}

void kiwi_fpdu_reset(struct kiwi_rx *rx, bool check_crc)
{
	rx->check_crc = check_crc;
	rx->mo = 0;
	rx->msn[KIWI_QN_SEND] = 1;
	rx->msn[KIWI_QN_READ_REQ] = 1;
	rx->msn[KIWI_QN_TERMINATE] = 1;
	rx->msn[KIWI_QN_ATOMIC_RESP] = 1;
	kiwi_fpdu_next(rx);
}

/*
 * @rx->hdr_need bytes are in: size the rest of the headers, or, without
 * CRCs, parse them when they are complete. Return: 0 (complete when
 * @rx->hdr_got is still @rx->hdr_need) or a Terminate code.
 */
static u32 fpdu_hdr(struct kiwi_rx *rx)
{
	const u8 *ddp = rx->hdr + KIWI_MPA_LEN_SIZE;

	/* Too short for a DDP segment, as kiwi_ddp_parse() says. */
	if (rx->hdr_need == KIWI_MPA_LEN_SIZE) {
		rx->ulpdu_len = get_unaligned_be16(rx->hdr);
		if (!rx->ulpdu_len)
			return KIWI_TC_DDP_LOCAL_CATA;
		rx->hdr_need = KIWI_MPA_LEN_SIZE + 1;
		return 0;
	}
	if (rx->hdr_need == KIWI_MPA_LEN_SIZE + 1) {
		/* DDP control is in: size the headers. */
		rx->hdr_need = KIWI_MPA_LEN_SIZE + (ddp[0] & FPDU_DDP_T ?
						    KIWI_TAGGED_HDR_LEN :
						    KIWI_UNTAGGED_HDR_LEN);
		if (rx->ulpdu_len + KIWI_MPA_LEN_SIZE < rx->hdr_need)
			return KIWI_TC_DDP_LOCAL_CATA;
		return 0;
	}
	if (rx->hdr_need == KIWI_MPA_LEN_SIZE + KIWI_UNTAGGED_HDR_LEN &&
	    !(ddp[0] & FPDU_DDP_T)) {
		u8 op = ddp[1] & FPDU_RDMAP_OP;

		/*
		 * Read Request, Terminate and the RFC 7306 headers (the
		 * Immediate Data's 8 bytes among them) follow the DDP header.
		 */
		if ((op == KIWI_OP_READ_REQ || op == KIWI_OP_TERMINATE ||
		     (op >= KIWI_OP_IMM && op <= KIWI_OP_MAX)) &&
		    rx->ulpdu_len + KIWI_MPA_LEN_SIZE > rx->hdr_need) {
			if (rx->ulpdu_len + KIWI_MPA_LEN_SIZE > KIWI_RX_HDR_MAX)
				return KIWI_TC_RDMAP_OP_UNSPEC;
			rx->hdr_need = KIWI_MPA_LEN_SIZE + rx->ulpdu_len;
			return 0;
		}
	}
	return rx->check_crc ? 0 : kiwi_ddp_parse(ddp, rx->ulpdu_len, &rx->ddp);
}

static bool fpdu_is_send(u8 opcode)
{
	return opcode == KIWI_OP_SEND || opcode == KIWI_OP_SEND_INV ||
	       opcode == KIWI_OP_SEND_SE || opcode == KIWI_OP_SEND_SE_INV;
}

/* Validate a new segment against connection state. Return: 0 or a tc. */
static u32 fpdu_segment_start(struct kiwi_rx *rx, void *arg)
{
	const struct kiwi_ddp_hdr *h = &rx->ddp;
	u32 seg = rx->ulpdu_len - h->hdr_len;
	u32 tc;

	rx->data_left = seg;
	if (h->tagged)
		return kiwi_fpdu_start(rx, arg);

	/* Untagged: MSN and MO must be the ones expected (qn < 4: parsed). */
	if (h->msn != rx->msn[h->qn])
		return KIWI_TC_DDP_U_INV_MSN;
	if (fpdu_is_send(h->opcode)) {
		if (h->mo != rx->mo)
			return KIWI_TC_DDP_U_INV_MO;
		tc = kiwi_fpdu_start(rx, arg);
		if (tc)
			return tc;
		if ((u64)rx->mo + seg > rx->rqe_len)
			return KIWI_TC_DDP_U_TOO_LONG;
		return 0;
	}
	if (h->opcode == KIWI_OP_IMM || h->opcode == KIWI_OP_IMM_SE) {
		/* A message of its own on queue 0: not inside a Send. */
		if (h->mo || rx->mo)
			return KIWI_TC_DDP_U_INV_MO;
		return kiwi_fpdu_start(rx, arg);
	}
	if (h->opcode == KIWI_OP_READ_REQ || h->opcode == KIWI_OP_TERMINATE ||
	    h->opcode == KIWI_OP_ATOMIC_REQ || h->opcode == KIWI_OP_ATOMIC_RESP)
		return h->mo ? KIWI_TC_DDP_U_INV_MO : 0;
	return KIWI_TC_RDMAP_UNEXP_OPCODE;
}

/* The whole segment is in (and its CRC matched): act on it, go on. */
static u32 fpdu_segment_end(struct kiwi_rx *rx, void *arg)
{
	const struct kiwi_ddp_hdr *h = &rx->ddp;
	u32 tc;

	tc = kiwi_fpdu_end(rx, arg);
	if (tc)
		return tc;
	if (!h->tagged && h->last) {
		rx->msn[h->qn]++;
		if (fpdu_is_send(h->opcode))
			rx->mo = 0;
	}
	if (rx->state != KIWI_RX_DEAD)
		kiwi_fpdu_next(rx);
	return 0;
}

/* Place @len payload bytes at @off in @src (NULL: @rx->hold_buf). */
static u32 fpdu_place(struct kiwi_rx *rx, void *arg, const void *src,
		      unsigned int off, unsigned int len)
{
	u32 tc = kiwi_fpdu_place(rx, arg, src, off, len);

	if (tc)
		return tc;
	if (!rx->ddp.tagged)
		rx->mo += len;
	rx->data_left -= len;
	return 0;
}

/* The headers are in: get ready for the payload. Return: 0 or a tc. */
static u32 fpdu_payload(struct kiwi_rx *rx, void *arg)
{
	u32 tc;

	rx->trl_got = 0;
	rx->trl_need = kiwi_mpa_pad(rx->ulpdu_len) + KIWI_MPA_CRC_SIZE;
	if (!rx->check_crc) {
		tc = fpdu_segment_start(rx, arg);
		if (tc)
			return tc;
	} else {
		/* What the length field says follows the headers. */
		rx->data_left = KIWI_MPA_LEN_SIZE + rx->ulpdu_len - rx->hdr_got;
		rx->crc = kiwi_crc32c_update(kiwi_mpa_crc_init(), rx->hdr,
					     rx->hdr_got);
	}
	rx->state = KIWI_RX_DATA;
	return 0;
}

/*
 * With CRCs, payload whose FPDU ends beyond this piece of the stream: add
 * @len bytes at @off in @src to the CRC and keep them in @rx->hold_buf (not
 * when the headers failed already: nothing will be placed).
 */
static u32 fpdu_hold(struct kiwi_rx *rx, const void *src, unsigned int off,
		     unsigned int len)
{
	u8 *dst = rx->hold_buf + rx->hold_len;

	if (rx->pending) {
		rx->crc = kiwi_fpdu_crc(src, off, len, rx->crc);
	} else {
		/* At most KIWI_RX_HOLD_MAX: the headers took 14 bytes or more. */
		if (kiwi_fpdu_copy(src, off, dst, len))
			return KIWI_TC_MPA_LOCAL_CATA;
		rx->crc = kiwi_crc32c_update(rx->crc, dst, len);
		rx->hold_len += len;
	}
	rx->data_left -= len;
	return 0;
}

/*
 * With CRCs, the whole FPDU is in: the payload in @rx->hold_buf and then @len
 * bytes at @off in @src, the trailer in @rx->trl. Check the CRC; only
 * then the headers, and place the payload.
 */
static u32 fpdu_deliver(struct kiwi_rx *rx, void *arg, const void *src,
			unsigned int off, unsigned int len)
{
	unsigned int pad = rx->trl_need - KIWI_MPA_CRC_SIZE;
	u32 crc = kiwi_crc32c_update(rx->crc, rx->trl, pad);
	u32 tc;

	if (kiwi_mpa_crc_final(crc) != kiwi_mpa_crc_get(rx->trl + pad))
		return KIWI_TC_MPA_CRC;
	if (rx->pending)
		return rx->pending;
	tc = kiwi_ddp_parse(rx->hdr + KIWI_MPA_LEN_SIZE, rx->ulpdu_len,
			    &rx->ddp);
	if (!tc)
		tc = fpdu_segment_start(rx, arg);
	/* Parsed, the headers account for all but @hold_len + @len bytes. */
	if (!tc && rx->hold_len)
		tc = fpdu_place(rx, arg, NULL, 0, rx->hold_len);
	if (!tc && len)
		tc = fpdu_place(rx, arg, src, off, len);
	return tc ? tc : fpdu_segment_end(rx, arg);
}

/*
 * With CRCs: take payload from @src at *@off (*@len bytes there). When the
 * rest of the FPDU is there, check and deliver it straight from @src;
 * else hold what there is.
 */
static u32 fpdu_data_crc(struct kiwi_rx *rx, void *arg, const void *src,
			 unsigned int *off, unsigned int *len)
{
	unsigned int at = *off, n = rx->data_left;
	u32 tc = 0;

	if (*len < n + rx->trl_need) {
		n = fpdu_min(*len, n);
		*off += n;
		*len -= n;
		if (n)
			tc = fpdu_hold(rx, src, at, n);
		if (!tc && !rx->data_left)
			rx->state = KIWI_RX_TRAILER;
		return tc;
	}
	if (n)
		rx->crc = kiwi_fpdu_crc(src, at, n, rx->crc);
	rx->data_left = 0;
	rx->state = KIWI_RX_TRAILER;
	if (kiwi_fpdu_copy(src, at + n, rx->trl, rx->trl_need))
		return KIWI_TC_MPA_LOCAL_CATA;
	rx->trl_got = rx->trl_need;
	*off += n + rx->trl_need;
	*len -= n + rx->trl_need;
	return fpdu_deliver(rx, arg, src, at, n);
}

u32 kiwi_fpdu_recv(struct kiwi_rx *rx, void *arg, const void *src,
		   unsigned int off, unsigned int len)
{
	unsigned int n;
	u32 tc;

	while (len && rx->state != KIWI_RX_DEAD) {
		switch (rx->state) {
		case KIWI_RX_HDR:
			n = fpdu_min(len, rx->hdr_need - rx->hdr_got);
			if (kiwi_fpdu_copy(src, off, rx->hdr + rx->hdr_got, n))
				return KIWI_TC_MPA_LOCAL_CATA;
			rx->hdr_got += n;
			off += n;
			len -= n;
			if (rx->hdr_got < rx->hdr_need)
				break;
			tc = fpdu_hdr(rx);
			if (tc && !rx->check_crc)
				return tc;
			if (tc) {
				/* Told once the CRC matched: no more headers. */
				rx->pending = tc;
				rx->hdr_need = rx->hdr_got;
			}
			if (rx->hdr_got < rx->hdr_need)
				break;	/* more headers follow */
			tc = fpdu_payload(rx, arg);
			if (tc)
				return tc;
			fallthrough;
		case KIWI_RX_DATA:
			if (rx->check_crc) {
				tc = fpdu_data_crc(rx, arg, src, &off, &len);
				if (tc)
					return tc;
				break;
			}
			n = fpdu_min(len, rx->data_left);
			if (n) {
				tc = fpdu_place(rx, arg, src, off, n);
				if (tc)
					return tc;
				off += n;
				len -= n;
			}
			if (!rx->data_left)
				rx->state = KIWI_RX_TRAILER;
			break;
		case KIWI_RX_TRAILER:
			n = fpdu_min(len, rx->trl_need - rx->trl_got);
			if (kiwi_fpdu_copy(src, off, rx->trl + rx->trl_got, n))
				return KIWI_TC_MPA_LOCAL_CATA;
			rx->trl_got += n;
			off += n;
			len -= n;
			if (rx->trl_got < rx->trl_need)
				break;
			tc = rx->check_crc ? fpdu_deliver(rx, arg, NULL, 0, 0) :
					     fpdu_segment_end(rx, arg);
			if (tc)
				return tc;
			break;
		default:
			return 0;
		}
	}
	return 0;
}

void kiwi_fpdu_term(const struct kiwi_rx *rx, u32 tc, struct kiwi_term *t)
{
	const u8 *ddp = rx->hdr + KIWI_MPA_LEN_SIZE;
	unsigned int dlen = KIWI_UNTAGGED_HDR_LEN;
	int opcode = -1;

	memset(t, 0, sizeof(*t));
	t->code = tc;
	/*
	 * The DDP header as this FPDU has it, by its own T flag, once it is
	 * in whole: @rx->ddp is an earlier FPDU's until kiwi_ddp_parse() ran
	 * (a Terminate or Read Request too long for @rx->hdr is refused
	 * before that), and echoing it by that would send a header of the
	 * wrong length, which the peer could not parse.
	 */
	if (rx->hdr_got > KIWI_MPA_LEN_SIZE) {
		dlen = ddp[0] & FPDU_DDP_T ? KIWI_TAGGED_HDR_LEN :
					     KIWI_UNTAGGED_HDR_LEN;
		if (rx->hdr_got >= KIWI_MPA_LEN_SIZE + dlen)
			opcode = ddp[1] & FPDU_RDMAP_OP;
	}
	kiwi_term_flags(tc, opcode, t);
	if (t->d) {
		t->seg_len = rx->ulpdu_len;
		t->ddp_hdr = ddp;
		t->ddp_hdr_len = dlen;
	}
	/* Only a Read Request has one; zeros when it is not all in. */
	if (t->r && rx->hdr_got >= KIWI_MPA_LEN_SIZE + KIWI_UNTAGGED_HDR_LEN +
				   KIWI_READ_REQ_LEN)
		t->rdmap_hdr = ddp + KIWI_UNTAGGED_HDR_LEN;
}
