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
 *    buffered one has returned, so the order is forced);
 *  - direct_truncate: a direct write racing a truncate: afterwards the
 *    object is either cut (the truncate came last) or holds all of the
 *    write, and the cache's size is the device's;
 *  - werr_once: a write-back that fails is reported by fsync or close
 *    exactly once to every handle, the failed data stays cached and
 *    dirty, and once the device heals an fsync puts it on the device;
 *  - boundaries: offsets near INT64_MAX and UINT64_MAX, lengths of 0 and
 *    above SSIZE_MAX, devices whose size is no multiple of the block or
 *    the sector, direct reads of their tail;
 *  - mixed: seeded threads on buffered and direct handles of one file
 *    (and a second object in the same tiny cache), each writing only its
 *    own unaligned stripes, with fsync, clio_sync and reopen, then a
 *    byte-for-byte check of the backing file with plain pread.
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

static clio_file *
open_file(clio_cache *c, clio_dev *d, int flags)
{
	clio_file *f = NULL;

	assert_int_equal(clio_open(c, d, flags, &f), 0);
	return f;
}

static char *
tmp_spec(char *path, size_t plen, char *spec, size_t slen, const char *query)
{
	close(tu_tmpfile(path, plen));
	snprintf(spec, slen, "file:%s%s", path, query);
	return spec;
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
	atomic_bool fail_writes;
	atomic_int writes_failed;
};

static int
cb_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct cbdev *m = arg;

	pthread_mutex_lock(&m->lock);
	memcpy(buf, m->mem + off, len);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static int
cb_pwrite(void *arg, const void *buf, size_t len, uint64_t off)
{
	struct cbdev *m = arg;

	if (atomic_load(&m->fail_writes)) {
		atomic_fetch_add(&m->writes_failed, 1);
		return -EIO;
	}
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

static const struct clio_dev_callbacks cb_ops = {
	.pread = cb_pread, .pwrite = cb_pwrite,
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
	fd = open_file(c, d, CLIO_RDWR | CLIO_DIRECT);
	fb = open_file(c, d, CLIO_RDWR);
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
	tmp_spec(path, sizeof(path), spec, sizeof(spec), "?qd=4");
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
	t.f = open_file(c, d, CLIO_RDWR | CLIO_DIRECT);
	g = open_file(c, d, CLIO_RDWR);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct_buffered_block),
		cmocka_unit_test(test_direct_truncate),
	};

	if (getenv("CLIO_TEST") != NULL)
		cmocka_set_test_filter(getenv("CLIO_TEST"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
