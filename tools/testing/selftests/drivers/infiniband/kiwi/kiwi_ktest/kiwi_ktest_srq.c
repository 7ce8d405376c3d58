// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_ktest_srq: a shared receive queue as kernel consumers use it. The
 * server ("B", in one network namespace) makes one SRQ (ib_create_srq) and
 * accepts two rdma_cm connections whose QPs both take their receives from
 * it; the client ("A", in another) sends numbered, patterned messages over
 * both. B checks every message's data and that its completion names the QP
 * it came over, the SRQ limit event (armed with ib_modify_srq, read back
 * with ib_query_srq), that ib_post_recv on such a QP and destroying the SRQ
 * while QPs use it are refused, and that a QP moved to ERR reports
 * IB_EVENT_QP_LAST_WQE_REACHED without flushing the SRQ's WQEs, which the
 * other QP then uses. IDs: V-SRQ-* and V-FL-6 of the verbs digest.
 *
 * TAP goes to the kernel log as in kiwi_ktest (kiwi_ktest.h); a failed
 * point fails the load. The namespaces come as file descriptors open in
 * the insmod process:
 *
 *   insmod kiwi_ktest_srq.ko netns_a=3 netns_b=4 \
 *	3</run/netns/kiwiA 4</run/netns/kiwiB
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "kiwi_ktest.h"

KT_PAIR_PARAMS("7490");

#define KS_NQP		2
#define KS_SRQ_WR	16
#define KS_SLOTS	32
#define KS_MSG		512	/* bytes of a buffer; messages are shorter */

/* The start of each message; its data follow. */
struct ks_hdr {
	__le32 qp;
	__le32 seq;
	__le32 len;
	__le32 reserved;
};

/**
 * struct ks_end - one side of a connection
 * @cm: its rdma_cm id; B's come with the connect requests
 * @last_wqe: IB_EVENT_QP_LAST_WQE_REACHED events of its QP
 */
struct ks_end {
	struct kt_cm_end cm;
	atomic_t last_wqe;
};

/**
 * struct ks - the test
 * @kt: TAP state
 * @wq: woken on every async event
 * @a: the client's ids
 * @b: the server's
 * @l: the listener
 * @nconn: connections established
 * @limit_events: IB_EVENT_SRQ_LIMIT_REACHED events
 * @pd_a: the client's PD
 * @pd_b: the server's, the SRQ's too
 * @cq_a: the client's CQ, polled directly
 * @cq_b: the server's
 * @srq: the server's SRQ
 * @buf_a: messages sent, KS_SLOTS x KS_MSG bytes
 * @buf_b: the SRQ's buffers, as many
 * @dma_a: DMA address of @buf_a
 * @dma_b: DMA address of @buf_b
 * @seqs: messages received so far, by number
 */
struct ks {
	struct kt kt;
	wait_queue_head_t wq;
	struct ks_end a[KS_NQP];
	struct ks_end b[KS_NQP];
	struct kt_cm_end l;
	int nconn;
	atomic_t limit_events;
	struct ib_pd *pd_a, *pd_b;
	struct ib_cq *cq_a, *cq_b;
	struct ib_srq *srq;
	u8 *buf_a, *buf_b;
	u64 dma_a, dma_b;
	bool seqs[64];
};

static struct ks *ks;

/* Context: softirq (the receive engine takes the WQE). */
static void ks_srq_event(struct ib_event *ev, void *ctx)
{
	if (ev->event == IB_EVENT_SRQ_LIMIT_REACHED && ev->element.srq == ks->srq)
		atomic_inc(&ks->limit_events);
	wake_up(&ks->wq);
}

static void ks_qp_event(struct ib_event *ev, void *ctx)
{
	struct ks_end *e = ctx;

	if (ev->event == IB_EVENT_QP_LAST_WQE_REACHED &&
	    ev->element.qp == e->cm.id->qp)
		atomic_inc(&e->last_wqe);
	wake_up(&ks->wq);
}

static u32 ks_len(u32 seq)
{
	return 1 + (seq * 97) % (KS_MSG - sizeof(struct ks_hdr));
}

static u8 ks_pattern(u32 seq, u32 i)
{
	return (u8)((seq + 1) * 151 + i * 7 + (i >> 8));
}

static int ks_post_srq(u32 first, u32 count)
{
	u32 s;

	for (s = first; s < first + count; s++) {
		struct ib_sge sge = {
			.addr = ks->dma_b + s * KS_MSG,
			.length = KS_MSG,
			.lkey = ks->pd_b->local_dma_lkey,
		};
		struct ib_recv_wr wr = { .wr_id = s, .sg_list = &sge,
					 .num_sge = 1 };
		int ret = ib_post_srq_recv(ks->srq, &wr, NULL);

		if (ret)
			return ret;
	}
	return 0;
}

static int ks_arm(u32 limit)
{
	struct ib_srq_attr a = { .srq_limit = limit };

	return ib_modify_srq(ks->srq, &a, IB_SRQ_LIMIT);
}

static u32 ks_limit(void)
{
	struct ib_srq_attr a = { .srq_limit = 12345 };

	return ib_query_srq(ks->srq, &a) ? 12345 : a.srq_limit;
}

/*
 * A sends @count messages from @first, alternating over the QPs in @mask;
 * B receives and checks them. Return: all sent, received and right.
 */
static bool ks_exchange(u32 count, u32 first, u32 mask)
{
	struct ib_wc wc[KS_SRQ_WR];
	int on[KS_NQP], non = 0, q, got;
	bool good = true;
	u32 k, j;

	for (q = 0; q < KS_NQP; q++)
		if (mask & BIT(q))
			on[non++] = q;
	for (k = 0; k < count; k++) {
		u32 seq = first + k;
		u8 *m = ks->buf_a + seq * KS_MSG;
		struct ks_hdr *h = (struct ks_hdr *)m;
		struct ib_sge sge = {
			.addr = ks->dma_a + seq * KS_MSG,
			.length = sizeof(*h) + ks_len(seq),
			.lkey = ks->pd_a->local_dma_lkey,
		};
		struct ib_send_wr wr = { .wr_id = seq, .sg_list = &sge,
					 .num_sge = 1, .opcode = IB_WR_SEND,
					 .send_flags = IB_SEND_SIGNALED };

		h->qp = cpu_to_le32(on[k % non]);
		h->seq = cpu_to_le32(seq);
		h->len = cpu_to_le32(ks_len(seq));
		for (j = 0; j < ks_len(seq); j++)
			m[sizeof(*h) + j] = ks_pattern(seq, j);
		if (ib_post_send(ks->a[on[k % non]].cm.id->qp, &wr, NULL))
			return false;
	}
	got = kt_poll_cq(ks->cq_a, wc, count);
	for (k = 0; k < got; k++)
		good &= wc[k].status == IB_WC_SUCCESS;
	if (got != count || !good) {
		pr_info("# A: %d of %u sends completed, all well: %d\n", got,
			count, good);
		return false;
	}

	got = kt_poll_cq(ks->cq_b, wc, count);
	if (got != count) {
		pr_info("# B: %d of %u messages received\n", got, count);
		return false;
	}
	for (k = 0; k < got; k++) {
		u8 *m = ks->buf_b + wc[k].wr_id * KS_MSG;
		struct ks_hdr *h = (struct ks_hdr *)m;
		u32 seq = le32_to_cpu(h->seq), qp = le32_to_cpu(h->qp);

		if (wc[k].status != IB_WC_SUCCESS || wc[k].opcode != IB_WC_RECV ||
		    wc[k].wr_id >= KS_SLOTS) {
			pr_info("# B: completion %s opcode %d\n",
				ib_wc_status_msg(wc[k].status), wc[k].opcode);
			good = false;
			continue;
		}
		if (qp >= KS_NQP || !(mask & BIT(qp)) || seq < first ||
		    seq >= first + count || ks->seqs[seq] ||
		    le32_to_cpu(h->len) != ks_len(seq) ||
		    wc[k].byte_len != sizeof(*h) + ks_len(seq)) {
			pr_info("# B: bad message qp %u seq %u bytes %u\n", qp,
				seq, wc[k].byte_len);
			good = false;
			continue;
		}
		ks->seqs[seq] = true;
		for (j = 0; j < ks_len(seq); j++)
			if (m[sizeof(*h) + j] != ks_pattern(seq, j))
				break;
		if (j != ks_len(seq)) {
			pr_info("# B: message %u wrong at %u\n", seq, j);
			good = false;
		}
		/* V-SRQ-3: the CQE is the receiving QP's. */
		if (wc[k].qp != ks->b[qp].cm.id->qp) {
			pr_info("# B: message %u from QP %u completed on another QP\n",
				seq, qp);
			good = false;
		}
	}
	return good;
}

/* SRQ creation and its limits, before any connection. */
static bool ks_srq_create(struct ib_device *dev)
{
	struct ib_srq_init_attr init = {
		.event_handler = ks_srq_event,
		.srq_type = IB_SRQT_BASIC,
	};
	struct ib_srq_attr a;
	struct ib_srq *s;

	kt_check(&ks->kt, dev->attrs.max_srq > 0 &&
		 dev->attrs.max_srq_wr == 16384 && dev->attrs.max_srq_sge == 6,
		 "V-SRQ-1: device attrs max_srq %d, max_srq_wr %d, max_srq_sge %d",
		 dev->attrs.max_srq, dev->attrs.max_srq_wr,
		 dev->attrs.max_srq_sge);
	init.attr = (struct ib_srq_attr){ dev->attrs.max_srq_wr + 1, 1, 0 };
	s = ib_create_srq(ks->pd_b, &init);
	kt_check(&ks->kt, PTR_ERR_OR_ZERO(s) == -EINVAL,
		 "V-SRQ-18: max_wr max_srq_wr + 1 refused with -EINVAL (%d)",
		 PTR_ERR_OR_ZERO(s));
	init.attr = (struct ib_srq_attr){ 8, dev->attrs.max_srq_sge + 1, 0 };
	s = ib_create_srq(ks->pd_b, &init);
	kt_check(&ks->kt, PTR_ERR_OR_ZERO(s) == -EINVAL,
		 "V-SRQ-18: max_sge max_srq_sge + 1 refused with -EINVAL (%d)",
		 PTR_ERR_OR_ZERO(s));
	init.attr = (struct ib_srq_attr){ 4, 1, 5 };
	s = ib_create_srq(ks->pd_b, &init);
	kt_check(&ks->kt, PTR_ERR_OR_ZERO(s) == -EINVAL,
		 "V-SRQ-16: srq_limit 5 on 4 WRs refused with -EINVAL (%d)",
		 PTR_ERR_OR_ZERO(s));

	init.attr = (struct ib_srq_attr){ 4, 1, 2 };
	s = ib_create_srq(ks->pd_b, &init);
	if (!IS_ERR(s)) {
		kt_check(&ks->kt, !ib_query_srq(s, &a) && a.srq_limit == 2,
			 "V-SRQ-15: srq_limit 2 at creation arms the limit");
		ib_destroy_srq(s);
	} else {
		kt_check(&ks->kt, false, "ib_create_srq with srq_limit 2 (%ld)",
			 PTR_ERR(s));
	}

	init.attr = (struct ib_srq_attr){ KS_SRQ_WR, 1, 0 };
	s = ib_create_srq(ks->pd_b, &init);
	if (!kt_check(&ks->kt, !IS_ERR(s) && init.attr.max_wr >= KS_SRQ_WR,
		      "V-SRQ-18: ib_create_srq, %d WRs, 1 SGE (%d)", KS_SRQ_WR,
		      PTR_ERR_OR_ZERO(s)))
		return false;
	ks->srq = s;
	a = (struct ib_srq_attr){ .max_wr = 2 * KS_SRQ_WR };
	kt_check(&ks->kt, ib_modify_srq(s, &a, IB_SRQ_MAX_WR) == -EINVAL,
		 "V-SRQ-13: resizing (IB_SRQ_MAX_WR) refused with -EINVAL");
	kt_check(&ks->kt, ks_arm(KS_SRQ_WR + 1) == -EINVAL && ks_limit() == 0,
		 "V-SRQ-16: limit %d on %d WRs refused, srq_limit stays 0",
		 KS_SRQ_WR + 1, KS_SRQ_WR);
	{
		struct ib_sge sge[2] = {
			{ ks->dma_b, 8, ks->pd_b->local_dma_lkey },
			{ ks->dma_b + 8, 8, ks->pd_b->local_dma_lkey },
		};
		struct ib_recv_wr wr = { .sg_list = sge, .num_sge = 2 };
		const struct ib_recv_wr *bad = NULL;

		kt_check(&ks->kt, ib_post_srq_recv(s, &wr, &bad) == -EINVAL &&
			 bad == &wr,
			 "ib_post_srq_recv with 2 SGEs on 1 refused, bad_wr set");
	}
	kt_check(&ks->kt, !ks_post_srq(0, 8), "post 8 WQEs on the SRQ");
	kt_check(&ks->kt, !ks_arm(4) && ks_limit() == 4,
		 "V-SRQ-15: arm limit 4; ib_query_srq says 4");
	return true;
}

static bool ks_buf(struct ib_device *dev, u8 **buf, u64 *dma)
{
	*buf = kzalloc(KS_SLOTS * KS_MSG, GFP_KERNEL);
	if (!*buf)
		return false;
	*dma = ib_dma_map_single(dev, *buf, KS_SLOTS * KS_MSG,
				 DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, *dma)) {
		*dma = 0;
		return false;
	}
	return true;
}

static void ks_buf_free(struct ib_device *dev, u8 *buf, u64 dma)
{
	if (dma)
		ib_dma_unmap_single(dev, dma, KS_SLOTS * KS_MSG,
				    DMA_BIDIRECTIONAL);
	kfree(buf);
}

/* A's id @i: resolve, its QP, connect; B's side of it on the SRQ. */
static bool ks_connect(struct net *net_a, int i, struct sockaddr *sa,
		       struct sockaddr *sb)
{
	struct rdma_conn_param param = { .responder_resources = 1,
					 .initiator_depth = 1 };
	struct ib_qp_init_attr qa = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 16, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ks_end *a = &ks->a[i], *b = &ks->b[i];
	int ret;

	if (kt_cm_create(&a->cm, net_a) ||
	    kt_cm_resolve_addr(&a->cm, sa, sb) ||
	    kt_cm_resolve_route(&a->cm))
		return false;
	if (!ks->pd_a) {
		struct ib_device *dev = a->cm.id->device;

		ks->pd_a = ib_alloc_pd(dev, 0);
		ks->cq_a = IS_ERR(ks->pd_a) ? NULL :
			   ib_alloc_cq(dev, NULL, 64, 0, IB_POLL_DIRECT);
		if (IS_ERR_OR_NULL(ks->cq_a) || !ks_buf(dev, &ks->buf_a, &ks->dma_a)) {
			pr_info("# A: no PD, CQ or buffer\n");
			return false;
		}
	}
	qa.send_cq = ks->cq_a;
	qa.recv_cq = ks->cq_a;
	ret = rdma_create_qp(a->cm.id, ks->pd_a, &qa);
	if (ret)
		return false;
	ret = rdma_connect(a->cm.id, &param);
	if (ret || !kt_cm_wait(&b->cm, RDMA_CM_EVENT_CONNECT_REQUEST))
		return false;

	/* On the SRQ the RQ sizes are ignored (V-SRQ-4). */
	qa = (struct ib_qp_init_attr){
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.event_handler = ks_qp_event,
		.qp_context = b,
		.send_cq = ks->cq_b,
		.recv_cq = ks->cq_b,
		.srq = ks->srq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 100000,
			 .max_send_sge = 1, .max_recv_sge = 100 },
	};
	ret = rdma_create_qp(b->cm.id, ks->pd_b, &qa);
	if (!kt_check(&ks->kt, !ret && qa.cap.max_recv_wr == 0,
		      "V-SRQ-4: B's QP %d on the SRQ, RQ sizes ignored (%d)", i,
		      ret))
		return false;
	ret = kt_cm_accept(&b->cm, &param);
	if (ret || !kt_cm_wait(&b->cm, RDMA_CM_EVENT_ESTABLISHED) ||
	    !kt_cm_wait(&a->cm, RDMA_CM_EVENT_ESTABLISHED))
		return false;
	ks->nconn++;
	return true;
}

/* Both connections are up: the SRQ at work. */
static void ks_use(void)
{
	struct ib_qp_attr qattr = { .qp_state = IB_QPS_ERR };
	struct ib_sge sge = { ks->dma_b, 8, ks->pd_b->local_dma_lkey };
	struct ib_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 };
	const struct ib_recv_wr *bad = NULL;
	struct ib_wc wc;

	kt_check(&ks->kt, ib_post_recv(ks->b[1].cm.id->qp, &rwr, &bad) == -EINVAL &&
		 bad == &rwr,
		 "V-SRQ-5: ib_post_recv on a QP on an SRQ fails with -EINVAL");
	kt_check(&ks->kt, ib_destroy_srq_user(ks->srq, NULL) == -EBUSY,
		 "V-SRQ-14: destroying the SRQ while QPs use it fails with -EBUSY");

	kt_check(&ks->kt, ks_exchange(4, 0, 3),
		 "V-SRQ-3/6: 4 messages over 2 QPs land in SRQ WQEs: data and QP right");
	kt_check(&ks->kt, atomic_read(&ks->limit_events) == 0 && ks_limit() == 4,
		 "V-SRQ-15: 4 WQEs left of limit 4: no event, still armed");
	kt_check(&ks->kt, ks_exchange(1, 4, 3) &&
		 wait_event_timeout(ks->wq, atomic_read(&ks->limit_events),
				    KT_TIMEOUT) &&
		 atomic_read(&ks->limit_events) == 1,
		 "V-SRQ-15: 3 left of limit 4: one IB_EVENT_SRQ_LIMIT_REACHED");
	kt_check(&ks->kt, ks_limit() == 0,
		 "V-SRQ-15: the event disarmed the limit: ib_query_srq says 0");
	kt_check(&ks->kt, ks_exchange(3, 5, 3) &&
		 atomic_read(&ks->limit_events) == 1,
		 "V-SRQ-15: 3 more empty the SRQ; no second event (one-shot)");

	kt_check(&ks->kt, !ks_post_srq(8, 6) && !ks_arm(3),
		 "post 6 more WQEs, re-arm limit 3");
	kt_check(&ks->kt, !ib_modify_qp(ks->b[0].cm.id->qp, &qattr, IB_QP_STATE),
		 "B: QP 0 to ERR");
	kt_check(&ks->kt, wait_event_timeout(ks->wq,
					     atomic_read(&ks->b[0].last_wqe),
					     KT_TIMEOUT),
		 "B: IB_EVENT_QP_LAST_WQE_REACHED for QP 0");
	kt_check(&ks->kt, ib_poll_cq(ks->cq_b, 1, &wc) == 0,
		 "V-FL-6: nothing completes: the SRQ's WQEs are not flushed with QP 0");
	kt_check(&ks->kt, ks_exchange(3, 8, 2) &&
		 atomic_read(&ks->limit_events) == 1,
		 "V-SRQ-11/V-FL-6: QP 1 receives 3 messages in those WQEs; 3 left, no event");
	kt_check(&ks->kt, ks_exchange(1, 11, 2) &&
		 wait_event_timeout(ks->wq, atomic_read(&ks->limit_events) == 2,
				    KT_TIMEOUT),
		 "V-SRQ-15: the re-armed limit fires with 2 of 3 left");
}

/* Disconnect whatever connected, wait for both sides, free everything. */
static void ks_teardown(void)
{
	struct ib_device *dev_a = ks->a[0].cm.id ? ks->a[0].cm.id->device : NULL;
	struct ib_device *dev_b = ks->l.id ? ks->l.id->device : NULL;
	struct ib_wc wc;
	int i;

	if (ks->l.id)
		rdma_destroy_id(ks->l.id);
	for (i = 0; i < KS_NQP; i++)
		if (ks->a[i].cm.id)
			rdma_disconnect(ks->a[i].cm.id);
	if (ks->nconn == KS_NQP) {
		bool gone = true;

		for (i = 0; i < KS_NQP; i++)
			gone &= kt_cm_wait(&ks->a[i].cm, RDMA_CM_EVENT_DISCONNECTED) &&
				kt_cm_wait(&ks->b[i].cm, RDMA_CM_EVENT_DISCONNECTED);
		kt_check(&ks->kt, gone, "both connections DISCONNECTED on both sides");
		kt_check(&ks->kt, wait_event_timeout(ks->wq,
						     atomic_read(&ks->b[1].last_wqe),
						     KT_TIMEOUT) &&
			 atomic_read(&ks->b[0].last_wqe) == 1,
			 "B: QP 1 reports LAST_WQE_REACHED as it disconnects, QP 0 no second one");
		kt_check(&ks->kt, ib_poll_cq(ks->cq_b, 1, &wc) == 0,
			 "V-FL-6: the 2 WQEs left are not flushed by the disconnects");
	}
	for (i = 0; i < KS_NQP; i++) {
		struct rdma_cm_id *b = ks->b[i].cm.id, *a = ks->a[i].cm.id;

		if (b && b->qp)
			rdma_destroy_qp(b);
		if (b)
			rdma_destroy_id(b);
		if (a && a->qp)
			rdma_destroy_qp(a);
		if (a)
			rdma_destroy_id(a);
	}
	if (ks->srq)
		kt_check(&ks->kt, !ib_destroy_srq_user(ks->srq, NULL),
			 "V-SRQ-14: destroy the SRQ, WQEs still posted, once no QP uses it");
	if (!IS_ERR_OR_NULL(ks->cq_a))
		ib_free_cq(ks->cq_a);
	if (!IS_ERR_OR_NULL(ks->cq_b))
		ib_free_cq(ks->cq_b);
	ks_buf_free(dev_a, ks->buf_a, ks->dma_a);
	ks_buf_free(dev_b, ks->buf_b, ks->dma_b);
	if (!IS_ERR_OR_NULL(ks->pd_a))
		ib_dealloc_pd(ks->pd_a);
	if (!IS_ERR_OR_NULL(ks->pd_b))
		ib_dealloc_pd(ks->pd_b);
}

static void ks_run(struct net *net_a, struct net *net_b)
{
	struct sockaddr_storage sa, sb;
	struct ib_device *dev;
	int i, ret;

	ks->kt.name = "srq";
	ret = inet_pton_with_scope(net_a, AF_UNSPEC, addr_a, "0", &sa);
	if (!ret)
		ret = inet_pton_with_scope(net_b, AF_UNSPEC, addr_b, port, &sb);
	if (!kt_check(&ks->kt, !ret, "addresses %s and %s (%d)", addr_a, addr_b,
		      ret))
		return;
	ret = kt_cm_create(&ks->l, net_b);
	if (!ret)
		ret = rdma_bind_addr(ks->l.id, (struct sockaddr *)&sb);
	if (!kt_check(&ks->kt, !ret && ks->l.id->device,
		      "B: bind to %pISpc on a device (%d)", &sb, ret))
		goto out;
	dev = ks->l.id->device;
	ks->pd_b = ib_alloc_pd(dev, 0);
	ks->cq_b = IS_ERR(ks->pd_b) ? NULL :
		   ib_alloc_cq(dev, NULL, 64, 0, IB_POLL_DIRECT);
	if (!kt_check(&ks->kt, !IS_ERR_OR_NULL(ks->cq_b) &&
		      ks_buf(dev, &ks->buf_b, &ks->dma_b),
		      "B: PD, CQ and buffers") ||
	    !ks_srq_create(dev))
		goto out;
	ret = rdma_listen(ks->l.id, KS_NQP);
	if (!kt_check(&ks->kt, !ret, "B: rdma_listen (%d)", ret))
		goto out;
	for (i = 0; i < KS_NQP; i++)
		if (!kt_check(&ks->kt, ks_connect(net_a, i, (struct sockaddr *)&sa,
						  (struct sockaddr *)&sb),
			      "A: QP %d connected to B", i))
			goto out;
	ks_use();
out:
	ks_teardown();
}

static int __init ks_init(void)
{
	struct net *net_a, *net_b;
	int ret, i;

	ks = kzalloc(sizeof(*ks), GFP_KERNEL);
	if (!ks)
		return -ENOMEM;
	init_waitqueue_head(&ks->wq);
	/* B's ends take the listener's connect requests in turn. */
	kt_cm_init(&ks->l, "listener");
	for (i = 0; i < KS_NQP; i++) {
		kt_cm_init(&ks->a[i].cm, "A");
		kt_cm_init(&ks->b[i].cm, "B");
		kt_cm_serve(&ks->l, &ks->b[i].cm);
	}
	kt_begin();
	ks->kt.name = "setup";
	net_a = kt_net(&ks->kt, netns_a, "netns_a");
	net_b = kt_net(&ks->kt, netns_b, "netns_b");
	if (net_a && net_b)
		ks_run(net_a, net_b);
	if (net_a)
		put_net(net_a);
	if (net_b)
		put_net(net_b);
	ret = kt_end(&ks->kt);
	kfree(ks);
	return ret;
}

static void __exit ks_exit(void)
{
}

module_init(ks_init);
module_exit(ks_exit);
MODULE_DESCRIPTION("kiwi: kernel shared receive queue test");
MODULE_LICENSE("GPL");
