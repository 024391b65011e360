/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mountcreds.c - the caller's identity for the requests of `clio mount`
 * that create objects (create, mknod, mkdir, symlink), so that what they
 * make is what the same call would make on a local file system; and the
 * source's own verdict on a caller's access (its POSIX ACLs) where the
 * kernel's default_permissions sees only the mode bits.
 *
 * Invariants:
 *  1. The umask is applied once: by the kernel (the mode the kernel sends
 *     is final, the daemon applies none), or, when the connection has
 *     FUSE_CAP_DONT_MASK (mount_creds_conn), by the source's file system
 *     with the caller's umask as the thread's, so that a default ACL of
 *     the parent decides instead, as on a local file system.  Each FUSE
 *     worker thread gets its own file system attributes (unshare(CLONE_FS),
 *     once per thread) with umask 0 (or the caller's); the process's
 *     umask, and that of every other thread, stay.
 *  2. As root, between mount_creds_enter and mount_creds_leave the thread
 *     has the caller's fsuid, fsgid and supplementary groups (one read
 *     of its /proc status file, else fuse_req_getgroups), so the local file system checks the directory
 *     against all of the caller's groups and gives a new object in a
 *     setgid directory, or with a setgid mode, what it would give the
 *     caller.  setfsuid, setfsgid and the raw setgroups system call are
 *     per thread on Linux (glibc's setgroups() changes every thread), so
 *     concurrent requests on other threads keep their own.
 *  3. mount_creds_leave restores the thread's fsuid, fsgid and groups as
 *     they were at mount_creds_init (the daemon's), on every path.
 *  4. Not root: the objects are the daemon's user's, as with any FUSE
 *     file system a user mounts; only invariant 1 applies.
 *  5. A root caller (uid 0) has the daemon's fsuid and, with the daemon's
 *     capabilities, passes every permission check whatever its groups,
 *     and keeps a setgid bit it asks for: only its fsgid is set (for the
 *     new object's group), and only when it differs, so a root caller's
 *     create costs no system call of this file.
 *  6. mount_creds_access asks the source (faccessat2 with the caller's
 *     identity of invariant 2, so the walk of a path checks each
 *     directory's search right too), unless the kernel enforces ACLs itself
 *     (FUSE_CAP_POSIX_ACL, mount_creds_conn), the caller is root or the
 *     daemon is not: then it is 0 at once, with no system call.
 *  7. mount_creds_sys_admin says whether the caller holds CAP_SYS_ADMIN
 *     (its status file's CapEff), what a local file system asks before it
 *     lists trusted.* names; without the file, whether its uid is 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mount.h"

#define GROUPS_ON_STACK 64
#define STATUS_MAX 8192	/* bytes of /proc/PID/status read at once */

static gid_t *daemon_groups;
static int daemon_ngroups;
static bool daemon_root;
static gid_t daemon_fsgid;

/* set once at the connection's init, read by every worker */
static atomic_bool conn_kernel_acl, conn_dont_mask;

static _Thread_local bool thread_fs_private;
static _Thread_local mode_t thread_umask;
static _Thread_local bool cred_saved;
static _Thread_local bool cred_gid_only;
static _Thread_local uid_t cred_uid;
static _Thread_local gid_t cred_gid;

int
mount_creds_init(void)
{
	int n;

	daemon_root = geteuid() == 0;
	if (!daemon_root)
		return 0;
	daemon_fsgid = getegid();
	n = getgroups(0, NULL);
	if (n < 0)
		return -errno;
	daemon_groups = calloc((size_t)n + 1, sizeof(gid_t));
	if (daemon_groups == NULL)
		return -ENOMEM;
	n = getgroups(n, daemon_groups);
	if (n < 0)
		return -errno;
	daemon_ngroups = n;
	return 0;
}

static int
thread_setgroups(int n, const gid_t *list)
{
	return syscall(SYS_setgroups, (size_t)n, list) < 0 ? -errno : 0;
}

/* The caller's status file (its thread's), whole, in buf[STATUS_MAX] as
 * a string: 0, or -1 if it cannot be read or does not fit. */
static int
read_status(pid_t pid, char *buf)
{
	char path[64];
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)pid);
	if (pid <= 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	len = read(fd, buf, STATUS_MAX - 1);
	close(fd);
	if (len <= 0 || len == STATUS_MAX - 1)
		return -1;
	buf[len] = '\0';
	return 0;
}

/* The caller's groups from one read of its status file into list (room
 * for max): their number, or -1 if the file does not fit buf or has no
 * Groups line (then fuse_req_getgroups is asked). */
static int
status_groups(pid_t pid, gid_t *list, int max)
{
	char buf[STATUS_MAX], *p, *end;
	int n = 0;

	if (read_status(pid, buf) < 0 || (p = strstr(buf, "\nGroups:")) == NULL)
		return -1;
	for (p += 8;; p = end) {
		unsigned long g = strtoul(p, &end, 10);
		if (end == p)
			break;
		if (n == max)
			return -1;
		list[n++] = (gid_t)g;
	}
	return n;
}

bool
mount_creds_sys_admin(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char buf[STATUS_MAX], *p;

	if (ctx->uid != 0)
		return false; /* a user namespace's root is not one here */
	if (read_status(ctx->pid, buf) < 0 || (p = strstr(buf, "\nCapEff:")) == NULL)
		return true;
	return (strtoull(p + 8, NULL, 16) >> CAP_SYS_ADMIN) & 1;
}

/* The caller's supplementary groups on this thread; 0 or -errno. */
static int
caller_groups(fuse_req_t req)
{
	gid_t stack[GROUPS_ON_STACK], *list = stack;
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	int n = status_groups(ctx->pid, stack, GROUPS_ON_STACK), r;

	if (n < 0)
		n = fuse_req_getgroups(req, GROUPS_ON_STACK, stack);
	if (n < 0)
		return n;
	if (n > GROUPS_ON_STACK) {
		int want = n;
		list = calloc((size_t)want, sizeof(gid_t));
		if (list == NULL)
			return -ENOMEM;
		n = fuse_req_getgroups(req, want, list);
		if (n > want)
			n = want; /* joined a group meanwhile: the first ones */
	}
	r = n < 0 ? n : thread_setgroups(n, list);
	if (list != stack)
		free(list);
	return r;
}

int
mount_creds_enter(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	int r;

	cred_saved = false;
	if (!thread_fs_private) {
		if (unshare(CLONE_FS) < 0)
			return -errno;
		umask(0);
		thread_umask = 0;
		thread_fs_private = true;
	}
	/* invariant 1: the kernel sends the caller's umask with the mode */
	if (atomic_load_explicit(&conn_dont_mask, memory_order_relaxed) && ctx != NULL &&
	    (ctx->umask & 0777) != thread_umask) {
		thread_umask = ctx->umask & 0777;
		umask(thread_umask);
	}
	if (!daemon_root || ctx == NULL)
		return 0;
	if (ctx->uid == 0) {
		/* invariant 5 */
		if (ctx->gid != daemon_fsgid) {
			cred_gid = (gid_t)setfsgid(ctx->gid);
			cred_gid_only = cred_saved = true;
		}
		return 0;
	}
	/* without its groups the caller could get more than it has */
	if ((r = caller_groups(req)) < 0 && (r = thread_setgroups(0, NULL)) < 0)
		return r;
	cred_gid = (gid_t)setfsgid(ctx->gid);
	cred_uid = (uid_t)setfsuid(ctx->uid);
	cred_gid_only = false;
	cred_saved = true;
	return 0;
}

void
mount_creds_leave(void)
{
	if (!cred_saved)
		return;
	if (cred_gid_only) {
		setfsgid(cred_gid);
		cred_saved = false;
		return;
	}
	setfsuid(cred_uid);
	setfsgid(cred_gid);
	thread_setgroups(daemon_ngroups, daemon_groups);
	cred_saved = false;
}

void
mount_creds_conn(bool kernel_acl, bool dont_mask)
{
	atomic_store(&conn_kernel_acl, kernel_acl);
	atomic_store(&conn_dont_mask, dont_mask);
}

bool
mount_creds_asks(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	return !atomic_load_explicit(&conn_kernel_acl, memory_order_relaxed) &&
	       daemon_root && ctx != NULL && ctx->uid != 0;
}

int
mount_creds_access(fuse_req_t req, int fd, const char *path, int mode)
{
	int r;

	if (!mount_creds_asks(req))
		return 0;
	if ((r = mount_creds_enter(req)) < 0)
		return r;
	r = faccessat(fd, path, mode, AT_EACCESS | (*path ? 0 : AT_EMPTY_PATH)) < 0 ? -errno : 0;
	mount_creds_leave();
	return r;
}
