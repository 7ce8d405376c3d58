// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: memory registration - the STag table, memory regions (user, DMA and
 * fast-register), their checks and data access for the engines, and
 * invalidation. See kiwi_mem.h for the model.
 *
 * Locking and contexts:
 * - Lookups (kiwi_mem_get) run in any context without a lock: an RCU read
 *   section around the table lookup and a refcount_inc_not_zero(). Objects
 *   are freed with kfree_rcu() after they left the table.
 * - The table's own lock (the xarray's) serialises allocation and removal
 *   of indices and guards kdev->mem_next; it is only taken in process
 *   context.
 * - mem->lock (interrupts off) serialises state changes of one object:
 *   fast-register, invalidate and deregistration's final invalidate.
 *   mem->seq, tied to it, gives readers a consistent snapshot.
 * - Verbs entry points (get_dma_mr, reg_user_mr, alloc_mr, map_mr_sg,
 *   dereg_mr) run in process context and may sleep.
 */

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>

#include "kiwi.h"
#include "kiwi_fault.h"
#include "kiwi_mem.h"
#include "kiwi_wire.h"

#define KIWI_MEM_RIGHTS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)
#define KIWI_MEM_REMOTE	(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ)

/* ---- the STag table ---- */

/**
 * kiwi_mem_init() - set up a device's STag table
 * @kdev: the device, not yet registered
 *
 * Indices start at a random place and each index starts with a random
 * previous key, so that STags are not predictable from the device's age.
 *
 * Context: process context; sleeps.
 * Return: 0 or -ENOMEM.
 */
int kiwi_mem_init(struct kiwi_device *kdev)
{
	xa_init_flags(&kdev->mem_xa, XA_FLAGS_ALLOC);
	atomic_set(&kdev->num_mr, 0);
	atomic_set(&kdev->num_mw, 0);
	kdev->mem_last_key = kiwi_fault() ? NULL :
			     kvmalloc(KIWI_MEM_INDICES, GFP_KERNEL);
	if (!kdev->mem_last_key)
		return -ENOMEM;
	get_random_bytes(kdev->mem_last_key, KIWI_MEM_INDICES);
	kdev->mem_next = get_random_u32_inclusive(1, KIWI_MEM_INDICES - 1);
	return 0;
}

/* Context: process context, once nothing can register memory any more. */
void kiwi_mem_fini(struct kiwi_device *kdev)
{
	WARN_ON(!xa_empty(&kdev->mem_xa));
	WARN_ON(atomic_read(&kdev->num_mr));
	WARN_ON(atomic_read(&kdev->num_mw));
	xa_destroy(&kdev->mem_xa);
	kvfree(kdev->mem_last_key);
	kdev->mem_last_key = NULL;
}

static void kiwi_mem_setup(struct kiwi_mem *mem, struct ib_pd *pd,
			   enum kiwi_mem_type type)
{
	mem->kdev = to_kdev(pd->device);
	mem->pd = pd;
	mem->type = type;
	refcount_set(&mem->refs, 1);
	init_completion(&mem->released);
	spin_lock_init(&mem->lock);
	seqcount_spinlock_init(&mem->seq, &mem->lock);
}

/* Windows count against KIWI_MAX_MW, everything else against KIWI_MAX_MR. */
static atomic_t *kiwi_mem_num(struct kiwi_device *kdev,
			      const struct kiwi_mem *mem)
{
	return mem->type == KIWI_MEM_MW ? &kdev->num_mw : &kdev->num_mr;
}

/*
 * Count the object against KIWI_MAX_MR (or _MW) and reserve it an index, the next
 * free one after the last handed out, with a key one above the key that
 * index had last: a stale STag of a freed object does not match the new
 * one. Lookups do not see the object before kiwi_mem_publish().
 */
static int kiwi_mem_reserve(struct kiwi_device *kdev, struct kiwi_mem *mem)
{
	u32 index;
	int ret;

	if (atomic_inc_return(kiwi_mem_num(kdev, mem)) >
	    (mem->type == KIWI_MEM_MW ? KIWI_MAX_MW : KIWI_MAX_MR)) {
		ret = -ENOMEM;
		goto err;
	}
	ret = kiwi_fault() ? -ENOMEM :
	      xa_alloc_cyclic(&kdev->mem_xa, &index, NULL,
			      XA_LIMIT(1, KIWI_MEM_INDICES - 1),
			      &kdev->mem_next, GFP_KERNEL);
	if (ret < 0) {
		if (ret == -EBUSY)
			ret = -ENOMEM;
		goto err;
	}
	mem->stag = index << 8 | (u8)(kdev->mem_last_key[index] + 1);
	return 0;
err:
	atomic_dec(kiwi_mem_num(kdev, mem));
	return ret;
}

/* Undo kiwi_mem_reserve() for an object never published. */
static void kiwi_mem_unreserve(struct kiwi_device *kdev, struct kiwi_mem *mem)
{
	xa_erase(&kdev->mem_xa, KIWI_STAG_INDEX(mem->stag));
	atomic_dec(kiwi_mem_num(kdev, mem));
}

/* Make the object visible to lookups; it cannot fail (the slot exists). */
static void kiwi_mem_publish(struct kiwi_device *kdev, struct kiwi_mem *mem,
			     struct ib_mr *ibmr)
{
	ibmr->lkey = mem->stag;
	ibmr->rkey = mem->stag;
	xa_store(&kdev->mem_xa, KIWI_STAG_INDEX(mem->stag), mem, GFP_KERNEL);
}

/* Make the object Invalid: no access passes kiwi_mem_check() any more. */
static void kiwi_mem_revoke(struct kiwi_mem *mem)
{
	unsigned long flags;

	spin_lock_irqsave(&mem->lock, flags);
	write_seqcount_begin(&mem->seq);
	WRITE_ONCE(mem->valid, false);
	write_seqcount_end(&mem->seq);
	spin_unlock_irqrestore(&mem->lock, flags);
}

/*
 * Invalidate the object, take it out of the table and wait until no engine
 * holds it. Afterwards nothing but RCU readers that will fail their
 * refcount_inc_not_zero() can reach it.
 *
 * Context: process context; sleeps.
 */
static void kiwi_mem_remove(struct kiwi_mem *mem)
{
	struct kiwi_device *kdev = mem->kdev;
	u32 index = KIWI_STAG_INDEX(mem->stag);

	kiwi_mem_revoke(mem);

	/* Written while the index is still ours; xa_erase() orders it. */
	kdev->mem_last_key[index] = KIWI_STAG_KEY(READ_ONCE(mem->stag));
	xa_erase(&kdev->mem_xa, index);

	kiwi_mem_put(mem);
	wait_for_completion(&mem->released);
	atomic_dec(kiwi_mem_num(kdev, mem));
}

/**
 * kiwi_mem_get() - look up a memory object by STag
 * @kdev: the device
 * @stag: all 32 bits are compared (V-STAG-5)
 *
 * Context: any context, softirq and hard interrupts included; no lock.
 * Return: the object with a reference the caller drops with
 * kiwi_mem_put(), or NULL when no object has that index or its key
 * differs. The object may be invalid: kiwi_mem_check() says so.
 */
struct kiwi_mem *kiwi_mem_get(struct kiwi_device *kdev, u32 stag)
{
	struct kiwi_mem *mem;

	rcu_read_lock();
	mem = xa_load(&kdev->mem_xa, KIWI_STAG_INDEX(stag));
	if (mem && (READ_ONCE(mem->stag) != stag ||
		    !refcount_inc_not_zero(&mem->refs)))
		mem = NULL;
	rcu_read_unlock();
	return mem;
}

/* Context: any context; never sleeps, never frees. */
void kiwi_mem_put(struct kiwi_mem *mem)
{
	if (refcount_dec_and_test(&mem->refs))
		complete(&mem->released);
}

/**
 * kiwi_mem_check() - may this access use this memory object?
 * @mem: the object, from kiwi_mem_get()
 * @pd: the protection domain of the QP (or S-RQ) doing the access
 * @access: IB_ACCESS_LOCAL_WRITE / REMOTE_WRITE / REMOTE_READ, all of
 *	which must be granted; 0 for a local read, always granted
 * @addr: Tagged Offset of the first byte
 * @len: bytes; a zero-length access is always within bounds
 *
 * The checks run in the order of the Terminate codes' precedence: state,
 * PD, rights, wrap, bounds. Per V-PROT-3 a zero-length access needs no
 * check at all; engines skip the lookup for it.
 *
 * Context: any context; reads a consistent snapshot without locking.
 * Return: 0, or KIWI_TC_RDMAP_INV_STAG, _STAG_NOT_ASSOC, _ACCESS, _TO_WRAP
 * or _BASE_BOUNDS.
 */
u32 kiwi_mem_check(const struct kiwi_mem *mem, const struct ib_pd *pd,
		   int access, u64 addr, u64 len)
{
	const struct ib_pd *owner;
	unsigned int seq;
	u64 va, size;
	int granted;
	bool valid;

	do {
		seq = read_seqcount_begin(&mem->seq);
		valid = mem->valid;
		owner = mem->pd;
		granted = mem->access;
		va = mem->va;
		size = mem->len;
	} while (read_seqcount_retry(&mem->seq, seq));

	/* A window serves tagged access only (kiwi_mem_check_tagged). */
	if (!valid || mem->type == KIWI_MEM_MW)
		return KIWI_TC_RDMAP_INV_STAG;
	if (owner != pd)
		return KIWI_TC_RDMAP_STAG_NOT_ASSOC;
	if (access & ~granted)
		return KIWI_TC_RDMAP_ACCESS;
	if (!len)
		return 0;
	if (addr + (len - 1) < addr)
		return KIWI_TC_RDMAP_TO_WRAP;
	if (addr < va || addr - va > size || len > size - (addr - va))
		return KIWI_TC_RDMAP_BASE_BOUNDS;
	return 0;
}

/**
 * kiwi_mem_check_tagged() - check a peer's tagged access, resolving windows
 * @memp: the object from kiwi_mem_get(); for a window replaced, on
 *	success, by the MR it is bound to (the reference moves with it)
 * @qp: the QP the access arrived on
 * @access: IB_ACCESS_REMOTE_WRITE / _REMOTE_READ / _LOCAL_WRITE
 * @addr: Tagged Offset of the first byte; for a window translated, on
 *	success, to the MR's Tagged Offset
 * @len: bytes
 *
 * An MR is checked as by kiwi_mem_check(). A window (V-PROT-2) must be
 * valid, bound to @qp (type 2) or to an MR of @qp's PD (type 1), grant
 * @access itself (the MR's rights are not consulted) and hold the range
 * to the byte. Nothing the peer sent is used beyond the window's bounds:
 * the translated range lies inside the MR, which bind checked.
 *
 * Context: any context; takes the window's lock.
 * Return: as kiwi_mem_check(); on failure *@memp and *@addr are unchanged.
 */
u32 kiwi_mem_check_tagged(struct kiwi_mem **memp, const struct ib_qp *qp,
			  int access, u64 *addr, u64 len)
{
	struct kiwi_mem *mw = *memp;
	unsigned long flags;
	u64 to = *addr;
	u32 tc = 0;

	if (mw->type != KIWI_MEM_MW)
		return kiwi_mem_check(mw, qp->pd, access, to, len);

	spin_lock_irqsave(&mw->lock, flags);
	if (!mw->valid)
		tc = KIWI_TC_RDMAP_INV_STAG;
	else if (mw->mw_type == IB_MW_TYPE_2 ? mw->mw_qpn != qp->qp_num :
					       mw->pd != qp->pd)
		tc = KIWI_TC_RDMAP_STAG_NOT_ASSOC;
	else if (access & ~mw->access)
		tc = KIWI_TC_RDMAP_ACCESS;
	else if (len && to + (len - 1) < to)
		tc = KIWI_TC_RDMAP_TO_WRAP;
	else if (to < mw->va || to - mw->va > mw->len ||
		 len > mw->len - (to - mw->va))
		tc = KIWI_TC_RDMAP_BASE_BOUNDS;
	if (!tc) {
		/* The window's own reference keeps the MR alive meanwhile. */
		refcount_inc(&mw->mw_mr->refs);
		*memp = mw->mw_mr;
		*addr = to - mw->va + mw->mw_mr_to;
	}
	spin_unlock_irqrestore(&mw->lock, flags);
	if (!tc)
		kiwi_mem_put(mw);
	return tc;
}

/* ---- data access ---- */

/*
 * Module text and data lie outside the vmalloc range on some
 * architectures, but are mapped page by page all the same
 * (is_vmalloc_or_module_addr() is not exported to modules).
 */
static bool kiwi_is_module_addr(unsigned long addr)
{
#if defined(CONFIG_MODULES) && defined(MODULES_VADDR)
	return addr >= MODULES_VADDR && addr < MODULES_END;
#else
	return false;
#endif
}

/* The page of a kernel virtual address, or NULL when it is not memory. */
static struct page *kiwi_kva_page(u64 addr)
{
	const void *p = (const void *)(uintptr_t)addr;

	if ((uintptr_t)addr != addr)
		return NULL;
	if (is_vmalloc_addr(p) || kiwi_is_module_addr((uintptr_t)addr))
		return vmalloc_to_page(p);
	if (virt_addr_valid(p))
		return virt_to_page(p);
	return NULL;
}

static struct page *kiwi_fr_page(struct kiwi_mem *mem, u64 off,
				 unsigned int *offset)
{
	/*
	 * Both lists hold fr_max entries: even a registration that changes
	 * under a misbehaving consumer cannot index outside them.
	 */
	u32 num = min(READ_ONCE(mem->fr.num), mem->fr_max);
	const u64 *list = READ_ONCE(mem->fr.addr);
	u64 idx, kva;

	off += READ_ONCE(mem->fr.fbo);
	idx = off >> PAGE_SHIFT;
	if (idx >= num)
		return NULL;
	kva = READ_ONCE(list[idx]) + offset_in_page(off);
	*offset = offset_in_page(kva);
	return kiwi_kva_page(kva);
}

/**
 * kiwi_mem_page() - the page holding a byte of a memory object
 * @mem: the object
 * @addr: Tagged Offset of the byte
 * @offset: set to the byte's offset in the page
 *
 * For zero-copy transmit: the caller takes its own page reference if it
 * keeps the page beyond its reference on @mem.
 *
 * Context: any context.
 * Return: the page, or NULL when @addr lies outside the object (or, for the
 * DMA MR, is not a kernel address backed by memory).
 */
struct page *kiwi_mem_page(struct kiwi_mem *mem, u64 addr,
			   unsigned int *offset)
{
	u64 off = addr - READ_ONCE(mem->va);

	if (mem->type == KIWI_MEM_DMA) {
		*offset = offset_in_page(addr);
		return kiwi_kva_page(addr);
	}
	if (addr < READ_ONCE(mem->va) || off >= READ_ONCE(mem->len))
		return NULL;
	if (mem->type == KIWI_MEM_FASTREG)
		return kiwi_fr_page(mem, off, offset);

	off += mem->first_off;
	if ((off >> PAGE_SHIFT) >= mem->npages)
		return NULL;
	*offset = offset_in_page(off);
	return mem->pages[off >> PAGE_SHIFT];
}

enum kiwi_copy {
	KIWI_COPY_TO_MEM,
	KIWI_COPY_FROM_MEM,
	KIWI_COPY_SKB_TO_MEM,
};

/* Copy page by page; each page is mapped with kmap_local (no sleeping). */
static int kiwi_mem_copy(struct kiwi_mem *mem, u64 addr, void *buf,
			 const struct sk_buff *skb, int skb_off, size_t len,
			 enum kiwi_copy dir)
{
	while (len) {
		unsigned int off, chunk;
		struct page *page;
		void *kaddr;
		int ret = 0;

		page = kiwi_mem_page(mem, addr, &off);
		if (!page)
			return -EFAULT;
		chunk = min_t(size_t, len, PAGE_SIZE - off);
		kaddr = kmap_local_page(page);
		switch (dir) {
		case KIWI_COPY_TO_MEM:
			memcpy(kaddr + off, buf, chunk);
			break;
		case KIWI_COPY_FROM_MEM:
			memcpy(buf, kaddr + off, chunk);
			break;
		case KIWI_COPY_SKB_TO_MEM:
			ret = skb_copy_bits(skb, skb_off, kaddr + off, chunk);
			break;
		}
		kunmap_local(kaddr);
		if (ret)
			return -EFAULT;
		if (dir != KIWI_COPY_FROM_MEM)
			flush_dcache_page(page);
		addr += chunk;
		if (buf)
			buf += chunk;
		skb_off += chunk;
		len -= chunk;
	}
	return 0;
}

/**
 * kiwi_mem_write() - copy bytes into a memory object
 * @mem: the object, checked with kiwi_mem_check()
 * @addr: Tagged Offset of the first byte
 * @src: the bytes
 * @len: their number
 *
 * Context: any context, softirq included; never sleeps.
 * Return: 0, or -EFAULT when a byte has no page behind it.
 */
int kiwi_mem_write(struct kiwi_mem *mem, u64 addr, const void *src,
		   size_t len)
{
	return kiwi_mem_copy(mem, addr, (void *)src, NULL, 0, len,
			     KIWI_COPY_TO_MEM);
}

/* Like kiwi_mem_write(), in the other direction. */
int kiwi_mem_read(struct kiwi_mem *mem, u64 addr, void *dst, size_t len)
{
	return kiwi_mem_copy(mem, addr, dst, NULL, 0, len, KIWI_COPY_FROM_MEM);
}

/**
 * kiwi_mem_write_skb() - place bytes of an skb directly into memory
 * @mem: the object, checked with kiwi_mem_check()
 * @addr: Tagged Offset of the first byte
 * @skb: the source
 * @offset: offset of the first byte in @skb
 * @len: bytes to copy
 *
 * Context: any context, softirq included; never sleeps.
 * Return: 0, or -EFAULT when a byte has no page behind it or @skb is
 * shorter than @offset + @len.
 */
int kiwi_mem_write_skb(struct kiwi_mem *mem, u64 addr,
		       const struct sk_buff *skb, int offset, size_t len)
{
	return kiwi_mem_copy(mem, addr, NULL, skb, offset, len,
			     KIWI_COPY_SKB_TO_MEM);
}

/* ---- fast-register and invalidate ---- */

/*
 * Access rights kiwi can grant: local read is implicit; remote write and
 * remote atomic need local write. The optional (IB_ACCESS_OPTIONAL) and
 * HUGETLB bits are hints and ignored. Remote atomic is what an RFC 7306
 * Atomic Request needs. MW binding is kept for kiwi_mem_bind(), which binds
 * windows to user MRs only. On-demand MRs do not exist; zero-based
 * ones are user MRs only (kiwi_reg_user_mr()).
 */
static int kiwi_mem_access_ok(int access)
{
	access &= ~(IB_ACCESS_OPTIONAL | IB_ACCESS_HUGETLB);
	if (access & ~(KIWI_MEM_RIGHTS | IB_ACCESS_MW_BIND))
		return -EOPNOTSUPP;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/**
 * kiwi_mem_fastreg() - carry out an IB_WR_REG_MR work request
 * @kdev: the device of the QP
 * @mr: the MR from alloc_mr, mapped with ib_map_mr_sg()
 * @key: the consumer's 8-bit key, or the whole new STag (its index must
 *	be the MR's)
 * @access: the rights to grant
 *
 * Makes the STag index << 8 | key valid for [mr->iova, mr->iova +
 * mr->length) over the pages of the latest ib_map_mr_sg(), or the pages of
 * the previous registration if the MR was not mapped since. The PD check
 * (PD of the QP = PD of the MR) is the caller's.
 *
 * Context: any context; takes mem->lock with interrupts off.
 * Return: 0, or -EINVAL when the MR is still valid, is not a fast-register
 * MR of @kdev, or the key, rights, length or page list do not fit.
 */
int kiwi_mem_fastreg(struct kiwi_device *kdev, struct ib_mr *mr, u32 key,
		     int access)
{
	const struct kiwi_fr_pages *pages;
	struct kiwi_mem *mem;
	unsigned long flags;
	u64 iova, length;
	u32 index;
	int ret = 0;

	if (!mr || mr->device != &kdev->ibdev)
		return -EINVAL;
	mem = &to_kmr(mr)->mem;
	if (mem->type != KIWI_MEM_FASTREG)
		return -EINVAL;
	index = KIWI_STAG_INDEX(READ_ONCE(mem->stag));
	if (key > 0xff) {
		if (KIWI_STAG_INDEX(key) != index)
			return -EINVAL;
		key = KIWI_STAG_KEY(key);
	}
	if (kiwi_mem_access_ok(access))
		return -EINVAL;
	access &= KIWI_MEM_RIGHTS;
	iova = READ_ONCE(mr->iova);
	length = READ_ONCE(mr->length);
	if (!length || iova + (length - 1) < iova)
		return -EINVAL;

	spin_lock_irqsave(&mem->lock, flags);
	pages = mem->fr_mapped ? &mem->fr_next : &mem->fr;
	if (mem->valid || !pages->num ||
	    length > (u64)pages->num * PAGE_SIZE - pages->fbo) {
		ret = -EINVAL;
		goto out;
	}
	write_seqcount_begin(&mem->seq);
	if (mem->fr_mapped) {
		swap(mem->fr, mem->fr_next);
		mem->fr_mapped = false;
	}
	WRITE_ONCE(mem->stag, index << 8 | key);
	mem->access = access;
	WRITE_ONCE(mem->va, iova);
	WRITE_ONCE(mem->len, length);
	WRITE_ONCE(mem->valid, true);
	write_seqcount_end(&mem->seq);
out:
	spin_unlock_irqrestore(&mem->lock, flags);
	return ret;
}

/* Drop a window's hold on the MR it was bound to. Context: any. */
static void kiwi_mem_unbind(struct kiwi_mem *mr)
{
	unsigned long flags;

	spin_lock_irqsave(&mr->lock, flags);
	mr->mw_bound--;
	spin_unlock_irqrestore(&mr->lock, flags);
	kiwi_mem_put(mr);
}

/*
 * Make window @mw valid (@mr non-NULL) or invalid, with key and rights as
 * given; a bound MR it held is returned for kiwi_mem_unbind().
 */
static struct kiwi_mem *kiwi_mw_set(struct kiwi_mem *mw, struct kiwi_mem *mr,
				    u32 stag, u64 to, u64 len, int access,
				    u32 qpn)
{
	struct kiwi_mem *old = mw->mw_mr;

	write_seqcount_begin(&mw->seq);
	mw->mw_mr = mr;
	mw->mw_mr_to = to;
	mw->va = access & IB_ZERO_BASED ? 0 : to;
	mw->len = len;
	mw->access = access & KIWI_MEM_REMOTE;
	mw->mw_qpn = qpn;
	WRITE_ONCE(mw->stag, stag);
	WRITE_ONCE(mw->valid, !!mr);
	write_seqcount_end(&mw->seq);
	return old;
}

/*
 * The window with index @index (whatever its key; V-STAG-4) with a
 * reference, or NULL when that index names no window.
 */
static struct kiwi_mem *kiwi_mw_get(struct kiwi_device *kdev, u32 index)
{
	struct kiwi_mem *mem;

	rcu_read_lock();
	mem = xa_load(&kdev->mem_xa, index);
	if (mem && (mem->type != KIWI_MEM_MW ||
		    !refcount_inc_not_zero(&mem->refs)))
		mem = NULL;
	rcu_read_unlock();
	return mem;
}

/*
 * May @mr take a window over [@to, @to + @len) with @access (V-MW-4,
 * V-MW-5, V-ADDR-8)? Called with mr->lock held.
 */
static bool kiwi_mw_fits(const struct kiwi_mem *mr, const struct ib_qp *qp,
			 u64 to, u64 len, int access)
{
	lockdep_assert_held(&mr->lock);
	if (!mr->valid || mr->pd != qp->pd || mr->type != KIWI_MEM_USER ||
	    !(mr->access & IB_ACCESS_MW_BIND))
		return false;
	/* Remote write needs local write; local read is always granted. */
	if ((access & IB_ACCESS_REMOTE_WRITE) &&
	    !(mr->access & IB_ACCESS_LOCAL_WRITE))
		return false;
	return to >= mr->va && to - mr->va <= mr->len &&
	       len <= mr->len - (to - mr->va);
}

/**
 * kiwi_mem_bind() - carry out a Bind MW work request
 * @kdev: the device of the QP
 * @qp: the QP whose send queue holds the request
 * @c: the request: rkey the new STag (the window's index, the new key),
 *	raddr the window's first byte as a Tagged Offset of the MR,
 *	bind its length, the MR and the rights
 *	(IB_ACCESS_REMOTE_READ / _REMOTE_WRITE, IB_ZERO_BASED); flag
 *	KIWI_WQE_BIND_TYPE1 when ibv_bind_mw() posted it
 *
 * Type 2 windows are bound only when invalid, through a work request, and
 * then serve only @qp. Type 1 windows are bound only through ibv_bind_mw(),
 * may be bound again while valid (the old binding goes), and a zero length
 * unbinds them; they serve every QP of their PD. Either way the window
 * gets the new key, so that no earlier STag reaches it (V-STAG-6).
 *
 * Context: any context (the send engine); takes the MR's and the window's
 * lock with interrupts off.
 * Return: 0, or -EINVAL when a check of V-MW-4 / V-MW-5 fails (a Completion
 * Error for the request).
 */
int kiwi_mem_bind(struct kiwi_device *kdev, const struct ib_qp *qp,
		  const struct kiwi_sqe *c)
{
	bool type1 = c->flags & KIWI_WQE_BIND_TYPE1;
	int access = c->bind.access;
	u64 to = c->raddr, len = c->bind.length;
	struct kiwi_mem *mw, *mr = NULL, *old;
	unsigned long flags;
	bool ok;

	mw = kiwi_mw_get(kdev, KIWI_STAG_INDEX(c->rkey));
	if (!mw)
		return -EINVAL;
	if (mw->pd != qp->pd ||
	    mw->mw_type != (type1 ? IB_MW_TYPE_1 : IB_MW_TYPE_2) ||
	    access & ~(KIWI_MEM_REMOTE | IB_ZERO_BASED))
		goto err;
	if (!type1 || len) {
		/* At least one remote right (V-MW-5); no wrap (V-ADDR-9). */
		if (!(access & KIWI_MEM_REMOTE) || to + len < to)
			goto err;
		mr = kiwi_mem_get(kdev, c->bind.mr_lkey);
		if (!mr)
			goto err;
		spin_lock_irqsave(&mr->lock, flags);
		ok = kiwi_mw_fits(mr, qp, to, len, access);
		if (ok)
			mr->mw_bound++;
		spin_unlock_irqrestore(&mr->lock, flags);
		if (!ok) {
			kiwi_mem_put(mr);
			goto err;
		}
	}

	spin_lock_irqsave(&mw->lock, flags);
	if (!type1 && mw->valid) {
		/* A bound type 2 window must be invalidated first. */
		spin_unlock_irqrestore(&mw->lock, flags);
		kiwi_mem_unbind(mr);
		goto err;
	}
	old = kiwi_mw_set(mw, mr, c->rkey, to, len, access,
			  type1 ? 0 : qp->qp_num);
	spin_unlock_irqrestore(&mw->lock, flags);
	if (old)
		kiwi_mem_unbind(old);
	kiwi_mem_put(mw);
	return 0;
err:
	kiwi_mem_put(mw);
	return -EINVAL;
}

/*
 * Invalidate type 2 window @mw for QP @qpn (V-INV-3, V-INV-8): it must be
 * bound to that QP, or be invalid already (V-INV-4).
 */
static u32 kiwi_mw_invalidate(struct kiwi_mem *mw, u32 qpn)
{
	struct kiwi_mem *old = NULL;
	unsigned long flags;
	u32 tc = 0;

	if (mw->mw_type != IB_MW_TYPE_2)
		return KIWI_TC_RDMAP_PROT_CANT_INV;
	spin_lock_irqsave(&mw->lock, flags);
	if (mw->valid && mw->mw_qpn != qpn)
		tc = KIWI_TC_RDMAP_STAG_NOT_ASSOC;
	else if (mw->valid)
		old = kiwi_mw_set(mw, NULL, mw->stag, 0, 0, 0, 0);
	spin_unlock_irqrestore(&mw->lock, flags);
	if (old)
		kiwi_mem_unbind(old);
	return tc;
}

/**
 * kiwi_mem_invalidate() - invalidate an STag, locally or for the peer
 * @kdev: the device
 * @stag: the STag to invalidate; its key must match
 * @qp: the QP doing it
 * @remote: a Send with Invalidate from the peer, rather than a local
 *	Invalidate WR
 *
 * Only fast-register MRs and type 2 windows bound to @qp may be
 * invalidated; MRs of reg_user_mr and the DMA MR are always valid until
 * deregistered, and type 1 windows are unbound only by another bind.
 * Invalidating an STag that is invalid already is allowed (V-INV-4). A
 * remote invalidation also needs the STag to grant a remote right
 * (V-ACC-7, V-INV-2; a window always has one); the QP's remote enables are
 * the caller's to check.
 *
 * Context: any context, softirq included; takes mem->lock.
 * Return: 0, or KIWI_TC_RDMAP_INV_STAG (no such STag), _STAG_NOT_ASSOC
 * (another PD, or a window bound to another QP), _PROT_CANT_INV (an object
 * that may not be invalidated), _ACCESS (remote, and the STag has no remote
 * right).
 */
u32 kiwi_mem_invalidate(struct kiwi_device *kdev, u32 stag,
			const struct ib_qp *qp, bool remote)
{
	struct kiwi_mem *mem = kiwi_mem_get(kdev, stag);
	unsigned long flags;
	u32 tc = 0;

	if (!mem)
		return KIWI_TC_RDMAP_INV_STAG;
	if (mem->pd != qp->pd) {
		tc = KIWI_TC_RDMAP_STAG_NOT_ASSOC;
	} else if (mem->type == KIWI_MEM_MW) {
		tc = kiwi_mw_invalidate(mem, qp->qp_num);
	} else if (mem->type != KIWI_MEM_FASTREG) {
		tc = KIWI_TC_RDMAP_PROT_CANT_INV;
	} else {
		spin_lock_irqsave(&mem->lock, flags);
		if (remote && mem->valid && !(mem->access & KIWI_MEM_REMOTE)) {
			tc = KIWI_TC_RDMAP_ACCESS;
		} else if (mem->valid) {
			write_seqcount_begin(&mem->seq);
			WRITE_ONCE(mem->valid, false);
			write_seqcount_end(&mem->seq);
		}
		spin_unlock_irqrestore(&mem->lock, flags);
	}
	kiwi_mem_put(mem);
	return tc;
}

/**
 * kiwi_mem_qp_gone() - invalidate the type 2 windows bound to a QP
 * @kdev: the device
 * @qpn: the number of a QP being destroyed, not yet free for reuse
 *
 * Linux cannot refuse Destroy QP (V-MW-9 would), so the windows it holds
 * become invalid instead: a later QP with the same number must not reach
 * them.
 *
 * Context: process context, the QP's engines stopped.
 */
void kiwi_mem_qp_gone(struct kiwi_device *kdev, u32 qpn)
{
	struct kiwi_mem *mem;
	unsigned long index;

	if (!atomic_read(&kdev->num_mw))
		return;
	rcu_read_lock();
	xa_for_each(&kdev->mem_xa, index, mem) {
		if (mem->type != KIWI_MEM_MW ||
		    !refcount_inc_not_zero(&mem->refs))
			continue;
		rcu_read_unlock();
		if (mem->mw_type == IB_MW_TYPE_2 && READ_ONCE(mem->valid))
			kiwi_mw_invalidate(mem, qpn);
		kiwi_mem_put(mem);
		rcu_read_lock();
	}
	rcu_read_unlock();
}

/* ---- verbs ---- */

static void kiwi_mr_free(struct kiwi_mr *mr)
{
	kvfree(mr->mem.pages);
	kvfree(mr->mem.fr.addr);
	kvfree(mr->mem.fr_next.addr);
	kfree_rcu(mr, mem.rcu);
}

/**
 * kiwi_get_dma_mr() - the MR covering all kernel memory of a kernel PD
 * @pd: the PD; the RDMA core asks for it in ib_alloc_pd()
 * @access: rights, as for any MR
 *
 * Addresses are kernel virtual addresses (virtual DMA); a byte that is not
 * backed by memory fails the copy with -EFAULT rather than being touched.
 *
 * Return: the MR, or ERR_PTR(-EOPNOTSUPP / -EINVAL) for rights kiwi cannot
 * grant, -ENOMEM at KIWI_MAX_MR or without memory.
 */
struct ib_mr *kiwi_get_dma_mr(struct ib_pd *pd, int access)
{
	struct kiwi_device *kdev = to_kdev(pd->device);
	struct kiwi_mr *mr;
	int ret;

	ret = kiwi_mem_access_ok(access);
	if (ret)
		return ERR_PTR(ret);
	mr = kiwi_fault() ? NULL : kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	kiwi_mem_setup(&mr->mem, pd, KIWI_MEM_DMA);
	mr->mem.access = access & KIWI_MEM_RIGHTS;
	mr->mem.va = 0;
	mr->mem.len = U64_MAX;
	mr->mem.valid = true;
	ret = kiwi_mem_reserve(kdev, &mr->mem);
	if (ret) {
		kfree(mr);
		return ERR_PTR(ret);
	}
	kiwi_mem_publish(kdev, &mr->mem, &mr->base_mr);
	return &mr->base_mr;
}

static int kiwi_mr_pin(struct kiwi_mem *mem, struct ib_device *ibdev,
		       u64 start, u64 length, int access)
{
	struct sg_page_iter iter;
	struct ib_umem *umem;
	unsigned long i = 0;

	umem = kiwi_fault() ? ERR_PTR(-ENOMEM) :
	       ib_umem_get(ibdev, start, length, access);
	if (IS_ERR(umem))
		return PTR_ERR(umem);
	mem->npages = ib_umem_num_pages(umem);
	mem->pages = kiwi_fault() ? NULL :
		     kvmalloc_array(mem->npages, sizeof(*mem->pages),
				    GFP_KERNEL);
	if (!mem->pages) {
		ib_umem_release(umem);
		return -ENOMEM;
	}
	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (i == mem->npages)
			break;
		mem->pages[i++] = sg_page_iter_page(&iter);
	}
	if (i != mem->npages) {
		kvfree(mem->pages);
		mem->pages = NULL;
		ib_umem_release(umem);
		return -EFAULT;
	}
	mem->umem = umem;
	mem->first_off = ib_umem_offset(umem);
	return 0;
}

/**
 * kiwi_reg_user_mr() - register user memory
 * @pd: the PD
 * @start: user address of the first byte
 * @length: bytes, 1 to KIWI_MAX_MR_SIZE
 * @iova: Tagged Offset the first byte gets; may differ from @start
 * @access: rights, and IB_ZERO_BASED to give the first byte TO 0
 * @udata: libkiwi sends no driver data; anything non-zero is refused
 *
 * Context: process context of the owner; sleeps (pins the pages).
 * Return: the MR, or ERR_PTR: -EINVAL for a bad length, TO range or driver
 * data, -EOPNOTSUPP / -EINVAL for rights, -ENOMEM at KIWI_MAX_MR (or over
 * RLIMIT_MEMLOCK), -EFAULT for memory that is not mapped as asked.
 */
struct ib_mr *kiwi_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
			       u64 iova, int access, struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(pd->device);
	struct kiwi_mr *mr;
	int ret;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return ERR_PTR(-EINVAL);
	ret = kiwi_mem_access_ok(access & ~IB_ZERO_BASED);
	if (ret)
		return ERR_PTR(ret);
	/* Zero-based (V-ADDR-1): the first byte has Tagged Offset 0. */
	if (access & IB_ZERO_BASED)
		iova = 0;
	if (!length || length > KIWI_MAX_MR_SIZE ||
	    iova + (length - 1) < iova)
		return ERR_PTR(-EINVAL);

	mr = kiwi_fault() ? NULL : kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	kiwi_mem_setup(&mr->mem, pd, KIWI_MEM_USER);
	mr->mem.access = access & (KIWI_MEM_RIGHTS | IB_ACCESS_MW_BIND);
	mr->mem.va = iova;
	mr->mem.len = length;
	mr->mem.valid = true;

	/* Reserve first: at the limit, nothing gets pinned. */
	ret = kiwi_mem_reserve(kdev, &mr->mem);
	if (ret)
		goto err_free;
	ret = kiwi_mr_pin(&mr->mem, pd->device, start, length, access);
	if (ret)
		goto err_unreserve;
	kiwi_mem_publish(kdev, &mr->mem, &mr->base_mr);
	return &mr->base_mr;

err_unreserve:
	kiwi_mem_unreserve(kdev, &mr->mem);
err_free:
	kfree(mr);
	return ERR_PTR(ret);
}

/**
 * kiwi_alloc_mr() - a fast-register MR, invalid until an IB_WR_REG_MR
 * @pd: the PD
 * @type: only IB_MR_TYPE_MEM_REG
 * @max_num_sg: pages the MR can map, 1 to KIWI_MAX_FR_PAGES
 *
 * Context: process context; sleeps.
 * Return: the MR, or ERR_PTR: -EOPNOTSUPP for another type, -EINVAL for
 * @max_num_sg out of range, -ENOMEM at KIWI_MAX_MR or without memory.
 */
struct ib_mr *kiwi_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			    u32 max_num_sg)
{
	struct kiwi_device *kdev = to_kdev(pd->device);
	struct kiwi_mr *mr;
	int ret;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > KIWI_MAX_FR_PAGES)
		return ERR_PTR(-EINVAL);

	mr = kiwi_fault() ? NULL : kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	kiwi_mem_setup(&mr->mem, pd, KIWI_MEM_FASTREG);
	mr->mem.fr_max = max_num_sg;
	mr->mem.fr.addr = kiwi_fault() ? NULL :
			  kvcalloc(max_num_sg, sizeof(u64), GFP_KERNEL);
	mr->mem.fr_next.addr = kiwi_fault() ? NULL :
			       kvcalloc(max_num_sg, sizeof(u64), GFP_KERNEL);
	if (!mr->mem.fr.addr || !mr->mem.fr_next.addr) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = kiwi_mem_reserve(kdev, &mr->mem);
	if (ret)
		goto err_free;
	kiwi_mem_publish(kdev, &mr->mem, &mr->base_mr);
	return &mr->base_mr;

err_free:
	kvfree(mr->mem.fr.addr);
	kvfree(mr->mem.fr_next.addr);
	kfree(mr);
	return ERR_PTR(ret);
}

static int kiwi_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct kiwi_mem *mem = &to_kmr(ibmr)->mem;
	struct kiwi_fr_pages *next = &mem->fr_next;

	if (next->num >= mem->fr_max)
		return -ENOMEM;
	next->addr[next->num++] = addr;
	return 0;
}

/**
 * kiwi_map_mr_sg() - map a DMA-mapped scatterlist into a fast-register MR
 * @ibmr: the MR from kiwi_alloc_mr()
 * @sg: the list; with virtual DMA its DMA addresses are kernel addresses
 * @sg_nents: entries in @sg
 * @sg_offset: offset into the first entry, updated as the core defines
 *
 * Fills the MR's next page list; the registration in use (if any) is not
 * touched until the next IB_WR_REG_MR.
 *
 * Context: process context (or any context of the MR's owner).
 * Return: the number of @sg entries mapped (fewer than @sg_nents when the
 * pages exceed max_num_sg), or -EINVAL for a page size other than
 * PAGE_SIZE (page_size_cap) or an MR not from alloc_mr.
 */
int kiwi_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset)
{
	struct kiwi_mem *mem = &to_kmr(ibmr)->mem;
	unsigned long flags;
	int n;

	if (mem->type != KIWI_MEM_FASTREG || ibmr->page_size != PAGE_SIZE)
		return -EINVAL;
	mem->fr_next.num = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, kiwi_set_page);
	mem->fr_next.fbo = mem->fr_next.num ?
			   ibmr->iova - mem->fr_next.addr[0] : 0;
	spin_lock_irqsave(&mem->lock, flags);
	mem->fr_mapped = true;
	spin_unlock_irqrestore(&mem->lock, flags);
	return n;
}

/*
 * Memory windows bound to the MR refuse a Reregister and leave it as it
 * is (V-MR-5, V-MR-6). A bind that races with the rereg sees the MR
 * valid or not, as with deregistration.
 */
static bool kiwi_mem_windows_bound(struct kiwi_mem *mem)
{
	unsigned long flags;
	bool bound;

	spin_lock_irqsave(&mem->lock, flags);
	bound = mem->mw_bound;
	spin_unlock_irqrestore(&mem->lock, flags);
	return bound;
}

/**
 * kiwi_rereg_user_mr() - Reregister a user MR (ibv_rereg_mr)
 * @ibmr: the MR
 * @flags: IB_MR_REREG_TRANS, _PD and _ACCESS, in any combination
 * @start: IB_MR_REREG_TRANS: user address of the first byte
 * @length: IB_MR_REREG_TRANS: bytes
 * @iova: IB_MR_REREG_TRANS: Tagged Offset of the first byte
 * @access: IB_MR_REREG_ACCESS: the new rights
 * @pd: the PD the MR is to have (its own without IB_MR_REREG_PD)
 * @udata: libkiwi sends no driver data
 *
 * A new translation, or write rights over pages pinned read-only, makes a
 * new MR with a new STag index; the RDMA core then deregisters the old
 * one, so its STag is refused from then on (V-MR-7, V-PROT-8). A change of
 * rights or PD alone happens in place and keeps the STag: the next check
 * of every access sees the new values. kiwi_mem_check() reads rights and
 * PD as one snapshot, and an access already checked completes as it
 * would after an invalidate followed by a fresh registration (V-MR-7).
 *
 * Context: process context of the owner; sleeps.
 * Return: NULL when changed in place, the new MR, or ERR_PTR: -EBUSY with
 * memory windows bound and -EINVAL for an MR not from reg_user_mr or
 * driver data (the MR stays as it was), or the errors of
 * kiwi_reg_user_mr() for the new values, after which the MR is Invalid
 * until a rereg succeeds or it is deregistered (V-MR-6).
 */
struct ib_mr *kiwi_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				 u64 length, u64 iova, int access,
				 struct ib_pd *pd, struct ib_udata *udata)
{
	struct kiwi_mem *mem = &to_kmr(ibmr)->mem;
	unsigned long irqflags;
	struct ib_mr *new;
	int ret;

	if (mem->type != KIWI_MEM_USER)
		return ERR_PTR(-EINVAL);
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return ERR_PTR(-EINVAL);
	if (kiwi_mem_windows_bound(mem))
		return ERR_PTR(-EBUSY);
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mem->access;
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mem->umem->address;
		length = mem->len;
		iova = mem->va;
	}

	if ((flags & IB_MR_REREG_TRANS) ||
	    (ib_access_writable(access) && !mem->umem->writable)) {
		new = kiwi_reg_user_mr(pd, start, length, iova, access, NULL);
		if (IS_ERR(new))
			kiwi_mem_revoke(mem);	/* V-MR-6 */
		return new;
	}

	ret = kiwi_mem_access_ok(access);
	if (ret) {
		kiwi_mem_revoke(mem);
		return ERR_PTR(ret);
	}
	spin_lock_irqsave(&mem->lock, irqflags);
	write_seqcount_begin(&mem->seq);
	mem->access = access & KIWI_MEM_RIGHTS;
	WRITE_ONCE(mem->pd, pd);
	/* Valid again after a rereg that failed (V-MR-7). */
	WRITE_ONCE(mem->valid, true);
	write_seqcount_end(&mem->seq);
	spin_unlock_irqrestore(&mem->lock, irqflags);
	return NULL;
}

/**
 * kiwi_dereg_mr() - deregister any kind of MR
 * @ibmr: the MR
 * @udata: unused
 *
 * Invalidates the STag, waits until no engine holds it, then unpins user
 * pages and frees the MR (after an RCU grace period). An MR with windows
 * bound to it stays as it is (V-DEALLOC-2, V-MR-5).
 *
 * Context: process context; sleeps.
 * Return: 0, or -EBUSY while windows are bound to the MR.
 */
int kiwi_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct kiwi_mr *mr = to_kmr(ibmr);
	unsigned long flags;
	bool busy;

	/* Invalid from here on, no window can bind to it any more. */
	spin_lock_irqsave(&mr->mem.lock, flags);
	busy = mr->mem.mw_bound;
	if (!busy) {
		write_seqcount_begin(&mr->mem.seq);
		WRITE_ONCE(mr->mem.valid, false);
		write_seqcount_end(&mr->mem.seq);
	}
	spin_unlock_irqrestore(&mr->mem.lock, flags);
	if (busy)
		return -EBUSY;

	kiwi_mem_remove(&mr->mem);
	if (mr->mem.umem)
		ib_umem_release(mr->mem.umem);
	kiwi_mr_free(mr);
	return 0;
}

/**
 * kiwi_alloc_mw() - allocate a memory window, invalid until bound
 * @ibmw: the window the core allocated, with its PD and type
 * @udata: libkiwi sends no driver data; anything non-zero is refused
 *
 * Context: process context; sleeps.
 * Return: 0, or -EINVAL for driver data, -ENOMEM at KIWI_MAX_MW or without
 * memory.
 */
int kiwi_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(ibmw->device);
	struct kiwi_mem *mem;
	int ret;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	mem = kiwi_fault() ? NULL : kzalloc(sizeof(*mem), GFP_KERNEL);
	if (!mem)
		return -ENOMEM;
	kiwi_mem_setup(mem, ibmw->pd, KIWI_MEM_MW);
	mem->mw_type = ibmw->type;
	ret = kiwi_mem_reserve(kdev, mem);
	if (ret) {
		kfree(mem);
		return ret;
	}
	ibmw->rkey = mem->stag;
	to_kmw(ibmw)->mem = mem;
	xa_store(&kdev->mem_xa, KIWI_STAG_INDEX(mem->stag), mem, GFP_KERNEL);
	return 0;
}

/**
 * kiwi_dealloc_mw() - deallocate a memory window, bound or not
 * @ibmw: the window
 *
 * Works in either state (V-DEALLOC-1): once no engine holds the window,
 * it lets go of the MR it was bound to.
 *
 * Context: process context; sleeps.
 * Return: 0.
 */
int kiwi_dealloc_mw(struct ib_mw *ibmw)
{
	struct kiwi_mem *mem = to_kmw(ibmw)->mem;

	kiwi_mem_remove(mem);
	if (mem->mw_mr)
		kiwi_mem_unbind(mem->mw_mr);
	kfree_rcu(mem, rcu);
	return 0;
}
