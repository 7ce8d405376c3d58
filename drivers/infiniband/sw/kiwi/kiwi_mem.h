/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: memory registration - STags and the memory objects they name.
 *
 * An STag is index << 8 | key (RDMA Verbs V-STAG-1): the 24-bit index names
 * a slot in the device's STag table (struct kiwi_device, mem_xa), the 8-bit
 * key belongs to the consumer (ib_update_fast_reg_key). Index 0 is never
 * handed out (V-STAG0-2). lkey and rkey of every MR are the same STag.
 *
 * The engines look objects up by STag in any context:
 *
 *	mem = kiwi_mem_get(kdev, stag);		a reference, or NULL
 *	tc = kiwi_mem_check(mem, pd, access, addr, len);
 *	if (!tc)
 *		kiwi_mem_write(mem, addr, src, len);	or _read, _write_skb
 *	kiwi_mem_put(mem);
 *
 * Addresses are Tagged Offsets as the consumer sees them: for user MRs the
 * iova given at registration, for the DMA MR and fast-registered MRs kernel
 * virtual addresses (the device uses the RDMA core's virtual DMA).
 *
 * Lifetime: a table slot holds one reference. Deregistration invalidates
 * the object, removes it from the table, drops that reference and waits
 * until every engine has dropped its own; only then are user pages
 * unpinned (in process context) and the object freed after an RCU grace
 * period, so that a lookup racing with removal never touches freed memory.
 */
#ifndef _KIWI_MEM_H
#define _KIWI_MEM_H

#include <linux/bits.h>
#include <linux/completion.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/seqlock.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

struct kiwi_device;
struct kiwi_sqe;

#define KIWI_STAG_INDEX(stag)	((stag) >> 8)
#define KIWI_STAG_KEY(stag)	((u8)(stag))

/*
 * Limits, reported by query_device and enforced here. The STag table has
 * KIWI_MEM_INDICES slots of which at most KIWI_MAX_MR are in use at once,
 * so a freed index is not handed out again for at least
 * KIWI_MEM_INDICES - KIWI_MAX_MR registrations.
 */
#define KIWI_MAX_MR		65536
#define KIWI_MEM_INDICES	BIT(18)
#define KIWI_MAX_MR_SIZE	BIT_ULL(36)	/* 64 GiB: page array <= 128 MiB */
#define KIWI_MAX_FR_PAGES	4096		/* fast-register page list */
#define KIWI_MAX_MW		4096		/* memory windows, besides MRs */

enum kiwi_mem_type {
	KIWI_MEM_USER,		/* reg_user_mr: pinned user pages */
	KIWI_MEM_DMA,		/* get_dma_mr: all kernel memory */
	KIWI_MEM_FASTREG,	/* alloc_mr: a page list, valid after REG_MR */
	KIWI_MEM_MW,		/* alloc_mw: a window, valid while bound */
};

/**
 * struct kiwi_fr_pages - a page list of a fast-register MR
 * @addr: kernel virtual address of each page (page aligned)
 * @num: pages in @addr
 * @fbo: offset of the first registered byte in the first page
 */
struct kiwi_fr_pages {
	u64 *addr;
	u32 num;
	u32 fbo;
};

/**
 * struct kiwi_mem - one registered memory object, looked up by STag
 * @stag: index << 8 | key; the key changes only with a fast-register
 * @pd: protection domain; only a Reregister changes it
 * @access: IB_ACCESS_LOCAL_WRITE / REMOTE_WRITE / REMOTE_READ granted
 * @va: Tagged Offset of the first registered byte (iova)
 * @len: bytes registered
 * @valid: false after invalidation, or before the first fast-register
 * @type: what backs the object
 * @kdev: the device whose table holds it
 * @refs: the table's reference plus one per kiwi_mem_get()
 * @released: completed when @refs drops to zero
 * @lock: serialises state changes (fast-register, invalidate); taken
 *	with interrupts off, as engines may invalidate from softirq
 * @seq: lets kiwi_mem_check() read @valid, @pd, @access, @va and @len as one
 *	consistent snapshot without taking @lock
 * @umem: KIWI_MEM_USER: the pinned memory
 * @pages: KIWI_MEM_USER: its pages, in order
 * @npages: KIWI_MEM_USER: entries in @pages
 * @first_off: KIWI_MEM_USER: offset of the first registered byte in
 *	@pages[0]
 * @fr: KIWI_MEM_FASTREG: the page list in use while valid
 * @fr_next: KIWI_MEM_FASTREG: the list map_mr_sg fills; a fast-register
 *	swaps it with @fr, so mapping never disturbs a valid registration
 * @fr_mapped: @fr_next holds a mapping no fast-register has used yet
 * @fr_max: KIWI_MEM_FASTREG: capacity of each list (max_num_sg)
 * @mw_bound: an MR: windows bound to it, under @lock; deregistration is
 *	refused while there are any
 * @mw_mr: KIWI_MEM_MW: the MR it is bound to (holding a reference), or
 *	NULL; changes under @lock
 * @mw_mr_to: KIWI_MEM_MW: the MR's Tagged Offset of the window's first byte
 * @mw_qpn: KIWI_MEM_MW: type 2: the QP it is bound to and usable from
 * @mw_type: KIWI_MEM_MW: IB_MW_TYPE_1 or IB_MW_TYPE_2
 * @rcu: frees the object once no lookup can still see it
 */
struct kiwi_mem {
	u32 stag;
	struct ib_pd *pd;
	int access;
	u64 va;
	u64 len;
	bool valid;

	enum kiwi_mem_type type;
	struct kiwi_device *kdev;
	refcount_t refs;
	struct completion released;
	spinlock_t lock;		/* see @lock above */
	seqcount_spinlock_t seq;

	struct ib_umem *umem;
	struct page **pages;
	unsigned long npages;
	unsigned int first_off;

	struct kiwi_fr_pages fr;
	struct kiwi_fr_pages fr_next;
	bool fr_mapped;
	u32 fr_max;

	unsigned int mw_bound;
	struct kiwi_mem *mw_mr;
	u64 mw_mr_to;
	u32 mw_qpn;
	u8 mw_type;

	struct rcu_head rcu;
};

/* An MR: the RDMA core's object and the memory object it registers. */
struct kiwi_mr {
	struct ib_mr base_mr;
	struct kiwi_mem mem;
};

static inline struct kiwi_mr *to_kmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct kiwi_mr, base_mr);
}

/*
 * A memory window. Its memory object is allocated apart, as the RDMA core
 * frees the ib_mw without waiting for an RCU grace period.
 */
struct kiwi_mw {
	struct ib_mw base_mw;
	struct kiwi_mem *mem;
};

static inline struct kiwi_mw *to_kmw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct kiwi_mw, base_mw);
}

/* For the engines: lookups and data access, any context. */
struct kiwi_mem *kiwi_mem_get(struct kiwi_device *kdev, u32 stag);
void kiwi_mem_put(struct kiwi_mem *mem);
u32 kiwi_mem_check(const struct kiwi_mem *mem, const struct ib_pd *pd,
		   int access, u64 addr, u64 len);
u32 kiwi_mem_check_tagged(struct kiwi_mem **memp, const struct ib_qp *qp,
			  int access, u64 *addr, u64 len);
int kiwi_mem_write(struct kiwi_mem *mem, u64 addr, const void *src,
		   size_t len);
int kiwi_mem_read(struct kiwi_mem *mem, u64 addr, void *dst, size_t len);
int kiwi_mem_write_skb(struct kiwi_mem *mem, u64 addr,
		       const struct sk_buff *skb, int offset, size_t len);
struct page *kiwi_mem_page(struct kiwi_mem *mem, u64 addr,
			   unsigned int *offset);

/* Work requests: REG_MR, BIND_MW, LOCAL_INV and Send with Invalidate. */
int kiwi_mem_fastreg(struct kiwi_device *kdev, struct ib_mr *mr, u32 key,
		     int access);
int kiwi_mem_bind(struct kiwi_device *kdev, const struct ib_qp *qp,
		  const struct kiwi_sqe *c);
u32 kiwi_mem_invalidate(struct kiwi_device *kdev, u32 stag,
			const struct ib_qp *qp, bool remote);
void kiwi_mem_qp_gone(struct kiwi_device *kdev, u32 qpn);

/* The device's STag table. */
int kiwi_mem_init(struct kiwi_device *kdev);
void kiwi_mem_fini(struct kiwi_device *kdev);

/* Verbs (kiwi_verbs_ops). */
struct ib_mr *kiwi_get_dma_mr(struct ib_pd *pd, int access);
struct ib_mr *kiwi_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
			       u64 iova, int access, struct ib_udata *udata);
struct ib_mr *kiwi_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			    u32 max_num_sg);
int kiwi_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset);
struct ib_mr *kiwi_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				 u64 length, u64 iova, int access,
				 struct ib_pd *pd, struct ib_udata *udata);
int kiwi_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
int kiwi_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int kiwi_dealloc_mw(struct ib_mw *ibmw);

#endif /* _KIWI_MEM_H */
