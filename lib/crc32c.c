/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of the disk tier's blocks and index records.
 *
 * Invariant: crc32c(crc32c(0, a, n), b, m) == crc32c(0, a ‖ b, n + m), on
 * every path: the SSE4.2 instruction (x86-64, chosen once at run time by
 * the CPU's feature bit) and the table (everywhere else) give the same
 * value; crc32c(0, "123456789", 9) == 0xe3069283.
 *
 * The SSE4.2 path runs three crc32 instructions at once over three
 * adjacent pieces of LONG (then SHORT) bytes, one instruction's latency
 * hiding the others', and joins them: the state after a piece B
 * following state s is zeros(s, |B|) ^ crc(0, B), where zeros (feeding
 * |B| zero bytes) is linear in s and so four table look-ups (shift_long,
 * shift_short, built at start from the instruction itself).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tier.h"

static uint32_t table[256];

static void
table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		table[i] = c;
	}
}

static uint32_t
crc_table(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
#define LONG 2048
#define SHORT 256
static uint32_t shift_long[4][256], shift_short[4][256];

static uint32_t
shift(uint32_t tab[4][256], uint32_t c)
{
	return tab[0][c & 0xff] ^ tab[1][(c >> 8) & 0xff] ^
	       tab[2][(c >> 16) & 0xff] ^ tab[3][c >> 24];
}

/* The state after feeding n zero bytes to state c. */
__attribute__((target("sse4.2"))) static uint32_t
zeros(uint32_t c, size_t n)
{
	uint64_t x = c;

	for (; n >= 8; n -= 8)
		x = __builtin_ia32_crc32di(x, 0);
	return (uint32_t)x;
}

static void
shift_init(uint32_t tab[4][256], size_t n)
{
	uint32_t bit[32];

	for (int k = 0; k < 32; k++)
		bit[k] = zeros(1u << k, n);
	for (int j = 0; j < 4; j++)
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t v = 0;
			for (int k = 0; k < 8; k++)
				if (b & (1u << k))
					v ^= bit[8 * j + k];
			tab[j][b] = v;
		}
}

/* Three interleaved streams of len bytes each from p: the state after
 * all 3 * len bytes from state c. */
__attribute__((target("sse4.2"))) static uint32_t
crc3(uint32_t c, const unsigned char *p, size_t len, uint32_t tab[4][256])
{
	uint64_t c0 = c, c1 = 0, c2 = 0;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t w0, w1, w2;
		memcpy(&w0, p + i, 8);
		memcpy(&w1, p + len + i, 8);
		memcpy(&w2, p + 2 * len + i, 8);
		c0 = __builtin_ia32_crc32di(c0, w0);
		c1 = __builtin_ia32_crc32di(c1, w1);
		c2 = __builtin_ia32_crc32di(c2, w2);
	}
	c0 = shift(tab, (uint32_t)c0) ^ (uint32_t)c1;
	return shift(tab, (uint32_t)c0) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t
crc_sse42(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc;

	for (; len >= 3 * LONG; p += 3 * LONG, len -= 3 * LONG)
		c = crc3((uint32_t)c, p, LONG, shift_long);
	for (; len >= 3 * SHORT; p += 3 * SHORT, len -= 3 * SHORT)
		c = crc3((uint32_t)c, p, SHORT, shift_short);
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

static uint32_t (*impl)(uint32_t, const unsigned char *, size_t);
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void
choose(void)
{
	table_init();
	impl = crc_table;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2")) {
		shift_init(shift_long, LONG);
		shift_init(shift_short, SHORT);
		impl = crc_sse42;
	}
#endif
}

uint32_t
crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&once, choose);
	return ~impl(~crc, buf, len);
}

uint32_t
crc32c_table(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&once, choose);
	return ~crc_table(~crc, buf, len);
}
