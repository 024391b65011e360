/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rpcproxy - a TCP proxy on 127.0.0.1 that delays each direction and
 * counts the ONC RPC calls that go through it, for the NFS tests and
 * benchmarks (a network with latency where there is no netem).
 *
 *   rpcproxy [-d MS] [-o COUNTS] [-r READY] LISTEN:TARGET...
 *
 * Each LISTEN:TARGET pair is a port on 127.0.0.1 to listen on and the
 * port on 127.0.0.1 to forward to (the NFS port, the MOUNT port, ...).
 * Every byte is held back -d MS milliseconds (fractions allowed) in each
 * direction, so a round trip gains 2 x MS.  COUNTS gets one line per RPC
 * program, version and procedure seen from the clients:
 *   PROG PROC CALLS BYTES        (e.g. "nfs3 WRITE 12 1572960")
 * where BYTES sums the calls' records; it is written (whole, by rename)
 * on SIGUSR1 and at exit (SIGTERM, SIGINT).  READY is created once every
 * port listens.
 *
 * Invariants:
 *  1. Each direction of a connection is a FIFO of chunks stamped with
 *     their release time (arrival + delay): bytes leave in the order they
 *     came, none before its time, and many chunks are in flight at once,
 *     so the delay does not limit the bandwidth (a timer queue, not a
 *     sleep per packet).
 *  2. A direction holding more than HOLD_MAX bytes stops reading its
 *     source until it drains (TCP's flow control does the rest).
 *  3. An end of stream is forwarded (shutdown) at its release time; an
 *     error or a reset closes both sides of the connection.
 *  4. Calls are counted from the client's stream by its record marking
 *     (RFC 5531: a 4-byte fragment header, the last-fragment bit) and the
 *     first 24 bytes of each record: xid, CALL, RPC version 2, program,
 *     version, procedure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_LISTEN 8
#define MAX_CONN 256
#define HOLD_MAX (64u << 20)
#define CHUNK 65536

struct chunk {
	double when;		/* release time; an empty chunk is an EOF */
	size_t len, off;
	struct chunk *next;
	char data[];
};

struct dir {
	int from, to;		/* indexes into the fds of struct conn */
	struct chunk *head, *tail;
	size_t held;
	bool eof_in, eof_out;
	/* the client's direction: the record parser (invariant 4) */
	bool parse;
	unsigned char fh[4];
	unsigned fh_have;
	uint32_t frag_left;
	bool last_frag, in_record;
	unsigned char call[24];
	unsigned call_have;
	uint64_t rec_bytes;
};

struct conn {
	bool used;
	int fd[2];		/* 0 client, 1 server */
	struct dir d[2];	/* 0 client to server, 1 server to client */
};

struct count {
	uint32_t prog, vers, proc;
	uint64_t calls, bytes;
};

static struct conn conns[MAX_CONN];
static struct count counts[512];
static int ncounts;
static double delay_s;
static const char *counts_path;
static volatile sig_atomic_t want_dump, want_exit;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
die(const char *what)
{
	fprintf(stderr, "rpcproxy: %s: %s\n", what, strerror(errno));
	exit(1);
}

static const char *nfs3_procs[] = {
	"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ",
	"WRITE", "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR",
	"RENAME", "LINK", "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO",
	"PATHCONF", "COMMIT",
};
static const char *mount3_procs[] = {
	"NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT",
};

static void
dump_counts(void)
{
	char tmp[4096];
	FILE *f;
	int i;

	if (counts_path == NULL)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", counts_path);
	f = fopen(tmp, "w");
	if (f == NULL)
		return;
	for (i = 0; i < ncounts; i++) {
		struct count *c = &counts[i];
		char prog[32], proc[32];

		if (c->prog == 100003 && c->vers == 3 && c->proc < 22) {
			snprintf(prog, sizeof(prog), "nfs3");
			snprintf(proc, sizeof(proc), "%s", nfs3_procs[c->proc]);
		} else if (c->prog == 100005 && c->vers == 3 && c->proc < 6) {
			snprintf(prog, sizeof(prog), "mount3");
			snprintf(proc, sizeof(proc), "%s", mount3_procs[c->proc]);
		} else {
			snprintf(prog, sizeof(prog), "%u.%u", c->prog, c->vers);
			snprintf(proc, sizeof(proc), "%u", c->proc);
		}
		fprintf(f, "%s %s %llu %llu\n", prog, proc,
			(unsigned long long)c->calls, (unsigned long long)c->bytes);
	}
	if (fclose(f) == 0)
		rename(tmp, counts_path);
}

static void
count_call(const unsigned char *h, uint64_t bytes)
{
	uint32_t w[6];
	int i;

	memcpy(w, h, sizeof(w));
	for (i = 0; i < 6; i++)
		w[i] = ntohl(w[i]);
	if (w[1] != 0 || w[2] != 2)
		return; /* not a call */
	for (i = 0; i < ncounts; i++)
		if (counts[i].prog == w[3] && counts[i].vers == w[4] &&
		    counts[i].proc == w[5])
			break;
	if (i == ncounts) {
		if (ncounts == (int)(sizeof(counts) / sizeof(counts[0])))
			return;
		counts[ncounts++] = (struct count){ w[3], w[4], w[5], 0, 0 };
	}
	counts[i].calls++;
	counts[i].bytes += bytes;
}

/* Invariant 4: feed the client's bytes to the record parser. */
static void
parse(struct dir *d, const unsigned char *p, size_t n)
{
	while (n > 0) {
		if (d->frag_left == 0) {
			size_t k = 4 - d->fh_have;
			if (k > n)
				k = n;
			memcpy(d->fh + d->fh_have, p, k);
			d->fh_have += (unsigned)k;
			p += k;
			n -= k;
			if (d->fh_have < 4)
				return;
			d->fh_have = 0;
			uint32_t v = ((uint32_t)d->fh[0] << 24) | ((uint32_t)d->fh[1] << 16) |
				     ((uint32_t)d->fh[2] << 8) | d->fh[3];
			d->last_frag = (v & 0x80000000u) != 0;
			d->frag_left = v & 0x7fffffffu;
			if (!d->in_record) {
				d->in_record = true;
				d->call_have = 0;
				d->rec_bytes = 0;
			}
			d->rec_bytes += 4;
			if (d->frag_left == 0 && d->last_frag)
				d->in_record = false;
			continue;
		}
		size_t k = d->frag_left < n ? d->frag_left : n;
		if (d->call_have < 24) {
			size_t c = 24 - d->call_have < k ? 24 - d->call_have : k;
			memcpy(d->call + d->call_have, p, c);
			d->call_have += (unsigned)c;
		}
		d->rec_bytes += k;
		d->frag_left -= (uint32_t)k;
		p += k;
		n -= k;
		if (d->frag_left == 0 && d->last_frag) {
			if (d->call_have == 24)
				count_call(d->call, d->rec_bytes);
			d->in_record = false;
		}
	}
}

static void
conn_close(struct conn *c)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct chunk *k, *next;

		for (k = c->d[i].head; k != NULL; k = next) {
			next = k->next;
			free(k);
		}
		close(c->fd[i]);
	}
	memset(c, 0, sizeof(*c));
}

static void
push(struct dir *d, const char *data, size_t len, double when)
{
	struct chunk *k = malloc(sizeof(*k) + len);

	if (k == NULL) {
		perror("rpcproxy: malloc");
		exit(1);
	}
	k->when = when;
	k->len = len;
	k->off = 0;
	k->next = NULL;
	if (len > 0)
		memcpy(k->data, data, len);
	if (d->tail != NULL)
		d->tail->next = k;
	else
		d->head = k;
	d->tail = k;
	d->held += len;
}

/* Read what the source of d has; false if the connection is to close. */
static bool
dir_read(struct conn *c, struct dir *d)
{
	static char buf[CHUNK];
	ssize_t n = read(c->fd[d->from], buf, sizeof(buf));

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0) {
		d->eof_in = true;
		push(d, NULL, 0, now() + delay_s);
		return true;
	}
	if (d->parse)
		parse(d, (unsigned char *)buf, (size_t)n);
	push(d, buf, (size_t)n, now() + delay_s);
	return true;
}

/* Write what is due; false if the connection is to close. */
static bool
dir_write(struct conn *c, struct dir *d, double t)
{
	struct chunk *k;

	while ((k = d->head) != NULL && k->when <= t) {
		if (k->len == 0) {
			shutdown(c->fd[d->to], SHUT_WR);
			d->eof_out = true;
		} else {
			ssize_t n = write(c->fd[d->to], k->data + k->off, k->len - k->off);
			if (n < 0)
				return errno == EAGAIN || errno == EINTR;
			k->off += (size_t)n;
			d->held -= (size_t)n;
			if (k->off < k->len)
				return true;
		}
		d->head = k->next;
		if (d->head == NULL)
			d->tail = NULL;
		free(k);
	}
	return true;
}

static int
listen_on(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;

	if (fd < 0)
		die("socket");
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("bind");
	if (listen(fd, 64) < 0)
		die("listen");
	return fd;
}

static void
accept_one(int lfd, int target)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)target) };
	int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), sfd, i, one = 1;

	if (cfd < 0)
		return;
	for (i = 0; i < MAX_CONN && conns[i].used; i++)
		;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (i == MAX_CONN || sfd < 0 || connect(sfd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		/* the server is not there: the client sees its connection close */
		if (sfd >= 0)
			close(sfd);
		close(cfd);
		return;
	}
	fcntl(sfd, F_SETFL, fcntl(sfd, F_GETFL) | O_NONBLOCK);
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(&conns[i], 0, sizeof(conns[i]));
	conns[i].used = true;
	conns[i].fd[0] = cfd;
	conns[i].fd[1] = sfd;
	conns[i].d[0].from = 0;
	conns[i].d[0].to = 1;
	conns[i].d[0].parse = true;
	conns[i].d[1].from = 1;
	conns[i].d[1].to = 0;
}

static void
on_signal(int sig)
{
	if (sig == SIGUSR1)
		want_dump = 1;
	else
		want_exit = 1;
}

int
main(int argc, char **argv)
{
	int lfd[MAX_LISTEN], target[MAX_LISTEN], nl = 0, opt, i;
	const char *ready = NULL;
	struct sigaction sa;
	sigset_t block, old;

	while ((opt = getopt(argc, argv, "d:o:r:")) != -1) {
		switch (opt) {
		case 'd':
			delay_s = atof(optarg) / 1000.0;
			break;
		case 'o':
			counts_path = optarg;
			break;
		case 'r':
			ready = optarg;
			break;
		default:
			fprintf(stderr, "usage: rpcproxy [-d MS] [-o COUNTS] [-r READY] LISTEN:TARGET...\n");
			return 2;
		}
	}
	if (optind >= argc || delay_s < 0) {
		fprintf(stderr, "usage: rpcproxy [-d MS] [-o COUNTS] [-r READY] LISTEN:TARGET...\n");
		return 2;
	}
	for (i = optind; i < argc && nl < MAX_LISTEN; i++) {
		int l, t;

		if (sscanf(argv[i], "%d:%d", &l, &t) != 2 || l <= 0 || l > 65535 ||
		    t <= 0 || t > 65535) {
			fprintf(stderr, "rpcproxy: bad port pair '%s' (LISTEN:TARGET)\n", argv[i]);
			return 2;
		}
		lfd[nl] = listen_on(l);
		target[nl++] = t;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	if (ready != NULL) {
		FILE *f = fopen(ready, "w");
		if (f == NULL)
			die(ready);
		fclose(f);
	}

	for (;;) {
		struct pollfd fds[MAX_LISTEN + 2 * MAX_CONN];
		int map[MAX_LISTEN + 2 * MAX_CONN], n = 0, c;
		double t = now(), next = -1;
		struct timespec ts, *tsp = NULL;

		if (want_dump) {
			want_dump = 0;
			dump_counts();
		}
		if (want_exit)
			break;
		for (i = 0; i < nl; i++) {
			fds[n] = (struct pollfd){ lfd[i], POLLIN, 0 };
			map[n++] = -1 - i;
		}
		for (c = 0; c < MAX_CONN; c++) {
			struct conn *k = &conns[c];
			int s;

			if (!k->used)
				continue;
			for (s = 0; s < 2; s++) {
				struct dir *in = &k->d[s];     /* read from fd[s] */
				struct dir *out = &k->d[1 - s]; /* written to fd[s] */
				short ev = 0;

				if (!in->eof_in && in->held < HOLD_MAX)
					ev |= POLLIN;
				if (out->head != NULL && out->head->when <= t)
					ev |= POLLOUT;
				if (out->head != NULL && out->head->when > t &&
				    (next < 0 || out->head->when < next))
					next = out->head->when;
				fds[n] = (struct pollfd){ k->fd[s], ev, 0 };
				map[n++] = c * 2 + s;
			}
		}
		if (next >= 0) {
			double w = next - t;
			ts.tv_sec = (time_t)w;
			ts.tv_nsec = (long)((w - (double)ts.tv_sec) * 1e9);
			tsp = &ts;
		}
		if (ppoll(fds, (nfds_t)n, tsp, &old) < 0) {
			if (errno == EINTR)
				continue;
			die("ppoll");
		}
		t = now();
		for (i = 0; i < n; i++) {
			struct conn *k;
			int s;

			if (map[i] < 0) {
				if (fds[i].revents & POLLIN)
					accept_one(fds[i].fd, target[-1 - map[i]]);
				continue;
			}
			k = &conns[map[i] / 2];
			s = map[i] % 2;
			if (!k->used)
				continue;
			if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    !k->d[s].eof_in && !dir_read(k, &k->d[s])) {
				conn_close(k);
				continue;
			}
		}
		for (c = 0; c < MAX_CONN; c++) {
			struct conn *k = &conns[c];

			if (!k->used)
				continue;
			if (!dir_write(k, &k->d[0], t) || !dir_write(k, &k->d[1], t) ||
			    (k->d[0].eof_out && k->d[1].eof_out))
				conn_close(k);
		}
	}
	dump_counts();
	return 0;
}
