# SPDX-License-Identifier: GPL-2.0
# Sourced by the test runners.

# vm_verdict LOG STATUS WHAT: a "not ok" line when a VM run (run_vm.sh's
# output in LOG, vm-run.sh's exit STATUS) failed in a way its own test
# points do not show: a timeout, no results at all, or a failing status
# with no failing point.
vm_verdict() {
	local log=$1 rc=$2 what=$3
	if [ "$rc" = 124 ]; then
		echo "not ok - $what finished within its time limit"
	elif ! grep -qE '^ok - .*: kernel log clean' "$log"; then
		echo "not ok - $what produced results (exit $rc)"
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
