// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: a received Terminate's payload (the bytes after its
 * DDP header), as kiwi_rx.c takes it: kiwi_term_parse(), then, for a
 * Terminate echoing a Read Request, kiwi_read_req_parse() of the echoed
 * header, and kiwi_tc_access() to pick the completion status. The input
 * is the payload, any length. Checks: it parses exactly when the bytes
 * its D and R bits announce are there; every pointer it returns lies in
 * the input, with the length its own T flag gives; and what parsed
 * encodes back to the same bytes, reserved bits cleared.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	u8 out[KIWI_TERM_CTRL_LEN + KIWI_TERM_SEGLEN_LEN +
	       KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN];
	struct kiwi_read_req rr;
	struct kiwi_term t;
	size_t need, n;
	u32 r, ctrl;
	bool d, rr_in, access;

	r = kiwi_term_parse(data, size, &t);

	/* Independently: the bytes the control word announces */
	need = KIWI_TERM_CTRL_LEN;
	d = false;
	rr_in = false;
	if (size >= KIWI_TERM_CTRL_LEN) {
		ctrl = get_unaligned_be32(data);
		d = ctrl & 0x4000;
		rr_in = ctrl & 0x2000;
		if (d)
			need += KIWI_TERM_SEGLEN_LEN +
				(size > need + KIWI_TERM_SEGLEN_LEN &&
				 data[need + KIWI_TERM_SEGLEN_LEN] & 0x80 ?
				 KIWI_TAGGED_HDR_LEN : KIWI_UNTAGGED_HDR_LEN);
		if (rr_in)
			need += KIWI_READ_REQ_LEN;
	}
	if (r) {
		ASSERT(r == KIWI_TC_RDMAP_OP_UNSPEC);
		ASSERT(size < need);
		return 0;
	}
	ASSERT(size >= need);
	ASSERT(t.d == d && t.r == rr_in);
	ASSERT(!(t.code & 0xffff));
	ASSERT(t.code == (get_unaligned_be32(data) & 0xffff0000u));
	if (t.d) {
		ASSERT(t.ddp_hdr == data + KIWI_TERM_CTRL_LEN +
				    KIWI_TERM_SEGLEN_LEN);
		ASSERT(t.ddp_hdr_len == (t.ddp_hdr[0] & 0x80 ? 14u : 18u));
		ASSERT(t.ddp_hdr + t.ddp_hdr_len <= data + size);
		ASSERT(t.opcode == (t.ddp_hdr[1] & 0xf));
		ASSERT(t.seg_len == get_unaligned_be16(data + 4));
	} else {
		ASSERT(!t.ddp_hdr && !t.ddp_hdr_len && !t.seg_len);
		ASSERT(t.opcode == -1);
	}
	if (t.r) {
		ASSERT(t.rdmap_hdr == data + need - KIWI_READ_REQ_LEN);
		ASSERT(t.rdmap_hdr + KIWI_READ_REQ_LEN <= data + size);
	} else {
		ASSERT(!t.rdmap_hdr);
	}

	/* kiwi_rx_term_read(): the echoed Read names our Read, or not */
	if (t.rdmap_hdr && t.opcode == KIWI_OP_READ_REQ) {
		u8 back[KIWI_READ_REQ_LEN];

		kiwi_read_req_parse(t.rdmap_hdr, &rr);
		kiwi_read_req_build(back, &rr);
		ASSERT(!memcmp(back, t.rdmap_hdr, sizeof(back)));
	}
	access = kiwi_tc_access(t.code);
	if (access)
		ASSERT(KIWI_TC_LAYER(t.code) <= KIWI_LAYER_DDP &&
		       KIWI_TC_ETYPE(t.code) == 1);

	/* Re-encoded: the same bytes, reserved bits aside */
	n = kiwi_term_build(out, &t);
	ASSERT(n == need);
	ASSERT(get_unaligned_be32(out) ==
	       (get_unaligned_be32(data) & 0xffffe000u));
	ASSERT(!memcmp(out + 4, data + 4, n - 4));
	return 0;
}
