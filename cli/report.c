/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * report.c - renderings of statistics shared by the subcommands: human
 * sizes as GNU dd prints them, iostat-style summary lines, the two
 * iostat views of an interval (BSD's KB/t tps MB/s, the seeds' view, and
 * sysstat's iostat -x: r/s w/s rkB/s wkB/s rareq-sz wareq-sz r_await
 * w_await aqu-sz %util), names shortened from the left, JSON strings.
 *
 * Units are iostat's: KB and kB are 1024 bytes, MB 2^20 bytes; await in
 * milliseconds.  A figure that was not measured (NAN) prints as "-".
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "util.h"

/* "90 MB" (si) or "86 MiB", with dd's rounding: 3 significant digits. */
void
fmt_bytes_human(char *out, size_t len, double bytes, int si)
{
	static const char *si_units[] = { "B", "kB", "MB", "GB", "TB", "PB" };
	static const char *bin_units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double base = si ? 1000.0 : 1024.0;
	int u = 0;

	while (bytes >= base && u < 5) {
		bytes /= base;
		u++;
	}
	if (u == 0)
		snprintf(out, len, "%.0f %s", bytes, si ? si_units[0] : bin_units[0]);
	else if (bytes < 10)
		snprintf(out, len, "%.1f %s", bytes, si ? si_units[u] : bin_units[u]);
	else
		snprintf(out, len, "%.0f %s", bytes, si ? si_units[u] : bin_units[u]);
}

/* One device's back-end summary, iostat's columns plus the clustering
 * factor (front-end requests per back-end transfer). */
void
print_iostat_line(FILE *fp, const char *name, const struct clio_iostat *b,
		  const struct clio_iostat *front, double elapsed)
{
	uint64_t xfers = b->reads + b->writes;
	uint64_t bytes = b->read_bytes + b->write_bytes;
	uint64_t freq = front->reads + front->writes;
	double kbt = xfers ? (double)bytes / 1024.0 / (double)xfers : 0.0;
	double tps = elapsed > 0 ? (double)xfers / elapsed : 0.0;
	double mbs = elapsed > 0 ? (double)bytes / 1048576.0 / elapsed : 0.0;

	struct io_counts c;
	struct iostat_x x;

	fprintf(fp,
		"%s: %llu reads, %llu writes, %.2f KB/t, %.0f tps, %.2f MB/s, "
		"busy %.3f s, %.2f requests/transfer\n",
		name, (unsigned long long)b->reads,
		(unsigned long long)b->writes, kbt, tps, mbs, b->busy_s,
		xfers ? (double)freq / (double)xfers : 0.0);
	io_counts_of(&c, b);
	iostat_x_of(&x, &c, NULL, elapsed);
	fprintf(fp,
		"%s: r/s %.2f, w/s %.2f, rkB/s %.2f, wkB/s %.2f, rareq-sz %.2f kB, "
		"wareq-sz %.2f kB, r_await %.3f ms, w_await %.3f ms, aqu-sz %.2f, "
		"%%util %.2f\n",
		name, x.r_s, x.w_s, x.rkb_s, x.wkb_s, x.rareq_kb, x.wareq_kb,
		x.r_await_ms, x.w_await_ms, x.aqu_sz, x.util_pct);
}

void
io_counts_of(struct io_counts *c, const struct clio_iostat *s)
{
	memset(c, 0, sizeof(*c));
	c->reads = (double)s->reads;
	c->writes = (double)s->writes;
	c->read_bytes = (double)s->read_bytes;
	c->write_bytes = (double)s->write_bytes;
	c->busy_s = s->busy_s;
	c->read_s = s->read_time_s;
	c->write_s = s->write_time_s;
	c->queue_s = s->read_time_s + s->write_time_s; /* Little's law */
	c->timed = true;
}

static double
per(double a, double b)
{
	return b > 0 ? a / b : 0.0;
}

void
iostat_x_of(struct iostat_x *x, const struct io_counts *now,
	    const struct io_counts *before, double dt)
{
	struct io_counts zero, d;

	if (before == NULL) {
		memset(&zero, 0, sizeof(zero));
		before = &zero;
	}
	d.reads = now->reads - before->reads;
	d.writes = now->writes - before->writes;
	d.read_bytes = now->read_bytes - before->read_bytes;
	d.write_bytes = now->write_bytes - before->write_bytes;
	d.read_s = now->read_s - before->read_s;
	d.write_s = now->write_s - before->write_s;
	d.busy_s = now->busy_s - before->busy_s;
	d.queue_s = now->queue_s - before->queue_s;
	x->r_s = per(d.reads, dt);
	x->w_s = per(d.writes, dt);
	x->rkb_s = per(d.read_bytes / 1024.0, dt);
	x->wkb_s = per(d.write_bytes / 1024.0, dt);
	x->rareq_kb = per(d.read_bytes / 1024.0, d.reads);
	x->wareq_kb = per(d.write_bytes / 1024.0, d.writes);
	x->util_pct = per(100.0 * d.busy_s, dt);
	if (now->timed) {
		x->r_await_ms = per(1000.0 * d.read_s, d.reads);
		x->w_await_ms = per(1000.0 * d.write_s, d.writes);
		x->aqu_sz = per(d.queue_s, dt);
	} else {
		x->r_await_ms = x->w_await_ms = x->aqu_sz = NAN;
	}
	x->kbt = per((d.read_bytes + d.write_bytes) / 1024.0, d.reads + d.writes);
	x->tps = per(d.reads + d.writes, dt);
	x->mbs = per((d.read_bytes + d.write_bytes) / 1048576.0, dt);
}

/* v in w columns with up to prec decimals: fewer where it would not fit
 * (16384.00 KB/t in 7 is 16384.0), so that the columns stay aligned. */
static const char *
fit(char *buf, size_t len, int w, int prec, double v)
{
	if (isnan(v)) {
		snprintf(buf, len, "%*s", w, "-");
		return buf;
	}
	do
		snprintf(buf, len, "%*.*f", w, prec, v);
	while ((int)strlen(buf) > w && prec-- > 0);
	return buf;
}

static void
col(FILE *fp, int w, int prec, double v)
{
	char b[64];

	fprintf(fp, " %s", fit(b, sizeof(b), w, prec, v));
}

void
iostat_bsd_fields(FILE *fp, double kbt, double tps, double mbs)
{
	char b1[64], b2[64], b3[64];

	fprintf(fp, "%s %s %s", fit(b1, sizeof(b1), 7, 2, kbt),
		fit(b2, sizeof(b2), 6, 0, tps), fit(b3, sizeof(b3), 7, 2, mbs));
}

void
iostat_x_header(FILE *fp, const char *when, int namew)
{
	fprintf(fp, "%-*s %8s %8s %10s %10s %8s %8s %8s %8s %7s %6s\n", namew, "Device",
		"r/s", "w/s", "rkB/s", "wkB/s", "rareq-sz", "wareq-sz",
		"r_await", "w_await", "aqu-sz", "%util");
	fprintf(fp, "%-*s %8s %8s %10s %10s %8s %8s %8s %8s %7s %6s\n", namew, when,
		"1/s", "1/s", "kB/s", "kB/s", "kB", "kB", "ms", "ms", "reqs", "%");
}

void
iostat_x_row(FILE *fp, const char *name, int namew, const struct iostat_x *x)
{
	char shown[256];

	name_shorten(shown, sizeof(shown), name, namew);
	fprintf(fp, "%-*s", namew, shown);
	col(fp, 8, 2, x->r_s);
	col(fp, 8, 2, x->w_s);
	col(fp, 10, 2, x->rkb_s);
	col(fp, 10, 2, x->wkb_s);
	col(fp, 8, 2, x->rareq_kb);
	col(fp, 8, 2, x->wareq_kb);
	col(fp, 8, 3, x->r_await_ms);
	col(fp, 8, 3, x->w_await_ms);
	col(fp, 7, 2, x->aqu_sz);
	col(fp, 6, 1, x->util_pct);
	fputc('\n', fp);
}

void
iostat_bsd_header(FILE *fp, const char *const *names, int n, int namew)
{
	char shown[256];
	int i;

	fprintf(fp, "%10s", "time");
	for (i = 0; i < n; i++) {
		name_shorten(shown, sizeof(shown), names[i], namew);
		fprintf(fp, "  %*s", namew, shown);
	}
	fprintf(fp, "\n%10s", "s");
	for (i = 0; i < n; i++)
		fprintf(fp, "  %*s%7s %6s %7s", namew - 22, "", "KB/t", "tps", "MB/s");
	fputc('\n', fp);
}

void
iostat_bsd_cols(FILE *fp, int namew, const struct iostat_x *x)
{
	fprintf(fp, "  %*s", namew - 22, "");
	iostat_bsd_fields(fp, x->kbt, x->tps, x->mbs);
}

void
name_shorten(char *out, size_t len, const char *name, int width)
{
	size_t n = strlen(name);

	if (width < 4 || n <= (size_t)width)
		snprintf(out, len, "%s", name);
	else
		snprintf(out, len, "...%s", name + n - (size_t)(width - 3));
}

int
names_width(const char *const *names, int n, int minw)
{
	char a[256], b[256];
	int w, i, j, longest = minw;

	for (i = 0; i < n; i++)
		if ((int)strlen(names[i]) > longest)
			longest = (int)strlen(names[i]);
	if (longest > 200)
		longest = 200;
	for (w = minw; w < longest; w++) {
		bool clash = false;
		for (i = 0; i < n && !clash; i++)
			for (j = i + 1; j < n && !clash; j++) {
				if (strcmp(names[i], names[j]) == 0)
					continue;
				name_shorten(a, sizeof(a), names[i], w);
				name_shorten(b, sizeof(b), names[j], w);
				clash = strcmp(a, b) == 0;
			}
		if (!clash)
			return w;
	}
	return longest;
}

void
json_string(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(fp, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(fp, "\\u%04x", ch);
		else
			fputc(ch, fp);
	}
	fputc('"', fp);
}

/* s for a one-line message: its control characters (a newline) as '?',
 * cut to fit buf. */
const char *
cli_printable(const char *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s);
	one_line(buf);
	return buf;
}

/* The backend's reason without the path it starts with when that path is
 * the one named already: "PATH: No such file or directory". */
const char *
cli_reason(const char *err, const char *spec)
{
	const char *path = strncmp(spec, "file:", 5) == 0 ? spec + 5 : spec;
	size_t whole = strlen(spec), n = strcspn(path, "?");

	if (strncmp(err, spec, whole) == 0 && strncmp(err + whole, ": ", 2) == 0)
		return err + whole + 2;
	if (strncmp(err, path, n) == 0 && strncmp(err + n, ": ", 2) == 0)
		return err + n + 2;
	return err;
}
