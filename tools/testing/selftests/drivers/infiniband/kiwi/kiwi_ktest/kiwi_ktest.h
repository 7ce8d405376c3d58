/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kiwi_ktest: TAP reporting of the kernel test modules. Their cases run
 * at load time and print "MODULE: ok N - case: what" through the kernel
 * log; kt_end() prints the plan and fails the load if any point failed.
 * ktest_run in lib.sh re-emits the lines. Include after defining pr_fmt.
 *
 * The modules that connect through rdma_cm share one kind of end: struct
 * kt_cm_end records every event its id gets, and kt_cm_wait() waits, for
 * KT_TIMEOUT at most, for the next to be the one the test expects.
 */
#ifndef _KIWI_KTEST_H
#define _KIWI_KTEST_H

#include <linux/delay.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/moduleparam.h>
#include <linux/printk.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <net/net_namespace.h>
#include <rdma/rdma_cm.h>

/**
 * struct kt - the state of one module's run
 * @ibdev: the device the cases run on, where there is just one
 * @name: the running case, in front of each point's description
 * @n: points so far
 * @failed: points that failed
 */
struct kt {
	struct ib_device *ibdev;
	const char *name;
	int n;
	int failed;
};

/* One TAP test point; returns @ok so a case can stop on a failure. */
static inline __printf(3, 4) bool kt_check(struct kt *kt, bool ok,
					   const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	kt->n++;
	if (!ok)
		kt->failed++;
	pr_info("%sok %d - %s: %pV\n", ok ? "" : "not ", kt->n, kt->name,
		&vaf);
	va_end(args);
	return ok;
}

static inline void kt_begin(void)
{
	pr_info("TAP version 13\n");
}

/* The plan and a summary. Return: the load's result. */
static inline int kt_end(const struct kt *kt)
{
	pr_info("1..%d\n", kt->n);
	pr_info("# %d of %d failed\n", kt->failed, kt->n);
	return kt->failed ? -EINVAL : 0;
}

/*
 * One point: module parameter @param is @fd, a file descriptor of a network
 * namespace open in insmod. Return: a reference to it (put_net()), or NULL.
 */
static inline struct net *kt_net(struct kt *kt, int fd, const char *param)
{
	struct net *net = fd >= 0 ? get_net_ns_by_fd(fd) : ERR_PTR(-EBADF);

	if (!kt_check(kt, !IS_ERR(net), "%s=%d is a network namespace (%d)",
		      param, fd, PTR_ERR_OR_ZERO(net)))
		return NULL;
	return net;
}

/*
 * KT_PAIR_PARAMS() - the module parameters of a test between two network
 * namespaces: netns_a and netns_b, fds of the client's and the server's
 * namespace open in insmod (kt_net()); addr_a and addr_b, their IPv4
 * addresses; port, the server's, @default_port unless given.
 */
#define KT_PAIR_PARAMS(default_port)					\
	static int netns_a = -1;					\
	module_param(netns_a, int, 0);					\
	MODULE_PARM_DESC(netns_a, "fd of the client's network namespace, open in insmod"); \
	static int netns_b = -1;					\
	module_param(netns_b, int, 0);					\
	MODULE_PARM_DESC(netns_b, "fd of the server's network namespace, open in insmod"); \
	static char *addr_a = "192.0.2.1";				\
	module_param(addr_a, charp, 0444);				\
	MODULE_PARM_DESC(addr_a, "the client's IPv4 address");	\
	static char *addr_b = "192.0.2.2";				\
	module_param(addr_b, charp, 0444);				\
	MODULE_PARM_DESC(addr_b, "the server's IPv4 address");	\
	static char *port = default_port;				\
	module_param(port, charp, 0444);				\
	MODULE_PARM_DESC(port, "the server's TCP port")

#define KT_TIMEOUT	(20 * HZ)	/* the longest wait for the peer */

/*
 * Poll @cq (IB_POLL_DIRECT) for @want completions into @wc, for up to
 * KT_TIMEOUT. Return: how many came, or ib_poll_cq()'s error.
 */
static inline int kt_poll_cq(struct ib_cq *cq, struct ib_wc *wc, int want)
{
	unsigned long end = jiffies + KT_TIMEOUT;
	int got = 0;

	while (got < want && time_before(jiffies, end)) {
		int r = ib_poll_cq(cq, want - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (got < want)
			usleep_range(200, 500);
	}
	return got;
}

/* ---- one end of an rdma_cm connection ---- */

#define KT_RESOLVE_MS	5000		/* for address and route */
#define KT_CM_EVENTS	8

/* An rdma_cm event as kt_cm_handler() recorded it. */
struct kt_cm_event {
	enum rdma_cm_event_type type;
	int status;
};

/**
 * struct kt_cm_end - an rdma_cm id of a test and the events it got
 * @name: "A", "B", "listener": in front of its comments
 * @id: the id; a server end's comes with its connect request
 * @waiting: a listener's server ends, which take its connect requests in
 *	turn (kt_cm_serve())
 * @node: a server end's place in its listener's @waiting
 * @lock: protects @waiting, @ev, @head and @tail
 * @wq: woken when an event is recorded
 * @ev: the events, a ring
 * @head: the next event kt_cm_wait() looks at
 * @tail: where the next event goes
 */
struct kt_cm_end {
	const char *name;
	struct rdma_cm_id *id;
	struct list_head waiting;
	struct list_head node;
	spinlock_t lock;	/* see @lock above */
	wait_queue_head_t wq;
	struct kt_cm_event ev[KT_CM_EVENTS];
	unsigned int head;
	unsigned int tail;
};

static inline void kt_cm_init(struct kt_cm_end *e, const char *name)
{
	e->name = name;
	e->id = NULL;
	INIT_LIST_HEAD(&e->waiting);
	INIT_LIST_HEAD(&e->node);
	spin_lock_init(&e->lock);
	init_waitqueue_head(&e->wq);
	e->head = 0;
	e->tail = 0;
}

/* Server end @e (its id NULL) takes listener @l's next connect request. */
static inline void kt_cm_serve(struct kt_cm_end *l, struct kt_cm_end *e)
{
	unsigned long flags;

	spin_lock_irqsave(&l->lock, flags);
	list_add_tail(&e->node, &l->waiting);
	spin_unlock_irqrestore(&l->lock, flags);
}

/*
 * The rdma_cm event handler of every kt_cm_end: records the event in the
 * end's ring (a full ring drops it: kt_cm_wait() then times out). A
 * connect request's new id goes to the listener's first waiting server
 * end; with none waiting it is refused, and rdma_cm destroys it.
 */
static inline int kt_cm_handler(struct rdma_cm_id *id,
				struct rdma_cm_event *event)
{
	struct kt_cm_end *e = id->context, *l = e;
	unsigned long flags;

	if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		spin_lock_irqsave(&l->lock, flags);
		e = list_first_entry_or_null(&l->waiting, struct kt_cm_end,
					     node);
		if (e)
			list_del_init(&e->node);
		spin_unlock_irqrestore(&l->lock, flags);
		if (!e)
			return -ECONNREFUSED;
		e->id = id;
		id->context = e;
	}
	spin_lock_irqsave(&e->lock, flags);
	if (e->tail - e->head < KT_CM_EVENTS) {
		e->ev[e->tail % KT_CM_EVENTS].type = event->event;
		e->ev[e->tail % KT_CM_EVENTS].status = event->status;
		e->tail++;
	}
	spin_unlock_irqrestore(&e->lock, flags);
	wake_up(&e->wq);
	return 0;
}

static inline bool kt_cm_pending(struct kt_cm_end *e)
{
	unsigned long flags;
	bool pending;

	spin_lock_irqsave(&e->lock, flags);
	pending = e->head != e->tail;
	spin_unlock_irqrestore(&e->lock, flags);
	return pending;
}

/*
 * kt_cm_next() - wait for an end's next rdma_cm event, whatever it is
 * Return: false (with a comment naming @want) if none came in KT_TIMEOUT.
 */
static inline bool kt_cm_next(struct kt_cm_end *e, struct kt_cm_event *ev,
			      enum rdma_cm_event_type want)
{
	unsigned long flags;

	if (!wait_event_timeout(e->wq, kt_cm_pending(e), KT_TIMEOUT)) {
		pr_info("# %s: no rdma_cm event in %d s, waiting for %s\n",
			e->name, KT_TIMEOUT / HZ, rdma_event_msg(want));
		return false;
	}
	spin_lock_irqsave(&e->lock, flags);
	*ev = e->ev[e->head++ % KT_CM_EVENTS];
	spin_unlock_irqrestore(&e->lock, flags);
	return true;
}

/**
 * kt_cm_wait() - wait for an end's next rdma_cm event
 * @e: the end
 * @type: the event the test expects
 *
 * A comment says what came instead, or that nothing did in KT_TIMEOUT.
 *
 * Return: true if the next event is @type, with status 0.
 */
static inline bool kt_cm_wait(struct kt_cm_end *e,
			      enum rdma_cm_event_type type)
{
	struct kt_cm_event ev;

	if (!kt_cm_next(e, &ev, type))
		return false;
	if (ev.type == type && !ev.status)
		return true;
	pr_info("# %s: got %s (status %d), waiting for %s\n", e->name,
		rdma_event_msg(ev.type), ev.status, rdma_event_msg(type));
	return false;
}

/* @e's id, RC in the TCP port space of @net. Return: 0 or an error. */
static inline int kt_cm_create(struct kt_cm_end *e, struct net *net)
{
	struct rdma_cm_id *id = rdma_create_id(net, kt_cm_handler, e,
					       RDMA_PS_TCP, IB_QPT_RC);

	e->id = IS_ERR(id) ? NULL : id;
	return PTR_ERR_OR_ZERO(id);
}

/*
 * A client end's address, then its route: 0 once ADDR_RESOLVED (then
 * ROUTE_RESOLVED) came, the call's error, or -ETIMEDOUT for anything else.
 */
static inline int kt_cm_resolve_addr(struct kt_cm_end *e,
				     struct sockaddr *src, struct sockaddr *dst)
{
	int ret = rdma_resolve_addr(e->id, src, dst, KT_RESOLVE_MS);

	if (!ret && !kt_cm_wait(e, RDMA_CM_EVENT_ADDR_RESOLVED))
		ret = -ETIMEDOUT;
	return ret;
}

static inline int kt_cm_resolve_route(struct kt_cm_end *e)
{
	int ret = rdma_resolve_route(e->id, KT_RESOLVE_MS);

	if (!ret && !kt_cm_wait(e, RDMA_CM_EVENT_ROUTE_RESOLVED))
		ret = -ETIMEDOUT;
	return ret;
}

/* rdma_accept() of server end @e, outside its handler: under its lock. */
static inline int kt_cm_accept(struct kt_cm_end *e,
			       struct rdma_conn_param *param)
{
	int ret;

	rdma_lock_handler(e->id);
	ret = rdma_accept(e->id, param);
	rdma_unlock_handler(e->id);
	return ret;
}

#endif /* _KIWI_KTEST_H */
