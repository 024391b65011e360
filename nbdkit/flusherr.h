/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * flusherr.h - write-back failures told to the clients of an NBD server
 * whose connections share one cache (flusherr.c).
 */
#ifndef CLIO_FLUSHERR_H
#define CLIO_FLUSHERR_H

#include <stdbool.h>

#include "clio.h"

/* At a connection's open, once its handle is open: whether the
 * connection is owed a failure no client has been told of. */
bool flusherr_owed(clio_cache *c);

/* clio_fsync(f) for a FLUSH or FUA of a connection: 0 or -errno; an
 * owed failure (*owed, cleared here) is -EIO. */
int flusherr_fsync(clio_cache *c, clio_file *f, bool *owed);

#endif
