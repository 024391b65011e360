/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test-tier.c - the disk tier (lib/tier.c) under real file devices:
 * crc32c against its known value and its two paths against each other;
 * a restarted cache reads nothing from the device; a changed file is
 * seen; a file's short last block, written, is kept; a flipped byte in DIR is detected and refetched; culling keeps
 * the data file within disk_cache_size, and an open waits out another
 * process's cull of its object; kill -9 at random moments of
 * heavy insertion (a child process, this program run again), after which
 * the cache serves only the file's bytes; writeback: data made durable by
 * fsync reaches the device after kill -9 and a restart, and goes to
 * lost+found, the file untouched, when the file changed meanwhile, and
 * with clio_disk_cache_recover before anything opens the file;
 * a full insertion queue drops and counts, never waits or corrupts;
 * threads reading and writing through one tier; damage from outside:
 * another object's index and data copied over, a forged meta block
 * size, a zeroed index page, a cut data file, a change that keeps size
 * and mtime; writes, zeroes, shrink and regrowth straight to the device;
 * a second process writing the file while the first holds the object;
 * threads writing and reading through a tiny memory cache, truncations
 * between rounds, against a model; writeback killed at random moments
 * of writes and fsyncs, and of appends of odd lengths: every
 * acknowledged fsync reaches the device;
 * a restart with a smaller disk_cache_size than the crashed session's
 * still writes back every dirty block; dirty blocks that lost+found
 * cannot take stay in DIR; DIR removed while an object is open; the
 * same blocks rewritten and fsynced while killed at random moments; a
 * read-only open after a writeback crash reads the dirty blocks; an
 * fsync after a write that went through keeps its dirty blocks from
 * lost+found after kill -9; writeback: a short last block stays in DIR
 * at fsync, and reads as itself and zeros once the file grew;
 * writeback: a read not aligned to the tier's blocks (a direct
 * handle's) sees the dirty blocks, not the device's;
 * clio_revalidate racing a reader: the new version is read after it,
 * not the old one from DIR; writeback: a write that went through to
 * the device while another thread's fsync flushed it is flushed by the
 * fsync after it; writeback: a version recorded while such a write was
 * in flight does not send fsynced dirty blocks to lost+found after
 * kill -9.
 * TIER_SEED=N repeats a run, TIER_ITERS=N sets the kill -9 rounds (100;
 * 20 with CLIO_FLAVOUR=tsan).
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "testutil.h"
#include "tier.h"

#define FSIZE (2 * TU_MiB)
#define BS 16384

static char dir[256], dcdir[300], path[300];
static unsigned seed;

static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int
setup(void **state)
{
	const char *t = getenv("TMPDIR");

	(void)state;
	snprintf(dir, sizeof(dir), "%s/clio-tier-XXXXXX", t ? t : "/tmp");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(dcdir, sizeof(dcdir), "%s/dc", dir);
	snprintf(path, sizeof(path), "%s/file", dir);
	if (mkdir(dcdir, 0755) < 0)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* The file: FSIZE bytes of pattern s. */
static void
make_file(uint64_t s)
{
	char *b = malloc(FSIZE);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0 && b != NULL);
	tu_fill(b, FSIZE, 0, s);
	assert_int_equal(pwrite(fd, b, FSIZE, 0), FSIZE);
	close(fd);
	free(b);
}

static void
file_write(uint64_t off, size_t len, uint64_t s)
{
	char *b = malloc(len);
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0 && b != NULL);
	tu_fill(b, len, off, s);
	assert_int_equal(pwrite(fd, b, len, (off_t)off), (ssize_t)len);
	close(fd);
	free(b);
}

static char *
file_read_n(size_t n)
{
	char *b = malloc(n);
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0 && b != NULL);
	assert_int_equal(pread(fd, b, n, 0), (ssize_t)n);
	close(fd);
	return b;
}

static char *
file_read(void)
{
	char *b = malloc(FSIZE);
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0 && b != NULL);
	assert_int_equal(pread(fd, b, FSIZE, 0), FSIZE);
	close(fd);
	return b;
}

struct stack {
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
};

static int
stack_open(struct stack *s, const char *mode, const char *dcsize, uint64_t memsize)
{
	struct clio_conf conf;
	char err[256], ms[32];
	int r;

	clio_conf_init(&conf);
	snprintf(ms, sizeof(ms), "%llu", (unsigned long long)memsize);
	if (clio_conf_set(&conf, "disk_cache", dcdir, err, sizeof(err)) < 0 ||
	    clio_conf_set(&conf, "disk_cache_mode", mode, err, sizeof(err)) < 0 ||
	    clio_conf_set(&conf, "disk_cache_size", dcsize, err, sizeof(err)) < 0 ||
	    clio_conf_set(&conf, "cache_size", ms, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return -EINVAL;
	}
	if ((r = clio_cache_new(&conf, &s->c)) < 0)
		return r;
	if ((r = clio_dev_open(path, 0, &s->d)) < 0)
		return r;
	return clio_open(s->c, s->d, CLIO_RDWR, &s->f);
}

static int
stack_close(struct stack *s)
{
	int r = clio_close(s->f), e, e2;

	e = clio_cache_free(s->c);
	e2 = clio_dev_close(s->d);
	if (r || e || e2)
		fprintf(stderr, "close %d, cache_free %d, dev_close %d\n", r, e, e2);
	return r ? r : e ? e : e2;
}

static uint64_t
param(clio_dev *d, const char *key)
{
	char buf[4096], pat[80];
	const char *p;

	assert_true(clio_dev_params(d, buf, sizeof(buf)) > 0);
	snprintf(pat, sizeof(pat), "\ndisk_cache.%s=", key);
	p = strstr(buf, pat);
	assert_non_null(p);
	return strtoull(p + strlen(pat), NULL, 10);
}

static uint64_t
dev_reads(clio_dev *d)
{
	struct clio_dev_stats st;

	clio_dev_stats(d, &st);
	return st.back.read_bytes;
}

/* Read the whole object through the cache and compare with truth. */
static void
read_all_check(struct stack *s, const char *truth)
{
	char *b = malloc(FSIZE);

	assert_non_null(b);
	assert_int_equal(clio_pread(s->f, b, FSIZE, 0), FSIZE);
	for (size_t i = 0; i < FSIZE; i++)
		if (b[i] != truth[i]) {
			fprintf(stderr, "byte %zu differs (seed %u)\n", i, seed);
			fail();
		}
	free(b);
}

/* ------------------------------------------------------------ tests */

static void
test_crc32c(void **state)
{
	static unsigned char b[40000];
	unsigned s = seed;

	(void)state;
	assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(crc32c_table(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(crc32c(0, "", 0), 0);
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)rand_r(&s);
	/* short lengths, and long ones through the three-stream path */
	for (size_t n = 0; n < sizeof(b); n += n < 2000 ? 7 : 997) {
		size_t k = n / 3;
		uint32_t whole = crc32c(0, b, n);
		assert_int_equal(whole, crc32c_table(0, b, n));
		assert_int_equal(whole, crc32c(crc32c(0, b, k), b + k, n - k));
		assert_int_equal(crc32c(0, b + 1, n / 2), crc32c_table(0, b + 1, n / 2));
	}
}

static void
test_reuse_stale(void **state)
{
	struct stack s;
	char *truth;

	(void)state;
	make_file(1);
	truth = file_read();
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&s, truth);
	assert_int_equal(dev_reads(s.d), FSIZE);
	tier_fill_wait(s.d); /* insertions are asynchronous */
	assert_int_equal(param(s.d, "insertions"), FSIZE / BS);
	assert_int_equal(param(s.d, "insert_drops"), 0);
	assert_int_equal(stack_close(&s), 0);

	/* a restart reads nothing from the device */
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&s, truth);
	assert_int_equal(dev_reads(s.d), 0);
	assert_int_equal(param(s.d, "hits"), FSIZE / BS);
	assert_int_equal(param(s.d, "bytes_from_cache"), FSIZE);
	assert_int_equal(stack_close(&s), 0);

	/* another writer changes 20 KiB: no stale byte */
	file_write(100000, 20000, 2);
	free(truth);
	truth = file_read();
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	assert_int_equal(param(s.d, "stale_drops"), FSIZE / BS);
	read_all_check(&s, truth);
	assert_int_equal(dev_reads(s.d), FSIZE);
	assert_int_equal(stack_close(&s), 0);

	/* its own writes (writethrough) are kept, and the version recorded */
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	char *w = malloc(3 * BS);
	tu_fill(w, 3 * BS, 5 * BS, 3);
	assert_int_equal(clio_pwrite(s.f, w, 3 * BS, 5 * BS), 3 * BS);
	assert_int_equal(clio_fsync(s.f), 0);
	assert_int_equal(stack_close(&s), 0);
	free(truth);
	truth = file_read();
	assert_memory_equal(truth + 5 * BS, w, 3 * BS);
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&s, truth);
	assert_int_equal(dev_reads(s.d), 0);
	assert_int_equal(stack_close(&s), 0);
	free(w);
	free(truth);
}

/* writethrough: a file written to its end with a short last block (a
 * copy's tail) is read back from DIR whole after a restart; a later
 * write past it (the block now longer, its rest zeros) is not served
 * from the short entry. */
static void
test_tail_write(void **state)
{
	const size_t len = 3 * BS + 1000;
	struct stack s;
	char *w = malloc(len), *b = malloc(12 * BS), *truth;
	int fd;

	(void)state;
	assert_true(w != NULL && b != NULL);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
	tu_fill(w, len, 0, 7);
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	assert_int_equal(clio_pwrite(s.f, w, len, 0), (ssize_t)len);
	assert_int_equal(clio_fsync(s.f), 0);
	tier_fill_wait(s.d);
	assert_int_equal(param(s.d, "insertions"), 4);
	assert_int_equal(stack_close(&s), 0);

	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	assert_int_equal(clio_pread(s.f, b, len + 10, 0), (ssize_t)len);
	assert_memory_equal(b, w, len);
	assert_int_equal(dev_reads(s.d), 0);
	assert_int_equal(param(s.d, "hits"), 4);
	/* past the end: the short block grows, zeros after its 1000 bytes */
	memset(b, 0x5a, BS);
	assert_int_equal(clio_pwrite(s.f, b, BS, 10 * BS), BS);
	assert_int_equal(clio_fsync(s.f), 0);
	assert_int_equal(stack_close(&s), 0);

	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	truth = malloc(11 * BS);
	assert_non_null(truth);
	assert_int_equal(pread(fd, truth, 11 * BS, 0), 11 * BS);
	close(fd);
	assert_memory_equal(truth, w, len);
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	assert_int_equal(clio_pread(s.f, b, 12 * BS, 0), 11 * BS);
	assert_memory_equal(b, truth, 11 * BS);
	assert_int_equal(stack_close(&s), 0);
	free(truth);
	free(w);
	free(b);
}

/* The data file of the only object in DIR. */
static void
obj_file(char *out, size_t len, const char *name)
{
	DIR *dp = opendir(dcdir);
	struct dirent *e;

	assert_non_null(dp);
	out[0] = '\0';
	while ((e = readdir(dp)) != NULL)
		if (strlen(e->d_name) == 16)
			snprintf(out, len, "%s/%s/%s", dcdir, e->d_name, name);
	closedir(dp);
	assert_true(out[0] != '\0');
}

static void
test_flip(void **state)
{
	struct stack s;
	char *truth, data[400];
	unsigned char c;
	int fd;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(4);
	truth = file_read();
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&s, truth);
	assert_int_equal(stack_close(&s), 0);

	/* one byte of one block in DIR flips */
	obj_file(data, sizeof(data), "data");
	fd = open(data, O_RDWR);
	assert_true(fd >= 0);
	off_t at = 7 * BS + 1234;
	assert_int_equal(pread(fd, &c, 1, at), 1);
	c ^= 0x40;
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
	close(fd);

	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&s, truth);
	assert_int_equal(param(s.d, "checksum_failures"), 1);
	assert_int_equal(dev_reads(s.d), BS); /* that block, refetched */
	assert_int_equal(stack_close(&s), 0);
	/* and put back */
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&s, truth);
	assert_int_equal(dev_reads(s.d), 0);
	assert_int_equal(param(s.d, "checksum_failures"), 0);
	assert_int_equal(stack_close(&s), 0);
	free(truth);
}

static void
test_cull(void **state)
{
	struct stack s;
	char *truth, data[400];
	struct stat st;

	(void)state;
	make_file(5);
	truth = file_read();
	for (int round = 0; round < 2; round++) {
		assert_int_equal(stack_open(&s, "writethrough", "256K", 256 * TU_KiB), 0);
		read_all_check(&s, truth);
		tier_fill_wait(s.d);
		assert_true(param(s.d, "entries") <= 256 * TU_KiB / BS);
		assert_true(param(s.d, "evictions") > 0);
		assert_int_equal(param(s.d, "size_max"), 256 * TU_KiB);
		assert_int_equal(stack_close(&s), 0);
		obj_file(data, sizeof(data), "data");
		assert_int_equal(stat(data, &st), 0);
		assert_true(st.st_size <= (off_t)(256 * TU_KiB));
		assert_true(st.st_blocks * 512 <= (blkcnt_t)(256 * TU_KiB) + 4096);
	}
	free(truth);
}

static void *
cull_end(void *arg)
{
	usleep(150000);
	close(*(int *)arg);
	return NULL;
}

/* An open that meets another process's cull of its object (the object's
 * lock taken for a moment, marked as a cull) waits it out and runs with
 * the tier; one that meets a user of the object does not wait. */
static void
test_cull_open_race(void **state)
{
	struct stack s;
	char lockp[400], *truth;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	pthread_t th;
	int lk;

	(void)state;
	make_file(6);
	truth = file_read();
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&s, truth);
	tier_fill_wait(s.d);
	assert_int_equal(stack_close(&s), 0);
	obj_file(lockp, sizeof(lockp), "lock");
	lk = open(lockp, O_RDWR);
	assert_true(lk >= 0);
	assert_int_equal(fcntl(lk, F_OFD_SETLK, &fl), 0);
	assert_int_equal(flock(lk, LOCK_EX | LOCK_NB), 0);
	assert_int_equal(pthread_create(&th, NULL, cull_end, &lk), 0);
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	pthread_join(th, NULL);
	read_all_check(&s, truth);
	assert_int_equal(dev_reads(s.d), 0);
	assert_int_equal(param(s.d, "hits"), FSIZE / BS);
	assert_int_equal(stack_close(&s), 0);

	/* a user's lock (no mark): the open runs without the tier at once */
	char buf[4096];
	struct timespec a, b;
	lk = open(lockp, O_RDWR);
	assert_true(lk >= 0);
	assert_int_equal(flock(lk, LOCK_EX | LOCK_NB), 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(b.tv_sec - a.tv_sec < 2);
	assert_true(clio_dev_params(s.d, buf, sizeof(buf)) > 0);
	assert_null(strstr(buf, "disk_cache.hits="));
	read_all_check(&s, truth);
	assert_int_equal(stack_close(&s), 0);
	close(lk);
	free(truth);
}

/* A full insertion queue: the filler paused, a queue of 4 blocks; a
 * read of the whole object completes (it never waits for the queue),
 * right; the blocks that did not fit are counted as drops, the rest
 * inserted once the filler goes on; a restart reads from the device
 * exactly the dropped blocks.  Then with a queue of 2 blocks and the
 * filler going: every block is inserted or dropped, and what DIR
 * serves is right. */
static void
test_queue_full(void **state)
{
	struct stack s;
	char *truth;
	uint64_t drops, ins;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(6);
	truth = file_read();
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	tier_fill_ctl(s.d, 4 * BS, 1);
	read_all_check(&s, truth);
	assert_int_equal(dev_reads(s.d), FSIZE);
	drops = param(s.d, "insert_drops");
	assert_true(drops > 0);
	assert_true(param(s.d, "insert_queued") <= 4 * BS);
	assert_int_equal(param(s.d, "insertions"), 0);
	tier_fill_ctl(s.d, 0, 0);
	tier_fill_wait(s.d);
	ins = param(s.d, "insertions");
	assert_int_equal(ins + drops, FSIZE / BS);
	assert_int_equal(param(s.d, "insert_queued"), 0);
	assert_int_equal(stack_close(&s), 0);

	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&s, truth);
	assert_int_equal(dev_reads(s.d), drops * BS);
	assert_int_equal(param(s.d, "hits"), ins);
	assert_int_equal(stack_close(&s), 0);

	/* threads, a queue of 2 blocks, the filler going */
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	tier_fill_ctl(s.d, 2 * BS, 0);
	read_all_check(&s, truth);
	tier_fill_wait(s.d);
	drops = param(s.d, "insert_drops");
	ins = param(s.d, "insertions");
	assert_int_equal(ins + drops, FSIZE / BS);
	assert_int_equal(stack_close(&s), 0);
	assert_int_equal(stack_open(&s, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&s, truth);
	assert_int_equal(dev_reads(s.d), drops * BS);
	assert_int_equal(stack_close(&s), 0);
	free(truth);
}

/* ------------------------------------------------------------ kill -9 */

static char self[4096];

/* The child of a kill -9 round: read (and, with writes, write) random
 * ranges through a small memory cache, so that the tier inserts, culls
 * and updates all the time, until killed. */
static int
child_insert(unsigned s, int writes)
{
	struct stack st;
	char *b = malloc(4 * BS);

	if (b == NULL || stack_open(&st, "writethrough", "512K", 128 * TU_KiB) < 0)
		return 2;
	for (unsigned n = 0;; n++) {
		uint64_t off = (uint64_t)(rand_r(&s) % (FSIZE / BS)) * BS;
		size_t len = (size_t)(1 + rand_r(&s) % 4) * BS;
		if (off + len > FSIZE)
			len = FSIZE - off;
		if (writes && n % 8 == 7) {
			tu_fill(b, len, off, 100 + n);
			if (clio_pwrite(st.f, b, len, off) != (ssize_t)len)
				return 3;
			if (n % 32 == 31)
				(void)clio_fsync(st.f);
		} else if (clio_pread(st.f, b, len, off) != (ssize_t)len) {
			return 4;
		}
	}
}

static pid_t
spawn(const char *what, unsigned s, int arg)
{
	char a1[32], a2[32];
	pid_t p;

	snprintf(a1, sizeof(a1), "%u", s);
	snprintf(a2, sizeof(a2), "%d", arg);
	p = fork();
	if (p == 0) {
		execl(self, self, what, dir, a1, a2, (char *)NULL);
		_exit(127);
	}
	return p;
}

static void
test_kill9(void **state)
{
	const char *e = getenv("TIER_ITERS"), *fl = getenv("CLIO_FLAVOUR");
	/* 100 rounds; 20 under TSan, whose children start slowly */
	int iters = e ? atoi(e) : fl && strcmp(fl, "tsan") == 0 ? 20 : 100;
	unsigned s = seed;
	uint64_t fails = 0, hits = 0;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(6);
	for (int i = 0; i < iters; i++) {
		int writes = i % 4 == 3, status;
		/* let the child start (~10 ms), then kill it at a random point */
		unsigned delay = 5000 + (unsigned)(rand_r(&s) % 40000);
		pid_t p = spawn("child-insert", rand_r(&s), writes);
		assert_true(p > 0);
		usleep(delay);
		kill(p, SIGKILL);
		assert_int_equal(waitpid(p, &status, 0), p);
		if (!WIFSIGNALED(status)) {
			fprintf(stderr, "round %d: the child exited with %d (seed %u)\n",
				i, WEXITSTATUS(status), seed);
			fail();
		}
		/* the restarted cache serves only the file's bytes */
		char *truth = file_read();
		struct stack st;
		assert_int_equal(stack_open(&st, "writethrough", "512K", 128 * TU_KiB), 0);
		read_all_check(&st, truth);
		fails += param(st.d, "checksum_failures");
		hits += param(st.d, "hits");
		assert_int_equal(stack_close(&st), 0);
		free(truth);
	}
	printf("kill -9: %d rounds (seed %u), %llu blocks served from DIR after "
	       "restarts, %llu torn entries detected\n", iters, seed,
	       (unsigned long long)hits, (unsigned long long)fails);
	assert_true(hits > 0);
}

/* ------------------------------------------------------------ writeback */

#define WB_A 0
#define WB_B (512 * TU_KiB)
#define WB_LEN (64 * TU_KiB)

/* Write two ranges in writeback mode, fsync, and die at once. */
static int
child_wb(unsigned s)
{
	struct stack st;
	char *b = malloc(WB_LEN);

	if (b == NULL || stack_open(&st, "writeback", "8M", 256 * TU_KiB) < 0)
		return 2;
	tu_fill(b, WB_LEN, WB_A, s);
	if (clio_pwrite(st.f, b, WB_LEN, WB_A) != WB_LEN)
		return 3;
	tu_fill(b, WB_LEN, WB_B, s);
	if (clio_pwrite(st.f, b, WB_LEN, WB_B) != WB_LEN)
		return 3;
	if (clio_fsync(st.f) != 0)
		return 4;
	raise(SIGKILL);
	return 5;
}

/* child_wb, then the file's times set (as clio mount does after a
 * program's writes) and recorded as its own with clio_validator_set,
 * then kill -9 */
static int
child_wb_times(unsigned s)
{
	struct stack st;
	char *b = malloc(WB_LEN);
	struct timespec tv[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	struct clio_validator v;
	struct stat sb;

	if (b == NULL || stack_open(&st, "writeback", "8M", 256 * TU_KiB) < 0)
		return 2;
	tu_fill(b, WB_LEN, WB_A, s);
	if (clio_pwrite(st.f, b, WB_LEN, WB_A) != WB_LEN)
		return 3;
	if (clio_fsync(st.f) != 0)
		return 4;
	if (utimensat(AT_FDCWD, path, tv, 0) < 0 || stat(path, &sb) < 0)
		return 5;
	memset(&v, 0, sizeof(v));
	v.size = (uint64_t)sb.st_size;
	v.mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	v.ctime_ns = (int64_t)sb.st_ctim.tv_sec * 1000000000 + sb.st_ctim.tv_nsec;
	v.id = (uint64_t)sb.st_ino;
	if (clio_validator_set(st.f, &v) != 0)
		return 6;
	raise(SIGKILL);
	return 7;
}

static void
run_wb_child(unsigned s)
{
	int status;
	pid_t p = spawn("child-wb", s, 0);

	assert_true(p > 0);
	assert_int_equal(waitpid(p, &status, 0), p);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void
test_writeback_recover(void **state)
{
	struct stack st;
	char *truth;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(7);
	run_wb_child(70);
	/* the background writer may have written some back before the
	 * kill (it starts after 200 ms without new dirty data) */
	uint64_t there = 0, rec;
	truth = file_read();
	for (uint64_t o = 0; o < WB_LEN; o += BS)
		there += (tu_check(truth + WB_A + o, BS, WB_A + o, 70) < 0) +
			 (tu_check(truth + WB_B + o, BS, WB_B + o, 70) < 0);
	free(truth);
	/* the restart writes the dirty blocks back before serving */
	assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
	rec = param(st.d, "recovered");
	printf("writeback: after kill -9, %llu of %llu dirty blocks were on the "
	       "device; the restart wrote back %llu\n", (unsigned long long)there,
	       (unsigned long long)(2 * WB_LEN / BS), (unsigned long long)rec);
	assert_true(rec >= 2 * WB_LEN / BS - there && rec <= 2 * WB_LEN / BS);
	assert_int_equal(param(st.d, "dirty"), 0);
	assert_int_equal(stack_close(&st), 0);
	truth = file_read();
	assert_int_equal(tu_check(truth + WB_A, WB_LEN, WB_A, 70), -1);
	assert_int_equal(tu_check(truth + WB_B, WB_LEN, WB_B, 70), -1);
	assert_int_equal(tu_check(truth + WB_LEN, WB_B - WB_LEN, WB_LEN, 7), -1);
	free(truth);
}

/* A dirty block a killed writer left, its data damaged in DIR: the only
 * copy is lost, and that is said and failed to the next fsync and close
 * (it was dropped in silence: the device's old bytes read back, close 0);
 * the blocks that check are written back. */
static void
test_writeback_damaged(void **state)
{
	struct stack st;
	char data[400], c;
	int fd;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(7);
	run_wb_child(71);
	obj_file(data, sizeof(data), "data");
	fd = open(data, O_RDWR);
	assert_true(fd >= 0);
	for (off_t at = 100; at < 4 * BS; at += BS) { /* the first 4 slots */
		assert_int_equal(pread(fd, &c, 1, at), 1);
		c ^= 0x40;
		assert_int_equal(pwrite(fd, &c, 1, at), 1);
	}
	close(fd);
	assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
	uint64_t bad = param(st.d, "checksum_failures"), rec = param(st.d, "recovered");
	printf("writeback: %llu damaged dirty blocks, %llu written back\n",
	       (unsigned long long)bad, (unsigned long long)rec);
	/* the background writer may have written some back before the kill */
	assert_true(bad >= 1 && bad <= 4);
	assert_int_equal(clio_fsync(st.f), -EIO);
	assert_int_equal(clio_fsync(st.f), 0); /* said once, as a failed write-back */
	assert_int_equal(stack_close(&st), 0);
}

/* clio_disk_cache_recover: the dirty blocks a killed writer left are
 * written back to the file, which nobody opens, for a prefix of its
 * path; none for another prefix; nothing is left for a second call. */
static void
test_recover_dir(void **state)
{
	struct clio_conf conf;
	char err[256], prefix[320];
	char *truth;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(8);
	run_wb_child(80);
	clio_conf_init(&conf);
	assert_int_equal(clio_disk_cache_recover(&conf, "/", NULL), 0); /* none */
	assert_int_equal(clio_conf_set(&conf, "disk_cache", dcdir, err, sizeof(err)), 0);
	assert_int_equal(clio_disk_cache_recover(&conf, "/nonexistent/", NULL), 0);
	assert_int_equal(clio_disk_cache_recover(NULL, "/", NULL), -EINVAL);
	char *rp = realpath(dir, NULL); /* identities hold resolved paths */
	assert_non_null(rp);
	snprintf(prefix, sizeof(prefix), "%s/", rp);
	free(rp);
	assert_int_equal(clio_disk_cache_recover(&conf, prefix, NULL), 1);
	truth = file_read();
	assert_int_equal(tu_check(truth + WB_A, WB_LEN, WB_A, 80), -1);
	assert_int_equal(tu_check(truth + WB_B, WB_LEN, WB_B, 80), -1);
	assert_int_equal(tu_check(truth + WB_LEN, WB_B - WB_LEN, WB_LEN, 8), -1);
	free(truth);
	assert_int_equal(clio_disk_cache_recover(&conf, prefix, NULL), 0);
}

/* A change of the file's times that the writer records as its own
 * (clio_validator_set) between its fsync and a crash: the restart
 * writes the dirty blocks back, not to lost+found. */
static void
test_writeback_times(void **state)
{
	struct stack st;
	char *truth;
	int status;
	pid_t p;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(11);
	p = spawn("child-wbtimes", 110, 0);
	assert_true(p > 0);
	assert_int_equal(waitpid(p, &status, 0), p);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
	assert_int_equal(param(st.d, "lost_found"), 0);
	assert_int_equal(param(st.d, "dirty"), 0);
	assert_int_equal(stack_close(&st), 0);
	truth = file_read();
	assert_int_equal(tu_check(truth + WB_A, WB_LEN, WB_A, 110), -1);
	free(truth);
}

static void
test_writeback_conflict(void **state)
{
	struct stack st;
	char *before, *after, lf[400];
	DIR *dp;
	struct dirent *e;
	int nfiles = 0;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(8);
	run_wb_child(80);
	/* another writer changes the file between the crash and the restart */
	file_write(FSIZE - 4096, 4096, 9);
	before = file_read();
	assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
	assert_int_equal(param(st.d, "recovered"), 0);
	assert_int_equal(param(st.d, "lost_found"), 2 * WB_LEN / BS);
	read_all_check(&st, before); /* the file's bytes, not the dirty ones */
	assert_int_equal(stack_close(&st), 0);
	after = file_read();
	assert_memory_equal(before, after, FSIZE); /* untouched */
	/* the dirty blocks are in lost+found, named by their offset */
	snprintf(lf, sizeof(lf), "%s/lost+found", dcdir);
	dp = opendir(lf);
	assert_non_null(dp);
	while ((e = readdir(dp)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char sub[700], blk[800];
		snprintf(sub, sizeof(sub), "%s/%s", lf, e->d_name);
		for (uint64_t off = WB_A; off < WB_A + WB_LEN; off += BS) {
			snprintf(blk, sizeof(blk), "%s/%llu", sub, (unsigned long long)off);
			int fd = open(blk, O_RDONLY);
			char b[BS];
			assert_true(fd >= 0);
			assert_int_equal(read(fd, b, BS), BS);
			assert_int_equal(tu_check(b, BS, off, 80), -1);
			close(fd);
			nfiles++;
		}
	}
	closedir(dp);
	assert_int_equal(nfiles, WB_LEN / BS);
	free(before);
	free(after);

	/* again, in the same second as far as lost+found can tell (the
	 * names of the next seconds are taken, holding the first blocks):
	 * the second batch goes beside the first, overwriting none */
	char first[300] = "", p[1200], obj[20];
	dp = opendir(lf);
	while ((e = readdir(dp)) != NULL)
		if (e->d_name[0] != '.')
			snprintf(first, sizeof(first), "%s", e->d_name);
	closedir(dp);
	assert_int_equal(sscanf(first, "%16[0-9a-f]-", obj), 1);
	long long now = (long long)time(NULL);
	for (int k = 0; k < 4; k++) {
		char to[1200];
		snprintf(to, sizeof(to), "%s/%s-%lld", lf, obj, now + k);
		if (mkdir(to, 0700) < 0)
			continue; /* the first one's */
		for (uint64_t off = WB_A; off < WB_A + WB_LEN; off += BS) {
			snprintf(p, sizeof(p), "%s/%s/%llu", lf, first, (unsigned long long)off);
			snprintf(to, sizeof(to), "%s/%s-%lld/%llu", lf, obj, now + k,
				 (unsigned long long)off);
			assert_int_equal(link(p, to), 0);
		}
	}
	run_wb_child(81);
	file_write(FSIZE - 4096, 4096, 10);
	assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
	assert_int_equal(param(st.d, "lost_found"), 2 * WB_LEN / BS);
	assert_int_equal(stack_close(&st), 0);
	int n80 = 0, n81 = 0;
	dp = opendir(lf);
	while ((e = readdir(dp)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		for (uint64_t off = WB_A; off < WB_A + WB_LEN; off += BS) {
			char b[BS];
			snprintf(p, sizeof(p), "%s/%s/%llu", lf, e->d_name, (unsigned long long)off);
			int fd = open(p, O_RDONLY);
			assert_true(fd >= 0);
			assert_int_equal(read(fd, b, BS), BS);
			close(fd);
			n80 += tu_check(b, BS, off, 80) == -1;
			n81 += tu_check(b, BS, off, 81) == -1;
		}
	}
	closedir(dp);
	assert_int_equal(n81, WB_LEN / BS);
	assert_true(n80 >= 4 * (int)(WB_LEN / BS)); /* all the first batch's copies */
}

static void
test_writeback_close(void **state)
{
	struct stack st;
	char *b = malloc(WB_LEN), *truth;

	(void)state;
	make_file(10);
	assert_int_equal(stack_open(&st, "writeback", "8M", 256 * TU_KiB), 0);
	tu_fill(b, WB_LEN, BS, 11);
	assert_int_equal(clio_pwrite(st.f, b, WB_LEN, BS), WB_LEN);
	assert_int_equal(clio_fsync(st.f), 0);
	/* the device reads of the object see the data (from DIR) */
	memset(b, 0, WB_LEN);
	assert_int_equal(clio_dev_pread(st.d, b, WB_LEN, BS), WB_LEN);
	assert_int_equal(tu_check(b, WB_LEN, BS, 11), -1);
	/* an unaligned write through a dirty block keeps both */
	char x[100];
	tu_fill(x, sizeof(x), BS + 50, 12);
	assert_int_equal(clio_dev_pwrite(st.d, x, sizeof(x), BS + 50), sizeof(x));
	assert_int_equal(stack_close(&st), 0); /* writes everything back */
	truth = file_read();
	assert_int_equal(tu_check(truth + BS, 50, BS, 11), -1);
	assert_int_equal(tu_check(truth + BS + 50, 100, BS + 50, 12), -1);
	assert_int_equal(tu_check(truth + BS + 150, WB_LEN - 150, BS + 150, 11), -1);
	assert_int_equal(tu_check(truth + BS + WB_LEN, 4096, BS + WB_LEN, 10), -1);
	free(truth);
	free(b);
}

/* A truncation drops what lies past the new end, keeps the dirty part
 * below it, and a later extension reads zeros there, not old bytes. */
static void
test_truncate(void **state)
{
	static const char *const modes[] = { "writethrough", "writeback" };

	(void)state;
	for (int m = 0; m < 2; m++) {
		struct stack st;
		char *b = malloc(4 * BS), *z = calloc(1, 4 * BS), *truth;
		uint64_t cut = 10 * BS + 100;

		make_file(20);
		assert_int_equal(stack_open(&st, modes[m], "8M", 256 * TU_KiB), 0);
		assert_int_equal(clio_pread(st.f, b, 4 * BS, 9 * BS), 4 * BS); /* cached */
		tu_fill(b, 2 * BS, 9 * BS, 21);
		assert_int_equal(clio_pwrite(st.f, b, 2 * BS, 9 * BS), 2 * BS);
		assert_int_equal(clio_fsync(st.f), 0);
		assert_int_equal(clio_ftruncate(st.f, cut), 0);
		assert_int_equal(clio_ftruncate(st.f, 16 * BS), 0);
		assert_int_equal(clio_fsync(st.f), 0);
		assert_int_equal(stack_close(&st), 0);
		/* a restart: what DIR serves is the file's */
		assert_int_equal(stack_open(&st, modes[m], "8M", 256 * TU_KiB), 0);
		assert_int_equal(clio_pread(st.f, b, 4 * BS, 9 * BS), 4 * BS);
		assert_int_equal(tu_check(b, BS + 100, 9 * BS, 21), -1);
		assert_memory_equal(b + BS + 100, z, 3 * BS - 100);
		assert_int_equal(stack_close(&st), 0);
		truth = malloc(16 * BS);
		int fd = open(path, O_RDONLY);
		assert_int_equal(pread(fd, truth, 16 * BS, 0), 16 * BS);
		close(fd);
		assert_int_equal(tu_check(truth + 9 * BS, BS + 100, 9 * BS, 21), -1);
		assert_memory_equal(truth + cut, z, 16 * BS - cut > 4 * BS ? 4 * BS : 16 * BS - cut);
		free(truth);
		free(b);
		free(z);
	}
}

/* writeback: appends of odd lengths to an empty file, each fsynced
 * (every one ends in a short dirty block, rewritten longer by the next)
 * and acknowledged, killed with -9 at a random moment: after a restart
 * the device holds every acknowledged append, and past them only the
 * later appends' bytes or zeros. */
#define KA_ROUNDS 24
static size_t
ka_end(int r)
{
	size_t end = 0;

	for (int k = 0; k <= r; k++)
		end += 5000 + (size_t)k * 777;
	return end;
}

static int
child_wb_appends(void)
{
	size_t all = ka_end(KA_ROUNDS - 1);
	struct stack st;
	char *b = malloc(all), ack[300];
	int fd;

	snprintf(ack, sizeof(ack), "%s/acked", dir);
	fd = open(ack, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (b == NULL || fd < 0 || stack_open(&st, "writeback", "64M", 256 * TU_KiB) < 0)
		return 2;
	tu_fill(b, all, 0, 240);
	for (int r = 0; r < KA_ROUNDS; r++) {
		size_t from = r ? ka_end(r - 1) : 0, len = ka_end(r) - from;
		if (clio_pwrite(st.f, b + from, len, from) != (ssize_t)len ||
		    clio_fsync(st.f) != 0)
			return 3;
		char line[16];
		int n = snprintf(line, sizeof(line), "%d\n", r);
		if (write(fd, line, (size_t)n) != n)
			return 4;
	}
	for (;;)
		pause();
}

static void
test_writeback_kill_appends(void **state)
{
	size_t all = ka_end(KA_ROUNDS - 1);
	unsigned s = seed + 1;
	char ack[300], *want = malloc(all);

	(void)state;
	assert_non_null(want);
	tu_fill(want, all, 0, 240);
	snprintf(ack, sizeof(ack), "%s/acked", dir);
	const char *fl = getenv("CLIO_FLAVOUR");
	unsigned slow = fl && strcmp(fl, "tsan") == 0 ? 3 : 1;
	printf("writeback appends, kill -9 (seed %u): rounds acknowledged:", seed);
	for (int it = 0; it < 6; it++) {
		struct stack st;
		struct stat sb;
		int status, last = -1, v;

		nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		mkdir(dcdir, 0755);
		unlink(ack);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		close(fd);
		pid_t p = spawn("child-wba", 0, 0);
		assert_true(p > 0);
		usleep((useconds_t)(8000 + rand_r(&s) % 30000) * slow);
		kill(p, SIGKILL);
		assert_int_equal(waitpid(p, &status, 0), p);
		assert_true(WIFSIGNALED(status));
		FILE *af = fopen(ack, "r");
		while (af != NULL && fscanf(af, "%d", &v) == 1)
			last = v;
		if (af != NULL)
			fclose(af);
		printf(" %d", last + 1);
		assert_int_equal(stack_open(&st, "writeback", "64M", 256 * TU_KiB), 0);
		assert_int_equal(stack_close(&st), 0);
		assert_int_equal(stat(path, &sb), 0);
		size_t acked = last >= 0 ? ka_end(last) : 0;
		if ((size_t)sb.st_size < acked || (size_t)sb.st_size > all) {
			fprintf(stderr, "size %lld, %zu acknowledged (seed %u, iteration %d)\n",
				(long long)sb.st_size, acked, seed, it);
			fail();
		}
		char *f = file_read_n((size_t)sb.st_size);
		for (size_t k = 0; k < (size_t)sb.st_size; k++)
			if (f[k] != want[k] && (k < acked || f[k] != 0)) {
				fprintf(stderr, "byte %zu of %lld wrong, %zu acknowledged "
					"(seed %u, iteration %d)\n", k, (long long)sb.st_size,
					acked, seed, it);
				fail();
			}
		free(f);
	}
	printf(" of %d\n", KA_ROUNDS);
	free(want);
}

/* ------------------------------------------------------------ probes */

/* Copy DIR file name of object from over object to (both 16-hex names). */
static void
copy_obj_file(const char *from, const char *to, const char *name)
{
	char a[400], b[400], buf[65536];
	ssize_t n;
	snprintf(a, sizeof(a), "%s/%s/%s", dcdir, from, name);
	snprintf(b, sizeof(b), "%s/%s/%s", dcdir, to, name);
	int in = open(a, O_RDONLY), out = open(b, O_WRONLY | O_TRUNC);
	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

/* The object name (16 hex digits) of the file at p, cached once. */
static void
cache_obj(const char *p, uint64_t s, char name[17])
{
	struct stack st;
	char *truth, saved[300];

	snprintf(saved, sizeof(saved), "%s", path);
	snprintf(path, sizeof(path), "%s", p);
	make_file(s);
	truth = file_read();
	assert_int_equal(stack_open(&st, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&st, truth);
	tier_fill_wait(st.d);
	assert_int_equal(param(st.d, "insertions"), FSIZE / BS);
	char buf[4096];
	assert_true(clio_dev_params(st.d, buf, sizeof(buf)) > 0);
	const char *o = strstr(buf, "\ndisk_cache.object=");
	assert_non_null(o);
	memcpy(name, o + strlen("\ndisk_cache.object="), 16);
	name[16] = '\0';
	assert_int_equal(stack_close(&st), 0);
	free(truth);
	snprintf(path, sizeof(path), "%s", saved);
}

/* Another object's index and data copied over this object's (its meta
 * stays): the entries are another object's blocks, never served. */
static void
test_foreign_entries(void **state)
{
	char pa[300], pb[300], na[17], nb[17];
	struct stack st;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	snprintf(pa, sizeof(pa), "%s/a", dir);
	snprintf(pb, sizeof(pb), "%s", path);
	cache_obj(pa, 30, na);
	cache_obj(pb, 31, nb);
	assert_string_not_equal(na, nb);
	copy_obj_file(na, nb, "index");
	copy_obj_file(na, nb, "data");
	char *truth = file_read();
	assert_int_equal(stack_open(&st, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&st, truth);
	assert_int_equal(stack_close(&st), 0);
	free(truth);
	unlink(pa);
}

/* Find the meta's crc (the 32-bit word that is the crc32c of all the
 * bytes before it), set the 32-bit word at off to val, and reseal. */
static void
forge_meta(const char *p, size_t off, uint32_t val)
{
	unsigned char m[4096];
	int fd = open(p, O_RDWR);
	ssize_t n;
	size_t k;

	assert_true(fd >= 0);
	n = pread(fd, m, sizeof(m), 0);
	assert_true(n > 16);
	for (k = 16; k + 4 <= (size_t)n; k += 4) {
		uint32_t c;
		memcpy(&c, m + k, 4);
		if (c == crc32c(0, m, k))
			break;
	}
	assert_true(k + 4 <= (size_t)n);
	memcpy(m + off, &val, 4);
	uint32_t c = crc32c(0, m, k);
	memcpy(m + k, &c, 4);
	assert_int_equal(pwrite(fd, m, (size_t)n, 0), n);
	close(fd);
}

/* A meta whose crc holds but whose block size is nonsense (0, odd, huge):
 * the object starts over, the reader sees the file's bytes. */
static void
test_meta_bsize(void **state)
{
	static const uint32_t bad[] = { 0, 3, BS / 2, BS * 2, 0x80000000u };
	char meta[400];
	struct stack st;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(32);
	char *truth = file_read();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(stack_open(&st, "writethrough", "64M", 8 * TU_MiB), 0);
		read_all_check(&st, truth);
		tier_fill_wait(st.d);
		assert_int_equal(stack_close(&st), 0);
		obj_file(meta, sizeof(meta), "meta");
		forge_meta(meta, 8, bad[i]); /* magic, version, bsize */
		assert_int_equal(stack_open(&st, "writethrough", "64M", 8 * TU_MiB), 0);
		read_all_check(&st, truth);
		assert_int_equal(stack_close(&st), 0);
	}
	free(truth);
}

/* A zeroed index page, a data file cut short, a change of the file that
 * keeps its size and mtime (only ctime tells): never a wrong byte. */
static void
test_damage(void **state)
{
	char p[400];
	struct stack st;
	struct stat sb;
	char *truth, z[4096] = { 0 };

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(33);
	truth = file_read();
	assert_int_equal(stack_open(&st, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&st, truth);
	tier_fill_wait(st.d);
	assert_int_equal(stack_close(&st), 0);
	obj_file(p, sizeof(p), "index");
	int fd = open(p, O_RDWR);
	assert_int_equal(pwrite(fd, z, sizeof(z), 4096), (ssize_t)sizeof(z));
	close(fd);
	obj_file(p, sizeof(p), "data");
	assert_int_equal(truncate(p, FSIZE / 2 + 100), 0);
	assert_int_equal(stack_open(&st, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&st, truth);
	tier_fill_wait(st.d);
	assert_int_equal(stack_close(&st), 0);

	/* same size, mtime put back */
	assert_int_equal(stat(path, &sb), 0);
	file_write(3 * BS, 100, 34);
	struct timespec ts[2] = { sb.st_atim, sb.st_mtim };
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	free(truth);
	truth = file_read();
	assert_int_equal(stack_open(&st, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&st, truth);
	assert_int_equal(stack_close(&st), 0);
	free(truth);
}

/* Straight to the device while the tier holds its blocks: an unaligned
 * write, write_zeroes, a shrink and a regrowth; the device's reads and a
 * restarted cache's see the new bytes, zeros where it regrew. */
static void
test_dev_direct(void **state)
{
	struct stack st;
	char *b = malloc(FSIZE), *z = calloc(1, FSIZE), *truth;
	uint64_t cut = 40 * BS + 777;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(40);
	truth = file_read();
	assert_int_equal(stack_open(&st, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&st, truth);
	tier_fill_wait(st.d);
	assert_int_equal(clio_dev_pread(st.d, b, FSIZE, 0), FSIZE); /* from DIR */
	assert_memory_equal(b, truth, FSIZE);
	tu_fill(b, 3 * BS, 5 * BS + 333, 41);
	assert_int_equal(clio_dev_pwrite(st.d, b, 3 * BS, 5 * BS + 333), 3 * BS);
	assert_int_equal(clio_dev_write_zeroes(st.d, 20 * BS + 5, 2 * BS), 0);
	assert_int_equal(clio_dev_resize(st.d, cut), 0);
	assert_int_equal(clio_dev_resize(st.d, FSIZE), 0);
	assert_int_equal(clio_dev_flush(st.d), 0);
	tu_fill(truth + 5 * BS + 333, 3 * BS, 5 * BS + 333, 41);
	memset(truth + 20 * BS + 5, 0, 2 * BS);
	memset(truth + cut, 0, FSIZE - cut);
	char *f = file_read();
	assert_memory_equal(f, truth, FSIZE);
	free(f);
	assert_int_equal(clio_dev_pread(st.d, b, FSIZE, 0), FSIZE);
	for (size_t i = 0; i < FSIZE; i++)
		if (b[i] != truth[i]) {
			fprintf(stderr, "device read: byte %zu differs\n", i);
			fail();
		}
	tier_fill_wait(st.d);
	assert_int_equal(stack_close(&st), 0);
	assert_int_equal(stack_open(&st, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&st, truth);
	assert_int_equal(stack_close(&st), 0);
	free(truth);
	free(b);
	free(z);
}

/* The second process of test_two_procs: writes one block of the file
 * while the first holds the object (it runs without the tier). */
static int
child_other(void)
{
	struct stack c;
	char *w = malloc(BS);

	if (w == NULL || stack_open(&c, "writeback", "64M", 256 * TU_KiB) != 0)
		return 3;
	tu_fill(w, BS, 7 * BS, 43);
	if (clio_pwrite(c.f, w, BS, 7 * BS) != BS || clio_fsync(c.f) != 0)
		return 4;
	free(w);
	return stack_close(&c) == 0 ? 0 : 5;
}

/* A second process on the same object while the first holds it: it runs
 * without the tier, the first's entries stay good. */
static void
test_two_procs(void **state)
{
	struct stack a;
	char *truth;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(42);
	truth = file_read();
	assert_int_equal(stack_open(&a, "writeback", "64M", 8 * TU_MiB), 0);
	read_all_check(&a, truth);
	tier_fill_wait(a.d);
	pid_t p = spawn("child-other", 0, 0);
	assert_true(p > 0);
	int stt;
	assert_int_equal(waitpid(p, &stt, 0), p);
	assert_true(WIFEXITED(stt));
	assert_int_equal(WEXITSTATUS(stt), 0);
	tu_fill(truth + 7 * BS, BS, 7 * BS, 43);
	char *f = file_read();
	assert_memory_equal(f, truth, FSIZE);
	free(f);
	assert_int_equal(stack_close(&a), 0);
	/* the first's entries: the file changed under them, so they go */
	assert_int_equal(stack_open(&a, "writethrough", "64M", 8 * TU_MiB), 0);
	read_all_check(&a, truth);
	assert_int_equal(stack_close(&a), 0);
	free(truth);
}

/* ------------------------------------------------------------ threads */

struct thr {
	struct stack *s;
	pthread_barrier_t *bar;
	unsigned seed;
	int writer;
	int bad;
};

static void *
thr_main(void *arg)
{
	struct thr *t = arg;
	char *b = malloc(4 * BS);

	for (int n = 0; n < 300 && b != NULL; n++) {
		uint64_t off = (uint64_t)(rand_r(&t->seed) % (FSIZE / BS - 4)) * BS;
		size_t len = (size_t)(1 + rand_r(&t->seed) % 4) * BS;
		if (t->writer && n % 3 == 0) {
			/* the same bytes again: readers see one version */
			tu_fill(b, len, off, 13);
			ssize_t r = clio_pwrite(t->s->f, b, len, off);
			if (r != (ssize_t)len) {
				fprintf(stderr, "pwrite %zu at %llu: %zd\n", len,
					(unsigned long long)off, r);
				t->bad++;
			}
		} else {
			ssize_t r = clio_pread(t->s->f, b, len, off);
			long at = r == (ssize_t)len ? tu_check(b, len, off, 13) : -2;
			if (at != -1) {
				fprintf(stderr, "pread %zu at %llu: %zd, byte %ld wrong "
					"(seed %u)\n", len, (unsigned long long)off, r, at,
					seed);
				t->bad++;
			}
		}
	}
	/* no thread ends before every write is done: a file device's
	 * io_uring cancels what a thread that exits left in flight (and a
	 * reader may have written back the writer's buffers) */
	pthread_barrier_wait(t->bar);
	if (t->writer) {
		int r = clio_fsync(t->s->f);
		if (r != 0) {
			fprintf(stderr, "fsync: %d\n", r);
			t->bad++;
		}
	}
	pthread_barrier_wait(t->bar);
	free(b);
	return NULL;
}

static void
test_threads(void **state)
{
	struct stack s;
	struct thr t[4];
	pthread_t th[4];
	pthread_barrier_t bar;

	(void)state;
	pthread_barrier_init(&bar, NULL, 4);
	make_file(13);
	assert_int_equal(stack_open(&s, "writethrough", "1M", 128 * TU_KiB), 0);
	for (int i = 0; i < 4; i++) {
		t[i] = (struct thr){ &s, &bar, seed + (unsigned)i, i == 0, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, thr_main, &t[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(t[i].bad, 0);
	}
	pthread_barrier_destroy(&bar);
	assert_true(param(s.d, "hits") > 0);
	assert_int_equal(stack_close(&s), 0);
}

/* Threads, each owning a quarter of the file, write and read it through
 * a tiny memory cache (blocks go through the tier constantly); between
 * rounds one truncates the file and regrows it.  Each read, and the
 * file at the end, is compared with a model. */
#define TR_THREADS 4
#define TR_ROUNDS 40
static uint64_t lastcut; /* thread 0's, read after a barrier */
struct trt {
	struct stack *s;
	pthread_barrier_t *bar;
	char *model;
	unsigned seed;
	int id, bad;
};

static void *
trt_main(void *arg)
{
	struct trt *t = arg;
	uint64_t part = FSIZE / TR_THREADS, base = (uint64_t)t->id * part;
	char *b = malloc(3 * BS);

	for (int round = 0; round < TR_ROUNDS && b != NULL; round++) {
		for (int n = 0; n < 40; n++) {
			size_t len = 1 + (size_t)rand_r(&t->seed) % (3 * BS - 1);
			uint64_t off = base + (uint64_t)rand_r(&t->seed) % (part - len);
			if (rand_r(&t->seed) % 2) {
				tu_fill(b, len, off, (uint64_t)t->seed);
				if (clio_pwrite(t->s->f, b, len, off) != (ssize_t)len)
					t->bad++;
				memcpy(t->model + off, b, len);
			} else if (clio_pread(t->s->f, b, len, off) != (ssize_t)len ||
				   memcmp(b, t->model + off, len) != 0) {
				size_t k = 0;
				while (k < len && b[k] == t->model[off + k])
					k++;
				fprintf(stderr, "thread %d round %d: %zu at %llu differ at "
					"+%zu: %02x, not %02x; last cut %llu (seed %u)\n",
					t->id, round, len, (unsigned long long)off, k,
					(unsigned char)b[k], (unsigned char)t->model[off + k],
					(unsigned long long)lastcut, seed);
				t->bad++;
			}
		}
		pthread_barrier_wait(t->bar);
		if (t->id == 0) {
			uint64_t cut = (uint64_t)rand_r(&t->seed) % FSIZE;
			if (clio_ftruncate(t->s->f, cut) != 0 ||
			    (round % 3 == 0 && clio_fsync(t->s->f) != 0) ||
			    clio_ftruncate(t->s->f, FSIZE) != 0)
				t->bad++;
			memset(t->model + cut, 0, FSIZE - cut);
			lastcut = cut;
		}
		pthread_barrier_wait(t->bar);
	}
	free(b);
	return NULL;
}

static void
test_threads_truncate(void **state)
{
	static const char *const modes[] = { "writethrough", "writeback" };

	(void)state;
	for (int m = 0; m < 2; m++) {
		struct stack s;
		struct trt t[TR_THREADS];
		pthread_t th[TR_THREADS];
		pthread_barrier_t bar;
		char *model;

		nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		mkdir(dcdir, 0755);
		make_file(50);
		model = file_read();
		pthread_barrier_init(&bar, NULL, TR_THREADS);
		assert_int_equal(stack_open(&s, modes[m], "1M", 128 * TU_KiB), 0);
		for (int i = 0; i < TR_THREADS; i++) {
			t[i] = (struct trt){ &s, &bar, model, seed * 7 + (unsigned)i, i, 0 };
			assert_int_equal(pthread_create(&th[i], NULL, trt_main, &t[i]), 0);
		}
		int bad = 0;
		for (int i = 0; i < TR_THREADS; i++) {
			pthread_join(th[i], NULL);
			bad += t[i].bad;
		}
		pthread_barrier_destroy(&bar);
		if (bad)
			fprintf(stderr, "%s: %d bad (seed %u)\n", modes[m], bad, seed);
		assert_int_equal(bad, 0);
		assert_int_equal(clio_fsync(s.f), 0);
		assert_int_equal(stack_close(&s), 0);
		char *f = file_read();
		for (size_t i = 0; i < FSIZE; i++)
			if (f[i] != model[i]) {
				fprintf(stderr, "%s: file byte %zu differs (seed %u)\n",
					modes[m], i, seed);
				fail();
			}
		/* and a restart serves the same */
		assert_int_equal(stack_open(&s, modes[m], "1M", 128 * TU_KiB), 0);
		read_all_check(&s, model);
		assert_int_equal(stack_close(&s), 0);
		free(f);
		free(model);
	}
}

/* writeback, kill -9 at a random moment of writes and fsyncs: the child
 * writes round r into its own 2-block region, fsyncs, and only then
 * appends r to DIR/../acked.  After a restart every acknowledged round
 * is on the device; every other byte is the old or the new one. */
#define KR_ROUNDS 32
static void
kr_range(int r, uint64_t *off, size_t *len)
{
	*off = (uint64_t)r * 2 * BS + (uint64_t)(r * 13 % 100);
	*len = BS + (size_t)(r * 37 % BS);
}

static int
child_wb_rounds(void)
{
	struct stack st;
	char *b = malloc(2 * BS), ack[300];
	int fd;

	snprintf(ack, sizeof(ack), "%s/acked", dir);
	fd = open(ack, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (b == NULL || fd < 0 || stack_open(&st, "writeback", "64M", 256 * TU_KiB) < 0)
		return 2;
	for (int r = 0; r < KR_ROUNDS; r++) {
		uint64_t off;
		size_t len;
		kr_range(r, &off, &len);
		tu_fill(b, len, off, 100 + (uint64_t)r);
		if (clio_pwrite(st.f, b, len, off) != (ssize_t)len || clio_fsync(st.f) != 0)
			return 3;
		char line[16];
		int n = snprintf(line, sizeof(line), "%d\n", r);
		if (write(fd, line, (size_t)n) != n)
			return 4;
	}
	for (;;)
		pause();
}

static void
test_writeback_kill_rounds(void **state)
{
	unsigned s = seed;
	char ack[300];

	(void)state;
	snprintf(ack, sizeof(ack), "%s/acked", dir);
	const char *fl = getenv("CLIO_FLAVOUR");
	unsigned slow = fl && strcmp(fl, "tsan") == 0 ? 3 : 1; /* TSan starts slowly */
	printf("writeback kill -9 (seed %u): rounds acknowledged:", seed);
	for (int it = 0; it < 8; it++) {
		struct stack st;
		int status, last = -1;

		nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		mkdir(dcdir, 0755);
		unlink(ack);
		make_file(60);
		pid_t p = spawn("child-wbr", 0, 0);
		assert_true(p > 0);
		usleep((useconds_t)(8000 + rand_r(&s) % 30000) * slow); /* past the child's start */
		kill(p, SIGKILL);
		assert_int_equal(waitpid(p, &status, 0), p);
		assert_true(WIFSIGNALED(status));
		FILE *af = fopen(ack, "r");
		int v;
		while (af != NULL && fscanf(af, "%d", &v) == 1)
			last = v;
		if (af != NULL)
			fclose(af);
		printf(" %d", last + 1);
		/* the restart writes back what DIR holds */
		assert_int_equal(stack_open(&st, "writeback", "64M", 256 * TU_KiB), 0);
		assert_int_equal(stack_close(&st), 0);
		char *f = file_read(), *old = malloc(FSIZE), *nw = malloc(2 * BS);
		tu_fill(old, FSIZE, 0, 60);
		for (int r = 0; r < KR_ROUNDS; r++) {
			uint64_t off;
			size_t len;
			kr_range(r, &off, &len);
			tu_fill(nw, len, off, 100 + (uint64_t)r);
			bool isnew = memcmp(f + off, nw, len) == 0;
			if (r <= last && !isnew) {
				fprintf(stderr, "round %d (of %d acknowledged) is not on the "
					"device (seed %u, iteration %d)\n", r, last, seed, it);
				fail();
			}
			for (size_t k = 0; k < len; k++)
				if (f[off + k] != nw[k] && f[off + k] != old[off + k]) {
					fprintf(stderr, "round %d: byte %zu neither old nor new "
						"(seed %u, iteration %d)\n", r, k, seed, it);
					fail();
				}
		}
		free(f);
		free(old);
		free(nw);
	}
	printf(" of %d\n", KR_ROUNDS);
}

/* ------------------------------------------------------------ probes */

#define WBB_LEN (48 * BS)

/* writeback: WBB_LEN bytes of pattern s at 0 into a roomy DIR (48 dirty
 * slots), fsync, and die at once. */
static int
child_wb_big(unsigned s)
{
	struct stack st;
	char *b = malloc(WBB_LEN);

	if (b == NULL || stack_open(&st, "writeback", "64M", 256 * TU_KiB) < 0)
		return 2;
	tu_fill(b, WBB_LEN, 0, s);
	if (clio_pwrite(st.f, b, WBB_LEN, 0) != WBB_LEN || clio_fsync(st.f) != 0)
		return 3;
	raise(SIGKILL);
	return 5;
}

/* A restart with a disk_cache_size smaller than what the crashed session
 * had (fewer slots than its index holds) still writes back every dirty
 * block it left: none is cut off with the index. */
static void
test_writeback_smaller_restart(void **state)
{
	struct stack st;
	int status;
	char *truth;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(13);
	pid_t p = spawn("child-wbbig", 130, 0);
	assert_true(p > 0);
	assert_int_equal(waitpid(p, &status, 0), p);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* a DIR budget below one block */
	assert_int_equal(stack_open(&st, "writethrough", "1000", 256 * TU_KiB), 0);
	assert_int_equal(param(st.d, "dirty"), 0);
	assert_int_equal(stack_close(&st), 0);
	truth = file_read();
	for (uint64_t o = 0; o < WBB_LEN; o += BS)
		if (tu_check(truth + o, BS, o, 130) != -1) {
			fprintf(stderr, "block %llu of the fsynced data is not on the "
				"device\n", (unsigned long long)(o / BS));
			fail();
		}
	assert_int_equal(tu_check(truth + WBB_LEN, FSIZE - WBB_LEN, WBB_LEN, 13), -1);
	free(truth);
}

/* Dirty blocks that must go to lost+found but cannot (DIR/lost+found is
 * not a directory, or a symbolic link to one: not followed) are not
 * dropped: the object runs without the tier, the file untouched, and a
 * later restart keeps them aside. */
static void
test_lost_found_fails(void **state)
{
	struct stack st;
	char lf[400], *before;
	int fd;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(14);
	run_wb_child(140);
	file_write(FSIZE - 4096, 4096, 15);
	before = file_read();
	snprintf(lf, sizeof(lf), "%s/lost+found", dcdir);
	fd = open(lf, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
	read_all_check(&st, before);
	assert_int_equal(stack_close(&st), 0);
	char *after = file_read();
	assert_memory_equal(before, after, FSIZE);
	free(after);
	assert_int_equal(unlink(lf), 0);
	char away[400];
	snprintf(away, sizeof(away), "%s/away", dir);
	assert_int_equal(mkdir(away, 0755), 0);
	assert_int_equal(symlink(away, lf), 0);
	assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
	read_all_check(&st, before);
	assert_int_equal(stack_close(&st), 0);
	after = file_read();
	assert_memory_equal(before, after, FSIZE);
	free(after);
	assert_int_equal(rmdir(away), 0); /* nothing went there */
	assert_int_equal(unlink(lf), 0);
	assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
	assert_int_equal(param(st.d, "lost_found"), 2 * WB_LEN / BS);
	read_all_check(&st, before);
	assert_int_equal(stack_close(&st), 0);
	after = file_read();
	assert_memory_equal(before, after, FSIZE);
	free(after);
	free(before);
}

/* DIR removed while the object is open, in writeback: writes, fsync,
 * reads and the close still succeed with the right bytes, the file gets
 * them; another object opened meanwhile runs without the tier; a new
 * DIR of the same name starts empty. */
static void
test_dir_removed(void **state)
{
	struct stack st;
	char *truth = malloc(FSIZE);

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(16);
	tu_fill(truth, FSIZE, 0, 16);
	assert_int_equal(stack_open(&st, "writeback", "8M", 256 * TU_KiB), 0);
	read_all_check(&st, truth);
	tu_fill(truth + BS, WB_LEN, BS, 17);
	assert_int_equal(clio_pwrite(st.f, truth + BS, WB_LEN, BS), WB_LEN);
	assert_int_equal(clio_fsync(st.f), 0);
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	tu_fill(truth + 600 * TU_KiB, WB_LEN, 600 * TU_KiB, 18);
	assert_int_equal(clio_pwrite(st.f, truth + 600 * TU_KiB, WB_LEN, 600 * TU_KiB), WB_LEN);
	assert_int_equal(clio_fsync(st.f), 0);
	read_all_check(&st, truth);
	/* another object opened meanwhile runs without the tier */
	char p2[400], *b2 = malloc(FSIZE);
	clio_dev *d2;
	clio_file *f2;
	snprintf(p2, sizeof(p2), "%s/file2", dir);
	int fd = open(p2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0 && b2 != NULL);
	tu_fill(b2, FSIZE, 0, 19);
	assert_int_equal(pwrite(fd, b2, FSIZE, 0), FSIZE);
	close(fd);
	assert_int_equal(clio_dev_open(p2, 0, &d2), 0);
	assert_int_equal(clio_open(st.c, d2, CLIO_RDWR, &f2), 0);
	assert_int_equal(clio_pread(f2, b2, FSIZE, 0), FSIZE);
	assert_int_equal(tu_check(b2, FSIZE, 0, 19), -1);
	assert_int_equal(clio_close(f2), 0);
	free(b2);
	assert_int_equal(stack_close(&st), 0);
	assert_int_equal(clio_dev_close(d2), 0);
	char *f = file_read();
	assert_memory_equal(f, truth, FSIZE);
	free(f);
	assert_int_equal(mkdir(dcdir, 0755), 0);
	assert_int_equal(stack_open(&st, "writeback", "8M", 256 * TU_KiB), 0);
	read_all_check(&st, truth);
	assert_int_equal(param(st.d, "recovered"), 0);
	assert_int_equal(stack_close(&st), 0);
	free(truth);
}

/* writeback, the same blocks over and over: round r writes OW_LEN bytes
 * of pattern 300 + r at OW_OFF (unaligned: the memory cache reads the
 * edges), fsyncs, and appends r to DIR/../acked. */
#define OW_OFF (3 * BS + 1000)
#define OW_LEN (5 * BS)
#define OW_ROUNDS 400

static int
child_overwrite(void)
{
	struct stack st;
	char *b = malloc(OW_LEN), ack[300];
	int fd;

	snprintf(ack, sizeof(ack), "%s/acked", dir);
	fd = open(ack, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (b == NULL || fd < 0 || stack_open(&st, "writeback", "64M", 256 * TU_KiB) < 0)
		return 2;
	for (int r = 0; r < OW_ROUNDS; r++) {
		tu_fill(b, OW_LEN, OW_OFF, 300 + (uint64_t)r);
		if (clio_pwrite(st.f, b, OW_LEN, OW_OFF) != OW_LEN || clio_fsync(st.f) != 0)
			return 3;
		char line[16];
		int n = snprintf(line, sizeof(line), "%d\n", r);
		if (write(fd, line, (size_t)n) != n)
			return 4;
	}
	for (;;)
		pause();
}

/* kill -9 at random moments of the overwrites, then a restart: each page
 * of the range is the last acknowledged round's or the next one's, and
 * the restarted tier serves the file's bytes. */
static void
test_writeback_kill_overwrite(void **state)
{
	unsigned s = seed ^ 0x5a5a;
	char ack[300];
	const char *fl = getenv("CLIO_FLAVOUR");
	unsigned slow = fl && strcmp(fl, "tsan") == 0 ? 3 : 1;

	(void)state;
	snprintf(ack, sizeof(ack), "%s/acked", dir);
	printf("writeback overwrite kill -9 (seed %u): rounds acknowledged:", seed);
	for (int it = 0; it < (slow > 1 ? 3 : 6); it++) {
		struct stack st;
		int status, last = -1;

		nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		mkdir(dcdir, 0755);
		unlink(ack);
		make_file(61);
		pid_t p = spawn("child-ow", 0, 0);
		assert_true(p > 0);
		usleep((useconds_t)(10000 + rand_r(&s) % 140000) * slow);
		kill(p, SIGKILL);
		assert_int_equal(waitpid(p, &status, 0), p);
		assert_true(WIFSIGNALED(status));
		FILE *af = fopen(ack, "r");
		int v;
		while (af != NULL && fscanf(af, "%d", &v) == 1)
			last = v;
		if (af != NULL)
			fclose(af);
		printf(" %d", last + 1);
		assert_int_equal(stack_open(&st, "writeback", "64M", 256 * TU_KiB), 0);
		assert_int_equal(param(st.d, "dirty"), 0);
		char *f = file_read();
		read_all_check(&st, f);
		assert_int_equal(stack_close(&st), 0);
		for (uint64_t o = 0; o < FSIZE; o += 4096) {
			uint64_t a = o > OW_OFF ? o : OW_OFF;
			uint64_t e = o + 4096 < OW_OFF + OW_LEN ? o + 4096 : OW_OFF + OW_LEN;
			if (e <= a) {
				if (tu_check(f + o, 4096, o, 61) != -1) {
					fprintf(stderr, "page %llu outside the range changed "
						"(seed %u, iteration %d)\n",
						(unsigned long long)o, seed, it);
					fail();
				}
				continue;
			}
			bool okp = false;
			for (int r = last; r <= last + 1 && !okp; r++)
				okp = r < 0 ? tu_check(f + a, e - a, a, 61) == -1
					    : tu_check(f + a, e - a, a, 300 + (uint64_t)r) == -1;
			if (!okp) {
				fprintf(stderr, "page %llu is neither round %d nor %d "
					"(seed %u, iteration %d)\n", (unsigned long long)o,
					last, last + 1, seed, it);
				fail();
			}
		}
		free(f);
	}
	printf("\n");
}

/* After a crash in writeback, a read-only open of the device reads the
 * dirty blocks from DIR (the newest data) and writes nothing; the next
 * open for writing writes them back. */
static void
test_writeback_readonly_restart(void **state)
{
	struct clio_conf conf;
	char err[256], *b = malloc(FSIZE), *truth = malloc(FSIZE);
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	struct stack st;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(20);
	run_wb_child(200);
	tu_fill(truth, FSIZE, 0, 20);
	tu_fill(truth + WB_A, WB_LEN, WB_A, 200);
	tu_fill(truth + WB_B, WB_LEN, WB_B, 200);
	char *before = file_read();
	clio_conf_init(&conf);
	assert_int_equal(clio_conf_set(&conf, "disk_cache", dcdir, err, sizeof(err)), 0);
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	assert_int_equal(clio_dev_open(path, CLIO_DEV_RDONLY, &d), 0);
	assert_int_equal(clio_open(c, d, CLIO_RDONLY, &f), 0);
	assert_int_equal(clio_pread(f, b, FSIZE, 0), FSIZE);
	assert_memory_equal(b, truth, FSIZE);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	assert_int_equal(clio_dev_close(d), 0);
	char *mid = file_read();
	assert_memory_equal(before, mid, FSIZE); /* nothing written */
	assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
	assert_int_equal(param(st.d, "dirty"), 0);
	read_all_check(&st, truth);
	assert_int_equal(stack_close(&st), 0);
	char *after = file_read();
	assert_memory_equal(after, truth, FSIZE);
	free(before);
	free(mid);
	free(after);
	free(truth);
	free(b);
}

/* writeback: a write that goes through to the device (unaligned, on
 * the device itself), then dirty blocks, fsync, kill -9. */
static int
child_wb_through(unsigned s)
{
	struct stack st;
	char *b = malloc(WB_LEN), x[100];

	if (b == NULL || stack_open(&st, "writeback", "8M", 256 * TU_KiB) < 0)
		return 2;
	tu_fill(x, sizeof(x), 20 * BS + 50, s + 1);
	if (clio_dev_pwrite(st.d, x, sizeof(x), 20 * BS + 50) != sizeof(x))
		return 3;
	tu_fill(b, WB_LEN, WB_A, s);
	if (clio_pwrite(st.f, b, WB_LEN, WB_A) != WB_LEN || clio_fsync(st.f) != 0)
		return 4;
	raise(SIGKILL);
	return 5;
}

/* The fsync after a write of the session's own that went through to
 * the device records the device's version: the dirty blocks reach the
 * device after kill -9 and a restart, not lost+found. */
static void
test_writeback_through_recover(void **state)
{
	struct stack st;
	int status;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(21);
	pid_t p = spawn("child-wbthrough", 210, 0);
	assert_true(p > 0);
	assert_int_equal(waitpid(p, &status, 0), p);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
	assert_int_equal(param(st.d, "lost_found"), 0);
	assert_int_equal(stack_close(&st), 0);
	char *f = file_read();
	assert_int_equal(tu_check(f + WB_A, WB_LEN, WB_A, 210), -1);
	assert_int_equal(tu_check(f + 20 * BS + 50, 100, 20 * BS + 50, 211), -1);
	free(f);
}

/* writeback: whole blocks written past the end make the device that
 * much larger at once, as a write the device took would: a handle
 * opened after the first closed sees them. */
static void
test_writeback_grow(void **state)
{
	struct stack st;
	char *b = malloc(WB_LEN), *r = malloc(WB_LEN);

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(22);
	assert_int_equal(stack_open(&st, "writeback", "8M", 256 * TU_KiB), 0);
	tu_fill(b, WB_LEN, FSIZE, 220);
	assert_int_equal(clio_pwrite(st.f, b, WB_LEN, FSIZE), WB_LEN);
	assert_int_equal(clio_close(st.f), 0);
	assert_int_equal(clio_dev_size(st.d), FSIZE + WB_LEN);
	assert_int_equal(clio_open(st.c, st.d, CLIO_RDWR, &st.f), 0);
	assert_int_equal(clio_fsize(st.f), FSIZE + WB_LEN);
	assert_int_equal(clio_pread(st.f, r, WB_LEN, FSIZE), WB_LEN);
	assert_memory_equal(r, b, WB_LEN);
	assert_int_equal(stack_close(&st), 0);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, FSIZE + WB_LEN);
	free(b);
	free(r);
}

/* writeback: a file's short last block is kept dirty in DIR like the
 * others (it went through to the device at each fsync); once the file
 * has grown past it, it reads as its bytes and zeros; all of it reaches
 * the device at close. */
static void
test_writeback_tail(void **state)
{
	const size_t len = 3 * BS + 1000;
	struct stack st;
	char *b = malloc(len), *r = malloc(7 * BS), *blk = malloc(BS);
	struct stat sb;
	int fd;

	(void)state;
	assert_true(b != NULL && r != NULL && blk != NULL);
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
	tu_fill(b, len, 0, 230);
	tu_fill(blk, BS, 6 * BS, 231);
	assert_int_equal(stack_open(&st, "writeback", "8M", 256 * TU_KiB), 0);
	assert_int_equal(clio_pwrite(st.f, b, len, 0), (ssize_t)len);
	assert_int_equal(clio_fsync(st.f), 0);
	assert_int_equal(param(st.d, "dirty"), 4);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 0); /* all of it in DIR, none through */
	assert_int_equal(clio_pwrite(st.f, blk, BS, 6 * BS), BS);
	assert_int_equal(clio_fsync(st.f), 0);
	/* a new memory cache: the reads come from the tier */
	assert_int_equal(clio_close(st.f), 0);
	assert_int_equal(clio_cache_free(st.c), 0);
	struct clio_conf conf;
	clio_conf_init(&conf);
	assert_int_equal(clio_cache_new(&conf, &st.c), 0);
	assert_int_equal(clio_open(st.c, st.d, CLIO_RDWR, &st.f), 0);
	assert_int_equal(clio_fsize(st.f), 7 * BS);
	assert_int_equal(clio_pread(st.f, r, 7 * BS, 0), 7 * BS);
	assert_memory_equal(r, b, len);
	for (size_t i = len; i < 6 * BS; i++)
		if (r[i] != 0) {
			fprintf(stderr, "byte %zu: %d, not 0\n", i, r[i]);
			fail();
		}
	assert_memory_equal(r + 6 * BS, blk, BS);
	assert_int_equal(stack_close(&st), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 7 * BS);
	free(r);
	r = file_read_n(7 * BS);
	assert_memory_equal(r, b, len);
	for (size_t i = len; i < 6 * BS; i++)
		assert_int_equal(r[i], 0);
	assert_memory_equal(r + 6 * BS, blk, BS);
	free(r);
	free(b);
	free(blk);
}

/* writeback: whole blocks past the end, fsync, kill -9. */
static int
child_wb_grow(unsigned s)
{
	struct stack st;
	char *b = malloc(WB_LEN);

	if (b == NULL || stack_open(&st, "writeback", "8M", 256 * TU_KiB) < 0)
		return 2;
	tu_fill(b, WB_LEN, FSIZE, s);
	if (clio_pwrite(st.f, b, WB_LEN, FSIZE) != WB_LEN || clio_fsync(st.f) != 0)
		return 3;
	raise(SIGKILL);
	return 4;
}

/* Dirty blocks past the file's end, fsynced, survive kill -9: a
 * read-only open reads them, the next open for writing writes them
 * back and the file grows to hold them. */
static void
test_writeback_grow_recover(void **state)
{
	struct clio_conf conf;
	char err[256], *b = malloc(WB_LEN);
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	struct stack st;
	struct stat sb;
	int status;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(23);
	pid_t p = spawn("child-wbgrow", 230, 0);
	assert_true(p > 0);
	assert_int_equal(waitpid(p, &status, 0), p);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, FSIZE);
	clio_conf_init(&conf);
	assert_int_equal(clio_conf_set(&conf, "disk_cache", dcdir, err, sizeof(err)), 0);
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	assert_int_equal(clio_dev_open(path, CLIO_DEV_RDONLY, &d), 0);
	assert_int_equal(clio_open(c, d, CLIO_RDONLY, &f), 0);
	assert_int_equal(clio_fsize(f), FSIZE + WB_LEN);
	assert_int_equal(clio_pread(f, b, WB_LEN, FSIZE), WB_LEN);
	assert_int_equal(tu_check(b, WB_LEN, FSIZE, 230), -1);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	assert_int_equal(clio_dev_close(d), 0);
	assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
	assert_int_equal(param(st.d, "recovered"), WB_LEN / BS);
	assert_int_equal(stack_close(&st), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, FSIZE + WB_LEN);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, b, WB_LEN, FSIZE), WB_LEN);
	close(fd);
	assert_int_equal(tu_check(b, WB_LEN, FSIZE, 230), -1);
	free(b);
}

/* writeback: a write past the device's largest size fails with EFBIG
 * at once, as without the tier, not at close with the block lost. */
static void
test_writeback_max_size(void **state)
{
	struct clio_conf conf;
	char err[256], b[BS];
	clio_cache *c;
	clio_dev *d;
	clio_file *f;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	clio_conf_init(&conf);
	assert_int_equal(clio_conf_set(&conf, "disk_cache", dcdir, err, sizeof(err)), 0);
	assert_int_equal(clio_conf_set(&conf, "disk_cache_mode", "writeback", err, sizeof(err)), 0);
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	assert_int_equal(clio_dev_open("mem:size=1M", 0, &d), 0);
	assert_int_equal(clio_open(c, d, CLIO_RDWR, &f), 0);
	memset(b, 1, sizeof(b));
	assert_int_equal(clio_dev_pwrite(d, b, sizeof(b), 1ull << 40), -EFBIG);
	assert_int_equal(param(d, "dirty"), 0);
	assert_int_equal(clio_dev_size(d), TU_MiB);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	assert_int_equal(clio_dev_close(d), 0);
}

/* writeback: dirty blocks, a truncation (grow or shrink), fsync,
 * kill -9. */
static int
child_wb_trunc(unsigned s, int shrink)
{
	struct stack st;
	char *b = malloc(WB_LEN);

	if (b == NULL || stack_open(&st, "writeback", "8M", 256 * TU_KiB) < 0)
		return 2;
	tu_fill(b, WB_LEN, WB_A, s);
	if (clio_pwrite(st.f, b, WB_LEN, WB_A) != WB_LEN)
		return 3;
	if (clio_ftruncate(st.f, shrink ? FSIZE - BS : FSIZE + BS) != 0)
		return 4;
	if (clio_fsync(st.f) != 0)
		return 5;
	raise(SIGKILL);
	return 6;
}

/* The fsync after a truncation records the device's version as after
 * a write that went through: the dirty blocks reach the device after
 * kill -9 and a restart, not lost+found. */
static void
test_writeback_trunc_recover(void **state)
{
	struct stack st;
	struct stat sb;
	int status;

	(void)state;
	for (int shrink = 0; shrink < 2; shrink++) {
		nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		mkdir(dcdir, 0755);
		make_file(24);
		pid_t p = spawn("child-wbtrunc", 240, shrink);
		assert_true(p > 0);
		assert_int_equal(waitpid(p, &status, 0), p);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		assert_int_equal(stack_open(&st, "writethrough", "8M", 256 * TU_KiB), 0);
		assert_int_equal(param(st.d, "lost_found"), 0);
		assert_int_equal(stack_close(&st), 0);
		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(sb.st_size, shrink ? FSIZE - BS : FSIZE + BS);
		char *b = malloc(WB_LEN);
		int fd = open(path, O_RDONLY);
		assert_true(fd >= 0 && b != NULL);
		assert_int_equal(pread(fd, b, WB_LEN, WB_A), WB_LEN);
		close(fd);
		assert_int_equal(tu_check(b, WB_LEN, WB_A, 240), -1);
		free(b);
	}
}

struct rdone {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
};

static void
rdone_cb(struct clio_req *req)
{
	struct rdone *w = req->priv;

	pthread_mutex_lock(&w->m);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

/* A read of the device in flight while it shrinks to nothing and grows
 * back: what it brings is the old data, which must not be kept (the
 * file reads as zeros after, in this run and the next). */
static void
test_resize_inflight(void **state)
{
	struct rdone w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	char *b = malloc(FSIZE);
	int stale = 0;

	(void)state;
	assert_non_null(b);
	for (int round = 0; round < 8; round++) {
		struct stack st;
		struct clio_req req;
		struct iovec v = { b, FSIZE };

		nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		mkdir(dcdir, 0755);
		make_file(25);
		assert_int_equal(stack_open(&st, "writethrough", "64M", 256 * TU_KiB), 0);
		memset(&req, 0, sizeof(req));
		req.op = CLIO_OP_READ;
		req.iov = &v;
		req.iovcnt = 1;
		req.done = rdone_cb;
		req.priv = &w;
		w.done = false;
		assert_int_equal(clio_dev_submit(st.d, &req), 0);
		assert_int_equal(clio_dev_resize(st.d, 0), 0);
		assert_int_equal(clio_dev_resize(st.d, FSIZE), 0);
		pthread_mutex_lock(&w.m);
		while (!w.done)
			pthread_cond_wait(&w.cv, &w.m);
		pthread_mutex_unlock(&w.m);
		assert_int_equal(stack_close(&st), 0); /* the queue drained */
		assert_int_equal(stack_open(&st, "writethrough", "64M", 256 * TU_KiB), 0);
		assert_int_equal(clio_dev_pread(st.d, b, FSIZE, 0), FSIZE);
		if (tu_check_zero(b, FSIZE) != -1)
			stale++;
		assert_int_equal(stack_close(&st), 0);
	}
	if (stale > 0)
		fprintf(stderr, "%d of 8 rounds read old data after the regrowth\n", stale);
	assert_int_equal(stale, 0);
	free(b);
}

/* writeback: blocks written through the cache are dirty in DIR, not yet
 * on the device; a read that is not aligned to the tier's blocks (a
 * direct handle's, or the device's own) sees them, not the device's
 * older bytes. */
static void
test_writeback_unaligned_read(void **state)
{
	struct stack st;
	char *b = malloc(4 * BS), *truth;
	clio_file *df;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(26);
	truth = file_read();
	assert_int_equal(stack_open(&st, "writeback", "64M", 8 * TU_MiB), 0);
	tu_fill(b, 4 * BS, 8 * BS, 27);
	assert_int_equal(clio_pwrite(st.f, b, 4 * BS, 8 * BS), 4 * BS);
	assert_int_equal(clio_fsync(st.f), 0); /* dirty in DIR */
	memcpy(truth + 8 * BS, b, 4 * BS);
	df = tu_open(st.c, st.d, CLIO_RDWR | CLIO_DIRECT);
	memset(b, 0, 4 * BS);
	assert_int_equal(clio_pread(df, b, 2 * BS, 9 * BS + 512), 2 * BS);
	assert_memory_equal(b, truth + 9 * BS + 512, 2 * BS);
	memset(b, 0, 4 * BS);
	assert_int_equal(clio_dev_pread(st.d, b, 1024, 8 * BS - 512), 1024);
	assert_memory_equal(b, truth + 8 * BS - 512, 1024);
	assert_int_equal(clio_close(df), 0);
	assert_int_equal(stack_close(&st), 0);
	char *f = file_read();
	assert_memory_equal(f, truth, FSIZE);
	free(f);
	free(truth);
	free(b);
}

/* clio_revalidate with a new version while a thread reads the blocks
 * over and over: once it has returned (and the read racing it has
 * ended), reads bring the new version, not the old one from DIR. */
struct rvr {
	clio_file *f;
	atomic_int stop;
	atomic_ulong reads;
};

static void *
rvr_main(void *arg)
{
	struct rvr *r = arg;
	char *b = malloc(4 * BS);

	while (b != NULL && !atomic_load(&r->stop)) {
		(void)clio_pread(r->f, b, 4 * BS, 0);
		atomic_fetch_add(&r->reads, 1);
	}
	free(b);
	return NULL;
}

static void
test_revalidate_race(void **state)
{
	const char *fl = getenv("CLIO_FLAVOUR");
	int rounds = fl != NULL && strcmp(fl, "tsan") == 0 ? 600 : 2000, old = 0;
	struct clio_validator v = { .size = 4 * BS, .change = 1 };
	struct rvr r = { .f = NULL };
	struct stack st;
	pthread_t th;
	char *b = malloc(4 * BS);
	int fd;

	(void)state;
	assert_non_null(b);
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	memset(b, 1, 4 * BS);
	assert_int_equal(pwrite(fd, b, 4 * BS, 0), 4 * BS);
	assert_int_equal(stack_open(&st, "writethrough", "64M", 8 * TU_MiB), 0);
	assert_int_equal(clio_revalidate(st.f, &v), 0);
	r.f = st.f;
	assert_int_equal(pthread_create(&th, NULL, rvr_main, &r), 0);
	for (int k = 2; k < rounds; k++) {
		/* another writer changes the file */
		memset(b, k & 0xff, 4 * BS);
		assert_int_equal(pwrite(fd, b, 4 * BS, 0), 4 * BS);
		v.change = (uint64_t)k;
		assert_int_equal(clio_revalidate(st.f, &v), 1);
		unsigned long n = atomic_load(&r.reads);
		while (atomic_load(&r.reads) < n + 2)
			sched_yield();
		assert_int_equal(clio_pread(st.f, b, 4 * BS, 0), 4 * BS);
		for (int i = 0; i < 4 * BS; i++)
			if ((unsigned char)b[i] != (k & 0xff)) {
				old++;
				break;
			}
	}
	atomic_store(&r.stop, 1);
	pthread_join(th, NULL);
	close(fd);
	if (old > 0)
		fprintf(stderr, "%d of %d versions read old after revalidating\n",
			old, rounds - 2);
	assert_int_equal(old, 0);
	assert_int_equal(stack_close(&st), 0);
	free(b);
}

/* A device of callbacks with a volatile cache: a write lands in vol, a
 * flush copies vol to dur; a write may be held in flight (gate). */
#define GD_SIZE (1 * TU_MiB)
struct gdev {
	pthread_mutex_t lock, gate;
	pthread_cond_t cv;
	char vol[GD_SIZE], dur[GD_SIZE];
	bool hold, held, release;
};

static int
gd_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct gdev *g = arg;

	pthread_mutex_lock(&g->lock);
	memcpy(buf, g->vol + off, len);
	pthread_mutex_unlock(&g->lock);
	return 0;
}

static int
gd_pwrite(void *arg, const void *buf, size_t len, uint64_t off)
{
	struct gdev *g = arg;

	pthread_mutex_lock(&g->gate);
	if (g->hold) {
		g->hold = false;
		g->held = true;
		pthread_cond_broadcast(&g->cv);
		while (!g->release)
			pthread_cond_wait(&g->cv, &g->gate);
	}
	pthread_mutex_unlock(&g->gate);
	pthread_mutex_lock(&g->lock);
	memcpy(g->vol + off, buf, len);
	pthread_mutex_unlock(&g->lock);
	return 0;
}

static int
gd_flush(void *arg)
{
	struct gdev *g = arg;

	pthread_mutex_lock(&g->lock);
	memcpy(g->dur, g->vol, GD_SIZE);
	pthread_mutex_unlock(&g->lock);
	return 0;
}

struct gd_write {
	clio_file *f;
	const char *buf;
	ssize_t r;
};

static void *
gd_write_main(void *arg)
{
	struct gd_write *w = arg;

	w->r = clio_pwrite(w->f, w->buf, 8192, 512);
	return NULL;
}

/* writeback: a write that goes through to the device (not aligned to
 * the tier's blocks) is still in flight when another thread's fsync
 * flushes the device; after it completes, its own fsync must flush the
 * device again: the first flush may have come before the write landed. */
static void
test_writeback_flush_inflight(void **state)
{
	static const struct clio_dev_callbacks ops = {
		.pread = gd_pread, .pwrite = gd_pwrite, .flush = gd_flush,
	};
	struct gdev *g = calloc(1, sizeof(*g));
	struct clio_conf conf;
	char err[256], *b = malloc(8192);
	struct gd_write w;
	clio_cache *c;
	clio_dev *d;
	clio_file *f, *df;
	pthread_t th;

	(void)state;
	assert_non_null(g);
	assert_non_null(b);
	pthread_mutex_init(&g->lock, NULL);
	pthread_mutex_init(&g->gate, NULL);
	pthread_cond_init(&g->cv, NULL);
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	clio_conf_init(&conf);
	assert_int_equal(clio_conf_set(&conf, "disk_cache", dcdir, err, sizeof(err)), 0);
	assert_int_equal(clio_conf_set(&conf, "disk_cache_mode", "writeback", err,
				       sizeof(err)), 0);
	assert_int_equal(clio_conf_set(&conf, "disk_cache_size", "64M", err, sizeof(err)), 0);
	assert_int_equal(clio_cache_new(&conf, &c), 0);
	assert_int_equal(clio_dev_open_callbacks("gated", GD_SIZE, 512, 0, &ops, g, 4,
						 &d), 0);
	f = tu_open(c, d, CLIO_RDWR);
	df = tu_open(c, d, CLIO_RDWR | CLIO_DIRECT);
	assert_true(param(d, "entries") == 0); /* the tier is there */
	tu_fill(b, 8192, 512, 29);
	g->hold = true;
	w = (struct gd_write){ df, b, 0 };
	assert_int_equal(pthread_create(&th, NULL, gd_write_main, &w), 0);
	pthread_mutex_lock(&g->gate);
	while (!g->held)
		pthread_cond_wait(&g->cv, &g->gate);
	pthread_mutex_unlock(&g->gate);
	assert_int_equal(clio_fsync(f), 0); /* the write is in flight */
	pthread_mutex_lock(&g->gate);
	g->release = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->gate);
	pthread_join(th, NULL);
	assert_int_equal(w.r, 8192);
	assert_int_equal(clio_fsync(df), 0);
	pthread_mutex_lock(&g->lock);
	assert_memory_equal(g->dur + 512, b, 8192);
	pthread_mutex_unlock(&g->lock);
	assert_int_equal(clio_close(df), 0);
	assert_int_equal(clio_close(f), 0);
	assert_int_equal(clio_cache_free(c), 0);
	assert_int_equal(clio_dev_close(d), 0);
	free(b);
	free(g);
}

/* writeback: a dirty block made durable by fsync; a long write straight
 * to the device (through the tier) in flight while clio_revalidate has
 * the tier record the file's version; an fsync once it has landed;
 * kill -9. */
#define WM_BIG (96 * TU_MiB)
struct wm_write {
	clio_dev *d;
	char *buf;
	ssize_t r;
	atomic_bool done;
};

static void *
wm_write_main(void *arg)
{
	struct wm_write *w = arg;

	w->r = clio_dev_pwrite(w->d, w->buf, WM_BIG, FSIZE + 512);
	atomic_store(&w->done, true);
	return NULL;
}

static int
child_wb_meta(void)
{
	struct clio_conf conf;
	struct clio_validator v = { .size = 1, .change = 1 };
	struct wm_write w;
	struct stat sb;
	char err[256], spec[340], *b = malloc(BS);
	clio_cache *c;
	clio_file *f;
	pthread_t th;

	clio_conf_init(&conf);
	snprintf(spec, sizeof(spec), "file:%s?maxio=1M", path);
	w.buf = calloc(1, WM_BIG);
	atomic_init(&w.done, false);
	if (b == NULL || w.buf == NULL ||
	    clio_conf_set(&conf, "disk_cache", dcdir, err, sizeof(err)) < 0 ||
	    clio_conf_set(&conf, "disk_cache_mode", "writeback", err, sizeof(err)) < 0 ||
	    clio_conf_set(&conf, "disk_cache_size", "64M", err, sizeof(err)) < 0 ||
	    clio_cache_new(&conf, &c) < 0 || clio_dev_open(spec, 0, &w.d) < 0 ||
	    clio_open(c, w.d, CLIO_RDWR, &f) < 0)
		return 2;
	tu_fill(b, BS, 100 * BS, 31);
	if (clio_pwrite(f, b, BS, 100 * BS) != BS || clio_fsync(f) != 0 ||
	    clio_validator_set(f, &v) < 0)
		return 3;
	v.change = 2;
	if (pthread_create(&th, NULL, wm_write_main, &w) != 0)
		return 4;
	do /* the write has begun to land */
		if (stat(path, &sb) < 0)
			return 5;
	while (sb.st_size == FSIZE && !atomic_load(&w.done));
	if (clio_revalidate(f, &v) < 0)
		return 6;
	pthread_join(th, NULL);
	if (w.r != WM_BIG || clio_fsync(f) != 0)
		return 7;
	raise(SIGKILL);
	return 8;
}

/* The version the tier records while a write goes through to the device
 * may be older than the file's once the write lands: the fsync after it
 * records the new one, so that after kill -9 the dirty block that fsync
 * acknowledged is written back, not taken for another writer's and put
 * in lost+found. */
static void
test_writeback_meta_inflight(void **state)
{
	struct stack st;
	char *truth, *f;
	int status;

	(void)state;
	nftw(dcdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(dcdir, 0755);
	make_file(32);
	truth = file_read();
	tu_fill(truth + 100 * BS, BS, 100 * BS, 31);
	pid_t p = spawn("child-wbmeta", 0, 0);
	assert_true(p > 0);
	assert_int_equal(waitpid(p, &status, 0), p);
	if (!WIFSIGNALED(status))
		fprintf(stderr, "child exit %d\n", WEXITSTATUS(status));
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(stack_open(&st, "writeback", "64M", 256 * TU_KiB), 0);
	assert_int_equal(param(st.d, "lost_found"), 0);
	assert_int_equal(stack_close(&st), 0);
	f = file_read();
	assert_memory_equal(f + 100 * BS, truth + 100 * BS, BS);
	free(f);
	free(truth);
	assert_int_equal(truncate(path, FSIZE), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c),
		cmocka_unit_test(test_reuse_stale),
		cmocka_unit_test(test_tail_write),
		cmocka_unit_test(test_flip),
		cmocka_unit_test(test_cull),
		cmocka_unit_test(test_cull_open_race),
		cmocka_unit_test(test_queue_full),
		cmocka_unit_test(test_kill9),
		cmocka_unit_test(test_writeback_recover),
		cmocka_unit_test(test_writeback_damaged),
		cmocka_unit_test(test_recover_dir),
		cmocka_unit_test(test_writeback_conflict),
		cmocka_unit_test(test_writeback_times),
		cmocka_unit_test(test_writeback_close),
		cmocka_unit_test(test_truncate),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_foreign_entries),
		cmocka_unit_test(test_meta_bsize),
		cmocka_unit_test(test_damage),
		cmocka_unit_test(test_dev_direct),
		cmocka_unit_test(test_two_procs),
		cmocka_unit_test(test_threads_truncate),
		cmocka_unit_test(test_writeback_kill_rounds),
		cmocka_unit_test(test_writeback_kill_appends),
		cmocka_unit_test(test_writeback_smaller_restart),
		cmocka_unit_test(test_lost_found_fails),
		cmocka_unit_test(test_dir_removed),
		cmocka_unit_test(test_writeback_kill_overwrite),
		cmocka_unit_test(test_writeback_readonly_restart),
		cmocka_unit_test(test_writeback_through_recover),
		cmocka_unit_test(test_writeback_grow),
		cmocka_unit_test(test_writeback_tail),
		cmocka_unit_test(test_writeback_grow_recover),
		cmocka_unit_test(test_writeback_max_size),
		cmocka_unit_test(test_writeback_trunc_recover),
		cmocka_unit_test(test_resize_inflight),
		cmocka_unit_test(test_writeback_unaligned_read),
		cmocka_unit_test(test_revalidate_race),
		cmocka_unit_test(test_writeback_flush_inflight),
		cmocka_unit_test(test_writeback_meta_inflight),
	};
	const char *e = getenv("TIER_SEED");
	ssize_t n;

	if (argc == 5) { /* a child: WHAT DIR SEED ARG */
		snprintf(dir, sizeof(dir), "%s", argv[2]);
		snprintf(dcdir, sizeof(dcdir), "%s/dc", dir);
		snprintf(path, sizeof(path), "%s/file", dir);
		if (strcmp(argv[1], "child-insert") == 0)
			return child_insert((unsigned)atoi(argv[3]), atoi(argv[4]));
		if (strcmp(argv[1], "child-wbr") == 0)
			return child_wb_rounds();
		if (strcmp(argv[1], "child-wba") == 0)
			return child_wb_appends();
		if (strcmp(argv[1], "child-other") == 0)
			return child_other();
		if (strcmp(argv[1], "child-wbthrough") == 0)
			return child_wb_through((unsigned)atoi(argv[3]));
		if (strcmp(argv[1], "child-ow") == 0)
			return child_overwrite();
		if (strcmp(argv[1], "child-wbbig") == 0)
			return child_wb_big((unsigned)atoi(argv[3]));
		if (strcmp(argv[1], "child-wbtrunc") == 0)
			return child_wb_trunc((unsigned)atoi(argv[3]), atoi(argv[4]));
		if (strcmp(argv[1], "child-wbmeta") == 0)
			return child_wb_meta();
		if (strcmp(argv[1], "child-wbgrow") == 0)
			return child_wb_grow((unsigned)atoi(argv[3]));
		if (strcmp(argv[1], "child-wb") == 0)
			return child_wb((unsigned)atoi(argv[3]));
		if (strcmp(argv[1], "child-wbtimes") == 0)
			return child_wb_times((unsigned)atoi(argv[3]));
		return 2;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	seed = e ? (unsigned)atoi(e) : (unsigned)time(NULL);
	printf("test-tier: seed %u (TIER_SEED=%u repeats it)\n", seed, seed);
	if (getenv("CLIO_TEST") != NULL) /* run one: CLIO_TEST=test_flip */
		cmocka_set_test_filter(getenv("CLIO_TEST"));
	return cmocka_run_group_tests(tests, setup, teardown);
}
