/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ddsummary.c - what `clio dd` prints about a copy: GNU dd 9.1's lines
 * (records in/out, truncated records, "B bytes (SI, IEC) copied, T s,
 * R/s"), its status=progress line and the SIGUSR1 statistics, then
 * clio's own: one iostat-style line per clio device, the cache counters,
 * --iostat intervals and the --json object.
 *
 * Invariants:
 *  1. GNU's lines are byte for byte what GNU dd prints for the same
 *     counters, elapsed time and rate: sizes have 2 or 3 significant
 *     digits, rounded to nearest with ties to even, in powers of 1000 and
 *     of 1024; a size below 1000 (or 1024) bytes is left out.
 *  2. Only the counters of struct dd and the devices' statistics are
 *     read: printing changes nothing about the copy.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dd.h"
#include "util.h"

static const char *const si_prefix = "kMGTPEZY";

double
dd_now(const struct dd *dd)
{
	return dd->is_virtual ? clio_vclock_now() : now_monotonic();
}

/* n bytes in units of 1000 (si) or 1024: "977 KiB", "1.0 MB", "100 B". */
void
dd_human(char *out, size_t len, uint64_t n, bool si)
{
	unsigned base = si ? 1000 : 1024;
	unsigned __int128 div = 1, x;
	uint64_t q;
	int k = 0;

	while (k < 8 && (uint64_t)(n / (div * base)) > 0) {
		div *= base;
		k++;
	}
	if (k == 0) {
		snprintf(out, len, "%llu B", (unsigned long long)n);
		return;
	}
	q = (uint64_t)(n / div);
	if (q < 10) {
		/* tenths, rounded to nearest, ties to even */
		x = (unsigned __int128)n * 10;
		uint64_t t = (uint64_t)(x / div);
		unsigned __int128 rem = x % div;
		if (rem * 2 > div || (rem * 2 == div && (t & 1)))
			t++;
		if (t < 100) {
			snprintf(out, len, "%llu.%llu %c%s", (unsigned long long)(t / 10),
				 (unsigned long long)(t % 10),
				 si ? si_prefix[k - 1] : "KMGTPEZY"[k - 1],
				 si ? "B" : "iB");
			return;
		}
		q = t / 10;
	} else {
		unsigned __int128 rem = n % div;
		if (rem * 2 > div || (rem * 2 == div && (q & 1)))
			q++;
		if (q == base && k < 8) {
			k++;
			snprintf(out, len, "1.0 %c%s",
				 si ? si_prefix[k - 1] : "KMGTPEZY"[k - 1],
				 si ? "B" : "iB");
			return;
		}
	}
	snprintf(out, len, "%llu %c%s", (unsigned long long)q,
		 si ? si_prefix[k - 1] : "KMGTPEZY"[k - 1], si ? "B" : "iB");
}

/* A rate in powers of 1000, at least kB/s: "0.0 kB/s", "31.1 GB/s". */
static void
human_rate(char *out, size_t len, double bytes, double seconds)
{
	double v = bytes / seconds, e = 1000;
	int k = 1;
	char num[64];

	if (!(seconds > 0) || !isfinite(v)) {
		snprintf(out, len, "Infinity B/s");
		return;
	}
	while (k < 8 && e * 1000 <= v) {
		e *= 1000;
		k++;
	}
	snprintf(num, sizeof(num), "%.1f", v / e);
	if (strlen(num) > 4)
		snprintf(num, sizeof(num), "%.0f", v / e);
	snprintf(out, len, "%s %cB/s", num, si_prefix[k - 1]);
}

/* GNU's transfer line, without its line end; returns its length. */
static int
xfer_line(struct dd *dd, bool progress)
{
	char si[32], iec[32], rate[96], secs[40];
	double el = dd_now(dd) - dd->t_start;
	unsigned long long b = (unsigned long long)dd->bytes;

	dd_human(si, sizeof(si), dd->bytes, true);
	dd_human(iec, sizeof(iec), dd->bytes, false);
	human_rate(rate, sizeof(rate), (double)dd->bytes, el);
	snprintf(secs, sizeof(secs), progress ? "%.0f s" : "%g s", el);
	if (dd->bytes < 1000)
		return fprintf(stderr, "%llu byte%s copied, %s, %s", b,
			       b == 1 ? "" : "s", secs, rate);
	if (dd->bytes < 1024)
		return fprintf(stderr, "%llu bytes (%s) copied, %s, %s", b, si,
			       secs, rate);
	return fprintf(stderr, "%llu bytes (%s, %s) copied, %s, %s", b, si, iec,
		       secs, rate);
}

void
dd_print_stats(struct dd *dd)
{
	if (dd->status == ST_NONE)
		return;
	if (dd->progress_len > 0) {
		fputc('\n', stderr);
		dd->progress_len = 0;
	}
	fprintf(stderr, "%llu+%llu records in\n%llu+%llu records out\n",
		(unsigned long long)dd->full_in, (unsigned long long)dd->part_in,
		(unsigned long long)dd->full_out, (unsigned long long)dd->part_out);
	if (dd->truncated)
		fprintf(stderr, "%llu truncated record%s\n",
			(unsigned long long)dd->truncated,
			dd->truncated == 1 ? "" : "s");
	if (dd->status == ST_NOXFER)
		return;
	xfer_line(dd, false);
	fputc('\n', stderr);
}

void
dd_progress(struct dd *dd)
{
	double now;
	int n;

	if (dd->status != ST_PROGRESS || (now = now_monotonic()) < dd->next_progress)
		return;
	while (dd->next_progress <= now)
		dd->next_progress += 1.0;
	fputc('\r', stderr);
	n = xfer_line(dd, true);
	if (n >= 0 && n < dd->progress_len)
		fprintf(stderr, "%*s", dd->progress_len - n, "");
	dd->progress_len = n > 0 ? n : 1;
}

/* ------------------------------------------------------------ clio's lines */

static void
stats_of(struct endpoint *ep, struct clio_dev_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (ep->kind == EP_CLIO)
		clio_dev_stats(ep->dev, st);
}

void
dd_iostat_header(struct dd *dd)
{
	struct endpoint *eps[2] = { &dd->in, &dd->out };
	const char *names[2] = { "", "" };
	char shown[256];
	int i, n = 0, w;

	for (i = 0; i < 2; i++)
		if (eps[i]->kind == EP_CLIO)
			names[n++] = clio_dev_name(eps[i]->dev);
	/* 22 columns, more where the two names would look alike */
	w = dd->iostat_namew = names_width(names, n, 22);
	fprintf(stderr, "%10s", "time");
	for (i = 0; i < n; i++) {
		name_shorten(shown, sizeof(shown), names[i], w);
		fprintf(stderr, " %*s", w, shown);
	}
	fprintf(stderr, "\n%10s", "s");
	for (i = 0; i < n; i++)
		fprintf(stderr, " %*s%7s %6s %7s", w - 22, "", "KB/t", "tps", "MB/s");
	fputc('\n', stderr);
}

void
dd_iostat_tick(struct dd *dd, bool force)
{
	double now, dt;
	struct endpoint *eps[2] = { &dd->in, &dd->out };
	struct clio_dev_stats *last[2] = { &dd->last_in, &dd->last_out };
	int i;

	if (dd->iostat <= 0)
		return;
	now = dd_now(dd);
	if (!force && now < dd->next_tick)
		return;
	dt = now - dd->last_tick;
	if (dt <= 0)
		return;
	if (dd->progress_len > 0) {
		/* status=progress's line ends before this one, as before the summary */
		fputc('\n', stderr);
		dd->progress_len = 0;
	}
	fprintf(stderr, "%10.2f", now - dd->t_start);
	for (i = 0; i < 2; i++) {
		struct clio_dev_stats st;
		uint64_t x, b;
		if (eps[i]->kind != EP_CLIO)
			continue;
		stats_of(eps[i], &st);
		x = st.back.reads + st.back.writes - last[i]->back.reads -
		    last[i]->back.writes;
		b = st.back.read_bytes + st.back.write_bytes -
		    last[i]->back.read_bytes - last[i]->back.write_bytes;
		fprintf(stderr, " %*s", dd->iostat_namew - 22, "");
		iostat_bsd_fields(stderr, x ? (double)b / 1024.0 / (double)x : 0.0,
				  (double)x / dt, (double)b / 1048576.0 / dt);
		*last[i] = st;
	}
	fputc('\n', stderr);
	dd->last_tick = now;
	/* the first tick after now, computed: a loop adding a tiny interval
	 * (--iostat=1e-300) to a large time would never get past it */
	if (dd->next_tick <= now)
		dd->next_tick += (floor((now - dd->next_tick) / dd->iostat) + 1) * dd->iostat;
	if (!(dd->next_tick > now))
		dd->next_tick = nextafter(now, INFINITY);
}

/* The disk tier's lines (disk_cache.KEY=VALUE) of a device's parameters,
 * malloc'ed; NULL if it has none. */
static char *
disk_cache_params(struct endpoint *ep)
{
	char *p;
	int n, r;

	if (ep->kind != EP_CLIO)
		return NULL;
	/* the tier's counters move meanwhile (its culling goes on in the
	 * background): room for them to grow, and again if they outgrew it */
	do {
		if ((n = clio_dev_params(ep->dev, NULL, 0)) <= 0 ||
		    (p = malloc((size_t)n + 65)) == NULL)
			return NULL;
		r = clio_dev_params(ep->dev, p, (size_t)n + 65);
		if (r > n + 64)
			free(p);
	} while (r > n + 64);
	if (r < 0 || strstr(p, "disk_cache.") == NULL) {
		free(p);
		return NULL;
	}
	return p;
}

/* The value of disk_cache.KEY in params, or "0". */
static const char *
dc_val(const char *params, const char *key, char *out, size_t len)
{
	char pat[64];
	const char *s;

	snprintf(pat, sizeof(pat), "disk_cache.%s=", key);
	s = strstr(params, pat);
	if (s == NULL || (s != params && s[-1] != '\n'))
		return "0";
	s += strlen(pat);
	snprintf(out, len, "%.*s", (int)strcspn(s, "\n"), s);
	return out;
}

static void
json_disk_cache(FILE *fp, const char *params)
{
	const char *s = params;
	int n = 0;

	fprintf(fp, ", \"disk_cache\": {");
	while ((s = strstr(s, "disk_cache.")) != NULL) {
		const char *k = s + 11, *eq = strchr(k, '='), *end;
		char v[512];
		if (eq == NULL)
			break;
		end = eq + 1 + strcspn(eq + 1, "\n");
		snprintf(v, sizeof(v), "%.*s", (int)(end - eq - 1), eq + 1);
		fprintf(fp, "%s\"%.*s\": ", n++ ? ", " : "", (int)(eq - k), k);
		if (v[0] != '\0' && strspn(v, "0123456789") == strlen(v))
			fputs(v, fp);
		else
			json_string(fp, v);
		s = end;
	}
	fputc('}', fp);
}

static void
json_dev(FILE *fp, struct endpoint *ep, const char *role, double elapsed)
{
	struct clio_dev_stats st;
	const struct clio_iostat *b = &st.back;
	uint64_t x, bytes;
	int k;

	stats_of(ep, &st);
	x = b->reads + b->writes;
	bytes = b->read_bytes + b->write_bytes;
	fprintf(fp, "{\"name\": ");
	json_string(fp, clio_dev_name(ep->dev));
	fprintf(fp,
		", \"role\": \"%s\", \"reads\": %llu, \"writes\": %llu, "
		"\"read_bytes\": %llu, \"write_bytes\": %llu, \"flushes\": %llu, "
		"\"errors\": %llu, \"busy_s\": %.6f, \"kb_per_transfer\": %.3f, "
		"\"tps\": %.3f, \"mb_per_s\": %.4f, \"lat_p50_s\": %.6g, "
		"\"lat_p99_s\": %.6g, \"front_reads\": %llu, \"front_writes\": %llu, "
		"\"front_read_bytes\": %llu, \"front_write_bytes\": %llu, "
		"\"size_hist\": [",
		role, (unsigned long long)b->reads, (unsigned long long)b->writes,
		(unsigned long long)b->read_bytes,
		(unsigned long long)b->write_bytes,
		(unsigned long long)b->flushes, (unsigned long long)b->errors,
		b->busy_s, x ? (double)bytes / 1024.0 / (double)x : 0.0,
		elapsed > 0 ? (double)x / elapsed : 0.0,
		elapsed > 0 ? (double)bytes / 1e6 / elapsed : 0.0,
		b->lat_p50_s, b->lat_p99_s,
		(unsigned long long)st.front.reads,
		(unsigned long long)st.front.writes,
		(unsigned long long)st.front.read_bytes,
		(unsigned long long)st.front.write_bytes);
	for (k = 0; k < CLIO_HIST_BUCKETS; k++)
		fprintf(fp, "%s%llu", k ? ", " : "",
			(unsigned long long)b->size_hist[k]);
	fprintf(fp, "]");
	char *dc = disk_cache_params(ep);
	if (dc != NULL)
		json_disk_cache(fp, dc);
	free(dc);
	fprintf(fp, "}");
}

static void
json_report(struct dd *dd, const struct clio_cache_stats *cs, double elapsed)
{
	struct endpoint *eps[2] = { &dd->in, &dd->out };
	const char *roles[2] = { "input", "output" };
	int i, n = 0;

	printf("{\"elapsed_s\": %.6f, \"clock\": \"%s\", \"bytes_copied\": %llu, "
	       "\"records_in\": \"%llu+%llu\", \"records_out\": \"%llu+%llu\", "
	       "\"truncated_records\": %llu, \"devices\": [",
	       elapsed, dd->is_virtual ? "virtual" : "real",
	       (unsigned long long)dd->bytes,
	       (unsigned long long)dd->full_in, (unsigned long long)dd->part_in,
	       (unsigned long long)dd->full_out, (unsigned long long)dd->part_out,
	       (unsigned long long)dd->truncated);
	for (i = 0; i < 2; i++) {
		if (eps[i]->kind != EP_CLIO)
			continue;
		if (n++)
			printf(", ");
		json_dev(stdout, eps[i], roles[i], elapsed);
	}
	printf("], \"cache\": {\"hits\": %llu, \"misses\": %llu, "
	       "\"readahead_blocks\": %llu, \"readahead_used\": %llu, "
	       "\"read_clusters\": %llu, \"write_clusters\": %llu, "
	       "\"rbw_reads\": %llu, \"evictions\": %llu, \"throttles\": %llu, "
	       "\"flushes_behind\": %llu, "
	       "\"write_errors\": %llu, \"lost_bytes\": %llu}, "
	       "\"conf\": {\"bsize\": %u, \"maxbsize\": %u, \"maxphys\": %u, "
	       "\"read_max\": %u, \"cache_size\": %llu, \"cluster\": \"%s\", "
	       "\"rbw\": \"%s\"}}\n",
	       (unsigned long long)cs->hits, (unsigned long long)cs->misses,
	       (unsigned long long)cs->readahead_blocks,
	       (unsigned long long)cs->readahead_used,
	       (unsigned long long)cs->read_clusters,
	       (unsigned long long)cs->write_clusters,
	       (unsigned long long)cs->rbw_reads,
	       (unsigned long long)cs->evictions,
	       (unsigned long long)cs->throttles,
	       (unsigned long long)cs->flushes_behind,
	       (unsigned long long)cs->write_errors,
	       (unsigned long long)cs->lost_bytes, dd->conf.bsize,
	       dd->conf.maxbsize, dd->conf.maxphys, dd->conf.read_max,
	       (unsigned long long)dd->conf.cache_size,
	       dd->conf.cluster == CLIO_CLUSTER_ON     ? "on"
	       : dd->conf.cluster == CLIO_CLUSTER_LITE ? "lite"
						       : "off",
	       dd->conf.rbw == CLIO_RBW_CLUSTER ? "cluster" : "block");
}

void
dd_report(struct dd *dd, double elapsed)
{
	struct clio_cache_stats cs;
	struct endpoint *eps[2] = { &dd->in, &dd->out };
	int i;

	clio_cache_stats(dd->cache, &cs);
	if (dd->json) {
		json_report(dd, &cs, elapsed);
		return;
	}
	if (dd->status == ST_NONE)
		return;
	dd_print_stats(dd);
	for (i = 0; i < 2; i++) {
		struct clio_dev_stats st;
		if (eps[i]->kind != EP_CLIO || (i == 1 && dd->out.dev == dd->in.dev))
			continue;
		stats_of(eps[i], &st);
		print_iostat_line(stderr, clio_dev_name(eps[i]->dev), &st.back,
				  &st.front, elapsed);
		char *dc = disk_cache_params(eps[i]);
		if (dc != NULL) {
			char v[11][64];
			fprintf(stderr,
				"disk cache %s: %s hits, %s misses, %s bytes from the "
				"cache, %s from the device, %s insertions, %s evictions, "
				"%s checksum failures, %s stale drops, %s recovered, "
				"%s to lost+found\n",
				dc_val(dc, "dir", v[0], 64), dc_val(dc, "hits", v[1], 64),
				dc_val(dc, "misses", v[2], 64),
				dc_val(dc, "bytes_from_cache", v[3], 64),
				dc_val(dc, "bytes_from_device", v[4], 64),
				dc_val(dc, "insertions", v[5], 64),
				dc_val(dc, "evictions", v[6], 64),
				dc_val(dc, "checksum_failures", v[7], 64),
				dc_val(dc, "stale_drops", v[8], 64),
				dc_val(dc, "recovered", v[9], 64),
				dc_val(dc, "lost_found", v[10], 64));
			free(dc);
		}
	}
	if (dd->in.kind != EP_CLIO && dd->out.kind != EP_CLIO)
		return;
	fprintf(stderr,
		"cache: %llu hits, %llu misses, %llu blocks read ahead (%llu used), "
		"%llu read clusters, %llu write clusters, %llu read-before-write\n",
		(unsigned long long)cs.hits, (unsigned long long)cs.misses,
		(unsigned long long)cs.readahead_blocks,
		(unsigned long long)cs.readahead_used,
		(unsigned long long)cs.read_clusters,
		(unsigned long long)cs.write_clusters,
		(unsigned long long)cs.rbw_reads);
	if (dd->is_virtual)
		fprintf(stderr, "clock: virtual (the time and rate above are "
				"simulated)\n");
}
