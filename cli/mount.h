/*
 * mount.h - what cli/mount.c (options, session, device mode) and
 * cli/mountfs.c (the pass-through file system) share.
 */
#ifndef CLIO_MOUNT_H
#define CLIO_MOUNT_H

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include "clio.h"

/* Attribute and entry timeout, seconds, of both file systems. */
#define MOUNT_TIMEOUT 1.0

struct mount_opts {
	struct clio_conf conf;
	int ro;
	int allow_other;
	unsigned max_read, max_write; /* 0: derived from maxphys */
	int cache_off;		/* cache=off: plain pass-through, no clio cache */
	int kernel_cache;	/* kernel_cache=on: keep_cache + writeback cache */
};

/* The pass-through file system over a directory (mountfs.c). */
extern const struct fuse_lowlevel_ops mountfs_ops;
/* Take over rootfd (an O_PATH descriptor of the source directory). */
int mountfs_init(clio_cache *cache, int rootfd, int ro, int cache_off,
		 int kernel_cache);
/* Close every handle and device (after clio_sync) and free every inode;
 * returns the first write-back error. */
int mountfs_fini(void);

/* Credentials of the caller of a request, for the file system calls that
 * create objects; no-ops unless the daemon runs as root. */
void mount_creds_enter(fuse_req_t req);
void mount_creds_leave(void);

/* The control file `.clio-stats` in the root (mountstats.c). */
#define MOUNT_STATS_NAME ".clio-stats"
/* Calls fn(arg, name, dev) for every open device. */
typedef void (*mount_stats_visit_fn)(void *arg, const char *name, clio_dev *d);
typedef void (*mount_stats_foreach_fn)(mount_stats_visit_fn fn, void *arg);
void mount_stats_init(clio_cache *cache, mount_stats_foreach_fn foreach);
fuse_ino_t mount_stats_ino(void);
/* Read through cf (or, with cf NULL, pread on fd) and reply. */
void mount_reply_read(fuse_req_t req, clio_file *cf, int fd, size_t size,
		      off_t off);
/* Is name in parent the control file? */
int mount_stats_name(fuse_ino_t parent, const char *name);
void mount_stats_attr(struct stat *st);
void mount_stats_lookup(fuse_req_t req);
void mount_stats_getattr(fuse_req_t req);
/* A snapshot per open (read-only opens only), freed by release. */
void mount_stats_open(fuse_req_t req, struct fuse_file_info *fi);
void mount_stats_read(fuse_req_t req, size_t size, off_t off,
		      struct fuse_file_info *fi);
void mount_stats_release(fuse_req_t req, struct fuse_file_info *fi);
/* The pass-through file system's devices: those of the files open now. */
void mountfs_foreach_dev(mount_stats_visit_fn fn, void *arg);

#endif
