#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel consumers' view of kiwi: load kiwi_ktest.ko (built by "make ktest"
# at the top) against kiwi0, re-emit the TAP lines its test cases printed
# to the kernel log as our own, and check that the load failed exactly when
# a case failed and that nothing was left on the device (ktest_run).
source "$(dirname "$0")/lib.sh"

ko=$KIWI_TESTDIR/kiwi_ktest/kiwi_ktest.ko
rc=0

kiwi_veth_dev kiwi0 || echo "not ok - ktest: set up kiwi0 on a veth pair"
ktest_run "$ko" dev=kiwi0 || rc=1
# The harness itself: a failing case must fail the load and say so.
ktest_fails "$ko" "not ok 1 - setup: kiwi-nosuch exists and is an iWARP device" \
	dev=kiwi-nosuch || rc=1
kiwi_no_leftovers ktest kiwi0 pd mr cq qp || rc=1
kiwi_veth_dev_del kiwi0
exit $rc
