/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mountshare - for tests/test-mount-share.sh: several processes use one
 * existing file at once, each in a range of its own (ranges not aligned
 * to pages), and each checks every read against a model of its range.
 *   mountshare FILE NPROC SECONDS
 * FILE must hold NPROC * RANGE bytes.  Each process opens FILE three
 * times before any of them starts, then until SECONDS have passed does
 * seeded random opens (one of its descriptors closed and opened again), pwrite, pread (compared with its model), writes through
 * a MAP_SHARED mapping, FALLOC_FL_PUNCH_HOLE, copy_file_range inside its
 * range, and fsync; at the end it reads its whole range through a new
 * descriptor.  The first wrong byte is printed (offset, got, want) and
 * makes the exit status 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RANGE 777777
#define NFD 3

static uint64_t rs;

static uint64_t
rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 2685821657736338717ull;
}

static int
bad(int c, long op, const char *what)
{
	printf("process %d op %ld: %s: %s\n", c, op, what, strerror(errno));
	return 1;
}

/* Compare n bytes read at off (in the range) with the model. */
static int
check(int c, long op, const char *buf, ssize_t n, size_t len,
      const char *model, size_t off, off_t base)
{
	size_t i = 0;

	if (n == (ssize_t)len && memcmp(buf, model + off, len) == 0)
		return 0;
	while (n > 0 && i < (size_t)n && buf[i] == model[off + i])
		i++;
	printf("process %d op %ld: read %zd of %zu at %lld: byte %lld is %d, not %d\n",
	       c, op, n, len, (long long)(base + off), (long long)(base + off + i),
	       n > 0 ? buf[i] : -1, model[off + i]);
	return 1;
}

static int
run(const char *path, int c, int secs, int go)
{
	off_t base = (off_t)c * RANGE;
	char *model = malloc(RANGE), *buf = malloc(RANGE);
	int fds[NFD], k, fd;
	time_t end;
	long op = 0;
	char x;

	if (model == NULL || buf == NULL)
		return 2;
	for (k = 0; k < NFD; k++)
		if ((fds[k] = open(path, O_RDWR)) < 0)
			return bad(c, 0, "open");
	if (pread(fds[0], model, RANGE, base) != RANGE)
		return bad(c, 0, "first read");
	rs = 0x9e3779b97f4a7c15ull * (uint64_t)(c + 7);
	if (read(go, &x, 1) < 0)	/* every process has opened the file */
		return bad(c, 0, "start");
	end = time(NULL) + secs;
	while (time(NULL) < end) {
		int kind = (int)(rnd() % 10);
		size_t len = 1 + (rnd() % 2 ? rnd() % 9000 : rnd() % (RANGE / 2));
		size_t off = rnd() % (RANGE - len);
		ssize_t n;

		k = (int)(rnd() % NFD);
		op++;
		if (rnd() % 10 == 0) {
			/* a new open while the others write */
			close(fds[k]);
			if ((fds[k] = open(path, O_RDWR)) < 0)
				return bad(c, op, "open");
		}
		fd = fds[k];
		if (kind < 3) {
			memset(buf, 'A' + (int)(rnd() % 26), len);
			buf[0] = (char)op;
			if (pwrite(fd, buf, len, base + (off_t)off) != (ssize_t)len)
				return bad(c, op, "pwrite");
			memcpy(model + off, buf, len);
		} else if (kind < 7) {
			n = pread(fd, buf, len, base + (off_t)off);
			if (check(c, op, buf, n, len, model, off, base))
				return 1;
		} else if (kind == 7) {
			off_t a = (base + (off_t)off) & ~(off_t)4095;
			size_t ml = (size_t)(base + (off_t)(off + len) - a);
			char *m = mmap(NULL, ml, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a);
			int v = 'a' + (int)(rnd() % 26);

			if (m == MAP_FAILED)
				return bad(c, op, "mmap");
			memset(m + (base + (off_t)off - a), v, len);
			memset(model + off, v, len);
			if (rnd() % 2)
				msync(m, ml, MS_SYNC);
			munmap(m, ml);
		} else if (kind == 8) {
			if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      base + (off_t)off, (off_t)len) < 0)
				return bad(c, op, "punch hole");
			memset(model + off, 0, len);
		} else if (rnd() % 3 == 0) {
			if (fsync(fd) < 0)
				return bad(c, op, "fsync");
		} else {
			/* from the first half of the range to the second */
			size_t l = len < RANGE / 2 ? len : RANGE / 2;
			size_t o1 = rnd() % (RANGE / 2 - l + 1);
			size_t o2 = RANGE / 2 + rnd() % (RANGE - RANGE / 2 - l + 1);
			loff_t in = base + (off_t)o1, out = base + (off_t)o2;

			if (copy_file_range(fd, &in, fds[rnd() % NFD], &out, l, 0) != (ssize_t)l)
				return bad(c, op, "copy_file_range");
			memmove(model + o2, model + o1, l);
		}
	}
	for (k = 0; k < NFD; k++)
		close(fds[k]);
	if ((fd = open(path, O_RDONLY)) < 0)
		return bad(c, op, "open at the end");
	if (check(c, op, buf, pread(fd, buf, RANGE, base), RANGE, model, 0, base))
		return 1;
	close(fd);
	free(model);
	free(buf);
	return 0;
}

int
main(int argc, char **argv)
{
	int np, secs, c, st, fails = 0, go[2];

	if (argc != 4 || (np = atoi(argv[2])) < 1 || (secs = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: mountshare FILE NPROC SECONDS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe(go) < 0)
		return 2;
	for (c = 0; c < np; c++) {
		pid_t p = fork();

		if (p < 0)
			return 2;
		if (p == 0) {
			close(go[1]);
			_exit(run(argv[1], c, secs, go[0]));
		}
	}
	close(go[0]);
	sleep(1);	/* the opens */
	close(go[1]);
	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fails++;
	return fails != 0;
}
