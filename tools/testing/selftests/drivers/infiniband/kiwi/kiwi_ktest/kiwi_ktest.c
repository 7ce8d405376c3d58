// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_ktest: kiwi as kernel consumers (NVMe-oF, iSER, NFS/RDMA, SMC) see
 * it through the RDMA core. Loading the module runs every test case in
 * kt_cases[] against the device named by dev=, prints TAP through the
 * kernel log ("kiwi_ktest: ok N - case: what") and fails the load with
 * -EINVAL if any check failed. ktest.sh loads it, re-emits the TAP lines
 * and unloads it. Nothing is left behind: each case frees what it made.
 *
 *   insmod kiwi_ktest.ko dev=kiwi0
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_verbs.h>

#include "kiwi_ktest.h"

static char *dev = "kiwi0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to test (default kiwi0)");

static char *skip = "";
module_param(skip, charp, 0444);
MODULE_PARM_DESC(skip, "cases not to run, separated by commas (default none)");

static struct ib_pd *kt_pd(struct kt *kt)
{
	struct ib_pd *pd = ib_alloc_pd(kt->ibdev, 0);

	if (!kt_check(kt, !IS_ERR(pd), "ib_alloc_pd (%d)",
		      PTR_ERR_OR_ZERO(pd)))
		return NULL;
	return pd;
}

static void kt_dealloc_pd(struct kt *kt, struct ib_pd *pd)
{
	kt_check(kt, !ib_dealloc_pd_user(pd, NULL), "ib_dealloc_pd");
}

/* ---- protection domains and the DMA MR ---- */

static void kt_case_pd(struct kt *kt)
{
	struct ib_pd *pd, *pd2, *gpd;

	pd = kt_pd(kt);
	if (!pd)
		return;
	kt_check(kt, pd->__internal_mr &&
		 pd->local_dma_lkey == pd->__internal_mr->lkey &&
		 pd->__internal_mr->lkey == pd->__internal_mr->rkey &&
		 (pd->local_dma_lkey >> 8) != 0,
		 "V-STAG0-2 local_dma_lkey 0x%x is the DMA MR's STag, index not 0",
		 pd->local_dma_lkey);
	pd2 = kt_pd(kt);
	if (pd2) {
		kt_check(kt, (pd2->local_dma_lkey >> 8) !=
			 (pd->local_dma_lkey >> 8),
			 "a second PD has a DMA MR of its own (0x%x, 0x%x)",
			 pd->local_dma_lkey, pd2->local_dma_lkey);
		kt_dealloc_pd(kt, pd2);
	}
	/* get_dma_mr with remote rights; the core warns about it. */
	gpd = ib_alloc_pd(kt->ibdev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (kt_check(kt, !IS_ERR(gpd) &&
		     gpd->unsafe_global_rkey == gpd->local_dma_lkey,
		     "get_dma_mr with remote rights: global rkey == local_dma_lkey"))
		kt_dealloc_pd(kt, gpd);
	kt_dealloc_pd(kt, pd);
}

/* ---- fast-register MRs: alloc_mr and map_mr_sg ---- */

#define KT_PAGES 4
#define KT_OFF 100

static void kt_case_map_mr_sg(struct kt *kt)
{
	struct scatterlist sg[KT_PAGES];
	void *buf[KT_PAGES] = {};
	struct ib_mr *mr, *small;
	unsigned int off;
	struct ib_pd *pd;
	int i, n;

	pd = kt_pd(kt);
	if (!pd)
		return;
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 16);
	if (!kt_check(kt, !IS_ERR(mr), "ib_alloc_mr(MEM_REG, 16) (%d)",
		      PTR_ERR_OR_ZERO(mr)))
		goto out_pd;
	kt_check(kt, mr->lkey == mr->rkey && (mr->lkey >> 8) != 0,
		 "V-STAG-1 lkey == rkey 0x%x, index not 0", mr->lkey);

	sg_init_table(sg, KT_PAGES);
	for (i = 0; i < KT_PAGES; i++) {
		buf[i] = kmalloc(PAGE_SIZE, GFP_KERNEL);
		if (!buf[i])
			goto out_buf;
		sg_set_buf(&sg[i], buf[i], PAGE_SIZE);
	}
	n = ib_dma_map_sg(kt->ibdev, sg, KT_PAGES, DMA_BIDIRECTIONAL);
	if (!kt_check(kt, n == KT_PAGES, "ib_dma_map_sg of %d kmalloc'ed pages",
		      KT_PAGES))
		goto out_buf;

	off = KT_OFF;
	n = ib_map_mr_sg(mr, sg, KT_PAGES, &off, PAGE_SIZE);
	kt_check(kt, n == KT_PAGES, "ib_map_mr_sg maps all %d pages from offset %d (%d)",
		 KT_PAGES, KT_OFF, n);
	kt_check(kt, mr->iova == (u64)(uintptr_t)buf[0] + KT_OFF &&
		 mr->length == KT_PAGES * PAGE_SIZE - KT_OFF &&
		 mr->page_size == PAGE_SIZE,
		 "iova is the first byte's address, length %lu, page_size %lu (%llu, %u)",
		 KT_PAGES * PAGE_SIZE - KT_OFF, PAGE_SIZE, mr->length,
		 mr->page_size);

	off = 0;
	n = ib_map_mr_sg(mr, sg, KT_PAGES, &off, 2 * PAGE_SIZE);
	kt_check(kt, n == -EINVAL,
		 "ib_map_mr_sg with 2 * PAGE_SIZE pages (not in page_size_cap) is -EINVAL (%d)",
		 n);

	/* More pages than max_num_sg: only what fits is mapped. */
	small = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 2);
	if (kt_check(kt, !IS_ERR(small), "ib_alloc_mr(MEM_REG, 2)")) {
		off = KT_OFF;
		n = ib_map_mr_sg(small, sg, KT_PAGES, &off, PAGE_SIZE);
		kt_check(kt, n == 2 && small->length == 2 * PAGE_SIZE - KT_OFF,
			 "ib_map_mr_sg of %d pages into a 2-page MR maps 2 entries, %lu bytes (%d, %llu)",
			 KT_PAGES, 2 * PAGE_SIZE - KT_OFF, n, small->length);
		kt_check(kt, !ib_dereg_mr(small), "ib_dereg_mr of the 2-page MR");
	}
	ib_dma_unmap_sg(kt->ibdev, sg, KT_PAGES, DMA_BIDIRECTIONAL);
out_buf:
	for (i = 0; i < KT_PAGES; i++)
		kfree(buf[i]);
	kt_check(kt, !ib_dereg_mr(mr), "ib_dereg_mr");
out_pd:
	kt_dealloc_pd(kt, pd);
}

static void kt_case_alloc_mr_limits(struct kt *kt)
{
	u32 max = kt->ibdev->attrs.max_fast_reg_page_list_len;
	struct ib_mr *mr;
	struct ib_pd *pd;

	pd = kt_pd(kt);
	if (!pd)
		return;
	kt_check(kt, max > 0, "max_fast_reg_page_list_len is %u", max);
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, max);
	if (kt_check(kt, !IS_ERR(mr), "ib_alloc_mr of max_fast_reg_page_list_len pages"))
		ib_dereg_mr(mr);
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, max + 1);
	kt_check(kt, PTR_ERR(mr) == -EINVAL,
		 "ib_alloc_mr of max_fast_reg_page_list_len + 1 pages is -EINVAL (%d)",
		 PTR_ERR_OR_ZERO(mr));
	if (!IS_ERR(mr))
		ib_dereg_mr(mr);
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 0);
	kt_check(kt, PTR_ERR(mr) == -EINVAL,
		 "ib_alloc_mr of 0 pages is -EINVAL (%d)", PTR_ERR_OR_ZERO(mr));
	if (!IS_ERR(mr))
		ib_dereg_mr(mr);
	mr = ib_alloc_mr(pd, IB_MR_TYPE_SG_GAPS, 16);
	kt_check(kt, PTR_ERR(mr) == -EOPNOTSUPP,
		 "ib_alloc_mr(SG_GAPS) is -EOPNOTSUPP (%d)",
		 PTR_ERR_OR_ZERO(mr));
	if (!IS_ERR(mr))
		ib_dereg_mr(mr);
	kt_dealloc_pd(kt, pd);
}

/* max_mr is enforced: the PD's DMA MR counts too. */
static void kt_case_max_mr(struct kt *kt)
{
	int max = kt->ibdev->attrs.max_mr;
	struct ib_mr **mrs, *mr;
	struct ib_pd *pd;
	int i, got = 0;
	long err = 0;

	pd = kt_pd(kt);
	if (!pd)
		return;
	mrs = kvcalloc(max + 1, sizeof(*mrs), GFP_KERNEL);
	if (!kt_check(kt, max > 0 && mrs, "max_mr is %d", max))
		goto out;
	for (i = 0; i <= max; i++) {
		mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 1);
		if (IS_ERR(mr)) {
			err = PTR_ERR(mr);
			break;
		}
		mrs[got++] = mr;
		cond_resched();
	}
	kt_check(kt, got == max - 1 && err == -ENOMEM,
		 "max_mr - 1 MRs besides the DMA MR, then -ENOMEM (%d, %ld)",
		 got, err);
	for (i = 0; i < got; i++) {
		ib_dereg_mr(mrs[i]);
		cond_resched();
	}
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 1);
	if (kt_check(kt, !IS_ERR(mr), "after freeing them an MR can be allocated again"))
		ib_dereg_mr(mr);
out:
	kvfree(mrs);
	kt_dealloc_pd(kt, pd);
}

/*
 * max_cq and max_qp are enforced (V-LIM-1): exactly that many of the
 * smallest CQs, and of the smallest QPs, then -ENOMEM; freeing one makes
 * room again. The device must hold no other CQ or QP meanwhile.
 */
static void kt_case_max_cq_qp(struct kt *kt)
{
	int max_cq = kt->ibdev->attrs.max_cq, max_qp = kt->ibdev->attrs.max_qp;
	struct ib_qp_init_attr init = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	struct ib_cq **cqs;
	struct ib_qp **qps;
	struct ib_pd *pd;
	int i, got = 0, gotq = 0;
	long err = 0;

	pd = kt_pd(kt);
	if (!pd)
		return;
	cqs = kvcalloc(max_cq + 1, sizeof(*cqs), GFP_KERNEL);
	qps = kvcalloc(max_qp + 1, sizeof(*qps), GFP_KERNEL);
	if (!kt_check(kt, max_cq > 1 && max_qp > 0 && cqs && qps,
		      "max_cq %d, max_qp %d", max_cq, max_qp))
		goto out;
	for (i = 0; i <= max_cq; i++) {
		cqs[got] = ib_alloc_cq(kt->ibdev, NULL, 1, 0, IB_POLL_DIRECT);
		if (IS_ERR(cqs[got])) {
			err = PTR_ERR(cqs[got]);
			break;
		}
		got++;
		cond_resched();
	}
	kt_check(kt, got == max_cq && err == -ENOMEM,
		 "V-LIM-1: max_cq CQs, then -ENOMEM (%d, %ld)", got, err);
	if (got < 2)
		goto out_cq;
	ib_free_cq(cqs[--got]);
	cqs[got] = ib_alloc_cq(kt->ibdev, NULL, 1, 0, IB_POLL_DIRECT);
	if (kt_check(kt, !IS_ERR(cqs[got]),
		     "after freeing one, a CQ can be allocated again"))
		got++;
	/* The first two stay, for the QPs. */
	while (got > 2) {
		ib_free_cq(cqs[--got]);
		cond_resched();
	}

	init.send_cq = cqs[0];
	init.recv_cq = cqs[1];
	err = 0;
	for (i = 0; i <= max_qp; i++) {
		qps[gotq] = ib_create_qp(pd, &init);
		if (IS_ERR(qps[gotq])) {
			err = PTR_ERR(qps[gotq]);
			break;
		}
		gotq++;
		cond_resched();
	}
	kt_check(kt, gotq == max_qp && err == -ENOMEM,
		 "V-LIM-1: max_qp QPs, then -ENOMEM (%d, %ld)", gotq, err);
	if (gotq) {
		ib_destroy_qp(qps[--gotq]);
		qps[gotq] = ib_create_qp(pd, &init);
		if (kt_check(kt, !IS_ERR(qps[gotq]),
			     "after destroying one, a QP can be created again"))
			gotq++;
	}
	for (i = 0; i < gotq; i++) {
		ib_destroy_qp(qps[i]);
		cond_resched();
	}
out_cq:
	for (i = 0; i < got; i++)
		ib_free_cq(cqs[i]);
out:
	kvfree(qps);
	kvfree(cqs);
	kt_dealloc_pd(kt, pd);
}

/*
 * A freed STag index comes back only after many other registrations, and
 * with another key: a stale STag never names a new MR by accident.
 */
static void kt_case_stag_reuse(struct kt *kt)
{
	const int limit = 1 << 24;	/* STag indices there can be */
	u32 first = 0, again = 0;
	struct ib_mr *mr;
	struct ib_pd *pd;
	int i;

	pd = kt_pd(kt);
	if (!pd)
		return;
	for (i = 0; i < limit; i++) {
		mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 1);
		if (IS_ERR(mr))
			break;
		if (!i)
			first = mr->lkey;
		else if ((mr->lkey >> 8) == (first >> 8))
			again = mr->lkey;
		ib_dereg_mr(mr);
		cond_resched();
		if (again)
			break;
	}
	kt_check(kt, again && i >= kt->ibdev->attrs.max_mr,
		 "V-PROT-8 a freed STag index returns only after max_mr others (after %d)",
		 i);
	kt_check(kt, again && again != first,
		 "V-STAG-5 a reused index gets another key (0x%x, then 0x%x)",
		 first, again);
	kt_dealloc_pd(kt, pd);
}

/* ---- CQs and QPs of kernel consumers ---- */

#define KT_WRS 3

struct kt_wc {
	struct ib_cqe cqe;
	struct kt_qp_ctx *ctx;
	int id;
};

struct kt_qp_ctx {
	int order[2 * KT_WRS];
	enum ib_wc_status status[2 * KT_WRS];
	enum ib_wc_opcode opcode[2 * KT_WRS];
	struct ib_qp *qp[2 * KT_WRS];
	int done;
};

static void kt_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kt_wc *w = container_of(wc->wr_cqe, struct kt_wc, cqe);
	struct kt_qp_ctx *ctx = w->ctx;

	if (ctx->done >= 2 * KT_WRS)
		return;
	ctx->order[ctx->done] = w->id;
	ctx->status[ctx->done] = wc->status;
	ctx->opcode[ctx->done] = wc->opcode;
	ctx->qp[ctx->done] = wc->qp;
	ctx->done++;
}

static bool kt_flushed(struct kt_qp_ctx *ctx, int from, int first_id,
		       struct ib_qp *qp, enum ib_wc_opcode op0)
{
	int i;

	for (i = 0; i < KT_WRS; i++)
		if (ctx->order[from + i] != first_id + i ||
		    ctx->status[from + i] != IB_WC_WR_FLUSH_ERR ||
		    ctx->qp[from + i] != qp ||
		    (i == 0 && ctx->opcode[from] != op0))
			return false;
	return true;
}

static void kt_case_qp_flush(struct kt *kt)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	const struct ib_send_wr *bad_send;
	const struct ib_recv_wr *bad_recv;
	struct ib_send_wr swr[KT_WRS] = {};
	struct ib_recv_wr rwr[KT_WRS] = {};
	struct kt_wc w[2 * KT_WRS] = {};
	struct ib_qp_attr attr = {};
	struct ib_cq *scq, *rcq;
	struct kt_qp_ctx *ctx;
	struct ib_sge sge;
	struct ib_qp *qp;
	struct ib_pd *pd;
	void *buf;
	int i, n;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	buf = kzalloc(64, GFP_KERNEL);
	if (!kt_check(kt, ctx && buf, "allocate the test's buffers"))
		goto out_free;
	pd = kt_pd(kt);
	if (!pd)
		goto out_free;
	scq = ib_alloc_cq(kt->ibdev, NULL, 8, 0, IB_POLL_DIRECT);
	rcq = ib_alloc_cq(kt->ibdev, NULL, 8, 0, IB_POLL_DIRECT);
	if (!kt_check(kt, !IS_ERR(scq) && !IS_ERR(rcq),
		      "ib_alloc_cq(IB_POLL_DIRECT) twice"))
		goto out_cq;
	init.send_cq = scq;
	init.recv_cq = rcq;
	qp = ib_create_qp(pd, &init);
	if (!kt_check(kt, !IS_ERR(qp), "ib_create_qp(RC) (%d)",
		      PTR_ERR_OR_ZERO(qp)))
		goto out_cq;

	attr.qp_state = IB_QPS_INIT;
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
	kt_check(kt, !ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_ACCESS_FLAGS),
		 "INIT (a new QP) -> INIT");

	sge.addr = (u64)(uintptr_t)buf;
	sge.length = 64;
	sge.lkey = pd->local_dma_lkey;
	for (i = 0; i < 2 * KT_WRS; i++) {
		w[i].cqe.done = kt_done;
		w[i].ctx = ctx;
		w[i].id = i;
	}
	for (i = 0; i < KT_WRS; i++) {
		rwr[i].wr_cqe = &w[i].cqe;
		rwr[i].sg_list = &sge;
		rwr[i].num_sge = 1;
		rwr[i].next = i + 1 < KT_WRS ? &rwr[i + 1] : NULL;
		swr[i].wr_cqe = &w[KT_WRS + i].cqe;
		swr[i].sg_list = &sge;
		swr[i].num_sge = 1;
		swr[i].opcode = IB_WR_SEND;
		swr[i].send_flags = i == 1 ? 0 : IB_SEND_SIGNALED;
		swr[i].next = i + 1 < KT_WRS ? &swr[i + 1] : NULL;
	}
	bad_send = NULL;
	n = ib_post_send(qp, swr, &bad_send);
	kt_check(kt, n == -EINVAL && bad_send == swr,
		 "ib_post_send in INIT is -EINVAL with bad_wr the first WR (%d)",
		 n);
	bad_recv = NULL;
	kt_check(kt, !ib_post_recv(qp, rwr, &bad_recv),
		 "ib_post_recv of %d WRs in INIT", KT_WRS);
	kt_check(kt, ib_process_cq_direct(rcq, 16) == 0,
		 "nothing completes before the QP fails");

	attr.qp_state = IB_QPS_ERR;
	kt_check(kt, !ib_modify_qp(qp, &attr, IB_QP_STATE), "INIT -> ERR");
	bad_send = NULL;
	kt_check(kt, !ib_post_send(qp, swr, &bad_send),
		 "ib_post_send of %d WRs (one unsignalled) in ERR", KT_WRS);

	n = ib_process_cq_direct(rcq, 16);
	kt_check(kt, n == KT_WRS && ctx->done == KT_WRS &&
		 kt_flushed(ctx, 0, 0, qp, IB_WC_RECV),
		 "V-FL-9 receives complete in order, WR_FLUSH_ERR, RECV, wc->qp is the QP (%d)",
		 n);
	n = ib_process_cq_direct(scq, 16);
	kt_check(kt, n == KT_WRS && ctx->done == 2 * KT_WRS &&
		 kt_flushed(ctx, KT_WRS, KT_WRS, qp, IB_WC_SEND),
		 "V-FL-9 sends complete in order, unsignalled too, WR_FLUSH_ERR, SEND (%d)",
		 n);
	kt_check(kt, ib_process_cq_direct(scq, 16) == 0 &&
		 ib_process_cq_direct(rcq, 16) == 0,
		 "no further completions");
	kt_check(kt, !ib_destroy_qp(qp), "ib_destroy_qp");
out_cq:
	if (!IS_ERR_OR_NULL(scq))
		ib_free_cq(scq);
	if (!IS_ERR_OR_NULL(rcq))
		ib_free_cq(rcq);
	kt_dealloc_pd(kt, pd);
out_free:
	kfree(buf);
	kfree(ctx);
}

/* ---- modify_qp attribute masks of the IB verbs ---- */

/* Modify @qp with @mask; its return, and whether the QP is still in @st. */
static bool kt_modify_is(struct kt *kt, struct ib_qp *qp,
			 struct ib_qp_attr *attr, int mask, int want,
			 enum ib_qp_state st, const char *what)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr q;
	int ret = ib_modify_qp(qp, attr, mask);

	memset(&q, 0, sizeof(q));
	ib_query_qp(qp, &q, IB_QP_STATE, &init);
	return kt_check(kt, ret == want && q.qp_state == st,
			"%s: %d, QP in state %d", what, ret, q.qp_state);
}

/*
 * A kernel consumer written for IB brings a QP up with the attributes the
 * IB verbs require: P_Key index, port and access flags to INIT, the path
 * attributes to RTR. kiwi takes them where the IB verbs do and ignores
 * what means nothing on iWARP; what it cannot honour is refused.
 */
static void kt_case_qp_attr_masks(struct kt *kt)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_qp_attr attr = {}, q = {};
	struct ib_qp_init_attr qinit;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_pd *pd;

	pd = kt_pd(kt);
	if (!pd)
		return;
	cq = ib_alloc_cq(kt->ibdev, NULL, 8, 0, IB_POLL_DIRECT);
	if (!kt_check(kt, !IS_ERR(cq), "ib_alloc_cq"))
		goto out_pd;
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ib_create_qp(pd, &init);
	if (!kt_check(kt, !IS_ERR(qp), "ib_create_qp(RC) (%d)",
		      PTR_ERR_OR_ZERO(qp)))
		goto out_cq;

	/* A new QP is INIT (Idle); an IB consumer's comes back from RESET. */
	ib_query_qp(qp, &q, IB_QP_STATE, &qinit);
	kt_check(kt, q.qp_state == IB_QPS_INIT,
		 "a new QP reports INIT, the iWARP verbs' Idle (%d)", q.qp_state);
	attr.qp_state = IB_QPS_RESET;
	kt_modify_is(kt, qp, &attr, IB_QP_STATE, 0, IB_QPS_RESET,
		     "a new QP (INIT) -> RESET");
	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 1;
	attr.port_num = 1;
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
	kt_modify_is(kt, qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
		     IB_QP_PORT | IB_QP_ACCESS_FLAGS, -EINVAL, IB_QPS_RESET,
		     "RESET -> INIT with P_Key index 1 (no P_Key table) is -EINVAL");
	attr.pkey_index = 0;
	attr.timeout = 14;
	kt_modify_is(kt, qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
		     IB_QP_PORT | IB_QP_ACCESS_FLAGS | IB_QP_TIMEOUT, -EINVAL,
		     IB_QPS_RESET,
		     "RESET -> INIT with IB_QP_TIMEOUT (not an INIT attribute in the IB verbs) is -EINVAL");
	kt_modify_is(kt, qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
		     IB_QP_PORT | IB_QP_ACCESS_FLAGS, 0, IB_QPS_INIT,
		     "RESET -> INIT with STATE|PKEY_INDEX|PORT|ACCESS_FLAGS");
	ib_query_qp(qp, &q, IB_QP_STATE | IB_QP_PORT | IB_QP_PKEY_INDEX |
		    IB_QP_ACCESS_FLAGS, &qinit);
	kt_check(kt, q.port_num == 1 && q.pkey_index == 0 &&
		 q.qp_access_flags == attr.qp_access_flags,
		 "query: port 1, P_Key index 0, the access flags set (%u, %u, %#x)",
		 q.port_num, q.pkey_index, q.qp_access_flags);
	kt_modify_is(kt, qp, &attr, IB_QP_PKEY_INDEX, 0, IB_QPS_INIT,
		     "INIT -> INIT with P_Key index 0");

	attr.qkey = 0x11111111;
	kt_modify_is(kt, qp, &attr, IB_QP_QKEY, -EINVAL, IB_QPS_INIT,
		     "IB_QP_QKEY (datagram QPs only) is -EINVAL");
	attr.path_mig_state = IB_MIG_MIGRATED;
	kt_modify_is(kt, qp, &attr, IB_QP_PATH_MIG_STATE, -EOPNOTSUPP,
		     IB_QPS_INIT,
		     "IB_QP_PATH_MIG_STATE (no path migration) is -EOPNOTSUPP");
	attr.en_sqd_async_notify = 1;
	kt_modify_is(kt, qp, &attr, IB_QP_EN_SQD_ASYNC_NOTIFY, -EOPNOTSUPP,
		     IB_QPS_INIT,
		     "IB_QP_EN_SQD_ASYNC_NOTIFY (no SQ Drained event) is -EOPNOTSUPP");
	attr.cap.max_send_wr = 8;
	kt_modify_is(kt, qp, &attr, IB_QP_CAP, -EOPNOTSUPP, IB_QPS_INIT,
		     "IB_QP_CAP (no queue resize) is -EOPNOTSUPP");

	attr.qp_state = IB_QPS_RTR;
	attr.ah_attr.port_num = 1;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = 0x123;
	attr.rq_psn = 0x4567;
	attr.max_dest_rd_atomic = 3;
	attr.min_rnr_timer = 12;
	kt_modify_is(kt, qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
		     IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
		     IB_QP_MIN_RNR_TIMER | IB_QP_TIMEOUT, -EINVAL, IB_QPS_INIT,
		     "INIT -> RTR with IB_QP_TIMEOUT (an RTS attribute) is -EINVAL");
	kt_modify_is(kt, qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
		     IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
		     IB_QP_MIN_RNR_TIMER, 0, IB_QPS_RTR,
		     "INIT -> RTR with AV|PATH_MTU|DEST_QPN|RQ_PSN|MAX_DEST_RD_ATOMIC|MIN_RNR_TIMER");
	memset(&q, 0, sizeof(q));
	ib_query_qp(qp, &q, IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_DEST_QPN, &qinit);
	kt_check(kt, q.max_dest_rd_atomic == 3 && q.dest_qp_num == 0,
		 "query: IRD as set (3), no remote QP number (%u, %u)",
		 q.max_dest_rd_atomic, q.dest_qp_num);

	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 0x89;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 2;
	kt_modify_is(kt, qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
		     IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
		     IB_QP_MAX_QP_RD_ATOMIC, -EINVAL, IB_QPS_RTR,
		     "RTR -> RTS by the consumer is -EINVAL (the connection manager makes it)");

	attr.qp_state = IB_QPS_ERR;
	kt_modify_is(kt, qp, &attr, IB_QP_STATE, 0, IB_QPS_ERR, "RTR -> ERR");
	kt_check(kt, !ib_destroy_qp(qp), "ib_destroy_qp");
out_cq:
	ib_free_cq(cq);
out_pd:
	kt_dealloc_pd(kt, pd);
}

/* One completion vector's CQ: where its completion handler ran. */
struct kt_vec {
	struct completion fired;
	int cpu;
	int calls;
};

static void kt_vec_handler(struct ib_cq *cq, void *ctx)
{
	struct kt_vec *v = ctx;

	v->cpu = raw_smp_processor_id();
	v->calls++;
	complete(&v->fired);
}

/*
 * V-NOT / issue 4 item 6: num_comp_vectors is the number of online CPUs,
 * each vector reports one CPU of its own, and an armed CQ's completion
 * handler runs on its vector's CPU, whichever CPU made the completion (a
 * flushed receive, made here in this thread).
 */
static void kt_case_comp_vector(struct kt *kt)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int nvec = kt->ibdev->num_comp_vectors, v, here;
	struct cpumask *seen;
	struct ib_pd *pd;

	kt_check(kt, nvec == num_online_cpus(),
		 "num_comp_vectors %d is the number of online CPUs (%u)", nvec,
		 num_online_cpus());
	kt_check(kt, !ib_get_vector_affinity(kt->ibdev, nvec),
		 "vector %d (one past the last) has no affinity", nvec);
	seen = kzalloc(cpumask_size(), GFP_KERNEL);
	pd = kt_pd(kt);
	if (!kt_check(kt, seen && pd, "allocate a PD and a CPU mask"))
		goto out;
	for (v = 0; v < nvec; v++) {
		struct ib_cq_init_attr ca = { .cqe = 4, .comp_vector = v };
		const struct cpumask *mask;
		struct ib_qp_attr attr = {};
		struct ib_recv_wr rwr = {};
		const struct ib_recv_wr *bad;
		struct kt_vec vec = {};
		struct ib_wc wc;
		struct ib_qp *qp;
		struct ib_cq *cq;
		int cpu;

		mask = ib_get_vector_affinity(kt->ibdev, v);
		cpu = mask ? cpumask_first(mask) : -1;
		if (!kt_check(kt, mask && cpumask_weight(mask) == 1 &&
			      cpu_online(cpu) && !cpumask_test_cpu(cpu, seen),
			      "vector %d: affinity is one online CPU (%d) no other vector has",
			      v, cpu))
			continue;
		cpumask_set_cpu(cpu, seen);
		init_completion(&vec.fired);
		vec.cpu = -1;
		cq = ib_create_cq(kt->ibdev, kt_vec_handler, NULL, &vec, &ca);
		if (!kt_check(kt, !IS_ERR(cq), "vector %d: ib_create_cq", v))
			continue;
		init.send_cq = cq;
		init.recv_cq = cq;
		qp = ib_create_qp(pd, &init);
		if (!kt_check(kt, !IS_ERR(qp), "vector %d: ib_create_qp", v)) {
			ib_destroy_cq(cq);
			continue;
		}
		attr.qp_state = IB_QPS_INIT;
		rwr.wr_id = v;
		ib_modify_qp(qp, &attr, IB_QP_STATE);
		ib_post_recv(qp, &rwr, &bad);
		ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
		here = get_cpu();
		put_cpu();
		attr.qp_state = IB_QPS_ERR;
		ib_modify_qp(qp, &attr, IB_QP_STATE);
		wait_for_completion_timeout(&vec.fired, HZ);
		kt_check(kt, vec.calls == 1 && vec.cpu == cpu,
			 "vector %d: the handler ran once, on CPU %d (ran %d time(s), on %d; completion made on %d)",
			 v, cpu, vec.calls, vec.cpu, here);
		kt_check(kt, ib_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == v &&
			 wc.status == IB_WC_WR_FLUSH_ERR,
			 "vector %d: the flushed receive is on the CQ", v);
		ib_destroy_qp(qp);
		ib_destroy_cq(cq);
	}
	kt_check(kt, cpumask_equal(seen, cpu_online_mask),
		 "the vectors cover every online CPU");
out:
	if (pd)
		kt_dealloc_pd(kt, pd);
	kfree(seen);
}

/* Flush @n receives, wr_id @first on, onto @qp's CQ (the QP is in ERR). */
static bool kt_flush_recvs(struct ib_qp *qp, int first, int n)
{
	const struct ib_recv_wr *bad;
	struct ib_recv_wr rwr = {};
	int i;

	for (i = 0; i < n; i++) {
		rwr.wr_id = first + i;
		if (ib_post_recv(qp, &rwr, &bad))
			return false;
	}
	return true;
}

/* Poll @n completions: flushed receives with wr_id @first, @first + 1... */
static bool kt_polled_in_order(struct ib_cq *cq, int first, int n)
{
	struct ib_wc wc;
	int i;

	for (i = 0; i < n; i++)
		if (ib_poll_cq(cq, 1, &wc) != 1 || wc.wr_id != first + i ||
		    wc.status != IB_WC_WR_FLUSH_ERR || wc.opcode != IB_WC_RECV)
			return false;
	return ib_poll_cq(cq, 1, &wc) == 0;
}

/*
 * V-CQ-7: ib_resize_cq grows and shrinks a CQ holding completions, keeps
 * them in order, refuses to shrink below the number queued and leaves the
 * CQ as it was then; the notification request survives a resize; the
 * largest size is the max_cqe the device reports.
 */
static void kt_case_resize_cq(struct kt *kt)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 1, .max_recv_wr = 64,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_cq_init_attr ca = { .cqe = 4 };
	int max = kt->ibdev->attrs.max_cqe, ret;
	struct ib_qp_attr attr = {};
	struct kt_vec vec = {};
	struct ib_qp *qp;
	struct ib_cq *cq;
	struct ib_pd *pd;

	pd = kt_pd(kt);
	if (!pd)
		return;
	init_completion(&vec.fired);
	cq = ib_create_cq(kt->ibdev, kt_vec_handler, NULL, &vec, &ca);
	if (!kt_check(kt, !IS_ERR(cq) && cq->cqe == 4, "ib_create_cq of 4 entries"))
		goto out_pd;
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ib_create_qp(pd, &init);
	if (!kt_check(kt, !IS_ERR(qp), "ib_create_qp (%d)", PTR_ERR_OR_ZERO(qp)))
		goto out_cq;
	attr.qp_state = IB_QPS_INIT;
	ib_modify_qp(qp, &attr, IB_QP_STATE);
	attr.qp_state = IB_QPS_ERR;
	kt_check(kt, !ib_modify_qp(qp, &attr, IB_QP_STATE) &&
		 kt_flush_recvs(qp, 0, 4),
		 "4 flushed receives fill the CQ");

	ret = ib_resize_cq(cq, 3);
	kt_check(kt, ret == -EINVAL && cq->cqe == 4,
		 "V-CQ-7 shrinking to 3 entries below the 4 queued is -EINVAL, the CQ keeps 4 (%d, %d)",
		 ret, cq->cqe);
	ret = ib_resize_cq(cq, 100);
	kt_check(kt, !ret && cq->cqe == 128,
		 "V-CQ-7 growing a full CQ to 100 entries gives 128 (%d, %d)",
		 ret, cq->cqe);
	kt_check(kt, kt_flush_recvs(qp, 4, 60),
		 "60 more flushed receives fit after the grow");
	kt_check(kt, kt_polled_in_order(cq, 0, 64),
		 "V-CQ-7 all 64 completions poll in order, none lost");

	kt_check(kt, kt_flush_recvs(qp, 64, 3) && !ib_resize_cq(cq, 3) &&
		 cq->cqe == 4,
		 "V-CQ-7 shrinking to 3 entries with 3 queued gives 4");
	ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	kt_check(kt, !ib_resize_cq(cq, 8) && cq->cqe == 8 &&
		 kt_polled_in_order(cq, 64, 3),
		 "V-CQ-7 grow to 8 again: the 3 completions poll in order");
	kt_check(kt, kt_flush_recvs(qp, 67, 1) &&
		 wait_for_completion_timeout(&vec.fired, 10 * HZ) &&
		 vec.calls == 1 && kt_polled_in_order(cq, 67, 1),
		 "the request for notification made before the resizes fires once (%d)",
		 vec.calls);

	ret = ib_resize_cq(cq, max + 1);
	kt_check(kt, ret == -EINVAL && cq->cqe == 8,
		 "resize to max_cqe + 1 (%d) is -EINVAL (%d)", max + 1, ret);
	ret = ib_resize_cq(cq, max);
	kt_check(kt, !ret && cq->cqe == max,
		 "resize to max_cqe (%d) works (%d, %d)", max, ret, cq->cqe);
	ret = ib_resize_cq(cq, 0);
	kt_check(kt, ret == -EINVAL && cq->cqe == max,
		 "resize to 0 entries is -EINVAL (%d)", ret);

	kt_check(kt, !ib_destroy_qp(qp), "ib_destroy_qp");
out_cq:
	ib_destroy_cq(cq);
out_pd:
	kt_dealloc_pd(kt, pd);
}

struct kt_case {
	const char *name;
	void (*run)(struct kt *kt);
};

static const struct kt_case kt_cases[] = {
	{ "pd", kt_case_pd },
	{ "map_mr_sg", kt_case_map_mr_sg },
	{ "alloc_mr_limits", kt_case_alloc_mr_limits },
	{ "max_mr", kt_case_max_mr },
	{ "max_cq_qp", kt_case_max_cq_qp },
	{ "stag_reuse", kt_case_stag_reuse },
	{ "qp_flush", kt_case_qp_flush },
	{ "qp_attr_masks", kt_case_qp_attr_masks },
	{ "comp_vector", kt_case_comp_vector },
	{ "resize_cq", kt_case_resize_cq },
};

/* Is @name in the comma-separated list @skip? */
static bool kt_skipped(const char *name)
{
	size_t len = strlen(name);
	const char *p = skip;

	while ((p = strstr(p, name))) {
		if ((p == skip || p[-1] == ',') && (p[len] == ',' || !p[len]))
			return true;
		p += len;
	}
	return false;
}

static int __init kt_init(void)
{
	struct kt kt = {};
	int i;

	kt_begin();
	pr_info("# dev=%s\n", dev);
	kt.name = "setup";
	kt.ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (kt_check(&kt, kt.ibdev && rdma_protocol_iwarp(kt.ibdev, 1),
		     "%s exists and is an iWARP device", dev)) {
		for (i = 0; i < ARRAY_SIZE(kt_cases); i++) {
			kt.name = kt_cases[i].name;
			if (kt_skipped(kt.name))
				pr_info("# %s skipped\n", kt.name);
			else
				kt_cases[i].run(&kt);
		}
	}
	if (kt.ibdev)
		ib_device_put(kt.ibdev);
	return kt_end(&kt);
}

static void __exit kt_exit(void)
{
}

module_init(kt_init);
module_exit(kt_exit);
MODULE_DESCRIPTION("kiwi: kernel test cases run through the RDMA core");
MODULE_LICENSE("GPL");
