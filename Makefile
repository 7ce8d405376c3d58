# SPDX-License-Identifier: GPL-2.0
#
# kiwi: build the kernel module and the rdma-core provider.
#
#   make                 module (against KDIR) and provider
#   make install         (root) install both; make uninstall undoes it
#   make check           host unit tests (no VM); scripts/test.sh runs all,
#                        with the fuzzers and the VM tests
#   make bench           kiwi against siw, rxe and TCP in the VM (build/bench)
#   make bench-profile   perf profiles of 8-byte round trips or streams (build/bench-profile)
#   make deb             Debian packages kiwi-dkms and ibverbs-provider-kiwi (build/deb)
#
# KDIR defaults to the running kernel's build tree when present, else the
# headers of the kernel the VM boots (scripts/kernel-release.sh: KVER, or
# the newest installed linux-image-*-amd64), else the newest headers. To
# build for another kernel (Debian 13's beside Debian 12's, say), name its
# tree: make KDIR=/usr/src/linux-headers-6.12.57+deb13-amd64.

KVER_RUNNING := $(shell uname -r)
# Computed once (a recursive ?= would run the search at every use).
ifeq ($(origin KDIR),undefined)
KDIR := $(shell \
	k=$$(scripts/kernel-release.sh 2>/dev/null); \
	if [ -d /lib/modules/$(KVER_RUNNING)/build ]; then \
		echo /lib/modules/$(KVER_RUNNING)/build; \
	elif [ -n "$$k" ] && [ -d /usr/src/linux-headers-$$k ]; then \
		echo /usr/src/linux-headers-$$k; \
	else \
		ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n1; \
	fi)
endif
# Debian's header packages answer "make kernelrelease" with the upstream
# version (6.1.x); modules install under the release the kernel reports
# (6.1.0-N-amd64), which is UTS_RELEASE.
KVER ?= $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
	$(KDIR)/include/generated/utsrelease.h 2>/dev/null)

KBUILD_ARGS := -C $(KDIR) M=$(CURDIR) CONFIG_RDMA_KIWI=m
MODDIR := /lib/modules/$(KVER)/updates

.PHONY: all module provider ktest install uninstall clean clean-kernel check checkpatch sparse dkms-source \
	print-kver print-kdir bench bench-profile deb soak fuzz-long

all: module provider

module:
	@if [ -z "$(KDIR)" ] || [ ! -d "$(KDIR)" ]; then \
		echo "kiwi: no kernel build tree found; install linux-headers-amd64 or pass KDIR=" >&2; \
		exit 1; \
	fi
	$(MAKE) $(KBUILD_ARGS) modules

provider:
	$(MAKE) -C userspace

# The kernel test module the VM tests load (ktest.sh); not installed.
KTEST_DIR := tools/testing/selftests/drivers/infiniband/kiwi/kiwi_ktest
ktest:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/$(KTEST_DIR) modules

KO := drivers/infiniband/sw/kiwi/kiwi.ko

# install does not rebuild: build as a user first, then install as root.
install:
	@[ -f $(KO) ] || { echo "kiwi: $(KO) not built; run make first" >&2; exit 1; }
	install -D -m 0644 $(KO) $(DESTDIR)$(MODDIR)/kiwi.ko
	[ -n "$(DESTDIR)" ] || depmod -a $(KVER)
	$(MAKE) -C userspace install

uninstall:
	rm -f $(DESTDIR)$(MODDIR)/kiwi.ko
	[ -n "$(DESTDIR)" ] || depmod -a $(KVER)
	$(MAKE) -C userspace uninstall

check:
	$(MAKE) -C userspace check
	$(MAKE) -C tools/testing/wire

# The benchmark (tools/bench): builds what it runs, boots the VM, reports.
bench: module provider
	scripts/build-siw.sh
	scripts/build-smbdirect.sh
	$(MAKE) -C tools/bench
	tools/bench/bench.sh

# The long runs README quotes, their figures in build/long/ (soak.txt,
# fuzz.txt): a soak on the debug kernel (SOAK_SECONDS, 1800 by default),
# every fuzzer for FUZZ_LONG_RUNS executions (10^8).
SOAK_SECONDS ?= 1800
FUZZ_LONG_RUNS ?= 100000000
soak: module provider
	$(MAKE) -C tools/testing/selftests/drivers/infiniband/kiwi
	scripts/long-run.sh soak $(SOAK_SECONDS)
fuzz-long:
	scripts/long-run.sh fuzz $(FUZZ_LONG_RUNS)

# Where a small message's round trip (or a stream) spends its time
# (tools/bench/profile.sh): perf in the VM, kiwi against siw; results in
# build/bench-profile. The VM sees no environment: the PROF_* knobs and
# BENCH_KIWI_PARAMS are handed in (empty ones mean the defaults).
PROF_VARS := PROF_TRANSPORTS PROF_TESTS PROF_ITERS PROF_SIZE PROF_EVENT \
	PROF_TRACE PROF_TRACE_ITERS BENCH_KIWI_PARAMS
bench-profile: module provider
	scripts/build-siw.sh
	scripts/stage.sh
	scripts/vm-run.sh --timeout 3600 -- env $(foreach v,$(PROF_VARS),$(v)="$($(v))") \
		tools/bench/profile.sh build/bench-profile

# The source tree DKMS builds from (dkms.conf): make dkms-source
# [DESTDIR=...] installs it as /usr/src/kiwi-VERSION, for "dkms add".
DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
DKMS_SRC = $(DESTDIR)/usr/src/kiwi-$(DKMS_VERSION)
KIWI_SOURCES := $(filter-out %.mod.c,$(wildcard drivers/infiniband/sw/kiwi/*.[ch]))
dkms-source:
	install -d $(DKMS_SRC)/drivers/infiniband/sw/kiwi $(DKMS_SRC)/include/uapi/rdma
	install -m 0644 dkms.conf Kbuild $(DKMS_SRC)/
	install -m 0644 $(KIWI_SOURCES) drivers/infiniband/sw/kiwi/Kbuild \
		drivers/infiniband/sw/kiwi/Kconfig $(DKMS_SRC)/drivers/infiniband/sw/kiwi/
	install -m 0644 include/uapi/rdma/kiwi-abi.h $(DKMS_SRC)/include/uapi/rdma/

# Debian packages from packaging/debian (Documentation/infiniband/kiwi.rst,
# "Debian packages"): dpkg-buildpackage in a copy of the tracked files the
# packages are made of, build/deb/kiwi-VERSION, so this tree gets no
# debian/ and no build products; the version is dkms.conf's, written into
# the copy's debian/changelog. The .deb, .changes and .buildinfo files land
# in build/deb.
DEB_DIR := build/deb
DEB_SRC := $(DEB_DIR)/kiwi-$(DKMS_VERSION)
DEB_FILES := Makefile Kbuild dkms.conf drivers/infiniband/sw/kiwi include/uapi userspace
deb:
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_SRC)
	git ls-files -z -- $(DEB_FILES) | xargs -0 cp --parents -t $(DEB_SRC)
	cp -r packaging/debian $(DEB_SRC)/debian
	sed 's/@VERSION@/$(DKMS_VERSION)/' packaging/debian/changelog.in >$(DEB_SRC)/debian/changelog
	rm $(DEB_SRC)/debian/changelog.in
	cd $(DEB_SRC) && dpkg-buildpackage -us -uc -b

print-kver:
	@echo $(KVER)

print-kdir:
	@echo $(KDIR)

# Style and static checks; need the kernel's checkpatch.pl (CHECKPATCH=).
CHECKPATCH ?= scripts/checkpatch-run.sh
checkpatch:
	$(CHECKPATCH)

sparse:
	$(MAKE) $(KBUILD_ARGS) C=2 modules
	$(MAKE) -C $(KDIR) M=$(CURDIR)/$(KTEST_DIR) C=2 modules

# The kernel objects only (module and test modules), as before building the
# same tree for another kernel (scripts/test-debug.sh).
clean-kernel:
	-$(MAKE) $(KBUILD_ARGS) clean
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/$(KTEST_DIR) clean

clean: clean-kernel
	$(MAKE) -C userspace clean
	$(MAKE) -C tools/bench clean
