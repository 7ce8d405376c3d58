/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The verbs objects of one end of a connection, for kiwi's user-space test
 * programs: PD, CQs, an SRQ, the QP, a buffer and its MR, made from one
 * description; and waits for completions, async events and QP states.
 */
#ifndef KIWI_PEER_H
#define KIWI_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* What to make. Objects given here are used, not made (nor freed). */
struct kp_caps {
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_comp_channel *chan;	/* of the CQs made */
	uint32_t send_wr, recv_wr, send_sge, recv_sge, inline_data;
	int cqe;		/* each CQ made; 0: send_wr + recv_wr */
	int send_cqe;		/* the send CQ's, if another; needs two_cqs */
	bool two_cqs;		/* a send CQ and a receive CQ */
	bool sig_all;
	uint32_t srq_wr;	/* make an SRQ of this many WRs, recv_sge SGEs */
	size_t buf_len;		/* a zeroed, page-aligned buffer, registered */
	int access;		/* with these rights */
	uint64_t send_ops;	/* IBV_QP_EX_WITH_*: an extended QP */
};

struct kp_peer {
	struct rdma_cm_id *id;	/* NULL: the QP is ibv_create_qp()'s */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;	/* the same one unless two_cqs */
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
	bool own_pd, own_scq, own_rcq, own_srq;
};

/*
 * Make @p's objects as @caps says, the QP through rdma_cm on @id unless
 * NULL (then on caps->pd's device). Return: 0, or -1 with a comment
 * printed and whatever was made freed.
 */
int kp_open(struct kp_peer *p, struct rdma_cm_id *id,
	    const struct kp_caps *caps);
void kp_open_or_die(struct kp_peer *p, struct rdma_cm_id *id,
		    const struct kp_caps *caps);

/* Free what kp_open() made (not the cm_id); 0, or the first error. */
int kp_close(struct kp_peer *p);

/* One receive / send WR of a single SGE; ibv_post_*()'s return. */
int kp_post_recv(struct ibv_qp *qp, uint64_t wr_id, const void *addr,
		 uint32_t len, uint32_t lkey);
int kp_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, const void *addr,
		     uint32_t len, uint32_t lkey);
int kp_post_send(struct ibv_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op,
		 unsigned int flags, const void *addr, uint32_t len,
		 uint32_t lkey, uint64_t raddr, uint32_t rkey);

/*
 * Poll up to @want completions of @cq into @wc, sleeping 1 ms between
 * empty polls, for about @ms milliseconds. Return: how many came, or the
 * negative value of a failed ibv_poll_cq().
 */
int kp_poll(struct ibv_cq *cq, struct ibv_wc *wc, int want, int ms);

/* Whether @cq stays empty for about @ms milliseconds. */
bool kp_cq_quiet(struct ibv_cq *cq, int ms);

/*
 * Whether a completion event comes on @ch within @ms milliseconds and is
 * @cq's; the event is acked either way.
 */
bool kp_cq_event(struct ibv_comp_channel *ch, struct ibv_cq *cq, int ms);

/*
 * The next asynchronous event of @ctx within @ms milliseconds, copied to
 * @ev and acked; false when none came.
 */
bool kp_async(struct ibv_context *ctx, struct ibv_async_event *ev, int ms);

/* @qp's state, or -1. */
int kp_qp_state(struct ibv_qp *qp);

/* Modify @qp to @state alone; ibv_modify_qp()'s return. */
int kp_modify(struct ibv_qp *qp, enum ibv_qp_state state);

/* @qp's state once it is @want, or after about @ms ms of another. */
int kp_wait_state(struct ibv_qp *qp, enum ibv_qp_state want, int ms);

#endif /* KIWI_PEER_H */
