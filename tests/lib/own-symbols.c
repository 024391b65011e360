/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * own-symbols.c - a program that defines functions named like libclio's
 * internal ones (parse_size, getblk, bio_submit, errno_name,
 * now_monotonic, dev_default_qd) and uses the library: it must link
 * against libclio.so and libclio.a alike, and get its own functions.
 */
#include <clio.h>
#include <stdio.h>
#include <string.h>

int dev_default_qd = 99;

long parse_size(const char *s) { return (long)strlen(s); }
int getblk(int n) { return n * 2; }
int bio_submit(void) { return 7; }
const char *errno_name(int e) { return e == 5 ? "mine" : "?"; }
double now_monotonic(void) { return 42.0; }

int
main(void)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	clio_cache *cache;
	clio_dev *dev;
	clio_file *f;
	char out[6] = "";

	if (clio_cache_new(&conf, &cache) < 0 ||
	    clio_dev_open("mem:size=1M", 0, &dev) < 0 ||
	    clio_open(cache, dev, CLIO_RDWR, &f) < 0 ||
	    clio_pwrite(f, "hello", 5, 70000) != 5 || clio_fsync(f) < 0 ||
	    clio_pread(f, out, 5, 70000) != 5 || clio_close(f) < 0 ||
	    clio_dev_close(dev) < 0 || clio_cache_free(cache) < 0) {
		fprintf(stderr, "own-symbols: libclio failed\n");
		return 1;
	}
	printf("libclio read '%s'; own: %ld %d %d %s %.0f %d\n", out,
	       parse_size("1234"), getblk(21), bio_submit(), errno_name(5),
	       now_monotonic(), dev_default_qd);
	return 0;
}
