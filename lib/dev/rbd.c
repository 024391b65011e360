/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rbd.c - the Ceph RBD backend (librbd):
 * `rbd:POOL/IMAGE[@SNAP][?conf=PATH&id=NAME&cluster=NAME&qd=N&timeout=S&osd_timeout=S]`.
 *
 * conf is the ceph.conf to read (default: librados's own search, which
 * honours CEPH_CONF), id the client's name without "client." (default
 * admin), cluster the cluster's name (default ceph), qd the requests in
 * flight (default 16), timeout the seconds that connecting and each
 * monitor operation may take (default 10: a dead cluster fails in
 * seconds), osd_timeout the seconds an OSD operation may take before it
 * fails with ETIMEDOUT (default 0: wait for the OSD, librados's default).
 * librbd's own cache is off (rbd_cache=false before rados_connect): clio
 * is the cache; librbd copies the data of each write when it starts
 * (rbd_disable_zero_copy_writes=true, threading rule 8).  librbd and librados are loaded at the first open
 * (rbdlib.h): a program that opens no rbd: device does not load them.
 *
 * What the image says is the device: its size, its object size
 * (params(), and maxio: a piece is at most one object's worth, so the
 * cache's clusters, aligned powers of two no larger than an object, map
 * each to one RADOS object).  A snapshot, or an image opened read-only,
 * is opened with rbd_open_read_only and is a fixed-size read-only device
 * (whose reads fail with ESTALE once another client deleted the snapshot:
 * rbd_read_check()); an image opened for writing is resizable: ftruncate is rbd_resize, and
 * a write past the end (which librbd refuses) first grows the image to
 * the write's end.
 *
 * Threading model:
 *  1. submit() starts each piece with rbd_aio_readv/writev/flush and a
 *     completion, and returns.  librbd calls rbd_callback() on one of its
 *     own threads: it takes the return value and queues the command on
 *     rd->done under rd->lock, nothing more (it must not block, and the
 *     device layer's completion may submit again or wait).
 *  2. One thread of the backend (rbd_main) takes the queued commands,
 *     releases their completions and calls dev_piece_done() holding no
 *     lock.  A command that cannot start is queued there too, with its
 *     error: submit() never calls dev_piece_done() (dev.h rule 2b).
 *  3. io() (synchronous pieces, dev.h rule 5, and deferred ones) starts
 *     the same calls and waits for its own callback, which wakes the
 *     waiters (rd->sync_cv) instead of queueing: it works in any thread,
 *     rbd_main included.
 *  4. A write past the image's end is deferred to io() on the worker
 *     pool, which grows the image under rd->resize_lock (never smaller
 *     than the largest end asked for) before writing.  rd->size is the
 *     image's size as this device last set or read it (rd->lock).
 *  5. close() runs with nothing outstanding (dev.h rule 6): it stops
 *     rbd_main, then closes the image, the pool and the connection
 *     (unless librbd holds abandoned commands: rule 8).
 *  6. rbd_seq (release before a command starts, acquire in its
 *     callback) orders the submitter's writes to the command before the
 *     callback's accesses; librbd's own hand-off between its threads
 *     gives no edge that thread sanitizers can see.
 *  8. With osd_timeout, a write or flush that librbd has not finished
 *     RBD_STUCK_FACTOR times osd_timeout after it started fails with
 *     ETIMEDOUT.  librbd delays writes for the image's exclusive lock, and
 *     while it cannot watch the image's header (an OSD that stopped
 *     answering but kept its connections) it retries that without end:
 *     osd_timeout alone would not bound them.  Such a command is
 *     abandoned: it leaves rd->live, its piece completes with -ETIMEDOUT
 *     (from rbd_main, or io()'s waiter returns it), and rbd_main frees it
 *     when librbd's callback comes at last.  Its piece's buffers are free
 *     at once: librbd copied a write's data when it started
 *     (rbd_disable_zero_copy_writes, above), and reads are never
 *     abandoned.  While librbd holds abandoned commands, later writes and
 *     flushes fail at once with -ETIMEDOUT, never started: a cluster that
 *     cannot answer fails an fsync in one deadline, not one per round of
 *     queue_depth pieces, and a write that failed this way and lands late
 *     never lands after a newer write of the same bytes.  close() waits
 *     up to timeout seconds for the abandoned; if some are left it leaks
 *     the image and the connection, which librbd still uses, rather than
 *     block.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "rbdlib.h"

#define RBD_DEFAULT_QD 16
#define RBD_MAX_QD 1024
#define RBD_DEFAULT_TIMEOUT 10
#define RBD_STUCK_FACTOR 4 /* threading rule 8 */

struct rbd_dev;

struct rbd_cmd {
	struct dev_io *p;
	struct rbd_dev *rd;
	rbd_completion_t comp;
	ssize_t ret;		/* librbd's return value, or the start's error */
	struct rbd_cmd *next;	/* rd->done */
	/* threading rule 8: a deadline, and for submit()'s commands rd->live,
	 * oldest first (rd->lock) */
	bool timed, listed, abandoned;
	struct timespec deadline;	/* CLOCK_MONOTONIC */
	struct rbd_cmd *live_prev, *live_next, *expired_next;
	/* io(): the waiter (rd->sync_cv), instead of rd->done */
	bool sync, finished;
};

struct rbd_dev {
	char *pool, *image, *snap, *conf, *id, *cluster_name;
	uint64_t snap_id;	/* snap's id when it opened */
	char header[RBD_MAX_BLOCK_NAME_SIZE + 16];	/* the image's header object */
	uint32_t qd;
	uint64_t timeout, osd_timeout;
	rados_t cluster;
	rados_ioctx_t ioctx;
	rbd_image_t img;
	bool connected, have_ioctx, have_img;
	uint64_t obj_size, stripe_unit, stripe_count, features;
	char prefix[RBD_MAX_BLOCK_NAME_SIZE];

	pthread_mutex_t lock;	/* done, stop, size, live, abandoned */
	pthread_cond_t cv;	/* done, stop or live changed */
	pthread_cond_t sync_cv;	/* an io() command finished, or abandoned fell */
	struct rbd_cmd *done_head, *done_tail;
	struct rbd_cmd *live_head, *live_tail;
	unsigned abandoned;	/* abandoned commands librbd still holds */
	bool stop;
	uint64_t size;
	pthread_mutex_t resize_lock;
	pthread_t thread;
	bool started;
};

static atomic_uint_fast64_t rbd_seq; /* threading rule 6 */

static bool
rbd_timed(const struct rbd_dev *rd, const struct dev_io *p)
{
	return rd->osd_timeout > 0 && p->op != CLIO_OP_READ;
}

static void
rbd_deadline(const struct rbd_dev *rd, struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(rd->osd_timeout * RBD_STUCK_FACTOR);
}

/* Threading rule 8: writes and flushes fail while librbd holds abandoned
 * ones. */
static bool
rbd_stuck(struct rbd_dev *rd)
{
	bool stuck;

	pthread_mutex_lock(&rd->lock);
	stuck = rd->abandoned > 0;
	pthread_mutex_unlock(&rd->lock);
	return stuck;
}

/* Threading rule 8: a write or flush gets its deadline when it starts;
 * submit()'s join rd->live (rd->lock held), io()'s waiter keeps its own. */
static void
rbd_live_add(struct rbd_dev *rd, struct rbd_cmd *cmd)
{
	cmd->timed = rbd_timed(rd, cmd->p);
	if (!cmd->timed)
		return;
	rbd_deadline(rd, &cmd->deadline);
	if (cmd->sync)
		return;
	cmd->live_next = NULL;
	cmd->live_prev = rd->live_tail;
	if (rd->live_tail != NULL)
		rd->live_tail->live_next = cmd;
	else
		rd->live_head = cmd;
	rd->live_tail = cmd;
	cmd->listed = true;
}

static void
rbd_live_remove(struct rbd_dev *rd, struct rbd_cmd *cmd)
{
	if (!cmd->listed)
		return;
	if (cmd->live_prev != NULL)
		cmd->live_prev->live_next = cmd->live_next;
	else
		rd->live_head = cmd->live_next;
	if (cmd->live_next != NULL)
		cmd->live_next->live_prev = cmd->live_prev;
	else
		rd->live_tail = cmd->live_prev;
	cmd->listed = false;
}

/* rd->lock held. */
static void
rbd_queue_done_locked(struct rbd_dev *rd, struct rbd_cmd *cmd)
{
	rbd_live_remove(rd, cmd);
	cmd->next = NULL;
	if (rd->done_tail != NULL)
		rd->done_tail->next = cmd;
	else
		rd->done_head = cmd;
	rd->done_tail = cmd;
	pthread_cond_signal(&rd->cv);
}

static void
rbd_queue_done(struct rbd_dev *rd, struct rbd_cmd *cmd)
{
	pthread_mutex_lock(&rd->lock);
	rbd_queue_done_locked(rd, cmd);
	pthread_mutex_unlock(&rd->lock);
}

/* Threading rule 1: on a librbd thread.  An abandoned io() command goes
 * to rbd_main, which frees it (rule 8). */
static void
rbd_callback(rbd_completion_t c, void *arg)
{
	struct rbd_cmd *cmd = arg;
	struct rbd_dev *rd;

	(void)atomic_load_explicit(&rbd_seq, memory_order_acquire);
	rd = cmd->rd; /* threading rule 6: after the acquire */
	cmd->ret = RBD(rbd_aio_get_return_value)(c);
	pthread_mutex_lock(&rd->lock);
	if (cmd->sync && !cmd->abandoned) {
		rbd_live_remove(rd, cmd);
		cmd->finished = true;
		pthread_cond_broadcast(&rd->sync_cv);
	} else {
		rbd_queue_done_locked(rd, cmd);
	}
	pthread_mutex_unlock(&rd->lock);
}

static uint64_t
rbd_size_get(struct rbd_dev *rd)
{
	uint64_t s;

	pthread_mutex_lock(&rd->lock);
	s = rd->size;
	pthread_mutex_unlock(&rd->lock);
	return s;
}

/* Start cmd's call: 0, 1 when it is done already (a read at or past the
 * end: 0 bytes), or -errno. */
static int
rbd_cmd_start(struct rbd_cmd *cmd)
{
	struct rbd_dev *rd = cmd->rd;
	struct dev_io *p = cmd->p;
	int r;

	if (p->op == CLIO_OP_READ && p->off >= rbd_size_get(rd)) {
		cmd->ret = 0;
		return 1;
	}
	rbd_completion_t comp;
	enum clio_op op = p->op;
	const struct iovec *iov = p->iov;
	int iovcnt = p->iovcnt;
	uint64_t off = p->off;

	r = RBD(rbd_aio_create_completion)(cmd, rbd_callback, &comp);
	if (r < 0)
		return r;
	cmd->comp = comp;
	pthread_mutex_lock(&rd->lock);
	rbd_live_add(rd, cmd);
	pthread_mutex_unlock(&rd->lock);
	/* threading rule 6: neither cmd nor p is touched from here on,
	 * unless librbd refused the command */
	atomic_fetch_add_explicit(&rbd_seq, 1, memory_order_release);
	switch (op) {
	case CLIO_OP_READ:
		r = RBD(rbd_aio_readv)(rd->img, iov, iovcnt, off, comp);
		break;
	case CLIO_OP_WRITE:
		r = RBD(rbd_aio_writev)(rd->img, iov, iovcnt, off, comp);
		break;
	case CLIO_OP_FLUSH:
	default:
		r = RBD(rbd_aio_flush)(rd->img, comp);
		break;
	}
	if (r < 0) {
		pthread_mutex_lock(&rd->lock);
		rbd_live_remove(rd, cmd);
		pthread_mutex_unlock(&rd->lock);
		RBD(rbd_aio_release)(comp);
		cmd->comp = NULL;
	}
	return r < 0 ? r : 0;
}

/* librbd's size of the image: another client may have changed it (librbd
 * reads the image's header again when told so). */
static uint64_t
rbd_size_now(struct rbd_dev *rd)
{
	uint64_t s;

	if (RBD(rbd_get_size)(rd->img, &s) < 0)
		return rbd_size_get(rd);
	return s;
}

/* 0 while the snapshot this device reads is in the image's header, as
 * the OSD holding it says now, -ESTALE once another client deleted it (or
 * the image), or -errno.  librbd's own view of the header is no help: an
 * image opened read-only at a snapshot does not follow the header's
 * changes, and reads a deleted snapshot's trimmed data as zeros. */
static int
rbd_snap_check(struct rbd_dev *rd)
{
	unsigned char out[16384]; /* seq, count, ids: 2046 snapshots */
	uint32_t n, i, k;
	int r;

	r = RBD(rados_exec)(rd->ioctx, rd->header, "rbd", "get_snapcontext", NULL, 0,
			    (char *)out, sizeof(out));
	if (r < 0)
		return r == -ENOENT ? -ESTALE : r;
	if (r < 12)
		return -EIO;
	for (n = 0, k = 0; k < 4; k++)
		n |= (uint32_t)out[8 + k] << (8 * k);
	if (n > ((uint32_t)r - 12) / 8)
		return -EIO;
	for (i = 0; i < n; i++) {
		uint64_t id = 0;

		for (k = 0; k < 8; k++)
			id |= (uint64_t)out[12 + 8 * i + k] << (8 * k);
		if (id == rd->snap_id)
			return 0;
	}
	return -ESTALE;
}

/* A snapshot's reads that finished are good only if it still exists after
 * they did: its deletion leaves the header before the OSDs trim its data.
 * *snap is 1 until the first read of a batch asks (then 0 or -errno). */
static int
rbd_read_check(struct rbd_dev *rd, int *snap)
{
	if (rd->snap == NULL)
		return 0;
	if (*snap == 1)
		*snap = rbd_snap_check(rd);
	return *snap;
}

/* The result of a finished command (dev.h rule 3), its completion freed;
 * *cut tells a write that met the image's end as librbd saw it (rule 7). */
static ssize_t
rbd_cmd_finish(struct rbd_cmd *cmd, bool *cut, int *snap)
{
	int r;

	struct dev_io *p = cmd->p;

	*cut = false;
	if (cmd->comp != NULL)
		RBD(rbd_aio_release)(cmd->comp);
	cmd->comp = NULL;
	if ((cmd->ret >= 0 || cmd->ret == -EINVAL) && p->op != CLIO_OP_FLUSH &&
	    rbd_size_now(cmd->rd) < p->off + p->len) {
		if (p->op == CLIO_OP_WRITE) {
			*cut = true;
			return -EINVAL;
		}
		if (cmd->ret == -EINVAL && rbd_size_now(cmd->rd) <= p->off)
			return 0; /* a read past the end */
	}
	if (cmd->ret < 0)
		return cmd->ret;
	if (p->op == CLIO_OP_READ && (r = rbd_read_check(cmd->rd, snap)) < 0)
		return r;
	if (p->op == CLIO_OP_FLUSH)
		return 0;
	if (p->op == CLIO_OP_READ) /* librbd clips a read at the end */
		return cmd->ret < (ssize_t)p->len ? cmd->ret : (ssize_t)p->len;
	return (ssize_t)p->len;
}

/* Threading rule 4: the image at least end bytes long, by librbd's size
 * (rd->size may be larger than the image: rule 7). */
static int
rbd_grow(struct rbd_dev *rd, uint64_t end)
{
	uint64_t s;
	int r = 0;

	pthread_mutex_lock(&rd->resize_lock);
	s = rbd_size_now(rd);
	if (end > s) {
		r = RBD(rbd_resize)(rd->img, end);
		s = end;
	}
	if (r == 0) {
		pthread_mutex_lock(&rd->lock);
		rd->size = s;
		pthread_mutex_unlock(&rd->lock);
	}
	pthread_mutex_unlock(&rd->resize_lock);
	return r;
}

static int
rbd_dev_resize(clio_dev *d, uint64_t size)
{
	struct rbd_dev *rd = d->priv;
	int r;

	pthread_mutex_lock(&rd->resize_lock);
	r = RBD(rbd_resize)(rd->img, size);
	if (r == 0) {
		pthread_mutex_lock(&rd->lock);
		rd->size = size;
		pthread_mutex_unlock(&rd->lock);
	}
	pthread_mutex_unlock(&rd->resize_lock);
	return r;
}

/* Rule 9: librbd's own trim and zeroing, synchronous. */
static int
rbd_dev_discard(clio_dev *d, uint64_t off, uint64_t len, bool zero)
{
	struct rbd_dev *rd = d->priv;
	ssize_t r;

	if (len == 0)
		return 0;
	if (zero)
		r = RBD(rbd_write_zeroes)(rd->img, off, len, 0, 0);
	else
		r = RBD(rbd_discard)(rd->img, off, len);
	return r < 0 ? (int)r : 0;
}

static void
rbd_submit(clio_dev *d, struct dev_io *p)
{
	struct rbd_dev *rd = d->priv;
	struct rbd_cmd *cmd;
	int r;

	if (p->op == CLIO_OP_WRITE && p->off + p->len > rbd_size_now(rd)) {
		dev_piece_defer(p); /* grows the image first, on the pool */
		return;
	}
	if ((cmd = calloc(1, sizeof(*cmd))) == NULL) {
		dev_piece_defer(p);
		return;
	}
	cmd->p = p;
	cmd->rd = rd;
	if (rbd_timed(rd, p) && rbd_stuck(rd)) /* threading rule 8 */
		r = -ETIMEDOUT;
	else
		r = rbd_cmd_start(cmd);
	if (r != 0) {
		if (r < 0)
			cmd->ret = r;
		rbd_queue_done(rd, cmd);
	}
}

/* Threading rule 3; rule 8 for a command that librbd holds too long. */
static ssize_t
rbd_io(clio_dev *d, struct dev_io *p)
{
	struct rbd_dev *rd = d->priv;
	struct rbd_cmd *cmd = calloc(1, sizeof(*cmd));
	bool cut = false, abandoned = false;
	int snap;
	ssize_t ret;
	int r, tries = 0;

	if (cmd == NULL)
		return -ENOMEM;
	cmd->p = p;
	cmd->rd = rd;
	cmd->sync = true;
	if (rbd_timed(rd, p) && rbd_stuck(rd)) { /* threading rule 8 */
		free(cmd);
		return -ETIMEDOUT;
	}
	do {
		if (p->op == CLIO_OP_WRITE &&
		    (cut || p->off + p->len > rbd_size_now(rd))) {
			r = rbd_grow(rd, p->off + p->len);
			if (r < 0) {
				ret = r;
				break;
			}
		}
		cmd->finished = false;
		r = rbd_cmd_start(cmd);
		if (r < 0) {
			ret = r;
			break;
		}
		if (r == 0) {
			pthread_mutex_lock(&rd->lock);
			while (!cmd->finished) {
				if (!cmd->timed) {
					pthread_cond_wait(&rd->sync_cv, &rd->lock);
				} else if (pthread_cond_timedwait(&rd->sync_cv, &rd->lock,
								  &cmd->deadline) == ETIMEDOUT &&
					   !cmd->finished) {
					cmd->abandoned = abandoned = true;
					rd->abandoned++;
					break;
				}
			}
			pthread_mutex_unlock(&rd->lock);
			if (abandoned)
				return -ETIMEDOUT; /* rbd_main frees cmd */
		}
		snap = 1;
		ret = rbd_cmd_finish(cmd, &cut, &snap);
	} while (cut && ++tries < 3);
	free(cmd);
	return ret;
}

static bool
rbd_expired(const struct rbd_cmd *cmd, const struct timespec *now)
{
	return now->tv_sec > cmd->deadline.tv_sec ||
	       (now->tv_sec == cmd->deadline.tv_sec &&
		now->tv_nsec >= cmd->deadline.tv_nsec);
}

/* Threading rule 8, rd->lock held: the expired commands of rd->live
 * abandoned, onto *expired. */
static void
rbd_expire(struct rbd_dev *rd, struct rbd_cmd **expired)
{
	struct timespec now;
	struct rbd_cmd *cmd;

	clock_gettime(CLOCK_MONOTONIC, &now);
	while ((cmd = rd->live_head) != NULL && rbd_expired(cmd, &now)) {
		rbd_live_remove(rd, cmd);
		cmd->abandoned = true;
		rd->abandoned++;
		cmd->expired_next = *expired;
		*expired = cmd;
	}
}

/* Threading rules 2 and 8. */
static void *
rbd_main(void *arg)
{
	struct rbd_dev *rd = arg;

	for (;;) {
		struct rbd_cmd *list, *cmd, *expired = NULL;
		int snap = 1;
		bool stop;

		pthread_mutex_lock(&rd->lock);
		for (;;) {
			struct timespec now;

			if (rd->done_head != NULL || rd->stop)
				break;
			if (rd->live_head == NULL) {
				pthread_cond_wait(&rd->cv, &rd->lock);
				continue;
			}
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (rbd_expired(rd->live_head, &now))
				break;
			pthread_cond_timedwait(&rd->cv, &rd->lock, &rd->live_head->deadline);
		}
		list = rd->done_head;
		rd->done_head = rd->done_tail = NULL;
		stop = rd->stop;
		rbd_expire(rd, &expired);
		pthread_mutex_unlock(&rd->lock);
		while ((cmd = list) != NULL) {
			struct dev_io *p = cmd->p;
			ssize_t r;
			bool cut;

			list = cmd->next;
			if (cmd->abandoned) {
				RBD(rbd_aio_release)(cmd->comp);
				free(cmd);
				pthread_mutex_lock(&rd->lock);
				if (--rd->abandoned == 0)
					pthread_cond_broadcast(&rd->sync_cv);
				pthread_mutex_unlock(&rd->lock);
				continue;
			}
			r = rbd_cmd_finish(cmd, &cut, &snap);
			free(cmd);
			if (cut)
				dev_piece_defer(p); /* io() grows the image first */
			else
				dev_piece_done(p, r);
		}
		/* the abandoned stay with librbd: their callbacks free them */
		while ((cmd = expired) != NULL) {
			expired = cmd->expired_next;
			dev_piece_done(cmd->p, -ETIMEDOUT);
		}
		if (stop)
			return NULL;
	}
}

/* Threading rule 8: true when librbd still holds abandoned commands after
 * timeout seconds; rd, the image and the connection must then stay. */
static bool
rbd_abandoned_left(struct rbd_dev *rd)
{
	struct timespec end;
	bool left;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)rd->timeout;
	pthread_mutex_lock(&rd->lock);
	while (rd->abandoned > 0 &&
	       pthread_cond_timedwait(&rd->sync_cv, &rd->lock, &end) != ETIMEDOUT)
		;
	left = rd->abandoned > 0;
	pthread_mutex_unlock(&rd->lock);
	return left;
}

static void
rbd_dev_free(struct rbd_dev *rd)
{
	if (rd->started && rbd_abandoned_left(rd))
		return;
	if (rd->started) {
		pthread_mutex_lock(&rd->lock);
		rd->stop = true;
		pthread_cond_signal(&rd->cv);
		pthread_mutex_unlock(&rd->lock);
		pthread_join(rd->thread, NULL);
	}
	if (rd->have_img)
		RBD(rbd_close)(rd->img);
	if (rd->have_ioctx)
		RBD(rados_ioctx_destroy)(rd->ioctx);
	if (rd->cluster != NULL)
		RBD(rados_shutdown)(rd->cluster);
	pthread_mutex_destroy(&rd->lock);
	pthread_mutex_destroy(&rd->resize_lock);
	pthread_cond_destroy(&rd->cv);
	pthread_cond_destroy(&rd->sync_cv);
	free(rd->pool);
	free(rd->image);
	free(rd->snap);
	free(rd->conf);
	free(rd->id);
	free(rd->cluster_name);
	free(rd);
}

static void
rbd_dev_close(clio_dev *d)
{
	rbd_dev_free(d->priv);
	dev_free(d);
}

static void
rbd_params(clio_dev *d, struct dev_params *o)
{
	struct rbd_dev *rd = d->priv;

	dev_param(o, "pool", "%s", rd->pool);
	dev_param(o, "image", "%s", rd->image);
	if (rd->snap != NULL)
		dev_param(o, "snap", "%s", rd->snap);
	dev_param(o, "image_size", "%llu", (unsigned long long)rbd_size_get(rd));
	dev_param(o, "object_size", "%llu", (unsigned long long)rd->obj_size);
	dev_param(o, "stripe_unit", "%llu", (unsigned long long)rd->stripe_unit);
	dev_param(o, "stripe_count", "%llu", (unsigned long long)rd->stripe_count);
	dev_param(o, "features", "0x%llx", (unsigned long long)rd->features);
	dev_param(o, "block_name_prefix", "%s", rd->prefix);
	dev_param(o, "conf", "%s", rd->conf != NULL ? rd->conf : "(default)");
	dev_param(o, "id", "%s", rd->id != NULL ? rd->id : "admin");
	dev_param(o, "cluster", "%s", rd->cluster_name != NULL ? rd->cluster_name : "ceph");
	dev_param(o, "rbd_cache", "false");
	dev_param(o, "qd", "%u", rd->qd);
	dev_param(o, "timeout", "%llu", (unsigned long long)rd->timeout);
	dev_param(o, "osd_timeout", "%llu", (unsigned long long)rd->osd_timeout);
}

static const struct dev_ops rbd_ops = {
	.scheme = "rbd",
	.io = rbd_io,
	.submit = rbd_submit,
	.resize = rbd_dev_resize,
	.close = rbd_dev_close,
	.params = rbd_params,
	.discard = rbd_dev_discard,
};

/* Read-only (a snapshot, or CLIO_DEV_RDONLY): a fixed size. */
static const struct dev_ops rbd_ro_ops = {
	.scheme = "rbd",
	.io = rbd_io,
	.submit = rbd_submit,
	.resize = NULL,
	.close = rbd_dev_close,
	.params = rbd_params,
};

struct rbd_parse {
	struct rbd_dev *rd;
	const char *spec;
	char *err;
	size_t errlen;
};

static int
rbd_query_kv(void *arg, const char *k, const char *v)
{
	struct rbd_parse *ps = arg;
	struct rbd_dev *rd = ps->rd;
	char **str = NULL;
	uint64_t n;

	if (strcmp(k, "conf") == 0)
		str = &rd->conf;
	else if (strcmp(k, "id") == 0)
		str = &rd->id;
	else if (strcmp(k, "cluster") == 0)
		str = &rd->cluster_name;
	if (str != NULL) {
		if (*v == '\0') {
			set_err(ps->err, ps->errlen, "rbd device '%s': empty %s=", ps->spec, k);
			return -EINVAL;
		}
		free(*str);
		if ((*str = strdup(v)) == NULL)
			return -ENOMEM;
		return 0;
	}
	if (strcmp(k, "qd") == 0) {
		if (parse_uint(v, &n) < 0 || n < 1 || n > RBD_MAX_QD) {
			set_err(ps->err, ps->errlen, "rbd device '%s': bad qd '%s' (1 to %d)",
				ps->spec, v, RBD_MAX_QD);
			return -EINVAL;
		}
		rd->qd = (uint32_t)n;
		return 0;
	}
	if (strcmp(k, "timeout") == 0 || strcmp(k, "osd_timeout") == 0) {
		bool osd = k[0] == 'o';

		if (parse_uint(v, &n) < 0 || n > 86400 || (!osd && n < 1)) {
			set_err(ps->err, ps->errlen, "rbd device '%s': bad %s '%s' "
				"(seconds, %d to 86400)", ps->spec, k, v, osd ? 0 : 1);
			return -EINVAL;
		}
		*(osd ? &rd->osd_timeout : &rd->timeout) = n;
		return 0;
	}
	set_err(ps->err, ps->errlen, "rbd device '%s': unknown key '%s' "
		"(conf, id, cluster, qd, timeout, osd_timeout)", ps->spec, k);
	return -EINVAL;
}

/* POOL/IMAGE[@SNAP][?QUERY] into rd. */
static int
rbd_parse_spec(struct rbd_dev *rd, const char *spec, char *err, size_t errlen)
{
	const char *s = spec + 4; /* after "rbd:" */
	const char *q = strchr(s, '?');
	size_t plen = q != NULL ? (size_t)(q - s) : strlen(s);
	char *path = strndup(s, plen), *slash, *at, *query;
	struct rbd_parse ps = { rd, spec, err, errlen };
	int r = 0;

	if (path == NULL)
		return -ENOMEM;
	slash = strchr(path, '/');
	at = slash != NULL ? strchr(slash + 1, '@') : NULL;
	if (at != NULL)
		*at++ = '\0';
	if (slash == NULL || slash == path || slash[1] == '\0' ||
	    strchr(slash + 1, '/') != NULL || (at != NULL && *at == '\0')) {
		set_err(err, errlen, "rbd device '%s': not rbd:POOL/IMAGE[@SNAP][?KEY=VALUE&...]",
			spec);
		free(path);
		return -EINVAL;
	}
	*slash = '\0';
	rd->pool = strdup(path);
	rd->image = strdup(slash + 1);
	rd->snap = at != NULL ? strdup(at) : NULL;
	free(path);
	if (rd->pool == NULL || rd->image == NULL || (at != NULL && rd->snap == NULL))
		return -ENOMEM;
	if (q != NULL && q[1] != '\0') {
		if ((query = strdup(q + 1)) == NULL)
			return -ENOMEM;
		r = parse_kv_list(query, '&', rbd_query_kv, &ps, "rbd", err, errlen);
		free(query);
	}
	return r;
}

static int
rbd_conf_set(struct rbd_dev *rd, const char *spec, const char *k,
	     const char *v, char *err, size_t errlen)
{
	int r = RBD(rados_conf_set)(rd->cluster, k, v);

	if (r < 0)
		set_err(err, errlen, "rbd device '%s': rados_conf_set %s=%s: %s",
			spec, k, v, strerror(-r));
	return r;
}

/* The connection, the pool and the image. */
static int
rbd_connect(struct rbd_dev *rd, const char *spec, bool ro, char *err,
	    size_t errlen)
{
	char name[256], secs[32], osd_secs[32];
	rbd_image_info_t info;
	int r;

	snprintf(name, sizeof(name), "client.%s", rd->id != NULL ? rd->id : "admin");
	r = RBD(rados_create2)(&rd->cluster, rd->cluster_name != NULL ? rd->cluster_name : "ceph",
			  name, 0);
	if (r < 0) {
		rd->cluster = NULL;
		set_err(err, errlen, "rbd device '%s': rados_create2 %s: %s", spec, name,
			strerror(-r));
		return r;
	}
	r = RBD(rados_conf_read_file)(rd->cluster, rd->conf);
	if (r < 0) {
		set_err(err, errlen, "rbd device '%s': cannot read the Ceph configuration "
			"'%s': %s", spec, rd->conf != NULL ? rd->conf : "(CEPH_CONF or "
			"/etc/ceph/ceph.conf)", strerror(-r));
		return r;
	}
	(void)RBD(rados_conf_parse_env)(rd->cluster, NULL);
	snprintf(secs, sizeof(secs), "%llu", (unsigned long long)rd->timeout);
	snprintf(osd_secs, sizeof(osd_secs), "%llu", (unsigned long long)rd->osd_timeout);
	if ((r = rbd_conf_set(rd, spec, "rbd_cache", "false", err, errlen)) < 0 ||
	    (r = rbd_conf_set(rd, spec, "rbd_disable_zero_copy_writes", "true", err,
			      errlen)) < 0 ||
	    (r = rbd_conf_set(rd, spec, "client_mount_timeout", secs, err, errlen)) < 0 ||
	    (r = rbd_conf_set(rd, spec, "rados_mon_op_timeout", secs, err, errlen)) < 0 ||
	    (r = rbd_conf_set(rd, spec, "rados_osd_op_timeout", osd_secs, err, errlen)) < 0)
		return r;
	r = RBD(rados_connect)(rd->cluster);
	if (r < 0) {
		set_err(err, errlen, "rbd device '%s': cannot connect to the cluster "
			"(mon host of %s, %llu s): %s", spec,
			rd->conf != NULL ? rd->conf : "the default ceph.conf",
			(unsigned long long)rd->timeout, strerror(-r));
		return r;
	}
	rd->connected = true;
	r = RBD(rados_ioctx_create)(rd->cluster, rd->pool, &rd->ioctx);
	if (r < 0) {
		set_err(err, errlen, "rbd device '%s': pool '%s': %s", spec, rd->pool,
			r == -ENOENT ? "no such pool" : strerror(-r));
		return r;
	}
	rd->have_ioctx = true;
	r = ro ? RBD(rbd_open_read_only)(rd->ioctx, rd->image, &rd->img, rd->snap)
	       : RBD(rbd_open)(rd->ioctx, rd->image, &rd->img, NULL);
	if (r < 0) {
		if (r == -ENOENT && rd->snap != NULL)
			set_err(err, errlen, "rbd device '%s': no image '%s' with a snapshot "
				"'%s' in pool '%s'", spec, rd->image, rd->snap, rd->pool);
		else
			set_err(err, errlen, "rbd device '%s': image '%s' in pool '%s': %s",
				spec, rd->image, rd->pool,
				r == -ENOENT ? "no such image" : strerror(-r));
		return r;
	}
	rd->have_img = true;
	if (rd->snap != NULL) {
		char id[RBD_MAX_BLOCK_NAME_SIZE];

		if ((r = RBD(rbd_snap_get_id)(rd->img, rd->snap, &rd->snap_id)) < 0 ||
		    (r = RBD(rbd_get_id)(rd->img, id, sizeof(id))) < 0) {
			set_err(err, errlen, "rbd device '%s': the ids of the image and "
				"of snapshot '%s': %s", spec, rd->snap, strerror(-r));
			return r;
		}
		snprintf(rd->header, sizeof(rd->header), "rbd_header.%s", id);
	}
	r = RBD(rbd_stat)(rd->img, &info, sizeof(info));
	if (r < 0) {
		set_err(err, errlen, "rbd device '%s': rbd_stat: %s", spec, strerror(-r));
		return r;
	}
	rd->size = info.size;
	rd->obj_size = info.obj_size;
	snprintf(rd->prefix, sizeof(rd->prefix), "%s", info.block_name_prefix);
	if (RBD(rbd_get_stripe_unit)(rd->img, &rd->stripe_unit) < 0)
		rd->stripe_unit = rd->obj_size;
	if (RBD(rbd_get_stripe_count)(rd->img, &rd->stripe_count) < 0)
		rd->stripe_count = 1;
	(void)RBD(rbd_get_features)(rd->img, &rd->features);
	return 0;
}

int
dev_rbd_open(const char *spec, int flags, clio_dev **dp, char *err,
	     size_t errlen)
{
	struct rbd_dev *rd = calloc(1, sizeof(*rd));
	clio_dev *d = NULL;
	char lib_err[320];
	pthread_condattr_t ca;
	bool ro;
	int r;

	if (rd == NULL)
		return -ENOMEM;
	pthread_mutex_init(&rd->lock, NULL);
	pthread_mutex_init(&rd->resize_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rd->cv, &ca);
	pthread_cond_init(&rd->sync_cv, &ca);
	pthread_condattr_destroy(&ca);
	rd->qd = RBD_DEFAULT_QD;
	rd->timeout = RBD_DEFAULT_TIMEOUT;
	r = rbd_parse_spec(rd, spec, err, errlen);
	if (r < 0)
		goto fail;
	r = rbd_lib_load(lib_err, sizeof(lib_err));
	if (r < 0) {
		set_err(err, errlen, "rbd device '%s': %s", spec, lib_err);
		goto fail;
	}
	ro = rd->snap != NULL || (flags & CLIO_DEV_RDONLY);
	r = rbd_connect(rd, spec, ro, err, errlen);
	if (r < 0)
		goto fail;
	r = dev_alloc(ro ? &rbd_ro_ops : &rbd_ops, spec, &d);
	if (r < 0)
		goto fail;
	d->priv = rd;
	d->size = rd->size;
	d->sector = 512;
	d->maxio = rd->obj_size > 0 && rd->obj_size <= (1u << 30) ? (uint32_t)rd->obj_size : 0;
	d->queue_depth = rd->qd;
	d->readonly = ro;
	r = -pthread_create(&rd->thread, NULL, rbd_main, rd);
	if (r < 0) {
		set_err(err, errlen, "rbd device '%s': pthread_create: %s", spec, strerror(-r));
		goto fail;
	}
	rd->started = true;
	snprintf(d->engine, sizeof(d->engine), "librbd (qd %u, rbd_cache off)", rd->qd);
	*dp = d;
	return 0;
fail:
	rbd_dev_free(rd);
	if (d != NULL)
		dev_free(d);
	return r;
}
