/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mount.h - what fuse/mount.c (options, session, device mode) and
 * fuse/mountfs.c (the pass-through file system) share.
 */
#ifndef CLIO_MOUNT_H
#define CLIO_MOUNT_H

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "clio.h"

/* Attribute and entry timeout, seconds, of both file systems. */
#define MOUNT_TIMEOUT 1.0

/* The NFS mount's consistency (mountnfs.c): attribute cache timeouts,
 * seconds; cto: GETATTR at each open; lease: this mount is the export's
 * only writer. */
struct mount_nfs_opts {
	double acregmin, acregmax, acdirmin, acdirmax;
	int cto, lease;
};
#define MOUNT_NFS_OPTS_DEFAULTS { 3, 60, 30, 60, 1, 0 }
/* Attribute and entry timeouts under lease, seconds. */
#define NFS_LEASE_TIMEOUT 3600.0
/* Idle nfs:// devices kept by default (each holds a TCP connection and
 * a thread). */
#define NFS_IDLE_MAX 256

struct mount_opts {
	struct clio_conf conf;
	int ro;
	int allow_other;
	int xattr;		/* xattr: extended attributes (off by default) */
	unsigned max_read, max_write; /* 0: derived from maxphys */
	int cache_off;		/* cache=off: plain pass-through, no clio cache */
	int kernel_cache;	/* kernel_cache=on (default): keep_cache + writeback cache */
	int prefault;		/* prefault=on (default): the cache resident at mount */
	unsigned readahead;	/* the kernel's read-ahead, bytes; 0: its default */
	unsigned idle_devices;	/* idle devices kept at most (mountidle.c) */
	struct mount_nfs_opts nfs;	/* nfs:// sources */
	int idle_set;		/* idle_devices= given */
	int nfs_source;		/* the source is nfs://... */
};

/* Idle devices of the pass-through file system, oldest first
 * (mountidle.c); embedded in their owner. */
struct mount_idle {
	struct mount_idle *prev, *next;
	bool listed;
};
/* At most this many idle devices stay open, by default (idle_devices=N). */
#define MOUNT_IDLE_MAX 4096
#define MOUNT_IDLE_LIMIT 65536
/* Append e (the youngest); moves it if listed. */
void mount_idle_add(struct mount_idle *e);
/* Take e off the list; was it listed? */
bool mount_idle_del(struct mount_idle *e);
/* While more than max are listed: the oldest entry that claim accepts,
 * off the list, else NULL.  claim runs under the list's lock and must
 * not wait for any lock (it may try one). */
struct mount_idle *mount_idle_take_oldest(unsigned max,
					  bool (*claim)(struct mount_idle *));
unsigned mount_idle_count(void);

/* The session, for notifications to the kernel (set before the loop). */
extern struct fuse_session *mount_session;

/* The pass-through file system over a directory (mountfs.c). */
extern const struct fuse_lowlevel_ops mountfs_ops;
/* Take over rootfd (an O_PATH descriptor of the source directory);
 * bsize: the cache's buffer size. */
int mountfs_init(clio_cache *cache, uint32_t bsize, int rootfd, int ro,
		 int cache_off, int kernel_cache, unsigned idle_devices);
/* Close every handle and device (after clio_sync) and free every inode;
 * returns the first write-back error. */
int mountfs_fini(void);
/* The files open for writing now: their paths under the source's root,
 * or a program's descriptor of one, "/proc/PID/fd/N", that the caller
 * must check is on the mount (see mountfs.c); malloc'ed, NULL-ended
 * (NULL without memory). */
char **mountfs_writers(void);

/* The NFS file system over an export (mountnfs.c): source is
 * nfs://HOST/EXPORT[?QUERY]; 0, or -errno with a message in err. */
extern const struct fuse_lowlevel_ops mountnfs_ops;
int mountnfs_init(clio_cache *cache, const char *source,
		  const struct mount_nfs_opts *o, int ro, unsigned idle_devices,
		  char *err, size_t errlen);
/* After clio_sync: close every device; the first write-back error. */
int mountnfs_fini(void);
/* The export's device strings: "nfs://HOST/EXPORT", then a file's
 * path, then the query ("?..." or ""). */
const char *mountnfs_dev_base(void);
const char *mountnfs_dev_query(void);

/* The caller's identity for the calls that create objects (mountcreds.c):
 * init before the loop; enter (0 or -errno: then leave is not needed and
 * the request fails) and leave around each such call. */
int mount_creds_init(void);
int mount_creds_enter(fuse_req_t req);
void mount_creds_leave(void);
/* At the connection's init: the kernel enforces POSIX ACLs itself
 * (FUSE_CAP_POSIX_ACL), the kernel leaves the umask to the daemon
 * (FUSE_CAP_DONT_MASK). */
void mount_creds_conn(bool kernel_acl, bool dont_mask);
/* Whether the caller of req may access path under the directory fd, or
 * with path "" the object open on fd (an O_PATH descriptor too), with
 * mode (R_OK, W_OK, X_OK) as the source's file system decides, its ACLs
 * included: 0 or -errno (-EACCES). */
int mount_creds_access(fuse_req_t req, int fd, const char *path, int mode);
/* Whether mount_creds_access would ask the source for req's caller. */
bool mount_creds_asks(fuse_req_t req);
/* Whether req's caller holds CAP_SYS_ADMIN (may see trusted.* names). */
bool mount_creds_sys_admin(fuse_req_t req);

/* Without -f (mountdaemon.c): fork; the caller goes on in the child, and
 * the command exits 0 at mount_daemon_ready, or with the child's status. */
void mount_daemon_start(void);
void mount_daemon_ready(void);

/* The control file `.clio-stats` in the root (mountstats.c). */
#define MOUNT_STATS_NAME ".clio-stats"
/* Calls fn(arg, name, shown, dev) for every open device: name is the
 * file's path under the mount, shown the device as the user names it
 * (the source's path of the file, or the device string given); both
 * NULL for an idle device (kept open for the next open of its file,
 * which no program has open now). */
typedef void (*mount_stats_visit_fn)(void *arg, const char *name,
				     const char *shown, clio_dev *d);
typedef void (*mount_stats_foreach_fn)(mount_stats_visit_fn fn, void *arg);
/* mountpoint (absolute) and source (as given) head the snapshot. */
void mount_stats_init(clio_cache *cache, mount_stats_foreach_fn foreach,
		      const char *mountpoint, const char *source);
/* A device is about to be closed: add its figures to the totals since
 * the mount, which the snapshot reports beside the open devices'. */
void mount_stats_retire(clio_dev *d);
fuse_ino_t mount_stats_ino(void);
/* Read through cf (or, with cf NULL, pread on fd) and reply; the bytes
 * replied (0 after an error reply). */
size_t mount_reply_read(fuse_req_t req, clio_file *cf, int fd, size_t size,
			off_t off);

/* The programs' READ and WRITE requests, counted and timed (mountio.c). */
struct mount_io_totals {
	uint64_t reads, writes, read_bytes, write_bytes;
	double read_s, write_s;	/* sums of the requests' times */
	double busy_s;		/* time with a request in flight */
	double queue_s;		/* integral of the requests in flight */
};
/* Before a request is served: its start time, for mount_io_end. */
double mount_io_begin(void);
void mount_io_end(bool write, size_t bytes, double t0);
void mount_io_get(struct mount_io_totals *t);
/* Is name in parent the control file? */
int mount_stats_name(fuse_ino_t parent, const char *name);
/* Refuse (EPERM) to make, change or remove the control file's name:
 * 1 after the reply, else 0. */
int mount_stats_guard(fuse_req_t req, fuse_ino_t parent, const char *name);
void mount_stats_attr(struct stat *st);
void mount_stats_lookup(fuse_req_t req);
void mount_stats_getattr(fuse_req_t req);
/* A snapshot per open (read-only opens by the mount's owner or root
 * only), freed by release. */
void mount_stats_open(fuse_req_t req, struct fuse_file_info *fi);
void mount_stats_read(fuse_req_t req, size_t size, off_t off,
		      struct fuse_file_info *fi);
void mount_stats_release(fuse_req_t req, struct fuse_file_info *fi);
/* The pass-through file system's devices: those of the files open now. */
void mountfs_foreach_dev(mount_stats_visit_fn fn, void *arg);
/* The NFS file system's: those open now and the idle ones. */
void mountnfs_foreach_dev(mount_stats_visit_fn fn, void *arg);

/* Read-ahead for writers under the writeback cache (mountahead.c). */
struct mount_ahead {
	pthread_mutex_t lock;
	uint64_t next;		/* the page after the last single-page READ */
	uint64_t end;		/* the end of the last window asked for */
	uint64_t win;		/* its length; 0: no sequential pattern */
	bool busy;		/* a kick is queued or running */
	bool kicked;		/* a kick was queued since the last close job */
};
/* Names the file relative to the mount point; 0 or -errno. */
typedef int (*mount_ahead_path_fn)(void *arg, char *buf, size_t len);
/* Start the helper process and the kick thread for the mount point
 * (absolute), before any other thread exists; piece: the mount's
 * read-ahead, the most one posix_fadvise reads.  0 or -errno. */
int mount_ahead_start(const char *mountpoint, uint64_t piece);
/* Drop the queued kicks, close the helper's files, join the thread and
 * reap the helper; after the FUSE session is gone. */
void mount_ahead_stop(void);
void mount_ahead_init(struct mount_ahead *a);
void mount_ahead_destroy(struct mount_ahead *a);
/* Before a READ of [off, off + size) is answered: queue a kick when the
 * kernel fills pages one by one in order.  path names the file relative
 * to the mount point; pin(arg) keeps it until unpin(arg) (both may be
 * NULL). */
void mount_ahead_read(struct mount_ahead *a, uint64_t off, size_t size,
		      mount_ahead_path_fn path, void (*pin)(void *),
		      void (*unpin)(void *), void *arg);
/* Before a WRITE of [off, off + size) is answered: the kernel writes
 * back the writer's pages a little behind the writer, so a WRITE inside
 * the last window asked for queues a kick of the next one. */
void mount_ahead_write(struct mount_ahead *a, uint64_t off, size_t size,
		       mount_ahead_path_fn path, void (*pin)(void *),
		       void (*unpin)(void *), void *arg);
/* The programs closed the file: the helper closes its descriptor. */
void mount_ahead_idle(struct mount_ahead *a, void (*pin)(void *),
		      void (*unpin)(void *), void *arg);
/* Is pid (a request's caller) the read-ahead helper process? */
bool mount_ahead_self(pid_t pid);
extern atomic_uint_fast64_t mount_ahead_kicks;

#endif
