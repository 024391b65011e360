/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchmount.c - `clio bench mount`: GNU dd on a real file, used directly
 * through the kernel and through FUSE, measured in the same run.
 *
 * The file lies in a temporary directory SRC under ${TMPDIR:-/var/tmp}.
 * The systems, taking turns within each run of each case:
 *   kernel         SRC/file, the kernel's page cache
 *   clio mount     `clio mount -f -o cache_size=C SRC MNT` (C: the file
 *                  plus an eighth plus 16 MiB, so warm reads stay warm),
 *                  with its defaults: the kernel's page cache and
 *                  writeback cache above clio (kernel_cache=on)
 *   kcache=off     the same with kernel_cache=off: no writeback cache,
 *                  no cached attributes, pages dropped at an open that
 *                  finds the source changed
 *   plain FUSE     `clio mount -o cache=off`: each FUSE read and write is
 *                  a pread/pwrite on the file, no clio cache
 *   passthrough_ll libfuse's example file system with its defaults
 *                  (-o source=SRC), compiled at run time into the
 *                  directory of the clio binary from the source that
 *                  Debian's libfuse3-dev ships (bench_passthrough_ll)
 *   nbdfuse        nbdfuse over `nbdkit file` (the single file only), when
 *                  both are installed; else "-"
 *   FUSE null      libfuse's example `null` (compiled as passthrough_ll
 *                  is), mounted on a file: reads give zeros, writes are
 *                  dropped, nothing is stored, no kernel caching asked
 *                  for; so for cold reads, which every FUSE system must
 *                  send to its daemon, the most a FUSE file system
 *                  reaches here (no (e): it makes no files); the note
 *                  names the cold-read targets not met that lie above it,
 *                  for (d) above 1/(1/null + 1/kernel) (fuse_bound)
 * Every mount is a child process started from /proc/self/exe in its own
 * process group, waited for in /proc/mounts, and always unmounted with
 * fusermount3 -u and reaped, whatever happens.  Cold cases drop the
 * kernel's caches (root only; else skipped) and touch the file: clio's
 * mount keeps a file's buffers across closes until the source changes,
 * so the touch makes each dd start cold in clio too.  The
 * warm cases hold the file open (a descriptor in this process) across
 * the warming read and the timed one.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "util.h"

#define RAND_MAX_READS 4096ull

enum msys { S_KERNEL, S_MOUNT, S_NOKC, S_PLAIN, S_PLL, S_NBD, S_NULL, S_N };

static const struct {
	const char *key, *head, *progress, *opts;
} systems[S_N] = {
	{ "kernel_mbs", "kernel MB/s", "kernel", NULL },
	{ "mount_mbs", "clio mount MB/s", "mount", "" },
	{ "mount_nokcache_mbs", "kcache=off MB/s", "nokcache", "kernel_cache=off" },
	{ "plain_mbs", "plain FUSE MB/s", "plain", "cache=off" },
	{ "passthrough_ll_mbs", "passthrough_ll MB/s", "pll", NULL },
	{ "nbdfuse_mbs", "nbdfuse MB/s", "nbdfuse", NULL },
	{ "fuse_null_mbs", "FUSE null MB/s", "null", NULL },
};

enum mcase { M_REWRITE, M_COLD4K, M_WARM1K, M_WARM4K, M_RAND4K, M_WRITE4K, M_NCASES };

static const struct {
	const char *label;
	double target; /* clio mount / kernel; 0: none */
	bool cold;
} mcases[M_NCASES] = {
	{ "(a) rewrite bs=1k conv=notrunc,fsync, cold", 5, true },
	{ "(b) sequential read bs=4k, cold", 0.8, true },
	{ "(c) sequential read bs=1k, warm", 0, false },
	{ "(c) sequential read bs=4k, warm", 0, false },
	{ "(d) random 4k reads, cold", 0.9, true },
	{ "(e) sequential write bs=4k conv=fsync", 0, false },
};

struct mctx {
	char dir[4096];			/* the temporary directory */
	char src[4200];			/* SRC */
	char mnt[S_N][4200];		/* the mount points ("" : none) */
	char path[S_N][4400];		/* the file, as each system sees it */
	char wpath[S_N][4400];		/* the written file (e), or "" */
	pid_t pid[S_N];			/* the mount daemons */
	bool up[S_N];
	uint64_t size;
};

volatile sig_atomic_t bench_mount_stop;
#define stop bench_mount_stop

void
bench_mount_on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

bool
bench_fuse_mounted(const char *mnt)
{
	FILE *fp = fopen("/proc/mounts", "r");
	char line[8192], dev[4300], mp[4300], type[64];
	bool found = false;

	if (fp == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), fp) != NULL)
		if (sscanf(line, "%4299s %4299s %63s", dev, mp, type) == 3 &&
		    strcmp(mp, mnt) == 0 && strncmp(type, "fuse", 4) == 0)
			found = true;
	fclose(fp);
	return found;
}

/* Start a FUSE daemon (argv) for mnt in its own process group; wait until
 * it is mounted.  Returns its pid, or -1 (the child reaped). */
pid_t
bench_fuse_start(char *const argv[], const char *mnt)
{
	pid_t pid = fork();
	int i, status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		setpgid(0, 0);
		if (null >= 0)
			dup2(null, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	for (i = 0; i < 200 && !stop; i++) { /* 10 s */
		if (bench_fuse_mounted(mnt))
			return pid;
		if (waitpid(pid, &status, WNOHANG) == pid)
			return -1;
		usleep(50000);
	}
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	return -1;
}

/* Is pid this program (a clio mount), not a peer's daemon? */
static bool
same_program(pid_t pid)
{
	char path[64], a[4096], b[4096];
	ssize_t la, lb;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	la = readlink(path, a, sizeof(a));
	lb = readlink("/proc/self/exe", b, sizeof(b));
	return la > 0 && la == lb && memcmp(a, b, (size_t)la) == 0;
}

/* Unmount and reap; returns the daemon's exit status, or -1. */
int
bench_fuse_stop(const char *mnt, pid_t pid)
{
	int status, i;
	bool peer;
	pid_t f;

	if (bench_fuse_mounted(mnt)) {
		/* tried again while the mount is busy (clio's read-ahead
		 * helper may hold a file a moment longer) */
		fuse_unmount_retrying(mnt);
	}
	for (i = 0; i < 200; i++) { /* 10 s, then the signal */
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		usleep(50000);
	}
	peer = !same_program(pid);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	if (!bench_fuse_mounted(mnt) &&
	    (peer || (WIFEXITED(status) && WEXITSTATUS(status) == 0))) {
		/* unmounted here, but the connection lived on (a mount
		 * namespace made meanwhile, unshare -m, holds a copy of the
		 * mount): only the signal ended the daemon; clio's own still
		 * reports its write-back by its status, a peer's status is
		 * its answer to the signal */
		fprintf(stderr, "clio bench: %s: unmounted, but its daemon ended only "
			"at SIGTERM (a copy of the mount in another mount namespace?)\n",
			mnt);
		return 0;
	}
	if (bench_fuse_mounted(mnt)) {
		f = fork();
		if (f == 0) {
			execlp("fusermount3", "fusermount3", "-uz", "--", mnt, (char *)NULL);
			_exit(127);
		}
		if (f > 0)
			waitpid(f, &status, 0);
	}
	return -1;
}

/* Does `cmd --version` run? */
bool
bench_have(const char *cmd)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return false;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp(cmd, cmd, "--version", (char *)NULL);
		_exit(127);
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

/* Example $2 (and the header passthrough_ll needs) as Debian's
 * libfuse3-dev ships it (plain or gzip'ed), compiled into $1 with $CC
 * (cc) and pkg-config's flags for fuse3. */
static const char example_build[] =
	"ex=/usr/share/doc/libfuse3-dev/examples; d=$(mktemp -d) || exit 1\n"
	"for f in \"$2.c\" passthrough_helpers.h; do\n"
	"  if [ -f $ex/$f ]; then cp $ex/$f $d/ || exit 1\n"
	"  elif [ -f $ex/$f.gz ]; then gzip -dc $ex/$f.gz >$d/$f || exit 1\n"
	"  elif [ \"$f\" = \"$2.c\" ]; then rm -rf $d; exit 1; fi\n"
	"done\n"
	"${CC:-cc} -O2 -o \"$1.tmp\" \"$d/$2.c\" $(pkg-config --cflags --libs fuse3)"
	" >/dev/null 2>&1 && mv \"$1.tmp\" \"$1\"; r=$?; rm -rf $d; exit $r\n";

/* libfuse's example name, built beside the clio binary once: its path in
 * buf, or NULL (no source or no compiler). */
static const char *
fuse_example(const char *self, const char *name, char *buf, size_t len)
{
	const char *slash = strrchr(self, '/');
	int status;
	pid_t pid;

	snprintf(buf, len, "%.*s/%s",
		 slash != NULL ? (int)(slash - self) : 1, slash != NULL ? self : ".", name);
	if (access(buf, X_OK) == 0)
		return buf;
	pid = fork();
	if (pid < 0)
		return NULL;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp("sh", "sh", "-c", example_build, "sh", buf, name, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0 || access(buf, X_OK) != 0)
		return NULL;
	return buf;
}

const char *
bench_passthrough_ll(const char *self, char *buf, size_t len)
{
	return fuse_example(self, "passthrough_ll", buf, len);
}

static int
start_all(struct mctx *m, const char *self, bool nbd, const char *pll,
	  const char *nullfs, char *err, size_t errlen)
{
	char opts[256], file[4400], mnt[sizeof(m->mnt[0])];
	int s;

	snprintf(file, sizeof(file), "%s/file", m->src);
	for (s = S_MOUNT; s < S_N && !stop; s++) {
		if ((s == S_NBD && !nbd) || (s == S_PLL && pll == NULL) ||
		    (s == S_NULL && nullfs == NULL))
			continue;
		/* built in mnt: gcc cannot tell m's arrays apart (-Wrestrict) */
		snprintf(mnt, sizeof(mnt), "%s/mnt-%s", m->dir, systems[s].progress);
		memcpy(m->mnt[s], mnt, sizeof(mnt));
		if (s == S_NULL) { /* null mounts on a regular file */
			int fd = open(m->mnt[s], O_WRONLY | O_CREAT | O_EXCL, 0600);
			if (fd < 0) {
				snprintf(err, errlen, "%s: %s", m->mnt[s], strerror(errno));
				m->mnt[s][0] = '\0';
				return -1;
			}
			close(fd);
		} else if (mkdir(m->mnt[s], 0700) < 0) {
			snprintf(err, errlen, "mkdir %s: %s", m->mnt[s], strerror(errno));
			m->mnt[s][0] = '\0';
			return -1;
		}
		if (s == S_NULL) {
			char *argv[] = { (char *)nullfs, "-f", m->mnt[s], NULL };
			m->pid[s] = bench_fuse_start(argv, m->mnt[s]);
			snprintf(m->path[s], sizeof(m->path[s]), "%s", mnt);
		} else if (s == S_NBD) {
			char mp[4300];
			snprintf(mp, sizeof(mp), "%s/nbd", m->mnt[s]);
			char *argv[] = { "nbdfuse", mp, "--command", "nbdkit", "-s",
					 "file", file, NULL };
			m->pid[s] = bench_fuse_start(argv, m->mnt[s]);
			snprintf(m->path[s], sizeof(m->path[s]), "%s", mp);
		} else if (s == S_PLL) {
			char source[4300];
			snprintf(source, sizeof(source), "source=%s", m->src);
			char *argv[] = { (char *)pll, "-f", "-o", source, m->mnt[s], NULL };
			m->pid[s] = bench_fuse_start(argv, m->mnt[s]);
			snprintf(m->path[s], sizeof(m->path[s]), "%s/file", mnt);
			snprintf(m->wpath[s], sizeof(m->wpath[s]), "%s/write-%d", mnt, s);
		} else {
			snprintf(opts, sizeof(opts), "cache_size=%llu%s%s",
				 (unsigned long long)(m->size + (m->size >> 3) + (16u << 20)),
				 systems[s].opts[0] ? "," : "", systems[s].opts);
			char *argv[] = { (char *)self, "mount", "-f", "-o", opts,
					 m->src, m->mnt[s], NULL };
			m->pid[s] = bench_fuse_start(argv, m->mnt[s]);
			snprintf(m->path[s], sizeof(m->path[s]), "%s/file", mnt);
			snprintf(m->wpath[s], sizeof(m->wpath[s]), "%s/write-%d", mnt, s);
		}
		if (m->pid[s] < 0) {
			snprintf(err, errlen, "%s on %s did not come up",
				 s == S_NBD ? "nbdfuse" : s == S_PLL ? "passthrough_ll" :
				 s == S_NULL ? "libfuse's null" : "clio mount", m->mnt[s]);
			return -1;
		}
		m->up[s] = true;
	}
	return stop ? -1 : 0;
}

static int
stop_all(struct mctx *m)
{
	int s, rc = 0;

	for (s = S_MOUNT; s < S_N; s++) {
		if (m->up[s] && bench_fuse_stop(m->mnt[s], m->pid[s]) != 0) {
			fprintf(stderr, "clio bench: the %s daemon of %s did not end cleanly\n",
				systems[s].progress, m->mnt[s]);
			rc = -1;
		}
		m->up[s] = false;
		if (m->mnt[s][0] && rmdir(m->mnt[s]) < 0)
			unlink(m->mnt[s]); /* null's */
	}
	return rc;
}

/* One run of one case on one system: MB/s (10^6 B/s) or NaN. */
static double
run_case(struct mctx *m, enum mcase mc, int s)
{
	char ofarg[4500], ifarg[4500], bsarg[32], countarg[64];
	uint64_t bs, bytes = m->size, nrand;
	double t = NAN;
	int hold = -1;

	if (m->path[s][0] == '\0')
		return NAN;
	if (mcases[mc].cold) {
		bench_drop_caches();
		/* a new version of the source: clio's mounts drop the buffers
		 * they keep across closes at the next open */
		utimensat(AT_FDCWD, m->path[S_KERNEL], NULL, 0);
	}
	snprintf(ifarg, sizeof(ifarg), "if=%s", m->path[s]);
	switch (mc) {
	case M_REWRITE:
	case M_WRITE4K: {
		bs = mc == M_REWRITE ? 1024 : 4096;
		if (mc == M_WRITE4K) {
			if (m->wpath[s][0] == '\0')
				return NAN;
			unlink(m->wpath[s]);
		}
		snprintf(ofarg, sizeof(ofarg), "of=%s",
			 mc == M_REWRITE ? m->path[s] : m->wpath[s]);
		snprintf(bsarg, sizeof(bsarg), "bs=%llu", (unsigned long long)bs);
		snprintf(countarg, sizeof(countarg), "count=%llu",
			 (unsigned long long)(m->size / bs));
		char *args[] = { "dd", "if=/dev/zero", ofarg, bsarg, countarg,
				 mc == M_REWRITE ? "conv=notrunc,fsync" : "conv=fsync", NULL };
		t = bench_run_quiet(args);
		if (mc == M_WRITE4K)
			unlink(m->wpath[s]);
		break;
	}
	case M_COLD4K:
	case M_WARM1K:
	case M_WARM4K: {
		bs = mc == M_WARM1K ? 1024 : 4096;
		if (mc != M_COLD4K) {
			char *warm[] = { "dd", ifarg, "of=/dev/null", "bs=1M", NULL };
			hold = open(m->path[s], O_RDONLY);
			bench_run_quiet(warm);
		}
		snprintf(bsarg, sizeof(bsarg), "bs=%llu", (unsigned long long)bs);
		snprintf(countarg, sizeof(countarg), "count=%llu",
			 (unsigned long long)(m->size / bs));
		char *args[] = { "dd", ifarg, "of=/dev/null", bsarg, countarg, NULL };
		t = bench_run_quiet(args);
		if (hold >= 0)
			close(hold);
		break;
	}
	case M_RAND4K:
		nrand = MIN(m->size / 4096 / 4, RAND_MAX_READS);
		bytes = nrand * 4096;
		t = bench_randread(m->path[s], m->size, nrand, false);
		break;
	default:
		return NAN;
	}
	if (isnan(t) || t <= 0)
		return NAN;
	return (double)bytes / 1e6 / t;
}

/* The most a FUSE file system can reach in cold case mc, in MB/s, from
 * the medians: a sequential read overlaps the device with the round
 * trips, so FUSE null's rate; each random read waits for the round trip
 * and then for the device, so no less than FUSE null's time and the
 * kernel's time per read, one after the other (the system call and the
 * page cache are in both: the sum overstates the least time by theirs). */
static double
fuse_bound(enum mcase mc, const double *med)
{
	if (mc != M_RAND4K)
		return med[S_NULL];
	if (isnan(med[S_NULL]) || med[S_NULL] <= 0 || med[S_KERNEL] <= 0)
		return NAN;
	return 1.0 / (1.0 / med[S_NULL] + 1.0 / med[S_KERNEL]);
}

/* Append "(x) r1 r2 ..." to buf: a targeted case's mount/kernel ratio in
 * each of its n runs (v as in exp_mount, runs per system), so the spread
 * shows beside the median. */
static void
perrun_ratios(char *buf, size_t size, const char *label, const double *v,
	      int runs, int n)
{
	size_t len = strlen(buf);
	int run;

	snprintf(buf + len, size - len, "%s%.3s", len > 0 ? "; " : "", label);
	for (run = 0; run < n; run++) {
		double k = v[S_KERNEL * runs + run], mo = v[S_MOUNT * runs + run];

		len = strlen(buf); /* snprintf truncates: len < size */
		if (isnan(k) || isnan(mo) || k <= 0)
			snprintf(buf + len, size - len, " -");
		else
			snprintf(buf + len, size - len, " %.2f", mo / k);
	}
}

int
exp_mount(const struct bench_opts *bo, struct table *t)
{
	struct sigaction sa, old_int, old_term;
	struct mctx *m;
	char self[4096], err[512] = "", file[4400], perrun[512] = "", pllbuf[4200];
	char nullbuf[4200], above[256] = "";
	const char *pll, *nullfs;
	const char *tmp = getenv("TMPDIR");
	bool root = geteuid() == 0, nbd, progress = isatty(2) && !bo->json;
	ssize_t sl;
	double *v;
	int mc, s, run, r, rc = 0;

	if (tmp == NULL || *tmp == '\0')
		tmp = "/var/tmp";
	if (access("/dev/fuse", R_OK | W_OK) < 0) {
		fprintf(stderr, "clio bench: mount: /dev/fuse: %s\n", strerror(errno));
		return -1;
	}
	sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0) {
		fprintf(stderr, "clio bench: mount: /proc/self/exe: %s\n", strerror(errno));
		return -1;
	}
	self[sl] = '\0';
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -1;
	m->size = bo->size ? bo->size : bo->quick ? 64ull << 20 : 1ull << 30;
	m->size = m->size / 4096 * 4096;
	snprintf(m->dir, sizeof(m->dir), "%s/clio-bench-mount.XXXXXX", tmp);
	if (mkdtemp(m->dir) == NULL) {
		fprintf(stderr, "clio bench: cannot create a directory in %s: %s\n", tmp,
			strerror(errno));
		free(m);
		return -1;
	}
	snprintf(m->src, sizeof(m->src), "%s/src", m->dir);
	snprintf(file, sizeof(file), "%s/file", m->src);
	snprintf(m->path[S_KERNEL], sizeof(m->path[S_KERNEL]), "%s", file);
	snprintf(m->wpath[S_KERNEL], sizeof(m->wpath[S_KERNEL]), "%s/write-0", m->src);
	if (mkdir(m->src, 0700) < 0 || (r = bench_make_file(file, m->size)) < 0) {
		fprintf(stderr, "clio bench: cannot write %s\n", file);
		unlink(file);
		rmdir(m->src);
		rmdir(m->dir);
		free(m);
		return -1;
	}
	nbd = bench_have("nbdkit") && bench_have("nbdfuse");
	pll = bench_passthrough_ll(self, pllbuf, sizeof(pllbuf));
	nullfs = fuse_example(self, "null", nullbuf, sizeof(nullbuf));

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = bench_mount_on_signal;
	sigemptyset(&sa.sa_mask);
	stop = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	table_init(t, "mount",
		   "mount: GNU dd on a file used directly and through FUSE "
		   "(MB/s = 10^6 B/s, median of the runs)");
	table_col(t, "workload", "workload", -1);
	for (s = 0; s < S_N; s++)
		table_col(t, systems[s].key, systems[s].head, 1);
	table_col(t, "ratio", "mount/kernel", 2);
	table_col(t, "ratio_nokcache", "kcache=off/kernel", 2);
	table_col(t, "target", "target", 1);
	table_col(t, "met", "met", -1);

	v = calloc((size_t)bo->runs * S_N, sizeof(double));
	if (v == NULL || start_all(m, self, nbd, pll, nullfs, err, sizeof(err)) < 0) {
		fprintf(stderr, "clio bench: mount: %s\n", err[0] ? err : "interrupted");
		rc = -1;
		goto out;
	}
	for (mc = 0; mc < M_NCASES && !stop; mc++) {
		int row = table_row(t);
		double med[S_N];

		table_str(t, row, "workload", mcases[mc].label);
		if (mcases[mc].target > 0)
			table_num(t, row, "target", mcases[mc].target);
		if (mcases[mc].cold && !root) {
			table_str(t, row, "met", "skipped: not root");
			continue;
		}
		/* the systems take turns: a slow spell falls on all alike */
		for (run = 0; run < bo->runs && !stop; run++)
			for (s = 0; s < S_N && !stop; s++) {
				if (progress)
					fprintf(stderr, "\r  mount: case %d/%d, run %d/%d, %-8s",
						mc + 1, M_NCASES, run + 1, bo->runs,
						systems[s].progress);
				v[s * bo->runs + run] = run_case(m, (enum mcase)mc, s);
			}
		for (s = 0; s < S_N; s++) {
			med[s] = bench_median(v + s * bo->runs, bo->runs);
			table_num(t, row, systems[s].key, med[s]);
		}
		if (mcases[mc].target > 0 && run > 0)
			perrun_ratios(perrun, sizeof(perrun), mcases[mc].label, v,
				      bo->runs, run);
		if (!isnan(med[S_KERNEL]) && med[S_KERNEL] > 0) {
			if (!isnan(med[S_MOUNT]))
				table_num(t, row, "ratio", med[S_MOUNT] / med[S_KERNEL]);
			if (!isnan(med[S_NOKC]))
				table_num(t, row, "ratio_nokcache", med[S_NOKC] / med[S_KERNEL]);
			if (mcases[mc].target > 0 && !isnan(med[S_MOUNT]))
				table_str(t, row, "met",
					  med[S_MOUNT] / med[S_KERNEL] >= mcases[mc].target
						  ? "yes" : "NO");
			if ((mc == M_COLD4K || mc == M_RAND4K) && !isnan(med[S_MOUNT]) &&
			    med[S_MOUNT] / med[S_KERNEL] < mcases[mc].target &&
			    mcases[mc].target * med[S_KERNEL] > fuse_bound(mc, med)) {
				size_t len = strlen(above);
				snprintf(above + len, sizeof(above) - len,
					 "%s%.3s (%.1fx kernel = %.1f MB/s, %s %.1f)",
					 len > 0 ? "; " : "", mcases[mc].label,
					 mcases[mc].target, mcases[mc].target * med[S_KERNEL],
					 mc == M_RAND4K ? "bound" : "FUSE null",
					 fuse_bound(mc, med));
			}
		}
	}
	if (stop) {
		fprintf(stderr, "clio bench: mount: interrupted\n");
		rc = -1;
	}
out:
	if (progress)
		fprintf(stderr, "\r%50s\r", "");
	if (stop_all(m) < 0)
		rc = -1;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	snprintf(t->note, sizeof(t->note),
		 "  file %llu MiB in %s, %d run%s per case; mounts: clio mount -o "
		 "cache_size=%llu (file + 1/8 + 16M; default tunables otherwise: "
		 "kernel_cache=on), kcache=off: also kernel_cache=off (no writeback "
		 "cache, no cached attributes),\n  plain FUSE: -o cache=off (pread/pwrite on "
		 "the file); passthrough_ll: libfuse's example, -o source=SRC, its "
		 "defaults%s; nbdfuse: %s%s.\n"
		 "  Cold cases drop the kernel's caches and touch the file (clio's "
		 "mounts keep a file's buffers across closes until its source "
		 "changes); warm cases hold the file open across the warming read; "
		 "(d): %llu reads.\n"
		 "  FUSE null: libfuse's example null on a file (reads give zeros, "
		 "writes are dropped, no kernel caching)%s: for cold reads, which reach "
		 "the daemon of every FUSE system, the most a FUSE file system reaches "
		 "here.%s%s%s%s%s%s",
		 (unsigned long long)(m->size >> 20), tmp, bo->runs, bo->runs > 1 ? "s" : "",
		 (unsigned long long)(m->size + (m->size >> 3) + (16u << 20)),
		 pll ? "" : " (not built: libfuse3-dev's examples or a compiler missing)",
		 nbd ? "nbdkit file plugin, -s; the single file only, no (e)"
		     : "nbdkit or nbdfuse not installed, not measured",
		 root ? "" : "; not root: cold cases skipped (they need drop_caches)",
		 (unsigned long long)MIN(m->size / 4096 / 4, RAND_MAX_READS),
		 nullfs ? "" : " (not built: libfuse3-dev's examples or a compiler missing)",
		 above[0] ? "\n  Cold-read targets not met above what any FUSE system reaches "
			    "here (sequential: FUSE null's rate; random: FUSE null's time per "
			    "read plus the kernel's): " : "",
		 above,
		 m->size < (256ull << 20)
			 ? "\n  A small file: start-up costs weigh on every system; the "
			   "targets are for the default 1 GiB."
			 : "",
		 perrun[0] ? "\n  mount/kernel in each run (the systems take turns): " : "",
		 perrun, root ? bench_page_reporting_note() : "");
	unlink(m->wpath[S_KERNEL]);
	unlink(file);
	rmdir(m->src);
	rmdir(m->dir);
	free(v);
	free(m);
	return rc;
}
