/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nfsthreads - several threads of one process on one device at once,
 * through the cache (clio_pwrite, clio_pread, clio_fsync, clio_ftruncate)
 * or on the device itself (clio_dev_pwrite, clio_dev_pread,
 * clio_dev_flush, clio_dev_resize), each checked against a model.
 *
 *   nfsthreads cache|dev DEVICE INITIAL OUT THREADS REGION OPS SEED
 *
 * INITIAL is a local copy of the device's contents, THREADS * REGION
 * bytes.  Thread i owns [i * REGION, (i + 1) * REGION): it writes seeded
 * pieces there, reads them back against its model, and flushes now and
 * then; the last thread also truncates and grows the file inside its
 * region (the end of the file is its), so that every byte has one writer
 * and the final contents are known.  A read of a region returns what its
 * owner wrote before, whatever the others do at the same time.  At the end
 * everything is flushed, the file closed and the model written to OUT,
 * for the test to compare with the server's file.  Exit 0, or 1 with one
 * line naming the thread, the operation and the seed.
 */
#include <clio.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))

static int use_dev;
static clio_dev *dev;
static clio_file *file;
static unsigned char *model;
static uint64_t region, fsize; /* fsize: the last thread's */
static unsigned nthreads, nops;
static unsigned long long seed;

struct worker {
	unsigned id;
	pthread_t t;
	char err[256];
};

static uint64_t
rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static ssize_t
do_write(const void *buf, size_t len, uint64_t off)
{
	return use_dev ? clio_dev_pwrite(dev, buf, len, off) : clio_pwrite(file, buf, len, off);
}

static ssize_t
do_read(void *buf, size_t len, uint64_t off)
{
	return use_dev ? clio_dev_pread(dev, buf, len, off) : clio_pread(file, buf, len, off);
}

static int
do_flush(void)
{
	return use_dev ? clio_dev_flush(dev) : clio_fsync(file);
}

static int
do_truncate(uint64_t size)
{
	return use_dev ? clio_dev_resize(dev, size) : clio_ftruncate(file, size);
}

static void *
work(void *arg)
{
	struct worker *w = arg;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + w->id + 1, base = w->id * region;
	bool last = w->id == nthreads - 1;
	unsigned char *buf = malloc(region), *rb = malloc(region);
	unsigned i;

	if (buf == NULL || rb == NULL) {
		snprintf(w->err, sizeof(w->err), "out of memory");
		goto out;
	}
	for (i = 0; i < nops; i++) {
		unsigned kind = (unsigned)(rnd(&x) % 16);
		uint64_t off = rnd(&x) % region, len = 1 + rnd(&x) % (region - off);
		ssize_t n;
		int r;

		if (len > 300000)
			len = 1 + len % 300000;
		if (kind < 8) {
			uint64_t k;

			for (k = 0; k < len; k++)
				buf[k] = (unsigned char)rnd(&x);
			n = do_write(buf, len, base + off);
			if (n != (ssize_t)len) {
				snprintf(w->err, sizeof(w->err), "write %llu at %llu: %zd",
					 (unsigned long long)len, (unsigned long long)(base + off), n);
				goto out;
			}
			memcpy(model + base + off, buf, len);
			if (last && base + off + len > fsize)
				fsize = base + off + len;
		} else if (kind < 13) {
			uint64_t want = len;

			if (last && !use_dev) /* a device reads zeros past its end */
				want = base + off >= fsize ? 0 : MIN(len, fsize - base - off);
			n = do_read(rb, len, base + off);
			if (n != (ssize_t)want || memcmp(rb, model + base + off, want) != 0) {
				snprintf(w->err, sizeof(w->err), "read %llu at %llu: %zd, %s",
					 (unsigned long long)len, (unsigned long long)(base + off), n,
					 n == (ssize_t)want ? "other data" : "not the model's size");
				goto out;
			}
		} else if (kind < 15 || !last) {
			if ((r = do_flush()) < 0) {
				snprintf(w->err, sizeof(w->err), "flush: %s", strerror(-r));
				goto out;
			}
		} else {
			uint64_t size = base + off;

			if ((r = do_truncate(size)) < 0) {
				snprintf(w->err, sizeof(w->err), "truncate to %llu: %s",
					 (unsigned long long)size, strerror(-r));
				goto out;
			}
			if (size < fsize)
				memset(model + size, 0, fsize - size);
			fsize = size;
		}
	}
out:
	free(buf);
	free(rb);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	struct worker *ws;
	clio_cache *cache = NULL;
	char err[512];
	FILE *fp;
	unsigned i;
	int r, bad = 0;

	if (argc != 9 || (strcmp(argv[1], "cache") != 0 && strcmp(argv[1], "dev") != 0)) {
		fprintf(stderr, "usage: nfsthreads cache|dev DEVICE INITIAL OUT THREADS "
			"REGION OPS SEED\n");
		return 2;
	}
	use_dev = strcmp(argv[1], "dev") == 0;
	nthreads = (unsigned)strtoul(argv[5], NULL, 0);
	region = strtoull(argv[6], NULL, 0);
	nops = (unsigned)strtoul(argv[7], NULL, 0);
	seed = strtoull(argv[8], NULL, 0);
	if (nthreads < 1 || region < 2) {
		fprintf(stderr, "nfsthreads: bad THREADS '%s' or REGION '%s'\n", argv[5], argv[6]);
		return 2;
	}
	fsize = nthreads * region;
	model = calloc(1, fsize);
	ws = calloc(nthreads, sizeof(*ws));
	if ((fp = fopen(argv[3], "rb")) == NULL || model == NULL || ws == NULL ||
	    fread(model, 1, fsize, fp) != fsize) {
		fprintf(stderr, "nfsthreads: cannot read %llu bytes of '%s'\n",
			(unsigned long long)fsize, argv[3]);
		return 1;
	}
	fclose(fp);
	r = clio_dev_open_err(argv[2], 0, &dev, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "nfsthreads: %s\n", err);
		return 1;
	}
	if (!use_dev) {
		if ((r = clio_cache_new(&conf, &cache)) < 0 ||
		    (r = clio_open(cache, dev, CLIO_RDWR, &file)) < 0) {
			fprintf(stderr, "nfsthreads: cannot open '%s' in a cache: %s\n", argv[2],
				strerror(-r));
			return 1;
		}
	}
	for (i = 0; i < nthreads; i++) {
		ws[i].id = i;
		pthread_create(&ws[i].t, NULL, work, &ws[i]);
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(ws[i].t, NULL);
		if (ws[i].err[0] != '\0') {
			fprintf(stderr, "nfsthreads: thread %u: %s (SEED=%llu)\n", i, ws[i].err,
				seed);
			bad = 1;
		}
	}
	if ((r = do_flush()) < 0) {
		fprintf(stderr, "nfsthreads: the last flush: %s (SEED=%llu)\n", strerror(-r), seed);
		bad = 1;
	}
	if (!use_dev && ((r = clio_close(file)) < 0 || (r = clio_cache_free(cache)) < 0)) {
		fprintf(stderr, "nfsthreads: close: %s (SEED=%llu)\n", strerror(-r), seed);
		bad = 1;
	}
	if ((r = clio_dev_close(dev)) < 0) {
		fprintf(stderr, "nfsthreads: closing the device: %s\n", strerror(-r));
		bad = 1;
	}
	if ((fp = fopen(argv[4], "wb")) == NULL || fwrite(model, 1, fsize, fp) != fsize ||
	    fclose(fp) != 0) {
		fprintf(stderr, "nfsthreads: cannot write '%s'\n", argv[4]);
		return 1;
	}
	free(model);
	free(ws);
	return bad;
}
