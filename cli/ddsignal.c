/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ddsignal.c - signals during `clio dd`: SIGINT, SIGTERM, SIGHUP and
 * SIGPIPE end the copy after the cache is written back and the summary
 * printed, then the process dies of the signal (GNU dd does this for
 * SIGINT); SIGUSR1 prints the statistics and the copy goes on.
 *
 * Invariants:
 *  1. The signals are blocked in every thread from the start of cmd_dd,
 *     before the cache starts its threads (they inherit the mask), and
 *     are accepted only through a signalfd: no code runs in a handler.
 *  2. A signal ignored when clio dd starts stays ignored (a background
 *     job's SIGINT, a parent's SIGPIPE), as GNU dd leaves it.
 *  3. Every wait for a pipe or terminal goes through dd_wait_fd, which
 *     polls the signalfd too, so a read blocked on a slow pipe returns as
 *     soon as a signal comes; there is no window in which a signal that
 *     arrived is not seen before the next wait.
 *  4. Between waits, the copy loop looks at the signalfd once per tick of
 *     CLOCK_MONOTONIC_COARSE (a few milliseconds; reading that clock
 *     costs no system call), not once per block.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "dd.h"

static const int ending_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
static sigset_t taken;
static int sfd = -1;
static int ending;

static bool
ignored(int sig)
{
	struct sigaction sa;

	return sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
}

int
dd_signals_block(void)
{
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
	return sfd < 0 ? -errno : 0;
}

int
dd_signal_poll(struct dd *dd)
{
	struct signalfd_siginfo si;

	if (sfd < 0)
		return ending;
	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGUSR1)
			dd_print_stats(dd);
		else if (ending == 0)
			ending = (int)si.ssi_signo;
	}
	return ending;
}

int
dd_signal_check(struct dd *dd)
{
	static struct timespec last;
	struct timespec now;

	if (ending != 0 || clock_gettime(CLOCK_MONOTONIC_COARSE, &now) < 0 ||
	    now.tv_sec != last.tv_sec || now.tv_nsec != last.tv_nsec) {
		last = now;
		return dd_signal_poll(dd);
	}
	return 0;
}

int
dd_signal_pending(void)
{
	return ending;
}

int
dd_wait_fd(struct dd *dd, int fd, bool for_write)
{
	struct pollfd p[2] = {
		{ .fd = fd, .events = for_write ? POLLOUT : POLLIN },
		{ .fd = sfd, .events = POLLIN },
	};

	for (;;) {
		int timeout = dd->status == ST_PROGRESS ? 1000 : -1;
		int n = poll(p, sfd >= 0 ? 2 : 1, timeout);

		if (n < 0 && errno != EINTR)
			return 0; /* let the read or write report it */
		/* ready data is taken first: the copy loop stops after it */
		if (n > 0 && p[0].revents != 0)
			return 0;
		if (dd_signal_poll(dd) != 0)
			return -EINTR;
		dd_progress(dd);
	}
}

void
dd_signal_die(int sig)
{
	sigset_t one;

	if (sig == 0)
		return;
	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	raise(sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
}
