// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: software iWARP RDMA device - module load, unload and parameters,
 * and the "kiwi" rdma link type that creates devices.
 */

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <rdma/rdma_netlink.h>

#include "kiwi.h"

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

/* Refuse an MPA revision other than 1 or 2 with a message, so that a
 * mistyped parameter stops the load instead of breaking every connection.
 */
static int kiwi_param_set_mpa_rev(const char *val, const struct kernel_param *kp)
{
	unsigned int rev;
	int ret;

	ret = kstrtouint(val, 0, &rev);
	if (ret || rev < 1 || rev > 2) {
		pr_err("kiwi: mpa_rev=%s is out of range: must be 1 (RFC 5044) or 2 (RFC 6581)\n",
		       val);
		return -EINVAL;
	}
	*(unsigned int *)kp->arg = rev;
	return 0;
}

static const struct kernel_param_ops kiwi_mpa_rev_ops = {
	.set = kiwi_param_set_mpa_rev,
	.get = param_get_uint,
};

module_param_cb(mpa_rev, &kiwi_mpa_rev_ops, &kiwi_mpa_rev, 0444);
MODULE_PARM_DESC(mpa_rev,
		 "MPA revision offered when connecting: 1 (RFC 5044) or 2 (RFC 6581, default)");

static int kiwi_newlink(const char *ibdev_name, struct net_device *netdev)
{
	return kiwi_device_add(ibdev_name, netdev);
}

static struct rdma_link_ops kiwi_link_ops = {
	.type = "kiwi",
	.newlink = kiwi_newlink,
};

static int __init kiwi_init(void)
{
	int ret;

	ret = kiwi_cm_init();
	if (ret)
		return ret;
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
	pr_info("kiwi: unloaded\n");
}

module_init(kiwi_init);
module_exit(kiwi_exit);

MODULE_AUTHOR("The kiwi developers");
MODULE_DESCRIPTION("kiwi: software iWARP RDMA device");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK("kiwi");
