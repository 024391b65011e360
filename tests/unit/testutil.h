/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testutil.h - small helpers shared by the cmocka unit tests.
 *
 * Include after <cmocka.h>.  Everything is static inline and prefixed
 * tu_; add to it, do not change what others use.
 */
#ifndef CLIO_TESTUTIL_H
#define CLIO_TESTUTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clio.h"

#define TU_KiB (1ull << 10)
#define TU_MiB (1ull << 20)

/* The byte a pattern `seed` has at absolute offset off: a data mix-up
 * between offsets, or between two patterns, shows as a mismatch. */
static inline unsigned char
tu_pat(uint64_t seed, uint64_t off)
{
	uint64_t x = (off + 1) * 0x9e3779b97f4a7c15ull ^ seed * 0xd6e8feb86659fd93ull;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (unsigned char)x;
}

static inline void
tu_fill(void *buf, size_t len, uint64_t off, uint64_t seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = tu_pat(seed, off + i);
}

/* Index of the first byte of buf that differs from the pattern, or -1. */
static inline long
tu_check(const void *buf, size_t len, uint64_t off, uint64_t seed)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != tu_pat(seed, off + i))
			return (long)i;
	return -1;
}

/* Index of the first nonzero byte, or -1. */
static inline long
tu_check_zero(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != 0)
			return (long)i;
	return -1;
}

/* Open a device or fail the test, printing the library's message. */
static inline clio_dev *
tu_dev_open(const char *spec, int flags)
{
	char err[256];
	clio_dev *d = NULL;
	int r = clio_dev_open_err(spec, flags, &d, err, sizeof(err));

	if (r != 0)
		print_message("open '%s': %d %s\n", spec, r, err);
	assert_int_equal(r, 0);
	assert_non_null(d);
	return d;
}

/* A new empty regular file under $TMPDIR (or /tmp); path is filled in. */
static inline int
tu_tmpfile(char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, len, "%s/clio-test-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	return fd;
}

/* A handle on d through c, or the test fails. */
static inline clio_file *
tu_open(clio_cache *c, clio_dev *d, int flags)
{
	clio_file *f = NULL;

	assert_int_equal(clio_open(c, d, flags, &f), 0);
	return f;
}

/* A new empty file (path filled in) and its device string, "file:PATH"
 * followed by query ("" or "?k=v..."), in spec. */
static inline char *
tu_file_spec(char *path, size_t plen, char *spec, size_t slen, const char *query)
{
	close(tu_tmpfile(path, plen));
	snprintf(spec, slen, "file:%s%s", path, query);
	return spec;
}

/* The size_hist bucket of a transfer of len bytes (clio.h's rule:
 * bucket k holds [512 << (k-1), 512 << k)). */
static inline int
tu_hist_bucket(uint64_t len)
{
	int k = 0;

	while (k < CLIO_HIST_BUCKETS - 1 && len >= (512ull << k))
		k++;
	return k;
}

static inline uint64_t
tu_hist_total(const struct clio_iostat *s)
{
	uint64_t n = 0;
	int k;

	for (k = 0; k < CLIO_HIST_BUCKETS; k++)
		n += s->size_hist[k];
	return n;
}

/* A small seeded generator (xorshift64*), for repeatable random tests. */
static inline uint64_t
tu_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static inline void
tu_sleep(double s)
{
	struct timespec ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static inline double
tu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A nonzero tu_rand() state from any seed (splitmix64). */
static inline uint64_t
tu_rand_init(uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

/* The seed of a random test: $CLIO_SEED if set, else from the clock and
 * the pid.  Printed at once, so that any run can be repeated. */
static inline uint64_t
tu_seed(const char *test)
{
	const char *s = getenv("CLIO_SEED");
	uint64_t seed;

	if (s != NULL && *s != '\0') {
		seed = strtoull(s, NULL, 0);
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = ((uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^
			(uint64_t)getpid() << 16) & 0xffffffffu;
	}
	fprintf(stderr, "%s: seed %llu (repeat with CLIO_SEED=%llu)\n", test,
		(unsigned long long)seed, (unsigned long long)seed);
	return seed;
}

/* Print the seed again when a random test fails (to stderr, last). */
static inline void
tu_seed_failed(const char *test, uint64_t seed)
{
	fprintf(stderr, "%s: FAILED with seed %llu: repeat with CLIO_SEED=%llu\n",
		test, (unsigned long long)seed, (unsigned long long)seed);
}

#endif
