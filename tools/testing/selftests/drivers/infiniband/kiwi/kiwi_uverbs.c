// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_uverbs: a small user-space verbs probe for the kiwi selftests.
 *
 *   kiwi_uverbs query DEV            print device and port attributes
 *   kiwi_uverbs pd DEV COUNT         allocate COUNT PDs, free them
 *   kiwi_uverbs events DEV SECS EV.. print async events until EV.. were seen
 *   kiwi_uverbs hold DEV SECS        open DEV with a PD and wait for
 *                                    IBV_EVENT_DEVICE_FATAL
 *   kiwi_uverbs getctx DEV ABI RSVD DRVLEN
 *                                    raw GET_CONTEXT with a kiwi request of
 *                                    DRVLEN bytes; prints OK or the errno name
 *   kiwi_uverbs srq DEV MAXWR NUM RSVD OFF DRVLEN
 *                                    raw CREATE_SRQ of MAXWR WRs with a kiwi
 *                                    request of DRVLEN bytes for a ring of
 *                                    NUM entries OFF bytes into a page;
 *                                    prints OK num_rqe=N or the errno name
 *
 * Exit status 0 on success; failures print why. Scripts parse these
 * lines (lib.sh's query_field): a probe, not a TAP test.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/kiwi-abi.h>

#include "kiwi_peer.h"
#include "kiwi_test.h"

static int cmd_query(const char *name)
{
	struct ibv_context *ctx = open_dev(name);
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int i;

	if (!ctx)
		return 1;
	if (ibv_query_device(ctx, &da) || ibv_query_port(ctx, 1, &pa) ||
	    ibv_query_gid(ctx, 1, 0, &gid)) {
		perror("query");
		return 1;
	}
	printf("transport=%s\n", ctx->device->transport_type ==
	       IBV_TRANSPORT_IWARP ? "iWARP" : "other");
	printf("node_type=%s\n", ibv_node_type_str(ctx->device->node_type));
	printf("fw_ver=%s\n", da.fw_ver);
	printf("phys_port_cnt=%d\n", da.phys_port_cnt);
	printf("max_pd=%d\nmax_qp=%d\nmax_cq=%d\nmax_mr=%d\n", da.max_pd,
	       da.max_qp, da.max_cq, da.max_mr);
	printf("vendor_id=%#x\n", da.vendor_id);
	printf("atomic_cap=%d\n", da.atomic_cap);
	printf("device_cap_flags=%#x\n", da.device_cap_flags);
	printf("port_cap_flags=%#x\n", pa.port_cap_flags);
	printf("port_state=%s\n", ibv_port_state_str(pa.state));
	printf("active_mtu=%d\n", 128 << pa.active_mtu);
	printf("link_layer=%s\n", pa.link_layer == IBV_LINK_LAYER_ETHERNET ?
	       "Ethernet" : "other");
	printf("gid=");
	for (i = 0; i < 16; i++)
		printf("%02x", gid.raw[i]);
	printf("\n");
	return ibv_close_device(ctx) ? 1 : 0;
}

static int cmd_pd(const char *name, int count)
{
	struct ibv_context *ctx = open_dev(name);
	struct ibv_pd **pds;
	int i, ret = 0;

	if (!ctx)
		return 1;
	pds = calloc(count, sizeof(*pds));
	for (i = 0; i < count; i++) {
		pds[i] = ibv_alloc_pd(ctx);
		if (!pds[i]) {
			fprintf(stderr, "ibv_alloc_pd #%d: %s\n", i, strerror(errno));
			ret = 1;
			break;
		}
	}
	while (--i >= 0) {
		if (ibv_dealloc_pd(pds[i])) {
			fprintf(stderr, "ibv_dealloc_pd #%d failed\n", i);
			ret = 1;
		}
	}
	free(pds);
	if (ibv_close_device(ctx))
		ret = 1;
	return ret;
}

/* Wait up to @secs for the next async event; returns its type or -1. */
static int next_event(struct ibv_context *ctx, int secs)
{
	struct ibv_async_event ev;

	if (!kp_async(ctx, &ev, secs * 1000))
		return -1;
	printf("event %s port %d\n", ibv_event_type_str(ev.event_type),
	       ev.element.port_num);
	fflush(stdout);
	return ev.event_type;
}

static int event_by_name(const char *s)
{
	if (!strcmp(s, "PORT_ACTIVE"))
		return IBV_EVENT_PORT_ACTIVE;
	if (!strcmp(s, "PORT_ERR"))
		return IBV_EVENT_PORT_ERR;
	if (!strcmp(s, "GID_CHANGE"))
		return IBV_EVENT_GID_CHANGE;
	if (!strcmp(s, "DEVICE_FATAL"))
		return IBV_EVENT_DEVICE_FATAL;
	fprintf(stderr, "unknown event name %s\n", s);
	exit(2);
}

static int cmd_events(const char *name, int secs, int n, char **want)
{
	struct ibv_context *ctx = open_dev(name);
	int i, type;

	if (!ctx)
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (i = 0; i < n; i++) {
		type = next_event(ctx, secs);
		if (type < 0) {
			fprintf(stderr, "timed out waiting for %s\n", want[i]);
			return 1;
		}
		if (type != event_by_name(want[i])) {
			fprintf(stderr, "expected %s\n", want[i]);
			return 1;
		}
	}
	return ibv_close_device(ctx) ? 1 : 0;
}

static int cmd_hold(const char *name, int secs)
{
	struct ibv_context *ctx = open_dev(name);
	struct ibv_pd *pd;
	int type;

	if (!ctx)
		return 1;
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		perror("ibv_alloc_pd");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	do {
		type = next_event(ctx, secs);
	} while (type >= 0 && type != IBV_EVENT_DEVICE_FATAL);
	if (type != IBV_EVENT_DEVICE_FATAL) {
		fprintf(stderr, "no DEVICE_FATAL within %ds\n", secs);
		return 1;
	}
	/* The device is gone: releasing what we hold must still work. */
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

static int uverbs_path(const char *name, char *path, size_t len)
{
	char file[256], ibdev[64];
	FILE *f;
	int i;

	for (i = 0; i < 64; i++) {
		snprintf(file, sizeof(file),
			 "/sys/class/infiniband_verbs/uverbs%d/ibdev", i);
		f = fopen(file, "r");
		if (!f)
			continue;
		if (fscanf(f, "%63s", ibdev) == 1 && !strcmp(ibdev, name)) {
			fclose(f);
			snprintf(path, len, "/dev/infiniband/uverbs%d", i);
			return 0;
		}
		fclose(f);
	}
	return -1;
}

static int cmd_getctx(const char *name, unsigned int abi, unsigned int rsvd,
		      unsigned int drvlen)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_get_context core;
		struct kiwi_alloc_ucontext_req req;
	} cmd;
	struct {
		struct ib_uverbs_get_context_resp core;
		struct kiwi_alloc_ucontext_resp drv;
	} resp;
	size_t len = sizeof(cmd.hdr) + sizeof(cmd.core) + drvlen;
	char path[64];
	int fd;

	if (drvlen > sizeof(cmd.req) || uverbs_path(name, path, sizeof(path))) {
		fprintf(stderr, "bad arguments or no uverbs device for %s\n", name);
		return 2;
	}
	fd = open(path, O_RDWR);
	if (fd < 0) {
		perror(path);
		return 2;
	}
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	cmd.hdr.command = IB_USER_VERBS_CMD_GET_CONTEXT;
	cmd.hdr.in_words = len / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.core.response = (uintptr_t)&resp;
	cmd.req.abi_version = abi;
	cmd.req.reserved = rsvd;
	if (write(fd, &cmd, len) != (ssize_t)len) {
		printf("%s\n", errno == EPROTONOSUPPORT ? "EPROTONOSUPPORT" :
		       errno == EINVAL ? "EINVAL" : strerror(errno));
		close(fd);
		return 0;
	}
	printf("OK abi_version=%u\n", resp.drv.abi_version);
	close(fd);
	return 0;
}

/* One raw uverbs write command; 0 or errno. */
static int uverbs_write(int fd, void *cmd, size_t len, size_t out_len)
{
	struct ib_uverbs_cmd_hdr *hdr = cmd;

	hdr->in_words = len / 4;
	hdr->out_words = out_len / 4;
	return write(fd, cmd, len) == (ssize_t)len ? 0 : errno;
}

static int cmd_srq(const char *name, unsigned int max_wr, unsigned int num,
		   unsigned int rsvd, unsigned int off, unsigned int drvlen)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_get_context core;
		struct kiwi_alloc_ucontext_req req;
	} ctx = { .hdr.command = IB_USER_VERBS_CMD_GET_CONTEXT,
		  .req.abi_version = KIWI_ABI_VERSION };
	struct {
		struct ib_uverbs_get_context_resp core;
		struct kiwi_alloc_ucontext_resp drv;
	} ctx_resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_alloc_pd core;
	} pd = { .hdr.command = IB_USER_VERBS_CMD_ALLOC_PD };
	struct ib_uverbs_alloc_pd_resp pd_resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_srq core;
		struct kiwi_create_srq_req req;
	} srq = { .hdr.command = IB_USER_VERBS_CMD_CREATE_SRQ };
	struct {
		struct ib_uverbs_create_srq_resp core;
		struct kiwi_create_srq_resp drv;
	} srq_resp = { .drv.num_rqe = 0 };
	char path[64];
	void *ring;
	int fd, ret;

	if (drvlen > sizeof(srq.req) || uverbs_path(name, path, sizeof(path))) {
		fprintf(stderr, "bad arguments or no uverbs device for %s\n", name);
		return 2;
	}
	fd = open(path, O_RDWR);
	ring = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || ring == MAP_FAILED) {
		perror(path);
		return 2;
	}
	ctx.core.response = (uintptr_t)&ctx_resp;
	pd.core.response = (uintptr_t)&pd_resp;
	if (uverbs_write(fd, &ctx, sizeof(ctx), sizeof(ctx_resp)) ||
	    uverbs_write(fd, &pd, sizeof(pd), sizeof(pd_resp))) {
		perror("GET_CONTEXT/ALLOC_PD");
		return 2;
	}
	srq.core.response = (uintptr_t)&srq_resp;
	srq.core.pd_handle = pd_resp.pd_handle;
	srq.core.max_wr = max_wr;
	srq.core.max_sge = 1;
	srq.req.ring_va = (uintptr_t)ring + off;
	srq.req.num_rqe = num;
	srq.req.reserved = rsvd;
	ret = uverbs_write(fd, &srq, sizeof(srq) - sizeof(srq.req) + drvlen,
			   sizeof(srq_resp));
	if (ret)
		printf("%s\n", ret == EINVAL ? "EINVAL" : strerror(ret));
	else
		printf("OK num_rqe=%u\n", srq_resp.drv.num_rqe);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "query"))
		return cmd_query(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "pd"))
		return cmd_pd(argv[2], atoi(argv[3]));
	if (argc >= 5 && !strcmp(argv[1], "events"))
		return cmd_events(argv[2], atoi(argv[3]), argc - 4, argv + 4);
	if (argc == 4 && !strcmp(argv[1], "hold"))
		return cmd_hold(argv[2], atoi(argv[3]));
	if (argc == 6 && !strcmp(argv[1], "getctx"))
		return cmd_getctx(argv[2], strtoul(argv[3], NULL, 0),
				  strtoul(argv[4], NULL, 0),
				  strtoul(argv[5], NULL, 0));
	if (argc == 8 && !strcmp(argv[1], "srq"))
		return cmd_srq(argv[2], strtoul(argv[3], NULL, 0),
			       strtoul(argv[4], NULL, 0),
			       strtoul(argv[5], NULL, 0),
			       strtoul(argv[6], NULL, 0),
			       strtoul(argv[7], NULL, 0));
	fprintf(stderr, "usage: see the top of kiwi_uverbs.c\n");
	return 2;
}
