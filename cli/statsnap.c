/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * statsnap.c - read and parse the control file `.clio-stats` of a clio
 * mount (its format: fuse/mountstats.c).
 *
 * Invariants: the file is opened only at the root of a clio mount (the
 * mount on top of the path, in /proc/self/mountinfo, is fuse.clio) on a
 * FUSE file system, so a stray .clio-stats elsewhere (a subdirectory of
 * a pass-through mount, another file system) is not taken; every string of a parsed snapshot
 * points into its own text buffer, freed with it; a device's keys belong
 * to the block that its "NAME path:" line opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"
#include "stat.h"

#define STATS_NAME ".clio-stats"
#define FUSE_MAGIC 0x65735546 /* FUSE_SUPER_MAGIC */

static char *
read_all(int fd, const char *path, int *status)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap + 1), *nb;
	ssize_t n;

	while (buf != NULL) {
		if (len == cap) {
			if ((nb = realloc(buf, 2 * cap + 1)) == NULL)
				break;
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "clio stat: %s: %s\n", path, strerror(errno));
			free(buf);
			*status = EX_IOERR;
			return NULL;
		}
		if (n == 0) {
			buf[len] = '\0';
			return buf;
		}
		len += (size_t)n;
	}
	free(buf);
	fprintf(stderr, "clio stat: %s: out of memory\n", path);
	*status = EX_OSERR;
	return NULL;
}

static int
kv_add(struct snap_kv **kv, size_t *n, char *key, char *val)
{
	struct snap_kv *nk = realloc(*kv, (*n + 1) * sizeof(**kv));

	if (nk == NULL)
		return -1;
	nk[*n].key = key;
	nk[*n].val = val;
	*kv = nk;
	(*n)++;
	return 0;
}

static int
parse(struct snap *s)
{
	char *line, *next, *colon, *sp;
	struct snap_file *f;

	for (line = s->text; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		colon = strstr(line, ": ");
		if (colon == NULL)
			continue;
		*colon = '\0';
		sp = strchr(line, ' ');
		if (sp == NULL) {
			if (kv_add(&s->kv, &s->nkv, line, colon + 2) < 0)
				return -1;
			continue;
		}
		*sp = '\0';
		if (strcmp(sp + 1, "path") == 0) {
			f = realloc(s->files, (s->nfiles + 1) * sizeof(*f));
			if (f == NULL)
				return -1;
			s->files = f;
			f = &s->files[s->nfiles++];
			memset(f, 0, sizeof(*f));
			f->path = colon + 2;
			f->device = "";
			continue;
		}
		if (s->nfiles == 0)
			continue;
		f = &s->files[s->nfiles - 1];
		if (strcmp(sp + 1, "device") == 0)
			f->device = colon + 2;
		else if (kv_add(&f->kv, &f->nkv, sp + 1, colon + 2) < 0)
			return -1;
	}
	return 0;
}

int
snap_read(const char *mnt, struct snap *s)
{
	char path[4200], abs[4096];
	struct mounttab_entry e;
	struct statfs sf;
	int fd, r, status = 0;

	memset(s, 0, sizeof(*s));
	if ((r = mounttab_abspath(mnt, abs, sizeof(abs))) < 0) {
		fprintf(stderr, "clio stat: %s: %s\n", mnt, strerror(-r));
		return EX_NOINPUT;
	}
	if (mounttab_find(abs, &e) < 0 || !mounttab_is_clio(&e)) {
		fprintf(stderr, "clio stat: %s: not the root of a clio mount\n", mnt);
		return EX_NOINPUT;
	}
	if (statfs(abs, &sf) < 0) {
		fprintf(stderr, "clio stat: %s: %s\n", mnt, strerror(errno));
		return EX_NOINPUT;
	}
	snprintf(path, sizeof(path), "%s/%s", abs, STATS_NAME);
	errno = ENOENT;
	fd = sf.f_type == FUSE_MAGIC ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0) {
		if (errno == ENOENT)
			fprintf(stderr, "clio stat: %s: not a clio mount (no %s)\n",
				mnt, STATS_NAME);
		else
			fprintf(stderr, "clio stat: %s/%s: %s\n", mnt, STATS_NAME,
				strerror(errno));
		return EX_NOINPUT;
	}
	s->text = read_all(fd, path, &status);
	close(fd);
	if (s->text == NULL)
		return status;
	if ((s->raw = strdup(s->text)) == NULL || parse(s) < 0) {
		snap_free(s);
		fprintf(stderr, "clio stat: %s: out of memory\n", path);
		return EX_OSERR;
	}
	if (snap_str(s->kv, s->nkv, "hits") == NULL) {
		snap_free(s);
		fprintf(stderr, "clio stat: %s: not a clio statistics file\n", path);
		return EX_DATAERR;
	}
	return 0;
}

void
snap_free(struct snap *s)
{
	size_t i;

	for (i = 0; i < s->nfiles; i++)
		free(s->files[i].kv);
	free(s->files);
	free(s->kv);
	free(s->text);
	free(s->raw);
	memset(s, 0, sizeof(*s));
}

const char *
snap_str(const struct snap_kv *kv, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(kv[i].key, key) == 0)
			return kv[i].val;
	return NULL;
}

double
snap_num(const struct snap_kv *kv, size_t n, const char *key)
{
	const char *v = snap_str(kv, n, key);

	return v != NULL ? strtod(v, NULL) : 0.0;
}
