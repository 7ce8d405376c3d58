// SPDX-License-Identifier: GPL-2.0
/*
 * TAP output for kiwi's user-space test programs (see kiwi_test.h), written
 * by the kernel selftests' kselftest.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* vasprintf() */
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../../kselftest.h"
#include "kiwi_test.h"

/*
 * The points go through kselftest.h, whose counters and plan live in this
 * file alone (they are static in the header): every program reports
 * through the functions below, never through ksft_* itself.
 */

/* @fmt and @ap as one string; "?" if memory ran out. Free it. */
static char *describe(const char *fmt, va_list ap)
{
	char *s;

	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	return s ?: strdup("?");
}

void kt_start(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	ksft_print_header();
}

void kt_plan(int n)
{
	ksft_set_plan(n);
}

bool check(bool ok, const char *fmt, ...)
{
	va_list ap;
	char *d;

	va_start(ap, fmt);
	d = describe(fmt, ap);
	va_end(ap);
	ksft_test_result(ok, "%s\n", d);
	free(d);
	return ok;
}

void skip(const char *fmt, ...)
{
	va_list ap;
	char *d;

	va_start(ap, fmt);
	d = describe(fmt, ap);
	va_end(ap);
	ksft_test_result_skip("%s\n", d);
	free(d);
}

void note(const char *fmt, ...)
{
	va_list ap;
	char *d;

	va_start(ap, fmt);
	d = describe(fmt, ap);
	va_end(ap);
	ksft_print_msg("%s\n", d);
	free(d);
}

void bail(const char *fmt, ...)
{
	va_list ap;
	char *d;

	va_start(ap, fmt);
	d = describe(fmt, ap);
	va_end(ap);
	ksft_exit_fail_msg("%s\n", d);
	abort();	/* not reached: it exits */
}

void die(const char *fmt, ...)
{
	const char *err = strerror(errno);
	va_list ap;
	char *d;

	va_start(ap, fmt);
	d = describe(fmt, ap);
	va_end(ap);
	ksft_test_result_fail("%s: %s\n", d, err);
	/* Short of the plan when one was announced: that fails too. */
	if (!ksft_plan)
		ksft_set_plan(ksft_test_num());
	ksft_exit_fail();
	abort();
}

int kt_end(void)
{
	if (!ksft_plan)
		ksft_set_plan(ksft_test_num());
	ksft_print_cnts();
	fflush(stdout);
	return ksft_get_fail_cnt() || ksft_plan != ksft_test_num();
}

int kt_points(void)
{
	return ksft_test_num();
}

int kt_failures(void)
{
	return ksft_get_fail_cnt();
}

struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	if (!list) {
		note("ibv_get_device_list: %s", strerror(errno));
		return NULL;
	}
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (list[i])
		ctx = ibv_open_device(list[i]);
	if (!list[i])
		note("%s: no such verbs device", name);
	else if (!ctx)
		note("%s: ibv_open_device: %s", name, strerror(errno));
	ibv_free_device_list(list);
	return ctx;
}

void run_env(const char *env)
{
	const char *cmd = getenv(env);

	if (!cmd || system(cmd))
		note("%s (%s) failed", env, cmd ?: "unset");
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

uint8_t kt_pattern(uint32_t seed, size_t i)
{
	uint32_t x = (seed + 1) * 2654435761u ^ (uint32_t)(i / 4) * 40503u;

	return (uint8_t)(x >> (8 * (i % 4)));
}

void kt_fill(void *p, size_t len, uint32_t seed, size_t off)
{
	uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		b[i] = kt_pattern(seed, off + i);
}

size_t kt_differs(const void *p, size_t len, uint32_t seed, size_t off)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i] != kt_pattern(seed, off + i))
			return i + 1;
	return 0;
}
