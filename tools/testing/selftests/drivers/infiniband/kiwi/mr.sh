#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Memory registration through libkiwi (kiwi_mr), then a check that no MR
# it registered is left in the kernel once the process is gone.
source "$(dirname "$0")/lib.sh"

kiwi_veth_dev kiwi0 || echo "not ok - set up kiwi0 on a veth pair"

"$KIWI_TESTDIR/kiwi_mr" kiwi0
rc=$?
kiwi_no_leftovers mr kiwi0 mr || rc=1
kiwi_veth_dev_del kiwi0
exit $rc
