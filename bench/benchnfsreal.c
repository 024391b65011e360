/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchnfsreal.c - `clio bench nfs` without --sim (bench_nfs_real, which
 * benchnfs.c dispatches to): seed 004's NFS client cases against a real
 * NFS-Ganesha server, through tests/tools/rpcproxy at 0, 1 and 5 ms
 * of round trip (each direction delayed half of it), in one run:
 *   test5      Connectathon's: a 1 MiB file written 10 times in 8 KiB
 *              writes (open O_CREAT|O_TRUNC, close each time), then read
 *              10 times in 8 KiB reads;
 *   open-heavy a build's include files: 200 files of 4 KiB opened, read
 *              and closed, 20 passes.
 * The systems, taking turns at each round trip:
 *   plain libnfs  libnfs's synchronous calls, no cache: one RPC per 8 KiB
 *                 (the 2010 client's wire behaviour); nfs_fsync before each
 *                 close of a written file
 *   close-to-open `clio mount nfs://...` with its defaults
 *   lease         `clio mount -o lease nfs://...`; its test5 writes end in
 *                 the cache (no write-back at close: that is what lease
 *                 buys), written back at the unmount, not timed
 * Each row: MB/s, seconds, the ratio to plain libnfs (test5) or to
 * close-to-open's RPCs (open-heavy), the target at 1 ms, and the
 * RPCs per operation by procedure (per pass of test5, per open of
 * open-heavy) counted by the proxy.
 *
 * The server needs a private network and /run: the command re-executes
 * itself inside `unshare -m -n --propagation private` (root), with a
 * tmpfs on /run and the loopback interface up, as the tests do; rpcbind,
 * ganesha.nfsd and the proxies are its children, each stopped by its pid
 * and reaped, whatever happens; mounts are started and reaped as
 * benchmount.c does.
 */
#include <sys/time.h>
#include <nfsc/libnfs.h>

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
#include "benchsrv.h"
#include "util.h"

#define NS_ENV "CLIO_BENCH_NFS_NS"
#define IOSZ 8192
#define SMALL 4096

enum nsys { N_PLAIN, N_CTO, N_LEASE, N_SYS };
static const char *const sys_name[N_SYS] = { "plain libnfs", "close-to-open", "lease" };
/* open-heavy's first pass (each file's lookup and device) apart from the
 * others (what a build's repeated opens cost) */
enum nphase { P_WRITE, P_READ, P_OPEN1, P_OPEN, P_N };
static const char *const phase_name[P_N] = { "test5 write", "test5 read",
	"open-heavy pass 1", "open-heavy later" };
static const double rtts[] = { 0, 1, 5 };
#define NRTT 3

static const char *const procs[] = { "WRITE", "READ", "COMMIT", "GETATTR", "LOOKUP", "ACCESS" };
#define NPROC 6

struct counts {
	double by[NPROC], other;
};

struct nctx {
	char dir[64], export[128], self[4096], rpcproxy[4200];
	pid_t rpcbind, ganesha, proxy[NRTT];
	int passes, files, opasses;
};

/* -------------------------------------------------------- processes */

static int
server_start(struct nctx *x)
{
	struct bench_nfs s;
	int k;

	memset(&s, 0, sizeof(s));
	snprintf(s.dir, sizeof(s.dir), "%s", x->dir);
	snprintf(s.export, sizeof(s.export), "%s", x->export);
	if (bench_ganesha_start(&s) < 0)
		return -1;
	x->rpcbind = s.rpcbind;
	x->ganesha = s.ganesha;
	for (k = 0; k < NRTT; k++) {
		char counts[128], ready[128];

		snprintf(counts, sizeof(counts), "%s/counts.%d", x->dir, k);
		snprintf(ready, sizeof(ready), "%s/ready.%d", x->dir, k);
		x->proxy[k] = bench_proxy_start(x->rpcproxy, rtts[k] / 2, 3049 + 100 * k,
						30048 + 100 * k, counts, ready);
		if (x->proxy[k] < 0) {
			x->proxy[k] = 0;
			return -1;
		}
	}
	return 0;
}

static void
server_stop(struct nctx *x)
{
	int k;

	for (k = 0; k < NRTT; k++)
		bench_reap(&x->proxy[k]);
	bench_reap(&x->ganesha);
	bench_reap(&x->rpcbind);
}

/* The proxy's counts so far. */
static int
counts_get(struct nctx *x, int k, struct counts *c)
{
	char path[128], prog[32], proc[32];
	double calls, bytes;
	FILE *fp;
	int i;

	snprintf(path, sizeof(path), "%s/counts.%d", x->dir, k);
	unlink(path);
	kill(x->proxy[k], SIGUSR1);
	if (!bench_wait_for(path, NULL, x->proxy[k], 4000))
		return -1;
	memset(c, 0, sizeof(*c));
	fp = fopen(path, "r");
	if (fp == NULL)
		return -1;
	while (fscanf(fp, "%31s %31s %lf %lf", prog, proc, &calls, &bytes) == 4) {
		if (strcmp(prog, "nfs3") != 0) {
			c->other += calls;
			continue;
		}
		for (i = 0; i < NPROC && strcmp(proc, procs[i]) != 0; i++)
			;
		if (i < NPROC)
			c->by[i] += calls;
		else
			c->other += calls;
	}
	fclose(fp);
	return 0;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* -------------------------------------------------------- workloads */

/* Through a mount (prefix is its directory): seconds, or NaN. */
static double
run_posix(const char *prefix, const char *name, enum nphase ph, const struct nctx *x)
{
	static char buf[IOSZ];
	char path[4400];
	double t0 = now_s();
	int i, j, f, fd;

	if (ph == P_OPEN1 || ph == P_OPEN) {
		for (i = ph == P_OPEN ? 1 : 0; i < (ph == P_OPEN ? x->opasses : 1); i++)
			for (f = 0; f < x->files; f++) {
				snprintf(path, sizeof(path), "%s/oh/%d", prefix, f);
				fd = open(path, O_RDONLY);
				if (fd < 0 || read(fd, buf, SMALL) != SMALL) {
					if (fd >= 0)
						close(fd);
					return NAN;
				}
				close(fd);
			}
		return now_s() - t0;
	}
	snprintf(path, sizeof(path), "%s/%s", prefix, name);
	for (i = 0; i < x->passes; i++) {
		fd = ph == P_WRITE ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)
				   : open(path, O_RDONLY);
		if (fd < 0)
			return NAN;
		for (j = 0; j < (1 << 20) / IOSZ; j++) {
			ssize_t r = ph == P_WRITE ? write(fd, buf, IOSZ) : read(fd, buf, IOSZ);
			if (r != IOSZ) {
				close(fd);
				return NAN;
			}
		}
		if (close(fd) < 0)
			return NAN;
	}
	return now_s() - t0;
}

/* Plain libnfs, synchronous calls, no cache: seconds, or NaN. */
static double
run_libnfs(struct nfs_context *nfs, const char *name, enum nphase ph,
	   const struct nctx *x)
{
	static char buf[IOSZ];
	struct nfsfh *fh;
	char path[256];
	double t0 = now_s();
	int i, j, f;

	if (ph == P_OPEN1 || ph == P_OPEN) {
		for (i = ph == P_OPEN ? 1 : 0; i < (ph == P_OPEN ? x->opasses : 1); i++)
			for (f = 0; f < x->files; f++) {
				snprintf(path, sizeof(path), "/oh/%d", f);
				if (nfs_open(nfs, path, O_RDONLY, &fh) != 0)
					return NAN;
				if (nfs_pread(nfs, fh, 0, SMALL, buf) != SMALL) {
					nfs_close(nfs, fh);
					return NAN;
				}
				nfs_close(nfs, fh);
			}
		return now_s() - t0;
	}
	snprintf(path, sizeof(path), "/%s", name);
	for (i = 0; i < x->passes; i++) {
		int r = ph == P_WRITE ? nfs_open2(nfs, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, &fh)
				      : nfs_open(nfs, path, O_RDONLY, &fh);
		if (r != 0)
			return NAN;
		for (j = 0; j < (1 << 20) / IOSZ; j++) {
			uint64_t off = (uint64_t)j * IOSZ;
			r = ph == P_WRITE ? nfs_pwrite(nfs, fh, off, IOSZ, buf)
					  : nfs_pread(nfs, fh, off, IOSZ, buf);
			if (r != IOSZ) {
				nfs_close(nfs, fh);
				return NAN;
			}
		}
		if (ph == P_WRITE && nfs_fsync(nfs, fh) != 0) {
			nfs_close(nfs, fh);
			return NAN;
		}
		nfs_close(nfs, fh);
	}
	return now_s() - t0;
}

/* --------------------------------------------------------------- rows */

struct result {
	double s[N_SYS][NRTT][P_N];
	struct counts c[N_SYS][NRTT][P_N];
};

static const char *
seed_fig(enum nsys s, enum nphase ph)
{
	if (ph == P_WRITE)
		return s == N_LEASE ? "6.36-7.53 MB/s (deleg.)" : "1.44-5.96 MB/s (no deleg.)";
	if (ph == P_READ)
		return "14.8-238 MB/s";
	return s == N_LEASE && ph == P_OPEN ? "~1/2 the RPCs (no cto)" : "-";
}

static const char *
target_of(enum nsys s, enum nphase ph, double *want)
{
	*want = NAN;
	if (s == N_PLAIN)
		return "-";
	if (ph == P_WRITE) {
		*want = s == N_LEASE ? 5 : 3;
		return s == N_LEASE ? ">= 5x plain" : ">= 3x plain";
	}
	if (ph == P_READ) {
		*want = 5;
		return ">= 5x plain";
	}
	if (s == N_LEASE && ph == P_OPEN) {
		*want = 0.5;
		return "<= 0.5x cto RPCs, 0 GETATTR";
	}
	return "-";
}

static double
total(const struct counts *c)
{
	double t = c->other;
	int i;

	for (i = 0; i < NPROC; i++)
		t += c->by[i];
	return t;
}

static void
fill(struct table *t, const struct result *r, const struct nctx *x)
{
	static const char *const keys[NPROC] = { "write_rpcs", "read_rpcs", "commit_rpcs",
		"getattr_rpcs", "lookup_rpcs", "access_rpcs" };
	int k, s, ph, i;

	table_init(t, "nfs", "Seed 004: NFSv3 client against NFS-Ganesha through a delaying proxy");
	table_col(t, "case", "case", -1);
	table_col(t, "rtt_ms", "RTT ms", 0);
	table_col(t, "system", "system", -1);
	table_col(t, "mbs", "MB/s", 2);
	table_col(t, "seconds", "s", 3);
	table_col(t, "ratio", "ratio", 2);
	table_col(t, "target", "target (1 ms)", -1);
	table_col(t, "met", "met", -1);
	table_col(t, "seed", "seed's figure", -1);
	for (i = 0; i < NPROC; i++)
		table_col(t, keys[i], procs[i], 1);
	table_col(t, "other_rpcs", "other", 1);
	for (ph = 0; ph < P_N; ph++)
		for (k = 0; k < NRTT; k++)
			for (s = 0; s < N_SYS; s++) {
				int row = table_row(t);
				double sec = r->s[s][k][ph], want, ratio = NAN;
				double per = ph == P_OPEN1 ? (double)x->files
					: ph == P_OPEN ? (double)x->files * (x->opasses - 1) : x->passes;
				bool oh = ph == P_OPEN1 || ph == P_OPEN;
				const struct counts *c = &r->c[s][k][ph];
				const char *tg = target_of((enum nsys)s, (enum nphase)ph, &want);

				table_str(t, row, "case", phase_name[ph]);
				table_num(t, row, "rtt_ms", rtts[k]);
				table_str(t, row, "system", sys_name[s]);
				if (!oh && !isnan(sec) && sec > 0)
					table_num(t, row, "mbs", x->passes * 1.048576 / sec);
				if (!isnan(sec))
					table_num(t, row, "seconds", sec);
				if (!oh && s != N_PLAIN && sec > 0)
					ratio = r->s[N_PLAIN][k][ph] / sec;
				if (oh && s != N_PLAIN && total(&r->c[N_CTO][k][ph]) > 0)
					ratio = total(c) / total(&r->c[N_CTO][k][ph]);
				if (!isnan(ratio))
					table_num(t, row, "ratio", ratio);
				table_str(t, row, "target", rtts[k] == 1 ? tg : "-");
				if (rtts[k] == 1 && !isnan(want)) {
					bool met = oh ? !isnan(ratio) && ratio <= want &&
							      c->by[3] == 0
						      : !isnan(ratio) && ratio >= want;
					table_str(t, row, "met", met ? "yes" : "NO");
				}
				table_str(t, row, "seed", seed_fig((enum nsys)s, (enum nphase)ph));
				for (i = 0; i < NPROC; i++)
					table_num(t, row, keys[i], c->by[i] / per);
				table_num(t, row, "other_rpcs", c->other / per);
			}
	snprintf(t->note, sizeof(t->note),
		 "test5: %d x 1 MiB in 8 KiB calls, close each time (plain libnfs: nfs_fsync "
		 "before close); open-heavy: %d files of 4 KiB, %d passes: the first (each "
		 "file's lookup, and in clio its nfs:// device: a connection, MOUNT, LOOKUP, "
		 "FSINFO, GETATTR) apart from the others.  ratio: MB/s over plain libnfs's "
		 "(test5), RPCs over close-to-open's (open-heavy).  RPCs per pass (test5) or "
		 "per open (open-heavy), counted by the proxy.  lease's test5 writes end in the cache (written "
		 "back at the unmount, not timed).  No NFSv4 delegations here: lease is the "
		 "seed's with-delegation case.",
		 x->passes, x->files, x->opasses);
}

/* ---------------------------------------------------------------- run */

static int
prepare(struct nctx *x)
{
	static char buf[SMALL];
	char path[256];
	int f, fd;

	snprintf(path, sizeof(path), "%s/oh", x->export);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -1;
	for (f = 0; f < x->files; f++) {
		snprintf(path, sizeof(path), "%s/oh/%d", x->export, f);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, buf, SMALL) != SMALL) {
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

/* One system at one round trip: its three phases. */
static int
run_system(struct nctx *x, enum nsys s, int k, struct result *r)
{
	char url[512], mnt[128], name[64], opts[64];
	struct counts c0, c1;
	struct nfs_context *nfs = NULL;
	pid_t pid = -1;
	int ph, rc = 0;

	snprintf(name, sizeof(name), "t5.%d.%d", s, k);
	if (s == N_PLAIN) {
		snprintf(url, sizeof(url), "nfs://127.0.0.1%s?nfsport=%d&mountport=%d",
			 x->export, 3049 + 100 * k, 30048 + 100 * k);
		struct nfs_url *u;
		nfs = nfs_init_context();
		if (nfs == NULL)
			return -1;
		nfs_set_readahead(nfs, 0);
		nfs_set_pagecache(nfs, 0);
		nfs_set_dircache(nfs, 0);
		u = nfs_parse_url_dir(nfs, url);
		if (u == NULL || nfs_mount(nfs, u->server, u->path) != 0) {
			fprintf(stderr, "clio bench: nfs: libnfs: %s\n", nfs_get_error(nfs));
			if (u != NULL)
				nfs_destroy_url(u);
			nfs_destroy_context(nfs);
			return -1;
		}
		nfs_destroy_url(u);
	} else {
		snprintf(url, sizeof(url), "nfs://127.0.0.1%s?port=%d&mountport=%d",
			 x->export, 3049 + 100 * k, 30048 + 100 * k);
		snprintf(mnt, sizeof(mnt), "%s/mnt", x->dir);
		mkdir(mnt, 0755);
		snprintf(opts, sizeof(opts), "cache_size=128M%s", s == N_LEASE ? ",lease" : "");
		char *argv[] = { x->self, "mount", "-f", "-o", opts, url, mnt, NULL };
		pid = bench_fuse_start(argv, mnt);
		if (pid < 0) {
			fprintf(stderr, "clio bench: nfs: clio mount %s did not come up\n", url);
			return -1;
		}
	}
	for (ph = 0; ph < P_N && rc == 0; ph++) {
		if (counts_get(x, k, &c0) < 0)
			rc = -1;
		r->s[s][k][ph] = s == N_PLAIN ? run_libnfs(nfs, name, (enum nphase)ph, x)
					      : run_posix(mnt, name, (enum nphase)ph, x);
		if (isnan(r->s[s][k][ph]))
			fprintf(stderr, "clio bench: nfs: %s, %s at %g ms failed: %s\n",
				sys_name[s], phase_name[ph], rtts[k], strerror(errno));
		if (rc == 0 && counts_get(x, k, &c1) < 0)
			rc = -1;
		if (rc == 0) {
			int i;
			for (i = 0; i < NPROC; i++)
				r->c[s][k][ph].by[i] = c1.by[i] - c0.by[i];
			r->c[s][k][ph].other = c1.other - c0.other;
		}
	}
	if (nfs != NULL) {
		nfs_umount(nfs);
		nfs_destroy_context(nfs);
	}
	if (pid > 0 && bench_fuse_stop(mnt, pid) != 0) {
		fprintf(stderr, "clio bench: nfs: the lease mount's unmount failed\n");
		rc = -1;
	}
	return rc;
}

/* Run `clio bench nfs` again inside the namespace; returns only on
 * failure (-1). */
static int
reexec(const struct bench_opts *bo)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *argv[] = { "unshare", "-m", "-n", "--propagation", "private", "sh", "-c",
			 "mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind && "
			 "ip link set lo up && exec \"$0\" \"$@\"",
			 self, "bench", "nfs", NULL, NULL, NULL };
	int a = 11;

	if (n < 0)
		return -1;
	self[n] = '\0';
	if (bo->quick)
		argv[a++] = "--quick";
	if (bo->json)
		argv[a++] = "--json";
	if (geteuid() != 0) {
		fprintf(stderr, "clio bench: nfs needs root (a private network namespace "
			"for its server)\n");
		return -1;
	}
	setenv(NS_ENV, "1", 1);
	execvp(argv[0], argv);
	fprintf(stderr, "clio bench: nfs: unshare: %s\n", strerror(errno));
	return -1;
}

int
bench_nfs_real(const struct bench_opts *bo, struct table *t)
{
	struct nctx x;
	struct result *r;
	struct sigaction sa;
	int k, s, rc = 0;
	ssize_t n;

	if (getenv(NS_ENV) == NULL)
		return reexec(bo);
	memset(&x, 0, sizeof(x));
	x.passes = bo->quick ? 2 : 10;
	x.files = bo->quick ? 10 : 200;
	x.opasses = bo->quick ? 2 : 20; /* at least 2 */
	n = readlink("/proc/self/exe", x.self, sizeof(x.self) - 1);
	if (n < 0)
		return -1;
	x.self[n] = '\0';
	snprintf(x.rpcproxy, sizeof(x.rpcproxy), "%.*s/tests/tools/rpcproxy",
		 (int)(strrchr(x.self, '/') - x.self), x.self);
	if (access(x.rpcproxy, X_OK) != 0) {
		fprintf(stderr, "clio bench: nfs: %s not built (make tests)\n", x.rpcproxy);
		return -1;
	}
	snprintf(x.dir, sizeof(x.dir), "/tmp/clio-bench-nfs.XXXXXX");
	if (mkdtemp(x.dir) == NULL)
		return -1;
	snprintf(x.export, sizeof(x.export), "%s/export", x.dir);
	{
		char recov[128];
		snprintf(recov, sizeof(recov), "%s/recov", x.dir);
		mkdir(x.export, 0755);
		mkdir(recov, 0755);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = bench_mount_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	r = calloc(1, sizeof(*r));
	if (r == NULL || prepare(&x) < 0 || server_start(&x) < 0)
		rc = -1;
	for (k = 0; k < NRTT && rc == 0 && !bench_mount_stop; k++)
		for (s = 0; s < N_SYS && rc == 0 && !bench_mount_stop; s++) {
			fprintf(stderr, "clio bench: nfs: %s at %g ms\n", sys_name[s], rtts[k]);
			if (run_system(&x, (enum nsys)s, k, r) < 0)
				rc = -1;
		}
	server_stop(&x);
	if (rc == 0 && !bench_mount_stop)
		fill(t, r, &x);
	free(r);
	{
		char *rm[] = { "rm", "-rf", x.dir, NULL };
		pid_t p = bench_spawn(rm, NULL);
		if (p > 0)
			waitpid(p, NULL, 0);
	}
	return bench_mount_stop ? -1 : rc;
}
