/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sigsync.h - a signal that ends nbdkit (SIGINT, SIGQUIT, SIGTERM,
 * SIGHUP, and SIGUSR1, SIGUSR2, SIGALRM, which it leaves to their default
 * action) makes the plugin's and the filter's cache write back at once,
 * not only when the last client has gone, and before the process dies.
 */
#ifndef CLIO_NBDKIT_SIGSYNC_H
#define CLIO_NBDKIT_SIGSYNC_H

#include "clio.h"

/* From .after_fork or .open: the first call starts the watch, each
 * call adds c to the caches it writes back (one watch for the filter's
 * and the plugin's: sigsync.c, invariant 4) and puts the handler in place
 * where nbdkit has set its own since (invariant 1); a failure to start
 * is logged, and the server goes on. */
void sigsync_start(clio_cache *c);
/* From .get_ready (before nbdkit forks): until the watch is in place,
 * SIGUSR1, SIGUSR2 and SIGALRM, which nbdkit leaves to their default
 * action, run fn, which must be async-signal-safe, then that action. */
void sigsync_early(void (*fn)(void));
/* fn runs on the watch thread once a signal's write-back is done, before
 * the process may end (the plugin removes its socket file). */
void sigsync_set_hook(void (*fn)(void));
/* Before c is freed: c no longer written back; with no cache left,
 * nbdkit's handlers back and the watch stopped. */
void sigsync_stop(clio_cache *c);
/* After sigsync_stop(c) and c freed with result r (clio_cache_free's, or
 * 0): once no cache is left, a failed write-back of any of them ends the
 * process with status 74 (EX_IOERR; sigsync.c invariant 5). */
void sigsync_end(int r);

#endif
