// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_cm: one side of an rdma_cm connection over kiwi, for cm.sh.
 *
 *   kiwi_cm server ADDR PORT accept|reject   listen, answer one request
 *   kiwi_cm client ADDR PORT [PDATA_LEN]     connect, report the outcome
 *
 * The server prints "request pdata=<text>" and then "established" or
 * "rejected"; the client prints "established pdata=<text>",
 * "rejected status=<n> pdata=<text>" or "error <event> status=<n>". Both
 * print "state RTS" once connected and "disconnected" at the end. These
 * lines are observations cm.sh judges, not TAP: a probe, not a test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiwi_conn.h"
#include "kiwi_peer.h"
#include "kiwi_test.h"

/*
 * With KIWI_SYNC=FILE, the server creates FILE once it has reported its
 * QP state, and the client waits for it before disconnecting, so that the
 * server's report never races the disconnect.
 */
static void sync_post(void)
{
	const char *f = getenv("KIWI_SYNC");
	FILE *fp = f ? fopen(f, "w") : NULL;

	if (fp)
		fclose(fp);
}

static void sync_wait(void)
{
	const char *f = getenv("KIWI_SYNC");

	for (int i = 0; f && i < 1000 && access(f, F_OK); i++)
		usleep(10000);
}

static const struct kp_caps caps = {
	.send_wr = 4, .recv_wr = 4, .send_sge = 1, .recv_sge = 1, .cqe = 8,
};

static void print_state(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (!ibv_query_qp(id->qp, &attr, IBV_QP_STATE, &init))
		printf("state %s\n", attr.qp_state == IBV_QPS_RTS ? "RTS" : "other");
	fflush(stdout);
}

static void print_pdata(const char *what, const void *p, int len)
{
	printf("%s pdata=%.*s\n", what, len, len ? (const char *)p : "");
	fflush(stdout);
}

static int server(struct rdma_event_channel *ch, const char *addr,
		  const char *port, int accept)
{
	static const char reply[] = "hello-from-server";
	static const char no[] = "go-away";
	struct rdma_conn_param param = kc_param(4, 4, reply, sizeof(reply) - 1);
	struct rdma_cm_id *lid = kc_listen_or_die(ch, addr, port, 4), *id;
	struct rdma_cm_event *ev;
	struct kp_peer me;

	printf("listening\n");
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	print_pdata("request", ev->param.conn.private_data,
		    ev->param.conn.private_data_len);
	rdma_ack_cm_event(ev);
	if (!accept) {
		rdma_reject(id, no, sizeof(no) - 1);
		printf("rejected\n");
		return 0;
	}
	kp_open_or_die(&me, id, &caps);
	if (rdma_accept(id, &param))
		die("rdma_accept");
	expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED);
	printf("established\n");
	print_state(id);
	sync_post();
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED);
	printf("disconnected\n");
	kp_close(&me);
	rdma_destroy_id(id);
	rdma_destroy_id(lid);
	return 0;
}

static int client(struct rdma_event_channel *ch, const char *addr,
		  const char *port, int pdata_len)
{
	struct rdma_cm_id *id = kc_resolve_or_die(ch, addr, port);
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct kp_peer me;
	char pdata[256];

	memset(pdata, 'x', sizeof(pdata));
	memcpy(pdata, "hello-from-client", 17);
	param = kc_param(4, 4, pdata, pdata_len);
	kp_open_or_die(&me, id, &caps);
	if (rdma_connect(id, &param)) {
		printf("connect failed errno=%d\n", errno);
		return 0;
	}
	/* Whatever comes is the outcome to report. */
	ev = kc_next(ch, -1);
	if (!ev)
		die("rdma_get_cm_event");
	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		printf("rejected status=%d pdata=%.*s\n", ev->status,
		       ev->param.conn.private_data_len,
		       ev->param.conn.private_data_len ?
		       (const char *)ev->param.conn.private_data : "");
		return 0;
	}
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
		printf("error %s status=%d\n", rdma_event_str(ev->event),
		       ev->status);
		return 0;
	}
	print_pdata("established", ev->param.conn.private_data,
		    ev->param.conn.private_data_len);
	rdma_ack_cm_event(ev);
	print_state(id);
	sync_wait();
	if (kc_disconnect(ch, id, -1))
		die("disconnect");
	printf("disconnected\n");
	kp_close(&me);
	rdma_destroy_id(id);
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!ch)
		die("rdma_create_event_channel");
	if (argc == 5 && !strcmp(argv[1], "server"))
		return server(ch, argv[2], argv[3], !strcmp(argv[4], "accept"));
	if (argc >= 4 && !strcmp(argv[1], "client"))
		return client(ch, argv[2], argv[3],
			      argc > 4 ? atoi(argv[4]) : 17);
	fprintf(stderr, "usage: see the top of kiwi_cm.c\n");
	return 2;
}
