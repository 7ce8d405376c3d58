// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_atomic: RFC 7306 atomics and immediate data between two kiwi
 * devices, with the data checked. Prints TAP.
 *
 *   kiwi_atomic server ADDR PORT
 *   kiwi_atomic client ADDR PORT
 *   kiwi_atomic noext ADDR PORT
 *
 * The server exports one buffer to every connection: its first page
 * (remote atomic granted) through one MR, the next page through a second
 * MR without remote atomic. Each connection's private data names what it
 * is for:
 *
 * DATA: FetchAdd returns the old value and adds; CmpSwap swaps only on
 * equal (both with ibv_post_send and with the ibv_wr_* builders); an RDMA
 * Write with Immediate (plain and solicited) and a Send with Immediate
 * arrive at the server, which checks opcode, flags, imm_data, byte count,
 * the data, and that each took exactly one receive WQE.
 * SUM: CONNS connections at once, each PER_CONN FetchAdds of 1 on the same
 * 8 bytes, as many in flight as the ORD allows: the total is exact and
 * the old values returned are each value from 0 to the total once.
 * BAD_*: one misused atomic, which the server answers with a Terminate:
 * the atomic completes with the verbs' status, the QP goes to ERR. A
 * local buffer of other than 8 bytes is refused when posted.
 *
 * noext: the server runs on a device without RFC 7306 (siw): a FetchAdd
 * sent to it, and an RDMA Write with Immediate, each end the connection
 * with the peer's Terminate: the QP in ERR, QP_FATAL. siw's Terminate
 * has the Layer and EType nibbles and the M, D, R bits in the wrong
 * order (C bitfields), so it names no request kiwi could match: the
 * FetchAdd is flushed (IBV_WC_WR_FLUSH_ERR) rather than failed with
 * IBV_WC_REM_INV_REQ_ERR, which a conformant peer's Terminate gives.
 */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

#define BUF_SIZE	(64 * 1024)
#define ATOMIC_LEN	4096		/* server: the first page, atomics ok */
#define FA_OFF		0		/* server: FetchAdd target */
#define CS_OFF		8		/* server: CmpSwap target */
#define SUM_OFF		64		/* server: the SUM connections' counter */
#define WR_OFF		128		/* server: ibv_wr_* target */
#define W_OFF		(16 * 1024)	/* server: Write with Immediate lands */
#define RECV_OFF	(32 * 1024)	/* server: receive slots */
#define SLOT		1024
#define NRECV		8
#define W_LEN		4096
#define S_LEN		100
#define CONNS		4
#define PER_CONN	500
#define ORD		16
#define ACCESS		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)

enum mode {
	DATA, SUM, BAD_ALIGN, BAD_ACCESS, BAD_STAG, BAD_BOUNDS, PEER, END,
};

static const char *const mode_name[] = {
	"DATA", "SUM", "BAD_ALIGN", "BAD_ACCESS", "BAD_STAG", "BAD_BOUNDS",
	"PEER", "END",
};

/* The server's answer in the accept's private data. */
struct info {
	uint64_t addr;		/* the buffer */
	uint32_t rkey;		/* its first page, with remote atomic */
	uint32_t rkey_noat;	/* the page after, without */
};

/* ---- server ---- */

struct sconn {
	struct rdma_cm_id *id;
	struct kp_peer p;
	enum mode mode;
	int slot;
};

static struct ibv_pd *spd;
static uint8_t *sbuf;
static struct ibv_mr *smr, *smr_noat;

static int recv_slot(struct sconn *c, int i)
{
	return kp_post_recv(c->p.qp, i, sbuf + RECV_OFF + i * SLOT, SLOT,
			    smr_noat->lkey);
}

/* DATA: what the client's immediate data did here. */
static void check_imm(struct sconn *c)
{
	struct ibv_wc wc[NRECV];
	int n;

	n = kp_poll(c->p.rcq, wc, 3, 5000);
	check(n == 3, "server: 3 receive completions (got %d)", n);
	if (n < 3)
		return;
	check(wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 0 &&
	      wc[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      (wc[0].wc_flags & IBV_WC_WITH_IMM) &&
	      wc[0].imm_data == htobe32(0x12345678) && wc[0].byte_len == W_LEN,
	      "server: Write with Immediate: RECV_RDMA_WITH_IMM, WITH_IMM, imm_data 0x12345678, byte_len %u (status %d, opcode %d, flags 0x%x, imm 0x%x)",
	      wc[0].byte_len, wc[0].status, wc[0].opcode, wc[0].wc_flags,
	      be32toh(wc[0].imm_data));
	check(!kt_differs(sbuf + W_OFF, W_LEN, 11, 0),
	      "server: the Write with Immediate's %d bytes are intact", W_LEN);
	check(wc[1].status == IBV_WC_SUCCESS && wc[1].wr_id == 1 &&
	      wc[1].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      (wc[1].wc_flags & IBV_WC_WITH_IMM) &&
	      wc[1].imm_data == htobe32(0xfeedf00d),
	      "server: the solicited Write with Immediate: imm_data 0xfeedf00d, its own WQE");
	check(wc[2].status == IBV_WC_SUCCESS && wc[2].wr_id == 2 &&
	      wc[2].opcode == IBV_WC_RECV &&
	      (wc[2].wc_flags & IBV_WC_WITH_IMM) &&
	      wc[2].imm_data == htobe32(0xcafebabe) && wc[2].byte_len == S_LEN,
	      "server: Send with Immediate: RECV, WITH_IMM, imm_data 0xcafebabe, byte_len %u in one WQE (wr_id %llu, flags 0x%x)",
	      wc[2].byte_len, (unsigned long long)wc[2].wr_id, wc[2].wc_flags);
	check(!kt_differs(sbuf + RECV_OFF + 2 * SLOT, S_LEN, 12, 0),
	      "server: the Send with Immediate's %d bytes are intact", S_LEN);
	/* The disconnect flushes the other 5, in order: none was used. */
	n = kp_poll(c->p.rcq, wc, NRECV, 5000);
	check(n == NRECV - 3 && wc[0].wr_id == 3 &&
	      wc[0].status == IBV_WC_WR_FLUSH_ERR &&
	      wc[n - 1].status == IBV_WC_WR_FLUSH_ERR,
	      "server: the other %d receive WQEs are flushed at the end, from wr_id 3 on (got %d)",
	      NRECV - 3, n);
}

static struct sconn *sconn_open(struct rdma_cm_id *id, enum mode mode)
{
	struct kp_caps caps = {
		.pd = spd, .send_wr = 4, .recv_wr = NRECV, .send_sge = 1,
		.recv_sge = 1, .cqe = 64,
	};
	struct info in = {
		.addr = (uintptr_t)sbuf, .rkey = smr->rkey,
		.rkey_noat = smr_noat->rkey,
	};
	struct rdma_conn_param cp = kc_param(ORD, ORD, &in, sizeof(in));
	struct sconn *c = calloc(1, sizeof(*c));
	int i;

	if (!c)
		die("calloc");
	c->id = id;
	c->mode = mode;
	kp_open_or_die(&c->p, id, &caps);
	for (i = 0; i < NRECV; i++)
		if (recv_slot(c, i))
			die("post_recv");
	if (rdma_accept(id, &cp))
		die("rdma_accept");
	return c;
}

static int server(const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sconn *conns[64] = { 0 };
	struct rdma_cm_id *listen;
	int live = 0, total = 0, i;
	uint64_t sum;
	bool end = false;

	listen = kc_listen_or_die(ch, addr, port, 16);
	while (!end || live) {
		struct rdma_cm_event *ev = kc_next(ch, 60000);
		enum rdma_cm_event_type type;
		struct rdma_cm_id *id;
		enum mode mode = END;

		if (!ev)
			die("no rdma_cm event for 60 s (%d connections live)",
			    live);
		type = ev->event;
		id = ev->id;
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    ev->param.conn.private_data_len >= sizeof(mode))
			memcpy(&mode, ev->param.conn.private_data, sizeof(mode));
		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if (!spd) {
				spd = ibv_alloc_pd(id->verbs);
				sbuf = aligned_alloc(4096, BUF_SIZE);
				if (!spd || !sbuf)
					die("server buffer");
				memset(sbuf, 0, BUF_SIZE);
				smr = ibv_reg_mr(spd, sbuf, ATOMIC_LEN, ACCESS |
						 IBV_ACCESS_REMOTE_ATOMIC);
				smr_noat = ibv_reg_mr(spd, sbuf + ATOMIC_LEN,
						      BUF_SIZE - ATOMIC_LEN,
						      ACCESS);
				if (!smr || !smr_noat)
					die("server MRs");
				/* the DATA targets' first values */
				*(uint64_t *)(sbuf + FA_OFF) = 1000;
				*(uint64_t *)(sbuf + CS_OFF) = 0x1111;
			}
			if (mode == END) {
				rdma_reject(id, NULL, 0);
				end = true;
				break;
			}
			for (i = 0; conns[i]; i++)
				;
			conns[i] = sconn_open(id, mode);
			live++;
			total++;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			for (i = 0; i < 64 && (!conns[i] || conns[i]->id != id);
			     i++)
				;
			if (i == 64)
				break;
			if (conns[i]->mode == DATA)
				check_imm(conns[i]);
			kp_close(&conns[i]->p);
			rdma_destroy_id(id);
			free(conns[i]);
			conns[i] = NULL;
			live--;
			break;
		default:
			break;
		}
	}
	sum = *(volatile uint64_t *)(sbuf + SUM_OFF);
	check(total < CONNS || sum == (uint64_t)CONNS * PER_CONN,
	      "server: the shared counter is %llu after %d x %d FetchAdds of 1",
	      (unsigned long long)sum, CONNS, PER_CONN);
	note("server: %d connections served", total);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(smr_noat);
	ibv_dealloc_pd(spd);
	free(sbuf);
	rdma_destroy_id(listen);
	rdma_destroy_event_channel(ch);
	return kt_end();
}

/* ---- client ---- */

struct cconn {
	struct rdma_cm_id *id;
	struct kp_peer p;
	struct info in;
};

static void cconn_open(struct rdma_event_channel *ch, const char *addr,
		       const char *port, enum mode mode, struct cconn *c)
{
	struct kp_caps caps = {
		.send_wr = 64, .recv_wr = 2, .send_sge = 2, .recv_sge = 1,
		.cqe = 128, .buf_len = BUF_SIZE, .access = ACCESS,
		.send_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ |
			    IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			    IBV_QP_EX_WITH_SEND_WITH_IMM |
			    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
	};
	struct rdma_conn_param cp = kc_param(ORD, ORD, &mode, sizeof(mode));

	memset(c, 0, sizeof(*c));
	c->id = kc_resolve_or_die(ch, addr, port);
	kp_open_or_die(&c->p, c->id, &caps);
	kc_connect_or_die(ch, c->id, &cp, &c->in, sizeof(c->in));
}

static void cconn_close(struct rdma_event_channel *ch, struct cconn *c)
{
	kc_disconnect(ch, c->id, 5000);
	kp_close(&c->p);
	rdma_destroy_id(c->id);
}

/*
 * Two points, each named "@who: ...": @c's QP is in ERR within @ms
 * (@err_point), and its async event is @event (@event_name).
 */
static void qp_fails(struct cconn *c, int ms, const char *who,
		     const char *err_point, enum ibv_event_type event,
		     const char *event_name)
{
	struct ibv_async_event ev;
	bool got;

	check(kp_wait_state(c->p.qp, IBV_QPS_ERR, ms) == IBV_QPS_ERR,
	      "%s: %s", who, err_point);
	got = kp_async(c->p.ctx, &ev, 5000);
	check(got && ev.event_type == event, "%s: async event %s (got %s)",
	      who, event_name, got ? ibv_event_type_str(ev.event_type) : "none");
}

static int post_atomic(struct cconn *c, uint64_t wr_id, enum ibv_wr_opcode op,
		       uint64_t raddr, uint32_t rkey, uint64_t compare_add,
		       uint64_t swap, size_t local_off, uint32_t local_len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->p.buf + local_off, .length = local_len,
		.lkey = c->p.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(c->p.qp, &wr, &bad);
}

static int post_imm(struct cconn *c, uint64_t wr_id, enum ibv_wr_opcode op,
		    unsigned int flags, size_t local_off, uint32_t len,
		    size_t roff, uint32_t imm)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->p.buf + local_off, .length = len,
		.lkey = c->p.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED | flags,
		.imm_data = htobe32(imm),
	}, *bad;

	wr.wr.rdma.remote_addr = c->in.addr + roff;
	wr.wr.rdma.rkey = c->in.rkey_noat;	/* W_OFF lies beyond page 1 */
	return ibv_post_send(c->p.qp, &wr, &bad);
}

/* One atomic to completion: its status, the original value in *@old. */
static int atomic1(struct cconn *c, enum ibv_wr_opcode op, size_t roff,
		   uint64_t compare_add, uint64_t swap, uint64_t *old,
		   enum ibv_wc_opcode *wop)
{
	struct ibv_wc wc;

	*(uint64_t *)(c->p.buf + 8) = 0xdeaddeaddeaddeadull;
	if (post_atomic(c, 1, op, c->in.addr + roff, c->in.rkey, compare_add,
			swap, 8, 8))
		return -1;
	if (kp_poll(c->p.scq, &wc, 1, 5000) != 1)
		return -2;
	*old = *(uint64_t *)(c->p.buf + 8);
	if (wop)
		*wop = wc.opcode;
	return wc.byte_len == 8 || wc.status ? (int)wc.status : -3;
}

/* The server's 8 bytes at @roff, by an RDMA Read. */
static uint64_t read8(struct cconn *c, size_t roff)
{
	struct ibv_wc wc;

	*(uint64_t *)(c->p.buf + 16) = 0;
	if (kp_post_send(c->p.qp, 2, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED,
			 c->p.buf + 16, 8, c->p.mr->lkey, c->in.addr + roff,
			 c->in.rkey) ||
	    kp_poll(c->p.scq, &wc, 1, 5000) != 1 || wc.status)
		return ~0ull;
	return *(uint64_t *)(c->p.buf + 16);
}

static void client_data(struct rdma_event_channel *ch, const char *addr,
			const char *port)
{
	struct ibv_qp_ex *x;
	enum ibv_wc_opcode wop;
	struct cconn c;
	struct ibv_wc wc;
	uint64_t old;
	int st, n;

	cconn_open(ch, addr, port, DATA, &c);
	st = atomic1(&c, IBV_WR_ATOMIC_FETCH_AND_ADD, FA_OFF, 5, 0, &old, &wop);
	check(!st && old == 1000 && wop == IBV_WC_FETCH_ADD,
	      "FetchAdd 5 returns the old value 1000 (status %d, got %llu, opcode %d)",
	      st, (unsigned long long)old, wop);
	st = atomic1(&c, IBV_WR_ATOMIC_FETCH_AND_ADD, FA_OFF, 7, 0, &old, NULL);
	check(!st && old == 1005, "FetchAdd 7 then returns 1005 (got %llu)",
	      (unsigned long long)old);
	old = read8(&c, FA_OFF);
	check(old == 1012, "an RDMA Read finds 1012 (got %llu)",
	      (unsigned long long)old);
	st = atomic1(&c, IBV_WR_ATOMIC_FETCH_AND_ADD, FA_OFF, -1012ull, 0, &old,
		     NULL);
	check(!st && old == 1012 && read8(&c, FA_OFF) == 0,
	      "FetchAdd wraps modulo 2^64: adding -1012 leaves 0");

	st = atomic1(&c, IBV_WR_ATOMIC_CMP_AND_SWP, CS_OFF, 0x2222, 9, &old,
		     &wop);
	check(!st && old == 0x1111 && wop == IBV_WC_COMP_SWAP &&
	      read8(&c, CS_OFF) == 0x1111,
	      "CmpSwap with an unequal compare returns 0x1111 and swaps nothing (got 0x%llx)",
	      (unsigned long long)old);
	st = atomic1(&c, IBV_WR_ATOMIC_CMP_AND_SWP, CS_OFF, 0x1111,
		     0x0123456789abcdefull, &old, NULL);
	check(!st && old == 0x1111 &&
	      read8(&c, CS_OFF) == 0x0123456789abcdefull,
	      "CmpSwap with an equal compare returns 0x1111 and swaps in 0x0123456789abcdef");

	/* The same through the ibv_wr_* builders. */
	x = ibv_qp_to_qp_ex(c.p.qp);
	if (x) {
		*(uint64_t *)(c.p.buf + 24) = 0;
		*(uint64_t *)(c.p.buf + 32) = 0;
		ibv_wr_start(x);
		x->wr_id = 10;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_fetch_add(x, c.in.rkey, c.in.addr + WR_OFF, 3);
		ibv_wr_set_sge(x, c.p.mr->lkey, (uintptr_t)c.p.buf + 24, 8);
		x->wr_id = 11;
		ibv_wr_atomic_cmp_swp(x, c.in.rkey, c.in.addr + WR_OFF, 3, 77);
		ibv_wr_set_sge(x, c.p.mr->lkey, (uintptr_t)c.p.buf + 32, 8);
		st = ibv_wr_complete(x);
		n = st ? 0 : kp_poll(c.p.scq, &wc, 1, 5000) +
			     kp_poll(c.p.scq, &wc, 1, 5000);
		check(!st && n == 2 && *(uint64_t *)(c.p.buf + 24) == 0 &&
		      *(uint64_t *)(c.p.buf + 32) == 3 &&
		      read8(&c, WR_OFF) == 77,
		      "ibv_wr_atomic_fetch_add 3 then ibv_wr_atomic_cmp_swp 3 -> 77: old values 0 and 3, 77 stays");
	} else {
		skip("ibv_wr_* atomics: the QP has no ibv_qp_ex");
	}

	/* Immediate data: the server checks what arrives. */
	kt_fill(c.p.buf + 4096, W_LEN, 11, 0);
	kt_fill(c.p.buf + 8192, S_LEN, 12, 0);
	check(!post_imm(&c, 3, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 4096, W_LEN,
			W_OFF, 0x12345678) &&
	      !post_imm(&c, 4, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_SEND_SOLICITED,
			4096, 0, W_OFF, 0xfeedf00d) &&
	      !post_imm(&c, 5, IBV_WR_SEND_WITH_IMM, 0, 8192, S_LEN, 0,
			0xcafebabe),
	      "posted: a Write with Immediate of %d bytes, a solicited zero-length one, a Send with Immediate of %d bytes",
	      W_LEN, S_LEN);
	for (n = 0; n < 3; n++) {
		static const enum ibv_wc_opcode op[] = {
			IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE, IBV_WC_SEND,
		};

		if (kp_poll(c.p.scq, &wc, 1, 5000) != 1 || wc.status ||
		    wc.wr_id != (uint64_t)n + 3 || wc.opcode != op[n])
			break;
	}
	check(n == 3, "they complete in order as RDMA_WRITE, RDMA_WRITE, SEND");
	/* an atomic's local buffer is 8 bytes */
	check(post_atomic(&c, 6, IBV_WR_ATOMIC_FETCH_AND_ADD,
			  c.in.addr + FA_OFF, c.in.rkey, 1, 0, 8, 16) == EINVAL,
	      "an atomic into 16 local bytes (not 8) is refused with EINVAL");
	check(kp_qp_state(c.p.qp) == IBV_QPS_RTS, "the QP is still RTS");
	cconn_close(ch, &c);
}

static void client_sum(struct rdma_event_channel *ch, const char *addr,
		       const char *port)
{
	static uint8_t seen[CONNS * PER_CONN];
	struct cconn c[CONNS];
	int posted[CONNS] = { 0 }, done[CONNS] = { 0 };
	int i, k, left = CONNS * PER_CONN, errors = 0, dups = 0;
	double t0;
	uint64_t v;

	for (i = 0; i < CONNS; i++)
		cconn_open(ch, addr, port, SUM, &c[i]);
	t0 = now();
	while (left && now() - t0 < 60) {
		for (i = 0; i < CONNS; i++) {
			struct ibv_wc wc[ORD];
			int n;

			/* as many in flight as the ORD allows */
			while (posted[i] < PER_CONN &&
			       posted[i] - done[i] < ORD) {
				k = posted[i] % ORD;
				if (post_atomic(&c[i], k,
						IBV_WR_ATOMIC_FETCH_AND_ADD,
						c[i].in.addr + SUM_OFF,
						c[i].in.rkey, 1, 0, 64 + 8 * k,
						8))
					break;
				posted[i]++;
			}
			n = ibv_poll_cq(c[i].p.scq, ORD, wc);
			for (k = 0; k < n; k++) {
				uint64_t v = *(uint64_t *)(c[i].p.buf + 64 +
							   8 * wc[k].wr_id);

				if (wc[k].status) {
					errors++;
				} else if (v >= CONNS * PER_CONN || seen[v]) {
					dups++;
				} else {
					seen[v] = 1;
				}
				done[i]++;
				left--;
			}
		}
	}
	check(!left && !errors,
	      "%d connections x %d FetchAdds of 1 on the same 8 bytes all complete (%d left, %d errors) in %.1f s",
	      CONNS, PER_CONN, left, errors, now() - t0);
	for (k = 0; k < CONNS * PER_CONN && seen[k]; k++)
		;
	check(!dups && k == CONNS * PER_CONN,
	      "the old values returned are 0 to %d, each once (%d repeated, first missing %d)",
	      CONNS * PER_CONN - 1, dups, k);
	v = read8(&c[0], SUM_OFF);
	check(v == (uint64_t)CONNS * PER_CONN,
	      "an RDMA Read finds the counter at %d (got %llu)",
	      CONNS * PER_CONN, (unsigned long long)v);
	for (i = 0; i < CONNS; i++)
		cconn_close(ch, &c[i]);
}

/* A misused atomic: the status it completes with, the QP's state after. */
static void client_bad(struct rdma_event_channel *ch, const char *addr,
		       const char *port, enum mode mode)
{
	static const struct {
		const char *what;
		enum ibv_wc_status status;
		enum ibv_event_type event;
	} want[] = {
		[BAD_ALIGN] = { "at an address not 8-byte aligned",
				IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_FATAL },
		[BAD_ACCESS] = { "into an MR without remote atomic access",
				 IBV_WC_REM_ACCESS_ERR,
				 IBV_EVENT_QP_ACCESS_ERR },
		[BAD_STAG] = { "with an STag the peer never gave",
			       IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR },
		[BAD_BOUNDS] = { "at the first 8 bytes past the MR's end",
				 IBV_WC_REM_ACCESS_ERR,
				 IBV_EVENT_QP_ACCESS_ERR },
	};
	struct cconn c;
	struct ibv_wc wc;
	uint64_t raddr;
	uint32_t rkey;
	int n;

	cconn_open(ch, addr, port, mode, &c);
	raddr = c.in.addr + FA_OFF;
	rkey = c.in.rkey;
	if (mode == BAD_ALIGN)
		raddr += 4;
	else if (mode == BAD_ACCESS)
		raddr = c.in.addr + ATOMIC_LEN, rkey = c.in.rkey_noat;
	else if (mode == BAD_STAG)
		rkey = (c.in.rkey_noat + 0x1000) ^ 0x5a;
	else
		raddr = c.in.addr + ATOMIC_LEN;
	check(!post_atomic(&c, 9, IBV_WR_ATOMIC_FETCH_AND_ADD, raddr, rkey, 1,
			   0, 8, 8),
	      "%s: a FetchAdd %s posted", mode_name[mode], want[mode].what);
	n = kp_poll(c.p.scq, &wc, 1, 10000);
	check(n == 1 && wc.wr_id == 9 && wc.status == want[mode].status,
	      "%s: it completes with %s (got %s)", mode_name[mode],
	      ibv_wc_status_str(want[mode].status),
	      n == 1 ? ibv_wc_status_str(wc.status) : "nothing");
	qp_fails(&c, 5000, mode_name[mode], "the QP is in ERR", want[mode].event,
		 ibv_event_type_str(want[mode].event));
	cconn_close(ch, &c);
}

/* A peer without RFC 7306: what the verbs see of its Terminates. */
static void client_noext(struct rdma_event_channel *ch, const char *addr,
			 const char *port)
{
	struct cconn c;
	struct ibv_wc wc;
	int n;

	cconn_open(ch, addr, port, PEER, &c);
	check(!post_atomic(&c, 7, IBV_WR_ATOMIC_FETCH_AND_ADD,
			   c.in.addr + FA_OFF, c.in.rkey, 1, 0, 8, 8),
	      "noext: a FetchAdd posted");
	n = kp_poll(c.p.scq, &wc, 1, 10000);
	check(n == 1 && wc.wr_id == 7 && wc.status == IBV_WC_WR_FLUSH_ERR,
	      "noext: it completes flushed, %s (got %s)",
	      ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR),
	      n == 1 ? ibv_wc_status_str(wc.status) : "nothing");
	qp_fails(&c, 5000, "noext", "after the FetchAdd the QP is in ERR",
		 IBV_EVENT_QP_FATAL, "QP_FATAL");
	cconn_close(ch, &c);

	cconn_open(ch, addr, port, PEER, &c);
	check(!post_imm(&c, 8, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 4096, 64,
			W_OFF, 1),
	      "noext: an RDMA Write with Immediate posted");
	qp_fails(&c, 10000, "noext",
		 "after the Write with Immediate the QP is in ERR",
		 IBV_EVENT_QP_FATAL, "QP_FATAL");
	cconn_close(ch, &c);
}

static int client(const char *addr, const char *port, bool noext)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	enum mode end = END;
	struct rdma_cm_id *id;
	struct rdma_conn_param cp = kc_param(1, 1, &end, sizeof(end));
	enum mode m;

	if (noext) {
		client_noext(ch, addr, port);
	} else {
		client_data(ch, addr, port);
		client_sum(ch, addr, port);
		for (m = BAD_ALIGN; m <= BAD_BOUNDS; m++)
			client_bad(ch, addr, port, m);
	}
	/* tell the server to finish: it rejects this one */
	id = kc_resolve_or_die(ch, addr, port);
	{
		struct kp_peer p;
		struct kp_caps caps = { .send_wr = 1, .recv_wr = 1,
					.send_sge = 1, .recv_sge = 1 };

		kp_open_or_die(&p, id, &caps);
		rdma_connect(id, &cp);
		kc_wait(ch, id, RDMA_CM_EVENT_REJECTED, 10000);
		kp_close(&p);
	}
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return kt_end();
}

int main(int argc, char **argv)
{
	kt_start();
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], false);
	if (argc == 4 && !strcmp(argv[1], "noext"))
		return client(argv[2], argv[3], true);
	fprintf(stderr, "usage: %s server|client|noext ADDR PORT\n", argv[0]);
	return 2;
}
