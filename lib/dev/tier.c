/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier.c - the disk tier: a persistent, verified cache of a device's
 * blocks in a local directory (disk_cache=DIR), under the memory cache.
 *
 * Place.  tier_attach() (from clio_open, when conf.disk_cache is set)
 * hangs a struct tier on the device; from then on clio_dev_submit()
 * hands every request of the device to tier_submit(), which serves the
 * blocks it holds from DIR and sends the rest to the device as requests
 * of its own (flag DEV_REQ_TIER, which dev.c passes through).  So every
 * front end, the memory cache's misses and direct transfers alike, sees
 * one device whose repeated reads come from the local disk.
 *
 * Layout.  DIR/<object>/ per object, <object> the 64-bit FNV-1a hash of
 * its identity in hex (a regular file: "file dev=D ino=I path=P", P
 * resolved by realpath, so that "./f" and /proc/self/fd/N agree; any
 * other device: "SCHEME NAME size=N", the NBD URI naming the export):
 *   meta   identity, block size, validator, state (clean or writing),
 *          with a crc32c; replaced whole by write, fsync, rename;
 *   data   slot i holds one block at i * bsize;
 *   index  slot i's record at i * 64: lbn, length, crc32c of the data,
 *          a sequence number, flags, and a crc32c of the record itself;
 *   lock   flock()ed while a process uses the object: another process
 *          runs without the tier for it (one that culls it holds the
 *          flock for an instant, marked by an OFD lock of byte 0: an
 *          open waits that out).
 *   bypass present while (or since) such a process wrote the object
 *          without the tier (bypass_mark): not to be hidden by the
 *          holder's next record of the version.
 *   DIR/lost+found/  dirty blocks that could not be written back.
 * DIR may be writable by others (1777): DIR/<object> and lost+found are
 * used only if they are directories of this user's (own_dir: no link
 * followed, mode made 0700, files 0600), else the object runs without
 * the tier; the files in them are reached from their opened directory.
 *
 * Crash safety (kill -9 at any moment; power loss where noted).  An
 * entry is a record whose own crc matches, with a data crc that matches
 * the slot's bytes; the data crc is checked on every read from DIR, so a
 * record and its data can be written in any order and torn anywhere:
 *  1. A torn or half-written record fails its own crc: the slot is empty.
 *     A record carries its object's tag (index or data files copied
 *     from another object are not entries), and meta a block size conf
 *     allows (else it is not ours: the object starts empty, but for
 *     its own dirty entries, which go to lost+found, of the block
 *     size their data checks with: no version tells whether they may
 *     be written back).  A dirty
 *     record of tag 0 (written before records had tags) is taken as
 *     ours, so that an older binary's crash loses no dirty data; clean
 *     ones of tag 0 are dropped.
 *  2. A record whose data was not (or not completely) written, or was
 *     overwritten by a later fill of the slot, fails the data crc at its
 *     first read: it is dropped and the block read from the device.  So
 *     clean fills need no fsync at all.  A slot taken from an entry
 *     (eviction, a fill given up, a drop) has its record cleared at once,
 *     so no older copy of a block can outlive a newer one on disk; at
 *     open, of two records of one block the lower sequence number is
 *     cleared.
 *  3. An entry is never stale: a write to the device first invalidates
 *     (rewrites as empty) the records of the blocks it covers, under the
 *     tier's lock, and makes that durable (fdatasync) before the device
 *     write is issued; a block read from the device while a write that
 *     overlaps it was in flight is not inserted (the op is "tainted");
 *     records are written only under the lock, after the taint check, so
 *     no insertion can slip past a write.
 *     Clean insertions are asynchronous: a read (or a writethrough write)
 *     of the device completes after copying its blocks into a fill on
 *     the filler's queue (bounded: a full queue drops the insertion and
 *     counts it, the reader never waits).  The fill is queued under the
 *     lock while its op is still in flight and untainted, and stays on
 *     the queue until the filler has recorded it; a write that starts
 *     taints the fills it overlaps (op_start) as it taints ops, and a
 *     drop or a resize taints them all, so a fill is a read whose taint
 *     outlives its op: the argument above holds unchanged, and a crash
 *     loses only queued fills (the cache holds less, never wrong data).
 *     Dirty insertions (writeback) stay synchronous: fsync needs them.
 *  4. The validator in meta is that of the data the entries hold.
 *     Before the first write of a session meta says "writing" (durably);
 *     after a flush that no write overlapped, and at detach (after a
 *     flush of the device if writes came since the last), it records
 *     the device's new validator and "clean" (if no write of this
 *     session's came since the last record, a new validator is another
 *     writer's: the clean entries are dropped first).  Another writer
 *     that changed the file between a write of ours and the flush after
 *     it is not told apart from ours: the promise is no other writer
 *     while this process writes.  (writeback: the fsync after writes
 *     or truncations that went through flushes the device and records it so, before
 *     it returns: its dirty blocks are then written back after a crash;
 *     no version is recorded while a write that goes through to the
 *     device is in flight.)  An object found "writing"
 *     or with another validator at attach has all its clean entries
 *     dropped before any read is served.  ("writing" is a second line of
 *     defence: a write of the tier's own changes the file's mtime and
 *     ctime, so a recorded validator never matches after it.)  A
 *     version is recorded "clean" only once the records cleared before
 *     it are durable (fdatasync of the index): a power loss brings back
 *     no entry dropped as stale, or evicted before its block was
 *     written, under a version that does not hold it.  Times in
 *     whole seconds recorded within 2 s of the change (V_RACY) may hide
 *     a later one: that object's clean entries go at the next open.
 *  5. writeback: a dirty block is written to a fresh slot (copy on
 *     write, a higher sequence number); its old slot (a "zombie") keeps
 *     its record until the new one is durable (the next fsync, which is
 *     fdatasync of data and index, or the index's fdatasync before the
 *     new version is marked clean), so a crash or a power loss leaves the
 *     old or the new version, never neither, and a dirty record whose
 *     data fails its crc at open gives way to the older one.  A dirty
 *     entry becomes clean only after the device took it and was
 *     flushed.  At attach, dirty entries (the newest valid one of each
 *     block) are written back if the validator matches (devices without
 *     one: the user's promise), else copied to lost+found (so are, at
 *     a mount's start, those of a file whose path names another inode
 *     or nothing now, or an NFS file's another fileid: orphan_keep,
 *     nfs_orphan_keep).  A device
 *     opened read-only keeps them dirty and reads them from DIR (a read
 *     of part of one as a read of the whole blocks: bounce_read); an
 *     index that holds more slots than disk_cache_size now allows keeps
 *     the dirty ones past it; dirty blocks lost+found cannot take stay.
 *
 * Invariants (under t->lock):
 *  a. A slot is FREE (on the free list), FILL (owned by one inserter, in no
 *     hash chain), CLEAN (hashed, on the LRU list), DIRTY (hashed, on the
 *     dirty list) or DEAD (unhashed, pinned; freed by its last unpin).
 *  b. A pinned slot's data is never rewritten: readers of DIR pin.
 *  c. At most one hashed slot per block.
 *  d. nalloc <= cap; eviction takes the least recently used unpinned
 *     CLEAN slot, never a DIRTY one.
 *  e. The data files of the objects of one DIR open in this process grow
 *     only while pool->base + pool->grown stays within disk_cache_size
 *     (pool_take); at open, other objects are emptied, least recently
 *     closed first, while they hold more than half of it (cull_dir).
 *  f. fq_bytes (the lengths of the fills queued or reserved) <= fq_max;
 *     a linked fill is never rewritten but for its taint.  The filler
 *     writes a fill's blocks and records in runs of consecutive slots, the
 *     records under one lock after one taint check (crash safety 3).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tier.h"

#define NIL UINT32_MAX
#define REC_SIZE 64
#define REC_MAGIC 0x52544c43u  /* "CLTR" */
#define META_MAGIC 0x4d544c43u /* "CLTM" */
#define META_VERSION 1
#define R_VALID 0x1
#define R_DIRTY 0x2
#define SAMPLE_BLOCKS 32
#define FLOOR_EVERY 16	/* insertions between free-space checks, at most */

/* What tells the entries' version: a regular file's fstat, an NFS file's
 * GETATTR (clio_dev_version), nothing (the user's promise), or nothing
 * to tell (a device whose data does not outlive the process). */
enum { K_FILE, K_PROMISE, K_VOLATILE, K_NFS };
#define HAS_VALIDATOR(k) ((k) == K_FILE || (k) == K_NFS)
enum { S_FREE, S_FILL, S_CLEAN, S_DIRTY, S_DEAD };
enum { M_CLEAN = 1, M_WRITING = 2 };
/* meta.has_v: a validator, and (V_RACY) one recorded so soon after the
 * file's last change that a change in the same second keeps it */
#define V_HAVE 0x1
#define V_RACY 0x2

struct rec {
	uint32_t magic;
	uint32_t rcrc;	/* of the record with rcrc 0 */
	uint64_t seq;
	uint64_t lbn;
	uint32_t dcrc;
	uint32_t len;
	uint32_t flags;
	uint32_t obj;	/* the object's tag: entries copied from another are not ours */
	uint8_t pad[24];
};
_Static_assert(sizeof(struct rec) == REC_SIZE, "an index record is 64 bytes");

struct meta {
	uint32_t magic, version;
	uint32_t bsize, kind;
	uint32_t state, has_v;
	uint64_t size;
	struct clio_validator v;
	char ident[1024];
	uint32_t crc;
};

struct slot {
	uint64_t lbn;
	uint64_t seq;
	double dirtied;		/* when it became dirty (monotonic) */
	uint32_t crc, len;
	uint32_t hnext, prev, next;
	uint16_t pins;
	uint8_t state;
};

struct tier_stats {
	uint64_t hits, misses, bytes_dir, bytes_dev, insertions, evictions;
	uint64_t crc_failures, stale_drops, recovered, lost_found;
	uint64_t objects_culled;	/* other objects emptied at open */
	uint64_t insert_drops;	/* blocks not inserted: the queue was full */
};

struct top; /* a request in flight through the tier */

/* A clean insertion queued for the filler: a copy of [off, off+len) as
 * the device returned it.  Under t->lock while linked. */
struct fill {
	struct fill *next;
	uint64_t off;
	size_t len, cap;	/* cap: data's size (a fill is reused) */
	bool tainted;	/* a write or a drop overlapped it (crash safety 3) */
	char data[];
};
#define FILL_QUEUE_MAX (32u << 20) /* bytes of queued insertions */

/* The objects of one DIR open in this process share its budget: the
 * bytes of the objects not open here (base) and of their data files
 * (grown) stay within it.  Under attach_lock; base and grown atomic (an inserter reads them). */
/* The free-space floor's watch over DIR's file system, shared by the
 * objects open in it (one per object without a pool): the bytes of the
 * slots taken whose data is not written yet (statvfs does not show
 * them), taken since the last look by any object, and the room to the
 * next threshold at that look.  Two objects filling DIR at once (clio
 * dd's input and output) each took half the room between looks and
 * filled a small file system. */
struct floor_watch {
	_Atomic uint64_t unwritten, since, room;
};

struct dirpool {
	struct floor_watch fw;
	struct dirpool *next;
	char *dir;
	int refs;
	uint64_t budget;
	_Atomic uint64_t base;	/* read by the other objects' inserters */
	_Atomic uint64_t grown;
};

struct tier {
	clio_dev *d;
	struct dirpool *pool;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	char *dir, *objdir, *path; /* path: the regular file behind d */
	char objname[17];
	uint32_t tag;	/* the low 32 bits of objname's hash, in each record */
	int dfd, ifd, lockfd;
	int ofd;	/* DIR/<object>, opened once: no path is followed again */
	int kind;
	bool writeback;
	uint32_t bs;
	uint64_t cap;		/* slots at most */
	uint32_t nalloc;	/* slots the data file has */
	uint32_t nslots;	/* slots[] length */
	struct slot *slots;
	uint32_t *hash, hmask;
	uint32_t lru_head, lru_tail, free_head;
	uint32_t dirty_head, dirty_tail;
	uint32_t zombies;	/* old versions of dirty blocks (crash safety 5) */
	uint64_t nused, ndirty;
	uint64_t seq;
	uint32_t brun, bcull, bstop;
	bool culling, stopped;
	struct floor_watch own_fw, *fw; /* the pool's, or own_fw */
	struct top *ops;	/* requests in flight */
	int nops;
	uint64_t wgen;		/* writes started */
	atomic_bool cleared;	/* a record was cleared since the index was
				   last made durable (meta_write) */
	atomic_bool meta_writing;	/* meta says M_WRITING; written under
				 * meta_lock, read without it in top_finish */
	pthread_mutex_t meta_lock;
	pthread_mutex_t wb_lock;	/* one write-back batch at a time */
	struct clio_validator v;
	bool has_v;
	/* writeback: the background writer */
	pthread_t writer;
	bool writer_running, stopping;
	bool devflush;		/* writeback: a write went through since the
				   device was last flushed (set as it starts
				   and again as it ends) */
	/* the reader: asynchronous reads wait on rq for it */
	pthread_t reader;
	bool reader_running, rstop;
	pthread_cond_t rcv;
	struct top *rq, **rq_tail;
	bool meta_due;		/* a flush asks the reader to record the version */
	uint64_t meta_gen;	/* wgen at that flush */
	/* the filler: clean insertions queued by the read path (t->fq) */
	pthread_t filler;
	bool filler_running, fstop, fpaused;
	pthread_cond_t fcv;
	struct fill *fq, **fq_tail;	/* fq's head stays linked while the
					   filler inserts it */
	size_t fq_bytes, fq_max;
	struct fill *ffree;	/* done fills kept for reuse (no fresh pages
				   to fault in at each insertion) */
	size_t ffree_bytes;	/* their caps: fq_bytes + ffree_bytes stays
				   within fq_max, but for one fill */
	double wb_age;		/* conf dirty_age: seconds before write-back */
	int wb_err;		/* positive errno of a failed write-back */
	struct tier_stats st;
};

struct tchild {
	struct clio_req req;
	struct top *op;
	uint64_t off;
	size_t len;
	struct iovec *iov;	/* slice of the parent's */
	int iovcnt;
};

struct top {
	struct tier *t;
	struct clio_req *parent;
	enum clio_op op;
	uint64_t off;
	size_t len;
	bool aligned, tainted;
	bool through;		/* writeback: a write that goes to the device */
	uint64_t gen;		/* wgen when it started (flush) */
	struct top *next, **pprev;
	_Atomic int pending;
	_Atomic ssize_t err;
	double t_done;
	pthread_mutex_t tlock;
	uint64_t size;		/* a read: the device's size at submission */
	uint8_t *hit;		/* a read: its blocks found in DIR */
	struct iovec *sl;
	struct top *rnext;	/* t->rq */
	int nkids;
	struct tchild kids[];
};

static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dirpool *pools; /* under attach_lock */

/* ------------------------------------------------------------ helpers */

static uint64_t
fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

static int
write_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int
read_all(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = pread(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* preadv/pwritev of all of an iovec (copied: it is advanced). */
static int
iov_io(int fd, bool wr, const struct iovec *iov, int iovcnt, off_t off)
{
	struct iovec v[64];
	int n = 0;

	if (iovcnt > 64) { /* rare: block by block through a bounce */
		size_t len = iov_length(iov, iovcnt);
		char *b = malloc(len);
		int r;
		if (b == NULL)
			return -ENOMEM;
		if (wr) {
			iov_to_buf(iov, iovcnt, 0, b, len);
			r = write_all(fd, b, len, off);
		} else {
			r = read_all(fd, b, len, off);
			if (r == 0)
				buf_to_iov(iov, iovcnt, 0, b, len);
		}
		free(b);
		return r;
	}
	memcpy(v, iov, sizeof(*iov) * (size_t)iovcnt);
	n = iovcnt;
	struct iovec *p = v;
	while (n > 0) {
		ssize_t k = wr ? pwritev(fd, p, n, off) : preadv(fd, p, n, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		off += k;
		while (n > 0 && (size_t)k >= p->iov_len) {
			k -= (ssize_t)p->iov_len;
			p++;
			n--;
		}
		if (n > 0) {
			p->iov_base = (char *)p->iov_base + k;
			p->iov_len -= (size_t)k;
		}
	}
	return 0;
}

static uint32_t
iov_crc(const struct iovec *iov, int iovcnt)
{
	uint32_t c = 0;

	for (int i = 0; i < iovcnt; i++)
		c = crc32c(c, iov[i].iov_base, iov[i].iov_len);
	return c;
}

static char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* ------------------------------------------------------------ slots */

static uint32_t
hash_of(const struct tier *t, uint64_t lbn)
{
	return (uint32_t)((lbn * 0x9e3779b97f4a7c15ull) >> 32) & t->hmask;
}

static uint32_t
slot_lookup(struct tier *t, uint64_t lbn)
{
	uint32_t i;

	for (i = t->hash[hash_of(t, lbn)]; i != NIL; i = t->slots[i].hnext)
		if (t->slots[i].lbn == lbn)
			return i;
	return NIL;
}

static void
hash_insert(struct tier *t, uint32_t i)
{
	uint32_t h = hash_of(t, t->slots[i].lbn);

	t->slots[i].hnext = t->hash[h];
	t->hash[h] = i;
}

static void
hash_remove(struct tier *t, uint32_t i)
{
	uint32_t *pp = &t->hash[hash_of(t, t->slots[i].lbn)];

	while (*pp != i)
		pp = &t->slots[*pp].hnext;
	*pp = t->slots[i].hnext;
}

/* The LRU (clean) and dirty lists share prev/next. */
static void
list_append(struct tier *t, uint32_t *head, uint32_t *tail, uint32_t i)
{
	t->slots[i].next = NIL;
	t->slots[i].prev = *tail;
	if (*tail != NIL)
		t->slots[*tail].next = i;
	else
		*head = i;
	*tail = i;
}

static void
list_remove(struct tier *t, uint32_t *head, uint32_t *tail, uint32_t i)
{
	struct slot *s = &t->slots[i];

	if (s->prev != NIL)
		t->slots[s->prev].next = s->next;
	else
		*head = s->next;
	if (s->next != NIL)
		t->slots[s->next].prev = s->prev;
	else
		*tail = s->prev;
}

static void
slot_free(struct tier *t, uint32_t i)
{
	t->slots[i].state = S_FREE;
	t->slots[i].next = t->free_head;
	t->free_head = i;
}

/* Take a hashed slot out of use: unhash, unlist; freed now or by its
 * last unpin. */
static void
slot_unuse(struct tier *t, uint32_t i)
{
	struct slot *s = &t->slots[i];

	hash_remove(t, i);
	if (s->state == S_CLEAN)
		list_remove(t, &t->lru_head, &t->lru_tail, i);
	else if (s->state == S_DIRTY) {
		list_remove(t, &t->dirty_head, &t->dirty_tail, i);
		t->ndirty--;
	}
	t->nused--;
	if (s->pins > 0)
		s->state = S_DEAD;
	else
		slot_free(t, i);
}

static void
slot_unpin(struct tier *t, uint32_t i)
{
	struct slot *s = &t->slots[i];

	if (--s->pins == 0 && s->state == S_DEAD)
		slot_free(t, i);
}

/* The old version of a block just written dirty again: out of use, but
 * its record stays until the new one is durable (zombies_clear). */
static void
slot_zombie(struct tier *t, uint32_t i)
{
	struct slot *s = &t->slots[i];

	hash_remove(t, i);
	if (s->state == S_CLEAN)
		list_remove(t, &t->lru_head, &t->lru_tail, i);
	else if (s->state == S_DIRTY) {
		list_remove(t, &t->dirty_head, &t->dirty_tail, i);
		t->ndirty--;
	}
	t->nused--;
	s->state = S_DEAD;
	s->pins++;
	s->next = t->zombies;
	t->zombies = i;
}

static int rec_put(struct tier *t, uint32_t i, bool valid);

/* The index is durable: the zombies' records go.  Under the lock. */
static void
zombies_clear(struct tier *t)
{
	while (t->zombies != NIL) {
		uint32_t i = t->zombies;
		t->zombies = t->slots[i].next;
		(void)rec_put(t, i, false);
		slot_unpin(t, i);
	}
}

static int
slots_grow(struct tier *t, uint32_t want)
{
	uint32_t n = t->nslots ? t->nslots : 256;
	struct slot *s;

	while (n < want)
		n *= 2;
	if (n == t->nslots)
		return 0;
	s = realloc(t->slots, sizeof(*s) * n);
	if (s == NULL)
		return -ENOMEM;
	t->slots = s;
	t->nslots = n;
	return 0;
}

/* The record of slot i as it is now (FREE: empty), written under the
 * lock (crash safety 3). */
static int
rec_put(struct tier *t, uint32_t i, bool valid)
{
	struct rec r;
	struct slot *s = &t->slots[i];

	memset(&r, 0, sizeof(r));
	if (valid) {
		r.magic = REC_MAGIC;
		r.seq = s->seq;
		r.lbn = s->lbn;
		r.dcrc = s->crc;
		r.len = s->len;
		r.flags = R_VALID | (s->state == S_DIRTY ? R_DIRTY : 0);
		r.obj = t->tag;
		r.rcrc = crc32c(0, &r, sizeof(r));
	} else {
		atomic_store(&t->cleared, true);
	}
	return write_all(t->ifd, &r, sizeof(r), (off_t)i * REC_SIZE);
}

static void
punch(struct tier *t, uint32_t i)
{
#ifdef FALLOC_FL_PUNCH_HOLE
	(void)fallocate(t->dfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)i * t->bs, t->bs);
#else
	(void)t;
	(void)i;
#endif
}

/* The free-space floor of DIR's file system (cachefilesd's brun, bcull,
 * bstop), looked at every FLOOR_EVERY slots taken, and sooner when those
 * taken since could use half the room left to the next threshold (on a
 * small file system 16 slots passed bstop and filled it).  The slots of
 * the batch being taken are not written yet: they count as used. */
static void
check_floor(struct tier *t, bool force)
{
	struct floor_watch *fw = t->fw;
	struct statvfs sv;
	double pct, avail, next, room;
	uint64_t since = atomic_fetch_add(&fw->since, t->bs) + t->bs;

	if (!force && since < (uint64_t)FLOOR_EVERY * t->bs &&
	    2 * since < atomic_load(&fw->room))
		return;
	atomic_store(&fw->since, 0);
	if (fstatvfs(t->dfd, &sv) < 0 || sv.f_blocks == 0) {
		atomic_store(&fw->room, UINT64_MAX);
		return;
	}
	avail = (double)sv.f_bavail - (double)atomic_load(&fw->unwritten) /
		(double)(sv.f_frsize ? sv.f_frsize : 1);
	pct = 100.0 * avail / (double)sv.f_blocks;
	t->stopped = pct < t->bstop;
	if (pct < t->bcull)
		t->culling = true;
	else if (pct >= t->brun)
		t->culling = false;
	next = pct >= t->bcull ? t->bcull : t->bstop;
	room = (avail - next / 100.0 * (double)sv.f_blocks) * (double)sv.f_frsize;
	atomic_store(&fw->room, room > 0 ? (uint64_t)room : 0);
}

/* The oldest unpinned clean slot, evicted and returned in FILL; NIL if
 * none. */
static uint32_t
evict_one(struct tier *t)
{
	uint32_t i;

	for (i = t->lru_head; i != NIL; i = t->slots[i].next)
		if (t->slots[i].pins == 0)
			break;
	if (i == NIL)
		return NIL;
	(void)rec_put(t, i, false); /* no older copy may outlive a newer */
	slot_unuse(t, i); /* to the free list: take it back */
	t->free_head = t->slots[i].next;
	t->st.evictions++;
	return i;
}

/* May the data file grow by a slot within DIR's budget?  (Taken.) */
static bool
pool_take(struct tier *t)
{
	struct dirpool *p = t->pool;
	uint64_t g;

	if (p == NULL)
		return true;
	g = atomic_load(&p->grown);
	do {
		if (atomic_load(&p->base) + g + t->bs > p->budget)
			return false;
	} while (!atomic_compare_exchange_weak(&p->grown, &g, g + t->bs));
	return true;
}

/* A slot to fill, in state FILL and pinned; NIL when none may be had. */
static uint32_t
slot_get(struct tier *t)
{
	uint32_t i = NIL;

	check_floor(t, false);
	if (t->stopped)
		return NIL;
	if (t->culling) {
		/* reuse an evicted slot's space and free another's */
		i = evict_one(t);
		uint32_t j = evict_one(t);
		if (j != NIL) {
			(void)rec_put(t, j, false);
			punch(t, j);
			slot_free(t, j);
		}
	}
	if (i == NIL && t->free_head != NIL && !t->culling) {
		i = t->free_head;
		t->free_head = t->slots[i].next;
	}
	if (i == NIL && t->nalloc < t->cap && !t->culling && pool_take(t) &&
	    slots_grow(t, t->nalloc + 1) == 0)
		i = t->nalloc++;
	if (i == NIL)
		i = evict_one(t);
	if (i == NIL)
		return NIL;
	t->slots[i].state = S_FILL;
	t->slots[i].pins = 1;
	atomic_fetch_add(&t->fw->unwritten, t->bs); /* slots_written takes it off */
	return i;
}

/* n slots slot_get gave have their data written (or failed): the
 * file system shows them now. */
static void
slots_written(struct tier *t, uint32_t n)
{
	atomic_fetch_sub(&t->fw->unwritten, (uint64_t)n * t->bs);
}

/* ------------------------------------------------------------ meta */

static void
validator_of(struct tier *t, struct clio_validator *v, bool *have)
{
	struct stat st;

	memset(v, 0, sizeof(*v));
	*have = false;
	if (!HAS_VALIDATOR(t->kind))
		return;
	/* the device's own word (a file's fstat, an NFS GETATTR) */
	if (clio_dev_version(t->d, v) == 0) {
		*have = true;
		return;
	}
	memset(v, 0, sizeof(*v));
	if (t->kind != K_FILE || t->path == NULL || stat(t->path, &st) < 0)
		return;
	validator_of_stat(&st, v);
	*have = true;
}

/* Open name in the directory at: a regular file only, no link followed,
 * never waiting (a FIFO or a device planted in its place is refused, not
 * opened for good). */
static int
open_file(int at, const char *name, int flags)
{
	int fd = openat(at, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int
meta_write(struct tier *t, const char *ident, int state)
{
	struct meta m;
	int fd, r = 0;

	memset(&m, 0, sizeof(m));
	m.magic = META_MAGIC;
	m.version = META_VERSION;
	m.bsize = t->bs;
	m.kind = (uint32_t)t->kind;
	m.state = (uint32_t)state;
	m.has_v = !t->has_v ? 0 : validator_racy(&t->v) ? V_HAVE | V_RACY : V_HAVE;
	m.v = t->v;
	m.size = clio_dev_size(t->d);
	snprintf(m.ident, sizeof(m.ident), "%s", ident);
	m.crc = crc32c(0, &m, offsetof(struct meta, crc));
	/* the records cleared so far are durable before a version is
	 * recorded clean: else a power loss brings back an entry dropped
	 * as stale under the new version (crash safety 4) */
	if (state == M_CLEAN && atomic_exchange(&t->cleared, false) &&
	    fdatasync(t->ifd) < 0) {
		r = -errno;
		atomic_store(&t->cleared, true);
		return r;
	}
	fd = open_file(t->ofd, "meta.tmp", O_WRONLY | O_CREAT | O_TRUNC);
	if (fd < 0)
		r = fd;
	else {
		r = write_all(fd, &m, sizeof(m), 0);
		if (r == 0 && fdatasync(fd) < 0)
			r = -errno;
		close(fd);
	}
	if (r == 0 && renameat(t->ofd, "meta.tmp", t->ofd, "meta") < 0)
		r = -errno;
	if (r == 0)
		(void)fsync(t->ofd);
	return r;
}

static int
meta_read_at(int ofd, struct meta *m)
{
	int fd, r;

	fd = open_file(ofd, "meta", O_RDONLY);
	if (fd < 0)
		return fd;
	r = read_all(fd, m, sizeof(*m), 0);
	close(fd);
	if (r < 0)
		return r;
	if (m->magic != META_MAGIC || m->version != META_VERSION ||
	    m->crc != crc32c(0, m, offsetof(struct meta, crc)))
		return -EBADMSG;
	/* a block size conf could not have given: not a meta of ours */
	if (m->bsize < 512 || m->bsize > (1u << 20) || (m->bsize & (m->bsize - 1)))
		return -EBADMSG;
	m->ident[sizeof(m->ident) - 1] = '\0';
	return 0;
}

static int
meta_read(struct tier *t, struct meta *m)
{
	return meta_read_at(t->ofd, m);
}

/* ------------------------------------------------------------ requests */

static void top_put(struct top *op);

/* A write starts: taint every op in flight that overlaps it, and itself
 * if a write overlaps (crash safety 3).  Under the lock. */
static void
op_start(struct tier *t, struct top *op)
{
	struct top *o;
	uint64_t end = op->off + op->len;

	for (o = t->ops; o != NULL; o = o->next) {
		bool overlap = o->off < end && op->off < o->off + o->len;
		if (!overlap)
			continue;
		if (op->op == CLIO_OP_WRITE)
			o->tainted = true;
		if (o->op == CLIO_OP_WRITE)
			op->tainted = true;
	}
	if (op->op == CLIO_OP_WRITE)
		for (struct fill *f = t->fq; f != NULL; f = f->next)
			if (f->off < end && op->off < f->off + f->len)
				f->tainted = true;
	op->next = t->ops;
	op->pprev = &t->ops;
	if (t->ops != NULL)
		t->ops->pprev = &op->next;
	t->ops = op;
	t->nops++;
}

static void
op_end(struct tier *t, struct top *op)
{
	*op->pprev = op->next;
	if (op->next != NULL)
		op->next->pprev = op->pprev;
	if (--t->nops == 0)
		pthread_cond_broadcast(&t->cv);
}

static uint32_t
blen_of(struct tier *t, uint64_t lbn, uint64_t size)
{
	uint64_t start = lbn * t->bs;

	return start >= size ? 0 : (uint32_t)MIN((uint64_t)t->bs, size - start);
}

/* Insert the blocks of [off, off+len) from iov (block-aligned) as clean
 * or dirty entries, unless *tainted (an op's or a fill's, under the lock).  For a dirty insert the old
 * entry is replaced (copy on write); for a clean one a present entry is
 * kept.  Returns 0, or -ENOSPC if a dirty block found no slot. */
static int
insert_blocks(struct tier *t, const bool *tainted, uint64_t off, size_t len,
	      const struct iovec *iov, int iovcnt, size_t skip, bool dirty)
{
	struct iovec *sl = malloc(sizeof(*sl) * (size_t)(iovcnt > 0 ? iovcnt : 1));
	uint64_t lbn = off / t->bs, end = off + len;
	int ret = 0;

	if (sl == NULL)
		return -ENOMEM;
	for (; lbn * t->bs < end; lbn++) {
		uint64_t boff = lbn * t->bs;
		uint32_t blen = (uint32_t)MIN((uint64_t)t->bs, end - boff);
		uint32_t i, old;
		int n, r;

		pthread_mutex_lock(&t->lock);
		if (!dirty && (*tainted || slot_lookup(t, lbn) != NIL)) {
			pthread_mutex_unlock(&t->lock);
			continue;
		}
		i = slot_get(t);
		pthread_mutex_unlock(&t->lock);
		if (i == NIL) {
			if (dirty)
				ret = -ENOSPC;
			continue;
		}
		n = iov_slice(iov, iovcnt, skip + (boff - off), blen, sl, iovcnt);
		r = iov_io(t->dfd, true, sl, n, (off_t)i * t->bs);
		slots_written(t, 1);
		uint32_t crc = r == 0 ? iov_crc(sl, n) : 0;
		pthread_mutex_lock(&t->lock);
		struct slot *s = &t->slots[i];
		s->lbn = lbn;
		s->len = blen;
		s->crc = crc;
		s->seq = ++t->seq;
		s->pins = 0;
		if (r < 0 || (*tainted && !dirty)) {
			(void)rec_put(t, i, false); /* what it held is gone */
			slot_free(t, i);
			pthread_mutex_unlock(&t->lock);
			if (dirty && r < 0)
				ret = r;
			continue;
		}
		old = slot_lookup(t, lbn);
		if (old != NIL && !dirty) { /* another filler was first */
			(void)rec_put(t, i, false);
			slot_free(t, i);
			pthread_mutex_unlock(&t->lock);
			continue;
		}
		s->state = dirty ? S_DIRTY : S_CLEAN;
		r = rec_put(t, i, true);
		if (r < 0) {
			(void)rec_put(t, i, false);
			slot_free(t, i);
			pthread_mutex_unlock(&t->lock);
			if (dirty)
				ret = r;
			continue;
		}
		if (old != NIL) /* the new version is recorded: the old goes
				   once the new is durable */
			slot_zombie(t, old);
		hash_insert(t, i);
		t->nused++;
		if (dirty) {
			s->dirtied = now_monotonic();
			list_append(t, &t->dirty_head, &t->dirty_tail, i);
			t->ndirty++;
		} else {
			list_append(t, &t->lru_head, &t->lru_tail, i);
		}
		t->st.insertions++;
		pthread_mutex_unlock(&t->lock);
	}
	free(sl);
	return ret;
}

/* Drop the entries of blocks [first, last] (crash safety 3); returns the
 * number of records cleared.  Under the lock. */
static int
drop_range(struct tier *t, uint64_t first, uint64_t last)
{
	int n = 0;

	if (last - first > t->nused) { /* a large range: walk the slots */
		for (uint32_t i = 0; i < t->nalloc; i++) {
			struct slot *s = &t->slots[i];
			if ((s->state == S_CLEAN || s->state == S_DIRTY) &&
			    s->lbn >= first && s->lbn <= last) {
				(void)rec_put(t, i, false);
				slot_unuse(t, i);
				n++;
			}
		}
		return n;
	}
	for (uint64_t l = first; l <= last; l++) {
		uint32_t i = slot_lookup(t, l);
		if (i != NIL) {
			(void)rec_put(t, i, false);
			slot_unuse(t, i);
			n++;
		}
	}
	return n;
}

static void
top_finish(struct top *op)
{
	struct tier *t = op->t;
	struct clio_req *req = op->parent;
	ssize_t e = atomic_load(&op->err);

	if (e < 0)
		req->result = e;
	else if (op->op == CLIO_OP_FLUSH)
		req->result = 0;
	else
		req->result = (ssize_t)op->len;
	req->t_done = op->t_done;
	if (op->op == CLIO_OP_FLUSH && e == 0 && !t->writeback &&
	    atomic_load(&t->meta_writing)) {
		/* the device has every write before it: the reader records
		 * its version if no write came since (crash safety 4); not
		 * here, in the device's completion path, which a GETATTR of
		 * the device may need */
		pthread_mutex_lock(&t->lock);
		t->meta_gen = op->gen;
		t->meta_due = true;
		pthread_cond_broadcast(&t->rcv);
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_lock(&t->lock);
	/* a flush that began while it was in flight may have come before
	 * it landed: the next one flushes the device again */
	if (op->through)
		t->devflush = true;
	op_end(t, op);
	pthread_mutex_unlock(&t->lock);
	top_put(op);
	req->done(req);
}

static void
top_put(struct top *op)
{
	for (int i = 0; i < op->nkids; i++)
		free(op->kids[i].iov);
	pthread_mutex_destroy(&op->tlock);
	free(op);
}

/* The filler's insertion of n blocks of fill f (clean, block-aligned)
 * from its block b0: their slots taken under one lock, the data written
 * in runs of consecutive slots, then under one lock, after the taint
 * check, the records written in runs (crash safety 3) and the entries
 * hashed.  n is at most FLOOR_EVERY, so the free-space floor is checked
 * (slot_get) after the data of the blocks before was written. */
static void
insert_fill(struct tier *t, struct fill *f, uint32_t b0, uint32_t n)
{
	uint64_t first = f->off / t->bs + b0;
	const char *data = f->data + (size_t)b0 * t->bs;
	size_t len = MIN(f->len - (size_t)b0 * t->bs, (size_t)n * t->bs);
	struct { uint32_t i, crc; bool ok; } e[FLOOR_EVERY];
	struct rec rb[FLOOR_EVERY];
	uint32_t b, c;

	uint32_t taken = 0;

	pthread_mutex_lock(&t->lock);
	for (b = 0; b < n; b++) {
		e[b].i = f->tainted || slot_lookup(t, first + b) != NIL ? NIL : slot_get(t);
		taken += e[b].i != NIL;
	}
	pthread_mutex_unlock(&t->lock);
	for (b = 0; b < n; b = c) { /* the data, a run of slots at a time */
		for (c = b + 1; e[b].i != NIL && c < n && e[c].i == e[c - 1].i + 1; c++)
			;
		size_t boff = (size_t)b * t->bs;
		int r = e[b].i == NIL ? -1 :
			write_all(t->dfd, data + boff, MIN((size_t)c * t->bs, len) - boff,
				  (off_t)e[b].i * t->bs);
		for (uint32_t k = b; k < c; k++) {
			size_t ko = (size_t)k * t->bs;
			e[k].ok = r == 0;
			e[k].crc = r == 0 ? crc32c(0, data + ko, MIN((size_t)t->bs, len - ko)) : 0;
		}
	}
	slots_written(t, taken);
	pthread_mutex_lock(&t->lock);
	for (b = 0; b < n; b = c) { /* the records, a run of slots at a time */
		for (c = b + 1; e[b].i != NIL && c < n && e[c].i == e[c - 1].i + 1; c++)
			;
		if (e[b].i == NIL)
			continue;
		for (uint32_t k = b; k < c; k++) {
			struct slot *s = &t->slots[e[k].i];
			struct rec *r = &rb[k - b];
			s->lbn = first + k;
			s->len = (uint32_t)MIN((size_t)t->bs, len - (size_t)k * t->bs);
			s->crc = e[k].crc;
			s->seq = ++t->seq;
			s->pins = 0;
			/* a write or a drop came, or another inserter was first:
			 * the record stays empty */
			if (f->tainted || slot_lookup(t, s->lbn) != NIL)
				e[k].ok = false;
			memset(r, 0, sizeof(*r));
			if (!e[k].ok)
				continue;
			r->magic = REC_MAGIC;
			r->seq = s->seq;
			r->lbn = s->lbn;
			r->dcrc = s->crc;
			r->len = s->len;
			r->flags = R_VALID;
			r->obj = t->tag;
			r->rcrc = crc32c(0, r, sizeof(*r));
		}
		int w = write_all(t->ifd, rb, sizeof(*rb) * (c - b), (off_t)e[b].i * REC_SIZE);
		for (uint32_t k = b; k < c; k++) {
			uint32_t i = e[k].i;
			if (!e[k].ok || w < 0) {
				if (w < 0 && e[k].ok)
					(void)rec_put(t, i, false);
				slot_free(t, i);
				continue;
			}
			t->slots[i].state = S_CLEAN;
			hash_insert(t, i);
			t->nused++;
			list_append(t, &t->lru_head, &t->lru_tail, i);
			t->st.insertions++;
		}
	}
	pthread_mutex_unlock(&t->lock);
}

/* A clean insertion of what op's kid moved, [off, off+len) of iov: a
 * copy queued for the filler, so the request completes without waiting
 * for DIR.  A full queue drops it (counted) rather than wait.  Called
 * before op ends, so a write overlapping it taints op or the fill. */
static void
fill_queue(struct tier *t, struct top *op, uint64_t off, size_t len,
	   const struct iovec *iov, int iovcnt)
{
	uint64_t nblk = DIV_ROUND_UP(len, t->bs);
	struct fill *f = NULL;
	bool ok;

	pthread_mutex_lock(&t->lock);
	if (!t->filler_running) { /* no thread: inline, as before */
		pthread_mutex_unlock(&t->lock);
		(void)insert_blocks(t, &op->tainted, off, len, iov, iovcnt, 0, false);
		return;
	}
	ok = !op->tainted && len <= t->fq_max - MIN(t->fq_bytes, t->fq_max);
	if (ok) {
		t->fq_bytes += len; /* reserved */
		for (struct fill **pp = &t->ffree; *pp != NULL; pp = &(*pp)->next)
			if ((*pp)->cap >= len) {
				f = *pp;
				*pp = f->next;
				t->ffree_bytes -= f->cap;
				break;
			}
	} else if (!op->tainted)
		t->st.insert_drops += nblk;
	pthread_mutex_unlock(&t->lock);
	if (!ok)
		return;
	if (f == NULL && (f = malloc(sizeof(*f) + len)) != NULL)
		f->cap = len;
	if (f != NULL) {
		iov_to_buf(iov, iovcnt, 0, f->data, len);
		f->next = NULL;
		f->off = off;
		f->len = len;
		f->tainted = false;
	}
	pthread_mutex_lock(&t->lock);
	if (f == NULL || op->tainted) {
		t->fq_bytes -= len;
		if (f == NULL)
			t->st.insert_drops += nblk;
		pthread_mutex_unlock(&t->lock);
		free(f);
		return;
	}
	*t->fq_tail = f;
	t->fq_tail = &f->next;
	pthread_cond_broadcast(&t->fcv);
	pthread_mutex_unlock(&t->lock);
}

/* The filler: writes the queued insertions into DIR, oldest first; at
 * stop, the queue is drained first. */
static void *
filler_main(void *arg)
{
	struct tier *t = arg;

	pthread_mutex_lock(&t->lock);
	for (;;) {
		struct fill *f = t->fq;
		if (f == NULL || (t->fpaused && !t->fstop)) {
			if (f == NULL && t->fstop)
				break;
			pthread_cond_wait(&t->fcv, &t->lock);
			continue;
		}
		pthread_mutex_unlock(&t->lock);
		uint32_t nb = (uint32_t)DIV_ROUND_UP(f->len, t->bs);
		for (uint32_t b = 0; b < nb; b += FLOOR_EVERY)
			insert_fill(t, f, b, MIN(nb - b, (uint32_t)FLOOR_EVERY));
		pthread_mutex_lock(&t->lock);
		t->fq = f->next;
		if (t->fq == NULL)
			t->fq_tail = &t->fq;
		t->fq_bytes -= f->len;
		if (t->fq == NULL)
			pthread_cond_broadcast(&t->fcv); /* tier_fill_wait */
		if (t->fq_bytes + t->ffree_bytes + f->cap <= t->fq_max && !t->fstop) {
			f->next = t->ffree;
			t->ffree = f;
			t->ffree_bytes += f->cap;
		} else {
			free(f);
		}
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* Every queued insertion tainted: what they hold may be old (a drop, a
 * resize).  Under the lock. */
static void
fills_taint(struct tier *t)
{
	for (struct fill *f = t->fq; f != NULL; f = f->next)
		f->tainted = true;
}

static void
kid_done(struct clio_req *kr)
{
	struct tchild *k = kr->priv;
	struct top *op = k->op;
	struct tier *t = op->t;
	ssize_t r = kr->result;

	if (r < 0) {
		ssize_t z = 0;
		atomic_compare_exchange_strong(&op->err, &z, r);
	} else if (op->op == CLIO_OP_READ) {
		pthread_mutex_lock(&t->lock);
		t->st.bytes_dev += k->len;
		pthread_mutex_unlock(&t->lock);
		if (op->aligned)
			fill_queue(t, op, k->off, k->len, k->iov, k->iovcnt);
	} else if (op->op == CLIO_OP_WRITE && op->aligned && !t->writeback) {
		fill_queue(t, op, k->off, k->len, k->iov, k->iovcnt);
	}
	pthread_mutex_lock(&op->tlock);
	if (kr->t_done > op->t_done)
		op->t_done = kr->t_done;
	pthread_mutex_unlock(&op->tlock);
	if (atomic_fetch_sub(&op->pending, 1) == 1)
		top_finish(op);
}

static struct top *
top_new(struct tier *t, struct clio_req *req, int maxkids, size_t len)
{
	struct top *op = calloc(1, sizeof(*op) + sizeof(struct tchild) * (size_t)maxkids);

	if (op == NULL)
		return NULL;
	op->t = t;
	op->parent = req;
	op->op = req->op;
	op->off = req->offset;
	op->len = len;
	pthread_mutex_init(&op->tlock, NULL);
	atomic_init(&op->pending, 1);
	atomic_init(&op->err, 0);
	return op;
}

/* Add a device request for [off, off+len) of the parent (at skip in its
 * iovec); the iovec slice is allocated after the op. */
static int
kid_add(struct top *op, uint64_t off, size_t len, size_t skip)
{
	struct clio_req *req = op->parent;
	struct tchild *k = &op->kids[op->nkids];

	k->iov = malloc(sizeof(struct iovec) * (size_t)(req->iovcnt > 0 ? req->iovcnt : 1));
	if (k->iov == NULL)
		return -ENOMEM;
	k->iovcnt = op->op == CLIO_OP_FLUSH ? 0
		  : iov_slice(req->iov, req->iovcnt, skip, len, k->iov,
			      req->iovcnt);
	k->op = op;
	k->off = off;
	k->len = len;
	memset(&k->req, 0, sizeof(k->req));
	k->req.op = op->op;
	k->req.flags = (req->flags & CLIO_REQ_SYNC) | DEV_REQ_TIER;
	k->req.offset = off;
	k->req.iov = k->iov;
	k->req.iovcnt = k->iovcnt;
	k->req.done = kid_done;
	k->req.priv = k;
	op->nkids++;
	return 0;
}

/* Submit the kids; the op finishes when the last completes. */
static void
kids_go(struct tier *t, struct top *op)
{
	int n = op->nkids;

	atomic_store(&op->pending, n + 1);
	for (int i = 0; i < n; i++) {
		struct tchild *k = &op->kids[i];
		int r = clio_dev_submit(t->d, &k->req);
		if (r < 0) {
			k->req.result = r;
			k->req.t_done = 0;
			kid_done(&k->req);
		}
	}
	if (atomic_fetch_sub(&op->pending, 1) == 1)
		top_finish(op);
}

static int tier_write(struct tier *t, struct clio_req *req, size_t len,
		      bool aligned);

/* A read: the blocks DIR holds, then the runs of the rest from the
 * device. */
static void
serve_read(struct tier *t, struct top *op)
{
	struct clio_req *req = op->parent;
	uint64_t off = op->off, size = op->size;
	size_t len = op->len;
	bool aligned = op->aligned;
	uint64_t first = off / t->bs;
	uint32_t nblk = len ? (uint32_t)DIV_ROUND_UP(off + len, t->bs) - (uint32_t)first : 0;
	uint8_t *hit = op->hit;
	struct iovec *sl = op->sl;

	if (aligned && len > 0) {
		/* the blocks DIR holds, pinned under one lock; then read in
		 * runs of consecutive slots, each block's crc checked; then
		 * counted and unpinned under one lock */
		struct { uint32_t i, crc, want, have; bool good; } *ent = malloc(sizeof(*ent) * nblk);
		if (ent == NULL) {
			memset(hit, 0, nblk);
			goto runs;
		}
		pthread_mutex_lock(&t->lock);
		for (uint32_t b = 0; b < nblk; b++) {
			uint64_t lbn = first + b;
			uint32_t want = (uint32_t)MIN((uint64_t)t->bs, off + len - lbn * t->bs);
			uint32_t i = slot_lookup(t, lbn);
			ent[b].i = NIL;
			/* a clean entry is the block as it is; a dirty one
			 * may be a short last block the object has grown
			 * past since: zeros follow it (writeback) */
			if (i == NIL ||
			    (t->slots[i].state == S_DIRTY
				     ? t->slots[i].len > want
				     : t->slots[i].len != want || want != blen_of(t, lbn, size))) {
				t->st.misses++;
				continue;
			}
			t->slots[i].pins++;
			ent[b].i = i;
			ent[b].crc = t->slots[i].crc;
			ent[b].want = want;
			ent[b].have = t->slots[i].len;
			if (t->slots[i].state == S_CLEAN) { /* most recently used */
				list_remove(t, &t->lru_head, &t->lru_tail, i);
				list_append(t, &t->lru_head, &t->lru_tail, i);
			}
		}
		pthread_mutex_unlock(&t->lock);
		for (uint32_t b = 0; b < nblk;) {
			uint32_t r = b;
			size_t rl;
			int n, k;
			if (ent[b].i == NIL) {
				b++;
				continue;
			}
			while (r + 1 < nblk && ent[r + 1].i != NIL && ent[r + 1].i == ent[r].i + 1 &&
			       ent[r].have == t->bs && r + 1 - b < 64)
				r++;
			rl = (size_t)(r - b) * t->bs + ent[r].have;
			n = iov_slice(req->iov, req->iovcnt, (size_t)b * t->bs, rl, sl,
				      req->iovcnt);
			k = iov_io(t->dfd, false, sl, n, (off_t)ent[b].i * t->bs);
			for (uint32_t c = b; c <= r; c++) {
				ent[c].good = false;
				if (k < 0)
					continue;
				n = iov_slice(req->iov, req->iovcnt, (size_t)c * t->bs,
					      ent[c].have, sl, req->iovcnt);
				ent[c].good = iov_crc(sl, n) == ent[c].crc;
				if (ent[c].good && ent[c].have < ent[c].want) {
					n = iov_slice(req->iov, req->iovcnt,
						      (size_t)c * t->bs + ent[c].have,
						      ent[c].want - ent[c].have, sl, req->iovcnt);
					for (int z = 0; z < n; z++)
						memset(sl[z].iov_base, 0, sl[z].iov_len);
				}
			}
			b = r + 1;
		}
		pthread_mutex_lock(&t->lock);
		for (uint32_t b = 0; b < nblk; b++) {
			uint64_t lbn = first + b;
			uint32_t i = ent[b].i, crc = ent[b].crc;
			if (i == NIL)
				continue;
			if (ent[b].good) {
				t->st.hits++;
				t->st.bytes_dir += ent[b].want;
				hit[b] = 1;
			} else {
				/* corrupt: drop it (if it is still the entry
				 * read) and read the device; a dirty one was
				 * the only copy: the read fails */
				t->st.misses++;
				t->st.crc_failures++;
				if ((t->slots[i].state == S_CLEAN ||
				     t->slots[i].state == S_DIRTY) &&
				    t->slots[i].lbn == lbn && t->slots[i].crc == crc) {
					if (t->slots[i].state == S_DIRTY) {
						atomic_store(&op->err, -EIO);
						t->wb_err = EIO;
					}
					(void)rec_put(t, i, false);
					slot_unuse(t, i);
				}
			}
			slot_unpin(t, i);
		}
		pthread_mutex_unlock(&t->lock);
		free(ent);
runs:
		for (uint32_t b = 0; b < nblk;) {
			uint32_t e = b;
			if (hit[b]) {
				b++;
				continue;
			}
			while (e < nblk && !hit[e])
				e++;
			uint64_t ro = (first + b) * t->bs;
			size_t rl = (size_t)(MIN(off + len, (first + e) * t->bs) - ro);
			if (kid_add(op, ro, rl, (size_t)(ro - off)) < 0)
				atomic_store(&op->err, -ENOMEM);
			b = e;
		}
	} else if (len > 0) {
		pthread_mutex_lock(&t->lock);
		t->st.misses += nblk;
		pthread_mutex_unlock(&t->lock);
		if (kid_add(op, off, len, 0) < 0)
			atomic_store(&op->err, -ENOMEM);
	}
	free(hit);
	free(sl);
	op->hit = NULL;
	op->sl = NULL;
	kids_go(t, op);
}

static void meta_clean(struct tier *t);
static bool bypass_seen(struct tier *t);
static ssize_t dev_sync(struct tier *t, enum clio_op op, void *buf, size_t len,
			uint64_t off);

/* writeback: an fsync after writes that went through to the device
 * flushes it, then, if no write came since the fsync began, records the
 * device's version (crash safety 4), so that after a crash the dirty
 * blocks are written back, not taken for another writer's. */
static void
wb_flush(struct tier *t, struct top *op)
{
	ssize_t r = dev_sync(t, CLIO_OP_FLUSH, NULL, 0, 0);
	bool quiet;

	pthread_mutex_lock(&t->lock);
	if (r < 0)
		t->devflush = true; /* the next fsync flushes again */
	quiet = t->wgen == op->gen;
	for (struct top *o = t->ops; o != NULL && quiet; o = o->next)
		if (o->op == CLIO_OP_WRITE)
			quiet = false;
	pthread_mutex_unlock(&t->lock);
	if (r < 0)
		atomic_store(&op->err, r);
	else if (quiet && atomic_load(&t->meta_writing)) {
		pthread_mutex_lock(&t->wb_lock); /* no write-back batch in flight */
		meta_clean(t);
		pthread_mutex_unlock(&t->wb_lock);
	}
	top_finish(op);
}

/* The tier's reader: serves the asynchronous reads queued on t->rq (and
 * writeback's device flushes, wb_flush), and records the device's
 * version after a flush (meta_due). */
static void *
reader_main(void *arg)
{
	struct tier *t = arg;

	pthread_mutex_lock(&t->lock);
	for (;;) {
		struct top *op = t->rq;
		if (op == NULL && t->meta_due) {
			bool quiet = t->wgen == t->meta_gen;
			for (struct top *o = t->ops; o != NULL && quiet; o = o->next)
				if (o->op == CLIO_OP_WRITE)
					quiet = false;
			t->meta_due = false;
			pthread_mutex_unlock(&t->lock);
			if (quiet)
				meta_clean(t);
			pthread_mutex_lock(&t->lock);
			continue;
		}
		if (op == NULL) {
			if (t->rstop)
				break;
			pthread_cond_wait(&t->rcv, &t->lock);
			continue;
		}
		t->rq = op->rnext;
		if (t->rq == NULL)
			t->rq_tail = &t->rq;
		pthread_mutex_unlock(&t->lock);
		if (op->op == CLIO_OP_FLUSH)
			wb_flush(t, op);
		else
			serve_read(t, op);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

static int wb_all(struct tier *t, bool all, uint64_t first, uint64_t last);

/* Whether DIR holds a dirty entry of a block of [first, first + n). */
static bool
tier_dirty_in(struct tier *t, uint64_t first, uint32_t n)
{
	bool dirty = false;

	pthread_mutex_lock(&t->lock);
	if (n > t->ndirty) { /* a long range: walk the dirty entries */
		for (uint32_t i = t->dirty_head; i != NIL && !dirty; i = t->slots[i].next)
			dirty = t->slots[i].lbn >= first && t->slots[i].lbn - first < n;
	} else {
		for (uint32_t k = 0; k < n && !dirty; k++) {
			uint32_t i = slot_lookup(t, first + k);
			dirty = i != NIL && t->slots[i].state == S_DIRTY;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return dirty;
}

/* An unaligned read of a read-only device's dirty blocks: the aligned
 * read of [start, end) into a buffer of its own, copied out at its end. */
struct bounce {
	struct clio_req req, *orig;
	struct iovec v;
	size_t skip;
};

static void
bounce_done(struct clio_req *r)
{
	struct bounce *b = r->priv;
	struct clio_req *orig = b->orig;
	size_t len = iov_length(orig->iov, orig->iovcnt);

	if (r->result < 0) {
		orig->result = r->result;
	} else {
		buf_to_iov(orig->iov, orig->iovcnt, 0, (char *)b->v.iov_base + b->skip, len);
		orig->result = (ssize_t)len;
	}
	orig->t_done = r->t_done;
	free(b->v.iov_base);
	free(b);
	orig->done(orig);
}

static int
bounce_read(struct tier *t, clio_dev *d, struct clio_req *req, uint64_t start,
	    uint64_t end)
{
	struct bounce *b = calloc(1, sizeof(*b));
	int r;

	if (b == NULL || (b->v.iov_base = malloc(end - start)) == NULL) {
		free(b);
		return -ENOMEM;
	}
	b->v.iov_len = end - start;
	b->orig = req;
	b->skip = req->offset - start;
	b->req.op = CLIO_OP_READ;
	b->req.flags = req->flags;
	b->req.offset = start;
	b->req.iov = &b->v;
	b->req.iovcnt = 1;
	b->req.done = bounce_done;
	b->req.priv = b;
	r = tier_submit(t, d, &b->req);
	if (r < 0) {
		free(b->v.iov_base);
		free(b);
	}
	return r;
}

int
tier_submit(struct tier *t, clio_dev *d, struct clio_req *req)
{
	bool flush = req->op == CLIO_OP_FLUSH;
	size_t len = flush ? 0 : iov_length(req->iov, req->iovcnt);
	uint64_t size = clio_dev_size(d), off = req->offset;
	bool aligned;
	struct top *op;

	if (!flush && req->op != CLIO_OP_READ && req->op != CLIO_OP_WRITE)
		return -EINVAL;
	if (req->op == CLIO_OP_WRITE && d->readonly)
		return -EROFS;
	if (!flush && (req->iovcnt < 0 || (req->iovcnt > 0 && req->iov == NULL)))
		return -EINVAL;
	if (!flush && d->ops->resize == NULL && (off > size || len > size - off))
		return req->op == CLIO_OP_WRITE ? -ENOSPC : -EINVAL;
	/* writeback may not take a write the device would refuse (dev.c) */
	if (req->op == CLIO_OP_WRITE && d->max_size != 0 &&
	    (off > d->max_size || len > d->max_size - off))
		return -EFBIG;
	/* a block run the tier can hold: whole blocks, or ending in the
	 * object's last block, read to its end or written to or past it;
	 * once the object has grown, such a short entry is a miss if clean
	 * and, if dirty, the block's first bytes (serve_read) */
	aligned = off % t->bs == 0 &&
		  (len % t->bs == 0 ||
		   (req->op == CLIO_OP_READ && off + len == size) ||
		   (req->op == CLIO_OP_WRITE && off + len >= size));

	if (req->op == CLIO_OP_WRITE)
		return tier_write(t, req, len, aligned);

	if (flush) {
		op = top_new(t, req, 1, 0);
		if (op == NULL)
			return -ENOMEM;
		pthread_mutex_lock(&t->lock);
		op->gen = t->wgen;
		pthread_mutex_unlock(&t->lock);
		if (t->writeback) {
			/* fsync: the dirty entries are durable in DIR */
			ssize_t e = 0;
			if (fdatasync(t->dfd) < 0 || fdatasync(t->ifd) < 0)
				e = -errno;
			pthread_mutex_lock(&t->lock);
			if (e == 0)
				zombies_clear(t);
			if (e == 0 && t->wb_err) {
				e = -t->wb_err;
				t->wb_err = 0;
			}
			bool devflush = e == 0 && t->devflush;
			t->devflush = false;
			op_start(t, op);
			pthread_mutex_unlock(&t->lock);
			atomic_store(&op->err, e);
			if (!devflush) {
				top_finish(op);
				return 0;
			}
			/* and the writes that went through, on the device,
			 * by the reader (not in a device's thread) */
			if (t->reader_running) {
				pthread_mutex_lock(&t->lock);
				op->rnext = NULL;
				*t->rq_tail = op;
				t->rq_tail = &op->rnext;
				pthread_cond_broadcast(&t->rcv);
				pthread_mutex_unlock(&t->lock);
			} else {
				wb_flush(t, op);
			}
			return 0;
		}
		pthread_mutex_lock(&t->lock);
		op_start(t, op);
		if (t->wb_err) { /* damaged dirty blocks found at the open */
			atomic_store(&op->err, -t->wb_err);
			t->wb_err = 0;
		}
		pthread_mutex_unlock(&t->lock);
		if (kid_add(op, 0, 0, 0) < 0) {
			pthread_mutex_lock(&t->lock);
			op_end(t, op);
			pthread_mutex_unlock(&t->lock);
			top_put(op);
			return -ENOMEM;
		}
		kids_go(t, op);
		return 0;
	}

	/* a read: the blocks DIR holds, then the runs of the rest */
	uint64_t first = off / t->bs;
	uint32_t nblk = len ? (uint32_t)DIV_ROUND_UP(off + len, t->bs) - (uint32_t)first : 0;
	/* a read-only device keeps the dirty blocks a crash left (they are
	 * its newest data): an unaligned read of one is made of the whole
	 * blocks around it, read as an aligned read is */
	if (d->readonly && !aligned && len > 0 && off + len <= size &&
	    tier_dirty_in(t, first, nblk))
		return bounce_read(t, d, req, first * t->bs,
				   MIN((first + nblk) * t->bs, size));
	/* writeback: an unaligned read goes to the device whole, which has
	 * not got the dirty blocks it covers yet: they go there first, as
	 * before an unaligned write */
	if (t->writeback && !aligned && len > 0 && tier_dirty_in(t, first, nblk)) {
		int r = wb_all(t, false, first, first + nblk - 1);
		if (r < 0)
			return r;
	}
	op = top_new(t, req, aligned ? (int)(nblk / 2 + 1) : 1, len);
	uint8_t *hit = calloc(nblk ? nblk : 1, 1);
	struct iovec *sl = malloc(sizeof(*sl) * (size_t)(req->iovcnt > 0 ? req->iovcnt : 1));
	if (op == NULL || hit == NULL || sl == NULL) {
		free(hit);
		free(sl);
		if (op)
			top_put(op);
		return -ENOMEM;
	}
	op->aligned = aligned;
	pthread_mutex_lock(&t->lock);
	op_start(t, op);
	pthread_mutex_unlock(&t->lock);
	op->size = size;
	op->hit = hit;
	op->sl = sl;
	if (!(req->flags & CLIO_REQ_SYNC) && t->reader_running) {
		/* read-ahead and other asynchronous reads: the blocks in DIR
		 * are copied by the tier's reader, not by the submitter */
		pthread_mutex_lock(&t->lock);
		op->rnext = NULL;
		*t->rq_tail = op;
		t->rq_tail = &op->rnext;
		pthread_cond_broadcast(&t->rcv);
		pthread_mutex_unlock(&t->lock);
		return 0;
	}
	serve_read(t, op);
	return 0;
}

static int
meta_begin_write(struct tier *t)
{
	int r = 0;

	pthread_mutex_lock(&t->meta_lock);
	if (!atomic_load(&t->meta_writing) && HAS_VALIDATOR(t->kind)) {
		struct meta m;
		r = meta_read(t, &m);
		if (r == 0)
			r = meta_write(t, m.ident, M_WRITING);
		if (r == 0)
			atomic_store(&t->meta_writing, true);
	}
	pthread_mutex_unlock(&t->meta_lock);
	return r;
}

/* Dirty blocks up to end: a resizable device grows to it, as a write
 * the device took would have grown it (dev.c). */
static void
dev_grow(struct tier *t, uint64_t end)
{
	clio_dev *d = t->d;

	if (d->ops->resize == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	if (end > d->size)
		d->size = end;
	pthread_mutex_unlock(&d->lock);
}

static int
tier_write(struct tier *t, struct clio_req *req, size_t len, bool aligned)
{
	struct top *op = top_new(t, req, 1, len);
	uint64_t first = req->offset / t->bs;
	uint64_t last = len ? (req->offset + len - 1) / t->bs : first;
	int n = 0, r;

	if (op == NULL)
		return -ENOMEM;
	op->aligned = aligned;
	if (t->writeback && aligned) {
		pthread_mutex_lock(&t->lock);
		t->wgen++;
		op_start(t, op);
		pthread_mutex_unlock(&t->lock);
		r = insert_blocks(t, &op->tainted, req->offset, len, req->iov,
				  req->iovcnt, 0, true);
		if (r == 0)
			dev_grow(t, req->offset + len);
		if (r != -ENOSPC) {
			atomic_store(&op->err, r);
			pthread_mutex_lock(&t->lock);
			pthread_cond_broadcast(&t->cv); /* the writer has work */
			pthread_mutex_unlock(&t->lock);
			top_finish(op);
			return 0;
		}
		/* no room for it in DIR: write it through */
		pthread_mutex_lock(&t->lock);
		op_end(t, op);
		pthread_mutex_unlock(&t->lock);
	}
	/* through to the device: a dirty block it covers in part goes
	 * first (writeback), then the entries it covers are dropped,
	 * durably, before the device sees the write (crash safety 3) */
	if (t->writeback && len > 0 && (r = wb_all(t, false, first, last)) < 0)
		goto fail;
	pthread_mutex_lock(&t->lock);
	t->wgen++;
	if (t->writeback)
		t->devflush = op->through = true;
	op_start(t, op);
	n = len ? drop_range(t, first, last) : 0;
	pthread_mutex_unlock(&t->lock);
	/* after op_start: a meta_clean() from now on sees the write in
	 * flight, one before has ended and says "clean" no more.  A DIR
	 * that cannot say "writing" fails no write: the file's new
	 * validator differs from the recorded one anyway */
	(void)meta_begin_write(t);
	if (n > 0 && fdatasync(t->ifd) < 0)
		r = -errno;
	else
		r = kid_add(op, req->offset, len, 0);
	if (r < 0) {
		pthread_mutex_lock(&t->lock);
		op_end(t, op);
		pthread_mutex_unlock(&t->lock);
		goto fail;
	}
	kids_go(t, op);
	return 0;
fail:
	top_put(op);
	return r;
}

/* ------------------------------------------------------------ device I/O */

struct bwait {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
};

static void
bwait_done(struct clio_req *req)
{
	struct bwait *w = req->priv;

	pthread_mutex_lock(&w->m);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

/* A synchronous transfer of the tier's own, straight to the device. */
static ssize_t
dev_sync(struct tier *t, enum clio_op op, void *buf, size_t len, uint64_t off)
{
	struct bwait w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	struct iovec v = { buf, len };
	struct clio_req req;
	int r;

	memset(&req, 0, sizeof(req));
	req.op = op;
	req.flags = CLIO_REQ_SYNC | DEV_REQ_TIER;
	req.offset = off;
	req.iov = op == CLIO_OP_FLUSH ? NULL : &v;
	req.iovcnt = op == CLIO_OP_FLUSH ? 0 : 1;
	req.done = bwait_done;
	req.priv = &w;
	r = clio_dev_submit(t->d, &req);
	if (r < 0)
		return r;
	pthread_mutex_lock(&w.m);
	while (!w.done)
		pthread_cond_wait(&w.cv, &w.m);
	pthread_mutex_unlock(&w.m);
	return req.result;
}

/* ------------------------------------------------------------ write-back */

static uint64_t drop_all(struct tier *t, bool dirty_too);
static void drop_stale(struct tier *t);

/* Record the device's version as that of the entries.  With no write of
 * ours since the last record, a new version is another writer's (a
 * process that ran without the tier, say): the clean entries go first. */
static void
meta_clean(struct tier *t)
{
	struct meta m;
	struct clio_validator v;
	bool have;

	pthread_mutex_lock(&t->meta_lock);
	/* writeback: a write that goes through to the device is in flight:
	 * the file's version is not known before it lands (meta stays
	 * "writing"; the fsync after it records it) */
	pthread_mutex_lock(&t->lock);
	for (struct top *o = t->ops; o != NULL; o = o->next)
		if (o->op == CLIO_OP_WRITE && o->through) {
			pthread_mutex_unlock(&t->lock);
			pthread_mutex_unlock(&t->meta_lock);
			return;
		}
	pthread_mutex_unlock(&t->lock);
	if (meta_read(t, &m) == 0) {
		validator_of(t, &v, &have);
		if ((!atomic_load(&t->meta_writing) && HAS_VALIDATOR(t->kind) &&
		     (have != t->has_v || (have && !validator_same(&v, &t->v)))) ||
		    bypass_seen(t)) {
			pthread_mutex_lock(&t->lock);
			drop_stale(t);
			pthread_mutex_unlock(&t->lock);
		}
		t->v = v;
		t->has_v = have;
		if (meta_write(t, m.ident, M_CLEAN) == 0)
			atomic_store(&t->meta_writing, false);
	}
	pthread_mutex_unlock(&t->meta_lock);
}

/*
 * Write the oldest dirty entries (all, or those of blocks [first, last])
 * to the device, up to 64, flush it, then mark them clean (crash safety
 * 5).  Returns the blocks written, or -errno.
 */
static int
wb_batch(struct tier *t, bool all, uint64_t first, uint64_t last)
{
	struct { uint32_t i; uint64_t seq, lbn; uint32_t len, crc; int r; } b[64];
	int n = 0, ok = 0, err = 0;
	char *buf;
	ssize_t r;

	pthread_mutex_lock(&t->wb_lock);
	pthread_mutex_lock(&t->lock);
	for (uint32_t i = t->dirty_head; i != NIL && n < 64; i = t->slots[i].next) {
		struct slot *s = &t->slots[i];
		if (!all && (s->lbn < first || s->lbn > last))
			continue;
		s->pins++;
		b[n].i = i;
		b[n].seq = s->seq;
		b[n].lbn = s->lbn;
		b[n].len = s->len;
		b[n].crc = s->crc;
		n++;
	}
	pthread_mutex_unlock(&t->lock);
	if (n == 0) {
		pthread_mutex_unlock(&t->wb_lock);
		return 0;
	}
	buf = malloc(t->bs);
	err = buf == NULL ? -ENOMEM : 0;
	/* a full DIR that cannot say "writing" holds no write-back up: the
	 * device's new validator differs from the recorded one anyway */
	(void)meta_begin_write(t);
	for (int k = 0; k < n; k++) {
		b[k].r = err;
		if (err < 0)
			continue;
		b[k].r = read_all(t->dfd, buf, b[k].len, (off_t)b[k].i * t->bs);
		if (b[k].r == 0 && crc32c(0, buf, b[k].len) != b[k].crc)
			b[k].r = -EBADMSG;
		if (b[k].r == 0) {
			r = dev_sync(t, CLIO_OP_WRITE, buf, b[k].len, b[k].lbn * t->bs);
			b[k].r = r < 0 ? (int)r : 0;
		}
		if (b[k].r == 0)
			ok++;
		else if (b[k].r != -EBADMSG && err == 0)
			err = b[k].r;
	}
	free(buf);
	if (ok > 0 && (r = dev_sync(t, CLIO_OP_FLUSH, NULL, 0, 0)) < 0) {
		err = (int)r;
		for (int k = 0; k < n; k++)
			if (b[k].r == 0)
				b[k].r = err;
	}
	if (err == 0)
		meta_clean(t);
	bool synced = fdatasync(t->ifd) == 0;
	pthread_mutex_lock(&t->lock);
	if (synced) /* before a new version becomes clean, and evictable */
		zombies_clear(t);
	for (int k = 0; k < n; k++) {
		uint32_t i = b[k].i;
		struct slot *s = &t->slots[i];
		bool same = s->state == S_DIRTY && s->seq == b[k].seq;
		if (same && b[k].r == -EBADMSG) {
			/* the only copy of dirty data is corrupt */
			t->st.crc_failures++;
			(void)rec_put(t, i, false);
			slot_unuse(t, i);
			if (err == 0)
				err = -EIO;
		} else if (same && b[k].r == 0 && synced) {
			list_remove(t, &t->dirty_head, &t->dirty_tail, i);
			t->ndirty--;
			s->state = S_CLEAN;
			list_append(t, &t->lru_head, &t->lru_tail, i);
			(void)rec_put(t, i, true);
		}
		slot_unpin(t, i);
	}
	if (t->ndirty == 0)
		pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_unlock(&t->wb_lock);
	return err < 0 ? err : ok;
}

/* Every dirty entry (of [first, last]) to the device; the first error. */
static int
wb_all(struct tier *t, bool all, uint64_t first, uint64_t last)
{
	int r, tries = 0;

	while ((r = wb_batch(t, all, first, last)) > 0 || (r < 0 && ++tries < 3))
		;
	return r;
}

/* writeback: the background writer takes the oldest dirty entries once
 * they are dirty_age old, or when half the slots are dirty. */
static void *
writer_main(void *arg)
{
	struct tier *t = arg;

	pthread_mutex_lock(&t->lock);
	while (!t->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&t->cv, &t->lock, &ts);
		if (t->stopping || t->ndirty == 0 ||
		    (t->ndirty < t->cap / 2 &&
		     now_monotonic() - t->slots[t->dirty_head].dirtied < t->wb_age))
			continue;
		pthread_mutex_unlock(&t->lock);
		int r = wb_batch(t, true, 0, 0);
		pthread_mutex_lock(&t->lock);
		if (r < 0)
			t->wb_err = -r;
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* ------------------------------------------------------------ opening */

/* What the device is and its identity (the key of its entries). */
static char *
identity_of(struct tier *t)
{
	clio_dev *d = t->d;
	const char *scheme = d->ops->scheme;
	uint64_t size = clio_dev_size(d);

	if (strcmp(scheme, "file") == 0) {
		const char *n = d->name;
		struct stat st;
		if (strncmp(n, "file:", 5) == 0)
			n += 5;
		t->path = strndup(n, strcspn(n, "?"));
		if (t->path != NULL && stat(t->path, &st) == 0) {
			/* the path resolved: "f", "./f" and "/proc/self/fd/N"
			 * (clio mount's, N varies) are one object */
			char *rp = realpath(t->path, NULL), *id;
			const char *p = rp != NULL ? rp : t->path;
			if (S_ISREG(st.st_mode)) {
				t->kind = K_FILE;
				id = xasprintf("file dev=%llu ino=%llu path=%s",
					       (unsigned long long)st.st_dev,
					       (unsigned long long)st.st_ino, p);
			} else {
				t->kind = K_PROMISE; /* a block device */
				id = xasprintf("blockdev rdev=%llu path=%s size=%llu",
					       (unsigned long long)st.st_rdev, p,
					       (unsigned long long)size);
			}
			free(rp);
			return id;
		}
	}
	if (strcmp(scheme, "nfs") == 0) {
		struct clio_validator v;
		/* the server and path, not clio's and libnfs's keys, and the
		 * file's fileid */
		if (clio_dev_version(d, &v) == 0) {
			t->kind = K_NFS;
			return xasprintf("nfs %.*s fileid=%llu", (int)strcspn(d->name, "?"),
					 d->name, (unsigned long long)v.id);
		}
	}
	t->kind = strcmp(scheme, "mem") == 0 || strcmp(scheme, "sim") == 0
			  ? K_VOLATILE
			  : K_PROMISE;
	return xasprintf("%s %s size=%llu", scheme, d->name,
			 (unsigned long long)size);
}

static int
open_in(struct tier *t, const char *name, int flags)
{
	return open_file(t->ofd, name, flags);
}

/* The directory name in at, if it is one of ours: not a symbolic link,
 * owned by this user, and (if fix) made no one else's to read (0700).
 * A directory of another user's is not ours to use (-EPERM): who can
 * write it can plant links there, or read what we write. */
static int
own_dir(int at, const char *name, bool fix)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int e;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		e = errno;
	else if (st.st_uid != geteuid())
		e = EPERM;
	else if (fix && (st.st_mode & 077) != 0 && fchmod(fd, 0700) < 0)
		e = errno;
	else
		return fd;
	close(fd);
	return -e;
}

/* Drop every entry (clean only, or all); returns how many. */
static uint64_t
drop_all(struct tier *t, bool dirty_too)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < t->nalloc; i++) {
		struct slot *s = &t->slots[i];
		if (s->state == S_CLEAN || (dirty_too && s->state == S_DIRTY)) {
			(void)rec_put(t, i, false);
			slot_unuse(t, i);
			n++;
		}
	}
	return n;
}

/* The clean entries are stale: dropped, and the reads in flight and the
 * queued insertions tainted (they may bring the old data).  Under the
 * lock. */
static void
drop_stale(struct tier *t)
{
	t->st.stale_drops += drop_all(t, false);
	for (struct top *o = t->ops; o != NULL; o = o->next)
		o->tainted = true;
	fills_taint(t);
}

/* A process that writes an object whose entries another process holds
 * runs without the tier, its writes unseen by the holder's validator
 * (the holder takes the new version for its own).  So it marks the
 * object: a file "bypass" it keeps flock()ed (shared) until it closes
 * the device.  The holder, at each record of the version, drops its
 * clean entries while the mark is there, and removes it once no process
 * holds it (the one holding the object's lock alone removes it). */
static void
bypass_mark(struct tier *t)
{
	struct stat st;

	if (t->d->tier_bypass > 0 || t->d->readonly)
		return;
	for (int tries = 0; tries < 100; tries++) {
		int fd = open_in(t, "bypass", O_RDWR | O_CREAT);
		if (fd < 0)
			return;
		if (flock(fd, LOCK_SH) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0) {
			t->d->tier_bypass = fd + 1;
			return;
		}
		close(fd); /* removed meanwhile: once more */
	}
}

/* Whether the object is marked (bypass_mark); the mark goes if no
 * process holds it.  After the version was read. */
static bool
bypass_seen(struct tier *t)
{
	int fd = open_in(t, "bypass", O_RDWR);

	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		(void)unlinkat(t->ofd, "bypass", 0);
	close(fd);
	return true;
}

/* Read the index: each valid record becomes an entry (the newest of a
 * block wins; a dirty one only if its data checks). */
static int
load_index(struct tier *t, uint64_t maxblk)
{
	struct stat st;
	uint64_t nrec;
	struct rec *recs;
	char *buf = NULL;
	uint64_t damaged = 0;	/* dirty blocks whose data fails its CRC */
	int r;

	if (fstat(t->ifd, &st) < 0)
		return -errno;
	nrec = (uint64_t)st.st_size / REC_SIZE;
	if (nrec > UINT32_MAX - 2)
		nrec = UINT32_MAX - 2;
	recs = malloc(nrec ? nrec * REC_SIZE : 1);
	if (recs == NULL)
		return -ENOMEM;
	if (nrec && (r = read_all(t->ifd, recs, nrec * REC_SIZE, 0)) < 0) {
		free(recs);
		return r;
	}
	/* a session with a larger disk_cache_size left more slots than this
	 * one may have: the clean ones past cap go, no dirty one (the cap
	 * grows to the last for this session) */
	uint64_t keep = MIN(nrec, t->cap);
	for (uint64_t i = keep; i < nrec; i++) {
		struct rec c = recs[i];
		c.rcrc = 0;
		if (recs[i].magic == REC_MAGIC && (recs[i].flags & R_DIRTY) &&
		    recs[i].rcrc == crc32c(0, &c, sizeof(c)))
			keep = i + 1;
	}
	if (keep > t->cap)
		t->cap = keep;
	nrec = keep;
	r = slots_grow(t, (uint32_t)(nrec + 1));
	if (r < 0) {
		free(recs);
		return r;
	}
	t->nalloc = (uint32_t)nrec;
	for (uint32_t i = 0; i < nrec; i++) {
		struct rec *c = &recs[i];
		uint32_t rc = c->rcrc;
		struct slot *s = &t->slots[i];
		uint32_t old;

		s->state = S_FREE;
		s->pins = 0;
		c->rcrc = 0;
		if (c->magic != REC_MAGIC || rc != crc32c(0, c, sizeof(*c)) ||
		    (c->obj != t->tag && !(c->obj == 0 && (c->flags & R_DIRTY))) ||
		    !(c->flags & R_VALID) || c->len == 0 || c->len > t->bs ||
		    /* a dirty block may lie past the end: a write grew it */
		    c->lbn >= ((c->flags & R_DIRTY) ? (uint64_t)INT64_MAX / t->bs : maxblk))
			continue;
		if (c->flags & R_DIRTY) {
			if (buf == NULL && (buf = malloc(t->bs)) == NULL)
				continue;
			if (read_all(t->dfd, buf, c->len, (off_t)i * t->bs) < 0 ||
			    crc32c(0, buf, c->len) != c->dcrc) {
				t->st.crc_failures++;
				damaged++;
				continue;
			}
		}
		s->lbn = c->lbn;
		s->seq = c->seq;
		s->dirtied = 0;
		s->crc = c->dcrc;
		s->len = c->len;
		if (c->seq > t->seq)
			t->seq = c->seq;
		old = slot_lookup(t, s->lbn);
		if (old != NIL) {
			if (t->slots[old].seq > s->seq)
				continue;
			slot_unuse(t, old);
		}
		s->state = (c->flags & R_DIRTY) ? S_DIRTY : S_CLEAN;
		hash_insert(t, i);
		t->nused++;
		if (s->state == S_DIRTY) {
			list_append(t, &t->dirty_head, &t->dirty_tail, i);
			t->ndirty++;
		} else {
			list_append(t, &t->lru_head, &t->lru_tail, i);
		}
	}
	/* the free list, lowest slots first; clear what is not an entry */
	t->free_head = NIL;
	for (uint32_t i = t->nalloc; i-- > 0;) {
		if (t->slots[i].state == S_FREE) {
			bool was = recs[i].magic == REC_MAGIC;
			slot_free(t, i);
			if (was)
				(void)rec_put(t, i, false);
		}
	}
	free(buf);
	free(recs);
	if (damaged > 0) {
		/* the only copy of data a program wrote: said, and failed to
		 * the next fsync as a write-back that failed */
		fprintf(stderr, "clio: disk cache %s: %llu dirty blocks of %s were "
			"damaged in the cache (checksum) and are lost; the device "
			"keeps its older bytes there\n", t->dir,
			(unsigned long long)damaged, t->path ? t->path : t->objname);
		t->wb_err = EIO;
	}
	if (ftruncate(t->ifd, (off_t)t->nalloc * REC_SIZE) < 0 ||
	    ftruncate(t->dfd, (off_t)t->nalloc * t->bs) < 0)
		return -errno;
	return 0;
}

/* With meta gone, the block size of the dirty records of the object
 * (its tag, or 0): the one at which most of them have data that checks;
 * t->bs if none. */
static uint32_t
dirty_bsize(struct tier *t)
{
	struct { uint64_t slot; uint32_t len, dcrc; } *dr = NULL;
	uint32_t best = t->bs, nbest = 0;
	uint64_t nrec, nd = 0;
	struct stat st;
	struct rec *recs;
	char *buf = NULL;

	if (fstat(t->ifd, &st) < 0 || (nrec = (uint64_t)st.st_size / REC_SIZE) == 0)
		return best;
	nrec = MIN(nrec, (uint64_t)UINT32_MAX - 2);
	if ((recs = malloc(nrec * REC_SIZE)) == NULL)
		return best;
	if (read_all(t->ifd, recs, nrec * REC_SIZE, 0) == 0 &&
	    (dr = malloc(sizeof(*dr) * nrec)) != NULL) {
		for (uint64_t i = 0; i < nrec; i++) {
			struct rec c = recs[i];
			c.rcrc = 0;
			if (c.magic == REC_MAGIC && recs[i].rcrc == crc32c(0, &c, sizeof(c)) &&
			    (c.flags & R_DIRTY) && (c.obj == t->tag || c.obj == 0) &&
			    c.len > 0 && c.len <= (1u << 20)) {
				dr[nd].slot = i;
				dr[nd].len = c.len;
				dr[nd++].dcrc = c.dcrc;
			}
		}
	}
	free(recs);
	if (nd > 0)
		buf = malloc(1u << 20);
	for (uint32_t b = 512; buf != NULL && b <= (1u << 20); b *= 2) {
		uint32_t n = 0;
		for (uint64_t k = 0; k < nd; k++)
			if (dr[k].len <= b &&
			    read_all(t->dfd, buf, dr[k].len, (off_t)(dr[k].slot * b)) == 0 &&
			    crc32c(0, buf, dr[k].len) == dr[k].dcrc)
				n++;
		if (n > nbest || (n == nbest && n > 0 && b == t->bs)) {
			best = b;
			nbest = n;
		}
	}
	free(dr);
	free(buf);
	return best;
}

/* Dirty entries that must not reach the device: into
 * DIR/lost+found/<object>-<time>[.N]/<byte offset>, with a message. */
static bool
lost_found(struct tier *t, const char *ident, const char *why)
{
	char *lf = xasprintf("%s/lost+found", t->dir), *sub = NULL;
	char *buf = malloc(t->bs);
	long long now = (long long)time(NULL);
	uint64_t n = 0, want = 0;
	int lfd = -1, sfd = -1, e = ENOMEM;
	bool ok = false;

	/* lost+found and what is in it are ours alone (own_dir): a link
	 * planted there must not take the blocks elsewhere; each time a new
	 * subdirectory (another crash in the same second must not overwrite
	 * what the first kept) */
	if (lf != NULL && buf != NULL) {
		if (mkdir(lf, 0700) < 0 && errno != EEXIST)
			e = errno;
		else if ((lfd = own_dir(AT_FDCWD, lf, true)) < 0)
			e = -lfd;
		for (int k = 0; lfd >= 0 && k < 1000; k++) {
			free(sub);
			sub = k == 0 ? xasprintf("%s/%s-%lld", lf, t->objname, now)
				     : xasprintf("%s/%s-%lld.%d", lf, t->objname, now, k);
			e = ENOMEM;
			if (sub == NULL)
				break;
			e = mkdirat(lfd, strrchr(sub, '/') + 1, 0700) < 0 ? errno : 0;
			if (e == 0 && (sfd = own_dir(lfd, strrchr(sub, '/') + 1, true)) < 0)
				e = -sfd;
			if (e != EEXIST)
				break;
		}
	}
	if (sfd < 0) {
		fprintf(stderr, "clio: disk cache %s: cannot keep the dirty blocks "
			"of %s (%s): %s\n", t->dir, ident, why, strerror(e));
		goto out;
	}
	for (uint32_t i = t->dirty_head; i != NIL; i = t->slots[i].next) {
		struct slot *s = &t->slots[i];
		char name[24];
		snprintf(name, sizeof(name), "%llu", (unsigned long long)(s->lbn * t->bs));
		int fd = openat(sfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
				O_CLOEXEC, 0600);
		want++;
		if (fd >= 0 && read_all(t->dfd, buf, s->len, (off_t)i * t->bs) == 0 &&
		    write_all(fd, buf, s->len, 0) == 0 && fsync(fd) == 0)
			n++;
		if (fd >= 0)
			close(fd);
	}
	int rfd = openat(sfd, "README", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
			 O_CLOEXEC, 0600);
	FILE *fp = rfd >= 0 ? fdopen(rfd, "w") : NULL;
	if (fp != NULL) {
		fprintf(fp, "object: %s\nreason: %s\nblock size: %u\n"
			"each file is one dirty block, named by its byte offset\n",
			ident, why, t->bs);
		fclose(fp);
	} else if (rfd >= 0)
		close(rfd);
	fprintf(stderr, "clio: disk cache %s: %llu dirty blocks of %s were not "
		"written back (%s); kept in %s\n", t->dir, (unsigned long long)n,
		ident, why, sub);
	t->st.lost_found += n;
	ok = n == want;
	if (!ok)
		fprintf(stderr, "clio: disk cache %s: %llu dirty blocks of %s could "
			"not be kept in %s; they stay in the cache\n", t->dir,
			(unsigned long long)(want - n), ident, sub);
out:
	if (lfd >= 0)
		close(lfd);
	if (sfd >= 0)
		close(sfd);
	free(lf);
	free(sub);
	free(buf);
	return ok;
}

/* disk_cache_verify=sample: compare up to SAMPLE_BLOCKS entries with the
 * device; false on a difference. */
static bool
sample_ok(struct tier *t)
{
	char *a = malloc(t->bs), *b = malloc(t->bs);
	uint32_t cand[SAMPLE_BLOCKS];
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	uint32_t n = 0, seen = 0;
	bool ok = true;

	if (a == NULL || b == NULL) {
		free(a);
		free(b);
		return false;
	}
	/* reservoir sampling over the clean entries */
	for (uint32_t i = 0; i < t->nalloc; i++) {
		if (t->slots[i].state != S_CLEAN)
			continue;
		seen++;
		if (n < SAMPLE_BLOCKS)
			cand[n++] = i;
		else {
			uint32_t j = (uint32_t)(rand_r(&seed) % seen);
			if (j < SAMPLE_BLOCKS)
				cand[j] = i;
		}
	}
	for (uint32_t k = 0; k < n && ok; k++) {
		struct slot *s = &t->slots[cand[k]];
		if (read_all(t->dfd, a, s->len, (off_t)cand[k] * t->bs) < 0 ||
		    crc32c(0, a, s->len) != s->crc) {
			t->st.crc_failures++;
			(void)rec_put(t, cand[k], false);
			slot_unuse(t, cand[k]);
			continue;
		}
		ssize_t r = dev_sync(t, CLIO_OP_READ, b, s->len, s->lbn * t->bs);
		if (r != (ssize_t)s->len || memcmp(a, b, s->len) != 0)
			ok = false;
	}
	free(a);
	free(b);
	return ok;
}

/* ------------------------------------------------------------ the DIR */

struct objuse {
	char name[17];
	uint64_t bytes;
	double used;	/* meta's mtime: written at each close */
};

static int
objuse_cmp(const void *a, const void *b)
{
	const struct objuse *x = a, *y = b;

	return x->used < y->used ? -1 : x->used > y->used;
}

/* A culler holds byte 0 of the object's lock file (an open file
 * description lock, apart from the flock users hold) around its flock,
 * so that an open that finds the flock taken tells a cull, which ends
 * soon, from a process that uses the object. */
static int
cull_mark(int lk, int cmd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };

	if (fcntl(lk, cmd, &fl) < 0)
		return -errno;
	return cmd == F_OFD_GETLK ? fl.l_type != F_UNLCK : 0;
}

/* The object's flock, waiting out a cull of it by another process (up
 * to 2 s) but not a process that uses it: 0, 1 in use elsewhere, or
 * -errno. */
static int
lock_object(int lk)
{
	for (int tries = 0; flock(lk, LOCK_EX | LOCK_NB) < 0; tries++) {
		if (errno != EWOULDBLOCK)
			return -errno;
		/* a cull's mark may go an instant before its flock */
		if (cull_mark(lk, F_OFD_GETLK) <= 0 && tries >= 3)
			return 1;
		if (tries >= 2000)
			return 1;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return 0;
}

/* Whether the index open on fd holds a valid dirty record. */
static bool
index_dirty(int fd)
{
	struct rec r[64];
	ssize_t n;
	off_t off = 0;

	while ((n = pread(fd, r, sizeof(r), off)) > 0) {
		for (ssize_t k = 0; k < n / REC_SIZE; k++) {
			uint32_t rc = r[k].rcrc;
			r[k].rcrc = 0;
			if (r[k].magic == REC_MAGIC && (r[k].flags & R_DIRTY) &&
			    rc == crc32c(0, &r[k], sizeof(r[k])))
				return true;
		}
		off += n;
	}
	return false;
}

/* Empty another object's entries (data, index, meta; its directory and
 * lock stay, so that a process opening it meanwhile starts empty) unless
 * a process uses it, it has dirty blocks or it is not ours (own_dir). */
static bool
cull_obj(int dirfd, const char *name)
{
	int od = own_dir(dirfd, name, false), lk = -1, fd = -1, dfd = -1;
	bool done = false;

	if (od < 0)
		return false;
	lk = open_file(od, "lock", O_RDWR);
	if (lk < 0 || cull_mark(lk, F_OFD_SETLK) < 0 || flock(lk, LOCK_EX | LOCK_NB) < 0)
		goto out;
	fd = open_file(od, "index", O_RDWR);
	if (fd >= 0 && index_dirty(fd))
		goto out; /* dirty: not ours to drop */
	(void)unlinkat(od, "meta", 0);
	if (fd >= 0)
		(void)ftruncate(fd, 0);
	dfd = open_file(od, "data", O_WRONLY);
	if (dfd >= 0) {
		(void)ftruncate(dfd, 0);
		close(dfd);
	}
	done = true;
out:
	if (fd >= 0)
		close(fd);
	if (lk >= 0)
		close(lk);
	close(od);
	return done;
}

/*
 * disk_cache_size bounds DIR, not only this object: at open, the other
 * objects' entries go, least recently closed first, whole, while they
 * hold more than half the budget (0: 10% of the free space plus what DIR
 * holds); this object may have what they leave.  Returns that.
 */
static uint64_t
cull_dir(struct tier *t, uint64_t size, uint64_t *budgetp, uint64_t *othersp)
{
	DIR *dp = opendir(t->dir);
	struct objuse *u = NULL;
	size_t n = 0, alloc = 0;
	uint64_t total = 0, others = 0, budget = size;
	struct dirent *e;
	struct stat st;
	struct statvfs sv;

	*budgetp = size;
	*othersp = 0;
	if (dp == NULL)
		return size;
	while ((e = readdir(dp)) != NULL) {
		char p[32];
		if (strlen(e->d_name) != 16 ||
		    strspn(e->d_name, "0123456789abcdef") != 16)
			continue;
		if (n == alloc) {
			struct objuse *nu = realloc(u, sizeof(*u) * (alloc = alloc ? 2 * alloc : 16));
			if (nu == NULL)
				break;
			u = nu;
		}
		memcpy(u[n].name, e->d_name, 16); /* 16 hex digits, checked */
		u[n].name[16] = '\0';
		/* an object's files, not where a link planted there points */
		u[n].bytes = 0;
		snprintf(p, sizeof(p), "%s/data", u[n].name);
		if (fstatat(dirfd(dp), u[n].name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode) &&
		    fstatat(dirfd(dp), p, &st, AT_SYMLINK_NOFOLLOW) == 0)
			u[n].bytes = (uint64_t)st.st_blocks * 512;
		snprintf(p, sizeof(p), "%s/meta", u[n].name);
		u[n].used = fstatat(dirfd(dp), p, &st, AT_SYMLINK_NOFOLLOW) == 0
				    ? (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9
				    : 0;
		total += u[n].bytes;
		if (strcmp(e->d_name, t->objname) != 0) {
			others += u[n].bytes;
			if (u[n].bytes > 0)
				n++;
		}
	}
	if (budget == 0 && fstatvfs(t->dfd, &sv) == 0)
		budget = ((uint64_t)sv.f_bavail * sv.f_frsize + total) / 10;
	qsort(u, n, sizeof(*u), objuse_cmp);
	for (size_t i = 0; i < n && others > budget / 2; i++)
		if (cull_obj(dirfd(dp), u[i].name)) {
			others -= u[i].bytes;
			t->st.objects_culled++;
		}
	closedir(dp);
	free(u);
	*budgetp = budget;
	*othersp = others;
	return others < budget ? budget - others : 0;
}

/* Join the pool of t's DIR (under attach_lock); the bytes the others
 * hold on disk are others (DIR's, less those of the objects open here). */
static void
pool_join(struct tier *t, uint64_t budget, uint64_t others)
{
	struct dirpool *p;

	for (p = pools; p != NULL; p = p->next)
		if (strcmp(p->dir, t->dir) == 0)
			break;
	if (p == NULL) {
		if ((p = calloc(1, sizeof(*p))) == NULL || (p->dir = strdup(t->dir)) == NULL) {
			free(p);
			return;
		}
		p->budget = budget;
		atomic_init(&p->grown, 0);
		p->next = pools;
		pools = p;
	}
	uint64_t open_here = atomic_load(&p->grown);
	atomic_store(&p->base, others > open_here ? others - open_here : 0);
	p->refs++;
	t->pool = p;
	t->fw = &p->fw; /* no slot is taken yet */
	atomic_fetch_add(&p->grown, (uint64_t)t->nalloc * t->bs);
}

static void
pool_leave(struct tier *t)
{
	struct dirpool *p = t->pool, **pp;

	if (p == NULL)
		return;
	t->pool = NULL;
	t->fw = &t->own_fw; /* every slot taken is written */
	atomic_fetch_sub(&p->grown, (uint64_t)t->nalloc * t->bs);
	atomic_fetch_add(&p->base, (uint64_t)t->nalloc * t->bs); /* still on disk */
	if (--p->refs > 0)
		return;
	for (pp = &pools; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	free(p->dir);
	free(p);
}

static void
tier_free(struct tier *t)
{
	if (t->dfd >= 0)
		close(t->dfd);
	if (t->ifd >= 0)
		close(t->ifd);
	if (t->lockfd >= 0)
		close(t->lockfd); /* lets go of the flock */
	if (t->ofd >= 0)
		close(t->ofd);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->meta_lock);
	pthread_mutex_destroy(&t->wb_lock);
	pthread_cond_destroy(&t->rcv);
	pthread_cond_destroy(&t->cv);
	pthread_cond_destroy(&t->fcv);
	while (t->fq != NULL) {
		struct fill *f = t->fq;
		t->fq = f->next;
		free(f);
	}
	while (t->ffree != NULL) {
		struct fill *f = t->ffree;
		t->ffree = f->next;
		free(f);
	}
	free(t->slots);
	free(t->hash);
	free(t->dir);
	free(t->objdir);
	free(t->path);
	free(t);
}

static int
tier_open(clio_dev *d, const struct clio_conf *conf, struct tier **tp,
	  struct tier_stats *st)
{
	struct tier *t = calloc(1, sizeof(*t));
	char *ident = NULL;
	struct meta m;
	uint64_t size = clio_dev_size(d), cap;
	uint32_t h;
	int r;
	bool loaded = false; /* the index is read: ndirty tells */
	const char *what = ""; /* the file of DIR a failure is about */
	bool racy = false; /* the version recorded may hide a change */

	*tp = NULL;
	if (t == NULL)
		return -ENOMEM;
	t->fw = &t->own_fw; /* the pool's once joined */
	t->st = *st; /* what an attempt before this one did */
	t->d = d;
	t->dfd = t->ifd = t->lockfd = t->ofd = -1;
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->meta_lock, NULL);
	pthread_mutex_init(&t->wb_lock, NULL);
	pthread_cond_init(&t->rcv, NULL);
	pthread_cond_init(&t->fcv, NULL);
	t->rq_tail = &t->rq;
	t->fq_tail = &t->fq;
	t->fq_max = FILL_QUEUE_MAX;
	pthread_cond_init(&t->cv, NULL);
	t->lru_head = t->lru_tail = t->free_head = NIL;
	t->dirty_head = t->dirty_tail = NIL;
	t->zombies = NIL;
	t->writeback = conf->disk_cache_mode == 1;
	t->wb_age = conf->dirty_age;
	t->brun = conf->disk_cache_brun;
	t->bcull = conf->disk_cache_bcull;
	t->bstop = conf->disk_cache_bstop;
	t->bs = conf->bsize;
	t->dir = strdup(conf->disk_cache);
	ident = identity_of(t);
	if (t->dir == NULL || ident == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	snprintf(t->objname, sizeof(t->objname), "%016llx",
		 (unsigned long long)fnv1a(ident));
	t->tag = (uint32_t)fnv1a(ident);
	t->objdir = xasprintf("%s/%s", t->dir, t->objname);
	if (t->objdir == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	if (mkdir(t->objdir, 0700) < 0 && errno != EEXIST) {
		/* DIR removed, read-only or full: no entry of the object can
		 * be there, so it runs without the tier */
		fprintf(stderr, "clio: disk cache %s: %s: %s; %s runs without it\n",
			t->dir, t->objdir, strerror(errno), ident);
		r = 1;
		goto fail_free;
	}
	/* DIR/<object> and its files are this user's alone: not a link
	 * another user planted, not readable by others (the device's data) */
	r = own_dir(AT_FDCWD, t->objdir, true);
	if (r >= 0) {
		t->ofd = r;
		r = open_in(t, "lock", O_RDWR | O_CREAT);
	}
	if (r < 0) {
		fprintf(stderr, "clio: disk cache %s: %s%s: %s; %s runs without it\n",
			t->dir, t->objdir, t->ofd < 0 ? "" : "/lock",
			t->ofd < 0 && (r == -EPERM || r == -ENOTDIR || r == -ELOOP)
				? "not a directory of this user's"
			: r == -EINVAL ? "not a regular file"
				: strerror(-r),
			ident);
		r = 1;
		goto fail_free;
	}
	t->lockfd = r;
	if ((r = lock_object(t->lockfd)) != 0) { /* 1: in use elsewhere */
		if (r == 1)
			bypass_mark(t);
		goto fail;
	}
	what = "/data";
	if ((r = open_in(t, "data", O_RDWR | O_CREAT)) < 0)
		goto fail_dir;
	t->dfd = r;
	what = "/index";
	if ((r = open_in(t, "index", O_RDWR | O_CREAT)) < 0)
		goto fail_dir;
	t->ifd = r;
	what = "";

	/* the size: disk_cache_size, or 10% of DIR's free space, for DIR */
	uint64_t budget, others;
	cap = cull_dir(t, conf->disk_cache_size, &budget, &others);
	/* meta keeps the identity's first 1023 bytes (a long path): the
	 * object's name, a hash of the whole, tells the rest */
	bool have_meta = meta_read(t, &m) == 0 &&
			 strncmp(m.ident, ident, sizeof(m.ident) - 1) == 0 &&
			 m.kind == (uint32_t)t->kind;
	if (have_meta)
		t->bs = m.bsize; /* the entries' block size, for recovery */
	t->cap = MAX(cap / t->bs, 16);
	if (t->cap > UINT32_MAX - 2)
		t->cap = UINT32_MAX - 2;
	for (h = 1024; h < t->cap && h < (1u << 22); h *= 2)
		;
	t->hash = malloc(sizeof(uint32_t) * h);
	if (t->hash == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	memset(t->hash, 0xff, sizeof(uint32_t) * h);
	t->hmask = h - 1;
	const char *why = NULL;
	if (!have_meta) {
		/* nothing of this object we can trust: start empty, but for
		 * dirty blocks of its own (its tag, their data checked, of
		 * the block size their data checks with): the only copy of what a program
		 * wrote, not written back (no version to check), but kept
		 * aside in lost+found */
		t->bs = dirty_bsize(t);
		r = load_index(t, 0);
		if (r < 0)
			goto fail_dir;
		if (t->ndirty > 0)
			why = "its record in the disk cache (meta) is missing or damaged";
		else if (ftruncate(t->ifd, 0) < 0 || ftruncate(t->dfd, 0) < 0) {
			r = -errno;
			goto fail_dir;
		}
	}
	if (why == NULL)
		r = load_index(t, DIV_ROUND_UP(MAX(size, have_meta ? m.size : 0), t->bs) + 1);
	if (r < 0)
		goto fail_dir;
	loaded = true;

	/* is what the entries hold still the device's? (crash safety 4) */
	validator_of(t, &t->v, &t->has_v);
	if (have_meta && HAS_VALIDATOR(t->kind)) {
		if (m.state != M_CLEAN)
			why = "a session that wrote it ended without recording its version";
		else if (!m.has_v || !t->has_v || !validator_same(&m.v, &t->v))
			why = "it changed since the entries were made";
		else if ((m.has_v & V_RACY) || bypass_seen(t))
			racy = true; /* the dirty blocks are the file's */
	} else if (have_meta && t->kind == K_VOLATILE) {
		why = "the device keeps no data across runs";
	} else if (have_meta && m.size != size) {
		why = "its size changed";
	}
	if (t->ndirty > 0) {
		if (why == NULL && t->d->readonly) {
			/* they are the object's newest data: served from DIR
			 * (the device as large as they make it), written back
			 * by a later open for writing */
			for (uint32_t i = t->dirty_head; i != NIL; i = t->slots[i].next)
				dev_grow(t, t->slots[i].lbn * t->bs + t->slots[i].len);
			fprintf(stderr, "clio: disk cache %s: %llu dirty blocks of %s "
				"stay in it until the device is opened for writing\n",
				t->dir, (unsigned long long)t->ndirty, ident);
		} else if (why == NULL) {
			uint64_t nd = t->ndirty;
			r = wb_all(t, true, 0, 0);
			if (r < 0) {
				fprintf(stderr, "clio: disk cache %s: writing back the "
					"dirty blocks of %s: %s\n", t->dir, ident,
					strerror(-r));
				goto fail;
			}
			t->st.recovered += nd - t->ndirty;
			validator_of(t, &t->v, &t->has_v);
		} else if (lost_found(t, ident, why)) {
			pthread_mutex_lock(&t->lock);
			drop_all(t, true);
			pthread_mutex_unlock(&t->lock);
		} else {
			/* not kept aside: they stay in DIR (never written
			 * back, the validator differs) for a later open */
			fprintf(stderr, "clio: disk cache %s: %s runs without it\n",
				t->dir, ident);
			tier_free(t);
			free(ident);
			return 1;
		}
	}
	if (why != NULL || racy) {
		pthread_mutex_lock(&t->lock);
		t->st.stale_drops += drop_all(t, false);
		pthread_mutex_unlock(&t->lock);
	}
	if (conf->disk_cache_verify && t->nused > 0 && !sample_ok(t)) {
		pthread_mutex_lock(&t->lock);
		t->st.stale_drops += drop_all(t, false);
		pthread_mutex_unlock(&t->lock);
	}
	if (t->bs != conf->bsize && t->ndirty == 0) {
		/* entries of another block size: start over with ours (dirty
		 * ones a read-only open keeps stay, and their block size
		 * for this session: a read off it is made of whole blocks,
		 * bounce_read) */
		(void)unlinkat(t->ofd, "meta", 0);
		*st = t->st; /* its blocks written back, say: counted */
		tier_free(t);
		t = NULL;
		r = -EAGAIN;
		goto fail_quiet;
	}
	what = "/meta";
	r = meta_write(t, ident, M_CLEAN);
	if (r < 0)
		goto fail_dir;
	what = "";
	check_floor(t, true);
	if (t->writeback && !t->d->readonly) {
		r = pthread_create(&t->writer, NULL, writer_main, t);
		if (r != 0) {
			r = -r;
			goto fail;
		}
		t->writer_running = true;
	}
	if (pthread_create(&t->reader, NULL, reader_main, t) == 0)
		t->reader_running = true; /* else reads are served inline */
	if (pthread_create(&t->filler, NULL, filler_main, t) == 0)
		t->filler_running = true; /* else insertions are made inline */
	pool_join(t, budget, others); /* the caller holds attach_lock */
	free(ident);
	*tp = t;
	return 0;
fail:
	if ((r == -ENOSPC || r == -EDQUOT) && t->objdir != NULL) {
fail_dir:
		/* DIR is full or its files are not what the tier made (a link,
		 * a FIFO or a directory in place of one): the object runs
		 * without the tier (the reader sees no error); with no dirty
		 * entry to keep, its entries go, as a write this session makes
		 * to the device would outdate them where nothing else tells */
		fprintf(stderr, "clio: disk cache %s: %s%s: %s; %s runs without it\n",
			t->dir, t->objdir, what,
			r == -EINVAL ? "not a regular file" : strerror(-r), ident);
		if (loaded && t->ndirty == 0)
			(void)unlinkat(t->ofd, "meta", 0);
		r = 1;
	}
fail_free:
	tier_free(t);
fail_quiet:
	free(ident);
	return r;
}

int
tier_attach(clio_dev *d, const struct clio_conf *conf)
{
	struct tier *t = NULL;
	int r = 0;

	if (conf->disk_cache == NULL || d->is_virtual)
		return 0;
	pthread_mutex_lock(&attach_lock);
	if (__atomic_load_n(&d->tier, __ATOMIC_ACQUIRE) == NULL) {
		struct tier_stats st = { 0 };
		r = tier_open(d, conf, &t, &st);
		if (r == -EAGAIN) /* the block size changed: once more */
			r = tier_open(d, conf, &t, &st);
		if (r == 1)
			r = 0;
		if (t != NULL)
			__atomic_store_n(&d->tier, t, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&attach_lock);
	return r;
}

int
tier_detach(clio_dev *d)
{
	struct tier *t = __atomic_load_n(&d->tier, __ATOMIC_ACQUIRE);
	int r = 0;

	if (t == NULL)
		return 0;
	pthread_mutex_lock(&t->lock);
	while (t->nops > 0)
		pthread_cond_wait(&t->cv, &t->lock);
	t->fstop = true; /* drains the queued insertions, then ends */
	pthread_cond_broadcast(&t->fcv);
	pthread_mutex_unlock(&t->lock);
	if (t->filler_running)
		pthread_join(t->filler, NULL);
	pthread_mutex_lock(&t->lock);
	t->filler_running = false;
	t->stopping = true;
	t->rstop = true;
	pthread_cond_broadcast(&t->cv);
	pthread_cond_broadcast(&t->rcv);
	pthread_mutex_unlock(&t->lock);
	if (t->writer_running)
		pthread_join(t->writer, NULL);
	if (t->reader_running)
		pthread_join(t->reader, NULL);
	if (t->ndirty > 0 && !d->readonly) {
		r = wb_all(t, true, 0, 0);
		if (r < 0) /* the caller may not look: say it */
			fprintf(stderr, "clio: disk cache %s: writing back %s at its "
				"close: %s; %llu dirty blocks stay in it until the "
				"next open\n", t->dir, t->d->name, strerror(-r),
				(unsigned long long)t->ndirty);
	}
	__atomic_store_n(&d->tier, NULL, __ATOMIC_RELEASE);
	/* writes of this session's that no flush followed: the device
	 * keeps them before their version is recorded with the entries,
	 * else a power loss could leave the file's new times over its
	 * older bytes, and entries of the newer ones under them; a flush
	 * that fails leaves meta "writing" (crash safety 4) */
	bool unflushed = atomic_load(&t->meta_writing) && !d->readonly &&
			 dev_sync(t, CLIO_OP_FLUSH, NULL, 0, 0) < 0;
	if (!unflushed && (atomic_load(&t->meta_writing) || HAS_VALIDATOR(t->kind)))
		meta_clean(t);
	pthread_mutex_lock(&attach_lock);
	pool_leave(t);
	pthread_mutex_unlock(&attach_lock);
	tier_free(t);
	return r;
}

void
tier_drop(clio_dev *d)
{
	struct tier *t = __atomic_load_n(&d->tier, __ATOMIC_ACQUIRE);

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	drop_stale(t);
	pthread_mutex_unlock(&t->lock);
	meta_clean(t);
}

void
tier_settle(clio_dev *d)
{
	struct tier *t = __atomic_load_n(&d->tier, __ATOMIC_ACQUIRE);
	struct clio_validator v;
	struct meta m;
	bool have, busy = false;

	if (t == NULL || !HAS_VALIDATOR(t->kind))
		return;
	pthread_mutex_lock(&t->wb_lock); /* no write-back batch in flight */
	pthread_mutex_lock(&t->meta_lock);
	pthread_mutex_lock(&t->lock);
	for (struct top *o = t->ops; o != NULL; o = o->next)
		busy |= o->op == CLIO_OP_WRITE && o->through;
	pthread_mutex_unlock(&t->lock);
	/* a write of the tier's own since the last record: its flush
	 * records the version (crash safety 4); else the change is the
	 * caller's (times, say), not another writer's: nothing is dropped */
	if (!busy && !atomic_load(&t->meta_writing) && meta_read(t, &m) == 0) {
		validator_of(t, &v, &have);
		if (bypass_seen(t)) {
			pthread_mutex_lock(&t->lock);
			drop_stale(t);
			pthread_mutex_unlock(&t->lock);
		}
		if (have && (!t->has_v || !validator_same(&v, &t->v))) {
			t->v = v;
			t->has_v = true;
			(void)meta_write(t, m.ident, M_CLEAN);
		}
	}
	pthread_mutex_unlock(&t->meta_lock);
	pthread_mutex_unlock(&t->wb_lock);
}

int
tier_resize(clio_dev *d, uint64_t size, bool before)
{
	struct tier *t = __atomic_load_n(&d->tier, __ATOMIC_ACQUIRE);

	if (t == NULL)
		return 0;
	if (before) {
		(void)meta_begin_write(t); /* the file changes */
		/* the part of a dirty block below the new end stays; and no
		 * dirty block past it is left for the writer, whose write
		 * after the device's resize would bring the old bytes back
		 * (wb_all waits for a batch in flight) */
		return t->writeback ? wb_all(t, false, size / t->bs, UINT64_MAX - 1) : 0;
	}
	pthread_mutex_lock(&t->lock);
	/* the block holding the new end and all after it */
	drop_range(t, size / t->bs, UINT64_MAX - 1);
	for (struct top *o = t->ops; o != NULL; o = o->next)
		o->tainted = true; /* reads in flight may bring the old data */
	fills_taint(t);
	/* a change that went through: the next fsync flushes the device and
	 * records its version (writeback), as after a write */
	t->wgen++;
	if (t->writeback)
		t->devflush = true;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/* The device string of a recorded object with dirty blocks whose own
 * string begins with prefix (regular files and NFS files: those have the
 * string in their identity), followed by query; NULL if none. */
static char *
recover_spec(int dirfd, const char *name, const char *prefix, const char *query)
{
	int od = own_dir(dirfd, name, false), fd;
	struct meta m;
	const char *p = NULL;
	size_t plen = 0;
	bool dirty = false;

	if (od < 0)
		return NULL;
	if (meta_read_at(od, &m) == 0 && (m.kind == K_FILE || m.kind == K_NFS) &&
	    (fd = open_file(od, "index", O_RDONLY)) >= 0) {
		dirty = index_dirty(fd);
		close(fd);
	}
	close(od);
	/* an identity cut at its 1023 bytes names the file only by hash */
	if (!dirty || strlen(m.ident) >= sizeof(m.ident) - 1)
		return NULL;
	if (m.kind == K_FILE && (p = strstr(m.ident, " path=")) != NULL) {
		p += 6;
		plen = strlen(p);
		if (strchr(p, '?') != NULL) /* not a file: string */
			return NULL;
	} else if (m.kind == K_NFS && strncmp(m.ident, "nfs ", 4) == 0) {
		const char *e = strstr(m.ident, " fileid=");
		p = m.ident + 4;
		plen = e != NULL ? (size_t)(e - p) : 0;
	}
	if (p == NULL || plen == 0 || strncmp(p, prefix, strlen(prefix)) != 0)
		return NULL;
	return xasprintf("%s%.*s%s", m.kind == K_FILE ? "file:" : "", (int)plen, p,
			 query != NULL ? query : "");
}

/* The dirty blocks of the object DIR/name (at od, which this closes),
 * whose meta is m, to lost+found: no open reaches them again. */
static void
orphan_lost_found(const struct clio_conf *conf, int od, const char *name,
		  const struct meta *m)
{
	struct tier *t;
	int fd = open_file(od, "index", O_RDONLY);
	bool dirty = fd >= 0 && index_dirty(fd);

	if (fd >= 0)
		close(fd);
	if (!dirty || (t = calloc(1, sizeof(*t))) == NULL) {
		close(od);
		return;
	}
	/* the object as tier_open would take it, without a device */
	t->ofd = od;
	t->dfd = t->ifd = t->lockfd = -1;
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->meta_lock, NULL);
	pthread_mutex_init(&t->wb_lock, NULL);
	pthread_cond_init(&t->rcv, NULL);
	pthread_cond_init(&t->fcv, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->lru_head = t->lru_tail = t->free_head = NIL;
	t->dirty_head = t->dirty_tail = NIL;
	t->zombies = NIL;
	t->bs = m->bsize;
	t->cap = 16;
	t->tag = (uint32_t)fnv1a(m->ident);
	snprintf(t->objname, sizeof(t->objname), "%s", name);
	t->dir = strdup(conf->disk_cache);
	t->hash = malloc(sizeof(uint32_t) * 1024);
	if (t->dir != NULL && t->hash != NULL &&
	    (t->lockfd = open_in(t, "lock", O_RDWR | O_CREAT)) >= 0 &&
	    lock_object(t->lockfd) == 0 &&
	    (t->dfd = open_in(t, "data", O_RDWR)) >= 0 &&
	    (t->ifd = open_in(t, "index", O_RDWR)) >= 0) {
		memset(t->hash, 0xff, sizeof(uint32_t) * 1024);
		t->hmask = 1023;
		if (load_index(t, 0) == 0 && t->ndirty > 0 &&
		    lost_found(t, m->ident, "its file is gone or is another file now")) {
			pthread_mutex_lock(&t->lock);
			drop_all(t, true);
			pthread_mutex_unlock(&t->lock);
			(void)fdatasync(t->ifd);
		}
	}
	tier_free(t);
}

/* A recorded regular file's object under prefix whose path names
 * another file now (another inode on the file's device), or nothing in
 * a directory of that device (the file replaced, removed or renamed):
 * no open reaches its entries again (the identity has the inode), so
 * its dirty blocks go to lost+found (not to the new file: they are
 * another file's).  True if the object was such an orphan. */
static bool
orphan_keep(const struct clio_conf *conf, int dirfd, const char *name,
	    const char *prefix)
{
	unsigned long long dev, ino;
	struct meta m;
	struct stat st;
	const char *p;
	bool orphan = false;
	int od = own_dir(dirfd, name, false);

	if (od < 0)
		return false;
	if (meta_read_at(od, &m) < 0 || m.kind != K_FILE ||
	    strlen(m.ident) >= sizeof(m.ident) - 1 ||
	    sscanf(m.ident, "file dev=%llu ino=%llu", &dev, &ino) != 2 ||
	    (p = strstr(m.ident, " path=")) == NULL ||
	    strncmp(p + 6, prefix, strlen(prefix)) != 0) {
		close(od);
		return false;
	}
	p += 6;
	if (stat(p, &st) == 0) {
		orphan = st.st_dev == dev && st.st_ino != ino;
	} else if (errno == ENOENT) {
		/* gone from a directory that is still there on its device
		 * (not a file system that is not mounted now) */
		char *dir = strdup(p), *slash = dir != NULL ? strrchr(dir, '/') : NULL;
		if (slash != NULL) {
			*(slash == dir ? slash + 1 : slash) = '\0';
			orphan = stat(dir, &st) == 0 && st.st_dev == dev;
		}
		free(dir);
	}
	if (!orphan) {
		close(od);
		return false;
	}
	orphan_lost_found(conf, od, name, &m);
	return true;
}

/* An NFS file's object whose path, opened as d, is another file now
 * (another fileid): its dirty blocks go to lost+found, as above.  True
 * if it was. */
static bool
nfs_orphan_keep(const struct clio_conf *conf, int dirfd, const char *name,
		clio_dev *d)
{
	struct clio_validator v;
	unsigned long long id;
	struct meta m;
	const char *p;
	int od = own_dir(dirfd, name, false);

	if (od < 0)
		return false;
	if (meta_read_at(od, &m) < 0 || m.kind != K_NFS ||
	    (p = strstr(m.ident, " fileid=")) == NULL ||
	    sscanf(p, " fileid=%llu", &id) != 1 || clio_dev_version(d, &v) < 0 ||
	    v.id == id) {
		close(od);
		return false;
	}
	orphan_lost_found(conf, od, name, &m);
	return true;
}

int
clio_disk_cache_recover(const struct clio_conf *conf, const char *prefix,
			const char *query)
{
	struct clio_conf small;
	struct dirent *e;
	DIR *dp;
	int n = 0;

	if (conf == NULL || prefix == NULL)
		return -EINVAL;
	if (conf->disk_cache == NULL || conf->disk_cache[0] == '\0')
		return 0;
	if ((dp = opendir(conf->disk_cache)) == NULL)
		return errno == ENOENT ? 0 : -errno;
	small = *conf;
	small.cache_size = 64 * (uint64_t)conf->bsize; /* the tier does the work */
	while ((e = readdir(dp)) != NULL) {
		if (strlen(e->d_name) != 16 || strspn(e->d_name, "0123456789abcdef") != 16)
			continue;
		if (orphan_keep(conf, dirfd(dp), e->d_name, prefix))
			continue;
		char *spec = recover_spec(dirfd(dp), e->d_name, prefix, query);
		clio_cache *c = NULL;
		clio_dev *d = NULL;
		clio_file *f = NULL;
		if (spec == NULL)
			continue;
		/* opening the object writes its dirty blocks back (or to
		 * lost+found); one that cannot be opened now is the next
		 * open's */
		if (clio_dev_open(spec, 0, &d) == 0 &&
		    !nfs_orphan_keep(conf, dirfd(dp), e->d_name, d) &&
		    clio_cache_new(&small, &c) == 0 &&
		    clio_open(c, d, CLIO_RDWR, &f) == 0) {
			if (clio_close(f) == 0)
				n++;
		}
		if (c != NULL)
			clio_cache_free(c);
		if (d != NULL)
			clio_dev_close(d);
		free(spec);
	}
	closedir(dp);
	return n;
}

void
tier_params(struct tier *t, struct dev_params *o)
{
	struct tier_stats s;
	uint64_t used, dirty;

	pthread_mutex_lock(&t->lock);
	s = t->st;
	used = t->nused;
	dirty = t->ndirty;
	size_t queued = t->fq_bytes;
	pthread_mutex_unlock(&t->lock);
	dev_param(o, "disk_cache.dir", "%s", t->dir);
	dev_param(o, "disk_cache.object", "%s", t->objname);
	dev_param(o, "disk_cache.mode", "%s", t->writeback ? "writeback" : "writethrough");
	dev_param(o, "disk_cache.validator", "%s",
		  t->kind == K_FILE ? "file" : t->kind == K_NFS ? "nfs"
		  : t->kind == K_VOLATILE ? "none (volatile device)"
								   : "none (user's promise)");
	dev_param(o, "disk_cache.block", "%u", t->bs);
	dev_param(o, "disk_cache.size_max", "%llu", (unsigned long long)(t->cap * t->bs));
	dev_param(o, "disk_cache.entries", "%llu", (unsigned long long)used);
	dev_param(o, "disk_cache.dirty", "%llu", (unsigned long long)dirty);
	dev_param(o, "disk_cache.hits", "%llu", (unsigned long long)s.hits);
	dev_param(o, "disk_cache.misses", "%llu", (unsigned long long)s.misses);
	dev_param(o, "disk_cache.bytes_from_cache", "%llu", (unsigned long long)s.bytes_dir);
	dev_param(o, "disk_cache.bytes_from_device", "%llu", (unsigned long long)s.bytes_dev);
	dev_param(o, "disk_cache.insertions", "%llu", (unsigned long long)s.insertions);
	dev_param(o, "disk_cache.insert_queued", "%zu", queued);
	dev_param(o, "disk_cache.insert_drops", "%llu", (unsigned long long)s.insert_drops);
	dev_param(o, "disk_cache.evictions", "%llu", (unsigned long long)s.evictions);
	dev_param(o, "disk_cache.checksum_failures", "%llu", (unsigned long long)s.crc_failures);
	dev_param(o, "disk_cache.stale_drops", "%llu", (unsigned long long)s.stale_drops);
	dev_param(o, "disk_cache.recovered", "%llu", (unsigned long long)s.recovered);
	dev_param(o, "disk_cache.lost_found", "%llu", (unsigned long long)s.lost_found);
	dev_param(o, "disk_cache.objects_culled", "%llu", (unsigned long long)s.objects_culled);
}

/* ------------------------------------------------------------ tests */

void
tier_fill_ctl(clio_dev *d, size_t max, int pause)
{
	struct tier *t = __atomic_load_n(&d->tier, __ATOMIC_ACQUIRE);

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	if (max > 0)
		t->fq_max = max;
	if (pause >= 0)
		t->fpaused = pause;
	pthread_cond_broadcast(&t->fcv);
	pthread_mutex_unlock(&t->lock);
}

void
tier_fill_wait(clio_dev *d)
{
	struct tier *t = __atomic_load_n(&d->tier, __ATOMIC_ACQUIRE);

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	while (t->fq != NULL && t->filler_running)
		pthread_cond_wait(&t->fcv, &t->lock);
	pthread_mutex_unlock(&t->lock);
}
