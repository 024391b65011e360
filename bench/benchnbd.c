/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchnbd.c - `clio bench nbd`: fio's nbd engine against nbdkit's file
 * plugin with nothing, nbdkit's own filters, or clio's filter between
 * them, each over a local file and over a remote disk (nbdkit's delay
 * filter below, closest to the plugin: rdelay=1ms wdelay=1ms); and the
 * copy of an image out of the delayed server, clio dd (the NBD client
 * backend) against nbdcopy.
 *
 *   (A) nbdkit file IMG
 *   (B) nbdkit --filter=readahead --filter=cache file IMG
 *   (C) nbdkit --filter=nbdkit-clio-filter.so file IMG cache_size=2*IMG
 *       (the filter next to the clio binary, as clio serve finds the
 *       plugin)
 *   (N) nbdkit null SIZE, without the delay: a server that keeps no data
 *       and does no work, so what fio's nbd engine reaches against it at
 *       a workload's depth bounds every system (within the runs' noise);
 *       the note names the targets not met that lie above it (3x (B) with
 *       the delay): out of reach of any filter on the machine
 *
 * Invariants:
 *  1. Every measurement gets a server of its own, started for it and
 *     stopped after it (SIGTERM, then SIGKILL, always reaped): no cache
 *     starts warm, and writes are on the image before the next server
 *     opens it.  Servers listen on Unix sockets in a temporary directory
 *     (${TMPDIR:-/var/tmp}), run in the foreground (-f) as children, are
 *     ready once their pid file is written, and are stopped by their pid.
 *  2. The systems take turns within each run of a case; the median of
 *     --runs is reported.  MB/s is 10^6 B/s over fio's own runtime of the
 *     job (which includes end_fsync's flush).
 *  3. One image file for every system, rewritten by the write cases;
 *     the kernel's page cache holds it alike for all.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "util.h"

#ifndef CLIO_LIBDIR
#define CLIO_LIBDIR "/usr/local/lib"
#endif
#define FILTER_NAME "nbdkit-clio-filter.so"

enum nsys { N_A, N_B, N_C, N_NULL, N_SYS };

static const struct {
	const char *key, *head, *progress;
} nsystems[N_SYS] = {
	{ "a_mbs", "(A) file MB/s", "A" },
	{ "b_mbs", "(B) +readahead+cache MB/s", "B" },
	{ "c_mbs", "(C) +clio MB/s", "C" },
	{ "null_mbs", "(N) null MB/s", "N" },
};

enum ncase { W_SEQREAD, W_SEQWRITE, W_REWRITE, W_RANDREAD, W_NCASES };

static const struct {
	const char *label, *brief;
	double target_b; /* C/B with the delay; 0: none */
} ncases[W_NCASES] = {
	{ "sequential read bs=4k", "seq read", 3 },
	{ "sequential write bs=4k, end_fsync", "seq write", 3 },
	{ "partial rewrite bs=1k, end_fsync", "rewrite", 3 },
	{ "random read 4k iodepth=16", "random read", 0 },
};

struct nctx {
	char dir[4096];
	char img[4200], sock[4200], fioout[4200], log[4200], pidf[4200];
	char filter[4200];
	char self[4096];
	uint64_t size;		/* the image */
	uint64_t part;		/* the rewrite's and the random reads' bytes */
};

static volatile sig_atomic_t nstop;

static void
on_signal(int sig)
{
	(void)sig;
	nstop = 1;
}

/* The filter: next to the binary, in LIBDIR/clio, in ../lib/clio. */
static int
find_filter(const char *self, char *out, size_t len)
{
	char dir[4096], *slash;

	snprintf(dir, sizeof(dir), "%s", self);
	slash = strrchr(dir, '/');
	if (slash != NULL)
		*slash = '\0';
	snprintf(out, len, "%s/%s", dir, FILTER_NAME);
	if (access(out, R_OK) == 0)
		return 0;
	snprintf(out, len, "%s/clio/%s", CLIO_LIBDIR, FILTER_NAME);
	if (access(out, R_OK) == 0)
		return 0;
	snprintf(out, len, "%s/../lib/clio/%s", dir, FILTER_NAME);
	return access(out, R_OK) == 0 ? 0 : -1;
}

/* nbdkit writes its pid file once it accepts connections (a bare probe
 * connection instead would make it log a failed handshake). */
static bool
server_ready(const char *pidfile)
{
	struct stat st;

	return stat(pidfile, &st) == 0 && st.st_size > 0;
}

static void
server_stop(pid_t pid)
{
	int i, status;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (i = 0; i < 200; i++) { /* 10 s to write back and exit */
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return;
		usleep(50000);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

/* Start system s (delayed or not) on m->sock: its pid once it accepts
 * connections, or -1 (stopped and reaped). */
static pid_t
server_start(struct nctx *m, int s, bool delay)
{
	char filt[4300], cs[64];
	const char *argv[24];
	int n = 0, i;
	pid_t pid;

	unlink(m->sock);
	unlink(m->pidf);
	argv[n++] = "nbdkit";
	argv[n++] = "-f";
	argv[n++] = "-U";
	argv[n++] = m->sock;
	argv[n++] = "--pidfile";
	argv[n++] = m->pidf;
	if (s == N_B) {
		argv[n++] = "--filter=readahead";
		argv[n++] = "--filter=cache";
	} else if (s == N_C) {
		snprintf(filt, sizeof(filt), "--filter=%s", m->filter);
		argv[n++] = filt;
	}
	if (s == N_NULL) {
		snprintf(cs, sizeof(cs), "size=%llu", (unsigned long long)m->size);
		argv[n++] = "null";
		argv[n++] = cs;
		goto argv_done;
	}
	if (delay)
		argv[n++] = "--filter=delay";
	argv[n++] = "file";
	argv[n++] = m->img;
	if (delay) {
		argv[n++] = "rdelay=1ms";
		argv[n++] = "wdelay=1ms";
	}
	if (s == N_C) {
		snprintf(cs, sizeof(cs), "cache_size=%llu",
			 (unsigned long long)(2 * m->size));
		argv[n++] = cs;
	}
argv_done:
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR),
		    log = open(m->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		if (log >= 0)
			dup2(log, 2);
		execvp("nbdkit", (char *const *)argv);
		_exit(127);
	}
	for (i = 0; i < 200; i++) { /* 10 s to come up */
		int status;
		if (server_ready(m->pidf))
			return pid;
		if (waitpid(pid, &status, WNOHANG) == pid)
			return -1;
		usleep(20000);
	}
	server_stop(pid);
	return -1;
}

/* fio's JSON: bytes / runtime of the read or write side, MB/s, or NaN. */
static double
fio_mbs(const char *path, bool write)
{
	FILE *fp = fopen(path, "r");
	char *buf, *p, *q;
	long len;
	double bytes, ms;

	if (fp == NULL)
		return NAN;
	fseek(fp, 0, SEEK_END);
	len = ftell(fp);
	rewind(fp);
	buf = len > 0 ? malloc((size_t)len + 1) : NULL;
	if (buf == NULL || fread(buf, 1, (size_t)len, fp) != (size_t)len) {
		free(buf);
		fclose(fp);
		return NAN;
	}
	fclose(fp);
	buf[len] = '\0';
	p = strstr(buf, write ? "\"write\" :" : "\"read\" :");
	if (p == NULL || (q = strstr(p, "\"io_bytes\" :")) == NULL) {
		free(buf);
		return NAN;
	}
	bytes = strtod(q + 12, NULL);
	q = strstr(p, "\"runtime\" :");
	ms = q != NULL ? strtod(q + 11, NULL) : 0;
	free(buf);
	if (ms <= 0 || bytes <= 0)
		return NAN;
	return bytes / 1e6 / (ms / 1e3);
}

/* One run of case w on system s: MB/s or NaN. */
static double
run_case(struct nctx *m, enum ncase w, int s, bool delay)
{
	char uri[4300], out[4300], size[64], iosize[64];
	const char *rw, *bs, *depth = "--iodepth=1", *fsync = "--end_fsync=0";
	double t;
	pid_t pid;

	snprintf(size, sizeof(size), "--size=%llu", (unsigned long long)m->size);
	snprintf(iosize, sizeof(iosize), "--io_size=%llu", (unsigned long long)m->size);
	switch (w) {
	case W_SEQREAD:
		rw = "--rw=read", bs = "--bs=4k";
		break;
	case W_SEQWRITE:
		rw = "--rw=write", bs = "--bs=4k", fsync = "--end_fsync=1";
		break;
	case W_REWRITE:
		rw = "--rw=write", bs = "--bs=1k", fsync = "--end_fsync=1";
		snprintf(size, sizeof(size), "--size=%llu", (unsigned long long)m->part);
		break;
	case W_RANDREAD:
	default:
		rw = "--rw=randread", bs = "--bs=4k", depth = "--iodepth=16";
		snprintf(iosize, sizeof(iosize), "--io_size=%llu",
			 (unsigned long long)m->part);
		break;
	}
	pid = server_start(m, s, delay);
	if (pid < 0) {
		char msg[1024] = "";
		FILE *fp = fopen(m->log, "r");
		if (fp != NULL) {
			msg[fread(msg, 1, sizeof(msg) - 1, fp)] = '\0';
			fclose(fp);
		}
		fprintf(stderr, "clio bench: nbd: the server of %s did not come up%s%s\n",
			nsystems[s].progress, msg[0] ? ":\n" : "", msg);
		return NAN;
	}
	snprintf(uri, sizeof(uri), "--uri=nbd+unix:///?socket=%s", m->sock);
	snprintf(out, sizeof(out), "--output=%s", m->fioout);
	unlink(m->fioout);
	char *argv[] = { "fio", "--name=nbd", "--ioengine=nbd", uri,
			 (char *)rw, (char *)bs, (char *)depth, size, iosize,
			 (char *)fsync, "--randrepeat=1", "--randseed=2",
			 "--norandommap", "--output-format=json", out, NULL };
	t = bench_run_quiet(argv);
	server_stop(pid);
	if (isnan(t))
		return NAN;
	return fio_mbs(m->fioout, w == W_SEQWRITE || w == W_REWRITE);
}

/* The copy out of the delayed (A): clio dd or nbdcopy, MB/s or NaN. */
static double
run_copy(struct nctx *m, bool clio)
{
	char uri[4300], ifarg[4400];
	double t;
	pid_t pid = server_start(m, N_A, true);

	if (pid < 0)
		return NAN;
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", m->sock);
	snprintf(ifarg, sizeof(ifarg), "if=%s", uri);
	char *dd[] = { m->self, "dd", ifarg, "of=/dev/null", "bs=1M", NULL };
	char *cp[] = { "nbdcopy", uri, "null:", NULL };
	t = bench_run_quiet(clio ? dd : cp);
	server_stop(pid);
	if (isnan(t) || t <= 0)
		return NAN;
	return (double)m->size / 1e6 / t;
}

/* The image (mult times the default size), the filter, the directory. */
static int
setup(const struct bench_opts *bo, struct nctx *m, uint64_t mult)
{
	const char *tmp = getenv("TMPDIR");
	ssize_t sl;
	int r;

	if (!bench_have("nbdkit") || !bench_have("fio")) {
		fprintf(stderr, "clio bench: nbd: nbdkit and fio are needed "
			"(apt-get install nbdkit fio)\n");
		return -1;
	}
	sl = readlink("/proc/self/exe", m->self, sizeof(m->self) - 1);
	if (sl <= 0) {
		fprintf(stderr, "clio bench: nbd: /proc/self/exe: %s\n", strerror(errno));
		return -1;
	}
	m->self[sl] = '\0';
	if (find_filter(m->self, m->filter, sizeof(m->filter)) < 0) {
		fprintf(stderr, "clio bench: nbd: no %s beside %s\n", FILTER_NAME, m->self);
		return -1;
	}
	if (tmp == NULL || *tmp == '\0')
		tmp = "/var/tmp";
	m->size = mult * (bo->size ? bo->size : bo->quick ? 4ull << 20 : 16ull << 20);
	m->size = m->size / 65536 * 65536;
	m->part = MIN(MAX(m->size / 4 / 65536 * 65536, 1u << 20), m->size); /* ms of fio */
	snprintf(m->dir, sizeof(m->dir), "%s/clio-bench-nbd.XXXXXX", tmp);
	if (mkdtemp(m->dir) == NULL) {
		fprintf(stderr, "clio bench: cannot create a directory in %s: %s\n", tmp,
			strerror(errno));
		return -1;
	}
	snprintf(m->img, sizeof(m->img), "%s/img", m->dir);
	snprintf(m->sock, sizeof(m->sock), "%s/sock", m->dir);
	snprintf(m->fioout, sizeof(m->fioout), "%s/fio.json", m->dir);
	snprintf(m->log, sizeof(m->log), "%s/nbdkit.log", m->dir);
	snprintf(m->pidf, sizeof(m->pidf), "%s/nbdkit.pid", m->dir);
	if (strlen(m->sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		fprintf(stderr, "clio bench: nbd: socket path too long: %s\n", m->sock);
		rmdir(m->dir);
		return -1;
	}
	if ((r = bench_make_file(m->img, m->size)) < 0) {
		fprintf(stderr, "clio bench: cannot write %s: %s\n", m->img, strerror(-r));
		unlink(m->img);
		rmdir(m->dir);
		return -1;
	}
	return 0;
}

static void
teardown(struct nctx *m)
{
	unlink(m->img);
	unlink(m->sock);
	unlink(m->fioout);
	unlink(m->log);
	unlink(m->pidf);
	rmdir(m->dir);
}

static void
catch_signals(struct sigaction *old_int, struct sigaction *old_term)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	nstop = 0;
	sigaction(SIGINT, &sa, old_int);
	sigaction(SIGTERM, &sa, old_term);
}

/* Puts back what catch_signals() replaced; -1 (said) if a signal came. */
static int
release_signals(const struct sigaction *old_int, const struct sigaction *old_term)
{
	sigaction(SIGINT, old_int, NULL);
	sigaction(SIGTERM, old_term, NULL);
	if (!nstop)
		return 0;
	fprintf(stderr, "clio bench: nbd: interrupted\n");
	return -1;
}

static void
met(struct table *t, int row, const char *key, double ratio, double target,
    bool *all)
{
	if (isnan(ratio))
		return;
	if (ratio < target)
		*all = false;
	table_num(t, row, key, target);
}

/* Append "label: r1 r2 ..." to buf, C/B of each of the n runs (v as in
 * exp_nbd), so that the spread shows beside the median. */
static void
perrun_ratios(char *buf, size_t size, const char *label, const double *v,
	      int runs, int n)
{
	size_t len = strlen(buf);
	int run;

	snprintf(buf + len, size - len, "%s%s:", len > 0 ? "; " : "", label);
	for (run = 0; run < n && run < 10; run++) {
		double b = v[N_B * runs + run], c = v[N_C * runs + run];

		len = strlen(buf);
		if (isnan(b) || isnan(c) || b <= 0)
			snprintf(buf + len, size - len, " -");
		else
			snprintf(buf + len, size - len, " %.2f", c / b);
	}
}

int
exp_nbd(const struct bench_opts *bo, struct table *t)
{
	struct sigaction old_int, old_term;
	struct nctx *m = calloc(1, sizeof(*m));
	bool progress = isatty(2) && !bo->json;
	char perrun[1024] = "", above[512] = "";
	double *v, ceiling[W_NCASES];
	int w, d, s, run, rc = 0;

	if (m == NULL || setup(bo, m, 1) < 0) {
		free(m);
		return -1;
	}
	v = calloc((size_t)bo->runs * N_SYS, sizeof(double));
	if (v == NULL) {
		teardown(m);
		free(m);
		return -1;
	}
	catch_signals(&old_int, &old_term);
	table_init(t, "nbd",
		   "nbd: fio's nbd engine against nbdkit's file plugin "
		   "(MB/s = 10^6 B/s, median of the runs)");
	table_col(t, "workload", "workload", -1);
	table_col(t, "delay", "delay", -1);
	for (s = 0; s < N_SYS; s++)
		table_col(t, nsystems[s].key, nsystems[s].head, 1);
	table_col(t, "ratio_c_b", "C/B", 2);
	table_col(t, "target_c_b", "target", 1);
	table_col(t, "ratio_c_best", "C/max(A,B)", 2);
	table_col(t, "target_c_best", "target", 1);
	table_col(t, "met", "met", -1);
	for (w = 0; w < W_NCASES && !nstop; w++)
		for (d = 0; d < 2 && !nstop; d++) {
			int row = table_row(t);
			double med[N_SYS], best, rb = NAN, rbest = NAN;
			bool all = true;

			table_str(t, row, "workload", ncases[w].label);
			table_str(t, row, "delay", d ? "1ms" : "none");
			/* the systems take turns: a slow spell falls on all alike */
			for (run = 0; run < bo->runs && !nstop; run++)
				for (s = 0; s < N_SYS && !nstop; s++) {
					if (s == N_NULL && d == 1)
						continue; /* the bound is the one without */
					if (progress)
						fprintf(stderr, "\r  nbd: case %d/%d, run %d/%d, %s",
							w * 2 + d + 1, 2 * W_NCASES, run + 1,
							bo->runs, nsystems[s].progress);
					v[s * bo->runs + run] =
						run_case(m, (enum ncase)w, s, d == 1);
				}
			for (s = 0; s < N_SYS; s++) {
				med[s] = s == N_NULL && d == 1 ? ceiling[w]
							       : bench_median(v + s * bo->runs, bo->runs);
				table_num(t, row, nsystems[s].key, med[s]);
			}
			if (d == 0)
				ceiling[w] = med[N_NULL];
			best = MAX(med[N_A], med[N_B]);
			if (!isnan(med[N_C]) && med[N_B] > 0)
				table_num(t, row, "ratio_c_b", rb = med[N_C] / med[N_B]);
			if (!isnan(med[N_C]) && best > 0)
				table_num(t, row, "ratio_c_best", rbest = med[N_C] / best);
			if (d == 1 && ncases[w].target_b > 0) {
				met(t, row, "target_c_b", rb, ncases[w].target_b, &all);
				perrun_ratios(perrun, sizeof(perrun), ncases[w].brief,
					      v, bo->runs, run);
				if (rb < ncases[w].target_b &&
				    ncases[w].target_b * med[N_B] > med[N_NULL]) {
					size_t len = strlen(above);
					snprintf(above + len, sizeof(above) - len,
						 "%s%s (%.0fx (B) = %.1f MB/s, (N) %.1f)",
						 len > 0 ? "; " : "", ncases[w].brief,
						 ncases[w].target_b,
						 ncases[w].target_b * med[N_B], med[N_NULL]);
				}
			}
			met(t, row, "target_c_best", rbest, 1.0, &all);
			if (!isnan(rbest) && (!isnan(rb) || !(d == 1 && ncases[w].target_b > 0)))
				table_str(t, row, "met", all ? "yes" : "NO");
		}
	if (progress)
		fprintf(stderr, "\r%50s\r", "");
	if (release_signals(&old_int, &old_term) < 0)
		rc = -1;
	snprintf(t->note, sizeof(t->note),
		 "  image %llu KiB in %.200s (the rewrite and the random reads: %llu KiB), "
		 "%d run%s per case, the systems taking turns, a new server for "
		 "each measurement, on a Unix socket;\n"
		 "  (A) nbdkit file; (B) nbdkit --filter=readahead --filter=cache "
		 "file (their defaults); (C) nbdkit --filter=%s file cache_size=%llu "
		 "(default tunables otherwise);\n"
		 "  delay 1ms: nbdkit's delay filter below (rdelay=1ms wdelay=1ms). "
		 "fio --ioengine=nbd, iodepth 1 but for the random reads; writes end "
		 "with end_fsync=1 (a FLUSH), inside fio's runtime.\n"
		 "  (N) nbdkit null (no data, no work), without the delay, its figure "
		 "repeated in the delayed rows: how fast fio's nbd engine goes at that depth "
		 "against a server that does nothing, a bound for every system (within the "
		 "runs' noise).%s%.400s%s%.300s",
		 (unsigned long long)(m->size >> 10), m->dir,
		 (unsigned long long)(m->part >> 10), bo->runs, bo->runs > 1 ? "s" : "",
		 FILTER_NAME, (unsigned long long)(2 * m->size),
		 perrun[0] ? "\n  C/B with the delay in each run (the systems take turns): " : "",
		 perrun,
		 above[0] ? "\n  targets not met that lie above (N), out of reach of any filter "
			    "on this machine: " : "",
		 above);
	teardown(m);
	free(v);
	free(m);
	return rc;
}

/* The second table: the copy out of the delayed server. */
int
exp_nbd_copy(const struct bench_opts *bo, struct table *t)
{
	struct sigaction old_int, old_term;
	struct nctx *m = calloc(1, sizeof(*m));
	double v[2][100], med[2];
	int run, i, row, rc = 0;

	if (!bench_have("nbdcopy")) {
		fprintf(stderr, "clio bench: nbd: nbdcopy is needed (apt-get install libnbd-bin)\n");
		free(m);
		return -1;
	}
	if (m == NULL || setup(bo, m, 4) < 0) {
		free(m);
		return -1;
	}
	catch_signals(&old_int, &old_term);
	table_init(t, "nbd_copy",
		   "nbd copy: the image out of nbdkit's delayed file plugin "
		   "(MB/s = 10^6 B/s, median of the runs)");
	table_col(t, "workload", "workload", -1);
	table_col(t, "nbdcopy_mbs", "nbdcopy MB/s", 1);
	table_col(t, "clio_dd_mbs", "clio dd MB/s", 1);
	table_col(t, "ratio", "clio dd/nbdcopy", 2);
	table_col(t, "target", "target", 1);
	table_col(t, "met", "met", -1);
	for (run = 0; run < bo->runs && run < 100 && !nstop; run++)
		for (i = 0; i < 2 && !nstop; i++)
			v[i][run] = run_copy(m, i == 1);
	row = table_row(t);
	table_str(t, row, "workload", "copy to null, delay 1ms");
	for (i = 0; i < 2; i++)
		med[i] = bench_median(v[i], MIN(run, 100));
	table_num(t, row, "nbdcopy_mbs", med[0]);
	table_num(t, row, "clio_dd_mbs", med[1]);
	table_num(t, row, "target", 1.0);
	if (!isnan(med[0]) && !isnan(med[1]) && med[0] > 0) {
		table_num(t, row, "ratio", med[1] / med[0]);
		table_str(t, row, "met", med[1] / med[0] >= 1.0 ? "yes" : "NO");
	}
	if (release_signals(&old_int, &old_term) < 0)
		rc = -1;
	snprintf(t->note, sizeof(t->note),
		 "  %llu MiB out of nbdkit --filter=delay file IMG rdelay=1ms "
		 "wdelay=1ms on a Unix socket, a new server for each copy, taking "
		 "turns, %d run%s: nbdcopy URI null: (its defaults) against clio dd "
		 "if=URI of=/dev/null bs=1M (the NBD client backend's defaults); "
		 "wall time of each command.",
		 (unsigned long long)(m->size >> 20), bo->runs, bo->runs > 1 ? "s" : "");
	teardown(m);
	free(m);
	return rc;
}
