/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * memavail.c - how much memory this process could still make resident
 * without pushing the system or its cgroup into reclaim or the OOM
 * killer: the kernel's MemAvailable, and, under a cgroup memory limit (v2
 * memory.max, or v1's memory controller), that limit less the cgroup's
 * usage.  Used by clio_cache_prefault, which
 * must not take memory the machine does not have.
 *
 * Invariant: an answer it cannot read is "no limit" (UINT64_MAX), never
 * a small number: a machine without /proc or cgroups is not refused.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The first number of path (a cgroup file), or UINT64_MAX ("max", none). */
static uint64_t
file_number(const char *path)
{
	unsigned long long v;
	FILE *fp = fopen(path, "re");
	int n;

	if (fp == NULL)
		return UINT64_MAX;
	n = fscanf(fp, "%llu", &v);
	fclose(fp);
	return n == 1 ? (uint64_t)v : UINT64_MAX;
}

/* limit - usage of the cgroup at dir (files lim and use), or UINT64_MAX
 * if it has no limit (v2 "max", v1 a number near 2^63). */
static uint64_t
room_of(const char *dir, const char *lim, const char *use)
{
	char path[4400];
	uint64_t max, cur;

	snprintf(path, sizeof(path), "%s/%s", dir, lim);
	max = file_number(path);
	if (max >= (1ull << 60))
		return UINT64_MAX;
	snprintf(path, sizeof(path), "%s/%s", dir, use);
	cur = file_number(path);
	if (cur == UINT64_MAX)
		return UINT64_MAX;
	return cur >= max ? 0 : max - cur;
}

/* The room under this process's cgroup memory limit (v2 memory.max, or
 * v1's memory controller), or UINT64_MAX. */
static uint64_t
cgroup_room(void)
{
	char line[4096], dir[4200];
	uint64_t room = UINT64_MAX, r;
	FILE *fp = fopen("/proc/self/cgroup", "re");

	if (fp == NULL)
		return UINT64_MAX;
	while (fgets(line, sizeof(line), fp) != NULL) {
		char *path;

		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "0::", 3) == 0) {
			snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", line + 3);
			r = room_of(dir, "memory.max", "memory.current");
		} else if ((path = strstr(line, ":memory:")) != NULL) {
			snprintf(dir, sizeof(dir), "/sys/fs/cgroup/memory%s", path + 8);
			r = room_of(dir, "memory.limit_in_bytes", "memory.usage_in_bytes");
		} else {
			continue;
		}
		if (r < room)
			room = r;
	}
	fclose(fp);
	return room;
}

uint64_t
mem_available(void)
{
	char line[256];
	unsigned long long kb;
	uint64_t avail = UINT64_MAX, room = cgroup_room();
	FILE *fp = fopen("/proc/meminfo", "re");

	if (fp != NULL) {
		while (fgets(line, sizeof(line), fp) != NULL)
			if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
				avail = (uint64_t)kb * 1024;
				break;
			}
		fclose(fp);
	}
	return avail < room ? avail : room;
}
