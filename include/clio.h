/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clio.h - the public API of libclio, a user-space buffer cache with
 * BSD-style I/O clustering.
 *
 * Conventions (those of liburing):
 *  - every call that can fail returns 0 (or a byte count) on success and a
 *    negative errno value on failure; errno is never set;
 *  - every call may be made from any thread;
 *  - sizes are bytes, times are seconds (double).
 *
 * Layers, top to bottom: file handles (clio_open ...), the buffer cache
 * (clio_cache), clustering, and devices (clio_dev), which all storage goes
 * through.  See libclio(3).
 */
#ifndef CLIO_H
#define CLIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- version */

/* The version of this header; clio_version() gives the library's.  The
 * shared library's soname changes with the major number. */
#define CLIO_VERSION_MAJOR 0
#define CLIO_VERSION_MINOR 1
#define CLIO_VERSION_PATCH 0
#define CLIO_VERSION "0.1.0"

/* "MAJOR.MINOR.PATCH" of the library linked in. */
const char *clio_version(void);

typedef struct clio_dev clio_dev;
typedef struct clio_cache clio_cache;
typedef struct clio_file clio_file;

/* ---------------------------------------------------------------- devices */

/* Flags for clio_dev_open. */
#define CLIO_DEV_RDONLY 0x1 /* open read-only */
#define CLIO_DEV_CREATE 0x2 /* file backend: create a missing regular file */
#define CLIO_DEV_EXCL 0x4   /* with CREATE: -EEXIST if it exists (O_EXCL) */

/*
 * Open a device from a string:
 *   /path  or  file:/path[?direct=0|1][&engine=uring|threads][&qd=N]
 *                                           a regular file or block device
 *   mem:size=N                              sparse memory
 *   sim:preset=NAME[,size=N][,clock=virtual|real][,PARAM=V ...]
 *   fault:OPTS@INNER                        fault injection around INNER
 * Sizes take K, M, G, T suffixes (powers of 1024) as dd does.
 * On a malformed string returns -EINVAL and, when errbuf is not NULL,
 * writes a one-line message naming the bad value into it.
 */
int clio_dev_open(const char *spec, int flags, clio_dev **devp);
int clio_dev_open_err(const char *spec, int flags, clio_dev **devp,
		      char *errbuf, size_t errlen);
int clio_dev_close(clio_dev *d);
/* Queue depth (requests in flight at the backend) of file and other
 * blocking devices opened later whose string does not say qd=; the
 * default is 4. */
void clio_dev_set_default_queue_depth(uint32_t qd);

/*
 * A device the program provides: clio calls cb's functions for every
 * transfer, synchronously, on its worker threads, at most queue_depth at
 * once (0: the default of clio_dev_set_default_queue_depth), each moving
 * one contiguous range of at most maxio bytes (0: no limit).  pread and
 * pwrite move all len bytes and return 0 or -errno; pwrite NULL makes the
 * device read-only, flush NULL a device with nothing to flush.  close
 * (optional) runs once, from clio_dev_close or a failed open.  The size is
 * fixed; sector is the alignment of every transfer (0: 512): a cache
 * whose bsize is below it cannot open the device (clio_open: -EINVAL).  name
 * (NULL: "callback") is what clio_dev_name returns.
 */
struct clio_dev_callbacks {
	int (*pread)(void *arg, void *buf, size_t len, uint64_t off);
	int (*pwrite)(void *arg, const void *buf, size_t len, uint64_t off);
	int (*flush)(void *arg);
	void (*close)(void *arg);
};
int clio_dev_open_callbacks(const char *name, uint64_t size, uint32_t sector,
			    uint32_t maxio, const struct clio_dev_callbacks *cb,
			    void *arg, uint32_t queue_depth, clio_dev **devp);

const char *clio_dev_name(const clio_dev *d);	/* the string it was opened from */
uint64_t clio_dev_size(const clio_dev *d);
uint32_t clio_dev_sector_size(const clio_dev *d);
uint32_t clio_dev_maxio(const clio_dev *d);	/* 0: no limit */
int clio_dev_is_virtual(const clio_dev *d);	/* runs on the virtual clock */

/* What a device is (clio info). */
struct clio_dev_info {
	uint64_t size;
	uint32_t sector;	/* logical sector size */
	uint32_t maxio;		/* 0: no limit */
	uint32_t queue_depth;	/* requests in flight at the backend at most */
	uint32_t inflight_peak;	/* the most seen in flight at once so far */
	int is_virtual;		/* clock: virtual (1) or real (0) */
	int readonly;
	int resizable;
	char type[16];		/* the backend: "file", "mem", "sim", "fault" */
	char engine[96];	/* how requests run: "inline" (in the caller's
				   thread), "uring", or "threads (why)" */
};
int clio_dev_info(clio_dev *d, struct clio_dev_info *info);
/* The backend's parameters as "key=value" lines (a sim device's model,
 * a file's path and engine, a fault device's rules and its inner device's
 * parameters prefixed "inner.").  Writes at most len bytes, NUL included,
 * and returns the length of the whole text, as snprintf does. */
int clio_dev_params(clio_dev *d, char *buf, size_t len);

/* Asynchronous requests.  The callback runs once, on any thread, possibly
 * before clio_dev_submit returns; the request must stay allocated until
 * then.  result is the byte count or -errno. */
enum clio_op { CLIO_OP_READ, CLIO_OP_WRITE, CLIO_OP_FLUSH };
#define CLIO_REQ_SYNC 0x1 /* the submitter waits for it: run it in its thread */
struct clio_req {
	enum clio_op op;
	unsigned flags;
	uint64_t offset;
	const struct iovec *iov;
	int iovcnt;
	void (*done)(struct clio_req *req);
	void *priv;
	/* set by the device layer before done() runs */
	ssize_t result;
	double t_done; /* completion time on the device's clock */
	/* private to the device layer */
	void *internal[6];
};
int clio_dev_submit(clio_dev *d, struct clio_req *req);

/* Synchronous, uncached transfers (submit and wait). */
ssize_t clio_dev_preadv(clio_dev *d, const struct iovec *iov, int iovcnt,
			uint64_t off);
ssize_t clio_dev_pwritev(clio_dev *d, const struct iovec *iov, int iovcnt,
			 uint64_t off);
ssize_t clio_dev_pread(clio_dev *d, void *buf, size_t len, uint64_t off);
ssize_t clio_dev_pwrite(clio_dev *d, const void *buf, size_t len, uint64_t off);
int clio_dev_flush(clio_dev *d);
int clio_dev_resize(clio_dev *d, uint64_t size); /* -ENOTSUP if fixed */
/* The device's own trim of [off, off+len), uncached, synchronous: what
 * reads find there after is unspecified (zeros on most devices).
 * -ENOTSUP where the device cannot trim (a length of 0 asks). */
int clio_dev_discard(clio_dev *d, uint64_t off, uint64_t len);
/* [off, off+len) made to read as zeros, uncached, synchronous: by the
 * device itself where it can, else written. */
int clio_dev_write_zeroes(clio_dev *d, uint64_t off, uint64_t len);

/* Statistics of one side of a device. */
#define CLIO_HIST_BUCKETS 24 /* transfer sizes: bucket k holds [512<<(k-1), 512<<k) */
struct clio_iostat {
	uint64_t reads, writes, flushes;
	uint64_t read_bytes, write_bytes;
	uint64_t errors;
	double busy_s;			/* time with at least one request outstanding */
	double lat_p50_s, lat_p99_s;	/* request latency percentiles */
	uint64_t size_hist[CLIO_HIST_BUCKETS];
	/* the sums of the reads' and the writes' latencies (completion less
	 * submission): iostat's r_await is read_time_s / reads, and aqu-sz
	 * their sum over an interval divided by its length */
	double read_time_s, write_time_s;
};
struct clio_dev_stats {
	struct clio_iostat front; /* what the cache was asked for this device */
	struct clio_iostat back;  /* what reached the storage */
};
void clio_dev_stats(clio_dev *d, struct clio_dev_stats *st);
void clio_dev_stats_reset(clio_dev *d);

/* The virtual clock shared by all devices with clock=virtual. */
double clio_vclock_now(void);

/* ---------------------------------------------------------------- cache */

enum clio_cluster_mode { CLIO_CLUSTER_ON, CLIO_CLUSTER_LITE, CLIO_CLUSTER_OFF };
enum clio_rbw_mode { CLIO_RBW_CLUSTER, CLIO_RBW_BLOCK };

struct clio_conf {
	uint32_t bsize;		/* buffer (logical block) size */
	uint32_t maxbsize;	/* largest buffer; the cluster limit with cluster=lite */
	uint32_t maxphys;	/* largest transfer the cache issues */
	uint32_t read_max;	/* read-ahead window, blocks */
	uint32_t seqmax;	/* cap of the sequential count */
	uint64_t cache_size;	/* bytes of buffer memory */
	uint32_t dirty_hi;	/* percent of cache_size: writers flush above */
	uint32_t dirty_lo;	/* ... down to this percent */
	double dirty_age;	/* seconds a buffer may stay dirty */
	enum clio_cluster_mode cluster;
	enum clio_rbw_mode rbw;
	uint32_t write_behind;	/* 0 off, 1 push full clusters, 2 push the one before */
	uint32_t queue_depth;	/* default for devices opened by the command */
	uint32_t flusher;	/* 1: run the background flusher thread */
	uint64_t flush_behind;	/* bytes written back between background
				   device flushes; 0: only fsync flushes */
	/* the disk tier (clio(1), DISK CACHE) */
	const char *disk_cache;	/* its directory; NULL: none */
	uint64_t disk_cache_size; /* bytes per object; 0: 10% of DIR's free space */
	uint32_t disk_cache_mode; /* 0 writethrough, 1 writeback */
	uint32_t disk_cache_verify; /* 1: compare a sample with the device at open */
	uint32_t disk_cache_brun, disk_cache_bcull, disk_cache_bstop; /* % free */
};

/*
 * The defaults: `struct clio_conf conf = CLIO_CONF_DEFAULTS;`.  C uses
 * designated initializers; C++ (which has them only from C++20, in order and
 * complete) gets every field in declaration order.  clio_conf_init() sets
 * the same values at run time.
 */
#ifndef __cplusplus
#define CLIO_CONF_DEFAULTS                                                  \
	{                                                                   \
		.bsize = 16384, .maxbsize = 65536, .maxphys = 1048576,      \
		.read_max = 64, .seqmax = 127, .cache_size = 64ull << 20,   \
		.dirty_hi = 50, .dirty_lo = 25, .dirty_age = 30.0,          \
		.cluster = CLIO_CLUSTER_ON, .rbw = CLIO_RBW_CLUSTER,        \
		.write_behind = 1, .queue_depth = 4, .flusher = 1,          \
		.flush_behind = 0, .disk_cache = 0, .disk_cache_size = 0,   \
		.disk_cache_mode = 0, .disk_cache_verify = 0,               \
		.disk_cache_brun = 7, .disk_cache_bcull = 5,                \
		.disk_cache_bstop = 1                                       \
	}
#else
#define CLIO_CONF_DEFAULTS                                                  \
	{                                                                   \
		16384, 65536, 1048576, 64, 127, 64ull << 20, 50, 25, 30.0,  \
		CLIO_CLUSTER_ON, CLIO_RBW_CLUSTER, 1, 4, 1, 0, 0, 0, 0, 0,  \
		7, 5, 1                                                     \
	}
#endif
/* Fill conf with CLIO_CONF_DEFAULTS; -EINVAL if conf is NULL. */
int clio_conf_init(struct clio_conf *conf);

/* Set one tunable by name ("bsize", "maxphys", "cluster", ...) from a
 * string; -EINVAL with a message naming the value in errbuf if bad. */
int clio_conf_set(struct clio_conf *conf, const char *key, const char *value,
		  char *errbuf, size_t errlen);
/* Check a whole configuration (powers of two, ranges, relations). */
int clio_conf_check(const struct clio_conf *conf, char *errbuf, size_t errlen);

int clio_cache_new(const struct clio_conf *conf, clio_cache **cp);
/* Writes back every dirty buffer, then frees; returns the first error. */
int clio_cache_free(clio_cache *c);
/* Write back every dirty buffer of every object and flush the devices. */
int clio_sync(clio_cache *c);
/* Make all of the cache's buffer memory present now, so that no later
 * request pays its first-touch page faults (a server, at start); the
 * buffers' contents are untouched.  0; -ENOMEM, touching nothing, if the
 * cache is larger than the memory available (MemAvailable, or the room
 * under the cgroup's memory limit); -ENOTSUP (Linux before 5.14). */
int clio_cache_prefault(clio_cache *c);
/* Write back what a crashed process left dirty in conf's disk cache
 * (disk_cache=DIR, writeback mode) for the objects whose device string
 * begins with prefix (a directory's path and "/": the regular files
 * under it; an nfs:// URL: the files under it), each opened as that
 * string followed by query (NULL: none), as their next open would; a
 * front end does it before it serves them, so that no size or byte is
 * shown from before.  The number of objects opened, or -errno; 0
 * without disk_cache. */
int clio_disk_cache_recover(const struct clio_conf *conf, const char *prefix,
			    const char *query);

struct clio_cache_stats {
	uint64_t hits, misses;		/* block lookups by readers and writers */
	uint64_t readahead_blocks;	/* blocks read ahead of the reader */
	uint64_t readahead_used;	/* of those, later hit */
	uint64_t read_clusters;		/* read requests issued */
	uint64_t write_clusters;	/* write requests issued */
	uint64_t rbw_reads;		/* partial writes that had to read */
	uint64_t evictions;
	uint64_t throttles;		/* times a writer had to flush */
	uint64_t flushes_behind;	/* background device flushes */
	uint64_t write_errors;		/* failed write-backs */
	uint64_t lost_bytes;		/* dirty bytes dropped after a failure */
	uint64_t dirty_bytes;		/* now */
	uint64_t cached_bytes;		/* now: valid buffers */
	uint32_t nbuf;			/* buffers */
};
void clio_cache_stats(clio_cache *c, struct clio_cache_stats *st);

/* ---------------------------------------------------------------- files */

#define CLIO_RDONLY 0x0
#define CLIO_WRONLY 0x1
#define CLIO_RDWR 0x2
#define CLIO_ACCMODE 0x3
#define CLIO_DIRECT 0x10 /* bypass the cache: the raw path */
#define CLIO_KEEP 0x20	 /* keep the object's clean buffers after its last
			    close; call clio_cache_forget() before closing
			    the device */

/* Open a handle on a device's data through the cache.  Handles on the same
 * device share its buffers. */
int clio_open(clio_cache *c, clio_dev *d, int flags, clio_file **fp);
/* Writes back the object's dirty data if this is its last handle; returns
 * any write-back error not yet reported to this handle.  After the last
 * close nothing in the cache uses the device (a clio_sync in another
 * thread is waited for): it may be closed (unless CLIO_KEEP kept it). */
int clio_close(clio_file *f);

ssize_t clio_pread(clio_file *f, void *buf, size_t len, uint64_t off);
ssize_t clio_pwrite(clio_file *f, const void *buf, size_t len, uint64_t off);
/* clio_pread without the copy: view is called with iovecs that point into
 * the cache's buffers, once per run of buffers held at a time, last set on
 * the final call (made at EOF too, with no bytes).  The buffers stay
 * valid, and writers to them wait, until view returns; view must not call
 * libclio.  Returns the bytes viewed, a read error, or view's nonzero
 * return, which stops the read. */
typedef int clio_view_fn(void *arg, const struct iovec *iov, int iovcnt,
			 int last);
ssize_t clio_pread_view(clio_file *f, size_t len, uint64_t off,
			clio_view_fn *view, void *arg);
/* Every byte written before the call is on storage and the device flushed. */
int clio_fsync(clio_file *f);
int clio_ftruncate(clio_file *f, uint64_t size);
/* Drop the cached blocks wholly inside [off, off+len), dirty ones
 * unwritten (the block the data ends in counts whole up to the end),
 * once no transfer or reader has them: what the device holds there is
 * what reads see next (a resizable device shorter than the data is grown
 * to its size).  For a trim or a zeroing done on the device itself;
 * blocks only partly inside are kept.  Returns 0 or -errno. */
int clio_discard(clio_file *f, uint64_t off, uint64_t len);
/* The size readers see, including dirty data not yet written. */
int64_t clio_fsize(clio_file *f);
/* Write back the object's dirty data and wait for it, without flushing
 * the device (what a close(2) owes; fsync makes it durable).  Returns any
 * write-back error not yet reported to this handle. */
int clio_writeback(clio_file *f);

/*
 * Consistency with a source that others change (close-to-open): a
 * validator is what the front end knows of the source's version.  Equal
 * validators mean unchanged data; fields a source lacks stay 0.
 */
struct clio_validator {
	uint64_t size;
	int64_t mtime_ns, ctime_ns;
	uint64_t id;	 /* inode number, file handle hash ... */
	uint64_t change; /* a change attribute (NFSv4's), 0 if none */
};
/* Compare v with what the object last recorded: if they differ, drop
 * the object's clean buffers and take v's size (dirty data is kept, and
 * the size covers it).  Records v.  Returns 1 if cached data was dropped,
 * 0 if it was still valid (or nothing was recorded yet), or -errno. */
int clio_revalidate(clio_file *f, const struct clio_validator *v);
/* Ask device d for its object's current version (an nfs device: a
 * GETATTR RPC; the virtual clock moves by its round trip on nfs+sim).
 * -ENOTSUP where the device has no versions. */
int clio_dev_version(clio_dev *d, struct clio_validator *v);
/* Record v as the object's version without dropping anything: after this
 * handle's own writes changed the source. */
int clio_validator_set(clio_file *f, const struct clio_validator *v);
/* Drop everything the cache holds of device d (an object kept with
 * CLIO_KEEP), writing back what is dirty first; -EBUSY while d has open
 * handles.  Returns the write-back error, if any. */
int clio_cache_forget(clio_cache *c, clio_dev *d);

#ifdef __cplusplus
}
#endif
#endif /* CLIO_H */
