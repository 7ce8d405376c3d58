# SPDX-License-Identifier: GPL-2.0
# Sourced by the test runners.

# console_cause FILE: one line from a guest's kernel console (FILE) that
# says why the guest stopped: its first panic, oops, BUG, KASAN or lockdep
# report, OOM kill or stall; else its last line before the power-off.
console_cause() {
	local f=$1 l
	[ -s "$f" ] || { echo "no console kept"; return; }
	l=$(grep -m1 -aE 'Kernel panic|BUG:|Oops|general protection|KASAN:|WARNING:|possible (circular|recursive)|Out of memory|Killed process|watchdog:|blocked for more than|rcu.*stall' "$f")
	[ -n "$l" ] || l=$(grep -avE '^[[:space:]]*$|reboot: Power down|Powering off' "$f" | tail -n1)
	printf '%s\n' "$l" | tr -d '\r' | cut -c1-240
}

# vm_verdict LOG STATUS WHAT [CONSOLE]: a "not ok" line when a VM run
# (run_vm.sh's output in LOG, vm-run.sh's exit STATUS) failed in a way its
# own test points do not show: a timeout, no results at all, or a failing
# status with no failing point. When the guest stopped without its
# command's status (255), the line ends with console_cause's line of
# CONSOLE, so a summary that keeps only the failing lines still says why.
vm_verdict() {
	local log=$1 rc=$2 what=$3 console=${4:-} why=
	if [ "$rc" = 255 ] && [ -n "$console" ]; then
		why=" (guest console: $(console_cause "$console"))"
	fi
	if [ "$rc" = 124 ]; then
		echo "not ok - $what finished within its time limit"
	elif ! grep -qE '^ok - .*: kernel log clean' "$log"; then
		echo "not ok - $what produced results (exit $rc)$why"
	elif [ "$rc" != 0 ] && ! grep -qE '^not ok ' "$log"; then
		echo "not ok - $what exited with status $rc$why"
	fi
}

# suite_verdict LOG STATUS WHAT: a "not ok" line when a host-side suite
# (its output in LOG, its exit STATUS) gave no test point, fewer points
# than its plans ("1..N" lines) add up to, or a failing status that none
# of its points shows.
suite_verdict() {
	local log=$1 rc=$2 what=$3 n plan
	n=$(grep -cE '^(not )?ok ' "$log")
	plan=$(sed -nE 's/^1\.\.([0-9]+).*/\1/p' "$log" | paste -sd+)
	plan=$((${plan:-0}))
	if [ "$n" = 0 ]; then
		echo "not ok - $what gave no test point (exit $rc)"
	elif [ "$n" -lt "$plan" ]; then
		echo "not ok - $what gave $n of the $plan points its plans announce (exit $rc)"
	elif [ "$rc" != 0 ] && ! grep -qE '^not ok ' "$log"; then
		echo "not ok - $what exited with status $rc"
	fi
}

# pair_verdict LOG STATUS: a "not ok" line when the two-VM run
# (scripts/vm-pair.sh's output in LOG, its exit STATUS) failed in a way its
# own test points do not show: a timeout, no results from either VM's last
# part, or a failing status with no failing point.
pair_verdict() {
	local log=$1 rc=$2
	if [ "$rc" = 124 ]; then
		echo "not ok - two-VM test run finished within its time limit"
	elif ! grep -qE '^ok [0-9]+ a: kernel log clean at the end' "$log" ||
	     ! grep -qE '^ok [0-9]+ b: kernel log clean at the end' "$log"; then
		echo "not ok - two-VM test run reached its end in both VMs (exit $rc)"
	elif [ "$rc" != 0 ] && ! grep -qE '^not ok ' "$log"; then
		echo "not ok - two-VM test run exited with status $rc"
	fi
}

# vm_report LOG STATUS PREFIX: a VM run's output (LOG, its exit STATUS,
# its guest's console in console.log beside LOG) and vm_verdict's line for
# it, each TAP point's text after PREFIX ("debug kernel: ...", for a run on
# another kernel), with or without a "- " before the text.
vm_report() {
	{ cat "$1"; vm_verdict "$1" "$2" "VM test run" "$(dirname "$1")/console.log"; } |
		sed -E "s/^((not )?ok( [0-9]+)?( -)? )/\\1$3: /"
}

# copy_tree SRC DEST [--with-git]: a copy of the tree SRC as DEST (made
# anew), its build/ left out, and its .git unless --with-git.
copy_tree() {
	local ex=(--exclude=./build)
	[ "${3:-}" = --with-git ] || ex+=(--exclude=./.git)
	rm -rf "$2" && mkdir -p "$2" &&
		tar -C "$1" "${ex[@]}" -cf - . | tar -C "$2" -xf -
}

# build_for_kernel TREE KDIR [VAR=VALUE...]: copy this tree (its sources
# and the user-space programs already built; not build/ or .git; from
# KIWI_TREE_SOURCE instead when set: scripts/test.sh's snapshot, which no
# VM writes into while it is copied) to TREE,
# build the module and the kernel test modules there for KDIR at W=1
# (this tree's objects stay built for Debian 12's kernel), and stage the
# module with the environment VAR=VALUE... (scripts/stage.sh).
build_for_kernel() {
	local tree=$1 kdir=$2 src
	shift 2
	src=${KIWI_TREE_SOURCE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
	copy_tree "$src" "$tree" &&
	make -s -C "$tree" clean-kernel KDIR="$kdir" &&
	make -s -j"$(nproc)" -C "$tree" module KDIR="$kdir" W=1 &&
	make -s -j"$(nproc)" -C "$tree" ktest KDIR="$kdir" W=1 &&
	env "$@" "$tree/scripts/stage.sh"
}

# build_verdict STATUS LOG WHAT: "ok - WHAT" when a build (exit STATUS,
# output in LOG) succeeded and printed no warning or error; else its end
# and "not ok - WHAT", and a non-zero return.
build_verdict() {
	local rc=$1 log=$2 what=$3
	if [ "$rc" != 0 ]; then
		tail -40 "$log"
	elif grep -qiE "warning|error" "$log"; then
		grep -iE "warning|error" "$log" | head -20
	else
		echo "ok - $what"
		return 0
	fi
	echo "not ok - $what"
	return 1
}

# vm_tests_debian12 OUT TESTS: stage this tree's module (scripts/stage.sh)
# and run the VM tests TESTS on Debian 12's kernel, with their TAP lines
# prefixed "Debian 12: " (vm_report); logs in OUT. Returns non-zero when
# anything failed.
vm_tests_debian12() {
	local out=$1 tests=$2 rc src
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	if ! "$src/scripts/stage.sh" >"$out/stage.log" 2>&1; then
		cat "$out/stage.log"
		echo "not ok - Debian 12: stage the module for the VM"
		return 1
	fi
	"$src/scripts/vm-run.sh" --timeout 1800 --console "$out/console.log" \
		-- env KIWI_TESTS="$tests" tools/testing/selftests/drivers/infiniband/kiwi/run_vm.sh \
		>"$out/vm.log" 2>&1
	rc=$?
	vm_report "$out/vm.log" "$rc" "Debian 12"
	return "$rc"
}
