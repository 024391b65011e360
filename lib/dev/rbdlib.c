/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rbdlib.c - loads librbd and librados for the RBD backend at its first
 * open (rbdlib.h says why and what holds).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "rbdlib.h"

#define RADOS_SONAME "librados.so.2"
#define RBD_SONAME "librbd.so.1"

struct rbd_lib rbd_lib;

static pthread_once_t rbd_lib_once = PTHREAD_ONCE_INIT;
static bool rbd_lib_loaded;
static char rbd_lib_error[320];

static void *
rbd_lib_open(const char *soname)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (h == NULL)
		snprintf(rbd_lib_error, sizeof(rbd_lib_error),
			 "cannot load %s (Debian's librbd1 and librados2): %s",
			 soname, dlerror());
	return h;
}

static void
rbd_lib_init(void)
{
	struct rbd_lib l;
	void *rados, *rbd, *sym;

	if ((rados = rbd_lib_open(RADOS_SONAME)) == NULL ||
	    (rbd = rbd_lib_open(RBD_SONAME)) == NULL)
		return;
#define RBD_LIB_RESOLVE(handle, soname, name) \
	if ((sym = dlsym(handle, #name)) == NULL) { \
		snprintf(rbd_lib_error, sizeof(rbd_lib_error), \
			 "%s has no %s", soname, #name); \
		return; \
	} \
	*(void **)&l.name = sym;
#define RADOS_RESOLVE(name) RBD_LIB_RESOLVE(rados, RADOS_SONAME, name)
#define RBD_RESOLVE(name) RBD_LIB_RESOLVE(rbd, RBD_SONAME, name)
	RADOS_LIB_CALLS(RADOS_RESOLVE)
	RBD_LIB_CALLS(RBD_RESOLVE)
#undef RBD_RESOLVE
#undef RADOS_RESOLVE
#undef RBD_LIB_RESOLVE
	rbd_lib = l;
	rbd_lib_loaded = true;
}

int
rbd_lib_load(char *err, size_t errlen)
{
	pthread_once(&rbd_lib_once, rbd_lib_init);
	if (rbd_lib_loaded)
		return 0;
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "%s", rbd_lib_error);
	return -ENOENT;
}
