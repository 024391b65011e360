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
};

/* The pass-through file system over a directory (mountfs.c). */
extern const struct fuse_lowlevel_ops mountfs_ops;
/* Take over rootfd (an O_PATH descriptor of the source directory). */
int mountfs_init(clio_cache *cache, int rootfd, int ro);
/* Close every handle and device (after clio_sync) and free every inode;
 * returns the first write-back error. */
int mountfs_fini(void);

/* Credentials of the caller of a request, for the file system calls that
 * create objects; no-ops unless the daemon runs as root. */
void mount_creds_enter(fuse_req_t req);
void mount_creds_leave(void);

#endif
