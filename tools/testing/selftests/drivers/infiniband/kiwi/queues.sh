#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# CQ and QP semantics through libkiwi before any connection (kiwi_queues),
# then a check that nothing it created is left in the kernel; then, between
# two namespaces, completion notification on a connected QP under traffic.
source "$(dirname "$0")/lib.sh"
tap_begin "CQ and QP semantics, completion notification"
Q=$KIWI_TESTDIR/kiwi_queues
rc=0

check "kiwi0 on a veth pair" kiwi_veth_dev kiwi0
tap_run "$Q" kiwi0 || rc=1
kiwi_no_leftovers queues kiwi0 qp cq || rc=1
kiwi_veth_dev_del kiwi0

check "two hosts with a kiwi device each" kiwi_two_devs
tap_pair notify 7420 kiwiB "$Q" server 192.0.2.2 7420 -- \
	kiwiA "$Q" client 192.0.2.2 7420 || rc=1
kiwi_no_leftovers queues-connected kiwi0 qp cq mr pd || rc=1
kiwi_two_devs_del
[ $rc -eq 0 ] || not_ok "kiwi_queues reported failures"
tap_end
