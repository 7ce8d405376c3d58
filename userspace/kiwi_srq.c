// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libkiwi: shared receive queues. The SRQ is a ring of receive entries in
 * our memory, pinned by the kernel; posting writes entries straight into it
 * (no system call), and the receive engines of the QPs on the SRQ take them
 * in ring order. Limits are armed and read through the kernel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libkiwi.h"

struct kiwi_create_srq_cmd {
	struct ibv_create_srq ibv_cmd;
	struct kiwi_create_srq_req req;
};

struct kiwi_create_srq_uresp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct kiwi_create_srq_resp resp;
};

static struct kiwi_usrq *to_usrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct kiwi_usrq, ibv_srq);
}

struct ibv_srq *kiwi_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	struct kiwi_create_srq_uresp resp;
	struct kiwi_create_srq_cmd cmd;
	struct kiwi_usrq *srq;
	int ret;

	/* The kernel checks too; this saves pinning a ring for nothing. */
	if (attr->attr.max_wr > 16384 || attr->attr.max_sge > KIWI_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	srq->num_rqe = kiwi_pow2_roundup(attr->attr.max_wr ?: 1);
	ret = kiwi_ring_alloc(&srq->ring,
			      (size_t)srq->num_rqe * sizeof(struct kiwi_rqe));
	if (ret)
		goto err;
	srq->rq = srq->ring.addr;
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	cmd.req.ring_va = (uintptr_t)srq->ring.addr;
	cmd.req.num_rqe = srq->num_rqe;
	ret = ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_ring;
	srq->max_sge = attr->attr.max_sge;
	attr->attr.max_wr = srq->num_rqe;
	return &srq->ibv_srq;

err_ring:
	pthread_spin_destroy(&srq->lock);
	kiwi_ring_free(&srq->ring);
err:
	free(srq);
	errno = ret;
	return NULL;
}

int kiwi_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		    int mask)
{
	struct ibv_modify_srq cmd;

	memset(&cmd, 0, sizeof(cmd));
	return ibv_cmd_modify_srq(ibsrq, attr, mask, &cmd, sizeof(cmd));
}

int kiwi_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	memset(&cmd, 0, sizeof(cmd));
	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

/* The kernel refuses (EBUSY) while a QP uses the SRQ: keep the ring then. */
int kiwi_destroy_srq(struct ibv_srq *ibsrq)
{
	struct kiwi_usrq *srq = to_usrq(ibsrq);
	int ret = ibv_cmd_destroy_srq(ibsrq);

	if (ret)
		return ret;
	kiwi_ring_free(&srq->ring);
	pthread_spin_destroy(&srq->lock);
	free(srq);
	return 0;
}

int kiwi_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	struct kiwi_usrq *srq = to_usrq(ibsrq);

	return kiwi_post_rqes(&srq->lock, srq->rq, srq->num_rqe, &srq->tail,
			      srq->max_sge, wr, bad_wr);
}
