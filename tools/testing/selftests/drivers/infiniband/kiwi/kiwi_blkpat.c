// SPDX-License-Identifier: GPL-2.0
/*
 * Write and verify a checkable pattern on a block device or file. The
 * storage tests use it to prove that every write a ULP reported as done
 * reads back intact, also across faults:
 *
 *   kiwi_blkpat write PATH --seed S --chunks N [--chunk BYTES] [--first I]
 *               [--log FILE] [--direct] [--keep-going] [--stop FILE]
 *	Write chunks I .. I+N-1, each a pseudo-random block derived from
 *	(seed, chunk index), at offset index * chunk, with O_DSYNC (and
 *	O_DIRECT with --direct). A chunk's index is appended to the log once
 *	its write returned, so the log lists exactly the chunks the kernel
 *	reported as written. With --keep-going a failed write is reported and
 *	the next chunk tried (a fault is expected); without, the first failure
 *	ends the run with status 1. With --stop the run ends before the next
 *	chunk once FILE exists.
 *
 *   kiwi_blkpat verify PATH --seed S (--chunks N [--first I] | --log FILE)
 *		[--chunk BYTES] [--direct]
 *	Read the chunks back and compare: prints the number checked and each
 *	mismatch; status 1 when a chunk differs or cannot be read, or none
 *	was checked.
 *
 * A C program, not a script: the storage tests start it dozens of times,
 * and an interpreter's start-up costs seconds in an emulated debug kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct args {
	const char *path, *log, *stop;
	long long seed, first, chunks, chunk;
	bool direct, keep_going;
};

/* splitmix64: a distinct stream per (seed, index). */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The pattern of chunk @index: a readable head, then pseudo-random bytes. */
static void block(uint8_t *buf, const struct args *a, long long index)
{
	uint64_t s = (uint64_t)a->seed * 1000003u + (uint64_t)index, v;
	int head = snprintf((char *)buf, a->chunk, "kiwi %10lld %10lld ",
			    a->seed, index);

	for (long long i = head; i < a->chunk; i += 8) {
		v = next(&s);
		memcpy(buf + i, &v, a->chunk - i < 8 ? a->chunk - i : 8);
	}
}

static int open_path(const struct args *a, bool write)
{
	int flags = write ? O_RDWR | O_DSYNC : O_RDONLY;
	int fd;

	if (a->direct)
		flags |= O_DIRECT;
	fd = open(a->path, flags);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", a->path, strerror(errno));
		exit(1);
	}
	return fd;
}

static uint8_t *aligned(long long size)
{
	void *p;

	if (posix_memalign(&p, 4096, size)) {
		fprintf(stderr, "no memory for a %lld-byte buffer\n", size);
		exit(1);
	}
	return p;
}

static int do_write(const struct args *a)
{
	int fd = open_path(a, true);
	uint8_t *buf = aligned(a->chunk);
	FILE *log = NULL;
	long long written = 0, failed = 0;

	if (a->log) {
		log = fopen(a->log, "a");
		if (!log) {
			fprintf(stderr, "%s: %s\n", a->log, strerror(errno));
			return 1;
		}
	}
	for (long long i = a->first; i < a->first + a->chunks; i++) {
		ssize_t n;

		if (a->stop && access(a->stop, F_OK) == 0)
			break;
		block(buf, a, i);
		n = pwrite(fd, buf, a->chunk, i * a->chunk);
		if (n != a->chunk) {
			failed++;
			if (n < 0)
				fprintf(stderr, "chunk %lld: write failed: %s\n", i,
					strerror(errno));
			else
				fprintf(stderr, "chunk %lld: write failed: %zd bytes written\n",
					i, n);
			if (!a->keep_going)
				return 1;
			usleep(200000);
			continue;
		}
		written++;
		if (log) {
			fprintf(log, "%lld\n", i);
			fflush(log);
		}
	}
	printf("wrote %lld chunks of %lld bytes, %lld writes failed\n", written,
	       a->chunk, failed);
	return 0;
}

static int cmp_ll(const void *x, const void *y)
{
	long long a = *(const long long *)x, b = *(const long long *)y;

	return (a > b) - (a < b);
}

/* The distinct chunk indices of a write's log, sorted; their number in @n. */
static long long *read_log(const char *path, long long *n)
{
	FILE *f = fopen(path, "r");
	long long *v = NULL, x, cap = 0, k = 0;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		exit(1);
	}
	while (fscanf(f, "%lld", &x) == 1) {
		if (k == cap) {
			cap = cap ? 2 * cap : 1024;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				exit(1);
		}
		v[k++] = x;
	}
	fclose(f);
	if (k)
		qsort(v, k, sizeof(*v), cmp_ll);
	*n = 0;
	for (long long i = 0; i < k; i++)
		if (!*n || v[*n - 1] != v[i])
			v[(*n)++] = v[i];
	return v;
}

static int do_verify(const struct args *a)
{
	int fd = open_path(a, false);
	uint8_t *buf = aligned(a->chunk), *want = malloc(a->chunk);
	long long *list = NULL, n = a->chunks, bad = 0;

	if (!want)
		return 1;
	if (a->log)
		list = read_log(a->log, &n);
	for (long long k = 0; k < n; k++) {
		long long i = list ? list[k] : a->first + k;
		ssize_t got = pread(fd, buf, a->chunk, i * a->chunk);

		if (got < 0) {
			printf("chunk %lld: read failed: %s\n", i, strerror(errno));
			bad++;
			continue;
		}
		block(want, a, i);
		if (got != a->chunk || memcmp(buf, want, a->chunk)) {
			printf("chunk %lld: differs (read %zd bytes, starts \"%.24s\")\n",
			       i, got, got > 0 ? (char *)buf : "");
			bad++;
		}
	}
	printf("verified %lld chunks of %lld bytes, %lld bad\n", n, a->chunk, bad);
	return bad || !n;
}

static void usage(const char *why)
{
	fprintf(stderr, "kiwi_blkpat: %s\n"
		"usage: kiwi_blkpat write PATH --seed S --chunks N [--chunk BYTES] [--first I]\n"
		"                   [--log FILE] [--direct] [--keep-going] [--stop FILE]\n"
		"       kiwi_blkpat verify PATH --seed S (--chunks N [--first I] | --log FILE)\n"
		"                   [--chunk BYTES] [--direct]\n", why);
	exit(2);
}

static long long number(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		usage("a count, index or size must be a number of 0 or more");
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "chunk", required_argument, NULL, 'b' },
		{ "first", required_argument, NULL, 'f' },
		{ "chunks", required_argument, NULL, 'n' },
		{ "log", required_argument, NULL, 'l' },
		{ "stop", required_argument, NULL, 'x' },
		{ "direct", no_argument, NULL, 'd' },
		{ "keep-going", no_argument, NULL, 'k' },
		{ }
	};
	struct args a = { .seed = -1, .chunk = 65536 };
	bool write = false;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			a.seed = number(optarg);
			break;
		case 'b':
			a.chunk = number(optarg);
			break;
		case 'f':
			a.first = number(optarg);
			break;
		case 'n':
			a.chunks = number(optarg);
			break;
		case 'l':
			a.log = optarg;
			break;
		case 'x':
			a.stop = optarg;
			break;
		case 'd':
			a.direct = true;
			break;
		case 'k':
			a.keep_going = true;
			break;
		default:
			usage("unknown option");
		}
	}
	if (argc - optind != 2)
		usage("an operation and a path are needed");
	if (!strcmp(argv[optind], "write"))
		write = true;
	else if (strcmp(argv[optind], "verify"))
		usage("the operation is write or verify");
	a.path = argv[optind + 1];
	if (a.seed < 0)
		usage("--seed is needed");
	if (!a.chunk || a.chunk % 4096)
		usage("--chunk must be a multiple of 4096");
	if (write)
		return do_write(&a);
	if (!a.log && !a.chunks)
		usage("verify needs --chunks or --log");
	return do_verify(&a);
}
