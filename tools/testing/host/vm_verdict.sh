#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): the runners' verdict on a whole VM run
# (scripts/lib-vm.sh). A run that timed out, gave no results or ended
# with a failing status and no failing point gets a "not ok" line; a
# guest that stopped without its command's status (vm-run.sh's 255) gets
# the console line that says why on that same line, since a CI summary
# may keep only the failing lines. A host-side suite that gave no point,
# fewer than its plans announce, or a failing status that no point shows
# gets one too (suite_verdict). Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
source "$root/scripts/lib-vm.sh"
tap_begin "VM run verdicts"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'ok 1 x\nok - a.sh: kernel log clean\n' >"$tmp/good.log"
printf 'ok 1 x\nnot ok 2 y\nok - a.sh: kernel log clean\n' >"$tmp/failed.log"
printf 'ok 1 x\n' >"$tmp/cut.log"
cat >"$tmp/panic.console" <<'EOF'
[    0.000000] Linux version 6.1.0
[  970.971334] nvmet_rdma: received IB QP event: QP fatal error (1)
[ 1003.096287] BUG: kernel NULL pointer dereference, address: 0000000000000008
[ 1003.097606] Kernel panic - not syncing: Fatal exception
EOF
cat >"$tmp/off.console" <<'EOF'
[    0.000000] Linux version 6.1.0
[  412.100000] kiwi: a line of its own
Powering off.
[  413.659817] reboot: Power down
EOF

# is OUT WANT: OUT is exactly WANT.
is() { [ "$1" = "$2" ] || { echo "# got:  '$1'"; echo "# want: '$2'"; return 1; }; }

check "a run that passed and exited 0: no line" \
	is "$(vm_verdict "$tmp/good.log" 0 "VM test run" "$tmp/panic.console")" ""
check "a failing point and status 1: the point says it, no line" \
	is "$(vm_verdict "$tmp/failed.log" 1 "VM test run")" ""
check "timeout (124): the run did not finish in time" \
	is "$(vm_verdict "$tmp/cut.log" 124 "VM test run")" \
	   "not ok - VM test run finished within its time limit"
check "no kernel-log verdict: no results, with the status" \
	is "$(vm_verdict "$tmp/cut.log" 1 "VM test run")" \
	   "not ok - VM test run produced results (exit 1)"
check "status 255 after passing points: the console's first report on the line" \
	is "$(vm_verdict "$tmp/good.log" 255 "VM test run" "$tmp/panic.console")" \
	   "not ok - VM test run exited with status 255 (guest console: [ 1003.096287] BUG: kernel NULL pointer dereference, address: 0000000000000008)"
check "status 255 with no report: the console's last line before the power-off" \
	is "$(vm_verdict "$tmp/cut.log" 255 "VM test run" "$tmp/off.console")" \
	   "not ok - VM test run produced results (exit 255) (guest console: [  412.100000] kiwi: a line of its own)"
check "status 255 and an empty console: says none was kept" \
	is "$(: >"$tmp/empty"; vm_verdict "$tmp/good.log" 255 "VM test run" "$tmp/empty")" \
	   "not ok - VM test run exited with status 255 (guest console: no console kept)"
mkdir -p "$tmp/run"
cp "$tmp/good.log" "$tmp/run/vm.log"
cp "$tmp/panic.console" "$tmp/run/console.log"
check "vm_report reads console.log beside the log and prefixes the line" \
	is "$(vm_report "$tmp/run/vm.log" 255 "debug kernel" | tail -n1)" \
	   "not ok - debug kernel: VM test run exited with status 255 (guest console: [ 1003.096287] BUG: kernel NULL pointer dereference, address: 0000000000000008)"
printf 'ok 3 a point\nnot ok 4 - another\n# ok 5 not a point\n' >"$tmp/run/vm.log"
check "vm_report prefixes every point, numbered or not, with or without a dash" \
	is "$(vm_report "$tmp/run/vm.log" 0 "Debian 13" | head -n3)" \
	   "$(printf 'ok 3 Debian 13: a point\nnot ok 4 - Debian 13: another\n# ok 5 not a point')"
printf 'TAP version 13\n1..2\nok 1 a\nok 2 b\n1..1\nok 1 c\n' >"$tmp/plans.log"
printf '1..3\nok 1 a\nok 2 b\n' >"$tmp/short.log"
printf 'cc: error: abi_layout.c: no such file\n' >"$tmp/none.log"
printf '1..2\nok 1 a\nnot ok 2 b\n' >"$tmp/failing.log"
check "suite: every point of its two plans and status 0: no line" \
	is "$(suite_verdict "$tmp/plans.log" 0 "s")" ""
check "suite: a failing point and status 1: the point says it, no line" \
	is "$(suite_verdict "$tmp/failing.log" 1 "s")" ""
check "suite: a build that failed (no point, status 2)" \
	is "$(suite_verdict "$tmp/none.log" 2 "s")" "not ok - s gave no test point (exit 2)"
check "suite: no point, even with status 0" \
	is "$(suite_verdict "$tmp/none.log" 0 "s")" "not ok - s gave no test point (exit 0)"
check "suite: 2 points of a plan of 3 (died early), status 0" \
	is "$(suite_verdict "$tmp/short.log" 0 "s")" \
	   "not ok - s gave 2 of the 3 points its plans announce (exit 0)"
check "suite: status 1 with every point passing" \
	is "$(suite_verdict "$tmp/plans.log" 1 "s")" "not ok - s exited with status 1"
tap_end
