/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * callback.c - the device a program provides through clio_dev_open_callbacks:
 * each piece becomes one call of the program's pread, pwrite or flush.
 *
 * Invariants:
 *  1. io() is synchronous and blocking (rule 2a): it runs on the worker
 *     pool, never more than queue_depth pieces at once.
 *  2. A piece of one iovec, or of several that lie end to end in memory,
 *     goes to the callback in place; any other piece of several goes
 *     through a bounce buffer, so that one piece is always one call (a
 *     cluster of buffers reaches the program as one write).
 *  3. A callback's 0 means the whole piece moved; -1 to -4095 is the
 *     -errno returned; anything else is no contract and reads as -EIO.
 *  4. pwrite NULL: the device is read-only; flush NULL: a flush is 0.
 *  5. The program's close runs exactly once, before the device is freed,
 *     also when the open fails past the checks of its arguments.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct callback_dev {
	struct clio_dev_callbacks cb;
	void *arg;
};

/* A callback's 0 is len bytes moved; what is neither 0 nor an errno
 * (-1 to -4095) is -EIO, so that no caller negates INT_MIN. */
static ssize_t
callback_status(int r, size_t len)
{
	if (r < 0 && r >= -4095)
		return r;
	return r == 0 ? (ssize_t)len : -EIO;
}

static ssize_t
callback_io(clio_dev *d, struct dev_io *p)
{
	struct callback_dev *c = d->priv;
	char *bounce, *flat;
	int r;

	if (p->op == CLIO_OP_FLUSH)
		return c->cb.flush != NULL ? callback_status(c->cb.flush(c->arg), 0) : 0;
	if (p->op == CLIO_OP_WRITE && c->cb.pwrite == NULL)
		return -EROFS;
	if ((flat = iov_flat(p->iov, p->iovcnt)) != NULL) {
		r = p->op == CLIO_OP_READ
			    ? c->cb.pread(c->arg, flat, p->len, p->off)
			    : c->cb.pwrite(c->arg, flat, p->len, p->off);
		return callback_status(r, p->len);
	}
	bounce = malloc(p->len ? p->len : 1);
	if (bounce == NULL)
		return -ENOMEM;
	if (p->op == CLIO_OP_READ) {
		r = c->cb.pread(c->arg, bounce, p->len, p->off);
		if (r == 0)
			buf_to_iov(p->iov, p->iovcnt, 0, bounce, p->len);
	} else {
		iov_to_buf(p->iov, p->iovcnt, 0, bounce, p->len);
		r = c->cb.pwrite(c->arg, bounce, p->len, p->off);
	}
	free(bounce);
	return callback_status(r, p->len);
}

static void
callback_close(clio_dev *d)
{
	struct callback_dev *c = d->priv;

	if (c->cb.close != NULL)
		c->cb.close(c->arg);
	free(c);
	dev_free(d);
}

static void
callback_params(clio_dev *d, struct dev_params *o)
{
	dev_param(o, "size", "%llu", (unsigned long long)clio_dev_size(d));
	dev_param(o, "sector", "%u", d->sector);
	dev_param(o, "maxio", "%u", d->maxio);
	dev_param(o, "qd", "%u", d->queue_depth);
}

static const struct dev_ops callback_ops = {
	.scheme = "callback",
	.io = callback_io,
	.close = callback_close,
	.params = callback_params,
};

int
dev_callback_open(const char *name, uint64_t size, uint32_t sector,
		  uint32_t maxio, const struct clio_dev_callbacks *cb,
		  void *arg, uint32_t queue_depth, clio_dev **dp)
{
	struct callback_dev *c;
	clio_dev *d;
	int r;

	/* maxio a multiple of the sector, the default 512 too: every
	 * piece of a split starts aligned */
	if (cb == NULL || cb->pread == NULL || dp == NULL ||
	    (sector != 0 && (sector & (sector - 1)) != 0) ||
	    (maxio != 0 && maxio % (sector != 0 ? sector : 512) != 0))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		if (cb->close != NULL)
			cb->close(arg);
		return -ENOMEM;
	}
	c->cb = *cb;
	c->arg = arg;
	r = dev_alloc(&callback_ops, name != NULL ? name : "callback", &d);
	if (r < 0) {
		free(c);
		if (cb->close != NULL)
			cb->close(arg);
		return r;
	}
	d->priv = c;
	d->size = size;
	if (sector != 0)
		d->sector = sector;
	d->aligned_only = d->sector > 512;
	d->maxio = maxio;
	d->queue_depth = queue_depth != 0 ? MIN(queue_depth, 256u) : dev_default_qd;
	d->blocking = true;
	d->readonly = cb->pwrite == NULL;
	snprintf(d->engine, sizeof(d->engine), "threads (callbacks)");
	*dp = d;
	return 0;
}
