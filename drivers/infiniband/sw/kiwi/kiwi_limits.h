/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: object limits, shared by the verbs and the engines.
 */
#ifndef _KIWI_LIMITS_H
#define _KIWI_LIMITS_H

/*
 * Limits the device advertises. Each is enforced where the object is
 * created; a limit of zero means the object type does not exist yet.
 */
#define KIWI_MAX_PD		65536
#define KIWI_MAX_CQ		16384
/* max_cqe is KIWI_MAX_CQE (kiwi-abi.h): libkiwi sizes CQ rings by it too. */
#define KIWI_MAX_QP		16384
#define KIWI_MAX_QP_WR		16384		/* power of two */
#define KIWI_MAX_ORD		128		/* RDMA Reads in flight, each way */
#define KIWI_MAX_IRD		128
#define KIWI_MAX_SRQ		16384
#define KIWI_MAX_SRQ_WR		16384		/* power of two */

#endif /* _KIWI_LIMITS_H */
