/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dev.c - the device layer: opening a backend from a string, asynchronous
 * requests with iovec lists, cutting them into pieces at the device's
 * maxio, the queue of pieces waiting for a slot, the process-wide worker
 * pool that runs blocking backends, and per-device statistics.  The
 * backend contract is in dev.h.
 *
 * Invariants:
 *  1. Every byte that reaches storage passes through a backend call made
 *     here: io() in run_inline() or pool_main(), submit() in
 *     piece_issue(); each call ends in attempt_done(), which accounts it.
 *  2. A request is cut into pieces only at maxio bytes and at DEV_IOV_MAX
 *     iovecs; its callback runs exactly once, after its last piece, with
 *     the total byte count or the first error.
 *  3. A piece is issued again for its rest until it has moved all its
 *     bytes, failed, or (a read) reached EOF, where the rest reads as zeros.
 *  4. d->inflight <= d->queue_depth: a piece for the pool or submit() takes
 *     a slot or waits on d->pend_*; a finished piece hands its slot to the
 *     first waiting one.  Pieces run inline (non-blocking io(), or a
 *     CLIO_REQ_SYNC request in its caller's thread) take no slot.
 *  5. d->lock protects the back-end statistics, the pending queue, the
 *     slots, the free list of pieces, d->size and each request's state
 *     (struct req_state in req->internal).  No lock is held while a
 *     backend is called or a callback runs.
 *  6. d->outstanding counts requests submitted whose callback has not
 *     returned; clio_dev_close() waits for 0, and nothing here touches a
 *     device after the decrement that follows a callback.
 *  7. Front-end statistics live in DEV_FRONT_SLOTS + 1 cache-line-aligned
 *     slots.  A thread owns one of the first DEV_FRONT_SLOTS (process-wide,
 *     claimed at its first request, given back when it exits) and is its
 *     only writer, so it adds without a lock; threads beyond those share
 *     the last slot under its lock.  A device allocates a thread's slot at
 *     that thread's first request on it (published with a release CAS, so
 *     a reader that sees the pointer sees it zeroed; the shared slot from
 *     the start, and on a failed allocation): a device that one thread
 *     uses costs two slots of memory, not DEV_FRONT_SLOTS + 1.  Counters
 *     move by relaxed atomic loads and stores; readers sum the slots with
 *     relaxed loads and subtract d->front_base, the sum at the last reset
 *     (under d->lock), so no one but a slot's writer ever stores into it.
 *  8. busy time grows only while at least one backend call is outstanding
 *     (real clock) or by each call's service time (virtual clock).
 *  9. No request reaches a backend with an end past INT64_MAX, no resize
 *     sets a size past it, and a write grows a resizable device's size
 *     only by the bytes it moved.
 * dev_check() asserts invariant 4 in CLIO_DEBUG builds.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "tier.h"

/* Latency histogram: bucket k covers [2^(k/4), 2^((k+1)/4)) microseconds. */
#define LAT_BUCKETS 128
#define DEV_FRONT_SLOTS 16
#define POOL_MAX 64	/* worker threads of the pool at most */
#define CACHE_LINE 64
#define FAULT_NEST_MAX 16	/* fault: devices inside one another at most */

struct dev_stat_acc {
	struct clio_iostat s;
	uint64_t lat[LAT_BUCKETS];
};

struct dev_front_slot {
	_Alignas(CACHE_LINE) pthread_mutex_t lock; /* the shared slot's only */
	struct dev_stat_acc acc;
};

/* Invariant 7's stores: the slot's one writer reads, adds and stores. */
#define RELAXED_ADD(x, v) \
	__atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + (v), \
			 __ATOMIC_RELAXED)
#define RELAXED_GET(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static inline void
relaxed_add_double(double *x, double v)
{
	double old;

	__atomic_load(x, &old, __ATOMIC_RELAXED);
	old += v;
	__atomic_store(x, &old, __ATOMIC_RELAXED);
}

static inline double
relaxed_get_double(const double *x)
{
	double v;

	__atomic_load(x, &v, __ATOMIC_RELAXED);
	return v;
}

/* A request's state, in its internal[] space; under d->lock. */
struct req_state {
	int left;		/* pieces not finished */
	ssize_t result;		/* 0, or the first -errno */
	double t_done;		/* max over the pieces' completions */
};
_Static_assert(sizeof(struct req_state) <= sizeof(((struct clio_req *)0)->internal),
	       "struct req_state must fit in clio_req.internal");

/* One piece of a request; kept on the device's free list when done. */
struct dev_piece {
	struct dev_io io;	/* the attempt the backend sees */
	struct dev_piece *next;	/* pending queue, pool queue, free list */
	clio_dev *d;
	struct clio_req *req;
	ssize_t result;		/* of the piece: 0 or -errno */
	double t_queued;	/* real clock: latencies count from here */
	bool sync;		/* CLIO_REQ_SYNC */
	bool deferred;		/* io() on the pool (dev_piece_defer) */
	bool begun;		/* a backend call is counted busy */
	struct iovec *vec;	/* owned iovecs, for a split or a retry */
	int veccap;
};

static struct req_state *
req_state(struct clio_req *req)
{
	return (struct req_state *)(void *)req->internal;
}

static struct dev_piece *
piece_of(struct dev_io *io)
{
	return (struct dev_piece *)(void *)((char *)io - offsetof(struct dev_piece, io));
}

#ifdef CLIO_DEBUG
/* Invariant 4 and the counters' signs; under d->lock. */
static int
dev_check(const clio_dev *d)
{
	uint32_t qd = MAX(1u, d->queue_depth);

	return d->inflight <= qd && (d->pend_head == NULL) == (d->pend_tail == NULL) &&
	       (d->pend_head == NULL || d->inflight == qd) && d->busy >= 0 &&
	       d->inflight_peak >= d->inflight;
}
#define DEV_CHECK(d) assert(dev_check(d))
#else
#define DEV_CHECK(d) ((void)0)
#endif

/* A thread completing pieces from a backend's completion path. */
static _Thread_local bool in_async_completion;

/* ------------------------------------------------------------ iovecs */

/* The bytes of an iovec; SIZE_MAX when they add up past it. */
size_t
iov_length(const struct iovec *iov, int iovcnt)
{
	size_t n = 0;
	int i;

	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > SIZE_MAX - n)
			return SIZE_MAX;
		n += iov[i].iov_len;
	}
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

void *
iov_flat(const struct iovec *iov, int iovcnt)
{
	int i;

	if (iovcnt < 1)
		return NULL;
	for (i = 1; i < iovcnt; i++)
		if ((char *)iov[i - 1].iov_base + iov[i - 1].iov_len != iov[i].iov_base)
			return NULL;
	return iov[0].iov_base;
}

/* ------------------------------------------------------------ statistics */

static int
size_bucket(size_t len)
{
	/* the first k with len < 512 << k, at most the last bucket */
	int k = len < 512 ? 0 : 64 - __builtin_clzll((unsigned long long)(len >> 9));

	return MIN(k, CLIO_HIST_BUCKETS - 1);
}

/* floor(4 log2(microseconds)), 0 below 1 us, without a log2 per call:
 * the double's exponent is the octave, three comparisons of its
 * mantissa (as a number in [1, 2)) the quarter. */
static int
lat_bucket(double lat)
{
	double us = lat * 1e6, m;
	uint64_t bits;
	int e;

	if (!(us >= 1.0))
		return 0;
	if (us >= 0x1p63)
		return LAT_BUCKETS - 1;
	memcpy(&bits, &us, sizeof(bits));
	e = (int)(bits >> 52) - 1023;
	bits = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52);
	memcpy(&m, &bits, sizeof(m));
	return 4 * e + (m >= 1.6817928305074290) + (m >= 1.4142135623730951) +
	       (m >= 1.1892071150027210);
}

static void
acc_add(struct dev_stat_acc *a, enum clio_op op, size_t len, double lat,
	int failed)
{
	int k;

	switch (op) {
	case CLIO_OP_READ:
		RELAXED_ADD(a->s.reads, 1);
		RELAXED_ADD(a->s.read_bytes, len);
		relaxed_add_double(&a->s.read_time_s, lat);
		break;
	case CLIO_OP_WRITE:
		RELAXED_ADD(a->s.writes, 1);
		RELAXED_ADD(a->s.write_bytes, len);
		relaxed_add_double(&a->s.write_time_s, lat);
		break;
	case CLIO_OP_FLUSH:
		RELAXED_ADD(a->s.flushes, 1);
		break;
	}
	if (failed)
		RELAXED_ADD(a->s.errors, 1);
	if (op != CLIO_OP_FLUSH)
		RELAXED_ADD(a->s.size_hist[size_bucket(len)], 1);
	k = lat_bucket(lat);
	RELAXED_ADD(a->lat[MAX(0, MIN(k, LAT_BUCKETS - 1))], 1);
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

/* Add b into a (b's writer may be adding meanwhile: relaxed loads). */
static void
acc_merge(struct dev_stat_acc *a, const struct dev_stat_acc *b)
{
	int k;

	a->s.reads += RELAXED_GET(b->s.reads);
	a->s.writes += RELAXED_GET(b->s.writes);
	a->s.flushes += RELAXED_GET(b->s.flushes);
	a->s.read_bytes += RELAXED_GET(b->s.read_bytes);
	a->s.write_bytes += RELAXED_GET(b->s.write_bytes);
	a->s.errors += RELAXED_GET(b->s.errors);
	a->s.busy_s += relaxed_get_double(&b->s.busy_s);
	a->s.read_time_s += relaxed_get_double(&b->s.read_time_s);
	a->s.write_time_s += relaxed_get_double(&b->s.write_time_s);
	for (k = 0; k < CLIO_HIST_BUCKETS; k++)
		a->s.size_hist[k] += RELAXED_GET(b->s.size_hist[k]);
	for (k = 0; k < LAT_BUCKETS; k++)
		a->lat[k] += RELAXED_GET(b->lat[k]);
}

/* Take b (a reset's baseline, not shared) out of a. */
static void
acc_sub(struct dev_stat_acc *a, const struct dev_stat_acc *b)
{
	int k;

	a->s.reads -= b->s.reads;
	a->s.writes -= b->s.writes;
	a->s.flushes -= b->s.flushes;
	a->s.read_bytes -= b->s.read_bytes;
	a->s.write_bytes -= b->s.write_bytes;
	a->s.errors -= b->s.errors;
	a->s.busy_s -= b->s.busy_s;
	a->s.read_time_s -= b->s.read_time_s;
	a->s.write_time_s -= b->s.write_time_s;
	for (k = 0; k < CLIO_HIST_BUCKETS; k++)
		a->s.size_hist[k] -= b->s.size_hist[k];
	for (k = 0; k < LAT_BUCKETS; k++)
		a->lat[k] -= b->lat[k];
}

/* The sum of a device's front slots now. */
static void
front_sum(clio_dev *d, struct dev_stat_acc *sum)
{
	int i;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i <= DEV_FRONT_SLOTS; i++) {
		struct dev_front_slot *s =
			atomic_load_explicit(&d->front[i], memory_order_acquire);
		if (s != NULL)
			acc_merge(sum, &s->acc);
	}
}

/* A zeroed slot; NULL if out of memory. */
static struct dev_front_slot *
front_slot_new(void)
{
	struct dev_front_slot *s = aligned_alloc(CACHE_LINE, sizeof(*s));

	if (s != NULL)
		memset(s, 0, sizeof(*s));
	return s;
}

/* This thread's slot of d (invariant 7), allocated at its first use;
 * the shared one if that fails. */
static struct dev_front_slot *
front_slot_of(clio_dev *d, unsigned id)
{
	struct dev_front_slot *s =
		atomic_load_explicit(&d->front[id], memory_order_acquire), *none = NULL;

	if (s != NULL || id == DEV_FRONT_SLOTS)
		return s;
	if ((s = front_slot_new()) == NULL)
		return d->front[DEV_FRONT_SLOTS];
	if (!atomic_compare_exchange_strong_explicit(&d->front[id], &none, s,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		free(s);
		s = none;
	}
	return s;
}

/* Invariant 7: the slot this thread owns (DEV_FRONT_SLOTS: none, it
 * shares the last one).  The claims are one bit a slot, process-wide. */
static _Thread_local unsigned front_slot_id = UINT_MAX;
static atomic_uint front_slots_taken;
static pthread_key_t front_slot_key;
static pthread_once_t front_slot_once = PTHREAD_ONCE_INIT;

_Static_assert(DEV_FRONT_SLOTS <= 32, "one bit a slot in front_slots_taken");

/* A thread that ends gives its slot back; the counts stay in it. */
static void
front_slot_release(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg - 1;

	atomic_fetch_and_explicit(&front_slots_taken, ~(1u << id), memory_order_release);
}

static void
front_slot_key_make(void)
{
	pthread_key_create(&front_slot_key, front_slot_release);
}

static unsigned
front_slot_claim(void)
{
	unsigned taken = atomic_load_explicit(&front_slots_taken, memory_order_relaxed);

	pthread_once(&front_slot_once, front_slot_key_make);
	while (taken != (1u << DEV_FRONT_SLOTS) - 1) {
		unsigned id = (unsigned)__builtin_ctz(~taken);
		if (atomic_compare_exchange_weak_explicit(&front_slots_taken, &taken,
							  taken | (1u << id),
							  memory_order_acquire,
							  memory_order_relaxed)) {
			if (pthread_setspecific(front_slot_key, (void *)(uintptr_t)(id + 1)) != 0) {
				front_slot_release((void *)(uintptr_t)(id + 1));
				break;
			}
			return id;
		}
	}
	return DEV_FRONT_SLOTS;
}

void
dev_account_front(clio_dev *d, enum clio_op op, size_t len, double lat)
{
	struct dev_front_slot *s;

	if (front_slot_id == UINT_MAX)
		front_slot_id = front_slot_claim();
	s = front_slot_of(d, front_slot_id);
	if (s != d->front[DEV_FRONT_SLOTS]) {
		acc_add(&s->acc, op, len, lat, 0);
		relaxed_add_double(&s->acc.s.busy_s, lat);
		return;
	}
	pthread_mutex_lock(&s->lock);
	acc_add(&s->acc, op, len, lat, 0);
	relaxed_add_double(&s->acc.s.busy_s, lat);
	pthread_mutex_unlock(&s->lock);
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
	struct dev_stat_acc sum;

	if (st == NULL)
		return;
	if (d == NULL) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&d->lock);
	front_sum(d, &sum);
	acc_sub(&sum, d->front_base);
	export_acc(&sum, &st->front);
	export_acc(d->back, &st->back);
	if (!d->is_virtual && d->busy > 0)
		st->back.busy_s += now_monotonic() - d->busy_since;
	pthread_mutex_unlock(&d->lock);
}

void
clio_dev_stats_reset(clio_dev *d)
{
	if (d == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	front_sum(d, d->front_base);
	memset(d->back, 0, sizeof(*d->back));
	if (d->busy > 0)
		d->busy_since = now_monotonic();
	pthread_mutex_unlock(&d->lock);
}


/* ------------------------------------------------------------ the pool */

/*
 * One worker pool for the process: the blocking io() of every device
 * (and pieces that async backends defer) runs on it.  Devices register
 * the threads they may keep busy; the pool starts one thread, grows on
 * demand (a piece queued while no worker waits) up to their sum, at most
 * POOL_MAX, and stops when the last device leaves.  So opening many
 * devices that are seldom busy (a mount's small files) starts no thread.
 */
static struct {
	pthread_mutex_t lock;	/* the queue, `queued`, `idle`, `stopping` */
	pthread_cond_t cv;
	struct dev_piece *head, *tail;
	int queued, idle;	/* pieces waiting; workers waiting for one */
	bool stopping;
	pthread_mutex_t admin;	/* registration: threads, want, users */
	pthread_t threads[POOL_MAX];
	int nthreads, want, users;
} pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL,
	   0, 0, false, PTHREAD_MUTEX_INITIALIZER, { 0 }, 0, 0, 0 };

static void run_pooled(struct dev_piece *p);

static void *
pool_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		struct dev_piece *p;

		pool.idle++;
		while (pool.head == NULL && !pool.stopping)
			pthread_cond_wait(&pool.cv, &pool.lock);
		pool.idle--;
		if (pool.head == NULL)
			break;
		p = pool.head;
		pool.head = p->next;
		if (pool.head == NULL)
			pool.tail = NULL;
		pool.queued--;
		pthread_mutex_unlock(&pool.lock);
		run_pooled(p);
		pthread_mutex_lock(&pool.lock);
	}
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

static void
pool_push(struct dev_piece *p)
{
	bool grow;

	p->next = NULL;
	pthread_mutex_lock(&pool.lock);
	if (pool.tail != NULL)
		pool.tail->next = p;
	else
		pool.head = p;
	pool.tail = p;
	grow = ++pool.queued > pool.idle;
	pthread_cond_signal(&pool.cv); /* one worker per piece */
	pthread_mutex_unlock(&pool.lock);
	/* no worker free for it: one more, unless (un)registration runs */
	if (grow && pthread_mutex_trylock(&pool.admin) == 0) {
		if (pool.nthreads < MIN(pool.want, POOL_MAX) &&
		    pthread_create(&pool.threads[pool.nthreads], NULL, pool_main,
				   NULL) == 0)
			pool.nthreads++;
		pthread_mutex_unlock(&pool.admin);
	}
}

static int
pool_register(int threads)
{
	int r = 0;

	pthread_mutex_lock(&pool.admin);
	pool.users++;
	pool.want += threads;
	if (pool.nthreads == 0 &&
	    pthread_create(&pool.threads[0], NULL, pool_main, NULL) == 0)
		pool.nthreads = 1; /* the others when pieces wait for them */
	if (pool.nthreads == 0) {
		pool.users--;
		pool.want -= threads;
		r = -EAGAIN;
	}
	pthread_mutex_unlock(&pool.admin);
	return r;
}

static void
pool_unregister(int threads)
{
	int i;

	pthread_mutex_lock(&pool.admin);
	pool.want -= threads;
	if (--pool.users == 0) {
		pthread_mutex_lock(&pool.lock);
		pool.stopping = true;
		pthread_cond_broadcast(&pool.cv);
		pthread_mutex_unlock(&pool.lock);
		for (i = 0; i < pool.nthreads; i++)
			pthread_join(pool.threads[i], NULL);
		pool.nthreads = 0;
		pthread_mutex_lock(&pool.lock);
		pool.stopping = false;
		pthread_mutex_unlock(&pool.lock);
	}
	pthread_mutex_unlock(&pool.admin);
}

/* The threads a device may keep busy on the pool. */
static int
pool_share(const clio_dev *d)
{
	return d->ops->submit != NULL ? 2 : (int)MAX(1u, d->queue_depth);
}

/* ------------------------------------------------------------ pieces */

static int
piece_reserve(struct dev_piece *p, int n)
{
	struct iovec *v;

	if (n <= p->veccap)
		return 0;
	v = realloc(p->vec, (size_t)n * sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	p->vec = v;
	p->veccap = n;
	return 0;
}

/* The bytes of [skip, ...) that at most `max` iovecs and `len` bytes hold. */
static size_t
piece_extent(const struct iovec *iov, int iovcnt, size_t skip, size_t len,
	     int max)
{
	size_t take = 0;
	int i, n = 0;

	for (i = 0; i < iovcnt && take < len && n < max; i++) {
		size_t l = iov[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		take += MIN(l - skip, len - take);
		skip = 0;
		n++;
	}
	return take;
}

/* Account the start of a backend call. */
static void
call_begin(clio_dev *d, struct dev_piece *p)
{
	p->begun = true;
	if (d->is_virtual)
		return;
	pthread_mutex_lock(&d->lock);
	if (d->busy++ == 0)
		d->busy_since = now_monotonic();
	pthread_mutex_unlock(&d->lock);
}

/* Call the request back; the last touch of d (invariant 6). */
static void
req_complete(clio_dev *d, struct clio_req *req)
{
	struct req_state *st = req_state(req);

	if (st->result < 0)
		req->result = st->result;
	else if (req->op == CLIO_OP_FLUSH)
		req->result = 0;
	else
		req->result = (ssize_t)iov_length(req->iov, req->iovcnt);
	req->t_done = st->t_done;
	req->done(req);
	pthread_mutex_lock(&d->lock);
	if (--d->outstanding == 0)
		pthread_cond_broadcast(&d->idle_cv);
	pthread_mutex_unlock(&d->lock);
}

/*
 * The end of one backend call on p with result r (invariants 1 and 3).
 * Returns true when the rest of the piece must be issued again (p keeps
 * its slot).  Otherwise the piece is finished and freed; with a slot, the
 * slot goes to the first pending piece, returned in *next; if the piece
 * was its request's last, the request is returned in *done.
 */
static bool
attempt_done(clio_dev *d, struct dev_piece *p, ssize_t r, bool slot,
	     struct dev_piece **next, struct clio_req **done)
{
	struct dev_io *io = &p->io;
	enum clio_op op = io->op;
	size_t moved = r > 0 ? (size_t)r : 0;
	uint64_t end = io->off + moved;
	double t_submit = io->t_submit, t_start = io->t_start;
	double t_done = io->t_done, t1 = d->is_virtual ? 0 : now_monotonic();
	struct clio_req *req = p->req;
	bool again = false;

	*next = NULL;
	*done = NULL;
	p->begun = false;
	if (r < 0) {
		p->result = r;
	} else if (op == CLIO_OP_FLUSH) {
		/* nothing to move */
	} else if (r == 0) {
		if (op == CLIO_OP_READ)
			iov_memset(io->iov, io->iovcnt, 0, 0, io->len);
		else
			p->result = -EIO;
	} else if (moved < io->len) {
		/* the rest, in the piece's own iovecs (in place if already) */
		int n = io->iovcnt;

		if (io->iov == p->vec || piece_reserve(p, n) == 0) {
			io->iovcnt = iov_slice(io->iov, n, moved, io->len - moved,
					       p->vec, n);
			io->iov = p->vec;
			io->off += moved;
			io->len -= moved;
			io->t_submit = t_done; /* a retry is issued then */
			again = true;
		} else {
			p->result = -ENOMEM;
		}
	}

	pthread_mutex_lock(&d->lock);
	if (d->is_virtual) {
		d->back->s.busy_s += MAX(0.0, t_done - t_start);
		acc_add(d->back, op, moved, t_done - t_submit, r < 0);
	} else {
		if (--d->busy == 0)
			d->back->s.busy_s += t1 - d->busy_since;
		acc_add(d->back, op, moved, t1 - p->t_queued, r < 0);
	}
	if (op == CLIO_OP_WRITE && d->ops->resize != NULL && moved > 0 &&
	    end > d->size)
		d->size = end; /* a write that moved nothing grew nothing */
	if (again) {
		pthread_mutex_unlock(&d->lock);
		return true;
	}
	{
		struct req_state *st = req_state(req);
		if (p->result < 0 && st->result == 0)
			st->result = p->result;
		if (t_done > st->t_done)
			st->t_done = t_done;
	}
	if (slot) {
		if (d->pend_head != NULL) {
			*next = d->pend_head;
			d->pend_head = (*next)->next;
			if (d->pend_head == NULL)
				d->pend_tail = NULL;
		} else {
			d->inflight--;
		}
	}
	p->next = d->free_pieces;
	d->free_pieces = p;
	if (--req_state(req)->left == 0)
		*done = req;
	DEV_CHECK(d);
	pthread_mutex_unlock(&d->lock);
	return false;
}

/* Hand a piece that holds a slot to the backend (invariant 1).  Touches
 * neither d nor p once the backend has them. */
static void
piece_issue(clio_dev *d, struct dev_piece *p)
{
	if (d->ops->submit != NULL && !p->deferred) {
		call_begin(d, p);
		d->ops->submit(d, &p->io);
	} else {
		pool_push(p);
	}
}

static void
run_inline(clio_dev *d, struct dev_piece *p)
{
	struct dev_piece *next;
	struct clio_req *done;
	ssize_t r;

	do {
		call_begin(d, p);
		r = d->ops->io(d, &p->io);
	} while (attempt_done(d, p, r, false, &next, &done));
	if (done != NULL)
		req_complete(d, done);
}

static void
run_pooled(struct dev_piece *p)
{
	clio_dev *d = p->d;
	struct dev_piece *next;
	struct clio_req *done;
	ssize_t r;

	do {
		if (!p->begun)
			call_begin(d, p);
		r = d->ops->io(d, &p->io);
	} while (attempt_done(d, p, r, true, &next, &done));
	if (next != NULL)
		piece_issue(d, next);
	if (done != NULL)
		req_complete(d, done);
}

void
dev_piece_done(struct dev_io *io, ssize_t result)
{
	struct dev_piece *p = piece_of(io), *next;
	clio_dev *d = p->d;
	struct clio_req *done;
	bool was = in_async_completion;

	in_async_completion = true;
	if (attempt_done(d, p, result, true, &next, &done)) {
		piece_issue(d, p);
	} else {
		if (next != NULL)
			piece_issue(d, next);
		if (done != NULL)
			req_complete(d, done);
	}
	in_async_completion = was;
}

void
dev_piece_defer(struct dev_io *io)
{
	struct dev_piece *p = piece_of(io);

	p->deferred = true;
	pool_push(p);
}

/* Start a piece (invariant 4). */
static void
piece_start(clio_dev *d, struct dev_piece *p)
{
	bool has_io = d->ops->io != NULL;

	/* dev.h rule 5; and a completion thread that waited on its own
	 * ring would wait for ever: its synchronous flushes run here too */
	if (d->ops->submit == NULL
		    ? !d->blocking || p->sync
		    : has_io && p->sync &&
			      (p->io.op != CLIO_OP_FLUSH || in_async_completion)) {
		run_inline(d, p);
		return;
	}
	pthread_mutex_lock(&d->lock);
	if (d->inflight >= MAX(1u, d->queue_depth)) {
		p->next = NULL;
		if (d->pend_tail != NULL)
			d->pend_tail->next = p;
		else
			d->pend_head = p;
		d->pend_tail = p;
		pthread_mutex_unlock(&d->lock);
		return;
	}
	if (++d->inflight > d->inflight_peak)
		d->inflight_peak = d->inflight;
	DEV_CHECK(d);
	pthread_mutex_unlock(&d->lock);
	piece_issue(d, p);
}

/* ------------------------------------------------------------ submission */

int
clio_dev_submit(clio_dev *d, struct clio_req *req)
{
	if (d == NULL || req == NULL || req->done == NULL)
		return -EINVAL;

	struct req_state *st = req_state(req);
	bool flush = req->op == CLIO_OP_FLUSH;
	bool badiov = !flush && (req->iovcnt < 0 ||
				 (req->iovcnt > 0 && req->iov == NULL));
	size_t len = flush || badiov ? 0 : iov_length(req->iov, req->iovcnt);
	size_t maxio = d->maxio ? d->maxio : SIZE_MAX;
	bool whole = flush || (len <= maxio && req->iovcnt <= DEV_IOV_MAX);
	double t_submit = d->is_virtual ? vclock_now() : 0.0;
	double t_queued = now_monotonic();
	struct dev_piece *list = NULL, **tail = &list, *p;
	size_t skip = 0;
	int r = 0;

	if (!flush && req->op != CLIO_OP_READ && req->op != CLIO_OP_WRITE)
		return -EINVAL;
	if (req->op == CLIO_OP_WRITE && d->readonly)
		return -EROFS;
	if (badiov)
		return -EINVAL;
	for (int i = 0; !flush && i < req->iovcnt; i++)
		if (req->iov[i].iov_base == NULL && req->iov[i].iov_len > 0)
			return -EINVAL;
	/* as for the system calls: the lengths add up to SSIZE_MAX at most */
	if (!flush && len > (size_t)SSIZE_MAX)
		return -EINVAL;
	/* offsets and sizes stay at or below INT64_MAX (an off_t's range) */
	if (!flush && (req->offset > (uint64_t)INT64_MAX ||
		       len > (uint64_t)INT64_MAX - req->offset))
		return req->op == CLIO_OP_WRITE ? -EFBIG : -EINVAL;
	/* a device that refuses unaligned transfers gets none: an offset
	 * and a length in whole sectors, but for a last piece at its end */
	if (!flush && d->aligned_only &&
	    (req->offset % d->sector != 0 ||
	     (len % d->sector != 0 && req->offset + len != clio_dev_size(d))))
		return -EINVAL;
	if (!(req->flags & DEV_REQ_TIER)) {
		struct tier *t = __atomic_load_n(&d->tier, __ATOMIC_ACQUIRE);
		if (t != NULL)
			return tier_submit(t, d, req);
	}

	/* the pieces, all before any starts: a shortage fails the request
	 * with nothing done and no callback */
	pthread_mutex_lock(&d->lock);
	if (!flush && d->ops->resize == NULL &&
	    (req->offset > d->size || len > d->size - req->offset)) {
		pthread_mutex_unlock(&d->lock);
		return req->op == CLIO_OP_WRITE ? -ENOSPC : -EINVAL;
	}
	if (req->op == CLIO_OP_WRITE && d->max_size != 0 &&
	    (req->offset > d->max_size || len > d->max_size - req->offset)) {
		pthread_mutex_unlock(&d->lock);
		return -EFBIG;
	}
	while (flush || skip < len) { /* a transfer of 0 bytes has none */
		size_t plen = whole ? len
				    : piece_extent(req->iov, req->iovcnt, skip,
						   MIN(maxio, len - skip),
						   DEV_IOV_MAX);
		p = d->free_pieces;
		if (p != NULL)
			d->free_pieces = p->next;
		else if ((p = calloc(1, sizeof(*p))) == NULL)
			r = -ENOMEM;
		if (p != NULL && !whole) {
			int n = MIN(req->iovcnt, DEV_IOV_MAX);
			if (piece_reserve(p, n) < 0)
				r = -ENOMEM;
			else
				p->io.iovcnt = iov_slice(req->iov, req->iovcnt,
							 skip, plen, p->vec, n);
			p->io.iov = p->vec;
		} else if (p != NULL) {
			p->io.iov = flush ? NULL : req->iov;
			p->io.iovcnt = flush ? 0 : req->iovcnt;
		}
		if (p != NULL) {
			p->next = NULL;
			*tail = p;
			tail = &p->next;
		}
		if (r < 0)
			break;
		p->d = d;
		p->req = req;
		p->result = 0;
		p->t_queued = t_queued;
		p->sync = (req->flags & CLIO_REQ_SYNC) != 0;
		p->deferred = p->begun = false;
		p->io.op = req->op;
		p->io.off = req->offset + skip;
		p->io.len = plen;
		p->io.t_submit = t_submit;
		p->io.t_start = p->io.t_done = t_submit;
		skip += plen;
		if (flush)
			break;
	}
	if (r < 0) {
		*tail = d->free_pieces;
		d->free_pieces = list;
		pthread_mutex_unlock(&d->lock);
		return r;
	}
	st->left = 0;
	st->result = 0;
	st->t_done = 0;
	for (p = list; p != NULL; p = p->next)
		st->left++;
	d->outstanding++;
	pthread_mutex_unlock(&d->lock);

	if (list == NULL) { /* nothing to move */
		req_complete(d, req);
		return 0;
	}
	/* the last piece to finish calls back: from here on, neither req
	 * nor a started piece is ours */
	while (list != NULL) {
		p = list;
		list = p->next;
		piece_start(d, p);
	}
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

/* A trim or a zeroing: d writable, [off, off+len) inside it. */
static int
range_check(clio_dev *d, uint64_t off, uint64_t len)
{
	uint64_t size;

	if (d == NULL)
		return -EINVAL;
	if (d->readonly)
		return -EROFS;
	size = clio_dev_size(d);
	return off > size || len > size - off ? -EINVAL : 0;
}

int
clio_dev_discard(clio_dev *d, uint64_t off, uint64_t len)
{
	int r = range_check(d, off, len);

	if (r < 0)
		return r;
	/* a disk tier would keep what the device lost: no trim under it */
	if (d->ops->discard == NULL || __atomic_load_n(&d->tier, __ATOMIC_ACQUIRE) != NULL)
		return -ENOTSUP;
	return d->ops->discard(d, off, len, false); /* len 0: whether it can */
}

#define ZERO_CHUNK (1u << 20)

int
clio_dev_write_zeroes(clio_dev *d, uint64_t off, uint64_t len)
{
	static const char zeros[4096];
	struct iovec iov[ZERO_CHUNK / sizeof(zeros)];
	uint64_t done = 0;
	int r = range_check(d, off, len), i;

	if (r < 0 || len == 0)
		return r;
	if (d->ops->discard != NULL && __atomic_load_n(&d->tier, __ATOMIC_ACQUIRE) == NULL &&
	    (r = d->ops->discard(d, off, len, true)) != -ENOTSUP)
		return r;
	/* written, through the tier if there is one */
	for (i = 0; i < (int)(sizeof(iov) / sizeof(iov[0])); i++)
		iov[i] = (struct iovec){ (void *)zeros, sizeof(zeros) };
	while (done < len) {
		uint64_t n = MIN((uint64_t)ZERO_CHUNK, len - done);
		int cnt = (int)((n + sizeof(zeros) - 1) / sizeof(zeros));
		ssize_t w;

		iov[cnt - 1].iov_len = n - (uint64_t)(cnt - 1) * sizeof(zeros);
		w = clio_dev_pwritev(d, iov, cnt, off + done);
		iov[cnt - 1].iov_len = sizeof(zeros);
		if (w < 0)
			return (int)w;
		done += n;
	}
	return 0;
}

int
clio_dev_resize(clio_dev *d, uint64_t size)
{
	int r;

	if (d == NULL)
		return -EINVAL;
	if (d->ops->resize == NULL)
		return -ENOTSUP;
	if (d->readonly)
		return -EROFS;
	if (size > (uint64_t)INT64_MAX || (d->max_size != 0 && size > d->max_size))
		return -EFBIG;
	r = tier_resize(d, size, true);
	if (r == 0)
		r = d->ops->resize(d, size);
	if (r == 0)
		tier_resize(d, size, false);
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
	d->back = calloc(1, sizeof(*d->back));
	d->front_base = calloc(1, sizeof(*d->front_base));
	d->front = calloc(DEV_FRONT_SLOTS + 1, sizeof(*d->front));
	if (d->front != NULL)
		d->front[DEV_FRONT_SLOTS] = front_slot_new();
	if (d->name == NULL || d->front == NULL || d->back == NULL ||
	    d->front_base == NULL || d->front[DEV_FRONT_SLOTS] == NULL) {
		free(d->name);
		if (d->front != NULL)
			free(d->front[DEV_FRONT_SLOTS]);
		free(d->front);
		free(d->back);
		free(d->front_base);
		free(d);
		return -ENOMEM;
	}
	pthread_mutex_init(&d->front[DEV_FRONT_SLOTS]->lock, NULL);
	d->sector = 512;
	d->queue_depth = 1;
	strcpy(d->engine, "inline");
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->idle_cv, NULL);
	*dp = d;
	return 0;
}

void
dev_free(clio_dev *d)
{
	while (d->free_pieces != NULL) {
		struct dev_piece *p = d->free_pieces;
		d->free_pieces = p->next;
		free(p->vec);
		free(p);
	}
	pthread_mutex_destroy(&d->front[DEV_FRONT_SLOTS]->lock);
	for (int i = 0; i <= DEV_FRONT_SLOTS; i++)
		free(d->front[i]);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->idle_cv);
	free(d->name);
	free(d->front);
	free(d->back);
	free(d->front_base);
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
	if (has_prefix(spec, "nbd:") || has_prefix(spec, "nbd+unix:") ||
	    has_prefix(spec, "nbds:") || has_prefix(spec, "nbds+unix:")) {
		if (dev_nbd_open == NULL) {
			set_err(err, errlen, "nbd device '%s': this program has libclio's "
				"static library, which has no NBD backend (link libclio.so)",
				spec);
			return -ENOTSUP;
		}
		return dev_nbd_open(spec, flags, dp, err, errlen);
	}
	if (has_prefix(spec, "nfs+sim:")) {
		if (dev_nfssim_open == NULL) {
			set_err(err, errlen, "nfs+sim device '%s': this program has libclio's "
				"static library, which has no NFS engine (link libclio.so)",
				spec);
			return -ENOTSUP;
		}
		return dev_nfssim_open(spec, flags, dp, err, errlen);
	}
	if (has_prefix(spec, "nfs:")) {
		if (dev_nfs_open == NULL) {
			set_err(err, errlen, "nfs device '%s': this program has libclio's "
				"static library, which has no NFS backend (link libclio.so)",
				spec);
			return -ENOTSUP;
		}
		return dev_nfs_open(spec, flags, dp, err, errlen);
	}
	if (has_prefix(spec, "rbd:")) {
		if (dev_rbd_open == NULL) {
			set_err(err, errlen, "rbd device '%s': this program has libclio's "
				"static library, which has no RBD backend (link libclio.so)",
				spec);
			return -ENOTSUP;
		}
		return dev_rbd_open(spec, flags, dp, err, errlen);
	}
	if (strcmp(spec, "mem") == 0)
		return dev_mem_open("", flags, dp, err, errlen);
	if (strcmp(spec, "sim") == 0)
		return dev_sim_open("", flags, dp, err, errlen);
	if (has_prefix(spec, "fault:")) {
		const char *at = strchr(spec, '@'), *s = spec;
		char *opts;
		int r, depth = 0;

		if (at == NULL || at[1] == '\0') {
			set_err(err, errlen,
				"fault device '%s' lacks '@INNER'", spec);
			return -EINVAL;
		}
		/* each level opens the next recursively and names itself
		 * with all below it: a bound keeps both small */
		while (!(flags & DEV_OPEN_INNER) && has_prefix(s, "fault:") &&
		       (s = strchr(s, '@')) != NULL) {
			s++;
			if (++depth > FAULT_NEST_MAX) {
				set_err(err, errlen, "more than %d fault: devices "
					"nested", FAULT_NEST_MAX);
				return -EINVAL;
			}
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

/* A device just opened joins the worker pool if it needs it; on failure
 * it is closed. */
static int
dev_start(clio_dev *d)
{
	int r;

	if (d->blocking || d->ops->submit != NULL) {
		r = pool_register(pool_share(d));
		if (r < 0) {
			d->ops->close(d);
			return r;
		}
		d->uses_pool = true;
	}
	return 0;
}

/* Whether d, or the device a fault: wrapper puts it over, is one that
 * creates its file (file, nfs): they alone take CLIO_DEV_EXCL. */
static bool
dev_makes_files(clio_dev *d)
{
	while (strcmp(d->ops->scheme, "fault") == 0)
		d = dev_fault_inner(d);
	return strcmp(d->ops->scheme, "file") == 0 || strcmp(d->ops->scheme, "nfs") == 0;
}

int
clio_dev_open_err(const char *spec, int flags, clio_dev **devp, char *errbuf,
		  size_t errlen)
{
	clio_dev *d = NULL;
	int r;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (spec == NULL || devp == NULL) {
		set_err(errbuf, errlen, "no %s (NULL)", spec == NULL ? "device string" : "devp");
		return -EINVAL;
	}
	if ((flags & ~(CLIO_DEV_RDONLY | CLIO_DEV_CREATE | CLIO_DEV_EXCL)) ||
	    ((flags & CLIO_DEV_EXCL) && !(flags & CLIO_DEV_CREATE))) {
		set_err(errbuf, errlen, "%s: invalid flags 0x%x", spec, (unsigned)flags);
		return -EINVAL;
	}
	r = dev_open_spec(spec, flags, &d, errbuf, errlen);
	if (r < 0)
		return r;
	if ((flags & CLIO_DEV_EXCL) && !dev_makes_files(d)) {
		/* only a file and an NFS file are created: any other device
		 * exists already, as /dev/null does for open(O_EXCL) */
		d->ops->close(d);
		set_err(errbuf, errlen, "%s: %s", spec, strerror(EEXIST));
		return -EEXIST;
	}
	if (flags & CLIO_DEV_RDONLY)
		d->readonly = true;
	r = dev_start(d);
	if (r < 0) {
		set_err(errbuf, errlen, "%s: cannot start worker threads", spec);
		return r;
	}
	*devp = d;
	return 0;
}

int
clio_dev_open_callbacks(const char *name, uint64_t size, uint32_t sector,
			uint32_t maxio, const struct clio_dev_callbacks *cb,
			void *arg, uint32_t queue_depth, clio_dev **devp)
{
	clio_dev *d = NULL;
	int r;

	if (devp == NULL)
		return -EINVAL;
	r = dev_callback_open(name, size, sector, maxio, cb, arg, queue_depth, &d);
	if (r < 0)
		return r;
	r = dev_start(d);
	if (r < 0)
		return r;
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
	bool uses_pool;
	int share;

	if (d == NULL)
		return 0;
	if (atomic_load(&d->objects) > 0)
		return -EBUSY; /* a handle open, or an object kept */
	int r = tier_detach(d);
	pthread_mutex_lock(&d->lock);
	while (d->outstanding > 0)
		pthread_cond_wait(&d->idle_cv, &d->lock);
	pthread_mutex_unlock(&d->lock);
	if (d->tier_bypass > 0) /* its writes are done: the holder may see them */
		close(d->tier_bypass - 1);
	uses_pool = d->uses_pool;
	share = pool_share(d);
	d->ops->close(d); /* frees d through dev_free */
	if (uses_pool)
		pool_unregister(share);
	return r;
}

const char *
clio_dev_name(const clio_dev *d)
{
	return d != NULL ? d->name : NULL;
}

uint64_t
clio_dev_size(const clio_dev *d)
{
	uint64_t s;

	if (d == NULL)
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&d->lock);
	s = d->size;
	pthread_mutex_unlock((pthread_mutex_t *)&d->lock);
	return s;
}

bool
dev_takes_blocks(const clio_dev *d, uint32_t bsize)
{
	return !d->aligned_only || bsize >= d->sector;
}

uint32_t
clio_dev_sector_size(const clio_dev *d)
{
	return d != NULL ? d->sector : 0;
}

uint32_t
clio_dev_maxio(const clio_dev *d)
{
	return d != NULL ? d->maxio : 0;
}

int
clio_dev_is_virtual(const clio_dev *d)
{
	return d != NULL && d->is_virtual;
}

int
clio_dev_version(clio_dev *d, struct clio_validator *v)
{
	if (d == NULL || v == NULL)
		return -EINVAL;
	if (d->ops->version == NULL)
		return -ENOTSUP;
	return d->ops->version(d, v);
}

/* ------------------------------------------------------------ description */

struct dev_params {
	char *buf;
	size_t len, used;	/* used may pass len: the length wanted */
	const char *prefix;
};

void
dev_param(struct dev_params *o, const char *key, const char *fmt, ...)
{
	char val[256];
	va_list ap;
	size_t room = o->used < o->len ? o->len - o->used : 0;
	int n;

	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	n = snprintf(room ? o->buf + o->used : NULL, room, "%s%s=%s\n",
		     o->prefix, key, val);
	if (n > 0)
		o->used += (size_t)n;
}

void
dev_params_of(clio_dev *inner, const char *prefix, struct dev_params *o)
{
	const char *saved = o->prefix;
	char pre[64];

	snprintf(pre, sizeof(pre), "%s%s", saved, prefix);
	o->prefix = pre;
	if (inner->ops->params != NULL)
		inner->ops->params(inner, o);
	o->prefix = saved;
}

int
clio_dev_params(clio_dev *d, char *buf, size_t len)
{
	struct dev_params o = { buf, len, 0, "" };

	if (d == NULL || (buf == NULL && len > 0))
		return -EINVAL;
	if (len > 0)
		buf[0] = '\0';
	if (d->ops->params != NULL)
		d->ops->params(d, &o);
	if (d->tier != NULL)
		tier_params(d->tier, &o);
	if (o.used > INT_MAX)
		return -EOVERFLOW;
	return (int)o.used;
}

int
clio_dev_info(clio_dev *d, struct clio_dev_info *info)
{
	if (d == NULL || info == NULL)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	pthread_mutex_lock(&d->lock);
	info->size = d->size;
	info->inflight_peak = d->inflight_peak;
	pthread_mutex_unlock(&d->lock);
	info->sector = d->sector;
	info->maxio = d->maxio;
	info->queue_depth = d->queue_depth;
	info->is_virtual = d->is_virtual;
	info->readonly = d->readonly;
	info->resizable = d->ops->resize != NULL;
	snprintf(info->type, sizeof(info->type), "%s", d->ops->scheme);
	snprintf(info->engine, sizeof(info->engine), "%s", d->engine);
	return 0;
}
