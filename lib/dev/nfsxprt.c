/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nfsxprt.c - the nfs device's transport to a real server: NFSv3 through
 * libnfs (lib/dev/nfs.h states the contract).
 *
 * Opening uses libnfs's high-level calls (nfs_parse_url_full, nfs_mount,
 * nfs_open2, nfs_fstat64; FSINFO's rtmax and wtmax; a file created with
 * mode 0644 less the caller's umask, as the file backend's); the file's I/O uses
 * the raw rpc_nfs3_*_async calls, which give the post-op attributes, the
 * stability of a write and the write verifier.  libnfs's own read-ahead
 * and page cache stay off.  libnfs has no threads: one context, driven
 * by poll(2) on nfs_get_fd() for nfs_which_events() and nfs_service(),
 * which calls the replies back; also every 100 ms, for its timeouts
 * (nfs_set_timeout) and its reconnection to a server that went away.
 * A socket in error is served at most every 10 ms, doubling to 320 ms
 * while it stays so, not in a busy loop.
 *
 * Deadlines (a "soft" mount).  libnfs times out only a PDU that was sent
 * and waits for its reply; one queued while libnfs reconnects to a server
 * that is gone waits forever, and libnfs cannot cancel one PDU.  So the
 * transport keeps its own deadline for every call, timeo seconds after
 * call(), checked in each wait() (at most 100 ms apart):
 *  1. lx->calls holds every started call whose reply has not been
 *     delivered, oldest first; all have the same timeo, so the head's
 *     deadline is the earliest.
 *  2. When the head passes its deadline the connection is taken as dead:
 *     the libnfs context is destroyed (its PDUs are then never sent),
 *     and every call in lx->calls gets -ETIMEDOUT, from inside wait().
 *     A reply from libnfs for a call of a destroyed context is never
 *     delivered (lx->resetting while it is destroyed).
 *  3. The next call() builds a new context (the URL's options, MOUNT
 *     again) and reuses the file's handle, which the transport owns (a
 *     copy).  A reconnection that fails fails that call (no reply) and,
 *     with its error, every call() until the next wait() and for as
 *     long again as the reconnection waited, at most LX_HOLD_S seconds:
 *     a burst of calls tries once; on a server that refuses, a call
 *     after a wait tries again; on one that hangs (each try waits a
 *     timeo=) the calls of a write-back, its COMMIT and a close's COMMIT
 *     after it try once, not a timeo= each.  ETIMEDOUT when the server
 *     cannot be reached or does not answer (libnfs's EIO, EINTR).
 *  4. A call libnfs itself timed out (sent, no reply: a server that
 *     hangs) also takes the connection as dead, after nfs_service()
 *     returned: the other calls on it fail at once rather than each
 *     after its own timeo.
 */
#include <sys/time.h>
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "dev/nfs.h"

/* libnfs 4.0's struct nfs_fh (nfs_get_fh's result; not in its headers). */
struct libnfs_fh {
	int len;
	char *val;
};

struct lx_call;

struct lx {
	struct nfs_xport x;
	struct nfs_context *nfs; /* NULL: torn down, call() builds anew */
	struct nfsfh *fh;
	struct nfs_fh3 fh3;	/* data in fhbuf */
	char fhbuf[NFS3_FHSIZE];
	char *spec, *url;	/* for a reconnection */
	int timeo;		/* s */
	uint32_t rtmax, wtmax;	/* what the engine was told */
	int backoff_ms;
	struct lx_call *calls_head, *calls_tail; /* deadline rule 1 */
	bool resetting;		/* deadline rule 2 */
	bool expired;		/* deadline rule 4: libnfs timed a call out */
	bool held;		/* deadline rule 3: a reconnection failed */
	double held_until;	/* and its error holds until (now_monotonic()) */
	int conn_err;		/* the last reconnection's error */
	unsigned long resets, reconnects;
};

struct lx_call {
	struct lx *lx;
	enum nfs_proc proc;
	void *tag;
	double deadline;	/* now_monotonic() */
	struct lx_call *prev, *next;
};

#define LX_HOLD_S 1.0	/* deadline rule 3 */

static int lx_reconnect(struct lx *lx);

static void
calls_unlink(struct lx *lx, struct lx_call *lc)
{
	if (lc->prev != NULL)
		lc->prev->next = lc->next;
	else
		lx->calls_head = lc->next;
	if (lc->next != NULL)
		lc->next->prev = lc->prev;
	else
		lx->calls_tail = lc->prev;
	lc->prev = lc->next = NULL;
}

static void
calls_append(struct lx *lx, struct lx_call *lc)
{
	lc->next = NULL;
	lc->prev = lx->calls_tail;
	if (lx->calls_tail != NULL)
		lx->calls_tail->next = lc;
	else
		lx->calls_head = lc;
	lx->calls_tail = lc;
}

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
attr_of(struct nfs_reply *rep, const struct fattr3 *a)
{
	rep->has_attr = true;
	rep->attr.size = a->size;
	rep->attr.fileid = a->fileid;
	rep->attr.mtime_ns = (int64_t)a->mtime.seconds * 1000000000 + a->mtime.nseconds;
	rep->attr.ctime_ns = (int64_t)a->ctime.seconds * 1000000000 + a->ctime.nseconds;
}

static void
post_op(struct nfs_reply *rep, const struct post_op_attr *a)
{
	if (a->attributes_follow)
		attr_of(rep, &a->post_op_attr_u.attributes);
}

/* The one libnfs callback: the reply decoded for the engine. */
static void
lx_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct lx_call *lc = priv;
	struct lx *lx = lc->lx;
	struct nfs_reply rep;
	void *tag = lc->tag;

	(void)rpc;
	if (lx->resetting)
		return; /* deadline rule 2: lx_reset() answers it */
	calls_unlink(lx, lc);
	memset(&rep, 0, sizeof(rep));
	if (status != RPC_STATUS_SUCCESS) {
		rep.err = rpc_status_errno(status);
		if (status == RPC_STATUS_TIMEOUT)
			lx->expired = true;
		goto out;
	}
	switch (lc->proc) {
	case NFS_READ: {
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
	case NFS_WRITE: {
		WRITE3res *res = data;
		if (res->status != NFS3_OK) {
			rep.err = nfsstat_errno(res->status);
			break;
		}
		post_op(&rep, &res->WRITE3res_u.resok.file_wcc.after);
		rep.count = res->WRITE3res_u.resok.count;
		rep.stable = res->WRITE3res_u.resok.committed != UNSTABLE;
		rep.has_verf = true;
		memcpy(rep.verf, res->WRITE3res_u.resok.verf, NFS_VERF_SIZE);
		break;
	}
	case NFS_COMMIT: {
		COMMIT3res *res = data;
		if (res->status != NFS3_OK) {
			rep.err = nfsstat_errno(res->status);
			break;
		}
		post_op(&rep, &res->COMMIT3res_u.resok.file_wcc.after);
		rep.has_verf = true;
		memcpy(rep.verf, res->COMMIT3res_u.resok.verf, NFS_VERF_SIZE);
		break;
	}
	case NFS_SETSIZE: {
		SETATTR3res *res = data;
		if (res->status != NFS3_OK) {
			rep.err = nfsstat_errno(res->status);
			break;
		}
		post_op(&rep, &res->SETATTR3res_u.resok.obj_wcc.after);
		break;
	}
	case NFS_GETATTR: {
		GETATTR3res *res = data;
		if (res->status != NFS3_OK) {
			rep.err = nfsstat_errno(res->status);
			break;
		}
		attr_of(&rep, &res->GETATTR3res_u.resok.obj_attributes);
		break;
	}
	}
out:
	free(lc);
	lx->x.reply(lx->x.arg, tag, &rep);
}

/* Deadline rule 2: the context destroyed; with answer, every call not
 * answered gets -ETIMEDOUT (a call() from inside a reply starts anew). */
static void
lx_reset(struct lx *lx, bool answer)
{
	struct lx_call *list = lx->calls_head, *lc;

	if (lx->nfs != NULL) {
		lx->resetting = true;
		if (lx->fh != NULL) /* NFSv3, no libnfs writes: no RPC */
			(void)nfs_close(lx->nfs, lx->fh);
		nfs_destroy_context(lx->nfs);
		lx->resetting = false;
		lx->nfs = NULL;
		lx->fh = NULL;
		lx->resets++;
	}
	lx->calls_head = lx->calls_tail = NULL;
	while ((lc = list) != NULL) {
		struct nfs_reply rep = { .err = -ETIMEDOUT };

		list = lc->next;
		if (answer)
			lx->x.reply(lx->x.arg, lc->tag, &rep);
		free(lc);
	}
}

static int
lx_call(struct nfs_xport *x, const struct nfs_call *c, void *tag)
{
	struct lx *lx = (struct lx *)x;
	struct rpc_context *rpc;
	struct lx_call *lc;
	int rc = -1;

	if (lx->nfs == NULL && (rc = lx_reconnect(lx)) < 0)
		return rc;
	rpc = nfs_get_rpc_context(lx->nfs);
	if ((lc = calloc(1, sizeof(*lc))) == NULL)
		return -ENOMEM;
	lc->lx = lx;
	lc->proc = c->proc;
	lc->tag = tag;
	lc->deadline = now_monotonic() + lx->timeo;
	switch (c->proc) {
	case NFS_READ: {
		struct READ3args a = { .file = lx->fh3, .offset = c->off, .count = c->len };
		rc = rpc_nfs3_read_async(rpc, lx_cb, &a, lc);
		break;
	}
	case NFS_WRITE: {
		struct WRITE3args a = { .file = lx->fh3, .offset = c->off,
					.count = c->len, .stable = UNSTABLE };
		a.data.data_len = c->len;
		a.data.data_val = (char *)c->data;
		rc = rpc_nfs3_write_async(rpc, lx_cb, &a, lc);
		break;
	}
	case NFS_COMMIT: {
		struct COMMIT3args a = { .file = lx->fh3, .offset = 0, .count = 0 };
		rc = rpc_nfs3_commit_async(rpc, lx_cb, &a, lc);
		break;
	}
	case NFS_SETSIZE: {
		struct SETATTR3args a;
		memset(&a, 0, sizeof(a));
		a.object = lx->fh3;
		a.new_attributes.size.set_it = 1;
		a.new_attributes.size.set_size3_u.size = c->size;
		rc = rpc_nfs3_setattr_async(rpc, lx_cb, &a, lc);
		break;
	}
	case NFS_GETATTR: {
		struct GETATTR3args a = { .object = lx->fh3 };
		rc = rpc_nfs3_getattr_async(rpc, lx_cb, &a, lc);
		break;
	}
	}
	if (rc != 0) {
		free(lc);
		return -EIO;
	}
	calls_append(lx, lc);
	return 0;
}

static void
lx_wait(struct nfs_xport *x, int wake_fd)
{
	struct lx *lx = (struct lx *)x;
	struct pollfd fds[2] = { { wake_fd, POLLIN, 0 }, { -1, 0, 0 } };
	uint64_t n;
	int r;

	lx->held = false;
	if (lx->nfs != NULL) {
		fds[1].fd = nfs_get_fd(lx->nfs);
		fds[1].events = (short)nfs_which_events(lx->nfs);
	}
	r = poll(fds, fds[1].fd >= 0 ? 2 : 1, 100);
	if (r < 0) /* EINTR: the timeouts are checked all the same */
		fds[0].revents = fds[1].revents = 0;
	if (fds[0].revents & POLLIN)
		(void)!read(wake_fd, &n, sizeof(n));
	if (lx->nfs == NULL)
		return;
	r = nfs_service(lx->nfs, fds[1].fd >= 0 ? fds[1].revents : 0);
	if (r < 0 || (fds[1].revents & (POLLERR | POLLHUP))) {
		poll(NULL, 0, lx->backoff_ms);
		lx->backoff_ms = MIN(lx->backoff_ms * 2, 320);
	} else if (fds[1].revents & POLLIN) {
		lx->backoff_ms = 10;
	}
	if (lx->expired ||
	    (lx->calls_head != NULL && now_monotonic() >= lx->calls_head->deadline)) {
		lx->expired = false;
		lx_reset(lx, true);
	}
}

static void
lx_close(struct nfs_xport *x)
{
	struct lx *lx = (struct lx *)x;

	lx_reset(lx, false); /* nothing is outstanding (dev.h rule 6) */
	free(lx->spec);
	free(lx->url);
	free(lx);
}


/* A synchronous libnfs call's result as -errno: its EINTR is a call the
 * server did not answer within timeo (not a signal: a caller that
 * retries on EINTR would wait for it forever); its EFAULT is an RPC that
 * failed on the way (the connection closed under it: no "Bad address"
 * of the caller's), EIO. */
static int
libnfs_err(int r)
{
	return r == -EINTR ? -ETIMEDOUT : r == -EFAULT ? -EIO : r < 0 ? r : -EIO;
}

static int
hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A copy of a component of the URL's path with each %XX (two hex digits,
 * not %00) turned into its byte, so that a name with a ? or an & (%3F,
 * %26) or a % (%25) can be given; any other % stays.  NULL: no memory. */
static char *
pct_dup(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	if (out == NULL)
		return NULL;
	while (*s != '\0') {
		int hi = s[0] == '%' ? hex_digit(s[1]) : -1;
		int lo = hi >= 0 ? hex_digit(s[2]) : -1;

		if (lo >= 0 && (hi | lo) != 0) {
			*o++ = (char)(hi * 16 + lo);
			s += 3;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

/* MOUNT takes a directory of at most MNTPATHLEN bytes: a longer one
 * (the directory of a file deep below the export) loses its last
 * components to the front of *path (if path), which LOOKUPs walk from
 * the directory mounted.  0 or -ENOMEM. */
static int
mnt_fit(char *export, char **path)
{
	char *slash, *p;

	while (strlen(export) > MNTPATHLEN && (slash = strrchr(export, '/')) != NULL &&
	       slash != export) {
		if (path != NULL) {
			if ((p = malloc(strlen(slash) + strlen(*path) + 1)) == NULL)
				return -ENOMEM;
			strcpy(p, slash);
			strcat(p, *path);
			free(*path);
			*path = p;
		}
		*slash = '\0';
	}
	return 0;
}

/* A new libnfs context with the URL's options and timeo, the export
 * mounted; info (at open only) gets the server, export and path (the
 * path's %XX decoded). */
static int
lx_connect(struct lx *lx, struct nfs_file_info *info, char *err, size_t errlen)
{
	struct nfs_url *u;
	char *server, *export;
	int r;

	lx->nfs = nfs_init_context();
	if (lx->nfs == NULL) {
		set_err(err, errlen, "%s: cannot make a libnfs context", lx->spec);
		return -ENOMEM;
	}
	nfs_set_readahead(lx->nfs, 0);
	u = nfs_parse_url_full(lx->nfs, lx->url);
	if (u == NULL) {
		set_err(err, errlen, "%s: bad URL (nfs://HOST/EXPORT/PATH): %s",
			lx->spec, nfs_get_error(lx->nfs));
		return -EINVAL;
	}
	server = strdup(u->server);
	export = pct_dup(u->path);
	if (info != NULL) {
		info->server = strdup(u->server);
		info->export = pct_dup(u->path);
		info->path = pct_dup(u->file);
	}
	nfs_destroy_url(u);
	r = 0;
	if (server == NULL || export == NULL ||
	    (info != NULL && (info->server == NULL || info->export == NULL ||
			      info->path == NULL)))
		r = -ENOMEM;
	if (r == 0)
		r = mnt_fit(export, info != NULL ? &info->path : NULL);
	if (r == 0 && info != NULL && strcmp(info->export, export) != 0) {
		free(info->export);
		if ((info->export = strdup(export)) == NULL)
			r = -ENOMEM;
	}
	if (r == 0) {
		nfs_set_timeout(lx->nfs, lx->timeo * 1000);
		r = nfs_mount(lx->nfs, server, export);
		if (r != 0) {
			const char *why = nfs_get_error(lx->nfs);

			/* -1 is libnfs's "could not start the connection" (a
			 * name that does not resolve, an address it cannot
			 * use), not EPERM */
			if (r == -1 && why != NULL &&
			    strncmp(why, "nfs_mount_async failed", 22) == 0)
				r = strstr(why, "resolv") != NULL ? -ENXIO : -EHOSTUNREACH;
			else
				r = libnfs_err(r);
			set_err(err, errlen, "%s: cannot mount %s:%s: %s (%s)%s", lx->spec,
				server, export, why, strerror(-r),
				strchr(server, ':') != NULL ?
					"; a port is given as ?port=N, and libnfs takes "
					"no IPv6 address" : "");
		}
	}
	free(server);
	free(export);
	return r;
}

/* Deadline rule 3: a new context for the file's handle. */
static int
lx_reconnect(struct lx *lx)
{
	double t0 = now_monotonic(), t1;
	char err[256];
	int r;

	if (lx->held || t0 < lx->held_until)
		return lx->conn_err;
	r = lx_connect(lx, NULL, err, sizeof(err));
	/* libnfs says EIO for a server it cannot reach, EINTR for one that
	 * does not answer in timeo: still the server not answering, as the
	 * call that timed out */
	if (r == -EIO || r == -EINTR)
		r = -ETIMEDOUT;
	if (r == 0 && (nfs_get_readmax(lx->nfs) < lx->rtmax ||
		       nfs_get_writemax(lx->nfs) < lx->wtmax))
		r = -EIO; /* the engine's pieces would not fit */
	if (r < 0) {
		if (lx->nfs != NULL)
			nfs_destroy_context(lx->nfs);
		lx->nfs = NULL;
		lx->conn_err = r;
		lx->held = true;
		t1 = now_monotonic();
		lx->held_until = t1 + MIN(t1 - t0, LX_HOLD_S);
		return r;
	}
	lx->backoff_ms = 10;
	lx->reconnects++;
	return 0;
}

static void
lx_params(struct nfs_xport *x, struct dev_params *o)
{
	struct lx *lx = (struct lx *)x;

	dev_param(o, "timeouts", "%lu", lx->resets);
	dev_param(o, "reconnects", "%lu", lx->reconnects);
}

static const struct nfs_xport_ops lx_ops = {
	.call = lx_call,
	.wait = lx_wait,
	.close = lx_close,
	.params = lx_params,
};

/* The calling thread's umask: libnfs sends a new file's mode as given,
 * where the kernel applies it for the file backend. */
static mode_t
caller_umask(void)
{
	static const char *const status[] = { "/proc/thread-self/status",
					      "/proc/self/status" };
	char line[128];
	unsigned int m;
	mode_t old;
	size_t i;
	FILE *f;

	for (i = 0; i < sizeof(status) / sizeof(status[0]); i++) {
		if ((f = fopen(status[i], "re")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "Umask: %o", &m) == 1) {
				fclose(f);
				return (mode_t)(m & 0777);
			}
		fclose(f);
	}
	old = umask(022);
	umask(old);
	return old;
}

static int
lx_open(struct lx *lx, int flags, struct nfs_file_info *info, char *err,
	size_t errlen)
{
	struct nfs_stat_64 st;
	struct libnfs_fh *fh;
	const char *spec = lx->spec;
	int r;

	r = lx_connect(lx, info, err, errlen);
	if (r < 0)
		return r;
	r = nfs_open2(lx->nfs, info->path,
		      ((flags & CLIO_DEV_RDONLY) ? O_RDONLY : O_RDWR) |
			      ((flags & CLIO_DEV_CREATE) ? O_CREAT : 0) |
			      ((flags & CLIO_DEV_EXCL) ? O_EXCL : 0),
		      (int)(0644 & ~caller_umask()), &lx->fh);
	if (r != 0) {
		set_err(err, errlen, "%s: cannot open %s in %s:%s: %s", spec,
			info->path, info->server, info->export, nfs_get_error(lx->nfs));
		return libnfs_err(r);
	}
	r = nfs_fstat64(lx->nfs, lx->fh, &st);
	if (r != 0) {
		set_err(err, errlen, "%s: GETATTR: %s", spec, nfs_get_error(lx->nfs));
		return libnfs_err(r);
	}
	if ((st.nfs_mode & S_IFMT) != S_IFREG) {
		set_err(err, errlen, "%s: %s is not a regular file", spec, info->path);
		return -EINVAL;
	}
	info->size = st.nfs_size;
	fh = (struct libnfs_fh *)nfs_get_fh(lx->fh);
	if (fh == NULL || fh->len <= 0 || fh->len > NFS3_FHSIZE) {
		set_err(err, errlen, "%s: no file handle from libnfs", spec);
		return -EIO;
	}
	memcpy(lx->fhbuf, fh->val, (size_t)fh->len);
	lx->fh3.data.data_len = (u_int)fh->len;
	lx->fh3.data.data_val = lx->fhbuf;
	info->rtmax = (uint32_t)MIN(nfs_get_readmax(lx->nfs), 1u << 30);
	info->wtmax = (uint32_t)MIN(nfs_get_writemax(lx->nfs), 1u << 30);
	if (info->rtmax < 512 || info->wtmax < 512) {
		set_err(err, errlen, "%s: the server's rtmax %u / wtmax %u are below 512",
			spec, info->rtmax, info->wtmax);
		return -EINVAL;
	}
	lx->rtmax = info->rtmax;
	lx->wtmax = info->wtmax;
	return 0;
}

int
nfs_libnfs_open(const char *spec, const char *url, int flags, int timeo,
		struct nfs_xport **xp, struct nfs_file_info *info, char *err,
		size_t errlen)
{
	struct lx *lx = calloc(1, sizeof(*lx));
	int r;

	if (lx == NULL)
		return -ENOMEM;
	lx->x.ops = &lx_ops;
	lx->backoff_ms = 10;
	lx->timeo = timeo;
	lx->spec = strdup(spec);
	lx->url = strdup(url);
	if (lx->spec == NULL || lx->url == NULL)
		r = -ENOMEM;
	else
		r = lx_open(lx, flags, info, err, errlen);
	if (r < 0) {
		lx_close(&lx->x);
		return r;
	}
	*xp = &lx->x;
	return 0;
}
