/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi_ktest: TAP reporting of the kernel test modules. Their cases run
 * at load time and print "MODULE: ok N - case: what" through the kernel
 * log; kt_end() prints the plan and fails the load if any point failed.
 * ktest_run in lib.sh re-emits the lines. Include after defining pr_fmt.
 */
#ifndef _KIWI_KTEST_H
#define _KIWI_KTEST_H

#include <linux/kernel.h>
#include <linux/printk.h>

struct ib_device;

/**
 * struct kt - the state of one module's run
 * @ibdev: the device the cases run on, where there is just one
 * @name: the running case, in front of each point's description
 * @n: points so far
 * @failed: points that failed
 */
struct kt {
	struct ib_device *ibdev;
	const char *name;
	int n;
	int failed;
};

/* One TAP test point; returns @ok so a case can stop on a failure. */
static inline __printf(3, 4) bool kt_check(struct kt *kt, bool ok,
					   const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	kt->n++;
	if (!ok)
		kt->failed++;
	pr_info("%sok %d - %s: %pV\n", ok ? "" : "not ", kt->n, kt->name,
		&vaf);
	va_end(args);
	return ok;
}

static inline void kt_begin(void)
{
	pr_info("TAP version 13\n");
}

/* The plan and a summary. Return: the load's result. */
static inline int kt_end(const struct kt *kt)
{
	pr_info("1..%d\n", kt->n);
	pr_info("# %d of %d failed\n", kt->failed, kt->n);
	return kt->failed ? -EINVAL : 0;
}

#endif /* _KIWI_KTEST_H */
