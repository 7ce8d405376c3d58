// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: checks of the work queue entries user space writes into rings
 * the kernel reads. See kiwi_wqe.h.
 */

#include "kiwi_wqe.h"

bool kiwi_sqe_has_payload(const struct kiwi_sqe *c)
{
	return c->opcode != KIWI_WR_REG_MR && c->opcode != KIWI_WR_LOCAL_INV &&
	       c->opcode != KIWI_WR_BIND_MW;
}

static bool sqe_is_read(u8 opcode)
{
	return opcode == KIWI_WR_RDMA_READ || opcode == KIWI_WR_READ_INV;
}

bool kiwi_sqe_is_atomic(u8 opcode)
{
	return opcode == KIWI_WR_ATOMIC_CMP_SWP ||
	       opcode == KIWI_WR_ATOMIC_FETCH_ADD;
}

enum kiwi_sqe_verdict kiwi_sqe_check(const struct kiwi_sqe *c, bool user,
				     u32 max_sge, u32 max_inline)
{
	switch (c->opcode) {
	case KIWI_WR_RDMA_WRITE:
	case KIWI_WR_SEND:
	case KIWI_WR_SEND_INV:
	case KIWI_WR_LOCAL_INV:
	case KIWI_WR_BIND_MW:
	case KIWI_WR_WRITE_IMM:
	case KIWI_WR_SEND_IMM:
		break;
	case KIWI_WR_ATOMIC_CMP_SWP:
	case KIWI_WR_ATOMIC_FETCH_ADD:
		/*
		 * One local SGE of exactly the 8 bytes, never inline, and
		 * only on a QP that has room for an SGE.
		 */
		if (c->flags & KIWI_WQE_INLINE || c->num_sge != 1 ||
		    c->num_sge > max_sge || c->atomic_sge.length != 8)
			return KIWI_SQE_BAD_LEN;
		return KIWI_SQE_OK;
	case KIWI_WR_RDMA_READ:
		/* One sink SGE (max_sge_rd) */
		if (c->num_sge > 1)
			return KIWI_SQE_BAD_OP;
		break;
	case KIWI_WR_READ_INV:
		if (c->num_sge > 1 || user)
			return KIWI_SQE_BAD_OP;
		break;
	case KIWI_WR_REG_MR:
		if (user)
			return KIWI_SQE_BAD_OP;
		break;
	default:
		return KIWI_SQE_BAD_OP;
	}
	if (!kiwi_sqe_has_payload(c))
		return KIWI_SQE_OK;
	if (c->flags & KIWI_WQE_INLINE)
		return c->inline_len > max_inline || sqe_is_read(c->opcode) ?
		       KIWI_SQE_BAD_LEN : KIWI_SQE_OK;
	return c->num_sge > max_sge ? KIWI_SQE_BAD_LEN : KIWI_SQE_OK;
}

bool kiwi_rqe_check(const struct kiwi_rqe *r, u32 max_sge)
{
	return r->num_sge <= max_sge;
}

int kiwi_sge_find(const struct kiwi_sge *sge, unsigned int num, u32 pos,
		  u32 *off)
{
	unsigned int i;

	for (i = 0; i < num; i++) {
		if (pos < sge[i].length) {
			*off = pos;
			return i;
		}
		pos -= sge[i].length;
	}
	return -1;
}
