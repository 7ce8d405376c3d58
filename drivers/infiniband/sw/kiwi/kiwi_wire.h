/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: the iWARP wire format - MPA (RFC 5044, RFC 6581), DDP (RFC 5041)
 * and RDMAP (RFC 5040) headers: building them, and parsing and validating
 * every field a remote peer controls.
 *
 * Plain C: it includes only kiwi_wire_shim.h, so the module, the host unit
 * tests and the fuzzers compile the same code. Nothing here allocates,
 * sleeps, locks or keeps state; every parser takes a buffer and its length
 * and never reads outside it.
 *
 * Parsers return 0 or a Terminate code (KIWI_TC_*): the error's
 * Layer/EType/Error Code as the first word of a Terminate header with the
 * M, D and R bits clear (RFC 5040 section 4.8). The caller decides which
 * headers the Terminate echoes (kiwi_term_flags()).
 */
#ifndef _KIWI_WIRE_H
#define _KIWI_WIRE_H

#include "kiwi_wire_shim.h"

/* ---- Terminate codes: Layer << 28 | EType << 24 | Error Code << 16 ---- */

#define KIWI_TC(layer, etype, ecode) \
	((u32)(layer) << 28 | (u32)(etype) << 24 | (u32)(ecode) << 16)
#define KIWI_TC_LAYER(tc)	((u8)((tc) >> 28))
#define KIWI_TC_ETYPE(tc)	((u8)(((tc) >> 24) & 0xf))
#define KIWI_TC_ECODE(tc)	((u8)(((tc) >> 16) & 0xff))

enum kiwi_term_layer {
	KIWI_LAYER_RDMAP = 0,
	KIWI_LAYER_DDP = 1,
	KIWI_LAYER_LLP = 2,
};

/* RDMAP layer (RFC 5040 Fig. 9) */
#define KIWI_TC_RDMAP_LOCAL_CATA	KIWI_TC(0, 0, 0)
#define KIWI_TC_RDMAP_INV_STAG		KIWI_TC(0, 1, 0x00)
#define KIWI_TC_RDMAP_BASE_BOUNDS	KIWI_TC(0, 1, 0x01)
#define KIWI_TC_RDMAP_ACCESS		KIWI_TC(0, 1, 0x02)
#define KIWI_TC_RDMAP_STAG_NOT_ASSOC	KIWI_TC(0, 1, 0x03)
#define KIWI_TC_RDMAP_TO_WRAP		KIWI_TC(0, 1, 0x04)
#define KIWI_TC_RDMAP_PROT_CANT_INV	KIWI_TC(0, 1, 0x09)
#define KIWI_TC_RDMAP_PROT_UNSPEC	KIWI_TC(0, 1, 0xff)
#define KIWI_TC_RDMAP_INV_VERSION	KIWI_TC(0, 2, 0x05)
#define KIWI_TC_RDMAP_UNEXP_OPCODE	KIWI_TC(0, 2, 0x06)
#define KIWI_TC_RDMAP_CATA_STREAM	KIWI_TC(0, 2, 0x07)
#define KIWI_TC_RDMAP_CATA_GLOBAL	KIWI_TC(0, 2, 0x08)
#define KIWI_TC_RDMAP_OP_CANT_INV	KIWI_TC(0, 2, 0x09)
#define KIWI_TC_RDMAP_OP_UNSPEC		KIWI_TC(0, 2, 0xff)
/* DDP layer (RFC 5041) */
#define KIWI_TC_DDP_LOCAL_CATA		KIWI_TC(1, 0, 0x00)
#define KIWI_TC_DDP_T_INV_STAG		KIWI_TC(1, 1, 0x00)
#define KIWI_TC_DDP_T_BASE_BOUNDS	KIWI_TC(1, 1, 0x01)
#define KIWI_TC_DDP_T_STAG_NOT_ASSOC	KIWI_TC(1, 1, 0x02)
#define KIWI_TC_DDP_T_TO_WRAP		KIWI_TC(1, 1, 0x03)
#define KIWI_TC_DDP_T_INV_VERSION	KIWI_TC(1, 1, 0x04)
#define KIWI_TC_DDP_U_INV_QN		KIWI_TC(1, 2, 0x01)
#define KIWI_TC_DDP_U_NO_BUF		KIWI_TC(1, 2, 0x02)
#define KIWI_TC_DDP_U_INV_MSN		KIWI_TC(1, 2, 0x03)
#define KIWI_TC_DDP_U_INV_MO		KIWI_TC(1, 2, 0x04)
#define KIWI_TC_DDP_U_TOO_LONG		KIWI_TC(1, 2, 0x05)
#define KIWI_TC_DDP_U_INV_VERSION	KIWI_TC(1, 2, 0x06)
/* LLP (MPA) layer (RFC 5044, RFC 6581) */
#define KIWI_TC_MPA_CLOSED		KIWI_TC(2, 0, 0x01)
#define KIWI_TC_MPA_CRC			KIWI_TC(2, 0, 0x02)
#define KIWI_TC_MPA_MARKER		KIWI_TC(2, 0, 0x03)
#define KIWI_TC_MPA_REQ_RSP		KIWI_TC(2, 0, 0x04)
#define KIWI_TC_MPA_LOCAL_CATA		KIWI_TC(2, 0, 0x05)
#define KIWI_TC_MPA_INSUF_IRD		KIWI_TC(2, 0, 0x06)
#define KIWI_TC_MPA_NOMATCH_RTR		KIWI_TC(2, 0, 0x07)

/* ---- MPA connection setup frames (RFC 5044 section 7.1, RFC 6581) ---- */

#define KIWI_MPA_KEY_LEN	16
#define KIWI_MPA_HDR_LEN	20	/* key, flags, revision, PD_Length */
#define KIWI_MPA_MAX_PDATA	512	/* PD_Length limit, v2 data included */
#define KIWI_MPA_V2_DATA_LEN	4	/* RFC 6581 IRD/ORD word pair */
#define KIWI_MPA_IRD_ORD_MAX	0x3fff

/* RFC 6581 ready-to-receive message the initiator may send. */
enum kiwi_mpa_rtr {
	KIWI_RTR_NONE = 0,
	KIWI_RTR_SEND = 1 << 0,	/* zero-length Send */
	KIWI_RTR_WRITE = 1 << 1,	/* zero-length RDMA Write */
	KIWI_RTR_READ = 1 << 2,	/* zero-length RDMA Read */
};

/**
 * struct kiwi_mpa_frame - an MPA Request or Reply frame, decoded
 * @reply: key is "MPA ID Rep Frame" (else "MPA ID Req Frame")
 * @markers: M flag
 * @crc: C flag
 * @reject: R flag (Reply only)
 * @enhanced: RFC 6581 enhanced-connection flag (revision 2 only); the
 *	first KIWI_MPA_V2_DATA_LEN bytes of private data are then IRD/ORD
 * @large_fpdus: the sender takes FPDUs that span several TCP segments
 *	(flag 0x08, reserved in RFC 5044; the upstream siw's GSO_EXP bit)
 * @rev: revision, 1 or 2
 * @pd_len: PD_Length as on the wire (includes the v2 data when enhanced)
 * @p2p: RFC 6581 peer-to-peer mode bit (enhanced only)
 * @ird: inbound RDMA Read queue depth (enhanced only, 14 bits)
 * @ord: outbound RDMA Read queue depth (enhanced only, 14 bits)
 * @rtr: KIWI_RTR_* bits: RTR messages offered (request) or chosen (reply)
 * @ulp_pdata: the consumer's private data (after the v2 data), or NULL
 * @ulp_pdata_len: its length
 */
struct kiwi_mpa_frame {
	bool reply;
	bool markers;
	bool crc;
	bool reject;
	bool enhanced;
	bool large_fpdus;
	u8 rev;
	u16 pd_len;
	bool p2p;
	u16 ird;
	u16 ord;
	u8 rtr;
	const u8 *ulp_pdata;
	u16 ulp_pdata_len;
};

/**
 * kiwi_mpa_parse() - decode and validate an MPA Request or Reply
 * @buf: bytes received so far from the start of the frame
 * @len: number of bytes in @buf
 * @want_reply: true when a Reply is expected, false for a Request
 * @f: decoded frame; @f->ulp_pdata points into @buf
 *
 * Return: 0 with @f filled when the whole frame is in @buf; the positive
 * number of bytes the whole frame needs when @len is short of it (at least
 * KIWI_MPA_HDR_LEN); or a negative Terminate code, -KIWI_TC_MPA_REQ_RSP,
 * for a wrong key, a revision other than 1 or 2, PD_Length above
 * KIWI_MPA_MAX_PDATA, an enhanced frame too short for its IRD/ORD, or the
 * R flag on a Request. Bytes beyond the frame are not looked at.
 */
int kiwi_mpa_parse(const u8 *buf, size_t len, bool want_reply,
		   struct kiwi_mpa_frame *f);

/**
 * kiwi_mpa_build() - encode an MPA Request or Reply
 * @buf: output, at least KIWI_MPA_HDR_LEN + KIWI_MPA_MAX_PDATA bytes
 * @f: what to send; @f->pd_len is ignored and computed, the v2 data is
 *	written when @f->rev == 2 and @f->enhanced
 *
 * Return: the frame's length, or 0 when the private data does not fit
 * KIWI_MPA_MAX_PDATA or a field is out of range.
 */
size_t kiwi_mpa_build(u8 *buf, const struct kiwi_mpa_frame *f);

/* ---- MPA framing of DDP segments: FPDUs (RFC 5044 section 4) ---- */

#define KIWI_MPA_LEN_SIZE	2	/* ULPDU_Length field */
#define KIWI_MPA_CRC_SIZE	4

/* Pad after the ULPDU so that length field + ULPDU + pad is 4-aligned. */
static inline unsigned int kiwi_mpa_pad(unsigned int ulpdu_len)
{
	return (4 - ((ulpdu_len + KIWI_MPA_LEN_SIZE) & 3)) & 3;
}

/* Bytes an FPDU carrying a ULPDU of @ulpdu_len takes on the wire. */
static inline unsigned int kiwi_fpdu_len(unsigned int ulpdu_len)
{
	return KIWI_MPA_LEN_SIZE + ulpdu_len + kiwi_mpa_pad(ulpdu_len) +
	       KIWI_MPA_CRC_SIZE;
}

/**
 * kiwi_mpa_mulpdu() - largest ULPDU whose FPDU fits in @emss bytes
 * @emss: the TCP connection's effective MSS (no markers: kiwi never uses them)
 *
 * Return: the MULPDU, or 0 when @emss is too small to carry any DDP header.
 */
unsigned int kiwi_mpa_mulpdu(unsigned int emss);

/*
 * MPA CRC32c over length field, ULPDU and pad, as the FPDU carries it:
 * start with kiwi_mpa_crc_init(), feed bytes with kiwi_crc32c_update(), and
 * kiwi_mpa_crc_final() gives the value to store with kiwi_mpa_crc_put() or
 * compare with kiwi_mpa_crc_get().
 */
static inline u32 kiwi_mpa_crc_init(void)
{
	return ~0u;
}

static inline u32 kiwi_mpa_crc_final(u32 crc)
{
	return ~crc;
}

void kiwi_mpa_crc_put(u32 crc, u8 *dst);
u32 kiwi_mpa_crc_get(const u8 *src);

/* ---- DDP and RDMAP headers (RFC 5041, RFC 5040 section 4) ---- */

enum kiwi_rdmap_opcode {
	KIWI_OP_WRITE = 0,
	KIWI_OP_READ_REQ = 1,
	KIWI_OP_READ_RESP = 2,
	KIWI_OP_SEND = 3,
	KIWI_OP_SEND_INV = 4,
	KIWI_OP_SEND_SE = 5,
	KIWI_OP_SEND_SE_INV = 6,
	KIWI_OP_TERMINATE = 7,
	/* RFC 7306 */
	KIWI_OP_IMM = 8,		/* Immediate Data */
	KIWI_OP_IMM_SE = 9,		/* Immediate Data with Solicited Event */
	KIWI_OP_ATOMIC_REQ = 10,	/* Atomic Request */
	KIWI_OP_ATOMIC_RESP = 11,	/* Atomic Response */
};

#define KIWI_OP_MAX	KIWI_OP_ATOMIC_RESP

/* Untagged queue numbers RDMAP uses (RFC 5040 section 3.1). */
enum kiwi_ddp_qn {
	KIWI_QN_SEND = 0,
	KIWI_QN_READ_REQ = 1,
	KIWI_QN_TERMINATE = 2,
	KIWI_QN_ATOMIC_RESP = 3,	/* RFC 7306; Atomic Requests use QN 1 */
};

#define KIWI_NUM_QN	4

#define KIWI_DDP_VERSION	1
#define KIWI_RDMAP_VERSION	1
#define KIWI_TAGGED_HDR_LEN	14
#define KIWI_UNTAGGED_HDR_LEN	18
#define KIWI_READ_REQ_LEN	28	/* RDMAP header after the DDP header */
#define KIWI_IMM_LEN		8	/* RFC 7306 Immediate Data */
#define KIWI_ATOMIC_REQ_LEN	52	/* RFC 7306 Atomic Request header */
#define KIWI_ATOMIC_RESP_LEN	12	/* RFC 7306 Atomic Response header */
#define KIWI_TERM_CTRL_LEN	4	/* Terminate control word */
#define KIWI_TERM_SEGLEN_LEN	2	/* DDP Segment Length, when D is set */

/**
 * struct kiwi_ddp_hdr - the DDP and RDMAP control of one DDP segment
 * @opcode: enum kiwi_rdmap_opcode
 * @tagged: T flag
 * @last: L flag
 * @stag: tagged: Data Sink STag
 * @to: tagged: Data Sink Tagged Offset of this segment
 * @inv_stag: untagged: Invalidate STag (Send with Invalidate variants only;
 *	zero for every other opcode, whatever the wire said)
 * @qn: untagged: queue number
 * @msn: untagged: message sequence number
 * @mo: untagged: message offset of this segment
 * @hdr_len: DDP header length plus, for Read Request, Terminate and the
 *	RFC 7306 messages, the RDMAP header that follows it (the 8 bytes of
 *	Immediate Data count as one): the payload starts here
 */
struct kiwi_ddp_hdr {
	u8 opcode;
	bool tagged;
	bool last;
	u32 stag;
	u64 to;
	u32 inv_stag;
	u32 qn;
	u32 msn;
	u32 mo;
	unsigned int hdr_len;
};

/**
 * kiwi_ddp_parse() - decode and validate the headers of one ULPDU
 * @ulpdu: the ULPDU (the FPDU without length field, pad and CRC)
 * @len: ULPDU_Length
 * @h: decoded headers
 *
 * Checks, in this order, what can be checked without connection state:
 * @len holds the DDP header (else KIWI_TC_DDP_LOCAL_CATA - the FPDU is
 * not a DDP segment); DDP version (KIWI_TC_DDP_T_INV_VERSION or
 * _U_INV_VERSION); RDMAP version (KIWI_TC_RDMAP_INV_VERSION); opcode known
 * and T flag as RFC 5040 Fig. 4 gives it for the opcode
 * (KIWI_TC_RDMAP_UNEXP_OPCODE); QN as Fig. 4 gives it (KIWI_TC_DDP_U_INV_QN);
 * a Read Request is exactly 18 + 28 bytes and a single last segment, a
 * Terminate is a single last segment of at least 18 + 4 bytes, and the
 * RFC 7306 messages are single last segments of exactly 18 + 8 (Immediate
 * Data, with or without SE), 18 + 52 (Atomic Request) and 18 + 12 (Atomic
 * Response) bytes (KIWI_TC_RDMAP_OP_UNSPEC). Reserved bits are ignored. MSN, MO, STags and
 * offsets need connection state: the caller checks them.
 *
 * Return: 0 or a Terminate code.
 */
u32 kiwi_ddp_parse(const u8 *ulpdu, size_t len, struct kiwi_ddp_hdr *h);

/* Encode a tagged header (14 bytes) or an untagged one (18 bytes). */
void kiwi_ddp_build_tagged(u8 *buf, u8 opcode, bool last, u32 stag, u64 to);
void kiwi_ddp_build_untagged(u8 *buf, u8 opcode, bool last, u32 inv_stag,
			     u32 qn, u32 msn, u32 mo);

/**
 * struct kiwi_read_req - RDMA Read Request header (RFC 5040 section 4.4)
 * @sink_stag: Data Sink STag (copied into the Response unchecked)
 * @sink_to: Data Sink Tagged Offset
 * @size: RDMA Read Message Size (0 is legal)
 * @src_stag: Data Source STag
 * @src_to: Data Source Tagged Offset
 */
struct kiwi_read_req {
	u32 sink_stag;
	u64 sink_to;
	u32 size;
	u32 src_stag;
	u64 src_to;
};

/* 28 bytes at @buf, which the caller has checked are there. */
void kiwi_read_req_parse(const u8 *buf, struct kiwi_read_req *r);
void kiwi_read_req_build(u8 *buf, const struct kiwi_read_req *r);

/* RFC 7306 Atomic Operation codes (the low 4 bits of the first word). */
enum kiwi_atomic_code {
	KIWI_ATOMIC_FETCH_ADD = 0,
	KIWI_ATOMIC_CMP_SWAP = 2,
};

/**
 * struct kiwi_atomic_req - RFC 7306 Atomic Request header
 * @code: enum kiwi_atomic_code
 * @req_id: Request Identifier, echoed in the Atomic Response
 * @stag: Remote STag of the 8 bytes operated on
 * @to: their Remote Tagged Offset
 * @add_swap: FetchAdd: the addend; CmpSwap: the swap value
 * @add_swap_mask: FetchAdd: field boundaries (a set bit stops the carry
 *	out of it); CmpSwap: the bits swapped in
 * @compare: CmpSwap: the value compared with
 * @compare_mask: CmpSwap: the bits compared
 */
struct kiwi_atomic_req {
	u8 code;
	u32 req_id;
	u32 stag;
	u64 to;
	u64 add_swap;
	u64 add_swap_mask;
	u64 compare;
	u64 compare_mask;
};

/**
 * kiwi_atomic_req_parse() - decode an Atomic Request header
 * @buf: KIWI_ATOMIC_REQ_LEN bytes, which the caller has checked are there
 * @r: decoded
 *
 * Return: 0, or KIWI_TC_RDMAP_OP_UNSPEC for an Atomic Operation code other
 * than FetchAdd and CmpSwap. The STag, the 8-byte alignment of the Tagged
 * Offset and the bounds need connection state: the caller checks them
 * (kiwi_atomic_aligned()).
 */
u32 kiwi_atomic_req_parse(const u8 *buf, struct kiwi_atomic_req *r);
void kiwi_atomic_req_build(u8 *buf, const struct kiwi_atomic_req *r);

/* RFC 7306: the 8 bytes operated on are 8-byte aligned. */
static inline bool kiwi_atomic_aligned(u64 to)
{
	return !(to & 7);
}

/**
 * kiwi_atomic_apply() - the new value an Atomic Request leaves in memory
 * @r: the request
 * @orig: the value it found there
 *
 * FetchAdd adds @r->add_swap, the carry stopping at every bit set in
 * @r->add_swap_mask (0: one 64-bit add). CmpSwap, when the bits of
 * @r->compare_mask are equal in @orig and @r->compare, swaps in the bits
 * of @r->add_swap that @r->add_swap_mask selects; else @orig stays.
 */
u64 kiwi_atomic_apply(const struct kiwi_atomic_req *r, u64 orig);

/**
 * struct kiwi_atomic_resp - RFC 7306 Atomic Response header
 * @req_id: the Original Request Identifier
 * @orig: the Original Remote Data Value
 */
struct kiwi_atomic_resp {
	u32 req_id;
	u64 orig;
};

void kiwi_atomic_resp_parse(const u8 *buf, struct kiwi_atomic_resp *r);
void kiwi_atomic_resp_build(u8 *buf, const struct kiwi_atomic_resp *r);

/*
 * RFC 7306 Immediate Data: 8 opaque bytes. The verbs give 32 bits of
 * immediate data (big-endian, as the consumer passed them): kiwi carries
 * them in the first 4 bytes. The last 4 bytes are kiwi's: a Send with
 * Immediate goes out as Immediate Data with KIWI_IMM_WITH_SEND there,
 * then the Send, and the receiver completes both with the Send's one
 * receive WQE; 0 stands alone (after an RDMA Write) and takes a WQE.
 */
#define KIWI_IMM_WITH_SEND	1u

struct kiwi_imm {
	u32 data;	/* the verbs' imm_data, as on the wire */
	u32 kiwi;	/* 0 or KIWI_IMM_WITH_SEND */
};

void kiwi_imm_parse(const u8 *buf, struct kiwi_imm *imm);
void kiwi_imm_build(u8 *buf, const struct kiwi_imm *imm);

/**
 * struct kiwi_term - a Terminate message's RDMAP header (RFC 5040 4.8)
 * @code: Layer/EType/Error Code as a KIWI_TC_* value
 * @opcode: RDMAP opcode of the offending message (when @d), or -1
 * @m: DDP Segment Length valid
 * @d: the terminated DDP header is included
 * @r: the terminated RDMAP (Read Request) header is included
 * @seg_len: DDP Segment Length of the offending segment (when @d)
 * @ddp_hdr: the offending segment's DDP header (when @d), or NULL
 * @ddp_hdr_len: 14 (tagged) or 18 (untagged), 0 when absent
 * @rdmap_hdr: the offending Read Request header, 28 bytes (when @r)
 */
struct kiwi_term {
	u32 code;
	int opcode;
	bool m;
	bool d;
	bool r;
	u16 seg_len;
	const u8 *ddp_hdr;
	unsigned int ddp_hdr_len;
	const u8 *rdmap_hdr;
};

/**
 * kiwi_term_flags() - which headers a Terminate for @code carries
 * @code: the Terminate code
 * @opcode: opcode of the offending message, or -1 when unknown
 * @t: its m, d and r are set as RFC 5040 Fig. 10 asks
 */
void kiwi_term_flags(u32 code, int opcode, struct kiwi_term *t);

/**
 * kiwi_tc_access() - is @code a protection error on the peer's access?
 * @code: a Terminate code
 *
 * Return: true for RDMAP Remote Protection errors and DDP tagged buffer
 * errors (a bad STag, bounds, PD, rights or offset; not a bad DDP
 * version): the consumer hears of those as access errors
 * (IB_EVENT_QP_ACCESS_ERR), of every other Terminate as a fatal error.
 */
bool kiwi_tc_access(u32 code);

/**
 * kiwi_term_build() - encode a Terminate's RDMAP header after its DDP header
 * @buf: output, at least 4 + 2 + 18 + 28 bytes
 * @t: the Terminate; @t->ddp_hdr and @t->rdmap_hdr are read when @t->d
 *	and @t->r are set
 *
 * Return: the bytes written (the Terminate's payload length).
 */
size_t kiwi_term_build(u8 *buf, const struct kiwi_term *t);

/**
 * kiwi_term_parse() - decode a received Terminate's RDMAP header
 * @buf: the bytes after the Terminate's DDP header
 * @len: their number
 * @t: decoded; its pointers point into @buf
 *
 * Return: 0, or KIWI_TC_RDMAP_OP_UNSPEC when @len is too short for the
 * control word or for the headers its D and R bits announce.
 */
u32 kiwi_term_parse(const u8 *buf, size_t len, struct kiwi_term *t);

#endif /* _KIWI_WIRE_H */
