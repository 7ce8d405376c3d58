// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kiwi: port counters, shown by "rdma statistic show link DEV/1" and in
 * /sys/class/infiniband/DEV/ports/1/hw_counters/; and the module's counts
 * of connection manager objects and per-CPU completion work, in
 * /sys/kernel/debug/kiwi/.
 */

#include <linux/debugfs.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>

#include "kiwi.h"
#include "kiwi_fault.h"

/*
 * Connection endpoints (struct kiwi_cep, listeners included) and the TCP
 * sockets kiwi holds (listening, connecting, connected or closing), over
 * all devices. An endpoint or a socket may outlive its device for a
 * moment, so they are the module's, not a device's: once every
 * connection has ended both are 0, which is what a leak check reads.
 */
atomic_t kiwi_cm_endpoints = ATOMIC_INIT(0);
atomic_t kiwi_cm_sockets = ATOMIC_INIT(0);

DEFINE_PER_CPU(struct kiwi_cq_cpu_stats, kiwi_cq_cpu_stats);

/*
 * cq_cpus: per possible CPU, the completions made there, the completion
 * handlers run there and how many of those came from another CPU (a
 * kernel CQ's handler runs on its vector's CPU). The counts only grow
 * while the module is loaded: a reader takes differences. A reader may
 * see a count one event behind; nothing depends on that.
 */
static int kiwi_cq_cpus_show(struct seq_file *m, void *unused)
{
	int cpu;

	seq_puts(m, "cpu cqes handlers handlers_remote\n");
	for_each_possible_cpu(cpu) {
		const struct kiwi_cq_cpu_stats *st =
			per_cpu_ptr(&kiwi_cq_cpu_stats, cpu);

		seq_printf(m, "%d %llu %llu %llu\n", cpu, READ_ONCE(st->cqes),
			   READ_ONCE(st->handlers), READ_ONCE(st->remote));
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kiwi_cq_cpus);

/**
 * kiwi_debugfs_init() - make /sys/kernel/debug/kiwi/ and its counters
 *
 * Return: the directory, for the other files kiwi puts there; an error
 * pointer when debugfs is not available, which debugfs takes as a parent
 * and ignores.
 */
struct dentry *kiwi_debugfs_init(void)
{
	struct dentry *dir = debugfs_create_dir("kiwi", NULL);

	debugfs_create_atomic_t("cm_endpoints", 0444, dir, &kiwi_cm_endpoints);
	debugfs_create_atomic_t("cm_sockets", 0444, dir, &kiwi_cm_sockets);
	debugfs_create_file("cq_cpus", 0444, dir, NULL, &kiwi_cq_cpus_fops);
	return dir;
}

static const struct rdma_stat_desc kiwi_stat_descs[] = {
	[KIWI_STAT_ZCOPY_BYTES] = { .name = "tx_zcopy_bytes" },
	[KIWI_STAT_ZCOPY_COPIED] = { .name = "tx_zcopy_copied" },
	[KIWI_STAT_ZCOPY_NOBUFS] = { .name = "tx_zcopy_nobufs" },
	[KIWI_STAT_RX_HELD_BYTES] = { .name = "rx_crc_held_bytes" },
	[KIWI_STAT_RESP_SOFTIRQ] = { .name = "tx_resp_softirq" },
	[KIWI_STAT_RESP_WORKER] = { .name = "tx_resp_worker" },
	[KIWI_STAT_MPA_FRAME_ERR] = { .name = "mpa_frame_err" },
	[KIWI_STAT_MPA_NEGOTIATION_ERR] = { .name = "mpa_negotiation_err" },
	[KIWI_STAT_MPA_REJECT_SENT] = { .name = "mpa_reject_sent" },
	[KIWI_STAT_MPA_REJECT_RCVD] = { .name = "mpa_reject_rcvd" },
	[KIWI_STAT_MPA_TIMEOUT] = { .name = "mpa_timeout" },
	[KIWI_STAT_CM_CONN_ERR] = { .name = "cm_conn_err" },
	[KIWI_STAT_LLP_RESET] = { .name = "llp_reset" },
	[KIWI_STAT_LLP_TIMEOUT] = { .name = "llp_timeout" },
	[KIWI_STAT_LLP_BAD_CLOSE] = { .name = "llp_bad_close" },
	[KIWI_STAT_LLP_DATA_AFTER_FIN] = { .name = "llp_data_after_fin" },
	[KIWI_STAT_RX_CRC_ERR] = { .name = "rx_crc_err" },
	[KIWI_STAT_RX_FPDU_LEN_ERR] = { .name = "rx_fpdu_len_err" },
	[KIWI_STAT_RX_DDP_INV_STAG] = { .name = "rx_ddp_inv_stag" },
	[KIWI_STAT_RX_DDP_BOUNDS_ERR] = { .name = "rx_ddp_bounds_err" },
	[KIWI_STAT_RX_DDP_ACCESS_ERR] = { .name = "rx_ddp_access_err" },
	[KIWI_STAT_RX_DDP_VERSION_ERR] = { .name = "rx_ddp_version_err" },
	[KIWI_STAT_RX_DDP_INV_QN] = { .name = "rx_ddp_inv_qn" },
	[KIWI_STAT_RX_NO_RECV_BUF] = { .name = "rx_no_recv_buf" },
	[KIWI_STAT_RX_DDP_INV_MSN] = { .name = "rx_ddp_inv_msn" },
	[KIWI_STAT_RX_DDP_INV_MO] = { .name = "rx_ddp_inv_mo" },
	[KIWI_STAT_RX_DDP_TOO_LONG] = { .name = "rx_ddp_too_long" },
	[KIWI_STAT_RX_RDMAP_INV_STAG] = { .name = "rx_rdmap_inv_stag" },
	[KIWI_STAT_RX_RDMAP_BOUNDS_ERR] = { .name = "rx_rdmap_bounds_err" },
	[KIWI_STAT_RX_RDMAP_ACCESS_ERR] = { .name = "rx_rdmap_access_err" },
	[KIWI_STAT_RX_INVAL_ERR] = { .name = "rx_inval_err" },
	[KIWI_STAT_RX_RDMAP_VERSION_ERR] = { .name = "rx_rdmap_version_err" },
	[KIWI_STAT_RX_RDMAP_OPCODE_ERR] = { .name = "rx_rdmap_opcode_err" },
	[KIWI_STAT_RX_RDMAP_OP_ERR] = { .name = "rx_rdmap_op_err" },
	[KIWI_STAT_RX_IRD_OVERFLOW] = { .name = "rx_ird_overflow" },
	[KIWI_STAT_RX_RESP_ERR] = { .name = "rx_resp_err" },
	[KIWI_STAT_RX_LOCAL_ERR] = { .name = "rx_local_err" },
	[KIWI_STAT_TERM_SENT] = { .name = "term_sent" },
	[KIWI_STAT_TERM_RCVD] = { .name = "term_rcvd" },
	[KIWI_STAT_CQE_ERR] = { .name = "cqe_err" },
	[KIWI_STAT_CQE_FLUSH_ERR] = { .name = "cqe_flush_err" },
	[KIWI_STAT_CQE_LOC_PROT_ERR] = { .name = "cqe_loc_prot_err" },
	[KIWI_STAT_CQE_LOC_LEN_ERR] = { .name = "cqe_loc_len_err" },
	[KIWI_STAT_CQE_LOC_QP_OP_ERR] = { .name = "cqe_loc_qp_op_err" },
	[KIWI_STAT_CQE_MW_BIND_ERR] = { .name = "cqe_mw_bind_err" },
	[KIWI_STAT_CQE_REM_ERR] = { .name = "cqe_rem_err" },
	[KIWI_STAT_CQ_OVERFLOW] = { .name = "cq_overflow" },
	[KIWI_STAT_QP_FATAL_EVENT] = { .name = "qp_fatal_event" },
	[KIWI_STAT_QP_ACCESS_EVENT] = { .name = "qp_access_event" },
};

static_assert(ARRAY_SIZE(kiwi_stat_descs) == KIWI_NUM_STATS);

struct rdma_hw_stats *kiwi_alloc_hw_port_stats(struct ib_device *ibdev,
					       u32 port)
{
	if (kiwi_fault())
		return NULL;
	return rdma_alloc_hw_stats_struct(kiwi_stat_descs, KIWI_NUM_STATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int kiwi_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		      u32 port, int index)
{
	struct kiwi_device *kdev = to_kdev(ibdev);
	int i;

	for (i = 0; i < KIWI_NUM_STATS; i++)
		stats->value[i] = atomic64_read(&kdev->stats[i]);
	return KIWI_NUM_STATS;
}
