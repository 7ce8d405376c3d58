// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_solicit: Send with Solicited Event over a live connection. The
 * server is the receiver: it arms its receive CQ, for solicited
 * completions only (ibv_req_notify_cq(cq, 1)) or for the next one (0),
 * and then orders Sends from the client, with IBV_SEND_SOLICITED or
 * without, in Sends of its own. A solicited-only arm must fire for a
 * solicited Send and not for a plain one; an arm for the next completion
 * fires for both; every message arrives intact. The client speaks first,
 * with a greeting Send: MPA's responder sends nothing before the
 * initiator's first FPDU when no ready-to-receive message was agreed on
 * (revision 1, or siw's revision 2, which asks for none). Either end may
 * be kiwi or the upstream siw: solicited.sh runs it kiwi to kiwi and with
 * siw at either end. Both print TAP; the script re-emits the server's
 * points.
 *
 *   kiwi_solicit server ADDR PORT [no-solicited-events]
 *   kiwi_solicit client ADDR PORT
 *
 * no-solicited-events: the receiving device is one that never raises a
 * solicited-only event for a received Send (the upstream siw of Linux 6.1:
 * siw_rqe_complete() hands siw_cq_notify_now() SIW_WQE_SIGNALLED, never
 * the solicited flag of the message); the server then checks that it
 * does not, so that a siw that is fixed shows here.
 *
 * IDs cited: V-NOT-* of shared/spec/digest-verbs.md.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

#define NRECV		8	/* receives each side keeps posted */
#define MSG_MAX		4096
#define CTL_BYTES	64	/* an order's slot */
#define EVENT_MS	10000	/* an event or a message that must come */
#define QUIET_MS	1500	/* how long an event that must not come is awaited */
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

enum { CTL_SEND, CTL_DONE };

/* What the server orders: @count Sends, the i-th solicited if bit i of @se. */
struct ctl {
	uint32_t cmd;
	uint32_t count;
	uint32_t se;
	uint32_t seq;		/* pattern seed of the first; one more each */
	uint32_t len;		/* bytes each */
};

/* A step: the arm, then the Sends ordered, and whether the event comes. */
struct step {
	int solicited_only;
	uint32_t count, se, len;
	bool fires;
	const char *what;
};

static const struct step steps[] = {
	{ 1, 1, 0x0, 1000, false,
	  "a solicited-only arm does not fire for a plain Send" },
	{ 1, 1, 0x1, 1000, true,
	  "a solicited-only arm fires for a Send with Solicited Event" },
	{ 1, 3, 0x4, 3000, true,
	  "a solicited-only arm fires once for 2 plain Sends and a solicited one after them" },
	{ 0, 1, 0x0, 4096, true,
	  "an arm for the next completion fires for a plain Send" },
	{ 0, 1, 0x1, 1, true,
	  "an arm for the next completion fires for a Send with Solicited Event" },
	{ 1, 1, 0x0, 64, false,
	  "a solicited-only arm again does not fire for a plain Send" },
};

static struct rdma_event_channel *ch;

/* Check @n receive completions in @wc against the Sends of @c. */
static bool msgs_intact(const struct ctl *c, const struct ibv_wc *wc, int n,
			uint8_t *buf)
{
	for (int i = 0; i < n; i++) {
		const uint8_t *m = buf + wc[i].wr_id * MSG_MAX;
		size_t bad;

		if (wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].opcode != IBV_WC_RECV || wc[i].byte_len != c->len) {
			note("message %d: %s, opcode %d, %u bytes (want %u)", i,
			     ibv_wc_status_str(wc[i].status), wc[i].opcode,
			     wc[i].byte_len, c->len);
			return false;
		}
		bad = kt_differs(m, c->len, c->seq + i, 0);
		if (bad) {
			note("message %d: byte %zu differs", i, bad - 1);
			return false;
		}
	}
	return true;
}

static int server(const char *addr, const char *port, bool no_se)
{
	struct ibv_comp_channel *chan;
	struct rdma_cm_id *lid, *id;
	struct kp_caps qc = {
		.send_wr = 8, .recv_wr = NRECV, .send_sge = 1, .recv_sge = 1,
		.cqe = 32, .two_cqs = true, .buf_len = (NRECV + 1) * MSG_MAX,
		.access = IBV_ACCESS_LOCAL_WRITE,
	};
	struct rdma_conn_param cp = kc_param(1, 1, NULL, 0);
	struct ctl *c;
	struct kp_peer p;
	struct ibv_wc wc[NRECV];
	int got;

	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	lid = kc_listen_or_die(ch, addr, port, 1);
	id = kc_request(ch, NULL, 0);
	chan = ibv_create_comp_channel(id->verbs);
	if (!chan)
		die("ibv_create_comp_channel");
	qc.chan = chan;
	kp_open_or_die(&p, id, &qc);
	note("receiver on %s", ibv_get_device_name(id->verbs->device));
	/* Slot NRECV of the buffer holds the orders. */
	c = (struct ctl *)(p.buf + NRECV * MSG_MAX);
	for (int i = 0; i < NRECV; i++)
		if (kp_post_recv(p.qp, i, p.buf + i * MSG_MAX, MSG_MAX,
				 p.mr->lkey))
			die("ibv_post_recv");
	kc_accept_or_die(ch, id, &cp);
	if (kp_poll(p.rcq, wc, 1, EVENT_MS) != 1 ||
	    wc[0].status != IBV_WC_SUCCESS ||
	    kp_post_recv(p.qp, wc[0].wr_id, p.buf + wc[0].wr_id * MSG_MAX,
			 MSG_MAX, p.mr->lkey))
		die("the client's greeting");

	for (size_t s = 0; s < ARRAY_SIZE(steps); s++) {
		const struct step *st = &steps[s];
		bool fires = st->fires && !(no_se && st->solicited_only);
		bool fired, quiet = true, ok;

		*c = (struct ctl){ .cmd = CTL_SEND, .count = st->count,
				   .se = st->se, .seq = 100 * (s + 1),
				   .len = st->len };
		if (ibv_req_notify_cq(p.rcq, st->solicited_only))
			die("ibv_req_notify_cq(%d)", st->solicited_only);
		if (kp_post_send(p.qp, s, IBV_WR_SEND, IBV_SEND_SIGNALED, c,
				 sizeof(*c), p.mr->lkey, 0, 0) ||
		    kp_poll(p.scq, wc, 1, EVENT_MS) != 1 ||
		    wc[0].status != IBV_WC_SUCCESS)
			die("send the order for step %zu", s);
		if (fires) {
			fired = kp_cq_event(chan, p.rcq, EVENT_MS);
			got = kp_poll(p.rcq, wc, st->count, EVENT_MS);
			/* One arm, one event, whatever else completed. */
			quiet = !kp_cq_event(chan, p.rcq, 200);
		} else {
			/* The Send must have arrived for its silence to count. */
			got = kp_poll(p.rcq, wc, st->count, EVENT_MS);
			fired = kp_cq_event(chan, p.rcq, QUIET_MS);
		}
		ok = got == (int)st->count && msgs_intact(c, wc, got, p.buf);
		check(fired == fires && quiet && ok,
		      "%s%s (armed solicited_only=%d; %s; event %s; %d of %u messages intact)",
		      st->what, fires == st->fires ? "" :
		      ": on this receiver it does not (its solicited-only arm never fires)",
		      st->solicited_only,
		      st->se ? "Solicited Event set on the last" : "no Solicited Event",
		      fired ? "came" : "did not come", ok ? got : 0, st->count);
		for (int i = 0; i < got; i++)
			if (kp_post_recv(p.qp, wc[i].wr_id,
					 p.buf + wc[i].wr_id * MSG_MAX, MSG_MAX,
					 p.mr->lkey))
				die("ibv_post_recv");
	}

	*c = (struct ctl){ .cmd = CTL_DONE };
	if (kp_post_send(p.qp, 99, IBV_WR_SEND, IBV_SEND_SIGNALED, c,
			 sizeof(*c), p.mr->lkey, 0, 0) ||
	    kp_poll(p.scq, wc, 1, EVENT_MS) != 1)
		die("send the last order");
	check(!kc_disconnect(ch, id, 20000), "the connection ends");
	kp_close(&p);
	ibv_destroy_comp_channel(chan);
	rdma_destroy_id(id);
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	return kt_end();
}

static int client(const char *addr, const char *port)
{
	struct kp_caps qc = {
		.send_wr = 8, .recv_wr = NRECV, .send_sge = 1, .recv_sge = 1,
		.cqe = 32, .two_cqs = true,
		.buf_len = NRECV * CTL_BYTES + 8 * MSG_MAX,
		.access = IBV_ACCESS_LOCAL_WRITE,
	};
	struct rdma_conn_param cp = kc_param(1, 1, NULL, 0);
	struct rdma_cm_id *id;
	struct kp_peer p;
	int sent = 0;

	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	id = kc_resolve_or_die(ch, addr, port);
	kp_open_or_die(&p, id, &qc);
	note("sender on %s", ibv_get_device_name(id->verbs->device));
	for (int i = 0; i < NRECV; i++)
		if (kp_post_recv(p.qp, i, p.buf + i * CTL_BYTES, CTL_BYTES,
				 p.mr->lkey))
			die("ibv_post_recv");
	kc_connect_or_die(ch, id, &cp, NULL, 0);
	{
		struct ibv_wc wc;

		if (kp_post_send(p.qp, 0, IBV_WR_SEND, IBV_SEND_SIGNALED,
				 p.buf + NRECV * CTL_BYTES, 16, p.mr->lkey, 0,
				 0) ||
		    kp_poll(p.scq, &wc, 1, EVENT_MS) != 1 ||
		    wc.status != IBV_WC_SUCCESS)
			die("send the greeting");
	}

	for (;;) {
		uint8_t *m = p.buf + NRECV * CTL_BYTES;
		struct ibv_wc wc, swc[8];
		struct ctl c;

		if (kp_poll(p.rcq, &wc, 1, 60000) != 1 ||
		    wc.status != IBV_WC_SUCCESS)
			bail("no order from the server");
		memcpy(&c, p.buf + wc.wr_id * CTL_BYTES, sizeof(c));
		if (kp_post_recv(p.qp, wc.wr_id, p.buf + wc.wr_id * CTL_BYTES,
				 CTL_BYTES, p.mr->lkey))
			die("ibv_post_recv");
		if (c.cmd == CTL_DONE)
			break;
		if (c.count > 8 || c.len > MSG_MAX)
			bail("bad order");
		for (uint32_t k = 0; k < c.count; k++) {
			unsigned int fl = IBV_SEND_SIGNALED;

			if (c.se & 1u << k)
				fl |= IBV_SEND_SOLICITED;
			kt_fill(m + k * MSG_MAX, c.len, c.seq + k, 0);
			if (kp_post_send(p.qp, k, IBV_WR_SEND, fl,
					 m + k * MSG_MAX, c.len, p.mr->lkey, 0,
					 0))
				die("ibv_post_send");
		}
		if (kp_poll(p.scq, swc, c.count, EVENT_MS) != (int)c.count)
			bail("the Sends did not complete");
		for (uint32_t k = 0; k < c.count; k++)
			if (swc[k].status != IBV_WC_SUCCESS)
				bail("Send: %s", ibv_wc_status_str(swc[k].status));
		sent += c.count;
	}
	check(!kc_disconnect(ch, id, 20000), "the connection ends");
	kp_close(&p);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	check(sent > 0, "sent the %d Sends the server ordered", sent);
	return kt_end();
}

int main(int argc, char **argv)
{
	kt_start();
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3], false);
	if (argc == 5 && !strcmp(argv[1], "server") &&
	    !strcmp(argv[4], "no-solicited-events"))
		return server(argv[2], argv[3], true);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: see the top of kiwi_solicit.c\n");
	return 2;
}
