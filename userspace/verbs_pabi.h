/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The private provider ABI of libibverbs (IBVERBS_PRIVATE_<KIWI_PABI>),
 * declared here because rdma-core does not install its provider header.
 * Only what libkiwi uses is declared, except that every structure libibverbs
 * itself reads or allocates is declared whole, with the layout of the
 * rdma-core release built against (KIWI_RDMA_CORE, its major version).
 *
 * rdma-core names the ABI after the release that last renamed it, but has
 * also added context operations within one name (in 35, 36 and 62), so
 * the layout follows the release, not the name. What changed in what
 * libkiwi declares, read from libibverbs/driver.h at each release tag:
 *   36 to 56 (ABI 34)  the layout declared without conditions;
 *   57, 58 (ABI 57)    ibv_cmd_get_context() takes a file descriptor array;
 *   59 to 61 (ABI 59)  context ops alloc_dmah, dealloc_dmah, reg_mr_ex;
 *   62, 63 (ABI 59)    context ops dm_export_dmabuf_fd, query_port_speed;
 *   64 (ABI 64)        context ops alloc_buf, free_buf;
 *   65 (ABI 65)        context ops for completion counters (*_comp_cntr).
 * userspace/Makefile reads both numbers off the libibverbs built against
 * and refuses a release outside 36 to 65; the public verbs.h must be that
 * same release's.
 */
#ifndef KIWI_VERBS_PABI_H
#define KIWI_VERBS_PABI_H

#if !defined(KIWI_PABI) || !defined(KIWI_RDMA_CORE)
#error "KIWI_PABI and KIWI_RDMA_CORE are set by userspace/Makefile"
#elif KIWI_RDMA_CORE < 36 || KIWI_RDMA_CORE > 65
#error "libkiwi knows the provider ABI of rdma-core 36 to 65 only"
#endif

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

struct verbs_sysfs_dev;		/* opaque to providers that match by id */

enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_DRIVER_ID = 3,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

struct pabi_list_node {
	struct pabi_list_node *next, *prev;
};

struct verbs_device {
	struct ibv_device device;	/* must be first */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct pabi_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/*
 * A memory region as libibverbs sees it: ibv_dereg_mr() reads mr_type and
 * access (to undo its fork protection), so the layout must be exact.
 */
enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};

/*
 * A QP and a CQ as libibverbs sees them. ibv_qp_to_qp_ex() reads comp_mask
 * of every QP, and answers with qp_ex only when VERBS_QP_EX is set there;
 * ibv_cq_ex_to_cq() takes the CQ at offset 0. Both unions come from the
 * public verbs.h, so their layout follows the rdma-core built against.
 */
struct verbs_xrcd;		/* libkiwi makes no XRC domains */

enum {
	VERBS_QP_XRCD	= 1 << 0,
	VERBS_QP_EX	= 1 << 1,
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};

struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

/*
 * The table of context operations, in the ABI's (alphabetical) order.
 * libibverbs copies every non-NULL entry, so the layout must be exact;
 * entries libkiwi leaves NULL are typed as plain pointers.
 */
typedef void *pabi_op;

struct verbs_context_ops {
	pabi_op advise_mr;
#if KIWI_RDMA_CORE >= 64
	pabi_op alloc_buf;
#endif
	pabi_op alloc_dm;
#if KIWI_RDMA_CORE >= 59
	pabi_op alloc_dmah;
#endif
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	pabi_op alloc_null_mr;
	pabi_op alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	pabi_op alloc_td;
	pabi_op async_event;
	pabi_op attach_counters_point_flow;
	pabi_op attach_mcast;
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	pabi_op close_xrcd;
	pabi_op cq_event;
	pabi_op create_ah;
#if KIWI_RDMA_CORE >= 65
	pabi_op create_comp_cntr;
#endif
	pabi_op create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *attr);
	pabi_op create_flow;
	pabi_op create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	pabi_op create_rwq_ind_table;
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	pabi_op create_srq_ex;
	pabi_op create_wq;
#if KIWI_RDMA_CORE >= 59
	pabi_op dealloc_dmah;
#endif
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	pabi_op dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	pabi_op destroy_ah;
#if KIWI_RDMA_CORE >= 65
	pabi_op destroy_comp_cntr;
#endif
	pabi_op destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	pabi_op destroy_flow;
	pabi_op destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	pabi_op destroy_rwq_ind_table;
	int (*destroy_srq)(struct ibv_srq *srq);
	pabi_op destroy_wq;
	pabi_op detach_mcast;
#if KIWI_RDMA_CORE >= 62
	pabi_op dm_export_dmabuf_fd;
#endif
#if KIWI_RDMA_CORE >= 64
	pabi_op free_buf;
#endif
	void (*free_context)(struct ibv_context *context);
	pabi_op free_dm;
	pabi_op get_srq_num;
	pabi_op import_dm;
	pabi_op import_mr;
	pabi_op import_pd;
#if KIWI_RDMA_CORE >= 65
	pabi_op inc_comp_cntr;
	pabi_op inc_err_comp_cntr;
#endif
	pabi_op modify_cq;
	pabi_op modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	pabi_op modify_qp_rate_limit;
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			  int attr_mask);
	pabi_op modify_wq;
	pabi_op open_qp;
	pabi_op open_xrcd;
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	pabi_op post_srq_ops;
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
#if KIWI_RDMA_CORE >= 65
	pabi_op qp_attach_comp_cntr;
	pabi_op query_comp_cntr_caps;
#endif
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	pabi_op query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
#if KIWI_RDMA_CORE >= 62
	pabi_op query_port_speed;
#endif
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	pabi_op query_qp_data_in_order;
	pabi_op query_rt_values;
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
#if KIWI_RDMA_CORE >= 65
	pabi_op read_comp_cntr;
#endif
	pabi_op read_counters;
#if KIWI_RDMA_CORE >= 65
	pabi_op read_err_comp_cntr;
#endif
	pabi_op reg_dm_mr;
	pabi_op reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
#if KIWI_RDMA_CORE >= 59
	pabi_op reg_mr_ex;
#endif
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
#if KIWI_RDMA_CORE >= 65
	pabi_op set_comp_cntr;
#endif
	pabi_op set_ece;
#if KIWI_RDMA_CORE >= 65
	pabi_op set_err_comp_cntr;
#endif
	pabi_op unimport_dm;
	pabi_op unimport_mr;
	pabi_op unimport_pd;
};

/* Command buffers: the uverbs write header, then the core payload. */
struct ibv_get_context {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_get_context core_payload;
};

struct ibv_alloc_pd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_alloc_pd core_payload;
};

struct ibv_query_port {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_query_port core_payload;
};

struct ibv_create_cq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_create_cq core_payload;
};

struct ibv_resize_cq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_resize_cq core_payload;
};

struct ibv_create_qp {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_create_qp core_payload;
};

struct ibv_modify_qp {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_modify_qp core_payload;
};

struct ibv_query_qp {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_query_qp core_payload;
};

struct ibv_reg_mr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_reg_mr core_payload;
};

struct ibv_alloc_mw {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_alloc_mw core_payload;
};

struct ibv_rereg_mr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_rereg_mr core_payload;
};

struct ibv_create_srq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_create_srq core_payload;
};

struct ibv_modify_srq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_modify_srq core_payload;
};

struct ibv_query_srq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_query_srq core_payload;
};

/* Functions libibverbs exports under IBVERBS_PRIVATE_<KIWI_PABI>. */
#define PABI_CAT(a, b) a##b
#define PABI_NAME(a, b) PABI_CAT(a, b)
#define verbs_register_driver PABI_NAME(verbs_register_driver_, KIWI_PABI)
void verbs_register_driver(const struct verbs_device_ops *ops);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);
#if KIWI_RDMA_CORE >= 57
struct ibv_fd_arr;		/* file descriptors to pass; libkiwi passes none */
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ibv_fd_arr *fd_arr,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
#define kiwi_cmd_get_context(ctx, cmd, cmd_size, resp, resp_size) \
	ibv_cmd_get_context(ctx, cmd, cmd_size, NULL, resp, resp_size)
#else
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
#define kiwi_cmd_get_context ibv_cmd_get_context
#endif
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
/*
 * One argument in every rdma-core from 44 to 65 (libibverbs/driver.h and
 * cmd_mr.c); the ioctl's driver attributes are not exposed to providers.
 */
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp,
		     size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp, size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

#endif /* KIWI_VERBS_PABI_H */
