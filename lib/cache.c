/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache.c - the buffer cache: buffers of bsize bytes found by (object,
 * logical block), their states, replacement, dirty accounting, write-back
 * with neighbour gathering, writer throttling and the flusher thread.
 *
 * Locking: one mutex, c->lock, guards every field of the cache, of its
 * objects and of its buffers, and the data of every buffer that is not
 * under I/O.  It is never held across a device submission: bio_submit()
 * drops it, so completions (which take it) may run inline.  One more
 * exception: a reader that holds a valid buffer may copy out of its data
 * without the lock between buf_read_begin() and buf_read_end(); whoever
 * changes a buffer's data first waits for its readers
 * (buf_wait_readers()), so data is only ever read, never written, while
 * the lock is not held.  A reader may hold several buffers this way
 * (clio_pread copies out a run of them per lock hold, clio_pread_view
 * lends the run to its caller), but it waits for nothing while it does:
 * whoever waits for its readers may hold what it would wait for.
 * Threads wait on c->cv, broadcast on every state change.
 * Lock order: c->lock before a device's lock.
 *
 * Buffer states and the functions behind each transition:
 *
 *   FREE --getblk--> INVAL --bio_submit(READ)--> READING --bio_done--> CLEAN
 *                      |  \                         |
 *                      |   `--(whole write)--.      `--(error)--> FREE
 *                      |                     v
 *                      `--buf_discard--> FREE  DIRTY <--buf_mark_dirty-- CLEAN
 *                                            |  ^
 *                         flush_buf/bio_submit  |  bio_done (error: BF_WERR)
 *                                            v  |
 *                                          WRITING --bio_done--> CLEAN
 *   CLEAN/INVAL (hold 0) --alloc_buf (CLOCK eviction)--> reused
 *
 * Invariants (checked by cache_invariants() in CLIO_DEBUG builds):
 *  1. A buffer is in the hash iff its state is not FREE; on the free list
 *     iff it is FREE and unheld.
 *  2. A buffer is on the dirty list iff it is DIRTY; ndirty counts them,
 *     nwerr those with BF_WERR, and each object's o_ndirty its own.
 *  3. A DIRTY or WRITING buffer is never evicted or reused: only CLEAN or
 *     INVAL buffers with no holder are.  A dirty buffer leaves the cache
 *     only by a successful write, a truncate past it, or a recorded loss
 *     at the last close after a failed write-back.
 *  4. nio counts READING and WRITING buffers; o_nio those of the object.
 *  5. nvalid counts CLEAN, DIRTY and WRITING buffers.
 *  6. At most one buffer per (object, block).
 *  7. On the virtual clock, using a buffer first advances the clock to the
 *     completion of its last I/O (b_ready): the caller waited for it.
 *  8. 0 <= b_readers <= b_hold: a reader holds its buffer, which is
 *     therefore never reused while it copies.
 *  9. At most one background flush per object is in flight (o_flushing);
 *     obj_wait_io() waits for it as for the object's buffers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cache.h"

/* ------------------------------------------------------------ hash */

static uint32_t
hash_of(const clio_cache *c, const struct cobj *o, uint64_t lbn)
{
	uint64_t h = (uint64_t)(uintptr_t)o * 0x9e3779b97f4a7c15ull;

	h ^= lbn * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	return (uint32_t)h & c->hmask;
}

struct buf *
buf_lookup(clio_cache *c, struct cobj *o, uint64_t lbn)
{
	struct buf *b;

	for (b = c->hash[hash_of(c, o, lbn)]; b != NULL; b = b->b_hnext)
		if (b->b_obj == o && b->b_lbn == lbn)
			return b;
	return NULL;
}

static void
hash_insert(clio_cache *c, struct buf *b)
{
	uint32_t h = hash_of(c, b->b_obj, b->b_lbn);

	b->b_hnext = c->hash[h];
	c->hash[h] = b;
}

static void
hash_remove(clio_cache *c, struct buf *b)
{
	struct buf **pp = &c->hash[hash_of(c, b->b_obj, b->b_lbn)];

	while (*pp != b)
		pp = &(*pp)->b_hnext;
	*pp = b->b_hnext;
	b->b_hnext = NULL;
}

/* ------------------------------------------------------------ dirty list */

static void
dirty_append(clio_cache *c, struct buf *b)
{
	b->b_dnext = NULL;
	b->b_dprev = c->dirty_tail;
	if (c->dirty_tail != NULL)
		c->dirty_tail->b_dnext = b;
	else
		c->dirty_head = b;
	c->dirty_tail = b;
	c->ndirty++;
	b->b_obj->o_ndirty++;
	if (b->b_flags & BF_WERR)
		c->nwerr++;
}

static void
dirty_remove(clio_cache *c, struct buf *b)
{
	if (b->b_dprev != NULL)
		b->b_dprev->b_dnext = b->b_dnext;
	else
		c->dirty_head = b->b_dnext;
	if (b->b_dnext != NULL)
		b->b_dnext->b_dprev = b->b_dprev;
	else
		c->dirty_tail = b->b_dprev;
	b->b_dprev = b->b_dnext = NULL;
	c->ndirty--;
	b->b_obj->o_ndirty--;
	if (b->b_flags & BF_WERR)
		c->nwerr--;
}

void
buf_mark_dirty(clio_cache *c, struct buf *b)
{
	if (b->b_state == B_DIRTY)
		return;
	if (b->b_state != B_CLEAN)
		c->nvalid++;
	b->b_state = B_DIRTY;
	b->b_dirtied = now_monotonic();
	b->b_flags &= ~(BF_RA | BF_RAM);
	dirty_append(c, b);
}

/* ------------------------------------------------------------ buffers */

void
buf_touch(clio_cache *c, struct buf *b)
{
	(void)c;
	if (b->b_obj->o_dev->is_virtual)
		vclock_advance_to(b->b_ready);
}

/* Wait until b changes state (the lock is released meanwhile). */
void
buf_wait(clio_cache *c, struct buf *b)
{
	enum buf_state s = b->b_state;

	b->b_hold++;
	while (b->b_state == s && (s == B_READING || s == B_WRITING ||
				   (s == B_INVAL && b->b_hold > 1)))
		pthread_cond_wait(&c->cv, &c->lock);
	buf_release(c, b);
}

void
buf_release(clio_cache *c, struct buf *b)
{
	if (--b->b_hold == 0 && b->b_state == B_FREE) {
		b->b_fnext = c->freelist;
		c->freelist = b;
	}
	if (b->b_state == B_INVAL ||
	    (b->b_hold == 0 && (b->b_flags & BF_WANT))) {
		b->b_flags &= ~BF_WANT;
		pthread_cond_broadcast(&c->cv);
	}
}

void
buf_read_begin(clio_cache *c, struct buf *b)
{
	(void)c;
	b->b_readers++;
}

void
buf_read_end(clio_cache *c, struct buf *b)
{
	if (--b->b_readers == 0 && (b->b_flags & BF_RWAIT)) {
		b->b_flags &= ~BF_RWAIT;
		pthread_cond_broadcast(&c->cv);
	}
}

bool
buf_wait_readers(clio_cache *c, struct buf *b)
{
	bool waited = false;

	while (b->b_readers > 0) {
		b->b_flags |= BF_RWAIT;
		pthread_cond_wait(&c->cv, &c->lock);
		waited = true;
	}
	return waited;
}

/* Drop a buffer's identity; it becomes FREE (free-listed once unheld). */
void
buf_discard(clio_cache *c, struct buf *b)
{
	if (b->b_state == B_DIRTY)
		dirty_remove(c, b);
	if (b->b_state == B_CLEAN || b->b_state == B_DIRTY ||
	    b->b_state == B_WRITING)
		c->nvalid--;
	hash_remove(c, b);
	b->b_state = B_FREE;
	b->b_flags = 0;
	b->b_obj = NULL;
	if (b->b_hold == 0) {
		b->b_fnext = c->freelist;
		c->freelist = b;
	}
	pthread_cond_broadcast(&c->cv);
}

/* CLOCK: a candidate is CLEAN or INVAL and unheld; BF_REF buys one more
 * turn.  Returns NULL when a full sweep (twice round) finds none. */
static struct buf *
clock_victim(clio_cache *c)
{
	uint32_t i;

	for (i = 0; i < 2 * c->nbuf; i++) {
		struct buf *b = &c->bufs[c->hand];

		c->hand = c->hand + 1 == c->nbuf ? 0 : c->hand + 1;
		if (b->b_hold != 0 ||
		    (b->b_state != B_CLEAN && b->b_state != B_INVAL))
			continue;
		if (b->b_flags & BF_REF) {
			b->b_flags &= ~BF_REF;
			continue;
		}
		return b;
	}
	return NULL;
}

static struct buf *
alloc_buf(clio_cache *c, bool nowait, bool *dropped, int *err)
{
	for (;;) {
		struct buf *b = c->freelist;

		if (b != NULL) {
			c->freelist = b->b_fnext;
			b->b_fnext = NULL;
			return b;
		}
		b = clock_victim(c);
		if (b != NULL) {
			/* invariant 7: reusing it waits for its last I/O */
			buf_touch(c, b);
			c->st.evictions++;
			buf_discard(c, b);
			c->freelist = b->b_fnext;
			b->b_fnext = NULL;
			return b;
		}
		if (nowait)
			return NULL;
		*dropped = true;
		if (c->ndirty > c->nwerr) {
			flush_oldest(c);
			continue;
		}
		if (c->nio > 0) {
			pthread_cond_wait(&c->cv, &c->lock);
			continue;
		}
		/* everything is held or dirty and unwritable */
		*err = c->nwerr > 0 ? -EIO : -ENOBUFS;
		return NULL;
	}
}

/*
 * Find or create the buffer of (o, lbn) and hold it.  A new buffer is
 * INVAL and its holder must fill it, mark it, or discard it.  With nowait,
 * returns NULL rather than wait for a buffer to free up.
 */
struct buf *
getblk(clio_cache *c, struct cobj *o, uint64_t lbn, bool nowait, int *err)
{
	for (;;) {
		struct buf *b = buf_lookup(c, o, lbn), *nb;
		bool dropped = false;

		if (b != NULL) {
			b->b_hold++;
			return b;
		}
		nb = alloc_buf(c, nowait, &dropped, err);
		if (nb == NULL)
			return NULL;
		if (dropped && buf_lookup(c, o, lbn) != NULL) {
			nb->b_fnext = c->freelist;
			c->freelist = nb;
			continue;
		}
		nb->b_obj = o;
		nb->b_lbn = lbn;
		nb->b_state = B_INVAL;
		nb->b_flags = 0;
		nb->b_hold = 1;
		nb->b_ready = 0;
		hash_insert(c, nb);
		return nb;
	}
}

/* ------------------------------------------------------------ I/O */

struct bio {
	struct clio_req req;
	clio_cache *c;
	struct cobj *o;
	bool waited, done;
	int n;
	struct buf **bufs;
	struct iovec *iov;
};

/*
 * flush_behind: once a device has taken conf.flush_behind bytes of
 * write-back since its last flush, one flush runs in the background, so
 * that an fsync finds little left for the device to make durable.  Its
 * failure is a write-back failure: the next fsync of each handle
 * reports it.  o_flushing keeps the object (obj_wait_io) until it ends.
 */
struct bflush {
	struct clio_req req;
	clio_cache *c;
	struct cobj *o;
};

static void
flush_behind_done(struct clio_req *req)
{
	struct bflush *f = req->priv;
	clio_cache *c = f->c;
	struct cobj *o = f->o;

	pthread_mutex_lock(&c->lock);
	o->o_flushing = false;
	c->st.flushes_behind++;
	if (req->result < 0) {
		o->o_err = (int)-req->result;
		o->o_errseq++;
		c->st.write_errors++;
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->lock);
	free(f);
}

/* Start the background flush of o, whose o_flushing the caller set;
 * without c->lock. */
static void
flush_behind(clio_cache *c, struct cobj *o)
{
	struct bflush *f = calloc(1, sizeof(*f));

	if (f != NULL) {
		f->c = c;
		f->o = o;
		f->req.op = CLIO_OP_FLUSH;
		f->req.done = flush_behind_done;
		f->req.priv = f;
		if (clio_dev_submit(o->o_dev, &f->req) == 0)
			return;
		free(f);
	}
	/* only a hint: the next fsync flushes anyway */
	pthread_mutex_lock(&c->lock);
	o->o_flushing = false;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->lock);
}

static void
bio_done(struct clio_req *req)
{
	struct bio *io = req->priv;
	clio_cache *c = io->c;
	struct cobj *o = io->o;
	bool ok = req->result >= 0;
	bool virt = o->o_dev->is_virtual;
	bool flush = false;
	int i;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < io->n; i++) {
		struct buf *b = io->bufs[i];

		c->nio--;
		o->o_nio--;
		b->b_ready = virt ? req->t_done : 0;
		if (req->op == CLIO_OP_READ) {
			if (ok) {
				b->b_state = B_CLEAN;
				c->nvalid++;
			} else {
				o->o_rerr = (int)-req->result;
				b->b_state = B_INVAL; /* no garbage stays valid */
				buf_discard(c, b);
			}
		} else if (ok) {
			b->b_state = B_CLEAN;
			b->b_flags &= ~BF_WERR;
		} else {
			/* a failed write-back: the buffer stays dirty */
			b->b_state = B_CLEAN;
			b->b_flags |= BF_WERR;
			buf_mark_dirty(c, b);
		}
	}
	if (req->op == CLIO_OP_WRITE) {
		if (virt && req->t_done > o->o_wdone)
			o->o_wdone = req->t_done;
		if (!ok) {
			o->o_err = (int)-req->result;
			o->o_errseq++;
			c->st.write_errors++;
		} else {
			o->o_wbehind += (uint64_t)req->result;
			flush = c->conf.flush_behind > 0 && !o->o_flushing &&
				o->o_wbehind >= c->conf.flush_behind;
			if (flush) {
				o->o_flushing = true;
				o->o_wbehind = 0;
			}
		}
	}
	io->done = true;
	pthread_cond_broadcast(&c->cv);
	if (!io->waited) {
		free(io);
	}
	pthread_mutex_unlock(&c->lock);
	if (flush)
		flush_behind(c, o);
}

int
bio_submit(clio_cache *c, struct cobj *o, enum clio_op op, struct buf **bufs,
	   int n, bool wait)
{
	size_t bsize = c->conf.bsize;
	uint64_t off = bufs[0]->b_lbn * bsize;
	struct bio *io;
	int i, r;

	io = calloc(1, sizeof(*io) + (size_t)n * (sizeof(struct buf *) +
						   sizeof(struct iovec)));
	if (io == NULL) {
		for (i = 0; i < n; i++) {
			if (op == CLIO_OP_READ)
				buf_discard(c, bufs[i]);
		}
		return -ENOMEM;
	}
	io->bufs = (struct buf **)(io + 1);
	io->iov = (struct iovec *)(io->bufs + n);
	io->c = c;
	io->o = o;
	io->n = n;
	io->waited = wait;
	for (i = 0; i < n; i++) {
		struct buf *b = bufs[i];

		io->bufs[i] = b;
		io->iov[i].iov_base = b->b_data;
		io->iov[i].iov_len = bsize;
		if (op == CLIO_OP_READ) {
			b->b_state = B_READING;
		} else {
			dirty_remove(c, b);
			b->b_state = B_WRITING;
		}
		c->nio++;
		o->o_nio++;
	}
	/* no request reaches past the end the readers see (a fixed device
	 * ends there, maybe inside a block): a read gets zeros there */
	io->req.iovcnt = n;
	if (off + (uint64_t)n * bsize > o->o_size) {
		uint64_t keep = o->o_size > off ? o->o_size - off : 0;

		io->req.iovcnt = (int)DIV_ROUND_UP(keep, bsize);
		if (keep % bsize)
			io->iov[keep / bsize].iov_len = keep % bsize;
		for (i = (int)(keep / bsize); op == CLIO_OP_READ && i < n; i++) {
			size_t from = (uint64_t)i == keep / bsize ? keep % bsize : 0;
			memset(bufs[i]->b_data + from, 0, bsize - from);
		}
	}
	io->req.op = op;
	io->req.flags = wait ? CLIO_REQ_SYNC : 0;
	io->req.offset = off;
	io->req.iov = io->iov;
	io->req.done = bio_done;
	io->req.priv = io;
	if (op == CLIO_OP_READ)
		c->st.read_clusters++;
	else
		c->st.write_clusters++;

	pthread_mutex_unlock(&c->lock);
	if (io->req.iovcnt == 0) {
		/* wholly past the end: nothing to move */
		io->req.result = 0;
		io->req.t_done = o->o_dev->is_virtual ? vclock_now() : 0;
		bio_done(&io->req);
		r = 0;
	} else {
		r = clio_dev_submit(o->o_dev, &io->req);
	}
	if (r < 0) {
		io->req.result = r;
		io->req.t_done = o->o_dev->is_virtual ? vclock_now() : 0;
		bio_done(&io->req);
	}
	pthread_mutex_lock(&c->lock);
	if (!wait)
		return 0;
	while (!io->done)
		pthread_cond_wait(&c->cv, &c->lock);
	r = io->req.result < 0 ? (int)io->req.result : 0;
	if (o->o_dev->is_virtual)
		vclock_advance_to(io->req.t_done);
	free(io);
	return r;
}

/* ------------------------------------------------------------ write-back */

/*
 * Write b together with the dirty buffers around it, backwards then
 * forwards, up to one write cluster, as one request.  Buffers already
 * tried by fsync pass `gen` are left alone (gen 0: no pass).
 */
int
flush_buf(clio_cache *c, struct buf *b, uint64_t gen)
{
	struct cobj *o = b->b_obj;
	uint32_t max = c->wcluster;
	struct buf *run[1024];
	uint64_t first = b->b_lbn, last = b->b_lbn, l;
	int n = 0;

	if (max > 1024)
		max = 1024;
	while (last - first + 1 < max && first > 0) {
		struct buf *p = buf_lookup(c, o, first - 1);
		if (p == NULL || p->b_state != B_DIRTY ||
		    (gen && p->b_tried == gen))
			break;
		first--;
	}
	while (last - first + 1 < max) {
		struct buf *p = buf_lookup(c, o, last + 1);
		if (p == NULL || p->b_state != B_DIRTY ||
		    (gen && p->b_tried == gen))
			break;
		last++;
	}
	for (l = first; l <= last; l++) {
		struct buf *p = buf_lookup(c, o, l);
		if (gen)
			p->b_tried = gen;
		run[n++] = p;
	}
	return bio_submit(c, o, CLIO_OP_WRITE, run, n, false);
}

/* Write the oldest dirty buffer that has not failed, with neighbours. */
int
flush_oldest(clio_cache *c)
{
	struct buf *b;

	for (b = c->dirty_head; b != NULL; b = b->b_dnext)
		if (!(b->b_flags & BF_WERR))
			return flush_buf(c, b, 0);
	return 0;
}

/* A writer above dirty_hi flushes, oldest first, down to dirty_lo. */
void
throttle_writer(clio_cache *c)
{
	if (c->ndirty - c->nwerr <= c->dirty_hi_bufs)
		return;
	c->st.throttles++;
	while (c->ndirty - c->nwerr > c->dirty_lo_bufs && c->dirty_head != NULL)
		flush_oldest(c);
}

void
obj_wait_io(clio_cache *c, struct cobj *o)
{
	while (o->o_nio > 0 || o->o_flushing)
		pthread_cond_wait(&c->cv, &c->lock);
}

/*
 * Write back every dirty buffer of o, each tried once (a failed one stays
 * dirty), and wait for the writes.  Returns the first error of this pass.
 */
int
obj_writeback(clio_cache *c, struct cobj *o)
{
	uint64_t gen = ++c->fsync_gen;
	uint64_t seq0 = o->o_errseq;
	struct buf *b;
	int r = 0, e;

	for (;;) {
		for (b = c->dirty_head; b != NULL; b = b->b_dnext)
			if (b->b_obj == o && b->b_tried != gen)
				break;
		if (b == NULL)
			break;
		e = flush_buf(c, b, gen);
		if (e < 0 && r == 0)
			r = e; /* not submitted: it stays dirty */
	}
	obj_wait_io(c, o);
	if (o->o_dev->is_virtual)
		vclock_advance_to(o->o_wdone);
	/* buffers dirtied again by other writers meanwhile are no error */
	if (o->o_errseq != seq0)
		return -(o->o_err ? o->o_err : EIO);
	return r;
}

/* ------------------------------------------------------------ flusher */

static void *
flusher_main(void *arg)
{
	clio_cache *c = arg;
	double period = c->conf.dirty_age / 4;

	if (period > 1.0)
		period = 1.0;
	if (period < 0.01)
		period = 0.01;
	pthread_mutex_lock(&c->lock);
	while (!c->stopping) {
		struct timespec ts;
		double now;
		struct buf *b;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)period;
		ts.tv_nsec += (long)((period - (double)(time_t)period) * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->flusher_cv, &c->lock, &ts);
		if (c->stopping)
			break;
		/* the syncer: write what has been dirty for dirty_age */
		now = now_monotonic();
		for (;;) {
			for (b = c->dirty_head; b != NULL; b = b->b_dnext)
				if (!(b->b_flags & BF_WERR))
					break;
			if (b == NULL || now - b->b_dirtied < c->conf.dirty_age)
				break;
			flush_buf(c, b, 0);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* ------------------------------------------------------------ invariants */

bool
cache_invariants(clio_cache *c)
{
	uint64_t ndirty = 0, nwerr = 0, nvalid = 0, nio = 0, nfree = 0;
	struct buf *b;
	struct cobj *o;
	uint32_t i;

	for (b = c->dirty_head; b != NULL; b = b->b_dnext) {
		if (b->b_state != B_DIRTY)
			return false;				/* 2 */
		ndirty++;
		nwerr += (b->b_flags & BF_WERR) != 0;
	}
	if (ndirty != c->ndirty || nwerr != c->nwerr)
		return false;					/* 2 */
	for (b = c->freelist; b != NULL; b = b->b_fnext) {
		if (b->b_state != B_FREE || b->b_hold != 0)
			return false;				/* 1 */
		nfree++;
	}
	for (i = 0; i < c->nbuf; i++) {
		b = &c->bufs[i];
		if (b->b_hold < 0 || b->b_readers < 0 || b->b_readers > b->b_hold)
			return false;				/* 8 */
		if (b->b_state == B_FREE) {
			if (b->b_obj != NULL)
				return false;			/* 1 */
			continue;
		}
		if (buf_lookup(c, b->b_obj, b->b_lbn) != b)
			return false;				/* 1, 6 */
		if (b->b_state == B_READING || b->b_state == B_WRITING)
			nio++;					/* 4 */
		if (b->b_state == B_CLEAN || b->b_state == B_DIRTY ||
		    b->b_state == B_WRITING)
			nvalid++;				/* 5 */
		if ((b->b_state == B_DIRTY) != (b->b_dprev != NULL ||
						 c->dirty_head == b))
			return false;				/* 2 */
	}
	if (nio != c->nio || nvalid != c->nvalid)
		return false;
	for (o = c->objs; o != NULL; o = o->o_next) {
		uint64_t od = 0;
		for (b = c->dirty_head; b != NULL; b = b->b_dnext)
			od += b->b_obj == o;
		if (od != o->o_ndirty)
			return false;				/* 2 */
	}
	return true;
}

#include <assert.h>
void
cache_check(clio_cache *c)
{
#ifdef CLIO_DEBUG
	/* walking every buffer is costly: every call on small caches */
	if (c->nbuf <= 512 || (++c->checks & 63) == 0)
		assert(cache_invariants(c));
#else
	(void)c;
#endif
}

/* ------------------------------------------------------------ the cache */

int
clio_cache_new(const struct clio_conf *conf, clio_cache **cp)
{
	clio_cache *c;
	uint32_t i, hsize;
	int r;

	r = clio_conf_check(conf, NULL, 0);
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->conf = *conf;
	c->nbuf = (uint32_t)(conf->cache_size / conf->bsize);
	c->arena_len = (size_t)c->nbuf * conf->bsize;
	c->arena = mmap(NULL, c->arena_len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* huge pages where the kernel has them: fewer faults on first use
	 * and fewer TLB misses in every copy (only a hint) */
	if (c->arena != MAP_FAILED)
		(void)madvise(c->arena, c->arena_len, MADV_HUGEPAGE);
	for (hsize = 64; hsize < 2 * c->nbuf; hsize <<= 1)
		;
	c->hmask = hsize - 1;
	c->hash = calloc(hsize, sizeof(*c->hash));
	c->bufs = calloc(c->nbuf, sizeof(*c->bufs));
	if (c->arena == MAP_FAILED || c->hash == NULL || c->bufs == NULL) {
		if (c->arena != MAP_FAILED)
			munmap(c->arena, c->arena_len);
		free(c->hash);
		free(c->bufs);
		free(c);
		return -ENOMEM;
	}
	for (i = c->nbuf; i-- > 0;) {
		struct buf *b = &c->bufs[i];
		b->b_data = c->arena + (size_t)i * conf->bsize;
		b->b_state = B_FREE;
		b->b_fnext = c->freelist;
		c->freelist = b;
	}
	switch (conf->cluster) {
	case CLIO_CLUSTER_ON:
		c->rcluster = conf->maxphys / conf->bsize;
		break;
	case CLIO_CLUSTER_LITE:
		c->rcluster = MIN(conf->maxphys, conf->maxbsize) / conf->bsize;
		break;
	case CLIO_CLUSTER_OFF:
		c->rcluster = 1;
		break;
	}
	if (c->rcluster < 1)
		c->rcluster = 1;
	/* a cluster never needs more than a quarter of the buffers */
	while (c->rcluster > 1 && c->rcluster * 4 > c->nbuf)
		c->rcluster /= 2;
	c->wcluster = c->rcluster;
	c->dirty_hi_bufs = (uint64_t)c->nbuf * conf->dirty_hi / 100;
	c->dirty_lo_bufs = (uint64_t)c->nbuf * conf->dirty_lo / 100;
	if (c->dirty_hi_bufs < 1)
		c->dirty_hi_bufs = 1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cv, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->flusher_cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (conf->flusher) {
		if (pthread_create(&c->flusher, NULL, flusher_main, c) == 0)
			c->flusher_running = true;
	}
	*cp = c;
	return 0;
}

int
clio_sync(clio_cache *c)
{
	struct cobj *o;
	int r = 0, e;

	pthread_mutex_lock(&c->lock);
	for (o = c->objs; o != NULL; o = o->o_next) {
		o->o_nhandles++; /* keep it while the lock is dropped */
		e = obj_writeback(c, o);
		if (e < 0 && r == 0)
			r = e;
		pthread_mutex_unlock(&c->lock);
		e = clio_dev_flush(o->o_dev);
		pthread_mutex_lock(&c->lock);
		o->o_nhandles--;
		if (e < 0 && r == 0)
			r = e;
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

int
clio_cache_free(clio_cache *c)
{
	int r;

	if (c == NULL)
		return 0;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_cond_broadcast(&c->flusher_cv);
	pthread_mutex_unlock(&c->lock);
	if (c->flusher_running)
		pthread_join(c->flusher, NULL);
	r = clio_sync(c);
	pthread_mutex_lock(&c->lock);
	while (c->nio > 0)
		pthread_cond_wait(&c->cv, &c->lock);
	for (struct cobj *o = c->objs; o != NULL; o = o->o_next)
		obj_wait_io(c, o);
	pthread_mutex_unlock(&c->lock);
	while (c->objs != NULL) {
		struct cobj *o = c->objs;
		c->objs = o->o_next;
		free(o);
	}
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cv);
	pthread_cond_destroy(&c->flusher_cv);
	munmap(c->arena, c->arena_len);
	free(c->hash);
	free(c->bufs);
	free(c);
	return r;
}

void
clio_cache_stats(clio_cache *c, struct clio_cache_stats *st)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	st->dirty_bytes = c->ndirty * c->conf.bsize;
	st->cached_bytes = c->nvalid * c->conf.bsize;
	st->nbuf = c->nbuf;
	pthread_mutex_unlock(&c->lock);
}
