// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: what "rdma res show" prints of kiwi's objects beyond the core's
 * own fields, as driver attributes ("rdma -dd res show qp|cq|mr"): the
 * restrack fill_res_* hooks. A cm_id gets none: the QP the core would
 * hand us for it may be destroyed meanwhile (rdma_destroy_qp() clears it
 * under a lock of the RDMA CM's own); "rdma res show qp" has the
 * connection.
 *
 * Context: process context (an RDMA netlink dump). The core holds the
 * object's restrack entry, and destroying the object first waits for that
 * to go, so the object itself stays; what changes under it (ring
 * occupancy, the connection) is read as a snapshot: a QP's connection
 * under its state_lock, the rest without kiwi's locks.
 */

#include <linux/net.h>
#include <linux/socket.h>
#include <rdma/rdma_netlink.h>
#include <rdma/restrack.h>

#include "kiwi.h"
#include "kiwi_mem.h"

/*
 * Entries of a ring posted and not yet completed: those from @head on
 * whose flags word has KIWI_WQE_VALID, at most the ring's @num.
 */
static u32 kiwi_res_ring_used(const void *ring, size_t esize,
			      size_t flags_off, u32 num, u32 head)
{
	u32 n;

	if (!ring)
		return 0;
	for (n = 0; n < num; n++) {
		const u32 *flags = ring + ((head + n) & (num - 1)) * esize +
				   flags_off;

		if (!(kiwi_ring_flags(flags) & KIWI_WQE_VALID))
			break;
	}
	return n;
}

static const char *kiwi_res_cep_state(enum kiwi_cep_state s)
{
	static const char * const names[] = {
		[KIWI_CEP_IDLE] = "idle",
		[KIWI_CEP_LISTEN] = "listen",
		[KIWI_CEP_CONNECTING] = "connecting",
		[KIWI_CEP_AWAIT_REP] = "await_mpa_reply",
		[KIWI_CEP_AWAIT_REQ] = "await_mpa_request",
		[KIWI_CEP_RECVD_REQ] = "mpa_request_received",
		[KIWI_CEP_RDMA] = "rdma",
		[KIWI_CEP_CLOSED] = "closed",
	};

	return s < ARRAY_SIZE(names) && names[s] ? names[s] : "?";
}

/* The RFC 6581 ready-to-receive message the connection chose. */
static const char *kiwi_res_rtr(u8 rtr)
{
	switch (rtr) {
	case KIWI_RTR_NONE:
		return "none";
	case KIWI_RTR_SEND:
		return "send";
	case KIWI_RTR_WRITE:
		return "write";
	case KIWI_RTR_READ:
		return "read";
	}
	return "?";
}

/*
 * Put "addr:port" of @sock's local (@peer false) or remote end as @name;
 * nothing when the socket cannot say. Return: 0, or -EMSGSIZE.
 */
static int kiwi_res_put_addr(struct sk_buff *msg, const char *name,
			     struct socket *sock, bool peer)
{
	struct sockaddr_storage ss;
	char addr[64];
	int ret;

	ret = peer ? kernel_getpeername(sock, (struct sockaddr *)&ss) :
		     kernel_getsockname(sock, (struct sockaddr *)&ss);
	if (ret < 0)
		return 0;
	snprintf(addr, sizeof(addr), "%pISpc", &ss);
	return rdma_nl_put_driver_string(msg, name, addr);
}

/*
 * The connection of @qp, if it has one: its endpoint's state, what MPA
 * negotiated (CRC, RFC 6581's RTR message) and both addresses.
 */
static int kiwi_res_qp_conn(struct sk_buff *msg, struct kiwi_qp *qp)
{
	int ret = 0;

	mutex_lock(&qp->state_lock);
	if (!qp->sock)
		goto out;
	if ((qp->cep &&
	     rdma_nl_put_driver_string(msg, "cep_state",
				       kiwi_res_cep_state(READ_ONCE(qp->cep->state)))) ||
	    rdma_nl_put_driver_u32(msg, "crc", qp->crc) ||
	    rdma_nl_put_driver_u32(msg, "initiator", qp->initiator) ||
	    rdma_nl_put_driver_string(msg, "rtr", kiwi_res_rtr(qp->rtr)) ||
	    kiwi_res_put_addr(msg, "local", qp->sock, false) ||
	    kiwi_res_put_addr(msg, "peer", qp->sock, true))
		ret = -EMSGSIZE;
out:
	mutex_unlock(&qp->state_lock);
	return ret;
}

static int kiwi_res_qp(struct sk_buff *msg, void *obj)
{
	struct kiwi_qp *qp = obj;
	u32 sq_used = kiwi_res_ring_used(qp->sq.ring, sizeof(struct kiwi_sqe),
					 offsetof(struct kiwi_sqe, flags),
					 qp->sq.num, qp->sq.head);
	u32 rq_used = kiwi_res_ring_used(qp->rq.ring, sizeof(struct kiwi_rqe),
					 offsetof(struct kiwi_rqe, flags),
					 qp->rq.num, qp->rq.head);

	if (rdma_nl_put_driver_u32(msg, "sq_size", qp->sq.num) ||
	    rdma_nl_put_driver_u32(msg, "sq_used", sq_used) ||
	    rdma_nl_put_driver_u32(msg, "rq_size", qp->rq.num) ||
	    rdma_nl_put_driver_u32(msg, "rq_used", rq_used) ||
	    rdma_nl_put_driver_u32(msg, "ord", qp->ord) ||
	    rdma_nl_put_driver_u32(msg, "ird", qp->ird))
		return -EMSGSIZE;
	return kiwi_res_qp_conn(msg, qp);
}

/* Open the driver's nest, @fill it from @obj, close it (cancel on error). */
static int kiwi_res_nest(struct sk_buff *msg,
			 int (*fill)(struct sk_buff *msg, void *obj), void *obj)
{
	struct nlattr *nest = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	int ret;

	if (!nest)
		return -EMSGSIZE;
	ret = fill(msg, obj);
	if (ret)
		nla_nest_cancel(msg, nest);
	else
		nla_nest_end(msg, nest);
	return ret;
}

/**
 * kiwi_fill_res_qp_entry() - kiwi's attributes of a QP for rdma res show
 * @msg: the netlink message being built
 * @ibqp: the QP
 *
 * Queue sizes and entries in use, ORD/IRD, and when connected the
 * endpoint's state, CRC, initiator side, RTR message and addresses.
 * Return: 0, or -EMSGSIZE when @msg is full.
 */
int kiwi_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	return kiwi_res_nest(msg, kiwi_res_qp, to_kqp(ibqp));
}

static int kiwi_res_cq(struct sk_buff *msg, void *obj)
{
	struct kiwi_cq *cq = obj;
	u32 used = READ_ONCE(cq->put) - READ_ONCE(cq->get);

	if (rdma_nl_put_driver_u32(msg, "cqe_size", cq->num_cqe) ||
	    rdma_nl_put_driver_u32(msg, "cqe_used", min(used, cq->num_cqe)) ||
	    rdma_nl_put_driver_u32(msg, "cpu", cq->cpu) ||
	    rdma_nl_put_driver_u32(msg, "overflow", READ_ONCE(cq->overflow)))
		return -EMSGSIZE;
	return 0;
}

/**
 * kiwi_fill_res_cq_entry() - kiwi's attributes of a CQ for rdma res show
 * @msg: the netlink message being built
 * @ibcq: the CQ
 *
 * Ring size, completions not yet polled, the CPU its handler runs on, and
 * whether it overflowed. Return: 0, or -EMSGSIZE.
 */
int kiwi_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	return kiwi_res_nest(msg, kiwi_res_cq, to_kcq(ibcq));
}

static int kiwi_res_mr(struct sk_buff *msg, void *obj)
{
	struct kiwi_mem *mem = obj;
	static const char * const types[] = {
		[KIWI_MEM_USER] = "user",
		[KIWI_MEM_DMA] = "dma",
		[KIWI_MEM_FASTREG] = "fastreg",
		[KIWI_MEM_MW] = "mw",
	};

	if (rdma_nl_put_driver_string(msg, "type", mem->type < ARRAY_SIZE(types) ?
				      types[mem->type] : "?") ||
	    rdma_nl_put_driver_u32_hex(msg, "stag", mem->stag) ||
	    rdma_nl_put_driver_u32(msg, "valid", READ_ONCE(mem->valid)) ||
	    rdma_nl_put_driver_u64(msg, "pages", mem->npages) ||
	    rdma_nl_put_driver_u32(msg, "mw_bound", READ_ONCE(mem->mw_bound)))
		return -EMSGSIZE;
	return 0;
}

/**
 * kiwi_fill_res_mr_entry() - kiwi's attributes of an MR for rdma res show
 * @msg: the netlink message being built
 * @ibmr: the MR
 *
 * Its kind, STag, whether it is valid now, pinned pages and windows bound
 * to it. Return: 0, or -EMSGSIZE.
 */
int kiwi_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	return kiwi_res_nest(msg, kiwi_res_mr, &to_kmr(ibmr)->mem);
}
