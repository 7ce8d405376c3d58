// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_ktest_lkey: a kernel consumer's PD for kiwi_ringabuse to aim at.
 * While loaded it holds a PD on device @dev and one page filled with
 * KLK_FILL, and shows user space (read-only parameters) the PD's
 * local_dma_lkey, the page's DMA address, and whether the page still holds
 * only KLK_FILL. A user QP's WR naming that lkey must fail and move no
 * data (V-STAG0-3, V-SEC-2, V-SRQ-10): the page is what it would read or
 * write. Unload it before the device goes: it holds a reference.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/string.h>
#include <rdma/ib_verbs.h>

#define KLK_FILL	0x5a

static char *dev = "kiwi0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "the RDMA device of the PD (default kiwi0)");
static unsigned int lkey;
module_param(lkey, uint, 0444);
MODULE_PARM_DESC(lkey, "out: the PD's local_dma_lkey");
static unsigned long buf;
module_param(buf, ulong, 0444);
MODULE_PARM_DESC(buf, "out: the DMA address of the page");

static struct ib_device *klk_dev;
static struct ib_pd *klk_pd;
static struct page *klk_page;
static u64 klk_dma;

/* "Y" while the page holds only KLK_FILL. */
static int klk_intact_get(char *out, const struct kernel_param *kp)
{
	bool ok = !memchr_inv(page_address(klk_page), KLK_FILL, PAGE_SIZE);

	return sysfs_emit(out, "%c\n", ok ? 'Y' : 'N');
}

static const struct kernel_param_ops klk_intact_ops = {
	.get = klk_intact_get,
};
module_param_cb(intact, &klk_intact_ops, NULL, 0444);
MODULE_PARM_DESC(intact, "out: Y while the page holds only its fill byte");

static void klk_free(void)
{
	if (klk_dma)
		ib_dma_unmap_page(klk_dev, klk_dma, PAGE_SIZE,
				  DMA_BIDIRECTIONAL);
	if (klk_page)
		__free_page(klk_page);
	if (klk_pd)
		ib_dealloc_pd(klk_pd);
	if (klk_dev)
		ib_device_put(klk_dev);
}

static int __init klk_init(void)
{
	klk_dev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!klk_dev) {
		pr_err("no RDMA device %s\n", dev);
		return -ENODEV;
	}
	klk_pd = ib_alloc_pd(klk_dev, 0);
	if (IS_ERR(klk_pd)) {
		int ret = PTR_ERR(klk_pd);

		klk_pd = NULL;
		klk_free();
		return ret;
	}
	klk_page = alloc_page(GFP_KERNEL);
	if (klk_page) {
		memset(page_address(klk_page), KLK_FILL, PAGE_SIZE);
		klk_dma = ib_dma_map_page(klk_dev, klk_page, 0, PAGE_SIZE,
					  DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(klk_dev, klk_dma))
			klk_dma = 0;
	}
	if (!klk_dma) {
		klk_free();
		return -ENOMEM;
	}
	lkey = klk_pd->local_dma_lkey;
	buf = klk_dma;
	return 0;
}

static void __exit klk_exit(void)
{
	klk_free();
}

module_init(klk_init);
module_exit(klk_exit);
MODULE_DESCRIPTION("kiwi: a kernel PD whose local_dma_lkey user tests aim at");
MODULE_LICENSE("GPL");
