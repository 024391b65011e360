/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fastclock.c - a clock for timing requests: CLOCK_MONOTONIC's seconds,
 * read from the processor's time-stamp counter where the kernel itself
 * keeps time with it.
 *
 * A cached read is timed twice and costs a few hundred nanoseconds; two
 * clock_gettime calls (about 30 ns each under a hypervisor's clock) are
 * a tenth of it, two reads of the counter (about 12 ns) a twentieth.
 * Invariants:
 *  1. The counter is used only when the kernel's clocksource is "tsc"
 *     (the kernel has then checked that it is invariant and the same on
 *     every processor), or "kvm-clock" on a processor whose flags say
 *     constant_tsc and nonstop_tsc and whose clock_gettime stays in the
 *     vDSO (under 200 ns: the kernel serves kvm-clock there only while
 *     the hypervisor marks the counter stable across processors; it is
 *     then the counter, scaled).  Otherwise, and off x86-64, now_fast()
 *     is now_monotonic().
 *  2. The rate is measured once, at the first call, against
 *     CLOCK_MONOTONIC over 1 ms, each end the middle of the tightest of
 *     up to 16 bracketing clock reads (a relative error of about 1e-4
 *     when a bracket is under 100 ns); the values are meant for
 *     differences (durations), not for comparison with other clocks.
 *  3. fc_scale and the origin are written once, inside pthread_once,
 *     and only read afterwards.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "util.h"

#define FC_CALIBRATE_S 1e-3	/* the calibration's span */
#define FC_TRIES 16		/* bracketing reads at each end, at most */
#define FC_TIGHT_S 1e-6		/* a bracket this tight ends the tries */

static pthread_once_t fc_once = PTHREAD_ONCE_INIT;
static double fc_scale;	/* seconds per tick; 0: use clock_gettime */
static double fc_t0;
static uint64_t fc_tsc0;

#if defined(__x86_64__)
#define FC_VDSO_MAX_S 200e-9	/* a clock_gettime this quick stayed in the vDSO */

static int
clocksource_is(const char *want)
{
	char name[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	if (f == NULL)
		return 0;
	if (fgets(name, sizeof(name), f) == NULL)
		name[0] = '\0';
	fclose(f);
	name[strcspn(name, "\n")] = '\0';
	return strcmp(name, want) == 0;
}

/* Whether /proc/cpuinfo's first flags line names every flag of want. */
static int
cpu_has_flags(const char *const *want, int n)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		for (int i = 0; i < n; i++) {
			size_t len = strlen(want[i]);
			const char *p = line;

			while ((p = strstr(p, want[i])) != NULL) {
				if (p[-1] == ' ' && (p[len] == ' ' || p[len] == '\n'))
					break;
				p += len;
			}
			found += p != NULL;
		}
		break;
	}
	fclose(f);
	return found == n;
}

/* The fastest of a few clock_gettime calls, seconds. */
static double
clock_read_cost(void)
{
	double best = 1.0;

	for (int i = 0; i < FC_TRIES; i++) {
		double a = now_monotonic(), b = now_monotonic();

		best = b - a < best ? b - a : best;
	}
	return best;
}

static int
kernel_keeps_time_with_tsc(void)
{
	static const char *const stable[] = { "constant_tsc", "nonstop_tsc" };

	if (clocksource_is("tsc"))
		return 1;
	return clocksource_is("kvm-clock") && cpu_has_flags(stable, 2) &&
	       clock_read_cost() < FC_VDSO_MAX_S;
}
#endif

#if defined(__x86_64__)
/* A reading of the counter and the CLOCK_MONOTONIC time it was taken
 * at: the middle of the tightest of a few bracketing clock reads (a
 * preemption inside a bracket only widens it). */
static void
fc_pair(double *t, uint64_t *c)
{
	double best = 1.0;

	for (int i = 0; i < FC_TRIES; i++) {
		double a = now_monotonic();
		uint64_t k = __rdtsc();
		double b = now_monotonic();

		if (b - a < best) {
			best = b - a;
			*t = a + (b - a) / 2;
			*c = k;
		}
		if (best < FC_TIGHT_S)
			break;
	}
}
#endif

static void
fc_init(void)
{
#if defined(__x86_64__)
	double t0 = 0.0, t1 = 0.0;
	uint64_t c0 = 0, c1 = 0;

	if (!kernel_keeps_time_with_tsc())
		return;
	fc_pair(&t0, &c0);
	while (now_monotonic() - t0 < FC_CALIBRATE_S)
		;
	fc_pair(&t1, &c1);
	if (c1 <= c0 || t1 <= t0)
		return;
	fc_t0 = t1;
	fc_tsc0 = c1;
	fc_scale = (t1 - t0) / (double)(c1 - c0);
#endif
}

double
now_fast(void)
{
	pthread_once(&fc_once, fc_init);
#if defined(__x86_64__)
	if (fc_scale > 0.0)
		return fc_t0 + (double)(int64_t)(__rdtsc() - fc_tsc0) * fc_scale;
#endif
	return now_monotonic();
}
