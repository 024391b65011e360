/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rbdlib.h - the librbd and librados calls of the RBD backend, reached
 * through pointers that rbd_lib_load() fills from the libraries loaded at
 * the first rbd: open.
 *
 * Linking Ceph's client libraries costs every program that links libclio
 * about 20 ms at each start, rbd: device or not; loaded on demand, they
 * cost only the programs that open one.  Invariants:
 *  1. Every pointer has the type of the function it stands for (the
 *     declarations of <rbd/librbd.h> and <rados/librados.h>), so a call
 *     through RBD() is checked as a direct call would be.
 *  2. rbd_lib is written once, under a pthread_once, before
 *     rbd_lib_load() first returns 0, and never again; the libraries are
 *     never unloaded.
 */
#ifndef CLIO_RBDLIB_H
#define CLIO_RBDLIB_H

#include <stddef.h>
#include <rados/librados.h>
#include <rbd/librbd.h>

#define RADOS_LIB_CALLS(X) \
	X(rados_create2) X(rados_conf_set) X(rados_conf_read_file) \
	X(rados_conf_parse_env) X(rados_connect) X(rados_shutdown) \
	X(rados_ioctx_create) X(rados_ioctx_destroy) X(rados_exec)
#define RBD_LIB_CALLS(X) \
	X(rbd_open) X(rbd_open_read_only) X(rbd_close) X(rbd_stat) \
	X(rbd_get_stripe_unit) X(rbd_get_stripe_count) X(rbd_get_features) \
	X(rbd_get_size) X(rbd_resize) X(rbd_discard) X(rbd_write_zeroes) \
	X(rbd_aio_create_completion) X(rbd_aio_release) \
	X(rbd_aio_get_return_value) X(rbd_aio_readv) X(rbd_aio_writev) \
	X(rbd_aio_flush) X(rbd_snap_get_id) X(rbd_get_id)

#define RBD_LIB_POINTER(name) __typeof__(name) *name;
struct rbd_lib {
	RADOS_LIB_CALLS(RBD_LIB_POINTER)
	RBD_LIB_CALLS(RBD_LIB_POINTER)
};
#undef RBD_LIB_POINTER

extern struct rbd_lib rbd_lib;

/* A call into librbd or librados: RBD(rbd_open)(ioctx, name, &img, NULL). */
#define RBD(name) (rbd_lib.name)

/* Loads librbd and librados once; 0, or -ENOENT with the reason in err. */
int rbd_lib_load(char *err, size_t errlen);

#endif
