/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: the receive engine's walk over the byte stream, FPDU by FPDU:
 * collect the length field and headers (MPA, RFC 5044; DDP and RDMAP,
 * RFC 5041 and 5040), validate them, hand the payload over to be placed,
 * check pad and CRC, and keep the untagged queues' MSN and MO.
 *
 * Without MPA CRCs the payload is placed as it arrives. With them nothing
 * of an FPDU is acted on before its CRC matched (RFC 5044 section 6): the
 * headers and payload are only checksummed until the trailer is in, and
 * the payload stays where it is, in the stream's buffers, when the rest
 * of the FPDU is there too; what must wait for later bytes waits in
 * @rx->hold_buf. Then the headers are validated and the payload placed.
 *
 * Plain C like kiwi_wire.c: the module's receive engine (kiwi_rx.c) runs
 * it on the skbs of tcp_read_sock(), the host fuzzer on a buffer cut at
 * random points. What needs the rest of the module (memory, the receive
 * queue, the RDMA Read queues) is done by the five kiwi_fpdu_*() functions
 * declared last here, which the user of this file supplies: they are bound
 * at link time, so the module's receive path makes no indirect calls.
 */
#ifndef _KIWI_FPDU_H
#define _KIWI_FPDU_H

#include <rdma/kiwi-abi.h>

#include "kiwi_wire.h"

struct kiwi_mem;

/*
 * Length field and the longest headers: a Terminate echoing a Read, as
 * long as an RFC 7306 Atomic Request (18 + 52 bytes).
 */
#define KIWI_RX_HDR_MAX		(KIWI_MPA_LEN_SIZE + KIWI_UNTAGGED_HDR_LEN + \
				 KIWI_TERM_CTRL_LEN + KIWI_TERM_SEGLEN_LEN + \
				 KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN)
#if KIWI_MPA_LEN_SIZE + KIWI_UNTAGGED_HDR_LEN + KIWI_ATOMIC_REQ_LEN > \
	KIWI_RX_HDR_MAX
#error "rx->hdr cannot hold an Atomic Request"
#endif

/*
 * The most payload an FPDU can carry (ULPDU_Length 65535, the shortest
 * DDP header): the size of @rx->hold_buf.
 */
#define KIWI_RX_HOLD_MAX	(0xffff - KIWI_TAGGED_HDR_LEN)

enum kiwi_rx_state {
	KIWI_RX_HDR,		/* collecting length field and headers */
	KIWI_RX_DATA,		/* placing (with CRCs: holding) the payload */
	KIWI_RX_TRAILER,	/* pad and CRC */
	KIWI_RX_DEAD,		/* after an error: discard everything */
};

/**
 * struct kiwi_rx - receive engine of one QP; runs in the socket's
 * data-ready callback (softirq) under the socket lock
 * @state: where in the current FPDU we are
 * @hdr: the current FPDU's length field and headers
 * @hdr_got: bytes of @hdr received
 * @hdr_need: bytes of @hdr needed
 * @ulpdu_len: the current FPDU's ULPDU_Length
 * @ddp: its decoded headers (with CRCs: once the CRC matched)
 * @data_left: payload bytes still to place (with CRCs: to receive, until
 *	the CRC matched; then to place)
 * @trl: pad and CRC bytes received
 * @trl_got: their count
 * @trl_need: pad + CRC size
 * @check_crc: the connection negotiated MPA CRCs
 * @crc: running MPA CRC
 * @hold_buf: with @check_crc, KIWI_RX_HOLD_MAX bytes (the user allocates them)
 *	where payload that came before the rest of its FPDU waits for the CRC
 * @hold_len: payload bytes of the current FPDU in @hold_buf
 * @pending: with @check_crc, the Terminate code of a violation found in
 *	the headers, reported only once the CRC matched (0: none)
 * @msn: next MSN expected on each untagged queue (RFC 7306 adds QN 3)
 * @mo: bytes received of the current Send message
 * @rqe: the receive WQE the current Send lands in
 * @rqe_mem: its SGEs' memory objects, referenced
 * @rqe_len: its capacity
 * @have_rqe: @rqe is taken from the receive queue
 * @tmem: memory object of the current tagged segment, referenced
 * @to: where in it the next payload byte goes
 * @write_bytes: RDMA Write payload received since the last message on
 *	queue 0: the byte count of a Write with Immediate's completion
 * @imm_pending: RFC 7306 Immediate Data for the next Send came in
 * @imm_data: its 32 bits (kiwi_imm)
 * @answer_due: Read Requests or atomics came in whose responses wait to
 *	be sent once the stream read so far is placed (kiwi_tx_answer())
 *
 * kiwi_fpdu.c keeps @state to @mo but for @hold_buf; the rest belongs to the
 * functions the user supplies.
 */
struct kiwi_rx {
	enum kiwi_rx_state state;
	u8 hdr[KIWI_RX_HDR_MAX];
	unsigned int hdr_got;
	unsigned int hdr_need;
	u16 ulpdu_len;
	struct kiwi_ddp_hdr ddp;
	unsigned int data_left;
	u8 trl[3 + KIWI_MPA_CRC_SIZE];
	unsigned int trl_got;
	unsigned int trl_need;
	bool check_crc;
	u32 crc;
	u8 *hold_buf;
	unsigned int hold_len;
	u32 pending;
	u32 msn[KIWI_NUM_QN];
	u32 mo;
	struct kiwi_rqe rqe;
	struct kiwi_mem *rqe_mem[KIWI_MAX_SGE];
	u32 rqe_len;
	bool have_rqe;
	struct kiwi_mem *tmem;
	u64 to;
	u32 write_bytes;
	bool imm_pending;
	u32 imm_data;
	bool answer_due;
};

/**
 * kiwi_fpdu_reset() - start a new stream: first FPDU, first messages
 * @rx: the engine
 * @check_crc: whether the connection negotiated MPA CRCs; @rx->hold_buf must
 *	then be allocated
 */
void kiwi_fpdu_reset(struct kiwi_rx *rx, bool check_crc);

/* Wait for the next FPDU's length field. */
void kiwi_fpdu_next(struct kiwi_rx *rx);

/**
 * kiwi_fpdu_recv() - consume the next @len bytes of the stream
 * @rx: the engine; nothing happens once its state is KIWI_RX_DEAD
 * @arg: passed to the supplied functions (the module: the QP)
 * @src: where the bytes are (the module: an skb), for kiwi_fpdu_copy(),
 *	kiwi_fpdu_crc() and kiwi_fpdu_place()
 * @off: offset of the first byte in @src
 * @len: number of bytes; any number, FPDUs may start and end anywhere
 *
 * Return: 0 when every byte was taken (or the engine is dead), or the
 * Terminate code of a violation, which stops it where it is: the caller
 * sends the Terminate (kiwi_fpdu_term()) and sets KIWI_RX_DEAD.
 */
u32 kiwi_fpdu_recv(struct kiwi_rx *rx, void *arg, const void *src,
		   unsigned int off, unsigned int len);

/**
 * kiwi_fpdu_term() - the Terminate for a violation in the current FPDU
 * @rx: the engine, as kiwi_fpdu_recv() left it
 * @tc: the Terminate code
 * @t: set up for kiwi_term_build(): its flags as RFC 5040 Fig. 10 asks,
 *	and the headers to echo, pointing into @rx->hdr. Only headers of
 *	this FPDU that are in whole are echoed (@rx->ddp may still describe
 *	an earlier FPDU while the headers are being collected).
 */
void kiwi_fpdu_term(const struct kiwi_rx *rx, u32 tc, struct kiwi_term *t);

/*
 * Supplied by the user of this file. Each returns 0 or a Terminate code
 * (kiwi_fpdu_copy(): nonzero when the bytes cannot be read;
 * kiwi_fpdu_crc(): the CRC).
 *
 * kiwi_fpdu_copy() copies @len stream bytes at @off in @src to @dst.
 *
 * kiwi_fpdu_crc() adds @len stream bytes at @off in @src to the CRC32c
 * @crc (kiwi_crc32c_update() over them) and returns it.
 *
 * kiwi_fpdu_start() checks a new segment against the connection's state
 * once its headers passed kiwi_ddp_parse() and, untagged, the MSN and MO
 * checks: for a tagged segment the sink buffer (STag and bounds, and a
 * Read Response against the Read it answers), for a Send the receive WQE,
 * taken when there is none yet, whose capacity it sets in @rx->rqe_len.
 * RFC 7306 Immediate Data is checked as a Send of no payload (it may
 * take a receive WQE). Read Requests, Terminates and Atomic Requests and
 * Responses need nothing: it is not called for them.
 * With @rx->check_crc it is called only once the FPDU's CRC matched.
 *
 * kiwi_fpdu_place() places @len payload bytes at @off in @src, or, when
 * @src is NULL, at @rx->hold_buf + @off: a tagged segment's at @rx->to on, a
 * Send's at message offset @rx->mo, which kiwi_fpdu_recv() advances.
 *
 * kiwi_fpdu_end() acts on a whole segment whose CRC was checked; it may
 * set KIWI_RX_DEAD (a Terminate came in: nothing more is read). The MSN,
 * and MO of a Send, move on after it.
 */
int kiwi_fpdu_copy(const void *src, unsigned int off, void *dst,
		   unsigned int len);
u32 kiwi_fpdu_crc(const void *src, unsigned int off, unsigned int len,
		  u32 crc);
u32 kiwi_fpdu_start(struct kiwi_rx *rx, void *arg);
u32 kiwi_fpdu_place(struct kiwi_rx *rx, void *arg, const void *src,
		    unsigned int off, unsigned int len);
u32 kiwi_fpdu_end(struct kiwi_rx *rx, void *arg);

#endif /* _KIWI_FPDU_H */
