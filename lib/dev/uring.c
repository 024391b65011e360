/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uring.c - the io_uring engine of the file backend: one ring per device
 * and one thread that reaps its completions.
 *
 * Invariants:
 *  1. Submitters fill and submit an SQE under u->sq_lock, one piece per
 *     SQE, and io_uring_submit() right away: the SQ never holds more than
 *     one entry between calls, and the device layer's queue depth (at most
 *     `entries` pieces in flight) keeps the CQ from overflowing.
 *  2. Only the completion thread reaps the CQ.  A CQE of -EAGAIN or
 *     -EINTR is started again; so is one of -ECANCELED, which nothing
 *     here asks for: the kernel cancels what a task left in flight when
 *     it exits, and the submitter may be a thread that ended since, while
 *     the completion thread lives as long as the ring.  Every other CQE
 *     goes to done() once.
 *  3. An SQE that io_uring_submit() failed to take becomes a NOP tagged
 *     `ignored`, so that a later submit cannot start its piece twice.
 *  4. The ring stops on a NOP whose user data is NULL, queued by
 *     uring_ring_free() when nothing else is in flight.
 *  5. u->seq (release on submit, acquire on reap) orders a submitter's
 *     writes to a piece before the completion thread's reads of it; the
 *     kernel's ring gives no such edge that thread sanitizers can see.
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "dev/uring.h"

struct uring_ring {
	struct io_uring ring;
	int fd;
	pthread_mutex_t sq_lock;
	pthread_t reaper;
	uring_done_fn *done;
	void *arg;
	atomic_uint_fast64_t seq; /* SQEs submitted */
};

static char ignored; /* the user data of a retracted SQE (invariant 3) */

/* Queue p's operation; under sq_lock. */
static bool
prep_locked(struct uring_ring *u, struct dev_io *p)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	if (sqe == NULL)
		return false;
	switch (p->op) {
	case CLIO_OP_READ:
		io_uring_prep_readv(sqe, u->fd, p->iov, (unsigned)p->iovcnt,
				    p->off);
		break;
	case CLIO_OP_WRITE:
		io_uring_prep_writev(sqe, u->fd, p->iov, (unsigned)p->iovcnt,
				     p->off);
		break;
	case CLIO_OP_FLUSH:
	default:
		io_uring_prep_fsync(sqe, u->fd, IORING_FSYNC_DATASYNC);
		break;
	}
	io_uring_sqe_set_data(sqe, p);
	atomic_fetch_add_explicit(&u->seq, 1, memory_order_release);
	if (io_uring_submit(&u->ring) >= 1)
		return true;
	atomic_fetch_sub_explicit(&u->seq, 1, memory_order_relaxed);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data(sqe, &ignored);
	return false;
}

bool
uring_ring_start(struct uring_ring *u, struct dev_io *p)
{
	bool ok;

	pthread_mutex_lock(&u->sq_lock);
	ok = prep_locked(u, p);
	pthread_mutex_unlock(&u->sq_lock);
	return ok;
}

uint64_t
uring_ring_submitted(struct uring_ring *u)
{
	return atomic_load(&u->seq);
}

static void *
reaper_main(void *arg)
{
	struct uring_ring *u = arg;

	for (;;) {
		struct io_uring_cqe *cqe;
		struct dev_io *p;
		int r = io_uring_wait_cqe(&u->ring, &cqe), res;

		if (r < 0)
			continue; /* -EINTR */
		(void)atomic_load_explicit(&u->seq, memory_order_acquire);
		p = io_uring_cqe_get_data(cqe);
		res = cqe->res;
		io_uring_cqe_seen(&u->ring, cqe);
		if (p == NULL)
			break;
		if ((void *)p == (void *)&ignored)
			continue;
		if ((res == -EAGAIN || res == -EINTR || res == -ECANCELED) &&
		    uring_ring_start(u, p))
			continue;
		u->done(u->arg, p, res);
	}
	return NULL;
}

int
uring_ring_new(int fd, unsigned entries, uring_done_fn *done, void *arg,
	       struct uring_ring **up, char *why, size_t whylen)
{
	struct uring_ring *u = calloc(1, sizeof(*u));
	int r;

	if (u == NULL)
		return -ENOMEM;
	r = io_uring_queue_init(entries, &u->ring, 0);
	if (r < 0) {
		snprintf(why, whylen, "io_uring_queue_init: %s", strerror(-r));
		free(u);
		return r;
	}
	u->fd = fd;
	u->done = done;
	u->arg = arg;
	atomic_init(&u->seq, 0);
	pthread_mutex_init(&u->sq_lock, NULL);
	r = -pthread_create(&u->reaper, NULL, reaper_main, u);
	if (r < 0) {
		snprintf(why, whylen, "pthread_create: %s", strerror(-r));
		pthread_mutex_destroy(&u->sq_lock);
		io_uring_queue_exit(&u->ring);
		free(u);
		return r;
	}
	*up = u;
	return 0;
}

void
uring_ring_free(struct uring_ring *u)
{
	for (;;) {
		struct io_uring_sqe *sqe;
		int r;

		pthread_mutex_lock(&u->sq_lock);
		sqe = io_uring_get_sqe(&u->ring);
		if (sqe != NULL) {
			io_uring_prep_nop(sqe);
			io_uring_sqe_set_data(sqe, NULL);
			atomic_fetch_add_explicit(&u->seq, 1,
						  memory_order_release);
			r = io_uring_submit(&u->ring);
			if (r < 1) {
				io_uring_prep_nop(sqe);
				io_uring_sqe_set_data(sqe, &ignored);
			}
		} else {
			r = -EBUSY;
		}
		pthread_mutex_unlock(&u->sq_lock);
		if (r >= 1)
			break;
	}
	pthread_join(u->reaper, NULL);
	pthread_mutex_destroy(&u->sq_lock);
	io_uring_queue_exit(&u->ring);
	free(u);
}
