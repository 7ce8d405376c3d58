#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run every kiwi test: install what is needed (Debian 12, as root), build
# with W=1, run the static checks and host unit tests, then boot Debian's
# kernel in a VM and run the kselftests there. Ends with the line
# "N passed, N failed, N skipped" and exits non-zero on any failure.
#
#   scripts/test.sh            everything
#   KIWI_TESTS="device_lifecycle.sh" scripts/test.sh   a subset in the VM
#                              ("twovm.sh" names the two-VM test)
#   KIWI_DEBUG_TESTS="faults.sh" scripts/test.sh       another set on the debug
#                              kernel ("all": every test; see test-debug.sh)
#   KIWI_DEBUG_KERNEL=0 scripts/test.sh                without the debug kernel
#   KIWI_D13_TESTS="datapath.sh" scripts/test.sh       another set on Debian 13's
#                              kernel (scripts/test-debian13.sh names the default)
#   KIWI_DEBIAN13=0 scripts/test.sh                    without Debian 13's kernel
#
# The debug-kernel run (scripts/test-debug.sh) is part of every run, except
# one of a KIWI_TESTS subset that names no KIWI_DEBUG_TESTS; so is the run
# on Debian 13's kernel (scripts/test-debian13.sh), except one of a
# KIWI_TESTS subset that names no KIWI_D13_TESTS. The first run
# on a machine builds the debug kernel (scripts/debug-kernel.sh; cached).
#
# The debug kernel, when the cache has none, builds in the background
# while the tree builds and the static checks and host tests run; the VM
# runs then go one at a time, the debug kernel's first. (Run side by side,
# two emulated VMs, or a VM and the kernel's build, each took two to four
# times as long on 2 cores, and timing-bound tests failed.)
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/lib-root.sh"
source "$root/scripts/lib-vm.sh"
cd "$root"
out=$root/build/test
mkdir -p "$out"
log=$out/results.tap
: >"$log"

tap() { echo "$*" | tee -a "$log"; }

t0=$(date +%s)
# phase NAME: a section heading, with the time since the start.
phase() { echo "== $1 (at $(( $(date +%s) - t0 )) s)"; }

# point DESCRIPTION CMD...: one test point from a host-side command.
point() {
	local desc=$1
	shift
	if "$@" >"$out/point.log" 2>&1; then
		tap "ok - $desc"
	else
		tap "not ok - $desc"
		sed 's/^/# /' "$out/point.log" | tail -40
	fi
}

# suite WHAT CMD...: a host-side suite's output, into the log, and
# suite_verdict's line for it.
suite() {
	local what=$1 rc
	shift
	"$@" >"$out/suite.log" 2>&1
	rc=$?
	tee -a "$log" <"$out/suite.log"
	suite_verdict "$out/suite.log" "$rc" "$what" | tee -a "$log"
}

# other_kernel ON_VAR TESTS_VAR NAME SCRIPT: the VM tests on another kernel
# (SCRIPT, its output in build/test/NAME.log), unless ON_VAR is 0 or, with
# ON_VAR unset, a KIWI_TESTS subset names no TESTS_VAR.
# other_kernel_on ON_VAR TESTS_VAR: whether that run is part of this one.
other_kernel_on() {
	[ "${!1:-1}" != 0 ] && { [ -n "${!1:-}" ] || [ -z "${KIWI_TESTS:-}" ] || [ -n "${!2:-}" ]; }
}
other_kernel() {
	if ! other_kernel_on "$1" "$2"; then
		tap "ok - $3 kernel tests # SKIP $1=0, or a KIWI_TESTS subset without $2"
	else
		"$4" 2>&1 | tee "$out/$3.log"
		grep -E '^(not )?ok ' "$out/$3.log" >>"$log"
	fi
}

# Keep this run's logs where the next session on this machine finds them
# (CI runs in a clone that is gone afterwards, and shows only the tail):
# ~/.cache/kiwi/runs/DATE/, the newest five kept. They are copied every
# 30 s as well as at the end, so that a run stopped from outside (CI's
# time limit) leaves them too.
runs=${KIWI_RUN_ARCHIVE:-$HOME/.cache/kiwi/runs}
archive=$runs/$(date +%Y%m%d-%H%M%S)
archive_run() {
	local f

	mkdir -p "$archive" || return
	cp "$out"/*.log "$log" "$archive"/ 2>/dev/null
	for f in build/debug/vm.log build/debug/console.log \
		 build/debug/tree/dmesg.txt build/d13/vm.log build/d13/console.log; do
		# Not one an earlier run left (this one skipped that kernel).
		[ -f "$f" ] && [ "$(stat -c %Y "$f")" -ge "$t0" ] &&
			cp "$f" "$archive/$(echo "${f#build/}" | tr / -)"
	done
	git log --oneline -1 >"$archive/commit" 2>/dev/null
}
archive_run
ls -1d "$runs"/*/ | head -n -5 | xargs -r rm -rf
# (It stops with this script, and holds none of its output open.)
(while sleep 30 && kill -0 $$ 2>/dev/null; do archive_run; done) >/dev/null 2>&1 &
archiver=$!

phase setup
if ! "$root/scripts/setup.sh"; then
	tap "not ok - setup: install the packages the tests need"
else
	tap "ok - setup: install the packages the tests need"
fi

# The debug kernel, when this run needs it and the cache has none, builds
# from here until the VM tests (scripts/test-debug.sh waits for it).
kbuild=
if other_kernel_on KIWI_DEBUG_KERNEL KIWI_DEBUG_TESTS; then
	"$root/scripts/debug-kernel.sh" >"$out/debug-kernel.log" 2>&1 &
	kbuild=$!
fi

phase build
# The module must build with no warning at W=1.
build_module() {
	make -s -j"$(nproc)" module W=1 2>&1 | tee "$out/build-module.log"
	! grep -qiE "warning|error" "$out/build-module.log" &&
		[ -f drivers/infiniband/sw/kiwi/kiwi.ko ]
}
point "module builds with W=1 and no warning" build_module
# The kernel test module ktest.sh loads in the VM (which sees this tree).
build_ktest() {
	make -s -j"$(nproc)" ktest W=1 2>&1 | tee "$out/build-ktest.log"
	! grep -qiE "warning|error" "$out/build-ktest.log" &&
		[ -f tools/testing/selftests/drivers/infiniband/kiwi/kiwi_ktest/kiwi_ktest.ko ] &&
		[ -f tools/testing/selftests/drivers/infiniband/kiwi/kiwi_ktest/kiwi_ktest_cm.ko ]
}
point "kernel test modules (kiwi_ktest.ko, kiwi_ktest_cm.ko) build with W=1 and no warning" build_ktest
point "provider builds against the system's rdma-core (IBVERBS_PRIVATE_34)" make -s -j"$(nproc)" provider
point "test providers (ABI 99, rdma-core 64's layout) and test programs build" \
	eval 'make -s -j"$(nproc)" -C userspace libkiwi-abi99-rdmav34.so libkiwi-rel64-rdmav34.so &&
	      make -s -j"$(nproc)" -C tools/testing/selftests/drivers/infiniband/kiwi'
# The provider against Debian 13's rdma-core and the newest in Debian
# (unstable), fetched beside the system's (scripts/rdma-core-release.sh),
# into build/provider/SUITE/ with the path of that rdma-core in "root":
# provider_releases.sh runs real programs on them in the VM.
provider_release() {
	local dir=build/provider/$1

	rm -rf "$dir"
	make -s -j"$(nproc)" -C userspace VERBS_ROOT="$2" O="$PWD/$dir" && echo "$2" >"$dir/root"
}
for suite in trixie sid; do
	if rel=$(scripts/rdma-core-release.sh "$suite" 2>"$out/release.log"); then
		point "provider builds against Debian $suite's rdma-core $(cat "$rel/version")" \
			provider_release "$suite" "$rel"
	else
		tap "not ok - Debian $suite's rdma-core is fetched (scripts/rdma-core-release.sh)"
		sed 's/^/# /' "$out/release.log"
	fi
done

point "the upstream siw builds as the interop peer (linux-source-6.1)" \
	scripts/build-siw.sh
point "ksmbd and cifs build with SMB Direct (linux-source-6.1)" \
	scripts/build-smbdirect.sh

phase "static checks"
point "sparse reports nothing" scripts/sparse-check.sh
point "checkpatch --strict is clean" scripts/checkpatch-run.sh
point "every header compiles on its own; kernel-doc parses every comment" scripts/header-check.sh

phase "host unit tests"
suite "provider unit tests (make -C userspace check)" make -s -C userspace check
suite "wire-format unit tests (make -C tools/testing/wire)" make -s -C tools/testing/wire
suite "wire-format fuzzers (make -C tools/fuzz run)" make -s -C tools/fuzz run
for t in tools/testing/host/*.sh; do
	suite "host test $(basename "$t")" "$t"
done

# twovm.sh runs across two VMs (scripts/vm-pair.sh), not in the one.
sel=${KIWI_TESTS:-}
one_vm=1
two_vm=1
if [ -n "$sel" ]; then
	[[ " $sel " == *" twovm.sh "* ]] || two_vm=0
	sel=$(echo " $sel " | sed 's/ twovm\.sh / /g' | xargs)
	[ -n "$sel" ] || one_vm=0
fi

# No VM while the debug kernel builds: an emulated guest beside a compiler
# on 2 cores runs several times slower.
if [ -n "$kbuild" ]; then
	phase "waiting for the debug kernel's build"
	wait "$kbuild"
fi

phase "VM tests on the debug kernel (KASAN, lockdep, kmemleak, UBSAN)"
other_kernel KIWI_DEBUG_KERNEL KIWI_DEBUG_TESTS debug scripts/test-debug.sh

phase "VM tests"
staged=0
if scripts/stage.sh >"$out/stage.log" 2>&1; then
	staged=1
else
	cat "$out/stage.log"
	tap "not ok - stage the module for the VM"
fi
if [ "$staged" = 1 ] && [ "$one_vm" = 1 ]; then
	# The VM does not inherit this environment: pass the test selection.
	scripts/vm-run.sh --timeout 3000 --console "$out/vm-console.log" \
		-- env KIWI_TESTS="$sel" \
		tools/testing/selftests/drivers/infiniband/kiwi/run_vm.sh \
		2>&1 | tee "$out/vm.log"
	vmrc=${PIPESTATUS[0]}
	grep -E '^(not )?ok ' "$out/vm.log" >>"$log"
	vm_verdict "$out/vm.log" "$vmrc" "VM test run" "$out/vm-console.log" | tee -a "$log"
fi

phase "two VMs: kiwi and its peer in two kernels"
if [ "$staged" = 1 ] && [ "$two_vm" = 1 ]; then
	scripts/vm-pair.sh --timeout 900 -- \
		tools/testing/selftests/drivers/infiniband/kiwi/twovm.sh \
		2>&1 | tee "$out/pair.log"
	pairrc=${PIPESTATUS[0]}
	grep -E '^(not )?ok ' "$out/pair.log" >>"$log"
	pair_verdict "$out/pair.log" "$pairrc" | tee -a "$log"
fi

phase "VM tests on Debian 13's kernel (6.12), a subset"
other_kernel KIWI_DEBIAN13 KIWI_D13_TESTS debian13 scripts/test-debian13.sh

kill "$archiver" 2>/dev/null
archive_run
echo "# logs kept in $archive"

skipped=$(grep -cE '^ok .*# SKIP' "$log")
passed=$(grep -E '^ok ' "$log" | grep -vc '# SKIP')
failed=$(grep -cE '^not ok ' "$log")
echo
grep -E '^not ok ' "$log" | sed 's/^/FAILED: /'
echo "# took $(( $(date +%s) - t0 )) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
