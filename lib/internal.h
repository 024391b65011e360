/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * internal.h - what the parts of libclio share and users do not see.
 * The device object and the backend contract are in dev.h; what the
 * front ends may use too (parsers, the clock) is in util.h.
 */
#ifndef CLIO_INTERNAL_H
#define CLIO_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "clio.h"
#include "dev.h"
#include "util.h"

#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define IS_POW2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)

/* vclock.c: one virtual clock for the process. */
double vclock_now(void);
void vclock_advance_to(double t);
void vclock_add(double dt);

/* memavail.c: the bytes this process could still make resident (the
 * kernel's MemAvailable, under a cgroup memory limit its room), UINT64_MAX if
 * unknown. */
uint64_t mem_available(void);

/* parse.c */
int parse_errno(const char *s, int *out); /* "EIO", "5", "ENOSPC" ... */
const char *errno_name(int e);
/* Split "k=v,k=v" in place: calls fn for each pair; stops at the first
 * nonzero return.  A key without '=' gets value "".  A key given twice
 * is -EINVAL, with "WHAT: 'KEY' given twice" in err, before fn sees it. */
int parse_kv_list(char *s, char sep,
		  int (*fn)(void *arg, const char *k, const char *v), void *arg,
		  const char *what, char *err, size_t errlen);
/* A device URI's query, split between clio and the library below: each
 * pair "key=value" of spec's query goes to take(arg, pair), which
 * returns 1 if the pair is clio's (taken out), 0 if not (kept) or
 * -errno (the split stops with it).  *rest gets spec without clio's
 * pairs (malloc'd). */
int uri_take_query(const char *spec, int (*take)(void *arg, const char *kv),
		   void *arg, char **rest);

/* iovec helpers (dev.c) */
size_t iov_length(const struct iovec *iov, int iovcnt);
/* Copy the part [skip, skip+len) of src into dst (at most dstmax entries);
 * returns the entry count. */
int iov_slice(const struct iovec *src, int srccnt, size_t skip, size_t len,
	      struct iovec *dst, int dstmax);
void iov_memset(const struct iovec *iov, int iovcnt, size_t skip, int c,
		size_t len);
void iov_to_buf(const struct iovec *iov, int iovcnt, size_t skip, void *buf,
		size_t len);
void buf_to_iov(const struct iovec *iov, int iovcnt, size_t skip,
		const void *buf, size_t len);
/* The start of the iovecs when each begins where the one before ends (one
 * buffer in memory, as a fresh cache's neighbouring blocks are), else NULL. */
void *iov_flat(const struct iovec *iov, int iovcnt);

#endif
