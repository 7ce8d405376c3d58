#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# CQ and QP semantics through libkiwi before any connection (kiwi_queues),
# then a check that nothing it created is left in the kernel.
source "$(dirname "$0")/lib.sh"

kiwi_veth_dev kiwi0 || echo "not ok - set up kiwi0 on a veth pair"

"$KIWI_TESTDIR/kiwi_queues" kiwi0
rc=$?
kiwi_no_leftovers queues kiwi0 qp cq || rc=1
kiwi_veth_dev_del kiwi0
exit $rc
