/* SPDX-License-Identifier: BSD-2-Clause */
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
 * kernel to read ahead of the writer: a helper process opens the file
 * through the mount (once; the descriptor is kept until the programs
 * have closed the file) and calls posix_fadvise(POSIX_FADV_WILLNEED) on
 * the next window.  The kernel then reads that window in max_read-sized,
 * asynchronous READs, answered from clio's cache, which reads the disk in
 * clusters; the writer finds its pages up to date and does not wait.
 * The window doubles from AHEAD_MIN to AHEAD_MAX while the pattern holds
 * (asked for in pieces of the mount's read-ahead, the most the kernel
 * reads for one posix_fadvise).  The next window is asked for before the
 * writer reaches the end of the last one: the kernel writes the writer's
 * pages back (WRITEs) a little behind it, so a WRITE inside the last
 * window is the trip wire (like the read-ahead marks of BSD's
 * cluster_read).  The writer then waits for a READ only when it starts,
 * or outruns its write-back by more than a window.
 *
 * Why it is safe.  Kernel read-ahead only fills pages that are absent
 * from the page cache; it never replaces a page, so a page that a writer
 * has dirtied and clio has not seen yet is left alone (unlike a
 * FUSE_NOTIFY_STORE push, which would overwrite it).  The open is
 * read-only, so the kernel never writes back through it.
 *
 * Why another process.  open(2) and close(2) of a file on the mount wait
 * for this daemon, and close(2) also for the kernel to write the file's
 * dirty pages back and for the inode lock a writer holds while its READ
 * is pending.  A FUSE worker must not wait for any of these; and no
 * thread of the daemon may hold a descriptor on its own mount: if the
 * daemon is killed, the kernel closes that descriptor (and waits for
 * the FLUSH and the write-back, without end) before it releases the FUSE
 * device that would end them.  The helper (forked before any thread
 * exists, holding nothing but its socket) may wait: when the daemon
 * dies, its device closes and the helper's waits fail; the helper dies
 * with it (PR_SET_PDEATHSIG) or at the socket's end.  In the daemon, the
 * kick thread hands the helper one job at a time and waits for its
 * answer on the socket only.
 *
 * Invariants.  At most one kick per file is queued or running (busy); a
 * queued job holds a reference on its file (pin), dropped (unpin) once it
 * is done or dropped; the queue holds at most QUEUE_LEN kicks, and a kick
 * that finds it full is dropped (read-ahead is only a hint); close jobs
 * are never dropped, or a kept descriptor would keep the mount busy.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mount.h"

#define PAGE 4096u
#define AHEAD_MIN (1u << 20)
#define AHEAD_MAX (64u << 20)
#define SLACK (16 * PAGE)
#define QUEUE_LEN 64
#define HELPER_FILES 1024	/* descriptors the helper keeps at most */

static uint64_t ahead_piece;		/* the mount's read-ahead */
static atomic_bool ahead_on;
atomic_uint_fast64_t mount_ahead_kicks;

enum job_kind { JOB_KICK, JOB_CLOSE };

struct kick {
	struct kick *next;
	enum job_kind job;
	struct mount_ahead *a;
	char *rel;			/* the file's path in the mount */
	uint64_t start, len;
	void (*unpin)(void *);
	void *arg;
};

/* One message to the helper; the answer is an int, 0 or -errno. */
struct job_msg {
	uint64_t id;			/* the file: its struct mount_ahead */
	uint64_t start, len;
	uint64_t piece;			/* posix_fadvise at most this much */
	uint32_t job;
	char rel[PATH_MAX];
};

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static struct kick *q_first, **q_last = &q_first;
static unsigned q_kicks;		/* kick jobs queued */
static bool q_stop;
static pthread_t q_thread;
static int helper_sock = -1;
static atomic_int helper_pid;

void
mount_ahead_init(struct mount_ahead *a)
{
	pthread_mutex_init(&a->lock, NULL);
	a->next = UINT64_MAX;
	a->end = UINT64_MAX;
	a->win = 0;
	a->busy = false;
	a->kicked = false;
}

void
mount_ahead_destroy(struct mount_ahead *a)
{
	pthread_mutex_destroy(&a->lock);
}

bool
mount_ahead_self(pid_t pid)
{
	return pid != 0 && pid == atomic_load(&helper_pid);
}

/* ------------------------------------------------------- the helper */

/* Runs in the forked helper: serve jobs until the socket ends. */
static _Noreturn void
helper_main(int sock, const char *root)
{
	static struct { uint64_t id; int fd; } tab[HELPER_FILES];
	static struct job_msg m;
	static char path[PATH_MAX * 2 + 2];
	ssize_t n;
	int i, r, slot;

	for (;;) {
		n = recv(sock, &m, sizeof(m), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(m))
			_exit(0);
		for (slot = -1, i = 0; i < HELPER_FILES && slot < 0; i++)
			if (tab[i].fd > 0 && tab[i].id == m.id)
				slot = i;
		r = 0;
		if (m.job == JOB_CLOSE) {
			if (slot >= 0) {
				close(tab[slot].fd);
				tab[slot].fd = 0;
			}
		} else {
			int fd = slot >= 0 ? tab[slot].fd : -1;
			if (fd < 0) {
				m.rel[sizeof(m.rel) - 1] = '\0';
				snprintf(path, sizeof(path), "%s/%s", root, m.rel);
				fd = open(path, O_RDONLY | O_CLOEXEC);
			}
			if (fd < 0) {
				r = -errno;
			} else {
				uint64_t o, piece = m.piece ? m.piece : m.len;
				for (o = 0; o < m.len && r == 0; o += piece)
					r = -posix_fadvise(fd, (off_t)(m.start + o),
							   (off_t)(m.len - o < piece ? m.len - o : piece),
							   POSIX_FADV_WILLNEED);
				for (i = 0; slot < 0 && i < HELPER_FILES; i++)
					if (tab[i].fd <= 0) {
						tab[i].id = m.id;
						tab[i].fd = fd;
						slot = i;
					}
				if (slot < 0)
					close(fd); /* a full table: not kept */
			}
		}
		while (send(sock, &r, sizeof(r), MSG_NOSIGNAL) < 0 && errno == EINTR)
			;
	}
}

/* Hand one job to the helper and wait for its answer: 0 or -errno. */
static int
helper_job(const struct kick *k)
{
	static struct job_msg m;
	ssize_t n;
	int r;

	memset(&m, 0, offsetof(struct job_msg, rel));
	m.id = (uint64_t)(uintptr_t)k->a;
	m.start = k->start;
	m.len = k->len;
	m.piece = ahead_piece;
	m.job = k->job;
	snprintf(m.rel, sizeof(m.rel), "%s", k->rel != NULL ? k->rel : "");
	while ((n = send(helper_sock, &m, sizeof(m), MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(m))
		return -EPIPE;
	while ((n = recv(helper_sock, &r, sizeof(r), 0)) < 0 && errno == EINTR)
		;
	return n == (ssize_t)sizeof(r) ? r : -EPIPE;
}

/* ------------------------------------------------- the kick thread */

/* A job is done or dropped: its file may kick again. */
static void
kick_done(struct kick *k)
{
	if (k->job == JOB_KICK) {
		pthread_mutex_lock(&k->a->lock);
		k->a->busy = false;
		pthread_mutex_unlock(&k->a->lock);
	}
	free(k->rel);
	if (k->unpin != NULL)
		k->unpin(k->arg);
	free(k);
}

/* Append k; under q_lock. */
static void
enqueue(struct kick *k)
{
	k->next = NULL;
	*q_last = k;
	q_last = &k->next;
	if (k->job == JOB_KICK)
		q_kicks++;
	pthread_cond_signal(&q_cond);
}

static void *
kick_thread(void *unused)
{
	struct kick *k;

	(void)unused;
	pthread_mutex_lock(&q_lock);
	for (;;) {
		while (q_first == NULL && !q_stop)
			pthread_cond_wait(&q_cond, &q_lock);
		if ((k = q_first) == NULL)
			break;
		if ((q_first = k->next) == NULL)
			q_last = &q_first;
		if (k->job == JOB_KICK)
			q_kicks--;
		if (!q_stop || k->job == JOB_CLOSE) {
			pthread_mutex_unlock(&q_lock);
			if (helper_job(k) == 0 && k->job == JOB_KICK)
				atomic_fetch_add(&mount_ahead_kicks, 1);
		} else {
			pthread_mutex_unlock(&q_lock);
		}
		kick_done(k);
		pthread_mutex_lock(&q_lock);
	}
	pthread_mutex_unlock(&q_lock);
	return NULL;
}

int
mount_ahead_start(const char *mountpoint, uint64_t piece)
{
	int sv[2], r;
	pid_t parent = getpid(), pid;

	if (strlen(mountpoint) >= PATH_MAX)
		return -ENAMETOOLONG;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	if (pid == 0) {
		/* nothing but the socket: above all not the FUSE device */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		signal(SIGHUP, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		if (dup2(sv[1], 3) < 0)
			_exit(1);
		close_range(4, ~0u, 0);
		helper_main(3, mountpoint);
	}
	close(sv[1]);
	helper_sock = sv[0];
	atomic_store(&helper_pid, pid);
	ahead_piece = piece;
	q_stop = false;
	r = pthread_create(&q_thread, NULL, kick_thread, NULL);
	if (r != 0) {
		close(helper_sock);
		helper_sock = -1;
		waitpid(pid, NULL, 0);
		return -r;
	}
	atomic_store(&ahead_on, true);
	return 0;
}

void
mount_ahead_stop(void)
{
	pid_t pid = atomic_load(&helper_pid);

	if (!atomic_exchange(&ahead_on, false))
		return;
	pthread_mutex_lock(&q_lock);
	q_stop = true;
	pthread_cond_signal(&q_cond);
	pthread_mutex_unlock(&q_lock);
	pthread_join(q_thread, NULL);
	close(helper_sock); /* the helper's end of the socket: it exits */
	helper_sock = -1;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* Queue a kick of [start, start + len) for a, whose busy flag the
 * caller has set; a kick that cannot be queued is dropped. */
static void
queue_kick(struct mount_ahead *a, uint64_t start, uint64_t len,
	   mount_ahead_path_fn path, void (*pin)(void *),
	   void (*unpin)(void *), void *arg)
{
	char rel[PATH_MAX];
	struct kick *k;
	bool queued = false;

	if ((k = calloc(1, sizeof(*k))) == NULL) {
		pthread_mutex_lock(&a->lock);
		a->busy = false;
		pthread_mutex_unlock(&a->lock);
		return;
	}
	k->job = JOB_KICK;
	k->a = a;
	k->start = start;
	k->len = len;
	k->arg = arg;
	if (path(arg, rel, sizeof(rel)) == 0 && (k->rel = strdup(rel)) != NULL) {
		if (pin != NULL)
			pin(arg);
		k->unpin = unpin;
		pthread_mutex_lock(&q_lock);
		if (q_kicks < QUEUE_LEN && !q_stop) {
			enqueue(k);
			queued = true;
		}
		pthread_mutex_unlock(&q_lock);
	}
	if (!queued)
		kick_done(k);
}

/* Ask for the window from start, twice as long as the last (AHEAD_MIN
 * first, AHEAD_MAX at most); returns its length.  Under a->lock. */
static uint64_t
next_window(struct mount_ahead *a, uint64_t start)
{
	a->win = a->win == 0 ? AHEAD_MIN : a->win * 2 >= AHEAD_MAX ? AHEAD_MAX : a->win * 2;
	a->end = start + a->win;
	a->busy = true;
	a->kicked = true;
	return a->win;
}

void
mount_ahead_read(struct mount_ahead *a, uint64_t off, size_t size,
		 mount_ahead_path_fn path, void (*pin)(void *),
		 void (*unpin)(void *), void *arg)
{
	uint64_t len;
	bool seq;

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
	len = next_window(a, off + PAGE);
	pthread_mutex_unlock(&a->lock);
	queue_kick(a, off + PAGE, len, path, pin, unpin, arg);
}

void
mount_ahead_write(struct mount_ahead *a, uint64_t off, size_t size,
		  mount_ahead_path_fn path, void (*pin)(void *),
		  void (*unpin)(void *), void *arg)
{
	uint64_t start, len;

	if (!atomic_load(&ahead_on))
		return;
	pthread_mutex_lock(&a->lock);
	/* the trip wire: the writer's pages come back inside the last
	 * window asked for, so the writer itself is near its end */
	if (a->busy || a->win == 0 || a->end == UINT64_MAX ||
	    off + size <= a->end - a->win || off >= a->end) {
		pthread_mutex_unlock(&a->lock);
		return;
	}
	start = a->end;
	len = next_window(a, start);
	pthread_mutex_unlock(&a->lock);
	queue_kick(a, start, len, path, pin, unpin, arg);
}

void
mount_ahead_idle(struct mount_ahead *a, void (*pin)(void *),
		 void (*unpin)(void *), void *arg)
{
	struct kick *k;

	bool kicked;

	if (!atomic_load(&ahead_on))
		return;
	pthread_mutex_lock(&a->lock);
	kicked = a->kicked;
	a->kicked = false;
	pthread_mutex_unlock(&a->lock);
	if (!kicked)
		return; /* no descriptor: none was ever asked for */
	if ((k = calloc(1, sizeof(*k))) == NULL) {
		fprintf(stderr, "clio mount: out of memory: a file of the mount stays open\n");
		return;
	}
	k->job = JOB_CLOSE;
	k->a = a;
	k->arg = arg;
	if (pin != NULL)
		pin(arg);
	k->unpin = unpin;
	pthread_mutex_lock(&q_lock);
	enqueue(k);
	pthread_mutex_unlock(&q_lock);
}
