// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: software iWARP RDMA device - creating and removing devices.
 *
 * A device is created by "rdma link add NAME type kiwi netdev DEV" and goes
 * away with "rdma link del NAME", with its netdev, or when the module is
 * unloaded. All of these paths end in the RDMA core calling
 * kiwi_dealloc_driver().
 */

#include <linux/if_arp.h>
#include <linux/mutex.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>

#include "kiwi.h"
#include "kiwi_fault.h"
#include "kiwi_mem.h"

/* Serialises the "is this name or netdev taken" checks with registration. */
static DEFINE_MUTEX(kiwi_add_mutex);

/* iWARP runs over TCP/IP on Ethernet; nothing else can carry it here. */
static int kiwi_netdev_usable(const struct net_device *netdev)
{
	if (netdev->type != ARPHRD_ETHER || netdev->addr_len != ETH_ALEN) {
		pr_info("kiwi: %s is not an Ethernet device (type %u), refusing it\n",
			netdev->name, netdev->type);
		return -EOPNOTSUPP;
	}
	return 0;
}

static int kiwi_name_or_netdev_taken(const char *name,
				     struct net_device *netdev)
{
	struct ib_device *ibdev;

	ibdev = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	if (ibdev) {
		ib_device_put(ibdev);
		pr_info("kiwi: an RDMA device named %s exists already\n", name);
		return -EEXIST;
	}
	ibdev = ib_device_get_by_netdev(netdev, KIWI_DRV_ID);
	if (ibdev) {
		pr_info("kiwi: %s already carries kiwi device %s\n",
			netdev->name, dev_name(&ibdev->dev));
		ib_device_put(ibdev);
		return -EEXIST;
	}
	return 0;
}

static struct kiwi_device *kiwi_device_alloc(struct net_device *netdev)
{
	struct kiwi_device *kdev;
	struct ib_device *ibdev;

	kdev = kiwi_fault() ? NULL : ib_alloc_device(kiwi_device, ibdev);
	if (!kdev)
		return NULL;
	if (kiwi_mem_init(kdev)) {
		ib_dealloc_device(&kdev->ibdev);
		return NULL;
	}

	ibdev = &kdev->ibdev;
	ib_set_device_ops(ibdev, &kiwi_verbs_ops);
	ibdev->node_type = RDMA_NODE_RNIC;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_online_cpus();
	/* libkiwi kicks the kernel with these (rings hold the WRs). */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV);
	memcpy(ibdev->node_desc, KIWI_NODE_DESC, sizeof(KIWI_NODE_DESC));
	/* kiwi binds its own sockets: the iWARP port mapper is not needed. */
	memcpy(ibdev->iw_ifname, netdev->name, sizeof(ibdev->iw_ifname));
	ibdev->iw_driver_flags = IW_F_NO_PORT_MAP;
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, netdev->dev_addr);

	kdev->netdev = netdev;
	netdev_hold(netdev, &kdev->netdev_tracker, GFP_KERNEL);
	kdev->port_active = kiwi_netdev_port_active(netdev);
	atomic_set(&kdev->num_pd, 0);
	atomic_set(&kdev->num_cq, 0);
	xa_init_flags(&kdev->qp_xa, XA_FLAGS_ALLOC);
	return kdev;
}

/**
 * kiwi_device_add() - create and register a kiwi device on a netdev
 * @name: the RDMA device name the user chose
 * @netdev: the Ethernet device to run over; the caller holds a reference
 *
 * Context: process context, from the rdma netlink "link add" handler;
 * sleeps. Takes kiwi_add_mutex, then RTNL briefly.
 *
 * Return: 0, or -EOPNOTSUPP for a netdev kiwi cannot run over, -EEXIST for
 * a taken name or a netdev that already has a kiwi device, -ENODEV when the
 * netdev went away meanwhile, or another negative errno from the core.
 */
int kiwi_device_add(const char *name, struct net_device *netdev)
{
	struct kiwi_device *kdev;
	bool netdev_gone;
	int ret;

	ret = kiwi_netdev_usable(netdev);
	if (ret)
		return ret;

	mutex_lock(&kiwi_add_mutex);
	ret = kiwi_name_or_netdev_taken(name, netdev);
	if (ret)
		goto out_unlock;

	kdev = kiwi_device_alloc(netdev);
	if (!kdev) {
		ret = -ENOMEM;
		goto out_unlock;
	}

	ret = ib_device_set_netdev(&kdev->ibdev, netdev, 1);
	if (ret)
		goto out_dealloc;

	ret = ib_register_device(&kdev->ibdev, name, NULL);
	if (ret)
		goto out_dealloc;

	/*
	 * If the netdev started unregistering before we were registered, the
	 * notifier could not find us and never will: undo. Once registered,
	 * a check under RTNL sees either a live netdev (the notifier will
	 * find us later) or one already on its way out.
	 */
	rtnl_lock();
	netdev_gone = netdev->reg_state != NETREG_REGISTERED;
	if (!netdev_gone)
		kiwi_netdev_sync(kdev);
	rtnl_unlock();
	if (netdev_gone) {
		ib_unregister_device(&kdev->ibdev);
		ret = -ENODEV;
		goto out_unlock;
	}

	pr_info("kiwi: %s created on %s\n", dev_name(&kdev->ibdev.dev),
		netdev->name);
	mutex_unlock(&kiwi_add_mutex);
	return 0;

out_dealloc:
	/* Not registered: the core will not call dealloc_driver for us. */
	kiwi_mem_fini(kdev);
	netdev_put(kdev->netdev, &kdev->netdev_tracker);
	ib_dealloc_device(&kdev->ibdev);
out_unlock:
	mutex_unlock(&kiwi_add_mutex);
	return ret;
}
