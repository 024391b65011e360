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
 */
#ifndef CLIO_DEV_NFS_H
#define CLIO_DEV_NFS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define NFS_VERF_SIZE 8

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
};

struct nfs_xport;
struct nfs_xport_ops {
	int (*call)(struct nfs_xport *x, const struct nfs_call *c, void *tag);
	void (*wait)(struct nfs_xport *x, int wake_fd);
	void (*close)(struct nfs_xport *x);
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
};

/* lib/dev/nfsxprt.c: mount and open the file of an nfs:// URL through
 * libnfs (url holds only libnfs's keys; spec is what errors name);
 * timeo in seconds. */
int nfs_libnfs_open(const char *spec, const char *url, int flags, int timeo,
		    struct nfs_xport **xp, struct nfs_file_info *info,
		    char *err, size_t errlen);

#endif
