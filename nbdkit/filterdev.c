/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * filterdev.c - the plugin below the clio filter as a clio device: the
 * callbacks of clio_dev_open_callbacks calling nbdkit's next context.
 *
 * Invariants:
 *  1. One context for the whole server, opened by the filter outside any
 *     connection (shared): the device's worker threads call it in
 *     parallel, which nbdkit allows a filter of the parallel thread model.
 *  2. A transfer moves all its bytes or fails with the plugin's errno;
 *     a transfer longer than nbdkit's 32-bit count is never made (the
 *     device's maxio is at most the plugin's maximum block size and 32 MiB).
 *  3. A plugin that cannot write makes a read-only device; one that cannot
 *     flush a device whose flush does nothing.
 *  4. Under a thread model below parallel (a plugin or filter that is not
 *     thread-safe: nbdkit serializes the clients' requests, but not the
 *     calls the device's worker threads make), every call into next holds
 *     serial_lock: one at a time, the filter's trim and zero included
 *     (filterdev_enter).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "filterdev.h"

#define FILTERDEV_MAXIO (32u << 20)

struct filterdev {
	nbdkit_next *next;
	int can_flush;
};

static bool serial; /* invariant 4 */
static pthread_mutex_t serial_lock = PTHREAD_MUTEX_INITIALIZER;

void
filterdev_set_thread_model(int thread_model)
{
	serial = thread_model < NBDKIT_THREAD_MODEL_PARALLEL;
}

void
filterdev_enter(void)
{
	if (serial)
		pthread_mutex_lock(&serial_lock);
}

void
filterdev_leave(void)
{
	if (serial)
		pthread_mutex_unlock(&serial_lock);
}

static int
fd_err(int err)
{
	return -(err > 0 ? err : EIO);
}

static int
fd_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct filterdev *f = arg;
	int err = 0, r;

	filterdev_enter();
	r = f->next->pread(f->next, buf, (uint32_t)len, off, 0, &err);
	filterdev_leave();
	return r < 0 ? fd_err(err) : 0;
}

static int
fd_pwrite(void *arg, const void *buf, size_t len, uint64_t off)
{
	struct filterdev *f = arg;
	int err = 0, r;

	filterdev_enter();
	r = f->next->pwrite(f->next, buf, (uint32_t)len, off, 0, &err);
	filterdev_leave();
	return r < 0 ? fd_err(err) : 0;
}

static int
fd_flush(void *arg)
{
	struct filterdev *f = arg;
	int err = 0, r;

	if (!f->can_flush)
		return 0;
	filterdev_enter();
	r = f->next->flush(f->next, 0, &err);
	filterdev_leave();
	return r < 0 ? fd_err(err) : 0;
}

static void
fd_close(void *arg)
{
	struct filterdev *f = arg;

	f->next->finalize(f->next);
	nbdkit_next_context_close(f->next);
	free(f);
}

int
filterdev_open(nbdkit_next *next, uint32_t queue_depth, clio_dev **devp)
{
	struct clio_dev_callbacks cb = { fd_pread, fd_pwrite, fd_flush, fd_close };
	uint32_t minimum = 0, preferred = 0, maximum = 0, maxio = FILTERDEV_MAXIO;
	struct filterdev *f;
	int64_t size = next->get_size(next);
	int can_write = next->can_write(next);
	int r;

	f = calloc(1, sizeof(*f));
	if (f == NULL || size < 0 || can_write < 0 ||
	    next->block_size(next, &minimum, &preferred, &maximum) < 0 ||
	    (f->can_flush = next->can_flush(next)) < 0) {
		r = f == NULL ? -ENOMEM : -EIO;
		free(f);
		next->finalize(next);
		nbdkit_next_context_close(next);
		return r;
	}
	f->next = next;
	if (!can_write)
		cb.pwrite = NULL;
	if (minimum < 512)
		minimum = 512;
	if (maximum != 0 && maximum < maxio)
		maxio = maximum / minimum * minimum;
	r = clio_dev_open_callbacks("nbdkit-next", (uint64_t)size, minimum, maxio,
				    &cb, f, queue_depth, devp);
	if (r == -EINVAL)
		fd_close(f);
	return r;
}
