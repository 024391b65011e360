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

#endif
