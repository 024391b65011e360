/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mount.c - `clio mount [-f] [-d] [-o OPTS] SOURCE MOUNTPOINT` and
 * `clio umount MOUNTPOINT`: a FUSE file system (libfuse 3, low-level API,
 * multi-threaded loop) with one clio cache between every program and the
 * storage.
 *
 * SOURCE is a directory (a pass-through file system, mountfs.c) or a
 * device string or image file (the mount shows one regular file, `disk`,
 * of the device's size, read and written through one clio handle).
 *
 * Options (-o, comma-separated, may repeat): every clio tunable
 * clio_conf_set() knows (bsize=64k, cache_size=256M, maxphys=1M, ...),
 * and ro, rw, allow_other, xattr (extended attributes; off by default:
 * with them the kernel asks for security.capability before every
 * write(2)), max_read=N, max_write=N, max_pages=N (max_write in pages),
 * readahead=N,
 * cache=on|off (off: a plain pass-through of a directory, no clio cache;
 * see mountfs.c), kernel_cache=on|off (on, the default: opens keep the
 * kernel's page cache and the kernel's writeback cache is asked for) and
 * prefault=on|off (on, the default: the cache's memory is made present
 * before the mount is ready, clio_cache_prefault, unless it is more than
 * the memory available).
 * max_write defaults to maxphys and max_read to max_write, both capped at
 * 1 MiB (the kernel's 256 pages; max_pages follows max_write).  The
 * kernel's read-ahead for the mount (its bdi's read_ahead_kb, which FUSE
 * otherwise leaves at 128 KiB) is set to readahead, by default 4 times
 * max_read, where /sys allows it (root).  The mount's flush_behind
 * defaults to 64 MiB (the library's to 0): a device flush in the
 * background after each 64 MiB written back, so that fsync(2), which
 * must wait for the device to make everything durable, finds little
 * left (on a virtio disk the flush costs about 0.5 ms per MiB written
 * since the last one).  default_permissions is always
 * on.  Anything else is a one-line error and exit 64 (EX_USAGE), before
 * anything is mounted.
 *
 * Order of work: parse and check everything (a mount point that holds a
 * clio mount already is refused, exit 73); mount on the absolute mount
 * point (the daemon's own unmount must not depend on its directory);
 * without -f, fork (mountdaemon.c, before any thread exists: the cache
 * and the devices start threads; the command exits once the daemon
 * serves, or with its status); create the cache and open the source (a
 * relative device path from the caller's directory); run the loop, each
 * object made with the caller's identity (mountcreds.c).  At SIGTERM,
 * SIGINT or SIGHUP the files programs hold open for writing are first
 * fsync'ed through the mount, so that the kernel's dirty pages of them
 * reach clio (stop_thread).  When the loop ends (a signal, or an
 * unmount), everything dirty is written back (clio_sync, then every handle and device is closed) and the
 * mount is removed; a write-back error makes the exit status 74.
 * The kernel's page cache and writeback cache: see mountfs.c; `disk`
 * follows the same rules, and both use mountahead.c (read-ahead for
 * writers under the writeback cache).
 *
 * Statistics: the root of either kind holds the read-only control file
 * `.clio-stats` (mountstats.c); `clio stat MOUNTPOINT` prints it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"
#include "util.h"
#include "mount.h"

#define ERRLEN 1024
#define KERNEL_MAX_IO (1u << 20) /* FUSE_MAX_MAX_PAGES (256) pages */
#define DISK_INO 2
#define MOUNT_FLUSH_BEHIND (64u << 20)
#define DISK_NAME "disk"

struct fuse_session *mount_session;

static struct mount_opts opts;
static bool dir_source;		/* SOURCE is a directory (mountfs.c) */
static char mnt_abs[4096];	/* the mount point, absolute */
static char src_shown[4096];	/* the source: a directory's absolute path, or as given */

/* ---------------------------------------------------- device mode: disk */

static clio_dev *disk_dev;
static clio_file *disk_cf;
static atomic_bool disk_wrote;
static struct mount_ahead disk_ahead;
static atomic_int disk_users;		/* opens of disk by programs */
static const char *disk_source;		/* the device string as given */

static void
disk_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		int64_t sz = clio_fsize(disk_cf);
		st->st_mode = S_IFREG | (opts.ro ? 0444 : 0644);
		st->st_nlink = 1;
		st->st_size = sz < 0 ? 0 : (off_t)sz;
		st->st_blocks = (blkcnt_t)((st->st_size + 511) / 512);
		st->st_blksize = (blksize_t)opts.conf.bsize;
	}
}

static void
disk_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (mount_stats_name(parent, name)) {
		mount_stats_lookup(req);
		return;
	}
	if (parent != FUSE_ROOT_ID || strcmp(name, DISK_NAME) != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = DISK_INO;
	e.attr_timeout = e.entry_timeout = MOUNT_TIMEOUT;
	disk_stat(DISK_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void
disk_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino == mount_stats_ino()) {
		mount_stats_getattr(req);
		return;
	}
	disk_stat(ino, &st);
	fuse_reply_attr(req, &st, MOUNT_TIMEOUT);
}

static void
disk_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
	     struct fuse_file_info *fi)
{
	struct stat st;
	int r = 0;

	(void)fi;
	if (ino != DISK_INO || (valid & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
					 FUSE_SET_ATTR_GID)))
		r = -EPERM;
	else if (valid & FUSE_SET_ATTR_SIZE) {
		int64_t sz = clio_fsize(disk_cf);
		if (opts.ro)
			r = -EROFS;
		else if (sz != attr->st_size)
			r = clio_ftruncate(disk_cf, (uint64_t)attr->st_size);
	}
	/* times: ignored, the file has no place to keep them */
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	disk_stat(ino, &st);
	fuse_reply_attr(req, &st, MOUNT_TIMEOUT);
}

static void
disk_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi)
{
	static const char *names[] = { ".", "..", DISK_NAME };
	char *buf = malloc(size), *p;
	size_t left = size;
	off_t i;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		free(buf);
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	p = buf;
	for (i = off; i < 3; i++) {
		struct stat st;
		size_t len;
		memset(&st, 0, sizeof(st));
		st.st_ino = i == 2 ? DISK_INO : FUSE_ROOT_ID;
		st.st_mode = i == 2 ? S_IFREG : S_IFDIR;
		len = fuse_add_direntry(req, p, left, names[i], &st, i + 1);
		if (len > left)
			break;
		p += len;
		left -= len;
	}
	fuse_reply_buf(req, buf, size - left);
	free(buf);
}

static void
disk_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == mount_stats_ino()) {
		mount_stats_open(req, fi);
		return;
	}
	if (ino != DISK_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (opts.ro && ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))) {
		fuse_reply_err(req, EROFS);
		return;
	}
	/* atomic_o_trunc: the kernel takes the size to be 0 after the
	 * open, so O_TRUNC is the truncation setattr does (a device that
	 * cannot resize refuses the open) */
	if ((fi->flags & O_TRUNC) && clio_fsize(disk_cf) != 0) {
		int r = clio_ftruncate(disk_cf, 0);
		if (r < 0) {
			fuse_reply_err(req, -r);
			return;
		}
	}
	fi->direct_io = 0;
	fi->keep_cache = opts.kernel_cache;
	/* fh: 1 for the kick thread's own open (mountahead.c) */
	fi->fh = mount_ahead_self(fuse_req_ctx(req)->pid);
	if (fi->fh == 0)
		atomic_fetch_add(&disk_users, 1);
	fuse_reply_open(req, fi);
}

/* A READ reply from the cache: one run that covers the whole request goes
 * to the kernel straight from the cache's buffers; otherwise the runs are
 * gathered in a reply buffer, the thread's own, kept from one request to
 * the next (a new one of max_read bytes at each would cost its page
 * faults every time: thousands in a rewrite of 256 MiB). */
static pthread_key_t reply_key;
static pthread_once_t reply_once = PTHREAD_ONCE_INIT;

struct reply_buf {
	size_t cap;
	char data[];
};

static void
reply_key_make(void)
{
	(void)pthread_key_create(&reply_key, free);
}

/* This thread's reply buffer of at least size bytes, or NULL. */
static char *
reply_buf(size_t size)
{
	struct reply_buf *b;

	pthread_once(&reply_once, reply_key_make);
	b = pthread_getspecific(reply_key);
	if (b == NULL || b->cap < size) {
		free(b);
		b = malloc(sizeof(*b) + (size ? size : 1));
		if (b != NULL)
			b->cap = size;
		pthread_setspecific(reply_key, b);
	}
	return b != NULL ? b->data : NULL;
}

struct read_reply {
	fuse_req_t req;
	size_t size;
	char *buf;
	size_t have;
	bool replied;
};

static int
read_reply_view(void *arg, const struct iovec *iov, int iovcnt, int last)
{
	struct read_reply *rr = arg;
	int i;

	if (last && rr->buf == NULL) {
		fuse_reply_iov(rr->req, iov, iovcnt);
		rr->replied = true;
		return 0;
	}
	if (rr->buf == NULL && (rr->buf = reply_buf(rr->size)) == NULL)
		return -ENOMEM;
	for (i = 0; i < iovcnt; i++) {
		memcpy(rr->buf + rr->have, iov[i].iov_base, iov[i].iov_len);
		rr->have += iov[i].iov_len;
	}
	if (last) {
		fuse_reply_buf(rr->req, rr->buf, rr->have);
		rr->replied = true;
	}
	return 0;
}

size_t
mount_reply_read(fuse_req_t req, clio_file *cf, int fd, size_t size, off_t off)
{
	struct read_reply rr = { .req = req, .size = size };
	ssize_t r;

	if (cf != NULL) {
		r = clio_pread_view(cf, size, (uint64_t)off, read_reply_view, &rr);
		if (!rr.replied) {
			fuse_reply_err(req, r < 0 ? (int)-r : EIO);
			return 0;
		}
		return r > 0 ? (size_t)r : 0;
	}
	if ((rr.buf = reply_buf(size)) == NULL) {
		fuse_reply_err(req, ENOMEM);
		return 0;
	}
	r = pread(fd, rr.buf, size, off);
	if (r < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_buf(req, rr.buf, (size_t)r);
	return r > 0 ? (size_t)r : 0;
}

static int
disk_path(void *arg, char *buf, size_t len)
{
	(void)arg;
	return snprintf(buf, len, "%s", DISK_NAME) < (int)len ? 0 : -ENAMETOOLONG;
}

static void
disk_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	  struct fuse_file_info *fi)
{
	if (ino == mount_stats_ino()) {
		mount_stats_read(req, size, off, fi);
	} else {
		double t0 = mount_io_begin();
		if (fi->fh == 0) /* a program's open, not the helper's */
			mount_ahead_read(&disk_ahead, (uint64_t)off, size, disk_path,
					 NULL, NULL, NULL);
		mount_io_end(false, mount_reply_read(req, disk_cf, -1, size, off), t0);
	}
}

static void
disk_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	   off_t off, struct fuse_file_info *fi)
{
	ssize_t r;
	double t0;

	(void)fi;
	if (ino != DISK_INO) {
		fuse_reply_err(req, EBADF);
		return;
	}
	t0 = mount_io_begin();
	mount_ahead_write(&disk_ahead, (uint64_t)off, size, disk_path, NULL,
			  NULL, NULL);
	r = clio_pwrite(disk_cf, buf, size, (uint64_t)off);
	if (r < 0) {
		fuse_reply_err(req, (int)-r);
		mount_io_end(true, 0, t0);
		return;
	}
	atomic_store(&disk_wrote, true);
	fuse_reply_write(req, (size_t)r);
	mount_io_end(true, (size_t)r, t0);
}

/* Each close(2) after writes writes back, so close reports errors. */
static void
disk_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int r = 0;

	(void)fi;
	if (ino == DISK_INO && atomic_exchange(&disk_wrote, false))
		r = clio_fsync(disk_cf);
	fuse_reply_err(req, -r);
}

static void
disk_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, ino == DISK_INO ? -clio_fsync(disk_cf) : 0);
}

static void
disk_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == mount_stats_ino()) {
		mount_stats_release(req, fi);
		return;
	}
	if (ino == DISK_INO && fi->fh == 0 && atomic_fetch_sub(&disk_users, 1) == 1)
		mount_ahead_idle(&disk_ahead, NULL, NULL, NULL);
	fuse_reply_err(req, 0);
}

static void
disk_foreach(mount_stats_visit_fn fn, void *arg)
{
	if (disk_dev != NULL)
		fn(arg, DISK_NAME, disk_source, disk_dev);
}

static const struct fuse_lowlevel_ops disk_ops = {
	.lookup = disk_lookup,
	.getattr = disk_getattr,
	.setattr = disk_setattr,
	.readdir = disk_readdir,
	.open = disk_open,
	.read = disk_read,
	.write = disk_write,
	.flush = disk_flush,
	.fsync = disk_fsync,
	.release = disk_release,
};

/* ------------------------------------------------------------ options */

static void
usage_mount(FILE *fp)
{
	fprintf(fp,
		"usage: clio mount [-f] [-d] [-o OPTS] SOURCE MOUNTPOINT\n"
		"       clio umount MOUNTPOINT\n"
		"       clio stat MOUNTPOINT\n"
		"SOURCE is a directory (pass-through) or a device: file:PATH[?direct=1],\n"
		"an image file, mem:size=N, sim:preset=NAME[,...], fault:OPTS@DEV.\n"
		"OPTS: clio tunables (bsize=N, maxbsize=N, maxphys=N, cache_size=N,\n"
		"cluster=on|lite|off, rbw=..., read_max=N, flush_behind=N (default 64M\n"
		"here), ...), ro, rw, allow_other,\n"
		"xattr, max_read=N, max_write=N, max_pages=N, readahead=N, cache=on|off (off:\n"
		"directory only, no clio cache), kernel_cache=on|off (the kernel's\n"
		"writeback cache and cached attributes; default on), idle_devices=N\n"
		"(devices kept for the next open of a closed file; default 4096),\n"
		"prefault=on|off (the cache's memory made resident at mount; default on).\n"
		"SOURCE nfs://HOST/EXPORT[?port=N&mountport=N&uid=N&gid=N]: an NFSv3 export;\n"
		"OPTS there also: actimeo=S, acregmin=S, acregmax=S, acdirmin=S, acdirmax=S,\n"
		"noac, nocto, cto, lease (this mount is the export's only writer).\n"
		"See clio(1).\n");
}

static int
parse_one_opt(char *o)
{
	char *v = strchr(o, '=');
	char err[ERRLEN];
	uint64_t n;

	if (v != NULL)
		*v++ = '\0';
	if (v == NULL && strcmp(o, "ro") == 0)
		opts.ro = 1;
	else if (v == NULL && strcmp(o, "rw") == 0)
		opts.ro = 0;
	else if (v == NULL && strcmp(o, "allow_other") == 0)
		opts.allow_other = 1;
	else if (v == NULL && strcmp(o, "xattr") == 0)
		opts.xattr = 1;
	else if (v == NULL && strcmp(o, "noxattr") == 0)
		opts.xattr = 0;
	else if (v == NULL && strcmp(o, "default_permissions") == 0)
		; /* always on */
	else if (v != NULL && (strcmp(o, "cache") == 0 || strcmp(o, "kernel_cache") == 0 ||
			       strcmp(o, "prefault") == 0)) {
		int on = strcmp(v, "on") == 0;
		if (!on && strcmp(v, "off") != 0) {
			fprintf(stderr, "clio mount: bad %s '%s' (on or off)\n", o, v);
			return -1;
		}
		if (o[0] == 'c')
			opts.cache_off = !on;
		else if (o[0] == 'p')
			opts.prefault = on;
		else
			opts.kernel_cache = on;
	} else if (v != NULL && (strcmp(o, "max_read") == 0 || strcmp(o, "max_write") == 0)) {
		if (parse_size(v, &n) < 0 || n < 4096 || n > KERNEL_MAX_IO) {
			fprintf(stderr, "clio mount: bad %s '%s' (4K to 1M)\n", o, v);
			return -1;
		}
		if (o[4] == 'r')
			opts.max_read = (unsigned)n;
		else
			opts.max_write = (unsigned)n;
	} else if (v != NULL && strcmp(o, "max_pages") == 0) {
		/* libfuse derives max_pages from max_write */
		if (parse_size(v, &n) < 0 || n < 1 || n > KERNEL_MAX_IO / 4096) {
			fprintf(stderr, "clio mount: bad max_pages '%s' (1 to %u)\n", v,
				KERNEL_MAX_IO / 4096);
			return -1;
		}
		opts.max_write = (unsigned)n * 4096;
	} else if (v != NULL && strcmp(o, "readahead") == 0) {
		if (parse_size(v, &n) < 0 || n > (64u << 20) || n % 4096 != 0) {
			fprintf(stderr, "clio mount: bad readahead '%s' (0 to 64M, "
				"a multiple of 4K)\n", v);
			return -1;
		}
		opts.readahead = n == 0 ? 1 : (unsigned)n; /* 1: the kernel's */
	} else if (v != NULL && strcmp(o, "idle_devices") == 0) {
		if (parse_uint(v, &n) < 0 || n > MOUNT_IDLE_LIMIT) {
			fprintf(stderr, "clio mount: bad idle_devices '%s' (0 to %u)\n", v,
				MOUNT_IDLE_LIMIT);
			return -1;
		}
		opts.idle_devices = (unsigned)n;
		opts.idle_set = 1;
	} else if (v == NULL && (strcmp(o, "lease") == 0 || strcmp(o, "nocto") == 0 ||
				 strcmp(o, "cto") == 0 || strcmp(o, "noac") == 0)) {
		if (o[0] == 'l')
			opts.nfs.lease = 1;
		else if (o[1] == 'o' && o[2] == 'c')
			opts.nfs.cto = 0;
		else if (o[0] == 'c')
			opts.nfs.cto = 1;
		else
			opts.nfs.acregmin = opts.nfs.acregmax = opts.nfs.acdirmin =
				opts.nfs.acdirmax = 0;
	} else if (v != NULL && (strcmp(o, "actimeo") == 0 || strncmp(o, "acreg", 5) == 0 ||
				 strncmp(o, "acdir", 5) == 0)) {
		double *t = strcmp(o, "acregmin") == 0 ? &opts.nfs.acregmin
			: strcmp(o, "acregmax") == 0 ? &opts.nfs.acregmax
			: strcmp(o, "acdirmin") == 0 ? &opts.nfs.acdirmin
			: strcmp(o, "acdirmax") == 0 ? &opts.nfs.acdirmax : NULL;
		if ((t == NULL && strcmp(o, "actimeo") != 0) ||
		    parse_uint(v, &n) < 0 || n > 86400) {
			fprintf(stderr, "clio mount: bad %s '%s' (0 to 86400 s)\n", o, v);
			return -1;
		}
		if (t != NULL)
			*t = (double)n;
		else
			opts.nfs.acregmin = opts.nfs.acregmax = opts.nfs.acdirmin =
				opts.nfs.acdirmax = (double)n;
	} else if (v == NULL) {
		fprintf(stderr, "clio mount: unknown option '%s'\n", o);
		return -1;
	} else if (clio_conf_set(&opts.conf, o, v, err, sizeof(err)) < 0) {
		fprintf(stderr, "clio mount: %s\n", err);
		return -1;
	}
	return 0;
}

static int
parse_opts(const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *o;
	int r = 0;

	if (copy == NULL)
		return -1;
	for (o = strtok_r(copy, ",", &save); o != NULL && r == 0;
	     o = strtok_r(NULL, ",", &save))
		r = parse_one_opt(o);
	free(copy);
	return r;
}

/* Append s to the option string, escaping ',' and '\' for libfuse. */
static void
opt_escape(char *out, size_t len, const char *s)
{
	size_t k = strlen(out);

	for (; *s != '\0' && k + 3 < len; s++) {
		if (*s == ',' || *s == '\\')
			out[k++] = '\\';
		out[k++] = *s;
	}
	out[k] = '\0';
}

/* ---------------------------------------------------------------- run */

/*
 * Set the read-ahead of the mount's bdi (/sys/class/bdi/MAJ:MIN, the
 * mount's st_dev, found in /proc/self/mountinfo without touching the
 * mount).  Done from init: the kernel applies min(bdi, max_readahead)
 * when it reads the reply.  Best effort: only root may write there.
 */
static void
set_bdi_readahead(unsigned bytes)
{
	struct mounttab_entry e;
	char path[96];
	FILE *fp;

	if (mounttab_find(mnt_abs, &e) < 0)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", e.majmin);
	fp = fopen(path, "we");
	if (fp == NULL)
		return;
	fprintf(fp, "%u\n", bytes / 1024);
	fclose(fp);
}

static void
mount_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = opts.max_write;
	conn->max_read = opts.max_read;
	conn->max_readahead = opts.readahead > 1 ? opts.readahead : opts.max_read;
	if (opts.readahead > 1)
		set_bdi_readahead(opts.readahead);
	/* libfuse asks for auto_inval_data by default: the kernel then
	 * asks for the attributes before every read(2) and drops all the
	 * file's pages when mtime moved, as another program's write(2)
	 * does; a page dropped while a write(2) of it is on its way here
	 * is read back old and kept (kernel_cache=off has no writeback
	 * cache).  Other sources are close-to-open (keep_cache). */
	if (opts.nfs_source && (conn->capable & FUSE_CAP_AUTO_INVAL_DATA))
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA; /* mountnfs.c */
	else
		conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
	if (opts.kernel_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	if (dir_source) {
		/* the source's umask and ACLs decide as on a local file
		 * system (mountcreds.c); the kernel reads the ACLs only
		 * with xattr on */
		if (conn->capable & FUSE_CAP_DONT_MASK)
			conn->want |= FUSE_CAP_DONT_MASK;
		if (opts.xattr && (conn->capable & FUSE_CAP_POSIX_ACL))
			conn->want |= FUSE_CAP_POSIX_ACL;
		mount_creds_conn((conn->want & FUSE_CAP_POSIX_ACL) != 0,
				 (conn->want & FUSE_CAP_DONT_MASK) != 0);
	}
}

/* ------------------------------------------------ the end at a signal */

/*
 * SIGTERM, SIGINT, SIGHUP and SIGQUIT, and SIGUSR1, SIGUSR2 and SIGALRM
 * (each an end, as for clio serve, not a death or a core dump that loses
 * the dirty buffers): the kernel's dirty pages (its writeback cache, of
 * files still open) reach this daemon only while the loop
 * serves, so the signal does not end the loop at once.  Its handler
 * writes the signal to a pipe; a thread reading it opens each file that
 * programs hold open for writing (mountfs_writers, by its path, or by a
 * program's descriptor of it once the name it was opened by is gone;
 * a device's disk) through the mount and fsyncs it: the kernel writes that file's pages
 * back and waits for them, served by the loop (syncfs does not wait for
 * a FUSE file system's pages).  Then it ends the loop: the session's end,
 * the signal again to the loop's thread (out of its wait), and one last
 * request (a statfs of the mount's root) after which a worker sees the
 * end.  The close of the pipe's write end (the loop ended otherwise)
 * ends the thread.
 */
static int stop_pipe[2] = {-1, -1};
static pthread_t stop_tid;
static bool stop_started;
static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;
static bool stop_loop_over;	/* under stop_lock: the session may be gone */
static pthread_t stop_main;	/* the thread that runs the loop */
static bool stop_nfs;		/* an nfs:// source (mountnfs.c) */

static void
stop_handler(int sig)
{
	unsigned char c = (unsigned char)sig;
	int e = errno;

	if (write(stop_pipe[1], &c, 1) < 0) {
		/* a full pipe holds a signal already */
	}
	errno = e;
}

/* fsync rel (under the mount point, whose root is rootfd: a path from
 * it may be as long as the source's) through the mount; an absolute rel
 * is a program's descriptor (/proc/PID/fd/N, mountfs_writers), used only
 * if it is a regular file of the mount (root_dev: the mount's device). */
static void
stop_fsync(int rootfd, const char *rel, dev_t root_dev)
{
	struct stat st;
	int fd;

	if (rel[0] == '/') {
		/* a magic link: followed, as O_NOFOLLOW would refuse it */
		if (stat(rel, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != root_dev)
			return;
		fd = open(rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != root_dev)) {
			close(fd);
			return;
		}
	} else {
		fd = openat(rootfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	}
	if (fd < 0)
		return;
	if (fsync(fd) < 0)
		fprintf(stderr, "clio mount: %s%s%s: fsync at the signal: %s\n",
			rel[0] == '/' ? "" : mnt_abs, rel[0] == '/' ? "" : "/", rel,
			strerror(errno));
	close(fd);
}

static void *
stop_thread(void *arg)
{
	struct fuse_session *se = arg;
	struct statvfs sv;
	unsigned char c;
	ssize_t n;
	int fd;

	while ((n = read(stop_pipe[0], &c, 1)) < 0 && errno == EINTR)
		;
	if (n <= 0)
		return NULL;
	/* the root's descriptor reaches this mount even once it is
	 * detached; O_PATH: no OPENDIR, so no RELEASEDIR left unserved */
	fd = open(mnt_abs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && dir_source) {
		char **w = mountfs_writers();
		struct stat rs;
		dev_t root_dev = fstat(fd, &rs) == 0 ? rs.st_dev : (dev_t)-1;

		for (size_t i = 0; w != NULL && w[i] != NULL; i++) {
			stop_fsync(fd, w[i], root_dev);
			free(w[i]);
		}
		free(w);
	} else if (fd >= 0 && !stop_nfs) {
		/* nfs:// has no writeback cache: nothing to send */
		stop_fsync(fd, DISK_NAME, 0);
	}
	pthread_mutex_lock(&stop_lock);
	if (!stop_loop_over) {
		fuse_session_exit(se);
		/* the loop's thread waits in sem_wait, which the signal's
		 * handler interrupts: it sees the end and cancels the
		 * workers, also when no request comes (the mount detached
		 * here but alive in another mount namespace) */
		pthread_kill(stop_main, c);
	}
	pthread_mutex_unlock(&stop_lock);
	/* a request no worker takes fails once the session is destroyed */
	if (fd >= 0) {
		(void)fstatvfs(fd, &sv);
		close(fd);
	}
	return NULL;
}

/* After fuse_set_signal_handlers: the signals that end the loop go
 * through stop_thread; 0 or -errno. */
static int
stop_start(struct fuse_session *se)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM };
	struct sigaction sa;
	size_t i;
	int r;

	stop_main = pthread_self();
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	/* the reader waits; the handler must never block */
	if (fcntl(stop_pipe[0], F_SETFL, 0) < 0)
		return -errno;
	if ((r = pthread_create(&stop_tid, NULL, stop_thread, se)) != 0)
		return -r;
	stop_started = true;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = stop_handler;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return -errno;
	return 0;
}

/* The loop is over: the thread leaves the session alone. */
static void
stop_loop_ended(void)
{
	pthread_mutex_lock(&stop_lock);
	stop_loop_over = true;
	pthread_mutex_unlock(&stop_lock);
}

/* The session is destroyed (what the thread still waits for on the
 * mount fails) and the signals ignored: the thread ends. */
static void
stop_end(void)
{
	if (stop_pipe[1] >= 0)
		close(stop_pipe[1]);
	if (stop_started)
		pthread_join(stop_tid, NULL);
	if (stop_pipe[0] >= 0)
		close(stop_pipe[0]);
	stop_pipe[0] = stop_pipe[1] = -1;
	stop_started = false;
}

/* Before the first request: what a crashed mount left dirty in the disk
 * cache goes to the files (a device's own open does it for that device),
 * so that the kernel never learns a size from before. */
static void
recover_disk_cache(bool is_nfs)
{
	const char *base = is_nfs ? mountnfs_dev_base() : src_shown;
	size_t len = strlen(base);
	char *prefix = malloc(len + 2);
	int n;

	if (prefix == NULL)
		return;
	sprintf(prefix, "%s%s", base, len > 0 && base[len - 1] == '/' ? "" : "/");
	n = clio_disk_cache_recover(&opts.conf, prefix, is_nfs ? mountnfs_dev_query() : NULL);
	if (n < 0)
		fprintf(stderr, "clio mount: disk cache %s: %s\n", opts.conf.disk_cache,
			strerror(-n));
	free(prefix);
}

int
cmd_mount(int argc, char **argv)
{
	struct fuse_lowlevel_ops ops;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config lcfg;
	struct fuse_session *se;
	char err[ERRLEN], fopts[1024], *rootpath = NULL;
	const char *source, *mnt;
	bool foreground = false, debug = false, is_dir, is_nfs;
	struct stat st;
	struct mounttab_entry mte;
	clio_cache *cache = NULL;
	int c, r, rootfd = -1, status = 0;

	if ((r = cli_help_version(argc, argv, usage_mount, NULL)) >= 0)
		return r;

	opts.conf = (struct clio_conf)CLIO_CONF_DEFAULTS;
	opts.conf.flush_behind = MOUNT_FLUSH_BEHIND;
	opts.kernel_cache = 1;
	opts.prefault = 1;
	opts.idle_devices = MOUNT_IDLE_MAX;
	opts.nfs = (struct mount_nfs_opts)MOUNT_NFS_OPTS_DEFAULTS;
	if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
		usage_mount(stdout);
		return 0;
	}
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};

	optind = 1;
	opterr = 0;
	/* options may follow the operands too, as FUSE file systems take them */
	while ((c = getopt_long(argc, argv, ":fdho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': foreground = true; break;
		case 'd': debug = foreground = true; break;
		case 'o':
			if (parse_opts(optarg) < 0)
				return EX_USAGE;
			break;
		case 'h': usage_mount(stdout); return 0;
		default: return cli_bad_option("clio mount", c, argv);
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "clio mount: %d operand%s%s%s%s: give SOURCE and MOUNTPOINT "
				"(clio mount --help)\n", argc - optind,
			argc - optind == 1 ? "" : "s",
			argc - optind > 2 ? " ('" : "",
			argc - optind > 2 ? argv[optind + 2] : "",
			argc - optind > 2 ? "' is a third)" : "");
		return EX_USAGE;
	}
	source = argv[optind];
	mnt = argv[optind + 1];
	if (clio_conf_check(&opts.conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "clio mount: %s\n", err);
		return EX_USAGE;
	}
	if (opts.max_write == 0)
		opts.max_write = opts.conf.maxphys < KERNEL_MAX_IO ?
			opts.conf.maxphys : KERNEL_MAX_IO;
	if (opts.max_write < 4096)
		opts.max_write = 4096;
	if (opts.max_read == 0)
		opts.max_read = opts.max_write;
	if (opts.readahead == 0)
		opts.readahead = 4 * opts.max_read;
	if (realpath(mnt, mnt_abs) == NULL) {
		fprintf(stderr, "clio mount: %s: %s\n", mnt, strerror(errno));
		return EX_NOINPUT;
	}
	if (mounttab_find(mnt_abs, &mte) == 0 && mounttab_is_clio(&mte)) {
		fprintf(stderr, "clio mount: %s: already a clio mount (of %s)\n",
			mnt_abs, mte.source);
		return EX_CANTCREAT;
	}

	is_nfs = strncmp(source, "nfs://", 6) == 0;
	is_dir = !is_nfs && stat(source, &st) == 0 && S_ISDIR(st.st_mode);
	if (is_dir || is_nfs) {
		struct rlimit rl;
		/* every node holds a descriptor, every open or idle device
		 * another (mountfs.c; an nfs:// device a socket): as many as
		 * the hard limit allows */
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (is_nfs && opts.cache_off) {
		fprintf(stderr, "clio mount: cache=off needs a directory source\n");
		return EX_USAGE;
	} else if (is_nfs) {
		/* the export is mounted after daemonizing (libnfs and the
		 * devices' threads); the kernel's writeback cache stays off:
		 * close-to-open needs every write here at its close */
		opts.kernel_cache = 0;
		opts.nfs_source = 1;
		if (!opts.idle_set)
			opts.idle_devices = NFS_IDLE_MAX;
	} else if (is_dir) {
		rootpath = realpath(source, NULL);
		rootfd = open(source, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0 || rootpath == NULL) {
			fprintf(stderr, "clio mount: %s: %s\n", source, strerror(errno));
			free(rootpath);
			return EX_NOINPUT;
		}
	} else if (opts.cache_off) {
		fprintf(stderr, "clio mount: cache=off needs a directory source\n");
		return EX_USAGE;
	} else {
		/* check the device string now; it is opened again after
		 * daemonizing, as devices start threads */
		clio_dev *d;
		r = clio_dev_open_err(source, opts.ro ? CLIO_DEV_RDONLY : 0, &d,
				      err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "clio mount: %s\n",
				err[0] ? err : strerror(-r));
			return r == -EINVAL ? EX_USAGE : EX_NOINPUT;
		}
		if (clio_dev_sector_size(d) > opts.conf.bsize) {
			/* the cache's blocks would be refused (an NBD
			 * server's minimum block size above bsize) */
			fprintf(stderr, "clio mount: bsize %u is below the sector size %u of '%s' "
					"(give -o bsize=%u or more)\n",
				opts.conf.bsize, clio_dev_sector_size(d), source,
				clio_dev_sector_size(d));
			clio_dev_close(d);
			return EX_USAGE;
		}
		clio_dev_close(d);
	}

	snprintf(fopts, sizeof(fopts), "default_permissions,subtype=clio,max_read=%u%s%s,fsname=",
		 opts.max_read, opts.ro ? ",ro" : "", opts.allow_other ? ",allow_other" : "");
	snprintf(src_shown, sizeof(src_shown), "%s", rootpath ? rootpath : source);
	disk_source = source;
	opt_escape(fopts, sizeof(fopts), src_shown);
	if (fuse_opt_add_arg(&args, "clio") < 0 || fuse_opt_add_arg(&args, "-o") < 0 ||
	    fuse_opt_add_arg(&args, fopts) < 0 ||
	    (debug && fuse_opt_add_arg(&args, "-d") < 0)) {
		fprintf(stderr, "clio mount: out of memory\n");
		free(rootpath);
		return EX_OSERR;
	}
	ops = is_nfs ? mountnfs_ops : is_dir ? mountfs_ops : disk_ops;
	dir_source = is_dir;
	stop_nfs = is_nfs;
	ops.init = mount_init;
	if (!opts.xattr) {
		/* ENOSYS once, and the kernel stops asking: else every
		 * write(2) costs a getxattr of security.capability */
		ops.getxattr = NULL;
		ops.setxattr = NULL;
		ops.listxattr = NULL;
		ops.removexattr = NULL;
	}
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	fuse_opt_free_args(&args);
	mount_session = se;
	if (se == NULL) {
		free(rootpath);
		if (rootfd >= 0)
			close(rootfd);
		return EX_SOFTWARE;
	}
	if (fuse_set_signal_handlers(se) < 0 || fuse_session_mount(se, mnt_abs) < 0) {
		fprintf(stderr, "clio mount: cannot mount on %s\n", mnt);
		fuse_remove_signal_handlers(se);
		fuse_session_destroy(se);
		free(rootpath);
		if (rootfd >= 0)
			close(rootfd);
		return EX_UNAVAILABLE;
	}
	free(rootpath);
	if (!foreground)
		mount_daemon_start();
	mount_ahead_init(&disk_ahead);
	if (opts.kernel_cache && !opts.cache_off &&
	    mount_ahead_start(mnt_abs, opts.readahead > 1 ? opts.readahead
			      : 128 * 1024) < 0)
		fprintf(stderr, "clio mount: no read-ahead for writers\n");

	status = EX_OSERR;
	err[0] = '\0';
	r = mount_creds_init();
	if (r == 0)
		r = clio_cache_new(&opts.conf, &cache);
	/* all of the cache's memory now, not at the first requests; a cache
	 * larger than the memory available is left to its first use */
	if (r == 0 && opts.prefault && !opts.cache_off) {
		int pr = clio_cache_prefault(cache);
		if (pr < 0 && pr != -ENOTSUP)
			fprintf(stderr, "clio mount: prefault: the cache's %llu bytes "
				"left to their first use: %s\n",
				(unsigned long long)opts.conf.cache_size,
				pr == -ENOMEM ? "more than the memory available"
					      : strerror(-pr));
	}
	if (r == 0 && is_dir)
		r = mountfs_init(cache, opts.conf.bsize, rootfd, opts.ro,
				 opts.cache_off, opts.kernel_cache, opts.idle_devices);
	if (r == 0 && is_nfs)
		r = mountnfs_init(cache, source, &opts.nfs, opts.ro, opts.idle_devices,
				  err, sizeof(err));
	if (r < 0 && is_nfs)
		status = r == -EINVAL ? EX_USAGE : EX_NOINPUT;
	if (r == 0 && !is_dir && !is_nfs) {
		/* the caller's working directory: relative paths as given */
		r = clio_dev_open_err(source, opts.ro ? CLIO_DEV_RDONLY : 0,
				      &disk_dev, err, sizeof(err));
		if (r < 0)
			status = r == -EINVAL ? EX_USAGE : EX_NOINPUT;
		else
			r = clio_open(cache, disk_dev, opts.ro ? CLIO_RDONLY : CLIO_RDWR,
				      &disk_cf);
	}
	if (r == 0 && (is_dir || is_nfs) && !opts.ro && !opts.cache_off &&
	    opts.conf.disk_cache != NULL && opts.conf.disk_cache[0] != '\0')
		recover_disk_cache(is_nfs);
	if (r == 0)
		mount_stats_init(cache, is_nfs ? mountnfs_foreach_dev :
				 is_dir ? mountfs_foreach_dev : disk_foreach,
				 mnt_abs, src_shown);
	if (r < 0) {
		fprintf(stderr, "clio mount: %s\n", err[0] ? err : strerror(-r));
	} else {
		status = 0;
		mount_daemon_ready();
		if ((r = stop_start(se)) < 0)
			fprintf(stderr, "clio mount: no write-back of the kernel's pages at a signal: %s\n",
				strerror(-r));
		memset(&lcfg, 0, sizeof(lcfg));
		lcfg.clone_fd = 0;
		lcfg.max_idle_threads = 10;
		/* > 0: the signal that ended it, a clean end */
		if (fuse_session_loop_mt(se, &lcfg) < 0)
			status = EX_SOFTWARE;
		stop_loop_ended();
	}

	/*
	 * The loop is over: no request runs.  Unmount; the write-back below
	 * is not cut short by a signal; destroying the session fails what
	 * the kick thread still waits for on the mount, then it is joined;
	 * then write back and close.
	 */
	fuse_session_unmount(se);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	signal(SIGALRM, SIG_IGN);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	stop_end();
	mount_ahead_stop();
	if (cache != NULL) {
		int w = clio_sync(cache);
		int w2 = is_nfs ? mountnfs_fini() : is_dir ? mountfs_fini() : 0;
		if (disk_cf != NULL && (r = clio_close(disk_cf)) < 0 && w == 0)
			w = r;
		if (disk_dev != NULL)
			clio_dev_close(disk_dev);
		if (w == 0)
			w = w2;
		if ((r = clio_cache_free(cache)) < 0 && w == 0)
			w = r;
		if (w < 0) {
			fprintf(stderr, "clio mount: write-back: %s\n", strerror(-w));
			status = EX_IOERR;
		}
	} else if (rootfd >= 0) {
		close(rootfd);
	}
	mount_ahead_destroy(&disk_ahead);
	return status;
}

/* Run fusermount3 -u [-q] -- mnt; its exit status, or -1. */
static int
run_fusermount(const char *mnt, bool quiet)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (quiet)
			execlp("fusermount3", "fusermount3", "-u", "-q", "--", mnt, (char *)NULL);
		else
			execlp("fusermount3", "fusermount3", "-u", "--", mnt, (char *)NULL);
		fprintf(stderr, "clio umount: fusermount3: %s\n", strerror(errno));
		_exit(EX_UNAVAILABLE);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void
usage_umount(FILE *fp)
{
	fprintf(fp, "usage: clio umount MOUNTPOINT\n"
		"Write back what is dirty and remove the clio mount on MOUNTPOINT.\n"
		"See clio(1).\n");
}

/*
 * Only a clio mount is unmounted (exit 64 otherwise, 66 for a path that
 * is not there), and by a user other than root only its own (exit 77,
 * EX_NOPERM, at once); fusermount3 -u on its absolute path, and a mount that
 * is busy is tried again for up to 3 s, as the daemon's own read-ahead
 * (mountahead.c) may hold the file open for a moment after the last
 * program closed it; still busy: fusermount3's message, exit 75.
 */
int
cmd_umount(int argc, char **argv)
{
	struct mounttab_entry e;
	char abs[4096];
	int r;

	if ((r = cli_help_version(argc, argv, usage_umount, NULL)) >= 0)
		return r;
	if (argc > 1 && strcmp(argv[1], "--") == 0) {
		argc--;		/* what follows is the mount point */
		argv++;
	} else if (argc > 1 && argv[1][0] == '-' && argv[1][1] != '\0') {
		fprintf(stderr, "clio umount: unrecognized option '%s'\n", argv[1]);
		return EX_USAGE;
	}
	if (argc > 2) {
		fprintf(stderr, "clio umount: unexpected argument '%s'\n", argv[2]);
		return EX_USAGE;
	}
	if (argc != 2) {
		usage_umount(stderr);
		return EX_USAGE;
	}
	if ((r = mounttab_abspath(argv[1], abs, sizeof(abs))) < 0) {
		fprintf(stderr, "clio umount: %s: %s\n", argv[1], strerror(-r));
		return EX_NOINPUT;
	}
	if (mounttab_find(abs, &e) < 0 || !mounttab_is_clio(&e)) {
		fprintf(stderr, "clio umount: %s: not a clio mount\n", argv[1]);
		return EX_USAGE;
	}
	/* fusermount3 would refuse, and that is no busy mount to wait for */
	if (getuid() != 0 && e.uid >= 0 && e.uid != (long)getuid()) {
		fprintf(stderr, "clio umount: %s: mounted by another user (uid %ld)\n",
			argv[1], e.uid);
		return EX_NOPERM;
	}
	return fuse_unmount_retrying(abs);
}

int
fuse_unmount_retrying(const char *abs)
{
	struct mounttab_entry e;
	int i, r;

	for (i = 0; i < 30; i++) {
		if ((r = run_fusermount(abs, true)) == 0)
			return 0;
		if (r == EX_UNAVAILABLE)
			return r;
		if (mounttab_find(abs, &e) < 0)
			return 0; /* the daemon ended meanwhile */
		usleep(100 * 1000);
	}
	r = run_fusermount(abs, false);
	return r == 0 ? 0 : r == EX_UNAVAILABLE ? r : EX_TEMPFAIL;
}
