/* SPDX-License-Identifier: BSD-2-Clause */
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
	const char *file;	/* kernel, core: the file to use (default: a temporary one) */
	uint64_t size;		/* kernel, core: its size (default 1G, 64M with --quick) */
	int runs;		/* kernel, core, mount: runs per case; the median is reported */
	bool cachegrind;	/* blocksize: CPU cache misses under cachegrind */
};

int cmd_bench_one(int argc, char **argv);

int exp_kernel(const struct bench_opts *bo, struct table *t);
int exp_mount(const struct bench_opts *bo, struct table *t);
int exp_core(const struct bench_opts *bo, struct table *t);

/* kernel.c's tools, shared with benchmount.c */
double bench_median(double *v, int n);		/* of the non-NaN values */
void bench_drop_caches(void);			/* sync, then drop (root) */
/* A note line for cold cases when free memory goes back to a host, or "" */
const char *bench_page_reporting_note(void);
double bench_run_dd(char *const args[]);	/* GNU dd's wall time, or NaN */
int bench_make_file(const char *path, uint64_t size);
/* count seeded random 4K preads of path (size bytes): seconds, or NaN */
double bench_randread(const char *path, uint64_t size, uint64_t count, bool direct);
int plot_table(const struct bench_opts *bo, const struct table *t);

#endif
