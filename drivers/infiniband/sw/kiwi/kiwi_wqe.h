/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: the checks of work queue entries the kernel reads out of rings
 * that user space writes (include/uapi/rdma/kiwi-abi.h), and where a
 * message offset falls in a receive WQE's buffers.
 *
 * Plain C like kiwi_wire.c, fuzzed on the host (tools/fuzz/fuzz_wqe.c).
 * Every function takes a copy of the entry the caller made: user space
 * may rewrite the ring at any time, the copy is what is checked and used.
 * Memory (lkeys, bounds, rights) is the caller's to check.
 */
#ifndef _KIWI_WQE_H
#define _KIWI_WQE_H

#include <rdma/kiwi-abi.h>

#include "kiwi_wire_shim.h"

enum kiwi_sqe_verdict {
	KIWI_SQE_OK = 0,
	KIWI_SQE_BAD_OP,	/* unknown, or not from this ring */
	KIWI_SQE_BAD_LEN,	/* too many SGEs, or inline data too long */
};

/**
 * kiwi_sqe_check() - check a send queue entry's opcode and lengths
 * @c: the entry, copied out of the ring
 * @user: it comes from a user QP's ring (libkiwi), not a kernel consumer
 * @max_sge: the send queue's max_sge (at most KIWI_MAX_SGE)
 * @max_inline: the QP's max_inline (at most KIWI_MAX_INLINE)
 *
 * Fast-register and Read with Invalidate come from kernel consumers only;
 * a Read has at most one (sink) SGE and no inline data; an atomic exactly
 * one SGE of 8 bytes (else KIWI_SQE_BAD_LEN, also when @max_sge is 0).
 * Entries without payload (fast-register, local invalidate, bind) pass on
 * their opcode.
 *
 * Return: KIWI_SQE_OK, KIWI_SQE_BAD_OP or KIWI_SQE_BAD_LEN. With
 * KIWI_SQE_OK an inline entry's data is in @c->sge, and @c->num_sge of
 * any other entry with payload is at most @max_sge.
 */
enum kiwi_sqe_verdict kiwi_sqe_check(const struct kiwi_sqe *c, bool user,
				     u32 max_sge, u32 max_inline);

/* An RFC 7306 atomic: one local 8-byte SGE, takes an ORD slot. */
bool kiwi_sqe_is_atomic(u8 opcode);

/* Whether a send queue entry's opcode moves data (kiwi_sqe_check() it). */
bool kiwi_sqe_has_payload(const struct kiwi_sqe *c);

/**
 * kiwi_rqe_check() - check a receive (or SRQ) entry
 * @r: the entry, copied out of the ring
 * @max_sge: the receive queue's or SRQ's max_sge (at most KIWI_MAX_SGE)
 *
 * Return: true when its @r->num_sge SGEs are within @max_sge.
 */
bool kiwi_rqe_check(const struct kiwi_rqe *r, u32 max_sge);

/**
 * kiwi_sge_find() - where a message offset lies in a list of SGEs
 * @sge: the SGEs
 * @num: their number, checked (kiwi_sqe_check(), kiwi_rqe_check())
 * @pos: the offset
 * @off: set to the offset within the SGE found
 *
 * Return: the index of the SGE, or -1 when @pos is beyond them all.
 */
int kiwi_sge_find(const struct kiwi_sge *sge, unsigned int num, u32 pos,
		  u32 *off);

#endif /* _KIWI_WQE_H */
