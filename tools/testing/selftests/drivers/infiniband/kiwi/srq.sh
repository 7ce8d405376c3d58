#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Shared receive queues (V-SRQ-*, shared/spec/digest-verbs.md), for user
# consumers through libkiwi and rdma_cm (kiwi_srq: the server in kiwiB
# shares one SRQ among three QPs the client in kiwiA connects and sends
# checked messages over), then for kernel consumers (kiwi_ktest_srq.ko:
# the same with two QPs through kernel verbs). kiwi_srq's server prints the
# points about the SRQ; they are re-emitted here as ours.
source "$(dirname "$0")/lib.sh"
tap_begin "shared receive queues"

T=$KIWI_TESTDIR/kiwi_srq
ko=$KIWI_TESTDIR/kiwi_ktest/kiwi_ktest_srq.ko

check "two hosts with a kiwi device each" kiwi_two_devs
pair srq 7400 kiwiB "$T" server 192.0.2.2 7400 -- kiwiA "$T" client 192.0.2.2 7400
rc=$?
# The server's points, then that it got through all of them.
tap_import "" "$out/srq.srv"
whole=$?
check "kiwi_srq: server and client exited 0, all $tap_plan points reported" \
	eval '[ $rc -eq 0 ] && [ $whole -eq 0 ]'

# The kernel consumer, between the same namespaces.
modprobe rdma_cm || echo "# modprobe rdma_cm failed"
# ktest_run's own TAP (numbered points, a plan) becomes comments here.
kout=$(ktest_run_ns "$ko")
krc=$?
sed 's/^/# /' <<<"$kout"
kplan=$(sed -n 's/^1\.\.//p' <<<"$kout")
check "kiwi_ktest_srq: the kernel consumer's $kplan points passed" \
	eval '[ $krc -eq 0 ] && [ -n "$kplan" ]'

for d in kiwi0 kiwi1; do
	if kiwi_no_leftovers srq "$d" pd mr cq qp srq cm_id >/dev/null; then
		ok "nothing left on $d (pd mr cq qp srq cm_id)"
	else
		not_ok "nothing left on $d (pd mr cq qp srq cm_id)"
	fi
done
kiwi_two_devs_del
tap_end
