// SPDX-License-Identifier: GPL-2.0
/*
 * tcp_lat: TCP ping-pong latency with an iteration count, the TCP
 * reference for perftest's ib_*_lat (sockperf 3.7 in Debian 12 can only
 * run for a duration).
 *
 *   tcp_lat -s [-p PORT] [-P]                     server: echo one client
 *   tcp_lat -c HOST [-p PORT] -n ITERS -m SIZE [-P]
 *
 * The client sends SIZE bytes, waits for them to come back, ITERS times,
 * and prints the median and mean one-way latency (half the round trip) in
 * microseconds, as perftest's t_typical and t_avg are. -P busy-polls
 * non-blocking sockets (perftest's default polling mode); without it the
 * sockets block (perftest -e).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZE (1024 * 1024)

static int poll_mode;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Move exactly len bytes; spin on EAGAIN in polling mode. */
static int xfer(int fd, char *buf, size_t len, int tx)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = tx ? send(fd, buf + done, len - done, MSG_NOSIGNAL)
			       : recv(fd, buf + done, len - done, 0);

		if (n > 0) {
			done += n;
			continue;
		}
		if (n == 0)
			return -1;
		if (errno == EINTR || (poll_mode && errno == EAGAIN))
			continue;
		return -1;
	}
	return 0;
}

static void tune(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		die("TCP_NODELAY");
	if (poll_mode && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		die("O_NONBLOCK");
}

static int serve(const char *port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };
	uint32_t hdr[2];
	int one = 1, ls, fd;
	char *buf;

	sa.sin6_port = htons(atoi(port));
	ls = socket(AF_INET6, SOCK_STREAM, 0);
	if (ls < 0)
		die("socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
		die("bind/listen");
	fd = accept(ls, NULL, NULL);
	if (fd < 0)
		die("accept");
	close(ls);
	tune(fd);
	if (xfer(fd, (char *)hdr, sizeof(hdr), 0))
		die("header");
	hdr[0] = ntohl(hdr[0]);
	hdr[1] = ntohl(hdr[1]);
	if (hdr[1] == 0 || hdr[1] > MAX_SIZE) {
		fprintf(stderr, "tcp_lat: bad message size %u\n", hdr[1]);
		return 1;
	}
	buf = malloc(hdr[1]);
	if (!buf)
		die("malloc");
	for (uint32_t i = 0; i < hdr[0]; i++)
		if (xfer(fd, buf, hdr[1], 0) || xfer(fd, buf, hdr[1], 1))
			die("echo");
	close(fd);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int ping(const char *host, const char *port, uint32_t iters, uint32_t size)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	uint32_t hdr[2] = { htonl(iters), htonl(size) };
	double *rtt, sum = 0;
	char *buf;
	int fd;

	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo");
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen))
		die("connect");
	freeaddrinfo(ai);
	tune(fd);
	buf = calloc(1, size);
	rtt = calloc(iters, sizeof(*rtt));
	if (!buf || !rtt)
		die("calloc");
	if (xfer(fd, (char *)hdr, sizeof(hdr), 1))
		die("header");
	for (uint32_t i = 0; i < iters; i++) {
		double t0 = now_us();

		if (xfer(fd, buf, size, 1) || xfer(fd, buf, size, 0))
			die("ping");
		rtt[i] = now_us() - t0;
		sum += rtt[i];
	}
	qsort(rtt, iters, sizeof(*rtt), cmp_double);
	printf("iters=%u size=%u median_us=%.2f avg_us=%.2f\n", iters, size,
	       rtt[iters / 2] / 2, sum / iters / 2);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *host = NULL, *port = "18600";
	uint32_t iters = 1000, size = 8;
	int server = 0, c;

	while ((c = getopt(argc, argv, "sc:p:n:m:P")) != -1) {
		switch (c) {
		case 's':
			server = 1;
			break;
		case 'c':
			host = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'n':
			iters = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'P':
			poll_mode = 1;
			break;
		default:
			goto usage;
		}
	}
	if (server)
		return serve(port);
	if (host && iters > 0 && size > 0 && size <= MAX_SIZE)
		return ping(host, port, iters, size);
usage:
	fprintf(stderr, "usage: tcp_lat -s [-p PORT] [-P]\n"
		"       tcp_lat -c HOST [-p PORT] -n ITERS -m SIZE [-P]\n");
	return 2;
}
