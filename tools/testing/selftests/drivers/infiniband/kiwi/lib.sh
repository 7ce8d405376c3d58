#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers for kiwi's kselftest scripts. Each test script sources this,
# calls tap_begin, runs its checks and ends with tap_end, which prints the
# plan and exits 1 if anything failed. Here: TAP, waiting, and a command
# that may leave a task stuck in the kernel; the rest by concern, sourced
# at the end: lib_devices.sh (devices, hosts, ports, counters),
# lib_servers.sh (server and client pairs, captures), lib_ktest.sh (the
# in-kernel test modules), lib_storage.sh (the storage tests).

KIWI_TESTDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# kiwi's tree: the one these tests sit in, or, for a copy in a kernel tree
# run by the kernel's selftest runner, the one KIWI_ROOT names (Makefile).
KIWI_ROOT=${KIWI_ROOT:-$(cd "$KIWI_TESTDIR/../../../../../.." && pwd)}
# The upstream siw, built by scripts/build-siw.sh: the wire peer.
KIWI_SIW=$KIWI_ROOT/build/siw/siw.ko
# The same siw with its try_gso on: it offers large FPDUs and sends them
# where the peer agreed (scripts/build-siw.sh).
KIWI_SIW_GSO=$KIWI_ROOT/build/siw-gso/siw.ko
# Kernel log lines that mean a test broke the kernel (run_vm.sh checks the
# log after each test). On the debug kernel KASAN and lockdep reports start
# with "BUG:" or "WARNING:", and the rest of lockdep's and RCU's with "INFO:".
# A program's own crash ("traps: NAME[PID] general protection fault ip:")
# is not the kernel's: its exit status tells.
KIWI_BAD_LOG='WARNING:|BUG:|INFO:|KASAN|Oops|general protection fault(,|: [0-9a-f]{4})|Call Trace:|refcount_t:|unregister_netdevice: waiting|kmemleak|UBSAN|list_(add|del) corruption|blocked for more than'
KIWI_UVERBS=$KIWI_TESTDIR/kiwi_uverbs
_tap_n=0
_tap_failed=0

# tap_begin DESCRIPTION: the TAP header. $out becomes a scratch directory,
# removed when the script exits.
tap_begin() {
	echo "TAP version 13"
	echo "# $(basename "$0"): $*"
	out=$(mktemp -d)
	_tap_out=$out
	trap 'rm -rf "$_tap_out"' EXIT
}

# Each point is followed by the seconds it took (since the last point), to
# show where a slow suite spends its time; KIWI_TAP_TIMES=0 leaves that out.
_tap_time() {
	[ "${KIWI_TAP_TIMES:-1}" = 1 ] || return 0
	echo "# point took $((SECONDS - ${_tap_t:-0})) s"
	_tap_t=$SECONDS
}

ok() {
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n $*"
	_tap_time
}

not_ok() {
	_tap_n=$((_tap_n + 1))
	_tap_failed=$((_tap_failed + 1))
	echo "not ok $_tap_n $*"
	_tap_time
}

# check DESCRIPTION CMD...: one test point, passing when CMD succeeds.
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

tap_end() {
	echo "1..$_tap_n"
	[ "$_tap_failed" -eq 0 ]
	exit $?
}

# A task stuck in the kernel (D state) outlives any timeout, and the tests
# after it would stall behind it until the VM's limit: KIWI_WEDGED marks
# the run as wedged, and run_vm.sh then stops.
# (tools/testing/host/bounded.sh points it, and KIWI_SYSRQ, elsewhere.)
KIWI_WEDGED=${KIWI_WEDGED:-/run/kiwi-wedged}

# blocked_tasks: the kernel's stacks of every task in D state (sysrq w),
# as TAP comments.
blocked_tasks() {
	local since

	since=$(dmesg 2>/dev/null | wc -l)
	if [ -n "${KIWI_SYSRQ:-}" ]; then
		echo w >"$KIWI_SYSRQ"
	else
		echo 1 >/proc/sys/kernel/sysrq
		echo w >/proc/sysrq-trigger
	fi
	sleep 1
	# The stacks without their registers and unreliable (?) frames.
	dmesg 2>/dev/null | tail -n +"$((since + 1))" |
		grep -vE '\]  ?(\? |R[0-9A-Z]{2}:|RIP:|Code:)' | head -200 | sed 's/^/# blocked: /'
}

# bounded SECS CMD...: CMD, given SECS seconds to return. A CMD that
# has not returned by then is reported with the kernel's blocked tasks,
# the run is marked wedged, and the test ends here, without its EXIT trap.
bounded() {
	local secs=$1 pid n=0
	shift

	"$@" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null && [ "$n" -lt "$secs" ]; do
		sleep 1
		n=$((n + 1))
	done
	kill -0 "$pid" 2>/dev/null &&
		wedged "'$*' returns within $secs s (it has not: a task is stuck)"
	wait "$pid"
}

# wedged POINT: a task is stuck in the kernel. POINT fails, the kernel's
# blocked tasks are shown, the run is marked wedged, and the test ends
# here, without its EXIT trap: its own clean-up (an unmount, a module's
# removal) would wait behind the stuck task.
wedged() {
	not_ok "$1"
	blocked_tasks
	touch "$KIWI_WEDGED"
	trap - EXIT
	tap_end
}

# fails_with ERRMSG CMD...: CMD must fail and print ERRMSG on stderr.
fails_with() {
	local want=$1 out
	shift
	if out=$("$@" 2>&1); then
		echo "# unexpectedly succeeded: $*"
		return 1
	fi
	if [[ "$out" != *"$want"* ]]; then
		echo "# expected '$want', got: $out"
		return 1
	fi
	return 0
}

# Output must contain a line matching the regex.
has_line() {
	grep -qE "$2" <<<"$1" || { echo "# no line matching '$2' in:"; sed 's/^/#   /' <<<"$1"; return 1; }
}

# nap SECONDS: sleep without a process (lib_nap.sh), for the polls below.
source "$KIWI_TESTDIR/lib_nap.sh"

# wait_for SECONDS CMD...: poll until CMD succeeds.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || return 1
		nap 0.2
	done
}

# tap_import PREFIX FILE: the numbered TAP a kiwi_* program wrote to FILE
# as points of ours ("PREFIX: " before each description unless PREFIX is
# empty; a "Bail out!" is a failed point), its other lines as comments.
# Sets tap_plan to the program's plan; returns 1 unless that plan is there
# and every point of it was reported.
tap_import() {
	local pre=${1:+$1: } l seen=0
	local re='^(not )?ok [0-9]+ (- )?(.*)$'

	tap_plan=
	while IFS= read -r l; do
		if [[ $l =~ $re ]]; then
			seen=$((seen + 1))
			if [ -n "${BASH_REMATCH[1]}" ]; then
				not_ok "$pre${BASH_REMATCH[3]}"
			else
				ok "$pre${BASH_REMATCH[3]}"
			fi
			continue
		fi
		case $l in
		"TAP version"*) ;;
		1..*) tap_plan=${l#1..} ;;
		"Bail out!"*) not_ok "$pre$l" ;;
		"#"*) echo "$l" ;;
		*) echo "# $pre$l" ;;
		esac
	done <"$2"
	[ -n "$tap_plan" ] && [ "$tap_plan" -eq "$seen" ]
}

# tap_sub: a kiwi_* program's TAP on stdin as points of ours, unnumbered
# ("ok - ...": a pipe runs in a subshell), without its header and plan.
tap_sub() {
	sed -E 's/^((not )?ok) [0-9]+( -)?/\1 -/;/^TAP version|^1\.\./d'
}

# tap_run CMD...: CMD's TAP as points of ours (tap_sub); returns CMD's
# exit status.
tap_run() {
	"$@" | tap_sub
	return "${PIPESTATUS[0]}"
}

# The helpers by concern; every test gets them all.
source "$KIWI_TESTDIR/lib_devices.sh"
source "$KIWI_TESTDIR/lib_servers.sh"
source "$KIWI_TESTDIR/lib_ktest.sh"
source "$KIWI_TESTDIR/lib_storage.sh"
