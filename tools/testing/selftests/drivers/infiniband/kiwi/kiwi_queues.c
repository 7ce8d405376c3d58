// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_queues: CQ and QP semantics through libibverbs and libkiwi, before
 * any connection: the QP state machine a consumer may drive, flushing of
 * posted work requests in order through the shared rings, completion
 * notification, CQ overflow, and refusal of bad input. Prints TAP.
 *
 *   kiwi_queues DEVICE
 *   kiwi_queues server|client ADDR PORT
 *
 * server/client: completion notification on a connected QP (V-NOT-5,
 * V-NOT-7, V-NOT-8); the client prints TAP.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

/*
 * A QP on @pd and the CQs given, in @p, with @wr WRs and @sge SGEs each
 * way and @inl bytes inline; NULL, errno set, when refused.
 */
static struct ibv_qp *make_qp(struct kp_peer *p, struct ibv_pd *pd,
			      struct ibv_cq *scq, struct ibv_cq *rcq, int wr,
			      int sge, int inl)
{
	const struct kp_caps caps = {
		.pd = pd, .scq = scq, .rcq = rcq,
		.send_wr = wr, .recv_wr = wr, .send_sge = sge,
		.recv_sge = sge, .inline_data = inl,
	};

	return kp_open(p, NULL, &caps) ? NULL : p->qp;
}

/* Poll up to @want completions, waiting at most about a second. */
static int drain(struct ibv_cq *cq, struct ibv_wc *wc, int want)
{
	return kp_poll(cq, wc, want, 1000);
}

/* Wait up to 2 s for @cq's completion event on @ch and acknowledge it. */
static bool cq_event(struct ibv_comp_channel *ch, struct ibv_cq *cq)
{
	return kp_cq_event(ch, cq, 2000);
}

/* Post @n receives, wr_id @first on, to @qp in ERR: each one is flushed. */
static int flush_recvs(struct ibv_qp *qp, int first, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_recv_wr rwr = { .wr_id = first + i };
		struct ibv_recv_wr *bad;

		if (ibv_post_recv(qp, &rwr, &bad))
			return 0;
	}
	return 1;
}

/* Poll exactly @n flushed receives, wr_id @first on, and then nothing. */
static int polled_in_order(struct ibv_cq *cq, int first, int n)
{
	struct ibv_wc wc;

	for (int i = 0; i < n; i++)
		if (ibv_poll_cq(cq, 1, &wc) != 1 ||
		    wc.wr_id != (uint64_t)(first + i) ||
		    wc.status != IBV_WC_WR_FLUSH_ERR || wc.opcode != IBV_WC_RECV)
			return 0;
	return ibv_poll_cq(cq, 1, &wc) == 0;
}

/*
 * V-CQ-7: ibv_resize_cq of a CQ holding completions (libkiwi moves the
 * ring): grow, shrink, refusal to shrink below what is queued, order kept,
 * the arm kept, cqe reporting the entries there are.
 */
static void resize_cq(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(ctx, 4, NULL, ch, 0) : NULL;
	struct kp_peer p = { .qp = NULL };
	struct ibv_qp *qp = cq ? make_qp(&p, pd, cq, cq, 64, 1, 0) : NULL;
	struct ibv_device_attr attr;
	int ret, ok;

	check(qp && cq->cqe == 4, "resize: a 4-entry CQ and a QP on it");
	if (!qp)
		goto out;
	kp_modify(qp, IBV_QPS_INIT);
	kp_modify(qp, IBV_QPS_ERR);
	check(flush_recvs(qp, 0, 4), "resize: 4 flushed receives fill the CQ");

	ret = ibv_resize_cq(cq, 3);
	check(ret == EINVAL && cq->cqe == 4,
	      "V-CQ-7 shrinking to 3 below the 4 queued refused with EINVAL, cqe stays 4 (%d, %d)",
	      ret, cq->cqe);
	ret = ibv_resize_cq(cq, 100);
	check(!ret && cq->cqe == 128,
	      "V-CQ-7 growing the full CQ to 100 gives 128 entries (%d, %d)",
	      ret, cq->cqe);
	check(flush_recvs(qp, 4, 60), "resize: 60 more flushed receives fit");
	check(polled_in_order(cq, 0, 64),
	      "V-CQ-7 all 64 completions poll in order, none lost");

	check(flush_recvs(qp, 64, 3) && !ibv_resize_cq(cq, 3) && cq->cqe == 4,
	      "V-CQ-7 shrinking to 3 with 3 queued gives 4 entries");
	check(!ibv_req_notify_cq(cq, 0), "resize: arm the CQ");
	check(!ibv_resize_cq(cq, 8) && cq->cqe == 8 && polled_in_order(cq, 64, 3),
	      "V-CQ-7 grow to 8 again: the 3 completions poll in order");
	ok = flush_recvs(qp, 67, 1) && kp_cq_event(ch, cq, 5000);
	check(ok, "the arm made before the resizes delivers a completion event");
	check(polled_in_order(cq, 67, 1), "resize: and its completion polls");

	check(!ibv_query_device(ctx, &attr), "resize: query_device");
	ret = ibv_resize_cq(cq, attr.max_cqe + 1);
	check(ret == EINVAL && cq->cqe == 8,
	      "resize to max_cqe + 1 (%d) refused with EINVAL (%d)",
	      attr.max_cqe + 1, ret);
	ret = ibv_resize_cq(cq, attr.max_cqe);
	check(!ret && cq->cqe == attr.max_cqe, "resize to max_cqe (%d) works (%d)",
	      attr.max_cqe, ret);
	check(!ibv_resize_cq(cq, 1) && cq->cqe == 1 && flush_recvs(qp, 68, 1) &&
	      polled_in_order(cq, 68, 1),
	      "resize an empty CQ to 1 entry, which still completes");
out:
	kp_close(&p);
	if (cq)
		ibv_destroy_cq(cq);
	if (ch)
		ibv_destroy_comp_channel(ch);
}

/* ---- connected: completion notification under traffic ---- */

#define NT_SENDS	4000	/* V-NOT-8: Sends from client to server */
#define NT_BATCH	32	/* the server returns a credit per this many */
#define NT_RQ		128	/* the server's receive queue */
#define NT_MSG		64
#define NT_BUF		(1024 * 1024)

static struct rdma_event_channel *nt_ch;

/* Each side's QP: sends and receives on one CQ, and a buffer. */
#define NT_CAPS .send_wr = 64, .send_sge = 1, .recv_sge = 1,		\
		.inline_data = NT_MSG, .buf_len = NT_BUF

static int nt_recv(struct ibv_qp *qp, struct ibv_mr *mr, uint64_t i)
{
	struct ibv_sge sge = { (uintptr_t)mr->addr + i * NT_MSG, NT_MSG,
			       mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int nt_send(struct ibv_qp *qp, uint64_t id, enum ibv_wr_opcode op,
		   uint64_t raddr, uint32_t rkey)
{
	static const char msg[NT_MSG] = "kiwi_queues";
	struct ibv_sge sge = { (uintptr_t)msg, sizeof(msg), 0 };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED |
						IBV_SEND_INLINE };
	struct ibv_send_wr *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/*
 * The server: receives NT_SENDS + 2 Sends (reposting each receive, then
 * sending a credit after every NT_BATCH), offers a buffer for Writes, and
 * exits 0 when all came and the client disconnected.
 */
static int nt_server(const char *addr, const char *port)
{
	const struct kp_caps caps = {
		NT_CAPS, .recv_wr = NT_RQ, .cqe = 2 * NT_RQ,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	};
	struct rdma_conn_param cp;
	struct rdma_cm_id *lid, *id;
	struct ibv_wc wc[16];
	int got = 0, sent = 0;
	struct kp_peer me;
	struct ibv_qp *qp;
	uint64_t info[2];

	nt_ch = rdma_create_event_channel();
	if (!nt_ch)
		die("rdma_create_event_channel");
	lid = kc_listen_or_die(nt_ch, addr, port, 1);
	note("server: listening");
	id = kc_request(nt_ch, NULL, 0);
	kp_open_or_die(&me, id, &caps);
	qp = me.qp;
	for (int i = 0; i < NT_RQ; i++)
		if (nt_recv(qp, me.mr, i))
			die("ibv_post_recv");
	info[0] = (uintptr_t)me.buf + NT_BUF / 2;
	info[1] = me.mr->rkey;
	cp = kc_param(1, 0, info, sizeof(info));
	kc_accept_or_die(nt_ch, id, &cp);
	/* The two Sends of the V-NOT-7 check come first, uncredited. */
	while (got < NT_SENDS + 2) {
		int r = ibv_poll_cq(me.scq, 16, wc);

		if (r < 0)
			die("ibv_poll_cq");
		for (int i = 0; i < r; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				bail("server: completion status %d",
				     wc[i].status);
			if (wc[i].opcode != IBV_WC_RECV)
				continue;
			if (nt_recv(qp, me.mr, wc[i].wr_id))
				die("ibv_post_recv");
			if (++got > 2 && (got - 2) % NT_BATCH == 0 &&
			    nt_send(qp, ++sent, IBV_WR_SEND, 0, 0))
				die("ibv_post_send");
		}
		if (!r)
			poll(NULL, 0, 1);
	}
	expect_ack(nt_ch, RDMA_CM_EVENT_DISCONNECTED);
	check(got == NT_SENDS + 2 && sent == NT_SENDS / NT_BATCH,
	      "server: %d Sends received (%d), %d credits sent (%d)", got,
	      NT_SENDS + 2, sent, NT_SENDS / NT_BATCH);
	kp_close(&me);
	rdma_destroy_id(id);
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(nt_ch);
	return kt_end();
}

/*
 * V-NOT-5 and V-NOT-7 on the client's CQ, with signalled RDMA Writes
 * (local SQ completions, not solicited) and two Sends.
 */
static void nt_arms(struct ibv_qp *qp, struct ibv_comp_channel *ch,
		    uint64_t raddr, uint32_t rkey)
{
	struct ibv_cq *cq = qp->send_cq;
	struct ibv_wc wc[4];
	int ok;

	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	/* V-NOT-5: the CQ holds a completion when it is armed. */
	ok = !ibv_req_notify_cq(cq, 0) &&
	     !nt_send(qp, 1, IBV_WR_RDMA_WRITE, raddr, rkey) &&
	     kp_cq_event(ch, cq, 5000);
	check(ok, "arm, a signalled Write: its completion raises an event");
	check(!ibv_req_notify_cq(cq, 0) && !kp_cq_event(ch, cq, 1000),
	      "V-NOT-5 arming a CQ that holds a completion raises no event");
	ok = !nt_send(qp, 2, IBV_WR_RDMA_WRITE, raddr, rkey) &&
	     kp_cq_event(ch, cq, 5000);
	check(ok, "V-NOT-5 the next completion added raises the event");
	check(drain(cq, wc, 3) == 2 && wc[0].wr_id == 1 && wc[1].wr_id == 2 &&
	      wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS,
	      "V-NOT-5 both completions poll, in order");

	/* V-NOT-7: "next", then "solicited only": the next CQE fires, once. */
	check(!ibv_req_notify_cq(cq, 0) && !ibv_req_notify_cq(cq, 1),
	      "V-NOT-7 arm for the next completion, then for solicited only");
	ok = !nt_send(qp, 3, IBV_WR_SEND, 0, 0) && kp_cq_event(ch, cq, 5000);
	check(ok, "V-NOT-7 an unsolicited completion raises the event of the earlier \"next\" arm");
	ok = !nt_send(qp, 4, IBV_WR_SEND, 0, 0) && !kp_cq_event(ch, cq, 1000);
	check(ok, "V-NOT-7 ... once: the next completion raises no second event");
	check(drain(cq, wc, 3) == 2 && wc[0].wr_id == 3 && wc[1].wr_id == 4 &&
	      wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS,
	      "V-NOT-7 both Sends completed");
}

/*
 * Poll @cq until it is empty: count completions in *@done and credits in
 * *@credits, reposting their receives. Return: how many, or -1 on a
 * failed poll, a failed completion or a failed repost.
 */
static int nt_poll_empty(struct ibv_cq *cq, struct ibv_qp *qp,
			 struct ibv_mr *mr, int *done, int *credits)
{
	struct ibv_wc wc[16];
	int r, total = 0;

	while ((r = ibv_poll_cq(cq, 16, wc)) > 0) {
		for (int i = 0; i < r; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				return -1;
			if (wc[i].opcode != IBV_WC_RECV)
				continue;
			(*credits)++;
			if (nt_recv(qp, mr, wc[i].wr_id))
				return -1;
		}
		total += r;
		*done += r;
	}
	return r < 0 ? -1 : total;
}

/*
 * V-NOT-8: poll until empty, arm, poll again, then wait for the event:
 * under NT_SENDS Sends and the server's credits on one CQ, every
 * completion must come, and no wait may hang (60 s without the event
 * counts as a hang).
 */
static void nt_loop(struct ibv_qp *qp, struct ibv_comp_channel *ch,
		    struct ibv_mr *mr)
{
	struct ibv_cq *cq = qp->send_cq;
	int credits = 0, sent = 0, done = 0, events = 0, bad = 0, hung = 0;
	const int want = NT_SENDS + NT_SENDS / NT_BATCH;

	while (done < want && !bad) {
		int r;

		/* Never more than the server can take, nor the SQ hold. */
		while (!bad && sent < NT_SENDS &&
		       sent < NT_RQ + credits * NT_BATCH &&
		       sent - (done - credits) < 32)
			bad = nt_send(qp, 1000 + sent++, IBV_WR_SEND, 0, 0);
		r = nt_poll_empty(cq, qp, mr, &done, &credits);
		bad |= r < 0;
		if (r)
			continue;	/* progress, or a failure */
		bad = ibv_req_notify_cq(cq, 0);
		r = nt_poll_empty(cq, qp, mr, &done, &credits);
		bad |= r < 0;
		if (r || bad)
			continue;	/* its event comes later: harmless */
		/* Empty and armed: the next completion must raise an event. */
		if (!kp_cq_event(ch, cq, 60000)) {
			hung = 1;
			break;
		}
		events++;
	}
	printf("# %d completions (%d Sends, %d credits), %d events waited for\n",
	       done, sent, credits, events);
	check(!hung && !bad && done == want && sent == NT_SENDS,
	      "V-NOT-8 poll, arm, poll again, wait: all %d completions of %d Sends and %d credits came, no wait hung",
	      want, NT_SENDS, NT_SENDS / NT_BATCH);
}

static int nt_client(const char *addr, const char *port)
{
	struct kp_caps caps = {
		NT_CAPS, .recv_wr = 16, .cqe = 256,
		.access = IBV_ACCESS_LOCAL_WRITE,
	};
	struct rdma_conn_param cp = kc_param(0, 1, NULL, 0);
	struct ibv_comp_channel *ch;
	struct rdma_cm_id *id;
	struct kp_peer me;
	uint64_t info[2];
	bool ok;

	nt_ch = rdma_create_event_channel();
	if (!nt_ch)
		die("rdma_create_event_channel");
	id = kc_resolve_or_die(nt_ch, addr, port);
	ch = ibv_create_comp_channel(id->verbs);
	caps.chan = ch;
	ok = ch && !kp_open(&me, id, &caps);
	check(ok, "a QP whose sends and receives share a CQ with a channel");
	if (!ok)
		return kt_end();
	for (int i = 0; i < 16; i++)
		if (nt_recv(me.qp, me.mr, i))
			die("ibv_post_recv");
	kc_connect_or_die(nt_ch, id, &cp, info, sizeof(info));

	nt_arms(me.qp, ch, info[0], info[1]);
	nt_loop(me.qp, ch, me.mr);

	if (kc_disconnect(nt_ch, id, -1))
		die("disconnect");
	rdma_destroy_qp(id);
	/* Events of the flushed receives may be pending: ack before destroy. */
	while (kp_cq_event(ch, me.scq, 100))
		;
	check(!kp_close(&me) && !ibv_destroy_comp_channel(ch),
	      "destroy the CQ and its channel");
	rdma_destroy_id(id);
	rdma_destroy_event_channel(nt_ch);
	return kt_end();
}

int main(int argc, char **argv)
{
	struct ibv_wc wc[64];
	struct ibv_comp_channel *ch;
	struct ibv_context *ctx;
	struct ibv_cq *cq, *small, *big;
	struct ibv_device_attr dattr = {};
	struct kp_peer p, p2;
	struct ibv_qp *qp, *qp2;
	struct ibv_pd *pd;
	int i, ok, got;

	kt_start();
	if (argc == 4 && !strcmp(argv[1], "server"))
		return nt_server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return nt_client(argv[2], argv[3]);
	if (argc != 2) {
		fprintf(stderr, "usage: %s DEVICE | server|client ADDR PORT\n",
			argv[0]);
		return 2;
	}
	ctx = open_dev(argv[1]);
	check(ctx != NULL, "open %s", argv[1]);
	if (!ctx)
		goto out;
	pd = ibv_alloc_pd(ctx);
	ch = ibv_create_comp_channel(ctx);
	cq = ibv_create_cq(ctx, 100, NULL, ch, 0);
	check(pd && ch && cq, "alloc PD, completion channel and a 100-entry CQ");
	if (!pd || !ch || !cq)
		goto out;
	check(cq->cqe >= 100, "CQ holds at least what was asked (%d)", cq->cqe);

	/* Bad input is refused and creates nothing. */
	check(!ibv_query_device(ctx, &dattr), "ibv_query_device");
	errno = 0;
	big = ibv_create_cq(ctx, dattr.max_cqe + 1, NULL, NULL, 0);
	check(!big && errno == EINVAL, "CQ of max_cqe + 1 (%d) entries refused with EINVAL",
	      dattr.max_cqe + 1);
	errno = 0;
	big = ibv_create_cq(ctx, 8, NULL, NULL, 1 << 20);
	check(!big && errno == EINVAL, "CQ on a nonexistent completion vector refused");
	errno = 0;
	qp = make_qp(&p, pd, cq, cq, 8, 7, 0);
	check(!qp && errno == EINVAL, "QP with 7 SGEs (max 6) refused with EINVAL");
	errno = 0;
	qp = make_qp(&p, pd, cq, cq, 8, 2, 97);
	check(!qp && errno == EINVAL, "QP with 97 bytes inline (max 96) refused");
	errno = 0;
	qp = make_qp(&p, pd, cq, cq, 16385, 2, 0);
	check(!qp && errno == EINVAL, "QP with 16385 WRs (max 16384) refused");
	/* Inline data rounds up to what the send SGEs would cover. */
	qp = make_qp(&p, pd, cq, cq, 8, 3, 0);
	{
		struct ibv_qp_init_attr init = {};
		struct ibv_qp_attr a;

		check(qp && !ibv_query_qp(qp, &a, IBV_QP_CAP, &init) &&
		      init.cap.max_inline_data == 48 && a.cap.max_inline_data == 48,
		      "QP with 3 SGEs and no inline data asked for takes 48 B inline (%u)",
		      init.cap.max_inline_data);
	}
	if (qp)
		kp_close(&p);

	qp = make_qp(&p, pd, cq, cq, 8, 2, 64);
	check(qp != NULL, "create RC QP (8 WRs, 2 SGEs, 64 B inline)");
	if (!qp)
		goto out;
	/* The iWARP verbs' Idle, reported as hardware iWARP reports it. */
	check(kp_qp_state(qp) == IBV_QPS_INIT, "new QP reports INIT (Idle)");

	/* State machine before a connection. */
	{
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_INIT,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ,
		};
		struct ibv_qp_init_attr init;

		check(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS),
		      "INIT -> INIT with access flags");
		memset(&a, 0, sizeof(a));
		ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &init);
		check(a.qp_state == IBV_QPS_INIT &&
		      a.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ),
		      "query_qp reports INIT and the access flags (V-QP state after INIT)");
		check(init.cap.max_send_wr >= 8 && init.cap.max_send_sge == 2 &&
		      init.cap.max_inline_data == 64,
		      "query_qp reports the capabilities");
	}
	check(kp_modify(qp, IBV_QPS_RTR) == 0 && kp_qp_state(qp) == IBV_QPS_RTR,
	      "INIT -> RTR");
	check(kp_modify(qp, IBV_QPS_RTS) == EINVAL && kp_qp_state(qp) == IBV_QPS_RTR,
	      "RTR -> RTS without a connection refused with EINVAL, state kept");
	check(kp_modify(qp, IBV_QPS_SQD) == EINVAL, "RTR -> SQD refused");
	check(kp_modify(qp, IBV_QPS_INIT) == EINVAL, "RTR -> INIT refused");
	{
		struct ibv_send_wr swr = { .wr_id = 1, .opcode = IBV_WR_SEND };
		struct ibv_send_wr *bad = NULL;

		check(ibv_post_send(qp, &swr, &bad) == EINVAL && bad == &swr,
		      "post_send in RTR refused with EINVAL, bad_wr set");
	}

	/* Receives posted in RTR are flushed, in order, when the QP fails. */
	for (i = 0; i < 3; i++) {
		struct ibv_recv_wr rwr = { .wr_id = 100 + i };
		struct ibv_recv_wr *bad;

		if (ibv_post_recv(qp, &rwr, &bad))
			break;
	}
	check(i == 3, "post 3 receives in RTR");
	check(ibv_poll_cq(cq, 8, wc) == 0, "nothing completes before an error");
	check(ibv_req_notify_cq(cq, 0) == 0, "arm the CQ");
	check(kp_modify(qp, IBV_QPS_ERR) == 0 && kp_qp_state(qp) == IBV_QPS_ERR,
	      "RTR -> ERR");
	got = drain(cq, wc, 3);
	ok = got == 3;
	for (i = 0; ok && i < 3; i++)
		ok = wc[i].wr_id == (uint64_t)(100 + i) &&
		     wc[i].status == IBV_WC_WR_FLUSH_ERR &&
		     wc[i].opcode == IBV_WC_RECV &&
		     wc[i].qp_num == qp->qp_num;
	check(ok, "3 receives flushed in order: WR_FLUSH_ERR, RECV, right QP (got %d)",
	      got);
	check(cq_event(ch, cq), "the armed CQ delivered a completion event");

	/* Sends posted in ERR are flushed, signalled or not, in order. */
	{
		struct ibv_send_wr swr[4];
		struct ibv_send_wr *bad = NULL;
		char buf[16] = "inline payload";
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 15 };

		memset(swr, 0, sizeof(swr));
		for (i = 0; i < 4; i++) {
			swr[i].wr_id = 200 + i;
			swr[i].next = i < 3 ? &swr[i + 1] : NULL;
		}
		swr[0].opcode = IBV_WR_SEND;
		swr[0].send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		swr[0].sg_list = &sge;
		swr[0].num_sge = 1;
		swr[1].opcode = IBV_WR_RDMA_WRITE;
		swr[2].opcode = IBV_WR_RDMA_READ;
		swr[2].send_flags = IBV_SEND_SIGNALED;
		swr[3].opcode = IBV_WR_SEND_WITH_INV;
		check(ibv_req_notify_cq(cq, 1) == 0,
		      "arm the CQ for solicited completions only");
		check(ibv_post_send(qp, swr, &bad) == 0, "post 4 sends in ERR");
		got = drain(cq, wc, 4);
		ok = got == 4;
		for (i = 0; ok && i < 4; i++)
			ok = wc[i].wr_id == (uint64_t)(200 + i) &&
			     wc[i].status == IBV_WC_WR_FLUSH_ERR;
		check(ok, "4 sends flushed in order, unsignalled ones too (got %d)",
		      got);
		check(got == 4 && wc[1].opcode == IBV_WC_RDMA_WRITE &&
		      wc[2].opcode == IBV_WC_RDMA_READ &&
		      wc[3].opcode == IBV_WC_SEND,
		      "flushed completions carry each WR's opcode");
		/* V-NOT-6: error completions, flushes too, fire it. */
		check(cq_event(ch, cq),
		      "V-NOT-6 flushed (error) completions fire a solicited-only arm");

		swr[0].next = NULL;
		swr[0].opcode = IBV_WR_TSO;
		swr[0].send_flags = 0;
		bad = NULL;
		check(ibv_post_send(qp, swr, &bad) == EINVAL && bad == swr,
		      "an unsupported opcode (TSO) is refused with EINVAL");
		swr[0].opcode = IBV_WR_SEND;
		swr[0].num_sge = 3;
		check(ibv_post_send(qp, swr, &bad) == EINVAL && bad == swr,
		      "3 SGEs on a 2-SGE QP refused with EINVAL");

		/* V-POST-1: a list stops at its first bad WR, keeping the ones before. */
		for (i = 0; i < 4; i++) {
			swr[i].opcode = IBV_WR_SEND;
			swr[i].send_flags = IBV_SEND_SIGNALED;
			swr[i].num_sge = i == 2 ? 3 : 0;
			swr[i].next = i < 3 ? &swr[i + 1] : NULL;
		}
		bad = NULL;
		check(ibv_post_send(qp, swr, &bad) == EINVAL && bad == &swr[2],
		      "V-POST-1 post [ok, ok, 3 SGEs, ok]: EINVAL, bad_wr is the third");
		got = drain(cq, wc, 4);
		check(got == 2 && wc[0].wr_id == 200 && wc[1].wr_id == 201 &&
		      wc[0].status == IBV_WC_WR_FLUSH_ERR,
		      "V-POST-1 exactly the two WRs before it were queued (flushed: %d)",
		      got);
	}
	check(ibv_poll_cq(cq, 8, wc) == 0, "refused WRs left no completion");

	/* ERR -> RESET -> INIT again. */
	check(kp_modify(qp, IBV_QPS_RESET) == 0 && kp_qp_state(qp) == IBV_QPS_RESET,
	      "ERR -> RESET");
	{
		struct ibv_recv_wr rwr = { .wr_id = 9 };
		struct ibv_recv_wr *bad = NULL;

		check(ibv_post_recv(qp, &rwr, &bad) == EINVAL && bad == &rwr,
		      "post_recv in RESET refused with EINVAL");
	}
	check(kp_modify(qp, IBV_QPS_INIT) == 0, "RESET -> INIT again");

	/* V-POST-4: a full receive queue refuses the next WR, overwriting nothing. */
	{
		struct ibv_recv_wr rwr = { .wr_id = 400 };
		struct ibv_recv_wr *bad = NULL;
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr a;
		uint32_t n = 0;

		ibv_query_qp(qp, &a, IBV_QP_CAP, &init);
		while (n < init.cap.max_recv_wr && !ibv_post_recv(qp, &rwr, &bad))
			n++;
		check(n == init.cap.max_recv_wr && n >= 8,
		      "post max_recv_wr (%u) receives in INIT", n);
		check(ibv_post_recv(qp, &rwr, &bad) == ENOMEM && bad == &rwr,
		      "V-POST-4 one more receive refused with ENOMEM, bad_wr set");
	}
	check(ibv_destroy_cq(cq) == EBUSY,
	      "V-CQ-8 destroy_cq while a QP uses it refused with EBUSY");

	/* CQ overflow: never overwritten, reported as IBV_EVENT_CQ_ERR. */
	small = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	qp2 = small ? make_qp(&p2, pd, small, small, 8, 1, 0) : NULL;
	check(small && small->cqe == 4 && qp2, "a 4-entry CQ and a QP on it");
	if (small && qp2) {
		struct ibv_async_event ev;

		kp_modify(qp2, IBV_QPS_INIT);
		for (i = 0; i < 6; i++) {
			struct ibv_recv_wr rwr = { .wr_id = 300 + i };
			struct ibv_recv_wr *bad;

			ibv_post_recv(qp2, &rwr, &bad);
		}
		kp_modify(qp2, IBV_QPS_ERR);
		got = drain(small, wc, 6);
		check(got == 4 && wc[0].wr_id == 300 && wc[3].wr_id == 303,
		      "a full CQ keeps its first 4 completions, none overwritten (got %d)",
		      got);
		ok = 0;
		while (!ok && kp_async(ctx, &ev, 2000))
			ok = ev.event_type == IBV_EVENT_CQ_ERR &&
			     ev.element.cq == small;
		check(ok, "CQ overflow raised IBV_EVENT_CQ_ERR");
		check(!kp_close(&p2), "destroy the QP on the broken CQ");
		check(!ibv_destroy_cq(small), "destroy the broken CQ");
	}

	resize_cq(ctx, pd);

	check(!kp_close(&p), "destroy QP");
	check(!ibv_destroy_cq(cq), "destroy CQ");
	check(!ibv_destroy_comp_channel(ch), "destroy completion channel");
	check(!ibv_dealloc_pd(pd), "dealloc PD");
	check(!ibv_close_device(ctx), "close device");
out:
	return kt_end();
}
