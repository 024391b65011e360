/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchcore.c - `clio bench core`: the library's core against its peers on
 * this machine, each case beside its peer in the same run.
 *
 * Only the public API (clio.h) is used for clio; the peers are the kernel
 * (pread(2) on its page cache) and the device itself, driven through
 * io_uring with O_DIRECT and no cache (the limit any cache over it can
 * reach).  Every case runs --runs times, clio and its peer taking turns
 * (run 1 of every case and system, then run 2, ...), and the table
 * holds medians.
 *
 *  (a) cached 4 KiB random reads of a 32 MiB file by 1, 2 and 4 threads
 *      for a fixed time: clio_pread (one handle per thread, one device and
 *      one cache holding the whole file, warmed first) against pread(2)
 *      (one descriptor per thread, the page cache warmed first), M reads/s;
 *      and clio's 2-thread rate over its 1-thread rate.  Beside them, the
 *      bound of any cache that copies: the same threads doing only the
 *      4 KiB memcpy out of a resident 32 MiB buffer (no lookup, no
 *      lock), M copies/s, and its own 2-thread over 1-thread rate, which
 *      is the most the scaling row can reach on this machine's memory.
 *  (b) cold sequential read of the big file in 4 KiB clio_pread calls
 *      (file:PATH?direct=1&qd=16, default tunables: the device takes as
 *      many requests at once as the peer has in flight), so that
 *      clustering and read-ahead do the work, against 1 MiB O_DIRECT reads
 *      at queue depth 16 through io_uring, MB/s (10^6 B/s).  Beside them,
 *      the bound of any cache that hands out copies 4 KiB at a time: the
 *      same io_uring reads, each 1 MiB then copied out in 4 KiB memcpys
 *      (clio's data comes the same way and is copied the same way).
 *  (c) cold 4 KiB random reads of the big file, larger than the cache, by
 *      32 threads for a fixed time (file:PATH?direct=1&qd=32) against 4 KiB
 *      O_DIRECT reads at queue depth 32 from one thread through io_uring,
 *      k reads/s.  Beside them, the bound of any synchronous read call:
 *      32 threads each doing pread(2) on an O_DIRECT descriptor, no cache.
 *  (d) the cache's memory beyond its buffers, per buffer, at the default
 *      bsize: what clio_cache_new adds to the process (heap bytes in use
 *      from mallinfo2() plus mappings made outside malloc, from VmData)
 *      minus the buffers' own bytes.
 *
 * Cold cases drop the file's pages (posix_fadvise DONTNEED) before every
 * run of both systems, and both read with O_DIRECT.  Both systems' memory
 * is faulted in before the clock starts: the peer's buffers by a memset,
 * clio's cache by writing and reading its size through a mem: device
 * (otherwise the kernel zeroes each huge page of the cache inside the
 * timed read, at its first use).  The files are removed
 * at the end, on an error and on SIGINT or SIGTERM (--file's is kept).
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/param.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define BLOCK 4096u
#define CACHED_FILE_SIZE (32ull << 20)
#define CACHED_CACHE_SIZE (CACHED_FILE_SIZE + CACHED_FILE_SIZE / 8 + (16ull << 20))
#define SEQ_CACHE_SIZE (64ull << 20)
#define SEQ_IO_SIZE (1u << 20)
#define SEQ_QD 16u
#define HUGE_PAGE (2u << 20)
#define RAND_QD 32u
#define RAND_THREADS 32
#define COLD_CACHE_MAX (64ull << 20)
#define META_CACHE_SIZE (1ull << 30)
#define PERRUN_MAX 10	/* runs whose ratios the note lists */
#define NSYS 3		/* clio, its peer, and a bound */

static const int cached_threads[] = { 1, 2, 4 };
#define N_CACHED (int)(sizeof(cached_threads) / sizeof(cached_threads[0]))
/* the timed cases, as the progress line names them */
static const char *const sys_names[NSYS] = { "clio", "peer", "bound" };
static const char *const case_names[N_CACHED + 2] = {
	"(a) 1 thread", "(a) 2 threads", "(a) 4 threads", "(b)", "(c)"
};

enum core_row { R_CACHED1, R_CACHED2, R_CACHED4, R_SCALING, R_SEQ, R_RAND, R_META, R_N };

static const struct {
	const char *label, *against, *unit;
	double target;
} rows[R_N] = {
	{ "(a) cached 4k random reads, 1 thread", "pread(2), page cache", "M reads/s", 2 },
	{ "(a) cached 4k random reads, 2 threads", "pread(2), page cache", "M reads/s", 2 },
	{ "(a) cached 4k random reads, 4 threads", "pread(2), page cache", "M reads/s", 2 },
	{ "(a) clio 2 threads / 1 thread", "clio, 1 thread", "M reads/s", 1.8 },
	{ "(b) cold sequential read bs=4k", "io_uring O_DIRECT 1M qd16", "MB/s", 0.9 },
	{ "(c) cold random 4k reads, 32 threads", "io_uring O_DIRECT 4k qd32", "k reads/s", 0.8 },
	{ "(d) cache metadata per buffer (at most)", "buffer bytes (bsize)", "bytes", 0.01 },
};

struct core_ctx {
	const struct bench_opts *bo;
	char path[4096], cached_path[4200];
	uint64_t size, cold_cache;
	double cached_s, rand_s;	/* duration of (a)'s and (c)'s reading */
	unsigned char *copy_src;	/* (a)'s bound: the 32 MiB copied from */
	uint64_t cached_misses;		/* (a): clio misses while timed, all runs */
	uint64_t rand_hits, rand_lookups; /* (c): clio's, all runs */
};

/* set by the handler, read by the readers' threads: an atomic (lock-free),
 * not a volatile sig_atomic_t, which is no synchronisation between threads */
static atomic_int stop;
static volatile unsigned char copy_seen; /* (b)'s bound: its copies are used */

static void
on_signal(int sig)
{
	int saved = errno;

	(void)sig;
	atomic_store(&stop, 1);
	errno = saved;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* xorshift64: the random block numbers, the same for clio and its peer */
static uint64_t
next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t
seed_of(int run, int thread)
{
	return 0x9e3779b97f4a7c15ull * (uint64_t)(run * 64 + thread + 1) | 1;
}

static void
drop_file_pages(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd >= 0) {
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
}

static int
open_dev(const char *path, const char *query, clio_dev **d)
{
	char spec[4400], err[256] = "";
	int r;

	snprintf(spec, sizeof(spec), "file:%s?%s", path, query);
	r = clio_dev_open_err(spec, CLIO_DEV_RDONLY, d, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "clio bench: core: %s: %s\n", spec, err[0] ? err : strerror(-r));
	return r;
}

static int
open_handle(clio_cache *c, clio_dev *d, clio_file **f)
{
	int r = clio_open(c, d, CLIO_RDONLY, f);

	if (r < 0) {
		fprintf(stderr, "clio bench: core: clio_open %s: %s\n", clio_dev_name(d),
			strerror(-r));
		*f = NULL;
	}
	return r;
}

static int
new_cache(uint64_t cache_size, clio_cache **c)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	int r;

	conf.cache_size = cache_size;
	r = clio_cache_new(&conf, c);
	if (r < 0)
		fprintf(stderr, "clio bench: core: a cache of %llu bytes: %s\n",
			(unsigned long long)cache_size, strerror(-r));
	return r;
}

/*
 * Fault in the memory of c's buffers before a clock starts, as the peers'
 * buffers are: bytes written and read back through a mem: device of its
 * own on the same cache, then closed (its clean buffers stay in the cache
 * as any other object's would, and are evicted as those are).
 */
static int
fault_in_cache(clio_cache *c, uint64_t bytes)
{
	char spec[64];
	clio_dev *d = NULL;
	clio_file *f = NULL;
	char *buf = malloc(SEQ_IO_SIZE);
	uint64_t off;
	int r;

	snprintf(spec, sizeof(spec), "mem:size=%llu", (unsigned long long)bytes);
	r = buf == NULL ? -ENOMEM : clio_dev_open(spec, 0, &d);
	if (r == 0)
		r = clio_open(c, d, CLIO_RDWR, &f);
	if (r == 0)
		memset(buf, 0x5a, SEQ_IO_SIZE);
	for (off = 0; r == 0 && off + SEQ_IO_SIZE <= bytes; off += SEQ_IO_SIZE) {
		ssize_t n = clio_pwrite(f, buf, SEQ_IO_SIZE, off);

		if (n == (ssize_t)SEQ_IO_SIZE)
			n = clio_pread(f, buf, SEQ_IO_SIZE, off);
		if (n != (ssize_t)SEQ_IO_SIZE)
			r = n < 0 ? (int)n : -EIO;
	}
	if (f != NULL && clio_close(f) < 0 && r == 0)
		r = -EIO;
	if (d != NULL)
		clio_dev_close(d);
	free(buf);
	if (r < 0)
		fprintf(stderr, "clio bench: core: faulting in the cache through %s: %s\n",
			spec, strerror(-r));
	return r;
}

/* (b)'s cache: the default, if it leaves room for read-ahead */
static uint64_t
seq_cache_size(void)
{
	struct clio_conf defaults = CLIO_CONF_DEFAULTS;

	return MAX(defaults.cache_size, SEQ_CACHE_SIZE);
}

/* ------------------------------------------------ readers for (a) and (c) */

/* Readers start together: they wait until the gate opens. */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool open;
};

struct reader {
	pthread_t tid;
	struct gate *start;
	clio_file *f;		/* clio's handle, or NULL: */
	const unsigned char *mem; /* the bound's buffer, or NULL: */
	int fd;			/* the kernel's descriptor */
	uint64_t blocks, seed;
	double duration;
	unsigned check_every;	/* reads between looks at the clock */
	uint64_t count;
	double t0, t1;
	int err;		/* positive errno */
};

static void
reader_set(struct reader *r, uint64_t blocks, uint64_t seed, double duration,
	   unsigned check_every)
{
	r->blocks = blocks;
	r->seed = seed;
	r->duration = duration;
	r->check_every = check_every;
}

static void *
reader_main(void *arg)
{
	struct reader *r = arg;
	void *buf = NULL;
	double deadline;

	if (posix_memalign(&buf, BLOCK, BLOCK) != 0)
		r->err = ENOMEM;
	pthread_mutex_lock(&r->start->lock);
	while (!r->start->open)
		pthread_cond_wait(&r->start->cv, &r->start->lock);
	pthread_mutex_unlock(&r->start->lock);
	r->t0 = now_s();
	deadline = r->t0 + r->duration;
	while (r->err == 0 && !stop) {
		uint64_t off = next_random(&r->seed) % r->blocks * BLOCK;
		ssize_t got;

		if (r->count % r->check_every == 0 && now_s() >= deadline)
			break;
		if (r->mem != NULL) {
			memcpy(buf, r->mem + off, BLOCK);
			/* the copy is used: the compiler may not drop it */
			__asm__ volatile("" : : "r"(buf) : "memory");
			got = BLOCK;
		} else {
			got = r->f ? clio_pread(r->f, buf, BLOCK, off)
				   : pread(r->fd, buf, BLOCK, (off_t)off);
		}
		if (got != BLOCK)
			r->err = got < 0 ? (r->f ? (int)-got : errno) : EIO;
		else
			r->count++;
	}
	r->t1 = now_s();
	free(buf);
	return NULL;
}

/* Run the n prepared readers at once: reads a second, or NaN. */
static double
run_readers(struct reader *rd, int n, const char *what)
{
	struct gate start = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	double t0 = INFINITY, t1 = 0;
	uint64_t total = 0;
	int i, started, err = 0;

	for (started = 0; started < n; started++) {
		rd[started].start = &start;
		if (pthread_create(&rd[started].tid, NULL, reader_main, &rd[started]) != 0)
			break;
	}
	pthread_mutex_lock(&start.lock);
	if (started < n) {
		fprintf(stderr, "clio bench: core: %s: cannot start %d threads\n", what, n);
		for (i = 0; i < started; i++)
			rd[i].duration = 0;
	}
	start.open = true;
	pthread_cond_broadcast(&start.cv);
	pthread_mutex_unlock(&start.lock);
	for (i = 0; i < started; i++) {
		pthread_join(rd[i].tid, NULL);
		total += rd[i].count;
		t0 = MIN(t0, rd[i].t0);
		t1 = MAX(t1, rd[i].t1);
		if (rd[i].err != 0 && err == 0)
			err = rd[i].err;
	}
	if (err != 0)
		fprintf(stderr, "clio bench: core: %s: %s\n", what, strerror(err));
	if (err != 0 || started < n || stop || total == 0 || t1 <= t0)
		return NAN;
	return (double)total / (t1 - t0);
}

/* ------------------------------------------------ (a) cached random reads */

static double
cached_clio(struct core_ctx *k, int nthreads, int run)
{
	struct reader rd[4];
	struct clio_cache_stats before, after;
	clio_cache *c = NULL;
	clio_dev *d = NULL;
	clio_file *warm = NULL;
	char *buf = NULL;
	uint64_t off;
	double rate = NAN;
	int i, opened = 0;

	memset(rd, 0, sizeof(rd));
	if (new_cache(CACHED_CACHE_SIZE, &c) < 0 ||
	    open_dev(k->cached_path, "direct=1", &d) < 0 ||
	    open_handle(c, d, &warm) < 0 || (buf = malloc(SEQ_IO_SIZE)) == NULL)
		goto out;
	/* the warming handle stays open: the object keeps its buffers */
	for (off = 0; off < CACHED_FILE_SIZE; off += SEQ_IO_SIZE)
		if (clio_pread(warm, buf, SEQ_IO_SIZE, off) != SEQ_IO_SIZE) {
			fprintf(stderr, "clio bench: core: (a) warming read failed\n");
			goto out;
		}
	for (; opened < nthreads; opened++) {
		reader_set(&rd[opened], CACHED_FILE_SIZE / BLOCK, seed_of(run, opened), k->cached_s, 64);
		if (open_handle(c, d, &rd[opened].f) < 0)
			goto out;
	}
	clio_cache_stats(c, &before);
	rate = run_readers(rd, nthreads, "(a) clio");
	clio_cache_stats(c, &after);
	k->cached_misses += after.misses - before.misses;
out:
	for (i = 0; i < opened; i++)
		clio_close(rd[i].f);
	if (warm != NULL)
		clio_close(warm);
	if (d != NULL)
		clio_dev_close(d);
	if (c != NULL)
		clio_cache_free(c);
	free(buf);
	return rate;
}

static double
cached_kernel(struct core_ctx *k, int nthreads, int run)
{
	struct reader rd[4];
	char *buf = malloc(SEQ_IO_SIZE);
	double rate = NAN;
	int i, opened = 0, fd = open(k->cached_path, O_RDONLY);

	memset(rd, 0, sizeof(rd));
	if (fd < 0 || buf == NULL)
		goto out;
	while (read(fd, buf, SEQ_IO_SIZE) > 0)
		;
	for (; opened < nthreads; opened++) {
		reader_set(&rd[opened], CACHED_FILE_SIZE / BLOCK, seed_of(run, opened), k->cached_s, 64);
		rd[opened].fd = open(k->cached_path, O_RDONLY);
		if (rd[opened].fd < 0)
			goto out;
	}
	rate = run_readers(rd, nthreads, "(a) pread");
out:
	if (fd < 0 || opened < nthreads)
		fprintf(stderr, "clio bench: core: %s: %s\n", k->cached_path, strerror(errno));
	for (i = 0; i < opened; i++)
		close(rd[i].fd);
	if (fd >= 0)
		close(fd);
	free(buf);
	return rate;
}

/* (a)'s bound: the readers' copies alone, out of a resident buffer as
 * big as the file (the cache's buffers are as resident). */
static double
cached_copy(struct core_ctx *k, int nthreads, int run)
{
	struct reader rd[4];
	int i;

	if (k->copy_src == NULL) {
		if (posix_memalign((void **)&k->copy_src, HUGE_PAGE, CACHED_FILE_SIZE) != 0) {
			k->copy_src = NULL;
			fprintf(stderr, "clio bench: core: (a) bound: no memory\n");
			return NAN;
		}
		(void)madvise(k->copy_src, CACHED_FILE_SIZE, MADV_HUGEPAGE);
		for (i = 0; i < (int)(CACHED_FILE_SIZE / BLOCK); i++)
			memset(k->copy_src + (size_t)i * BLOCK, i & 0xff, BLOCK);
	}
	memset(rd, 0, sizeof(rd));
	for (i = 0; i < nthreads; i++) {
		rd[i].mem = k->copy_src;
		reader_set(&rd[i], CACHED_FILE_SIZE / BLOCK, seed_of(run, i), k->cached_s, 64);
	}
	return run_readers(rd, nthreads, "(a) bound");
}

/* ------------------------------------------------ (b) cold sequential read */

static double
seq_clio(struct core_ctx *k)
{
	char seq_query[32];
	clio_cache *c = NULL;
	clio_dev *d = NULL;
	clio_file *f = NULL;
	void *buf = NULL;
	uint64_t off = 0;
	double t0, rate = NAN;

	snprintf(seq_query, sizeof(seq_query), "direct=1&qd=%u", SEQ_QD);
	drop_file_pages(k->path);
	if (new_cache(seq_cache_size(), &c) < 0 ||
	    fault_in_cache(c, seq_cache_size()) < 0 ||
	    open_dev(k->path, seq_query, &d) < 0 || open_handle(c, d, &f) < 0 ||
	    posix_memalign(&buf, BLOCK, BLOCK) != 0)
		goto out;
	t0 = now_s();
	while (off < k->size && !stop) {
		ssize_t got = clio_pread(f, buf, BLOCK, off);

		if (got <= 0) {
			fprintf(stderr, "clio bench: core: (b) clio_pread at %llu: %s\n",
				(unsigned long long)off,
				got < 0 ? strerror((int)-got) : "end of file");
			goto out;
		}
		off += (uint64_t)got;
	}
	if (!stop)
		rate = (double)k->size / 1e6 / (now_s() - t0);
out:
	if (f != NULL)
		clio_close(f);
	if (d != NULL)
		clio_dev_close(d);
	if (c != NULL)
		clio_cache_free(c);
	free(buf);
	return rate;
}

/*
 * The device without a cache, through io_uring with O_DIRECT: qd reads of
 * len bytes kept in flight, each completion answered by the next read.
 * Sequential (rng == NULL): the whole file, once.  Random: len-sized
 * reads at offsets from *rng for duration seconds.  With copy_out each
 * read's bytes are then copied out 4 KiB at a time, as a copying cache
 * hands them out.  Returns the reads done and their time in *secs, or -1.
 */
static int64_t
uring_reads(struct core_ctx *k, unsigned qd, unsigned len, uint64_t *rng,
	    double duration, double *secs, bool copy_out)
{
	static unsigned char sink[BLOCK] __attribute__((aligned(64)));
	struct io_uring ring;
	char *bufs = NULL;
	size_t bufs_len = ((size_t)qd * len + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
	uint64_t offs[RAND_QD], next = 0, blocks = k->size / len;
	unsigned inflight = 0, i;
	int64_t done = 0;
	double t0, deadline, t = 0;
	int fd, r, err = 0;

	drop_file_pages(k->path);
	fd = open(k->path, O_RDONLY | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "clio bench: core: %s (O_DIRECT): %s\n", k->path, strerror(errno));
		return -1;
	}
	r = io_uring_queue_init(qd, &ring, 0);
	if (r < 0) {
		fprintf(stderr, "clio bench: core: io_uring_queue_init: %s\n", strerror(-r));
		close(fd);
		return -1;
	}
	/* in huge pages where the kernel gives them, as clio's arena: with
	 * 4 KiB pages a virtual disk may move a 1 MiB read several times
	 * slower; faulted in before the clock starts */
	if (posix_memalign((void **)&bufs, HUGE_PAGE, bufs_len) != 0) {
		bufs = NULL;
		err = ENOMEM;
		goto out;
	}
	(void)madvise(bufs, bufs_len, MADV_HUGEPAGE);
	memset(bufs, 0, bufs_len);
	t0 = t = now_s();
	deadline = t0 + duration;
	/* slot i's buffer is in flight when its offset is set */
	for (i = 0; i < qd; i++) {
		struct io_uring_sqe *sqe;

		if (rng == NULL && next >= k->size)
			break;
		offs[i] = rng ? next_random(rng) % blocks * len : next;
		next += len;
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, fd, bufs + (size_t)i * len, len, offs[i]);
		io_uring_sqe_set_data64(sqe, i);
		inflight++;
	}
	while (inflight > 0) {
		struct io_uring_cqe *cqe;
		bool more;

		r = io_uring_submit_and_wait(&ring, 1);
		if (r == -EINTR)
			continue;
		if (r < 0) {
			err = -r;
			break;
		}
		t = now_s();
		more = err == 0 && !stop && (rng ? t < deadline : true);
		while (io_uring_peek_cqe(&ring, &cqe) == 0) {
			unsigned slot = (unsigned)io_uring_cqe_get_data64(cqe);
			uint64_t want = MIN((uint64_t)len, k->size - offs[slot]);

			if (cqe->res < 0 && err == 0)
				err = -cqe->res;
			else if ((uint64_t)cqe->res != want && err == 0)
				err = EIO;
			if (copy_out && cqe->res > 0) {
				const unsigned char *src = (unsigned char *)bufs + (size_t)slot * len;
				for (size_t o = 0; o < (size_t)cqe->res; o += BLOCK) {
					memcpy(sink, src + o, MIN((size_t)BLOCK, (size_t)cqe->res - o));
					copy_seen = sink[o / BLOCK % BLOCK];
				}
			}
			io_uring_cqe_seen(&ring, cqe);
			inflight--;
			done++;
			if (more && (rng || next < k->size)) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

				offs[slot] = rng ? next_random(rng) % blocks * len : next;
				next += len;
				io_uring_prep_read(sqe, fd, bufs + (size_t)slot * len, len,
						   offs[slot]);
				io_uring_sqe_set_data64(sqe, slot);
				inflight++;
			}
		}
	}
	*secs = t - t0;
out:
	io_uring_queue_exit(&ring);
	close(fd);
	/* a read still in flight may yet land in its buffer: keep them */
	if (inflight == 0)
		free(bufs);
	if (err != 0)
		fprintf(stderr, "clio bench: core: io_uring reads of %s: %s\n", k->path,
			strerror(err));
	return err != 0 || stop ? -1 : done;
}

static double
seq_limit(struct core_ctx *k)
{
	double secs;

	if (uring_reads(k, SEQ_QD, SEQ_IO_SIZE, NULL, 0, &secs, false) < 0 || secs <= 0)
		return NAN;
	return (double)k->size / 1e6 / secs;
}

/* (b)'s bound: the limit's reads, each copied out in 4 KiB pieces. */
static double
seq_copy(struct core_ctx *k)
{
	double secs;

	if (uring_reads(k, SEQ_QD, SEQ_IO_SIZE, NULL, 0, &secs, true) < 0 || secs <= 0)
		return NAN;
	return (double)k->size / 1e6 / secs;
}

/* ------------------------------------------------ (c) cold random reads */

static double
rand_clio(struct core_ctx *k, int run)
{
	struct reader *rd = calloc(RAND_THREADS, sizeof(*rd));
	struct clio_cache_stats st;
	clio_cache *c = NULL;
	clio_dev *d = NULL;
	char query[64];
	double rate = NAN;
	int i, opened = 0;

	drop_file_pages(k->path);
	snprintf(query, sizeof(query), "direct=1&qd=%u", RAND_QD);
	if (rd == NULL || new_cache(k->cold_cache, &c) < 0 || fault_in_cache(c, k->cold_cache) < 0 ||
	    open_dev(k->path, query, &d) < 0)
		goto out;
	for (; opened < RAND_THREADS; opened++) {
		reader_set(&rd[opened], k->size / BLOCK, seed_of(run, opened), k->rand_s, 1);
		if (open_handle(c, d, &rd[opened].f) < 0)
			goto out;
	}
	rate = run_readers(rd, RAND_THREADS, "(c) clio") / 1e3;
	clio_cache_stats(c, &st);
	k->rand_hits += st.hits;
	k->rand_lookups += st.hits + st.misses;
out:
	for (i = 0; i < opened; i++)
		clio_close(rd[i].f);
	if (d != NULL)
		clio_dev_close(d);
	if (c != NULL)
		clio_cache_free(c);
	free(rd);
	return rate;
}

static double
rand_limit(struct core_ctx *k, int run)
{
	uint64_t seed = seed_of(run, 0);
	double secs;
	int64_t n = uring_reads(k, RAND_QD, BLOCK, &seed, k->rand_s, &secs, false);

	if (n <= 0 || secs <= 0)
		return NAN;
	return (double)n / secs / 1e3;
}

/* (c)'s bound: 32 threads each reading 4 KiB with pread(2) on an O_DIRECT
 * descriptor of its own, no cache: what a synchronous read call can do
 * from 32 threads, each blocked in the kernel until its read completes. */
static double
rand_sync(struct core_ctx *k, int run)
{
	struct reader *rd = calloc(RAND_THREADS, sizeof(*rd));
	double rate = NAN;
	int i, opened = 0;

	drop_file_pages(k->path);
	if (rd == NULL)
		goto out;
	for (; opened < RAND_THREADS; opened++) {
		reader_set(&rd[opened], k->size / BLOCK, seed_of(run, opened), k->rand_s, 1);
		rd[opened].fd = open(k->path, O_RDONLY | O_DIRECT);
		if (rd[opened].fd < 0) {
			fprintf(stderr, "clio bench: core: (c) bound: %s: %s\n", k->path,
				strerror(errno));
			goto out;
		}
	}
	rate = run_readers(rd, RAND_THREADS, "(c) bound") / 1e3;
out:
	for (i = 0; i < opened; i++)
		close(rd[i].fd);
	free(rd);
	return rate;
}

/* ------------------------------------------------ (d) metadata */

/* The process's data mappings (heap and private mappings), bytes. */
static uint64_t
vm_data_bytes(void)
{
	FILE *fp = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kb = 0;

	if (fp == NULL)
		return 0;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (sscanf(line, "VmData: %llu kB", &kb) == 1)
			break;
	fclose(fp);
	return kb * 1024;
}

/*
 * Bytes that clio_cache_new adds beyond the buffers, per buffer: the
 * growth of the heap bytes in use plus that of the mappings made outside
 * malloc (VmData's growth less the heap's own), less nbuf * bsize.  The
 * flusher is off here: its thread's stack is no buffer's memory.
 */
static int
measure_metadata(double *per_buf, uint32_t *bsize)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	struct clio_cache_stats st;
	struct mallinfo2 m0, m1;
	uint64_t vm0, vm1;
	double grown, outside;
	clio_cache *c;
	int r;

	conf.cache_size = META_CACHE_SIZE;
	conf.flusher = 0;
	m0 = mallinfo2();
	vm0 = vm_data_bytes();
	r = clio_cache_new(&conf, &c);
	vm1 = vm_data_bytes();
	m1 = mallinfo2();
	if (r < 0) {
		fprintf(stderr, "clio bench: core: (d) a cache of %llu bytes: %s\n",
			(unsigned long long)conf.cache_size, strerror(-r));
		return -1;
	}
	clio_cache_stats(c, &st);
	clio_cache_free(c);
	if (vm0 == 0 || vm1 == 0 || st.nbuf == 0) {
		fprintf(stderr, "clio bench: core: (d) cannot read VmData in /proc/self/status\n");
		return -1;
	}
	outside = (double)vm1 - (double)vm0 -
		  ((double)m1.arena - (double)m0.arena) - ((double)m1.hblkhd - (double)m0.hblkhd);
	grown = ((double)m1.uordblks - (double)m0.uordblks) +
		((double)m1.hblkhd - (double)m0.hblkhd) + MAX(outside, 0.0);
	*per_buf = (grown - (double)st.nbuf * conf.bsize) / st.nbuf;
	*bsize = conf.bsize;
	return 0;
}

/* ------------------------------------------------ the experiment */

/* One run of timed case i (the thread counts of (a), then (b), (c)) on
 * one system (0 clio, 1 its peer, 2 (a)'s bound), in the row's unit, or
 * NaN. */
static double
run_timed(struct core_ctx *k, int i, int sys, int run)
{
	static double (*const cached[NSYS])(struct core_ctx *, int, int) = {
		cached_clio, cached_kernel, cached_copy
	};

	if (i < N_CACHED)
		return cached[sys](k, cached_threads[i], run) / 1e6;
	if (i == N_CACHED)
		return sys == 0 ? seq_clio(k) : sys == 1 ? seq_limit(k) : seq_copy(k);
	return sys == 0 ? rand_clio(k, run) : sys == 1 ? rand_limit(k, run) : rand_sync(k, run);
}

/* Fill row's figures, ratio and met: (d) is met at most at its target,
 * the others at least. */
static void
set_figures(struct table *t, enum core_row row, double clio, double peer)
{
	double target = rows[row].target;

	table_num(t, row, "clio", clio);
	table_num(t, row, "peer", peer);
	if (isnan(clio) || isnan(peer) || peer <= 0)
		return;
	table_num(t, row, "ratio", clio / peer);
	table_str(t, row, "met",
		  (row == R_META ? clio / peer <= target : clio / peer >= target) ? "yes" : "NO");
}

/* Append clio/peer in each run of each timed case (v as in exp_core), so
 * that the spread shows beside the medians: "(a) 1 thread 2.01 1.96; ..." */
static void
perrun_ratios(char *buf, size_t size, const double *v, int runs)
{
	int i, run;

	snprintf(buf + strlen(buf), size - strlen(buf), "\n  clio/peer in each run:");
	for (i = 0; i < N_CACHED + 2; i++) {
		snprintf(buf + strlen(buf), size - strlen(buf), "%s %s", i ? ";" : "",
			 case_names[i]);
		for (run = 0; run < MIN(runs, PERRUN_MAX); run++) {
			const double *x = &v[((size_t)i * runs + run) * NSYS];

			snprintf(buf + strlen(buf), size - strlen(buf), " %.2f", x[0] / x[1]);
		}
		if (runs > PERRUN_MAX)
			snprintf(buf + strlen(buf), size - strlen(buf), " ...");
	}
}

static int
make_files(struct core_ctx *k)
{
	int r;

	if (k->bo->file != NULL) {
		snprintf(k->path, sizeof(k->path), "%s", k->bo->file);
	} else {
		const char *dir = getenv("TMPDIR");
		int fd;

		if (dir == NULL || *dir == '\0')
			dir = ".";
		snprintf(k->path, sizeof(k->path), "%s/clio-bench-core.XXXXXX", dir);
		fd = mkstemp(k->path);
		if (fd < 0) {
			fprintf(stderr, "clio bench: core: cannot create a file in %s: %s\n", dir,
				strerror(errno));
			k->path[0] = '\0';
			return -1;
		}
		close(fd);
	}
	snprintf(k->cached_path, sizeof(k->cached_path), "%s.cached", k->path);
	r = bench_make_file(k->path, k->size);
	if (r < 0)
		fprintf(stderr, "clio bench: core: cannot write %s: %s\n", k->path, strerror(-r));
	else if (!stop && (r = bench_make_file(k->cached_path, CACHED_FILE_SIZE)) < 0)
		fprintf(stderr, "clio bench: core: cannot write %s: %s\n", k->cached_path,
			strerror(-r));
	return r < 0 || stop ? -1 : 0;
}

static void
remove_files(struct core_ctx *k)
{
	if (k->cached_path[0])
		unlink(k->cached_path);
	if (k->bo->file == NULL && k->path[0])
		unlink(k->path);
}

static void
progress(const struct core_ctx *k, const char *what, int run, const char *sys)
{
	if (isatty(2) && !k->bo->json)
		fprintf(stderr, "\r  core: %-28s run %d/%d, %-6s", what, run + 1, k->bo->runs, sys);
}

int
exp_core(const struct bench_opts *bo, struct table *t)
{
	struct sigaction sa, old_int, old_term;
	struct core_ctx *k = calloc(1, sizeof(*k));
	double *v = calloc((size_t)bo->runs * NSYS * (N_CACHED + 2), sizeof(double));
	double med[N_CACHED + 2][NSYS], meta = NAN, bound_scaling;
	bool rand_above, seq_above;
	uint32_t bsize = 0;
	int rc = -1, i, run, sys;

	table_init(t, "core",
		   "core: clio's cache against its peers, each case in the same run "
		   "(median of the runs; MB/s = 10^6 B/s)");
	table_col(t, "case", "case", -1);
	table_col(t, "against", "against", -1);
	table_col(t, "unit", "unit", -1);
	table_col(t, "clio", "clio", 2);
	table_col(t, "peer", "peer", 2);
	table_col(t, "ratio", "clio/peer", 3);
	table_col(t, "target", "target", 2);
	table_col(t, "met", "met", -1);
	table_col(t, "pct_of_cache", "% of cache", 2);
	table_col(t, "bound", "bound", 2);
	if (k == NULL || v == NULL) {
		free(k);
		free(v);
		return -1;
	}
	k->bo = bo;
	k->size = bo->size ? bo->size : bo->quick ? 64ull << 20 : 1ull << 30;
	k->size = k->size / BLOCK * BLOCK;
	k->cold_cache = MAX(MIN(COLD_CACHE_MAX, k->size / 4) / BLOCK * BLOCK, 2ull << 20);
	k->cached_s = bo->quick ? 0.1 : 0.5;
	k->rand_s = bo->quick ? 0.2 : 1.0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	atomic_store(&stop, 0);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	/* first, while no other thread allocates */
	if (measure_metadata(&meta, &bsize) < 0 || make_files(k) < 0)
		goto out;
	/* v[(i * runs + run) * NSYS + sys]: timed case i, sys 0 clio, 1 its
	 * peer, 2 the bound of (a) and (c); each run goes through every case
	 * and system in turn, so that a slow spell falls on all alike, and
	 * (a)'s thread counts are measured minutes apart at most */
	for (run = 0; run < bo->runs && !stop; run++) {
		for (i = 0; i < N_CACHED + 2 && !stop; i++) {
			for (sys = 0; sys < NSYS && !stop; sys++) {
				double *x = &v[((size_t)i * bo->runs + run) * NSYS + sys];

				progress(k, case_names[i], run, sys_names[sys]);
				*x = run_timed(k, i, sys, run);
				if (isnan(*x))
					goto out;
			}
		}
	}
	if (stop)
		goto out;
	for (i = 0; i < N_CACHED + 2; i++)
		for (sys = 0; sys < NSYS; sys++) {
			double runs[100];

			for (run = 0; run < bo->runs; run++)
				runs[run] = v[((size_t)i * bo->runs + run) * NSYS + sys];
			med[i][sys] = bench_median(runs, bo->runs);
		}
	for (i = 0; i < R_N; i++) {
		int row = table_row(t);

		table_str(t, row, "case", rows[i].label);
		table_str(t, row, "against", rows[i].against);
		table_str(t, row, "unit", rows[i].unit);
		table_num(t, row, "target", rows[i].target);
	}
	for (i = 0; i < N_CACHED; i++) {
		set_figures(t, R_CACHED1 + i, med[i][0], med[i][1]);
		table_num(t, R_CACHED1 + i, "bound", med[i][2]);
	}
	set_figures(t, R_SCALING, med[1][0], med[0][0]);
	bound_scaling = med[1][2] / med[0][2];
	table_num(t, R_SCALING, "bound", bound_scaling);
	set_figures(t, R_SEQ, med[N_CACHED][0], med[N_CACHED][1]);
	table_num(t, R_SEQ, "bound", med[N_CACHED][2]);
	seq_above = rows[R_SEQ].target * med[N_CACHED][1] > med[N_CACHED][2];
	set_figures(t, R_RAND, med[N_CACHED + 1][0], med[N_CACHED + 1][1]);
	table_num(t, R_RAND, "bound", med[N_CACHED + 1][2]);
	rand_above = rows[R_RAND].target * med[N_CACHED + 1][1] > med[N_CACHED + 1][2];
	set_figures(t, R_META, meta, bsize);
	table_num(t, R_META, "pct_of_cache", 100 * meta / bsize);
	snprintf(t->note, sizeof(t->note),
		 "  %d run%s per case, clio and its peer taking turns; big file %s, %llu MiB.\n"
		 "  (a) %.1f s of seeded random 4 KiB reads per thread count in a 32 MiB file: "
		 "clio_pread, one handle per thread on one device\n"
		 "      (file:...?direct=1) and a cache of %llu MiB, warmed by reading the file; "
		 "clio misses while timed: %llu.  Peer: pread(2),\n"
		 "      one descriptor per thread, the page cache warmed by reading the file.  "
		 "Copy bound: the same threads doing only\n"
		 "      the 4 KiB memcpy out of a resident 32 MiB buffer, M copies/s; its "
		 "2-thread/1-thread rate, %.2f, is the most\n"
		 "      that scaling can reach on this machine's memory%s.\n"
		 "  (b) the whole big file in 4 KiB clio_pread calls, file:...?direct=1&qd=16, default "
		 "tunables (cache %llu MiB).  Peer: 1 MiB O_DIRECT\n"
		 "      reads kept 16 in flight through io_uring into huge pages, as clio's "
		 "buffers, no cache (the limit).  Bound: the same reads, each copied out\n"
		 "      in 4 KiB memcpys, MB/s: what a cache that copies 4 KiB per call reaches "
		 "here%s.  Each run starts\n"
		 "      with posix_fadvise DONTNEED; in (b) and (c) clio's cache is faulted in before "
		 "the clock, as the peer's buffers are.\n"
		 "  (c) %.1f s of seeded random 4 KiB reads of the big file by 32 threads, one "
		 "handle each, file:...?direct=1&qd=32, cache %llu MiB\n"
		 "      (clio's hits: %.1f%% of lookups).  Peer: 4 KiB O_DIRECT reads kept 32 in "
		 "flight through io_uring by one thread, no cache.\n"
		 "      Bound: 32 threads each doing 4 KiB pread(2) on an O_DIRECT descriptor, no "
		 "cache, k reads/s: what a synchronous read\n"
		 "      call reaches from 32 threads here (each blocked until its read completes)%s.\n"
		 "  (d) what clio_cache_new adds beyond the buffers (heap bytes in use, "
		 "mallinfo2, plus mappings outside malloc, VmData), per buffer,\n"
		 "      cache_size %llu MiB, bsize %u, flusher off; met when at most the "
		 "target (1%% of cache_size); the others when at least.",
		 bo->runs, bo->runs > 1 ? "s" : "", bo->file ? bo->file : "(temporary)",
		 (unsigned long long)(k->size >> 20), k->cached_s,
		 (unsigned long long)(CACHED_CACHE_SIZE >> 20),
		 (unsigned long long)k->cached_misses, bound_scaling,
		 bound_scaling < rows[R_SCALING].target ? " (below the 1.8 target)" : "",
		 (unsigned long long)(seq_cache_size() >> 20),
		 seq_above ? "; the target, 0.9x the peer, lies above it" : "",
		 k->rand_s, (unsigned long long)(k->cold_cache >> 20),
		 k->rand_lookups ? 100.0 * (double)k->rand_hits / (double)k->rand_lookups : 0.0,
		 rand_above ? "; the target, 0.8x the peer, lies above it" : "",
		 (unsigned long long)(META_CACHE_SIZE >> 20), bsize);
	perrun_ratios(t->note, sizeof(t->note), v, bo->runs);
	rc = 0;
out:
	if (isatty(2) && !bo->json)
		fprintf(stderr, "\r%60s\r", "");
	if (stop)
		fprintf(stderr, "clio bench: core: interrupted\n");
	remove_files(k);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	free(v);
	free(k->copy_src);
	free(k);
	return stop ? -1 : rc;
}
