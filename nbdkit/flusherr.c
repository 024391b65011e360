/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * flusherr.c - write-back failures told to the clients of an NBD server
 * whose connections share one cache and one device (the clio filter and
 * the clio plugin, both multi-conn: a FLUSH on any connection covers the
 * writes acknowledged on all of them, before it).
 *
 * The library reports a write-back failure (or a failed device flush)
 * once to each handle open when it happens.  A connection opened after
 * it would never hear of it, and its FLUSH would succeed over writes
 * acknowledged earlier and lost meanwhile (dropped after the failure, on
 * a connection that closed, or one that has not flushed yet).
 *
 * Invariants:
 *  1. told is the cache's write_errors count, read once the FLUSH (or
 *     FUA write) that last failed returned: a client was told of those
 *     (its own failures among them); it only grows.
 *  2. A connection opened while write_errors is above told is owed one
 *     failure: its first FLUSH (or FUA) fails with EIO even when its own
 *     write-back succeeds, and that counts as telling.
 *  3. Failures after a connection's handle is open are the library's to
 *     report to it (clio_fsync).  One that lands between a failed FLUSH
 *     and the count read after it is not owed to the connections opened
 *     later: those open when it landed are told of it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "flusherr.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t told; /* invariant 1 */

static uint64_t
write_errors(clio_cache *c)
{
	struct clio_cache_stats st;

	clio_cache_stats(c, &st);
	return st.write_errors;
}

static void
set_told(uint64_t n)
{
	pthread_mutex_lock(&lock);
	if (n > told)
		told = n;
	pthread_mutex_unlock(&lock);
}

bool
flusherr_owed(clio_cache *c)
{
	uint64_t n = write_errors(c);
	bool owed;

	pthread_mutex_lock(&lock);
	owed = n > told;
	pthread_mutex_unlock(&lock);
	return owed;
}

int
flusherr_fsync(clio_cache *c, clio_file *f, bool *owed)
{
	int r = clio_fsync(f);

	if (r == 0 && *owed)
		r = -EIO;
	if (r < 0) {
		*owed = false;
		set_told(write_errors(c)); /* its own failures included */
	}
	return r;
}
