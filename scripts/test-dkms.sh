#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kiwi through DKMS on both kernels: the VM test dkms.sh (dkms add, build,
# install; the module loads and moves data; dkms remove leaves nothing) on
# Debian 12's kernel, then on Debian 13's (scripts/test-debian13.sh, whose
# copy of the tree it builds from). Prints TAP lines; run after make (the
# provider, installed in the VM, is this tree's).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/lib-vm.sh"
cd "$root"
out=$root/build/dkms
mkdir -p "$out"
rc=0

vm_tests_debian12 "$out" dkms.sh || rc=1
KIWI_D13_TESTS=dkms.sh scripts/test-debian13.sh || rc=1
exit "$rc"
