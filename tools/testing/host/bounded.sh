#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): lib.sh's bounded, which the VM tests run a fault
# through that may leave a task stuck in the kernel. A command that
# returns in time gives its own status; one that does not fails a point,
# asks the kernel for its blocked tasks (sysrq w), marks the run wedged
# (run_vm.sh then stops) and ends the test. Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
tap_begin "lib.sh's bounded: a command that does not return ends the test"

# tap_begin's scratch directory, removed at exit.
tmp=$out

# in_test CMD...: CMD in a test script of its own, with the sysrq
# trigger and the wedge mark in $tmp; its output in $tmp/out.
in_test() {
	rm -f "$tmp/sysrq" "$tmp/wedged" "$tmp/trap"
	# (TMPDIR: its own scratch directory, which a stuck test leaves, in $tmp.)
	TMPDIR=$tmp KIWI_SYSRQ=$tmp/sysrq KIWI_WEDGED=$tmp/wedged bash -c '
		source "$1"; tap_begin "inner"; shift
		trap "touch ${KIWI_WEDGED%/*}/trap" EXIT
		"$@"; echo "# returned $?"; tap_end' \
		inner "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh" \
		"$@" >"$tmp/out" 2>&1
}

in_test bounded 60 true
check "a command that returns in time: its status, 0" grep -qx '# returned 0' "$tmp/out"
check "... no point failed, no sysrq, not wedged" \
	eval '! grep -q "^not ok" "$tmp/out" && [ ! -e "$tmp/sysrq" ] && [ ! -e "$tmp/wedged" ]'
in_test bounded 60 sh -c 'exit 3'
check "a command that fails in time: its status, 3" grep -qx '# returned 3' "$tmp/out"
check "... and the test's EXIT trap runs at its end" test -e "$tmp/trap"
# (A wide margin: the host tests run beside a VM, at idle priority.)
t=$SECONDS
in_test bounded 2 sleep 600
rc=$?
check "a command that does not return: the test fails ($rc), after 2 s, not 600 ($((SECONDS - t)) s)" \
	test "$rc" -eq 1 -a $((SECONDS - t)) -lt 120
check "... with a point that names it" \
	grep -q "^not ok 1 'sleep 600' returns within 2 s" "$tmp/out"
check "... and ends there: the test's next line never ran" \
	eval '! grep -q "# returned" "$tmp/out" && tail -n1 "$tmp/out" | grep -qx "1..1"'
check "... after asking the kernel for its blocked tasks (sysrq w)" grep -qx w "$tmp/sysrq"
check "... and marking the run wedged" test -e "$tmp/wedged"
check "... without the test's EXIT trap (its clean-up would wait behind the stuck task)" \
	test ! -e "$tmp/trap"
pkill -xf 'sleep 600'
tap_end
