/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-safety.c - data safety under concurrency and failure, through the
 * public API only: each test is a race or a failure that once lost data,
 * returned a wrong size or a spurious error, written so that it fails on
 * the code that had the bug.
 *
 *  - sync_close: clio_sync() racing with the last clio_close() of an
 *    object: the close must still write back (the data is on the device
 *    when close returns 0), and nothing is freed under the sync;
 *  - close_meanwhile: a handle opened, written and closed while the last
 *    close of another waits in its device flush: that close was not the
 *    last, so the other one, which is, must write the data back, not drop
 *    it with the object;
 *  - close_sync_dev: the last close while a clio_sync flushes the device
 *    returns only once the sync is done with it: the caller may close
 *    the device then;
 *  - truncate_write: a pwrite and fsync racing with a truncate: the size
 *    the cache reports and the device's size and bytes agree afterwards;
 *  - failed_truncate: a truncate that fails changes nothing; sizes above
 *    INT64_MAX are refused with EFBIG;
 *  - enobufs: a reader on a cache whose every buffer is held waits for
 *    one, it does not fail; many readers on a tiny cache all succeed;
 *  - poison: a device whose writes fail cannot take the shared cache from
 *    a healthy one; its errors reach its own handles only;
 *  - close_cost: a last close and a truncate cost what the object has,
 *    not what the cache has;
 *  - sync_overlap: clio_sync flushes the devices of several objects at
 *    once (a slow or hung device does not make each other one wait
 *    after it), and a failing one's error is the sync's and its own
 *    handle's only;
 *  - chaos: threads read, write, truncate, fsync, sync and reopen one
 *    object at once; every byte read is zero or a tag naming its own
 *    offset, and at the end the cache and the device agree.
 * Random tests print their seed (CLIO_SEED repeats one).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clio.h"
#include "testutil.h"

#define KiB TU_KiB
#define MiB TU_MiB

static clio_cache *
cache_with(uint32_t bsize, uint64_t size)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	clio_cache *c = NULL;

	conf.bsize = bsize;
	conf.maxbsize = bsize > conf.maxbsize ? bsize : conf.maxbsize;
	conf.maxphys = 64 * KiB;
	conf.cache_size = size;
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	return c;
}

/* ------------------------------------------------------------ sync vs close */

struct syncer {
	clio_cache *c;
	atomic_bool stop;
	int errors;
};

static void *
syncer_main(void *arg)
{
	struct syncer *s = arg;

	while (!atomic_load(&s->stop))
		if (clio_sync(s->c) != 0)
			s->errors++;
	return NULL;
}

static void
test_sync_close(void **state)
{
	char path[256], spec[300];
	unsigned char buf[4096], back[4096];
	struct syncer s = { 0 };
	pthread_t th;
	clio_dev *d;
	int i;

	(void)state;
	s.c = cache_with(4096, 1 * MiB);
	/* a file: each device flush is an fdatasync, a window for the race */
	d = tu_dev_open(tu_file_spec(path, sizeof(path), spec, sizeof(spec), ""), 0);
	unlink(path);
	assert_int_equal(pthread_create(&th, NULL, syncer_main, &s), 0);
	for (i = 0; i < 400; i++) {
		clio_file *f = tu_open(s.c, d, CLIO_RDWR);

		tu_fill(buf, sizeof(buf), 0, (uint64_t)i + 1);
		assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 0),
				 (ssize_t)sizeof(buf));
		assert_int_equal(clio_close(f), 0);
		/* the last close wrote it back, whatever the syncer did */
		assert_int_equal(clio_dev_pread(d, back, sizeof(back), 0),
				 (ssize_t)sizeof(back));
		if (memcmp(back, buf, sizeof(buf)) != 0)
			print_message("iteration %d: closed data not on the device\n", i);
		assert_memory_equal(back, buf, sizeof(buf));
	}
	atomic_store(&s.stop, true);
	pthread_join(th, NULL);
	assert_int_equal(s.errors, 0);
	assert_int_equal(clio_cache_free(s.c), 0);
	clio_dev_close(d);
}

/* ------------------------------------------------------------ close meanwhile */

/* A memory device of callbacks whose first flush waits until released. */
struct cm {
	unsigned char store[64 * 1024];
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool in_flush, release, flushing_at_close;
	clio_cache *c;
	clio_file *f;
	int close_r;
};

static int
cm_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct cm *x = arg;

	memcpy(buf, x->store + off, len);
	return 0;
}

static int
cm_pwrite(void *arg, const void *buf, size_t len, uint64_t off)
{
	struct cm *x = arg;

	memcpy(x->store + off, buf, len);
	return 0;
}

static int
cm_flush(void *arg)
{
	struct cm *x = arg;

	pthread_mutex_lock(&x->m);
	x->in_flush = true;
	pthread_cond_broadcast(&x->cv);
	while (!x->release)
		pthread_cond_wait(&x->cv, &x->m);
	x->in_flush = false;
	pthread_mutex_unlock(&x->m);
	return 0;
}

static void *
cm_closer(void *arg)
{
	struct cm *x = arg;

	x->close_r = clio_close(x->f);
	pthread_mutex_lock(&x->m);
	x->flushing_at_close = x->in_flush;
	pthread_mutex_unlock(&x->m);
	return NULL;
}

static void *
cm_syncer(void *arg)
{
	struct cm *x = arg;

	(void)clio_sync(x->c);
	return NULL;
}

static void
test_close_meanwhile(void **state)
{
	static const struct clio_dev_callbacks cb = { cm_pread, cm_pwrite, cm_flush, NULL };
	struct cm *x = calloc(1, sizeof(*x));
	unsigned char buf[4096];
	struct clio_cache_stats st;
	clio_cache *c;
	clio_dev *d;
	clio_file *g;
	pthread_t th;

	(void)state;
	assert_non_null(x);
	pthread_mutex_init(&x->m, NULL);
	pthread_cond_init(&x->cv, NULL);
	c = cache_with(4096, 256 * KiB);
	assert_int_equal(clio_dev_open_callbacks("cm", sizeof(x->store), 512, 0, &cb,
						 x, 2, &d), 0);
	x->f = tu_open(c, d, CLIO_RDWR);
	tu_fill(buf, sizeof(buf), 0, 1);
	assert_int_equal(clio_pwrite(x->f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	/* the last close of f writes block 0 back and waits in the flush */
	assert_int_equal(pthread_create(&th, NULL, cm_closer, x), 0);
	pthread_mutex_lock(&x->m);
	while (!x->in_flush)
		pthread_cond_wait(&x->cv, &x->m);
	pthread_mutex_unlock(&x->m);
	/* meanwhile g comes and goes: its close is not the last */
	g = tu_open(c, d, CLIO_RDWR);
	tu_fill(buf, sizeof(buf), 8192, 2);
	assert_int_equal(clio_pwrite(g, buf, sizeof(buf), 8192), (ssize_t)sizeof(buf));
	assert_int_equal(clio_close(g), 0);
	pthread_mutex_lock(&x->m);
	x->release = true;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->m);
	pthread_join(th, NULL);
	assert_int_equal(x->close_r, 0);
	/* f's close was the last: g's block is on the device, nothing lost */
	clio_cache_stats(c, &st);
	assert_int_equal(st.lost_bytes, 0);
	assert_int_equal(tu_check(x->store, 4096, 0, 1), -1);
	assert_int_equal(tu_check(x->store + 8192, 4096, 8192, 2), -1);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	pthread_mutex_destroy(&x->m);
	pthread_cond_destroy(&x->cv);
	free(x);
}

/* The last close while a clio_sync flushes the object's device: once the
 * close returns the caller may close the device, so the close must wait
 * for the sync to be done with it (it returned at once, and the sync
 * went on using the device: a use after free once it was closed). */
static void
test_close_sync_dev(void **state)
{
	static const struct clio_dev_callbacks cb = { cm_pread, cm_pwrite, cm_flush, NULL };
	struct cm *x = calloc(1, sizeof(*x));
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	pthread_t ts_th, tc_th;
	clio_dev *d;

	(void)state;
	assert_non_null(x);
	pthread_mutex_init(&x->m, NULL);
	pthread_cond_init(&x->cv, NULL);
	x->c = cache_with(4096, 256 * KiB);
	assert_int_equal(clio_dev_open_callbacks("cm", sizeof(x->store), 512, 0, &cb,
						 x, 2, &d), 0);
	x->f = tu_open(x->c, d, CLIO_RDWR);
	assert_int_equal(pthread_create(&ts_th, NULL, cm_syncer, x), 0);
	pthread_mutex_lock(&x->m);
	while (!x->in_flush)
		pthread_cond_wait(&x->cv, &x->m);
	pthread_mutex_unlock(&x->m);
	/* the sync waits in the device's flush: the last handle closes */
	assert_int_equal(pthread_create(&tc_th, NULL, cm_closer, x), 0);
	nanosleep(&ts, NULL); /* time for a close that does not wait */
	pthread_mutex_lock(&x->m);
	x->release = true;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->m);
	pthread_join(tc_th, NULL);
	pthread_join(ts_th, NULL);
	assert_int_equal(x->close_r, 0);
	if (x->flushing_at_close)
		print_message("the close returned while the sync flushed the device\n");
	assert_false(x->flushing_at_close);
	clio_dev_close(d);
	assert_int_equal(clio_cache_free(x->c), 0);
	pthread_mutex_destroy(&x->m);
	pthread_cond_destroy(&x->cv);
	free(x);
}

/* ------------------------------------------------------------ truncate vs write */

struct tw {
	clio_file *f, *g;
	pthread_barrier_t bar;
	int rounds;
	int wr_errors;
};

static void *
tw_writer(void *arg)
{
	struct tw *t = arg;
	unsigned char buf[4096];
	int i;

	for (i = 0; i < t->rounds; i++) {
		pthread_barrier_wait(&t->bar);
		tu_fill(buf, sizeof(buf), 0, (uint64_t)i + 7);
		if (clio_pwrite(t->g, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) ||
		    clio_fsync(t->g) != 0)
			t->wr_errors++;
		pthread_barrier_wait(&t->bar);
		pthread_barrier_wait(&t->bar); /* the main thread checked */
	}
	return NULL;
}

static void
test_truncate_write(void **state)
{
	char path[256], spec[300];
	unsigned char via[4096], dev[4096];
	struct tw t = { 0 };
	clio_cache *c;
	clio_dev *d;
	pthread_t th;
	int i, cut = 0, kept = 0;

	(void)state;
	c = cache_with(4096, 1 * MiB);
	/* the device's resize sleeps: a writer gets in while it runs */
	d = tu_dev_open(tu_file_spec(path, sizeof(path), spec, sizeof(spec), ""), 0);
	clio_dev_close(d);
	snprintf(spec, sizeof(spec), "fault:resize_delay=0.002@file:%s", path);
	d = tu_dev_open(spec, 0);
	unlink(path);
	t.f = tu_open(c, d, CLIO_RDWR);
	t.g = tu_open(c, d, CLIO_RDWR);
	t.rounds = 150;
	pthread_barrier_init(&t.bar, NULL, 2);
	assert_int_equal(pthread_create(&th, NULL, tw_writer, &t), 0);
	for (i = 0; i < t.rounds; i++) {
		int64_t size;

		/* the file holds one block; the truncate and the writer race */
		assert_int_equal(clio_pwrite(t.f, via, sizeof(via), 0),
				 (ssize_t)sizeof(via));
		assert_int_equal(clio_fsync(t.f), 0);
		pthread_barrier_wait(&t.bar);
		assert_int_equal(clio_ftruncate(t.f, 0), 0);
		pthread_barrier_wait(&t.bar);
		/* whichever came last, the cache and the device agree */
		size = clio_fsize(t.f);
		assert_int_equal(clio_fsync(t.f), 0);
		if ((uint64_t)size != clio_dev_size(d))
			print_message("round %d: cache says %lld bytes, device %llu\n",
				      i, (long long)size,
				      (unsigned long long)clio_dev_size(d));
		assert_true((uint64_t)size == clio_dev_size(d));
		if (size > 0) {
			assert_int_equal(size, 4096);
			assert_int_equal(clio_pread(t.f, via, sizeof(via), 0), 4096);
			assert_int_equal(clio_dev_pread(d, dev, sizeof(dev), 0), 4096);
			assert_memory_equal(via, dev, sizeof(dev));
			assert_int_equal(tu_check(dev, sizeof(dev), 0, (uint64_t)i + 7), -1);
			kept++;
		} else {
			cut++;
		}
		pthread_barrier_wait(&t.bar);
	}
	pthread_join(th, NULL);
	print_message("  %d rounds the write came last, %d the truncate\n", kept, cut);
	assert_int_equal(t.wr_errors, 0);
	assert_int_equal(clio_close(t.g), 0);
	assert_int_equal(clio_close(t.f), 0);
	pthread_barrier_destroy(&t.bar);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* ------------------------------------------------------------ failed truncate */

static void
test_failed_truncate(void **state)
{
	char path[256], spec[300];
	unsigned char buf[8192], back[8192];
	clio_cache *c;
	clio_dev *d;
	clio_file *f;

	(void)state;
	c = cache_with(4096, 1 * MiB);
	d = tu_dev_open(tu_file_spec(path, sizeof(path), spec, sizeof(spec), ""), 0);
	unlink(path);
	f = tu_open(c, d, CLIO_RDWR);
	tu_fill(buf, sizeof(buf), 0, 3);
	assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));

	/* beyond what the file system takes: the device refuses */
	assert_int_equal(clio_ftruncate(f, 1ull << 50), -EFBIG);
	assert_int_equal(clio_fsize(f), (int64_t)sizeof(buf));
	assert_int_equal(clio_pread(f, back, sizeof(back), 0), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	/* beyond what an int64_t size can say: refused before the device */
	assert_int_equal(clio_ftruncate(f, 1ull << 63), -EFBIG);
	assert_int_equal(clio_ftruncate(f, UINT64_MAX), -EFBIG);
	assert_int_equal(clio_pwrite(f, buf, 1, (1ull << 63) - 1), -EFBIG);
	assert_int_equal(clio_pwrite(f, buf, 1, UINT64_MAX - 1), -EFBIG);
	assert_int_equal(clio_fsize(f), (int64_t)sizeof(buf));
	assert_true(clio_fsize(f) >= 0);

	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_dev_size(d), sizeof(buf));
	assert_int_equal(clio_dev_pread(d, back, sizeof(back), 0), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* ------------------------------------------------------------ ENOBUFS */

struct reader {
	clio_cache *c;
	clio_dev *d;
	uint64_t seed;
	int reads, errors, bad;
};

static void *
reader_main(void *arg)
{
	struct reader *r = arg;
	clio_file *f = NULL;
	unsigned char buf[4096];
	uint64_t s = tu_rand_init(r->seed);
	int i;

	if (clio_open(r->c, r->d, CLIO_RDONLY, &f) != 0) {
		r->errors++;
		return NULL;
	}
	for (i = 0; i < r->reads; i++) {
		uint64_t off = tu_rand(&s) % (1 * MiB - sizeof(buf));
		ssize_t n = clio_pread(f, buf, sizeof(buf), off);

		if (n != (ssize_t)sizeof(buf))
			r->errors++;
		else if (tu_check(buf, sizeof(buf), off, 11) != -1)
			r->bad++;
	}
	if (clio_close(f) != 0)
		r->errors++;
	return NULL;
}

/* Views that keep their buffer until told to go. */
struct holdview {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int inside;
	bool go;
};

static int
hold_view(void *arg, const struct iovec *iov, int iovcnt, int last)
{
	struct holdview *h = arg;

	(void)iov;
	(void)iovcnt;
	(void)last;
	pthread_mutex_lock(&h->m);
	h->inside++;
	pthread_cond_broadcast(&h->cv);
	while (!h->go)
		pthread_cond_wait(&h->cv, &h->m);
	pthread_mutex_unlock(&h->m);
	return 0;
}

struct holder {
	clio_file *f;
	struct holdview *h;
	uint64_t off;
	ssize_t r;
};

static void *
holder_main(void *arg)
{
	struct holder *t = arg;

	t->r = clio_pread_view(t->f, 4096, t->off, hold_view, t->h);
	return NULL;
}

static void *
late_reader_main(void *arg)
{
	struct holder *t = arg;
	unsigned char buf[4096];

	t->r = clio_pread(t->f, buf, sizeof(buf), t->off);
	if (t->r == (ssize_t)sizeof(buf) && tu_check(buf, sizeof(buf), t->off, 11) != -1)
		t->r = -EILSEQ;
	return NULL;
}

static void
test_enobufs(void **state)
{
	enum { NREADERS = 32, NBUF = 16 };
	struct reader r[NREADERS];
	pthread_t th[NREADERS];
	struct holdview hv = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false };
	struct holder hold[NBUF + 1];
	unsigned char *buf = malloc(1 * MiB);
	uint64_t seed = tu_seed("enobufs");
	int i, errors = 0, bad = 0;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;

	(void)state;
	c = cache_with(4096, NBUF * 4096);
	d = tu_dev_open("mem:size=1M", 0);
	tu_fill(buf, 1 * MiB, 0, 11);
	assert_int_equal(clio_dev_pwrite(d, buf, 1 * MiB, 0), (ssize_t)(1 * MiB));

	/* every buffer held by a reader's view: one more reader waits for
	 * one of them to let go, it does not fail */
	f = tu_open(c, d, CLIO_RDONLY);
	for (i = 0; i < NBUF; i++) {
		hold[i] = (struct holder){ f, &hv, (uint64_t)i * 8192, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, holder_main, &hold[i]), 0);
	}
	pthread_mutex_lock(&hv.m);
	while (hv.inside < NBUF)
		pthread_cond_wait(&hv.cv, &hv.m);
	pthread_mutex_unlock(&hv.m);
	hold[NBUF] = (struct holder){ f, &hv, 512 * KiB, 0 };
	assert_int_equal(pthread_create(&th[NBUF], NULL, late_reader_main,
					&hold[NBUF]), 0);
	tu_sleep(0.1);
	pthread_mutex_lock(&hv.m);
	hv.go = true;
	pthread_cond_broadcast(&hv.cv);
	pthread_mutex_unlock(&hv.m);
	for (i = 0; i <= NBUF; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < NBUF; i++)
		assert_int_equal(hold[i].r, 4096);
	if (hold[NBUF].r != 4096)
		print_message("  the reader after the held ones got %zd\n", hold[NBUF].r);
	assert_int_equal(hold[NBUF].r, 4096);
	assert_int_equal(clio_close(f), 0);

	/* and many readers on the tiny cache at once */
	for (i = 0; i < NREADERS; i++) {
		r[i] = (struct reader){ c, d, seed + (uint64_t)i, 300, 0, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, reader_main, &r[i]), 0);
	}
	for (i = 0; i < NREADERS; i++) {
		pthread_join(th[i], NULL);
		errors += r[i].errors;
		bad += r[i].bad;
	}
	if (errors || bad)
		tu_seed_failed("enobufs", seed);
	print_message("  %d reads, %d failed, %d wrong\n", NREADERS * 300, errors, bad);
	assert_int_equal(errors, 0);
	assert_int_equal(bad, 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	free(buf);
}

/* ------------------------------------------------------------ poison */

static void
test_poison(void **state)
{
	unsigned char buf[4096], back[4096];
	struct clio_cache_stats cs;
	clio_cache *c;
	clio_dev *bad, *good;
	clio_file *fb, *fg;
	int i;

	(void)state;
	c = cache_with(4096, 64 * 4096); /* 64 buffers */
	bad = tu_dev_open("fault:write=EIO@mem:size=4M", 0);
	good = tu_dev_open("mem:size=4M", 0);
	fb = tu_open(c, bad, CLIO_RDWR);
	fg = tu_open(c, good, CLIO_RDWR);
	/* four times the cache in writes that all fail */
	for (i = 0; i < 256; i++) {
		tu_fill(buf, sizeof(buf), (uint64_t)i * 4096, 5);
		assert_int_equal(clio_pwrite(fb, buf, sizeof(buf), (uint64_t)i * 4096),
				 (ssize_t)sizeof(buf));
	}
	/* the healthy device still gets every buffer it needs */
	for (i = 0; i < 256; i++) {
		tu_fill(buf, sizeof(buf), (uint64_t)i * 4096, 6);
		assert_int_equal(clio_pwrite(fg, buf, sizeof(buf), (uint64_t)i * 4096),
				 (ssize_t)sizeof(buf));
	}
	assert_int_equal(clio_fsync(fg), 0);
	for (i = 0; i < 256; i++) {
		assert_int_equal(clio_pread(fg, back, sizeof(back), (uint64_t)i * 4096),
				 (ssize_t)sizeof(back));
		assert_int_equal(tu_check(back, sizeof(back), (uint64_t)i * 4096, 6), -1);
	}
	assert_int_equal(clio_close(fg), 0);
	/* the failing device's own handle hears of it */
	assert_int_equal(clio_fsync(fb), -EIO);
	clio_cache_stats(c, &cs);
	print_message("  %llu write errors, %llu bytes lost, %llu dirty\n",
		      (unsigned long long)cs.write_errors,
		      (unsigned long long)cs.lost_bytes,
		      (unsigned long long)cs.dirty_bytes);
	assert_true(cs.write_errors > 0);
	assert_true(cs.lost_bytes > 0);
	/* what it keeps is bounded: an eighth of the cache, or a cluster */
	assert_true(cs.dirty_bytes <= 16 * 4096);
	assert_int_equal(clio_close(fb), -EIO);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(bad);
	clio_dev_close(good);
}

/* ------------------------------------------------------------ close cost */

/* Seconds for n rounds of open, write, truncate and close of one small
 * object in a cache of nbuf buffers of 4 KiB. */
static double
close_rounds(uint64_t nbuf, int n)
{
	unsigned char buf[4096] = { 1 };
	clio_cache *c = cache_with(4096, nbuf * 4096);
	clio_dev *d = tu_dev_open("mem:size=1M", 0);
	double t0 = tu_now(), dt;
	int i;

	for (i = 0; i < n; i++) {
		clio_file *f = tu_open(c, d, CLIO_RDWR);

		assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 0),
				 (ssize_t)sizeof(buf));
		assert_int_equal(clio_ftruncate(f, 8192), 0);
		assert_int_equal(clio_close(f), 0);
	}
	dt = tu_now() - t0;
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	return dt;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
test_close_cost(void **state)
{
	double small[3], big[3];
	int i;

	(void)state;
	/* 1024 buffers against 256 Ki buffers (1 GiB, memory untouched): a
	 * close or truncate that walked every buffer would take 256 times
	 * as long in the big cache */
	for (i = 0; i < 3; i++) {
		small[i] = close_rounds(1024, 500);
		big[i] = close_rounds(256 * 1024, 500);
	}
	qsort(small, 3, sizeof(double), cmp_double);
	qsort(big, 3, sizeof(double), cmp_double);
	print_message("  500 open+write+truncate+close: %.4f s with 1024 buffers, "
		      "%.4f s with 262144 (medians)\n", small[1], big[1]);
	assert_true(big[1] < 16 * small[1] + 0.05);
}

/* ------------------------------------------------------------ sync overlap */

#define OVERLAP_DEVS 4

struct overlap {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int inflight, max_inflight;
	unsigned char mem[OVERLAP_DEVS][64 * 1024];
};

struct overlap_dev {
	struct overlap *ov;
	int i;
};

static int
overlap_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct overlap_dev *od = arg;

	pthread_mutex_lock(&od->ov->lock);
	memcpy(buf, od->ov->mem[od->i] + off, len);
	pthread_mutex_unlock(&od->ov->lock);
	return 0;
}

static int
overlap_pwrite(void *arg, const void *buf, size_t len, uint64_t off)
{
	struct overlap_dev *od = arg;

	pthread_mutex_lock(&od->ov->lock);
	memcpy(od->ov->mem[od->i] + off, buf, len);
	pthread_mutex_unlock(&od->ov->lock);
	return 0;
}

/* A flush that waits (up to 2 s) until another device's flush runs too;
 * device 2's fails. */
static int
overlap_flush(void *arg)
{
	struct overlap_dev *od = arg;
	struct overlap *ov = od->ov;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	pthread_mutex_lock(&ov->lock);
	if (++ov->inflight > ov->max_inflight)
		ov->max_inflight = ov->inflight;
	pthread_cond_broadcast(&ov->cv);
	while (ov->max_inflight < 2 &&
	       pthread_cond_timedwait(&ov->cv, &ov->lock, &until) == 0)
		;
	ov->inflight--;
	pthread_mutex_unlock(&ov->lock);
	return od->i == 2 ? -EIO : 0;
}

static const struct clio_dev_callbacks overlap_ops = { overlap_pread, overlap_pwrite,
						       overlap_flush, NULL };

static void
test_sync_overlap(void **state)
{
	struct overlap *ov = calloc(1, sizeof(*ov));
	struct overlap_dev od[OVERLAP_DEVS];
	clio_cache *c = cache_with(4 * KiB, 1 * MiB);
	clio_dev *d[OVERLAP_DEVS];
	clio_file *f[OVERLAP_DEVS];
	char buf[4096];
	int i;

	(void)state;
	assert_non_null(ov);
	pthread_mutex_init(&ov->lock, NULL);
	pthread_cond_init(&ov->cv, NULL);
	for (i = 0; i < OVERLAP_DEVS; i++) {
		od[i].ov = ov;
		od[i].i = i;
		assert_int_equal(clio_dev_open_callbacks("overlap", 64 * KiB, 0, 0, &overlap_ops,
							 &od[i], 2, &d[i]), 0);
		assert_int_equal(clio_open(c, d[i], CLIO_RDWR, &f[i]), 0);
		memset(buf, 'a' + i, sizeof(buf));
		assert_int_equal(clio_pwrite(f[i], buf, sizeof(buf), 8 * KiB), sizeof(buf));
	}
	assert_int_equal(clio_sync(c), -EIO);
	pthread_mutex_lock(&ov->lock);
	if (ov->max_inflight < 2)
		fail_msg("clio_sync flushed one device at a time (at most %d at once)",
			 ov->max_inflight);
	for (i = 0; i < OVERLAP_DEVS; i++)
		assert_int_equal(ov->mem[i][8 * KiB + 100], 'a' + i);
	pthread_mutex_unlock(&ov->lock);
	for (i = 0; i < OVERLAP_DEVS; i++) {
		/* the failed flush is device 2's handle's error, no other's */
		assert_int_equal(clio_close(f[i]), i == 2 ? -EIO : 0);
		clio_dev_close(d[i]);
	}
	assert_int_equal(clio_cache_free(c), 0);
	pthread_cond_destroy(&ov->cv);
	pthread_mutex_destroy(&ov->lock);
	free(ov);
}

/* ------------------------------------------------------------ chaos */

/*
 * Every 512-byte sector written carries a tag: its own offset and a
 * check word.  A read returns, per sector, zeros (a hole, or past a
 * truncate) or a whole tag of that offset: anything else is data from
 * the wrong place, or torn.
 */
#define SECT 512
#define CHAOS_SIZE (256 * KiB)

struct tag {
	uint64_t off, writer, check;
};

static void
tag_fill(unsigned char *buf, size_t len, uint64_t off, uint64_t writer)
{
	size_t i;

	memset(buf, 0, len);
	for (i = 0; i < len; i += SECT) {
		struct tag t = { off + i, writer, (off + i) * 31 + writer * 7 + 1 };
		memcpy(buf + i, &t, sizeof(t));
		memset(buf + i + sizeof(t), (int)(writer & 0xff), SECT - sizeof(t));
	}
}

/* 0 if every sector of buf (read at off) is zero or a whole tag. */
static long
tag_check(const unsigned char *buf, size_t len, uint64_t off)
{
	size_t i, j;

	for (i = 0; i < len; i += SECT) {
		struct tag t;
		bool zero = true;

		memcpy(&t, buf + i, sizeof(t));
		for (j = 0; j < SECT && zero; j++)
			zero = buf[i + j] == 0;
		if (zero)
			continue;
		if (t.off != off + i || t.check != t.off * 31 + t.writer * 7 + 1)
			return (long)i;
		for (j = sizeof(t); j < SECT; j++)
			if (buf[i + j] != (unsigned char)(t.writer & 0xff))
				return (long)(i + j);
	}
	return -1;
}

struct chaos {
	clio_cache *c;
	clio_dev *d;
	uint64_t seed;
	atomic_int bad, errors;
	atomic_ulong ops[7];
};

struct chaos_arg {
	struct chaos *ch;
	int id;
};

/* Count an error, and say what it was (the first few). */
static void
chaos_error(struct chaos *ch, const char *what, long long r)
{
	if (atomic_fetch_add(&ch->errors, 1) < 5)
		fprintf(stderr, "chaos: %s returned %lld\n", what, r);
}

static void *
chaos_main(void *arg)
{
	struct chaos_arg *a = arg;
	struct chaos *ch = a->ch;
	uint64_t s = tu_rand_init(ch->seed * 131 + (uint64_t)a->id);
	unsigned char *buf = malloc(64 * KiB);
	clio_file *f = NULL;
	int i;

	if (clio_open(ch->c, ch->d, CLIO_RDWR, &f) != 0) {
		ch->errors++;
		free(buf);
		return NULL;
	}
	for (i = 0; i < 3000; i++) {
		unsigned op = (unsigned)(tu_rand(&s) % 100);
		uint64_t off = tu_rand(&s) % (CHAOS_SIZE / SECT) * SECT;
		size_t len = (size_t)(1 + tu_rand(&s) % 32) * SECT;
		ssize_t n;
		int r;

		if (off + len > CHAOS_SIZE)
			len = (size_t)(CHAOS_SIZE - off);
		if (op < 40) {
			n = clio_pread(f, buf, len, off);
			if (n < 0)
				chaos_error(ch, "pread", n);
			else if (n % SECT != 0 || tag_check(buf, (size_t)n, off) != -1)
				ch->bad++;
			ch->ops[0]++;
		} else if (op < 75) {
			tag_fill(buf, len, off, (uint64_t)a->id * 1000000 + (uint64_t)i);
			n = clio_pwrite(f, buf, len, off);
			if (n != (ssize_t)len)
				chaos_error(ch, "pwrite", n);
			ch->ops[1]++;
		} else if (op < 82) {
			r = clio_ftruncate(f, tu_rand(&s) % (CHAOS_SIZE / SECT) * SECT);
			if (r != 0)
				chaos_error(ch, "ftruncate", r);
			ch->ops[2]++;
		} else if (op < 89) {
			if ((r = clio_fsync(f)) != 0)
				chaos_error(ch, "fsync", r);
			ch->ops[3]++;
		} else if (op < 93) {
			if ((r = clio_sync(ch->c)) != 0)
				chaos_error(ch, "clio_sync", r);
			ch->ops[4]++;
		} else if (op < 97) {
			if ((r = clio_close(f)) != 0 ||
			    (r = clio_open(ch->c, ch->d, CLIO_RDWR, &f)) != 0) {
				chaos_error(ch, "close/open", r);
				f = NULL;
				break;
			}
			ch->ops[5]++;
		} else {
			int64_t sz = clio_fsize(f);
			if (sz < 0 || sz % SECT != 0)
				ch->bad++;
			ch->ops[6]++;
		}
	}
	if (f != NULL && clio_close(f) != 0)
		ch->errors++;
	free(buf);
	return NULL;
}

static void
chaos_run(const char *spec)
{
	enum { NTHREADS = 4 };
	struct chaos ch;
	struct chaos_arg args[NTHREADS];
	pthread_t th[NTHREADS];
	unsigned char *via, *dev;
	clio_file *f;
	int64_t size;
	int i;

	memset(&ch, 0, sizeof(ch));
	ch.seed = tu_seed("chaos");
	{
		struct clio_conf conf = CLIO_CONF_DEFAULTS;

		conf.bsize = 4096;
		conf.maxphys = 32 * KiB;
		conf.cache_size = 48 * 4096; /* eviction and write-back all along */
		conf.dirty_age = 0.02;
		assert_int_equal(clio_cache_new(&conf, &ch.c), 0);
	}
	ch.d = tu_dev_open(spec, 0);
	for (i = 0; i < NTHREADS; i++) {
		args[i] = (struct chaos_arg){ &ch, i };
		assert_int_equal(pthread_create(&th[i], NULL, chaos_main, &args[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	print_message("  %s: %lu reads %lu writes %lu truncates %lu fsyncs "
		      "%lu syncs %lu reopens; %d errors, %d bad\n", spec,
		      ch.ops[0], ch.ops[1], ch.ops[2], ch.ops[3], ch.ops[4],
		      ch.ops[5], (int)ch.errors, (int)ch.bad);
	if (ch.errors || ch.bad)
		tu_seed_failed("chaos", ch.seed);
	assert_int_equal(ch.errors, 0);
	assert_int_equal(ch.bad, 0);

	/* after an fsync the device holds what the cache shows */
	f = tu_open(ch.c, ch.d, CLIO_RDWR);
	assert_int_equal(clio_fsync(f), 0);
	size = clio_fsize(f);
	assert_true(size >= 0 && size <= (int64_t)CHAOS_SIZE);
	assert_true((uint64_t)size == clio_dev_size(ch.d));
	via = malloc(CHAOS_SIZE);
	dev = malloc(CHAOS_SIZE);
	assert_int_equal(clio_pread(f, via, (size_t)size, 0), (ssize_t)size);
	assert_int_equal(clio_dev_pread(ch.d, dev, (size_t)size, 0), (ssize_t)size);
	assert_int_equal(tag_check(via, (size_t)size, 0), -1);
	if (memcmp(via, dev, (size_t)size) != 0)
		tu_seed_failed("chaos", ch.seed);
	assert_memory_equal(via, dev, (size_t)size);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(ch.c), 0);
	clio_dev_close(ch.d);
	free(via);
	free(dev);
}

static void
test_chaos_mem(void **state)
{
	(void)state;
	chaos_run("mem:size=0");
}

static void
test_chaos_file(void **state)
{
	char path[256], spec[300];

	(void)state;
	tu_file_spec(path, sizeof(path), spec, sizeof(spec), "?qd=4");
	chaos_run(spec);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sync_close),
		cmocka_unit_test(test_close_meanwhile),
		cmocka_unit_test(test_close_sync_dev),
		cmocka_unit_test(test_truncate_write),
		cmocka_unit_test(test_failed_truncate),
		cmocka_unit_test(test_enobufs),
		cmocka_unit_test(test_poison),
		cmocka_unit_test(test_close_cost),
		cmocka_unit_test(test_sync_overlap),
		cmocka_unit_test(test_chaos_mem),
		cmocka_unit_test(test_chaos_file),
	};

	if (getenv("CLIO_TEST") != NULL) /* run one: CLIO_TEST=test_chaos_mem */
		cmocka_set_test_filter(getenv("CLIO_TEST"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
