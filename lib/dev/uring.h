/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uring.h - an io_uring ring that runs the pieces of one file descriptor
 * (lib/dev/uring.c), for the file backend's engine=uring.
 */
#ifndef CLIO_DEV_URING_H
#define CLIO_DEV_URING_H

#include <stdbool.h>
#include <stdint.h>

#include "dev.h"

struct uring_ring;

/* Called on the ring's completion thread with the result of a piece. */
typedef void uring_done_fn(void *arg, struct dev_io *p, int res);

/* A ring of `entries` (at least the pieces ever in flight at once) over fd,
 * and its completion thread.  On failure returns -errno and writes the
 * reason, one line naming the failing call, into why. */
int uring_ring_new(int fd, unsigned entries, uring_done_fn *done, void *arg,
		   struct uring_ring **up, char *why, size_t whylen);
/* Stops the completion thread; no piece may be in flight. */
void uring_ring_free(struct uring_ring *u);
/* Starts p: readv or writev at p->off, or fdatasync for a flush.  False
 * if the ring did not take it (the caller runs it another way). */
bool uring_ring_start(struct uring_ring *u, struct dev_io *p);
/* Submission queue entries submitted so far. */
uint64_t uring_ring_submitted(struct uring_ring *u);

#endif
