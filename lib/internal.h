/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * internal.h - what the parts of libclio share and users do not see.
 *
 * The device object and the backend contract:
 *  1. A backend implements io() for one contiguous piece at a time: the
 *     device layer has already split the request at maxio and checked it
 *     lies inside the device (or the backend is resizable).
 *  2. io() is synchronous.  It returns the bytes moved (a short count is
 *     retried by the device layer for the rest; 0 on a read means EOF and
 *     the rest reads as zeros) or -errno.
 *  3. On a virtual-clock device io() reads p->t_submit and sets p->t_start
 *     (when the device began to serve it) and p->t_done.  Real-clock
 *     backends leave them alone; the device layer measures.
 *  4. A backend whose io() may block sets `blocking`; the device layer then
 *     runs its requests on `queue_depth` worker threads.  Otherwise io()
 *     runs inline in the submitting thread.
 *  5. close() frees the backend's state and then the device, with
 *     dev_free().  Read-only opening is the device layer's (d->readonly).
 *  6. Pieces of one split request share t_submit: they were queued
 *     together.  clio_dev_submit() never moves the virtual clock; the
 *     synchronous calls advance it to the completion they waited for.
 */
#ifndef CLIO_INTERNAL_H
#define CLIO_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "clio.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define IS_POW2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)

/* One piece of a request, as a backend sees it. */
struct dev_io {
	enum clio_op op;
	uint64_t off;
	const struct iovec *iov;
	int iovcnt;
	size_t len;
	double t_submit, t_start, t_done; /* virtual clock only */
};

struct dev_ops {
	const char *scheme;
	ssize_t (*io)(clio_dev *d, struct dev_io *p);
	int (*resize)(clio_dev *d, uint64_t size); /* NULL: fixed size */
	void (*close)(clio_dev *d);
};

struct dev_stat_acc; /* dev.c */

struct clio_dev {
	const struct dev_ops *ops;
	void *priv;		/* the backend's state */
	char *name;		/* the string it was opened from */
	uint64_t size;
	uint32_t sector;	/* logical sector size: direct transfers align to it */
	uint32_t maxio;		/* largest piece a backend takes; 0 = no limit */
	uint32_t queue_depth;	/* worker threads for a blocking backend */
	bool blocking;
	bool is_virtual;
	bool readonly;

	/* dev.c: statistics and the worker pool */
	pthread_mutex_t lock;
	struct dev_stat_acc *front, *back;
	int inflight;
	double busy_since;
	struct dev_work *q_head, *q_tail;
	pthread_cond_t q_cv;
	pthread_t *workers;
	int nworkers;
	bool stopping;
};

/* dev.c */
extern uint32_t dev_default_qd;
int dev_alloc(const struct dev_ops *ops, const char *name, clio_dev **dp);
void dev_free(clio_dev *d);
void dev_account_front(clio_dev *d, enum clio_op op, size_t len, double lat);
double dev_now(const clio_dev *d);

/* Open a backend from its string without starting worker threads (for
 * wrappers such as fault, which call the inner backend's io() directly). */
int dev_open_spec(const char *spec, int flags, clio_dev **dp, char *err,
		  size_t errlen);

/* Backend constructors.  opts is the part after the scheme. */
int dev_file_open(const char *path, const char *query, int flags,
		  clio_dev **dp, char *err, size_t errlen);
int dev_mem_open(const char *opts, int flags, clio_dev **dp, char *err,
		 size_t errlen);
int dev_sim_open(const char *opts, int flags, clio_dev **dp, char *err,
		 size_t errlen);
int dev_fault_open(const char *opts, const char *inner, int flags,
		   clio_dev **dp, char *err, size_t errlen);

/* vclock.c: one virtual clock for the process. */
double vclock_now(void);
void vclock_advance_to(double t);
void vclock_add(double dt);

/* parse.c */
int parse_size(const char *s, uint64_t *out);
int parse_uint(const char *s, uint64_t *out);
int parse_double(const char *s, double *out);
int parse_errno(const char *s, int *out); /* "EIO", "5", "ENOSPC" ... */
const char *errno_name(int e);
/* Split "k=v,k=v" in place: calls fn for each pair; stops at the first
 * nonzero return.  A key without '=' gets value "". */
int parse_kv_list(char *s, char sep,
		  int (*fn)(void *arg, const char *k, const char *v), void *arg);
void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* iovec helpers (dev.c) */
size_t iov_length(const struct iovec *iov, int iovcnt);
/* Copy the part [skip, skip+len) of src into dst (at most dstmax entries);
 * returns the entry count. */
int iov_slice(const struct iovec *src, int srccnt, size_t skip, size_t len,
	      struct iovec *dst, int dstmax);
void iov_memset(const struct iovec *iov, int iovcnt, size_t skip, int c,
		size_t len);
void iov_to_buf(const struct iovec *iov, int iovcnt, size_t skip, void *buf,
		size_t len);
void buf_to_iov(const struct iovec *iov, int iovcnt, size_t skip,
		const void *buf, size_t len);

double now_monotonic(void); /* CLOCK_MONOTONIC, in seconds */

#endif
