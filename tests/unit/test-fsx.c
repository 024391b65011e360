/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-fsx.c - a seeded, model-based random test in the spirit of fsx.
 *
 * Random pread, pwrite, ftruncate, fsync, close and reopen of random
 * sizes and offsets go through the cache (and through CLIO_DIRECT handles
 * on the same device), under many configurations, and every result is
 * checked byte for byte against a plain in-memory shadow of the data:
 *  - a read must return exactly the bytes the shadow holds, and the count
 *    the shadow's size allows; clio_fsize must equal the shadow's size;
 *  - after fsync (and after the last close) the device itself is read
 *    with clio_dev_pread and compared: fsync means durable;
 *  - mem devices resize (truncate works); sim devices have a fixed size
 *    (a write past the end is short or -ENOSPC, truncate is -EINVAL);
 *    file devices are a temp file, buffered or O_DIRECT;
 *  - a direct transfer not aligned to 512 bytes is -EINVAL and changes
 *    nothing (but a direct read at or past EOF returns 0).
 * Configurations vary bsize (512 to 64K), maxphys (4K to 1M, at least
 * bsize), cluster, rbw, write_behind, read_max, seqmax, the dirty limits,
 * dirty_age and the flusher, with caches of 8 to 32 buffers mostly, so
 * that eviction never stops; sequential streams of same-sized ops feed
 * the clustering, read-ahead and write-behind paths.
 *
 * The threaded configurations (test_fsx_threads) run 4 threads on one
 * device, each with its own handles and its own shadow.  Each owns a
 * byte range, or in every other configuration many small stripes, at
 * offsets aligned to nothing, so that neighbours share blocks; it writes
 * only its own bytes, reads anywhere below the first EOF and checks its
 * own bytes of what it read.  The last thread owns the end of the device
 * and may grow it; nobody truncates here, since a truncate would cut
 * the others' shadows: the threaded random test with truncates, fsyncs,
 * clio_sync calls and reopens all at once is test-safety's chaos test,
 * which checks every byte it reads by a tag of its own offset.
 *
 * test_fsx_rewrite_race: a dd-like small-write rewrite racing a second
 * writer on the blocks just ahead of it (a regression test for a writer
 * that copied into a buffer another thread had begun writing back).
 *
 * Environment: CLIO_SEED (default: from the clock), CLIO_FSX_CONFIG=N
 * (run configuration N only), CLIO_FSX_OPS (total operations),
 * CLIO_FSX_DEV=SPEC (every configuration on that resizable device, made
 * empty at each setup, instead of mem, sim and file ones),
 * CLIO_FLAVOUR (a tsan run does half the operations, and a third of
 * those of the single thread).  A failure
 * prints the seed, the configuration, the thread, the op number, the op
 * and the ops before it.  A configuration's choices and ops derive from
 * (seed, N) alone, so CLIO_SEED=S CLIO_FSX_CONFIG=N repeats one (the
 * threads' interleaving and the flusher's timing aside).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clio.h"
#include "testutil.h"

#define MAXLEN (1u << 20)	/* largest single transfer */
#define LOGN 512		/* ops remembered per thread */
#define LOGSHOW 16		/* ops shown on a failure */
#define NTHREADS 4
#define ST_CONFIGS 40		/* single-threaded configurations */
#define MT_CONFIGS 8		/* threaded ones, numbered after them */
#define PLAIN_OPS 116000	/* total ops of a plain run */

/* functions, not macros: arguments draw random numbers */
static inline uint64_t
min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t
max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

#define ULL(x) ((unsigned long long)(x))

enum kind { K_MEM, K_SIM, K_FILE, K_FILE_DIRECT };
static const char *const kind_name[] = { "mem", "sim", "file", "file-direct" };

enum opk {
	OP_READ, OP_WRITE, OP_TRUNC, OP_FSYNC, OP_REOPEN, OP_DREAD, OP_DWRITE,
	OP_BADDIRECT, OP_NKINDS
};
static const char *const op_name[] = {
	"pread", "pwrite", "ftruncate", "fsync", "reopen", "direct-pread",
	"direct-pwrite", "misaligned-direct"
};

struct fx_conf {
	int index;
	uint64_t seed;		/* of this configuration */
	struct clio_conf cc;
	enum kind kind;
	int nthreads;
	bool direct;		/* mix in CLIO_DIRECT handles */
	bool second;		/* a second buffered handle (single thread) */
	bool extend;		/* threads: the last stripe holds the first EOF */
	int nstripes;		/* threads: 4 (one range each) or more */
	uint64_t init_size;	/* the device's size at the start */
	uint64_t max_size;	/* resizable: nothing goes past it */
	uint64_t maxlen;	/* largest transfer of an op */
	long nops;		/* per thread */
	char spec[320];
	char query[64];		/* file kinds: after the path */
	char path[128];
};

struct oplog {
	long n;
	enum opk k;
	char h;			/* handle: 'f', 'g' (second), 'd' (direct) */
	uint64_t off, len;
	long long ret;
};

struct span {
	uint64_t lo, hi;
};

struct fx;

struct worker {
	struct fx *fx;
	int id;
	uint64_t rng;
	struct span *own;	/* the bytes it owns, ascending */
	int nown;
	uint64_t rlimit;	/* it reads below */
	uint64_t size;		/* the model's EOF (eof_owner only) */
	bool eof_owner;
	unsigned char *shadow;	/* its copy of the data; its own bytes count */
	clio_file *f, *g, *d;	/* buffered, second buffered, direct */
	unsigned char *buf, *data;
	uint64_t next;		/* where a stream goes on */
	int stream_left;
	enum opk stream_op;
	uint64_t stream_len;
	uint64_t slo, shi;	/* the stream's window */
	long op, nops;
	struct oplog log[LOGN];
	long counts[OP_NKINDS];
};

struct fx {
	const struct fx_conf *cf;
	clio_cache *c;
	clio_dev *dev;
	bool fixed;		/* the device cannot resize */
	struct span *stripes;	/* threads: the owners' stripes */
	int nstripes;
	atomic_int failed;
	struct worker w[NTHREADS];
};

static uint64_t g_seed;
static const char *g_dev;	/* CLIO_FSX_DEV */
static volatile sig_atomic_t g_cur = -1;	/* the configuration running */
static _Thread_local uint64_t g_bad = UINT64_MAX; /* a wrong byte */
static long g_total_ops, g_race_ops;
static int g_first_failed = -1;		/* configuration */
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------ helpers */

static uint64_t
rnd(struct worker *w)
{
	return tu_rand(&w->rng);
}

static uint64_t
below(struct worker *w, uint64_t n)
{
	return n ? rnd(w) % n : 0;
}

static void
fill(struct worker *w, unsigned char *p, size_t len)
{
	while (len >= 8) {
		uint64_t x = rnd(w);
		memcpy(p, &x, 8);
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		*p++ = (unsigned char)rnd(w);
}

static void
describe(const struct fx_conf *cf, char *s, size_t n)
{
	static const char *const cl[] = { "on", "lite", "off" };
	const struct clio_conf *cc = &cf->cc;

	snprintf(s, n,
		 "config %d: %s %s threads=%d stripes=%d direct=%d second=%d "
		 "extend=%d "
		 "size=%llu max=%llu bsize=%u maxbsize=%u maxphys=%u "
		 "cluster=%s rbw=%s write_behind=%u nbuf=%llu read_max=%u "
		 "seqmax=%u dirty=%u/%u dirty_age=%g flusher=%u",
		 cf->index, kind_name[cf->kind], cf->spec, cf->nthreads,
		 cf->nstripes, cf->direct, cf->second,
		 cf->extend, ULL(cf->init_size), ULL(cf->max_size), cc->bsize,
		 cc->maxbsize, cc->maxphys, cl[cc->cluster],
		 cc->rbw == CLIO_RBW_CLUSTER ? "cluster" : "block",
		 cc->write_behind, ULL(cc->cache_size / cc->bsize), cc->read_max,
		 cc->seqmax, cc->dirty_hi, cc->dirty_lo, cc->dirty_age,
		 cc->flusher);
}

static void
print_op(const struct oplog *l)
{
	fprintf(stderr, "    op %ld: %s(%c, off %llu, len %llu) = %lld\n", l->n,
		op_name[l->k], l->h, ULL(l->off), ULL(l->len), l->ret);
}

/* Op i (logged as l) wrote the wrong byte. */
static bool
touched(const struct worker *w, const struct oplog *l, long i)
{
	(void)w;
	return l->n == i && g_bad != UINT64_MAX && l->k != OP_READ &&
	       l->k != OP_DREAD && l->k != OP_BADDIRECT && l->off <= g_bad &&
	       g_bad < l->off + l->len;
}

/* Ops after i, not among the last shown, that wrote the wrong byte. */
static int
touched_after(const struct worker *w, long i)
{
	int n = 0;

	for (i++; i + LOGSHOW <= w->op; i++)
		n += touched(w, &w->log[i % LOGN], i);
	return n;
}

/* Report a failure of w's current op; always returns false. */
static bool
fx_fail(struct worker *w, const char *fmt, ...)
{
	const struct fx_conf *cf = w->fx->cf;
	char desc[1024];
	va_list ap;
	long i;

	pthread_mutex_lock(&print_lock);
	describe(cf, desc, sizeof(desc));
	fprintf(stderr, "fsx: FAILED: seed %llu, config %d, thread %d, op %ld: ",
		ULL(g_seed), cf->index, w->id, w->op);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nfsx: %s\nfsx: thread %d owns %d stretches in [%llu, "
		"%llu), reads below %llu, model size %llu; its last ops, the "
		"failing one last:\n", desc, w->id, w->nown, ULL(w->own[0].lo),
		ULL(w->own[w->nown - 1].hi), ULL(w->rlimit), ULL(w->size));
	for (i = w->op >= LOGN ? w->op - LOGN + 1 : 0; i <= w->op; i++) {
		const struct oplog *l = &w->log[i % LOGN];
		bool near = l->n == i && i + LOGSHOW > w->op;

		/* and the last few before that wrote the wrong byte */
		if (l->n == i && !near && touched(w, l, i) &&
		    touched_after(w, i) < 8)
			fprintf(stderr, "  *");
		else if (!near)
			continue;
		print_op(l);
	}
	fprintf(stderr, "fsx: repeat with CLIO_SEED=%llu CLIO_FSX_CONFIG=%d\n",
		ULL(g_seed), cf->index);
	pthread_mutex_unlock(&print_lock);
	atomic_store(&w->fx->failed, 1);
	return false;
}

#define CHECK(w, cond, ...)                                  \
	do {                                                 \
		if (!(cond))                                 \
			return fx_fail((w), __VA_ARGS__);    \
	} while (0)

static struct oplog *
log_op(struct worker *w, enum opk k, char h, uint64_t off, uint64_t len)
{
	struct oplog *l = &w->log[w->op % LOGN];

	l->n = w->op;
	l->k = k;
	l->h = h;
	l->off = off;
	l->len = len;
	l->ret = 0;
	w->counts[k]++;
	return l;
}

/* got[0..len) must be the shadow's bytes at off. */
static bool
cmp_shadow(struct worker *w, const unsigned char *got, uint64_t off,
	   uint64_t len, const char *what)
{
	const unsigned char *want = w->shadow + off;
	uint64_t i, first, last = 0, nbad = 0, bs = w->fx->cf->cc.bsize;

	if (memcmp(got, want, len) == 0)
		return true;
	for (i = 0, first = len; i < len; i++) {
		if (got[i] != want[i]) {
			if (first == len)
				first = i;
			last = i;
			nbad++;
		}
	}
	g_bad = off + first;
	return fx_fail(w, "%s: byte %llu (block %llu + %llu) is 0x%02x, want "
		       "0x%02x; %llu bytes differ in [%llu, %llu]", what,
		       ULL(off + first), ULL((off + first) / bs),
		       ULL((off + first) % bs), got[first], want[first],
		       ULL(nbad), ULL(off + first), ULL(off + last));
}

/* The bytes w owns in got[0..len), read at off, must be the shadow's. */
static bool
cmp_own(struct worker *w, const unsigned char *got, uint64_t off,
	uint64_t len, const char *what)
{
	int i;

	for (i = 0; i < w->nown; i++) {
		uint64_t a = max64(off, w->own[i].lo), b = min64(off + len, w->own[i].hi);

		if (a < b && !cmp_shadow(w, got + (a - off), a, b - a, what))
			return false;
	}
	return true;
}

/* The device's bytes of w's must be the shadow's. */
static bool
check_device(struct worker *w, const char *why)
{
	struct fx *fx = w->fx;
	uint64_t end = w->own[w->nown - 1].hi, pos, n;
	char what[96];

	if (w->eof_owner)
		end = min64(end, w->size);
	if (fx->cf->nthreads == 1 && !fx->fixed)
		CHECK(w, clio_dev_size(fx->dev) == w->size,
		      "after %s the device's size is %llu, want %llu", why,
		      ULL(clio_dev_size(fx->dev)), ULL(w->size));
	snprintf(what, sizeof(what), "device after %s", why);
	for (pos = w->own[0].lo; pos < end; pos += n) {
		ssize_t r;

		n = min64((uint64_t)MAXLEN, end - pos);
		r = clio_dev_pread(fx->dev, w->buf, n, pos);
		CHECK(w, r == (ssize_t)n, "after %s clio_dev_pread(%llu, %llu) "
		      "= %zd", why, ULL(pos), ULL(n), r);
		if (!cmp_own(w, w->buf, pos, n, what))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------ ops */

/* The count a read of len at off returns, by the model (only the owner
 * of the end reads near it). */
static uint64_t
read_expect(struct worker *w, uint64_t off, uint64_t len)
{
	if (!w->eof_owner)
		return len;
	return off >= w->size ? 0 : min64(len, w->size - off);
}

static bool
do_read(struct worker *w, clio_file *h, char hn, uint64_t off, uint64_t len)
{
	struct oplog *l = log_op(w, hn == 'd' ? OP_DREAD : OP_READ, hn, off, len);
	uint64_t want = read_expect(w, off, len);
	ssize_t r;

	r = clio_pread(h, w->buf, len, off);
	l->ret = r;
	CHECK(w, r == (ssize_t)want, "%s returned %zd, want %llu", op_name[l->k],
	      r, ULL(want));
	w->next = off + len;
	return cmp_own(w, w->buf, off, want, op_name[l->k]);
}

/* A write of bytes that w owns (or, single thread on a fixed device,
 * past the end). */
static bool
do_write(struct worker *w, clio_file *h, char hn, uint64_t off, uint64_t len)
{
	struct oplog *l = log_op(w, hn == 'd' ? OP_DWRITE : OP_WRITE, hn, off, len);
	long long want = (long long)len;
	ssize_t r;

	if (len > 0 && w->eof_owner && w->fx->fixed)
		want = off >= w->size ? -ENOSPC : (long long)min64(len, w->size - off);
	fill(w, w->data, len);
	r = clio_pwrite(h, w->data, len, off);
	l->ret = r;
	CHECK(w, r == want, "%s returned %zd, want %lld", op_name[l->k], r, want);
	if (r > 0) {
		memcpy(w->shadow + off, w->data, (size_t)r);
		if (w->eof_owner && off + (uint64_t)r > w->size)
			w->size = off + (uint64_t)r;
	}
	w->next = off + len;
	return true;
}

static clio_file *
pick_handle(struct worker *w, char *hn)
{
	uint64_t r = below(w, 4);

	if (r == 0 && w->g != NULL) {
		*hn = 'g';
		return w->g;
	}
	if (r == 1 && w->d != NULL) {
		*hn = 'd';
		return w->d;
	}
	*hn = 'f';
	return w->f;
}

static bool
do_trunc(struct worker *w)
{
	struct fx *fx = w->fx;
	uint64_t bs = fx->cf->cc.bsize, max = fx->cf->max_size, ns, r4;
	clio_file *h;
	char hn;
	int r;

	h = pick_handle(w, &hn);
	if (fx->fixed) {
		/* the size it has is fine; any other is not */
		ns = below(w, 2) ? w->size : below(w, 2 * w->size + 2);
		log_op(w, OP_TRUNC, hn, ns, 0)->ret = r = clio_ftruncate(h, ns);
		CHECK(w, r == (ns == w->size ? 0 : -EINVAL),
		      "ftruncate of a fixed device returned %d", r);
		return true;
	}
	r4 = below(w, 10);
	if (r4 < 3)
		ns = below(w, max + 1);
	else if (r4 < 6)
		ns = w->size - below(w, min64(w->size, 4 * bs) + 1);
	else if (r4 < 8)
		ns = w->size + below(w, min64(max - w->size, 4 * bs) + 1);
	else
		ns = min64(max, below(w, max / bs + 1) * bs);
	log_op(w, OP_TRUNC, hn, ns, 0)->ret = r = clio_ftruncate(h, ns);
	CHECK(w, r == 0, "ftruncate returned %d", r);
	if (ns < w->size)
		memset(w->shadow + ns, 0, w->size - ns);
	w->size = ns;
	return true;
}

static bool
do_fsync(struct worker *w)
{
	char hn;
	clio_file *h = pick_handle(w, &hn);
	int r;

	log_op(w, OP_FSYNC, hn, 0, 0)->ret = r = clio_fsync(h);
	CHECK(w, r == 0, "fsync returned %d", r);
	return check_device(w, "fsync");
}

static int
open_handles(struct worker *w)
{
	struct fx *fx = w->fx;
	int r;

	r = clio_open(fx->c, fx->dev, CLIO_RDWR, &w->f);
	if (r == 0 && fx->cf->second)
		r = clio_open(fx->c, fx->dev, CLIO_RDWR, &w->g);
	if (r == 0 && fx->cf->direct)
		r = clio_open(fx->c, fx->dev, CLIO_RDWR | CLIO_DIRECT, &w->d);
	return r;
}

static int
close_handle(clio_file **fp)
{
	int r = 0;

	if (*fp != NULL)
		r = clio_close(*fp);
	*fp = NULL;
	return r;
}

/* Close and reopen the buffered handle; alone, or every handle of the
 * thread (single thread: the object goes, and comes back from storage). */
static bool
do_reopen(struct worker *w)
{
	bool all = w->fx->cf->nthreads == 1 && below(w, 2);
	struct oplog *l = log_op(w, OP_REOPEN, all ? '*' : 'f', 0, 0);
	int r, e;

	r = close_handle(&w->f);
	if (all) {
		e = close_handle(&w->g);
		r = r ? r : e;
		e = close_handle(&w->d);
		r = r ? r : e;
	}
	l->ret = r;
	CHECK(w, r == 0, "close returned %d", r);
	if (all) {
		if (!check_device(w, "the last close"))
			return false;
		r = open_handles(w);
	} else {
		r = clio_open(w->fx->c, w->fx->dev, CLIO_RDWR, &w->f);
	}
	l->ret = r;
	CHECK(w, r == 0, "reopen returned %d", r);
	return true;
}

/* A direct transfer with a misaligned offset or length: -EINVAL; but a
 * read at or past EOF returns 0, as with O_DIRECT. */
static bool
do_baddirect(struct worker *w)
{
	const struct span *s = &w->own[below(w, w->nown)];
	uint64_t off = s->lo + below(w, s->hi - s->lo), len = 1 + below(w, 4096);
	bool wr = below(w, 2);
	struct oplog *l;
	ssize_t r;

	if (((off | len) & 511) == 0)
		len += 1 + below(w, 511);
	if (wr && off + len > s->hi)
		len = s->hi - off;
	if (((off | len) & 511) == 0)
		return true;
	l = log_op(w, OP_BADDIRECT, wr ? 'w' : 'r', off, len);
	if (wr) {
		fill(w, w->data, len);
		r = clio_pwrite(w->d, w->data, len, off);
	} else {
		r = clio_pread(w->d, w->buf, len, off);
	}
	l->ret = r;
	if (!wr && w->eof_owner && off >= w->size)
		CHECK(w, r == 0, "misaligned direct read at EOF returned %zd", r);
	else
		CHECK(w, r == -EINVAL, "misaligned direct %s returned %zd, want "
		      "%d", wr ? "write" : "read", r, -EINVAL);
	return true;
}

/* ------------------------------------------------------------ choices */

static uint64_t
pick_len(struct worker *w)
{
	const struct clio_conf *cc = &w->fx->cf->cc;
	uint64_t r = below(w, 1000), bs = cc->bsize;

	if (r < 15)
		return 0;
	if (r < 300)
		return 1 + below(w, 64);
	if (r < 620)
		return 1 + below(w, 2 * bs);
	if (r < 800)
		return bs * (1 + below(w, 4));
	if (r < 985)
		return 1 + below(w, min64(2 * (uint64_t)cc->maxphys, 192 * 1024));
	return 1 + below(w, w->fx->cf->maxlen);
}

/* The single thread on a fixed device also goes past the end. */
static bool
past_end(const struct worker *w)
{
	return w->fx->cf->nthreads == 1 && w->fx->fixed;
}

/* An offset in [lo, hi], aligned, near the places that matter: block
 * starts, EOF, where the last op ended. */
static uint64_t
pick_off(struct worker *w, uint64_t lo, uint64_t hi, uint64_t align)
{
	uint64_t bs = w->fx->cf->cc.bsize, r = below(w, 100), off, end = hi;

	if (w->eof_owner)
		end = max64(lo, min64(w->size, hi));
	if (past_end(w))
		hi = w->size + 2 * bs + 1024;
	if (r < 35)
		off = lo + below(w, end - lo + 1);
	else if (r < 55)
		off = (lo + below(w, end - lo + 1)) / bs * bs;
	else if (r < 70)
		off = end + below(w, 2 * bs) - min64(end - lo, below(w, 2 * bs));
	else if (r < 85)
		off = w->next;
	else
		off = lo + below(w, hi - lo);
	off = off / align * align;
	if (off < lo)
		off = (lo + align - 1) / align * align;
	if (off > hi)
		off = hi / align * align;
	return off;
}

/* Clip [off, off+len) into [lo, hi); false if off is outside. */
static bool
clip(struct worker *w, uint64_t lo, uint64_t hi, uint64_t *off, uint64_t *len,
     uint64_t align)
{
	if (past_end(w))
		return true;	/* the model knows the end */
	if (*off < lo || *off > hi)
		return false;
	if (*off + *len > hi)
		*len = (hi - *off) / align * align;
	return true;
}

static const struct span *
pick_span(struct worker *w)
{
	return &w->own[below(w, w->nown)];
}

/* A direct transfer, 512-aligned.  Threads read anywhere below their
 * limit but write whole blocks of their own only: another thread's
 * buffered write to a shared block would race with a direct write of
 * it (as with O_DIRECT in a kernel). */
static bool
do_direct(struct worker *w)
{
	struct fx *fx = w->fx;
	uint64_t bs = fx->cf->cc.bsize, off, len, r = below(w, 10);
	bool wr = below(w, 2);
	int tries;

	len = r < 6 ? 512 * below(w, 9) : r < 9 ? 512 * below(w, 129)
					     : 512 * below(w, MAXLEN / 512 + 1);
	len = min64(len, fx->cf->maxlen / 512 * 512);
	if (fx->cf->nthreads > 1 && wr) {
		for (tries = 0; tries < 8; tries++) {
			const struct span *s = pick_span(w);
			uint64_t b0 = (s->lo + bs - 1) / bs, b1 = s->hi / bs;

			if (b0 >= b1)
				continue;
			off = (b0 + below(w, b1 - b0)) * bs;
			len = min64(max64(len / bs, 1) * bs, b1 * bs - off);
			len = min64(len, fx->cf->maxlen / bs * bs);
			return do_write(w, w->d, 'd', off, len);
		}
		return true;
	}
	off = pick_off(w, 0, w->rlimit, 512);
	if (!clip(w, 0, w->rlimit, &off, &len, 512))
		return true;
	return wr ? do_write(w, w->d, 'd', off, len)
		  : do_read(w, w->d, 'd', off, len);
}

/* Reads go anywhere below w's limit, writes into one of its spans. */
static void
pick_window(struct worker *w, bool wr, uint64_t *lo, uint64_t *hi)
{
	if (wr && w->fx->cf->nthreads > 1) {
		const struct span *s = pick_span(w);
		*lo = s->lo;
		*hi = s->hi;
	} else {
		*lo = 0;
		*hi = w->rlimit;
	}
}

static bool
do_rw(struct worker *w, bool wr)
{
	uint64_t len = min64(pick_len(w), w->fx->cf->maxlen), off, lo, hi;
	clio_file *h = w->f;
	char hn = 'f';

	pick_window(w, wr, &lo, &hi);
	off = pick_off(w, lo, hi, 1);
	if (!clip(w, lo, hi, &off, &len, 1))
		return true;
	if (w->g != NULL && below(w, 4) == 0) {
		h = w->g;
		hn = 'g';
	}
	return wr ? do_write(w, h, hn, off, len) : do_read(w, h, hn, off, len);
}

/* A run of sequential same-sized reads or writes, dd-like: what the
 * clustering, read-ahead and write-behind paths live on. */
static void
start_stream(struct worker *w)
{
	static const uint64_t sizes[] = { 512, 1024, 4096, 8192, 16384, 65536 };
	uint64_t bs = w->fx->cf->cc.bsize;

	w->stream_left = 8 + (int)below(w, 120);
	w->stream_op = below(w, 2) ? OP_WRITE : OP_READ;
	w->stream_len = below(w, 3) ? sizes[below(w, 6)] : bs / 2 + below(w, 2) * bs / 2;
	pick_window(w, w->stream_op == OP_WRITE, &w->slo, &w->shi);
	w->next = pick_off(w, w->slo, w->shi, below(w, 2) ? 1 : w->stream_len);
}

static bool
stream_step(struct worker *w)
{
	uint64_t off = w->next, len = w->stream_len;

	w->stream_left--;
	if (!clip(w, w->slo, w->shi, &off, &len, 1) || len == 0 ||
	    (past_end(w) && off >= w->size)) {
		w->stream_left = 0;
		return true;
	}
	return w->stream_op == OP_WRITE ? do_write(w, w->f, 'f', off, len)
					: do_read(w, w->f, 'f', off, len);
}

static bool
step(struct worker *w)
{
	struct fx *fx = w->fx;
	bool mt = fx->cf->nthreads > 1, ok;
	uint64_t r = below(w, 1000);
	int64_t fs;

	if (w->stream_left > 0)
		ok = stream_step(w);
	else if (r < 15) {
		start_stream(w);
		ok = stream_step(w);
	} else if (r < 400)
		ok = do_rw(w, false);
	else if (r < 780)
		ok = do_rw(w, true);
	else if (r < 815)
		ok = mt ? do_rw(w, true) : do_trunc(w);
	else if (r < 828)
		ok = do_fsync(w);
	else if (r < 832)
		ok = do_reopen(w);
	else if (r < 930 && w->d != NULL)
		ok = do_direct(w);
	else if (r < 940 && w->d != NULL)
		ok = do_baddirect(w);
	else
		ok = do_rw(w, r & 1);
	if (!ok)
		return false;
	fs = clio_fsize(w->f);
	if (w->eof_owner)
		CHECK(w, fs == (int64_t)w->size, "clio_fsize = %lld, want %llu",
		      (long long)fs, ULL(w->size));
	else
		CHECK(w, fs >= (int64_t)w->rlimit, "clio_fsize = %lld, below "
		      "%llu", (long long)fs, ULL(w->rlimit));
	return true;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	for (w->op = 0; w->op < w->nops; w->op++)
		if (atomic_load(&w->fx->failed) || !step(w))
			break;
	return NULL;
}

/* ------------------------------------------------------------ configurations */

static void
make_conf(int index, long nops, struct fx_conf *cf)
{
	static const uint32_t read_maxes[] = { 0, 1, 2, 8, 16, 32, 64, 256 };
	static const uint32_t seqmaxes[] = { 1, 4, 127, 127 };
	static const uint32_t dirty[][2] = { { 50, 25 }, { 10, 5 }, { 90, 10 },
					     { 1, 0 }, { 100, 50 } };
	static const double ages[] = { 0.002, 0.02, 0.3, 30 };
	struct worker tmp = { .rng = tu_rand_init(g_seed ^ (uint64_t)index << 40) };
	struct worker *w = &tmp;
	struct clio_conf *cc = &cf->cc;
	uint64_t nbuf, u = below(w, 1000);
	int i = index;

	memset(cf, 0, sizeof(*cf));
	cf->index = index;
	cf->seed = rnd(w);
	*cc = (struct clio_conf)CLIO_CONF_DEFAULTS;
	/* the enumerations cycle with the index, so each value shows up */
	cc->bsize = 512u << ((i + u) % 8);
	cc->maxphys = 4096u << ((3 * i + u / 8) % 9);
	if (cc->maxphys < cc->bsize)
		cc->maxphys = cc->bsize; /* one buffer, one transfer at least */
	cc->maxbsize = below(w, 4) ? max64(cc->bsize, 65536u) : cc->bsize;
	cc->cluster = (enum clio_cluster_mode)(i % 3);
	cc->rbw = (enum clio_rbw_mode)(i / 3 % 2);
	cc->write_behind = (uint32_t)(i / 6 % 3);
	nbuf = below(w, 7) ? 8 + below(w, 25) : 33 + below(w, 300);
	cc->cache_size = nbuf * cc->bsize;
	cc->read_max = read_maxes[below(w, 8)];
	cc->seqmax = seqmaxes[below(w, 4)];
	u = below(w, 5);
	cc->dirty_hi = dirty[u][0];
	cc->dirty_lo = dirty[u][1];
	cc->dirty_age = ages[below(w, 4)];
	cc->flusher = below(w, 5) != 0;

	if (index < ST_CONFIGS) {
		cf->nthreads = 1;
		cf->kind = (enum kind)(i % 4);
		cf->direct = below(w, 3) != 0;
		cf->second = below(w, 3) == 0;
	} else {
		cf->nthreads = NTHREADS;
		cf->kind = (enum kind)((i - ST_CONFIGS) % 4);
		/* too few to cycle through: drawn */
		cc->cluster = (enum clio_cluster_mode)below(w, 3);
		cc->rbw = (enum clio_rbw_mode)below(w, 2);
		cc->write_behind = (uint32_t)below(w, 3);
		cf->direct = below(w, 4) != 0;
		cf->extend = cf->kind != K_SIM && below(w, 2);
		/* every other one striped: most blocks are shared */
		cf->nstripes = i % 2 ? NTHREADS * (4 + (int)below(w, 61)) : NTHREADS;
	}
	if (g_dev != NULL)
		cf->kind = K_MEM; /* a resizable device */
	/* big enough that the cache holds a fraction of it */
	cf->max_size = max64((uint64_t)(128 * 1024) << below(w, 5),
			   4 * cc->cache_size);
	cf->max_size = min64(cf->max_size, (uint64_t)4 << 20);
	if (cf->kind == K_SIM) {
		/* a multiple of 512, often not of bsize */
		cf->max_size = (cf->max_size / 2 + below(w, cf->max_size / 2)) / 512 * 512;
		cf->init_size = cf->max_size;
	} else if (cf->nthreads == 1) {
		cf->init_size = below(w, 3) ? below(w, cf->max_size + 1) : 0;
	} else {
		cf->init_size = cf->max_size; /* extend: set with the ranges */
	}
	cf->nops = nops;
	/* O_DIRECT moves each small block to the disk: keep ops shorter */
	cf->maxlen = cf->kind == K_FILE_DIRECT ? min64(MAXLEN, 64 * cc->bsize) : MAXLEN;

	switch (cf->kind) {
	case K_MEM:
		snprintf(cf->spec, sizeof(cf->spec), "mem:size=%llu%s",
			 ULL(cf->init_size),
			 below(w, 3) ? "" : below(w, 2) ? ",maxio=4K" : ",maxio=96K");
		break;
	case K_SIM:
		snprintf(cf->spec, sizeof(cf->spec), "sim:preset=%s,size=%llu%s",
			 below(w, 4) ? "ssd" : "rz25", ULL(cf->init_size),
			 below(w, 3) ? "" : ",maxio=8K");
		break;
	case K_FILE:
	case K_FILE_DIRECT:
		/* the path comes at setup */
		snprintf(cf->query, sizeof(cf->query), "?qd=%llu%s%s",
			 ULL(1 + below(w, 6)),
			 below(w, 3) ? "" : "&maxio=64K",
			 cf->kind == K_FILE_DIRECT ? "&direct=1" : "");
		break;
	}
	if (g_dev != NULL)
		snprintf(cf->spec, sizeof(cf->spec), "%s", g_dev);
}

/* Cut [0, max) into nstripes stripes of random lengths (1 byte and up),
 * at offsets aligned to nothing; thread t owns stripes t, t + 4, ... */
static int
make_stripes(struct fx *fx, struct worker *w0)
{
	const struct fx_conf *cf = fx->cf;
	uint64_t max = cf->max_size, n = (uint64_t)cf->nstripes, step = max / n;
	uint64_t i;

	fx->stripes = calloc(n, sizeof(*fx->stripes));
	if (fx->stripes == NULL)
		return -ENOMEM;
	fx->nstripes = cf->nstripes;
	for (i = 0; i < n; i++) {
		fx->stripes[i].lo = i == 0 ? 0 : i * step - step / 2 + below(w0, step);
		if (i > 0)
			fx->stripes[i - 1].hi = fx->stripes[i].lo;
	}
	fx->stripes[n - 1].hi = max;
	return 0;
}

static int
setup(struct fx *fx, struct fx_conf *cf, bool *skipped)
{
	struct worker *w0 = &fx->w[0];
	unsigned char *img;
	uint64_t pos, n, init;
	char err[256];
	int i, k, r;

	*skipped = false;
	memset(fx, 0, sizeof(*fx));
	fx->cf = cf;
	w0->rng = cf->seed;
	if (cf->kind == K_FILE || cf->kind == K_FILE_DIRECT) {
		int fd = tu_tmpfile(cf->path, sizeof(cf->path));

		close(fd);
		snprintf(cf->spec, sizeof(cf->spec), "file:%s%s", cf->path,
			 cf->query);
	}
	r = clio_dev_open_err(cf->spec, 0, &fx->dev, err, sizeof(err));
	if (r == -EINVAL && cf->kind == K_FILE_DIRECT) {
		print_message("fsx: config %d: O_DIRECT not supported here "
			      "(%s): skipped\n", cf->index, err);
		unlink(cf->path);
		*skipped = true;
		return 0;
	}
	if (r < 0) {
		print_message("fsx: open '%s': %d %s\n", cf->spec, r, err);
		return r;
	}
	fx->fixed = cf->kind == K_SIM;
	if (cf->nthreads > 1) {
		r = make_stripes(fx, w0);
		if (r < 0)
			return r;
	}
	init = cf->init_size;
	if (cf->extend) {
		/* the first EOF inside the last stripe: its owner grows it */
		const struct span *last = &fx->stripes[fx->nstripes - 1];
		init = last->lo + 1 + below(w0, last->hi - last->lo - 1);
	}
	if (g_dev != NULL && (r = clio_dev_resize(fx->dev, 0)) < 0)
		return r; /* what an earlier configuration left */
	if (!fx->fixed && clio_dev_size(fx->dev) != init) {
		r = clio_dev_resize(fx->dev, init);
		if (r < 0)
			return r;
	}
	cf->init_size = init;

	/* the first data: random stretches and zero ones */
	img = calloc(1, cf->max_size + 1);
	if (img == NULL)
		return -ENOMEM;
	for (pos = 0; pos < init; pos += n) {
		n = min64(init - pos, 1 + below(w0, 96 * 1024));
		if (below(w0, 3)) {
			fill(w0, img + pos, n);
			r = (int)clio_dev_pwrite(fx->dev, img + pos, n, pos);
			if (r != (int)n) {
				free(img);
				return r < 0 ? r : -EIO;
			}
		}
	}
	r = clio_cache_new(&cf->cc, &fx->c);
	if (r < 0) {
		clio_conf_check(&cf->cc, err, sizeof(err));
		print_message("fsx: clio_cache_new: %d %s\n", r, err);
		free(img);
		return r;
	}
	for (i = 0; i < cf->nthreads; i++) {
		struct worker *w = &fx->w[i];

		w->fx = fx;
		w->id = i;
		if (i > 0)
			w->rng = tu_rand_init(cf->seed + (uint64_t)i);
		w->eof_owner = i == cf->nthreads - 1;
		w->size = init;
		w->nops = cf->nops;
		w->shadow = malloc(cf->max_size + 1);
		w->buf = malloc(MAXLEN);
		w->data = malloc(MAXLEN);
		w->own = calloc((size_t)max64(1, fx->nstripes), sizeof(*w->own));
		if (w->shadow == NULL || w->buf == NULL || w->data == NULL ||
		    w->own == NULL) {
			free(img);
			return -ENOMEM;
		}
		memcpy(w->shadow, img, cf->max_size);
		if (cf->nthreads == 1) {
			w->own[0].lo = 0;
			w->own[0].hi = fx->fixed ? init : cf->max_size;
			w->nown = 1;
			w->rlimit = w->own[0].hi;
		} else {
			for (k = i; k < fx->nstripes; k += cf->nthreads)
				w->own[w->nown++] = fx->stripes[k];
			/* below the first EOF, only the owner of the end
			 * changes what a read returns */
			w->rlimit = w->eof_owner ? cf->max_size
						 : min64(init, cf->max_size);
		}
		w->next = w->own[0].lo;
	}
	free(img);
	for (i = 0; i < cf->nthreads; i++) {
		struct worker *w = &fx->w[i];

		if (cf->nthreads > 1) {
			/* second handles are for the single thread */
			r = clio_open(fx->c, fx->dev, CLIO_RDWR, &w->f);
			if (r == 0 && cf->direct)
				r = clio_open(fx->c, fx->dev,
					      CLIO_RDWR | CLIO_DIRECT, &w->d);
		} else {
			r = open_handles(w);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* The closing checks and the cleanup; false on a failure. */
static bool
teardown(struct fx *fx)
{
	const struct fx_conf *cf = fx->cf;
	bool ok = !atomic_load(&fx->failed);
	int i, r;

	for (i = 0; ok && i < cf->nthreads; i++) {
		struct worker *w = &fx->w[i];

		w->op = w->nops;
		r = clio_fsync(w->f);
		log_op(w, OP_FSYNC, 'f', 0, 0)->ret = r;
		if (r != 0)
			ok = fx_fail(w, "the last fsync returned %d", r);
		else
			ok = check_device(w, "the last fsync");
	}
	for (i = 0; i < cf->nthreads; i++) {
		struct worker *w = &fx->w[i];
		int e1 = close_handle(&w->f), e2 = close_handle(&w->g),
		    e3 = close_handle(&w->d);

		if (ok && (e1 || e2 || e3))
			ok = fx_fail(w, "close returned %d %d %d", e1, e2, e3);
	}
	if (ok && cf->nthreads == 1)
		ok = check_device(&fx->w[0], "the last close");
	if (fx->c != NULL) {
		r = clio_cache_free(fx->c);
		if (ok && r != 0)
			ok = fx_fail(&fx->w[0], "clio_cache_free returned %d", r);
	}
	if (fx->dev != NULL)
		clio_dev_close(fx->dev);
	if (cf->path[0])
		unlink(cf->path);
	free(fx->stripes);
	for (i = 0; i < NTHREADS; i++) {
		free(fx->w[i].own);
		free(fx->w[i].shadow);
		free(fx->w[i].buf);
		free(fx->w[i].data);
	}
	return ok;
}

static bool
run_conf(int index, long nops)
{
	struct fx_conf cf;
	struct fx *fx = calloc(1, sizeof(*fx));
	pthread_t tid[NTHREADS];
	long counts[OP_NKINDS] = { 0 }, total = 0;
	double t0 = tu_now();
	char desc[1024], line[256];
	bool skipped, ok;
	int i, k, r;

	assert_non_null(fx);
	g_cur = index;
	make_conf(index, nops, &cf);
	r = setup(fx, &cf, &skipped);
	if (skipped) {
		free(fx);
		return true;
	}
	if (r < 0) {
		describe(&cf, desc, sizeof(desc));
		fprintf(stderr, "fsx: seed %llu: setup failed: %d\n%s\n",
			ULL(g_seed), r, desc);
		free(fx);
		return false;
	}
	if (cf.nthreads == 1) {
		worker_main(&fx->w[0]);
	} else {
		for (i = 0; i < cf.nthreads; i++)
			assert_int_equal(pthread_create(&tid[i], NULL, worker_main,
							&fx->w[i]), 0);
		for (i = 0; i < cf.nthreads; i++)
			pthread_join(tid[i], NULL);
	}
	for (i = 0; i < cf.nthreads; i++)
		for (k = 0; k < OP_NKINDS; k++) {
			counts[k] += fx->w[i].counts[k];
			total += fx->w[i].counts[k];
		}
	ok = teardown(fx);
	g_total_ops += total;
	describe(&cf, desc, sizeof(desc));
	snprintf(line, sizeof(line),
		 "%ld ops (r %ld w %ld t %ld s %ld o %ld dr %ld dw %ld bad %ld)",
		 total, counts[OP_READ], counts[OP_WRITE], counts[OP_TRUNC],
		 counts[OP_FSYNC], counts[OP_REOPEN], counts[OP_DREAD],
		 counts[OP_DWRITE], counts[OP_BADDIRECT]);
	print_message("fsx: %s\nfsx:   %s, %.2f s%s\n", desc, line,
		      tu_now() - t0, ok ? "" : ": FAILED");
	free(fx);
	return ok;
}

/* ------------------------------------------------------------ the tests */

static long g_st_ops, g_mt_ops;	/* ops of each group */
static int g_only = -1;

/* The kinds cycle with the index; O_DIRECT files are slow (every block
 * goes to the disk), memory and the simulator fast: ops by weight. */
static const int kind_weight[] = { 14, 14, 9, 3 };

static void
run_range(int first, int last, long ops, int nthreads)
{
	long wsum = 0;
	int i;

	for (i = first; i < last; i++)
		wsum += kind_weight[(i - first) % 4];
	for (i = first; i < last; i++) {
		long nops = max64(1, ops * kind_weight[(i - first) % 4] / wsum / nthreads);

		if (g_only >= 0 && i != g_only)
			continue;
		if (!run_conf(i, nops)) {
			if (g_first_failed < 0)
				g_first_failed = i;
			tu_seed_failed("test-fsx", g_seed);
			fail_msg("fsx: seed %llu, config %d failed", ULL(g_seed), i);
		}
	}
}

static void
test_fsx_single(void **state)
{
	(void)state;
	run_range(0, ST_CONFIGS, g_st_ops, 1);
}

static void
test_fsx_threads(void **state)
{
	(void)state;
	run_range(ST_CONFIGS, ST_CONFIGS + MT_CONFIGS, g_mt_ops, NTHREADS);
}

/*
 * A dd-like rewrite in 512-byte pieces (clustered read-before-write,
 * read-ahead trip wires) while a second thread writes bytes of the blocks
 * just ahead of it, the same values, with every write flushed at once
 * (dirty_hi 1%): the first writer's buffer may be written back while it
 * is away starting read-ahead.  Both write pattern 2 over pattern 1, so
 * the end state is known whatever the interleaving.
 */
struct race {
	clio_cache *c;
	clio_dev *d;
	uint64_t bs, nb, rng;
	atomic_ullong apos;	/* where the rewriter got to */
	atomic_int done;
	long ops;
};

static void *
race_poker(void *arg)
{
	struct race *rc = arg;
	unsigned char v[16];
	clio_file *f;

	if (clio_open(rc->c, rc->d, CLIO_RDWR, &f) != 0)
		return NULL;
	while (!atomic_load(&rc->done)) {
		uint64_t blk = (atomic_load(&rc->apos) + 512) / rc->bs +
			       tu_rand(&rc->rng) % 2;
		uint64_t off = blk * rc->bs + tu_rand(&rc->rng) % rc->bs;
		size_t n = 1 + tu_rand(&rc->rng) % sizeof(v);

		if (blk >= rc->nb)
			break;
		n = min64(n, rc->nb * rc->bs - off);
		tu_fill(v, n, off, 2);
		clio_pwrite(f, v, n, off);
		rc->ops++;
	}
	clio_close(f);
	return NULL;
}

static bool
race_round(int round, uint64_t bs)
{
	struct clio_conf cc = CLIO_CONF_DEFAULTS;
	struct race rc = { .bs = bs, .nb = (4u << 20) / bs };
	uint64_t len = rc.nb * bs, off, want;
	unsigned char *buf = malloc(len), piece[512];
	clio_file *f = NULL;
	pthread_t t;
	long bad;
	int r;

	assert_non_null(buf);
	rc.rng = tu_rand_init(g_seed ^ 0x7ace ^ (uint64_t)round << 32);
	cc.bsize = (uint32_t)bs;
	cc.cache_size = 64 * bs;
	cc.maxphys = (uint32_t)(8 * bs);
	cc.read_max = 16;
	cc.rbw = CLIO_RBW_CLUSTER;
	cc.dirty_hi = 1;
	cc.dirty_lo = 0;
	assert_int_equal(clio_cache_new(&cc, &rc.c), 0);
	rc.d = tu_dev_open("mem:size=4M", 0);
	tu_fill(buf, len, 0, 1);
	assert_int_equal(clio_dev_pwrite(rc.d, buf, len, 0), (ssize_t)len);
	assert_int_equal(clio_open(rc.c, rc.d, CLIO_RDWR, &f), 0);
	assert_int_equal(pthread_create(&t, NULL, race_poker, &rc), 0);
	for (off = 0; off < len; off += sizeof(piece)) {
		tu_fill(piece, sizeof(piece), off, 2);
		want = sizeof(piece);
		if (clio_pwrite(f, piece, sizeof(piece), off) != (ssize_t)want)
			break;
		atomic_store(&rc.apos, off);
	}
	atomic_store(&rc.done, 1);
	pthread_join(t, NULL);
	g_race_ops += rc.ops + (long)(off / sizeof(piece));
	r = clio_fsync(f);
	memset(buf, 0, len);
	bad = off < len || r != 0 ? -2 :
	      clio_pread(f, buf, len, 0) != (ssize_t)len ? -3 : tu_check(buf, len, 0, 2);
	if (bad == -1) {
		memset(buf, 0, len);
		bad = clio_dev_pread(rc.d, buf, len, 0) != (ssize_t)len ? -4
							       : tu_check(buf, len, 0, 2);
		if (bad >= 0)
			bad += (long)len; /* on the device */
	}
	clio_close(f);
	clio_cache_free(rc.c);
	clio_dev_close(rc.d);
	free(buf);
	if (bad != -1)
		fprintf(stderr, "fsx: FAILED: seed %llu, rewrite race round %d, "
			"bsize %llu: stopped at %llu, fsync %d, first wrong "
			"byte %ld (past %llu: on the device)\n", ULL(g_seed), round,
			ULL(bs), ULL(off), r, bad, ULL(len));
	return bad == -1;
}

static long g_race_rounds = 6;

static void
test_fsx_rewrite_race(void **state)
{
	static const uint64_t sizes[] = { 2048, 4096, 8192, 16384 };
	uint64_t rng = tu_rand_init(g_seed ^ 0x5eed);
	int i;

	(void)state;
	if (g_only >= 0)
		return;
	g_cur = -2;
	for (i = 0; i < g_race_rounds; i++) {
		if (!race_round(i, sizes[tu_rand(&rng) % 4])) {
			tu_seed_failed("test-fsx", g_seed);
			fail_msg("fsx: seed %llu, rewrite race round %d failed",
				 ULL(g_seed), i);
		}
	}
}

/* An assertion in the library (CLIO_DEBUG invariants) or a sanitizer
 * aborts: say what to repeat, with write(2) only. */
static void
on_abort(int sig)
{
	char msg[160], num[24], *p = msg;
	const char *parts[4] = { "\ntest-fsx: aborted: repeat with CLIO_SEED=",
				 NULL, " CLIO_FSX_CONFIG=", NULL };
	uint64_t v;
	int i, k;

	for (i = 0; i < 4; i++) {
		const char *q = parts[i];

		if (q == NULL) {
			v = i == 1 ? g_seed : (uint64_t)(g_cur < 0 ? 0 : g_cur);
			k = sizeof(num);
			num[--k] = '\0';
			do
				num[--k] = (char)('0' + v % 10);
			while ((v /= 10) != 0 && k > 0);
			q = num + k;
			if (i == 3 && g_cur == -2)
				q = "(none: the rewrite race)";
		}
		while (*q && p < msg + sizeof(msg) - 2)
			*p++ = *q++;
	}
	*p++ = '\n';
	if (write(2, msg, (size_t)(p - msg)) < 0)
		(void)0;
	signal(sig, SIG_DFL);
	raise(sig);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fsx_single),
		cmocka_unit_test(test_fsx_threads),
		cmocka_unit_test(test_fsx_rewrite_race),
	};
	const char *fl = getenv("CLIO_FLAVOUR"), *s;
	double t0 = tu_now();
	long total = PLAIN_OPS;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0); /* in order with stderr */
	signal(SIGABRT, on_abort);
	g_seed = tu_seed("test-fsx");
	/* TSan runs slower: fewer ops, the same configurations */
	if (fl != NULL && strcmp(fl, "asan") == 0) {
		g_race_rounds = 4;
	} else if (fl != NULL && strcmp(fl, "tsan") == 0) {
		total = PLAIN_OPS / 2;
		g_race_rounds = 3;
	}
	if ((s = getenv("CLIO_FSX_OPS")) != NULL && *s)
		total = atol(s);
	if ((s = getenv("CLIO_FSX_DEV")) != NULL && *s)
		g_dev = s;
	if ((s = getenv("CLIO_FSX_CONFIG")) != NULL && *s)
		g_only = atoi(s);
	/* four fifths to the single thread, the rest to the threads; TSan
	 * has little to check in one thread: a third of that there */
	g_st_ops = total * 4 / 5;
	g_mt_ops = total / 5;
	if (fl != NULL && strcmp(fl, "tsan") == 0)
		g_st_ops /= 3;
	r = cmocka_run_group_tests(tests, NULL, NULL);
	fprintf(stderr, "test-fsx: seed %llu: %ld ops (and %ld in the rewrite "
		"race) in %.1f s%s", ULL(g_seed), g_total_ops, g_race_ops,
		tu_now() - t0, r ? ": FAILED" : "\n");
	if (r && g_first_failed >= 0)
		fprintf(stderr, "; first: CLIO_SEED=%llu CLIO_FSX_CONFIG=%d\n",
			ULL(g_seed), g_first_failed);
	else if (r)
		fprintf(stderr, "; repeat with CLIO_SEED=%llu\n", ULL(g_seed));
	return r;
}
