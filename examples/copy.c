/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * copy.c - copy a file through libclio's cache in small reads and writes,
 * then print what the cache and the two devices did: the application's
 * requests (the front end) against the transfers that reached storage
 * (the back end), which clustering makes few and large.
 *
 *   copy SOURCE DEST [CHUNK]
 *
 * SOURCE and DEST are device strings (a path, file:/path, sim:..., see
 * libclio(3)); DEST is created if missing and cut to SOURCE's size.
 * CHUNK is the size of each read and write, 4096 bytes by default.
 * Build:  cc -o copy copy.c $(pkg-config --cflags --libs clio)
 */
#include <clio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
fail(const char *what, int err)
{
	fprintf(stderr, "copy: %s: %s\n", what, strerror(-err));
	return 1;
}

static void
print_side(const char *dev, const char *side, const struct clio_iostat *st)
{
	uint64_t n = st->reads + st->writes;
	uint64_t bytes = st->read_bytes + st->write_bytes;

	printf("%s %s: %llu reads, %llu writes, %llu bytes, %.1f KB per transfer\n",
	       dev, side, (unsigned long long)st->reads,
	       (unsigned long long)st->writes, (unsigned long long)bytes,
	       n ? (double)bytes / (double)n / 1024.0 : 0.0);
}

int
main(int argc, char **argv)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	struct clio_cache_stats cs;
	struct clio_dev_stats in_st, out_st;
	clio_cache *cache;
	clio_dev *in_dev, *out_dev;
	clio_file *in, *out;
	size_t chunk = 4096;
	uint64_t off = 0, calls = 0;
	int64_t size;
	char *buf;
	int r;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: copy SOURCE DEST [CHUNK]\n");
		return 2;
	}
	if (argc == 4 && (chunk = strtoul(argv[3], NULL, 0)) == 0) {
		fprintf(stderr, "copy: bad chunk size '%s'\n", argv[3]);
		return 2;
	}
	if ((buf = malloc(chunk)) == NULL)
		return fail("malloc", -12);
	if ((r = clio_cache_new(&conf, &cache)) < 0)
		return fail("clio_cache_new", r);
	if ((r = clio_dev_open(argv[1], CLIO_DEV_RDONLY, &in_dev)) < 0)
		return fail(argv[1], r);
	if ((r = clio_dev_open(argv[2], CLIO_DEV_CREATE, &out_dev)) < 0)
		return fail(argv[2], r);
	if ((r = clio_open(cache, in_dev, CLIO_RDONLY, &in)) < 0 ||
	    (r = clio_open(cache, out_dev, CLIO_WRONLY, &out)) < 0)
		return fail("clio_open", r);
	if ((size = clio_fsize(in)) < 0)
		return fail("clio_fsize", (int)size);
	if ((r = clio_ftruncate(out, 0)) < 0)
		return fail("clio_ftruncate", r);

	while (off < (uint64_t)size) {
		ssize_t n = clio_pread(in, buf, chunk, off);
		if (n < 0)
			return fail("clio_pread", (int)n);
		if (n == 0)
			break;
		ssize_t w = clio_pwrite(out, buf, (size_t)n, off);
		if (w < 0)
			return fail("clio_pwrite", (int)w);
		if (w != n)
			return fail("clio_pwrite: short write", -5);
		off += (uint64_t)n;
		calls++;
	}
	if ((r = clio_fsync(out)) < 0)
		return fail("clio_fsync", r);

	clio_cache_stats(cache, &cs);
	clio_dev_stats(in_dev, &in_st);
	clio_dev_stats(out_dev, &out_st);
	printf("copied %llu bytes in %llu reads and writes of %zu bytes (libclio %s)\n",
	       (unsigned long long)off, (unsigned long long)calls, chunk,
	       clio_version());
	printf("cache: %llu hits, %llu misses, %llu blocks read ahead, "
	       "%llu read clusters, %llu write clusters\n",
	       (unsigned long long)cs.hits, (unsigned long long)cs.misses,
	       (unsigned long long)cs.readahead_blocks,
	       (unsigned long long)cs.read_clusters,
	       (unsigned long long)cs.write_clusters);
	print_side("source", "asked", &in_st.front);
	print_side("source", "issued", &in_st.back);
	print_side("dest", "asked", &out_st.front);
	print_side("dest", "issued", &out_st.back);

	if ((r = clio_close(in)) < 0 || (r = clio_close(out)) < 0)
		return fail("clio_close", r);
	if ((r = clio_dev_close(in_dev)) < 0 || (r = clio_dev_close(out_dev)) < 0)
		return fail("clio_dev_close", r);
	if ((r = clio_cache_free(cache)) < 0)
		return fail("clio_cache_free", r);
	free(buf);
	return 0;
}
