/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mountidle.c - the list of idle clio devices of `clio mount DIR MNT`:
 * devices of files that no handle has open, kept with their clean
 * buffers for the next open, oldest first.
 *
 * Invariants:
 *  1. An entry is listed (e->listed) exactly when it is on the list, and
 *     idle_count is the number listed; both change only under idle_lock.
 *  2. idle_lock is taken after an owner's lock, never before: the list
 *     calls claim() with idle_lock held, and claim() may only try the
 *     owner's lock (pthread_mutex_trylock), never wait for it.
 *  3. An entry that claim() accepted is off the list before idle_lock is
 *     dropped, so one device is never evicted twice.
 */
#include <stddef.h>

#include "mount.h"

static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mount_idle idle_head = { &idle_head, &idle_head, false };
static unsigned idle_count;

static void
unlink_locked(struct mount_idle *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = NULL;
	e->listed = false;
	idle_count--;
}

void
mount_idle_add(struct mount_idle *e)
{
	pthread_mutex_lock(&idle_lock);
	if (e->listed)
		unlink_locked(e);
	e->prev = idle_head.prev;
	e->next = &idle_head;
	idle_head.prev->next = e;
	idle_head.prev = e;
	e->listed = true;
	idle_count++;
	pthread_mutex_unlock(&idle_lock);
}

bool
mount_idle_del(struct mount_idle *e)
{
	bool was;

	pthread_mutex_lock(&idle_lock);
	was = e->listed;
	if (was)
		unlink_locked(e);
	pthread_mutex_unlock(&idle_lock);
	return was;
}

struct mount_idle *
mount_idle_take_oldest(unsigned max, bool (*claim)(struct mount_idle *))
{
	struct mount_idle *e, *got = NULL;

	pthread_mutex_lock(&idle_lock);
	if (idle_count > max)
		for (e = idle_head.next; e != &idle_head; e = e->next)
			if (claim(e)) {
				unlink_locked(e);
				got = e;
				break;
			}
	pthread_mutex_unlock(&idle_lock);
	return got;
}

unsigned
mount_idle_count(void)
{
	unsigned n;

	pthread_mutex_lock(&idle_lock);
	n = idle_count;
	pthread_mutex_unlock(&idle_lock);
	return n;
}
