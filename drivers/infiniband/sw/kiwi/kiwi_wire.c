// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: the iWARP wire format - encoding and validating MPA Request/Reply
 * frames, FPDU framing arithmetic, DDP/RDMAP headers and Terminate
 * messages. See kiwi_wire.h for the contract of each function.
 *
 * Every parser reads only the bytes its length argument covers, keeps all
 * arithmetic unsigned, and leaves the connection-state checks (MSN, MO,
 * STags, offsets) to the caller.
 */

#include "kiwi_wire.h"

/* MPA Request/Reply flags: first octet after the key (RFC 5044, 6581) */
#define MPA_FLAG_M		0x80
#define MPA_FLAG_C		0x40
#define MPA_FLAG_R		0x20
#define MPA_FLAG_ENHANCED	0x10	/* RFC 6581, revision 2 only */
/*
 * Not in the RFCs: the upstream siw's experimental bit (its
 * MPA_RR_FLAG_GSO_EXP), offered by a sender that takes FPDUs spanning
 * several TCP segments and sends them to a peer that offered it too.
 */
#define MPA_FLAG_LARGE_FPDU	0x08
#define MPA_OFF_FLAGS		16
#define MPA_OFF_REV		17
#define MPA_OFF_PD_LEN		18

/* RFC 6581 IRD/ORD words: two control bits above a 14-bit value */
#define MPA_V2_IRD_P2P		0x8000
#define MPA_V2_IRD_RTR_SEND	0x4000
#define MPA_V2_ORD_RTR_WRITE	0x8000
#define MPA_V2_ORD_RTR_READ	0x4000

#define KIWI_RTR_ALL	(KIWI_RTR_SEND | KIWI_RTR_WRITE | KIWI_RTR_READ)

static const u8 mpa_key_req[KIWI_MPA_KEY_LEN] = {
	'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R',
	'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e',
};

static const u8 mpa_key_rep[KIWI_MPA_KEY_LEN] = {
	'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R',
	'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e',
};

/* DDP control octet: T, L, 4 reserved bits, DV (RFC 5041) */
#define DDP_FLAG_T		0x80
#define DDP_FLAG_L		0x40
#define DDP_DV_MASK		0x03
/* RDMAP control octet: RV, 2 reserved bits, opcode (RFC 5040 Fig. 3) */
#define RDMAP_RV_SHIFT		6
#define RDMAP_OPCODE_MASK	0x0f

/* Offsets inside the DDP header */
#define DDP_OFF_STAG		2	/* tagged: Data Sink STag */
#define DDP_OFF_TO		6	/* tagged: Data Sink Tagged Offset */
#define DDP_OFF_INV_STAG	2	/* untagged: RsvdULP octets 2-5 */
#define DDP_OFF_QN		6
#define DDP_OFF_MSN		10
#define DDP_OFF_MO		14

/* Terminate control word (RFC 5040 Fig. 8) */
#define TERM_CODE_MASK		0xffff0000u
#define TERM_FLAG_M		0x8000u
#define TERM_FLAG_D		0x4000u
#define TERM_FLAG_R		0x2000u

/* Error types (RFC 5040 Fig. 9, RFC 5041) that decide what is echoed */
#define ETYPE_RDMAP_PROTECTION	1
#define ETYPE_RDMAP_OPERATION	2
#define ETYPE_DDP_CATASTROPHIC	0
#define ETYPE_DDP_TAGGED	1

/*
 * RFC 5040 Fig. 4 and RFC 7306: the T flag and untagged queue each opcode
 * must use, and for the untagged messages that carry no ULP payload the
 * exact length of the RDMAP header after the DDP header (0: payload, or
 * a Read Request or Terminate, which are checked apart).
 */
static const struct {
	bool tagged;
	u8 qn;
	u8 hdr_only;
} rdmap_ops[KIWI_OP_MAX + 1] = {
	[KIWI_OP_WRITE]		= { true, 0, 0 },
	[KIWI_OP_READ_REQ]	= { false, KIWI_QN_READ_REQ, 0 },
	[KIWI_OP_READ_RESP]	= { true, 0, 0 },
	[KIWI_OP_SEND]		= { false, KIWI_QN_SEND, 0 },
	[KIWI_OP_SEND_INV]	= { false, KIWI_QN_SEND, 0 },
	[KIWI_OP_SEND_SE]	= { false, KIWI_QN_SEND, 0 },
	[KIWI_OP_SEND_SE_INV]	= { false, KIWI_QN_SEND, 0 },
	[KIWI_OP_TERMINATE]	= { false, KIWI_QN_TERMINATE, 0 },
	[KIWI_OP_IMM]		= { false, KIWI_QN_SEND, KIWI_IMM_LEN },
	[KIWI_OP_IMM_SE]	= { false, KIWI_QN_SEND, KIWI_IMM_LEN },
	[KIWI_OP_ATOMIC_REQ]	= { false, KIWI_QN_READ_REQ,
				    KIWI_ATOMIC_REQ_LEN },
	[KIWI_OP_ATOMIC_RESP]	= { false, KIWI_QN_ATOMIC_RESP,
				    KIWI_ATOMIC_RESP_LEN },
};

static bool op_has_inv_stag(unsigned int opcode)
{
	return opcode == KIWI_OP_SEND_INV || opcode == KIWI_OP_SEND_SE_INV;
}

/* ---- MPA Request/Reply ---- */

int kiwi_mpa_parse(const u8 *buf, size_t len, bool want_reply,
		   struct kiwi_mpa_frame *f)
{
	const u8 *key = want_reply ? mpa_key_rep : mpa_key_req;
	size_t need;
	u8 flags;
	u16 pd_len;

	memset(f, 0, sizeof(*f));
	if (len < KIWI_MPA_HDR_LEN)
		return KIWI_MPA_HDR_LEN;

	if (memcmp(buf, key, KIWI_MPA_KEY_LEN))
		return -(int)KIWI_TC_MPA_REQ_RSP;

	flags = buf[MPA_OFF_FLAGS];
	f->reply = want_reply;
	f->rev = buf[MPA_OFF_REV];
	f->pd_len = get_unaligned_be16(buf + MPA_OFF_PD_LEN);
	f->markers = flags & MPA_FLAG_M;
	f->crc = flags & MPA_FLAG_C;
	f->reject = flags & MPA_FLAG_R;
	f->large_fpdus = flags & MPA_FLAG_LARGE_FPDU;
	/* Before revision 2 the bit is reserved and carries no meaning. */
	f->enhanced = f->rev == 2 && (flags & MPA_FLAG_ENHANCED);
	pd_len = f->pd_len;

	if (f->rev != 1 && f->rev != 2)
		return -(int)KIWI_TC_MPA_REQ_RSP;
	if (f->reject && !want_reply)
		return -(int)KIWI_TC_MPA_REQ_RSP;
	if (pd_len > KIWI_MPA_MAX_PDATA)
		return -(int)KIWI_TC_MPA_REQ_RSP;
	if (f->enhanced && pd_len < KIWI_MPA_V2_DATA_LEN)
		return -(int)KIWI_TC_MPA_REQ_RSP;

	/* The header alone tells how long the frame is: ask for the rest. */
	need = KIWI_MPA_HDR_LEN + (size_t)pd_len;
	if (len < need)
		return (int)need;

	buf += KIWI_MPA_HDR_LEN;
	if (f->enhanced) {
		u16 ird = get_unaligned_be16(buf);
		u16 ord = get_unaligned_be16(buf + 2);

		f->ird = ird & KIWI_MPA_IRD_ORD_MAX;
		f->ord = ord & KIWI_MPA_IRD_ORD_MAX;
		f->p2p = ird & MPA_V2_IRD_P2P;
		if (ird & MPA_V2_IRD_RTR_SEND)
			f->rtr |= KIWI_RTR_SEND;
		if (ord & MPA_V2_ORD_RTR_WRITE)
			f->rtr |= KIWI_RTR_WRITE;
		if (ord & MPA_V2_ORD_RTR_READ)
			f->rtr |= KIWI_RTR_READ;
		buf += KIWI_MPA_V2_DATA_LEN;
		pd_len -= KIWI_MPA_V2_DATA_LEN;
	}
	f->ulp_pdata_len = pd_len;
	f->ulp_pdata = pd_len ? buf : NULL;
	return 0;
}

size_t kiwi_mpa_build(u8 *buf, const struct kiwi_mpa_frame *f)
{
	bool enhanced = f->rev == 2 && f->enhanced;
	size_t pd_len = f->ulp_pdata_len;
	u8 flags = 0;

	if (f->rev != 1 && f->rev != 2)
		return 0;
	/* Never emit a frame kiwi_mpa_parse() would refuse. */
	if (f->reject && !f->reply)
		return 0;
	if (f->ulp_pdata_len && !f->ulp_pdata)
		return 0;
	if (enhanced) {
		if (f->ird > KIWI_MPA_IRD_ORD_MAX ||
		    f->ord > KIWI_MPA_IRD_ORD_MAX || (f->rtr & ~KIWI_RTR_ALL))
			return 0;
		pd_len += KIWI_MPA_V2_DATA_LEN;
	}
	if (pd_len > KIWI_MPA_MAX_PDATA)
		return 0;

	if (f->markers)
		flags |= MPA_FLAG_M;
	if (f->crc)
		flags |= MPA_FLAG_C;
	if (f->reject)
		flags |= MPA_FLAG_R;
	if (enhanced)
		flags |= MPA_FLAG_ENHANCED;
	if (f->large_fpdus)
		flags |= MPA_FLAG_LARGE_FPDU;

	memcpy(buf, f->reply ? mpa_key_rep : mpa_key_req, KIWI_MPA_KEY_LEN);
	buf[MPA_OFF_FLAGS] = flags;
	buf[MPA_OFF_REV] = f->rev;
	put_unaligned_be16((u16)pd_len, buf + MPA_OFF_PD_LEN);

	buf += KIWI_MPA_HDR_LEN;
	if (enhanced) {
		u16 ird = f->ird;
		u16 ord = f->ord;

		if (f->p2p)
			ird |= MPA_V2_IRD_P2P;
		if (f->rtr & KIWI_RTR_SEND)
			ird |= MPA_V2_IRD_RTR_SEND;
		if (f->rtr & KIWI_RTR_WRITE)
			ord |= MPA_V2_ORD_RTR_WRITE;
		if (f->rtr & KIWI_RTR_READ)
			ord |= MPA_V2_ORD_RTR_READ;
		put_unaligned_be16(ird, buf);
		put_unaligned_be16(ord, buf + 2);
		buf += KIWI_MPA_V2_DATA_LEN;
	}
	if (f->ulp_pdata_len)
		memcpy(buf, f->ulp_pdata, f->ulp_pdata_len);

	return KIWI_MPA_HDR_LEN + pd_len;
}

/* ---- FPDU framing ---- */

unsigned int kiwi_mpa_mulpdu(unsigned int emss)
{
	unsigned int room, mulpdu;

	/*
	 * Length field + ULPDU + pad is a multiple of 4 and the CRC follows:
	 * take the largest multiple of 4 that leaves room for the CRC.
	 */
	if (emss < KIWI_MPA_LEN_SIZE + KIWI_MPA_CRC_SIZE)
		return 0;
	room = (emss - KIWI_MPA_CRC_SIZE) & ~3u;
	if (room < KIWI_MPA_LEN_SIZE + KIWI_UNTAGGED_HDR_LEN)
		return 0;
	mulpdu = room - KIWI_MPA_LEN_SIZE;

	/* ULPDU_Length is a 16-bit field. */
	return mulpdu > 0xffff ? 0xffff : mulpdu;
}

/*
 * The CRC goes on the wire least significant octet first, as iSCSI sends
 * it: this is what crypto's crc32c final step writes (siw compares those
 * raw bytes) and the byte order Wireshark checks against.
 */
void kiwi_mpa_crc_put(u32 crc, u8 *dst)
{
	put_unaligned_le32(crc, dst);
}

u32 kiwi_mpa_crc_get(const u8 *src)
{
	return get_unaligned_le32(src);
}

/* ---- DDP and RDMAP headers ---- */

u32 kiwi_ddp_parse(const u8 *ulpdu, size_t len, struct kiwi_ddp_hdr *h)
{
	unsigned int hdr_len, opcode;
	u8 ddp_ctrl, rdmap_ctrl;

	memset(h, 0, sizeof(*h));
	if (len < 1)
		return KIWI_TC_DDP_LOCAL_CATA;

	ddp_ctrl = ulpdu[0];
	h->tagged = ddp_ctrl & DDP_FLAG_T;
	hdr_len = h->tagged ? KIWI_TAGGED_HDR_LEN : KIWI_UNTAGGED_HDR_LEN;
	if (len < hdr_len)
		return KIWI_TC_DDP_LOCAL_CATA;

	/* Decode everything first so a Terminate can describe the segment. */
	rdmap_ctrl = ulpdu[1];
	opcode = rdmap_ctrl & RDMAP_OPCODE_MASK;
	h->opcode = opcode;
	h->last = ddp_ctrl & DDP_FLAG_L;
	h->hdr_len = hdr_len;
	if (h->tagged) {
		h->stag = get_unaligned_be32(ulpdu + DDP_OFF_STAG);
		h->to = get_unaligned_be64(ulpdu + DDP_OFF_TO);
	} else {
		if (op_has_inv_stag(opcode))
			h->inv_stag = get_unaligned_be32(ulpdu +
							 DDP_OFF_INV_STAG);
		h->qn = get_unaligned_be32(ulpdu + DDP_OFF_QN);
		h->msn = get_unaligned_be32(ulpdu + DDP_OFF_MSN);
		h->mo = get_unaligned_be32(ulpdu + DDP_OFF_MO);
	}

	if ((ddp_ctrl & DDP_DV_MASK) != KIWI_DDP_VERSION)
		return h->tagged ? KIWI_TC_DDP_T_INV_VERSION :
				   KIWI_TC_DDP_U_INV_VERSION;
	/* RV 00b (RDMA Consortium) is refused: kiwi speaks RFC 5040 only. */
	if ((rdmap_ctrl >> RDMAP_RV_SHIFT) != KIWI_RDMAP_VERSION)
		return KIWI_TC_RDMAP_INV_VERSION;
	if (opcode > KIWI_OP_MAX || rdmap_ops[opcode].tagged != h->tagged)
		return KIWI_TC_RDMAP_UNEXP_OPCODE;
	if (h->tagged)
		return 0;
	if (h->qn != rdmap_ops[opcode].qn)
		return KIWI_TC_DDP_U_INV_QN;

	/*
	 * RFC 5040 gives no code for a badly sized Read Request or
	 * Terminate (R-AMB-14); Remote Operation / Unspecified it is. Both
	 * carry no ULP payload, so their header runs to the segment's end.
	 */
	if (opcode == KIWI_OP_READ_REQ) {
		if (!h->last || len != KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN)
			return KIWI_TC_RDMAP_OP_UNSPEC;
		h->hdr_len = KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN;
	} else if (opcode == KIWI_OP_TERMINATE) {
		if (!h->last || len < KIWI_UNTAGGED_HDR_LEN + KIWI_TERM_CTRL_LEN)
			return KIWI_TC_RDMAP_OP_UNSPEC;
		/* An MPA ULPDU_Length is 16 bits, so this never truncates. */
		h->hdr_len = (unsigned int)len;
	} else if (rdmap_ops[opcode].hdr_only) {
		/* RFC 7306: one segment, its header and nothing else. */
		unsigned int need = KIWI_UNTAGGED_HDR_LEN +
				    rdmap_ops[opcode].hdr_only;

		if (!h->last || len != need)
			return KIWI_TC_RDMAP_OP_UNSPEC;
		h->hdr_len = need;
	}
	return 0;
}

static void ddp_put_ctrl(u8 *buf, bool tagged, bool last, u8 opcode)
{
	buf[0] = (tagged ? DDP_FLAG_T : 0) | (last ? DDP_FLAG_L : 0) |
		 KIWI_DDP_VERSION;
	buf[1] = KIWI_RDMAP_VERSION << RDMAP_RV_SHIFT |
		 (opcode & RDMAP_OPCODE_MASK);
}

void kiwi_ddp_build_tagged(u8 *buf, u8 opcode, bool last, u32 stag, u64 to)
{
	ddp_put_ctrl(buf, true, last, opcode);
	put_unaligned_be32(stag, buf + DDP_OFF_STAG);
	put_unaligned_be64(to, buf + DDP_OFF_TO);
}

void kiwi_ddp_build_untagged(u8 *buf, u8 opcode, bool last, u32 inv_stag,
			     u32 qn, u32 msn, u32 mo)
{
	ddp_put_ctrl(buf, false, last, opcode);
	/* RsvdULP octets 2-5 must be zero unless they name an STag. */
	put_unaligned_be32(op_has_inv_stag(opcode) ? inv_stag : 0,
			   buf + DDP_OFF_INV_STAG);
	put_unaligned_be32(qn, buf + DDP_OFF_QN);
	put_unaligned_be32(msn, buf + DDP_OFF_MSN);
	put_unaligned_be32(mo, buf + DDP_OFF_MO);
}

/* RDMA Read Request header, RFC 5040 Fig. 6 */
#define RREQ_OFF_SINK_STAG	0
#define RREQ_OFF_SINK_TO	4
#define RREQ_OFF_SIZE		12
#define RREQ_OFF_SRC_STAG	16
#define RREQ_OFF_SRC_TO		20

void kiwi_read_req_parse(const u8 *buf, struct kiwi_read_req *r)
{
	r->sink_stag = get_unaligned_be32(buf + RREQ_OFF_SINK_STAG);
	r->sink_to = get_unaligned_be64(buf + RREQ_OFF_SINK_TO);
	r->size = get_unaligned_be32(buf + RREQ_OFF_SIZE);
	r->src_stag = get_unaligned_be32(buf + RREQ_OFF_SRC_STAG);
	r->src_to = get_unaligned_be64(buf + RREQ_OFF_SRC_TO);
}

void kiwi_read_req_build(u8 *buf, const struct kiwi_read_req *r)
{
	put_unaligned_be32(r->sink_stag, buf + RREQ_OFF_SINK_STAG);
	put_unaligned_be64(r->sink_to, buf + RREQ_OFF_SINK_TO);
	put_unaligned_be32(r->size, buf + RREQ_OFF_SIZE);
	put_unaligned_be32(r->src_stag, buf + RREQ_OFF_SRC_STAG);
	put_unaligned_be64(r->src_to, buf + RREQ_OFF_SRC_TO);
}

/* ---- RFC 7306: atomics and Immediate Data ---- */

/* Atomic Request header */
#define AREQ_OFF_CODE		0	/* 28 reserved bits, 4-bit code */
#define AREQ_OFF_REQ_ID		4
#define AREQ_OFF_STAG		8
#define AREQ_OFF_TO		12
#define AREQ_OFF_ADD_SWAP	20
#define AREQ_OFF_ADD_SWAP_MASK	28
#define AREQ_OFF_COMPARE	36
#define AREQ_OFF_COMPARE_MASK	44
#define AREQ_CODE_MASK		0x0f
/* Atomic Response header */
#define ARESP_OFF_REQ_ID	0
#define ARESP_OFF_ORIG		4

u32 kiwi_atomic_req_parse(const u8 *buf, struct kiwi_atomic_req *r)
{
	/* Reserved bits are ignored, as everywhere. */
	r->code = get_unaligned_be32(buf + AREQ_OFF_CODE) & AREQ_CODE_MASK;
	r->req_id = get_unaligned_be32(buf + AREQ_OFF_REQ_ID);
	r->stag = get_unaligned_be32(buf + AREQ_OFF_STAG);
	r->to = get_unaligned_be64(buf + AREQ_OFF_TO);
	r->add_swap = get_unaligned_be64(buf + AREQ_OFF_ADD_SWAP);
	r->add_swap_mask = get_unaligned_be64(buf + AREQ_OFF_ADD_SWAP_MASK);
	r->compare = get_unaligned_be64(buf + AREQ_OFF_COMPARE);
	r->compare_mask = get_unaligned_be64(buf + AREQ_OFF_COMPARE_MASK);
	if (r->code != KIWI_ATOMIC_FETCH_ADD && r->code != KIWI_ATOMIC_CMP_SWAP)
		return KIWI_TC_RDMAP_OP_UNSPEC;
	return 0;
}

void kiwi_atomic_req_build(u8 *buf, const struct kiwi_atomic_req *r)
{
	put_unaligned_be32(r->code & AREQ_CODE_MASK, buf + AREQ_OFF_CODE);
	put_unaligned_be32(r->req_id, buf + AREQ_OFF_REQ_ID);
	put_unaligned_be32(r->stag, buf + AREQ_OFF_STAG);
	put_unaligned_be64(r->to, buf + AREQ_OFF_TO);
	put_unaligned_be64(r->add_swap, buf + AREQ_OFF_ADD_SWAP);
	put_unaligned_be64(r->add_swap_mask, buf + AREQ_OFF_ADD_SWAP_MASK);
	put_unaligned_be64(r->compare, buf + AREQ_OFF_COMPARE);
	put_unaligned_be64(r->compare_mask, buf + AREQ_OFF_COMPARE_MASK);
}

u64 kiwi_atomic_apply(const struct kiwi_atomic_req *r, u64 orig)
{
	u64 sum, carry_cut, a = orig, b = r->add_swap;
	unsigned int i;

	if (r->code == KIWI_ATOMIC_CMP_SWAP) {
		if ((orig ^ r->compare) & r->compare_mask)
			return orig;
		return (orig & ~r->add_swap_mask) |
		       (r->add_swap & r->add_swap_mask);
	}
	if (!r->add_swap_mask)
		return orig + r->add_swap;
	/*
	 * Fields end at the mask's set bits: add bit by bit, dropping the
	 * carry out of each such bit.
	 */
	sum = 0;
	carry_cut = 0;
	for (i = 0; i < 64; i++) {
		u64 bit = (u64)1 << i;
		u64 x = (a & bit ? 1 : 0) + (b & bit ? 1 : 0) + carry_cut;

		if (x & 1)
			sum |= bit;
		carry_cut = (x >> 1) && !(r->add_swap_mask & bit) ? 1 : 0;
	}
	return sum;
}

void kiwi_atomic_resp_parse(const u8 *buf, struct kiwi_atomic_resp *r)
{
	r->req_id = get_unaligned_be32(buf + ARESP_OFF_REQ_ID);
	r->orig = get_unaligned_be64(buf + ARESP_OFF_ORIG);
}

void kiwi_atomic_resp_build(u8 *buf, const struct kiwi_atomic_resp *r)
{
	put_unaligned_be32(r->req_id, buf + ARESP_OFF_REQ_ID);
	put_unaligned_be64(r->orig, buf + ARESP_OFF_ORIG);
}

void kiwi_imm_parse(const u8 *buf, struct kiwi_imm *imm)
{
	/* The consumer's bytes are kept as they are: no byte swap. */
	memcpy(&imm->data, buf, sizeof(imm->data));
	imm->kiwi = get_unaligned_be32(buf + 4);
}

void kiwi_imm_build(u8 *buf, const struct kiwi_imm *imm)
{
	memcpy(buf, &imm->data, sizeof(imm->data));
	put_unaligned_be32(imm->kiwi, buf + 4);
}

/* ---- Terminate ---- */

void kiwi_term_flags(u32 code, int opcode, struct kiwi_term *t)
{
	/* Without the offending segment there is nothing to echo. */
	bool echo = opcode >= 0;
	u8 etype = KIWI_TC_ETYPE(code);

	t->m = false;
	t->d = false;
	t->r = false;

	switch (KIWI_TC_LAYER(code)) {
	case KIWI_LAYER_RDMAP:
		/* Fig. 10: DDP header and length "if possible", R only here */
		if (etype == ETYPE_RDMAP_PROTECTION) {
			t->m = echo;
			t->d = echo;
			/*
			 * Only a Read Request has an RDMAP header to send
			 * back (section 4.8); a Send with Invalidate has none.
			 */
			t->r = opcode == KIWI_OP_READ_REQ;
		} else if (etype == ETYPE_RDMAP_OPERATION) {
			t->m = echo;
			t->d = echo;
		}
		break;
	case KIWI_LAYER_DDP:
		/* No DDP header for a Local Catastrophic error (4.8). */
		if (etype != ETYPE_DDP_CATASTROPHIC) {
			t->m = echo;
			t->d = echo;
		}
		break;
	default:
		/* LLP errors echo nothing. */
		break;
	}
}

bool kiwi_tc_access(u32 code)
{
	switch (KIWI_TC_LAYER(code)) {
	case KIWI_LAYER_RDMAP:
		return KIWI_TC_ETYPE(code) == ETYPE_RDMAP_PROTECTION;
	case KIWI_LAYER_DDP:
		return KIWI_TC_ETYPE(code) == ETYPE_DDP_TAGGED &&
		       code != KIWI_TC_DDP_T_INV_VERSION;
	default:
		return false;
	}
}

size_t kiwi_term_build(u8 *buf, const struct kiwi_term *t)
{
	u32 ctrl = t->code & TERM_CODE_MASK;
	size_t off = KIWI_TERM_CTRL_LEN;

	if (t->m)
		ctrl |= TERM_FLAG_M;
	if (t->d)
		ctrl |= TERM_FLAG_D;
	if (t->r)
		ctrl |= TERM_FLAG_R;
	put_unaligned_be32(ctrl, buf);

	if (t->d) {
		unsigned int hl = t->ddp_hdr_len == KIWI_TAGGED_HDR_LEN ?
				  KIWI_TAGGED_HDR_LEN : KIWI_UNTAGGED_HDR_LEN;

		put_unaligned_be16(t->seg_len, buf + off);
		off += KIWI_TERM_SEGLEN_LEN;
		/* A header we do not have goes out as zeros (section 7.1). */
		if (t->ddp_hdr)
			memcpy(buf + off, t->ddp_hdr, hl);
		else
			memset(buf + off, 0, hl);
		off += hl;
	}
	if (t->r) {
		if (t->rdmap_hdr)
			memcpy(buf + off, t->rdmap_hdr, KIWI_READ_REQ_LEN);
		else
			memset(buf + off, 0, KIWI_READ_REQ_LEN);
		off += KIWI_READ_REQ_LEN;
	}
	return off;
}

u32 kiwi_term_parse(const u8 *buf, size_t len, struct kiwi_term *t)
{
	size_t off = KIWI_TERM_CTRL_LEN;
	u32 ctrl;

	memset(t, 0, sizeof(*t));
	if (len < KIWI_TERM_CTRL_LEN)
		return KIWI_TC_RDMAP_OP_UNSPEC;

	ctrl = get_unaligned_be32(buf);
	t->code = ctrl & TERM_CODE_MASK;
	t->m = ctrl & TERM_FLAG_M;
	t->d = ctrl & TERM_FLAG_D;
	t->r = ctrl & TERM_FLAG_R;
	t->opcode = -1;

	if (t->d) {
		unsigned int hl;

		/* Segment length, then at least the echoed DDP control. */
		if (len - off < KIWI_TERM_SEGLEN_LEN + 1)
			return KIWI_TC_RDMAP_OP_UNSPEC;
		t->seg_len = get_unaligned_be16(buf + off);
		off += KIWI_TERM_SEGLEN_LEN;
		/* Its own T flag says how long the echoed header is. */
		hl = buf[off] & DDP_FLAG_T ? KIWI_TAGGED_HDR_LEN :
					     KIWI_UNTAGGED_HDR_LEN;
		if (len - off < hl)
			return KIWI_TC_RDMAP_OP_UNSPEC;
		t->ddp_hdr = buf + off;
		t->ddp_hdr_len = hl;
		t->opcode = buf[off + 1] & RDMAP_OPCODE_MASK;
		off += hl;
	}
	if (t->r) {
		if (len - off < KIWI_READ_REQ_LEN)
			return KIWI_TC_RDMAP_OP_UNSPEC;
		t->rdmap_hdr = buf + off;
	}
	return 0;
}
