/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * kiwi: the few types and helpers the wire-format code needs, from the
 * kernel when built into the module, or from libc when built on the host
 * for unit tests and fuzzers. kiwi_wire.[ch] include nothing else.
 */
#ifndef _KIWI_WIRE_SHIM_H
#define _KIWI_WIRE_SHIM_H

#ifdef __KERNEL__

#include <linux/types.h>
#include <linux/string.h>
#include <linux/crc32c.h>
#include "kiwi_compat.h"

/*
 * Raw CRC32c update: no pre- or post-inversion. libcrc32c picks the
 * fastest implementation the CPU has (SSE4.2 on x86).
 */
static inline u32 kiwi_crc32c_update(u32 crc, const void *buf, size_t len)
{
	return crc32c(crc, buf, len);
}

#else /* host: unit tests and fuzzers */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The kernel's statement attribute that marks a deliberate case to case. */
#ifndef fallthrough
#define fallthrough __attribute__((__fallthrough__))
#endif

/* The kernel's fixed-width names, as linux/types.h spells them. */
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

static inline u16 get_unaligned_be16(const void *p)
{
	const u8 *b = p;

	return (u16)(b[0] << 8 | b[1]);
}

static inline u32 get_unaligned_be32(const void *p)
{
	const u8 *b = p;

	return (u32)b[0] << 24 | (u32)b[1] << 16 | (u32)b[2] << 8 | b[3];
}

static inline u64 get_unaligned_be64(const void *p)
{
	const u8 *b = p;

	return (u64)get_unaligned_be32(b) << 32 | get_unaligned_be32(b + 4);
}

static inline u32 get_unaligned_le32(const void *p)
{
	const u8 *b = p;

	return (u32)b[3] << 24 | (u32)b[2] << 16 | (u32)b[1] << 8 | b[0];
}

static inline void put_unaligned_be16(u16 v, void *p)
{
	u8 *b = p;

	b[0] = v >> 8;
	b[1] = v;
}

static inline void put_unaligned_be32(u32 v, void *p)
{
	u8 *b = p;

	b[0] = v >> 24;
	b[1] = v >> 16;
	b[2] = v >> 8;
	b[3] = v;
}

static inline void put_unaligned_be64(u64 v, void *p)
{
	put_unaligned_be32(v >> 32, p);
	put_unaligned_be32((u32)v, (u8 *)p + 4);
}

static inline void put_unaligned_le32(u32 v, void *p)
{
	u8 *b = p;

	b[0] = v;
	b[1] = v >> 8;
	b[2] = v >> 16;
	b[3] = v >> 24;
}

/*
 * Raw CRC32c (Castagnoli, reflected 0x82F63B78) update, a byte at a time
 * from a table made on first use: the fuzzers run it on every input, and
 * bit by bit it was most of their time.
 */
static inline u32 kiwi_crc32c_update(u32 crc, const void *buf, size_t len)
{
	static u32 table[256];
	static bool ready;
	const u8 *b = buf;
	u32 i, c;
	int k;

	if (!ready) {
		for (i = 0; i < 256; i++) {
			c = i;
			for (k = 0; k < 8; k++)
				c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
			table[i] = c;
		}
		ready = true;
	}
	while (len--)
		crc = (crc >> 8) ^ table[(crc ^ *b++) & 0xff];
	return crc;
}

#endif /* __KERNEL__ */

#endif /* _KIWI_WIRE_SHIM_H */
