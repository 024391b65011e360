/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * benchnfs.c - `clio bench nfs`: the dispatcher.  With --sim (and inside
 * `clio bench all`, which needs no server) seed 004 in virtual time
 * (benchnfssim.c); without it, the run against NFS-Ganesha
 * (benchnfsreal.c).
 */
#include "bench.h"

int
exp_nfs(const struct bench_opts *bo, struct table *t)
{
	if (bo->sim || bo->all)
		return bench_nfs_sim(bo, t);
	return bench_nfs_real(bo, t);
}
