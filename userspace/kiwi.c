// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libkiwi: the rdma-core provider for kiwi software iWARP devices.
 *
 * libibverbs binds a device to this provider by the driver id the kernel
 * reports (KIWI_DRIVER_ID), and only when the device's uverbs ABI version is
 * the one this provider was built for; the kernel checks that version once
 * more when a context is opened.
 */
#define _GNU_SOURCE		/* dladdr() */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libkiwi.h"

/* Tests build a provider that claims another version to prove refusal. */
#ifndef KIWI_PROVIDER_ABI
#define KIWI_PROVIDER_ABI KIWI_ABI_VERSION
#endif

struct kiwi_device {
	struct verbs_device vdev;
};

struct kiwi_context {
	struct verbs_context vctx;
};

struct kiwi_get_context_cmd {
	struct ibv_get_context ibv_cmd;
	struct kiwi_alloc_ucontext_req req;
};

struct kiwi_get_context_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct kiwi_alloc_ucontext_resp resp;
};

static int kiwi_query_device_ex(struct ibv_context *ctx,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr,
				size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	/* The kernel encodes its version as major << 32 | minor << 16 | patch. */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32),
		 (unsigned int)((fw >> 16) & 0xffff),
		 (unsigned int)(fw & 0xffff));
	return 0;
}

static int kiwi_query_port(struct ibv_context *ctx, uint8_t port,
			   struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	memset(&cmd, 0, sizeof(cmd));
	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *kiwi_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	memset(&cmd, 0, sizeof(cmd));
	ret = ibv_cmd_alloc_pd(ctx, pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return pd;
}

static int kiwi_dealloc_pd(struct ibv_pd *pd)
{
	int ret = ibv_cmd_dealloc_pd(pd);

	if (!ret)
		free(pd);
	return ret;
}

static void kiwi_free_context(struct ibv_context *ibctx)
{
	struct kiwi_context *ctx =
		container_of(ibctx, struct kiwi_context, vctx.context);

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static const struct verbs_context_ops kiwi_context_ops = {
	.alloc_mw = kiwi_alloc_mw,
	.alloc_pd = kiwi_alloc_pd,
	.bind_mw = kiwi_bind_mw,
	.create_cq = kiwi_create_cq,
	.create_cq_ex = kiwi_create_cq_ex,
	.create_qp = kiwi_create_qp,
	.create_qp_ex = kiwi_create_qp_ex,
	.create_srq = kiwi_create_srq,
	.dealloc_mw = kiwi_dealloc_mw,
	.dealloc_pd = kiwi_dealloc_pd,
	.dereg_mr = kiwi_dereg_mr,
	.destroy_cq = kiwi_destroy_cq,
	.destroy_qp = kiwi_destroy_qp,
	.destroy_srq = kiwi_destroy_srq,
	.free_context = kiwi_free_context,
	.modify_qp = kiwi_modify_qp,
	.modify_srq = kiwi_modify_srq,
	.poll_cq = kiwi_poll_cq,
	.post_recv = kiwi_post_recv,
	.post_send = kiwi_post_send,
	.post_srq_recv = kiwi_post_srq_recv,
	.query_device_ex = kiwi_query_device_ex,
	.query_port = kiwi_query_port,
	.query_qp = kiwi_query_qp,
	.query_srq = kiwi_query_srq,
	.reg_mr = kiwi_reg_mr,
	.req_notify_cq = kiwi_req_notify_cq,
	.rereg_mr = kiwi_rereg_mr,
	.resize_cq = kiwi_resize_cq,
};

static struct verbs_context *kiwi_alloc_context(struct ibv_device *ibdev,
						int cmd_fd, void *private_data)
{
	struct kiwi_get_context_cmd cmd;
	struct kiwi_get_context_resp resp;
	struct kiwi_context *ctx;
	int ret;

	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
					    &((struct kiwi_context *)NULL)->vctx,
					    KIWI_DRIVER_ID);
	if (!ctx)
		return NULL;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	cmd.req.abi_version = KIWI_PROVIDER_ABI;
	ret = kiwi_cmd_get_context(&ctx->vctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (ret) {
		if (ret == EPROTONOSUPPORT)
			fprintf(stderr,
				"libkiwi: %s: the kiwi module refused ABI version %u\n",
				ibdev->name, KIWI_PROVIDER_ABI);
		goto err;
	}
	if (resp.resp.abi_version != KIWI_PROVIDER_ABI) {
		fprintf(stderr,
			"libkiwi: %s: kernel speaks ABI version %u, libkiwi %u\n",
			ibdev->name, resp.resp.abi_version, KIWI_PROVIDER_ABI);
		ret = EPROTONOSUPPORT;
		goto err;
	}

	verbs_set_ops(&ctx->vctx, &kiwi_context_ops);
	return &ctx->vctx;

err:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = ret;
	return NULL;
}

static struct verbs_device *kiwi_alloc_device(struct verbs_sysfs_dev *sysfs)
{
	struct kiwi_device *dev = calloc(1, sizeof(*dev));

	return dev ? &dev->vdev : NULL;
}

static void kiwi_uninit_device(struct verbs_device *vdev)
{
	free(container_of(vdev, struct kiwi_device, vdev));
}

static const struct verbs_match_ent kiwi_match_table[] = {
	{ .u.driver_id = KIWI_DRIVER_ID, .kind = VERBS_MATCH_DRIVER_ID },
	{ .kind = VERBS_MATCH_SENTINEL },
};

static const struct verbs_device_ops kiwi_device_ops = {
	.name = "kiwi",
	.match_min_abi_version = KIWI_PROVIDER_ABI,
	.match_max_abi_version = KIWI_PROVIDER_ABI,
	.match_table = kiwi_match_table,
	.alloc_device = kiwi_alloc_device,
	.uninit_device = kiwi_uninit_device,
	.alloc_context = kiwi_alloc_context,
};

/*
 * The rdma-core releases with the layout of the ABI libkiwi was built for:
 * from KIWI_VERBS_FROM up to, not including, KIWI_VERBS_UNTIL (pabi.mk
 * sets both), and the release built against. A test build claims another
 * release and its layout, to prove refusal.
 */
#ifndef KIWI_BUILT_FOR
#define KIWI_BUILT_FOR KIWI_RDMA_CORE
#endif

/*
 * kiwi_loaded_rdma_core() - the release of the libibverbs that loaded
 * libkiwi, read off its file name (libibverbs.so.1.<minor>.<release>...,
 * behind the libibverbs.so.1 link); 0 when the name does not say.
 */
static unsigned int kiwi_loaded_rdma_core(void)
{
	char path[PATH_MAX];
	unsigned int so, minor, release;
	const char *base;
	Dl_info info;

	if (!dladdr((void *)ibv_get_device_list, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, path))
		return 0;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (sscanf(base, "libibverbs.so.%u.%u.%u", &so, &minor, &release) != 3)
		return 0;
	return release;
}

/*
 * libibverbs loads libkiwi-rdmav<ABI>.so by the ABI's name alone, but some
 * releases changed the layout under one name (verbs_pabi.h): a libkiwi
 * built against another layout than the loader's would read the wrong
 * operations, so it does not register, and says why.
 */
static void __attribute__((constructor)) kiwi_register_provider(void)
{
	unsigned int loaded = kiwi_loaded_rdma_core();

	if (loaded && (loaded < KIWI_VERBS_FROM || loaded >= KIWI_VERBS_UNTIL)) {
		fprintf(stderr,
			"libkiwi: built for rdma-core %u, loaded by rdma-core %u, whose provider ABI differs: rebuild libkiwi against it (make provider); no kiwi device is usable\n",
			KIWI_BUILT_FOR, loaded);
		return;
	}
	verbs_register_driver(&kiwi_device_ops);
}
