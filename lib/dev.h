/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dev.h - the device object and the contract between the device layer
 * (dev.c) and its backends (the files of lib/dev/).
 *
 * The device layer cuts a request (struct clio_req) into pieces and hands
 * each piece to the backend as a struct dev_io.  The backend contract:
 *
 *  1. A backend moves one contiguous piece at a time.  The device layer has
 *     already checked that the piece lies inside the device (or that the
 *     device is resizable) and cut it at maxio bytes and at DEV_IOV_MAX
 *     iovecs, and nowhere else: a request of N iovecs that fits both limits
 *     reaches the backend as one piece of N iovecs.
 *  2. A backend implements io(), submit(), or both:
 *     a. io(d, p) is synchronous.  It returns the bytes moved or -errno.
 *        If it never blocks (`blocking` false) it runs inline in the thread
 *        that submitted the request; otherwise it runs on the one process-
 *        wide worker pool (`pool` in dev.c), never more than queue_depth
 *        pieces of the device at once.
 *     b. submit(d, p) is asynchronous: it starts the piece and returns at
 *        once; later, from its own completion path (any thread), it calls
 *        dev_piece_done(p, result) exactly once, with the same meaning of
 *        result as io()'s return.  One thread can so keep any number of
 *        pieces in flight; the device layer never has more than queue_depth
 *        of a device's pieces inside submit()'s backend at once, so a ring
 *        of queue_depth entries never overflows.  submit() must not call
 *        dev_piece_done() itself (a completion would run inside the
 *        submitter's locks); a piece it cannot start goes to
 *        dev_piece_defer(), which runs io() on the worker pool, so a
 *        backend with submit() and a piece to defer also implements io().
 *  3. A short count is no error: the device layer submits the rest of the
 *     piece again.  0 on a read means end of file: the rest reads as zeros.
 *     0 on a write is -EIO.
 *  4. On a virtual-clock device (is_virtual) the backend reads p->t_submit
 *     and sets p->t_start (when the device began to serve it) and
 *     p->t_done.  Real-clock backends leave them alone; the device layer
 *     measures.  clio_dev_submit() never moves the virtual clock; the
 *     synchronous calls advance it to the completion they waited for.
 *     Pieces of one split request share t_submit; a retry of the rest is
 *     submitted at the t_done of the attempt before it.
 *  5. The reads and writes of a request with CLIO_REQ_SYNC run through
 *     io() in the caller's thread, also when the backend has submit(): a
 *     hand-off to a completion thread and back costs more than the call
 *     (100000 synchronous 4 KiB reads of a cached file: 0.55 s inline,
 *     2.1 s through a ring); they take no queue slot, as the caller's
 *     thread is their limit.  Its flushes go through submit() when the
 *     backend has it, and the caller waits.
 *  6. close() frees the backend's state and then the device, with
 *     dev_free().  The device layer calls it only when no piece of the
 *     device is outstanding.  Read-only opening is the device layer's
 *     (d->readonly).
 *  7. params() (optional) writes the backend's parameters as key=value
 *     pairs with dev_param() (clio_dev_params, `clio info`).
 *  8. Wrappers (fault) open their inner backend with dev_open_spec() and
 *     call its io() directly: the inner runs synchronously, inside the
 *     wrapper's piece, and the wrapper is `blocking` when its inner is.
 *  9. discard() (optional) trims [off, off+len), or with zero true makes
 *     it read as zeros, synchronously in the caller's thread; the range
 *     lies inside the device, and no piece of it is in flight (the
 *     caller's promise).  -ENOTSUP: the backend cannot (a zeroing is
 *     then written by the device layer).  With len 0 it only says
 *     whether it can (0 or -ENOTSUP).
 */
#ifndef CLIO_DEV_H
#define CLIO_DEV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "clio.h"
#include "util.h"

/* A flag of dev_open_spec(): the device is a wrapper's inner (rule 8). */
#define DEV_OPEN_INNER 0x10000

/* The most iovecs one piece carries (Linux's UIO_MAXIOV). */
#define DEV_IOV_MAX 1024

/* One piece of a request, as a backend sees it. */
struct dev_io {
	enum clio_op op;
	uint64_t off;
	const struct iovec *iov;
	int iovcnt;
	size_t len;
	double t_submit, t_start, t_done; /* virtual clock only */
};

struct dev_params; /* the output of params() (dev.c) */

struct dev_ops {
	const char *scheme;
	ssize_t (*io)(clio_dev *d, struct dev_io *p);	 /* rule 2a */
	void (*submit)(clio_dev *d, struct dev_io *p);	 /* rule 2b */
	int (*resize)(clio_dev *d, uint64_t size);	 /* NULL: fixed size */
	void (*close)(clio_dev *d);
	void (*params)(clio_dev *d, struct dev_params *o); /* rule 7 */
	int (*discard)(clio_dev *d, uint64_t off, uint64_t len, bool zero); /* rule 9 */
	/* optional: the object's current version (clio_dev_version) */
	int (*version)(clio_dev *d, struct clio_validator *v);
};

struct dev_stat_acc;   /* dev.c */
struct dev_front_slot; /* dev.c */
struct dev_piece;      /* dev.c */

struct clio_dev {
	const struct dev_ops *ops;
	void *priv;		/* the backend's state */
	char *name;		/* the string it was opened from */
	uint64_t size;
	uint32_t sector;	/* logical sector size: direct transfers align to it */
	uint32_t maxio;		/* largest piece a backend takes; 0 = no limit */
	uint32_t queue_depth;	/* pieces in flight at the backend at most */
	uint64_t max_size;	/* resizable: the largest size, writes and
				   resizes past it -EFBIG (0: INT64_MAX) */
	bool blocking;		/* io() may block: it runs on the worker pool */
	bool is_virtual;
	bool readonly;
	bool aligned_only;	/* the backend refuses transfers not aligned
				   to sector (an NBD server's minimum block,
				   a program's callbacks): clio_open() on a
				   cache whose bsize is below it, EINVAL */
	bool flush_at_close;	/* the last clio_close() flushes what was
				   written back since the last flush (nfs:
				   its close's COMMIT has no caller) */
	char engine[96];	/* how pieces run: "inline", "uring", "threads (why)" */
	atomic_uint objects;	/* caches' objects of it: clio_dev_close
				   refuses (EBUSY) while there is one */

	/* dev.c: statistics, pieces in flight, the free list of pieces */
	pthread_mutex_t lock;	/* the back end's statistics, the queue, size */
	struct dev_stat_acc *back;
	/* DEV_FRONT_SLOTS + 1 of them, each allocated at its first use */
	struct dev_front_slot *_Atomic *front;
	struct dev_stat_acc *front_base; /* the front's sum at the last reset */
	int busy;		/* backend calls outstanding (busy time) */
	double busy_since;
	uint32_t inflight;	/* pieces inside io()-on-the-pool or submit() */
	uint32_t inflight_peak;	/* the most at once since opening */
	uint32_t outstanding;	/* pieces not yet completed */
	struct dev_piece *pend_head, *pend_tail; /* waiting for a slot */
	struct dev_piece *free_pieces;
	pthread_cond_t idle_cv;	/* outstanding reached 0 */
	bool uses_pool;
	struct tier *tier;	/* the disk tier every request goes through (tier.c) */
	int tier_bypass;	/* 1 + the fd of the object's bypass mark (tier.c), or 0 */
};

/* dev.c */
extern uint32_t dev_default_qd;
int dev_alloc(const struct dev_ops *ops, const char *name, clio_dev **dp);
void dev_free(clio_dev *d);
void dev_account_front(clio_dev *d, enum clio_op op, size_t len, double lat);
/* Whether a cache of bsize-byte blocks can use d (aligned_only). */
bool dev_takes_blocks(const clio_dev *d, uint32_t bsize);
double vclock_now(void);
/* The device's clock for timing the front end's requests: virtual time,
 * or now_fast()'s seconds (inline: read twice per request). */
static inline double
dev_now(const clio_dev *d)
{
	if (d->is_virtual)
		return vclock_now();
	return now_fast();
}
/* Rule 2b: the completion of a piece given to submit(). */
void dev_piece_done(struct dev_io *p, ssize_t result);
/* Rule 2b: run a piece given to submit() through io() on the worker pool. */
void dev_piece_defer(struct dev_io *p);
/* Rule 7: one parameter; the value is printf-formatted. */
void dev_param(struct dev_params *o, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Rule 8: the parameters of an inner device, each key prefixed. */
void dev_params_of(clio_dev *inner, const char *prefix, struct dev_params *o);

/* Open a backend from its string without registering it with the worker
 * pool (for wrappers such as fault, which call the inner backend's io()
 * directly). */
int dev_open_spec(const char *spec, int flags, clio_dev **dp, char *err,
		  size_t errlen);

/* Backend constructors.  opts is the part after the scheme. */
int dev_file_open(const char *path, const char *query, int flags,
		  clio_dev **dp, char *err, size_t errlen);
int dev_mem_open(const char *opts, int flags, clio_dev **dp, char *err,
		 size_t errlen);
int dev_sim_open(const char *opts, int flags, clio_dev **dp, char *err,
		 size_t errlen);
/* A fault device's inner device. */
clio_dev *dev_fault_inner(clio_dev *d);
int dev_fault_open(const char *opts, const char *inner, int flags,
		   clio_dev **dp, char *err, size_t errlen);
/* lib/dev/callback.c: the device of clio_dev_open_callbacks. */
int dev_callback_open(const char *name, uint64_t size, uint32_t sector,
		      uint32_t maxio, const struct clio_dev_callbacks *cb,
		      void *arg, uint32_t queue_depth, clio_dev **dp);
/* spec is the whole libnbd URI (nbd:, nbd+unix:, nbds:, nbds+unix:).
 * Weak: the installed static library has no NBD backend (a static
 * program cannot have libnbd's TLS and XML libraries), and there it is
 * NULL. */
int dev_nbd_open(const char *spec, int flags, clio_dev **dp, char *err,
		 size_t errlen) __attribute__((weak));
/* spec is the whole nfs:// URL (lib/dev/nfs.c).  Weak, as NBD's: the
 * installed static library has no NFS backend, and there it is NULL. */
int dev_nfs_open(const char *spec, int flags, clio_dev **dp, char *err,
		 size_t errlen) __attribute__((weak));
/* spec is the whole `nfs+sim:OPTS` string: the nfs engine over the
 * simulated server of lib/dev/nfssim.c.  Weak, as dev_nfs_open (it is in
 * lib/dev/nfs.c). */
int dev_nfssim_open(const char *spec, int flags, clio_dev **dp, char *err,
		    size_t errlen) __attribute__((weak));
/* The file's version from a GETATTR of an nfs device (-EINVAL for any
 * other device): size, mtime, ctime, fileid. */
int dev_nfs_validator(clio_dev *d, struct clio_validator *v) __attribute__((weak));
/* spec is the whole "rbd:POOL/IMAGE..." string.  Weak, and not in the
 * installed static library, as dev_nbd_open (librbd and librados). */
int dev_rbd_open(const char *spec, int flags, clio_dev **dp, char *err,
		 size_t errlen) __attribute__((weak));

#endif
