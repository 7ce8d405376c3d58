/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: the iWARP connection manager - MPA negotiation over kernel TCP
 * sockets behind the RDMA core's iw_cm.
 */
#ifndef _KIWI_CM_H
#define _KIWI_CM_H

#include <linux/kref.h>
#include <linux/net.h>
#include <linux/workqueue.h>
#include <rdma/iw_cm.h>

#include "kiwi_wire.h"

struct kiwi_device;
struct kiwi_qp;

enum kiwi_cep_state {
	KIWI_CEP_IDLE,
	KIWI_CEP_LISTEN,	/* a listening socket */
	KIWI_CEP_CONNECTING,	/* active: TCP connect in progress */
	KIWI_CEP_AWAIT_REP,	/* active: MPA Request sent */
	KIWI_CEP_AWAIT_REQ,	/* passive: reading the MPA Request */
	KIWI_CEP_RECVD_REQ,	/* passive: waiting for accept or reject */
	KIWI_CEP_RDMA,		/* connected: the socket carries FPDUs */
	KIWI_CEP_CLOSED,
};

/**
 * struct kiwi_cep - one connection endpoint (or one listening socket)
 * @ref: references: the socket, queued work, the timer, the QP, the
 *	listen request's list, a listener's children, and the iw_cm's while
 *	a request awaits accept or reject
 * @lock: serialises everything below; taken by work items and verbs calls
 *	(process context); never held while waiting for the peer
 * @state: where the endpoint is in its life
 * @kdev: the device
 * @sock: the TCP socket, NULL once released
 * @cm_id: the iw_cm id events go to, with a reference held
 * @listener: passive endpoints: the listening endpoint they came from
 * @qp: the QP bound by connect or accept, with a reference held
 * @work: socket events and requests handled in process context
 * @timer: MPA exchange timeout, then the close timeout (kiwi_llp_timeout)
 * @watch: in RDMA mode, the check for a peer gone silent (kiwi_cep_watch())
 * @llp: the LLP timeout of this connection, in jiffies
 * @watch_una: TCP's oldest unacknowledged byte at the last check
 * @watch_since: since when (tcp_jiffies32) it has been that byte
 * @mpa: MPA frame being received
 * @mpa_got: bytes of it received so far
 * @peer: the peer's decoded MPA frame
 * @crc: MPA CRC in use on this connection
 * @enhanced: RFC 6581 exchange (IRD/ORD, RTR)
 * @large_fpdus: large FPDUs offered (active side, until the Reply) or
 *	agreed by both ends (kiwi_fpdu_segs)
 * @rtr: the RTR message this connection uses (KIWI_RTR_*), or none
 * @ird: negotiated inbound RDMA Read depth
 * @ord: negotiated outbound RDMA Read depth
 * @out_pdata: private data to send in our MPA frame
 * @out_len: its length
 * @close_req: KIWI_CEP_CLOSE_* bits the QP set to ask for a close
 * @closing: a graceful close started; @timer bounds it
 * @fin_sent: our FIN is out and the QP waits in SQD (Closing) for the
 *	peer's; anything else from the peer fails the QP
 * @list: a listener's place among the listening endpoints of its listen
 *	request; a child's among its listener's @children
 * @children: a listener's children that await their MPA Request (under
 *	the listener's @lock), ended when it closes
 * @req_id: passive, in KIWI_CEP_RECVD_REQ: its key in the table of
 *	requests handed to the iw_cm (kiwi_cm.c), which is what the iw_cm
 *	hands back on accept or reject
 * @saved_data_ready: the socket's callbacks before kiwi took it over
 * @saved_state_change: ditto
 * @saved_write_space: ditto
 * @saved_error_report: ditto
 */
struct kiwi_cep {
	struct kref ref;
	struct mutex lock;		/* see @lock above */
	enum kiwi_cep_state state;
	struct kiwi_device *kdev;
	struct socket *sock;
	struct iw_cm_id *cm_id;
	struct kiwi_cep *listener;
	struct kiwi_qp *qp;
	struct work_struct work;
	struct delayed_work timer;
	struct delayed_work watch;
	unsigned long llp;
	u32 watch_una;
	u32 watch_since;
	u8 mpa[KIWI_MPA_HDR_LEN + KIWI_MPA_MAX_PDATA];
	unsigned int mpa_got;
	struct kiwi_mpa_frame peer;
	bool crc;
	bool enhanced;
	bool large_fpdus;
	u8 rtr;
	u16 ird;
	u16 ord;
	u8 out_pdata[KIWI_MPA_MAX_PDATA];
	u16 out_len;
	unsigned long close_req;
	bool closing;
	bool fin_sent;
	struct list_head list;
	struct list_head children;
	u32 req_id;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	void (*saved_error_report)(struct sock *sk);
};

/* close_req bits */
#define KIWI_CEP_CLOSE_GRACEFUL	0
#define KIWI_CEP_CLOSE_ABRUPT	1
#define KIWI_CEP_CLOSE_FIN	2	/* with ABRUPT: end with a FIN (kiwi_cm.c) */
#define KIWI_CEP_CLOSE_LOST	3	/* with ABRUPT: the stream failed */

/* MPA Request/Reply must arrive within this time. */
#define KIWI_MPA_TIMEOUT	(10 * HZ)

int kiwi_cm_init(void);
void kiwi_cm_exit(void);

int kiwi_iw_connect(struct iw_cm_id *cm_id, struct iw_cm_conn_param *param);
int kiwi_iw_accept(struct iw_cm_id *cm_id, struct iw_cm_conn_param *param);
int kiwi_iw_reject(struct iw_cm_id *cm_id, const void *pdata, u8 pdata_len);
int kiwi_iw_create_listen(struct iw_cm_id *cm_id, int backlog);
int kiwi_iw_destroy_listen(struct iw_cm_id *cm_id);

void kiwi_cep_put(struct kiwi_cep *cep);
void kiwi_cm_close(struct kiwi_cep *cep, bool abrupt);
void kiwi_cm_terminated(struct kiwi_cep *cep);
void kiwi_cm_close_fin(struct kiwi_cep *cep);
bool kiwi_cm_lost(struct kiwi_cep *cep);
void kiwi_cm_sq_drained(struct kiwi_cep *cep);
void kiwi_cm_requests_end(struct kiwi_device *kdev);

#endif /* _KIWI_CM_H */
