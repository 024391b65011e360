/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nfs.c - the NFSv3 client backend: `nfs://HOST/EXPORT/PATH`, one regular
 * file of an export, through libnfs.  libnfs's URL keys pass through
 * (`uid=`, `gid=`, `mountport=`, ...; clio's `port=` is libnfs's
 * `nfsport=`); clio's own are taken out first: `qd=N` (RPCs in flight,
 * default 16, at most 128), `keep=SIZE` (the uncommitted data kept for a
 * resend, default 64M) and `timeo=S` (seconds before an RPC fails,
 * default 30; libnfs counts in whole seconds).
 *
 * The device: a piece is one READ or one WRITE RPC, so maxio is
 * min(rtmax, wtmax) of the server's FSINFO; the size is the file's
 * (GETATTR at open), and the device is resizable: a write past the end
 * grows the file, resize() is SETATTR of the size.  Writes are UNSTABLE; a
 * flush is COMMIT.  libnfs's own readahead and page cache stay off (its
 * defaults; every transfer here is a raw rpc_nfs3_*_async call anyway).
 *
 * Durability (the write verifier).  An UNSTABLE write the server
 * acknowledged may still be lost if the server restarts before a COMMIT;
 * the server says so by a new write verifier.  So:
 *  1. Every write acknowledged UNSTABLE since the last successful COMMIT
 *     is kept (a record: offset, length, a copy of the data, the verifier
 *     of its reply, a sequence number).  A write acknowledged FILE_SYNC
 *     is durable and not kept.  A newer record that covers an older one
 *     replaces it.
 *  2. A reply (WRITE or COMMIT) whose verifier differs from a record's
 *     marks that record stale: the server that acknowledged it is gone.
 *  3. A flush is a commit cycle: every stale record is sent again (in
 *     sequence order where they overlap, so the newest data wins), then
 *     COMMIT.  COMMIT frees the records up to the sequence number sent
 *     with it whose verifier equals COMMIT's; any other makes them stale
 *     and the cycle goes round again.  Only a cycle whose COMMIT covered
 *     every record completes the flushes that were waiting before it
 *     started.  So a flush that returns 0 leaves nothing acknowledged
 *     that is not on the server's stable storage.
 *  4. A failed COMMIT or resend fails the waiting flushes with its error
 *     and keeps every record: the next flush tries again (the data is
 *     still "dirty" here), which succeeds once the server is back.
 *  5. The kept data is bounded by keep=: a write that would pass it
 *     waits while a commit cycle runs first.
 *
 * Threading model:
 *  1. One I/O thread (nfs_main) owns the libnfs context: it alone calls
 *     libnfs after open and touches the engine state (records, cycle,
 *     counters are atomics read by params()).  It polls nfs_get_fd() for
 *     nfs_which_events() and an eventfd, and runs nfs_service(), also
 *     every 100 ms for libnfs's timeouts.
 *  2. Submitters (submit(), io(), resize()) queue a command under
 *     nd->lock and wake the thread.  libnfs calls back inside
 *     nfs_service(); the callbacks finish commands onto nd->done, which
 *     the thread completes with dev_piece_done() after nfs_service
 *     returned, holding no lock.  A synchronous command (io()) is waited
 *     for on its own condition variable; io() called on the I/O thread
 *     itself (from a completion) drives the context there until its
 *     command is finished.
 *  3. close() runs with nothing outstanding (dev.h rule 6): it stops the
 *     thread, then closes the file and the context.
 *
 * The seam between the protocol and the transport.  The engine (eng_*:
 * pieces to READ/WRITE, flushes to commit cycles, the records, the
 * verifier and the resends) sees the server only through the xp_*
 * calls, each of which starts one RPC and later calls eng_reply() with a
 * struct nfs_reply (status as -errno, count, eof, stable, verifier,
 * attributes).  A simulated server on the virtual clock can take the
 * transport's place by providing the same xp_* calls and calling
 * eng_reply() at the simulated completion time.
 */
#include <sys/time.h>
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"

#define NFS_DEFAULT_QD 16
#define NFS_MAX_QD 128
#define NFS_DEFAULT_KEEP (64u << 20)
#define NFS_DEFAULT_TIMEO 30
#define NFS_VERF 8

/* libnfs 4.0's struct nfs_fh (nfs_get_fh's result; not in its headers). */
struct libnfs_fh {
	int len;
	char *val;
};

enum cmd_kind { C_READ, C_WRITE, C_FLUSH, C_RESIZE, C_GETATTR };

struct nfs_cmd {
	enum cmd_kind kind;
	struct dev_io *p;	/* NULL for resize and getattr */
	uint64_t off, size;
	size_t len;
	char *data;		/* a write's copy: becomes its record's */
	uint64_t flush_gen;	/* a flush: the cycle generation it needs */
	ssize_t result;
	struct fattr3 attr;	/* getattr */
	struct nfs_cmd *next;
	bool sync, finished;
	pthread_mutex_t *m;
	pthread_cond_t *cv;
};

/* An acknowledged, uncommitted write (durability rule 1). */
struct nfs_wrec {
	uint64_t off, seq;
	uint32_t len;
	char *data;
	char verf[NFS_VERF];
	bool stale, sending;
	struct nfs_wrec *prev, *next; /* in sequence order */
};

enum rpc_kind { R_READ, R_WRITE, R_RESEND, R_COMMIT, R_SETATTR, R_GETATTR };

struct nfs_rpc {
	struct nfs_dev *nd;
	enum rpc_kind kind;
	struct nfs_cmd *cmd;	/* R_READ, R_WRITE, R_SETATTR, R_GETATTR */
	struct nfs_wrec *rec;	/* R_RESEND */
	uint64_t off;
	uint32_t len;
};

/* What the transport says of one RPC. */
struct nfs_reply {
	int err;		/* -errno, 0 on success */
	uint32_t count;
	bool eof, stable, has_verf, has_attr;
	char verf[NFS_VERF];
	struct fattr3 attr;
	const char *data;	/* a READ's data, valid during eng_reply() */
};

struct nfs_dev {
	clio_dev *d;
	char *spec, *url;	/* what the user said, what libnfs parses */
	char *server, *export, *path;
	struct nfs_context *nfs;
	struct nfsfh *fh;
	struct nfs_fh3 fh3;
	uint32_t qd, rtmax, wtmax;
	uint64_t keep_max;
	int timeo;

	int wake;		/* eventfd */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;	/* incoming, stop, attr */
	struct nfs_cmd *in_head, *in_tail;
	bool stop;
	struct fattr3 attr;	/* the newest attributes seen */
	bool have_attr;

	/* the I/O thread's own (threading rule 1) */
	struct nfs_cmd *done_head, *done_tail;
	unsigned inflight;	/* RPCs */
	int backoff_ms;		/* poll_once() */
	struct nfs_wrec *rec_head, *rec_tail;
	uint64_t kept, wseq;
	char verf[NFS_VERF];
	bool have_verf;
	struct nfs_cmd *blocked_head, *blocked_tail; /* rule 5 */
	struct nfs_cmd *flush_head, *flush_tail;     /* waiting flushes */
	uint64_t flush_gen;	/* the generation the next cycle serves */
	bool cycle, committing;
	uint64_t cycle_gen, commit_seq;
	unsigned resends_out;
	int cycle_err;		/* a resend of this cycle failed */

	atomic_ullong n_verf_changes, n_resends, n_commits, n_kept;
};

static _Thread_local struct nfs_dev *driving;

static void eng_reply(struct nfs_dev *nd, struct nfs_rpc *r,
		      const struct nfs_reply *rep);
static void cycle_step(struct nfs_dev *nd);
static void cycle_begin(struct nfs_dev *nd);

/* ------------------------------------------------------------ transport */

static int
rpc_status_errno(int status)
{
	switch (status) {
	case RPC_STATUS_TIMEOUT:
		return -ETIMEDOUT;
	case RPC_STATUS_CANCEL:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

static int
nfsstat_errno(int st)
{
	int e = nfsstat3_to_errno(st);

	if (e == 0)
		return -EIO;
	return e < 0 ? e : -e;
}

static void
post_op(struct nfs_reply *rep, const struct post_op_attr *a)
{
	if (a->attributes_follow) {
		rep->has_attr = true;
		rep->attr = a->post_op_attr_u.attributes;
	}
}

/* The one libnfs callback: the reply decoded into a struct nfs_reply. */
static void
xp_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct nfs_rpc *r = priv;
	struct nfs_reply rep = { 0 };

	(void)rpc;
	if (status != RPC_STATUS_SUCCESS) {
		rep.err = rpc_status_errno(status);
		eng_reply(r->nd, r, &rep);
		return;
	}
	switch (r->kind) {
	case R_READ: {
		READ3res *res = data;
		if (res->status != NFS3_OK) {
			rep.err = nfsstat_errno(res->status);
			break;
		}
		post_op(&rep, &res->READ3res_u.resok.file_attributes);
		rep.count = res->READ3res_u.resok.count;
		if (rep.count > res->READ3res_u.resok.data.data_len)
			rep.count = res->READ3res_u.resok.data.data_len;
		rep.eof = res->READ3res_u.resok.eof;
		rep.data = res->READ3res_u.resok.data.data_val;
		break;
	}
	case R_WRITE:
	case R_RESEND: {
		WRITE3res *res = data;
		if (res->status != NFS3_OK) {
			rep.err = nfsstat_errno(res->status);
			break;
		}
		post_op(&rep, &res->WRITE3res_u.resok.file_wcc.after);
		rep.count = res->WRITE3res_u.resok.count;
		rep.stable = res->WRITE3res_u.resok.committed != UNSTABLE;
		rep.has_verf = true;
		memcpy(rep.verf, res->WRITE3res_u.resok.verf, NFS_VERF);
		break;
	}
	case R_COMMIT: {
		COMMIT3res *res = data;
		if (res->status != NFS3_OK) {
			rep.err = nfsstat_errno(res->status);
			break;
		}
		post_op(&rep, &res->COMMIT3res_u.resok.file_wcc.after);
		rep.has_verf = true;
		memcpy(rep.verf, res->COMMIT3res_u.resok.verf, NFS_VERF);
		break;
	}
	case R_SETATTR: {
		SETATTR3res *res = data;
		if (res->status != NFS3_OK) {
			rep.err = nfsstat_errno(res->status);
			break;
		}
		post_op(&rep, &res->SETATTR3res_u.resok.obj_wcc.after);
		break;
	}
	case R_GETATTR: {
		GETATTR3res *res = data;
		if (res->status != NFS3_OK) {
			rep.err = nfsstat_errno(res->status);
			break;
		}
		rep.has_attr = true;
		rep.attr = res->GETATTR3res_u.resok.obj_attributes;
		break;
	}
	}
	eng_reply(r->nd, r, &rep);
}

static struct nfs_rpc *
rpc_new(struct nfs_dev *nd, enum rpc_kind kind, struct nfs_cmd *cmd)
{
	struct nfs_rpc *r = calloc(1, sizeof(*r));

	if (r != NULL) {
		r->nd = nd;
		r->kind = kind;
		r->cmd = cmd;
	}
	return r;
}

/* Each xp_* starts one RPC whose reply reaches eng_reply(); it returns 0,
 * or -errno when the RPC did not start (no reply then). */
static int
xp_start(struct nfs_dev *nd, struct nfs_rpc *r, int rc)
{
	if (rc != 0) {
		free(r);
		return -EIO;
	}
	nd->inflight++;
	return 0;
}

static int
xp_read(struct nfs_dev *nd, struct nfs_rpc *r)
{
	struct READ3args a = { .file = nd->fh3, .offset = r->off, .count = r->len };

	return xp_start(nd, r, rpc_nfs3_read_async(nfs_get_rpc_context(nd->nfs),
						   xp_cb, &a, r));
}

static int
xp_write(struct nfs_dev *nd, struct nfs_rpc *r, char *data)
{
	struct WRITE3args a = { .file = nd->fh3, .offset = r->off,
				.count = r->len, .stable = UNSTABLE };

	a.data.data_len = r->len;
	a.data.data_val = data;
	return xp_start(nd, r, rpc_nfs3_write_async(nfs_get_rpc_context(nd->nfs),
						    xp_cb, &a, r));
}

static int
xp_commit(struct nfs_dev *nd, struct nfs_rpc *r)
{
	struct COMMIT3args a = { .file = nd->fh3, .offset = 0, .count = 0 };

	return xp_start(nd, r, rpc_nfs3_commit_async(nfs_get_rpc_context(nd->nfs),
						     xp_cb, &a, r));
}

static int
xp_setattr_size(struct nfs_dev *nd, struct nfs_rpc *r, uint64_t size)
{
	struct SETATTR3args a;

	memset(&a, 0, sizeof(a));
	a.object = nd->fh3;
	a.new_attributes.size.set_it = 1;
	a.new_attributes.size.set_size3_u.size = size;
	return xp_start(nd, r, rpc_nfs3_setattr_async(nfs_get_rpc_context(nd->nfs),
						      xp_cb, &a, r));
}

static int
xp_getattr(struct nfs_dev *nd, struct nfs_rpc *r)
{
	struct GETATTR3args a = { .object = nd->fh3 };

	return xp_start(nd, r, rpc_nfs3_getattr_async(nfs_get_rpc_context(nd->nfs),
						      xp_cb, &a, r));
}

/* ------------------------------------------------------------ commands */

static void
nfs_wake(struct nfs_dev *nd)
{
	uint64_t one = 1;

	while (write(nd->wake, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/* A command's end: its waiter woken, or queued for completion. */
static void
cmd_finish(struct nfs_dev *nd, struct nfs_cmd *cmd, ssize_t result)
{
	cmd->result = result;
	if (cmd->kind == C_WRITE) {
		free(cmd->data); /* unless a record took it */
		cmd->data = NULL;
	}
	if (cmd->sync) {
		pthread_mutex_lock(cmd->m);
		cmd->finished = true;
		pthread_cond_signal(cmd->cv);
		pthread_mutex_unlock(cmd->m);
		return;
	}
	cmd->next = NULL;
	if (nd->done_tail != NULL)
		nd->done_tail->next = cmd;
	else
		nd->done_head = cmd;
	nd->done_tail = cmd;
}

static void
cmd_push(struct nfs_cmd **head, struct nfs_cmd **tail, struct nfs_cmd *cmd)
{
	cmd->next = NULL;
	if (*tail != NULL)
		(*tail)->next = cmd;
	else
		*head = cmd;
	*tail = cmd;
}

/* ------------------------------------------------------------ engine */

static void
note_attr(struct nfs_dev *nd, const struct nfs_reply *rep)
{
	if (!rep->has_attr)
		return;
	pthread_mutex_lock(&nd->lock);
	nd->attr = rep->attr;
	nd->have_attr = true;
	pthread_mutex_unlock(&nd->lock);
}

static void
rec_unlink(struct nfs_dev *nd, struct nfs_wrec *w)
{
	if (w->prev != NULL)
		w->prev->next = w->next;
	else
		nd->rec_head = w->next;
	if (w->next != NULL)
		w->next->prev = w->prev;
	else
		nd->rec_tail = w->prev;
	nd->kept -= w->len;
	atomic_store(&nd->n_kept, nd->kept);
	free(w->data);
	free(w);
}

/* Durability rule 2: a verifier seen; the records of another are stale. */
static void
verf_seen(struct nfs_dev *nd, const char *verf)
{
	struct nfs_wrec *w;

	if (nd->have_verf && memcmp(nd->verf, verf, NFS_VERF) == 0)
		return;
	if (nd->have_verf)
		atomic_fetch_add(&nd->n_verf_changes, 1);
	memcpy(nd->verf, verf, NFS_VERF);
	nd->have_verf = true;
	for (w = nd->rec_head; w != NULL; w = w->next)
		if (!w->sending && memcmp(w->verf, verf, NFS_VERF) != 0)
			w->stale = true;
}

/* Durability rule 1: keep an acknowledged UNSTABLE write. */
static void
rec_add(struct nfs_dev *nd, struct nfs_cmd *cmd, uint32_t count,
	const char *verf)
{
	struct nfs_wrec *w = calloc(1, sizeof(*w)), *o, *next;

	if (w == NULL) {
		/* cannot keep it: it is not acknowledged */
		cmd_finish(nd, cmd, -ENOMEM);
		return;
	}
	for (o = nd->rec_head; o != NULL; o = next) {
		next = o->next;
		if (!o->sending && o->off >= cmd->off &&
		    o->off + o->len <= cmd->off + count)
			rec_unlink(nd, o);
	}
	w->off = cmd->off;
	w->len = count;
	w->data = cmd->data;
	cmd->data = NULL;
	memcpy(w->verf, verf, NFS_VERF);
	w->seq = ++nd->wseq;
	w->prev = nd->rec_tail;
	if (nd->rec_tail != NULL)
		nd->rec_tail->next = w;
	else
		nd->rec_head = w;
	nd->rec_tail = w;
	nd->kept += count;
	atomic_store(&nd->n_kept, nd->kept);
	cmd_finish(nd, cmd, count);
}

static void
eng_fail_blocked(struct nfs_dev *nd, int err)
{
	struct nfs_cmd *cmd;

	while ((cmd = nd->blocked_head) != NULL) {
		nd->blocked_head = cmd->next;
		if (nd->blocked_head == NULL)
			nd->blocked_tail = NULL;
		cmd_finish(nd, cmd, err);
	}
}

static void eng_start(struct nfs_dev *nd, struct nfs_cmd *cmd);

/* Durability rule 5: writes that waited for a cycle go now (those that
 * do not fit wait for the next one). */
static void
eng_unblock(struct nfs_dev *nd)
{
	struct nfs_cmd *list = nd->blocked_head, *cmd;

	nd->blocked_head = nd->blocked_tail = NULL;
	while ((cmd = list) != NULL) {
		list = cmd->next;
		eng_start(nd, cmd);
	}
}

/* The end of a commit cycle: err 0 completes the flushes it served. */
static void
cycle_end(struct nfs_dev *nd, int err)
{
	struct nfs_cmd *cmd, *keep_head = NULL, *keep_tail = NULL;

	nd->cycle = false;
	nd->committing = false;
	nd->cycle_err = 0;
	while ((cmd = nd->flush_head) != NULL) {
		nd->flush_head = cmd->next;
		if (err != 0 || cmd->flush_gen <= nd->cycle_gen)
			cmd_finish(nd, cmd, err);
		else
			cmd_push(&keep_head, &keep_tail, cmd);
	}
	nd->flush_head = keep_head;
	nd->flush_tail = keep_tail;
	if (err != 0)
		eng_fail_blocked(nd, err);
	else
		eng_unblock(nd);
	if (nd->flush_head != NULL || nd->blocked_head != NULL)
		cycle_begin(nd);
}

/* Does an older record that is stale or being sent overlap w? */
static bool
older_overlap(struct nfs_wrec *w)
{
	struct nfs_wrec *o;

	for (o = w->prev; o != NULL; o = o->prev)
		if ((o->stale || o->sending) && o->off < w->off + w->len &&
		    w->off < o->off + o->len)
			return true;
	return false;
}

/* Durability rule 3: resend the stale records, then COMMIT. */
static void
cycle_step(struct nfs_dev *nd)
{
	struct nfs_wrec *w;
	struct nfs_rpc *r;
	bool stale = false;

	if (!nd->cycle || nd->committing)
		return;
	if (nd->cycle_err != 0) {
		if (nd->resends_out == 0)
			cycle_end(nd, nd->cycle_err);
		return;
	}
	for (w = nd->rec_head; w != NULL; w = w->next) {
		if (!w->stale)
			continue;
		stale = true;
		if (w->sending || older_overlap(w) || nd->inflight >= nd->qd)
			continue;
		if ((r = rpc_new(nd, R_RESEND, NULL)) == NULL) {
			cycle_end(nd, -ENOMEM);
			return;
		}
		r->rec = w;
		r->off = w->off;
		r->len = w->len;
		w->stale = false;
		w->sending = true;
		if (xp_write(nd, r, w->data) < 0) {
			w->stale = true;
			w->sending = false;
			cycle_end(nd, -EIO);
			return;
		}
		atomic_fetch_add(&nd->n_resends, 1);
		nd->resends_out++;
	}
	if (stale || nd->resends_out > 0)
		return;
	if (nd->rec_head == NULL) {
		/* nothing uncommitted: every acknowledged write is stable */
		nd->cycle_gen = nd->flush_gen;
		cycle_end(nd, 0);
		return;
	}
	if ((r = rpc_new(nd, R_COMMIT, NULL)) == NULL) {
		cycle_end(nd, -ENOMEM);
		return;
	}
	nd->committing = true;
	nd->commit_seq = nd->wseq;
	nd->cycle_gen = nd->flush_gen;
	if (xp_commit(nd, r) < 0) {
		cycle_end(nd, -EIO);
		return;
	}
	atomic_fetch_add(&nd->n_commits, 1);
}

static void
cycle_begin(struct nfs_dev *nd)
{
	if (nd->cycle)
		return;
	nd->cycle = true;
	cycle_step(nd);
}

static void
commit_reply(struct nfs_dev *nd, const struct nfs_reply *rep)
{
	struct nfs_wrec *w, *next;
	bool stale = false;

	nd->committing = false;
	if (rep->err != 0) {
		cycle_end(nd, rep->err);
		return;
	}
	verf_seen(nd, rep->verf);
	for (w = nd->rec_head; w != NULL; w = next) {
		next = w->next;
		if (w->seq > nd->commit_seq || w->sending)
			continue;
		if (memcmp(w->verf, rep->verf, NFS_VERF) == 0)
			rec_unlink(nd, w);
		else
			stale = w->stale = true;
	}
	if (stale)
		cycle_step(nd); /* round again */
	else
		cycle_end(nd, 0);
}

static void
resend_reply(struct nfs_dev *nd, struct nfs_wrec *w, const struct nfs_reply *rep)
{
	nd->resends_out--;
	w->sending = false;
	if (rep->err == 0 && rep->count < w->len) {
		w->stale = true; /* short: the whole record again */
	} else if (rep->err == 0) {
		memcpy(w->verf, rep->verf, NFS_VERF);
		verf_seen(nd, rep->verf);
		if (rep->stable)
			rec_unlink(nd, w);
	} else {
		w->stale = true;
		if (nd->cycle_err == 0)
			nd->cycle_err = rep->err;
	}
	cycle_step(nd);
}

static void
eng_reply(struct nfs_dev *nd, struct nfs_rpc *r, const struct nfs_reply *rep)
{
	struct nfs_cmd *cmd = r->cmd;

	nd->inflight--;
	if (rep->err == 0)
		note_attr(nd, rep);
	switch (r->kind) {
	case R_READ:
		if (rep->err != 0) {
			cmd_finish(nd, cmd, rep->err);
		} else {
			size_t n = MIN((size_t)rep->count, cmd->len);
			buf_to_iov(cmd->p->iov, cmd->p->iovcnt, 0, rep->data, n);
			cmd_finish(nd, cmd, (ssize_t)n);
		}
		break;
	case R_WRITE:
		if (rep->err != 0) {
			cmd_finish(nd, cmd, rep->err);
		} else if (rep->count == 0) {
			cmd_finish(nd, cmd, -EIO);
		} else {
			uint32_t n = MIN(rep->count, (uint32_t)cmd->len);
			verf_seen(nd, rep->verf);
			if (rep->stable)
				cmd_finish(nd, cmd, n);
			else
				rec_add(nd, cmd, n, rep->verf);
		}
		break;
	case R_RESEND:
		resend_reply(nd, r->rec, rep);
		break;
	case R_COMMIT:
		commit_reply(nd, rep);
		break;
	case R_SETATTR:
		cmd_finish(nd, cmd, rep->err);
		break;
	case R_GETATTR:
		if (rep->err == 0)
			cmd->attr = rep->attr;
		cmd_finish(nd, cmd, rep->err);
		break;
	}
	free(r);
	if (nd->cycle && !nd->committing)
		cycle_step(nd); /* resends waiting for a slot */
}

/* Records past a new end of file would grow it again if resent. */
static void
rec_truncate(struct nfs_dev *nd, uint64_t size)
{
	struct nfs_wrec *w, *next;

	for (w = nd->rec_head; w != NULL; w = next) {
		next = w->next;
		if (w->sending)
			continue;
		if (w->off >= size) {
			rec_unlink(nd, w);
		} else if (w->off + w->len > size) {
			nd->kept -= w->off + w->len - size;
			w->len = (uint32_t)(size - w->off);
		}
	}
	atomic_store(&nd->n_kept, nd->kept);
}

static void
eng_start(struct nfs_dev *nd, struct nfs_cmd *cmd)
{
	struct nfs_rpc *r;
	int rc;

	switch (cmd->kind) {
	case C_FLUSH:
		cmd->flush_gen = ++nd->flush_gen;
		cmd_push(&nd->flush_head, &nd->flush_tail, cmd);
		cycle_begin(nd);
		return;
	case C_WRITE:
		if (nd->kept > 0 && nd->kept + cmd->len > nd->keep_max) {
			cmd_push(&nd->blocked_head, &nd->blocked_tail, cmd);
			cycle_begin(nd);
			return;
		}
		break;
	default:
		break;
	}
	r = rpc_new(nd, cmd->kind == C_READ ? R_READ : cmd->kind == C_WRITE ? R_WRITE
			: cmd->kind == C_RESIZE ? R_SETATTR : R_GETATTR, cmd);
	if (r == NULL) {
		cmd_finish(nd, cmd, -ENOMEM);
		return;
	}
	r->off = cmd->off;
	r->len = (uint32_t)cmd->len;
	switch (cmd->kind) {
	case C_READ:
		rc = xp_read(nd, r);
		break;
	case C_WRITE:
		rc = xp_write(nd, r, cmd->data);
		break;
	case C_RESIZE:
		rec_truncate(nd, cmd->size);
		rc = xp_setattr_size(nd, r, cmd->size);
		break;
	default:
		rc = xp_getattr(nd, r);
		break;
	}
	if (rc < 0)
		cmd_finish(nd, cmd, rc);
}

/* ------------------------------------------------------------ the thread */

/* Start what submitters queued; true if there was any. */
static bool
take_incoming(struct nfs_dev *nd, bool *stop)
{
	struct nfs_cmd *list, *cmd;

	pthread_mutex_lock(&nd->lock);
	list = nd->in_head;
	nd->in_head = nd->in_tail = NULL;
	if (stop != NULL)
		*stop = nd->stop;
	pthread_mutex_unlock(&nd->lock);
	if (list == NULL)
		return false;
	while ((cmd = list) != NULL) {
		list = cmd->next;
		eng_start(nd, cmd);
	}
	return true;
}

static bool
dispatch_done(struct nfs_dev *nd)
{
	struct nfs_cmd *list = nd->done_head, *cmd;

	nd->done_head = nd->done_tail = NULL;
	if (list == NULL)
		return false;
	while ((cmd = list) != NULL) {
		struct dev_io *p = cmd->p;
		ssize_t r = cmd->result;

		list = cmd->next;
		free(cmd);
		dev_piece_done(p, r);
	}
	return true;
}

/* One wait for the socket or the eventfd, then libnfs's service.  A
 * socket in error (a server gone: libnfs reconnects at once, and again)
 * is served at most every 10 ms, doubling to 320 ms while it stays so. */
static void
poll_once(struct nfs_dev *nd)
{
	struct pollfd fds[2] = { { nd->wake, POLLIN, 0 }, { -1, 0, 0 } };
	uint64_t n;
	int r;

	fds[1].fd = nfs_get_fd(nd->nfs);
	fds[1].events = (short)nfs_which_events(nd->nfs);
	r = poll(fds, fds[1].fd >= 0 ? 2 : 1, 100);
	if (r < 0)
		return; /* EINTR */
	if (fds[0].revents & POLLIN)
		(void)!read(nd->wake, &n, sizeof(n));
	r = nfs_service(nd->nfs, fds[1].fd >= 0 ? fds[1].revents : 0);
	if (r < 0 || (fds[1].revents & (POLLERR | POLLHUP))) {
		poll(NULL, 0, nd->backoff_ms);
		nd->backoff_ms = MIN(nd->backoff_ms * 2, 320);
	} else if (fds[1].revents & POLLIN) {
		nd->backoff_ms = 10;
	}
}

static void *
nfs_main(void *arg)
{
	struct nfs_dev *nd = arg;
	bool stop = false;

	driving = nd;
	for (;;) {
		bool any = take_incoming(nd, &stop);

		any |= dispatch_done(nd);
		if (stop && nd->inflight == 0 && nd->done_head == NULL)
			break;
		if (!any)
			poll_once(nd);
	}
	driving = NULL;
	return NULL;
}

/* Run cmd (threading rule 2): queued for the thread and waited for, or,
 * on the thread itself, driven here. */
static ssize_t
cmd_run(struct nfs_dev *nd, struct nfs_cmd *cmd)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

	cmd->sync = true;
	cmd->m = &m;
	cmd->cv = &cv;
	if (driving == nd) {
		eng_start(nd, cmd);
		for (;;) {
			pthread_mutex_lock(&m);
			bool fin = cmd->finished;
			pthread_mutex_unlock(&m);
			if (fin)
				break;
			take_incoming(nd, NULL);
			poll_once(nd);
		}
	} else {
		pthread_mutex_lock(&nd->lock);
		cmd_push(&nd->in_head, &nd->in_tail, cmd);
		pthread_mutex_unlock(&nd->lock);
		nfs_wake(nd);
		pthread_mutex_lock(&m);
		while (!cmd->finished)
			pthread_cond_wait(&cv, &m);
		pthread_mutex_unlock(&m);
	}
	pthread_mutex_destroy(&m);
	pthread_cond_destroy(&cv);
	return cmd->result;
}

/* ------------------------------------------------------------ dev_ops */

static int
cmd_fill(struct nfs_cmd *cmd, struct dev_io *p)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->p = p;
	cmd->off = p->off;
	cmd->len = p->len;
	switch (p->op) {
	case CLIO_OP_READ:
		cmd->kind = C_READ;
		break;
	case CLIO_OP_WRITE:
		cmd->kind = C_WRITE;
		cmd->data = malloc(p->len ? p->len : 1);
		if (cmd->data == NULL)
			return -ENOMEM;
		iov_to_buf(p->iov, p->iovcnt, 0, cmd->data, p->len);
		break;
	default:
		cmd->kind = C_FLUSH;
		break;
	}
	return 0;
}

static void
nfs_submit(clio_dev *d, struct dev_io *p)
{
	struct nfs_dev *nd = d->priv;
	struct nfs_cmd *cmd = malloc(sizeof(*cmd));

	if (cmd == NULL || cmd_fill(cmd, p) < 0) {
		free(cmd);
		dev_piece_defer(p); /* io() on the pool */
		return;
	}
	pthread_mutex_lock(&nd->lock);
	cmd_push(&nd->in_head, &nd->in_tail, cmd);
	pthread_mutex_unlock(&nd->lock);
	if (driving != nd)
		nfs_wake(nd);
}

static ssize_t
nfs_io(clio_dev *d, struct dev_io *p)
{
	struct nfs_cmd cmd;
	int r = cmd_fill(&cmd, p);

	if (r < 0)
		return r;
	return cmd_run(d->priv, &cmd);
}

static int
nfs_resize(clio_dev *d, uint64_t size)
{
	struct nfs_cmd cmd = { .kind = C_RESIZE, .size = size };

	return (int)cmd_run(d->priv, &cmd);
}

static void
nfs_dev_free(struct nfs_dev *nd)
{
	struct nfs_wrec *w;

	if (nd->started) {
		pthread_mutex_lock(&nd->lock);
		nd->stop = true;
		pthread_mutex_unlock(&nd->lock);
		nfs_wake(nd);
		pthread_join(nd->thread, NULL);
	}
	if (nd->nfs != NULL) {
		if (nd->fh != NULL)
			(void)nfs_close(nd->nfs, nd->fh);
		nfs_destroy_context(nd->nfs);
	}
	while ((w = nd->rec_head) != NULL) {
		nd->rec_head = w->next;
		free(w->data);
		free(w);
	}
	if (nd->wake >= 0)
		close(nd->wake);
	pthread_mutex_destroy(&nd->lock);
	free(nd->server);
	free(nd->export);
	free(nd->path);
	free(nd->url);
	free(nd->spec);
	free(nd);
}

static void
nfs_dev_close(clio_dev *d)
{
	struct nfs_dev *nd = d->priv;
	struct nfs_cmd cmd = { .kind = C_FLUSH };

	/* what was written and not committed: one COMMIT (with its resends)
	 * at the last moment, as an NFS client's close; its error has no
	 * caller to go to */
	if (atomic_load(&nd->n_kept) > 0)
		(void)cmd_run(nd, &cmd);
	nfs_dev_free(nd);
	dev_free(d);
}

static void
nfs_params(clio_dev *d, struct dev_params *o)
{
	struct nfs_dev *nd = d->priv;

	dev_param(o, "server", "%s", nd->server);
	dev_param(o, "export", "%s", nd->export);
	dev_param(o, "path", "%s", nd->path);
	dev_param(o, "rtmax", "%u", nd->rtmax);
	dev_param(o, "wtmax", "%u", nd->wtmax);
	dev_param(o, "qd", "%u", nd->qd);
	dev_param(o, "keep_max", "%llu", (unsigned long long)nd->keep_max);
	dev_param(o, "timeo", "%d", nd->timeo);
	dev_param(o, "kept", "%llu", (unsigned long long)atomic_load(&nd->n_kept));
	dev_param(o, "commits", "%llu", (unsigned long long)atomic_load(&nd->n_commits));
	dev_param(o, "verifier_changes", "%llu",
		  (unsigned long long)atomic_load(&nd->n_verf_changes));
	dev_param(o, "resends", "%llu", (unsigned long long)atomic_load(&nd->n_resends));
	pthread_mutex_lock(&nd->lock);
	if (nd->have_attr) {
		dev_param(o, "attr_size", "%llu", (unsigned long long)nd->attr.size);
		dev_param(o, "attr_fileid", "%llu", (unsigned long long)nd->attr.fileid);
		dev_param(o, "attr_mtime", "%u.%09u", nd->attr.mtime.seconds,
			  nd->attr.mtime.nseconds);
		dev_param(o, "attr_ctime", "%u.%09u", nd->attr.ctime.seconds,
			  nd->attr.ctime.nseconds);
	}
	pthread_mutex_unlock(&nd->lock);
}

static const struct dev_ops nfs_ops = {
	.scheme = "nfs",
	.io = nfs_io,
	.submit = nfs_submit,
	.resize = nfs_resize,
	.close = nfs_dev_close,
	.params = nfs_params,
};

int
dev_nfs_validator(clio_dev *d, struct clio_validator *v)
{
	struct nfs_cmd cmd = { .kind = C_GETATTR };
	int r;

	if (d == NULL || d->ops != &nfs_ops || v == NULL)
		return -EINVAL;
	r = (int)cmd_run(d->priv, &cmd);
	if (r < 0)
		return r;
	memset(v, 0, sizeof(*v));
	v->size = cmd.attr.size;
	v->mtime_ns = (int64_t)cmd.attr.mtime.seconds * 1000000000 + cmd.attr.mtime.nseconds;
	v->ctime_ns = (int64_t)cmd.attr.ctime.seconds * 1000000000 + cmd.attr.ctime.nseconds;
	v->id = cmd.attr.fileid;
	return 0;
}

/* ------------------------------------------------------------ opening */

/* Take clio's keys out of the query and name libnfs's NFS port its way. */
static int
split_url(struct nfs_dev *nd, const char *spec, char *err, size_t errlen)
{
	const char *q = strchr(spec, '?');
	size_t base = q ? (size_t)(q - spec) : strlen(spec);
	char *query, *kv, *save = NULL, *out;
	uint64_t n;

	nd->qd = NFS_DEFAULT_QD;
	nd->keep_max = NFS_DEFAULT_KEEP;
	nd->timeo = NFS_DEFAULT_TIMEO;
	out = malloc(strlen(spec) + 16);
	query = strdup(q ? q + 1 : "");
	if (out == NULL || query == NULL) {
		free(out);
		free(query);
		return -ENOMEM;
	}
	memcpy(out, spec, base);
	out[base] = '\0';
	for (kv = strtok_r(query, "&", &save); kv != NULL;
	     kv = strtok_r(NULL, "&", &save)) {
		if (strncmp(kv, "qd=", 3) == 0) {
			if (parse_uint(kv + 3, &n) < 0 || n < 1 || n > NFS_MAX_QD) {
				set_err(err, errlen, "nfs: bad qd '%s' in '%s' (1 to %d)",
					kv + 3, spec, NFS_MAX_QD);
				goto bad;
			}
			nd->qd = (uint32_t)n;
		} else if (strncmp(kv, "keep=", 5) == 0) {
			if (parse_size(kv + 5, &n) < 0 || n < 1 || n > (1ull << 40)) {
				set_err(err, errlen, "nfs: bad keep '%s' in '%s'", kv + 5, spec);
				goto bad;
			}
			nd->keep_max = n;
		} else if (strncmp(kv, "timeo=", 6) == 0) {
			if (parse_uint(kv + 6, &n) < 0 || n < 1 || n > 3600) {
				set_err(err, errlen, "nfs: bad timeo '%s' in '%s' (1 to 3600 s)",
					kv + 6, spec);
				goto bad;
			}
			nd->timeo = (int)n;
		} else if (strncmp(kv, "readahead=", 10) == 0 ||
			   strncmp(kv, "version=", 8) == 0) {
			set_err(err, errlen, "nfs: '%s' in '%s' is not for this device "
				"(NFSv3, no readahead)", kv, spec);
			goto bad;
		} else {
			strcat(out, strchr(out, '?') ? "&" : "?");
			if (strncmp(kv, "port=", 5) == 0)
				strcat(out, "nfs");
			strcat(out, kv);
		}
	}
	free(query);
	nd->url = out;
	return 0;
bad:
	free(query);
	free(out);
	return -EINVAL;
}

static int
nfs_connect(struct nfs_dev *nd, int flags, char *err, size_t errlen)
{
	struct nfs_url *u;
	struct nfs_stat_64 st;
	struct libnfs_fh *fh;
	const char *spec = nd->spec;
	int r;

	nd->nfs = nfs_init_context();
	if (nd->nfs == NULL) {
		set_err(err, errlen, "%s: cannot make a libnfs context", spec);
		return -ENOMEM;
	}
	nfs_set_readahead(nd->nfs, 0);
	u = nfs_parse_url_full(nd->nfs, nd->url);
	if (u == NULL) {
		set_err(err, errlen, "%s: bad URL (nfs://HOST/EXPORT/PATH): %s",
			spec, nfs_get_error(nd->nfs));
		return -EINVAL;
	}
	nd->server = strdup(u->server);
	nd->export = strdup(u->path);
	nd->path = strdup(u->file);
	nfs_destroy_url(u);
	if (nd->server == NULL || nd->export == NULL || nd->path == NULL)
		return -ENOMEM;
	nfs_set_timeout(nd->nfs, nd->timeo * 1000);
	r = nfs_mount(nd->nfs, nd->server, nd->export);
	if (r != 0) {
		r = r < 0 ? r : -EIO;
		set_err(err, errlen, "%s: cannot mount %s:%s: %s (%s)", spec,
			nd->server, nd->export, nfs_get_error(nd->nfs), strerror(-r));
		return r;
	}
	r = nfs_open2(nd->nfs, nd->path,
		      ((flags & CLIO_DEV_RDONLY) ? O_RDONLY : O_RDWR) |
			      ((flags & CLIO_DEV_CREATE) ? O_CREAT : 0),
		      0644, &nd->fh);
	if (r != 0) {
		set_err(err, errlen, "%s: cannot open %s in %s:%s: %s", spec,
			nd->path, nd->server, nd->export, nfs_get_error(nd->nfs));
		return r < 0 ? r : -EIO;
	}
	r = nfs_fstat64(nd->nfs, nd->fh, &st);
	if (r != 0) {
		set_err(err, errlen, "%s: GETATTR: %s", spec,
			nfs_get_error(nd->nfs));
		return r < 0 ? r : -EIO;
	}
	if ((st.nfs_mode & S_IFMT) != S_IFREG) {
		set_err(err, errlen, "%s: %s is not a regular file", spec,
			nd->path);
		return -EINVAL;
	}
	nd->d->size = st.nfs_size;
	fh = (struct libnfs_fh *)nfs_get_fh(nd->fh);
	if (fh == NULL || fh->len <= 0 || fh->len > NFS3_FHSIZE) {
		set_err(err, errlen, "%s: no file handle from libnfs", spec);
		return -EIO;
	}
	nd->fh3.data.data_len = (u_int)fh->len;
	nd->fh3.data.data_val = fh->val;
	nd->rtmax = (uint32_t)MIN(nfs_get_readmax(nd->nfs), 1u << 30);
	nd->wtmax = (uint32_t)MIN(nfs_get_writemax(nd->nfs), 1u << 30);
	if (nd->rtmax < 512 || nd->wtmax < 512) {
		set_err(err, errlen, "%s: the server's rtmax %u / wtmax %u "
			"are below 512", spec, nd->rtmax, nd->wtmax);
		return -EINVAL;
	}
	return 0;
}

int
dev_nfs_open(const char *spec, int flags, clio_dev **dp, char *err,
	     size_t errlen)
{
	struct nfs_dev *nd = calloc(1, sizeof(*nd));
	clio_dev *d = NULL;
	int r;

	if (nd == NULL)
		return -ENOMEM;
	nd->wake = -1;
	nd->backoff_ms = 10;
	pthread_mutex_init(&nd->lock, NULL);
	atomic_init(&nd->n_verf_changes, 0);
	atomic_init(&nd->n_resends, 0);
	atomic_init(&nd->n_commits, 0);
	atomic_init(&nd->n_kept, 0);
	nd->spec = strdup(spec);
	if (nd->spec == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	r = split_url(nd, spec, err, errlen);
	if (r < 0)
		goto fail;
	r = dev_alloc(&nfs_ops, spec, &d);
	if (r < 0)
		goto fail;
	d->priv = nd;
	nd->d = d;
	r = nfs_connect(nd, flags, err, errlen);
	if (r < 0)
		goto fail;
	if (nd->keep_max < nd->wtmax)
		nd->keep_max = nd->wtmax;
	nd->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (nd->wake < 0) {
		r = -errno;
		set_err(err, errlen, "%s: eventfd: %s", spec, strerror(errno));
		goto fail;
	}
	r = -pthread_create(&nd->thread, NULL, nfs_main, nd);
	if (r < 0) {
		set_err(err, errlen, "%s: pthread_create: %s", spec, strerror(-r));
		goto fail;
	}
	nd->started = true;
	{
		struct clio_validator v;

		r = dev_nfs_validator(d, &v); /* and the attributes of params() */
		if (r < 0) {
			set_err(err, errlen, "%s: GETATTR: %s", spec, strerror(-r));
			goto fail;
		}
	}
	d->sector = 512;
	d->maxio = MIN(nd->rtmax, nd->wtmax);
	d->queue_depth = nd->qd;
	d->readonly = (flags & CLIO_DEV_RDONLY) != 0;
	snprintf(d->engine, sizeof(d->engine), "libnfs (NFSv3, qd %u)", nd->qd);
	*dp = d;
	return 0;
fail:
	nfs_dev_free(nd);
	if (d != NULL)
		dev_free(d);
	return r;
}
