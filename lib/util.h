/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * util.h - what the front ends (the clio command, its mount and its
 * benchmarks) share with libclio beyond the public API: the parsers of
 * sizes and numbers that device strings and tunables use, so that every
 * operand takes the same suffixes, the clock the statistics use, and a
 * file's version from its attributes.
 * Not installed; the shared library does not export these (they are
 * local in the installed archive too).  Front ends include clio.h and
 * this header only, never internal.h, dev.h or cache.h.
 *
 * Each parser either stores a value and returns 0, or returns -EINVAL
 * (or -ERANGE for an overflow) and leaves *out untouched.
 */
#ifndef CLIO_UTIL_H
#define CLIO_UTIL_H

#include <stddef.h>
#include <stdint.h>

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

/* parse.c: digits with dd's suffixes (c w b K M G T P, kB MB GB TB, KiB
 * ...); decimal digits only; a decimal floating-point number. */
int parse_size(const char *s, uint64_t *out);
int parse_uint(const char *s, uint64_t *out);
int parse_double(const char *s, double *out);
/* snprintf into err (if not NULL), for one-line messages naming a value:
 * control characters (a newline in the value) become '?' */
void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* s made one line: its control characters (a newline) become '?' */
void one_line(char *s);

double now_monotonic(void); /* CLOCK_MONOTONIC, in seconds */
/* fastclock.c: CLOCK_MONOTONIC's seconds for durations, cheaper to read */
double now_fast(void);

/* consist.c: a file's version (struct clio_validator of clio.h) from its
 * stat(2) attributes: size, mtime, ctime, inode; whether two versions
 * are the same; and whether one seen now may hide a change still to come
 * (times in whole seconds, the last change less than 2 s ago: a change
 * in the same second would leave them as they are). */
struct stat;
struct clio_validator;
void validator_of_stat(const struct stat *st, struct clio_validator *v);
int validator_same(const struct clio_validator *a, const struct clio_validator *b);
int validator_racy(const struct clio_validator *v);

/* nfs.c: the query of an nfs:// URL checked as the device checks it (0,
 * or -EINVAL with a line naming the value in err); *timeo its timeo= (s). */
int nfs_url_check(const char *url, int *timeo, char *err, size_t errlen);

#endif
