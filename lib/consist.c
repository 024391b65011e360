/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * consist.c - consistency of cached objects with a source that others
 * change: validators (close-to-open), and objects kept across closes.
 *
 * A front end tells the cache what it knows of the source's version (a
 * struct clio_validator: size, times, id, change attribute) when it opens
 * a file (clio_revalidate) and after its own writes changed the source
 * (clio_validator_set).  The same calls serve a directory under clio
 * mount, a remote file whose attributes come from the server, and a disk
 * tier after a restart.
 *
 * Invariants:
 *  1. An object's recorded validator is the version its clean buffers
 *     hold; clio_revalidate() with another one drops every clean buffer
 *     (waiting for their holders and for reads in flight, which may bring
 *     old data) before it returns; the disk tier's clean entries go
 *     before the memory's, so that no read between finds them.
 *     The first validator keeps them, and its size is taken as
 *     another's is (invariant 2), unless it is smaller than the
 *     object's: then they go too; if larger, the block the old end
 *     lies inside goes (its zeros past that end are not the source's).
 *     A validator recorded so soon after its change that a later one may
 *     not show (whole-second times: validator_racy) counts as another at
 *     the next look.
 *  2. Dirty and in-flight writes are never dropped: they are newer than
 *     any version of the source, and the size covers them.  A dirty block
 *     the old end lies inside takes a grown source's bytes past that end
 *     before the new size is taken (its zeros there are not newer).  A
 *     call that changes the size or drops buffers holds the object as a
 *     truncate does, from before that block is looked at until the size
 *     is taken: writers and write-back wait (a block a writer read
 *     meanwhile would hold zeros past the old end), nothing is in
 *     flight.  A fixed-size device keeps its own size whatever a
 *     validator says.
 *  3. A kept object (CLIO_KEEP) lives, with its clean buffers, until
 *     clio_cache_forget() or clio_cache_free(); the device must outlive
 *     it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cache.h"
#include "tier.h"

void
validator_of_stat(const struct stat *st, struct clio_validator *v)
{
	memset(v, 0, sizeof(*v));
	v->size = (uint64_t)st->st_size;
	v->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	v->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
	v->id = (uint64_t)st->st_ino;
}

int
validator_same(const struct clio_validator *a, const struct clio_validator *b)
{
	return a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       a->ctime_ns == b->ctime_ns && a->id == b->id &&
	       a->change == b->change;
}

/* Times in whole seconds (ext4 with 128-byte inodes, FAT: 2 s) tell no
 * change made within the second(s) of the last one: a version of them
 * recorded that soon is not to be trusted at the next look.  A change
 * attribute counts changes whatever the clock. */
int
validator_racy(const struct clio_validator *v)
{
	struct timespec ts;

	if (v->change != 0 || v->mtime_ns % 1000000000 != 0 ||
	    v->ctime_ns % 1000000000 != 0)
		return 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec -
		       MAX(v->mtime_ns, v->ctime_ns) < 2000000000;
}

/* Invariant 1: whether o's clean buffers may not be of the version v. */
static bool
version_changed(const struct cobj *o, const struct clio_validator *v)
{
	return o->o_have_v && (o->o_v_racy || !validator_same(&o->o_v, v));
}

/* Drop every clean buffer of o; return the end of its newest data that
 * stays (dirty or being written), 0 if none. */
static uint64_t
drop_clean(clio_cache *c, struct cobj *o)
{
	uint64_t bs = c->conf.bsize, end;
	struct buf *b, *next;

again:
	end = 0;
	for (b = o->o_bufs; b != NULL; b = next) {
		next = b->b_onext;
		if (b->b_state == B_READING ||
		    (b->b_state == B_INVAL && b->b_hold > 0)) {
			buf_wait(c, b);
			goto again;
		}
		if (b->b_state == B_DIRTY || b->b_state == B_WRITING) {
			end = MAX(end, (b->b_lbn + 1) * bs);
			continue;
		}
		if (!buf_discard_unheld(c, b)) {
			/* a reader copies out of it: let it finish */
			cache_wait(c);
			goto again;
		}
	}
	return MIN(end, obj_size(o));
}

/* Drop the clean buffer of the block o's data ends inside: its bytes past
 * the end are zeros, not what a larger source holds there. */
static void
drop_clean_tail(clio_cache *c, struct cobj *o)
{
	uint64_t bs = c->conf.bsize;
	struct buf *b;

	while (obj_size(o) % bs != 0 &&
	       (b = buf_lookup(c, o, obj_size(o) / bs)) != NULL) {
		if (b->b_state == B_READING ||
		    (b->b_state == B_INVAL && b->b_hold > 0)) {
			buf_wait(c, b);
		} else if (b->b_state != B_CLEAN || buf_discard_unheld(c, b)) {
			return;
		} else {
			cache_wait(c); /* a reader copies out of it */
		}
	}
}

/* The dirty block o's data ends inside holds zeros past that end, where a
 * source grown to vsize has bytes: take them into it, so that its
 * write-back does not put zeros over them.  The caller holds o as for a
 * truncate (writers and write-back wait).  Returns 0 or the read's
 * error. */
static int
merge_tail(clio_cache *c, struct cobj *o, uint64_t vsize)
{
	uint64_t bs = c->conf.bsize, end, len;
	struct buf *b;
	char *tmp;
	ssize_t n;

	end = obj_size(o);
	b = end % bs != 0 && vsize > end ? buf_lookup(c, o, end / bs) : NULL;
	if (b == NULL || b->b_state != B_DIRTY)
		return 0;
	len = MIN(end / bs * bs + bs, vsize) - end;
	b->b_hold++;
	pthread_mutex_unlock(&c->lock);
	tmp = malloc(len);
	n = tmp != NULL ? clio_dev_pread(o->o_dev, tmp, len, end) : -ENOMEM;
	pthread_mutex_lock(&c->lock);
	if (n == (ssize_t)len) {
		buf_write_begin(c, b); /* no reader copies from it */
		if (b->b_state == B_DIRTY && obj_size(o) == end)
			memcpy(b->b_data + end % bs, tmp, len);
		buf_write_end(c, b);
	}
	buf_release(c, b);
	free(tmp);
	return n < 0 ? (int)n : 0;
}

int
clio_revalidate(clio_file *f, const struct clio_validator *v)
{
	clio_cache *c;
	struct cobj *o;
	uint64_t keep;
	bool busy;
	int r = 0;

	if (f == NULL || v == NULL || v->size > (uint64_t)INT64_MAX)
		return -EINVAL;
	c = f->f_cache;
	o = f->f_obj;
	pthread_mutex_lock(&c->lock);
	obj_wait_truncate(c, o);
	if (version_changed(o, v)) {
		/* the disk tier holds the old version too: it goes first, so
		 * that no read that misses after the drop below finds the
		 * old blocks there (reads in flight are waited for) */
		pthread_mutex_unlock(&c->lock);
		tier_drop(o->o_dev);
		pthread_mutex_lock(&c->lock);
		obj_wait_truncate(c, o);
	}
	/* what changes, changes as in a truncate: writers and write-back
	 * wait until the size is taken (a block a writer read meanwhile
	 * would hold zeros past the old end), nothing is in flight */
	busy = version_changed(o, v) ||
	       (!o->o_have_v && o->o_resizable && v->size != obj_size(o));
	if (busy)
		obj_truncate_begin(c, o);
	if (busy && (version_changed(o, v) || !o->o_have_v) &&
	    o->o_resizable && v->size > obj_size(o) &&
	    (r = merge_tail(c, o, v->size)) < 0) {
		obj_truncate_end(c, o);
		pthread_mutex_unlock(&c->lock);
		return r; /* v is not recorded: the next call tries again */
	}
	if (version_changed(o, v)) {
		keep = drop_clean(c, o);
		if (o->o_resizable) /* a fixed device's size is its own */
			o->o_size = MAX(v->size, keep);
		r = 1;
	} else if (!o->o_have_v && o->o_resizable) {
		/* the first word on its version: the size is the source's,
		 * or the end of the dirty data where that is larger; blocks
		 * cached past a smaller one are not the source's (a write
		 * past the end would show their bytes, not zeros) */
		if (v->size > obj_size(o)) {
			drop_clean_tail(c, o);
			o->o_size = v->size;
		} else if (v->size < obj_size(o)) {
			keep = drop_clean(c, o);
			o->o_size = MAX(v->size, keep);
		}
	}
	o->o_v = *v;
	o->o_v_racy = validator_racy(v);
	o->o_have_v = true;
	if (busy)
		obj_truncate_end(c, o);
	cache_check(c);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int
clio_validator_set(clio_file *f, const struct clio_validator *v)
{
	clio_cache *c;

	if (f == NULL || v == NULL)
		return -EINVAL;
	c = f->f_cache;
	pthread_mutex_lock(&c->lock);
	f->f_obj->o_v = *v;
	f->f_obj->o_v_racy = validator_racy(v);
	f->f_obj->o_have_v = true;
	pthread_mutex_unlock(&c->lock);
	/* the disk tier too: after a crash its entries, dirty ones above
	 * all, are not taken for another writer's */
	tier_settle(f->f_obj->o_dev);
	return 0;
}

int
clio_cache_forget(clio_cache *c, clio_dev *d)
{
	struct cobj *o;
	int r = 0;

	if (c == NULL || d == NULL)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	o = obj_find(c, d);
	if (o == NULL) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	if (o->o_nhandles > 0) {
		pthread_mutex_unlock(&c->lock);
		return -EBUSY;
	}
	o->o_pins++;
	if (o->o_ndirty > 0)
		r = obj_writeback(c, o);
	/* nothing may touch the device once this returns: wait out every
	 * I/O and every other pin (a clio_sync flushing it) at one time */
	while (o->o_nio > 0 || o->o_flushing || o->o_pins > 1)
		cache_wait(c);
	o->o_keep = false;
	o->o_pins--;
	pthread_cond_broadcast(&c->cv); /* a last close waits for pins */
	if (o->o_nhandles == 0)
		obj_free_if_unused(c, o);
	pthread_mutex_unlock(&c->lock);
	return r;
}
