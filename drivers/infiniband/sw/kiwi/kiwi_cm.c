// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: the iWARP connection manager.
 *
 * Behind the RDMA core's iw_cm, each connection is a kiwi_cep that owns a
 * kernel TCP socket: the active side connects and sends an MPA Request, the
 * passive side accepts on a listening socket and reads it, the consumer
 * accepts or rejects, and the MPA Reply ends the exchange (RFC 5044 section
 * 7.1; RFC 6581 adds IRD/ORD negotiation and the ready-to-receive message).
 * The endpoint then hands its socket to the QP's engines, which see only
 * FPDUs: MPA frames are read with exact lengths, so bytes the peer sent
 * right behind its frame stay in the socket for the receive engine.
 *
 * Context: socket callbacks (softirq) only queue cep->work; everything else
 * runs in process context under cep->lock. Events go to the iw_cm, which
 * queues them, so they may be raised under cep->lock. Lock order: the
 * table in Documentation/infiniband/kiwi.rst ("Locking and context").
 */

#include <linux/inet.h>
#include <linux/inetdevice.h>
#include <linux/module.h>
#include <linux/tcp.h>
#include <net/addrconf.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "kiwi.h"
#include "kiwi_trace.h"
#include "kiwi_fault.h"

static struct workqueue_struct *kiwi_cm_wq;

/*
 * Connect requests handed to the iw_cm (KIWI_CEP_RECVD_REQ), by a key of
 * their own that the iw_cm carries as provider_data; each entry holds a
 * reference. The iw_cm hands a request back by accept or reject, which
 * take it out, but not always: it drops the events a listener had queued
 * when it is destroyed (IWCM_F_DROP_EVENTS). So kiwi ends a request
 * itself once it is dead - its peer gave up, its device goes - and an
 * accept or reject that comes later finds no entry rather than an
 * endpoint that is gone. Keys are allocated cyclically: a late call does
 * not meet a new request under an old key.
 */
static DEFINE_XARRAY_ALLOC1(kiwi_cm_requests);
static u32 kiwi_cm_next_req;

/* One listen request: a listening endpoint per local address. */
struct kiwi_listen {
	struct list_head ceps;
};

static void kiwi_cep_work(struct work_struct *work);
static void kiwi_cep_timeout(struct work_struct *work);
static void kiwi_cep_watch(struct work_struct *work);

static struct kiwi_cep *kiwi_cep_alloc(struct kiwi_device *kdev)
{
	struct kiwi_cep *cep = kiwi_fault() ? NULL :
				kzalloc(sizeof(*cep), GFP_KERNEL);

	if (!cep)
		return NULL;
	atomic_inc(&kiwi_cm_endpoints);
	kref_init(&cep->ref);
	mutex_init(&cep->lock);
	cep->kdev = kdev;
	cep->state = KIWI_CEP_IDLE;
	INIT_WORK(&cep->work, kiwi_cep_work);
	INIT_DELAYED_WORK(&cep->timer, kiwi_cep_timeout);
	INIT_DELAYED_WORK(&cep->watch, kiwi_cep_watch);
	INIT_LIST_HEAD(&cep->list);
	INIT_LIST_HEAD(&cep->children);
	return cep;
}

static void kiwi_cep_release(struct kref *ref)
{
	struct kiwi_cep *cep = container_of(ref, struct kiwi_cep, ref);

	WARN_ON(cep->sock || cep->qp || cep->cm_id);
	if (cep->listener)
		kiwi_cep_put(cep->listener);
	kfree(cep);
	atomic_dec(&kiwi_cm_endpoints);
}

void kiwi_cep_put(struct kiwi_cep *cep)
{
	kref_put(&cep->ref, kiwi_cep_release);
}

static void kiwi_cep_queue(struct kiwi_cep *cep)
{
	kref_get(&cep->ref);
	if (!queue_work(kiwi_cm_wq, &cep->work))
		kiwi_cep_put(cep);
}

/* Socket callbacks while the endpoint negotiates, listens or closes. */
static void kiwi_cm_sk_event(struct sock *sk)
{
	struct kiwi_cep *cep;

	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep)
		kiwi_cep_queue(cep);
	read_unlock_bh(&sk->sk_callback_lock);
}

/* Let go of a socket kiwi made or accepted (counted in kiwi_cm_sockets). */
static void kiwi_cm_sock_release(struct socket *sock)
{
	sock_release(sock);
	atomic_dec(&kiwi_cm_sockets);
}

/* Take the socket's callbacks; the socket holds a reference on @cep. */
static void kiwi_cep_sock_attach(struct kiwi_cep *cep, struct socket *sock)
{
	struct sock *sk = sock->sk;

	cep->sock = sock;
	kref_get(&cep->ref);
	write_lock_bh(&sk->sk_callback_lock);
	cep->saved_data_ready = sk->sk_data_ready;
	cep->saved_state_change = sk->sk_state_change;
	cep->saved_write_space = sk->sk_write_space;
	cep->saved_error_report = sk->sk_error_report;
	sk->sk_user_data = cep;
	sk->sk_data_ready = kiwi_cm_sk_event;
	sk->sk_state_change = kiwi_cm_sk_event;
	write_unlock_bh(&sk->sk_callback_lock);
}

/* Give the callbacks back and close the socket; with @abrupt, reset it. */
static int kiwi_cep_discard(read_descriptor_t *desc, struct sk_buff *skb,
			    unsigned int off, size_t len)
{
	return len;
}

static void kiwi_cep_sock_close(struct kiwi_cep *cep, bool abrupt)
{
	struct socket *sock = cep->sock;
	struct sock *sk;

	if (!sock)
		return;
	sk = sock->sk;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = cep->saved_data_ready;
	sk->sk_state_change = cep->saved_state_change;
	sk->sk_write_space = cep->saved_write_space;
	sk->sk_error_report = cep->saved_error_report;
	write_unlock_bh(&sk->sk_callback_lock);

	if (abrupt) {
		sock_no_linger(sk);
	} else {
		/*
		 * TCP closes a socket holding unread data with a reset, and
		 * drops what is still queued to send: a Terminate above all.
		 * What the peer sent is of no use any more.
		 */
		read_descriptor_t desc = { .count = 1 };

		lock_sock(sk);
		tcp_read_sock(sk, &desc, kiwi_cep_discard);
		release_sock(sk);
		kernel_sock_shutdown(sock, SHUT_RDWR);
	}
	kiwi_cm_sock_release(sock);
	cep->sock = NULL;
	kiwi_cep_put(cep);	/* the socket's reference */
}

static void kiwi_cep_set_cm_id(struct kiwi_cep *cep, struct iw_cm_id *cm_id)
{
	cm_id->add_ref(cm_id);
	cep->cm_id = cm_id;
}

static void kiwi_cep_drop_cm_id(struct kiwi_cep *cep)
{
	struct iw_cm_id *cm_id = cep->cm_id;

	if (!cm_id)
		return;
	cep->cm_id = NULL;
	cm_id->rem_ref(cm_id);
}

/* Stop the MPA timer; its reference goes with it. Context: cep->lock held
 * by a caller that has its own reference.
 */
static void kiwi_cep_cancel_timer(struct kiwi_cep *cep)
{
	lockdep_assert_held(&cep->lock);
	if (cancel_delayed_work(&cep->timer))
		kiwi_cep_put(cep);
}

/*
 * How often a connection in RDMA mode is checked, and, while it has
 * nothing to say, probed: a third of its LLP timeout, at least a second.
 */
static unsigned long kiwi_cep_watch_period(struct kiwi_cep *cep)
{
	return max_t(unsigned long, HZ, cep->llp / 3);
}

static void kiwi_cep_watch_queue(struct kiwi_cep *cep)
{
	kref_get(&cep->ref);
	if (!queue_delayed_work(kiwi_cm_wq, &cep->watch,
				kiwi_cep_watch_period(cep)))
		kiwi_cep_put(cep);
}

/*
 * The connection enters RDMA mode: from now on a peer that goes silent -
 * gone, frozen, cut off - or stops taking data fails it within the LLP
 * timeout (kiwi_cep_watch()). TCP alone would retransmit unacknowledged
 * data for many minutes, and would never notice a dead peer on a stream
 * that carries nothing, as a QP that only waits for the peer's messages
 * (receives posted, an RDMA Read outstanding) does. TCP keepalive probes
 * a stream that has been idle for a third of the timeout, so that a live
 * peer keeps answering; TCP itself never gives up on the probes first.
 * Context: cep->lock held.
 */
static void kiwi_cep_watch_start(struct kiwi_cep *cep)
{
	struct sock *sk = cep->sock->sk;
	int period;

	lockdep_assert_held(&cep->lock);
	cep->llp = (unsigned long)READ_ONCE(kiwi_llp_timeout) * HZ;
	period = kiwi_cep_watch_period(cep) / HZ;
	tcp_sock_set_keepidle(sk, period);
	tcp_sock_set_keepintvl(sk, period);
	tcp_sock_set_keepcnt(sk, MAX_TCP_KEEPCNT);
	sock_set_keepalive(sk);
	cep->watch_una = READ_ONCE(tcp_sk(sk)->snd_una);
	cep->watch_since = tcp_jiffies32;
	kiwi_cep_watch_queue(cep);
}

/*
 * Is the stream stalled? Nothing came from the peer (data, an
 * acknowledgment, an answer to a keepalive probe) for the LLP timeout,
 * but never less than two seconds (probes go out after a second of
 * silence at the least), or it has data of ours it neither acknowledges
 * nor takes (its window shut) for the LLP timeout. Context: cep->lock
 * held.
 */
static bool kiwi_cep_stalled(struct kiwi_cep *cep)
{
	struct sock *sk = cep->sock->sk;
	struct tcp_sock *tp = tcp_sk(sk);
	bool stalled = false;
	u32 una;

	lockdep_assert_held(&cep->lock);
	lock_sock(sk);
	if (sk->sk_state == TCP_ESTABLISHED) {
		una = tp->snd_una;
		if (una == tp->write_seq || una != cep->watch_una) {
			cep->watch_una = una;
			cep->watch_since = tcp_jiffies32;
		}
		stalled = keepalive_time_elapsed(tp) >=
				max_t(unsigned long, cep->llp, 2 * HZ) ||
			  tcp_jiffies32 - cep->watch_since >= cep->llp;
	}
	release_sock(sk);
	return stalled;
}

/*
 * The periodic check of a connection in RDMA mode. A stalled one is lost:
 * reset, its QP in ERR with IB_EVENT_QP_FATAL, as when TCP gives up
 * ("LLP Connection Lost", V-ST-T1, V-SEC-6). A graceful close has a
 * timeout of its own.
 */
static void kiwi_cep_watch(struct work_struct *work)
{
	struct kiwi_cep *cep = container_of(to_delayed_work(work),
					    struct kiwi_cep, watch);

	mutex_lock(&cep->lock);
	if (cep->state == KIWI_CEP_RDMA && cep->sock && !cep->closing) {
		if (!kiwi_cep_stalled(cep)) {
			kiwi_cep_watch_queue(cep);
		} else {
			ibdev_info_ratelimited(&cep->kdev->ibdev,
					       "QP %u: no progress from the peer for %lu s, resetting the connection\n",
					       cep->qp ? cep->qp->base_qp.qp_num : 0,
					       cep->llp / HZ);
			if (kiwi_cm_lost(cep))
				kiwi_stat_inc(cep->kdev, KIWI_STAT_LLP_TIMEOUT);
		}
	}
	mutex_unlock(&cep->lock);
	kiwi_cep_put(cep);	/* the check's reference */
}

/*
 * Raise an iw_cm event on @cm_id about @cep. Return: the iw_cm's answer;
 * it refuses a CONNECT_REQUEST (-ENOMEM) when the listener's backlog of
 * unhandled requests is full. Context: cep->lock held.
 */
static int kiwi_cm_event(struct kiwi_cep *cep, struct iw_cm_id *cm_id,
			 enum iw_cm_event_type type, int status)
{
	struct iw_cm_event ev = {
		.event = type,
		.status = status,
	};

	lockdep_assert_held(&cep->lock);
	if (!cm_id)
		return 0;
	if (cep->sock) {
		kernel_getsockname(cep->sock, (struct sockaddr *)&ev.local_addr);
		kernel_getpeername(cep->sock, (struct sockaddr *)&ev.remote_addr);
	}
	if (type == IW_CM_EVENT_CONNECT_REQUEST) {
		ev.provider_data = (void *)(unsigned long)cep->req_id;
		ev.ird = cep->ird;
		ev.ord = cep->ord;
	}
	if (type == IW_CM_EVENT_CONNECT_REPLY ||
	    type == IW_CM_EVENT_ESTABLISHED) {
		ev.ird = cep->ird;
		ev.ord = cep->ord;
	}
	if ((type == IW_CM_EVENT_CONNECT_REQUEST ||
	     type == IW_CM_EVENT_CONNECT_REPLY) && cep->peer.ulp_pdata_len) {
		ev.private_data = (void *)cep->peer.ulp_pdata;
		ev.private_data_len = cep->peer.ulp_pdata_len;
	}
	trace_kiwi_cm_event(cm_id->device, &ev);
	return cm_id->event_handler(cm_id, &ev);
}

static int kiwi_cm_send(struct socket *sock, const void *buf, size_t len)
{
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	int ret = kernel_sendmsg(sock, &msg, &iov, 1, len);

	if (ret < 0)
		return ret;
	return ret == len ? 0 : -EAGAIN;
}

/* Send our MPA Request (active) or Reply (passive). */
static int kiwi_cm_send_mpa(struct kiwi_cep *cep, bool reply, bool reject)
{
	struct kiwi_mpa_frame f = {
		.reply = reply,
		.crc = cep->crc,
		.reject = reject,
		.enhanced = cep->enhanced,
		.large_fpdus = cep->large_fpdus && !reject,
		.rev = cep->enhanced ? 2 : 1,
		/* A Reply is peer-to-peer only to a Request that was. */
		.p2p = cep->enhanced && (!reply || cep->peer.p2p),
		.ird = cep->ird,
		.ord = cep->ord,
		.rtr = cep->rtr,
		.ulp_pdata = cep->out_pdata,
		.ulp_pdata_len = cep->out_len,
	};
	u8 buf[KIWI_MPA_HDR_LEN + KIWI_MPA_MAX_PDATA];
	size_t len = kiwi_mpa_build(buf, &f);

	if (!len)
		return -EINVAL;
	return kiwi_cm_send(cep->sock, buf, len);
}

/*
 * Read the peer's MPA frame without reading past it.
 * Return: 1 with cep->peer decoded, 0 when more bytes are to come,
 * -ECONNRESET when the connection closed, -EBADMSG for a bad frame.
 */
static int kiwi_cm_recv_mpa(struct kiwi_cep *cep, bool want_reply)
{
	unsigned int need = KIWI_MPA_HDR_LEN;
	int ret;

	for (;;) {
		struct kvec iov;
		struct msghdr msg = { .msg_flags = MSG_DONTWAIT };

		if (cep->mpa_got >= KIWI_MPA_HDR_LEN) {
			ret = kiwi_mpa_parse(cep->mpa, cep->mpa_got, want_reply,
					     &cep->peer);
			if (ret == 0)
				return 1;
			if (ret < 0) {
				kiwi_stat_inc(cep->kdev, KIWI_STAT_MPA_FRAME_ERR);
				return -EBADMSG;
			}
			need = ret;
		}
		iov.iov_base = cep->mpa + cep->mpa_got;
		iov.iov_len = need - cep->mpa_got;
		ret = kernel_recvmsg(cep->sock, &msg, &iov, 1, iov.iov_len,
				     MSG_DONTWAIT);
		if (ret == -EAGAIN)
			return 0;
		if (ret <= 0) {
			kiwi_stat_inc(cep->kdev, KIWI_STAT_CM_CONN_ERR);
			return -ECONNRESET;
		}
		cep->mpa_got += ret;
	}
}

/* Undo a binding of endpoint and QP. Context: cep->lock held. */
static void kiwi_cep_unbind_qp(struct kiwi_cep *cep)
{
	struct kiwi_qp *qp = cep->qp;

	lockdep_assert_held(&cep->lock);
	if (!qp)
		return;
	kiwi_qp_cm_unbind(qp, cep);
	cep->qp = NULL;
	kiwi_qp_put(qp);
}

/*
 * A child leaves its listener's list of those awaiting their MPA Request.
 * Context: cep->lock held; takes the listener's (child, then listener).
 */
static void kiwi_cep_leave_listener(struct kiwi_cep *cep)
{
	struct kiwi_cep *lcep = cep->listener;

	lockdep_assert_held(&cep->lock);
	mutex_lock_nested(&lcep->lock, SINGLE_DEPTH_NESTING);
	list_del_init(&cep->list);
	mutex_unlock(&lcep->lock);
}

/*
 * Tear the endpoint down: QP to error, socket closed (reset unless
 * @graceful), CLOSE to a connected cm_id, all references dropped.
 *
 * With @fatal the stream failed, or broke the rules of a close: in the
 * order the verbs give (V-ST-C7), the stream is reset, the QP enters ERR,
 * and a QP still connected (RTS or SQD) raises IB_EVENT_QP_FATAL, before
 * the consumer hears of the close. The transmit engine may report the
 * stream failed (KIWI_CEP_CLOSE_LOST) while it is stopped here, a
 * Terminate undelivered: that ends the same way (V-LLP-8).
 *
 * Context: cep->lock held.
 */
static void kiwi_cep_end(struct kiwi_cep *cep, bool graceful, bool fatal)
{
	bool connected = cep->state == KIWI_CEP_RDMA;
	struct kiwi_qp *qp = cep->qp;
	enum ib_qp_state was = qp ? READ_ONCE(qp->state) : IB_QPS_ERR;

	lockdep_assert_held(&cep->lock);
	kiwi_cep_cancel_timer(cep);
	if (cep->state == KIWI_CEP_AWAIT_REQ)
		kiwi_cep_leave_listener(cep);
	if (cancel_delayed_work(&cep->watch))
		kiwi_cep_put(cep);
	if (fatal && cep->sock)
		tcp_abort(cep->sock->sk, ECONNABORTED);
	if (qp)
		kiwi_qp_cm_disconnected(qp, cep);
	if (test_bit(KIWI_CEP_CLOSE_LOST, &cep->close_req)) {
		fatal = true;
		graceful = false;
	}
	if (fatal && (was == IB_QPS_RTS || was == IB_QPS_SQD))
		kiwi_qp_async_event(qp, IB_EVENT_QP_FATAL);
	kiwi_cep_sock_close(cep, !graceful);
	kiwi_cep_unbind_qp(cep);
	if (connected)
		kiwi_cm_event(cep, cep->cm_id, IW_CM_EVENT_CLOSE, 0);
	kiwi_cep_drop_cm_id(cep);
	cep->state = KIWI_CEP_CLOSED;
}

static void kiwi_cep_teardown(struct kiwi_cep *cep, bool graceful)
{
	kiwi_cep_end(cep, graceful, false);
}

/* The active side failed before RDMA mode: tell the consumer once. */
static void kiwi_cep_connect_failed(struct kiwi_cep *cep, int status)
{
	kiwi_cm_event(cep, cep->cm_id, IW_CM_EVENT_CONNECT_REPLY, status);
	kiwi_cep_teardown(cep, false);
}

static bool kiwi_cm_peer_ok(struct kiwi_cep *cep)
{
	if (cep->peer.markers) {
		kiwi_stat_inc(cep->kdev, KIWI_STAT_MPA_NEGOTIATION_ERR);
		pr_info_ratelimited("kiwi: %s: peer requires MPA markers, which kiwi does not support; refusing the connection\n",
				    dev_name(&cep->kdev->ibdev.dev));
		return false;
	}
	return true;
}

/*
 * The ORD to run with when the consumer asked for @want and the peer
 * announced an IRD of @peer_ird (MPA v2): never more Reads in flight than
 * the peer takes, but never 0 when the consumer asked for Reads (V-RD-6);
 * ORD 0, which fails every Read (V-RD-4), only when it asked for none.
 */
static u16 kiwi_cm_ord(u32 want, u32 peer_ird)
{
	return want ? clamp_t(u32, peer_ird, 1, want) : 0;
}

/* Active side: the peer's MPA Reply is in. Context: cep->lock held. */
static void kiwi_cep_got_reply(struct kiwi_cep *cep)
{
	struct kiwi_mpa_frame *rep = &cep->peer;
	int ret;

	lockdep_assert_held(&cep->lock);
	if (rep->reject) {
		kiwi_stat_inc(cep->kdev, KIWI_STAT_MPA_REJECT_RCVD);
		kiwi_cep_connect_failed(cep, -ECONNREFUSED);
		return;
	}
	if (!kiwi_cm_peer_ok(cep)) {
		kiwi_cep_connect_failed(cep, -ECONNREFUSED);
		return;
	}
	/* MPA v2 or an RTR message we did not offer, or several RTRs */
	if ((rep->enhanced && !cep->enhanced) ||
	    (rep->rtr & (rep->rtr - 1)) || (rep->rtr & ~cep->rtr)) {
		kiwi_stat_inc(cep->kdev, KIWI_STAT_MPA_NEGOTIATION_ERR);
		kiwi_cep_connect_failed(cep, -ECONNREFUSED);
		return;
	}
	cep->crc = cep->crc || rep->crc;
	cep->large_fpdus = cep->large_fpdus && rep->large_fpdus;
	if (cep->enhanced && rep->enhanced) {
		cep->ord = kiwi_cm_ord(cep->ord, rep->ird);
		cep->rtr = rep->p2p ? rep->rtr : KIWI_RTR_NONE;
	} else {
		cep->enhanced = false;
		cep->rtr = KIWI_RTR_NONE;
	}
	ret = kiwi_qp_cm_established(cep->qp, cep, true);
	if (ret) {
		kiwi_cep_connect_failed(cep, ret);
		return;
	}
	kiwi_cep_cancel_timer(cep);
	cep->state = KIWI_CEP_RDMA;
	kiwi_cep_watch_start(cep);
	kiwi_cm_event(cep, cep->cm_id, IW_CM_EVENT_CONNECT_REPLY, 0);
}

/*
 * A request handed to the iw_cm is dead: take it out of the table, and
 * with it the table's reference, unless accept or reject took it first.
 * Context: cep->lock held, by a caller with a reference of its own.
 */
static bool kiwi_cep_reap(struct kiwi_cep *cep)
{
	lockdep_assert_held(&cep->lock);
	if (cep->state != KIWI_CEP_RECVD_REQ ||
	    xa_cmpxchg(&kiwi_cm_requests, cep->req_id, cep, NULL, 0) != cep)
		return false;
	kiwi_cep_put(cep);
	return true;
}

/* Take the request @cm_id names out of the table: NULL if it is gone. */
static struct kiwi_cep *kiwi_cep_claim(struct iw_cm_id *cm_id)
{
	return xa_erase(&kiwi_cm_requests, (unsigned long)cm_id->provider_data);
}

/*
 * Passive side: refuse the peer's MPA Request with a Reply that rejects
 * it (no private data), and close. Context: cep->lock held.
 */
static void kiwi_cep_refuse(struct kiwi_cep *cep)
{
	lockdep_assert_held(&cep->lock);
	cep->out_len = 0;
	cep->rtr = KIWI_RTR_NONE;
	kiwi_stat_inc(cep->kdev, KIWI_STAT_MPA_REJECT_SENT);
	kiwi_cm_send_mpa(cep, true, true);
	kiwi_cep_teardown(cep, true);
}

/* Passive side: the peer's MPA Request is in. Context: cep->lock held. */
static void kiwi_cep_got_request(struct kiwi_cep *cep)
{
	struct kiwi_cep *lcep = cep->listener;
	struct kiwi_mpa_frame *req = &cep->peer;
	int ret;

	lockdep_assert_held(&cep->lock);
	if (!kiwi_cm_peer_ok(cep)) {
		kiwi_cep_refuse(cep);
		return;
	}
	cep->crc = req->crc || kiwi_crc_required;
	/* Our Reply carries the bit only to a peer that offered it. */
	cep->large_fpdus = req->large_fpdus && kiwi_large_fpdus_offered();
	cep->enhanced = req->enhanced && kiwi_mpa_rev >= 2;
	if (cep->enhanced) {
		cep->ird = req->ird;
		cep->ord = req->ord;
	} else {
		cep->ird = KIWI_MAX_IRD;
		cep->ord = KIWI_MAX_ORD;
	}
	kiwi_cep_cancel_timer(cep);

	/*
	 * Hand the request to the listener's consumer, if it still listens.
	 * Child, then listener: kiwi_cep_listen_work() nests the other way
	 * only around a child that nothing else can reach yet.
	 */
	mutex_lock_nested(&lcep->lock, SINGLE_DEPTH_NESTING);
	list_del_init(&cep->list);
	if (lcep->state != KIWI_CEP_LISTEN || !lcep->cm_id) {
		/* Nobody listens now: refused, as TCP refuses (not a reset). */
		mutex_unlock(&lcep->lock);
		kiwi_cep_refuse(cep);
		return;
	}
	cep->state = KIWI_CEP_RECVD_REQ;
	kref_get(&cep->ref);	/* the table's, until accept or reject */
	ret = xa_alloc_cyclic(&kiwi_cm_requests, &cep->req_id, cep,
			      xa_limit_31b, &kiwi_cm_next_req, GFP_KERNEL);
	if (ret >= 0)
		ret = kiwi_cm_event(cep, lcep->cm_id,
				    IW_CM_EVENT_CONNECT_REQUEST, 0);
	else
		kiwi_cep_put(cep);
	mutex_unlock(&lcep->lock);
	if (ret) {
		/*
		 * Backlog full: the iw_cm will never hand this request back
		 * (no accept, no reject), so refuse it here, as it asks.
		 */
		kiwi_cep_reap(cep);
		kiwi_cep_refuse(cep);
	}
}

/* Accept every pending connection on a listening socket. */
static void kiwi_cep_listen_work(struct kiwi_cep *lcep)
{
	struct socket *nsock;
	struct kiwi_cep *cep;

	while (lcep->state == KIWI_CEP_LISTEN &&
	       !kernel_accept(lcep->sock, &nsock, O_NONBLOCK)) {
		atomic_inc(&kiwi_cm_sockets);
		cep = kiwi_cep_alloc(lcep->kdev);
		if (!cep) {
			kiwi_cm_sock_release(nsock);
			continue;
		}
		/* A child socket inherits the listener's callbacks. */
		write_lock_bh(&nsock->sk->sk_callback_lock);
		nsock->sk->sk_user_data = NULL;
		nsock->sk->sk_data_ready = lcep->saved_data_ready;
		nsock->sk->sk_state_change = lcep->saved_state_change;
		nsock->sk->sk_write_space = lcep->saved_write_space;
		nsock->sk->sk_error_report = lcep->saved_error_report;
		write_unlock_bh(&nsock->sk->sk_callback_lock);
		kref_get(&lcep->ref);
		cep->listener = lcep;
		tcp_sock_set_nodelay(nsock->sk);
		/* Listener, then this new child (see kiwi_cep_got_request()). */
		mutex_lock_nested(&cep->lock, SINGLE_DEPTH_NESTING);
		cep->state = KIWI_CEP_AWAIT_REQ;
		list_add_tail(&cep->list, &lcep->children);
		kiwi_cep_sock_attach(cep, nsock);
		kref_get(&cep->ref);
		queue_delayed_work(kiwi_cm_wq, &cep->timer, KIWI_MPA_TIMEOUT);
		mutex_unlock(&cep->lock);
		/* The request may be in already. */
		kiwi_cep_queue(cep);
		kiwi_cep_put(cep);
	}
}

/* Bound the close: a peer must not hold the QP in SQD (V-SEC-6). */
static void kiwi_cep_arm_close_timer(struct kiwi_cep *cep)
{
	if (cep->closing)
		return;
	cep->closing = true;
	kref_get(&cep->ref);
	if (!queue_delayed_work(kiwi_cm_wq, &cep->timer,
				(unsigned long)READ_ONCE(kiwi_llp_timeout) * HZ))
		kiwi_cep_put(cep);
}

/*
 * The send queue ran dry in SQD: send our FIN and wait for the peer's.
 * From here on the receive engine places nothing: the socket's data
 * wakes the endpoint instead, for which any data is an error (V-ST-C2).
 */
static void kiwi_cep_send_fin(struct kiwi_cep *cep)
{
	struct sock *sk = cep->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_data_ready = kiwi_cm_sk_event;
	write_unlock_bh(&sk->sk_callback_lock);
	cep->fin_sent = true;
	kernel_sock_shutdown(cep->sock, SHUT_WR);
	kiwi_cep_queue(cep);	/* the peer's answer may be in already */
}

/* Closing: bytes from the peer after our FIN, not counting its FIN. */
static bool kiwi_cep_data_after_fin(struct sock *sk)
{
	int n;

	lock_sock(sk);
	n = tcp_inq(sk);
	release_sock(sk);
	return n > 0;
}

static void kiwi_cep_rdma_work(struct kiwi_cep *cep)
{
	struct sock *sk = cep->sock ? cep->sock->sk : NULL;
	bool fin;

	if (!sk)
		return;
	/*
	 * What the peer sent before its reset or FIN is read first: a
	 * Terminate there decides how the connection ends (V-LLP-9). Not
	 * after our FIN (V-ST-C2), nor once the QP is failing on its own.
	 */
	if (!cep->fin_sent &&
	    !test_bit(KIWI_CEP_CLOSE_ABRUPT, &cep->close_req) &&
	    cep->qp && cep->qp->sock == cep->sock)
		kiwi_rx_drain(cep->qp);
	fin = test_bit(KIWI_CEP_CLOSE_FIN, &cep->close_req);
	/*
	 * The stream failed: a reset from the peer, a timeout, a send that
	 * could not finish. The QP fails with an event and no Terminate
	 * (V-LLP-12, V-ERR-4). Before our FIN a closed socket is a failed
	 * one (a send that saw the error may have cleared sk_err).
	 */
	if (test_bit(KIWI_CEP_CLOSE_LOST, &cep->close_req) ||
	    (!fin && (sk->sk_err ||
		      (sk->sk_state == TCP_CLOSE && !cep->fin_sent)))) {
		/*
		 * The peer's or TCP's doing, counted once: whoever set
		 * KIWI_CEP_CLOSE_LOST first counted its cause (the bit set
		 * here changes nothing else), and a QP no longer connected
		 * was failed by its consumer, whose abortive close reset the
		 * stream itself.
		 */
		if (!test_bit(KIWI_CEP_CLOSE_ABRUPT, &cep->close_req) &&
		    cep->qp && (READ_ONCE(cep->qp->state) == IB_QPS_RTS ||
				READ_ONCE(cep->qp->state) == IB_QPS_SQD) &&
		    !test_and_set_bit(KIWI_CEP_CLOSE_LOST, &cep->close_req))
			kiwi_stat_inc(cep->kdev, KIWI_STAT_LLP_RESET);
		kiwi_cep_end(cep, false, true);
		return;
	}
	if (test_bit(KIWI_CEP_CLOSE_ABRUPT, &cep->close_req)) {
		kiwi_cep_teardown(cep, fin);
		return;
	}
	if (cep->fin_sent) {
		/* Only the peer's FIN may come now (V-ST-C6, V-AMB-26). */
		if (kiwi_cep_data_after_fin(sk)) {
			kiwi_stat_inc(cep->kdev, KIWI_STAT_LLP_DATA_AFTER_FIN);
			kiwi_cep_end(cep, false, true);
		} else if (sk->sk_shutdown & RCV_SHUTDOWN) {
			kiwi_cep_teardown(cep, true);
		}
		return;
	}
	if (sk->sk_shutdown & RCV_SHUTDOWN) {
		/*
		 * A FIN with our send queue or the peer's Reads unfinished is
		 * a Bad LLP Close: Terminate, not a close (V-ST-R4, V-LLP-11).
		 */
		if (!test_bit(KIWI_CEP_CLOSE_ABRUPT, &cep->close_req) &&
		    cep->qp && cep->qp->sock == cep->sock &&
		    kiwi_qp_fin_cuts_work(cep->qp, cep)) {
			kiwi_rx_terminate_llp(cep->qp, KIWI_TC_RDMAP_CATA_STREAM,
					      KIWI_STAT_LLP_BAD_CLOSE);
			kiwi_cep_teardown(cep, true);
			return;
		}
		/* The peer closed: the consumer hears it, then the close. */
		kiwi_cm_event(cep, cep->cm_id, IW_CM_EVENT_DISCONNECT, 0);
		kiwi_cep_teardown(cep, true);
		return;
	}
	if (test_bit(KIWI_CEP_CLOSE_GRACEFUL, &cep->close_req)) {
		kiwi_cep_arm_close_timer(cep);
		if (kiwi_qp_tx_idle(cep->qp))
			kiwi_cep_send_fin(cep);
	}
}

/*
 * Connecting, the QP was asked to close abruptly: its consumer failed or
 * destroyed it, or its netdev is going away (kiwi_qp_all_lost()). Fail
 * the connect now rather than at the MPA timeout: until the iw_cm has its
 * CONNECT_REPLY, destroying the cm_id waits, and with it the removal of
 * the device and the unregistering of its netdev.
 * Context: cep->lock held.
 */
static bool kiwi_cep_connect_aborted(struct kiwi_cep *cep)
{
	lockdep_assert_held(&cep->lock);
	if (!test_bit(KIWI_CEP_CLOSE_ABRUPT, &cep->close_req))
		return false;
	kiwi_cep_connect_failed(cep, -ECONNRESET);
	return true;
}

static void kiwi_cep_work(struct work_struct *work)
{
	struct kiwi_cep *cep = container_of(work, struct kiwi_cep, work);
	int ret;

	mutex_lock(&cep->lock);
	switch (cep->state) {
	case KIWI_CEP_LISTEN:
		kiwi_cep_listen_work(cep);
		break;
	case KIWI_CEP_CONNECTING:
		if (kiwi_cep_connect_aborted(cep))
			break;
		if (cep->sock->sk->sk_state == TCP_ESTABLISHED) {
			if (kiwi_cm_send_mpa(cep, false, false)) {
				kiwi_stat_inc(cep->kdev, KIWI_STAT_CM_CONN_ERR);
				kiwi_cep_connect_failed(cep, -ECONNRESET);
				break;
			}
			cep->state = KIWI_CEP_AWAIT_REP;
		} else if (cep->sock->sk->sk_state == TCP_CLOSE) {
			kiwi_stat_inc(cep->kdev, KIWI_STAT_CM_CONN_ERR);
			ret = sock_error(cep->sock->sk);
			kiwi_cep_connect_failed(cep, ret ?: -ECONNREFUSED);
		}
		break;
	case KIWI_CEP_AWAIT_REP:
		if (kiwi_cep_connect_aborted(cep))
			break;
		ret = kiwi_cm_recv_mpa(cep, true);
		if (ret > 0)
			kiwi_cep_got_reply(cep);
		else if (ret < 0)
			kiwi_cep_connect_failed(cep, -ECONNRESET);
		break;
	case KIWI_CEP_AWAIT_REQ:
		ret = kiwi_cm_recv_mpa(cep, false);
		if (ret > 0)
			kiwi_cep_got_request(cep);
		else if (ret < 0)
			kiwi_cep_teardown(cep, false);
		break;
	case KIWI_CEP_RECVD_REQ:
		/*
		 * The peer gave up before the consumer decided: an accept
		 * would fail, and the iw_cm may have dropped the request.
		 */
		if (cep->sock && cep->sock->sk->sk_state != TCP_ESTABLISHED &&
		    kiwi_cep_reap(cep)) {
			kiwi_stat_inc(cep->kdev, KIWI_STAT_CM_CONN_ERR);
			kiwi_cep_teardown(cep, false);
		}
		break;
	case KIWI_CEP_RDMA:
		kiwi_cep_rdma_work(cep);
		break;
	default:
		break;
	}
	mutex_unlock(&cep->lock);
	kiwi_cep_put(cep);
}

static void kiwi_cep_timeout(struct work_struct *work)
{
	struct kiwi_cep *cep = container_of(to_delayed_work(work),
					    struct kiwi_cep, timer);

	mutex_lock(&cep->lock);
	if (cep->state == KIWI_CEP_CONNECTING ||
	    cep->state == KIWI_CEP_AWAIT_REP) {
		kiwi_stat_inc(cep->kdev, KIWI_STAT_MPA_TIMEOUT);
		kiwi_cep_connect_failed(cep, -ETIMEDOUT);
	} else if (cep->state == KIWI_CEP_AWAIT_REQ) {
		kiwi_stat_inc(cep->kdev, KIWI_STAT_MPA_TIMEOUT);
		kiwi_cep_teardown(cep, false);
	} else if (cep->state == KIWI_CEP_RDMA && cep->closing) {
		kiwi_stat_inc(cep->kdev, KIWI_STAT_LLP_TIMEOUT);
		kiwi_cep_end(cep, false, true);	/* the close timed out */
	}
	mutex_unlock(&cep->lock);
	kiwi_cep_put(cep);	/* the timer's reference */
}

/*
 * A TCP socket in the namespace of the device's netdev, where rdma_cm
 * found the address it binds to. Kernel consumers pass rdma_cm a namespace
 * of their own (rdma_create_id), which need not be the caller's.
 */
static int kiwi_cm_sock_create(struct kiwi_device *kdev, int family,
			       struct socket **sock)
{
	int ret;

	if (kiwi_fault())
		return -ENOMEM;
	ret = __sock_create(dev_net(kdev->netdev), family, SOCK_STREAM,
			    IPPROTO_TCP, sock, 0);
	if (!ret)
		atomic_inc(&kiwi_cm_sockets);
	return ret;
}

static int kiwi_addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

static int kiwi_cm_pdata_max(bool enhanced)
{
	return KIWI_MPA_MAX_PDATA - (enhanced ? KIWI_MPA_V2_DATA_LEN : 0);
}

int kiwi_iw_connect(struct iw_cm_id *cm_id, struct iw_cm_conn_param *param)
{
	struct kiwi_device *kdev = to_kdev(cm_id->device);
	bool enhanced = kiwi_mpa_rev >= 2;
	struct socket *sock;
	struct kiwi_cep *cep;
	struct kiwi_qp *qp;
	int ret;

	if (param->private_data_len > kiwi_cm_pdata_max(enhanced) ||
	    param->ird > KIWI_MAX_IRD || param->ord > KIWI_MAX_ORD)
		return -EINVAL;
	qp = kiwi_qp_get_by_num(kdev, param->qpn);
	if (!qp)
		return -EINVAL;
	cep = kiwi_cep_alloc(kdev);
	if (!cep) {
		kiwi_qp_put(qp);
		return -ENOMEM;
	}

	mutex_lock(&cep->lock);
	ret = kiwi_qp_cm_bind(qp, cep);
	if (ret) {
		kiwi_qp_put(qp);
		goto err;
	}
	cep->qp = qp;
	cep->enhanced = enhanced;
	cep->crc = kiwi_crc_required;
	cep->large_fpdus = kiwi_large_fpdus_offered();
	cep->ird = param->ird;
	cep->ord = param->ord;
	/* Offer every ready-to-receive message kiwi understands. */
	cep->rtr = enhanced ? KIWI_RTR_WRITE | KIWI_RTR_READ | KIWI_RTR_SEND : 0;
	memcpy(cep->out_pdata, param->private_data, param->private_data_len);
	cep->out_len = param->private_data_len;

	ret = kiwi_cm_sock_create(kdev, cm_id->m_local_addr.ss_family, &sock);
	if (ret)
		goto err;
	sock_set_reuseaddr(sock->sk);
	tcp_sock_set_nodelay(sock->sk);
	ret = kernel_bind(sock, (struct sockaddr *)&cm_id->m_local_addr,
			  kiwi_addr_len(&cm_id->m_local_addr));
	if (ret) {
		kiwi_cm_sock_release(sock);
		goto err;
	}
	kiwi_cep_set_cm_id(cep, cm_id);
	kiwi_cep_sock_attach(cep, sock);
	cep->state = KIWI_CEP_CONNECTING;
	ret = kernel_connect(sock, (struct sockaddr *)&cm_id->m_remote_addr,
			     kiwi_addr_len(&cm_id->m_remote_addr), O_NONBLOCK);
	if (ret && ret != -EINPROGRESS) {
		kiwi_cep_sock_close(cep, true);
		kiwi_cep_drop_cm_id(cep);
		goto err;
	}
	kref_get(&cep->ref);
	queue_delayed_work(kiwi_cm_wq, &cep->timer, KIWI_MPA_TIMEOUT);
	cm_id->provider_data = cep;
	mutex_unlock(&cep->lock);
	kiwi_cep_queue(cep);	/* the connect may have completed already */
	/*
	 * The endpoint lives on by the references of its socket, QP and
	 * timer; the iw_cm never hands it back on this side.
	 */
	kiwi_cep_put(cep);
	return 0;
err:
	kiwi_cep_unbind_qp(cep);
	cep->state = KIWI_CEP_CLOSED;
	mutex_unlock(&cep->lock);
	kiwi_cep_put(cep);
	return ret;
}

int kiwi_iw_accept(struct iw_cm_id *cm_id, struct iw_cm_conn_param *param)
{
	struct kiwi_cep *cep = kiwi_cep_claim(cm_id);
	struct kiwi_qp *qp = NULL;
	int ret = -ECONNRESET;

	/* The iw_cm calls no reject after a failed accept: end it here. */
	if (!cep)
		return ret;
	if (param->private_data_len <= kiwi_cm_pdata_max(cep->enhanced) &&
	    param->ird <= KIWI_MAX_IRD && param->ord <= KIWI_MAX_ORD)
		qp = kiwi_qp_get_by_num(cep->kdev, param->qpn);
	mutex_lock(&cep->lock);
	if (!qp) {
		ret = -EINVAL;
		goto fail;
	}

	if (cep->state != KIWI_CEP_RECVD_REQ || !cep->sock) {
		kiwi_qp_put(qp);
		ret = -ECONNRESET;
		goto fail;
	}
	ret = kiwi_qp_cm_bind(qp, cep);
	if (ret) {
		kiwi_qp_put(qp);
		goto fail;
	}
	cep->qp = qp;
	kiwi_cep_set_cm_id(cep, cm_id);
	if (cep->enhanced) {
		cep->ord = kiwi_cm_ord(param->ord, cep->peer.ird);
		cep->ird = param->ird;
		if (cep->peer.p2p)
			cep->rtr = cep->peer.rtr & KIWI_RTR_WRITE ? KIWI_RTR_WRITE :
				   cep->peer.rtr & KIWI_RTR_READ ? KIWI_RTR_READ :
				   cep->peer.rtr & KIWI_RTR_SEND ? KIWI_RTR_SEND :
				   KIWI_RTR_NONE;
	} else {
		cep->ird = param->ird;
		cep->ord = param->ord;
	}
	memcpy(cep->out_pdata, param->private_data, param->private_data_len);
	cep->out_len = param->private_data_len;

	ret = kiwi_cm_send_mpa(cep, true, false);
	if (!ret)
		ret = kiwi_qp_cm_established(qp, cep, false);
	if (ret)
		goto fail;
	cep->state = KIWI_CEP_RDMA;
	kiwi_cep_watch_start(cep);
	kiwi_cm_event(cep, cm_id, IW_CM_EVENT_ESTABLISHED, 0);
	mutex_unlock(&cep->lock);
	kiwi_cep_put(cep);	/* the table's reference */
	return 0;
fail:
	/* A failed accept ends the request: the iw_cm will not reject it. */
	kiwi_cep_teardown(cep, false);
	mutex_unlock(&cep->lock);
	kiwi_cep_put(cep);
	return ret;
}

int kiwi_iw_reject(struct iw_cm_id *cm_id, const void *pdata, u8 pdata_len)
{
	struct kiwi_cep *cep = kiwi_cep_claim(cm_id);

	if (!cep)
		return 0;	/* ended already */
	mutex_lock(&cep->lock);
	if (cep->state == KIWI_CEP_RECVD_REQ && cep->sock) {
		memcpy(cep->out_pdata, pdata, min_t(u32, pdata_len,
						    kiwi_cm_pdata_max(cep->enhanced)));
		cep->out_len = min_t(u32, pdata_len,
				     kiwi_cm_pdata_max(cep->enhanced));
		cep->rtr = KIWI_RTR_NONE;
		kiwi_stat_inc(cep->kdev, KIWI_STAT_MPA_REJECT_SENT);
		kiwi_cm_send_mpa(cep, true, true);
	}
	kiwi_cep_teardown(cep, true);
	mutex_unlock(&cep->lock);
	kiwi_cep_put(cep);	/* the table's reference */
	return 0;
}

static int kiwi_listen_one(struct kiwi_listen *ls, struct iw_cm_id *cm_id,
			   struct sockaddr_storage *addr, int backlog)
{
	struct kiwi_device *kdev = to_kdev(cm_id->device);
	struct socket *sock;
	struct kiwi_cep *cep;
	int ret;

	ret = kiwi_cm_sock_create(kdev, addr->ss_family, &sock);
	if (ret)
		return ret;
	sock_set_reuseaddr(sock->sk);
	if (addr->ss_family == AF_INET6 && cm_id->afonly)
		ip6_sock_set_v6only(sock->sk);
	ret = kernel_bind(sock, (struct sockaddr *)addr, kiwi_addr_len(addr));
	if (!ret)
		ret = kernel_listen(sock, backlog);
	if (ret) {
		kiwi_cm_sock_release(sock);
		return ret;
	}
	cep = kiwi_cep_alloc(kdev);
	if (!cep) {
		kiwi_cm_sock_release(sock);
		return -ENOMEM;
	}
	mutex_lock(&cep->lock);
	kiwi_cep_set_cm_id(cep, cm_id);
	kiwi_cep_sock_attach(cep, sock);
	cep->state = KIWI_CEP_LISTEN;
	mutex_unlock(&cep->lock);
	list_add_tail(&cep->list, &ls->ceps);
	return 0;
}

/*
 * A listener closed: end its children that still await their MPA
 * Request. Nothing can accept them any more, and they must not outlive
 * the device, nor the module, by their MPA timer and socket callbacks.
 * Context: no endpoint's lock held; takes each child's, and the
 * listener's only around its list.
 */
static void kiwi_listen_end_children(struct kiwi_cep *lcep)
{
	struct kiwi_cep *cep;

	lockdep_assert_not_held(&lcep->lock);
	for (;;) {
		mutex_lock(&lcep->lock);
		cep = list_first_entry_or_null(&lcep->children,
					       struct kiwi_cep, list);
		if (cep) {
			list_del_init(&cep->list);
			kref_get(&cep->ref);
		}
		mutex_unlock(&lcep->lock);
		if (!cep)
			return;
		/*
		 * A peer whose MPA Request is in is refused, as if it had
		 * come a moment later, when nothing listened; one still to
		 * send it is reset.
		 */
		mutex_lock(&cep->lock);
		if (cep->state == KIWI_CEP_AWAIT_REQ &&
		    kiwi_cm_recv_mpa(cep, false) > 0)
			kiwi_cep_got_request(cep);
		else if (cep->state == KIWI_CEP_AWAIT_REQ)
			kiwi_cep_teardown(cep, false);
		mutex_unlock(&cep->lock);
		kiwi_cep_put(cep);
	}
}

static void kiwi_listen_close(struct kiwi_listen *ls)
{
	struct kiwi_cep *cep, *tmp;

	list_for_each_entry_safe(cep, tmp, &ls->ceps, list) {
		list_del(&cep->list);
		mutex_lock(&cep->lock);
		cep->state = KIWI_CEP_CLOSED;
		kiwi_cep_sock_close(cep, false);
		kiwi_cep_drop_cm_id(cep);
		mutex_unlock(&cep->lock);
		kiwi_listen_end_children(cep);
		kiwi_cep_put(cep);
	}
	kfree(ls);
}

/*
 * Collect @netdev's IPv4 addresses, with @port, into @local.
 * Context: rcu_read_lock() held.
 */
static int kiwi_local_addrs4(struct net_device *netdev, __be16 port,
			     struct sockaddr_storage *local, int n, int max)
{
	struct in_device *in_dev = __in_dev_get_rcu(netdev);
	const struct in_ifaddr *ifa;

	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "kiwi: IPv4 addresses need RCU");
	if (!in_dev)
		return n;
	in_dev_for_each_ifa_rcu(ifa, in_dev) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&local[n];

		if (n == max)
			break;
		sin->sin_family = AF_INET;
		sin->sin_port = port;
		sin->sin_addr.s_addr = ifa->ifa_address;
		n++;
	}
	return n;
}

/*
 * Collect @netdev's IPv6 addresses, with @port, into @local.
 * Context: rcu_read_lock() held.
 */
static int kiwi_local_addrs6(struct net_device *netdev, __be16 port,
			     struct sockaddr_storage *local, int n, int max)
{
	struct inet6_dev *idev = __in6_dev_get(netdev);
	struct inet6_ifaddr *ifp;

	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "kiwi: IPv6 addresses need RCU");
	if (!idev)
		return n;
	read_lock_bh(&idev->lock);
	list_for_each_entry(ifp, &idev->addr_list, if_list) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&local[n];

		if (n == max)
			break;
		/* Not bindable until (unless) Duplicate Address Detection passes. */
		if (ifp->flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED))
			continue;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = port;
		sin6->sin6_addr = ifp->addr;
		if (ipv6_addr_type(&ifp->addr) & IPV6_ADDR_LINKLOCAL)
			sin6->sin6_scope_id = netdev->ifindex;
		n++;
	}
	read_unlock_bh(&idev->lock);
	return n;
}

/*
 * Listen on @addr's port at each address of the device's netdev when @addr
 * is a wildcard: a wildcard socket would collide with another kiwi
 * device's in the same namespace. An IPv6 wildcard that is not "IPv6
 * only" takes the IPv4 addresses too, as a dual-stack socket would.
 *
 * An address that cannot be bound yet (IPv6 DAD still running, as on a
 * netdev that has just come up) is left out rather than failing the
 * listen: a failed listen makes the RDMA CM give up on the whole device
 * when it is added under a wildcard listener (cma_listen_on_dev). The
 * addresses are those of the moment; one added later is not listened on.
 */
static int kiwi_listen_wildcard(struct kiwi_listen *ls, struct iw_cm_id *cm_id,
				struct sockaddr_storage *addr, int backlog)
{
	struct net_device *netdev = to_kdev(cm_id->device)->netdev;
	/* the port is at the same offset in both families */
	__be16 port = ((struct sockaddr_in *)addr)->sin_port;
	const int max = 16;
	struct sockaddr_storage *local;
	int n = 0, i, ret = 0;

	local = kiwi_fault() ? NULL : kcalloc(max, sizeof(*local), GFP_KERNEL);
	if (!local)
		return -ENOMEM;
	/*
	 * Not RTNL: the RDMA CM calls us holding its own lock, which its
	 * netdev notifier takes under RTNL (lockdep: a circular dependency).
	 */
	rcu_read_lock();
	if (addr->ss_family == AF_INET || !cm_id->afonly)
		n = kiwi_local_addrs4(netdev, port, local, n, max);
	if (addr->ss_family == AF_INET6)
		n = kiwi_local_addrs6(netdev, port, local, n, max);
	rcu_read_unlock();

	for (i = 0; i < n && !ret; i++) {
		ret = kiwi_listen_one(ls, cm_id, &local[i], backlog);
		/* The address went away since it was collected. */
		if (ret == -EADDRNOTAVAIL)
			ret = 0;
	}
	kfree(local);
	return ret;
}

int kiwi_iw_create_listen(struct iw_cm_id *cm_id, int backlog)
{
	struct net_device *netdev = to_kdev(cm_id->device)->netdev;
	struct sockaddr_storage *addr = &cm_id->m_local_addr;
	struct kiwi_listen *ls;
	bool wildcard;
	int ret = 0;

	ls = kiwi_fault() ? NULL : kzalloc(sizeof(*ls), GFP_KERNEL);
	if (!ls)
		return -ENOMEM;
	INIT_LIST_HEAD(&ls->ceps);

	wildcard = addr->ss_family == AF_INET ?
		((struct sockaddr_in *)addr)->sin_addr.s_addr == htonl(INADDR_ANY) :
		ipv6_addr_any(&((struct sockaddr_in6 *)addr)->sin6_addr);
	/*
	 * A wildcard listen reaches every device: one whose netdev lives in
	 * another namespace than the caller's hears nothing for it (the
	 * iw_cm id does not say the listener's namespace). A bound address
	 * is the netdev's, found in the listener's namespace.
	 */
	if (wildcard && !net_eq(dev_net(netdev), current->nsproxy->net_ns))
		ret = 0;
	else if (wildcard)
		ret = kiwi_listen_wildcard(ls, cm_id, addr, backlog);
	else
		ret = kiwi_listen_one(ls, cm_id, addr, backlog);
	if (ret) {
		kiwi_listen_close(ls);
		return ret;
	}
	cm_id->provider_data = ls;
	return 0;
}

int kiwi_iw_destroy_listen(struct iw_cm_id *cm_id)
{
	struct kiwi_listen *ls = cm_id->provider_data;

	if (ls)
		kiwi_listen_close(ls);
	cm_id->provider_data = NULL;
	return 0;
}

/**
 * kiwi_cm_close() - ask for a connection's close
 * @cep: the endpoint
 * @abrupt: reset now (QP to ERR) instead of closing once the send queue is
 *	done (QP to SQD)
 *
 * Context: any process context; takes no lock the caller may hold.
 */
void kiwi_cm_close(struct kiwi_cep *cep, bool abrupt)
{
	set_bit(abrupt ? KIWI_CEP_CLOSE_ABRUPT : KIWI_CEP_CLOSE_GRACEFUL,
		&cep->close_req);
	kiwi_cep_queue(cep);
}

/**
 * kiwi_cm_terminated() - a Terminate was sent or received: close now
 * @cep: the endpoint
 *
 * The QP fails at once, as with kiwi_cm_close(@cep, true), but the socket
 * closes with a FIN rather than a reset, so that a Terminate still in the
 * send queue reaches the peer (RFC 5040 section 6.2.1, R-TRM-5).
 *
 * Context: any; takes no lock the caller may hold.
 */
void kiwi_cm_terminated(struct kiwi_cep *cep)
{
	kiwi_cm_close_fin(cep);
}

/**
 * kiwi_cm_close_fin() - end the connection now, with a FIN
 * @cep: the endpoint
 *
 * The QP fails at once, and the socket closes with a FIN: behind a
 * Terminate (kiwi_cm_terminated()), or at the end of a graceful close
 * the consumer asked for and then cut short with nothing left to send or
 * answer (kiwi_qp.c). A reset from the peer after that fails nothing.
 *
 * Context: any; takes no lock the caller may hold.
 */
void kiwi_cm_close_fin(struct kiwi_cep *cep)
{
	set_bit(KIWI_CEP_CLOSE_FIN, &cep->close_req);
	kiwi_cm_close(cep, true);
}

/**
 * kiwi_cm_lost() - the stream failed under the engines: reset it
 * @cep: the endpoint
 *
 * A send that TCP refused, or that made no progress within the LLP
 * timeout: the QP fails with IB_EVENT_QP_FATAL (V-ERR-4, V-ST-T5), even
 * while a Terminate is on its way.
 *
 * Context: any; takes no lock the caller may hold.
 * Return: true when the stream was not reported lost before: the caller
 * counts the cause.
 */
bool kiwi_cm_lost(struct kiwi_cep *cep)
{
	bool first = !test_and_set_bit(KIWI_CEP_CLOSE_LOST, &cep->close_req);

	kiwi_cm_close(cep, true);
	return first;
}

/* Have the endpoint look at its state again (the send queue ran dry). */
void kiwi_cm_sq_drained(struct kiwi_cep *cep)
{
	if (test_bit(KIWI_CEP_CLOSE_GRACEFUL, &cep->close_req))
		kiwi_cep_queue(cep);
}

/**
 * kiwi_cm_requests_end() - end the connect requests of a device going away
 * @kdev: the device, unregistered: its listeners are gone, and the RDMA
 *	CM has accepted or rejected every request it took up
 *
 * What is left are requests whose events the iw_cm dropped: their peers
 * may wait on, and they would outlive the device and the module.
 * Context: process; takes each endpoint's lock.
 */
void kiwi_cm_requests_end(struct kiwi_device *kdev)
{
	unsigned long id = 0;
	struct kiwi_cep *cep;

	for (;; id++) {
		/* An entry holds a reference: it is safe to take one more. */
		xa_lock(&kiwi_cm_requests);
		for (cep = xa_find(&kiwi_cm_requests, &id, ULONG_MAX, XA_PRESENT);
		     cep && cep->kdev != kdev;
		     cep = xa_find_after(&kiwi_cm_requests, &id, ULONG_MAX,
					 XA_PRESENT))
			;
		if (cep)
			kref_get(&cep->ref);
		xa_unlock(&kiwi_cm_requests);
		if (!cep)
			return;
		mutex_lock(&cep->lock);
		if (kiwi_cep_reap(cep))
			kiwi_cep_teardown(cep, false);
		mutex_unlock(&cep->lock);
		kiwi_cep_put(cep);
	}
}

int kiwi_cm_init(void)
{
	kiwi_cm_wq = kiwi_fault() ? NULL :
		     alloc_workqueue("kiwi_cm", WQ_MEM_RECLAIM, 0);
	return kiwi_cm_wq ? 0 : -ENOMEM;
}

void kiwi_cm_exit(void)
{
	destroy_workqueue(kiwi_cm_wq);
	WARN_ON(!xa_empty(&kiwi_cm_requests));
	/*
	 * Every device is gone, and every connection with it: an endpoint
	 * or socket left now would run kiwi's timer or socket callbacks
	 * after the module is gone.
	 */
	WARN(atomic_read(&kiwi_cm_endpoints) || atomic_read(&kiwi_cm_sockets),
	     "kiwi: unloading with %d connection endpoints and %d sockets left\n",
	     atomic_read(&kiwi_cm_endpoints), atomic_read(&kiwi_cm_sockets));
}
