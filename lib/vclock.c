/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * vclock.c - the virtual clock of the simulated devices.
 *
 * One clock per process, in seconds, starting at 0.  It only moves
 * forward: a caller that waits for a request advances it to the request's
 * completion time; host-side costs add to it.  Experiments measure
 * differences of it, so it never needs resetting.
 */
#include <stdatomic.h>
#include <string.h>

#include "internal.h"

static _Atomic uint64_t vclock_bits; /* a double, stored as its bits */

static double
bits_to_double(uint64_t b)
{
	double d;

	memcpy(&d, &b, sizeof(d));
	return d;
}

static uint64_t
double_to_bits(double d)
{
	uint64_t b;

	memcpy(&b, &d, sizeof(b));
	return b;
}

double
vclock_now(void)
{
	return bits_to_double(atomic_load(&vclock_bits));
}

double
clio_vclock_now(void)
{
	return vclock_now();
}

void
vclock_advance_to(double t)
{
	uint64_t old = atomic_load(&vclock_bits);

	while (bits_to_double(old) < t &&
	       !atomic_compare_exchange_weak(&vclock_bits, &old,
					     double_to_bits(t)))
		;
}

void
vclock_add(double dt)
{
	uint64_t old = atomic_load(&vclock_bits);

	while (!atomic_compare_exchange_weak(
		&vclock_bits, &old, double_to_bits(bits_to_double(old) + dt)))
		;
}
