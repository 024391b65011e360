/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * readers.c - several threads read one file through a shared libclio
 * cache and check every byte they get.
 *
 *   readers FILE [THREADS [MIB]]
 *
 * It writes FILE (MIB MiB, 16 by default) through the cache with a pattern
 * in which each 8-byte word holds its own offset XOR 0x636c696f00000000
 * ("clio"), in native byte order, and syncs it.  Then, through a new cache
 * of an eighth of the file (so that blocks are evicted and read again),
 * THREADS threads (4 by default) read it back: the first from start to end
 * in 4 KiB reads (sequential read-ahead), the others at random offsets and
 * lengths.  Prints the bytes read and the bad bytes found, and exits 1 if
 * there was any bad byte or error.
 * Build:  cc -o readers readers.c $(pkg-config --cflags --libs clio)
 */
#include <clio.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC 0x636c696f00000000ull
#define RANDOM_READS 2000
#define MAX_READ (64 * 1024)

struct reader {
	pthread_t thread;
	clio_file *file;
	uint64_t size;
	uint64_t seed;		/* of next_random, not 0 */
	int sequential;
	uint64_t bytes, bad;
	int err;
};

/* xorshift64: a thread's own random numbers, the same on every run */
static uint64_t
next_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

static unsigned char
expected_byte(uint64_t off)
{
	uint64_t word = (off & ~7ull) ^ MAGIC;
	unsigned char b[8];

	memcpy(b, &word, sizeof(b));
	return b[off & 7];
}

/* Read len bytes at off and count the ones that differ from the pattern. */
static int
read_and_check(struct reader *rd, unsigned char *buf, size_t len, uint64_t off)
{
	ssize_t n = clio_pread(rd->file, buf, len, off);

	if (n < 0)
		return (int)n;
	if ((uint64_t)n != (off + len <= rd->size ? len : rd->size - off))
		return -5; /* short read inside the file: EIO */
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] != expected_byte(off + (uint64_t)i))
			rd->bad++;
	rd->bytes += (uint64_t)n;
	return 0;
}

static void *
reader_main(void *arg)
{
	struct reader *rd = arg;
	unsigned char *buf = malloc(MAX_READ);

	if (buf == NULL) {
		rd->err = -12;
		return NULL;
	}
	if (rd->sequential) {
		for (uint64_t off = 0; off < rd->size && rd->err == 0; off += 4096)
			rd->err = read_and_check(rd, buf, 4096, off);
	} else {
		for (int i = 0; i < RANDOM_READS && rd->err == 0; i++) {
			uint64_t off = next_random(&rd->seed) % rd->size;
			size_t len = 1 + (size_t)(next_random(&rd->seed) % MAX_READ);
			if (len > rd->size - off)
				len = (size_t)(rd->size - off);
			rd->err = read_and_check(rd, buf, len, off);
		}
	}
	free(buf);
	return NULL;
}

static int
fail(const char *what, int err)
{
	fprintf(stderr, "readers: %s: %s\n", what, strerror(-err));
	return 1;
}

/* Write the pattern over the whole file through a cache of its own. */
static int
write_pattern(const char *path, uint64_t size)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	uint64_t words[512];
	clio_cache *cache;
	clio_dev *dev;
	clio_file *f;
	int r;

	if ((r = clio_cache_new(&conf, &cache)) < 0)
		return fail("clio_cache_new", r);
	if ((r = clio_dev_open(path, CLIO_DEV_CREATE, &dev)) < 0)
		return fail(path, r);
	if ((r = clio_open(cache, dev, CLIO_RDWR, &f)) < 0)
		return fail("clio_open", r);
	if ((r = clio_ftruncate(f, 0)) < 0)
		return fail("clio_ftruncate", r);
	for (uint64_t off = 0; off < size; off += sizeof(words)) {
		for (size_t i = 0; i < 512; i++)
			words[i] = (off + 8 * i) ^ MAGIC;
		ssize_t n = clio_pwrite(f, words, sizeof(words), off);
		if (n != (ssize_t)sizeof(words))
			return fail("clio_pwrite", n < 0 ? (int)n : -5);
	}
	if ((r = clio_fsync(f)) < 0)
		return fail("clio_fsync", r);
	if ((r = clio_close(f)) < 0 || (r = clio_dev_close(dev)) < 0 ||
	    (r = clio_cache_free(cache)) < 0)
		return fail("closing after the write", r);
	return 0;
}

int
main(int argc, char **argv)
{
	struct clio_conf conf;
	struct clio_cache_stats cs;
	struct reader *readers;
	clio_cache *cache;
	clio_dev *dev;
	clio_file *f;
	int nthreads = argc > 2 ? atoi(argv[2]) : 4;
	uint64_t mib = argc > 3 ? strtoull(argv[3], NULL, 10) : 16;
	uint64_t size = mib << 20, bytes = 0, bad = 0;
	int r, errors = 0;

	if (argc < 2 || argc > 4 || nthreads < 1 || nthreads > 64 || mib < 1) {
		fprintf(stderr, "usage: readers FILE [THREADS (1-64) [MIB]]\n");
		return 2;
	}
	if (write_pattern(argv[1], size) != 0)
		return 1;

	/* The run-time form of CLIO_CONF_DEFAULTS, then a small cache. */
	if ((r = clio_conf_init(&conf)) < 0)
		return fail("clio_conf_init", r);
	conf.cache_size = size / 8 > 1048576 ? size / 8 : 1048576;
	if ((r = clio_cache_new(&conf, &cache)) < 0)
		return fail("clio_cache_new", r);
	if ((r = clio_dev_open(argv[1], CLIO_DEV_RDONLY, &dev)) < 0)
		return fail(argv[1], r);
	if ((r = clio_open(cache, dev, CLIO_RDONLY, &f)) < 0)
		return fail("clio_open", r);
	if (clio_fsize(f) != (int64_t)size) {
		fprintf(stderr, "readers: %s has %" PRId64 " bytes, not %" PRIu64 "\n",
			argv[1], clio_fsize(f), size);
		return 1;
	}
	if ((readers = calloc((size_t)nthreads, sizeof(*readers))) == NULL)
		return fail("calloc", -12);
	for (int i = 0; i < nthreads; i++) {
		readers[i] = (struct reader){ .file = f, .size = size,
					      .seed = 1234u + (uint64_t)i,
					      .sequential = i == 0 };
		if ((r = pthread_create(&readers[i].thread, NULL, reader_main,
					&readers[i])) != 0)
			return fail("pthread_create", -r);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(readers[i].thread, NULL);
		bytes += readers[i].bytes;
		bad += readers[i].bad;
		if (readers[i].err < 0) {
			fprintf(stderr, "readers: thread %d: %s\n", i,
				strerror(-readers[i].err));
			errors++;
		}
	}
	clio_cache_stats(cache, &cs);
	printf("readers: %d threads read %" PRIu64 " bytes of a %" PRIu64
	       "-byte file, %" PRIu64 " bad bytes, %d errors\n",
	       nthreads, bytes, size, bad, errors);
	printf("cache: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
	       " evictions, %" PRIu64 " blocks read ahead\n",
	       cs.hits, cs.misses, cs.evictions, cs.readahead_blocks);
	free(readers);
	if ((r = clio_close(f)) < 0 || (r = clio_dev_close(dev)) < 0 ||
	    (r = clio_cache_free(cache)) < 0)
		return fail("closing", r);
	return bad == 0 && errors == 0 ? 0 : 1;
}
