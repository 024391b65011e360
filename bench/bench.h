/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench.h - what the parts of `clio bench` share.
 */
#ifndef CLIO_BENCH_H
#define CLIO_BENCH_H

#include <stdbool.h>
#include <stddef.h>
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
	bool sim;		/* nfs: the simulated server (virtual time) */
	bool all;		/* running as part of `clio bench all` */
};

int cmd_bench_one(int argc, char **argv);

int exp_kernel(const struct bench_opts *bo, struct table *t);
int exp_mount(const struct bench_opts *bo, struct table *t);
int exp_core(const struct bench_opts *bo, struct table *t);
int exp_diskcache(const struct bench_opts *bo, struct table *t); /* benchtier.c */
int exp_nbd(const struct bench_opts *bo, struct table *t);
int exp_nbd_copy(const struct bench_opts *bo, struct table *t);
/* nfs: benchnfs.c dispatches to the simulated run (benchnfssim.c) or to
 * the run against a real server (0, -1 on failure, or a sysexits code) */
int exp_nfs(const struct bench_opts *bo, struct table *t);
int bench_nfs_sim(const struct bench_opts *bo, struct table *t);
int bench_nfs_real(const struct bench_opts *bo, struct table *t);
int exp_rbd(const struct bench_opts *bo, struct table *t);	/* benchrbd.c */

/* kernel.c's tools, shared with benchmount.c */
double bench_median(double *v, int n);		/* of the non-NaN values */
void bench_drop_caches(void);			/* sync, then drop (root) */
/* A note line for cold cases when free memory goes back to a host, or "" */
const char *bench_page_reporting_note(void);
double bench_run_quiet(char *const argv[]); /* wall time of argv exiting 0, or NaN */
int bench_make_file(const char *path, uint64_t size);
/* count seeded random 4K preads of path (size bytes): seconds, or NaN */
double bench_randread(const char *path, uint64_t size, uint64_t count, bool direct);
/* benchmount.c's tools, shared with benchmeta.c */
#include <signal.h>
#include <sys/types.h>
extern volatile sig_atomic_t bench_mount_stop;	/* set by the handler */
void bench_mount_on_signal(int sig);
bool bench_fuse_mounted(const char *mnt);	/* a fuse mount at mnt? */
/* Start a FUSE daemon (argv) in its own process group and wait until mnt
 * is mounted: its pid, or -1 (reaped). */
pid_t bench_fuse_start(char *const argv[], const char *mnt);
/* Unmount and reap: the daemon's exit status, or -1. */
int bench_fuse_stop(const char *mnt, pid_t pid);
bool bench_have(const char *cmd);		/* does `cmd --version` run? */
/* libfuse's passthrough_ll beside self (the clio binary), compiled there
 * if missing: its path in buf, or NULL if it cannot be built. */
const char *bench_passthrough_ll(const char *self, char *buf, size_t len);
int exp_mount_meta(const struct bench_opts *bo, struct table *t);
int plot_table(const struct bench_opts *bo, const struct table *t);

#endif
