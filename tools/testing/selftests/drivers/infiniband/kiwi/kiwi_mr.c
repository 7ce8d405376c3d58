// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_mr: memory registration through libibverbs and libkiwi: the limits
 * query_device reports, reg_mr of malloc'ed, mmap'ed and unaligned buffers
 * with every access combination, the STag layout, exact errors for bad
 * input, STags not reused after dereg, and the RDMA core's resource view
 * ("rdma resource show mr") while registered. Prints TAP.
 *
 *   kiwi_mr DEVICE
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "kiwi_test.h"

/* What kiwi enforces (kiwi_mem.h); query_device must report the same. */
#define KIWI_MAX_MR		65536
#define KIWI_MAX_MR_SIZE	(1ULL << 36)

#define LW	IBV_ACCESS_LOCAL_WRITE
#define RW	IBV_ACCESS_REMOTE_WRITE
#define RR	IBV_ACCESS_REMOTE_READ

static long page;

/* Register; on failure return NULL with the errno libibverbs set. */
static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len, int acc)
{
	errno = 0;
	return ibv_reg_mr(pd, addr, len, acc);
}

/* reg_mr must fail with exactly @want; anything registered is undone. */
static int refused(struct ibv_pd *pd, void *addr, size_t len, int acc,
		   int want)
{
	struct ibv_mr *mr = reg(pd, addr, len, acc);
	int err = errno;

	if (mr) {
		ibv_dereg_mr(mr);
		note("registered, expected %s", strerror(want));
		return 0;
	}
	if (err != want)
		note("got %s, expected %s", strerror(err), strerror(want));
	return err == want;
}

static const char *acc_name(int acc)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "%s%s%s%s", acc & LW ? "LW " : "",
		 acc & RW ? "RW " : "", acc & RR ? "RR " : "",
		 acc ? "" : "local read only ");
	buf[strlen(buf) - 1] = 0;
	return buf;
}

/* An MR's STag as the verbs see it: one key for both, index never 0. */
static int stag_ok(const struct ibv_mr *mr)
{
	return mr->lkey == mr->rkey && (mr->lkey >> 8) != 0;
}

/*
 * Lines of "rdma resource show mr dev DEV" naming @lkey with length @len:
 * the RDMA core's own record of the MR.
 */
static int listed(const char *dev, uint32_t lkey, uint64_t len)
{
	char cmd[128], line[512], key[32], mrlen[48];
	int found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "rdma resource show mr dev %s", dev);
	snprintf(key, sizeof(key), " lkey 0x%x ", lkey);
	snprintf(mrlen, sizeof(mrlen), " mrlen %llu ", (unsigned long long)len);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = ' ';
		if (strstr(line, key) && strstr(line, mrlen))
			found++;
	}
	pclose(p);
	return found;
}

static int count_lines(const char *dev)
{
	char cmd[128], line[512];
	int lines = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "rdma resource show mr dev %s", dev);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		lines++;
	pclose(p);
	return lines;
}

/*
 * V-AMB-13: an S-RQ and a memory window (bound or not) hold their PD as
 * an MR does: dealloc_pd fails with EBUSY while one exists, works after.
 */
static void pd_holders(struct ibv_context *ctx)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_srq *srq;
	struct ibv_mw *mw;

	check(pd != NULL, "alloc a PD for an S-RQ and a window");
	if (!pd)
		return;
	errno = 0;
	srq = ibv_create_srq(pd, &sa);
	check(srq != NULL, "create an S-RQ in it (%s)",
	      srq ? "created" : strerror(errno));
	if (srq) {
		check(ibv_dealloc_pd(pd) == EBUSY,
		      "V-AMB-13 dealloc_pd while an S-RQ uses it refused with EBUSY");
		check(!ibv_destroy_srq(srq), "destroy the S-RQ");
	}
	errno = 0;
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	check(mw != NULL, "alloc a type 2 window in it (%s)",
	      mw ? "allocated" : strerror(errno));
	if (mw) {
		check(ibv_dealloc_pd(pd) == EBUSY,
		      "V-AMB-13 dealloc_pd while a memory window uses it refused with EBUSY");
		check(!ibv_dealloc_mw(mw), "dealloc the window");
	}
	check(!ibv_dealloc_pd(pd),
	      "V-AMB-13 dealloc_pd once its S-RQ and window are gone");
}

int main(int argc, char **argv)
{
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	struct ibv_mr *mr, *mr2;
	struct ibv_pd *pd;
	uint32_t stags[8];
	int nstags = 0;
	char *buf, *map;
	int acc, ok;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DEVICE\n", argv[0]);
		return 2;
	}
	page = sysconf(_SC_PAGESIZE);
	kt_start();
	ctx = open_dev(argv[1]);
	check(ctx != NULL, "open %s", argv[1]);
	if (!ctx)
		goto out;
	pd = ibv_alloc_pd(ctx);
	check(pd != NULL, "alloc PD");
	if (!pd)
		goto out;

	/* The limits reported are the ones enforced below and in ktest.sh. */
	check(!ibv_query_device(ctx, &attr), "query_device");
	check(attr.max_mr == KIWI_MAX_MR, "max_mr is %d (got %d)", KIWI_MAX_MR,
	      attr.max_mr);
	check(attr.max_mr_size == KIWI_MAX_MR_SIZE,
	      "max_mr_size is 64 GiB (got %llu)",
	      (unsigned long long)attr.max_mr_size);
	check(attr.page_size_cap == (uint64_t)page,
	      "page_size_cap is the page size (got 0x%llx)",
	      (unsigned long long)attr.page_size_cap);
	check(attr.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS,
	      "device_cap_flags has MEM_MGT_EXTENSIONS (fast-reg, invalidate)");

	/* V-ACC-4: every combination of the three rights, unaligned buffer. */
	buf = malloc(10000);
	if (!buf)
		goto out;
	memset(buf, 0x5a, 10000);
	for (acc = 0; acc < 8; acc++) {
		int a = (acc & 1 ? LW : 0) | (acc & 2 ? RW : 0) |
			(acc & 4 ? RR : 0);

		if ((a & RW) && !(a & LW)) {
			check(refused(pd, buf + 3, 9997, a, EINVAL),
			      "V-ACC-4 reg_mr %s (remote write without local write) refused with EINVAL",
			      acc_name(a));
			continue;
		}
		mr = reg(pd, buf + 3, 9997, a);
		check(mr && stag_ok(mr) && mr->addr == buf + 3 &&
		      mr->length == 9997,
		      "V-ACC-4 reg_mr %s of malloc'ed buffer at odd offset: lkey == rkey, index != 0 (%s)",
		      acc_name(a), mr ? "registered" : strerror(errno));
		if (mr) {
			stags[nstags++] = mr->lkey;
			check(!ibv_dereg_mr(mr), "dereg_mr %s", acc_name(a));
		}
	}
	ok = nstags == 6;
	for (int i = 0; i < nstags; i++)
		for (int j = 0; j < i; j++)
			if ((stags[i] >> 8) == (stags[j] >> 8))
				ok = 0;
	check(ok, "V-STAG-1 each registration after a dereg got a new STag index");

	/* V-MR-10: the same memory twice gives two independent STags. */
	mr = reg(pd, buf, 10000, LW);
	mr2 = reg(pd, buf, 10000, LW | RR);
	check(mr && mr2 && stag_ok(mr) && stag_ok(mr2) &&
	      (mr->lkey >> 8) != (mr2->lkey >> 8),
	      "V-MR-10 overlapping registrations get distinct STag indices");
	if (mr2)
		ibv_dereg_mr(mr2);

	/* V-STAG-5: dereg then register the same buffer: a new STag. */
	if (mr) {
		uint32_t old = mr->lkey;

		ibv_dereg_mr(mr);
		mr = reg(pd, buf, 10000, LW);
		check(mr && mr->lkey != old && (mr->lkey >> 8) != (old >> 8),
		      "V-STAG-5 dereg then re-register the same buffer: STag 0x%x, was 0x%x",
		      mr ? mr->lkey : 0, old);
		if (mr)
			ibv_dereg_mr(mr);
	}

	/* mmap'ed memory, registered from an offset that is not aligned. */
	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	check(map != MAP_FAILED, "mmap 3 pages");
	if (map == MAP_FAILED)
		goto out;
	mr = reg(pd, map + 123, 2 * page, LW | RW | RR);
	check(mr && stag_ok(mr) && mr->addr == map + 123,
	      "V-ADDR-2 reg_mr of mmap'ed pages from offset 123, all rights");
	if (mr)
		ibv_dereg_mr(mr);
	mr = reg(pd, map + page - 1, 2, LW);
	check(mr && stag_ok(mr),
	      "V-ADDR-2 reg_mr of 2 bytes straddling a page boundary");
	if (mr)
		ibv_dereg_mr(mr);

	/* A TO other than the address, same offset in the page. */
	errno = 0;
	mr = ibv_reg_mr_iova(pd, map + 123, page, 0x7e0000000000ULL + 123,
			     LW | RR);
	check(mr && stag_ok(mr),
	      "reg_mr_iova with an iova different from the address (%s)",
	      mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	errno = 0;
	mr = ibv_reg_mr_iova(pd, map + 123, page, 0x7e0000000000ULL, LW);
	check(!mr && errno == EINVAL,
	      "reg_mr_iova with an iova at another page offset refused with EINVAL");

	/* Read-only memory: readable MRs only. */
	check(!mprotect(map, 3 * page, PROT_READ), "mprotect the pages read-only");
	mr = reg(pd, map, page, RR);
	check(mr && stag_ok(mr), "reg_mr of read-only memory for remote read");
	if (mr)
		ibv_dereg_mr(mr);
	check(refused(pd, map, page, LW, EFAULT),
	      "reg_mr of read-only memory with local write refused with EFAULT");

	/* Lengths and addresses (V-MR-1: a failure registers nothing). */
	check(refused(pd, buf, 0, LW, EINVAL), "reg_mr of length 0 refused with EINVAL");
	check(refused(pd, buf, KIWI_MAX_MR_SIZE + 1, LW, EINVAL),
	      "reg_mr of max_mr_size + 1 bytes refused with EINVAL");
	check(refused(pd, buf, SIZE_MAX - 8, LW, EINVAL),
	      "reg_mr whose end wraps the address space refused with EINVAL");
	check(refused(pd, map, KIWI_MAX_MR_SIZE, 0, EFAULT),
	      "reg_mr of max_mr_size bytes over unmapped memory refused with EFAULT");
	check(!munmap(map + page, 2 * page), "unmap the last 2 pages");
	check(refused(pd, map + page, page, LW, EFAULT),
	      "reg_mr of unmapped memory refused with EFAULT");
	check(refused(pd, map, 2 * page, 0, EFAULT),
	      "reg_mr of memory only partly mapped refused with EFAULT");
	munmap(map, page);

	/*
	 * Remote atomic (RFC 7306 atomics, atomic.sh), like remote write,
	 * needs local write.
	 */
	mr = reg(pd, buf, 100, LW | IBV_ACCESS_REMOTE_ATOMIC);
	check(mr && stag_ok(mr), "reg_mr with remote atomic (and local write)");
	if (mr)
		ibv_dereg_mr(mr);
	check(refused(pd, buf, 100, IBV_ACCESS_REMOTE_ATOMIC, EINVAL),
	      "reg_mr with remote atomic but no local write refused with EINVAL");

	/* MW binding is granted (windows: mw.sh). */
	mr = reg(pd, buf, 100, LW | IBV_ACCESS_MW_BIND);
	check(mr && stag_ok(mr), "reg_mr with MW bind");
	if (mr)
		ibv_dereg_mr(mr);

	/* Rights kiwi does not have. */
	mr = reg(pd, buf + 5, 100, LW | IBV_ACCESS_ZERO_BASED);
	check(mr && stag_ok(mr), "V-ADDR-1: reg_mr zero-based at page offset 5 (%s)",
	      mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	check(refused(pd, buf, 100, LW | IBV_ACCESS_ON_DEMAND, EINVAL),
	      "reg_mr on demand refused with EINVAL (no ODP)");
	mr = reg(pd, buf, 100, LW | IBV_ACCESS_RELAXED_ORDERING);
	check(mr != NULL, "reg_mr with the optional relaxed-ordering hint");
	if (mr)
		ibv_dereg_mr(mr);

	/* The RDMA core's record, while registered and after. */
	{
		static const size_t lens[3] = { 4096, 8197, 100 };
		struct ibv_mr *mrs[3];
		int i, all = 1;

		check(count_lines(argv[1]) == 0, "rdma resource lists no MR yet");
		for (i = 0; i < 3; i++) {
			mrs[i] = reg(pd, buf + i, lens[i], LW | RR);
			all &= mrs[i] != NULL;
		}
		check(all, "register 3 MRs");
		if (!all)
			goto out;
		for (i = 0; i < 3; i++)
			check(listed(argv[1], mrs[i]->lkey, lens[i]) == 1,
			      "rdma resource show mr lists lkey 0x%x with mrlen %zu",
			      mrs[i]->lkey, lens[i]);
		check(count_lines(argv[1]) == 3, "rdma resource lists 3 MRs");
		errno = 0;
		check(ibv_dealloc_pd(pd) == EBUSY,
		      "dealloc_pd while MRs use it refused with EBUSY");
		for (i = 0; i < 3; i++)
			all &= !ibv_dereg_mr(mrs[i]);
		check(all, "dereg the 3 MRs");
		check(count_lines(argv[1]) == 0, "rdma resource lists no MR after dereg");
	}

	free(buf);
	check(!ibv_dealloc_pd(pd), "dealloc PD");
	pd_holders(ctx);
	check(!ibv_close_device(ctx), "close device");
out:
	return kt_end();
}
