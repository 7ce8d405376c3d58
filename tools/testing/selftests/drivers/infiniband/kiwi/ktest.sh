#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel consumers' view of kiwi: load kiwi_ktest.ko (built by "make ktest"
# at the top) against kiwi0, re-emit the TAP lines its test cases printed
# to the kernel log as our own, and check that the load failed exactly when
# a case failed and that nothing was left on the device (ktest_run). Then
# kiwi_ktest_atomic.ko: RFC 7306 atomics and immediate data posted by a
# kernel consumer, client in namespace kiwiA on kiwi0, server in kiwiB on
# kiwi1.
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

# insmod does not load what the module needs (kiwi brings ib_core).
modprobe rdma_cm || echo "not ok - ktest: modprobe rdma_cm"
if kiwi_two_devs; then
	ktest_run_ns "$KIWI_TESTDIR/kiwi_ktest/kiwi_ktest_atomic.ko" || rc=1
	for d in kiwi0 kiwi1; do
		kiwi_no_leftovers ktest_atomic $d pd mr cq qp cm_id || rc=1
	done
else
	echo "not ok - ktest_atomic: two hosts with a kiwi device each"
	rc=1
fi
kiwi_two_devs_del
exit $rc
