#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kiwi's Debian packages on both kernels: make deb, then the VM test deb.sh
# (apt-get install of both packages offline, DKMS builds the module in
# kiwi-dkms's postinst, the module and the packaged provider move data,
# apt-get purge leaves nothing) on Debian 12's kernel, then on Debian 13's
# (scripts/test-debian13.sh, whose VM installs the packages built here).
# Prints TAP lines; run after make (run_vm.sh stages this tree's module
# and provider first; deb.sh removes them before installing the packages).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/lib-vm.sh"
cd "$root"
out=$root/build/deb-test
mkdir -p "$out"

make -s deb >"$out/deb.log" 2>&1
build_verdict $? "$out/deb.log" "make deb builds kiwi-dkms and ibverbs-provider-kiwi" ||
	exit 1
rc=0
vm_tests_debian12 "$out" deb.sh || rc=1
KIWI_D13_TESTS=deb.sh scripts/test-debian13.sh || rc=1
exit "$rc"
