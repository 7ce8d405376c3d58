// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* kiwi: the tracepoints of kiwi_trace.h, defined once, here. */

#include "kiwi.h"

#define CREATE_TRACE_POINTS
#include "kiwi_trace.h"
