/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * prefault.h - the `prefault` key of the nbdkit plugin and filter: their
 * cache's memory made present at start (clio_cache_prefault), so that no
 * client request pays the page faults of its first use.
 */
#ifndef CLIO_NBDKIT_PREFAULT_H
#define CLIO_NBDKIT_PREFAULT_H

#include <stdbool.h>

#include "clio.h"

/* 1: key is "prefault" and *on is set from value (on or off); 0: key is
 * another's; -1: a bad value (nbdkit_error names it). */
int prefault_config(const char *key, const char *value, bool *on);
/* Prefault c if on.  Never stops the server: a cache larger than the
 * memory available is left to first use, with a message; a kernel
 * without the call, with a debug line. */
void prefault_cache(clio_cache *c, bool on);

#endif
