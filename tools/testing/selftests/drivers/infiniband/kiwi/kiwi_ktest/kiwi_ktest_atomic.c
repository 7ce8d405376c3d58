// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_ktest_atomic: RFC 7306 atomics and immediate data as a kernel
 * consumer posts them (ib_post_send). The client ("A", in one network
 * namespace) connects to the server ("B", in another) through rdma_cm; B
 * fast-registers a page for remote write and remote atomic access and
 * tells A nothing: the module knows both ends. A then posts
 * IB_WR_ATOMIC_FETCH_AND_ADD and IB_WR_ATOMIC_CMP_AND_SWP (swapping and
 * not) and checks the original value it gets back and what B's memory
 * holds; IB_WR_RDMA_WRITE_WITH_IMM and IB_WR_SEND_WITH_IMM, checked at B
 * (opcode, IB_WC_WITH_IMM, ex.imm_data, byte_len, data, one receive WQE
 * each); an atomic with a local buffer of other than 8 bytes is refused
 * when posted; and, last, an atomic at an address not 8-byte aligned
 * completes with IB_WC_REM_INV_REQ_ERR and ends the connection, B's
 * memory untouched.
 *
 * TAP goes to the kernel log as in kiwi_ktest (kiwi_ktest.h); a failed
 * point fails the load. ktest.sh runs it:
 *
 *   insmod kiwi_ktest_atomic.ko netns_a=3 netns_b=4 \
 *	3</run/netns/kiwiA 4</run/netns/kiwiB
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inet.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "kiwi_ktest.h"

KT_PAIR_PARAMS("7491");

/* Where things are in each side's page. */
#define KA_WORDS	0	/* B: the atomics' targets; A: their results */
#define KA_DATA		512	/* a Write with Immediate's source and sink */
#define KA_WLEN		300
#define KA_RECV		2048	/* B: two receive buffers; A: Sends' source */
#define KA_RLEN		256
#define KA_POISON	0x5a

#define KA_IMM_WRITE	0x12345678
#define KA_IMM_SEND	0xa1b2c3d4

/* The async events of one QP. */
struct ka_ev {
	atomic_t fatal;
	atomic_t other;
};

/**
 * struct ka - the test
 * @kt: TAP state
 * @l: B's listener
 * @a: A's id
 * @b: B's, with the connect request
 * @ev_a: async events of A's QP
 * @ev_b: of B's
 * @pd_a: A's PD
 * @pd_b: B's
 * @cq_a: A's CQ, polled directly
 * @cq_b: B's
 * @mr: B's page, fast-registered for remote write and atomic access
 * @buf_a: A's page
 * @buf_b: B's page
 * @dma_a: DMA address of @buf_a
 * @dma_b: of @buf_b
 * @connected: the connection came up
 */
struct ka {
	struct kt kt;
	struct kt_cm_end l, a, b;
	struct ka_ev ev_a, ev_b;
	struct ib_pd *pd_a, *pd_b;
	struct ib_cq *cq_a, *cq_b;
	struct ib_mr *mr;
	u8 *buf_a, *buf_b;
	u64 dma_a, dma_b;
	bool connected;
};

static struct ka *ka;

static void ka_qp_event(struct ib_event *ev, void *ctx)
{
	struct ka_ev *e = ctx;

	if (ev->event == IB_EVENT_QP_FATAL)
		atomic_inc(&e->fatal);
	else
		atomic_inc(&e->other);
}

static u64 *ka_word(u8 *buf, int i)
{
	return (u64 *)(buf + KA_WORDS) + i;
}

static enum ib_qp_state ka_state(struct ib_qp *qp)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr = {};

	if (ib_query_qp(qp, &attr, IB_QP_STATE, &init))
		return -1;
	return attr.qp_state;
}

/*
 * A posts atomic @op on B's 8 bytes at offset @off of the MR, the
 * original value to A's word @i (poisoned first). Return: its completion
 * came (in @wc).
 */
static bool ka_atomic(enum ib_wr_opcode op, int i, u64 off, u64 compare_add,
		      u64 swap, struct ib_wc *wc)
{
	struct ib_sge sge = {
		.addr = ka->dma_a + KA_WORDS + i * sizeof(u64),
		.length = sizeof(u64),
		.lkey = ka->pd_a->local_dma_lkey,
	};
	struct ib_atomic_wr wr = {
		.wr = { .wr_id = 0xa70 + i, .sg_list = &sge, .num_sge = 1,
			.opcode = op, .send_flags = IB_SEND_SIGNALED },
		.remote_addr = ka->mr->iova + off,
		.compare_add = compare_add,
		.swap = swap,
		.rkey = ka->mr->rkey,
	};
	int ret;

	memset(ka_word(ka->buf_a, i), KA_POISON, sizeof(u64));
	ret = ib_post_send(ka->a.id->qp, &wr.wr, NULL);
	if (ret) {
		pr_info("# A: ib_post_send of the atomic: %d\n", ret);
		return false;
	}
	if (kt_poll_cq(ka->cq_a, wc, 1) != 1) {
		pr_info("# A: the atomic did not complete\n");
		return false;
	}
	return wc->wr_id == 0xa70 + i;
}

/* Did atomic @op into A's word @i succeed, returning @old, leaving @now? */
static void ka_check_atomic(enum ib_wr_opcode op, int i, u64 compare_add,
			    u64 swap, u64 old, u64 now, const char *what)
{
	enum ib_wc_opcode wop = op == IB_WR_ATOMIC_FETCH_AND_ADD ?
				IB_WC_FETCH_ADD : IB_WC_COMP_SWAP;
	bool done;
	struct ib_wc wc = {};
	u64 got, left;

	done = ka_atomic(op, i, i * sizeof(u64), compare_add, swap, &wc);
	got = READ_ONCE(*ka_word(ka->buf_a, i));
	left = READ_ONCE(*ka_word(ka->buf_b, i));
	kt_check(&ka->kt, done && wc.status == IB_WC_SUCCESS &&
		 wc.opcode == wop && wc.qp == ka->a.id->qp,
		 "%s: completes IB_WC_SUCCESS, opcode %s (%s, %d)", what,
		 wop == IB_WC_FETCH_ADD ? "IB_WC_FETCH_ADD" : "IB_WC_COMP_SWAP",
		 ib_wc_status_msg(wc.status), wc.opcode);
	kt_check(&ka->kt, got == old && left == now,
		 "%s: returns 0x%016llx, leaves 0x%016llx (0x%016llx, 0x%016llx)",
		 what, old, now, got, left);
}

static void ka_atomics(void)
{
	const u64 v = 0x0123456789abcdefULL, w = 0xfedcba9876543210ULL;

	WRITE_ONCE(*ka_word(ka->buf_b, 0), 0xfffffffffffffffeULL);
	WRITE_ONCE(*ka_word(ka->buf_b, 1), v);
	ka->kt.name = "fetch_add";
	ka_check_atomic(IB_WR_ATOMIC_FETCH_AND_ADD, 0, 3, 0,
			0xfffffffffffffffeULL, 1,
			"FetchAdd 3 to 0xfffffffffffffffe wraps");
	ka_check_atomic(IB_WR_ATOMIC_FETCH_AND_ADD, 0, 0x100000000ULL, 0,
			1, 0x100000001ULL,
			"FetchAdd 0x100000000 adds all 64 bits");
	ka->kt.name = "cmp_swap";
	ka_check_atomic(IB_WR_ATOMIC_CMP_AND_SWP, 1, v, w, v, w,
			"CmpSwap on equal swaps");
	ka_check_atomic(IB_WR_ATOMIC_CMP_AND_SWP, 1, w ^ BIT_ULL(63), v, w, w,
			"CmpSwap with the top bit different does not swap");
	ka_check_atomic(IB_WR_ATOMIC_CMP_AND_SWP, 1, w ^ 1, v, w, w,
			"CmpSwap with the low bit different does not swap");
}

/* Post one receive on B: @len bytes at @off of its page, poisoned. */
static int ka_recv(u64 id, u32 off, u32 len)
{
	struct ib_sge sge = {
		.addr = ka->dma_b + off,
		.length = len,
		.lkey = ka->pd_b->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };

	memset(ka->buf_b + off, KA_POISON, len);
	return ib_post_recv(ka->b.id->qp, &wr, NULL);
}

static bool ka_poisoned(const u8 *p, u32 len)
{
	return !memchr_inv(p, KA_POISON, len);
}

static void ka_fill(u8 *p, u32 len, u8 seed)
{
	u32 i;

	for (i = 0; i < len; i++)
		p[i] = (u8)(seed + i * 13 + (i >> 5));
}

/*
 * Write with Immediate: B's receive WQE completes
 * IB_WC_RECV_RDMA_WITH_IMM with the Write's byte count and the immediate
 * data; its buffer stays as it was, the Write's data is at the sink.
 */
static void ka_write_imm(void)
{
	struct ib_sge sge = {
		.addr = ka->dma_a + KA_DATA,
		.length = KA_WLEN,
		.lkey = ka->pd_a->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = { .wr_id = 0xb1, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE_WITH_IMM,
			.send_flags = IB_SEND_SIGNALED,
			.ex.imm_data = cpu_to_be32(KA_IMM_WRITE) },
		.remote_addr = ka->mr->iova + KA_DATA,
		.rkey = ka->mr->rkey,
	};
	struct ib_wc awc = {}, bwc = {};
	bool posted;

	ka->kt.name = "write_imm";
	ka_fill(ka->buf_a + KA_DATA, KA_WLEN, 0x31);
	memset(ka->buf_b + KA_DATA, 0, KA_WLEN);
	posted = !ka_recv(0xb100, KA_RECV, KA_RLEN) &&
		 !ib_post_send(ka->a.id->qp, &wr.wr, NULL);
	kt_check(&ka->kt, posted && kt_poll_cq(ka->cq_a, &awc, 1) == 1 &&
		 awc.wr_id == 0xb1 && awc.status == IB_WC_SUCCESS &&
		 awc.opcode == IB_WC_RDMA_WRITE,
		 "A: %d bytes with imm_data 0x%08x complete IB_WC_RDMA_WRITE (%s, %d)",
		 KA_WLEN, KA_IMM_WRITE, ib_wc_status_msg(awc.status),
		 awc.opcode);
	kt_check(&ka->kt, kt_poll_cq(ka->cq_b, &bwc, 1) == 1 &&
		 bwc.wr_id == 0xb100 && bwc.status == IB_WC_SUCCESS &&
		 bwc.opcode == IB_WC_RECV_RDMA_WITH_IMM &&
		 bwc.qp == ka->b.id->qp,
		 "B: the receive WQE completes IB_WC_RECV_RDMA_WITH_IMM (%s, %d)",
		 ib_wc_status_msg(bwc.status), bwc.opcode);
	kt_check(&ka->kt, (bwc.wc_flags & IB_WC_WITH_IMM) &&
		 bwc.ex.imm_data == cpu_to_be32(KA_IMM_WRITE) &&
		 bwc.byte_len == KA_WLEN,
		 "B: IB_WC_WITH_IMM, ex.imm_data 0x%08x (big-endian), byte_len %d (flags %#x, 0x%08x, %u)",
		 KA_IMM_WRITE, KA_WLEN, bwc.wc_flags,
		 be32_to_cpu(bwc.ex.imm_data), bwc.byte_len);
	kt_check(&ka->kt, !memcmp(ka->buf_a + KA_DATA, ka->buf_b + KA_DATA,
				  KA_WLEN) &&
		 ka_poisoned(ka->buf_b + KA_RECV, KA_RLEN),
		 "B: the data is at the sink, the receive buffer untouched");
}

/*
 * Send with Immediate, then a plain Send: one receive WQE each, the
 * first with the immediate data, the second without.
 */
static void ka_send_imm(void)
{
	struct ib_sge sge[2] = {
		{ ka->dma_a + KA_RECV, 40, ka->pd_a->local_dma_lkey },
		{ ka->dma_a + KA_RECV + KA_RLEN, 24, ka->pd_a->local_dma_lkey },
	};
	struct ib_send_wr plain = {
		.wr_id = 0xc2, .sg_list = &sge[1], .num_sge = 1,
		.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
	};
	struct ib_send_wr wr = {
		.wr_id = 0xc1, .sg_list = &sge[0], .num_sge = 1,
		.opcode = IB_WR_SEND_WITH_IMM, .send_flags = IB_SEND_SIGNALED,
		.ex.imm_data = cpu_to_be32(KA_IMM_SEND), .next = &plain,
	};
	struct ib_wc awc[2] = {}, bwc[2] = {};
	bool posted;

	ka->kt.name = "send_imm";
	ka_fill(ka->buf_a + KA_RECV, KA_RLEN * 2, 0x77);
	posted = !ka_recv(0xc100, KA_RECV, KA_RLEN) &&
		 !ka_recv(0xc101, KA_RECV + KA_RLEN, KA_RLEN) &&
		 !ib_post_send(ka->a.id->qp, &wr, NULL);
	kt_check(&ka->kt, posted && kt_poll_cq(ka->cq_a, awc, 2) == 2 &&
		 awc[0].wr_id == 0xc1 && awc[0].status == IB_WC_SUCCESS &&
		 awc[0].opcode == IB_WC_SEND && awc[1].wr_id == 0xc2 &&
		 awc[1].status == IB_WC_SUCCESS,
		 "A: Send with imm_data 0x%08x and a Send complete IB_WC_SEND (%s, %s)",
		 KA_IMM_SEND, ib_wc_status_msg(awc[0].status),
		 ib_wc_status_msg(awc[1].status));
	kt_check(&ka->kt, kt_poll_cq(ka->cq_b, bwc, 2) == 2 &&
		 bwc[0].wr_id == 0xc100 && bwc[1].wr_id == 0xc101 &&
		 bwc[0].status == IB_WC_SUCCESS &&
		 bwc[1].status == IB_WC_SUCCESS &&
		 bwc[0].opcode == IB_WC_RECV && bwc[1].opcode == IB_WC_RECV,
		 "B: two receive WQEs, one per Send, complete IB_WC_RECV (%s, %s)",
		 ib_wc_status_msg(bwc[0].status),
		 ib_wc_status_msg(bwc[1].status));
	kt_check(&ka->kt, (bwc[0].wc_flags & IB_WC_WITH_IMM) &&
		 bwc[0].ex.imm_data == cpu_to_be32(KA_IMM_SEND) &&
		 bwc[0].byte_len == 40,
		 "B: the first IB_WC_WITH_IMM, ex.imm_data 0x%08x, byte_len 40 (%#x, 0x%08x, %u)",
		 KA_IMM_SEND, bwc[0].wc_flags, be32_to_cpu(bwc[0].ex.imm_data),
		 bwc[0].byte_len);
	kt_check(&ka->kt, !(bwc[1].wc_flags & IB_WC_WITH_IMM) &&
		 bwc[1].byte_len == 24,
		 "B: the second without IB_WC_WITH_IMM, byte_len 24 (%#x, %u)",
		 bwc[1].wc_flags, bwc[1].byte_len);
	kt_check(&ka->kt, !memcmp(ka->buf_a + KA_RECV, ka->buf_b + KA_RECV, 40) &&
		 ka_poisoned(ka->buf_b + KA_RECV + 40, KA_RLEN - 40) &&
		 !memcmp(ka->buf_a + KA_RECV + KA_RLEN,
			 ka->buf_b + KA_RECV + KA_RLEN, 24),
		 "B: both messages' data, nothing past them");
}

/* Local misuse: refused when posted, nothing sent. */
static void ka_bad_post(void)
{
	struct ib_sge sge = {
		.addr = ka->dma_a + KA_WORDS,
		.length = 4,
		.lkey = ka->pd_a->local_dma_lkey,
	};
	struct ib_atomic_wr wr = {
		.wr = { .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_ATOMIC_FETCH_AND_ADD,
			.send_flags = IB_SEND_SIGNALED },
		.remote_addr = ka->mr->iova,
		.compare_add = 1,
		.rkey = ka->mr->rkey,
	};
	const struct ib_send_wr *bad = NULL;
	struct ib_wc wc;
	int ret;

	ka->kt.name = "bad_post";
	ret = ib_post_send(ka->a.id->qp, &wr.wr, &bad);
	kt_check(&ka->kt, ret == -EINVAL && bad == &wr.wr,
		 "FetchAdd into a 4-byte local buffer is -EINVAL, bad_wr set (%d)",
		 ret);
	kt_check(&ka->kt, ib_poll_cq(ka->cq_a, 1, &wc) == 0 &&
		 ka_state(ka->a.id->qp) == IB_QPS_RTS,
		 "nothing completes, the QP stays in RTS");
}

/*
 * An atomic at an address not 8-byte aligned: B answers with a Terminate
 * (Remote Operation Error), A's atomic completes IB_WC_REM_INV_REQ_ERR,
 * A's QP reports IB_EVENT_QP_FATAL, both QPs go to ERR and the connection
 * ends; B's bytes are as they were.
 */
static void ka_misaligned(void)
{
	const u64 v = 0x1122334455667788ULL;
	struct ib_wc wc = {};
	bool done;

	ka->kt.name = "misaligned";
	WRITE_ONCE(*ka_word(ka->buf_b, 2), v);
	WRITE_ONCE(*ka_word(ka->buf_b, 3), v);
	done = ka_atomic(IB_WR_ATOMIC_FETCH_AND_ADD, 2, 2 * sizeof(u64) + 4,
			 1, 0, &wc);
	kt_check(&ka->kt, done && wc.status == IB_WC_REM_INV_REQ_ERR,
		 "FetchAdd at MR offset 20 completes IB_WC_REM_INV_REQ_ERR (%s)",
		 done ? ib_wc_status_msg(wc.status) : "no completion");
	kt_check(&ka->kt, READ_ONCE(*ka_word(ka->buf_b, 2)) == v &&
		 READ_ONCE(*ka_word(ka->buf_b, 3)) == v &&
		 READ_ONCE(*ka_word(ka->buf_a, 2)) == 0x5a5a5a5a5a5a5a5aULL,
		 "B's bytes unchanged, A's local buffer not written");
	kt_check(&ka->kt, kt_cm_wait(&ka->a, RDMA_CM_EVENT_DISCONNECTED) &&
		 kt_cm_wait(&ka->b, RDMA_CM_EVENT_DISCONNECTED),
		 "the connection ends: both DISCONNECTED");
	kt_check(&ka->kt, ka_state(ka->a.id->qp) == IB_QPS_ERR &&
		 ka_state(ka->b.id->qp) == IB_QPS_ERR,
		 "both QPs in ERR");
	kt_check(&ka->kt, atomic_read(&ka->ev_a.fatal) == 1 &&
		 !atomic_read(&ka->ev_a.other),
		 "A: one IB_EVENT_QP_FATAL, no other event (%d, %d)",
		 atomic_read(&ka->ev_a.fatal), atomic_read(&ka->ev_a.other));
	ka->connected = false;
}

/* B fast-registers its page for remote write and atomic access. */
static bool ka_reg(void)
{
	struct ib_reg_wr reg = {
		.wr = { .wr_id = 0xf0, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			  IB_ACCESS_REMOTE_ATOMIC,
	};
	struct scatterlist sg;
	struct ib_wc wc = {};

	ka->mr = ib_alloc_mr(ka->pd_b, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(ka->mr)) {
		ka->mr = NULL;
		return false;
	}
	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = ka->dma_b;
	sg_dma_len(&sg) = PAGE_SIZE;
	if (ib_map_mr_sg(ka->mr, &sg, 1, NULL, PAGE_SIZE) != 1)
		return false;
	reg.mr = ka->mr;
	reg.key = ka->mr->rkey;
	return !ib_post_send(ka->b.id->qp, &reg.wr, NULL) &&
	       kt_poll_cq(ka->cq_b, &wc, 1) == 1 && wc.status == IB_WC_SUCCESS &&
	       wc.opcode == IB_WC_REG_MR;
}

/* A side's PD, CQ and page on @dev. Return: all made. */
static bool ka_side(struct ib_device *dev, struct ib_pd **pd,
		    struct ib_cq **cq, u8 **buf, u64 *dma)
{
	*pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(*pd)) {
		*pd = NULL;
		return false;
	}
	*cq = ib_alloc_cq(dev, NULL, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(*cq)) {
		*cq = NULL;
		return false;
	}
	*buf = (u8 *)get_zeroed_page(GFP_KERNEL);
	if (!*buf)
		return false;
	*dma = ib_dma_map_single(dev, *buf, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, *dma)) {
		*dma = 0;
		return false;
	}
	return true;
}

static void ka_side_free(struct ib_device *dev, struct ib_pd *pd,
			 struct ib_cq *cq, u8 *buf, u64 dma)
{
	if (dma)
		ib_dma_unmap_single(dev, dma, PAGE_SIZE, DMA_BIDIRECTIONAL);
	free_page((unsigned long)buf);
	if (cq)
		ib_free_cq(cq);
	if (pd)
		ib_dealloc_pd(pd);
}

static int ka_create_qp(struct rdma_cm_id *id, struct ib_pd *pd,
			struct ib_cq *cq, struct ka_ev *ev)
{
	struct ib_qp_init_attr qa = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.event_handler = ka_qp_event,
		.qp_context = ev,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return rdma_create_qp(id, pd, &qa);
}

/* A connects to B, ORD and IRD 4 each way. Return: it is up. */
static bool ka_connect(struct net *net_a, struct sockaddr *sa,
		       struct sockaddr *sb)
{
	struct rdma_conn_param param = { .responder_resources = 4,
					 .initiator_depth = 4 };

	if (kt_cm_create(&ka->a, net_a) ||
	    kt_cm_resolve_addr(&ka->a, sa, sb) ||
	    kt_cm_resolve_route(&ka->a))
		return false;
	if (!ka_side(ka->a.id->device, &ka->pd_a, &ka->cq_a, &ka->buf_a,
		     &ka->dma_a) ||
	    ka_create_qp(ka->a.id, ka->pd_a, ka->cq_a, &ka->ev_a) ||
	    rdma_connect(ka->a.id, &param) ||
	    !kt_cm_wait(&ka->b, RDMA_CM_EVENT_CONNECT_REQUEST) ||
	    ka_create_qp(ka->b.id, ka->pd_b, ka->cq_b, &ka->ev_b) ||
	    kt_cm_accept(&ka->b, &param) ||
	    !kt_cm_wait(&ka->b, RDMA_CM_EVENT_ESTABLISHED) ||
	    !kt_cm_wait(&ka->a, RDMA_CM_EVENT_ESTABLISHED))
		return false;
	ka->connected = true;
	return true;
}

static void ka_teardown(void)
{
	struct ib_device *dev_a = ka->a.id ? ka->a.id->device : NULL;
	struct ib_device *dev_b = ka->l.id ? ka->l.id->device : NULL;

	if (ka->l.id)
		rdma_destroy_id(ka->l.id);
	if (ka->connected) {
		rdma_disconnect(ka->a.id);
		kt_check(&ka->kt, kt_cm_wait(&ka->a, RDMA_CM_EVENT_DISCONNECTED) &&
			 kt_cm_wait(&ka->b, RDMA_CM_EVENT_DISCONNECTED),
			 "both sides DISCONNECTED");
	}
	if (ka->b.id && ka->b.id->qp)
		rdma_destroy_qp(ka->b.id);
	if (ka->b.id)
		rdma_destroy_id(ka->b.id);
	if (ka->a.id && ka->a.id->qp)
		rdma_destroy_qp(ka->a.id);
	if (ka->a.id)
		rdma_destroy_id(ka->a.id);
	if (ka->mr)
		kt_check(&ka->kt, !ib_dereg_mr(ka->mr), "B: ib_dereg_mr");
	ka_side_free(dev_a, ka->pd_a, ka->cq_a, ka->buf_a, ka->dma_a);
	ka_side_free(dev_b, ka->pd_b, ka->cq_b, ka->buf_b, ka->dma_b);
}

static void ka_run(struct net *net_a, struct net *net_b)
{
	struct sockaddr_storage sa, sb;
	struct ib_device *dev;
	int ret;

	ka->kt.name = "setup";
	ret = inet_pton_with_scope(net_a, AF_UNSPEC, addr_a, "0", &sa);
	if (!ret)
		ret = inet_pton_with_scope(net_b, AF_UNSPEC, addr_b, port, &sb);
	if (!kt_check(&ka->kt, !ret, "addresses %s and %s (%d)", addr_a,
		      addr_b, ret))
		return;
	ret = kt_cm_create(&ka->l, net_b);
	if (!ret)
		ret = rdma_bind_addr(ka->l.id, (struct sockaddr *)&sb);
	if (!kt_check(&ka->kt, !ret && ka->l.id->device,
		      "B: bind to %pISpc on a device (%d)", &sb, ret))
		goto out;
	dev = ka->l.id->device;
	kt_check(&ka->kt, dev->attrs.atomic_cap == IB_ATOMIC_HCA,
		 "B's device reports atomic_cap IB_ATOMIC_HCA (%d)",
		 dev->attrs.atomic_cap);
	if (!kt_check(&ka->kt, ka_side(dev, &ka->pd_b, &ka->cq_b, &ka->buf_b,
				       &ka->dma_b),
		      "B: PD, CQ and a page"))
		goto out;
	ret = rdma_listen(ka->l.id, 1);
	if (!kt_check(&ka->kt, !ret, "B: rdma_listen (%d)", ret) ||
	    !kt_check(&ka->kt, ka_connect(net_a, (struct sockaddr *)&sa,
					  (struct sockaddr *)&sb),
		      "A: connected to B, ORD and IRD 4") ||
	    !kt_check(&ka->kt, ka_reg(),
		      "B: page fast-registered with REMOTE_WRITE | REMOTE_ATOMIC"))
		goto out;
	ka_atomics();
	ka_write_imm();
	ka_send_imm();
	ka_bad_post();
	ka_misaligned();
out:
	ka->kt.name = "teardown";
	ka_teardown();
}

static int __init ka_init(void)
{
	struct net *net_a, *net_b;
	int ret;

	ka = kzalloc(sizeof(*ka), GFP_KERNEL);
	if (!ka)
		return -ENOMEM;
	kt_cm_init(&ka->l, "listener");
	kt_cm_init(&ka->a, "A");
	kt_cm_init(&ka->b, "B");
	kt_cm_serve(&ka->l, &ka->b);
	kt_begin();
	ka->kt.name = "setup";
	net_a = kt_net(&ka->kt, netns_a, "netns_a");
	net_b = kt_net(&ka->kt, netns_b, "netns_b");
	if (net_a && net_b)
		ka_run(net_a, net_b);
	if (net_a)
		put_net(net_a);
	if (net_b)
		put_net(net_b);
	ret = kt_end(&ka->kt);
	kfree(ka);
	return ret;
}

static void __exit ka_exit(void)
{
}

module_init(ka_init);
module_exit(ka_exit);
MODULE_DESCRIPTION("kiwi: kernel RFC 7306 atomics and immediate data test");
MODULE_LICENSE("GPL");
