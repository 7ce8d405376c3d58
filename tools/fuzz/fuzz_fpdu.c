// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: the input is a TCP byte stream of FPDUs. Walk the
 * ULPDU_Length fields; for each FPDU check the pad and CRC arithmetic,
 * run kiwi_ddp_parse() on its ULPDU (and on a cut-off last one), and
 * parse the Read Request or Terminate header behind it. Whatever parses
 * must re-encode to the same bytes (reserved bits aside); whatever fails
 * must yield a Terminate that itself builds and parses back.
 */
#include "fuzz_common.h"

static const u8 fig4_qn[KIWI_OP_MAX + 1] = {
	[KIWI_OP_READ_REQ] = KIWI_QN_READ_REQ,
	[KIWI_OP_TERMINATE] = KIWI_QN_TERMINATE,
	[KIWI_OP_ATOMIC_REQ] = KIWI_QN_READ_REQ,	/* RFC 7306 */
	[KIWI_OP_ATOMIC_RESP] = KIWI_QN_ATOMIC_RESP,
};

static bool is_ddp_parse_code(u32 r)
{
	return r == KIWI_TC_DDP_LOCAL_CATA || r == KIWI_TC_DDP_T_INV_VERSION ||
	       r == KIWI_TC_DDP_U_INV_VERSION ||
	       r == KIWI_TC_RDMAP_INV_VERSION ||
	       r == KIWI_TC_RDMAP_UNEXP_OPCODE || r == KIWI_TC_DDP_U_INV_QN ||
	       r == KIWI_TC_RDMAP_OP_UNSPEC;
}

/* The Terminate a receiver would send for @r, built and parsed back. */
static void terminate_for(u32 r, const u8 *u, size_t len,
			  const struct kiwi_ddp_hdr *h)
{
	u8 out[KIWI_TERM_CTRL_LEN + KIWI_TERM_SEGLEN_LEN +
	       KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN];
	struct kiwi_term t = { .code = r }, back;
	size_t n;

	kiwi_term_flags(r, h->hdr_len ? h->opcode : -1, &t);
	ASSERT(!t.r);	/* kiwi_ddp_parse reports no protection errors */
	if (t.d) {
		ASSERT(h->hdr_len && h->hdr_len <= len);
		t.ddp_hdr = u;
		t.ddp_hdr_len = h->tagged ? KIWI_TAGGED_HDR_LEN :
					    KIWI_UNTAGGED_HDR_LEN;
		t.seg_len = (u16)(len - t.ddp_hdr_len);
	}
	n = kiwi_term_build(out, &t);
	ASSERT(n <= sizeof(out));
	ASSERT(kiwi_term_parse(out, n, &back) == 0);
	ASSERT(back.code == r && back.m == t.m && back.d == t.d && !back.r);
	if (t.d) {
		ASSERT(back.seg_len == t.seg_len);
		ASSERT(back.ddp_hdr_len == t.ddp_hdr_len);
		ASSERT(!memcmp(back.ddp_hdr, u, t.ddp_hdr_len));
	}
}

static void check_terminate(const u8 *p, size_t len)
{
	u8 out[KIWI_TERM_CTRL_LEN + KIWI_TERM_SEGLEN_LEN +
	       KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN];
	struct kiwi_term t;
	size_t n;
	u32 r;

	r = kiwi_term_parse(p, len, &t);
	if (r) {
		ASSERT(r == KIWI_TC_RDMAP_OP_UNSPEC);
		return;
	}
	ASSERT(!(t.code & 0xffff));
	ASSERT(t.d == !!t.ddp_hdr && t.r == !!t.rdmap_hdr);
	if (t.d) {
		ASSERT(t.ddp_hdr == p + 6);
		ASSERT(t.ddp_hdr_len == (p[6] & 0x80 ? 14u : 18u));
	} else {
		ASSERT(!t.ddp_hdr_len && !t.seg_len);
	}
	if (t.r)
		ASSERT(t.rdmap_hdr + KIWI_READ_REQ_LEN <= p + len);

	/* Re-encoded, it is the same header, reserved bits cleared. */
	n = kiwi_term_build(out, &t);
	ASSERT(n <= len);
	ASSERT(get_unaligned_be32(out) == (get_unaligned_be32(p) & ~0x1fffu));
	ASSERT(!memcmp(out + 4, p + 4, n - 4));
}

static void check_ulpdu(const u8 *u, size_t len)
{
	u8 b[KIWI_UNTAGGED_HDR_LEN], rr_out[KIWI_ATOMIC_REQ_LEN];
	struct kiwi_atomic_resp aresp;
	struct kiwi_atomic_req areq;
	struct kiwi_read_req rr;
	struct kiwi_imm imm;
	struct kiwi_ddp_hdr h;
	unsigned int op;
	bool inv;
	u32 r;

	r = kiwi_ddp_parse(u, len, &h);
	ASSERT(h.hdr_len <= len);
	if (r) {
		ASSERT(is_ddp_parse_code(r));
		ASSERT(!h.hdr_len == (r == KIWI_TC_DDP_LOCAL_CATA));
		terminate_for(r, u, len, &h);
		return;
	}

	op = h.opcode;
	inv = op == KIWI_OP_SEND_INV || op == KIWI_OP_SEND_SE_INV;
	ASSERT(op <= KIWI_OP_MAX);
	ASSERT(h.tagged == (op == KIWI_OP_WRITE || op == KIWI_OP_READ_RESP));
	ASSERT(h.hdr_len >= (h.tagged ? 14u : 18u));
	ASSERT(inv || !h.inv_stag);

	/* The DDP header re-encodes to the same bytes, reserved aside. */
	if (h.tagged) {
		ASSERT(!h.qn && !h.msn && !h.mo);
		kiwi_ddp_build_tagged(b, op, h.last, h.stag, h.to);
		ASSERT(!memcmp(b + 2, u + 2, KIWI_TAGGED_HDR_LEN - 2));
	} else {
		ASSERT(h.qn == fig4_qn[op]);
		ASSERT(!h.stag && !h.to);
		kiwi_ddp_build_untagged(b, op, h.last, h.inv_stag, h.qn,
					h.msn, h.mo);
		ASSERT(!memcmp(b + 6, u + 6, KIWI_UNTAGGED_HDR_LEN - 6));
		ASSERT(!memcmp(b + 2, inv ? u + 2 : (const u8 *)"\0\0\0\0", 4));
	}
	ASSERT(b[0] == (u[0] & ~0x3c));
	ASSERT(b[1] == (u[1] & ~0x30));

	if (op == KIWI_OP_READ_REQ) {
		ASSERT(len == 46 && h.hdr_len == 46 && h.last);
		kiwi_read_req_parse(u + KIWI_UNTAGGED_HDR_LEN, &rr);
		kiwi_read_req_build(rr_out, &rr);
		ASSERT(!memcmp(rr_out, u + KIWI_UNTAGGED_HDR_LEN,
			       KIWI_READ_REQ_LEN));
	} else if (op == KIWI_OP_TERMINATE) {
		ASSERT(len >= 22 && h.hdr_len == len && h.last);
		check_terminate(u + KIWI_UNTAGGED_HDR_LEN,
				len - KIWI_UNTAGGED_HDR_LEN);
	} else if (op == KIWI_OP_ATOMIC_REQ) {
		ASSERT(len == 70 && h.hdr_len == 70 && h.last);
		r = kiwi_atomic_req_parse(u + KIWI_UNTAGGED_HDR_LEN, &areq);
		ASSERT(!r || r == KIWI_TC_RDMAP_OP_UNSPEC);
		ASSERT(!r == (areq.code == KIWI_ATOMIC_FETCH_ADD ||
			      areq.code == KIWI_ATOMIC_CMP_SWAP));
		kiwi_atomic_req_build(rr_out, &areq);
		ASSERT(!memcmp(rr_out + 4, u + KIWI_UNTAGGED_HDR_LEN + 4,
			       KIWI_ATOMIC_REQ_LEN - 4));
		ASSERT(rr_out[3] == (u[KIWI_UNTAGGED_HDR_LEN + 3] & 0x0f));
		(void)kiwi_atomic_apply(&areq, get_unaligned_be64(u + 2));
	} else if (op == KIWI_OP_ATOMIC_RESP) {
		ASSERT(len == 30 && h.hdr_len == 30 && h.last);
		kiwi_atomic_resp_parse(u + KIWI_UNTAGGED_HDR_LEN, &aresp);
		kiwi_atomic_resp_build(rr_out, &aresp);
		ASSERT(!memcmp(rr_out, u + KIWI_UNTAGGED_HDR_LEN,
			       KIWI_ATOMIC_RESP_LEN));
	} else if (op == KIWI_OP_IMM || op == KIWI_OP_IMM_SE) {
		ASSERT(len == 26 && h.hdr_len == 26 && h.last);
		kiwi_imm_parse(u + KIWI_UNTAGGED_HDR_LEN, &imm);
		kiwi_imm_build(rr_out, &imm);
		ASSERT(!memcmp(rr_out, u + KIWI_UNTAGGED_HDR_LEN,
			       KIWI_IMM_LEN));
	} else {
		ASSERT(h.hdr_len == (h.tagged ? 14u : 18u));
	}
}

static u32 crc_of(const u8 *p, size_t len)
{
	return kiwi_mpa_crc_final(kiwi_crc32c_update(kiwi_mpa_crc_init(),
						     p, len));
}

static void check_mulpdu(const u8 *data, size_t size)
{
	unsigned int emss, m;

	if (size < 4)
		return;
	emss = get_unaligned_be32(data);
	m = kiwi_mpa_mulpdu(emss);
	if (!m) {
		ASSERT(kiwi_fpdu_len(KIWI_UNTAGGED_HDR_LEN) > emss);
		return;
	}
	ASSERT(m >= KIWI_UNTAGGED_HDR_LEN && m <= 0xffff);
	ASSERT(kiwi_fpdu_len(m) <= emss);
	ASSERT(m == 0xffff || kiwi_fpdu_len(m + 1) > emss);
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	size_t off = 0;

	check_mulpdu(data, size);
	while (size - off >= KIWI_MPA_LEN_SIZE) {
		const u8 *fp = data + off;
		unsigned int ulen = get_unaligned_be16(fp);
		unsigned int pad = kiwi_mpa_pad(ulen);
		size_t flen = kiwi_fpdu_len(ulen), body;
		u32 crc, half;
		u8 wire[4];

		ASSERT(pad < 4 && (KIWI_MPA_LEN_SIZE + ulen + pad) % 4 == 0);
		ASSERT(flen == KIWI_MPA_LEN_SIZE + ulen + pad +
			       KIWI_MPA_CRC_SIZE);
		if (flen > size - off) {
			/* The stream ends inside this FPDU: what is there. */
			body = size - off - KIWI_MPA_LEN_SIZE;
			check_ulpdu(fp + KIWI_MPA_LEN_SIZE,
				    body < ulen ? body : ulen);
			break;
		}

		body = KIWI_MPA_LEN_SIZE + ulen + pad;
		crc = crc_of(fp, body);
		/* Raw updates chain: two pieces give the one-pass CRC. */
		half = kiwi_crc32c_update(kiwi_mpa_crc_init(), fp, body / 2);
		half = kiwi_crc32c_update(half, fp + body / 2,
					  body - body / 2);
		ASSERT(kiwi_mpa_crc_final(half) == crc);
		/* On the wire least significant octet first. */
		kiwi_mpa_crc_put(crc, wire);
		ASSERT(wire[0] == (u8)crc && wire[3] == (u8)(crc >> 24));
		ASSERT(kiwi_mpa_crc_get(wire) == crc);
		if (kiwi_mpa_crc_get(fp + body) == crc)
			ASSERT(!memcmp(fp + body, wire, 4));

		check_ulpdu(fp + KIWI_MPA_LEN_SIZE, ulen);
		off += flen;
	}
	return 0;
}
