/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-probe.c - the public API probed from outside, as an adversary
 * would: races between the direct path and the buffered one, failures
 * that come and go at the device, and boundary values.
 *
 *  - direct_buffered_block: a direct write and a buffered write to other
 *    bytes of the same block at once: the buffered writer must not
 *    write the block's old bytes back over what the direct write put on
 *    the device (a device of callbacks holds the direct write until the
 *    buffered one has started, so the order is forced);
 *  - direct_truncate: a direct write racing a truncate: afterwards the
 *    object is either cut (the truncate came last) or holds all of the
 *    write, and the cache's size is the file's;
 *  - overlap: overlapping direct and buffered writes at once on mem,
 *    file and sim devices: the cache and the device agree afterwards;
 *  - truncate_direct_starve: truncates among direct writers that never
 *    pause all complete at once;
 *  - werr_once: a write-back that fails is reported by fsync or close
 *    exactly once to every handle, the failed data stays cached and
 *    dirty, and once the device heals an fsync puts it on the device;
 *  - flush_err: so is a device flush that fails (another handle's fsync,
 *    a clio_sync);
 *  - werr_fault: ENOSPC over a range of a file: the good blocks of a run
 *    that failed get to the file, only the bad ones are lost;
 *  - werr_busy: failed buffers are not dropped to make room while other
 *    buffers are being written;
 *  - werr_pressure: a tiny cache whose write-backs all fail: losses are
 *    counted, and the rest is on the device;
 *  - rerr, rerr_ahead: failed reads change nothing and fail only the
 *    reads that touch the bad range, read-ahead or not;
 *  - durable: fsync from threads on a device with a volatile write
 *    cache: what a handle wrote before its fsync is durable after it;
 *  - dev_bounds, boundaries, modes, odd_sizes: offsets near INT64_MAX
 *    and UINT64_MAX at the device and the cache, lengths of 0 and above
 *    SSIZE_MAX (views too), access modes, devices of size 0 and of sizes
 *    no multiple of the block or the sector, direct reads of their tail;
 *  - mixed: seeded threads on buffered and direct handles of one file
 *    (engine uring and threads, direct=0/1; odd bsize, tiny caches),
 *    each writing only its own unaligned stripes, thread 0 also growing
 *    and truncating the tail, with fsync, clio_sync and reopen, and a
 *    second object (mem, under fault:short=1 in every other
 *    configuration) in the same cache; at the end the backing file is
 *    checked byte for byte with plain pread.
 * Random tests print their seed (CLIO_SEED repeats one); CLIO_TEST=NAME
 * runs one test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

static clio_cache *
cache_of(uint32_t bsize, uint64_t size, uint32_t maxphys)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	clio_cache *c = NULL;
	char err[256] = "";

	conf.bsize = bsize;
	conf.maxbsize = bsize > conf.maxbsize ? bsize : conf.maxbsize;
	conf.maxphys = maxphys < conf.maxbsize ? conf.maxbsize : maxphys;
	conf.cache_size = size;
	if (clio_conf_check(&conf, err, sizeof(err)) != 0)
		print_message("conf: %s\n", err);
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	return c;
}

/* ------------------------------------------------------------ a device of callbacks */

/* Memory behind callbacks; a write of exactly hold_len bytes at hold_off
 * waits, before it changes anything, until the test lets it go. */
struct cbdev {
	unsigned char *mem;
	uint64_t size;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	uint64_t hold_off, hold_len;
	bool holding, release;
	atomic_bool fail_writes, fail_reads, fail_flush;
	/* writes overlapping [fail_off, fail_off + fail_len) fail; the
	 * others take slow_s seconds */
	_Atomic uint64_t fail_off, fail_len;
	_Atomic double slow_s;
	atomic_int writes_failed;
};

static int
cb_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct cbdev *m = arg;

	if (atomic_load(&m->fail_reads))
		return -EIO;
	pthread_mutex_lock(&m->lock);
	memcpy(buf, m->mem + off, len);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static int
cb_pwrite(void *arg, const void *buf, size_t len, uint64_t off)
{
	struct cbdev *m = arg;

	if (atomic_load(&m->fail_writes) ||
	    (off < atomic_load(&m->fail_off) + atomic_load(&m->fail_len) &&
	     off + len > atomic_load(&m->fail_off))) {
		atomic_fetch_add(&m->writes_failed, 1);
		return -EIO;
	}
	if (atomic_load(&m->slow_s) > 0)
		tu_sleep(atomic_load(&m->slow_s));
	pthread_mutex_lock(&m->lock);
	if (off == m->hold_off && len == m->hold_len && !m->release) {
		m->holding = true;
		pthread_cond_broadcast(&m->cv);
		while (!m->release)
			pthread_cond_wait(&m->cv, &m->lock);
	}
	memcpy(m->mem + off, buf, len);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static int
cb_flush(void *arg)
{
	struct cbdev *m = arg;

	return atomic_load(&m->fail_flush) ? -EIO : 0;
}

static const struct clio_dev_callbacks cb_ops = {
	.pread = cb_pread, .pwrite = cb_pwrite, .flush = cb_flush,
};

static clio_dev *
cbdev_open(struct cbdev *m, uint64_t size)
{
	clio_dev *d = NULL;

	memset(m, 0, sizeof(*m));
	m->size = size;
	m->mem = calloc(1, size);
	assert_non_null(m->mem);
	m->hold_len = UINT64_MAX;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cv, NULL);
	assert_int_equal(clio_dev_open_callbacks("probe", size, 512, 0, &cb_ops,
						 m, 4, &d), 0);
	return d;
}

static void
cbdev_free(struct cbdev *m)
{
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->cv);
	free(m->mem);
}

/* ------------------------------------------------------------ direct vs buffered */

struct dw {
	clio_file *f;
	const void *buf;
	size_t len;
	uint64_t off;
	ssize_t r;
};

static void *
dw_main(void *arg)
{
	struct dw *w = arg;

	w->r = clio_pwrite(w->f, w->buf, w->len, w->off);
	return NULL;
}

static void
test_direct_buffered_block(void **state)
{
	unsigned char a[512], b[100], got[4096];
	struct cbdev m;
	struct dw w;
	clio_cache *c;
	clio_dev *d;
	clio_file *fd, *fb;
	pthread_t th;

	(void)state;
	c = cache_of(4096, 256 * KiB, 64 * KiB);
	d = cbdev_open(&m, 64 * KiB);
	fd = tu_open(c, d, CLIO_RDWR | CLIO_DIRECT);
	fb = tu_open(c, d, CLIO_RDWR);
	tu_fill(a, sizeof(a), 0, 1);
	tu_fill(b, sizeof(b), 1024, 2);
	m.hold_off = 0;
	m.hold_len = sizeof(a);

	/* the direct write of bytes [0, 512) reaches the device and waits */
	w = (struct dw){ fd, a, sizeof(a), 0, 0 };
	assert_int_equal(pthread_create(&th, NULL, dw_main, &w), 0);
	pthread_mutex_lock(&m.lock);
	while (!m.holding)
		pthread_cond_wait(&m.cv, &m.lock);
	pthread_mutex_unlock(&m.lock);
	/* a buffered write of bytes [1024, 1124) of the same block, which
	 * reads the block first: it may finish before or after the direct
	 * one is let go; either way neither write is lost */
	struct dw w2 = { fb, b, sizeof(b), 1024, 0 };
	pthread_t th2;

	assert_int_equal(pthread_create(&th2, NULL, dw_main, &w2), 0);
	tu_sleep(0.05);
	pthread_mutex_lock(&m.lock);
	m.release = true;
	pthread_cond_broadcast(&m.cv);
	pthread_mutex_unlock(&m.lock);
	pthread_join(th, NULL);
	pthread_join(th2, NULL);
	assert_int_equal(w.r, (ssize_t)sizeof(a));
	assert_int_equal(w2.r, (ssize_t)sizeof(b));

	assert_int_equal(clio_fsync(fb), 0);
	assert_int_equal(clio_close(fb), 0);
	assert_int_equal(clio_close(fd), 0);
	pthread_mutex_lock(&m.lock);
	memcpy(got, m.mem, sizeof(got));
	pthread_mutex_unlock(&m.lock);
	if (tu_check(got, sizeof(a), 0, 1) != -1)
		print_message("the direct write's bytes were written over at %ld\n",
			      tu_check(got, sizeof(a), 0, 1));
	assert_int_equal(tu_check(got, sizeof(a), 0, 1), -1);
	assert_int_equal(tu_check(got + 1024, sizeof(b), 1024, 2), -1);
	assert_int_equal(tu_check_zero(got + 512, 512), -1);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	cbdev_free(&m);
}

/* ------------------------------------------------------------ direct vs truncate */

struct dt {
	clio_file *f;
	pthread_barrier_t bar;
	unsigned char *buf;
	size_t len;
	int rounds;
	long delay_ns[64], wdelay_ns[64]; /* the truncate's, the write's */
	ssize_t r[64];
};

static void *
dt_writer(void *arg)
{
	struct dt *t = arg;
	int i;

	for (i = 0; i < t->rounds; i++) {
		pthread_barrier_wait(&t->bar);
		tu_sleep((double)t->wdelay_ns[i] * 1e-9);
		t->r[i] = clio_pwrite(t->f, t->buf, t->len, 0);
		pthread_barrier_wait(&t->bar);
	}
	return NULL;
}

static void
test_direct_truncate(void **state)
{
	char path[256], spec[300];
	struct dt t;
	clio_cache *c;
	clio_dev *d;
	clio_file *g;
	pthread_t th;
	unsigned char *back;
	uint64_t seed = tu_seed("direct_truncate"), rng = tu_rand_init(seed);
	int i, fd, cut = 0, kept = 0;

	(void)state;
	memset(&t, 0, sizeof(t));
	c = cache_of(4096, 512 * KiB, 64 * KiB);
	tu_file_spec(path, sizeof(path), spec, sizeof(spec), "?qd=4");
	d = tu_dev_open(spec, 0);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	unlink(path);
	t.len = 2 * MiB;
	t.buf = malloc(t.len);
	back = malloc(t.len);
	assert_non_null(t.buf);
	assert_non_null(back);
	tu_fill(t.buf, t.len, 0, seed);
	t.f = tu_open(c, d, CLIO_RDWR | CLIO_DIRECT);
	g = tu_open(c, d, CLIO_RDWR);
	t.rounds = 40;
	for (i = 0; i < t.rounds; i++)
		*(i % 2 ? &t.delay_ns[i] : &t.wdelay_ns[i]) =
			(long)(tu_rand(&rng) % 700000);
	pthread_barrier_init(&t.bar, NULL, 2);
	assert_int_equal(pthread_create(&th, NULL, dt_writer, &t), 0);
	for (i = 0; i < t.rounds; i++) {
		struct stat st;
		int64_t size;

		pthread_barrier_wait(&t.bar);
		tu_sleep((double)t.delay_ns[i] * 1e-9);
		assert_int_equal(clio_ftruncate(g, 0), 0);
		pthread_barrier_wait(&t.bar);
		assert_int_equal(t.r[i], (ssize_t)t.len);
		size = clio_fsize(g);
		assert_int_equal(fstat(fd, &st), 0);
		if (size != st.st_size ||
		    (size != 0 && size != (int64_t)t.len)) {
			tu_seed_failed("direct_truncate", seed);
			print_message("round %d: the cache says %lld bytes, the file "
				      "has %lld\n", i, (long long)size,
				      (long long)st.st_size);
			fail();
		}
		if (size > 0) {
			long bad;

			assert_int_equal(pread(fd, back, t.len, 0), (ssize_t)t.len);
			bad = tu_check(back, t.len, 0, seed);
			if (bad != -1) {
				tu_seed_failed("direct_truncate", seed);
				print_message("round %d: byte %ld of the write is "
					      "wrong on the file\n", i, bad);
				fail();
			}
			kept++;
		} else {
			cut++;
		}
	}
	pthread_join(th, NULL);
	print_message("  %d rounds the write came last, %d the truncate\n", kept,
		      cut);
	pthread_barrier_destroy(&t.bar);
	assert_int_equal(clio_close(g), 0);
	assert_int_equal(clio_close(t.f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	close(fd);
	free(t.buf);
	free(back);
}

/* Overlapping direct and buffered writes at once: whichever wins each
 * byte, afterwards the cache and the device hold the same bytes, each
 * from one of the writes (no stale buffer survives a direct write). */
struct ov {
	clio_file *f;
	pthread_barrier_t *bar;
	unsigned char *buf;
	uint64_t rng;
	int rounds;
	bool direct;
	atomic_int *errors;
};

static void *
ov_main(void *arg)
{
	struct ov *v = arg;
	int i;

	for (i = 0; i < v->rounds; i++) {
		uint64_t x = tu_rand(&v->rng), off, len;

		if (v->direct) {
			off = (x % 96) * 512;
			len = (1 + (x >> 8) % 64) * 512;
		} else {
			off = x % 60000;
			len = 1 + (x >> 20) % 20000;
		}
		pthread_barrier_wait(v->bar);
		tu_fill(v->buf, len, off, v->direct ? 91 : 92);
		if (clio_pwrite(v->f, v->buf, len, off) != (ssize_t)len)
			atomic_fetch_add(v->errors, 1);
		pthread_barrier_wait(v->bar);
		pthread_barrier_wait(v->bar); /* the check */
	}
	return NULL;
}

static void
test_overlap(void **state)
{
	uint64_t seed = tu_seed("overlap");
	static const char *const specs[] = { "mem:size=128K", "file" };
	const char *flavour = getenv("CLIO_FLAVOUR");
	int rounds = flavour == NULL || strcmp(flavour, "plain") == 0 ? 150 : 50;
	char path[256], spec[300];
	int k;

	(void)state;
	for (k = 0; k < 6; k++) {
		unsigned char *via = malloc(128 * KiB), *dev = malloc(128 * KiB);
		pthread_barrier_t bar;
		atomic_int errors = 0;
		struct ov v[2];
		pthread_t th[2];
		clio_cache *c = cache_of(k % 4 < 2 ? 4096 : 1024, 32 * 4096, 64 * KiB);
		clio_dev *d;
		int i, t;

		assert_non_null(via);
		assert_non_null(dev);
		if (k >= 4) {
			d = tu_dev_open(k == 4 ? "sim:size=128K" :
					"sim:preset=rz25,size=128K,maxio=8K", 0);
		} else if (k % 2) {
			int fd = tu_tmpfile(path, sizeof(path));

			assert_int_equal(ftruncate(fd, 128 * KiB), 0);
			close(fd);
			snprintf(spec, sizeof(spec), "file:%s?qd=4", path);
			d = tu_dev_open(spec, 0);
			unlink(path);
		} else {
			d = tu_dev_open(specs[0], 0);
		}
		pthread_barrier_init(&bar, NULL, 3);
		for (t = 0; t < 2; t++) {
			v[t] = (struct ov){ tu_open(c, d, CLIO_RDWR | (t ? CLIO_DIRECT : 0)),
					    &bar, NULL, tu_rand_init(seed + (uint64_t)(k * 2 + t)),
					    rounds, t == 1, &errors };
			assert_int_equal(posix_memalign((void **)&v[t].buf, 4096, 64 * KiB), 0);
			assert_int_equal(pthread_create(&th[t], NULL, ov_main, &v[t]), 0);
		}
		for (i = 0; i < v[0].rounds; i++) {
			long bad = -1;
			uint64_t j;

			pthread_barrier_wait(&bar);
			pthread_barrier_wait(&bar);
			assert_int_equal(clio_fsync(v[0].f), 0);
			assert_int_equal(clio_pread(v[0].f, via, 128 * KiB, 0), (ssize_t)(128 * KiB));
			assert_int_equal(clio_dev_pread(d, dev, 128 * KiB, 0), (ssize_t)(128 * KiB));
			for (j = 0; j < 128 * KiB && bad < 0; j++)
				if (via[j] != dev[j])
					bad = (long)j;
			if (bad >= 0 || atomic_load(&errors) != 0) {
				tu_seed_failed("overlap", seed);
				print_message("%s bsize %s round %d: byte %ld: the cache "
					      "has %u, the device %u\n",
					      k >= 4 ? "sim" : k % 2 ? "file" : "mem",
					      k % 4 < 2 ? "4096" : "1024", i, bad,
					      bad >= 0 ? via[bad] : 0, bad >= 0 ? dev[bad] : 0);
				fail();
			}
			pthread_barrier_wait(&bar);
		}
		for (t = 0; t < 2; t++) {
			pthread_join(th[t], NULL);
			assert_int_equal(clio_close(v[t].f), 0);
			free(v[t].buf);
		}
		pthread_barrier_destroy(&bar);
		assert_int_equal(clio_cache_free(c), 0);
		clio_dev_close(d);
		free(via);
		free(dev);
	}
}

/* Direct writers that never pause do not starve a truncate: it waits
 * for the writes in flight, and new ones wait for it. */
struct sv {
	clio_file *f;
	unsigned char *buf;
	atomic_bool stop;
	atomic_int writes;
};

static void *
sv_main(void *arg)
{
	struct sv *v = arg;
	double end = tu_now() + 5.0; /* bounded, whatever happens */

	while (!atomic_load(&v->stop) && tu_now() < end) {
		if (clio_pwrite(v->f, v->buf, 64 * KiB, 0) != (ssize_t)(64 * KiB))
			break;
		atomic_fetch_add(&v->writes, 1);
	}
	return NULL;
}

static void
test_truncate_direct_starve(void **state)
{
	char path[256], spec[300];
	clio_cache *c = cache_of(4096, 64 * 4096, 64 * KiB);
	clio_dev *d = tu_dev_open(tu_file_spec(path, sizeof(path), spec, sizeof(spec),
					   "?qd=4"), 0);
	struct sv v[2];
	pthread_t th[2];
	clio_file *g = tu_open(c, d, CLIO_RDWR);
	int t, i, done = 0;
	double t0;

	(void)state;
	for (t = 0; t < 2; t++) {
		v[t].f = tu_open(c, d, CLIO_RDWR | CLIO_DIRECT);
		assert_int_equal(posix_memalign((void **)&v[t].buf, 4096, 64 * KiB), 0);
		tu_fill(v[t].buf, 64 * KiB, 0, 101);
		atomic_init(&v[t].stop, false);
		atomic_init(&v[t].writes, 0);
		assert_int_equal(pthread_create(&th[t], NULL, sv_main, &v[t]), 0);
	}
	while (atomic_load(&v[0].writes) + atomic_load(&v[1].writes) < 10)
		tu_sleep(0.001);
	t0 = tu_now();
	for (i = 0; i < 20; i++) {
		assert_int_equal(clio_ftruncate(g, (uint64_t)(i % 2) * 64 * KiB), 0);
		done++;
	}
	print_message("  20 truncates among direct writes in %.3f s\n", tu_now() - t0);
	for (t = 0; t < 2; t++)
		atomic_store(&v[t].stop, true);
	for (t = 0; t < 2; t++) {
		pthread_join(th[t], NULL);
		assert_int_equal(clio_close(v[t].f), 0);
		free(v[t].buf);
	}
	/* the writers gave up after 5 s at most: had the truncates waited
	 * for that, they came only after the writers stopped */
	assert_true(tu_now() - t0 < 4.0);
	assert_int_equal(done, 20);
	assert_int_equal(clio_close(g), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	unlink(path);
}

/* ------------------------------------------------------------ write-back errors */

static void
dev_expect(struct cbdev *m, uint64_t off, size_t len, uint64_t seed)
{
	long bad;

	pthread_mutex_lock(&m->lock);
	bad = tu_check(m->mem + off, len, off, seed);
	pthread_mutex_unlock(&m->lock);
	if (bad != -1)
		print_message("device byte %llu is wrong\n",
			      (unsigned long long)(off + (uint64_t)bad));
	assert_int_equal(bad, -1);
}

static void
test_werr_once(void **state)
{
	unsigned char buf[16384], back[16384];
	struct clio_cache_stats st;
	struct cbdev m;
	clio_cache *c;
	clio_dev *d;
	clio_file *f, *g, *h;

	(void)state;
	c = cache_of(4096, 256 * KiB, 64 * KiB);
	d = cbdev_open(&m, 256 * KiB);
	f = tu_open(c, d, CLIO_RDWR);
	g = tu_open(c, d, CLIO_RDWR);
	tu_fill(buf, sizeof(buf), 4096, 11);
	assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 4096), (ssize_t)sizeof(buf));

	/* fsync fails, and says so once to each handle open then */
	atomic_store(&m.fail_writes, true);
	assert_int_equal(clio_fsync(f), -EIO);
	assert_true(atomic_load(&m.writes_failed) > 0);
	/* the data is still what reads see */
	assert_int_equal(clio_pread(g, back, sizeof(back), 4096), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	h = tu_open(c, d, CLIO_RDWR); /* opened after the failure */
	atomic_store(&m.fail_writes, false);
	assert_int_equal(clio_fsync(f), 0);
	dev_expect(&m, 4096, sizeof(buf), 11);
	assert_int_equal(clio_fsync(g), -EIO);
	assert_int_equal(clio_fsync(g), 0);
	assert_int_equal(clio_fsync(h), 0);
	assert_int_equal(clio_close(h), 0);

	/* a failure met by clio_sync, not by a handle: the next fsync or
	 * close of each handle reports it */
	tu_fill(buf, sizeof(buf), 4096, 12);
	assert_int_equal(clio_pwrite(g, buf, sizeof(buf), 4096), (ssize_t)sizeof(buf));
	atomic_store(&m.fail_writes, true);
	assert_true(clio_sync(c) < 0);
	atomic_store(&m.fail_writes, false);
	assert_int_equal(clio_writeback(f), -EIO);
	assert_int_equal(clio_fsync(f), 0);
	dev_expect(&m, 4096, sizeof(buf), 12);
	assert_int_equal(clio_close(g), -EIO);

	/* the last close of a device that fails: reported, the loss counted */
	tu_fill(buf, sizeof(buf), 0, 13);
	assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	atomic_store(&m.fail_writes, true);
	assert_int_equal(clio_close(f), -EIO);
	atomic_store(&m.fail_writes, false);
	clio_cache_stats(c, &st);
	assert_true(st.write_errors > 0);
	assert_int_equal(st.lost_bytes, sizeof(buf));
	assert_int_equal(st.dirty_bytes, 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	cbdev_free(&m);
}

/* A device flush that fails may have lost what was written before it
 * (a file's fdatasync does drop the pages it could not write): every
 * handle open then hears of it at its next fsync, once, whether the
 * failed flush was another handle's fsync or a clio_sync. */
static void
test_flush_err(void **state)
{
	unsigned char buf[8192];
	struct cbdev m;
	clio_cache *c;
	clio_dev *d;
	clio_file *f, *g;

	(void)state;
	c = cache_of(4096, 256 * KiB, 64 * KiB);
	d = cbdev_open(&m, 256 * KiB);
	f = tu_open(c, d, CLIO_RDWR);
	g = tu_open(c, d, CLIO_RDWR);
	tu_fill(buf, sizeof(buf), 0, 121);

	assert_int_equal(clio_pwrite(g, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	atomic_store(&m.fail_flush, true);
	assert_int_equal(clio_sync(c), -EIO);
	atomic_store(&m.fail_flush, false);
	assert_int_equal(clio_fsync(g), -EIO);
	assert_int_equal(clio_fsync(g), 0);
	assert_int_equal(clio_fsync(f), -EIO);
	assert_int_equal(clio_fsync(f), 0);

	assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 8192), (ssize_t)sizeof(buf));
	atomic_store(&m.fail_flush, true);
	assert_int_equal(clio_fsync(f), -EIO);
	atomic_store(&m.fail_flush, false);
	assert_int_equal(clio_fsync(f), 0); /* told once */
	assert_int_equal(clio_fsync(g), -EIO);
	assert_int_equal(clio_close(g), 0);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	cbdev_free(&m);
}

/* ENOSPC from the fault device over a file, buffered and O_DIRECT: the blocks
 * outside the failing range reach the file, the error reaches each
 * handle, and a later retry that fails again is a new error. */
static void
test_werr_fault(void **state)
{
	static const char *const queries[] = { "", "?direct=1&qd=2" };
	char path[256], spec[400];
	unsigned char *buf = malloc(256 * KiB), *back = malloc(256 * KiB);
	int e;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	tu_fill(buf, 256 * KiB, 0, 61);
	for (e = 0; e < 2; e++) {
		clio_cache *c = cache_of(4096, 128 * KiB, 64 * KiB);
		clio_dev *d;
		clio_file *f, *g;
		int fd = tu_tmpfile(path, sizeof(path));

		snprintf(spec, sizeof(spec),
			 "fault:write=ENOSPC,offset=64K,length=8K@file:%s%s",
			 path, queries[e]);
		d = tu_dev_open(spec, 0);
		f = tu_open(c, d, CLIO_RDWR);
		g = tu_open(c, d, CLIO_RDWR);
		assert_int_equal(clio_pwrite(f, buf, 256 * KiB, 0), (ssize_t)(256 * KiB));
		assert_int_equal(clio_fsync(f), -ENOSPC);
		assert_int_equal(clio_fsync(g), -ENOSPC);
		assert_int_equal(clio_fsync(g), -ENOSPC); /* tried again: failed again */
		assert_int_equal(clio_pread(f, back, 256 * KiB, 0), (ssize_t)(256 * KiB));
		assert_memory_equal(back, buf, 256 * KiB);
		/* nothing failed since g's last fsync; f's last close tries
		 * again, fails again and says so */
		assert_int_equal(clio_close(g), 0);
		assert_int_equal(clio_close(f), -ENOSPC);
		assert_int_equal(clio_cache_free(c), 0);
		clio_dev_close(d);
		assert_int_equal(pread(fd, back, 256 * KiB, 0), (ssize_t)(256 * KiB));
		assert_memory_equal(back, buf, 64 * KiB);
		assert_int_equal(tu_check_zero(back + 64 * KiB, 8 * KiB), -1);
		assert_memory_equal(back + 72 * KiB, buf + 72 * KiB, 184 * KiB);
		close(fd);
		unlink(path);
	}
	free(buf);
	free(back);
}

/* A few failed buffers, and every other buffer of the cache busy
 * writing to a slow device when a writer needs one: it must wait for a
 * write to finish, not drop the failed data (which the device may yet
 * take) to make room. */
static void
test_werr_busy(void **state)
{
	unsigned char *buf = malloc(512 * KiB), *back = malloc(512 * KiB);
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	struct clio_cache_stats st;
	struct cbdev m;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	int round, r;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	for (round = 0; round < 2; round++) {
		conf.bsize = 4096;
		conf.maxphys = 16 * KiB;
		conf.cache_size = 32 * 4096;
		conf.write_behind = (uint32_t)round;
		conf.flusher = 0;
		assert_int_equal(clio_cache_new(&conf, &c), 0);
		d = cbdev_open(&m, 1 * MiB);
		f = tu_open(c, d, CLIO_RDWR);
		tu_fill(buf, 512 * KiB, 0, 71 + (uint64_t)round);
		/* two blocks whose write-back fails */
		atomic_store(&m.fail_len, 8 * KiB);
		assert_int_equal(clio_pwrite(f, buf, 8 * KiB, 0), (ssize_t)(8 * KiB));
		assert_int_equal(clio_fsync(f), -EIO);
		/* then many more through the small cache, to a slow device */
		atomic_store(&m.slow_s, 0.002);
		assert_int_equal(clio_pwrite(f, buf + 8 * KiB, 504 * KiB, 8 * KiB),
				 (ssize_t)(504 * KiB));
		clio_cache_stats(c, &st);
		if (st.lost_bytes != 0)
			print_message("round %d: %llu bytes dropped while the cache "
				      "had writes in flight\n", round,
				      (unsigned long long)st.lost_bytes);
		assert_int_equal(st.lost_bytes, 0);
		/* the device heals: everything gets there */
		atomic_store(&m.slow_s, 0.0);
		atomic_store(&m.fail_len, 0);
		/* 0, or a retry of the failed blocks meanwhile failed again */
		r = clio_fsync(f);
		assert_true(r == 0 || r == -EIO);
		assert_int_equal(clio_fsync(f), 0);
		pthread_mutex_lock(&m.lock);
		assert_memory_equal(m.mem, buf, 512 * KiB);
		pthread_mutex_unlock(&m.lock);
		assert_int_equal(clio_close(f), 0);
		assert_int_equal(clio_cache_free(c), 0);
		clio_dev_close(d);
		cbdev_free(&m);
	}
	free(buf);
	free(back);
}

/* Under pressure: a tiny cache whose write-backs fail while a writer
 * fills it.  Writes may fail (no buffer can be freed), but none that
 * returned a count may lose its data once the device heals. */
static void
test_werr_pressure(void **state)
{
	const size_t total = 512 * KiB;
	unsigned char *buf = malloc(total), *back = malloc(total);
	struct cbdev m;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	size_t off, ok = 0;
	int r;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	c = cache_of(4096, 64 * KiB, 64 * KiB); /* 16 buffers */
	d = cbdev_open(&m, total);
	f = tu_open(c, d, CLIO_RDWR);
	tu_fill(buf, total, 0, 21);
	atomic_store(&m.fail_writes, true);
	for (off = 0; off < total; off += 4096) {
		ssize_t n = clio_pwrite(f, buf + off, 4096, off);

		if (n < 0)
			break;
		assert_int_equal(n, 4096);
		ok = off + 4096;
	}
	print_message("  %zu bytes written into the cache before a write failed\n",
		      ok);
	atomic_store(&m.fail_writes, false);
	r = clio_fsync(f);
	assert_true(r == 0 || r == -EIO);
	/* what was dropped is counted; what was not is on the device */
	{
		struct clio_cache_stats st;
		uint64_t lost;

		clio_cache_stats(c, &st);
		lost = st.lost_bytes;
		assert_int_equal(clio_fsync(f), 0);
		assert_int_equal(clio_pread(f, back, ok, 0), (ssize_t)ok);
		if (lost == 0)
			assert_memory_equal(back, buf, ok);
		print_message("  lost %llu bytes (recorded)\n",
			      (unsigned long long)lost);
		if (lost == 0) {
			pthread_mutex_lock(&m.lock);
			assert_memory_equal(m.mem, buf, ok);
			pthread_mutex_unlock(&m.lock);
		}
	}
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	cbdev_free(&m);
	free(buf);
	free(back);
}

/* Reads that fail: the call says so and changes nothing, a partial write
 * whose read-before-write fails leaves no garbage to write back, and once
 * the device heals reads and writes work again. */
static void
test_rerr(void **state)
{
	unsigned char buf[65536], back[65536];
	struct cbdev m;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	int mode;

	(void)state;
	for (mode = 0; mode < 2; mode++) {
		struct clio_conf conf = CLIO_CONF_DEFAULTS;
		ssize_t n;

		conf.bsize = 4096;
		conf.cache_size = 64 * 4096;
		conf.rbw = mode ? CLIO_RBW_BLOCK : CLIO_RBW_CLUSTER;
		assert_int_equal(clio_cache_new(&conf, &c), 0);
		d = cbdev_open(&m, 1 * MiB);
		tu_fill(m.mem, 1 * MiB, 0, 51);
		f = tu_open(c, d, CLIO_RDWR);

		atomic_store(&m.fail_reads, true);
		assert_int_equal(clio_pread(f, back, 100, 5000), -EIO);
		assert_int_equal(clio_pread(f, back, sizeof(back), 65536), -EIO);
		tu_fill(buf, sizeof(buf), 0, 52);
		/* a partial block: it must read first, and cannot */
		assert_int_equal(clio_pwrite(f, buf, 10, 8195), -EIO);
		/* whole blocks then a partial one: the whole ones go in */
		n = clio_pwrite(f, buf, 8192 + 10, 16384);
		assert_true(n == -EIO || n == 8192);
		atomic_store(&m.fail_reads, false);

		assert_int_equal(clio_fsync(f), 0);
		assert_int_equal(clio_pread(f, back, 100, 5000), 100);
		assert_int_equal(tu_check(back, 100, 5000, 51), -1);
		assert_int_equal(clio_pread(f, back, sizeof(back), 65536),
				 (ssize_t)sizeof(back));
		assert_int_equal(tu_check(back, sizeof(back), 65536, 51), -1);
		/* block 2 was not changed by the failed write */
		dev_expect(&m, 8192, 4096, 51);
		assert_int_equal(clio_pread(f, back, 4096, 8192), 4096);
		assert_int_equal(tu_check(back, 4096, 8192, 51), -1);
		if (n == 8192) {
			pthread_mutex_lock(&m.lock);
			assert_memory_equal(m.mem + 16384, buf, 8192);
			pthread_mutex_unlock(&m.lock);
		} else {
			dev_expect(&m, 16384, 8192, 51);
		}
		dev_expect(&m, 16384 + 8192, 4096, 51);
		assert_int_equal(clio_close(f), 0);
		assert_int_equal(clio_cache_free(c), 0);
		clio_dev_close(d);
		cbdev_free(&m);
	}
}

/* A read that fails inside the read-ahead window fails no read outside
 * the bad range: a sequential reader gets every good block, and the bad
 * ones fail, with every cluster mode and bsize. */
static void
test_rerr_ahead(void **state)
{
	static const uint32_t bsizes[] = { 512, 4096, 16384 };
	unsigned char buf[20000], back[20000];
	int k;

	(void)state;
	for (k = 0; k < 9; k++) {
		struct clio_conf conf = CLIO_CONF_DEFAULTS;
		clio_cache *c;
		clio_dev *d;
		clio_file *f;
		uint64_t off, len = k % 2 ? 4096 : 20000;

		conf.bsize = bsizes[k % 3];
		conf.cluster = (enum clio_cluster_mode)(k / 3);
		conf.cache_size = 64 * (uint64_t)conf.bsize;
		assert_int_equal(clio_cache_new(&conf, &c), 0);
		d = tu_dev_open("fault:read=EIO,offset=600K,length=40K@mem:size=2M", 0);
		for (off = 0; off < 2 * MiB; off += sizeof(buf)) {
			uint64_t n = MIN(sizeof(buf), 2 * MiB - off);

			tu_fill(buf, n, off, 81);
			assert_int_equal(clio_dev_pwrite(d, buf, n, off), (ssize_t)n);
		}
		f = tu_open(c, d, CLIO_RDONLY);
		for (off = 0; off < 2 * MiB; off += len) {
			uint64_t n = MIN(len, 2 * MiB - off);
			/* the blocks the read touches */
			uint64_t b0 = off / conf.bsize * conf.bsize;
			uint64_t b1 = (off + n + conf.bsize - 1) / conf.bsize * conf.bsize;
			bool bad = b0 < 640 * KiB && b1 > 600 * KiB;
			ssize_t r = clio_pread(f, back, n, off);

			if (bad ? r >= 0 : r != (ssize_t)n) {
				print_message("bsize %u cluster %d: read of %llu at "
					      "%llu: %zd\n", conf.bsize, conf.cluster,
					      (unsigned long long)n,
					      (unsigned long long)off, r);
				fail();
			}
			if (!bad)
				assert_int_equal(tu_check(back, n, off, 81), -1);
		}
		assert_int_equal(clio_close(f), 0);
		assert_int_equal(clio_cache_free(c), 0);
		clio_dev_close(d);
	}
}

/* ------------------------------------------------------------ fsync is durable */

/* A device with a volatile write cache: writes land in vol, a flush
 * copies vol to dur, which is what survives. */
struct vdev {
	unsigned char *vol, *dur;
	uint64_t size;
	pthread_mutex_t lock;
	atomic_long flushes;
};

static int
vd_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct vdev *v = arg;

	pthread_mutex_lock(&v->lock);
	memcpy(buf, v->vol + off, len);
	pthread_mutex_unlock(&v->lock);
	return 0;
}

static int
vd_pwrite(void *arg, const void *buf, size_t len, uint64_t off)
{
	struct vdev *v = arg;

	pthread_mutex_lock(&v->lock);
	memcpy(v->vol + off, buf, len);
	pthread_mutex_unlock(&v->lock);
	return 0;
}

static int
vd_flush(void *arg)
{
	struct vdev *v = arg;

	pthread_mutex_lock(&v->lock);
	memcpy(v->dur, v->vol, v->size);
	pthread_mutex_unlock(&v->lock);
	atomic_fetch_add(&v->flushes, 1);
	return 0;
}

static const struct clio_dev_callbacks vd_ops = {
	.pread = vd_pread, .pwrite = vd_pwrite, .flush = vd_flush,
};

#define DU_THREADS 3
#define DU_REGION (192 * KiB)

struct du {
	struct vdev *v;
	clio_cache *c;
	clio_dev *d;
	uint64_t seed;
	long nops;
	atomic_int failed;
};

struct duw {
	struct du *u;
	int t;
	uint64_t rng;
	unsigned char model[DU_REGION];
	unsigned char *buf;
};

static void *
du_main(void *arg)
{
	struct duw *w = arg;
	struct du *u = w->u;
	uint64_t base = (uint64_t)w->t * DU_REGION + (uint64_t)w->t * 777;
	clio_file *f, *fd;
	long op;

	assert_int_equal(clio_open(u->c, u->d, CLIO_RDWR, &f), 0);
	assert_int_equal(clio_open(u->c, u->d, CLIO_RDWR | CLIO_DIRECT, &fd), 0);
	for (op = 0; op < u->nops && atomic_load(&u->failed) == 0; op++) {
		uint64_t x = tu_rand(&w->rng), off, len;
		bool direct = x % 5 == 0;
		int r;

		len = 1 + (x >> 8) % (x % 3 ? 9000 : DU_REGION);
		off = (x >> 32) % (DU_REGION - len + 1);
		if (direct) {
			uint64_t a = (base + off + 511) / 512 * 512;
			uint64_t e = (base + off + len) / 512 * 512;

			if (e <= a)
				continue;
			off = a - base;
			len = e - a;
		}
		tu_fill(w->buf, len, base + off, tu_rand(&w->rng));
		if (clio_pwrite(direct ? fd : f, w->buf, len, base + off) != (ssize_t)len) {
			atomic_fetch_add(&u->failed, 1);
			break;
		}
		memcpy(w->model + off, w->buf, len);
		if (x % 4 != 0)
			continue;
		r = x % 8 == 0 ? clio_fsync(fd) : clio_fsync(f);
		pthread_mutex_lock(&u->v->lock);
		if (r != 0 || memcmp(u->v->dur + base, w->model, DU_REGION) != 0) {
			uint64_t i;

			for (i = 0; i < DU_REGION; i++)
				if (u->v->dur[base + i] != w->model[i])
					break;
			if (atomic_fetch_add(&u->failed, 1) == 0) {
				tu_seed_failed("durable", u->seed);
				print_message("thread %d op %ld: fsync %d, but byte "
					      "%llu is not durable\n", w->t, op, r,
					      (unsigned long long)(base + i));
			}
		}
		pthread_mutex_unlock(&u->v->lock);
	}
	assert_int_equal(clio_close(fd), 0);
	assert_int_equal(clio_close(f), 0);
	return NULL;
}

static void
test_durable(void **state)
{
	static const uint32_t bsizes[] = { 512, 4096, 16384, 2048 };
	uint64_t seed = tu_seed("durable"), rng = tu_rand_init(seed);
	const char *flavour = getenv("CLIO_FLAVOUR");
	int round;

	(void)state;
	for (round = 0; round < 8; round++) {
		struct clio_conf conf = CLIO_CONF_DEFAULTS;
		struct vdev v = { 0 };
		struct du u = { 0 };
		struct duw *w = calloc(DU_THREADS, sizeof(*w));
		pthread_t th[DU_THREADS];
		int t;

		assert_non_null(w);
		v.size = DU_THREADS * (DU_REGION + 1024);
		v.vol = calloc(1, v.size);
		v.dur = calloc(1, v.size);
		pthread_mutex_init(&v.lock, NULL);
		conf.bsize = bsizes[tu_rand(&rng) % 4];
		conf.cache_size = (8 + tu_rand(&rng) % 40) * (uint64_t)conf.bsize;
		conf.cluster = (enum clio_cluster_mode)(round % 3);
		conf.write_behind = (uint32_t)(tu_rand(&rng) % 3);
		conf.flusher = round % 2;
		conf.dirty_age = 0.002;
		conf.flush_behind = tu_rand(&rng) % 2 ? 0 : 64 * KiB;
		assert_int_equal(clio_cache_new(&conf, &u.c), 0);
		assert_int_equal(clio_dev_open_callbacks("vol", v.size, 512, 0, &vd_ops,
							 &v, 4, &u.d), 0);
		u.v = &v;
		u.seed = seed;
		u.nops = flavour == NULL || strcmp(flavour, "plain") == 0 ? 400 : 100;
		for (t = 0; t < DU_THREADS; t++) {
			w[t].u = &u;
			w[t].t = t;
			w[t].rng = tu_rand_init(seed + (uint64_t)(round * 8 + t));
			assert_int_equal(posix_memalign((void **)&w[t].buf, 4096, DU_REGION), 0);
			assert_int_equal(pthread_create(&th[t], NULL, du_main, &w[t]), 0);
		}
		for (t = 0; t < DU_THREADS; t++) {
			pthread_join(th[t], NULL);
			free(w[t].buf);
		}
		assert_int_equal(clio_cache_free(u.c), 0);
		clio_dev_close(u.d);
		if (atomic_load(&u.failed) != 0)
			print_message("round %d bsize %u cache %llu buffers cluster %d "
				      "wb %u flusher %u flush_behind %llu\n", round,
				      conf.bsize,
				      (unsigned long long)(conf.cache_size / conf.bsize),
				      conf.cluster, conf.write_behind, conf.flusher,
				      (unsigned long long)conf.flush_behind);
		assert_int_equal(atomic_load(&u.failed), 0);
		pthread_mutex_destroy(&v.lock);
		free(v.vol);
		free(v.dur);
		free(w);
	}
}

/* ------------------------------------------------------------ boundaries */

/* The device layer's own bounds: offsets past INT64_MAX, ends that wrap,
 * sizes that do not fit an off_t; a write that fails grows nothing. */
static void
test_dev_bounds(void **state)
{
	char path[256], spec[300];
	const char *specs[3];
	unsigned char buf[100];
	int i;

	(void)state;
	memset(buf, 7, sizeof(buf));
	close(tu_tmpfile(path, sizeof(path)));
	snprintf(spec, sizeof(spec), "file:%s?engine=threads", path);
	specs[0] = "mem:size=4096";
	specs[1] = spec;
	specs[2] = "fault:write=EIO,offset=1M,length=1G@mem:size=4096";
	for (i = 0; i < 3; i++) {
		clio_dev *d = tu_dev_open(specs[i], 0);

		print_message("  %s\n", specs[i]);
		assert_int_equal(clio_dev_pwrite(d, buf, 100, UINT64_MAX - 10), -EFBIG);
		assert_int_equal(clio_dev_pwrite(d, buf, 100, (uint64_t)INT64_MAX - 10),
				 -EFBIG);
		assert_int_equal(clio_dev_pread(d, buf, 100, UINT64_MAX - 10), -EINVAL);
		assert_int_equal(clio_dev_size(d), 4096 * (i != 1));
		assert_int_equal(clio_dev_resize(d, UINT64_MAX), -EFBIG);
		assert_int_equal(clio_dev_resize(d, (uint64_t)INT64_MAX + 1), -EFBIG);
		assert_int_equal(clio_dev_size(d), 4096 * (i != 1));
		if (i == 2) {
			/* a write that fails past the end leaves the size */
			assert_int_equal(clio_dev_pwrite(d, buf, 100, 2 * MiB), -EIO);
			assert_int_equal(clio_dev_size(d), 4096);
		}
		clio_dev_close(d);
	}
	unlink(path);
}


static void
test_boundaries(void **state)
{
	unsigned char buf[8192], back[8192];
	clio_cache *c;
	clio_dev *d;
	clio_file *f;

	(void)state;
	c = cache_of(4096, 256 * KiB, 64 * KiB);
	d = tu_dev_open("mem:size=10000", 0);
	f = tu_open(c, d, CLIO_RDWR);
	tu_fill(buf, sizeof(buf), 0, 31);

	/* lengths of 0 anywhere do nothing */
	assert_int_equal(clio_pwrite(f, buf, 0, 0), 0);
	assert_int_equal(clio_pwrite(f, buf, 0, (uint64_t)INT64_MAX), 0);
	assert_int_equal(clio_pread(f, back, 0, UINT64_MAX), 0);
	assert_int_equal(clio_pread(f, back, 0, 0), 0);
	assert_int_equal(clio_fsize(f), 10000);
	/* past INT64_MAX: EFBIG, however long */
	assert_int_equal(clio_pwrite(f, buf, 1, (uint64_t)INT64_MAX), -EFBIG);
	assert_int_equal(clio_pwrite(f, buf, 1, UINT64_MAX), -EFBIG);
	assert_int_equal(clio_pwrite(f, buf, (size_t)SSIZE_MAX + 1, 0), -EFBIG);
	assert_int_equal(clio_pwrite(f, buf, SIZE_MAX, 1), -EFBIG);
	assert_int_equal(clio_ftruncate(f, (uint64_t)INT64_MAX + 1), -EFBIG);
	/* reads past EOF, near the top of the range, or longer than
	 * SSIZE_MAX return what is there */
	assert_int_equal(clio_pread(f, back, 1, (uint64_t)INT64_MAX), 0);
	assert_int_equal(clio_pread(f, back, 100, UINT64_MAX - 10), 0);
	assert_int_equal(clio_pread(f, back, 4096, UINT64_MAX - 4095), 0);
	assert_int_equal(clio_fsize(f), 10000);
	/* a size no multiple of the block: the tail block is partial */
	assert_int_equal(clio_pwrite(f, buf, 6000, 4000), 6000);
	assert_int_equal(clio_pread(f, back, sizeof(back), 4000), 6000);
	assert_memory_equal(back, buf, 6000);
	assert_int_equal(clio_pwrite(f, buf, 10, 10000), 10);
	assert_int_equal(clio_fsize(f), 10010);
	assert_int_equal(clio_pread(f, back, 100, 9995), 15);
	assert_memory_equal(back, buf + 5995, 5);
	assert_memory_equal(back + 5, buf, 10);
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_dev_size(d), 10010);
	assert_int_equal(clio_dev_pread(d, back, 15, 9995), 15);
	assert_memory_equal(back, buf + 5995, 5);
	assert_memory_equal(back + 5, buf, 10);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

struct viewsum {
	size_t bytes;
	int calls, lasts;
	const unsigned char *expect;
	bool ok;
};

static int
view_sum(void *arg, const struct iovec *iov, int iovcnt, int last)
{
	struct viewsum *v = arg;
	int i;

	for (i = 0; i < iovcnt; i++) {
		if (memcmp(iov[i].iov_base, v->expect + v->bytes, iov[i].iov_len) != 0)
			v->ok = false;
		v->bytes += iov[i].iov_len;
	}
	v->calls++;
	v->lasts += last != 0;
	return 0;
}

/* The access modes and flags, and lengths far beyond the data, on every
 * call that takes them. */
static void
test_modes(void **state)
{
	unsigned char buf[8192];
	clio_cache *c = cache_of(4096, 256 * KiB, 64 * KiB);
	clio_dev *d = tu_dev_open("mem:size=6000", 0), *ro;
	clio_file *f, *r, *w, *fd;
	int k;

	(void)state;
	tu_fill(buf, sizeof(buf), 0, 111);
	assert_int_equal(clio_open(c, d, CLIO_ACCMODE, &f), -EINVAL);
	assert_int_equal(clio_open(c, d, CLIO_RDWR | 0x4000, &f), -EINVAL);
	f = tu_open(c, d, CLIO_RDWR);
	r = tu_open(c, d, CLIO_RDONLY);
	w = tu_open(c, d, CLIO_WRONLY);
	fd = tu_open(c, d, CLIO_RDWR | CLIO_DIRECT);
	assert_int_equal(clio_pwrite(f, buf, 6000, 0), 6000);
	assert_int_equal(clio_pwrite(r, buf, 1, 0), -EBADF);
	assert_int_equal(clio_ftruncate(r, 0), -EBADF);
	assert_int_equal(clio_discard(r, 0, 4096), -EBADF);
	assert_int_equal(clio_pread(w, buf, 1, 0), -EBADF);
	assert_int_equal(clio_pread_view(w, 1, 0, view_sum, NULL), -EBADF);
	assert_int_equal(clio_pread_view(f, 1, 0, NULL, NULL), -EINVAL);
	assert_int_equal(clio_fsync(r), 0);
	assert_int_equal(clio_fsync(w), 0);
	/* views of far more than there is, buffered and direct: the data,
	 * once, with one last call */
	for (k = 0; k < 2; k++) {
		static const size_t lens[] = { 6144, 1u << 30, SIZE_MAX / 2 + 512 };
		int j;

		for (j = 0; j < 3; j++) {
			struct viewsum v = { 0, 0, 0, buf, true };
			ssize_t n = clio_pread_view(k ? fd : r, lens[j] / 512 * 512, 0,
						    view_sum, &v);

			if (n != 6000)
				print_message("%s view of %zu bytes: %zd\n",
					      k ? "direct" : "buffered", lens[j], n);
			assert_int_equal(n, 6000);
			assert_int_equal(v.bytes, 6000);
			assert_true(v.ok);
			assert_int_equal(v.lasts, 1);
		}
	}
	assert_int_equal(clio_close(fd), 0);
	assert_int_equal(clio_close(w), 0);
	assert_int_equal(clio_close(r), 0);
	assert_int_equal(clio_close(f), 0);
	/* a read-only device: no handle that writes */
	ro = tu_dev_open("mem:size=4096", CLIO_DEV_RDONLY);
	assert_int_equal(clio_open(c, ro, CLIO_RDWR, &f), -EROFS);
	assert_int_equal(clio_open(c, ro, CLIO_WRONLY, &f), -EROFS);
	f = tu_open(c, ro, CLIO_RDONLY);
	assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), 4096);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(ro);
	clio_dev_close(d);
}

/* A size of 0 and sizes no multiple of the sector, buffered and direct,
 * on fixed and resizable devices. */
static void
test_odd_sizes(void **state)
{
	char path[256], spec[300];
	unsigned char buf[8192], back[8192], *al;
	struct cbdev m;
	clio_cache *c;
	clio_dev *d;
	clio_file *f, *fd;
	int fdr;

	(void)state;
	c = cache_of(4096, 256 * KiB, 64 * KiB);
	assert_int_equal(posix_memalign((void **)&al, 4096, 8192), 0);

	/* a file of 1000 bytes opened with O_DIRECT */
	fdr = tu_tmpfile(path, sizeof(path));
	tu_fill(buf, sizeof(buf), 0, 41);
	assert_int_equal(write(fdr, buf, 1000), 1000);
	snprintf(spec, sizeof(spec), "file:%s?direct=1", path);
	d = tu_dev_open(spec, 0);
	f = tu_open(c, d, CLIO_RDWR);
	fd = tu_open(c, d, CLIO_RDWR | CLIO_DIRECT);
	assert_int_equal(clio_fsize(f), 1000);
	memset(back, 0, sizeof(back));
	assert_int_equal(clio_pread(f, back, sizeof(back), 0), 1000);
	assert_memory_equal(back, buf, 1000);
	memset(al, 0, 8192);
	assert_int_equal(clio_pread(fd, al, 4096, 0), 1000);
	assert_memory_equal(al, buf, 1000);
	assert_int_equal(clio_pread(fd, al, 512, 512), 488);
	assert_memory_equal(al, buf + 512, 488);
	assert_int_equal(clio_pread(fd, al, 512, 1024), 0);
	/* a buffered write of the partial tail block, then the whole */
	assert_int_equal(clio_pwrite(f, buf + 1000, 24, 1000), 24);
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(pread(fdr, back, sizeof(back), 0), 1024);
	assert_memory_equal(back, buf, 1024);
	/* a direct write past EOF grows it */
	memcpy(al, buf, 4096);
	assert_int_equal(clio_pwrite(fd, al, 4096, 4096), 4096);
	assert_int_equal(clio_fsize(f), 8192);
	assert_int_equal(clio_pread(f, back, 8192, 0), 8192);
	assert_memory_equal(back, buf, 1024);
	assert_int_equal(tu_check_zero(back + 1024, 3072), -1);
	assert_memory_equal(back + 4096, buf, 4096);
	assert_int_equal(clio_ftruncate(f, 777), 0);
	assert_int_equal(clio_fsize(fd), 777);
	assert_int_equal(clio_pread(fd, al, 4096, 0), 777);
	assert_memory_equal(al, buf, 777);
	assert_int_equal(clio_close(fd), 0);
	assert_int_equal(clio_close(f), 0);
	clio_dev_close(d);

	/* a device of size 0: reads see EOF, a write grows it */
	assert_int_equal(ftruncate(fdr, 0), 0);
	snprintf(spec, sizeof(spec), "file:%s", path);
	d = tu_dev_open(spec, 0);
	f = tu_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_fsize(f), 0);
	assert_int_equal(clio_pread(f, back, sizeof(back), 0), 0);
	assert_int_equal(clio_pwrite(f, buf, 1, 0), 1);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(pread(fdr, back, sizeof(back), 0), 1);
	assert_int_equal(back[0], buf[0]);
	clio_dev_close(d);
	close(fdr);
	unlink(path);

	/* a fixed device whose size is no multiple of the sector */
	d = cbdev_open(&m, 10001);
	f = tu_open(c, d, CLIO_RDWR);
	fd = tu_open(c, d, CLIO_RDWR | CLIO_DIRECT);
	assert_int_equal(clio_fsize(f), 10001);
	assert_int_equal(clio_pwrite(f, buf, 8192, 8192), 10001 - 8192);
	assert_int_equal(clio_pwrite(f, buf, 1, 10001), -ENOSPC);
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_pread(fd, al, 8192, 8192), 10001 - 8192);
	assert_memory_equal(al, buf, 10001 - 8192);
	assert_int_equal(clio_close(fd), 0);
	assert_int_equal(clio_close(f), 0);
	pthread_mutex_lock(&m.lock);
	assert_memory_equal(m.mem + 8192, buf, 10001 - 8192);
	pthread_mutex_unlock(&m.lock);
	clio_dev_close(d);
	cbdev_free(&m);
	free(al);
	assert_int_equal(clio_cache_free(c), 0);
}

/* ------------------------------------------------------------ mixed threads */

#define MX_THREADS 3		/* on the file; one more on a mem object */
#define MX_BODY (2 * MiB)	/* the striped part of the file */
#define MX_TAIL (3 * MiB)	/* thread 0's part after it, which it truncates */
#define MX_MAXLEN (1536 * KiB)

struct mx {
	uint64_t seed;
	int config;
	clio_cache *c;
	clio_dev *d, *dm;
	unsigned char *model;	/* the file: each thread writes its own bytes */
	unsigned char *owner;	/* the thread owning each byte of the body */
	uint64_t *stripe;	/* stripe starts, nstripes + 1 */
	int nstripes;
	uint64_t tail_size;	/* file size (thread 0's, read by it alone) */
	unsigned char *mmodel;	/* the mem object (thread MX_THREADS's) */
	uint64_t msize, mmax;
	long nops;
	atomic_int failed;
};

struct mxw {
	struct mx *x;
	int t;
	uint64_t rng;
	clio_file *f, *fd;
	unsigned char *buf, *back; /* aligned, MX_MAXLEN */
	long op;
};

static uint64_t
mx_below(struct mxw *w, uint64_t n)
{
	return n ? tu_rand(&w->rng) % n : 0;
}

static bool
mx_fail(struct mxw *w, const char *what, uint64_t off, uint64_t len, long got)
{
	if (atomic_fetch_add(&w->x->failed, 1) == 0) {
		tu_seed_failed("mixed", w->x->seed);
		print_message("config %d thread %d op %ld: %s off %llu len %llu: "
			      "%ld\n", w->x->config, w->t, w->op, what,
			      (unsigned long long)off, (unsigned long long)len,
			      got);
	}
	return false;
}

static void
mx_reopen(struct mxw *w, clio_dev *d)
{
	int r;

	if (w->f != NULL && (r = clio_close(w->f)) != 0)
		mx_fail(w, "close", 0, 0, r);
	if (w->fd != NULL && (r = clio_close(w->fd)) != 0)
		mx_fail(w, "close direct", 0, 0, r);
	assert_int_equal(clio_open(w->x->c, d, CLIO_RDWR, &w->f), 0);
	assert_int_equal(clio_open(w->x->c, d, CLIO_RDWR | CLIO_DIRECT, &w->fd), 0);
}

/* A random range of [lo, hi) of at most maxlen bytes; direct: 512-aligned
 * inside it (len 0 if there is no such range). */
static void
mx_range(struct mxw *w, uint64_t lo, uint64_t hi, uint64_t maxlen, bool direct,
	 uint64_t *off, uint64_t *len)
{
	uint64_t n = hi - lo, l;

	l = mx_below(w, 4) ? 1 + mx_below(w, MIN(n, 20000)) : 1 + mx_below(w, MIN(n, maxlen));
	*off = lo + mx_below(w, n - l + 1);
	*len = l;
	if (direct) {
		uint64_t a = (*off + 511) / 512 * 512, e = (*off + l) / 512 * 512;

		*off = a;
		*len = e > a ? e - a : 0;
	}
}

/* One op of thread t on the file: its own stripes, or (thread 0) the tail. */
static bool
mx_file_op(struct mxw *w)
{
	struct mx *x = w->x;
	uint64_t off, len, i, u = mx_below(w, 100);
	bool direct = mx_below(w, 3) == 0;
	clio_file *f = direct ? w->fd : w->f;
	ssize_t n;

	if (u < 40) { /* write own bytes */
		if (w->t == 0 && mx_below(w, 2)) {
			mx_range(w, MX_BODY, MX_BODY + MX_TAIL, MX_MAXLEN, direct, &off, &len);
		} else {
			int s = w->t + MX_THREADS * (int)mx_below(w, (uint64_t)(x->nstripes / MX_THREADS));

			mx_range(w, x->stripe[s], x->stripe[s + 1], MX_MAXLEN, direct,
				 &off, &len);
		}
		if (len == 0)
			return true;
		tu_fill(w->buf, len, off, tu_rand(&w->rng));
		n = clio_pwrite(f, w->buf, len, off);
		if (n != (ssize_t)len)
			return mx_fail(w, direct ? "direct write" : "write", off, len, n);
		memcpy(x->model + off, w->buf, len);
		if (w->t == 0 && off + len > x->tail_size)
			x->tail_size = off + len;
	} else if (u < 75) { /* read anywhere, check own bytes */
		uint64_t hi = w->t == 0 ? x->tail_size : MX_BODY;

		mx_range(w, 0, hi + 4096, MX_MAXLEN, direct, &off, &len);
		if (len == 0)
			return true;
		n = clio_pread(f, w->back, len, off);
		if (w->t == 0) {
			uint64_t want = off >= x->tail_size ? 0 : MIN(len, x->tail_size - off);

			if (n != (ssize_t)want)
				return mx_fail(w, "read count", off, len, n);
		} else if (n < (ssize_t)MIN(len, hi - MIN(off, hi))) {
			return mx_fail(w, "read count", off, len, n);
		}
		for (i = 0; i < (uint64_t)n; i++) {
			uint64_t o = off + i;
			bool mine = o >= MX_BODY ? w->t == 0 : x->owner[o] == w->t;

			if (mine && w->back[i] != x->model[o])
				return mx_fail(w, direct ? "direct read byte" : "read byte",
					       o, len, w->back[i]);
		}
	} else if (u < 85 && w->t == 0) { /* truncate the tail */
		uint64_t size = MX_BODY + mx_below(w, MX_TAIL + 1);
		int r = clio_ftruncate(w->f, size);

		if (r != 0)
			return mx_fail(w, "truncate", size, 0, r);
		if (size < x->tail_size)
			memset(x->model + size, 0, x->tail_size - size);
		x->tail_size = size;
	} else if (u < 92) {
		int r = mx_below(w, 3) ? clio_fsync(w->f) : clio_sync(x->c);

		if (r != 0)
			return mx_fail(w, "fsync/sync", 0, 0, r);
	} else if (u < 95) {
		mx_reopen(w, x->d);
	}
	return true;
}

/* One op of the mem object's own thread: the whole object is its own. */
static bool
mx_mem_op(struct mxw *w)
{
	struct mx *x = w->x;
	uint64_t off, len, u = mx_below(w, 100);
	bool direct = mx_below(w, 4) == 0;
	clio_file *f = direct ? w->fd : w->f;
	ssize_t n;

	if (u < 40) {
		mx_range(w, 0, x->mmax, MX_MAXLEN, direct, &off, &len);
		if (len == 0)
			return true;
		tu_fill(w->buf, len, off, tu_rand(&w->rng));
		n = clio_pwrite(f, w->buf, len, off);
		if (n != (ssize_t)len)
			return mx_fail(w, "mem write", off, len, n);
		memcpy(x->mmodel + off, w->buf, len);
		if (off + len > x->msize) {
			x->msize = off + len;
		}
	} else if (u < 75) {
		uint64_t want;

		mx_range(w, 0, x->mmax, MX_MAXLEN, direct, &off, &len);
		if (len == 0)
			return true;
		want = off >= x->msize ? 0 : MIN(len, x->msize - off);
		n = clio_pread(f, w->back, len, off);
		if (n != (ssize_t)want)
			return mx_fail(w, "mem read count", off, len, n);
		if (n > 0 && memcmp(w->back, x->mmodel + off, (size_t)n) != 0)
			return mx_fail(w, "mem read bytes", off, len, n);
	} else if (u < 85) {
		uint64_t size = mx_below(w, x->mmax + 1);
		int r = clio_ftruncate(w->f, size);

		if (r != 0)
			return mx_fail(w, "mem truncate", size, 0, r);
		if (size < x->msize)
			memset(x->mmodel + size, 0, x->msize - size);
		x->msize = size;
	} else if (u < 92) {
		int r = clio_fsync(w->f);

		if (r != 0)
			return mx_fail(w, "mem fsync", 0, 0, r);
	} else if (u < 95) {
		mx_reopen(w, x->dm);
	}
	if (clio_fsize(w->f) != (int64_t)x->msize)
		return mx_fail(w, "mem fsize", x->msize, 0, (long)clio_fsize(w->f));
	return true;
}

static void *
mx_main(void *arg)
{
	struct mxw *w = arg;
	bool mem = w->t == MX_THREADS;

	mx_reopen(w, mem ? w->x->dm : w->x->d);
	for (w->op = 0; w->op < w->x->nops && atomic_load(&w->x->failed) == 0; w->op++)
		if (!(mem ? mx_mem_op(w) : mx_file_op(w)))
			break;
	if (clio_close(w->fd) != 0)
		mx_fail(w, "last close direct", 0, 0, -1);
	if (clio_close(w->f) != 0)
		mx_fail(w, "last close", 0, 0, -1);
	return NULL;
}

static void
mx_run(uint64_t seed, int config)
{
	static const uint32_t bsizes[] = { 512, 1024, 4096, 16384, 65536, 2048 };
	char path[256], spec[400];
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	struct mx x;
	struct mxw w[MX_THREADS + 1];
	pthread_t th[MX_THREADS + 1];
	uint64_t rng = tu_rand_init(seed ^ (uint64_t)config << 32), i, pos;
	unsigned char *back;
	char err[256];
	int t, fd;
	const char *flavour = getenv("CLIO_FLAVOUR");

	memset(&x, 0, sizeof(x));
	x.seed = seed;
	x.config = config;
	x.nops = flavour == NULL || strcmp(flavour, "plain") == 0 ? 300 :
		 strcmp(flavour, "tsan") == 0 ? 40 : 150;
	conf.bsize = bsizes[tu_rand(&rng) % 6];
	conf.maxbsize = conf.bsize > 65536 ? conf.bsize : 65536;
	conf.maxphys = conf.maxbsize << (tu_rand(&rng) % 5);
	conf.cache_size = (8 + tu_rand(&rng) % 20) * (uint64_t)conf.bsize;
	conf.cluster = (enum clio_cluster_mode)(config % 3);
	conf.rbw = (enum clio_rbw_mode)(tu_rand(&rng) % 2);
	conf.write_behind = (uint32_t)(tu_rand(&rng) % 3);
	conf.flusher = tu_rand(&rng) % 3 != 0;
	conf.dirty_age = tu_rand(&rng) % 2 ? 0.005 : 30;
	conf.dirty_hi = tu_rand(&rng) % 2 ? 10 : 60;
	conf.dirty_lo = conf.dirty_hi / 2;
	conf.read_max = (uint32_t)(tu_rand(&rng) % 65);
	if (clio_conf_check(&conf, err, sizeof(err)) != 0) {
		print_message("config %d: %s\n", config, err);
		fail();
	}
	assert_int_equal(clio_cache_new(&conf, &x.c), 0);

	fd = tu_tmpfile(path, sizeof(path));
	assert_int_equal(ftruncate(fd, (off_t)MX_BODY), 0);
	snprintf(spec, sizeof(spec), "file:%s?engine=%s&direct=%d&qd=%d", path,
		 config / 3 % 2 ? "threads" : "uring", config / 6 % 2,
		 1 + (int)(tu_rand(&rng) % 6));
	x.d = tu_dev_open(spec, 0);
	x.mmax = 1 * MiB + tu_rand(&rng) % MiB;
	/* every other one: transfers move half their bytes per call */
	snprintf(spec, sizeof(spec), "%smem:size=0", config % 2 ? "fault:short=1@" : "");
	x.dm = tu_dev_open(spec, 0);
	print_message("  config %d: %s bsize %u maxphys %u cache %llu buffers "
		      "cluster %d rbw %d wb %u flusher %u\n", config,
		      clio_dev_name(x.d), conf.bsize, conf.maxphys,
		      (unsigned long long)(conf.cache_size / conf.bsize),
		      conf.cluster, conf.rbw, conf.write_behind, conf.flusher);

	x.model = calloc(1, MX_BODY + MX_TAIL + MX_MAXLEN);
	x.owner = malloc(MX_BODY);
	x.mmodel = calloc(1, x.mmax + MX_MAXLEN);
	back = malloc(MX_BODY + MX_TAIL);
	assert_non_null(x.model);
	assert_non_null(x.owner);
	assert_non_null(x.mmodel);
	assert_non_null(back);
	x.tail_size = MX_BODY;
	/* stripes of 1 byte to 40K at offsets aligned to nothing */
	x.nstripes = MX_THREADS * (8 + (int)(tu_rand(&rng) % 120));
	x.stripe = malloc(sizeof(uint64_t) * (size_t)(x.nstripes + 1));
	assert_non_null(x.stripe);
	for (t = 0, pos = 0; t < x.nstripes; t++) {
		uint64_t left = MX_BODY - pos, want = (uint64_t)(x.nstripes - t);

		x.stripe[t] = pos;
		pos += t == x.nstripes - 1 ? left :
		       MAX(1ull, MIN(left - want + 1, 1 + tu_rand(&rng) % (2 * left / want)));
		for (i = x.stripe[t]; i < pos; i++)
			x.owner[i] = (unsigned char)(t % MX_THREADS);
	}
	x.stripe[x.nstripes] = MX_BODY;

	for (t = 0; t <= MX_THREADS; t++) {
		w[t] = (struct mxw){ .x = &x, .t = t,
				     .rng = tu_rand_init(seed ^ (uint64_t)(config * 16 + t)) };
		assert_int_equal(posix_memalign((void **)&w[t].buf, 4096, MX_MAXLEN), 0);
		assert_int_equal(posix_memalign((void **)&w[t].back, 4096, MX_MAXLEN + 4096), 0);
		assert_int_equal(pthread_create(&th[t], NULL, mx_main, &w[t]), 0);
	}
	for (t = 0; t <= MX_THREADS; t++) {
		pthread_join(th[t], NULL);
		free(w[t].buf);
		free(w[t].back);
	}
	assert_int_equal(clio_cache_free(x.c), 0);
	if (atomic_load(&x.failed) == 0) {
		/* the file itself, read past the library */
		struct stat st;
		long bad;

		assert_int_equal(fstat(fd, &st), 0);
		if ((uint64_t)st.st_size != x.tail_size) {
			tu_seed_failed("mixed", seed);
			print_message("config %d: the file has %lld bytes, the model %llu\n",
				      config, (long long)st.st_size,
				      (unsigned long long)x.tail_size);
			fail();
		}
		assert_int_equal(pread(fd, back, x.tail_size, 0), (ssize_t)x.tail_size);
		for (bad = -1, i = 0; i < x.tail_size && bad < 0; i++)
			if (back[i] != x.model[i])
				bad = (long)i;
		if (bad >= 0) {
			tu_seed_failed("mixed", seed);
			print_message("config %d: file byte %ld (owner %d) is %u, "
				      "the model's %u\n", config, bad,
				      (uint64_t)bad < MX_BODY ? x.owner[bad] : 0,
				      back[bad], x.model[bad]);
			fail();
		}
		assert_int_equal(clio_dev_size(x.dm), x.msize);
		assert_int_equal(clio_dev_pread(x.dm, back, x.msize, 0), (ssize_t)x.msize);
		if (x.msize > 0 && memcmp(back, x.mmodel, x.msize) != 0) {
			tu_seed_failed("mixed", seed);
			print_message("config %d: the mem device differs\n", config);
			fail();
		}
	}
	clio_dev_close(x.d);
	clio_dev_close(x.dm);
	close(fd);
	unlink(path);
	free(x.model);
	free(x.owner);
	free(x.mmodel);
	free(x.stripe);
	free(back);
	assert_int_equal(atomic_load(&x.failed), 0);
}

static void
test_mixed(void **state)
{
	uint64_t seed = tu_seed("mixed");
	const char *one = getenv("CLIO_PROBE_CONFIG");
	int i;

	(void)state;
	if (one != NULL) {
		mx_run(seed, atoi(one));
		return;
	}
	for (i = 0; i < 12; i++)
		mx_run(seed, i);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct_buffered_block),
		cmocka_unit_test(test_direct_truncate),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_truncate_direct_starve),
		cmocka_unit_test(test_werr_once),
		cmocka_unit_test(test_flush_err),
		cmocka_unit_test(test_werr_fault),
		cmocka_unit_test(test_werr_busy),
		cmocka_unit_test(test_werr_pressure),
		cmocka_unit_test(test_rerr),
		cmocka_unit_test(test_rerr_ahead),
		cmocka_unit_test(test_durable),
		cmocka_unit_test(test_dev_bounds),
		cmocka_unit_test(test_boundaries),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_odd_sizes),
		cmocka_unit_test(test_mixed),
	};

	if (getenv("CLIO_TEST") != NULL)
		cmocka_set_test_filter(getenv("CLIO_TEST"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
