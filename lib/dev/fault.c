/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fault.c - fault injection around any device: `fault:OPTS@INNER`.
 *
 * OPTS, comma-separated:
 *   read=ERRNO write=ERRNO flush=ERRNO   which operations fail, and how
 *   offset=N length=N                    the byte range that fails
 *                                        (default: the whole device)
 *   after=N                              the first N requests succeed
 *   prob=P seed=S                        a matching request fails with
 *                                        probability P (seeded, repeatable)
 *   short=1                              transfers move half their bytes
 *                                        (at least one sector) per call
 *   resize_delay=SECONDS                 a resize sleeps this long first
 *                                        (widens races with a truncate)
 *   write_delay=SECONDS                  a write sleeps this long first
 *                                        (widens races with a write-back
 *                                        in flight); the wrapper then
 *                                        runs on the worker pool
 * A request fails when its operation has an errno, it overlaps the range,
 * more than `after` requests came before it, and the coin says so.  A
 * failing write changes nothing underneath.  The wrapper takes the inner
 * device's size, sector, maxio, queue depth and clock, and calls its io()
 * directly (dev.h rule 8): the inner runs synchronously inside the
 * wrapper's piece, on the worker pool when the inner may block, and a file
 * inside uses the threads engine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct fault_dev {
	clio_dev *inner;
	int err[3]; /* by clio_op; 0 = never fails */
	uint64_t offset, length;
	uint64_t after;
	double prob;
	uint64_t rng;
	int shorten;
	double resize_delay, write_delay;
	pthread_mutex_t lock;
	uint64_t count; /* requests seen */
};

static double
next_uniform(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (double)((*s * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static void
sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static ssize_t
fault_io(clio_dev *d, struct dev_io *p)
{
	struct fault_dev *f = d->priv;
	clio_dev *in = f->inner;
	int e = f->err[p->op];
	bool fail = false;
	ssize_t r;

	pthread_mutex_lock(&f->lock);
	f->count++;
	if (e != 0 && f->count > f->after) {
		bool overlaps = p->op == CLIO_OP_FLUSH ||
				(p->off < f->offset + f->length &&
				 p->off + p->len > f->offset);
		if (overlaps)
			fail = f->prob >= 1.0 || next_uniform(&f->rng) < f->prob;
	}
	pthread_mutex_unlock(&f->lock);
	if (p->op == CLIO_OP_WRITE && f->write_delay > 0)
		sleep_s(f->write_delay);
	if (fail) {
		if (d->is_virtual) {
			p->t_start = MAX(p->t_submit, 0.0);
			p->t_done = p->t_submit;
		}
		return -e;
	}
	if (f->shorten && p->op != CLIO_OP_FLUSH && p->len > d->sector) {
		struct dev_io q = *p;
		struct iovec sub[DEV_IOV_MAX];
		size_t half = (p->len / 2 + d->sector - 1) / d->sector * d->sector;

		q.len = MIN(half, p->len);
		q.iovcnt = iov_slice(p->iov, p->iovcnt, 0, q.len, sub,
				     DEV_IOV_MAX);
		q.iov = sub;
		r = in->ops->io(in, &q);
		p->t_start = q.t_start;
		p->t_done = q.t_done;
		return r;
	}
	return in->ops->io(in, p);
}

static int
fault_resize(clio_dev *d, uint64_t size)
{
	struct fault_dev *f = d->priv;
	int r;

	if (f->inner->ops->resize == NULL)
		return -ENOTSUP;
	if (f->resize_delay > 0)
		sleep_s(f->resize_delay);
	r = f->inner->ops->resize(f->inner, size);
	if (r == 0)
		f->inner->size = size;
	return r;
}

static void
fault_close(clio_dev *d)
{
	struct fault_dev *f = d->priv;

	f->inner->ops->close(f->inner);
	pthread_mutex_destroy(&f->lock);
	free(f);
	dev_free(d);
}

static void
fault_params(clio_dev *d, struct dev_params *o)
{
	static const char *const ops[] = { "read", "write", "flush" };
	struct fault_dev *f = d->priv;
	int i;

	for (i = 0; i < 3; i++)
		if (f->err[i] != 0)
			dev_param(o, ops[i], "%s", errno_name(f->err[i]));
	dev_param(o, "offset", "%llu", (unsigned long long)f->offset);
	if (f->length != UINT64_MAX)
		dev_param(o, "length", "%llu", (unsigned long long)f->length);
	else
		dev_param(o, "length", "all");
	dev_param(o, "after", "%llu", (unsigned long long)f->after);
	dev_param(o, "prob", "%g", f->prob);
	dev_param(o, "short", "%d", f->shorten);
	dev_param(o, "inner", "%s", clio_dev_name(f->inner));
	dev_params_of(f->inner, "inner.", o);
}

static const struct dev_ops fault_ops = {
	.scheme = "fault",
	.io = fault_io,
	.resize = fault_resize,
	.close = fault_close,
	.params = fault_params,
};

static const struct dev_ops fault_fixed_ops = {
	.scheme = "fault",
	.io = fault_io,
	.resize = NULL,
	.close = fault_close,
	.params = fault_params,
};

struct fault_args {
	struct fault_dev *f;
	bool have_seed;
	char *err;
	size_t errlen;
};

static int
fault_opt(void *arg, const char *k, const char *v)
{
	struct fault_args *a = arg;
	struct fault_dev *f = a->f;
	uint64_t n;

	if (strcmp(k, "read") == 0 || strcmp(k, "write") == 0 ||
	    strcmp(k, "flush") == 0) {
		int e, op = k[0] == 'r' ? CLIO_OP_READ
				 : k[0] == 'w' ? CLIO_OP_WRITE : CLIO_OP_FLUSH;
		if (parse_errno(v, &e) < 0) {
			set_err(a->err, a->errlen, "fault: bad errno '%s' for %s", v, k);
			return -EINVAL;
		}
		f->err[op] = e;
	} else if (strcmp(k, "offset") == 0 || strcmp(k, "length") == 0 ||
		   strcmp(k, "after") == 0 || strcmp(k, "seed") == 0) {
		if (parse_size(v, &n) < 0) {
			set_err(a->err, a->errlen, "fault: bad %s '%s'", k, v);
			return -EINVAL;
		}
		if (k[0] == 'o')
			f->offset = n;
		else if (k[0] == 'l')
			f->length = n;
		else if (k[0] == 'a')
			f->after = n;
		else {
			f->rng = n ? n : 0x9e3779b97f4a7c15ull;
			a->have_seed = true;
		}
	} else if (strcmp(k, "prob") == 0) {
		if (parse_double(v, &f->prob) < 0 || f->prob < 0 || f->prob > 1) {
			set_err(a->err, a->errlen, "fault: bad prob '%s' (0 to 1)", v);
			return -EINVAL;
		}
	} else if (strcmp(k, "resize_delay") == 0 ||
		   strcmp(k, "write_delay") == 0) {
		double *dl = k[0] == 'r' ? &f->resize_delay : &f->write_delay;

		if (parse_double(v, dl) < 0 || *dl < 0 || *dl > 60) {
			set_err(a->err, a->errlen,
				"fault: bad %s '%s' (0 to 60 seconds)", k, v);
			return -EINVAL;
		}
	} else if (strcmp(k, "short") == 0) {
		if (parse_uint(v, &n) < 0 || n > 1) {
			set_err(a->err, a->errlen, "fault: bad short '%s' (0 or 1)", v);
			return -EINVAL;
		}
		f->shorten = (int)n;
	} else {
		set_err(a->err, a->errlen, "fault: unknown parameter '%s'", k);
		return -EINVAL;
	}
	return 0;
}

int
dev_fault_open(const char *opts, const char *inner, int flags, clio_dev **dp,
	       char *err, size_t errlen)
{
	struct fault_dev *f = calloc(1, sizeof(*f));
	struct fault_args a = { f, false, err, errlen };
	clio_dev *d, *in;
	char *copy, *name;
	int r;

	if (f == NULL)
		return -ENOMEM;
	f->length = UINT64_MAX;
	f->prob = 1.0;
	f->rng = 0x9e3779b97f4a7c15ull;
	copy = strdup(opts);
	if (copy == NULL) {
		free(f);
		return -ENOMEM;
	}
	r = parse_kv_list(copy, ',', fault_opt, &a, "fault", err, errlen);
	free(copy);
	if (r < 0) {
		free(f);
		return r;
	}
	if (f->length != UINT64_MAX && f->offset + f->length < f->offset)
		f->length = UINT64_MAX - f->offset;
	r = dev_open_spec(inner, flags | DEV_OPEN_INNER, &in, err, errlen);
	if (r < 0) {
		free(f);
		return r;
	}
	name = malloc(strlen(opts) + strlen(inner) + 8);
	if (name == NULL) {
		in->ops->close(in);
		free(f);
		return -ENOMEM;
	}
	sprintf(name, "fault:%s@%s", opts, inner);
	r = dev_alloc(in->ops->resize ? &fault_ops : &fault_fixed_ops, name, &d);
	free(name);
	if (r < 0) {
		in->ops->close(in);
		free(f);
		return r;
	}
	pthread_mutex_init(&f->lock, NULL);
	f->inner = in;
	d->priv = f;
	d->size = in->size;
	d->max_size = in->max_size;
	d->sector = in->sector;
	d->aligned_only = in->aligned_only;
	d->maxio = in->maxio;
	d->queue_depth = in->queue_depth;
	d->blocking = in->blocking || f->write_delay > 0;
	d->is_virtual = in->is_virtual;
	if (d->blocking)
		snprintf(d->engine, sizeof(d->engine),
			 "threads (the inner device runs synchronously)");
	*dp = d;
	return 0;
}

clio_dev *
dev_fault_inner(clio_dev *d)
{
	return ((struct fault_dev *)d->priv)->inner;
}
