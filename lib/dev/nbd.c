/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nbd.c - the NBD client backend: `nbd://HOST[:PORT]/EXPORT`,
 * `nbd+unix:///EXPORT?socket=PATH` (and the nbds forms with TLS, whose
 * tls-certificates=DIR and tls-psk-file=FILE may name local files),
 * libnbd's URIs, with three query keys of clio's own that are taken out before the
 * URI goes to nbd_connect_uri (any other key must be one of libnbd's:
 * libnbd ignores what it does not know, so clio refuses an unknown key,
 * and any key given twice, naming it): `qd=N` (requests in flight on a
 * connection, default 16), `conns=N` (connections, default 1; more
 * only when the server offers multi-conn, and as many of them as the
 * server takes: a connection after the first that fails is left out)
 * and `timeout=S` (seconds, default 0: none, as NBD itself has none).
 *
 * The timeout: a connection with commands in flight that has had no
 * reply for S seconds (a server that hangs, or was stopped) is cut by
 * its thread with shutdown(2) on its socket; libnbd then finds the
 * connection closed and fails every command in flight, which complete
 * with ETIMEDOUT, as does every command started on it later.  The clock
 * runs from the last reply, or from the start of a command when none
 * was in flight.  The handshake at open and the synchronous calls of
 * threading rule 4 have no deadline.
 *
 * What the server says is the device: its size (fixed), read-only
 * (nbd_is_read_only), the minimum block size as the sector size (512
 * when the server allows less), the maximum as maxio (at most 32 MiB,
 * NBD's portable limit).  A flush is NBD_CMD_FLUSH when the server can
 * flush; otherwise it succeeds at once and clio info shows can_flush=0
 * (such a server offers no way to make writes durable).  A trim and a
 * zeroing (clio_dev_discard, clio_dev_write_zeroes) are NBD_CMD_TRIM and
 * NBD_CMD_WRITE_ZEROES where the server offers them (can_trim, can_zero).
 *
 * An export whose size is no multiple of its minimum block size (odd):
 * a client that asked for the block sizes with NBD_OPT_GO MUST keep to
 * them, and no request may end past the size, so its last bytes (the
 * tail, from the size rounded down to the minimum) are out of reach.  A
 * client that did not ask is bound to nothing, and the server MUST then
 * fail a request it cannot serve cleanly.  So the first connection that
 * finds an odd export is made again, and so are the later ones: they
 * learn the sizes with NBD_OPT_INFO, which commits to nothing, enter
 * NBD_OPT_GO without asking for them, keep every request to the
 * minimum but those of the tail, which go as they are (a piece across
 * the tail's start is cut there, a short count), and open reads the
 * tail once: a server that refuses it fails the open, with the sizes.
 *
 * Threading model:
 *  1. Each connection has one libnbd handle and one thread that drives
 *     it (conn_main): poll(2) on the handle's socket, in the direction
 *     libnbd asks for, and on the connection's eventfd; then
 *     nbd_aio_notify_read/write.  Submitters start commands from their
 *     own threads (nbd_aio_pread/pwrite/flush take the handle's lock);
 *     one that leaves libnbd wanting to write wakes the thread.
 *  2. libnbd calls the completion callbacks (cmd_callback) with its lock
 *     held, in whatever thread moved the handle: they call no nbd_* and
 *     no device layer, only queue the command on c->done under c->lock
 *     (waking the thread from another thread).  The connection's thread
 *     completes queued commands with dev_piece_done() holding no lock.
 *     Lock order: libnbd's handle lock, then c->lock; nothing calls
 *     libnbd holding c->lock.
 *  3. A command of submit() is completed exactly once: by its callback,
 *     or, when libnbd refuses to start it, by queueing it with the error.
 *  4. io() (synchronous pieces, dev.h rule 5) starts the command and
 *     waits for its callback; called on a connection's own thread (from
 *     a completion), it uses libnbd's synchronous calls instead, which
 *     drive the handle in that thread.
 *  5. close() runs with nothing outstanding (dev.h rule 6): it stops the
 *     threads, then shuts each connection down (NBD_CMD_DISC, the
 *     server's close awaited 2 s at most) and closes it.
 * A piece of several iovecs goes through one bounce buffer, so that one
 * piece is one NBD command, unless they lie end to end in memory (one
 * buffer, then, read and written in place).
 */
#include <errno.h>
#include <libnbd.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#define NBD_DEFAULT_QD 16
#define NBD_MAX_QD 1024
#define NBD_MAX_CONNS 16
#define NBD_MAXIO_LIMIT (32u << 20)
#define NBD_MAX_TIMEOUT 3600

struct nbd_dev;

struct nbd_cmd {
	struct dev_io *p;	/* NULL: a trim or zero of discard() */
	bool zero;		/* discard(): NBD_CMD_WRITE_ZEROES, else TRIM */
	uint64_t off;		/* discard(): the range */
	struct nbd_conn *c;
	size_t len;		/* of p moved by this command (odd exports) */
	void *bounce;		/* several iovecs: the data in one buffer */
	int err;		/* errno from libnbd, 0 on success */
	struct nbd_cmd *next;	/* c->done */
	/* io(): the waiter, instead of c->done */
	bool sync, finished;
	pthread_mutex_t *m;
	pthread_cond_t *cv;
};

struct nbd_conn {
	struct nbd_dev *nd;
	struct nbd_handle *h;
	int wake;		/* eventfd */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;	/* done, stop */
	struct nbd_cmd *done_head, *done_tail;
	bool stop;
	/* the timeout (the header), under lock: commands in flight, when
	 * the connection last made progress, and whether it was cut */
	unsigned inflight;
	double progress;
	atomic_bool timed_out;
	/* NBD_OPT_INFO's block sizes (0: none), and whether NBD_OPT_GO went
	 * without asking for them (an odd export) */
	int64_t info_min, info_pref, info_max;
	bool odd;
};

struct nbd_dev {
	char *uri;		/* what libnbd connects to */
	struct nbd_conn *conns;
	int nconns, conns_asked;
	uint32_t qd;
	int timeout;		/* seconds without a reply; 0: none */
	atomic_uint next;	/* round robin over the connections */
	int64_t bmin, bpref, bmax;
	bool odd;		/* an odd export (the header) */
	bool odd_handshake;	/* connect with conn_connect_odd */
	uint64_t tail;		/* where its tail starts (may be 0) */
	bool can_flush, can_fua, can_multi_conn, can_trim, can_zero, server_ro;
};

/* The connection whose thread this is (threading rule 4). */
static _Thread_local struct nbd_conn *driving;

static void
conn_wake(struct nbd_conn *c)
{
	uint64_t one = 1;

	while (write(c->wake, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/* Threading rule 2: queue a finished command for the connection's thread. */
static void
conn_queue_done(struct nbd_conn *c, struct nbd_cmd *cmd)
{
	cmd->next = NULL;
	pthread_mutex_lock(&c->lock);
	if (c->done_tail != NULL)
		c->done_tail->next = cmd;
	else
		c->done_head = cmd;
	c->done_tail = cmd;
	pthread_mutex_unlock(&c->lock);
	if (driving != c)
		conn_wake(c);
}

static int
cmd_callback(void *arg, int *error)
{
	struct nbd_cmd *cmd = arg;
	struct nbd_conn *c = cmd->c;

	cmd->err = *error;
	pthread_mutex_lock(&c->lock);
	c->inflight--;
	c->progress = now_fast();
	pthread_mutex_unlock(&c->lock);
	if (cmd->err != 0 && atomic_load(&c->timed_out))
		cmd->err = ETIMEDOUT;
	if (cmd->sync) {
		pthread_mutex_lock(cmd->m);
		cmd->finished = true;
		pthread_cond_signal(cmd->cv);
		pthread_mutex_unlock(cmd->m);
	} else {
		conn_queue_done(cmd->c, cmd);
	}
	return 1; /* retire the command */
}

/* The errno of the last libnbd call that failed on h: ENOTCONN once the
 * connection is gone (libnbd says EINVAL, the handle's state). */
static int
nbd_errno_of(struct nbd_handle *h)
{
	int e = nbd_get_errno();

	if (h != NULL && (nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1))
		return ENOTCONN;
	return e > 0 ? e : EIO;
}

static int
nbd_errno(void)
{
	return nbd_errno_of(NULL);
}

/* The buffer of a piece: its iovecs when they lie end to end in memory,
 * or a bounce (filled for a write). */
static void *
cmd_buffer(struct nbd_cmd *cmd)
{
	struct dev_io *p = cmd->p;
	void *flat = iov_flat(p->iov, p->iovcnt);

	if (flat != NULL)
		return flat;
	cmd->bounce = malloc(cmd->len ? cmd->len : 1);
	if (cmd->bounce != NULL && p->op == CLIO_OP_WRITE)
		iov_to_buf(p->iov, p->iovcnt, 0, cmd->bounce, cmd->len);
	return cmd->bounce;
}

/* The bytes of p one command moves: all, but on an odd export a piece
 * across the tail's start stops there (the device layer issues the rest
 * again, dev.h rule 3), so that only the tail is unaligned. */
static size_t
cmd_len(const struct nbd_dev *nd, const struct dev_io *p)
{
	if (nd->odd && p->op != CLIO_OP_FLUSH && p->off < nd->tail &&
	    p->off + p->len > nd->tail)
		return (size_t)(nd->tail - p->off);
	return p->len;
}

/* Start cmd's command with a completion callback: 0, 1 when it is done
 * already (a flush the server cannot do), or -errno. */
static int
cmd_start(struct nbd_cmd *cmd)
{
	struct nbd_conn *c = cmd->c;
	struct dev_io *p = cmd->p;
	nbd_completion_callback cb = { .callback = cmd_callback,
				       .user_data = cmd };
	int64_t cookie;
	void *buf = NULL;

	if (p != NULL && p->op == CLIO_OP_FLUSH && !c->nd->can_flush)
		return 1;
	if (p != NULL && p->op != CLIO_OP_FLUSH && (buf = cmd_buffer(cmd)) == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	if (c->inflight++ == 0)
		c->progress = now_fast();
	pthread_mutex_unlock(&c->lock);
	if (p == NULL) {
		cookie = cmd->zero ? nbd_aio_zero(c->h, cmd->len, cmd->off, cb, 0)
				   : nbd_aio_trim(c->h, cmd->len, cmd->off, cb, 0);
	} else if (p->op == CLIO_OP_FLUSH) {
		cookie = nbd_aio_flush(c->h, cb, 0);
	} else {
		if (p->op == CLIO_OP_READ)
			cookie = nbd_aio_pread(c->h, buf, cmd->len, p->off, cb, 0);
		else
			cookie = nbd_aio_pwrite(c->h, buf, cmd->len, p->off, cb, 0);
	}
	if (cookie == -1) {
		int e = nbd_errno_of(c->h);

		pthread_mutex_lock(&c->lock);
		c->inflight--;
		pthread_mutex_unlock(&c->lock);
		if (e == ENOTCONN && atomic_load(&c->timed_out))
			e = ETIMEDOUT;
		free(cmd->bounce);
		cmd->bounce = NULL;
		return -e;
	}
	return 0;
}

/* The result of a finished command, its read data copied out. */
static ssize_t
cmd_finish(struct nbd_cmd *cmd)
{
	struct dev_io *p = cmd->p;
	ssize_t r;

	if (cmd->err != 0)
		r = -cmd->err;
	else
		r = p == NULL || p->op == CLIO_OP_FLUSH ? 0 : (ssize_t)cmd->len;
	if (r > 0 && p->op == CLIO_OP_READ && cmd->bounce != NULL)
		buf_to_iov(p->iov, p->iovcnt, 0, cmd->bounce, cmd->len);
	free(cmd->bounce);
	cmd->bounce = NULL;
	return r;
}

static struct nbd_conn *
pick_conn(struct nbd_dev *nd)
{
	unsigned k = atomic_fetch_add_explicit(&nd->next, 1, memory_order_relaxed);

	return &nd->conns[k % (unsigned)nd->nconns];
}

static void
nbd_submit(clio_dev *d, struct dev_io *p)
{
	struct nbd_dev *nd = d->priv;
	struct nbd_conn *c = pick_conn(nd);
	struct nbd_cmd *cmd = calloc(1, sizeof(*cmd));
	int r;

	if (cmd == NULL) {
		dev_piece_defer(p); /* io() on the pool */
		return;
	}
	cmd->p = p;
	cmd->c = c;
	cmd->len = cmd_len(nd, p);
	r = cmd_start(cmd);
	if (r != 0) {
		cmd->err = r < 0 ? -r : 0;
		conn_queue_done(c, cmd);
		return;
	}
	if (nbd_aio_get_direction(c->h) & LIBNBD_AIO_DIRECTION_WRITE)
		conn_wake(c);
}

/* Start cmd (.sync, with its m and cv) and wait for its callback. */
static ssize_t
cmd_run(struct nbd_cmd *cmd)
{
	int r = cmd_start(cmd);

	if (r < 0)
		return r;
	if (r == 0) {
		if (nbd_aio_get_direction(cmd->c->h) & LIBNBD_AIO_DIRECTION_WRITE)
			conn_wake(cmd->c);
		pthread_mutex_lock(cmd->m);
		while (!cmd->finished)
			pthread_cond_wait(cmd->cv, cmd->m);
		pthread_mutex_unlock(cmd->m);
	}
	pthread_mutex_destroy(cmd->m);
	pthread_cond_destroy(cmd->cv);
	return cmd_finish(cmd);
}

/* Threading rule 4. */
static ssize_t
nbd_io(clio_dev *d, struct dev_io *p)
{
	struct nbd_dev *nd = d->priv;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	struct nbd_cmd cmd = { .p = p, .len = cmd_len(nd, p), .sync = true,
			       .m = &m, .cv = &cv };

	cmd.c = pick_conn(nd);
	if (driving != NULL) {
		void *buf = NULL;

		if (p->op == CLIO_OP_FLUSH) {
			if (nd->can_flush && nbd_flush(cmd.c->h, 0) == -1)
				cmd.err = nbd_errno_of(cmd.c->h);
		} else if ((buf = cmd_buffer(&cmd)) == NULL) {
			return -ENOMEM;
		} else if ((p->op == CLIO_OP_READ
				    ? nbd_pread(cmd.c->h, buf, cmd.len, p->off, 0)
				    : nbd_pwrite(cmd.c->h, buf, cmd.len, p->off, 0)) == -1) {
			cmd.err = nbd_errno_of(cmd.c->h);
		}
		return cmd_finish(&cmd);
	}
	return cmd_run(&cmd);
}

/* Rule 9 of dev.h: NBD_CMD_TRIM, or NBD_CMD_WRITE_ZEROES (which may
 * punch a hole), where the server offers it; in commands of at most 1 GiB
 * (NBD's length is 32 bits), one after the other.  A range that is not
 * whole minimum blocks, or reaches into an odd export's tail, is refused
 * for a zeroing (the device layer writes it) and cut to the blocks
 * inside it for a trim, which promises nothing. */
static int
nbd_dev_discard(clio_dev *d, uint64_t off, uint64_t len, bool zero)
{
	struct nbd_dev *nd = d->priv;
	uint64_t sec = d->sector, end = off + len, lo, hi;

	if (zero ? !nd->can_zero : !nd->can_trim)
		return -ENOTSUP;
	if (nd->odd && end > nd->tail) {
		if (zero && len > 0)
			return -ENOTSUP;
		end = MAX(off, nd->tail);
	}
	lo = (off + sec - 1) / sec * sec;
	hi = end / sec * sec;
	if (zero && len > 0 && (lo != off || hi != end))
		return -ENOTSUP;
	while (lo < hi) {
		pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
		struct nbd_cmd cmd = { .zero = zero, .off = lo, .sync = true,
				       .m = &m, .cv = &cv };
		int r;

		cmd.len = (size_t)MIN(hi - lo, (uint64_t)1 << 30);
		cmd.c = pick_conn(nd);
		if (driving != NULL) { /* threading rule 4 */
			if ((zero ? nbd_zero(cmd.c->h, cmd.len, lo, 0)
				  : nbd_trim(cmd.c->h, cmd.len, lo, 0)) == -1)
				return -nbd_errno_of(cmd.c->h);
		} else if ((r = (int)cmd_run(&cmd)) < 0) {
			return r;
		}
		lo += cmd.len;
	}
	return 0;
}

/* Complete what the callbacks queued (threading rule 2); false once the
 * connection is to stop.  A completion may start pieces whose commands
 * this thread queues at once (a dead handle refuses them) without a
 * wake: the queue is taken again until it is empty, or poll(2) would
 * wait for them forever. */
static bool
conn_dispatch(struct nbd_conn *c)
{
	struct nbd_cmd *list, *cmd;
	bool stop;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		list = c->done_head;
		c->done_head = c->done_tail = NULL;
		stop = c->stop;
		pthread_mutex_unlock(&c->lock);
		if (list == NULL)
			return !stop;
		while ((cmd = list) != NULL) {
			struct dev_io *p = cmd->p;
			ssize_t r;

			list = cmd->next;
			r = cmd_finish(cmd);
			free(cmd);
			dev_piece_done(p, r);
		}
	}
}

/* The timeout (the header): cut a connection that had no reply for
 * nd->timeout seconds with commands in flight.  Returns how long poll(2)
 * may wait before the next look, ms (-1: for ever). */
static int
conn_deadline(struct nbd_conn *c)
{
	double left;
	unsigned inflight;
	int fd;

	if (c->nd->timeout <= 0 || atomic_load(&c->timed_out))
		return -1;
	pthread_mutex_lock(&c->lock);
	inflight = c->inflight;
	left = c->progress + c->nd->timeout - now_fast();
	pthread_mutex_unlock(&c->lock);
	if (inflight == 0)
		return c->nd->timeout * 1000; /* a start wakes the thread, or not */
	if (left > 0)
		return (int)(left * 1000) + 1;
	atomic_store(&c->timed_out, true);
	if ((fd = nbd_aio_get_fd(c->h)) >= 0)
		(void)shutdown(fd, SHUT_RDWR);
	return -1;
}

static void *
conn_main(void *arg)
{
	struct nbd_conn *c = arg;

	driving = c;
	while (conn_dispatch(c)) {
		int wait_ms = conn_deadline(c);
		struct pollfd fds[2] = { { c->wake, POLLIN, 0 }, { -1, 0, 0 } };
		int dir = nbd_aio_get_direction(c->h), nfds = 1;
		uint64_t n;

		if (!nbd_aio_is_dead(c->h) && !nbd_aio_is_closed(c->h) &&
		    (fds[1].fd = nbd_aio_get_fd(c->h)) >= 0) {
			fds[1].events = (short)(((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
						((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0));
			nfds = 2;
		}
		if (poll(fds, (nfds_t)nfds, wait_ms) < 0)
			continue; /* EINTR */
		if (fds[0].revents & POLLIN)
			(void)!read(c->wake, &n, sizeof(n));
		if (nfds < 2 || fds[1].revents == 0)
			continue;
		/* libnbd: ask for the direction again, another thread may
		 * have moved the handle; an error kills the handle, whose
		 * commands then complete with it */
		dir = nbd_aio_get_direction(c->h);
		if ((dir & LIBNBD_AIO_DIRECTION_READ) &&
		    (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
			(void)nbd_aio_notify_read(c->h);
		else if ((dir & LIBNBD_AIO_DIRECTION_WRITE) &&
			 (fds[1].revents & (POLLOUT | POLLHUP | POLLERR)))
			(void)nbd_aio_notify_write(c->h);
	}
	driving = NULL;
	return NULL;
}

/* NBD_CMD_DISC, and the server's close awaited for a while at most: a
 * server that hangs must not hang close(). */
static void
conn_shutdown(struct nbd_conn *c)
{
	double until = now_monotonic() + 2.0;

	if (nbd_aio_is_ready(c->h) != 1 || nbd_aio_disconnect(c->h, 0) == -1)
		return;
	while (nbd_aio_is_closed(c->h) != 1 && nbd_aio_is_dead(c->h) != 1 &&
	       now_monotonic() < until)
		if (nbd_poll(c->h, 100) == -1)
			break;
}

static void
nbd_dev_free(struct nbd_dev *nd)
{
	int i;

	for (i = 0; i < nd->nconns; i++) {
		struct nbd_conn *c = &nd->conns[i];

		if (c->started) {
			pthread_mutex_lock(&c->lock);
			c->stop = true;
			pthread_mutex_unlock(&c->lock);
			conn_wake(c);
			pthread_join(c->thread, NULL);
		}
	}
	for (i = 0; i < nd->nconns; i++) {
		struct nbd_conn *c = &nd->conns[i];

		if (c->h != NULL) {
			conn_shutdown(c);
			nbd_close(c->h);
		}
		if (c->wake >= 0)
			close(c->wake);
		pthread_mutex_destroy(&c->lock);
	}
	free(nd->conns);
	free(nd->uri);
	free(nd);
}

static void
nbd_dev_close(clio_dev *d)
{
	nbd_dev_free(d->priv);
	dev_free(d);
}

static void
nbd_params(clio_dev *d, struct dev_params *o)
{
	struct nbd_dev *nd = d->priv;

	dev_param(o, "uri", "%s", nd->uri);
	dev_param(o, "export_size", "%llu", (unsigned long long)d->size);
	dev_param(o, "block_min", "%lld", (long long)nd->bmin);
	dev_param(o, "block_preferred", "%lld", (long long)nd->bpref);
	dev_param(o, "block_max", "%lld", (long long)nd->bmax);
	if (nd->odd)
		dev_param(o, "unaligned_tail", "%llu",
			  (unsigned long long)(d->size - nd->tail));
	dev_param(o, "read_only", "%d", nd->server_ro);
	dev_param(o, "can_flush", "%d", nd->can_flush);
	dev_param(o, "can_fua", "%d", nd->can_fua);
	dev_param(o, "can_multi_conn", "%d", nd->can_multi_conn);
	dev_param(o, "can_trim", "%d", nd->can_trim);
	dev_param(o, "can_zero", "%d", nd->can_zero);
	dev_param(o, "connections", "%d", nd->nconns);
	if (nd->conns_asked != nd->nconns)
		dev_param(o, "connections_asked", "%d", nd->conns_asked);
	dev_param(o, "qd", "%u", nd->qd);
	dev_param(o, "timeout", "%d", nd->timeout);
}

static const struct dev_ops nbd_ops = {
	.scheme = "nbd",
	.io = nbd_io,
	.submit = nbd_submit,
	.resize = NULL,
	.close = nbd_dev_close,
	.params = nbd_params,
	.discard = nbd_dev_discard,
};

struct nbd_split {
	struct nbd_dev *nd;
	const char *spec;
	char *err;
	size_t errlen;
	unsigned seen;		/* bit i: query_keys[i] was given */
};

/* The query keys a URI may hold: clio's three, then libnbd's (passed on
 * to nbd_connect_uri, which ignores what it does not know, so that a
 * misspelt key would be dropped without a word). */
static const char *const query_keys[] = {
	"qd", "conns", "timeout",
	"socket", "tls-certificates", "tls-psk-file", "tls-verify-peer",
	"tls-hostname",
};
#define CLIO_QUERY_KEYS 3

/* One pair of the URI's query: 1 if it is clio's (qd=, conns=,
 * timeout=), 0 if libnbd's; an unknown key, or one given twice, is an
 * error naming it. */
static int
nbd_take_key(void *arg, const char *kv)
{
	struct nbd_split *sp = arg;
	size_t klen = strcspn(kv, "=");
	unsigned i, nkeys = sizeof(query_keys) / sizeof(query_keys[0]);
	uint64_t n;

	for (i = 0; i < nkeys; i++)
		if (strlen(query_keys[i]) == klen && strncmp(kv, query_keys[i], klen) == 0)
			break;
	if (i == nkeys) {
		char known[128] = "";

		for (i = 0; i < nkeys; i++)
			snprintf(known + strlen(known), sizeof(known) - strlen(known),
				 "%s%s", i ? ", " : "", query_keys[i]);
		set_err(sp->err, sp->errlen, "nbd: unknown key '%.*s' in '%s' (%s)",
			(int)klen, kv, sp->spec, known);
		return -EINVAL;
	}
	if (sp->seen & (1u << i)) {
		set_err(sp->err, sp->errlen, "nbd: '%s' given twice in '%s'",
			query_keys[i], sp->spec);
		return -EINVAL;
	}
	sp->seen |= 1u << i;
	if (i >= CLIO_QUERY_KEYS)
		return 0;
	if (strncmp(kv, "qd=", 3) == 0) {
		if (parse_uint(kv + 3, &n) < 0 || n < 1 || n > NBD_MAX_QD) {
			set_err(sp->err, sp->errlen, "nbd: bad qd '%s' in '%s' (1 to %d)",
				kv + 3, sp->spec, NBD_MAX_QD);
			return -EINVAL;
		}
		sp->nd->qd = (uint32_t)n;
		return 1;
	}
	if (strncmp(kv, "conns=", 6) == 0) {
		if (parse_uint(kv + 6, &n) < 0 || n < 1 || n > NBD_MAX_CONNS) {
			set_err(sp->err, sp->errlen, "nbd: bad conns '%s' in '%s' (1 to %d)",
				kv + 6, sp->spec, NBD_MAX_CONNS);
			return -EINVAL;
		}
		sp->nd->conns_asked = (int)n;
		return 1;
	}
	if (strncmp(kv, "timeout=", 8) == 0) {
		if (parse_uint(kv + 8, &n) < 0 || n > NBD_MAX_TIMEOUT) {
			set_err(sp->err, sp->errlen,
				"nbd: bad timeout '%s' in '%s' (0 to %d s, 0: none)",
				kv + 8, sp->spec, NBD_MAX_TIMEOUT);
			return -EINVAL;
		}
		sp->nd->timeout = (int)n;
		return 1;
	}
	set_err(sp->err, sp->errlen, "nbd: '%s' in '%s' needs a value", query_keys[i], sp->spec);
	return -EINVAL;
}

/* Take clio's keys out of the URI's query; the rest goes to libnbd. */
static int
split_uri(struct nbd_dev *nd, const char *spec, char *err, size_t errlen)
{
	struct nbd_split sp = { nd, spec, err, errlen, 0 };

	nd->qd = NBD_DEFAULT_QD;
	nd->conns_asked = 1;
	return uri_take_query(spec, nbd_take_key, &sp, &nd->uri);
}

/* The handshake of an odd export (the header): NBD_OPT_INFO learns the
 * block sizes without committing to them, then NBD_OPT_GO goes without
 * asking for them.  A server that offers no options (or no NBD_OPT_INFO)
 * goes the usual way, bound to its minimum (read_export refuses that). */
static int
conn_connect_odd(struct nbd_conn *c, const char *spec, char *err, size_t errlen)
{
	struct nbd_handle *h = c->h;
	int r;

	if (nbd_set_opt_mode(h, true) == -1 || nbd_connect_uri(h, c->nd->uri) == -1)
		goto fail;
	if (nbd_aio_is_negotiating(h) != 1)
		return 0;
	if (nbd_opt_info(h) == 0) {
		int64_t size = nbd_get_size(h);

		c->info_min = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM);
		c->info_pref = nbd_get_block_size(h, LIBNBD_SIZE_PREFERRED);
		c->info_max = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
		if (size > 0 && c->info_min > 1 && size % c->info_min != 0) {
			c->odd = true;
			if (nbd_set_request_block_size(h, false) == -1 ||
			    nbd_set_strict_mode(h, nbd_get_strict_mode(h) &
						       ~LIBNBD_STRICT_ALIGN) == -1)
				goto fail;
		}
	}
	if (nbd_opt_go(h) == 0)
		return 0;
	if (c->odd) { /* -ENOTSUP: the export is fine, this client cannot */
		int64_t size = nbd_get_size(h);

		set_err(err, errlen,
			"%s: export size %lld is not a multiple of the server's minimum block size %lld, "
			"and the server serves only clients bound to it, which cannot reach its last %lld bytes (%s)",
			spec, (long long)size, (long long)c->info_min,
			(long long)(size % c->info_min), nbd_get_error());
		return -ENOTSUP;
	}
fail:
	r = nbd_errno_of(h);
	set_err(err, errlen, "%s: %s", spec, nbd_get_error());
	return -r;
}

/* A handle for c, connected: the usual handshake (bound to the block
 * sizes), unless it shows an odd export, which is connected again with
 * conn_connect_odd (and so are the device's later connections). */
static int
conn_connect(struct nbd_conn *c, const char *spec, char *err, size_t errlen)
{
	struct nbd_dev *nd = c->nd;
	int64_t size, min;
	int r;

	for (;;) {
		c->h = nbd_create();
		if (c->h == NULL) {
			r = nbd_errno();
			set_err(err, errlen, "%s: %s", spec, nbd_get_error());
			return -r;
		}
		(void)nbd_set_pread_initialize(c->h, false);
		/* the URI is the user's own: its tls-certificates and
		 * tls-psk-file may name local files (libnbd denies them) */
		(void)nbd_set_uri_allow_local_file(c->h, true);
		if (nd->odd_handshake)
			return conn_connect_odd(c, spec, err, errlen);
		if (nbd_connect_uri(c->h, nd->uri) == -1) {
			r = nbd_errno();
			set_err(err, errlen, "%s: %s", spec, nbd_get_error());
			return -r;
		}
		size = nbd_get_size(c->h);
		min = nbd_get_block_size(c->h, LIBNBD_SIZE_MINIMUM);
		if (!(size > 0 && min > 1 && size % min != 0))
			return 0;
		nd->odd_handshake = true;
		conn_shutdown(c);
		nbd_close(c->h);
		c->h = NULL;
	}
}

/* An odd export's tail, read once at open: the server serves it, or the
 * open fails saying why. */
static int
probe_tail(clio_dev *d, struct nbd_dev *nd, const char *spec, char *err,
	   size_t errlen)
{
	struct nbd_handle *h = nd->conns[0].h;
	size_t n = (size_t)(d->size - nd->tail);
	void *buf = malloc(n);
	int r = 0;

	if (buf == NULL)
		return -ENOMEM;
	if (nbd_pread(h, buf, n, nd->tail, 0) == -1) {
		r = -ENOTSUP;
		set_err(err, errlen,
			"%s: export size %llu is not a multiple of the server's minimum block size %lld, "
			"and the server refuses a read of its last %zu bytes (%s); "
			"NBD allows no request past the end of an export",
			spec, (unsigned long long)d->size, (long long)nd->bmin, n,
			strerror(nbd_errno_of(h)));
	}
	free(buf);
	return r;
}

/* What the server says about the export (the first connection). */
static int
read_export(clio_dev *d, struct nbd_dev *nd, const char *spec, char *err,
	    size_t errlen)
{
	struct nbd_handle *h = nd->conns[0].h;
	int64_t size = nbd_get_size(h);

	if (size < 0) {
		int r = nbd_errno();
		set_err(err, errlen, "%s: %s", spec, nbd_get_error());
		return -r;
	}
	d->size = (uint64_t)size;
	nd->server_ro = nbd_is_read_only(h) == 1;
	nd->can_flush = nbd_can_flush(h) == 1;
	nd->can_fua = nbd_can_fua(h) == 1;
	nd->can_multi_conn = nbd_can_multi_conn(h) == 1;
	nd->can_trim = nbd_can_trim(h) == 1;
	nd->can_zero = nbd_can_zero(h) == 1;
	nd->bmin = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM);
	nd->bpref = nbd_get_block_size(h, LIBNBD_SIZE_PREFERRED);
	nd->bmax = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
	if (nd->conns[0].odd) { /* NBD_OPT_GO did not ask: NBD_OPT_INFO's */
		nd->bmin = nd->conns[0].info_min;
		nd->bpref = nd->conns[0].info_pref;
		nd->bmax = nd->conns[0].info_max;
	}
	d->sector = nd->bmin > 512 ? (uint32_t)nd->bmin : 512;
	d->aligned_only = d->sector > 512;
	d->maxio = nd->bmax > 0 && nd->bmax < NBD_MAXIO_LIMIT ? (uint32_t)nd->bmax
							      : NBD_MAXIO_LIMIT;
	if (d->sector > d->maxio) {
		set_err(err, errlen, "%s: minimum block size %lld above the maximum %u",
			spec, (long long)nd->bmin, d->maxio);
		return -EINVAL;
	}
	if (nd->bmin > 1 && d->size % (uint64_t)nd->bmin != 0) {
		if (!nd->conns[0].odd) { /* no NBD_OPT_INFO: bound to the minimum */
			set_err(err, errlen,
				"%s: export size %llu is not a multiple of the server's minimum block size %lld, "
				"which binds this client (the server has no NBD_OPT_INFO): its last %llu bytes are out of reach",
				spec, (unsigned long long)d->size, (long long)nd->bmin,
				(unsigned long long)(d->size % (uint64_t)nd->bmin));
			return -ENOTSUP;
		}
		nd->odd = true;
		nd->tail = d->size - d->size % (uint64_t)nd->bmin;
		return probe_tail(d, nd, spec, err, errlen);
	}
	return 0;
}

int
dev_nbd_open(const char *spec, int flags, clio_dev **dp, char *err,
	     size_t errlen)
{
	struct nbd_dev *nd = calloc(1, sizeof(*nd));
	clio_dev *d = NULL;
	int i, r;

	if (nd == NULL)
		return -ENOMEM;
	atomic_init(&nd->next, 0);
	r = split_uri(nd, spec, err, errlen);
	if (r < 0) {
		free(nd);
		return r;
	}
	nd->conns = calloc(NBD_MAX_CONNS, sizeof(*nd->conns));
	if (nd->conns == NULL) {
		free(nd->uri);
		free(nd);
		return -ENOMEM;
	}
	r = dev_alloc(&nbd_ops, spec, &d);
	if (r < 0)
		goto fail;
	d->priv = nd;
	for (i = 0; i < nd->conns_asked; i++) {
		struct nbd_conn *c = &nd->conns[i];

		c->nd = nd;
		c->wake = -1;
		pthread_mutex_init(&c->lock, NULL);
		atomic_init(&c->timed_out, false);
		nd->nconns = i + 1;
		r = conn_connect(c, spec, err, errlen);
		if (r < 0 && i > 0) {
			/* a server that takes fewer connections than asked
			 * (nbdkit's limit filter): those it took */
			if (c->h != NULL)
				nbd_close(c->h);
			c->h = NULL;
			pthread_mutex_destroy(&c->lock);
			nd->nconns = i;
			if (err != NULL && errlen > 0)
				err[0] = '\0';
			break;
		}
		if (r < 0)
			goto fail;
		if (i > 0 && nbd_get_size(c->h) != (int64_t)d->size) {
			set_err(err, errlen, "%s: connection %d has size %lld, the first %llu",
				spec, i + 1, (long long)nbd_get_size(c->h),
				(unsigned long long)d->size);
			r = -EIO;
			goto fail;
		}
		if (i == 0) {
			r = read_export(d, nd, spec, err, errlen);
			if (r < 0)
				goto fail;
			if (!nd->can_multi_conn)
				break; /* one connection only */
		}
	}
	for (i = 0; i < nd->nconns; i++) {
		struct nbd_conn *c = &nd->conns[i];

		c->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (c->wake < 0) {
			r = -errno;
			set_err(err, errlen, "%s: eventfd: %s", spec, strerror(errno));
			goto fail;
		}
		r = -pthread_create(&c->thread, NULL, conn_main, c);
		if (r < 0) {
			set_err(err, errlen, "%s: pthread_create: %s", spec, strerror(-r));
			goto fail;
		}
		c->started = true;
	}
	d->queue_depth = nd->qd * (uint32_t)nd->nconns;
	d->readonly = nd->server_ro || (flags & CLIO_DEV_RDONLY);
	snprintf(d->engine, sizeof(d->engine), "libnbd (%d connection%s, qd %u each)",
		 nd->nconns, nd->nconns == 1 ? "" : "s", nd->qd);
	*dp = d;
	return 0;
fail:
	nbd_dev_free(nd);
	if (d != NULL)
		dev_free(d);
	return r;
}
