/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mountfs.c - the pass-through file system of `clio mount DIR MNT`: every
 * object of DIR appears under MNT, and the data of every regular file
 * goes through clio's cache.
 *
 * Inodes.  A FUSE node id is the address of a struct mnode, except the
 * root (FUSE_ROOT_ID).  Each mnode holds a descriptor of its object (an
 * O_PATH one, or for a file made by create the one its openat returned;
 * it is only ever used as a path: fstatat, *at calls, /proc/self/fd/N)
 * and is found by (st_dev, st_ino) in a hash table, so hard links
 * share one mnode.  lookup, readdirplus (each entry it returns), create,
 * mkdir, mknod, symlink and link add one to its lookup count; forget and
 * forget_multi take off what the kernel says; at zero the mnode leaves
 * the table and is freed once no open handle uses it.  Every object is
 * on the mount's one device, so st_ino tells them apart (report_ino):
 * the source's own for the objects of the root's file system, another
 * for those of each file system mounted beneath it.
 *
 * Data.  The first open of a regular file opens one clio device on it
 * (file:/proc/self/fd/N?direct=1, or without direct=1 when the file
 * system refuses O_DIRECT; a file smaller than SMALL_FILE then:
 * ?qd=1, buffered, one worker; read-write, or read-only when writing is
 * refused) and a node handle used for truncation and sizes, with
 * CLIO_KEEP; each FUSE open then gets its own clio_file on that device,
 * so every open of the inode shares its buffers.  The last release
 * closes the node handle (writing back what is dirty) but keeps the
 * device and the object's clean buffers for the next open: the device
 * is idle (mountidle.c).  An idle device is closed (clio_cache_forget,
 * then clio_dev_close) when more than idle_devices (mount.c; default
 * MOUNT_IDLE_MAX) are idle (the oldest first), when the file loses its last name through the mount
 * (unlink, rename over it), when the kernel forgets the inode, and at
 * the end.  getattr of an open file reports clio_fsize.  A write (or
 * copy_file_range) past the largest file the source's file system takes
 * is refused with EFBIG, or cut short there, as the source would do it
 * (its limit is found once per file with lseek, for writes beyond 2 GiB),
 * so that no dirty data is cached that can never be written back.  The O_DIRECT
 * flag of an open on the mount is ignored: all data goes through clio
 * anyway.
 * Direct handles are the exception: a writer of an append-only source
 * (chattr +a), and a write-only open of a file the daemon may write but
 * not read (mode 0200 in a user's mount).  Such a handle has a
 * descriptor of its own (with O_APPEND on an append-only file: the
 * source then refuses a writer without, and O_TRUNC, with EPERM, as
 * locally) and direct_io; each WRITE is one pwrite(2) (at the file's
 * end with O_APPEND), and an open clio handle of the file drops its
 * clean buffers and takes the new size after it (a cached block written
 * back would write old bytes again, or need a read).
 *
 * Consistency (close-to-open).  Each open fstats the source and hands
 * its version (size, mtime, ctime, inode) to clio_revalidate, which drops
 * the object's clean buffers if the source changed since the version
 * recorded; not while a handle of this mount writes the file (its own
 * write-behind moves the version), but at its first write since the
 * version was recorded (node_write_begins), whose close would record a
 * change made meanwhile behind the mount's back as this mount's own.  After a handle's own writes are
 * written back (flush, and the last release of a file written through
 * the cache; an open for writing that wrote nothing records nothing)
 * and after a truncation or a change of times, the source's new
 * version is recorded with clio_validator_set, so the next open keeps what
 * this mount wrote.  Setting mtime writes the object's dirty data back
 * first, so that no later write-back moves the time that was set.
 *
 * Locks: tbl_lock, then a node's lock, then the idle list's (whose
 * walker only tries node locks); the cache's own locks come last.
 *
 * Kernel caching.  By default (kernel_cache=on, mount.c) opens keep the
 * kernel's page cache (keep_cache) unless the open found the source
 * changed, and the kernel's writeback cache is asked for: the kernel
 * keeps pages across opens and gathers small writes into pages that
 * reach clio in max_write-sized WRITEs, so a write(2) of 1 KiB is a
 * memory copy, not a round trip to this daemon.  Its price is seed
 * 002's: a write into part of a page the kernel lacks reads that page
 * first, one page per READ; mountahead.c turns a run of those into
 * kernel read-ahead.  A write-only open is opened read-write underneath,
 * as the kernel may read the pages it fills.  The kernel then owns the
 * size and times of the files it knows: a change of the source's data
 * that keeps its size is seen at the next open, a change of its size is
 * not (use kernel_cache=off for a source that others change).
 * Attributes and entries are cached MOUNT_TIMEOUT seconds.  With
 * kernel_cache=off there is no writeback cache: every write(2) reaches
 * clio at once and reads come in the kernel's read-ahead sizes; pages
 * are dropped at an open that finds the source changed, as above;
 * attributes and entries are not cached (timeout 0), so every path walk
 * and stat asks this daemon and a new open sees a name replaced, or
 * data and size changed, behind the mount's back.  A read(2) does not
 * drop the pages (no auto_inval_data, mount.c).
 *
 * cache=off (mount.c): no clio device is opened; each FUSE open gets its
 * own descriptor on the file (no O_DIRECT) and reads and writes are
 * pread(2)/pwrite(2) on it, fsync is fsync(2), flush closes a duplicate
 * (a plain pass-through, to measure what FUSE itself costs).
 *
 * fallocate and copy_file_range keep to the cache: fallocate changes
 * data and size through clio (ZERO_RANGE writes zeros; the file
 * underneath is only asked to allocate), except that PUNCH_HOLE
 * deallocates in the file underneath after writing the object back (see
 * node_punch), and copy_file_range reads through the source's handle and
 * writes through the destination's (see each).
 *
 * Extended attributes (set, get, list, remove) are those of the object
 * underneath, reached through /proc/self/fd/N (a symlink's own, too).
 * File locks (flock, POSIX) are left to the kernel, which
 * keeps them on the mount when no lock operations are given: they do not
 * reach the source directory.
 *
 * Durability.  fsync is clio_fsync (written back and the device
 * flushed).  flush (each close(2)) writes back what the handle wrote with
 * clio_writeback, without a device flush, and returns its error, so a
 * write-back error reaches close(2); release returns nothing the kernel
 * reads.
 *
 * Statistics.  `.clio-stats` in the root is the control file of
 * mountstats.c: it hides a real object of that name in the source's root,
 * which is neither listed, opened, created, renamed nor removed through
 * the mount.  Its devices are those of the files open now, named by their
 * path under the source (as opened; a later rename is not seen).
 *
 * Permissions are checked by the kernel (default_permissions); objects
 * are created with the caller's identity and groups, with the mode the
 * kernel sends and the caller's umask, not the daemon's (mountcreds.c).
 * The kernel sees only mode bits, unless xattr is on (it then reads and
 * enforces the source's POSIX ACLs itself): without, the source decides
 * for a caller other than root whether it may search a directory
 * (lookup, and readdirplus gives it no attributes otherwise), list it
 * (opendir), add or remove names in it (link, unlink, rmdir, rename),
 * open a file with the access asked for, and truncate it
 * (mount_creds_access), so that an ACL's denial holds; what an ACL
 * grants beyond the mode bits the kernel still refuses.  Except at an
 * open (by path), the source is asked only about an object that has an
 * access ACL (one getxattr tells), so that callers on objects without
 * ACLs pay one system call for it, not a change of identity.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "util.h"
#include "mount.h"

#define NBUCKETS 4096
#define SMALL_FILE (1u << 20)	/* bytes: a buffered device, one worker */

struct mhandle;

struct mnode {
	struct mnode *hnext;	/* hash chain, under tbl_lock */
	dev_t dev;
	ino_t ino;
	int fd;			/* used as a path only (see Inodes) */
	uint64_t nlookup;	/* under tbl_lock */
	bool unhashed;		/* under lock: left the table */
	pthread_mutex_t lock;	/* the fields below */
	int nopen;		/* handles, internal ones and pins included */
	int nuser;		/* handles of programs */
	int nwriters;		/* handles open for writing */
	int ndirect;		/* direct handles among them (see handle_open) */
	atomic_bool changed;	/* written since the version was recorded */
	bool pages_stale;	/* the kernel's pages predate a change of the
				 * source seen at a write (node_write_begins) */
	clio_dev *cdev;
	clio_file *cf;		/* node handle: truncation and size */
	bool cdev_ro;
	struct mhandle *handles;
	struct mount_ahead ahead;	/* read-ahead for writers */
	struct mount_idle idle;	/* listed while cdev is open and nopen 0 */
	bool have_v;		/* v: the source's version seen last */
	struct clio_validator v;
	_Atomic uint64_t maxbytes;	/* the source's file size limit, 0: unknown */
	_Atomic int64_t wtime;	/* ns: a write through the cache since the
				 * version was recorded, its time; 0: none */
	_Atomic uint64_t wbytes;	/* bytes written through the cache since */
};

struct mhandle {
	struct mhandle *next;	/* the node's open handles, under its lock */
	struct mnode *node;
	bool internal;		/* opened by the kick thread (mountahead.c) */
	bool writer;		/* opened for writing */
	bool direct;		/* its own fd and direct_io (see handle_open) */
	bool append;		/* that fd has O_APPEND (an append-only source) */
	clio_file *cf;		/* NULL with cache=off */
	int fd;			/* cache=off: the file, else -1 */
	atomic_bool wrote;
	int reads;		/* READs still using cf, under the node's lock */
	pthread_cond_t reads_done;
};

struct mdir {
	DIR *dp;
	off_t offset;
	struct dirent *entry;	/* read but not yet returned */
};

static clio_cache *fs_cache;
static uint32_t fs_bsize;	/* the cache's buffer size */
static int fs_ro;
static bool fs_cache_off;	/* cache=off: plain pass-through */
static bool fs_kernel_cache;	/* kernel_cache=on: keep_cache, writeback */
static double fs_timeout;	/* of attributes and entries, seconds */
static unsigned fs_idle_max;	/* idle devices kept at most */
static char *fs_rootpath;	/* the source's path, to name devices */
static struct mnode fs_root;
static struct mnode *tbl[NBUCKETS];
static pthread_mutex_t tbl_lock = PTHREAD_MUTEX_INITIALIZER;

/* -------------------------------------------------------------- inodes */

static struct mnode *
node_of(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &fs_root : (struct mnode *)(uintptr_t)ino;
}

static fuse_ino_t
ino_of(struct mnode *n)
{
	return n == &fs_root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

static unsigned
bucket(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev;
	return (unsigned)(h >> 40) % NBUCKETS;
}

/*
 * The st_ino reported of an object on device dev.  Programs take two
 * names with equal st_dev and st_ino for one file (cp -a and tar link
 * them, du counts one, find sees a loop), and through the mount every
 * st_dev is the mount's: an object on a file system mounted beneath the
 * source's root gets bit 63, that file system's number (in the order
 * first seen) in bits 48-62 and its own st_ino in the rest (folded if
 * larger).  The root's own file system keeps its numbers.
 */
#define INO_FOREIGN (1ull << 63)
#define INO_DEV_SHIFT 48
#define INO_DEVS_MAX (1u << 15)

static dev_t *ino_devs;
static unsigned ino_ndevs;
static pthread_mutex_t ino_devs_lock = PTHREAD_MUTEX_INITIALIZER;

static ino_t
report_ino_of(dev_t dev, ino_t ino)
{
	const uint64_t mask = (1ull << INO_DEV_SHIFT) - 1;
	unsigned i;

	if (dev == fs_root.dev)
		return ino;
	pthread_mutex_lock(&ino_devs_lock);
	for (i = 0; i < ino_ndevs && ino_devs[i] != dev; i++)
		;
	if (i == ino_ndevs && i < INO_DEVS_MAX) {
		dev_t *nd = realloc(ino_devs, (i + 1) * sizeof(*nd));
		if (nd != NULL) {
			ino_devs = nd;
			ino_devs[ino_ndevs++] = dev;
		}
	}
	pthread_mutex_unlock(&ino_devs_lock);
	i %= INO_DEVS_MAX;	/* full: share the last number */
	return (ino_t)(INO_FOREIGN | (uint64_t)i << INO_DEV_SHIFT |
		       (((uint64_t)ino ^ (uint64_t)ino >> INO_DEV_SHIFT) & mask));
}

static void
report_ino(struct stat *st)
{
	st->st_ino = report_ino_of(st->st_dev, st->st_ino);
}

static void
proc_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* The path of an open descriptor, malloc'ed; NULL if unknown. */
static char *
fd_path(int fd)
{
	char proc[64], buf[PATH_MAX];
	ssize_t len;

	proc_path(proc, sizeof(proc), fd);
	len = readlink(proc, buf, sizeof(buf) - 1);
	if (len < 0)
		return NULL;
	buf[len] = '\0';
	return strdup(buf);
}

static int node_close_data(struct mnode *n);

/* n left the table and nothing holds it: no idle list walker can reach
 * it (node_forget took it off under its lock). */
static void
node_free(struct mnode *n)
{
	mount_idle_del(&n->idle);
	if (n->cdev != NULL)
		node_close_data(n);
	close(n->fd);
	pthread_mutex_destroy(&n->lock);
	mount_ahead_destroy(&n->ahead);
	free(n);
}

/* Find or add the mnode of (st->st_dev, st->st_ino), one more lookup;
 * takes fd over (closes it if the mnode exists). */
static struct mnode *
node_get(int fd, const struct stat *st)
{
	unsigned b = bucket(st->st_dev, st->st_ino);
	struct mnode *n;

	pthread_mutex_lock(&tbl_lock);
	for (n = tbl[b]; n != NULL; n = n->hnext)
		if (n->dev == st->st_dev && n->ino == st->st_ino)
			break;
	if (n != NULL) {
		n->nlookup++;
		pthread_mutex_unlock(&tbl_lock);
		close(fd);
		return n;
	}
	n = calloc(1, sizeof(*n));
	if (n == NULL) {
		pthread_mutex_unlock(&tbl_lock);
		close(fd);
		return NULL;
	}
	n->dev = st->st_dev;
	n->ino = st->st_ino;
	n->fd = fd;
	n->nlookup = 1;
	pthread_mutex_init(&n->lock, NULL);
	mount_ahead_init(&n->ahead);
	n->hnext = tbl[b];
	tbl[b] = n;
	pthread_mutex_unlock(&tbl_lock);
	return n;
}

static void
node_unhash(struct mnode *n)
{
	struct mnode **pp = &tbl[bucket(n->dev, n->ino)];

	while (*pp != NULL && *pp != n)
		pp = &(*pp)->hnext;
	if (*pp == n)
		*pp = n->hnext;
}

static void
node_forget(struct mnode *n, uint64_t count)
{
	bool gone = false, free_now;

	if (n == &fs_root || (fuse_ino_t)(uintptr_t)n == mount_stats_ino())
		return;
	pthread_mutex_lock(&tbl_lock);
	n->nlookup = count >= n->nlookup ? 0 : n->nlookup - count;
	if (n->nlookup == 0) {
		node_unhash(n);
		gone = true;
	}
	pthread_mutex_unlock(&tbl_lock);
	if (!gone)
		return;
	pthread_mutex_lock(&n->lock);
	n->unhashed = true;
	free_now = n->nopen == 0;
	if (free_now)
		mount_idle_del(&n->idle);
	pthread_mutex_unlock(&n->lock);
	if (free_now)
		node_free(n);
}

static bool
ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* st, the source's attributes of n: a regular file with a clio object
 * reports its size, and mtime and ctime no older than its last write. */
static void
node_attr(struct mnode *n, struct stat *st)
{
	if (S_ISREG(st->st_mode)) {
		pthread_mutex_lock(&n->lock);
		if (n->cf != NULL) {
			int64_t sz = clio_fsize(n->cf);
			/* the source's blocks, and what was written beyond
			 * its end since (no more than the bytes written): a
			 * sparse file stays one for du and cp */
			off_t held = st->st_size > st->st_blocks * 512 ?
				st->st_size : st->st_blocks * 512;
			uint64_t wb = atomic_load(&n->wbytes);
			if (sz > held)
				st->st_blocks += (blkcnt_t)(((uint64_t)(sz - held) < wb ?
							     (uint64_t)(sz - held) : wb) + 511) / 512;
			else if (sz >= 0 && sz < st->st_size &&
				 st->st_blocks > (sz + 511) / 512)
				st->st_blocks = (blkcnt_t)((sz + 511) / 512);
			if (sz >= 0)
				st->st_size = (off_t)sz;
			/* a write not yet written back moved the times */
			int64_t w = atomic_load(&n->wtime);
			if (w > 0) {
				struct timespec t = { w / 1000000000, w % 1000000000 };
				if (ts_before(&st->st_mtim, &t))
					st->st_mtim = t;
				if (ts_before(&st->st_ctim, &t))
					st->st_ctim = t;
			}
		}
		pthread_mutex_unlock(&n->lock);
	}
}

/* stat of a node, as node_attr reports it. */
static int
node_stat(struct mnode *n, struct stat *st)
{
	if (fstatat(n->fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	node_attr(n, st);
	return 0;
}

/* The entry of the object open on fd (taken over): a new lookup
 * reference in e. */
static int
lookup_fd(int fd, struct fuse_entry_param *e)
{
	struct mnode *n;
	struct stat st;
	int r;

	memset(e, 0, sizeof(*e));
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	n = node_get(fd, &st);
	if (n == NULL)
		return -ENOMEM;
	e->attr = st;
	node_attr(n, &e->attr);
	e->ino = ino_of(n);
	e->attr_timeout = fs_timeout;
	e->entry_timeout = fs_timeout;
	return 0;
}

/* Look name up in parent: a new lookup reference in e. */
static int
do_lookup(struct mnode *parent, const char *name, struct fuse_entry_param *e)
{
	int fd = openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		memset(e, 0, sizeof(*e));
		return -errno;
	}
	return lookup_fd(fd, e);
}

static void
reply_entry(fuse_req_t req, struct mnode *parent, const char *name)
{
	struct fuse_entry_param e;
	int r = do_lookup(parent, name, &e);

	if (r == -ENOENT && fs_timeout > 0) {
		/* a negative entry, kept as long as a positive one: an
		 * open(O_CREAT) then asks once, not twice */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = fs_timeout;
		fuse_reply_entry(req, &e);
	} else if (r < 0) {
		fuse_reply_err(req, -r);
	} else {
		report_ino(&e.attr);
		fuse_reply_entry(req, &e);
	}
}

/* ----------------------------------------------------------- data path */

/* The source's version now (fstat of the node's descriptor). */
static int
source_version(struct mnode *n, struct clio_validator *v)
{
	struct stat st;

	if (fstat(n->fd, &st) < 0)
		return -errno;
	validator_of_stat(&st, v);
	return 0;
}

/* At an open, under n->lock: compare the source's version v with the one
 * seen last and, through cf, with what clio's buffers hold (dropping
 * them if stale).  1 if the data changed since the last open (the
 * kernel's pages are stale too), 0 if not, or -errno. */
static int
node_revalidate(struct mnode *n, clio_file *cf, const struct clio_validator *v)
{
	int r, changed;

	changed = n->have_v && !validator_same(&n->v, v);
	if (cf != NULL) {
		if ((r = clio_revalidate(cf, v)) < 0)
			return r;
		changed |= r;
	}
	n->v = *v;
	n->have_v = true;
	return changed;
}

/* After this mount's own writes through cf reached the source: record
 * its new version, so that the next open keeps what was written; under
 * n->lock. */
static int
node_settle_locked(struct mnode *n, clio_file *cf)
{
	struct clio_validator v;
	int r;

	if ((r = source_version(n, &v)) < 0)
		return r;
	clio_validator_set(cf, &v);
	n->v = v;
	n->have_v = true;
	n->wtime = 0;	/* the source's times are past those writes */
	n->wbytes = 0;
	return 0;
}

/* At a flush of a handle that wrote: with no other writer, the last
 * release has nothing left to record. */
static void
node_settle(struct mnode *n, clio_file *cf)
{
	pthread_mutex_lock(&n->lock);
	if (node_settle_locked(n, cf) == 0 && n->nwriters <= 1)
		n->changed = false;
	pthread_mutex_unlock(&n->lock);
}

/* Open the node's clio device, unless open, and its node handle; under
 * n->lock; size: the source's now.  A device kept idle (read-only) is opened again for a writer. */
static int
node_open_data(struct mnode *n, bool want_write, uint64_t size)
{
	char spec[64];
	int r, flags;

	if (n->cdev != NULL && want_write && n->cdev_ro) {
		if (n->nopen > 0)
			return -EACCES;
		node_close_data(n);
	}
	if (n->cdev == NULL) {
		/* a small file: the source's page cache (a write of a few
		 * bytes is one pwrite, not an aligned read, write and cut
		 * back), one request at a time on the shared worker pool (no
		 * ring and completion thread of its own: each costs a clone
		 * and a join); O_DIRECT and the default queue depth and
		 * engine for others */
		bool small = size < SMALL_FILE;

		flags = fs_ro ? CLIO_DEV_RDONLY : 0;
		for (;;) {
			snprintf(spec, sizeof(spec), "file:/proc/self/fd/%d?%s", n->fd,
				 small ? "qd=1&engine=threads" : "direct=1");
			r = clio_dev_open(spec, flags, &n->cdev);
			if (r == -EINVAL && !small) {
				snprintf(spec, sizeof(spec), "file:/proc/self/fd/%d", n->fd);
				r = clio_dev_open(spec, flags, &n->cdev);
			}
			if ((r == -EACCES || r == -EPERM || r == -EROFS || r == -ETXTBSY) &&
			    !(flags & CLIO_DEV_RDONLY) && !want_write) {
				flags |= CLIO_DEV_RDONLY;
				continue;
			}
			break;
		}
		if (r < 0) {
			n->cdev = NULL;
			return r;
		}
		n->cdev_ro = (flags & CLIO_DEV_RDONLY) != 0;
	}
	if (n->cf != NULL)
		return 0;
	r = clio_open(fs_cache, n->cdev,
		      (n->cdev_ro ? CLIO_RDONLY : CLIO_RDWR) | CLIO_KEEP, &n->cf);
	if (r < 0) {
		n->cf = NULL;
		if (n->nopen == 0)
			node_close_data(n);
	}
	return r;
}

/* Close the node handle, forget the object and close the device; under
 * n->lock, no handles left, off the idle list. */
static int
node_close_data(struct mnode *n)
{
	int r = 0, r2;

	if (n->cf != NULL)
		r = clio_close(n->cf);
	n->cf = NULL;
	if (n->cdev != NULL) {
		r2 = clio_cache_forget(fs_cache, n->cdev);
		if (r == 0)
			r = r2;
		mount_stats_retire(n->cdev);
		r2 = clio_dev_close(n->cdev);
		if (r == 0)
			r = r2;
	}
	n->cdev = NULL;
	return r;
}

/* Whether the source's object has the statx attribute flag
 * (STATX_ATTR_APPEND: chattr +a, STATX_ATTR_IMMUTABLE: +i); false if
 * statx cannot tell. */
static bool
node_attr_flag(struct mnode *n, uint64_t flag)
{
	struct statx sx;

	if (statx(n->fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, 0, &sx) < 0)
		return false;
	return (sx.stx_attributes_mask & flag) && (sx.stx_attributes & flag);
}

/* After a direct handle's write reached the source: an open clio
 * handle of the node takes the source's new data and size (its clean
 * buffers dropped); n->v stays, so the next open finds the data changed
 * and drops the kernel's pages. */
static void
node_wrote_direct(struct mnode *n)
{
	struct clio_validator v;

	pthread_mutex_lock(&n->lock);
	if (n->cf != NULL && source_version(n, &v) == 0)
		clio_revalidate(n->cf, &v);
	pthread_mutex_unlock(&n->lock);
}

/* Before the first write through the cache since the source's version
 * was recorded (an open, a close that wrote): a change of the source
 * behind the mount's back since then, which the close of this write
 * would record as the mount's own, drops the clean buffers now (the
 * block written is read anew) and the kernel's pages at the next open
 * that revalidates. */
static void
node_write_begins(struct mnode *n)
{
	struct clio_validator v;

	if (atomic_load(&n->changed))
		return;
	pthread_mutex_lock(&n->lock);
	if (!atomic_load(&n->changed) && n->cf != NULL && source_version(n, &v) == 0 &&
	    clio_revalidate(n->cf, &v) > 0)
		n->pages_stale = true;
	pthread_mutex_unlock(&n->lock);
}

/* Open a handle of n for fi; known: the source's version if the caller
 * has just read it (a create), else NULL.  A writer of an append-only
 * source (which takes writes only at its end, from descriptors opened
 * with O_APPEND, and refuses others with EPERM, as does the open here)
 * bypasses the cache: its own descriptor with O_APPEND, write(2)
 * through at once and direct_io, so that the kernel sends the program's
 * bytes, not whole pages, which would write the old ones again.  So does
 * a write-only open of a file that this daemon may write but not read
 * (mode 0200 in a user's mount): the cache and the kernel's writeback
 * cache read what they fill.  Both are direct handles. */
static int
handle_open(struct mnode *n, struct fuse_file_info *fi, bool internal,
	    const struct clio_validator *known)
{
	int acc = fi->flags & O_ACCMODE;
	/* libfuse asks for atomic_o_trunc: O_TRUNC comes with the open,
	 * and truncates with O_RDONLY too (the kernel checked for write
	 * access), as on a local file system */
	int trunc = fi->flags & O_TRUNC;
	bool want_write = acc != O_RDONLY || trunc;
	/* a create's write open succeeded without O_APPEND: not append-only */
	bool append = want_write && known == NULL &&
		      node_attr_flag(n, STATX_ATTR_APPEND);
	bool direct = append;
	struct clio_validator v;
	struct mhandle *h;
	int r, mode, changed = 0;

	if (want_write && fs_ro)
		return -EROFS;
	/* the writeback cache reads the pages it fills */
	if (fs_kernel_cache && acc == O_WRONLY)
		acc = O_RDWR;
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	h->fd = -1;
	pthread_cond_init(&h->reads_done, NULL);
	mode = acc == O_WRONLY ? CLIO_WRONLY : acc == O_RDWR ? CLIO_RDWR : CLIO_RDONLY;
	pthread_mutex_lock(&n->lock);
	mount_idle_del(&n->idle);
	r = 0;
	if (!fs_cache_off && !direct) {
		bool fresh = n->cdev == NULL;
		if (known != NULL)
			v = *known;
		else
			r = source_version(n, &v);
		if (r == 0)
			r = node_open_data(n, want_write, v.size);
		if (r == 0 && fresh && (uint64_t)clio_fsize(n->cf) != v.size) {
			/* the disk tier wrote back what a crashed mount left
			 * in it: the source's new version, and the size the
			 * kernel has from the lookup is dropped before it
			 * reads (by the reply, it may have read to it) */
			r = source_version(n, &v);
			if (r == 0 && mount_session != NULL)
				(void)fuse_lowlevel_notify_inval_inode(mount_session,
								      ino_of(n), -1, 0);
		}
		if (r == -EACCES && (fi->flags & O_ACCMODE) == O_WRONLY) {
			direct = true;	/* writable here, not readable */
			r = 0;
		} else if (r == 0 && (n->nwriters == 0 || n->ndirect > 0)) {
			/* close-to-open: what the source holds now; not
			 * while this mount writes it through the cache
			 * (write-behind moves the source's version under
			 * the fstat) */
			changed = node_revalidate(n, n->cf, &v);
			r = changed < 0 ? changed : 0;
			if (r == 0 && n->pages_stale)
				changed = 1;
			n->pages_stale = false;
		}
		if (r == 0 && !direct)
			r = clio_open(fs_cache, n->cdev, mode, &h->cf);
		/* also of an empty file: its times move, as locally (a
		 * create's openat truncated the source itself) */
		if (r == 0 && !direct && trunc && (known == NULL || clio_fsize(n->cf) != 0)) {
			if ((r = clio_ftruncate(n->cf, 0)) < 0) {
				clio_close(h->cf);
			} else {
				atomic_store(&h->wrote, true);
				n->changed = true;
			}
		}
	}
	if (r == 0 && (fs_cache_off || direct)) {
		int fl = trunc | (append ? fi->flags & O_APPEND : 0) | O_CLOEXEC;
		char path[64];
		proc_path(path, sizeof(path), n->fd);
		if (direct && n->nopen == 0 && n->cdev != NULL)
			node_close_data(n);	/* idle: its buffers go stale */
		h->fd = open(path, acc | fl);
		r = h->fd < 0 ? -errno : 0;
		if (r == -EACCES && acc == O_RDWR && (fi->flags & O_ACCMODE) == O_WRONLY) {
			/* the kernel's writeback cache cannot read it */
			h->fd = open(path, O_WRONLY | fl);
			r = h->fd < 0 ? -errno : 0;
			direct = true;
		}
		if (r == 0 && (source_version(n, &v) < 0 ||
			       (changed = node_revalidate(n, NULL, &v)) < 0))
			changed = 1;
	}
	if (r < 0) {
		if (n->nopen == 0 && n->cdev != NULL)
			node_close_data(n);
		pthread_mutex_unlock(&n->lock);
		pthread_cond_destroy(&h->reads_done);
		free(h);
		return r;
	}
	h->node = n;
	h->internal = internal;
	h->next = n->handles;
	n->handles = h;
	n->nopen++;
	if (!internal)
		n->nuser++;
	h->writer = want_write;
	h->direct = direct;
	h->append = append;
	if (want_write)
		n->nwriters++;
	if (direct)
		n->ndirect++;
	pthread_mutex_unlock(&n->lock);
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->direct_io = direct;
	/* the kernel keeps its pages only of data that did not change
	 * (dropping them while another process writes the file would read
	 * pages back old: its write may not have reached clio yet) */
	fi->keep_cache = !changed && !direct;
	return 0;
}

/* Close a handle's file: its clio handle, or its descriptor (cache=off). */
static int
handle_close_file(struct mhandle *h)
{
	if (h->cf != NULL)
		return clio_close(h->cf);
	if (h->fd >= 0 && close(h->fd) < 0)
		return -errno;
	return 0;
}

/* One open (a handle or a pin) less; under n->lock.  The last closes
 * the node handle (*err: its write-back error, else 0) and keeps the
 * device idle, or closes it if n left the table; true if n must then be
 * freed once the lock is dropped. */
static bool
node_put_locked(struct mnode *n, int *err)
{
	*err = 0;
	if (--n->nopen > 0)
		return false;
	if (n->unhashed || n->cdev == NULL) {
		*err = node_close_data(n);
		return n->unhashed;
	}
	if (n->cf != NULL) {
		if (n->changed) {
			/* the version to keep: after the last writes */
			*err = clio_writeback(n->cf);
			if (*err == 0)
				node_settle_locked(n, n->cf);
			n->changed = false;
		}
		int r = clio_close(n->cf);
		if (*err == 0)
			*err = r;
		n->cf = NULL;
	}
	mount_idle_add(&n->idle);
	return false;
}

/* Claim an idle node for eviction: try its lock and pin it, keeping the
 * lock (mountidle.c's rule: never wait here). */
static bool
idle_claim(struct mount_idle *e)
{
	struct mnode *n = (struct mnode *)((char *)e - offsetof(struct mnode, idle));

	if (pthread_mutex_trylock(&n->lock) != 0)
		return false;
	if (n->nopen > 0 || n->cdev == NULL) {
		pthread_mutex_unlock(&n->lock);
		return false;
	}
	n->nopen++;
	return true;
}

/* Close the oldest idle devices beyond fs_idle_max; no lock held. */
static void
node_trim(void)
{
	struct mount_idle *e;

	while ((e = mount_idle_take_oldest(fs_idle_max, idle_claim)) != NULL) {
		struct mnode *n = (struct mnode *)((char *)e - offsetof(struct mnode, idle));
		bool free_now;

		node_close_data(n);
		free_now = --n->nopen == 0 && n->unhashed;
		pthread_mutex_unlock(&n->lock);
		if (free_now)
			node_free(n);
	}
}

/* The source's object st (about to lose its last name, or lost it):
 * close its device if idle, so that the file's space is freed. */
static void
node_drop_idle(const struct stat *st)
{
	unsigned b = bucket(st->st_dev, st->st_ino);
	struct mnode *n;
	bool free_now;

	pthread_mutex_lock(&tbl_lock);
	for (n = tbl[b]; n != NULL; n = n->hnext)
		if (n->dev == st->st_dev && n->ino == st->st_ino)
			break;
	if (n == NULL || n == &fs_root) {
		pthread_mutex_unlock(&tbl_lock);
		return;
	}
	pthread_mutex_lock(&n->lock);
	if (n->nopen > 0 || n->cdev == NULL) {
		pthread_mutex_unlock(&n->lock);
		pthread_mutex_unlock(&tbl_lock);
		return;
	}
	mount_idle_del(&n->idle);
	n->nopen++;
	pthread_mutex_unlock(&tbl_lock);
	node_close_data(n);
	free_now = --n->nopen == 0 && n->unhashed;
	pthread_mutex_unlock(&n->lock);
	if (free_now)
		node_free(n);
}

static void node_pin(void *arg);
static void node_unpin(void *arg);

static int
handle_close(struct mhandle *h)
{
	struct mnode *n = h->node;
	struct mhandle **pp;
	bool free_now, idle;
	int r, r2;

	pthread_mutex_lock(&n->lock);
	/* a READ replies from the cache and only then lets go of cf: the
	 * reader may close its file before that */
	while (h->reads > 0)
		pthread_cond_wait(&h->reads_done, &n->lock);
	r = handle_close_file(h);
	for (pp = &n->handles; *pp != NULL; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	idle = !h->internal && --n->nuser == 0;
	if (h->writer)
		n->nwriters--;
	if (h->direct)
		n->ndirect--;
	free_now = node_put_locked(n, &r2);
	if (r == 0)
		r = r2;
	pthread_mutex_unlock(&n->lock);
	pthread_cond_destroy(&h->reads_done);
	free(h);
	if (free_now)
		node_free(n);
	else if (idle)
		mount_ahead_idle(&n->ahead, node_pin, node_unpin, n);
	node_trim();
	return r;
}

static struct mhandle *
handle_of(struct fuse_file_info *fi)
{
	return (struct mhandle *)(uintptr_t)fi->fh;
}

/* h wrote (bytes: data written through the cache): its flush writes
 * back, and through the cache the node's version is then this mount's
 * own to record (an open for writing alone records none, so a change
 * behind the mount's back is seen), and its times are the write's, and
 * its blocks count the bytes, until then (node_attr). */
static void
handle_wrote(struct mhandle *h, uint64_t bytes)
{
	atomic_store(&h->wrote, true);
	if (h->cf != NULL) {
		struct timespec t;
		/* the clock of the source's times, which a write-back
		 * later moves past this */
		clock_gettime(CLOCK_REALTIME_COARSE, &t);
		h->node->wtime = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
		h->node->wbytes += bytes;
		h->node->changed = true;
	}
}

/* ------------------------------------------------------------- ACLs */

/* Whether n's object has an access ACL (or that cannot be told): only
 * then may the source refuse what the mode bits, which the kernel
 * checked, allow. */
static bool
node_has_acl(struct mnode *n)
{
	char path[64];

	proc_path(path, sizeof(path), n->fd);
	if (getxattr(path, "system.posix_acl_access", NULL, 0) >= 0)
		return true;
	return errno != ENODATA && errno != EOPNOTSUPP;
}

/* The source's verdict on the caller's access to n's object with mode
 * (mountcreds.c), asked only where an ACL can differ from the mode
 * bits: 0 or -errno. */
static int
acl_access(fuse_req_t req, struct mnode *n, int mode)
{
	if (!mount_creds_asks(req) || !node_has_acl(n))
		return 0;
	return mount_creds_access(req, n->fd, "", mode);
}

/* ----------------------------------------------------------------- ops */

/* Refuse to make, change or remove the control file's name. */
static int
stats_guard(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	return mount_stats_guard(req, parent, name);
}

static void
fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int r;

	if (mount_stats_name(parent, name))
		mount_stats_lookup(req);
	else if ((r = acl_access(req, node_of(parent), X_OK)) < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, node_of(parent), name);
}

static void
fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(node_of(ino), nlookup);
	fuse_reply_none(req);
}

static void
fs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		node_forget(node_of(forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

static void
fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int r;

	(void)fi;
	if (ino == mount_stats_ino()) {
		mount_stats_getattr(req);
		return;
	}
	r = node_stat(node_of(ino), &st);
	if (r < 0) {
		fuse_reply_err(req, -r);
	} else {
		report_ino(&st);
		fuse_reply_attr(req, &st, fs_timeout);
	}
}

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452	/* Linux 6.6, the same number on every arch */
#endif

static atomic_bool no_empty_path_chmod, no_empty_path_utimes;

/* chmod and utimensat of the node itself: on its descriptor with
 * AT_EMPTY_PATH (no walk of /proc/self/fd/N), else, on a kernel without
 * that form, through path.  A symlink's own, either way. */
static int
node_chmod(struct mnode *n, const char *path, mode_t mode)
{
	if (!atomic_load_explicit(&no_empty_path_chmod, memory_order_relaxed)) {
		if (syscall(SYS_fchmodat2, n->fd, "", mode, AT_EMPTY_PATH) == 0)
			return 0;
		if (errno != ENOSYS && errno != EINVAL)
			return -errno;
		atomic_store_explicit(&no_empty_path_chmod, true, memory_order_relaxed);
	}
	return chmod(path, mode) < 0 ? -errno : 0;
}

static int
node_utimens(struct mnode *n, const char *path, const struct timespec tv[2])
{
	if (!atomic_load_explicit(&no_empty_path_utimes, memory_order_relaxed)) {
		if (utimensat(n->fd, "", tv, AT_EMPTY_PATH) == 0)
			return 0;
		if (errno != EINVAL)
			return -errno;
		atomic_store_explicit(&no_empty_path_utimes, true, memory_order_relaxed);
	}
	return utimensat(AT_FDCWD, path, tv, 0) < 0 ? -errno : 0;
}

/* Whether a SETATTR of times is, most likely, utimensat(2) of both to
 * the current time (touch): under the writeback cache the kernel keeps
 * a file's mtime itself and sends it as a time set (FATTR_MTIME without
 * FATTR_MTIME_NOW), but atime still as "now"; mtime within 2 s of now. */
static bool
touch_now(int valid, const struct timespec *mtime)
{
	struct timespec now;

	if (!fs_kernel_cache || !(valid & FUSE_SET_ATTR_ATIME_NOW) ||
	    !(valid & FUSE_SET_ATTR_MTIME) || (valid & FUSE_SET_ATTR_MTIME_NOW))
		return false;
	clock_gettime(CLOCK_REALTIME, &now);
	return mtime->tv_sec > now.tv_sec - 2 && mtime->tv_sec < now.tv_sec + 2;
}

static void
fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
	   struct fuse_file_info *fi)
{
	struct mnode *n = node_of(ino);
	char path[64];
	struct stat st;
	int r = 0;

	(void)fi;
	if (ino == mount_stats_ino()) {
		fuse_reply_err(req, EPERM);
		return;
	}
	proc_path(path, sizeof(path), n->fd);
	/* a truncation by name needs write access, an ACL's refusal
	 * included (ftruncate: the descriptor's) */
	if ((valid & FUSE_SET_ATTR_SIZE) && fi == NULL)
		r = acl_access(req, n, W_OK);
	/* chown(2) to -1, -1 sets nothing, and moves ctime */
	if ((valid & ~FUSE_SET_ATTR_CTIME) == 0 &&
	    fchownat(n->fd, "", (uid_t)-1, (gid_t)-1, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		r = -errno;
	if (r == 0 && (valid & FUSE_SET_ATTR_MODE))
		r = node_chmod(n, path, attr->st_mode & 07777);
	if (r == 0 && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
		uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
		gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;
		if (fchownat(n->fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			r = -errno;
	}
	if (r == 0 && (valid & FUSE_SET_ATTR_SIZE)) {
		pthread_mutex_lock(&n->lock);
		if (n->cf != NULL) {
			/* a device read-only as the source refused writing:
			 * what a truncation of it gets (EPERM if +a or +i) */
			if (n->cdev_ro)
				r = node_attr_flag(n, STATX_ATTR_APPEND) ||
				    node_attr_flag(n, STATX_ATTR_IMMUTABLE) ? -EPERM : -EACCES;
			else
				r = clio_ftruncate(n->cf, (uint64_t)attr->st_size);
			/* the source's new version is this mount's own */
			if (r == 0)
				node_settle_locked(n, n->cf);
		} else if (truncate(path, attr->st_size) < 0) {
			r = -errno;
		}
		pthread_mutex_unlock(&n->lock);
	}
	if (r == 0 && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timespec tv[2];
		/* a write-back after the times are set would move the
		 * source's mtime again: dirty data goes first (its error
		 * stays for the handles' flush and fsync) */
		if ((valid & FUSE_SET_ATTR_MTIME) && !(valid & FUSE_SET_ATTR_MTIME_NOW)) {
			pthread_mutex_lock(&n->lock);
			if (n->cf != NULL && !n->cdev_ro && clio_writeback(n->cf) == 0)
				node_settle_locked(n, n->cf);
			pthread_mutex_unlock(&n->lock);
		}
		tv[0].tv_sec = tv[1].tv_sec = 0;
		tv[0].tv_nsec = tv[1].tv_nsec = UTIME_OMIT;
		if (valid & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (valid & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		r = node_utimens(n, path, tv);
		if (r == -EPERM && touch_now(valid, &attr->st_mtim)) {
			/* the writeback cache sends a touch's "now" as a
			 * time of its own, which an append-only file, or
			 * another's to a daemon without CAP_FOWNER,
			 * refuses (a touch they take) */
			tv[0].tv_nsec = tv[1].tv_nsec = UTIME_NOW;
			r = node_utimens(n, path, tv);
		}
		/* the source's new version is this mount's own */
		pthread_mutex_lock(&n->lock);
		if (r == 0 && n->cf != NULL)
			node_settle_locked(n, n->cf);
		pthread_mutex_unlock(&n->lock);
	}
	if (r == 0)
		r = node_stat(n, &st);
	if (r < 0) {
		fuse_reply_err(req, -r);
	} else {
		report_ino(&st);
		fuse_reply_attr(req, &st, fs_timeout);
	}
}

static void
fs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	ssize_t len = readlinkat(node_of(ino)->fd, "", buf, sizeof(buf) - 1);

	if (len < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	buf[len] = '\0';
	fuse_reply_readlink(req, buf);
}

/* After a call that made name in parent: its entry, or (r < 0) err. */
static void
reply_made(fuse_req_t req, fuse_ino_t parent, const char *name, int r, int err)
{
	if (r < 0)
		fuse_reply_err(req, err);
	else
		reply_entry(req, node_of(parent), name);
}

static void
fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	 dev_t rdev)
{
	int r, e;

	if (stats_guard(req, parent, name))
		return;
	if ((r = mount_creds_enter(req)) < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	r = mknodat(node_of(parent)->fd, name, mode, rdev);
	e = errno;
	mount_creds_leave();
	reply_made(req, parent, name, r, e);
}

static void
fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	int r, e;

	if (stats_guard(req, parent, name))
		return;
	if ((r = mount_creds_enter(req)) < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	r = mkdirat(node_of(parent)->fd, name, mode);
	e = errno;
	mount_creds_leave();
	reply_made(req, parent, name, r, e);
}

static void
fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	int r, e;

	if (stats_guard(req, parent, name))
		return;
	if ((r = mount_creds_enter(req)) < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	r = symlinkat(link, node_of(parent)->fd, name);
	e = errno;
	mount_creds_leave();
	reply_made(req, parent, name, r, e);
}

/* May the caller add or remove names in the directory parent, as the
 * source decides (mountcreds.c)?  0, or it replied the error. */
static int
dir_change_ok(fuse_req_t req, fuse_ino_t parent)
{
	int r = acl_access(req, node_of(parent), W_OK | X_OK);

	if (r < 0)
		fuse_reply_err(req, -r);
	return r;
}

static void
fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct mnode *n = node_of(ino);
	char path[64];
	int r;

	if (ino == mount_stats_ino()) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (stats_guard(req, newparent, newname) || dir_change_ok(req, newparent) < 0)
		return;
	r = linkat(n->fd, "", node_of(newparent)->fd, newname, AT_EMPTY_PATH);
	if (r < 0 && (errno == ENOENT || errno == EPERM)) {
		proc_path(path, sizeof(path), n->fd);
		r = linkat(AT_FDCWD, path, node_of(newparent)->fd, newname,
			   AT_SYMLINK_FOLLOW);
	}
	reply_made(req, newparent, newname, r, errno);
}

static void
fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int r;

	if (stats_guard(req, parent, name) || dir_change_ok(req, parent) < 0)
		return;
	struct stat st;
	bool last;
	int e;

	last = fstatat(node_of(parent)->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode) && st.st_nlink == 1;
	r = unlinkat(node_of(parent)->fd, name, 0);
	e = errno;
	if (r == 0 && last)
		node_drop_idle(&st);
	fuse_reply_err(req, r < 0 ? e : 0);
}

static void
fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int r;

	if (stats_guard(req, parent, name) || dir_change_ok(req, parent) < 0)
		return;
	r = unlinkat(node_of(parent)->fd, name, AT_REMOVEDIR);

	fuse_reply_err(req, r < 0 ? errno : 0);
}

static void
fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
	  fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	int r;

	if (stats_guard(req, parent, name) || stats_guard(req, newparent, newname) ||
	    dir_change_ok(req, parent) < 0 ||
	    (newparent != parent && dir_change_ok(req, newparent) < 0))
		return;
	struct stat st;
	bool last;
	int e;

	last = !(flags & RENAME_EXCHANGE) &&
	       fstatat(node_of(newparent)->fd, newname, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode) && st.st_nlink == 1;
	r = renameat2(node_of(parent)->fd, name, node_of(newparent)->fd,
		      newname, flags);
	e = errno;
	if (r == 0 && last)
		node_drop_idle(&st);
	fuse_reply_err(req, r < 0 ? e : 0);
}

static int node_relpath(void *arg, char *buf, size_t len);

/* May the caller open n with flags, as the source decides (mountcreds.c)?
 * By its path from the source's root, so that every directory's search
 * right counts even where the kernel walked cached entries; a file
 * without a name (unlinked), or with more than one (the caller may have
 * come by another than the one its descriptor shows): the file's own
 * rights. */
static int
open_access(fuse_req_t req, struct mnode *n, int flags)
{
	int acc = flags & O_ACCMODE;
	int mode = (acc == O_RDONLY ? R_OK : acc == O_WRONLY ? W_OK : R_OK | W_OK) |
		   (flags & O_TRUNC ? W_OK : 0);
	char rel[PATH_MAX];
	struct stat st;
	int r;

	if (!mount_creds_asks(req))
		return 0;
	if (node_relpath(n, rel, sizeof(rel)) == 0) {
		r = mount_creds_access(req, fs_root.fd, rel, mode);
		if (r != -EACCES || fstat(n->fd, &st) < 0 || st.st_nlink <= 1)
			return r;
	}
	return mount_creds_access(req, n->fd, "", mode);
}

static void
fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int r;

	if (ino == mount_stats_ino()) {
		mount_stats_open(req, fi);
		return;
	}
	bool internal = mount_ahead_self(fuse_req_ctx(req)->pid);

	r = internal ? 0 : open_access(req, node_of(ino), fi->flags);
	if (r == 0)
		r = handle_open(node_of(ino), fi, internal, NULL);

	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_open(req, fi);
}

static void
fs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	  struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	struct clio_validator v;
	struct mnode *n;
	int fd, r, err;

	if (stats_guard(req, parent, name))
		return;
	if (fs_ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if ((r = mount_creds_enter(req)) < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fd = openat(node_of(parent)->fd, name,
		    (fi->flags & ~(O_DIRECT | O_APPEND)) | O_CREAT | O_CLOEXEC, mode);
	err = errno;
	mount_creds_leave();
	if (fd < 0) {
		fuse_reply_err(req, err);
		return;
	}
	/* the new file's descriptor is its node's (a regular file: no
	 * O_PATH one is needed), one openat and one close less */
	r = lookup_fd(fd, &e);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	n = node_of(e.ino);
	validator_of_stat(&e.attr, &v);
	r = handle_open(n, fi, false, &v);
	if (r < 0) {
		node_forget(n, 1);
		fuse_reply_err(req, -r);
		return;
	}
	/* a size cached from before the open would be stale: clio's size
	 * (0 after O_TRUNC), and the source's times if the file was there */
	if (e.attr.st_size != 0)
		node_stat(n, &e.attr);
	else
		node_attr(n, &e.attr);
	report_ino(&e.attr);
	fuse_reply_create(req, &e, fi);
}

/* The node's path relative to the source's root (mountahead.c). */
static int
node_relpath(void *arg, char *buf, size_t len)
{
	struct mnode *n = arg;
	char *abs = fd_path(n->fd);
	size_t rl = fs_rootpath != NULL ? strlen(fs_rootpath) : 0;
	int r = -ENOENT;

	if (abs != NULL && rl > 0 && strncmp(abs, fs_rootpath, rl) == 0) {
		const char *rel = abs + rl;
		while (*rel == '/')
			rel++;
		if (*rel != '\0' && strstr(rel, " (deleted)") == NULL)
			r = snprintf(buf, len, "%s", rel) < (int)len ? 0 : -ENAMETOOLONG;
	}
	free(abs);
	return r;
}

/* Keep n, and its clio device, while a read-ahead kick is queued. */
static void
node_pin(void *arg)
{
	struct mnode *n = arg;

	pthread_mutex_lock(&n->lock);
	n->nopen++;
	pthread_mutex_unlock(&n->lock);
}

static void
node_unpin(void *arg)
{
	struct mnode *n = arg;
	bool free_now;
	int r;

	pthread_mutex_lock(&n->lock);
	free_now = node_put_locked(n, &r);
	pthread_mutex_unlock(&n->lock);
	if (free_now)
		node_free(n);
	else
		node_trim();
}

static void
fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	struct fuse_file_info *fi)
{
	struct mhandle *h = handle_of(fi);
	struct mnode *n;
	double t0;
	size_t got;

	if (ino == mount_stats_ino()) {
		mount_stats_read(req, size, off, fi);
		return;
	}
	n = h->node;
	t0 = mount_io_begin();
	/* before the reply: after it, the handle may be released; not for
	 * the helper's own reads, which must not queue kicks after the
	 * close job of the last program's release */
	if (h->cf != NULL && !h->internal)
		mount_ahead_read(&n->ahead, (uint64_t)off, size,
				 node_relpath, node_pin, node_unpin, n);
	/* the reply may come before the read lets go of h->cf */
	pthread_mutex_lock(&n->lock);
	h->reads++;
	pthread_mutex_unlock(&n->lock);
	got = mount_reply_read(req, h->cf, h->fd, size, off);
	pthread_mutex_lock(&n->lock);
	if (--h->reads == 0)
		pthread_cond_broadcast(&h->reads_done);
	pthread_mutex_unlock(&n->lock);
	mount_io_end(false, got, t0);
}

/* Below this every file system takes a file's end: no need to ask. */
#define MAXBYTES_FLOOR (1ull << 31)

/* The largest size the source's file system allows n (its s_maxbytes,
 * per file on some: ext4's files without extents), found once by
 * bisection with lseek(2), which refuses an offset beyond it; UINT64_MAX
 * if it cannot be asked. */
/* A descriptor of the file underneath, for reading or, where it may
 * not be read, for writing; or -errno. */
static int
node_open_any(struct mnode *n)
{
	char path[64];
	int fd;

	proc_path(path, sizeof(path), n->fd);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 &&
	    (fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	return fd;
}

static uint64_t
node_maxbytes(struct mnode *n)
{
	uint64_t max = atomic_load(&n->maxbytes), lo, hi;
	int fd;

	if (max != 0)
		return max;
	if ((fd = node_open_any(n)) < 0)
		return UINT64_MAX;
	lo = MAXBYTES_FLOOR;	/* lseek to lo works, to hi + 1 fails */
	hi = INT64_MAX;
	if (lseek(fd, (off_t)hi, SEEK_SET) >= 0)
		lo = hi;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;
		if (lseek(fd, (off_t)mid, SEEK_SET) >= 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	close(fd);
	atomic_store(&n->maxbytes, lo);
	return lo;
}

/* A write of *size bytes at off through the mount, checked as the
 * source's file system would check it (generic_write_check_limits):
 * -EFBIG at or past its limit, else *size cut to end there; 0. */
static int
write_limit(struct mnode *n, uint64_t off, size_t *size)
{
	uint64_t max;

	if (off + *size <= MAXBYTES_FLOOR)
		return 0;
	max = node_maxbytes(n);
	if (off >= max)
		return -EFBIG;
	if (*size > max - off)
		*size = (size_t)(max - off);
	return 0;
}

static void
fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	 off_t off, struct fuse_file_info *fi)
{
	struct mhandle *h = handle_of(fi);
	ssize_t r;
	double t0;

	if (ino == mount_stats_ino()) {
		fuse_reply_err(req, EBADF);
		return;
	}
	t0 = mount_io_begin();
	if (h->cf == NULL) {
		/* cache=off or a direct handle; with O_APPEND (an
		 * append-only source) at the file's end, whatever off */
		r = pwrite(h->fd, buf, size, off);
		if (r < 0)
			r = -errno;
		else if (h->direct)
			node_wrote_direct(h->node);
	} else if ((r = write_limit(h->node, (uint64_t)off, &size)) == 0) {
		mount_ahead_write(&h->node->ahead, (uint64_t)off, size,
				  node_relpath, node_pin, node_unpin, h->node);
		node_write_begins(h->node);
		r = clio_pwrite(h->cf, buf, size, (uint64_t)off);
	}
	if (r < 0) {
		fuse_reply_err(req, (int)-r);
		mount_io_end(true, 0, t0);
		return;
	}
	handle_wrote(h, (uint64_t)r);
	fuse_reply_write(req, (size_t)r);
	mount_io_end(true, (size_t)r, t0);
}

static void
fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mhandle *h = handle_of(fi);
	int r = 0;

	if (ino != mount_stats_ino() && h->cf == NULL) {
		/* cache=off: as close(2) of the file would */
		int d = dup(h->fd);
		if (d < 0 || close(d) < 0)
			r = -errno;
	} else if (ino != mount_stats_ino() && atomic_exchange(&h->wrote, false)) {
		r = clio_writeback(h->cf);
		if (r == 0)
			node_settle(h->node, h->cf);
	}
	fuse_reply_err(req, -r);
}

static void
fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == mount_stats_ino()) {
		mount_stats_release(req, fi);
		return;
	}
	handle_close(handle_of(fi));
	fuse_reply_err(req, 0);
}

static void
fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	int r;

	if (ino == mount_stats_ino()) {
		fuse_reply_err(req, 0);
		return;
	}
	if (handle_of(fi)->cf == NULL) {
		int fd = handle_of(fi)->fd;
		r = (datasync ? fdatasync(fd) : fsync(fd)) < 0 ? -errno : 0;
	} else {
		r = clio_fsync(handle_of(fi)->cf);
	}
	fuse_reply_err(req, -r);
}

static void
fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mdir *d;
	int fd = acl_access(req, node_of(ino), R_OK);

	if (fd < 0) {
		fuse_reply_err(req, -fd);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fd = openat(node_of(ino)->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || (d->dp = fdopendir(fd)) == NULL) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		free(d);
		fuse_reply_err(req, e);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fuse_reply_open(req, fi);
}

/* Go to off, a cookie of an earlier entry (d_off), unless there. */
static void
dir_seek(struct mdir *d, off_t off)
{
	if (off != d->offset) {
		seekdir(d->dp, off);
		d->entry = NULL;
		d->offset = off;
	}
}

/* The next entry to return (the control file skipped), kept in d->entry
 * until dir_consume; NULL at the end (errno 0) or on an error (errno). */
static struct dirent *
dir_peek(struct mdir *d, fuse_ino_t ino)
{
	for (;;) {
		if (d->entry == NULL) {
			errno = 0;
			d->entry = readdir(d->dp);
			if (d->entry == NULL)
				return NULL;
		}
		if (!mount_stats_name(ino, d->entry->d_name))
			return d->entry;
		d->offset = d->entry->d_off;
		d->entry = NULL;
	}
}

/* The peeked entry went into a reply. */
static void
dir_consume(struct mdir *d)
{
	d->offset = d->entry->d_off;
	d->entry = NULL;
}

static void
fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	   struct fuse_file_info *fi)
{
	struct mdir *d = (struct mdir *)(uintptr_t)fi->fh;
	char *buf = malloc(size), *p;
	size_t left = size;

	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	dir_seek(d, off);
	p = buf;
	for (;;) {
		struct stat st;
		size_t len;

		if (dir_peek(d, ino) == NULL) {
			if (errno != 0 && left == size) {
				fuse_reply_err(req, errno);
				free(buf);
				return;
			}
			break;
		}
		memset(&st, 0, sizeof(st));
		st.st_ino = report_ino_of(node_of(ino)->dev, d->entry->d_ino);
		st.st_mode = (mode_t)d->entry->d_type << 12;
		len = fuse_add_direntry(req, p, left, d->entry->d_name, &st,
					d->entry->d_off);
		if (len > left)
			break;
		p += len;
		left -= len;
		dir_consume(d);
	}
	fuse_reply_buf(req, buf, size - left);
	free(buf);
}

static void
fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mdir *d = (struct mdir *)(uintptr_t)fi->fh;

	(void)ino;
	closedir(d->dp);
	free(d);
	fuse_reply_err(req, 0);
}

static void
fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct mdir *d = (struct mdir *)(uintptr_t)fi->fh;
	int fd = dirfd(d->dp), r;

	(void)ino;
	r = datasync ? fdatasync(fd) : fsync(fd);
	fuse_reply_err(req, r < 0 ? errno : 0);
}

static void
fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	if (ino == mount_stats_ino())
		ino = FUSE_ROOT_ID;
	if (fstatvfs(node_of(ino)->fd, &sv) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

/* --------------------------------------------------------- readdirplus */

/*
 * readdir with a lookup of each entry, which adds one to its lookup count
 * as do_lookup does; "." and "..", and an entry whose lookup fails (gone
 * meanwhile), go without one (node id 0: the kernel looks it up itself).
 * An entry that does not fit is left for the next call before it is
 * looked up; one that did not fit after all is forgotten again, and if
 * the reply cannot be sent the kernel has seen none of the lookups, so
 * all are forgotten.
 */
static void
fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	       struct fuse_file_info *fi)
{
	struct mdir *d = (struct mdir *)(uintptr_t)fi->fh;
	struct mnode *dir = node_of(ino), **got;
	size_t left = size, ngot = 0, i;
	char *buf, *p;
	/* a caller the source refuses search gets no attributes: the
	 * kernel's own lookup of each entry then fails as it should */
	bool search = acl_access(req, dir, X_OK) == 0;

	/* every entry takes at least the size of one with an empty name */
	got = calloc(size / fuse_add_direntry_plus(req, NULL, 0, "", NULL, 0) + 1,
		     sizeof(*got));
	buf = malloc(size);
	if (buf == NULL || got == NULL) {
		free(buf);
		free(got);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	dir_seek(d, off);
	p = buf;
	for (;;) {
		struct fuse_entry_param e;
		const char *name;
		size_t len;
		int r = -ENOENT;

		if (dir_peek(d, ino) == NULL) {
			if (errno != 0 && left == size) {
				fuse_reply_err(req, errno);
				free(buf);
				free(got);
				return;
			}
			break;
		}
		name = d->entry->d_name;
		if (fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0) > left)
			break;
		if (search && strcmp(name, ".") != 0 && strcmp(name, "..") != 0)
			r = do_lookup(dir, name, &e);
		if (r < 0) {
			memset(&e, 0, sizeof(e));
			e.attr.st_ino = report_ino_of(dir->dev, d->entry->d_ino);
			e.attr.st_mode = (mode_t)d->entry->d_type << 12;
		} else {
			report_ino(&e.attr);
		}
		len = fuse_add_direntry_plus(req, p, left, name, &e, d->entry->d_off);
		if (len > left) {
			if (r == 0)
				node_forget(node_of(e.ino), 1);
			break;
		}
		if (r == 0)
			got[ngot++] = node_of(e.ino);
		p += len;
		left -= len;
		dir_consume(d);
	}
	if (fuse_reply_buf(req, buf, size - left) != 0)
		for (i = 0; i < ngot; i++)
			node_forget(got[i], 1);
	free(buf);
	free(got);
}

/* -------------------------------------------------- extended attributes */

/*
 * The calls take /proc/self/fd/N of the node's descriptor, and the
 * plain (following) calls for every type: the magic link leads to the
 * object itself and is not followed any further, so a symlink's calls
 * reach the symlink, not its target, with no race against a rename (the
 * l* calls would act on the magic link).
 */

/* Reply to getxattr or listxattr: r bytes in buf, or with size 0 only
 * the size needed; a buffer too small is ERANGE from the call itself. */
static void
reply_xattr(fuse_req_t req, ssize_t r, size_t size, const char *buf)
{
	if (r < 0)
		fuse_reply_err(req, (int)-r);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)r);
	else
		fuse_reply_buf(req, buf, (size_t)r);
}

static void
fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char path[64], *buf = NULL;
	ssize_t r = 0;

	if (ino == mount_stats_ino()) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	proc_path(path, sizeof(path), node_of(ino)->fd);
	if (size > 0 && (buf = malloc(size)) == NULL)
		r = -ENOMEM;
	else if ((r = getxattr(path, name, buf, size)) < 0)
		r = -errno;
	reply_xattr(req, r, size, buf);
	free(buf);
}

/* Take the trusted.* names out of the list in buf[0..len): their new
 * length. */
static ssize_t
drop_trusted(char *buf, ssize_t len)
{
	ssize_t in = 0, out = 0;

	while (in < len) {
		size_t n = strnlen(buf + in, (size_t)(len - in)) + 1;
		if (strncmp(buf + in, "trusted.", 8) != 0) {
			memmove(buf + out, buf + in, n);
			out += (ssize_t)n;
		}
		in += (ssize_t)n;
	}
	return out;
}

/* The names a caller without CAP_SYS_ADMIN lists have no trusted.* (a
 * local file system leaves them out for it; the daemon, which has the
 * capability, gets them all), also in the size asked with size 0. */
static void
fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char path[64], *buf = NULL;
	ssize_t r = 0, room;

	if (ino == mount_stats_ino()) {
		reply_xattr(req, 0, size, NULL);
		return;
	}
	proc_path(path, sizeof(path), node_of(ino)->fd);
	if (mount_creds_sys_admin(req)) {
		if (size > 0 && (buf = malloc(size)) == NULL)
			r = -ENOMEM;
		else if ((r = listxattr(path, buf, size)) < 0)
			r = -errno;
		reply_xattr(req, r, size, buf);
		free(buf);
		return;
	}
	for (;;) { /* the whole list, then filtered */
		if ((room = listxattr(path, NULL, 0)) < 0) {
			r = -errno;
			break;
		}
		free(buf);
		if ((buf = malloc((size_t)room + 1)) == NULL) {
			r = -ENOMEM;
			break;
		}
		if ((r = listxattr(path, buf, (size_t)room + 1)) >= 0) {
			r = drop_trusted(buf, r);
			break;
		}
		if (errno != ERANGE) { /* else it grew meanwhile */
			r = -errno;
			break;
		}
	}
	if (r >= 0 && size > 0 && (size_t)r > size)
		r = -ERANGE;
	reply_xattr(req, r, size, buf);
	free(buf);
}

/* Put ino's /proc path in path for a change of its attributes; else
 * reply the error and return false. */
static bool
xattr_may_change(fuse_req_t req, fuse_ino_t ino, char *path, size_t len)
{
	if (ino == mount_stats_ino() || fs_ro) {
		fuse_reply_err(req, fs_ro ? EROFS : EPERM);
		return false;
	}
	proc_path(path, len, node_of(ino)->fd);
	return true;
}

static void
fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
	    const char *value, size_t size, int flags)
{
	char path[64];

	if (xattr_may_change(req, ino, path, sizeof(path)))
		fuse_reply_err(req, setxattr(path, name, value, size, flags) < 0 ? errno : 0);
}

static void
fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	char path[64];

	if (xattr_may_change(req, ino, path, sizeof(path)))
		fuse_reply_err(req, removexattr(path, name) < 0 ? errno : 0);
}

/* ------------------------------------------ fallocate, copy_file_range */

#define CHUNK (1u << 20)	/* zeros written, bytes copied, per step */
#define COPY_MAX (1u << 30)	/* per copy_file_range: the reply is 32 bits */

/* Write zeros over [off, end) through cf. */
static int
zero_range(clio_file *cf, uint64_t off, uint64_t end)
{
	size_t chunk = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
	char *z;
	int r = 0;

	if (off >= end)
		return 0;
	z = calloc(1, chunk);
	if (z == NULL)
		return -ENOMEM;
	while (off < end) {
		size_t n = end - off < chunk ? (size_t)(end - off) : chunk;
		ssize_t w = clio_pwrite(cf, z, n, off);
		if (w <= 0) {
			r = w < 0 ? (int)w : -EIO;
			break;
		}
		off += (uint64_t)w;
	}
	free(z);
	return r;
}

/* Grow the size readers see to size, through the node handle (as
 * setattr truncates); never shrinks. */
static int
node_grow(struct mnode *n, uint64_t size)
{
	int64_t cur;
	int r = 0;

	pthread_mutex_lock(&n->lock);
	if (n->cf == NULL || n->cdev_ro)
		r = -EBADF;
	else if ((cur = clio_fsize(n->cf)) < 0)
		r = (int)cur;
	else if ((uint64_t)cur < size)
		r = clio_ftruncate(n->cf, size);
	pthread_mutex_unlock(&n->lock);
	return r;
}

/* fallocate(mode) of [off, off+len) of the file underneath. */
static int
node_fallocate(struct mnode *n, int mode, off_t off, off_t len)
{
	char path[64];
	int fd, r = 0;

	proc_path(path, sizeof(path), n->fd);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fallocate(fd, mode, off, len) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* Allocate [off, off+len) of the file underneath; its size and data stay. */
static int
node_reserve(struct mnode *n, off_t off, off_t len)
{
	return node_fallocate(n, FALLOC_FL_KEEP_SIZE, off, len);
}

/*
 * PUNCH_HOLE of [off, end) (size: clio's): the object's dirty data is
 * written back (through the node handle, so that a write-back error
 * stays for the handles' flush and fsync), the file underneath punched,
 * so that its blocks are freed as a local punch frees them, and the
 * cache's buffers wholly inside dropped (clio_discard): reads then find
 * the hole; the partial buffers at either end get zeros through clio.
 * Until the drop, readers see the cached data of before the punch.  A
 * range inside one buffer, or a file system without PUNCH_HOLE: zeros
 * through clio only.
 */
static int
node_punch(struct mnode *n, clio_file *cf, uint64_t off, uint64_t end, uint64_t size)
{
	uint64_t zend = end < size ? end : size, head, tail;
	int r;

	head = (off + fs_bsize - 1) / fs_bsize * fs_bsize;
	tail = zend / fs_bsize * fs_bsize;
	if (zend == size)
		tail = zend;	/* the last buffer ends at the size */
	if (off < zend && head >= tail)
		return zero_range(cf, off, zend);	/* no whole buffer */
	pthread_mutex_lock(&n->lock);
	if (n->cf == NULL || n->cdev_ro)
		r = -EBADF;
	else
		r = clio_writeback(n->cf);
	pthread_mutex_unlock(&n->lock);
	if (r == 0)
		r = node_fallocate(n, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   (off_t)off, (off_t)(end - off));
	if (r == -EOPNOTSUPP)
		return zero_range(cf, off, zend);
	if (r < 0 || off >= zend)
		return r;
	r = clio_discard(cf, head, tail - head);
	if (r == 0)
		r = zero_range(cf, off, head);
	if (r == 0)
		r = zero_range(cf, tail, zend);
	return r;
}

/*
 * The file's newest data may be dirty in clio's cache, so fallocate
 * changes data and size only through clio: ZERO_RANGE writes zeros with
 * clio_pwrite, PUNCH_HOLE is node_punch's, and a mode without KEEP_SIZE
 * grows the size with
 * clio_ftruncate.  The allocation of mode 0, KEEP_SIZE and ZERO_RANGE is
 * fallocate(KEEP_SIZE) on the file underneath, which changes no byte
 * (a file system without it: EOPNOTSUPP).  cache=off: fallocate(2) on
 * the handle's descriptor.  Any other mode: EOPNOTSUPP.
 */
static void
fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
	     struct fuse_file_info *fi)
{
	struct mhandle *h = handle_of(fi);
	uint64_t end;
	int64_t sz;
	int r = 0;

	if (ino == mount_stats_ino()) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (fs_ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (off > INT64_MAX - len) {
		fuse_reply_err(req, EFBIG);
		return;
	}
	if (h->cf == NULL) {
		r = fallocate(h->fd, mode, off, len) < 0 ? errno : 0;
		if (r == 0 && h->direct)
			node_wrote_direct(h->node);
		fuse_reply_err(req, r);
		return;
	}
	end = (uint64_t)off + (uint64_t)len;
	node_write_begins(h->node);
	switch (mode) {
	case 0:
	case FALLOC_FL_KEEP_SIZE:
		r = node_reserve(h->node, off, len);
		if (r == 0 && mode == 0)
			r = node_grow(h->node, end);
		break;
	case FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE:
		sz = clio_fsize(h->cf);
		r = sz < 0 ? (int)sz : node_punch(h->node, h->cf, (uint64_t)off, end,
						   (uint64_t)sz);
		break;
	case FALLOC_FL_ZERO_RANGE:
	case FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE:
		if (mode & FALLOC_FL_ZERO_RANGE)
			r = node_reserve(h->node, off, len);
		sz = clio_fsize(h->cf);
		if (r == 0 && sz < 0)
			r = (int)sz;
		if (r == 0) {
			r = zero_range(h->cf, (uint64_t)off,
				       end < (uint64_t)sz ? end : (uint64_t)sz);
			handle_wrote(h, 0);
		}
		if (r == 0 && !(mode & FALLOC_FL_KEEP_SIZE))
			r = node_grow(h->node, end);
		break;
	default:
		r = -EOPNOTSUPP;
	}
	if (r == 0)
		handle_wrote(h, 0);
	fuse_reply_err(req, -r);
}

/*
 * SEEK_DATA and SEEK_HOLE (the kernel answers the other whences): the
 * file underneath answers, so holes are found as locally, once what the
 * caches hold is there: under the kernel's writeback cache its pages
 * (dropped: the kernel writes the dirty ones to this daemon first, on
 * other workers), then the object's dirty data in clio's (through the
 * node handle, as for a punch).  cache=off and direct handles: lseek(2)
 * on the handle's descriptor.  kernel_cache=off: ENOSYS, and the kernel
 * answers every lseek itself from then on (data up to the size): its
 * pages written through a shared mapping may be dirty, and dropping
 * them there could lose a write(2) on its way (see test-mount-share.sh).
 * The drop waits for the WRITEs of the dirty pages, which other FUSE
 * workers serve (libfuse runs at most 10): at most SEEK_FLUSHERS lseeks
 * wait so at once; one more gets ENOSYS as well, rather than
 * the workers all waiting for a WRITE none of them is left to serve.
 */
#define SEEK_FLUSHERS 3
static atomic_int seek_flushers;

static void
fs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
	 struct fuse_file_info *fi)
{
	struct mhandle *h;
	struct mnode *n;
	off_t r;
	int fd, err = 0;

	if (ino == mount_stats_ino()) {
		fuse_reply_err(req, ENXIO);	/* its size is 0 */
		return;
	}
	if (!fs_kernel_cache) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (atomic_fetch_add(&seek_flushers, 1) >= SEEK_FLUSHERS) {
		atomic_fetch_sub(&seek_flushers, 1);
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (mount_session != NULL)
		(void)fuse_lowlevel_notify_inval_inode(mount_session, ino, 0, 0);
	atomic_fetch_sub(&seek_flushers, 1);
	h = handle_of(fi);
	n = h->node;
	if (h->cf == NULL) {
		r = lseek(h->fd, off, whence);
		if (r < 0)
			fuse_reply_err(req, errno);
		else
			fuse_reply_lseek(req, r);
		return;
	}
	pthread_mutex_lock(&n->lock);
	if (n->cf != NULL && !n->cdev_ro)
		err = -clio_writeback(n->cf);
	pthread_mutex_unlock(&n->lock);
	if (err != 0) {
		fuse_reply_err(req, err);
		return;
	}
	if ((fd = node_open_any(n)) < 0) {
		fuse_reply_err(req, -fd);
		return;
	}
	r = lseek(fd, off, whence);
	err = errno;
	close(fd);
	if (r < 0)
		fuse_reply_err(req, err);
	else
		fuse_reply_lseek(req, r);
}

/*
 * Read through the source's handle and write through the destination's,
 * a chunk at a time, so the copy sees and leaves the cache's data
 * (cache=off: copy_file_range(2) on the descriptors).  Returns what was
 * copied (short at the source's end; at most COPY_MAX, the caller loops).
 * The control file: EOPNOTSUPP, and the kernel copies with read and write.
 */
static void
fs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
		   struct fuse_file_info *fi_in, fuse_ino_t ino_out,
		   off_t off_out, struct fuse_file_info *fi_out, size_t len,
		   int flags)
{
	struct mhandle *in = handle_of(fi_in), *out = handle_of(fi_out);
	size_t done = 0, chunk;
	ssize_t r = 0;
	char *buf;

	if (ino_in == mount_stats_ino() || ino_out == mount_stats_ino()) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (fs_ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (flags != 0 || off_in < 0 || off_out < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (len > COPY_MAX)
		len = COPY_MAX;
	if (out->append) {
		fuse_reply_err(req, EBADF);	/* as onto any O_APPEND file */
		return;
	}
	/* cache=off; else either may be a direct handle (its own
	 * descriptor) and the other a cached one */
	if (in->cf == NULL && out->cf == NULL) {
		loff_t oi = off_in, oo = off_out;
		r = copy_file_range(in->fd, &oi, out->fd, &oo, len, 0);
		if (r < 0)
			fuse_reply_err(req, errno);
		else
			fuse_reply_write(req, (size_t)r);
		return;
	}
	if (out->cf != NULL && (r = write_limit(out->node, (uint64_t)off_out, &len)) < 0) {
		fuse_reply_err(req, (int)-r);
		return;
	}
	if (out->cf != NULL)
		node_write_begins(out->node);
	chunk = len < CHUNK ? len : CHUNK;
	buf = malloc(chunk ? chunk : 1);
	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	while (done < len) {
		size_t n = len - done < chunk ? len - done : chunk;
		ssize_t got = in->cf != NULL ?
			clio_pread(in->cf, buf, n, (uint64_t)off_in + done) :
			pread(in->fd, buf, n, off_in + (off_t)done);
		if (got < 0 && in->cf == NULL)
			got = -errno;
		if (got <= 0) {
			r = got;
			break;
		}
		if (out->cf != NULL) {
			r = clio_pwrite(out->cf, buf, (size_t)got, (uint64_t)off_out + done);
		} else {
			r = pwrite(out->fd, buf, (size_t)got, off_out + (off_t)done);
			if (r < 0)
				r = -errno;
		}
		if (r <= 0)
			break;
		done += (size_t)r;
		if ((size_t)r < n)
			break;
	}
	free(buf);
	if (done > 0 && out->cf == NULL)
		node_wrote_direct(out->node);
	if (done > 0)
		handle_wrote(out, done);
	if (done == 0 && r < 0)
		fuse_reply_err(req, (int)-r);
	else
		fuse_reply_write(req, done);
}

const struct fuse_lowlevel_ops mountfs_ops = {
	.lookup = fs_lookup,
	.forget = fs_forget,
	.forget_multi = fs_forget_multi,
	.getattr = fs_getattr,
	.setattr = fs_setattr,
	.readlink = fs_readlink,
	.mknod = fs_mknod,
	.mkdir = fs_mkdir,
	.symlink = fs_symlink,
	.link = fs_link,
	.unlink = fs_unlink,
	.rmdir = fs_rmdir,
	.rename = fs_rename,
	.open = fs_open,
	.create = fs_create,
	.read = fs_read,
	.write = fs_write,
	.flush = fs_flush,
	.release = fs_release,
	.fsync = fs_fsync,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.releasedir = fs_releasedir,
	.fsyncdir = fs_fsyncdir,
	.statfs = fs_statfs,
	.readdirplus = fs_readdirplus,
	.setxattr = fs_setxattr,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.removexattr = fs_removexattr,
	.fallocate = fs_fallocate,
	.copy_file_range = fs_copy_file_range,
	.lseek = fs_lseek,
};

/* A program's descriptor of the file that the kernel knows by inode
 * number ino: "/proc/PID/fd/N" (malloc'ed), found by the ino: line of
 * /proc/PID/fdinfo/N, whose reading asks this daemon nothing; NULL if
 * none is found.  Another file system may have a file of that number:
 * the caller checks that the descriptor is one of the mount's. */
static char *
program_fd_of(uint64_t ino)
{
	DIR *pd = opendir("/proc");
	struct dirent *pe;
	char *found = NULL;
	long self = (long)getpid();

	if (pd == NULL)
		return NULL;
	while (found == NULL && (pe = readdir(pd)) != NULL) {
		char dir[64], *end;
		long pid = strtol(pe->d_name, &end, 10);
		struct dirent *fe;
		DIR *fdd;

		if (*end != '\0' || pid <= 0 || pid == self)
			continue;
		snprintf(dir, sizeof(dir), "/proc/%ld/fdinfo", pid);
		if ((fdd = opendir(dir)) == NULL)
			continue;
		while (found == NULL && (fe = readdir(fdd)) != NULL) {
			char info[sizeof(dir) + sizeof(fe->d_name) + 16], line[128];
			unsigned long long v = 0;
			bool got = false;
			FILE *f;

			if (fe->d_name[0] < '0' || fe->d_name[0] > '9')
				continue;
			snprintf(info, sizeof(info), "%s/%s", dir, fe->d_name);
			if ((f = fopen(info, "re")) == NULL)
				continue;
			while (!got && fgets(line, sizeof(line), f) != NULL)
				got = sscanf(line, "ino: %llu", &v) == 1;
			if (got && v == ino &&
			    (found = malloc(sizeof(info))) != NULL)
				snprintf(found, sizeof(info), "/proc/%ld/fd/%s", pid,
					 fe->d_name);
			fclose(f);
		}
		closedir(fdd);
	}
	closedir(pd);
	return found;
}

/* Room in *list (of *room entries) for entry n and the NULL after it:
 * 0, or -1 without memory (the list as it was). */
static int
writers_room(char ***list, size_t *room, size_t n)
{
	char **l2;

	if (n + 1 < *room)
		return 0;
	if ((l2 = realloc(*list, 2 * *room * sizeof(**list))) == NULL)
		return -1;
	*list = l2;
	*room *= 2;
	return 0;
}

/* The files that programs hold open for writing now (malloc'ed,
 * NULL-ended; NULL without memory): at a signal mount.c fsyncs each
 * through the mount, so that the kernel's dirty pages of it reach clio
 * before the loop ends.  Each is named by its path under the source's
 * root; a file whose descriptor here has lost its name (the name it was
 * looked up by removed) but that has another (a hard link) by a
 * program's descriptor of it, "/proc/PID/fd/N" (program_fd_of; mount.c
 * checks that it is on the mount).  A file without a name (unlinked) is
 * left out. */
char **
mountfs_writers(void)
{
	size_t n = 0, room = 16, nfar = 0, farroom = 0;
	char **list = malloc(room * sizeof(*list)), rel[PATH_MAX];
	struct stat *far = NULL;
	unsigned b;

	if (list == NULL)
		return NULL;
	pthread_mutex_lock(&tbl_lock);
	for (b = 0; b < NBUCKETS; b++) {
		struct mnode *m;
		for (m = tbl[b]; m != NULL; m = m->hnext) {
			struct stat st;
			bool w;

			pthread_mutex_lock(&m->lock);
			w = m->nwriters > 0;
			pthread_mutex_unlock(&m->lock);
			if (!w)
				continue;
			if (node_relpath(m, rel, sizeof(rel)) < 0) {
				/* another name left: found after the walk,
				 * away from the table's lock */
				if (fstat(m->fd, &st) < 0 || st.st_nlink == 0)
					continue;
				if (nfar == farroom) {
					size_t r2 = farroom ? 2 * farroom : 4;
					struct stat *f2 = realloc(far, r2 * sizeof(*far));
					if (f2 == NULL)
						continue;
					far = f2;
					farroom = r2;
				}
				far[nfar++] = st;
				continue;
			}
			if (writers_room(&list, &room, n) < 0)
				break;
			if ((list[n] = strdup(rel)) != NULL)
				n++;
		}
	}
	pthread_mutex_unlock(&tbl_lock);
	for (size_t i = 0; i < nfar; i++) {
		if (writers_room(&list, &room, n) < 0)
			break;
		report_ino(&far[i]);
		if ((list[n] = program_fd_of((uint64_t)far[i].st_ino)) != NULL)
			n++;
	}
	free(far);
	list[n] = NULL;
	return list;
}

/* ---------------------------------------------------------- life cycle */

int
mountfs_init(clio_cache *cache, uint32_t bsize, int rootfd, int ro, int cache_off,
	     int kernel_cache, unsigned idle_devices)
{
	struct stat st;

	if (fstatat(rootfd, "", &st, AT_EMPTY_PATH) < 0)
		return -errno;
	fs_cache = cache;
	fs_bsize = bsize;
	fs_ro = ro;
	fs_cache_off = cache_off != 0;
	fs_kernel_cache = kernel_cache != 0;
	fs_idle_max = idle_devices;
	/* kernel_cache=off: each path walk and stat asks the source, so a
	 * name replaced or a size changed behind the mount's back is seen */
	fs_timeout = fs_kernel_cache ? MOUNT_TIMEOUT : 0;
	fs_rootpath = fd_path(rootfd);
	fs_root.fd = rootfd;
	fs_root.dev = st.st_dev;
	fs_root.ino = st.st_ino;
	fs_root.nlookup = 1;
	pthread_mutex_init(&fs_root.lock, NULL);
	pthread_mutex_lock(&tbl_lock);
	fs_root.hnext = tbl[bucket(st.st_dev, st.st_ino)];
	tbl[bucket(st.st_dev, st.st_ino)] = &fs_root;
	pthread_mutex_unlock(&tbl_lock);
	return 0;
}

void
mountfs_foreach_dev(mount_stats_visit_fn fn, void *arg)
{
	unsigned b;

	pthread_mutex_lock(&tbl_lock);
	for (b = 0; b < NBUCKETS; b++) {
		struct mnode *n;
		for (n = tbl[b]; n != NULL; n = n->hnext) {
			char *path;
			const char *name;
			size_t rl;

			pthread_mutex_lock(&n->lock);
			if (n->cdev == NULL) {
				pthread_mutex_unlock(&n->lock);
				continue;
			}
			if (n->nopen == 0) {
				fn(arg, NULL, NULL, n->cdev);
				pthread_mutex_unlock(&n->lock);
				continue;
			}
			path = fd_path(n->fd);
			name = path != NULL ? path : "?";
			rl = fs_rootpath != NULL ? strlen(fs_rootpath) : 0;
			if (rl > 0 && strncmp(name, fs_rootpath, rl) == 0 &&
			    name[rl] == '/')
				name += rl + 1;
			fn(arg, name, path != NULL ? path : "?", n->cdev);
			pthread_mutex_unlock(&n->lock);
			free(path);
		}
	}
	pthread_mutex_unlock(&tbl_lock);
}

/* Close the data of a node the kernel left open (an aborted connection). */
static int
node_teardown(struct mnode *n)
{
	int r = 0, r2;

	while (n->handles != NULL) {
		struct mhandle *h = n->handles;
		n->handles = h->next;
		r2 = handle_close_file(h);
		if (r == 0)
			r = r2;
		free(h);
	}
	n->nopen = 0;
	r2 = node_close_data(n);
	return r ? r : r2;
}

int
mountfs_fini(void)
{
	unsigned b;
	int r = 0, r2;

	pthread_mutex_lock(&tbl_lock);
	for (b = 0; b < NBUCKETS; b++) {
		while (tbl[b] != NULL) {
			struct mnode *n = tbl[b];
			tbl[b] = n->hnext;
			r2 = node_teardown(n);
			if (r == 0)
				r = r2;
			if (n != &fs_root)
				node_free(n);
		}
	}
	pthread_mutex_unlock(&tbl_lock);
	close(fs_root.fd);
	pthread_mutex_destroy(&fs_root.lock);
	free(fs_rootpath);
	fs_rootpath = NULL;
	return r;
}
