/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wbfault - for tests/test-rbd-faults.sh, write-back across a fault of
 * the device, through the library's public calls only:
 *   wbfault DEVICE SIZE SEED DIR [FSYNCS [RETRY]]
 * writes SIZE bytes of a seeded pattern at offset 0 in writes of 1000
 * bytes (acknowledged, held dirty: no write-behind, no flusher), saves
 * the pattern in DIR/pattern, creates DIR/written; then for K from 1 to
 * FSYNCS (default 2) waits for DIR/goK, fsyncs and writes the result (0
 * or -errno, and strerror's text) into DIR/fsyncK, the last one tried
 * again every 0.2 s for up to RETRY seconds (default 0) while it fails
 * (the tries in DIR/tries); then reads the SIZE
 * bytes back through the cache and from the device itself.  Exit status
 * 0 when the last fsync succeeded, both reads match the pattern and the
 * cache recorded no loss; each wait gives up after 120 s.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <clio.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;

static void
note(const char *name, const char *fmt, int r)
{
	char path[4096];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "w");
	if (fp == NULL) {
		perror(path);
		exit(2);
	}
	fprintf(fp, fmt, r, r < 0 ? strerror(-r) : "");
	fclose(fp);
}

static void
await(const char *name)
{
	char path[4096];
	int i;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (i = 0; i < 12000 && access(path, F_OK) != 0; i++)
		usleep(10000);
	if (access(path, F_OK) != 0) {
		fprintf(stderr, "wbfault: no %s after 120 s\n", path);
		exit(2);
	}
}

static int
check(const char *what, const unsigned char *got, const unsigned char *want,
      size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (got[i] != want[i]) {
			fprintf(stderr, "wbfault: %s: byte %zu is %u, not %u\n", what, i,
				got[i], want[i]);
			return 1;
		}
	return 0;
}

int
main(int argc, char **argv)
{
	struct clio_conf conf;
	clio_cache *c;
	clio_dev *d;
	clio_file *f;
	unsigned char *pat, *back;
	uint64_t x;
	size_t size, off, n;
	char err[512], path[4096], name[32];
	FILE *fp;
	int r = 0, k, fsyncs = 2, tries, retry = 0, bad = 0;

	if (argc < 5 || argc > 7) {
		fprintf(stderr, "usage: wbfault DEVICE SIZE SEED DIR [FSYNCS [RETRY]]\n");
		return 2;
	}
	if (argc >= 6 && (fsyncs = atoi(argv[5])) < 1) {
		fprintf(stderr, "wbfault: bad FSYNCS '%s'\n", argv[5]);
		return 2;
	}
	if (argc == 7 && (retry = atoi(argv[6])) < 0) {
		fprintf(stderr, "wbfault: bad RETRY '%s'\n", argv[6]);
		return 2;
	}
	size = strtoull(argv[2], NULL, 0);
	x = strtoull(argv[3], NULL, 0) | 1;
	dir = argv[4];
	pat = malloc(size);
	back = malloc(size);
	if (pat == NULL || back == NULL)
		return 2;
	for (off = 0; off < size; off++) { /* xorshift64 */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		pat[off] = (unsigned char)(x >> 32);
	}
	snprintf(path, sizeof(path), "%s/pattern", dir);
	if ((fp = fopen(path, "w")) == NULL || fwrite(pat, 1, size, fp) != size ||
	    fclose(fp) != 0) {
		perror(path);
		return 2;
	}
	clio_conf_init(&conf);
	/* the cache keeps an eighth of itself in failed buffers: all of them */
	conf.cache_size = 16 * (uint64_t)size + (4u << 20);
	if (clio_conf_set(&conf, "write_behind", "0", err, sizeof(err)) < 0 ||
	    clio_conf_set(&conf, "flusher", "0", err, sizeof(err)) < 0) {
		fprintf(stderr, "wbfault: %s\n", err);
		return 2;
	}
	if ((r = clio_cache_new(&conf, &c)) < 0) {
		fprintf(stderr, "wbfault: clio_cache_new: %s\n", strerror(-r));
		return 2;
	}
	if ((r = clio_dev_open_err(argv[1], 0, &d, err, sizeof(err))) < 0) {
		fprintf(stderr, "wbfault: %s\n", err);
		return 2;
	}
	if ((r = clio_open(c, d, CLIO_RDWR, &f)) < 0) {
		fprintf(stderr, "wbfault: clio_open: %s\n", strerror(-r));
		return 2;
	}
	for (off = 0; off < size; off += n) {
		n = size - off < 1000 ? size - off : 1000;
		if (clio_pwrite(f, pat + off, n, off) != (ssize_t)n) {
			fprintf(stderr, "wbfault: pwrite at %zu failed\n", off);
			return 2;
		}
	}
	note("written", "%d%s\n", 0);
	for (k = 1; k <= fsyncs; k++) {
		snprintf(name, sizeof(name), "go%d", k);
		await(name);
		r = clio_fsync(f);
		for (tries = 1; r < 0 && k == fsyncs && tries <= retry * 5; tries++) {
			usleep(200000);
			r = clio_fsync(f);
		}
		if (k == fsyncs)
			note("tries", "%d%s\n", tries);
		snprintf(name, sizeof(name), "fsync%d", k);
		note(name, "%d %s\n", r);
		printf("wbfault: fsync %d: %d %s\n", k, r, r < 0 ? strerror(-r) : "");
		fflush(stdout);
	}
	if (r < 0)
		bad = 1;
	if (clio_pread(f, back, size, 0) != (ssize_t)size)
		bad = 1, fprintf(stderr, "wbfault: pread through the cache failed\n");
	else
		bad |= check("through the cache", back, pat, size);
	memset(back, 0, size);
	if (clio_dev_pread(d, back, size, 0) != (ssize_t)size)
		bad = 1, fprintf(stderr, "wbfault: pread from the device failed\n");
	else
		bad |= check("from the device", back, pat, size);
	{
		struct clio_cache_stats st;

		clio_cache_stats(c, &st);
		printf("wbfault: write errors %llu, bytes lost %llu\n",
		       (unsigned long long)st.write_errors, (unsigned long long)st.lost_bytes);
		if (st.lost_bytes != 0)
			bad = 1;
	}
	if ((r = clio_close(f)) < 0)
		bad = 1, fprintf(stderr, "wbfault: clio_close: %s\n", strerror(-r));
	clio_cache_free(c);
	clio_dev_close(d);
	free(pat);
	free(back);
	return bad;
}
