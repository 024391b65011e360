/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mountnfs.c - `clio mount nfs://HOST/EXPORT[?QUERY] MNT`: a whole NFSv3
 * export through FUSE, the names and attributes through libnfs, the data
 * of every regular file through clio's cache on an nfs:// device.
 *
 * Names.  One libnfs context (meta, under meta_lock) carries every
 * name and attribute call: LOOKUP walks, GETATTR, READDIRPLUS, CREATE,
 * MKDIR, MKNOD, REMOVE, RMDIR, RENAME, LINK, SYMLINK, READLINK, SETATTR,
 * FSSTAT, by path from the export's root (libnfs's high-level calls;
 * its directory cache and read-ahead are off).  A directory is listed
 * whole at opendir, and again at a readdir from 0 (rewinddir).  A FUSE
 * node id is the address of a struct nnode, found by the server's
 * fileid in a hash table; a node holds its last known path (under
 * path_lock): a lookup or a listing sets it, a rename through the mount
 * rewrites it and those below it.  Lookup counts as in mountfs.c.  A
 * server may give a removed file's fileid to a new file (ext4 reuses
 * inode numbers at once): a lookup, listing or open that finds a node's
 * file changed asks its device (GETATTR by its handle; a regular file's
 * node without one, found under another name: whether its old name
 * still names it), and a stale handle (a name gone) makes the node the
 * old file's (gone): out of the table, under its old name, its opens
 * failing with ESTALE (the kernel looks the name up anew), and the new
 * file gets a node of its own (node_get_st).  A
 * lost connection fails the names' calls on it at once (libnfs's
 * reconnection is off: its synchronous calls would wait for a dead
 * server forever); a call unanswered for the URL's timeo= (libnfs's
 * EINTR) fails with ETIMEDOUT;
 * a result that says so (EIO, ETIMEDOUT, ...) marks the context dead, and
 * the next call builds it anew (meta_enter: MOUNT again), failing while
 * the server is unreachable.  The URL's query is checked at the start as
 * its devices check it (nfs_url_check): a bad value fails the mount.
 *
 * Data.  The first open of a regular file opens the device
 * nfs://HOST/EXPORT/PATH?QUERY (PATH's ? & % percent-encoded; its own
 * TCP connection, MOUNT, LOOKUP
 * walk, FSINFO and GETATTR: about 5 + depth RPCs) and a node handle
 * (CLIO_KEEP) that lives as long as the device; each FUSE open gets its
 * own clio_file on it.  The device holds the file's handle, so a rename
 * does not disturb it.  A device the server will not open for writing
 * (EACCES, EROFS: a read-only export, a root-squashed identity) is opened
 * read-only for a reader; a writer reopens it writable when no handle
 * is open on it, EACCES otherwise.  At the last release the device is idle
 * (mountidle.c, at most idle_devices, default NFS_IDLE_MAX), its clean
 * and dirty buffers kept; it is closed (the node handle's close writes
 * back and COMMITs, then clio_cache_forget) when evicted (all of them when
 * a device's open runs out of descriptors), when the kernel
 * forgets the node, when its file is removed through the mount, and at
 * the end.  A file unlinked through the mount while open there, or
 * renamed over there, is first renamed to .clio-silly-FILEID in its
 * directory (an NFS client's "silly rename"): its descriptors go on
 * reading and writing it, and its last release closes the device and
 * removes that name (moved, as the paths are, by a rename of its
 * directory through the mount).
 *
 * The attribute cache (mount.h's struct mount_nfs_opts).  A node's
 * attributes are trusted for its timeout: acregmin (3 s) for a file,
 * acdirmin (30 s) for a directory when they were last seen changed,
 * doubling at each refresh that finds them unchanged, up to acregmax
 * (60 s) / acdirmax (60 s); actimeo=N sets all four, noac makes them 0.
 * A name made, removed or renamed through the mount expires its
 * directory's attributes (a rename, the object's too: its ctime); a
 * name removed or replaced, those of every
 * file with more than one link (links_gen: it may have been one of its
 * names).  A write through the mount shows its time as the file's mtime
 * and ctime until the server's version is recorded (wtime).
 * A refresh that finds a file's version (fileid, size, mtime, ctime)
 * changed while no handle of this mount writes it drops its stale clean
 * buffers (clio_revalidate); the kernel drops its pages on the same
 * reply (auto_inval_data: the mtime or size it sees changed).  The
 * kernel's entry timeouts are what is left of the node's; its attribute
 * timeout of a regular file is 0 (else an open could not refresh the
 * size the kernel reads up to), so stat(2) asks this daemon, which
 * answers from the cache.  Negative entries are not cached.
 *
 * Close-to-open (the default).  Each open looks its name up by path
 * (LOOKUPs and GETATTR, unless the device was opened just now, which
 * did) and revalidates the object with it; keep_cache only when nothing
 * was dropped.  A name that now names another file (one renamed over it
 * on the server) or none fails the open with ESTALE, on which the
 * kernel looks the name up anew and opens what it names.  nocto: the open
 * uses the cached attributes while they are valid.  Each flush (close)
 * of a handle that wrote: clio_fsync (write back and COMMIT), then
 * GETATTR, recorded with clio_validator_set so the next open keeps
 * what this mount wrote (a utimens writes back first: WRITEs after it
 * would set the mtime again); an fsync of such a handle records it too
 * (the size and mtime that stat(2) shows then are the server's).
 *
 * lease: this mount asserts it is the export's only writer (what an
 * NFSv4 write delegation would promise).  A file is revalidated at its
 * first open only; close writes nothing back (the cache does: by age,
 * dirty limits, fsync, eviction of the idle device, unmount); attribute
 * and entry timeouts are NFS_LEASE_TIMEOUT, the kernel's too, and opens
 * keep the kernel's pages.  Another writer's changes are then seen late
 * or never, and a crash of this daemon loses what was not yet written
 * back (fsync still means durable).
 *
 * Locks: names_lock first (shared by every call that goes by a node's
 * path, from the path to the reply; a rename's alone, so that no rename
 * through the mount moves a directory under such a call; taken only in
 * the calls the kernel makes, never again inside one); then tbl_lock,
 * then a node's lock, then meta_lock or the idle list's (whose walker
 * only tries node locks); the cache's own locks come last.  path_lock
 * (the paths) is taken last, holding no other lock after it.
 *
 * The GETATTR after a close goes through the file's device
 * (clio_dev_version: one RPC by its handle, not a LOOKUP walk and a
 * GETATTR); a version found changed there expires the node's other
 * attributes, which the next getattr fetches by path.
 *
 * Credentials: the calls that create objects carry the caller's uid and
 * gid (AUTH_SYS) unless the URL names uid= or gid=; others the mount's.
 * Permissions are checked by the kernel (default_permissions) and the
 * server.  libnfs's LINK follows a symbolic link: a hard link to one is
 * refused (EPERM).
 */
#include <sys/time.h>
#include <nfsc/libnfs.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "util.h"
#include "mount.h"

#define NBUCKETS 4096

struct nnode {
	struct nnode *hnext;	/* under tbl_lock */
	uint64_t fileid;
	char *path;		/* under path_lock: "" is the root */
	uint64_t nlookup;	/* under tbl_lock */
	bool unhashed;		/* under tbl_lock */
	pthread_mutex_t lock;	/* the fields below */
	struct stat st;		/* the attribute cache */
	bool have_st;
	double expires, timeo;
	uint64_t links_seen;	/* links_gen when st was stored */
	_Atomic int64_t wtime;	/* ns: a write here not yet in st's mtime */
	int nopen, nwriters;
	bool hidden;		/* unlinked while open: under silly */
	char *silly;		/* under path_lock: the name it hides under */
	bool validated;		/* lease: revalidated once */
	bool dev_check;		/* changed on the server since cdev was opened */
	bool gone;		/* cdev's file is gone from the server, its
				 * fileid another file's: out of the table */
	clio_dev *cdev;
	bool cdev_ro;		/* opened read-only: the server refused writing */
	clio_file *cf;		/* node handle, as long as cdev */
	char *spec;		/* cdev's device string */
	struct mount_idle idle;	/* listed while cdev is open and nopen 0 */
	struct nhandle *handles;
};

struct nhandle {
	struct nhandle *next;	/* the node's, under its lock */
	struct nnode *n;
	clio_file *cf;
	bool writer;		/* counted in n->nwriters */
	atomic_bool wrote;
};

static struct nfs_context *meta; /* NULL: being built anew (meta_enter) */
static char *meta_url;		/* libnfs's URL of the export */
static int meta_timeo = 30;	/* s: the URL's timeo= */
static bool meta_dead;		/* a call found the connection gone */
static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t tbl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t path_lock = PTHREAD_MUTEX_INITIALIZER;
/* shared by the calls that name an object by its parent's path, from
 * building the path to the reply; a rename's alone, from building its
 * paths to moving the nodes' (writers first: renames are not starved) */
static pthread_rwlock_t names_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static struct nnode *tbl[NBUCKETS];
static struct nnode root;
static clio_cache *fs_cache;
static struct mount_nfs_opts nopts;
static int fs_ro;
static unsigned fs_idle_max;
static char *dev_base;		/* "nfs://HOST/EXPORT" */
static char *dev_query;		/* "?..." or "" */
static int def_uid, def_gid;
static bool creds_fixed;	/* uid= or gid= in the URL */
static atomic_uint_fast64_t links_gen; /* names removed or replaced so far */

static struct nnode *
node_of(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &root : (struct nnode *)(uintptr_t)ino;
}

static fuse_ino_t
ino_of(struct nnode *n)
{
	return n == &root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

/* ----------------------------------------------------- attribute cache */

static void
stat_of(struct stat *st, const struct nfs_stat_64 *s)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = s->nfs_ino;
	st->st_mode = (mode_t)s->nfs_mode;
	st->st_nlink = (nlink_t)s->nfs_nlink;
	st->st_uid = (uid_t)s->nfs_uid;
	st->st_gid = (gid_t)s->nfs_gid;
	st->st_rdev = (dev_t)s->nfs_rdev;
	st->st_size = (off_t)s->nfs_size;
	st->st_blksize = (blksize_t)s->nfs_blksize;
	st->st_blocks = (blkcnt_t)s->nfs_blocks;
	st->st_atim.tv_sec = (time_t)s->nfs_atime;
	st->st_atim.tv_nsec = (long)s->nfs_atime_nsec;
	st->st_mtim.tv_sec = (time_t)s->nfs_mtime;
	st->st_mtim.tv_nsec = (long)s->nfs_mtime_nsec;
	st->st_ctim.tv_sec = (time_t)s->nfs_ctime;
	st->st_ctim.tv_nsec = (long)s->nfs_ctime_nsec;
}

static int64_t
ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static bool
same_version(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       ts_ns(&a->st_mtim) == ts_ns(&b->st_mtim) &&
	       ts_ns(&a->st_ctim) == ts_ns(&b->st_ctim);
}

/* Store fresh attributes (n->lock held): the timeout restarts at its
 * minimum when they changed and doubles while they do not.  Changed? */
static bool
attr_store(struct nnode *n, const struct stat *st)
{
	bool dir = S_ISDIR(st->st_mode);
	double lo = dir ? nopts.acdirmin : nopts.acregmin;
	double hi = dir ? nopts.acdirmax : nopts.acregmax;
	bool changed = !n->have_st || !same_version(&n->st, st);

	if (nopts.lease)
		n->timeo = NFS_LEASE_TIMEOUT;
	else if (changed || n->timeo < lo)
		n->timeo = lo;
	else
		n->timeo = n->timeo * 2 > hi ? hi : n->timeo * 2;
	n->st = *st;
	n->have_st = true;
	n->expires = now_monotonic() + n->timeo;
	n->links_seen = atomic_load(&links_gen);
	return changed;
}

/* May n's cached attributes answer (n->lock held)?  Not after they
 * expired, nor for a file with more than one name after any name was
 * removed through the mount: it may have been one of them (its link
 * count, its ctime). */
static bool
attr_valid(const struct nnode *n)
{
	return n->have_st && now_monotonic() < n->expires &&
	       (n->st.st_nlink <= 1 || S_ISDIR(n->st.st_mode) ||
		n->links_seen == atomic_load(&links_gen));
}

/* A name in directory ino was made, removed or replaced through the
 * mount: its cached attributes (mtime, ctime, link count) are stale. */
static void
dir_changed(fuse_ino_t ino)
{
	struct nnode *n = node_of(ino);

	pthread_mutex_lock(&n->lock);
	n->expires = 0;
	pthread_mutex_unlock(&n->lock);
}

/* attr_store, and a changed file nobody here writes loses its stale
 * buffers (n->lock held). */
static void
attr_refresh(struct nnode *n, const struct stat *st)
{
	struct clio_validator v;
	bool changed = attr_store(n, st);

	if (changed && n->cdev != NULL)
		n->dev_check = true; /* node_open_dev: is its handle stale? */
	if (changed && n->cf != NULL && n->nwriters == 0 &&
	    !nopts.lease && S_ISREG(st->st_mode)) {
		validator_of_stat(st, &v);
		(void)clio_revalidate(n->cf, &v);
	}
}

/* What the kernel may cache (n->lock held). */
static double
entry_timeout(const struct nnode *n)
{
	double left = n->expires - now_monotonic();

	return left > 0 ? left : 0;
}

static double
attr_timeout(const struct nnode *n)
{
	if (nopts.lease)
		return NFS_LEASE_TIMEOUT;
	return S_ISREG(n->st.st_mode) ? 0 : entry_timeout(n);
}

static int64_t
realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return ts_ns(&t);
}

/* The attributes as the mount shows them (n->lock held): the size and,
 * until its version is recorded, the time of this mount's writes.  The
 * inode number is the server's fileid (as in a listing), not the node's
 * id: it stays the same across mounts, as programs that keep inode
 * numbers (git's index, backup tools) expect. */
static void
attr_shown(struct nnode *n, struct stat *st)
{
	int64_t w = atomic_load(&n->wtime);

	*st = n->st;
	st->st_ino = (ino_t)n->fileid;
	if (n->cf != NULL && S_ISREG(st->st_mode))
		st->st_size = (off_t)clio_fsize(n->cf);
	if (S_ISREG(st->st_mode) && w > ts_ns(&st->st_mtim)) {
		st->st_mtim.tv_sec = st->st_ctim.tv_sec = (time_t)(w / 1000000000);
		st->st_mtim.tv_nsec = st->st_ctim.tv_nsec = (long)(w % 1000000000);
	}
}

/* ------------------------------------------------------------ nodes */

static unsigned
bucket(uint64_t fileid)
{
	return (unsigned)((fileid * 0x9e3779b97f4a7c15ull) >> 52) % NBUCKETS;
}

/* The path libnfs takes for n (path_lock held), malloc'd; child may be NULL. */
static char *
path_join(const struct nnode *n, const char *child)
{
	size_t pl = strlen(n->path), cl = child ? strlen(child) : 0;
	char *p = malloc(pl + cl + 3);

	if (p == NULL)
		return NULL;
	memcpy(p, n->path, pl);
	p[pl] = '\0';
	if (child != NULL) {
		p[pl] = '/';
		memcpy(p + pl + 1, child, cl + 1);
	} else if (pl == 0) {
		strcpy(p, "/");
	}
	return p;
}

static char *
path_of(struct nnode *n, const char *child)
{
	char *p;

	pthread_mutex_lock(&path_lock);
	p = path_join(n, child);
	pthread_mutex_unlock(&path_lock);
	return p;
}

/* Find or make the node of fileid, now at path (taken over); one lookup
 * more.  NULL without memory. */
static struct nnode *
node_get(uint64_t fileid, char *path)
{
	unsigned b = bucket(fileid);
	struct nnode *n, **pp;

	pthread_mutex_lock(&tbl_lock);
	if (fileid == root.fileid) {
		free(path);
		pthread_mutex_unlock(&tbl_lock);
		return &root;
	}
	for (pp = &tbl[b]; (n = *pp) != NULL; pp = &n->hnext)
		if (n->fileid == fileid)
			break;
	if (n != NULL) {
		bool gone;
		pthread_mutex_lock(&n->lock);
		gone = n->gone;
		pthread_mutex_unlock(&n->lock);
		if (gone) {
			/* its fileid names another file now: a node of its
			 * own; the old one lives on for the kernel's
			 * references, out of the table */
			*pp = n->hnext;
			n = NULL;
		}
	}
	if (n == NULL) {
		n = calloc(1, sizeof(*n));
		if (n == NULL) {
			pthread_mutex_unlock(&tbl_lock);
			free(path);
			return NULL;
		}
		n->fileid = fileid;
		pthread_mutex_init(&n->lock, NULL);
		n->hnext = tbl[b];
		tbl[b] = n;
	}
	pthread_mutex_lock(&path_lock);
	free(n->path);
	n->path = path;
	pthread_mutex_unlock(&path_lock);
	n->nlookup++;
	pthread_mutex_unlock(&tbl_lock);
	return n;
}

/* Close n's device (n->lock held, n not open): written back and
 * committed; the first error. */
static int
node_close_dev(struct nnode *n)
{
	int r = 0, e;

	if (n->cdev == NULL)
		return 0;
	mount_idle_del(&n->idle);
	r = clio_close(n->cf);
	e = clio_cache_forget(fs_cache, n->cdev);
	if (r == 0)
		r = e;
	mount_stats_retire(n->cdev);
	clio_dev_close(n->cdev);
	if (r < 0)
		fprintf(stderr, "clio mount: %s: write-back: %s\n", n->spec, strerror(-r));
	n->cdev = NULL;
	n->cf = NULL;
	atomic_store(&n->wtime, 0);
	free(n->spec);
	n->spec = NULL;
	n->validated = false;
	n->dev_check = false;
	return r;
}

static bool
idle_claim(struct mount_idle *e)
{
	struct nnode *n = (struct nnode *)((char *)e - offsetof(struct nnode, idle));

	if (pthread_mutex_trylock(&n->lock) != 0)
		return false;
	if (n->nopen > 0) {
		pthread_mutex_unlock(&n->lock);
		return false;
	}
	return true;	/* returned locked */
}

/* Close idle devices, the least recently used first, until at most max
 * are left. */
static void
idle_trim_to(unsigned max)
{
	struct mount_idle *e;

	while ((e = mount_idle_take_oldest(max, idle_claim)) != NULL) {
		struct nnode *n = (struct nnode *)((char *)e - offsetof(struct nnode, idle));
		node_close_dev(n);
		pthread_mutex_unlock(&n->lock);
	}
}

static void
idle_trim(void)
{
	idle_trim_to(fs_idle_max);
}

static void
node_free(struct nnode *n)
{
	pthread_mutex_destroy(&n->lock);
	free(n->path);
	free(n);
}

/* Take off nlookup; at zero the node leaves the table, its idle device
 * is closed and it is freed unless open (the last release frees it). */
static void
node_forget(struct nnode *n, uint64_t nlookup)
{
	struct nnode **pp;
	bool free_it;

	if (n == &root)
		return;
	pthread_mutex_lock(&tbl_lock);
	n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
	if (n->nlookup > 0) {
		pthread_mutex_unlock(&tbl_lock);
		return;
	}
	for (pp = &tbl[bucket(n->fileid)]; *pp != NULL; pp = &(*pp)->hnext)
		if (*pp == n) {
			*pp = n->hnext;
			break;
		}
	n->unhashed = true;
	pthread_mutex_lock(&n->lock);
	free_it = n->nopen == 0;
	if (free_it)
		node_close_dev(n);
	pthread_mutex_unlock(&n->lock);
	pthread_mutex_unlock(&tbl_lock);
	if (free_it)
		node_free(n);
}

/* ------------------------------------------------------------ libnfs */

/* A new meta context for meta_url, the export mounted (meta_lock held
 * or not yet shared); the server's error in err. */
static int
meta_connect(char *err, size_t errlen)
{
	struct nfs_url *u;
	int r;

	meta = nfs_init_context();
	if (meta == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	nfs_set_readahead(meta, 0);
	nfs_set_dircache(meta, 0);
	nfs_set_timeout(meta, meta_timeo * 1000);
	/* a lost connection fails the calls on it at once (libnfs would
	 * reconnect forever, its calls waiting): meta_enter() reconnects */
	nfs_set_autoreconnect(meta, 0);
	u = nfs_parse_url_dir(meta, meta_url);
	if (u == NULL) {
		snprintf(err, errlen, "bad URL (nfs://HOST/EXPORT): %s", nfs_get_error(meta));
		return -EINVAL;
	}
	r = nfs_mount(meta, u->server, u->path);
	if (r != 0)
		snprintf(err, errlen, "cannot mount %s:%s: %s", u->server, u->path,
			 nfs_get_error(meta));
	nfs_destroy_url(u);
	return r == 0 ? 0 : r < 0 ? r : -EIO;
}

/* Take meta_lock (always); a context a call found dead is built anew
 * first: 0, or its error (then no call). */
static int
meta_enter(void)
{
	char err[1024];
	int r;

	pthread_mutex_lock(&meta_lock);
	if (!meta_dead && meta != NULL)
		return 0;
	if (meta != NULL)
		nfs_destroy_context(meta);
	meta = NULL;
	r = meta_connect(err, sizeof(err));
	if (r < 0) {
		if (meta != NULL)
			nfs_destroy_context(meta);
		meta = NULL;
		return r;
	}
	meta_dead = false;
	return 0;
}

/* Release meta_lock; a result that says the connection is gone marks
 * the context dead.  Returns r. */
static int
meta_leave(int r)
{
	switch (-r) {
	case EINTR: /* libnfs's timeout: no answer within timeo= */
		r = -ETIMEDOUT;
		/* fall through */
	case EIO: case ETIMEDOUT: case EFAULT: case ENOTCONN: case ECONNRESET:
	case ECONNREFUSED: case EPIPE:
		meta_dead = true;
		break;
	}
	pthread_mutex_unlock(&meta_lock);
	return r;
}

/* Run a libnfs call under meta_lock: r is its result (0 or -errno). */
#define META(r, call)                                    \
	do {                                             \
		(r) = meta_enter();                      \
		if ((r) == 0)                            \
			(r) = (call);                    \
		(r) = meta_leave(r);                     \
	} while (0)

static int
nerr(int r)
{
	return r == 0 ? 0 : r < 0 ? -r : EIO;
}

/* GETATTR of path (LOOKUPs first); 0 or an errno. */
static int
meta_stat(const char *path, struct stat *st)
{
	struct nfs_stat_64 s;
	int r;

	META(r, nfs_lstat64(meta, path, &s));
	if (r == 0)
		stat_of(st, &s);
	return nerr(r);
}

/* GETATTR of n by its path. */
static int
node_stat(struct nnode *n, struct stat *st)
{
	char *path;
	int r;

	path = path_of(n, NULL);
	r = path ? meta_stat(path, st) : ENOMEM;
	free(path);
	return r;
}

/* The caller's credentials on the meta context for a creating call
 * (meta_lock held), and back. */
static void
creds_enter(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	if (creds_fixed)
		return;
	nfs_set_uid(meta, (int)ctx->uid);
	nfs_set_gid(meta, (int)ctx->gid);
}

static void
creds_leave(void)
{
	if (creds_fixed)
		return;
	nfs_set_uid(meta, def_uid);
	nfs_set_gid(meta, def_gid);
}

/* ----------------------------------------------------------- replies */

static bool dev_stale(struct nnode *n);

/* The path of fileid's node in the table when it is not path (a copy),
 * else NULL. */
static char *
node_moved_from(uint64_t fileid, const char *path)
{
	struct nnode *n;
	char *old = NULL;

	pthread_mutex_lock(&tbl_lock);
	for (n = tbl[bucket(fileid)]; n != NULL; n = n->hnext)
		if (n->fileid == fileid)
			break;
	if (n != NULL) {
		pthread_mutex_lock(&path_lock);
		if (n->path != NULL && strcmp(n->path, path) != 0)
			old = strdup(n->path);
		pthread_mutex_unlock(&path_lock);
	}
	pthread_mutex_unlock(&tbl_lock);
	return old;
}

/* Is n's file (n->lock held) gone from the server, st another file under
 * its fileid (an inode number the server reused)?  Asked only when its
 * version changed: its device's handle is stale; without a device, a
 * regular file found under another name (old, its last one) is not
 * under that name any more (renamed, or removed: its node is left to the
 * old name either way, no data cached). */
static bool
node_reused(struct nnode *n, const struct stat *st, const char *old)
{
	struct stat ost;
	int r;

	if (!n->have_st || same_version(&n->st, st))
		return false;
	if (n->cdev != NULL)
		return dev_stale(n);
	if (old == NULL || !S_ISREG(st->st_mode))
		return false;
	r = meta_stat(old, &ost);
	return r == ENOENT || (r == 0 && (uint64_t)ost.st_ino != n->fileid);
}

/* The node of a name just looked up with attributes st (node_get), its
 * lock held and its attributes refreshed from st; NULL without memory.
 * A node whose file is gone from the server (node_reused) is left to the
 * kernel's references to the old file (their opens fail with ESTALE, and
 * the kernel looks the names up anew), under its old name, and a new
 * node is made. */
static struct nnode *
node_get_st(const struct stat *st, char *path)
{
	char *old = node_moved_from((uint64_t)st->st_ino, path);
	struct nnode *n = node_get((uint64_t)st->st_ino, path);

	if (n == NULL) {
		free(old);
		return NULL;
	}
	pthread_mutex_lock(&n->lock);
	if (node_reused(n, st, old)) {
		n->gone = true;
		pthread_mutex_unlock(&n->lock);
		path = path_of(n, NULL);
		if (old != NULL) {
			pthread_mutex_lock(&path_lock);
			free(n->path);
			n->path = old;
			old = NULL;
			pthread_mutex_unlock(&path_lock);
		}
		node_forget(n, 1);
		if (path == NULL || (n = node_get((uint64_t)st->st_ino, path)) == NULL)
			return NULL;
		pthread_mutex_lock(&n->lock);
	}
	free(old);
	attr_refresh(n, st);
	return n;
}

/* Look up path (taken over), add a lookup and reply with the entry;
 * err (an errno of the call that made it) fails first. */
static void
reply_entry_path(fuse_req_t req, char *path, int err)
{
	struct fuse_entry_param e;
	struct stat st;
	struct nnode *n;

	if (err == 0 && path == NULL)
		err = ENOMEM;
	if (err == 0)
		err = meta_stat(path, &st);
	if (err != 0) {
		free(path);
		if (err == ENOENT && !nopts.lease) {
			memset(&e, 0, sizeof(e)); /* a negative entry, not kept */
			fuse_reply_entry(req, &e);
		} else {
			fuse_reply_err(req, err);
		}
		return;
	}
	n = node_get_st(&st, path);
	if (n == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(&e, 0, sizeof(e));
	attr_shown(n, &e.attr);
	e.ino = ino_of(n);
	e.entry_timeout = entry_timeout(n);
	e.attr_timeout = attr_timeout(n);
	pthread_mutex_unlock(&n->lock);
	if (fuse_reply_entry(req, &e) != 0)
		node_forget(n, 1);
}

static int dev_version(struct nnode *n);

/* Reply with n's attributes, refreshed when they expired (or force);
 * reval: a change found drops stale buffers.  A file open here (fh: asked
 * through an open file, the kernel before a read) whose name no longer
 * names it (renamed or removed on the server) is asked by its device's
 * handle: fstat and read go on, as with a local file. */
static void
reply_attr(fuse_req_t req, struct nnode *n, bool force, bool reval, bool fh)
{
	struct stat st;
	double to;
	int err = 0;

	pthread_mutex_lock(&n->lock);
	if (force || !attr_valid(n)) {
		err = node_stat(n, &st);
		/* the name it was known by is gone (unlinked through the mount
		 * with another link left, removed or replaced on the server):
		 * ESTALE has the kernel look its names up anew */
		if (n != &root && (err == ENOENT ||
				   (err == 0 && (uint64_t)st.st_ino != n->fileid)))
			err = ESTALE;
		if (err == ESTALE && (fh || n->nopen > 0) && n->cdev != NULL &&
		    dev_version(n) == 0) {
			/* size and times by the handle, the rest as cached */
			err = 0;
			if (reval && n->nwriters == 0 && !nopts.lease) {
				struct clio_validator v;
				validator_of_stat(&n->st, &v);
				(void)clio_revalidate(n->cf, &v);
			}
		} else if (err == 0 && reval) {
			attr_refresh(n, &st);
		} else if (err == 0) {
			attr_store(n, &st);
		}
	}
	if (err != 0) {
		pthread_mutex_unlock(&n->lock);
		fuse_reply_err(req, err);
		return;
	}
	attr_shown(n, &st);
	to = attr_timeout(n);
	pthread_mutex_unlock(&n->lock);
	fuse_reply_attr(req, &st, to);
}

/* The path of name in parent for a call that makes, changes or removes
 * it; NULL after an error reply (the control file's name is refused). */
static char *
name_path(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char *path;

	if (mount_stats_guard(req, parent, name))
		return NULL;
	if ((path = path_of(node_of(parent), name)) == NULL)
		fuse_reply_err(req, ENOMEM);
	return path;
}

/* ----------------------------------------------------------------- ops */

static void
nfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (mount_stats_name(parent, name))
		mount_stats_lookup(req);
	else
		reply_entry_path(req, path_of(node_of(parent), name), 0);
}

static void
nfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	if (ino != mount_stats_ino())
		node_forget(node_of(ino), nlookup);
	fuse_reply_none(req);
}

static void
nfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	size_t i;

	for (i = 0; i < count; i++)
		if (f[i].ino != mount_stats_ino())
			node_forget(node_of(f[i].ino), f[i].nlookup);
	fuse_reply_none(req);
}

static void
nfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == mount_stats_ino())
		mount_stats_getattr(req);
	else
		reply_attr(req, node_of(ino), false, true, fi != NULL);
}

static void
nfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
	    struct fuse_file_info *fi)
{
	struct nnode *n = node_of(ino);
	bool via_dev = false;	/* the size set, or data written, through the device */
	char *path;
	int r = 0;

	(void)fi;
	if (ino == mount_stats_ino()) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if ((path = path_of(n, NULL)) == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (valid & FUSE_SET_ATTR_MODE)
		META(r, nfs_chmod(meta, path, (int)(attr->st_mode & 07777)));
	if (r == 0 && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
		/* -1 leaves it as the server has it (not the cached one) */
		int uid = (valid & FUSE_SET_ATTR_UID) ? (int)attr->st_uid : -1;
		int gid = (valid & FUSE_SET_ATTR_GID) ? (int)attr->st_gid : -1;
		META(r, nfs_lchown(meta, path, uid, gid));
	}
	if (r == 0 && (valid & FUSE_SET_ATTR_SIZE)) {
		pthread_mutex_lock(&n->lock);
		via_dev = n->cf != NULL && !n->cdev_ro; /* a read-only one cannot */
		if (via_dev && (r = clio_ftruncate(n->cf, (uint64_t)attr->st_size)) == 0)
			atomic_store(&n->wtime, realtime_ns());
		else
			META(r, nfs_truncate(meta, path, (uint64_t)attr->st_size));
		pthread_mutex_unlock(&n->lock);
	}
	if (r == 0 && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timeval tv[2];
		struct timespec now;
		struct stat cur;

		pthread_mutex_lock(&n->lock);
		if (n->cf != NULL && !n->cdev_ro) {
			/* dirty data first: its WRITEs after the SETATTR would
			 * set the mtime again (cp -p, tar, rsync -t) */
			r = clio_fsync(n->cf);
			via_dev = r == 0;
		}
		cur = n->st;
		pthread_mutex_unlock(&n->lock);
		if (r != 0) {
			free(path);
			fuse_reply_err(req, nerr(r));
			return;
		}
		clock_gettime(CLOCK_REALTIME, &now);
		tv[0].tv_sec = cur.st_atim.tv_sec;
		tv[0].tv_usec = cur.st_atim.tv_nsec / 1000;
		tv[1].tv_sec = cur.st_mtim.tv_sec;
		tv[1].tv_usec = cur.st_mtim.tv_nsec / 1000;
		if (valid & FUSE_SET_ATTR_ATIME) {
			struct timespec t = (valid & FUSE_SET_ATTR_ATIME_NOW) ? now : attr->st_atim;
			tv[0].tv_sec = t.tv_sec;
			tv[0].tv_usec = t.tv_nsec / 1000;
		}
		if (valid & FUSE_SET_ATTR_MTIME) {
			struct timespec t = (valid & FUSE_SET_ATTR_MTIME_NOW) ? now : attr->st_mtim;
			tv[1].tv_sec = t.tv_sec;
			tv[1].tv_usec = t.tv_nsec / 1000;
		}
		META(r, nfs_lutimes(meta, path, tv));
		if (r == 0)
			atomic_store(&n->wtime, 0); /* the times set stand */
	}
	free(path);
	if (r != 0) {
		fuse_reply_err(req, nerr(r));
		return;
	}
	pthread_mutex_lock(&n->lock);
	if (n->cf != NULL && via_dev) {
		/* the version after our own change: the next open keeps it */
		pthread_mutex_unlock(&n->lock);
		reply_attr(req, n, true, false, fi != NULL);
		pthread_mutex_lock(&n->lock);
		if (n->cf != NULL && n->have_st) {
			struct clio_validator v;
			validator_of_stat(&n->st, &v);
			clio_validator_set(n->cf, &v);
		}
		pthread_mutex_unlock(&n->lock);
		return;
	}
	pthread_mutex_unlock(&n->lock);
	reply_attr(req, n, true, true, fi != NULL);
}

static void
nfs_readlink_op(fuse_req_t req, fuse_ino_t ino)
{
	char buf[4096], *path = path_of(node_of(ino), NULL);
	int r;

	if (path == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(buf, 0, sizeof(buf));
	META(r, nfs_readlink(meta, path, buf, sizeof(buf) - 1));
	free(path);
	if (r != 0)
		fuse_reply_err(req, nerr(r));
	else
		fuse_reply_readlink(req, buf);
}

static void
nfs_mkdir_op(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	char *path;
	int r;

	if ((path = name_path(req, parent, name)) == NULL)
		return;
	if ((r = meta_enter()) == 0) {
		creds_enter(req);
		r = nfs_mkdir2(meta, path, (int)(mode & 07777));
		creds_leave();
	}
	r = meta_leave(r);
	if (r == 0)
		dir_changed(parent);
	reply_entry_path(req, path, nerr(r));
}

/* mknod(2), mkfifo(3): MKNOD; a regular file, CREATE. */
static void
nfs_mknod_op(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	     dev_t rdev)
{
	struct nfsfh *fh = NULL;
	char *path;
	int r;

	if ((path = name_path(req, parent, name)) == NULL)
		return;
	if ((r = meta_enter()) == 0) {
		creds_enter(req);
		if (S_ISREG(mode)) {
			r = nfs_create(meta, path, O_CREAT | O_EXCL | O_RDWR,
				       (int)(mode & 07777), &fh);
			if (r == 0)
				nfs_close(meta, fh);
		} else {
			r = nfs_mknod(meta, path, (int)(mode & (S_IFMT | 07777)), (int)rdev);
		}
		creds_leave();
	}
	r = meta_leave(r);
	if (r == 0)
		dir_changed(parent);
	reply_entry_path(req, path, nerr(r));
}

static void
nfs_symlink_op(fuse_req_t req, const char *link, fuse_ino_t parent,
	       const char *name)
{
	char *path;
	int r;

	if ((path = name_path(req, parent, name)) == NULL)
		return;
	if ((r = meta_enter()) == 0) {
		creds_enter(req);
		r = nfs_symlink(meta, link, path);
		creds_leave();
	}
	r = meta_leave(r);
	/* libnfs encodes a call in 4 KiB: a longer one fails there (its
	 * ENOMEM), a target of more than about 3900 bytes */
	if (r == -ENOMEM && strlen(link) > 2048)
		r = -ENAMETOOLONG;
	if (r == 0)
		dir_changed(parent);
	reply_entry_path(req, path, nerr(r));
}

static void
nfs_link_op(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
	char *from, *to;
	struct stat st;
	int r;

	if (mount_stats_guard(req, parent, name))
		return;
	from = path_of(node_of(ino), NULL);
	to = path_of(node_of(parent), name);
	if (from == NULL || to == NULL) {
		free(from);
		free(to);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* libnfs's LINK follows a symbolic link at from: a link to the
	 * link itself is refused, and one to what from names now (not
	 * ino) too */
	if ((r = -meta_stat(from, &st)) == 0) {
		if ((uint64_t)st.st_ino != node_of(ino)->fileid)
			r = -ESTALE;
		else if (S_ISLNK(st.st_mode))
			r = -EPERM;
	}
	if (r == 0)
		META(r, nfs_link(meta, from, to));
	free(from);
	if (r == 0)
		dir_changed(parent);
	reply_entry_path(req, to, nerr(r));
}

/* The node last seen at path (tbl_lock and path_lock held), or NULL. */
static struct nnode *
node_at(const char *path)
{
	unsigned b;
	struct nnode *n;

	for (b = 0; b < NBUCKETS; b++)
		for (n = tbl[b]; n != NULL; n = n->hnext)
			if (n->path != NULL && strcmp(n->path, path) == 0)
				return n;
	return NULL;
}

/* *pp, if at or under from (fl bytes), now under to (tl bytes). */
static void
path_moved(char **pp, const char *from, size_t fl, const char *to, size_t tl)
{
	char *p;

	if (*pp == NULL || strncmp(*pp, from, fl) != 0 ||
	    ((*pp)[fl] != '\0' && (*pp)[fl] != '/'))
		return;
	p = malloc(tl + strlen(*pp + fl) + 1);
	if (p == NULL)
		return;
	memcpy(p, to, tl);
	strcpy(p + tl, *pp + fl);
	free(*pp);
	*pp = p;
}

/* Rewrite the paths at and under from to to (tbl_lock, path_lock held). */
static void
paths_moved(const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);
	unsigned b;
	struct nnode *n;

	for (b = 0; b < NBUCKETS; b++)
		for (n = tbl[b]; n != NULL; n = n->hnext) {
			path_moved(&n->path, from, fl, to, tl);
			path_moved(&n->silly, from, fl, to, tl); /* its directory */
		}
}

/* path lost its name through the mount: its node's idle device goes
 * (its buffers are of a file that may be gone). */
static void
name_gone(const char *path)
{
	struct nnode *n;

	pthread_mutex_lock(&tbl_lock);
	pthread_mutex_lock(&path_lock);
	n = node_at(path);
	if (n != NULL) {
		free(n->path);
		n->path = strdup("/.clio-removed");
	}
	pthread_mutex_unlock(&path_lock);
	if (n != NULL) {
		pthread_mutex_lock(&n->lock);
		n->have_st = false;
		if (n->nopen == 0 && n->st.st_nlink <= 1)
			node_close_dev(n);
		pthread_mutex_unlock(&n->lock);
	}
	pthread_mutex_unlock(&tbl_lock);
}

/* unlink(2) of path (from NULL), or rename(2) of from over it, when
 * path's file is open through the mount: that file is renamed to a
 * hidden name in its directory first (an NFS client's "silly rename"),
 * so that its descriptors still read and write it; its last release
 * removes it.  Done so?  *rp: 0, or the rename's libnfs error (the
 * hidden file then has its name back). */
static bool
hide_open(const char *path, const char *from, int *rp)
{
	const char *slash = strrchr(path, '/');
	int dl = slash != NULL ? (int)(slash - path) : 0, r = -1;
	struct nnode *n, *o = NULL;
	char *silly;

	*rp = 0;
	pthread_mutex_lock(&tbl_lock);
	pthread_mutex_lock(&path_lock);
	n = node_at(path);
	if (from != NULL)
		o = node_at(from);
	pthread_mutex_unlock(&path_lock);
	if (n != NULL && n != o) {
		pthread_mutex_lock(&n->lock);
		if (n->nopen > 0 && !n->hidden && (silly = malloc(dl + 40)) != NULL) {
			snprintf(silly, dl + 40, "%.*s/.clio-silly-%016llx", dl, path,
				 (unsigned long long)n->fileid);
			META(r, nfs_rename(meta, path, silly));
			if (r == 0 && from != NULL) {
				META(*rp, nfs_rename(meta, from, path));
				if (*rp != 0) {
					int e;
					META(e, nfs_rename(meta, silly, path));
					if (e != 0)
						fprintf(stderr, "clio mount: %s is left as %s: %s\n",
							path, silly, strerror(nerr(e)));
					free(silly);
					silly = NULL;
				}
			}
			if (r == 0 && silly != NULL) {
				n->hidden = true;
				pthread_mutex_lock(&path_lock);
				paths_moved(path, silly);
				n->silly = silly;
				pthread_mutex_unlock(&path_lock);
			} else if (r != 0) {
				free(silly);
			}
		}
		pthread_mutex_unlock(&n->lock);
	}
	pthread_mutex_unlock(&tbl_lock);
	return r == 0;
}

/* The last release of a hidden file (n->lock held): its device closed,
 * its hidden name (where a rename of its directory took it) removed. */
static void
unhide(struct nnode *n)
{
	char *silly;
	int r;

	node_close_dev(n);
	pthread_mutex_lock(&path_lock);
	silly = n->silly;
	n->silly = NULL;
	pthread_mutex_unlock(&path_lock);
	n->hidden = false;
	if (silly == NULL)
		return;
	META(r, nfs_unlink(meta, silly));
	if (r != 0)
		fprintf(stderr, "clio mount: cannot remove %s: %s\n", silly,
			strerror(nerr(r)));
	free(silly);
}

static void
nfs_remove(fuse_req_t req, fuse_ino_t parent, const char *name, bool dir)
{
	char *path;
	int r;

	if ((path = name_path(req, parent, name)) == NULL)
		return;
	if (!dir && hide_open(path, NULL, &r)) {
		free(path);
		dir_changed(parent);
		fuse_reply_err(req, 0);
		return;
	}
	META(r, dir ? nfs_rmdir(meta, path) : nfs_unlink(meta, path));
	if (r == 0) {
		atomic_fetch_add(&links_gen, 1);
		dir_changed(parent);
		name_gone(path);
	}
	free(path);
	fuse_reply_err(req, nerr(r));
}

static void
nfs_unlink_op(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	nfs_remove(req, parent, name, false);
}

static void
nfs_rmdir_op(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	nfs_remove(req, parent, name, true);
}

static void
nfs_rename_op(fuse_req_t req, fuse_ino_t parent, const char *name,
	      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct nnode *moved;
	char *from, *to;
	struct stat st;
	int r;

	if (mount_stats_guard(req, parent, name) || mount_stats_guard(req, newparent, newname))
		return;
	if (flags & ~(unsigned)RENAME_NOREPLACE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	from = path_of(node_of(parent), name);
	to = path_of(node_of(newparent), newname);
	if (from == NULL || to == NULL) {
		r = ENOMEM;
	} else if ((flags & RENAME_NOREPLACE) && meta_stat(to, &st) == 0) {
		r = EEXIST;
	} else if (!(flags & RENAME_NOREPLACE) && hide_open(to, from, &r)) {
		r = nerr(r); /* an open file renamed over: hidden, not lost */
	} else {
		META(r, nfs_rename(meta, from, to));
		r = nerr(r);
	}
	if (r == 0) {
		atomic_fetch_add(&links_gen, 1); /* to's file lost a name, if any */
		dir_changed(parent);
		dir_changed(newparent);
		name_gone(to);
		pthread_mutex_lock(&tbl_lock);
		pthread_mutex_lock(&path_lock);
		paths_moved(from, to);
		moved = node_at(to);
		pthread_mutex_unlock(&path_lock);
		if (moved != NULL) {
			/* its ctime moved with it (and a directory's "..") */
			pthread_mutex_lock(&moved->lock);
			moved->expires = 0;
			pthread_mutex_unlock(&moved->lock);
		}
		pthread_mutex_unlock(&tbl_lock);
	}
	free(from);
	free(to);
	fuse_reply_err(req, r);
}

static void
nfs_statfs_op(fuse_req_t req, fuse_ino_t ino)
{
	struct nfs_statvfs_64 s;
	struct statvfs sv;
	int r;

	(void)ino;
	META(r, nfs_statvfs64(meta, "/", &s));
	if (r != 0) {
		fuse_reply_err(req, nerr(r));
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = s.f_bsize;
	sv.f_frsize = s.f_frsize;
	sv.f_blocks = s.f_blocks;
	sv.f_bfree = s.f_bfree;
	sv.f_bavail = s.f_bavail;
	sv.f_files = s.f_files;
	sv.f_ffree = s.f_ffree;
	sv.f_favail = s.f_favail;
	sv.f_namemax = s.f_namemax;
	fuse_reply_statfs(req, &sv);
}

/* ------------------------------------------------------------ directories */

struct ndirent {
	char *name;
	struct stat st;
};

struct ndir {
	struct ndirent *e;
	size_t n;
	bool read;		/* a readdir was answered from it */
};

/* d's entries, freed. */
static void
ndir_clear(struct ndir *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		free(d->e[i].name);
	free(d->e);
	d->e = NULL;
	d->n = 0;
}

static void
ndir_free(struct ndir *d)
{
	ndir_clear(d);
	free(d);
}

/* The whole listing of directory ino into d (empty): READDIRPLUS, with
 * the attributes.  0 or an errno. */
static int
ndir_load(fuse_ino_t ino, struct ndir *d)
{
	struct nfsdir *nd = NULL;
	struct nfsdirent *de;
	char *path = path_of(node_of(ino), NULL);
	size_t cap = 0;
	int r;

	if (path == NULL)
		return ENOMEM;
	if ((r = meta_enter()) == 0)
		r = nfs_opendir(meta, path, &nd);
	while (r == 0 && (de = nfs_readdir(meta, nd)) != NULL) {
		struct ndirent *x;
		if (ino == FUSE_ROOT_ID && strcmp(de->name, MOUNT_STATS_NAME) == 0)
			continue;
		if (d->n == cap) {
			cap = cap ? cap * 2 : 64;
			x = realloc(d->e, cap * sizeof(*x));
			if (x == NULL) {
				r = -ENOMEM;
				break;
			}
			d->e = x;
		}
		x = &d->e[d->n];
		memset(x, 0, sizeof(*x));
		x->name = strdup(de->name);
		if (x->name == NULL) {
			r = -ENOMEM;
			break;
		}
		d->n++;
		x->st.st_ino = de->inode;
		x->st.st_mode = (mode_t)de->mode;
		x->st.st_nlink = de->nlink;
		x->st.st_uid = de->uid;
		x->st.st_gid = de->gid;
		x->st.st_size = (off_t)de->size;
		x->st.st_rdev = (dev_t)de->rdev;
		x->st.st_blksize = (blksize_t)de->blksize;
		x->st.st_blocks = (blkcnt_t)de->blocks;
		x->st.st_atim.tv_sec = de->atime.tv_sec;
		x->st.st_atim.tv_nsec = de->atime_nsec;
		x->st.st_mtim.tv_sec = de->mtime.tv_sec;
		x->st.st_mtim.tv_nsec = de->mtime_nsec;
		x->st.st_ctim.tv_sec = de->ctime.tv_sec;
		x->st.st_ctim.tv_nsec = de->ctime_nsec;
	}
	if (nd != NULL && (r == 0 || r == -ENOMEM))
		nfs_closedir(meta, nd);
	r = meta_leave(r);
	free(path);
	if (r != 0)
		ndir_clear(d);
	return nerr(r);
}

/* The listing is read at opendir, and again at a readdir from offset 0
 * after the first (rewinddir(3): the directory as it is now). */
static void
nfs_opendir_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ndir *d = calloc(1, sizeof(*d));
	int r = d != NULL ? ndir_load(ino, d) : ENOMEM;

	if (r != 0) {
		free(d);
		fuse_reply_err(req, r);
		return;
	}
	fi->fh = (uintptr_t)d;
	fuse_reply_open(req, fi);
}

static void
nfs_readdir_any(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi, bool plus)
{
	struct ndir *d = (struct ndir *)(uintptr_t)fi->fh;
	struct nnode *dn = node_of(ino);
	char *buf = malloc(size), *dpath = path_of(dn, NULL);
	size_t used = 0, i;
	int r;

	if (buf == NULL || dpath == NULL) {
		free(buf);
		free(dpath);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (off == 0 && d->read) {
		ndir_clear(d);
		if ((r = ndir_load(ino, d)) != 0) {
			free(buf);
			free(dpath);
			fuse_reply_err(req, r);
			return;
		}
	}
	d->read = true;
	for (i = (size_t)off; i < d->n; i++) {
		struct ndirent *x = &d->e[i];
		bool dot = strcmp(x->name, ".") == 0 || strcmp(x->name, "..") == 0;
		size_t len;

		if (!plus || dot) {
			struct stat st = { .st_ino = x->st.st_ino, .st_mode = x->st.st_mode };
			len = plus ? fuse_add_direntry_plus(req, buf + used, size - used,
							    x->name, &(struct fuse_entry_param){
								    .attr = st }, (off_t)i + 1)
				   : fuse_add_direntry(req, buf + used, size - used, x->name,
						       &st, (off_t)i + 1);
			if (len > size - used)
				break;
		} else {
			struct fuse_entry_param e;
			char *p = malloc(strlen(dpath) + strlen(x->name) + 2);
			struct nnode *n;

			if (p == NULL)
				break;
			sprintf(p, "%s/%s", strcmp(dpath, "/") == 0 ? "" : dpath, x->name);
			memset(&e, 0, sizeof(e));
			len = fuse_add_direntry_plus(req, NULL, 0, x->name, NULL, 0);
			if (len > size - used) {
				free(p);
				break;
			}
			n = node_get_st(&x->st, p);
			if (n == NULL)
				break;
			attr_shown(n, &e.attr);
			e.ino = ino_of(n);
			e.entry_timeout = entry_timeout(n);
			e.attr_timeout = attr_timeout(n);
			pthread_mutex_unlock(&n->lock);
			len = fuse_add_direntry_plus(req, buf + used, size - used, x->name,
						     &e, (off_t)i + 1);
		}
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
	free(dpath);
}

static void
nfs_readdir_op(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	       struct fuse_file_info *fi)
{
	nfs_readdir_any(req, ino, size, off, fi, false);
}

static void
nfs_readdirplus_op(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	nfs_readdir_any(req, ino, size, off, fi, true);
}

static void
nfs_releasedir_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	ndir_free((struct ndir *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* ----------------------------------------------------------------- data */

/* The file's version from its device (n->lock held, n->cdev open) into
 * the attribute cache: size and times; when they changed, the other
 * attributes expire.  0 or -errno. */
static int
dev_version(struct nnode *n)
{
	struct clio_validator v;
	struct stat st;
	int r = clio_dev_version(n->cdev, &v);

	if (r < 0 || !n->have_st || v.id != (uint64_t)n->st.st_ino)
		return r < 0 ? r : -ESTALE;
	st = n->st;
	st.st_size = (off_t)v.size;
	st.st_mtim.tv_sec = (time_t)(v.mtime_ns / 1000000000);
	st.st_mtim.tv_nsec = (long)(v.mtime_ns % 1000000000);
	st.st_ctim.tv_sec = (time_t)(v.ctime_ns / 1000000000);
	st.st_ctim.tv_nsec = (long)(v.ctime_ns % 1000000000);
	if (attr_store(n, &st))
		n->expires = 0;
	return 0;
}

/* Are fewer than n (at most 8) file descriptors free? */
static bool
fds_short(int n)
{
	int fds[8], got;

	for (got = 0; got < n && got < 8; got++)
		if ((fds[got] = eventfd(0, EFD_CLOEXEC)) < 0)
			break;
	for (int i = 0; i < got; i++)
		close(fds[i]);
	return got < n;
}

/* Is n's device (n->lock held, n->cdev open) the handle of a file the
 * server no longer has? */
static bool
dev_stale(struct nnode *n)
{
	struct clio_validator v;

	return clio_dev_version(n->cdev, &v) == -ESTALE;
}

/* The device string of the file at path into spec (room for
 * dev_base, three bytes a byte of path, dev_query): the URL's query and
 * its percent escapes would take a ? & or % of the name otherwise. */
static void
pct_spec(char *spec, const char *path)
{
	char *o = spec + sprintf(spec, "%s", dev_base);

	for (; *path != '\0'; path++)
		o += strchr("?&%", *path) != NULL ? sprintf(o, "%%%02X", (unsigned char)*path)
						   : sprintf(o, "%c", *path);
	strcpy(o, dev_query);
}

/* Open n's device if need be, revalidate and add a handle (n->lock
 * held); keep: may the kernel keep its pages?  0 or an errno. */
static int
node_open_dev(struct nnode *n, int flags, struct nhandle **hp, bool *keep)
{
	/* O_TRUNC truncates with O_RDONLY too (the kernel checked for
	 * write access), as on a local file system */
	bool wr = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC), fresh = false;
	struct nhandle *h;
	char err[1024];
	bool ro = fs_ro;
	int r;

	if (n->gone)
		return ESTALE; /* the kernel looks the name up anew */
	if (n->cdev != NULL && n->cdev_ro && wr) {
		/* a writer: the device again, writable, if nobody reads it */
		if (n->nopen > 0)
			return EACCES;
		node_close_dev(n);
	}
	if (n->cdev == NULL) {
		char *path = path_of(n, NULL);
		size_t len;
		if (path == NULL)
			return ENOMEM;
		/* a ? an & or a % of the name, percent-encoded in the URL */
		len = strlen(dev_base) + 3 * strlen(path) + strlen(dev_query) + 1;
		n->spec = malloc(len);
		if (n->spec == NULL) {
			free(path);
			return ENOMEM;
		}
		pct_spec(n->spec, path);
		free(path);
		err[0] = '\0';
		r = clio_dev_open_err(n->spec, ro ? CLIO_DEV_RDONLY : 0, &n->cdev,
				      err, sizeof(err));
		if (r < 0 && mount_idle_count() > 0 &&
		    (r == -EMFILE || r == -ENFILE || fds_short(4))) {
			/* out of descriptors (a socket and an eventfd a
			 * device, and a socket for the MOUNT; libnfs says
			 * so in its own words): the idle devices make room */
			idle_trim_to(0);
			err[0] = '\0';
			r = clio_dev_open_err(n->spec, ro ? CLIO_DEV_RDONLY : 0, &n->cdev,
					      err, sizeof(err));
		}
		if (r < 0 && r != -EMFILE && r != -ENFILE && fds_short(4))
			r = -EMFILE; /* not libnfs's EHOSTUNREACH for its socket() */
		if ((r == -EACCES || r == -EROFS) && !ro && !wr) {
			/* a read-only export, or a file this mount's identity
			 * may only read (root squashed): a reader still reads */
			ro = true;
			err[0] = '\0';
			r = clio_dev_open_err(n->spec, CLIO_DEV_RDONLY, &n->cdev, err,
					      sizeof(err));
		}
		if (r == 0) {
			r = clio_open(fs_cache, n->cdev, (ro ? CLIO_RDONLY : CLIO_RDWR) |
				      CLIO_KEEP, &n->cf);
			if (r < 0) {
				clio_dev_close(n->cdev);
				n->cdev = NULL;
			}
		}
		if (r < 0) {
			fprintf(stderr, "clio mount: %s\n", err[0] ? err : strerror(-r));
			free(n->spec);
			n->spec = NULL;
			return -r;
		}
		n->cdev_ro = ro;
		fresh = true;
	} else {
		mount_idle_del(&n->idle);
	}
	*keep = true;
	if (!(nopts.lease && n->validated)) {
		struct clio_validator v;
		struct stat st;
		bool use_cached = n->have_st && (fresh || (!nopts.cto && attr_valid(n)));

		if (!use_cached && !fresh) {
			/* the name may name another file now (one renamed over
			 * it on the server): LOOKUP, not the device's GETATTR;
			 * ESTALE has the kernel look the name up anew */
			r = node_stat(n, &st);
			if (r == ENOENT || (r == 0 && (uint64_t)st.st_ino != n->fileid))
				return ESTALE;
			if (r == 0 && attr_store(n, &st))
				n->dev_check = true;
			else if (r != 0)
				(void)dev_version(n);
			if (n->dev_check) {
				/* changed on the server: or another file under
				 * the same fileid (an inode number the server
				 * reused after the file went), the device the
				 * old file's handle?  Then the node is the old
				 * file's (node_get_st): the name is looked up
				 * anew */
				n->dev_check = false;
				if (dev_stale(n)) {
					n->gone = true;
					return ESTALE;
				}
			}
		} else if (!use_cached && dev_version(n) < 0 && node_stat(n, &st) == 0) {
			attr_store(n, &st);
		}
		if (n->have_st && n->nwriters == 0) {
			validator_of_stat(&n->st, &v);
			r = clio_revalidate(n->cf, &v);
			*keep = r == 0;
		}
		n->validated = true;
	}
	if ((flags & O_TRUNC) && wr && (r = clio_ftruncate(n->cf, 0)) < 0)
		return -r; /* atomic_o_trunc */
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return ENOMEM;
	r = clio_open(fs_cache, n->cdev, wr ? CLIO_RDWR : CLIO_RDONLY, &h->cf);
	if (r < 0) {
		free(h);
		return -r;
	}
	h->n = n;
	h->writer = wr;
	h->next = n->handles;
	n->handles = h;
	n->nopen++;
	if (wr)
		n->nwriters++;
	*hp = h;
	return 0;
}

/* node_open_dev; a failed open leaves an open device idle again */
static int
node_open(struct nnode *n, int flags, struct nhandle **hp, bool *keep)
{
	int r = node_open_dev(n, flags, hp, keep);

	if (r != 0 && n->cdev != NULL && n->nopen == 0)
		mount_idle_add(&n->idle);
	return r;
}

static void
nfs_open_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct nnode *n = node_of(ino);
	struct nhandle *h = NULL;
	bool keep;
	int r;

	if (ino == mount_stats_ino()) {
		mount_stats_open(req, fi);
		return;
	}
	if (fs_ro && (fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	pthread_mutex_lock(&n->lock);
	if (n->have_st && !S_ISREG(n->st.st_mode)) {
		pthread_mutex_unlock(&n->lock);
		fuse_reply_err(req, S_ISDIR(n->st.st_mode) ? EISDIR : EINVAL);
		return;
	}
	r = node_open(n, fi->flags, &h, &keep);
	pthread_mutex_unlock(&n->lock);
	if (r != 0) {
		fuse_reply_err(req, r);
		return;
	}
	fi->fh = (uintptr_t)h;
	fi->direct_io = 0;
	fi->keep_cache = keep;
	fuse_reply_open(req, fi);
}

static void
nfs_create_op(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	      struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	struct nfsfh *fh = NULL;
	struct nhandle *h = NULL;
	struct nnode *n;
	struct stat st;
	char *path;
	bool keep;
	int r;

	if ((path = name_path(req, parent, name)) == NULL)
		return;
	if ((r = meta_enter()) == 0) {
		creds_enter(req);
		r = nfs_create(meta, path, O_CREAT | (fi->flags & (O_EXCL | O_TRUNC)) | O_RDWR,
			       (int)(mode & 07777), &fh);
		creds_leave();
		if (r == 0)
			nfs_close(meta, fh);
	}
	r = meta_leave(r);
	r = nerr(r);
	if (r == 0) {
		dir_changed(parent);
		r = meta_stat(path, &st);
	}
	if (r != 0) {
		free(path);
		fuse_reply_err(req, r);
		return;
	}
	if ((n = node_get((uint64_t)st.st_ino, path)) == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(&e, 0, sizeof(e));
	pthread_mutex_lock(&n->lock);
	attr_store(n, &st);
	r = node_open(n, fi->flags, &h, &keep);
	attr_shown(n, &e.attr);
	e.ino = ino_of(n);
	e.entry_timeout = entry_timeout(n);
	e.attr_timeout = attr_timeout(n);
	pthread_mutex_unlock(&n->lock);
	if (r != 0) {
		node_forget(n, 1);
		fuse_reply_err(req, r);
		return;
	}
	fi->fh = (uintptr_t)h;
	fi->direct_io = 0;
	fi->keep_cache = keep;
	fuse_reply_create(req, &e, fi);
}

static void
nfs_read_op(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	    struct fuse_file_info *fi)
{
	double t0;

	if (ino == mount_stats_ino()) {
		mount_stats_read(req, size, off, fi);
		return;
	}
	t0 = mount_io_begin();
	mount_io_end(false, mount_reply_read(req, ((struct nhandle *)(uintptr_t)fi->fh)->cf,
					     -1, size, off), t0);
}

static void
nfs_write_op(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
	     off_t off, struct fuse_file_info *fi)
{
	struct nhandle *h = (struct nhandle *)(uintptr_t)fi->fh;
	double t0 = mount_io_begin();
	ssize_t r;

	(void)ino;
	r = clio_pwrite(h->cf, buf, size, (uint64_t)off);
	if (r < 0) {
		fuse_reply_err(req, (int)-r);
		mount_io_end(true, 0, t0);
		return;
	}
	atomic_store(&h->wrote, true);
	atomic_store(&h->n->wtime, realtime_ns());
	fuse_reply_write(req, (size_t)r);
	mount_io_end(true, (size_t)r, t0);
}

/* After this mount's own writes reached the server: record its version. */
static void
record_version(struct nnode *n)
{
	struct clio_validator v;

	pthread_mutex_lock(&n->lock);
	if (n->cf != NULL && dev_version(n) == 0) {
		validator_of_stat(&n->st, &v);
		clio_validator_set(n->cf, &v);
		atomic_store(&n->wtime, 0); /* the server's mtime has them */
	}
	pthread_mutex_unlock(&n->lock);
}

/* close(2): under close-to-open, written back and committed. */
static void
nfs_flush_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct nhandle *h = (struct nhandle *)(uintptr_t)fi->fh;
	int r = 0;

	if (ino == mount_stats_ino() || nopts.lease) {
		fuse_reply_err(req, 0);
		return;
	}
	if (atomic_exchange(&h->wrote, false)) {
		r = clio_fsync(h->cf);
		if (r == 0)
			record_version(h->n);
	}
	fuse_reply_err(req, -r);
}

static void
nfs_fsync_op(fuse_req_t req, fuse_ino_t ino, int datasync,
	     struct fuse_file_info *fi)
{
	struct nhandle *h;
	int r;

	(void)datasync;
	if (ino == mount_stats_ino()) {
		fuse_reply_err(req, 0);
		return;
	}
	h = (struct nhandle *)(uintptr_t)fi->fh;
	r = clio_fsync(h->cf);
	if (r == 0 && atomic_load(&h->wrote))
		record_version(h->n); /* stat(2) shows the write's mtime */
	fuse_reply_err(req, -r);
}

static void
nfs_release_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct nhandle *h = (struct nhandle *)(uintptr_t)fi->fh;
	struct nnode *n;
	bool free_it = false, idle = false;

	if (ino == mount_stats_ino()) {
		mount_stats_release(req, fi);
		return;
	}
	n = h->n;
	pthread_mutex_lock(&tbl_lock);
	pthread_mutex_lock(&n->lock);
	(void)clio_close(h->cf); /* not the object's last: the node's is open */
	for (struct nhandle **pp = &n->handles; *pp != NULL; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	/* not fi->flags: O_RDONLY|O_TRUNC counted as a writer at the open,
	 * and the kernel's release flags have no O_TRUNC */
	if (h->writer)
		n->nwriters--;
	if (--n->nopen == 0) {
		if (n->hidden)
			unhide(n);
		if (n->unhashed) {
			node_close_dev(n);
			free_it = true;
		} else if (n->cdev != NULL) {
			mount_idle_add(&n->idle);
			idle = true;
		}
	}
	pthread_mutex_unlock(&n->lock);
	pthread_mutex_unlock(&tbl_lock);
	free(h);
	if (free_it)
		node_free(n);
	if (idle)
		idle_trim();
	fuse_reply_err(req, 0);
}

/* The calls that go by a node's path hold names_lock: a rename through
 * the mount never moves a directory between such a call's path and its
 * reply (a mkdir in it made the directory, then looked it up under the
 * other name: EIO; a GETATTR of it found no file: ESTALE). */
#define NAMED_OP(name_, call_, params_, args_)                                 \
	static void name_ params_                                              \
	{                                                                      \
		pthread_rwlock_rdlock(&names_lock);                            \
		call_ args_;                                                   \
		pthread_rwlock_unlock(&names_lock);                            \
	}
NAMED_OP(named_lookup, nfs_lookup, (fuse_req_t req, fuse_ino_t p, const char *n),
	 (req, p, n))
NAMED_OP(named_mkdir, nfs_mkdir_op,
	 (fuse_req_t req, fuse_ino_t p, const char *n, mode_t m), (req, p, n, m))
NAMED_OP(named_mknod, nfs_mknod_op,
	 (fuse_req_t req, fuse_ino_t p, const char *n, mode_t m, dev_t rdev),
	 (req, p, n, m, rdev))
NAMED_OP(named_unlink, nfs_unlink_op, (fuse_req_t req, fuse_ino_t p, const char *n),
	 (req, p, n))
NAMED_OP(named_rmdir, nfs_rmdir_op, (fuse_req_t req, fuse_ino_t p, const char *n),
	 (req, p, n))
NAMED_OP(named_symlink, nfs_symlink_op,
	 (fuse_req_t req, const char *l, fuse_ino_t p, const char *n), (req, l, p, n))
NAMED_OP(named_link, nfs_link_op,
	 (fuse_req_t req, fuse_ino_t i, fuse_ino_t p, const char *n), (req, i, p, n))
NAMED_OP(named_getattr, nfs_getattr,
	 (fuse_req_t req, fuse_ino_t i, struct fuse_file_info *fi), (req, i, fi))
NAMED_OP(named_setattr, nfs_setattr,
	 (fuse_req_t req, fuse_ino_t i, struct stat *a, int v, struct fuse_file_info *fi),
	 (req, i, a, v, fi))
NAMED_OP(named_readlink, nfs_readlink_op, (fuse_req_t req, fuse_ino_t i), (req, i))
NAMED_OP(named_open, nfs_open_op,
	 (fuse_req_t req, fuse_ino_t i, struct fuse_file_info *fi), (req, i, fi))
NAMED_OP(named_release, nfs_release_op,
	 (fuse_req_t req, fuse_ino_t i, struct fuse_file_info *fi), (req, i, fi))
NAMED_OP(named_opendir, nfs_opendir_op,
	 (fuse_req_t req, fuse_ino_t i, struct fuse_file_info *fi), (req, i, fi))
NAMED_OP(named_readdir, nfs_readdir_op,
	 (fuse_req_t req, fuse_ino_t i, size_t sz, off_t off, struct fuse_file_info *fi),
	 (req, i, sz, off, fi))
NAMED_OP(named_readdirplus, nfs_readdirplus_op,
	 (fuse_req_t req, fuse_ino_t i, size_t sz, off_t off, struct fuse_file_info *fi),
	 (req, i, sz, off, fi))
NAMED_OP(named_create, nfs_create_op,
	 (fuse_req_t req, fuse_ino_t p, const char *n, mode_t m, struct fuse_file_info *fi),
	 (req, p, n, m, fi))

static void
named_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	     const char *newname, unsigned int flags)
{
	pthread_rwlock_wrlock(&names_lock);
	nfs_rename_op(req, parent, name, newparent, newname, flags);
	pthread_rwlock_unlock(&names_lock);
}

const struct fuse_lowlevel_ops mountnfs_ops = {
	.lookup = named_lookup,
	.forget = nfs_forget,
	.forget_multi = nfs_forget_multi,
	.getattr = named_getattr,
	.setattr = named_setattr,
	.readlink = named_readlink,
	.mkdir = named_mkdir,
	.mknod = named_mknod,
	.unlink = named_unlink,
	.rmdir = named_rmdir,
	.symlink = named_symlink,
	.rename = named_rename,
	.link = named_link,
	.open = named_open,
	.read = nfs_read_op,
	.write = nfs_write_op,
	.flush = nfs_flush_op,
	.release = named_release,
	.fsync = nfs_fsync_op,
	.opendir = named_opendir,
	.readdir = named_readdir,
	.readdirplus = named_readdirplus,
	.releasedir = nfs_releasedir_op,
	.statfs = nfs_statfs_op,
	.create = named_create,
};

/* -------------------------------------------------------- start and end */

/* libnfs's query keys from the device's (port= is its nfsport=);
 * uid= and gid= noted. */
static char *
libnfs_url(const char *src, const char *q)
{
	size_t base = q ? (size_t)(q - src) : strlen(src), keys = 1;
	char *out, *copy, *kv, *save = NULL;

	for (kv = q ? strchr(q, '&') : NULL; kv != NULL; kv = strchr(kv + 1, '&'))
		keys++;
	/* each key may grow by "nfs" (port= becomes nfsport=) */
	out = malloc(strlen(src) + 3 * keys + 2);
	if (out == NULL)
		return NULL;
	memcpy(out, src, base);
	out[base] = '\0';
	copy = strdup(q ? q + 1 : "");
	if (copy == NULL) {
		free(out);
		return NULL;
	}
	for (kv = strtok_r(copy, "&", &save); kv != NULL; kv = strtok_r(NULL, "&", &save)) {
		if (strncmp(kv, "qd=", 3) == 0 || strncmp(kv, "keep=", 5) == 0 ||
		    strncmp(kv, "timeo=", 6) == 0)
			continue; /* the devices' own */
		strcat(out, strchr(out, '?') ? "&" : "?");
		if (strncmp(kv, "port=", 5) == 0)
			strcat(out, "nfs");
		if (strncmp(kv, "uid=", 4) == 0) {
			def_uid = atoi(kv + 4);
			creds_fixed = true;
		}
		if (strncmp(kv, "gid=", 4) == 0) {
			def_gid = atoi(kv + 4);
			creds_fixed = true;
		}
		strcat(out, kv);
	}
	free(copy);
	return out;
}

const char *
mountnfs_dev_base(void)
{
	return dev_base;
}

const char *
mountnfs_dev_query(void)
{
	return dev_query;
}

int
mountnfs_init(clio_cache *cache, const char *source, const struct mount_nfs_opts *o,
	      int ro, unsigned idle_devices, char *err, size_t errlen)
{
	const char *q = strchr(source, '?');
	struct nfs_url *u = NULL;
	struct stat st;
	char msg[256];
	int r;

	fs_cache = cache;
	nopts = *o;
	fs_ro = ro;
	fs_idle_max = idle_devices;
	def_uid = (int)geteuid();
	def_gid = (int)getegid();
	r = nfs_url_check(source, &meta_timeo, msg, sizeof(msg));
	if (r < 0) {
		snprintf(err, errlen, "%s", msg);
		return r;
	}
	dev_query = strdup(q ? q : "");
	meta_url = libnfs_url(source, q);
	if (dev_query == NULL || meta_url == NULL) {
		snprintf(err, errlen, "%s: out of memory", source);
		return -ENOMEM;
	}
	r = meta_connect(msg, sizeof(msg));
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", source, msg);
		return r;
	}
	u = nfs_parse_url_dir(meta, meta_url);
	if (u == NULL) {
		snprintf(err, errlen, "%s: out of memory", source);
		return -ENOMEM;
	}
	dev_base = malloc(strlen(u->server) + strlen(u->path) + 8);
	if (dev_base != NULL)
		sprintf(dev_base, "nfs://%s%s", u->server, u->path);
	nfs_destroy_url(u);
	if (dev_base == NULL)
		return -ENOMEM;
	root.path = strdup("");
	pthread_mutex_init(&root.lock, NULL);
	r = meta_stat("/", &st);
	if (r != 0) {
		snprintf(err, errlen, "%s: GETATTR of the export: %s", source, strerror(r));
		return -r;
	}
	root.fileid = (uint64_t)st.st_ino;
	attr_store(&root, &st);
	root.nlookup = 1;
	return 0;
}

void
mountnfs_foreach_dev(mount_stats_visit_fn fn, void *arg)
{
	unsigned b;

	pthread_mutex_lock(&tbl_lock);
	for (b = 0; b < NBUCKETS; b++) {
		struct nnode *n;
		for (n = tbl[b]; n != NULL; n = n->hnext) {
			pthread_mutex_lock(&n->lock);
			if (n->cdev != NULL) {
				if (n->nopen == 0)
					fn(arg, NULL, NULL, n->cdev);
				else {
					pthread_mutex_lock(&path_lock);
					fn(arg, n->path, n->spec, n->cdev);
					pthread_mutex_unlock(&path_lock);
				}
			}
			pthread_mutex_unlock(&n->lock);
		}
	}
	pthread_mutex_unlock(&tbl_lock);
}

/* The devices left at the end, closed by up to FINI_CLOSERS threads at
 * once: with the server gone each close waits a few timeo= for the
 * write-back, its COMMIT and their reconnections, so one after the other
 * the end of a mount would wait that long for each file. */
#define FINI_CLOSERS 16

struct fini_closing {
	struct nnode **nodes;
	size_t n;
	atomic_size_t next;
	atomic_int err;		/* the first error */
};

static void *
fini_closer(void *arg)
{
	struct fini_closing *fc = arg;
	size_t i;

	while ((i = atomic_fetch_add(&fc->next, 1)) < fc->n) {
		struct nnode *n = fc->nodes[i];
		int r, none = 0;

		pthread_mutex_lock(&n->lock);
		r = node_close_dev(n);
		pthread_mutex_unlock(&n->lock);
		if (r < 0)
			atomic_compare_exchange_strong(&fc->err, &none, r);
	}
	return NULL;
}

/* Close the devices of nodes[0..n) (their handles gone), several at once
 * where threads can be had; the first error. */
static int
fini_close_devs(struct nnode **nodes, size_t n)
{
	struct fini_closing fc = { .nodes = nodes, .n = n };
	pthread_t tid[FINI_CLOSERS];
	size_t nt = 0, want = MIN(n, (size_t)FINI_CLOSERS), i;

	atomic_init(&fc.next, 0);
	atomic_init(&fc.err, 0);
	while (nt + 1 < want && pthread_create(&tid[nt], NULL, fini_closer, &fc) == 0)
		nt++;
	fini_closer(&fc); /* this thread is one of them */
	for (i = 0; i < nt; i++)
		pthread_join(tid[i], NULL);
	return atomic_load(&fc.err);
}

int
mountnfs_fini(void)
{
	struct nnode **closing = NULL;
	size_t nclosing = 0, cap = 0, i;
	unsigned b;
	int w = 0, r;

	pthread_mutex_lock(&tbl_lock);
	for (b = 0; b < NBUCKETS; b++) {
		struct nnode *n, *next;
		for (n = tbl[b]; n != NULL; n = next) {
			next = n->hnext;
			pthread_mutex_lock(&n->lock);
			while (n->handles != NULL) { /* the kernel released none */
				struct nhandle *h = n->handles;
				n->handles = h->next;
				r = clio_close(h->cf);
				if (w == 0)
					w = r;
				free(h);
			}
			n->nopen = 0;
			if (n->hidden) {
				/* unlinked while open, still open at the end: its
				 * hidden name goes with the last descriptor here */
				unhide(n);
			} else if (n->cdev != NULL) {
				if (nclosing == cap) {
					size_t ncap = cap == 0 ? 64 : 2 * cap;
					struct nnode **v = realloc(closing, ncap * sizeof(*v));
					if (v != NULL) {
						closing = v;
						cap = ncap;
					}
				}
				if (nclosing < cap) {
					closing[nclosing++] = n;
					pthread_mutex_unlock(&n->lock);
					continue; /* closed and freed below */
				}
				r = node_close_dev(n); /* no memory: here, alone */
				if (w == 0)
					w = r;
			}
			pthread_mutex_unlock(&n->lock);
			node_free(n);
		}
		tbl[b] = NULL;
	}
	r = fini_close_devs(closing, nclosing);
	if (w == 0)
		w = r;
	for (i = 0; i < nclosing; i++)
		node_free(closing[i]);
	free(closing);
	pthread_mutex_unlock(&tbl_lock);
	if (meta != NULL) {
		nfs_destroy_context(meta);
		meta = NULL;
	}
	free(meta_url);
	meta_url = NULL;
	free(root.path);
	root.path = NULL;
	free(dev_base);
	free(dev_query);
	dev_base = dev_query = NULL;
	return w;
}
