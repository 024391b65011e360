/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchnfssim.c - `clio bench nfs --sim`: seed 004's Connectathon test5
 * in virtual time, over the nfs engine and the simulated server of
 * `nfs+sim:preset=seed2010`, through the public API only.
 *
 * test5 as Connectathon runs it: 10 times create (truncate) the 1 MiB
 * file, write it in 8 KiB writes, close; then 10 times open, read it in
 * 8 KiB reads, close.  Two clients:
 *  - close-to-open (no delegations): each open asks the server for the
 *    file's version (clio_dev_version: a GETATTR) and revalidates; each
 *    close after writing writes back and COMMITs (clio_fsync) and records
 *    the version its own writes made (another GETATTR);
 *  - lease (what a write delegation allows): a handle held from the
 *    first open to the end stands for the delegation, so no open asks
 *    and no close writes back; the cache writes full clusters behind the
 *    writer, and the rest at the end (a final fsync, timed apart).
 * The write time runs from the first open to the last close, the read
 * time over the read passes, on the virtual clock: the numbers are the
 * model's, the same on every machine.  The cache's flusher thread is off
 * (it runs on the real clock).  Invariants: every handle is closed, the
 * cache forgets the device and the device is closed, on errors too.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define T5_SIZE (1u << 20)
#define T5_IO 8192u
#define T5_COUNT 10
#define NPROCS 5

static const char *const procs[NPROCS] = { "read", "write", "commit", "setattr",
					   "getattr" };

struct t5 {
	double write_s, read_s, final_s;
	uint64_t rpc[NPROCS];
	uint64_t server_disk_writes;
};

/* The server's RPC counters (and its disk writes) from the device's
 * parameters. */
static int
rpc_counts(clio_dev *d, uint64_t *rpc, uint64_t *dw)
{
	char buf[8192], key[32];
	int i;

	if (clio_dev_params(d, buf, sizeof(buf)) < 0)
		return -EIO;
	for (i = 0; i <= NPROCS; i++) {
		const char *p;

		snprintf(key, sizeof(key), i < NPROCS ? "\nrpc_%s=" : "\ndisk_writes=",
			 i < NPROCS ? procs[i] : "");
		if ((p = strstr(buf, key)) == NULL)
			return -EIO;
		*(i < NPROCS ? &rpc[i] : dw) = strtoull(p + strlen(key), NULL, 10);
	}
	return 0;
}

/* Close-to-open's open: the file's version from the server, the cache
 * revalidated against it. */
static int
t5_open(clio_cache *c, clio_dev *d, bool lease, clio_file **fp)
{
	struct clio_validator v;
	int r = clio_open(c, d, CLIO_RDWR | CLIO_KEEP, fp);

	if (r < 0 || lease)
		return r;
	if ((r = clio_dev_version(d, &v)) < 0 || (r = clio_revalidate(*fp, &v)) < 0) {
		clio_close(*fp);
		return r;
	}
	return 0;
}

static int
t5_write_close(clio_dev *d, clio_file *f, bool lease)
{
	struct clio_validator v;
	int r = 0, e;

	if (!lease && (r = clio_fsync(f)) == 0 && (r = clio_dev_version(d, &v)) == 0)
		r = clio_validator_set(f, &v);
	e = clio_close(f);
	return r < 0 ? r : e;
}

/* One test5 run on a new simulated server. */
static int
bench_nfs_test5(const char *spec, bool lease, struct t5 *res)
{
	struct clio_conf conf = CLIO_CONF_DEFAULTS;
	uint64_t rpc0[NPROCS], dw0 = 0, dw1 = 0;
	clio_cache *c = NULL;
	clio_dev *d = NULL;
	clio_file *hold = NULL, *f;
	char *buf = NULL;
	double t0;
	int i, k, r;

	memset(res, 0, sizeof(*res));
	conf.flusher = 0;
	if ((r = clio_dev_open(spec, CLIO_DEV_CREATE, &d)) < 0)
		return r;
	if ((r = clio_cache_new(&conf, &c)) < 0)
		goto out;
	if ((buf = malloc(T5_IO)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = rpc_counts(d, rpc0, &dw0)) < 0)
		goto out;
	t0 = clio_vclock_now();
	if (lease && (r = clio_open(c, d, CLIO_RDWR | CLIO_KEEP, &hold)) < 0)
		goto out;
	for (i = 0; i < T5_COUNT; i++) {
		if ((r = t5_open(c, d, lease, &f)) < 0)
			goto out;
		r = clio_ftruncate(f, 0); /* creat(2) */
		for (k = 0; r == 0 && k < (int)(T5_SIZE / T5_IO); k++) {
			memset(buf, 'a' + (i + k) % 26, T5_IO);
			if (clio_pwrite(f, buf, T5_IO, (uint64_t)k * T5_IO) != (ssize_t)T5_IO)
				r = -EIO;
		}
		if (r < 0) {
			clio_close(f);
			goto out;
		}
		if ((r = t5_write_close(d, f, lease)) < 0)
			goto out;
	}
	res->write_s = clio_vclock_now() - t0;
	t0 = clio_vclock_now();
	for (i = 0; i < T5_COUNT; i++) {
		if ((r = t5_open(c, d, lease, &f)) < 0)
			goto out;
		for (k = 0; r == 0 && k < (int)(T5_SIZE / T5_IO); k++) {
			if (clio_pread(f, buf, T5_IO, (uint64_t)k * T5_IO) != (ssize_t)T5_IO)
				r = -EIO;
			else if (buf[0] != 'a' + (T5_COUNT - 1 + k) % 26 ||
				 buf[T5_IO - 1] != buf[0])
				r = -EILSEQ; /* not what the last pass wrote */
		}
		{
			int e = clio_close(f);

			if (r == 0)
				r = e;
		}
		if (r < 0)
			goto out;
	}
	res->read_s = clio_vclock_now() - t0;
	t0 = clio_vclock_now();
	if (hold != NULL) {
		r = clio_fsync(hold); /* the delegation returned: what is left */
		if (r < 0)
			goto out;
	}
	res->final_s = clio_vclock_now() - t0;
	if ((r = rpc_counts(d, res->rpc, &dw1)) < 0)
		goto out;
	for (i = 0; i < NPROCS; i++)
		res->rpc[i] -= rpc0[i];
	res->server_disk_writes = dw1 - dw0;
out:
	if (hold != NULL) {
		int e = clio_close(hold);
		if (r == 0)
			r = e;
	}
	if (c != NULL) {
		int e = clio_cache_forget(c, d);
		if (r == 0)
			r = e;
		clio_cache_free(c);
	}
	clio_dev_close(d);
	free(buf);
	return r;
}

static bool
t5_same(const struct t5 *a, const struct t5 *b)
{
	/* the runs start at different times of the clock: equal but for
	 * the rounding of the sums */
	return fabs(a->write_s - b->write_s) < 1e-9 && fabs(a->read_s - b->read_s) < 1e-9 &&
	       fabs(a->final_s - b->final_s) < 1e-9 &&
	       memcmp(a->rpc, b->rpc, sizeof(a->rpc)) == 0;
}

int
bench_nfs_sim(const struct bench_opts *bo, struct table *t)
{
	static const struct {
		const char *label;
		bool lease;
		double wlo, whi;
	} cases[] = {
		{ "close-to-open (no delegations)", false, 1.44, 5.96 },
		{ "lease (delegations)", true, 6.36, 7.53 },
	};
	const char *spec = "nfs+sim:preset=seed2010";
	const double rlo = 14.8, rhi = 238;
	bool all_in = true;
	size_t i;
	int j;

	(void)bo;
	table_init(t, "nfs-sim", "Seed 004: Connectathon test5 (10 x 1 MiB in 8 KiB I/O) "
		   "over nfs+sim:preset=seed2010, virtual time");
	table_col(t, "case", "client", -1);
	table_col(t, "write_mbs", "write MB/s", 2);
	table_col(t, "published_write", "seed write", -1);
	table_col(t, "read_mbs", "read MB/s", 1);
	table_col(t, "published_read", "seed read", -1);
	table_col(t, "write_s", "write s", 3);
	table_col(t, "read_s", "read s", 4);
	table_col(t, "final_s", "end s", 3);
	for (j = 0; j < NPROCS; j++) {
		static const char *const heads[NPROCS] = { "READ", "WRITE", "COMMIT",
							   "SETATTR", "GETATTR" };
		static const char *const keys[NPROCS] = { "rpc_read", "rpc_write", "rpc_commit",
							  "rpc_setattr", "rpc_getattr" };
		table_col(t, keys[j], heads[j], 0);
	}
	table_col(t, "write_in_range", "in range", -1);
	table_col(t, "repeatable", "same twice", -1);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct t5 a, b;
		double wmbs, rmbs;
		char s[32];
		int row, r;

		if ((r = bench_nfs_test5(spec, cases[i].lease, &a)) < 0 ||
		    (r = bench_nfs_test5(spec, cases[i].lease, &b)) < 0) {
			fprintf(stderr, "clio bench nfs --sim: test5 (%s): %s\n", cases[i].label,
				strerror(-r));
			return -1;
		}
		wmbs = (double)T5_COUNT * T5_SIZE / a.write_s / 1e6;
		rmbs = a.read_s > 0 ? (double)T5_COUNT * T5_SIZE / a.read_s / 1e6 : 0;
		row = table_row(t);
		table_str(t, row, "case", cases[i].label);
		table_num(t, row, "write_mbs", wmbs);
		snprintf(s, sizeof(s), "%.2f-%.2f", cases[i].wlo, cases[i].whi);
		table_str(t, row, "published_write", s);
		if (a.read_s > 0)
			table_num(t, row, "read_mbs", rmbs);
		snprintf(s, sizeof(s), "%.1f-%.0f", rlo, rhi);
		table_str(t, row, "published_read", s);
		table_num(t, row, "write_s", a.write_s);
		table_num(t, row, "read_s", a.read_s);
		table_num(t, row, "final_s", a.final_s);
		for (j = 0; j < NPROCS; j++) {
			snprintf(s, sizeof(s), "rpc_%s", procs[j]);
			table_num(t, row, s, (double)a.rpc[j]);
		}
		table_str(t, row, "write_in_range",
			  wmbs >= cases[i].wlo && wmbs <= cases[i].whi ? "yes" : "NO");
		table_str(t, row, "repeatable", t5_same(&a, &b) ? "yes" : "NO");
		all_in &= wmbs >= cases[i].wlo && wmbs <= cases[i].whi && t5_same(&a, &b);
	}
	snprintf(t->note, sizeof(t->note),
		 "  Published (2010, 100 Mbit through a $50 home router, FreeBSD's client): "
		 "write 1.44-5.96 MB/s\n"
		 "  without delegations, 6.36-7.53 MB/s with; read 14.8-238 MB/s.  "
		 "Each run is a new\n"
		 "  simulated server; RPCs are the run's (the open's GETATTR excluded); "
		 "end s: the final\n"
		 "  write-back when the lease ends.  Cached reads cost no virtual time "
		 "(the client's copies\n"
		 "  are not modelled): a read pass costs its RPCs and its waits only.%s",
		 all_in ? "" : "\n  A write rate is outside the published range or a run "
		 "was not repeatable.");
	return 0;
}
