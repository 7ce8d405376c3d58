#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Memory registration through libkiwi (kiwi_mr), then a check that no MR
# it registered is left in the kernel once the process is gone. Then
# ibv_rereg_mr with data moving through the MR between two kiwi devices
# (kiwi_rereg: the owner prints TAP, the peer serves its connections).
source "$(dirname "$0")/lib.sh"
tap_begin "memory registration"
rc=0

check "kiwi0 on a veth pair" kiwi_veth_dev kiwi0
tap_run "$KIWI_TESTDIR/kiwi_mr" kiwi0 || rc=1
kiwi_no_leftovers mr kiwi0 mr || rc=1
kiwi_veth_dev_del kiwi0

check "rereg: two hosts with a kiwi device each" kiwi_two_devs
tap_pair rereg 7390 kiwiB "$KIWI_TESTDIR/kiwi_rereg" peer 192.0.2.2 7390 -- \
	kiwiA "$KIWI_TESTDIR/kiwi_rereg" owner 192.0.2.2 7390 || rc=1
kiwi_no_leftovers rereg kiwi0 mr qp cq pd || rc=1
kiwi_no_leftovers rereg kiwi1 mr qp cq pd || rc=1
kiwi_two_devs_del
[ $rc -eq 0 ] || not_ok "kiwi_mr or kiwi_rereg reported failures"
tap_end
