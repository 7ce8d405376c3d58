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

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "kiwi_poll.h"
#include "kiwi_tap.h"

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return -1;
	return attr.qp_state;
}

static int modify(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *scq,
			      struct ibv_cq *rcq, int wr, int sge, int inl)
{
	struct ibv_qp_init_attr a = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = wr, .max_recv_wr = wr,
			 .max_send_sge = sge, .max_recv_sge = sge,
			 .max_inline_data = inl },
	};

	return ibv_create_qp(pd, &a);
}

/* Poll up to @want completions, waiting at most about a second. */
static int drain(struct ibv_cq *cq, struct ibv_wc *wc, int want)
{
	return poll_cq_wait(cq, wc, want, 1000);
}

/* Wait up to 2 s for @cq's completion event on @ch and acknowledge it. */
static int cq_event(struct ibv_comp_channel *ch, struct ibv_cq *cq)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (poll(&p, 1, 2000) != 1 || ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
		return 0;
	ibv_ack_cq_events(ev_cq, 1);
	return ev_cq == cq;
}

static int wait_fd(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
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
	struct ibv_qp *qp = cq ? make_qp(pd, cq, cq, 64, 1, 0) : NULL;
	struct ibv_device_attr attr;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int ret, ok;

	check(qp && cq->cqe == 4, "resize: a 4-entry CQ and a QP on it");
	if (!qp)
		goto out;
	modify(qp, IBV_QPS_INIT);
	modify(qp, IBV_QPS_ERR);
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
	ok = flush_recvs(qp, 67, 1) && wait_fd(ch->fd, 5000) &&
	     !ibv_get_cq_event(ch, &ev_cq, &ev_ctx) && ev_cq == cq;
	check(ok, "the arm made before the resizes delivers a completion event");
	if (ok)
		ibv_ack_cq_events(cq, 1);
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
	if (qp)
		ibv_destroy_qp(qp);
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

static struct rdma_cm_event *nt_event(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(nt_ch, &ev) || ev->event != want) {
		printf("# wanted %s, got %s\n", rdma_event_str(want),
		       ev ? rdma_event_str(ev->event) : "nothing");
		exit(1);
	}
	return ev;
}

/* One QP for @id on @cq (sends and receives), with @nrecv receives. */
static struct ibv_qp *nt_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			    struct ibv_cq *cq, int nrecv)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 64, .max_recv_wr = nrecv,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = NT_MSG },
	};

	return rdma_create_qp(id, pd, &ia) ? NULL : id->qp;
}

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
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_port_space = RDMA_PS_TCP }, *ai;
	struct rdma_conn_param cp = { .responder_resources = 1 };
	struct rdma_cm_id *lid, *id;
	struct rdma_cm_event *ev;
	struct ibv_wc wc[16];
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_pd *pd;
	uint64_t info[2];
	int got = 0, sent = 0;
	char *buf;

	nt_ch = rdma_create_event_channel();
	if (!nt_ch || rdma_getaddrinfo(addr, port, &hints, &ai) ||
	    rdma_create_id(nt_ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, ai->ai_src_addr) || rdma_listen(lid, 1))
		return 1;
	rdma_freeaddrinfo(ai);
	printf("# server: listening\n");
	fflush(stdout);
	ev = nt_event(RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	rdma_ack_cm_event(ev);
	buf = calloc(1, NT_BUF);
	pd = ibv_alloc_pd(id->verbs);
	mr = pd && buf ? ibv_reg_mr(pd, buf, NT_BUF, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE) : NULL;
	cq = ibv_create_cq(id->verbs, 2 * NT_RQ, NULL, NULL, 0);
	qp = mr && cq ? nt_qp(id, pd, cq, NT_RQ) : NULL;
	if (!qp)
		return 1;
	for (int i = 0; i < NT_RQ; i++)
		if (nt_recv(qp, mr, i))
			return 1;
	info[0] = (uintptr_t)buf + NT_BUF / 2;
	info[1] = mr->rkey;
	cp.private_data = info;
	cp.private_data_len = sizeof(info);
	if (rdma_accept(id, &cp))
		return 1;
	rdma_ack_cm_event(nt_event(RDMA_CM_EVENT_ESTABLISHED));
	/* The two Sends of the V-NOT-7 check come first, uncredited. */
	while (got < NT_SENDS + 2) {
		int r = ibv_poll_cq(cq, 16, wc);

		if (r < 0)
			return 1;
		for (int i = 0; i < r; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				printf("# server: completion status %d\n",
				       wc[i].status);
				return 1;
			}
			if (wc[i].opcode != IBV_WC_RECV)
				continue;
			if (nt_recv(qp, mr, wc[i].wr_id))
				return 1;
			if (++got > 2 && (got - 2) % NT_BATCH == 0 &&
			    nt_send(qp, ++sent, IBV_WR_SEND, 0, 0))
				return 1;
		}
		if (!r)
			poll(NULL, 0, 1);
	}
	rdma_ack_cm_event(nt_event(RDMA_CM_EVENT_DISCONNECTED));
	printf("# server: %d Sends received, %d credits sent\n", got, sent);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_id(lid);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(nt_ch);
	return 0;
}

/* Whether an event for @cq comes on @ch within @ms; acknowledged. */
static int nt_event_in(struct ibv_comp_channel *ch, struct ibv_cq *cq, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (poll(&p, 1, ms) != 1 || ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
		return 0;
	ibv_ack_cq_events(ev_cq, 1);
	return ev_cq == cq;
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
	     nt_event_in(ch, cq, 5000);
	check(ok, "arm, a signalled Write: its completion raises an event");
	check(!ibv_req_notify_cq(cq, 0) && !nt_event_in(ch, cq, 1000),
	      "V-NOT-5 arming a CQ that holds a completion raises no event");
	ok = !nt_send(qp, 2, IBV_WR_RDMA_WRITE, raddr, rkey) &&
	     nt_event_in(ch, cq, 5000);
	check(ok, "V-NOT-5 the next completion added raises the event");
	check(drain(cq, wc, 3) == 2 && wc[0].wr_id == 1 && wc[1].wr_id == 2 &&
	      wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS,
	      "V-NOT-5 both completions poll, in order");

	/* V-NOT-7: "next", then "solicited only": the next CQE fires, once. */
	check(!ibv_req_notify_cq(cq, 0) && !ibv_req_notify_cq(cq, 1),
	      "V-NOT-7 arm for the next completion, then for solicited only");
	ok = !nt_send(qp, 3, IBV_WR_SEND, 0, 0) && nt_event_in(ch, cq, 5000);
	check(ok, "V-NOT-7 an unsolicited completion raises the event of the earlier \"next\" arm");
	ok = !nt_send(qp, 4, IBV_WR_SEND, 0, 0) && !nt_event_in(ch, cq, 1000);
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
		if (!nt_event_in(ch, cq, 60000)) {
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
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	struct rdma_conn_param cp = { .initiator_depth = 1 };
	struct ibv_comp_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_pd *pd;
	uint64_t info[2];
	char *buf;

	printf("TAP version 13\n");
	nt_ch = rdma_create_event_channel();
	if (!nt_ch || rdma_getaddrinfo(addr, port, &hints, &ai) ||
	    rdma_create_id(nt_ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, ai->ai_dst_addr, 5000))
		return 1;
	rdma_freeaddrinfo(ai);
	rdma_ack_cm_event(nt_event(RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 5000))
		return 1;
	rdma_ack_cm_event(nt_event(RDMA_CM_EVENT_ROUTE_RESOLVED));
	buf = calloc(1, NT_BUF);
	pd = ibv_alloc_pd(id->verbs);
	mr = pd && buf ? ibv_reg_mr(pd, buf, NT_BUF, IBV_ACCESS_LOCAL_WRITE) : NULL;
	ch = ibv_create_comp_channel(id->verbs);
	cq = ch ? ibv_create_cq(id->verbs, 256, NULL, ch, 0) : NULL;
	qp = mr && cq ? nt_qp(id, pd, cq, 16) : NULL;
	check(qp != NULL, "a QP whose sends and receives share a CQ with a channel");
	if (!qp)
		return 1;
	for (int i = 0; i < 16; i++)
		if (nt_recv(qp, mr, i))
			return 1;
	if (rdma_connect(id, &cp))
		return 1;
	ev = nt_event(RDMA_CM_EVENT_ESTABLISHED);
	memcpy(info, ev->param.conn.private_data, sizeof(info));
	rdma_ack_cm_event(ev);

	nt_arms(qp, ch, info[0], info[1]);
	nt_loop(qp, ch, mr);

	rdma_disconnect(id);
	rdma_ack_cm_event(nt_event(RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	/* Events of the flushed receives may be pending: ack before destroy. */
	while (nt_event_in(ch, cq, 100))
		;
	check(!ibv_destroy_cq(cq) && !ibv_destroy_comp_channel(ch),
	      "destroy the CQ and its channel");
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(nt_ch);
	printf("1..%d\n", n);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct ibv_wc wc[64];
	struct ibv_comp_channel *ch;
	struct ibv_context *ctx;
	struct ibv_cq *cq, *small, *big;
	struct ibv_qp *qp, *qp2;
	struct ibv_pd *pd;
	int i, ok, got;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "server"))
		return nt_server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return nt_client(argv[2], argv[3]);
	if (argc != 2) {
		fprintf(stderr, "usage: %s DEVICE | server|client ADDR PORT\n",
			argv[0]);
		return 2;
	}
	printf("TAP version 13\n");
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
	errno = 0;
	big = ibv_create_cq(ctx, 65537, NULL, NULL, 0);
	check(!big && errno == EINVAL, "CQ of 65537 entries refused with EINVAL");
	errno = 0;
	big = ibv_create_cq(ctx, 8, NULL, NULL, 1 << 20);
	check(!big && errno == EINVAL, "CQ on a nonexistent completion vector refused");
	errno = 0;
	qp = make_qp(pd, cq, cq, 8, 7, 0);
	check(!qp && errno == EINVAL, "QP with 7 SGEs (max 6) refused with EINVAL");
	errno = 0;
	qp = make_qp(pd, cq, cq, 8, 2, 97);
	check(!qp && errno == EINVAL, "QP with 97 bytes inline (max 96) refused");
	errno = 0;
	qp = make_qp(pd, cq, cq, 16385, 2, 0);
	check(!qp && errno == EINVAL, "QP with 16385 WRs (max 16384) refused");

	qp = make_qp(pd, cq, cq, 8, 2, 64);
	check(qp != NULL, "create RC QP (8 WRs, 2 SGEs, 64 B inline)");
	if (!qp)
		goto out;
	check(qp_state(qp) == IBV_QPS_RESET, "new QP reports RESET");

	/* State machine before a connection. */
	{
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_INIT,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ,
		};
		struct ibv_qp_init_attr init;

		check(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS),
		      "RESET -> INIT with access flags");
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
	check(modify(qp, IBV_QPS_RTR) == 0 && qp_state(qp) == IBV_QPS_RTR,
	      "INIT -> RTR");
	check(modify(qp, IBV_QPS_RTS) == EINVAL && qp_state(qp) == IBV_QPS_RTR,
	      "RTR -> RTS without a connection refused with EINVAL, state kept");
	check(modify(qp, IBV_QPS_SQD) == EINVAL, "RTR -> SQD refused");
	check(modify(qp, IBV_QPS_INIT) == EINVAL, "RTR -> INIT refused");
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
	check(modify(qp, IBV_QPS_ERR) == 0 && qp_state(qp) == IBV_QPS_ERR,
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
		swr[0].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		swr[0].send_flags = 0;
		bad = NULL;
		check(ibv_post_send(qp, swr, &bad) == EINVAL && bad == swr,
		      "an unsupported opcode is refused with EINVAL");
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
	check(modify(qp, IBV_QPS_RESET) == 0 && qp_state(qp) == IBV_QPS_RESET,
	      "ERR -> RESET");
	{
		struct ibv_recv_wr rwr = { .wr_id = 9 };
		struct ibv_recv_wr *bad = NULL;

		check(ibv_post_recv(qp, &rwr, &bad) == EINVAL && bad == &rwr,
		      "post_recv in RESET refused with EINVAL");
	}
	check(modify(qp, IBV_QPS_INIT) == 0, "RESET -> INIT again");

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
	qp2 = small ? make_qp(pd, small, small, 8, 1, 0) : NULL;
	check(small && small->cqe == 4 && qp2, "a 4-entry CQ and a QP on it");
	if (small && qp2) {
		struct ibv_async_event ev;
		int flags;

		modify(qp2, IBV_QPS_INIT);
		for (i = 0; i < 6; i++) {
			struct ibv_recv_wr rwr = { .wr_id = 300 + i };
			struct ibv_recv_wr *bad;

			ibv_post_recv(qp2, &rwr, &bad);
		}
		modify(qp2, IBV_QPS_ERR);
		got = drain(small, wc, 6);
		check(got == 4 && wc[0].wr_id == 300 && wc[3].wr_id == 303,
		      "a full CQ keeps its first 4 completions, none overwritten (got %d)",
		      got);
		flags = fcntl(ctx->async_fd, F_GETFL);
		fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
		ok = 0;
		while (wait_fd(ctx->async_fd, 2000) &&
		       !ibv_get_async_event(ctx, &ev)) {
			ok |= ev.event_type == IBV_EVENT_CQ_ERR &&
			      ev.element.cq == small;
			ibv_ack_async_event(&ev);
			if (ok)
				break;
		}
		check(ok, "CQ overflow raised IBV_EVENT_CQ_ERR");
		check(!ibv_destroy_qp(qp2), "destroy the QP on the broken CQ");
		check(!ibv_destroy_cq(small), "destroy the broken CQ");
	}

	resize_cq(ctx, pd);

	check(!ibv_destroy_qp(qp), "destroy QP");
	check(!ibv_destroy_cq(cq), "destroy CQ");
	check(!ibv_destroy_comp_channel(ch), "destroy completion channel");
	check(!ibv_dealloc_pd(pd), "dealloc PD");
	check(!ibv_close_device(ctx), "close device");
out:
	printf("1..%d\n", n);
	return failed ? 1 : 0;
}
