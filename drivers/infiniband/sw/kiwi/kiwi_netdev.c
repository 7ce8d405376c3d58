// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: software iWARP RDMA device - following the netdev under a device.
 *
 * The port is active exactly when its netdev is up with carrier. Changes are
 * reported to RDMA consumers as IB_EVENT_PORT_ACTIVE / IB_EVENT_PORT_ERR, an
 * address change as IB_EVENT_GID_CHANGE, and a netdev that goes away takes
 * its kiwi device with it.
 *
 * Context: the notifier runs in process context under RTNL, for netdevs of
 * every network namespace; RTNL serialises every write of port_active after
 * registration.
 */

#include <linux/netdevice.h>
#include <rdma/ib_cache.h>

#include "kiwi.h"

bool kiwi_netdev_port_active(const struct net_device *netdev)
{
	return netif_running(netdev) && netif_carrier_ok(netdev);
}

static void kiwi_port_event(struct kiwi_device *kdev, enum ib_event_type type)
{
	struct ib_event event = {
		.device = &kdev->ibdev,
		.element.port_num = 1,
		.event = type,
	};

	ib_dispatch_event(&event);
}

static void kiwi_port_update(struct kiwi_device *kdev)
{
	bool active = kiwi_netdev_port_active(kdev->netdev);

	if (active == kdev->port_active)
		return;
	WRITE_ONCE(kdev->port_active, active);
	kiwi_port_event(kdev, active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
}

/**
 * kiwi_netdev_sync() - catch up with netdev changes made during registration
 * @kdev: a device that has just been registered
 *
 * The notifier finds a device only once it is registered, but the core
 * read the port state and the GID (the netdev's MAC address) earlier: a
 * change in between, such as the MAC address udev gives a new veth, would
 * be lost, and rdma_cm would refuse to bind the netdev's addresses
 * (-ENODEV) because no GID matches the MAC. Report what changed.
 *
 * Context: process context, RTNL held; after this the notifier sees every
 * change.
 */
void kiwi_netdev_sync(struct kiwi_device *kdev)
{
	union ib_gid gid;

	ASSERT_RTNL();
	ASSERT_RTNL();
	kiwi_port_update(kdev);
	if (rdma_query_gid(&kdev->ibdev, 1, 0, &gid) ||
	    memcmp(gid.raw, kdev->netdev->dev_addr, ETH_ALEN))
		kiwi_port_event(kdev, IB_EVENT_GID_CHANGE);
}

static int kiwi_netdev_event(struct notifier_block *nb, unsigned long event,
			     void *ptr)
{
	struct net_device *netdev = netdev_notifier_info_to_dev(ptr);
	struct ib_device *ibdev;
	struct kiwi_device *kdev;

	ASSERT_RTNL();

	ibdev = ib_device_get_by_netdev(netdev, KIWI_DRV_ID);
	if (!ibdev)
		return NOTIFY_DONE;
	kdev = to_kdev(ibdev);

	switch (event) {
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		kiwi_port_update(kdev);
		break;
	case NETDEV_CHANGEADDR:
		kiwi_port_event(kdev, IB_EVENT_GID_CHANGE);
		break;
	case NETDEV_UNREGISTER:
		/* Their addresses go with the netdev: end the connections. */
		kiwi_qp_all_lost(kdev);
		/* Unregistering sleeps on consumers; do it from a work item. */
		ib_unregister_device_queued(ibdev);
		break;
	default:
		break;
	}
	ib_device_put(ibdev);
	return NOTIFY_OK;
}

static struct notifier_block kiwi_netdev_nb = {
	.notifier_call = kiwi_netdev_event,
};

int kiwi_netdev_notifier_register(void)
{
	return register_netdevice_notifier(&kiwi_netdev_nb);
}

void kiwi_netdev_notifier_unregister(void)
{
	unregister_netdevice_notifier(&kiwi_netdev_nb);
}
