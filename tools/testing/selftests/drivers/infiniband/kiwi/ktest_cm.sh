#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A kernel ULP over rdma_cm: kiwi_ktest_cm.ko (built by "make ktest") runs
# a client in namespace kiwiA on kiwi0 and a server in kiwiB on kiwi1, over
# IPv4 and IPv6. They move checksummed data of several sizes with Send, and
# with RDMA Write and Read through a fast-registered MR whose rkey went over
# in a Send and that the peer invalidates with Send with Invalidate, and
# with RDMA Read with Invalidate into a sink the reader fast-registered (as
# rdma_rw reads for NVMe-oF, iSER and NFS/RDMA servers); then both
# disconnect, drain and free everything. More connections: a Write to a
# stale rkey, and a Read with Invalidate of a bad STag, each end theirs.
# Then connects beyond a busy listener's backlog, which kiwi must refuse
# itself (the iw_cm has no room for their events): each is REJECTED at
# once; and connects whose events the iw_cm drops with their listener,
# which time out and which kiwi must end itself: no endpoint stays behind. Once with MPA CRC negotiated off and
# once with kiwi loaded with crc_required=1. The module's TAP lines
# are re-emitted (ktest_run), and nothing may be left on either device.
source "$(dirname "$0")/lib.sh"

# kiwi_cm_idle NAME: one point: within 10 s kiwi has no connection
# endpoint and no socket left, as once every connection and listener is
# gone.
kiwi_cm_idle() {
	if wait_for 10 eval '[ "$(kiwi_cm_counts)" = "0 0" ]'; then
		echo "ok - $1: no connection endpoint or socket of kiwi's left"
		return 0
	fi
	echo "not ok - $1: kiwi's connection endpoints and sockets left: $(kiwi_cm_counts)"
	return 1
}

ko=$KIWI_TESTDIR/kiwi_ktest/kiwi_ktest_cm.ko
rc=0

# kiwi_no_leftovers for both devices.
no_leftovers() {
	kiwi_no_leftovers "$1" kiwi0 pd mr cq qp cm_id &&
		kiwi_no_leftovers "$1" kiwi1 pd mr cq qp cm_id
}

# insmod does not load what the module needs (kiwi brings ib_core).
modprobe rdma_cm || echo "not ok - ktest_cm: modprobe rdma_cm"

# The harness: failing points fail the load, also once a connection is up,
# and what was made is freed all the same.
harness() {
	local r=0

	ktest_fails "$ko" "not ok 1 - setup: netns_a=-1 is a network namespace \\(-9\\)" \
		netns_b=4 4</run/netns/kiwiB || r=1
	ktest_fails "$ko" "not ok [0-9]+ - ipv4: B is on kiwi0 \\(kiwi1\\)" \
		netns_a=3 netns_b=4 dev_b=kiwi0 addr6_a= \
		3</run/netns/kiwiA 4</run/netns/kiwiB || r=1
	return $r
}

for mode in "crc off" "crc required"; do
	params=()
	[ "$mode" = "crc required" ] && params=(crc_required=1)
	if ! kiwi_two_devs "${params[@]}"; then
		echo "not ok - ktest_cm: $mode: two hosts with a kiwi device each"
		rc=1
		kiwi_two_devs_del
		continue
	fi
	echo "# $mode: kiwi crc_required=$(cat /sys/module/kiwi/parameters/crc_required)"
	KTEST_TAG=$mode ktest_run_ns "$ko" || rc=1
	if [ "$mode" = "crc off" ]; then
		harness || rc=1
	fi
	no_leftovers "ktest_cm: $mode" || rc=1
	kiwi_cm_idle "ktest_cm: $mode" || rc=1
	kiwi_two_devs_del
done
exit $rc
