/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-cache.c - the buffer cache and its clustering, seen from the
 * device: tunables, read and write clustering, cluster=off and lite, the
 * direct path, discard, read-before-write, write and read faults, writer
 * throttling, the flusher, and many threads on one device.
 *
 * Each test counts what reached the device (clio_dev_stats' back side)
 * and reads the data back byte for byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clio.h"
#include "testutil.h"

#define KiB TU_KiB
#define MiB TU_MiB

static clio_cache *
cache_new(const struct clio_conf *conf)
{
	char err[256];
	clio_cache *c = NULL;

	if (clio_conf_check(conf, err, sizeof(err)) < 0)
		print_message("conf: %s\n", err);
	assert_int_equal(clio_cache_new(conf, &c), 0);
	assert_non_null(c);
	return c;
}

static clio_file *
file_open(clio_cache *c, clio_dev *d, int flags)
{
	clio_file *f = NULL;

	assert_int_equal(clio_open(c, d, flags, &f), 0);
	assert_non_null(f);
	return f;
}

/* Write pattern `seed` over [0, len) of d, bypassing any cache. */
static void
prefill(clio_dev *d, uint64_t len, uint64_t seed)
{
	unsigned char *buf = malloc(MiB);
	uint64_t off;

	for (off = 0; off < len; off += MiB) {
		size_t n = (size_t)(len - off < MiB ? len - off : MiB);
		tu_fill(buf, n, off, seed);
		assert_int_equal(clio_dev_pwrite(d, buf, n, off), (ssize_t)n);
	}
	free(buf);
	clio_dev_stats_reset(d);
}

/* d holds pattern `seed` over [off, off+len) (seed 0: zeros). */
static void
dev_has(clio_dev *d, uint64_t off, uint64_t len, uint64_t seed)
{
	unsigned char *buf = malloc(MiB);
	uint64_t done;

	for (done = 0; done < len; done += MiB) {
		size_t n = (size_t)(len - done < MiB ? len - done : MiB);
		long bad;
		assert_int_equal(clio_dev_pread(d, buf, n, off + done), (ssize_t)n);
		bad = seed ? tu_check(buf, n, off + done, seed)
			   : tu_check_zero(buf, n);
		if (bad >= 0)
			print_message("device differs at %llu\n",
				      (unsigned long long)(off + done + (uint64_t)bad));
		assert_int_equal(bad, -1);
	}
	free(buf);
}

/* ------------------------------------------------------------ conf */

static void
conf_ok(struct clio_conf *conf, const char *k, const char *v)
{
	char err[256] = "";
	int r = clio_conf_set(conf, k, v, err, sizeof(err));

	if (r != 0)
		print_message("conf_set %s=%s: %s\n", k, v, err);
	assert_int_equal(r, 0);
}

static void
conf_same(const struct clio_conf *a, const struct clio_conf *b)
{
	assert_int_equal(a->bsize, b->bsize);
	assert_int_equal(a->maxbsize, b->maxbsize);
	assert_int_equal(a->maxphys, b->maxphys);
	assert_int_equal(a->read_max, b->read_max);
	assert_int_equal(a->seqmax, b->seqmax);
	assert_true(a->cache_size == b->cache_size);
	assert_int_equal(a->dirty_hi, b->dirty_hi);
	assert_int_equal(a->dirty_lo, b->dirty_lo);
	assert_true(a->dirty_age == b->dirty_age);
	assert_int_equal(a->cluster, b->cluster);
	assert_int_equal(a->rbw, b->rbw);
	assert_int_equal(a->write_behind, b->write_behind);
	assert_int_equal(a->queue_depth, b->queue_depth);
	assert_int_equal(a->flusher, b->flusher);
	assert_true(a->flush_behind == b->flush_behind);
}

static void
conf_bad(const char *k, const char *v, const char *names)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS, before = CLIO_CONF_DEFAULTS;
	char err[256] = "";

	assert_int_equal(clio_conf_set(&conf, k, v, err, sizeof(err)), -EINVAL);
	print_message("  %s=%-10s -> \"%s\"\n", k, v, err);
	assert_non_null(strstr(err, names));
	assert_null(strchr(err, '\n'));
	conf_same(&conf, &before); /* nothing changed */
	assert_int_equal(clio_conf_set(&conf, k, v, NULL, 0), -EINVAL);
}

static void
check_bad(const struct clio_conf *conf, const char *names)
{
	char err[256] = "";
	clio_cache *c = NULL;

	assert_int_equal(clio_conf_check(conf, err, sizeof(err)), -EINVAL);
	print_message("  check -> \"%s\"\n", err);
	if (names != NULL)
		assert_non_null(strstr(err, names));
	assert_int_equal(clio_cache_new(conf, &c), -EINVAL);
	assert_null(c);
}

static void
test_conf(void **state)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS, bad;
	char err[256];

	(void)state;
	assert_int_equal(clio_conf_check(&conf, err, sizeof(err)), 0);
	conf_ok(&conf, "bsize", "8k");
	assert_int_equal(conf.bsize, 8192);
	conf_ok(&conf, "maxbsize", "16K");
	assert_int_equal(conf.maxbsize, 16384);
	conf_ok(&conf, "maxphys", "1M");
	assert_int_equal(conf.maxphys, MiB);
	conf_ok(&conf, "read_max", "32");
	assert_int_equal(conf.read_max, 32);
	conf_ok(&conf, "read-max", "16");
	assert_int_equal(conf.read_max, 16);
	conf_ok(&conf, "seqmax", "64");
	assert_int_equal(conf.seqmax, 64);
	conf_ok(&conf, "cache_size", "16M");
	assert_true(conf.cache_size == 16 * MiB);
	conf_ok(&conf, "cache-size", "1G");
	assert_true(conf.cache_size == 1024 * MiB);
	conf_ok(&conf, "dirty_hi", "60");
	conf_ok(&conf, "dirty-lo", "10");
	assert_int_equal(conf.dirty_hi, 60);
	assert_int_equal(conf.dirty_lo, 10);
	conf_ok(&conf, "dirty_age", "0.5");
	assert_true(conf.dirty_age == 0.5);
	conf_ok(&conf, "dirty-age", "2");
	assert_true(conf.dirty_age == 2.0);
	conf_ok(&conf, "cluster", "lite");
	assert_int_equal(conf.cluster, CLIO_CLUSTER_LITE);
	conf_ok(&conf, "cluster", "off");
	assert_int_equal(conf.cluster, CLIO_CLUSTER_OFF);
	conf_ok(&conf, "cluster", "on");
	assert_int_equal(conf.cluster, CLIO_CLUSTER_ON);
	conf_ok(&conf, "rbw", "block");
	assert_int_equal(conf.rbw, CLIO_RBW_BLOCK);
	conf_ok(&conf, "rbw", "cluster");
	assert_int_equal(conf.rbw, CLIO_RBW_CLUSTER);
	conf_ok(&conf, "write-behind", "2");
	assert_int_equal(conf.write_behind, 2);
	conf_ok(&conf, "queue-depth", "8");
	assert_int_equal(conf.queue_depth, 8);
	conf_ok(&conf, "flusher", "0");
	assert_int_equal(conf.flusher, 0);
	conf_ok(&conf, "flush-behind", "64M");
	assert_true(conf.flush_behind == 64ull << 20);
	conf_ok(&conf, "flush_behind", "0");
	assert_true(conf.flush_behind == 0);
	assert_int_equal(clio_conf_check(&conf, err, sizeof(err)), 0);

	conf_bad("bsize", "3000", "3000");
	conf_bad("bsize", "0", "'0'");
	conf_bad("bsize", "2M", "2M");
	conf_bad("maxphys", "12Q", "12Q");
	conf_bad("maxbsize", "-1", "-1");
	conf_bad("cache_size", "1", "'1'");
	conf_bad("cluster", "sideways", "sideways");
	conf_bad("rbw", "maybe", "maybe");
	conf_bad("dirty_age", "-1", "-1");
	conf_bad("dirty-age", "soon", "soon");
	conf_bad("dirty_hi", "101", "101");
	conf_bad("write_behind", "3", "'3'");
	conf_bad("queue_depth", "0", "'0'");
	conf_bad("seqmax", "0", "'0'");
	conf_bad("flusher", "yes", "yes");
	conf_bad("flush_behind", "soon", "soon");
	conf_bad("frobnicate", "1", "frobnicate");

	/* relations */
	bad = (struct clio_conf)CLIO_CONF_DEFAULTS;
	bad.bsize = 65536;
	bad.maxbsize = 16384;
	check_bad(&bad, "16384");
	bad = (struct clio_conf)CLIO_CONF_DEFAULTS;
	bad.dirty_lo = 50;
	bad.dirty_hi = 50;
	check_bad(&bad, "50");
	bad = (struct clio_conf)CLIO_CONF_DEFAULTS;
	bad.cache_size = 4 * bad.bsize;
	check_bad(&bad, "cache_size");
	bad = (struct clio_conf)CLIO_CONF_DEFAULTS;
	bad.bsize = 12288;
	check_bad(&bad, "12288");
	bad = (struct clio_conf)CLIO_CONF_DEFAULTS;
	bad.maxphys = 100000;
	check_bad(&bad, "100000");
	bad = (struct clio_conf)CLIO_CONF_DEFAULTS;
	bad.maxphys = 8192; /* one buffer must fit one transfer */
	check_bad(&bad, "8192");
	bad = (struct clio_conf)CLIO_CONF_DEFAULTS;
	bad.cluster = (enum clio_cluster_mode)7;
	check_bad(&bad, NULL);
	bad = (struct clio_conf)CLIO_CONF_DEFAULTS;
	bad.dirty_age = 0;
	check_bad(&bad, NULL);
}

/* ------------------------------------------------------------ clustering */

#define SEQ_LEN (8 * MiB)	/* the ceiling cases */
#define SHORT_LEN (2 * MiB)	/* exact counts: less will do */

/* Read [0, len) in `chunk`-byte preads and check every byte. */
static void
read_seq(clio_file *f, uint64_t len, size_t chunk, uint64_t seed)
{
	unsigned char *buf = malloc(chunk);
	uint64_t off;

	for (off = 0; off < len; off += chunk) {
		assert_int_equal(clio_pread(f, buf, chunk, off), (ssize_t)chunk);
		if (tu_check(buf, chunk, off, seed) != -1)
			print_message("bad data at %llu\n", (unsigned long long)off);
		assert_int_equal(tu_check(buf, chunk, off, seed), -1);
	}
	/* and EOF */
	assert_int_equal(clio_pread(f, buf, chunk, len), 0);
	free(buf);
}

static void
write_seq(clio_file *f, uint64_t len, size_t chunk, uint64_t seed)
{
	unsigned char *buf = malloc(chunk);
	uint64_t off;

	for (off = 0; off < len; off += chunk) {
		tu_fill(buf, chunk, off, seed);
		assert_int_equal(clio_pwrite(f, buf, chunk, off), (ssize_t)chunk);
	}
	free(buf);
}

static void
print_back(const char *what, const struct clio_dev_stats *st)
{
	print_message("  %-28s back %5llu r %5llu w, %9llu / %9llu bytes; "
		      "front %llu r %llu w\n", what,
		      (unsigned long long)st->back.reads,
		      (unsigned long long)st->back.writes,
		      (unsigned long long)st->back.read_bytes,
		      (unsigned long long)st->back.write_bytes,
		      (unsigned long long)st->front.reads,
		      (unsigned long long)st->front.writes);
}

static struct clio_conf
seq_conf(enum clio_cluster_mode mode, uint32_t maxbsize)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;

	conf.bsize = 8192;
	conf.maxbsize = maxbsize;
	conf.maxphys = 64 * KiB;
	conf.cluster = mode;
	conf.flusher = 0;
	return conf;
}

/* Sequential 1 KiB reads of len bytes: the transfers the device sees. */
static void
seq_read_case(enum clio_cluster_mode mode, uint32_t maxbsize, uint64_t len,
	      struct clio_dev_stats *st)
{
	struct clio_conf conf = seq_conf(mode, maxbsize);
	clio_cache *c = cache_new(&conf);
	clio_dev *d;
	clio_file *f;
	char spec[64];

	snprintf(spec, sizeof(spec), "mem:size=%lluK", (unsigned long long)(len / KiB));
	d = tu_dev_open(spec, 0);	/* mem:size=8192K for 8 MiB */
	prefill(d, len, 71);
	f = file_open(c, d, CLIO_RDONLY);
	read_seq(f, len, KiB, 71);
	clio_dev_stats(d, st);
	assert_true(st->back.read_bytes == len); /* each block once */
	assert_int_equal(st->back.writes, 0);
	assert_int_equal(st->front.reads, len / KiB + 1);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* Sequential 1 KiB writes of len bytes onto an empty device, then fsync. */
static void
seq_write_case(enum clio_cluster_mode mode, uint32_t maxbsize, uint64_t len,
	       struct clio_dev_stats *st)
{
	struct clio_conf conf = seq_conf(mode, maxbsize);
	clio_cache *c = cache_new(&conf);
	clio_dev *d = tu_dev_open("mem:size=0", 0);
	struct clio_cache_stats cs;
	clio_file *f;

	f = file_open(c, d, CLIO_RDWR);
	write_seq(f, len, KiB, 72);
	assert_int_equal(clio_fsize(f), len); /* dirty data counts */
	assert_int_equal(clio_fsync(f), 0);
	clio_dev_stats(d, st);
	clio_cache_stats(c, &cs);
	assert_int_equal(cs.dirty_bytes, 0);
	assert_int_equal(cs.rbw_reads, 0);
	assert_int_equal(st->back.reads, 0);	/* no read-before-write */
	assert_true(st->back.write_bytes == len);
	assert_int_equal(st->back.flushes, 1);
	assert_int_equal(st->front.writes, len / KiB);
	assert_true(clio_dev_size(d) == len);
	dev_has(d, 0, len, 72);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

static void
test_cluster_read(void **state)
{
	struct clio_dev_stats st;

	(void)state;
	seq_read_case(CLIO_CLUSTER_ON, 64 * KiB, SEQ_LEN, &st);
	print_back("read, cluster=on", &st);
	assert_true(st.back.reads <= 140);
	assert_true(st.back.reads >= 128);
	/* mostly 64 KiB transfers */
	assert_true(st.back.size_hist[tu_hist_bucket(64 * KiB)] >= 120);
}

static void
test_cluster_write(void **state)
{
	struct clio_dev_stats st;

	(void)state;
	seq_write_case(CLIO_CLUSTER_ON, 64 * KiB, SEQ_LEN, &st);
	print_back("write, cluster=on", &st);
	assert_true(st.back.writes <= 140);
	assert_true(st.back.size_hist[tu_hist_bucket(64 * KiB)] >= 120);
}

static void
test_cluster_off(void **state)
{
	struct clio_dev_stats st;

	(void)state;
	seq_read_case(CLIO_CLUSTER_OFF, 64 * KiB, SHORT_LEN, &st);
	print_back("read, cluster=off", &st);
	assert_int_equal(st.back.reads, SHORT_LEN / 8192);
	assert_int_equal(st.back.size_hist[tu_hist_bucket(8192)], SHORT_LEN / 8192);
	seq_write_case(CLIO_CLUSTER_OFF, 64 * KiB, SHORT_LEN, &st);
	print_back("write, cluster=off", &st);
	assert_int_equal(st.back.writes, SHORT_LEN / 8192);
	assert_int_equal(st.back.size_hist[tu_hist_bucket(8192)], SHORT_LEN / 8192);
}

static void
test_cluster_lite(void **state)
{
	struct clio_dev_stats st;

	(void)state;
	seq_read_case(CLIO_CLUSTER_LITE, 16 * KiB, SHORT_LEN, &st);
	print_back("read, cluster=lite 16K", &st);
	/* the first miss reads just the block asked for; the rest come in
	 * 16 KiB clusters, never larger */
	assert_true(st.back.reads >= SHORT_LEN / (16 * KiB));
	assert_true(st.back.reads <= SHORT_LEN / (16 * KiB) + 2);
	assert_true(st.back.size_hist[tu_hist_bucket(16 * KiB)] >=
		    SHORT_LEN / (16 * KiB) - 2);
	assert_int_equal(st.back.size_hist[tu_hist_bucket(16 * KiB)] +
			 st.back.size_hist[tu_hist_bucket(8192)], st.back.reads);
	seq_write_case(CLIO_CLUSTER_LITE, 16 * KiB, SHORT_LEN, &st);
	print_back("write, cluster=lite 16K", &st);
	assert_int_equal(st.back.writes, SHORT_LEN / (16 * KiB));
	assert_int_equal(st.back.size_hist[tu_hist_bucket(16 * KiB)],
			 SHORT_LEN / (16 * KiB));
}

/* A read over cached and uncached blocks, which clio_pread copies out in
 * runs of buffers held at once: the cached ones are taken as they are,
 * each uncached one starts a new run; the bytes are the device's, the
 * device reads only what was missing, and the end of the file cuts the
 * read short. */
static void
test_read_runs(void **state)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	const uint64_t bs = 16 * KiB, len = 64 * bs;
	static const uint64_t cached[] = { 0, 2, 3, 7, 8, 9, 40, 63 };
	unsigned char *buf = malloc(len);
	struct clio_dev_stats st;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	size_t i;

	(void)state;
	conf.cluster = CLIO_CLUSTER_OFF;	/* a miss reads its block only */
	c = cache_new(&conf);
	d = tu_dev_open("mem:size=1024K", 0);
	prefill(d, len, 29);
	f = file_open(c, d, CLIO_RDWR);
	/* backwards, so that no read looks sequential */
	for (i = sizeof(cached) / sizeof(cached[0]); i-- > 0;)
		assert_int_equal(clio_pread(f, buf, 100, cached[i] * bs + 5), 100);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.reads, 8);

	/* from inside block 0 to inside block 63 */
	memset(buf, 0, len);
	assert_int_equal(clio_pread(f, buf, len - 1000, 500), (ssize_t)(len - 1000));
	assert_int_equal(tu_check(buf, len - 1000, 500, 29), -1);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.reads, 8 + 64 - 8);

	/* a run that ends at the end of the file, inside a block */
	assert_int_equal(clio_ftruncate(f, 41 * bs + 123), 0);
	memset(buf, 0, len);
	assert_int_equal(clio_pread(f, buf, len, 30 * bs + 7), (ssize_t)(11 * bs + 116));
	assert_int_equal(tu_check(buf, 11 * bs + 116, 30 * bs + 7, 29), -1);
	assert_int_equal(clio_pread(f, buf, 10, 41 * bs + 123), 0);

	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	free(buf);
}

/* What clio_pread_view lent, call by call. */
struct view_log {
	int calls;
	int iovcnt[8];
	int last[8];
	const void *base[8][8];	/* the iovecs' addresses */
	unsigned char *out;	/* the bytes, gathered */
	size_t got;
	int stop_at;		/* return -ECANCELED from this call on (1-based) */
};

static int
log_view(void *arg, const struct iovec *iov, int iovcnt, int last)
{
	struct view_log *vl = arg;
	int i, k = vl->calls++;

	assert_true(k < 8 && iovcnt <= 8);
	vl->iovcnt[k] = iovcnt;
	vl->last[k] = last;
	for (i = 0; i < iovcnt; i++) {
		vl->base[k][i] = iov[i].iov_base;
		memcpy(vl->out + vl->got, iov[i].iov_base, iov[i].iov_len);
		vl->got += iov[i].iov_len;
	}
	return vl->stop_at != 0 && vl->calls >= vl->stop_at ? -ECANCELED : 0;
}

static void
test_pread_view(void **state)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	const uint64_t bs = 16 * KiB;
	unsigned char *out = malloc(8 * bs);
	struct view_log vl;
	struct clio_dev_stats st;
	clio_cache *c;
	clio_dev *d;
	clio_file *f, *g;

	(void)state;
	conf.cluster = CLIO_CLUSTER_OFF;	/* a miss reads its block only */
	conf.cache_size = 32 * bs;		/* runs of 2 buffers */
	c = cache_new(&conf);
	d = tu_dev_open("mem:size=1024K", 0);
	prefill(d, 8 * bs, 31);
	f = file_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_pread(f, out, 1, 3 * bs), 1);
	assert_int_equal(clio_pread(f, out, 1, 2 * bs), 1);
	assert_int_equal(clio_pread(f, out, 1, 0), 1);

	/* blocks 0, 2, 3 cached: runs [0 1] (1 is read before the run is
	 * taken, not cut off), [2 3], [4] (its own miss), one view call each,
	 * only the last one marked last */
	memset(&vl, 0, sizeof(vl));
	vl.out = out;
	assert_int_equal(clio_pread_view(f, 5 * bs - 100, 50, log_view, &vl),
			 (ssize_t)(5 * bs - 100));
	assert_int_equal(vl.calls, 3);
	assert_int_equal(vl.iovcnt[0], 2);
	assert_int_equal(vl.iovcnt[1], 2);
	assert_int_equal(vl.iovcnt[2], 1);
	assert_int_equal(vl.last[0] + vl.last[1], 0);
	assert_int_equal(vl.last[2], 1);
	assert_int_equal(vl.got, 5 * bs - 100);
	assert_int_equal(tu_check(out, vl.got, 50, 31), -1);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.reads, 5);

	/* all cached now: the same memory as before, the cache's buffers,
	 * not copies */
	{
		const void *block2 = vl.base[1][0];

		memset(&vl, 0, sizeof(vl));
		vl.out = out;
		assert_int_equal(clio_pread_view(f, 5 * bs, 0, log_view, &vl),
				 (ssize_t)(5 * bs));
		assert_int_equal(vl.calls, 3);
		assert_ptr_equal(vl.base[1][0], block2);
		assert_int_equal(tu_check(out, vl.got, 0, 31), -1);
		clio_dev_stats(d, &st);
		assert_int_equal(st.back.reads, 5);
	}

	/* a view's error stops the read and is returned */
	memset(&vl, 0, sizeof(vl));
	vl.out = out;
	vl.stop_at = 1;
	assert_int_equal(clio_pread_view(f, 8 * bs, 4 * bs, log_view, &vl), -ECANCELED);
	assert_int_equal(vl.calls, 1);

	/* at EOF: one call with nothing, marked last; past it too */
	assert_int_equal(clio_ftruncate(f, 5 * bs + 10), 0);
	memset(&vl, 0, sizeof(vl));
	vl.out = out;
	assert_int_equal(clio_pread_view(f, bs, 5 * bs, log_view, &vl), 10);
	assert_int_equal(vl.calls, 1);
	assert_int_equal(vl.last[0], 1);
	memset(&vl, 0, sizeof(vl));
	vl.out = out;
	assert_int_equal(clio_pread_view(f, bs, 6 * bs, log_view, &vl), 0);
	assert_int_equal(vl.calls, 1);
	assert_int_equal(vl.iovcnt[0], 0);
	assert_int_equal(vl.last[0], 1);

	/* the raw path lends a copy, in one call */
	g = file_open(c, d, CLIO_RDONLY | CLIO_DIRECT);
	memset(&vl, 0, sizeof(vl));
	vl.out = out;
	assert_int_equal(clio_pread_view(g, 2 * bs, bs, log_view, &vl), (ssize_t)(2 * bs));
	assert_int_equal(vl.calls, 1);
	assert_int_equal(vl.last[0], 1);
	assert_int_equal(tu_check(out, vl.got, bs, 31), -1);
	assert_int_equal(clio_close(g), 0);

	/* a write-only handle reads nothing */
	g = file_open(c, d, CLIO_WRONLY);
	memset(&vl, 0, sizeof(vl));
	assert_int_equal(clio_pread_view(g, bs, 0, log_view, &vl), -EBADF);
	assert_int_equal(vl.calls, 0);
	assert_int_equal(clio_pread_view(f, bs, 0, NULL, NULL), -EINVAL);
	assert_int_equal(clio_close(g), 0);

	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	free(out);
}

/* ------------------------------------------------------------ direct */

static void
test_direct(void **state)
{
	struct clio_conf conf = seq_conf(CLIO_CLUSTER_ON, 64 * KiB);
	unsigned char *buf = malloc(MiB), *rd = malloc(MiB);
	struct clio_dev_stats st;
	clio_cache *c = cache_new(&conf);
	clio_dev *d = tu_dev_open("mem:size=4M", 0);
	clio_file *f, *g;

	(void)state;
	prefill(d, 4 * MiB, 81);
	f = file_open(c, d, CLIO_RDWR | CLIO_DIRECT);
	g = file_open(c, d, CLIO_RDWR);

	/* a cached copy of the first 64 KiB, to be made stale */
	assert_int_equal(clio_pread(g, rd, 64 * KiB, 0), 64 * KiB);
	assert_int_equal(tu_check(rd, 64 * KiB, 0, 81), -1);

	clio_dev_stats_reset(d);
	tu_fill(buf, MiB, 0, 82);
	assert_int_equal(clio_pwrite(f, buf, MiB, 0), MiB);
	clio_dev_stats(d, &st);
	print_back("direct write 1 MiB", &st);
	assert_int_equal(st.front.writes, 1);
	assert_int_equal(st.back.writes, MiB / (64 * KiB));
	assert_int_equal(st.back.size_hist[tu_hist_bucket(64 * KiB)], 16);
	assert_int_equal(st.back.reads, 0);
	dev_has(d, 0, MiB, 82);

	clio_dev_stats_reset(d);
	memset(rd, 0, MiB);
	assert_int_equal(clio_pread(f, rd, MiB, 0), MiB);
	assert_int_equal(tu_check(rd, MiB, 0, 82), -1);
	clio_dev_stats(d, &st);
	assert_int_equal(st.front.reads, 1);
	assert_int_equal(st.back.reads, 16);

	/* the cache does not serve the old data after a direct write */
	memset(rd, 0, 64 * KiB);
	assert_int_equal(clio_pread(g, rd, 64 * KiB, 0), 64 * KiB);
	assert_int_equal(tu_check(rd, 64 * KiB, 0, 82), -1);

	/* a direct read sees dirty cached data: it is written first */
	tu_fill(buf, 8192, 2 * MiB, 83);
	assert_int_equal(clio_pwrite(g, buf, 8192, 2 * MiB), 8192);
	assert_int_equal(clio_pread(f, rd, 8192, 2 * MiB), 8192);
	assert_int_equal(tu_check(rd, 8192, 2 * MiB, 83), -1);

	/* unaligned direct transfers are refused */
	assert_int_equal(clio_pread(f, rd, 1000, 0), -EINVAL);
	assert_int_equal(clio_pwrite(f, buf, 512, 100), -EINVAL);
	/* reads stop at the end */
	assert_int_equal(clio_pread(f, rd, 8192, 4 * MiB - 4096), 4096);
	assert_int_equal(clio_pread(f, rd, 8192, 4 * MiB), 0);

	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_close(g), 0);
	clio_dev_close(d);

	/* a file that ends off a sector boundary: the short read, then 0 at
	 * the end however unaligned (O_DIRECT's rule, which dd relies on) */
	d = tu_dev_open("mem:size=0", 0);
	tu_fill(buf, 1000000, 0, 84);
	assert_int_equal(clio_dev_pwrite(d, buf, 1000000, 0), 1000000);
	f = file_open(c, d, CLIO_RDONLY | CLIO_DIRECT);
	assert_int_equal(clio_pread(f, rd, 4096, 999424), 576);
	assert_int_equal(tu_check(rd, 576, 999424, 84), -1);
	assert_int_equal(clio_pread(f, rd, 4096, 1000000), 0);
	assert_int_equal(clio_pread(f, rd, 100, 1000100), 0);
	assert_int_equal(clio_pread(f, rd, 4096, 999000), -EINVAL);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	free(buf);
	free(rd);
}

/* ------------------------------------------------------------ discard */

/* clio_discard: the blocks wholly inside the range are dropped, clean and
 * dirty (the dirty never written), so that reads see what the device
 * holds; partial blocks stay; a range longer than the cache walks what is
 * cached. */
static void
test_discard(void **state)
{
	struct clio_conf conf = seq_conf(CLIO_CLUSTER_ON, 64 * KiB);
	unsigned char *buf = malloc(4 * MiB), *rd = malloc(4 * MiB);
	struct clio_dev_stats st;
	clio_cache *c;
	clio_dev *d = tu_dev_open("mem:size=4M", 0), *d2;
	clio_file *f, *ro, *g;
	uint64_t bs;

	(void)state;
	conf.write_behind = 0;
	conf.dirty_age = 3600;
	conf.cache_size = 2 * MiB; /* 256 buffers of the 512 the device has */
	bs = conf.bsize;
	c = cache_new(&conf);
	prefill(d, 4 * MiB, 91);
	f = file_open(c, d, CLIO_RDWR);
	ro = file_open(c, d, CLIO_RDONLY);

	/* [0, 512K) cached clean, [512K, 1M) dirty */
	assert_int_equal(clio_pread(f, rd, 512 * KiB, 0), 512 * KiB);
	tu_fill(buf, 512 * KiB, 512 * KiB, 92);
	assert_int_equal(clio_pwrite(f, buf, 512 * KiB, 512 * KiB), 512 * KiB);
	/* the device changes below the cache, as a trim or zero there does */
	tu_fill(buf, MiB, 0, 93);
	assert_int_equal(clio_dev_pwrite(d, buf, MiB, 0), MiB);
	clio_dev_stats_reset(d);

	assert_int_equal(clio_discard(ro, 0, MiB), -EBADF);
	assert_int_equal(clio_discard(f, 1, UINT64_MAX), -EINVAL);
	assert_int_equal(clio_discard(f, 0, 0), 0);
	/* block 0 only partly inside, and the block past the range, stay */
	assert_int_equal(clio_discard(f, 100, MiB - bs - 100 + 10), 0);
	assert_int_equal(clio_pread(f, rd, MiB, 0), MiB);
	assert_int_equal(tu_check(rd, bs, 0, 91), -1);
	assert_int_equal(tu_check(rd + bs, MiB - 2 * bs, bs, 93), -1);
	assert_int_equal(tu_check(rd + MiB - bs, bs, MiB - bs, 92), -1);
	/* the dirty blocks dropped were never written: only the last one is */
	assert_int_equal(clio_fsync(f), 0);
	clio_dev_stats(d, &st);
	print_back("discard, read, fsync", &st);
	assert_true(st.back.write_bytes == bs);
	assert_true(st.back.read_bytes >= MiB - 2 * bs); /* and read-ahead */
	dev_has(d, bs, MiB - 2 * bs, 93);

	/* longer than the cache (and past the end): what is cached, dirty
	 * included, is dropped */
	tu_fill(buf, 4 * MiB, 0, 94);
	assert_int_equal(clio_pwrite(f, buf, MiB, 2 * MiB), MiB); /* dirty */
	assert_int_equal(clio_pread(f, rd, MiB, 0), MiB);	  /* clean */
	tu_fill(buf, 4 * MiB, 0, 95);
	assert_int_equal(clio_dev_pwrite(d, buf, 4 * MiB, 0), 4 * MiB);
	assert_int_equal(clio_discard(f, 0, UINT64_MAX), 0);
	clio_dev_stats_reset(d);
	assert_int_equal(clio_fsync(f), 0);
	clio_dev_stats(d, &st);
	assert_true(st.back.write_bytes == 0);
	memset(rd, 0, 4 * MiB);
	assert_int_equal(clio_pread(f, rd, 4 * MiB, 0), 4 * MiB);
	assert_int_equal(tu_check(rd, 4 * MiB, 0, 95), -1);

	/* dirty data past a resizable device's end dropped: the size the
	 * writes gave stays, on the device too, as after a truncate */
	d2 = tu_dev_open("mem:", 0);
	g = file_open(c, d2, CLIO_RDWR);
	tu_fill(buf, 100000, 0, 96);
	assert_int_equal(clio_pwrite(g, buf, 100000, 0), 100000);
	assert_int_equal(clio_discard(g, 0, 100000), 0);
	assert_int_equal(clio_fsync(g), 0);
	assert_int_equal(clio_fsize(g), 100000);
	assert_true(clio_dev_size(d2) == 100000);
	assert_int_equal(clio_pread(g, rd, MiB, 0), 100000);
	assert_int_equal(tu_check_zero(rd, 100000), -1);
	assert_int_equal(clio_close(g), 0);
	g = file_open(c, d2, CLIO_RDONLY);
	assert_int_equal(clio_fsize(g), 100000);
	assert_int_equal(clio_close(g), 0);
	clio_dev_close(d2);

	assert_int_equal(clio_close(ro), 0);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	free(buf);
	free(rd);
}

/* ------------------------------------------------------------ rbw */

static void
test_rbw(void **state)
{
	struct clio_conf conf = seq_conf(CLIO_CLUSTER_ON, 64 * KiB);
	unsigned char buf[16384], rd[16384];
	struct clio_cache_stats cs;
	struct clio_dev_stats st;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	int i;

	(void)state;
	/* a partial write of an uncached block reads it first */
	c = cache_new(&conf);
	d = tu_dev_open("mem:size=1M", 0);
	prefill(d, MiB, 91);
	f = file_open(c, d, CLIO_RDWR);
	tu_fill(buf, 100, 8192 + 10, 92);
	assert_int_equal(clio_pwrite(f, buf, 100, 8192 + 10), 100);
	clio_cache_stats(c, &cs);
	clio_dev_stats(d, &st);
	assert_int_equal(cs.rbw_reads, 1);
	assert_true(st.back.reads >= 1);
	assert_true(st.back.read_bytes >= 8192);
	assert_int_equal(clio_pread(f, rd, 8192, 8192), 8192);
	assert_int_equal(tu_check(rd, 10, 8192, 91), -1);
	assert_int_equal(tu_check(rd + 10, 100, 8192 + 10, 92), -1);
	assert_int_equal(tu_check(rd + 110, 8192 - 110, 8192 + 110, 91), -1);
	assert_int_equal(clio_fsync(f), 0);
	dev_has(d, 8192, 10, 91);
	dev_has(d, 8192 + 10, 100, 92);
	dev_has(d, 8192 + 110, MiB - 8192 - 110, 91);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);

	/* whole-block writes read nothing */
	c = cache_new(&conf);
	f = file_open(c, d, CLIO_RDWR);
	clio_dev_stats_reset(d);
	tu_fill(buf, 16384, 65536, 93);
	assert_int_equal(clio_pwrite(f, buf, 16384, 65536), 16384);
	tu_fill(buf, 8192, 3 * 8192, 93);
	assert_int_equal(clio_pwrite(f, buf, 8192, 3 * 8192), 8192);
	assert_int_equal(clio_fsync(f), 0);
	clio_dev_stats(d, &st);
	clio_cache_stats(c, &cs);
	assert_int_equal(st.back.reads, 0);
	assert_int_equal(cs.rbw_reads, 0);
	dev_has(d, 65536, 16384, 93);
	dev_has(d, 3 * 8192, 8192, 93);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);

	/* writes past EOF read nothing, nor does a write from a block's
	 * start that covers every old byte below EOF */
	c = cache_new(&conf);
	d = tu_dev_open("mem:size=0", 0);
	tu_fill(buf, 10000, 0, 94);
	assert_int_equal(clio_dev_pwrite(d, buf, 10000, 0), 10000);
	clio_dev_stats_reset(d);
	f = file_open(c, d, CLIO_RDWR);
	tu_fill(buf, 2000, 8192, 95);	/* 8192..10191 covers 8192..9999 */
	assert_int_equal(clio_pwrite(f, buf, 2000, 8192), 2000);
	tu_fill(buf, 100, 100000, 95);
	assert_int_equal(clio_pwrite(f, buf, 100, 100000), 100);
	assert_int_equal(clio_fsize(f), 100100);
	clio_dev_stats(d, &st);
	clio_cache_stats(c, &cs);
	assert_int_equal(st.back.reads, 0);
	assert_int_equal(cs.rbw_reads, 0);
	/* between the old end and the write: zeros */
	assert_int_equal(clio_pread(f, rd, 8192, 98304), 100100 - 98304);
	assert_int_equal(tu_check_zero(rd, 100000 - 98304), -1);
	assert_int_equal(tu_check(rd + 100000 - 98304, 100, 100000, 95), -1);
	assert_int_equal(clio_close(f), 0);
	dev_has(d, 0, 8192, 94);
	dev_has(d, 8192, 2000, 95);
	dev_has(d, 10192, 100000 - 10192, 0);
	dev_has(d, 100000, 100, 95);
	assert_true(clio_dev_size(d) == 100100);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);

	/* sequential 1 KiB rewrites: rbw=block reads each block alone,
	 * rbw=cluster reads in clusters */
	for (i = 0; i < 2; i++) {
		uint64_t off;
		conf.rbw = i == 0 ? CLIO_RBW_BLOCK : CLIO_RBW_CLUSTER;
		c = cache_new(&conf);
		d = tu_dev_open("mem:size=1M", 0);
		prefill(d, MiB, 96);
		f = file_open(c, d, CLIO_RDWR);
		for (off = 0; off < MiB; off += KiB) {
			tu_fill(buf, KiB, off, 97);
			assert_int_equal(clio_pwrite(f, buf, KiB, off), KiB);
		}
		assert_int_equal(clio_fsync(f), 0);
		clio_dev_stats(d, &st);
		print_back(i == 0 ? "rewrite, rbw=block" : "rewrite, rbw=cluster", &st);
		if (i == 0) {
			assert_int_equal(st.back.reads, MiB / 8192);
			assert_int_equal(st.back.size_hist[tu_hist_bucket(8192)], MiB / 8192);
		} else {
			assert_true(st.back.reads <= MiB / (64 * KiB) + 2);
		}
		assert_true(st.back.writes <= MiB / (64 * KiB) + 2);
		dev_has(d, 0, MiB, 97);
		assert_int_equal(clio_close(f), 0);
		assert_int_equal(clio_cache_free(c), 0);
		clio_dev_close(d);
	}
}

/* ------------------------------------------------------------ faults */

static void
test_write_fault(void **state)
{
	struct clio_conf conf = seq_conf(CLIO_CLUSTER_ON, 64 * KiB);
	unsigned char *buf = malloc(2 * MiB), *rd = malloc(2 * MiB);
	struct clio_cache_stats cs;
	clio_cache *c = cache_new(&conf);
	clio_dev *d;
	clio_file *f, *g;
	uint64_t werr;

	(void)state;
	d = tu_dev_open("fault:write=EIO,offset=1M,length=64K@mem:size=4M", 0);
	f = file_open(c, d, CLIO_RDWR);
	g = file_open(c, d, CLIO_RDONLY);
	tu_fill(buf, 2 * MiB, 0, 101);
	assert_int_equal(clio_pwrite(f, buf, 2 * MiB, 0), 2 * MiB);

	/* until fsync, the data stays readable through the cache */
	memset(rd, 0, 2 * MiB);
	assert_int_equal(clio_pread(g, rd, 2 * MiB, 0), 2 * MiB);
	assert_int_equal(tu_check(rd, 2 * MiB, 0, 101), -1);

	assert_int_equal(clio_fsync(f), -EIO);
	clio_cache_stats(c, &cs);
	print_message("  after fsync: %llu write errors, %llu dirty, %llu lost\n",
		      (unsigned long long)cs.write_errors,
		      (unsigned long long)cs.dirty_bytes,
		      (unsigned long long)cs.lost_bytes);
	assert_true(cs.write_errors >= 1);
	assert_true(cs.dirty_bytes >= 64 * KiB);	/* kept, not dropped */
	assert_int_equal(cs.lost_bytes, 0);
	/* the rest reached the device; the failed range did not */
	dev_has(d, 0, MiB, 101);
	dev_has(d, MiB, 64 * KiB, 0);
	dev_has(d, MiB + 64 * KiB, MiB - 64 * KiB, 101);
	/* and the cache still has it */
	memset(rd, 0, 2 * MiB);
	assert_int_equal(clio_pread(g, rd, 2 * MiB, 0), 2 * MiB);
	assert_int_equal(tu_check(rd, 2 * MiB, 0, 101), -1);
	/* each fsync tries again and fails again */
	werr = cs.write_errors;
	assert_int_equal(clio_fsync(f), -EIO);
	clio_cache_stats(c, &cs);
	assert_true(cs.write_errors > werr);
	werr = cs.write_errors;

	/* the reader's close writes nothing back but learns of the failure
	 * (it was never told); the last close tries again and reports it */
	assert_int_equal(clio_close(g), -EIO);
	clio_cache_stats(c, &cs);
	assert_true(cs.dirty_bytes >= 64 * KiB);
	assert_int_equal(cs.write_errors, werr);
	assert_int_equal(clio_close(f), -EIO);
	clio_cache_stats(c, &cs);
	print_message("  after close: %llu write errors, %llu dirty, %llu lost\n",
		      (unsigned long long)cs.write_errors,
		      (unsigned long long)cs.dirty_bytes,
		      (unsigned long long)cs.lost_bytes);
	assert_true(cs.write_errors > werr);
	assert_int_equal(cs.dirty_bytes, 0);
	assert_int_equal(cs.lost_bytes, 64 * KiB);	/* the loss is counted */
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);

	/* a single handle: its close reports the failure */
	c = cache_new(&conf);
	d = tu_dev_open("fault:write=EIO,offset=1M,length=64K@mem:size=4M", 0);
	f = file_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_pwrite(f, buf + MiB, 8192, MiB), 8192);
	assert_int_equal(clio_close(f), -EIO);
	clio_cache_stats(c, &cs);
	assert_int_equal(cs.lost_bytes, 8192);
	assert_true(cs.write_errors >= 1);
	/* and clio_sync on the cache, with dirty data of a failed device */
	f = file_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_pwrite(f, buf + MiB, 8192, MiB), 8192);
	assert_int_equal(clio_sync(c), -EIO);
	assert_int_equal(clio_close(f), -EIO);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);

	/* a failing write still in flight at the last close: on a slow
	 * real-clock disk with one queue slot, 32 write-behind clusters take
	 * ~70 ms; the close comes long before the bad one completes */
	c = cache_new(&conf);
	d = tu_dev_open("fault:write=EIO,offset=1M,length=64K@"
			"sim:preset=da2002,size=4M,clock=real", 0);
	f = file_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_pwrite(f, buf, 2 * MiB, 0), 2 * MiB);
	assert_int_equal(clio_close(f), -EIO);
	clio_cache_stats(c, &cs);
	assert_int_equal(cs.lost_bytes, 64 * KiB);
	assert_true(cs.write_errors >= 2); /* write-behind, and the retry */
	assert_int_equal(clio_cache_free(c), 0);
	dev_has(d, 0, MiB, 101);
	dev_has(d, MiB + 64 * KiB, MiB - 64 * KiB, 101);
	clio_dev_close(d);
	free(buf);
	free(rd);
}

static void
test_write_fault_retry(void **state)
{
	struct clio_conf conf = seq_conf(CLIO_CLUSTER_ON, 64 * KiB);
	unsigned char *buf = malloc(MiB);
	struct clio_cache_stats cs;
	clio_cache *c = cache_new(&conf);
	clio_dev *d;
	clio_file *f;
	int i, r = -1, failed = 0;

	(void)state;
	/* every write fails with probability 1/2: a retry may succeed */
	d = tu_dev_open("fault:write=EIO,prob=0.5,seed=7@mem:size=4M", 0);
	f = file_open(c, d, CLIO_RDWR);
	tu_fill(buf, MiB, 0, 111);
	assert_int_equal(clio_pwrite(f, buf, MiB, 0), MiB);
	for (i = 0; i < 64; i++) {
		r = clio_fsync(f);
		if (r == 0)
			break;
		assert_int_equal(r, -EIO);
		failed++;
	}
	clio_cache_stats(c, &cs);
	print_message("  %d fsyncs failed before one succeeded; %llu write errors\n",
		      failed, (unsigned long long)cs.write_errors);
	assert_int_equal(r, 0);
	assert_true(failed >= 1);
	assert_true(cs.write_errors >= 1);
	assert_int_equal(cs.dirty_bytes, 0);
	assert_int_equal(cs.lost_bytes, 0);
	dev_has(d, 0, MiB, 111);
	/* the error was reported; later calls succeed */
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	free(buf);
}

static void
test_read_fault(void **state)
{
	struct clio_conf conf = seq_conf(CLIO_CLUSTER_ON, 64 * KiB);
	unsigned char buf[8192];
	struct clio_cache_stats cs;
	struct clio_dev_stats st;
	clio_cache *c = cache_new(&conf);
	clio_dev *d;
	clio_file *f;
	uint64_t off;

	(void)state;
	d = tu_dev_open("fault:read=EIO,offset=64K,length=8K@mem:size=1M", 0);
	prefill(d, MiB, 121);
	f = file_open(c, d, CLIO_RDWR);

	/* the first read hits the bad block: an error, and nothing cached */
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(clio_pread(f, buf, KiB, 64 * KiB), -EIO);
	clio_cache_stats(c, &cs);
	assert_int_equal(cs.cached_bytes, 0);
	/* the same read fails again rather than return garbage */
	assert_int_equal(clio_pread(f, buf, KiB, 64 * KiB + 100), -EIO);
	clio_dev_stats(d, &st);
	assert_int_equal(st.back.errors, 2);
	clio_cache_stats(c, &cs);
	assert_int_equal(cs.cached_bytes, 0);

	/* a sequential reader gets good data up to the bad block ... */
	for (off = 0; off < 64 * KiB; off += KiB) {
		assert_int_equal(clio_pread(f, buf, KiB, off), KiB);
		assert_int_equal(tu_check(buf, KiB, off, 121), -1);
	}
	/* ... the error there ... */
	assert_int_equal(clio_pread(f, buf, KiB, 64 * KiB), -EIO);
	assert_int_equal(clio_pread(f, buf, 8192, 60 * KiB), -EIO);
	/* ... and good data after it */
	for (off = 72 * KiB; off < 256 * KiB; off += KiB) {
		assert_int_equal(clio_pread(f, buf, KiB, off), KiB);
		assert_int_equal(tu_check(buf, KiB, off, 121), -1);
	}
	/* a partial write of the bad block cannot read it: fails, dirties
	 * nothing */
	assert_int_equal(clio_pwrite(f, buf, 100, 64 * KiB + 10), -EIO);
	clio_cache_stats(c, &cs);
	assert_int_equal(cs.dirty_bytes, 0);
	/* a whole-block write needs no read and repairs it */
	tu_fill(buf, 8192, 64 * KiB, 122);
	assert_int_equal(clio_pwrite(f, buf, 8192, 64 * KiB), 8192);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(clio_pread(f, buf, 8192, 64 * KiB), 8192);
	assert_int_equal(tu_check(buf, 8192, 64 * KiB, 122), -1);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* ------------------------------------------------------------ throttling */

static void
test_throttle(void **state)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	const uint64_t devlen = 8 * MiB, bs = 8192;
	unsigned char *shadow = calloc(1, devlen), buf[8192];
	struct clio_cache_stats cs;
	uint64_t rng = 12345, hi;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	int i;

	(void)state;
	conf.bsize = (uint32_t)bs;
	conf.cache_size = MiB;	/* 128 buffers */
	conf.dirty_hi = 50;
	conf.dirty_lo = 25;
	conf.flusher = 0;
	hi = conf.cache_size * conf.dirty_hi / 100;
	c = cache_new(&conf);
	d = tu_dev_open("mem:size=8M", 0);
	f = file_open(c, d, CLIO_RDWR);
	for (i = 0; i < 3000; i++) {
		uint64_t r = tu_rand(&rng);
		uint64_t off = (r >> 8) % (devlen / bs) * bs;
		size_t len = bs;

		if (i % 3 == 1) {	/* some partial writes, too */
			off += (r & 0xff) * 16;
			len = 1000;
		}
		tu_fill(buf, len, off, (uint64_t)i + 1);
		memcpy(shadow + off, buf, len);
		assert_int_equal(clio_pwrite(f, buf, len, off), (ssize_t)len);
		clio_cache_stats(c, &cs);
		if (cs.dirty_bytes > hi)
			print_message("dirty %llu > %llu after write %d\n",
				      (unsigned long long)cs.dirty_bytes,
				      (unsigned long long)hi, i);
		assert_true(cs.dirty_bytes <= hi);
	}
	clio_cache_stats(c, &cs);
	print_message("  %llu throttles, %llu evictions, %llu write clusters\n",
		      (unsigned long long)cs.throttles,
		      (unsigned long long)cs.evictions,
		      (unsigned long long)cs.write_clusters);
	assert_true(cs.throttles > 0);
	assert_int_equal(clio_fsync(f), 0);
	{
		unsigned char *rd = malloc(devlen);
		assert_int_equal(clio_dev_pread(d, rd, devlen, 0), (ssize_t)devlen);
		assert_memory_equal(rd, shadow, devlen);
		memset(rd, 0, devlen);
		assert_int_equal(clio_pread(f, rd, devlen, 0), (ssize_t)devlen);
		assert_memory_equal(rd, shadow, devlen);
		free(rd);
	}
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	free(shadow);
}

/* ------------------------------------------------------------ flusher */

static void
test_flusher(void **state)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	unsigned char buf[3000];
	struct clio_cache_stats cs;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	double t0;
	int k;

	(void)state;
	conf.bsize = 8192;
	conf.dirty_age = 0.2;
	c = cache_new(&conf);
	d = tu_dev_open("mem:size=0", 0);
	f = file_open(c, d, CLIO_RDWR);
	t0 = tu_now();
	/* partial blocks, out of order: nothing pushes them but age */
	for (k = 0; k < 3; k++) {
		uint64_t off = (uint64_t)(5 - 2 * k) * 100000;
		tu_fill(buf, sizeof(buf), off, 131);
		assert_int_equal(clio_pwrite(f, buf, sizeof(buf), off), (ssize_t)sizeof(buf));
	}
	clio_cache_stats(c, &cs);
	if (tu_now() - t0 < 0.15) {
		/* younger than dirty_age: still only in the cache */
		assert_true(cs.dirty_bytes >= 3 * 8192);
		assert_true(clio_dev_size(d) == 0);
	}
	tu_sleep(0.6);
	clio_cache_stats(c, &cs);
	if (cs.dirty_bytes != 0) {
		/* a loaded machine (sanitizers): give it a little longer */
		print_message("  still %llu dirty after 0.6 s\n",
			      (unsigned long long)cs.dirty_bytes);
		for (k = 0; k < 40 && cs.dirty_bytes != 0; k++) {
			tu_sleep(0.1);
			clio_cache_stats(c, &cs);
		}
	}
	assert_int_equal(cs.dirty_bytes, 0);
	assert_true(clio_dev_size(d) == 500000 + sizeof(buf));
	for (k = 0; k < 3; k++) {
		uint64_t off = (uint64_t)(5 - 2 * k) * 100000;
		dev_has(d, off, sizeof(buf), 131);
	}
	dev_has(d, 0, 100000, 0);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* ------------------------------------------------------------ flush_behind */

/* 1 MiB in 8 KiB writes, 64 KiB write-behind clusters, no fsync: the
 * flushes the device saw. */
static uint64_t
flushes_after_writes(uint64_t flush_behind, struct clio_cache_stats *cs)
{
	struct clio_conf conf = seq_conf(CLIO_CLUSTER_ON, 64 * KiB);
	struct clio_dev_stats st;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;

	conf.flush_behind = flush_behind;
	c = cache_new(&conf);
	d = tu_dev_open("mem:size=0", 0);
	f = file_open(c, d, CLIO_RDWR);
	write_seq(f, MiB, 8 * KiB, 83);
	clio_dev_stats(d, &st);
	clio_cache_stats(c, cs);
	assert_true(st.back.write_bytes == MiB); /* all pushed behind */
	assert_int_equal(clio_fsync(f), 0);
	dev_has(d, 0, MiB, 83);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	return st.back.flushes;
}

static void
test_flush_behind(void **state)
{
	struct clio_conf conf = seq_conf(CLIO_CLUSTER_ON, 64 * KiB);
	struct clio_cache_stats cs;
	bool seen = false;
	int seed;

	(void)state;
	/* off, the library's default: only fsync flushes */
	assert_int_equal(flushes_after_writes(0, &cs), 0);
	assert_int_equal(cs.flushes_behind, 0);
	/* one flush after each 256 KiB written back: 4 before the fsync */
	assert_int_equal(flushes_after_writes(256 * KiB, &cs), 4);
	assert_int_equal(cs.flushes_behind, 4);
	assert_int_equal(flushes_after_writes(MiB + 1, &cs), 0);

	/*
	 * A background flush that fails is a write-back failure: the next
	 * fsync of every handle reports it, even when the fsync's own flush
	 * succeeds.  Each flush fails with probability 1/2; the seeds give
	 * both orders, and the case that matters (the background flush
	 * failed, the fsync's flush did not) must come up.
	 */
	conf.flush_behind = 256 * KiB;
	for (seed = 1; seed <= 32; seed++) {
		struct clio_dev_stats st;
		char spec[80];
		clio_cache *c = cache_new(&conf);
		clio_dev *d;
		clio_file *f, *g, *h;
		int rf, rg;

		snprintf(spec, sizeof(spec),
			 "fault:flush=EIO,prob=0.5,seed=%d@mem:size=0", seed);
		d = tu_dev_open(spec, 0);
		f = file_open(c, d, CLIO_RDWR);
		g = file_open(c, d, CLIO_RDWR);
		h = file_open(c, d, CLIO_RDWR);
		write_seq(f, 256 * KiB, 8 * KiB, 84);
		clio_cache_stats(c, &cs);
		assert_int_equal(cs.flushes_behind, 1);
		rf = clio_fsync(f);
		clio_dev_stats(d, &st);
		assert_int_equal(st.back.flushes, 2);
		if (cs.write_errors == 1) {
			/* the background flush failed */
			assert_int_equal(rf, -EIO);
			rg = clio_fsync(g);
			assert_int_equal(rg, -EIO);
			/* clio_writeback reports it too, once */
			assert_int_equal(clio_writeback(h), -EIO);
			assert_int_equal(clio_writeback(h), 0);
			if (st.back.errors == 1)
				seen = true; /* and only it */
		} else {
			assert_int_equal(cs.write_errors, 0);
			assert_int_equal(st.back.errors == 0 ? 0 : -EIO, rf);
		}
		clio_close(f); /* its own flush may fail too */
		clio_close(g);
		clio_close(h);
		clio_cache_free(c);
		clio_dev_close(d);
	}
	assert_true(seen);
}

/* ------------------------------------------------------------ threads */

/*
 * Writers own 512 KiB regions and write 512-byte records (each inside
 * one block), single or in runs that cross blocks; a record carries its
 * seed in its first 8 bytes and the pattern of that seed after it, so a
 * reader can tell a whole record from a torn one without knowing which
 * write it came from.  Afterwards each region must equal its writer's
 * shadow copy.
 */
#define NWRITERS 4
#define NREADERS 3
#define REGION (512 * 1024)
#define REC 512
#define OPS 1500

struct mt {
	clio_cache *c;
	clio_dev *d;
	unsigned char *shadow;	/* NWRITERS regions */
	int errors;
	pthread_mutex_t m;
	int writers_left;
};

struct mt_arg {
	struct mt *mt;
	int id;
};

static void
rec_make(unsigned char *p, uint64_t off, uint64_t seed)
{
	memcpy(p, &seed, 8);
	tu_fill(p + 8, REC - 8, off, seed);
}

static bool
rec_ok(const unsigned char *p, uint64_t off)
{
	uint64_t seed;

	memcpy(&seed, p, 8);
	return tu_check(p + 8, REC - 8, off, seed) == -1;
}

static void
mt_fail(struct mt *mt, const char *what, long v)
{
	pthread_mutex_lock(&mt->m);
	if (mt->errors++ < 10)
		fprintf(stderr, "thread check failed: %s (%ld)\n", what, v);
	pthread_mutex_unlock(&mt->m);
}

static void *
mt_writer(void *arg)
{
	struct mt_arg *a = arg;
	struct mt *mt = a->mt;
	uint64_t base = (uint64_t)a->id * REGION, rng = 1000 + (uint64_t)a->id;
	unsigned char buf[16 * REC];
	clio_file *f;
	int i, r;

	r = clio_open(mt->c, mt->d, CLIO_RDWR, &f);
	if (r < 0) {
		mt_fail(mt, "open", r);
		return NULL;
	}
	for (i = 0; i < OPS; i++) {
		uint64_t x = tu_rand(&rng);
		int nrec = (x & 3) == 0 ? 1 + (int)((x >> 2) % 16) : 1;
		uint64_t rec = (x >> 8) % (REGION / REC - (uint64_t)nrec + 1);
		uint64_t off = base + rec * REC;
		int k;

		for (k = 0; k < nrec; k++)
			rec_make(buf + k * REC, off + (uint64_t)k * REC,
				 ((uint64_t)a->id << 32) | (uint64_t)(i + 1));
		r = (int)clio_pwrite(f, buf, (size_t)nrec * REC, off);
		if (r != nrec * REC)
			mt_fail(mt, "pwrite", r);
		memcpy(mt->shadow + off, buf, (size_t)nrec * REC);
		if (i % 500 == 499 && (r = clio_fsync(f)) != 0)
			mt_fail(mt, "fsync", r);
	}
	if ((r = clio_fsync(f)) != 0)
		mt_fail(mt, "fsync", r);
	if ((r = clio_close(f)) != 0)
		mt_fail(mt, "close", r);
	pthread_mutex_lock(&mt->m);
	mt->writers_left--;
	pthread_mutex_unlock(&mt->m);
	return NULL;
}

static void *
mt_reader(void *arg)
{
	struct mt_arg *a = arg;
	struct mt *mt = a->mt;
	uint64_t rng = 2000 + (uint64_t)a->id, total = (uint64_t)NWRITERS * REGION;
	unsigned char *buf = malloc(64 * KiB);
	clio_file *f;
	int i, r, left;

	r = clio_open(mt->c, mt->d, CLIO_RDONLY, &f);
	if (r < 0) {
		mt_fail(mt, "open", r);
		free(buf);
		return NULL;
	}
	for (i = 0;; i++) {
		uint64_t x = tu_rand(&rng), off, len, k;

		pthread_mutex_lock(&mt->m);
		left = mt->writers_left;
		pthread_mutex_unlock(&mt->m);
		if (left == 0 || i > 20 * OPS)
			break;
		if (a->id == 0) {
			/* a sequential scan, 64 KiB at a time */
			off = (uint64_t)i * 64 * KiB % total;
			len = 64 * KiB;
		} else {
			off = (x >> 8) % (total / REC) * REC;
			len = REC * (1 + (x & 7));
			if (off + len > total)
				len = total - off;
		}
		r = (int)clio_pread(f, buf, len, off);
		if (r != (int)len) {
			mt_fail(mt, "pread", r);
			continue;
		}
		for (k = 0; k < len; k += REC)
			if (!rec_ok(buf + k, off + k))
				mt_fail(mt, "torn record at", (long)(off + k));
	}
	if ((r = clio_close(f)) != 0)
		mt_fail(mt, "close", r);
	free(buf);
	return NULL;
}

static void
mt_run(bool on_file)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	uint64_t total = (uint64_t)NWRITERS * REGION, off;
	pthread_t th[NWRITERS + NREADERS];
	struct clio_cache_stats cs;
	struct mt_arg args[NWRITERS + NREADERS];
	struct mt mt;
	char path[256], spec[320];
	unsigned char *rd;
	clio_file *f;
	int i, fd;

	memset(&mt, 0, sizeof(mt));
	pthread_mutex_init(&mt.m, NULL);
	mt.shadow = malloc(total);
	for (off = 0; off < total; off += REC)
		rec_make(mt.shadow + off, off, 0);
	fd = tu_tmpfile(path, sizeof(path));
	assert_int_equal(pwrite(fd, mt.shadow, total, 0), (ssize_t)total);
	close(fd);
	if (on_file)
		snprintf(spec, sizeof(spec), "file:%s?qd=4", path);
	else
		snprintf(spec, sizeof(spec), "mem:size=0");

	conf.bsize = 4096;
	conf.maxphys = 64 * KiB;
	conf.cache_size = 512 * KiB;	/* 128 buffers: eviction */
	conf.dirty_age = 0.05;
	conf.flush_behind = 256 * KiB;	/* flushes beside the writes */
	mt.c = cache_new(&conf);
	mt.d = tu_dev_open(spec, 0);
	unlink(path); /* the device keeps it open; nothing is left behind */
	if (!on_file)
		assert_int_equal(clio_dev_pwrite(mt.d, mt.shadow, total, 0),
				 (ssize_t)total);
	mt.writers_left = NWRITERS;
	for (i = 0; i < NWRITERS + NREADERS; i++) {
		args[i].mt = &mt;
		args[i].id = i < NWRITERS ? i : i - NWRITERS;
		assert_int_equal(pthread_create(&th[i], NULL,
						i < NWRITERS ? mt_writer : mt_reader,
						&args[i]), 0);
	}
	for (i = 0; i < NWRITERS + NREADERS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(mt.errors, 0);

	/* the cache and the device both hold every writer's last word */
	rd = malloc(total);
	f = file_open(mt.c, mt.d, CLIO_RDONLY);
	assert_int_equal(clio_pread(f, rd, total, 0), (ssize_t)total);
	assert_memory_equal(rd, mt.shadow, total);
	assert_int_equal(clio_close(f), 0);
	memset(rd, 0, total);
	assert_int_equal(clio_dev_pread(mt.d, rd, total, 0), (ssize_t)total);
	assert_memory_equal(rd, mt.shadow, total);
	clio_cache_stats(mt.c, &cs);
	assert_true(cs.flushes_behind > 0);
	assert_int_equal(clio_cache_free(mt.c), 0);
	clio_dev_close(mt.d);
	pthread_mutex_destroy(&mt.m);
	free(rd);
	free(mt.shadow);
}

static void
test_threads_file(void **state)
{
	(void)state;
	mt_run(true);
}

static void
test_threads_mem(void **state)
{
	(void)state;
	mt_run(false);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conf),
		cmocka_unit_test(test_cluster_read),
		cmocka_unit_test(test_cluster_write),
		cmocka_unit_test(test_cluster_off),
		cmocka_unit_test(test_cluster_lite),
		cmocka_unit_test(test_read_runs),
		cmocka_unit_test(test_pread_view),
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_discard),
		cmocka_unit_test(test_rbw),
		cmocka_unit_test(test_write_fault),
		cmocka_unit_test(test_write_fault_retry),
		cmocka_unit_test(test_read_fault),
		cmocka_unit_test(test_throttle),
		cmocka_unit_test(test_flusher),
		cmocka_unit_test(test_flush_behind),
		cmocka_unit_test(test_threads_file),
		cmocka_unit_test(test_threads_mem),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
