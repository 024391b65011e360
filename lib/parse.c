/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parse.c - the small parsers every layer shares: sizes with dd's
 * suffixes, numbers, errno names, "k=v,k=v" lists.
 *
 * Invariants: a parser either stores a value and returns 0, or returns
 * -EINVAL and leaves *out untouched.  Numbers never wrap: an overflowing
 * value is -ERANGE.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* dd's multiplicative suffixes: powers of 1024 for K M G T P (and KiB ...),
 * powers of 1000 for kB MB GB TB, c=1, w=2, b=512. */
static const struct {
	const char *suffix;
	uint64_t mult;
} size_suffixes[] = {
	{ "", 1 },
	{ "c", 1 },
	{ "w", 2 },
	{ "b", 512 },
	{ "K", 1ull << 10 }, { "k", 1ull << 10 }, { "KiB", 1ull << 10 },
	{ "M", 1ull << 20 }, { "m", 1ull << 20 }, { "MiB", 1ull << 20 },
	{ "G", 1ull << 30 }, { "g", 1ull << 30 }, { "GiB", 1ull << 30 },
	{ "T", 1ull << 40 }, { "t", 1ull << 40 }, { "TiB", 1ull << 40 },
	{ "P", 1ull << 50 }, { "PiB", 1ull << 50 },
	{ "kB", 1000ull }, { "KB", 1000ull },
	{ "MB", 1000000ull },
	{ "GB", 1000000000ull },
	{ "TB", 1000000000000ull },
};

int
parse_uint(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int saved = errno;

	if (s == NULL || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10); /* decimal, as dd: "010" is ten */
	if (errno == ERANGE) {
		errno = saved;
		return -ERANGE;
	}
	errno = saved;
	if (*end != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

int
parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	size_t i;
	int saved = errno;

	if (s == NULL || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE) {
		errno = saved;
		return -ERANGE;
	}
	errno = saved;
	for (i = 0; i < sizeof(size_suffixes) / sizeof(size_suffixes[0]); i++) {
		if (strcmp(end, size_suffixes[i].suffix) == 0) {
			uint64_t m = size_suffixes[i].mult;
			if (v != 0 && m > UINT64_MAX / v)
				return -ERANGE;
			*out = v * m;
			return 0;
		}
	}
	return -EINVAL;
}

int
parse_double(const char *s, double *out)
{
	char *end;
	double v;
	int saved = errno;

	/* decimal only: strtod would also take blanks, hex, inf and nan */
	if (s == NULL || *s == '\0' || s[strspn(s, "0123456789.eE+-")] != '\0')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno == ERANGE || *end != '\0' || v != v) {
		errno = saved;
		return -EINVAL;
	}
	errno = saved;
	*out = v;
	return 0;
}

static const struct {
	const char *name;
	int value;
} errno_names[] = {
	{ "EPERM", EPERM },	{ "ENOENT", ENOENT },	{ "EIO", EIO },
	{ "ENXIO", ENXIO },	{ "EBADF", EBADF },	{ "EAGAIN", EAGAIN },
	{ "ENOMEM", ENOMEM },	{ "EACCES", EACCES },	{ "EFAULT", EFAULT },
	{ "EBUSY", EBUSY },	{ "EEXIST", EEXIST },	{ "ENODEV", ENODEV },
	{ "EINVAL", EINVAL },	{ "EFBIG", EFBIG },	{ "ENOSPC", ENOSPC },
	{ "EROFS", EROFS },	{ "ERANGE", ERANGE },	{ "ENOTSUP", ENOTSUP },
	{ "ETIMEDOUT", ETIMEDOUT }, { "ECONNRESET", ECONNRESET },
	{ "EDQUOT", EDQUOT },	{ "ESHUTDOWN", ESHUTDOWN },
};

int
parse_errno(const char *s, int *out)
{
	size_t i;
	uint64_t v;

	for (i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++) {
		if (strcasecmp(s, errno_names[i].name) == 0) {
			*out = errno_names[i].value;
			return 0;
		}
	}
	if (parse_uint(s, &v) == 0 && v > 0 && v < 4096) {
		*out = (int)v;
		return 0;
	}
	return -EINVAL;
}

const char *
errno_name(int e)
{
	size_t i;

	if (e < 0)
		e = -e;
	for (i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (errno_names[i].value == e)
			return errno_names[i].name;
	return "E?";
}

int
parse_kv_list(char *s, char sep, int (*fn)(void *, const char *, const char *),
	      void *arg, const char *what, char *err, size_t errlen)
{
	const char *keys[64]; /* the keys so far (past 64: not compared) */
	size_t nkeys = 0, i;
	char *item = s;
	int r;

	if (s == NULL || *s == '\0')
		return 0;
	for (;;) {
		char *next = strchr(item, sep);
		char *eq;

		if (next != NULL)
			*next = '\0';
		if (*item != '\0') {
			eq = strchr(item, '=');
			if (eq != NULL)
				*eq = '\0';
			for (i = 0; i < nkeys; i++) {
				if (strcmp(keys[i], item) == 0) {
					set_err(err, errlen, "%s: '%s' given twice", what, item);
					return -EINVAL;
				}
			}
			if (nkeys < sizeof(keys) / sizeof(keys[0]))
				keys[nkeys++] = item;
			r = fn(arg, item, eq != NULL ? eq + 1 : "");
			if (r != 0)
				return r;
		}
		if (next == NULL)
			return 0;
		item = next + 1;
	}
}

void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	one_line(err);
}

void
one_line(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

double
now_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int
uri_take_query(const char *spec, int (*take)(void *arg, const char *kv),
	       void *arg, char **rest)
{
	const char *q = strchr(spec, '?');
	size_t base = q ? (size_t)(q - spec) : strlen(spec);
	char *query, *kv, *save = NULL, *out;
	int r = 0;

	out = malloc(strlen(spec) + 2);
	query = strdup(q ? q + 1 : "");
	if (out == NULL || query == NULL) {
		free(out);
		free(query);
		return -ENOMEM;
	}
	memcpy(out, spec, base);
	out[base] = '\0';
	for (kv = strtok_r(query, "&", &save); kv != NULL;
	     kv = strtok_r(NULL, "&", &save)) {
		if ((r = take(arg, kv)) < 0)
			break;
		if (r == 0) {
			strcat(out, strchr(out, '?') ? "&" : "?");
			strcat(out, kv);
		}
		r = 0;
	}
	free(query);
	if (r < 0) {
		free(out);
		return r;
	}
	*rest = out;
	return 0;
}
