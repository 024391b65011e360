/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mountstats.c - the control file `.clio-stats` in the root of every
 * `clio mount` (device mode and pass-through mode).
 *
 * The file is read-only and private to the mount's owner, the uid that
 * ran clio mount (mode 0400, size 0): it names the files that others
 * have open, so with allow_other only the owner and root read it (the
 * kernel checks the mode, default_permissions; open checks the caller
 * again).  Each open builds a text snapshot of the cache's statistics
 * and of every open device's, kept with the open, so every read of one open sees the same numbers; the
 * open is reported with direct_io, so the kernel reads until the end of
 * the snapshot whatever the size says.  The name is not listed by
 * readdir; lookup finds it.  In pass-through mode it hides a real object
 * of that name in the source's root (which can be neither opened nor
 * changed through the mount).
 *
 * The snapshot (clio stat reads it; clio(1) lists every key):
 *  - lines "key: value"; a key without a space is the mount's, a key
 *    "NAME key" an open device's (NAME: its path under the mount, with
 *    blanks and ':' as '_'); values hold no newline;
 *  - first mountpoint, source (as given: a directory's absolute path or
 *    the device string), uptime_s; then the cache's counters; then the
 *    programs' requests (requests_*, mountio.c); then total_front_* and
 *    total_back_*: every device since the mount, those closed
 *    (mount_stats_retire), those idle and those open; devices_closed and
 *    devices_idle (open, kept for the next open of their file, which no
 *    program has open: no block of their own); then each open device's block,
 *    which starts with "NAME path:" (the name unchanged) and
 *    "NAME device:" (the source's file, or the device string);
 *    last "devices: N".
 *
 * Invariant: the totals count each device once, closed or open: a
 * snapshot is built again when a device was retired while it was being
 * built (retire_seq moved), so a device is never both in the retired
 * sums and among the open ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"
#include "mount.h"

/* Freed by whoever drops the last reference: the open holds one until
 * release, each READ one until its reply has been sent (the program may
 * close the file, and release come, while the reply is being written). */
struct snapshot {
	atomic_int refs;
	size_t len;
	char text[];
};

static void
snapshot_put(struct snapshot *s)
{
	if (atomic_fetch_sub(&s->refs, 1) == 1)
		free(s);
}

static void print_disk_cache(FILE *fp, const char *name, clio_dev *d);

static char stats_anchor; /* its address is the node id */
static clio_cache *st_cache;
static mount_stats_foreach_fn st_foreach;
static double st_start;
static const char *st_mountpoint, *st_source;

/* Devices closed since the mount; under retire_lock. */
static pthread_mutex_t retire_lock = PTHREAD_MUTEX_INITIALIZER;
static struct clio_dev_stats retired;
static uint64_t retired_devs, retire_seq;

fuse_ino_t
mount_stats_ino(void)
{
	return (fuse_ino_t)(uintptr_t)&stats_anchor;
}

int
mount_stats_name(fuse_ino_t parent, const char *name)
{
	return parent == FUSE_ROOT_ID && strcmp(name, MOUNT_STATS_NAME) == 0;
}

int
mount_stats_guard(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (!mount_stats_name(parent, name))
		return 0;
	fuse_reply_err(req, EPERM);
	return 1;
}

void
mount_stats_init(clio_cache *cache, mount_stats_foreach_fn foreach,
		 const char *mountpoint, const char *source)
{
	st_cache = cache;
	st_foreach = foreach;
	st_mountpoint = mountpoint;
	st_source = source;
	st_start = now_monotonic();
}

static void
iostat_add(struct clio_iostat *sum, const struct clio_iostat *s)
{
	sum->reads += s->reads;
	sum->writes += s->writes;
	sum->flushes += s->flushes;
	sum->read_bytes += s->read_bytes;
	sum->write_bytes += s->write_bytes;
	sum->errors += s->errors;
	sum->busy_s += s->busy_s;
	sum->read_time_s += s->read_time_s;
	sum->write_time_s += s->write_time_s;
}

void
mount_stats_retire(clio_dev *d)
{
	struct clio_dev_stats ds;

	clio_dev_stats(d, &ds);
	pthread_mutex_lock(&retire_lock);
	iostat_add(&retired.front, &ds.front);
	iostat_add(&retired.back, &ds.back);
	retired_devs++;
	retire_seq++;
	pthread_mutex_unlock(&retire_lock);
}

void
mount_stats_attr(struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = mount_stats_ino();
	st->st_mode = S_IFREG | 0400;
	st->st_nlink = 1;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_blksize = 4096;
}

void
mount_stats_lookup(fuse_req_t req)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = mount_stats_ino();
	e.entry_timeout = MOUNT_TIMEOUT;
	e.attr_timeout = MOUNT_TIMEOUT;
	mount_stats_attr(&e.attr);
	fuse_reply_entry(req, &e);
}

void
mount_stats_getattr(fuse_req_t req)
{
	struct stat st;

	mount_stats_attr(&st);
	fuse_reply_attr(req, &st, MOUNT_TIMEOUT);
}

static double
ratio(double a, double b)
{
	return b > 0 ? a / b : 0.0;
}

static void
print_side(FILE *fp, const char *name, const char *side,
	   const struct clio_iostat *s, double elapsed)
{
	uint64_t xfers = s->reads + s->writes;
	uint64_t bytes = s->read_bytes + s->write_bytes;

	fprintf(fp, "%s %s_reads: %llu\n", name, side, (unsigned long long)s->reads);
	fprintf(fp, "%s %s_writes: %llu\n", name, side, (unsigned long long)s->writes);
	fprintf(fp, "%s %s_read_bytes: %llu\n", name, side,
		(unsigned long long)s->read_bytes);
	fprintf(fp, "%s %s_write_bytes: %llu\n", name, side,
		(unsigned long long)s->write_bytes);
	fprintf(fp, "%s %s_flushes: %llu\n", name, side, (unsigned long long)s->flushes);
	fprintf(fp, "%s %s_kbt: %.2f\n", name, side,
		ratio((double)bytes / 1024.0, (double)xfers));
	fprintf(fp, "%s %s_mbs: %.2f\n", name, side,
		ratio((double)bytes / 1048576.0, elapsed));
	fprintf(fp, "%s %s_busy_s: %.3f\n", name, side, s->busy_s);
	fprintf(fp, "%s %s_read_time_s: %.6f\n", name, side, s->read_time_s);
	fprintf(fp, "%s %s_write_time_s: %.6f\n", name, side, s->write_time_s);
}

struct visit {
	FILE *fp;
	double elapsed;
	unsigned ndev, nidle;
	struct clio_dev_stats open;	/* the open and idle devices' sums */
};

/* A value on one line. */
static void
print_value(FILE *fp, const char *s)
{
	for (; *s != '\0'; s++)
		fputc(*s == '\n' ? '?' : *s, fp);
	fputc('\n', fp);
}

static void
print_dev(void *arg, const char *rawname, const char *shown, clio_dev *d)
{
	struct visit *v = arg;
	struct clio_dev_stats ds;
	char name[256];
	size_t i;

	if (rawname == NULL) {
		/* idle: in the totals, not among the files */
		clio_dev_stats(d, &ds);
		iostat_add(&v->open.front, &ds.front);
		iostat_add(&v->open.back, &ds.back);
		v->nidle++;
		return;
	}
	/* one word: the key is what follows the first space */
	snprintf(name, sizeof(name), "%s", rawname[0] ? rawname : "?");
	for (i = 0; name[i] != '\0'; i++)
		if ((unsigned char)name[i] <= ' ' || name[i] == ':')
			name[i] = '_';
	clio_dev_stats(d, &ds);
	iostat_add(&v->open.front, &ds.front);
	iostat_add(&v->open.back, &ds.back);
	fprintf(v->fp, "%s path: ", name);
	print_value(v->fp, rawname);
	fprintf(v->fp, "%s device: ", name);
	print_value(v->fp, shown);
	print_side(v->fp, name, "front", &ds.front, v->elapsed);
	print_side(v->fp, name, "back", &ds.back, v->elapsed);
	fprintf(v->fp, "%s clustering: %.2f\n", name,
		ratio((double)(ds.front.reads + ds.front.writes),
		      (double)(ds.back.reads + ds.back.writes)));
	print_disk_cache(v->fp, name, d);
	v->ndev++;
}

/* The disk tier's lines of a device (disk_cache=DIR): "NAME
 * disk_cache.KEY: VALUE", from its parameters. */
static void
print_disk_cache(FILE *fp, const char *name, clio_dev *d)
{
	int n = clio_dev_params(d, NULL, 0);
	char *p, *l, *e;

	if (n <= 0 || (p = malloc((size_t)n + 1)) == NULL)
		return;
	if (clio_dev_params(d, p, (size_t)n + 1) == n)
		for (l = p; *l != '\0'; l = e + 1) {
			char *eq = strchr(l, '=');
			if ((e = strchr(l, '\n')) == NULL)
				break;
			if (strncmp(l, "disk_cache.", 11) == 0 && eq != NULL && eq < e)
				fprintf(fp, "%s %.*s: %.*s\n", name, (int)(eq - l), l,
					(int)(e - eq - 1), eq + 1);
		}
	free(p);
}

static void
print_total(FILE *fp, const char *side, const struct clio_iostat *a,
	    const struct clio_iostat *b)
{
	fprintf(fp, "total_%s_reads: %llu\n", side,
		(unsigned long long)(a->reads + b->reads));
	fprintf(fp, "total_%s_writes: %llu\n", side,
		(unsigned long long)(a->writes + b->writes));
	fprintf(fp, "total_%s_read_bytes: %llu\n", side,
		(unsigned long long)(a->read_bytes + b->read_bytes));
	fprintf(fp, "total_%s_write_bytes: %llu\n", side,
		(unsigned long long)(a->write_bytes + b->write_bytes));
	fprintf(fp, "total_%s_flushes: %llu\n", side,
		(unsigned long long)(a->flushes + b->flushes));
	fprintf(fp, "total_%s_errors: %llu\n", side,
		(unsigned long long)(a->errors + b->errors));
	fprintf(fp, "total_%s_busy_s: %.6f\n", side, a->busy_s + b->busy_s);
	fprintf(fp, "total_%s_read_time_s: %.6f\n", side,
		a->read_time_s + b->read_time_s);
	fprintf(fp, "total_%s_write_time_s: %.6f\n", side,
		a->write_time_s + b->write_time_s);
}

static void
print_requests(FILE *fp)
{
	struct mount_io_totals io;

	mount_io_get(&io);
	fprintf(fp, "requests_reads: %llu\n", (unsigned long long)io.reads);
	fprintf(fp, "requests_writes: %llu\n", (unsigned long long)io.writes);
	fprintf(fp, "requests_read_bytes: %llu\n", (unsigned long long)io.read_bytes);
	fprintf(fp, "requests_write_bytes: %llu\n", (unsigned long long)io.write_bytes);
	fprintf(fp, "requests_read_time_s: %.6f\n", io.read_s);
	fprintf(fp, "requests_write_time_s: %.6f\n", io.write_s);
	fprintf(fp, "requests_busy_s: %.6f\n", io.busy_s);
	fprintf(fp, "requests_queue_s: %.6f\n", io.queue_s);
}

/* The devices' text into a memory stream: their blocks, and their sums
 * in v->open. */
static char *
devices_text(struct visit *v, size_t *len)
{
	char *buf = NULL;

	v->fp = open_memstream(&buf, len);
	if (v->fp == NULL)
		return NULL;
	memset(&v->open, 0, sizeof(v->open));
	v->ndev = v->nidle = 0;
	if (st_foreach != NULL)
		st_foreach(print_dev, v);
	if (fclose(v->fp) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static struct snapshot *
snapshot_build(void)
{
	struct clio_cache_stats cs;
	struct clio_dev_stats gone;
	struct snapshot *s;
	struct visit v;
	char *buf = NULL, *devs = NULL;
	size_t len = 0, devlen = 0;
	uint64_t lookups, seq, ngone = 0;
	FILE *fp;
	bool stable;
	int tries;

	v.elapsed = now_monotonic() - st_start;
	/* the open devices, then the closed ones, unless one closed between
	 * (after a few tries, a device may show in both) */
	for (tries = 0, stable = false; tries < 8 && !stable; tries++) {
		pthread_mutex_lock(&retire_lock);
		seq = retire_seq;
		pthread_mutex_unlock(&retire_lock);
		free(devs);
		if ((devs = devices_text(&v, &devlen)) == NULL)
			return NULL;
		pthread_mutex_lock(&retire_lock);
		gone = retired;
		ngone = retired_devs;
		stable = retire_seq == seq;
		pthread_mutex_unlock(&retire_lock);
	}
	fp = open_memstream(&buf, &len);
	if (fp == NULL) {
		free(devs);
		return NULL;
	}
	clio_cache_stats(st_cache, &cs);
	lookups = cs.hits + cs.misses;
	fprintf(fp, "mountpoint: ");
	print_value(fp, st_mountpoint != NULL ? st_mountpoint : "");
	fprintf(fp, "source: ");
	print_value(fp, st_source != NULL ? st_source : "");
	fprintf(fp, "uptime_s: %.3f\n", v.elapsed);
	fprintf(fp, "hits: %llu\n", (unsigned long long)cs.hits);
	fprintf(fp, "misses: %llu\n", (unsigned long long)cs.misses);
	fprintf(fp, "hit_rate_pct: %.2f\n", ratio(100.0 * (double)cs.hits, (double)lookups));
	fprintf(fp, "readahead_blocks: %llu\n", (unsigned long long)cs.readahead_blocks);
	fprintf(fp, "readahead_used: %llu\n", (unsigned long long)cs.readahead_used);
	fprintf(fp, "readahead_wasted: %llu\n",
		(unsigned long long)(cs.readahead_blocks >= cs.readahead_used ?
				     cs.readahead_blocks - cs.readahead_used : 0));
	fprintf(fp, "read_clusters: %llu\n", (unsigned long long)cs.read_clusters);
	fprintf(fp, "write_clusters: %llu\n", (unsigned long long)cs.write_clusters);
	fprintf(fp, "rbw_reads: %llu\n", (unsigned long long)cs.rbw_reads);
	fprintf(fp, "kernel_readahead_kicks: %llu\n",
		(unsigned long long)atomic_load(&mount_ahead_kicks));
	fprintf(fp, "evictions: %llu\n", (unsigned long long)cs.evictions);
	fprintf(fp, "throttles: %llu\n", (unsigned long long)cs.throttles);
	fprintf(fp, "flushes_behind: %llu\n", (unsigned long long)cs.flushes_behind);
	fprintf(fp, "write_errors: %llu\n", (unsigned long long)cs.write_errors);
	fprintf(fp, "lost_bytes: %llu\n", (unsigned long long)cs.lost_bytes);
	fprintf(fp, "dirty_bytes: %llu\n", (unsigned long long)cs.dirty_bytes);
	fprintf(fp, "cached_bytes: %llu\n", (unsigned long long)cs.cached_bytes);
	print_requests(fp);
	print_total(fp, "front", &gone.front, &v.open.front);
	print_total(fp, "back", &gone.back, &v.open.back);
	fprintf(fp, "devices_closed: %llu\n", (unsigned long long)ngone);
	fprintf(fp, "devices_idle: %u\n", v.nidle);
	fwrite(devs, 1, devlen, fp);
	free(devs);
	fprintf(fp, "devices: %u\n", v.ndev);
	if (fclose(fp) != 0) {
		free(buf);
		return NULL;
	}
	s = malloc(sizeof(*s) + len + 1);
	if (s != NULL) {
		atomic_init(&s->refs, 1);
		s->len = len;
		memcpy(s->text, buf, len + 1);
	}
	free(buf);
	return s;
}

void
mount_stats_open(fuse_req_t req, struct fuse_file_info *fi)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct snapshot *s;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC) ||
	    (ctx->uid != 0 && ctx->uid != getuid())) {
		fuse_reply_err(req, EACCES);
		return;
	}
	s = snapshot_build();
	if (s == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)s;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->nonseekable = 0;
	if (fuse_reply_open(req, fi) != 0)
		free(s); /* the open was interrupted: no release will come */
}

void
mount_stats_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct snapshot *s = (struct snapshot *)(uintptr_t)fi->fh;

	atomic_fetch_add(&s->refs, 1);
	if (off < 0 || (size_t)off >= s->len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, s->text + off,
			       size < s->len - (size_t)off ? size : s->len - (size_t)off);
	snapshot_put(s);
}

void
mount_stats_release(fuse_req_t req, struct fuse_file_info *fi)
{
	snapshot_put((struct snapshot *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}
