// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Writes the fuzzers' seed corpora at build time (nothing binary is kept
 * in git): gen_seeds DIR makes DIR/fuzz_mpa/ with MPA Requests and Replies
 * and DIR/fuzz_fpdu/ with FPDU streams of every opcode, built with the
 * wire layer itself.
 */
#include <errno.h>
#include <sys/stat.h>

#include "fuzz_common.h"

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
	static const u8 qn[] = { 0, 1, 0, 0, 0, 0, 0, 2 };
	struct kiwi_read_req rr = { 0x100, 0x2000, 4096, 0x300, 0x4000 };
	struct kiwi_term t = { .code = KIWI_TC_RDMAP_INV_STAG };
	u8 u[128], stream[4096];
	size_t all = 0, n, len;
	int op, i = 0;

	for (op = 0; op <= KIWI_OP_TERMINATE; op++) {
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
	mpa_seeds();
	fpdu_seeds();
	return 0;
}
