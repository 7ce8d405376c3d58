# SPDX-License-Identifier: GPL-2.0
# The libibverbs libkiwi builds against and the layout of its private
# provider ABI (verbs_pabi.h), read off the library; included by
# userspace/Makefile and by the tests that compile libkiwi's headers.
# VERBS_ROOT=DIR: an rdma-core release unpacked into DIR instead of the
# system's.

MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
LIBDIR ?= /usr/lib/$(MULTIARCH)
VERBS_ROOT ?=
LIBIBVERBS := $(VERBS_ROOT)$(LIBDIR)/libibverbs.so.1

# rdma-core names its libraries lib*.so.1.<minor>.<release>: the release is
# the major version after the minor.
VERBS_FILE := $(notdir $(realpath $(LIBIBVERBS)))
RDMA_CORE := $(word 5,$(subst ., ,$(VERBS_FILE)))
PABI := $(shell readelf -W --dyn-syms "$(LIBIBVERBS)" 2>/dev/null | \
	  grep -oE '@IBVERBS_PRIVATE_[0-9]+' | head -n1 | cut -d_ -f3)
# The ABI each release exports, and the releases verbs_pabi.h knows.
RDMA_CORE_MIN := 36
RDMA_CORE_MAX := 65
PABI_WANTED = $(shell r=$(or $(filter-out 0%,$(RDMA_CORE)),0); \
	if [ $$r -ge 65 ]; then echo 65; elif [ $$r -ge 64 ]; then echo 64; \
	elif [ $$r -ge 59 ]; then echo 59; elif [ $$r -ge 57 ]; then echo 57; \
	else echo 34; fi)
# The first release of each layout of the ABI (verbs_pabi.h's table), and
# the one after the last known: a provider works with the releases from
# its layout's first to the next one's, not included (VERBS_FROM and
# VERBS_UNTIL: libkiwi's check of its loader at load time, and the Debian
# package's dependency).
LAYOUT_FIRST := 36 57 59 62 64 65 66
VERBS_FROM = $(lastword $(foreach f,$(LAYOUT_FIRST),$(shell [ $(or $(RDMA_CORE),0) -ge $(f) ] && echo $(f))))
VERBS_UNTIL = $(firstword $(foreach f,$(LAYOUT_FIRST),$(shell [ $(or $(RDMA_CORE),0) -lt $(f) ] && echo $(f))))
PABI_CFLAGS := -DKIWI_PABI=$(PABI) -DKIWI_RDMA_CORE=$(RDMA_CORE)
ifneq ($(VERBS_ROOT),)
PABI_CFLAGS += -I$(VERBS_ROOT)/usr/include
PABI_LDFLAGS := -L$(VERBS_ROOT)$(LIBDIR)
endif
