// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_terminate: the rdma_cm side of terminate.sh. It serves CONNS
 * connections (0: until killed) one after the other; for each it creates a
 * QP, posts receives, accepts, and reports how the connection ended.
 *
 *   kiwi_terminate ADDR PORT CONNS
 *
 * The client's private data "case=NAME recv=N" names the case and how many
 * 4 KiB receives to post (default 2). The server registers, once, four
 * regions filled with a known pattern and advertises them in its MPA Reply
 * ("KIWI", then for each its STag, address and length, big endian):
 *   rw       local write, remote write, remote read (1 MiB; the others
 *            are 64 KiB)
 *   ro       remote read only (no remote write)
 *   wo       remote write only (no remote read)
 *   foreign  all rights, but in another protection domain
 * It accepts with IRD and ORD 1.
 *
 * Words after "recv=N" ask the server to act once the connection is up:
 *   read   post an RDMA Read of 64 bytes from the peer (any STag)
 *   flood  post 8 Sends of 64 KiB, then, a second later, 4 Sends of 64
 *          bytes, and print "posted N slowest_ms=MS": the longest any
 *          ibv_post_send took
 *   close  rdma_disconnect(): a graceful close (SQD)
 * For each asynchronous event on the QP it prints
 *   async EVENT state=STATE rst=N
 * with the QP state and the resets sent so far when the event was read.
 *
 * A received Send "kiwi-send" (the control case) is checked with the
 * region rw, which must start with "kiwi-write", and answered with a Send
 * of "verified" or "mismatch". When the connection is gone it prints
 *   summary case=NAME async=EVENTS flushed=N recv_ok=N state=STATE mem=MEM
 * EVENTS: the QP's asynchronous events (IBV_EVENT_ without the prefix,
 * comma separated) or "none"; flushed: receives completed with
 * IBV_WC_WR_FLUSH_ERR; STATE: the QP state from ibv_query_qp; MEM:
 * "intact" when every region still holds its pattern, "written" when only
 * rw's first bytes hold "kiwi-write", else "corrupt" (the pattern is then
 * restored for the next connection); rst: TCP resets this namespace sent
 * meanwhile (the kiwi device's socket lives here).
 *
 * Cases named local-* fail the server's own QP once established, after a
 * good Send "before" has completed: local-lkey posts a 64 KiB Send whose
 * second SGE has an lkey that names no MR, then a good Send; local-bind a type 2 window bind on
 * an MR without MW_BIND access, then a good Send; local-sqe moves the QP
 * to SQE (the consumer's Terminate); local-bindok binds a type 2 window
 * and invalidates it, then sends "after" (nothing fails); local-quiet
 * does nothing more (its "before" waits for the peer's first FPDU, no RTR
 * negotiated); local-err to ERR (an abortive close,
 * "ERR" in sends=); local-drain closes as kernel consumers do,
 * rdma_disconnect() and at once Modify to ERR (ib_drain_qp()), "ERR" in
 * sends= too; local-sqd posts a 1 MiB Send of region rw, then at
 * once moves the QP to SQD (a graceful close), local-sqe-big the same,
 * but to SQE; local-cqof, whose CQ has one entry,
 * posts 4 signalled Sends "ov" without polling, overflowing the CQ, and
 * local-rcqof, whose CQ has one entry too, sends an unsignalled "go" and
 * waits without polling while the peer's Sends overflow it with receive
 * completions. Their
 * summary ends with sends=STATUSES, the send completions in order (OK,
 * FLUSH, or the error's IBV_WC_ name without the prefix), "SQE" for a
 * modify to SQE that succeeded.
 *
 * These lines are observations terminate.sh judges, not TAP: a probe.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

#define RW_LEN		(1 << 20)	/* big enough to stall a Read */
#define REGION_LEN	(64 << 10)
#define RECV_LEN	4096
#define MAX_RECV	8
#define NREGION		4

static const char wdata[] = "kiwi-write";
static const char sdata[] = "kiwi-send";

/* What every connection uses: protection domains and memory. */
static struct {
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *mr[NREGION];	/* rw, ro, wo, foreign */
	struct ibv_mr *rmr, *smr;
	unsigned char *region[NREGION];
	unsigned char *rbuf, sbuf[64];
	unsigned char pdata[4 + NREGION * 16];
} mem;

/* One connection. */
struct conn {
	struct rdma_cm_id *id;
	struct kp_peer p;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;		/* p's one CQ */
	char name[64];
	int nrecv;
	bool read, flood, close;
	int flushed, recv_ok;
	long rsts;		/* tcp_out_rsts() when accepted */
	char async[256];
	bool local;		/* a local-* case: the server fails its QP */
	char sends[128];	/* its send completions */
};

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 7 + 3);
}

static const char *state_name(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR";
	default: return "unknown";
	}
}

/* "QP_FATAL" for IBV_EVENT_QP_FATAL. */
static const char *event_name(enum ibv_event_type e)
{
	switch (e) {
	case IBV_EVENT_QP_FATAL: return "QP_FATAL";
	case IBV_EVENT_QP_REQ_ERR: return "QP_REQ_ERR";
	case IBV_EVENT_QP_ACCESS_ERR: return "QP_ACCESS_ERR";
	case IBV_EVENT_COMM_EST: return "COMM_EST";
	case IBV_EVENT_SQ_DRAINED: return "SQ_DRAINED";
	case IBV_EVENT_QP_LAST_WQE_REACHED: return "QP_LAST_WQE_REACHED";
	default: return ibv_event_type_str(e);
	}
}

/*
 * TCP resets sent from this network namespace: a connection that ends
 * with a Terminate must close with a FIN (R-TRM-5), sending none.
 */
static long tcp_out_rsts(void)
{
	char names[512], values[512], *n, *v, *sn, *sv;
	FILE *f = fopen("/proc/net/snmp", "r");
	long rsts = -1;

	if (!f)
		return -1;
	while (fgets(names, sizeof(names), f) && fgets(values, sizeof(values), f)) {
		if (strncmp(names, "Tcp:", 4))
			continue;
		n = strtok_r(names, " \n", &sn);
		v = strtok_r(values, " \n", &sv);
		while (n && v && strcmp(n, "OutRsts")) {
			n = strtok_r(NULL, " \n", &sn);
			v = strtok_r(NULL, " \n", &sv);
		}
		if (n && v)
			rsts = atol(v);
	}
	fclose(f);
	return rsts;
}

static size_t region_len(int r)
{
	return r == 0 ? RW_LEN : REGION_LEN;
}

static void mem_fill(void)
{
	size_t i;
	int r;

	for (r = 0; r < NREGION; r++)
		for (i = 0; i < region_len(r); i++)
			mem.region[r][i] = pattern(i);
}

/* Which regions still hold their pattern, or the control case's Write. */
static const char *mem_state(void)
{
	bool written = !memcmp(mem.region[0], wdata, sizeof(wdata) - 1);
	size_t i;
	int r;

	for (r = 0; r < NREGION; r++)
		for (i = r == 0 && written ? sizeof(wdata) - 1 : 0;
		     i < region_len(r); i++)
			if (mem.region[r][i] != pattern(i))
				return "corrupt";
	return written ? "written" : "intact";
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *buf, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, access);

	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

static void post_recv(struct conn *c, int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(mem.rbuf + i * RECV_LEN),
		.length = RECV_LEN,
		.lkey = mem.rmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *badwr;

	if (ibv_post_recv(c->id->qp, &wr, &badwr))
		die("ibv_post_recv");
}

static void reply(struct conn *c, const char *text)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)mem.sbuf,
		.length = strlen(text),
		.lkey = mem.smr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 100, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *badwr;

	memcpy(mem.sbuf, text, strlen(text));
	if (ibv_post_send(c->id->qp, &wr, &badwr))
		die("ibv_post_send");
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Post one unsignalled WR from region rw; return how long the call took. */
static double post_timed(struct conn *c, enum ibv_wr_opcode op, uint64_t id,
			 uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)mem.region[0],
		.length = len,
		.lkey = mem.mr[0]->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
	};
	struct ibv_send_wr *badwr;
	double t = now_ms();

	if (op == IBV_WR_RDMA_READ) {
		wr.wr.rdma.rkey = 0x5eed0001;	/* the peer checks nothing */
		sge.addr = (uintptr_t)mem.rbuf + (MAX_RECV - 1) * RECV_LEN;
		sge.lkey = mem.rmr->lkey;
	}
	if (ibv_post_send(c->id->qp, &wr, &badwr))
		die("ibv_post_send");
	return now_ms() - t;
}

/* What the client asked the server to do once connected. */
static void conn_act(struct conn *c)
{
	double slowest = 0, t;
	int i, n = 0;

	if (c->read)
		post_timed(c, IBV_WR_RDMA_READ, 200, 64);
	if (c->flood) {
		for (i = 0; i < 8; i++, n++) {
			t = post_timed(c, IBV_WR_SEND, 300 + n, 64 << 10);
			slowest = t > slowest ? t : slowest;
		}
		sleep(1);
		for (i = 0; i < 4; i++, n++) {
			t = post_timed(c, IBV_WR_SEND, 300 + n, 64);
			slowest = t > slowest ? t : slowest;
		}
		printf("posted %d slowest_ms=%.0f\n", n, slowest);
	}
	if (c->close && rdma_disconnect(c->id))
		die("rdma_disconnect");
}

/* Protection domains and the advertised regions, for all connections. */
static void mem_init(struct ibv_context *ctx)
{
	/* rw grants remote atomic too, for the RFC 7306 cases. */
	static const int access[NREGION] = {
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ,
	};
	unsigned char *d = mem.pdata + 4;
	int r;

	mem.pd = ibv_alloc_pd(ctx);
	mem.pd2 = ibv_alloc_pd(ctx);
	if (!mem.pd || !mem.pd2)
		die("ibv_alloc_pd");
	memcpy(mem.pdata, "KIWI", 4);
	for (r = 0; r < NREGION; r++, d += 16) {
		mem.region[r] = malloc(region_len(r));
		if (!mem.region[r])
			die("malloc");
		mem.mr[r] = reg(r == 3 ? mem.pd2 : mem.pd, mem.region[r],
				region_len(r), access[r]);
		*(uint32_t *)d = htobe32(mem.mr[r]->rkey);
		*(uint64_t *)(d + 4) = htobe64((uintptr_t)mem.region[r]);
		*(uint32_t *)(d + 12) = htobe32(region_len(r));
	}
	mem_fill();
	mem.rbuf = calloc(MAX_RECV, RECV_LEN);
	if (!mem.rbuf)
		die("calloc");
	mem.rmr = reg(mem.pd, mem.rbuf, MAX_RECV * RECV_LEN,
		      IBV_ACCESS_LOCAL_WRITE);
	mem.smr = reg(mem.pd, mem.sbuf, sizeof(mem.sbuf), 0);
}

/* Set up a QP for a connection request and accept it. */
static void conn_accept(struct conn *c, struct rdma_cm_event *ev)
{
	struct kp_caps caps = {
		.pd = mem.pd, .send_wr = 16, .recv_wr = MAX_RECV,
		.send_sge = 2, .recv_sge = 1,
	};
	struct rdma_conn_param param = kc_param(1, 1, mem.pdata,
						sizeof(mem.pdata));
	const char *pd = ev->param.conn.private_data;
	int pdlen = ev->param.conn.private_data_len;
	int r;

	c->id = ev->id;
	c->nrecv = 2;
	snprintf(c->name, sizeof(c->name), "unnamed");
	if (pdlen > 0 && pdlen < 128) {
		char text[128];

		memcpy(text, pd, pdlen);
		text[pdlen] = 0;
		if (sscanf(text, "case=%63s recv=%d", c->name, &c->nrecv) < 1)
			snprintf(c->name, sizeof(c->name), "unnamed");
		c->read = strstr(text, " read");
		c->flood = strstr(text, " flood");
		c->close = strstr(text, " close");
	}
	if (c->nrecv < 0 || c->nrecv > MAX_RECV)
		c->nrecv = 2;
	printf("request case=%s recv=%d\n", c->name, c->nrecv);

	c->ch = ibv_create_comp_channel(c->id->verbs);
	if (!c->ch)
		die("ibv_create_comp_channel");
	c->local = !strncmp(c->name, "local-", 6);
	caps.chan = c->ch;
	caps.cqe = strcmp(c->name, "local-cqof") &&
		   strcmp(c->name, "local-rcqof") ? 32 : 1;
	kp_open_or_die(&c->p, c->id, &caps);
	c->cq = c->p.scq;
	if (ibv_req_notify_cq(c->cq, 0))
		die("ibv_req_notify_cq");
	for (r = 0; r < c->nrecv; r++)
		post_recv(c, r);
	c->rsts = tcp_out_rsts();
	if (rdma_accept(c->id, &param))
		die("rdma_accept");
}

/* "LOC_PROT_ERR" for IBV_WC_LOC_PROT_ERR, for the local-* summaries. */
static const char *wc_name(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return "OK";
	case IBV_WC_WR_FLUSH_ERR: return "FLUSH";
	case IBV_WC_LOC_PROT_ERR: return "LOC_PROT_ERR";
	case IBV_WC_LOC_QP_OP_ERR: return "LOC_QP_OP_ERR";
	case IBV_WC_LOC_LEN_ERR: return "LOC_LEN_ERR";
	case IBV_WC_MW_BIND_ERR: return "MW_BIND_ERR";
	default: return "OTHER";
	}
}

static void note_send(struct conn *c, const char *what)
{
	size_t n = strlen(c->sends);

	snprintf(c->sends + n, sizeof(c->sends) - n, "%s%s", n ? "," : "",
		 what);
}

static void conn_poll_cq(struct conn *c)
{
	struct ibv_wc wc;

	while (ibv_poll_cq(c->cq, 1, &wc) == 1) {
		if (c->local && wc.opcode != IBV_WC_RECV && wc.wr_id >= MAX_RECV)
			note_send(c, wc_name(wc.status));
		if (wc.status == IBV_WC_WR_FLUSH_ERR) {
			if (wc.opcode == IBV_WC_RECV || wc.wr_id < MAX_RECV)
				c->flushed++;
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			printf("completion wr_id=%llu status=%s\n",
			       (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status));
			continue;
		}
		if (wc.opcode != IBV_WC_RECV)
			continue;
		c->recv_ok++;
		printf("recv len=%u data=%.*s\n", wc.byte_len,
		       (int)(wc.byte_len < 32 ? wc.byte_len : 32),
		       mem.rbuf + wc.wr_id * RECV_LEN);
		/* R-ORD-10: the Write before this Send has been placed. */
		if (wc.byte_len == sizeof(sdata) - 1 &&
		    !memcmp(mem.rbuf + wc.wr_id * RECV_LEN, sdata, wc.byte_len))
			reply(c, !memcmp(mem.region[0], wdata, sizeof(wdata) - 1) ?
			      "verified" : "mismatch");
	}
}

/* Post a Send of @text (at most 8 bytes) with @lkey, signalled if @sig. */
static int send_text_sig(struct conn *c, uint64_t wr_id, const char *text,
			 uint32_t lkey, bool sig)
{
	unsigned char *at = mem.sbuf + 8 * (wr_id % 8);
	struct ibv_sge sge = { (uintptr_t)at, strlen(text), lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = sig ? IBV_SEND_SIGNALED : 0,
	};
	struct ibv_send_wr *badwr;

	memcpy(at, text, strlen(text));
	return ibv_post_send(c->id->qp, &wr, &badwr);
}

static int send_text(struct conn *c, uint64_t wr_id, const char *text,
		     uint32_t lkey)
{
	return send_text_sig(c, wr_id, text, lkey, true);
}

/* Poll until @n send completions are noted, for up to about 10 s. */
static void wait_sends(struct conn *c, int n)
{
	for (int i = 0; i < 10000; i++) {
		int got = c->sends[0] ? 1 : 0;

		for (const char *p = c->sends; *p; p++)
			got += *p == ',';
		if (got >= n)
			return;
		conn_poll_cq(c);
		poll(NULL, 0, 1);
	}
}

static enum ibv_qp_state qp_state(struct conn *c)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(c->id->qp, &attr, IBV_QP_STATE, &init))
		return IBV_QPS_UNKNOWN;
	return attr.qp_state;
}

/* A local-* case: a good Send, then fail the QP (see the top). */
static void local_case(struct conn *c)
{
	uint32_t lkey = mem.smr->lkey;

	if (send_text(c, 100, "before", lkey))
		die("ibv_post_send");
	wait_sends(c, 1);
	if (!strcmp(c->name, "local-lkey")) {
		/* Many FPDUs long, but not one of them may go out. */
		struct ibv_sge sge[2] = {
			{ (uintptr_t)mem.region[0], REGION_LEN, mem.mr[0]->lkey },
			{ (uintptr_t)mem.sbuf, 8, lkey ^ 0x80000000 },
		};
		struct ibv_send_wr wr = {
			.wr_id = 101, .sg_list = sge, .num_sge = 2,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *badwr;

		if (ibv_post_send(c->id->qp, &wr, &badwr) ||
		    send_text(c, 102, "after", lkey))
			die("ibv_post_send");
	} else if (!strcmp(c->name, "local-sqe")) {
		struct ibv_qp_attr attr = { .qp_state = IBV_QPS_SQE };
		enum ibv_qp_state st;

		if (!ibv_modify_qp(c->id->qp, &attr, IBV_QP_STATE)) {
			/* ERR follows as soon as the connection closes */
			st = qp_state(c);
			note_send(c, st == IBV_QPS_SQE || st == IBV_QPS_ERR ?
				  "SQE" : "SQE-then-other");
		}
	} else if (!strncmp(c->name, "local-bind", 10)) {
		/*
		 * local-bind: on an MR without MW_BIND, refused; local-bindok
		 * (V-WR-9): a good bind, a Local Invalidate, then a Send.
		 */
		bool ok = !strcmp(c->name, "local-bindok");
		struct ibv_mr *mr = !ok ? mem.smr :
			reg(mem.pd, mem.sbuf, sizeof(mem.sbuf),
			    IBV_ACCESS_MW_BIND | IBV_ACCESS_LOCAL_WRITE);
		struct ibv_mw *mw = ibv_alloc_mw(mem.pd, IBV_MW_TYPE_2);
		struct ibv_send_wr wr = {
			.wr_id = 101, .opcode = IBV_WR_BIND_MW,
			.send_flags = IBV_SEND_SIGNALED,
		}, inv = {
			.wr_id = 102, .opcode = IBV_WR_LOCAL_INV,
			.send_flags = IBV_SEND_SIGNALED,
		}, *badwr;

		if (!mw)
			die("ibv_alloc_mw");
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
		wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
			mr, (uintptr_t)mem.sbuf, 8, IBV_ACCESS_REMOTE_READ };
		inv.invalidate_rkey = wr.bind_mw.rkey;
		if (ibv_post_send(c->id->qp, &wr, &badwr) ||
		    (ok && ibv_post_send(c->id->qp, &inv, &badwr)) ||
		    send_text(c, ok ? 103 : 102, "after", lkey))
			die("ibv_post_send");
		wait_sends(c, ok ? 4 : 3);
		ibv_dealloc_mw(mw);
		if (ok)
			ibv_dereg_mr(mr);
	} else if (!strcmp(c->name, "local-err")) {
		struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

		if (!ibv_modify_qp(c->id->qp, &attr, IBV_QP_STATE))
			note_send(c, qp_state(c) == IBV_QPS_ERR ? "ERR" :
				  "ERR-then-other");
	} else if (!strcmp(c->name, "local-drain")) {
		struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

		if (rdma_disconnect(c->id))
			note_send(c, "DISCONNECT-refused");
		else if (!ibv_modify_qp(c->id->qp, &attr, IBV_QP_STATE))
			note_send(c, qp_state(c) == IBV_QPS_ERR ? "ERR" :
				  "ERR-then-other");
	} else if (!strcmp(c->name, "local-sqd") ||
		   !strcmp(c->name, "local-sqe-big")) {
		/* SQD: the whole 1 MiB Send goes out before the FIN. */
		struct ibv_sge sge = {
			(uintptr_t)mem.region[0], RW_LEN, mem.mr[0]->lkey
		};
		struct ibv_send_wr wr = {
			.wr_id = 101, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *badwr;
		struct ibv_qp_attr attr = {
			.qp_state = c->name[6] == 's' && c->name[8] == 'd' ?
				    IBV_QPS_SQD : IBV_QPS_SQE,
		};

		if (ibv_post_send(c->id->qp, &wr, &badwr))
			note_send(c, "POST-refused");
		else if (ibv_modify_qp(c->id->qp, &attr, IBV_QP_STATE))
			note_send(c, "MODIFY-refused");
		else if (attr.qp_state == IBV_QPS_SQE)
			note_send(c, "SQE");
	} else if (!strcmp(c->name, "local-cqof") ||
		   !strcmp(c->name, "local-rcqof")) {
		for (int i = 0; i < 4 && !strcmp(c->name, "local-cqof"); i++)
			if (send_text(c, 101 + i, "ov", lkey))
				break;
		/* The CQ is empty: the peer may send (no completion). */
		if (!strcmp(c->name, "local-rcqof") &&
		    send_text_sig(c, 101, "go", lkey, false))
			die("ibv_post_send");
		/* No polling until the QP has failed: the CQ overflows. */
		for (int i = 0; i < 10000 && qp_state(c) != IBV_QPS_ERR; i++)
			poll(NULL, 0, 1);
	}
}

static void conn_cq_event(struct conn *c)
{
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(c->ch, &cq, &ctx))
		die("ibv_get_cq_event");
	ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(cq, 0))
		die("ibv_req_notify_cq");
	conn_poll_cq(c);
}

/* Drain the device's asynchronous events; note those of our QP. */
static void async_events(struct ibv_context *ctx, struct conn *c)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(ctx, &ev)) {
		if (c && c->id && ev.element.qp == c->id->qp) {
			size_t n = strlen(c->async);
			struct ibv_qp_init_attr init;
			struct ibv_qp_attr attr;

			if (!ibv_query_qp(c->id->qp, &attr, IBV_QP_STATE, &init))
				printf("async %s state=%s rst=%ld\n",
				       event_name(ev.event_type),
				       state_name(attr.qp_state),
				       tcp_out_rsts() - c->rsts);

			snprintf(c->async + n, sizeof(c->async) - n, "%s%s",
				 n ? "," : "", event_name(ev.event_type));
		} else {
			printf("async %s (not our QP)\n",
			       event_name(ev.event_type));
		}
		ibv_ack_async_event(&ev);
	}
}

static void conn_end(struct conn *c)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	const char *state = "unknown", *m;

	async_events(c->id->verbs, c);
	conn_poll_cq(c);
	if (!ibv_query_qp(c->id->qp, &attr, IBV_QP_STATE, &init))
		state = state_name(attr.qp_state);
	m = mem_state();
	printf("summary case=%s async=%s flushed=%d recv_ok=%d state=%s mem=%s rst=%ld%s%s\n",
	       c->name, c->async[0] ? c->async : "none", c->flushed,
	       c->recv_ok, state, m, tcp_out_rsts() - c->rsts,
	       c->local ? " sends=" : "", c->local ? c->sends : "");
	if (strcmp(m, "intact"))
		mem_fill();
	kp_close(&c->p);
	ibv_destroy_comp_channel(c->ch);
	rdma_destroy_id(c->id);
	memset(c, 0, sizeof(*c));
}

static void nonblock(int fd)
{
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		die("fcntl");
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ech;
	struct ibv_context *ctx = NULL;
	struct rdma_cm_id *lid;
	struct conn c = { 0 };
	int conns, done = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: kiwi_terminate ADDR PORT CONNS\n");
		return 2;
	}
	conns = atoi(argv[3]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ech = rdma_create_event_channel();
	if (!ech)
		die("rdma_create_event_channel");
	lid = kc_listen_or_die(ech, argv[1], argv[2], 8);
	ctx = lid->verbs;
	if (!ctx)
		die("the listener is bound to no device");
	nonblock(ech->fd);
	nonblock(ctx->async_fd);
	mem_init(ctx);
	printf("listening\n");

	while (!conns || done < conns) {
		struct pollfd pfd[3] = {
			{ .fd = ech->fd, .events = POLLIN },
			{ .fd = ctx->async_fd, .events = POLLIN },
			{ .fd = c.ch ? c.ch->fd : -1, .events = POLLIN },
		};
		struct rdma_cm_event *ev;

		if (poll(pfd, 3, -1) < 0 && errno != EINTR)
			die("poll");
		if (pfd[1].revents)
			async_events(ctx, c.id ? &c : NULL);
		if (pfd[2].revents)
			conn_cq_event(&c);
		if (!pfd[0].revents)
			continue;
		while (!rdma_get_cm_event(ech, &ev)) {
			enum rdma_cm_event_type type = ev->event;

			if (type == RDMA_CM_EVENT_CONNECT_REQUEST && !c.id) {
				conn_accept(&c, ev);
			} else if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
				/* One at a time: the next client retries. */
				rdma_reject(ev->id, NULL, 0);
			} else if (type == RDMA_CM_EVENT_ESTABLISHED) {
				printf("established case=%s\n", c.name);
				if (c.local)
					local_case(&c);
				conn_act(&c);
			} else if (c.id && ev->id == c.id &&
				   (type == RDMA_CM_EVENT_DISCONNECTED ||
				    type == RDMA_CM_EVENT_CONNECT_ERROR ||
				    type == RDMA_CM_EVENT_UNREACHABLE)) {
				if (type != RDMA_CM_EVENT_DISCONNECTED)
					printf("event %s status=%d\n",
					       rdma_event_str(type), ev->status);
				rdma_ack_cm_event(ev);
				conn_end(&c);
				done++;
				continue;
			} else {
				printf("event %s status=%d\n",
				       rdma_event_str(type), ev->status);
			}
			rdma_ack_cm_event(ev);
		}
	}
	for (int r = 0; r < NREGION; r++) {
		ibv_dereg_mr(mem.mr[r]);
		free(mem.region[r]);
	}
	ibv_dereg_mr(mem.rmr);
	ibv_dereg_mr(mem.smr);
	free(mem.rbuf);
	ibv_dealloc_pd(mem.pd);
	ibv_dealloc_pd(mem.pd2);
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ech);
	return 0;
}
