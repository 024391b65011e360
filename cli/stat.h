/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stat.h - a snapshot of a clio mount's control file, parsed
 * (cli/statsnap.c), for clio stat (cli/stat.c).
 */
#ifndef CLIO_STAT_H
#define CLIO_STAT_H

#include <stddef.h>

struct snap_kv {
	char *key, *val;
};

/* An open device: keys without the "NAME " prefix. */
struct snap_file {
	char *path;		/* under the mount point */
	char *device;		/* as the user names it */
	struct snap_kv *kv;
	size_t nkv;
};

struct snap {
	struct snap_kv *kv;	/* the mount's own keys, in order */
	size_t nkv;
	struct snap_file *files;
	size_t nfiles;
	char *text;		/* the buffer the strings point into */
	char *raw;		/* the file as it was read */
};

/* Read MOUNTPOINT/.clio-stats of the clio mount on mnt: 0, or a sysexits
 * code after a one-line error on standard error. */
int snap_read(const char *mnt, struct snap *s);
void snap_free(struct snap *s);
/* A key's value; NULL if absent. */
const char *snap_str(const struct snap_kv *kv, size_t n, const char *key);
/* A key's number; 0 if absent or no number. */
double snap_num(const struct snap_kv *kv, size_t n, const char *key);

#endif
