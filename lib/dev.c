/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dev.c - the device layer: opening a backend from a string, asynchronous
 * requests with iovec lists, splitting at the device's maxio, worker
 * threads for blocking backends, and per-device statistics.
 *
 * Invariants:
 *  1. Every byte that reaches storage passes through exec_piece(), which is
 *     the only caller of a backend's io().
 *  2. A request is split into pieces of at most maxio bytes; its callback
 *     runs exactly once, after its last piece, with the total byte count or
 *     the first error.
 *  3. A piece is retried until it has moved all its bytes, failed, or (a
 *     read) reached EOF, where the rest reads as zeros.
 *  4. d->lock protects the statistics, the queue and d->size.  No lock is
 *     held while a backend's io() runs or a callback is called.
 *  5. busy time grows only while at least one piece is outstanding
 *     (real clock) or by each piece's service time (virtual clock).
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Latency histogram: bucket k covers [2^(k/4), 2^((k+1)/4)) microseconds. */
#define LAT_BUCKETS 128

struct dev_stat_acc {
	struct clio_iostat s;
	uint64_t lat[LAT_BUCKETS];
};

/* One request in flight: shared by its pieces. */
struct req_track {
	atomic_int left;
	atomic_llong result; /* bytes, or the first -errno */
	double t_done;	     /* max over pieces; under d->lock */
	struct clio_req *req;
};

struct dev_work {
	struct dev_work *next;
	struct req_track *track;
	struct dev_io io;
	double t_enqueued;
	int iovcnt;
	struct iovec iov[]; /* the piece's slice of the request's iovec */
};

/* ------------------------------------------------------------ iovecs */

size_t
iov_length(const struct iovec *iov, int iovcnt)
{
	size_t n = 0;
	int i;

	for (i = 0; i < iovcnt; i++)
		n += iov[i].iov_len;
	return n;
}

int
iov_slice(const struct iovec *src, int srccnt, size_t skip, size_t len,
	  struct iovec *dst, int dstmax)
{
	int i, n = 0;

	for (i = 0; i < srccnt && len > 0; i++) {
		size_t l = src[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		if (n == dstmax)
			break;
		dst[n].iov_base = (char *)src[i].iov_base + skip;
		dst[n].iov_len = MIN(l - skip, len);
		len -= dst[n].iov_len;
		skip = 0;
		n++;
	}
	return n;
}

/* Walk [skip, skip+len) of an iovec, calling fn on each contiguous part. */
#define IOV_WALK(iov, iovcnt, skip, len, BODY)                               \
	do {                                                                 \
		size_t _skip = (skip), _len = (len), _done = 0;              \
		int _i;                                                      \
		for (_i = 0; _i < (iovcnt) && _len > 0; _i++) {              \
			size_t _l = (iov)[_i].iov_len;                       \
			if (_skip >= _l) {                                   \
				_skip -= _l;                                 \
				continue;                                    \
			}                                                    \
			char *part = (char *)(iov)[_i].iov_base + _skip;     \
			size_t plen = MIN(_l - _skip, _len);                 \
			size_t pdone = _done;                                \
			BODY;                                                \
			(void)pdone;                                         \
			_done += plen;                                       \
			_len -= plen;                                        \
			_skip = 0;                                           \
		}                                                            \
	} while (0)

void
iov_memset(const struct iovec *iov, int iovcnt, size_t skip, int c, size_t len)
{
	IOV_WALK(iov, iovcnt, skip, len, memset(part, c, plen));
}

void
iov_to_buf(const struct iovec *iov, int iovcnt, size_t skip, void *buf,
	   size_t len)
{
	IOV_WALK(iov, iovcnt, skip, len,
		 memcpy((char *)buf + pdone, part, plen));
}

void
buf_to_iov(const struct iovec *iov, int iovcnt, size_t skip, const void *buf,
	   size_t len)
{
	IOV_WALK(iov, iovcnt, skip, len,
		 memcpy(part, (const char *)buf + pdone, plen));
}

/* ------------------------------------------------------------ statistics */

static int
size_bucket(size_t len)
{
	int k = 0;

	while (k < CLIO_HIST_BUCKETS - 1 && len >= ((size_t)512 << k))
		k++;
	return k;
}

static void
acc_add(struct dev_stat_acc *a, enum clio_op op, size_t len, double lat,
	int failed)
{
	int k;

	switch (op) {
	case CLIO_OP_READ:
		a->s.reads++;
		a->s.read_bytes += len;
		break;
	case CLIO_OP_WRITE:
		a->s.writes++;
		a->s.write_bytes += len;
		break;
	case CLIO_OP_FLUSH:
		a->s.flushes++;
		break;
	}
	if (failed)
		a->s.errors++;
	if (op != CLIO_OP_FLUSH)
		a->s.size_hist[size_bucket(len)]++;
	if (lat < 1e-6)
		k = 0;
	else
		k = (int)(4.0 * log2(lat * 1e6));
	a->lat[MAX(0, MIN(k, LAT_BUCKETS - 1))]++;
}

static double
acc_percentile(const struct dev_stat_acc *a, double q)
{
	uint64_t total = 0, seen = 0, want;
	int k;

	for (k = 0; k < LAT_BUCKETS; k++)
		total += a->lat[k];
	if (total == 0)
		return 0.0;
	want = (uint64_t)ceil(q * (double)total);
	for (k = 0; k < LAT_BUCKETS; k++) {
		seen += a->lat[k];
		if (seen >= want)
			break;
	}
	/* the geometric middle of the bucket */
	return pow(2.0, ((double)k + 0.5) / 4.0) * 1e-6;
}

void
dev_account_front(clio_dev *d, enum clio_op op, size_t len, double lat)
{
	pthread_mutex_lock(&d->lock);
	acc_add(d->front, op, len, lat, 0);
	d->front->s.busy_s += lat;
	pthread_mutex_unlock(&d->lock);
}

static void
export_acc(const struct dev_stat_acc *a, struct clio_iostat *out)
{
	*out = a->s;
	out->lat_p50_s = acc_percentile(a, 0.50);
	out->lat_p99_s = acc_percentile(a, 0.99);
}

void
clio_dev_stats(clio_dev *d, struct clio_dev_stats *st)
{
	pthread_mutex_lock(&d->lock);
	export_acc(d->front, &st->front);
	export_acc(d->back, &st->back);
	if (!d->is_virtual && d->inflight > 0)
		st->back.busy_s += now_monotonic() - d->busy_since;
	pthread_mutex_unlock(&d->lock);
}

void
clio_dev_stats_reset(clio_dev *d)
{
	pthread_mutex_lock(&d->lock);
	memset(d->front, 0, sizeof(*d->front));
	memset(d->back, 0, sizeof(*d->back));
	if (d->inflight > 0)
		d->busy_since = now_monotonic();
	pthread_mutex_unlock(&d->lock);
}

double
dev_now(const clio_dev *d)
{
	return d->is_virtual ? vclock_now() : now_monotonic();
}

/* ------------------------------------------------------------ execution */

/* Run one piece to the end (invariant 3) and account for it. */
static void
exec_piece(clio_dev *d, struct dev_work *w)
{
	struct dev_io *p = &w->io;
	size_t done = 0;
	ssize_t r = 0;
	struct iovec sub[64];

	if (p->op != CLIO_OP_FLUSH && p->len == 0)
		goto complete; /* nothing to move */
	do {
		struct dev_io q = *p;
		double t0 = 0;

		if (p->op != CLIO_OP_FLUSH) {
			q.iovcnt = iov_slice(w->iov, w->iovcnt, done,
					     p->len - done, sub, 64);
			q.iov = sub;
			q.len = iov_length(sub, q.iovcnt);
			q.off = p->off + done;
		}
		if (!d->is_virtual) {
			t0 = now_monotonic();
			pthread_mutex_lock(&d->lock);
			if (d->inflight++ == 0)
				d->busy_since = t0;
			pthread_mutex_unlock(&d->lock);
		}
		r = d->ops->io(d, &q);
		pthread_mutex_lock(&d->lock);
		if (d->is_virtual) {
			d->back->s.busy_s += MAX(0.0, q.t_done - q.t_start);
			acc_add(d->back, p->op, r > 0 ? (size_t)r : 0,
				q.t_done - q.t_submit, r < 0);
			p->t_done = q.t_done;
			p->t_submit = q.t_done; /* a retry is issued then */
		} else {
			double t1 = now_monotonic();
			if (--d->inflight == 0)
				d->back->s.busy_s += t1 - d->busy_since;
			acc_add(d->back, p->op, r > 0 ? (size_t)r : 0,
				t1 - w->t_enqueued, r < 0);
		}
		pthread_mutex_unlock(&d->lock);
		if (r < 0 || p->op == CLIO_OP_FLUSH)
			break;
		if (r == 0) {
			if (p->op == CLIO_OP_READ) {
				iov_memset(w->iov, w->iovcnt, done, 0,
					   p->len - done);
				done = p->len;
			} else {
				r = -EIO;
			}
			break;
		}
		done += (size_t)r;
	} while (done < p->len);

	if (r >= 0 && p->op == CLIO_OP_WRITE && d->ops->resize != NULL) {
		pthread_mutex_lock(&d->lock);
		if (p->off + p->len > d->size)
			d->size = p->off + p->len;
		pthread_mutex_unlock(&d->lock);
	}

complete:
	/* complete the request if this was its last piece */
	struct req_track *t = w->track;
	if (r < 0) {
		long long expect = atomic_load(&t->result);
		while (expect >= 0 &&
		       !atomic_compare_exchange_weak(&t->result, &expect, r))
			;
	}
	pthread_mutex_lock(&d->lock);
	if (p->t_done > t->t_done)
		t->t_done = p->t_done;
	pthread_mutex_unlock(&d->lock);
	if (atomic_fetch_sub(&t->left, 1) == 1) {
		struct clio_req *req = t->req;
		long long res = atomic_load(&t->result);
		req->result = res < 0 ? (ssize_t)res
				      : (ssize_t)iov_length(req->iov, req->iovcnt);
		if (req->op == CLIO_OP_FLUSH && res >= 0)
			req->result = 0;
		req->t_done = t->t_done;
		free(t);
		req->done(req);
	}
	free(w);
}

static void *
worker_main(void *arg)
{
	clio_dev *d = arg;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct dev_work *w;

		while (d->q_head == NULL && !d->stopping)
			pthread_cond_wait(&d->q_cv, &d->lock);
		if (d->q_head == NULL && d->stopping)
			break;
		w = d->q_head;
		d->q_head = w->next;
		if (d->q_head == NULL)
			d->q_tail = NULL;
		pthread_mutex_unlock(&d->lock);
		exec_piece(d, w);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static int
start_workers(clio_dev *d)
{
	int i, n = (int)MAX(1u, d->queue_depth);

	d->workers = calloc((size_t)n, sizeof(pthread_t));
	if (d->workers == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (pthread_create(&d->workers[i], NULL, worker_main, d) != 0)
			break;
	}
	d->nworkers = i;
	return i > 0 ? 0 : -EAGAIN;
}

static struct dev_work *
make_piece(struct req_track *t, struct clio_req *req, uint64_t skip,
	   size_t len, double t_submit)
{
	struct dev_work *w;
	int n = req->op == CLIO_OP_FLUSH ? 0 : req->iovcnt;

	w = calloc(1, sizeof(*w) + (size_t)n * sizeof(struct iovec));
	if (w == NULL)
		return NULL;
	w->track = t;
	w->io.op = req->op;
	w->io.off = req->offset + skip;
	w->io.len = len;
	if (n > 0)
		w->iovcnt = iov_slice(req->iov, req->iovcnt, skip, len, w->iov, n);
	w->io.iov = w->iov;
	w->io.iovcnt = w->iovcnt;
	w->io.t_submit = t_submit;
	return w;
}

int
clio_dev_submit(clio_dev *d, struct clio_req *req)
{
	size_t len = req->op == CLIO_OP_FLUSH ? 0 : iov_length(req->iov, req->iovcnt);
	size_t piece = d->maxio ? d->maxio : len;
	size_t npieces, i;
	struct dev_work **ws;
	struct req_track *t;
	double t_submit = d->is_virtual ? vclock_now() : 0.0;
	uint64_t size;

	if (req->op != CLIO_OP_FLUSH && req->op != CLIO_OP_READ &&
	    req->op != CLIO_OP_WRITE)
		return -EINVAL;
	if (req->op == CLIO_OP_WRITE && d->readonly)
		return -EROFS;
	pthread_mutex_lock(&d->lock);
	size = d->size;
	pthread_mutex_unlock(&d->lock);
	if (req->op != CLIO_OP_FLUSH && d->ops->resize == NULL &&
	    (req->offset > size || len > size - req->offset))
		return req->op == CLIO_OP_WRITE ? -ENOSPC : -EINVAL;
	if (piece == 0)
		piece = 1;
	npieces = req->op == CLIO_OP_FLUSH || len == 0 ? 1 : DIV_ROUND_UP(len, piece);

	t = calloc(1, sizeof(*t));
	ws = calloc(npieces, sizeof(*ws));
	if (t == NULL || ws == NULL) {
		free(t);
		free(ws);
		return -ENOMEM;
	}
	atomic_init(&t->left, (int)npieces);
	atomic_init(&t->result, 0);
	t->req = req;
	for (i = 0; i < npieces; i++) {
		size_t skip = i * piece;
		ws[i] = make_piece(t, req, skip, MIN(piece, len - skip), t_submit);
		if (ws[i] == NULL) {
			while (i-- > 0)
				free(ws[i]);
			free(ws);
			free(t);
			return -ENOMEM;
		}
		ws[i]->t_enqueued = now_monotonic();
	}
	if (!d->blocking || d->nworkers == 0 || (req->flags & CLIO_REQ_SYNC)) {
		for (i = 0; i < npieces; i++)
			exec_piece(d, ws[i]);
	} else {
		pthread_mutex_lock(&d->lock);
		for (i = 0; i < npieces; i++) {
			if (d->q_tail != NULL)
				d->q_tail->next = ws[i];
			else
				d->q_head = ws[i];
			d->q_tail = ws[i];
			pthread_cond_signal(&d->q_cv); /* one worker per piece */
		}
		pthread_mutex_unlock(&d->lock);
	}
	free(ws);
	return 0;
}

/* ------------------------------------------------------------ synchronous */

struct sync_wait {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int done;
};

static void
sync_done(struct clio_req *req)
{
	struct sync_wait *w = req->priv;

	pthread_mutex_lock(&w->m);
	w->done = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

static ssize_t
sync_rw(clio_dev *d, enum clio_op op, const struct iovec *iov, int iovcnt,
	uint64_t off)
{
	struct sync_wait w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	struct clio_req req;
	int r;

	memset(&req, 0, sizeof(req));
	req.op = op;
	req.flags = CLIO_REQ_SYNC;
	req.offset = off;
	req.iov = iov;
	req.iovcnt = iovcnt;
	req.done = sync_done;
	req.priv = &w;
	r = clio_dev_submit(d, &req);
	if (r < 0)
		return r;
	pthread_mutex_lock(&w.m);
	while (!w.done)
		pthread_cond_wait(&w.cv, &w.m);
	pthread_mutex_unlock(&w.m);
	if (d->is_virtual)
		vclock_advance_to(req.t_done);
	return req.result;
}

ssize_t
clio_dev_preadv(clio_dev *d, const struct iovec *iov, int iovcnt, uint64_t off)
{
	return sync_rw(d, CLIO_OP_READ, iov, iovcnt, off);
}

ssize_t
clio_dev_pwritev(clio_dev *d, const struct iovec *iov, int iovcnt, uint64_t off)
{
	return sync_rw(d, CLIO_OP_WRITE, iov, iovcnt, off);
}

ssize_t
clio_dev_pread(clio_dev *d, void *buf, size_t len, uint64_t off)
{
	struct iovec v = { buf, len };

	return sync_rw(d, CLIO_OP_READ, &v, 1, off);
}

ssize_t
clio_dev_pwrite(clio_dev *d, const void *buf, size_t len, uint64_t off)
{
	struct iovec v = { (void *)buf, len };

	return sync_rw(d, CLIO_OP_WRITE, &v, 1, off);
}

int
clio_dev_flush(clio_dev *d)
{
	ssize_t r = sync_rw(d, CLIO_OP_FLUSH, NULL, 0, 0);

	return r < 0 ? (int)r : 0;
}

int
clio_dev_resize(clio_dev *d, uint64_t size)
{
	int r;

	if (d->ops->resize == NULL)
		return -ENOTSUP;
	if (d->readonly)
		return -EROFS;
	r = d->ops->resize(d, size);
	if (r == 0) {
		pthread_mutex_lock(&d->lock);
		d->size = size;
		pthread_mutex_unlock(&d->lock);
	}
	return r;
}

/* ------------------------------------------------------------ objects */

uint32_t dev_default_qd = 4;

void
clio_dev_set_default_queue_depth(uint32_t qd)
{
	dev_default_qd = qd < 1 ? 1 : qd > 256 ? 256 : qd;
}

int
dev_alloc(const struct dev_ops *ops, const char *name, clio_dev **dp)
{
	clio_dev *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return -ENOMEM;
	d->ops = ops;
	d->name = strdup(name);
	d->front = calloc(1, sizeof(*d->front));
	d->back = calloc(1, sizeof(*d->back));
	if (d->name == NULL || d->front == NULL || d->back == NULL) {
		free(d->name);
		free(d->front);
		free(d->back);
		free(d);
		return -ENOMEM;
	}
	d->sector = 512;
	d->queue_depth = 1;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->q_cv, NULL);
	*dp = d;
	return 0;
}

void
dev_free(clio_dev *d)
{
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->q_cv);
	free(d->workers);
	free(d->name);
	free(d->front);
	free(d->back);
	free(d);
}

static int
has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

int
dev_open_spec(const char *spec, int flags, clio_dev **dp, char *err, size_t errlen)
{
	const char *colon;

	if (spec == NULL || *spec == '\0') {
		set_err(err, errlen, "empty device string");
		return -EINVAL;
	}
	if (has_prefix(spec, "mem:"))
		return dev_mem_open(spec + 4, flags, dp, err, errlen);
	if (has_prefix(spec, "sim:"))
		return dev_sim_open(spec + 4, flags, dp, err, errlen);
	if (strcmp(spec, "mem") == 0)
		return dev_mem_open("", flags, dp, err, errlen);
	if (strcmp(spec, "sim") == 0)
		return dev_sim_open("", flags, dp, err, errlen);
	if (has_prefix(spec, "fault:")) {
		const char *at = strchr(spec, '@');
		char *opts;
		int r;

		if (at == NULL || at[1] == '\0') {
			set_err(err, errlen,
				"fault device '%s' lacks '@INNER'", spec);
			return -EINVAL;
		}
		opts = strndup(spec + 6, (size_t)(at - spec - 6));
		if (opts == NULL)
			return -ENOMEM;
		r = dev_fault_open(opts, at + 1, flags, dp, err, errlen);
		free(opts);
		return r;
	}
	if (has_prefix(spec, "file:")) {
		const char *path = spec + 5;
		const char *q = strchr(path, '?');
		char *p;
		int r;

		if (*path == '\0' || path == q) {
			set_err(err, errlen, "file device '%s' has no path", spec);
			return -EINVAL;
		}
		p = q ? strndup(path, (size_t)(q - path)) : strdup(path);
		if (p == NULL)
			return -ENOMEM;
		r = dev_file_open(p, q ? q + 1 : "", flags, dp, err, errlen);
		free(p);
		return r;
	}
	/* "word:" that is no path we know is a type we do not know */
	colon = strchr(spec, ':');
	if (colon != NULL && spec[0] != '/' && spec[0] != '.' &&
	    access(spec, F_OK) != 0) {
		const char *c;
		for (c = spec; c < colon; c++)
			if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')))
				break;
		if (c == colon) {
			set_err(err, errlen, "unknown device type '%.*s' in '%s'",
				(int)(colon - spec), spec, spec);
			return -EINVAL;
		}
	}
	return dev_file_open(spec, "", flags, dp, err, errlen);
}

int
clio_dev_open_err(const char *spec, int flags, clio_dev **devp, char *errbuf,
		  size_t errlen)
{
	clio_dev *d = NULL;
	int r;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	r = dev_open_spec(spec, flags, &d, errbuf, errlen);
	if (r < 0)
		return r;
	if (flags & CLIO_DEV_RDONLY)
		d->readonly = true;
	if (d->blocking) {
		r = start_workers(d);
		if (r < 0) {
			d->ops->close(d);
			return r;
		}
	}
	*devp = d;
	return 0;
}

int
clio_dev_open(const char *spec, int flags, clio_dev **devp)
{
	return clio_dev_open_err(spec, flags, devp, NULL, 0);
}

int
clio_dev_close(clio_dev *d)
{
	int i;

	if (d == NULL)
		return 0;
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_cond_broadcast(&d->q_cv);
	pthread_mutex_unlock(&d->lock);
	for (i = 0; i < d->nworkers; i++)
		pthread_join(d->workers[i], NULL);
	d->ops->close(d); /* frees d through dev_free */
	return 0;
}

const char *
clio_dev_name(const clio_dev *d)
{
	return d->name;
}

uint64_t
clio_dev_size(const clio_dev *d)
{
	uint64_t s;

	pthread_mutex_lock((pthread_mutex_t *)&d->lock);
	s = d->size;
	pthread_mutex_unlock((pthread_mutex_t *)&d->lock);
	return s;
}

uint32_t
clio_dev_sector_size(const clio_dev *d)
{
	return d->sector;
}

uint32_t
clio_dev_maxio(const clio_dev *d)
{
	return d->maxio;
}

int
clio_dev_is_virtual(const clio_dev *d)
{
	return d->is_virtual;
}
