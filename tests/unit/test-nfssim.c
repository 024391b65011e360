/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-nfssim.c - the nfs engine over the simulated server (nfs+sim):
 * data written and read back byte for byte (through the device, with a
 * server memory small enough that its pages go to its disk and come back,
 * and through the cache), the RPCs the engine sends by procedure, the
 * virtual time of one WRITE and one GETATTR against the model's formula,
 * clio_dev_version, and the parser's errors.  The random test prints its
 * seed on failure; TEST_SEED=N repeats one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clio.h"
#include "testutil.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define KiB (1u << 10)
#define MiB (1u << 20)

static clio_dev *
open_ok(const char *spec)
{
	char err[256];
	clio_dev *d = NULL;
	int r = clio_dev_open_err(spec, 0, &d, err, sizeof(err));

	if (r != 0)
		print_message("open %s: %d %s\n", spec, r, err);
	assert_int_equal(r, 0);
	return d;
}

/* One counter of the device's parameters ("rpc_write", "disk_reads"). */
static uint64_t
param(clio_dev *d, const char *key)
{
	char buf[8192], k[64];
	const char *p;

	assert_true(clio_dev_params(d, buf, sizeof(buf)) > 0);
	snprintf(k, sizeof(k), "\n%s=", key);
	p = strstr(buf, k);
	assert_non_null(p);
	return strtoull(p + strlen(k), NULL, 10);
}

/* Random writes, reads, flushes and resizes through the device against a
 * shadow copy; the server's memory is its minimum, so pages go to its
 * disk and are read back from it. */
static void
test_roundtrip_device(void **state)
{
	const size_t span = 2 * MiB;
	unsigned seed = getenv("TEST_SEED") ? (unsigned)atoi(getenv("TEST_SEED"))
					    : (unsigned)time(NULL);
	unsigned char *shadow = calloc(1, span), *buf = malloc(256 * KiB);
	uint64_t size = 0;
	clio_dev *d;
	int i;

	(void)state;
	assert_non_null(shadow);
	assert_non_null(buf);
	srandom(seed);
	d = open_ok("nfs+sim:preset=seed2010,mem=64K,max=4M");
	for (i = 0; i < 400; i++) {
		int op = (int)(random() % 10);
		uint64_t off = (uint64_t)random() % span;
		size_t len = 1 + (size_t)random() % (200 * KiB);
		ssize_t n;

		if (off + len > span)
			len = span - off;
		if (op < 5) {
			tu_fill(buf, len, off, seed + (unsigned)i);
			n = clio_dev_pwrite(d, buf, len, off);
			if (n != (ssize_t)len)
				print_message("seed %u: write %zu at %llu: %zd\n", seed, len,
					      (unsigned long long)off, n);
			assert_int_equal(n, (ssize_t)len);
			memcpy(shadow + off, buf, len);
			if (off + len > size)
				size = off + len;
		} else if (op < 8) {
			size_t want;

			if (off >= size)
				continue;
			want = MIN(len, size - off);
			n = clio_dev_pread(d, buf, want, off);
			if (n != (ssize_t)want || memcmp(buf, shadow + off, want) != 0)
				print_message("seed %u: read %zu at %llu: %zd, differs\n", seed,
					      want, (unsigned long long)off, n);
			assert_int_equal(n, (ssize_t)want);
			assert_memory_equal(buf, shadow + off, want);
		} else if (op == 8) {
			assert_int_equal(clio_dev_flush(d), 0);
		} else {
			uint64_t ns = (uint64_t)random() % span;

			assert_int_equal(clio_dev_resize(d, ns), 0);
			if (ns < size)
				memset(shadow + ns, 0, size - ns);
			size = ns;
		}
	}
	/* everything, once more, after a COMMIT */
	assert_int_equal(clio_dev_flush(d), 0);
	assert_int_equal(clio_dev_size(d), size);
	for (uint64_t off = 0; off < size; off += 256 * KiB) {
		size_t want = (size_t)MIN(256 * KiB, size - off);

		assert_int_equal(clio_dev_pread(d, buf, want, off), (ssize_t)want);
		if (memcmp(buf, shadow + off, want) != 0)
			print_message("seed %u: final read at %llu differs\n", seed,
				      (unsigned long long)off);
		assert_memory_equal(buf, shadow + off, want);
	}
	/* the server's memory was too small: its disk held the data */
	assert_true(param(d, "disk_writes") > 0);
	assert_true(param(d, "disk_reads") > 0);
	clio_dev_close(d);
	free(shadow);
	free(buf);
}

/* Through the cache: written, fsynced, closed, forgotten, read back. */
static void
test_roundtrip_cache(void **state)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	const size_t len = 3 * MiB + 12345;
	unsigned char *buf = malloc(len), *back = malloc(len);
	clio_cache *c;
	clio_file *f;
	clio_dev *d;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	tu_fill(buf, len, 0, 42);
	conf.flusher = 0;
	d = open_ok("nfs+sim:preset=seed2010");
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	assert_int_equal(clio_open(c, d, CLIO_RDWR, &f), 0);
	for (size_t off = 0; off < len; off += 8 * KiB) {
		size_t n = MIN(8 * KiB, len - off);

		assert_int_equal(clio_pwrite(f, buf + off, n, off), (ssize_t)n);
	}
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_forget(c, d), 0);
	assert_true(param(d, "rpc_commit") >= 1);
	/* clustered: 64 KiB WRITEs, not one per 8 KiB write */
	assert_int_equal(param(d, "rpc_write"), DIV_ROUND_UP(len, 64 * KiB));
	assert_int_equal(clio_open(c, d, CLIO_RDONLY, &f), 0);
	memset(back, 0, len);
	assert_int_equal(clio_pread(f, back, len, 0), (ssize_t)len);
	assert_memory_equal(back, buf, len);
	assert_true(param(d, "rpc_read") >= DIV_ROUND_UP(len, 64 * KiB));
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	free(buf);
	free(back);
}

/* The RPCs the engine sends for each call, and their virtual times. */
static void
test_rpcs_and_time(void **state)
{
	const double bw = 11.77e6, rtt = 0.3e-3, cpu = 0.12e-3, copy = 6.6e6;
	const double hdr = 160;
	char buf[64 * KiB];
	struct clio_validator v1, v2, v3;
	clio_dev *d;
	double t0, want;

	(void)state;
	memset(buf, 7, sizeof(buf));
	d = open_ok("nfs+sim:preset=seed2010");
	assert_int_equal(param(d, "rpc_getattr"), 1); /* the open's */
	assert_int_equal(clio_dev_size(d), 0);

	/* one WRITE: up, half the round trip, the server's CPU and copy,
	 * the reply down, the other half */
	t0 = clio_vclock_now();
	assert_int_equal(clio_dev_pwrite(d, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	want = (hdr + sizeof(buf)) / bw + rtt / 2 + cpu + sizeof(buf) / copy + hdr / bw +
	       rtt / 2;
	assert_true(fabs(clio_vclock_now() - t0 - want) < 1e-9);
	assert_int_equal(param(d, "rpc_write"), 1);
	assert_int_equal(param(d, "disk_writes"), 0); /* UNSTABLE: in memory */

	/* a GETATTR costs its round trip */
	t0 = clio_vclock_now();
	assert_int_equal(clio_dev_version(d, &v1), 0);
	want = hdr / bw + rtt / 2 + cpu + hdr / bw + rtt / 2;
	assert_true(fabs(clio_vclock_now() - t0 - want) < 1e-9);
	assert_int_equal(param(d, "rpc_getattr"), 2);
	assert_int_equal(v1.size, sizeof(buf));
	assert_true(v1.id != 0 && v1.mtime_ns != 0);
	assert_int_equal(clio_dev_version(d, &v2), 0);
	assert_memory_equal(&v1, &v2, sizeof(v1)); /* unchanged */

	/* COMMIT writes the dirty pages to the server's disk */
	assert_int_equal(clio_dev_flush(d), 0);
	assert_int_equal(param(d, "rpc_commit"), 1);
	assert_true(param(d, "disk_writes") >= 1);
	/* nothing uncommitted: no COMMIT */
	assert_int_equal(clio_dev_flush(d), 0);
	assert_int_equal(param(d, "rpc_commit"), 1);

	/* a READ of what the server's memory holds: no disk read */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(clio_dev_pread(d, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_int_equal(buf[0], 7);
	assert_int_equal(param(d, "rpc_read"), 1);
	assert_int_equal(param(d, "disk_reads"), 0);

	/* a resize is a SETATTR, and a new version */
	assert_int_equal(clio_dev_resize(d, 1000), 0);
	assert_int_equal(param(d, "rpc_setattr"), 1);
	assert_int_equal(clio_dev_version(d, &v3), 0);
	assert_int_equal(v3.size, 1000);
	assert_true(v3.mtime_ns > v1.mtime_ns);
	clio_dev_close(d);

	/* other devices have no versions */
	d = open_ok("mem:size=1M");
	assert_int_equal(clio_dev_version(d, &v1), -ENOTSUP);
	assert_int_equal(clio_dev_version(NULL, &v1), -EINVAL);
	clio_dev_close(d);
}

static void
test_bad_strings(void **state)
{
	static const char *const bad[] = {
		"nfs+sim:preset=nope", "nfs+sim:rtt=x", "nfs+sim:bw=0", "nfs+sim:qd=0",
		"nfs+sim:qd=999", "nfs+sim:iosize=100", "nfs+sim:disk=nope",
		"nfs+sim:disk=a:b", "nfs+sim:colour=red", "nfs+sim:cpu=-1",
		"nfs+sim:rtt=1e308", "nfs+sim:cpu=60001", "nfs+sim:bw=1e-300",
		"nfs+sim:copy=1e10", "nfs+sim:size=1G,max=1M",
	};
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		clio_dev *d = NULL;
		int r = clio_dev_open_err(bad[i], 0, &d, err, sizeof(err));

		if (r != -EINVAL)
			print_message("%s: %d\n", bad[i], r);
		assert_int_equal(r, -EINVAL);
		assert_non_null(strstr(err, "nfs+sim") ? err : strstr(err, "sim"));
	}
	/* the value given is named; a max below the size given is refused,
	 * the default max grows to a larger size */
	{
		clio_dev *d = NULL;

		assert_int_equal(clio_dev_open_err("nfs+sim:rtt=1e308", 0, &d, err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "'1e308'"));
		assert_int_equal(clio_dev_open_err("nfs+sim:size=1G,max=1M", 0, &d, err,
						   sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "max '1M' is less than size 1073741824"));
		d = open_ok("nfs+sim:size=300M");
		assert_int_equal(clio_dev_size(d), 300 * MiB);
		clio_dev_close(d);
	}
	/* the overrides apply after the preset, in any order */
	{
		clio_dev *d = open_ok("nfs+sim:rtt=5,preset=seed2010,size=1M,disk=ssd");
		char buf[4096];

		assert_int_equal(clio_dev_size(d), MiB);
		assert_true(clio_dev_params(d, buf, sizeof(buf)) > 0);
		assert_non_null(strstr(buf, "\nrtt=5\n"));
		assert_non_null(strstr(buf, "\ndisk=ssd\n"));
		clio_dev_close(d);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_device),
		cmocka_unit_test(test_roundtrip_cache),
		cmocka_unit_test(test_rpcs_and_time),
		cmocka_unit_test(test_bad_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
