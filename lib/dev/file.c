/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * file.c - the file backend: `/path` or `file:/path[?direct=0|1][&qd=N]
 * [&maxio=N]`, a regular file or a block device.
 *
 * preadv/pwritev at an offset, fdatasync for flush.  With direct=1 the
 * file is opened O_DIRECT and every piece whose memory, offset or length
 * is not aligned goes through an aligned bounce buffer (a write of
 * unaligned edges reads them first; it runs alone among the writes, since
 * it rewrites the rest of its edge units and may pad the file and cut it
 * back).  A regular file is resizable
 * (ftruncate); a block device has the size the kernel reports.  Requests
 * run on the device layer's worker threads (`blocking`).
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

struct file_dev {
	int fd;
	bool direct;
	uint32_t align; /* O_DIRECT alignment of memory, offset and length */
	bool regular;
	pthread_rwlock_t wlock;	/* direct: writes share it, a bounce write
				   and a resize take it alone */
};

static bool
iov_aligned(const struct iovec *iov, int iovcnt, uint32_t align)
{
	int i;

	for (i = 0; i < iovcnt; i++)
		if (((uintptr_t)iov[i].iov_base | iov[i].iov_len) & (align - 1))
			return false;
	return true;
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

static ssize_t
file_io(clio_dev *d, struct dev_io *p)
{
	struct file_dev *f = d->priv;
	bool bounce, lock = f->direct && p->op == CLIO_OP_WRITE;
	ssize_t r;

	if (p->op == CLIO_OP_FLUSH)
		return fdatasync(f->fd) < 0 ? -errno : 0;
	bounce = f->direct && (((p->off | p->len) & (f->align - 1)) != 0 ||
			       !iov_aligned(p->iov, p->iovcnt, f->align));
	/* two pieces that share an aligned unit must not both rewrite it */
	if (lock && bounce)
		pthread_rwlock_wrlock(&f->wlock);
	else if (lock)
		pthread_rwlock_rdlock(&f->wlock);
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
	if (lock)
		pthread_rwlock_unlock(&f->wlock);
	return r;
}

static int
file_resize(clio_dev *d, uint64_t size)
{
	struct file_dev *f = d->priv;
	int r;

	if (f->direct)
		pthread_rwlock_wrlock(&f->wlock);
	r = ftruncate(f->fd, (off_t)size) < 0 ? -errno : 0;
	if (f->direct)
		pthread_rwlock_unlock(&f->wlock);
	return r;
}

static void
file_close(clio_dev *d)
{
	struct file_dev *f = d->priv;

	close(f->fd);
	pthread_rwlock_destroy(&f->wlock);
	free(f);
	dev_free(d);
}

static const struct dev_ops file_ops = {
	.scheme = "file",
	.io = file_io,
	.resize = file_resize,
	.close = file_close,
};

static const struct dev_ops blockdev_ops = {
	.scheme = "file",
	.io = file_io,
	.resize = NULL,
	.close = file_close,
};

struct file_args {
	int direct;
	uint64_t qd, maxio;
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
	} else {
		set_err(a->err, a->errlen, "file: unknown parameter '%s'", k);
		return -EINVAL;
	}
	return 0;
}

int
dev_file_open(const char *path, const char *query, int flags, clio_dev **dp,
	      char *err, size_t errlen)
{
	struct file_args a = { 0, dev_default_qd, 0, err, errlen };
	struct file_dev *f;
	struct stat st;
	clio_dev *d;
	char *copy, *name;
	int oflags, fd, r;

	copy = strdup(query);
	if (copy == NULL)
		return -ENOMEM;
	r = parse_kv_list(copy, '&', file_opt, &a);
	free(copy);
	if (r < 0)
		return r;

	oflags = (flags & CLIO_DEV_RDONLY) ? O_RDONLY : O_RDWR;
	if (flags & CLIO_DEV_CREATE)
		oflags |= O_CREAT;
	if (a.direct)
		oflags |= O_DIRECT;
	fd = open(path, oflags | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = -errno;
		set_err(err, errlen, "%s: %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))) {
		set_err(err, errlen, "%s: not a regular file or block device", path);
		close(fd);
		return -EINVAL;
	}
	f = calloc(1, sizeof(*f));
	name = malloc(strlen(path) + strlen(query) + 8);
	if (f == NULL || name == NULL) {
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
	f->align = 4096;
	pthread_rwlock_init(&f->wlock, NULL);
	r = dev_alloc(f->regular ? &file_ops : &blockdev_ops, name, &d);
	free(name);
	if (r < 0) {
		close(fd);
		free(f);
		return r;
	}
	d->priv = f;
	d->blocking = true;
	d->queue_depth = (uint32_t)a.qd;
	d->maxio = (uint32_t)a.maxio;
	if (f->regular) {
		d->size = (uint64_t)st.st_size;
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
