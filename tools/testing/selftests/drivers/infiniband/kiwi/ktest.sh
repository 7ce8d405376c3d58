#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel consumers' view of kiwi: load kiwi_ktest.ko (built by "make ktest"
# at the top) against kiwi0, re-emit the TAP lines its test cases printed
# to the kernel log as our own, and check that the load failed exactly when
# a case failed and that nothing was left on the device.
source "$(dirname "$0")/lib.sh"

ko=$KIWI_TESTDIR/kiwi_ktest/kiwi_ktest.ko
rc=0

if [ ! -f "$ko" ]; then
	echo "not ok - ktest: $ko is built (make ktest)"
	exit 1
fi
kiwi_veth_dev kiwi0 || echo "not ok - ktest: set up kiwi0 on a veth pair"

# Our lines follow the marker; earlier runs may still be in the log.
marker="kiwi_ktest: run $$ $RANDOM"
echo "$marker" >/dev/kmsg
start=$SECONDS
insmod "$ko" dev=kiwi0
ins=$?
echo "# insmod returned $ins after $((SECONDS - start)) s"
lines=$(dmesg --notime | sed -n "/^$marker\$/,\$p" |
	sed -n 's/^kiwi_ktest: \(ok \|not ok \|1\.\.\|# \)/\1/p')
echo "$lines"

plan=$(sed -n 's/^1\.\.//p' <<<"$lines")
passed=$(grep -c '^ok ' <<<"$lines")
failed=$(grep -c '^not ok ' <<<"$lines")
if [ "$failed" -gt 0 ]; then
	rc=1
	if [ $ins -ne 0 ]; then
		echo "ok - ktest: the failed cases failed the module load"
	else
		echo "not ok - ktest: the failed cases failed the module load"
	fi
elif [ $ins -eq 0 ] && [ "$passed" -gt 0 ] && [ "$plan" = "$passed" ]; then
	echo "ok - ktest: insmod succeeded, all $passed points of the plan passed"
else
	echo "not ok - ktest: insmod status $ins, plan '$plan', $passed passed"
	rc=1
fi
if grep -qw '^kiwi_ktest' /proc/modules; then
	if rmmod kiwi_ktest; then
		echo "ok - ktest: rmmod kiwi_ktest"
	else
		echo "not ok - ktest: rmmod kiwi_ktest"
		rc=1
	fi
fi
# The harness itself: a failing case must fail the load and say so.
marker="kiwi_ktest: run $$ $RANDOM"
echo "$marker" >/dev/kmsg
if insmod "$ko" dev=kiwi-nosuch 2>/dev/null; then
	rmmod kiwi_ktest
	echo "not ok - ktest: a run against a missing device fails the load"
	rc=1
elif dmesg --notime | sed -n "/^$marker\$/,\$p" |
	grep -q '^kiwi_ktest: not ok 1 - setup: kiwi-nosuch exists'; then
	echo "ok - ktest: a run against a missing device fails the load, reporting not ok"
else
	echo "not ok - ktest: a run against a missing device reports not ok"
	rc=1
fi

kiwi_no_leftovers ktest kiwi0 pd mr cq qp || rc=1
kiwi_veth_dev_del kiwi0
exit $rc
