// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libkiwi: memory windows. The kernel allocates them; a bind of either type
 * is a work request on the send queue (kiwi-abi.h), type 1 posted here for
 * ibv_bind_mw(), type 2 by the consumer with IBV_WR_BIND_MW.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libkiwi.h"

struct ibv_mw *kiwi_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	memset(&cmd, 0, sizeof(cmd));
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

int kiwi_dealloc_mw(struct ibv_mw *mw)
{
	int ret = ibv_cmd_dealloc_mw(mw);

	if (!ret)
		free(mw);
	return ret;
}

/*
 * ibv_bind_mw(): a type 1 bind with the next key. As for any work request,
 * the outcome is its completion (IBV_WC_BIND_MW); the window answers to
 * the new rkey from the moment it is posted.
 */
int kiwi_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = {
			.mw = mw,
			.rkey = ibv_inc_rkey(mw->rkey),
			.bind_info = mw_bind->bind_info,
		},
	};
	struct ibv_send_wr *bad;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	ret = kiwi_post_sqes(qp, &wr, &bad, KIWI_WQE_BIND_TYPE1);
	if (!ret)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}
