/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli.h - what the clio command's source files share.
 */
#ifndef CLIO_CLI_H
#define CLIO_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "clio.h"

int cmd_dd(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_bench_one(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_serve(int argc, char **argv);
/* fusermount3 -u of the FUSE mount on abs (absolute), tried again for up
 * to 3 s while it is busy: 0, or a sysexits code (mount.c). */
int fuse_unmount_retrying(const char *abs);

/* main.c: --help (usage on stdout) or --version among a subcommand's
 * arguments, before any "--": prints and returns 0; otherwise -1. */
int cli_help_version(int argc, char **argv, void (*usage)(FILE *),
		     const char *usage_text);
/* main.c: after getopt_long returned C ('?' or ':'; opterr 0, the
 * optstring starting with ':'): one line naming the option, as GNU
 * getopt says it after CMD ("clio stat"); returns EX_USAGE. */
int cli_bad_option(const char *cmd, int c, char **argv);

/* workload.c: dd-like workloads run in-process (for clio bench) */
enum wl_kind { WL_WRITE, WL_READ, WL_REWRITE, WL_RANDREAD };
struct wl_spec {
	const char *dev;
	struct clio_conf conf;
	enum wl_kind kind;
	uint64_t bs, count, offset;
	bool direct, fsync_end, warm;
};
struct wl_result {
	double elapsed, cpu_s;
	bool is_virtual;
	uint64_t bytes;
	struct clio_dev_stats st;
	struct clio_cache_stats cs;
};
struct wl_figures {
	uint64_t transfers;
	double kbt, tps, dev_mbs, app_mbs; /* KiB, 1/s, MiB/s, 10^6 B/s */
};
int wl_run(const struct wl_spec *w, struct wl_result *res, char *err,
	   size_t errlen);
void wl_figures(const struct wl_result *res, struct wl_figures *fig);

/* report.c: human and JSON renderings of statistics */
/* A device's open error without the device string or path it begins
 * with, for a message that names the device already. */
const char *cli_reason(const char *err, const char *spec);
/* s for a one-line message: control characters as '?' (in buf) */
const char *cli_printable(const char *s, char *buf, size_t len);
void fmt_bytes_human(char *out, size_t len, double bytes, int si);
void print_iostat_line(FILE *fp, const char *name, const struct clio_iostat *b,
		       const struct clio_iostat *front, double elapsed);
void json_string(FILE *fp, const char *s);
/* Counters of one side of a device, or of a mount's requests; timed:
 * read_s, write_s (sums of request times) and queue_s (integral of the
 * requests in flight) are measured. */
struct io_counts {
	double reads, writes, read_bytes, write_bytes;
	double read_s, write_s, busy_s, queue_s;
	bool timed;
};
void io_counts_of(struct io_counts *c, const struct clio_iostat *s);
/* The figures of an interval of dt seconds (before NULL: from zero). */
struct iostat_x {
	double r_s, w_s, rkb_s, wkb_s, rareq_kb, wareq_kb;
	double r_await_ms, w_await_ms, aqu_sz;	/* NAN unless timed */
	double util_pct;
	double kbt, tps, mbs;			/* the BSD view */
};
void iostat_x_of(struct iostat_x *x, const struct io_counts *now,
		 const struct io_counts *before, double dt);
/* sysstat's iostat -x: two header lines (names; when, then the units),
 * a row per device. */
void iostat_x_header(FILE *fp, const char *when, int namew);
void iostat_x_row(FILE *fp, const char *name, int namew, const struct iostat_x *x);
/* BSD's iostat: a time column, then KB/t tps MB/s per device (namew >= 22). */
void iostat_bsd_header(FILE *fp, const char *const *names, int n, int namew);
void iostat_bsd_cols(FILE *fp, int namew, const struct iostat_x *x);
/* KB/t tps MB/s in 7, 6 and 7 columns; a figure too wide for its column
 * loses decimals first. */
void iostat_bsd_fields(FILE *fp, double kbt, double tps, double mbs);
/* name cut to width from the left ("...tail"); the least width >= minw
 * at which the names stay distinct. */
void name_shorten(char *out, size_t len, const char *name, int width);
int names_width(const char *const *names, int n, int minw);

/* mounttab.c: what is mounted on a directory (/proc/self/mountinfo) */
struct mounttab_entry {
	char majmin[32];	/* the mount's st_dev, "MAJ:MIN" */
	char dir[4096];		/* the mount point */
	char fstype[64];	/* "fuse.clio" for clio mount */
	char source[4096];	/* what clio mount was given (its fsname) */
	long uid;		/* FUSE's user_id= (who mounted it), or -1 */
};
/* The mount on top of abs (absolute, canonical): 0, or -ENOENT if abs
 * is no mount point. */
int mounttab_find(const char *abs, struct mounttab_entry *e);
bool mounttab_is_clio(const struct mounttab_entry *e);
/* realpath(path), or for a dead FUSE mount (ENOTCONN) its parent's
 * realpath and its name; 0 or -errno. */
int mounttab_abspath(const char *path, char *abs, size_t len);
/* The mount points of every clio mount (malloc'ed, at most max); how many. */
int mounttab_clio_dirs(char **out, int max);

#endif
