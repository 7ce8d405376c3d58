/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdma_cm boilerplate for the user-space verbs tests: listen, resolve a
 * route, connect, wait for an event. The passive side hands its peer a
 * struct kiwi_conn_info (its buffer's address and rkey) as private data.
 * Failures print a "# fatal" comment and return NULL or -1: each program
 * decides how to die.
 */
#ifndef KIWI_CONN_H
#define KIWI_CONN_H

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rdma/rdma_cma.h>

struct kiwi_conn_info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t idx;		/* the server's number for this connection */
};

/*
 * The next event on @ch within about @ms milliseconds (-1: no limit) if
 * it is @want (and on @id, unless NULL); NULL otherwise. The caller acks
 * it.
 */
static inline struct rdma_cm_event *
conn_event(struct rdma_event_channel *ch, struct rdma_cm_id *id,
	   enum rdma_cm_event_type want, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) != 1 || rdma_get_cm_event(ch, &ev)) {
		printf("# no rdma_cm event in %d ms (wanted %s)\n", ms,
		       rdma_event_str(want));
		return NULL;
	}
	if (ev->event != want || (id && ev->id != id)) {
		printf("# rdma_cm event %s status %d, wanted %s\n",
		       rdma_event_str(ev->event), ev->status,
		       rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

/* Wait for @want on @id and ack it; 0 when it came. */
static inline int conn_wait(struct rdma_event_channel *ch,
			    struct rdma_cm_id *id,
			    enum rdma_cm_event_type want, int ms)
{
	struct rdma_cm_event *ev = conn_event(ch, id, want, ms);

	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	return 0;
}

/* A new cm_id and @addr:@port resolved in *@ai, or NULL. */
static inline struct rdma_cm_id *conn_id(struct rdma_event_channel *ch,
					 const char *addr, const char *port,
					 int passive, struct rdma_addrinfo **ai)
{
	struct rdma_addrinfo hints = { .ai_flags = passive ? RAI_PASSIVE : 0,
				       .ai_port_space = RDMA_PS_TCP };
	struct rdma_cm_id *id;

	if (rdma_getaddrinfo(addr, port, &hints, ai))
		return NULL;
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		rdma_freeaddrinfo(*ai);
		return NULL;
	}
	return id;
}

/* A cm_id listening on @addr:@port, or NULL. */
static inline struct rdma_cm_id *conn_listen(struct rdma_event_channel *ch,
					     const char *addr, const char *port,
					     int backlog)
{
	struct rdma_addrinfo *ai;
	struct rdma_cm_id *id = conn_id(ch, addr, port, 1, &ai);
	int ret;

	if (!id)
		return NULL;
	ret = rdma_bind_addr(id, ai->ai_src_addr) || rdma_listen(id, backlog);
	rdma_freeaddrinfo(ai);
	if (ret) {
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

/* A new cm_id with its address and route to @addr:@port resolved, or NULL. */
static inline struct rdma_cm_id *conn_resolve(struct rdma_event_channel *ch,
					      const char *addr, const char *port)
{
	struct rdma_addrinfo *ai;
	struct rdma_cm_id *id = conn_id(ch, addr, port, 0, &ai);
	int ret;

	if (!id)
		return NULL;
	ret = rdma_resolve_addr(id, NULL, ai->ai_dst_addr, 5000) ||
	      conn_wait(ch, id, RDMA_CM_EVENT_ADDR_RESOLVED, 10000) ||
	      rdma_resolve_route(id, 5000) ||
	      conn_wait(ch, id, RDMA_CM_EVENT_ROUTE_RESOLVED, 10000);
	rdma_freeaddrinfo(ai);
	if (ret) {
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

/*
 * rdma_connect @id with @cp and wait for ESTABLISHED; the peer's private
 * data goes to @peer. Return: 0, or -1.
 */
static inline int conn_connect(struct rdma_event_channel *ch,
			       struct rdma_cm_id *id,
			       struct rdma_conn_param *cp,
			       struct kiwi_conn_info *peer)
{
	struct rdma_cm_event *ev;

	if (rdma_connect(id, cp)) {
		printf("# rdma_connect: %s\n", strerror(errno));
		return -1;
	}
	ev = conn_event(ch, id, RDMA_CM_EVENT_ESTABLISHED, 20000);
	if (!ev)
		return -1;
	if (ev->param.conn.private_data_len < sizeof(*peer)) {
		rdma_ack_cm_event(ev);
		return -1;
	}
	memcpy(peer, ev->param.conn.private_data, sizeof(*peer));
	rdma_ack_cm_event(ev);
	return 0;
}

#endif /* KIWI_CONN_H */
