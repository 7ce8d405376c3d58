// SPDX-License-Identifier: GPL-2.0
/*
 * kiwi_cm_test: one side of an rdma_cm connection over kiwi, for cm.sh.
 *
 *   kiwi_cm_test server ADDR PORT accept|reject   listen, answer one request
 *   kiwi_cm_test client ADDR PORT [PDATA_LEN]     connect, report the outcome
 *
 * The server prints "request pdata=<text>" and then "established" or
 * "rejected"; the client prints "established pdata=<text>",
 * "rejected status=<n> pdata=<text>" or "error <event> status=<n>". Both
 * print "state RTS" once connected and "disconnected" at the end.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <rdma/rdma_cma.h>

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

static struct rdma_cm_event *next_event(struct rdma_event_channel *ch,
					enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev)) {
		perror("rdma_get_cm_event");
		exit(1);
	}
	if (ev->event != want && want != (enum rdma_cm_event_type)-1) {
		printf("error %s status=%d\n", rdma_event_str(ev->event),
		       ev->status);
		fflush(stdout);
		exit(3);
	}
	return ev;
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);

	attr.send_cq = cq;
	attr.recv_cq = cq;
	if (!pd || !cq || rdma_create_qp(id, pd, &attr)) {
		perror("create QP");
		exit(1);
	}
}

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

static struct addrinfo *resolve(const char *addr, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;

	if (getaddrinfo(addr, port, &hints, &res)) {
		fprintf(stderr, "cannot resolve %s\n", addr);
		exit(1);
	}
	return res;
}

static int server(struct rdma_event_channel *ch, const char *addr,
		  const char *port, int accept)
{
	static const char reply[] = "hello-from-server";
	static const char no[] = "go-away";
	struct rdma_conn_param param = {};
	struct addrinfo *ai = resolve(addr, port);
	struct rdma_cm_id *lid, *id;
	struct rdma_cm_event *ev;

	if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 4)) {
		perror("listen");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	print_pdata("request", ev->param.conn.private_data,
		    ev->param.conn.private_data_len);
	rdma_ack_cm_event(ev);
	if (!accept) {
		rdma_reject(id, no, sizeof(no) - 1);
		printf("rejected\n");
		return 0;
	}
	make_qp(id);
	param.private_data = reply;
	param.private_data_len = sizeof(reply) - 1;
	param.responder_resources = 4;
	param.initiator_depth = 4;
	if (rdma_accept(id, &param)) {
		perror("rdma_accept");
		return 1;
	}
	rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ESTABLISHED));
	printf("established\n");
	print_state(id);
	sync_post();
	rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_DISCONNECTED));
	printf("disconnected\n");
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_id(lid);
	return 0;
}

static int client(struct rdma_event_channel *ch, const char *addr,
		  const char *port, int pdata_len)
{
	struct rdma_conn_param param = {};
	struct addrinfo *ai = resolve(addr, port);
	char pdata[256];
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int ret;

	memset(pdata, 'x', sizeof(pdata));
	memcpy(pdata, "hello-from-client", 17);
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, ai->ai_addr, 5000)) {
		perror("resolve");
		return 1;
	}
	rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 5000)) {
		perror("rdma_resolve_route");
		return 1;
	}
	rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	make_qp(id);
	param.private_data = pdata;
	param.private_data_len = pdata_len;
	param.responder_resources = 4;
	param.initiator_depth = 4;
	ret = rdma_connect(id, &param);
	if (ret) {
		printf("connect failed errno=%d\n", errno);
		return 0;
	}
	ev = next_event(ch, (enum rdma_cm_event_type)-1);
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
	rdma_disconnect(id);
	rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_DISCONNECTED));
	printf("disconnected\n");
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch) {
		perror("rdma_create_event_channel");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "server"))
		return server(ch, argv[2], argv[3], !strcmp(argv[4], "accept"));
	if (argc >= 4 && !strcmp(argv[1], "client"))
		return client(ch, argv[2], argv[3],
			      argc > 4 ? atoi(argv[4]) : 17);
	fprintf(stderr, "usage: see the top of kiwi_cm_test.c\n");
	return 2;
}
