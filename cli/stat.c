/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stat.c - `clio stat [--json] [MOUNTPOINT...]` and
 * `clio stat -i SECONDS [-c COUNT] [-x] [MOUNTPOINT...]` (and --raw: the
 * control file's lines as they are, for scripts): the live
 * statistics of clio mounts, read from each one's control file
 * MOUNTPOINT/.clio-stats (fuse/mountstats.c, parsed by cli/statsnap.c).
 * Without a MOUNTPOINT: every clio mount in /proc/self/mountinfo.
 *
 * Invariants: each report reads one snapshot per mount (one open of the
 * control file), so its figures agree with each other; an interval's
 * rates divide differences of two snapshots by the difference of their
 * uptime_s (the daemon's clock); the first report of -i covers the time
 * since the mount, as iostat's first covers the time since boot.
 *
 * Exit 66 (EX_NOINPUT) with a one-line error when a MOUNTPOINT is not
 * the root of a clio mount (the others are still reported, with -i too;
 * one that goes away during -i ends it); 64 for bad
 * arguments; 74 when standard output cannot be written.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>

#include "cli.h"
#include "stat.h"

#define MAX_MOUNTS 64
#define NAME_MIN_W 24

static void
usage(FILE *fp)
{
	fprintf(fp,
		"usage: clio stat [--json | --raw] [MOUNTPOINT...]\n"
		"       clio stat -i SECONDS [-c COUNT] [-x] [MOUNTPOINT...]\n"
		"The statistics of clio mounts (all of them without MOUNTPOINT): a\n"
		"summary per mount (totals since the mount) and a line per open file;\n"
		"--json: the same as JSON; --raw: the control file's key: value lines;\n"
		"-i: a report every SECONDS, COUNT times,\n"
		"KB/t tps MB/s as BSD's iostat, or with -x r/s w/s rkB/s wkB/s\n"
		"rareq-sz wareq-sz r_await w_await aqu-sz %%util as sysstat's iostat -x.\n"
		"See clio(1).\n");
}

/* ----------------------------------------------------------- figures */

#define G(s, key) snap_num((s)->kv, (s)->nkv, key)
#define F(f, key) snap_num((f)->kv, (f)->nkv, key)

static void
requests_of(const struct snap *s, struct io_counts *c)
{
	c->reads = G(s, "requests_reads");
	c->writes = G(s, "requests_writes");
	c->read_bytes = G(s, "requests_read_bytes");
	c->write_bytes = G(s, "requests_write_bytes");
	c->read_s = G(s, "requests_read_time_s");
	c->write_s = G(s, "requests_write_time_s");
	c->busy_s = G(s, "requests_busy_s");
	c->queue_s = G(s, "requests_queue_s");
	c->timed = true;
}

static void
total_of(const struct snap *s, const char *side, struct io_counts *c)
{
	char key[64];

	memset(c, 0, sizeof(*c));
#define T(field, name) \
	snprintf(key, sizeof(key), "total_%s_%s", side, name); \
	c->field = G(s, key)
	T(reads, "reads");
	T(writes, "writes");
	T(read_bytes, "read_bytes");
	T(write_bytes, "write_bytes");
	T(busy_s, "busy_s");
	T(read_s, "read_time_s");
	T(write_s, "write_time_s");
#undef T
	c->queue_s = c->read_s + c->write_s; /* Little's law */
	c->timed = true;
}

static void
file_side(const struct snap_file *f, const char *side, struct io_counts *c)
{
	char key[64];

	memset(c, 0, sizeof(*c));
#define S(field, name) \
	snprintf(key, sizeof(key), "%s_%s", side, name); \
	c->field = F(f, key)
	S(reads, "reads");
	S(writes, "writes");
	S(read_bytes, "read_bytes");
	S(write_bytes, "write_bytes");
	S(busy_s, "busy_s");
	S(read_s, "read_time_s");
	S(write_s, "write_time_s");
#undef S
	c->queue_s = c->read_s + c->write_s; /* Little's law */
	c->timed = true;
}

static const char *
human(char *buf, size_t len, double bytes)
{
	fmt_bytes_human(buf, len, bytes, 0);
	return buf;
}

static double
ratio(double a, double b)
{
	return b > 0 ? a / b : 0.0;
}

/* ----------------------------------------------------------- summary */

static void
print_side_summary(FILE *fp, const char *label, const struct io_counts *c)
{
	char rb[32], wb[32];

	fprintf(fp, "  %-9s reads %.0f (%s), writes %.0f (%s), %.2f KB/t\n", label,
		c->reads, human(rb, sizeof(rb), c->read_bytes), c->writes,
		human(wb, sizeof(wb), c->write_bytes),
		ratio((c->read_bytes + c->write_bytes) / 1024.0, c->reads + c->writes));
}

static void
print_summary(FILE *fp, const char *mnt, const struct snap *s)
{
	const char *src = snap_str(s->kv, s->nkv, "source");
	struct io_counts req, front, back;
	struct iostat_x x;
	char b1[32], b2[32];
	size_t i;
	int w = 4;

	requests_of(s, &req);
	total_of(s, "front", &front);
	total_of(s, "back", &back);
	iostat_x_of(&x, &req, NULL, G(s, "uptime_s"));
	fprintf(fp, "%s: clio mount of %s, up %.1f s\n", mnt, src ? src : "?",
		G(s, "uptime_s"));
	fprintf(fp, "  requests  reads %.0f (%s), writes %.0f (%s), r_await %.3f ms, "
		"w_await %.3f ms, %%util %.1f\n", req.reads,
		human(b1, sizeof(b1), req.read_bytes), req.writes,
		human(b2, sizeof(b2), req.write_bytes), x.r_await_ms, x.w_await_ms,
		x.util_pct);
	print_side_summary(fp, "to cache", &front);
	print_side_summary(fp, "storage", &back);
	fprintf(fp, "  clustering %.2f requests/transfer, %.0f flushes, %.0f errors; "
		"files closed since the mount: %.0f\n",
		ratio(front.reads + front.writes, back.reads + back.writes),
		G(s, "total_back_flushes"), G(s, "total_back_errors"),
		G(s, "devices_closed"));
	fprintf(fp, "  cache     %.0f hits, %.0f misses (%.2f%% hits), %s cached, "
		"%s dirty\n", G(s, "hits"), G(s, "misses"), G(s, "hit_rate_pct"),
		human(b1, sizeof(b1), G(s, "cached_bytes")),
		human(b2, sizeof(b2), G(s, "dirty_bytes")));
	fprintf(fp, "  clusters  %.0f read, %.0f write, %.0f blocks read ahead "
		"(%.0f used), %.0f read-before-write\n", G(s, "read_clusters"),
		G(s, "write_clusters"), G(s, "readahead_blocks"),
		G(s, "readahead_used"), G(s, "rbw_reads"));
	fprintf(fp, "  errors    %.0f write-back errors, %s lost\n",
		G(s, "write_errors"), human(b1, sizeof(b1), G(s, "lost_bytes")));
	fprintf(fp, "  open files: %zu\n", s->nfiles);
	if (s->nfiles == 0)
		return;
	for (i = 0; i < s->nfiles; i++)
		if ((int)strlen(s->files[i].path) > w)
			w = (int)strlen(s->files[i].path);
	if (w > 40)
		w = 40;
	fprintf(fp, "    %-*s %10s %10s %10s %10s %8s %6s  %s\n", w, "file", "read",
		"written", "dev read", "dev write", "KB/t", "req/xf", "device");
	for (i = 0; i < s->nfiles; i++) {
		const struct snap_file *f = &s->files[i];
		struct io_counts fr, bk;
		char name[256], r1[32], r2[32], r3[32], r4[32];

		file_side(f, "front", &fr);
		file_side(f, "back", &bk);
		name_shorten(name, sizeof(name), f->path, w);
		fprintf(fp, "    %-*s %10s %10s %10s %10s %8.2f %6.2f  %s\n", w, name,
			human(r1, sizeof(r1), fr.read_bytes),
			human(r2, sizeof(r2), fr.write_bytes),
			human(r3, sizeof(r3), bk.read_bytes),
			human(r4, sizeof(r4), bk.write_bytes),
			ratio((bk.read_bytes + bk.write_bytes) / 1024.0, bk.reads + bk.writes),
			ratio(fr.reads + fr.writes, bk.reads + bk.writes), f->device);
	}
}

/* -------------------------------------------------------------- JSON */

/* A value: a number as it is, anything else as a string. */
static void
json_value(FILE *fp, const char *v)
{
	char *end;

	errno = 0;
	(void)strtod(v, &end);
	if (*v != '\0' && *end == '\0' && errno == 0 && strspn(v, "-0123456789.eE+") == strlen(v))
		fputs(v, fp);
	else
		json_string(fp, v);
}

/* The keys starting with prefix, without it, as one object. */
static void
json_group(FILE *fp, const struct snap_kv *kv, size_t n, const char *prefix)
{
	size_t i, pl = strlen(prefix);
	const char *sep = "";

	fputc('{', fp);
	for (i = 0; i < n; i++) {
		if (strncmp(kv[i].key, prefix, pl) != 0)
			continue;
		fprintf(fp, "%s", sep);
		json_string(fp, kv[i].key + pl);
		fputs(": ", fp);
		json_value(fp, kv[i].val);
		sep = ", ";
	}
	fputc('}', fp);
}

static bool
is_cache_key(const char *k)
{
	return strncmp(k, "requests_", 9) != 0 && strncmp(k, "total_", 6) != 0 &&
	       strcmp(k, "mountpoint") != 0 && strcmp(k, "source") != 0 &&
	       strcmp(k, "uptime_s") != 0 && strcmp(k, "devices") != 0 &&
	       strcmp(k, "devices_closed") != 0 && strcmp(k, "devices_idle") != 0;
}

static void
print_json(FILE *fp, const char *mnt, const struct snap *s)
{
	const char *src = snap_str(s->kv, s->nkv, "source");
	const char *mp = snap_str(s->kv, s->nkv, "mountpoint");
	struct io_counts req;
	struct iostat_x x;
	const char *sep = "";
	size_t i;

	requests_of(s, &req);
	iostat_x_of(&x, &req, NULL, G(s, "uptime_s"));
	fputs("{\"mountpoint\": ", fp);
	json_string(fp, mp != NULL ? mp : mnt); /* the daemon's: absolute */
	fputs(", \"source\": ", fp);
	json_string(fp, src ? src : "");
	fprintf(fp, ", \"uptime_s\": %.3f, \"cache\": {", G(s, "uptime_s"));
	for (i = 0; i < s->nkv; i++) {
		if (!is_cache_key(s->kv[i].key))
			continue;
		fprintf(fp, "%s", sep);
		json_string(fp, s->kv[i].key);
		fputs(": ", fp);
		json_value(fp, s->kv[i].val);
		sep = ", ";
	}
	fputs("}, \"requests\": ", fp);
	json_group(fp, s->kv, s->nkv, "requests_");
	fprintf(fp, ", \"requests_iostat\": {\"r_await_ms\": %.6f, \"w_await_ms\": %.6f, "
		"\"aqu_sz\": %.6f, \"util_pct\": %.3f}", x.r_await_ms, x.w_await_ms,
		x.aqu_sz, x.util_pct);
	fputs(", \"total\": {\"front\": ", fp);
	json_group(fp, s->kv, s->nkv, "total_front_");
	fputs(", \"back\": ", fp);
	json_group(fp, s->kv, s->nkv, "total_back_");
	fprintf(fp, ", \"devices_closed\": %.0f, \"devices_idle\": %.0f}, \"files\": [",
		G(s, "devices_closed"), G(s, "devices_idle"));
	for (i = 0; i < s->nfiles; i++) {
		const struct snap_file *f = &s->files[i];
		fprintf(fp, "%s{\"name\": ", i ? ", " : "");
		json_string(fp, f->path);
		fputs(", \"device\": ", fp);
		json_string(fp, f->device);
		fputs(", \"front\": ", fp);
		json_group(fp, f->kv, f->nkv, "front_");
		fputs(", \"back\": ", fp);
		json_group(fp, f->kv, f->nkv, "back_");
		fprintf(fp, ", \"clustering\": %.2f}", F(f, "clustering"));
	}
	fputs("]}", fp);
}

/* ---------------------------------------------------------- interval */

struct watched {
	const char *mnt;
	struct snap last;
	bool have_last;
};

/* A row name per column group or row: "MNT requests", "MNT storage". */
static void
row_name(char *out, size_t len, const char *mnt, const char *what)
{
	snprintf(out, len, "%s %s", mnt, what);
}

static int
interval_report(struct watched *w, int nw, bool xview, bool header, int *namew)
{
	static char names[MAX_MOUNTS * 2][4200];	/* one report at a time */
	struct snap now[MAX_MOUNTS];
	const char *np[MAX_MOUNTS * 2];
	int i, r, nn = 0, status = 0;

	for (i = 0; i < nw; i++)
		if ((r = snap_read(w[i].mnt, &now[i])) != 0) {
			while (--i >= 0)
				snap_free(&now[i]);
			return r;
		}
	for (i = 0; i < nw; i++) {
		row_name(names[nn], sizeof(names[nn]), w[i].mnt, "requests");
		np[nn] = names[nn];
		nn++;
		row_name(names[nn], sizeof(names[nn]), w[i].mnt, "storage");
		np[nn] = names[nn];
		nn++;
	}
	if (*namew == 0)
		*namew = names_width(np, nn, NAME_MIN_W);
	if (!xview && header)
		iostat_bsd_header(stdout, np, nn, *namew);
	if (!xview)
		printf("%10.2f", G(&now[0], "uptime_s"));
	for (i = 0; i < nw; i++) {
		struct io_counts rq1, rq0, bk1, bk0;
		struct iostat_x xr, xb;
		double dt = G(&now[i], "uptime_s");
		size_t k;

		requests_of(&now[i], &rq1);
		total_of(&now[i], "back", &bk1);
		if (w[i].have_last) {
			requests_of(&w[i].last, &rq0);
			total_of(&w[i].last, "back", &bk0);
			dt -= G(&w[i].last, "uptime_s");
		}
		iostat_x_of(&xr, &rq1, w[i].have_last ? &rq0 : NULL, dt);
		iostat_x_of(&xb, &bk1, w[i].have_last ? &bk0 : NULL, dt);
		if (!xview) {
			iostat_bsd_cols(stdout, *namew, &xr);
			iostat_bsd_cols(stdout, *namew, &xb);
			continue;
		}
		if (i == 0) {
			char when[64];
			snprintf(when, sizeof(when), "%.2f s", G(&now[0], "uptime_s"));
			iostat_x_header(stdout, when, *namew);
		}
		iostat_x_row(stdout, names[2 * i], *namew, &xr);
		iostat_x_row(stdout, names[2 * i + 1], *namew, &xb);
		for (k = 0; k < now[i].nfiles; k++) {
			const struct snap_file *f = &now[i].files[k];
			struct io_counts f1, f0;
			struct iostat_x xf;
			char fname[4200];
			size_t j;
			bool seen = false;

			file_side(f, "back", &f1);
			memset(&f0, 0, sizeof(f0));
			for (j = 0; w[i].have_last && j < w[i].last.nfiles; j++)
				if (strcmp(w[i].last.files[j].path, f->path) == 0) {
					file_side(&w[i].last.files[j], "back", &f0);
					seen = true;
				}
			/* a device opened in this interval counts from zero */
			if (seen && (f1.reads < f0.reads || f1.writes < f0.writes))
				memset(&f0, 0, sizeof(f0));
			iostat_x_of(&xf, &f1, &f0, dt);
			snprintf(fname, sizeof(fname), "%s/%s", w[i].mnt, f->path);
			iostat_x_row(stdout, fname, *namew, &xf);
		}
	}
	fputc('\n', stdout);
	for (i = 0; i < nw; i++) {
		if (w[i].have_last)
			snap_free(&w[i].last);
		w[i].last = now[i];
		w[i].have_last = true;
	}
	if (fflush(stdout) != 0)
		status = EX_IOERR;
	return status;
}

static void
sleep_until(struct timespec *t, double secs)
{
	t->tv_sec += (time_t)secs;
	t->tv_nsec += (long)((secs - floor(secs)) * 1e9);
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL) == EINTR)
		;
}

static int
run_interval(char **mnts, int n, double secs, long count, bool xview)
{
	struct watched w[MAX_MOUNTS];
	struct timespec t;
	int i, m = 0, r = 0, status = 0, namew = 0;
	long k;

	memset(w, 0, sizeof(w));
	/* a MOUNTPOINT that is none from the start is left out (one line
	 * said why); the others are watched */
	for (i = 0; i < n; i++) {
		struct snap s;

		if ((r = snap_read(mnts[i], &s)) != 0) {
			status = r;
			continue;
		}
		snap_free(&s);
		w[m++].mnt = mnts[i];
	}
	if (m == 0)
		return status;
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (k = 0; count <= 0 || k < count; k++) {
		if (k > 0)
			sleep_until(&t, secs);
		if ((r = interval_report(w, m, xview, k == 0, &namew)) != 0)
			break;
	}
	for (i = 0; i < m; i++)
		if (w[i].have_last)
			snap_free(&w[i].last);
	return r != 0 ? r : status;
}

/* ------------------------------------------------------------ command */

int
cmd_stat(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "raw", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	char *mnts[MAX_MOUNTS], *end;
	bool json = false, raw = false, xview = false, owned = false;
	double secs = 0;
	long count = 0;
	int c, i, n, status = 0, r;

	if ((r = cli_help_version(argc, argv, usage, NULL)) >= 0)
		return r;
	optind = 1;
	opterr = 0;
	/* options may follow the mount points too */
	while ((c = getopt_long(argc, argv, ":hxi:c:", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'r': raw = true; break;
		case 'x': xview = true; break;
		case 'h': usage(stdout); return 0;
		case 'i':
			secs = strtod(optarg, &end);
			if (*end != '\0' || !(secs > 0) || secs > 86400) {
				fprintf(stderr, "clio stat: bad interval '%s' (seconds, more than 0 "
					"and at most 86400)\n", optarg);
				return EX_USAGE;
			}
			break;
		case 'c':
			errno = 0;
			count = strtol(optarg, &end, 10);
			if (*end != '\0' || errno == ERANGE || count < 1) {
				fprintf(stderr, "clio stat: bad count '%s' (1 to %ld)\n", optarg,
					LONG_MAX);
				return EX_USAGE;
			}
			break;
		default: return cli_bad_option("clio stat", c, argv);
		}
	}
	if (((json || raw) && secs > 0) || (json && raw) ||
	    ((count > 0 || xview) && secs == 0)) {
		fprintf(stderr, "clio stat: %s\n", json && raw ? "--json or --raw, not both" :
			json || raw ? "--json and --raw have no interval mode" :
			"-c and -x go with -i SECONDS");
		return EX_USAGE;
	}
	n = argc - optind;
	if (n > MAX_MOUNTS) {
		fprintf(stderr, "clio stat: more than %d mount points\n", MAX_MOUNTS);
		return EX_USAGE;
	}
	if (n > 0) {
		for (i = 0; i < n; i++)
			mnts[i] = argv[optind + i];
	} else {
		n = mounttab_clio_dirs(mnts, MAX_MOUNTS);
		owned = true;
		if (n == 0) {
			fprintf(stderr, "clio stat: no clio mounts\n");
			return EX_NOINPUT;
		}
	}
	if (secs > 0) {
		status = run_interval(mnts, n, secs, count, xview);
	} else {
		if (json)
			fputs("{\"mounts\": [", stdout);
		for (i = 0, c = 0; i < n; i++) {
			struct snap s;
			if ((r = snap_read(mnts[i], &s)) != 0) {
				status = r;
				continue;
			}
			if (json) {
				fputs(c++ ? ", " : "", stdout);
				print_json(stdout, mnts[i], &s);
			} else if (raw) {
				fputs(s.raw, stdout);
			} else {
				if (c++)
					fputc('\n', stdout);
				print_summary(stdout, mnts[i], &s);
			}
			snap_free(&s);
		}
		if (json)
			fputs("]}\n", stdout);
	}
	if (owned)
		for (i = 0; i < n; i++)
			free(mnts[i]);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "clio stat: standard output: %s\n", strerror(errno));
		status = EX_IOERR;
	}
	return status;
}
