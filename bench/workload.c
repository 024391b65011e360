/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * workload.c - dd-like workloads run in-process through the library, for
 * `clio bench`: a sequential write of zeros, a sequential read, a rewrite
 * in place, random reads.  Each opens its own cache and device, so that
 * statistics start from zero, and measures elapsed time on the device's
 * clock (simulated seconds on a virtual-clock device) and the CPU time the
 * process spent (user + system, from getrusage).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "util.h"

static double
cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static uint64_t
rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static ssize_t
one_op(const struct wl_spec *w, clio_file *f, char *buf, uint64_t i,
       uint64_t *rng, uint64_t fsize)
{
	uint64_t off;

	switch (w->kind) {
	case WL_WRITE:
	case WL_REWRITE:
		return clio_pwrite(f, buf, w->bs, w->offset + i * w->bs);
	case WL_READ:
		return clio_pread(f, buf, w->bs, w->offset + i * w->bs);
	case WL_RANDREAD:
		off = (rng_next(rng) % (fsize / w->bs)) * w->bs;
		return clio_pread(f, buf, w->bs, off);
	}
	return -EINVAL;
}

/* Run w on a fresh cache; with warm, run it twice and measure the second. */
int
wl_run(const struct wl_spec *w, struct wl_result *res, char *err, size_t errlen)
{
	clio_cache *c = NULL;
	clio_dev *d = NULL;
	clio_file *f = NULL;
	char *buf = NULL;
	uint64_t i, rng = 0x2545f4914f6cdd1dull, fsize;
	int r, pass;
	double t0 = 0, cpu0 = 0;

	memset(res, 0, sizeof(*res));
	r = clio_cache_new(&w->conf, &c);
	if (r < 0) {
		set_err(err, errlen, "cache: %s", strerror(-r));
		return r;
	}
	r = clio_dev_open_err(w->dev, w->kind == WL_READ || w->kind == WL_RANDREAD
					      ? CLIO_DEV_RDONLY
					      : CLIO_DEV_CREATE,
			      &d, err, errlen);
	if (r < 0)
		goto out;
	r = clio_open(c, d, (w->kind == WL_READ || w->kind == WL_RANDREAD
				     ? CLIO_RDONLY
				     : CLIO_RDWR) |
				    (w->direct ? CLIO_DIRECT : 0),
		      &f);
	if (r < 0) {
		set_err(err, errlen, "%s: %s", w->dev, strerror(-r));
		goto out;
	}
	if (posix_memalign((void **)&buf, 4096, w->bs) != 0) {
		r = -ENOMEM;
		set_err(err, errlen, "no memory for bs %llu",
			(unsigned long long)w->bs);
		goto out;
	}
	memset(buf, 0, w->bs);
	fsize = clio_dev_size(d);
	if (w->kind == WL_RANDREAD && fsize < w->bs) {
		r = -EINVAL;
		set_err(err, errlen, "%s: smaller than one read", w->dev);
		goto out;
	}
	res->is_virtual = clio_dev_is_virtual(d);
	for (pass = w->warm ? 0 : 1; pass < 2; pass++) {
		clio_dev_stats_reset(d);
		t0 = res->is_virtual ? clio_vclock_now() : now_monotonic();
		cpu0 = cpu_seconds();
		rng = 0x2545f4914f6cdd1dull;
		for (i = 0; i < w->count; i++) {
			ssize_t n = one_op(w, f, buf, i, &rng, fsize);
			if (n < 0) {
				r = (int)n;
				set_err(err, errlen, "%s: %s at op %llu", w->dev,
					strerror(-r), (unsigned long long)i);
				goto out;
			}
			if (n == 0)
				break;
			res->bytes += (uint64_t)n;
		}
		if (w->fsync_end) {
			r = clio_fsync(f);
			if (r < 0) {
				set_err(err, errlen, "%s: fsync: %s", w->dev,
					strerror(-r));
				goto out;
			}
		}
		if (pass == 0)
			res->bytes = 0;
	}
	res->elapsed = (res->is_virtual ? clio_vclock_now() : now_monotonic()) - t0;
	res->cpu_s = cpu_seconds() - cpu0;
	clio_dev_stats(d, &res->st);
	clio_cache_stats(c, &res->cs);
	r = 0;
out:
	if (f != NULL) {
		int e = clio_close(f);
		if (r == 0 && e < 0) {
			r = e;
			set_err(err, errlen, "%s: close: %s", w->dev, strerror(-e));
		}
	}
	if (d != NULL)
		clio_dev_close(d);
	clio_cache_free(c);
	free(buf);
	return r;
}

/* Back-end figures of a result, iostat's way. */
void
wl_figures(const struct wl_result *res, struct wl_figures *fig)
{
	const struct clio_iostat *b = &res->st.back;
	uint64_t x = b->reads + b->writes, bytes = b->read_bytes + b->write_bytes;

	fig->transfers = x;
	fig->kbt = x ? (double)bytes / 1024.0 / (double)x : 0;
	fig->tps = res->elapsed > 0 ? (double)x / res->elapsed : 0;
	fig->dev_mbs = res->elapsed > 0 ? (double)bytes / 1048576.0 / res->elapsed : 0;
	fig->app_mbs = res->elapsed > 0 ? (double)res->bytes / 1e6 / res->elapsed : 0;
}
