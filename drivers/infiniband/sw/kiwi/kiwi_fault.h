/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: allocation failures on demand, on kernels built with
 * CONFIG_FAULT_INJECTION (kiwi's debug kernel); nothing on others.
 *
 * Each allocation kiwi makes is guarded by kiwi_fault(): when kiwi's
 * "fail_alloc" fault attribute says so, the allocation is skipped and
 * handled as failed, so that every error path can be driven on demand and
 * only kiwi's own allocations fail. The attribute has the kernel's usual
 * knobs (probability, interval, times, space, verbose, task-filter; see
 * Documentation/fault-injection/fault-injection.rst) under
 * /sys/kernel/debug/kiwi/fail_alloc/, and the module parameter fail_alloc
 * ("interval,probability,space,times") arms it before the module's own
 * initialisation allocates. /sys/kernel/debug/kiwi/fail_sites lists each
 * site called so far ("number function:line calls failures"), and writing a
 * site's number to /sys/kernel/debug/kiwi/fail_site limits the attribute to
 * that site (0: every site), so that a test can fail each site in turn.
 */
#ifndef KIWI_FAULT_H
#define KIWI_FAULT_H

#include <linux/types.h>

struct dentry;

/*
 * One guarded allocation: where it is, its number (given on its first call,
 * from 1), and how often it was called and failed.
 */
struct kiwi_fault_site {
	const char *func;
	unsigned int line;
	unsigned int id;
	atomic_t calls;
	atomic_t failed;
	struct kiwi_fault_site *next;
};

#ifdef CONFIG_FAULT_INJECTION

bool kiwi_fault_check(struct kiwi_fault_site *site);
/* Its knobs go with @dir, kiwi's debugfs directory: nothing to undo. */
int kiwi_fault_init(struct dentry *dir);

/* True when the allocation right after it must be treated as failed. */
#define kiwi_fault()							\
	({								\
		static struct kiwi_fault_site kiwi_site_ = {		\
			.func = __func__, .line = __LINE__,		\
		};							\
		kiwi_fault_check(&kiwi_site_);				\
	})

#else

#define kiwi_fault() false

static inline int kiwi_fault_init(struct dentry *dir)
{
	return 0;
}

#endif

#endif
