/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mem.c - the memory backend: `mem:size=N`.
 *
 * Data lives in 64 KiB chunks allocated on first write; a chunk never
 * written reads as zeros, and an all-zero write to it allocates nothing.
 * The device is resizable: shrinking frees whole chunks past the end and
 * zeroes the tail of the last one, so that growing again reads zeros.
 * One mutex guards the chunk table and the data.  The size is at most
 * MEM_MAX_SIZE (1 TiB), so that the table stays small.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHUNK_SHIFT 16
#define CHUNK_SIZE ((size_t)1 << CHUNK_SHIFT)
/* The largest size: its chunk table is 128 MiB; a write or a resize
 * past it is -EFBIG. */
#define MEM_MAX_SIZE (1ull << 40)

struct mem_dev {
	pthread_mutex_t lock;
	unsigned char **chunks;
	size_t nchunks;
};

static int
is_zero(const unsigned char *p, size_t len)
{
	return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

static int
grow_table(struct mem_dev *m, uint64_t size)
{
	size_t want = (size_t)DIV_ROUND_UP(size, CHUNK_SIZE);
	unsigned char **t;

	if (want <= m->nchunks)
		return 0;
	t = realloc(m->chunks, want * sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	memset(t + m->nchunks, 0, (want - m->nchunks) * sizeof(*t));
	m->chunks = t;
	m->nchunks = want;
	return 0;
}

static ssize_t
mem_io(clio_dev *d, struct dev_io *p)
{
	struct mem_dev *m = d->priv;
	size_t done = 0;
	int r = 0;

	if (p->op == CLIO_OP_FLUSH)
		return 0;
	if (p->op == CLIO_OP_WRITE && p->off + p->len > MEM_MAX_SIZE)
		return -EFBIG;
	pthread_mutex_lock(&m->lock);
	if (p->op == CLIO_OP_WRITE)
		r = grow_table(m, p->off + p->len);
	while (r == 0 && done < p->len) {
		uint64_t off = p->off + done;
		size_t ci = (size_t)(off >> CHUNK_SHIFT);
		size_t co = (size_t)(off & (CHUNK_SIZE - 1));
		size_t n = MIN(CHUNK_SIZE - co, p->len - done);

		if (p->op == CLIO_OP_READ) {
			if (ci < m->nchunks && m->chunks[ci] != NULL)
				buf_to_iov(p->iov, p->iovcnt, done,
					   m->chunks[ci] + co, n);
			else
				iov_memset(p->iov, p->iovcnt, done, 0, n);
		} else {
			if (m->chunks[ci] == NULL) {
				unsigned char tmp[4096];
				size_t k, all_zero = 1;
				for (k = 0; k < n && all_zero; k += sizeof(tmp)) {
					size_t l = MIN(sizeof(tmp), n - k);
					iov_to_buf(p->iov, p->iovcnt, done + k, tmp, l);
					all_zero = is_zero(tmp, l);
				}
				if (all_zero) {
					done += n;
					continue;
				}
				m->chunks[ci] = calloc(1, CHUNK_SIZE);
				if (m->chunks[ci] == NULL) {
					r = -ENOMEM;
					break;
				}
			}
			iov_to_buf(p->iov, p->iovcnt, done, m->chunks[ci] + co, n);
		}
		done += n;
	}
	pthread_mutex_unlock(&m->lock);
	return r < 0 ? r : (ssize_t)done;
}

static int
mem_resize(clio_dev *d, uint64_t size)
{
	struct mem_dev *m = d->priv;
	size_t keep = (size_t)DIV_ROUND_UP(size, CHUNK_SIZE), i;
	int r;

	if (size > MEM_MAX_SIZE)
		return -EFBIG;
	pthread_mutex_lock(&m->lock);
	for (i = keep; i < m->nchunks; i++) {
		free(m->chunks[i]);
		m->chunks[i] = NULL;
	}
	if (keep > 0 && keep <= m->nchunks && m->chunks[keep - 1] != NULL &&
	    (size & (CHUNK_SIZE - 1)) != 0) {
		size_t co = (size_t)(size & (CHUNK_SIZE - 1));
		memset(m->chunks[keep - 1] + co, 0, CHUNK_SIZE - co);
	}
	r = grow_table(m, size);
	pthread_mutex_unlock(&m->lock);
	return r;
}

/* Rule 9: trimmed and zeroed alike; whole chunks are given back. */
static int
mem_discard(clio_dev *d, uint64_t off, uint64_t len, bool zero)
{
	struct mem_dev *m = d->priv;
	uint64_t end = off + len;

	(void)zero;
	pthread_mutex_lock(&m->lock);
	while (off < end) {
		size_t ci = (size_t)(off >> CHUNK_SHIFT);
		size_t co = (size_t)(off & (CHUNK_SIZE - 1));
		size_t n = (size_t)MIN((uint64_t)(CHUNK_SIZE - co), end - off);

		if (ci < m->nchunks && m->chunks[ci] != NULL) {
			if (n == CHUNK_SIZE) {
				free(m->chunks[ci]);
				m->chunks[ci] = NULL;
			} else {
				memset(m->chunks[ci] + co, 0, n);
			}
		}
		off += n;
	}
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static void
mem_close(clio_dev *d)
{
	struct mem_dev *m = d->priv;
	size_t i;

	for (i = 0; i < m->nchunks; i++)
		free(m->chunks[i]);
	free(m->chunks);
	pthread_mutex_destroy(&m->lock);
	free(m);
	dev_free(d);
}

static void
mem_params(clio_dev *d, struct dev_params *o)
{
	struct mem_dev *m = d->priv;
	size_t i, n = 0;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->nchunks; i++)
		n += m->chunks[i] != NULL;
	pthread_mutex_unlock(&m->lock);
	dev_param(o, "size", "%llu", (unsigned long long)clio_dev_size(d));
	dev_param(o, "maxio", "%u", d->maxio);
	dev_param(o, "allocated", "%llu", (unsigned long long)(n * CHUNK_SIZE));
}

static const struct dev_ops mem_ops = {
	.scheme = "mem",
	.io = mem_io,
	.resize = mem_resize,
	.close = mem_close,
	.params = mem_params,
	.discard = mem_discard,
};

struct mem_args {
	uint64_t size;
	uint64_t maxio;
	char *err;
	size_t errlen;
};

static int
mem_opt(void *arg, const char *k, const char *v)
{
	struct mem_args *a = arg;

	if (strcmp(k, "size") == 0) {
		if (parse_size(v, &a->size) < 0 || a->size > MEM_MAX_SIZE) {
			set_err(a->err, a->errlen, "mem: bad size '%s' (at most 1T)", v);
			return -EINVAL;
		}
	} else if (strcmp(k, "maxio") == 0) {
		if (parse_size(v, &a->maxio) < 0 || a->maxio > UINT32_MAX ||
		    (a->maxio % 512) != 0) {
			set_err(a->err, a->errlen, "mem: bad maxio '%s'", v);
			return -EINVAL;
		}
	} else {
		set_err(a->err, a->errlen, "mem: unknown parameter '%s'", k);
		return -EINVAL;
	}
	return 0;
}

int
dev_mem_open(const char *opts, int flags, clio_dev **dp, char *err,
	     size_t errlen)
{
	struct mem_args a = { 0, 0, err, errlen };
	struct mem_dev *m;
	clio_dev *d;
	char *copy = strdup(opts), *name;
	int r;

	(void)flags;
	if (copy == NULL)
		return -ENOMEM;
	r = parse_kv_list(copy, ',', mem_opt, &a, "mem", err, errlen);
	free(copy);
	if (r < 0)
		return r;
	m = calloc(1, sizeof(*m));
	name = malloc(strlen(opts) + 5);
	if (m == NULL || name == NULL) {
		free(m);
		free(name);
		return -ENOMEM;
	}
	strcpy(name, "mem:");
	strcat(name, opts);
	pthread_mutex_init(&m->lock, NULL);
	r = dev_alloc(&mem_ops, name, &d);
	free(name);
	if (r == 0 && (r = grow_table(m, a.size)) < 0)
		dev_free(d);
	if (r < 0) {
		free(m->chunks);
		pthread_mutex_destroy(&m->lock);
		free(m);
		return r;
	}
	d->priv = m;
	d->size = a.size;
	d->max_size = MEM_MAX_SIZE;
	d->maxio = (uint32_t)a.maxio;
	*dp = d;
	return 0;
}
