// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi_evilpeer: a hostile iWARP peer over a plain TCP socket.
 *
 * It connects to a listening iWARP endpoint (a kiwi device behind rdma_cm,
 * normally kiwi_terminate from the selftests), negotiates MPA as an
 * initiator, then sends one malformed frame (or, for the control cases, a
 * valid exchange) and reads back what the device answers: a Terminate,
 * whose Layer/EType/Error Code, M/D/R flags and echoed headers it decodes
 * and checks against the frame it sent, or the connection's close.
 *
 *   kiwi_evilpeer [-e EXPECT] [-r 1|2] [-c] [-t write|read|send]
 *                 [-n NRECV] [-k] [-w SECS] [-N NETNS] HOST PORT CASE
 *   kiwi_evilpeer -l             list the cases
 *
 * -r: MPA revision (2, with IRD/ORD, by default); -c: ask for MPA CRC;
 * -t: offer that RFC 6581 RTR message; -n: receives the server is asked
 * to post (kiwi_terminate reads "case=CASE recv=N" from the private data);
 * -k: reset the connection (SO_LINGER 0) the moment a Terminate is in;
 * -w: seconds the stall cases wait for the device's reset (default 90);
 * -N: run in that network namespace (/run/netns/NETNS).
 *
 * The close cases (fin-*, rst, stall, *-after-fin) test how the device
 * ends a connection; some ask kiwi_terminate, through the private data,
 * to post an RDMA Read, flood the connection, or close it first.
 *
 * It prints one line, "CASE: RESULT (details)", where RESULT is one of
 *   term L/E/CC FLAGS    a Terminate (hex Layer, EType, Error Code; FLAGS
 *                        are the letters of the M, D and R bits, or "-")
 *   closed               the connection ended with no Terminate and, for
 *                        the MPA cases, no MPA Reply
 *   rejected             an MPA Reply with the Reject flag, then the close
 *   reply TEXT           control cases: the server's answering Send
 *   reset                the device reset the connection (stall cases)
 *   reset-sent           we reset it (case rst)
 * followed by " BAD(...)" when something else was wrong: an echoed header
 * that differs from what was sent, bytes after the Terminate, a second
 * Terminate, a bad CRC from the device, wrong Read Response data. With
 * -e it exits 0 only when the result equals EXPECT exactly. When it
 * cannot run a case at all (no connection, a bad option) it says why as
 * a failed TAP point (kiwi_test.c) and exits 1; 2 is a usage error.
 *
 * Frames are built with the module's own wire code (kiwi_wire.c, compiled
 * here through kiwi_wire_shim.h); the malformations are made by hand.
 */
#define _GNU_SOURCE		/* setns() */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "kiwi_test.h"
#include "kiwi_wire.h"

#define RX_TIMEOUT_S	30
#define MAX_FPDU	(KIWI_MPA_LEN_SIZE + 0xffff + 3 + KIWI_MPA_CRC_SIZE)
#define SERVER_MAGIC	"KIWI"
#define BOGUS_STAG	0xffffff00u	/* index beyond any STag table */
#define SINK_STAG	0x5eed0001u	/* our "local" STag for Read Responses */
#define TO_NEAR_WRAP	0xfffffffffffffff0ull
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define CONTROL_READS	32
#define STALL_S		90	/* how long a stall case waits for the reset */
#define STALL_RCVBUF	4096	/* a window the device fills at once */
#define QUIET_MS	2000	/* local-quiet: the responder's silence */

/* A memory region the server advertises in its MPA Reply. */
struct region {
	u32 stag;
	u64 addr;
	u32 len;
};

struct peer {
	int fd;
	const char *name;
	/* MPA negotiation */
	int rev;
	bool want_crc;
	u8 offer_rtr;
	int nrecv;
	bool crc;
	u8 rtr;
	/* the server's regions: read-write, remote read only, remote write only, other PD */
	struct region rw, ro, wo, foreign;
	const struct access *access;	/* the case's, for c_access() */
	const char *srv;		/* words for the server's private data */
	bool rst_after_term;		/* -k */
	int stall_s;			/* -w */
	char result[32];		/* a case's own result, if any */
	bool have_regions;
	/* next MSN on our Send and Read Request queues */
	u32 msn_send;
	u32 msn_rreq;
	/* the frame a Terminate must describe */
	u8 off_ddp[KIWI_UNTAGGED_HDR_LEN];
	unsigned int off_ddp_len;
	u8 off_rdmap[KIWI_READ_REQ_LEN];
	bool off_has_rdmap;
	unsigned int off_ulpdu_len;
	/* receive side */
	u8 rbuf[MAX_FPDU];
	unsigned int rlen;		/* ULPDU length of the FPDU in rbuf */
	/* what came back */
	bool got_term;
	u32 term_code;
	char term_flags[4];
	bool got_reply;
	const char *only_send;		/* if set, any other Send is bad */
	bool ended;			/* the connection is over */
	int end;			/* how: recv_fpdu()'s last return */
	char reply[64];
	unsigned long read_bytes;	/* Read Response payload seen */
	u64 want_len;			/* bytes of the expected Read data */
	char bad[256];			/* accumulated anomalies */
	char detail[256];
};

static void bad(struct peer *p, const char *fmt, ...)
{
	size_t n = strlen(p->bad);
	va_list ap;

	if (n && n < sizeof(p->bad) - 2) {
		p->bad[n++] = ';';
		p->bad[n] = 0;
	}
	va_start(ap, fmt);
	vsnprintf(p->bad + n, sizeof(p->bad) - n, fmt, ap);
	va_end(ap);
}

/* The byte the server's regions hold at offset @i (kiwi_terminate.c). */
static u8 pattern(u64 i)
{
	return (u8)(i * 7 + 3);
}

/* ---- socket ---- */

static int tcp_connect(const char *host, const char *port, int rcvbuf)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *a;
	struct timeval tv = { .tv_sec = RX_TIMEOUT_S };
	int fd = -1, one = 1;

	if (getaddrinfo(host, port, &hints, &ai))
		die("cannot resolve %s", host);
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM, 0);
		if (fd < 0)
			continue;
		/* A small window holds a Read Response back (case read-ird). */
		if (rcvbuf)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
				   sizeof(rcvbuf));
		if (!connect(fd, a->ai_addr, a->ai_addrlen))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		die("cannot connect to %s port %s", host, port);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

static void send_all(struct peer *p, const void *buf, size_t len)
{
	const u8 *b = buf;

	while (len) {
		ssize_t n = send(p->fd, b, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* The device may close while we still talk: fine. */
			return;
		}
		b += n;
		len -= n;
	}
}

/*
 * Read exactly @len bytes. Return: 1, 0 at a clean end before the first
 * byte, -ECONNRESET, -ETIMEDOUT, or -EPIPE for an end in the middle.
 */
static int recv_exact(struct peer *p, u8 *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(p->fd, buf + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ?
			       -ETIMEDOUT : -ECONNRESET;
		if (n == 0)
			return got ? -EPIPE : 0;
		got += n;
	}
	return 1;
}

/* ---- MPA ---- */

static void get_region(const u8 *b, struct region *r)
{
	r->stag = get_unaligned_be32(b);
	r->addr = get_unaligned_be64(b + 4);
	r->len = get_unaligned_be32(b + 12);
}

/* The server's private data: "KIWI", then four regions of 16 bytes. */
static void parse_regions(struct peer *p, const u8 *pd, unsigned int len)
{
	if (len < 4 + 4 * 16 || memcmp(pd, SERVER_MAGIC, 4))
		return;
	get_region(pd + 4, &p->rw);
	get_region(pd + 20, &p->ro);
	get_region(pd + 36, &p->wo);
	get_region(pd + 52, &p->foreign);
	p->have_regions = true;
}

/* Our MPA Request, as a well-formed frame; cases may spoil it. */
static size_t mpa_request(struct peer *p, u8 *buf)
{
	char pdata[64];
	struct kiwi_mpa_frame f = {
		.crc = p->want_crc,
		.rev = (u8)p->rev,
		.enhanced = p->rev == 2,
		.p2p = p->offer_rtr != KIWI_RTR_NONE,
		.rtr = p->offer_rtr,
		.ird = 4,
		.ord = 4,
	};
	size_t len;

	snprintf(pdata, sizeof(pdata), "case=%s recv=%d%s", p->name, p->nrecv,
		 p->srv ? p->srv : "");
	f.ulp_pdata = (const u8 *)pdata;
	f.ulp_pdata_len = (u16)strlen(pdata);
	len = kiwi_mpa_build(buf, &f);
	if (!len)
		die("cannot build the MPA Request");
	return len;
}

/*
 * Read the MPA Reply. Return: 1 accepted, 0 closed before any byte,
 * -1 rejected, -2 anything else (p->bad says what).
 */
static int mpa_reply(struct peer *p)
{
	u8 buf[KIWI_MPA_HDR_LEN + KIWI_MPA_MAX_PDATA];
	struct kiwi_mpa_frame f;
	int need = KIWI_MPA_HDR_LEN, got = 0, r;

	for (;;) {
		r = recv_exact(p, buf + got, need - got);
		if (r == 0 && !got)
			return 0;
		if (r <= 0) {
			if (got || r == -ETIMEDOUT)
				bad(p, "MPA Reply cut short (%d of %d bytes, %s)",
				    got, need, r == -ETIMEDOUT ? "timeout" :
				    "closed");
			return got || r == -ETIMEDOUT ? -2 : 0;
		}
		got = need;
		r = kiwi_mpa_parse(buf, got, true, &f);
		if (r < 0) {
			bad(p, "invalid MPA Reply");
			return -2;
		}
		if (!r)
			break;
		need = r;
	}
	if (f.reject)
		return -1;
	p->crc = p->want_crc || f.crc;
	/* A Reply may choose at most one of the RTR messages we offered. */
	if (f.rtr & (f.rtr - 1) || f.rtr & ~p->offer_rtr) {
		bad(p, "MPA Reply chose RTR %#x of %#x", f.rtr, p->offer_rtr);
		return -2;
	}
	p->rtr = f.enhanced && f.p2p ? f.rtr : KIWI_RTR_NONE;
	parse_regions(p, f.ulp_pdata, f.ulp_pdata_len);
	return 1;
}

/* ---- FPDUs ---- */

/* Remember @ulpdu's headers: the Terminate must echo these. */
static void offender(struct peer *p, const u8 *ulpdu, unsigned int len)
{
	bool tagged = ulpdu[0] & 0x80;

	p->off_ddp_len = tagged ? KIWI_TAGGED_HDR_LEN : KIWI_UNTAGGED_HDR_LEN;
	memcpy(p->off_ddp, ulpdu, p->off_ddp_len);
	p->off_has_rdmap = !tagged && (ulpdu[1] & 0xf) == KIWI_OP_READ_REQ &&
			   len >= KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN;
	if (p->off_has_rdmap)
		memcpy(p->off_rdmap, ulpdu + KIWI_UNTAGGED_HDR_LEN,
		       KIWI_READ_REQ_LEN);
	p->off_ulpdu_len = len;
}

/*
 * Frame @len bytes of ULPDU into @out: length field, ULPDU, pad, CRC (or
 * zeros when CRC is off). @crc_xor spoils the CRC. Return: bytes.
 */
static size_t fpdu_frame(struct peer *p, u8 *out, const u8 *ulpdu,
			 unsigned int len, u32 crc_xor)
{
	unsigned int pad = kiwi_mpa_pad(len);
	size_t n = KIWI_MPA_LEN_SIZE + len + pad;
	u32 crc = 0;

	put_unaligned_be16((u16)len, out);
	memcpy(out + KIWI_MPA_LEN_SIZE, ulpdu, len);
	memset(out + KIWI_MPA_LEN_SIZE + len, 0, pad);
	if (p->crc)
		crc = kiwi_mpa_crc_final(kiwi_crc32c_update(kiwi_mpa_crc_init(),
							    out, n));
	kiwi_mpa_crc_put(crc ^ crc_xor, out + n);
	return n + KIWI_MPA_CRC_SIZE;
}

static void send_fpdu(struct peer *p, const u8 *ulpdu, unsigned int len)
{
	static u8 out[MAX_FPDU];

	send_all(p, out, fpdu_frame(p, out, ulpdu, len, 0));
}

/* An untagged message in one segment: header, then @data. */
static unsigned int untagged(u8 *u, u8 opcode, u32 inv_stag, u32 qn, u32 msn,
			     const void *data, unsigned int len)
{
	kiwi_ddp_build_untagged(u, opcode, true, inv_stag, qn, msn, 0);
	memcpy(u + KIWI_UNTAGGED_HDR_LEN, data, len);
	return KIWI_UNTAGGED_HDR_LEN + len;
}

static unsigned int tagged(u8 *u, u8 opcode, u32 stag, u64 to,
			   const void *data, unsigned int len)
{
	kiwi_ddp_build_tagged(u, opcode, true, stag, to);
	memcpy(u + KIWI_TAGGED_HDR_LEN, data, len);
	return KIWI_TAGGED_HDR_LEN + len;
}

static unsigned int read_req(struct peer *p, u8 *u, u32 src_stag, u64 src_to,
			     u32 size)
{
	struct kiwi_read_req rr = {
		.sink_stag = SINK_STAG,
		.sink_to = 0,
		.size = size,
		.src_stag = src_stag,
		.src_to = src_to,
	};

	kiwi_ddp_build_untagged(u, KIWI_OP_READ_REQ, true, 0, KIWI_QN_READ_REQ,
				p->msn_rreq++, 0);
	kiwi_read_req_build(u + KIWI_UNTAGGED_HDR_LEN, &rr);
	return KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN;
}

/* Send one message and remember it as the one a Terminate must name. */
static void send_bad(struct peer *p, const u8 *ulpdu, unsigned int len)
{
	offender(p, ulpdu, len);
	send_fpdu(p, ulpdu, len);
}

/* ---- what comes back ---- */

static void flag_letters(char *s, const struct kiwi_term *t)
{
	int n = 0;

	if (t->m)
		s[n++] = 'm';
	if (t->d)
		s[n++] = 'd';
	if (t->r)
		s[n++] = 'r';
	if (!n)
		s[n++] = '-';
	s[n] = 0;
}

/* Check a Terminate against the frame we sent (RFC 5040 section 4.8). */
static void on_terminate(struct peer *p, const struct kiwi_ddp_hdr *h)
{
	const u8 *rh = p->rbuf + KIWI_UNTAGGED_HDR_LEN;
	unsigned int rlen = p->rlen - KIWI_UNTAGGED_HDR_LEN;
	struct kiwi_term t;

	if (p->got_term) {
		bad(p, "second Terminate");
		return;
	}
	p->got_term = true;
	/* R-TRM-1, R-TRM-2: QN 2, the stream's only Terminate: MSN 1 */
	if (h->qn != KIWI_QN_TERMINATE || h->msn != 1 || h->mo || !h->last)
		bad(p, "Terminate DDP header qn %u msn %u mo %u", h->qn,
		    h->msn, h->mo);
	if (kiwi_term_parse(rh, rlen, &t)) {
		bad(p, "Terminate too short for its flags");
		return;
	}
	/* R-HDR-24: the 13 reserved bits are zero on transmit */
	if (get_unaligned_be32(rh) & 0x1fff)
		bad(p, "Terminate reserved bits %#x", get_unaligned_be32(rh));
	p->term_code = t.code;
	flag_letters(p->term_flags, &t);
	if (t.m != t.d)
		bad(p, "M without D or D without M");
	if (t.d) {
		unsigned int hl = p->off_ddp_len + (p->off_has_rdmap ?
						    KIWI_READ_REQ_LEN : 0);

		/* R-AMB-8: the whole ULPDU, or only its payload */
		if (t.seg_len != p->off_ulpdu_len &&
		    t.seg_len != p->off_ulpdu_len - hl)
			bad(p, "segment length %u, sent ULPDU %u", t.seg_len,
			    p->off_ulpdu_len);
		/* R-HDR-26: the header of the message that failed */
		if (t.ddp_hdr_len != p->off_ddp_len ||
		    memcmp(t.ddp_hdr, p->off_ddp, p->off_ddp_len))
			bad(p, "echoed DDP header differs from the one sent");
	}
	if (t.r && (!p->off_has_rdmap ||
		    memcmp(t.rdmap_hdr, p->off_rdmap, KIWI_READ_REQ_LEN)))
		bad(p, "echoed RDMA Read Request header differs");
	snprintf(p->detail, sizeof(p->detail), "segment length %u", t.seg_len);
}

/* A Read Response segment: must land at our sink, with the region's data. */
static void on_read_resp(struct peer *p, const struct kiwi_ddp_hdr *h,
			 const u8 *want, u64 *to)
{
	unsigned int n = p->rlen - KIWI_TAGGED_HDR_LEN;

	if (h->stag != SINK_STAG || h->to != *to)
		bad(p, "Read Response to %#x:%llu, want %#x:%llu", h->stag,
		    (unsigned long long)h->to, SINK_STAG,
		    (unsigned long long)*to);
	if (want && (*to + n > p->want_len ||
		     memcmp(p->rbuf + KIWI_TAGGED_HDR_LEN, want + *to, n)))
		bad(p, "Read Response data differs at offset %llu",
		    (unsigned long long)*to);
	*to += n;
	p->read_bytes += n;
}

/*
 * Read one FPDU into p->rbuf. Return: 1, 0 at the close, -ECONNRESET,
 * -ETIMEDOUT, or -EPROTO for a broken one (p->bad says why).
 */
static int recv_fpdu(struct peer *p)
{
	u8 *b = p->rbuf;
	unsigned int rest;
	int r;

	r = recv_exact(p, b, KIWI_MPA_LEN_SIZE);
	if (r <= 0)
		return r == -EPIPE ? -EPROTO : r;
	p->rlen = get_unaligned_be16(b);
	rest = p->rlen + kiwi_mpa_pad(p->rlen) + KIWI_MPA_CRC_SIZE;
	r = recv_exact(p, b + KIWI_MPA_LEN_SIZE, rest);
	if (r <= 0) {
		bad(p, "FPDU cut short");
		return -EPROTO;
	}
	if (p->crc) {
		size_t n = KIWI_MPA_LEN_SIZE + rest - KIWI_MPA_CRC_SIZE;
		u32 crc = kiwi_mpa_crc_final(kiwi_crc32c_update(kiwi_mpa_crc_init(),
								b, n));

		if (crc != kiwi_mpa_crc_get(b + n)) {
			bad(p, "bad CRC on an FPDU from the device");
			return -EPROTO;
		}
	}
	memmove(b, b + KIWI_MPA_LEN_SIZE, p->rlen);
	return 1;
}

/* Close with a reset: SO_LINGER with a zero timeout. */
static void reset_now(struct peer *p)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(p->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(p->fd);
	p->fd = -1;
	p->ended = true;
}

enum stop_at {
	UNTIL_CLOSE,		/* read to the end of the connection */
	UNTIL_READ_DONE,	/* ... or the last Read Response segment */
	UNTIL_REPLY,		/* ... or a Send */
};

/*
 * Read what the device sends until @until. Read Responses are checked
 * against @want (NULL: not checked) from offset *@to. Return: 1 when
 * @until was met, 0 at the close (p->detail says how it ended).
 */
static int collect(struct peer *p, enum stop_at until, const u8 *want, u64 *to)
{
	struct kiwi_ddp_hdr h;
	u64 scratch = 0;
	const char *how;
	int r;

	if (!to)
		to = &scratch;
	if (p->ended)
		return 0;
	for (;;) {
		r = recv_fpdu(p);
		if (r <= 0)
			break;
		if (kiwi_ddp_parse(p->rbuf, p->rlen, &h)) {
			bad(p, "undecodable FPDU from the device");
			continue;
		}
		/* R-TRM-3: nothing follows a Terminate */
		if (p->got_term && h.opcode != KIWI_OP_TERMINATE) {
			bad(p, "opcode %u after the Terminate", h.opcode);
			continue;
		}
		switch (h.opcode) {
		case KIWI_OP_TERMINATE:
			on_terminate(p, &h);
			if (p->rst_after_term) {
				reset_now(p);
				snprintf(p->detail + strlen(p->detail),
					 sizeof(p->detail) - strlen(p->detail),
					 ", then we reset");
				return 0;
			}
			break;
		case KIWI_OP_READ_RESP:
			on_read_resp(p, &h, want, to);
			if (until == UNTIL_READ_DONE && h.last)
				return 1;
			break;
		case KIWI_OP_SEND:
		case KIWI_OP_SEND_SE:
			snprintf(p->reply, sizeof(p->reply), "%.*s",
				 (int)(p->rlen - h.hdr_len),
				 (const char *)p->rbuf + h.hdr_len);
			p->got_reply = true;
			if (p->only_send && strcmp(p->reply, p->only_send))
				bad(p, "Send \"%s\" after the failed WR", p->reply);
			if (until == UNTIL_REPLY)
				return 1;
			break;
		default:
			bad(p, "unexpected opcode %u from the device", h.opcode);
			break;
		}
	}
	p->ended = true;
	p->end = r;
	how = r == 0 ? "then closed" : r == -ECONNRESET ? "then reset" :
	      r == -ETIMEDOUT ? "no close within the timeout" : "then broken";
	if (r == -ETIMEDOUT || r == -EPROTO)
		bad(p, "%s", how);
	snprintf(p->detail + strlen(p->detail),
		 sizeof(p->detail) - strlen(p->detail), "%s%s",
		 p->detail[0] ? ", " : "", how);
	return 0;
}

/* ---- cases ---- */

static void need_regions(struct peer *p)
{
	if (!p->have_regions)
		die("the server advertised no regions in its MPA Reply");
}

/* MPA: the stream is still in streaming mode; no FPDU may come back. */
static void c_mpa_garbage(struct peer *p, u8 *buf, size_t *len)
{
	static const char junk[] = "GET / HTTP/1.0\r\n\r\n";

	memcpy(buf, junk, sizeof(junk) - 1);
	memset(buf + sizeof(junk) - 1, 0xa5, 64);
	*len = sizeof(junk) - 1 + 64;
	(void)p;
}

static void c_mpa_badkey(struct peer *p, u8 *buf, size_t *len)
{
	*len = mpa_request(p, buf);
	buf[13] = 'x';			/* "MPA ID Req Frxme" */
}

static void c_mpa_badrev(struct peer *p, u8 *buf, size_t *len)
{
	*len = mpa_request(p, buf);
	buf[17] = 3;			/* Rev: only 1 and 2 exist */
}

static void c_mpa_rev0(struct peer *p, u8 *buf, size_t *len)
{
	*len = mpa_request(p, buf);
	buf[17] = 0;			/* the pre-RFC draft revision */
}

static void c_mpa_pdlen(struct peer *p, u8 *buf, size_t *len)
{
	*len = mpa_request(p, buf);
	put_unaligned_be16(KIWI_MPA_MAX_PDATA + 1, buf + 18);
}

static void c_mpa_rflag(struct peer *p, u8 *buf, size_t *len)
{
	*len = mpa_request(p, buf);
	buf[16] |= 0x20;		/* Reject is for Replies only */
}

static void c_mpa_markers(struct peer *p, u8 *buf, size_t *len)
{
	*len = mpa_request(p, buf);
	buf[16] |= 0x80;		/* kiwi does not do markers */
}

/* The RTR message RFC 6581 has the initiator send first. */
static void send_rtr(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN];

	if (p->rtr & KIWI_RTR_WRITE)
		send_fpdu(p, u, tagged(u, KIWI_OP_WRITE, 0, 0, NULL, 0));
	else if (p->rtr & KIWI_RTR_READ)
		send_fpdu(p, u, read_req(p, u, 0, 0, 0));
	else if (p->rtr & KIWI_RTR_SEND)
		send_fpdu(p, u, untagged(u, KIWI_OP_SEND, 0, KIWI_QN_SEND,
					 p->msn_send++, NULL, 0));
}

/*
 * The end of the control cases: a Send "kiwi-send", which the server
 * checks region rw against and answers; then our FIN, and the device's.
 */
static void control_send(struct peer *p)
{
	static const char sdata[] = "kiwi-send";
	u8 u[KIWI_UNTAGGED_HDR_LEN + sizeof(sdata)];

	send_fpdu(p, u, untagged(u, KIWI_OP_SEND, 0, KIWI_QN_SEND,
				 p->msn_send++, sdata, sizeof(sdata) - 1));
	if (collect(p, UNTIL_REPLY, NULL, NULL) != 1)
		return;
	snprintf(p->detail, sizeof(p->detail), "%lu bytes read back",
		 p->read_bytes);
	shutdown(p->fd, SHUT_WR);
	/* The device closes after us; nothing else may come. */
	collect(p, UNTIL_CLOSE, NULL, NULL);
}

/*
 * Control: a Write, Reads (the first of what was written), a zero-length
 * Read with a bogus source (R-RRQ-14: not validated), then a Send; the
 * server checks the Write and the Send landed and answers with a Send of
 * its own.
 */
static void c_control(struct peer *p)
{
	static const char wdata[] = "kiwi-write";
	u8 u[256], want[64];
	u64 to = 0;
	int i, r;

	need_regions(p);
	if (p->rtr & KIWI_RTR_READ) {
		/* Its zero-length Read Response comes first. */
		if (collect(p, UNTIL_READ_DONE, NULL, NULL) != 1 || p->read_bytes)
			bad(p, "no empty Read Response to the RTR Read");
	}
	send_fpdu(p, u, tagged(u, KIWI_OP_WRITE, p->rw.stag, p->rw.addr,
			       wdata, sizeof(wdata) - 1));
	/*
	 * Reads one after the other at IRD 1, each sent the moment the last
	 * one's response is in: the device must have freed its slot by then.
	 * The first reads the Write back.
	 */
	for (r = 0; r < CONTROL_READS; r++) {
		u64 off = r * sizeof(want);

		for (i = 0; i < (int)sizeof(want); i++)
			want[i] = pattern(off + i);
		if (!r)
			memcpy(want, wdata, sizeof(wdata) - 1);
		send_fpdu(p, u, read_req(p, u, p->rw.stag, p->rw.addr + off,
					 sizeof(want)));
		p->want_len = sizeof(want);
		to = 0;
		if (collect(p, UNTIL_READ_DONE, want, &to) != 1 ||
		    to != sizeof(want)) {
			bad(p, "Read %d of %zu bytes returned %llu", r,
			    sizeof(want), (unsigned long long)to);
			break;
		}
	}
	to = 0;
	send_fpdu(p, u, read_req(p, u, BOGUS_STAG, TO_NEAR_WRAP, 0));
	if (collect(p, UNTIL_READ_DONE, NULL, &to) != 1 || to)
		bad(p, "zero-length Read with a bogus source not answered");
	control_send(p);
}

/* MPA length field below the smallest DDP header: not a DDP segment. */
static void c_fpdu_short(struct peer *p)
{
	u8 u[8], out[32];

	kiwi_ddp_build_untagged(u, KIWI_OP_SEND, true, 0, 0, 1, 0);
	offender(p, u, 4);
	send_all(p, out, fpdu_frame(p, out, u, 4, 0));
}

/* A Send FPDU announcing @announced ULPDU bytes, of which @sent follow. */
static void send_partial(struct peer *p, unsigned int announced,
			 unsigned int sent)
{
	u8 out[KIWI_MPA_LEN_SIZE + KIWI_UNTAGGED_HDR_LEN + 64];
	u8 *u = out + KIWI_MPA_LEN_SIZE;

	memset(out, 'x', sizeof(out));
	kiwi_ddp_build_untagged(u, KIWI_OP_SEND, true, 0, KIWI_QN_SEND,
				p->msn_send++, 0);
	offender(p, u, announced);
	put_unaligned_be16((u16)announced, out);
	send_all(p, out, KIWI_MPA_LEN_SIZE + sent);
}

/* A Send whose FPDU announces more than ever comes; then our FIN. */
static void c_fpdu_truncated(struct peer *p)
{
	send_partial(p, KIWI_UNTAGGED_HDR_LEN + 100, 60);
	shutdown(p->fd, SHUT_WR);
}

/* A Send FPDU of 65535 bytes, far beyond the 4 KiB receive; only its start comes. */
static void c_fpdu_oversized(struct peer *p)
{
	send_partial(p, 0xffff, KIWI_UNTAGGED_HDR_LEN + 64);
}

static void c_crc_bad(struct peer *p)
{
	static u8 out[MAX_FPDU];
	u8 u[64];
	unsigned int n = untagged(u, KIWI_OP_SEND, 0, KIWI_QN_SEND,
				  p->msn_send++, "kiwi-send", 9);

	if (!p->crc)
		die("case crc-bad needs MPA CRC (-c)");
	offender(p, u, n);
	send_all(p, out, fpdu_frame(p, out, u, n, 0x00010000));
}

/*
 * RDMA Writes with MPA CRC: one FPDU of SPLIT_LEN payload bytes at the
 * start of region rw, which the server filled with pattern(). The split
 * cases send it in SPLIT_PIECES pieces, SPLIT_PAUSE_MS apart, so that the
 * device has the first bytes in hand long before the CRC arrives.
 */
#define SPLIT_LEN	16000
#define SPLIT_PIECES	3
#define SPLIT_PAUSE_MS	200
#define FLIP_AT		8000	/* payload byte whose bit 0 a bad case flips */

/*
 * One Write of @len bytes of @data to rw's start. @flip: after the CRC
 * was computed, flip bit 0 of payload byte FLIP_AT (or of the last byte,
 * when shorter). @pieces: send the frame in that many pieces.
 */
static void write_fpdu(struct peer *p, const u8 *data, unsigned int len,
		       bool flip, int pieces)
{
	static u8 u[KIWI_TAGGED_HDR_LEN + SPLIT_LEN], out[MAX_FPDU];
	size_t n, sent = 0, piece;
	int i;

	need_regions(p);
	if (!p->crc)
		die("case %s needs MPA CRC (-c)", p->name);
	n = tagged(u, KIWI_OP_WRITE, p->rw.stag, p->rw.addr, data, len);
	offender(p, u, n);
	n = fpdu_frame(p, out, u, n, 0);
	if (flip)
		out[KIWI_MPA_LEN_SIZE + KIWI_TAGGED_HDR_LEN +
		    (len > FLIP_AT ? FLIP_AT : len - 1)] ^= 1;
	piece = n / pieces;
	for (i = 0; i < pieces; i++) {
		size_t m = i == pieces - 1 ? n - sent : piece;

		if (i)
			usleep(SPLIT_PAUSE_MS * 1000);
		send_all(p, out + sent, m);
		sent += m;
	}
}

/* What the bad cases write: no byte equals the region's pattern. */
static void not_pattern(u8 *d, unsigned int len)
{
	unsigned int i;

	for (i = 0; i < len; i++)
		d[i] = (u8)~pattern(i);
}

/* A 1 KiB Write, one bit spoilt after the CRC: in one TCP segment. */
static void c_crc_write(struct peer *p)
{
	u8 d[1024];

	not_pattern(d, sizeof(d));
	write_fpdu(p, d, sizeof(d), true, 1);
}

/* The same, 16000 bytes in three pieces. */
static void c_crc_write_split(struct peer *p)
{
	static u8 d[SPLIT_LEN];

	not_pattern(d, sizeof(d));
	write_fpdu(p, d, sizeof(d), true, SPLIT_PIECES);
}

/*
 * Good split Writes: new bytes, read back whole; then "kiwi-write" and the
 * pattern, and the control case's Send, which the server checks against
 * "kiwi-write" and answers.
 */
static void c_crc_split(struct peer *p)
{
	static const char wdata[] = "kiwi-write";
	static u8 d[SPLIT_LEN];
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN];
	unsigned int i;
	u64 to = 0;

	not_pattern(d, sizeof(d));
	write_fpdu(p, d, sizeof(d), false, SPLIT_PIECES);
	send_fpdu(p, u, read_req(p, u, p->rw.stag, p->rw.addr, sizeof(d)));
	p->want_len = sizeof(d);
	if (collect(p, UNTIL_READ_DONE, d, &to) != 1 || to != sizeof(d)) {
		bad(p, "Read of the %zu bytes written returned %llu",
		    sizeof(d), (unsigned long long)to);
		return;
	}
	for (i = 0; i < sizeof(d); i++)
		d[i] = pattern(i);
	memcpy(d, wdata, sizeof(wdata) - 1);
	write_fpdu(p, d, sizeof(d), false, SPLIT_PIECES);
	control_send(p);
}

/* A 4-byte message to the region rw (@to_rw) or to the Send queue. */
static unsigned int small_msg(struct peer *p, u8 *u, u8 opcode, bool to_rw)
{
	if (!to_rw)
		return untagged(u, opcode, 0, KIWI_QN_SEND, p->msn_send++,
				"data", 4);
	need_regions(p);
	return tagged(u, opcode, p->rw.stag, p->rw.addr, "data", 4);
}

/* 1100b: RFC 7306 took 8 to 11, 12 to 15 are still reserved. */
static void c_opcode_unknown(struct peer *p)
{
	u8 u[64];

	send_bad(p, u, small_msg(p, u, 12, false));
}

/* A Send opcode with the T flag: Fig. 4 says untagged. */
static void c_opcode_tflag(struct peer *p)
{
	u8 u[64];

	send_bad(p, u, small_msg(p, u, KIWI_OP_SEND, true));
}

static void c_rdmap_version(struct peer *p)
{
	u8 u[64];
	unsigned int n = small_msg(p, u, KIWI_OP_SEND, false);

	u[1] = 2 << 6 | KIWI_OP_SEND;	/* RV 10b */
	send_bad(p, u, n);
}

static void c_ddp_version(struct peer *p)
{
	u8 u[64];
	unsigned int n = small_msg(p, u, KIWI_OP_SEND, false);

	u[0] = (u[0] & ~3) | 2;		/* DV 10b */
	send_bad(p, u, n);
}

static void c_ddp_version_tagged(struct peer *p)
{
	u8 u[64];
	unsigned int n = small_msg(p, u, KIWI_OP_WRITE, true);

	u[0] &= ~3;			/* DV 00b */
	send_bad(p, u, n);
}

/*
 * The Write and Read Request cases: one message aimed at a region, or at
 * an STag that names none, at an offset that may leave the region.
 */
enum target { AT_RW, AT_RO, AT_WO, AT_FOREIGN, AT_BOGUS, AT_STAG0 };
enum where { BASE, ACROSS_END, BELOW_BASE, WRAPPING };

struct access {
	u8 opcode;		/* KIWI_OP_WRITE or KIWI_OP_READ_REQ */
	enum target target;
	u8 key_xor;		/* spoils the STag's key */
	enum where where;
	u32 len;
};

static void c_access(struct peer *p)
{
	const struct access *a = p->access;
	struct region none = { 0 }, *r = &none;
	u8 u[KIWI_TAGGED_HDR_LEN + 256];
	u64 to;

	if (a->target <= AT_FOREIGN) {
		struct region *rs[] = { &p->rw, &p->ro, &p->wo, &p->foreign };

		need_regions(p);
		r = rs[a->target];
	} else if (a->target == AT_BOGUS) {
		none.stag = BOGUS_STAG;
	}
	to = a->where == ACROSS_END ? r->addr + r->len - a->len / 2 :
	     a->where == BELOW_BASE ? r->addr - a->len / 2 :
	     a->where == WRAPPING ? 0 - (u64)a->len / 2 : r->addr;
	if (a->opcode == KIWI_OP_READ_REQ) {
		send_bad(p, u, read_req(p, u, r->stag ^ a->key_xor, to, a->len));
		return;
	}
	memset(u, 'w', sizeof(u));
	send_bad(p, u, tagged(u, KIWI_OP_WRITE, r->stag ^ a->key_xor, to,
			      u + KIWI_TAGGED_HDR_LEN, a->len));
}

/*
 * Two Reads back to back against an IRD of 1. The first one's response
 * (the whole region) cannot finish while our small window stays full, so
 * the second always finds the inbound queue occupied.
 */
static void c_read_ird(struct peer *p)
{
	u8 u[2][KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN];
	u8 out[128];
	size_t n;

	need_regions(p);
	n = fpdu_frame(p, out, u[0],
		       read_req(p, u[0], p->rw.stag, p->rw.addr, p->rw.len), 0);
	read_req(p, u[1], p->rw.stag, p->rw.addr, 64);
	offender(p, u[1], sizeof(u[1]));
	n += fpdu_frame(p, out + n, u[1], sizeof(u[1]), 0);
	send_all(p, out, n);
}

/* A Read Request with 4 bytes after its 28-byte header (R-HDR-14). */
static void c_read_long(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN + 4] = { 0 };

	need_regions(p);
	read_req(p, u, p->rw.stag, p->rw.addr, 64);
	send_bad(p, u, sizeof(u));
}

/* A Read Request cut to 40 bytes (R-HDR-21). */
static void c_read_short(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN];

	need_regions(p);
	read_req(p, u, p->rw.stag, p->rw.addr, 64);
	send_bad(p, u, 40);
}

static void send_bad_send(struct peer *p, u8 opcode, u32 inv, u32 qn, u32 msn,
			  u32 mo, unsigned int len)
{
	static u8 u[KIWI_UNTAGGED_HDR_LEN + 8192];

	memset(u, 's', sizeof(u));
	kiwi_ddp_build_untagged(u, opcode, true, inv, qn, msn, mo);
	send_bad(p, u, KIWI_UNTAGGED_HDR_LEN + len);
}

static void c_send_norecv(struct peer *p)
{
	send_bad_send(p, KIWI_OP_SEND, 0, KIWI_QN_SEND, p->msn_send++, 0, 16);
}

static void c_send_qn(struct peer *p)
{
	send_bad_send(p, KIWI_OP_SEND, 0, 3, p->msn_send++, 0, 16);
}

static void c_send_msn(struct peer *p)
{
	send_bad_send(p, KIWI_OP_SEND, 0, KIWI_QN_SEND, p->msn_send + 4, 0, 16);
}

static void c_send_mo(struct peer *p)
{
	send_bad_send(p, KIWI_OP_SEND, 0, KIWI_QN_SEND, p->msn_send++, 100, 16);
}

static void c_send_toolong(struct peer *p)
{
	send_bad_send(p, KIWI_OP_SEND, 0, KIWI_QN_SEND, p->msn_send++, 0, 5000);
}

static void c_sendinv_foreign(struct peer *p)
{
	need_regions(p);
	send_bad_send(p, KIWI_OP_SEND_INV, p->foreign.stag, KIWI_QN_SEND,
		      p->msn_send++, 0, 16);
}

static void c_sendinv_user_mr(struct peer *p)
{
	need_regions(p);
	send_bad_send(p, KIWI_OP_SEND_INV, p->rw.stag, KIWI_QN_SEND,
		      p->msn_send++, 0, 16);
}

static void c_sendinv_badstag(struct peer *p)
{
	send_bad_send(p, KIWI_OP_SEND_SE_INV, BOGUS_STAG, KIWI_QN_SEND,
		      p->msn_send++, 0, 16);
}

/* A Read Response nobody asked for. */
static void c_readresp_unsolicited(struct peer *p)
{
	u8 u[64];

	send_bad(p, u, small_msg(p, u, KIWI_OP_READ_RESP, true));
}

/* ---- RFC 7306 ---- */

/*
 * An Atomic Request (QN 1, in sequence with Read Requests) of operation
 * @code on the 8 bytes at (@stag, @to): FetchAdd 1 unless @code says
 * otherwise.
 */
static unsigned int atomic_req(struct peer *p, u8 *u, u32 code, u32 stag,
			       u64 to)
{
	struct kiwi_atomic_req ar = {
		.code = code,
		.req_id = p->msn_rreq,
		.stag = stag,
		.to = to,
		.add_swap = 1,
	};

	kiwi_ddp_build_untagged(u, KIWI_OP_ATOMIC_REQ, true, 0,
				KIWI_QN_READ_REQ, p->msn_rreq++, 0);
	kiwi_atomic_req_build(u + KIWI_UNTAGGED_HDR_LEN, &ar);
	return KIWI_UNTAGGED_HDR_LEN + KIWI_ATOMIC_REQ_LEN;
}

/* An Atomic Response with no Atomic Request outstanding. */
static void c_atomic_resp_unsolicited(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_ATOMIC_RESP_LEN];
	struct kiwi_atomic_resp ar = { .req_id = 1, .orig = 42 };

	kiwi_ddp_build_untagged(u, KIWI_OP_ATOMIC_RESP, true, 0,
				KIWI_QN_ATOMIC_RESP, 1, 0);
	kiwi_atomic_resp_build(u + KIWI_UNTAGGED_HDR_LEN, &ar);
	send_bad(p, u, sizeof(u));
}

/* Atomic Operation code 1: neither FetchAdd (0) nor CmpSwap (2). */
static void c_atomic_badcode(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_ATOMIC_REQ_LEN];

	need_regions(p);
	send_bad(p, u, atomic_req(p, u, 1, p->rw.stag, p->rw.addr));
}

/* A FetchAdd 4 bytes into region rw (which grants remote atomic). */
static void c_atomic_misaligned(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_ATOMIC_REQ_LEN];

	need_regions(p);
	send_bad(p, u, atomic_req(p, u, KIWI_ATOMIC_FETCH_ADD, p->rw.stag,
				  p->rw.addr + 4));
}

static void c_atomic_badstag(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_ATOMIC_REQ_LEN];

	send_bad(p, u, atomic_req(p, u, KIWI_ATOMIC_FETCH_ADD, BOGUS_STAG, 0));
}

/* Region ro grants remote read only. */
static void c_atomic_noaccess(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_ATOMIC_REQ_LEN];

	need_regions(p);
	send_bad(p, u, atomic_req(p, u, KIWI_ATOMIC_FETCH_ADD, p->ro.stag,
				  p->ro.addr));
}

/* An Immediate Data message on QN 0: @word is kiwi's second word. */
static unsigned int imm_msg(struct peer *p, u8 *u, u8 opcode, u32 word)
{
	struct kiwi_imm imm = { .data = 0x11223344, .kiwi = word };

	kiwi_ddp_build_untagged(u, opcode, true, 0, KIWI_QN_SEND,
				p->msn_send++, 0);
	kiwi_imm_build(u + KIWI_UNTAGGED_HDR_LEN, &imm);
	return KIWI_UNTAGGED_HDR_LEN + KIWI_IMM_LEN;
}

/* Immediate Data of 12 bytes, 4 more than RFC 7306's 8. */
static void c_imm_long(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_IMM_LEN + 4] = { 0 };

	imm_msg(p, u, KIWI_OP_IMM, 0);
	send_bad(p, u, sizeof(u));
}

/* Immediate Data with SE cut to 4 bytes. */
static void c_imm_short(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_IMM_LEN];

	imm_msg(p, u, KIWI_OP_IMM_SE, 0);
	send_bad(p, u, KIWI_UNTAGGED_HDR_LEN + 4);
}

/*
 * Two Immediate Data "for the Send that follows" (kiwi's Send with
 * Immediate) in a row: the second is the offender.
 */
static void c_imm_twice(struct peer *p)
{
	u8 u[2][KIWI_UNTAGGED_HDR_LEN + KIWI_IMM_LEN];
	u8 out[128];
	size_t n;

	n = fpdu_frame(p, out, u[0], imm_msg(p, u[0], KIWI_OP_IMM,
					     KIWI_IMM_WITH_SEND), 0);
	imm_msg(p, u[1], KIWI_OP_IMM, KIWI_IMM_WITH_SEND);
	offender(p, u[1], sizeof(u[1]));
	n += fpdu_frame(p, out + n, u[1], sizeof(u[1]), 0);
	send_all(p, out, n);
}

/* We terminate: the device must not answer with a Terminate of its own. */
static void c_peer_terminate(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_TERM_CTRL_LEN];
	struct kiwi_term t = { .code = KIWI_TC_RDMAP_OP_UNSPEC };

	kiwi_ddp_build_untagged(u, KIWI_OP_TERMINATE, true, 0,
				KIWI_QN_TERMINATE, 1, 0);
	kiwi_term_build(u + KIWI_UNTAGGED_HDR_LEN, &t);
	send_fpdu(p, u, sizeof(u));
}

/*
 * local-sqd and local-sqe-big: after "before", a 1 MiB Send of region rw
 * (MSN 2), then the FIN of the server's graceful close, or a Terminate.
 * Every segment must be whole, in order and hold the region's bytes; the
 * result is "send BYTES last fin" (no "last": the message was cut at an
 * FPDU boundary), or "segments, term L/E/CC FLAGS" with BYTES and "last"
 * in the details, as a Modify to SQE may stop the message at any segment.
 */
static void local_big(struct peer *p)
{
	struct kiwi_ddp_hdr h;
	unsigned int n, i;
	u64 got = 0;
	bool last = false;
	int r;

	while ((r = recv_fpdu(p)) == 1) {
		if (!kiwi_ddp_parse(p->rbuf, p->rlen, &h) &&
		    h.opcode == KIWI_OP_TERMINATE) {
			on_terminate(p, &h);
			continue;
		}
		if (kiwi_ddp_parse(p->rbuf, p->rlen, &h) || p->got_term ||
		    h.opcode != KIWI_OP_SEND || last) {
			bad(p, "FPDU other than the 1 MiB Send's (opcode %u)",
			    h.opcode);
			continue;
		}
		n = p->rlen - h.hdr_len;
		if (h.qn != KIWI_QN_SEND || h.msn != 2 || h.mo != got)
			bad(p, "Send segment qn %u msn %u mo %u after %llu bytes",
			    h.qn, h.msn, h.mo, (unsigned long long)got);
		for (i = 0; i < n; i++)
			if (p->rbuf[h.hdr_len + i] != pattern(got + i))
				break;
		if (i < n)
			bad(p, "Send data differs at offset %llu",
			    (unsigned long long)got + i);
		got += n;
		last = h.last;
	}
	p->ended = true;
	if (!p->got_term) {
		snprintf(p->result, sizeof(p->result), "send %llu%s %s",
			 (unsigned long long)got, last ? " last" : "",
			 r == 0 ? "fin" : r == -ECONNRESET ? "reset" : "broken");
		return;
	}
	snprintf(p->result, sizeof(p->result), "segments, term %x/%x/%02x %s",
		 KIWI_TC_LAYER(p->term_code), KIWI_TC_ETYPE(p->term_code),
		 KIWI_TC_ECODE(p->term_code), p->term_flags);
	snprintf(p->detail, sizeof(p->detail), "%llu bytes%s, then %s",
		 (unsigned long long)got, last ? ", the whole message" : "",
		 r == 0 ? "closed" : r == -ECONNRESET ? "reset" : "broken");
	if (r)
		bad(p, "no clean close after the Terminate");
}

/*
 * local-bindok (V-WR-9): the server's Bind and Local Invalidate between
 * "before" and "after" put nothing on the wire: the next FPDU is the whole
 * Send "after", MSN 2; then we close, and nothing else may come.
 */
static void local_bindok(struct peer *p)
{
	struct kiwi_ddp_hdr h;

	if (collect(p, UNTIL_REPLY, NULL, NULL) != 1 ||
	    strcmp(p->reply, "after")) {
		bad(p, "no Send \"after\" right after \"before\"");
		return;
	}
	if (kiwi_ddp_parse(p->rbuf, p->rlen, &h) || h.msn != 2)
		bad(p, "Send \"after\" with MSN %u, not 2", h.msn);
	p->only_send = "";
	shutdown(p->fd, SHUT_WR);
	collect(p, UNTIL_CLOSE, NULL, NULL);
}

/*
 * local-quiet (RFC 5044): with no RTR negotiated, the server, the MPA
 * responder, sends nothing before our first FPDU, though its Send
 * "before" is posted at once: QUIET_MS of silence, then our Send "first",
 * then its "before"; then we close.
 */
static void local_quiet(struct peer *p)
{
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
	u8 u[64];

	if (poll(&pfd, 1, QUIET_MS)) {
		bad(p, "the server sent before our first FPDU");
		return;
	}
	send_fpdu(p, u, untagged(u, KIWI_OP_SEND, 0, KIWI_QN_SEND,
				 p->msn_send++, "first", 5));
	if (collect(p, UNTIL_REPLY, NULL, NULL) != 1 ||
	    strcmp(p->reply, "before")) {
		bad(p, "no Send \"before\" after our first FPDU");
		return;
	}
	p->only_send = "";
	shutdown(p->fd, SHUT_WR);
	collect(p, UNTIL_CLOSE, NULL, NULL);
}

/*
 * kiwi_terminate fails its own QP (its local-* cases) after a good Send
 * "before": the stream holds that Send whole, then the Terminate in place
 * of the failed WR and of all after it. Only local-cqof's Sends "ov",
 * whose completions overflowed the CQ, may come in between. For
 * local-rcqof, once its server says "go" (its one-entry CQ empty), we
 * send two Sends, whose receive completions overflow that CQ.
 */
static void c_local(struct peer *p)
{
	u8 u[64];

	if (!strcmp(p->name, "local-quiet")) {
		local_quiet(p);
		return;
	}
	if (collect(p, UNTIL_REPLY, NULL, NULL) != 1 ||
	    strcmp(p->reply, "before"))
		bad(p, "no Send \"before\" first");
	if (!strcmp(p->name, "local-rcqof") &&
	    (collect(p, UNTIL_REPLY, NULL, NULL) != 1 || strcmp(p->reply, "go")))
		bad(p, "no Send \"go\" after \"before\"");
	if (!strcmp(p->name, "local-sqd") || !strcmp(p->name, "local-sqe-big")) {
		local_big(p);
		return;
	}
	if (!strcmp(p->name, "local-bindok")) {
		local_bindok(p);
		return;
	}
	p->only_send = strcmp(p->name, "local-cqof") ? "" : "ov";
	if (!strcmp(p->name, "local-rcqof")) {
		send_fpdu(p, u, untagged(u, KIWI_OP_SEND, 0, KIWI_QN_SEND,
					 p->msn_send++, "one", 3));
		send_fpdu(p, u, untagged(u, KIWI_OP_SEND, 0, KIWI_QN_SEND,
					 p->msn_send++, "two", 3));
	}
	collect(p, UNTIL_CLOSE, NULL, NULL);
	/*
	 * V-ST-R10: an abortive close is a reset, with no Terminate; a
	 * graceful one the consumer cut short with nothing left to send is
	 * a FIN (local-drain).
	 */
	if ((!strcmp(p->name, "local-err") || !strcmp(p->name, "local-drain")) &&
	    !p->got_term)
		snprintf(p->result, sizeof(p->result), "%s",
			 p->end == -ECONNRESET ? "reset" :
			 p->end == 0 ? "closed" : "broken");
}

/* ---- close cases ---- */

/* We reset the connection while it is in RDMA mode (V-LLP-12). */
static void c_rst(struct peer *p)
{
	reset_now(p);
	snprintf(p->result, sizeof(p->result), "reset-sent");
}

/*
 * Read nothing until the device resets the connection: report "reset",
 * "closed" for an end without one, or "stalled" after -w seconds.
 */
static void stall(struct peer *p)
{
	socklen_t len;
	int i, err = 0;

	for (i = 0; i < p->stall_s * 10; i++) {
		struct tcp_info ti;

		len = sizeof(ti);
		if (getsockopt(p->fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
			die("TCP_INFO");
		if (ti.tcpi_state == TCP_CLOSE)
			break;
		usleep(100 * 1000);
	}
	if (i == p->stall_s * 10) {
		snprintf(p->result, sizeof(p->result), "stalled");
		bad(p, "no reset within %d s", p->stall_s);
		return;
	}
	len = sizeof(err);
	getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len);
	/* EPIPE: the reset came after the device's FIN */
	snprintf(p->result, sizeof(p->result), "%s",
		 err == ECONNRESET || err == EPIPE ? "reset" : "closed");
	p->ended = true;
}

static void c_stall(struct peer *p)
{
	stall(p);
}

/* A Read Request for all of region rw (1 MiB): its response takes long. */
static void send_big_read(struct peer *p)
{
	u8 u[KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN];

	need_regions(p);
	send_fpdu(p, u, read_req(p, u, p->rw.stag, p->rw.addr, p->rw.len));
}

/*
 * Our FIN while the device's RDMA Read to us is outstanding: a Bad LLP
 * Close, answered with a Terminate over the half-closed stream.
 */
static void c_fin_read(struct peer *p)
{
	struct kiwi_ddp_hdr h;

	if (recv_fpdu(p) != 1 || kiwi_ddp_parse(p->rbuf, p->rlen, &h) ||
	    h.opcode != KIWI_OP_READ_REQ) {
		bad(p, "no RDMA Read Request from the server");
		return;
	}
	shutdown(p->fd, SHUT_WR);
}

/* Our FIN right behind a Read Request the device is still answering. */
static void c_fin_readreq(struct peer *p)
{
	send_big_read(p);
	shutdown(p->fd, SHUT_WR);
	sleep(2);	/* the device sees the FIN with the response under way */
}

/*
 * A Terminate the device cannot deliver: its response to our Read fills
 * our window, then an invalid frame makes it terminate behind it.
 */
static void c_term_stall(struct peer *p)
{
	u8 u[64];

	send_big_read(p);
	sleep(1);	/* the response is stuck on our window by now */
	send_bad(p, u, small_msg(p, u, 8, false));
	stall(p);
}

/*
 * V-TERM-8: two bad Writes in one TCP segment, to no STag and then across
 * rw's end; the one Terminate must name the first.
 */
static void c_two_bad(struct peer *p)
{
	u8 u[2][KIWI_TAGGED_HDR_LEN + 64], data[64], out[256];
	size_t n;

	need_regions(p);
	memset(data, 'w', sizeof(data));
	tagged(u[0], KIWI_OP_WRITE, BOGUS_STAG, p->rw.addr, data, 64);
	tagged(u[1], KIWI_OP_WRITE, p->rw.stag, p->rw.addr + p->rw.len - 32,
	       data, 64);
	offender(p, u[0], sizeof(u[0]));
	n = fpdu_frame(p, out, u[0], sizeof(u[0]), 0);
	n += fpdu_frame(p, out + n, u[1], sizeof(u[1]), 0);
	send_all(p, out, n);
}

/*
 * V-TERM-1: an invalid frame while the device streams its 1 MiB Read
 * Response into our small window; then we read everything. What precedes
 * the Terminate must be whole, valid Read Response FPDUs with the region's
 * bytes at their offsets, and nothing may follow it.
 */
static void c_term_stream(struct peer *p)
{
	static u8 want[1 << 20];
	u64 to = 0, i;
	u8 u[64];

	for (i = 0; i < sizeof(want); i++)
		want[i] = pattern(i);
	p->want_len = sizeof(want);
	send_big_read(p);
	sleep(1);	/* the response is under way, held by our window */
	send_bad(p, u, small_msg(p, u, 12, false));
	collect(p, UNTIL_CLOSE, want, &to);
	snprintf(p->detail + strlen(p->detail),
		 sizeof(p->detail) - strlen(p->detail),
		 ", %llu bytes of Read Response first", (unsigned long long)to);
}

/* Wait for the device's FIN (it closes first), reading what comes. */
static bool await_fin(struct peer *p)
{
	u8 b[256];
	ssize_t n;

	while ((n = recv(p->fd, b, sizeof(b), 0)) > 0)
		;
	if (n < 0) {
		bad(p, "no FIN from the device (%s)", strerror(errno));
		return false;
	}
	return true;
}

/* A valid Send after the device's FIN: it must fail the QP, unplaced. */
static void c_send_after_fin(struct peer *p)
{
	u8 u[64];

	if (!await_fin(p))
		return;
	send_fpdu(p, u, untagged(u, KIWI_OP_SEND, 0, KIWI_QN_SEND,
				 p->msn_send++, "late", 4));
	stall(p);
}

/* A Read Response into region rw after the device's FIN (V-AMB-26). */
static void c_readresp_after_fin(struct peer *p)
{
	u8 u[64];

	need_regions(p);
	if (!await_fin(p))
		return;
	send_fpdu(p, u, tagged(u, KIWI_OP_READ_RESP, p->rw.stag, p->rw.addr,
			       "late", 4));
	stall(p);
}

struct evil_case {
	const char *name;
	void (*mpa)(struct peer *p, u8 *buf, size_t *len);
	void (*rdma)(struct peer *p);
	const char *what;
	struct access access;
	const char *srv;	/* asks kiwi_terminate to act, see there */
	int rcvbuf;		/* our receive buffer, 0: the default */
};

#define MPA(n, f, w)	{ .name = n, .mpa = f, .what = w }
#define RDMA(n, f, w)	{ .name = n, .rdma = f, .what = w }
#define CLOSE(n, f, s, b, w) \
	{ .name = n, .rdma = f, .what = w, .srv = s, .rcvbuf = b }
#define WRITE(n, target, key, where, len, w) \
	{ .name = n, .rdma = c_access, .what = w, \
	  .access = { KIWI_OP_WRITE, target, key, where, len } }
#define READ(n, target, where, len, w) \
	{ .name = n, .rdma = c_access, .what = w, \
	  .access = { KIWI_OP_READ_REQ, target, 0, where, len } }

static const struct evil_case cases[] = {
	MPA("mpa-garbage", c_mpa_garbage, "bytes that are no MPA Request"),
	MPA("mpa-badkey", c_mpa_badkey, "MPA Request with a wrong key"),
	MPA("mpa-badrev", c_mpa_badrev, "MPA Request of revision 3"),
	MPA("mpa-rev0", c_mpa_rev0, "MPA Request of revision 0"),
	MPA("mpa-pdlen", c_mpa_pdlen, "MPA Request with PD_Length 513"),
	MPA("mpa-rflag", c_mpa_rflag, "MPA Request with the Reject flag"),
	MPA("mpa-markers", c_mpa_markers, "MPA Request asking for markers"),
	RDMA("control", c_control, "valid Write, Reads and Send"),
	RDMA("fpdu-short", c_fpdu_short, "ULPDU_Length 4, below a DDP header"),
	RDMA("fpdu-truncated", c_fpdu_truncated, "FPDU cut short by our FIN"),
	RDMA("fpdu-oversized", c_fpdu_oversized, "Send FPDU of 65535 bytes"),
	RDMA("crc-bad", c_crc_bad, "Send with a wrong MPA CRC"),
	RDMA("crc-write", c_crc_write, "1 KiB Write, a payload bit flipped after the CRC"),
	RDMA("crc-write-split", c_crc_write_split, "the same, 16000 bytes in three pieces"),
	RDMA("crc-split", c_crc_split, "valid 16000-byte Writes in three pieces, read back"),
	RDMA("opcode-unknown", c_opcode_unknown, "RDMAP opcode 12"),
	RDMA("opcode-tflag", c_opcode_tflag, "Send opcode with the T flag"),
	RDMA("rdmap-version", c_rdmap_version, "RDMAP version 2"),
	RDMA("ddp-version", c_ddp_version, "untagged DDP version 2"),
	RDMA("ddp-version-tagged", c_ddp_version_tagged, "tagged DDP version 0"),
	WRITE("write-bounds", AT_RW, 0, ACROSS_END, 64, "Write across the region's end"),
	WRITE("write-below", AT_RW, 0, BELOW_BASE, 32, "Write below the region's start"),
	WRITE("write-wrap", AT_RW, 0, WRAPPING, 32, "Write whose offset wraps"),
	WRITE("write-badstag", AT_BOGUS, 0, BASE, 64, "Write to an STag that does not exist"),
	WRITE("write-stag0", AT_STAG0, 0, BASE, 64, "Write to STag 0"),
	WRITE("write-badkey", AT_RW, 0x5a, BASE, 64, "Write with the region's index but a wrong key"),
	WRITE("write-foreign", AT_FOREIGN, 0, BASE, 64, "Write to a region of another PD"),
	WRITE("write-noaccess", AT_RO, 0, BASE, 64, "Write to a region without remote write"),
	READ("read-badstag", AT_BOGUS, BASE, 64, "Read from an STag that does not exist"),
	READ("read-foreign", AT_FOREIGN, BASE, 64, "Read from a region of another PD"),
	READ("read-noaccess", AT_WO, BASE, 64, "Read from a region without remote read"),
	READ("read-bounds", AT_RW, ACROSS_END, 64, "Read across the region's end"),
	READ("read-wrap", AT_RW, WRAPPING, 0x200, "Read whose source offset wraps"),
	RDMA("read-ird", c_read_ird, "second Read while IRD 1 is in use"),
	RDMA("read-long", c_read_long, "Read Request with trailing bytes"),
	RDMA("read-short", c_read_short, "Read Request cut to 40 bytes"),
	RDMA("send-norecv", c_send_norecv, "Send with no posted receive"),
	RDMA("send-qn", c_send_qn, "Send to queue number 3"),
	RDMA("send-msn", c_send_msn, "Send with MSN 5 instead of 1"),
	RDMA("send-mo", c_send_mo, "first Send segment at offset 100"),
	RDMA("send-toolong", c_send_toolong, "5000-byte Send into 4096 bytes"),
	RDMA("sendinv-foreign", c_sendinv_foreign, "Send with Invalidate of another PD's STag"),
	RDMA("sendinv-user-mr", c_sendinv_user_mr, "Send with Invalidate of a user MR"),
	RDMA("sendinv-badstag", c_sendinv_badstag, "Send with SE and Invalidate of no STag"),
	RDMA("readresp-unsolicited", c_readresp_unsolicited, "Read Response with no Read"),
	RDMA("atomic-resp-unsolicited", c_atomic_resp_unsolicited,
	     "Atomic Response with no Atomic Request"),
	RDMA("atomic-badcode", c_atomic_badcode, "Atomic Request of operation code 1"),
	RDMA("atomic-misaligned", c_atomic_misaligned, "FetchAdd at an address 4 bytes off 8"),
	RDMA("atomic-badstag", c_atomic_badstag, "FetchAdd at an STag that does not exist"),
	RDMA("atomic-noaccess", c_atomic_noaccess, "FetchAdd in a region without remote atomic"),
	RDMA("imm-long", c_imm_long, "Immediate Data of 12 bytes"),
	RDMA("imm-short", c_imm_short, "Immediate Data with SE of 4 bytes"),
	RDMA("imm-twice", c_imm_twice, "two Immediate Data for one Send in a row"),
	RDMA("peer-terminate", c_peer_terminate, "a Terminate from us"),
	RDMA("local-lkey", c_local, "the server posts a Send with a bad lkey"),
	RDMA("local-bind", c_local, "the server's window bind is refused"),
	RDMA("local-sqe", c_local, "the server moves its QP to SQE"),
	RDMA("local-bindok", c_local, "the server binds and invalidates a window between two Sends"),
	RDMA("local-quiet", c_local, "no RTR: the server's Send waits for our first FPDU"),
	RDMA("local-err", c_local, "the server moves its QP to ERR"),
	RDMA("local-drain", c_local, "the server disconnects, then at once moves its QP to ERR"),
	RDMA("local-sqd", c_local, "the server sends 1 MiB and moves its QP to SQD"),
	RDMA("local-sqe-big", c_local, "the server sends 1 MiB and moves its QP to SQE"),
	RDMA("local-cqof", c_local, "the server's CQ overflows"),
	RDMA("local-rcqof", c_local, "our Sends overflow the server's CQ"),
	RDMA("two-bad", c_two_bad, "two bad Writes in one TCP segment"),
	CLOSE("term-stream", c_term_stream, NULL, STALL_RCVBUF,
	      "an invalid frame while the server streams our 1 MiB Read"),
	CLOSE("rst", c_rst, NULL, 0, "a TCP reset from us in RDMA mode"),
	CLOSE("fin-read", c_fin_read, " read", 0,
	      "our FIN while the server's RDMA Read to us is outstanding"),
	CLOSE("fin-readreq", c_fin_readreq, NULL, STALL_RCVBUF,
	      "our FIN while the server answers our 1 MiB Read"),
	CLOSE("term-stall", c_term_stall, NULL, STALL_RCVBUF,
	      "an invalid frame while we read nothing: the Terminate is stuck"),
	CLOSE("close-read-stall", c_stall, " read close", STALL_RCVBUF,
	      "the server closes with its Read to us outstanding; we stay mute"),
	CLOSE("flood-stall", c_stall, " flood close", STALL_RCVBUF,
	      "the server sends and closes while we read nothing"),
	CLOSE("send-after-fin", c_send_after_fin, " close", 0,
	      "a Send after the server's FIN"),
	CLOSE("readresp-after-fin", c_readresp_after_fin, " close", 0,
	      "a Read Response after the server's FIN"),
};

/* ---- main ---- */

static void run_mpa_case(struct peer *p, const struct evil_case *c,
			 char *res, size_t rlen)
{
	u8 buf[KIWI_MPA_HDR_LEN + KIWI_MPA_MAX_PDATA + 64];
	size_t len;
	int r;

	c->mpa(p, buf, &len);
	send_all(p, buf, len);
	r = mpa_reply(p);
	if (r == -1) {
		snprintf(res, rlen, "rejected");
		collect(p, UNTIL_CLOSE, NULL, NULL);
	} else if (r == 0) {
		snprintf(res, rlen, "closed");
		snprintf(p->detail, sizeof(p->detail), "no MPA Reply");
	} else {
		snprintf(res, rlen, r == 1 ? "accepted" : "answered");
	}
}

static void run_rdma_case(struct peer *p, const struct evil_case *c,
			  char *res, size_t rlen)
{
	u8 buf[KIWI_MPA_HDR_LEN + KIWI_MPA_MAX_PDATA];
	int r;

	send_all(p, buf, mpa_request(p, buf));
	r = mpa_reply(p);
	if (r != 1) {
		snprintf(res, rlen, "no-connection");
		bad(p, "MPA exchange failed (%d)", r);
		return;
	}
	send_rtr(p);
	c->rdma(p);
	if (!p->got_reply && !p->got_term)
		collect(p, UNTIL_CLOSE, NULL, NULL);
	if (p->result[0])
		snprintf(res, rlen, "%s", p->result);
	else if (p->got_term)
		snprintf(res, rlen, "term %x/%x/%02x %s",
			 KIWI_TC_LAYER(p->term_code), KIWI_TC_ETYPE(p->term_code),
			 KIWI_TC_ECODE(p->term_code), p->term_flags);
	else if (p->got_reply)
		snprintf(res, rlen, "reply %s", p->reply);
	else
		snprintf(res, rlen, "closed");
}

/* Enter network namespace @name, as "ip netns exec" would. */
static void enter_netns(const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET))
		die("cannot enter network namespace %s", name);
	close(fd);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kiwi_evilpeer [-e EXPECT] [-r 1|2] [-c] [-t write|read|send] [-n NRECV] [-k] [-w SECS] [-N NETNS] HOST PORT CASE\n"
		"       kiwi_evilpeer -l\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct peer peer = {
		.rev = 2, .nrecv = 2, .msn_send = 1, .msn_rreq = 1,
		.stall_s = STALL_S,
	};
	struct peer *p = &peer;
	const struct evil_case *c = NULL;
	const char *expect = NULL;
	char res[128], line[768];
	size_t i;
	int opt;

	while ((opt = getopt(argc, argv, "e:r:ct:n:kw:N:l")) != -1) {
		switch (opt) {
		case 'e':
			expect = optarg;
			break;
		case 'r':
			p->rev = atoi(optarg);
			if (p->rev != 1 && p->rev != 2)
				usage();
			break;
		case 'c':
			p->want_crc = true;
			break;
		case 't':
			p->offer_rtr = !strcmp(optarg, "write") ? KIWI_RTR_WRITE :
				       !strcmp(optarg, "read") ? KIWI_RTR_READ :
				       !strcmp(optarg, "send") ? KIWI_RTR_SEND : 0;
			if (!p->offer_rtr)
				usage();
			break;
		case 'n':
			p->nrecv = atoi(optarg);
			break;
		case 'k':
			p->rst_after_term = true;
			break;
		case 'w':
			p->stall_s = atoi(optarg);
			break;
		case 'N':
			enter_netns(optarg);
			break;
		case 'l':
			for (i = 0; i < ARRAY_SIZE(cases); i++)
				printf("%-22s %s\n", cases[i].name, cases[i].what);
			return 0;
		default:
			usage();
		}
	}
	if (argc - optind != 3)
		usage();
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		if (!strcmp(cases[i].name, argv[optind + 2]))
			c = &cases[i];
	if (!c)
		die("no case %s (-l lists them)", argv[optind + 2]);
	if (p->offer_rtr && p->rev != 2)
		die("RTR needs MPA revision 2");
	p->name = c->name;
	p->access = &c->access;
	p->srv = c->srv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A last guard: every wait below has its own timeout. */
	alarm(4 * RX_TIMEOUT_S + p->stall_s);

	p->fd = tcp_connect(argv[optind], argv[optind + 1],
			    c->rdma == c_read_ird ? 4096 : c->rcvbuf);
	if (c->mpa)
		run_mpa_case(p, c, res, sizeof(res));
	else
		run_rdma_case(p, c, res, sizeof(res));
	if (p->fd >= 0)
		close(p->fd);

	snprintf(line, sizeof(line), "%s: %s", c->name, res);
	if (p->bad[0])
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 " BAD(%s)", p->bad);
	printf("%s (%s%s%s)\n", line, c->what, p->detail[0] ? "; " : "",
	       p->detail);
	if (!expect)
		return 0;
	if (!p->bad[0] && !strcmp(res, expect))
		return 0;
	printf("%s: expected %s\n", c->name, expect);
	return 1;
}
