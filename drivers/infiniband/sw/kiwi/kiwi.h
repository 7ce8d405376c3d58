/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: software iWARP RDMA device - shared definitions of the module.
 */
#ifndef _KIWI_H
#define _KIWI_H

#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/kiwi-abi.h>

#define KIWI_DRV_ID		((enum rdma_driver_id)KIWI_DRIVER_ID)
#define KIWI_NODE_DESC		"kiwi software iWARP"
#define KIWI_VERSION_MAJOR	0
#define KIWI_VERSION_MINOR	1
#define KIWI_VERSION_PATCH	0

/*
 * Limits the device advertises. Each is enforced where the object is
 * created; a limit of zero means the object type does not exist yet.
 */
#define KIWI_MAX_PD		65536

/* Module parameters (kiwi_main.c), validated when the module loads. */
extern bool kiwi_crc_required;
extern unsigned int kiwi_mpa_rev;

/**
 * struct kiwi_device - one kiwi RDMA device bound to one netdev
 * @ibdev: the RDMA core's device; must be first (ib_alloc_device)
 * @netdev: the Ethernet device this one runs over, held until dealloc
 * @netdev_tracker: tracks our reference on @netdev
 * @port_active: last port state reported with an IB event; written only
 *	under RTNL (netdev notifier) or before registration
 * @num_pd: protection domains allocated, bounded by KIWI_MAX_PD
 */
struct kiwi_device {
	struct ib_device ibdev;
	struct net_device *netdev;
	netdevice_tracker netdev_tracker;
	bool port_active;
	atomic_t num_pd;
};

struct kiwi_ucontext {
	struct ib_ucontext base_ucontext;
};

struct kiwi_pd {
	struct ib_pd base_pd;
};

/* Placeholders so the RDMA core can size these objects; see kiwi_verbs.c. */
struct kiwi_cq {
	struct ib_cq base_cq;
};

struct kiwi_qp {
	struct ib_qp base_qp;
};

static inline struct kiwi_device *to_kdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct kiwi_device, ibdev);
}

/* kiwi_device.c */
int kiwi_device_add(const char *name, struct net_device *netdev);

/* kiwi_netdev.c */
bool kiwi_netdev_port_active(const struct net_device *netdev);
int kiwi_netdev_notifier_register(void);
void kiwi_netdev_notifier_unregister(void);

/* kiwi_verbs.c */
extern const struct ib_device_ops kiwi_verbs_ops;

#endif /* _KIWI_H */
