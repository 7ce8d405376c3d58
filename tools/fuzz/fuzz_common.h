/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Shared bits of kiwi's libFuzzer harnesses: they link the module's own
 * kiwi_wire.c, built for the host through kiwi_wire_shim.h.
 */
#ifndef KIWI_FUZZ_COMMON_H
#define KIWI_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#include "kiwi_wire.h"

/* An invariant that fails is a crash for libFuzzer: it keeps the input. */
#define ASSERT(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: invariant failed: %s\n",	\
			__FILE__, __LINE__, #cond);			\
		abort();						\
	}								\
} while (0)

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);

#endif /* KIWI_FUZZ_COMMON_H */
