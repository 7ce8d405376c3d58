#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kiwi on Debian 13's kernel (6.12): fetch it (scripts/debian13-kernel.sh),
# build the module and the kernel test modules for it at W=1 in a copy of
# the tree (build/d13/tree: this tree's objects stay built for Debian 12's
# kernel), boot it in the VM and run a subset of the VM tests there. Prints
# TAP lines, each test's prefixed "Debian 13: ".
#
#   scripts/test-debian13.sh
#   KIWI_D13_TESTS="datapath.sh" scripts/test-debian13.sh   another subset
#   scripts/test-debian13.sh --prepare    only fetch and build, no VM
#   scripts/test-debian13.sh --vm         only the VM, on what --prepare built
#
# The user-space side (provider, test programs, perftest, rdma-core) is
# Debian 12's, as on a machine that runs a newer kernel than its release.
# deb.sh installs the packages of this tree's build/deb (make deb), which
# the VM sees read-only.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/lib-vm.sh"
out=$root/build/d13
tree=$out/tree
DEFAULT_TESTS="device_lifecycle.sh verbs_tools.sh datapath.sh ktest.sh tracepoints.sh restrack.sh storage_nvme.sh
	storage_smb.sh"
tests=$(echo ${KIWI_D13_TESTS:-$DEFAULT_TESTS})
part=${1:-all}
case "$part" in
all|--prepare|--vm) ;;
*) echo "usage: $0 [--prepare|--vm]" >&2; exit 2 ;;
esac

mkdir -p "$out"
if ! kroot=$("$root/scripts/debian13-kernel.sh" 2>"$out/kernel.log"); then
	cat "$out/kernel.log"
	echo "not ok - Debian 13: its kernel, headers and kbuild unpack (scripts/debian13-kernel.sh)"
	exit 1
fi
kver=$(cat "$kroot/kver")
kdir=$kroot/usr/src/linux-headers-$kver

if [ "$part" != --vm ]; then
	echo "ok - Debian 13: its kernel, headers and kbuild unpack ($kver)"
	build_for_kernel "$tree" "$kdir" KMODS="$kroot/lib/modules/$kver" KVER="$kver" \
		>"$out/build.log" 2>&1
	build_verdict $? "$out/build.log" "Debian 13: kiwi and the test modules build for $kver at W=1" ||
		exit 1
	# ksmbd and cifs with SMB Direct, from Debian 13's own source (its
	# kernel has SMB Direct off too).
	KDIR="$kdir" KIWI_LINUX_SOURCE=$(ls "$kroot"/usr/src/linux-source-*.tar.xz | tail -n1) \
		"$tree/scripts/build-smbdirect.sh" >"$out/smbdirect.log" 2>&1
	build_verdict $? "$out/smbdirect.log" "Debian 13: ksmbd and cifs build with SMB Direct for $kver" ||
		exit 1
fi
[ "$part" = --prepare ] && exit 0

echo "# Debian 13 tests: $tests"
"$tree/scripts/vm-run.sh" --kernel "$kroot/boot/vmlinuz-$kver" \
	--timeout "${KIWI_D13_TIMEOUT:-2400}" --console "$out/console.log" \
	-- env KIWI_TESTS="$tests" KIWI_DKMS_KDIR="$kdir" KIWI_DEB_DIR="$root/build/deb" \
	KIWI_SMB_REMOVALS="${KIWI_SMB_REMOVALS:-1}" \
	tools/testing/selftests/drivers/infiniband/kiwi/run_vm.sh \
	>"$out/vm.log" 2>&1
rc=$?
vm_report "$out/vm.log" "$rc" "Debian 13"
exit "$rc"
