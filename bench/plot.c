/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * plot.c - `clio bench --plot DIR`: one PNG and one SVG per experiment,
 * drawn by gnuplot from the experiment's table: bars of the published
 * figure (or the kernel's) beside clio's, one group per row.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench.h"

struct plot_spec {
	const char *name;
	const char *ylabel;
	const char *keys[4];	/* the bars of each group */
	const char *titles[4];
	bool logy;
	const char *label_kb;	/* a numeric column added to the labels, in K */
};

static const struct plot_spec specs[] = {
	{ "maxbsize", "elapsed time (s, simulated)",
	  { "published_s", "elapsed_s" }, { "published (1995)", "clio" }, false,
	  "cluster_kb" },
	{ "blocksize", "throughput (MB/s, 10^6 B/s)",
	  { "published_mbs", "mbs" }, { "published (2009, raw disk)", "clio" }, false, NULL },
	{ "rewrite", "device throughput (MB/s, 2^20 B/s)",
	  { "published_mbs", "mbs" }, { "published (2002)", "clio" }, false, NULL },
	{ "rawblock", "device throughput (MB/s, 2^20 B/s)",
	  { "published_mbs", "mbs" }, { "published (1999)", "clio" }, false, NULL },
	{ "kernel", "throughput (MB/s, 10^6 B/s)",
	  { "kernel_mbs", "direct_mbs", "clio_mbs" },
	  { "Linux page cache (dd)", "O_DIRECT (dd)", "clio" }, true, NULL },
	{ "mount", "throughput (MB/s, 10^6 B/s)",
	  { "kernel_mbs", "mount_mbs", "mount_kcache_mbs", "plain_mbs" },
	  { "kernel (dd on the file)", "clio mount", "clio mount, kernel_cache=on",
	    "plain FUSE (cache=off)" }, true, NULL },
};

/* The row's label: its string columns joined. */
static void
row_label(const struct table *t, const struct plot_spec *sp, int r, char *out,
	  size_t len)
{
	double kb;
	int c;

	out[0] = '\0';
	if (sp->label_kb != NULL && table_get(t, r, sp->label_kb, &kb))
		snprintf(out, len, "%.0fK", kb);
	for (c = 0; c < t->ncols; c++) {
		if (t->cols[c].prec >= 0 || !t->cells[r][c].set ||
		    strcmp(t->cols[c].key, "met") == 0)
			continue;
		if (out[0])
			strncat(out, " ", len - strlen(out) - 1);
		strncat(out, t->cells[r][c].s, len - strlen(out) - 1);
	}
	for (char *p = out; *p; p++)
		if (*p == '"')
			*p = '\'';
}

int
plot_table(const struct bench_opts *bo, const struct table *t)
{
	const struct plot_spec *sp = NULL;
	char path[4096], label[128];
	FILE *dat, *gp;
	size_t i;
	int r, k, nkeys = 0, status;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		if (strcmp(specs[i].name, t->name) == 0)
			sp = &specs[i];
	if (sp == NULL)
		return 0;
	while (nkeys < 4 && sp->keys[nkeys] != NULL)
		nkeys++;
	snprintf(path, sizeof(path), "%s/%s.dat", bo->plot_dir, t->name);
	dat = fopen(path, "w");
	if (dat == NULL) {
		fprintf(stderr, "clio bench: cannot write '%s': %s\n", path, strerror(errno));
		return -1;
	}
	for (r = 0; r < t->nrows; r++) {
		row_label(t, sp, r, label, sizeof(label));
		fprintf(dat, "\"%s\"", label);
		for (k = 0; k < nkeys; k++) {
			double v;
			if (table_get(t, r, sp->keys[k], &v))
				fprintf(dat, " %.6g", v);
			else
				fprintf(dat, " NaN");
		}
		fputc('\n', dat);
	}
	fclose(dat);

	/* the script stays beside the data, to redraw by hand */
	snprintf(path, sizeof(path), "%s/%s.gp", bo->plot_dir, t->name);
	gp = fopen(path, "w");
	if (gp == NULL) {
		fprintf(stderr, "clio bench: cannot write '%s': %s\n", path, strerror(errno));
		return -1;
	}
	for (i = 0; i < 2; i++) {
		const char *ext = i == 0 ? "png" : "svg";
		fprintf(gp, "set terminal %s size 1100,560%s\n",
			i == 0 ? "pngcairo" : "svg", i == 0 ? " font ',10'" : "");
		fprintf(gp, "set output '%s/%s.%s'\n", bo->plot_dir, t->name, ext);
		fprintf(gp, "set termoption noenhanced\nset title '");
		for (const char *q = t->title; *q; q++)
			fprintf(gp, *q == '\'' ? "''" : "%c", *q);
		fprintf(gp, "'\n");
		fprintf(gp, "set ylabel '%s' noenhanced\nset style data histograms\n"
			    "set style histogram clustered gap 1\n"
			    "set style fill solid 0.8 border -1\nset boxwidth 0.9\n"
			    "set xtics rotate by -30 noenhanced\nset key top left\n"
			    "set grid ytics\nset yrange [0:*]\n",
			sp->ylabel);
		if (sp->logy)
			fprintf(gp, "set logscale y\nset yrange [*:*]\n");
		fprintf(gp, "set datafile missing 'NaN'\nplot ");
		for (k = 0; k < nkeys; k++)
			fprintf(gp, "%s'%s/%s.dat' using %d%s title '%s'", k ? ", " : "",
				bo->plot_dir, t->name, k + 2, k == 0 ? ":xtic(1)" : "",
				sp->titles[k]);
		fprintf(gp, "\nunset output\n");
	}
	fclose(gp);
	{
		char cmd[8400];
		snprintf(cmd, sizeof(cmd), "gnuplot '%s' </dev/null >'%s/%s.log' 2>&1",
			 path, bo->plot_dir, t->name);
		status = system(cmd);
	}
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "clio bench: gnuplot failed for '%s' (see %s/%s.log)\n",
			t->name, bo->plot_dir, t->name);
		return -1;
	}
	if (!bo->json)
		printf("  plots: %s/%s.png, %s/%s.svg\n\n", bo->plot_dir, t->name,
		       bo->plot_dir, t->name);
	return 0;
}
