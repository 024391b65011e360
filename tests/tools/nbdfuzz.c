/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nbdfuzz - a differential fuzz of an NBD server, for
 * tests/test-nbd-fuzz.sh:
 *   nbdfuzz [-s SEED] [-n OPS] [-c CONNS] [-f FILE] [-r REF-URI] URI
 * From SEED (printed; random when not given), OPS random requests go to
 * URI and to REF-URI (libnbd's strict checks off): pread, pwrite with
 * and without FUA, trim (where URI offers it), zero with and without
 * NO_HOLE and (where both offer it: nbdkit 1.32 aborts on one not
 * offered) FAST_ZERO, flush and cache, unaligned ones, ones at and across
 * the end, zero-length ones and some above 32 MiB.  Every error must be
 * REF-URI's, every read REF-URI's and the model's (bytes trimmed since
 * their last write are not compared); a FAST_ZERO that URI refuses is
 * done as a plain zero.  With FILE (the file under URI's plugin), each
 * FLUSH is followed by a comparison of FILE with the model.  With CONNS
 * > 1 (no REF-URI), CONNS threads on their own connections each fuzz a
 * region of their own (its edges unaligned, so neighbours share blocks);
 * then one connection flushes and another reads every region back.
 * NBDFUZZ_TRACE in the environment prints each request.  Exit status 0
 * when all matched, 1 at the first difference, 2 on a setup error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libnbd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BIG (33u << 20) /* above the 32 MiB requests servers take */

static const char *uri, *ref_uri, *file;
static uint64_t size;
static uint8_t *model, *known; /* the export's bytes; 0: trimmed since */
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int failed;
static unsigned nerrors, nreads; /* errors both servers gave, reads compared */
static bool trace; /* NBDFUZZ_TRACE set: each request on stderr */
static bool fast_zero, trim; /* URI offers trim */ /* both offer it: nbdkit 1.32 aborts on one not offered */

static uint64_t
rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull); /* splitmix64 */

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static struct nbd_handle *
connect_to(const char *u)
{
	struct nbd_handle *h = nbd_create();

	if (h == NULL || nbd_set_strict_mode(h, 0) < 0 ||
	    nbd_connect_uri(h, u) < 0) {
		fprintf(stderr, "nbdfuzz: %s: %s\n", u, nbd_get_error());
		exit(2);
	}
	return h;
}

/* An offset and a length inside [lo, hi), or anywhere (hi == 0). */
static void
pick(uint64_t *s, uint64_t lo, uint64_t hi, uint64_t *off, uint64_t *len)
{
	uint64_t span = (hi ? hi : size) - lo, r = rnd(s) % 100;

	if (r < 40)
		*len = 1 + rnd(s) % 9000;
	else if (r < 60)
		*len = (1 + rnd(s) % 16) * 4096;
	else if (r < 70)
		*len = (1 + rnd(s) % 64) * 512;
	else if (r < 80)
		*len = 1 + rnd(s) % (1u << 20);
	else if (r < 88)
		*len = 1 + rnd(s) % 70000;
	else if (r < 92)
		*len = rnd(s) % 3;
	else
		*len = 1 + rnd(s) % 600;
	if (*len > span)
		*len = rnd(s) % span + (hi ? 1 : 0);
	r = rnd(s) % 100;
	if (r < 45)
		*off = lo + rnd(s) % span;
	else if (r < 65)
		*off = lo + rnd(s) % span / 4096 * 4096;
	else if (r < 80)
		*off = lo + rnd(s) % span / 512 * 512;
	else { /* near, at or across the end */
		uint64_t back = rnd(s) % (2 * *len + 2);
		*off = lo + span - (back < span ? back : span);
	}
	if (hi) { /* a region's: stay in it, no request nbdkit refuses */
		if (*len == 0)
			*len = 1;
		if (*off >= hi)
			*off = hi - 1;
		if (*len > hi - *off)
			*len = hi - *off;
	} else if (rnd(s) % 200 == 0) {
		*len = BIG + rnd(s) % 100;
		*off = rnd(s) % 2 ? 0 : size + rnd(s) % 3;
	}
}

static void
note(uint64_t seed, unsigned i, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
note(uint64_t seed, unsigned i, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "nbdfuzz: seed %" PRIu64 " op %u: ", seed, i);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	failed = 1;
}

/* The first byte of buf[0, len) at off that differs from the model. */
static int64_t
differs(const uint8_t *buf, uint64_t off, uint64_t len)
{
	for (uint64_t k = 0; k < len; k++)
		if (known[off + k] && buf[k] != model[off + k])
			return (int64_t)k;
	return -1;
}

static void
check_file(uint64_t seed, unsigned i)
{
	uint8_t *buf;
	int fd;
	int64_t k;

	if (file == NULL)
		return;
	pthread_mutex_lock(&file_lock);
	buf = malloc(size);
	fd = open(file, O_RDONLY);
	if (buf == NULL || fd < 0 || pread(fd, buf, size, 0) != (ssize_t)size) {
		note(seed, i, "cannot read %s", file);
	} else if ((k = differs(buf, 0, size)) >= 0) {
		note(seed, i, "after FLUSH, %s has %#x at %" PRId64 ", not %#x",
		     file, buf[k], k, model[k]);
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	pthread_mutex_unlock(&file_lock);
}

enum { OP_READ, OP_WRITE, OP_TRIM, OP_ZERO, OP_FLUSH, OP_CACHE, NOPS };
static const char *const names[] = { "pread", "pwrite", "trim", "zero",
				     "flush", "cache" };

/* One request on h: its result, errno in *err; buf in or out. */
static int
request(struct nbd_handle *h, int op, void *buf, uint64_t off, uint64_t len,
	uint32_t flags, int *err)
{
	int r = 0;

	switch (op) {
	case OP_READ: r = nbd_pread(h, buf, len, off, 0); break;
	case OP_WRITE: r = nbd_pwrite(h, buf, len, off, flags); break;
	case OP_TRIM: r = nbd_trim(h, len, off, flags); break;
	case OP_ZERO: r = nbd_zero(h, len, off, flags); break;
	case OP_FLUSH: r = nbd_flush(h, 0); break;
	case OP_CACHE: r = nbd_cache(h, len, off, 0); break;
	}
	*err = r < 0 ? nbd_get_errno() : 0;
	if (r < 0 && (*err == ENOTCONN || nbd_aio_is_dead(h) || nbd_aio_is_closed(h)))
		*err = -1; /* the connection died */
	return r;
}

struct fuzz {
	uint64_t seed;
	unsigned ops;
	uint64_t lo, hi; /* the region; hi 0: the whole export */
	struct nbd_handle *h, *ref;
};

static void
apply(int op, const uint8_t *buf, uint64_t off, uint64_t len)
{
	if (op == OP_WRITE) {
		memcpy(model + off, buf, len);
		memset(known + off, 1, len);
	} else if (op == OP_ZERO) {
		memset(model + off, 0, len);
		memset(known + off, 1, len);
	} else if (op == OP_TRIM) {
		memset(known + off, 0, len);
	}
}

static void *
fuzz(void *arg)
{
	struct fuzz *z = arg;
	uint64_t s = z->seed, off, len;
	uint8_t *buf = malloc(BIG + 128), *rbuf = malloc(BIG + 128);
	unsigned i;

	if (buf == NULL || rbuf == NULL)
		abort();
	for (i = 0; i < z->ops && !failed; i++) {
		int op = (int)(rnd(&s) % 100), r, rr = 0, err, rerr = 0;
		uint32_t flags = 0;

		op = op < 30 ? OP_READ : op < 65 ? OP_WRITE : op < 73 ? OP_TRIM :
		     op < 88 ? OP_ZERO : op < 94 ? OP_FLUSH : OP_CACHE;
		if (op == OP_TRIM && !trim)
			op = OP_ZERO;
		pick(&s, z->lo, z->hi, &off, &len);
		if ((op == OP_WRITE || op == OP_TRIM || op == OP_ZERO) &&
		    rnd(&s) % 4 == 0)
			flags |= LIBNBD_CMD_FLAG_FUA;
		if (op == OP_ZERO && rnd(&s) % 2)
			flags |= LIBNBD_CMD_FLAG_NO_HOLE; /* no MAY_TRIM */
		if (op == OP_ZERO && rnd(&s) % 5 == 0 && fast_zero)
			flags |= LIBNBD_CMD_FLAG_FAST_ZERO;
		if (op == OP_WRITE) {
			uint8_t b = (uint8_t)rnd(&s);
			for (uint64_t k = 0; k < len; k++)
				buf[k] = (uint8_t)(b + k * 7 + (k >> 9));
		}
		if (op == OP_WRITE && len >= BIG)
			continue; /* no 33 MiB of data on the wire */
		if (z->ref != NULL)
			rr = request(z->ref, op, op == OP_READ ? rbuf : buf, off, len,
				     flags, &rerr);
		r = request(z->h, op, buf, off, len, flags, &err);
		if (trace)
			fprintf(stderr, "%u: %s %" PRIu64 " at %" PRIu64 " (to %"
				PRIu64 ") flags %#x: %d\n", i, names[op], len,
				off, off + len, flags, r < 0 ? err : 0);
		if (err == -1) {
			note(z->seed, i, "%s of %" PRIu64 " at %" PRIu64
			     ": the connection died: %s", names[op], len, off,
			     nbd_get_error());
			break;
		}
		if (op == OP_ZERO && (flags & LIBNBD_CMD_FLAG_FAST_ZERO) && r < 0 &&
		    rr == 0 && (err == ENOTSUP || err == EINVAL)) {
			/* not offered: the client's fallback */
			r = request(z->h, op, buf, off, len,
				    flags & ~LIBNBD_CMD_FLAG_FAST_ZERO, &err);
		}
		if (z->ref != NULL && (r < 0) != (rr < 0 ? 1 : 0)) {
			note(z->seed, i, "%s of %" PRIu64 " at %" PRIu64
			     " flags %#x: %s (%d), the reference: %s (%d)",
			     names[op], len, off, flags, r < 0 ? "error" : "ok",
			     err, rr < 0 ? "error" : "ok", rerr);
			break;
		}
		if (z->ref != NULL && r < 0 && err != rerr) {
			note(z->seed, i, "%s of %" PRIu64 " at %" PRIu64
			     " flags %#x: errno %d (%s), the reference's %d (%s)",
			     names[op], len, off, flags, err, strerror(err),
			     rerr, strerror(rerr));
			break;
		}
		if (z->ref == NULL && r < 0) {
			note(z->seed, i, "%s of %" PRIu64 " at %" PRIu64
			     " flags %#x: %s", names[op], len, off, flags,
			     strerror(err));
			break;
		}
		if (r < 0) {
			__atomic_add_fetch(&nerrors, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (op == OP_READ) {
			__atomic_add_fetch(&nreads, 1, __ATOMIC_RELAXED);
			int64_t k = differs(buf, off, len);
			if (k >= 0) {
				note(z->seed, i, "pread of %" PRIu64 " at %" PRIu64
				     ": %#x at %" PRIu64 ", not %#x", len, off,
				     buf[k], off + k, model[off + k]);
				break;
			}
			if (z->ref != NULL && (k = differs(rbuf, off, len)) >= 0) {
				note(z->seed, i, "the reference's pread of %" PRIu64
				     " at %" PRIu64 " differs at %" PRIu64,
				     len, off, off + k);
				break;
			}
		}
		apply(op, buf, off, len);
		if (op == OP_FLUSH && z->hi == 0)
			check_file(z->seed, i);
	}
	free(buf);
	free(rbuf);
	return NULL;
}

int
main(int argc, char **argv)
{
	uint64_t seed = 0;
	unsigned ops = 2000, conns = 1, c;
	struct nbd_handle *h, *ref = NULL;
	int opt;

	while ((opt = getopt(argc, argv, "s:n:c:f:r:")) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': ops = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'c': conns = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'f': file = optarg; break;
		case 'r': ref_uri = optarg; break;
		default: goto usage;
		}
	}
	if (optind + 1 != argc || conns < 1 || conns > 64 ||
	    (conns > 1 && ref_uri != NULL)) {
usage:
		fprintf(stderr, "usage: nbdfuzz [-s SEED] [-n OPS] [-c CONNS] "
			"[-f FILE] [-r REF-URI] URI\n");
		return 2;
	}
	uri = argv[optind];
	trace = getenv("NBDFUZZ_TRACE") != NULL;
	if (seed == 0) {
		FILE *fp = fopen("/dev/urandom", "r");
		if (fp == NULL || fread(&seed, sizeof(seed), 1, fp) != 1)
			seed = (uint64_t)getpid();
		if (fp)
			fclose(fp);
		seed >>= 1;
	}
	printf("nbdfuzz: seed %" PRIu64 ", %u ops, %u connection%s\n", seed,
	       ops, conns, conns > 1 ? "s" : "");
	fflush(stdout);
	h = connect_to(uri);
	if (nbd_get_size(h) <= 0) {
		fprintf(stderr, "nbdfuzz: %s: no size\n", uri);
		return 2;
	}
	size = (uint64_t)nbd_get_size(h);
	model = calloc(1, size);
	known = malloc(size);
	if (model == NULL || known == NULL)
		return 2;
	if (ref_uri != NULL) {
		ref = connect_to(ref_uri);
		if ((uint64_t)nbd_get_size(ref) != size) {
			fprintf(stderr, "nbdfuzz: %s: another size\n", ref_uri);
			return 2;
		}
	}
	/* start from what URI holds: its bytes are the model's */
	for (uint64_t o = 0; o < size; o += 1u << 20) {
		uint64_t n = size - o < (1u << 20) ? size - o : 1u << 20;
		if (nbd_pread(h, model + o, n, o, 0) < 0) {
			fprintf(stderr, "nbdfuzz: first read: %s\n", nbd_get_error());
			return 2;
		}
	}
	memset(known, 1, size);
	trim = nbd_can_trim(h) == 1;
	fast_zero = nbd_can_fast_zero(h) == 1 &&
		    (ref == NULL || nbd_can_fast_zero(ref) == 1);
	if (conns == 1) {
		struct fuzz z = { seed, ops, 0, 0, h, ref };
		if (ref != NULL) { /* the reference must start the same */
			uint8_t *b = malloc(size);
			if (b == NULL || nbd_pread(ref, b, size, 0, 0) < 0 ||
			    memcmp(b, model, size) != 0) {
				fprintf(stderr, "nbdfuzz: the two exports start apart\n");
				return 2;
			}
			free(b);
		}
		fuzz(&z);
	} else {
		struct fuzz *z = calloc(conns, sizeof(*z));
		pthread_t *t = calloc(conns, sizeof(*t));
		uint64_t s = seed ^ 0x5bd1e995, edge = 0;
		struct nbd_handle *h2;
		uint8_t *b;
		int64_t k;

		for (c = 0; c < conns; c++) {
			uint64_t next = c + 1 == conns ? size :
				size / conns * (c + 1) - rnd(&s) % 3000;
			z[c] = (struct fuzz){ seed + c, ops, edge, next,
					      connect_to(uri), NULL };
			edge = next;
		}
		for (c = 0; c < conns; c++)
			pthread_create(&t[c], NULL, fuzz, &z[c]);
		for (c = 0; c < conns; c++)
			pthread_join(t[c], NULL);
		if (nbd_flush(z[0].h, 0) < 0)
			note(seed, ops, "FLUSH: %s", nbd_get_error());
		check_file(seed, ops);
		h2 = connect_to(uri);
		b = malloc(size);
		for (uint64_t o = 0; b != NULL && o < size; o += 1u << 20) {
			uint64_t n = size - o < (1u << 20) ? size - o : 1u << 20;
			if (nbd_pread(h2, b + o, n, o, 0) < 0)
				note(seed, ops, "read back: %s", nbd_get_error());
		}
		if (b != NULL && (k = differs(b, 0, size)) >= 0)
			note(seed, ops, "read back on another connection: %#x at %"
			     PRId64 ", not %#x", b[k], k, model[k]);
		free(b);
		nbd_close(h2);
		for (c = 0; c < conns; c++) {
			nbd_shutdown(z[c].h, 0);
			nbd_close(z[c].h);
		}
		free(z);
		free(t);
	}
	if (nbd_flush(h, 0) < 0)
		note(seed, ops, "final FLUSH: %s", nbd_get_error());
	else
		check_file(seed, ops);
	nbd_shutdown(h, 0);
	nbd_close(h);
	if (ref != NULL) {
		nbd_shutdown(ref, 0);
		nbd_close(ref);
	}
	if (!failed)
		printf("nbdfuzz: seed %" PRIu64 ": all matched (%u reads, %u errors)\n",
		       seed, nreads, nerrors);
	return failed ? 1 : 0;
}
