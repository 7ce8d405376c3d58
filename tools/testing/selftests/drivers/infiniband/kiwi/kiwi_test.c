// SPDX-License-Identifier: GPL-2.0
/*
 * TAP output for kiwi's user-space test programs (see kiwi_test.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiwi_test.h"

static int points, failures, planned = -1;

void kt_start(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
}

void kt_plan(int n)
{
	planned = n;
	printf("1..%d\n", n);
}

/* "[not ]ok N - " and the description; the caller ends the line. */
static void point(bool ok, const char *fmt, va_list ap)
{
	points++;
	if (!ok)
		failures++;
	printf("%sok %d - ", ok ? "" : "not ", points);
	vprintf(fmt, ap);
}

bool check(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	point(ok, fmt, ap);
	va_end(ap);
	printf("\n");
	return ok;
}

void skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	point(true, fmt, ap);
	va_end(ap);
	printf(" # SKIP\n");
}

void note(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

void bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

void die(const char *fmt, ...)
{
	const char *err = strerror(errno);
	va_list ap;

	va_start(ap, fmt);
	point(false, fmt, ap);
	va_end(ap);
	printf(": %s\n", err);
	/* Short of the plan when one was announced: that fails too. */
	if (planned < 0)
		printf("1..%d\n", points);
	exit(1);
}

int kt_end(void)
{
	if (planned < 0)
		printf("1..%d\n", points);
	else if (planned != points)
		note("planned %d points, ran %d", planned, points);
	fflush(stdout);
	return failures || (planned >= 0 && planned != points);
}

int kt_points(void)
{
	return points;
}

int kt_failures(void)
{
	return failures;
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
