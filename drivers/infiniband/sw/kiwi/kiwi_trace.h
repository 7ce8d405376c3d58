/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: tracepoints, in /sys/kernel/tracing/events/kiwi/. They say what
 * happened to a connection where it happened: QP state changes,
 * connection manager events, the MPA negotiation's result, Terminates
 * sent and received, and error completions. The events take kiwi's own
 * types, hence kiwi.h; kiwi_trace.c defines them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kiwi

#if !defined(_KIWI_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KIWI_TRACE_H

#include <linux/socket.h>
#include <linux/tracepoint.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>

#include "kiwi.h"
#include "kiwi_compat.h"

#define kiwi_show_qp_state(s)					\
	__print_symbolic(s, { IB_QPS_RESET, "RESET" },		\
			 { IB_QPS_INIT, "INIT" },		\
			 { IB_QPS_RTR, "RTR" },			\
			 { IB_QPS_RTS, "RTS" },			\
			 { IB_QPS_SQD, "SQD" },			\
			 { IB_QPS_SQE, "SQE" },			\
			 { IB_QPS_ERR, "ERR" })

#define kiwi_show_cm_event(e)						\
	__print_symbolic(e, { IW_CM_EVENT_CONNECT_REQUEST, "CONNECT_REQUEST" }, \
			 { IW_CM_EVENT_CONNECT_REPLY, "CONNECT_REPLY" },	\
			 { IW_CM_EVENT_ESTABLISHED, "ESTABLISHED" },	\
			 { IW_CM_EVENT_DISCONNECT, "DISCONNECT" },	\
			 { IW_CM_EVENT_CLOSE, "CLOSE" })

/* The wire's RFC 6581 ready-to-receive message, as a name. */
#define kiwi_show_rtr(r)						\
	__print_symbolic(r, { KIWI_RTR_NONE, "none" },			\
			 { KIWI_RTR_SEND, "send" },			\
			 { KIWI_RTR_WRITE, "write" },			\
			 { KIWI_RTR_READ, "read" })

TRACE_EVENT(kiwi_qp_state,
	TP_PROTO(const struct ib_qp *qp, enum ib_qp_state old,
		 enum ib_qp_state new),
	TP_ARGS(qp, old, new),
	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->device->dev))
		__field(u32, qpn)
		__field(u8, old)
		__field(u8, new)
	),
	TP_fast_assign(
		kiwi_assign_str(dev, dev_name(&qp->device->dev));
		__entry->qpn = qp->qp_num;
		__entry->old = old;
		__entry->new = new;
	),
	TP_printk("dev=%s qpn=%u %s -> %s", __get_str(dev), __entry->qpn,
		  kiwi_show_qp_state(__entry->old),
		  kiwi_show_qp_state(__entry->new))
);

TRACE_EVENT(kiwi_cm_event,
	TP_PROTO(const struct ib_device *ibdev, const struct iw_cm_event *ev),
	TP_ARGS(ibdev, ev),
	TP_STRUCT__entry(
		__string(dev, dev_name(&ibdev->dev))
		__field(u8, event)
		__field(int, status)
		__field(u8, ird)
		__field(u8, ord)
		__field(u8, pdata_len)
		__array(u8, laddr, sizeof(struct sockaddr_storage))
		__array(u8, raddr, sizeof(struct sockaddr_storage))
	),
	TP_fast_assign(
		kiwi_assign_str(dev, dev_name(&ibdev->dev));
		__entry->event = ev->event;
		__entry->status = ev->status;
		__entry->ird = ev->ird;
		__entry->ord = ev->ord;
		__entry->pdata_len = ev->private_data_len;
		memcpy(__entry->laddr, &ev->local_addr, sizeof(ev->local_addr));
		memcpy(__entry->raddr, &ev->remote_addr, sizeof(ev->remote_addr));
	),
	TP_printk("dev=%s %s status=%d ird=%u ord=%u pdata=%u local=%pISpc remote=%pISpc",
		  __get_str(dev), kiwi_show_cm_event(__entry->event),
		  __entry->status, __entry->ird, __entry->ord,
		  __entry->pdata_len, __entry->laddr, __entry->raddr)
);

TRACE_EVENT(kiwi_mpa,
	TP_PROTO(const struct ib_qp *qp, bool initiator,
		 const struct kiwi_cep *cep),
	TP_ARGS(qp, initiator, cep),
	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->device->dev))
		__field(u32, qpn)
		__field(bool, initiator)
		__field(u8, rev)
		__field(bool, crc)
		__field(bool, large_fpdus)
		__field(u8, rtr)
		__field(u16, ird)
		__field(u16, ord)
	),
	TP_fast_assign(
		kiwi_assign_str(dev, dev_name(&qp->device->dev));
		__entry->qpn = qp->qp_num;
		__entry->initiator = initiator;
		__entry->rev = cep->enhanced ? 2 : 1;
		__entry->crc = cep->crc;
		__entry->large_fpdus = cep->large_fpdus;
		__entry->rtr = cep->rtr;
		__entry->ird = cep->ird;
		__entry->ord = cep->ord;
	),
	TP_printk("dev=%s qpn=%u %s rev=%u crc=%u large_fpdus=%u rtr=%s ird=%u ord=%u",
		  __get_str(dev), __entry->qpn,
		  __entry->initiator ? "initiator" : "responder", __entry->rev,
		  __entry->crc, __entry->large_fpdus,
		  kiwi_show_rtr(__entry->rtr), __entry->ird, __entry->ord)
);

TRACE_EVENT(kiwi_terminate,
	TP_PROTO(const struct ib_qp *qp, bool sent, const struct kiwi_term *t),
	TP_ARGS(qp, sent, t),
	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->device->dev))
		__field(u32, qpn)
		__field(bool, sent)
		__field(u8, layer)
		__field(u8, etype)
		__field(u8, ecode)
		__field(bool, m)
		__field(bool, d)
		__field(bool, r)
	),
	TP_fast_assign(
		kiwi_assign_str(dev, dev_name(&qp->device->dev));
		__entry->qpn = qp->qp_num;
		__entry->sent = sent;
		__entry->layer = KIWI_TC_LAYER(t->code);
		__entry->etype = KIWI_TC_ETYPE(t->code);
		__entry->ecode = KIWI_TC_ECODE(t->code);
		__entry->m = t->m;
		__entry->d = t->d;
		__entry->r = t->r;
	),
	TP_printk("dev=%s qpn=%u %s layer=%u etype=%u ecode=0x%02x m=%u d=%u r=%u",
		  __get_str(dev), __entry->qpn,
		  __entry->sent ? "sent" : "received", __entry->layer,
		  __entry->etype, __entry->ecode, __entry->m, __entry->d,
		  __entry->r)
);

TRACE_EVENT(kiwi_cqe_error,
	TP_PROTO(const struct ib_cq *cq, u64 wr_id, u32 qpn, u8 opcode,
		 u8 status),
	TP_ARGS(cq, wr_id, qpn, opcode, status),
	TP_STRUCT__entry(
		__string(dev, dev_name(&cq->device->dev))
		__field(u64, wr_id)
		__field(u32, qpn)
		__field(u8, opcode)
		__field(u8, status)
	),
	TP_fast_assign(
		kiwi_assign_str(dev, dev_name(&cq->device->dev));
		__entry->wr_id = wr_id;
		__entry->qpn = qpn;
		__entry->opcode = opcode;
		__entry->status = status;
	),
	TP_printk("dev=%s qpn=%u wr_id=0x%llx opcode=%u status=%u",
		  __get_str(dev), __entry->qpn, __entry->wr_id,
		  __entry->opcode, __entry->status)
);

#endif /* _KIWI_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kiwi_trace
#include <trace/define_trace.h>
