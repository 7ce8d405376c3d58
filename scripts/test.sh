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
# The VMs run one at a time: this kernel's, the two-VM test, the debug
# kernel's, Debian 13's. Beside them, in the background at idle priority,
# run the debug kernel's build (when the cache has none), the other
# kernels' builds and the static checks and host tests; nothing a VM needs
# waits for them, except the other kernels' VMs for their builds. (Two
# emulated VMs side by side, or a VM beside a build at normal priority,
# each took two to four times as long on 2 cores, and timing-bound tests
# failed.)
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

# other_kernel_on ON_VAR TESTS_VAR: whether the VM tests on another kernel
# are part of this run: not when ON_VAR is 0 or, with ON_VAR unset, when a
# KIWI_TESTS subset names no TESTS_VAR.
other_kernel_on() {
	[ "${!1:-1}" != 0 ] && { [ -n "${!1:-}" ] || [ -z "${KIWI_TESTS:-}" ] || [ -n "${!2:-}" ]; }
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
	cp "$out/checks/output.log" "$archive/checks.log" 2>/dev/null
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

# What no VM waits for runs in the background, in the CPU scheduler's idle
# class (chrt -i): the debug kernel's build, the other kernels' builds, the
# static checks and host tests. They take only the CPU time an emulated
# guest leaves (a third to a half of the two cores: a test's shell is
# mostly one busy vCPU), and a guest's vCPU never waits behind them, as it did
# behind builds at normal priority (each then ran two to four times as
# long, and timing-bound tests failed).
debug_on=0
d13_on=0
other_kernel_on KIWI_DEBUG_KERNEL KIWI_DEBUG_TESTS && debug_on=1
other_kernel_on KIWI_DEBIAN13 KIWI_D13_TESTS && d13_on=1

# The other kernels' part, in the background from here: the debug kernel
# (built when the cache has none: most of a first run), then, once the
# tree below is built and its snapshot taken, kiwi, its test modules and
# siw built for each kernel (scripts/test-debug.sh --prepare,
# scripts/test-debian13.sh --prepare). Their VMs run after this kernel's.
snapshot=$out/snapshot
rm -rf "$snapshot" "$out/snapshot.done" "$out"/prepare-*
others=
if [ "$debug_on" = 1 ] || [ "$d13_on" = 1 ]; then
	(
		chrt -i -p 0 "$BASHPID" >/dev/null
		[ "$debug_on" = 1 ] && "$root/scripts/debug-kernel.sh" >"$out/debug-kernel.log" 2>&1
		while [ ! -e "$out/snapshot.done" ]; do sleep 2; done
		export KIWI_TREE_SOURCE=$snapshot
		if [ "$debug_on" = 1 ]; then
			scripts/test-debug.sh --prepare >"$out/prepare-debug.log" 2>&1
			echo $? >"$out/prepare-debug.rc"
		fi
		if [ "$d13_on" = 1 ]; then
			scripts/test-debian13.sh --prepare >"$out/prepare-debian13.log" 2>&1
			echo $? >"$out/prepare-debian13.rc"
		fi
	) &
	others=$!
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

# Two copies of the tree as built: the snapshot the other kernels' builds
# copy from (no VM writes into it meanwhile), and one the static checks
# and host tests run in, in the background, while the VMs run (they
# rebuild the module and the test programs that the VM loads from this
# tree). Both take a fraction of a second.
copy_tree . "$snapshot"
copy_tree . "$out/checks/tree" --with-git
touch "$out/snapshot.done"

# host_checks: the static checks and host unit tests, in the checks copy;
# TAP into checks/results.tap, output into checks/output.log.
host_checks() {
	chrt -i -p 0 "$BASHPID" >/dev/null
	out=$out/checks
	log=$out/results.tap
	cd "$out/tree" || exit 1
	phase "static checks"
	point "sparse reports nothing" scripts/sparse-check.sh
	point "checkpatch --strict is clean" scripts/checkpatch-run.sh
	point "every header compiles on its own; kernel-doc parses every comment" scripts/header-check.sh

	phase "host unit tests"
	suite "provider unit tests (make -C userspace check)" make -s -C userspace check
	suite "wire-format unit tests (make -C tools/testing/wire)" make -s -C tools/testing/wire
	suite "wire-format fuzzers (make -C tools/fuzz run)" make -s -C tools/fuzz run
	for t in tools/testing/host/*.sh; do
		[ "$t" = tools/testing/host/kselftest_build.sh ] && continue
		suite "host test $(basename "$t")" "$t"
	done
	phase "static checks and host unit tests done"
}
# This one builds, in this tree's build/ksft, what the VM's
# kselftest_tree.sh runs: before the VM, then.
suite "host test kselftest_build.sh" tools/testing/host/kselftest_build.sh

phase "static checks and host unit tests: in the background, in build/test/checks"
host_checks >"$out/checks/output.log" 2>&1 &
checks=$!

# twovm.sh runs across two VMs (scripts/vm-pair.sh), not in the one.
sel=${KIWI_TESTS:-}
one_vm=1
two_vm=1
if [ -n "$sel" ]; then
	[[ " $sel " == *" twovm.sh "* ]] || two_vm=0
	sel=$(echo " $sel " | sed 's/ twovm\.sh / /g' | xargs)
	[ -n "$sel" ] || one_vm=0
fi

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

# other_kernel ON NAME SCRIPT: the VM tests on another kernel (SCRIPT
# --vm, its output in build/test/NAME.log) after its preparation's points,
# or a skip when ON is 0.
other_kernel() {
	local rc
	if [ "$1" != 1 ]; then
		tap "ok - $2 kernel tests # SKIP turned off, or a KIWI_TESTS subset without them"
		return
	fi
	tee "$out/$2.log" <"$out/prepare-$2.log"
	rc=$(cat "$out/prepare-$2.rc" 2>/dev/null)
	if [ "$rc" = 0 ]; then
		"$3" --vm 2>&1 | tee -a "$out/$2.log"
	elif [ -z "$rc" ]; then
		echo "not ok - $2 kernel: its preparation ($3 --prepare) finished" | tee -a "$out/$2.log"
	fi
	grep -E '^(not )?ok ' "$out/$2.log" >>"$log"
}

if [ -n "$others" ]; then
	phase "waiting for the other kernels' builds"
	wait "$others"
fi

phase "VM tests on the debug kernel (KASAN, lockdep, kmemleak, UBSAN)"
other_kernel "$debug_on" debug scripts/test-debug.sh

phase "VM tests on Debian 13's kernel (6.12), a subset"
other_kernel "$d13_on" debian13 scripts/test-debian13.sh

phase "waiting for the static checks and host unit tests"
wait "$checks"
cat "$out/checks/output.log"
grep -E '^(not )?ok ' "$out/checks/results.tap" >>"$log"

kill "$archiver" 2>/dev/null
archive_run
echo "# logs kept in $archive"

skipped=$(grep -cE '^ok .*# SKIP' "$log")
passed=$(grep -E '^ok ' "$log" | grep -vc '# SKIP')
failed=$(grep -cE '^not ok ' "$log")
echo
grep -E '^not ok ' "$log" | sed 's/^/FAILED: /'
echo "# took $(( $(date +%s) - t0 )) s"
# What the count means: the points run again on another kernel, and the
# distinct texts among the passing points (a check re-run on another
# kernel, or once per ABI layout, counts once).
again() { grep -E '^ok ' "$log" | grep -v '# SKIP' | grep -cE "^ok ([0-9]+ )?(- )?$1: "; }
distinct=$(grep -E '^ok ' "$log" | grep -v '# SKIP' |
	sed -E 's/^ok ([0-9]+ )?(- )?//; s/^(debug kernel|Debian 13): //' | sort -u | wc -l)
echo "# of the $passed passed: $(again 'debug kernel') on the debug kernel and $(again 'Debian 13')" \
	"on Debian 13's, which ran there too; $distinct distinct checks in all"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
