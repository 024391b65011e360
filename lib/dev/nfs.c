/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nfs.c - the NFSv3 client backend: `nfs://HOST/EXPORT/PATH`, one regular
 * file of an export, through libnfs (lib/dev/nfsxprt.c).  libnfs's URL keys pass through
 * (`uid=`, `gid=`, `mountport=`, ...; clio's `port=` is libnfs's
 * `nfsport=`), checked first: libnfs ignores an unknown key, reads a
 * malformed number as 0 and takes the last of a key given twice (an
 * error here); clio's own are taken out first: `qd=N` (RPCs in flight,
 * default 16, at most 128), `keep=SIZE` (the uncommitted data kept for a
 * resend, default 64M) and `timeo=S` (seconds before an RPC fails,
 * default 30; libnfs counts in whole seconds; the transport keeps the
 * deadline, also for an RPC libnfs still queues: a "soft" mount).
 *
 * The device: a piece is one READ or one WRITE RPC, so maxio is
 * min(rtmax, wtmax) of the server's FSINFO; the size is the file's
 * (GETATTR at open), and the device is resizable: a write past the end
 * grows the file, resize() is SETATTR of the size.  Writes are UNSTABLE; a
 * flush is COMMIT.
 *
 * Durability (the write verifier).  An UNSTABLE write the server
 * acknowledged may still be lost if the server restarts before a COMMIT;
 * the server says so by a new write verifier.  So:
 *  1. Every write acknowledged UNSTABLE since the last successful COMMIT
 *     is kept (a record: offset, length, a copy of the data, the verifier
 *     of its reply, a sequence number).  A write acknowledged FILE_SYNC
 *     is durable and not kept, unless it overlaps a record (whose resend
 *     would overwrite it).  A newer record that covers an older one
 *     replaces it.
 *  2. A reply (WRITE or COMMIT) whose verifier differs from a record's
 *     marks that record stale: the server that acknowledged it is gone.
 *  3. A flush is a commit cycle: every stale record is sent again (in
 *     sequence order where they overlap, each newer overlapping record
 *     again after it, so the newest data lands last), then COMMIT.  COMMIT frees the records up to the sequence number sent
 *     with it whose verifier equals COMMIT's; any other makes them stale
 *     and the cycle goes round again.  Only a cycle whose COMMIT covered
 *     every record completes the flushes that were waiting before it
 *     started.  So a flush that returns 0 leaves nothing acknowledged
 *     that is not on the server's stable storage.
 *  4. A failed COMMIT or resend fails the waiting flushes with its error
 *     and keeps every record: the next flush tries again (the data is
 *     still "dirty" here), which succeeds once the server is back.
 *  5. The kept data and the writes in flight together are bounded by
 *     keep=: a write that would pass it waits while a commit cycle runs
 *     first (a write alone may be as large as wtmax, keep='s floor).  A
 *     write overlapping a record being sent again waits for it.
 *  6. A READ returns the server's data with the records laid over it in
 *     their order: a server that lost acknowledged writes never shows
 *     their old data to this client (a block the cache reads back to
 *     merge a partial write included).  The device assumes it is the
 *     file's only writer until its next COMMIT, as an NFS client's
 *     unstable pages do.
 *
 * Threading model:
 *  1. One I/O thread (nfs_main) owns the transport (libnfs has no
 *     threads: one context, one thread) and the engine's state: the
 *     records, the commit cycle; the counters params() reads are atomics,
 *     the attributes it shows are under nd->lock.
 *  2. Submitters (submit(), io(), resize()) queue a command under
 *     nd->lock and wake the thread through an eventfd.  Replies come
 *     inside the transport's wait(); they finish commands onto nd->done,
 *     which the thread completes with dev_piece_done() after wait()
 *     returned, holding no lock.  A synchronous command (io()) is waited
 *     for on its own condition variable; io() called on the I/O thread
 *     itself (from a completion) drives the transport there until its
 *     command is finished.
 *  3. close() runs with nothing outstanding (dev.h rule 6): it commits
 *     what is uncommitted, stops the thread, then closes the transport.
 *
 * The seam (lib/dev/nfs.h).  The engine (eng_*, cycle_*: pieces to READ
 * and WRITE calls, flushes to commit cycles, the records, the verifier
 * and the resends) reaches the server only through a struct nfs_xport:
 * call() starts one procedure on the file (READ, WRITE UNSTABLE, COMMIT,
 * SETATTR of the size, GETATTR) and its reply comes back, inside the
 * transport's wait(), to eng_reply() as a struct nfs_reply (-errno,
 * count, eof, stable, verifier, attributes).  lib/dev/nfsxprt.c is the
 * transport over libnfs to a real server.  A simulated server on clio's
 * virtual clock (lib/vclock.c, with a disk of lib/dev/sim.c behind it) can
 * replace it with the same three operations, its wait() replying at the
 * simulated completion times (per-RPC round trip, bandwidth, the
 * server's CPU per call), so that the same client code path runs in
 * virtual time; the verifier and a server restart are then the
 * simulation's to choose.  lib/dev/nfssim.c is that transport
 * (`nfs+sim:`).  On it (nfs.h rule 6) the engine's clock is nd->vt, the
 * time of the event it handles: a command's t_submit when it starts, a
 * reply's t_done inside eng_reply(); each call leaves at nd->vt and each
 * command finishes at it (p->t_done, dev.h rule 4).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"
#include "dev/nfs.h"

#define NFS_DEFAULT_QD 16
#define NFS_MAX_QD 128
#define NFS_DEFAULT_KEEP (64u << 20)
#define NFS_DEFAULT_TIMEO 30
#define NFS_VERF NFS_VERF_SIZE

enum cmd_kind { C_READ, C_WRITE, C_FLUSH, C_RESIZE, C_GETATTR };

struct nfs_cmd {
	enum cmd_kind kind;
	struct dev_io *p;	/* NULL for resize and getattr */
	uint64_t off, size;
	size_t len;
	char *data;		/* a write's copy: becomes its record's */
	uint64_t flush_gen;	/* a flush: the cycle generation it needs */
	ssize_t result;
	double t_done;		/* virtual clock: when it finished */
	struct nfs_attr attr;	/* getattr */
	struct nfs_cmd *next;
	struct nfs_cmd *out_prev, *out_next; /* nd->wout: a WRITE in flight */
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

struct nfs_dev {
	clio_dev *d;
	char *spec, *url;	/* what the user said, what libnfs parses */
	struct nfs_file_info fi; /* server, export, path, rtmax, wtmax */
	struct nfs_xport *xp;
	uint32_t qd;
	uint64_t keep_max;
	int timeo;

	int wake;		/* eventfd */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;	/* incoming, stop, attr */
	struct nfs_cmd *in_head, *in_tail;
	bool stop;
	struct nfs_attr attr;	/* the newest attributes seen */
	bool have_attr;

	/* the I/O thread's own (threading rule 1) */
	struct nfs_cmd *done_head, *done_tail;
	unsigned inflight;	/* RPCs */
	struct nfs_wrec *rec_head, *rec_tail;
	uint64_t kept, wseq;
	uint64_t wbytes_out;	/* of the WRITEs in flight (not resends) */
	struct nfs_cmd *wout;	/* those WRITEs */
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
	bool virt;		/* the transport's clock is virtual (nfs.h rule 6) */
	double vt;		/* the I/O thread's: the event's virtual time */
	double vbusy;		/* the latest t_done stamped */
};

static _Thread_local struct nfs_dev *driving;

static void eng_reply(struct nfs_dev *nd, struct nfs_rpc *r,
		      const struct nfs_reply *rep);
static void cycle_step(struct nfs_dev *nd);
static void cycle_begin(struct nfs_dev *nd);

/* ------------------------------------------------------------ transport */

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

/* The seam (nfs.h): each xp_* starts one call whose reply reaches
 * eng_reply(); it returns 0, or -errno when the call did not start (no
 * reply then, and r is freed). */
static int
xp_start(struct nfs_dev *nd, struct nfs_rpc *r, const struct nfs_call *c)
{
	struct nfs_call cc = *c;
	int rc;

	cc.t = nd->vt;
	rc = nd->xp->ops->call(nd->xp, &cc, r);

	if (rc < 0) {
		free(r);
		return rc;
	}
	nd->inflight++;
	return 0;
}

static void
xp_reply(void *arg, void *tag, const struct nfs_reply *rep)
{
	eng_reply(arg, tag, rep);
}

static int
xp_read(struct nfs_dev *nd, struct nfs_rpc *r)
{
	struct nfs_call c = { .proc = NFS_READ, .off = r->off, .len = r->len };

	return xp_start(nd, r, &c);
}

static int
xp_write(struct nfs_dev *nd, struct nfs_rpc *r, const char *data)
{
	struct nfs_call c = { .proc = NFS_WRITE, .off = r->off, .len = r->len,
			      .data = data };

	return xp_start(nd, r, &c);
}

static int
xp_commit(struct nfs_dev *nd, struct nfs_rpc *r)
{
	struct nfs_call c = { .proc = NFS_COMMIT };

	return xp_start(nd, r, &c);
}

static int
xp_setattr_size(struct nfs_dev *nd, struct nfs_rpc *r, uint64_t size)
{
	struct nfs_call c = { .proc = NFS_SETSIZE, .size = size };

	return xp_start(nd, r, &c);
}

static int
xp_getattr(struct nfs_dev *nd, struct nfs_rpc *r)
{
	struct nfs_call c = { .proc = NFS_GETATTR };

	return xp_start(nd, r, &c);
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
	cmd->t_done = nd->vt;
	if (nd->virt && cmd->p != NULL) {
		/* busy from where the last piece's busy time ended: the
		 * device layer sums the pieces' t_done - t_start (%util) */
		cmd->p->t_start = MIN(MAX(cmd->p->t_submit, nd->vbusy), nd->vt);
		cmd->p->t_done = nd->vt;
		nd->vbusy = MAX(nd->vbusy, nd->vt);
	}
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

static bool
overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* Durability rule 3's order: a stale record is sent again only when no
 * older record overlapping it is still to be sent or being sent, no
 * newer one overlapping it is being sent, and no WRITE overlapping it
 * is in flight; so the newest data lands last. */
static bool
resend_may_go(const struct nfs_dev *nd, const struct nfs_wrec *w)
{
	const struct nfs_wrec *o;
	const struct nfs_cmd *c;

	for (o = w->prev; o != NULL; o = o->prev)
		if ((o->stale || o->sending) && overlap(o->off, o->len, w->off, w->len))
			return false;
	for (o = w->next; o != NULL; o = o->next)
		if (o->sending && overlap(o->off, o->len, w->off, w->len))
			return false;
	for (c = nd->wout; c != NULL; c = c->out_next)
		if (overlap(c->off, c->len, w->off, w->len))
			return false;
	return true;
}

/* A write overlapping a record being sent again waits for it. */
static bool
overlaps_resend(const struct nfs_dev *nd, uint64_t off, uint64_t len)
{
	const struct nfs_wrec *o;

	for (o = nd->rec_head; o != NULL; o = o->next)
		if (o->sending && overlap(o->off, o->len, off, len))
			return true;
	return false;
}

static void eng_start(struct nfs_dev *nd, struct nfs_cmd *cmd);

static void eng_send(struct nfs_dev *nd, struct nfs_cmd *cmd);

/* Durability rule 5: may a write of len bytes go now? */
static bool
write_fits(const struct nfs_dev *nd, size_t len)
{
	uint64_t used = nd->kept + nd->wbytes_out;

	return used == 0 || used + len <= nd->keep_max;
}

/* Rule 5: may a write go now (it fits, and overlaps no resend)?  A
 * resize waits for every resend: one landing after it would grow the
 * file again. */
static bool
may_go(const struct nfs_dev *nd, const struct nfs_cmd *cmd)
{
	if (cmd->kind == C_RESIZE)
		return !overlaps_resend(nd, 0, UINT64_MAX);
	return write_fits(nd, cmd->len) && !overlaps_resend(nd, cmd->off, cmd->len);
}

/* Rule 5: the writes that waited go, in order, as far as they fit.  A
 * commit cycle makes room when something is kept; otherwise the writes
 * in flight make room as they complete. */
static void
eng_unblock(struct nfs_dev *nd)
{
	struct nfs_cmd *cmd;

	while ((cmd = nd->blocked_head) != NULL && may_go(nd, cmd)) {
		nd->blocked_head = cmd->next;
		if (nd->blocked_head == NULL)
			nd->blocked_tail = NULL;
		eng_send(nd, cmd);
	}
	if (nd->blocked_head != NULL && nd->kept > 0)
		cycle_begin(nd);
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
	if (nd->flush_head != NULL)
		cycle_begin(nd);
	eng_unblock(nd);
}

/* Durability rule 3: resend the stale records, then COMMIT. */
static void
cycle_step(struct nfs_dev *nd)
{
	struct nfs_wrec *w, *o;
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
		if (w->sending || nd->inflight >= nd->qd || !resend_may_go(nd, w))
			continue;
		if ((r = rpc_new(nd, R_RESEND, NULL)) == NULL) {
			nd->cycle_err = -ENOMEM;
			break;
		}
		r->rec = w;
		r->off = w->off;
		r->len = w->len;
		if (xp_write(nd, r, w->data) < 0) {
			nd->cycle_err = -EIO;
			break;
		}
		/* the newer data it overwrites is to be sent after it */
		for (o = w->next; o != NULL; o = o->next)
			if (overlap(o->off, o->len, w->off, w->len))
				o->stale = true;
		w->stale = false;
		w->sending = true;
		atomic_fetch_add(&nd->n_resends, 1);
		nd->resends_out++;
	}
	if (nd->cycle_err != 0) {
		if (nd->resends_out == 0)
			cycle_end(nd, nd->cycle_err);
		return;
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

static bool
overlaps_kept(const struct nfs_dev *nd, uint64_t off, uint64_t len)
{
	const struct nfs_wrec *w;

	for (w = nd->rec_head; w != NULL; w = w->next)
		if (overlap(w->off, w->len, off, len))
			return true;
	return false;
}

/* Durability rule 6: a READ's n bytes from the server, with the kept
 * writes laid over them in their order (and past them: a server that
 * lost the writes that grew the file); returns the bytes read. */
static size_t
read_overlay(const struct nfs_dev *nd, struct nfs_cmd *cmd, size_t n)
{
	const struct dev_io *p = cmd->p;
	const struct nfs_wrec *w;
	size_t ext = n;

	for (w = nd->rec_head; w != NULL; w = w->next)
		if (overlap(w->off, w->len, cmd->off, cmd->len))
			ext = MAX(ext, (size_t)(MIN(w->off + w->len, cmd->off + cmd->len) -
						cmd->off));
	if (ext > n)
		iov_memset(p->iov, p->iovcnt, n, 0, ext - n);
	for (w = nd->rec_head; w != NULL; w = w->next) {
		uint64_t from, to;

		if (!overlap(w->off, w->len, cmd->off, ext))
			continue;
		from = MAX(w->off, cmd->off);
		to = MIN(w->off + w->len, cmd->off + ext);
		buf_to_iov(p->iov, p->iovcnt, from - cmd->off, w->data + (from - w->off),
			   to - from);
	}
	return ext;
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

	if (nd->virt)
		nd->vt = rep->t_done;
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
			cmd_finish(nd, cmd, (ssize_t)read_overlay(nd, cmd, n));
		}
		break;
	case R_WRITE:
		nd->wbytes_out -= cmd->len;
		if (cmd->out_prev != NULL)
			cmd->out_prev->out_next = cmd->out_next;
		else
			nd->wout = cmd->out_next;
		if (cmd->out_next != NULL)
			cmd->out_next->out_prev = cmd->out_prev;
		if (rep->err != 0) {
			cmd_finish(nd, cmd, rep->err);
		} else if (rep->count == 0) {
			cmd_finish(nd, cmd, -EIO);
		} else {
			uint32_t n = MIN(rep->count, (uint32_t)cmd->len);
			verf_seen(nd, rep->verf);
			if (rep->stable && !overlaps_kept(nd, cmd->off, n))
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
	if (nd->blocked_head != NULL)
		eng_unblock(nd); /* room made by a write's end */
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
	if (nd->virt)
		nd->vt = cmd->p != NULL ? cmd->p->t_submit : vclock_now();
	switch (cmd->kind) {
	case C_FLUSH:
		cmd->flush_gen = ++nd->flush_gen;
		cmd_push(&nd->flush_head, &nd->flush_tail, cmd);
		cycle_begin(nd);
		return;
	case C_WRITE:
	case C_RESIZE:
		if (nd->blocked_head != NULL || !may_go(nd, cmd)) {
			cmd_push(&nd->blocked_head, &nd->blocked_tail, cmd);
			if (nd->kept > 0)
				cycle_begin(nd);
			return;
		}
		break;
	default:
		break;
	}
	eng_send(nd, cmd);
}

/* Start the call of a command. */
static void
eng_send(struct nfs_dev *nd, struct nfs_cmd *cmd)
{
	struct nfs_rpc *r;
	int rc;

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
		if (rc == 0) {
			nd->wbytes_out += cmd->len;
			cmd->out_prev = NULL;
			cmd->out_next = nd->wout;
			if (nd->wout != NULL)
				nd->wout->out_prev = cmd;
			nd->wout = cmd;
		}
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

/* The transport's wait (nfs.h rule 3): replies, or the eventfd. */
static void
poll_once(struct nfs_dev *nd)
{
	nd->xp->ops->wait(nd->xp, nd->wake);
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
	if (nd->virt && cmd->p == NULL)
		vclock_advance_to(cmd->t_done); /* resize, GETATTR: we waited */
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
	if (nd->xp != NULL)
		nd->xp->ops->close(nd->xp);
	while ((w = nd->rec_head) != NULL) {
		nd->rec_head = w->next;
		free(w->data);
		free(w);
	}
	if (nd->wake >= 0)
		close(nd->wake);
	pthread_mutex_destroy(&nd->lock);
	free(nd->fi.server);
	free(nd->fi.export);
	free(nd->fi.path);
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
	 * at the last moment; its error has no caller to go to (rule 6).
	 * Nothing acknowledged is lost silently by that: the cache's last
	 * clio_close() of the file flushes (this COMMIT: flush_at_close)
	 * whenever anything was written back since the last flush and
	 * returns its error, so
	 * what is still kept here either was reported as failed already
	 * (this is one more try) or was written to the device directly
	 * with no flush asked for */
	if (atomic_load(&nd->n_kept) > 0)
		(void)cmd_run(nd, &cmd);
	nfs_dev_free(nd);
	dev_free(d);
}

static void
nfs_params(clio_dev *d, struct dev_params *o)
{
	struct nfs_dev *nd = d->priv;

	dev_param(o, "server", "%s", nd->fi.server);
	dev_param(o, "export", "%s", nd->fi.export);
	dev_param(o, "path", "%s", nd->fi.path);
	dev_param(o, "rtmax", "%u", nd->fi.rtmax);
	dev_param(o, "wtmax", "%u", nd->fi.wtmax);
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
		dev_param(o, "attr_mtime", "%lld.%09lld",
			  (long long)(nd->attr.mtime_ns / 1000000000),
			  (long long)(nd->attr.mtime_ns % 1000000000));
		dev_param(o, "attr_ctime", "%lld.%09lld",
			  (long long)(nd->attr.ctime_ns / 1000000000),
			  (long long)(nd->attr.ctime_ns % 1000000000));
	}
	pthread_mutex_unlock(&nd->lock);
	if (nd->xp->ops->params != NULL)
		nd->xp->ops->params(nd->xp, o);
}

static const struct dev_ops nfs_ops = {
	.scheme = "nfs",
	.io = nfs_io,
	.submit = nfs_submit,
	.resize = nfs_resize,
	.close = nfs_dev_close,
	.params = nfs_params,
	.version = dev_nfs_validator,
};

/* The same engine over the simulated server (lib/dev/nfssim.c).  No
 * submit(): each piece runs inline through io(), its reply ready before
 * the submitter goes on, so what the cache sees never depends on the
 * real-time order of threads; the simulated server still overlaps the
 * pieces, each leaving at its own t_submit. */
static const struct dev_ops nfssim_ops = {
	.scheme = "nfs+sim",
	.io = nfs_io,
	.resize = nfs_resize,
	.close = nfs_dev_close,
	.params = nfs_params,
	.version = dev_nfs_validator,
};

int
dev_nfs_validator(clio_dev *d, struct clio_validator *v)
{
	struct nfs_cmd cmd = { .kind = C_GETATTR };
	int r;

	if (d == NULL || (d->ops != &nfs_ops && d->ops != &nfssim_ops) || v == NULL)
		return -EINVAL;
	r = (int)cmd_run(d->priv, &cmd);
	if (r < 0)
		return r;
	memset(v, 0, sizeof(*v));
	v->size = cmd.attr.size;
	v->mtime_ns = cmd.attr.mtime_ns;
	v->ctime_ns = cmd.attr.ctime_ns;
	v->id = cmd.attr.fileid;
	return 0;
}

/* ------------------------------------------------------------ opening */

struct nfs_split {
	struct nfs_dev *nd;
	const char *spec;
	char *err;
	size_t errlen;
	char port[32];		/* port=N, given to libnfs as nfsport=N */
	const char *seen[32];	/* the keys so far (in the query's copy) */
	size_t nseen;
};

/* A key's name as long as its '=': port= is nfsport=. */
static size_t
key_name(const char *kv, const char **name)
{
	const char *eq = strchr(kv, '=');
	size_t len = eq != NULL ? (size_t)(eq - kv) : strlen(kv);

	*name = kv;
	if (len == 4 && strncmp(kv, "port", 4) == 0) {
		*name = "nfsport";
		len = 7;
	}
	return len;
}

/* -EINVAL if kv's key came before (libnfs would take the last one). */
static int
key_once(struct nfs_split *sp, const char *kv)
{
	const char *name, *other;
	size_t len = key_name(kv, &name), i;

	for (i = 0; i < sp->nseen; i++)
		if (key_name(sp->seen[i], &other) == len && strncmp(name, other, len) == 0) {
			set_err(sp->err, sp->errlen, "nfs: '%.*s' given twice in '%s'",
				(int)strcspn(kv, "="), kv, sp->spec);
			return -EINVAL;
		}
	if (sp->nseen == sizeof(sp->seen) / sizeof(sp->seen[0])) {
		set_err(sp->err, sp->errlen, "nfs: more than %zu keys in '%s'", sp->nseen,
			sp->spec);
		return -EINVAL;
	}
	sp->seen[sp->nseen++] = kv;
	return 0;
}

/* A key for libnfs: 0 (passed on) if libnfs 4.0 knows it and its value
 * is well formed; libnfs itself ignores unknown keys and reads a bad
 * number as 0 (uid=abc would be root). */
static int
libnfs_key_check(struct nfs_split *sp, const char *kv)
{
	static const char *const numeric[] = {
		"uid", "gid", "mountport", "nfsport", "tcp-syncnt", "debug",
		"autoreconnect", "dircache", "auto-traverse-mounts",
	};
	const char *eq = strchr(kv, '=');
	size_t klen = eq != NULL ? (size_t)(eq - kv) : strlen(kv);
	uint64_t n;
	size_t i;

	if (eq != NULL && klen == 2 && strncmp(kv, "if", 2) == 0 && eq[1] != '\0')
		return 0;
	for (i = 0; eq != NULL && i < sizeof(numeric) / sizeof(numeric[0]); i++) {
		if (strlen(numeric[i]) != klen || strncmp(kv, numeric[i], klen) != 0)
			continue;
		if (parse_uint(eq + 1, &n) < 0 || n > INT32_MAX ||
		    ((strcmp(numeric[i], "mountport") == 0 ||
		      strcmp(numeric[i], "nfsport") == 0) && (n < 1 || n > 65535))) {
			set_err(sp->err, sp->errlen, "nfs: bad %s '%s' in '%s'", numeric[i],
				eq + 1, sp->spec);
			return -EINVAL;
		}
		return 0;
	}
	set_err(sp->err, sp->errlen, "nfs: unknown key '%s' in '%s'", kv, sp->spec);
	return -EINVAL;
}

/* One pair of the URL's query: 1 if it is clio's (or port=, renamed). */
static int
nfs_take_key(void *arg, const char *kv)
{
	struct nfs_split *sp = arg;
	struct nfs_dev *nd = sp->nd;
	uint64_t n;
	int r;

	if ((r = key_once(sp, kv)) < 0)
		return r;
	if (strncmp(kv, "qd=", 3) == 0) {
		if (parse_uint(kv + 3, &n) < 0 || n < 1 || n > NFS_MAX_QD) {
			set_err(sp->err, sp->errlen, "nfs: bad qd '%s' in '%s' (1 to %d)",
				kv + 3, sp->spec, NFS_MAX_QD);
			return -EINVAL;
		}
		nd->qd = (uint32_t)n;
	} else if (strncmp(kv, "keep=", 5) == 0) {
		if (parse_size(kv + 5, &n) < 0 || n < 1 || n > (1ull << 40)) {
			set_err(sp->err, sp->errlen, "nfs: bad keep '%s' in '%s'", kv + 5,
				sp->spec);
			return -EINVAL;
		}
		nd->keep_max = n;
	} else if (strncmp(kv, "timeo=", 6) == 0) {
		if (parse_uint(kv + 6, &n) < 0 || n < 1 || n > 3600) {
			set_err(sp->err, sp->errlen, "nfs: bad timeo '%s' in '%s' (1 to 3600 s)",
				kv + 6, sp->spec);
			return -EINVAL;
		}
		nd->timeo = (int)n;
	} else if (strncmp(kv, "readahead=", 10) == 0 || strncmp(kv, "version=", 8) == 0 ||
		   strncmp(kv, "pagecache=", 10) == 0) {
		set_err(sp->err, sp->errlen, "nfs: '%s' in '%s' is not for this device "
			"(NFSv3, no readahead or page cache)", kv, sp->spec);
		return -EINVAL;
	} else if (strncmp(kv, "port=", 5) == 0) {
		if (parse_uint(kv + 5, &n) < 0 || n < 1 || n > 65535) {
			set_err(sp->err, sp->errlen, "nfs: bad port '%s' in '%s'", kv + 5,
				sp->spec);
			return -EINVAL;
		}
		snprintf(sp->port, sizeof(sp->port), "%llu", (unsigned long long)n);
	} else {
		return libnfs_key_check(sp, kv);
	}
	return 1;
}

/* Take clio's keys out of the query and name libnfs's NFS port its way. */
static int
split_url(struct nfs_dev *nd, const char *spec, char *err, size_t errlen)
{
	struct nfs_split sp = { nd, spec, err, errlen, "", { NULL }, 0 };
	char *url, *out;
	int r;

	nd->qd = NFS_DEFAULT_QD;
	nd->keep_max = NFS_DEFAULT_KEEP;
	nd->timeo = NFS_DEFAULT_TIMEO;
	if ((r = uri_take_query(spec, nfs_take_key, &sp, &url)) < 0)
		return r;
	if (sp.port[0] != '\0') {
		size_t len = strlen(url) + strlen(sp.port) + 16;

		if ((out = malloc(len)) == NULL) {
			free(url);
			return -ENOMEM;
		}
		snprintf(out, len, "%s%cnfsport=%s", url, strchr(url, '?') ? '&' : '?',
			 sp.port);
		free(url);
		url = out;
	}
	nd->url = url;
	return 0;
}

int
nfs_url_check(const char *url, int *timeo, char *err, size_t errlen)
{
	struct nfs_dev nd = { 0 };
	int r;

	r = split_url(&nd, url, err, errlen);
	if (r < 0)
		return r;
	free(nd.url);
	if (timeo != NULL)
		*timeo = nd.timeo;
	return 0;
}

/* sim_opts NULL: a real server through libnfs (spec is the URL); else the
 * simulated server of lib/dev/nfssim.c with those options. */
static int
nfs_open_common(const char *spec, const char *sim_opts, int flags,
		clio_dev **dp, char *err, size_t errlen)
{
	struct nfs_dev *nd = calloc(1, sizeof(*nd));
	clio_dev *d = NULL;
	int r;

	if (nd == NULL)
		return -ENOMEM;
	nd->wake = -1;
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
	r = sim_opts != NULL ? split_url(nd, "", err, errlen)
			     : split_url(nd, spec, err, errlen);
	if (r < 0)
		goto fail;
	r = dev_alloc(sim_opts != NULL ? &nfssim_ops : &nfs_ops, spec, &d);
	if (r < 0)
		goto fail;
	d->priv = nd;
	nd->d = d;
	if (sim_opts != NULL)
		r = nfs_sim_open(spec, sim_opts, flags, &nd->xp, &nd->fi, err, errlen);
	else
		r = nfs_libnfs_open(spec, nd->url, flags, nd->timeo, &nd->xp, &nd->fi,
				    err, errlen);
	if (r < 0)
		goto fail;
	nd->virt = nd->fi.is_virtual;
	if (nd->fi.qd > 0)
		nd->qd = MIN(nd->fi.qd, NFS_MAX_QD);
	nd->xp->reply = xp_reply;
	nd->xp->arg = nd;
	d->size = nd->fi.size;
	if (nd->keep_max < nd->fi.wtmax)
		nd->keep_max = nd->fi.wtmax;
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
	d->maxio = MIN(nd->fi.rtmax, nd->fi.wtmax);
	d->queue_depth = nd->qd;
	d->readonly = (flags & CLIO_DEV_RDONLY) != 0;
	d->is_virtual = nd->virt;
	d->flush_at_close = true;
	snprintf(d->engine, sizeof(d->engine), nd->virt ?
		 "simulated NFSv3 server (virtual clock, qd %u)" : "libnfs (NFSv3, qd %u)",
		 nd->qd);
	*dp = d;
	return 0;
fail:
	nfs_dev_free(nd);
	if (d != NULL)
		dev_free(d);
	return r;
}

int
dev_nfs_open(const char *spec, int flags, clio_dev **dp, char *err,
	     size_t errlen)
{
	return nfs_open_common(spec, NULL, flags, dp, err, errlen);
}

int
dev_nfssim_open(const char *spec, int flags, clio_dev **dp, char *err,
		size_t errlen)
{
	return nfs_open_common(spec, spec + strlen("nfs+sim:"), flags, dp, err,
			       errlen);
}
