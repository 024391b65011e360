/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-api.c - the public API held to libclio(3) call by call, from
 * outside: the documented errors are the ones returned, a call that
 * fails changes nothing, and public calls made at once from many
 * threads on one object keep the data and the counters right.
 *
 *  - conf: clio_conf_set with every key, a good and bad values (the
 *    message names the value, the configuration stays as it was);
 *    clio_conf_check with every field out of its range (the message
 *    names the field); clio_cache_new refusing what check refuses;
 *  - dev_errors: clio_dev_open flags and strings, a read-only device on
 *    every call that writes, trims and zeroings out of range, mem's
 *    largest size, refused requests whose callback never runs, devices
 *    of callbacks with bad parameters;
 *  - unchanged: failed clio_pwrite, clio_ftruncate, clio_discard and
 *    clio_open leave the size, the data and the cache as they were (and
 *    a discard near UINT64_MAX drops nothing);
 *  - view_fail: a view that fails or returns a positive value stops the
 *    read with that value, on cached, uncached and direct reads, and
 *    leaves no buffer held;
 *  - revalidate_fixed: a validator's size does not move or hide the end
 *    of a fixed-size device;
 *  - blockdev: a block device's version has its size, and revalidating
 *    leaves the size alone (a loop device, when run as root);
 *  - revalidate_race: clio_revalidate and clio_validator_set among
 *    readers and writers of one object: no written byte is lost, a
 *    reader sees old or new data only;
 *  - sync_race: clio_sync, clio_writeback, clio_fsync and opens and
 *    closes racing one thread's writes and truncates: the cache and the
 *    device end with that thread's data, byte for byte;
 *  - forget_race: clio_cache_forget of kept objects while another
 *    device of the cache is busy;
 *  - submit_close: asynchronous requests in flight while a handle and
 *    then the device close: every callback has run, once, when
 *    clio_dev_close returns;
 *  - stats_threads: the front-end counters of a device used from many
 *    threads only grow, and end exact;
 *  - null_args: NULL handles and buffers, and iovecs whose lengths
 *    overflow, refused without a crash;
 *  - callback_odd: callbacks returning what is no errno (INT_MIN, a
 *    positive value) give -EIO; a maxio that the default sector does
 *    not divide is refused; above 512, a sector is the unit of every
 *    transfer;
 *  - view_direct_len: clio_pread_view on the direct path refuses an
 *    unaligned length before it allocates for it;
 *  - fault_nest: fault: devices nested past 16 levels are refused, not a
 *    stack overflow;
 *  - fault_model: objects written, read, truncated, synced and reopened
 *    from their own threads on devices failing at random, against a
 *    model: what fsync acknowledged is on the device, errors reach only
 *    their object, and each handle hears of every failure;
 *  - revalidate_first_shrink: a first validator smaller than the object
 *    drops the blocks cached past it: a write past the end shows zeros
 *    before it, cached or not.
 *  - prefault: clio_cache_prefault makes the whole cache resident while
 *    another thread writes and reads through it, and changes no byte.
 *  - view_whole: clio_pread_view of 1 MiB in 4 KiB blocks, starting
 *    inside a block, cold (its blocks read while it runs) and warm, comes
 *    in one call of the view with the right bytes (a FUSE READ reply
 *    then goes out of the cache's buffers, not copied together).
 * Random tests print their seed (CLIO_SEED repeats one); CLIO_TEST=NAME
 * runs one test; CLIO_FLAVOUR=tsan does fewer operations.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
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
#define TiB (1ull << 40)

static bool
tsan(void)
{
	const char *f = getenv("CLIO_FLAVOUR");

	return f != NULL && strcmp(f, "tsan") == 0;
}

static clio_cache *
cache_of(uint32_t bsize, uint64_t size)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	clio_cache *c = NULL;
	char err[256] = "";

	conf.bsize = bsize;
	conf.maxbsize = bsize > conf.maxbsize ? bsize : conf.maxbsize;
	conf.maxphys = 64 * KiB < conf.maxbsize ? conf.maxbsize : 64 * KiB;
	conf.cache_size = size;
	if (clio_conf_check(&conf, err, sizeof(err)) != 0)
		print_message("conf: %s\n", err);
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	return c;
}

/* ------------------------------------------------------------ a fixed device of callbacks */

struct cbmem {
	pthread_mutex_t lock;
	unsigned char *mem;
	size_t size;
	atomic_int closed;
};

static int
cbm_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct cbmem *m = arg;

	pthread_mutex_lock(&m->lock);
	memcpy(buf, m->mem + off, len);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static int
cbm_pwrite(void *arg, const void *buf, size_t len, uint64_t off)
{
	struct cbmem *m = arg;

	pthread_mutex_lock(&m->lock);
	memcpy(m->mem + off, buf, len);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static void
cbm_close(void *arg)
{
	struct cbmem *m = arg;

	atomic_fetch_add(&m->closed, 1);
}

static const struct clio_dev_callbacks cbm_ops = { cbm_pread, cbm_pwrite, NULL,
						    cbm_close };

static void
cbm_init(struct cbmem *m, size_t size)
{
	pthread_mutex_init(&m->lock, NULL);
	m->mem = calloc(1, size);
	assert_non_null(m->mem);
	m->size = size;
	atomic_init(&m->closed, 0);
}

static void
cbm_free(struct cbmem *m)
{
	free(m->mem);
	pthread_mutex_destroy(&m->lock);
}

/* ------------------------------------------------------------ the tunables */

struct keycase {
	const char *key, *good, *bad[4];
};

static void
test_conf(void **state)
{
	char dir[] = "/tmp/clio-api-XXXXXX", err[256];
	const struct keycase keys[] = {
		{ "bsize", "8k", { "3k", "256", "2M", "abc" } },
		{ "maxbsize", "128k", { "2M", "100k", "", "-1" } },
		{ "maxphys", "64M", { "128M", "3M", "1x", "0" } },
		{ "read_max", "4096", { "4097", "-5", "", NULL } },
		{ "read-max", "0", { "5000", NULL } },
		{ "seqmax", "4096", { "0", "4097", NULL } },
		{ "cache_size", "1T", { "1K", "2T", "x", NULL } },
		{ "dirty_hi", "100", { "0", "101", NULL } },
		{ "dirty_lo", "0", { "100", "-1", NULL } },
		{ "write_behind", "2", { "3", NULL } },
		{ "queue_depth", "256", { "0", "257", NULL } },
		{ "flusher", "0", { "2", "yes", NULL } },
		{ "flush_behind", "1T", { "2T", "z", NULL } },
		{ "dirty_age", "0.5", { "0", "-1", "nan", "1e7" } },
		{ "dirty-age", "1000000", { "inf", "-nan", "x", "0x10" } },
		{ "dirty_age", "1e3", { " 5", "5 ", "infinity", "1000000.5" } },
		{ "cluster", "lite", { "maybe", "ON", "", NULL } },
		{ "rbw", "block", { "page", "", NULL } },
		{ "disk_cache_mode", "writeback", { "sometimes", NULL } },
		{ "disk-cache-verify", "sample", { "all", NULL } },
		{ "disk_cache_size", "1G", { "2P", "q", NULL } },
		{ "disk_cache_brun", "100", { "101", NULL } },
		{ "disk_cache_bcull", "50", { "101", NULL } },
		{ "disk_cache_bstop", "0", { "101", NULL } },
		{ "disk_cache", dir, { "/nonexistent/clio-dir", NULL } },
	};
	struct clio_conf conf, before;
	clio_cache *c;
	size_t i, j;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct keycase *k = &keys[i];

		assert_int_equal(clio_conf_init(&conf), 0);
		err[0] = '\0';
		if (clio_conf_set(&conf, k->key, k->good, err, sizeof(err)) != 0)
			print_message("%s=%s: %s\n", k->key, k->good, err);
		assert_int_equal(clio_conf_set(&conf, k->key, k->good, err, sizeof(err)), 0);
		for (j = 0; j < 4 && k->bad[j] != NULL; j++) {
			before = conf;
			strcpy(err, "untouched");
			assert_int_equal(clio_conf_set(&conf, k->key, k->bad[j], err,
						       sizeof(err)), -EINVAL);
			assert_memory_equal(&conf, &before, sizeof(conf));
			/* one line naming the value (and the key) */
			if (strstr(err, k->bad[j]) == NULL || strchr(err, '\n') != NULL ||
			    strcmp(err, "untouched") == 0)
				print_message("%s=%s: '%s'\n", k->key, k->bad[j], err);
			assert_non_null(strstr(err, k->bad[j]));
			assert_null(strchr(err, '\n'));
			assert_int_not_equal(strcmp(err, "untouched"), 0);
			/* NULL errbuf is fine */
			assert_int_equal(clio_conf_set(&conf, k->key, k->bad[j], NULL, 0),
					 -EINVAL);
		}
	}
	rmdir(dir);
	/* the message gives the whole range, not only its lower end */
	assert_int_equal(clio_conf_set(&conf, "dirty_age", "1e7", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "1000000)"));
	assert_int_equal(clio_conf_init(&conf), 0);
	assert_int_equal(clio_conf_set(&conf, "no_such_key", "1", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "no_such_key"));
	assert_int_equal(clio_conf_set(NULL, "bsize", "4k", err, sizeof(err)), -EINVAL);
	assert_int_equal(clio_conf_set(&conf, NULL, "4k", err, sizeof(err)), -EINVAL);
	assert_int_equal(clio_conf_set(&conf, "bsize", NULL, err, sizeof(err)), -EINVAL);
	assert_int_equal(clio_conf_init(NULL), -EINVAL);

	/* the largest values set takes pass check */
	assert_int_equal(clio_conf_init(&conf), 0);
	assert_int_equal(clio_conf_set(&conf, "maxphys", "64M", NULL, 0), 0);
	assert_int_equal(clio_conf_set(&conf, "read_max", "4096", NULL, 0), 0);
	assert_int_equal(clio_conf_set(&conf, "seqmax", "4096", NULL, 0), 0);
	assert_int_equal(clio_conf_set(&conf, "queue_depth", "256", NULL, 0), 0);
	assert_int_equal(clio_conf_set(&conf, "flush_behind", "1T", NULL, 0), 0);
	assert_int_equal(clio_conf_set(&conf, "dirty_age", "1000000", NULL, 0), 0);
	assert_int_equal(clio_conf_check(&conf, err, sizeof(err)), 0);

	/* every field out of range: check says which, and the cache is
	 * not made (nothing leaks: ASan) */
	for (i = 0; i < 32; i++) {
		const char *name = NULL;

		assert_int_equal(clio_conf_init(&conf), 0);
		switch (i) {
		case 0: conf.bsize = 3000; name = "bsize"; break;
		case 1: conf.bsize = 2u << 20; conf.maxbsize = conf.maxphys = 2u << 20;
			name = "bsize"; break;
		case 2: conf.maxbsize = 2u << 20; name = "maxbsize"; break;
		case 3: conf.maxbsize = 8192; name = "maxbsize"; break;
		case 4: conf.maxphys = 128u << 20; name = "maxphys"; break;
		case 5: conf.maxphys = 3u << 20; name = "maxphys"; break;
		case 6: conf.read_max = 5000; name = "read_max"; break;
		case 7: conf.seqmax = 0; name = "seqmax"; break;
		case 8: conf.seqmax = 5000; name = "seqmax"; break;
		case 9: conf.cache_size = 2 * TiB; name = "cache_size"; break;
		case 10: conf.cache_size = 8 * 16384 - 1; name = "cache_size"; break;
		case 11: conf.dirty_hi = 101; name = "dirty_hi"; break;
		case 12: conf.dirty_lo = conf.dirty_hi; name = "dirty_lo"; break;
		case 13: conf.write_behind = 3; name = "write_behind"; break;
		case 14: conf.queue_depth = 0; name = "queue_depth"; break;
		case 15: conf.queue_depth = 257; name = "queue_depth"; break;
		case 16: conf.flusher = 2; name = "flusher"; break;
		case 17: conf.flush_behind = 2 * TiB; name = "flush_behind"; break;
		case 18: conf.dirty_age = 0; name = "dirty_age"; break;
		case 19: conf.dirty_age = -1; name = "dirty_age"; break;
		case 20: conf.dirty_age = NAN; name = "dirty_age"; break;
		case 21: conf.dirty_age = INFINITY; name = "dirty_age"; break;
		case 22: conf.dirty_age = 2e6; name = "dirty_age"; break;
		case 23: conf.cluster = (enum clio_cluster_mode)3; name = "cluster"; break;
		case 24: conf.rbw = (enum clio_rbw_mode)2; name = "rbw"; break;
		case 25: conf.disk_cache_mode = 2; name = "disk_cache_mode"; break;
		case 26: conf.disk_cache_verify = 2; name = "disk_cache_verify"; break;
		case 27: conf.disk_cache_bstop = conf.disk_cache_bcull; name = "bstop"; break;
		case 28: conf.disk_cache_brun = 101; name = "brun"; break;
		case 29: conf.disk_cache_size = 2ull << 50; name = "disk_cache_size"; break;
		case 30: conf.dirty_hi = 0; conf.dirty_lo = 0; name = "dirty_hi"; break;
		default: break;
		}
		if (name == NULL)
			continue;
		strcpy(err, "untouched");
		if (clio_conf_check(&conf, err, sizeof(err)) != -EINVAL ||
		    strstr(err, name) == NULL)
			print_message("case %zu (%s): '%s'\n", i, name, err);
		assert_int_equal(clio_conf_check(&conf, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, name));
		assert_null(strchr(err, '\n'));
		c = (clio_cache *)&conf; /* must stay as it was */
		assert_int_equal(clio_cache_new(&conf, &c), -EINVAL);
		assert_ptr_equal(c, (clio_cache *)&conf);
	}
	/* a cache larger than the memory: ENOMEM, and nothing leaks */
	assert_int_equal(clio_conf_init(&conf), 0);
	conf.bsize = conf.maxbsize = conf.maxphys = 1u << 20;
	conf.cache_size = TiB;
	assert_int_equal(clio_conf_check(&conf, err, sizeof(err)), 0);
	c = NULL;
	i = (size_t)-clio_cache_new(&conf, &c);
	if (i == 0) /* a system that lends all it is asked for */
		assert_int_equal(clio_cache_free(c), 0);
	else
		assert_int_equal(i, ENOMEM);
	assert_int_equal(clio_conf_check(NULL, err, sizeof(err)), -EINVAL);
	c = NULL;
	assert_int_equal(clio_cache_new(NULL, &c), -EINVAL);
	assert_null(c);
	assert_int_equal(clio_conf_init(&conf), 0);
	assert_int_equal(clio_cache_new(&conf, NULL), -EINVAL);
}

/* ------------------------------------------------------------ device errors */

static atomic_int refused_done;

static void
count_done(struct clio_req *req)
{
	(void)req;
	atomic_fetch_add(&refused_done, 1);
}

static void
test_dev_errors(void **state)
{
	struct clio_dev_callbacks cb = cbm_ops;
	struct clio_dev_info info;
	struct clio_validator v;
	unsigned char buf[4096];
	struct iovec iov = { buf, sizeof(buf) };
	struct clio_req req;
	char err[256], pbuf[512];
	struct cbmem m;
	clio_dev *d, *ro;
	clio_cache *c;
	clio_file *f;
	int n;

	(void)state;
	memset(buf, 0x5a, sizeof(buf));
	/* flags and strings */
	d = (clio_dev *)buf;
	assert_int_equal(clio_dev_open_err("mem:size=1M", 0x4, &d, err, sizeof(err)),
			 -EINVAL);
	assert_ptr_equal(d, (clio_dev *)buf);
	assert_non_null(strstr(err, "0x4"));
	/* a value with a newline: the message stays one line */
	assert_true(clio_dev_open_err("mem:size=1M\nx", 0, &d, err, sizeof(err)) < 0);
	assert_null(strchr(err, '\n'));
	assert_non_null(strstr(err, "1M?x"));
	/* exclusive creation: a device that is no file exists already */
	assert_int_equal(clio_dev_open_err("mem:size=1M", CLIO_DEV_CREATE | CLIO_DEV_EXCL,
					   &d, err, sizeof(err)), -EEXIST);
	assert_ptr_equal(d, (clio_dev *)buf);
	assert_int_equal(clio_dev_open("mem:size=1M", 0x100 | CLIO_DEV_RDONLY, &d), -EINVAL);
	assert_int_equal(clio_dev_open_err(NULL, 0, &d, err, sizeof(err)), -EINVAL);
	assert_int_equal(clio_dev_open("mem:size=1M", 0, NULL), -EINVAL);
	assert_int_equal(clio_dev_open_err("file:/nonexistent-clio/x", 0, &d, err,
					   sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent-clio/x"));
	assert_int_equal(clio_dev_open_err("mem:size=2T", 0, &d, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "2T"));
	assert_int_equal(clio_dev_open_err("mem:size=1M,colour=red", 0, &d, err,
					   sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "colour"));
	n = clio_dev_open_err("sim:preset=nosuch", 0, &d, err, sizeof(err));
	assert_int_equal(n, -EINVAL);
	assert_non_null(strstr(err, "nosuch"));

	/* a read-only device refuses every write, resize, trim, zeroing
	 * and writable handle; a refused request never calls back */
	ro = tu_dev_open("mem:size=64K", CLIO_DEV_RDONLY);
	assert_int_equal(clio_dev_info(ro, &info), 0);
	assert_int_equal(info.readonly, 1);
	assert_int_equal(clio_dev_pwrite(ro, buf, 512, 0), -EROFS);
	assert_int_equal(clio_dev_pwritev(ro, &iov, 1, 0), -EROFS);
	assert_int_equal(clio_dev_resize(ro, 4096), -EROFS);
	assert_int_equal(clio_dev_discard(ro, 0, 4096), -EROFS);
	assert_int_equal(clio_dev_write_zeroes(ro, 0, 4096), -EROFS);
	assert_int_equal(clio_dev_size(ro), 64 * KiB);
	assert_int_equal(clio_dev_pread(ro, buf, 4096, 0), 4096);
	assert_int_equal(tu_check_zero(buf, 4096), -1);
	assert_int_equal(clio_dev_flush(ro), 0);
	memset(&req, 0, sizeof(req));
	req.op = CLIO_OP_WRITE;
	req.iov = &iov;
	req.iovcnt = 1;
	req.done = count_done;
	assert_int_equal(clio_dev_submit(ro, &req), -EROFS);
	req.op = (enum clio_op)7;
	assert_int_equal(clio_dev_submit(ro, &req), -EINVAL);
	req.op = CLIO_OP_READ;
	req.done = NULL;
	assert_int_equal(clio_dev_submit(ro, &req), -EINVAL);
	req.done = count_done;
	assert_int_equal(clio_dev_submit(ro, NULL), -EINVAL);
	req.op = CLIO_OP_READ;
	req.iovcnt = -1;
	assert_int_equal(clio_dev_submit(ro, &req), -EINVAL);
	req.iovcnt = 1;
	c = cache_of(4096, 256 * KiB);
	assert_int_equal(clio_open(c, ro, CLIO_RDWR, &f), -EROFS);
	assert_int_equal(clio_open(c, ro, CLIO_WRONLY, &f), -EROFS);
	clio_dev_close(ro);

	/* trims and zeroings: inside the device, ends that do not wrap */
	d = tu_dev_open("mem:size=64K", 0);
	assert_int_equal(clio_dev_discard(d, UINT64_MAX - 1, 2), -EINVAL);
	assert_int_equal(clio_dev_discard(d, 4096, UINT64_MAX), -EINVAL);
	assert_int_equal(clio_dev_discard(d, 0, 64 * KiB + 1), -EINVAL);
	assert_int_equal(clio_dev_discard(d, 64 * KiB + 1, 0), -EINVAL);
	assert_int_equal(clio_dev_discard(d, 64 * KiB, 0), 0);
	assert_int_equal(clio_dev_write_zeroes(d, UINT64_MAX - 1, 2), -EINVAL);
	assert_int_equal(clio_dev_write_zeroes(d, 60 * KiB, 8 * KiB), -EINVAL);
	assert_int_equal(clio_dev_write_zeroes(d, 0, 0), 0);
	assert_int_equal(clio_dev_size(d), 64 * KiB);
	/* mem's largest size is 1 TiB: past it, EFBIG and no growth */
	assert_int_equal(clio_dev_pwrite(d, buf, 1, TiB), -EFBIG);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, TiB - 1), -EFBIG);
	assert_int_equal(clio_dev_pwrite(d, buf, 1, 1ull << 50), -EFBIG);
	assert_int_equal(clio_dev_resize(d, TiB + 1), -EFBIG);
	assert_int_equal(clio_dev_resize(d, 1ull << 62), -EFBIG);
	assert_int_equal(clio_dev_size(d), 64 * KiB);
	req.op = CLIO_OP_WRITE;
	req.offset = 1ull << 45;
	assert_int_equal(clio_dev_submit(d, &req), -EFBIG);
	assert_int_equal(clio_dev_version(d, &v), -ENOTSUP);
	clio_dev_close(d);
	/* a fault device has its inner device's largest size */
	d = tu_dev_open("fault:write=EIO,offset=2T@mem:size=64K", 0);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, TiB), -EFBIG);
	assert_int_equal(clio_dev_resize(d, 2 * TiB), -EFBIG);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, 4096), 4096);
	assert_int_equal(clio_dev_size(d), 64 * KiB);
	assert_int_equal(clio_dev_info(NULL, &info), -EINVAL);
	assert_int_equal(clio_dev_info(d, NULL), -EINVAL);
	n = clio_dev_params(d, NULL, 0);
	assert_true(n > 0 && n < (int)sizeof(pbuf));
	assert_int_equal(clio_dev_params(d, pbuf, sizeof(pbuf)), n);
	assert_int_equal((int)strlen(pbuf), n);
	assert_int_equal(clio_dev_params(d, pbuf, 4), n);
	assert_int_equal((int)strlen(pbuf), 3);
	clio_dev_close(d);
	assert_int_equal(atomic_load(&refused_done), 0);

	/* a fixed device: reads past the end EINVAL, writes ENOSPC */
	cbm_init(&m, 64 * KiB);
	assert_int_equal(clio_dev_open_callbacks("cbm", 64 * KiB, 0, 0, &cbm_ops, &m, 2, &d),
			 0);
	req.offset = 64 * KiB - 512;
	req.op = CLIO_OP_READ;
	assert_int_equal(clio_dev_submit(d, &req), -EINVAL);
	req.op = CLIO_OP_WRITE;
	assert_int_equal(clio_dev_submit(d, &req), -ENOSPC);
	assert_int_equal(clio_dev_pwrite(d, buf, 1, 64 * KiB), -ENOSPC);
	assert_int_equal(clio_dev_resize(d, 128 * KiB), -ENOTSUP);
	assert_int_equal(clio_dev_size(d), 64 * KiB);
	assert_int_equal(atomic_load(&refused_done), 0);
	clio_dev_close(d);
	assert_int_equal(atomic_load(&m.closed), 1);
	/* a sector above the cache's bsize: the cache's blocks would go
	 * unaligned to the program's functions, so clio_open refuses */
	{
		struct clio_conf small = CLIO_CONF_DEFAULTS;
		struct cbmem m2;
		clio_cache *c1k;

		small.bsize = 1024;
		small.cache_size = 256 * KiB;
		cbm_init(&m2, 64 * KiB);
		assert_int_equal(clio_cache_new(&small, &c1k), 0);
		assert_int_equal(clio_dev_open_callbacks("cbm4k", 64 * KiB, 4096, 0, &cbm_ops,
							 &m2, 2, &d), 0);
		f = NULL;
		assert_int_equal(clio_open(c1k, d, CLIO_RDONLY, &f), -EINVAL);
		assert_null(f);
		f = tu_open(c, d, CLIO_RDWR); /* bsize 16 KiB: aligned */
		memset(buf, 0x6b, 1024);
		assert_int_equal(clio_pwrite(f, buf, 1024, 4096), 1024);
		assert_int_equal(clio_fsync(f), 0);
		assert_int_equal(clio_close(f), 0);
		assert_int_equal(m2.mem[4096], 0x6b);
		assert_int_equal(m2.mem[5119], 0x6b);
		assert_int_equal(m2.mem[5120], 0);
		assert_int_equal(clio_cache_free(c1k), 0);
		clio_dev_close(d);
		cbm_free(&m2);
	}
	/* bad parameters: EINVAL, and close is not called */
	assert_int_equal(clio_dev_open_callbacks("x", 4096, 3, 0, &cbm_ops, &m, 1, &d),
			 -EINVAL);
	assert_int_equal(clio_dev_open_callbacks("x", 4096, 512, 1000, &cbm_ops, &m, 1, &d),
			 -EINVAL);
	assert_int_equal(clio_dev_open_callbacks("x", 4096, 0, 0, NULL, &m, 1, &d), -EINVAL);
	assert_int_equal(clio_dev_open_callbacks("x", 4096, 0, 0, &cbm_ops, &m, 1, NULL),
			 -EINVAL);
	cb.pread = NULL;
	assert_int_equal(clio_dev_open_callbacks("x", 4096, 0, 0, &cb, &m, 1, &d), -EINVAL);
	assert_int_equal(atomic_load(&m.closed), 1);
	/* pwrite NULL: read-only */
	cb = cbm_ops;
	cb.pwrite = NULL;
	assert_int_equal(clio_dev_open_callbacks(NULL, 4096, 0, 0, &cb, &m, 1, &d), 0);
	assert_string_equal(clio_dev_name(d), "callback");
	assert_int_equal(clio_dev_info(d, &info), 0);
	assert_int_equal(info.readonly, 1);
	assert_int_equal(clio_dev_pwrite(d, buf, 512, 0), -EROFS);
	assert_int_equal(clio_open(c, d, CLIO_RDWR, &f), -EROFS);
	f = tu_open(c, d, CLIO_RDONLY);
	assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), 4096);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	assert_int_equal(atomic_load(&m.closed), 2);
	cbm_free(&m);
}

/* ------------------------------------------------------------ failed calls change nothing */

static void
expect_data(clio_file *f, const unsigned char *model, uint64_t size)
{
	unsigned char *back = malloc(size + 4096);

	assert_non_null(back);
	assert_int_equal(clio_fsize(f), (int64_t)size);
	assert_int_equal(clio_pread(f, back, size + 4096, 0), (ssize_t)size);
	assert_memory_equal(back, model, size);
	free(back);
}

static void
test_unchanged(void **state)
{
	const uint64_t size = 100 * KiB + 123;
	unsigned char *model = malloc(size), *al;
	struct clio_cache_stats s0, s1;
	struct cbmem m;
	clio_cache *c;
	clio_dev *d, *ro;
	clio_file *f, *fd, *g;

	(void)state;
	assert_non_null(model);
	assert_int_equal(posix_memalign((void **)&al, 4096, 8192), 0);
	tu_fill(model, size, 0, 77);
	c = cache_of(4096, 512 * KiB);
	d = tu_dev_open("mem:size=0", 0);
	f = tu_open(c, d, CLIO_RDWR);
	/* half on the device, half dirty */
	assert_int_equal(clio_pwrite(f, model, 50 * KiB, 0), 50 * KiB);
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_pwrite(f, model + 50 * KiB, size - 50 * KiB, 50 * KiB),
			 (ssize_t)(size - 50 * KiB));
	expect_data(f, model, size);

	/* writes past mem's largest size: EFBIG at once, not at fsync */
	assert_int_equal(clio_pwrite(f, model, 10, TiB), -EFBIG);
	assert_int_equal(clio_pwrite(f, model, 10, TiB - 5), -EFBIG);
	assert_int_equal(clio_pwrite(f, model, 0, TiB + 5), 0);
	expect_data(f, model, size);
	/* truncates that fail */
	assert_int_equal(clio_ftruncate(f, TiB + 1), -EFBIG);
	assert_int_equal(clio_ftruncate(f, (uint64_t)INT64_MAX + 1), -EFBIG);
	expect_data(f, model, size);
	/* discards that fail, and ones that cover no block */
	assert_int_equal(clio_discard(f, 4096, UINT64_MAX), -EINVAL);
	assert_int_equal(clio_discard(f, UINT64_MAX, 2), -EINVAL);
	assert_int_equal(clio_discard(f, UINT64_MAX - 10, 5), 0);
	assert_int_equal(clio_discard(f, UINT64_MAX - 4096, 4096), 0);
	assert_int_equal(clio_discard(f, 4096, 0), 0);
	assert_int_equal(clio_discard(f, 100, 4000), 0); /* inside one block */
	expect_data(f, model, size);
	/* direct calls that fail */
	fd = tu_open(c, d, CLIO_RDWR | CLIO_DIRECT);
	memcpy(al, model, 4096);
	assert_int_equal(clio_pwrite(fd, al, 4096, 100), -EINVAL);
	assert_int_equal(clio_pwrite(fd, al, 100, 0), -EINVAL);
	assert_int_equal(clio_pwrite(fd, al, 4096, TiB), -EFBIG);
	assert_int_equal(clio_close(fd), 0);
	expect_data(f, model, size);
	/* opens that fail leave no handle and no object behind */
	assert_int_equal(clio_open(c, d, CLIO_RDWR | 0x4000, &g), -EINVAL);
	assert_int_equal(clio_open(c, d, CLIO_ACCMODE, &g), -EINVAL);
	ro = tu_dev_open("mem:size=64K", CLIO_DEV_RDONLY);
	clio_cache_stats(c, &s0);
	assert_int_equal(clio_open(c, ro, CLIO_RDWR, &g), -EROFS);
	assert_int_equal(clio_cache_forget(c, ro), 0);
	clio_cache_stats(c, &s1);
	assert_int_equal(s1.cached_bytes, s0.cached_bytes);
	assert_int_equal(s1.dirty_bytes, s0.dirty_bytes);
	clio_dev_close(ro);
	assert_int_equal(clio_cache_forget(c, d), -EBUSY); /* f is still open */
	expect_data(f, model, size);
	/* and the device gets it all */
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_dev_size(d), size);
	{
		unsigned char *back = malloc(size);
		assert_non_null(back);
		assert_int_equal(clio_dev_pread(d, back, size, 0), (ssize_t)size);
		assert_memory_equal(back, model, size);
		free(back);
	}
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_forget(c, d), 0);
	clio_dev_close(d);

	/* a fixed device: a truncate to another size fails, changing
	 * nothing; to its own size it succeeds */
	cbm_init(&m, 64 * KiB);
	assert_int_equal(clio_dev_open_callbacks("cbm", 64 * KiB, 0, 0, &cbm_ops, &m, 2, &d),
			 0);
	f = tu_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_pwrite(f, model, 64 * KiB, 0), 64 * KiB);
	assert_int_equal(clio_ftruncate(f, 1000), -EINVAL);
	assert_int_equal(clio_ftruncate(f, 128 * KiB), -EINVAL);
	assert_int_equal(clio_pwrite(f, model, 1, 64 * KiB), -ENOSPC);
	expect_data(f, model, 64 * KiB);
	assert_int_equal(clio_ftruncate(f, 64 * KiB), 0);
	expect_data(f, model, 64 * KiB);
	assert_int_equal(clio_close(f), 0);
	pthread_mutex_lock(&m.lock);
	assert_memory_equal(m.mem, model, 64 * KiB);
	pthread_mutex_unlock(&m.lock);
	clio_dev_close(d);
	cbm_free(&m);
	assert_int_equal(clio_cache_free(c), 0);
	free(al);
	free(model);
}

/* ------------------------------------------------------------ views that fail */

struct vfail {
	int calls;	/* so far */
	int fail_at;	/* the call that returns ret (1: the first) */
	int ret;
	size_t bytes;
};

static int
view_fail(void *arg, const struct iovec *iov, int iovcnt, int last)
{
	struct vfail *v = arg;
	int i;

	(void)last;
	for (i = 0; i < iovcnt; i++)
		v->bytes += iov[i].iov_len;
	return ++v->calls == v->fail_at ? v->ret : 0;
}

static void
view_round(clio_cache *c, clio_dev *d, int flags, bool drop, const unsigned char *model)
{
	static const int rets[] = { -EIO, 7, -ENOMEM, 1 };
	unsigned char back[8192];
	clio_file *f = tu_open(c, d, flags), *w;
	int k, at;

	for (k = 0; k < 4; k++) {
		for (at = 1; at <= 2; at++) {
			struct vfail v = { 0, at, rets[k], 0 };
			ssize_t n;

			if (drop) {
				/* nothing cached: the locked path reads */
				struct clio_validator val = { 1, k * 2 + at, 0, 0, 0 };
				val.size = 256 * KiB;
				assert_true(clio_revalidate(f, &val) >= 0);
				val.mtime_ns = -1;
				assert_true(clio_revalidate(f, &val) >= 0);
			}
			n = clio_pread_view(f, 256 * KiB, 0, view_fail, &v);
			if ((flags & CLIO_DIRECT) && at == 2) {
				/* one call only: no failure at the second */
				assert_int_equal(n, 256 * KiB);
				continue;
			}
			if (n != rets[k] && !(at == 2 && v.calls < 2))
				print_message("flags %#x drop %d ret %d at %d: %zd (%d calls)\n",
					      flags, drop, rets[k], at, n, v.calls);
			if (at == 2 && v.calls < 2)
				assert_int_equal(n, 256 * KiB); /* all in one run */
			else
				assert_int_equal(n, rets[k]);
			/* nothing stays held: a writer of those blocks gets
			 * through, and the data is still right */
			w = tu_open(c, d, CLIO_RDWR);
			assert_int_equal(clio_pwrite(w, model, 8192, 0), 8192);
			assert_int_equal(clio_fsync(w), 0);
			assert_int_equal(clio_close(w), 0);
			assert_int_equal(clio_pread(f, back, 8192, 0), 8192);
			assert_memory_equal(back, model, 8192);
		}
	}
	/* at EOF, the one (empty, last) call's value too */
	{
		struct vfail v = { 0, 1, -EPIPE, 0 };
		assert_int_equal(clio_pread_view(f, 4096, 300 * KiB, view_fail, &v), -EPIPE);
		assert_int_equal(v.calls, 1);
		assert_int_equal(v.bytes, 0);
	}
	assert_int_equal(clio_close(f), 0);
}

static void
test_view_fail(void **state)
{
	unsigned char *model = malloc(256 * KiB);
	struct clio_cache_stats st;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;

	(void)state;
	assert_non_null(model);
	tu_fill(model, 256 * KiB, 0, 5);
	/* runs of at most a 16th of the cache: 8 blocks of 4K here */
	c = cache_of(4096, 512 * KiB);
	d = tu_dev_open("mem:size=256K", 0);
	f = tu_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_pwrite(f, model, 256 * KiB, 0), 256 * KiB);
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_close(f), 0);
	view_round(c, d, CLIO_RDONLY, false, model); /* cached */
	view_round(c, d, CLIO_RDONLY, true, model);  /* read while lent */
	view_round(c, d, CLIO_RDONLY | CLIO_DIRECT, false, model);
	clio_cache_stats(c, &st);
	assert_int_equal(st.dirty_bytes, 0);
	assert_true(st.cached_bytes <= (uint64_t)st.nbuf * 4096);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	free(model);
}

/* ------------------------------------------------------------ validators on a fixed device */

/* A fixed device's size is its own: a validator with another size (a
 * block device's fstat says 0) drops the clean data but neither hides
 * the device's end nor moves it. */
static void
test_revalidate_fixed(void **state)
{
	unsigned char buf[8192], back[8192];
	struct clio_validator v = { 0, 1, 1, 7, 0 };
	struct cbmem m;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;

	(void)state;
	cbm_init(&m, 64 * KiB);
	tu_fill(m.mem, 64 * KiB, 0, 8);
	assert_int_equal(clio_dev_open_callbacks("cbm", 64 * KiB, 0, 0, &cbm_ops, &m, 2, &d),
			 0);
	c = cache_of(4096, 256 * KiB);
	f = tu_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_revalidate(f, &v), 0); /* the first word: size 0 */
	assert_int_equal(clio_fsize(f), 64 * KiB);
	assert_int_equal(clio_pread(f, back, sizeof(back), 60 * KiB), 4096);
	assert_int_equal(tu_check(back, 4096, 60 * KiB, 8), -1);
	v.size = 1 * MiB;
	v.mtime_ns = 2;
	assert_int_equal(clio_revalidate(f, &v), 1);
	assert_int_equal(clio_fsize(f), 64 * KiB);
	assert_int_equal(clio_pread(f, back, sizeof(back), 100 * KiB), 0);
	assert_int_equal(clio_pwrite(f, buf, 1, 64 * KiB), -ENOSPC);
	v.size = 1000;
	v.mtime_ns = 3;
	assert_int_equal(clio_revalidate(f, &v), 1);
	assert_int_equal(clio_fsize(f), 64 * KiB);
	tu_fill(buf, sizeof(buf), 32 * KiB, 9);
	assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 32 * KiB), (ssize_t)sizeof(buf));
	assert_int_equal(clio_pread(f, back, sizeof(back), 32 * KiB), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	assert_int_equal(clio_close(f), 0);
	pthread_mutex_lock(&m.lock);
	assert_memory_equal(m.mem + 32 * KiB, buf, sizeof(buf));
	assert_int_equal(tu_check(m.mem, 32 * KiB, 0, 8), -1);
	pthread_mutex_unlock(&m.lock);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	cbm_free(&m);
}

/* A block device (a loop device over a file, when this runs as root):
 * its version has its size, not fstat's 0, and a validator leaves its
 * size alone. */
static void
test_blockdev(void **state)
{
	char path[256], cmd[600], loop[64] = "", spec[128];
	unsigned char buf[4096];
	struct clio_validator v;
	struct clio_dev_info info;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	FILE *p;
	int fd;

	(void)state;
	fd = tu_tmpfile(path, sizeof(path));
	tu_fill(buf, sizeof(buf), 0, 12);
	assert_int_equal(ftruncate(fd, (off_t)MiB), 0);
	assert_int_equal(pwrite(fd, buf, sizeof(buf), (off_t)(MiB - 4096)), 4096);
	close(fd);
	snprintf(cmd, sizeof(cmd), "losetup --find --show '%s' 2>/dev/null", path);
	if (geteuid() != 0 || (p = popen(cmd, "r")) == NULL) {
		print_message("  skipped: no loop device (not root)\n");
		unlink(path);
		return;
	}
	if (fgets(loop, sizeof(loop), p) == NULL)
		loop[0] = '\0';
	pclose(p);
	loop[strcspn(loop, "\n")] = '\0';
	if (loop[0] == '\0') {
		print_message("  skipped: losetup found no loop device\n");
		unlink(path);
		return;
	}
	snprintf(spec, sizeof(spec), "file:%s?engine=threads", loop);
	d = tu_dev_open(spec, 0);
	/* detached at once: it goes when the device closes, or the test dies */
	snprintf(cmd, sizeof(cmd), "losetup -d '%s'", loop);
	assert_int_equal(system(cmd), 0);
	unlink(path);
	assert_int_equal(clio_dev_info(d, &info), 0);
	assert_int_equal(info.resizable, 0);
	assert_int_equal(clio_dev_size(d), MiB);
	assert_int_equal(clio_dev_version(d, &v), 0);
	assert_int_equal(v.size, MiB);
	c = cache_of(4096, 256 * KiB);
	f = tu_open(c, d, CLIO_RDONLY);
	v.size = 0; /* what an fstat of it says */
	assert_int_equal(clio_revalidate(f, &v), 0);
	assert_int_equal(clio_fsize(f), MiB);
	assert_int_equal(clio_pread(f, buf, sizeof(buf), MiB - 4096), 4096);
	assert_int_equal(tu_check(buf, sizeof(buf), 0, 12), -1);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* ------------------------------------------------------------ revalidate among readers and writers */

#define RV_SIZE (1u << 20)
#define RV_STRIPE 3000u

struct rv {
	clio_cache *c;
	clio_dev *d;
	int passes;
	atomic_int stop;
	atomic_int bad;
	uint64_t seed;
};

struct rv_arg {
	struct rv *x;
	int id;
};

static void *
rv_writer(void *arg)
{
	struct rv_arg *a = arg;
	struct rv *x = a->x;
	unsigned char buf[RV_STRIPE];
	clio_file *f;
	uint64_t off;
	int p;

	if (clio_open(x->c, x->d, CLIO_RDWR, &f) != 0) {
		atomic_fetch_add(&x->bad, 1);
		return NULL;
	}
	for (p = 0; p < x->passes; p++) {
		for (off = (uint64_t)a->id * RV_STRIPE; off < RV_SIZE; off += 2 * RV_STRIPE) {
			size_t n = (size_t)(off + RV_STRIPE > RV_SIZE ? RV_SIZE - off : RV_STRIPE);

			tu_fill(buf, n, off, x->seed);
			if (clio_pwrite(f, buf, n, off) != (ssize_t)n)
				atomic_fetch_add(&x->bad, 1);
		}
		if (clio_writeback(f) != 0)
			atomic_fetch_add(&x->bad, 1);
	}
	if (clio_close(f) != 0)
		atomic_fetch_add(&x->bad, 1);
	return NULL;
}

static void *
rv_reader(void *arg)
{
	struct rv_arg *a = arg;
	struct rv *x = a->x;
	unsigned char buf[20000];
	uint64_t rng = tu_rand_init(x->seed + (uint64_t)a->id);
	clio_file *f;

	if (clio_open(x->c, x->d, CLIO_RDONLY, &f) != 0) {
		atomic_fetch_add(&x->bad, 1);
		return NULL;
	}
	while (!atomic_load(&x->stop)) {
		uint64_t off = tu_rand(&rng) % RV_SIZE;
		size_t len = 1 + (size_t)(tu_rand(&rng) % sizeof(buf)), i;
		ssize_t n = clio_pread(f, buf, len, off);
		size_t want = (size_t)(off + len > RV_SIZE ? RV_SIZE - off : len);

		if (n != (ssize_t)want || clio_fsize(f) != RV_SIZE) {
			print_message("read %zu at %llu: %zd, size %lld\n", len,
				      (unsigned long long)off, n, (long long)clio_fsize(f));
			atomic_fetch_add(&x->bad, 1);
			break;
		}
		for (i = 0; i < want; i++)
			if (buf[i] != 0 && buf[i] != tu_pat(x->seed, off + i)) {
				print_message("byte %llu: %#x\n",
					      (unsigned long long)(off + i), buf[i]);
				atomic_fetch_add(&x->bad, 1);
				break;
			}
	}
	clio_close(f);
	return NULL;
}

static void *
rv_validator(void *arg)
{
	struct rv_arg *a = arg;
	struct rv *x = a->x;
	struct clio_validator v = { RV_SIZE, 0, 0, 42, 0 };
	clio_file *f;
	int k = 0, r;

	if (clio_open(x->c, x->d, CLIO_RDONLY, &f) != 0) {
		atomic_fetch_add(&x->bad, 1);
		return NULL;
	}
	while (!atomic_load(&x->stop)) {
		v.mtime_ns = ++k;
		if (k % 5 == 0)
			r = clio_validator_set(f, &v);
		else
			r = clio_revalidate(f, &v);
		if (r < 0 || r > 1) {
			atomic_fetch_add(&x->bad, 1);
			break;
		}
		if (k % 7 == 0 && clio_revalidate(f, &v) != 0) { /* the same: kept */
			atomic_fetch_add(&x->bad, 1);
			break;
		}
	}
	clio_close(f);
	return NULL;
}

static void
test_revalidate_race(void **state)
{
	uint64_t seed = tu_seed("revalidate_race");
	struct rv x;
	struct rv_arg args[5];
	pthread_t th[5];
	unsigned char *back = malloc(RV_SIZE);
	clio_file *f;
	int i;

	(void)state;
	assert_non_null(back);
	memset(&x, 0, sizeof(x));
	x.seed = seed;
	x.passes = tsan() ? 1 : 3;
	x.c = cache_of(4096, 512 * KiB);
	x.d = tu_dev_open("mem:size=1M", 0);
	for (i = 0; i < 5; i++) {
		args[i].x = &x;
		args[i].id = i;
	}
	pthread_create(&th[2], NULL, rv_reader, &args[2]);
	pthread_create(&th[3], NULL, rv_reader, &args[3]);
	pthread_create(&th[4], NULL, rv_validator, &args[4]);
	pthread_create(&th[0], NULL, rv_writer, &args[0]);
	pthread_create(&th[1], NULL, rv_writer, &args[1]);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	atomic_store(&x.stop, 1);
	for (i = 2; i < 5; i++)
		pthread_join(th[i], NULL);
	if (atomic_load(&x.bad) != 0)
		tu_seed_failed("revalidate_race", seed);
	assert_int_equal(atomic_load(&x.bad), 0);
	/* every byte written, in the cache and on the device */
	f = tu_open(x.c, x.d, CLIO_RDONLY);
	assert_int_equal(clio_pread(f, back, RV_SIZE, 0), RV_SIZE);
	assert_int_equal(tu_check(back, RV_SIZE, 0, seed), -1);
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_close(f), 0);
	memset(back, 0, RV_SIZE);
	assert_int_equal(clio_dev_pread(x.d, back, RV_SIZE, 0), RV_SIZE);
	if (tu_check(back, RV_SIZE, 0, seed) != -1)
		tu_seed_failed("revalidate_race", seed);
	assert_int_equal(tu_check(back, RV_SIZE, 0, seed), -1);
	assert_int_equal(clio_cache_free(x.c), 0);
	clio_dev_close(x.d);
	free(back);
}

/* ------------------------------------------------------------ sync, write-back, truncate, close */

#define SR_MAX (512u * 1024)

struct sr {
	clio_cache *c;
	clio_dev *d;
	atomic_int stop;
	atomic_int bad;
	uint64_t seed;
};

static void *
sr_syncer(void *arg)
{
	struct sr *x = arg;

	while (!atomic_load(&x->stop)) {
		int r = clio_sync(x->c);
		if (r != 0) {
			print_message("clio_sync: %d\n", r);
			atomic_fetch_add(&x->bad, 1);
		}
	}
	return NULL;
}

static void *
sr_flusher(void *arg)
{
	struct sr *x = arg;
	clio_file *f;
	int k = 0, r;

	if (clio_open(x->c, x->d, CLIO_RDWR, &f) != 0) {
		atomic_fetch_add(&x->bad, 1);
		return NULL;
	}
	while (!atomic_load(&x->stop)) {
		r = ++k % 2 ? clio_writeback(f) : clio_fsync(f);
		if (r != 0) {
			print_message("writeback/fsync: %d\n", r);
			atomic_fetch_add(&x->bad, 1);
		}
	}
	if (clio_close(f) != 0)
		atomic_fetch_add(&x->bad, 1);
	return NULL;
}

static void *
sr_opener(void *arg)
{
	struct sr *x = arg;
	unsigned char buf[9000];
	uint64_t rng = tu_rand_init(x->seed ^ 0x5555);

	while (!atomic_load(&x->stop)) {
		clio_file *f;
		ssize_t n;

		if (clio_open(x->c, x->d, tu_rand(&rng) % 2 ? CLIO_RDONLY : CLIO_RDWR,
			      &f) != 0) {
			atomic_fetch_add(&x->bad, 1);
			break;
		}
		n = clio_pread(f, buf, sizeof(buf), tu_rand(&rng) % SR_MAX);
		if (n < 0)
			atomic_fetch_add(&x->bad, 1);
		if (clio_close(f) != 0)
			atomic_fetch_add(&x->bad, 1);
	}
	return NULL;
}

static void
sr_run(const char *spec, uint64_t seed, int nops)
{
	unsigned char *model = calloc(1, SR_MAX), *buf = malloc(SR_MAX);
	uint64_t size = 0, rng = tu_rand_init(seed);
	pthread_t th[3];
	struct sr x;
	clio_file *f;
	int i;

	assert_non_null(model);
	assert_non_null(buf);
	memset(&x, 0, sizeof(x));
	x.seed = seed;
	x.c = cache_of(4096, 256 * KiB);
	x.d = tu_dev_open(spec, 0);
	f = tu_open(x.c, x.d, CLIO_RDWR);
	pthread_create(&th[0], NULL, sr_syncer, &x);
	pthread_create(&th[1], NULL, sr_flusher, &x);
	pthread_create(&th[2], NULL, sr_opener, &x);
	for (i = 0; i < nops && atomic_load(&x.bad) == 0; i++) {
		uint64_t off = tu_rand(&rng) % SR_MAX;
		size_t len = 1 + (size_t)(tu_rand(&rng) % (40 * KiB));

		if (off + len > SR_MAX)
			len = (size_t)(SR_MAX - off);
		if (tu_rand(&rng) % 4 == 0) {
			uint64_t ns = tu_rand(&rng) % SR_MAX;

			assert_int_equal(clio_ftruncate(f, ns), 0);
			if (ns > size)
				memset(model + size, 0, (size_t)(ns - size));
			size = ns;
		} else {
			tu_fill(buf, len, off, seed + (uint64_t)i);
			assert_int_equal(clio_pwrite(f, buf, len, off), (ssize_t)len);
			if (off > size)
				memset(model + size, 0, (size_t)(off - size));
			memcpy(model + off, buf, len);
			if (off + len > size)
				size = off + len;
		}
		if (clio_fsize(f) != (int64_t)size) {
			print_message("%s op %d: size %lld, want %llu\n", spec, i,
				      (long long)clio_fsize(f), (unsigned long long)size);
			tu_seed_failed("sync_race", seed);
			fail();
		}
	}
	atomic_store(&x.stop, 1);
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	if (atomic_load(&x.bad) != 0)
		tu_seed_failed("sync_race", seed);
	assert_int_equal(atomic_load(&x.bad), 0);
	memset(buf, 0xee, SR_MAX);
	assert_int_equal(clio_pread(f, buf, SR_MAX, 0), (ssize_t)size);
	if (memcmp(buf, model, size) != 0)
		tu_seed_failed("sync_race", seed);
	assert_memory_equal(buf, model, size);
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_dev_size(x.d), size);
	memset(buf, 0xee, SR_MAX);
	assert_int_equal(clio_dev_pread(x.d, buf, size, 0), (ssize_t)size);
	if (memcmp(buf, model, size) != 0)
		tu_seed_failed("sync_race", seed);
	assert_memory_equal(buf, model, size);
	assert_int_equal(clio_cache_free(x.c), 0);
	clio_dev_close(x.d);
	free(model);
	free(buf);
}

static void
test_sync_race(void **state)
{
	uint64_t seed = tu_seed("sync_race");
	char path[256], spec[300];
	int nops = tsan() ? 60 : 400;

	(void)state;
	sr_run("mem:size=0", seed, nops);
	tu_file_spec(path, sizeof(path), spec, sizeof(spec), "?engine=threads");
	sr_run(spec, seed + 1, nops);
	unlink(path);
	tu_file_spec(path, sizeof(path), spec, sizeof(spec), "");
	sr_run(spec, seed + 2, nops);
	unlink(path);
}

/* ------------------------------------------------------------ forget beside a busy device */

struct fg {
	clio_cache *c;
	clio_dev *d;
	atomic_int stop;
	atomic_int bad;
	int id;
};

static void *
fg_busy(void *arg)
{
	struct fg *x = arg;
	unsigned char buf[16384], back[16384];
	clio_file *f;
	uint64_t off = (uint64_t)x->id * 256 * KiB, k = 0;

	if (clio_open(x->c, x->d, CLIO_RDWR, &f) != 0) {
		atomic_fetch_add(&x->bad, 1);
		return NULL;
	}
	/* every one of its 16 blocks written at least once, however late
	 * this thread ran: the test checks them all on the device */
	while (!atomic_load(&x->stop) || k < 16) {
		uint64_t o = off + (k++ % 16) * sizeof(buf);

		tu_fill(buf, sizeof(buf), o, 9);
		if (clio_pwrite(f, buf, sizeof(buf), o) != (ssize_t)sizeof(buf) ||
		    clio_pread(f, back, sizeof(back), o) != (ssize_t)sizeof(back) ||
		    memcmp(buf, back, sizeof(buf)) != 0)
			atomic_fetch_add(&x->bad, 1);
		if (k % 8 == 0 && clio_fsync(f) != 0)
			atomic_fetch_add(&x->bad, 1);
	}
	if (clio_close(f) != 0)
		atomic_fetch_add(&x->bad, 1);
	return NULL;
}

static void
test_forget_race(void **state)
{
	unsigned char buf[64 * 1024], back[64 * 1024];
	struct fg x[2];
	pthread_t th[2];
	clio_cache *c;
	clio_dev *a, *b;
	clio_file *f;
	int round, rounds = tsan() ? 6 : 30, i;

	(void)state;
	c = cache_of(4096, 1 * MiB);
	a = tu_dev_open("mem:size=512K", 0);
	for (i = 0; i < 2; i++) {
		memset(&x[i], 0, sizeof(x[i]));
		x[i].c = c;
		x[i].d = a;
		x[i].id = i;
		pthread_create(&th[i], NULL, fg_busy, &x[i]);
	}
	for (round = 0; round < rounds; round++) {
		b = tu_dev_open(round % 2 ? "mem:size=64K" : "sim:preset=ssd,size=1M", 0);
		assert_int_equal(clio_cache_forget(c, b), 0); /* never opened */
		f = tu_open(c, b, CLIO_RDWR | CLIO_KEEP);
		tu_fill(buf, sizeof(buf), 0, (uint64_t)round);
		assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		assert_int_equal(clio_close(f), 0);
		/* kept: a new handle finds the data; forget waits for none */
		f = tu_open(c, b, CLIO_RDONLY | CLIO_KEEP);
		assert_int_equal(clio_pread(f, back, sizeof(back), 0), (ssize_t)sizeof(back));
		assert_memory_equal(back, buf, sizeof(buf));
		assert_int_equal(clio_cache_forget(c, b), -EBUSY);
		assert_int_equal(clio_close(f), 0);
		assert_int_equal(clio_cache_forget(c, b), 0);
		assert_int_equal(clio_cache_forget(c, b), 0);
		/* written back before it went */
		memset(back, 0, sizeof(back));
		assert_int_equal(clio_dev_pread(b, back, sizeof(back), 0),
				 (ssize_t)sizeof(back));
		assert_memory_equal(back, buf, sizeof(buf));
		clio_dev_close(b);
	}
	for (i = 0; i < 2; i++) {
		atomic_store(&x[i].stop, 1);
		pthread_join(th[i], NULL);
		assert_int_equal(atomic_load(&x[i].bad), 0);
	}
	assert_int_equal(clio_sync(c), 0);
	for (i = 0; i < 2; i++) {
		uint64_t o = (uint64_t)i * 256 * KiB;
		int k;

		for (k = 0; k < 16; k++, o += 16384) {
			assert_int_equal(clio_dev_pread(a, back, 16384, o), 16384);
			assert_int_equal(tu_check(back, 16384, o, 9), -1);
		}
	}
	assert_int_equal(clio_cache_forget(c, a), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(a);
}

/* ------------------------------------------------------------ requests in flight at close */

#define SC_N 48

struct sc {
	struct clio_req req[SC_N];
	struct iovec iov[SC_N];
	unsigned char *bufs;
	atomic_int done[SC_N];
	atomic_int ndone;
	clio_dev *d;
	clio_file *f;
	atomic_int bad;
};

static void
sc_done(struct clio_req *req)
{
	struct sc *x = req->priv;
	int i = (int)(req - x->req);

	atomic_fetch_add(&x->done[i], 1);
	atomic_fetch_add(&x->ndone, 1);
}

static void *
sc_submitter(void *arg)
{
	struct sc *x = arg;
	int i;

	for (i = 0; i < SC_N; i++) {
		struct clio_req *q = &x->req[i];

		memset(q, 0, sizeof(*q));
		x->iov[i].iov_base = x->bufs + (size_t)i * 4096;
		x->iov[i].iov_len = 4096;
		tu_fill(x->iov[i].iov_base, 4096, MiB + (uint64_t)i * 4096, 3);
		q->op = i % 8 == 7 ? CLIO_OP_FLUSH : CLIO_OP_WRITE;
		q->offset = MiB + (uint64_t)i * 4096;
		q->iov = &x->iov[i];
		q->iovcnt = 1;
		q->done = sc_done;
		q->priv = x;
		if (clio_dev_submit(x->d, q) != 0)
			atomic_fetch_add(&x->bad, 1);
	}
	return NULL;
}

static void *
sc_closer(void *arg)
{
	struct sc *x = arg;

	if (clio_close(x->f) != 0)
		atomic_fetch_add(&x->bad, 1);
	return NULL;
}

static void
test_submit_close(void **state)
{
	char path[256], s1[300], s2[300];
	const char *specs[4];
	unsigned char *buf = malloc(64 * KiB), back[4096];
	clio_cache *c;
	int k, i, rounds = tsan() ? 1 : 3, round;

	(void)state;
	assert_non_null(buf);
	tu_file_spec(path, sizeof(path), s1, sizeof(s1), "?engine=threads&qd=4");
	snprintf(s2, sizeof(s2), "file:%s?engine=uring", path);
	specs[0] = s1;
	specs[1] = s2;
	specs[2] = "sim:preset=ssd,size=4M,clock=real";
	specs[3] = "mem:size=4M";
	c = cache_of(4096, 256 * KiB);
	for (k = 0; k < 4; k++) {
		for (round = 0; round < rounds; round++) {
			struct sc *x = calloc(1, sizeof(*x));
			char err[256];
			pthread_t ts, tc;
			int r;

			assert_non_null(x);
			x->bufs = malloc(SC_N * 4096);
			assert_non_null(x->bufs);
			r = clio_dev_open_err(specs[k], 0, &x->d, err, sizeof(err));
			if (k == 1 && r < 0 && r != -EINVAL) { /* no io_uring here */
				print_message("skip %s: %s\n", specs[k], err);
				free(x->bufs);
				free(x);
				break;
			}
			assert_int_equal(r, 0);
			x->f = tu_open(c, x->d, CLIO_RDWR);
			tu_fill(buf, 64 * KiB, 0, 4);
			assert_int_equal(clio_pwrite(x->f, buf, 64 * KiB, 0), 64 * KiB);
			pthread_create(&ts, NULL, sc_submitter, x);
			pthread_create(&tc, NULL, sc_closer, x);
			pthread_join(tc, NULL);
			pthread_join(ts, NULL);
			if (k >= 2) {
				/* check through the device while it is open */
				while (atomic_load(&x->ndone) < SC_N)
					tu_sleep(0.001);
				for (i = 0; i < SC_N; i++) {
					if (i % 8 == 7)
						continue;
					assert_int_equal(clio_dev_pread(x->d, back, 4096,
									MiB + (uint64_t)i * 4096),
							 4096);
					assert_int_equal(tu_check(back, 4096,
								  MiB + (uint64_t)i * 4096, 3), -1);
				}
				assert_int_equal(clio_dev_pread(x->d, buf, 64 * KiB, 0), 64 * KiB);
				assert_int_equal(tu_check(buf, 64 * KiB, 0, 4), -1);
			}
			assert_int_equal(clio_cache_forget(c, x->d), 0);
			clio_dev_close(x->d);
			/* every callback has run exactly once, with its result */
			assert_int_equal(atomic_load(&x->ndone), SC_N);
			for (i = 0; i < SC_N; i++) {
				assert_int_equal(atomic_load(&x->done[i]), 1);
				assert_int_equal(x->req[i].result, i % 8 == 7 ? 0 : 4096);
			}
			assert_int_equal(atomic_load(&x->bad), 0);
			tu_sleep(0.005);
			assert_int_equal(atomic_load(&x->ndone), SC_N);
			if (k < 2) {
				int fd = open(path, O_RDONLY);

				assert_true(fd >= 0);
				for (i = 0; i < SC_N; i++) {
					if (i % 8 == 7)
						continue;
					assert_int_equal(pread(fd, back, 4096,
							       (off_t)(MiB + (uint64_t)i * 4096)), 4096);
					assert_int_equal(tu_check(back, 4096,
								  MiB + (uint64_t)i * 4096, 3), -1);
				}
				assert_int_equal(pread(fd, buf, 64 * KiB, 0), 64 * KiB);
				assert_int_equal(tu_check(buf, 64 * KiB, 0, 4), -1);
				close(fd);
				assert_int_equal(truncate(path, 0), 0);
			}
			free(x->bufs);
			free(x);
		}
	}
	assert_int_equal(clio_cache_free(c), 0);
	unlink(path);
	free(buf);
}

/* ------------------------------------------------------------ statistics under threads */

#define ST_LEN 1000u

struct stt {
	clio_cache *c;
	clio_dev *d;
	int nops;
	atomic_int running;
	atomic_int bad;
};

struct stt_arg {
	struct stt *x;
	int id;
};

static void *
stt_worker(void *arg)
{
	struct stt_arg *a = arg;
	struct stt *x = a->x;
	unsigned char buf[ST_LEN], back[ST_LEN];
	clio_file *f;
	int i;

	if (clio_open(x->c, x->d, CLIO_RDWR, &f) != 0) {
		atomic_fetch_add(&x->bad, 1);
		atomic_fetch_sub(&x->running, 1);
		return NULL;
	}
	for (i = 0; i < x->nops; i++) {
		uint64_t off = (uint64_t)a->id * 64 * KiB + (uint64_t)(i % 50) * ST_LEN;

		tu_fill(buf, ST_LEN, off, 21);
		if (clio_pwrite(f, buf, ST_LEN, off) != ST_LEN ||
		    clio_pread(f, back, ST_LEN, off) != ST_LEN ||
		    memcmp(buf, back, ST_LEN) != 0)
			atomic_fetch_add(&x->bad, 1);
	}
	if (clio_close(f) != 0)
		atomic_fetch_add(&x->bad, 1);
	atomic_fetch_sub(&x->running, 1);
	return NULL;
}

static void
test_stats_threads(void **state)
{
	enum { T = 4 };
	struct stt x;
	struct stt_arg args[T];
	pthread_t th[T];
	struct clio_dev_stats ds, prev;
	struct clio_cache_stats cs, cprev;
	clio_file *f;
	uint64_t total;
	unsigned char b[ST_LEN];
	int i, polls = 0;

	(void)state;
	memset(&x, 0, sizeof(x));
	x.nops = tsan() ? 100 : 1000;
	x.c = cache_of(4096, 512 * KiB);
	x.d = tu_dev_open("mem:size=0", 0);
	atomic_init(&x.running, T);
	clio_dev_stats_reset(x.d);
	memset(&prev, 0, sizeof(prev));
	memset(&cprev, 0, sizeof(cprev));
	for (i = 0; i < T; i++) {
		args[i].x = &x;
		args[i].id = i;
		pthread_create(&th[i], NULL, stt_worker, &args[i]);
	}
	/* while they run: counters only grow, within their bounds */
	while (atomic_load(&x.running) > 0) {
		clio_dev_stats(x.d, &ds);
		clio_cache_stats(x.c, &cs);
		polls++;
		assert_true(ds.front.reads >= prev.front.reads);
		assert_true(ds.front.writes >= prev.front.writes);
		assert_true(ds.front.read_bytes >= prev.front.read_bytes);
		assert_true(ds.front.write_bytes >= prev.front.write_bytes);
		assert_true(ds.back.writes >= prev.back.writes);
		assert_true(ds.back.write_bytes >= prev.back.write_bytes);
		assert_true(ds.front.reads <= (uint64_t)T * x.nops);
		assert_true(ds.front.read_bytes <= (uint64_t)T * x.nops * ST_LEN);
		assert_true(cs.hits >= cprev.hits && cs.misses >= cprev.misses);
		assert_true(cs.write_clusters >= cprev.write_clusters);
		assert_true(cs.dirty_bytes <= cs.cached_bytes);
		assert_true(cs.cached_bytes <= (uint64_t)cs.nbuf * 4096);
		assert_int_equal(ds.front.errors, 0);
		assert_int_equal(ds.back.errors, 0);
		prev = ds;
		cprev = cs;
		tu_sleep(0.0002);
	}
	for (i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&x.bad), 0);
	/* and exact at the end: one count per call, its bytes */
	total = (uint64_t)T * x.nops;
	clio_dev_stats(x.d, &ds);
	assert_int_equal(ds.front.reads, total);
	assert_int_equal(ds.front.writes, total);
	assert_int_equal(ds.front.read_bytes, total * ST_LEN);
	assert_int_equal(ds.front.write_bytes, total * ST_LEN);
	assert_int_equal(ds.front.flushes, 0);
	assert_int_equal(tu_hist_total(&ds.front), 2 * total);
	assert_int_equal(ds.front.size_hist[tu_hist_bucket(ST_LEN)], 2 * total);
	assert_true(ds.front.busy_s >= 0 && ds.front.lat_p99_s >= ds.front.lat_p50_s);
	assert_int_equal(tu_hist_total(&ds.back), ds.back.reads + ds.back.writes);
	assert_true(ds.back.write_bytes >= (uint64_t)T * 50 * ST_LEN);
	clio_cache_stats(x.c, &cs);
	assert_int_equal(cs.dirty_bytes, 0); /* the last closes wrote it all */
	assert_int_equal(cs.write_errors, 0);
	assert_int_equal(cs.lost_bytes, 0);
	/* a reset zeroes both sides; the next call counts once */
	clio_dev_stats_reset(x.d);
	clio_dev_stats(x.d, &ds);
	assert_int_equal(ds.front.reads + ds.front.writes + ds.back.reads + ds.back.writes, 0);
	assert_int_equal(tu_hist_total(&ds.front) + tu_hist_total(&ds.back), 0);
	f = tu_open(x.c, x.d, CLIO_RDONLY);
	assert_int_equal(clio_pread(f, b, ST_LEN, 0), ST_LEN);
	assert_int_equal(clio_close(f), 0);
	clio_dev_stats(x.d, &ds);
	assert_int_equal(ds.front.reads, 1);
	assert_int_equal(ds.front.read_bytes, ST_LEN);
	print_message("  %d polls\n", polls);
	assert_int_equal(clio_cache_free(x.c), 0);
	clio_dev_close(x.d);
}

/* NULL handles and buffers, and iovecs whose lengths add up past what a
 * transfer can return: -EINVAL (or nothing, or 0, from the calls that
 * return no error), never a crash, and nothing moved. */
static void
test_null_args(void **state)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	struct clio_validator v = { 0 };
	struct clio_cache_stats cs;
	struct clio_dev_stats ds;
	unsigned char buf[4096];
	struct iovec big[2] = { { buf, SIZE_MAX / 2 + 2 }, { buf, SIZE_MAX / 2 + 2 } };
	struct iovec nul = { NULL, 512 };
	clio_cache *c;
	clio_dev *d;
	clio_file *f = NULL;

	(void)state;
	conf.bsize = 4096;
	conf.cache_size = 64 * 4096;
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	d = tu_dev_open("mem:size=64K", 0);
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(clio_open(NULL, d, CLIO_RDWR, &f), -EINVAL);
	assert_int_equal(clio_open(c, NULL, CLIO_RDWR, &f), -EINVAL);
	assert_int_equal(clio_open(c, d, CLIO_RDWR, NULL), -EINVAL);
	assert_null(f);
	assert_int_equal(clio_close(NULL), -EINVAL);
	assert_int_equal(clio_pread(NULL, buf, 1, 0), -EINVAL);
	assert_int_equal(clio_pwrite(NULL, buf, 1, 0), -EINVAL);
	assert_int_equal(clio_pread_view(NULL, 1, 0, view_fail, NULL), -EINVAL);
	assert_int_equal(clio_fsync(NULL), -EINVAL);
	assert_int_equal(clio_writeback(NULL), -EINVAL);
	assert_int_equal(clio_ftruncate(NULL, 0), -EINVAL);
	assert_int_equal(clio_discard(NULL, 0, 1), -EINVAL);
	assert_int_equal(clio_fsize(NULL), -EINVAL);
	assert_int_equal(clio_revalidate(NULL, &v), -EINVAL);
	assert_int_equal(clio_validator_set(NULL, &v), -EINVAL);
	assert_int_equal(clio_cache_forget(NULL, d), -EINVAL);
	assert_int_equal(clio_cache_forget(c, NULL), -EINVAL);
	assert_int_equal(clio_sync(NULL), -EINVAL);
	memset(&cs, 0xff, sizeof(cs));
	clio_cache_stats(NULL, &cs);
	assert_int_equal(cs.hits + cs.nbuf, 0);
	clio_cache_stats(c, NULL);
	memset(&ds, 0xff, sizeof(ds));
	clio_dev_stats(NULL, &ds);
	assert_int_equal(ds.front.reads + ds.back.writes, 0);
	clio_dev_stats(d, NULL);
	clio_dev_stats_reset(NULL);
	assert_null(clio_dev_name(NULL));
	assert_int_equal(clio_dev_size(NULL), 0);
	assert_int_equal(clio_dev_sector_size(NULL), 0);
	assert_int_equal(clio_dev_maxio(NULL), 0);
	assert_int_equal(clio_dev_is_virtual(NULL), 0);
	assert_int_equal(clio_dev_params(NULL, (char *)buf, sizeof(buf)), -EINVAL);
	assert_int_equal(clio_dev_resize(NULL, 4096), -EINVAL);

	/* a NULL buffer with bytes to move */
	f = tu_open(c, d, CLIO_RDWR);
	assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_int_equal(clio_pread(f, NULL, 1, 0), -EINVAL);
	assert_int_equal(clio_pwrite(f, NULL, 1, 0), -EINVAL);
	assert_int_equal(clio_pread(f, NULL, 0, 0), 0);
	assert_int_equal(clio_pwrite(f, NULL, 0, 0), 0);
	assert_int_equal(clio_dev_pread(d, NULL, 512, 0), -EINVAL);
	assert_int_equal(clio_dev_pwrite(d, NULL, 512, 0), -EINVAL);
	assert_int_equal(clio_dev_preadv(d, NULL, 1, 0), -EINVAL);
	assert_int_equal(clio_dev_pwritev(d, NULL, 1, 0), -EINVAL);
	assert_int_equal(clio_dev_pwritev(d, &nul, 1, 0), -EINVAL);
	/* lengths that wrap to 2 bytes: refused, nothing written */
	assert_int_equal(clio_dev_preadv(d, big, 2, 0), -EINVAL);
	assert_int_equal(clio_dev_pwritev(d, big, 2, 0), -EINVAL);
	big[0].iov_len = (size_t)SSIZE_MAX + 1;
	assert_int_equal(clio_dev_pwritev(d, big, 1, 0), -EINVAL);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_dev_pread(d, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_int_equal(buf[0], 0x5a);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* A device of callbacks that fail with what is no errno, and one whose
 * maxio does not fit the default sector. */
static _Atomic int cbodd_ret, cbodd_misaligned, cbodd_sector = 512;

static int
cbodd_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	(void)arg;
	if (off % (uint64_t)cbodd_sector != 0 || len % (size_t)cbodd_sector != 0)
		atomic_fetch_add(&cbodd_misaligned, 1);
	memset(buf, 0, len);
	return atomic_load(&cbodd_ret);
}

static int
cbodd_pwrite(void *arg, const void *buf, size_t len, uint64_t off)
{
	(void)arg;
	(void)buf;
	if (off % (uint64_t)cbodd_sector != 0 || len % (size_t)cbodd_sector != 0)
		atomic_fetch_add(&cbodd_misaligned, 1);
	return atomic_load(&cbodd_ret);
}

static int
cbodd_flush(void *arg)
{
	(void)arg;
	return atomic_load(&cbodd_ret);
}

static void
test_callback_odd(void **state)
{
	static const struct clio_dev_callbacks cb = { cbodd_pread, cbodd_pwrite,
						      cbodd_flush, NULL };
	static const int bad[] = { INT_MIN, -4096, -100000, 1, INT_MAX };
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	unsigned char buf[8192];
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	size_t i;

	(void)state;
	memset(buf, 0x3c, sizeof(buf));
	/* maxio no multiple of the default sector (512): refused, as with
	 * sector 512 said */
	assert_int_equal(clio_dev_open_callbacks("x", 64 * KiB, 0, 100, &cb, NULL, 1, &d),
			 -EINVAL);
	assert_int_equal(clio_dev_open_callbacks("x", 64 * KiB, 0, 1024, &cb, NULL, 1, &d), 0);
	assert_int_equal(clio_dev_pwrite(d, buf, 8192, 0), 8192);
	assert_int_equal(atomic_load(&cbodd_misaligned), 0);
	clio_dev_close(d);
	/* sector 4096: no transfer in parts of sectors reaches the
	 * callbacks, from the cache or from the program */
	assert_int_equal(clio_dev_open_callbacks("x", 16384, 4096, 0, &cb, NULL, 1, &d), 0);
	atomic_store(&cbodd_sector, 4096);
	assert_int_equal(clio_dev_pread(d, buf, 100, 3), -EINVAL);
	assert_int_equal(clio_dev_pwrite(d, buf, 100, 0), -EINVAL);
	assert_int_equal(clio_dev_pwrite(d, buf, 4096, 512), -EINVAL);
	assert_int_equal(clio_dev_pwrite(d, buf, 8192, 4096), 8192);
	assert_int_equal(clio_dev_pread(d, buf, 4096, 12288), 4096);
	assert_int_equal(atomic_load(&cbodd_misaligned), 0);
	atomic_store(&cbodd_sector, 512);
	clio_dev_close(d);

	/* a return that is no errno is -EIO, everywhere it goes */
	conf.bsize = 4096;
	conf.cache_size = 16 * 4096;
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	assert_int_equal(clio_dev_open_callbacks("x", 64 * KiB, 0, 0, &cb, NULL, 1, &d), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		atomic_store(&cbodd_ret, bad[i]);
		assert_int_equal(clio_dev_pread(d, buf, 512, 0), -EIO);
		assert_int_equal(clio_dev_pwrite(d, buf, 512, 0), -EIO);
		assert_int_equal(clio_dev_flush(d), -EIO);
		f = tu_open(c, d, CLIO_RDWR);
		assert_int_equal(clio_pread(f, buf, 100, 0), -EIO);
		assert_int_equal(clio_pwrite(f, buf, 4096, 0), 4096);
		assert_int_equal(clio_fsync(f), -EIO);
		atomic_store(&cbodd_ret, 0);
		assert_int_equal(clio_fsync(f), 0);
		assert_int_equal(clio_close(f), 0);
	}
	atomic_store(&cbodd_ret, -ENOSPC);
	assert_int_equal(clio_dev_pwrite(d, buf, 512, 0), -ENOSPC);
	atomic_store(&cbodd_ret, 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* clio_pread_view on the direct path with a length no read could take:
 * -EINVAL, as clio_pread says, not -ENOMEM from a buffer of that size. */
static void
test_view_direct_len(void **state)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	struct vfail v = { 0, 0, 0, 0 };
	unsigned char buf[8192];
	clio_cache *c;
	clio_dev *d;
	clio_file *f, *fd;

	(void)state;
	conf.bsize = 4096;
	conf.cache_size = 16 * 4096;
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	d = tu_dev_open("mem:size=0", 0);
	f = tu_open(c, d, CLIO_RDWR);
	fd = tu_open(c, d, CLIO_RDWR | CLIO_DIRECT);
	memset(buf, 0x11, sizeof(buf));
	assert_int_equal(clio_pwrite(f, buf, 5000, 0), 5000);
	assert_int_equal(clio_pread(fd, buf, SIZE_MAX - 1, 0), -EINVAL);
	assert_int_equal(clio_pread_view(fd, SIZE_MAX - 1, 0, view_fail, &v), -EINVAL);
	assert_int_equal(clio_pread_view(fd, 100, 1, view_fail, &v), -EINVAL);
	assert_int_equal(v.calls, 0);
	/* aligned, however long: what there is */
	assert_int_equal(clio_pread_view(fd, SIZE_MAX & ~(size_t)511, 0, view_fail, &v), 5000);
	assert_int_equal(v.bytes, 5000);
	/* past the end: 0, however aligned, as clio_pread */
	assert_int_equal(clio_pread_view(fd, SIZE_MAX - 1, 9999, view_fail, &v), 0);
	assert_int_equal(clio_close(fd), 0);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

/* fault: devices nested without end: each level opened the next
 * recursively and copied all below it into its name, so a long enough
 * string overflowed the stack (and took memory by the square of its
 * length).  Past 16 levels: -EINVAL, with a message. */
static void
test_fault_nest(void **state)
{
	const char *lvl = "fault:write=EIO@";
	size_t n = 200000, l = strlen(lvl), i;
	char *spec = malloc(n * l + 16), err[256];
	clio_dev *d = NULL;
	char buf[512];

	(void)state;
	assert_non_null(spec);
	for (i = 0; i < n; i++)
		memcpy(spec + i * l, lvl, l);
	strcpy(spec + n * l, "mem:size=1M");
	err[0] = '\0';
	assert_int_equal(clio_dev_open_err(spec, 0, &d, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "nested"));
	/* 16 levels open, and fail writes as the innermost says */
	assert_int_equal(clio_dev_open(spec + (n - 16) * l, 0, &d), 0);
	assert_int_equal(clio_dev_pwrite(d, buf, sizeof(buf), 0), -EIO);
	clio_dev_close(d);
	assert_int_equal(clio_dev_open(spec + (n - 17) * l, 0, &d), -EINVAL);
	free(spec);
}

/*
 * fault_model: objects of one cache, each written by its own thread
 * through two handles (random pwrite, pread, ftruncate, fsync,
 * writeback, close and reopen) while a third thread runs clio_sync,
 * on devices whose writes and flushes fail at random, checked against
 * a model of each object: reads see the model until a failure is
 * reported; an fsync that returns 0 leaves the model on the device,
 * byte for byte, and follows no failure unreported to its handle; an
 * error comes only from a device that failed; a failed truncate leaves
 * the size.  After an error the model takes what the cache shows.
 * The devices count their own failures: callbacks over memory (fixed
 * size, failing reads too), or fault: over mem (resizable, counted by
 * the device's back-end errors).
 */
#define FM_OBJS 3
#define FM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define FM_MAX (192 * 1024)
#define FM_ROOM (FM_MAX + 16 * 1024)

struct fm_obj {
	pthread_mutex_t m;
	unsigned char *mem;	/* a callbacks device's data */
	uint64_t rng;
	double prob;
	atomic_ullong fails;	/* of writes and flushes */
	atomic_ullong wfails;	/* of writes */
	clio_dev *d;
	unsigned char *model;
	uint64_t size;
	int id;
	bool cb;
};

struct fm {
	clio_cache *c;
	struct fm_obj o[FM_OBJS];
	uint64_t seed;
	int nops;
	atomic_int bad, stop;
};

static bool
fm_coin(struct fm_obj *o)
{
	return (double)(tu_rand(&o->rng) % 1000000) < o->prob * 1e6;
}

static int
fm_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct fm_obj *o = arg;
	int r = 0;

	pthread_mutex_lock(&o->m);
	if (fm_coin(o))
		r = -EIO;
	else
		memcpy(buf, o->mem + off, len);
	pthread_mutex_unlock(&o->m);
	return r;
}

static int
fm_pwrite(void *arg, const void *buf, size_t len, uint64_t off)
{
	struct fm_obj *o = arg;
	int r = 0;

	pthread_mutex_lock(&o->m);
	if (fm_coin(o)) {
		atomic_fetch_add(&o->fails, 1);
		atomic_fetch_add(&o->wfails, 1);
		r = -EIO;
	} else {
		memcpy(o->mem + off, buf, len);
	}
	pthread_mutex_unlock(&o->m);
	return r;
}

static int
fm_flush(void *arg)
{
	struct fm_obj *o = arg;
	int r = 0;

	pthread_mutex_lock(&o->m);
	if (fm_coin(o)) {
		atomic_fetch_add(&o->fails, 1);
		r = -EIO;
	}
	pthread_mutex_unlock(&o->m);
	return r;
}

static uint64_t
fm_fails(struct fm_obj *o)
{
	struct clio_dev_stats st;

	if (o->cb)
		return atomic_load(&o->fails);
	clio_dev_stats(o->d, &st);
	return st.back.errors;
}

/* Failed writes: an fsync waits for every write of its object in
 * flight, so it must report each one that came before it (a flush
 * of clio_sync's, in flight, it need not; and a close that is not the
 * last waits for nothing).  A fault: device here fails writes only. */
static uint64_t
fm_wfails(struct fm_obj *o)
{
	return o->cb ? atomic_load(&o->wfails) : fm_fails(o);
}

/* What the device holds now, into buf; its size. */
static uint64_t
fm_device(struct fm_obj *o, unsigned char *buf)
{
	uint64_t size;

	if (o->cb) {
		pthread_mutex_lock(&o->m);
		memcpy(buf, o->mem, FM_ROOM);
		pthread_mutex_unlock(&o->m);
		return FM_ROOM;
	}
	size = clio_dev_size(o->d);
	if (size > FM_ROOM || clio_dev_pread(o->d, buf, (size_t)size, 0) != (ssize_t)size)
		return UINT64_MAX;
	return size;
}

/* After an error: the model is what the cache shows (reads may fail). */
static bool
fm_adopt(struct fm_obj *o, clio_file *f)
{
	int64_t size = clio_fsize(f);
	ssize_t n = -EIO;
	int i;

	if (size < 0 || size > FM_ROOM)
		return false;
	memset(o->model, 0, FM_ROOM);
	for (i = 0; i < 1000 && n == -EIO; i++)
		n = clio_pread(f, o->model, (size_t)size, 0);
	o->size = (uint64_t)size;
	return n == size;
}

struct fm_arg {
	struct fm *x;
	struct fm_obj *o;
};

static bool
fm_fail(struct fm *x, struct fm_obj *o, int op, const char *what, long long v)
{
	if (atomic_fetch_add(&x->bad, 1) == 0) {
		tu_seed_failed("fault_model", x->seed);
		print_message("object %d (%s) op %d: %s (%lld)\n", o->id,
			      o->cb ? "callbacks" : "fault", op, what, v);
	}
	return false;
}

static bool
fm_op(struct fm *x, struct fm_obj *o, clio_file **h, uint64_t *seen,
      uint64_t *rng, int op, unsigned char *buf, unsigned char *back,
      bool *diverged)
{
	int k = (int)(tu_rand(rng) % 2);
	unsigned u = (unsigned)(tu_rand(rng) % 100);
	uint64_t off = tu_rand(rng) % FM_MAX, f0;
	size_t len = 1 + (size_t)(tu_rand(rng) % 12000);
	ssize_t n;
	int r;

	if (u < 35) {
		tu_fill(buf, len, off, tu_rand(rng));
		n = clio_pwrite(h[k], buf, len, off);
		/* a read before the write may fail: then nothing, or the
		 * blocks before it, were written */
		if (n != (ssize_t)len && !(o->cb && (n == -EIO || (n > 0 && n < (ssize_t)len))))
			return fm_fail(x, o, op, "pwrite", n);
		if (n > 0) {
			memcpy(o->model + off, buf, (size_t)n);
			o->size = o->size > off + (uint64_t)n ? o->size : off + (uint64_t)n;
		}
	} else if (u < 60) {
		uint64_t want = off >= o->size ? 0 : FM_MIN((uint64_t)len, o->size - off);

		f0 = fm_fails(o);
		n = clio_pread(h[k], back, len, off);
		if (n == -EIO && o->cb)
			return true;
		if (n != (ssize_t)want || memcmp(back, o->model + off, (size_t)want) != 0 ||
		    clio_fsize(h[k]) != (int64_t)o->size) {
			if (f0 == 0)
				return fm_fail(x, o, op, "a read differs, nothing failed", n);
			*diverged = true; /* a loss, which must be reported */
		}
	} else if (u < 68) {
		uint64_t size = tu_rand(rng) % FM_MAX;
		int64_t old = clio_fsize(h[k]);

		r = clio_ftruncate(h[k], size);
		if (o->cb) {
			if (r != -EINVAL || clio_fsize(h[k]) != old)
				return fm_fail(x, o, op, "truncate of a fixed size", r);
		} else if (r == 0) {
			if (size < o->size)
				memset(o->model + size, 0, o->size - size);
			o->size = size;
		} else {
			return fm_fail(x, o, op, "truncate", r);
		}
	} else if (u < 90) {
		bool sync = u < 78, wb = u >= 84;

		f0 = fm_wfails(o);
		r = sync ? clio_fsync(h[k]) : wb ? clio_writeback(h[k]) : clio_close(h[k]);
		if (!sync && !wb) {
			h[k] = tu_open(x->c, o->d, CLIO_RDWR);
			seen[k] = fm_wfails(o);
		}
		if (r == 0) {
			if ((sync || wb) && f0 != seen[k])
				return fm_fail(x, o, op, "fsync: a failure unreported", (long long)(f0 - seen[k]));
			if (*diverged)
				return fm_fail(x, o, op, "data lost, yet 0", 0);
			if (sync) {
				uint64_t size = fm_device(o, back);

				if (size == UINT64_MAX || (!o->cb && size != o->size))
					return fm_fail(x, o, op, "fsync: the device's size", (long long)size);
				if (memcmp(back, o->model, (size_t)FM_MIN(size, (uint64_t)FM_ROOM)) != 0)
					return fm_fail(x, o, op, "fsync: the device differs", 0);
			}
		} else {
			if (r != -EIO || fm_fails(o) == 0)
				return fm_fail(x, o, op, "an error with no failure", r);
			if (sync || wb)
				seen[k] = fm_wfails(o);
			*diverged = false;
			if (!fm_adopt(o, h[k]))
				return fm_fail(x, o, op, "read after an error", 0);
		}
	}
	return true;
}

static void *
fm_main(void *arg)
{
	struct fm_arg *a = arg;
	struct fm *x = a->x;
	struct fm_obj *o = a->o;
	uint64_t rng = tu_rand_init(x->seed * 31 + (uint64_t)o->id), seen[2];
	unsigned char *buf = malloc(16384), *back = malloc(FM_ROOM);
	clio_file *h[2];
	bool diverged = false;
	int op;

	assert_non_null(buf);
	assert_non_null(back);
	h[0] = tu_open(x->c, o->d, CLIO_RDWR);
	h[1] = tu_open(x->c, o->d, CLIO_RDWR);
	seen[0] = seen[1] = fm_wfails(o);
	for (op = 0; op < x->nops && atomic_load(&x->bad) == 0; op++)
		if (!fm_op(x, o, h, seen, &rng, op, buf, back, &diverged))
			break;
	(void)clio_close(h[0]);
	(void)clio_close(h[1]);
	free(buf);
	free(back);
	return NULL;
}

static void *
fm_syncer(void *arg)
{
	struct fm *x = arg;

	while (atomic_load(&x->stop) == 0) {
		(void)clio_sync(x->c);
		usleep(500);
	}
	return NULL;
}

static void
fm_run(uint64_t seed, bool cb)
{
	static const struct clio_dev_callbacks ops = { fm_pread, fm_pwrite, fm_flush, NULL };
	const char *flavour = getenv("CLIO_FLAVOUR");
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	struct fm x;
	struct fm_arg a[FM_OBJS];
	pthread_t th[FM_OBJS], sy;
	uint64_t rng = tu_rand_init(seed);
	char spec[160];
	int i;

	memset(&x, 0, sizeof(x));
	x.seed = seed;
	x.nops = flavour != NULL && strcmp(flavour, "tsan") == 0 ? 300 : 1500;
	conf.bsize = 4096;
	conf.maxphys = 32 * KiB;
	conf.cache_size = (32 + tu_rand(&rng) % 32) * 4096;
	conf.dirty_age = 0.01;
	conf.write_behind = (uint32_t)(tu_rand(&rng) % 3);
	conf.flush_behind = tu_rand(&rng) % 2 ? 64 * KiB : 0;
	conf.rbw = (enum clio_rbw_mode)(tu_rand(&rng) % 2);
	assert_int_equal(clio_cache_new(&conf, &x.c), 0);
	for (i = 0; i < FM_OBJS; i++) {
		struct fm_obj *o = &x.o[i];

		o->id = i;
		o->cb = cb;
		/* the last object never fails: no error may reach it */
		o->prob = i == FM_OBJS - 1 ? 0.0 : 0.03;
		o->rng = tu_rand_init(seed + 977 * (uint64_t)i);
		o->model = calloc(1, FM_ROOM);
		assert_non_null(o->model);
		pthread_mutex_init(&o->m, NULL);
		if (cb) {
			o->mem = calloc(1, FM_ROOM);
			assert_non_null(o->mem);
			o->size = FM_ROOM;
			assert_int_equal(clio_dev_open_callbacks("fm", FM_ROOM, 512, 0, &ops,
								 o, 4, &o->d), 0);
		} else {
			snprintf(spec, sizeof(spec),
				 "fault:write=EIO,prob=%g,seed=%llu@mem:size=0",
				 o->prob, (unsigned long long)(seed * 3 + (uint64_t)i + 1));
			o->d = tu_dev_open(spec, 0);
		}
	}
	assert_int_equal(pthread_create(&sy, NULL, fm_syncer, &x), 0);
	for (i = 0; i < FM_OBJS; i++) {
		a[i] = (struct fm_arg){ &x, &x.o[i] };
		assert_int_equal(pthread_create(&th[i], NULL, fm_main, &a[i]), 0);
	}
	for (i = 0; i < FM_OBJS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&x.stop, 1);
	pthread_join(sy, NULL);
	(void)clio_cache_free(x.c);
	for (i = 0; i < FM_OBJS; i++) {
		clio_dev_close(x.o[i].d);
		free(x.o[i].model);
		free(x.o[i].mem);
		pthread_mutex_destroy(&x.o[i].m);
	}
	assert_int_equal(atomic_load(&x.bad), 0);
}

static void
test_fault_model(void **state)
{
	uint64_t seed = tu_seed("fault_model");

	(void)state;
	fm_run(seed, true);
	fm_run(seed + 1, false);
}

/* The first validator of an object, with a size below what the object
 * had: the blocks cached past it were kept, and a write past the new
 * end then showed their old bytes where a read of the same file not
 * cached showed zeros.  Now they go, and both show zeros. */
static void
test_revalidate_first_shrink(void **state)
{
	struct clio_validator v = { .size = 4096, .mtime_ns = 1 };
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	unsigned char buf[16384];
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	int cached;

	(void)state;
	conf.bsize = 4096;
	conf.cache_size = 64 * 4096;
	for (cached = 0; cached < 2; cached++) {
		assert_int_equal(clio_cache_new(&conf, &c), 0);
		d = tu_dev_open("mem:size=16K", 0);
		memset(buf, 'A', sizeof(buf));
		assert_int_equal(clio_dev_pwrite(d, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		f = tu_open(c, d, CLIO_RDWR);
		if (cached)
			assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		assert_int_equal(clio_revalidate(f, &v), 0);
		assert_int_equal(clio_fsize(f), 4096);
		assert_int_equal(clio_pwrite(f, "B", 1, 4196), 1);
		memset(buf, 0x5a, sizeof(buf));
		assert_int_equal(clio_pread(f, buf, sizeof(buf), 0), 4197);
		assert_int_equal(tu_check_zero(buf + 4096, 100), -1);
		assert_int_equal(buf[4196], 'B');
		assert_int_equal(buf[4095], 'A');
		assert_int_equal(clio_close(f), 0);
		assert_int_equal(clio_cache_free(c), 0);
		clio_dev_close(d);
	}
}

/* Resident bytes of this process (/proc/self/statm), or 0. */
static uint64_t
resident_bytes(void)
{
	unsigned long long size = 0, res = 0;
	FILE *fp = fopen("/proc/self/statm", "r");

	if (fp != NULL) {
		if (fscanf(fp, "%llu %llu", &size, &res) != 2)
			res = 0;
		fclose(fp);
	}
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

struct pf_arg {
	clio_file *f;
	atomic_bool stop;
	int bad; /* bytes read back wrong */
};

/* Rewrite and read back the first MiB, block by block, until stopped. */
static void *
pf_worker(void *arg)
{
	struct pf_arg *a = arg;
	unsigned char w[4096], r[4096];
	uint64_t off = 0;

	while (!atomic_load(&a->stop)) {
		memset(w, (int)(off >> 12) & 0xff, sizeof(w));
		if (clio_pwrite(a->f, w, sizeof(w), off) != (ssize_t)sizeof(w) ||
		    clio_pread(a->f, r, sizeof(r), off) != (ssize_t)sizeof(r) ||
		    memcmp(w, r, sizeof(r)) != 0)
			a->bad++;
		off = (off + sizeof(w)) % (1u << 20);
	}
	return NULL;
}

static void
test_prefault(void **state)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	struct pf_arg a = { 0 };
	unsigned char buf[4096];
	uint64_t before, after;
	pthread_t th;
	clio_cache *c;
	clio_dev *d;
	uint32_t i;
	int r;

	(void)state;
	assert_int_equal(clio_cache_prefault(NULL), -EINVAL);
	conf.cache_size = 32u << 20;
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	d = tu_dev_open("mem:size=2M", 0);
	a.f = tu_open(c, d, CLIO_RDWR);
	for (i = 0; i < (2u << 20) / sizeof(buf); i++) { /* 2 MiB in use */
		memset(buf, (int)(i & 0xff), sizeof(buf));
		assert_int_equal(clio_pwrite(a.f, buf, sizeof(buf), (uint64_t)i * sizeof(buf)),
				 (ssize_t)sizeof(buf));
	}
	before = resident_bytes();
	assert_int_equal(pthread_create(&th, NULL, pf_worker, &a), 0);
	r = clio_cache_prefault(c);
	after = resident_bytes();
	atomic_store(&a.stop, true);
	pthread_join(th, NULL);
	assert_int_equal(a.bad, 0);
	if (r == -ENOTSUP) {
		fprintf(stderr, "prefault: the kernel cannot populate memory: resident size not checked\n");
	} else {
		assert_int_equal(r, 0);
		/* at least the 30 MiB of the cache that nothing had touched */
		if (after < before + (28u << 20))
			fail_msg("resident %llu bytes before the prefault, %llu after",
				 (unsigned long long)before, (unsigned long long)after);
	}
	/* every byte as written: the first MiB by the worker, the second by us */
	for (i = 0; i < (2u << 20) / sizeof(buf); i++) {
		unsigned char want[4096];
		memset(want, (int)(i & 0xff), sizeof(want));
		assert_int_equal(clio_pread(a.f, buf, sizeof(buf), (uint64_t)i * sizeof(buf)),
				 (ssize_t)sizeof(buf));
		assert_memory_equal(buf, want, sizeof(buf));
	}
	assert_int_equal(clio_close(a.f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
}

struct vw_arg {
	unsigned char *want;	/* the file's bytes from the read's offset */
	int calls, bad;
	size_t got;
};

static int
vw_view(void *arg, const struct iovec *iov, int iovcnt, int last)
{
	struct vw_arg *a = arg;
	int i;

	(void)last;
	a->calls++;
	for (i = 0; i < iovcnt; i++) {
		if (memcmp(iov[i].iov_base, a->want + a->got, iov[i].iov_len) != 0)
			a->bad++;
		a->got += iov[i].iov_len;
	}
	return 0;
}

static void
test_view_whole(void **state)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	const size_t size = 4u << 20, len = 1u << 20;
	const uint64_t off = 3 * 4096 + 100;
	char path[256], spec[300];
	unsigned char *data = malloc(size);
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	int pass, fd;

	(void)state;
	assert_non_null(data);
	for (size_t i = 0; i < size; i++)
		data[i] = (unsigned char)(i * 2654435761u >> 13);
	fd = tu_tmpfile(path, sizeof(path));
	assert_int_equal(write(fd, data, size), (ssize_t)size);
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s", path);
	conf.bsize = 4096;
	conf.cache_size = 64u << 20;
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	d = tu_dev_open(spec, 0);
	f = tu_open(c, d, CLIO_RDONLY);
	for (pass = 0; pass < 2; pass++) { /* cold, then warm */
		struct vw_arg a = { .want = data + off };

		assert_int_equal(clio_pread_view(f, len, off, vw_view, &a), (ssize_t)len);
		if (a.calls != 1 || a.bad != 0 || a.got != len)
			fail_msg("%s: %d calls of the view, %d runs of other bytes, %zu bytes",
				 pass ? "warm" : "cold", a.calls, a.bad, a.got);
	}
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	clio_dev_close(d);
	unlink(path);
	free(data);
}

/* clio_dev_close of a device a cache still holds an object of (a handle
 * open, an object kept) is refused with EBUSY and changes nothing: the
 * handle reads and writes on, the dirty data is written back (it freed
 * the device under them). */
static void
test_dev_close_busy(void **state)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	char buf[8192], back[8192];
	clio_cache *c;
	clio_dev *d = tu_dev_open("mem:size=1M", 0);
	clio_file *f;

	(void)state;
	conf.bsize = 4096;
	conf.cache_size = 1u << 20;
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	f = tu_open(c, d, CLIO_RDWR | CLIO_KEEP);
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(clio_pwrite(f, buf, sizeof(buf), 4096), (ssize_t)sizeof(buf));
	assert_int_equal(clio_dev_close(d), -EBUSY);
	assert_int_equal(clio_pread(f, back, sizeof(back), 4096), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	assert_int_equal(clio_fsync(f), 0);
	assert_int_equal(clio_dev_pread(d, back, sizeof(back), 4096), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	assert_int_equal(clio_close(f), 0);
	/* kept after its last close: still busy until forgotten */
	assert_int_equal(clio_dev_close(d), -EBUSY);
	assert_int_equal(clio_cache_forget(c, d), 0);
	assert_int_equal(clio_dev_close(d), 0);

	/* the object of a cache freed is gone too */
	d = tu_dev_open("mem:size=1M", 0);
	f = tu_open(c, d, CLIO_RDWR | CLIO_KEEP);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_dev_close(d), -EBUSY);
	assert_int_equal(clio_cache_free(c), 0);
	assert_int_equal(clio_dev_close(d), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conf),
		cmocka_unit_test(test_dev_errors),
		cmocka_unit_test(test_unchanged),
		cmocka_unit_test(test_view_fail),
		cmocka_unit_test(test_revalidate_fixed),
		cmocka_unit_test(test_blockdev),
		cmocka_unit_test(test_revalidate_race),
		cmocka_unit_test(test_sync_race),
		cmocka_unit_test(test_forget_race),
		cmocka_unit_test(test_submit_close),
		cmocka_unit_test(test_stats_threads),
		cmocka_unit_test(test_null_args),
		cmocka_unit_test(test_callback_odd),
		cmocka_unit_test(test_view_direct_len),
		cmocka_unit_test(test_fault_nest),
		cmocka_unit_test(test_fault_model),
		cmocka_unit_test(test_revalidate_first_shrink),
		cmocka_unit_test(test_prefault),
		cmocka_unit_test(test_view_whole),
		cmocka_unit_test(test_dev_close_busy),
	};

	if (getenv("CLIO_TEST") != NULL)
		cmocka_set_test_filter(getenv("CLIO_TEST"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
