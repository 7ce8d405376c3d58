// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: rings that live in user memory.
 *
 * libkiwi allocates each queue ring itself; the kernel pins the pages for
 * the queue's lifetime and maps them contiguously into the kernel with
 * vmap(). Nothing is ever mapped from the kernel into the process, so
 * tearing a device down under a running process (disassociate) leaves the
 * process with ordinary memory of its own.
 */

#include <linux/scatterlist.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>

#include "kiwi.h"
#include "kiwi_fault.h"

/**
 * kiwi_user_ring_pin() - pin and map a user ring
 * @ibdev: the device
 * @va: user address of the ring; must be page-aligned
 * @len: bytes of the ring
 * @map: filled with the pinned memory and its kernel address
 *
 * Context: process context of the owning process; sleeps.
 * Return: 0, -EINVAL for a misaligned or empty ring, or the error of
 * pinning (-EFAULT, -ENOMEM for RLIMIT_MEMLOCK) or mapping.
 */
int kiwi_user_ring_pin(struct ib_device *ibdev, u64 va, size_t len,
		       struct kiwi_user_ring *map)
{
	struct sg_page_iter iter;
	struct page **pages;
	struct ib_umem *umem;
	unsigned long n, i = 0;
	void *addr;

	if (!len || !PAGE_ALIGNED(va))
		return -EINVAL;

	umem = kiwi_fault() ? ERR_PTR(-ENOMEM) :
	       ib_umem_get(ibdev, va, len, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(umem))
		return PTR_ERR(umem);

	n = ib_umem_num_pages(umem);
	pages = kiwi_fault() ? NULL : kvmalloc_array(n, sizeof(*pages), GFP_KERNEL);
	if (!pages) {
		ib_umem_release(umem);
		return -ENOMEM;
	}
	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (i == n)
			break;
		pages[i++] = sg_page_iter_page(&iter);
	}
	addr = i == n ? vmap(pages, n, VM_MAP, PAGE_KERNEL) : NULL;
	kvfree(pages);
	if (!addr) {
		ib_umem_release(umem);
		return -ENOMEM;
	}
	map->umem = umem;
	map->addr = addr;
	return 0;
}

void kiwi_user_ring_unpin(struct kiwi_user_ring *map)
{
	if (!map->umem)
		return;
	vunmap(map->addr);
	ib_umem_release(map->umem);
	map->umem = NULL;
	map->addr = NULL;
}
