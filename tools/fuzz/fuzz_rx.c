// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: the receive engine's FPDU state machine, kiwi_fpdu.c
 * (what the module's kiwi_rx.c runs on each skb), fed a byte stream cut at
 * random points. The first RX_CFG_LEN bytes of the input set up the
 * connection - CRC on or off, a receive WQE, a tagged buffer, outstanding
 * RDMA Reads - how the stream is cut, and whether reading an FPDU or
 * placing a segment fails; the rest is the stream.
 *
 * This file supplies kiwi_fpdu_copy(), _crc(), _start(), _place() and
 * _end() as a model of the module's memory and queues, and checks that the
 * state machine consumes every byte once, in order, never past what it was
 * given; that headers, held payload and trailers stay in their buffers;
 * that what it accepts respects the MSN, MO, length and CRC rules and the
 * buffers' bounds; that what it places is the segment's payload, byte for
 * byte, and, with CRCs, nothing of an FPDU reaches _start() or _place()
 * before the whole FPDU is in and its CRC matched; that a Terminate for
 * what it refuses echoes only received headers and parses back; and that
 * where the stream is cut changes nothing: the same stream in one piece
 * gives the same events and the same verdict.
 */
#include "fuzz_common.h"
#include "kiwi_fpdu.h"
#include "kiwi_wqe.h"

#define RX_CFG_LEN	16

enum rx_fault { RX_FAULT_NONE, RX_FAULT_COPY, RX_FAULT_PLACE };

struct rx_cfg {
	bool crc;
	bool rq_empty;
	unsigned int cut_mode;
	unsigned int fault;	/* enum rx_fault, at the fault_at-th FPDU */
	unsigned int fault_at;	/* or segment with payload (from 1) */
	u32 seed;
	struct kiwi_rqe rqe;
	u32 max_sge;
	u32 stag;		/* the one tagged buffer */
	u64 base;
	u64 len;
	unsigned int reads;	/* RDMA Reads outstanding, of read_len */
	u32 read_len;
	unsigned int ird;
};

/* Where the stream's bytes are: kiwi_fpdu_recv()'s @src. */
struct rx_src {
	const u8 *stream;
	size_t end;		/* bytes given in this call end here */
};

struct rx_model {
	const struct rx_cfg *cfg;
	struct kiwi_rx *rx;
	const struct rx_src *src;
	size_t next;		/* next stream byte the machine must take */
	size_t fpdu_start;
	u32 placed;		/* payload bytes of this segment */
	unsigned int fpdus;	/* FPDUs begun */
	unsigned int payloads;	/* segments with payload begun */
	bool tagged_ok;
	bool have_rqe;
	unsigned int reads_done;
	u32 read_got;
	unsigned int read_reqs;
	u64 hash;		/* of the events, to compare cut and uncut */
};

static struct rx_model *model;

static void event(u64 a, u64 b)
{
	model->hash = (model->hash ^ a) * 0x100000001b3ull;
	model->hash = (model->hash ^ b) * 0x100000001b3ull;
}

static void parse_cfg(const u8 *c, struct rx_cfg *cfg)
{
	int i;

	memset(cfg, 0, sizeof(*cfg));
	cfg->crc = c[0] & 1;
	cfg->rq_empty = c[0] & 2;
	cfg->cut_mode = (c[0] >> 2) & 3;
	cfg->fault = (c[0] >> 4) & 3;
	cfg->fault_at = (c[0] >> 6) + 1;
	cfg->seed = (u32)c[15] << 8 | c[0] | 1;
	cfg->rqe.num_sge = c[1] & 7;
	cfg->max_sge = (c[1] >> 3) & 7;
	if (cfg->max_sge > KIWI_MAX_SGE)
		cfg->max_sge = KIWI_MAX_SGE;
	for (i = 0; i < KIWI_MAX_SGE; i++) {
		cfg->rqe.sge[i].length = c[2 + i] * 3u;
		cfg->rqe.sge[i].lkey = 0x100 + i;
		cfg->rqe.sge[i].addr = 0x10000 * (i + 1);
	}
	cfg->stag = get_unaligned_be16(c + 8);
	cfg->base = (u64)c[10] << 8;
	cfg->len = (u64)c[11] << 4;
	cfg->read_len = get_unaligned_be16(c + 12);
	cfg->reads = c[14] & 3;
	cfg->ird = c[14] >> 4;
}

static bool is_send(u8 op)
{
	return op == KIWI_OP_SEND || op == KIWI_OP_SEND_INV ||
	       op == KIWI_OP_SEND_SE || op == KIWI_OP_SEND_SE_INV;
}

int kiwi_fpdu_copy(const void *src, unsigned int off, void *dst,
		   unsigned int len)
{
	const struct rx_src *s = src;
	struct kiwi_rx *rx = model->rx;
	u8 *d = dst;

	ASSERT(s == model->src && rx->state != KIWI_RX_DEAD);
	/* In order, each byte once, only bytes it was given */
	ASSERT(len && off == model->next && off + len <= s->end);
	if (rx->state == KIWI_RX_HDR) {
		ASSERT(d == rx->hdr + rx->hdr_got);
		ASSERT(rx->hdr_got + len <= rx->hdr_need);
		ASSERT(rx->hdr_need <= sizeof(rx->hdr));
		if (!rx->hdr_got) {
			model->fpdu_start = off;
			model->placed = 0;
			/* The same FPDU fails however the stream is cut. */
			if (++model->fpdus == model->cfg->fault_at &&
			    model->cfg->fault == RX_FAULT_COPY)
				return -1;
		}
	} else if (rx->state == KIWI_RX_DATA) {
		/* With CRCs, payload held for a later CRC */
		ASSERT(rx->check_crc && !rx->pending);
		ASSERT(d == rx->hold_buf + rx->hold_len && len <= rx->data_left);
		ASSERT(rx->hold_len + len <= KIWI_RX_HOLD_MAX);
	} else {
		ASSERT(rx->state == KIWI_RX_TRAILER);
		ASSERT(d == rx->trl + rx->trl_got);
		ASSERT(rx->trl_got + len <= rx->trl_need);
		ASSERT(rx->trl_need <= sizeof(rx->trl));
	}
	memcpy(d, s->stream + off, len);
	model->next += len;
	return 0;
}

u32 kiwi_fpdu_crc(const void *src, unsigned int off, unsigned int len,
		  u32 crc)
{
	const struct rx_src *s = src;
	struct kiwi_rx *rx = model->rx;

	/* Payload, with CRCs, in order, each byte once */
	ASSERT(s == model->src && rx->check_crc);
	ASSERT(rx->state == KIWI_RX_DATA && len <= rx->data_left);
	ASSERT(len && off == model->next && off + len <= s->end);
	model->next += len;
	return kiwi_crc32c_update(crc, s->stream + off, len);
}

/*
 * With CRCs, before anything of the current FPDU goes past kiwi_fpdu.c:
 * all of it is in, and its CRC matches.
 */
static void check_verified(const struct kiwi_rx *rx)
{
	const u8 *fp = model->src->stream + model->fpdu_start;
	unsigned int n = KIWI_MPA_LEN_SIZE + rx->ulpdu_len +
			 kiwi_mpa_pad(rx->ulpdu_len);

	ASSERT(rx->state == KIWI_RX_TRAILER && rx->trl_got == rx->trl_need);
	ASSERT(!rx->pending);
	ASSERT(model->next - model->fpdu_start == kiwi_fpdu_len(rx->ulpdu_len));
	ASSERT(kiwi_mpa_crc_final(kiwi_crc32c_update(kiwi_mpa_crc_init(), fp,
						     n)) ==
	       kiwi_mpa_crc_get(fp + n));
}

u32 kiwi_fpdu_start(struct kiwi_rx *rx, void *arg)
{
	const struct rx_cfg *cfg = model->cfg;
	const struct kiwi_ddp_hdr *h = &rx->ddp;
	u32 seg = rx->data_left;
	u64 i, sum = 0;

	ASSERT(arg == model && rx == model->rx);
	if (rx->check_crc) {
		check_verified(rx);
		ASSERT(rx->hold_len <= seg);
	} else {
		ASSERT(rx->state == KIWI_RX_HDR);
		ASSERT(model->next == model->fpdu_start + rx->hdr_got);
	}
	/* The headers, all in, exactly, and what they say of the FPDU */
	ASSERT(rx->hdr_got == rx->hdr_need);
	ASSERT(rx->hdr_got == KIWI_MPA_LEN_SIZE + h->hdr_len);
	ASSERT(rx->ulpdu_len == get_unaligned_be16(rx->hdr));
	ASSERT(h->hdr_len <= rx->ulpdu_len);
	ASSERT(seg == rx->ulpdu_len - h->hdr_len);
	event(1, (u64)model->fpdu_start << 32 | rx->ulpdu_len << 8 |
	      h->opcode);

	if (!h->tagged) {
		/* Sends and Immediate Data only, in sequence */
		ASSERT(is_send(h->opcode) || h->opcode == KIWI_OP_IMM ||
		       h->opcode == KIWI_OP_IMM_SE);
		ASSERT(h->qn == KIWI_QN_SEND);
		ASSERT(is_send(h->opcode) || (!h->mo && !rx->mo && !seg));
		ASSERT(h->msn == rx->msn[KIWI_QN_SEND] && h->mo == rx->mo);
		if (model->have_rqe)
			return 0;
		if (cfg->rq_empty)
			return KIWI_TC_DDP_U_NO_BUF;
		rx->rqe = cfg->rqe;
		model->have_rqe = true;
		if (!kiwi_rqe_check(&rx->rqe, cfg->max_sge))
			return KIWI_TC_DDP_LOCAL_CATA;
		ASSERT(rx->rqe.num_sge <= KIWI_MAX_SGE);
		for (i = 0; i < rx->rqe.num_sge; i++)
			sum += rx->rqe.sge[i].length;
		rx->rqe_len = (u32)sum;
		return 0;
	}

	ASSERT(h->opcode == KIWI_OP_WRITE || h->opcode == KIWI_OP_READ_RESP);
	if (h->opcode == KIWI_OP_READ_RESP) {
		/* The oldest Read: sink at (stag, base), read_len bytes */
		if (model->reads_done == cfg->reads)
			return KIWI_TC_RDMAP_UNEXP_OPCODE;
		if (h->stag != cfg->stag ||
		    h->to != cfg->base + model->read_got ||
		    model->read_got + seg > cfg->read_len)
			return KIWI_TC_DDP_T_BASE_BOUNDS;
	}
	if (!seg)
		return 0;
	if (h->stag != cfg->stag)
		return KIWI_TC_DDP_T_INV_STAG;
	if (h->to < cfg->base || h->to - cfg->base > cfg->len ||
	    seg > cfg->len - (h->to - cfg->base))
		return KIWI_TC_DDP_T_BASE_BOUNDS;
	rx->to = h->to;
	model->tagged_ok = true;
	return 0;
}

u32 kiwi_fpdu_place(struct kiwi_rx *rx, void *arg, const void *src,
		    unsigned int off, unsigned int len)
{
	const struct rx_cfg *cfg = model->cfg;
	const struct rx_src *s = src;
	const u8 *bytes, *want;
	u32 pos = rx->mo, at;
	int i;

	ASSERT(arg == model && (!s || s == model->src));
	ASSERT(len && len <= rx->data_left);
	if (rx->check_crc) {
		/* Checked first: from the hold buffer, or the stream's last piece */
		check_verified(rx);
		if (s) {
			ASSERT(off + len <= model->next && off + len <= s->end);
			bytes = s->stream + off;
		} else {
			ASSERT(!model->placed && len == rx->hold_len &&
			       off + len <= KIWI_RX_HOLD_MAX);
			bytes = rx->hold_buf + off;
		}
	} else {
		/* As it comes */
		ASSERT(s && rx->state == KIWI_RX_DATA);
		ASSERT(off == model->next && off + len <= s->end);
		bytes = s->stream + off;
	}
	/* The segment's payload, in order, byte for byte */
	want = model->src->stream + model->fpdu_start + KIWI_MPA_LEN_SIZE +
	       rx->ddp.hdr_len + model->placed;
	ASSERT(!memcmp(bytes, want, len));
	if (!model->placed && ++model->payloads == cfg->fault_at &&
	    cfg->fault == RX_FAULT_PLACE)
		return KIWI_TC_DDP_LOCAL_CATA;	/* as a failed kiwi_mem_write_skb() */
	if (!rx->check_crc)
		model->next += len;
	model->placed += len;

	if (rx->ddp.tagged) {
		/* Only where start allowed, within the buffer */
		ASSERT(model->tagged_ok);
		ASSERT(rx->to >= cfg->base &&
		       rx->to + len <= cfg->base + cfg->len);
		rx->to += len;
		return 0;
	}
	ASSERT(model->have_rqe && is_send(rx->ddp.opcode));
	ASSERT((u64)pos + len <= rx->rqe_len);
	while (len) {
		u32 in, before = 0;
		int k;

		i = kiwi_sge_find(rx->rqe.sge, rx->rqe.num_sge, pos, &at);
		/* The length check at the start makes room for all of it. */
		ASSERT(i >= 0 && (unsigned int)i < rx->rqe.num_sge);
		ASSERT(at < rx->rqe.sge[i].length);
		for (k = 0; k < i; k++)
			before += rx->rqe.sge[k].length;
		ASSERT(before + at == pos);
		in = rx->rqe.sge[i].length - at;
		if (in > len)
			in = len;
		pos += in;
		len -= in;
	}
	return 0;
}

static void check_term_in(const struct kiwi_rx *rx)
{
	const u8 *p = rx->hdr + KIWI_MPA_LEN_SIZE + KIWI_UNTAGGED_HDR_LEN;
	const u8 *end = rx->hdr + rx->hdr_got;
	struct kiwi_term t;
	u32 r;

	/* What the module does with a Terminate it receives */
	r = kiwi_term_parse(p, rx->ulpdu_len - KIWI_UNTAGGED_HDR_LEN, &t);
	if (r) {
		ASSERT(r == KIWI_TC_RDMAP_OP_UNSPEC);
		return;
	}
	ASSERT(!(t.code & 0xffff));
	if (t.d)
		ASSERT(t.ddp_hdr > p && t.ddp_hdr + t.ddp_hdr_len <= end);
	if (t.r) {
		struct kiwi_read_req rr;

		ASSERT(t.rdmap_hdr > p &&
		       t.rdmap_hdr + KIWI_READ_REQ_LEN <= end);
		kiwi_read_req_parse(t.rdmap_hdr, &rr);
	}
	event(4, t.code | t.m << 2 | t.d << 1 | t.r);
}

u32 kiwi_fpdu_end(struct kiwi_rx *rx, void *arg)
{
	const struct rx_cfg *cfg = model->cfg;
	const struct kiwi_ddp_hdr *h = &rx->ddp;
	const u8 *fp = model->src->stream + model->fpdu_start;
	unsigned int pad = kiwi_mpa_pad(rx->ulpdu_len);
	u32 seg = rx->ulpdu_len - h->hdr_len;
	struct kiwi_read_req rr;

	ASSERT(arg == model && rx->state == KIWI_RX_TRAILER);
	ASSERT(rx->trl_got == rx->trl_need &&
	       rx->trl_need == pad + KIWI_MPA_CRC_SIZE);
	/* The whole FPDU, as its length field says, and nothing more */
	ASSERT(model->next - model->fpdu_start == kiwi_fpdu_len(rx->ulpdu_len));
	ASSERT(model->placed == seg && !rx->data_left);
	if (rx->check_crc) {
		u32 crc = kiwi_crc32c_update(kiwi_mpa_crc_init(), fp,
					     KIWI_MPA_LEN_SIZE +
					     rx->ulpdu_len + pad);

		ASSERT(kiwi_mpa_crc_final(crc) ==
		       kiwi_mpa_crc_get(fp + KIWI_MPA_LEN_SIZE +
					rx->ulpdu_len + pad));
	}
	event(3, h->opcode | (u64)h->last << 8);
	model->tagged_ok = false;

	switch (h->opcode) {
	case KIWI_OP_READ_RESP:
		model->read_got += seg;
		if (!h->last)
			break;
		if (model->read_got != cfg->read_len)
			return KIWI_TC_DDP_T_BASE_BOUNDS;
		model->read_got = 0;
		model->reads_done++;
		break;
	case KIWI_OP_SEND:
	case KIWI_OP_SEND_INV:
	case KIWI_OP_SEND_SE:
	case KIWI_OP_SEND_SE_INV:
		ASSERT(rx->mo <= rx->rqe_len);
		if (h->last)
			model->have_rqe = false;
		break;
	case KIWI_OP_READ_REQ:
		ASSERT(h->last && rx->ulpdu_len == h->hdr_len);
		ASSERT(rx->hdr_got == KIWI_MPA_LEN_SIZE +
		       KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN);
		kiwi_read_req_parse(rx->hdr + KIWI_MPA_LEN_SIZE +
				    KIWI_UNTAGGED_HDR_LEN, &rr);
		/* The source must be our buffer: a protection error, R set */
		if (rr.size && rr.src_stag != cfg->stag)
			return KIWI_TC_RDMAP_INV_STAG;
		if (++model->read_reqs > cfg->ird)
			return KIWI_TC_DDP_U_INV_MSN;
		break;
	case KIWI_OP_IMM:
	case KIWI_OP_IMM_SE:
		ASSERT(h->last && rx->ulpdu_len == h->hdr_len);
		ASSERT(h->hdr_len == KIWI_UNTAGGED_HDR_LEN + KIWI_IMM_LEN);
		model->have_rqe = false;
		break;
	case KIWI_OP_ATOMIC_REQ:
	case KIWI_OP_ATOMIC_RESP:
		ASSERT(h->last && rx->ulpdu_len == h->hdr_len);
		ASSERT(rx->hdr_got == KIWI_MPA_LEN_SIZE + h->hdr_len);
		ASSERT(h->qn == (h->opcode == KIWI_OP_ATOMIC_REQ ?
				 KIWI_QN_READ_REQ : KIWI_QN_ATOMIC_RESP));
		break;
	case KIWI_OP_TERMINATE:
		ASSERT(h->last && rx->ulpdu_len == h->hdr_len);
		ASSERT(rx->hdr_got == KIWI_MPA_LEN_SIZE + rx->ulpdu_len);
		check_term_in(rx);
		rx->state = KIWI_RX_DEAD;
		break;
	default:
		ASSERT(h->opcode == KIWI_OP_WRITE);
		break;
	}
	return 0;
}

/* The Terminate the module would send for @tc: only what came in. */
static void check_term_out(const struct kiwi_rx *rx, u32 tc)
{
	u8 out[KIWI_TERM_CTRL_LEN + KIWI_TERM_SEGLEN_LEN +
	       KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN];
	const u8 *end = rx->hdr + rx->hdr_got;
	struct kiwi_term t, back;
	size_t n;

	ASSERT(tc && !(tc & 0xffff) && KIWI_TC_LAYER(tc) <= KIWI_LAYER_LLP);
	kiwi_fpdu_term(rx, tc, &t);
	ASSERT(t.code == tc);
	if (t.d) {
		ASSERT(t.ddp_hdr == rx->hdr + KIWI_MPA_LEN_SIZE);
		ASSERT(t.ddp_hdr_len == (t.ddp_hdr[0] & 0x80 ?
					 KIWI_TAGGED_HDR_LEN :
					 KIWI_UNTAGGED_HDR_LEN));
		ASSERT(t.ddp_hdr + t.ddp_hdr_len <= end);
		ASSERT(t.seg_len == rx->ulpdu_len);
	}
	if (t.r && t.rdmap_hdr)
		ASSERT(t.rdmap_hdr + KIWI_READ_REQ_LEN <= end);
	n = kiwi_term_build(out, &t);
	ASSERT(n <= sizeof(out));
	/* The peer can parse it, and reads back what was echoed. */
	ASSERT(kiwi_term_parse(out, n, &back) == 0);
	ASSERT(back.code == tc && back.d == t.d && back.r == t.r &&
	       back.m == t.m);
	if (t.d) {
		ASSERT(back.ddp_hdr_len == t.ddp_hdr_len);
		ASSERT(!memcmp(back.ddp_hdr, t.ddp_hdr, t.ddp_hdr_len));
	}
}

static u32 next_rand(u32 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Run the stream through, cut or not; Return: the verdict. */
static u32 run(const struct rx_cfg *cfg, const u8 *stream, size_t len,
	       bool cut, size_t *stop, u64 *hash)
{
	static const unsigned int cut_max[4] = { 3, 17, 300, 4096 };
	struct rx_model m = { .cfg = cfg };
	struct rx_src s = { .stream = stream };
	struct kiwi_rx rx;
	u32 seed = cfg->seed, tc = 0;
	size_t pos = 0;

	memset(&rx, 0xa5, sizeof(rx));	/* nothing is read before written */
	rx.hold_buf = cfg->crc ? malloc(KIWI_RX_HOLD_MAX) : NULL;
	ASSERT(!cfg->crc || rx.hold_buf);
	kiwi_fpdu_reset(&rx, cfg->crc);
	rx.have_rqe = false;
	rx.rqe_len = 0;
	m.rx = &rx;
	m.src = &s;
	m.hash = 0xcbf29ce484222325ull;
	model = &m;

	while (pos < len) {
		size_t n = len - pos;

		if (cut)
			n = 1 + next_rand(&seed) % cut_max[cfg->cut_mode];
		if (n > len - pos)
			n = len - pos;
		s.end = pos + n;
		ASSERT(m.next == pos || rx.state == KIWI_RX_DEAD);
		tc = kiwi_fpdu_recv(&rx, &m, &s, (unsigned int)pos,
				    (unsigned int)n);
		if (tc) {
			check_term_out(&rx, tc);
			rx.state = KIWI_RX_DEAD;	/* as kiwi_rx_terminate() */
			break;
		}
		if (rx.state == KIWI_RX_DEAD)
			break;	/* a Terminate came in */
		ASSERT(m.next == s.end);	/* took all it was given */
		pos += n;
	}
	/* Dead: it takes nothing more (the callbacks would assert). */
	if (rx.state == KIWI_RX_DEAD && m.next < len) {
		s.end = len;
		ASSERT(!kiwi_fpdu_recv(&rx, &m, &s, (unsigned int)m.next,
				       (unsigned int)(len - m.next)));
	}
	*stop = m.next;
	*hash = m.hash;
	model = NULL;
	free(rx.hold_buf);
	return tc;
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct rx_cfg cfg;
	size_t stop1, stop2;
	u64 h1, h2;
	u32 tc1, tc2;

	if (size < RX_CFG_LEN || size - RX_CFG_LEN > 0xffffff)
		return 0;
	parse_cfg(data, &cfg);
	tc1 = run(&cfg, data + RX_CFG_LEN, size - RX_CFG_LEN, true, &stop1,
		  &h1);
	tc2 = run(&cfg, data + RX_CFG_LEN, size - RX_CFG_LEN, false, &stop2,
		  &h2);
	/* Where TCP cut the stream changes nothing. */
	ASSERT(tc1 == tc2 && stop1 == stop2 && h1 == h2);
	return 0;
}
