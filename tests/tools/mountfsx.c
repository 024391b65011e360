/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mountfsx.c - a seeded, model-based random test of one file through a
 * mounted file system (written for `clio mount`), with ordinary system
 * calls only, in the spirit of fsx.
 *
 *   mountfsx [-s SEED] [-n OPS] [-m MAXSIZE] [-f] [-d] [-o OUT] [-T] [-v] FILE
 *
 *   -s SEED     the seed (default: from the clock, printed first)
 *   -n OPS      operations to run (default 2000)
 *   -m MAXSIZE  the file never grows past this (default 8M; K, M, G)
 *   -f          FILE is fixed-size and exists (clio mount of a device:
 *               the file `disk`): its size and contents are read at the
 *               start; no truncation, nothing written past the end
 *   -d          also open descriptors with O_DIRECT (aligned buffers,
 *               offsets and lengths 4096-aligned); an O_DIRECT open that
 *               fails is a failure
 *   -o OUT      at the end write the expected contents to OUT, so that a
 *               script can cmp the file underneath after unmounting
 *   -T          no reopens with O_TRUNC (they are on by default, not
 *               with -f)
 *   -v          print every op
 *
 * Without -f, FILE is created (or truncated) empty.  A shadow buffer holds
 * what the file must contain, and its size; bytes of the shadow past the
 * size are always zero, so a write or truncation past EOF leaves a hole of
 * zeros in the model, as in the file.  Up to NSLOT descriptors are open on
 * FILE at once, each O_RDONLY, O_WRONLY or O_RDWR, buffered or O_DIRECT;
 * ops pick a descriptor that can do them, so data written through one is
 * read through another.  The ops: pwrite (small 1..3000 bytes, across a
 * 512/4K/64K boundary, medium, large up to 1 MiB, past EOF making a hole),
 * pread (compared byte for byte; a read that reaches past EOF must be
 * short by exactly that much, one at or past EOF returns 0), write then
 * read back through another descriptor, ftruncate down and up, fsync,
 * fdatasync, fstat and stat (st_size must be the shadow's), close and
 * reopen one descriptor (now and then with O_TRUNC: the file must then
 * be empty), close all and reopen, and now and then a read of the whole
 * file.  At the end every descriptor is closed and the whole
 * file is read through a new one (and through an O_DIRECT one with -d).
 *
 * Every choice comes from one xorshift64* generator seeded from SEED by
 * splitmix64, so -s SEED with the same other options repeats a run op for
 * op.  On the first wrong result it prints the seed, the op number, what
 * was wrong (for data: the offset, the first differing byte, got and
 * want, how many bytes differ), the last LOGSHOW ops (and earlier ones
 * that wrote the wrong byte, marked '*'), the command to repeat it, and
 * exits 1.  Exit 2: usage or setup error; 0: every check passed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MiB (1ull << 20)
#define MAXLEN MiB		/* largest single transfer */
#define DALIGN 4096u		/* O_DIRECT alignment */
#define NSLOT 4			/* descriptors open at once, at most */
#define LOGN 256		/* ops remembered */
#define LOGSHOW 20		/* ops shown on a failure */

#define ULL(x) ((unsigned long long)(x))

enum opk {
	OP_WRITE, OP_READ, OP_WCHECK, OP_TRUNC, OP_FSYNC, OP_FDATASYNC,
	OP_FSTAT, OP_STAT, OP_REOPEN, OP_OTRUNC, OP_REOPEN_ALL, OP_READALL,
	OP_SETUP, OP_NKINDS
};
static const char *const op_name[] = {
	"pwrite", "pread", "pwrite+pread", "ftruncate", "fsync", "fdatasync",
	"fstat", "stat", "reopen", "reopen-O_TRUNC", "reopen-all", "read-all",
	"setup"
};

struct slot {
	int fd;			/* -1: closed */
	int acc;		/* O_RDONLY, O_WRONLY, O_RDWR */
	bool direct;
};

struct oplog {
	long n;
	enum opk k;
	int slot, slot2;	/* slot2: the reader of OP_WCHECK */
	char how[16];		/* the descriptor's mode, e.g. "rw+D" */
	char how2[16];		/* slot2's */
	uint64_t off, len;
	long long ret;
	uint64_t size;		/* the model's size after the op */
};

/* --------------------------------------------------------------- state */

static const char *path;
static uint64_t seed, rng;
static long nops = 2000, op;
static uint64_t maxsize = 8 * MiB;
static bool fixed, allow_direct, verbose, allow_otrunc = true;
static const char *outpath;

static unsigned char *shadow;	/* maxsize bytes; zero past size */
static uint64_t size;		/* the model's file size */
static unsigned char *buf, *data; /* MAXLEN each, DALIGN-aligned */
static struct slot slots[NSLOT];
static struct oplog oplog[LOGN];
static long counts[OP_NKINDS];
static uint64_t bad_off = UINT64_MAX; /* the wrong byte, for '*' marks */
static uint64_t size_max, size_sum, bytes_w, bytes_r; /* for the summary */

/* ----------------------------------------------------------------- PRNG */

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t
rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

/* uniform in [0, n); 0 if n is 0 */
static uint64_t
below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* uniform in [lo, hi] */
static uint64_t
between(uint64_t lo, uint64_t hi)
{
	return lo + below(hi - lo + 1);
}

static void
fill(unsigned char *p, size_t len)
{
	while (len >= 8) {
		uint64_t x = rnd();
		memcpy(p, &x, 8);
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		*p++ = (unsigned char)rnd();
}

static uint64_t
min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* ------------------------------------------------------------ reporting */

static const char *
mode_name(const struct slot *s, char *out, size_t n)
{
	snprintf(out, n, "%s%s", s->acc == O_RDONLY ? "r" : s->acc == O_WRONLY ? "w" : "rw",
		 s->direct ? "+D" : "");
	return out;
}

static struct oplog *
log_op(enum opk k, int slot, uint64_t off, uint64_t len)
{
	struct oplog *l = &oplog[op % LOGN];

	memset(l, 0, sizeof(*l));
	l->n = op;
	l->k = k;
	l->slot = slot;
	l->slot2 = -1;
	if (slot >= 0)
		mode_name(&slots[slot], l->how, sizeof(l->how));
	l->off = off;
	l->len = len;
	l->size = size;
	counts[k]++;
	return l;
}

static void
print_op(const struct oplog *l, const char *mark)
{
	fprintf(stderr, "%s op %ld: %s", mark, l->n, op_name[l->k]);
	if (l->slot >= 0)
		fprintf(stderr, " [slot %d %s]", l->slot, l->how);
	if (l->slot2 >= 0)
		fprintf(stderr, " read back through [slot %d %s]", l->slot2,
			l->how2);
	if (l->k == OP_TRUNC)
		fprintf(stderr, " to %llu", ULL(l->off));
	else if (l->k == OP_WRITE || l->k == OP_READ || l->k == OP_WCHECK)
		fprintf(stderr, " off %llu len %llu (end %llu)", ULL(l->off),
			ULL(l->len), ULL(l->off + l->len));
	fprintf(stderr, " = %lld; size %llu\n", l->ret, ULL(l->size));
}

/* Did logged op l change the byte at bad_off? */
static bool
touched(const struct oplog *l)
{
	if (bad_off == UINT64_MAX)
		return false;
	if (l->k == OP_WRITE || l->k == OP_WCHECK)
		return l->off <= bad_off && bad_off < l->off + l->len;
	if (l->k == OP_TRUNC)
		return l->off <= bad_off;
	return l->k == OP_OTRUNC;	/* zeroed everything */
}

static void __attribute__((noreturn, format(printf, 1, 2)))
failf(const char *fmt, ...)
{
	va_list ap;
	long i, first = op >= LOGN ? op - LOGN + 1 : 0, from = op;
	int marked = 0;

	fprintf(stderr, "mountfsx: FAILED: seed %llu, op %ld: ", ULL(seed), op);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nmountfsx: file %s, model size %llu; the last ops, the "
		"failing one last ('*': an op that last wrote the wrong byte, "
		"up to 8 before these):\n", path, ULL(size));
	/* from: the 8th-last op before the last LOGSHOW that wrote the byte */
	for (i = op - LOGSHOW; i >= first && marked < 8; i--)
		if (oplog[i % LOGN].n == i && touched(&oplog[i % LOGN])) {
			marked++;
			from = i;
		}
	for (i = first; i <= op; i++) {
		const struct oplog *l = &oplog[i % LOGN];
		if (l->n != i)
			continue;
		if (i + LOGSHOW > op)
			print_op(l, touched(l) ? "*" : " ");
		else if (i >= from && touched(l))
			print_op(l, "*");
	}
	fprintf(stderr, "mountfsx: repeat with: mountfsx -s %llu -n %ld -m %llu%s%s%s FILE\n",
		ULL(seed), nops, ULL(maxsize), fixed ? " -f" : "",
		allow_direct ? " -d" : "", allow_otrunc ? "" : " -T");
	exit(1);
}

/* A system call failed where it must not. */
#define SYSFAIL(what) failf("%s: %s", (what), strerror(errno))

/* got[0..len), read at off, must be the shadow's bytes. */
static void
check_data(const unsigned char *got, uint64_t off, uint64_t len, const char *what)
{
	const unsigned char *want = shadow + off;
	uint64_t i, first = len, last = 0, nbad = 0;

	if (memcmp(got, want, len) == 0)
		return;
	for (i = 0; i < len; i++) {
		if (got[i] != want[i]) {
			if (first == len)
				first = i;
			last = i;
			nbad++;
		}
	}
	bad_off = off + first;
	failf("%s: byte %llu (4K block %llu + %llu) is 0x%02x, want 0x%02x; %llu "
	      "bytes differ in [%llu, %llu] of the read [%llu, %llu)", what,
	      ULL(off + first), ULL((off + first) / 4096), ULL((off + first) % 4096),
	      got[first], want[first], ULL(nbad), ULL(off + first), ULL(off + last),
	      ULL(off), ULL(off + len));
}

/* --------------------------------------------------------- descriptors */

static int
slot_open_flags(int i, int acc, bool direct, int more)
{
	struct slot *s = &slots[i];
	int flags = acc | O_CLOEXEC | (direct ? O_DIRECT : 0) | more;

	s->fd = open(path, flags);
	if (s->fd < 0) {
		char m[16];
		struct slot t = { -1, acc, direct };
		failf("open(%s, %s) of slot %d: %s%s", path, mode_name(&t, m, sizeof(m)),
		      i, strerror(errno),
		      direct && errno == EINVAL ? " (the mount must support O_DIRECT)" : "");
	}
	s->acc = acc;
	s->direct = direct;
	return s->fd;
}

static int
slot_open(int i, int acc, bool direct)
{
	return slot_open_flags(i, acc, direct, 0);
}

static void
slot_close(int i)
{
	if (slots[i].fd < 0)
		return;
	if (close(slots[i].fd) < 0) {
		slots[i].fd = -1;
		SYSFAIL("close");
	}
	slots[i].fd = -1;
}

static void
slot_open_random(int i)
{
	static const int accs[] = { O_RDONLY, O_WRONLY, O_RDWR, O_RDWR };
	bool direct = allow_direct && below(3) == 0;

	slot_open(i, accs[below(4)], direct);
}

static bool
can(const struct slot *s, bool wr)
{
	return s->fd >= 0 && (wr ? s->acc != O_RDONLY : s->acc != O_WRONLY);
}

/* A random open slot that can write (wr) or read, other than not; if
 * there is none, one is opened read-write. */
static int
pick(bool wr, int not)
{
	int cand[NSLOT], n = 0, i;

	for (i = 0; i < NSLOT; i++)
		if (i != not && can(&slots[i], wr))
			cand[n++] = i;
	if (n > 0)
		return cand[below((uint64_t)n)];
	for (i = 0; i < NSLOT; i++)
		if (i != not && slots[i].fd < 0)
			break;
	if (i == NSLOT) /* all open, none fit: replace one */
		for (i = (int)below(NSLOT); i == not; i = (int)below(NSLOT))
			;
	slot_close(i);
	slot_open(i, O_RDWR, allow_direct && below(3) == 0);
	return i;
}

/* ------------------------------------------------------------- choices */

/* A length for a transfer: small, medium or large. */
static uint64_t
rand_len(void)
{
	uint64_t r = below(100);

	if (r < 45)
		return between(1, 3000);
	if (r < 75)
		return between(1, 65536);
	if (r < 90)
		return between(65536, 256 * 1024);
	return between(256 * 1024, MAXLEN);
}

/* Choose off and len of a write: *off + *len <= limit, *len >= 1. */
static void
write_range(uint64_t limit, uint64_t *off, uint64_t *len)
{
	uint64_t r = below(100), o, l;

	if (r < 20) {
		/* straddle a 512, 4K or 64K boundary */
		static const uint64_t bs[] = { 512, 4096, 65536 };
		uint64_t b = bs[below(3)], hi = size + b;
		uint64_t at = (below(hi / b + 1) + 1) * b;
		l = between(2, r < 10 ? 3000 : 3 * b);
		o = at - between(1, min64(l - 1, at));
	} else if (r < 35 && !fixed) {
		/* past EOF: a hole between */
		l = rand_len();
		o = size + between(1, r < 28 ? 8192 : 512 * 1024);
	} else if (r < 45) {
		/* at EOF: an append (or the last bytes, fixed) */
		l = rand_len();
		o = fixed ? (size > l ? size - l : 0) : size;
	} else {
		l = rand_len();
		o = below(size + 1);
	}
	if (o >= limit)
		o = below(limit);
	if (l > limit - o)
		l = limit - o;
	if (l == 0)
		l = 1, o = limit - 1;
	*off = o;
	*len = l;
}

/* Align a range for O_DIRECT, inside [0, limit) (limit aligned). */
static void
align_range(uint64_t limit, uint64_t *off, uint64_t *len)
{
	uint64_t o = *off / DALIGN * DALIGN;
	uint64_t l = (*len + DALIGN - 1) / DALIGN * DALIGN;

	if (l > MAXLEN)
		l = MAXLEN;
	if (l > limit)
		l = limit;
	if (o + l > limit)
		o = limit - l;
	*off = o;
	*len = l;
}

/* ------------------------------------------------------------------ ops */

/* pwrite of data[0..len) at off through slot i; the shadow follows. */
static void
write_at(struct oplog *l, int i, uint64_t off, uint64_t len)
{
	ssize_t r;

	fill(data, len);
	r = pwrite(slots[i].fd, data, len, (off_t)off);
	l->ret = r;
	if (r < 0)
		SYSFAIL("pwrite");
	if ((uint64_t)r != len)
		failf("pwrite wrote %zd of %llu bytes", r, ULL(len));
	memcpy(shadow + off, data, len);
	bytes_w += len;
	if (off + len > size)
		size = off + len;
	l->size = size;
}

/* pread through slot i, checked against the model. */
static void
read_check(struct oplog *l, int i, uint64_t off, uint64_t len, const char *what)
{
	uint64_t want = off >= size ? 0 : min64(len, size - off);
	ssize_t r;

	r = pread(slots[i].fd, buf, len, (off_t)off);
	l->ret = r;
	if (r < 0)
		SYSFAIL("pread");
	if ((uint64_t)r != want)
		failf("%s: pread of %llu at %llu returned %zd, want %llu (model size %llu)",
		      what, ULL(len), ULL(off), r, ULL(want), ULL(size));
	bytes_r += want;
	check_data(buf, off, want, what);
}

static uint64_t
limit(void)
{
	return fixed ? size : maxsize;
}

static void
op_write(void)
{
	int i = pick(true, -1);
	uint64_t off, len;
	struct oplog *l;

	write_range(limit(), &off, &len);
	if (slots[i].direct)
		align_range(limit(), &off, &len);
	l = log_op(OP_WRITE, i, off, len);
	write_at(l, i, off, len);
}

static void
op_read(void)
{
	int i = pick(false, -1);
	uint64_t r = below(100), off, len = rand_len();
	struct oplog *l;

	if (r < 8) {
		off = size + below(65536);		/* at or past EOF */
	} else if (r < 20 && size > 0) {
		off = size - between(1, min64(size, len));	/* across EOF */
		len += below(8192);
	} else {
		off = below(size + 1);
	}
	if (len > MAXLEN)
		len = MAXLEN;
	if (slots[i].direct) {
		off = off / DALIGN * DALIGN;
		len = (len + DALIGN - 1) / DALIGN * DALIGN;
		if (len > MAXLEN)
			len = MAXLEN;
	}
	l = log_op(OP_READ, i, off, len);
	read_check(l, i, off, len, "pread");
}

/* Write through one descriptor, read the range back through another. */
static void
op_wcheck(void)
{
	int w = pick(true, -1), rd = pick(false, w);
	uint64_t off, len;
	struct oplog *l;

	write_range(limit(), &off, &len);
	if (slots[w].direct || slots[rd].direct)
		align_range(limit(), &off, &len);
	l = log_op(OP_WCHECK, w, off, len);
	l->slot2 = rd;
	mode_name(&slots[rd], l->how2, sizeof(l->how2));
	write_at(l, w, off, len);
	read_check(l, rd, off, len, "read back through another descriptor");
	l->ret = (long long)len;
}

static void
op_trunc(void)
{
	int i = pick(true, -1);
	uint64_t r = below(100), to;
	struct oplog *l;

	if (r < 45)
		to = below(size + 1);
	else if (r < 55)
		to = size / 4096 * 4096;
	else
		to = size + between(1, r < 80 ? 8192 : MAXLEN);
	if (to > maxsize)
		to = maxsize;
	l = log_op(OP_TRUNC, i, to, 0);
	if (ftruncate(slots[i].fd, (off_t)to) < 0)
		SYSFAIL("ftruncate");
	if (to < size)
		memset(shadow + to, 0, size - to);
	size = to;
	l->size = size;
}

static void
check_size(struct oplog *l, const struct stat *st, const char *what)
{
	l->ret = (long long)st->st_size;
	if ((uint64_t)st->st_size != size)
		failf("%s: st_size %lld, want %llu", what, (long long)st->st_size, ULL(size));
}

static void
op_sync(enum opk k)
{
	int i = pick(below(2) == 0, -1);

	log_op(k, i, 0, 0);
	if ((k == OP_FSYNC ? fsync(slots[i].fd) : fdatasync(slots[i].fd)) < 0)
		SYSFAIL(op_name[k]);
}

static void
op_stat(enum opk k)
{
	struct stat st;
	int i = k == OP_FSTAT ? pick(below(2) == 0, -1) : -1;
	struct oplog *l = log_op(k, i, 0, 0);

	if ((k == OP_FSTAT ? fstat(slots[i].fd, &st) : stat(path, &st)) < 0)
		SYSFAIL(op_name[k]);
	check_size(l, &st, op_name[k]);
}

static void
op_reopen(void)
{
	int i = (int)below(NSLOT);

	log_op(OP_REOPEN, i, 0, 0);
	slot_close(i);
	slot_open_random(i);
	mode_name(&slots[i], oplog[op % LOGN].how, sizeof(oplog[0].how));
}

/* Reopen a slot writable with O_TRUNC: the file must be empty. */
static void
op_open_trunc(void)
{
	int i = (int)below(NSLOT);
	struct stat st;
	struct oplog *l = log_op(OP_OTRUNC, i, 0, 0);

	slot_close(i);
	slot_open_flags(i, below(2) ? O_RDWR : O_WRONLY,
			allow_direct && below(3) == 0, O_TRUNC);
	mode_name(&slots[i], l->how, sizeof(l->how));
	memset(shadow, 0, size);
	size = 0;
	l->size = 0;
	if (fstat(slots[i].fd, &st) < 0)
		SYSFAIL("fstat after an O_TRUNC open");
	check_size(l, &st, "fstat after an O_TRUNC open");
}

static void
op_reopen_all(void)
{
	int i, n = 1 + (int)below(NSLOT);
	struct stat st;
	struct oplog *l = log_op(OP_REOPEN_ALL, -1, 0, 0);

	for (i = 0; i < NSLOT; i++)
		slot_close(i);
	if (stat(path, &st) < 0)
		SYSFAIL("stat with nothing open");
	check_size(l, &st, "stat with nothing open");
	for (i = 0; i < n; i++)
		slot_open_random(i);
}

/* Read the whole file (and past its end) through slot i. */
static void
read_all(struct oplog *l, int i, const char *what)
{
	uint64_t off, len;

	for (off = 0; off < size; off += len) {
		len = min64(MAXLEN, size - off);
		if (slots[i].direct)
			len = (len + DALIGN - 1) / DALIGN * DALIGN;
		l->off = off;
		l->len = len;
		read_check(l, i, off, len, what);
	}
	l->off = size / DALIGN * DALIGN;
	l->len = DALIGN;
	read_check(l, i, l->off, l->len, what);
	l->off = 0;
	l->len = size;
}

static void
op_read_all(void)
{
	int i = pick(false, -1);

	read_all(log_op(OP_READALL, i, 0, size), i, "read of the whole file");
}

static void
one_op(void)
{
	uint64_t r = below(1000);

	if (r < 300)
		op_write();
	else if (r < 580)
		op_read();
	else if (r < 700)
		op_wcheck();
	else if (r < 780) {
		if (fixed)
			op_read();
		else
			op_trunc();
	} else if (r < 820)
		op_sync(OP_FSYNC);
	else if (r < 850)
		op_sync(OP_FDATASYNC);
	else if (r < 900)
		op_stat(OP_FSTAT);
	else if (r < 920)
		op_stat(OP_STAT);
	else if (r < 970)
		op_reopen();
	else if (r < 975) {
		if (fixed || !allow_otrunc)
			op_reopen();
		else
			op_open_trunc();
	}
	else if (r < (fixed ? 998u : 990u))
		op_reopen_all();
	else
		op_read_all();
	if (verbose)
		print_op(&oplog[op % LOGN], " ");
}

/* ---------------------------------------------------------------- main */

static int
parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end != '\0')
		return -1;
	*out = v;
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: mountfsx [-s SEED] [-n OPS] [-m MAXSIZE] [-f] [-d] "
		"[-o OUT] [-T] [-v] FILE\n");
	exit(2);
}

static void
finish(void)
{
	struct oplog *l;
	struct stat st;
	int i;

	op = nops + 1;
	l = log_op(OP_REOPEN_ALL, -1, 0, 0);
	for (i = 0; i < NSLOT; i++)
		slot_close(i);
	if (stat(path, &st) < 0)
		SYSFAIL("final stat");
	check_size(l, &st, "final stat");
	op++;
	slot_open(0, O_RDONLY, false);
	read_all(log_op(OP_READALL, 0, 0, size), 0, "final read");
	if (fstat(slots[0].fd, &st) < 0)
		SYSFAIL("final fstat");
	check_size(log_op(OP_FSTAT, 0, 0, 0), &st, "final fstat");
	slot_close(0);
	if (allow_direct) {
		op++;
		slot_open(0, O_RDONLY, true);
		read_all(log_op(OP_READALL, 0, 0, size), 0, "final O_DIRECT read");
		slot_close(0);
	}
}

static void
write_out(void)
{
	FILE *fp = fopen(outpath, "wb");

	if (fp == NULL || fwrite(shadow, 1, size, fp) != size || fclose(fp) != 0) {
		fprintf(stderr, "mountfsx: %s: %s\n", outpath, strerror(errno));
		exit(2);
	}
}

int
main(int argc, char **argv)
{
	bool have_seed = false;
	uint64_t x;
	int c, i;

	while ((c = getopt(argc, argv, "s:n:m:fdo:Tv")) != -1) {
		switch (c) {
		case 's':
			if (parse_size(optarg, &seed) < 0)
				usage();
			have_seed = true;
			break;
		case 'n':
			if (parse_size(optarg, &x) < 0 || x > (uint64_t)LONG_MAX / 2)
				usage();
			nops = (long)x;
			break;
		case 'm':
			if (parse_size(optarg, &maxsize) < 0 || maxsize < DALIGN ||
			    maxsize % DALIGN != 0)
				usage();
			break;
		case 'f': fixed = true; break;
		case 'd': allow_direct = true; break;
		case 'o': outpath = optarg; break;
		case 'T': allow_otrunc = false; break;
		case 'v': verbose = true; break;
		default: usage();
		}
	}
	if (argc - optind != 1)
		usage();
	path = argv[optind];
	if (!have_seed) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^
		       (uint64_t)getpid() << 32;
	}
	fprintf(stderr, "mountfsx: seed %llu, %ld ops, %s%s%s\n", ULL(seed), nops,
		path, fixed ? ", fixed size" : "", allow_direct ? ", O_DIRECT too" : "");
	x = seed;
	rng = splitmix64(&x);
	if (rng == 0)
		rng = 1;
	for (i = 0; i < NSLOT; i++)
		slots[i].fd = -1;
	if (posix_memalign((void **)&buf, DALIGN, MAXLEN) != 0 ||
	    posix_memalign((void **)&data, DALIGN, MAXLEN) != 0) {
		fprintf(stderr, "mountfsx: out of memory\n");
		return 2;
	}

	op = 0;	/* the setup; the random ops are 1 to nops */
	slots[0].acc = O_RDWR;	/* the setup's descriptor, as logged */
	if (fixed) {
		struct stat st;
		struct oplog *l = log_op(OP_SETUP, 0, 0, 0);
		int fd = open(path, O_RDWR | O_CLOEXEC);
		uint64_t off;

		if (fd < 0 || fstat(fd, &st) < 0) {
			fprintf(stderr, "mountfsx: %s: %s\n", path, strerror(errno));
			return 2;
		}
		size = maxsize = (uint64_t)st.st_size / DALIGN * DALIGN;
		if (size == 0 || size != (uint64_t)st.st_size) {
			fprintf(stderr, "mountfsx: -f: %s: size %lld, want a nonzero "
				"multiple of %u\n", path, (long long)st.st_size, DALIGN);
			return 2;
		}
		shadow = malloc(size);
		if (shadow == NULL) {
			fprintf(stderr, "mountfsx: out of memory\n");
			return 2;
		}
		for (off = 0; off < size;) {
			ssize_t r = pread(fd, shadow + off, min64(MAXLEN, size - off), (off_t)off);
			if (r <= 0) {
				l->off = off;
				if (r == 0)
					errno = EIO;
				SYSFAIL("initial read");
			}
			off += (uint64_t)r;
		}
		slots[0].fd = fd;
		slots[0].acc = O_RDWR;
		slots[0].direct = false;
	} else {
		struct stat st;
		struct oplog *l = log_op(OP_SETUP, 0, 0, 0);
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0) {
			fprintf(stderr, "mountfsx: %s: %s\n", path, strerror(errno));
			return 2;
		}
		shadow = calloc(1, maxsize);
		if (shadow == NULL) {
			fprintf(stderr, "mountfsx: out of memory\n");
			return 2;
		}
		size = 0;
		slots[0].fd = fd;
		slots[0].acc = O_RDWR;
		slots[0].direct = false;
		if (fstat(fd, &st) < 0)
			SYSFAIL("fstat");
		check_size(l, &st, "fstat after open(O_CREAT | O_TRUNC)");
	}
	slot_open(1, O_RDONLY, false);
	if (allow_direct)
		slot_open(2, O_RDWR, true);

	for (op = 1; op <= nops; op++) {
		one_op();
		size_sum += size;
		if (size > size_max)
			size_max = size;
	}
	finish();
	if (outpath != NULL)
		write_out();
	fprintf(stderr, "mountfsx: passed: %ld ops; size: final %llu, mean %llu, max %llu; "
		"%llu MiB written, %llu MiB read; ops:", nops, ULL(size),
		ULL(nops ? size_sum / (uint64_t)nops : 0), ULL(size_max),
		ULL(bytes_w >> 20), ULL(bytes_r >> 20));
	for (i = 0; i < OP_SETUP; i++)
		if (counts[i] > 0)
			fprintf(stderr, " %s %ld", op_name[i], counts[i]);
	fprintf(stderr, "\n");
	free(shadow);
	free(buf);
	free(data);
	return 0;
}
