#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run kiwi's VM tests on the debug kernel (KASAN, lockdep, kmemleak, UBSAN;
# scripts/debug-kernel.sh builds it once and caches it). kiwi, its kernel
# test modules, the upstream siw and (where storage_smb.sh runs) SMB
# Direct's ksmbd and cifs are built for that kernel in a copy of this tree
# (build/debug/tree), so the production build stays as it is.
# Prints TAP, every description prefixed "debug kernel:", and exits non-zero
# on any failure or kernel report; the whole kernel log is left in
# build/debug/tree/dmesg.txt, the console (where a panic shows) in
# build/debug/console.log.
#
#   KIWI_DEBUG_TESTS="datapath.sh mr.sh" scripts/test-debug.sh
#                           a chosen set; "all" runs every VM test
#   scripts/test-debug.sh --prepare    only build (the kernel, and kiwi,
#                           the test modules and siw for it), no VM
#   scripts/test-debug.sh --vm         only the VM, on what --prepare built
#                           (scripts/test.sh builds while another VM runs)
#
# KIWI_DEBUG_TIMEOUT: seconds the VM may run (3000; 7200 for "all").
# KIWI_FAULT_ROUNDS, KIWI_FAILSLAB_ROUNDS: faults.sh's random rounds (1)
# and failslab rounds (3); more of them to hunt a rare failure.
#
# The default set is the tests that feed kiwi hostile or
# heavy input, sized to keep README's test command under an hour: the data
# path, Terminates and hostile peers, ring abuse, allocation failures,
# NVMe-oF and a 1-minute soak (faults.sh and soak.sh run only here;
# KIWI_SOAK_SECONDS sets the soak's length). The data path runs its
# CRC-required pass only (KIWI_DATAPATH_CRC="off required" for both). The
# kernel consumers, NFS, iSER and SMB Direct run with KIWI_DEBUG_TESTS=all
# (several times as long; storage_smb.sh alone takes about 13 minutes).
# storage_iser.sh leaves out its portal and device removals here
# (KIWI_ISER_REMOVALS=1 runs them): upstream ib_isert's use-after-free
# there, kiwi.rst.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/lib-vm.sh"
out=$root/build/debug
tree=$out/tree
sel=$root/tools/testing/selftests/drivers/infiniband/kiwi
DEFAULT_TESTS="datapath.sh terminate.sh ringabuse.sh faults.sh storage_nvme.sh storage_nvme_zcopy.sh
	soak.sh"

part=${1:-all}
case "$part" in
all|--prepare|--vm) ;;
*) echo "usage: $0 [--prepare|--vm]" >&2; exit 2 ;;
esac

tests=${KIWI_DEBUG_TESTS:-$DEFAULT_TESTS}
limit=3000
if [ "$tests" = all ]; then
	# Every test but the one that runs what the host built into build/
	# (the kernel tree's selftests), which the copy of the tree below
	# leaves out: user space, the same on any kernel. (The packaging's
	# tests, tools/testing/packaging, are not among them either.)
	tests="$(make -s --no-print-directory -C "$sel" print-tests print-extended |
		tr ' ' '\n' | grep -vxE 'kselftest_tree\.sh')"
	limit=7200	# every test: about 95 minutes on 2 cores
fi
tests=$(echo $tests)

mkdir -p "$out"
if [ "$part" = --vm ]; then
	kdir=$("$root/scripts/debug-kernel.sh" --dir)
elif ! kdir=$("$root/scripts/debug-kernel.sh" 2>"$out/kernel.log"); then
	cat "$out/kernel.log"
	echo "not ok - debug kernel: the kernel builds (scripts/debug-kernel.sh)"
	exit 1
fi

if [ "$part" != --vm ]; then
	echo "ok - debug kernel: the kernel builds (scripts/debug-kernel.sh)"
	# The copy builds siw for this kernel too, and ksmbd and cifs with SMB
	# Direct where storage_smb.sh runs.
	smbd=:
	[[ " $tests " == *" storage_smb.sh "* ]] && smbd="$tree/scripts/build-smbdirect.sh"
	{ build_for_kernel "$tree" "$kdir" KDIR="$kdir" &&
		KDIR="$kdir" "$tree/scripts/build-siw.sh" &&
		KDIR="$kdir" $smbd; } >"$out/build.log" 2>&1
	build_verdict $? "$out/build.log" "debug kernel: kiwi, the test modules and siw build for it" ||
		exit 1
fi
[ "$part" = --prepare ] && exit 0

# The kernel's security modules, but TOMOYO: with no policy loaded it
# panics on a failed allocation of its own, which faults.sh's failslab
# round (failing exec included) makes happen.
lsm=$(sed -n 's/^CONFIG_LSM="\(.*\)"$/\1/p' "$kdir/.config" | tr , '\n' | grep -vx tomoyo | paste -sd,)

echo "# debug kernel tests: $tests"
"$tree/scripts/vm-run.sh" --kernel "$kdir" --memory 4G --timeout "${KIWI_DEBUG_TIMEOUT:-$limit}" \
	--console "$out/console.log" ${lsm:+--append "lsm=$lsm"} \
	-- env KIWI_TESTS="$tests" KIWI_SOAK_SECONDS="${KIWI_SOAK_SECONDS:-60}" \
	KIWI_DATAPATH_CRC="${KIWI_DATAPATH_CRC:-required}" \
	KIWI_ISER_REMOVALS="${KIWI_ISER_REMOVALS:-0}" \
	KIWI_FAULT_ROUNDS="${KIWI_FAULT_ROUNDS:-1}" \
	KIWI_FAILSLAB_ROUNDS="${KIWI_FAILSLAB_ROUNDS:-3}" \
	KIWI_DMESG_FILE="$tree/dmesg.txt" tools/testing/selftests/drivers/infiniband/kiwi/run_vm.sh \
	>"$out/vm.log" 2>&1
rc=$?
vm_report "$out/vm.log" "$rc" "debug kernel"
exit "$rc"
