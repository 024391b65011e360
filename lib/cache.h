/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache.h - the buffer cache's structures, shared by cache.c (buffers,
 * replacement, dirty accounting, the flusher), cluster.c (read clusters,
 * read-ahead, write clusters) and file.c (the handles and the API).
 * The locking rules, the invariants and the state diagram are at the top
 * of cache.c.
 */
#ifndef CLIO_CACHE_H
#define CLIO_CACHE_H

#include <stdatomic.h>

#include "internal.h"

enum buf_state {
	B_FREE,	   /* on the free list, in no hash chain */
	B_INVAL,   /* hashed, no valid data, being set up by a holder */
	B_READING, /* hashed, a read is filling it */
	B_CLEAN,   /* valid, same as storage */
	B_DIRTY,   /* valid, newer than storage, on the dirty lists */
	B_WRITING, /* valid, a write of it is in flight */
};

#define BF_RAM 0x1	/* read-ahead trip wire: a hit starts the next batch */
#define BF_REF 0x2	/* referenced again since the clock hand passed */
#define BF_RA 0x4	/* filled by read-ahead and not used yet */
#define BF_WERR 0x8	/* its last write-back failed; still dirty */
#define BF_WANT 0x10	/* a thread waits for its holders to let go */
#define BF_RWAIT 0x20	/* a thread waits for its readers to finish */
#define BF_WLOCK 0x40	/* its data is being changed: no new lockless reader */
#define BF_FREEPEND 0x80 /* discarded while held: the last holder frees it */

/* Waking is needed when a holder lets go of a buffer with these. */
#define BF_WAKE (BF_WANT | BF_RWAIT | BF_FREEPEND)

struct cobj;

struct buf {
	struct cobj *b_obj;
	uint64_t b_lbn;
	unsigned char *b_data;
	_Atomic(enum buf_state) b_state;
	_Atomic unsigned b_flags;
	_Atomic int b_hold;	    /* threads that hold it: it is not evicted */
	_Atomic int b_readers;	    /* holders copying out of b_data */
	_Atomic double b_ready;	    /* virtual time its last I/O completed */
	double b_dirtied;	    /* real time it became dirty */
	uint64_t b_tried;	    /* fsync pass that last tried to write it */
	uint64_t b_dgen;	    /* c->fsync_gen when it became dirty */
	bool b_onfree;		    /* on the free list */
	struct buf *b_hnext;		/* hash chain (its stripe's lock) */
	struct buf *b_dprev, *b_dnext;	/* the cache's dirty list, oldest first */
	struct buf *b_odprev, *b_odnext; /* its object's dirty list */
	struct buf *b_oprev, *b_onext;	/* its object's buffers */
	struct buf *b_fnext;		/* free list */
};

/* A direct write in flight on an object (file.c, invariant 3). */
struct dwrite {
	uint64_t off, end;	/* the bytes [off, end) */
	struct dwrite *next;
};

/* A cached object: one device's data. */
struct cobj {
	clio_dev *o_dev;
	_Atomic uint64_t o_size; /* the size readers see */
	/* what the device is (clio_dev_info at the first open): the cache
	 * reads no field of the device itself */
	bool o_resizable, o_readonly, o_virtual;
	uint32_t o_sector, o_qd;
	uint64_t o_maxsize;	/* the largest size writes may reach */
	int o_nhandles;
	int o_pins;		/* holders other than handles (clio_sync) */
	uint64_t o_ndirty;	/* its dirty buffers */
	uint64_t o_nwerr;	/* of those, with BF_WERR */
	uint64_t o_nio;		/* its buffers under I/O */
	uint64_t o_bioseq;	/* requests submitted */
	struct bio *o_bioh, *o_biot; /* its requests in flight, by seq */
	int o_err;		/* last write-back error (positive errno) */
	int o_rerr;		/* last read error (positive errno) */
	uint64_t o_rerrseq;	/* bumped on each read failure */
	uint64_t o_errseq;	/* bumped on each write-back failure */
	double o_wdone;		/* virtual: latest write completion */
	uint64_t o_wbehind;	/* bytes written back since its last flush */
	bool o_flushing;	/* a background flush is in flight */
	bool o_truncating;	/* a truncate is resizing the device */
	struct dwrite *o_dwrites; /* direct writes in flight (never while
				     o_truncating) */
	bool o_keep;		/* kept after its last close (CLIO_KEEP) */
	bool o_have_v;		/* o_v holds the source's version */
	bool o_v_racy;		/* o_v may hide a change (validator_racy) */
	struct clio_validator o_v;
	struct buf *o_bufs;	/* its buffers (b_onext) */
	struct buf *o_dhead, *o_dtail; /* its dirty buffers, oldest first */
	struct cobj *o_next, **o_pprev;	/* c->objs */
	struct cobj *o_hnext;		/* c->ohash chain */
};

/* A lock for a slice of the hash chains, with the counters of the
 * lockless hits on its buffers (under the lock; clio_cache_stats sums). */
struct stripe {
	pthread_mutex_t lock;
	uint64_t hits, readahead_used;
} __attribute__((aligned(64)));

/* A request of the cache, kept for reuse by the size class of its
 * buffer count (bio_get/bio_put). */
struct bio {
	struct clio_req req;
	clio_cache *c;
	struct cobj *o;
	bool waited, done;
	int n, cls;
	uint64_t seq;		/* in flight: o->o_bioseq at its submission */
	struct bio *oprev, *onext; /* in flight: its object's, oldest first */
	struct bio *next;	/* free list of its class */
	struct buf **bufs;
	struct iovec *iov;
};
#define BIO_CLASSES 12 /* 1 .. 2048 buffers */

/* A buffered read holds at most READ_RUN buffers at once, and no more
 * than 1/READ_RUN_SHARE of the cache (file.c, invariant 5): enough for a
 * 1 MiB read (FUSE's largest) of 4 KiB blocks that starts inside one, so
 * that a view gets such a read in one call, not copied together. */
#define READ_RUN 257
#define READ_RUN_SHARE 16
static inline uint32_t
read_maxrun(uint32_t nbuf)
{
	uint32_t n = nbuf / READ_RUN_SHARE;

	return n < 1 ? 1 : n > READ_RUN ? READ_RUN : n;
}

#define IOWAIT_SLOTS 64

struct clio_cache {
	struct clio_conf conf;
	pthread_mutex_t lock;
	pthread_cond_t cv;	/* a buffer changed state, or was let go */
	uint32_t cv_waiters;	/* threads in cache_wait() */
	pthread_cond_t iowait[IOWAIT_SLOTS]; /* buf_wait_read(), by buffer */
	struct buf *bufs;
	uint32_t nbuf;
	uint32_t read_maxrun;	/* buffers a read holds at once (file.c) */
	unsigned char *arena;
	size_t arena_len;
	struct buf **hash;
	uint32_t hmask;
	struct stripe *stripes;
	uint32_t smask;
	struct buf *freelist;
	uint32_t hand;		/* CLOCK hand */
	struct buf *dirty_head, *dirty_tail;
	uint64_t ndirty, nwerr, nvalid, nio;
	uint64_t werr_max;	/* failed buffers one object may keep */
	uint64_t fsync_gen;
	struct cobj *objs;	/* every object, and by device in ohash */
	struct cobj **ohash;
	uint32_t ohmask, nobjs;
	struct bio *bio_free[BIO_CLASSES];
	uint32_t rcluster;	/* blocks in a read cluster */
	uint32_t wcluster;	/* blocks in a write cluster */
	uint64_t dirty_hi_bufs, dirty_lo_bufs;
	struct clio_cache_stats st;
	_Atomic int alloc_waiting; /* threads waiting for a buffer */
	uint64_t checks;	/* debug: invariant checks made */
	pthread_t flusher;
	bool flusher_running, stopping;
	pthread_cond_t flusher_cv;
};

/* A cache line of its own: threads reading through their own handles
 * write f_seq and f_nextoff on every call. */
struct clio_file {
	_Alignas(64) clio_cache *f_cache;
	struct cobj *f_obj;
	int f_flags;
	_Atomic uint32_t f_seq[2];	/* sequential counts: [0] reads, [1] writes */
	_Atomic uint64_t f_nextoff[2];
	uint64_t f_errseen;	/* o_errseq last reported to this handle */
	int64_t f_lastw;	/* last block this handle completed, -1 none */
};

/* cache.c: called with c->lock held unless noted. */
/* Wait on c->cv (counted: a completion wakes c->cv only if someone
 * waits there). */
void cache_wait(clio_cache *c);
/* Wait until b is no longer READING: its read completed. */
void buf_wait_read(clio_cache *c, struct buf *b);
struct buf *buf_lookup(clio_cache *c, struct cobj *o, uint64_t lbn);
struct stripe *stripe_of(clio_cache *c, const struct cobj *o, uint64_t lbn);
/* The hash bucket of (o, lbn), and a lookup in it: its stripe is
 * c->stripes[bucket & c->smask]. */
uint32_t buf_bucket(const clio_cache *c, const struct cobj *o, uint64_t lbn);
struct buf *buf_lookup_in(clio_cache *c, uint32_t bucket, struct cobj *o,
			  uint64_t lbn);
struct buf *getblk(clio_cache *c, struct cobj *o, uint64_t lbn, bool nowait,
		   int *err);
void buf_release(clio_cache *c, struct buf *b);
/* Let go of a buffer held without c->lock (the lockless read path). */
void buf_release_unlocked(clio_cache *c, struct buf *b);
void buf_discard(clio_cache *c, struct buf *b);
/* Discard b unless a thread holds it; false (and BF_WANT set) if held. */
bool buf_discard_unheld(clio_cache *c, struct buf *b);
void buf_mark_dirty(clio_cache *c, struct buf *b);
void buf_wait(clio_cache *c, struct buf *b);
/* A holder of a valid buffer copies out of b_data without c->lock
 * between these two (each called with the lock held). */
void buf_read_begin(clio_cache *c, struct buf *b);
void buf_read_end(clio_cache *c, struct buf *b);
/* Before changing b's data: keep lockless readers out (BF_WLOCK) and wait
 * until no reader copies out of it.  True if it waited (and so dropped
 * the lock: re-check b's state).  buf_write_end() lets readers in again. */
bool buf_write_begin(clio_cache *c, struct buf *b);
void buf_write_end(clio_cache *c, struct buf *b);
void buf_touch(clio_cache *c, struct buf *b);
/* Submit a read or write of bufs[0..n), contiguous blocks; drops and
 * retakes the lock.  With wait, returns the I/O's result after it
 * completed; otherwise 0 or a submission error. */
int bio_submit(clio_cache *c, struct cobj *o, enum clio_op op,
	       struct buf **bufs, int n, bool wait);
/* May b be written back now (dirty, not failed, its object not being
 * truncated)? */
bool buf_flushable(const struct buf *b);
/* Write b and its dirty neighbours as one request (drops the lock).
 * Returns the blocks submitted (0 if b may not be written now) or -errno. */
int flush_buf(clio_cache *c, struct buf *b, uint64_t gen);
/* Write the oldest flushable buffer: >0 if one was submitted, else 0. */
int flush_oldest(clio_cache *c);
void throttle_writer(clio_cache *c);
int obj_writeback(clio_cache *c, struct cobj *o);
void obj_flush_failed(clio_cache *c, struct cobj *o, int e);
void obj_wait_io(clio_cache *c, struct cobj *o);
void obj_wait_truncate(clio_cache *c, struct cobj *o);
void obj_truncate_begin(clio_cache *c, struct cobj *o);
void obj_truncate_end(clio_cache *c, struct cobj *o);
void obj_free_if_unused(clio_cache *c, struct cobj *o);
/* The object of device d, or NULL; obj_insert adds a new one (-ENOMEM). */
struct cobj *obj_find(clio_cache *c, const clio_dev *d);
int obj_insert(clio_cache *c, struct cobj *o);
bool cache_invariants(clio_cache *c);
void cache_check(clio_cache *c);

static inline bool
buf_valid_state(enum buf_state s)
{
	return s == B_CLEAN || s == B_DIRTY || s == B_WRITING;
}

static inline bool
buf_valid(const struct buf *b)
{
	return buf_valid_state(b->b_state);
}

/* No buffer for the block, or one that nobody is filling: a reader must
 * read the block itself. */
static inline bool
buf_absent(const struct buf *b)
{
	return b == NULL || (b->b_state == B_INVAL && b->b_hold == 0);
}

static inline uint64_t
obj_size(const struct cobj *o)
{
	return atomic_load_explicit(&o->o_size, memory_order_acquire);
}

static inline uint64_t
obj_nblocks(const clio_cache *c, const struct cobj *o)
{
	return DIV_ROUND_UP(obj_size(o), c->conf.bsize);
}

/* cluster.c */
int cluster_read(clio_cache *c, struct cobj *o, uint64_t lbn, size_t totread,
		 uint32_t seq, bool readahead, struct buf **bp);
void readahead(clio_cache *c, struct cobj *o, uint64_t lbn, uint32_t seq);
uint64_t read_start(clio_cache *c, struct cobj *o, uint64_t lbn, uint64_t end);
void cluster_write(clio_cache *c, clio_file *f, uint64_t lbn, uint32_t seq);
/* cache.c: write-behind of the dirty runs of [first, last] */
void push_range(clio_cache *c, struct cobj *o, uint64_t first, uint64_t last);

#endif
