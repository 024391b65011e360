/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchmeta.c - the second table of `clio bench mount`: small files and
 * metadata, timed in seconds, the kernel, clio's mounts and libfuse's
 * passthrough_ll example taking turns within each run.
 *
 * A directory SRC under ${TMPDIR:-/var/tmp} is the source of every
 * mount; each system works in its own subdirectory meta-NAME of it (the
 * kernel in SRC directly, the others through their mount points):
 *   (f) create small files: `echo x >fN` in a shell loop;
 *   (g) extract a tree of about 1 MB with tar, again and again, each time
 *       into a new directory; the tree is made by the bench (text files
 *       of 1 to 16 KiB in 8 directories) and packed once;
 *   (h) cat of every file and grep -r over the trees (g) left, warm;
 *   (i) git status in a git checkout of the tree on the mount, after a
 *       first one that is not timed, again and again.
 * (f) and (g) start each run from an empty directory (its removal is not
 * timed).  Invariants: every mount is unmounted and reaped whatever
 * happens (benchmount.c's helpers), and the temporary directory is
 * removed only when no mount is left in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

enum xsys { X_KERNEL, X_MOUNT, X_NOKC, X_PLAIN, X_PLL, X_N };

static const struct {
	const char *key, *head, *name, *opts;
} xsystems[X_N] = {
	{ "kernel_s", "kernel s", "kernel", NULL },
	{ "mount_s", "clio mount s", "mount", "" },
	{ "mount_nokcache_s", "kcache=off s", "nokcache", "kernel_cache=off" },
	{ "plain_s", "plain FUSE s", "plain", "cache=off" },
	{ "passthrough_ll_s", "passthrough_ll s", "pll", NULL },
};

enum xcase { X_CREATE, X_TAR, X_READ, X_GIT, X_NCASES };

static const char *const xlabels[X_NCASES] = {
	"(f) create small files (echo x >fN)",
	"(g) extract a 1 MB tree with tar",
	"(h) cat all files, grep -r",
	"(i) git status, after the first",
};

/* What each case runs, with sh -c in the system's directory:
 * $1 the tree's archive, $2 the count. */
static const char *const xprep[X_NCASES] = {
	"rm -rf f && mkdir f",
	"rm -rf g && mkdir g",
	NULL,
	NULL,
};
static const char *const xtimed[X_NCASES] = {
	"cd f && i=0; while [ $i -lt $2 ]; do echo x >f$i || exit 1; i=$((i + 1)); done",
	"cd g && i=0; while [ $i -lt $2 ]; do mkdir t$i && tar -xf \"$1\" -C t$i || exit 1;"
	" i=$((i + 1)); done",
	"cd g && find . -type f -exec cat {} + >/dev/null && grep -r -c clio . >/dev/null",
	"cd i && i=0; while [ $i -lt $2 ]; do git status >/dev/null || exit 1;"
	" i=$((i + 1)); done",
};
/* Once per system before the runs: the checkout and its first status. */
static const char git_setup[] =
	"rm -rf i && mkdir i && cd i && tar -xf \"$1\" && git init -q &&"
	" git add -A && git -c user.name=clio -c user.email=clio@localhost"
	" commit -qm tree && git status >/dev/null";

struct xctx {
	char dir[4096];		/* the temporary directory */
	char src[4200];		/* SRC */
	char tar[4200];		/* the tree's archive */
	char mnt[X_N][4200];	/* mount points ("": none) */
	char work[X_N][4400];	/* each system's directory ("": none) */
	pid_t pid[X_N];
	bool up[X_N];
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* sh -c script in dir with $1 arg1, $2 arg2: its wall time, or NaN if it
 * failed. */
static double
run_script(const char *dir, const char *script, const char *arg1, const char *arg2)
{
	double t0 = now_s();
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return NAN;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		if (chdir(dir) < 0)
			_exit(126);
		execlp("sh", "sh", "-c", script, "sh", arg1, arg2, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return NAN;
	return now_s() - t0;
}

/* The tree: 8 directories of 16 text files, 1 to 16 KiB each (about
 * 1 MB), packed into x->tar. */
static int
make_tree(struct xctx *x)
{
	char gen[4300], path[4400];
	unsigned d, f, seed = 12345;

	snprintf(gen, sizeof(gen), "%s/tree", x->dir);
	if (mkdir(gen, 0700) < 0)
		return -1;
	for (d = 0; d < 8; d++) {
		snprintf(path, sizeof(path), "%s/dir%u", gen, d);
		if (mkdir(path, 0700) < 0)
			return -1;
		for (f = 0; f < 16; f++) {
			FILE *fp;
			size_t size, done = 0;

			seed = seed * 1103515245u + 12345u;
			size = 1024 + (seed >> 8) % (15 * 1024);
			snprintf(path, sizeof(path), "%s/dir%u/file%u.c", gen, d, f);
			if ((fp = fopen(path, "w")) == NULL)
				return -1;
			while (done < size) {
				int n = fprintf(fp, "line %zu of dir%u/file%u: clio %08x\n",
						done, d, f, seed ^ (unsigned)done);
				if (n < 0)
					break;
				done += (size_t)n;
			}
			if (fclose(fp) != 0)
				return -1;
		}
	}
	return isnan(run_script(x->dir, "tar -cf \"$1\" -C tree . && rm -rf tree",
				x->tar, "")) ? -1 : 0;
}

static int
start_systems(struct xctx *x, const char *self, const char *pll, char *err,
	      size_t errlen)
{
	char opts[256], source[4300], buf[4400];
	int s;

	snprintf(x->work[X_KERNEL], sizeof(x->work[X_KERNEL]), "%s/meta-kernel", x->src);
	for (s = X_MOUNT; s < X_N && !bench_mount_stop; s++) {
		if (s == X_PLL && pll == NULL)
			continue;
		/* built in buf: gcc cannot tell x's arrays apart (-Wrestrict) */
		snprintf(buf, sizeof(x->mnt[s]), "%s/mnt-%s", x->dir, xsystems[s].name);
		memcpy(x->mnt[s], buf, sizeof(x->mnt[s]));
		if (mkdir(x->mnt[s], 0700) < 0) {
			snprintf(err, errlen, "mkdir %s: %s", x->mnt[s], strerror(errno));
			x->mnt[s][0] = '\0';
			return -1;
		}
		if (s == X_PLL) {
			snprintf(source, sizeof(source), "source=%s", x->src);
			char *argv[] = { (char *)pll, "-f", "-o", source, x->mnt[s], NULL };
			x->pid[s] = bench_fuse_start(argv, x->mnt[s]);
		} else {
			snprintf(opts, sizeof(opts), "%s", xsystems[s].opts[0] ?
				 xsystems[s].opts : "kernel_cache=on");
			char *argv[] = { (char *)self, "mount", "-f", "-o", opts,
					 x->src, x->mnt[s], NULL };
			x->pid[s] = bench_fuse_start(argv, x->mnt[s]);
		}
		if (x->pid[s] < 0) {
			snprintf(err, errlen, "%s on %s did not come up",
				 s == X_PLL ? "passthrough_ll" : "clio mount", x->mnt[s]);
			return -1;
		}
		x->up[s] = true;
		snprintf(buf, sizeof(x->work[s]), "%s/meta-%s", x->mnt[s],
			 xsystems[s].name);
		memcpy(x->work[s], buf, sizeof(x->work[s]));
	}
	for (s = 0; s < X_N && !bench_mount_stop; s++)
		if (x->work[s][0] != '\0' && mkdir(x->work[s], 0700) < 0) {
			snprintf(err, errlen, "mkdir %s: %s", x->work[s], strerror(errno));
			return -1;
		}
	return bench_mount_stop ? -1 : 0;
}

/* Unmount all; true if none is left. */
static bool
stop_systems(struct xctx *x)
{
	bool clean = true;
	int s;

	for (s = X_MOUNT; s < X_N; s++) {
		if (x->up[s] && bench_fuse_stop(x->mnt[s], x->pid[s]) != 0) {
			fprintf(stderr, "clio bench: the %s daemon of %s did not end cleanly\n",
				xsystems[s].name, x->mnt[s]);
			if (bench_fuse_mounted(x->mnt[s]))
				clean = false;
		}
		x->up[s] = false;
		if (x->mnt[s][0])
			rmdir(x->mnt[s]);
	}
	return clean;
}

/* One run of one case on one system: seconds, or NaN. */
static double
run_xcase(struct xctx *x, enum xcase c, int s, const char *count)
{
	if (x->work[s][0] == '\0')
		return NAN;
	if (xprep[c] != NULL && isnan(run_script(x->work[s], xprep[c], x->tar, count)))
		return NAN;
	return run_script(x->work[s], xtimed[c], x->tar, count);
}

int
exp_mount_meta(const struct bench_opts *bo, struct table *t)
{
	struct sigaction sa, old_int, old_term;
	struct xctx *x;
	char self[4096], err[512] = "", pllbuf[4200], perrun[512] = "";
	char counts[X_NCASES][16];
	const char *tmp = getenv("TMPDIR"), *pll;
	bool progress = isatty(2) && !bo->json, git;
	unsigned nfiles = bo->quick ? 200 : 1000, ntar = bo->quick ? 5 : 20;
	unsigned ngit = bo->quick ? 3 : 10;
	ssize_t sl;
	double *v;
	int c, s, run, rc = 0;

	if (tmp == NULL || *tmp == '\0')
		tmp = "/var/tmp";
	sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0) {
		fprintf(stderr, "clio bench: mount: /proc/self/exe: %s\n", strerror(errno));
		return -1;
	}
	self[sl] = '\0';
	x = calloc(1, sizeof(*x));
	v = calloc((size_t)bo->runs * X_N, sizeof(double));
	if (x == NULL || v == NULL) {
		free(x);
		free(v);
		return -1;
	}
	snprintf(x->dir, sizeof(x->dir), "%s/clio-bench-meta.XXXXXX", tmp);
	if (mkdtemp(x->dir) == NULL) {
		fprintf(stderr, "clio bench: cannot create a directory in %s: %s\n", tmp,
			strerror(errno));
		free(x);
		free(v);
		return -1;
	}
	snprintf(x->src, sizeof(x->src), "%s/src", x->dir);
	snprintf(x->tar, sizeof(x->tar), "%s/tree.tar", x->dir);
	snprintf(counts[X_CREATE], sizeof(counts[0]), "%u", nfiles);
	snprintf(counts[X_TAR], sizeof(counts[0]), "%u", ntar);
	snprintf(counts[X_READ], sizeof(counts[0]), "0");
	snprintf(counts[X_GIT], sizeof(counts[0]), "%u", ngit);
	git = bench_have("git");
	pll = bench_passthrough_ll(self, pllbuf, sizeof(pllbuf));

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = bench_mount_on_signal;
	sigemptyset(&sa.sa_mask);
	bench_mount_stop = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	table_init(t, "mount-meta",
		   "mount, small files and metadata: seconds (median of the runs); "
		   "ratios are speed-ups, the other's time over clio mount's");
	table_col(t, "workload", "workload", -1);
	for (s = 0; s < X_N; s++)
		table_col(t, xsystems[s].key, xsystems[s].head, 3);
	table_col(t, "ratio_pll", "mount/pll", 2);
	table_col(t, "ratio_kernel", "mount/kernel", 2);
	table_col(t, "target", "target", 1);
	table_col(t, "met", "met", -1);

	if (mkdir(x->src, 0700) < 0 || make_tree(x) < 0) {
		fprintf(stderr, "clio bench: mount: cannot make the tree in %s\n", x->dir);
		rc = -1;
		goto out;
	}
	if (start_systems(x, self, pll, err, sizeof(err)) < 0) {
		fprintf(stderr, "clio bench: mount: %s\n", err[0] ? err : "interrupted");
		rc = -1;
		goto out;
	}
	for (c = 0; c < X_NCASES && !bench_mount_stop; c++) {
		int row = table_row(t);
		double med[X_N];

		table_str(t, row, "workload", xlabels[c]);
		table_num(t, row, "target", 1.0);
		if (c == X_GIT) {
			if (!git) {
				table_str(t, row, "met", "skipped: no git");
				continue;
			}
			for (s = 0; s < X_N; s++)
				if (x->work[s][0] != '\0' &&
				    isnan(run_script(x->work[s], git_setup, x->tar, "")))
					x->work[s][0] = '\0'; /* no figure, not the table */
		}
		/* the systems take turns: a slow spell falls on all alike */
		for (run = 0; run < bo->runs && !bench_mount_stop; run++)
			for (s = 0; s < X_N && !bench_mount_stop; s++) {
				if (progress)
					fprintf(stderr, "\r  mount: meta case %d/%d, run %d/%d, %-8s",
						c + 1, X_NCASES, run + 1, bo->runs,
						xsystems[s].name);
				v[s * bo->runs + run] = run_xcase(x, (enum xcase)c, s, counts[c]);
			}
		for (s = 0; s < X_N; s++) {
			med[s] = bench_median(v + s * bo->runs, bo->runs);
			table_num(t, row, xsystems[s].key, med[s]);
		}
		if (run > 0) {
			size_t len = strlen(perrun);
			snprintf(perrun + len, sizeof(perrun) - len, "%s%.3s",
				 len > 0 ? "; " : "", xlabels[c]);
			for (int i = 0; i < run; i++) {
				double p = v[X_PLL * bo->runs + i], mo = v[X_MOUNT * bo->runs + i];
				len = strlen(perrun);
				if (isnan(p) || isnan(mo) || mo <= 0)
					snprintf(perrun + len, sizeof(perrun) - len, " -");
				else
					snprintf(perrun + len, sizeof(perrun) - len, " %.2f", p / mo);
			}
		}
		if (!isnan(med[X_MOUNT]) && med[X_MOUNT] > 0) {
			if (!isnan(med[X_KERNEL]))
				table_num(t, row, "ratio_kernel", med[X_KERNEL] / med[X_MOUNT]);
			if (!isnan(med[X_PLL])) {
				table_num(t, row, "ratio_pll", med[X_PLL] / med[X_MOUNT]);
				table_str(t, row, "met",
					  med[X_PLL] / med[X_MOUNT] >= 1.0 ? "yes" : "NO");
			}
		}
	}
	if (bench_mount_stop) {
		fprintf(stderr, "clio bench: mount: interrupted\n");
		rc = -1;
	}
out:
	if (progress)
		fprintf(stderr, "\r%50s\r", "");
	if (!stop_systems(x)) {
		rc = -1;
	} else {
		run_script(x->dir, "rm -rf src tree tree.tar", "", "");
		rmdir(x->dir);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	snprintf(t->note, sizeof(t->note),
		 "  in %s, %d run%s per case; (f) %u files, (g) %u extractions of 128 files "
		 "(1 MB), (h) over those, (i) %u times in a checkout of the tree.\n"
		 "  clio mount: its defaults (kernel_cache=on); kcache=off: -o "
		 "kernel_cache=off (no attribute or entry caching); plain FUSE: -o "
		 "cache=off; passthrough_ll: libfuse's example, -o source=SRC, its "
		 "defaults%s.%s%s",
		 tmp, bo->runs, bo->runs > 1 ? "s" : "", nfiles, ntar, ngit,
		 pll ? "" : " (not built: libfuse3-dev's examples or a compiler missing)",
		 perrun[0] ? "\n  passthrough_ll/clio mount in each run: " : "", perrun);
	free(v);
	free(x);
	return rc;
}
