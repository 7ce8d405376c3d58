#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Data moves between two kiwi devices in two namespaces through rdma_cm:
# rping with verification (Send, RDMA Read, RDMA Write) over IPv4 and IPv6,
# perftest's bandwidth and latency tests with -R, ucmatose (IPv4 through an
# IPv6 wildcard listen, and IPv6) and qperf's RC tests over rdma_cm, first
# with MPA CRC negotiated off, then with crc_required=1. (Debian 12's
# perftest resolves rdma_cm addresses as IPv4 only.)
#
# KIWI_DATAPATH_CRC="required" runs the second pass only (the debug kernel
# run, where a pass takes 4-5 minutes: the CRC pass reaches every path the
# other does, and the CRC's).
source "$(dirname "$0")/lib.sh"

# qperf_pair NAME PORT SERVER-NS SERVER-CMD... -- CLIENT-NS CLIENT-CMD...:
# pair for qperf -cm1, once more after qperf's own race. Debian's qperf
# (0.4.11) sends its client a test's port before it listens there
# (upstream's commit 118a571 swaps the two); a client quicker than that
# is refused, REJECTED, and ends the run. Seen on the debug kernel only.
qperf_pair() {
	pair_once_more "unexpected event from RDMA CM: Event rejected" \
		"qperf's client connected before its server listened" "$@"
}

tap_begin "data path"

for crc in ${KIWI_DATAPATH_CRC:-off required}; do
	case $crc in
	off) mode="crc negotiated off" ;;
	required) mode="crc required" ;;
	*) check "KIWI_DATAPATH_CRC holds off or required, not $crc" false; continue ;;
	esac
	params=()
	[ "$mode" = "crc required" ] && params=(crc_required=1)
	check "$mode: two hosts with a kiwi device each" kiwi_two_devs "${params[@]}"
	rping_check "$mode" rping kiwiB 192.0.2.2 kiwiA 20 4000
	# 65000 bytes: rping's largest buffers
	rping_check "$mode" rping64 kiwiB 192.0.2.2 kiwiA 5 65000
	rping_check "$mode" rping6 kiwiB 2001:db8::2 kiwiA 20 4000
	perftest_checks "$mode" kiwi1 200 65536
	# ucmatose's server listens on the IPv6 wildcard: IPv4 clients too.
	check "$mode: ucmatose, IPv4 client to a wildcard server" \
		pair ucma 7471 kiwiB ucmatose -- kiwiA ucmatose -s 192.0.2.2
	check "$mode: ucmatose over IPv6" \
		pair ucma6 7471 kiwiB ucmatose -- kiwiA ucmatose -s 2001:db8::2
	# qperf's RC tests that iWARP can run: none with immediate data (its
	# RDMA Write bandwidth and latency tests), no atomics, and no rc_bw,
	# whose sender may outrun the receiver's posted buffers (iWARP has no
	# receiver-not-ready retry). qperf gives each exchange 5 s unless
	# told (-to); on the debug kernel setting up a test's connection
	# takes longer. (Debian's qperf 0.4.11 server segfaults in
	# libibverbs as it closes each test, after the results: it destroys
	# the listening ID's QP, NULL, not the connection's; upstream's
	# commit 83bc16e.)
	check "$mode: qperf -cm1 rc_lat rc_rdma_read_bw rc_rdma_read_lat rc_rdma_write_poll_lat" \
		qperf_pair qperf 19765 kiwiB qperf -lp 19765 -lto 30 -- kiwiA qperf -lp 19765 \
		-cm1 -t 1 -to 30 192.0.2.2 rc_lat rc_rdma_read_bw rc_rdma_read_lat \
		rc_rdma_write_poll_lat quit
	kiwi_two_devs_del
done
tap_end
