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
 * Both print "ok COUNT x SIZE" and exit 0 when every round matched.
 */
#include <inttypes.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

struct wbuf_info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

struct verdict {
	uint32_t round;
	uint32_t bad;		/* offset + 1 of the first wrong byte, or 0 */
};

static struct rdma_event_channel *ch;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static size_t size;
static unsigned int count;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static uint8_t pattern(unsigned int round, size_t i)
{
	uint32_t x = (round + 1) * 2654435761u ^ (uint32_t)(i / 4) * 40503u;

	return (uint8_t)(x >> (8 * (i % 4)));
}

static struct rdma_cm_event *expect(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != want) {
		fprintf(stderr, "error: got %s status %d, wanted %s\n",
			rdma_event_str(ev->event), ev->status,
			rdma_event_str(want));
		exit(1);
	}
	return ev;
}

static struct ibv_mr *reg(void *buf, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, access);

	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

static void setup_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	pd = ibv_alloc_pd(id->verbs);
	cq = pd ? ibv_create_cq(id->verbs, 32, NULL, NULL, 0) : NULL;
	if (!cq)
		die("ibv_alloc_pd/ibv_create_cq");
	attr.send_cq = cq;
	attr.recv_cq = cq;
	if (rdma_create_qp(id, pd, &attr))
		die("rdma_create_qp");
}

static void post_recv(struct rdma_cm_id *id, struct ibv_mr *mr, void *buf,
		      size_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)buf, (uint32_t)len, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(id->qp, &wr, &bad))
		die("ibv_post_recv");
}

static void post_send(struct rdma_cm_id *id, struct ibv_mr *mr, void *buf,
		      size_t len, const struct wbuf_info *dst)
{
	struct ibv_sge sge = { (uintptr_t)buf, (uint32_t)len, mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (dst) {
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = 0;	/* the Send behind it completes both */
		wr.wr.rdma.remote_addr = dst->addr;
		wr.wr.rdma.rkey = dst->rkey;
	}
	if (ibv_post_send(id->qp, &wr, &bad))
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

	while (!(n = ibv_poll_cq(cq, 1, &wc)))
		;
	if (n < 0)
		die("ibv_poll_cq");
	if (wc.status != IBV_WC_SUCCESS ||
	    (op == ANY_OP ? wc.opcode != IBV_WC_SEND && wc.opcode != IBV_WC_RECV :
			    wc.opcode != op)) {
		fprintf(stderr, "error: completion %s opcode %d, wanted %d\n",
			ibv_wc_status_str(wc.status), wc.opcode, op);
		exit(1);
	}
	return wc;
}

static uint32_t check(const uint8_t *buf, unsigned int round)
{
	for (size_t i = 0; i < size; i++)
		if (buf[i] != pattern(round, i))
			return (uint32_t)i + 1;
	return 0;
}

static struct rdma_cm_id *bind_listen(const char *addr, const char *port)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_port_space = RDMA_PS_TCP }, *ai;
	struct rdma_cm_id *id;

	if (rdma_getaddrinfo(addr, port, &hints, &ai))
		die("rdma_getaddrinfo");
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(id, ai->ai_src_addr) || rdma_listen(id, 1))
		die("rdma_bind_addr/rdma_listen");
	rdma_freeaddrinfo(ai);
	return id;
}

static int server(const char *addr, const char *port)
{
	struct rdma_cm_id *lid = bind_listen(addr, port), *id;
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1 };
	uint8_t *rbuf = malloc(2 * size), *wbuf = calloc(1, size);
	struct verdict *v = calloc(1, sizeof(*v));
	struct ibv_mr *rmr, *wmr, *vmr;
	struct wbuf_info info;
	struct rdma_cm_event *ev;

	if (!rbuf || !wbuf || !v)
		die("malloc");
	ev = expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	rdma_ack_cm_event(ev);
	setup_qp(id);
	rmr = reg(rbuf, 2 * size, IBV_ACCESS_LOCAL_WRITE);
	wmr = reg(wbuf, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	vmr = reg(v, sizeof(*v), 0);
	post_recv(id, rmr, rbuf, size, 0);
	post_recv(id, rmr, rbuf + size, size, 1);
	info = (struct wbuf_info){ (uintptr_t)wbuf, wmr->rkey, 0 };
	cp.private_data = &info;
	cp.private_data_len = sizeof(info);
	if (rdma_accept(id, &cp))
		die("rdma_accept");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ESTABLISHED));
	rdma_destroy_id(lid);	/* one connection only */

	for (unsigned int r = 0; r < count; r++) {
		struct ibv_wc wc = next_wc(IBV_WC_RECV);
		uint8_t *got = rbuf + wc.wr_id * size;

		if (wc.byte_len != size) {
			fprintf(stderr, "error: round %u: %u bytes received\n",
				r, wc.byte_len);
			return 1;
		}
		v->round = r;
		v->bad = check(got, r);
		if (v->bad)
			fprintf(stderr, "error: round %u: Send data wrong at %u\n",
				r, v->bad - 1);
		else if ((v->bad = check(wbuf, r)))
			fprintf(stderr, "error: round %u: Write data wrong at %u\n",
				r, v->bad - 1);
		post_recv(id, rmr, got, size, wc.wr_id);
		post_send(id, vmr, v, sizeof(*v), NULL);
		next_wc(IBV_WC_SEND);
		if (v->bad)
			return 1;
	}
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_DISCONNECTED));
	printf("ok %u x %zu\n", count, size);
	return 0;
}

static int client(const char *addr, const char *port)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1 };
	uint8_t *buf = malloc(size);
	struct verdict *v = calloc(2, sizeof(*v));
	struct ibv_mr *mr, *vmr;
	struct wbuf_info dst;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	if (!buf || !v)
		die("malloc");
	if (rdma_getaddrinfo(addr, port, &hints, &ai))
		die("rdma_getaddrinfo");
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, ai->ai_dst_addr, 5000))
		die("rdma_resolve_addr");
	rdma_freeaddrinfo(ai);
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 5000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ROUTE_RESOLVED));
	setup_qp(id);
	mr = reg(buf, size, IBV_ACCESS_LOCAL_WRITE);
	vmr = reg(v, 2 * sizeof(*v), IBV_ACCESS_LOCAL_WRITE);
	post_recv(id, vmr, &v[0], sizeof(*v), 0);
	post_recv(id, vmr, &v[1], sizeof(*v), 1);
	if (rdma_connect(id, &cp))
		die("rdma_connect");
	ev = expect(RDMA_CM_EVENT_ESTABLISHED);
	if (ev->param.conn.private_data_len < sizeof(dst)) {
		fprintf(stderr, "error: no buffer in the private data\n");
		return 1;
	}
	memcpy(&dst, ev->param.conn.private_data, sizeof(dst));
	rdma_ack_cm_event(ev);

	for (unsigned int r = 0; r < count; r++) {
		struct ibv_wc wc = { .opcode = IBV_WC_SEND }, got;
		int sent = 0;

		for (size_t i = 0; i < size; i++)
			buf[i] = pattern(r, i);
		post_send(id, mr, buf, size, &dst);
		post_send(id, mr, buf, size, NULL);
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
			fprintf(stderr, "error: round %u: server says round %u bad %u\n",
				r, v[wc.wr_id].round, v[wc.wr_id].bad);
			return 1;
		}
		post_recv(id, vmr, &v[wc.wr_id], sizeof(*v), wc.wr_id);
	}
	rdma_disconnect(id);
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_DISCONNECTED));
	printf("ok %u x %zu\n", count, size);
	return 0;
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
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (!strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (!strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	return 2;
}
