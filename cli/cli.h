/*
 * cli.h - what the clio command's source files share.
 */
#ifndef CLIO_CLI_H
#define CLIO_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "clio.h"

#define CLIO_VERSION "0.1"

int cmd_dd(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_bench_one(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_info(int argc, char **argv);

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
void fmt_bytes_human(char *out, size_t len, double bytes, int si);
void print_iostat_line(FILE *fp, const char *name, const struct clio_iostat *b,
		       const struct clio_iostat *front, double elapsed);
void json_string(FILE *fp, const char *s);

#endif
