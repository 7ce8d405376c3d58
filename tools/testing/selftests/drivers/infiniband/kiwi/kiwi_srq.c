// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_srq: a shared receive queue through libibverbs, libkiwi and
 * rdma_cm. The server makes one SRQ and accepts NQP connections whose QPs
 * all take their receives from it; the client sends numbered, patterned
 * messages over its QPs when the server tells it to (in Sends on the last
 * QP), so that the server knows exactly how many SRQ WQEs have been used
 * when it looks at the limit event. Both print TAP; srq.sh re-emits the
 * server's points, which are about the SRQ.
 *
 *   kiwi_srq server ADDR PORT
 *   kiwi_srq client ADDR PORT
 *
 * IDs cited: V-SRQ-* and V-FL-6 of shared/spec/digest-verbs.md.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

#define NQP		3	/* QPs on the SRQ */
#define SRQ_WR		16
#define SLOTS		32	/* SRQ buffers, each MSG_MAX bytes */
#define MSG_MAX		1024
#define MSG_MAGIC	0x5352514bu	/* "SRQK" */
#define EVENT_MS	10000	/* an event that must come: generous */

/* A message the client sends; its length depends on its number. */
struct msg {
	uint32_t magic;
	uint32_t qp;		/* the client's QP index it went out on */
	uint32_t seq;
	uint32_t len;		/* bytes of data[] */
	uint8_t data[MSG_MAX - 16];
};

enum { CTL_SEND, CTL_DONE, CTL_SEND_BLIND };	/* blind: may fail */

/* What the server asks of the client. */
struct ctl {
	uint32_t cmd;
	uint32_t count;		/* messages to send; CTL_DONE: orders given */
	uint32_t first;		/* number of the first one */
	uint32_t mask;		/* QPs to send them on, round robin */
};

static struct rdma_event_channel *ch;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;

static uint32_t msg_len(uint32_t seq)
{
	return 1 + (seq * 337) % (MSG_MAX - 16);
}

static uint8_t pattern(uint32_t seq, uint32_t i)
{
	return (uint8_t)((seq + 1) * 151 + i * 7 + (i >> 8));
}

/* Consume rdma_cm events until @ids have all been disconnected. */
static void wait_disconnected(struct rdma_cm_id **ids)
{
	bool gone[NQP] = { false };
	int left = NQP;

	while (left) {
		struct rdma_cm_event *ev;

		if (rdma_get_cm_event(ch, &ev))
			die("rdma_get_cm_event");
		for (int i = 0; i < NQP; i++)
			if (ev->id == ids[i] && !gone[i] &&
			    ev->event == RDMA_CM_EVENT_DISCONNECTED) {
				gone[i] = true;
				left--;
			}
		rdma_ack_cm_event(ev);
	}
}

static void setup_verbs(struct ibv_context *verbs)
{
	ctx = verbs;
	pd = ibv_alloc_pd(ctx);
	scq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	rcq = scq ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	if (!rcq)
		die("ibv_alloc_pd/ibv_create_cq");
}

static struct ibv_mr *reg(struct ibv_pd *on, void *buf, size_t len)
{
	struct ibv_mr *mr = ibv_reg_mr(on, buf, len, IBV_ACCESS_LOCAL_WRITE);

	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

/* Up to @want completions of @cq, waiting at most about 30 s. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int want)
{
	return kp_poll(cq, wc, want, 30000);
}

static void post_send(struct ibv_qp *qp, struct ibv_mr *mr, void *buf,
		      uint32_t len, uint64_t wr_id)
{
	if (kp_post_send(qp, wr_id, IBV_WR_SEND, IBV_SEND_SIGNALED, buf, len,
			 mr->lkey, 0, 0))
		die("ibv_post_send");
}

/* ---- server ---- */

static struct ibv_srq *srq;
static struct ibv_pd *srq_pd;
static struct ibv_qp *qps[NQP];
static uint8_t *slots;
static struct ibv_mr *slots_mr;
static bool seen[SRQ_WR * 4];

static int post_srq(uint32_t first, uint32_t count)
{
	for (uint32_t s = first; s < first + count; s++) {
		int ret = kp_post_srq_recv(srq, s, slots + s * MSG_MAX,
					   MSG_MAX, slots_mr->lkey);

		if (ret)
			return ret;
	}
	return 0;
}

/* The next async event within @ms; false if none came. */
static bool next_async(int ms, struct ibv_async_event *ev)
{
	return kp_async(ctx, ev, ms);
}

/* Wait for @type about @qp or the SRQ; other events are noted and skipped. */
static bool wait_async(enum ibv_event_type type, struct ibv_qp *qp)
{
	struct ibv_async_event ev;

	while (next_async(EVENT_MS, &ev)) {
		bool match = ev.event_type == type &&
			     (qp ? ev.element.qp == qp : ev.element.srq == srq);

		if (!match)
			note("async event %s while waiting for %s",
			     ibv_event_type_str(ev.event_type),
			     ibv_event_type_str(type));
		if (match)
			return true;
	}
	return false;
}

/* No SRQ limit event is pending right now. */
static bool no_limit_event(void)
{
	struct ibv_async_event ev;
	bool none = true;

	while (next_async(0, &ev)) {
		note("async event %s", ibv_event_type_str(ev.event_type));
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
			none = false;
	}
	return none;
}

/* Orders other than CTL_DONE: given (server), carried out (client). */
static uint32_t orders;

static void send_ctl(struct ctl *c, struct ibv_mr *mr, uint32_t cmd,
		     uint32_t count, uint32_t first, uint32_t mask)
{
	struct ibv_wc wc;

	if (cmd != CTL_DONE)
		orders++;
	*c = (struct ctl){ cmd, count, first, mask };
	post_send(qps[NQP - 1], mr, c, sizeof(*c), 0);
	if (poll_n(scq, &wc, 1) != 1 || wc.status != IBV_WC_SUCCESS)
		bail("control message not sent");
}

/*
 * Have the client send @count messages from @first over the QPs in @mask,
 * receive them and check each: data, length, and that the completion names
 * the QP the client sent it on (V-SRQ-3: a CQE of the QP's receive CQ).
 */
static bool exchange(struct ctl *c, struct ibv_mr *cmr, uint32_t count,
		     uint32_t first, uint32_t mask)
{
	struct ibv_wc wc[SRQ_WR];
	int per_qp[NQP] = { 0 };
	bool good = true;
	int got;

	send_ctl(c, cmr, CTL_SEND, count, first, mask);
	got = poll_n(rcq, wc, count);
	if (got != (int)count) {
		note("%d of %u messages received", got, count);
		return false;
	}
	for (int i = 0; i < got; i++) {
		struct msg *m = (struct msg *)(slots + wc[i].wr_id * MSG_MAX);
		uint32_t bad = 0;

		if (wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].opcode != IBV_WC_RECV || wc[i].wr_id >= SLOTS) {
			note("completion %s opcode %d wr_id %llu",
			     ibv_wc_status_str(wc[i].status), wc[i].opcode,
			     (unsigned long long)wc[i].wr_id);
			good = false;
			continue;
		}
		if (m->magic != MSG_MAGIC || m->qp >= NQP ||
		    !(mask & 1u << m->qp) || m->seq < first ||
		    m->seq >= first + count || seen[m->seq] ||
		    m->len != msg_len(m->seq) ||
		    wc[i].byte_len != 16 + m->len) {
			note("bad message: magic %x qp %u seq %u len %u bytes %u",
			     m->magic, m->qp, m->seq, m->len, wc[i].byte_len);
			good = false;
			continue;
		}
		seen[m->seq] = true;
		for (uint32_t j = 0; j < m->len && !bad; j++)
			if (m->data[j] != pattern(m->seq, j))
				bad = j + 1;
		if (bad) {
			note("message %u: data wrong at %u", m->seq, bad - 1);
			good = false;
		}
		if (wc[i].qp_num != qps[m->qp]->qp_num) {
			note("message %u sent on QP %u arrived on qp_num %u, not %u",
			     m->seq, m->qp, wc[i].qp_num, qps[m->qp]->qp_num);
			good = false;
		}
		per_qp[m->qp]++;
	}
	/* Round robin: each QP in @mask carried its share. */
	for (int q = 0; q < NQP; q++)
		if ((mask & 1u << q) && count >= NQP && !per_qp[q]) {
			note("QP %d received nothing", q);
			good = false;
		}
	return good;
}

static uint32_t srq_limit(void)
{
	struct ibv_srq_attr a = { .srq_limit = 12345 };

	if (ibv_query_srq(srq, &a))
		return 12345;
	return a.srq_limit;
}

static int arm(uint32_t limit)
{
	struct ibv_srq_attr a = { .srq_limit = limit };

	return ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT);
}

/* SRQ creation and its limits, before any connection. */
static void server_srq_checks(void)
{
	struct ibv_device_attr dev = { .max_srq = 0 };
	struct ibv_srq_init_attr ia;
	struct ibv_srq_attr a;
	struct ibv_srq *s;

	if (ibv_query_device(ctx, &dev))
		die("ibv_query_device");
	check(dev.max_srq > 0 &&
	      dev.max_srq_wr == 16384 && dev.max_srq_sge == 6,
	      "V-SRQ-1: the device reports SRQs: max_srq %d, max_srq_wr %d, max_srq_sge %d",
	      dev.max_srq, dev.max_srq_wr, dev.max_srq_sge);

	ia = (struct ibv_srq_init_attr){ .attr = { dev.max_srq_wr + 1, 1, 0 } };
	errno = 0;
	s = ibv_create_srq(srq_pd, &ia);
	check(!s && errno == EINVAL, "V-SRQ-18: max_wr max_srq_wr + 1 refused with EINVAL (%s)",
	      strerror(errno));
	ia = (struct ibv_srq_init_attr){ .attr = { 8, dev.max_srq_sge + 1, 0 } };
	errno = 0;
	s = ibv_create_srq(srq_pd, &ia);
	check(!s && errno == EINVAL, "V-SRQ-18: max_sge max_srq_sge + 1 refused with EINVAL (%s)",
	      strerror(errno));
	ia = (struct ibv_srq_init_attr){ .attr = { 4, 1, 5 } };
	errno = 0;
	s = ibv_create_srq(srq_pd, &ia);
	check(!s && errno == EINVAL, "V-SRQ-16: srq_limit 5 on a 4-WR SRQ refused with EINVAL (%s)",
	      strerror(errno));

	ia = (struct ibv_srq_init_attr){ .attr = { 4, 1, 2 } };
	s = ibv_create_srq(srq_pd, &ia);
	memset(&a, 0, sizeof(a));
	if (s && ibv_query_srq(s, &a))
		die("ibv_query_srq");
	check(s && a.srq_limit == 2 && !ibv_destroy_srq(s),
	      "V-SRQ-15: srq_limit 2 at creation arms the limit: query_srq says %u",
	      a.srq_limit);

	ia = (struct ibv_srq_init_attr){ .attr = { SRQ_WR, 1, 0 } };
	srq = ibv_create_srq(srq_pd, &ia);
	if (!check(srq && ia.attr.max_wr >= SRQ_WR,
		   "V-SRQ-18: create an SRQ of %d WRs, 1 SGE (got %u WRs)",
		   SRQ_WR, ia.attr.max_wr))
		exit(1);
	memset(&a, 0xff, sizeof(a));
	if (ibv_query_srq(srq, &a))
		die("ibv_query_srq");
	check(a.max_wr == SRQ_WR && a.max_sge == 1 &&
	      a.srq_limit == 0,
	      "V-SRQ-18: query_srq: max_wr %u, max_sge %u, srq_limit %u (disarmed)",
	      a.max_wr, a.max_sge, a.srq_limit);
	a = (struct ibv_srq_attr){ .max_wr = 2 * SRQ_WR };
	check(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR) == EINVAL,
	      "V-SRQ-13: resizing (IBV_SRQ_MAX_WR) refused with EINVAL: not supported");
	check(arm(SRQ_WR + 1) == EINVAL && srq_limit() == 0,
	      "V-SRQ-16: arming limit %d on %d WRs refused with EINVAL", SRQ_WR + 1,
	      SRQ_WR);
	{
		struct ibv_sge sge[2] = { { (uintptr_t)slots, 8, slots_mr->lkey },
					  { (uintptr_t)slots + 8, 8, slots_mr->lkey } };
		struct ibv_recv_wr wr = { .wr_id = 99, .sg_list = sge,
					  .num_sge = 2 }, *bad = NULL;

		check(ibv_post_srq_recv(srq, &wr, &bad) == EINVAL && bad == &wr,
		      "post_srq_recv with 2 SGEs on a 1-SGE SRQ refused with EINVAL, bad_wr set");
	}
	check(!post_srq(0, 8), "post 8 WQEs on the SRQ");
	check(!arm(4) && srq_limit() == 4,
	      "V-SRQ-15: arm limit 4; query_srq reports srq_limit 4");
}

static int server(const char *addr, const char *port)
{
	struct rdma_conn_param cp = kc_param(1, 1, NULL, 0);
	struct rdma_cm_id *lid, *ids[NQP] = { NULL };
	struct kp_peer peers[NQP];
	struct ctl *c = calloc(1, sizeof(*c));
	struct ibv_mr *cmr;
	struct ibv_wc wc;
	int est = 0, req = 0;

	slots = calloc(SLOTS, MSG_MAX);
	if (!slots || !c)
		die("calloc");
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	/* Listening comes after the SRQ checks, so no MPA Request waits. */
	lid = kc_bind(ch, addr, port);
	if (!lid)
		die("bind to %s:%s", addr, port);
	setup_verbs(lid->verbs);
	/* The SRQ and its buffers on a PD of their own (V-SRQ-9). */
	srq_pd = ibv_alloc_pd(ctx);
	if (!srq_pd)
		die("ibv_alloc_pd");
	slots_mr = reg(srq_pd, slots, SLOTS * MSG_MAX);
	cmr = reg(pd, c, sizeof(*c));
	server_srq_checks();
	if (rdma_listen(lid, NQP))
		die("rdma_listen");

	/* The client connects its QPs in order, each after the last is up. */
	while (est < NQP) {
		struct rdma_cm_event *ev;

		if (rdma_get_cm_event(ch, &ev))
			die("rdma_get_cm_event");
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && req < NQP) {
			struct kp_caps qc = {
				.pd = pd, .scq = scq, .rcq = rcq, .srq = srq,
				.send_wr = 8, .send_sge = 1,
				/* ignored on an SRQ (V-SRQ-4) */
				.recv_wr = 100000, .recv_sge = 100,
			};
			int i = req++;

			ids[i] = ev->id;
			if (!check(!kp_open(&peers[i], ev->id, &qc),
				   "V-SRQ-4: QP %d on the SRQ, RQ sizes 100000 x 100 ignored",
				   i))
				exit(kt_end());
			qps[i] = peers[i].qp;
			if (rdma_accept(ev->id, &cp))
				die("rdma_accept");
		} else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			est++;
		} else {
			bail("unexpected %s", rdma_event_str(ev->event));
		}
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(lid);
	{
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr a;

		if (ibv_query_qp(qps[0], &a, IBV_QP_CAP, &init))
			die("ibv_query_qp");
		check(init.srq == srq && a.cap.max_recv_wr == 0 &&
		      a.cap.max_recv_sge == 0,
		      "V-SRQ-4: query_qp names the SRQ and reports no RQ (max_recv_wr %u)",
		      a.cap.max_recv_wr);
	}
	{
		struct ibv_sge sge = { (uintptr_t)slots, 8, slots_mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 98, .sg_list = &sge,
					  .num_sge = 1 }, *bad = NULL;

		check(ibv_post_recv(qps[1], &wr, &bad) == EINVAL && bad == &wr,
		      "V-SRQ-5: post_recv on a QP on an SRQ fails with EINVAL, bad_wr set");
	}
	check(ibv_destroy_srq(srq) == EBUSY,
	      "V-SRQ-14: destroy_srq while QPs use it fails with EBUSY");

	/* 8 WQEs posted, limit 4: 4 messages leave 4, not fewer. */
	check(exchange(c, cmr, 4, 0, 7),
	      "V-SRQ-3/6/9: 4 messages over 3 QPs land in WQEs of an SRQ on another PD, data and qp_num right");
	check(no_limit_event() && srq_limit() == 4,
	      "V-SRQ-15: 4 WQEs left of limit 4: no limit event, still armed");
	check(exchange(c, cmr, 1, 4, 7), "a 5th message is received");
	check(wait_async(IBV_EVENT_SRQ_LIMIT_REACHED, NULL),
	      "V-SRQ-15: 3 WQEs left of limit 4: IBV_EVENT_SRQ_LIMIT_REACHED on the SRQ");
	check(srq_limit() == 0, "V-SRQ-15: the event disarmed the limit: query_srq says 0");
	check(exchange(c, cmr, 3, 5, 7) && no_limit_event(),
	      "V-SRQ-15: 3 more use up the SRQ; no second event (one-shot)");

	/* Re-arm; then one QP fails. */
	check(!post_srq(8, 6) && !arm(3) && srq_limit() == 3,
	      "post 6 more WQEs and re-arm limit 3");
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		check(!ibv_modify_qp(qps[0], &a, IBV_QP_STATE),
		      "move QP 0 to ERR");
	}
	check(wait_async(IBV_EVENT_QP_LAST_WQE_REACHED, qps[0]),
	      "IBV_EVENT_QP_LAST_WQE_REACHED for QP 0");
	check(ibv_poll_cq(rcq, 1, &wc) == 0,
	      "V-FL-6: no receive completes: the SRQ's WQEs are not flushed with QP 0");
	check(exchange(c, cmr, 3, 8, 6) && no_limit_event(),
	      "V-SRQ-11/V-FL-6: QPs 1 and 2 receive 3 messages in those WQEs; 3 left, no event");
	check(exchange(c, cmr, 1, 11, 6) &&
	      wait_async(IBV_EVENT_SRQ_LIMIT_REACHED, NULL),
	      "V-SRQ-15: the re-armed limit fires when 2 of 3 are left");

	/* An empty SRQ is an empty receive queue, for one QP only. */
	check(exchange(c, cmr, 2, 12, 4) && no_limit_event(),
	      "QP 2 uses up the 2 WQEs left; no event (disarmed)");
	send_ctl(c, cmr, CTL_SEND_BLIND, 1, 14, 2);
	check(wait_async(IBV_EVENT_QP_FATAL, qps[1]) &&
	      wait_async(IBV_EVENT_QP_LAST_WQE_REACHED, qps[1]),
	      "V-SRQ-8: a Send to the empty SRQ on QP 1 fails QP 1 (Terminate): QP_FATAL, LAST_WQE_REACHED");
	check(ibv_poll_cq(rcq, 1, &wc) == 0, "nothing completes for it");
	check(!post_srq(14, 1) && exchange(c, cmr, 1, 15, 4),
	      "V-SRQ-11: QP 2 still receives through the SRQ after QP 1 failed");
	check(!post_srq(15, 2), "post 2 more WQEs");

	send_ctl(c, cmr, CTL_DONE, orders, 0, 0);
	wait_disconnected(ids);
	check(wait_async(IBV_EVENT_QP_LAST_WQE_REACHED, qps[2]),
	      "QP 2 reports IBV_EVENT_QP_LAST_WQE_REACHED as it disconnects");
	check(no_limit_event() && ibv_poll_cq(rcq, 1, &wc) == 0,
	      "V-FL-6: the 2 WQEs left are not flushed by the disconnects");
	for (int i = 0; i < NQP; i++) {
		kp_close(&peers[i]);
		rdma_destroy_id(ids[i]);
	}
	check(ibv_destroy_srq(srq) == 0,
	      "V-SRQ-14: destroy_srq with WQEs still posted, once no QP uses it");
	ibv_dereg_mr(slots_mr);
	ibv_dereg_mr(cmr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	ibv_dealloc_pd(pd);
	ibv_dealloc_pd(srq_pd);
	rdma_destroy_event_channel(ch);
	return kt_end();
}

/* ---- client ---- */

static int client(const char *addr, const char *port)
{
	struct rdma_conn_param cp = kc_param(1, 1, NULL, 0);
	struct kp_caps qc = {
		.send_wr = 32, .recv_wr = 4, .send_sge = 1, .recv_sge = 1,
		.cqe = 64, .two_cqs = true,
	};
	struct rdma_cm_id *ids[NQP];
	struct kp_peer peers[NQP];
	struct ctl *ctls = calloc(4, sizeof(*ctls));
	struct msg *msgs = calloc(SRQ_WR * 4, sizeof(*msgs));
	struct ibv_mr *cmr = NULL, *mmr = NULL;
	uint32_t given = 0;

	if (!ctls || !msgs)
		die("calloc");
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	for (int i = 0; i < NQP; i++) {
		ids[i] = kc_resolve_or_die(ch, addr, port);
		/* The first QP's PD and CQs are the others' too. */
		kp_open_or_die(&peers[i], ids[i], &qc);
		if (!i) {
			ctx = peers[0].ctx;
			pd = peers[0].pd;
			scq = peers[0].scq;
			rcq = peers[0].rcq;
			qc.pd = pd;
			qc.scq = scq;
			qc.rcq = rcq;
			cmr = reg(pd, ctls, 4 * sizeof(*ctls));
			mmr = reg(pd, msgs, SRQ_WR * 4 * sizeof(*msgs));
		}
		/* The server's orders come on the last QP. */
		for (int k = 0; i == NQP - 1 && k < 4; k++)
			if (kp_post_recv(peers[i].qp, k, &ctls[k],
					 sizeof(*ctls), cmr->lkey))
				die("ibv_post_recv");
		kc_connect_or_die(ch, ids[i], &cp, NULL, 0);
	}

	for (;;) {
		struct ibv_wc wc, swc[SRQ_WR];
		struct ctl c;
		int on[NQP], non = 0;

		if (poll_n(rcq, &wc, 1) != 1 || wc.status != IBV_WC_SUCCESS)
			bail("no order from the server");
		c = ctls[wc.wr_id];
		if (kp_post_recv(ids[NQP - 1]->qp, wc.wr_id, &ctls[wc.wr_id],
				 sizeof(*ctls), cmr->lkey))
			die("ibv_post_recv");
		if (c.cmd == CTL_DONE) {
			given = c.count;
			break;
		}
		orders++;
		for (int q = 0; q < NQP; q++)
			if (c.mask & 1u << q)
				on[non++] = q;
		if (!non || c.count > SRQ_WR || c.first + c.count > SRQ_WR * 4)
			bail("bad order");
		for (uint32_t k = 0; k < c.count; k++) {
			uint32_t seq = c.first + k;
			struct msg *m = &msgs[seq];

			m->magic = MSG_MAGIC;
			m->qp = on[k % non];
			m->seq = seq;
			m->len = msg_len(seq);
			for (uint32_t j = 0; j < m->len; j++)
				m->data[j] = pattern(seq, j);
			post_send(ids[m->qp]->qp, mmr, m, 16 + m->len, seq);
		}
		if (poll_n(scq, swc, c.count) != (int)c.count)
			bail("sends did not complete");
		for (uint32_t k = 0; k < c.count && c.cmd == CTL_SEND; k++)
			if (swc[k].status != IBV_WC_SUCCESS)
				bail("send %s", ibv_wc_status_str(swc[k].status));
	}
	for (int i = 0; i < NQP; i++)
		rdma_disconnect(ids[i]);	/* QP 0 may be gone already */
	wait_disconnected(ids);
	ibv_dereg_mr(cmr);
	ibv_dereg_mr(mmr);
	/* The first QP's objects go last: the others use them. */
	for (int i = NQP - 1; i >= 0; i--) {
		kp_close(&peers[i]);
		rdma_destroy_id(ids[i]);
	}
	rdma_destroy_event_channel(ch);
	check(orders && orders == given,
	      "sent every message of the server's orders: %u orders, as many as it gave (%u)",
	      orders, given);
	return kt_end();
}

int main(int argc, char **argv)
{
	kt_start();
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: see the top of kiwi_srq.c\n");
	return 2;
}
