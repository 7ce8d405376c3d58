#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# CQ and QP semantics through libkiwi before any connection (kiwi_queues),
# then a check that nothing it created is left in the kernel.
source "$(dirname "$0")/lib.sh"

kiwi_veth_dev kiwi0 || echo "not ok - set up kiwi0 on a veth pair"

"$KIWI_TESTDIR/kiwi_queues" kiwi0
rc=$?
# iproute2 6.1 has no "dev" filter for these: select kiwi0's lines.
leftover=$(rdma resource show qp; rdma resource show cq) ||
	leftover="rdma resource show failed"
leftover=$(grep -w kiwi0 <<<"$leftover")
if [ -z "$leftover" ]; then
	echo "ok - queues: no QP or CQ left in the kernel"
else
	echo "not ok - queues: objects left in the kernel"
	echo "$leftover" | sed 's/^/# /'
	rc=1
fi
ip link del kva
wait_for 10 ibdev_absent kiwi0
kiwi_unload
exit $rc
