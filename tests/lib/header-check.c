/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * header-check.c - a program that includes clio.h and is valid C99, C11
 * and C++11 to C++20: it prints CLIO_CONF_DEFAULTS as compiled and what
 * clio_conf_init() sets, and checks that CLIO_VERSION, the
 * CLIO_VERSION_MAJOR/MINOR/PATCH numbers and clio_version() agree.
 */
#include <clio.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static void
print_conf(const char *name, const struct clio_conf *c)
{
	printf("%s: bsize=%u maxbsize=%u maxphys=%u read_max=%u seqmax=%u "
	       "cache_size=%llu dirty_hi=%u dirty_lo=%u dirty_age=%g "
	       "cluster=%d rbw=%d write_behind=%u queue_depth=%u flusher=%u "
	       "flush_behind=%llu\n",
	       name, (unsigned)c->bsize, (unsigned)c->maxbsize,
	       (unsigned)c->maxphys, (unsigned)c->read_max,
	       (unsigned)c->seqmax, (unsigned long long)c->cache_size,
	       (unsigned)c->dirty_hi, (unsigned)c->dirty_lo, c->dirty_age,
	       (int)c->cluster, (int)c->rbw, (unsigned)c->write_behind,
	       (unsigned)c->queue_depth, (unsigned)c->flusher,
	       (unsigned long long)c->flush_behind);
}

int
main(void)
{
	struct clio_conf macro = CLIO_CONF_DEFAULTS;
	struct clio_conf call;
	char numbers[64];

	memset(&call, 0xff, sizeof(call));
	if (clio_conf_init(&call) != 0 || clio_conf_init(NULL) != -EINVAL) {
		fprintf(stderr, "clio_conf_init failed\n");
		return 1;
	}
	print_conf("macro", &macro);
	print_conf("call", &call);
	snprintf(numbers, sizeof(numbers), "%d.%d.%d", CLIO_VERSION_MAJOR,
		 CLIO_VERSION_MINOR, CLIO_VERSION_PATCH);
	if (strcmp(numbers, CLIO_VERSION) != 0 ||
	    strcmp(clio_version(), CLIO_VERSION) != 0) {
		fprintf(stderr, "versions differ: numbers %s, CLIO_VERSION %s, "
			"clio_version() %s\n", numbers, CLIO_VERSION,
			clio_version());
		return 1;
	}
	printf("version: %s\n", clio_version());
	return 0;
}
