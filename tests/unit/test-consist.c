/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-consist.c - consistency with a source that changes behind the
 * cache (clio_revalidate, clio_validator_set), objects kept across closes
 * (CLIO_KEEP, clio_cache_forget), and clio_writeback (a close's write-back
 * without a device flush), seen from the device's counters and the bytes
 * read back.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clio.h"
#include "testutil.h"

#define KiB TU_KiB

static clio_cache *
small_cache(void)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	clio_cache *c = NULL;

	conf.bsize = 4096;
	conf.cache_size = 1 << 20;
	conf.flusher = 0;
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	return c;
}

static uint64_t
back_reads(clio_dev *d)
{
	struct clio_dev_stats st;

	clio_dev_stats(d, &st);
	return st.back.reads;
}

static uint64_t
back_flushes(clio_dev *d)
{
	struct clio_dev_stats st;

	clio_dev_stats(d, &st);
	return st.back.flushes;
}

/* Write pattern seed over [0, len) of d behind the cache's back. */
static void
change_behind(clio_dev *d, size_t len, uint64_t seed)
{
	unsigned char buf[64 * 1024];

	tu_fill(buf, len, 0, seed);
	assert_int_equal(clio_dev_pwrite(d, buf, len, 0), (ssize_t)len);
}

static void
test_revalidate(void **state)
{
	struct clio_validator v1 = { 32 * KiB, 1000, 1000, 7, 0 }, v2 = v1, v3;
	unsigned char buf[64 * 1024];
	clio_cache *c = small_cache();
	clio_dev *d = tu_dev_open("mem:size=0", 0);
	clio_file *f;
	uint64_t reads;

	(void)state;
	change_behind(d, 32 * KiB, 1);
	f = tu_open(c, d, CLIO_RDWR);
	/* the first word: nothing to drop, the size is the source's */
	assert_int_equal(clio_revalidate(f, &v1), 0);
	assert_int_equal(clio_fsize(f), 32 * KiB);
	assert_int_equal(clio_pread(f, buf, 32 * KiB, 0), 32 * KiB);
	assert_int_equal(tu_check(buf, 32 * KiB, 0, 1), -1);
	reads = back_reads(d);

	/* changed behind the cache, same version said: the cache is used */
	change_behind(d, 48 * KiB, 2);
	assert_int_equal(clio_revalidate(f, &v1), 0);
	assert_int_equal(clio_pread(f, buf, 32 * KiB, 0), 32 * KiB);
	assert_int_equal(tu_check(buf, 32 * KiB, 0, 1), -1);
	assert_true(back_reads(d) == reads);

	/* a new version: stale buffers go, the new size and bytes come */
	v2.size = 48 * KiB;
	v2.mtime_ns = 2000;
	assert_int_equal(clio_revalidate(f, &v2), 1);
	assert_int_equal(clio_fsize(f), 48 * KiB);
	assert_int_equal(clio_pread(f, buf, 48 * KiB, 0), 48 * KiB);
	assert_int_equal(tu_check(buf, 48 * KiB, 0, 2), -1);
	assert_true(back_reads(d) > reads);

	/* dirty data is newer than any version: it stays, and the size
	 * covers it even if the source says it is shorter */
	tu_fill(buf, 8 * KiB, 40 * KiB, 3);
	assert_int_equal(clio_pwrite(f, buf, 8 * KiB, 40 * KiB), 8 * KiB);
	v3 = v2;
	v3.size = 16 * KiB;
	v3.ctime_ns = 3000;
	assert_int_equal(clio_revalidate(f, &v3), 1);
	assert_int_equal(clio_fsize(f), 48 * KiB);
	assert_int_equal(clio_pread(f, buf, 8 * KiB, 40 * KiB), 8 * KiB);
	assert_int_equal(tu_check(buf, 8 * KiB, 40 * KiB, 3), -1);

	/* after our own write-back, recording the version keeps the cache */
	assert_int_equal(clio_fsync(f), 0);
	v3.size = 48 * KiB;
	v3.mtime_ns = 4000;
	assert_int_equal(clio_validator_set(f, &v3), 0);
	reads = back_reads(d);
	assert_int_equal(clio_revalidate(f, &v3), 0);
	assert_int_equal(clio_pread(f, buf, 8 * KiB, 40 * KiB), 8 * KiB);
	assert_true(back_reads(d) == reads);

	assert_int_equal(clio_revalidate(f, NULL), -EINVAL);
	v3.size = UINT64_MAX;
	assert_int_equal(clio_revalidate(f, &v3), -EINVAL);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);

	/* the first word says the source grew past a block read while it
	 * ended inside it: the source's bytes there, not the zeros cached */
	c = small_cache();
	d = tu_dev_open("mem:size=0", 0);
	tu_fill(buf, 20000, 0, 5);
	assert_int_equal(clio_dev_pwrite(d, buf, 10000, 0), 10000);
	f = tu_open(c, d, CLIO_RDONLY);
	assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), 10000);
	tu_fill(buf, 20000, 0, 5);
	assert_int_equal(clio_dev_pwrite(d, buf, 20000, 0), 20000);
	v1.size = 20000;
	assert_int_equal(clio_revalidate(f, &v1), 0);
	assert_int_equal(clio_fsize(f), 20000);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), 20000);
	assert_int_equal(tu_check(buf, 20000, 0, 5), -1);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);

	/* another writer appended past a dirty block our data ends inside:
	 * its write-back keeps the source's bytes past our end, not the
	 * zeros the block had there */
	c = small_cache();
	d = tu_dev_open("mem:size=0", 0);
	tu_fill(buf, 20000, 0, 6);
	assert_int_equal(clio_dev_pwrite(d, buf, 10000, 0), 10000);
	f = tu_open(c, d, CLIO_RDWR);
	v1.size = 10000;
	assert_int_equal(clio_revalidate(f, &v1), 0);
	tu_fill(buf, 10, 9000, 7);
	assert_int_equal(clio_pwrite(f, buf, 10, 9000), 10);
	tu_fill(buf, 20000, 0, 8);
	assert_int_equal(clio_dev_pwrite(d, buf + 10000, 10000, 10000), 10000);
	v2 = v1;
	v2.size = 20000;
	v2.mtime_ns++;
	assert_int_equal(clio_revalidate(f, &v2), 1);
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_dev_pread(d, buf, 20000, 0), 20000);
	assert_int_equal(tu_check(buf, 9000, 0, 6), -1);
	assert_int_equal(tu_check(buf + 9000, 10, 9000, 7), -1);
	assert_int_equal(tu_check(buf + 9010, 990, 9010, 6), -1);
	assert_int_equal(tu_check(buf + 10000, 10000, 10000, 8), -1);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* The first word on the source's version while the object holds dirty
 * data: the source's size is taken all the same (the dirty data's end
 * at least), and a dirty block the old end lies inside takes the grown
 * source's bytes past that end (invariants 1 and 2 of consist.c). */
static void
test_revalidate_first_dirty(void **state)
{
	struct clio_validator v = { 20000, 1000, 1000, 7, 0 };
	unsigned char buf[64 * 1024];
	clio_cache *c = small_cache();
	clio_dev *d = tu_dev_open("mem:size=0", 0);
	clio_file *f;

	(void)state;
	/* grown behind the cache: size and bytes past the old end come */
	tu_fill(buf, 20000, 0, 11);
	assert_int_equal(clio_dev_pwrite(d, buf, 10000, 0), 10000);
	f = tu_open(c, d, CLIO_RDWR);
	tu_fill(buf, 10, 9000, 12);
	assert_int_equal(clio_pwrite(f, buf, 10, 9000), 10);
	tu_fill(buf, 20000, 0, 11);
	assert_int_equal(clio_dev_pwrite(d, buf + 10000, 10000, 10000), 10000);
	assert_int_equal(clio_revalidate(f, &v), 0);
	assert_int_equal(clio_fsize(f), 20000);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), 20000);
	assert_int_equal(tu_check(buf, 9000, 0, 11), -1);
	assert_int_equal(tu_check(buf + 9000, 10, 9000, 12), -1);
	assert_int_equal(tu_check(buf + 9010, 10990, 9010, 11), -1);
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_dev_pread(d, buf, 20000, 0), 20000);
	assert_int_equal(tu_check(buf, 9000, 0, 11), -1);
	assert_int_equal(tu_check(buf + 9000, 10, 9000, 12), -1);
	assert_int_equal(tu_check(buf + 9010, 10990, 9010, 11), -1);
	assert_int_equal(clio_close(f), 0);

	/* shrunk behind the cache: the size is the source's, or the end of
	 * the dirty data where that is larger */
	assert_int_equal(clio_dev_resize(d, 0), 0);
	tu_fill(buf, 40000, 0, 13);
	assert_int_equal(clio_dev_pwrite(d, buf, 40000, 0), 40000);
	f = tu_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), 40000);
	tu_fill(buf, 10, 100, 14);
	assert_int_equal(clio_pwrite(f, buf, 10, 100), 10);
	assert_int_equal(clio_dev_resize(d, 2000), 0);
	v.size = 2000;
	v.mtime_ns++;
	assert_int_equal(clio_revalidate(f, &v), 0);
	assert_int_equal(clio_fsize(f), 4096);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

static void *
writeback_thread(void *arg)
{
	return (void *)(intptr_t)clio_writeback(arg);
}

/* Write f's dirty block back in another thread and return once that
 * write is in flight (the device's writes take 0.5 s); *t to join. */
static void
writeback_start(clio_cache *c, clio_file *f, pthread_t *t)
{
	struct clio_cache_stats st;

	assert_int_equal(pthread_create(t, NULL, writeback_thread, f), 0);
	do
		clio_cache_stats(c, &st);
	while (st.dirty_bytes > 0);
}

/* A write-back of the block the old end lies inside, in flight when a
 * grown version comes (another one, or the first): written only up to
 * that end, it leaves the block clean with zeros past it, where the
 * source has bytes: that block must not stay cached. */
static void
test_revalidate_writing_tail(void **state)
{
	struct clio_validator v = { 10000, 1000, 1000, 7, 0 };
	unsigned char buf[32 * 1024];
	clio_cache *c = small_cache();
	clio_dev *d = tu_dev_open("fault:write_delay=0.5@mem:size=0", 0);
	clio_file *f;
	pthread_t t;
	void *ret;

	(void)state;
	/* another version */
	tu_fill(buf, 20000, 0, 15);
	assert_int_equal(clio_dev_pwrite(d, buf, 20000, 0), 20000);
	f = tu_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_revalidate(f, &v), 0);
	assert_int_equal(clio_fsize(f), 10000);
	tu_fill(buf, 10, 9000, 15);
	assert_int_equal(clio_pwrite(f, buf, 10, 9000), 10);
	writeback_start(c, f, &t);
	v.size = 20000;
	v.mtime_ns++;
	assert_int_equal(clio_revalidate(f, &v), 1);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	assert_int_equal(clio_fsize(f), 20000);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), 20000);
	assert_int_equal(tu_check(buf, 20000, 0, 15), -1);
	assert_int_equal(clio_close(f), 0);

	/* the first version */
	assert_int_equal(clio_dev_resize(d, 10000), 0);
	f = tu_open(c, d, CLIO_RDWR);
	tu_fill(buf, 10, 9000, 16);
	assert_int_equal(clio_pwrite(f, buf, 10, 9000), 10);
	tu_fill(buf, 20000, 0, 15);
	assert_int_equal(clio_dev_pwrite(d, buf + 10000, 10000, 10000), 10000);
	writeback_start(c, f, &t);
	assert_int_equal(clio_revalidate(f, &v), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	assert_int_equal(clio_fsize(f), 20000);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), 20000);
	assert_int_equal(tu_check(buf, 9000, 0, 15), -1);
	assert_int_equal(tu_check(buf + 9000, 10, 9000, 16), -1);
	assert_int_equal(tu_check(buf + 9010, 10990, 9010, 15), -1);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* A view that holds its block for 0.5 s. */
static int
view_slow(void *arg, const struct iovec *iov, int iovcnt, int last)
{
	(void)arg;
	(void)iov;
	(void)iovcnt;
	(void)last;
	tu_sleep(0.5);
	return 0;
}

static void *
view_thread(void *arg)
{
	return (void *)(intptr_t)clio_pread_view(arg, 4096, 0, view_slow, NULL);
}

static struct clio_validator grown_v = { 20000, 2000, 1000, 7, 0 };

static void *
revalidate_thread(void *arg)
{
	return (void *)(intptr_t)clio_revalidate(arg, &grown_v);
}

/* A write into the block the old end lies inside while a grown
 * version's clio_revalidate waits for a reader of another block: the
 * block the writer reads before its write must have the source's bytes
 * past the old end, not zeros (the write waits for the new size). */
static void
test_revalidate_write_meanwhile(void **state)
{
	struct clio_validator v = { 10000, 1000, 1000, 7, 0 };
	unsigned char buf[32 * 1024];
	clio_cache *c = small_cache();
	clio_dev *d = tu_dev_open("mem:size=0", 0);
	clio_file *f;
	pthread_t tv, tr;
	void *ret;

	(void)state;
	tu_fill(buf, 20000, 0, 17);
	assert_int_equal(clio_dev_pwrite(d, buf, 20000, 0), 20000);
	f = tu_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_revalidate(f, &v), 0);
	assert_int_equal(clio_fsize(f), 10000);
	assert_int_equal(pthread_create(&tv, NULL, view_thread, f), 0);
	tu_sleep(0.1);
	assert_int_equal(pthread_create(&tr, NULL, revalidate_thread, f), 0);
	tu_sleep(0.1);
	tu_fill(buf, 10, 9000, 18);
	assert_int_equal(clio_pwrite(f, buf, 10, 9000), 10);
	assert_int_equal(pthread_join(tv, &ret), 0);
	assert_int_equal((intptr_t)ret, 4096);
	assert_int_equal(pthread_join(tr, &ret), 0);
	assert_int_equal((intptr_t)ret, 1);
	assert_int_equal(clio_fsize(f), 20000);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), 20000);
	assert_int_equal(tu_check(buf, 9000, 0, 17), -1);
	assert_int_equal(tu_check(buf + 9000, 10, 9000, 18), -1);
	assert_int_equal(tu_check(buf + 9010, 10990, 9010, 17), -1);
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_dev_pread(d, buf, 20000, 0), 20000);
	assert_int_equal(tu_check(buf + 9010, 10990, 9010, 17), -1);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* v, another version than f's: taken (the cache dropped), then kept at
 * the next look (32 KiB read again without a read of d). */
static void
kept_at_next_look(clio_file *f, clio_dev *d, const struct clio_validator *v)
{
	unsigned char buf[32 * 1024];
	uint64_t reads;

	assert_int_equal(clio_revalidate(f, v), 1);
	assert_int_equal(clio_pread(f, buf, 32 * KiB, 0), 32 * KiB);
	reads = back_reads(d);
	assert_int_equal(clio_revalidate(f, v), 0);
	assert_int_equal(clio_pread(f, buf, 32 * KiB, 0), 32 * KiB);
	assert_true(back_reads(d) == reads);
}

/* Whole-second times seen less than 2 s after the change: a change
 * later in that second leaves them as they are (same size), so the next
 * look drops the cache, as it does for another version (it kept the
 * stale bytes).  Times with nanoseconds, or whole seconds long past,
 * keep it; so does the next look at a version recorded 2 s after its
 * change. */
static void
test_revalidate_whole_seconds(void **state)
{
	struct timespec now;
	struct clio_validator v = { 32 * KiB, 0, 0, 9, 0 };
	unsigned char buf[32 * 1024];
	clio_cache *c = small_cache();
	clio_dev *d = tu_dev_open("mem:size=0", 0);
	clio_file *f;

	(void)state;
	clock_gettime(CLOCK_REALTIME, &now);
	change_behind(d, 32 * KiB, 1);
	f = tu_open(c, d, CLIO_RDWR);
	v.mtime_ns = v.ctime_ns = (int64_t)now.tv_sec * 1000000000;
	assert_int_equal(clio_revalidate(f, &v), 0);
	assert_int_equal(clio_pread(f, buf, 32 * KiB, 0), 32 * KiB);
	assert_int_equal(tu_check(buf, 32 * KiB, 0, 1), -1);

	/* changed in the same second: the same validator, new bytes */
	change_behind(d, 32 * KiB, 2);
	assert_int_equal(clio_revalidate(f, &v), 1);
	assert_int_equal(clio_pread(f, buf, 32 * KiB, 0), 32 * KiB);
	assert_int_equal(tu_check(buf, 32 * KiB, 0, 2), -1);

	/* the same after clio_validator_set (the front end's own write) */
	assert_int_equal(clio_validator_set(f, &v), 0);
	change_behind(d, 32 * KiB, 3);
	assert_int_equal(clio_revalidate(f, &v), 1);
	assert_int_equal(clio_pread(f, buf, 32 * KiB, 0), 32 * KiB);
	assert_int_equal(tu_check(buf, 32 * KiB, 0, 3), -1);

	/* nanoseconds tell: the cache is kept */
	v.mtime_ns = v.ctime_ns = (int64_t)now.tv_sec * 1000000000 + 1;
	kept_at_next_look(f, d, &v);
	/* whole seconds long past: kept too */
	v.mtime_ns = v.ctime_ns = ((int64_t)now.tv_sec - 10) * 1000000000;
	kept_at_next_look(f, d, &v);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

static void
test_keep(void **state)
{
	unsigned char buf[16 * 1024];
	clio_cache *c = small_cache();
	clio_dev *d = tu_dev_open("mem:size=0", 0);
	clio_file *f, *g;
	uint64_t reads;

	(void)state;
	change_behind(d, 16 * KiB, 4);
	f = tu_open(c, d, CLIO_RDONLY | CLIO_KEEP);
	assert_int_equal(clio_pread(f, buf, 16 * KiB, 0), 16 * KiB);
	assert_int_equal(clio_close(f), 0);
	reads = back_reads(d);

	/* the last close kept the buffers: a reopen reads nothing */
	f = tu_open(c, d, CLIO_RDONLY);
	assert_int_equal(clio_pread(f, buf, 16 * KiB, 0), 16 * KiB);
	assert_int_equal(tu_check(buf, 16 * KiB, 0, 4), -1);
	assert_true(back_reads(d) == reads);
	/* forgetting needs the handles closed */
	assert_int_equal(clio_cache_forget(c, d), -EBUSY);
	g = tu_open(c, d, CLIO_RDWR);
	tu_fill(buf, 4 * KiB, 0, 5);
	assert_int_equal(clio_pwrite(g, buf, 4 * KiB, 0), 4 * KiB);
	assert_int_equal(clio_close(g), 0);
	assert_int_equal(clio_close(f), 0);

	/* forget: written back, dropped; a new open reads from the device */
	assert_int_equal(clio_cache_forget(c, d), 0);
	assert_int_equal(clio_cache_forget(c, d), 0); /* nothing left: fine */
	f = tu_open(c, d, CLIO_RDONLY);
	assert_int_equal(clio_pread(f, buf, 4 * KiB, 0), 4 * KiB);
	assert_int_equal(tu_check(buf, 4 * KiB, 0, 5), -1);
	assert_true(back_reads(d) > reads);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

static void
test_writeback(void **state)
{
	unsigned char buf[8 * 1024], back[8 * 1024];
	clio_cache *c = small_cache();
	clio_dev *d = tu_dev_open("mem:size=0", 0), *bad;
	clio_file *f;
	uint64_t flushes;

	(void)state;
	f = tu_open(c, d, CLIO_RDWR);
	tu_fill(buf, sizeof(buf), 0, 6);
	assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	flushes = back_flushes(d);
	/* on the device, and the device not flushed */
	assert_int_equal(clio_writeback(f), 0);
	assert_int_equal(clio_dev_pread(d, back, sizeof(back), 0), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	assert_true(back_flushes(d) == flushes);
	/* fsync flushes */
	assert_int_equal(clio_fsync(f), 0);
	assert_true(back_flushes(d) == flushes + 1);
	assert_int_equal(clio_close(f), 0);

	/* a failed write-back is reported by it, once */
	bad = tu_dev_open("fault:write=EIO@mem:size=1M", 0);
	f = tu_open(c, bad, CLIO_RDWR);
	assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_int_equal(clio_writeback(f), -EIO);
	assert_int_equal(clio_close(f), -EIO); /* the retry at close fails too */
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(bad);
	clio_dev_close(d);
}

/* Seconds for n rounds of open, read and close of device d. */
static double
reopen_rounds(clio_cache *c, clio_dev *d, int n)
{
	unsigned char buf[512];
	double t0 = tu_now();
	int i;

	for (i = 0; i < n; i++) {
		clio_file *f = tu_open(c, d, CLIO_RDONLY | CLIO_KEEP);

		assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		assert_int_equal(clio_close(f), 0);
	}
	return tu_now() - t0;
}

/* Many kept objects: an open finds its own in constant time. */
static void
test_many_kept(void **state)
{
	enum { NDEV = 3000 };
	clio_dev **devs = calloc(NDEV, sizeof(*devs));
	clio_cache *c = small_cache();
	double few, many;
	int i;

	(void)state;
	for (i = 0; i < NDEV; i++)
		devs[i] = tu_dev_open("mem:size=4K", 0);
	for (i = 0; i < 10; i++)
		reopen_rounds(c, devs[i], 1);
	few = reopen_rounds(c, devs[0], 2000);
	for (i = 10; i < NDEV; i++)
		reopen_rounds(c, devs[i], 1);
	many = reopen_rounds(c, devs[0], 2000);
	print_message("  2000 reopens: %.4f s with 10 kept objects, %.4f s with %d\n",
		      few, many, NDEV);
	assert_true(many < 8 * few + 0.05);
	for (i = 0; i < NDEV; i++) {
		assert_int_equal(clio_cache_forget(c, devs[i]), 0);
		clio_dev_close(devs[i]);
	}
	assert_int_equal(clio_cache_free(c), 0);
	free(devs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_revalidate),
		cmocka_unit_test(test_revalidate_first_dirty),
		cmocka_unit_test(test_revalidate_writing_tail),
		cmocka_unit_test(test_revalidate_write_meanwhile),
		cmocka_unit_test(test_revalidate_whole_seconds),
		cmocka_unit_test(test_keep),
		cmocka_unit_test(test_writeback),
		cmocka_unit_test(test_many_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
