/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clio-filter.c - the nbdkit filter that puts clio's cache between the
 * clients and any plugin:
 *
 *   nbdkit --filter=nbdkit-clio-filter.so PLUGIN [ARGS] [TUNABLE=VALUE]...
 *
 * A key clio_conf_set knows (bsize, cache_size, maxphys, dirty_hi, ...)
 * is the filter's; every other key goes to the plugin.
 *
 * Invariants:
 *  1. One device and one cache for the whole server, made in .after_fork:
 *     the device is a context into the plugin opened outside connections
 *     (filterdev.c), so every connection shares the buffers and a FLUSH on
 *     any of them covers every write acknowledged on all (can_multi_conn).
 *     A bsize below the plugin's minimum block size is refused there (the
 *     plugin would refuse the write-back of such blocks).
 *     The handles keep the object (CLIO_KEEP): its clean blocks outlive
 *     the connections, until .cleanup frees the cache.
 *     Unless prefault=off, the cache's memory is made present there,
 *     before the first client (prefault.c).
 *  2. One clio_file per connection (.open); the connection's own next is
 *     opened, as nbdkit expects, and carries no data: nbdkit asks it only
 *     what the filter passes through (is_rotational).
 *  3. A write is acknowledged once it is in the cache (with FUA, once
 *     clio_fsync returned); FLUSH is clio_fsync: every acknowledged write
 *     is on the plugin's storage and the plugin flushed.  A connection
 *     opened after a write-back failure no client was told of fails its
 *     first FLUSH (flusherr.c): what it covers may be lost.  .close writes
 *     back and reports an error it finds; .cleanup frees the cache
 *     (writing back) and closes the device.  A signal that ends nbdkit
 *     writes the cache back at once (sigsync.c).
 *  4. What the cache cannot keep coherent is not advertised: no extents
 *     (the plugin's map lags the dirty buffers), no fast zero (a refused
 *     one must leave the dirty buffers, which would land after it).
 *  5. Requests run in parallel: the cache is thread-safe and the filter
 *     keeps no state per request.  Below a plugin (or filter) of a
 *     serialized thread model, the calls into it are made one at a time
 *     (filterdev.c): nbdkit serializes the clients' requests, not the
 *     cache's write-behind and read-ahead.
 *  6. Trim and zero go down to the plugin for the blocks wholly inside
 *     the range: their buffers are dropped (clio_discard, dirty ones
 *     unwritten) before the plugin's call and again after it, so that a
 *     block read meanwhile is not kept stale.  Trim is advertised when
 *     the plugin trims (the partial blocks at its edges are left alone);
 *     zero always: what the plugin cannot zero, or refuses to, and the
 *     partial blocks, get zeros written through the cache.  With a disk
 *     tier (disk_cache), whose copies the plugin's calls would bypass,
 *     neither goes down: no trim, and zeros through the cache.
 */
#include <nbdkit-filter.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "clio.h"
#include "filterdev.h"
#include "flusherr.h"
#include "prefault.h"
#include "sigsync.h"
#include "util.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

#define MAX_REQUEST (32u << 20) /* the largest request advertised */

static struct clio_conf conf = CLIO_CONF_DEFAULTS;
static clio_cache *cache;
static clio_dev *dev;
static bool prefault = true; /* prefault=on|off */
static struct clio_dev_info dev_info;
static char *zeros; /* bsize bytes */
static nbdkit_next *devnext; /* the device's context: owned by dev */
static int plugin_trim, plugin_zero; /* what devnext can do */

struct conn {
	clio_file *f;
	bool owed; /* a failure no client was told of (flusherr.c) */
};

static int
cf_config(nbdkit_next_config *next, nbdkit_backend *nxdata, const char *key,
	  const char *value)
{
	char err[1024] = "";
	int r = prefault_config(key, value, &prefault);

	if (r != 0)
		return r < 0 ? -1 : 0;
	if (clio_conf_set(&conf, key, value, err, sizeof(err)) == 0)
		return 0;
	if (strncmp(err, "unknown option", 14) == 0)
		return next(nxdata, key, value);
	nbdkit_error("%s", err);
	return -1;
}

static int
cf_config_complete(nbdkit_next_config_complete *next, nbdkit_backend *nxdata)
{
	char err[1024];

	if (clio_conf_check(&conf, err, sizeof(err)) < 0) {
		nbdkit_error("%s", err);
		return -1;
	}
	clio_dev_set_default_queue_depth(conf.queue_depth);
	return next(nxdata);
}

/* Invariant 1: the device and the cache, born in the process that serves. */
static int
cf_after_fork(nbdkit_backend *backend)
{
	nbdkit_next *next = nbdkit_next_context_open(backend, 0, "", 1);
	int r;

	if (next == NULL) {
		nbdkit_error("cannot open a context into the plugin");
		return -1;
	}
	if (next->prepare(next) < 0) {
		nbdkit_error("cannot prepare a context into the plugin");
		nbdkit_next_context_close(next);
		return -1;
	}
	if ((plugin_trim = next->can_trim(next)) < 0 ||
	    (plugin_zero = next->can_zero(next)) < 0) {
		nbdkit_error("cannot ask the plugin whether it trims and zeroes");
		plugin_trim = plugin_zero = 0;
	}
	plugin_zero = plugin_zero == NBDKIT_ZERO_NATIVE;
	/* a disk tier would keep what the plugin zeroed or trimmed behind its
	 * back (clio_dev_discard refuses under one): zeros go through it */
	if (conf.disk_cache != NULL)
		plugin_trim = plugin_zero = 0;
	devnext = next;
	r = filterdev_open(next, conf.queue_depth, &dev);
	if (r < 0) {
		nbdkit_error("cannot make the plugin a clio device: %s", strerror(-r));
		return -1;
	}
	clio_dev_info(dev, &dev_info);
	if (conf.bsize < dev_info.sector) { /* its write-back would be refused */
		nbdkit_error("bsize %u is below the plugin's minimum block size %u",
			     conf.bsize, dev_info.sector);
		return -1;
	}
	r = clio_cache_new(&conf, &cache);
	if (r < 0) {
		nbdkit_error("cannot make the cache: %s", strerror(-r));
		return -1;
	}
	prefault_cache(cache, prefault);
	zeros = calloc(1, conf.bsize);
	if (zeros == NULL) {
		nbdkit_error("calloc: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void
cf_cleanup(nbdkit_backend *backend)
{
	int r = 0;

	(void)backend;
	sigsync_stop(cache);
	if (cache != NULL && (r = clio_cache_free(cache)) < 0)
		nbdkit_error("writing back the cache: %s", strerror(-r));
	cache = NULL;
	if (dev != NULL)
		clio_dev_close(dev);
	dev = NULL;
	devnext = NULL;
	free(zeros);
	zeros = NULL;
	sigsync_end(r);
}

static int
cf_thread_model(void)
{
	return THREAD_MODEL;
}

/* Invariant 5: a plugin that is not thread-safe is called by one thread
 * at a time, the cache's worker threads included (filterdev.c). */
static int
cf_get_ready(int thread_model)
{
	filterdev_set_thread_model(thread_model);
	return 0;
}

static void *
cf_open(nbdkit_next_open *next, nbdkit_context *context, int readonly,
	const char *exportname, int is_tls)
{
	struct conn *h;
	int r;

	(void)is_tls;
	if (next(context, readonly, exportname) < 0)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		nbdkit_error("calloc: %s", strerror(errno));
		return NULL;
	}
	r = clio_open(cache, dev, (readonly || dev_info.readonly ? CLIO_RDONLY : CLIO_RDWR) |
			  CLIO_KEEP, &h->f);
	if (r < 0) {
		nbdkit_error("cannot open the plugin through the cache: %s",
			     strerror(-r));
		free(h);
		return NULL;
	}
	h->owed = flusherr_owed(cache);
	sigsync_start(cache);
	return h;
}

static void
cf_close(void *handle)
{
	struct conn *h = handle;
	int r = clio_writeback(h->f), r2 = clio_close(h->f);

	if (r == 0)
		r = r2;
	if (r < 0)
		nbdkit_error("writing back at the close of a connection: %s",
			     strerror(-r));
	free(h);
}

static int64_t
cf_get_size(nbdkit_next *next, void *handle)
{
	(void)next;
	(void)handle;
	return (int64_t)clio_dev_size(dev);
}

static int
cf_block_size(nbdkit_next *next, void *handle, uint32_t *minimum,
	      uint32_t *preferred, uint32_t *maximum)
{
	(void)next;
	(void)handle;
	*minimum = dev_info.sector;
	/* the export's last bytes must be addressable (NBD: its size a
	 * multiple of the minimum); the cache takes requests of any alignment */
	while (*minimum > 1 && clio_dev_size(dev) % *minimum != 0)
		*minimum /= 2;
	*preferred = MAX(conf.bsize, *minimum);
	*maximum = MAX(MAX_REQUEST, MAX(conf.maxphys, *preferred));
	return 0;
}

static int
cf_can_write(nbdkit_next *next, void *handle)
{
	(void)next;
	(void)handle;
	return !dev_info.readonly;
}

static int
cf_one(nbdkit_next *next, void *handle)
{
	(void)next;
	(void)handle;
	return 1;
}

static int
cf_none(nbdkit_next *next, void *handle)
{
	(void)next;
	(void)handle;
	return 0;
}

static int
cf_can_zero(nbdkit_next *next, void *handle)
{
	(void)next;
	(void)handle;
	return NBDKIT_ZERO_NATIVE; /* 1 would be EMULATE: nbdkit's writes */
}

static int
cf_can_fua(nbdkit_next *next, void *handle)
{
	(void)next;
	(void)handle;
	return NBDKIT_FUA_NATIVE;
}

static int
cf_can_cache(nbdkit_next *next, void *handle)
{
	(void)next;
	(void)handle;
	return NBDKIT_CACHE_NATIVE;
}

static int
fail_with(const char *what, uint32_t count, uint64_t offset, ssize_t r, int *err)
{
	nbdkit_error("%s of %u bytes at %llu: %s", what, count,
		     (unsigned long long)offset, strerror((int)-r));
	*err = (int)-r;
	return -1;
}

static int
read_all(struct conn *h, void *buf, uint32_t count, uint64_t offset, int *err)
{
	uint32_t done = 0;

	while (done < count) {
		ssize_t r = clio_pread(h->f, (char *)buf + done, count - done,
				       offset + done);
		if (r < 0)
			return fail_with("read", count, offset, r, err);
		if (r == 0) { /* past the end: nbdkit checks bounds, but be sure */
			memset((char *)buf + done, 0, count - done);
			break;
		}
		done += (uint32_t)r;
	}
	return 0;
}

static int
write_all(struct conn *h, const void *buf, uint32_t count, uint64_t offset,
	  int *err)
{
	uint32_t done = 0;

	while (done < count) {
		ssize_t r = clio_pwrite(h->f, (const char *)buf + done,
					count - done, offset + done);
		if (r <= 0)
			return fail_with("write", count, offset, r < 0 ? r : -EIO, err);
		done += (uint32_t)r;
	}
	return 0;
}

static int
fsync_if(struct conn *h, uint32_t flags, int *err)
{
	int r;

	if (!(flags & NBDKIT_FLAG_FUA))
		return 0;
	r = flusherr_fsync(cache, h->f, &h->owed);
	if (r < 0) {
		nbdkit_error("flush: %s", strerror(-r));
		*err = -r;
		return -1;
	}
	return 0;
}

static int
cf_pread(nbdkit_next *next, void *handle, void *buf, uint32_t count,
	 uint64_t offset, uint32_t flags, int *err)
{
	(void)next;
	(void)flags;
	return read_all(handle, buf, count, offset, err);
}

static int
cf_pwrite(nbdkit_next *next, void *handle, const void *buf, uint32_t count,
	  uint64_t offset, uint32_t flags, int *err)
{
	(void)next;
	if (write_all(handle, buf, count, offset, err) < 0)
		return -1;
	return fsync_if(handle, flags, err);
}

/* Zeros written through the cache, a buffer at a time. */
static int
zero_cached(struct conn *h, uint32_t count, uint64_t offset, int *err)
{
	uint32_t done = 0;

	while (done < count) {
		uint32_t n = MIN(count - done, conf.bsize - (uint32_t)((offset + done) % conf.bsize));
		if (write_all(h, zeros, n, offset + done, err) < 0)
			return -1;
		done += n;
	}
	return 0;
}

static int
discard(struct conn *h, uint64_t offset, uint64_t count, int *err)
{
	int r = clio_discard(h->f, offset, count);

	if (r < 0)
		return fail_with("discard", (uint32_t)count, offset, r, err);
	return 0;
}

/* The blocks wholly inside [offset, offset+count): [*lo, *hi); false if
 * none.  The block the device ends in counts whole. */
static bool
inner_blocks(uint32_t count, uint64_t offset, uint64_t *lo, uint64_t *hi)
{
	uint64_t bs = conf.bsize, end = offset + count, size = clio_dev_size(dev);

	*lo = (offset + bs - 1) / bs * bs;
	*hi = end >= size ? end : end / bs * bs;
	return *lo < *hi;
}

/* Invariant 6: op (trim or zero) of the plugin on [lo, hi), between two
 * discards of its buffers; -1 (with *err) if that failed. */
static int
down(struct conn *h, bool zero, uint64_t lo, uint64_t hi, uint32_t flags,
     int *err)
{
	uint32_t n = (uint32_t)(hi - lo);
	int r;

	if (discard(h, lo, n, err) < 0)
		return -1;
	filterdev_enter();
	r = zero ? devnext->zero(devnext, n, lo, flags, err)
		 : devnext->trim(devnext, n, lo, flags, err);
	filterdev_leave();
	if (r < 0)
		return -1;
	return discard(h, lo, n, err);
}

static int
cf_zero(nbdkit_next *next, void *handle, uint32_t count, uint64_t offset,
	uint32_t flags, int *err)
{
	struct conn *h = handle;
	uint64_t lo, hi;

	(void)next;
	if (flags & NBDKIT_FLAG_FAST_ZERO) {
		*err = ENOTSUP;
		return -1;
	}
	if (!plugin_zero || !inner_blocks(count, offset, &lo, &hi)) {
		if (zero_cached(h, count, offset, err) < 0)
			return -1;
		return fsync_if(h, flags, err);
	}
	if (down(h, true, lo, hi, flags & NBDKIT_FLAG_MAY_TRIM, err) < 0) {
		nbdkit_debug("the plugin's zero failed (%s): zeros through the cache",
			     strerror(*err));
		if (zero_cached(h, (uint32_t)(hi - lo), lo, err) < 0)
			return -1;
	}
	if (zero_cached(h, (uint32_t)(lo - offset), offset, err) < 0 ||
	    zero_cached(h, (uint32_t)(offset + count - MIN(hi, offset + count)),
			MIN(hi, offset + count), err) < 0)
		return -1;
	return fsync_if(h, flags, err);
}

static int
cf_trim(nbdkit_next *next, void *handle, uint32_t count, uint64_t offset,
	uint32_t flags, int *err)
{
	struct conn *h = handle;
	uint64_t lo, hi;

	(void)next;
	if (inner_blocks(count, offset, &lo, &hi) &&
	    down(h, false, lo, hi, 0, err) < 0) {
		nbdkit_error("trim of %u bytes at %llu: %s", count,
			     (unsigned long long)offset, strerror(*err));
		return -1;
	}
	return fsync_if(h, flags, err);
}

static int
cf_can_trim(nbdkit_next *next, void *handle)
{
	(void)next;
	(void)handle;
	return plugin_trim && !dev_info.readonly;
}

static int
cf_flush(nbdkit_next *next, void *handle, uint32_t flags, int *err)
{
	(void)next;
	(void)flags;
	return fsync_if(handle, NBDKIT_FLAG_FUA, err);
}

/* NBD_CMD_CACHE: a read through the cache, the data dropped here. */
static int
cf_cache(nbdkit_next *next, void *handle, uint32_t count, uint64_t offset,
	 uint32_t flags, int *err)
{
	uint32_t chunk = MAX(conf.maxphys, conf.bsize), done = 0;
	char *scratch = malloc(chunk);
	int r = 0;

	(void)next;
	(void)flags;
	if (scratch == NULL) {
		*err = ENOMEM;
		return -1;
	}
	while (r == 0 && done < count) {
		uint32_t n = MIN(count - done, chunk);
		r = read_all(handle, scratch, n, offset + done, err);
		done += n;
	}
	free(scratch);
	return r;
}

static struct nbdkit_filter filter = {
	.name = "clio",
	.longname = "clio: clio's buffer cache in front of any plugin",
	.description = "Caches a plugin in clio's buffer cache with BSD-style "
		       "clustering, read-ahead and write-behind.",
	.config = cf_config,
	.config_complete = cf_config_complete,
	.config_help = "TUNABLE=VALUE    a cache tunable (bsize, cache_size, maxphys, ...)\n"
		       "prefault=off     leave the cache's memory to its first use",
	.thread_model = cf_thread_model,
	.get_ready = cf_get_ready,
	.after_fork = cf_after_fork,
	.cleanup = cf_cleanup,
	.open = cf_open,
	.close = cf_close,
	.get_size = cf_get_size,
	.block_size = cf_block_size,
	.can_write = cf_can_write,
	.can_flush = cf_one,
	.can_trim = cf_can_trim,
	.can_zero = cf_can_zero,
	.can_fast_zero = cf_none,
	.can_extents = cf_none,
	.can_fua = cf_can_fua,
	.can_multi_conn = cf_one,
	.can_cache = cf_can_cache,
	.pread = cf_pread,
	.pwrite = cf_pwrite,
	.zero = cf_zero,
	.trim = cf_trim,
	.flush = cf_flush,
	.cache = cf_cache,
};

NBDKIT_REGISTER_FILTER(filter)
