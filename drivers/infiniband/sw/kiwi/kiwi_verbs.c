// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: software iWARP RDMA device - verbs entry points: device and port
 * queries, user contexts and protection domains, and the table of all
 * verbs (memory regions live in kiwi_mem.c, CQs and QPs in their files).
 */

#include <linux/err.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "kiwi.h"
#include "kiwi_mem.h"

static int kiwi_query_device(struct ib_device *ibdev,
			     struct ib_device_attr *attr,
			     struct ib_udata *udata)
{
	if (udata->inlen || udata->outlen)
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = (u64)KIWI_VERSION_MAJOR << 32 |
		       KIWI_VERSION_MINOR << 16 | KIWI_VERSION_PATCH;
	attr->vendor_id = KIWI_VENDOR_ID;
	attr->sys_image_guid = ibdev->node_guid;
	attr->page_size_cap = PAGE_SIZE;
	attr->max_pd = KIWI_MAX_PD;
	attr->max_cq = KIWI_MAX_CQ;
	attr->max_cqe = KIWI_MAX_CQE;
	attr->max_qp = KIWI_MAX_QP;
	attr->max_qp_wr = KIWI_MAX_QP_WR;
	attr->max_send_sge = KIWI_MAX_SGE;
	attr->max_recv_sge = KIWI_MAX_SGE;
	/* An RDMA Read has one local sink (STag, TO, length): R-RRQ-4. */
	attr->max_sge_rd = 1;
	/* Reads a QP answers (IRD), and Reads it has in flight (ORD). */
	attr->max_qp_rd_atom = KIWI_MAX_IRD;
	attr->max_qp_init_rd_atom = KIWI_MAX_ORD;
	attr->max_res_rd_atom = KIWI_MAX_QP * KIWI_MAX_IRD;
	attr->max_mr = KIWI_MAX_MR;
	attr->max_mr_size = KIWI_MAX_MR_SIZE;
	attr->max_fast_reg_page_list_len = KIWI_MAX_FR_PAGES;
	attr->max_mw = KIWI_MAX_MW;
	/* Basic SRQs, not resizable (no IB_DEVICE_SRQ_RESIZE): V-SRQ-1. */
	attr->max_srq = KIWI_MAX_SRQ;
	attr->max_srq_wr = KIWI_MAX_SRQ_WR;
	attr->max_srq_sge = KIWI_MAX_SGE;
	/*
	 * Port events; a system image GUID (above); fast-register, Local
	 * Invalidate and Send with Invalidate; memory windows of type 1 and
	 * 2B (bound to one QP), for user space. RFC 7306 atomics, atomic
	 * against each other on any QP of any kiwi device (IB_ATOMIC_HCA:
	 * the responder's compare-exchange is atomic against the CPU too,
	 * but the verbs promise no more). Nothing more: no P_Keys, Q_Keys,
	 * RNR NAKs, path migration, queue resize or N-notify CQs.
	 */
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->device_cap_flags = IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	return 0;
}

static void kiwi_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%d.%d.%d", KIWI_VERSION_MAJOR,
		 KIWI_VERSION_MINOR, KIWI_VERSION_PATCH);
}

static int kiwi_query_port(struct ib_device *ibdev, u32 port,
			   struct ib_port_attr *attr)
{
	struct net_device *netdev = to_kdev(ibdev)->netdev;

	/*
	 * The core zeroed *attr; iWARP has no LIDs, SMs, P_Keys or VLs.
	 * While a netdev goes away the core no longer finds it for the
	 * speed: report the slowest rate rather than fail the query.
	 */
	if (ib_get_eth_speed(ibdev, port, &attr->active_speed,
			     &attr->active_width)) {
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
	}

	if (kiwi_netdev_port_active(netdev)) {
		attr->state = IB_PORT_ACTIVE;
		attr->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	} else {
		attr->state = IB_PORT_DOWN;
		attr->phys_state = netif_running(netdev) ?
			IB_PORT_PHYS_STATE_POLLING :
			IB_PORT_PHYS_STATE_DISABLED;
	}
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = ib_mtu_int_to_enum(READ_ONCE(netdev->mtu));
	attr->gid_tbl_len = 1;
	/*
	 * A connection manager (iw_cm's hooks); no IB management classes.
	 * No virtual lanes (max_vl_num 0), no P_Key table.
	 */
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = U32_MAX;
	return 0;
}

static int kiwi_get_port_immutable(struct ib_device *ibdev, u32 port,
				   struct ib_port_immutable *immutable)
{
	immutable->gid_tbl_len = 1;
	immutable->core_cap_flags = RDMA_CORE_PORT_IWARP;
	return 0;
}

/* The only GID is the netdev's MAC address, as iWARP devices report it. */
static int kiwi_query_gid(struct ib_device *ibdev, u32 port, int index,
			  union ib_gid *gid)
{
	struct net_device *netdev = to_kdev(ibdev)->netdev;

	if (index != 0)
		return -EINVAL;
	memset(gid, 0, sizeof(*gid));
	memcpy(gid->raw, netdev->dev_addr, ETH_ALEN);
	return 0;
}

/**
 * kiwi_udata_req() - fetch a provider's request from udata
 * @udata: the command's driver data
 * @req: where to copy the request
 * @req_len: size of the request kiwi-abi.h defines
 * @resp_len: size of the response the caller will write
 *
 * Return: 0, or -EINVAL when the buffers are too short for the ABI or the
 * request has non-zero bytes beyond what this kernel understands.
 */
int kiwi_udata_req(struct ib_udata *udata, void *req, size_t req_len,
		   size_t resp_len)
{
	int ret;

	if (udata->inlen < req_len || udata->outlen < resp_len)
		return -EINVAL;
	ret = ib_copy_from_udata(req, udata, req_len);
	if (ret)
		return ret;
	if (!ib_is_udata_cleared(udata, req_len, udata->inlen - req_len))
		return -EINVAL;
	return 0;
}

/**
 * kiwi_alloc_ucontext() - open a user context after the ABI handshake
 * @uctx: the context the core allocated
 * @udata: carries struct kiwi_alloc_ucontext_req in, _resp out
 *
 * Return: 0; -EINVAL for a request too short or with reserved bits set;
 * -EPROTONOSUPPORT when the provider speaks another KIWI_ABI_VERSION.
 */
static int kiwi_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata)
{
	struct kiwi_alloc_ucontext_resp resp = {
		.abi_version = KIWI_ABI_VERSION,
	};
	struct kiwi_alloc_ucontext_req req;
	int ret;

	ret = kiwi_udata_req(udata, &req, sizeof(req), sizeof(resp));
	if (ret)
		return ret;
	if (req.reserved)
		return -EINVAL;
	if (req.abi_version != KIWI_ABI_VERSION) {
		ibdev_dbg(uctx->device,
			  "provider speaks ABI %u, kernel speaks %u\n",
			  req.abi_version, KIWI_ABI_VERSION);
		return -EPROTONOSUPPORT;
	}
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

static void kiwi_dealloc_ucontext(struct ib_ucontext *uctx)
{
}

/*
 * Lets the core detach open user contexts when the device goes away (link
 * del, netdev removal, rmmod) instead of waiting for every process to close
 * it: the process gets IBV_EVENT_DEVICE_FATAL and -EIO from then on. The
 * core destroys the context's objects itself; kiwi holds nothing else yet.
 */
static void kiwi_disassociate_ucontext(struct ib_ucontext *uctx)
{
}

static int kiwi_alloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	struct kiwi_device *kdev = to_kdev(pd->device);

	if (atomic_inc_return(&kdev->num_pd) > KIWI_MAX_PD) {
		atomic_dec(&kdev->num_pd);
		return -ENOMEM;
	}
	return 0;
}

static int kiwi_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	atomic_dec(&to_kdev(pd->device)->num_pd);
	return 0;
}

/* Called by the core once the device is unregistered and unused. */
static void kiwi_dealloc_driver(struct ib_device *ibdev)
{
	struct kiwi_device *kdev = to_kdev(ibdev);

	WARN_ON(atomic_read(&kdev->num_pd));
	WARN_ON(atomic_read(&kdev->num_cq));
	WARN_ON(atomic_read(&kdev->num_srq));
	WARN_ON(!xa_empty(&kdev->qp_xa));
	xa_destroy(&kdev->qp_xa);
	kiwi_cm_requests_end(kdev);
	kiwi_mem_fini(kdev);
	netdev_put(kdev->netdev, &kdev->netdev_tracker);
}

const struct ib_device_ops kiwi_verbs_ops = {
	.owner = THIS_MODULE,
	.driver_id = KIWI_DRV_ID,
	.uverbs_abi_ver = KIWI_ABI_VERSION,

	.alloc_hw_port_stats = kiwi_alloc_hw_port_stats,
	.alloc_mr = kiwi_alloc_mr,
	.alloc_mw = kiwi_alloc_mw,
	.alloc_pd = kiwi_alloc_pd,
	.alloc_ucontext = kiwi_alloc_ucontext,
	.create_cq = kiwi_create_cq,
	.create_qp = kiwi_create_qp,
	.create_srq = kiwi_create_srq,
	.dealloc_driver = kiwi_dealloc_driver,
	.dealloc_mw = kiwi_dealloc_mw,
	.dealloc_pd = kiwi_dealloc_pd,
	.dealloc_ucontext = kiwi_dealloc_ucontext,
	.dereg_mr = kiwi_dereg_mr,
	.destroy_cq = kiwi_destroy_cq,
	.destroy_qp = kiwi_destroy_qp,
	.destroy_srq = kiwi_destroy_srq,
	.disassociate_ucontext = kiwi_disassociate_ucontext,
	.fill_res_cq_entry = kiwi_fill_res_cq_entry,
	.fill_res_mr_entry = kiwi_fill_res_mr_entry,
	.fill_res_qp_entry = kiwi_fill_res_qp_entry,
	.get_dev_fw_str = kiwi_get_dev_fw_str,
	.get_dma_mr = kiwi_get_dma_mr,
	.get_hw_stats = kiwi_get_hw_stats,
	.get_port_immutable = kiwi_get_port_immutable,
	.get_vector_affinity = kiwi_get_vector_affinity,
	.map_mr_sg = kiwi_map_mr_sg,
	.iw_accept = kiwi_iw_accept,
	.iw_add_ref = kiwi_iw_add_ref,
	.iw_connect = kiwi_iw_connect,
	.iw_create_listen = kiwi_iw_create_listen,
	.iw_destroy_listen = kiwi_iw_destroy_listen,
	.iw_get_qp = kiwi_iw_get_qp,
	.iw_reject = kiwi_iw_reject,
	.iw_rem_ref = kiwi_iw_rem_ref,
	.modify_qp = kiwi_modify_qp,
	.modify_srq = kiwi_modify_srq,
	.poll_cq = kiwi_poll_cq,
	.post_recv = kiwi_post_recv,
	.post_send = kiwi_post_send,
	.post_srq_recv = kiwi_post_srq_recv,
	.query_device = kiwi_query_device,
	.query_gid = kiwi_query_gid,
	.query_port = kiwi_query_port,
	.query_qp = kiwi_query_qp,
	.query_srq = kiwi_query_srq,
	.reg_user_mr = kiwi_reg_user_mr,
	.rereg_user_mr = kiwi_rereg_user_mr,
	.req_notify_cq = kiwi_req_notify_cq,
	.resize_cq = kiwi_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, kiwi_cq, base_cq),
	INIT_RDMA_OBJ_SIZE(ib_mw, kiwi_mw, base_mw),
	INIT_RDMA_OBJ_SIZE(ib_pd, kiwi_pd, base_pd),
	INIT_RDMA_OBJ_SIZE(ib_qp, kiwi_qp, base_qp),
	INIT_RDMA_OBJ_SIZE(ib_srq, kiwi_srq, base_srq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, kiwi_ucontext, base_ucontext),
};
