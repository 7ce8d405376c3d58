/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: state of a connected QP's transmit and receive engines.
 */
#ifndef _KIWI_ENGINE_H
#define _KIWI_ENGINE_H

#include <linux/bvec.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>
#include <linux/uio.h>

#include "kiwi_fpdu.h"
#include "kiwi_limits.h"
#include "kiwi_stats.h"
#include "kiwi_wire.h"

struct kiwi_qp;
struct kiwi_mem;
struct sock;

#define KIWI_TX_BATCH		16	/* FPDUs handed to TCP per call */
#define KIWI_TX_IOV_PER_FPDU	(2 + 2 + KIWI_MAX_SGE)	/* hdr, trailer, data */

/* Kernel-side shadow of a send queue entry between transmit and completion. */
struct kiwi_sq_slot {
	u64 id;
	u32 bytes;
	u8 opcode;		/* KIWI_WR_* */
	u8 status;		/* ib_wc_status once done */
	bool signaled;
	bool done;
	/* zero-copy: the TCP zerocopy ids its payload went out under */
	bool zc;		/* completes when TCP lets go of its pages */
	bool zc_open;		/* still being sent: every new id is its */
	u32 zc_first;		/* first id */
	u32 zc_count;		/* ids used (valid once !zc_open) */
	u32 zc_done;		/* ids TCP reported released */
};

/* ORQ slot value of the zero-length Read sent as RTR message. */
#define KIWI_ORQ_RTR		U32_MAX

/*
 * A user QP's send queue is transmitted in the poster's system call while
 * its entries are this small, TCP has room, and no work item is running:
 * a wake-up of the work item costs more than sending them.
 */
#define KIWI_TX_DIRECT_MAX	4096	/* payload bytes of one entry */
#define KIWI_TX_DIRECT_BUDGET	32	/* entries per system call */
/* Bytes a direct send may leave for the work item (one entry on the wire). */
#define KIWI_TX_CARRY_MAX	(2 * KIWI_TX_DIRECT_MAX)

/* struct kiwi_tx's @owner bit */
#define KIWI_TX_OWNED		0

/*
 * Zero-copy transmit (kiwi_zcopy_min): bytes of FPDU headers and trailers
 * one batch may write into the header page, and the vectors of one batch.
 */
#define KIWI_TX_ZC_HDR_ROOM	(KIWI_TX_BATCH * (KIWI_MPA_LEN_SIZE + \
				 KIWI_UNTAGGED_HDR_LEN + 3 + KIWI_MPA_CRC_SIZE))
#define KIWI_TX_BVEC_MAX	(KIWI_TX_BATCH * (2 + KIWI_MAX_SGE) + 1)

/* A stalled peer fails the connection after this long without progress. */
#define KIWI_TX_TIMEOUT		((long)READ_ONCE(kiwi_llp_timeout) * HZ)

/* An RDMA Read or RFC 7306 atomic we asked for (requester side). */
struct kiwi_orq_entry {
	u32 slot;		/* its send queue index, or KIWI_ORQ_RTR */
	bool atomic;		/* an Atomic Request: sink_* take 8 bytes */
	u32 msn;		/* atomic: its MSN on QN 1, its Request Id */
	u32 sink_stag;		/* local STag the response lands in */
	u64 sink_to;
	u32 len;
	u32 got;		/* bytes placed so far */
	bool invalidate;	/* a Read with Invalidate: of inv_stag */
	u32 inv_stag;
};

/* An RDMA Read, with or without local invalidation after it. */
static inline bool kiwi_wr_is_read(u8 opcode)
{
	return opcode == KIWI_WR_RDMA_READ || opcode == KIWI_WR_READ_INV;
}

/* An RDMA Read or an atomic: takes an ORD slot, writes local memory. */
static inline bool kiwi_wr_uses_ord(u8 opcode)
{
	return kiwi_wr_is_read(opcode) || opcode == KIWI_WR_ATOMIC_CMP_SWP ||
	       opcode == KIWI_WR_ATOMIC_FETCH_ADD;
}

/*
 * An RDMA Read the peer asked for, or the answer to its atomic, carried
 * out already (responder side).
 */
struct kiwi_irq_entry {
	struct kiwi_read_req req;
	u32 sent;
	bool atomic;
	struct kiwi_atomic_resp aresp;
};

/**
 * struct kiwi_tx - transmit engine of one QP
 * @qp: its QP
 * @work: runs the transmit loop on kiwi_tx_wq
 * @run_lock: one transmit loop at a time, the work item's or a direct one
 *	in a user poster's context (kiwi_tx_kick_direct)
 * @done_wq: woken when a loop under @run_lock lets go of it, for
 *	kiwi_qp_work_left() waiting on a loop (the peer's FIN, the end of a close)
 * @owner: bit KIWI_TX_OWNED belongs to the loop that owns everything
 *	below: one under @run_lock, or one that never waits and only ever
 *	tries for it: the receive softirq answering small Reads and atomics
 *	(kiwi_tx_answer()), a kernel consumer's post (kiwi_tx_kick_kernel())
 * @direct: the loop runs in a poster's context or in the receive softirq:
 *	it must not sleep in TCP and leaves large messages to the work item
 * @locked: the loop runs with the socket's spinlock held (the receive
 *	softirq, or a kernel consumer's post): it hands TCP its bytes with
 *	tcp_sendmsg_locked()
 * @answer_err: the receive softirq's answer failed the connection; the
 *	work item reports it
 * @carry: wire bytes a direct loop framed but TCP did not take; the work
 *	item sends them before anything else
 * @carry_len: their number
 * @msn: last MSN sent on each untagged queue (send, read request,
 *	terminate, atomic response)
 * @next: next send queue index to transmit
 * @cur: validated copy of the entry at @next while it is being sent
 * @cur_mem: memory objects of @cur's SGEs, referenced
 * @cur_len: its payload length
 * @cur_sent: bytes of it already handed to TCP
 * @cur_active: @cur holds a partly sent entry
 * @slots: completion shadows, one per send queue entry
 * @orq: RDMA Reads in flight, a ring of @qp->ord entries; the receive
 *	engine reaches it through kiwi_orq_oldest() and kiwi_orq_retire()
 * @orq_wait: the loop stopped at an entry that waits for a Read or
 *	atomic response (ORD full, or a Read fence)
 * @orq_head: oldest entry of @orq (protected by qp->sq_lock, as is @orq_tail)
 * @orq_tail: next free entry of @orq
 * @irq: inbound RDMA Read Requests to answer, a ring of KIWI_MAX_IRD;
 *	the receive engine adds to it with kiwi_irq_add()
 * @irq_head: oldest entry of @irq (protected by @irq_lock, as is @irq_tail)
 * @irq_tail: next free entry of @irq
 * @irq_lock: the receive engine adds requests from softirq context
 * @resp_active: a Read Response is being sent; its @irq slot is freed
 *	just before its last FPDU goes to TCP
 * @term: a Terminate to send before anything else, then stop
 * @term_buf: its RDMAP header (built by the receive engine)
 * @term_len: its length
 * @term_pending: @term_buf waits to be sent, or is being sent
 * @term_claimed: nonzero once this connection has its one Terminate, sent
 *	or received (kiwi_qp_terminate())
 * @stopped: the engine sends nothing more (error or close)
 * @sq_failed: a send queue entry completed in error: the engine takes no
 *	more entries (they are flushed when the QP fails), but still sends
 *	Read Responses and a Terminate
 * @zc_waiting: entries sent without copying whose pages TCP still holds
 *	(protected by qp->sq_lock)
 * @zc_sending: the entry at @next is going out without copying (ditto)
 * @zc_page: page the zero-copy path writes FPDU headers and trailers
 *	into; only ever appended to, as TCP references what is written
 * @zc_off: first free byte in @zc_page
 * @bvec: vectors of one zero-copy batch
 * @hdr: FPDU headers of one batch
 * @trl: pad and CRC trailers of one batch
 * @iov: the vectors over @hdr, the payload and @trl
 * @kmapped: payload pages mapped for the batch, unmapped after it
 */
struct kiwi_tx {
	struct kiwi_qp *qp;
	struct work_struct work;
	struct mutex run_lock;		/* see @run_lock above */
	wait_queue_head_t done_wq;
	unsigned long owner;
	bool direct;
	bool locked;
	int answer_err;
	u8 carry[KIWI_TX_CARRY_MAX];
	unsigned int carry_len;
	u32 msn[KIWI_NUM_QN];
	u32 next;
	struct kiwi_sqe cur;
	struct kiwi_mem *cur_mem[KIWI_MAX_SGE];
	u32 cur_len;
	u32 cur_sent;
	bool cur_active;
	struct kiwi_sq_slot *slots;
	struct kiwi_orq_entry orq[KIWI_MAX_ORD];
	bool orq_wait;
	u32 orq_head;
	u32 orq_tail;
	struct kiwi_irq_entry irq[KIWI_MAX_IRD];
	u32 irq_head;
	u32 irq_tail;
	spinlock_t irq_lock;		/* see @irq_lock above */
	bool resp_active;
	u8 term_buf[KIWI_TERM_CTRL_LEN + KIWI_TERM_SEGLEN_LEN +
		    KIWI_UNTAGGED_HDR_LEN + KIWI_READ_REQ_LEN];
	unsigned int term_len;
	bool term_pending;
	atomic_t term_claimed;
	bool stopped;
	bool sq_failed;
	u32 zc_waiting;
	bool zc_sending;
	struct page *zc_page;
	unsigned int zc_off;
	struct bio_vec bvec[KIWI_TX_BVEC_MAX];
	u8 hdr[KIWI_TX_BATCH][KIWI_MPA_LEN_SIZE + KIWI_UNTAGGED_HDR_LEN +
				KIWI_ATOMIC_REQ_LEN];
	u8 trl[KIWI_TX_BATCH][3 + KIWI_MPA_CRC_SIZE];
	struct kvec iov[KIWI_TX_BATCH * KIWI_TX_IOV_PER_FPDU];
	void *kmapped[KIWI_TX_BATCH * KIWI_MAX_SGE * 2];
};

/* kiwi_engine.c */
int kiwi_tx_init(void);
void kiwi_tx_exit(void);
int kiwi_engines_alloc(struct kiwi_qp *qp);
void kiwi_engines_free(struct kiwi_qp *qp);
void kiwi_engines_start(struct kiwi_qp *qp);
void kiwi_engines_stop(struct kiwi_qp *qp);

/* kiwi_tx_run.c */
void kiwi_tx_kick(struct kiwi_qp *qp);
void kiwi_tx_kick_direct(struct kiwi_qp *qp);
void kiwi_tx_answer(struct kiwi_qp *qp);
void kiwi_tx_kick_kernel(struct kiwi_qp *qp);
void kiwi_tx_response_in(struct kiwi_qp *qp);

/* kiwi_tx_zc.c */
void kiwi_tx_zc_report(struct sock *sk);

/* kiwi_tx_queues.c */
void kiwi_sq_complete(struct kiwi_qp *qp);
struct kiwi_orq_entry *kiwi_orq_oldest(struct kiwi_qp *qp);
bool kiwi_orq_retire(struct kiwi_qp *qp, const struct kiwi_orq_entry *o,
		     u8 status);
int kiwi_irq_add(struct kiwi_qp *qp, const struct kiwi_read_req *rr,
		 const struct kiwi_atomic_resp *ar);
bool kiwi_irq_full(struct kiwi_qp *qp);

/* kiwi_rx.c */
void kiwi_rx_data_ready(struct sock *sk);
int kiwi_rx_prepare(struct kiwi_qp *qp);
void kiwi_rx_reset(struct kiwi_qp *qp);
void kiwi_rx_drain(struct kiwi_qp *qp);
void kiwi_rx_terminate_llp(struct kiwi_qp *qp, u32 tc, enum kiwi_stat stat);

#endif /* _KIWI_ENGINE_H */
