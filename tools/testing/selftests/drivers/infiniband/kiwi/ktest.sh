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
cpus_before=$(kiwi_cq_cpus)
ktest_run "$ko" dev=kiwi0 || rc=1
# debugfs cq_cpus counts the completion work per CPU. The run made
# completions and ran handlers, and its comp_vector case ran a handler on a
# vector's CPU for a completion made on another CPU (with 2 CPUs or more).
# A handler sent from another CPU is a handler there too.
cq_cpus_grew() {
	local want_remote=0
	[ "$(nproc)" -gt 1 ] && want_remote=1
	kiwi_cq_cpus | awk '$4 > $3 { exit 1 }' || return 1
	kiwi_cq_cpus_delta "$cpus_before" | awk -v want_remote=$want_remote '
		{ dc += $2; dh += $3; dr += $4 }
		END { printf "# cq_cpus: %d completions, %d handlers, %d from another CPU\n", dc, dh, dr
		      exit !(dc > 0 && dh > 0 && dr >= want_remote) }'
}
if [ -n "$cpus_before" ] && cq_cpus_grew; then
	echo "ok - ktest: debugfs cq_cpus counts completions and handlers per CPU, cross-CPU ones too"
else
	echo "not ok - ktest: debugfs cq_cpus counts completions and handlers per CPU, cross-CPU ones too"
	rc=1
fi
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
