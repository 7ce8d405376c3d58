/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: the port counters, shown by "rdma statistic show link DEV/1" and
 * in /sys/class/infiniband/DEV/ports/1/hw_counters/ (kiwi_stats.c names
 * them).
 */
#ifndef _KIWI_STATS_H
#define _KIWI_STATS_H

enum kiwi_stat {
	KIWI_STAT_ZCOPY_BYTES,	/* wire bytes TCP took by reference */
	KIWI_STAT_ZCOPY_COPIED,	/* zero-copy sends TCP ended up copying */
	KIWI_STAT_ZCOPY_NOBUFS,	/* batches copied: no notification room */
	KIWI_STAT_RX_HELD_BYTES, /* payload held until its MPA CRC matched */
	KIWI_STAT_RESP_SOFTIRQ,	/* Read/atomic responses sent from receive */
	KIWI_STAT_RESP_WORKER,	/* Read/atomic responses sent by the worker */
	/*
	 * Errors, counted where kiwi finds or reports them (never on the
	 * success path); kiwi.rst's "Port counters" table has the details.
	 * Connection set-up, before RDMA mode:
	 */
	KIWI_STAT_MPA_FRAME_ERR, /* MPA Request/Reply malformed: key, rev, PD_Length, R flag */
	KIWI_STAT_MPA_NEGOTIATION_ERR, /* markers asked; Reply with v2 or RTR not offered */
	KIWI_STAT_MPA_REJECT_SENT, /* MPA Replies with the Reject flag sent */
	KIWI_STAT_MPA_REJECT_RCVD, /* MPA Replies with the Reject flag received */
	KIWI_STAT_MPA_TIMEOUT,	/* TCP connect or MPA exchange not done in 10 s */
	KIWI_STAT_CM_CONN_ERR,	/* TCP connect failed, or closed during MPA */
	/* The stream in RDMA mode (the QP fails): */
	KIWI_STAT_LLP_RESET,	/* reset or error from TCP, a send TCP refused */
	KIWI_STAT_LLP_TIMEOUT,	/* no progress, or close not done, in llp_timeout */
	KIWI_STAT_LLP_BAD_CLOSE, /* FIN with work outstanding: Terminate 0/2/07 */
	KIWI_STAT_LLP_DATA_AFTER_FIN, /* peer data after our FIN */
	/*
	 * Received FPDUs that break the protocol: each stops the receive
	 * engine (one per connection at most) and sends the Terminate code
	 * given (Layer/EType/Error Code, hex).
	 */
	KIWI_STAT_RX_CRC_ERR,	/* 2/0/02: MPA CRC mismatch */
	KIWI_STAT_RX_FPDU_LEN_ERR, /* 1/0/00: ULPDU_Length below a DDP header */
	KIWI_STAT_RX_DDP_INV_STAG, /* 1/1/00: tagged segment, no such STag */
	KIWI_STAT_RX_DDP_BOUNDS_ERR, /* 1/1/01, 1/1/03: outside the buffer, TO wraps */
	KIWI_STAT_RX_DDP_ACCESS_ERR, /* 1/1/02: STag of another PD/QP, no rights */
	KIWI_STAT_RX_DDP_VERSION_ERR, /* 1/1/04, 1/2/06: DDP version not 1 */
	KIWI_STAT_RX_DDP_INV_QN, /* 1/2/01: untagged queue number unknown */
	KIWI_STAT_RX_NO_RECV_BUF, /* 1/2/02: Send with no receive posted */
	KIWI_STAT_RX_DDP_INV_MSN, /* 1/2/03: MSN out of sequence */
	KIWI_STAT_RX_DDP_INV_MO, /* 1/2/04: MO not where the message is */
	KIWI_STAT_RX_DDP_TOO_LONG, /* 1/2/05: Send longer than its receive */
	KIWI_STAT_RX_RDMAP_INV_STAG, /* 0/1/00: Read/atomic/invalidate, no such STag */
	KIWI_STAT_RX_RDMAP_BOUNDS_ERR, /* 0/1/01, 0/1/04: outside, TO wraps */
	KIWI_STAT_RX_RDMAP_ACCESS_ERR, /* 0/1/02, 0/1/03: no rights, other PD/QP */
	KIWI_STAT_RX_INVAL_ERR,	/* 0/1/09: STag may not be invalidated remotely */
	KIWI_STAT_RX_RDMAP_VERSION_ERR, /* 0/2/05: RDMAP version not 1 */
	KIWI_STAT_RX_RDMAP_OPCODE_ERR, /* 0/2/06: opcode unknown or out of place */
	KIWI_STAT_RX_RDMAP_OP_ERR, /* 0/2/ff, 0/2/07: malformed or misaligned op */
	KIWI_STAT_RX_IRD_OVERFLOW, /* 1/2/03: Read/atomic beyond the IRD granted */
	KIWI_STAT_RX_RESP_ERR,	/* Read/Atomic Response for no request of ours */
	KIWI_STAT_RX_LOCAL_ERR,	/* 1/0/00: a receive WQE the engine cannot use */
	/* Terminates: */
	KIWI_STAT_TERM_SENT,	/* Terminates sent, for any cause */
	KIWI_STAT_TERM_RCVD,	/* Terminates received */
	/* Completions and events: */
	KIWI_STAT_CQE_ERR,	/* completions with an error status but flush */
	KIWI_STAT_CQE_FLUSH_ERR, /* completions with IB_WC_WR_FLUSH_ERR */
	KIWI_STAT_CQE_LOC_PROT_ERR, /* ... IB_WC_LOC_PROT_ERR: a bad lkey or SGE */
	KIWI_STAT_CQE_LOC_LEN_ERR, /* ... IB_WC_LOC_LEN_ERR: a malformed SQE */
	KIWI_STAT_CQE_LOC_QP_OP_ERR, /* ... IB_WC_LOC_QP_OP_ERR: bad opcode, ORD 0 */
	KIWI_STAT_CQE_MW_BIND_ERR, /* ... IB_WC_MW_BIND_ERR: refused local op */
	KIWI_STAT_CQE_REM_ERR,	/* ... IB_WC_REM_*: the peer's Terminate */
	KIWI_STAT_CQ_OVERFLOW,	/* CQs that overflowed (their QP terminates) */
	KIWI_STAT_QP_FATAL_EVENT, /* IB_EVENT_QP_FATAL raised */
	KIWI_STAT_QP_ACCESS_EVENT, /* IB_EVENT_QP_ACCESS_ERR raised */
	KIWI_NUM_STATS
};

/* Count one error in port counter @stat of @kdev; any context. */
#define kiwi_stat_inc(kdev, stat)	atomic64_inc(&(kdev)->stats[stat])

#endif /* _KIWI_STATS_H */
