// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test (no VM): the layouts both sides of kiwi's ABIs rely on.
 *
 * - include/uapi/rdma/kiwi-abi.h must be self-contained in user space and
 *   keep its structures' sizes and offsets (the kernel was built with them).
 * - KIWI_DRIVER_ID must not collide with any driver id the kernel headers
 *   on this machine define.
 * - userspace/verbs_pabi.h must match the layout of libibverbs' private ABI
 *   34 as rdma-core 44 and 56 define it (offsets taken from there).
 *
 * Prints TAP.
 */
#include <rdma/kiwi-abi.h>	/* first: proves it is self-contained */

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "../verbs_pabi.h"

static int n, failed;

static void expect(int cond, const char *what)
{
	n++;
	if (!cond)
		failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n, what);
}

#define EXPECT_EQ(a, b) do {						\
	char _d[160];							\
	snprintf(_d, sizeof(_d), "%s == %s (got %zu)", #a, #b,		\
		 (size_t)(a));						\
	expect((size_t)(a) == (size_t)(b), _d);				\
} while (0)

int main(void)
{
	printf("TAP version 13\n");

	EXPECT_EQ(sizeof(struct kiwi_alloc_ucontext_req), 8);
	EXPECT_EQ(offsetof(struct kiwi_alloc_ucontext_req, abi_version), 0);
	EXPECT_EQ(offsetof(struct kiwi_alloc_ucontext_req, reserved), 4);
	EXPECT_EQ(sizeof(struct kiwi_alloc_ucontext_resp), 8);
	EXPECT_EQ(sizeof(struct kiwi_sge), 16);
	EXPECT_EQ(sizeof(struct kiwi_sqe), 128);
	EXPECT_EQ(offsetof(struct kiwi_sqe, sge), 32);
	EXPECT_EQ(sizeof(struct kiwi_rqe), 128);
	EXPECT_EQ(offsetof(struct kiwi_rqe, sge), 16);
	EXPECT_EQ(sizeof(struct kiwi_cqe), 32);
	EXPECT_EQ(offsetof(struct kiwi_cqe, bytes), 12);
	EXPECT_EQ(sizeof(struct kiwi_cq_ctrl), 8);
	EXPECT_EQ(sizeof(struct kiwi_sq_ctrl), 8);
	EXPECT_EQ(sizeof(struct kiwi_create_cq_req), 16);
	EXPECT_EQ(sizeof(struct kiwi_create_qp_req), 24);
	EXPECT_EQ(sizeof(struct kiwi_create_qp_resp), 16);
	EXPECT_EQ(sizeof(struct kiwi_create_srq_req), 16);
	EXPECT_EQ(offsetof(struct kiwi_create_srq_req, num_rqe), 8);
	EXPECT_EQ(sizeof(struct kiwi_create_srq_resp), 8);
	EXPECT_EQ(KIWI_MAX_INLINE, 96);
	EXPECT_EQ(KIWI_WR_BIND_MW, 6);
	EXPECT_EQ(KIWI_WQE_BIND_TYPE1, 64);
	EXPECT_EQ(KIWI_ABI_VERSION, 1);
	expect(KIWI_DRIVER_ID > RDMA_DRIVER_ERDMA + 1000,
	       "KIWI_DRIVER_ID lies far above the kernel's driver ids");
	/* Neither a PCI vendor id nor an OUI the IEEE assigns (group bit). */
	EXPECT_EQ(KIWI_VENDOR_ID, 0x6b6977);
	expect(KIWI_VENDOR_ID > 0xffff && ((KIWI_VENDOR_ID >> 16) & 1),
	       "KIWI_VENDOR_ID is wider than 16 bits and has the group bit set");

	/* struct verbs_context_ops: 76 pointers in alphabetical order. */
	EXPECT_EQ(sizeof(struct verbs_context_ops), 76 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, alloc_pd), 5 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, alloc_mw), 2 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, bind_mw), 10 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, dealloc_mw), 25 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, dealloc_pd), 26 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, free_context), 39 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, query_device_ex), 58 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, query_port), 60 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, create_cq), 15 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, create_qp), 19 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, create_cq_ex), 16 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, create_qp_ex), 20 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, destroy_cq), 31 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, destroy_qp), 34 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, modify_qp), 47 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, poll_cq), 53 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, post_recv), 54 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, post_send), 55 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, query_qp), 61 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, create_srq), 22 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, destroy_srq), 36 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, modify_srq), 49 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, post_srq_recv), 57 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, query_srq), 64 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, req_notify_cq), 69 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, dereg_mr), 28 * sizeof(void *));
	EXPECT_EQ(offsetof(struct verbs_context_ops, reg_mr), 68 * sizeof(void *));

	/* struct verbs_mr: ibv_mr, then mr_type and access (x86-64 LP64). */
	EXPECT_EQ(sizeof(struct ibv_mr), 48);
	EXPECT_EQ(offsetof(struct verbs_mr, ibv_mr), 0);
	EXPECT_EQ(offsetof(struct verbs_mr, mr_type), 48);
	EXPECT_EQ(offsetof(struct verbs_mr, access), 52);
	EXPECT_EQ(sizeof(struct verbs_mr), 56);
	EXPECT_EQ(IBV_MR_TYPE_MR, 0);
	EXPECT_EQ(IBV_MR_TYPE_DMABUF_MR, 3);

	/*
	 * struct verbs_qp: libibverbs' ibv_qp_to_qp_ex() reads comp_mask right
	 * behind the public struct ibv_qp_ex; struct verbs_cq is the public CQ.
	 */
	EXPECT_EQ(offsetof(struct verbs_qp, qp), 0);
	EXPECT_EQ(offsetof(struct verbs_qp, qp_ex.qp_base), 0);
	EXPECT_EQ(offsetof(struct verbs_qp, comp_mask), sizeof(struct ibv_qp_ex));
	EXPECT_EQ(offsetof(struct verbs_qp, xrcd),
		  (sizeof(struct ibv_qp_ex) + sizeof(uint32_t) + 7) & ~7ul);
	EXPECT_EQ(VERBS_QP_EX, 2);
	EXPECT_EQ(offsetof(struct verbs_cq, cq), 0);
	EXPECT_EQ(sizeof(struct verbs_cq), sizeof(struct ibv_cq_ex));

	/* struct verbs_device_ops and struct verbs_device (x86-64 LP64). */
	EXPECT_EQ(offsetof(struct verbs_device_ops, match_table), 16);
	EXPECT_EQ(offsetof(struct verbs_device_ops, alloc_context), 40);
	EXPECT_EQ(offsetof(struct verbs_device_ops, alloc_device), 56);
	EXPECT_EQ(sizeof(struct verbs_device_ops), 72);
	EXPECT_EQ(offsetof(struct verbs_device, ops), sizeof(struct ibv_device));
	EXPECT_EQ(sizeof(struct verbs_device), sizeof(struct ibv_device) + 48);
	EXPECT_EQ(sizeof(struct verbs_match_ent), 24);
	EXPECT_EQ(offsetof(struct verbs_match_ent, kind), 20);

	/* Command buffers: uverbs header then the core payload. */
	EXPECT_EQ(sizeof(struct ibv_get_context), 16);
	EXPECT_EQ(sizeof(struct ibv_alloc_pd), 16);
	EXPECT_EQ(sizeof(struct ibv_alloc_mw), 8 + sizeof(struct ib_uverbs_alloc_mw));
	EXPECT_EQ(sizeof(struct ibv_alloc_mw), 24);
	EXPECT_EQ(sizeof(struct ibv_query_port), 24);
	EXPECT_EQ(sizeof(struct ibv_create_cq), 8 + sizeof(struct ib_uverbs_create_cq));
	EXPECT_EQ(sizeof(struct ibv_create_qp), 8 + sizeof(struct ib_uverbs_create_qp));
	EXPECT_EQ(sizeof(struct ibv_modify_qp), 8 + sizeof(struct ib_uverbs_modify_qp));
	EXPECT_EQ(sizeof(struct ibv_reg_mr), 8 + sizeof(struct ib_uverbs_reg_mr));
	EXPECT_EQ(sizeof(struct ibv_reg_mr), 48);
	EXPECT_EQ(offsetof(struct ibv_reg_mr, core_payload.access_flags), 44);
	EXPECT_EQ(sizeof(struct ib_uverbs_reg_mr_resp), 12);
	EXPECT_EQ(sizeof(struct ibv_create_srq), 8 + sizeof(struct ib_uverbs_create_srq));
	EXPECT_EQ(sizeof(struct ibv_create_srq), 40);
	EXPECT_EQ(sizeof(struct ibv_modify_srq), 8 + sizeof(struct ib_uverbs_modify_srq));
	EXPECT_EQ(sizeof(struct ibv_query_srq), 8 + sizeof(struct ib_uverbs_query_srq));
	EXPECT_EQ(sizeof(struct ib_uverbs_create_srq_resp), 16);

	printf("1..%d\n", n);
	return failed ? 1 : 0;
}
