// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: the receive engine's walk over the byte stream, FPDU by FPDU. See
 * kiwi_fpdu.h for the contract; the module's kiwi_rx.c and the host fuzzer
 * tools/fuzz/fuzz_rx.c both run this code.
 *
 * An FPDU is a 2-byte ULPDU_Length, the ULPDU (DDP header, maybe an RDMAP
 * header, payload), 0 to 3 pad bytes and a 4-byte CRC (RFC 5044 section
 * 4). The headers are collected into @rx->hdr first: 3 bytes tell the
 * DDP header's length (the T flag), an untagged header tells whether a
 * Read Request or Terminate header follows, and only then are they parsed.
 * Every length is bounded before bytes are copied for it.
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
	rx->hdr_need = KIWI_MPA_LEN_SIZE + 1;
}

void kiwi_fpdu_reset(struct kiwi_rx *rx, bool check_crc)
{
	rx->check_crc = check_crc;
	rx->mo = 0;
	rx->msn[KIWI_QN_SEND] = 1;
	rx->msn[KIWI_QN_READ_REQ] = 1;
	rx->msn[KIWI_QN_TERMINATE] = 1;
	kiwi_fpdu_next(rx);
}

/*
 * @rx->hdr_need bytes are in: size the rest of the headers, or parse them
 * when they are complete. Return: 0 (complete when @rx->hdr_got is still
 * @rx->hdr_need) or a Terminate code.
 */
static u32 fpdu_hdr(struct kiwi_rx *rx)
{
	const u8 *ddp = rx->hdr + KIWI_MPA_LEN_SIZE;

	if (rx->hdr_need == KIWI_MPA_LEN_SIZE + 1) {
		/* Length and DDP control are in: size the headers. */
		rx->ulpdu_len = get_unaligned_be16(rx->hdr);
		rx->hdr_need = KIWI_MPA_LEN_SIZE + (ddp[0] & FPDU_DDP_T ?
						    KIWI_TAGGED_HDR_LEN :
						    KIWI_UNTAGGED_HDR_LEN);
		/* Too short for a DDP segment, as kiwi_ddp_parse() says. */
		if (rx->ulpdu_len + KIWI_MPA_LEN_SIZE < rx->hdr_need)
			return KIWI_TC_DDP_LOCAL_CATA;
		return 0;
	}
	if (rx->hdr_need == KIWI_MPA_LEN_SIZE + KIWI_UNTAGGED_HDR_LEN &&
	    !(ddp[0] & FPDU_DDP_T)) {
		u8 op = ddp[1] & FPDU_RDMAP_OP;

		/* Read Request and Terminate headers follow the DDP header. */
		if ((op == KIWI_OP_READ_REQ || op == KIWI_OP_TERMINATE) &&
		    rx->ulpdu_len + KIWI_MPA_LEN_SIZE > rx->hdr_need) {
			if (rx->ulpdu_len + KIWI_MPA_LEN_SIZE > KIWI_RX_HDR_MAX)
				return KIWI_TC_RDMAP_OP_UNSPEC;
			rx->hdr_need = KIWI_MPA_LEN_SIZE + rx->ulpdu_len;
			return 0;
		}
	}
	return kiwi_ddp_parse(ddp, rx->ulpdu_len, &rx->ddp);
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

	/* Untagged: MSN and MO must be the ones expected (qn < 3: parsed). */
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
	if (h->opcode == KIWI_OP_READ_REQ || h->opcode == KIWI_OP_TERMINATE)
		return h->mo ? KIWI_TC_DDP_U_INV_MO : 0;
	return KIWI_TC_RDMAP_UNEXP_OPCODE;
}

/* The trailer is in: check the CRC, act on the segment, go on. */
static u32 fpdu_segment_end(struct kiwi_rx *rx, void *arg)
{
	const struct kiwi_ddp_hdr *h = &rx->ddp;
	unsigned int pad = rx->trl_need - KIWI_MPA_CRC_SIZE;
	u32 tc;

	if (rx->check_crc) {
		u32 crc = kiwi_crc32c_update(rx->crc, rx->trl, pad);

		if (kiwi_mpa_crc_final(crc) != kiwi_mpa_crc_get(rx->trl + pad))
			return KIWI_TC_MPA_CRC;
	}
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
			if (tc)
				return tc;
			if (rx->hdr_got < rx->hdr_need)
				break;	/* more headers follow */
			if (rx->check_crc)
				rx->crc = kiwi_crc32c_update(kiwi_mpa_crc_init(),
							     rx->hdr,
							     rx->hdr_got);
			tc = fpdu_segment_start(rx, arg);
			if (tc)
				return tc;
			rx->trl_got = 0;
			rx->trl_need = kiwi_mpa_pad(rx->ulpdu_len) +
				       KIWI_MPA_CRC_SIZE;
			rx->state = KIWI_RX_DATA;
			fallthrough;
		case KIWI_RX_DATA:
			n = fpdu_min(len, rx->data_left);
			if (n) {
				tc = kiwi_fpdu_place(rx, arg, src, off, n);
				if (tc)
					return tc;
				if (!rx->ddp.tagged)
					rx->mo += n;
				rx->data_left -= n;
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
			tc = fpdu_segment_end(rx, arg);
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
