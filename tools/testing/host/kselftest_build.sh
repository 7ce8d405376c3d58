#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): kiwi's selftests directory copied into the kernel tree
# of Debian's linux-source-6.1 (build/ksft/linux-source-6.1: its Makefile,
# scripts/ and tools/testing/selftests/, unpacked here once) builds the
# kernel's way: the kernel's "make clean" removes every program copied in
# and its "make ... TARGETS=drivers/infiniband/kiwi" (lib.mk) builds each
# again. The VM test kselftest_tree.sh then runs them with the kernel's
# runner. Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
tap_begin "kselftest build in linux-source-6.1's tree"

src=/usr/src/linux-source-6.1.tar.xz
top=linux-source-6.1
tree=$root/build/ksft/$top
target=drivers/infiniband/kiwi
dest=$tree/tools/testing/selftests/$target

unpack() {
	[ -f "$tree/tools/testing/selftests/lib.mk" ] && return 0
	rm -rf "$root/build/ksft" && mkdir -p "$root/build/ksft" &&
		tar -C "$root/build/ksft" -xJf "$src" "$top/Makefile" "$top/scripts" \
			"$top/tools/testing/selftests"
}
if ! check "linux-source-6.1's Makefile, scripts/ and selftests unpack" unpack; then
	tap_end
fi
rm -rf "$dest"
mkdir -p "$dest"
cp -a "$root/tools/testing/selftests/$target/." "$dest/"

export KIWI_ROOT=$root
ksft() {
	make -s -C "$tree/tools/testing/selftests" TARGETS=$target "$@"
}
gen=$(make -s --no-print-directory -C "$root/tools/testing/selftests/$target" print-gen-files)
built() {
	local f n=0
	for f in $gen; do
		[ -x "$dest/$f" ] && n=$((n + 1))
	done
	echo "$n"
}
check "the kernel's make clean removes the $(wc -w <<<"$gen") programs copied in" \
	eval 'ksft clean >"$out/clean.log" 2>&1 && [ "$(built)" = 0 ]'
check "the kernel's make (lib.mk) builds each of them again" \
	eval 'ksft >"$out/build.log" 2>&1 && [ "$(built)" = "$(wc -w <<<"$gen")" ]' ||
	tail -20 "$out/build.log" | sed 's/^/# /'
out_bad=$(KIWI_ROOT=$tree make -s -C "$tree/tools/testing/selftests" TARGETS=$target 2>&1)
check "without kiwi's tree (KIWI_ROOT) the build stops, saying so" \
	has_line "$out_bad" "is not kiwi's tree: set KIWI_ROOT=<kiwi checkout>"
tap_end
