/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * report.c - renderings of statistics shared by the subcommands: human
 * sizes as GNU dd prints them, iostat-style summary lines, JSON strings.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

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

	fprintf(fp,
		"%s: %llu reads, %llu writes, %.2f KB/t, %.0f tps, %.2f MB/s, "
		"busy %.3f s, %.2f requests/transfer\n",
		name, (unsigned long long)b->reads,
		(unsigned long long)b->writes, kbt, tps, mbs, b->busy_s,
		xfers ? (double)freq / (double)xfers : 0.0);
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
