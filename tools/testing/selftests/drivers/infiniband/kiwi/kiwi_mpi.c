// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_mpi: an MPI program for mpi.sh, run with Open MPI over whatever
 * transport mpirun picks (the OFI MTL on libfabric's verbs;ofi_rxm over
 * kiwi, or TCP for comparison). Every byte a rank receives is checked.
 *
 *   pingpong: ranks 0 and 1 bounce messages of 8 B to 1 MiB, each
 *	filled with a pattern of its size, iteration and sender;
 *   bandwidth: rank 0 streams a window of 1 MiB messages to rank 1,
 *	which checks each and answers every window with a byte;
 *   allreduce: every rank adds its vector of 64 Ki doubles; each checks
 *	the sum against the formula.
 *
 * With the argument "allreduce" only the allreduce runs.
 *
 * Prints "pingpong SIZE B: USEC us", "bandwidth 1048576 B: MIB MiB/s",
 * "allreduce N ranks: ok" and "end 0" from rank 0; exits 1 (and says
 * where) on the first wrong byte.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE	(1 << 20)
#define BW_WINDOW	16
#define BW_ROUNDS	8
#define AR_COUNT	(64 * 1024)

static int rank, nranks;

static void fail(const char *what, size_t at)
{
	fprintf(stderr, "rank %d: %s: wrong byte at %zu\n", rank, what, at);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static unsigned char pattern(size_t size, int iter, int from, size_t i)
{
	return (unsigned char)(i * 31 + size * 7 + iter * 13 + from * 101);
}

static void fill(unsigned char *buf, size_t size, int iter, int from)
{
	for (size_t i = 0; i < size; i++)
		buf[i] = pattern(size, iter, from, i);
}

static void verify(const unsigned char *buf, size_t size, int iter, int from,
		   const char *what)
{
	for (size_t i = 0; i < size; i++)
		if (buf[i] != pattern(size, iter, from, i))
			fail(what, i);
}

static void pingpong(unsigned char *s, unsigned char *r)
{
	int peer = !rank;

	static const size_t sizes[] = { 8, 64, 512, 4096, 65536, MAX_SIZE };

	for (unsigned int k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t size = sizes[k];
		int iters = size >= 65536 ? 20 : 200;
		double t0 = 0;

		for (int it = -2; it < iters; it++) {
			if (it == 0)
				t0 = MPI_Wtime();
			if (rank == 0) {
				fill(s, size, it, rank);
				MPI_Send(s, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
				MPI_Recv(r, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(r, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				verify(r, size, it, peer, "pingpong");
				fill(s, size, it, rank);
				MPI_Send(s, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			}
			if (rank == 0)
				verify(r, size, it, peer, "pingpong");
		}
		if (rank == 0)
			printf("pingpong %zu B: %.1f us\n", size,
			       (MPI_Wtime() - t0) * 1e6 / iters / 2);
	}
}

static void bandwidth(void)
{
	MPI_Request req[BW_WINDOW];
	unsigned char *win = malloc((size_t)BW_WINDOW * MAX_SIZE);
	char ack = 0;
	double t0 = 0;

	if (!win)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (rank == 0)
		for (int w = 0; w < BW_WINDOW; w++)
			fill(win + (size_t)w * MAX_SIZE, MAX_SIZE, w, rank);
	for (int round = -1; round < BW_ROUNDS; round++) {
		if (round == 0)
			t0 = MPI_Wtime();
		for (int w = 0; w < BW_WINDOW; w++) {
			unsigned char *b = win + (size_t)w * MAX_SIZE;

			if (rank == 0)
				MPI_Isend(b, MAX_SIZE, MPI_BYTE, 1, 2,
					  MPI_COMM_WORLD, &req[w]);
			else
				MPI_Irecv(b, MAX_SIZE, MPI_BYTE, 0, 2,
					  MPI_COMM_WORLD, &req[w]);
		}
		MPI_Waitall(BW_WINDOW, req, MPI_STATUSES_IGNORE);
		if (rank == 1) {
			for (int w = 0; w < BW_WINDOW; w++)
				verify(win + (size_t)w * MAX_SIZE, MAX_SIZE, w, 0,
				       "bandwidth");
			memset(win, 0, (size_t)BW_WINDOW * MAX_SIZE);
			MPI_Send(&ack, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
		} else {
			MPI_Recv(&ack, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		}
	}
	/* The receiver's checks are in the time: a bound, not a peak. */
	if (rank == 0)
		printf("bandwidth %d B: %.1f MiB/s\n", MAX_SIZE,
		       (double)BW_ROUNDS * BW_WINDOW / (MPI_Wtime() - t0));
	free(win);
}

static void allreduce(void)
{
	double *in = malloc(AR_COUNT * sizeof(double));
	double *out = malloc(AR_COUNT * sizeof(double));
	/* sum over ranks k of (i + k) = n * i + n (n - 1) / 2 */
	double n = nranks;

	if (!in || !out)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int i = 0; i < AR_COUNT; i++)
		in[i] = i + rank;
	MPI_Allreduce(in, out, AR_COUNT, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < AR_COUNT; i++)
		if (out[i] != n * i + n * (n - 1) / 2)
			fail("allreduce", i);
	if (rank == 0)
		printf("allreduce %d ranks: ok\n", nranks);
	free(in);
	free(out);
}

int main(int argc, char **argv)
{
	unsigned char *s, *r;

	/* Each line as it comes: a run cut short still shows how far it got. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	s = malloc(MAX_SIZE);
	r = malloc(MAX_SIZE);
	if (!s || !r || nranks < 2)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (argc < 2 || strcmp(argv[1], "allreduce")) {
		if (rank < 2)
			pingpong(s, r);
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank < 2)
			bandwidth();
		MPI_Barrier(MPI_COMM_WORLD);
	}
	allreduce();
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("end 0\n");
	free(s);
	free(r);
	MPI_Finalize();
	return 0;
}
