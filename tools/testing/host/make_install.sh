#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): make install puts the module, the provider and its
# driver file where the kernel and libibverbs look for them; make uninstall
# removes exactly those; the provider build refuses, saying why, a library
# that is not rdma-core's libibverbs, a release it does not know and one
# whose private ABI is not that release's. Run after make. Prints TAP.
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

# refused WHAT LIBIBVERBS MESSAGE: one point: the provider build against
# LIBIBVERBS stops, printing MESSAGE.
refused() {
	local out rc
	out=$(make -s -C "$root/userspace" check-pabi LIBIBVERBS="$2" 2>&1)
	rc=$?
	check "the build stops on $1, saying so" \
		eval '[ $rc -ne 0 ] && has_line "$out" "$3"'
}
# fake_verbs RELEASE ABI: a library named as rdma-core RELEASE's libibverbs
# that exports the private ABI IBVERBS_PRIVATE_ABI; prints its link's path.
fake_verbs() {
	local d=$dest/fake-$1-$2
	mkdir -p "$d"
	echo "IBVERBS_PRIVATE_$2 { global: verbs_register_driver_$2; local: *; };" >"$d/map"
	echo "void verbs_register_driver_$2(void) {}" |
		cc -shared -fPIC -x c - -Wl,--version-script="$d/map" \
			-o "$d/libibverbs.so.1.14.$1.0" &&
		ln -s "libibverbs.so.1.14.$1.0" "$d/libibverbs.so.1" &&
		echo "$d/libibverbs.so.1"
}
refused "a library that is not libibverbs" "/usr/lib/$multiarch/libc.so.6" \
	"exports no IBVERBS_PRIVATE_ ABI: not rdma-core's libibverbs"
refused "rdma-core 99, newer than libkiwi knows" "$(fake_verbs 99 99)" \
	"is rdma-core 99 \(IBVERBS_PRIVATE_99\); libkiwi knows the provider ABI of rdma-core 36 to 65 only"
refused "rdma-core 35, older than libkiwi knows" "$(fake_verbs 35 34)" \
	"is rdma-core 35 \(IBVERBS_PRIVATE_34\); libkiwi knows"
refused "rdma-core 56 exporting another release's ABI" "$(fake_verbs 56 57)" \
	"is rdma-core 56, which exports IBVERBS_PRIVATE_34, but it exports IBVERBS_PRIVATE_57"
out=$(make -s -C "$root/userspace" check-pabi LIBIBVERBS="$(fake_verbs 62 59)" 2>&1)
check "rdma-core 62 with IBVERBS_PRIVATE_59 passes the check" test -z "$out"
tap_end
