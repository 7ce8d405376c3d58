// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Host unit tests (no VM) for kiwi's wire-format layer, kiwi_wire.c: the
 * same source the module compiles, built here against libc through
 * kiwi_wire_shim.h, under ASan and UBSan.
 *
 * Golden bytes come from the RFCs as digested in
 * shared/spec/digest-rdmap.md (IDs such as R-HDR-21 name the requirement a
 * test proves), RFC 3720's CRC32c vectors, and FPDUs whose CRC was derived
 * with an independent CRC32c (a table-driven one below, and a bitwise one
 * written separately when the golden bytes were made).
 *
 * Every parser is also fed each truncation of valid input in a heap buffer
 * of exactly that size, so ASan catches any read past the length.
 *
 * Prints TAP; exits 1 when any test point fails.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "../selftests/kselftest.h"
#include "kiwi_wire.h"

static int point_failures;

/* Record a failed check inside the current test point. */
#define CHECK(cond) do {						\
	if (!(cond)) {							\
		point_failures++;					\
		if (point_failures <= 10)				\
			printf("# %s:%d: failed: %s\n", __FILE__,	\
			       __LINE__, #cond);			\
	}								\
} while (0)

#define CHECK_EQ(a, b) do {						\
	unsigned long long _a = (a), _b = (b);				\
	if (_a != _b) {							\
		point_failures++;					\
		if (point_failures <= 10)				\
			printf("# %s:%d: failed: %s == %s "		\
			       "(0x%llx != 0x%llx)\n", __FILE__,	\
			       __LINE__, #a, #b, _a, _b);		\
	}								\
} while (0)

#define CHECK_MEM(a, b, n) do {						\
	if (memcmp((a), (b), (n))) {					\
		point_failures++;					\
		if (point_failures <= 10) {				\
			printf("# %s:%d: failed: bytes of %s\n",	\
			       __FILE__, __LINE__, #a);			\
			hexdump("got ", (a), (n));			\
			hexdump("want", (b), (n));			\
		}							\
	}								\
} while (0)

static void hexdump(const char *tag, const void *p, size_t n)
{
	const u8 *b = p;
	size_t i;

	printf("# %s:", tag);
	for (i = 0; i < n; i++)
		printf(" %02x", b[i]);
	printf("\n");
}

/* Copy into a heap buffer of exactly @len bytes: ASan sees any overread. */
static u8 *exact(const u8 *src, size_t len)
{
	u8 *p = malloc(len ? len : 1);

	if (!p)
		abort();
	if (len)
		memcpy(p, src, len);
	return p;
}

/* Small deterministic PRNG (xorshift64*) for the round-trip sweeps. */
static u64 rng_state = 0x9e3779b97f4a7c15ull;

static u64 rnd64(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static u32 rnd32(void)
{
	return (u32)(rnd64() >> 32);
}

/* ---- an independent CRC32c: table driven, table built at start-up ---- */

static u32 ref_table[256];

static void ref_crc_init(void)
{
	u32 i, c;
	int k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		ref_table[i] = c;
	}
}

/* Standard CRC32c: init ~0, reflected, final inversion. */
static u32 ref_crc32c(const void *buf, size_t len)
{
	const u8 *b = buf;
	u32 c = 0xffffffffu;

	while (len--)
		c = ref_table[(c ^ *b++) & 0xff] ^ (c >> 8);
	return ~c;
}

/* CRC32c the way the module does it, through the wire layer's API. */
static u32 kiwi_crc(const void *buf, size_t len)
{
	return kiwi_mpa_crc_final(kiwi_crc32c_update(kiwi_mpa_crc_init(),
						     buf, len));
}

/* Wrap @ulpdu in an FPDU (length, pad, CRC); returns the FPDU length. */
static size_t make_fpdu(u8 *out, const u8 *ulpdu, unsigned int len)
{
	unsigned int pad = kiwi_mpa_pad(len);

	put_unaligned_be16((u16)len, out);
	memcpy(out + KIWI_MPA_LEN_SIZE, ulpdu, len);
	memset(out + KIWI_MPA_LEN_SIZE + len, 0, pad);
	kiwi_mpa_crc_put(kiwi_crc(out, KIWI_MPA_LEN_SIZE + len + pad),
			 out + KIWI_MPA_LEN_SIZE + len + pad);
	return kiwi_fpdu_len(len);
}

/* ---- CRC and framing ---- */

static void t_crc_check_value(void)
{
	CHECK_EQ(kiwi_crc("123456789", 9), 0xE3069283u);
	CHECK_EQ(ref_crc32c("123456789", 9), 0xE3069283u);
	/* Raw update, no inversion: chaining two halves equals one pass. */
	CHECK_EQ(kiwi_mpa_crc_final(kiwi_crc32c_update(
			kiwi_crc32c_update(~0u, "1234", 4), "56789", 5)),
		 0xE3069283u);
}

static void t_crc_matches_reference(void)
{
	u8 buf[2048];
	size_t i, len;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (u8)rnd32();
	for (len = 0; len <= sizeof(buf); len += 1 + len / 8)
		CHECK_EQ(kiwi_crc(buf, len), ref_crc32c(buf, len));
}

static void t_crc_wire_order(void)
{
	/*
	 * RFC 3720 B.4 (iSCSI, the CRC MPA reuses) lists each CRC as the
	 * bytes sent: least significant octet first.
	 */
	static const struct {
		u8 fill;	/* 0: zeros, 1: ones, 2: up, 3: down */
		u8 wire[4];
	} v[] = {
		{ 0, { 0xaa, 0x36, 0x91, 0x8a } },
		{ 1, { 0x43, 0xab, 0xa8, 0x62 } },
		{ 2, { 0x4e, 0x79, 0xdd, 0x46 } },
		{ 3, { 0x5c, 0xdb, 0x3f, 0x11 } },
	};
	u8 data[32], out[4];
	size_t i, j;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		for (j = 0; j < 32; j++)
			data[j] = v[i].fill == 0 ? 0 : v[i].fill == 1 ? 0xff :
				  v[i].fill == 2 ? j : 31 - j;
		kiwi_mpa_crc_put(kiwi_crc(data, 32), out);
		CHECK_MEM(out, v[i].wire, 4);
		CHECK_EQ(kiwi_mpa_crc_get(v[i].wire), ref_crc32c(data, 32));
	}
	/* 0x8A9136AA, CRC32c of 32 zero bytes, as a number */
	CHECK_EQ(kiwi_mpa_crc_get(v[0].wire), 0x8A9136AAu);
}

static void t_golden_fpdu_send(void)
{
	/* One-segment Send, QN 0, MSN 1, MO 0, payload "kiwi": no pad */
	static const u8 golden[] = {
		0x00, 0x16, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 'k', 'i', 'w', 'i',
		0x2e, 0x06, 0x76, 0xc7,
	};
	u8 ulpdu[22], fpdu[64];
	size_t n;

	kiwi_ddp_build_untagged(ulpdu, KIWI_OP_SEND, true, 0, KIWI_QN_SEND,
				1, 0);
	memcpy(ulpdu + KIWI_UNTAGGED_HDR_LEN, "kiwi", 4);
	n = make_fpdu(fpdu, ulpdu, sizeof(ulpdu));
	CHECK_EQ(n, sizeof(golden));
	CHECK_MEM(fpdu, golden, sizeof(golden));
	CHECK_EQ(kiwi_mpa_crc_get(golden + 24), ref_crc32c(golden, 24));
}

static void t_golden_fpdu_write_pad(void)
{
	/* Tagged last Write, STag 0x11223344, TO 0x0102..08, "hello": pad 3 */
	static const u8 golden[] = {
		0x00, 0x13, 0xc1, 0x40, 0x11, 0x22, 0x33, 0x44,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		'h', 'e', 'l', 'l', 'o', 0x00, 0x00, 0x00,
		0x1f, 0xb1, 0x00, 0x4d,
	};
	u8 ulpdu[19], fpdu[64];
	size_t n;

	kiwi_ddp_build_tagged(ulpdu, KIWI_OP_WRITE, true, 0x11223344,
			      0x0102030405060708ull);
	memcpy(ulpdu + KIWI_TAGGED_HDR_LEN, "hello", 5);
	n = make_fpdu(fpdu, ulpdu, sizeof(ulpdu));
	CHECK_EQ(kiwi_mpa_pad(19), 3);
	CHECK_EQ(n, sizeof(golden));
	CHECK_MEM(fpdu, golden, sizeof(golden));
	CHECK_EQ(kiwi_mpa_crc_get(golden + 24), ref_crc32c(golden, 24));
}

static void t_pad(void)
{
	static const unsigned int want[8] = { 2, 1, 0, 3, 2, 1, 0, 3 };
	unsigned int l;

	for (l = 0; l < 8; l++) {
		CHECK_EQ(kiwi_mpa_pad(l), want[l]);
		CHECK_EQ(kiwi_fpdu_len(l), 2 + l + want[l] + 4);
		CHECK_EQ(kiwi_fpdu_len(l) % 4, 0);
	}
	CHECK_EQ(kiwi_mpa_pad(0xffff), 3);
	CHECK_EQ(kiwi_fpdu_len(0xffff), 65544);
}

/* The definition: largest L <= 0xffff whose FPDU fits; 0 if L < 18. */
static unsigned int mulpdu_by_definition(unsigned int emss)
{
	unsigned int l = emss < 0xffff ? emss : 0xffff;

	for (l++; l-- > 0;)
		if (kiwi_fpdu_len(l) <= emss)
			return l >= KIWI_UNTAGGED_HDR_LEN ? l : 0;
	return 0;
}

static void t_mulpdu(void)
{
	unsigned int e;

	CHECK_EQ(kiwi_mpa_mulpdu(1460), 1454);
	CHECK_EQ(kiwi_mpa_mulpdu(536), 530);
	CHECK_EQ(kiwi_mpa_mulpdu(9000), 8994);
	CHECK_EQ(kiwi_mpa_mulpdu(1461), 1454);
	CHECK_EQ(kiwi_mpa_mulpdu(1463), 1454);
	CHECK_EQ(kiwi_mpa_mulpdu(1464), 1458);
	/* Tiny: 24 is the smallest that carries an 18-byte header. */
	for (e = 0; e < 24; e++)
		CHECK_EQ(kiwi_mpa_mulpdu(e), 0);
	CHECK_EQ(kiwi_mpa_mulpdu(24), 18);
	CHECK_EQ(kiwi_mpa_mulpdu(27), 18);
	CHECK_EQ(kiwi_mpa_mulpdu(28), 22);
	/* ULPDU_Length is 16 bits. */
	CHECK_EQ(kiwi_mpa_mulpdu(65544), 0xffff);
	CHECK_EQ(kiwi_mpa_mulpdu(65543), 65534);
	CHECK_EQ(kiwi_mpa_mulpdu(0xffffffffu), 0xffff);
	for (e = 0; e < 70000; e += 1 + (e > 1600) * 97)
		CHECK_EQ(kiwi_mpa_mulpdu(e), mulpdu_by_definition(e));
	for (e = 65530; e < 65560; e++)
		CHECK_EQ(kiwi_mpa_mulpdu(e), mulpdu_by_definition(e));
}

/* ---- DDP and RDMAP headers ---- */

static const u8 op_qn[] = {
	[KIWI_OP_READ_REQ] = KIWI_QN_READ_REQ,
	[KIWI_OP_SEND] = KIWI_QN_SEND,
	[KIWI_OP_SEND_INV] = KIWI_QN_SEND,
	[KIWI_OP_SEND_SE] = KIWI_QN_SEND,
	[KIWI_OP_SEND_SE_INV] = KIWI_QN_SEND,
	[KIWI_OP_TERMINATE] = KIWI_QN_TERMINATE,
	[KIWI_OP_IMM] = KIWI_QN_SEND,
	[KIWI_OP_IMM_SE] = KIWI_QN_SEND,
	[KIWI_OP_ATOMIC_REQ] = KIWI_QN_READ_REQ,
	[KIWI_OP_ATOMIC_RESP] = KIWI_QN_ATOMIC_RESP,
};

static bool op_tagged(int op)
{
	return op == KIWI_OP_WRITE || op == KIWI_OP_READ_RESP;
}

/* A valid ULPDU of @op with headers only; returns its length. */
static size_t make_ulpdu(u8 *buf, int op, bool last)
{
	struct kiwi_read_req rr = { 1, 2, 3, 4, 5 };
	struct kiwi_term t = { .code = KIWI_TC_RDMAP_OP_UNSPEC };

	if (op_tagged(op)) {
		kiwi_ddp_build_tagged(buf, op, last, 0xabcd0001, 0x1000);
		return KIWI_TAGGED_HDR_LEN;
	}
	kiwi_ddp_build_untagged(buf, op, last, 0x5a5a5a5a, op_qn[op], 1, 0);
	if (op == KIWI_OP_READ_REQ) {
		kiwi_read_req_build(buf + KIWI_UNTAGGED_HDR_LEN, &rr);
		return KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN;
	}
	if (op == KIWI_OP_TERMINATE)
		return KIWI_UNTAGGED_HDR_LEN +
		       kiwi_term_build(buf + KIWI_UNTAGGED_HDR_LEN, &t);
	if (op == KIWI_OP_IMM || op == KIWI_OP_IMM_SE) {
		memset(buf + KIWI_UNTAGGED_HDR_LEN, 0x11, KIWI_IMM_LEN);
		return KIWI_UNTAGGED_HDR_LEN + KIWI_IMM_LEN;
	}
	if (op == KIWI_OP_ATOMIC_REQ) {
		memset(buf + KIWI_UNTAGGED_HDR_LEN, 0, KIWI_ATOMIC_REQ_LEN);
		return KIWI_UNTAGGED_HDR_LEN + KIWI_ATOMIC_REQ_LEN;
	}
	if (op == KIWI_OP_ATOMIC_RESP) {
		memset(buf + KIWI_UNTAGGED_HDR_LEN, 0, KIWI_ATOMIC_RESP_LEN);
		return KIWI_UNTAGGED_HDR_LEN + KIWI_ATOMIC_RESP_LEN;
	}
	return KIWI_UNTAGGED_HDR_LEN;
}

static void t_golden_ctrl_every_opcode(void)
{
	static const struct {
		int op;
		bool last;
		u16 ctrl;
	} v[] = {
		{ KIWI_OP_WRITE, true, 0xC140 },
		{ KIWI_OP_WRITE, false, 0x8140 },
		{ KIWI_OP_READ_REQ, true, 0x4141 },
		{ KIWI_OP_READ_RESP, true, 0xC142 },
		{ KIWI_OP_READ_RESP, false, 0x8142 },
		{ KIWI_OP_SEND, true, 0x4143 },
		{ KIWI_OP_SEND, false, 0x0143 },
		{ KIWI_OP_SEND_INV, true, 0x4144 },
		{ KIWI_OP_SEND_SE, true, 0x4145 },
		{ KIWI_OP_SEND_SE_INV, true, 0x4146 },
		{ KIWI_OP_SEND_SE_INV, false, 0x0146 },
		{ KIWI_OP_TERMINATE, true, 0x4147 },
	};
	u8 buf[128];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		memset(buf, 0xee, sizeof(buf));
		make_ulpdu(buf, v[i].op, v[i].last);
		CHECK_EQ(get_unaligned_be16(buf), v[i].ctrl);
	}
}

static void t_golden_tagged_hdr(void)
{
	static const u8 want[14] = {
		0xc1, 0x42, 0xde, 0xad, 0xbe, 0xef,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	};
	u8 buf[14];

	kiwi_ddp_build_tagged(buf, KIWI_OP_READ_RESP, true, 0xdeadbeef,
			      0x0102030405060708ull);
	CHECK_MEM(buf, want, sizeof(want));
}

static void t_golden_untagged_send_inv(void)
{
	/* Send with SE and Invalidate: STag at octets 2-5, QN from octet 6 */
	static const u8 want[18] = {
		0x41, 0x46, 0xca, 0xfe, 0xf0, 0x0d,
		0x00, 0x00, 0x00, 0x00,		/* QN 0 */
		0x00, 0x00, 0x00, 0x07,		/* MSN 7 */
		0x00, 0x01, 0x00, 0x00,		/* MO 65536 */
	};
	struct kiwi_ddp_hdr h;
	u8 buf[18];

	kiwi_ddp_build_untagged(buf, KIWI_OP_SEND_SE_INV, true, 0xcafef00d,
				KIWI_QN_SEND, 7, 0x10000);
	CHECK_MEM(buf, want, sizeof(want));
	CHECK_EQ(kiwi_ddp_parse(buf, sizeof(buf), &h), 0);
	CHECK_EQ(h.inv_stag, 0xcafef00d);
	CHECK_EQ(h.qn, 0);
	CHECK_EQ(h.msn, 7);
	CHECK_EQ(h.mo, 0x10000);
}

static void t_inv_stag_zero_on_transmit(void)
{
	static const int ops[] = {
		KIWI_OP_SEND, KIWI_OP_SEND_SE, KIWI_OP_READ_REQ,
		KIWI_OP_TERMINATE,
	};
	u8 buf[18];
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		memset(buf, 0xee, sizeof(buf));
		kiwi_ddp_build_untagged(buf, ops[i], true, 0xffffffff,
					op_qn[ops[i]], 1, 0);
		CHECK_EQ(get_unaligned_be32(buf + 2), 0);
	}
}

static void t_inv_stag_ignored_on_receive(void)
{
	static const int ops[] = { KIWI_OP_SEND, KIWI_OP_SEND_SE };
	struct kiwi_ddp_hdr h;
	u8 buf[18];
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		kiwi_ddp_build_untagged(buf, ops[i], true, 0, 0, 1, 0);
		put_unaligned_be32(0x12345678, buf + 2);
		CHECK_EQ(kiwi_ddp_parse(buf, sizeof(buf), &h), 0);
		CHECK_EQ(h.inv_stag, 0);
		CHECK_EQ(h.opcode, ops[i]);
	}
}

static void t_golden_read_req(void)
{
	static const u8 want[46] = {
		0x41, 0x41, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x01,		/* QN 1 */
		0x00, 0x00, 0x00, 0x03,		/* MSN 3 */
		0x00, 0x00, 0x00, 0x00,		/* MO 0 */
		0x11, 0x11, 0x11, 0x11,		/* SinkSTag */
		0x22, 0x22, 0x22, 0x22, 0x33, 0x33, 0x33, 0x33,
		0x00, 0x01, 0x00, 0x00,		/* RDMARDSZ 65536 */
		0x44, 0x44, 0x44, 0x44,		/* SrcSTag */
		0x55, 0x55, 0x55, 0x55, 0x66, 0x66, 0x66, 0x66,
	};
	struct kiwi_read_req rr = {
		.sink_stag = 0x11111111, .sink_to = 0x2222222233333333ull,
		.size = 0x10000, .src_stag = 0x44444444,
		.src_to = 0x5555555566666666ull,
	}, back;
	struct kiwi_ddp_hdr h;
	u8 buf[46];

	kiwi_ddp_build_untagged(buf, KIWI_OP_READ_REQ, true, 0xffffffff,
				KIWI_QN_READ_REQ, 3, 0);
	kiwi_read_req_build(buf + 18, &rr);
	CHECK_MEM(buf, want, sizeof(want));
	CHECK_EQ(kiwi_ddp_parse(buf, sizeof(buf), &h), 0);
	CHECK_EQ(h.hdr_len, 46);
	CHECK_EQ(h.qn, 1);
	CHECK_EQ(h.msn, 3);
	kiwi_read_req_parse(buf + h.hdr_len - KIWI_READ_REQ_LEN, &back);
	CHECK_EQ(back.sink_stag, rr.sink_stag);
	CHECK_EQ(back.sink_to, rr.sink_to);
	CHECK_EQ(back.size, rr.size);
	CHECK_EQ(back.src_stag, rr.src_stag);
	CHECK_EQ(back.src_to, rr.src_to);
}

static void t_roundtrip_every_opcode(void)
{
	struct kiwi_ddp_hdr h;
	u8 buf[128];
	int op, i;
	size_t len;

	for (op = 0; op <= KIWI_OP_TERMINATE; op++) {
		for (i = 0; i < 200; i++) {
			bool last = i & 1 || op == KIWI_OP_READ_REQ ||
				    op == KIWI_OP_TERMINATE;
			u32 a = rnd32(), b = rnd32(), c = rnd32();
			u64 to = rnd64();

			if (op_tagged(op)) {
				kiwi_ddp_build_tagged(buf, op, last, a, to);
				len = KIWI_TAGGED_HDR_LEN + (i % 9);
			} else {
				len = make_ulpdu(buf, op, last);
				kiwi_ddp_build_untagged(buf, op, last, a,
							op_qn[op], b, c);
				if (op != KIWI_OP_READ_REQ)
					len += i % 9;
			}
			CHECK_EQ(kiwi_ddp_parse(buf, len, &h), 0);
			CHECK_EQ(h.opcode, op);
			CHECK_EQ(h.tagged, op_tagged(op));
			CHECK_EQ(h.last, last);
			if (op_tagged(op)) {
				CHECK_EQ(h.stag, a);
				CHECK_EQ(h.to, to);
				CHECK_EQ(h.hdr_len, KIWI_TAGGED_HDR_LEN);
				continue;
			}
			CHECK_EQ(h.inv_stag, op == KIWI_OP_SEND_INV ||
				 op == KIWI_OP_SEND_SE_INV ? a : 0);
			CHECK_EQ(h.qn, op_qn[op]);
			CHECK_EQ(h.msn, b);
			CHECK_EQ(h.mo, c);
			if (op == KIWI_OP_READ_REQ || op == KIWI_OP_TERMINATE)
				CHECK_EQ(h.hdr_len, len);
			else
				CHECK_EQ(h.hdr_len, KIWI_UNTAGGED_HDR_LEN);
		}
	}
}

static void t_hdr_len_per_opcode(void)
{
	static const unsigned int want[] = { 14, 46, 14, 18, 18, 18, 18, 22 };
	struct kiwi_ddp_hdr h;
	u8 buf[128];
	int op;
	size_t len;

	for (op = 0; op <= KIWI_OP_TERMINATE; op++) {
		len = make_ulpdu(buf, op, true);
		CHECK_EQ(kiwi_ddp_parse(buf, len, &h), 0);
		CHECK_EQ(h.hdr_len, want[op]);
	}
	/* A Terminate echoing headers: its header is all of the segment. */
	kiwi_ddp_build_untagged(buf, KIWI_OP_TERMINATE, true, 0, 2, 1, 0);
	memset(buf + 18, 0, 60);
	CHECK_EQ(kiwi_ddp_parse(buf, 18 + 52, &h), 0);
	CHECK_EQ(h.hdr_len, 70);
}

static void t_reserved_bits_ignored(void)
{
	struct kiwi_ddp_hdr h;
	u8 buf[128];
	int op;
	size_t len;

	for (op = 0; op <= KIWI_OP_TERMINATE; op++) {
		len = make_ulpdu(buf, op, true);
		buf[0] |= 0x3c;		/* DDP Resrv */
		buf[1] |= 0x30;		/* RDMAP Rsv */
		CHECK_EQ(kiwi_ddp_parse(buf, len, &h), 0);
		CHECK_EQ(h.opcode, op);
		CHECK_EQ(h.last, true);
	}
}

/* What kiwi_ddp_parse must say of a header whose octet 1 is @c1. */
static u32 expect_for_ctrl1(bool tagged, u8 c1)
{
	unsigned int op = c1 & 0xf;

	if (c1 >> 6 != 1)
		return KIWI_TC_RDMAP_INV_VERSION;
	if (op > KIWI_OP_MAX || op_tagged(op) != tagged)
		return KIWI_TC_RDMAP_UNEXP_OPCODE;
	if (!tagged && op != KIWI_OP_SEND && op != KIWI_OP_SEND_SE &&
	    op != KIWI_OP_SEND_INV && op != KIWI_OP_SEND_SE_INV &&
	    op != KIWI_OP_IMM && op != KIWI_OP_IMM_SE)
		return KIWI_TC_DDP_U_INV_QN;	/* built with QN 0 below */
	/* 18 bytes: too short for the Immediate Data */
	if (op == KIWI_OP_IMM || op == KIWI_OP_IMM_SE)
		return KIWI_TC_RDMAP_OP_UNSPEC;
	return 0;
}

static void t_walk_rdmap_ctrl(void)
{
	struct kiwi_ddp_hdr h;
	u8 buf[18];
	unsigned int c1;

	for (c1 = 0; c1 < 256; c1++) {
		kiwi_ddp_build_tagged(buf, 0, true, 1, 2);
		buf[1] = c1;
		CHECK_EQ(kiwi_ddp_parse(buf, 14, &h), expect_for_ctrl1(true, c1));
		CHECK_EQ(h.opcode, c1 & 0xf);
		kiwi_ddp_build_untagged(buf, 3, true, 0, 0, 1, 0);
		buf[1] = c1;
		CHECK_EQ(kiwi_ddp_parse(buf, 18, &h),
			 expect_for_ctrl1(false, c1));
		CHECK_EQ(h.opcode, c1 & 0xf);
	}
}

static void t_err_local_cata(void)
{
	struct kiwi_ddp_hdr h;
	u8 buf[18] = { 0 };

	CHECK_EQ(kiwi_ddp_parse(buf, 0, &h), KIWI_TC_DDP_LOCAL_CATA);
	kiwi_ddp_build_tagged(buf, KIWI_OP_WRITE, true, 1, 2);
	CHECK_EQ(kiwi_ddp_parse(buf, 13, &h), KIWI_TC_DDP_LOCAL_CATA);
	CHECK_EQ(kiwi_ddp_parse(buf, 1, &h), KIWI_TC_DDP_LOCAL_CATA);
	kiwi_ddp_build_untagged(buf, KIWI_OP_SEND, true, 0, 0, 1, 0);
	CHECK_EQ(kiwi_ddp_parse(buf, 17, &h), KIWI_TC_DDP_LOCAL_CATA);
	/* Even with every other field wrong, length is checked first. */
	buf[0] = 0x00;
	buf[1] = 0xff;
	CHECK_EQ(kiwi_ddp_parse(buf, 17, &h), KIWI_TC_DDP_LOCAL_CATA);
}

static void t_err_ddp_version(void)
{
	struct kiwi_ddp_hdr h;
	u8 buf[18];
	u8 dv;

	for (dv = 0; dv < 4; dv++) {
		if (dv == 1)
			continue;
		kiwi_ddp_build_tagged(buf, KIWI_OP_WRITE, true, 1, 2);
		buf[0] = (buf[0] & ~3) | dv;
		CHECK_EQ(kiwi_ddp_parse(buf, 14, &h),
			 KIWI_TC_DDP_T_INV_VERSION);
		kiwi_ddp_build_untagged(buf, KIWI_OP_SEND, true, 0, 0, 1, 0);
		buf[0] = (buf[0] & ~3) | dv;
		CHECK_EQ(kiwi_ddp_parse(buf, 18, &h),
			 KIWI_TC_DDP_U_INV_VERSION);
		/* DDP version comes before RDMAP version. */
		buf[1] = 0x83;
		CHECK_EQ(kiwi_ddp_parse(buf, 18, &h),
			 KIWI_TC_DDP_U_INV_VERSION);
	}
}

static void t_err_rdmap_version(void)
{
	struct kiwi_ddp_hdr h;
	u8 buf[18];
	u8 rv;

	for (rv = 0; rv < 4; rv++) {
		if (rv == 1)
			continue;
		/* RV 00b (RDMA Consortium) included: R-AMB-10, R-HDR-7 */
		kiwi_ddp_build_untagged(buf, KIWI_OP_SEND, true, 0, 0, 1, 0);
		buf[1] = rv << 6 | KIWI_OP_SEND;
		CHECK_EQ(kiwi_ddp_parse(buf, 18, &h),
			 KIWI_TC_RDMAP_INV_VERSION);
		kiwi_ddp_build_tagged(buf, KIWI_OP_WRITE, true, 1, 2);
		buf[1] = rv << 6 | KIWI_OP_WRITE;
		CHECK_EQ(kiwi_ddp_parse(buf, 14, &h),
			 KIWI_TC_RDMAP_INV_VERSION);
		/* RDMAP version comes before opcode. */
		buf[1] = rv << 6 | 0xf;
		CHECK_EQ(kiwi_ddp_parse(buf, 14, &h),
			 KIWI_TC_RDMAP_INV_VERSION);
	}
	CHECK_EQ(KIWI_TC_RDMAP_INV_VERSION, 0x02050000);
}

static void t_err_unexpected_opcode(void)
{
	struct kiwi_ddp_hdr h;
	u8 buf[18];
	int op;

	/* Opcodes RFC 7306 left reserved: 1100b-1111b */
	for (op = 12; op < 16; op++) {
		kiwi_ddp_build_untagged(buf, op, true, 0, 0, 1, 0);
		CHECK_EQ(kiwi_ddp_parse(buf, 18, &h),
			 KIWI_TC_RDMAP_UNEXP_OPCODE);
		kiwi_ddp_build_tagged(buf, op, true, 0, 0);
		CHECK_EQ(kiwi_ddp_parse(buf, 14, &h),
			 KIWI_TC_RDMAP_UNEXP_OPCODE);
	}
	/* T flag against Fig. 4 */
	for (op = 0; op <= KIWI_OP_TERMINATE; op++) {
		if (op_tagged(op))
			kiwi_ddp_build_untagged(buf, op, true, 0, 0, 1, 0);
		else
			kiwi_ddp_build_tagged(buf, op, true, 0, 0);
		CHECK_EQ(kiwi_ddp_parse(buf, 18, &h),
			 KIWI_TC_RDMAP_UNEXP_OPCODE);
	}
	/* RFC 7306's opcodes are all untagged. */
	for (op = KIWI_OP_IMM; op <= KIWI_OP_MAX; op++) {
		kiwi_ddp_build_tagged(buf, op, true, 0, 0);
		CHECK_EQ(kiwi_ddp_parse(buf, 14, &h),
			 KIWI_TC_RDMAP_UNEXP_OPCODE);
	}
	/* Opcode comes before QN. */
	kiwi_ddp_build_untagged(buf, 13, true, 0, 77, 1, 0);
	CHECK_EQ(kiwi_ddp_parse(buf, 18, &h), KIWI_TC_RDMAP_UNEXP_OPCODE);
	CHECK_EQ(KIWI_TC_RDMAP_UNEXP_OPCODE, 0x02060000);
}

static void t_err_invalid_qn(void)
{
	struct kiwi_ddp_hdr h;
	u8 buf[128];
	int op;
	u32 qn;
	size_t len;

	for (op = 0; op <= KIWI_OP_TERMINATE; op++) {
		if (op_tagged(op))
			continue;
		for (qn = 0; qn < 5; qn++) {
			len = make_ulpdu(buf, op, true);
			put_unaligned_be32(qn, buf + 6);
			CHECK_EQ(kiwi_ddp_parse(buf, len, &h),
				 qn == op_qn[op] ? 0 : KIWI_TC_DDP_U_INV_QN);
		}
		len = make_ulpdu(buf, op, true);
		put_unaligned_be32(0xffffffff, buf + 6);
		CHECK_EQ(kiwi_ddp_parse(buf, len, &h), KIWI_TC_DDP_U_INV_QN);
	}
	/* QN comes before the Read Request's length. */
	make_ulpdu(buf, KIWI_OP_READ_REQ, false);
	put_unaligned_be32(3, buf + 6);
	CHECK_EQ(kiwi_ddp_parse(buf, 47, &h), KIWI_TC_DDP_U_INV_QN);
	CHECK_EQ(KIWI_TC_DDP_U_INV_QN, 0x12010000);
}

static void t_read_req_45_46_47(void)
{
	struct kiwi_ddp_hdr h;
	u8 buf[64] = { 0 };
	size_t len;

	make_ulpdu(buf, KIWI_OP_READ_REQ, true);
	CHECK_EQ(kiwi_ddp_parse(buf, 45, &h), KIWI_TC_RDMAP_OP_UNSPEC);
	CHECK_EQ(kiwi_ddp_parse(buf, 46, &h), 0);
	CHECK_EQ(kiwi_ddp_parse(buf, 47, &h), KIWI_TC_RDMAP_OP_UNSPEC);
	/* R-HDR-14's truncated 40-octet Read Request */
	CHECK_EQ(kiwi_ddp_parse(buf, 40, &h), KIWI_TC_RDMAP_OP_UNSPEC);
	for (len = 18; len < 64; len++)
		CHECK_EQ(kiwi_ddp_parse(buf, len, &h),
			 len == 46 ? 0 : KIWI_TC_RDMAP_OP_UNSPEC);
	/* A Read Request is a single, last segment. */
	make_ulpdu(buf, KIWI_OP_READ_REQ, false);
	CHECK_EQ(kiwi_ddp_parse(buf, 46, &h), KIWI_TC_RDMAP_OP_UNSPEC);
}

static void t_terminate_size(void)
{
	struct kiwi_ddp_hdr h;
	u8 buf[80] = { 0 };

	make_ulpdu(buf, KIWI_OP_TERMINATE, true);
	CHECK_EQ(kiwi_ddp_parse(buf, 21, &h), KIWI_TC_RDMAP_OP_UNSPEC);
	CHECK_EQ(kiwi_ddp_parse(buf, 18, &h), KIWI_TC_RDMAP_OP_UNSPEC);
	CHECK_EQ(kiwi_ddp_parse(buf, 22, &h), 0);
	CHECK_EQ(kiwi_ddp_parse(buf, 70, &h), 0);
	make_ulpdu(buf, KIWI_OP_TERMINATE, false);
	CHECK_EQ(kiwi_ddp_parse(buf, 22, &h), KIWI_TC_RDMAP_OP_UNSPEC);
	CHECK_EQ(KIWI_TC_RDMAP_OP_UNSPEC, 0x02ff0000);
}

static void t_untagged_17_18(void)
{
	struct kiwi_ddp_hdr h;
	u8 buf[18];

	kiwi_ddp_build_untagged(buf, KIWI_OP_SEND, true, 0, 0, 1, 0);
	CHECK_EQ(kiwi_ddp_parse(buf, 17, &h), KIWI_TC_DDP_LOCAL_CATA);
	CHECK_EQ(kiwi_ddp_parse(buf, 18, &h), 0);
	CHECK_EQ(h.hdr_len, 18);
	kiwi_ddp_build_tagged(buf, KIWI_OP_WRITE, true, 1, 2);
	CHECK_EQ(kiwi_ddp_parse(buf, 13, &h), KIWI_TC_DDP_LOCAL_CATA);
	CHECK_EQ(kiwi_ddp_parse(buf, 14, &h), 0);
	CHECK_EQ(h.hdr_len, 14);
}

static void t_ddp_truncations(void)
{
	static const unsigned int min_ok[] = { 14, 46, 14, 18, 18, 18, 18, 22 };
	struct kiwi_ddp_hdr h;
	u8 buf[128], *p;
	int op;
	size_t full, len;
	u32 r;

	for (op = 0; op <= KIWI_OP_TERMINATE; op++) {
		full = make_ulpdu(buf, op, true);
		memset(buf + full, 'x', 24);	/* some payload */
		full += 24;
		for (len = 0; len <= full; len++) {
			p = exact(buf, len);
			r = kiwi_ddp_parse(p, len, &h);
			if (len < min_ok[op])
				CHECK(r != 0);
			else if (op != KIWI_OP_READ_REQ)
				CHECK_EQ(r, 0);
			if (!r)
				CHECK(h.hdr_len <= len);
			free(p);
		}
	}
}

/* ---- RFC 7306: Immediate Data and atomics ---- */

static void t_rfc7306_opcodes(void)
{
	/* RDMAP control octets, and the queues the opcodes use */
	static const struct {
		int op;
		u16 ctrl;
		u32 qn;
		unsigned int hdr_len;
	} v[] = {
		{ KIWI_OP_IMM, 0x4148, 0, 18 + 8 },
		{ KIWI_OP_IMM_SE, 0x4149, 0, 18 + 8 },
		{ KIWI_OP_ATOMIC_REQ, 0x414a, 1, 18 + 52 },
		{ KIWI_OP_ATOMIC_RESP, 0x414b, 3, 18 + 12 },
	};
	struct kiwi_ddp_hdr h;
	u8 buf[128], *p;
	size_t i, len, l;
	u32 qn;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		len = make_ulpdu(buf, v[i].op, true);
		CHECK_EQ(len, v[i].hdr_len);
		CHECK_EQ(get_unaligned_be16(buf), v[i].ctrl);
		CHECK_EQ(get_unaligned_be32(buf + 6), v[i].qn);
		CHECK_EQ(kiwi_ddp_parse(buf, len, &h), 0);
		CHECK_EQ(h.opcode, v[i].op);
		CHECK_EQ(h.hdr_len, v[i].hdr_len);
		CHECK_EQ(h.inv_stag, 0);
		/* a single segment of exactly its header, nothing else */
		for (l = KIWI_UNTAGGED_HDR_LEN; l < len + 9; l++) {
			p = exact(buf, l);
			CHECK_EQ(kiwi_ddp_parse(p, l, &h),
				 l == len ? 0 : KIWI_TC_RDMAP_OP_UNSPEC);
			free(p);
		}
		make_ulpdu(buf, v[i].op, false);
		CHECK_EQ(kiwi_ddp_parse(buf, len, &h), KIWI_TC_RDMAP_OP_UNSPEC);
		/* on its own queue only */
		for (qn = 0; qn < 5; qn++) {
			make_ulpdu(buf, v[i].op, true);
			put_unaligned_be32(qn, buf + 6);
			CHECK_EQ(kiwi_ddp_parse(buf, len, &h),
				 qn == v[i].qn ? 0 : KIWI_TC_DDP_U_INV_QN);
		}
	}
}

static void t_atomic_req_golden(void)
{
	static const u8 want[52] = {
		0x00, 0x00, 0x00, 0x02,		/* CmpSwap */
		0x11, 0x22, 0x33, 0x44,		/* Request Identifier */
		0xde, 0xad, 0xbe, 0xef,		/* Remote STag */
		0x00, 0x00, 0x7f, 0x00, 0x12, 0x34, 0x56, 0x78,	/* TO */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,	/* swap */
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,	/* mask */
		0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80,	/* compare */
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,	/* mask */
	};
	struct kiwi_atomic_req r = {
		.code = KIWI_ATOMIC_CMP_SWAP, .req_id = 0x11223344,
		.stag = 0xdeadbeef, .to = 0x7f0012345678ull,
		.add_swap = 0x0102030405060708ull, .add_swap_mask = ~0ull,
		.compare = 0x1020304050607080ull, .compare_mask = ~0ull,
	}, back;
	u8 buf[52];
	unsigned int code;

	kiwi_atomic_req_build(buf, &r);
	CHECK_MEM(buf, want, sizeof(want));
	memset(&back, 0xee, sizeof(back));
	CHECK_EQ(kiwi_atomic_req_parse(buf, &back), 0);
	CHECK_EQ(back.code, r.code);
	CHECK_EQ(back.req_id, r.req_id);
	CHECK_EQ(back.stag, r.stag);
	CHECK_EQ(back.to, r.to);
	CHECK_EQ(back.add_swap, r.add_swap);
	CHECK_EQ(back.add_swap_mask, r.add_swap_mask);
	CHECK_EQ(back.compare, r.compare);
	CHECK_EQ(back.compare_mask, r.compare_mask);
	/* Only FetchAdd (0) and CmpSwap (2); reserved bits are ignored. */
	for (code = 0; code < 16; code++) {
		buf[3] = code;
		CHECK_EQ(kiwi_atomic_req_parse(buf, &back),
			 code == 0 || code == 2 ? 0 : KIWI_TC_RDMAP_OP_UNSPEC);
	}
	buf[0] = 0xff;
	buf[3] = 0xf0;
	CHECK_EQ(kiwi_atomic_req_parse(buf, &back), 0);
	CHECK_EQ(back.code, KIWI_ATOMIC_FETCH_ADD);
	CHECK(kiwi_atomic_aligned(0x1000));
	CHECK(kiwi_atomic_aligned(0xfffffffffffffff8ull));
	for (code = 1; code < 8; code++)
		CHECK(!kiwi_atomic_aligned(0x1000 + code));
}

static void t_atomic_resp_imm_golden(void)
{
	static const u8 want_resp[12] = {
		0xca, 0xfe, 0x00, 0x01,
		0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,
	};
	static const u8 want_imm[8] = { 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 1 };
	struct kiwi_atomic_resp r = { 0xcafe0001, 0x800000000000002aull }, rb;
	struct kiwi_imm imm, ib;
	u8 buf[12];

	kiwi_atomic_resp_build(buf, &r);
	CHECK_MEM(buf, want_resp, sizeof(want_resp));
	kiwi_atomic_resp_parse(buf, &rb);
	CHECK_EQ(rb.req_id, r.req_id);
	CHECK_EQ(rb.orig, r.orig);
	/* The verbs' bytes go out as they are (network order already). */
	memcpy(&imm.data, "\x12\x34\x56\x78", 4);
	imm.kiwi = KIWI_IMM_WITH_SEND;
	kiwi_imm_build(buf, &imm);
	CHECK_MEM(buf, want_imm, sizeof(want_imm));
	kiwi_imm_parse(buf, &ib);
	CHECK_MEM(&ib.data, "\x12\x34\x56\x78", 4);
	CHECK_EQ(ib.kiwi, KIWI_IMM_WITH_SEND);
}

static u64 masked_add_reference(u64 a, u64 b, u64 mask)
{
	u64 sum = 0, start = 0;
	int i;

	/* Add field by field; a field ends at each set bit of @mask. */
	for (i = 0; i < 64; i++) {
		if ((mask >> i) & 1 || i == 63) {
			u64 width = (u64)i - start + 1;
			u64 fm = width == 64 ? ~0ull :
				 ((1ull << width) - 1) << start;

			sum |= ((a & fm) + (b & fm)) & fm;
			start = i + 1;
		}
	}
	return sum;
}

static void t_atomic_apply(void)
{
	struct kiwi_atomic_req r = { .code = KIWI_ATOMIC_FETCH_ADD };
	int i;

	r.add_swap = 5;
	CHECK_EQ(kiwi_atomic_apply(&r, 37), 42);
	r.add_swap = 1;
	CHECK_EQ(kiwi_atomic_apply(&r, ~0ull), 0);	/* wraps */
	/* two 32-bit fields: no carry from the low one into the high one */
	r.add_swap_mask = 1ull << 31;
	CHECK_EQ(kiwi_atomic_apply(&r, 0x00000005ffffffffull),
		 0x0000000500000000ull);
	for (i = 0; i < 2000; i++) {
		u64 a = rnd64(), mask = i % 3 ? rnd64() : 0;

		r.add_swap = rnd64();
		r.add_swap_mask = mask;
		CHECK_EQ(kiwi_atomic_apply(&r, a),
			 mask ? masked_add_reference(a, r.add_swap, mask) :
				a + r.add_swap);
	}

	r = (struct kiwi_atomic_req){
		.code = KIWI_ATOMIC_CMP_SWAP, .compare = 7, .compare_mask = ~0ull,
		.add_swap = 99, .add_swap_mask = ~0ull,
	};
	CHECK_EQ(kiwi_atomic_apply(&r, 7), 99);		/* equal: swapped */
	CHECK_EQ(kiwi_atomic_apply(&r, 8), 8);		/* not: unchanged */
	/* masks: compare the low byte only, swap the high half only */
	r.compare = 0xaa;
	r.compare_mask = 0xff;
	r.add_swap = 0x1234567800000000ull;
	r.add_swap_mask = 0xffffffff00000000ull;
	CHECK_EQ(kiwi_atomic_apply(&r, 0x99999999000000aaull),
		 0x12345678000000aaull);
	CHECK_EQ(kiwi_atomic_apply(&r, 0x99999999000000abull),
		 0x99999999000000abull);
}

/* ---- Terminate ---- */

static void t_term_codes(void)
{
	/* Control words with M, D, R clear: digest section 2 */
	CHECK_EQ(KIWI_TC_RDMAP_LOCAL_CATA, 0x00000000);
	CHECK_EQ(KIWI_TC_RDMAP_INV_STAG, 0x01000000);
	CHECK_EQ(KIWI_TC_RDMAP_BASE_BOUNDS, 0x01010000);
	CHECK_EQ(KIWI_TC_RDMAP_ACCESS, 0x01020000);
	CHECK_EQ(KIWI_TC_RDMAP_STAG_NOT_ASSOC, 0x01030000);
	CHECK_EQ(KIWI_TC_RDMAP_TO_WRAP, 0x01040000);
	CHECK_EQ(KIWI_TC_RDMAP_PROT_CANT_INV, 0x01090000);
	CHECK_EQ(KIWI_TC_RDMAP_PROT_UNSPEC, 0x01ff0000);
	CHECK_EQ(KIWI_TC_RDMAP_INV_VERSION, 0x02050000);
	CHECK_EQ(KIWI_TC_RDMAP_UNEXP_OPCODE, 0x02060000);
	CHECK_EQ(KIWI_TC_RDMAP_CATA_STREAM, 0x02070000);
	CHECK_EQ(KIWI_TC_RDMAP_CATA_GLOBAL, 0x02080000);
	CHECK_EQ(KIWI_TC_RDMAP_OP_CANT_INV, 0x02090000);
	CHECK_EQ(KIWI_TC_RDMAP_OP_UNSPEC, 0x02ff0000);
	CHECK_EQ(KIWI_TC_DDP_LOCAL_CATA, 0x10000000);
	CHECK_EQ(KIWI_TC_DDP_T_INV_STAG, 0x11000000);
	CHECK_EQ(KIWI_TC_DDP_T_BASE_BOUNDS, 0x11010000);
	CHECK_EQ(KIWI_TC_DDP_T_STAG_NOT_ASSOC, 0x11020000);
	CHECK_EQ(KIWI_TC_DDP_T_TO_WRAP, 0x11030000);
	CHECK_EQ(KIWI_TC_DDP_T_INV_VERSION, 0x11040000);
	CHECK_EQ(KIWI_TC_DDP_U_INV_QN, 0x12010000);
	CHECK_EQ(KIWI_TC_DDP_U_NO_BUF, 0x12020000);
	CHECK_EQ(KIWI_TC_DDP_U_INV_MSN, 0x12030000);
	CHECK_EQ(KIWI_TC_DDP_U_INV_MO, 0x12040000);
	CHECK_EQ(KIWI_TC_DDP_U_TOO_LONG, 0x12050000);
	CHECK_EQ(KIWI_TC_DDP_U_INV_VERSION, 0x12060000);
	CHECK_EQ(KIWI_TC_MPA_CLOSED, 0x20010000);
	CHECK_EQ(KIWI_TC_MPA_CRC, 0x20020000);
	CHECK_EQ(KIWI_TC_MPA_MARKER, 0x20030000);
	CHECK_EQ(KIWI_TC_MPA_REQ_RSP, 0x20040000);
	CHECK_EQ(KIWI_TC_MPA_LOCAL_CATA, 0x20050000);
	CHECK_EQ(KIWI_TC_MPA_INSUF_IRD, 0x20060000);
	CHECK_EQ(KIWI_TC_MPA_NOMATCH_RTR, 0x20070000);
	CHECK_EQ(KIWI_TC_LAYER(KIWI_TC_MPA_NOMATCH_RTR), 2);
	CHECK_EQ(KIWI_TC_ETYPE(KIWI_TC_DDP_U_INV_MO), 2);
	CHECK_EQ(KIWI_TC_ECODE(KIWI_TC_RDMAP_OP_UNSPEC), 0xff);
}

static void expect_flags(u32 code, int opcode, bool m, bool d, bool r)
{
	struct kiwi_term t;

	memset(&t, 0xff, sizeof(t));
	kiwi_term_flags(code, opcode, &t);
	if (t.m != m || t.d != d || t.r != r) {
		point_failures++;
		printf("# term_flags(0x%08x, %d) = M%d D%d R%d, want M%d D%d R%d\n",
		       code, opcode, t.m, t.d, t.r, m, d, r);
	}
}

static void t_term_flags_local_cata(void)
{
	int op;

	for (op = -1; op <= KIWI_OP_TERMINATE; op++)
		expect_flags(KIWI_TC_RDMAP_LOCAL_CATA, op, false, false, false);
	expect_flags(KIWI_TC(0, 0, 0x42), KIWI_OP_READ_REQ, false, false,
		     false);
}

static void t_term_flags_remote_protection(void)
{
	static const u32 codes[] = {
		KIWI_TC_RDMAP_INV_STAG, KIWI_TC_RDMAP_BASE_BOUNDS,
		KIWI_TC_RDMAP_ACCESS, KIWI_TC_RDMAP_STAG_NOT_ASSOC,
		KIWI_TC_RDMAP_TO_WRAP, KIWI_TC_RDMAP_PROT_CANT_INV,
		KIWI_TC_RDMAP_PROT_UNSPEC,
	};
	size_t i;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		expect_flags(codes[i], KIWI_OP_READ_REQ, true, true, true);
		/* A Send with Invalidate has no RDMAP header to echo. */
		expect_flags(codes[i], KIWI_OP_SEND_INV, true, true, false);
		expect_flags(codes[i], KIWI_OP_SEND_SE_INV, true, true, false);
		/* "if possible": not without the segment */
		expect_flags(codes[i], -1, false, false, false);
	}
}

static void t_term_flags_remote_operation(void)
{
	static const u32 codes[] = {
		KIWI_TC_RDMAP_INV_VERSION, KIWI_TC_RDMAP_UNEXP_OPCODE,
		KIWI_TC_RDMAP_CATA_STREAM, KIWI_TC_RDMAP_CATA_GLOBAL,
		KIWI_TC_RDMAP_OP_CANT_INV, KIWI_TC_RDMAP_OP_UNSPEC,
	};
	size_t i;
	int op;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		for (op = 0; op < 16; op++)
			expect_flags(codes[i], op, true, true, false);
		expect_flags(codes[i], -1, false, false, false);
	}
}

static void t_term_flags_ddp(void)
{
	static const u32 codes[] = {
		KIWI_TC_DDP_T_INV_STAG, KIWI_TC_DDP_T_BASE_BOUNDS,
		KIWI_TC_DDP_T_STAG_NOT_ASSOC, KIWI_TC_DDP_T_TO_WRAP,
		KIWI_TC_DDP_T_INV_VERSION, KIWI_TC_DDP_U_INV_QN,
		KIWI_TC_DDP_U_NO_BUF, KIWI_TC_DDP_U_INV_MSN,
		KIWI_TC_DDP_U_INV_MO, KIWI_TC_DDP_U_TOO_LONG,
		KIWI_TC_DDP_U_INV_VERSION,
	};
	size_t i;
	int op;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		for (op = 0; op <= KIWI_OP_TERMINATE; op++)
			expect_flags(codes[i], op, true, true, false);
		expect_flags(codes[i], -1, false, false, false);
	}
	/* The DDP header is never present for a Local Catastrophic error. */
	expect_flags(KIWI_TC_DDP_LOCAL_CATA, KIWI_OP_SEND, false, false, false);
}

static void t_term_flags_llp(void)
{
	static const u32 codes[] = {
		KIWI_TC_MPA_CLOSED, KIWI_TC_MPA_CRC, KIWI_TC_MPA_MARKER,
		KIWI_TC_MPA_REQ_RSP, KIWI_TC_MPA_LOCAL_CATA,
		KIWI_TC_MPA_INSUF_IRD, KIWI_TC_MPA_NOMATCH_RTR,
	};
	size_t i;
	int op;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		for (op = -1; op <= KIWI_OP_TERMINATE; op++)
			expect_flags(codes[i], op, false, false, false);
}

/* Every defined code: protection errors on the peer's access, or not. */
static void t_tc_access(void)
{
	static const u32 access[] = {
		KIWI_TC_RDMAP_INV_STAG, KIWI_TC_RDMAP_BASE_BOUNDS,
		KIWI_TC_RDMAP_ACCESS, KIWI_TC_RDMAP_STAG_NOT_ASSOC,
		KIWI_TC_RDMAP_TO_WRAP, KIWI_TC_RDMAP_PROT_CANT_INV,
		KIWI_TC_RDMAP_PROT_UNSPEC, KIWI_TC_DDP_T_INV_STAG,
		KIWI_TC_DDP_T_BASE_BOUNDS, KIWI_TC_DDP_T_STAG_NOT_ASSOC,
		KIWI_TC_DDP_T_TO_WRAP,
	};
	static const u32 fatal[] = {
		KIWI_TC_RDMAP_LOCAL_CATA, KIWI_TC_RDMAP_INV_VERSION,
		KIWI_TC_RDMAP_UNEXP_OPCODE, KIWI_TC_RDMAP_CATA_STREAM,
		KIWI_TC_RDMAP_CATA_GLOBAL, KIWI_TC_RDMAP_OP_CANT_INV,
		KIWI_TC_RDMAP_OP_UNSPEC, KIWI_TC_DDP_LOCAL_CATA,
		KIWI_TC_DDP_T_INV_VERSION, KIWI_TC_DDP_U_INV_QN,
		KIWI_TC_DDP_U_NO_BUF, KIWI_TC_DDP_U_INV_MSN,
		KIWI_TC_DDP_U_INV_MO, KIWI_TC_DDP_U_TOO_LONG,
		KIWI_TC_DDP_U_INV_VERSION, KIWI_TC_MPA_CLOSED, KIWI_TC_MPA_CRC,
		KIWI_TC_MPA_MARKER, KIWI_TC_MPA_REQ_RSP, KIWI_TC_MPA_LOCAL_CATA,
		KIWI_TC_MPA_INSUF_IRD, KIWI_TC_MPA_NOMATCH_RTR,
	};
	size_t i;

	for (i = 0; i < sizeof(access) / sizeof(access[0]); i++)
		CHECK(kiwi_tc_access(access[i]));
	for (i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		CHECK(!kiwi_tc_access(fatal[i]));
}

static void t_term_golden_ctrl(void)
{
	u8 rreq[46], out[64];
	struct kiwi_term t = { .code = KIWI_TC_RDMAP_INV_STAG };
	size_t n;

	make_ulpdu(rreq, KIWI_OP_READ_REQ, true);
	kiwi_term_flags(t.code, KIWI_OP_READ_REQ, &t);
	t.seg_len = 0;
	t.ddp_hdr = rreq;
	t.ddp_hdr_len = KIWI_UNTAGGED_HDR_LEN;
	t.rdmap_hdr = rreq + KIWI_UNTAGGED_HDR_LEN;
	n = kiwi_term_build(out, &t);
	CHECK_EQ(get_unaligned_be32(out), 0x0100E000);
	/* R-RRQ-10: 46 octets of header echo after length and control */
	CHECK_EQ(n, 4 + 2 + 46);
	CHECK_MEM(out + 6, rreq, 46);
}

static void term_roundtrip(const u8 *ddp_hdr, unsigned int ddp_len,
			   bool m, bool d, bool r, size_t want_len)
{
	struct kiwi_term t = { 0 }, back;
	u8 rdmap[28], out[64], *p;
	size_t n, i;

	for (i = 0; i < sizeof(rdmap); i++)
		rdmap[i] = 0xa0 + i;
	t.code = KIWI_TC_DDP_U_INV_MSN;
	t.m = m;
	t.d = d;
	t.r = r;
	t.seg_len = 0x1234;
	t.ddp_hdr = ddp_hdr;
	t.ddp_hdr_len = ddp_len;
	t.rdmap_hdr = rdmap;
	n = kiwi_term_build(out, &t);
	CHECK_EQ(n, want_len);
	p = exact(out, n);
	CHECK_EQ(kiwi_term_parse(p, n, &back), 0);
	CHECK_EQ(back.code, t.code);
	CHECK_EQ(back.m, m);
	CHECK_EQ(back.d, d);
	CHECK_EQ(back.r, r);
	if (d) {
		CHECK_EQ(back.seg_len, 0x1234);
		CHECK_EQ(back.ddp_hdr_len, ddp_len);
		CHECK(back.ddp_hdr == p + 6);
		if (back.ddp_hdr)
			CHECK_MEM(back.ddp_hdr, ddp_hdr, ddp_len);
	} else {
		CHECK(!back.ddp_hdr);
		CHECK_EQ(back.ddp_hdr_len, 0);
	}
	if (r) {
		CHECK(back.rdmap_hdr != NULL);
		if (back.rdmap_hdr)
			CHECK_MEM(back.rdmap_hdr, rdmap, 28);
	} else {
		CHECK(!back.rdmap_hdr);
	}
	/* Every truncation is refused, and read within bounds. */
	for (i = 0; i < n; i++) {
		u8 *q = exact(out, i);

		CHECK_EQ(kiwi_term_parse(q, i, &back),
			 KIWI_TC_RDMAP_OP_UNSPEC);
		free(q);
	}
	free(p);
}

static void t_term_roundtrip(void)
{
	u8 tagged[14], untagged[18];

	kiwi_ddp_build_tagged(tagged, KIWI_OP_WRITE, false, 7, 8);
	kiwi_ddp_build_untagged(untagged, KIWI_OP_SEND, true, 0, 0, 9, 10);
	term_roundtrip(NULL, 0, false, false, false, 4);
	term_roundtrip(tagged, 14, true, true, false, 4 + 2 + 14);
	term_roundtrip(untagged, 18, true, true, false, 4 + 2 + 18);
	term_roundtrip(untagged, 18, false, true, false, 4 + 2 + 18);
	term_roundtrip(untagged, 18, true, true, true, 4 + 2 + 18 + 28);
	term_roundtrip(tagged, 14, true, true, true, 4 + 2 + 14 + 28);
	term_roundtrip(NULL, 0, false, false, true, 4 + 28);
}

static void t_term_fpdu_76_and_28(void)
{
	struct kiwi_term t = { .code = KIWI_TC_RDMAP_INV_STAG }, back;
	struct kiwi_ddp_hdr h;
	u8 rreq[46], ulpdu[128], fpdu[160];
	unsigned int ulen;
	size_t n;

	/* Largest: untagged header and Read Request echoed */
	make_ulpdu(rreq, KIWI_OP_READ_REQ, true);
	kiwi_term_flags(t.code, KIWI_OP_READ_REQ, &t);
	t.ddp_hdr = rreq;
	t.ddp_hdr_len = 18;
	t.rdmap_hdr = rreq + 18;
	kiwi_ddp_build_untagged(ulpdu, KIWI_OP_TERMINATE, true, 0,
				KIWI_QN_TERMINATE, 1, 0);
	ulen = 18 + kiwi_term_build(ulpdu + 18, &t);
	CHECK_EQ(ulen, 70);
	CHECK_EQ(kiwi_mpa_pad(ulen), 0);
	n = make_fpdu(fpdu, ulpdu, ulen);
	CHECK_EQ(n, 76);
	CHECK_EQ(kiwi_fpdu_len(ulen), 76);
	CHECK_EQ(kiwi_mpa_crc_get(fpdu + 72), ref_crc32c(fpdu, 72));
	CHECK_EQ(kiwi_ddp_parse(fpdu + 2, get_unaligned_be16(fpdu), &h), 0);
	CHECK_EQ(h.opcode, KIWI_OP_TERMINATE);
	CHECK_EQ(kiwi_term_parse(fpdu + 20, ulen - 18, &back), 0);
	CHECK(back.m && back.d && back.r);
	CHECK_EQ(back.opcode, KIWI_OP_READ_REQ);
	CHECK_EQ(back.ddp_hdr_len, 18);
	if (back.ddp_hdr && back.rdmap_hdr) {
		CHECK_MEM(back.ddp_hdr, rreq, 18);
		CHECK_MEM(back.rdmap_hdr, rreq + 18, 28);
	}

	/* Smallest: control word only */
	t = (struct kiwi_term){ .code = KIWI_TC_MPA_CRC };
	kiwi_term_flags(t.code, KIWI_OP_SEND, &t);
	ulen = 18 + kiwi_term_build(ulpdu + 18, &t);
	CHECK_EQ(ulen, 22);
	CHECK_EQ(make_fpdu(fpdu, ulpdu, ulen), 28);
	CHECK_EQ(kiwi_ddp_parse(fpdu + 2, ulen, &h), 0);
	CHECK_EQ(kiwi_term_parse(fpdu + 20, ulen - 18, &back), 0);
	CHECK_EQ(back.code, KIWI_TC_MPA_CRC);
	CHECK(!back.m && !back.d && !back.r);
	CHECK_EQ(back.opcode, -1);
}

static void t_term_reserved_ignored(void)
{
	struct kiwi_term t;
	u8 buf[4];

	put_unaligned_be32(KIWI_TC_RDMAP_CATA_STREAM | 0x1fff, buf);
	CHECK_EQ(kiwi_term_parse(buf, 4, &t), 0);
	CHECK_EQ(t.code, KIWI_TC_RDMAP_CATA_STREAM);
	CHECK(!t.m && !t.d && !t.r);
	/* The code is masked on transmit: reserved bits go out as zero. */
	t.code = KIWI_TC_RDMAP_CATA_STREAM | 0xffff;
	t.m = t.d = t.r = false;
	CHECK_EQ(kiwi_term_build(buf, &t), 4);
	CHECK_EQ(get_unaligned_be32(buf), KIWI_TC_RDMAP_CATA_STREAM);
}

static void t_term_without_headers_zeroed(void)
{
	struct kiwi_term t = { .code = KIWI_TC_DDP_U_NO_BUF, .m = true,
			       .d = true, .r = true, .seg_len = 5 };
	u8 out[64], zero[46] = { 0 };

	memset(out, 0xee, sizeof(out));
	CHECK_EQ(kiwi_term_build(out, &t), 4 + 2 + 18 + 28);
	CHECK_MEM(out + 6, zero, 46);
}

/* ---- MPA Request/Reply ---- */

static const char key_req[] = "MPA ID Req Frame";
static const char key_rep[] = "MPA ID Rep Frame";

static void t_mpa_golden_req_v1(void)
{
	u8 want[20 + 3], out[600];
	struct kiwi_mpa_frame f = {
		.crc = true, .rev = 1,
		.ulp_pdata = (const u8 *)"abc", .ulp_pdata_len = 3,
	}, back;

	memcpy(want, key_req, 16);
	want[16] = 0x40;	/* C */
	want[17] = 1;
	want[18] = 0;
	want[19] = 3;
	memcpy(want + 20, "abc", 3);
	CHECK_EQ(kiwi_mpa_build(out, &f), sizeof(want));
	CHECK_MEM(out, want, sizeof(want));
	CHECK_EQ(kiwi_mpa_parse(want, sizeof(want), false, &back), 0);
	CHECK(!back.reply && back.crc && !back.markers && !back.reject);
	CHECK(!back.enhanced);
	CHECK_EQ(back.rev, 1);
	CHECK_EQ(back.pd_len, 3);
	CHECK_EQ(back.ulp_pdata_len, 3);
	CHECK(back.ulp_pdata == want + 20);
}

/* siw's GSO_EXP bit, 0x0800 in its 16-bit word: 0x08 in the flags octet. */
static void t_mpa_golden_large_fpdus(void)
{
	u8 want[20 + 4], out[600];
	struct kiwi_mpa_frame f = {
		.enhanced = true, .large_fpdus = true, .rev = 2,
		.ird = 1, .ord = 1,
	}, back;
	int rev, reply;

	memcpy(want, key_req, 16);
	want[16] = 0x18;	/* enhanced, large FPDUs */
	want[17] = 2;
	put_unaligned_be16(4, want + 18);
	put_unaligned_be16(1, want + 20);
	put_unaligned_be16(1, want + 22);
	CHECK_EQ(kiwi_mpa_build(out, &f), sizeof(want));
	CHECK_MEM(out, want, sizeof(want));
	CHECK_EQ(kiwi_mpa_parse(want, sizeof(want), false, &back), 0);
	CHECK(back.large_fpdus && back.enhanced && !back.crc);
	/* Both revisions, both kinds; the bit alone, and its absence. */
	for (rev = 1; rev <= 2; rev++) {
		for (reply = 0; reply <= 1; reply++) {
			f = (struct kiwi_mpa_frame){
				.reply = reply, .rev = rev, .large_fpdus = true,
			};
			CHECK_EQ(kiwi_mpa_build(out, &f), 20);
			CHECK_EQ(out[16], 0x08);
			CHECK_EQ(kiwi_mpa_parse(out, 20, reply, &back), 0);
			CHECK(back.large_fpdus);
			f.large_fpdus = false;
			CHECK_EQ(kiwi_mpa_build(out, &f), 20);
			CHECK_EQ(out[16], 0);
			CHECK_EQ(kiwi_mpa_parse(out, 20, reply, &back), 0);
			CHECK(!back.large_fpdus);
		}
	}
}

static void t_mpa_golden_rep_v2(void)
{
	static const struct {
		bool p2p;
		u8 rtr;
		u16 ird_word, ord_word;
	} v[] = {
		{ false, 0, 0x0010, 0x0008 },
		{ true, KIWI_RTR_WRITE, 0x8010, 0x8008 },
		{ true, KIWI_RTR_READ, 0x8010, 0x4008 },
		{ true, KIWI_RTR_SEND, 0xc010, 0x0008 },
		{ true, KIWI_RTR_SEND | KIWI_RTR_WRITE | KIWI_RTR_READ,
		  0xc010, 0xc008 },
	};
	u8 want[20 + 4 + 2], out[600];
	struct kiwi_mpa_frame f, back;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		f = (struct kiwi_mpa_frame){
			.reply = true, .crc = true, .enhanced = true,
			.rev = 2, .p2p = v[i].p2p, .ird = 16, .ord = 8,
			.rtr = v[i].rtr, .ulp_pdata = (const u8 *)"hi",
			.ulp_pdata_len = 2,
		};
		memcpy(want, key_rep, 16);
		want[16] = 0x50;	/* C, enhanced */
		want[17] = 2;
		put_unaligned_be16(6, want + 18);
		put_unaligned_be16(v[i].ird_word, want + 20);
		put_unaligned_be16(v[i].ord_word, want + 22);
		memcpy(want + 24, "hi", 2);
		CHECK_EQ(kiwi_mpa_build(out, &f), sizeof(want));
		CHECK_MEM(out, want, sizeof(want));
		CHECK_EQ(kiwi_mpa_parse(want, sizeof(want), true, &back), 0);
		CHECK(back.reply && back.enhanced && back.crc);
		CHECK_EQ(back.p2p, v[i].p2p);
		CHECK_EQ(back.rtr, v[i].rtr);
		CHECK_EQ(back.ird, 16);
		CHECK_EQ(back.ord, 8);
		CHECK_EQ(back.pd_len, 6);
		CHECK_EQ(back.ulp_pdata_len, 2);
		CHECK(back.ulp_pdata == want + 24);
	}
}

static void t_mpa_roundtrip(void)
{
	static const u16 irds[] = { 0, 1, 128, 0x3fff };
	static const u16 lens[] = { 0, 1, 4, 100, 508, 512 };
	u8 pdata[512], out[600], *p;
	struct kiwi_mpa_frame f, back;
	size_t i, n;
	int reply, rev, enh, flags, rtr, li, ii;

	for (i = 0; i < sizeof(pdata); i++)
		pdata[i] = (u8)rnd32();
	for (reply = 0; reply < 2; reply++)
	for (rev = 1; rev <= 2; rev++)
	for (enh = 0; enh < 2; enh++)
	for (flags = 0; flags < 16; flags++)
	for (rtr = 0; rtr < 8; rtr++)
	for (li = 0; li < 6; li++)
	for (ii = 0; ii < 4; ii++) {
		f = (struct kiwi_mpa_frame){
			.reply = reply, .rev = rev, .enhanced = enh,
			.markers = flags & 1, .crc = flags & 2,
			.reject = reply && (flags & 4), .p2p = rtr & 1,
			.large_fpdus = flags & 8,
			.ird = irds[ii], .ord = irds[3 - ii], .rtr = rtr,
			.ulp_pdata = pdata, .ulp_pdata_len = lens[li],
		};
		n = kiwi_mpa_build(out, &f);
		if (rev == 2 && enh && lens[li] > 508) {
			CHECK_EQ(n, 0);
			continue;
		}
		CHECK_EQ(n, 20 + lens[li] + (rev == 2 && enh ? 4 : 0));
		p = exact(out, n);
		CHECK_EQ(kiwi_mpa_parse(p, n, reply, &back), 0);
		CHECK_EQ(back.reply, reply);
		CHECK_EQ(back.rev, rev);
		CHECK_EQ(back.markers, f.markers);
		CHECK_EQ(back.crc, f.crc);
		CHECK_EQ(back.reject, f.reject);
		CHECK_EQ(back.large_fpdus, f.large_fpdus);
		CHECK_EQ(back.enhanced, rev == 2 && enh);
		CHECK_EQ(back.pd_len, n - 20);
		CHECK_EQ(back.ulp_pdata_len, lens[li]);
		if (back.enhanced) {
			CHECK_EQ(back.p2p, f.p2p);
			CHECK_EQ(back.ird, f.ird);
			CHECK_EQ(back.ord, f.ord);
			CHECK_EQ(back.rtr, f.rtr);
		} else {
			CHECK(!back.p2p && !back.ird && !back.ord &&
			      !back.rtr);
		}
		if (lens[li]) {
			CHECK(back.ulp_pdata == p + n - lens[li]);
			CHECK_MEM(back.ulp_pdata, pdata, lens[li]);
		} else {
			CHECK(!back.ulp_pdata);
		}
		/* The other kind of frame is refused by its key. */
		CHECK_EQ(kiwi_mpa_parse(p, n, !reply, &back),
			 -(int)KIWI_TC_MPA_REQ_RSP);
		free(p);
	}
}

/* A plain Request or Reply with @pd_len bytes of zero private data. */
static size_t mpa_frame(u8 *buf, bool reply, u8 flags, u8 rev,
			u16 pd_len)
{
	memcpy(buf, reply ? key_rep : key_req, 16);
	buf[16] = flags;
	buf[17] = rev;
	put_unaligned_be16(pd_len, buf + 18);
	memset(buf + 20, 0, pd_len <= 600 ? pd_len : 0);
	return 20 + (size_t)pd_len;
}

static void t_mpa_pd_len_512_513(void)
{
	struct kiwi_mpa_frame f;
	u8 buf[20 + 600];
	size_t n;

	n = mpa_frame(buf, false, 0x40, 1, 512);
	CHECK_EQ(kiwi_mpa_parse(buf, n, false, &f), 0);
	CHECK_EQ(f.ulp_pdata_len, 512);
	n = mpa_frame(buf, false, 0x40, 1, 513);
	CHECK_EQ(kiwi_mpa_parse(buf, n, false, &f), -(int)KIWI_TC_MPA_REQ_RSP);
	/* Refused from the header alone, before the data arrives */
	CHECK_EQ(kiwi_mpa_parse(buf, 20, false, &f), -(int)KIWI_TC_MPA_REQ_RSP);
	mpa_frame(buf, true, 0x00, 2, 0xffff);
	CHECK_EQ(kiwi_mpa_parse(buf, 20, true, &f), -(int)KIWI_TC_MPA_REQ_RSP);
	/* Enhanced: the IRD/ORD words count against the 512 */
	n = mpa_frame(buf, true, 0x50, 2, 512);
	CHECK_EQ(kiwi_mpa_parse(buf, n, true, &f), 0);
	CHECK_EQ(f.ulp_pdata_len, 508);
}

static void t_mpa_err_key(void)
{
	struct kiwi_mpa_frame f;
	u8 buf[64];
	size_t n, i;

	n = mpa_frame(buf, false, 0, 1, 0);
	CHECK_EQ(kiwi_mpa_parse(buf, n, true, &f), -(int)KIWI_TC_MPA_REQ_RSP);
	n = mpa_frame(buf, true, 0, 1, 0);
	CHECK_EQ(kiwi_mpa_parse(buf, n, false, &f), -(int)KIWI_TC_MPA_REQ_RSP);
	for (i = 0; i < 16; i++) {
		n = mpa_frame(buf, false, 0, 1, 0);
		buf[i] ^= 0x20;
		CHECK_EQ(kiwi_mpa_parse(buf, n, false, &f),
			 -(int)KIWI_TC_MPA_REQ_RSP);
	}
	/* An FPDU where a Reply should be */
	memset(buf, 0, sizeof(buf));
	make_ulpdu(buf + 2, KIWI_OP_SEND, true);
	CHECK_EQ(kiwi_mpa_parse(buf, 24, true, &f), -(int)KIWI_TC_MPA_REQ_RSP);
}

static void t_mpa_err_rev(void)
{
	struct kiwi_mpa_frame f;
	u8 buf[64];
	size_t n;
	int rev;

	for (rev = 0; rev < 256; rev++) {
		n = mpa_frame(buf, false, 0x40, rev, 0);
		CHECK_EQ(kiwi_mpa_parse(buf, n, false, &f),
			 rev == 1 || rev == 2 ? 0 : -(int)KIWI_TC_MPA_REQ_RSP);
	}
}

static void t_mpa_err_reject_on_request(void)
{
	struct kiwi_mpa_frame f = { .rev = 1, .reject = true };
	u8 buf[600];
	size_t n;

	n = mpa_frame(buf, false, 0x20, 1, 0);
	CHECK_EQ(kiwi_mpa_parse(buf, n, false, &f), -(int)KIWI_TC_MPA_REQ_RSP);
	n = mpa_frame(buf, true, 0x20, 1, 0);
	CHECK_EQ(kiwi_mpa_parse(buf, n, true, &f), 0);
	CHECK(f.reject);
	/* Nor does kiwi build one. */
	f = (struct kiwi_mpa_frame){ .rev = 1, .reject = true };
	CHECK_EQ(kiwi_mpa_build(buf, &f), 0);
}

static void t_mpa_err_enhanced_short(void)
{
	struct kiwi_mpa_frame f;
	u8 buf[64];
	size_t n;
	u16 pd;

	for (pd = 0; pd < 8; pd++) {
		n = mpa_frame(buf, false, 0x50, 2, pd);
		CHECK_EQ(kiwi_mpa_parse(buf, n, false, &f),
			 pd < 4 ? -(int)KIWI_TC_MPA_REQ_RSP : 0);
		if (pd < 4)	/* known from the header alone */
			CHECK_EQ(kiwi_mpa_parse(buf, 20, false, &f),
				 -(int)KIWI_TC_MPA_REQ_RSP);
	}
}

static void t_mpa_reserved_bits(void)
{
	struct kiwi_mpa_frame f;
	u8 buf[64];
	size_t n;

	/* Revision 1: the enhanced bit is reserved; data is all ULP's. */
	n = mpa_frame(buf, false, 0x5f, 1, 2);
	CHECK_EQ(kiwi_mpa_parse(buf, n, false, &f), 0);
	CHECK(!f.enhanced && f.markers == false && f.crc);
	CHECK_EQ(f.ulp_pdata_len, 2);
	/* Bits 0x07 are reserved and ignored; 0x08 is the large-FPDU offer. */
	n = mpa_frame(buf, true, 0x07, 2, 0);
	CHECK_EQ(kiwi_mpa_parse(buf, n, true, &f), 0);
	CHECK(!f.enhanced && !f.markers && !f.crc && !f.reject);
	CHECK(!f.large_fpdus);
	/* IRD/ORD values are 14 bits; the control bits are not counted. */
	n = mpa_frame(buf, false, 0x10, 2, 4);
	put_unaligned_be16(0xffff, buf + 20);
	put_unaligned_be16(0xffff, buf + 22);
	CHECK_EQ(kiwi_mpa_parse(buf, n, false, &f), 0);
	CHECK_EQ(f.ird, 0x3fff);
	CHECK_EQ(f.ord, 0x3fff);
	CHECK(f.p2p);
	CHECK_EQ(f.rtr, KIWI_RTR_SEND | KIWI_RTR_WRITE | KIWI_RTR_READ);
	CHECK_EQ(f.ulp_pdata_len, 0);
	CHECK(!f.ulp_pdata);
}

static void t_mpa_need_more(void)
{
	struct kiwi_mpa_frame f;
	u8 buf[20 + 100 + 8], *p;
	size_t n, len;
	int r;

	n = mpa_frame(buf, false, 0x50, 2, 100);
	memset(buf + n, 0xee, 8);	/* the first FPDU, already here */
	for (len = 0; len <= n + 8; len++) {
		p = exact(buf, len);
		r = kiwi_mpa_parse(p, len, false, &f);
		if (len < 20)
			CHECK_EQ(r, 20);
		else if (len < n)
			CHECK_EQ(r, n);
		else
			CHECK_EQ(r, 0);
		if (!r)
			CHECK_EQ(f.ulp_pdata_len, 96);
		free(p);
	}
}

static void t_mpa_truncations(void)
{
	struct kiwi_mpa_frame f = {
		.reply = true, .enhanced = true, .rev = 2, .ird = 3,
		.ord = 4, .ulp_pdata = (const u8 *)"0123456789",
		.ulp_pdata_len = 10,
	};
	u8 buf[600], *p;
	size_t n, len;
	int r;

	n = kiwi_mpa_build(buf, &f);
	CHECK_EQ(n, 34);
	for (len = 0; len < n; len++) {
		p = exact(buf, len);
		r = kiwi_mpa_parse(p, len, true, &f);
		CHECK(r > 0 && (size_t)r > len && (size_t)r <= n);
		CHECK(r >= KIWI_MPA_HDR_LEN);
		free(p);
	}
}

static void t_mpa_build_refusals(void)
{
	u8 pdata[600] = { 0 }, buf[600];
	struct kiwi_mpa_frame ok = {
		.rev = 2, .enhanced = true, .ird = 0x3fff, .ord = 0x3fff,
		.rtr = 7, .ulp_pdata = pdata, .ulp_pdata_len = 508,
	}, f;

	CHECK_EQ(kiwi_mpa_build(buf, &ok), 532);
	f = ok;
	f.rev = 0;
	CHECK_EQ(kiwi_mpa_build(buf, &f), 0);
	f.rev = 3;
	CHECK_EQ(kiwi_mpa_build(buf, &f), 0);
	f = ok;
	f.ulp_pdata_len = 509;
	CHECK_EQ(kiwi_mpa_build(buf, &f), 0);
	f = ok;
	f.ird = 0x4000;
	CHECK_EQ(kiwi_mpa_build(buf, &f), 0);
	f = ok;
	f.ord = 0x4000;
	CHECK_EQ(kiwi_mpa_build(buf, &f), 0);
	f = ok;
	f.rtr = 8;
	CHECK_EQ(kiwi_mpa_build(buf, &f), 0);
	f = ok;
	f.ulp_pdata = NULL;
	CHECK_EQ(kiwi_mpa_build(buf, &f), 0);
	f = ok;
	f.enhanced = false;
	f.ulp_pdata_len = 512;
	CHECK_EQ(kiwi_mpa_build(buf, &f), 532);
	f.ulp_pdata_len = 513;
	CHECK_EQ(kiwi_mpa_build(buf, &f), 0);
	/* Revision 1 never writes IRD/ORD, whatever the fields say. */
	f = ok;
	f.rev = 1;
	f.ird = 0xffff;
	CHECK_EQ(kiwi_mpa_build(buf, &f), 528);
	CHECK_EQ(buf[16], 0x00);
}

/* ---- runner ---- */

static const struct {
	void (*fn)(void);
	const char *name;
} tests[] = {
	{ t_crc_check_value, "CRC32c(\"123456789\") = 0xE3069283 with init ~0 and final inversion (shim kiwi_crc32c_update, D-MPA)" },
	{ t_crc_matches_reference, "shim CRC32c equals an independent table-driven CRC32c for lengths 0..2048" },
	{ t_crc_wire_order, "MPA CRC goes on the wire least significant octet first (RFC 3720 B.4 vectors, kiwi_mpa_crc_put/get)" },
	{ t_golden_fpdu_send, "golden FPDU: one-segment Send 'kiwi', ULPDU 22, no pad, CRC 2e 06 76 c7 (R-HDR-1)" },
	{ t_golden_fpdu_write_pad, "golden FPDU: tagged Write 'hello', ULPDU 19, pad 3, CRC 1f b1 00 4d (R-HDR-1)" },
	{ t_pad, "kiwi_mpa_pad for ULPDU lengths 0..7 (2,1,0,3,2,1,0,3) and kiwi_fpdu_len" },
	{ t_mulpdu, "kiwi_mpa_mulpdu: 1460->1454, 536->530, 9000->8994, emss < 24 -> 0, 16-bit cap, matches definition (D-MPA-5)" },
	{ t_golden_ctrl_every_opcode, "R-HDR-5, R-HDR-13: control word for every opcode (Send 0x4143, Read Request 0x4141, last Write 0xC140, ...)" },
	{ t_golden_tagged_hdr, "R-HDR-16: golden 14-octet tagged header (Read Response, STag, 64-bit TO)" },
	{ t_golden_untagged_send_inv, "R-HDR-9, R-HDR-17: golden untagged Send with SE and Invalidate, STag at octets 2-5, QN at 6" },
	{ t_inv_stag_zero_on_transmit, "R-HDR-10: Invalidate STag field is zero on transmit for Send, Send SE, Read Request, Terminate" },
	{ t_inv_stag_ignored_on_receive, "R-HDR-10: a non-zero Invalidate STag on a plain Send is ignored (reported as 0)" },
	{ t_golden_read_req, "R-HDR-21: golden 46-octet Read Request ULPDU, build and parse" },
	{ t_roundtrip_every_opcode, "R-HDR-13: build->parse round trip for every opcode, L set and clear, random fields" },
	{ t_hdr_len_per_opcode, "R-HDR-30: hdr_len is 14 tagged, 18 untagged, 46 Read Request, 22+ Terminate" },
	{ t_reserved_bits_ignored, "R-HDR-8: DDP and RDMAP reserved control bits are ignored on receive" },
	{ t_walk_rdmap_ctrl, "R-HDR-6: all 256 RDMAP control octets, tagged and untagged, give the expected verdict" },
	{ t_err_local_cata, "kiwi_ddp_parse: header longer than the ULPDU -> KIWI_TC_DDP_LOCAL_CATA (checked first)" },
	{ t_err_ddp_version, "kiwi_ddp_parse: DV != 01b -> KIWI_TC_DDP_T_INV_VERSION / _U_INV_VERSION, before RDMAP version" },
	{ t_err_rdmap_version, "R-HDR-7, R-AMB-10: RV 00b, 10b, 11b -> KIWI_TC_RDMAP_INV_VERSION (0x02050000), before opcode" },
	{ t_rfc7306_opcodes, "RFC 7306: opcodes 8-11, QN 0/1/3, single segments of exactly their header" },
	{ t_atomic_req_golden, "RFC 7306: Atomic Request header bytes, codes FetchAdd 0 and CmpSwap 2 only" },
	{ t_atomic_resp_imm_golden, "RFC 7306: Atomic Response and Immediate Data bytes" },
	{ t_atomic_apply, "RFC 7306: FetchAdd (masked) and CmpSwap (masked) arithmetic" },
	{ t_err_unexpected_opcode, "R-HDR-15, R-HDR-11: opcodes 12-15 and wrong T flag -> KIWI_TC_RDMAP_UNEXP_OPCODE, before QN" },
	{ t_err_invalid_qn, "R-HDR-18: QN other than Fig. 4's (0 Send, 1 Read Request, 2 Terminate) -> KIWI_TC_DDP_U_INV_QN" },
	{ t_read_req_45_46_47, "R-HDR-14, R-HDR-21, R-AMB-14: Read Request of 45/47/40 bytes or not last -> OP_UNSPEC, 46 accepted" },
	{ t_terminate_size, "R-AMB-14: Terminate shorter than 22 bytes or not last -> KIWI_TC_RDMAP_OP_UNSPEC" },
	{ t_untagged_17_18, "R-SND-4, R-WR-8: untagged ULPDU 17 refused, 18 accepted; tagged 13 refused, 14 accepted" },
	{ t_ddp_truncations, "kiwi_ddp_parse: every truncation of every opcode's ULPDU, exact-size heap buffers" },
	{ t_term_codes, "R-TCODE-1..16: Terminate code constants equal Fig. 9 and the DDP/MPA tables" },
	{ t_term_flags_local_cata, "R-TCODE-19: RDMA Local Catastrophic -> no DDP header, no RDMA header" },
	{ t_term_flags_remote_protection, "R-TCODE-20, R-AMB-5: Remote Protection -> M, D; R only for Read Request" },
	{ t_term_flags_remote_operation, "R-TCODE-21: Remote Operation -> M, D if possible, no R" },
	{ t_term_flags_ddp, "R-TCODE-22: DDP errors -> M, D, no R (none for Local Catastrophic)" },
	{ t_term_flags_llp, "R-TCODE-23: LLP (MPA) errors -> no headers" },
	{ t_tc_access, "kiwi_tc_access: RDMAP Remote Protection and DDP tagged errors (not the version) are access errors" },
	{ t_term_golden_ctrl, "R-HDR-23: Remote Protection / Invalid STag on a Read Request -> control word 0x0100E000" },
	{ t_term_roundtrip, "R-HDR-25, R-HDR-26: Terminate build->parse with and without echoed 14/18/28-octet headers, truncations refused" },
	{ t_term_fpdu_76_and_28, "R-HDR-27: largest Terminate FPDU is 76 octets, smallest 28" },
	{ t_term_reserved_ignored, "R-HDR-24: Terminate reserved bits ignored on receive, zero on transmit" },
	{ t_term_without_headers_zeroed, "kiwi_term_build: D/R without headers to copy writes zeros" },
	{ t_mpa_golden_req_v1, "D-MPA: golden MPA Request revision 1, C flag, 3 bytes private data" },
	{ t_mpa_golden_large_fpdus, "MPA flag 0x08 (siw's GSO_EXP): large-FPDU offer built and parsed, both revisions, Request and Reply" },
	{ t_mpa_golden_rep_v2, "D-6581-1: golden enhanced Reply: flag 0x10, IRD/ORD words with P2P and Send/Write/Read RTR bits" },
	{ t_mpa_roundtrip, "kiwi_mpa_build->kiwi_mpa_parse round trip over kind, revision, flags, RTR, IRD/ORD, private data" },
	{ t_mpa_pd_len_512_513, "D-MPA: PD_Length 512 accepted, 513 and 0xffff refused from the header alone" },
	{ t_mpa_err_key, "kiwi_mpa_parse: wrong or corrupted key -> -KIWI_TC_MPA_REQ_RSP" },
	{ t_mpa_err_rev, "kiwi_mpa_parse: revision other than 1 or 2 -> -KIWI_TC_MPA_REQ_RSP" },
	{ t_mpa_err_reject_on_request, "kiwi_mpa_parse: R flag on a Request -> -KIWI_TC_MPA_REQ_RSP; accepted on a Reply" },
	{ t_mpa_err_enhanced_short, "kiwi_mpa_parse: enhanced frame with PD_Length < 4 -> -KIWI_TC_MPA_REQ_RSP" },
	{ t_mpa_reserved_bits, "kiwi_mpa_parse: reserved flag bits (0x07, 0x10 in rev 1) ignored; IRD/ORD 14 bits" },
	{ t_mpa_need_more, "kiwi_mpa_parse: short input -> bytes needed (20, then 20 + PD_Length); bytes beyond ignored" },
	{ t_mpa_truncations, "kiwi_mpa_parse: every truncation asks for more, exact-size heap buffers" },
	{ t_mpa_build_refusals, "kiwi_mpa_build: out-of-range revision, IRD/ORD, RTR, private data length -> 0" },
};

int main(void)
{
	size_t i, n = sizeof(tests) / sizeof(tests[0]);

	ref_crc_init();
	ksft_print_header();
	ksft_print_msg("kiwi wire-format unit tests\n");
	ksft_set_plan(n);
	for (i = 0; i < n; i++) {
		point_failures = 0;
		tests[i].fn();
		ksft_test_result(!point_failures, "wire: %s\n", tests[i].name);
	}
	ksft_finished();
}
