/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: software iWARP RDMA device - shared definitions of the module.
 */
#ifndef _KIWI_H
#define _KIWI_H

#include <linux/netdevice.h>
#include <linux/smp.h>
#include <rdma/ib_verbs.h>
#include <rdma/kiwi-abi.h>

#define KIWI_DRV_ID		((enum rdma_driver_id)KIWI_DRIVER_ID)
#define KIWI_NODE_DESC		"kiwi software iWARP"
#define KIWI_VERSION_MAJOR	0
#define KIWI_VERSION_MINOR	1
#define KIWI_VERSION_PATCH	0

#include "kiwi_compat.h"
#include "kiwi_limits.h"
#include "kiwi_stats.h"

#include "kiwi_cm.h"
#include "kiwi_engine.h"

/* Module parameters (kiwi_main.c), validated when the module loads. */
extern bool kiwi_crc_required;
extern unsigned int kiwi_zcopy_min;
extern unsigned int kiwi_mpa_rev;
extern unsigned int kiwi_llp_timeout;
extern unsigned int kiwi_fpdu_segs;

#define KIWI_FPDU_SEGS_MAX	64

/* Does kiwi offer large FPDUs in the MPA frames it sends now? */
static inline bool kiwi_large_fpdus_offered(void)
{
	return READ_ONCE(kiwi_fpdu_segs) > 1;
}

/**
 * struct kiwi_device - one kiwi RDMA device bound to one netdev
 * @ibdev: the RDMA core's device; must be first (ib_alloc_device)
 * @netdev: the Ethernet device this one runs over, held until dealloc
 * @netdev_tracker: tracks our reference on @netdev
 * @port_active: last port state reported with an IB event; written only
 *	under RTNL (netdev notifier) or before registration
 * @num_pd: protection domains allocated, bounded by KIWI_MAX_PD
 * @num_cq: completion queues allocated, bounded by KIWI_MAX_CQ
 * @num_srq: shared receive queues allocated, bounded by KIWI_MAX_SRQ
 * @qp_xa: QP number -> QP, for the connection manager's lookups
 * @mem_xa: the STag table (kiwi_mem.c), see below
 * @mem_next: the STag index to try next
 * @mem_last_key: the key each STag index had last
 * @num_mr: memory objects in @mem_xa, bounded by KIWI_MAX_MR
 * @num_mw: memory windows in @mem_xa, bounded by KIWI_MAX_MW
 * @stats: port counters, indexed by enum kiwi_stat
 */
struct kiwi_device {
	struct ib_device ibdev;
	struct net_device *netdev;
	netdevice_tracker netdev_tracker;
	bool port_active;
	atomic_t num_pd;
	atomic_t num_cq;
	atomic_t num_srq;
	struct xarray qp_xa;

	/*
	 * STag table: index (STag >> 8) -> struct kiwi_mem. Lookups are
	 * lock-free (RCU, kiwi_mem_get()); indices are allocated cyclically
	 * and freed under the xarray's lock, which also guards @mem_next.
	 * @mem_last_key (KIWI_MEM_INDICES bytes) lets a reused index get a
	 * key that differs from its previous one.
	 */
	struct xarray mem_xa;
	u32 mem_next;
	u8 *mem_last_key;
	atomic_t num_mr;
	atomic_t num_mw;
	atomic64_t stats[KIWI_NUM_STATS];
};

/*
 * Ring entries pass between producer and consumer by their VALID flag
 * (kiwi-abi.h). Reading the flag is an acquire, so an entry's fields are
 * read only after the flag that hands it over; writing it is a release, so
 * the fields are visible before the flag that hands them over.
 */
/* acquire: see above */
#define kiwi_ring_flags(p)		smp_load_acquire(p)
/* release: see above */
#define kiwi_ring_set_flags(p, v)	smp_store_release(p, v)

/**
 * struct kiwi_user_ring - a ring in pinned user memory, mapped into the kernel
 * @umem: the pinned pages, NULL when the ring is kernel memory
 * @addr: kernel address of the ring
 */
struct kiwi_user_ring {
	struct ib_umem *umem;
	void *addr;
};

struct kiwi_ucontext {
	struct ib_ucontext base_ucontext;
};

struct kiwi_pd {
	struct ib_pd base_pd;
};

/**
 * struct kiwi_cq - a completion queue
 * @base_cq: the core's CQ; must be first
 * @lock: serialises producers, and kernel consumers, of @queue
 * @queue: the CQE ring, in kernel memory or (user CQs) in @user_ring
 * @ctrl: the notification word after the ring
 * @num_cqe: ring size, a power of two
 * @put: producer index, private to the kernel
 * @get: consumer index of kernel pollers
 * @overflow: a completion found the ring full; the CQ is broken
 * @user_ring: the pinned ring of a user CQ
 * @cpu: the CPU of its completion vector
 * @notify_csd: runs the completion handler on @cpu
 * @notify_pending: @notify_csd is queued and has not run yet
 * @notify_busy: @notify_csd is queued or running
 */
struct kiwi_cq {
	struct ib_cq base_cq;
	spinlock_t lock;		/* see @lock above */
	struct kiwi_cqe *queue;
	struct kiwi_cq_ctrl *ctrl;
	u32 num_cqe;
	u32 put;
	u32 get;
	bool overflow;
	struct kiwi_user_ring user_ring;
	int cpu;
	call_single_data_t notify_csd;
	atomic_t notify_pending;
	atomic_t notify_busy;
};

static inline struct kiwi_cq *to_kcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct kiwi_cq, base_cq);
}

/**
 * struct kiwi_queue - a send or receive ring of a QP
 * @ring: the entries (struct kiwi_sqe or struct kiwi_rqe)
 * @num: number of entries, a power of two
 * @head: next entry the kernel consumes
 * @tail: next entry a kernel poster fills (user QPs: unused)
 * @max_sge: scatter/gather entries a WR may carry
 * @user_ring: the pinned ring of a user QP
 */
struct kiwi_queue {
	void *ring;
	u32 num;
	u32 head;
	u32 tail;
	u32 max_sge;
	struct kiwi_user_ring user_ring;
};

/**
 * struct kiwi_srq - a shared receive queue (kiwi_srq.c)
 * @base_srq: the core's SRQ; must be first
 * @lock: serialises kernel posters and the receive engines taking WQEs
 * @ring: the WQEs, in kernel memory or (user SRQs) in @user_ring
 * @num: ring size, a power of two
 * @head: next entry a receive engine takes
 * @tail: next entry a kernel poster fills (user SRQs: unused)
 * @max_sge: scatter/gather entries a WR may carry
 * @limit: armed limit (srq_limit), 0 when disarmed; written under @lock
 * @user_ring: the pinned ring of a user SRQ
 */
struct kiwi_srq {
	struct ib_srq base_srq;
	spinlock_t lock;		/* see @lock above */
	struct kiwi_rqe *ring;
	u32 num;
	u32 head;
	u32 tail;
	u32 max_sge;
	u32 limit;
	struct kiwi_user_ring user_ring;
};

static inline struct kiwi_srq *to_ksrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct kiwi_srq, base_srq);
}

/**
 * struct kiwi_qp - a reliably connected queue pair
 * @base_qp: the core's QP; must be first
 * @kdev: its device
 * @refs: references of the connection manager and the engines; destroy
 *	waits for them on @released
 * @released: completed when @refs drops to zero
 * @state_lock: serialises state changes (modify_qp, the CM, errors)
 * @state: the verbs state, as query_qp reports it
 * @sq_lock: protects @sq for kernel posters and the flush
 * @rq_lock: likewise for @rq, and for @srq_held
 * @sq: send queue
 * @rq: receive queue; empty (num 0) on a QP with an SRQ
 * @srq_held: on an SRQ, the receive engine had taken a WQE for a message
 *	that was in progress when it stopped; the flush completes it
 * @srq_held_id: that WQE's wr_id
 * @ctrl: the control word after the SQ ring (user QPs see it)
 * @scq: completion queue of the send queue
 * @rcq: completion queue of the receive queue
 * @sig_all: every send WR completes, signalled or not
 * @max_inline: bytes of inline data a send WR may carry
 * @access: IB_ACCESS_REMOTE_* rights for the peer's operations
 * @ord: outbound RDMA Read depth (max_rd_atomic)
 * @ird: inbound RDMA Read depth (max_dest_rd_atomic)
 * @cep: the connection, with a reference held; NULL when unconnected;
 *	changed under @state_lock
 * @sock: the connection's socket while the QP is connected
 * @crc: MPA CRC in use
 * @large_fpdus: both ends offered large FPDUs in the MPA exchange: FPDUs
 *	may span up to kiwi_fpdu_segs TCP segments (else one each)
 * @rtr: ready-to-receive message owed to the peer (initiator) or awaited
 *	from it (responder), KIWI_RTR_*
 * @rtr_pending: true until that message went out or came in; a
 *	responder without one waits for the initiator's first message
 * @initiator: this side sent the MPA Request
 * @rx_err_stat: the port counter (enum kiwi_stat) of the error the
 *	receive engine is about to report, when its Terminate code alone
 *	does not tell (0: by the code); the receive engine's (socket lock)
 * @tx: transmit engine, allocated with the QP
 * @rx: receive engine, allocated with the QP
 */
struct kiwi_qp {
	struct ib_qp base_qp;
	struct kiwi_device *kdev;
	refcount_t refs;
	struct completion released;
	struct mutex state_lock;	/* see @state_lock above */
	enum ib_qp_state state;
	spinlock_t sq_lock;		/* see @sq_lock above */
	spinlock_t rq_lock;		/* see @rq_lock above */
	struct kiwi_queue sq;
	struct kiwi_queue rq;
	bool srq_held;
	u64 srq_held_id;
	struct kiwi_sq_ctrl *ctrl;
	struct kiwi_cq *scq;
	struct kiwi_cq *rcq;
	bool sig_all;
	u32 max_inline;
	int access;
	u8 ord;
	u8 ird;
	struct kiwi_cep *cep;
	struct socket *sock;
	bool crc;
	bool large_fpdus;
	u8 rtr;
	bool rtr_pending;
	bool initiator;
	u8 rx_err_stat;
	struct kiwi_tx *tx;
	struct kiwi_rx *rx;
};

static inline struct kiwi_qp *to_kqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct kiwi_qp, base_qp);
}

static inline struct kiwi_device *to_kdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct kiwi_device, ibdev);
}

/* kiwi_user_ring.c */
int kiwi_user_ring_pin(struct ib_device *ibdev, u64 va, size_t len,
		       struct kiwi_user_ring *map);
void kiwi_user_ring_unpin(struct kiwi_user_ring *map);

/* kiwi_cq.c */
int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   KIWI_CQ_UARG *uarg);
int kiwi_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int kiwi_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int kiwi_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int kiwi_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int kiwi_cq_add(struct kiwi_cq *cq, const struct kiwi_cqe *cqe);
const struct cpumask *kiwi_get_vector_affinity(struct ib_device *ibdev,
					       int comp_vector);

/* kiwi_restrack.c */
int kiwi_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int kiwi_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);
int kiwi_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);

/* kiwi_qp.c */
int kiwi_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata);
int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata);
int kiwi_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init);
int kiwi_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int kiwi_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr);
int kiwi_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr);
struct ib_qp *kiwi_qp_lookup_ib(struct kiwi_device *kdev, u32 qpn);
struct kiwi_qp *kiwi_qp_get_by_num(struct kiwi_device *kdev, u32 qpn);
void kiwi_qp_all_lost(struct kiwi_device *kdev);
void kiwi_qp_get(struct kiwi_qp *qp);
void kiwi_qp_put(struct kiwi_qp *qp);
int kiwi_qp_cm_bind(struct kiwi_qp *qp, struct kiwi_cep *cep);
void kiwi_qp_cm_unbind(struct kiwi_qp *qp, struct kiwi_cep *cep);
int kiwi_qp_cm_established(struct kiwi_qp *qp, struct kiwi_cep *cep,
			   bool initiator);
void kiwi_qp_cm_disconnected(struct kiwi_qp *qp, struct kiwi_cep *cep);
u8 kiwi_wc_opcode(u8 wr_opcode);
void kiwi_qp_async_event(struct kiwi_qp *qp, enum ib_event_type type);
void kiwi_qp_terminated(struct kiwi_qp *qp, u32 code);
bool kiwi_qp_terminate(struct kiwi_qp *qp, const struct kiwi_term *t);
void kiwi_qp_error(struct kiwi_qp *qp);
void kiwi_qp_cq_error(struct kiwi_qp *qp);
void kiwi_iw_add_ref(struct ib_qp *ibqp);
void kiwi_iw_rem_ref(struct ib_qp *ibqp);
struct ib_qp *kiwi_iw_get_qp(struct ib_device *ibdev, int qpn);
void kiwi_rqe_from_wr(struct kiwi_rqe *rqe, const struct ib_recv_wr *wr);

/* kiwi_engine.c (the engines' own entry points are in kiwi_engine.h) */
bool kiwi_qp_tx_idle(struct kiwi_qp *qp);
bool kiwi_qp_work_pending(struct kiwi_qp *qp);
bool kiwi_qp_work_left(struct kiwi_qp *qp);
bool kiwi_qp_fin_cuts_work(struct kiwi_qp *qp, struct kiwi_cep *cep);

/* kiwi_stats.c */
struct rdma_hw_stats *kiwi_alloc_hw_port_stats(struct ib_device *ibdev,
					       u32 port);
int kiwi_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		      u32 port, int index);

/* kiwi_srq.c */
int kiwi_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata);
int kiwi_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata);
int kiwi_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int kiwi_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int kiwi_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);
bool kiwi_srq_take(struct kiwi_srq *srq, struct kiwi_rqe *rqe);

/* kiwi_stats.c */
/**
 * struct kiwi_cq_cpu_stats - one CPU's completion work, over all devices
 * @cqes: completions written into a CQ on this CPU
 * @handlers: completion handlers run on this CPU
 * @remote: those of @handlers that another CPU sent here (kernel CQs)
 *
 * Each CPU writes only its own (with interrupts off or in its own
 * cross-CPU call), so plain increments do.
 */
struct kiwi_cq_cpu_stats {
	u64 cqes;
	u64 handlers;
	u64 remote;
};

DECLARE_PER_CPU(struct kiwi_cq_cpu_stats, kiwi_cq_cpu_stats);
extern atomic_t kiwi_cm_endpoints;
extern atomic_t kiwi_cm_sockets;
struct dentry *kiwi_debugfs_init(void);

/* kiwi_device.c */
int kiwi_device_add(const char *name, struct net_device *netdev);

/* kiwi_netdev.c */
bool kiwi_netdev_port_active(const struct net_device *netdev);
void kiwi_netdev_sync(struct kiwi_device *kdev);
int kiwi_netdev_notifier_register(void);
void kiwi_netdev_notifier_unregister(void);

/* kiwi_verbs.c */
extern const struct ib_device_ops kiwi_verbs_ops;
int kiwi_udata_req(struct ib_udata *udata, void *req, size_t req_len,
		   size_t resp_len);

#endif /* _KIWI_H */
