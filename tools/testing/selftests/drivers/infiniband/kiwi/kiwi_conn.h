/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdma_cm for kiwi's user-space test programs: wait for an event, listen,
 * resolve, connect, accept, disconnect. The kc_ functions print a comment
 * and return NULL or -1 on failure, for the programs that make a test
 * point of it; expect() and the kc_*_or_die() ones end the program.
 */
#ifndef KIWI_CONN_H
#define KIWI_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/rdma_cma.h>

/* A buffer a passive side exports in its accept's private data. */
struct kc_info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t idx;		/* the server's number for this connection */
};

/*
 * Called for a DISCONNECTED event that comes while another event is
 * awaited, which is then skipped; unset, such an event is a mismatch.
 * For programs that end connections without waiting for their end.
 */
extern void (*kc_ended)(struct rdma_cm_id *id);

/*
 * When set, a connection request that comes while another event is
 * awaited is kept (its id, not its private data) for the next
 * kc_request(); unset, it is a mismatch. For servers whose peer may start
 * its next connection before the last one has ended on this side.
 */
extern bool kc_defer_requests;

/* The next event on @ch within @ms milliseconds (-1: no limit), or NULL. */
struct rdma_cm_event *kc_next(struct rdma_event_channel *ch, int ms);

/*
 * The next event on @ch within @ms milliseconds (-1: no limit) if it is
 * @want (and on @id, unless NULL); NULL otherwise. TIMEWAIT_EXIT, the late
 * echo of an old connection, is skipped. The caller acks the event.
 */
struct rdma_cm_event *kc_event(struct rdma_event_channel *ch,
			       struct rdma_cm_id *id,
			       enum rdma_cm_event_type want, int ms);

/* Wait for @want on @id as kc_event() does and ack it; 0 when it came. */
int kc_wait(struct rdma_event_channel *ch, struct rdma_cm_id *id,
	    enum rdma_cm_event_type want, int ms);

/* The next event, which must be @want (no time limit); else die(). */
struct rdma_cm_event *expect(struct rdma_event_channel *ch,
			     enum rdma_cm_event_type want);

/* expect() and ack. */
void expect_ack(struct rdma_event_channel *ch, enum rdma_cm_event_type want);

/* A cm_id bound to @addr:@port, not listening yet, or NULL. */
struct rdma_cm_id *kc_bind(struct rdma_event_channel *ch, const char *addr,
			   const char *port);

/* A cm_id listening on @addr:@port, or NULL. */
struct rdma_cm_id *kc_listen(struct rdma_event_channel *ch, const char *addr,
			     const char *port, int backlog);
struct rdma_cm_id *kc_listen_or_die(struct rdma_event_channel *ch,
				    const char *addr, const char *port,
				    int backlog);

/* A new cm_id with its address and route to @addr:@port resolved, or NULL. */
struct rdma_cm_id *kc_resolve(struct rdma_event_channel *ch, const char *addr,
			      const char *port);
struct rdma_cm_id *kc_resolve_or_die(struct rdma_event_channel *ch,
				     const char *addr, const char *port);

/* Connection parameters with IRD @ird, ORD @ord and private data. */
struct rdma_conn_param kc_param(uint8_t ird, uint8_t ord, const void *pdata,
				size_t len);

/*
 * rdma_connect @id with @cp and wait for ESTABLISHED; @len bytes of the
 * peer's private data go to @pdata, when not NULL, and must have come.
 * Return: 0, or -1.
 */
int kc_connect(struct rdma_event_channel *ch, struct rdma_cm_id *id,
	       const struct rdma_conn_param *cp, void *pdata, size_t len);
void kc_connect_or_die(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		       const struct rdma_conn_param *cp, void *pdata,
		       size_t len);

/* rdma_accept @id with @cp and wait for ESTABLISHED; 0, or -1. */
int kc_accept(struct rdma_event_channel *ch, struct rdma_cm_id *id,
	      const struct rdma_conn_param *cp);
void kc_accept_or_die(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		      const struct rdma_conn_param *cp);

/*
 * The next connection request (no time limit), its private data copied
 * to @pdata (up to @len bytes; zeros for a deferred one) when not NULL;
 * dies on anything else.
 */
struct rdma_cm_id *kc_request(struct rdma_event_channel *ch, void *pdata,
			      size_t len);

/* rdma_disconnect @id and wait up to @ms for its DISCONNECTED; 0, or -1. */
int kc_disconnect(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		  int ms);

#endif /* KIWI_CONN_H */
