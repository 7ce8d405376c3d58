/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the user-space verbs tests: TAP test points and
 * opening a device by name. Each program counts its points in n and its
 * failures in failed, and prints the plan "1..n" at the end.
 */
#ifndef KIWI_TAP_H
#define KIWI_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

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

static inline struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

#endif
