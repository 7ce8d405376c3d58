#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Memory registration through libkiwi (kiwi_mr), then a check that no MR
# it registered is left in the kernel once the process is gone. Then
# ibv_rereg_mr with data moving through the MR between two kiwi devices
# (kiwi_rereg: the owner prints TAP, the peer serves its connections).
source "$(dirname "$0")/lib.sh"

kiwi_veth_dev kiwi0 || echo "not ok - set up kiwi0 on a veth pair"

"$KIWI_TESTDIR/kiwi_mr" kiwi0
rc=$?
kiwi_no_leftovers mr kiwi0 mr || rc=1
kiwi_veth_dev_del kiwi0

out=$(mktemp -d)
kiwi_two_devs || echo "not ok - rereg: two hosts with a kiwi device each"
ip netns exec kiwiB timeout 300 "$KIWI_TESTDIR/kiwi_rereg" peer 192.0.2.2 7390 \
	>"$out/peer" 2>&1 &
pid=$!
wait_for 30 eval "ip netns exec kiwiB ss -Hltn | grep -q ':7390 '"
ip netns exec kiwiA timeout 300 "$KIWI_TESTDIR/kiwi_rereg" owner 192.0.2.2 7390 || rc=1
if wait "$pid"; then
	echo "ok - rereg: the peer served every connection and stopped"
else
	echo "not ok - rereg: the peer served every connection and stopped"
	rc=1
fi
sed 's/^/# peer: /' "$out/peer"
rm -rf "$out"
kiwi_no_leftovers rereg kiwi0 mr qp cq pd || rc=1
kiwi_no_leftovers rereg kiwi1 mr qp cq pd || rc=1
kiwi_two_devs_del
exit $rc
