/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * prefault.c - the `prefault` key of the nbdkit plugin and filter
 * (prefault.h).  Invariant: the cache's contents are never changed by
 * it; with prefault=on a server starts with all of its cache resident,
 * or, when that is more than the memory available, with a message and
 * its cache left to first use.
 */
#include <nbdkit-plugin.h> /* nbdkit_error, nbdkit_debug: the same in filters */

#include <errno.h>
#include <string.h>

#include "prefault.h"

int
prefault_config(const char *key, const char *value, bool *on)
{
	if (strcmp(key, "prefault") != 0)
		return 0;
	if (strcmp(value, "on") == 0 || strcmp(value, "off") == 0) {
		*on = value[1] == 'n';
		return 1;
	}
	nbdkit_error("prefault: '%s' is neither on nor off", value);
	return -1;
}

void
prefault_cache(clio_cache *c, bool on)
{
	int r = on ? clio_cache_prefault(c) : 0;

	if (r == -ENOTSUP)
		nbdkit_debug("prefault: the kernel cannot populate memory; left to first use");
	else if (r < 0) /* the old way, page by page, rather than no server */
		nbdkit_error("prefault: the cache's memory left to its first use: %s",
			     r == -ENOMEM ? "more than the memory available" : strerror(-r));
}
