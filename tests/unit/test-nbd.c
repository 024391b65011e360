/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-nbd.c - the NBD client backend (lib/dev/nbd.c) against nbdkit's
 * memory plugin on a Unix socket in a temporary directory: many
 * asynchronous requests in flight on one connection, several iovecs in a
 * request, synchronous calls, two connections, the server's block size
 * constraints, a read-only server, a server that goes away, bad URIs,
 * and trim and zeroing.  Every server started is killed by its pid, also when a test
 * fails.  Skipped when nbdkit is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "testutil.h"

#define NREQ 256
#define RLEN (64 * 1024)

static char dir[] = "/tmp/clio-test-nbd-XXXXXX";
static char sock[128];
static pid_t server = -1;

static void
server_stop(void)
{
	if (server > 0) {
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
		server = -1;
	}
	unlink(sock);
}

/* nbdkit -f -U SOCK ARGS... in the background; waits for the socket. */
static void
server_start(const char *const *args)
{
	const char *argv[24] = { "nbdkit", "-f", "-U", sock };
	int i, n = 4;

	server_stop();
	for (i = 0; args[i] != NULL && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	server = fork();
	assert_true(server >= 0);
	if (server == 0) {
		execvp("nbdkit", (char **)argv);
		_exit(127);
	}
	for (i = 0; i < 500; i++) {
		struct stat st;
		if (stat(sock, &st) == 0)
			return;
		tu_sleep(0.01);
	}
	fail_msg("nbdkit did not make %s", sock);
}

static char *
uri(const char *query)
{
	static char u[256];

	snprintf(u, sizeof(u), "nbd+unix:///?socket=%s%s%s", sock,
		 *query ? "&" : "", query);
	return u;
}

struct async_ctx {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int done, bad;
};

static void
async_done(struct clio_req *req)
{
	struct async_ctx *x = req->priv;

	pthread_mutex_lock(&x->m);
	if (req->result != (req->op == CLIO_OP_FLUSH ? 0 : RLEN))
		x->bad++;
	x->done++;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->m);
}

/* NREQ requests of RLEN at once, each with two iovecs on odd indexes;
 * waits for all. */
static void
submit_all(clio_dev *d, enum clio_op op, unsigned char *buf, struct clio_req *rq,
	   struct iovec *iov)
{
	struct async_ctx x = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
	int i;

	for (i = 0; i < NREQ; i++) {
		int k = NREQ - 1 - i; /* offsets, not order, place them */
		unsigned char *b = buf + (size_t)k * RLEN;

		memset(&rq[k], 0, sizeof(rq[k]));
		iov[2 * k] = (struct iovec){ b, k % 2 ? RLEN / 4 : RLEN };
		iov[2 * k + 1] = (struct iovec){ b + RLEN / 4, 3 * RLEN / 4 };
		rq[k].op = op;
		rq[k].offset = (uint64_t)k * RLEN;
		rq[k].iov = &iov[2 * k];
		rq[k].iovcnt = k % 2 ? 2 : 1;
		rq[k].done = async_done;
		rq[k].priv = &x;
		assert_int_equal(clio_dev_submit(d, &rq[k]), 0);
	}
	pthread_mutex_lock(&x.m);
	while (x.done < NREQ)
		pthread_cond_wait(&x.cv, &x.m);
	pthread_mutex_unlock(&x.m);
	assert_int_equal(x.bad, 0);
}

static void
test_many_in_flight(void **state)
{
	const char *args[] = { "memory", "64M", NULL };
	unsigned char *buf = malloc((size_t)NREQ * RLEN);
	struct clio_req *rq = calloc(NREQ, sizeof(*rq));
	struct iovec *iov = calloc(2 * NREQ, sizeof(*iov));
	struct clio_dev_stats st;
	struct clio_dev_info info;
	clio_dev *d;

	(void)state;
	server_start(args);
	d = tu_dev_open(uri("qd=64"), 0);
	assert_int_equal(clio_dev_info(d, &info), 0);
	assert_true(info.size == 64 * TU_MiB);
	assert_int_equal(info.queue_depth, 64);
	assert_string_equal(info.type, "nbd");

	tu_fill(buf, (size_t)NREQ * RLEN, 0, 7);
	submit_all(d, CLIO_OP_WRITE, buf, rq, iov);
	assert_int_equal(clio_dev_flush(d), 0);
	memset(buf, 0, (size_t)NREQ * RLEN);
	submit_all(d, CLIO_OP_READ, buf, rq, iov);
	assert_int_equal(tu_check(buf, (size_t)NREQ * RLEN, 0, 7), -1);

	clio_dev_stats(d, &st);
	assert_int_equal(st.back.writes, NREQ);
	assert_int_equal(st.back.reads, NREQ);
	assert_int_equal(st.back.flushes, 1);
	assert_int_equal(st.back.errors, 0);
	assert_true(st.back.write_bytes == (uint64_t)NREQ * RLEN);
	assert_int_equal(clio_dev_info(d, &info), 0);
	print_message("  %d writes and reads of 64 KiB, qd 64: %u in flight at most\n",
		      NREQ, info.inflight_peak);
	assert_true(info.inflight_peak > 16 && info.inflight_peak <= 64);

	/* synchronous calls with two iovecs, through io() */
	{
		unsigned char a[4096], b[8192];
		struct iovec v[2] = { { a, sizeof(a) }, { b, sizeof(b) } };

		tu_fill(a, sizeof(a), 60 * TU_MiB, 9);
		tu_fill(b, sizeof(b), 60 * TU_MiB + sizeof(a), 9);
		assert_int_equal(clio_dev_pwritev(d, v, 2, 60 * TU_MiB), 12288);
		memset(a, 0, sizeof(a));
		memset(b, 0, sizeof(b));
		assert_int_equal(clio_dev_preadv(d, v, 2, 60 * TU_MiB), 12288);
		assert_int_equal(tu_check(a, sizeof(a), 60 * TU_MiB, 9), -1);
		assert_int_equal(tu_check(b, sizeof(b), 60 * TU_MiB + sizeof(a), 9), -1);
	}
	/* past the end */
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, 64 * TU_MiB), -ENOSPC);
	assert_int_equal(clio_dev_resize(d, 128 * TU_MiB), -ENOTSUP);
	clio_dev_close(d);

	/* two connections see one export */
	d = tu_dev_open(uri("conns=2&qd=8"), 0);
	assert_int_equal(clio_dev_info(d, &info), 0);
	assert_int_equal(info.queue_depth, 16);
	memset(buf, 0, (size_t)NREQ * RLEN);
	submit_all(d, CLIO_OP_READ, buf, rq, iov);
	assert_int_equal(tu_check(buf, (size_t)NREQ * RLEN, 0, 7), -1);
	{
		char params[2048];
		assert_true(clio_dev_params(d, params, sizeof(params)) > 0);
		assert_non_null(strstr(params, "connections=2\n"));
	}
	clio_dev_close(d);
	server_stop();
	free(buf);
	free(rq);
	free(iov);
}

static void
test_server_limits(void **state)
{
	const char *policy[] = { "--filter=blocksize-policy", "--filter=blocksize",
				 "memory", "1M", "blocksize-minimum=4096",
				 "blocksize-maximum=65536", NULL };
	const char *ro[] = { "-r", "memory", "1M", NULL };
	struct clio_dev_info info;
	char params[2048], buf[4096];
	clio_dev *d;

	(void)state;
	server_start(policy);
	d = tu_dev_open(uri(""), 0);
	assert_int_equal(clio_dev_info(d, &info), 0);
	assert_int_equal(info.sector, 4096);
	assert_int_equal(info.maxio, 65536);
	assert_true(clio_dev_params(d, params, sizeof(params)) > 0);
	assert_non_null(strstr(params, "block_min=4096\n"));
	assert_non_null(strstr(params, "block_max=65536\n"));
	clio_dev_close(d);

	server_start(ro);
	d = tu_dev_open(uri(""), 0);
	assert_int_equal(clio_dev_info(d, &info), 0);
	assert_true(info.readonly);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(clio_dev_pwrite(d, buf, sizeof(buf), 0), -EROFS);
	assert_int_equal(clio_dev_pread(d, buf, sizeof(buf), 0), (int)sizeof(buf));
	clio_dev_close(d);
	server_stop();
}

static void
test_server_gone(void **state)
{
	const char *args[] = { "memory", "1M", NULL };
	char buf[4096], err[512];
	clio_dev *d;
	double t0;

	(void)state;
	server_start(args);
	d = tu_dev_open(uri(""), 0);
	assert_int_equal(clio_dev_pread(d, buf, sizeof(buf), 0), (int)sizeof(buf));
	server_stop();
	t0 = tu_now();
	assert_int_equal(clio_dev_pread(d, buf, sizeof(buf), 0), -ENOTCONN);
	assert_int_equal(clio_dev_pwrite(d, buf, sizeof(buf), 0), -ENOTCONN);
	assert_int_equal(clio_dev_flush(d), -ENOTCONN);
	assert_true(tu_now() - t0 < 5);
	clio_dev_close(d);

	/* no server: one line naming the URI and libnbd's reason */
	assert_true(clio_dev_open_err(uri(""), 0, &d, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, sock));
	assert_null(strchr(err, '\n'));
	assert_true(clio_dev_open_err(uri("qd=0"), 0, &d, err, sizeof(err)) == -EINVAL);
	assert_non_null(strstr(err, "qd '0'"));
	assert_true(clio_dev_open_err(uri("conns=x"), 0, &d, err, sizeof(err)) == -EINVAL);
	assert_non_null(strstr(err, "conns 'x'"));
}

/* How many lines of nbdkit's log filter's file hold word. */
static int
log_count(const char *path, const char *word)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		size_t len = strlen(line);

		/* a request's first line: "... Trim id=2 offset=... ..." */
		if (strstr(line, word) != NULL && len > 4 &&
		    strcmp(line + len - 4, "...\n") == 0)
			n++;
	}
	fclose(f);
	return n;
}

/* Trim and zeroing are the server's commands (they were refused, and
 * the zeroing written as zeros); a zeroing of no whole sectors is
 * written; the bytes read back agree.  Without the server's zero
 * (nozero filter), a zeroing is written. */
static void
test_trim_zero(void **state)
{
	char logpath[160], logarg[180];
	const char *args[] = { "--filter=log", "memory", "4M", logarg, NULL };
	const char *nozero[] = { "--filter=log", "--filter=nozero", "memory", "4M",
				 "zeromode=none", logarg, NULL };
	unsigned char *buf = malloc(4 << 20), *back = malloc(4 << 20);
	clio_dev *d;
	size_t i;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	snprintf(logpath, sizeof(logpath), "%s/log", dir);
	snprintf(logarg, sizeof(logarg), "logfile=%s", logpath);
	for (i = 0; i < (4u << 20); i++)
		buf[i] = (unsigned char)(i * 7 + 1);
	server_start(args);
	d = tu_dev_open(uri(""), 0);
	assert_int_equal(clio_dev_pwrite(d, buf, 4 << 20, 0), 4 << 20);
	assert_int_equal(clio_dev_discard(d, 0, 0), 0);
	assert_int_equal(clio_dev_discard(d, 1 << 20, 1 << 20), 0);
	assert_int_equal(clio_dev_write_zeroes(d, 3 << 20, 512 << 10), 0);
	assert_int_equal(clio_dev_write_zeroes(d, 100, 300), 0);
	memset(buf + (1 << 20), 0, 1 << 20); /* the memory plugin trims to zeros */
	memset(buf + (3 << 20), 0, 512 << 10);
	memset(buf + 100, 0, 300);
	assert_int_equal(clio_dev_pread(d, back, 4 << 20, 0), 4 << 20);
	assert_memory_equal(back, buf, 4 << 20);
	clio_dev_close(d);
	assert_int_equal(log_count(logpath, "Trim"), 1);
	assert_int_equal(log_count(logpath, "Zero"), 1);

	unlink(logpath);
	server_start(nozero);
	d = tu_dev_open(uri(""), 0);
	assert_int_equal(clio_dev_pwrite(d, buf, 4 << 20, 0), 4 << 20);
	assert_int_equal(clio_dev_write_zeroes(d, 2 << 20, 1 << 20), 0);
	memset(buf + (2 << 20), 0, 1 << 20);
	assert_int_equal(clio_dev_pread(d, back, 4 << 20, 0), 4 << 20);
	assert_memory_equal(back, buf, 4 << 20);
	clio_dev_close(d);
	assert_int_equal(log_count(logpath, "Zero"), 0);
	server_stop();
	unlink(logpath);
	free(buf);
	free(back);
}

static int
setup(void **state)
{
	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	return 0;
}

static int
teardown(void **state)
{
	char logpath[160];

	(void)state;
	server_stop();
	snprintf(logpath, sizeof(logpath), "%s/log", dir);
	unlink(logpath);
	rmdir(dir);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_in_flight),
		cmocka_unit_test(test_server_limits),
		cmocka_unit_test(test_server_gone),
		cmocka_unit_test(test_trim_zero),
	};

	if (system("nbdkit --version >/dev/null 2>&1") != 0) {
		printf("test-nbd: nbdkit is not installed (apt-get install nbdkit)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
