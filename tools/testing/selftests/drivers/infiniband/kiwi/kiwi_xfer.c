// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_xfer: checked RDMA Write + Send transfers through rdma_cm, with the
 * sender reusing its one buffer the moment a work request completes.
 *
 *   kiwi_xfer server ADDR PORT SIZE COUNT
 *   kiwi_xfer client ADDR PORT SIZE COUNT
 *
 * For each of COUNT rounds the client fills its buffer with that round's
 * pattern, posts an RDMA Write of it into the server's buffer and a Send of
 * it, and, as soon as the Send completes, overwrites the buffer with a
 * poison pattern. The server checks both copies against the pattern and
 * answers with a Send of its verdict, which the client waits for before
 * the next round. A completion that came before the transport was done
 * with the buffer (for example a zero-copy send whose data TCP must still
 * retransmit) shows as poison at the server, or as a CRC error there.
 *
 * Both print TAP: one point for the rounds, passing when every one matched.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

struct verdict {
	uint32_t round;
	uint32_t bad;		/* offset + 1 of the first wrong byte, or 0 */
};

static struct rdma_event_channel *ch;
static struct kp_peer me;
static size_t size;
static unsigned int count;

static const struct kp_caps caps = {
	.send_wr = 8, .recv_wr = 8, .send_sge = 1, .recv_sge = 1, .cqe = 32,
};

static struct ibv_mr *reg(void *buf, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(me.pd, buf, len, access);

	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

static void post_recv(struct ibv_mr *mr, void *buf, size_t len,
		      uint64_t wr_id)
{
	if (kp_post_recv(me.qp, wr_id, buf, len, mr->lkey))
		die("ibv_post_recv");
}

/* A Send of @buf, or an RDMA Write of it to @dst. */
static void post_send(struct ibv_mr *mr, void *buf, size_t len,
		      const struct kc_info *dst)
{
	int ret;

	if (dst)	/* unsignalled: the Send behind it completes both */
		ret = kp_post_send(me.qp, 0, IBV_WR_RDMA_WRITE, 0, buf, len,
				   mr->lkey, dst->addr, dst->rkey);
	else
		ret = kp_post_send(me.qp, 0, IBV_WR_SEND, IBV_SEND_SIGNALED,
				   buf, len, mr->lkey, 0, 0);
	if (ret)
		die("ibv_post_send");
}

/*
 * The next completion, which must be a success of @op; of a Send or a
 * receive for @op == ANY_OP.
 */
#define ANY_OP	((enum ibv_wc_opcode)-1)

static struct ibv_wc next_wc(enum ibv_wc_opcode op)
{
	struct ibv_wc wc;
	int n;

	while (!(n = ibv_poll_cq(me.scq, 1, &wc)))
		;
	if (n < 0)
		die("ibv_poll_cq");
	if (wc.status != IBV_WC_SUCCESS ||
	    (op == ANY_OP ? wc.opcode != IBV_WC_SEND && wc.opcode != IBV_WC_RECV :
			    wc.opcode != op)) {
		errno = EIO;
		die("completion %s opcode %d, wanted %d",
		    ibv_wc_status_str(wc.status), wc.opcode, op);
	}
	return wc;
}

/* Offset + 1 of the first byte of @buf not of round @round's pattern, or 0. */
static uint32_t bad_at(const uint8_t *buf, unsigned int round)
{
	return kt_differs(buf, size, round, 0);
}

static int server(const char *addr, const char *port)
{
	struct rdma_cm_id *lid = kc_listen_or_die(ch, addr, port, 1), *id;
	uint8_t *rbuf = malloc(2 * size), *wbuf = calloc(1, size);
	struct verdict *v = calloc(1, sizeof(*v));
	struct ibv_mr *rmr, *wmr, *vmr;
	struct rdma_conn_param cp;
	struct kc_info info;
	unsigned int r;

	if (!rbuf || !wbuf || !v)
		die("malloc");
	id = kc_request(ch, NULL, 0);
	kp_open_or_die(&me, id, &caps);
	rmr = reg(rbuf, 2 * size, IBV_ACCESS_LOCAL_WRITE);
	wmr = reg(wbuf, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	vmr = reg(v, sizeof(*v), 0);
	post_recv(rmr, rbuf, size, 0);
	post_recv(rmr, rbuf + size, size, 1);
	info = (struct kc_info){ (uintptr_t)wbuf, wmr->rkey, 0 };
	cp = kc_param(1, 1, &info, sizeof(info));
	if (rdma_accept(id, &cp))
		die("rdma_accept");
	expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED);
	rdma_destroy_id(lid);	/* one connection only */

	for (r = 0; r < count; r++) {
		struct ibv_wc wc = next_wc(IBV_WC_RECV);
		uint8_t *got = rbuf + wc.wr_id * size;

		if (wc.byte_len != size) {
			note("round %u: %u bytes received", r, wc.byte_len);
			break;
		}
		v->round = r;
		v->bad = bad_at(got, r);
		if (v->bad)
			note("round %u: Send data wrong at %u", r, v->bad - 1);
		else if ((v->bad = bad_at(wbuf, r)))
			note("round %u: Write data wrong at %u", r, v->bad - 1);
		post_recv(rmr, got, size, wc.wr_id);
		post_send(vmr, v, sizeof(*v), NULL);
		next_wc(IBV_WC_SEND);
		if (v->bad)
			break;
	}
	if (r == count)
		expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED);
	check(r == count, "%u rounds of %zu bytes: Send and Write data intact",
	      count, size);
	return kt_end();
}

static int client(const char *addr, const char *port)
{
	struct rdma_conn_param cp = kc_param(1, 1, NULL, 0);
	uint8_t *buf = malloc(size);
	struct verdict *v = calloc(2, sizeof(*v));
	struct ibv_mr *mr, *vmr;
	struct rdma_cm_id *id;
	struct kc_info dst;
	unsigned int r;

	if (!buf || !v)
		die("malloc");
	id = kc_resolve_or_die(ch, addr, port);
	kp_open_or_die(&me, id, &caps);
	mr = reg(buf, size, IBV_ACCESS_LOCAL_WRITE);
	vmr = reg(v, 2 * sizeof(*v), IBV_ACCESS_LOCAL_WRITE);
	post_recv(vmr, &v[0], sizeof(*v), 0);
	post_recv(vmr, &v[1], sizeof(*v), 1);
	kc_connect_or_die(ch, id, &cp, &dst, sizeof(dst));

	for (r = 0; r < count; r++) {
		struct ibv_wc wc = { .opcode = IBV_WC_SEND }, got;
		int sent = 0;

		kt_fill(buf, size, r, 0);
		post_send(mr, buf, size, &dst);
		post_send(mr, buf, size, NULL);
		/*
		 * The Send's and the verdict's completions come in either
		 * order: they are on different queues, and a zero-copy Send
		 * completes only once TCP has the ACK the verdict may carry.
		 */
		while (!sent || wc.opcode != IBV_WC_RECV) {
			got = next_wc(ANY_OP);
			if (got.opcode == IBV_WC_RECV) {
				wc = got;
				continue;
			}
			sent = 1;
			/* Completed: the buffer is the consumer's again. */
			memset(buf, 0xee, size);
		}
		if (v[wc.wr_id].round != r || v[wc.wr_id].bad) {
			note("round %u: server says round %u bad %u", r,
			     v[wc.wr_id].round, v[wc.wr_id].bad);
			break;
		}
		post_recv(vmr, &v[wc.wr_id], sizeof(*v), wc.wr_id);
	}
	if (r == count && kc_disconnect(ch, id, -1))
		die("disconnect");
	check(r == count, "%u rounds of %zu bytes: the server found them intact",
	      count, size);
	return kt_end();
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: see the top of kiwi_xfer.c\n");
		return 2;
	}
	size = strtoul(argv[4], NULL, 0);
	count = strtoul(argv[5], NULL, 0);
	if (!size || size > (1u << 30))
		return 2;
	kt_start();
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (!strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (!strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	return 2;
}
