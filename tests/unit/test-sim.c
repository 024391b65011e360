/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-sim.c - the simulated disk: each preset against the seed figures it
 * was calibrated on, data integrity, sparse storage, the parser's errors,
 * and the real clock.
 *
 * Virtual-clock experiments measure differences of clio_vclock_now() (or
 * the requests' t_done); they take milliseconds of real time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clio.h"
#include "internal.h"

size_t sim_allocated_bytes(clio_dev *d); /* lib/dev/sim.c */

#define KiB (1u << 10)
#define MiB (1u << 20)

static const char zeros[1 << 20];

static clio_dev *
open_ok(const char *spec)
{
	char err[256];
	clio_dev *d = NULL;
	int r = clio_dev_open_err(spec, 0, &d, err, sizeof(err));

	if (r != 0)
		print_message("open %s: %d %s\n", spec, r, err);
	assert_int_equal(r, 0);
	assert_non_null(d);
	return d;
}

static void
in_range(const char *what, double x, double lo, double hi)
{
	print_message("  %-40s %12.4f  [%g, %g]\n", what, x, lo, hi);
	assert_true(x >= lo && x <= hi);
}

static void
count_done(struct clio_req *req)
{
	(*(size_t *)req->priv)++;
}

/*
 * Submit n writes of len zero bytes at consecutive offsets, all at the
 * same instant (a full queue), and return the seconds from submission to
 * the last completion.  The clock is then advanced as a waiter would.
 */
static double
queued_writes(clio_dev *d, size_t len, size_t n)
{
	struct clio_req *reqs = calloc(n, sizeof(*reqs));
	struct iovec v = { (void *)zeros, len };
	double t0 = clio_vclock_now(), last = t0;
	size_t i, done = 0;

	assert_non_null(reqs);
	for (i = 0; i < n; i++) {
		reqs[i].op = CLIO_OP_WRITE;
		reqs[i].offset = (uint64_t)i * len;
		reqs[i].iov = &v;
		reqs[i].iovcnt = 1;
		reqs[i].done = count_done;
		reqs[i].priv = &done;
		assert_int_equal(clio_dev_submit(d, &reqs[i]), 0);
	}
	assert_int_equal(done, n); /* a virtual device completes inline */
	assert_true(clio_vclock_now() == t0); /* nobody waited */
	for (i = 0; i < n; i++) {
		assert_int_equal(reqs[i].result, (ssize_t)len);
		if (reqs[i].t_done > last)
			last = reqs[i].t_done;
	}
	free(reqs);
	vclock_advance_to(last);
	return last - t0;
}

/* n synchronous reads of len bytes from off on; returns virtual seconds. */
static double
seq_reads(clio_dev *d, size_t len, size_t n, uint64_t off)
{
	char *buf = malloc(len);
	double t0 = clio_vclock_now();
	size_t i;

	assert_non_null(buf);
	for (i = 0; i < n; i++)
		assert_int_equal(clio_dev_pread(d, buf, len, off + i * len),
				 (ssize_t)len);
	free(buf);
	return clio_vclock_now() - t0;
}

static double
wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ presets */

/* Seed 000: dd bs=1M count=86 from /dev/zero, 16K vs 64K clusters. */
static void
test_rz25_calibration(void **state)
{
	clio_dev *d;
	double t16, t64;

	(void)state;
	d = open_ok("sim:preset=rz25");
	assert_int_equal(clio_dev_size(d), 426ull << 20);
	assert_int_equal(clio_dev_maxio(d), 64 * KiB);
	t16 = queued_writes(d, 16 * KiB, 5504);
	/* 86 MiB of zeros cost no memory */
	assert_int_equal(sim_allocated_bytes(d), 0);
	clio_dev_close(d);

	d = open_ok("sim:preset=rz25");
	t64 = queued_writes(d, 64 * KiB, 1376);
	clio_dev_close(d);

	in_range("rz25 86 MiB in 16K writes (s), seed 105", t16, 105 * 0.85,
		 105 * 1.15);
	in_range("rz25 86 MiB in 64K writes (s), seed 52", t64, 52 * 0.85,
		 52 * 1.15);
	in_range("rz25 ratio, seed 2.02", t16 / t64, 1.8, 2.25);
}

/* Without a write cache each back-to-back write waits most of a turn;
 * sequential reads ride the drive's read-ahead instead. */
static void
test_rz25_turns_and_readahead(void **state)
{
	clio_dev *d = open_ok("sim:preset=rz25");
	char buf[8192];
	double t0, tw, tr;
	int i;

	(void)state;
	memset(buf, 0, sizeof(buf));
	t0 = clio_vclock_now();
	for (i = 0; i < 200; i++)
		assert_int_equal(clio_dev_pwrite(d, buf, sizeof(buf),
						 (uint64_t)i * sizeof(buf)),
				 (ssize_t)sizeof(buf));
	tw = (clio_vclock_now() - t0) / 200;
	/* one turn (11.11 ms) + 16 sectors (3.1 ms) + track switches */
	in_range("rz25 sync 8K write (ms)", tw * 1e3, 14.0, 15.5);

	tr = seq_reads(d, sizeof(buf), 200, 1 * MiB) / 200;
	/* close to the media rate: 16 sectors + switches, 3.1-3.6 ms */
	in_range("rz25 sync 8K read (ms)", tr * 1e3, 3.0, 3.8);
	clio_dev_close(d);
}

/* Seed 001: dd from a raw SATA disk, 55-57 MB/s from bs=16K up. */
static void
test_ad2009_calibration(void **state)
{
	clio_dev *d = open_ok("sim:preset=ad2009");
	double t;

	(void)state;
	assert_int_equal(clio_dev_maxio(d), 64 * KiB);
	t = seq_reads(d, 16 * KiB, 4096, 0);
	in_range("ad2009 16K reads (MB/s)", 64.0 * MiB / t / 1e6, 50, 60);
	t = seq_reads(d, 64 * KiB, 1024, 64 * MiB);
	in_range("ad2009 64K reads (MB/s)", 64.0 * MiB / t / 1e6, 50, 60);
	t = seq_reads(d, 1 * MiB, 64, 128 * MiB); /* split at maxio */
	in_range("ad2009 1M reads (MB/s)", 64.0 * MiB / t / 1e6, 50, 60);
	/* "8K: firmware can't keep up and rate drops to 37MB/S" */
	t = seq_reads(d, 8 * KiB, 8192, 192 * MiB);
	in_range("ad2009 8K reads (MB/s), seed 37", 64.0 * MiB / t / 1e6, 33,
		 41);
	clio_dev_close(d);
}

/* Seed 002: read-before-write rewrite, reads ahead of writes. */
static void
test_da2002_calibration(void **state)
{
	clio_dev *d = open_ok("sim:preset=da2002");
	char *buf = calloc(1, 64 * KiB);
	double t0, t;
	uint64_t k;
	int j;

	(void)state;
	assert_non_null(buf);
	/* after the fix: 64K reads 1 MiB ahead, 64K writes behind */
	t0 = clio_vclock_now();
	for (k = 0; k < 1000; k++) {
		assert_int_equal(clio_dev_pread(d, buf, 64 * KiB,
						MiB + k * 64 * KiB),
				 64 * KiB);
		assert_int_equal(clio_dev_pwrite(d, buf, 64 * KiB, k * 64 * KiB),
				 64 * KiB);
	}
	t = clio_vclock_now() - t0;
	in_range("da2002 64K r/w (tps), seed 434", 2000 / t, 400, 470);

	/* before: eight 8K reads for each 64K write */
	t0 = clio_vclock_now();
	for (k = 0; k < 500; k++) {
		for (j = 0; j < 8; j++)
			assert_int_equal(
				clio_dev_pread(d, buf, 8 * KiB,
					       MiB + k * 64 * KiB + (uint64_t)j * 8 * KiB),
				8 * KiB);
		assert_int_equal(clio_dev_pwrite(d, buf, 64 * KiB, k * 64 * KiB),
				 64 * KiB);
	}
	t = clio_vclock_now() - t0;
	in_range("da2002 8x8K r + 64K w (tps), seed 813", 4500 / t, 750, 880);
	free(buf);
	clio_dev_close(d);
}

/* Seed 003: raw dd from an IDE disk, 32K and 2K transfers. */
static void
test_wd1999_calibration(void **state)
{
	clio_dev *d = open_ok("sim:preset=wd1999");
	char buf[4096];
	double t, t0;
	uint64_t x = 12345;
	int i;

	(void)state;
	t = seq_reads(d, 32 * KiB, 1000, 0);
	in_range("wd1999 32K reads (tps), seed 312", 1000 / t, 312 * 0.9,
		 312 * 1.1);
	t = seq_reads(d, 2 * KiB, 8000, 64 * MiB);
	in_range("wd1999 2K reads (tps), seed 3891", 8000 / t, 3891 * 0.9,
		 3891 * 1.1);

	/* random access pays seeks and rotation */
	t0 = clio_vclock_now();
	for (i = 0; i < 200; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		assert_int_equal(clio_dev_pread(d, buf, sizeof(buf),
						(x >> 33) % (1u << 20) * 4096),
				 (ssize_t)sizeof(buf));
	}
	t = (clio_vclock_now() - t0) / 200;
	in_range("wd1999 random 4K read (ms)", t * 1e3, 12, 22);
	clio_dev_close(d);
}

/* DESIGN.md: 4 KiB synchronous reads ~60 MB/s, 1 MiB ~1.3 GB/s. */
static void
test_ssd_calibration(void **state)
{
	clio_dev *d = open_ok("sim:preset=ssd");
	struct iovec v = { (void *)zeros, MiB };
	double t, t0, tw;
	int i;

	(void)state;
	assert_int_equal(clio_dev_maxio(d), MiB);
	assert_int_equal(clio_dev_size(d), 1ull << 30);
	t = seq_reads(d, 4 * KiB, 1000, 0);
	in_range("ssd 4K reads (MB/s)", 4000.0 * KiB / t / 1e6, 55, 65);
	t = seq_reads(d, MiB, 100, 0);
	in_range("ssd 1M reads (MB/s)", 100.0 * MiB / t / 1e6, 1200, 1400);

	/* writes land in the cache at bus speed; flush waits for the media */
	t0 = clio_vclock_now();
	for (i = 0; i < 16; i++)
		assert_int_equal(clio_dev_pwritev(d, &v, 1, (uint64_t)i * MiB),
				 MiB);
	tw = clio_vclock_now() - t0;
	assert_int_equal(clio_dev_flush(d), 0);
	t = clio_vclock_now() - t0;
	in_range("ssd 16 x 1M cached writes (ms)", tw * 1e3, 5, 7.5);
	in_range("ssd ... and flushed (ms), 16M/1.4GB/s", t * 1e3, 11.9, 13);
	clio_dev_close(d);
}

/* A full write cache makes writers wait for the destage. */
static void
test_write_cache_full(void **state)
{
	clio_dev *d = open_ok("sim:preset=ssd,wcache=4M");
	struct iovec v = { (void *)zeros, MiB };
	double t0, t;
	int i;

	(void)state;
	t0 = clio_vclock_now();
	for (i = 0; i < 64; i++)
		assert_int_equal(clio_dev_pwritev(d, &v, 1, (uint64_t)i * MiB),
				 MiB);
	t = clio_vclock_now() - t0;
	/* 60 of the 64 MiB must wait for the media: ~0.75 ms each */
	in_range("ssd 64M through a 4M cache (MB/s)", 64.0 * MiB / t / 1e6,
		 1300, 1550);
	clio_dev_close(d);
}

/* host= is CPU time per command: it moves the shared clock. */
static void
test_host_overhead(void **state)
{
	clio_dev *d = open_ok("sim:preset=ssd,host=1");
	double t;

	(void)state;
	t = seq_reads(d, 4 * KiB, 10, 0);
	in_range("ssd host=1, 10 x 4K reads (ms)", t * 1e3, 10.6, 10.8);
	clio_dev_close(d);
}

/* ------------------------------------------------------------ data */

static void
test_data_roundtrip(void **state)
{
	clio_dev *d = open_ok("sim:preset=ssd,size=4M");
	unsigned char a[3000], b[2000], back[5000], z[5000];
	struct iovec v[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	uint64_t off = 64 * KiB - 1000; /* straddles two chunks */
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(a); i++)
		a[i] = (unsigned char)(i * 7 + 1);
	for (i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)(i * 13 + 5);
	assert_int_equal(clio_dev_pwritev(d, v, 2, off), 5000);
	assert_int_equal(sim_allocated_bytes(d), 2 * 64 * KiB);
	memset(back, 0xee, sizeof(back));
	assert_int_equal(clio_dev_pread(d, back, sizeof(back), off), 5000);
	assert_memory_equal(back, a, sizeof(a));
	assert_memory_equal(back + sizeof(a), b, sizeof(b));

	/* never written: zeros, and reading allocates nothing */
	memset(z, 0, sizeof(z));
	memset(back, 0xee, sizeof(back));
	assert_int_equal(clio_dev_pread(d, back, sizeof(back), 2 * MiB), 5000);
	assert_memory_equal(back, z, sizeof(z));
	/* around the written bytes, in the same chunks: zeros too */
	assert_int_equal(clio_dev_pread(d, back, 1000, off - 1000), 1000);
	assert_memory_equal(back, z, 1000);

	/* zeros onto absent chunks allocate nothing ... */
	assert_int_equal(clio_dev_pwrite(d, zeros, MiB, 3 * MiB), MiB);
	assert_int_equal(sim_allocated_bytes(d), 2 * 64 * KiB);
	/* ... and onto present ones overwrite */
	assert_int_equal(clio_dev_pwrite(d, zeros, 5000, off), 5000);
	assert_int_equal(clio_dev_pread(d, back, sizeof(back), off), 5000);
	assert_memory_equal(back, z, sizeof(z));

	/* the last byte of the device */
	assert_int_equal(clio_dev_pwrite(d, "x", 1, 4 * MiB - 1), 1);
	assert_int_equal(clio_dev_pread(d, back, 2, 4 * MiB - 2), 2);
	assert_int_equal(back[0], 0);
	assert_int_equal(back[1], 'x');
	assert_int_equal(clio_dev_pread(d, back, 2, 4 * MiB - 1), -EINVAL);
	clio_dev_close(d);
}

/* dd if=/dev/zero bs=1M count=86 onto the disk: no memory. */
static void
test_zero_writes_allocate_nothing(void **state)
{
	clio_dev *d = open_ok("sim:preset=rz25");
	int i;

	(void)state;
	for (i = 0; i < 86; i++)
		assert_int_equal(clio_dev_pwrite(d, zeros, MiB, (uint64_t)i * MiB),
				 MiB);
	assert_int_equal(sim_allocated_bytes(d), 0);
	assert_int_equal(clio_dev_pwrite(d, "\1", 1, 5 * MiB + 3), 1);
	assert_int_equal(sim_allocated_bytes(d), 64 * KiB);
	clio_dev_close(d);
}

/* ------------------------------------------------------------ strings */

static void
test_open_strings(void **state)
{
	clio_dev *d;

	(void)state;
	d = open_ok("sim:preset=rz25,size=256M");
	assert_string_equal(clio_dev_name(d), "sim:preset=rz25,size=256M");
	assert_int_equal(clio_dev_size(d), 256u * MiB);
	assert_int_equal(clio_dev_sector_size(d), 512);
	assert_true(clio_dev_is_virtual(d));
	clio_dev_close(d);

	/* no preset: the ssd; parameters apply whatever their order */
	d = open_ok("sim:");
	assert_string_equal(clio_dev_name(d), "sim:");
	assert_int_equal(clio_dev_size(d), 1ull << 30);
	assert_int_equal(clio_dev_maxio(d), MiB);
	clio_dev_close(d);
	d = open_ok("sim:maxio=128K,preset=wd1999,clock=virtual");
	assert_int_equal(clio_dev_maxio(d), 128 * KiB);
	assert_int_equal(clio_dev_size(d), 4ull << 30);
	clio_dev_close(d);

	/* a disk from explicit parameters only */
	d = open_ok("sim:rpm=7200,spt=500,heads=2,skew=20,overhead=0.5,"
		    "bus=100,ra=0,wcache=0,size=100M,maxio=256K");
	assert_int_equal(clio_dev_size(d), 100u * MiB);
	clio_dev_close(d);
}

static void
test_bad_strings(void **state)
{
	static const struct {
		const char *spec, *needle;
	} bad[] = {
		{ "sim:foo=1", "'foo'" },
		{ "sim:preset=rz25,foo", "'foo'" },
		{ "sim:size=12Q", "'12Q'" },
		{ "sim:preset=xyz", "'xyz'" },
		{ "sim:preset=", "''" },
		{ "sim:preset=rz25,preset=ssd", "'preset' given twice" },
		{ "sim:rpm=5400,rpm=7200", "'rpm' given twice" },
		{ "sim:clock=sometimes", "'sometimes'" },
		{ "sim:rpm=fast", "'fast'" },
		{ "sim:overhead=-1", "'-1'" },
		{ "sim:rate=nan", "'nan'" },
		{ "sim:spt=1.5", "'1.5'" },
		{ "sim:size=1000", "1000" },
		{ "sim:size=0", "size" },
		{ "sim:size=2T", "size" },
		{ "sim:maxio=1000", "1000" },
		{ "sim:preset=rz25,skew=57", "57" },
		{ "sim:rpm=5400,spt=0", "spt" },
		{ "sim:rate=0", "rate" },
		{ "sim:qd=0", "qd" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256] = "";
		clio_dev *d = NULL;
		int r = clio_dev_open_err(bad[i].spec, 0, &d, err, sizeof(err));

		print_message("  %-32s -> %d %s\n", bad[i].spec, r, err);
		assert_int_equal(r, -EINVAL);
		assert_null(d);
		assert_non_null(strstr(err, bad[i].needle));
		assert_non_null(strstr(err, "sim:"));
		assert_null(strchr(err, '\n'));
	}
}

/* ------------------------------------------------------------ real clock */

static void
test_real_clock(void **state)
{
	clio_dev *d = open_ok("sim:preset=ssd,clock=real,overhead=20");
	char buf[4096];
	double v0 = clio_vclock_now(), t0, t;
	int i;

	(void)state;
	assert_false(clio_dev_is_virtual(d));
	t0 = wall_now();
	for (i = 0; i < 5; i++)
		assert_int_equal(clio_dev_pread(d, buf, sizeof(buf), 0),
				 (ssize_t)sizeof(buf));
	t = wall_now() - t0;
	in_range("real clock: 5 x 20 ms commands (s)", t, 0.099, 0.25);

	/* queued commands are served one after another */
	t0 = wall_now();
	assert_int_equal(clio_dev_pwrite(d, "abc", 3, 100), 3);
	assert_int_equal(clio_dev_flush(d), 0);
	t = wall_now() - t0;
	in_range("real clock: write + flush (s)", t, 0.039, 0.15);
	assert_int_equal(clio_dev_pread(d, buf, 3, 100), 3);
	assert_memory_equal(buf, "abc", 3);
	assert_true(clio_vclock_now() == v0); /* the virtual clock is apart */
	clio_dev_close(d);
}

static void
wake_done(struct clio_req *req)
{
	pthread_mutex_t *m = req->priv;

	pthread_mutex_lock(m);
	req->priv = NULL; /* seen by the waiter under m */
	pthread_mutex_unlock(m);
}

/* Several worker threads, one drive: commands still take turns. */
static void
test_real_clock_queue(void **state)
{
	clio_dev *d = open_ok("sim:preset=ssd,clock=real,overhead=5,qd=4");
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct clio_req reqs[8];
	struct iovec v = { (void *)zeros, 4096 };
	double t0, t;
	int i, left;

	(void)state;
	memset(reqs, 0, sizeof(reqs));
	t0 = wall_now();
	for (i = 0; i < 8; i++) {
		reqs[i].op = CLIO_OP_WRITE;
		reqs[i].offset = (uint64_t)i * 4096;
		reqs[i].iov = &v;
		reqs[i].iovcnt = 1;
		reqs[i].done = wake_done;
		reqs[i].priv = &m;
		assert_int_equal(clio_dev_submit(d, &reqs[i]), 0);
	}
	do {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
		pthread_mutex_lock(&m);
		for (left = 0, i = 0; i < 8; i++)
			left += reqs[i].priv != NULL;
		pthread_mutex_unlock(&m);
	} while (left > 0);
	t = wall_now() - t0;
	in_range("real clock, qd=4: 8 x 5 ms commands (s)", t, 0.0395, 0.2);
	for (i = 0; i < 8; i++)
		assert_int_equal(reqs[i].result, 4096);
	clio_dev_close(d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rz25_calibration),
		cmocka_unit_test(test_rz25_turns_and_readahead),
		cmocka_unit_test(test_ad2009_calibration),
		cmocka_unit_test(test_da2002_calibration),
		cmocka_unit_test(test_wd1999_calibration),
		cmocka_unit_test(test_ssd_calibration),
		cmocka_unit_test(test_write_cache_full),
		cmocka_unit_test(test_host_overhead),
		cmocka_unit_test(test_data_roundtrip),
		cmocka_unit_test(test_zero_writes_allocate_nothing),
		cmocka_unit_test(test_open_strings),
		cmocka_unit_test(test_bad_strings),
		cmocka_unit_test(test_real_clock),
		cmocka_unit_test(test_real_clock_queue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
