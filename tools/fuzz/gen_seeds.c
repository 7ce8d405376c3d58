// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Writes the fuzzers' seed inputs at build time, built with the wire layer
 * itself: gen_seeds DIR makes DIR/<fuzzer>/ for each fuzzer - MPA
 * Requests and Replies, FPDU streams of every opcode, receive streams with
 * their connection set-up (fuzz_rx), ring entries of every opcode, and
 * Terminate payloads. The minimised corpora kept in git (corpus/) start
 * from these.
 */
#include <errno.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include <rdma/kiwi-abi.h>

static const char *outdir;

static void emit(const char *fuzzer, int idx, const u8 *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/seed-%03d", outdir, fuzzer, idx);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void mkdir_or_die(const char *sub)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s%s%s", outdir, sub ? "/" : "",
		 sub ? sub : "");
	if (mkdir(path, 0755) && errno != EEXIST) {
		perror(path);
		exit(1);
	}
}

static void mpa_seeds(void)
{
	static const u8 pdata[16] = "private data 16";
	u8 big[300];
	u8 buf[KIWI_MPA_HDR_LEN + KIWI_MPA_MAX_PDATA + 8];
	struct kiwi_mpa_frame f;
	int i = 0, rtr;
	size_t n;

	f = (struct kiwi_mpa_frame){ .rev = 1, .crc = true };
	n = kiwi_mpa_build(buf, &f);
	emit("fuzz_mpa", i++, buf, n);
	f = (struct kiwi_mpa_frame){ .rev = 1, .reply = true, .reject = true,
				     .ulp_pdata = pdata, .ulp_pdata_len = 16 };
	n = kiwi_mpa_build(buf, &f);
	emit("fuzz_mpa", i++, buf, n);
	for (rtr = 0; rtr < 8; rtr++) {
		f = (struct kiwi_mpa_frame){
			.rev = 2, .reply = rtr & 1, .enhanced = true,
			.crc = true, .p2p = rtr != 0, .ird = 16 + rtr,
			.ord = 8, .rtr = rtr, .ulp_pdata = pdata,
			.ulp_pdata_len = rtr * 2,
		};
		n = kiwi_mpa_build(buf, &f);
		emit("fuzz_mpa", i++, buf, n);
	}
	/* A Reply followed by the first FPDU, and a long one */
	f = (struct kiwi_mpa_frame){ .rev = 2, .reply = true };
	n = kiwi_mpa_build(buf, &f);
	memset(buf + n, 0, 8);
	emit("fuzz_mpa", i++, buf, n + 8);
	for (n = 0; n < sizeof(big); n++)
		big[n] = (u8)n;
	f = (struct kiwi_mpa_frame){ .rev = 1, .ulp_pdata = big,
				     .ulp_pdata_len = sizeof(big) };
	n = kiwi_mpa_build(buf, &f);
	emit("fuzz_mpa", i++, buf, n);
}

/* Append the FPDU carrying @ulpdu to @out; returns its length. */
static size_t fpdu(u8 *out, const u8 *ulpdu, unsigned int len, bool good_crc)
{
	unsigned int pad = kiwi_mpa_pad(len);
	u32 crc;

	put_unaligned_be16((u16)len, out);
	memcpy(out + 2, ulpdu, len);
	memset(out + 2 + len, 0, pad);
	crc = kiwi_mpa_crc_final(kiwi_crc32c_update(kiwi_mpa_crc_init(),
						    out, 2 + len + pad));
	kiwi_mpa_crc_put(good_crc ? crc : ~crc, out + 2 + len + pad);
	return kiwi_fpdu_len(len);
}

static void fpdu_seeds(void)
{
	static const u8 qn[] = { 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 1, 3 };
	struct kiwi_atomic_req ar = {
		.code = KIWI_ATOMIC_CMP_SWAP, .req_id = 1, .stag = 0x300,
		.to = 0x4000, .add_swap = 5, .add_swap_mask = ~0ull,
		.compare = 0, .compare_mask = ~0ull,
	};
	struct kiwi_atomic_resp aresp = { 1, 42 };
	struct kiwi_imm imm = { 0x01020304, 0 };
	struct kiwi_read_req rr = { 0x100, 0x2000, 4096, 0x300, 0x4000 };
	struct kiwi_term t = { .code = KIWI_TC_RDMAP_INV_STAG };
	u8 u[128], stream[4096];
	size_t all = 0, n, len;
	int op, i = 0;

	for (op = 0; op <= KIWI_OP_MAX; op++) {
		if (op == KIWI_OP_WRITE || op == KIWI_OP_READ_RESP) {
			kiwi_ddp_build_tagged(u, op, true, 0x1234, 0x10);
			memcpy(u + 14, "payload", 7);
			len = 14 + 7;
		} else {
			kiwi_ddp_build_untagged(u, op, true, 0x55, qn[op],
						1, 0);
			len = 18;
			if (op == KIWI_OP_READ_REQ) {
				kiwi_read_req_build(u + 18, &rr);
				len += KIWI_READ_REQ_LEN;
			} else if (op == KIWI_OP_TERMINATE) {
				u8 rreq[46];

				kiwi_ddp_build_untagged(rreq, 1, true, 0, 1,
							1, 0);
				kiwi_read_req_build(rreq + 18, &rr);
				kiwi_term_flags(t.code, 1, &t);
				t.ddp_hdr = rreq;
				t.ddp_hdr_len = 18;
				t.rdmap_hdr = rreq + 18;
				len += kiwi_term_build(u + 18, &t);
			} else if (op == KIWI_OP_ATOMIC_REQ) {
				kiwi_atomic_req_build(u + 18, &ar);
				len += KIWI_ATOMIC_REQ_LEN;
			} else if (op == KIWI_OP_ATOMIC_RESP) {
				kiwi_atomic_resp_build(u + 18, &aresp);
				len += KIWI_ATOMIC_RESP_LEN;
			} else if (op == KIWI_OP_IMM || op == KIWI_OP_IMM_SE) {
				kiwi_imm_build(u + 18, &imm);
				len += KIWI_IMM_LEN;
			} else {
				memcpy(u + 18, "send", 4);
				len += 4 + op;
			}
		}
		n = fpdu(stream + all, u, len, true);
		emit("fuzz_fpdu", i++, stream + all, n);
		all += n;
	}
	emit("fuzz_fpdu", i++, stream, all);
	/* A bad CRC, a cut-off stream, an mss-looking prefix */
	kiwi_ddp_build_untagged(u, KIWI_OP_SEND, false, 0, 0, 7, 1000);
	n = fpdu(stream, u, 18 + 10, false);
	emit("fuzz_fpdu", i++, stream, n);
	emit("fuzz_fpdu", i++, stream, n - 5);
	put_unaligned_be32(1460, stream);
	emit("fuzz_fpdu", i++, stream, 4);
}

/*
 * fuzz_rx: its 16 configuration bytes (see parse_cfg() there: CRC, cuts,
 * a receive WQE of two 120-byte SGEs, a tagged buffer 0x1234 at 0x1000 of
 * 2 KiB, one outstanding 64-byte Read, IRD 2), then a stream.
 */
static const u8 rx_cfg[16] = {
	0x05, 0x32, 40, 40, 0, 0, 0, 0, 0x12, 0x34, 0x10, 0x80,
	0x00, 0x40, 0x21, 7,
};

static size_t rx_send(u8 *out, u8 op, bool last, u32 msn, u32 mo,
		      unsigned int n, bool crc)
{
	u8 u[18 + 64];

	kiwi_ddp_build_untagged(u, op, last, 0x77, KIWI_QN_SEND, msn, mo);
	memset(u + 18, 's', n);
	return fpdu(out, u, 18 + n, crc);
}

static size_t rx_tagged(u8 *out, u8 op, u64 to, unsigned int n, bool crc)
{
	u8 u[14 + 64];

	kiwi_ddp_build_tagged(u, op, true, 0x1234, to);
	memset(u + 14, 'w', n);
	return fpdu(out, u, 14 + n, crc);
}

static void rx_emit(int *i, u8 c0, const u8 *stream, size_t n)
{
	u8 buf[16 + 2048];

	memcpy(buf, rx_cfg, 16);
	buf[0] = c0;
	memcpy(buf + 16, stream, n);
	emit("fuzz_rx", (*i)++, buf, 16 + n);
}

static void rx_seeds(void)
{
	struct kiwi_read_req rr = { 0x99, 0x2000, 64, 0x1234, 0x1000 };
	struct kiwi_term t = { .code = KIWI_TC_DDP_U_INV_MSN };
	u8 s[2048], u[128];
	size_t n = 0, one;
	int i = 0;

	n += rx_send(s + n, KIWI_OP_SEND, false, 1, 0, 10, true);
	n += rx_send(s + n, KIWI_OP_SEND_SE, true, 1, 10, 20, true);
	n += rx_tagged(s + n, KIWI_OP_WRITE, 0x1000, 32, true);
	kiwi_ddp_build_untagged(u, KIWI_OP_READ_REQ, true, 0, KIWI_QN_READ_REQ,
				1, 0);
	kiwi_read_req_build(u + 18, &rr);
	n += fpdu(s + n, u, 18 + KIWI_READ_REQ_LEN, true);
	n += rx_tagged(s + n, KIWI_OP_READ_RESP, 0x1000, 64, true);
	n += rx_send(s + n, KIWI_OP_SEND_INV, true, 2, 0, 5, true);
	kiwi_ddp_build_untagged(u, KIWI_OP_TERMINATE, true, 0,
				KIWI_QN_TERMINATE, 1, 0);
	kiwi_term_flags(t.code, KIWI_OP_SEND, &t);
	t.seg_len = 30;
	t.ddp_hdr = s + 2;
	t.ddp_hdr_len = 18;
	n += fpdu(s + n, u, 18 + kiwi_term_build(u + 18, &t), true);
	rx_emit(&i, 0x05, s, n);	/* all, small cuts */
	rx_emit(&i, 0x01, s, n);	/* all, 1 to 3 bytes */
	rx_emit(&i, 0x09, s, n);	/* all, larger cuts */
	rx_emit(&i, 0x55, s, n);	/* reading the second FPDU fails */
	rx_emit(&i, 0x25, s, n);	/* placing the first payload fails */
	/* Without CRC; a bad CRC; a Send with no WQE; too long a Send */
	one = rx_send(s, KIWI_OP_SEND, true, 1, 0, 30, true);
	rx_emit(&i, 0x04, s, one);
	s[one - 1] ^= 1;
	rx_emit(&i, 0x05, s, one);
	rx_emit(&i, 0x07, s, one);
	one = rx_send(s, KIWI_OP_SEND, true, 1, 0, 64, true);
	one += rx_send(s + one, KIWI_OP_SEND, true, 2, 0, 64, true);
	one += rx_send(s + one, KIWI_OP_SEND, true, 3, 0, 64, true);
	one += rx_send(s + one, KIWI_OP_SEND, true, 4, 0, 64, true);
	rx_emit(&i, 0x05, s, one);
	/* A Terminate too long for the header buffer */
	memset(u + 18, 0, 60);
	kiwi_ddp_build_untagged(u, KIWI_OP_TERMINATE, true, 0,
				KIWI_QN_TERMINATE, 1, 0);
	one = rx_tagged(s, KIWI_OP_WRITE, 0x1000, 4, true);
	one += fpdu(s + one, u, 18 + 60, true);
	rx_emit(&i, 0x05, s, one);
	/*
	 * With CRC, FPDUs whose CRC matches but whose headers fail, told only
	 * after the trailer: a ULPDU of 0 bytes, one of 4, a Write out of
	 * the buffer's bounds in pieces of 1 to 3 bytes
	 */
	one = fpdu(s, u, 0, true);
	rx_emit(&i, 0x05, s, one);
	kiwi_ddp_build_untagged(u, KIWI_OP_SEND, true, 0, KIWI_QN_SEND, 1, 0);
	one = fpdu(s, u, 4, true);
	rx_emit(&i, 0x05, s, one);
	one = rx_tagged(s, KIWI_OP_WRITE, 0x9000, 64, true);
	rx_emit(&i, 0x01, s, one);
	/* A Read Request of a buffer that is not ours */
	rr.src_stag = 0x999;
	kiwi_ddp_build_untagged(u, KIWI_OP_READ_REQ, true, 0, KIWI_QN_READ_REQ,
				1, 0);
	kiwi_read_req_build(u + 18, &rr);
	one = fpdu(s, u, 18 + KIWI_READ_REQ_LEN, true);
	rx_emit(&i, 0x05, s, one);
}

/* fuzz_wqe: 4 limit bytes, a send entry, a receive entry, cut sizes. */
static void wqe_seeds(void)
{
	u8 buf[4 + sizeof(struct kiwi_sqe) + sizeof(struct kiwi_rqe) + 8];
	struct kiwi_sqe *sq = (struct kiwi_sqe *)(buf + 4);
	struct kiwi_rqe *rq = (struct kiwi_rqe *)(buf + 4 + sizeof(*sq));
	int op, i = 0;

	for (op = 0; op <= KIWI_WR_READ_INV + 1; op++) {
		memset(buf, 0, sizeof(buf));
		buf[0] = op & 1;
		buf[1] = 6;
		buf[2] = 96;
		buf[3] = 6;
		sq->flags = KIWI_WQE_VALID | KIWI_WQE_SIGNALED;
		sq->opcode = op;
		sq->num_sge = op == KIWI_WR_RDMA_READ ? 1 : 2;
		sq->sge[0].length = 4096;
		sq->sge[1].length = 100;
		rq->flags = KIWI_WQE_VALID;
		rq->num_sge = 3;
		rq->sge[0].length = 100;
		rq->sge[2].length = 50;
		memset(buf + sizeof(buf) - 8, 1, 8);
		emit("fuzz_wqe", i++, buf, sizeof(buf));
	}
	sq->opcode = KIWI_WR_SEND;
	sq->flags |= KIWI_WQE_INLINE;
	sq->inline_len = 64;
	emit("fuzz_wqe", i++, buf, sizeof(buf));
}

/* fuzz_term: Terminate payloads with and without echoed headers. */
static void term_seeds(void)
{
	static const u32 codes[] = {
		KIWI_TC_RDMAP_INV_STAG, KIWI_TC_DDP_T_BASE_BOUNDS,
		KIWI_TC_DDP_U_INV_MSN, KIWI_TC_MPA_CRC,
	};
	struct kiwi_read_req rr = { 1, 2, 3, 4, 5 };
	u8 hdr[46], out[64];
	struct kiwi_term t;
	unsigned int k;
	int i = 0;

	kiwi_ddp_build_untagged(hdr, KIWI_OP_READ_REQ, true, 0, 1, 1, 0);
	kiwi_read_req_build(hdr + 18, &rr);
	for (k = 0; k < sizeof(codes) / sizeof(codes[0]); k++) {
		memset(&t, 0, sizeof(t));
		t.code = codes[k];
		kiwi_term_flags(t.code, KIWI_OP_READ_REQ, &t);
		t.seg_len = 28;
		t.ddp_hdr = hdr;
		t.ddp_hdr_len = 18;
		t.rdmap_hdr = hdr + 18;
		emit("fuzz_term", i++, out, kiwi_term_build(out, &t));
	}
	kiwi_ddp_build_tagged(hdr, KIWI_OP_WRITE, true, 9, 10);
	t.code = KIWI_TC_DDP_T_INV_STAG;
	kiwi_term_flags(t.code, KIWI_OP_WRITE, &t);
	t.ddp_hdr_len = 14;
	emit("fuzz_term", i++, out, kiwi_term_build(out, &t));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	mkdir_or_die(NULL);
	mkdir_or_die("fuzz_mpa");
	mkdir_or_die("fuzz_fpdu");
	mkdir_or_die("fuzz_rx");
	mkdir_or_die("fuzz_wqe");
	mkdir_or_die("fuzz_term");
	mpa_seeds();
	fpdu_seeds();
	rx_seeds();
	wqe_seeds();
	term_seeds();
	return 0;
}
