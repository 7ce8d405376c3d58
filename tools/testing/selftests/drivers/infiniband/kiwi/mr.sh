#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Memory registration through libkiwi (kiwi_mr), then a check that no MR
# it registered is left in the kernel once the process is gone.
source "$(dirname "$0")/lib.sh"

kiwi_veth_dev kiwi0 || echo "not ok - set up kiwi0 on a veth pair"

"$KIWI_TESTDIR/kiwi_mr" kiwi0
rc=$?
leftover=$(rdma resource show mr dev kiwi0 2>/dev/null)
if [ -z "$leftover" ]; then
	echo "ok - mr: no MR left in the kernel"
else
	echo "not ok - mr: MRs left in the kernel"
	echo "$leftover" | sed 's/^/# /'
	rc=1
fi
ip link del kva
wait_for 10 ibdev_absent kiwi0
kiwi_unload
exit $rc
