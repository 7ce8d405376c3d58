// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: kiwi_mpa_parse() on arbitrary bytes, as a Request and
 * as a Reply. Whatever it accepts must encode back (kiwi_mpa_build) to the
 * same bytes, reserved flag bits aside, and decode again to the same frame.
 * And as the connection manager reads a frame (kiwi_cm_recv_mpa()): its
 * header, then what kiwi_mpa_parse() asks for, arriving in pieces - it
 * never asks for more than that buffer holds, never makes it read past
 * the frame, and ends as the parse of the whole input does.
 */
#include "fuzz_common.h"

/*
 * Flag bits that survive a decode/encode: M, C, R, the large-FPDU offer,
 * and E in revision 2.
 */
static u8 kept_flags(u8 rev)
{
	return 0xe8 | (rev == 2 ? 0x10 : 0);
}

static void same_frame(const struct kiwi_mpa_frame *a,
		       const struct kiwi_mpa_frame *b)
{
	ASSERT(a->reply == b->reply);
	ASSERT(a->markers == b->markers);
	ASSERT(a->crc == b->crc);
	ASSERT(a->reject == b->reject);
	ASSERT(a->enhanced == b->enhanced);
	ASSERT(a->large_fpdus == b->large_fpdus);
	ASSERT(a->rev == b->rev);
	ASSERT(a->pd_len == b->pd_len);
	ASSERT(a->p2p == b->p2p);
	ASSERT(a->ird == b->ird);
	ASSERT(a->ord == b->ord);
	ASSERT(a->rtr == b->rtr);
	ASSERT(a->ulp_pdata_len == b->ulp_pdata_len);
	ASSERT(!a->ulp_pdata_len ||
	       !memcmp(a->ulp_pdata, b->ulp_pdata, a->ulp_pdata_len));
}

static void one(const u8 *data, size_t size, bool want_reply)
{
	u8 out[KIWI_MPA_HDR_LEN + KIWI_MPA_MAX_PDATA];
	struct kiwi_mpa_frame f, g;
	size_t n, v2;
	int r;

	r = kiwi_mpa_parse(data, size, want_reply, &f);
	if (r < 0) {
		ASSERT(r == -(int)KIWI_TC_MPA_REQ_RSP);
		return;
	}
	if (r > 0) {
		/* Asks for more, and exactly the frame's length when known */
		ASSERT((size_t)r > size);
		ASSERT(r >= KIWI_MPA_HDR_LEN);
		ASSERT(r <= KIWI_MPA_HDR_LEN + KIWI_MPA_MAX_PDATA);
		if (size >= KIWI_MPA_HDR_LEN)
			ASSERT(r == KIWI_MPA_HDR_LEN +
			       get_unaligned_be16(data + 18));
		else
			ASSERT(r == KIWI_MPA_HDR_LEN);
		return;
	}

	n = KIWI_MPA_HDR_LEN + (size_t)f.pd_len;
	v2 = f.enhanced ? KIWI_MPA_V2_DATA_LEN : 0;
	ASSERT(n <= size);
	ASSERT(f.pd_len <= KIWI_MPA_MAX_PDATA);
	ASSERT(f.rev == 1 || f.rev == 2);
	ASSERT(f.reply == want_reply);
	ASSERT(!f.reject || want_reply);
	ASSERT(!f.enhanced || f.rev == 2);
	ASSERT(f.ulp_pdata_len + v2 == f.pd_len);
	if (f.ulp_pdata_len)
		ASSERT(f.ulp_pdata == data + KIWI_MPA_HDR_LEN + v2);
	else
		ASSERT(!f.ulp_pdata);
	ASSERT(f.ird <= KIWI_MPA_IRD_ORD_MAX && f.ord <= KIWI_MPA_IRD_ORD_MAX);
	ASSERT(!(f.rtr & ~(KIWI_RTR_SEND | KIWI_RTR_WRITE | KIWI_RTR_READ)));
	if (!f.enhanced)
		ASSERT(!f.p2p && !f.ird && !f.ord && !f.rtr);

	/* Encode what was decoded: the same bytes come out. */
	ASSERT(kiwi_mpa_build(out, &f) == n);
	ASSERT(!memcmp(out, data, KIWI_MPA_KEY_LEN));
	ASSERT(out[16] == (data[16] & kept_flags(f.rev)));
	ASSERT(!memcmp(out + 17, data + 17, n - 17));

	/* And decode to the same frame, from a buffer of exactly n bytes. */
	ASSERT(kiwi_mpa_parse(out, n, want_reply, &g) == 0);
	same_frame(&f, &g);
	/* The other kind of frame never matches the key. */
	ASSERT(kiwi_mpa_parse(out, n, !want_reply, &g) ==
	       -(int)KIWI_TC_MPA_REQ_RSP);
}

static void pieces(const u8 *data, size_t size, bool want_reply)
{
	u8 buf[KIWI_MPA_HDR_LEN + KIWI_MPA_MAX_PDATA];	/* as cep->mpa */
	size_t got = 0, need = KIWI_MPA_HDR_LEN, cut = size % 7 + 1, n;
	struct kiwi_mpa_frame f, whole;
	int r = 1, rw;

	rw = kiwi_mpa_parse(data, size, want_reply, &whole);
	for (;;) {
		if (got >= KIWI_MPA_HDR_LEN) {
			r = kiwi_mpa_parse(buf, got, want_reply, &f);
			if (r <= 0)
				break;
			ASSERT((size_t)r > got && (size_t)r <= sizeof(buf));
			need = r;
		}
		n = need - got;
		if (n > cut)
			n = cut;
		if (n > size - got)
			n = size - got;
		if (!n) {
			/* The input ended inside the frame. */
			ASSERT(got == size && rw == (int)need);
			return;
		}
		memcpy(buf + got, data + got, n);
		got += n;
		cut = cut * 5 % 31 + 1;
	}
	ASSERT(r == rw);
	if (r == 0) {
		/* Read exactly the frame, and it is the same frame. */
		ASSERT(got == KIWI_MPA_HDR_LEN + (size_t)f.pd_len);
		same_frame(&f, &whole);
	} else {
		/* A bad header is seen on its 20 bytes alone. */
		ASSERT(got == KIWI_MPA_HDR_LEN);
	}
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	one(data, size, false);
	one(data, size, true);
	pieces(data, size, false);
	pieces(data, size, true);
	return 0;
}
