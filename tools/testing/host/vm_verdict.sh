#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): the runners' verdict on a whole VM run
# (scripts/lib-vm.sh). A run that timed out, gave no results or ended
# with a failing status and no failing point gets a "not ok" line; a
# guest that stopped without its command's status (vm-run.sh's 255) gets
# the console line that says why on that same line, since a CI summary
# may keep only the failing lines. Prints TAP.
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
tap_end
