/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TAP test points of the kiwi selftest programs: check() prints one, n
 * counts them and failed the ones that failed; main() prints the plan
 * ("1..n") and exits non-zero when failed is.
 */
#ifndef KIWI_TAP_H
#define KIWI_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int n, failed;

static void check(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	n++;
	if (!ok)
		failed++;
	printf("%sok %d ", ok ? "" : "not ", n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

#endif /* KIWI_TAP_H */
