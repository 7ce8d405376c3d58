// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_ktest_cm: kiwi as a kernel ULP (NVMe-oF, iSER, NFS/RDMA) uses it
 * through rdma_cm. A server ("B") listens in one network namespace, a
 * client ("A") connects from another, and through kernel verbs they move
 * data of several sizes: a Send gathered from several SGEs and scattered
 * into several, an RDMA Write into and an RDMA Read out of a fast-registered
 * MR whose rkey went over in a Send, each MR then invalidated by the peer
 * with Send with Invalidate. Receivers check the data with CRC32c and that
 * nothing around it was touched. Then both sides disconnect, the QPs are
 * drained and everything is freed; over IPv4, then IPv6. A last connection
 * shows that an invalidated rkey is dead: a Write to it ends the connection.
 * Another, that a Local Invalidate with IB_SEND_FENCE lets the Send out of
 * the MR ahead of it finish and stops the one behind it. Last, connect
 * requests the iw_cm does not take up: beyond a busy listener's backlog
 * (kiwi refuses them), and queued when their listener is destroyed (the
 * iw_cm drops them; kiwi ends them once their peers give up).
 *
 * TAP goes to the kernel log as in kiwi_ktest (kiwi_ktest.h), and a failed
 * point fails the load. The namespaces come as file descriptors that are
 * open in the insmod process (the module runs its cases there):
 *
 *   insmod kiwi_ktest_cm.ko netns_a=3 netns_b=4 \
 *	3</run/netns/kiwiA 4</run/netns/kiwiB
 *
 * Every wait for the peer has a time limit, and after a failure the
 * connection is torn down and freed like a good one.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/crc32c.h>
#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rw.h>

#include "kiwi_ktest.h"

KT_PAIR_PARAMS("7480");
static char *dev_a = "kiwi0";
module_param(dev_a, charp, 0444);
MODULE_PARM_DESC(dev_a, "the client's RDMA device (default kiwi0)");
static char *dev_b = "kiwi1";
module_param(dev_b, charp, 0444);
MODULE_PARM_DESC(dev_b, "the server's RDMA device (default kiwi1)");
static char *addr6_a = "2001:db8::1";
module_param(addr6_a, charp, 0444);
MODULE_PARM_DESC(addr6_a, "the client's IPv6 address (empty: no IPv6 run)");
static char *addr6_b = "2001:db8::2";
module_param(addr6_b, charp, 0444);
MODULE_PARM_DESC(addr6_b, "the server's IPv6 address");

#define KCM_MAX_LEN	SZ_1M
#define KCM_FR_PAGES	(KCM_MAX_LEN / PAGE_SIZE + 1)	/* any first offset */
#define KCM_BUF_LEN	(KCM_MAX_LEN + PAGE_SIZE)	/* + gaps and guard */
#define KCM_SGE		3	/* SGEs of the QPs; gathers use all */
#define KCM_GAP		13	/* between SGEs: odd, so they start unaligned */
#define KCM_GUARD	64	/* poisoned bytes checked after the data */
#define KCM_READ_OFF	3	/* where a Read's sink starts in the buffer */
#define KCM_POISON	0xa5
#define KCM_DEPTH	4	/* RDMA Reads in flight, each way */
#define KCM_RW_CTXS	2	/* rdma_rw contexts of a QP, as ULPs ask */
#define KCM_RW_ROUNDS	3	/* reuses of the pool's MRs */

/* Sizes, and the offset of the first byte in the fast-registered pages. */
static const struct kcm_size {
	u32 len;
	u32 fr_off;
} kcm_sizes[] = {
	{ 16, 40 },
	{ SZ_4K, 0 },
	{ 5003, 123 },		/* not a multiple of 4: MPA pads */
	{ SZ_1M, 2048 },	/* 257 pages, hundreds of FPDUs */
};

/* A posted WR's completion. */
struct kcm_wr {
	struct ib_cqe cqe;
	struct completion done;
	struct ib_wc wc;
};

/* Each end has one WR of each kind outstanding at most. */
enum { KCM_W_RECV, KCM_W_SEND, KCM_W_SEND2, KCM_W_REG, KCM_W_NUM };

/* What the ends tell each other in Sends: the buffer to use, its CRC. */
struct kcm_msg {
	__le64 addr;
	__le32 rkey;
	__le32 len;
	__le32 crc;
	__le32 reserved;
};

enum { KCM_MSG_IN, KCM_MSG_OUT };

/**
 * struct kcm_end - one side of the connection
 * @cm: its rdma_cm id, "A" (client) or "B" (server)
 * @pd: protection domain
 * @cq: one CQ for both queues, polled in softirq
 * @buf: data buffer, KCM_BUF_LEN bytes
 * @buf_dma: its DMA address
 * @msg: messages in and out (KCM_MSG_IN, KCM_MSG_OUT)
 * @msg_dma: their DMA address
 * @w: completions of the WRs
 * @keep_pd: @pd is not the end's own (struct kcm_sec's); it outlives it
 */
struct kcm_end {
	struct kt_cm_end cm;
	struct ib_pd *pd;
	struct ib_cq *cq;
	u8 *buf;
	u64 buf_dma;
	struct kcm_msg *msg;
	u64 msg_dma;
	struct kcm_wr w[KCM_W_NUM];
	bool keep_pd;
};

/**
 * struct kcm_sec - what the privilege cases keep from one connection to
 * the next: a refused WR ends its connection, and the next one shows
 * what it left behind
 * @pd: A's PD in those connections (NULL: A makes its own)
 * @mr: a fast-register MR of @pd
 * @page: the one page @mr maps
 * @dma: its DMA address
 * @rkey: @mr's STag of the registration the peer may use, if any
 */
struct kcm_sec {
	struct ib_pd *pd;
	struct ib_mr *mr;
	struct page *page;
	u64 dma;
	u32 rkey;
};

/**
 * struct kcm - the test
 * @kt: TAP state
 * @net_a: the client's namespace
 * @net_b: the server's
 * @a: the client
 * @b: the server's end of the connection
 * @l: the server's listener
 * @mr: the client's fast-register MR
 * @pages: what @mr maps, page by page
 * @sgl: the scatterlist @mr maps, DMA-mapped while @sg_nents
 * @sg_nents: entries of @sgl mapped, 0 when none
 * @rw_sgl: a Read's sink in the server's buffer for rdma_rw, page by page
 * @sec: the privilege cases' objects, kept across their connections
 */
struct kcm {
	struct kt kt;
	struct net *net_a;
	struct net *net_b;
	struct kcm_end a;
	struct kcm_end b;
	struct kt_cm_end l;
	struct ib_mr *mr;
	struct page *pages[KCM_FR_PAGES];
	struct scatterlist sgl[KCM_FR_PAGES];
	int sg_nents;
	struct scatterlist rw_sgl[KCM_FR_PAGES];
	struct kcm_sec sec;
};

/* ---- work requests ---- */

static void kcm_wr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kcm_wr *w = container_of(wc->wr_cqe, struct kcm_wr, cqe);

	w->wc = *wc;
	complete(&w->done);
}

static struct ib_cqe *kcm_cqe(struct kcm_end *e, int slot)
{
	reinit_completion(&e->w[slot].done);
	return &e->w[slot].cqe;
}

/* Wait for the WR in @slot; true if it completed as @opcode, successfully. */
static bool kcm_wait_wc(struct kcm_end *e, int slot, enum ib_wc_opcode opcode)
{
	struct ib_wc *wc = &e->w[slot].wc;

	if (!wait_for_completion_timeout(&e->w[slot].done, KT_TIMEOUT)) {
		pr_info("# %s: no completion in %d s (opcode %d)\n", e->cm.name,
			KT_TIMEOUT / HZ, opcode);
		return false;
	}
	if (wc->status == IB_WC_SUCCESS && wc->opcode == opcode &&
	    wc->qp == e->cm.id->qp)
		return true;
	pr_info("# %s: completion %s, opcode %d (want %d)\n", e->cm.name,
		ib_wc_status_msg(wc->status), wc->opcode, opcode);
	return false;
}

static bool kcm_posted(struct kcm_end *e, int ret, const char *what)
{
	if (ret)
		pr_info("# %s: posting %s failed (%d)\n", e->cm.name, what, ret);
	return !ret;
}

static bool kcm_post_recv(struct kcm_end *e, struct ib_sge *sge, int n)
{
	struct ib_recv_wr wr = {
		.wr_cqe = kcm_cqe(e, KCM_W_RECV),
		.sg_list = sge,
		.num_sge = n,
	};

	return kcm_posted(e, ib_post_recv(e->cm.id->qp, &wr, NULL), "a receive");
}

/* Post one signalled WR; @rkey is the remote STag, or the one to invalidate. */
static bool kcm_post_send(struct kcm_end *e, int slot, enum ib_wr_opcode op,
			  struct ib_sge *sge, int n, u64 raddr, u32 rkey)
{
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = kcm_cqe(e, slot),
			.opcode = op,
			.send_flags = IB_SEND_SIGNALED,
			.sg_list = sge,
			.num_sge = n,
		},
		.remote_addr = raddr,
		.rkey = rkey,
	};

	if (op == IB_WR_SEND_WITH_INV)
		wr.wr.ex.invalidate_rkey = rkey;
	return kcm_posted(e, ib_post_send(e->cm.id->qp, &wr.wr, NULL),
			  "a send WR");
}

static struct ib_sge kcm_msg_sge(struct kcm_end *e, int which)
{
	return (struct ib_sge){
		.addr = e->msg_dma + which * sizeof(*e->msg),
		.length = sizeof(*e->msg),
		.lkey = e->pd->local_dma_lkey,
	};
}

/* ---- data and its checks ---- */

/* Up to KCM_SGE pieces of a buffer, KCM_GAP bytes apart. */
struct kcm_sgl {
	int n;
	u32 off[KCM_SGE];
	u32 len[KCM_SGE];
};

/* Split @len bytes into @n pieces (fewer for tiny @len) from offset @at. */
static void kcm_split(struct kcm_sgl *s, u32 at, u32 len, int n)
{
	int i;

	s->n = min_t(u32, n, len);
	for (i = 0; i < s->n; i++) {
		s->off[i] = at;
		s->len[i] = len / s->n + (i < len % s->n);
		at += s->len[i] + KCM_GAP;
	}
}

static u32 kcm_sgl_end(const struct kcm_sgl *s)
{
	return s->off[s->n - 1] + s->len[s->n - 1];
}

static void kcm_sges(struct kcm_end *e, const struct kcm_sgl *s,
		     struct ib_sge *sge)
{
	int i;

	for (i = 0; i < s->n; i++) {
		sge[i].addr = e->buf_dma + s->off[i];
		sge[i].length = s->len[i];
		sge[i].lkey = e->pd->local_dma_lkey;
	}
}

static u32 kcm_crc(const u8 *buf, const struct kcm_sgl *s)
{
	u32 crc = ~0;
	int i;

	for (i = 0; i < s->n; i++)
		crc = crc32c(crc, buf + s->off[i], s->len[i]);
	return crc;
}

/* Is every byte of buf[0, end) outside the pieces still poison? */
static bool kcm_untouched(const u8 *buf, const struct kcm_sgl *s, u32 end)
{
	u32 at = 0;
	int i;

	for (i = 0; i < s->n; i++) {
		if (memchr_inv(buf + at, KCM_POISON, s->off[i] - at))
			return false;
		at = s->off[i] + s->len[i];
	}
	return !memchr_inv(buf + at, KCM_POISON, end - at);
}

/*
 * Bytes [off, off + len) of the fast-register pages: poison the pages
 * they lie in, then fill them with random data when @fill. Return: their
 * CRC32c; *@untouched tells whether the other bytes are poison.
 */
static u32 kcm_fr_walk(struct kcm *t, u32 off, u32 len, bool poison,
		       bool fill, bool *untouched)
{
	u32 npages = DIV_ROUND_UP(off + len, PAGE_SIZE), crc = ~0, i;

	*untouched = true;
	for (i = 0; i < npages; i++) {
		u8 *p = page_address(t->pages[i]);
		u32 lo = i * PAGE_SIZE;
		u32 from = clamp_t(u32, off, lo, lo + PAGE_SIZE) - lo;
		u32 to = clamp_t(u32, off + len, lo, lo + PAGE_SIZE) - lo;

		if (poison)
			memset(p, KCM_POISON, PAGE_SIZE);
		if (fill)
			get_random_bytes(p + from, to - from);
		crc = crc32c(crc, p + from, to - from);
		if (memchr_inv(p, KCM_POISON, from) ||
		    memchr_inv(p + to, KCM_POISON, PAGE_SIZE - to))
			*untouched = false;
	}
	return crc;
}

static void kcm_fr_unmap(struct kcm *t)
{
	if (t->sg_nents)
		ib_dma_unmap_sg(t->a.cm.id->device, t->sgl, t->sg_nents,
				DMA_BIDIRECTIONAL);
	t->sg_nents = 0;
}

/*
 * Map bytes [off, off + len) of the pages into the client's MR with a new
 * key, as a ULP maps an I/O's scatterlist.
 */
static bool kcm_fr_map(struct kcm *t, u32 off, u32 len)
{
	int npages = DIV_ROUND_UP(off + len, PAGE_SIZE), i, n;
	struct ib_device *dev = t->a.cm.id->device;

	kcm_fr_unmap(t);
	sg_init_table(t->sgl, npages);
	for (i = 0; i < npages; i++) {
		u32 from = i ? 0 : off;
		u32 to = min_t(u32, off + len - i * PAGE_SIZE, PAGE_SIZE);

		sg_set_page(&t->sgl[i], t->pages[i], to - from, from);
	}
	n = ib_dma_map_sg(dev, t->sgl, npages, DMA_BIDIRECTIONAL);
	if (n != npages) {
		pr_info("# A: ib_dma_map_sg of %d pages gave %d\n", npages, n);
		if (n > 0)
			ib_dma_unmap_sg(dev, t->sgl, npages, DMA_BIDIRECTIONAL);
		return false;
	}
	t->sg_nents = npages;
	ib_update_fast_reg_key(t->mr, ib_inc_rkey(t->mr->rkey));
	n = ib_map_mr_sg(t->mr, t->sgl, npages, NULL, PAGE_SIZE);
	if (n != npages || t->mr->length != len ||
	    t->mr->iova != sg_dma_address(&t->sgl[0])) {
		pr_info("# A: ib_map_mr_sg mapped %d of %d, length %llu\n", n,
			npages, t->mr->length);
		return false;
	}
	return true;
}

/*
 * The client registers its MR (REG_MR) with @access and sends the server
 * where it is, with @crc; the server receives it. Return: the server has
 * the message in b->msg[KCM_MSG_IN].
 */
static bool kcm_fr_offer(struct kcm *t, int access, u32 crc)
{
	struct kcm_end *a = &t->a, *b = &t->b;
	struct ib_sge in = kcm_msg_sge(b, KCM_MSG_IN);
	struct ib_sge out = kcm_msg_sge(a, KCM_MSG_OUT);
	struct ib_send_wr send = {
		.wr_cqe = kcm_cqe(a, KCM_W_SEND),
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
		.sg_list = &out,
		.num_sge = 1,
	};
	struct ib_reg_wr reg = {
		.wr = {
			.next = &send,
			.wr_cqe = kcm_cqe(a, KCM_W_REG),
			.opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED,
		},
		.mr = t->mr,
		.key = t->mr->rkey,
		.access = access,
	};

	a->msg[KCM_MSG_OUT] = (struct kcm_msg){
		.addr = cpu_to_le64(t->mr->iova),
		.rkey = cpu_to_le32(t->mr->rkey),
		.len = cpu_to_le32(t->mr->length),
		.crc = cpu_to_le32(crc),
	};
	/* REG_MR and the Send in one post: the MR is valid before it goes. */
	return kcm_post_recv(b, &in, 1) &&
	       kcm_posted(a, ib_post_send(a->cm.id->qp, &reg.wr, NULL),
			  "REG_MR and a Send") &&
	       kcm_wait_wc(a, KCM_W_REG, IB_WC_REG_MR) &&
	       kcm_wait_wc(a, KCM_W_SEND, IB_WC_SEND) &&
	       kcm_wait_wc(b, KCM_W_RECV, IB_WC_RECV);
}

/*
 * The server ends an operation on the client's MR as NVMe-oF targets do: a
 * Send with Invalidate of its rkey, carrying @crc. Return: the client got
 * it.
 */
static bool kcm_fr_release(struct kcm *t, u32 crc)
{
	struct kcm_end *a = &t->a, *b = &t->b;
	struct ib_sge in = kcm_msg_sge(a, KCM_MSG_IN);
	struct ib_sge out = kcm_msg_sge(b, KCM_MSG_OUT);

	b->msg[KCM_MSG_OUT] = (struct kcm_msg){ .crc = cpu_to_le32(crc) };
	return kcm_post_recv(a, &in, 1) &&
	       kcm_post_send(b, KCM_W_SEND2, IB_WR_SEND_WITH_INV, &out, 1, 0,
			     le32_to_cpu(b->msg[KCM_MSG_IN].rkey)) &&
	       kcm_wait_wc(b, KCM_W_SEND2, IB_WC_SEND) &&
	       kcm_wait_wc(a, KCM_W_RECV, IB_WC_RECV);
}

/* Did the client's receive say it invalidated the MR's current rkey? */
static bool kcm_fr_invalidated(struct kcm *t)
{
	struct ib_wc *wc = &t->a.w[KCM_W_RECV].wc;

	return (wc->wc_flags & IB_WC_WITH_INVALIDATE) &&
	       wc->ex.invalidate_rkey == t->mr->rkey &&
	       wc->byte_len == sizeof(struct kcm_msg);
}

/* Send A -> B, gathered from KCM_SGE pieces, scattered into 2. */
static bool kcm_case_send(struct kcm *t, const struct kcm_size *sz)
{
	struct ib_sge ssge[KCM_SGE], rsge[KCM_SGE];
	struct kcm_end *a = &t->a, *b = &t->b;
	struct kcm_sgl src, dst;
	bool ok;
	u32 crc;

	kcm_split(&src, 0, sz->len, KCM_SGE);
	kcm_split(&dst, 0, sz->len, 2);
	get_random_bytes(a->buf, kcm_sgl_end(&src));
	memset(b->buf, KCM_POISON, kcm_sgl_end(&dst) + KCM_GUARD);
	crc = kcm_crc(a->buf, &src);
	kcm_sges(a, &src, ssge);
	kcm_sges(b, &dst, rsge);
	ok = kcm_post_recv(b, rsge, dst.n) &&
	     kcm_post_send(a, KCM_W_SEND, IB_WR_SEND, ssge, src.n, 0, 0) &&
	     kcm_wait_wc(a, KCM_W_SEND, IB_WC_SEND) &&
	     kcm_wait_wc(b, KCM_W_RECV, IB_WC_RECV);
	return kt_check(&t->kt, ok && b->w[KCM_W_RECV].wc.byte_len == sz->len &&
			!(b->w[KCM_W_RECV].wc.wc_flags & IB_WC_WITH_INVALIDATE) &&
			kcm_crc(b->buf, &dst) == crc &&
			kcm_untouched(b->buf, &dst, kcm_sgl_end(&dst) + KCM_GUARD),
			"%u B: Send A->B from %d SGEs into %d: byte_len, crc32c 0x%08x, the gap and guard bytes untouched",
			sz->len, src.n, dst.n, crc);
}

/* RDMA Write B -> A into A's fast-registered MR, then Send with Invalidate. */
static bool kcm_case_write(struct kcm *t, const struct kcm_size *sz)
{
	struct kcm_end *a = &t->a, *b = &t->b;
	struct ib_sge sge[KCM_SGE];
	struct kcm_sgl src;
	bool ok, untouched;
	u32 crc, got;

	kcm_fr_walk(t, sz->fr_off, sz->len, true, false, &untouched);
	ok = kcm_fr_map(t, sz->fr_off, sz->len) &&
	     kcm_fr_offer(t, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE, 0);
	kcm_split(&src, 0, sz->len, KCM_SGE);
	get_random_bytes(b->buf, kcm_sgl_end(&src));
	crc = kcm_crc(b->buf, &src);
	kcm_sges(b, &src, sge);
	ok = ok && le32_to_cpu(b->msg[KCM_MSG_IN].len) == sz->len &&
	     kcm_post_send(b, KCM_W_SEND, IB_WR_RDMA_WRITE, sge, src.n,
			   le64_to_cpu(b->msg[KCM_MSG_IN].addr),
			   le32_to_cpu(b->msg[KCM_MSG_IN].rkey)) &&
	     kcm_wait_wc(b, KCM_W_SEND, IB_WC_RDMA_WRITE);
	if (!kt_check(&t->kt, ok,
		      "%u B: A fast-registers its MR (%lu page(s) from offset %u), sends the rkey, B writes it from %d SGEs",
		      sz->len, DIV_ROUND_UP(sz->fr_off + sz->len, PAGE_SIZE),
		      sz->fr_off, src.n))
		return false;
	/* Completing the Send at A orders the Write's data before it. */
	ok = kcm_fr_release(t, crc);
	got = kcm_fr_walk(t, sz->fr_off, sz->len, false, false, &untouched);
	kt_check(&t->kt, ok && le32_to_cpu(a->msg[KCM_MSG_IN].crc) == got &&
		 got == crc && untouched,
		 "%u B: the Write's data is in A's pages (crc32c 0x%08x, got 0x%08x), the bytes around it untouched",
		 sz->len, crc, got);
	return kt_check(&t->kt, ok && kcm_fr_invalidated(t),
			"%u B: B's Send with Invalidate arrives with IB_WC_WITH_INVALIDATE and the MR's rkey 0x%x",
			sz->len, t->mr->rkey);
}

/* RDMA Read B <- A out of A's fast-registered MR, then Send with Invalidate. */
static bool kcm_case_read(struct kcm *t, const struct kcm_size *sz)
{
	struct kcm_end *b = &t->b;
	struct kcm_sgl dst;
	struct ib_sge sge;
	bool ok, untouched;
	u32 crc;

	crc = kcm_fr_walk(t, sz->fr_off, sz->len, true, true, &untouched);
	kcm_split(&dst, KCM_READ_OFF, sz->len, 1);
	memset(b->buf, KCM_POISON, kcm_sgl_end(&dst) + KCM_GUARD);
	kcm_sges(b, &dst, &sge);
	ok = kcm_fr_map(t, sz->fr_off, sz->len) &&
	     kcm_fr_offer(t, IB_ACCESS_REMOTE_READ, crc) &&
	     kcm_post_send(b, KCM_W_SEND, IB_WR_RDMA_READ, &sge, 1,
			   le64_to_cpu(b->msg[KCM_MSG_IN].addr),
			   le32_to_cpu(b->msg[KCM_MSG_IN].rkey)) &&
	     kcm_wait_wc(b, KCM_W_SEND, IB_WC_RDMA_READ);
	if (!kt_check(&t->kt, ok && kcm_crc(b->buf, &dst) == crc &&
		      le32_to_cpu(b->msg[KCM_MSG_IN].crc) == crc &&
		      kcm_untouched(b->buf, &dst, kcm_sgl_end(&dst) + KCM_GUARD),
		      "%u B: B reads A's fast-registered pages (offset %u): crc32c 0x%08x, the bytes around the sink untouched",
		      sz->len, sz->fr_off, crc))
		return false;
	return kt_check(&t->kt, kcm_fr_release(t, 0) && kcm_fr_invalidated(t),
			"%u B: B's Send with Invalidate after the Read arrives with IB_WC_WITH_INVALIDATE and the rkey 0x%x",
			sz->len, t->mr->rkey);
}

/*
 * B fast-registers @len bytes of its buffer (from KCM_READ_OFF) in @mr for
 * local writes, as rdma_rw maps an I/O's pages. Return: it is valid.
 */
static bool kcm_sink_reg(struct kcm *t, struct ib_mr *mr, u32 len)
{
	struct kcm_end *b = &t->b;
	struct scatterlist sg;
	struct ib_reg_wr reg = {
		.wr = {
			.wr_cqe = kcm_cqe(b, KCM_W_REG),
			.opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED,
		},
		.mr = mr,
		.access = IB_ACCESS_LOCAL_WRITE,
	};

	/* The buffer is DMA-mapped already: name its bus address. */
	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = b->buf_dma + KCM_READ_OFF;
	sg_dma_len(&sg) = len;
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	reg.key = mr->rkey;
	return ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE) == 1 &&
	       kcm_posted(b, ib_post_send(b->cm.id->qp, &reg.wr, NULL), "REG_MR") &&
	       kcm_wait_wc(b, KCM_W_REG, IB_WC_REG_MR);
}

/* A fast-register MR on B's PD for a Read's sink; NULL (a failed point) if not. */
static struct ib_mr *kcm_sink_alloc(struct kcm *t)
{
	struct ib_mr *sink = ib_alloc_mr(t->b.pd, IB_MR_TYPE_MEM_REG, 4);

	if (!kt_check(&t->kt, !IS_ERR(sink), "B: ib_alloc_mr for a Read's sink (%d)",
		      PTR_ERR_OR_ZERO(sink)))
		return NULL;
	return sink;
}

/* Post B's RDMA Read with Invalidate of @inv out of A's MR into @sink. */
static int kcm_read_inv_post(struct kcm *t, struct ib_mr *sink, u32 len,
			     u32 inv)
{
	struct kcm_end *b = &t->b;
	struct ib_sge sge = {
		.addr = sink->iova,
		.length = len,
		.lkey = sink->lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = kcm_cqe(b, KCM_W_SEND),
			.opcode = IB_WR_RDMA_READ_WITH_INV,
			.send_flags = IB_SEND_SIGNALED,
			.sg_list = &sge,
			.num_sge = 1,
			.ex.invalidate_rkey = inv,
		},
		.remote_addr = le64_to_cpu(b->msg[KCM_MSG_IN].addr),
		.rkey = le32_to_cpu(b->msg[KCM_MSG_IN].rkey),
	};

	return ib_post_send(b->cm.id->qp, &wr.wr, NULL);
}

static bool kcm_read_inv(struct kcm *t, struct ib_mr *sink, u32 len, u32 inv)
{
	return kcm_posted(&t->b, kcm_read_inv_post(t, sink, len, inv),
			  "a Read with Invalidate");
}

/*
 * What rdma_rw does for every RDMA Read of an iWARP target (NVMe-oF, iSER,
 * NFS/RDMA servers): B reads into an MR it fast-registered for the I/O,
 * with IB_WR_RDMA_READ_WITH_INV of that MR (V-WR-8, V-INV-1, V-INV-11).
 * The data must land, the Read complete as IB_WC_RDMA_READ, and the MR be
 * invalid by then: B's next REG_MR of it succeeds, which kiwi refuses for
 * a valid MR.
 */
static void kcm_case_read_inv(struct kcm *t)
{
	const u32 len = 5003, off = 123;
	struct kcm_end *b = &t->b;
	struct kcm_sgl dst = { .n = 1, .off = { KCM_READ_OFF }, .len = { len } };
	struct ib_mr *sink;
	bool ok, untouched;
	u32 crc;

	sink = kcm_sink_alloc(t);
	if (!sink)
		return;
	crc = kcm_fr_walk(t, off, len, true, true, &untouched);
	memset(b->buf, KCM_POISON, KCM_READ_OFF + len + KCM_GUARD);
	ok = kcm_fr_map(t, off, len) &&
	     kcm_fr_offer(t, IB_ACCESS_REMOTE_READ, crc) &&
	     kcm_sink_reg(t, sink, len) &&
	     kcm_read_inv(t, sink, len, sink->lkey) &&
	     kcm_wait_wc(b, KCM_W_SEND, IB_WC_RDMA_READ);
	kt_check(&t->kt, ok && b->w[KCM_W_SEND].wc.byte_len == len &&
		 kcm_crc(b->buf, &dst) == crc &&
		 kcm_untouched(b->buf, &dst, KCM_READ_OFF + len + KCM_GUARD),
		 "%u B: B's RDMA Read with Invalidate into its fast-registered sink completes as a Read: crc32c 0x%08x, the bytes around it untouched",
		 len, crc);
	kt_check(&t->kt, ok && kcm_sink_reg(t, sink, len),
		 "the Read invalidated the sink's STag: B may fast-register the MR again");
	kt_check(&t->kt, ok && kcm_fr_release(t, 0) && kcm_fr_invalidated(t),
		 "B's Send with Invalidate after it releases A's MR");
	kt_check(&t->kt, !ib_dereg_mr(sink), "B: ib_dereg_mr of the sink");
}

/* After a failed WR: the connection ends, and both QPs are drained. */
static void kcm_conn_ends(struct kcm *t)
{
	kt_check(&t->kt, kt_cm_wait(&t->a.cm, RDMA_CM_EVENT_DISCONNECTED) &&
		 kt_cm_wait(&t->b.cm, RDMA_CM_EVENT_DISCONNECTED),
		 "and the connection ends: both DISCONNECTED");
	ib_drain_qp(t->a.cm.id->qp);
	ib_drain_qp(t->b.cm.id->qp);
}

/*
 * A Read with Invalidate names the MR it reads into. One that names
 * another MR is refused at post with -EINVAL, and nothing goes out; one
 * that names the sink's MR by an older key, as rdma_rw does, reads and
 * invalidates the sink's current STag (V-INV-1). The connection lives on.
 */
static void kcm_disconnect(struct kcm *t);

static void kcm_read_inv_bad(struct kcm *t)
{
	const u32 len = 4096;
	struct kcm_end *b = &t->b;
	struct kcm_sgl dst = { .n = 1, .off = { KCM_READ_OFF }, .len = { len } };
	struct ib_mr *sink;
	bool ok, untouched;
	int ret;
	u32 crc;

	sink = kcm_sink_alloc(t);
	if (!sink)
		return;
	crc = kcm_fr_walk(t, 0, len, true, true, &untouched);
	memset(b->buf, KCM_POISON, KCM_READ_OFF + len + KCM_GUARD);
	ok = kcm_fr_map(t, 0, len) &&
	     kcm_fr_offer(t, IB_ACCESS_REMOTE_READ, crc) &&
	     kcm_sink_reg(t, sink, len);
	ret = ok ? kcm_read_inv_post(t, sink, len, sink->lkey ^ 0x80000000) : 0;
	kt_check(&t->kt, ok && ret == -EINVAL,
		 "a Read with Invalidate of an STag other than its sink's is -EINVAL at post (%d)",
		 ret);
	ok = ok && kcm_read_inv(t, sink, len, (sink->lkey & ~0xff) |
				((sink->lkey - 1) & 0xff)) &&
	     kcm_wait_wc(b, KCM_W_SEND, IB_WC_RDMA_READ);
	kt_check(&t->kt, ok && kcm_crc(b->buf, &dst) == crc &&
		 kcm_untouched(b->buf, &dst, KCM_READ_OFF + len + KCM_GUARD),
		 "then one naming the sink by its previous key reads the data: crc32c 0x%08x",
		 crc);
	kt_check(&t->kt, ok && kcm_sink_reg(t, sink, len),
		 "and invalidates the sink's current STag: B may fast-register it again");
	kt_check(&t->kt, ok && kcm_fr_release(t, 0) && kcm_fr_invalidated(t),
		 "the connection lives on: B's Send with Invalidate reaches A");
	kcm_disconnect(t);
	kt_check(&t->kt, !ib_dereg_mr(sink), "B: ib_dereg_mr of the sink");
}

/* Fill @sgl with @len bytes from @buf, split at page boundaries. */
static int kcm_rw_sgl(struct scatterlist *sgl, u8 *buf, u32 len)
{
	int n = 0;

	sg_init_table(sgl, DIV_ROUND_UP(offset_in_page(buf) + len, PAGE_SIZE));
	while (len) {
		u32 piece = min_t(u32, len, PAGE_SIZE - offset_in_page(buf));

		sg_set_buf(&sgl[n++], buf, piece);
		buf += piece;
		len -= piece;
	}
	return n;
}

/*
 * B reads A's MR through the kernel's own rdma_rw API, as NVMe-oF, iSER
 * and NFS/RDMA targets do: rdma_rw_ctx_init() over a scatterlist of B's
 * buffer, rdma_rw_ctx_post(), rdma_rw_ctx_destroy(). On iWARP rdma_rw
 * reads into an MR from the QP's pool with RDMA Read with Invalidate, and
 * it bumps the MR's key after it filled the Read's invalidate field (the
 * field names the previous key). Several rounds reuse the pool's MRs.
 */
static bool kcm_case_rw_read(struct kcm *t, const struct kcm_size *sz)
{
	struct kcm_end *b = &t->b;
	struct kcm_sgl dst = { .n = 1, .off = { KCM_READ_OFF }, .len = { sz->len } };
	struct rdma_rw_ctx ctx;
	bool ok = true, untouched;
	int round, n = 0, nents;
	u32 crc;

	/* One entry a page, as ULPs build their I/O's scatterlists. */
	nents = kcm_rw_sgl(t->rw_sgl, b->buf + KCM_READ_OFF, sz->len);

	for (round = 0; ok && round < KCM_RW_ROUNDS; round++) {
		crc = kcm_fr_walk(t, sz->fr_off, sz->len, true, true, &untouched);
		memset(b->buf, KCM_POISON, KCM_READ_OFF + sz->len + KCM_GUARD);
		ok = kcm_fr_map(t, sz->fr_off, sz->len) &&
		     kcm_fr_offer(t, IB_ACCESS_REMOTE_READ, crc);
		if (!ok)
			break;
		n = rdma_rw_ctx_init(&ctx, b->cm.id->qp, b->cm.id->port_num,
				     t->rw_sgl, nents,
				     0, le64_to_cpu(b->msg[KCM_MSG_IN].addr),
				     le32_to_cpu(b->msg[KCM_MSG_IN].rkey),
				     DMA_FROM_DEVICE);
		if (n <= 0) {
			pr_info("# B: rdma_rw_ctx_init: %d\n", n);
			ok = false;
			break;
		}
		ok = kcm_posted(b, rdma_rw_ctx_post(&ctx, b->cm.id->qp,
						    b->cm.id->port_num,
						    kcm_cqe(b, KCM_W_SEND), NULL),
				"rdma_rw_ctx_post") &&
		     kcm_wait_wc(b, KCM_W_SEND, IB_WC_RDMA_READ);
		rdma_rw_ctx_destroy(&ctx, b->cm.id->qp, b->cm.id->port_num,
				    t->rw_sgl, nents, DMA_FROM_DEVICE);
		ok = ok && kcm_crc(b->buf, &dst) == crc &&
		     kcm_untouched(b->buf, &dst, KCM_READ_OFF + sz->len + KCM_GUARD) &&
		     kcm_fr_release(t, 0) && kcm_fr_invalidated(t);
	}
	return kt_check(&t->kt, ok,
			"%u B: rdma_rw_ctx_init/post/destroy reads A's MR into B's buffer (%d WRs), %d rounds: data intact, the bytes around it untouched",
			sz->len, n, KCM_RW_ROUNDS);
}

/* iWARP reads into one sink: a Read with two local SGEs is refused. */
static void kcm_case_read_sge(struct kcm *t)
{
	struct kcm_end *b = &t->b;
	const struct ib_send_wr *bad = NULL;
	struct ib_sge sge[2];
	struct kcm_sgl dst;
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = kcm_cqe(b, KCM_W_SEND),
			.opcode = IB_WR_RDMA_READ,
			.send_flags = IB_SEND_SIGNALED,
			.sg_list = sge,
			.num_sge = 2,
		},
		.remote_addr = t->mr->iova,
		.rkey = t->mr->rkey,
	};
	int ret;

	kt_check(&t->kt, b->cm.id->device->attrs.max_sge_rd == 1,
		 "max_sge_rd is 1 (%u)", b->cm.id->device->attrs.max_sge_rd);
	kcm_split(&dst, 0, 64, 2);
	kcm_sges(b, &dst, sge);
	ret = ib_post_send(b->cm.id->qp, &wr.wr, &bad);
	kt_check(&t->kt, ret == -EINVAL && bad == &wr.wr,
		 "an RDMA Read with 2 local SGEs is refused at post: -EINVAL, bad_wr is it (%d)",
		 ret);
}

/* ---- connection set-up and tear-down ---- */

static void kcm_end_init(struct kcm_end *e, const char *name)
{
	int i;

	memset(e, 0, sizeof(*e));
	kt_cm_init(&e->cm, name);
	for (i = 0; i < KCM_W_NUM; i++) {
		e->w[i].cqe.done = kcm_wr_done;
		init_completion(&e->w[i].done);
	}
}

/* PD, CQ, QP and buffers on the device rdma_cm gave @e's id. */
static bool kcm_end_setup(struct kcm_end *e)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 8, .max_recv_wr = 8,
			.max_send_sge = KCM_SGE, .max_recv_sge = KCM_SGE,
			.max_rdma_ctxs = KCM_RW_CTXS,
		},
	};
	struct ib_device *dev = e->cm.id->device;
	int ret;

	if (!e->pd)
		e->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(e->pd)) {
		pr_info("# %s: ib_alloc_pd: %ld\n", e->cm.name, PTR_ERR(e->pd));
		e->pd = NULL;
		return false;
	}
	e->cq = ib_alloc_cq(dev, NULL, 32, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(e->cq)) {
		pr_info("# %s: ib_alloc_cq: %ld\n", e->cm.name, PTR_ERR(e->cq));
		e->cq = NULL;
		return false;
	}
	init.send_cq = e->cq;
	init.recv_cq = e->cq;
	ret = rdma_create_qp(e->cm.id, e->pd, &init);
	if (ret) {
		pr_info("# %s: rdma_create_qp: %d\n", e->cm.name, ret);
		return false;
	}
	e->buf = alloc_pages_exact(KCM_BUF_LEN, GFP_KERNEL);
	e->msg = kcalloc(2, sizeof(*e->msg), GFP_KERNEL);
	if (!e->buf || !e->msg) {
		pr_info("# %s: no memory for the buffers\n", e->cm.name);
		return false;
	}
	e->buf_dma = ib_dma_map_single(dev, e->buf, KCM_BUF_LEN,
				       DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, e->buf_dma)) {
		e->buf_dma = 0;
		return false;
	}
	e->msg_dma = ib_dma_map_single(dev, e->msg, 2 * sizeof(*e->msg),
				       DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, e->msg_dma)) {
		e->msg_dma = 0;
		return false;
	}
	return true;
}

/* Undo kcm_end_setup() and destroy the id; the QP is drained or dead. */
static void kcm_end_free(struct kcm_end *e)
{
	struct ib_device *dev = e->cm.id ? e->cm.id->device : NULL;

	if (e->cm.id && e->cm.id->qp)
		rdma_destroy_qp(e->cm.id);
	if (e->cq)
		ib_free_cq(e->cq);
	if (e->msg_dma)
		ib_dma_unmap_single(dev, e->msg_dma, 2 * sizeof(*e->msg),
				    DMA_BIDIRECTIONAL);
	if (e->buf_dma)
		ib_dma_unmap_single(dev, e->buf_dma, KCM_BUF_LEN,
				    DMA_BIDIRECTIONAL);
	kfree(e->msg);
	if (e->buf)
		free_pages_exact(e->buf, KCM_BUF_LEN);
	if (e->pd && !e->keep_pd)
		ib_dealloc_pd(e->pd);
	if (e->cm.id)
		rdma_destroy_id(e->cm.id);
}

static bool kcm_fr_setup(struct kcm *t)
{
	int i;

	t->mr = ib_alloc_mr(t->a.pd, IB_MR_TYPE_MEM_REG, KCM_FR_PAGES);
	if (IS_ERR(t->mr)) {
		pr_info("# A: ib_alloc_mr: %ld\n", PTR_ERR(t->mr));
		t->mr = NULL;
		return false;
	}
	for (i = 0; i < KCM_FR_PAGES; i++) {
		t->pages[i] = alloc_page(GFP_KERNEL);
		if (!t->pages[i])
			return false;
	}
	return true;
}

static void kcm_fr_free(struct kcm *t)
{
	int i;

	kcm_fr_unmap(t);
	for (i = 0; i < KCM_FR_PAGES; i++) {
		if (t->pages[i])
			__free_page(t->pages[i]);
		t->pages[i] = NULL;
	}
	if (t->mr)
		kt_check(&t->kt, !ib_dereg_mr(t->mr), "A: ib_dereg_mr");
	t->mr = NULL;
}

/*
 * Both sides disconnect and see DISCONNECTED; ib_drain_qp then returns
 * only after the receive each side left posted completed as flushed.
 */
static void kcm_disconnect(struct kcm *t)
{
	struct kcm_end *a = &t->a, *b = &t->b;
	struct ib_sge ain = kcm_msg_sge(a, KCM_MSG_IN);
	struct ib_sge bin = kcm_msg_sge(b, KCM_MSG_IN);
	struct ib_wc *awc = &a->w[KCM_W_RECV].wc;
	struct ib_wc *bwc = &b->w[KCM_W_RECV].wc;
	bool posted;

	posted = kcm_post_recv(a, &ain, 1) && kcm_post_recv(b, &bin, 1);
	kt_check(&t->kt, !rdma_disconnect(a->cm.id), "A: rdma_disconnect");
	kt_check(&t->kt, kt_cm_wait(&b->cm, RDMA_CM_EVENT_DISCONNECTED),
		 "B: DISCONNECTED after A's disconnect");
	kt_check(&t->kt, kt_cm_wait(&a->cm, RDMA_CM_EVENT_DISCONNECTED),
		 "A: DISCONNECTED");
	kt_check(&t->kt, !rdma_disconnect(b->cm.id),
		 "B: rdma_disconnect after the peer's is 0");
	ib_drain_qp(a->cm.id->qp);
	ib_drain_qp(b->cm.id->qp);
	kt_check(&t->kt, posted && try_wait_for_completion(&a->w[KCM_W_RECV].done) &&
		 try_wait_for_completion(&b->w[KCM_W_RECV].done) &&
		 awc->status == IB_WC_WR_FLUSH_ERR &&
		 bwc->status == IB_WC_WR_FLUSH_ERR,
		 "ib_drain_qp on both: the receives left posted completed flushed (%s, %s)",
		 ib_wc_status_msg(awc->status), ib_wc_status_msg(bwc->status));
}

/* Data of every size, each way, then the end of the connection. */
static void kcm_transfer(struct kcm *t)
{
	const struct kcm_size *sz;

	for (sz = kcm_sizes; sz < kcm_sizes + ARRAY_SIZE(kcm_sizes); sz++)
		if (!kcm_case_send(t, sz) || !kcm_case_write(t, sz) ||
		    !kcm_case_read(t, sz))
			break;
	for (sz = kcm_sizes; sz < kcm_sizes + ARRAY_SIZE(kcm_sizes); sz++)
		if (!kcm_case_rw_read(t, sz))
			break;
	if (sz == kcm_sizes + ARRAY_SIZE(kcm_sizes)) {
		kcm_case_read_inv(t);
		kcm_case_read_sge(t);
	}
	kcm_disconnect(t);
}

/*
 * The rkey a Send with Invalidate named is dead: B's next Write with it is
 * refused by A with a Terminate, which ends the connection, and A's pages
 * keep what the first Write put there.
 */
static void kcm_stale_rkey(struct kcm *t)
{
	const struct kcm_size *sz = &kcm_sizes[0];
	struct kcm_end *a = &t->a, *b = &t->b;
	bool posted, untouched;
	u32 rkey, before, after;
	struct ib_sge sge;

	if (!kcm_case_write(t, sz))
		return;
	rkey = le32_to_cpu(b->msg[KCM_MSG_IN].rkey);
	before = kcm_fr_walk(t, sz->fr_off, sz->len, false, false, &untouched);
	get_random_bytes(b->buf, sz->len);
	sge = (struct ib_sge){
		.addr = b->buf_dma,
		.length = sz->len,
		.lkey = b->pd->local_dma_lkey,
	};
	posted = kcm_post_send(b, KCM_W_SEND, IB_WR_RDMA_WRITE, &sge, 1,
			       le64_to_cpu(b->msg[KCM_MSG_IN].addr), rkey);
	kt_check(&t->kt, posted && rkey == t->mr->rkey &&
		 kt_cm_wait(&a->cm, RDMA_CM_EVENT_DISCONNECTED) &&
		 kt_cm_wait(&b->cm, RDMA_CM_EVENT_DISCONNECTED),
		 "B's RDMA Write to the invalidated rkey 0x%x (the MR's) ends the connection: both DISCONNECTED",
		 rkey);
	after = kcm_fr_walk(t, sz->fr_off, sz->len, false, false, &untouched);
	kt_check(&t->kt, after == before && untouched,
		 "A's pages keep the first Write's data (crc32c 0x%08x, now 0x%08x)",
		 before, after);
	/* B's Write completes (or flushes) before its slot goes away. */
	ib_drain_qp(a->cm.id->qp);
	ib_drain_qp(b->cm.id->qp);
}

/*
 * V-FEN-4: A posts a 1 MiB Send out of its fast-registered MR and a Local
 * Invalidate of the MR with IB_SEND_FENCE in one list: the Send completes
 * and delivers its data, then the MR becomes invalid. V-INV-12: after a
 * new registration, a Local Invalidate and a Send out of the MR in one
 * list: the Send fails with IB_WC_LOC_PROT_ERR, which ends the connection
 * (so the data check comes first: an aborted connection may drop what A
 * had queued).
 */
static void kcm_fenced_inv(struct kcm *t)
{
	const u32 len = SZ_1M;
	struct kcm_end *a = &t->a, *b = &t->b;
	struct kcm_sgl dst = { .n = 1, .off = { 0 }, .len = { len } };
	struct ib_sge data, sink = {
		.addr = b->buf_dma,
		.length = len,
		.lkey = b->pd->local_dma_lkey,
	};
	struct ib_send_wr inv = {
		.wr_cqe = kcm_cqe(a, KCM_W_REG),
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED | IB_SEND_FENCE,
	};
	struct ib_send_wr send = {
		.wr_cqe = kcm_cqe(a, KCM_W_SEND),
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
		.sg_list = &data,
		.num_sge = 1,
	};
	struct ib_wc *wc = &a->w[KCM_W_SEND].wc;
	bool ok, untouched;
	u32 crc;

	crc = kcm_fr_walk(t, 0, len, true, true, &untouched);
	ok = kcm_fr_map(t, 0, len) &&
	     kcm_fr_offer(t, IB_ACCESS_LOCAL_WRITE, crc);
	memset(b->buf, KCM_POISON, len + KCM_GUARD);
	data = (struct ib_sge){ t->mr->iova, len, t->mr->lkey };
	inv.ex.invalidate_rkey = t->mr->rkey;
	send.next = &inv;
	ok = ok && kcm_post_recv(b, &sink, 1) &&
	     kcm_posted(a, ib_post_send(a->cm.id->qp, &send, NULL),
			"a Send and a fenced Local Invalidate");
	kt_check(&t->kt, ok && kcm_wait_wc(a, KCM_W_SEND, IB_WC_SEND) &&
		 kcm_wait_wc(b, KCM_W_RECV, IB_WC_RECV) &&
		 b->w[KCM_W_RECV].wc.byte_len == len &&
		 kcm_crc(b->buf, &dst) == crc &&
		 kcm_untouched(b->buf, &dst, len + KCM_GUARD),
		 "V-FEN-4: the 1 MiB Send from the MR ahead of a fenced Local Invalidate delivered its data (crc32c 0x%08x)",
		 crc);
	kt_check(&t->kt, ok && kcm_wait_wc(a, KCM_W_REG, IB_WC_LOCAL_INV),
		 "V-FEN-4: the fenced Local Invalidate of the MR completes after it");

	/* Valid again under a new key, then invalidated ahead of a Send. */
	ok = ok && kcm_fr_map(t, 0, len) &&
	     kcm_fr_offer(t, IB_ACCESS_LOCAL_WRITE, crc);
	data.lkey = t->mr->lkey;
	data.length = 64;
	inv = (struct ib_send_wr){
		.next = &send,
		.wr_cqe = kcm_cqe(a, KCM_W_REG),
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = t->mr->rkey,
	};
	send.next = NULL;
	send.wr_cqe = kcm_cqe(a, KCM_W_SEND);
	ok = ok && kcm_posted(a, ib_post_send(a->cm.id->qp, &inv, NULL),
			      "a Local Invalidate and a Send") &&
	     kcm_wait_wc(a, KCM_W_REG, IB_WC_LOCAL_INV) &&
	     wait_for_completion_timeout(&a->w[KCM_W_SEND].done, KT_TIMEOUT);
	kt_check(&t->kt, ok && wc->status == IB_WC_LOC_PROT_ERR,
		 "V-INV-12: the Send from the MR behind its Local Invalidate completes with IB_WC_LOC_PROT_ERR (%s)",
		 ok ? ib_wc_status_msg(wc->status) : "no completion");
	kcm_conn_ends(t);
}

static bool kcm_addr(struct kcm *t, struct net *net, const char *addr,
		     const char *port, struct sockaddr_storage *ss)
{
	int ret = inet_pton_with_scope(net, AF_UNSPEC, addr, port, ss);

	return kt_check(&t->kt, !ret, "address %s (%d)", addr, ret);
}

static bool kcm_on(struct kcm *t, struct kcm_end *e, const char *want)
{
	const char *got = e->cm.id->device ? dev_name(&e->cm.id->device->dev) : "-";

	return kt_check(&t->kt, !strcmp(got, want), "%s is on %s (%s)",
			e->cm.name, want, got);
}

/* A connection from @src (A) to @dst (B) that @use uses and ends. */
static void kcm_run(struct kcm *t, const char *name, const char *src,
		    const char *dst, void (*use)(struct kcm *t))
{
	struct kcm_end *a = &t->a, *b = &t->b;
	struct kt_cm_end *l = &t->l;
	struct rdma_conn_param param = {
		.responder_resources = KCM_DEPTH,
		.initiator_depth = KCM_DEPTH,
	};
	struct sockaddr_storage sa, sb;
	int ret;

	t->kt.name = name;
	kcm_end_init(a, "A");
	kcm_end_init(b, "B");
	kt_cm_init(l, "listener");
	a->pd = t->sec.pd;
	a->keep_pd = !!a->pd;
	if (!kcm_addr(t, t->net_a, src, "0", &sa) ||
	    !kcm_addr(t, t->net_b, dst, port, &sb))
		return;

	/* B takes the listener's one connect request; it refuses others. */
	kt_cm_serve(l, &b->cm);
	ret = kt_cm_create(l, t->net_b);
	if (!ret)
		ret = rdma_bind_addr(l->id, (struct sockaddr *)&sb);
	if (!ret)
		ret = rdma_listen(l->id, 1);
	if (!kt_check(&t->kt, !ret, "B: rdma_listen on %pISpc (%d)", &sb, ret))
		goto out;

	ret = kt_cm_create(&a->cm, t->net_a);
	if (ret) {
		kt_check(&t->kt, false, "A: rdma_create_id (%d)", ret);
		goto out;
	}
	ret = kt_cm_resolve_addr(&a->cm, (struct sockaddr *)&sa,
				 (struct sockaddr *)&sb);
	if (!kt_check(&t->kt, !ret, "A: rdma_resolve_addr from %pISc (%d)",
		      &sa, ret) ||
	    !kcm_on(t, a, dev_a))
		goto out;
	ret = kt_cm_resolve_route(&a->cm);
	if (!kt_check(&t->kt, !ret, "A: rdma_resolve_route (%d)", ret))
		goto out;
	if (!kt_check(&t->kt, kcm_end_setup(a) && kcm_fr_setup(t),
		      "A: PD, CQ, QP, buffers and a %lu-page fast-register MR",
		      KCM_FR_PAGES))
		goto out;

	ret = rdma_connect(a->cm.id, &param);
	if (!kt_check(&t->kt, !ret, "A: rdma_connect (%d)", ret) ||
	    !kt_check(&t->kt, kt_cm_wait(&b->cm, RDMA_CM_EVENT_CONNECT_REQUEST),
		      "B: CONNECT_REQUEST"))
		goto out;
	kcm_on(t, b, dev_b);
	if (!kt_check(&t->kt, kcm_end_setup(b), "B: PD, CQ, QP and buffers"))
		goto out;
	ret = kt_cm_accept(&b->cm, &param);
	if (!kt_check(&t->kt, !ret, "B: rdma_accept (%d)", ret) ||
	    !kt_check(&t->kt, kt_cm_wait(&b->cm, RDMA_CM_EVENT_ESTABLISHED) &&
		      kt_cm_wait(&a->cm, RDMA_CM_EVENT_ESTABLISHED),
		      "both ESTABLISHED"))
		goto out;

	use(t);
out:
	/* First the listener: after it, no connect request brings an id. */
	if (l->id)
		rdma_destroy_id(l->id);
	kcm_fr_free(t);
	kcm_end_free(a);
	kcm_end_free(b);
}

/* ---- privilege, PD and fast-register checks (V-FR, V-PD, V-STAG0) ---- */

#define KCM_SEC_LEN	512	/* bytes of the kept page the peer writes */

/* Post @wr on A's QP in the REG slot. Return: its status, or -1 if none. */
static int kcm_a_wr(struct kcm *t, struct ib_send_wr *wr)
{
	struct kcm_end *a = &t->a;

	wr->wr_cqe = kcm_cqe(a, KCM_W_REG);
	wr->send_flags = IB_SEND_SIGNALED;
	if (!kcm_posted(a, ib_post_send(a->cm.id->qp, wr, NULL), "a memory WR") ||
	    !wait_for_completion_timeout(&a->w[KCM_W_REG].done, KT_TIMEOUT))
		return -1;
	return a->w[KCM_W_REG].wc.status;
}

static const char *kcm_status(int status)
{
	return status < 0 ? "no completion" : ib_wc_status_msg(status);
}

/* IB_WR_REG_MR of @mr with key @key and @access on A's QP. */
static int kcm_a_reg(struct kcm *t, struct ib_mr *mr, u32 key, int access)
{
	struct ib_reg_wr reg = {
		.wr.opcode = IB_WR_REG_MR,
		.mr = mr,
		.key = key,
		.access = access,
	};

	return kcm_a_wr(t, &reg.wr);
}

static int kcm_a_local_inv(struct kcm *t, u32 stag)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.ex.invalidate_rkey = stag,
	};

	return kcm_a_wr(t, &wr);
}

/* Both ends saw the connection end; then their QPs are drained. */
static bool kcm_ended(struct kcm *t)
{
	bool ok = kt_cm_wait(&t->a.cm, RDMA_CM_EVENT_DISCONNECTED) &&
		  kt_cm_wait(&t->b.cm, RDMA_CM_EVENT_DISCONNECTED);

	ib_drain_qp(t->a.cm.id->qp);
	ib_drain_qp(t->b.cm.id->qp);
	return ok;
}

/* Map the kept page's first KCM_SEC_LEN bytes into the kept MR, new key. */
static bool kcm_sec_map(struct kcm *t)
{
	struct kcm_sec *s = &t->sec;
	struct scatterlist sg;

	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = s->dma;
	sg_dma_len(&sg) = KCM_SEC_LEN;
	ib_update_fast_reg_key(s->mr, ib_inc_rkey(s->mr->rkey));
	return ib_map_mr_sg(s->mr, &sg, 1, NULL, PAGE_SIZE) == 1;
}

/* The kept page's bytes; the unused part must stay poison. */
static u32 kcm_sec_crc(struct kcm *t, bool *untouched)
{
	u8 *p = page_address(t->sec.page);

	*untouched = !memchr_inv(p + KCM_SEC_LEN, KCM_POISON,
				 PAGE_SIZE - KCM_SEC_LEN);
	return crc32c(~0, p, KCM_SEC_LEN);
}

/*
 * B writes KCM_SEC_LEN random bytes to the kept page through @rkey and
 * then sends A a message, which orders the Write before it. Return: both
 * completed; *@crc is what B wrote.
 */
static bool kcm_sec_b_write(struct kcm *t, u32 rkey, u32 *crc)
{
	struct kcm_end *a = &t->a, *b = &t->b;
	struct ib_sge in = kcm_msg_sge(a, KCM_MSG_IN);
	struct ib_sge out = kcm_msg_sge(b, KCM_MSG_OUT);
	struct ib_sge sge = {
		.addr = b->buf_dma,
		.length = KCM_SEC_LEN,
		.lkey = b->pd->local_dma_lkey,
	};

	get_random_bytes(b->buf, KCM_SEC_LEN);
	*crc = crc32c(~0, b->buf, KCM_SEC_LEN);
	return kcm_post_recv(a, &in, 1) &&
	       kcm_post_send(b, KCM_W_SEND, IB_WR_RDMA_WRITE, &sge, 1,
			     t->sec.mr->iova, rkey) &&
	       kcm_post_send(b, KCM_W_SEND2, IB_WR_SEND, &out, 1, 0, 0) &&
	       kcm_wait_wc(b, KCM_W_SEND2, IB_WC_SEND) &&
	       kcm_wait_wc(a, KCM_W_RECV, IB_WC_RECV);
}

/*
 * B's Write to the kept page through @rkey must end the connection and
 * leave the page as it was.
 */
static void kcm_sec_b_write_refused(struct kcm *t, u32 rkey, const char *what)
{
	struct kcm_end *b = &t->b;
	struct ib_sge sge = {
		.addr = b->buf_dma,
		.length = KCM_SEC_LEN,
		.lkey = b->pd->local_dma_lkey,
	};
	bool posted, untouched;
	u32 before, after;

	before = kcm_sec_crc(t, &untouched);
	get_random_bytes(b->buf, KCM_SEC_LEN);
	posted = kcm_post_send(b, KCM_W_SEND, IB_WR_RDMA_WRITE, &sge, 1,
			       t->sec.mr->iova, rkey);
	kt_check(&t->kt, posted && kcm_ended(t),
		 "B's RDMA Write through %s 0x%x ends the connection", what,
		 rkey);
	after = kcm_sec_crc(t, &untouched);
	kt_check(&t->kt, after == before && untouched,
		 "and A's page keeps its bytes (crc32c 0x%08x, now 0x%08x)",
		 before, after);
}

/*
 * B sends A a Send with Invalidate of @stag, which A must refuse: A's
 * receive does not complete successfully and the connection ends.
 */
static void kcm_sec_b_send_inv_refused(struct kcm *t, u32 stag,
				       const char *what)
{
	struct kcm_end *a = &t->a, *b = &t->b;
	struct ib_sge in = kcm_msg_sge(a, KCM_MSG_IN);
	struct ib_sge out = kcm_msg_sge(b, KCM_MSG_OUT);
	struct ib_wc *wc = &a->w[KCM_W_RECV].wc;
	bool ok;

	ok = kcm_post_recv(a, &in, 1) &&
	     kcm_post_send(b, KCM_W_SEND, IB_WR_SEND_WITH_INV, &out, 1, 0,
			   stag) &&
	     kcm_ended(t) && try_wait_for_completion(&a->w[KCM_W_RECV].done);
	kt_check(&t->kt, ok && wc->status != IB_WC_SUCCESS,
		 "B's Send with Invalidate of %s 0x%x is refused: the connection ends, A's receive %s",
		 what, stag, ok ? ib_wc_status_msg(wc->status) : "-");
}

/*
 * Connection 1, A on a PD of its own: the kept PD, MR and page are made
 * here; an IB_WR_REG_MR of that MR, of another PD than the QP's, completes
 * with IB_WC_MW_BIND_ERR and ends the connection (V-FR-2, V-PD-5).
 */
static void kcm_sec_fr_foreign(struct kcm *t)
{
	struct ib_device *dev = t->a.cm.id->device;
	struct kcm_sec *s = &t->sec;
	int st;

	s->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(s->pd))
		s->pd = NULL;
	s->mr = s->pd ? ib_alloc_mr(s->pd, IB_MR_TYPE_MEM_REG, 1) : NULL;
	if (IS_ERR(s->mr))
		s->mr = NULL;
	s->page = s->mr ? alloc_page(GFP_KERNEL) : NULL;
	if (s->page) {
		memset(page_address(s->page), KCM_POISON, PAGE_SIZE);
		s->dma = ib_dma_map_page(dev, s->page, 0, PAGE_SIZE,
					 DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(dev, s->dma))
			s->dma = 0;
	}
	if (!kt_check(&t->kt, s->mr && s->dma && kcm_sec_map(t),
		      "a second PD, a fast-register MR of it mapping one page"))
		return;
	s->rkey = s->mr->rkey;
	st = kcm_a_reg(t, s->mr, s->rkey,
		       IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE);
	kt_check(&t->kt, st == IB_WC_MW_BIND_ERR,
		 "V-FR-2/V-PD-5: IB_WR_REG_MR of an MR of another PD than the QP's completes with IB_WC_MW_BIND_ERR (%s)",
		 kcm_status(st));
	kt_check(&t->kt, kcm_ended(t), "and the connection ends");
}

/*
 * Connection 2, A's QP on the MR's PD now: the STag the refused REG_MR
 * named was not registered, so B's Write through it is refused (V-FR-2).
 * Then an IB_WR_REG_MR of the PD's DMA MR (its local_dma_lkey) completes
 * with IB_WC_MW_BIND_ERR (V-FR-2: only fast-register MRs).
 */
static void kcm_sec_fr_unregistered(struct kcm *t)
{
	kcm_sec_b_write_refused(t, t->sec.rkey,
				"the STag of the refused REG_MR of another PD's MR");
}

static void kcm_sec_fr_dma(struct kcm *t)
{
	struct ib_mr *dma_mr = t->a.pd->__internal_mr;
	int st = -1;

	if (kt_check(&t->kt, dma_mr && dma_mr->lkey == t->a.pd->local_dma_lkey,
		     "the PD's local_dma_lkey is its DMA MR's"))
		st = kcm_a_reg(t, dma_mr, ib_inc_rkey(dma_mr->lkey),
			       IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE);
	kt_check(&t->kt, st == IB_WC_MW_BIND_ERR,
		 "V-FR-2: IB_WR_REG_MR of the PD's DMA MR completes with IB_WC_MW_BIND_ERR (%s)",
		 kcm_status(st));
	kt_check(&t->kt, kcm_ended(t), "and the connection ends");
}

/*
 * Connection 4: the DMA MR is unchanged (Sends through local_dma_lkey
 * work); IB_WR_LOCAL_INV of local_dma_lkey fails (V-STAG0-5).
 */
static void kcm_sec_inv_dma_local(struct kcm *t)
{
	int st;

	if (!kcm_case_send(t, &kcm_sizes[2]))
		return;
	st = kcm_a_local_inv(t, t->a.pd->local_dma_lkey);
	kt_check(&t->kt, st == IB_WC_MW_BIND_ERR,
		 "V-STAG0-5: IB_WR_LOCAL_INV of the PD's local_dma_lkey completes with IB_WC_MW_BIND_ERR (%s)",
		 kcm_status(st));
	kt_check(&t->kt, kcm_ended(t), "and the connection ends");
}

/*
 * Connection 5: local_dma_lkey is still valid after the LOCAL_INV (a Send
 * through it works); a peer's Send with Invalidate of it is refused.
 */
static void kcm_sec_inv_dma_remote(struct kcm *t)
{
	if (!kcm_case_send(t, &kcm_sizes[2]))
		return;
	kcm_sec_b_send_inv_refused(t, t->a.pd->local_dma_lkey,
				   "A's local_dma_lkey");
}

/*
 * Connection 6: local_dma_lkey still valid after the remote attempt. The
 * kept MR is still invalid (connection 1 registered nothing), so REG_MR of
 * it succeeds and B writes through it; a second REG_MR without an
 * invalidation between fails (V-FR-3).
 */
static void kcm_sec_fr_twice(struct kcm *t)
{
	struct kcm_sec *s = &t->sec;
	bool ok, untouched;
	u32 crc;
	int st;

	if (!kcm_case_send(t, &kcm_sizes[2]))
		return;
	st = kcm_sec_map(t) ? kcm_a_reg(t, s->mr, s->mr->rkey,
					IB_ACCESS_LOCAL_WRITE |
					IB_ACCESS_REMOTE_WRITE) : -1;
	s->rkey = s->mr->rkey;
	ok = kt_check(&t->kt, st == IB_WC_SUCCESS,
		      "REG_MR of the MR the refused one named succeeds: it was still invalid (%s)",
		      kcm_status(st));
	ok = ok && kcm_sec_b_write(t, s->rkey, &crc);
	kt_check(&t->kt, ok && kcm_sec_crc(t, &untouched) == crc && untouched,
		 "B writes %d bytes through its rkey 0x%x", KCM_SEC_LEN, s->rkey);
	if (!ok)
		return;
	st = kcm_sec_map(t) ? kcm_a_reg(t, s->mr, s->mr->rkey,
					IB_ACCESS_LOCAL_WRITE |
					IB_ACCESS_REMOTE_WRITE) : -1;
	kt_check(&t->kt, st == IB_WC_MW_BIND_ERR,
		 "V-FR-3: a second REG_MR of the valid MR (key 0x%x) completes with IB_WC_MW_BIND_ERR (%s)",
		 s->mr->rkey, kcm_status(st));
	kt_check(&t->kt, kcm_ended(t), "and the connection ends");
}

/*
 * Connection 7: the first registration is intact: B's Write through its
 * rkey lands (V-FR-3). Then A invalidates it and registers the MR with
 * local rights only; a peer's Send with Invalidate of it is refused
 * (V-ACC-7).
 */
static void kcm_sec_fr_first_stays(struct kcm *t)
{
	struct kcm_sec *s = &t->sec;
	bool ok, untouched;
	u32 crc;
	int st;

	ok = kcm_sec_b_write(t, s->rkey, &crc);
	if (!kt_check(&t->kt, ok && kcm_sec_crc(t, &untouched) == crc &&
		      untouched,
		      "V-FR-3: after the refused REG_MR, B's Write through the first rkey 0x%x lands",
		      s->rkey))
		return;
	st = kcm_a_local_inv(t, s->rkey);
	if (st == IB_WC_SUCCESS && kcm_sec_map(t))
		st = kcm_a_reg(t, s->mr, s->mr->rkey, IB_ACCESS_LOCAL_WRITE);
	s->rkey = s->mr->rkey;
	if (!kt_check(&t->kt, st == IB_WC_SUCCESS,
		      "LOCAL_INV of it, then REG_MR with local rights only (%s)",
		      kcm_status(st)))
		return;
	kcm_sec_b_send_inv_refused(t, s->rkey,
				   "A's MR with local rights only (V-ACC-7)");
}

/*
 * Connection 8: the MR survived the refused remote invalidation: A sends
 * B its bytes through its lkey, and they arrive (V-ACC-7).
 */
static void kcm_sec_local_only_valid(struct kcm *t)
{
	struct kcm_end *a = &t->a, *b = &t->b;
	struct ib_sge out = {
		.addr = t->sec.mr->iova,
		.length = KCM_SEC_LEN,
		.lkey = t->sec.mr->lkey,
	};
	struct ib_sge in = {
		.addr = b->buf_dma,
		.length = KCM_SEC_LEN,
		.lkey = b->pd->local_dma_lkey,
	};
	bool ok, untouched;
	u32 crc = kcm_sec_crc(t, &untouched);

	memset(b->buf, KCM_POISON, KCM_SEC_LEN);
	ok = kcm_post_recv(b, &in, 1) &&
	     kcm_post_send(a, KCM_W_SEND, IB_WR_SEND, &out, 1, 0, 0) &&
	     kcm_wait_wc(a, KCM_W_SEND, IB_WC_SEND) &&
	     kcm_wait_wc(b, KCM_W_RECV, IB_WC_RECV);
	kt_check(&t->kt, ok && b->w[KCM_W_RECV].wc.byte_len == KCM_SEC_LEN &&
		 crc32c(~0, b->buf, KCM_SEC_LEN) == crc,
		 "V-ACC-7: the MR is still valid: A's Send from its lkey 0x%x delivers its bytes (crc32c 0x%08x)",
		 out.lkey, crc);
	kcm_disconnect(t);
}

/* The privilege cases, one connection each after a WR that ends one. */
static void kcm_sec_run(struct kcm *t)
{
	static const struct {
		const char *name;
		void (*use)(struct kcm *t);
	} conns[] = {
		{ "sec: REG_MR of another PD's MR", kcm_sec_fr_foreign },
		{ "sec: its STag unregistered", kcm_sec_fr_unregistered },
		{ "sec: REG_MR of the DMA MR", kcm_sec_fr_dma },
		{ "sec: LOCAL_INV of local_dma_lkey", kcm_sec_inv_dma_local },
		{ "sec: Send with Invalidate of local_dma_lkey",
		  kcm_sec_inv_dma_remote },
		{ "sec: REG_MR twice", kcm_sec_fr_twice },
		{ "sec: the first registration stays", kcm_sec_fr_first_stays },
		{ "sec: local-only MR still valid", kcm_sec_local_only_valid },
	};
	struct kcm_sec *s = &t->sec;
	int i;

	for (i = 0; i < ARRAY_SIZE(conns); i++) {
		kcm_run(t, conns[i].name, addr_a, addr_b, conns[i].use);
		if (!s->mr)
			break;
	}
	if (s->dma)
		ib_dma_unmap_page(s->pd->device, s->dma, PAGE_SIZE,
				  DMA_BIDIRECTIONAL);
	if (s->page)
		__free_page(s->page);
	if (s->mr)
		kt_check(&t->kt, !ib_dereg_mr(s->mr), "sec: ib_dereg_mr");
	if (s->pd)
		ib_dealloc_pd(s->pd);
	memset(s, 0, sizeof(*s));
}

/* ---- connect requests the iw_cm does not take up ---- */

#define KCM_BL_CLIENTS	4
#define KCM_BL_QUEUE_MS	2000	/* for the connects to reach the iw_cm */
#define KCM_BL_HOLD	(10 * HZ)	/* the busy consumer's longest hold */

/**
 * struct kcm_bl - clients of listeners whose requests the iw_cm refuses
 *	or drops
 * @c: the clients' ids and events
 * @pd: their PDs
 * @cq: their CQs
 * @l: the busy listener, and another
 * @busy_reqs: connect requests the busy listener's consumer was given
 * @other_reqs: and the other's
 * @busy: the busy consumer has its first request
 * @release: the busy consumer may return
 */
struct kcm_bl {
	struct kt_cm_end c[KCM_BL_CLIENTS];
	struct ib_pd *pd[KCM_BL_CLIENTS];
	struct ib_cq *cq[KCM_BL_CLIENTS];
	struct rdma_cm_id *l[2];
	atomic_t busy_reqs;
	atomic_t other_reqs;
	struct completion busy;
	struct completion release;
};

/*
 * The busy listener's consumer: holds its first request until released,
 * and refuses them all. The iw_cm runs all handlers one at a time, so
 * meanwhile it only queues events: as many connect requests per
 * listener as its backlog, and it refuses kiwi the others.
 */
static int kcm_bl_busy(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kcm_bl *bl = id->context;

	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return 0;
	if (atomic_inc_return(&bl->busy_reqs) == 1) {
		complete(&bl->busy);
		wait_for_completion_timeout(&bl->release, KCM_BL_HOLD);
	}
	return -ECONNREFUSED;
}

static int kcm_bl_other(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kcm_bl *bl = id->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		atomic_inc(&bl->other_reqs);
	return -ECONNREFUSED;
}

/* Listener @i of @bl on @sb, port + @i, with @handler and @backlog. */
static bool kcm_bl_listen(struct kcm *t, struct kcm_bl *bl, int i,
			  rdma_cm_event_handler handler, int backlog,
			  struct sockaddr_storage *sb)
{
	struct sockaddr_storage addr = *sb;
	int ret;

	/* the port is at the same offset in both families */
	((struct sockaddr_in *)&addr)->sin_port =
		htons(ntohs(((struct sockaddr_in *)sb)->sin_port) + i);
	bl->l[i] = rdma_create_id(t->net_b, handler, bl, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(bl->l[i])) {
		ret = PTR_ERR(bl->l[i]);
		bl->l[i] = NULL;
	} else {
		ret = rdma_bind_addr(bl->l[i], (struct sockaddr *)&addr);
		if (!ret)
			ret = rdma_listen(bl->l[i], backlog);
	}
	return kt_check(&t->kt, !ret, "listener %d: rdma_listen on %pISpc, backlog %d (%d)",
			i, &addr, backlog, ret);
}

/* Client @i's id, address, route to @sb, PD, CQ and QP. */
static bool kcm_bl_client(struct kcm *t, struct kcm_bl *bl, int i,
			  struct sockaddr_storage *sa, struct sockaddr_storage *sb)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct kt_cm_end *c = &bl->c[i];
	int ret;

	ret = kt_cm_create(c, t->net_a);
	if (!ret)
		ret = kt_cm_resolve_addr(c, (struct sockaddr *)sa,
					 (struct sockaddr *)sb);
	if (!ret)
		ret = kt_cm_resolve_route(c);
	if (ret) {
		pr_info("# %s: rdma_cm set-up: %d\n", c->name, ret);
		return false;
	}
	bl->pd[i] = ib_alloc_pd(c->id->device, 0);
	if (IS_ERR(bl->pd[i])) {
		bl->pd[i] = NULL;
		return false;
	}
	bl->cq[i] = ib_alloc_cq(c->id->device, NULL, 4, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(bl->cq[i])) {
		bl->cq[i] = NULL;
		return false;
	}
	init.send_cq = bl->cq[i];
	init.recv_cq = bl->cq[i];
	return !rdma_create_qp(c->id, bl->pd[i], &init);
}

/* Clients @from to @to - 1 connect to listener @l (its port). */
static bool kcm_bl_connect(struct kcm *t, struct kcm_bl *bl, int l, int from,
			   int to, struct sockaddr_storage *sb)
{
	struct rdma_conn_param param = { .initiator_depth = 1,
					 .responder_resources = 1 };
	struct sockaddr_storage sa, dst = *sb;
	int i, ret;

	((struct sockaddr_in *)&dst)->sin_port =
		htons(ntohs(((struct sockaddr_in *)sb)->sin_port) + l);
	if (!kcm_addr(t, t->net_a, addr_a, "0", &sa))
		return false;
	for (i = from; i < to; i++) {
		if (!kt_check(&t->kt, kcm_bl_client(t, bl, i, &sa, &dst),
			      "%s: a QP, resolved to %pISpc", bl->c[i].name, &dst))
			return false;
		ret = rdma_connect(bl->c[i].id, &param);
		if (!kt_check(&t->kt, !ret, "%s: rdma_connect (%d)",
			      bl->c[i].name, ret))
			return false;
	}
	return true;
}

/* Client @i's answer: one of @want, with its status. */
static void kcm_bl_answer(struct kcm *t, struct kcm_bl *bl, int i,
			  enum rdma_cm_event_type want, int status,
			  const char *what)
{
	struct kt_cm_event ev;
	bool ok = kt_cm_next(&bl->c[i], &ev, want);

	kt_check(&t->kt, ok && ev.type == want && ev.status == status,
		 "%s: %s: %s, status %d (%s, %d)", bl->c[i].name, what,
		 rdma_event_msg(want), status,
		 ok ? rdma_event_msg(ev.type) : "nothing", ok ? ev.status : 0);
}

/*
 * C0's answer: its request held the iw_cm, and was refused once let go:
 * REJECTED, or UNREACHABLE if that took longer than its MPA timeout.
 */
static void kcm_bl_c0(struct kcm *t, struct kcm_bl *bl)
{
	struct kt_cm_event ev;
	bool ok = kt_cm_next(&bl->c[0], &ev, RDMA_CM_EVENT_REJECTED);

	kt_check(&t->kt, ok && ((ev.type == RDMA_CM_EVENT_REJECTED &&
				 ev.status == -ECONNREFUSED) ||
				(ev.type == RDMA_CM_EVENT_UNREACHABLE &&
				 ev.status == -ETIMEDOUT)),
		 "C0: its connect, which held the iw_cm, ends (%s, %d)",
		 ok ? rdma_event_msg(ev.type) : "nothing", ok ? ev.status : 0);
}

static struct kcm_bl *kcm_bl_new(struct kcm *t, const char *name)
{
	static const char names[KCM_BL_CLIENTS][4] = { "C0", "C1", "C2", "C3" };
	struct kcm_bl *bl = kzalloc(sizeof(*bl), GFP_KERNEL);
	int i;

	t->kt.name = name;
	if (!kt_check(&t->kt, bl, "memory for the clients"))
		return NULL;
	for (i = 0; i < KCM_BL_CLIENTS; i++)
		kt_cm_init(&bl->c[i], names[i]);
	init_completion(&bl->busy);
	init_completion(&bl->release);
	return bl;
}

static void kcm_bl_free(struct kcm_bl *bl)
{
	int i;

	complete_all(&bl->release);
	for (i = 0; i < 2; i++)
		if (bl->l[i])
			rdma_destroy_id(bl->l[i]);
	for (i = 0; i < KCM_BL_CLIENTS; i++) {
		if (bl->c[i].id && bl->c[i].id->qp)
			rdma_destroy_qp(bl->c[i].id);
		if (bl->cq[i])
			ib_free_cq(bl->cq[i]);
		if (bl->pd[i])
			ib_dealloc_pd(bl->pd[i]);
		if (bl->c[i].id)
			rdma_destroy_id(bl->c[i].id);
	}
	kfree(bl);
}

/*
 * The busy listener (0, backlog 1) on the server's address, in @sb, and
 * C0 connected to it, whose request its consumer now holds: the iw_cm
 * handles no other event until it is released.
 */
static bool kcm_bl_hold(struct kcm *t, struct kcm_bl *bl,
			struct sockaddr_storage *sb)
{
	return kcm_addr(t, t->net_b, addr_b, port, sb) &&
	       kcm_bl_listen(t, bl, 0, kcm_bl_busy, 1, sb) &&
	       kcm_bl_connect(t, bl, 0, 0, 1, sb) &&
	       kt_check(&t->kt, wait_for_completion_timeout(&bl->busy, KT_TIMEOUT),
			"listener 0's consumer is busy with C0's request");
}

/*
 * Connects beyond a busy listener's backlog of 1: the iw_cm refuses the
 * request events kiwi raises for them (-ENOMEM) and leaves it to kiwi to
 * refuse them. Each client hears REJECTED at once, not a timeout.
 */
static void kcm_backlog(struct kcm *t)
{
	struct kcm_bl *bl = kcm_bl_new(t, "backlog");
	struct sockaddr_storage sb;
	int i, got;

	if (!bl)
		return;
	if (!kcm_bl_hold(t, bl, &sb) ||
	    !kcm_bl_connect(t, bl, 0, 1, KCM_BL_CLIENTS, &sb))
		goto out;
	msleep(KCM_BL_QUEUE_MS);
	complete(&bl->release);
	kcm_bl_c0(t, bl);
	for (i = 1; i < KCM_BL_CLIENTS; i++)
		kcm_bl_answer(t, bl, i, RDMA_CM_EVENT_REJECTED, -ECONNREFUSED,
			      "its connect is refused");
	got = atomic_read(&bl->busy_reqs);
	kt_check(&t->kt, got < KCM_BL_CLIENTS,
		 "the busy consumer was given %d of the %d requests: kiwi refused the others, which the iw_cm had no room for",
		 got, KCM_BL_CLIENTS);
out:
	kcm_bl_free(bl);
}

/*
 * A listener destroyed while its connect requests wait in the iw_cm's
 * queue (behind another listener's busy consumer): the iw_cm drops their
 * events, and never accepts or rejects them. Nobody answers those
 * clients, whose connects time out; kiwi must end the requests itself
 * once they do (ktest_cm.sh counts kiwi's endpoints afterwards).
 */
static void kcm_dropped(struct kcm *t)
{
	struct kcm_bl *bl = kcm_bl_new(t, "dropped");
	struct sockaddr_storage sb;
	int i;

	if (!bl)
		return;
	if (!kcm_bl_hold(t, bl, &sb) ||
	    !kcm_bl_listen(t, bl, 1, kcm_bl_other, KCM_BL_CLIENTS, &sb) ||
	    !kcm_bl_connect(t, bl, 1, 1, KCM_BL_CLIENTS, &sb))
		goto out;
	msleep(KCM_BL_QUEUE_MS);
	rdma_destroy_id(bl->l[1]);
	bl->l[1] = NULL;
	complete(&bl->release);
	kcm_bl_c0(t, bl);
	for (i = 1; i < KCM_BL_CLIENTS; i++)
		kcm_bl_answer(t, bl, i, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT,
			      "its request, dropped with listener 1, is never answered: the connect times out");
	kt_check(&t->kt, !atomic_read(&bl->other_reqs),
		 "listener 1's consumer was given none of its %d requests (%d)",
		 KCM_BL_CLIENTS - 1, atomic_read(&bl->other_reqs));
out:
	kcm_bl_free(bl);
}

static int __init kcm_init(void)
{
	struct kcm *t = kzalloc(sizeof(*t), GFP_KERNEL);
	int ret;

	if (!t)
		return -ENOMEM;
	kt_begin();
	pr_info("# %s on %s connects to %s on %s\n", addr_a, dev_a, addr_b,
		dev_b);
	t->kt.name = "setup";
	t->net_a = kt_net(&t->kt, netns_a, "netns_a");
	t->net_b = kt_net(&t->kt, netns_b, "netns_b");
	if (t->net_a && t->net_b) {
		kcm_run(t, "ipv4", addr_a, addr_b, kcm_transfer);
		if (*addr6_a && *addr6_b)
			kcm_run(t, "ipv6", addr6_a, addr6_b, kcm_transfer);
		kcm_run(t, "ipv4 stale rkey", addr_a, addr_b, kcm_stale_rkey);
		kcm_run(t, "ipv4 read with invalidate of another STag", addr_a,
			addr_b, kcm_read_inv_bad);
		kcm_run(t, "ipv4 fenced local invalidate", addr_a, addr_b,
			kcm_fenced_inv);
		kcm_sec_run(t);
		kcm_backlog(t);
		kcm_dropped(t);
	}
	if (t->net_a)
		put_net(t->net_a);
	if (t->net_b)
		put_net(t->net_b);
	ret = kt_end(&t->kt);
	kfree(t);
	return ret;
}

static void __exit kcm_exit(void)
{
}

module_init(kcm_init);
module_exit(kcm_exit);
MODULE_DESCRIPTION("kiwi: kernel rdma_cm consumer test");
MODULE_LICENSE("GPL");
