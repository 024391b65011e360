/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * file.c - the file backend: `/path` or `file:/path[?direct=0|1][&qd=N]
 * [&maxio=N][&engine=uring|threads]`, a regular file or a block device.
 *
 * Two engines move the data (engine=, default uring):
 *  - uring: the pieces go to an io_uring ring of the device (uring.c):
 *    readv/writev at an offset, fdatasync as IORING_OP_FSYNC with
 *    IORING_FSYNC_DATASYNC; one completion thread, up to qd pieces in
 *    flight from any number of submitters.  When io_uring cannot be set
 *    up (no kernel support, seccomp, EPERM) or CLIO_NO_URING is set in the
 *    environment, the device falls back to threads and records why in its
 *    engine string; with engine=uring given, opening fails instead.
 *  - threads: preadv/pwritev/fdatasync in io(), on the device layer's
 *    worker pool.
 * With direct=1 the file is opened O_DIRECT and every piece whose memory,
 * offset or length is not aligned goes through an aligned bounce buffer in
 * io() (under uring, such a piece is deferred to the pool).  A bounce write
 * of unaligned edges reads them first; it runs alone among the writes
 * (`gate`: aligned writes share it, from submission to completion, a
 * bounce write and a resize take it alone), since it rewrites the rest of
 * its edge units and may pad the file and cut it back.  A regular file is
 * resizable (ftruncate); a block device has the size the kernel reports.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "dev/uring.h"

/* Shared and exclusive holds that may end on another thread than the one
 * that took them (a ring write ends on the completion thread). */
struct file_gate {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int shared;
	bool excl;
};

struct file_dev {
	int fd;
	bool direct;
	uint32_t align; /* O_DIRECT alignment of memory, offset and length */
	bool regular;
	bool blockdev;
	struct file_gate gate;	/* direct writes (see above) */
	struct uring_ring *ring; /* NULL: the threads engine */
	char *path;
};

static void
gate_shared_enter(struct file_gate *g)
{
	pthread_mutex_lock(&g->m);
	while (g->excl)
		pthread_cond_wait(&g->cv, &g->m);
	g->shared++;
	pthread_mutex_unlock(&g->m);
}

static void
gate_shared_leave(struct file_gate *g)
{
	pthread_mutex_lock(&g->m);
	if (--g->shared == 0)
		pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->m);
}

static void
gate_excl_enter(struct file_gate *g)
{
	pthread_mutex_lock(&g->m);
	while (g->excl || g->shared > 0)
		pthread_cond_wait(&g->cv, &g->m);
	g->excl = true;
	pthread_mutex_unlock(&g->m);
}

static void
gate_excl_leave(struct file_gate *g)
{
	pthread_mutex_lock(&g->m);
	g->excl = false;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->m);
}

static bool
iov_aligned(const struct iovec *iov, int iovcnt, uint32_t align)
{
	int i;

	for (i = 0; i < iovcnt; i++)
		if (((uintptr_t)iov[i].iov_base | iov[i].iov_len) & (align - 1))
			return false;
	return true;
}

static bool
needs_bounce(const struct file_dev *f, const struct dev_io *p)
{
	return f->direct && p->op != CLIO_OP_FLUSH &&
	       ((((p->off | p->len) & (f->align - 1)) != 0 ||
		 !iov_aligned(p->iov, p->iovcnt, f->align)));
}

/* Read an aligned stretch of an O_DIRECT file.  A short read that ends
 * off the alignment is the end of the file: reading on from there would
 * fail (EINVAL). */
static ssize_t
full_pread(int fd, void *buf, size_t len, off_t off, uint32_t align)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done,
				  off + (off_t)done);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		done += (size_t)r;
		if (done % align != 0)
			break;
	}
	return (ssize_t)done;
}

/* An unaligned piece on an O_DIRECT file: through an aligned bounce. */
static ssize_t
bounce_io(struct file_dev *f, struct dev_io *p)
{
	uint64_t a = p->off & ~(uint64_t)(f->align - 1);
	uint64_t b = (p->off + p->len + f->align - 1) & ~(uint64_t)(f->align - 1);
	size_t blen = (size_t)(b - a);
	void *bounce;
	ssize_t r = 0;

	if (posix_memalign(&bounce, f->align, blen) != 0)
		return -ENOMEM;
	if (p->op == CLIO_OP_READ || a != p->off || b != p->off + p->len) {
		memset(bounce, 0, blen);
		r = full_pread(f->fd, bounce, blen, (off_t)a, f->align);
		if (r < 0)
			goto out;
	}
	if (p->op == CLIO_OP_READ) {
		size_t have = (size_t)r > p->off - a ? (size_t)r - (p->off - a) : 0;
		have = MIN(have, p->len);
		buf_to_iov(p->iov, p->iovcnt, 0, (char *)bounce + (p->off - a), have);
		r = (ssize_t)have;
	} else {
		struct stat st;
		off_t old_size = fstat(f->fd, &st) == 0 ? st.st_size : 0;
		size_t done = 0;

		iov_to_buf(p->iov, p->iovcnt, 0, (char *)bounce + (p->off - a), p->len);
		while (done < blen) {
			r = pwrite(f->fd, (char *)bounce + done, blen - done,
				   (off_t)(a + done));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				r = r < 0 ? -errno : -EIO;
				goto out;
			}
			done += (size_t)r;
		}
		/* the padding past the data must not grow the file */
		if (f->regular && (off_t)b > old_size &&
		    (off_t)(p->off + p->len) < (off_t)b &&
		    ftruncate(f->fd, MAX(old_size, (off_t)(p->off + p->len))) < 0) {
			r = -errno;
			goto out;
		}
		r = (ssize_t)p->len;
	}
out:
	free(bounce);
	return r;
}

/* The threads engine, and any piece the uring engine hands back. */
static ssize_t
file_io(clio_dev *d, struct dev_io *p)
{
	struct file_dev *f = d->priv;
	bool bounce, gate = f->direct && p->op == CLIO_OP_WRITE;
	ssize_t r;

	if (p->op == CLIO_OP_FLUSH)
		return fdatasync(f->fd) < 0 ? -errno : 0;
	bounce = needs_bounce(f, p);
	/* two pieces that share an aligned unit must not both rewrite it */
	if (gate && bounce)
		gate_excl_enter(&f->gate);
	else if (gate)
		gate_shared_enter(&f->gate);
	if (bounce) {
		r = bounce_io(f, p);
	} else {
		do {
			if (p->op == CLIO_OP_READ)
				r = preadv(f->fd, p->iov, p->iovcnt, (off_t)p->off);
			else
				r = pwritev(f->fd, p->iov, p->iovcnt, (off_t)p->off);
		} while (r < 0 && errno == EINTR);
		if (r < 0)
			r = -errno;
	}
	if (gate && bounce)
		gate_excl_leave(&f->gate);
	else if (gate)
		gate_shared_leave(&f->gate);
	return r;
}

/* The uring engine: aligned pieces and flushes to the ring. */
static void
file_submit(clio_dev *d, struct dev_io *p)
{
	struct file_dev *f = d->priv;
	bool gate = f->direct && p->op == CLIO_OP_WRITE;

	if (needs_bounce(f, p)) {
		dev_piece_defer(p);
		return;
	}
	if (gate)
		gate_shared_enter(&f->gate);
	if (!uring_ring_start(f->ring, p)) {
		if (gate)
			gate_shared_leave(&f->gate);
		dev_piece_defer(p);
	}
}

static void
file_ring_done(void *arg, struct dev_io *p, int res)
{
	struct file_dev *f = arg;

	if (f->direct && p->op == CLIO_OP_WRITE)
		gate_shared_leave(&f->gate);
	dev_piece_done(p, res);
}

static int
file_resize(clio_dev *d, uint64_t size)
{
	struct file_dev *f = d->priv;
	int r;

	if (f->direct)
		gate_excl_enter(&f->gate);
	r = ftruncate(f->fd, (off_t)size) < 0 ? -errno : 0;
	if (f->direct)
		gate_excl_leave(&f->gate);
	return r;
}

static void
file_free(struct file_dev *f)
{
	if (f->ring != NULL)
		uring_ring_free(f->ring);
	close(f->fd);
	pthread_mutex_destroy(&f->gate.m);
	pthread_cond_destroy(&f->gate.cv);
	free(f->path);
	free(f);
}

static void
file_close(clio_dev *d)
{
	file_free(d->priv);
	dev_free(d);
}

static void
file_params(clio_dev *d, struct dev_params *o)
{
	struct file_dev *f = d->priv;

	dev_param(o, "path", "%s", f->path);
	dev_param(o, "kind", "%s", f->regular ? "regular file" : "block device");
	dev_param(o, "direct", "%d", f->direct);
	if (f->direct)
		dev_param(o, "align", "%u", f->align);
	dev_param(o, "engine", "%s", f->ring != NULL ? "uring" : "threads");
	dev_param(o, "qd", "%u", d->queue_depth);
	dev_param(o, "maxio", "%u", d->maxio);
	if (f->ring != NULL)
		dev_param(o, "ring_sqes", "%llu",
			  (unsigned long long)uring_ring_submitted(f->ring));
}

/* clio_dev_version: the file's size, times and inode (fstat). */
static int
file_version(clio_dev *d, struct clio_validator *v)
{
	struct file_dev *fd = d->priv;
	struct stat st;

	if (fstat(fd->fd, &st) < 0)
		return -errno;
	validator_of_stat(&st, v);
	if (!fd->regular) /* fstat says 0 */
		v->size = clio_dev_size(d);
	return 0;
}

/* Rule 9: a hole punched in a regular file reads as zeros, so it is
 * both the trim and the zeroing.  On a block device the trim is
 * BLKDISCARD and the zeroing a punched hole (the kernel's zeroing without
 * writing zeros, EOPNOTSUPP where the device has none). */
static int
file_discard(clio_dev *d, uint64_t off, uint64_t len, bool zero)
{
	struct file_dev *fd = d->priv;
	uint64_t range[2] = { off, len };
	int r;

	if (!fd->regular && !fd->blockdev)
		return -ENOTSUP;
	if (len == 0)
		return 0;
	if (fd->blockdev && !zero)
		r = ioctl(fd->fd, BLKDISCARD, range);
	else
		r = fallocate(fd->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)off, (off_t)len);
	if (r < 0)
		return errno == EOPNOTSUPP ? -ENOTSUP : -errno;
	return 0;
}

#define FILE_OPS(name_, submit_, resize_)                                    \
	static const struct dev_ops name_ = {                                \
		.scheme = "file",                                            \
		.io = file_io,                                               \
		.submit = submit_,                                           \
		.resize = resize_,                                           \
		.close = file_close,                                         \
		.params = file_params,                                       \
		.version = file_version,                                     \
		.discard = file_discard,                                     \
	}
FILE_OPS(file_threads_ops, NULL, file_resize);
FILE_OPS(file_uring_ops, file_submit, file_resize);
FILE_OPS(blockdev_threads_ops, NULL, NULL);
FILE_OPS(blockdev_uring_ops, file_submit, NULL);

enum file_engine { ENGINE_DEFAULT, ENGINE_URING, ENGINE_THREADS };

struct file_args {
	int direct;
	uint64_t qd, maxio;
	enum file_engine engine;
	char *err;
	size_t errlen;
};

static int
file_opt(void *arg, const char *k, const char *v)
{
	struct file_args *a = arg;
	uint64_t n;

	if (strcmp(k, "direct") == 0) {
		if (parse_uint(v, &n) < 0 || n > 1) {
			set_err(a->err, a->errlen, "file: bad direct '%s' (0 or 1)", v);
			return -EINVAL;
		}
		a->direct = (int)n;
	} else if (strcmp(k, "qd") == 0) {
		if (parse_uint(v, &a->qd) < 0 || a->qd < 1 || a->qd > 256) {
			set_err(a->err, a->errlen, "file: bad qd '%s' (1 to 256)", v);
			return -EINVAL;
		}
	} else if (strcmp(k, "maxio") == 0) {
		if (parse_size(v, &a->maxio) < 0 || a->maxio > UINT32_MAX ||
		    a->maxio % 4096 != 0) {
			set_err(a->err, a->errlen, "file: bad maxio '%s'", v);
			return -EINVAL;
		}
	} else if (strcmp(k, "engine") == 0) {
		if (strcmp(v, "uring") == 0)
			a->engine = ENGINE_URING;
		else if (strcmp(v, "threads") == 0)
			a->engine = ENGINE_THREADS;
		else {
			set_err(a->err, a->errlen,
				"file: bad engine '%s' (uring or threads)", v);
			return -EINVAL;
		}
	} else {
		set_err(a->err, a->errlen, "file: unknown parameter '%s'", k);
		return -EINVAL;
	}
	return 0;
}

/* The engine of a new device: a ring in f->ring, or the threads engine
 * with the reason in d->engine; -errno if engine=uring cannot be had. */
static int
choose_engine(clio_dev *d, struct file_dev *f, const struct file_args *a,
	      int flags)
{
	const char *no = getenv("CLIO_NO_URING");
	char why[80];
	int r;

	if (a->engine == ENGINE_THREADS) {
		snprintf(d->engine, sizeof(d->engine), "threads (engine=threads)");
		return 0;
	}
	if (flags & DEV_OPEN_INNER) {
		if (a->engine == ENGINE_URING) {
			set_err(a->err, a->errlen, "file: engine 'uring' "
				"unavailable inside a wrapper (it runs its inner "
				"device synchronously)");
			return -ENOTSUP;
		}
		snprintf(d->engine, sizeof(d->engine),
			 "threads (inside a wrapper, run synchronously)");
		return 0;
	}
	if (no != NULL && *no != '\0' && strcmp(no, "0") != 0) {
		if (a->engine == ENGINE_URING) {
			set_err(a->err, a->errlen, "file: engine 'uring' "
				"unavailable (CLIO_NO_URING=%s)", no);
			return -ENOTSUP;
		}
		snprintf(d->engine, sizeof(d->engine),
			 "threads (CLIO_NO_URING=%.40s)", no);
		return 0;
	}
	r = uring_ring_new(f->fd, (unsigned)d->queue_depth, file_ring_done, f,
			   &f->ring, why, sizeof(why));
	if (r < 0) {
		if (a->engine == ENGINE_URING) {
			set_err(a->err, a->errlen,
				"file: engine 'uring' unavailable (%s)", why);
			return r;
		}
		snprintf(d->engine, sizeof(d->engine), "threads (%s)", why);
		return 0;
	}
	snprintf(d->engine, sizeof(d->engine), "uring");
	return 0;
}

/* The largest file the file system takes for this file (its s_maxbytes,
 * which on ext4 depends on the file's block mapping): lseek(2) refuses
 * offsets past it, so bisect between 2 GiB, which all take, and
 * INT64_MAX.  Writes and resizes past it fail with EFBIG when made, not
 * when written back. */
static uint64_t
fs_max_size(int fd)
{
	uint64_t ok = 1ull << 31, bad = (uint64_t)INT64_MAX + 1;
	off_t pos = lseek(fd, 0, SEEK_CUR);

	while (bad - ok > 1) {
		uint64_t mid = ok + (bad - ok) / 2;
		if (lseek(fd, (off_t)mid, SEEK_SET) >= 0)
			ok = mid;
		else
			bad = mid;
	}
	if (pos >= 0)
		(void)lseek(fd, pos, SEEK_SET);
	return ok;
}

int
dev_file_open(const char *path, const char *query, int flags, clio_dev **dp,
	      char *err, size_t errlen)
{
	struct file_args a = { 0, dev_default_qd, 0, ENGINE_DEFAULT, err, errlen };
	struct file_dev *f;
	struct stat st;
	clio_dev *d;
	char *copy, *name;
	int oflags, fd, r;

	copy = strdup(query);
	if (copy == NULL)
		return -ENOMEM;
	r = parse_kv_list(copy, '&', file_opt, &a, "file", err, errlen);
	free(copy);
	if (r < 0)
		return r;

	oflags = (flags & CLIO_DEV_RDONLY) ? O_RDONLY : O_RDWR;
	if (flags & CLIO_DEV_CREATE)
		oflags |= O_CREAT;
	if (flags & CLIO_DEV_EXCL)
		oflags |= O_EXCL;
	if (a.direct)
		oflags |= O_DIRECT;
	/* O_NONBLOCK until the type is known: a FIFO opened read-only
	 * would wait for a writer; O_NOCTTY: a terminal is no device */
	fd = open(path, oflags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0644);
	if (fd < 0) {
		r = -errno;
		set_err(err, errlen, "%s: %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) { /* as O_RDWR finds it */
		set_err(err, errlen, "%s: %s", path, strerror(EISDIR));
		close(fd);
		return -EISDIR;
	}
	if (fstat(fd, &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))) {
		set_err(err, errlen, "%s: not a regular file or block device", path);
		close(fd);
		return -EINVAL;
	}
	/* io_uring would fail the requests of a nonblocking file (EAGAIN) */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		r = -errno;
		set_err(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return r;
	}
	f = calloc(1, sizeof(*f));
	name = malloc(strlen(path) + strlen(query) + 8);
	if (f == NULL || name == NULL || (f->path = strdup(path)) == NULL) {
		if (f != NULL)
			free(f->path);
		free(f);
		free(name);
		close(fd);
		return -ENOMEM;
	}
	if (*query)
		sprintf(name, "file:%s?%s", path, query);
	else
		strcpy(name, path);
	f->fd = fd;
	f->direct = a.direct;
	f->regular = S_ISREG(st.st_mode);
	f->blockdev = S_ISBLK(st.st_mode);
	f->align = 4096;
	pthread_mutex_init(&f->gate.m, NULL);
	pthread_cond_init(&f->gate.cv, NULL);
	r = dev_alloc(&file_threads_ops, name, &d);
	free(name);
	if (r < 0) {
		file_free(f);
		return r;
	}
	d->priv = f;
	d->blocking = true;
	d->queue_depth = (uint32_t)a.qd;
	d->maxio = (uint32_t)a.maxio;
	r = choose_engine(d, f, &a, flags);
	if (r < 0) {
		file_free(f);
		dev_free(d);
		return r;
	}
	if (f->ring != NULL)
		d->ops = f->regular ? &file_uring_ops : &blockdev_uring_ops;
	else
		d->ops = f->regular ? &file_threads_ops : &blockdev_threads_ops;
	if (f->regular) {
		d->size = (uint64_t)st.st_size;
		d->max_size = fs_max_size(fd);
	} else {
		uint64_t bytes = 0;
		int ssz = 512;
		if (ioctl(fd, BLKGETSIZE64, &bytes) == 0)
			d->size = bytes;
		if (ioctl(fd, BLKSSZGET, &ssz) == 0 && ssz > 0)
			d->sector = (uint32_t)ssz;
	}
	*dp = d;
	return 0;
}
