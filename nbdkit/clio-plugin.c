/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clio-plugin.c - the nbdkit plugin that serves any clio device through
 * clio's cache:
 *
 *   nbdkit nbdkit-clio-plugin.so [device=]DEVICE [TUNABLE=VALUE]...
 *
 * DEVICE is a clio device string (a path, file:, mem:, sim:, fault:,
 * nbd:...); every other key is a tunable of clio_conf_set (bsize,
 * cache_size, maxphys, queue_depth, ...).
 *
 * Invariants:
 *  1. One cache and one device for the whole server, made in .after_fork
 *     (nbdkit forks when it daemonizes: the cache's and the device's
 *     threads must be born in the process that serves).  .get_ready opens
 *     and closes the device once before that, so that a bad device string
 *     fails while nbdkit can still say so on the terminal (and a bsize
 *     below the device's sector size: the device would refuse its
 *     blocks).  The daemon
 *     runs in /: .after_fork opens the device from the directory nbdkit
 *     was started in, so that a relative path names the same file.
 *     Unless prefault=off, .after_fork also makes the cache's memory
 *     present, before the first client (prefault.c).
 *  2. One clio_file per connection (.open), on the shared device: the
 *     connections share the buffers, so a FLUSH on any of them covers
 *     every write acknowledged on all of them (can_multi_conn).  The
 *     handles keep the object (CLIO_KEEP): its clean blocks outlive the
 *     connections, until .unload frees the cache.  Where the device has
 *     versions (a file: size, times, inode), the first connection after
 *     none compares the device's with the one the last connection left
 *     (clio_revalidate: a file changed by another program meanwhile
 *     loses its cached blocks), and the last close records the version
 *     that the server's own write-back left.
 *  3. A write is acknowledged once it is in the cache (or, with FUA, once
 *     clio_fsync returned); FLUSH is clio_fsync: every acknowledged write
 *     on the device and the device flushed.  A connection opened after a
 *     write-back failure no client was told of fails its first FLUSH
 *     (flusherr.c): what it covers may be lost.  .close writes back and
 *     reports an error it finds; .unload frees the cache (writing back).
 *     A signal that ends nbdkit writes the cache back at once (sigsync.c).
 *  4. Requests run in parallel (NBDKIT_THREAD_MODEL_PARALLEL): the cache
 *     is thread-safe and the plugin keeps no state of its own per request.
 *  5. Trim and zero reach the device for the whole blocks of the range
 *     (clio_dev_discard, clio_dev_write_zeroes), between two clio_discard
 *     calls that drop those blocks from the cache (dirty ones unwritten:
 *     the range is being thrown away), so no cached copy outlives the
 *     device's; the partial blocks at the edges are zeroed through the
 *     cache (a zero) or left alone (a trim, which promises nothing).
 *     A zero whose client forbids a hole (NBD_CMD_FLAG_NO_HOLE: no
 *     NBDKIT_FLAG_MAY_TRIM) is zeros written through the cache, all of it.
 *     Trim is offered when the device trims.
 *  6. socket=PATH (clio serve gives nbdkit's -U PATH) names the socket
 *     file, which nbdkit leaves behind: .after_fork notes the socket
 *     nbdkit made there, and it is removed, if it is still that one, when
 *     a signal that ends the server has written the cache back, and at
 *     .unload; a server killed with SIGKILL leaves it.  From .get_ready
 *     until the watch of sigsync.c is in place (at the end of
 *     .after_fork), SIGUSR1, SIGUSR2 and SIGALRM remove it and end the
 *     server (sigsync_early): nothing is cached then.
 *  7. A file device is opened anew at the first connection after none
 *     when its path names another file than the one open (replaced by a
 *     rename, as rsync and editors do), so that no connection writes to
 *     an unlinked file; the cache forgets the old one.
 *  8. A file device named by a relative path is named by the absolute
 *     one from .get_ready on (absolute_file_device): the name is the
 *     file's identity in a disk cache, which the daemon in / would not
 *     find (it took the file for a device without a version, whose
 *     blocks kept in the disk cache are served whatever the file became
 *     meanwhile), and which must be the one clio dd and clio mount give
 *     the same file.
 *  9. The first connection decides whether the device is written: when
 *     it is read-only (nbdkit -r, clio serve -r) the device is opened
 *     anew read-only before anything is opened on it through the cache,
 *     so that nothing writes it, not even the write-back of the dirty
 *     blocks a crashed session left in a disk cache (which serves them
 *     from there until the device is opened for writing); later
 *     connections are read-only too.
 * Errors go through nbdkit_error (one line naming the value) and
 * nbdkit_set_error(errno), as an errno NBD has (wire_errno).
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "clio.h"
#include "flusherr.h"
#include "prefault.h"
#include "sigsync.h"
#include "util.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

#define MAX_REQUEST (32u << 20)	/* the largest request advertised */
#define ZERO_CHUNK (1u << 20)	/* zeros written at a time */

static char *device;
static struct clio_conf conf = CLIO_CONF_DEFAULTS;
static bool prefault = true; /* prefault=on|off */
static clio_cache *cache;
static clio_dev *dev;
static struct clio_dev_info dev_info;
static const char *zeros;
static int start_dir = -1; /* where nbdkit was started */
static char *sock_path; /* socket=PATH (invariant 6) */
static struct stat sock_st;
static bool sock_ours;
static pthread_mutex_t sock_lock = PTHREAD_MUTEX_INITIALIZER;

struct conn {
	clio_file *f;
	bool owed; /* a failure no client was told of (flusherr.c) */
};

static int
clio_config(const char *key, const char *value)
{
	char err[1024];
	int r;

	if (strcmp(key, "device") == 0) {
		if (device != NULL) {
			nbdkit_error("device given twice: '%s' and '%s'", device, value);
			return -1;
		}
		device = strdup(value);
		if (device == NULL) {
			nbdkit_error("strdup: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	if (strcmp(key, "socket") == 0) {
		free(sock_path);
		sock_path = nbdkit_absolute_path(value);
		return sock_path == NULL ? -1 : 0;
	}
	if ((r = prefault_config(key, value, &prefault)) != 0)
		return r < 0 ? -1 : 0;
	r = clio_conf_set(&conf, key, value, err, sizeof(err));
	if (r < 0) {
		nbdkit_error("%s", err[0] ? err : "bad tunable");
		return -1;
	}
	return 0;
}

static int
clio_config_complete(void)
{
	char err[1024];

	if (device == NULL) {
		nbdkit_error("no device: give device=DEVICE (a clio device string)");
		return -1;
	}
	if (clio_conf_check(&conf, err, sizeof(err)) < 0) {
		nbdkit_error("%s", err);
		return -1;
	}
	clio_dev_set_default_queue_depth(conf.queue_depth);
	return 0;
}

/* NBD carries EPERM, EIO, ENOMEM, EINVAL, ENOSPC, EOVERFLOW, ENOTSUP and
 * ESHUTDOWN (nbdkit maps EROFS, EDQUOT, EFBIG and EOPNOTSUPP to them);
 * nbdkit sends any other errno as EINVAL, which would blame the client's
 * request for what is the device's failure (ENOTCONN: a network device
 * whose server died): those are EIO. */
static int
wire_errno(int e)
{
	switch (e) {
	case EPERM: case EROFS: case EIO: case ENOMEM: case EINVAL:
	case ENOSPC: case EDQUOT: case EFBIG: case EOVERFLOW:
	case ENOTSUP: case ESHUTDOWN:
#if EOPNOTSUPP != ENOTSUP
	case EOPNOTSUPP:
#endif
		return e;
	default:
		return EIO;
	}
}

static int dev_flags; /* CLIO_DEV_RDONLY once the server is read-only (invariant 9) */

static int
open_device(void)
{
	char err[1024];
	int r;

	r = clio_dev_open_err(device, dev_flags, &dev, err, sizeof(err));
	if (r == -EROFS || r == -EACCES)
		r = clio_dev_open_err(device, CLIO_DEV_RDONLY, &dev, err, sizeof(err));
	if (r < 0) {
		nbdkit_error("cannot open device '%s': %s", device,
			     err[0] ? err : strerror(-r));
		nbdkit_set_error(wire_errno(-r));
		return -1;
	}
	clio_dev_info(dev, &dev_info);
	return 0;
}

/* Invariant 6 before the watch is in place, in a signal handler: the
 * socket at the path is the one nbdkit bound (it starts over none). */
static void
remove_socket_early(void)
{
	struct stat st;
	int saved = errno;

	if (sock_path != NULL && lstat(sock_path, &st) == 0 && S_ISSOCK(st.st_mode))
		(void)unlink(sock_path);
	errno = saved;
}

/* Invariant 8: a file device named by a relative path is named by the
 * absolute one (nbdkit's cwd, before it forks), "file:" and its query
 * kept; 0 or -1. */
static int
absolute_file_device(void)
{
	bool prefixed = strncmp(device, "file:", 5) == 0;
	const char *path = prefixed ? device + 5 : device;
	const char *q = prefixed ? strchr(path, '?') : NULL;
	char *rel, *abs, *s;

	if (path[0] == '/')
		return 0;
	rel = q != NULL ? strndup(path, (size_t)(q - path)) : strdup(path);
	abs = rel != NULL ? nbdkit_absolute_path(rel) : NULL;
	free(rel);
	if (abs == NULL)
		return -1;
	s = malloc(strlen(abs) + (q != NULL ? strlen(q) : 0) + 6);
	if (s == NULL) {
		free(abs);
		nbdkit_error("malloc: %s", strerror(errno));
		return -1;
	}
	sprintf(s, "%s%s%s", prefixed ? "file:" : "", abs, q != NULL ? q : "");
	free(abs);
	free(device);
	device = s;
	return 0;
}

/* Invariant 1: the device string checked before nbdkit forks. */
static int
clio_get_ready(void)
{
	sigsync_early(remove_socket_early);
	if (open_device() < 0)
		return -1;
	if (strcmp(dev_info.type, "file") == 0 && absolute_file_device() < 0) {
		clio_dev_close(dev);
		dev = NULL;
		return -1;
	}
	clio_dev_close(dev);
	dev = NULL;
	if (conf.bsize < dev_info.sector) { /* its write-back would be refused */
		nbdkit_error("bsize %u is below the sector size %u of device '%s'",
			     conf.bsize, dev_info.sector, device);
		return -1;
	}
	start_dir = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return 0;
}

/* open_device() from start_dir (invariant 1), then back where nbdkit is. */
static int
open_device_from_start(void)
{
	int here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	if (start_dir < 0 || here < 0 || fchdir(start_dir) < 0) {
		if (here >= 0)
			close(here);
		return open_device();
	}
	r = open_device();
	if (fchdir(here) < 0)
		nbdkit_debug("fchdir back: %s", strerror(errno));
	close(here);
	return r;
}

/* Invariant 6: the socket file removed if it is the server's. */
static void
remove_socket(void)
{
	struct stat st;

	pthread_mutex_lock(&sock_lock);
	if (sock_ours && lstat(sock_path, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    st.st_dev == sock_st.st_dev && st.st_ino == sock_st.st_ino &&
	    unlink(sock_path) < 0)
		nbdkit_debug("unlink %s: %s", sock_path, strerror(errno));
	sock_ours = false;
	pthread_mutex_unlock(&sock_lock);
}

static int
clio_after_fork(void)
{
	int r;

	if (sock_path != NULL && lstat(sock_path, &sock_st) == 0 &&
	    S_ISSOCK(sock_st.st_mode)) {
		sock_ours = true;
		sigsync_set_hook(remove_socket);
	}

	if (open_device_from_start() < 0)
		return -1;
	r = clio_cache_new(&conf, &cache);
	if (r < 0) {
		nbdkit_error("cannot make the cache: %s", strerror(-r));
		return -1;
	}
	prefault_cache(cache, prefault);
	sigsync_start(cache); /* a signal before any client removes the socket */
	zeros = calloc(1, ZERO_CHUNK);
	if (zeros == NULL) {
		nbdkit_error("calloc: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void
clio_unload(void)
{
	int r = 0;

	sigsync_stop(cache);
	if (cache != NULL && (r = clio_cache_free(cache)) < 0)
		nbdkit_error("writing back the cache of '%s': %s", device, strerror(-r));
	if (dev != NULL)
		clio_dev_close(dev);
	remove_socket();
	if (start_dir >= 0)
		close(start_dir);
	free((void *)zeros);
	free(device);
	free(sock_path);
	sigsync_end(r);
}

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned nconns; /* open connections (invariant 2) */

/* Invariant 7: a file replaced at its path since the device was opened
 * (renamed over, deleted and made again) is opened anew, and what the
 * cache holds of the old one forgotten; 1 then, with the old one's
 * version in *vo, else 0.  With conns_lock held and no connection open. */
static int
reopen_if_replaced(struct clio_validator *vo)
{
	clio_dev *old = dev;
	struct clio_dev_info old_info = dev_info;
	struct clio_validator vn;
	int r;

	if (strcmp(dev_info.type, "file") != 0 || clio_dev_version(old, vo) < 0)
		return 0;
	if (open_device_from_start() < 0 || clio_dev_version(dev, &vn) < 0 ||
	    vn.id == vo->id) {
		if (dev != old)
			clio_dev_close(dev);
		dev = old;
		dev_info = old_info;
		return 0;
	}
	nbdkit_debug("'%s' was replaced: opened anew", device);
	if ((r = clio_cache_forget(cache, old)) < 0)
		nbdkit_error("writing back '%s' (replaced): %s", device, strerror(-r));
	clio_dev_close(old);
	return 1;
}

/* Invariant 9: the device opened anew read-only, before the first
 * connection (a read-only one) opens it through the cache; with
 * conns_lock held.  One that cannot be is left as it was. */
static void
reopen_readonly(void)
{
	clio_dev *rw = dev;
	struct clio_dev_info rw_info = dev_info;

	dev_flags = CLIO_DEV_RDONLY;
	if (open_device_from_start() < 0) {
		dev = rw;
		dev_info = rw_info;
		return;
	}
	clio_dev_close(rw);
}

static void *
clio_plugin_open(int readonly)
{
	static bool first = true;
	struct conn *h = calloc(1, sizeof(*h));
	struct clio_validator v, vo;
	bool replaced;
	int r;

	if (h == NULL) {
		nbdkit_error("calloc: %s", strerror(errno));
		return NULL;
	}
	pthread_mutex_lock(&conns_lock);
	if (first && readonly && !dev_info.readonly)
		reopen_readonly();
	first = false;
	replaced = nconns == 0 && reopen_if_replaced(&vo);
	r = clio_open(cache, dev, (readonly || dev_info.readonly ? CLIO_RDONLY : CLIO_RDWR) |
			  CLIO_KEEP, &h->f);
	if (r < 0) {
		pthread_mutex_unlock(&conns_lock);
		nbdkit_error("cannot open '%s' through the cache: %s", device,
			     strerror(-r));
		nbdkit_set_error(wire_errno(-r));
		free(h);
		return NULL;
	}
	/* the old file's version first: a disk tier of the same name holds
	 * its blocks, which the new version below then drops */
	if (replaced)
		(void)clio_revalidate(h->f, &vo);
	if (nconns++ == 0 && clio_dev_version(dev, &v) == 0 &&
	    (r = clio_revalidate(h->f, &v)) < 0)
		nbdkit_error("revalidating '%s': %s", device, strerror(-r));
	pthread_mutex_unlock(&conns_lock);
	h->owed = flusherr_owed(cache);
	sigsync_start(cache);
	return h;
}

static void
clio_plugin_close(void *handle)
{
	struct conn *h = handle;
	struct clio_validator v;
	int r, r2;

	pthread_mutex_lock(&conns_lock);
	r = clio_writeback(h->f);
	if (--nconns == 0 && clio_dev_version(dev, &v) == 0)
		(void)clio_validator_set(h->f, &v);
	r2 = clio_close(h->f);
	pthread_mutex_unlock(&conns_lock);
	if (r == 0)
		r = r2;
	if (r < 0)
		nbdkit_error("writing back '%s' at the close of a connection: %s",
			     device, strerror(-r));
	free(h);
}

static int64_t
clio_get_size(void *handle)
{
	struct conn *h = handle;
	int64_t s = clio_fsize(h->f);

	if (s < 0) {
		nbdkit_error("size of '%s': %s", device, strerror((int)-s));
		nbdkit_set_error(wire_errno((int)-s));
		return -1;
	}
	return s;
}

static int
clio_block_size(void *handle, uint32_t *minimum, uint32_t *preferred,
		uint32_t *maximum)
{
	(void)handle;
	*minimum = dev_info.sector ? dev_info.sector : 1;
	/* the export's last bytes must be addressable (NBD: its size a
	 * multiple of the minimum); the cache takes requests of any alignment */
	while (*minimum > 1 && clio_dev_size(dev) % *minimum != 0)
		*minimum /= 2;
	*preferred = MAX(conf.bsize, *minimum);
	*maximum = MAX(MAX_REQUEST, *preferred);
	return 0;
}

static int
clio_can_write(void *handle)
{
	(void)handle;
	return !dev_info.readonly;
}

static int
clio_can_one(void *handle)
{
	(void)handle;
	return 1;
}

static int
clio_can_fua(void *handle)
{
	(void)handle;
	return NBDKIT_FUA_NATIVE;
}

static int
clio_can_cache(void *handle)
{
	(void)handle;
	return NBDKIT_CACHE_NATIVE;
}

static int
fail_with(const char *what, uint32_t count, uint64_t offset, ssize_t r)
{
	nbdkit_error("%s of %u bytes at %llu on '%s': %s", what, count,
		     (unsigned long long)offset, device, strerror((int)-r));
	nbdkit_set_error(wire_errno((int)-r));
	return -1;
}

static int
clio_plugin_pread(void *handle, void *buf, uint32_t count, uint64_t offset,
		  uint32_t flags)
{
	struct conn *h = handle;
	uint32_t done = 0;

	(void)flags;
	while (done < count) {
		ssize_t r = clio_pread(h->f, (char *)buf + done, count - done,
				       offset + done);
		if (r < 0)
			return fail_with("read", count, offset, r);
		if (r == 0) { /* past the end: nbdkit checks bounds, but be sure */
			memset((char *)buf + done, 0, count - done);
			break;
		}
		done += (uint32_t)r;
	}
	return 0;
}

static int
write_all(struct conn *h, const void *buf, uint32_t count, uint64_t offset)
{
	uint32_t done = 0;

	while (done < count) {
		ssize_t r = clio_pwrite(h->f, (const char *)buf + done,
					count - done, offset + done);
		if (r < 0)
			return fail_with("write", count, offset, r);
		if (r == 0)
			return fail_with("write", count, offset, -EIO);
		done += (uint32_t)r;
	}
	return 0;
}

static int
fua(struct conn *h, uint32_t flags)
{
	int r;

	if (!(flags & NBDKIT_FLAG_FUA))
		return 0;
	r = flusherr_fsync(cache, h->f, &h->owed);
	if (r < 0) {
		nbdkit_error("flush of '%s': %s", device, strerror(-r));
		nbdkit_set_error(wire_errno(-r));
		return -1;
	}
	return 0;
}

static int
clio_plugin_pwrite(void *handle, const void *buf, uint32_t count,
		   uint64_t offset, uint32_t flags)
{
	struct conn *h = handle;

	if (write_all(h, buf, count, offset) < 0)
		return -1;
	return fua(h, flags);
}

/* Zeros written through the cache. */
static int
zero_cached(struct conn *h, uint64_t lo, uint64_t hi)
{
	while (lo < hi) {
		uint32_t n = (uint32_t)MIN(hi - lo, (uint64_t)ZERO_CHUNK);
		if (write_all(h, zeros, n, lo) < 0)
			return -1;
		lo += n;
	}
	return 0;
}

/* Invariant 5: the device's op on the whole blocks [lo, hi). */
static int
device_range(struct conn *h, const char *what, uint64_t lo, uint64_t hi,
	     int (*op)(clio_dev *, uint64_t, uint64_t))
{
	int r;

	if ((r = clio_discard(h->f, lo, hi - lo)) < 0 ||
	    (r = op(dev, lo, hi - lo)) < 0 ||
	    (r = clio_discard(h->f, lo, hi - lo)) < 0)
		return fail_with(what, (uint32_t)(hi - lo), lo, r);
	return 0;
}

static int
clio_plugin_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	struct conn *h = handle;
	uint64_t bs = conf.bsize, end = offset + count;
	uint64_t lo = (offset + bs - 1) / bs * bs, hi = end / bs * bs;

	if (flags & NBDKIT_FLAG_FAST_ZERO) {
		nbdkit_set_error(ENOTSUP);
		return -1;
	}
	if (lo >= hi || !(flags & NBDKIT_FLAG_MAY_TRIM)) /* NO_HOLE: no hole punched */
		lo = hi = end;
	if (zero_cached(h, offset, lo) < 0 ||
	    (lo < hi && device_range(h, "zero", lo, hi, clio_dev_write_zeroes) < 0) ||
	    zero_cached(h, MAX(hi, offset), end) < 0)
		return -1;
	return fua(h, flags);
}

static int
clio_can_trim(void *handle)
{
	(void)handle;
	return !dev_info.readonly && clio_dev_discard(dev, 0, 0) == 0;
}

/* A trim is advisory: one the device cannot do (a block device without
 * discard) trims nothing. */
static int
discard_if_able(clio_dev *d, uint64_t off, uint64_t len)
{
	int r = clio_dev_discard(d, off, len);

	return r == -ENOTSUP ? 0 : r;
}

static int
clio_plugin_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	struct conn *h = handle;
	uint64_t bs = conf.bsize;
	uint64_t lo = (offset + bs - 1) / bs * bs, hi = (offset + count) / bs * bs;

	if (lo < hi && device_range(h, "trim", lo, hi, discard_if_able) < 0)
		return -1;
	return fua(h, flags);
}

static int
clio_plugin_flush(void *handle, uint32_t flags)
{
	(void)flags;
	return fua(handle, NBDKIT_FLAG_FUA);
}

/* NBD_CMD_CACHE: read into the cache, the data dropped here. */
static int
clio_plugin_cache(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	struct conn *h = handle;
	char *scratch = malloc(ZERO_CHUNK);
	uint32_t done = 0;
	int r = 0;

	(void)flags;
	if (scratch == NULL) {
		nbdkit_set_error(ENOMEM);
		return -1;
	}
	while (r == 0 && done < count) {
		uint32_t n = MIN(count - done, ZERO_CHUNK);
		r = clio_plugin_pread(h, scratch, n, offset + done, 0);
		done += n;
	}
	free(scratch);
	return r;
}

static struct nbdkit_plugin plugin = {
	.name = "clio",
	.longname = "clio: any clio device through clio's buffer cache",
	.version = CLIO_VERSION,
	.description = "Serves a clio device (file, mem, sim, fault, nbd, nfs, rbd) "
		       "through clio's buffer cache with BSD-style clustering.",
	.magic_config_key = "device",
	.config = clio_config,
	.config_complete = clio_config_complete,
	.config_help = "device=DEVICE    (required) a clio device string\n"
		       "socket=PATH      nbdkit's -U PATH, removed when the server exits\n"
		       "TUNABLE=VALUE    a cache tunable (bsize, cache_size, maxphys, ...)\n"
		       "prefault=off     leave the cache's memory to its first use",
	.get_ready = clio_get_ready,
	.after_fork = clio_after_fork,
	.unload = clio_unload,
	.open = clio_plugin_open,
	.close = clio_plugin_close,
	.get_size = clio_get_size,
	.block_size = clio_block_size,
	.can_write = clio_can_write,
	.can_flush = clio_can_one,
	.can_multi_conn = clio_can_one,
	.can_fua = clio_can_fua,
	.can_zero = clio_can_one,
	.can_trim = clio_can_trim,
	.can_cache = clio_can_cache,
	.pread = clio_plugin_pread,
	.pwrite = clio_plugin_pwrite,
	.zero = clio_plugin_zero,
	.trim = clio_plugin_trim,
	.flush = clio_plugin_flush,
	.cache = clio_plugin_cache,
	.errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
