/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * filterdev.h - the next plugin of an nbdkit filter as a clio device
 * (filterdev.c).
 */
#ifndef CLIO_FILTERDEV_H
#define CLIO_FILTERDEV_H

#include <nbdkit-filter.h>

#include "clio.h"

/* Open next (a prepared context of the filter's own) as a clio device of
 * next's size, its block sizes, queue_depth transfers in flight; the
 * device owns next from here and finalizes and closes it at
 * clio_dev_close, also when this fails.  Returns 0 or -errno. */
int filterdev_open(nbdkit_next *next, uint32_t queue_depth, clio_dev **devp);

/* The final thread model nbdkit chose (.get_ready), before filterdev_open:
 * below parallel, every call into next is made by one thread at a time. */
void filterdev_set_thread_model(int thread_model);

/* Around a call into next made outside the device (the filter's trim and
 * zero): serialized with the device's calls when the model says so. */
void filterdev_enter(void);
void filterdev_leave(void);

#endif
