// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_cm for kiwi's user-space test programs (see kiwi_conn.h).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include "kiwi_conn.h"
#include "kiwi_test.h"

void (*kc_ended)(struct rdma_cm_id *id);
bool kc_defer_requests;

/* Requests kept by kc_defer_requests, oldest first. */
#define KC_DEFERRED	8
static struct rdma_cm_id *deferred[KC_DEFERRED];
static int ndeferred;

struct rdma_cm_event *kc_next(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	/* poll() first: the channel may be non-blocking. */
	if (poll(&p, 1, ms) != 1 || rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

struct rdma_cm_event *kc_event(struct rdma_event_channel *ch,
			       struct rdma_cm_id *id,
			       enum rdma_cm_event_type want, int ms)
{
	struct rdma_cm_event *ev;

	for (;;) {
		ev = kc_next(ch, ms);
		if (!ev) {
			note("no rdma_cm event in %d ms (wanted %s)", ms,
			     rdma_event_str(want));
			return NULL;
		}
		if (ev->event == want && (!id || ev->id == id))
			return ev;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    kc_defer_requests && ndeferred < KC_DEFERRED) {
			deferred[ndeferred++] = ev->id;
			rdma_ack_cm_event(ev);
			continue;
		}
		if (ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT ||
		    (ev->event == RDMA_CM_EVENT_DISCONNECTED && kc_ended)) {
			if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
				kc_ended(ev->id);
			rdma_ack_cm_event(ev);
			continue;
		}
		note("rdma_cm event %s status %d, wanted %s",
		     rdma_event_str(ev->event), ev->status,
		     rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return NULL;
	}
}

int kc_wait(struct rdma_event_channel *ch, struct rdma_cm_id *id,
	    enum rdma_cm_event_type want, int ms)
{
	struct rdma_cm_event *ev = kc_event(ch, id, want, ms);

	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	return 0;
}

struct rdma_cm_event *expect(struct rdma_event_channel *ch,
			     enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = kc_event(ch, NULL, want, -1);

	if (!ev) {
		errno = EPROTO;
		die("%s", rdma_event_str(want));
	}
	return ev;
}

void expect_ack(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	rdma_ack_cm_event(expect(ch, want));
}

/* A new cm_id and @addr:@port looked up in *@ai, or NULL. */
static struct rdma_cm_id *new_id(struct rdma_event_channel *ch,
				 const char *addr, const char *port,
				 bool passive, struct rdma_addrinfo **ai)
{
	struct rdma_addrinfo hints = { .ai_flags = passive ? RAI_PASSIVE : 0,
				       .ai_port_space = RDMA_PS_TCP };
	struct rdma_cm_id *id;

	if (rdma_getaddrinfo(addr, port, &hints, ai)) {
		note("rdma_getaddrinfo %s:%s: %s", addr, port,
		     strerror(errno));
		return NULL;
	}
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		note("rdma_create_id: %s", strerror(errno));
		rdma_freeaddrinfo(*ai);
		return NULL;
	}
	return id;
}

struct rdma_cm_id *kc_bind(struct rdma_event_channel *ch, const char *addr,
			   const char *port)
{
	struct rdma_addrinfo *ai;
	struct rdma_cm_id *id = new_id(ch, addr, port, true, &ai);
	int ret;

	if (!id)
		return NULL;
	ret = rdma_bind_addr(id, ai->ai_src_addr);
	rdma_freeaddrinfo(ai);
	if (ret) {
		note("bind to %s:%s: %s", addr, port, strerror(errno));
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

struct rdma_cm_id *kc_listen(struct rdma_event_channel *ch, const char *addr,
			     const char *port, int backlog)
{
	struct rdma_cm_id *id = kc_bind(ch, addr, port);

	if (id && rdma_listen(id, backlog)) {
		note("listen on %s:%s: %s", addr, port, strerror(errno));
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

struct rdma_cm_id *kc_listen_or_die(struct rdma_event_channel *ch,
				    const char *addr, const char *port,
				    int backlog)
{
	struct rdma_cm_id *id = kc_listen(ch, addr, port, backlog);

	if (!id)
		die("listen on %s:%s", addr, port);
	return id;
}

struct rdma_cm_id *kc_resolve(struct rdma_event_channel *ch, const char *addr,
			      const char *port)
{
	struct rdma_addrinfo *ai;
	struct rdma_cm_id *id = new_id(ch, addr, port, false, &ai);
	int ret;

	if (!id)
		return NULL;
	ret = rdma_resolve_addr(id, NULL, ai->ai_dst_addr, 5000) ||
	      kc_wait(ch, id, RDMA_CM_EVENT_ADDR_RESOLVED, 10000) ||
	      rdma_resolve_route(id, 5000) ||
	      kc_wait(ch, id, RDMA_CM_EVENT_ROUTE_RESOLVED, 10000);
	rdma_freeaddrinfo(ai);
	if (ret) {
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

struct rdma_cm_id *kc_resolve_or_die(struct rdma_event_channel *ch,
				     const char *addr, const char *port)
{
	struct rdma_cm_id *id = kc_resolve(ch, addr, port);

	if (!id)
		die("resolve %s:%s", addr, port);
	return id;
}

struct rdma_conn_param kc_param(uint8_t ird, uint8_t ord, const void *pdata,
				size_t len)
{
	return (struct rdma_conn_param){ .responder_resources = ird,
					 .initiator_depth = ord,
					 .private_data = pdata,
					 .private_data_len = len };
}

int kc_connect(struct rdma_event_channel *ch, struct rdma_cm_id *id,
	       const struct rdma_conn_param *cp, void *pdata, size_t len)
{
	struct rdma_cm_event *ev;
	int ret = 0;

	if (rdma_connect(id, (struct rdma_conn_param *)cp)) {
		note("rdma_connect: %s", strerror(errno));
		return -1;
	}
	ev = kc_event(ch, id, RDMA_CM_EVENT_ESTABLISHED, 20000);
	if (!ev)
		return -1;
	if (pdata && ev->param.conn.private_data_len < len) {
		note("%u bytes of private data, wanted %zu",
		     ev->param.conn.private_data_len, len);
		ret = -1;
	} else if (pdata) {
		memcpy(pdata, ev->param.conn.private_data, len);
	}
	rdma_ack_cm_event(ev);
	return ret;
}

void kc_connect_or_die(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		       const struct rdma_conn_param *cp, void *pdata,
		       size_t len)
{
	if (kc_connect(ch, id, cp, pdata, len))
		die("connect");
}

int kc_accept(struct rdma_event_channel *ch, struct rdma_cm_id *id,
	      const struct rdma_conn_param *cp)
{
	if (rdma_accept(id, (struct rdma_conn_param *)cp)) {
		note("rdma_accept: %s", strerror(errno));
		return -1;
	}
	return kc_wait(ch, id, RDMA_CM_EVENT_ESTABLISHED, 20000);
}

void kc_accept_or_die(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		      const struct rdma_conn_param *cp)
{
	if (kc_accept(ch, id, cp))
		die("accept");
}

struct rdma_cm_id *kc_request(struct rdma_event_channel *ch, void *pdata,
			      size_t len)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	if (ndeferred) {
		id = deferred[0];
		memmove(deferred, deferred + 1, --ndeferred * sizeof(*deferred));
		if (pdata)
			memset(pdata, 0, len);
		return id;
	}
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;

	if (pdata) {
		memset(pdata, 0, len);
		if (len > ev->param.conn.private_data_len)
			len = ev->param.conn.private_data_len;
		memcpy(pdata, ev->param.conn.private_data, len);
	}
	rdma_ack_cm_event(ev);
	return id;
}

int kc_disconnect(struct rdma_event_channel *ch, struct rdma_cm_id *id, int ms)
{
	rdma_disconnect(id);
	return kc_wait(ch, id, RDMA_CM_EVENT_DISCONNECTED, ms);
}
