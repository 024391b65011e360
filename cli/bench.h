/*
 * bench.h - what the parts of `clio bench` share.
 */
#ifndef CLIO_BENCH_H
#define CLIO_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "table.h"

struct bench_opts {
	bool quick, json;
	const char *plot_dir;
	const char *file;	/* kernel: the file to use (default: a temporary one) */
	uint64_t size;		/* kernel: its size (default 1G, 64M with --quick) */
	int runs;		/* kernel: runs per case; the median is reported */
	bool cachegrind;	/* blocksize: CPU cache misses under cachegrind */
};

int cmd_bench_one(int argc, char **argv);

int exp_kernel(const struct bench_opts *bo, struct table *t);
int plot_table(const struct bench_opts *bo, const struct table *t);

#endif
