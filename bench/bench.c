/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench.c - `clio bench NAME [--quick] [--json] [--plot DIR]`: the seeds'
 * experiments on the calibrated simulated disks, each row beside the
 * figure the seed published, clio against the Linux kernel on a real
 * file (kernel.c), the library's core against its peers (benchcore.c),
 * and clio over an RBD image against librbd's cache (benchrbd.c).
 *
 * Every experiment builds one table (table.h); the text, JSON and plot
 * renderings all come from it.  The simulated ones run in virtual time
 * and give the same figures on every machine; only the CPU columns and
 * the kernel experiment depend on the machine.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "bench.h"
#include "util.h"

static int
run_or_report(const struct wl_spec *w, struct wl_result *res)
{
	char err[256] = "";
	int r = wl_run(w, res, err, sizeof(err));

	if (r < 0)
		fprintf(stderr, "clio bench: %s\n", err[0] ? err : strerror(-r));
	return r;
}

/* ------------------------------------------------------------ seed 000 */

static int
exp_maxbsize(const struct bench_opts *bo, struct table *t)
{
	static const struct {
		const char *model, *dev;
		enum clio_cluster_mode cluster;
		uint32_t maxbsize, maxphys;
		double published;
	} rows[] = {
		{ "4.4BSD-Lite", "sim:preset=rz25", CLIO_CLUSTER_LITE, 8192, 65536, 0 },
		{ "4.4BSD-Lite", "sim:preset=rz25", CLIO_CLUSTER_LITE, 16384, 65536, 105 },
		{ "4.4BSD-Lite", "sim:preset=rz25", CLIO_CLUSTER_LITE, 32768, 65536, 0 },
		{ "4.4BSD-Lite", "sim:preset=rz25", CLIO_CLUSTER_LITE, 65536, 65536, 52 },
		{ "FreeBSD", "sim:preset=rz25", CLIO_CLUSTER_ON, 16384, 131072, 0 },
		{ "FreeBSD", "sim:preset=rz25", CLIO_CLUSTER_ON, 16384, 1048576, 0 },
		{ "FreeBSD", "sim:preset=rz25,maxio=1M", CLIO_CLUSTER_ON, 16384, 1048576, 0 },
	};
	size_t i;

	(void)bo;
	table_init(t, "maxbsize",
		   "maxbsize (seed 000, NetBSD PR kern/1718, 1995): dd if=/dev/zero "
		   "bs=1M count=86 conv=fsync onto sim:rz25, 8K blocks");
	table_col(t, "model", "model", -1);
	table_col(t, "device", "device", -1);
	table_col(t, "cluster_kb", "cluster KB", 0);
	table_col(t, "published_s", "published s", 0);
	table_col(t, "elapsed_s", "clio s", 1);
	table_col(t, "ratio", "clio/pub", 2);
	table_col(t, "bytes_per_s", "B/s", 0);
	table_col(t, "transfers", "transfers", 0);
	table_col(t, "kb_per_transfer", "KB/t", 1);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct wl_spec w = { .dev = rows[i].dev, .kind = WL_WRITE,
				     .bs = 1 << 20, .count = 86, .fsync_end = true };
		struct clio_conf defaults = CLIO_CONF_DEFAULTS;
		struct wl_result res;
		struct wl_figures f;
		int r = table_row(t);
		uint32_t cl;

		w.conf = defaults;
		w.conf.bsize = 8192;
		w.conf.cluster = rows[i].cluster;
		w.conf.maxbsize = rows[i].maxbsize;
		w.conf.maxphys = rows[i].maxphys;
		if (run_or_report(&w, &res) < 0)
			return -1;
		wl_figures(&res, &f);
		cl = rows[i].cluster == CLIO_CLUSTER_LITE ? rows[i].maxbsize
							   : rows[i].maxphys;
		table_str(t, r, "model", rows[i].model);
		table_str(t, r, "device", strchr(rows[i].dev, ',') ? "rz25 maxio=1M" : "rz25");
		table_num(t, r, "cluster_kb", cl / 1024.0);
		if (rows[i].published > 0) {
			table_num(t, r, "published_s", rows[i].published);
			table_num(t, r, "ratio", res.elapsed / rows[i].published);
		}
		table_num(t, r, "elapsed_s", res.elapsed);
		table_num(t, r, "bytes_per_s", (double)res.bytes / res.elapsed);
		table_num(t, r, "transfers", (double)f.transfers);
		table_num(t, r, "kb_per_transfer", f.kbt);
	}
	snprintf(t->note, sizeof(t->note),
		 "  Published: 105 s (858,833 B/s) with MAXBSIZE 16K, 52 s (1,734,183 B/s) "
		 "with 64K.\n  4.4BSD-Lite clusters fit one buffer (maxbsize); FreeBSD's "
		 "cluster buffers reach maxphys, capped by the controller's 64K (maxio).");
	return 0;
}

/* ------------------------------------------------------------ seed 001 */

/* The blocksize experiment's workload, alone: what cachegrind runs. */
static void
blocksize_spec(struct wl_spec *w, uint64_t bs, uint64_t total, bool direct)
{
	struct clio_conf defaults = CLIO_CONF_DEFAULTS;

	memset(w, 0, sizeof(*w));
	w->dev = "sim:preset=ad2009";
	w->kind = WL_READ;
	w->bs = bs;
	w->count = total / bs;
	w->direct = direct;
	w->conf = defaults;
	w->conf.maxphys = 131072; /* FreeBSD 8's MAXPHYS */
}

/* clio bench-one BS TOTAL DIRECT: run one blocksize row (internal). */
int
cmd_bench_one(int argc, char **argv)
{
	uint64_t bs, total, direct;
	struct wl_spec w;
	struct wl_result res;

	if (argc != 4 || parse_size(argv[1], &bs) < 0 || parse_size(argv[2], &total) < 0 ||
	    parse_uint(argv[3], &direct) < 0 || bs == 0) {
		fprintf(stderr, "usage: clio bench-one BS TOTAL DIRECT\n");
		return EX_USAGE;
	}
	blocksize_spec(&w, bs, total, direct != 0);
	if (run_or_report(&w, &res) < 0)
		return EX_SOFTWARE;
	printf("%llu\n", (unsigned long long)res.bytes);
	return 0;
}

/*
 * Run one row under cachegrind and return its D1 and LL data misses (reads
 * plus writes).  Returns -1 if valgrind is missing or fails.
 */
static int
cachegrind_row(uint64_t bs, uint64_t total, bool direct, double *d1, double *ll)
{
	char out[] = "/tmp/clio-cg.XXXXXX", arg_out[64], bsarg[32], totarg[32];
	char line[4096], events[4096] = "", self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	FILE *fp;
	pid_t pid;
	int status, fd = mkstemp(out), rc = -1;

	if (fd < 0)
		return -1;
	close(fd);
	if (sl <= 0) {
		unlink(out);
		return -1;
	}
	self[sl] = '\0';
	snprintf(arg_out, sizeof(arg_out), "--cachegrind-out-file=%s", out);
	snprintf(bsarg, sizeof(bsarg), "%llu", (unsigned long long)bs);
	snprintf(totarg, sizeof(totarg), "%llu", (unsigned long long)total);
	pid = fork();
	if (pid == 0) {
		char *args[] = { "valgrind", "--tool=cachegrind", "--cache-sim=yes",
				 arg_out, self, "bench-one", bsarg,
				 totarg, direct ? "1" : "0", NULL };
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execvp("valgrind", args);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		goto out;
	fp = fopen(out, "r");
	if (fp == NULL)
		goto out;
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (strncmp(line, "events:", 7) == 0) {
			snprintf(events, sizeof(events), "%s", line + 7);
		} else if (strncmp(line, "summary:", 8) == 0) {
			char *ev_save = NULL, *val_save = NULL;
			char *ev = strtok_r(events, " \n", &ev_save);
			char *val = strtok_r(line + 8, " \n", &val_save);
			*d1 = *ll = 0;
			while (ev != NULL && val != NULL) {
				double v = strtod(val, NULL);
				if (strcmp(ev, "D1mr") == 0 || strcmp(ev, "D1mw") == 0)
					*d1 += v;
				if (strcmp(ev, "DLmr") == 0 || strcmp(ev, "DLmw") == 0)
					*ll += v;
				ev = strtok_r(NULL, " \n", &ev_save);
				val = strtok_r(NULL, " \n", &val_save);
			}
			rc = 0;
		}
	}
	fclose(fp);
out:
	unlink(out);
	return rc;
}

static int
exp_blocksize(const struct bench_opts *bo, struct table *t)
{
	static const uint64_t all_bs[] = { 512, 2048, 8192, 16384, 32768, 65536,
					   131072, 262144, 1 << 20, 4 << 20,
					   16 << 20, 128 << 20 };
	static const uint64_t quick_bs[] = { 512, 8192, 16384, 65536, 1 << 20,
					     16 << 20 };
	/* seed 001: dd from /dev/ad2 (the raw disk), bytes/s */
	static const struct {
		uint64_t bs;
		double mbs;
	} published[] = {
		{ 16384, 55.26 }, { 32768, 56.92 }, { 65536, 56.62 },
		{ 131072, 55.08 }, { 262144, 53.88 }, { 524288, 54.15 },
		{ 1 << 20, 57.02 }, { 4 << 20, 54.06 }, { 16 << 20, 53.70 },
		{ 128 << 20, 55.75 }, { 8192, 37.0 },
	};
	const uint64_t *bss = bo->quick ? quick_bs : all_bs;
	size_t nbs = bo->quick ? sizeof(quick_bs) / sizeof(quick_bs[0])
			       : sizeof(all_bs) / sizeof(all_bs[0]);
	uint64_t total = bo->quick ? 32ull << 20 : 256ull << 20;
	/* under cachegrind, a shorter read: it runs ~50 times slower */
	uint64_t cg_total = bo->quick ? 4ull << 20 : 32ull << 20;
	size_t i, k;
	int path;

	table_init(t, "blocksize",
		   "blocksize (seed 001, freebsd-arch \"DFLTPHYS vs MAXPHYS\", 2009): "
		   "read with user bs from sim:ad2009 (64K driver limit)");
	table_col(t, "bs", "bs", -1);
	table_col(t, "path", "path", -1);
	table_col(t, "published_mbs", "published MB/s", 1);
	table_col(t, "mbs", "clio MB/s", 1);
	table_col(t, "ratio", "clio/pub", 2);
	table_col(t, "transfers", "transfers", 0);
	table_col(t, "kb_per_transfer", "KB/t", 1);
	table_col(t, "cpu_s_per_gb", "CPU s/GB", 3);
	if (bo->cachegrind) {
		table_col(t, "d1_miss_per_mb", "D1 miss/MB", 0);
		table_col(t, "ll_miss_per_mb", "LL miss/MB", 0);
	}
	for (path = 0; path < 2; path++) {
		for (i = 0; i < nbs; i++) {
			uint64_t bs = bss[i];
			struct wl_spec w;
			struct wl_result res;
			struct wl_figures f;
			char label[32];
			int r;

			if (bs > total)
				continue;
			blocksize_spec(&w, bs, total, path == 1);
			if (path == 1 && bs % 512 != 0)
				continue;
			if (run_or_report(&w, &res) < 0)
				return -1;
			wl_figures(&res, &f);
			r = table_row(t);
			if (bs >= (1 << 20))
				snprintf(label, sizeof(label), "%lluM",
					 (unsigned long long)(bs >> 20));
			else if (bs >= 1024)
				snprintf(label, sizeof(label), "%lluK",
					 (unsigned long long)(bs >> 10));
			else
				snprintf(label, sizeof(label), "%llu",
					 (unsigned long long)bs);
			table_str(t, r, "bs", label);
			table_str(t, r, "path", path ? "direct" : "cached");
			table_num(t, r, "mbs", f.app_mbs);
			table_num(t, r, "transfers", (double)f.transfers);
			table_num(t, r, "kb_per_transfer", f.kbt);
			table_num(t, r, "cpu_s_per_gb",
				  res.cpu_s / ((double)res.bytes / 1e9));
			if (bo->cachegrind && bs <= cg_total) {
				double d1, ll;
				if (cachegrind_row(bs, cg_total, path == 1, &d1, &ll) < 0) {
					fprintf(stderr, "clio bench: cachegrind failed "
							"(is valgrind installed?)\n");
					return -1;
				}
				table_num(t, r, "d1_miss_per_mb", d1 / ((double)cg_total / 1e6));
				table_num(t, r, "ll_miss_per_mb", ll / ((double)cg_total / 1e6));
			}
			for (k = 0; path == 1 && k < sizeof(published) / sizeof(published[0]); k++) {
				if (published[k].bs == bs) {
					table_num(t, r, "published_mbs", published[k].mbs);
					table_num(t, r, "ratio", f.app_mbs / published[k].mbs);
				}
			}
		}
	}
	snprintf(t->note, sizeof(t->note),
		 "  Published: the raw disk at 53.7-57.0 MB/s for every bs from 16K to "
		 "128M (10^6 B/s), 37 MB/s at 8K.\n  CPU s/GB is this machine's user+system "
		 "time for the copy through clio (the disk is simulated).");
	return 0;
}

/* ------------------------------------------------------------ seed 002 */

static int
exp_rewrite(const struct bench_opts *bo, struct table *t)
{
	static const struct {
		enum clio_rbw_mode rbw;
		const char *label;
		double kbt, tps, mbs;
	} rows[] = {
		{ CLIO_RBW_BLOCK, "before (rbw=block)", 14.21, 813, 11.19 },
		{ CLIO_RBW_CLUSTER, "after (rbw=cluster)", 63.62, 434, 26.99 },
	};
	uint64_t count = bo->quick ? 32768 : 262144;
	size_t i;

	table_init(t, "rewrite",
		   "rewrite (seed 002, FreeBSD ffs_balloc.c, 2002): dd if=/dev/zero "
		   "bs=1k conv=notrunc over an existing file on sim:da2002, 8K blocks, "
		   "maxphys 64K");
	table_col(t, "case", "case", -1);
	table_col(t, "published_kbt", "pub KB/t", 2);
	table_col(t, "kbt", "KB/t", 2);
	table_col(t, "published_tps", "pub tps", 0);
	table_col(t, "tps", "tps", 0);
	table_col(t, "published_mbs", "pub MB/s", 2);
	table_col(t, "mbs", "MB/s", 2);
	table_col(t, "ratio_mbs", "MB/s clio/pub", 2);
	table_col(t, "reads", "reads", 0);
	table_col(t, "writes", "writes", 0);
	table_col(t, "read_share", "read bytes %", 1);
	for (i = 0; i < 2; i++) {
		struct wl_spec w = { .dev = "sim:preset=da2002", .kind = WL_REWRITE,
				     .bs = 1024, .count = count };
		struct clio_conf defaults = CLIO_CONF_DEFAULTS;
		struct wl_result res;
		struct wl_figures f;
		const struct clio_iostat *b;
		int r = table_row(t);

		w.conf = defaults;
		w.conf.bsize = 8192;
		w.conf.maxphys = 65536;
		w.conf.rbw = rows[i].rbw;
		if (run_or_report(&w, &res) < 0)
			return -1;
		wl_figures(&res, &f);
		b = &res.st.back;
		table_str(t, r, "case", rows[i].label);
		table_num(t, r, "published_kbt", rows[i].kbt);
		table_num(t, r, "kbt", f.kbt);
		table_num(t, r, "published_tps", rows[i].tps);
		table_num(t, r, "tps", f.tps);
		table_num(t, r, "published_mbs", rows[i].mbs);
		table_num(t, r, "mbs", f.dev_mbs);
		table_num(t, r, "ratio_mbs", f.dev_mbs / rows[i].mbs);
		table_num(t, r, "reads", (double)b->reads);
		table_num(t, r, "writes", (double)b->writes);
		table_num(t, r, "read_share",
			  100.0 * (double)b->read_bytes /
				  (double)(b->read_bytes + b->write_bytes));
	}
	snprintf(t->note, sizeof(t->note),
		 "  iostat's units: KB = 1024 B, MB/s = 2^20 B/s, reads and writes together "
		 "(\"half of these are reads\").");
	return 0;
}

/* ------------------------------------------------------------ seed 003 */

static int
exp_rawblock(const struct bench_opts *bo, struct table *t)
{
	static const struct {
		const char *label;
		enum clio_cluster_mode cluster;
		uint32_t bsize;
		bool direct;
		uint64_t bs;
		double kbt, tps, mbs;
	} rows[] = {
		{ "buffered (cluster=off, 2K)", CLIO_CLUSTER_OFF, 2048, false, 32768, 2.05, 1600, 3.13 },
		{ "buffered (cluster=off, 2K)", CLIO_CLUSTER_OFF, 2048, false, 2048, 2.10, 143, 0.29 },
		{ "raw (direct)", CLIO_CLUSTER_ON, 16384, true, 32768, 32.00, 312, 9.74 },
		{ "raw (direct)", CLIO_CLUSTER_ON, 16384, true, 2048, 2.00, 3891, 7.60 },
		{ "clio (clustered)", CLIO_CLUSTER_ON, 16384, false, 32768, 0, 0, 0 },
		{ "clio (clustered)", CLIO_CLUSTER_ON, 16384, false, 2048, 0, 0, 0 },
	};
	uint64_t total = bo->quick ? 4ull << 20 : 20480000ull;
	size_t i;

	table_init(t, "rawblock",
		   "rawblock (seed 003, cvs-all \"user block device access\", 1999): dd "
		   "from sim:wd1999 through the buffered block device, the raw device "
		   "and clio");
	table_col(t, "path", "path", -1);
	table_col(t, "bs", "bs", -1);
	table_col(t, "published_kbt", "pub KB/t", 2);
	table_col(t, "kbt", "KB/t", 2);
	table_col(t, "published_tps", "pub tps", 0);
	table_col(t, "tps", "tps", 0);
	table_col(t, "published_mbs", "pub MB/s", 2);
	table_col(t, "mbs", "MB/s", 2);
	table_col(t, "ratio_mbs", "MB/s clio/pub", 2);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct wl_spec w = { .dev = "sim:preset=wd1999", .kind = WL_READ,
				     .bs = rows[i].bs, .count = total / rows[i].bs,
				     .direct = rows[i].direct };
		struct clio_conf defaults = CLIO_CONF_DEFAULTS;
		struct wl_result res;
		struct wl_figures f;
		int r = table_row(t);

		w.conf = defaults;
		w.conf.bsize = rows[i].bsize;
		w.conf.cluster = rows[i].cluster;
		w.conf.maxphys = 65536;
		if (run_or_report(&w, &res) < 0)
			return -1;
		wl_figures(&res, &f);
		table_str(t, r, "path", rows[i].label);
		table_str(t, r, "bs", rows[i].bs == 2048 ? "2K" : "32K");
		table_num(t, r, "kbt", f.kbt);
		table_num(t, r, "tps", f.tps);
		table_num(t, r, "mbs", f.dev_mbs);
		if (rows[i].tps > 0) {
			table_num(t, r, "published_kbt", rows[i].kbt);
			table_num(t, r, "published_tps", rows[i].tps);
			table_num(t, r, "published_mbs", rows[i].mbs);
			table_num(t, r, "ratio_mbs", f.dev_mbs / rows[i].mbs);
		}
	}
	snprintf(t->note, sizeof(t->note),
		 "  Published (iostat of wd3c): buffered bs=32K 2.0-2.05 KB/t, 1290-1602 tps, "
		 "2.6-3.1 MB/s; bs=2K 2.1-2.8 KB/t, 143-162 tps, 0.29-0.44 MB/s;\n"
		 "  raw bs=32K 32 KB/t, 312 tps, 9.74 MB/s; bs=2K 2 KB/t, 3891 tps, 7.60 MB/s.");
	return 0;
}

/* ------------------------------------------------------------ driver */

static const struct experiment {
	const char *name;
	int (*run)(const struct bench_opts *, struct table *);
	bool simulated;
	bool not_in_all;	/* needs more than `all` may assume (FUSE) */
} experiments[] = {
	{ "maxbsize", exp_maxbsize, true, false },
	{ "blocksize", exp_blocksize, true, false },
	{ "rewrite", exp_rewrite, true, false },
	{ "rawblock", exp_rawblock, true, false },
	{ "kernel", exp_kernel, false, false },
	{ "core", exp_core, false, false },
	{ "nfs", exp_nfs, true, false },	/* in all: --sim */
	{ "mount", exp_mount, false, true },
	{ "mount", exp_mount_meta, false, true },	/* its second table */
	{ "rbd", exp_rbd, false, true },
	{ "diskcache", exp_diskcache, false, true },	/* nbdkit, 5 ms RTT */
	{ "nbd", exp_nbd, false, true },
	{ "nbd", exp_nbd_copy, false, true },		/* its second table */
};

/* SIGPIPE, caught (exec resets it for the programs the experiments run):
 * a reader that went away must not kill an experiment whose servers,
 * mounts and files are to be stopped and removed at its end; the write
 * fails instead, and the run stops after that experiment (status 74). */
static void
on_sigpipe(int sig)
{
	(void)sig;
}

static void
usage_bench(FILE *fp)
{
	fprintf(fp,
		"usage: clio bench NAME [--quick] [--json] [--plot DIR] [--runs N]\n"
		"                  [--file PATH] [--size N] [--cachegrind] [--sim]\n"
		"NAME: maxbsize, blocksize, rewrite, rawblock, kernel, core, nfs (with --sim:\n"
		"      seed 004 in virtual time), or all (these seven, nfs simulated); mount\n"
		"      (clio mount and FUSE against the kernel; not in all); rbd --file\n"
		"      rbd:POOL/IMAGE (clio against librbd's cache; not in all); diskcache\n"
		"      (the disk tier over NBD at 5 ms RTT; not in all); nbd (fio and\n"
		"      nbdcopy on nbdkit, with clio's filter; not in all).\n"
		"See clio(1).\n");
}

int
cmd_bench(int argc, char **argv)
{
	struct bench_opts bo = { .runs = 0 };
	const char *name = NULL;
	struct table *t;
	size_t i;
	int a, n = 0, rc = 0;
	bool opts = true;

	if ((rc = cli_help_version(argc, argv, usage_bench, NULL)) >= 0)
		return rc;
	rc = 0;
	for (a = 1; a < argc; a++) {
		const char *arg = argv[a];
		const char *val = NULL;
		const char *eq = strchr(arg, '=');
		char key[32];

		if (opts && strcmp(arg, "--") == 0) {
			opts = false;	/* what follows is NAME */
			continue;
		}
		if (!opts || strncmp(arg, "--", 2) != 0) {
			if (name != NULL) {
				fprintf(stderr, "clio bench: unexpected argument '%s'\n", arg);
				return EX_USAGE;
			}
			name = arg;
			continue;
		}
		snprintf(key, sizeof(key), "%.*s",
			 (int)(eq ? (size_t)(eq - arg) : strlen(arg)), arg);
		if (eq != NULL && (strcmp(key, "--quick") == 0 || strcmp(key, "--json") == 0 ||
				   strcmp(key, "--sim") == 0 || strcmp(key, "--cachegrind") == 0)) {
			fprintf(stderr, "clio bench: option '%s' takes no value\n", key);
			return EX_USAGE;
		}
		if (strcmp(key, "--quick") == 0) {
			bo.quick = true;
			continue;
		}
		if (strcmp(key, "--json") == 0) {
			bo.json = true;
			continue;
		}
		if (strcmp(key, "--sim") == 0) {
			bo.sim = true;
			continue;
		}
		if (strcmp(key, "--cachegrind") == 0) {
			bo.cachegrind = true;
			continue;
		}
		if (strcmp(key, "--help") == 0) {
			usage_bench(stdout);
			return 0;
		}
		if (strcmp(key, "--plot") != 0 && strcmp(key, "--file") != 0 &&
		    strcmp(key, "--size") != 0 && strcmp(key, "--runs") != 0) {
			fprintf(stderr, "clio bench: unknown option '%s'\n", key);
			return EX_USAGE;
		}
		if (eq)
			val = eq + 1;
		else if (a + 1 < argc)
			val = argv[++a];
		else {
			fprintf(stderr, "clio bench: option '%s' needs a value\n", key);
			return EX_USAGE;
		}
		if (strcmp(key, "--plot") == 0) {
			bo.plot_dir = val;
		} else if (strcmp(key, "--file") == 0) {
			bo.file = val;
		} else if (strcmp(key, "--size") == 0) {
			if (parse_size(val, &bo.size) < 0 || bo.size < (1u << 20)) {
				fprintf(stderr, "clio bench: invalid --size '%s' (at least 1M)\n", val);
				return EX_USAGE;
			}
		} else if (strcmp(key, "--runs") == 0) {
			uint64_t v;
			if (parse_uint(val, &v) < 0 || v < 1 || v > 100) {
				fprintf(stderr, "clio bench: invalid --runs '%s' (1 to 100)\n", val);
				return EX_USAGE;
			}
			bo.runs = (int)v;
		}
	}
	if (bo.runs == 0)
		bo.runs = bo.quick ? 1 : 3;
	bo.all = name != NULL && strcmp(name, "all") == 0;
	if (name == NULL) {
		usage_bench(stderr);
		return EX_USAGE;
	}
	for (i = 0; i < sizeof(experiments) / sizeof(experiments[0]); i++)
		if ((strcmp(name, "all") == 0 && !experiments[i].not_in_all) ||
		    strcmp(name, experiments[i].name) == 0)
			break;
	if (i == sizeof(experiments) / sizeof(experiments[0])) {
		fprintf(stderr, "clio bench: unknown experiment '%s'\n", name);
		return EX_USAGE;
	}
	if (bo.plot_dir != NULL && mkdir(bo.plot_dir, 0755) < 0) {
		struct stat pst;
		int e = errno;

		/* something else of that name: no directory, before any run */
		if (e == EEXIST && stat(bo.plot_dir, &pst) == 0 && !S_ISDIR(pst.st_mode))
			e = ENOTDIR;
		if (e != EEXIST) {
			fprintf(stderr, "clio bench: cannot create '%s': %s\n",
				bo.plot_dir, strerror(e));
			return EX_CANTCREAT;
		}
	}
	t = malloc(sizeof(*t));
	if (t == NULL)
		return EX_OSERR;
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_sigpipe;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGPIPE, &sa, NULL);
	}
	if (bo.json)
		printf("{\"quick\": %s, \"experiments\": [", bo.quick ? "true" : "false");
	for (i = 0; i < sizeof(experiments) / sizeof(experiments[0]); i++) {
		const struct experiment *e = &experiments[i];

		if (strcmp(name, "all") == 0 ? e->not_in_all : strcmp(name, e->name) != 0)
			continue;
		int er = e->run(&bo, t);

		if (er != 0) {
			rc = er < 0 ? EX_SOFTWARE : er;
			break;
		}
		if (bo.json) {
			printf("%s", n++ ? ", " : "");
			table_json(t, stdout);
		} else {
			table_print(t, stdout);
		}
		if (fflush(stdout) != 0 || ferror(stdout))
			break;	/* no reader: the rest would be lost too */
		if (bo.plot_dir != NULL && plot_table(&bo, t) < 0 && rc == 0)
			rc = EX_SOFTWARE;
	}
	if (bo.json)
		printf("]}\n");
	free(t);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "clio bench: standard output: %s\n",
			strerror(errno ? errno : EIO));
		if (rc == 0)
			rc = EX_IOERR;
	}
	return rc;
}
