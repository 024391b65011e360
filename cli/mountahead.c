/*
 * mountahead.c - read-ahead for writers under the kernel's writeback
 * cache (kernel_cache=on).
 *
 * The problem.  With the writeback cache, a write(2) that covers part of
 * a page the kernel does not hold makes the kernel read that one page
 * first, synchronously (seed 002's read-before-write, one page at a
 * time): a 1 KiB rewrite of an uncached file becomes one 4 KiB FUSE READ
 * per page, each a round trip between the writer and this daemon.
 *
 * The fix.  When READs of single pages come in file order, clio asks the
 * kernel to read ahead of the writer: the kick thread opens the file
 * through the mount, calls posix_fadvise(POSIX_FADV_WILLNEED) on the next
 * window and closes it.  The kernel then reads that window in
 * max_read-sized, asynchronous READs, answered from clio's cache, which
 * reads the disk in clusters; the writer finds its pages up to date and
 * does not wait.  The window doubles from AHEAD_MIN up to the mount's
 * read-ahead (the kernel reads no more for one posix_fadvise) while the
 * pattern holds.
 *
 * Why it is safe.  Kernel read-ahead only fills pages that are absent
 * from the page cache; it never replaces a page, so a page that a writer
 * has dirtied and clio has not seen yet is left alone (unlike a
 * FUSE_NOTIFY_STORE push, which would overwrite it).  The open is
 * read-only, so the kernel never writes back through it.
 *
 * Why a thread of its own.  close(2) of a file on the mount waits for
 * this daemon (FLUSH) and for the inode lock that a writer holds while
 * its READ is pending; a FUSE worker must not wait for either.  The kick
 * thread may: it only waits on the workers.  At shutdown it is stopped
 * after the FUSE session is destroyed (mount.c), which fails whatever it
 * still waits for on the mount.
 *
 * Invariants.  At most one kick per file is queued or running (busy); a
 * queued kick holds a reference on its file (pin), dropped (unpin) once
 * the kick is done or dropped; the queue holds at most QUEUE_LEN kicks,
 * and a kick that finds it full is dropped: read-ahead is only a hint.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mount.h"

#define PAGE 4096u
#define AHEAD_MIN (1u << 20)
#define SLACK (16 * PAGE)
#define QUEUE_LEN 64

static char ahead_root[PATH_MAX];	/* the mount point, under q_lock */
static uint64_t ahead_max;		/* the largest window */
static atomic_bool ahead_on;
atomic_uint_fast64_t mount_ahead_kicks;

struct kick {
	struct mount_ahead *a;
	char *rel;			/* the file's path in the mount */
	uint64_t start, len;
	void (*unpin)(void *);
	void *arg;
};

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static struct kick queue[QUEUE_LEN];
static unsigned q_head, q_count;
static bool q_stop;
static pthread_t q_thread;

void
mount_ahead_init(struct mount_ahead *a)
{
	pthread_mutex_init(&a->lock, NULL);
	a->next = UINT64_MAX;
	a->end = UINT64_MAX;
	a->win = 0;
	a->busy = false;
}

void
mount_ahead_destroy(struct mount_ahead *a)
{
	pthread_mutex_destroy(&a->lock);
}

/* Open root/rel and ask for [off, off + len): the descriptor, or -errno
 * (renamed, removed, not readable: no read-ahead). */
static int
kick(const char *root, const char *rel, uint64_t off, uint64_t len)
{
	char path[PATH_MAX * 2 + 2];
	int fd, r;

	if (snprintf(path, sizeof(path), "%s/%s", root, rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
	if (r != 0) {
		close(fd);
		return -r;
	}
	return fd;
}

/* A kick is done or dropped: its file may kick again. */
static void
kick_done(struct kick *k)
{
	pthread_mutex_lock(&k->a->lock);
	k->a->busy = false;
	pthread_mutex_unlock(&k->a->lock);
	free(k->rel);
	if (k->unpin != NULL)
		k->unpin(k->arg);
}

static void *
kick_thread(void *unused)
{
	char root[PATH_MAX];
	struct kick k;
	int fd;

	(void)unused;
	pthread_mutex_lock(&q_lock);
	for (;;) {
		while (q_count == 0 && !q_stop)
			pthread_cond_wait(&q_cond, &q_lock);
		if (q_count == 0)
			break;
		k = queue[q_head];
		q_head = (q_head + 1) % QUEUE_LEN;
		q_count--;
		fd = -1;
		if (!q_stop) {
			strcpy(root, ahead_root);
			pthread_mutex_unlock(&q_lock);
			fd = kick(root, k.rel, k.start, k.len);
			if (fd >= 0)
				atomic_fetch_add(&mount_ahead_kicks, 1);
		} else {
			pthread_mutex_unlock(&q_lock);
		}
		kick_done(&k);
		/* the kernel writes the inode's dirty pages back before
		 * close(2) returns: not while the file's next kick waits */
		if (fd >= 0)
			close(fd);
		pthread_mutex_lock(&q_lock);
	}
	pthread_mutex_unlock(&q_lock);
	return NULL;
}

int
mount_ahead_start(const char *mountpoint, uint64_t max_window)
{
	int r;

	if (strlen(mountpoint) >= sizeof(ahead_root))
		return -ENAMETOOLONG;
	strcpy(ahead_root, mountpoint);
	ahead_max = max_window < AHEAD_MIN ? AHEAD_MIN : max_window;
	q_stop = false;
	r = pthread_create(&q_thread, NULL, kick_thread, NULL);
	if (r != 0)
		return -r;
	atomic_store(&ahead_on, true);
	return 0;
}

void
mount_ahead_stop(void)
{
	if (!atomic_exchange(&ahead_on, false))
		return;
	pthread_mutex_lock(&q_lock);
	q_stop = true;
	pthread_cond_signal(&q_cond);
	pthread_mutex_unlock(&q_lock);
	pthread_join(q_thread, NULL);
}

void
mount_ahead_read(struct mount_ahead *a, uint64_t off, size_t size,
		 mount_ahead_path_fn path, void (*pin)(void *),
		 void (*unpin)(void *), void *arg)
{
	char rel[PATH_MAX];
	struct kick k;
	bool seq, queued = false;

	if (!atomic_load(&ahead_on) || size != PAGE || off % PAGE != 0)
		return;
	pthread_mutex_lock(&a->lock);
	/* READs overtake each other between the daemon's threads: near
	 * the last one, or anywhere up to the end of the window asked for */
	seq = a->next != UINT64_MAX &&
	      ((off + SLACK >= a->next && off <= a->next + SLACK) ||
	       (a->end != UINT64_MAX && off >= a->next && off <= a->end + SLACK));
	if (off + PAGE > a->next || a->next == UINT64_MAX || !seq)
		a->next = off + PAGE;
	if (!seq || a->busy) {
		if (!seq) {
			a->win = 0;
			a->end = UINT64_MAX;
		}
		pthread_mutex_unlock(&a->lock);
		return;
	}
	a->win = a->win == 0 ? AHEAD_MIN : a->win * 2 >= ahead_max ? ahead_max : a->win * 2;
	k.a = a;
	k.start = off + PAGE;
	k.len = a->win;
	k.rel = NULL;
	k.unpin = NULL;
	k.arg = arg;
	a->end = k.start + k.len;
	a->busy = true;
	pthread_mutex_unlock(&a->lock);

	if (path(arg, rel, sizeof(rel)) == 0 && (k.rel = strdup(rel)) != NULL) {
		if (pin != NULL)
			pin(arg);
		k.unpin = unpin;
		pthread_mutex_lock(&q_lock);
		if (q_count < QUEUE_LEN && !q_stop) {
			queue[(q_head + q_count) % QUEUE_LEN] = k;
			q_count++;
			queued = true;
			pthread_cond_signal(&q_cond);
		}
		pthread_mutex_unlock(&q_lock);
	}
	if (!queued)
		kick_done(&k);
}
