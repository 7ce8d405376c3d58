/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TAP output for kiwi's user-space test programs, through the kernel
 * selftests' kselftest.h: numbered points ("ok N ..." / "not ok N ..."),
 * "# SKIP" points, comments, the plan "1..N" (last, unless given up front)
 * and kselftest's totals. One program, one stream.
 */
#ifndef KIWI_TEST_H
#define KIWI_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>

#include <infiniband/verbs.h>

#define KT_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* "TAP version 13"; stdout becomes line-buffered so points interleave. */
void kt_start(void);

/* Announce the plan first; kt_end() then does not print it again. */
void kt_plan(int points);

/* One test point, passing when @ok; returns @ok. */
bool check(bool ok, const char *fmt, ...) KT_PRINTF(2, 3);

/* One point that was not run, and why. */
void skip(const char *fmt, ...) KT_PRINTF(1, 2);

/* A comment line: "# ...". */
void note(const char *fmt, ...) KT_PRINTF(1, 2);

/* Stop the whole run: "Bail out! ...", exit status 1. */
noreturn void bail(const char *fmt, ...) KT_PRINTF(1, 2);

/*
 * A step every later point depends on failed: a failing point naming it
 * and errno, the plan, exit status 1.
 */
noreturn void die(const char *fmt, ...) KT_PRINTF(1, 2);

/* The plan (unless announced) and the exit status: 1 if any point failed. */
int kt_end(void);

/* Points so far, and how many of them failed. */
int kt_points(void);
int kt_failures(void);

/* Device @name opened, or NULL (with a comment saying why). */
struct ibv_context *open_dev(const char *name);

/*
 * Run the shell command in environment variable @env (a script's hook,
 * such as one that stops a peer's packets); a comment if it is unset or
 * fails.
 */
void run_env(const char *env);

/* Seconds on the monotonic clock. */
double now(void);

/* Byte @i of data pattern @seed: it differs with both at every scale. */
uint8_t kt_pattern(uint32_t seed, size_t i);

/* Fill @len bytes at @p with pattern @seed as laid from offset @off. */
void kt_fill(void *p, size_t len, uint32_t seed, size_t off);

/* Offset + 1 of the first byte at @p not as kt_fill() laid it, or 0. */
size_t kt_differs(const void *p, size_t len, uint32_t seed, size_t off);

#endif /* KIWI_TEST_H */
