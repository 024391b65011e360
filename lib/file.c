/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * file.c - handles and the byte-offset API: pread, pwrite, fsync,
 * ftruncate, close; the per-handle sequential heuristic; the direct (raw)
 * path.
 *
 * Invariants:
 *  1. Each handle keeps a sequential count per direction; it grows by the
 *     16 KiB units of each access that starts where the last one ended
 *     (or at offset 0 while the count is above 0), up to seqmax, and
 *     drops to 1 (or 0) on a seek.
 *  2. A partial write of a block that is not cached reads the block first
 *     (read-before-write) unless the write covers every byte of it below
 *     EOF; with rbw=cluster that read is a clustered read with the
 *     writer's count, with rbw=block a lone synchronous block read.
 *  3. The direct path moves data between the caller and the device in
 *     pieces of at most maxphys, after writing back the cached dirty data
 *     it overlaps; a direct write then drops the clean buffers it covers,
 *     once their holders let go: none keeps what the write replaced.
 *     While a direct write is in flight (on o_dwrites, from before that
 *     write-back until the drop), no buffered write changes a block it
 *     overlaps (whose old bytes would go back over it), and no truncate
 *     starts (a truncate waits for o_dwrites to empty before it sets
 *     o_truncating; a direct write waits for o_truncating to clear before
 *     it joins o_dwrites).
 *  4. A write-back error is reported once to each handle, by its next
 *     fsync or close; so is a failed device flush (an fsync's, a
 *     clio_sync's or a background one), which may have lost what it
 *     was to make durable.
 *  5. A buffered read holds a run of buffers at a time (READ_RUN, and a
 *     16th of the cache at most) and waits for nothing while it holds
 *     them; before taking a run it waits for the run's blocks in flight
 *     and starts reading its missing ones, holding nothing.  A run cut
 *     short by a block still being read is let go and taken again once
 *     that came (twice at most), so that a view gets whole runs.
 *  6. A read first takes the blocks that are valid, not being changed and
 *     carry no trip wire for it with stripe locks only (hit_lockless());
 *     the first block that is not such a hit, and all after it, go the
 *     way of a miss, under c->lock.
 *  7. A call that fails changes nothing: a truncate sets the new size and
 *     drops the blocks past it only after the device took the new size,
 *     and while it runs (o_truncating) writers and write-back of the
 *     object wait, so no write lands past the end it is setting.
 *  8. Sizes and offsets stay at or below INT64_MAX (clio_fsize returns
 *     the size as an int64_t): a write or truncate beyond gets -EFBIG.
 *  9. The sequential counts of a handle shared by threads are updated
 *     without a lock: a race only makes the heuristic guess worse.
 * 10. The close that leaves an object without handles writes back all
 *     of its dirty data before it lets the object go, or reports the
 *     failure: a close while another handle is open leaves its data to
 *     the last one, so the last one looks again after each pass, for
 *     what handles that came and went meanwhile wrote.  Nor does it
 *     return while a clio_sync holds the object (o_pins): after the
 *     last close nothing of the cache touches the device, which the
 *     caller may close (unless the object is kept, CLIO_KEEP).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "tier.h"

#define SEQ_UNIT 16384

static uint32_t
seq_update(clio_file *f, int rw, uint64_t off, size_t len)
{
	uint32_t seqmax = f->f_cache->conf.seqmax;
	uint32_t seq = atomic_load_explicit(&f->f_seq[rw], memory_order_relaxed);
	uint32_t old = seq;
	uint64_t next = atomic_load_explicit(&f->f_nextoff[rw],
					     memory_order_relaxed);

	if (off == next || (off == 0 && seq > 0)) {
		uint64_t add = DIV_ROUND_UP((uint64_t)len, SEQ_UNIT);
		if (len >= (uint64_t)seqmax * SEQ_UNIT || seq + add > seqmax)
			seq = seqmax;
		else
			seq += (uint32_t)add;
	} else {
		seq = seq > 1 ? 1 : 0;
	}
	if (seq != old)
		atomic_store_explicit(&f->f_seq[rw], seq, memory_order_relaxed);
	atomic_store_explicit(&f->f_nextoff[rw], off + len, memory_order_relaxed);
	return seq;
}

static struct cobj *
obj_get(clio_cache *c, clio_dev *d)
{
	struct cobj *o;

	o = obj_find(c, d);
	if (o != NULL)
		return o;
	struct clio_dev_info in;

	if (clio_dev_info(d, &in) < 0)
		return NULL;
	o = calloc(1, sizeof(*o));
	if (o == NULL)
		return NULL;
	o->o_dev = d;
	o->o_size = in.size;
	o->o_resizable = in.resizable;
	o->o_maxsize = d->max_size != 0 ? d->max_size : (uint64_t)INT64_MAX;
	o->o_readonly = in.readonly;
	o->o_virtual = in.is_virtual;
	o->o_sector = in.sector;
	o->o_qd = in.queue_depth;
	if (obj_insert(c, o) < 0) {
		free(o);
		return NULL;
	}
	atomic_fetch_add(&d->objects, 1);
	return o;
}

static void
obj_put(clio_cache *c, struct cobj *o)
{
	o->o_nhandles--;
	obj_free_if_unused(c, o);
}

int
clio_open(clio_cache *c, clio_dev *d, int flags, clio_file **fp)
{
	struct clio_dev_info in;
	clio_file *f;

	if (c == NULL || d == NULL || fp == NULL ||
	    (flags & CLIO_ACCMODE) == CLIO_ACCMODE ||
	    (flags & ~(CLIO_ACCMODE | CLIO_DIRECT | CLIO_KEEP)) != 0)
		return -EINVAL;
	if ((flags & CLIO_ACCMODE) != CLIO_RDONLY && clio_dev_info(d, &in) == 0 &&
	    in.readonly)
		return -EROFS;
	if (!dev_takes_blocks(d, c->conf.bsize))
		return -EINVAL;
	if (c->conf.disk_cache != NULL) {
		int r = tier_attach(d, &c->conf);
		if (r < 0)
			return r;
	}
	f = aligned_alloc(_Alignof(clio_file), sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	memset(f, 0, sizeof(*f));
	pthread_mutex_lock(&c->lock);
	f->f_obj = obj_get(c, d);
	if (f->f_obj == NULL) {
		pthread_mutex_unlock(&c->lock);
		free(f);
		return -ENOMEM;
	}
	f->f_obj->o_nhandles++;
	if (flags & CLIO_KEEP)
		f->f_obj->o_keep = true;
	f->f_cache = c;
	f->f_flags = flags;
	atomic_init(&f->f_seq[0], 1);
	atomic_init(&f->f_seq[1], 1);
	atomic_init(&f->f_nextoff[0], 0);
	atomic_init(&f->f_nextoff[1], 0);
	f->f_errseen = f->f_obj->o_errseq;
	f->f_lastw = -1;
	cache_check(c);
	pthread_mutex_unlock(&c->lock);
	*fp = f;
	return 0;
}

/* An error this handle has not been told about yet. */
static int
pending_error(clio_file *f)
{
	struct cobj *o = f->f_obj;

	if (o->o_errseq != f->f_errseen) {
		f->f_errseen = o->o_errseq;
		return -(o->o_err ? o->o_err : EIO);
	}
	return 0;
}

int
clio_close(clio_file *f)
{
	clio_cache *c;
	struct cobj *o;
	int r = 0, e;

	if (f == NULL)
		return -EINVAL;
	c = f->f_cache;
	o = f->f_obj;
	pthread_mutex_lock(&c->lock);
	/* the last handle: a write in flight may yet fail and leave its
	 * buffers dirty, so wait for it before looking.  On a device that
	 * flushes at close anyway (nfs: COMMIT), what was written back
	 * since the last flush is flushed here, where its error has a
	 * caller, also with nothing dirty.  While the lock is dropped for
	 * that, another handle may come, write and go (its close was not
	 * the last): this one still is, so it looks again, until a pass
	 * fails or nothing is left, and no clio_sync holds the object
	 * (invariant 10) */
	for (;;) {
		if (o->o_nhandles != 1)
			break;
		obj_wait_io(c, o);
		if (o->o_virtual)
			vclock_advance_to(o->o_wdone); /* we waited for them */
		if (o->o_nhandles != 1)
			break;
		if (r < 0 || (o->o_ndirty == 0 &&
			      (o->o_wbehind == 0 || !o->o_dev->flush_at_close))) {
			/* a clio_sync still uses the device: it may be
			 * closed once this returns */
			if (o->o_pins == 0)
				break;
			cache_wait(c);
			continue;
		}
		r = obj_writeback(c, o);
		o->o_wbehind = 0;
		pthread_mutex_unlock(&c->lock);
		e = clio_dev_flush(o->o_dev);
		pthread_mutex_lock(&c->lock);
		if (e < 0)
			obj_flush_failed(c, o, e);
		if (r == 0)
			r = e;
	}
	e = pending_error(f);
	if (r == 0)
		r = e;
	obj_put(c, o);
	cache_check(c);
	pthread_mutex_unlock(&c->lock);
	free(f);
	return r;
}

int64_t
clio_fsize(clio_file *f)
{
	if (f == NULL)
		return -EINVAL;
	return (int64_t)obj_size(f->f_obj);
}

/* ------------------------------------------------------------ direct */

/* Write back and wait out every cached block of [off, off+len); with
 * drop, also drop the clean ones.  A dirty block that cannot be written
 * fails the call: the device would not have its data. */
static int
direct_sync_range(clio_cache *c, struct cobj *o, uint64_t off, size_t len,
		  bool drop)
{
	uint64_t bs = c->conf.bsize, l, first = off / bs,
		 last = (off + len - 1) / bs, gen = ++c->fsync_gen;

	if (len == 0)
		return 0;
	for (l = first; l <= last; l++) {
		struct buf *b = buf_lookup(c, o, l);

		if (b == NULL)
			continue;
		if (b->b_state == B_DIRTY) {
			/* its write of this pass failed (not: it was written
			 * and another thread dirtied it again since) */
			if (b->b_tried == gen && (b->b_flags & BF_WERR))
				return -(o->o_err ? o->o_err : EIO);
			if (flush_buf(c, b, gen) == 0)
				obj_wait_truncate(c, o);
			l--; /* look again */
			continue;
		}
		if (b->b_state == B_READING || b->b_state == B_WRITING ||
		    (b->b_state == B_INVAL && b->b_hold > 0)) {
			buf_wait(c, b);
			l--;
			continue;
		}
		buf_touch(c, b);
		if (drop && !buf_discard_unheld(c, b)) {
			/* a reader may have filled it from storage before the
			 * write landed: let it copy out, then drop it */
			cache_wait(c);
			l--;
			continue;
		}
	}
	return 0;
}

/* Whether a direct write in flight on o overlaps [off, end). */
static bool
dwrite_overlaps(const struct cobj *o, uint64_t off, uint64_t end)
{
	const struct dwrite *w;

	for (w = o->o_dwrites; w != NULL; w = w->next)
		if (w->off < end && off < w->end)
			return true;
	return false;
}

static void
dwrite_remove(clio_cache *c, struct cobj *o, struct dwrite *dw)
{
	struct dwrite **pp;

	for (pp = &o->o_dwrites; *pp != dw; pp = &(*pp)->next)
		;
	*pp = dw->next;
	pthread_cond_broadcast(&c->cv);
}

static ssize_t
direct_io(clio_file *f, enum clio_op op, void *buf, size_t len, uint64_t off)
{
	clio_cache *c = f->f_cache;
	struct cobj *o = f->f_obj;
	clio_dev *d = o->o_dev;
	size_t done = 0, piece = c->conf.maxphys;
	struct dwrite dw = { off, off + len, NULL };
	ssize_t r = 0;

	/* as O_DIRECT: a read at or past EOF returns 0 however aligned, so
	 * that a reader's next read after a short one sees the end */
	if ((off | len) % o->o_sector != 0 &&
	    !(op == CLIO_OP_READ && off >= obj_size(o)))
		return -EINVAL;
	if (op == CLIO_OP_WRITE && off + len > (uint64_t)INT64_MAX)
		return -EFBIG;
	pthread_mutex_lock(&c->lock);
	obj_wait_truncate(c, o);
	if (op == CLIO_OP_READ) {
		if (off >= obj_size(o)) {
			pthread_mutex_unlock(&c->lock);
			return 0;
		}
		len = MIN((uint64_t)len, obj_size(o) - off);
	} else if (!o->o_resizable) {
		if (off >= obj_size(o)) {
			pthread_mutex_unlock(&c->lock);
			return len ? -ENOSPC : 0;
		}
		len = MIN((uint64_t)len, obj_size(o) - off);
	}
	if (op == CLIO_OP_WRITE) {
		/* before the write-back below: no buffered writer may dirty
		 * the range again until the write has landed */
		dw.end = off + len;
		dw.next = o->o_dwrites;
		o->o_dwrites = &dw;
	}
	r = direct_sync_range(c, o, off, len, op == CLIO_OP_WRITE);
	if (r < 0 && op == CLIO_OP_WRITE)
		dwrite_remove(c, o, &dw);
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;

	while (done < len) {
		size_t n = MIN(piece, len - done);
		if (op == CLIO_OP_READ)
			r = clio_dev_pread(d, (char *)buf + done, n, off + done);
		else
			r = clio_dev_pwrite(d, (char *)buf + done, n, off + done);
		if (r <= 0)
			break;
		done += (size_t)r;
	}

	pthread_mutex_lock(&c->lock);
	if (op == CLIO_OP_WRITE) {
		(void)direct_sync_range(c, o, off, done, true);
		/* a write of nothing past EOF grows nothing */
		if (done > 0 && off + done > obj_size(o))
			o->o_size = off + done;
		dwrite_remove(c, o, &dw);
	}
	pthread_mutex_unlock(&c->lock);
	if (r < 0 && done == 0)
		return r;
	return (ssize_t)done;
}

/* ------------------------------------------------------------ buffered */

/* Buffers a reader holds at once to copy out: at most 64, and at most a
 * 16th of the cache, so that readers never hold what others need to
 * allocate (a held buffer cannot be evicted). */

/* A lookup found b valid: count it, hold it, and wait for its last I/O
 * (virtual clock).  Only a random access earns the CLOCK reference bit:
 * a stream's buffers are used once. */
static void
buf_hit(clio_cache *c, struct buf *b, uint32_t seq)
{
	c->st.hits++;
	b->b_hold++;
	buf_touch(c, b);
	if (b->b_flags & BF_RA) {
		b->b_flags &= ~BF_RA;
		c->st.readahead_used++;
	}
	if (seq <= 1)
		b->b_flags |= BF_REF;
}

/* The buffer of the block at pos, valid and held, for a reader who wants
 * want bytes from pos on (c->lock held; it may be dropped meanwhile).
 * NULL with *r = 0: pos is at or past EOF (the file may have shrunk);
 * NULL with *r < 0: the read failed; with nowait, NULL and -EAGAIN
 * rather than wait for the buffer or read it. */
static struct buf *
read_getbuf(clio_cache *c, struct cobj *o, uint64_t pos, size_t want,
	    uint32_t seq, bool nowait, int *r)
{
	uint64_t bs = c->conf.bsize, lbn = pos / bs;
	struct buf *b;

	*r = 0;
	while (pos < o->o_size) {
		b = buf_lookup(c, o, lbn);
		if (b != NULL && (b->b_state == B_CLEAN || b->b_state == B_DIRTY ||
				  b->b_state == B_WRITING)) {
			buf_hit(c, b, seq);
			if ((b->b_flags & BF_RAM) && seq > 0) {
				b->b_flags &= ~BF_RAM;
				readahead(c, o, lbn, seq);
			}
		} else if (nowait) {
			*r = -EAGAIN;
			return NULL;
		} else if (!buf_absent(b)) {
			buf_wait(c, b);
			continue;
		} else {
			*r = cluster_read(c, o, lbn, want + (size_t)(pos % bs), seq,
					  true, &b);
			if (*r < 0)
				return NULL;
		}
		/* the lock may have been dropped: the block may have shrunk */
		if (b->b_state != B_FREE && pos < o->o_size)
			return b;
		buf_release(c, b);
	}
	return NULL;
}

/* Before a run is taken, holding no buffer: wait for the blocks of
 * [pos, end) that are being read, and start reading the missing ones
 * after the first (a miss on the first is the run's own synchronous
 * cluster), so that the run is not cut short at one of them. */
static void
read_prepare_run(clio_cache *c, struct cobj *o, uint64_t pos, uint64_t end)
{
	uint64_t bs = c->conf.bsize, first = pos / bs, lbn = first + 1;
	uint64_t elbn = DIV_ROUND_UP(end, bs), started = lbn;

	if (lbn >= elbn || buf_absent(buf_lookup(c, o, first)))
		return;
	while (lbn < elbn) {
		struct buf *b = buf_lookup(c, o, lbn);

		if (b == NULL && lbn >= started) {
			/* once per block: a failed read leaves it missing */
			uint64_t n = read_start(c, o, lbn, elbn);

			if (n == 0)
				break;
			started = lbn + n;
		} else if (b != NULL && (b->b_state == B_READING ||
					 (b->b_state == B_INVAL && b->b_hold > 0))) {
			buf_wait(c, b);	/* then look again */
		} else {
			lbn++;
		}
	}
}

/* The valid buffer of (o, lbn), held for reading, if a hit with only its
 * stripe lock can serve it: valid, not being changed, and no trip wire
 * that a sequential reader must act on.  NULL: take the way of a miss.
 * *ra says it was read ahead and not used before (BF_RA, now cleared). */
static struct buf *
hit_lockless(clio_cache *c, struct cobj *o, uint64_t lbn, uint32_t seq,
	     bool *ra)
{
	uint32_t h = buf_bucket(c, o, lbn);
	struct stripe *s = &c->stripes[h & c->smask];
	struct buf *b;
	unsigned fl;

	pthread_mutex_lock(&s->lock);
	b = buf_lookup_in(c, h, o, lbn);
	if (b == NULL || !buf_valid(b)) {
		pthread_mutex_unlock(&s->lock);
		return NULL;
	}
	fl = b->b_flags;
	if ((fl & BF_WLOCK) || ((fl & BF_RAM) && seq > 0)) {
		pthread_mutex_unlock(&s->lock);
		return NULL;
	}
	b->b_hold++;
	b->b_readers++;
	s->hits++;
	*ra = (fl & BF_RA) != 0;
	if (*ra) {
		atomic_fetch_and(&b->b_flags, ~(unsigned)BF_RA);
		s->readahead_used++;
	}
	if (seq <= 1 && !(fl & BF_REF))
		b->b_flags |= BF_REF;
	pthread_mutex_unlock(&s->lock);
	/* invariant 7; b->b_obj may be cleared now (a truncate dropped it) */
	if (o->o_virtual)
		vclock_advance_to(b->b_ready);
	return b;
}

/* Let go of a run held by read_lockless(); with undo, it was not used:
 * its hits are taken back and its read-ahead marks go back. */
static void
release_lockless(clio_cache *c, struct cobj *o, struct buf **run,
		 const bool *ra, int n, bool undo)
{
	int i;

	for (i = 0; i < n; i++) {
		if (undo) {
			struct stripe *s = stripe_of(c, o, run[i]->b_lbn);

			pthread_mutex_lock(&s->lock);
			s->hits--;
			if (ra[i]) {
				run[i]->b_flags |= BF_RA;
				s->readahead_used--;
			}
			pthread_mutex_unlock(&s->lock);
		}
		atomic_fetch_sub(&run[i]->b_readers, 1);
		buf_release_unlocked(c, run[i]);
	}
}

/* Lend the lockless hits from off on to view, run by run, up to len
 * bytes; *done grows by what was viewed.  A run is viewed only whole
 * (the full READ_RUN, or up to len): one cut short by a block that is no
 * such hit is let go, and the way of a miss takes it from its start, so
 * the runs are those the locked path would make.  Returns view's nonzero
 * return, or 0; *last says the final call was made. */
static int
read_lockless(clio_file *f, size_t len, uint64_t off, uint32_t seq,
	      clio_view_fn *view, void *arg, size_t *done, bool *last)
{
	clio_cache *c = f->f_cache;
	struct cobj *o = f->f_obj;
	uint64_t bs = c->conf.bsize;
	int maxrun = (int)c->read_maxrun;

	*last = false;
	while (*done < len) {
		struct buf *run[READ_RUN];
		struct iovec iov[READ_RUN];
		bool ra[READ_RUN];
		size_t got = 0;
		int nrun = 0, vr;

		while (*done + got < len && nrun < maxrun) {
			uint64_t pos = off + *done + got;
			size_t boff = (size_t)(pos % bs);
			struct buf *b = hit_lockless(c, o, pos / bs, seq, &ra[nrun]);

			if (b == NULL)
				break;
			run[nrun] = b;
			iov[nrun].iov_base = b->b_data + boff;
			iov[nrun].iov_len = MIN(bs - boff, len - *done - got);
			got += iov[nrun++].iov_len;
		}
		if (nrun < maxrun && *done + got < len) {
			release_lockless(c, o, run, ra, nrun, true);
			return 0;
		}
		*done += got;
		*last = *done == len;
		vr = view(arg, iov, nrun, *last);
		release_lockless(c, o, run, ra, nrun, false);
		if (vr != 0)
			return vr;
	}
	return 0;
}

/* Hands the bytes [off, off + len) to view run by run: each call gets the
 * held buffers of one hold as iovecs (last set on the final call, which
 * comes at EOF too, even with no bytes).  A view's nonzero return stops
 * the read and is returned. */
static ssize_t
read_runs_from(clio_file *f, size_t len, uint64_t off, clio_view_fn *view,
	       void *arg, uint32_t seq, double t0)
{
	clio_cache *c = f->f_cache;
	struct cobj *o = f->f_obj;
	uint64_t bs = c->conf.bsize, size = obj_size(o);
	size_t done = 0;
	int r = 0, maxrun;
	bool last = false;

	len = off >= size ? 0 : (size_t)MIN((uint64_t)len, size - off);
	if (len > 0) {
		r = read_lockless(f, len, off, seq, view, arg, &done, &last);
		if (r != 0 || last)
			goto out;
	}

	pthread_mutex_lock(&c->lock);
	cache_check(c);
	/* the file may have shrunk meanwhile */
	size = obj_size(o);
	if (off + done >= size)
		len = done;
	else
		len = MIN(len, (size_t)(size - off));
	maxrun = (int)c->read_maxrun;
	while (!last) {
		struct buf *run[READ_RUN];
		struct iovec iov[READ_RUN];
		int i, nrun = 0, vr, retries = 0;

		if (done < len) {
			uint64_t run_end = ((off + done) / bs + (uint64_t)maxrun) * bs;

			read_prepare_run(c, o, off + done, MIN(off + len, run_end));
		}
		/* Hold a run of buffers: the first may be waited for or read,
		 * the others only taken if valid now, as nothing may be
		 * waited for while buffers are held for reading. */
		while (done < len && nrun < maxrun) {
			uint64_t pos = off + done;
			size_t boff = (size_t)(pos % bs);
			struct buf *b = read_getbuf(c, o, pos, len - done, seq,
						    nrun > 0, &r);

			if (b == NULL && r == -EAGAIN && retries++ < 2) {
				/* a block after the first is still coming: let
				 * the run go, wait for its blocks holding
				 * nothing, and take it again, whole (a view
				 * gets its bytes in one call, as a hit's) */
				for (i = 0; i < nrun; i++) {
					done -= iov[i].iov_len;
					buf_read_end(c, run[i]);
					buf_release(c, run[i]);
				}
				nrun = 0;
				r = 0;
				read_prepare_run(c, o, off + done,
						 MIN(off + len, ((off + done) / bs + (uint64_t)maxrun) * bs));
				continue;
			}
			if (b == NULL) {
				if (r == -EAGAIN)
					r = 0;
				else
					len = done; /* EOF, or an error */
				break;
			}
			buf_read_begin(c, b);
			run[nrun] = b;
			iov[nrun].iov_base = b->b_data + boff;
			iov[nrun].iov_len = MIN(bs - boff, len - done);
			done += iov[nrun++].iov_len;
		}
		last = done == len && r == 0;
		if (nrun == 0 && !last)
			break;
		/* no lock while the view reads: writers wait for readers */
		pthread_mutex_unlock(&c->lock);
		vr = view(arg, iov, nrun, last);
		pthread_mutex_lock(&c->lock);
		for (i = 0; i < nrun; i++) {
			buf_read_end(c, run[i]);
			buf_release(c, run[i]);
		}
		if (vr != 0) {
			r = vr;
			break;
		}
		if (r < 0)
			break;
	}
	cache_check(c);
	pthread_mutex_unlock(&c->lock);
out:
	dev_account_front(o->o_dev, CLIO_OP_READ, done, dev_now(o->o_dev) - t0);
	if (r != 0) /* an error, or what the view returned */
		return r;
	return (ssize_t)done;
}

static ssize_t
read_runs(clio_file *f, size_t len, uint64_t off, clio_view_fn *view,
	  void *arg)
{
	double t0 = dev_now(f->f_obj->o_dev);

	return read_runs_from(f, len, off, view, arg, seq_update(f, 0, off, len), t0);
}

struct copy_out {
	char *p;
};


static int
copy_view(void *arg, const struct iovec *iov, int iovcnt, int last)
{
	struct copy_out *co = arg;
	int i;

	(void)last;
	for (i = 0; i < iovcnt; i++) {
		memcpy(co->p, iov[i].iov_base, iov[i].iov_len);
		co->p += iov[i].iov_len;
	}
	return 0;
}

/* clio_pread() of bytes inside one block: a lockless hit is copied out
 * here, as read_lockless() would with its one-buffer run, without the
 * iovecs and the view; anything else takes read_runs_from(). */
static ssize_t
read_in_block(clio_file *f, void *buf, size_t len, uint64_t off)
{
	struct cobj *o = f->f_obj;
	clio_cache *c = f->f_cache;
	uint64_t bs = c->conf.bsize, size = obj_size(o);
	double t0 = dev_now(o->o_dev);
	uint32_t seq = seq_update(f, 0, off, len);
	struct copy_out co = { buf };
	struct buf *b;
	bool ra;

	if (off >= size || len == 0)
		return read_runs_from(f, len, off, copy_view, &co, seq, t0);
	len = (size_t)MIN((uint64_t)len, size - off);
	b = hit_lockless(c, o, off / bs, seq, &ra);
	if (b == NULL)
		return read_runs_from(f, len, off, copy_view, &co, seq, t0);
	memcpy(buf, b->b_data + off % bs, len);
	release_lockless(c, o, &b, &ra, 1, false);
	dev_account_front(o->o_dev, CLIO_OP_READ, len, dev_now(o->o_dev) - t0);
	return (ssize_t)len;
}

ssize_t
clio_pread(clio_file *f, void *buf, size_t len, uint64_t off)
{
	struct copy_out co = { buf };

	if (f == NULL || (buf == NULL && len > 0))
		return -EINVAL;
	if ((f->f_flags & CLIO_ACCMODE) == CLIO_WRONLY)
		return -EBADF;
	if (f->f_flags & CLIO_DIRECT) {
		clio_dev *d = f->f_obj->o_dev;
		double t0 = dev_now(d);
		ssize_t n = direct_io(f, CLIO_OP_READ, buf, len, off);

		dev_account_front(d, CLIO_OP_READ, n > 0 ? (size_t)n : 0,
				  dev_now(d) - t0);
		return n;
	}
	if (len <= f->f_cache->conf.bsize - off % f->f_cache->conf.bsize)
		return read_in_block(f, buf, len, off);
	return read_runs(f, len, off, copy_view, &co);
}

ssize_t
clio_pread_view(clio_file *f, size_t len, uint64_t off, clio_view_fn *view,
		void *arg)
{
	struct iovec iov;
	uint64_t size, sec;
	ssize_t n;
	int vr;

	if (f == NULL || view == NULL)
		return -EINVAL;
	if ((f->f_flags & CLIO_ACCMODE) == CLIO_WRONLY)
		return -EBADF;
	if (!(f->f_flags & CLIO_DIRECT))
		return read_runs(f, len, off, view, arg);
	/* the raw path has no buffers to lend: read into one of ours, no
	 * longer than the data (an aligned length stays aligned) */
	size = obj_size(f->f_obj);
	sec = f->f_obj->o_sector ? f->f_obj->o_sector : 512;
	if (off < size && (off | len) % sec != 0)
		return -EINVAL; /* as clio_pread says, before any allocation */
	if (off >= size)
		len = 0;
	else if (len % sec == 0 && len > size - off)
		len = (size_t)(DIV_ROUND_UP(size - off, sec) * sec);
	iov.iov_base = malloc(len ? len : 1);
	if (iov.iov_base == NULL)
		return -ENOMEM;
	n = clio_pread(f, iov.iov_base, len, off);
	if (n >= 0) {
		iov.iov_len = (size_t)n;
		vr = view(arg, &iov, 1, 1);
		if (vr != 0)
			n = vr;
	}
	free(iov.iov_base);
	return n;
}

ssize_t
clio_pwrite(clio_file *f, const void *buf, size_t len, uint64_t off)
{
	clio_cache *c;
	struct cobj *o;
	uint64_t bs;
	double t0;
	size_t done = 0;
	uint32_t seq;
	int r = 0;

	if (f == NULL || (buf == NULL && len > 0))
		return -EINVAL;
	c = f->f_cache;
	o = f->f_obj;
	bs = c->conf.bsize;
	t0 = dev_now(o->o_dev);
	if ((f->f_flags & CLIO_ACCMODE) == CLIO_RDONLY)
		return -EBADF;
	if (off + len < off || off + len > (uint64_t)INT64_MAX ||
	    (o->o_resizable && off + len > o->o_maxsize && len > 0))
		return -EFBIG;
	if (f->f_flags & CLIO_DIRECT) {
		ssize_t n = direct_io(f, CLIO_OP_WRITE, (void *)buf, len, off);
		dev_account_front(o->o_dev, CLIO_OP_WRITE, n > 0 ? (size_t)n : 0,
				  dev_now(o->o_dev) - t0);
		return n;
	}
	pthread_mutex_lock(&c->lock);
	cache_check(c);
	obj_wait_truncate(c, o);
	seq = seq_update(f, 1, off, len);
	if (!o->o_resizable) {
		if (off >= o->o_size && len > 0) {
			pthread_mutex_unlock(&c->lock);
			return -ENOSPC;
		}
		len = MIN((uint64_t)len, o->o_size - off);
	}
	while (done < len) {
		uint64_t pos = off + done, lbn = pos / bs, bstart = lbn * bs;
		size_t boff = (size_t)(pos % bs), n = MIN(bs - boff, len - done);
		/* the old bytes of this block are all overwritten or past EOF */
		bool covers = boff == 0 &&
			      (n == bs || pos + n >= o->o_size);
		bool beyond = bstart >= o->o_size;
		struct buf *b = buf_lookup(c, o, lbn);

		if (b != NULL && (b->b_state == B_CLEAN || b->b_state == B_DIRTY)) {
			buf_hit(c, b, seq);
			if ((b->b_flags & BF_RAM) && seq > 0 &&
			    c->conf.rbw == CLIO_RBW_CLUSTER) {
				b->b_flags &= ~BF_RAM;
				readahead(c, o, lbn, seq);
				/* the lock was dropped: another thread may
				 * have dirtied it and begun writing it */
				if (b->b_state != B_CLEAN &&
				    b->b_state != B_DIRTY) {
					buf_release(c, b);
					continue;
				}
			}
		} else if (!buf_absent(b)) {
			buf_wait(c, b);
			continue;
		} else if (covers || beyond) {
			int err = 0;
			c->st.misses++;
			b = getblk(c, o, lbn, false, &err);
			if (b == NULL) {
				r = err;
				break;
			}
			if (b->b_state != B_INVAL || b->b_hold != 1) {
				/* someone else set it up meanwhile */
				b->b_hold--;
				continue;
			}
			if (bstart < o->o_size && !(boff == 0 &&
			    (n == bs || pos + n >= o->o_size))) {
				/* EOF moved while getblk waited: the block
				 * has old bytes to read after all */
				buf_release(c, b);
				continue;
			}
			memset(b->b_data, 0, bs);
		} else {
			bool clustered = c->conf.rbw == CLIO_RBW_CLUSTER &&
					 c->conf.cluster != CLIO_CLUSTER_OFF;
			c->st.rbw_reads++;
			r = cluster_read(c, o, lbn,
					 clustered ? c->conf.maxbsize : bs, seq,
					 clustered, &b);
			if (r < 0)
				break;
			if (b->b_state == B_WRITING) {
				buf_release(c, b);
				continue;
			}
		}
		if (buf_write_begin(c, b) && b->b_state != B_CLEAN &&
		    b->b_state != B_DIRTY && b->b_state != B_INVAL) {
			buf_write_end(c, b);
			buf_release(c, b); /* it changed while readers copied */
			continue;
		}
		if (b->b_state == B_FREE || o->o_truncating) {
			buf_write_end(c, b);
			buf_release(c, b);
			obj_wait_truncate(c, o);
			continue;
		}
		if (dwrite_overlaps(o, bstart, bstart + bs)) {
			/* its old bytes would go back over the direct write */
			buf_write_end(c, b);
			buf_release(c, b);
			cache_wait(c);
			continue;
		}
		memcpy(b->b_data + boff, (const char *)buf + done, n);
		buf_mark_dirty(c, b);
		buf_write_end(c, b);
		if (pos + n > o->o_size)
			o->o_size = pos + n;
		if (boff + n == bs)
			cluster_write(c, f, lbn, seq);
		buf_release(c, b);
		done += n;
	}
	if (done > 0)
		throttle_writer(c);
	cache_check(c);
	pthread_mutex_unlock(&c->lock);
	dev_account_front(o->o_dev, CLIO_OP_WRITE, done, dev_now(o->o_dev) - t0);
	if (done == 0 && r < 0)
		return r;
	return (ssize_t)done;
}

int
clio_writeback(clio_file *f)
{
	clio_cache *c;
	struct cobj *o;
	int r;

	if (f == NULL)
		return -EINVAL;
	c = f->f_cache;
	o = f->f_obj;
	pthread_mutex_lock(&c->lock);
	r = obj_writeback(c, o);
	if (r < 0)
		f->f_errseen = o->o_errseq;
	else
		r = pending_error(f);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int
clio_fsync(clio_file *f)
{
	clio_cache *c;
	struct cobj *o;
	int r, e;

	if (f == NULL)
		return -EINVAL;
	c = f->f_cache;
	o = f->f_obj;
	pthread_mutex_lock(&c->lock);
	r = obj_writeback(c, o);
	while (o->o_flushing) /* its error is this fsync's to report */
		cache_wait(c);
	o->o_wbehind = 0;
	pthread_mutex_unlock(&c->lock);
	e = clio_dev_flush(o->o_dev);
	pthread_mutex_lock(&c->lock);
	if (e < 0)
		obj_flush_failed(c, o, e); /* told here, and to the others */
	if (r < 0 || e < 0) {
		f->f_errseen = o->o_errseq;
		if (r == 0)
			r = e;
	} else {
		r = pending_error(f);
	}
	cache_check(c);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Drop o's buffers past size and zero the rest of the block it ends in,
 * once nothing of o is in flight and no reader copies from that block. */
static void
truncate_buffers(clio_cache *c, struct cobj *o, uint64_t size)
{
	uint64_t bs = c->conf.bsize;

	for (;;) {
		struct buf *b, *next;
		bool busy = false;

		obj_wait_io(c, o);
		for (b = o->o_bufs; b != NULL && !busy; b = next) {
			next = b->b_onext;
			if (b->b_state == B_INVAL && b->b_hold > 0) {
				busy = true;
				buf_wait(c, b);
			} else if (b->b_lbn * bs >= size) {
				buf_discard(c, b);
			} else if ((b->b_lbn + 1) * bs > size &&
				   b->b_state != B_INVAL) {
				size_t keep = (size_t)(size - b->b_lbn * bs);

				b->b_hold++;
				busy = buf_write_begin(c, b);
				if (!busy && b->b_state != B_FREE)
					memset(b->b_data + keep, 0, bs - keep);
				buf_write_end(c, b);
				buf_release(c, b);
			}
		}
		if (!busy && o->o_nio == 0)
			return;
	}
}

/* Take o for a truncate (c->lock held): one at a time; then writers and
 * write-back wait until obj_truncate_end(), and nothing of o is in
 * flight, so that the lock may be dropped for the device. */
void
obj_truncate_begin(clio_cache *c, struct cobj *o)
{
	for (;;) {
		obj_wait_truncate(c, o);
		if (o->o_dwrites == NULL)
			break;
		cache_wait(c);
	}
	o->o_truncating = true;
	obj_wait_io(c, o);
}

void
obj_truncate_end(clio_cache *c, struct cobj *o)
{
	o->o_truncating = false;
	pthread_cond_broadcast(&c->cv);
}

/* Resize the device of resizable o, then o, to *size (NULL: the size o
 * has once nothing is in flight), as one truncate (c->lock held, and
 * dropped meanwhile).  Returns 0 or the device's error. */
static int
obj_resize(clio_cache *c, struct cobj *o, const uint64_t *size)
{
	uint64_t to;
	int r;

	obj_truncate_begin(c, o);
	to = size != NULL ? *size : obj_size(o);
	pthread_mutex_unlock(&c->lock);
	r = clio_dev_resize(o->o_dev, to);
	pthread_mutex_lock(&c->lock);
	if (r == 0) {
		truncate_buffers(c, o, to);
		o->o_size = to;
	}
	obj_truncate_end(c, o);
	return r;
}

/* Discard b if it is idle and unheld; false if it had to wait first.
 * *past is set if b was dirty data past the device's end devsize. */
static bool
discard_idle(clio_cache *c, struct buf *b, uint64_t devsize, bool *past)
{
	bool dirty_past = b->b_state == B_DIRTY &&
			  (b->b_lbn + 1) * c->conf.bsize > devsize;

	if (b->b_state == B_READING || b->b_state == B_WRITING ||
	    (b->b_state == B_INVAL && b->b_hold > 0)) {
		buf_wait(c, b);
		return false;
	}
	if (!buf_discard_unheld(c, b)) {
		cache_wait(c);
		return false;
	}
	*past = *past || dirty_past;
	return true;
}

int
clio_discard(clio_file *f, uint64_t off, uint64_t len)
{
	clio_cache *c;
	struct cobj *o;
	uint64_t bs, size, end, first, last, l, devsize;
	struct buf *b, *next;
	bool past = false;
	int r = 0;

	if (f == NULL)
		return -EINVAL;
	c = f->f_cache;
	o = f->f_obj;
	bs = c->conf.bsize;
	if ((f->f_flags & CLIO_ACCMODE) == CLIO_RDONLY)
		return -EBADF;
	if (off + len < off)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	obj_wait_truncate(c, o);
	size = obj_size(o);
	end = off + len >= size ? (size + bs - 1) / bs * bs : off + len;
	first = off / bs + (off % bs != 0); /* off + bs - 1 may wrap */
	last = end / bs; /* exclusive */
	devsize = clio_dev_size(o->o_dev);
	if (first < last && last - first <= c->nbuf) {
		for (l = first; l < last; l++)
			if ((b = buf_lookup(c, o, l)) != NULL &&
			    !discard_idle(c, b, devsize, &past))
				l--; /* look again */
	} else if (first < last) { /* a long range: walk what is cached */
		for (b = o->o_bufs; b != NULL; b = next) {
			next = b->b_onext;
			if (b->b_lbn >= first && b->b_lbn < last &&
			    !discard_idle(c, b, devsize, &past))
				next = o->o_bufs; /* the list changed meanwhile */
		}
	}
	/* dirty blocks dropped past the device's end carried the size that
	 * writes gave the data: the device takes it now, as from a truncate,
	 * so that it is not lost with them */
	if (past && o->o_resizable && obj_size(o) > clio_dev_size(o->o_dev))
		r = obj_resize(c, o, NULL);
	cache_check(c);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int
clio_ftruncate(clio_file *f, uint64_t size)
{
	clio_cache *c;
	struct cobj *o;
	int r;

	if (f == NULL)
		return -EINVAL;
	c = f->f_cache;
	o = f->f_obj;
	if ((f->f_flags & CLIO_ACCMODE) == CLIO_RDONLY)
		return -EBADF;
	if (size > (uint64_t)INT64_MAX || (o->o_resizable && size > o->o_maxsize))
		return -EFBIG;
	if (!o->o_resizable)
		return size == clio_dev_size(o->o_dev) ? 0 : -EINVAL;
	pthread_mutex_lock(&c->lock);
	cache_check(c);
	r = obj_resize(c, o, &size);
	cache_check(c);
	pthread_mutex_unlock(&c->lock);
	return r;
}
