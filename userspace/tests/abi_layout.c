// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test (no VM): the layouts both sides of kiwi's ABIs rely on.
 *
 * - include/uapi/rdma/kiwi-abi.h must be self-contained in user space and
 *   keep its structures' sizes and offsets (the kernel was built with them).
 * - KIWI_DRIVER_ID must not collide with any driver id the kernel headers
 *   on this machine define.
 * - userspace/verbs_pabi.h must match the layout of libibverbs' private ABI
 *   as each rdma-core release it knows defines it (offsets taken from
 *   there); the Makefile builds this test once per layout.
 *
 * Prints TAP.
 */
#include <rdma/kiwi-abi.h>	/* first: proves it is self-contained */

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "../verbs_pabi.h"
#include "../../tools/testing/selftests/kselftest.h"

static void expect(int cond, const char *what)
{
	ksft_test_result(cond, "%s\n", what);
}

#define EXPECT_EQ(a, b) do {						\
	char _d[160];							\
	snprintf(_d, sizeof(_d), "%s == %s (got %zu)", #a, #b,		\
		 (size_t)(a));						\
	expect((size_t)(a) == (size_t)(b), _d);				\
} while (0)

/*
 * The context operations libkiwi sets, and where each lies in struct
 * verbs_context_ops of the release this test is built for (KIWI_RDMA_CORE):
 * the number of pointers and each one's index, counted in
 * libibverbs/driver.h at the rdma-core tags v44.0, v57.0, v59.0, v62.0,
 * v64.0 and v65.0 (the releases 36 to 56 have 44's layout).
 */
#define KIWI_OPS(X) X(alloc_mw) X(alloc_pd) X(bind_mw) X(create_cq)	\
	X(create_cq_ex) X(create_qp) X(create_qp_ex) X(create_srq)	\
	X(dealloc_mw) X(dealloc_pd) X(dereg_mr) X(destroy_cq)		\
	X(destroy_qp) X(destroy_srq) X(free_context) X(modify_qp)	\
	X(modify_srq) X(poll_cq) X(post_recv) X(post_send)		\
	X(post_srq_recv) X(query_device_ex) X(query_port) X(query_qp)	\
	X(query_srq) X(reg_mr) X(req_notify_cq) X(rereg_mr) X(resize_cq)
#define OP_OFFSET(op) offsetof(struct verbs_context_ops, op),
#define OP_NAME(op) #op,
static const size_t op_offset[] = { KIWI_OPS(OP_OFFSET) };
static const char *const op_name[] = { KIWI_OPS(OP_NAME) };

#if KIWI_RDMA_CORE >= 65
#define OPS 93
static const unsigned int op_index[] = { 4, 7, 12, 18, 19, 22, 23, 25, 29,
	30, 32, 36, 39, 41, 46, 56, 58, 62, 63, 64, 66, 69, 71, 73, 76, 82, 84,
	85, 86 };
#elif KIWI_RDMA_CORE >= 64
#define OPS 83
static const unsigned int op_index[] = { 4, 7, 12, 17, 18, 21, 22, 24, 28,
	29, 31, 34, 37, 39, 44, 52, 54, 58, 59, 60, 62, 63, 65, 67, 70, 74, 76,
	77, 78 };
#elif KIWI_RDMA_CORE >= 62
#define OPS 81
static const unsigned int op_index[] = { 3, 6, 11, 16, 17, 20, 21, 23, 27,
	28, 30, 33, 36, 38, 42, 50, 52, 56, 57, 58, 60, 61, 63, 65, 68, 72, 74,
	75, 76 };
#elif KIWI_RDMA_CORE >= 59
#define OPS 79
static const unsigned int op_index[] = { 3, 6, 11, 16, 17, 20, 21, 23, 27,
	28, 30, 33, 36, 38, 41, 49, 51, 55, 56, 57, 59, 60, 62, 63, 66, 70, 72,
	73, 74 };
#else
#define OPS 76
static const unsigned int op_index[] = { 2, 5, 10, 15, 16, 19, 20, 22, 25,
	26, 28, 31, 34, 36, 39, 47, 49, 53, 54, 55, 57, 58, 60, 61, 64, 68, 69,
	70, 71 };
#endif

_Static_assert(sizeof(op_index) / sizeof(op_index[0]) ==
	       sizeof(op_offset) / sizeof(op_offset[0]), "one index per op");

int main(void)
{
	unsigned int i;

	ksft_print_header();
	ksft_print_msg("struct verbs_context_ops as rdma-core %d lays it out\n",
		       KIWI_RDMA_CORE);

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

	/* struct verbs_context_ops: pointers in alphabetical order. */
	EXPECT_EQ(sizeof(struct verbs_context_ops), OPS * sizeof(void *));
	for (i = 0; i < sizeof(op_index) / sizeof(op_index[0]); i++) {
		char what[96];

		snprintf(what, sizeof(what), "%s is pointer %u of %d (got %zu)",
			 op_name[i], op_index[i], OPS, op_offset[i] / sizeof(void *));
		expect(op_offset[i] == op_index[i] * sizeof(void *), what);
	}

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

	/* The plan last: the points are counted, not announced. */
	ksft_set_plan(ksft_test_num());
	ksft_finished();
}
