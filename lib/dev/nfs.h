/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nfs.h - the seam of the nfs device: its engine (lib/dev/nfs.c: pieces
 * to READ and WRITE, flushes to COMMIT, the uncommitted writes, the
 * verifier and the resends) and a transport that carries its calls to a
 * server (lib/dev/nfsxprt.c: NFSv3 through libnfs).
 *
 * The contract:
 *  1. The engine's I/O thread is the only caller of a transport; a
 *     transport has no thread of its own.
 *  2. call() starts one procedure on the file and returns 0, or -errno
 *     when it did not start (then no reply comes).  A started call gets
 *     exactly one reply, delivered by x->reply(x->arg, tag, rep) from
 *     inside wait(), never from inside call().
 *  3. wait() returns after at most 100 ms (timeouts are the transport's,
 *     measured in its own wait()s), or as soon as wake_fd is readable
 *     (drained by wait()), delivering every reply that is ready.
 *  4. rep->data (a READ's bytes) is valid only during the reply call.
 *  5. A transport knows the file's handle; the engine knows offsets,
 *     lengths and the verifier only.  So a simulated server on the
 *     virtual clock can take libnfs's place by providing the same three
 *     operations (replying at the simulated completion times).
 *  6. Virtual time (lib/dev/nfssim.c): a transport that sets
 *     info->is_virtual reads c->t, the call's departure on the virtual
 *     clock, and sets rep->t_done, the reply's arrival; the engine stamps
 *     the pieces with them (dev.h rule 4).  Real transports ignore c->t
 *     and leave rep->t_done 0.
 */
#ifndef CLIO_DEV_NFS_H
#define CLIO_DEV_NFS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define NFS_VERF_SIZE 8

struct dev_params;

enum nfs_proc { NFS_READ, NFS_WRITE, NFS_COMMIT, NFS_SETSIZE, NFS_GETATTR };

/* The attributes the engine uses (of NFSv3's fattr3). */
struct nfs_attr {
	uint64_t size, fileid;
	int64_t mtime_ns, ctime_ns;
};

struct nfs_call {
	enum nfs_proc proc;
	uint64_t off;		/* READ, WRITE */
	uint32_t len;		/* READ, WRITE */
	const char *data;	/* WRITE: len bytes, UNSTABLE */
	uint64_t size;		/* SETSIZE */
	double t;		/* rule 6: departure (virtual clock) */
};

struct nfs_reply {
	int err;		/* -errno, 0 on success */
	uint32_t count;		/* READ, WRITE: bytes moved */
	bool eof;		/* READ */
	bool stable;		/* WRITE: FILE_SYNC or DATA_SYNC */
	bool has_verf;		/* WRITE, COMMIT */
	char verf[NFS_VERF_SIZE];
	bool has_attr;		/* post-op attributes came */
	struct nfs_attr attr;
	const char *data;	/* READ: count bytes (rule 4) */
	double t_done;		/* rule 6: arrival (virtual clock) */
};

struct nfs_xport;
struct nfs_xport_ops {
	int (*call)(struct nfs_xport *x, const struct nfs_call *c, void *tag);
	void (*wait)(struct nfs_xport *x, int wake_fd);
	void (*close)(struct nfs_xport *x);
	/* optional: the transport's own `clio info` parameters */
	void (*params)(struct nfs_xport *x, struct dev_params *o);
};

struct nfs_xport {
	const struct nfs_xport_ops *ops;
	void (*reply)(void *arg, void *tag, const struct nfs_reply *rep);
	void *arg;		/* the engine's */
};

/* What the transport found at open. */
struct nfs_file_info {
	char *server, *export, *path; /* malloc'd */
	uint64_t size;
	uint32_t rtmax, wtmax;
	bool is_virtual;	/* rule 6 */
	uint32_t qd;		/* the transport's choice of RPCs in flight; 0: the engine's */
};

/* lib/dev/nfsxprt.c: mount and open the file of an nfs:// URL through
 * libnfs (url holds only libnfs's keys; spec is what errors name);
 * timeo in seconds. */
int nfs_libnfs_open(const char *spec, const char *url, int flags, int timeo,
		    struct nfs_xport **xp, struct nfs_file_info *info,
		    char *err, size_t errlen);

/* lib/dev/nfssim.c: a simulated server and network on the virtual clock
 * (opts: after `nfs+sim:`; spec is what errors name). */
int nfs_sim_open(const char *spec, const char *opts, int flags,
		 struct nfs_xport **xp, struct nfs_file_info *info, char *err,
		 size_t errlen);

#endif
