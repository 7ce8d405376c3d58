// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: work queue entries as the kernel reads them out of
 * the rings libkiwi shares with it (kiwi_wqe.c, which kiwi_tx.c and
 * kiwi_rx.c call). The input is a send queue entry and a receive queue
 * entry (128 bytes each, any bytes at all: user space writes them) and the
 * queue's limits. Whatever kiwi_sqe_check() accepts must keep the
 * transmit engine inside the entry (inline data within sge[], SGEs within
 * the array and max_sge) and be an operation this ring may carry; and
 * placing a message into a checked receive entry, offset by offset, must
 * land inside one SGE each time, in order, and only within their total.
 */
#include "fuzz_common.h"
#include "kiwi_wqe.h"

#define WQE_CFG_LEN	4

static void check_sqe(const struct kiwi_sqe *c, bool user, u32 max_sge,
		      u32 max_inline)
{
	enum kiwi_sqe_verdict v = kiwi_sqe_check(c, user, max_sge, max_inline);
	bool read = c->opcode == KIWI_WR_RDMA_READ ||
		    c->opcode == KIWI_WR_READ_INV;

	ASSERT(v == KIWI_SQE_OK || v == KIWI_SQE_BAD_OP ||
	       v == KIWI_SQE_BAD_LEN);
	if (c->opcode > KIWI_WR_SEND_IMM)
		ASSERT(v == KIWI_SQE_BAD_OP);
	if (v != KIWI_SQE_OK)
		return;

	/* An atomic's original value lands in one local SGE of 8 bytes. */
	if (c->opcode == KIWI_WR_ATOMIC_CMP_SWP ||
	    c->opcode == KIWI_WR_ATOMIC_FETCH_ADD)
		ASSERT(c->num_sge == 1 && c->atomic_sge.length == 8 &&
		       !(c->flags & KIWI_WQE_INLINE));

	/* A user ring carries no kernel-only operation. */
	if (user)
		ASSERT(c->opcode != KIWI_WR_REG_MR &&
		       c->opcode != KIWI_WR_READ_INV);
	/* A Read has at most its one sink SGE, and never inline data. */
	if (read)
		ASSERT(c->num_sge <= 1 && !(c->flags & KIWI_WQE_INLINE));
	if (!kiwi_sqe_has_payload(c)) {
		ASSERT(c->opcode == KIWI_WR_REG_MR ||
		       c->opcode == KIWI_WR_LOCAL_INV ||
		       c->opcode == KIWI_WR_BIND_MW);
		return;
	}
	if (c->flags & KIWI_WQE_INLINE) {
		/* kiwi_tx.c sends inline_len bytes from sge[] */
		ASSERT(c->inline_len <= max_inline);
		ASSERT(c->inline_len <= sizeof(c->sge));
		return;
	}
	/* kiwi_tx.c walks sge[0 .. num_sge) */
	ASSERT(c->num_sge <= max_sge && c->num_sge <= KIWI_MAX_SGE);
}

static void check_rqe(const struct kiwi_rqe *r, u32 max_sge, const u8 *cuts,
		      size_t ncuts)
{
	u64 total = 0;
	u32 pos = 0, at;
	unsigned int i;
	size_t k;
	int idx;

	if (!kiwi_rqe_check(r, max_sge)) {
		ASSERT(r->num_sge > max_sge);
		return;
	}
	ASSERT(r->num_sge <= KIWI_MAX_SGE);
	for (i = 0; i < r->num_sge; i++)
		total += r->sge[i].length;

	/* Offsets beyond the SGEs are found in none. */
	if (total <= 0xffffffffull)
		ASSERT(kiwi_sge_find(r->sge, r->num_sge, (u32)total, &at) < 0);

	/* A message placed in pieces: each lands inside one SGE, in order. */
	for (k = 0; k < ncuts && pos < total; k++) {
		u32 want = cuts[k] * 97u + 1, before = 0;

		idx = kiwi_sge_find(r->sge, r->num_sge, pos, &at);
		ASSERT(idx >= 0 && (unsigned int)idx < r->num_sge);
		ASSERT(at < r->sge[idx].length);
		for (i = 0; i < (unsigned int)idx; i++) {
			ASSERT(before + r->sge[i].length >= before);
			before += r->sge[i].length;
		}
		ASSERT(before + at == pos);
		if (want > r->sge[idx].length - at)
			want = r->sge[idx].length - at;
		if ((u64)pos + want > 0xffffffffull)
			break;
		pos += want;
	}
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct kiwi_sqe sqe;
	struct kiwi_rqe rqe;
	u32 max_sge, max_inline;
	bool user;

	if (size < WQE_CFG_LEN + sizeof(sqe) + sizeof(rqe))
		return 0;
	/* The limits kiwi_create_qp() allows: max_sge, max_inline capped */
	user = data[0] & 1;
	max_sge = data[1] % (KIWI_MAX_SGE + 1);
	max_inline = data[2] % (KIWI_MAX_INLINE + 1);
	memcpy(&sqe, data + WQE_CFG_LEN, sizeof(sqe));
	memcpy(&rqe, data + WQE_CFG_LEN + sizeof(sqe), sizeof(rqe));
	check_sqe(&sqe, user, max_sge, max_inline);
	check_rqe(&rqe, data[3] % (KIWI_MAX_SGE + 1),
		  data + WQE_CFG_LEN + sizeof(sqe) + sizeof(rqe),
		  size - WQE_CFG_LEN - sizeof(sqe) - sizeof(rqe));
	return 0;
}
