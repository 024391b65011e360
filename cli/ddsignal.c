/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ddsignal.c - signals during `clio dd`: SIGINT, SIGTERM, SIGHUP,
 * SIGPIPE, SIGQUIT, SIGUSR2 and SIGALRM end the copy after the cache is
 * written back and the summary printed, then the process dies of the
 * signal (GNU dd does this for SIGINT; it has no cache to lose at the
 * others); SIGUSR1 prints the statistics and the copy goes on.  A second
 * ending signal ends the process at once, also while the copy waits for
 * a device that does not answer.
 *
 * Invariants:
 *  1. The signals are blocked in every thread from the start of cmd_dd,
 *     before the cache starts its threads (they inherit the mask), and
 *     are accepted only through a signalfd: no code runs in a handler.
 *  2. A signal ignored when clio dd starts stays ignored (a background
 *     job's SIGINT, a parent's SIGPIPE), as GNU dd leaves it.
 *  3. The watcher thread takes the signals sent to the process from the
 *     signalfd as they come: it records them (ending, usr1) and wakes
 *     dd_wait_fd through an eventfd, so that a read blocked on a slow
 *     pipe returns as soon as a signal comes.  The copy thread reads the
 *     signalfd too, for the SIGPIPE of its own write (a signal sent to one
 *     thread is seen only by that thread's reads of the signalfd).
 *  4. The copy loop looks at the recorded signals (atomics) before each
 *     block: no system call per block.
 *  5. An ending signal that comes while one is recorded ends the process
 *     at once (but a SIGPIPE, which the copy's own writes bring): the
 *     thread that took it unblocks it for itself and raises it.  While
 *     the first one has not ended the copy after 2 s, the watcher says
 *     so once on standard error (and that a second one loses what is
 *     not written).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "dd.h"

static const int ending_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE,
				       SIGQUIT, SIGUSR2, SIGALRM };
static sigset_t taken;
static int sfd = -1, wakefd = -1;
static _Atomic int ending;
static _Atomic unsigned usr1_seen; /* SIGUSR1s recorded */
static unsigned usr1_done;	   /* of those, printed (copy thread) */
static _Atomic bool finished;	   /* the copy thread is done with dd */

static bool
ignored(int sig)
{
	struct sigaction sa;

	return sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
}

static void
die_now(int sig)
{
	sigset_t one;

	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	raise(sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
}

/* Record one signal taken from the signalfd; true if it was an ending
 * one sent by someone (not a SIGPIPE, which each write to a closed pipe
 * brings) that came while another was recorded. */
static bool
record(int sig)
{
	int none = 0;

	if (sig == SIGUSR1) {
		atomic_fetch_add(&usr1_seen, 1);
		return false;
	}
	return !atomic_compare_exchange_strong(&ending, &none, sig) && sig != SIGPIPE;
}

static void
wake_copy(void)
{
	uint64_t one = 1;

	if (wakefd >= 0)
		(void)!write(wakefd, &one, sizeof(one));
}

static void *
watcher_main(void *arg)
{
	struct pollfd p = { .fd = sfd, .events = POLLIN };
	bool hinted = false;

	(void)arg;
	for (;;) {
		struct signalfd_siginfo si;
		int timeout = atomic_load(&ending) != 0 && !hinted ? 2000 : -1;
		int n = poll(&p, 1, timeout);

		if (n == 0) {
			if (!atomic_load(&finished))
				fprintf(stderr, "clio dd: still waiting for the devices; the "
						"signal again ends clio dd now, and what "
						"is not written is lost\n");
			hinted = true;
			continue;
		}
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (record((int)si.ssi_signo))
				die_now((int)si.ssi_signo);
			wake_copy();
		}
	}
	return NULL;
}

int
dd_signals_block(void)
{
	pthread_t watcher;
	size_t i;

	sigemptyset(&taken);
	for (i = 0; i < sizeof(ending_signals) / sizeof(ending_signals[0]); i++)
		if (!ignored(ending_signals[i]))
			sigaddset(&taken, ending_signals[i]);
	if (!ignored(SIGUSR1))
		sigaddset(&taken, SIGUSR1);
	if (pthread_sigmask(SIG_BLOCK, &taken, NULL) != 0)
		return -EINVAL;
	sfd = signalfd(-1, &taken, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0)
		return -errno;
	wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wakefd < 0)
		return -errno;
	if (pthread_create(&watcher, NULL, watcher_main, NULL) != 0)
		return -EAGAIN;
	pthread_detach(watcher);
	return 0;
}

/* The copy thread's look: its own signals, then what was recorded. */
int
dd_signal_poll(struct dd *dd)
{
	struct signalfd_siginfo si;

	if (sfd >= 0)
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			if (record((int)si.ssi_signo))
				die_now((int)si.ssi_signo);
	return dd_signal_check(dd);
}

int
dd_signal_check(struct dd *dd)
{
	unsigned seen = atomic_load_explicit(&usr1_seen, memory_order_relaxed);

	for (; usr1_done != seen; usr1_done++)
		dd_print_stats(dd);
	return atomic_load_explicit(&ending, memory_order_relaxed);
}

int
dd_signal_pending(void)
{
	return atomic_load(&ending);
}

int
dd_wait_fd(struct dd *dd, int fd, bool for_write)
{
	struct pollfd p[2] = {
		{ .fd = fd, .events = for_write ? POLLOUT : POLLIN },
		{ .fd = wakefd, .events = POLLIN },
	};

	for (;;) {
		int timeout = dd->status == ST_PROGRESS ? 1000 : -1;
		int n = poll(p, wakefd >= 0 ? 2 : 1, timeout);
		uint64_t count;

		if (n < 0 && errno != EINTR)
			return 0; /* let the read or write report it */
		/* ready data is taken first: the copy loop stops after it */
		if (n > 0 && p[0].revents != 0)
			return 0;
		if (wakefd >= 0)
			(void)!read(wakefd, &count, sizeof(count));
		if (dd_signal_check(dd) != 0)
			return -EINTR;
		dd_progress(dd);
	}
}

void
dd_signal_die(int sig)
{
	atomic_store(&finished, true);
	if (sig != 0)
		die_now(sig);
}
