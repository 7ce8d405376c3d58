/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: what the transmit engine's files share (kiwi_tx.c, kiwi_tx_frame.c,
 * kiwi_tx_zc.c, kiwi_tx_queues.c, kiwi_tx_run.c, kiwi_engine.c). The rest
 * of the module sees the engines through kiwi.h and kiwi_engine.h.
 */
#ifndef KIWI_TX_H
#define KIWI_TX_H

#include "kiwi.h"

/* One message to frame: where its payload comes from, and its headers. */
struct kiwi_tx_msg {
	u8 opcode;
	bool tagged;
	u32 stag;		/* tagged: sink STag */
	u64 to;			/* tagged: sink offset of the first byte */
	u32 qn;			/* untagged */
	u32 msn;
	u32 inv_stag;
	const u8 *rdmap_hdr;	/* Read Request or Terminate header */
	unsigned int rdmap_len;
	u32 len;		/* payload bytes */
	const u8 *inline_data;	/* payload given inline, or */
	struct kiwi_mem **mem;	/* gathered from these objects */
	const struct kiwi_sge *sge;
	unsigned int num_sge;
	u64 src_addr;		/* single source: mem[0] at src_addr */
	bool single;
	bool retires_irq;	/* a Read Response: see kiwi_tx_irq_retire() */
};

/* The MSS every IPv4 path takes (RFC 1122's 576-byte datagrams). */
#define KIWI_TX_MSS_FLOOR	536

/* The transmit loops' work queue (kiwi_tx_init()). */
extern struct workqueue_struct *kiwi_tx_wq;

/* kiwi_tx.c */
bool kiwi_tx_resp_take(struct kiwi_tx *tx, struct kiwi_irq_entry *resp,
		       bool take);
int kiwi_tx_resp_send(struct kiwi_qp *qp, struct kiwi_irq_entry *resp);
bool kiwi_tx_run(struct kiwi_qp *qp);

/* kiwi_tx_frame.c */
int kiwi_tx_pages(const struct kiwi_tx_msg *m, u32 off, u32 len,
		  struct bio_vec *bv, int cap);
void kiwi_tx_fpdu_hdr(const struct kiwi_tx_msg *m, u8 *hdr, unsigned int hlen,
		      u32 off, u32 seg);
unsigned int kiwi_tx_hlen(const struct kiwi_tx_msg *m);
u32 kiwi_tx_room(struct kiwi_qp *qp, unsigned int hlen);
bool kiwi_tx_direct_ok(struct kiwi_qp *qp, const struct kiwi_tx_msg *m,
		       u32 off);
int kiwi_tx_send_all(struct kiwi_qp *qp, struct msghdr *msg, size_t total);
int kiwi_tx_flush_carry(struct kiwi_qp *qp);
int kiwi_tx_message(struct kiwi_qp *qp, const struct kiwi_tx_msg *m, u32 *sent);

/* kiwi_tx_zc.c */
int kiwi_tx_message_zc(struct kiwi_qp *qp, const struct kiwi_tx_msg *m,
		       u32 *sent);
bool kiwi_tx_zc_ok(struct kiwi_qp *qp, const struct kiwi_tx_msg *m, u32 sent);
void kiwi_tx_zc_open(struct kiwi_qp *qp);

/* kiwi_tx_queues.c */
void kiwi_tx_irq_retire(struct kiwi_tx *tx);
void kiwi_tx_put_cur(struct kiwi_tx *tx);
void kiwi_tx_slot_done(struct kiwi_qp *qp, u8 status);

/* kiwi_tx_run.c */
void kiwi_tx_own(struct kiwi_tx *tx);
void kiwi_tx_disown(struct kiwi_tx *tx);
void kiwi_tx_work(struct work_struct *work);

#endif /* KIWI_TX_H */
