/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sigsync.c - a signal that ends nbdkit writes the cache back at once
 * (sigsync.h).  nbdkit answers SIGINT, SIGQUIT and SIGTERM by serving
 * the clients still connected until they leave, and frees the plugin
 * and the filter (which writes the cache back) only then: a client that
 * stays, and the SIGKILL that an impatient user or a service manager
 * sends next, would lose every write acknowledged without FUA.  nbdkit
 * takes SIGHUP as those too; SIGUSR1, SIGUSR2 and SIGALRM, which it leaves
 * to their default action, would end the process at once with the same
 * loss: they end it once the cache is written back.
 *
 * Invariants:
 *  1. nbdkit's own handling is kept: our handler writes the signal's
 *     number to a pipe and calls the handler it replaced.  Each call of
 *     sigsync_start puts it in place for every watched signal whose
 *     handler is not ours by then (one that nbdkit set since is replaced
 *     in turn): the plugin calls it at the end of .after_fork, the plugin
 *     and the filter at each connection, before any write can be dirty.
 *     A signal nbdkit ignores is left alone; one it left to the default
 *     action is taken again with that action once the cache is written
 *     back.
 *     Before that, from .get_ready (before nbdkit forks), SIGUSR1,
 *     SIGUSR2 and SIGALRM run the early function (async-signal-safe) and
 *     then their default action: nothing is cached yet, but the plugin's
 *     socket file would be left.  install_handlers takes that handler
 *     for the default action it stands for.
 *  2. The watch thread reads the pipe and runs clio_sync on each cache:
 *     once it returns, every write acknowledged before the signal is on
 *     the device and the device flushed, or the failure is logged.  Writes
 *     of the clients that stay are cached as before.
 *  3. sigsync_stop puts nbdkit's handlers back and joins the thread
 *     before the cache is freed and the shared object unloaded: no
 *     handler or thread of ours outlives them.
 *  4. One watch per process, over every cache given to sigsync_start:
 *     the clio filter over the clio plugin has two, and nbdkit loads both
 *     modules with RTLD_GLOBAL, so that the filter's calls of these
 *     (exported) functions are the plugin's, loaded first and unloaded
 *     last.  A signal writes the caches back the last given first (the
 *     filter's, which writes into the plugin's, then the plugin's), all
 *     before a default action ends the process.  sigsync_stop(c) takes c
 *     out, once no write-back of it runs; the last one out stops the
 *     watch.
 *  5. sigsync_end(r) after a cache was stopped and freed with result r:
 *     a failed final write-back is remembered, and once no cache is left
 *     one that failed ends the process with EX_IOERR, as clio dd's would:
 *     nbdkit's own status is 0 however its plugin's unload went, and a
 *     service manager would not know that acknowledged writes were lost.
 *     The filter over the clio plugin frees its cache first (.cleanup),
 *     the plugin's still counted; the plugin's .unload comes last.
 */
#include <nbdkit-plugin.h> /* nbdkit_error, nbdkit_debug: the same in filters */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "sigsync.h"

static const int watched[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM };
#define NWATCHED (int)(sizeof(watched) / sizeof(watched[0]))

#define MAX_CACHES 8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool started;
static bool installed[NWATCHED];
static struct sigaction replaced[NWATCHED];
static int pipefd[2] = { -1, -1 };
static pthread_t watcher;
static void (*hook)(void);
/* invariant 4: the caches, in the order given; sync_lock held by a
 * write-back of them (never together with lock) */
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static clio_cache *caches[MAX_CACHES];
static int ncaches;
static bool lost; /* invariant 5 */

static void (*early_fn)(void);

static void
early_signal(int sig)
{
	struct sigaction dfl;
	sigset_t one;

	early_fn();
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
}

static bool
is_early(const struct sigaction *sa)
{
	return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == early_signal;
}

void
sigsync_early(void (*fn)(void))
{
	static const int left[] = { SIGUSR1, SIGUSR2, SIGALRM };
	struct sigaction sa, cur;
	size_t i;

	pthread_mutex_lock(&lock);
	early_fn = fn;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = early_signal;
	sigfillset(&sa.sa_mask);
	for (i = 0; i < sizeof(left) / sizeof(left[0]); i++)
		if (sigaction(left[i], NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
		    cur.sa_handler == SIG_DFL)
			sigaction(left[i], &sa, NULL);
	pthread_mutex_unlock(&lock);
}

static void
on_signal(int sig, siginfo_t *info, void *uctx)
{
	int saved = errno, i;
	unsigned char b = (unsigned char)sig;

	if (write(pipefd[1], &b, 1) < 0) {
		/* a full pipe: a write-back is already asked for */
	}
	for (i = 0; i < NWATCHED; i++) {
		if (watched[i] != sig)
			continue;
		if (replaced[i].sa_flags & SA_SIGINFO)
			replaced[i].sa_sigaction(sig, info, uctx);
		else if (replaced[i].sa_handler != SIG_DFL &&
			 replaced[i].sa_handler != SIG_IGN)
			replaced[i].sa_handler(sig);
	}
	errno = saved;
}

static void *
watch_main(void *arg)
{
	unsigned char b;
	int i, r;

	(void)arg;
	while (read(pipefd[0], &b, 1) == 1) {
		nbdkit_debug("signal %d: writing the cache back", b);
		pthread_mutex_lock(&sync_lock);
		for (i = ncaches - 1; i >= 0; i--) /* invariant 4: the outer first */
			if ((r = clio_sync(caches[i])) < 0)
				nbdkit_error("signal %d: writing the cache back: %s", b,
					     strerror(-r));
		pthread_mutex_unlock(&sync_lock);
		if (hook != NULL)
			hook();
		for (i = 0; i < NWATCHED; i++) {
			if (watched[i] != b || !installed[i] ||
			    (replaced[i].sa_flags & SA_SIGINFO) ||
			    replaced[i].sa_handler != SIG_DFL)
				continue;
			/* nobody else handles it: its default action, now,
			 * on this thread, which blocks every other signal */
			sigset_t one;

			sigemptyset(&one);
			sigaddset(&one, b);
			sigaction(b, &replaced[i], NULL);
			pthread_sigmask(SIG_UNBLOCK, &one, NULL);
			raise(b);
		}
	}
	return NULL;
}

/* Invariant 1: ours where the handler is not ours already; with lock. */
static void
install_handlers(void)
{
	struct sigaction sa, cur;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	for (i = 0; i < NWATCHED; i++) {
		if (sigaction(watched[i], NULL, &cur) < 0 ||
		    ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal) ||
		    (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN))
			continue;
		if (is_early(&cur)) {
			memset(&cur, 0, sizeof(cur));
			cur.sa_handler = SIG_DFL;
		}
		replaced[i] = cur;
		installed[i] = sigaction(watched[i], &sa, NULL) == 0;
	}
}

void
sigsync_start(clio_cache *c)
{
	sigset_t all, old;
	int r;

	pthread_mutex_lock(&sync_lock);
	for (r = 0; r < ncaches && caches[r] != c; r++)
		;
	if (r == ncaches && ncaches < MAX_CACHES)
		caches[ncaches++] = c;
	pthread_mutex_unlock(&sync_lock);
	pthread_mutex_lock(&lock);
	if (started) {
		if (pipefd[1] >= 0)
			install_handlers();
		pthread_mutex_unlock(&lock);
		return;
	}
	started = true;
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
		nbdkit_error("sigsync: pipe: %s (a signal will not write the cache back "
			     "before the last client leaves)", strerror(errno));
		goto out;
	}
	/* the thread reads, blocking; the handler's end stays nonblocking */
	if (fcntl(pipefd[0], F_SETFL, 0) < 0)
		nbdkit_debug("sigsync: fcntl: %s", strerror(errno));
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&watcher, NULL, watch_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		nbdkit_error("sigsync: pthread_create: %s (a signal will not write the "
			     "cache back before the last client leaves)", strerror(r));
		close(pipefd[0]);
		close(pipefd[1]);
		pipefd[0] = pipefd[1] = -1;
		goto out;
	}
	install_handlers();
out:
	pthread_mutex_unlock(&lock);
}

void
sigsync_set_hook(void (*fn)(void))
{
	pthread_mutex_lock(&lock);
	hook = fn;
	pthread_mutex_unlock(&lock);
}

void
sigsync_stop(clio_cache *c)
{
	struct sigaction cur, dfl;
	int i, j;

	pthread_mutex_lock(&sync_lock); /* no write-back of c runs */
	for (i = j = 0; i < ncaches; i++)
		if (caches[i] != c)
			caches[j++] = caches[i];
	ncaches = j;
	pthread_mutex_unlock(&sync_lock);
	if (j > 0) /* another module's cache is still watched */
		return;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	pthread_mutex_lock(&lock);
	for (i = 0; i < NWATCHED; i++)
		if (installed[i])
			sigaction(watched[i], &replaced[i], NULL);
		else if (sigaction(watched[i], NULL, &cur) == 0 && is_early(&cur))
			sigaction(watched[i], &dfl, NULL);
	if (pipefd[1] >= 0) {
		close(pipefd[1]);
		pthread_join(watcher, NULL);
		close(pipefd[0]);
	}
	pipefd[0] = pipefd[1] = -1;
	memset(installed, 0, sizeof(installed));
	started = false;
	pthread_mutex_unlock(&lock);
}

void
sigsync_end(int r)
{
	bool last, failed;

	pthread_mutex_lock(&sync_lock);
	if (r < 0)
		lost = true;
	last = ncaches == 0;
	failed = lost;
	pthread_mutex_unlock(&sync_lock);
	if (last && failed) {
		nbdkit_error("acknowledged writes were lost: exit status %d", EX_IOERR);
		fflush(NULL);
		_exit(EX_IOERR);
	}
}
