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

#endif /* KIWI_ABI_USER_H */
