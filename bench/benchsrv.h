/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchsrv.h - servers for the benches (benchsrv.c): a private network
 * and mount namespace, processes spawned and reaped by pid, NFS-Ganesha
 * with rpcbind, and tests/tools/rpcproxy in front of it.
 */
#ifndef CLIO_BENCHSRV_H
#define CLIO_BENCHSRV_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define BSRV_NFS_PORT 2049
#define BSRV_MNT_PORT 20048

struct bench_nfs {
	char dir[4096];		/* the server's files (conf, log, recov) */
	char export[4200];	/* the directory served */
	pid_t rpcbind, ganesha, proxy;
	int nfs_port, mnt_port;	/* where clients connect (the proxy's) */
};

/* argv in its own process group, its output to out (or /dev/null): its
 * pid, or -1. */
pid_t bench_spawn(char *const argv[], const char *out);
/* SIGTERM, then SIGKILL after 5 s; reaped; *pid set to 0. */
void bench_reap(pid_t *pid);
/* pid is a live process: a daemon that ended stays a zombie, which
 * kill(pid, 0) still finds, until init reaps it. */
bool bench_running(pid_t pid);
/* Wait up to ms for path to exist (with text: to contain it); false if
 * alive (> 0) exits first or the time runs out. */
bool bench_wait_for(const char *path, const char *text, pid_t alive, int ms);
/* In the calling process (single-threaded: a child of fork): a new
 * network and mount namespace, a tmpfs on /run, lo up.  0 or -errno. */
int bench_private_ns(void);
/* rpcbind and ganesha.nfsd serving s->export (which must exist), then
 * rpcproxy (beside self, the clio binary: tests/tools/rpcproxy) delaying
 * each direction by delay_ms, on ports 3049 and 30048.  0, or -1 with a
 * message (what was started is stopped). */
int bench_nfs_start(struct bench_nfs *s, const char *self, double delay_ms);
void bench_nfs_stop(struct bench_nfs *s);
/* The parts of bench_nfs_start: rpcbind and ganesha.nfsd serving
 * s->export on BSRV_NFS_PORT and BSRV_MNT_PORT (0, or -1 with a message;
 * nothing left running), and one rpcproxy (its path: proxy) delaying each
 * direction by delay_ms from nfs_port and mnt_port to them, counting into
 * counts (NULL: not), ready once the file ready exists (its pid, or -1
 * with a message). */
int bench_ganesha_start(struct bench_nfs *s);
pid_t bench_proxy_start(const char *proxy, double delay_ms, int nfs_port, int mnt_port,
			const char *counts, const char *ready);

#endif
