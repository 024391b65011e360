/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache.c - the buffer cache: buffers of bsize bytes found by (object,
 * logical block), their states, replacement, dirty accounting, write-back
 * with neighbour gathering (the one place where write runs are built),
 * writer throttling and the flusher thread.
 *
 * Locking.  Two kinds of lock, taken in this order:
 *  - c->lock guards the lists (free list, the dirty lists, each object's
 *    buffer list), the counters, the objects, the CLOCK hand, and every
 *    change of a buffer's identity or state; whoever waits for a buffer
 *    waits with it: for a read to complete on the buffer's slot of
 *    c->iowait (buf_wait_read()), for anything else on c->cv
 *    (cache_wait(), which counts its waiters).  A completion wakes the
 *    slots of its buffers, and c->cv only if someone waits there: one
 *    read's end wakes its own readers, not every thread waiting for one.
 *  - a stripe lock (c->stripes[], picked by hash bucket) guards the hash
 *    chains of its buckets.  A change of a chain holds both locks, so a
 *    thread holding either one may walk the chains.
 * A cache hit takes only a stripe lock: under it the reader finds the
 * buffer, checks that it is valid, not being changed (BF_WLOCK) and
 * carries no trip wire, and takes a hold and a reader count; it copies
 * with no lock at all and lets go with atomic decrements
 * (buf_release_unlocked()), taking c->lock only when someone waits
 * (BF_WAKE) or waits for a buffer (c->alloc_waiting).
 * So b_state, b_flags, b_hold, b_readers and b_ready are atomics: their
 * writers hold c->lock (the state and the slow path's flags) or the
 * stripe lock (the hit path's hold, reader count and BF_REF/BF_RA), and
 * two decisions are made under the stripe lock against the hit path:
 * eviction and discarding check b_hold there, and a writer sets
 * BF_WLOCK there before it looks at b_readers.  Where a waiter and a
 * lockless releaser meet, each writes its own word before it reads the
 * other's (BF_WANT/BF_RWAIT/BF_FREEPEND against b_hold/b_readers,
 * alloc_waiting against b_hold; all sequentially consistent), so one of
 * them sees the other and no wake-up is lost.
 * c->lock is never held across a device submission: bio_submit() drops
 * it, so completions (which take it) may run inline.  A reader holding
 * buffers for reading waits for nothing: whoever waits for its readers
 * may hold what it would wait for.  No thread waits for a free buffer
 * while it holds one.  Lock order: c->lock, a stripe lock, a device's
 * lock.
 *
 * Buffer states and the functions behind each transition:
 *
 *   FREE --getblk--> INVAL --bio_submit(READ)--> READING --bio_done--> CLEAN
 *                      |  \                         |
 *                      |   `--(whole write)--.      `--(error)--> FREE
 *                      |                     v
 *                      `--buf_discard--> FREE  DIRTY <--buf_mark_dirty-- CLEAN
 *                                            |  ^
 *                          write_run/bio_submit |  bio_done (error: BF_WERR)
 *                                            v  |
 *                                          WRITING --bio_done--> CLEAN
 *   CLEAN/INVAL (hold 0) --alloc_buf (CLOCK eviction)--> reused
 *   DIRTY with BF_WERR beyond an object's werr_max --werr_trim--> FREE (a
 *   recorded loss, reported to that object's handles)
 *
 * Invariants (checked by cache_invariants() in CLIO_DEBUG builds):
 *  1. A buffer is in the hash, and on its object's buffer list, iff its
 *     state is not FREE.  On the free list (b_onfree) means FREE and
 *     unheld; a FREE unheld buffer off the free list has BF_FREEPEND (its
 *     last holder, lockless, is about to put it there).
 *  2. A buffer is on the cache's dirty list and its object's iff it is
 *     DIRTY; ndirty counts them, nwerr those with BF_WERR, and each
 *     object's o_ndirty and o_nwerr its own.
 *  3. A DIRTY or WRITING buffer is never evicted or reused: only CLEAN or
 *     INVAL buffers with no holder are.  A dirty buffer leaves the cache
 *     only by a successful write, a truncate past it, or a recorded loss
 *     (its write-back failed, and it was the object's last close, the
 *     object had more than werr_max failed buffers, or a buffer was
 *     needed while every other one was failed or held and none was
 *     under I/O).
 *  4. nio counts READING and WRITING buffers; o_nio those of the object.
 *  5. nvalid counts CLEAN, DIRTY and WRITING buffers.
 *  6. At most one buffer per (object, block).
 *  7. On the virtual clock, using a buffer first advances the clock to the
 *     completion of its last I/O (b_ready): the caller waited for it.
 *  8. b_readers <= b_hold: a reader holds its buffer, which is therefore
 *     never reused while it copies; nobody changes the data of a buffer
 *     with readers, and no reader starts on one with BF_WLOCK.
 *  9. At most one background flush per object is in flight (o_flushing);
 *     obj_wait_io() waits for it as for the object's buffers.
 * 10. While o_truncating, nothing of the object is written back and no
 *     handle writes to it: the device's new end stays where it was put.
 * 11. b_dgen is c->fsync_gen when the buffer last became DIRTY (dirtying
 *     a DIRTY buffer keeps it); an fsync pass (obj_writeback) writes the
 *     buffers with b_dgen below its own gen.  Every request in flight is
 *     on its object's o_bioh list, in submission order (seq).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

struct stripe *
stripe_of(clio_cache *c, const struct cobj *o, uint64_t lbn)
{
	return &c->stripes[hash_of(c, o, lbn) & c->smask];
}

uint32_t
buf_bucket(const clio_cache *c, const struct cobj *o, uint64_t lbn)
{
	return hash_of(c, o, lbn);
}

/* Called with c->lock or the bucket's stripe lock held. */
struct buf *
buf_lookup_in(clio_cache *c, uint32_t bucket, struct cobj *o, uint64_t lbn)
{
	struct buf *b;

	for (b = c->hash[bucket]; b != NULL; b = b->b_hnext)
		if (b->b_obj == o && b->b_lbn == lbn)
			return b;
	return NULL;
}

/* Called with c->lock or the block's stripe lock held. */
struct buf *
buf_lookup(clio_cache *c, struct cobj *o, uint64_t lbn)
{
	return buf_lookup_in(c, hash_of(c, o, lbn), o, lbn);
}

/* Hash b under (b_obj, b_lbn) and put it on its object's list. */
static void
hash_insert(clio_cache *c, struct buf *b)
{
	struct cobj *o = b->b_obj;
	uint32_t h = hash_of(c, o, b->b_lbn);
	struct stripe *s = &c->stripes[h & c->smask];

	pthread_mutex_lock(&s->lock);
	b->b_hnext = c->hash[h];
	c->hash[h] = b;
	pthread_mutex_unlock(&s->lock);
	b->b_oprev = NULL;
	b->b_onext = o->o_bufs;
	if (o->o_bufs != NULL)
		o->o_bufs->b_oprev = b;
	o->o_bufs = b;
}

/* ------------------------------------------------------------ dirty lists */

static void
dirty_append(clio_cache *c, struct buf *b)
{
	struct cobj *o = b->b_obj;

	b->b_dnext = NULL;
	b->b_dprev = c->dirty_tail;
	if (c->dirty_tail != NULL)
		c->dirty_tail->b_dnext = b;
	else
		c->dirty_head = b;
	c->dirty_tail = b;
	b->b_odnext = NULL;
	b->b_odprev = o->o_dtail;
	if (o->o_dtail != NULL)
		o->o_dtail->b_odnext = b;
	else
		o->o_dhead = b;
	o->o_dtail = b;
	c->ndirty++;
	o->o_ndirty++;
	if (b->b_flags & BF_WERR) {
		c->nwerr++;
		o->o_nwerr++;
	}
}

static void
dirty_remove(clio_cache *c, struct buf *b)
{
	struct cobj *o = b->b_obj;

	if (b->b_dprev != NULL)
		b->b_dprev->b_dnext = b->b_dnext;
	else
		c->dirty_head = b->b_dnext;
	if (b->b_dnext != NULL)
		b->b_dnext->b_dprev = b->b_dprev;
	else
		c->dirty_tail = b->b_dprev;
	b->b_dprev = b->b_dnext = NULL;
	if (b->b_odprev != NULL)
		b->b_odprev->b_odnext = b->b_odnext;
	else
		o->o_dhead = b->b_odnext;
	if (b->b_odnext != NULL)
		b->b_odnext->b_odprev = b->b_odprev;
	else
		o->o_dtail = b->b_odprev;
	b->b_odprev = b->b_odnext = NULL;
	c->ndirty--;
	o->o_ndirty--;
	if (b->b_flags & BF_WERR) {
		c->nwerr--;
		o->o_nwerr--;
	}
}

void
buf_mark_dirty(clio_cache *c, struct buf *b)
{
	if (b->b_state == B_DIRTY)
		return;
	if (b->b_state != B_CLEAN)
		c->nvalid++;
	b->b_dirtied = now_monotonic();
	b->b_dgen = c->fsync_gen;
	atomic_fetch_and(&b->b_flags, ~(unsigned)(BF_RA | BF_RAM));
	dirty_append(c, b);
	b->b_state = B_DIRTY;
}

/* ------------------------------------------------------------ buffers */

void
buf_touch(clio_cache *c, struct buf *b)
{
	(void)c;
	if (b->b_obj->o_virtual)
		vclock_advance_to(b->b_ready);
}

void
cache_wait(clio_cache *c)
{
	c->cv_waiters++;
	pthread_cond_wait(&c->cv, &c->lock);
	c->cv_waiters--;
}

static pthread_cond_t *
iowait_of(clio_cache *c, const struct buf *b)
{
	return &c->iowait[(size_t)(b - c->bufs) % IOWAIT_SLOTS];
}

void
buf_wait_read(clio_cache *c, struct buf *b)
{
	while (b->b_state == B_READING)
		pthread_cond_wait(iowait_of(c, b), &c->lock);
}

/* Wait until b changes state (the lock is released meanwhile). */
void
buf_wait(clio_cache *c, struct buf *b)
{
	enum buf_state s = b->b_state;

	b->b_hold++;
	while (b->b_state == s && (s == B_READING || s == B_WRITING ||
				   (s == B_INVAL && b->b_hold > 1)))
		cache_wait(c);
	buf_release(c, b);
}

static void
freelist_push(clio_cache *c, struct buf *b)
{
	b->b_flags = 0;
	b->b_fnext = c->freelist;
	c->freelist = b;
	b->b_onfree = true;
}

static struct buf *
freelist_pop(clio_cache *c)
{
	struct buf *b = c->freelist;

	if (b != NULL) {
		c->freelist = b->b_fnext;
		b->b_fnext = NULL;
		b->b_onfree = false;
	}
	return b;
}

/* A holder let go of b and may have been its last: free it if it was
 * discarded meanwhile, and wake whoever waits for it. */
static void
buf_after_release(clio_cache *c, struct buf *b, int hold)
{
	unsigned fl = b->b_flags;

	if (hold == 0 && b->b_state == B_FREE && !b->b_onfree)
		freelist_push(c, b);
	if (b->b_state == B_INVAL || (hold == 0 && (fl & BF_WANT)) ||
	    (hold == 0 && c->alloc_waiting > 0)) {
		atomic_fetch_and(&b->b_flags, ~(unsigned)BF_WANT);
		pthread_cond_broadcast(&c->cv);
	}
}

void
buf_release(clio_cache *c, struct buf *b)
{
	buf_after_release(c, b, atomic_fetch_sub(&b->b_hold, 1) - 1);
}

void
buf_release_unlocked(clio_cache *c, struct buf *b)
{
	int hold = atomic_fetch_sub(&b->b_hold, 1) - 1;

	/* each side wrote its own word first (see the top of this file) */
	if ((b->b_flags & BF_WAKE) || (hold == 0 && c->alloc_waiting > 0)) {
		pthread_mutex_lock(&c->lock);
		if (b->b_flags & BF_RWAIT) {
			atomic_fetch_and(&b->b_flags, ~(unsigned)BF_RWAIT);
			pthread_cond_broadcast(&c->cv);
		}
		buf_after_release(c, b, b->b_hold);
		pthread_mutex_unlock(&c->lock);
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
		atomic_fetch_and(&b->b_flags, ~(unsigned)BF_RWAIT);
		pthread_cond_broadcast(&c->cv);
	}
}

bool
buf_write_begin(clio_cache *c, struct buf *b)
{
	bool waited = false;

	while (b->b_state != B_FREE) {
		struct stripe *s = stripe_of(c, b->b_obj, b->b_lbn);
		int readers;

		pthread_mutex_lock(&s->lock);
		b->b_flags |= BF_WLOCK; /* no lockless reader starts now */
		readers = b->b_readers;
		pthread_mutex_unlock(&s->lock);
		if (readers == 0)
			break;
		b->b_flags |= BF_RWAIT;
		if (b->b_readers == 0)
			continue;
		cache_wait(c);
		waited = true;
	}
	return waited;
}

void
buf_write_end(clio_cache *c, struct buf *b)
{
	(void)c;
	atomic_fetch_and(&b->b_flags, ~(unsigned)BF_WLOCK);
}

/* Drop b's identity, with its stripe lock held; it becomes FREE, and goes
 * on the free list now or when its last holder lets go. */
static void
discard_locked(clio_cache *c, struct buf *b, uint32_t h)
{
	struct cobj *o = b->b_obj;
	struct buf **pp = &c->hash[h];

	if (b->b_state == B_DIRTY)
		dirty_remove(c, b);
	if (buf_valid(b))
		c->nvalid--;
	while (*pp != b)
		pp = &(*pp)->b_hnext;
	*pp = b->b_hnext;
	b->b_hnext = NULL;
	if (b->b_oprev != NULL)
		b->b_oprev->b_onext = b->b_onext;
	else
		o->o_bufs = b->b_onext;
	if (b->b_onext != NULL)
		b->b_onext->b_oprev = b->b_oprev;
	b->b_oprev = b->b_onext = NULL;
	b->b_state = B_FREE;
	b->b_obj = NULL;
	b->b_flags = BF_FREEPEND;
	if (b->b_hold == 0)
		freelist_push(c, b);
	pthread_cond_broadcast(&c->cv);
}

void
buf_discard(clio_cache *c, struct buf *b)
{
	uint32_t h = hash_of(c, b->b_obj, b->b_lbn);
	struct stripe *s = &c->stripes[h & c->smask];

	pthread_mutex_lock(&s->lock);
	discard_locked(c, b, h);
	pthread_mutex_unlock(&s->lock);
}

bool
buf_discard_unheld(clio_cache *c, struct buf *b)
{
	uint32_t h = hash_of(c, b->b_obj, b->b_lbn);
	struct stripe *s = &c->stripes[h & c->smask];
	bool held;

	b->b_flags |= BF_WANT;
	pthread_mutex_lock(&s->lock);
	held = b->b_hold > 0;
	if (!held)
		discard_locked(c, b, h);
	pthread_mutex_unlock(&s->lock);
	return !held;
}

/* Evict b if it is still CLEAN or INVAL and unheld (a lockless reader may
 * have taken it since the clock hand looked). */
static bool
evict(clio_cache *c, struct buf *b)
{
	uint32_t h = hash_of(c, b->b_obj, b->b_lbn);
	struct stripe *s = &c->stripes[h & c->smask];
	bool ok;

	pthread_mutex_lock(&s->lock);
	ok = b->b_hold == 0 &&
	     (b->b_state == B_CLEAN || b->b_state == B_INVAL);
	if (ok) {
		/* invariant 7: reusing it waits for its last I/O */
		buf_touch(c, b);
		c->st.evictions++;
		discard_locked(c, b, h);
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* CLOCK: a candidate is CLEAN or INVAL and unheld; BF_REF buys one more
 * turn.  Returns a free buffer, or NULL when a full sweep (twice round)
 * finds none. */
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
			atomic_fetch_and(&b->b_flags, ~(unsigned)BF_REF);
			continue;
		}
		if (evict(c, b))
			return freelist_pop(c);
	}
	return NULL;
}

/* Drop the oldest failed buffer of o that nobody holds: its loss is
 * recorded and reported to o's handles.  False if there is none. */
static bool
werr_drop_one(clio_cache *c, struct cobj *o)
{
	struct buf *b;

	for (b = o->o_dhead; b != NULL; b = b->b_odnext) {
		if (!(b->b_flags & BF_WERR) || b->b_hold > 0)
			continue;
		if (!buf_discard_unheld(c, b)) {
			atomic_fetch_and(&b->b_flags, ~(unsigned)BF_WANT);
			continue;
		}
		c->st.lost_bytes += c->conf.bsize;
		o->o_errseq++;
		if (o->o_err == 0)
			o->o_err = EIO;
		return true;
	}
	return false;
}

/* An object keeps at most werr_max buffers whose write-back failed: the
 * oldest beyond that are dropped, so that a failing device cannot fill
 * the cache that other devices share. */
static void
werr_trim(clio_cache *c, struct cobj *o)
{
	while (o->o_nwerr > c->werr_max && werr_drop_one(c, o))
		;
}

/* Nothing to evict and nothing to write: if every dirty buffer has
 * failed and no I/O in flight will free a buffer, drop the oldest
 * failed one (of whichever object). */
static bool
werr_drop_oldest(clio_cache *c)
{
	struct buf *b;

	if (c->ndirty == 0 || c->ndirty > c->nwerr || c->nio > 0)
		return false;
	for (b = c->dirty_head; b != NULL; b = b->b_dnext)
		if ((b->b_flags & BF_WERR) && b->b_hold == 0 &&
		    !b->b_obj->o_truncating)
			return werr_drop_one(c, b->b_obj);
	return false;
}

static struct buf *
alloc_buf(clio_cache *c, bool nowait, bool *dropped, int *err)
{
	for (;;) {
		struct buf *b = freelist_pop(c);
		int r;

		if (b == NULL)
			b = clock_victim(c);
		if (b != NULL || nowait)
			return b;
		*dropped = true;
		r = flush_oldest(c);
		if (r > 0)
			continue;
		if (r < 0) {
			*err = r;
			return NULL;
		}
		if (werr_drop_oldest(c))
			continue;
		/* every buffer is held, under I/O, or its object is being
		 * truncated: wait for one to come free */
		c->alloc_waiting++;
		b = clock_victim(c);
		if (b == NULL)
			b = freelist_pop(c);
		if (b == NULL)
			cache_wait(c);
		c->alloc_waiting--;
		if (b != NULL)
			return b;
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
			freelist_push(c, nb);
			continue;
		}
		nb->b_obj = o;
		nb->b_lbn = lbn;
		nb->b_state = B_INVAL;
		nb->b_flags = 0;
		nb->b_hold = 1;
		nb->b_readers = 0;
		nb->b_ready = 0;
		hash_insert(c, nb);
		return nb;
	}
}

/* ------------------------------------------------------------ I/O */

/* A request for n buffers, from the free list of its size class: no
 * allocation once the cache has run for a while. */
static struct bio *
bio_get(clio_cache *c, int n)
{
	int cls = 0;
	struct bio *io;

	while ((1 << cls) < n)
		cls++;
	if (cls >= BIO_CLASSES)
		return NULL;
	io = c->bio_free[cls];
	if (io != NULL) {
		c->bio_free[cls] = io->next;
	} else {
		size_t cap = (size_t)1 << cls;

		io = malloc(sizeof(*io) +
			    cap * (sizeof(struct buf *) + sizeof(struct iovec)));
		if (io == NULL)
			return NULL;
		io->bufs = (struct buf **)(io + 1);
		io->iov = (struct iovec *)(io->bufs + cap);
		io->cls = cls;
	}
	memset(&io->req, 0, sizeof(io->req));
	io->c = c;
	io->n = n;
	io->done = false;
	io->next = NULL;
	return io;
}

static void
bio_put(clio_cache *c, struct bio *io)
{
	io->next = c->bio_free[io->cls];
	c->bio_free[io->cls] = io;
}

/* A flush of o's device failed (c->lock held): what it was to make
 * durable may be lost, a write-back failure for every handle of o. */
void
obj_flush_failed(clio_cache *c, struct cobj *o, int e)
{
	o->o_err = -e;
	o->o_errseq++;
	c->st.write_errors++;
}

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
	if (req->result < 0)
		obj_flush_failed(c, o, (int)req->result);
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
	bool virt = o->o_virtual;
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
				c->nvalid++;
				b->b_state = B_CLEAN; /* publishes the data */
			} else {
				o->o_rerr = (int)-req->result;
				o->o_rerrseq++;
				b->b_state = B_INVAL; /* no garbage stays valid */
				buf_discard(c, b);
			}
		} else if (ok) {
			atomic_fetch_and(&b->b_flags, ~(unsigned)BF_WERR);
			b->b_state = B_CLEAN;
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
			werr_trim(c, o);
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
	if (io->oprev != NULL)
		io->oprev->onext = io->onext;
	else
		o->o_bioh = io->onext;
	if (io->onext != NULL)
		io->onext->oprev = io->oprev;
	else
		o->o_biot = io->oprev;
	io->done = true;
	for (i = 0; i < io->n; i++)
		pthread_cond_broadcast(iowait_of(c, io->bufs[i]));
	if (c->cv_waiters > 0)
		pthread_cond_broadcast(&c->cv);
	if (!io->waited)
		bio_put(c, io);
	pthread_mutex_unlock(&c->lock);
	if (flush)
		flush_behind(c, o);
}

int
bio_submit(clio_cache *c, struct cobj *o, enum clio_op op, struct buf **bufs,
	   int n, bool wait)
{
	size_t bsize = c->conf.bsize;
	uint64_t off = bufs[0]->b_lbn * bsize, size = obj_size(o);
	struct bio *io;
	int i, r;

	io = bio_get(c, n);
	if (io == NULL) {
		for (i = 0; i < n; i++) {
			if (op == CLIO_OP_READ)
				buf_discard(c, bufs[i]);
		}
		return -ENOMEM;
	}
	io->o = o;
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
	io->seq = ++o->o_bioseq;
	io->onext = NULL;
	io->oprev = o->o_biot;
	if (o->o_biot != NULL)
		o->o_biot->onext = io;
	else
		o->o_bioh = io;
	o->o_biot = io;
	/* no request reaches past the end the readers see (a fixed device
	 * ends there, maybe inside a block): a read gets zeros there */
	io->req.iovcnt = n;
	if (off + (uint64_t)n * bsize > size) {
		uint64_t keep = size > off ? size - off : 0;

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
		io->req.t_done = o->o_virtual ? vclock_now() : 0;
		bio_done(&io->req);
		r = 0;
	} else {
		r = clio_dev_submit(o->o_dev, &io->req);
	}
	if (r < 0) {
		io->req.result = r;
		io->req.t_done = o->o_virtual ? vclock_now() : 0;
		bio_done(&io->req);
	}
	pthread_mutex_lock(&c->lock);
	if (!wait)
		return 0;
	while (!io->done)
		cache_wait(c);
	r = io->req.result < 0 ? (int)io->req.result : 0;
	if (o->o_virtual)
		vclock_advance_to(io->req.t_done);
	bio_put(c, io);
	return r;
}

/* ------------------------------------------------------------ write-back */

bool
buf_flushable(const struct buf *b)
{
	return b->b_state == B_DIRTY && !(b->b_flags & BF_WERR) &&
	       !b->b_obj->o_truncating;
}

/* May fsync pass gen (0: no pass, the flusher or a writer) write b in a
 * run?  The buffer a run is built for (must) goes whether tried or not;
 * a failed one only alone (flush_around()), so that a bad block fails no
 * neighbour and the good ones get out when they are tried again. */
static bool
run_member(const struct buf *b, uint64_t gen, const struct buf *must)
{
	if (b == NULL || b->b_state != B_DIRTY || b->b_obj->o_truncating)
		return false;
	if (b == must)
		return true;
	return !(b->b_flags & BF_WERR) && (gen == 0 || b->b_tried != gen);
}

/*
 * The one place where write runs are gathered: write the dirty buffers
 * from lbn on, as long as they are contiguous and may be written, up to
 * max blocks, as one request.  Returns the blocks submitted (0 if lbn's
 * buffer may not be written) or -errno.
 */
static int
write_run(clio_cache *c, struct cobj *o, uint64_t lbn, uint32_t max,
	  uint64_t gen, const struct buf *must, bool wait)
{
	struct buf *run[1024];
	int n = 0, r;

	if (max > 1024)
		max = 1024;
	while ((uint32_t)n < max) {
		struct buf *p = buf_lookup(c, o, lbn + (uint64_t)n);

		if (!run_member(p, gen, must))
			break;
		if (gen)
			p->b_tried = gen;
		run[n++] = p;
	}
	if (n == 0)
		return 0;
	r = bio_submit(c, o, CLIO_OP_WRITE, run, n, wait);
	return r < 0 ? r : n;
}

/*
 * Write b together with the dirty buffers around it, backwards then
 * forwards, up to one write cluster, as one request.  Neighbours already
 * tried by fsync pass `gen` and failed ones are left alone, and a failed
 * b goes alone; b itself goes in any case, unless its object is being
 * truncated.
 */
static int
flush_around(clio_cache *c, struct buf *b, uint64_t gen, bool wait)
{
	struct cobj *o = b->b_obj;
	uint32_t max = MIN(c->wcluster, 1024u);
	uint64_t first = b->b_lbn;

	if (!run_member(b, gen, b))
		return 0;
	if (b->b_flags & BF_WERR)
		max = 1; /* tried again alone */
	while (b->b_lbn - first + 1 < max && first > 0 &&
	       run_member(buf_lookup(c, o, first - 1), gen, NULL))
		first--;
	return write_run(c, o, first, max, gen, b, wait);
}

int
flush_buf(clio_cache *c, struct buf *b, uint64_t gen)
{
	return flush_around(c, b, gen, false);
}

/* Write the dirty buffers of [first, last] in runs of contiguous blocks
 * (write-behind: the run a writer has just completed). */
void
push_range(clio_cache *c, struct cobj *o, uint64_t first, uint64_t last)
{
	uint64_t l = first;

	while (l <= last) {
		int n = write_run(c, o, l, (uint32_t)MIN(last - l + 1, 1024u), 0,
				  NULL, false);

		l += n > 0 ? (uint64_t)n : 1;
	}
}

int
flush_oldest(clio_cache *c)
{
	struct buf *b;

	for (b = c->dirty_head; b != NULL; b = b->b_dnext)
		if (buf_flushable(b))
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
	while (c->ndirty - c->nwerr > c->dirty_lo_bufs)
		if (flush_oldest(c) <= 0)
			break;
}

void
obj_wait_io(clio_cache *c, struct cobj *o)
{
	while (o->o_nio > 0 || o->o_flushing)
		cache_wait(c);
}

void
obj_wait_truncate(clio_cache *c, struct cobj *o)
{
	while (o->o_truncating)
		cache_wait(c);
}

/*
 * Write back every buffer of o dirty when the pass starts, each tried once
 * (a failed one stays dirty), and wait for the writes.  Returns the first
 * error of this pass.  It walks o's own dirty list: a written buffer
 * leaves it and a failed one goes to its end, so the untried ones are
 * found from its head.  Buffers dirtied after the start (b_dgen) and the
 * requests submitted after its last are left to others (invariant 11):
 * a writer that keeps dirtying new blocks cannot hold it for ever.
 */
int
obj_writeback(clio_cache *c, struct cobj *o)
{
	uint64_t gen = ++c->fsync_gen, seq;
	uint64_t seq0 = o->o_errseq;
	/* what fits one write run goes out from this thread: there is no
	 * parallelism to lose, and no hand-off to a worker and back */
	bool here = o->o_ndirty <= c->wcluster;
	struct buf *b;
	int r = 0, e;

	for (;;) {
		obj_wait_truncate(c, o);
		for (b = o->o_dhead; b != NULL; b = b->b_odnext)
			if (b->b_tried != gen && b->b_dgen < gen)
				break;
		if (b == NULL)
			break;
		e = flush_around(c, b, gen, here);
		if (e < 0) {
			/* not written: it stays dirty (if a failure did not
			 * drop it meanwhile), tried by this pass */
			if (b->b_state == B_DIRTY && b->b_obj == o)
				b->b_tried = gen;
			if (r == 0)
				r = e;
		}
	}
	/* what was dirty at the start is written or in flight: wait for the
	 * requests in flight now, not for those other writers start later */
	seq = o->o_bioseq;
	while ((o->o_bioh != NULL && o->o_bioh->seq <= seq) || o->o_flushing)
		cache_wait(c);
	if (o->o_virtual)
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
				if (buf_flushable(b))
					break;
			if (b == NULL || now - b->b_dirtied < c->conf.dirty_age)
				break;
			if (flush_buf(c, b, 0) <= 0)
				break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* ------------------------------------------------------------ invariants */

static bool
obj_invariants(clio_cache *c, struct cobj *o)
{
	uint64_t nd = 0, nw = 0, nio = 0, seq = 0;
	struct buf *b;
	struct bio *io;

	for (io = o->o_bioh; io != NULL; io = io->onext) {
		if (io->o != o || io->done || io->seq <= seq ||
		    (io->onext == NULL) != (io == o->o_biot))
			return false;				/* 11 */
		seq = io->seq;
		nio += (uint64_t)io->n;
	}
	if (nio != o->o_nio)
		return false;					/* 4, 11 */
	for (b = o->o_dhead; b != NULL; b = b->b_odnext) {
		if (b->b_state != B_DIRTY || b->b_obj != o)
			return false;				/* 2 */
		nd++;
		nw += (b->b_flags & BF_WERR) != 0;
	}
	if (nd != o->o_ndirty || nw != o->o_nwerr)
		return false;					/* 2 */
	for (b = o->o_bufs; b != NULL; b = b->b_onext)
		if (b->b_obj != o || b->b_state == B_FREE ||
		    buf_lookup(c, o, b->b_lbn) != b)
			return false;				/* 1 */
	return true;
}

bool
cache_invariants(clio_cache *c)
{
	uint64_t ndirty = 0, nwerr = 0, nvalid = 0, nio = 0, nonlist = 0;
	uint64_t nobj = 0;
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
	for (b = c->freelist; b != NULL; b = b->b_fnext)
		if (b->b_state != B_FREE || b->b_hold != 0 || !b->b_onfree)
			return false;				/* 1 */
	for (i = 0; i < c->nbuf; i++) {
		b = &c->bufs[i];
		/* lockless holders come and go: only signs can be checked */
		if (b->b_hold < 0 || b->b_readers < 0)
			return false;				/* 8 */
		if (b->b_state == B_FREE) {
			if (b->b_obj != NULL || (b->b_hold == 0 && !b->b_onfree &&
						 !(b->b_flags & BF_FREEPEND)))
				return false;			/* 1 */
			continue;
		}
		nonlist++;
		if (b->b_onfree || buf_lookup(c, b->b_obj, b->b_lbn) != b)
			return false;				/* 1, 6 */
		if (b->b_state == B_READING || b->b_state == B_WRITING)
			nio++;					/* 4 */
		if (buf_valid(b))
			nvalid++;				/* 5 */
		if ((b->b_state == B_DIRTY) != (b->b_dprev != NULL ||
						 c->dirty_head == b))
			return false;				/* 2 */
	}
	if (nio != c->nio || nvalid != c->nvalid)
		return false;
	i = 0;
	for (o = c->objs; o != NULL; o = o->o_next, i++) {
		if (!obj_invariants(c, o) || obj_find(c, o->o_dev) != o)
			return false;				/* 1 */
		for (b = o->o_bufs; b != NULL; b = b->b_onext)
			nobj++;
	}
	return nobj == nonlist && i == c->nobjs;		/* 1 */
}

#include <assert.h>
void
cache_check(clio_cache *c)
{
#ifdef CLIO_DEBUG
	/* walking every buffer and object is costly: every call on small
	 * caches, and on big ones so often that a call walks 512 of them on
	 * average */
	uint64_t work = (uint64_t)c->nbuf + c->nobjs;

	if (work <= 512 || ++c->checks % (work / 512) == 0)
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
	uint32_t i, hsize, nstripes;
	int r;

	if (cp == NULL)
		return -EINVAL;
	r = clio_conf_check(conf, NULL, 0);
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->conf = *conf;
	c->nbuf = (uint32_t)(conf->cache_size / conf->bsize);
	c->read_maxrun = read_maxrun(c->nbuf);
	c->arena_len = (size_t)c->nbuf * conf->bsize;
	c->arena = mmap(NULL, c->arena_len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->arena == MAP_FAILED) { /* before the tables that go with it */
		free(c);
		return -ENOMEM;
	}
	/* huge pages where the kernel has them: fewer faults on first use
	 * and fewer TLB misses in every copy (only a hint) */
	(void)madvise(c->arena, c->arena_len, MADV_HUGEPAGE);
	for (hsize = 64; hsize < (1u << 31) && hsize < 2ull * c->nbuf; hsize <<= 1)
		;
	c->hmask = hsize - 1;
	nstripes = MIN(hsize, 256u);
	c->smask = nstripes - 1;
	c->hash = calloc(hsize, sizeof(*c->hash));
	c->bufs = calloc(c->nbuf, sizeof(*c->bufs));
	c->stripes = aligned_alloc(64, nstripes * sizeof(*c->stripes));
	if (c->arena == MAP_FAILED || c->hash == NULL || c->bufs == NULL ||
	    c->stripes == NULL) {
		if (c->arena != MAP_FAILED)
			munmap(c->arena, c->arena_len);
		free(c->hash);
		free(c->bufs);
		free(c->stripes);
		free(c);
		return -ENOMEM;
	}
	memset(c->stripes, 0, nstripes * sizeof(*c->stripes));
	for (i = 0; i < nstripes; i++)
		pthread_mutex_init(&c->stripes[i].lock, NULL);
	for (i = c->nbuf; i-- > 0;) {
		struct buf *b = &c->bufs[i];
		b->b_data = c->arena + (size_t)i * conf->bsize;
		b->b_state = B_FREE;
		freelist_push(c, b);
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
	/* a failing device may keep an eighth of the cache in failed
	 * buffers, and at least one write cluster's worth */
	c->werr_max = MAX((uint64_t)c->nbuf / 8, (uint64_t)c->wcluster);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cv, NULL);
	for (i = 0; i < IOWAIT_SLOTS; i++)
		pthread_cond_init(&c->iowait[i], NULL);
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

/* ------------------------------------------------------------ objects */

static uint32_t
obj_hash(const clio_cache *c, const clio_dev *d)
{
	uint64_t h = (uint64_t)(uintptr_t)d * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 32) & c->ohmask;
}

struct cobj *
obj_find(clio_cache *c, const clio_dev *d)
{
	struct cobj *o;

	if (c->ohash == NULL)
		return NULL;
	for (o = c->ohash[obj_hash(c, d)]; o != NULL; o = o->o_hnext)
		if (o->o_dev == d)
			return o;
	return NULL;
}

/* Kept objects (CLIO_KEEP) pile up: the table doubles to keep its chains
 * short, so that an open costs the same with ten objects or ten
 * thousand. */
static int
ohash_grow(clio_cache *c)
{
	uint32_t n = c->ohash ? (c->ohmask + 1) * 2 : 64, i;
	struct cobj **t = calloc(n, sizeof(*t)), *o;

	if (t == NULL)
		return -ENOMEM;
	free(c->ohash);
	c->ohash = t;
	c->ohmask = n - 1;
	for (o = c->objs; o != NULL; o = o->o_next) {
		i = obj_hash(c, o->o_dev);
		o->o_hnext = t[i];
		t[i] = o;
	}
	return 0;
}

int
obj_insert(clio_cache *c, struct cobj *o)
{
	uint32_t i;

	if ((c->ohash == NULL || c->nobjs >= c->ohmask + 1) && ohash_grow(c) < 0 &&
	    c->ohash == NULL)
		return -ENOMEM;
	o->o_next = c->objs;
	o->o_pprev = &c->objs;
	if (c->objs != NULL)
		c->objs->o_pprev = &o->o_next;
	c->objs = o;
	i = obj_hash(c, o->o_dev);
	o->o_hnext = c->ohash[i];
	c->ohash[i] = o;
	c->nobjs++;
	return 0;
}

static void
obj_unlink(clio_cache *c, struct cobj *o)
{
	struct cobj **pp = &c->ohash[obj_hash(c, o->o_dev)];

	while (*pp != o)
		pp = &(*pp)->o_hnext;
	*pp = o->o_hnext;
	*o->o_pprev = o->o_next;
	if (o->o_next != NULL)
		o->o_next->o_pprev = o->o_pprev;
	c->nobjs--;
}

/* Free o if nothing uses it any more: no handle, no pin, not kept.  Its buffers
 * go; a dirty one left is a write-back that failed for good, a recorded
 * loss. */
void
obj_free_if_unused(clio_cache *c, struct cobj *o)
{
	struct buf *b, *next;

	if (o->o_nhandles > 0 || o->o_pins > 0 || o->o_keep)
		return;
	obj_wait_io(c, o);
	if (o->o_nhandles > 0 || o->o_pins > 0 || o->o_keep)
		return; /* reopened while we waited */
	for (b = o->o_bufs; b != NULL; b = next) {
		next = b->b_onext;
		if (b->b_state == B_DIRTY)
			c->st.lost_bytes += c->conf.bsize;
		buf_discard(c, b);
	}
	obj_unlink(c, o);
	atomic_fetch_sub(&o->o_dev->objects, 1);
	free(o);
}

/*
 * clio_sync walks the objects with a cursor (c->lock held to move it): the
 * object it points to is pinned, and each walker takes it, pins the next
 * and writes back and flushes the one it took.  Up to SYNC_WALKERS threads
 * walk at once when there are several objects on real clocks: each object
 * waits for its own device (a network device whose server is gone waits
 * timeo= per call), and the devices' waits overlap rather than add up.  On
 * the virtual clock one thread walks, so simulated times stay sequential.
 */
#define SYNC_WALKERS 8

struct sync_walk {
	clio_cache *c;
	struct cobj *next;	/* pinned, under c->lock */
	int r;			/* the first error, under c->lock */
};

static void *
sync_walker(void *arg)
{
	struct sync_walk *w = arg;
	clio_cache *c = w->c;
	struct cobj *o;
	int e;

	pthread_mutex_lock(&c->lock);
	while ((o = w->next) != NULL) {
		w->next = o->o_next;
		if (w->next != NULL)
			w->next->o_pins++;
		e = obj_writeback(c, o);
		if (e < 0 && w->r == 0)
			w->r = e;
		pthread_mutex_unlock(&c->lock);
		e = clio_dev_flush(o->o_dev);
		pthread_mutex_lock(&c->lock);
		if (e < 0)
			obj_flush_failed(c, o, e);
		if (e < 0 && w->r == 0)
			w->r = e;
		o->o_pins--;
		pthread_cond_broadcast(&c->cv); /* clio_cache_forget waits */
		obj_free_if_unused(c, o);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int
clio_sync(clio_cache *c)
{
	struct sync_walk w = { .c = c };
	pthread_t tid[SYNC_WALKERS - 1];
	unsigned nt = 0, want = 0, i;
	struct cobj *o;

	if (c == NULL)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	w.next = c->objs;
	if (w.next != NULL)
		w.next->o_pins++; /* kept while the lock is dropped */
	for (o = c->objs; o != NULL; o = o->o_next) {
		if (o->o_virtual) {
			want = 1;
			break;
		}
		want += want < SYNC_WALKERS;
	}
	pthread_mutex_unlock(&c->lock);
	while (nt + 1 < want && pthread_create(&tid[nt], NULL, sync_walker, &w) == 0)
		nt++;
	sync_walker(&w); /* this thread walks too */
	for (i = 0; i < nt; i++)
		pthread_join(tid[i], NULL);
	return w.r; /* every walker has ended: no lock needed */
}

#ifdef MADV_POPULATE_WRITE
/* The pages under [p, p + len) made present, their bytes unchanged; a
 * best effort (a page outside any mapping fails it: no matter). */
static void
populate_range(void *p, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)p / page * page;
	uintptr_t hi = ((uintptr_t)p + len + page - 1) / page * page;

	(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
}
#endif

/* The arena's pages made present and writable without a write (its
 * bytes stay what they are, so buffers in use are safe), and those of
 * the buffer headers and the hash table that go with them. */
int
clio_cache_prefault(clio_cache *c)
{
#ifdef MADV_POPULATE_WRITE
	if (c == NULL)
		return -EINVAL;
	/* more than the machine (or the cgroup) has: the OOM killer would
	 * choose among every process, not fail this call */
	if (c->arena_len > mem_available())
		return -ENOMEM;
	if (madvise(c->arena, c->arena_len, MADV_POPULATE_WRITE) != 0)
		return errno == EINVAL ? -ENOTSUP : -errno;
	populate_range(c->bufs, (size_t)c->nbuf * sizeof(*c->bufs));
	populate_range(c->hash, ((size_t)c->hmask + 1) * sizeof(*c->hash));
	return 0;
#else
	return c == NULL ? -EINVAL : -ENOTSUP;
#endif
}

int
clio_cache_free(clio_cache *c)
{
	uint32_t i;
	int r, k;

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
		cache_wait(c);
	for (struct cobj *o = c->objs; o != NULL; o = o->o_next)
		obj_wait_io(c, o);
	pthread_mutex_unlock(&c->lock);
	while (c->objs != NULL) {
		struct cobj *o = c->objs;
		c->objs = o->o_next;
		atomic_fetch_sub(&o->o_dev->objects, 1);
		free(o);
	}
	free(c->ohash);
	for (k = 0; k < BIO_CLASSES; k++) {
		while (c->bio_free[k] != NULL) {
			struct bio *io = c->bio_free[k];
			c->bio_free[k] = io->next;
			free(io);
		}
	}
	for (i = 0; i <= c->smask; i++)
		pthread_mutex_destroy(&c->stripes[i].lock);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cv);
	for (i = 0; i < IOWAIT_SLOTS; i++)
		pthread_cond_destroy(&c->iowait[i]);
	pthread_cond_destroy(&c->flusher_cv);
	munmap(c->arena, c->arena_len);
	free(c->hash);
	free(c->bufs);
	free(c->stripes);
	free(c);
	return r;
}

void
clio_cache_stats(clio_cache *c, struct clio_cache_stats *st)
{
	uint32_t i;

	if (st == NULL)
		return;
	if (c == NULL) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	st->dirty_bytes = c->ndirty * c->conf.bsize;
	st->cached_bytes = c->nvalid * c->conf.bsize;
	st->nbuf = c->nbuf;
	for (i = 0; i <= c->smask; i++) {
		struct stripe *s = &c->stripes[i];

		pthread_mutex_lock(&s->lock);
		st->hits += s->hits;
		st->readahead_used += s->readahead_used;
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&c->lock);
}
