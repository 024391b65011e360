/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-dev.c - the device layer: the shared parsers, device strings and
 * their errors, the mem, file and fault backends (a file's size limit
 * that of its file system), splitting at maxio,
 * asynchronous submission with several requests in flight, statistics,
 * a device of callbacks (clio_dev_open_callbacks) under a cache,
 * the io_uring and threads engines of files (many requests from one
 * thread, O_DIRECT, flush through the ring, the forced fallback), one
 * piece per request, front-end accounting from several threads, and the
 * clock that times requests (now_fast against CLOCK_MONOTONIC).
 *
 * Every check looks at what can be observed from outside: the bytes read
 * back (and, for the file backend, what read(2) finds in the file), the
 * counts the device layer kept, the errors returned.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clio.h"
#include "internal.h"
#include "testutil.h"

#define KiB TU_KiB
#define MiB TU_MiB

/* ------------------------------------------------------------ parsers */

static void
size_ok(const char *s, uint64_t want)
{
	uint64_t v = 12345;
	int r = parse_size(s, &v);

	if (r != 0 || v != want)
		print_message("parse_size(\"%s\") = %d, %llu; want %llu\n", s,
			      r, (unsigned long long)v,
			      (unsigned long long)want);
	assert_int_equal(r, 0);
	assert_true(v == want);
}

static void
size_bad(const char *s, int want)
{
	uint64_t v = 12345;
	int r = parse_size(s, &v);

	if (r != want)
		print_message("parse_size(\"%s\") = %d, want %d\n",
			      s ? s : "(null)", r, want);
	assert_int_equal(r, want);
	assert_true(v == 12345); /* untouched */
}

static void
test_parse_size(void **state)
{
	(void)state;
	size_ok("0", 0);
	size_ok("1", 1);
	size_ok("4096", 4096);
	size_ok("7c", 7);
	size_ok("3w", 6);
	size_ok("2b", 1024);
	size_ok("4K", 4096);
	size_ok("4k", 4096);
	size_ok("1KiB", 1024);
	size_ok("3M", 3 * MiB);
	size_ok("2G", 2ull << 30);
	size_ok("5T", 5ull << 40);
	size_ok("2kB", 2000);
	size_ok("3MB", 3000000);
	size_ok("1GB", 1000000000ull);
	size_ok("1TB", 1000000000000ull);
	size_ok("18446744073709551615", UINT64_MAX);
	size_ok("16777215T", 16777215ull << 40);

	/* overflow, of the number or of the multiplication */
	size_bad("18446744073709551616", -ERANGE);
	size_bad("99999999999999999999999", -ERANGE);
	size_bad("16777216T", -ERANGE);
	size_bad("17179869184G", -ERANGE);
	size_bad("36028797018963968b", -ERANGE);
	size_bad("9223372036854775808w", -ERANGE);

	/* garbage */
	size_bad(NULL, -EINVAL);
	size_bad("", -EINVAL);
	size_bad("K", -EINVAL);
	size_bad("-1", -EINVAL);
	size_bad("+1", -EINVAL);
	size_bad(" 1", -EINVAL);
	size_bad("1 ", -EINVAL);
	size_bad("1X", -EINVAL);
	size_bad("12Q", -EINVAL);
	size_bad("1.5M", -EINVAL);
	size_bad("1KK", -EINVAL);
	size_bad("1Mb", -EINVAL);
	size_bad("0x10", -EINVAL);
	size_bad("1 K", -EINVAL);
}

static void
test_parse_other(void **state)
{
	uint64_t u = 7;
	double dv = 7.0;
	int e = 7;

	(void)state;
	assert_int_equal(parse_uint("42", &u), 0);
	assert_true(u == 42);
	assert_int_equal(parse_uint("0", &u), 0);
	assert_true(u == 0);
	assert_int_equal(parse_uint("010", &u), 0); /* decimal, not octal */
	assert_true(u == 10);
	assert_int_equal(parse_uint("08", &u), 0);
	assert_true(u == 8);
	u = 7;
	assert_int_equal(parse_uint("4K", &u), -EINVAL);
	assert_int_equal(parse_uint("", &u), -EINVAL);
	assert_int_equal(parse_uint("-3", &u), -EINVAL);
	assert_int_equal(parse_uint("0x10", &u), -EINVAL);
	assert_int_equal(parse_uint(NULL, &u), -EINVAL);
	assert_int_equal(parse_uint("18446744073709551616", &u), -ERANGE);
	assert_true(u == 7);

	assert_int_equal(parse_double("0.2", &dv), 0);
	assert_true(dv == 0.2);
	assert_int_equal(parse_double("1e3", &dv), 0);
	assert_true(dv == 1000.0);
	dv = 7.0;
	assert_int_equal(parse_double("abc", &dv), -EINVAL);
	assert_int_equal(parse_double("", &dv), -EINVAL);
	assert_int_equal(parse_double("1.5s", &dv), -EINVAL);
	assert_int_equal(parse_double("nan", &dv), -EINVAL);
	assert_int_equal(parse_double("1e999", &dv), -EINVAL);
	assert_true(dv == 7.0);

	assert_int_equal(parse_errno("EIO", &e), 0);
	assert_int_equal(e, EIO);
	assert_int_equal(parse_errno("enospc", &e), 0);
	assert_int_equal(e, ENOSPC);
	assert_int_equal(parse_errno("5", &e), 0);
	assert_int_equal(e, 5);
	e = 7;
	assert_int_equal(parse_errno("EBOGUS", &e), -EINVAL);
	assert_int_equal(parse_errno("0", &e), -EINVAL);
	assert_int_equal(parse_errno("4096", &e), -EINVAL);
	assert_int_equal(parse_errno("", &e), -EINVAL);
	assert_int_equal(e, 7);
	assert_string_equal(errno_name(EIO), "EIO");
	assert_string_equal(errno_name(-ENOSPC), "ENOSPC");

	/* the library never sets errno, even through its parsers */
	errno = 1234;
	assert_int_equal(parse_uint("99999999999999999999", &u), -ERANGE);
	assert_int_equal(parse_uint("12", &u), 0);
	assert_int_equal(parse_size("99999999999999999999", &u), -ERANGE);
	assert_int_equal(parse_size("12K", &u), 0);
	assert_int_equal(parse_double("1e999", &dv), -EINVAL);
	assert_int_equal(parse_double("0.5", &dv), 0);
	assert_int_equal(errno, 1234);
}

struct kv_seen {
	char buf[256];
	int calls, stop_at;
};

static int
kv_record(void *arg, const char *k, const char *v)
{
	struct kv_seen *s = arg;
	size_t n = strlen(s->buf);

	snprintf(s->buf + n, sizeof(s->buf) - n, "[%s|%s]", k, v);
	if (++s->calls == s->stop_at)
		return -EINVAL;
	return 0;
}

static void
test_parse_kv(void **state)
{
	struct kv_seen s;
	char in[64], err[128];

	(void)state;
	memset(&s, 0, sizeof(s));
	strcpy(in, "a=1,,b,c=x=y,");
	assert_int_equal(parse_kv_list(in, ',', kv_record, &s, "t", err, sizeof(err)), 0);
	assert_string_equal(s.buf, "[a|1][b|][c|x=y]");

	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	strcpy(in, "a=1&b=2&c=3");
	assert_int_equal(parse_kv_list(in, '&', kv_record, &s, "t", err, sizeof(err)), -EINVAL);
	assert_string_equal(s.buf, "[a|1][b|2]");

	memset(&s, 0, sizeof(s));
	strcpy(in, "");
	assert_int_equal(parse_kv_list(in, ',', kv_record, &s, "t", err, sizeof(err)), 0);
	assert_int_equal(s.calls, 0);

	/* a key given twice is refused before its second value is taken;
	 * a value that looks like a later key is no key */
	memset(&s, 0, sizeof(s));
	strcpy(in, "size=1M,b=size,size=2M");
	assert_int_equal(parse_kv_list(in, ',', kv_record, &s, "mem", err, sizeof(err)), -EINVAL);
	assert_string_equal(s.buf, "[size|1M][b|size]");
	assert_string_equal(err, "mem: 'size' given twice");
	memset(&s, 0, sizeof(s));
	strcpy(in, "direct&direct=0");
	assert_int_equal(parse_kv_list(in, '&', kv_record, &s, "file", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "file: 'direct' given twice");
}

/* uri_take_query's take: "qd=..." is ours, "bad=..." an error. */
static int
take_qd(void *arg, const char *kv)
{
	int *n = arg;

	if (strncmp(kv, "bad=", 4) == 0)
		return -EINVAL;
	if (strncmp(kv, "qd=", 3) != 0)
		return 0;
	*n = atoi(kv + 3);
	return 1;
}

static void
test_uri_query(void **state)
{
	char *rest = NULL;
	int qd = 0;

	(void)state;
	assert_int_equal(uri_take_query("nbd+unix:///e?socket=/s&qd=4&tls=off",
					take_qd, &qd, &rest), 0);
	assert_string_equal(rest, "nbd+unix:///e?socket=/s&tls=off");
	assert_int_equal(qd, 4);
	free(rest);
	assert_int_equal(uri_take_query("nbd://h/e?qd=9", take_qd, &qd, &rest), 0);
	assert_string_equal(rest, "nbd://h/e");
	assert_int_equal(qd, 9);
	free(rest);
	assert_int_equal(uri_take_query("nbd://h/e", take_qd, &qd, &rest), 0);
	assert_string_equal(rest, "nbd://h/e");
	free(rest);
	rest = NULL;
	assert_int_equal(uri_take_query("nbd://h/e?a=1&bad=2", take_qd, &qd, &rest), -EINVAL);
	assert_null(rest);
}

/* ------------------------------------------------------------ strings */

/* spec must fail with want, and the message must name `names`. */
static void
open_bad(const char *spec, int want, const char *names)
{
	char err[256];
	clio_dev *d = NULL;
	int r;

	memset(err, 'x', sizeof(err));
	r = clio_dev_open_err(spec, 0, &d, err, sizeof(err));
	print_message("  %-48s -> %d \"%s\"\n", spec, r, r < 0 ? err : "");
	assert_int_equal(r, want);
	assert_null(d);
	assert_non_null(memchr(err, '\0', sizeof(err)));
	assert_null(strchr(err, '\n')); /* one line */
	if (names != NULL)
		assert_non_null(strstr(err, names));
	/* and without an error buffer */
	assert_int_equal(clio_dev_open(spec, 0, &d), want);
	assert_null(d);
}

/* now_fast() (fastclock.c) measures durations at CLOCK_MONOTONIC's rate:
 * read inside a CLOCK_MONOTONIC interval of 20 ms and more, its own
 * interval is within 1% of it, whether it reads the time-stamp counter
 * or the clock itself (a wrong rate is off by far more).  A preemption between the reads can only make the
 * inner interval shorter, hence the one-sided bound at 20 ms. */
static void
test_fast_clock(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++) {
		double m0 = now_monotonic(), f0 = now_fast(), f1, m1;
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		f1 = now_fast();
		m1 = now_monotonic();
		if (!(f1 - f0 <= (m1 - m0) * 1.01 + 1e-6 && f1 - f0 >= 0.020 * 0.99))
			fail_msg("now_fast: %.9f s inside CLOCK_MONOTONIC's %.9f s (slept 0.020 s)",
				 f1 - f0, m1 - m0);
	}
}

static void
test_dev_strings(void **state)
{
	char path[256], spec[320];
	clio_dev *d;
	int fd;

	(void)state;
	d = tu_dev_open("mem:size=16M", 0);
	assert_true(clio_dev_size(d) == 16 * MiB);
	assert_string_equal(clio_dev_name(d), "mem:size=16M");
	assert_int_equal(clio_dev_sector_size(d), 512);
	assert_int_equal(clio_dev_maxio(d), 0);
	assert_false(clio_dev_is_virtual(d));
	clio_dev_close(d);

	d = tu_dev_open("mem", 0);
	assert_true(clio_dev_size(d) == 0);
	clio_dev_close(d);

	d = tu_dev_open("mem:size=1M,maxio=64K", 0);
	assert_int_equal(clio_dev_maxio(d), 64 * KiB);
	clio_dev_close(d);

	d = tu_dev_open("fault:write=EIO,offset=1M,length=64K@mem:size=16M", 0);
	assert_true(clio_dev_size(d) == 16 * MiB);
	assert_string_equal(clio_dev_name(d),
			    "fault:write=EIO,offset=1M,length=64K@mem:size=16M");
	clio_dev_close(d);

	d = tu_dev_open("fault:read=5,flush=ENOSPC,after=3,prob=0.5,seed=9,"
			"short=1@mem:size=1M", 0);
	clio_dev_close(d);

	fd = tu_tmpfile(path, sizeof(path));
	assert_int_equal(pwrite(fd, "hello", 5, 0), 5);
	close(fd);
	d = tu_dev_open(path, 0);
	assert_true(clio_dev_size(d) == 5);
	assert_string_equal(clio_dev_name(d), path);
	clio_dev_close(d);
	snprintf(spec, sizeof(spec), "file:%s", path);
	d = tu_dev_open(spec, CLIO_DEV_RDONLY);
	assert_true(clio_dev_size(d) == 5);
	clio_dev_close(d);
	snprintf(spec, sizeof(spec), "file:%s?direct=0&qd=2&maxio=8K", path);
	d = tu_dev_open(spec, 0);
	assert_int_equal(clio_dev_maxio(d), 8 * KiB);
	clio_dev_close(d);

	/* malformed strings: -EINVAL and a message naming the value */
	open_bad("", -EINVAL, NULL);
	open_bad("foo:bar", -EINVAL, "foo");
	open_bad("nbd:host", -EINVAL, "nbd");
	open_bad("mem:size=12Q", -EINVAL, "12Q");
	open_bad("mem:size=", -EINVAL, "size");
	open_bad("mem:bogus=1", -EINVAL, "bogus");
	open_bad("mem:size=1M,maxio=100", -EINVAL, "100");
	open_bad("sim:preset=nope", -EINVAL, "nope");
	open_bad("fault:write=EIO", -EINVAL, "fault:write=EIO");
	open_bad("fault:write=EBOGUS@mem:size=1M", -EINVAL, "EBOGUS");
	open_bad("fault:prob=2@mem:size=1M", -EINVAL, "2");
	open_bad("fault:prob=x@mem:size=1M", -EINVAL, "x");
	open_bad("fault:offset=1Q@mem:size=1M", -EINVAL, "1Q");
	open_bad("fault:short=2@mem:size=1M", -EINVAL, "2");
	open_bad("fault:frob=1@mem:size=1M", -EINVAL, "frob");
	open_bad("fault:write=EIO@mem:size=7Z", -EINVAL, "7Z");
	open_bad("fault:write=EIO@nope:x", -EINVAL, "nope");
	open_bad("file:", -EINVAL, "file:");
	open_bad("file:?direct=1", -EINVAL, "file:?direct=1");
	snprintf(spec, sizeof(spec), "file:%s?direct=yes", path);
	open_bad(spec, -EINVAL, "yes");
	snprintf(spec, sizeof(spec), "file:%s?qd=0", path);
	open_bad(spec, -EINVAL, "0");
	snprintf(spec, sizeof(spec), "file:%s?color=red", path);
	open_bad(spec, -EINVAL, "color");
	/* a missing file is not a malformed string, but it is named */
	open_bad("/nonexistent-clio-dir/x", -ENOENT, "/nonexistent-clio-dir/x");
	open_bad("/dev/null", -EINVAL, "/dev/null");
	/* a FIFO is refused at once, read-only too: open(2) alone would
	 * wait for a writer (SIGALRM ends the test if it hangs) */
	snprintf(spec, sizeof(spec), "%s.fifo", path);
	assert_int_equal(mkfifo(spec, 0600), 0);
	alarm(10);
	assert_int_equal(clio_dev_open(spec, CLIO_DEV_RDONLY, &d), -EINVAL);
	assert_int_equal(clio_dev_open(spec, 0, &d), -EINVAL);
	alarm(0);
	unlink(spec);
	unlink(path);
	/* a directory is EISDIR, read-only too (it was EINVAL then) */
	assert_int_equal(clio_dev_open("/tmp", CLIO_DEV_RDONLY, &d), -EISDIR);
	assert_int_equal(clio_dev_open("/tmp", 0, &d), -EISDIR);
}

static void
test_dev_limits(void **state)
{
	char buf[4096];
	clio_dev *d;

	(void)state;
	memset(buf, 1, sizeof(buf));
	/* read-only */
	d = tu_dev_open("mem:size=1M", CLIO_DEV_RDONLY);
	assert_int_equal(clio_dev_pwrite(d, buf, 512, 0), -EROFS);
	assert_int_equal(clio_dev_resize(d, 0), -EROFS);
	assert_int_equal(clio_dev_pread(d, buf, 512, 0), 512);
	assert_int_equal(tu_check_zero(buf, 512), -1);
	clio_dev_close(d);

	/* a fixed-size device refuses to go past its end */
	d = tu_dev_open("sim:preset=ssd,size=1M", 0);
	assert_int_equal(clio_dev_pread(d, buf, 4096, MiB - 2048), -EINVAL);
	assert_int_equal(clio_dev_pread(d, buf, 512, 2 * MiB), -EINVAL);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, MiB - 2048), -ENOSPC);
	assert_int_equal(clio_dev_resize(d, 2 * MiB), -ENOTSUP);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, MiB - 4096), 4096);
	clio_dev_close(d);

	d = tu_dev_open("fault:read=EIO,offset=0,length=512@sim:preset=ssd,size=1M", 0);
	assert_int_equal(clio_dev_resize(d, 2 * MiB), -ENOTSUP);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, MiB), -ENOSPC);
	clio_dev_close(d);
}

/* ------------------------------------------------------------ mem */

static void
test_mem_backend(void **state)
{
	unsigned char *buf = malloc(64 * KiB), *rd = malloc(64 * KiB);
	uint64_t big = 64ull << 30;
	struct iovec iov[3];
	clio_dev *d;

	(void)state;
	/* sparse: 64 GiB of address space, written at both ends */
	d = tu_dev_open("mem:size=64G", 0);
	tu_fill(buf, 4096, 0, 1);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, 0), 4096);
	tu_fill(buf, 4096, big - 4096, 1);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, big - 4096), 4096);
	/* across a 64 KiB chunk boundary, unaligned */
	tu_fill(buf, 1000, 64 * KiB - 300, 1);
	assert_int_equal(clio_dev_pwrite(d, buf, 1000, 64 * KiB - 300), 1000);
	assert_int_equal(clio_dev_pread(d, rd, 4096, 0), 4096);
	assert_int_equal(tu_check(rd, 4096, 0, 1), -1);
	assert_int_equal(clio_dev_pread(d, rd, 4096, big - 4096), 4096);
	assert_int_equal(tu_check(rd, 4096, big - 4096, 1), -1);
	assert_int_equal(clio_dev_pread(d, rd, 2000, 64 * KiB - 800), 2000);
	assert_int_equal(tu_check_zero(rd, 500), -1);
	assert_int_equal(tu_check(rd + 500, 1000, 64 * KiB - 300, 1), -1);
	assert_int_equal(tu_check_zero(rd + 1500, 500), -1);
	/* never written: zeros */
	memset(rd, 0xee, 64 * KiB);
	assert_int_equal(clio_dev_pread(d, rd, 64 * KiB, big / 2), 64 * KiB);
	assert_int_equal(tu_check_zero(rd, 64 * KiB), -1);
	/* zeros written over data read as zeros */
	memset(buf, 0, 4096);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, 0), 4096);
	memset(rd, 0xee, 4096);
	assert_int_equal(clio_dev_pread(d, rd, 4096, 0), 4096);
	assert_int_equal(tu_check_zero(rd, 4096), -1);
	clio_dev_close(d);

	/* reads past the written data are zero */
	d = tu_dev_open("mem:size=16M", 0);
	tu_fill(buf, 1000, 5000, 2);
	assert_int_equal(clio_dev_pwrite(d, buf, 1000, 5000), 1000);
	memset(rd, 0xee, 16 * KiB);
	assert_int_equal(clio_dev_pread(d, rd, 16 * KiB, 0), 16 * KiB);
	assert_int_equal(tu_check_zero(rd, 5000), -1);
	assert_int_equal(tu_check(rd + 5000, 1000, 5000, 2), -1);
	assert_int_equal(tu_check_zero(rd + 6000, 16 * KiB - 6000), -1);
	/* iovec lists, gathered and scattered */
	tu_fill(buf, 3000, 70000, 3);
	iov[0] = (struct iovec){ buf, 100 };
	iov[1] = (struct iovec){ buf + 100, 2000 };
	iov[2] = (struct iovec){ buf + 2100, 900 };
	assert_int_equal(clio_dev_pwritev(d, iov, 3, 70000), 3000);
	memset(rd, 0, 3000);
	iov[0] = (struct iovec){ rd, 1 };
	iov[1] = (struct iovec){ rd + 1, 2998 };
	iov[2] = (struct iovec){ rd + 2999, 1 };
	assert_int_equal(clio_dev_preadv(d, iov, 3, 70000), 3000);
	assert_int_equal(tu_check(rd, 3000, 70000, 3), -1);
	clio_dev_close(d);

	/* resize: grows with writes, shrinks, and grows back to zeros */
	d = tu_dev_open("mem:size=0", 0);
	assert_true(clio_dev_size(d) == 0);
	tu_fill(buf, 10000, 0, 4);
	assert_int_equal(clio_dev_pwrite(d, buf, 10000, 0), 10000);
	assert_true(clio_dev_size(d) == 10000);
	tu_fill(buf, 100, 200000, 4);
	assert_int_equal(clio_dev_pwrite(d, buf, 100, 200000), 100);
	assert_true(clio_dev_size(d) == 200100);
	assert_int_equal(clio_dev_resize(d, 3000), 0);
	assert_true(clio_dev_size(d) == 3000);
	assert_int_equal(clio_dev_resize(d, 250000), 0);
	assert_true(clio_dev_size(d) == 250000);
	memset(rd, 0xee, 10000);
	assert_int_equal(clio_dev_pread(d, rd, 10000, 0), 10000);
	assert_int_equal(tu_check(rd, 3000, 0, 4), -1);
	assert_int_equal(tu_check_zero(rd + 3000, 7000), -1);
	memset(rd, 0xee, 100);
	assert_int_equal(clio_dev_pread(d, rd, 100, 200000), 100);
	assert_int_equal(tu_check_zero(rd, 100), -1);
	assert_int_equal(clio_dev_resize(d, 0), 0);
	assert_int_equal(clio_dev_resize(d, 4096), 0);
	assert_int_equal(clio_dev_pread(d, rd, 4096, 0), 4096);
	assert_int_equal(tu_check_zero(rd, 4096), -1);
	assert_int_equal(clio_dev_flush(d), 0);
	clio_dev_close(d);
	free(buf);
	free(rd);
}

/* ------------------------------------------------------------ trim */

/* A pattern of 1 MiB on d, then [off, off+len) trimmed or zeroed by
 * fn: zeros there, the pattern around it. */
static void
range_op_check(clio_dev *d, int (*fn)(clio_dev *, uint64_t, uint64_t),
	       uint64_t off, uint64_t len, uint64_t seed)
{
	unsigned char *buf = malloc(MiB), *rd = malloc(MiB);

	tu_fill(buf, MiB, 0, seed);
	assert_int_equal(clio_dev_pwrite(d, buf, MiB, 0), (ssize_t)MiB);
	assert_int_equal(fn(d, off, len), 0);
	assert_int_equal(clio_dev_pread(d, rd, MiB, 0), (ssize_t)MiB);
	assert_int_equal(tu_check(rd, off, 0, seed), -1);
	assert_int_equal(tu_check_zero(rd + off, len), -1);
	assert_int_equal(tu_check(rd + off + len, MiB - off - len, off + len, seed), -1);
	free(buf);
	free(rd);
}

static void
test_discard_zeroes(void **state)
{
	char path[256], spec[320];
	struct stat st;
	clio_dev *d;
	int fd;

	(void)state;
	/* mem: whole chunks and pieces of them */
	d = tu_dev_open("mem:size=1M", 0);
	range_op_check(d, clio_dev_discard, 4096, 600 * KiB, 1);
	range_op_check(d, clio_dev_write_zeroes, 1000, 3000, 2);
	assert_int_equal(clio_dev_discard(d, MiB - 10, 11), -EINVAL);
	assert_int_equal(clio_dev_write_zeroes(d, MiB + 1, 0), -EINVAL);
	assert_int_equal(clio_dev_discard(d, 0, 0), 0);
	clio_dev_close(d);
	/* a file: a hole punched (fewer blocks), zeros read back */
	fd = tu_tmpfile(path, sizeof(path));
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s", path);
	d = tu_dev_open(spec, 0);
	range_op_check(d, clio_dev_discard, 64 * KiB, 512 * KiB, 3);
	assert_int_equal(clio_dev_flush(d), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size == (off_t)MiB);
	assert_true((uint64_t)st.st_blocks * 512 <= MiB - 512 * KiB + 64 * KiB);
	range_op_check(d, clio_dev_write_zeroes, 5, 70000, 4);
	clio_dev_close(d);
	d = tu_dev_open(spec, CLIO_DEV_RDONLY);
	assert_int_equal(clio_dev_discard(d, 0, 4096), -EROFS);
	assert_int_equal(clio_dev_write_zeroes(d, 0, 4096), -EROFS);
	clio_dev_close(d);
	unlink(path);
	/* a device that cannot trim: the zeroing is written */
	d = tu_dev_open("fault:read=EIO,offset=2M,length=1@mem:size=1M", 0);
	assert_int_equal(clio_dev_discard(d, 0, 0), -ENOTSUP);
	assert_int_equal(clio_dev_discard(d, 0, 4096), -ENOTSUP);
	range_op_check(d, clio_dev_write_zeroes, 12345, 300000, 5);
	clio_dev_close(d);
}

/* ------------------------------------------------------------ file */

/* What read(2) finds in the file. */
static void
file_has(const char *path, uint64_t off, size_t len, uint64_t seed)
{
	unsigned char *p = malloc(len);
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, p, len, (off_t)off), (ssize_t)len);
	if (seed == 0)
		assert_int_equal(tu_check_zero(p, len), -1);
	else
		assert_int_equal(tu_check(p, len, off, seed), -1);
	close(fd);
	free(p);
}

static off_t
file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

static void
test_file_backend(void **state)
{
	char path[256], spec[320];
	unsigned char *buf = malloc(256 * KiB), *rd = malloc(256 * KiB);
	struct clio_dev_stats st;
	clio_dev *d;
	int fd;

	(void)state;
	fd = tu_tmpfile(path, sizeof(path));
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s", path);
	d = tu_dev_open(spec, 0);
	assert_true(clio_dev_size(d) == 0);
	tu_fill(buf, 100000, 5, 11);
	assert_int_equal(clio_dev_pwrite(d, buf, 100000, 5), 100000);
	assert_true(clio_dev_size(d) == 100005);
	assert_true(file_size(path) == 100005);
	file_has(path, 5, 100000, 11);
	file_has(path, 0, 5, 0);
	memset(rd, 0, 100000);
	assert_int_equal(clio_dev_pread(d, rd, 100000, 5), 100000);
	assert_int_equal(tu_check(rd, 100000, 5, 11), -1);
	/* past the end of a file: the rest reads as zeros */
	memset(rd, 0xee, 8192);
	assert_int_equal(clio_dev_pread(d, rd, 8192, 100005 - 1000), 8192);
	assert_int_equal(tu_check(rd, 1000, 100005 - 1000, 11), -1);
	assert_int_equal(tu_check_zero(rd + 1000, 7192), -1);
	/* resize both ways */
	assert_int_equal(clio_dev_resize(d, 50000), 0);
	assert_true(clio_dev_size(d) == 50000);
	assert_true(file_size(path) == 50000);
	assert_int_equal(clio_dev_resize(d, 60000), 0);
	assert_true(file_size(path) == 60000);
	file_has(path, 50000, 10000, 0);
	file_has(path, 5, 49995, 11);
	/* flush */
	clio_dev_stats_reset(d);
	assert_int_equal(clio_dev_flush(d), 0);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.flushes, 1);
	/* the version: what stat(2) sees, and a change of it */
	{
		struct clio_validator v1, v2;
		struct stat fs;

		assert_int_equal(clio_dev_version(d, &v1), 0);
		assert_int_equal(stat(path, &fs), 0);
		assert_true(v1.size == 60000 && v1.id == (uint64_t)fs.st_ino);
		assert_true(v1.mtime_ns == (int64_t)fs.st_mtim.tv_sec * 1000000000 +
					  fs.st_mtim.tv_nsec);
		assert_int_equal(truncate(path, 7), 0);
		assert_int_equal(clio_dev_version(d, &v2), 0);
		assert_true(v2.size == 7 && v2.id == v1.id && v2.ctime_ns >= v1.ctime_ns);
	}
	clio_dev_close(d);

	/* direct=1: unaligned memory, offsets and lengths through a bounce */
	snprintf(spec, sizeof(spec), "file:%s?direct=1", path);
	{
		char err[256];
		int r = clio_dev_open_err(spec, 0, &d, err, sizeof(err));
		if (r < 0) {
			print_message("  O_DIRECT not supported here (%s): "
				      "skipping the direct part\n", err);
			goto out;
		}
	}
	assert_int_equal(clio_dev_resize(d, 0), 0);
	/* aligned */
	{
		void *al;
		assert_int_equal(posix_memalign(&al, 4096, 64 * KiB), 0);
		tu_fill(al, 64 * KiB, 8192, 12);
		assert_int_equal(clio_dev_pwrite(d, al, 64 * KiB, 8192), 64 * KiB);
		memset(al, 0, 64 * KiB);
		assert_int_equal(clio_dev_pread(d, al, 64 * KiB, 8192), 64 * KiB);
		assert_int_equal(tu_check(al, 64 * KiB, 8192, 12), -1);
		free(al);
	}
	assert_true(file_size(path) == 8192 + 64 * KiB);
	file_has(path, 8192, 64 * KiB, 12);
	/* unaligned buffer, offset and length inside the file */
	tu_fill(buf + 1, 10000, 1000, 13);
	assert_int_equal(clio_dev_pwrite(d, buf + 1, 10000, 1000), 10000);
	file_has(path, 1000, 10000, 13);
	file_has(path, 0, 1000, 0);
	file_has(path, 11000, 8192 + 64 * KiB - 11000, 12); /* edges kept */
	memset(rd, 0, 20000);
	assert_int_equal(clio_dev_pread(d, rd + 3, 10000, 1000), 10000);
	assert_int_equal(tu_check(rd + 3, 10000, 1000, 13), -1);
	/* an unaligned write that extends the file leaves it exactly so long */
	tu_fill(buf + 5, 3333, 8192 + 64 * KiB + 100, 14);
	assert_int_equal(clio_dev_pwrite(d, buf + 5, 3333, 8192 + 64 * KiB + 100), 3333);
	assert_true(file_size(path) == 8192 + 64 * KiB + 100 + 3333);
	assert_true(clio_dev_size(d) == 8192 + 64 * KiB + 100 + 3333);
	file_has(path, 8192 + 64 * KiB + 100, 3333, 14);
	file_has(path, 8192 + 64 * KiB, 100, 0);
	/* an unaligned read across the end of the file */
	memset(rd, 0xee, 8192);
	assert_int_equal(clio_dev_pread(d, rd + 7, 8000, 8192 + 64 * KiB + 100 + 3333 - 1000), 8000);
	assert_int_equal(tu_check(rd + 7, 1000, 8192 + 64 * KiB + 100 + 3333 - 1000, 14), -1);
	assert_int_equal(tu_check_zero(rd + 7 + 1000, 7000), -1);
	/* an aligned read across the end */
	{
		void *al;
		uint64_t end = 8192 + 64 * KiB + 100 + 3333;
		assert_int_equal(posix_memalign(&al, 4096, 16 * KiB), 0);
		memset(al, 0xee, 16 * KiB);
		assert_int_equal(clio_dev_pread(d, al, 16 * KiB, 8192 + 64 * KiB), 16 * KiB);
		assert_int_equal(tu_check_zero(al, 100), -1);
		assert_int_equal(tu_check((char *)al + 100, 3333, 8192 + 64 * KiB + 100, 14), -1);
		assert_int_equal(tu_check_zero((char *)al + 100 + 3333, 16 * KiB - 100 - 3333), -1);
		(void)end;
		free(al);
	}
	assert_int_equal(clio_dev_flush(d), 0);
	clio_dev_close(d);
out:
	unlink(path);
	free(buf);
	free(rd);
}

/* A file past the largest its file system takes (ext4: 16 TiB less a
 * block): a write or a truncation there through the cache fails with
 * EFBIG when made, as write(2) would, changing nothing; it did not fail
 * before the write-back (or the next fsync, the bytes lost).  Where the
 * file system takes any size below 2^63 (tmpfs, xfs), only the cache's
 * own limit shows. */
static void
test_file_max_size(void **state)
{
	char path[4096], spec[4200];
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	uint64_t lim = 1ull << 31;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	struct stat st;
	int fd;

	(void)state;
	fd = tu_tmpfile(path, sizeof(path));
	/* the limit as write(2) finds it, by bisection */
	for (uint64_t bad = (uint64_t)INT64_MAX; bad - lim > 1;) {
		uint64_t mid = lim + (bad - lim) / 2;
		if (pwrite(fd, "x", 1, (off_t)mid - 1) == 1)
			lim = mid;
		else
			bad = mid;
		assert_int_equal(ftruncate(fd, 0), 0);
	}
	close(fd);
	print_message("file size limit of the test's file system: %llu\n",
		      (unsigned long long)lim);
	snprintf(spec, sizeof(spec), "file:%s", path);
	d = tu_dev_open(spec, 0);
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	f = tu_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_pwrite(f, "abc", 3, 0), 3);
	if (lim < (uint64_t)INT64_MAX - 1) {
		assert_int_equal(clio_pwrite(f, "x", 1, lim), -EFBIG);
		assert_int_equal(clio_pwrite(f, "xy", 2, lim - 1), -EFBIG);
		assert_int_equal(clio_ftruncate(f, lim + 1), -EFBIG);
		assert_int_equal(clio_pwrite(f, "z", 1, lim - 1), 1);
		assert_int_equal(clio_fsync(f), 0);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal((uint64_t)st.st_size, lim);
		assert_int_equal(clio_ftruncate(f, 3), 0);
	}
	assert_int_equal(clio_pwrite(f, "x", 1, (uint64_t)INT64_MAX), -EFBIG);
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	unlink(path);
}

/* ------------------------------------------------------------ fault */

static void
test_fault_ranges(void **state)
{
	unsigned char *buf = malloc(64 * KiB), *rd = malloc(64 * KiB);
	struct clio_dev_stats st;
	clio_dev *d;

	(void)state;
	/* read errors inside [1M, 1M+64K) only */
	d = tu_dev_open("fault:read=EIO,offset=1M,length=64K@mem:size=16M", 0);
	tu_fill(buf, 64 * KiB, MiB, 21);
	assert_int_equal(clio_dev_pwrite(d, buf, 64 * KiB, MiB), 64 * KiB);
	tu_fill(buf, 4096, MiB - 4096, 21);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, MiB - 4096), 4096);
	tu_fill(buf, 4096, MiB + 64 * KiB, 21);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, MiB + 64 * KiB), 4096);
	clio_dev_stats_reset(d);
	assert_int_equal(clio_dev_pread(d, rd, 4096, MiB - 4096), 4096);
	assert_int_equal(tu_check(rd, 4096, MiB - 4096, 21), -1);
	assert_int_equal(clio_dev_pread(d, rd, 4096, MiB + 64 * KiB), 4096);
	assert_int_equal(tu_check(rd, 4096, MiB + 64 * KiB, 21), -1);
	assert_int_equal(clio_dev_pread(d, rd, 4096, MiB), -EIO);
	assert_int_equal(clio_dev_pread(d, rd, 1, MiB + 64 * KiB - 1), -EIO);
	assert_int_equal(clio_dev_pread(d, rd, 1024, MiB - 512), -EIO);
	assert_int_equal(clio_dev_pread(d, rd, 1024, MiB + 64 * KiB - 512), -EIO);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.errors, 4);
	assert_int_equal(st.back.reads, 6);
	assert_int_equal(clio_dev_flush(d), 0);
	clio_dev_close(d);

	/* write errors: the range fails and keeps its old data */
	d = tu_dev_open("fault:write=ENOSPC,offset=1M,length=64K@mem:size=16M", 0);
	tu_fill(buf, 4096, MiB - 4096, 22);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, MiB - 4096), 4096);
	tu_fill(buf, 8192, MiB - 4096, 23);
	assert_int_equal(clio_dev_pwrite(d, buf, 8192, MiB - 4096), -ENOSPC);
	assert_int_equal(clio_dev_pwrite(d, buf + 4096, 4096, MiB), -ENOSPC);
	assert_int_equal(clio_dev_pread(d, rd, 8192, MiB - 4096), 8192);
	assert_int_equal(tu_check(rd, 4096, MiB - 4096, 22), -1);
	assert_int_equal(tu_check_zero(rd + 4096, 4096), -1);
	assert_int_equal(clio_dev_flush(d), 0);
	clio_dev_close(d);

	/* flush errors */
	d = tu_dev_open("fault:flush=EIO@mem:size=1M", 0);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, 0), 4096);
	assert_int_equal(clio_dev_pread(d, rd, 4096, 0), 4096);
	assert_int_equal(clio_dev_flush(d), -EIO);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.flushes, 1);
	assert_int_equal(st.back.errors, 1);
	clio_dev_close(d);

	/* after=N: the first N requests succeed */
	d = tu_dev_open("fault:write=EIO,after=3@mem:size=1M", 0);
	assert_int_equal(clio_dev_pwrite(d, buf, 512, 0), 512);
	assert_int_equal(clio_dev_pwrite(d, buf, 512, 512), 512);
	assert_int_equal(clio_dev_pwrite(d, buf, 512, 1024), 512);
	assert_int_equal(clio_dev_pwrite(d, buf, 512, 1536), -EIO);
	assert_int_equal(clio_dev_pwrite(d, buf, 512, 0), -EIO);
	clio_dev_close(d);
	free(buf);
	free(rd);
}

/* The pass (1) / fail (0) sequence of n writes on spec. */
static void
fault_sequence(const char *spec, char *seq, int n)
{
	char buf[512];
	clio_dev *d = tu_dev_open(spec, 0);
	int i;

	memset(buf, 3, sizeof(buf));
	for (i = 0; i < n; i++) {
		ssize_t r = clio_dev_pwrite(d, buf, sizeof(buf),
					    (uint64_t)i * 512);
		assert_true(r == 512 || r == -EIO);
		seq[i] = r == 512 ? '1' : '0';
	}
	seq[n] = '\0';
	clio_dev_close(d);
}

static void
test_fault_prob(void **state)
{
	char a[201], b[201], c[201];
	int i, fails = 0;

	(void)state;
	fault_sequence("fault:write=EIO,prob=0.5,seed=42@mem:size=1M", a, 200);
	fault_sequence("fault:write=EIO,prob=0.5,seed=42@mem:size=1M", b, 200);
	fault_sequence("fault:write=EIO,prob=0.5,seed=43@mem:size=1M", c, 200);
	assert_string_equal(a, b);		/* repeatable */
	assert_string_not_equal(a, c);	/* and the seed matters */
	for (i = 0; i < 200; i++)
		fails += a[i] == '0';
	print_message("  prob=0.5: %d of 200 failed\n", fails);
	assert_in_range(fails, 60, 140);
	fault_sequence("fault:write=EIO,prob=0,seed=1@mem:size=1M", a, 50);
	assert_null(strchr(a, '0'));
	fault_sequence("fault:write=EIO,prob=1,seed=1@mem:size=1M", a, 50);
	assert_null(strchr(a, '1'));
	/* only the range is subject to the coin */
	fault_sequence("fault:write=EIO,prob=0.5,offset=50K,length=1K@mem:size=1M", a, 200);
	for (i = 0; i < 200; i++)
		if (i < 100 || i >= 102)
			assert_int_equal(a[i], '1');
}

static void
test_fault_short(void **state)
{
	unsigned char *buf = malloc(MiB + 4096), *rd = malloc(MiB + 4096);
	struct clio_dev_stats st;
	struct iovec iov[4];
	clio_dev *d;

	(void)state;
	d = tu_dev_open("fault:short=1@mem:size=16M", 0);
	tu_fill(buf, MiB, 0, 31);
	assert_int_equal(clio_dev_pwrite(d, buf, MiB, 0), MiB);
	clio_dev_stats(d, &st);
	print_message("  short=1: 1 MiB write took %llu calls\n",
		      (unsigned long long)st.back.writes);
	assert_true(st.back.writes >= 10);	/* halving down to a sector */
	assert_true(st.back.write_bytes == MiB);
	memset(rd, 0, MiB);
	assert_int_equal(clio_dev_pread(d, rd, MiB, 0), MiB);
	assert_int_equal(tu_check(rd, MiB, 0, 31), -1);
	clio_dev_stats(d, &st);
	assert_true(st.back.reads >= 10);
	assert_true(st.back.read_bytes == MiB);
	assert_int_equal(st.back.errors, 0);

	/* odd lengths and offsets, through an iovec list */
	tu_fill(buf, 5001, 777, 32);
	iov[0] = (struct iovec){ buf, 1 };
	iov[1] = (struct iovec){ buf + 1, 3000 };
	iov[2] = (struct iovec){ buf + 3001, 1999 };
	iov[3] = (struct iovec){ buf + 5000, 1 };
	assert_int_equal(clio_dev_pwritev(d, iov, 4, 777), 5001);
	memset(rd, 0, 5001);
	assert_int_equal(clio_dev_pread(d, rd + 1, 5001, 777), 5001);
	assert_int_equal(tu_check(rd + 1, 5001, 777, 32), -1);
	clio_dev_close(d);

	/* short transfers on a file, split at maxio as well */
	{
		char path[256], spec[320];
		int fd = tu_tmpfile(path, sizeof(path));
		close(fd);
		snprintf(spec, sizeof(spec), "fault:short=1@file:%s?maxio=64K", path);
		d = tu_dev_open(spec, 0);
		tu_fill(buf, MiB + 1000, 100, 33);
		assert_int_equal(clio_dev_pwrite(d, buf, MiB + 1000, 100), MiB + 1000);
		file_has(path, 100, MiB + 1000, 33);
		memset(rd, 0, MiB + 1000);
		assert_int_equal(clio_dev_pread(d, rd, MiB + 1000, 100), MiB + 1000);
		assert_int_equal(tu_check(rd, MiB + 1000, 100, 33), -1);
		clio_dev_close(d);
		unlink(path);
	}
	free(buf);
	free(rd);
}

/* ------------------------------------------------------------ splitting */

static void
test_maxio_split(void **state)
{
	unsigned char *buf = malloc(2 * MiB), *rd = malloc(2 * MiB);
	struct iovec iov[300];
	struct clio_dev_stats st;
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	clio_cache *c;
	clio_file *f;
	clio_dev *d;
	int i;

	(void)state;
	d = tu_dev_open("mem:size=16M,maxio=64K", 0);
	tu_fill(buf, MiB, 0, 41);
	assert_int_equal(clio_dev_pwrite(d, buf, MiB, 0), MiB);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.writes, 16);
	assert_true(st.back.write_bytes == MiB);
	assert_int_equal(st.back.size_hist[tu_hist_bucket(64 * KiB)], 16);
	assert_int_equal(tu_hist_total(&st.back), 16);
	memset(rd, 0, MiB);
	assert_int_equal(clio_dev_pread(d, rd, MiB, 0), MiB);
	assert_int_equal(tu_check(rd, MiB, 0, 41), -1);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.reads, 16);

	/* an uneven length: 16 whole pieces and a 1000-byte one */
	clio_dev_stats_reset(d);
	tu_fill(buf, MiB + 1000, 4 * MiB + 512, 42);
	assert_int_equal(clio_dev_pwrite(d, buf, MiB + 1000, 4 * MiB + 512), MiB + 1000);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.writes, 17);
	assert_int_equal(st.back.size_hist[tu_hist_bucket(64 * KiB)], 16);
	assert_int_equal(st.back.size_hist[tu_hist_bucket(1000)], 1);

	/* an iovec list whose pieces cross the split points */
	clio_dev_stats_reset(d);
	tu_fill(buf, 300 * 3000, 8 * MiB + 7, 43);
	for (i = 0; i < 300; i++)
		iov[i] = (struct iovec){ buf + i * 3000, 3000 };
	assert_int_equal(clio_dev_pwritev(d, iov, 300, 8 * MiB + 7), 900000);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.writes, 14); /* 900000 / 65536, rounded up */
	memset(rd, 0, 900000);
	for (i = 0; i < 300; i++)
		iov[i] = (struct iovec){ rd + i * 3000, 3000 };
	assert_int_equal(clio_dev_preadv(d, iov, 300, 8 * MiB + 7), 900000);
	assert_int_equal(tu_check(rd, 900000, 8 * MiB + 7, 43), -1);

	/* one front-end request through the direct path, 16 at the back */
	conf.maxphys = 4 * MiB;
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	assert_int_equal(clio_open(c, d, CLIO_RDWR | CLIO_DIRECT, &f), 0);
	clio_dev_stats_reset(d);
	tu_fill(buf, MiB, 2 * MiB, 44);
	assert_int_equal(clio_pwrite(f, buf, MiB, 2 * MiB), MiB);
	clio_dev_stats(d, &st);
	assert_int_equal(st.front.writes, 1);
	assert_true(st.front.write_bytes == MiB);
	assert_int_equal(st.back.writes, 16);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);

	/* no maxio: one piece */
	d = tu_dev_open("mem:size=16M", 0);
	assert_int_equal(clio_dev_pwrite(d, buf, 2 * MiB, 0), 2 * MiB);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.writes, 1);
	assert_int_equal(st.back.size_hist[tu_hist_bucket(2 * MiB)], 1);
	clio_dev_close(d);
	free(buf);
	free(rd);
}

/* ------------------------------------------------------------ async */

struct async_ctx {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int done, calls_total;
	int block_first;	/* the first callback waits for a second one */
	int overlap_seen;
	pthread_t threads[64];
	int nthreads;
};

struct async_req {
	struct clio_req req;
	struct async_ctx *ctx;
	int calls;
};

static void
async_done(struct clio_req *req)
{
	struct async_req *ar = req->priv;
	struct async_ctx *x = ar->ctx;
	pthread_t self = pthread_self();
	int i;

	pthread_mutex_lock(&x->m);
	ar->calls++;
	x->calls_total++;
	for (i = 0; i < x->nthreads; i++)
		if (pthread_equal(x->threads[i], self))
			break;
	if (i == x->nthreads && x->nthreads < 64)
		x->threads[x->nthreads++] = self;
	if (x->block_first == 1) {
		/* hold this completion until another request completes:
		 * possible only with two requests in flight at once */
		struct timespec ts;
		x->block_first = 2;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		while (x->block_first == 2) {
			if (pthread_cond_timedwait(&x->cv, &x->m, &ts) != 0)
				break;
		}
		x->overlap_seen = x->block_first == 3;
	} else if (x->block_first == 2) {
		x->block_first = 3;
	}
	x->done++;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->m);
}

static void
async_wait(struct async_ctx *x, int n)
{
	pthread_mutex_lock(&x->m);
	while (x->done < n)
		pthread_cond_wait(&x->cv, &x->m);
	pthread_mutex_unlock(&x->m);
}

#define NREQ 32
#define RLEN (64 * 1024)

static void
test_async_submit(void **state)
{
	char path[256], spec[320];
	struct async_ctx x;
	struct async_req *rq = calloc(NREQ, sizeof(*rq));
	struct iovec *iov = calloc(NREQ, sizeof(*iov));
	unsigned char *buf = malloc((size_t)NREQ * RLEN);
	unsigned char *rd = malloc((size_t)NREQ * RLEN);
	struct clio_dev_stats st;
	double t0, wall;
	clio_dev *d;
	int i, fd;

	(void)state;
	memset(&x, 0, sizeof(x));
	pthread_mutex_init(&x.m, NULL);
	pthread_cond_init(&x.cv, NULL);
	fd = tu_tmpfile(path, sizeof(path));
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s?qd=4&engine=threads", path);
	d = tu_dev_open(spec, 0);

	/* writes, all submitted before any is waited for */
	t0 = tu_now();
	x.block_first = 1;
	tu_fill(buf, (size_t)NREQ * RLEN, 0, 51);
	for (i = 0; i < NREQ; i++) {
		/* in reverse order, to be sure offsets, not order, place them */
		int k = NREQ - 1 - i;
		iov[k] = (struct iovec){ buf + (size_t)k * RLEN, RLEN };
		rq[k].ctx = &x;
		rq[k].req.op = CLIO_OP_WRITE;
		rq[k].req.offset = (uint64_t)k * RLEN;
		rq[k].req.iov = &iov[k];
		rq[k].req.iovcnt = 1;
		rq[k].req.done = async_done;
		rq[k].req.priv = &rq[k];
		rq[k].req.result = 12345;
		assert_int_equal(clio_dev_submit(d, &rq[k].req), 0);
	}
	async_wait(&x, NREQ);
	wall = tu_now() - t0;
	print_message("  %d writes completed on %d threads, overlap %s\n",
		      NREQ, x.nthreads, x.overlap_seen ? "seen" : "NOT seen");
	assert_true(x.overlap_seen);
	assert_true(x.nthreads >= 2);
	assert_int_equal(x.calls_total, NREQ);
	for (i = 0; i < NREQ; i++) {
		assert_int_equal(rq[i].calls, 1);
		assert_int_equal(rq[i].req.result, RLEN);
	}
	file_has(path, 0, (size_t)NREQ * RLEN, 51);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.writes, NREQ);
	assert_true(st.back.busy_s > 0 && st.back.busy_s <= wall + 0.01);

	/* reads, with a flush among them */
	memset(&x.threads, 0, sizeof(x.threads));
	x.done = x.calls_total = x.nthreads = 0;
	x.block_first = 0;
	memset(rd, 0, (size_t)NREQ * RLEN);
	for (i = 0; i < NREQ; i++) {
		iov[i] = (struct iovec){ rd + (size_t)i * RLEN, RLEN };
		rq[i].calls = 0;
		rq[i].req.op = i == NREQ / 2 ? CLIO_OP_FLUSH : CLIO_OP_READ;
		rq[i].req.iov = i == NREQ / 2 ? NULL : &iov[i];
		rq[i].req.iovcnt = i == NREQ / 2 ? 0 : 1;
		rq[i].req.result = 12345;
		assert_int_equal(clio_dev_submit(d, &rq[i].req), 0);
	}
	async_wait(&x, NREQ);
	for (i = 0; i < NREQ; i++) {
		assert_int_equal(rq[i].calls, 1);
		if (i == NREQ / 2) {
			assert_int_equal(rq[i].req.result, 0);
			continue;
		}
		assert_int_equal(rq[i].req.result, RLEN);
		assert_int_equal(tu_check(rd + (size_t)i * RLEN, RLEN,
					  (uint64_t)i * RLEN, 51), -1);
	}
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.reads, NREQ - 1);
	assert_int_equal(st.back.flushes, 1);
	clio_dev_close(d);

	/* an inline backend calls back before submit returns */
	d = tu_dev_open("fault:read=EIO,offset=0,length=1@mem:size=1M", 0);
	x.done = 0;
	rq[0].calls = 0;
	rq[0].req.op = CLIO_OP_READ;
	rq[0].req.offset = 0;
	rq[0].req.iov = &iov[0];
	rq[0].req.iovcnt = 1;
	rq[0].req.result = 12345;
	assert_int_equal(clio_dev_submit(d, &rq[0].req), 0);
	assert_int_equal(rq[0].calls, 1);
	assert_int_equal(rq[0].req.result, -EIO);
	/* past the end of a resizable device: it grows */
	rq[0].calls = 0;
	rq[0].req.offset = 2 * MiB;
	rq[0].req.op = CLIO_OP_WRITE;
	assert_int_equal(clio_dev_submit(d, &rq[0].req), 0);
	assert_int_equal(rq[0].calls, 1);
	assert_int_equal(rq[0].req.result, RLEN);
	assert_true(clio_dev_size(d) == 2 * MiB + RLEN);
	clio_dev_close(d);
	/* a request the device refuses gets no callback */
	d = tu_dev_open("sim:preset=ssd,size=1M", 0);
	rq[0].calls = 0;
	assert_int_equal(clio_dev_submit(d, &rq[0].req), -ENOSPC);
	assert_int_equal(rq[0].calls, 0);
	clio_dev_close(d);

	unlink(path);
	pthread_mutex_destroy(&x.m);
	pthread_cond_destroy(&x.cv);
	free(rq);
	free(iov);
	free(buf);
	free(rd);
}

/* ------------------------------------------------------------ engines */

struct many_ctx {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int done;
};

struct many_req {
	struct clio_req req;
	struct iovec iov;
	struct many_ctx *ctx;
	int calls;
};

static void
many_done(struct clio_req *req)
{
	struct many_req *mr = req->priv;

	pthread_mutex_lock(&mr->ctx->m);
	mr->calls++;
	mr->ctx->done++;
	pthread_cond_broadcast(&mr->ctx->cv);
	pthread_mutex_unlock(&mr->ctx->m);
}

/* Submit n requests of one op from this thread, each of len bytes at
 * base + i * stride from buf + i * len, and wait for all of them. */
static void
submit_many(clio_dev *d, struct many_req *rq, int n, enum clio_op op,
	    void *buf, size_t len, uint64_t base, uint64_t stride)
{
	struct many_ctx x;
	int i;

	pthread_mutex_init(&x.m, NULL);
	pthread_cond_init(&x.cv, NULL);
	x.done = 0;
	for (i = 0; i < n; i++) {
		memset(&rq[i], 0, sizeof(rq[i]));
		rq[i].ctx = &x;
		rq[i].iov = (struct iovec){ (char *)buf + (size_t)i * len, len };
		rq[i].req.op = op;
		rq[i].req.offset = base + (uint64_t)i * stride;
		rq[i].req.iov = &rq[i].iov;
		rq[i].req.iovcnt = 1;
		rq[i].req.done = many_done;
		rq[i].req.priv = &rq[i];
		rq[i].req.result = 12345;
		assert_int_equal(clio_dev_submit(d, &rq[i].req), 0);
	}
	pthread_mutex_lock(&x.m);
	while (x.done < n)
		pthread_cond_wait(&x.cv, &x.m);
	pthread_mutex_unlock(&x.m);
	for (i = 0; i < n; i++) {
		assert_int_equal(rq[i].calls, 1);
		assert_int_equal(rq[i].req.result, (ssize_t)len);
	}
	pthread_mutex_destroy(&x.m);
	pthread_cond_destroy(&x.cv);
}

/* The value of key in the device's parameters, or -1. */
static long long
dev_param_num(clio_dev *d, const char *key)
{
	char buf[4096], *p;
	size_t k = strlen(key);

	assert_true(clio_dev_params(d, buf, sizeof(buf)) < (int)sizeof(buf));
	for (p = buf; p != NULL && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (strncmp(p, key, k) == 0 && p[k] == '=')
			return strtoll(p + k + 1, NULL, 10);
	return -1;
}

#define NMANY 256
#define MANY_LEN 4096

static void
test_engines_inflight(void **state)
{
	static const char *const engines[] = { "uring", "threads" };
	struct many_req *rq = calloc(NMANY, sizeof(*rq));
	unsigned char *buf = malloc((size_t)NMANY * MANY_LEN);
	unsigned char *rd = malloc((size_t)NMANY * MANY_LEN);
	char path[256], spec[320];
	struct clio_dev_stats st;
	struct clio_dev_info info;
	size_t e;
	int fd;

	(void)state;
	for (e = 0; e < 2; e++) {
		clio_dev *d;
		long long sqes;

		fd = tu_tmpfile(path, sizeof(path));
		close(fd);
		snprintf(spec, sizeof(spec), "file:%s?qd=64&engine=%s", path,
			 engines[e]);
		d = tu_dev_open(spec, 0);
		assert_int_equal(clio_dev_info(d, &info), 0);
		print_message("  engine=%s: '%s'\n", engines[e], info.engine);
		assert_int_equal(strncmp(info.engine, engines[e],
					 strlen(engines[e])), 0);
		assert_int_equal(info.queue_depth, 64);

		/* 256 writes in flight from one thread, every other one
		 * in reverse order of offsets */
		tu_fill(buf, (size_t)NMANY * MANY_LEN, 0, 71 + e);
		submit_many(d, rq, NMANY, CLIO_OP_WRITE, buf, MANY_LEN, 0, MANY_LEN);
		file_has(path, 0, (size_t)NMANY * MANY_LEN, 71 + e);
		memset(rd, 0, (size_t)NMANY * MANY_LEN);
		submit_many(d, rq, NMANY, CLIO_OP_READ, rd, MANY_LEN, 0, MANY_LEN);
		assert_int_equal(tu_check(rd, (size_t)NMANY * MANY_LEN, 0, 71 + e), -1);
		clio_dev_stats(d, &st);
		assert_int_equal(st.back.writes, NMANY);
		assert_int_equal(st.back.reads, NMANY);
		assert_int_equal(clio_dev_info(d, &info), 0);
		print_message("  engine=%s: %d in flight at most\n", engines[e],
			      (int)info.inflight_peak);
		assert_true(info.inflight_peak >= 2 && info.inflight_peak <= 64);

		/* a flush: through the ring with uring */
		sqes = dev_param_num(d, "ring_sqes");
		assert_true(e == 0 ? sqes >= 2 * NMANY : sqes == -1);
		clio_dev_stats_reset(d);
		assert_int_equal(clio_dev_flush(d), 0);
		clio_dev_stats(d, &st);
		assert_int_equal(st.back.flushes, 1);
		if (e == 0)
			assert_int_equal(dev_param_num(d, "ring_sqes"), sqes + 1);
		/* synchronous reads and writes run in this thread */
		tu_fill(buf, 3 * MANY_LEN, 5, 73);
		assert_int_equal(clio_dev_pwrite(d, buf, 3 * MANY_LEN, 5), 3 * MANY_LEN);
		memset(rd, 0, 3 * MANY_LEN);
		assert_int_equal(clio_dev_pread(d, rd, 3 * MANY_LEN, 5), 3 * MANY_LEN);
		assert_int_equal(tu_check(rd, 3 * MANY_LEN, 5, 73), -1);
		if (e == 0)
			assert_int_equal(dev_param_num(d, "ring_sqes"), sqes + 1);
		clio_dev_stats(d, &st);
		assert_int_equal(st.back.writes, 1);
		assert_int_equal(st.back.reads, 1);
		/* past the end: the rest reads as zeros, asynchronously (a
		 * short count from the ring, then 0) and synchronously */
		memset(rd, 0xee, 2 * MANY_LEN);
		submit_many(d, rq, 1, CLIO_OP_READ, rd, 2 * MANY_LEN,
			    (uint64_t)NMANY * MANY_LEN - 100, 0);
		assert_int_equal(tu_check(rd, 100, (uint64_t)NMANY * MANY_LEN - 100,
					  71 + e), -1);
		assert_int_equal(tu_check_zero(rd + 100, 2 * MANY_LEN - 100), -1);
		memset(rd, 0xee, 2 * MANY_LEN);
		assert_int_equal(clio_dev_pread(d, rd, 2 * MANY_LEN,
						(uint64_t)NMANY * MANY_LEN - 100),
				 2 * MANY_LEN);
		assert_int_equal(tu_check_zero(rd + 100, 2 * MANY_LEN - 100), -1);
		clio_dev_close(d);
		unlink(path);
	}
	free(rq);
	free(buf);
	free(rd);
}

/* A thread that submits writes to the ring and ends before they
 * complete: the kernel cancels what a task leaves in flight when it
 * exits; the engine must start those pieces again, not fail them. */
#define EXIT_NREQ 32
#define EXIT_LEN (256 * 1024)

struct exit_submit {
	clio_dev *d;
	struct async_req ar[EXIT_NREQ];
	struct iovec iov[EXIT_NREQ];
	unsigned char *buf;
};

static void *
exit_submitter(void *arg)
{
	struct exit_submit *es = arg;
	int i;

	for (i = 0; i < EXIT_NREQ; i++)
		assert_int_equal(clio_dev_submit(es->d, &es->ar[i].req), 0);
	return NULL; /* at once, with the writes in flight */
}

static void
test_uring_submitter_exits(void **state)
{
	char path[256], spec[320];
	struct exit_submit es;
	struct async_ctx x;
	pthread_t t;
	int fd, i, round;

	(void)state;
	if (getenv("CLIO_NO_URING") != NULL)
		skip();
	fd = tu_tmpfile(path, sizeof(path));
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s?engine=uring&qd=%d", path, EXIT_NREQ);
	es.d = tu_dev_open(spec, 0);
	assert_int_equal(posix_memalign((void **)&es.buf, 4096, EXIT_NREQ * EXIT_LEN), 0);
	for (round = 0; round < 4; round++) {
		memset(&x, 0, sizeof(x));
		pthread_mutex_init(&x.m, NULL);
		pthread_cond_init(&x.cv, NULL);
		tu_fill(es.buf, EXIT_NREQ * EXIT_LEN, 0, 50 + round);
		for (i = 0; i < EXIT_NREQ; i++) {
			es.iov[i].iov_base = es.buf + (size_t)i * EXIT_LEN;
			es.iov[i].iov_len = EXIT_LEN;
			memset(&es.ar[i], 0, sizeof(es.ar[i]));
			es.ar[i].ctx = &x;
			es.ar[i].req.op = CLIO_OP_WRITE;
			es.ar[i].req.offset = (uint64_t)i * EXIT_LEN;
			es.ar[i].req.iov = &es.iov[i];
			es.ar[i].req.iovcnt = 1;
			es.ar[i].req.done = async_done;
			es.ar[i].req.priv = &es.ar[i];
		}
		assert_int_equal(pthread_create(&t, NULL, exit_submitter, &es), 0);
		pthread_join(t, NULL);
		async_wait(&x, EXIT_NREQ);
		for (i = 0; i < EXIT_NREQ; i++) {
			if (es.ar[i].req.result != EXIT_LEN)
				fail_msg("round %d: write %d of a thread that ended: %zd",
					 round, i, es.ar[i].req.result);
		}
		file_has(path, 0, EXIT_NREQ * EXIT_LEN, 50 + round);
		pthread_mutex_destroy(&x.m);
		pthread_cond_destroy(&x.cv);
	}
	clio_dev_close(es.d);
	free(es.buf);
	unlink(path);
}

static void
test_uring_direct(void **state)
{
	struct many_req *rq = calloc(64, sizeof(*rq));
	unsigned char *ubuf = malloc(64 * KiB), *urd = malloc(64 * KiB);
	char path[256], spec[320], err[256];
	struct clio_dev_info info;
	void *al, *ard;
	clio_dev *d;
	long long sqes;
	int fd, r;

	(void)state;
	assert_int_equal(posix_memalign(&al, 4096, 64 * 16 * KiB), 0);
	assert_int_equal(posix_memalign(&ard, 4096, 64 * 16 * KiB), 0);
	fd = tu_tmpfile(path, sizeof(path));
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s?direct=1&engine=uring&qd=16", path);
	r = clio_dev_open_err(spec, 0, &d, err, sizeof(err));
	if (r < 0) {
		print_message("  O_DIRECT not supported here (%s): skipped\n", err);
		goto out;
	}
	assert_int_equal(clio_dev_info(d, &info), 0);
	assert_string_equal(info.engine, "uring");
	/* 64 aligned 16 KiB writes and reads in flight */
	tu_fill(al, 64 * 16 * KiB, 0, 81);
	submit_many(d, rq, 64, CLIO_OP_WRITE, al, 16 * KiB, 0, 16 * KiB);
	file_has(path, 0, 64 * 16 * KiB, 81);
	memset(ard, 0, 64 * 16 * KiB);
	submit_many(d, rq, 64, CLIO_OP_READ, ard, 16 * KiB, 0, 16 * KiB);
	assert_int_equal(tu_check(ard, 64 * 16 * KiB, 0, 81), -1);
	sqes = dev_param_num(d, "ring_sqes");
	assert_true(sqes >= 128);
	/* unaligned pieces go through the bounce buffer, not the ring */
	tu_fill(ubuf + 1, 10000, 0, 82);
	submit_many(d, rq, 1, CLIO_OP_WRITE, ubuf + 1, 10000, 0, 0);
	assert_int_equal(dev_param_num(d, "ring_sqes"), sqes);
	file_has(path, 0, 10000, 82);
	file_has(path, 10000, 64 * 16 * KiB - 10000, 81);
	memset(urd, 0, 10000);
	submit_many(d, rq, 1, CLIO_OP_READ, urd + 3, 10000, 0, 0);
	assert_int_equal(tu_check(urd + 3, 10000, 0, 82), -1);
	assert_int_equal(dev_param_num(d, "ring_sqes"), sqes);
	/* and synchronous ones in this thread */
	tu_fill(ubuf + 1, 10000, 1000, 84);
	assert_int_equal(clio_dev_pwrite(d, ubuf + 1, 10000, 1000), 10000);
	file_has(path, 0, 1000, 82);
	file_has(path, 1000, 10000, 84);
	memset(urd, 0, 10000);
	assert_int_equal(clio_dev_pread(d, urd + 3, 10000, 1000), 10000);
	assert_int_equal(tu_check(urd + 3, 10000, 1000, 84), -1);
	assert_int_equal(dev_param_num(d, "ring_sqes"), sqes);

	/* an unaligned write that extends the file, then an aligned read
	 * across its end: short from the ring, the rest is zeros */
	tu_fill(ubuf, 3333, 64 * 16 * KiB + 100, 83);
	assert_int_equal(clio_dev_pwrite(d, ubuf, 3333, 64 * 16 * KiB + 100), 3333);
	assert_true(file_size(path) == 64 * 16 * KiB + 3433);
	memset(ard, 0xee, 16 * KiB);
	submit_many(d, rq, 1, CLIO_OP_READ, ard, 16 * KiB, 64 * 16 * KiB, 0);
	assert_int_equal(tu_check((char *)ard + 100, 3333, 64 * 16 * KiB + 100, 83), -1);
	assert_int_equal(tu_check_zero((char *)ard + 3433, 16 * KiB - 3433), -1);
	assert_int_equal(dev_param_num(d, "ring_sqes"), sqes + 1);
	memset(ard, 0xee, 16 * KiB);
	assert_int_equal(clio_dev_pread(d, ard, 16 * KiB, 64 * 16 * KiB), 16 * KiB);
	assert_int_equal(tu_check((char *)ard + 100, 3333, 64 * 16 * KiB + 100, 83), -1);
	assert_int_equal(tu_check_zero((char *)ard + 3433, 16 * KiB - 3433), -1);
	assert_int_equal(clio_dev_flush(d), 0);
	clio_dev_close(d);
out:
	unlink(path);
	free(al);
	free(ard);
	free(ubuf);
	free(urd);
	free(rq);
}

static void
test_uring_fallback(void **state)
{
	char path[256], spec[320], err[256];
	unsigned char buf[8192], rd[8192];
	struct clio_dev_info info;
	clio_dev *d = NULL;
	int fd, r;

	(void)state;
	fd = tu_tmpfile(path, sizeof(path));
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s", path);
	assert_int_equal(setenv("CLIO_NO_URING", "1", 1), 0);
	d = tu_dev_open(spec, 0);
	assert_int_equal(clio_dev_info(d, &info), 0);
	print_message("  CLIO_NO_URING=1: '%s'\n", info.engine);
	assert_string_equal(info.engine, "threads (CLIO_NO_URING=1)");
	assert_int_equal(dev_param_num(d, "ring_sqes"), -1);
	tu_fill(buf, sizeof(buf), 0, 91);
	assert_int_equal(clio_dev_pwrite(d, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_int_equal(clio_dev_pread(d, rd, sizeof(rd), 0), (ssize_t)sizeof(rd));
	assert_int_equal(tu_check(rd, sizeof(rd), 0, 91), -1);
	clio_dev_close(d);
	/* engine=uring given: no fallback, a one-line error naming it */
	snprintf(spec, sizeof(spec), "file:%s?engine=uring", path);
	d = NULL;
	r = clio_dev_open_err(spec, 0, &d, err, sizeof(err));
	print_message("  %s -> %d \"%s\"\n", spec, r, err);
	assert_true(r < 0 && r != -EINVAL);
	assert_null(d);
	assert_non_null(strstr(err, "uring"));
	assert_null(strchr(err, '\n'));
	assert_int_equal(unsetenv("CLIO_NO_URING"), 0);
	/* CLIO_NO_URING=0 does not force it */
	assert_int_equal(setenv("CLIO_NO_URING", "0", 1), 0);
	d = tu_dev_open(spec, 0);
	assert_int_equal(clio_dev_info(d, &info), 0);
	assert_string_equal(info.engine, "uring");
	clio_dev_close(d);
	assert_int_equal(unsetenv("CLIO_NO_URING"), 0);
	snprintf(spec, sizeof(spec), "file:%s?engine=aio", path);
	open_bad(spec, -EINVAL, "aio");
	/* a wrapper runs its inner device synchronously: no ring there */
	snprintf(spec, sizeof(spec), "fault:read=EIO@file:%s", path);
	d = tu_dev_open(spec, 0);
	assert_int_equal(clio_dev_info(d, &info), 0);
	assert_string_equal(info.engine, "threads (the inner device runs synchronously)");
	clio_dev_close(d);
	snprintf(spec, sizeof(spec), "fault:read=EIO@file:%s?engine=uring", path);
	d = NULL;
	r = clio_dev_open_err(spec, 0, &d, err, sizeof(err));
	print_message("  %s -> %d \"%s\"\n", spec, r, err);
	assert_true(r < 0 && r != -EINVAL);
	assert_non_null(strstr(err, "'uring'"));
	unlink(path);
}

/* A request of n iovecs of len bytes each: the back-end writes seen. */
static uint64_t
pieces_of_write(clio_dev *d, unsigned char *buf, int n, size_t len)
{
	struct iovec *iov = calloc((size_t)n, sizeof(*iov));
	unsigned char *rd = malloc((size_t)n * len);
	struct clio_dev_stats st;
	int i;

	tu_fill(buf, (size_t)n * len, 4096, 95);
	for (i = 0; i < n; i++)
		iov[i] = (struct iovec){ buf + (size_t)i * len, len };
	clio_dev_stats_reset(d);
	assert_int_equal(clio_dev_pwritev(d, iov, n, 4096), (ssize_t)((size_t)n * len));
	clio_dev_stats(d, &st);
	memset(rd, 0, (size_t)n * len);
	assert_int_equal(clio_dev_pread(d, rd, (size_t)n * len, 4096),
			 (ssize_t)((size_t)n * len));
	assert_int_equal(tu_check(rd, (size_t)n * len, 4096, 95), -1);
	free(iov);
	free(rd);
	assert_true(st.back.write_bytes == (uint64_t)n * len);
	return st.back.writes;
}

static void
test_one_piece(void **state)
{
	unsigned char *buf = malloc(2 * MiB);
	char path[256], spec[320];
	struct clio_dev_stats st;
	clio_dev *d;
	int fd;

	(void)state;
	/* 1 MiB of 256 4 KiB iovecs: one piece without maxio */
	d = tu_dev_open("mem:size=16M", 0);
	assert_int_equal(pieces_of_write(d, buf, 256, 4 * KiB), 1);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.size_hist[tu_hist_bucket(MiB)], 2); /* and the read */
	/* above DEV_IOV_MAX iovecs: cut there */
	assert_int_equal(pieces_of_write(d, buf, 2048, 512), 2);
	assert_int_equal(pieces_of_write(d, buf, 1024, 512), 1);
	clio_dev_close(d);
	/* and four with maxio=256K */
	d = tu_dev_open("mem:size=16M,maxio=256K", 0);
	assert_int_equal(pieces_of_write(d, buf, 256, 4 * KiB), 4);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.size_hist[tu_hist_bucket(256 * KiB)], 8);
	clio_dev_close(d);
	/* the same on files, through both engines */
	fd = tu_tmpfile(path, sizeof(path));
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s?engine=uring", path);
	d = tu_dev_open(spec, 0);
	assert_int_equal(pieces_of_write(d, buf, 256, 4 * KiB), 1);
	clio_dev_close(d);
	snprintf(spec, sizeof(spec), "file:%s?engine=threads", path);
	d = tu_dev_open(spec, 0);
	assert_int_equal(pieces_of_write(d, buf, 256, 4 * KiB), 1);
	clio_dev_close(d);
	snprintf(spec, sizeof(spec), "file:%s?engine=uring&maxio=256K", path);
	d = tu_dev_open(spec, 0);
	assert_int_equal(pieces_of_write(d, buf, 256, 4 * KiB), 4);
	clio_dev_close(d);
	unlink(path);
	free(buf);
}

/* ------------------------------------------------------------ front */

/* more threads than owned slots (DEV_FRONT_SLOTS): some share the last */
#define FRONT_THREADS 24
#define FRONT_CALLS 20000

static void *
front_worker(void *arg)
{
	clio_dev *d = arg;
	int k;

	for (k = 0; k < FRONT_CALLS; k++)
		dev_account_front(d, k % 2 ? CLIO_OP_WRITE : CLIO_OP_READ,
				  (size_t)4096 * (k % 4 + 1),
				  (double)(k % 8) / 1024.0);
	return NULL;
}

static void
test_front_threads(void **state)
{
	pthread_t t[FRONT_THREADS];
	struct clio_dev_stats st;
	uint64_t rbytes = 0, wbytes = 0;
	double busy = 0;
	clio_dev *d = tu_dev_open("mem:size=1M", 0);
	int i, k;

	(void)state;
	for (k = 0; k < FRONT_CALLS; k++) {
		if (k % 2)
			wbytes += (uint64_t)4096 * (k % 4 + 1);
		else
			rbytes += (uint64_t)4096 * (k % 4 + 1);
		busy += (double)(k % 8) / 1024.0;
	}
	for (int round = 0; round < 2; round++) {
		/* round 1: new threads in the slots the first ones gave back,
		 * counting on from the sums the reset took as its baseline */
		for (i = 0; i < FRONT_THREADS; i++)
			assert_int_equal(pthread_create(&t[i], NULL, front_worker, d), 0);
		for (i = 0; i < FRONT_THREADS; i++)
			pthread_join(t[i], NULL);
		clio_dev_stats(d, &st);
		assert_int_equal(st.front.reads, FRONT_THREADS * FRONT_CALLS / 2);
		assert_int_equal(st.front.writes, FRONT_THREADS * FRONT_CALLS / 2);
		assert_true(st.front.read_bytes == FRONT_THREADS * rbytes);
		assert_true(st.front.write_bytes == FRONT_THREADS * wbytes);
		/* multiples of 1/1024 add up exactly in any order */
		assert_true(st.front.busy_s == FRONT_THREADS * busy);
		assert_int_equal(tu_hist_total(&st.front), FRONT_THREADS * FRONT_CALLS);
		assert_int_equal(st.front.size_hist[tu_hist_bucket(4096)],
				 FRONT_THREADS * FRONT_CALLS / 4);
		assert_true(st.front.lat_p50_s > 0 && st.front.lat_p50_s <= st.front.lat_p99_s);
		assert_int_equal(st.back.reads + st.back.writes, 0);
		clio_dev_stats_reset(d);
		clio_dev_stats(d, &st);
		assert_int_equal(st.front.reads + st.front.writes, 0);
		assert_true(st.front.busy_s == 0);
		assert_int_equal(tu_hist_total(&st.front), 0);
	}
	clio_dev_close(d);
}

/* ------------------------------------------------------------ statistics */

static void
test_stats(void **state)
{
	char path[256], spec[320];
	unsigned char *buf = malloc(256 * KiB);
	struct clio_dev_stats st;
	uint64_t wbytes = 0, rbytes = 0;
	clio_dev *d;
	int i, fd;

	(void)state;
	fd = tu_tmpfile(path, sizeof(path));
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s", path);
	d = tu_dev_open(spec, 0);
	tu_fill(buf, 256 * KiB, 0, 61);
	for (i = 0; i < 40; i++) {
		size_t len = (size_t)512 << (i % 10);	/* 512 .. 256K */
		assert_int_equal(clio_dev_pwrite(d, buf, len, (uint64_t)i * 256 * KiB),
				 (ssize_t)len);
		wbytes += len;
	}
	for (i = 0; i < 30; i++) {
		size_t len = (size_t)4096 << (i % 3);
		assert_int_equal(clio_dev_pread(d, buf, len, (uint64_t)i * 256 * KiB),
				 (ssize_t)len);
		rbytes += len;
	}
	assert_int_equal(clio_dev_flush(d), 0);
	clio_dev_stats(d, &st);
	print_message("  back: %llu r %llu w, busy %.6f s, p50 %.3g s, p99 %.3g s\n",
		      (unsigned long long)st.back.reads,
		      (unsigned long long)st.back.writes, st.back.busy_s,
		      st.back.lat_p50_s, st.back.lat_p99_s);
	assert_int_equal(st.back.writes, 40);
	assert_int_equal(st.back.reads, 30);
	assert_int_equal(st.back.flushes, 1);
	assert_int_equal(st.back.errors, 0);
	assert_true(st.back.write_bytes == wbytes);
	assert_true(st.back.read_bytes == rbytes);
	assert_true(st.back.busy_s > 0);
	assert_true(st.back.lat_p50_s > 0);
	assert_true(st.back.lat_p50_s <= st.back.lat_p99_s);
	assert_true(st.back.lat_p99_s < 10.0);
	assert_int_equal(tu_hist_total(&st.back), 70);
	for (i = 0; i < 10; i++)
		assert_int_equal(st.back.size_hist[tu_hist_bucket((uint64_t)512 << i)],
				 4 + (i >= 3 && i <= 5 ? 10 : 0));
	/* the direct device calls are no front-end requests */
	assert_int_equal(st.front.reads + st.front.writes, 0);
	clio_dev_stats_reset(d);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.reads + st.back.writes + st.back.flushes, 0);
	assert_true(st.back.read_bytes + st.back.write_bytes == 0);
	assert_true(st.back.busy_s == 0 && st.back.lat_p50_s == 0);
	assert_int_equal(tu_hist_total(&st.back), 0);
	clio_dev_close(d);
	unlink(path);

	/* errors are counted, with their bytes attempted */
	d = tu_dev_open("fault:write=EIO,offset=0,length=1@mem:size=1M", 0);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, 0), -EIO);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, 4096), 4096);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.writes, 2);
	assert_int_equal(st.back.errors, 1);
	clio_dev_close(d);

	/* the virtual clock: busy time is the modelled service time */
	d = tu_dev_open("sim:preset=da2002,overhead=1,rate=50,size=64M", 0);
	{
		double t0 = clio_vclock_now();
		for (i = 0; i < 10; i++)
			assert_int_equal(clio_dev_pwrite(d, buf, 64 * KiB,
							 (uint64_t)i * 64 * KiB), 64 * KiB);
		clio_dev_stats(d, &st);
		/* no rotation: 1 ms + 64K / 50 MB/s each */
		assert_true(fabs(st.back.busy_s - 10 * (1e-3 + 65536 / 50e6)) < 1e-4);
		assert_true(fabs((clio_vclock_now() - t0) - st.back.busy_s) < 1e-4);
		assert_true(st.back.lat_p50_s > 1e-3 && st.back.lat_p50_s < 4e-3);
		assert_true(st.back.lat_p50_s <= st.back.lat_p99_s);
	}
	clio_dev_close(d);
	free(buf);
}

/* The latency sums: serial synchronous transfers on the virtual clock
 * take exactly the time that passed, reads and writes apart. */
static void
test_latency_sums(void **state)
{
	clio_dev *d = tu_dev_open("sim:preset=da2002,size=64M", 0);
	static unsigned char buf[65536];
	struct clio_dev_stats st;
	double t0, t1, t2;
	int i;

	(void)state;
	clio_dev_stats_reset(d);
	t0 = clio_vclock_now();
	for (i = 0; i < 20; i++)
		assert_int_equal(clio_dev_pread(d, buf, sizeof(buf),
						(uint64_t)i * 1048576), (ssize_t)sizeof(buf));
	t1 = clio_vclock_now();
	for (i = 0; i < 10; i++)
		assert_int_equal(clio_dev_pwrite(d, buf, 4096, (uint64_t)i * 8192),
				 4096);
	t2 = clio_vclock_now();
	clio_dev_stats(d, &st);
	print_message("  20 reads: %.6f s (clock %.6f), 10 writes: %.6f s (clock %.6f)\n",
		      st.back.read_time_s, t1 - t0, st.back.write_time_s, t2 - t1);
	assert_true(st.back.read_time_s > 0 && st.back.write_time_s > 0);
	assert_true(fabs(st.back.read_time_s - (t1 - t0)) < 1e-9);
	assert_true(fabs(st.back.write_time_s - (t2 - t1)) < 1e-9);
	assert_true(fabs(st.front.read_time_s) < 1e-12); /* no front calls */
	clio_dev_close(d);
}

/* ------------------------------------------------------------ callbacks */

/* A callback device over a memory buffer: what it saw, what it fails. */
struct cbmem {
	unsigned char *data;
	size_t size;
	pthread_mutex_t lock;
	int writes, largest_write, flushes, closes;
	int fail_writes; /* -errno for every write, or 0 */
	const void *last_buf; /* the buffer of the last call */
};

static int
cbmem_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct cbmem *m = arg;

	if (off + len > m->size)
		return -EIO;
	memcpy(buf, m->data + off, len);
	pthread_mutex_lock(&m->lock);
	m->last_buf = buf;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static int
cbmem_pwrite(void *arg, const void *buf, size_t len, uint64_t off)
{
	struct cbmem *m = arg;
	int r = 0;

	pthread_mutex_lock(&m->lock);
	if (m->fail_writes != 0 || off + len > m->size) {
		r = m->fail_writes != 0 ? m->fail_writes : -EIO;
	} else {
		memcpy(m->data + off, buf, len);
		m->last_buf = buf;
		m->writes++;
		if ((int)len > m->largest_write)
			m->largest_write = (int)len;
	}
	pthread_mutex_unlock(&m->lock);
	return r;
}

static int
cbmem_flush(void *arg)
{
	struct cbmem *m = arg;

	pthread_mutex_lock(&m->lock);
	m->flushes++;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static void
cbmem_close(void *arg)
{
	((struct cbmem *)arg)->closes++;
}

static const struct clio_dev_callbacks cbmem_ops = {
	cbmem_pread, cbmem_pwrite, cbmem_flush, cbmem_close
};

static void
test_callbacks(void **state)
{
	struct cbmem m = { .size = 4 * MiB };
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	struct clio_dev_info info;
	unsigned char *src = malloc(m.size), *back = malloc(m.size);
	clio_cache *c;
	clio_file *f;
	clio_dev *d;
	size_t i;

	(void)state;
	m.data = calloc(1, m.size);
	assert_non_null(src);
	assert_non_null(back);
	assert_non_null(m.data);
	pthread_mutex_init(&m.lock, NULL);
	for (i = 0; i < m.size; i++)
		src[i] = (unsigned char)(i * 7 + i / 4096);

	assert_int_equal(clio_dev_open_callbacks("x", m.size, 3, 0, &cbmem_ops, &m, 4, &d),
			 -EINVAL);
	assert_int_equal(clio_dev_open_callbacks("x", m.size, 512, 0, NULL, &m, 4, &d),
			 -EINVAL);
	assert_int_equal(m.closes, 0);
	assert_int_equal(clio_dev_open_callbacks("cbmem", m.size, 512, 256 * KiB,
						 &cbmem_ops, &m, 4, &d), 0);
	assert_string_equal(clio_dev_name(d), "cbmem");
	assert_int_equal(clio_dev_info(d, &info), 0);
	assert_string_equal(info.type, "callback");
	assert_int_equal(info.size, m.size);
	assert_int_equal(info.maxio, 256 * KiB);
	assert_int_equal(info.queue_depth, 4);
	assert_false(info.readonly);

	/* 1 KiB writes through the cache reach the callback as clusters */
	conf.flusher = 0;
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	assert_int_equal(clio_open(c, d, CLIO_RDWR, &f), 0);
	for (i = 0; i < m.size; i += 1024)
		assert_int_equal(clio_pwrite(f, src + i, 1024, i), 1024);
	assert_int_equal(clio_fsync(f), 0);
	assert_memory_equal(m.data, src, m.size);
	print_message("  4096 writes of 1 KiB: %d callback writes, the largest %d bytes, "
		      "%d flushes\n", m.writes, m.largest_write, m.flushes);
	assert_true(m.flushes >= 1);
	assert_true(m.writes <= 64);
	assert_true(m.largest_write > (int)conf.bsize);
	assert_true(m.largest_write <= 256 * (int)KiB);
	assert_int_equal(clio_pread(f, back, m.size, 0), (ssize_t)m.size);
	assert_memory_equal(back, src, m.size);

	/* iovecs end to end in memory reach the callback in place, in one
	 * call; others through a copy, the data the same */
	{
		unsigned char *two = malloc(64 * KiB);
		struct iovec flat[4], apart[2];
		int k, w = m.writes;

		assert_non_null(two);
		for (k = 0; k < 4; k++)
			flat[k] = (struct iovec){ two + k * 16 * KiB, 16 * KiB };
		assert_int_equal(clio_dev_preadv(d, flat, 4, 128 * KiB), 64 * KiB);
		assert_ptr_equal(m.last_buf, two);
		assert_memory_equal(two, src + 128 * KiB, 64 * KiB);
		memset(two, 0xa5, 64 * KiB);
		assert_int_equal(clio_dev_pwritev(d, flat, 4, 256 * KiB), 64 * KiB);
		assert_ptr_equal(m.last_buf, two);
		assert_int_equal(m.writes, w + 1);
		assert_int_equal(m.data[256 * KiB + 64 * KiB - 1], 0xa5);
		/* the halves swapped: not end to end */
		apart[0] = (struct iovec){ two + 32 * KiB, 32 * KiB };
		apart[1] = (struct iovec){ two, 32 * KiB };
		assert_int_equal(clio_dev_preadv(d, apart, 2, 64 * KiB), 64 * KiB);
		assert_true(m.last_buf != two && m.last_buf != two + 32 * KiB);
		assert_memory_equal(two + 32 * KiB, src + 64 * KiB, 32 * KiB);
		assert_memory_equal(two, src + 96 * KiB, 32 * KiB);
		assert_int_equal(clio_dev_pwritev(d, flat, 4, 256 * KiB), 64 * KiB);
		assert_memory_equal(m.data + 256 * KiB, two, 64 * KiB);
		memcpy(m.data + 256 * KiB, src + 256 * KiB, 64 * KiB);
		free(two);
	}

	/* a callback's error reaches clio_fsync, and nothing is lost on it */
	m.fail_writes = -ENOSPC;
	assert_int_equal(clio_pwrite(f, src, 4096, 8192), 4096);
	assert_int_equal(clio_fsync(f), -ENOSPC);
	m.fail_writes = 0;
	assert_int_equal(clio_close(f), 0);
	clio_cache_free(c);
	assert_int_equal(m.closes, 0);
	assert_int_equal(clio_dev_close(d), 0);
	assert_int_equal(m.closes, 1);

	/* no pwrite: read-only; no flush: a flush is 0 */
	{
		struct clio_dev_callbacks ro = { cbmem_pread, NULL, NULL, NULL };
		unsigned char b[4096];

		assert_int_equal(clio_dev_open_callbacks(NULL, m.size, 0, 0, &ro, &m, 0, &d), 0);
		assert_string_equal(clio_dev_name(d), "callback");
		assert_int_equal(clio_dev_info(d, &info), 0);
		assert_true(info.readonly);
		assert_int_equal(clio_dev_pread(d, b, sizeof(b), 4096), (ssize_t)sizeof(b));
		assert_memory_equal(b, src + 4096, sizeof(b));
		assert_true(clio_dev_pwrite(d, b, sizeof(b), 0) < 0);
		assert_int_equal(clio_dev_flush(d), 0);
		clio_dev_close(d);
	}
	pthread_mutex_destroy(&m.lock);
	free(m.data);
	free(src);
	free(back);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_other),
		cmocka_unit_test(test_parse_kv),
		cmocka_unit_test(test_uri_query),
		cmocka_unit_test(test_fast_clock),
		cmocka_unit_test(test_dev_strings),
		cmocka_unit_test(test_dev_limits),
		cmocka_unit_test(test_mem_backend),
		cmocka_unit_test(test_discard_zeroes),
		cmocka_unit_test(test_file_backend),
		cmocka_unit_test(test_file_max_size),
		cmocka_unit_test(test_fault_ranges),
		cmocka_unit_test(test_fault_prob),
		cmocka_unit_test(test_fault_short),
		cmocka_unit_test(test_maxio_split),
		cmocka_unit_test(test_async_submit),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_latency_sums),
		cmocka_unit_test(test_engines_inflight),
		cmocka_unit_test(test_uring_direct),
		cmocka_unit_test(test_uring_submitter_exits),
		cmocka_unit_test(test_uring_fallback),
		cmocka_unit_test(test_one_piece),
		cmocka_unit_test(test_front_threads),
		cmocka_unit_test(test_callbacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
