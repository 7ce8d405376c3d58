/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: what changed, between the kernels kiwi builds for (6.1, Debian 12,
 * and 6.12, Debian 13), in the kernel interfaces it uses. Every kernel
 * version check of the module is here; the rest of the code uses the names
 * below. Needs nothing but the kernel's own headers.
 */
#ifndef _KIWI_COMPAT_H
#define _KIWI_COMPAT_H

#include <linux/version.h>

/* 6.12 moved the unaligned accessors out of asm/. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#include <rdma/uverbs_ioctl.h>
/*
 * 6.10: create_cq takes the whole uverbs attribute bundle, NULL for a
 * kernel consumer's CQ; the driver's udata is the bundle's.
 */
#define KIWI_CQ_UARG struct uverbs_attr_bundle
static inline struct ib_udata *kiwi_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

/* 6.10: __assign_str() takes the field only; __string() named the source. */
#define kiwi_assign_str(field, src) __assign_str(field)
#else
struct ib_udata;
#define KIWI_CQ_UARG struct ib_udata
static inline struct ib_udata *kiwi_cq_udata(struct ib_udata *udata)
{
	return udata;
}

#define kiwi_assign_str(field, src) __assign_str(field, src)
#endif

#endif /* _KIWI_COMPAT_H */
