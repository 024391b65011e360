/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mountstats.c - the control file `.clio-stats` in the root of every
 * `clio mount` (device mode and pass-through mode).
 *
 * The file is read-only (mode 0444, size 0).  Each open builds a text
 * snapshot of the cache's statistics and of every open device's, kept
 * with the open, so every read of one open sees the same numbers; the
 * open is reported with direct_io, so the kernel reads until the end of
 * the snapshot whatever the size says.  Lines are "key: value"; device
 * lines start with the device's name and a space ("disk back_reads: 12").
 * The name is not listed by readdir; lookup finds it.  In pass-through
 * mode it hides a real object of that name in the source's root (which
 * can be neither opened nor changed through the mount).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mount.h"

struct snapshot {
	size_t len;
	char text[];
};

static char stats_anchor; /* its address is the node id */
static clio_cache *st_cache;
static mount_stats_foreach_fn st_foreach;
static double st_start;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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

void
mount_stats_init(clio_cache *cache, mount_stats_foreach_fn foreach)
{
	st_cache = cache;
	st_foreach = foreach;
	st_start = now_s();
}

void
mount_stats_attr(struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = mount_stats_ino();
	st->st_mode = S_IFREG | 0444;
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
}

struct visit {
	FILE *fp;
	double elapsed;
	unsigned ndev;
};

static void
print_dev(void *arg, const char *rawname, clio_dev *d)
{
	struct visit *v = arg;
	struct clio_dev_stats ds;
	char name[256];
	size_t i;

	/* one word: the key is what follows the first space */
	snprintf(name, sizeof(name), "%s", rawname[0] ? rawname : "?");
	for (i = 0; name[i] != '\0'; i++)
		if ((unsigned char)name[i] <= ' ' || name[i] == ':')
			name[i] = '_';
	clio_dev_stats(d, &ds);
	fprintf(v->fp, "%s device: %s\n", name, clio_dev_name(d));
	print_side(v->fp, name, "front", &ds.front, v->elapsed);
	print_side(v->fp, name, "back", &ds.back, v->elapsed);
	fprintf(v->fp, "%s clustering: %.2f\n", name,
		ratio((double)(ds.front.reads + ds.front.writes),
		      (double)(ds.back.reads + ds.back.writes)));
	v->ndev++;
}

static struct snapshot *
snapshot_build(void)
{
	struct clio_cache_stats cs;
	struct snapshot *s;
	struct visit v;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	uint64_t lookups;

	if (fp == NULL)
		return NULL;
	clio_cache_stats(st_cache, &cs);
	lookups = cs.hits + cs.misses;
	v.fp = fp;
	v.elapsed = now_s() - st_start;
	v.ndev = 0;
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
	if (st_foreach != NULL)
		st_foreach(print_dev, &v);
	fprintf(fp, "devices: %u\n", v.ndev);
	if (fclose(fp) != 0) {
		free(buf);
		return NULL;
	}
	s = malloc(sizeof(*s) + len + 1);
	if (s != NULL) {
		s->len = len;
		memcpy(s->text, buf, len + 1);
	}
	free(buf);
	return s;
}

void
mount_stats_open(fuse_req_t req, struct fuse_file_info *fi)
{
	struct snapshot *s;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
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

	if (off < 0 || (size_t)off >= s->len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, s->text + off,
			       size < s->len - (size_t)off ? size : s->len - (size_t)off);
}

void
mount_stats_release(fuse_req_t req, struct fuse_file_info *fi)
{
	free((struct snapshot *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}
