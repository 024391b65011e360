/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kernel.c - `clio bench kernel`: clio against the Linux kernel on a real
 * file on this machine's disk, measured in the same run.
 *
 * Three systems per workload: GNU dd through the page cache, GNU dd with
 * O_DIRECT, and clio (in-process, its file backend opened O_DIRECT so the
 * kernel's cache never helps it).  Cold cases drop the kernel's caches
 * first, which needs root: without it they are skipped, and the table
 * says so.  Each case runs --runs times; the table holds the medians.
 * The random-read case uses pread(2) in this process for the kernel sides
 * (dd has no random mode), with the same seeded sequence clio reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "util.h"

#define DIRECT_CAP (128ull << 20)

/* SIGINT or SIGTERM during the run ends it as before, but first removes
 * the files made for it (the temporary file of up to 1 GiB, PATH.write)
 * and stops the dd it waits for; unlink and kill are async-signal-safe. */
static char sig_path[4096], sig_wpath[4200];
static volatile sig_atomic_t sig_armed, sig_have_path;
static volatile pid_t sig_child;

static void
on_signal(int sig)
{
	if (sig_armed) {
		if (sig_child > 0)
			kill(sig_child, SIGTERM);
		if (sig_have_path)
			unlink(sig_path);
		unlink(sig_wpath);
	}
	signal(sig, SIG_DFL);
	raise(sig);	/* delivered when the handler returns */
}

struct kctx {
	const struct bench_opts *bo;
	char path[4096], wpath[4200];
	uint64_t size;
	bool root;
};

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
bench_median(double *v, int n)
{
	int i, m = 0;

	for (i = 0; i < n; i++)
		if (!isnan(v[i]))
			v[m++] = v[i];
	if (m == 0)
		return NAN;
	qsort(v, (size_t)m, sizeof(double), cmp_double);
	return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

void
bench_drop_caches(void)
{
	int fd;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd >= 0) {
		ssize_t n = write(fd, "3\n", 2);
		(void)n; /* not fatal: the case runs warmer than it says */
		close(fd);
	}
}

const char *
bench_page_reporting_note(void)
{
	FILE *fp = fopen("/sys/module/page_reporting/parameters/page_reporting_order", "r");
	long order = -1;

	if (fp != NULL) {
		if (fscanf(fp, "%ld", &order) != 1)
			order = -1;
		fclose(fp);
	}
	/* no reporting device registered: -1, read back as UINT_MAX */
	if (order < 0 || order > 10)
		return "";
	return "\n  This machine gives its free memory back to a host (free page "
	       "reporting): a page the cache drop freed may cost a host fault at "
	       "its next first touch,\n  in whichever system gets it, so cold "
	       "figures swing from run to run; see clio(1), CLIO BENCH, mount.";
}

/* Run argv (execvp) with its standard streams on /dev/null: its wall
 * time, or NaN if it did not exit 0. */
double
bench_run_quiet(char *const argv[])
{
	double t0 = now_monotonic();
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return NAN;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	sig_child = pid;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			sig_child = 0;
			return NAN;
		}
	sig_child = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return NAN;
	return now_monotonic() - t0;
}

int
bench_make_file(const char *path, uint64_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	char *buf;
	uint64_t off;
	size_t i;

	if (fd < 0)
		return -errno;
	buf = malloc(1 << 20);
	if (buf == NULL) {
		close(fd);
		return -ENOMEM;
	}
	for (i = 0; i < (1 << 20); i++)
		buf[i] = (char)(i * 31 + (i >> 12));
	for (off = 0; off < size; off += 1 << 20) {
		size_t n = (size_t)MIN((uint64_t)1 << 20, size - off);
		if (write(fd, buf, n) != (ssize_t)n) {
			free(buf);
			close(fd);
			return -EIO;
		}
	}
	free(buf);
	fsync(fd);
	close(fd);
	return 0;
}

/* The kernel side of the random-read case: same sequence as workload.c. */
double
bench_randread(const char *path, uint64_t size, uint64_t count, bool direct)
{
	int fd = open(path, O_RDONLY | (direct ? O_DIRECT : 0));
	uint64_t s = 0x2545f4914f6cdd1dull, i, blocks = size / 4096;
	void *buf;
	double t0;

	if (fd < 0)
		return NAN;
	if (posix_memalign(&buf, 4096, 4096) != 0) {
		close(fd);
		return NAN;
	}
	t0 = now_monotonic();
	for (i = 0; i < count; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		if (pread(fd, buf, 4096, (off_t)((s % blocks) * 4096)) != 4096) {
			free(buf);
			close(fd);
			return NAN;
		}
	}
	t0 = now_monotonic() - t0;
	free(buf);
	close(fd);
	return t0;
}

enum kcase { K_REWRITE, K_COLD4K, K_WARM1K, K_WARM4K, K_RAND4K, K_WRITE4K, K_NCASES };

static const struct {
	const char *label;
	double target;
	bool cold;
} kcases[K_NCASES] = {
	{ "(a) rewrite bs=1k conv=notrunc,fsync, cold", 10, true },
	{ "(b) sequential read bs=4k, cold", 2.5, true },
	{ "(c) sequential read bs=1k, warm", 3, false },
	{ "(c) sequential read bs=4k, warm", 1.5, false },
	{ "(d) random 4k reads, file 2x clio cache, cold", 1, true },
	{ "(e) sequential write bs=4k conv=fsync", 1, false },
};

/* One run of one case on one system (0 kernel, 1 O_DIRECT dd, 2 clio):
 * returns MB/s (10^6 B/s) or NaN when it cannot run. */
static double
run_case(struct kctx *k, enum kcase kc, int sys)
{
	char ofarg[4300], ifarg[4300], bsarg[32], countarg[64], devstr[4300];
	/* O_DIRECT dd moves small blocks slowly: its rate is measured over
	 * the first DIRECT_CAP bytes at most */
	uint64_t size = sys == 1 ? MIN(k->size, DIRECT_CAP) : k->size;
	uint64_t nrand = size / 4096 / 4, bytes;
	struct clio_conf defaults = CLIO_CONF_DEFAULTS;
	struct wl_spec w;
	struct wl_result res;
	char err[256];
	double t;

	memset(&w, 0, sizeof(w));
	w.conf = defaults;
	if (kcases[kc].cold)
		bench_drop_caches();
	snprintf(ifarg, sizeof(ifarg), "if=%s", k->path);
	switch (kc) {
	case K_REWRITE:
	case K_WRITE4K: {
		const char *target = kc == K_REWRITE ? k->path : k->wpath;
		uint64_t bs = kc == K_REWRITE ? 1024 : 4096;
		bytes = size;
		if (kc == K_WRITE4K)
			unlink(k->wpath);
		if (sys < 2) {
			snprintf(ofarg, sizeof(ofarg), "of=%s", target);
			snprintf(bsarg, sizeof(bsarg), "bs=%llu", (unsigned long long)bs);
			snprintf(countarg, sizeof(countarg), "count=%llu",
				 (unsigned long long)(size / bs));
			char *args[] = { "dd", "if=/dev/zero", ofarg, bsarg, countarg,
					 kc == K_REWRITE ? "conv=notrunc,fsync" : "conv=fsync",
					 sys == 1 ? "oflag=direct" : NULL, NULL };
			t = bench_run_quiet(args);
		} else {
			snprintf(devstr, sizeof(devstr), "file:%s?direct=1", target);
			w.dev = devstr;
			w.kind = kc == K_REWRITE ? WL_REWRITE : WL_WRITE;
			w.bs = bs;
			w.count = size / bs;
			w.fsync_end = true;
			if (wl_run(&w, &res, err, sizeof(err)) < 0) {
				fprintf(stderr, "clio bench: %s\n", err);
				return NAN;
			}
			t = res.elapsed;
		}
		break;
	}
	case K_COLD4K:
	case K_WARM1K:
	case K_WARM4K: {
		uint64_t bs = kc == K_WARM1K ? 1024 : 4096;
		bytes = size;
		if (sys < 2) {
			if (sys == 1 && kc != K_COLD4K)
				return NAN; /* O_DIRECT has no warm case */
			if (kc != K_COLD4K) {
				char *warm[] = { "dd", ifarg, "of=/dev/null", "bs=1M", NULL };
				bench_run_quiet(warm);
			}
			snprintf(bsarg, sizeof(bsarg), "bs=%llu", (unsigned long long)bs);
			snprintf(countarg, sizeof(countarg), "count=%llu",
				 (unsigned long long)(size / bs));
			char *args[] = { "dd", ifarg, "of=/dev/null", bsarg, countarg,
					 sys == 1 ? "iflag=direct" : NULL, NULL };
			t = bench_run_quiet(args);
		} else {
			snprintf(devstr, sizeof(devstr), "file:%s?direct=1", k->path);
			w.dev = devstr;
			w.kind = WL_READ;
			w.bs = bs;
			w.count = size / bs;
			w.warm = kc != K_COLD4K;
			if (w.warm)
				w.conf.cache_size = size + (size >> 3) + (16u << 20);
			if (wl_run(&w, &res, err, sizeof(err)) < 0) {
				fprintf(stderr, "clio bench: %s\n", err);
				return NAN;
			}
			t = res.elapsed;
		}
		break;
	}
	case K_RAND4K:
		bytes = nrand * 4096;
		if (sys < 2) {
			t = bench_randread(k->path, size, nrand, sys == 1);
		} else {
			snprintf(devstr, sizeof(devstr), "file:%s?direct=1", k->path);
			w.dev = devstr;
			w.kind = WL_RANDREAD;
			w.bs = 4096;
			w.count = nrand;
			w.conf.cache_size = MAX(size / 2, (uint64_t)1 << 20);
			if (wl_run(&w, &res, err, sizeof(err)) < 0) {
				fprintf(stderr, "clio bench: %s\n", err);
				return NAN;
			}
			t = res.elapsed;
		}
		break;
	default:
		return NAN;
	}
	if (isnan(t) || t <= 0)
		return NAN;
	return (double)bytes / 1e6 / t;
}

/* on: on_signal for SIGINT and SIGTERM (not where they are ignored, as
 * in a background job), the old actions kept in old[2]; off: those back */
static void
catch_signals(struct sigaction *old, bool on)
{
	static const int sigs[2] = { SIGINT, SIGTERM };
	struct sigaction sa;
	int i;

	if (!on) {
		for (i = 0; i < 2; i++)
			sigaction(sigs[i], &old[i], NULL);
		sig_armed = 0;
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 2; i++) {
		sigaction(sigs[i], NULL, &old[i]);
		if (old[i].sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	}
}

int
exp_kernel(const struct bench_opts *bo, struct table *t)
{
	struct sigaction old_sa[2];
	struct clio_conf defaults = CLIO_CONF_DEFAULTS;
	struct kctx k;
	bool made = false, progress;
	int kc, sys, run, r;
	double *v;

	memset(&k, 0, sizeof(k));
	k.bo = bo;
	k.root = geteuid() == 0;
	progress = isatty(2) && !bo->json; /* long work says where it is */
	k.size = bo->size ? bo->size : bo->quick ? 64ull << 20 : 1ull << 30;
	k.size = k.size / 4096 * 4096;
	if (bo->file != NULL) {
		snprintf(k.path, sizeof(k.path), "%s", bo->file);
	} else {
		const char *dir = getenv("TMPDIR");
		int fd;
		snprintf(k.path, sizeof(k.path), "%s/clio-bench.XXXXXX",
			 dir && *dir ? dir : "/var/tmp");
		fd = mkstemp(k.path);
		if (fd < 0) {
			fprintf(stderr, "clio bench: cannot create a file in %s: %s\n",
				dir && *dir ? dir : "/var/tmp", strerror(errno));
			return -1;
		}
		close(fd);
	}
	snprintf(k.wpath, sizeof(k.wpath), "%s.write", k.path);
	snprintf(sig_path, sizeof(sig_path), "%s", k.path);
	snprintf(sig_wpath, sizeof(sig_wpath), "%s", k.wpath);
	sig_have_path = bo->file == NULL;
	sig_armed = 1;
	catch_signals(old_sa, true);
	r = bench_make_file(k.path, k.size);
	if (r < 0) {
		fprintf(stderr, "clio bench: cannot write %s: %s\n", k.path, strerror(-r));
		if (bo->file == NULL)
			unlink(k.path);
		catch_signals(old_sa, false);
		return -1;
	}
	made = bo->file == NULL;

	table_init(t, "kernel",
		   "kernel: clio against the Linux kernel on a real file "
		   "(MB/s = 10^6 B/s, median of the runs)");
	table_col(t, "workload", "workload", -1);
	table_col(t, "kernel_mbs", "kernel MB/s", 1);
	table_col(t, "direct_mbs", "O_DIRECT MB/s", 1);
	table_col(t, "clio_mbs", "clio MB/s", 1);
	table_col(t, "ratio", "clio/kernel", 2);
	table_col(t, "target", "target", 1);
	table_col(t, "met", "met", -1);
	v = calloc((size_t)bo->runs * 3, sizeof(double));
	for (kc = 0; kc < K_NCASES && v != NULL; kc++) {
		int row = table_row(t);
		double m[3];

		table_str(t, row, "workload", kcases[kc].label);
		table_num(t, row, "target", kcases[kc].target);
		if (kcases[kc].cold && !k.root) {
			table_str(t, row, "met", "skipped: not root");
			continue;
		}
		/* the systems take turns, so that a slow spell of the
		 * machine falls on all three alike */
		for (run = 0; run < bo->runs; run++) {
			for (sys = 0; sys < 3; sys++) {
				if (progress)
					fprintf(stderr, "\r  kernel: case %d/%d, run %d/%d, %-6s",
						kc + 1, K_NCASES, run + 1, bo->runs,
						sys == 0 ? "kernel" : sys == 1 ? "direct" : "clio");
				v[sys * bo->runs + run] = run_case(&k, (enum kcase)kc, sys);
			}
		}
		for (sys = 0; sys < 3; sys++)
			m[sys] = bench_median(v + sys * bo->runs, bo->runs);
		table_num(t, row, "kernel_mbs", m[0]);
		table_num(t, row, "direct_mbs", m[1]);
		table_num(t, row, "clio_mbs", m[2]);
		if (!isnan(m[0]) && !isnan(m[2]) && m[0] > 0) {
			table_num(t, row, "ratio", m[2] / m[0]);
			table_str(t, row, "met", m[2] / m[0] >= kcases[kc].target ? "yes" : "NO");
		}
	}
	if (progress)
		fprintf(stderr, "\r%50s\r", "");
	free(v);
	snprintf(t->note, sizeof(t->note),
		 "  file %s, %llu MiB (O_DIRECT dd: the first 128 MiB), %d run%s per case%s; clio: file backend with "
		 "O_DIRECT, default tunables (bsize %u) except: warm reads use a cache "
		 "larger than the file, random reads a cache of half the file.%s%s",
		 bo->file ? bo->file : "(temporary)", (unsigned long long)(k.size >> 20),
		 bo->runs, bo->runs > 1 ? "s" : "",
		 k.root ? "" : "; not root: cold cases skipped (they need drop_caches)",
		 defaults.bsize,
		 k.size < (256ull << 20)
			 ? "\n  A small file: start-up costs weigh on every system; the "
			   "targets are for the default 1 GiB."
			 : "",
		 k.root ? bench_page_reporting_note() : "");
	unlink(k.wpath);
	if (made)
		unlink(k.path);
	catch_signals(old_sa, false);
	return 0;
}
