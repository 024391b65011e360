/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of the disk tier's blocks and index records.
 *
 * Invariant: crc32c(crc32c(0, a, n), b, m) == crc32c(0, a ‖ b, n + m), on
 * every path: the SSE4.2 instruction (x86-64, chosen once at run time by
 * the CPU's feature bit) and the table (everywhere else) give the same
 * value; crc32c(0, "123456789", 9) == 0xe3069283.
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
__attribute__((target("sse4.2"))) static uint32_t
crc_sse42(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc;

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
	if (__builtin_cpu_supports("sse4.2"))
		impl = crc_sse42;
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
