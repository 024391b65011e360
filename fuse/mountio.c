/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mountio.c - the mount seen as a device by its programs: every READ and
 * WRITE request of the kernel, counted and timed by the daemon from the
 * moment it takes the request to its reply, for the "requests" figures
 * of `.clio-stats` (mountstats.c) and `clio stat`.
 *
 * Invariants (all under io_lock):
 *  1. inflight is the number of requests between mount_io_begin and
 *     mount_io_end; busy_s grows by the time inflight was above 0, and
 *     queue_s by the integral of inflight over time (so queue_s over an
 *     interval is iostat's aqu-sz, busy_s its %util).
 *  2. read_s and write_s are the sums of each request's time, so a count
 *     difference and a time difference give iostat's r_await and w_await.
 *  3. The totals only grow, from the start of the mount.
 */
#include <pthread.h>
#include <time.h>

#include "util.h"
#include "mount.h"

static pthread_mutex_t io_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mount_io_totals io;
static unsigned inflight;
static double last_change;

/* Account for the time since the last change of inflight; under io_lock. */
static void
advance(double now)
{
	if (inflight > 0 && now > last_change) {
		io.busy_s += now - last_change;
		io.queue_s += (now - last_change) * inflight;
	}
	last_change = now;
}

double
mount_io_begin(void)
{
	double now = now_monotonic();

	pthread_mutex_lock(&io_lock);
	advance(now);
	inflight++;
	pthread_mutex_unlock(&io_lock);
	return now;
}

void
mount_io_end(bool write, size_t bytes, double t0)
{
	double now = now_monotonic();

	pthread_mutex_lock(&io_lock);
	advance(now);
	inflight--;
	if (write) {
		io.writes++;
		io.write_bytes += bytes;
		io.write_s += now - t0;
	} else {
		io.reads++;
		io.read_bytes += bytes;
		io.read_s += now - t0;
	}
	pthread_mutex_unlock(&io_lock);
}

void
mount_io_get(struct mount_io_totals *t)
{
	pthread_mutex_lock(&io_lock);
	advance(now_monotonic());
	*t = io;
	pthread_mutex_unlock(&io_lock);
}
