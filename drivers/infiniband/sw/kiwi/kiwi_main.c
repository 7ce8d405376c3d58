// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: software iWARP RDMA device - module load, unload and parameters,
 * and the "kiwi" rdma link type that creates devices.
 */

#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <rdma/rdma_netlink.h>

#include "kiwi.h"
#include "kiwi_fault.h"

bool kiwi_crc_required;
module_param_named(crc_required, kiwi_crc_required, bool, 0444);
MODULE_PARM_DESC(crc_required,
		 "Require MPA CRC32c on every connection (default: off, negotiated with the peer)");

/*
 * Zero-copy transmit: TCP references user pages instead of copying them,
 * and the work request completes once TCP has let go of them (the peer
 * acknowledged the data). Worth it on a NIC; on veth or loopback the
 * receiving side copies anyway.
 */
unsigned int kiwi_zcopy_min;
module_param_named(zcopy_min, kiwi_zcopy_min, uint, 0644);
MODULE_PARM_DESC(zcopy_min,
		 "Send Send/Write payloads in user memory of at least this many bytes without copying (default 0: always copy)");

unsigned int kiwi_mpa_rev = 2;

/*
 * Set an unsigned parameter from @val if it lies in [@min, @max]; else
 * refuse it with a message saying @range, so that a mistyped parameter
 * stops the load instead of breaking every connection.
 */
static int kiwi_param_set_uint(const char *val, const struct kernel_param *kp,
			       unsigned int min, unsigned int max,
			       const char *range)
{
	unsigned int v;

	if (kstrtouint(val, 0, &v) || v < min || v > max) {
		pr_err("kiwi: %s=%s is out of range: %s\n", kp->name, val, range);
		return -EINVAL;
	}
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return 0;
}

static int kiwi_param_set_mpa_rev(const char *val, const struct kernel_param *kp)
{
	return kiwi_param_set_uint(val, kp, 1, 2,
				   "must be 1 (RFC 5044) or 2 (RFC 6581)");
}

static const struct kernel_param_ops kiwi_mpa_rev_ops = {
	.set = kiwi_param_set_mpa_rev,
	.get = param_get_uint,
};

module_param_cb(mpa_rev, &kiwi_mpa_rev_ops, &kiwi_mpa_rev, 0444);
MODULE_PARM_DESC(mpa_rev,
		 "MPA revision offered when connecting: 1 (RFC 5044) or 2 (RFC 6581, default)");

/*
 * The LLP timeout: how long a stalled peer may hold a connection's sends,
 * a Terminate on its way, or a graceful close, and how long a peer may go
 * without acknowledging data or answering keepalive probes, before kiwi
 * resets the connection and fails the QP (RDMAC verbs V-ST-T1, V-ST-C6,
 * V-SEC-6; "LLP Connection Lost"). Taken when a connection enters RDMA
 * mode or starts to close.
 */
unsigned int kiwi_llp_timeout = 30;

static int kiwi_param_set_llp_timeout(const char *val,
				      const struct kernel_param *kp)
{
	return kiwi_param_set_uint(val, kp, 1, 3600, "1 to 3600 seconds");
}

static const struct kernel_param_ops kiwi_llp_timeout_ops = {
	.set = kiwi_param_set_llp_timeout,
	.get = param_get_uint,
};

module_param_cb(llp_timeout, &kiwi_llp_timeout_ops, &kiwi_llp_timeout, 0644);
MODULE_PARM_DESC(llp_timeout,
		 "Seconds a stalled or silent peer may hold sends, a Terminate or a close, or leave data unacknowledged or keepalive probes unanswered, before the connection is reset (default 30)");

/*
 * FPDU size toward a peer that agreed to large FPDUs: how many TCP
 * segments (MSS) one FPDU may span. RFC 5041 sizes DDP segments to the
 * MULPDU, which RFC 5044 derives from one TCP segment, and every peer that
 * did not agree gets that. A larger value sends fewer, larger FPDUs (less
 * framing work per byte) that TCP splits, to a receiver that said in its
 * MPA frame that it reassembles them (kiwi, siw). 1 withdraws the offer.
 * The offer is read when a connection starts, the size when each FPDU is
 * built.
 */
unsigned int kiwi_fpdu_segs = KIWI_FPDU_SEGS_MAX;

static int kiwi_param_set_fpdu_segs(const char *val,
				    const struct kernel_param *kp)
{
	return kiwi_param_set_uint(val, kp, 1, KIWI_FPDU_SEGS_MAX,
				   "1 to 64 segments");
}

static const struct kernel_param_ops kiwi_fpdu_segs_ops = {
	.set = kiwi_param_set_fpdu_segs,
	.get = param_get_uint,
};

module_param_cb(fpdu_segs, &kiwi_fpdu_segs_ops, &kiwi_fpdu_segs, 0644);
MODULE_PARM_DESC(fpdu_segs,
		 "TCP segments one FPDU may span toward a peer that offered large FPDUs in its MPA frame (kiwi, siw with try_gso): 1 to 64 (default), where 1 withdraws kiwi's offer; other peers always get one segment per FPDU (RFC 5041/5044)");

static int kiwi_newlink(const char *ibdev_name, struct net_device *netdev)
{
	return kiwi_device_add(ibdev_name, netdev);
}

static struct rdma_link_ops kiwi_link_ops = {
	.type = "kiwi",
	.newlink = kiwi_newlink,
};

static struct dentry *kiwi_debugfs;

static int __init kiwi_init(void)
{
	int ret;

	kiwi_debugfs = kiwi_debugfs_init();
	ret = kiwi_fault_init(kiwi_debugfs);
	if (ret)
		goto err_debugfs;
	ret = kiwi_cm_init();
	if (ret)
		goto err_debugfs;
	ret = kiwi_tx_init();
	if (ret)
		goto err_cm;
	ret = kiwi_netdev_notifier_register();
	if (ret)
		goto err_tx;

	rdma_link_register(&kiwi_link_ops);
	pr_info("kiwi: software iWARP RDMA device loaded (MPA rev %u, CRC %s)\n",
		kiwi_mpa_rev, kiwi_crc_required ? "required" : "negotiated");
	return 0;
err_tx:
	kiwi_tx_exit();
err_cm:
	kiwi_cm_exit();
err_debugfs:
	debugfs_remove_recursive(kiwi_debugfs);
	return ret;
}

/*
 * Unload order: stop creating devices, remove every device (this also
 * waits for unregistrations queued by the netdev notifier), then stop
 * watching netdevs.
 */
static void __exit kiwi_exit(void)
{
	rdma_link_unregister(&kiwi_link_ops);
	ib_unregister_driver(KIWI_DRV_ID);
	kiwi_netdev_notifier_unregister();
	kiwi_tx_exit();
	kiwi_cm_exit();
	debugfs_remove_recursive(kiwi_debugfs);
	pr_info("kiwi: unloaded\n");
}

module_init(kiwi_init);
module_exit(kiwi_exit);

MODULE_AUTHOR("The kiwi developers");
MODULE_DESCRIPTION("kiwi: software iWARP RDMA device");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK("kiwi");
