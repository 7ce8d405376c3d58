#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): make install puts the module, the provider and its
# driver file where the kernel and libibverbs look for them; make uninstall
# removes exactly those; the provider build refuses a libibverbs without
# IBVERBS_PRIVATE_34. Run after make. Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
tap_begin "make install / uninstall"

dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
kver=$(make -s -C "$root" --no-print-directory print-kver)
multiarch=$(cc -print-multiarch)

check "make install DESTDIR=... succeeds" \
	make -s -C "$root" install DESTDIR="$dest"
vermagic=$(modinfo -F vermagic "$root/drivers/infiniband/sw/kiwi/kiwi.ko" | cut -d" " -f1)
check "install targets the release the module was built for ($vermagic)" \
	test "$kver" = "$vermagic"
check "kiwi.ko is under /lib/modules/$kver/updates" \
	cmp -s "$root/drivers/infiniband/sw/kiwi/kiwi.ko" \
	"$dest/lib/modules/$kver/updates/kiwi.ko"
check "the provider is in libibverbs' provider directory" \
	cmp -s "$root/userspace/libkiwi-rdmav34.so" \
	"$dest/usr/lib/$multiarch/libibverbs/libkiwi-rdmav34.so"
check "kiwi.driver names the provider" \
	grep -qx "driver kiwi" "$dest/etc/libibverbs.d/kiwi.driver"
check "make uninstall DESTDIR=... succeeds" \
	make -s -C "$root" uninstall DESTDIR="$dest"
check "uninstall leaves no file behind" \
	test -z "$(find "$dest" -type f)"

out=$(make -s -C "$root/userspace" check-pabi \
	LIBIBVERBS="/usr/lib/$multiarch/libc.so.6" 2>&1)
rc=$?
check "the build stops on a libibverbs without IBVERBS_PRIVATE_34, saying so" \
	eval '[ $rc -ne 0 ] && has_line "$out" "does not export IBVERBS_PRIVATE_34"'
tap_end
