/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mounttab.c - what is mounted on a directory, from /proc/self/mountinfo,
 * for clio mount (refuse a second mount on one directory; the bdi of the
 * mount), clio umount (only a clio mount, only its owner's or root's)
 * and clio stat.
 *
 * Invariants: the path asked about is absolute and canonical (realpath);
 * the entry returned is the last line for that mount point, the mount on
 * top; mountinfo's octal escapes (\040 for a space, ...) are undone
 * before any comparison; nothing on the mount itself is touched (a dead
 * FUSE mount would hang or fail a stat).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Undo mountinfo's \ooo escapes in place. */
static void
unescape(char *s)
{
	char *out = s;

	while (*s != '\0') {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*out++ = *s++;
		}
	}
	*out = '\0';
}

/* Split one mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS
 * [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS". */
static int
parse_line(char *line, struct mounttab_entry *e)
{
	char *save = NULL, *f[5], *t;
	int i;

	for (i = 0; i < 5; i++)
		if ((f[i] = strtok_r(i ? NULL : line, " \n", &save)) == NULL)
			return -1;
	while ((t = strtok_r(NULL, " \n", &save)) != NULL && strcmp(t, "-") != 0)
		;
	if (t == NULL)
		return -1;
	if ((t = strtok_r(NULL, " \n", &save)) == NULL)
		return -1;
	unescape(f[4]);
	snprintf(e->majmin, sizeof(e->majmin), "%s", f[2]);
	snprintf(e->dir, sizeof(e->dir), "%s", f[4]);
	unescape(t);
	snprintf(e->fstype, sizeof(e->fstype), "%s", t);
	t = strtok_r(NULL, " \n", &save);
	if (t != NULL)
		unescape(t);
	snprintf(e->source, sizeof(e->source), "%s", t != NULL ? t : "");
	e->uid = -1;
	if (t != NULL && (t = strtok_r(NULL, " \n", &save)) != NULL) {
		char *o = strstr(t, "user_id=");

		if (o != NULL && (o == t || o[-1] == ','))
			e->uid = strtol(o + 8, NULL, 10);
	}
	return 0;
}

int
mounttab_find(const char *abs, struct mounttab_entry *out)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	struct mounttab_entry e;
	char *line = NULL;
	size_t cap = 0;
	int found = -ENOENT;

	if (fp == NULL)
		return -errno;
	while (getline(&line, &cap, fp) > 0)
		if (parse_line(line, &e) == 0 && strcmp(e.dir, abs) == 0) {
			*out = e;
			found = 0;
		}
	free(line);
	fclose(fp);
	return found;
}

bool
mounttab_is_clio(const struct mounttab_entry *e)
{
	return strcmp(e->fstype, "fuse.clio") == 0;
}

int
mounttab_abspath(const char *path, char *abs, size_t len)
{
	char buf[PATH_MAX], *slash, *dir;
	const char *base;

	if (realpath(path, buf) != NULL) {
		if (snprintf(abs, len, "%s", buf) >= (int)len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (errno != ENOTCONN)
		return -errno;
	/* a dead FUSE mount: its parent is still there */
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	while ((slash = strrchr(buf, '/')) != NULL && slash[1] == '\0' && slash != buf)
		*slash = '\0';
	slash = strrchr(buf, '/');
	if (slash == NULL) {
		dir = realpath(".", NULL);
		base = buf;
	} else {
		*slash = '\0';
		dir = realpath(slash == buf ? "/" : buf, NULL);
		base = slash + 1;
	}
	if (dir == NULL)
		return -errno;
	if (snprintf(abs, len, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, base) >= (int)len) {
		free(dir);
		return -ENAMETOOLONG;
	}
	free(dir);
	return 0;
}

int
mounttab_clio_dirs(char **out, int max)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	struct mounttab_entry e, top;
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	if (fp == NULL)
		return 0;
	while (n < max && getline(&line, &cap, fp) > 0)
		if (parse_line(line, &e) == 0 && mounttab_is_clio(&e) &&
		    mounttab_find(e.dir, &top) == 0 && mounttab_is_clio(&top) &&
		    strcmp(top.majmin, e.majmin) == 0 &&
		    (out[n] = strdup(e.dir)) != NULL)
			n++;
	free(line);
	fclose(fp);
	return n;
}
