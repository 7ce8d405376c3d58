// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: allocation failures on demand (see kiwi_fault.h). Built only with
 * CONFIG_FAULT_INJECTION.
 */

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>

#include "kiwi_fault.h"

static DECLARE_FAULT_ATTR(kiwi_fail_alloc);

/* Boot-option format of the kernel's fail* attributes, applied at load. */
static char kiwi_fail_alloc_param[64];
module_param_string(fail_alloc, kiwi_fail_alloc_param,
		    sizeof(kiwi_fail_alloc_param), 0400);
MODULE_PARM_DESC(fail_alloc,
		 "Fail kiwi's allocations from load on: interval,probability,space,times (default: empty, nothing fails; debug kernels only)");

/* Sites called at least once, newest first; a site is never removed. */
static struct kiwi_fault_site *kiwi_fault_sites;
static unsigned int kiwi_fault_nsites;
static DEFINE_SPINLOCK(kiwi_fault_lock);
/* The one site that may fail, by number; 0: any. */
static u32 kiwi_fault_only;

/* Number @site and list it. Context: any; takes kiwi_fault_lock. */
static void kiwi_fault_register(struct kiwi_fault_site *site)
{
	unsigned long flags;

	spin_lock_irqsave(&kiwi_fault_lock, flags);
	if (!site->id) {
		site->next = kiwi_fault_sites;
		kiwi_fault_sites = site;
		WRITE_ONCE(site->id, ++kiwi_fault_nsites);
	}
	spin_unlock_irqrestore(&kiwi_fault_lock, flags);
}

/**
 * kiwi_fault_check() - decide whether a guarded allocation fails
 * @site: the call site, numbered and listed on its first call
 *
 * Context: any; takes kiwi_fault_lock (a spinlock, irqsave) on a site's
 * first call only.
 * Return: true when the caller must handle its allocation as failed.
 */
bool kiwi_fault_check(struct kiwi_fault_site *site)
{
	u32 only = READ_ONCE(kiwi_fault_only);

	if (unlikely(!READ_ONCE(site->id)))
		kiwi_fault_register(site);
	atomic_inc(&site->calls);
	if (only && only != READ_ONCE(site->id))
		return false;
	if (!should_fail(&kiwi_fail_alloc, 1))
		return false;
	atomic_inc(&site->failed);
	return true;
}

static int kiwi_fault_sites_show(struct seq_file *m, void *v)
{
	struct kiwi_fault_site *s;
	unsigned long flags;

	spin_lock_irqsave(&kiwi_fault_lock, flags);
	for (s = kiwi_fault_sites; s; s = s->next)
		seq_printf(m, "%u %s:%u %d %d\n", s->id, s->func, s->line,
			   atomic_read(&s->calls), atomic_read(&s->failed));
	spin_unlock_irqrestore(&kiwi_fault_lock, flags);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kiwi_fault_sites);

/**
 * kiwi_fault_init() - arm the fault attribute and publish its knobs
 * @dir: kiwi's debugfs directory, where the knobs go
 *
 * Context: module load, before any other allocation of kiwi's.
 * Return: 0, or -EINVAL for a malformed fail_alloc parameter.
 */
int kiwi_fault_init(struct dentry *dir)
{
	struct dentry *attr;

	/* Quiet unless asked: a stack trace per failure floods the log. */
	kiwi_fail_alloc.verbose = 0;
	if (kiwi_fail_alloc_param[0] &&
	    !setup_fault_attr(&kiwi_fail_alloc, kiwi_fail_alloc_param))
		return -EINVAL;

	attr = fault_create_debugfs_attr("fail_alloc", dir, &kiwi_fail_alloc);
	if (IS_ERR(attr))
		pr_warn("kiwi: no fail_alloc knobs in debugfs (%ld)\n",
			PTR_ERR(attr));
	debugfs_create_file("fail_sites", 0444, dir, NULL,
			    &kiwi_fault_sites_fops);
	debugfs_create_u32("fail_site", 0600, dir, &kiwi_fault_only);
	return 0;
}
