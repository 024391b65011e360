/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchrbd.c - `clio bench rbd --file rbd:POOL/IMAGE[?conf=...&id=...]`:
 * clio in front of an RBD image against librbd's own cache, in the same
 * run, on the same image.
 *
 * The systems, taking turns within each run of each workload:
 *   clio        this process: the image as a clio device (librbd with
 *               rbd_cache=false), a cache of C bytes with the default
 *               tunables otherwise (a dirty budget of C/2, write-behind)
 *   writeback   fio's rbd engine (librbd alone, in its own process):
 *               rbd_cache on, policy writeback, rbd_cache_size C,
 *               rbd_cache_max_dirty C/2 and target_dirty C/4 (clio's
 *               dirty_hi and dirty_lo), writethrough_until_flush off
 *   writearound the same with policy writearound
 *   no cache    rbd_cache off
 * librbd's settings come from a copy of the cluster's ceph.conf with a
 * [client.ID] section appended (it overrides [client] and [global]),
 * named by CEPH_CONF in fio's environment.  Every case runs at queue
 * depth 1, as the program it stands for (dd) does, and is timed from
 * the image open (connected) to its final flush completing: clio from
 * clio_dev_open's return to clio_close's (which writes back), fio by its
 * own runtime (terse output, in ms), which includes end_fsync's flush
 * and leaves out its start and the connection.  MB/s = bytes / 10^6 /
 * that time.
 *
 * The workloads, over the first S bytes of the image (--size, default
 * 64M, 8M with --quick), filled before the first one: (a) sequential
 * writes of 4 KiB over S, flushed; (b) rewrites of 1 KiB over S/4 of the
 * existing data (seed 002's partial-block rewrite), flushed; (c)
 * sequential reads of 4 KiB over S, cold (a new process or a new cache
 * each time); (d) seeded random 4 KiB reads over 2C, half as many as the
 * blocks there (C = S/4), cold.  The ratio is clio's MB/s over the best
 * of librbd's two caches, with the targets of the issue (3x on (a) and
 * (b), 2x on (c), 1x on (d)).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "util.h"

enum rsys { R_CLIO, R_WB, R_WA, R_NONE, R_N };

static const struct {
	const char *key, *head, *progress, *policy; /* policy NULL: cache off */
} rsystems[R_N] = {
	{ "clio_mbs", "clio MB/s", "clio", NULL },
	{ "writeback_mbs", "writeback MB/s", "writeback", "writeback" },
	{ "writearound_mbs", "writearound MB/s", "writearound", "writearound" },
	{ "nocache_mbs", "no cache MB/s", "nocache", NULL },
};

enum rcase { W_SEQW, W_REWRITE, W_SEQR, W_RAND, W_N };

static const struct {
	const char *label;
	double target;
} rcases[W_N] = {
	{ "(a) sequential write bs=4k, flushed", 3 },
	{ "(b) rewrite bs=1k of existing data, flushed", 3 },
	{ "(c) sequential read bs=4k, cold", 2 },
	{ "(d) random 4k reads over twice the cache, cold", 1 },
};

struct rctx {
	const char *spec;		/* the device string */
	char pool[256], image[256], id[128], cluster[128];
	char conf[4096];		/* the cluster's ceph.conf */
	char dir[4096];			/* the temporary directory */
	char confs[R_N][4200];		/* each fio case's ceph.conf */
	char errlog[4200];		/* fio's stderr */
	char outlog[4200];		/* fio's terse output */
	uint64_t size, cache, nrand;
	uint64_t seed;
};

/* The part of spec after "rbd:" into the pool, image and the keys fio
 * needs; false with a message for what fio cannot do. */
static bool
parse_spec(struct rctx *x)
{
	const char *s = x->spec, *q, *slash;
	char query[1024], *kv, *save = NULL;

	if (strncmp(s, "rbd:", 4) != 0) {
		fprintf(stderr, "clio bench: rbd: --file '%s' is not an rbd:POOL/IMAGE device\n", s);
		return false;
	}
	s += 4;
	q = strchr(s, '?');
	slash = strchr(s, '/');
	if (slash == NULL || (q != NULL && slash > q) || slash == s ||
	    (size_t)(slash - s) >= sizeof(x->pool)) {
		fprintf(stderr, "clio bench: rbd: --file '%s': not rbd:POOL/IMAGE\n", x->spec);
		return false;
	}
	snprintf(x->pool, sizeof(x->pool), "%.*s", (int)(slash - s), s);
	snprintf(x->image, sizeof(x->image), "%.*s",
		 (int)(q != NULL ? (size_t)(q - slash - 1) : strlen(slash + 1)), slash + 1);
	if (x->image[0] == '\0' || strchr(x->image, '@') != NULL) {
		fprintf(stderr, "clio bench: rbd: --file '%s': an image, not a snapshot, "
			"is needed (the bench writes)\n", x->spec);
		return false;
	}
	snprintf(x->id, sizeof(x->id), "admin");
	snprintf(x->cluster, sizeof(x->cluster), "ceph");
	x->conf[0] = '\0';
	snprintf(query, sizeof(query), "%s", q != NULL ? q + 1 : "");
	for (kv = strtok_r(query, "&", &save); kv != NULL; kv = strtok_r(NULL, "&", &save)) {
		if (strncmp(kv, "conf=", 5) == 0)
			snprintf(x->conf, sizeof(x->conf), "%s", kv + 5);
		else if (strncmp(kv, "id=", 3) == 0)
			snprintf(x->id, sizeof(x->id), "%s", kv + 3);
		else if (strncmp(kv, "cluster=", 8) == 0)
			snprintf(x->cluster, sizeof(x->cluster), "%s", kv + 8);
	}
	if (x->conf[0] == '\0') {
		const char *env = getenv("CEPH_CONF");

		if (env != NULL && *env != '\0')
			snprintf(x->conf, sizeof(x->conf), "%s", env);
		else
			snprintf(x->conf, sizeof(x->conf), "/etc/ceph/%s.conf", x->cluster);
	}
	return true;
}

/* Each fio case's ceph.conf: the cluster's, then its [client.ID]. */
static bool
write_confs(struct rctx *x)
{
	FILE *in = fopen(x->conf, "r"), *out;
	char buf[65536];
	size_t n;
	int s;

	if (in == NULL) {
		fprintf(stderr, "clio bench: rbd: cannot read the Ceph configuration '%s': %s\n",
			x->conf, strerror(errno));
		return false;
	}
	n = fread(buf, 1, sizeof(buf) - 1, in);
	fclose(in);
	for (s = R_WB; s < R_N; s++) {
		snprintf(x->confs[s], sizeof(x->confs[s]), "%s/%s.conf", x->dir,
			 rsystems[s].progress);
		out = fopen(x->confs[s], "w");
		if (out == NULL || fwrite(buf, 1, n, out) != n) {
			fprintf(stderr, "clio bench: rbd: cannot write %s\n", x->confs[s]);
			if (out != NULL)
				fclose(out);
			return false;
		}
		fprintf(out, "\n[client.%s]\n", x->id);
		if (rsystems[s].policy == NULL) {
			fprintf(out, "rbd cache = false\n");
		} else {
			fprintf(out, "rbd cache = true\nrbd cache policy = %s\n"
				"rbd cache size = %llu\nrbd cache max dirty = %llu\n"
				"rbd cache target dirty = %llu\n"
				"rbd cache writethrough until flush = false\n",
				rsystems[s].policy, (unsigned long long)x->cache,
				(unsigned long long)x->cache / 2,
				(unsigned long long)x->cache / 4);
		}
		if (fclose(out) != 0)
			return false;
	}
	return true;
}

/* The [off, off + len) of the image filled with a pattern (untimed). */
static int
fill_image(struct rctx *x)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	clio_cache *c = NULL;
	clio_dev *d = NULL;
	clio_file *f = NULL;
	struct clio_dev_info in;
	char err[512], *buf = malloc(1 << 20);
	uint64_t off;
	size_t i;
	int r;

	if (buf == NULL)
		return -ENOMEM;
	for (i = 0; i < (1 << 20); i++)
		buf[i] = (char)(i * 31 + (i >> 12));
	r = clio_dev_open_err(x->spec, 0, &d, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "clio bench: rbd: %s\n", err);
		free(buf);
		return r;
	}
	if ((r = clio_dev_info(d, &in)) == 0 && in.size < x->size) {
		fprintf(stderr, "clio bench: rbd: the image '%s' has %llu bytes, fewer than "
			"--size %llu\n", x->spec, (unsigned long long)in.size,
			(unsigned long long)x->size);
		r = -ENOSPC;
	}
	if (r == 0)
		r = clio_cache_new(&conf, &c);
	if (r == 0)
		r = clio_open(c, d, CLIO_RDWR | CLIO_DIRECT, &f);
	for (off = 0; r == 0 && off < x->size; off += 1 << 20) {
		ssize_t w = clio_pwrite(f, buf, MIN(1 << 20, x->size - off), off);
		if (w < 0)
			r = (int)w;
	}
	if (f != NULL) {
		int fr = clio_fsync(f);

		if (r == 0)
			r = fr;
		clio_close(f);
	}
	if (c != NULL)
		clio_cache_free(c);
	clio_dev_close(d);
	free(buf);
	if (r < 0)
		fprintf(stderr, "clio bench: rbd: filling '%s': %s\n", x->spec, strerror(-r));
	return r;
}

static uint64_t
next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One clio case: seconds from the device's opening to its closing. */
static double
run_clio(struct rctx *x, enum rcase w)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	clio_cache *c = NULL;
	clio_dev *d = NULL;
	clio_file *f = NULL;
	char err[512], buf[4096];
	size_t bs = w == W_REWRITE ? 1024 : 4096;
	uint64_t off, end = w == W_REWRITE ? x->size / 4 : x->size, i, rng = x->seed;
	double t0, t;
	int r;

	memset(buf, 0x5a, sizeof(buf));
	conf.cache_size = x->cache;
	r = clio_dev_open_err(x->spec, 0, &d, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "clio bench: rbd: %s\n", err);
		return NAN;
	}
	t0 = now_monotonic();
	if ((r = clio_cache_new(&conf, &c)) == 0)
		r = clio_open(c, d, CLIO_RDWR, &f);
	switch (w) {
	case W_SEQW:
	case W_REWRITE:
		for (off = 0; r == 0 && off < end; off += bs)
			if (clio_pwrite(f, buf, bs, off) != (ssize_t)bs)
				r = -EIO;
		if (r == 0)
			r = clio_fsync(f);
		break;
	case W_SEQR:
		for (off = 0; r == 0 && off < end; off += bs)
			if (clio_pread(f, buf, bs, off) != (ssize_t)bs)
				r = -EIO;
		break;
	case W_RAND:
	default:
		for (i = 0; r == 0 && i < x->nrand; i++) {
			off = next_rand(&rng) % (2 * x->cache / 4096) * 4096;
			if (clio_pread(f, buf, 4096, off) != 4096)
				r = -EIO;
		}
		break;
	}
	if (f != NULL && clio_close(f) < 0)
		r = -EIO;
	t = now_monotonic() - t0;
	if (c != NULL && clio_cache_free(c) < 0)
		r = -EIO;
	clio_dev_close(d);
	if (r < 0) {
		fprintf(stderr, "clio bench: rbd: clio: %s\n", strerror(-r));
		return NAN;
	}
	return t;
}

/* field (1 up) of fio's terse line in path, or -1 */
static double
terse_field(const char *path, int field)
{
	FILE *fp = fopen(path, "r");
	char line[16384], *p, *save = NULL;
	int i = 0;

	if (fp == NULL)
		return -1;
	if (fgets(line, sizeof(line), fp) == NULL) {
		fclose(fp);
		return -1;
	}
	fclose(fp);
	for (p = strtok_r(line, ";", &save); p != NULL; p = strtok_r(NULL, ";", &save))
		if (++i == field)
			return atof(p);
	return -1;
}

/* One fio case: its runtime in seconds, or NaN (fio's errors printed). */
static double
run_fio(struct rctx *x, enum rcase w, enum rsys s)
{
	char a[16][4400];
	char *argv[17];
	double ms;
	pid_t pid;
	int n = 0, i, status;
	uint64_t end = w == W_REWRITE ? x->size / 4 : x->size;

	snprintf(a[n++], sizeof(a[0]), "fio");
	snprintf(a[n++], sizeof(a[0]), "--name=clio-bench-rbd");
	snprintf(a[n++], sizeof(a[0]), "--ioengine=rbd");
	snprintf(a[n++], sizeof(a[0]), "--clientname=%s", x->id);
	snprintf(a[n++], sizeof(a[0]), "--clustername=%s", x->cluster);
	snprintf(a[n++], sizeof(a[0]), "--pool=%s", x->pool);
	snprintf(a[n++], sizeof(a[0]), "--rbdname=%s", x->image);
	snprintf(a[n++], sizeof(a[0]), "--iodepth=1");
	snprintf(a[n++], sizeof(a[0]), "--output-format=terse");
	snprintf(a[n++], sizeof(a[0]), "--bs=%s", w == W_REWRITE ? "1k" : "4k");
	switch (w) {
	case W_SEQW:
	case W_REWRITE:
		snprintf(a[n++], sizeof(a[0]), "--rw=write");
		snprintf(a[n++], sizeof(a[0]), "--size=%llu", (unsigned long long)end);
		snprintf(a[n++], sizeof(a[0]), "--end_fsync=1");
		break;
	case W_SEQR:
		snprintf(a[n++], sizeof(a[0]), "--rw=read");
		snprintf(a[n++], sizeof(a[0]), "--size=%llu", (unsigned long long)end);
		break;
	case W_RAND:
	default:
		snprintf(a[n++], sizeof(a[0]), "--rw=randread");
		snprintf(a[n++], sizeof(a[0]), "--size=%llu", (unsigned long long)(2 * x->cache));
		snprintf(a[n++], sizeof(a[0]), "--number_ios=%llu", (unsigned long long)x->nrand);
		snprintf(a[n++], sizeof(a[0]), "--norandommap=1");
		snprintf(a[n++], sizeof(a[0]), "--randseed=%llu", (unsigned long long)x->seed);
		break;
	}
	for (i = 0; i < n; i++)
		argv[i] = a[i];
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		return NAN;
	if (pid == 0) {
		int o = open(x->outlog, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(x->errlog, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (o >= 0)
			dup2(o, 1);
		if (e >= 0)
			dup2(e, 2);
		setenv("CEPH_CONF", x->confs[s], 1);
		execvp("fio", argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		FILE *fp = fopen(x->errlog, "r");
		char line[512];

		fprintf(stderr, "clio bench: rbd: fio (%s) failed:\n", rsystems[s].progress);
		while (fp != NULL && fgets(line, sizeof(line), fp) != NULL)
			fprintf(stderr, "  %s", line);
		if (fp != NULL)
			fclose(fp);
		return NAN;
	}
	/* terse version 3: the read runtime is field 9, the write one 50 */
	ms = terse_field(x->outlog, w == W_SEQW || w == W_REWRITE ? 50 : 9);
	if (ms <= 0) {
		fprintf(stderr, "clio bench: rbd: fio (%s): no runtime in its output\n",
			rsystems[s].progress);
		return NAN;
	}
	return ms / 1000.0;
}

static uint64_t
case_bytes(const struct rctx *x, enum rcase w)
{
	switch (w) {
	case W_REWRITE:
		return x->size / 4;
	case W_RAND:
		return x->nrand * 4096;
	default:
		return x->size;
	}
}

int
exp_rbd(const struct bench_opts *bo, struct table *t)
{
	struct rctx *x;
	char perrun[1024] = "";
	bool progress = isatty(2) && !bo->json;
	double *v;
	int w, s, run, rc = 0;
	const char *tmp = getenv("TMPDIR");

	if (bo->file == NULL) {
		fprintf(stderr, "clio bench: rbd needs --file rbd:POOL/IMAGE[?conf=PATH&id=NAME] "
			"(an image it may overwrite)\n");
		return -1;
	}
	if (!bench_have("fio")) {
		fprintf(stderr, "clio bench: rbd: fio not found (apt-get install fio)\n");
		return -1;
	}
	x = calloc(1, sizeof(*x));
	v = calloc((size_t)bo->runs * R_N, sizeof(double));
	if (x == NULL || v == NULL) {
		free(x);
		free(v);
		return -1;
	}
	x->spec = bo->file;
	x->size = bo->size ? bo->size : bo->quick ? 8ull << 20 : 64ull << 20;
	x->size = x->size / (1 << 20) * (1 << 20);
	x->cache = x->size / 4;
	x->nrand = 2 * x->cache / 4096 / 2;
	x->seed = 20021;
	if (tmp == NULL || *tmp == '\0')
		tmp = "/var/tmp";
	snprintf(x->dir, sizeof(x->dir), "%s/clio-bench-rbd.XXXXXX", tmp);
	if (!parse_spec(x) || mkdtemp(x->dir) == NULL) {
		if (x->id[0] != '\0') /* parsed: mkdtemp failed */
			fprintf(stderr, "clio bench: rbd: cannot create a directory in %s: %s\n",
				tmp, strerror(errno));
		free(x);
		free(v);
		return -1;
	}
	snprintf(x->errlog, sizeof(x->errlog), "%s/fio.err", x->dir);
	snprintf(x->outlog, sizeof(x->outlog), "%s/fio.out", x->dir);
	if (!write_confs(x) || fill_image(x) < 0) {
		rc = -1;
		goto out;
	}

	table_init(t, "rbd",
		   "rbd: clio over an RBD image (rbd_cache=false) against librbd's cache "
		   "through fio's rbd engine (MB/s = 10^6 B/s, median of the runs)");
	table_col(t, "workload", "workload", -1);
	for (s = 0; s < R_N; s++)
		table_col(t, rsystems[s].key, rsystems[s].head, 1);
	table_col(t, "ratio", "clio/best cache", 2);
	table_col(t, "ratio_nocache", "clio/no cache", 2);
	table_col(t, "target", "target", 1);
	table_col(t, "met", "met", -1);
	for (w = 0; w < W_N; w++) {
		int row = table_row(t);
		double med[R_N], best;
		size_t len;

		table_str(t, row, "workload", rcases[w].label);
		table_num(t, row, "target", rcases[w].target);
		/* the systems take turns: a slow spell falls on all alike */
		for (run = 0; run < bo->runs; run++)
			for (s = 0; s < R_N; s++) {
				double secs;

				if (progress)
					fprintf(stderr, "\r  rbd: case %d/%d, run %d/%d, %-12s",
						w + 1, W_N, run + 1, bo->runs, rsystems[s].progress);
				secs = s == R_CLIO ? run_clio(x, (enum rcase)w)
						   : run_fio(x, (enum rcase)w, (enum rsys)s);
				v[s * bo->runs + run] = isnan(secs) || secs <= 0
					? NAN : (double)case_bytes(x, (enum rcase)w) / 1e6 / secs;
			}
		for (s = 0; s < R_N; s++) {
			med[s] = bench_median(v + s * bo->runs, bo->runs);
			table_num(t, row, rsystems[s].key, med[s]);
		}
		best = fmax(isnan(med[R_WB]) ? 0 : med[R_WB], isnan(med[R_WA]) ? 0 : med[R_WA]);
		if (!isnan(med[R_CLIO]) && best > 0) {
			table_num(t, row, "ratio", med[R_CLIO] / best);
			table_str(t, row, "met", med[R_CLIO] / best >= rcases[w].target ? "yes" : "NO");
		} else {
			table_str(t, row, "met", "-");
		}
		if (!isnan(med[R_CLIO]) && !isnan(med[R_NONE]) && med[R_NONE] > 0)
			table_num(t, row, "ratio_nocache", med[R_CLIO] / med[R_NONE]);
		if (isnan(med[R_CLIO]))
			rc = -1;
		/* clio over the best cache in each run */
		len = strlen(perrun);
		snprintf(perrun + len, sizeof(perrun) - len, "%s%.3s", len ? "; " : "",
			 rcases[w].label);
		for (run = 0; run < bo->runs; run++) {
			double c = v[R_CLIO * bo->runs + run];
			double b = fmax(v[R_WB * bo->runs + run], v[R_WA * bo->runs + run]);

			len = strlen(perrun);
			if (isnan(c) || isnan(b) || b <= 0)
				snprintf(perrun + len, sizeof(perrun) - len, " -");
			else
				snprintf(perrun + len, sizeof(perrun) - len, " %.2f", c / b);
		}
	}
	if (progress)
		fprintf(stderr, "\r%60s\r", "");
	snprintf(t->note, sizeof(t->note),
		 "  image %s, S = %llu MiB, caches C = %llu MiB (clio cache_size; librbd "
		 "rbd_cache_size, max_dirty C/2, target_dirty C/4, writethrough_until_flush "
		 "off), %d run%s per case, queue depth 1;\n"
		 "  (a) over S, (b) over S/4, (c) over S, (d) %llu reads over 2C; each case "
		 "timed from the image open to its final flush completing (fio: its runtime).\n"
		 "  clio/best cache in each run (the systems take turns): %s%s",
		 x->spec, (unsigned long long)(x->size >> 20), (unsigned long long)(x->cache >> 20),
		 bo->runs, bo->runs > 1 ? "s" : "", (unsigned long long)x->nrand, perrun,
		 x->size < (64ull << 20)
			 ? "\n  A small size: the targets are for the default 64 MiB."
			 : "");
out:
	for (s = R_WB; s < R_N; s++)
		if (x->confs[s][0])
			unlink(x->confs[s]);
	unlink(x->errlog);
	unlink(x->outlog);
	rmdir(x->dir);
	free(v);
	free(x);
	return rc;
}
