/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchtier.c - `clio bench diskcache`: the disk tier (disk_cache=DIR)
 * over two devices at 5 ms round trip serving one image in a temporary
 * directory under ${TMPDIR:-/var/tmp}: first NFS (NFS-Ganesha behind
 * tests/tools/rpcproxy, 2.5 ms each way, in a child process in a private
 * namespace: benchsrv.c; the figures come back through a pipe), then NBD
 * (nbdkit's file plugin behind its delay filter, rdelay=wdelay=2.5ms,
 * on a Unix socket).
 *
 * Each case runs three ways, taking turns within each run (each client's
 * cache made resident before its clock starts, as clio mount and clio
 * serve do at start):
 *   cold   a client (cache, device, handle, all new) with an empty DIR;
 *   warm   a new client after the cold one closed: a restart, with the
 *          memory cache empty and DIR as the cold run left it;
 *   local  the same reads with pread(2) from the image itself, after an
 *          untimed pass (so from the page cache, as DIR is);
 *   none   a client without the disk tier: what a miss costs more with
 *          it is cold/none (target at most 1.10);
 *   clio file  a client without the tier on the image as a file device
 *          (from the page cache): the memory cache's own cost, which
 *          warm pays too;
 *   slow   (NFS rows, root, nbdfuse and mkfs.ext4 there) a cold client
 *          with DIR on a slow disk: ext4 on a loop device over nbdfuse's
 *          file over `clio serve` of a simulated 7200 rpm disk that
 *          sleeps (clock=real), mounted in the NFS child's namespace;
 *          slow/none is the miss cost there (target at most 1.10).
 * The cases: (a) Connectathon test5's read phase (a 1 MiB file read 10
 * times in 8 KiB reads); (b) a sequential read of the image in 1 MiB
 * reads; (c) seeded random 4 KiB reads.  The table gives the medians of
 * --runs runs, warm/cold ("speedup", target 20x) and local/warm (target
 * 0.8: warm at least 0.8 times the speed of the local file), and the
 * device reads of the warm runs, which must be 0.  Invariants: nbdkit,
 * rpcbind, ganesha and rpcproxy are stopped by their pids whatever
 * happens (the NFS child's servers by the child); the temporary
 * directory goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "benchsrv.h"
#include "util.h"

enum tcase { T_TEST5, T_SEQ, T_RAND, T_N };
enum tsys { S_COLD, S_WARM, S_LOCAL, S_NONE, S_CLIOFILE, S_SLOW, S_N };

static const char *const tlabels[T_N] = {
	"(a) test5 read phase: 1 MiB x 10, 8K reads",
	"(b) sequential read, 1 MiB reads",
	"(c) random 4 KiB reads",
};

enum tdev { D_NFS, D_NBD, D_N };
static const char *const dlabels[D_N] = { "nfs", "nbd" };

struct tctx {
	char dir[4096], exp[4200], img[4300], sock[4200], pidf[4200], dc[4200];
	char uri[8600], nfsuri[8800], self[4096];
	/* the slow DIR (NFS child): ext4 on a loop device over nbdfuse's file
	 * over `clio serve` of a sim disk; slowdc empty: none */
	char slowsock[4200], slowfs[4200], slowdisk[4300], slowmnt[4200], slowdc[4300];
	char slowlog[4200];	/* clio serve's messages */
	pid_t slowsrv, slowfuse;
	bool slowmounted;
	uint64_t size;	/* of the image */
	uint64_t nrand;	/* (c)'s reads */
	pid_t nbdkit;
};

static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void
rm_tree(const char *p)
{
	nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int
nbdkit_start(struct tctx *x)
{
	pid_t p = fork();
	int status;
	FILE *fp;

	if (p < 0)
		return -errno;
	if (p == 0) {
		execlp("nbdkit", "nbdkit", "-U", x->sock, "--pidfile", x->pidf,
		       "--filter=delay", "file", x->img, "rdelay=2.5ms",
		       "wdelay=2.5ms", (char *)NULL);
		_exit(127);
	}
	if (waitpid(p, &status, 0) != p || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -EIO;
	for (int i = 0; i < 100; i++) { /* the daemon writes it after forking */
		if ((fp = fopen(x->pidf, "r")) != NULL) {
			int pid = 0;
			if (fscanf(fp, "%d", &pid) == 1 && pid > 0)
				x->nbdkit = pid;
			fclose(fp);
			if (x->nbdkit > 0)
				return 0;
		}
		usleep(50000);
	}
	return -ETIMEDOUT;
}

static void
nbdkit_stop(struct tctx *x)
{
	if (x->nbdkit <= 0)
		return;
	kill(x->nbdkit, SIGTERM);
	for (int i = 0; i < 50 && bench_running(x->nbdkit); i++)
		usleep(100000);
	kill(x->nbdkit, SIGKILL);
	x->nbdkit = 0;
}

/* The reads of case c, with rd (a clio handle or an fd) */
typedef ssize_t readfn(void *h, void *buf, size_t len, uint64_t off);

static ssize_t
rd_clio(void *h, void *buf, size_t len, uint64_t off)
{
	return clio_pread(h, buf, len, off);
}

static ssize_t
rd_fd(void *h, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(*(int *)h, buf, len, (off_t)off);

	return n < 0 ? -errno : n;
}

static int
workload(const struct tctx *x, enum tcase c, readfn *rd, void *h, char *buf)
{
	unsigned s = 4242;

	switch (c) {
	case T_TEST5:
		for (int i = 0; i < 10; i++)
			for (uint64_t off = 0; off < (1u << 20); off += 8192)
				if (rd(h, buf, 8192, off) != 8192)
					return -EIO;
		return 0;
	case T_SEQ:
		for (uint64_t off = 0; off < x->size; off += 1u << 20)
			if (rd(h, buf, 1u << 20, off) != 1 << 20)
				return -EIO;
		return 0;
	default:
		for (uint64_t i = 0; i < x->nrand; i++) {
			uint64_t off = ((uint64_t)rand_r(&s) % (x->size / 4096)) * 4096;
			if (rd(h, buf, 4096, off) != 4096)
				return -EIO;
		}
		return 0;
	}
}

/* One client (with the disk tier in DIR dc if not NULL): its seconds,
 * the bytes it read from the device in *nbd, and (drops not NULL) the
 * blocks the tier dropped from its insertion queue in *drops. */
static double
client(const struct tctx *x, const char *dev, enum tcase c, char *buf,
       uint64_t *nbd, const char *dc, uint64_t *drops)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	struct clio_dev_stats st;
	clio_cache *cache = NULL;
	clio_dev *d = NULL;
	clio_file *f = NULL;
	char err[256];
	double t0, t = NAN;

	if (dc != NULL && clio_conf_set(&conf, "disk_cache", dc, err, sizeof(err)) < 0) {
		fprintf(stderr, "clio bench diskcache: %s\n", err);
		return NAN;
	}
	if (clio_cache_new(&conf, &cache) < 0 ||
	    clio_dev_open_err(dev, CLIO_DEV_RDONLY, &d, err, sizeof(err)) < 0 ||
	    clio_open(cache, d, CLIO_RDONLY, &f) < 0) {
		fprintf(stderr, "clio bench diskcache: %s: cannot open (%s)\n", dev, err);
		goto out;
	}
	/* resident before the clock, as clio mount and clio serve make
	 * their caches at start: a restart is timed from its first read */
	(void)clio_cache_prefault(cache);
	t0 = now_monotonic();
	if (workload(x, c, rd_clio, f, buf) == 0)
		t = now_monotonic() - t0;
	clio_dev_stats(d, &st);
	*nbd = st.back.read_bytes;
out:
	if (f != NULL)
		clio_close(f);
	if (cache != NULL)
		clio_cache_free(cache);
	if (d != NULL && drops != NULL) {
		/* the blocks the tier did not keep (its queue was full) */
		static char pb[16384];
		const char *q;
		*drops = 0;
		if (clio_dev_params(d, pb, sizeof(pb)) > 0 &&
		    (q = strstr(pb, "\ndisk_cache.insert_drops=")) != NULL)
			*drops = strtoull(q + strlen("\ndisk_cache.insert_drops="), NULL, 10);
	}
	if (d != NULL)
		clio_dev_close(d);
	return t;
}

static double
local(const struct tctx *x, enum tcase c, char *buf)
{
	int fd = open(x->img, O_RDONLY);
	double t0, t = NAN;

	if (fd < 0)
		return NAN;
	if (workload(x, c, rd_fd, &fd, buf) == 0) { /* into the page cache */
		t0 = now_monotonic();
		if (workload(x, c, rd_fd, &fd, buf) == 0)
			t = now_monotonic() - t0;
	}
	close(fd);
	return t;
}

/* runs rounds of the cases over the device uri, the systems taking
 * turns: v[(c * runs + run) * S_N + s]; the device bytes of the cold and
 * warm runs added to *cold_b, *warm_b; drops[0] += the blocks the cold
 * runs' tier dropped (a full insertion queue), drops[1] += the warm runs
 * that read more than those from the device.  0 or -1. */
static int
measure(struct tctx *x, const char *uri, const char *what, int runs,
	double *v, uint64_t *cold_b, uint64_t *warm_b, uint64_t *drops, char *buf)
{
	const struct clio_conf dconf = CLIO_CONF_DEFAULTS;
	const uint64_t bs = dconf.bsize; /* the tier's block: the clients' */

	for (int run = 0; run < runs; run++) {
		for (int c = 0; c < T_N; c++) {
			double *r = &v[((size_t)c * runs + run) * S_N];
			uint64_t b = 0;
			fprintf(stderr, "\r  diskcache: %s %-44s run %d/%d", what,
				tlabels[c], run + 1, runs);
			rm_tree(x->dc);
			if (mkdir(x->dc, 0755) < 0)
				return -1;
			uint64_t dr = 0;
			r[S_COLD] = client(x, uri, c, buf, &b, x->dc, &dr);
			*cold_b += b;
			b = 0;
			drops[0] += dr;
			r[S_WARM] = client(x, uri, c, buf, &b, x->dc, NULL);
			*warm_b += b;
			/* what a restart reads from the device: no more than the
			 * blocks the cold run could not keep */
			if (b > dr * bs)
				drops[1]++;
			r[S_LOCAL] = local(x, c, buf);
			r[S_NONE] = client(x, uri, c, buf, &b, NULL, NULL);
			r[S_CLIOFILE] = client(x, x->img, c, buf, &b, NULL, NULL);
			r[S_SLOW] = NAN;
			if (x->slowdc[0] != '\0') { /* a cold run, DIR on the slow disk */
				rm_tree(x->slowdc);
				if (mkdir(x->slowdc, 0755) < 0)
					return -1;
				r[S_SLOW] = client(x, uri, c, buf, &b, x->slowdc, NULL);
			}
			for (int s = 0; s < S_N; s++)
				if (isnan(r[s]) && (s != S_SLOW || x->slowdc[0] != '\0'))
					return -1;
		}
	}
	return 0;
}

static int
read_full(int fd, void *p, size_t len)
{
	char *q = p;

	while (len > 0) {
		ssize_t n = read(fd, q, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		q += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The slow DIR, in the NFS child's mount namespace: `clio serve` of a
 * simulated 7200 rpm disk (sim:preset=ad2009, clock=real: it sleeps)
 * on a Unix socket, its export as a file by nbdfuse, an ext4 file system
 * made in that file and mounted with -o loop (the loop device goes with
 * the mount).  0, or -1 with a message (what was started is stopped). */
static void slow_stop(struct tctx *x);

static int
slow_start(struct tctx *x)
{
	char uri[4400];
	char *srv[] = { x->self, "serve", "sim:preset=ad2009,clock=real,size=1G",
			"--socket", x->slowsock, "-f", "-o", "cache_size=16M", NULL };
	char *fuse[] = { "nbdfuse", x->slowdisk, uri, NULL };
	char *mkfs[] = { "mkfs.ext4", "-q", "-F", x->slowdisk, NULL };
	char *mnt[] = { "mount", "-o", "loop", x->slowdisk, x->slowmnt, NULL };
	const char *what = "clio serve of a sim disk";

	snprintf(x->slowsock, sizeof(x->slowsock), "%s/slow.sock", x->dir);
	snprintf(x->slowlog, sizeof(x->slowlog), "%s/slow.log", x->dir);
	snprintf(x->slowfs, sizeof(x->slowfs), "%s/slowfs", x->dir);
	snprintf(x->slowdisk, sizeof(x->slowdisk), "%s/disk", x->slowfs);
	snprintf(x->slowmnt, sizeof(x->slowmnt), "%s/slowdir", x->dir);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", x->slowsock);
	if (!bench_have("nbdfuse")) {
		fprintf(stderr, "clio bench diskcache: no slow DIR column: nbdfuse "
			"not found (apt-get install libnbd-bin)\n");
		return -1;
	}
	if ((x->slowsrv = bench_spawn(srv, x->slowlog)) < 0)
		goto fail;
	for (int i = 0; ; i++) { /* its socket, 10 s at most */
		struct stat st;
		if (stat(x->slowsock, &st) == 0 && S_ISSOCK(st.st_mode))
			break;
		if (i == 500 || waitpid(x->slowsrv, NULL, WNOHANG) == x->slowsrv)
			goto fail;
		usleep(20000);
	}
	what = "nbdfuse";
	if (mkdir(x->slowfs, 0755) < 0 || mkdir(x->slowmnt, 0755) < 0 ||
	    (x->slowfuse = bench_fuse_start(fuse, x->slowfs)) < 0)
		goto fail;
	what = "mkfs.ext4 (e2fsprogs) and mount -o loop";
	if (isnan(bench_run_quiet(mkfs)) || isnan(bench_run_quiet(mnt)))
		goto fail;
	x->slowmounted = true;
	snprintf(x->slowdc, sizeof(x->slowdc), "%s/dc", x->slowmnt);
	return 0;
fail:
	char msg[512] = "";
	FILE *fp = fopen(x->slowlog, "r");
	if (fp != NULL) {
		if (fgets(msg, sizeof(msg), fp) == NULL)
			msg[0] = '\0';
		fclose(fp);
	}
	msg[strcspn(msg, "\n")] = '\0';
	fprintf(stderr, "clio bench diskcache: no slow DIR column: %s did not "
		"come up%s%s\n", what, msg[0] ? ": " : "", msg);
	slow_stop(x);
	return -1;
}

static void
slow_stop(struct tctx *x)
{
	x->slowdc[0] = '\0';
	if (x->slowmounted && umount(x->slowmnt) < 0)
		fprintf(stderr, "clio bench diskcache: umount %s: %s\n", x->slowmnt,
			strerror(errno));
	x->slowmounted = false;
	if (x->slowfuse > 0)
		(void)bench_fuse_stop(x->slowfs, x->slowfuse);
	x->slowfuse = 0;
	if (x->slowsrv > 0)
		bench_reap(&x->slowsrv);
}

/* The NFS rounds, in a child in a private namespace of its own with
 * rpcbind, ganesha.nfsd (serving x->exp) and rpcproxy (2.5 ms each
 * way), all its children, stopped by pid before it ends; the figures
 * come back through a pipe.  0, or -1 (said why). */
static int
measure_nfs(struct tctx *x, int runs, double *v, uint64_t *cold_b,
	    uint64_t *warm_b, uint64_t *drops, char *buf)
{
	size_t nv = (size_t)runs * T_N * S_N;
	int pfd[2], status;
	pid_t p;

	if (geteuid() != 0) {
		fprintf(stderr, "clio bench diskcache: the NFS rows need root "
			"(a private network namespace for ganesha)\n");
		return -1;
	}
	if (pipe(pfd) < 0)
		return -1;
	p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		struct bench_nfs s;
		uint64_t b[4] = { 0, 0, 0, 0 };
		int r;
		close(pfd[0]);
		memset(&s, 0, sizeof(s));
		snprintf(s.dir, sizeof(s.dir), "%s", x->dir);
		snprintf(s.export, sizeof(s.export), "%s", x->exp);
		if ((r = bench_private_ns()) < 0) {
			fprintf(stderr, "clio bench diskcache: a private namespace: %s\n",
				strerror(-r));
			_exit(1);
		}
		if (bench_nfs_start(&s, x->self, 2.5) < 0)
			_exit(1);
		(void)slow_start(x); /* without it, no slow DIR column */
		snprintf(x->nfsuri, sizeof(x->nfsuri),
			 "nfs://127.0.0.1%s/img?port=%d&mountport=%d", x->exp,
			 s.nfs_port, s.mnt_port);
		r = measure(x, x->nfsuri, "nfs", runs, v, &b[0], &b[1], &b[2], buf);
		slow_stop(x);
		bench_nfs_stop(&s);
		if (r == 0 && (write(pfd[1], v, nv * sizeof(*v)) != (ssize_t)(nv * sizeof(*v)) ||
			       write(pfd[1], b, sizeof(b)) != (ssize_t)sizeof(b)))
			r = -1;
		_exit(r == 0 ? 0 : 1);
	}
	close(pfd[1]);
	uint64_t b[4];
	int r = read_full(pfd[0], v, nv * sizeof(*v)) == 0 &&
		read_full(pfd[0], b, sizeof(b)) == 0 ? 0 : -1;
	close(pfd[0]);
	if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		r = -1;
	if (r == 0) {
		*cold_b += b[0];
		*warm_b += b[1];
		drops[0] += b[2];
		drops[1] += b[3];
	}
	return r;
}

int
exp_diskcache(const struct bench_opts *bo, struct table *t)
{
	const char *tmp = getenv("TMPDIR");
	int runs = bo->runs > 0 ? bo->runs : bo->quick ? 1 : 3;
	struct tctx x;
	double *v = NULL;
	uint64_t cold_b[D_N] = { 0, 0 }, warm_b[D_N] = { 0, 0 };
	uint64_t drops[D_N][2] = { { 0, 0 }, { 0, 0 } };
	bool have[D_N] = { false, false };
	char *buf = NULL;
	int rc = -1;
	ssize_t sn;

	memset(&x, 0, sizeof(x));
	x.size = bo->size ? bo->size : bo->quick ? 32ull << 20 : 256ull << 20;
	x.size = MAX(x.size & ~((1ull << 20) - 1), 2ull << 20);
	x.nrand = bo->quick ? 200 : 1000;
	if (!bench_have("nbdkit")) {
		fprintf(stderr, "clio bench diskcache: nbdkit not found "
			"(apt-get install nbdkit)\n");
		return -1;
	}
	snprintf(x.dir, sizeof(x.dir), "%s/clio-bench-tier-XXXXXX", tmp ? tmp : "/var/tmp");
	if (mkdtemp(x.dir) == NULL) {
		fprintf(stderr, "clio bench diskcache: %s: %s\n", x.dir, strerror(errno));
		return -1;
	}
	sn = readlink("/proc/self/exe", x.self, sizeof(x.self) - 1);
	x.self[sn > 0 ? sn : 0] = '\0';
	snprintf(x.exp, sizeof(x.exp), "%s/export", x.dir);
	snprintf(x.img, sizeof(x.img), "%s/img", x.exp);
	snprintf(x.sock, sizeof(x.sock), "%s/sock", x.dir);
	snprintf(x.pidf, sizeof(x.pidf), "%s/nbdkit.pid", x.dir);
	snprintf(x.dc, sizeof(x.dc), "%s/dc", x.dir);
	snprintf(x.uri, sizeof(x.uri), "nbd+unix:///?socket=%s", x.sock);
	buf = malloc(1u << 20);
	size_t nv = (size_t)runs * T_N * S_N;
	v = calloc(nv * D_N, sizeof(double));
	if (buf == NULL || v == NULL || mkdir(x.exp, 0755) < 0 ||
	    bench_make_file(x.img, x.size) < 0) {
		fprintf(stderr, "clio bench diskcache: cannot make %s\n", x.img);
		goto out;
	}
	/* NFS first, from a process with no thread yet (the child forks) */
	have[D_NFS] = measure_nfs(&x, runs, v + D_NFS * nv, &cold_b[D_NFS],
				  &warm_b[D_NFS], drops[D_NFS], buf) == 0;
	fprintf(stderr, "\r%*s\r", 80, "");
	if (!have[D_NFS])
		fprintf(stderr, "clio bench diskcache: no NFS rows (above: why)\n");
	if (nbdkit_start(&x) < 0) {
		fprintf(stderr, "clio bench diskcache: cannot set up nbdkit in %s\n", x.dir);
		goto out;
	}
	have[D_NBD] = measure(&x, x.uri, "nbd", runs, v + D_NBD * nv, &cold_b[D_NBD],
			      &warm_b[D_NBD], drops[D_NBD], buf) == 0;
	fprintf(stderr, "\r%*s\r", 80, "");
	if (!have[D_NBD])
		goto out;

	table_init(t, "diskcache",
		   "diskcache: the disk tier over NFS (ganesha behind rpcproxy) and NBD "
		   "(nbdkit's delay filter), both at 5 ms round trip: cold, warm after "
		   "a restart of the client, and the same reads from a local file");
	table_col(t, "device", "device", -1);
	table_col(t, "case", "case", -1);
	table_col(t, "cold_s", "cold s", 4);
	table_col(t, "warm_s", "warm s", 4);
	table_col(t, "local_s", "local s", 4);
	table_col(t, "speedup", "cold/warm", 1);
	table_col(t, "speedup_met", "20x met", -1);
	table_col(t, "vs_local", "local/warm", 3);
	table_col(t, "vs_local_met", "0.8 met", -1);
	table_col(t, "none_s", "no tier s", 4);
	table_col(t, "miss_cost", "cold/none", 3);
	table_col(t, "miss_cost_met", "1.1 met", -1);
	table_col(t, "clio_file_s", "clio file s", 4);
	table_col(t, "vs_clio_file", "file/warm", 3);
	table_col(t, "slow_s", "slow DIR s", 4);
	table_col(t, "slow_cost", "slow/none", 3);
	table_col(t, "slow_cost_met", "1.1 met", -1);
	char bound[600] = "";
	for (int dv = 0; dv < D_N; dv++)
	for (int c = 0; c < T_N && have[dv]; c++) {
		double m[S_N];
		int row = table_row(t);
		for (int s = 0; s < S_N; s++) {
			double col[64];
			int n = MIN(runs, 64);
			for (int run = 0; run < n; run++)
				col[run] = v[dv * nv + ((size_t)c * runs + run) * S_N + s];
			m[s] = bench_median(col, n);
		}
		table_str(t, row, "device", dlabels[dv]);
		table_str(t, row, "case", tlabels[c]);
		table_num(t, row, "cold_s", m[S_COLD]);
		table_num(t, row, "warm_s", m[S_WARM]);
		table_num(t, row, "local_s", m[S_LOCAL]);
		table_num(t, row, "speedup", m[S_COLD] / m[S_WARM]);
		table_str(t, row, "speedup_met", m[S_COLD] / m[S_WARM] >= 20 ? "yes" : "no");
		if (m[S_COLD] / m[S_WARM] < 20 && m[S_COLD] / m[S_LOCAL] < 20) {
			size_t len = strlen(bound);
			snprintf(bound + len, sizeof(bound) - len, "%s%s (%c) %.1fx",
				 len > 0 ? ", " : "", dlabels[dv], 'a' + c,
				 m[S_COLD] / m[S_LOCAL]);
		}
		table_num(t, row, "vs_local", m[S_LOCAL] / m[S_WARM]);
		table_str(t, row, "vs_local_met", m[S_LOCAL] / m[S_WARM] >= 0.8 ? "yes" : "no");
		table_num(t, row, "none_s", m[S_NONE]);
		table_num(t, row, "miss_cost", m[S_COLD] / m[S_NONE]);
		table_str(t, row, "miss_cost_met", m[S_COLD] / m[S_NONE] <= 1.1 ? "yes" : "no");
		table_num(t, row, "clio_file_s", m[S_CLIOFILE]);
		table_num(t, row, "vs_clio_file", m[S_CLIOFILE] / m[S_WARM]);
		if (!isnan(m[S_SLOW])) {
			table_num(t, row, "slow_s", m[S_SLOW]);
			table_num(t, row, "slow_cost", m[S_SLOW] / m[S_NONE]);
			table_str(t, row, "slow_cost_met",
				  m[S_SLOW] / m[S_NONE] <= 1.1 ? "yes" : "no");
		}
	}
	snprintf(t->note, sizeof(t->note),
		 "  %d run(s), medians; image %llu MiB, %llu random reads; bytes read "
		 "from the device: nfs cold runs %llu, warm runs %llu%s; nbd cold runs "
		 "%llu, warm runs %llu (warm: 0 but for the blocks dropped from the tier's "
		 "full insertion queue in the cold runs: nfs %llu, nbd %llu).\n"
		 "  Targets: cold/warm >= 20, local/warm >= 0.8, cold/none <= 1.10.  DIR "
		 "is on the local disk of TMPDIR: cold/none is the miss cost with a local "
		 "DIR; slow/none (NFS rows) that of a cold run with DIR on a slow disk: "
		 "ext4 on a loop device over nbdfuse over clio serve "
		 "sim:preset=ad2009,clock=real.  Each client's cache is made resident "
		 "before its clock starts (clio_cache_prefault), as clio mount and clio "
		 "serve do at start.%s%s%s",
		 runs, (unsigned long long)(x.size >> 20), (unsigned long long)x.nrand,
		 (unsigned long long)cold_b[D_NFS], (unsigned long long)warm_b[D_NFS],
		 have[D_NFS] ? "" : " (no NFS rows)",
		 (unsigned long long)cold_b[D_NBD], (unsigned long long)warm_b[D_NBD],
		 (unsigned long long)drops[D_NFS][0], (unsigned long long)drops[D_NBD][0],
		 bound[0] ? "\n  Rows whose cold read is less than 20x the local file's "
			    "time (cold/local), where cold/warm >= 20 would ask a warm read "
			    "faster than the local file itself: " : "",
		 bound, bound[0] ? "." : "");
	rc = drops[D_NFS][1] == 0 && drops[D_NBD][1] == 0 ? 0 : -1;
	if (rc != 0)
		fprintf(stderr, "clio bench diskcache: warm runs read more than the "
			"dropped blocks: %llu bytes over NFS, %llu over NBD\n", (unsigned long long)warm_b[D_NFS],
			(unsigned long long)warm_b[D_NBD]);
out:
	nbdkit_stop(&x);
	rm_tree(x.dir);
	free(buf);
	free(v);
	return rc;
}
