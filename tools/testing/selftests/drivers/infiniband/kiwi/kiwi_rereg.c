// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_rereg: ibv_rereg_mr with data moving through the MR, and the STag
 * checks around it, over rdma_cm between two kiwi devices.
 *
 *   kiwi_rereg peer ADDR PORT   serves connections until told to stop
 *   kiwi_rereg owner ADDR PORT  owns the MR, drives every case, prints TAP
 *
 * The peer exports a buffer (address and rkey in its accept's private
 * data) and runs the owner's commands: an RDMA Write of a pattern into the
 * owner's MR at a given address and rkey, or an RDMA Read of it checked
 * against a pattern, answered with the completion status. A Write the owner refuses ends the connection with a
 * Terminate (the peer's Write itself completed when it was sent, as RDMA
 * Writes do); the peer reports the affiliated asynchronous event that
 * Terminate raised in the private data of its next accept. The owner checks the bytes in its own memory. Cases that end a
 * connection each get a connection of their own.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

#define LW	IBV_ACCESS_LOCAL_WRITE
#define RW	IBV_ACCESS_REMOTE_WRITE
#define RR	IBV_ACCESS_REMOTE_READ

#define PBUF	65536		/* the peer's buffer */
#define LEN	5000		/* bytes each Write moves */
#define TIMEOUT	60		/* seconds to wait for a completion */

enum { CMD_WRITE = 1, CMD_READ = 2, CMD_QUIT = 3 };	/* QUIT: seed = connections */

struct cmd {
	uint64_t addr;
	uint32_t rkey;
	uint32_t op;
	uint32_t len;
	uint32_t seed;
};

struct reply {
	uint32_t status;
	uint32_t match;		/* CMD_READ: the bytes hold the pattern */
};

/* The peer's accept private data. */
struct hello {
	uint64_t addr;
	uint32_t rkey;
	uint32_t last_event;	/* 1 + the async event ending the last one */
	uint32_t last_status;	/* the status of the peer's last Read or Write */
	uint32_t pad;
};

struct conn {
	struct rdma_cm_id *id;
	struct kp_peer p;
	struct ibv_cq *cq;		/* p's one CQ */
	struct ibv_mr *msg_mr;
	struct cmd cmd;
	struct reply reply;
	struct hello hello;
};

static struct rdma_event_channel *ch;
static struct ibv_pd *pd1, *pd2;
static long page;

static void fill(uint8_t *p, uint32_t seed, size_t len)
{
	kt_fill(p, len, seed, 0);
}

static bool holds(const uint8_t *p, uint32_t seed, size_t len)
{
	return !kt_differs(p, len, seed, 0);
}

/* kc_ended: earlier connections end without anyone waiting for it. */
static void ignore_end(struct rdma_cm_id *id)
{
	(void)id;
}

/* One completion, or a status of -1 after TIMEOUT seconds. */
static struct ibv_wc next_wc(struct conn *c)
{
	struct ibv_wc wc;

	if (kp_poll(c->cq, &wc, 1, TIMEOUT * 1000) != 1)
		wc.status = -1;
	return wc;
}

static void setup(struct conn *c, struct ibv_pd *pd)
{
	const struct kp_caps caps = {
		.pd = pd, .send_wr = 8, .recv_wr = 8, .send_sge = 1,
		.recv_sge = 1, .cqe = 32, .sig_all = true,
	};

	kp_open_or_die(&c->p, c->id, &caps);
	c->cq = c->p.scq;
	c->msg_mr = ibv_reg_mr(pd, c, sizeof(*c), LW);
	if (!c->msg_mr)
		die("ibv_reg_mr of the messages");
}

static void teardown(struct conn *c)
{
	rdma_disconnect(c->id);
	kp_close(&c->p);
	ibv_dereg_mr(c->msg_mr);
	rdma_destroy_id(c->id);
}

static int post(struct conn *c, int send, void *buf, uint32_t len,
		uint32_t lkey, enum ibv_wr_opcode op, uint64_t raddr,
		uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
			       .lkey = lkey };
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
				   .wr.rdma = { .remote_addr = raddr,
						.rkey = rkey } };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 };
	struct ibv_send_wr *sbad;
	struct ibv_recv_wr *rbad;

	if (send)
		return ibv_post_send(c->id->qp, &swr, &sbad);
	return ibv_post_recv(c->id->qp, &rwr, &rbad);
}

/* ---- the peer ---- */

/* 1 + the first affiliated event of a connection that ended, or 0. */
static uint32_t async_event(struct ibv_context *ctx)
{
	struct ibv_async_event ev;
	uint32_t first = 0;

	while (kp_async(ctx, &ev, first ? 200 : 5000)) {
		note("async event: %s", ibv_event_type_str(ev.event_type));
		if (!first)
			first = 1 + ev.event_type;
	}
	return first;
}

static int peer(const char *addr, const char *port)
{
	struct rdma_cm_id *listen_id = kc_listen_or_die(ch, addr, port, 1);
	struct rdma_conn_param param = kc_param(1, 1, NULL, 0);
	uint32_t last_event = 0, last_status = 0, made = 0;
	int served = 0, quit = 0;
	struct ibv_mr *mr = NULL;
	uint8_t *buf = NULL;
	struct conn c;

	note("listening");
	param.private_data = &c.hello;
	param.private_data_len = sizeof(c.hello);
	while (!quit) {
		memset(&c, 0, sizeof(c));
		c.id = kc_request(ch, NULL, 0);
		served++;
		if (!pd1) {
			pd1 = ibv_alloc_pd(c.id->verbs);
			buf = aligned_alloc(page, PBUF);
			mr = pd1 && buf ? ibv_reg_mr(pd1, buf, PBUF, LW | RW | RR) :
				NULL;
			if (!mr)
				die("peer buffer");
		}
		setup(&c, pd1);
		c.hello.addr = (uintptr_t)buf;
		c.hello.rkey = mr->rkey;
		c.hello.last_event = last_event;
		c.hello.last_status = last_status;
		last_event = 0;
		last_status = 0;
		if (post(&c, 0, &c.cmd, sizeof(c.cmd), c.msg_mr->lkey, 0, 0, 0) ||
		    rdma_accept(c.id, &param))
			die("accept");
		expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED);

		for (;;) {
			struct ibv_wc wc = next_wc(&c);

			if (wc.status != IBV_WC_SUCCESS)
				break;
			if (c.cmd.op == CMD_QUIT) {
				made = c.cmd.seed;
				quit = 1;
				break;
			}
			if (c.cmd.op == CMD_WRITE)
				fill(buf, c.cmd.seed, c.cmd.len);
			else
				memset(buf, 0, c.cmd.len);
			if (post(&c, 1, buf, c.cmd.len, mr->lkey,
				 c.cmd.op == CMD_WRITE ? IBV_WR_RDMA_WRITE :
				 IBV_WR_RDMA_READ, c.cmd.addr, c.cmd.rkey))
				break;
			wc = next_wc(&c);
			note("%s seed %u: %s",
			     c.cmd.op == CMD_WRITE ? "write" : "read",
			     c.cmd.seed, ibv_wc_status_str(wc.status));
			last_status = wc.status;
			if (wc.status != IBV_WC_SUCCESS)
				break;
			c.reply.status = wc.status;
			c.reply.match = holds(buf, c.cmd.seed, c.cmd.len);
			if (post(&c, 0, &c.cmd, sizeof(c.cmd), c.msg_mr->lkey,
				 0, 0, 0) ||
			    post(&c, 1, &c.reply, sizeof(c.reply),
				 c.msg_mr->lkey, IBV_WR_SEND, 0, 0) ||
			    next_wc(&c).status != IBV_WC_SUCCESS)
				break;
		}
		if (!quit)
			last_event = async_event(c.id->verbs);
		teardown(&c);
	}
	rdma_destroy_id(listen_id);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd1);
	free(buf);
	check((uint32_t)served == made,
	      "served %d connections until told to stop, as many as the owner made (%u)",
	      served, made);
	return kt_end();
}

/* ---- the owner ---- */

static const char *oaddr, *oport;

static uint32_t connections;	/* the owner's, told to the peer at the end */

static void connect_peer(struct conn *c)
{
	struct rdma_conn_param param = kc_param(1, 1, NULL, 0);
	struct rdma_cm_event *ev;

	memset(c, 0, sizeof(*c));
	connections++;
	c->id = kc_resolve_or_die(ch, oaddr, oport);
	if (!pd1) {
		pd1 = ibv_alloc_pd(c->id->verbs);
		pd2 = ibv_alloc_pd(c->id->verbs);
		if (!pd1 || !pd2)
			die("ibv_alloc_pd");
	}
	setup(c, pd1);
	if (rdma_connect(c->id, &param))
		die("rdma_connect");
	ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev->param.conn.private_data_len >= sizeof(c->hello))
		memcpy(&c->hello, ev->param.conn.private_data,
		       sizeof(c->hello));
	rdma_ack_cm_event(ev);
}

/*
 * The peer writes LEN bytes of pattern @seed to @addr, @rkey (CMD_WRITE),
 * or reads them and checks they hold it (CMD_READ). Return: the status of
 * its Write or Read, or -1 when the connection ended instead (the peer
 * reports the status in its next hello).
 */
static int peer_op(struct conn *c, uint32_t op, void *addr, uint32_t rkey,
		   uint32_t seed)
{
	c->cmd = (struct cmd){ .op = op, .addr = (uintptr_t)addr,
			       .rkey = rkey, .len = LEN, .seed = seed };
	if (post(c, 0, &c->reply, sizeof(c->reply), c->msg_mr->lkey, 0, 0,
		 0) ||
	    post(c, 1, &c->cmd, sizeof(c->cmd), c->msg_mr->lkey, IBV_WR_SEND,
		 0, 0))
		return -1;
	for (int i = 0; i < 2; i++)
		if (next_wc(c).status != IBV_WC_SUCCESS)
			return -1;
	return c->reply.status;
}

static int peer_write(struct conn *c, void *addr, uint32_t rkey,
		      uint32_t seed)
{
	return peer_op(c, CMD_WRITE, addr, rkey, seed);
}

/* An RDMA Read of the peer's first @len bytes into @dst through @lkey. */
static int local_read(struct conn *c, void *dst, uint32_t len, uint32_t lkey)
{
	if (post(c, 1, dst, len, lkey, IBV_WR_RDMA_READ, c->hello.addr,
		 c->hello.rkey))
		return -1;
	return next_wc(c).status;
}

/* Wait until the connection is gone (the peer's side ended it). */
static int ended(struct conn *c)
{
	if (kc_wait(ch, NULL, RDMA_CM_EVENT_DISCONNECTED, -1))
		return 0;
	teardown(c);
	return 1;
}

static int rereg(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		 size_t len, int access)
{
	errno = 0;
	return ibv_rereg_mr(mr, flags, pd, addr, len, access);
}

static int owner(void)
{
	uint8_t *buf1, *buf2, *snap;
	uint32_t old_key, key0;
	struct ibv_mr *mr;
	struct conn c;
	int ret, st;

	buf1 = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	buf2 = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	snap = malloc(4 * page);
	if (buf1 == MAP_FAILED || buf2 == MAP_FAILED || !snap)
		die("buffers");
	memset(buf1, 0, 4 * page);
	memset(buf2, 0, 4 * page);

	/* Connection 1: every kind of rereg, data after each. */
	connect_peer(&c);
	mr = ibv_reg_mr(pd1, buf1 + 100, 3 * page, LW | RW | RR);
	check(mr != NULL, "reg_mr of 3 pages at offset 100, all rights");
	if (!mr)
		goto out;
	key0 = mr->rkey;
	st = peer_write(&c, buf1 + 100, mr->rkey, 1);
	check(st == IBV_WC_SUCCESS && holds(buf1 + 100, 1, LEN),
	      "the peer's RDMA Write lands in the MR (status %d)", st);

	ret = rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf2 + 7,
		    2 * page + 50, 0);
	check(!ret && mr->addr == buf2 + 7 && mr->length == (size_t)(2 * page + 50) &&
	      mr->lkey == mr->rkey && (mr->rkey >> 8) != (key0 >> 8),
	      "V-MR-7 rereg to a new address and length: a new STag index (0x%x, was 0x%x; %d %s)",
	      mr->rkey, key0, ret, strerror(errno));
	st = peer_write(&c, buf2 + 7, mr->rkey, 2);
	check(st == IBV_WC_SUCCESS && holds(buf2 + 7, 2, LEN) &&
	      holds(buf1 + 100, 1, LEN),
	      "V-MR-7 the peer's Write with the new rkey lands at the new address, the old memory untouched (status %d)",
	      st);
	memset(buf2 + 7, 0, LEN);
	st = local_read(&c, buf2 + 7, LEN, mr->lkey);
	check(st == IBV_WC_SUCCESS && holds(buf2 + 7, 2, LEN),
	      "an RDMA Read into the MR through its new lkey (status %d)", st);

	old_key = mr->rkey;
	ret = rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, LW | RW);
	check(!ret && mr->rkey == old_key && mr->lkey == old_key,
	      "V-MR-7 rereg of the rights alone keeps the STag 0x%x (%d %s)",
	      mr->rkey, ret, strerror(errno));
	st = peer_write(&c, buf2 + 7, mr->rkey, 3);
	check(st == IBV_WC_SUCCESS && holds(buf2 + 7, 3, LEN),
	      "V-MR-7 the peer still writes with remote write kept (status %d)",
	      st);

	/* V-PROT-3: a zero-length SGE is not checked, not even its STag. */
	st = local_read(&c, (void *)8, 0, 0xbad00000 | (mr->lkey & 0xff));
	check(st == IBV_WC_SUCCESS,
	      "V-PROT-3 a zero-length RDMA Read with a bogus lkey completes (status %d)",
	      st);

	ret = rereg(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	check(!ret && mr->pd == pd2 && mr->rkey == old_key,
	      "V-MR-7 rereg to another PD in place (%d %s)", ret,
	      strerror(errno));
	old_key = mr->rkey;
	ret = rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION |
		    IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS, pd1,
		    buf1 + 200, 2 * page, LW | RW);
	check(!ret && mr->pd == pd1 && mr->addr == buf1 + 200 &&
	      (mr->rkey >> 8) != (old_key >> 8),
	      "V-MR-7 rereg of translation, PD and rights at once: a new STag 0x%x (%d %s)",
	      mr->rkey, ret, strerror(errno));
	memcpy(snap, buf2, 4 * page);
	st = peer_write(&c, buf1 + 200, mr->rkey, 4);
	check(st == IBV_WC_SUCCESS && holds(buf1 + 200, 4, LEN) &&
	      !memcmp(snap, buf2, 4 * page),
	      "the peer's Write lands in the new range (status %d)", st);

	/*
	 * V-ADDR-1: zero-based, at page offset 300: the first byte has TO 0,
	 * locally and for the peer.
	 */
	{
		uint8_t *zb = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ibv_mr *zmr;

		if (zb == MAP_FAILED)
			die("zero-based buffer");
		memset(zb, 0, 2 * page);
		errno = 0;
		zmr = ibv_reg_mr(pd1, zb + 300, 2 * page - 300,
				 LW | RW | RR | IBV_ACCESS_ZERO_BASED);
		check(zmr != NULL, "V-ADDR-1 reg_mr zero-based at page offset 300 (%s)",
		      strerror(errno));
		if (zmr) {
			st = peer_write(&c, (void *)50, zmr->rkey, 11);
			check(st == IBV_WC_SUCCESS && holds(zb + 350, 11, LEN) &&
			      !zb[349] && !zb[350 + LEN],
			      "V-ADDR-1 the peer's Write at TO 50 of the zero-based MR lands 50 bytes into it (status %d)",
			      st);
			st = local_read(&c, (void *)1000, LEN, zmr->lkey);
			check(st == IBV_WC_SUCCESS && holds(zb + 1300, 11, LEN),
			      "V-ADDR-1 an RDMA Read into TO 1000 of the zero-based MR through its lkey (status %d)",
			      st);
			ibv_dereg_mr(zmr);
		}
		munmap(zb, 2 * page);
	}

	/* The STag of before the translation change is dead (ends conn 1). */
	memcpy(snap, buf2, 4 * page);
	st = peer_write(&c, buf2 + 7, old_key, 5);
	check(st == -1 && ended(&c) && !memcmp(snap, buf2, 4 * page),
	      "V-PROT-8 a Write with the STag replaced by rereg ends the connection, memory untouched");

	/* Connection 2: remote write taken away. */
	connect_peer(&c);
	check(c.hello.last_event == 1 + IBV_EVENT_QP_ACCESS_ERR,
	      "V-PROT-8 the peer's QP got IBV_EVENT_QP_ACCESS_ERR from the Terminate (%u)",
	      c.hello.last_event);
	old_key = mr->rkey;
	ret = rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, LW | RR);
	check(!ret && mr->rkey == old_key,
	      "rereg from remote write to remote read only, same STag (%d)", ret);
	memcpy(snap, buf1, 4 * page);
	st = peer_write(&c, buf1 + 200, mr->rkey, 6);
	check(st == -1 && ended(&c) && !memcmp(snap, buf1, 4 * page),
	      "V-MR-7 V-ACC-6 the peer's Write without remote write ends the connection, memory untouched");

	/* Connection 3: remote read taken away. */
	connect_peer(&c);
	check(c.hello.last_event == 1 + IBV_EVENT_QP_ACCESS_ERR,
	      "V-ACC-6 the peer's QP got IBV_EVENT_QP_ACCESS_ERR from the Terminate (%u)",
	      c.hello.last_event);
	fill(buf1 + 200, 9, LEN);
	st = peer_op(&c, CMD_READ, buf1 + 200, mr->rkey, 9);
	check(st == IBV_WC_SUCCESS && c.reply.match,
	      "the peer's RDMA Read of the MR with remote read returns its bytes (status %d)",
	      st);
	ret = rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, LW | RW);
	check(!ret, "rereg from remote read to remote write only (%d)", ret);
	st = peer_op(&c, CMD_READ, buf1 + 200, mr->rkey, 9);
	check(st == -1 && ended(&c),
	      "V-MR-7 the peer's Read without remote read ends the connection");

	/* Connection 4: the MR moved to a PD the QPs do not have. */
	connect_peer(&c);
	check(c.hello.last_status == IBV_WC_REM_ACCESS_ERR &&
	      c.hello.last_event == 1 + IBV_EVENT_QP_ACCESS_ERR,
	      "V-PROT-7 V-CS-1 the peer's refused Read completed with REM_ACCESS_ERR, its QP got QP_ACCESS_ERR (%u, %u)",
	      c.hello.last_status, c.hello.last_event);
	old_key = mr->rkey;
	ret = rereg(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	check(!ret && mr->rkey == old_key, "rereg to the other PD again (%d)",
	      ret);
	memcpy(snap, buf1, 4 * page);
	st = peer_write(&c, buf1 + 200, mr->rkey, 10);
	check(st == -1 && ended(&c) && !memcmp(snap, buf1, 4 * page),
	      "V-MR-7 V-PROT-1 the peer's Write to the MR of another PD than the QP's ends the connection, memory untouched");

	/* Connection 5: a stale key on the right index, locally. */
	connect_peer(&c);
	check(c.hello.last_event == 1 + IBV_EVENT_QP_ACCESS_ERR,
	      "V-PROT-1 the peer's QP got QP_ACCESS_ERR (%u)",
	      c.hello.last_event);
	ret = rereg(mr, IBV_REREG_MR_CHANGE_PD, pd1, NULL, 0, 0);
	check(!ret && mr->rkey == old_key, "rereg back to the QPs' PD (%d)",
	      ret);
	st = local_read(&c, buf1 + 200, LEN,
			(mr->lkey & ~0xffu) | ((mr->lkey + 1) & 0xff));
	check(st == IBV_WC_LOC_PROT_ERR,
	      "V-STAG-5 an RDMA Read into the MR with the right index and another key: LOC_PROT_ERR (status %d)",
	      st);
	teardown(&c);

	/* Connection 6: the lkey replaced by a rereg, locally. */
	connect_peer(&c);
	st = local_read(&c, buf2 + 7, LEN, key0);
	check(st == IBV_WC_LOC_PROT_ERR,
	      "V-PROT-8 an RDMA Read through the lkey replaced by rereg: LOC_PROT_ERR (status %d)",
	      st);
	teardown(&c);

	/* Connection 7: an SGE whose end wraps past 2^64, locally. */
	connect_peer(&c);
	st = local_read(&c, (void *)(uintptr_t)(UINT64_MAX - 99), LEN,
			mr->lkey);
	check(st == IBV_WC_LOC_PROT_ERR,
	      "V-ADDR-9 an RDMA Read into an SGE that wraps past 2^64: LOC_PROT_ERR (status %d)",
	      st);
	teardown(&c);

	/* Connection 8: a rereg that fails leaves the MR Invalid (V-MR-6). */
	connect_peer(&c);
	ret = rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, LW | RW | RR);
	check(!ret, "rereg back to all rights (%d)", ret);
	st = peer_write(&c, buf1 + 200, mr->rkey, 7);
	check(st == IBV_WC_SUCCESS && holds(buf1 + 200, 7, LEN),
	      "the peer writes again (status %d)", st);
	old_key = mr->rkey;
	ret = rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
		    buf1 + 200 + (4L << 40), page, 0);
	check(ret == IBV_REREG_MR_ERR_CMD && errno == EFAULT,
	      "rereg to unmapped memory fails: IBV_REREG_MR_ERR_CMD, EFAULT (%d, %s)",
	      ret, strerror(errno));
	memcpy(snap, buf1, 4 * page);
	st = peer_write(&c, buf1 + 200, old_key, 8);
	check(st == -1 && ended(&c) && !memcmp(snap, buf1, 4 * page),
	      "V-MR-6 the failed rereg left the MR Invalid: the peer's Write ends the connection");

	/* Connection 9: the verdict, and the end. */
	connect_peer(&c);
	check(c.hello.last_event == 1 + IBV_EVENT_QP_ACCESS_ERR,
	      "V-MR-6 the peer's QP got IBV_EVENT_QP_ACCESS_ERR from the Terminate (%u)",
	      c.hello.last_event);
	ret = rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, LW | RW);
	check(!ret && mr->rkey == old_key,
	      "V-MR-5 an Invalid MR can be reregistered: rights alone, same STag (%d)",
	      ret);
	st = peer_write(&c, buf1 + 200, mr->rkey, 11);
	check(st == IBV_WC_SUCCESS && holds(buf1 + 200, 11, LEN),
	      "V-MR-7 the MR is Valid again after the rereg: the peer's Write lands (status %d)",
	      st);
	check(!ibv_dereg_mr(mr), "dereg the MR");

	/* Write rights over pages pinned for reading only: pinned again. */
	mr = ibv_reg_mr(pd1, buf2, 2 * page, RR);
	old_key = mr ? mr->rkey : 0;
	ret = mr ? rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			 LW | RW | RR) : -1;
	check(!ret && (mr->rkey >> 8) != (old_key >> 8),
	      "rereg of a read-only MR to write rights: a new STag 0x%x, was 0x%x (%d)",
	      mr ? mr->rkey : 0, old_key, ret);
	st = mr ? peer_write(&c, buf2, mr->rkey, 12) : -1;
	check(st == IBV_WC_SUCCESS && holds(buf2, 12, LEN),
	      "the peer's Write lands in the MR that was read-only (status %d)",
	      st);
	if (mr)
		ibv_dereg_mr(mr);
	c.cmd.op = CMD_QUIT;
	c.cmd.seed = connections;
	post(&c, 1, &c.cmd, sizeof(c.cmd), c.msg_mr->lkey, IBV_WR_SEND, 0, 0);
	next_wc(&c);
	teardown(&c);
	check(!ibv_dealloc_pd(pd2) && !ibv_dealloc_pd(pd1), "dealloc the PDs");
out:
	return kt_end();
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s peer|owner ADDR PORT\n", argv[0]);
		return 2;
	}
	kt_start();
	page = sysconf(_SC_PAGESIZE);
	kc_ended = ignore_end;
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (!strcmp(argv[1], "peer"))
		return peer(argv[2], argv[3]);
	oaddr = argv[2];
	oport = argv[3];
	return owner();
}
