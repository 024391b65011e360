/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchnfs.c - `clio bench nfs`: the dispatcher.  With --sim (and inside
 * `clio bench all`, which needs no server) seed 004 in virtual time
 * (benchnfssim.c); without it, the run against a real NFS server,
 * bench_nfs_real(), which a program built without it lacks: then a weak
 * stand-in says so and returns EX_UNAVAILABLE.
 */
#include <stdio.h>
#include <sysexits.h>

#include "bench.h"

__attribute__((weak)) int
bench_nfs_real(const struct bench_opts *bo, struct table *t)
{
	(void)bo;
	(void)t;
	fprintf(stderr, "clio bench nfs: the run against a real server is not built; "
		"try --sim\n");
	return EX_UNAVAILABLE;
}

int
exp_nfs(const struct bench_opts *bo, struct table *t)
{
	if (bo->sim || bo->all)
		return bench_nfs_sim(bo, t);
	return bench_nfs_real(bo, t);
}
