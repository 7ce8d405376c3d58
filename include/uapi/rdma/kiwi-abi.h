/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * kiwi: the ABI between the kiwi kernel module and its rdma-core provider
 * (libkiwi). Every structure here crosses the user/kernel boundary through
 * ib_udata, so all fields have fixed sizes and explicit padding.
 */
#ifndef KIWI_ABI_USER_H
#define KIWI_ABI_USER_H

#include <linux/types.h>

/*
 * Version of this ABI. The kernel reports it as the device's uverbs ABI
 * version (sysfs abi_version), libkiwi binds only to a device that reports
 * the version it was built for, and both sides check it again when a user
 * context is created. Bump it on any incompatible change below.
 */
#define KIWI_ABI_VERSION 1

/*
 * Driver id reported to user space over netlink
 * (RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID). libibverbs pairs a device with a
 * provider by this id before anything else, so every kiwi device gets
 * libkiwi whatever its name, and no other device does. The value lies far
 * above the kernel's enum rdma_driver_id so it can never collide with an
 * in-tree driver.
 */
#define KIWI_DRIVER_ID 0x4b495749u /* "KIWI" */

/*
 * Vendor id the device reports (ibv_query_device(), ib_device_attr). IB
 * vendor ids are IEEE OUIs, and iWARP RNICs report their PCI vendor id;
 * kiwi has neither. This is "kiw" in ASCII: more than 16 bits, so no PCI
 * vendor id, and its first octet has the group bit set, which no OUI the
 * IEEE assigns has. A program can tell a kiwi device by it.
 */
#define KIWI_VENDOR_ID 0x6b6977u

/* libkiwi -> kernel, with IB_USER_VERBS_CMD_GET_CONTEXT. */
struct kiwi_alloc_ucontext_req {
	__u32 abi_version;	/* KIWI_ABI_VERSION the provider speaks */
	__u32 reserved;		/* must be zero */
};

/* kernel -> libkiwi, answering IB_USER_VERBS_CMD_GET_CONTEXT. */
struct kiwi_alloc_ucontext_resp {
	__u32 abi_version;	/* KIWI_ABI_VERSION the kernel speaks */
	__u32 reserved;
};

/*
 * Queues shared with user space.
 *
 * libkiwi allocates every ring (page-aligned, zeroed) in its own memory and
 * passes its address at creation; the kernel pins it and maps it into the
 * kernel. A ring is an array of a power-of-two number of entries followed
 * by a control block. Entries carry a VALID flag that hands them from
 * producer to consumer: the producer writes an entry whose VALID flag is
 * clear and sets VALID last (release); the consumer reads an entry whose
 * VALID flag is set (acquire) and clears VALID last. The kernel reads user
 * entries once and validates every field; user space can corrupt only its
 * own queues.
 */
#define KIWI_MAX_SGE		6
/*
 * A CQ's entries at most (a power of two). libfabric's ofi_rxm sizes each
 * endpoint's CQ for its universe (256 peers by default), 262144 entries,
 * and does not cap that by max_cqe.
 */
#define KIWI_MAX_CQE		262144
#define KIWI_MAX_INLINE		(KIWI_MAX_SGE * 16)	/* bytes in sge[] */

struct kiwi_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

enum kiwi_wqe_flags {
	KIWI_WQE_VALID		= 1 << 0,
	KIWI_WQE_SIGNALED	= 1 << 1,	/* completes even if the QP
						 * signals only on request
						 */
	KIWI_WQE_SOLICITED	= 1 << 2,	/* Send with Solicited Event */
	KIWI_WQE_READ_FENCE	= 1 << 3,	/* wait for prior RDMA Reads */
	KIWI_WQE_LOCAL_FENCE	= 1 << 4,	/* wait for prior WRs */
	KIWI_WQE_INLINE		= 1 << 5,	/* data in sge[], inline_len */
	KIWI_WQE_BIND_TYPE1	= 1 << 6,	/* a type 1 bind (ibv_bind_mw) */
};

enum kiwi_wr_opcode {
	KIWI_WR_RDMA_WRITE	= 0,
	KIWI_WR_RDMA_READ	= 1,
	KIWI_WR_SEND		= 2,
	KIWI_WR_SEND_INV	= 3,	/* rkey: STag to invalidate remotely */
	KIWI_WR_LOCAL_INV	= 4,	/* rkey: STag to invalidate locally */
	KIWI_WR_REG_MR		= 5,	/* kernel consumers only */
	KIWI_WR_BIND_MW		= 6,	/* see below */
	KIWI_WR_READ_INV	= 7,	/* kernel consumers only: RDMA Read,
					 * then invalidate inv_stag
					 */
	/* RFC 7306, see below */
	KIWI_WR_ATOMIC_CMP_SWP	= 8,
	KIWI_WR_ATOMIC_FETCH_ADD = 9,
	KIWI_WR_WRITE_IMM	= 10,	/* RDMA Write with immediate data */
	KIWI_WR_SEND_IMM	= 11,	/* Send with immediate data */
};

/*
 * Send queue entry (128 bytes). RDMA Write/Read: raddr and rkey name the
 * remote buffer. Inline: the data itself fills sge[] (at most
 * KIWI_MAX_INLINE bytes) and inline_len gives its length.
 *
 * Bind MW (num_sge 0): rkey is the window's new STag (its index, the new
 * key), raddr the window's first byte as an address of the MR, and bind
 * (over sge[0]) the window's length, its IBV_ACCESS_* rights and the MR's
 * lkey. A type 1 bind (flag KIWI_WQE_BIND_TYPE1) of length 0 unbinds the
 * window.
 * Register MR (kernel consumers only, never in a user ring): reg_mr is the
 * struct ib_mr to register, rkey its new key, reg_access its IB_ACCESS_*
 * rights.
 * Atomics (num_sge 1, never inline): raddr and rkey name the remote 8
 * bytes, sge[0] the local 8 bytes the original value lands in, and
 * compare_add and swap (over sge[1]) the operands as ibv_send_wr has them.
 * With immediate data: imm_data, as the consumer gave it (big-endian).
 */
struct kiwi_sqe {
	__aligned_u64 id;
	__u16 flags;
	__u8 num_sge;
	__u8 opcode;		/* enum kiwi_wr_opcode */
	__u32 rkey;
	union {
		__aligned_u64 raddr;
		__aligned_u64 reg_mr;	/* KIWI_WR_REG_MR: the kernel's MR */
	};
	union {
		__u32 inline_len;
		__u32 reg_access;	/* KIWI_WR_REG_MR: its rights */
	};
	union {
		__u32 inv_stag;	/* KIWI_WR_READ_INV's local STag */
		__u32 imm_data;	/* KIWI_WR_WRITE_IMM, KIWI_WR_SEND_IMM */
	};
	union {
		struct kiwi_sge sge[KIWI_MAX_SGE];
		struct {
			struct kiwi_sge atomic_sge;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
		};
		struct {		/* KIWI_WR_BIND_MW */
			__aligned_u64 length;
			__u32 access;
			__u32 mr_lkey;
		} bind;
	};
};

/* Receive queue entry (128 bytes). */
struct kiwi_rqe {
	__aligned_u64 id;
	__u16 flags;
	__u8 num_sge;
	__u8 reserved;
	__u32 reserved2;
	struct kiwi_sge sge[KIWI_MAX_SGE];
	__aligned_u64 reserved3[2];
};

enum kiwi_cqe_flags {
	KIWI_CQE_VALID		= 1 << 0,
	KIWI_CQE_SOLICITED	= 1 << 1,
	KIWI_CQE_INVALIDATED	= 1 << 2,	/* inval_stag is valid */
	KIWI_CQE_WITH_IMM	= 1 << 3,	/* imm_data is valid */
};

/* Completion queue entry (32 bytes). */
struct kiwi_cqe {
	__aligned_u64 id;
	__u8 flags;
	__u8 opcode;		/* enum ibv_wc_opcode (= kernel ib_wc_opcode) */
	__u8 status;		/* enum ibv_wc_status (= kernel ib_wc_status) */
	__u8 reserved;
	__u32 bytes;
	__u32 qp_num;
	union {
		__u32 inval_stag;
		__u32 imm_data;	/* big-endian, as the sender gave it */
	};
	__aligned_u64 reserved2;
};

enum kiwi_cq_notify {
	KIWI_NOTIFY_NONE	= 0,
	KIWI_NOTIFY_SOLICITED	= 1,
	KIWI_NOTIFY_NEXT	= 2,	/* any completion */
};

/* Follows the CQE array: user space arms, the kernel disarms on event. */
struct kiwi_cq_ctrl {
	__u32 notify;		/* enum kiwi_cq_notify */
	__u32 reserved;
};

/*
 * Follows the SQE array; written by the kernel, read by libkiwi: the QP's
 * state (enum ibv_qp_state, = kernel ib_qp_state) as of its last change,
 * so that posting can be refused synchronously where verbs say so.
 */
struct kiwi_sq_ctrl {
	__u32 state;
	__u32 reserved;
};

/* Bytes of a ring of @n entries of @esize bytes, control block included. */
#define KIWI_RING_BYTES(n, esize, ctrl) \
	((__u64)(n) * (esize) + sizeof(ctrl))

/* libkiwi -> kernel, with IB_USER_VERBS_CMD_CREATE_CQ. */
struct kiwi_create_cq_req {
	__aligned_u64 ring_va;	/* page-aligned CQE array + kiwi_cq_ctrl */
	__u32 num_cqe;		/* power of two, >= the cqe asked for */
	__u32 reserved;
};

struct kiwi_create_cq_resp {
	__u32 cq_id;
	__u32 num_cqe;
};

/*
 * IB_USER_VERBS_CMD_RESIZE_CQ carries the same request and response: the
 * new ring, allocated as for create. The kernel moves the queued CQEs to
 * the start of the new ring, in order, and libkiwi polls it from entry 0.
 */

/* libkiwi -> kernel, with IB_USER_VERBS_CMD_CREATE_QP. */
struct kiwi_create_qp_req {
	__aligned_u64 sq_va;	/* SQE array + kiwi_sq_ctrl */
	__aligned_u64 rq_va;	/* RQE array; 0 with an SRQ */
	__u32 num_sqe;		/* powers of two */
	__u32 num_rqe;
};

struct kiwi_create_qp_resp {
	__u32 qp_id;
	__u32 num_sqe;
	__u32 num_rqe;
	__u32 reserved;
};

/*
 * libkiwi -> kernel, with IB_USER_VERBS_CMD_CREATE_SRQ. A shared receive
 * queue is a ring of struct kiwi_rqe without control block: libkiwi posts
 * into it as into a QP's receive queue, and the receive engines of all QPs
 * on the SRQ take entries in ring order, clearing VALID as they take them.
 */
struct kiwi_create_srq_req {
	__aligned_u64 ring_va;	/* page-aligned RQE array */
	__u32 num_rqe;		/* power of two, >= max_wr */
	__u32 reserved;		/* must be zero */
};

struct kiwi_create_srq_resp {
	__u32 num_rqe;
	__u32 reserved;
};

#endif /* KIWI_ABI_USER_H */
