#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Data moves between two kiwi devices in two namespaces through rdma_cm:
# rping with verification (Send, RDMA Read, RDMA Write) over IPv4 and IPv6,
# perftest's bandwidth and latency tests with -R, ucmatose (IPv4 through an
# IPv6 wildcard listen, and IPv6) and qperf's RC tests over rdma_cm, first
# with MPA CRC negotiated off, then with crc_required=1. (Debian 12's
# perftest resolves rdma_cm addresses as IPv4 only.)
source "$(dirname "$0")/lib.sh"
tap_begin "data path"

out=$(mktemp -d)

for mode in "crc negotiated off" "crc required"; do
	if [ "$mode" = "crc required" ]; then
		check "$mode: two hosts with a kiwi device each" kiwi_two_devs crc_required=1
	else
		check "$mode: two hosts with a kiwi device each" kiwi_two_devs
	fi
	check "$mode: rping -V, 20 iterations of 4000 bytes, data verified" \
		pair rping 7174 kiwiB rping -s -a 192.0.2.2 -V -C 20 -S 4000 -- \
		kiwiA rping -c -a 192.0.2.2 -V -C 20 -S 4000
	check "$mode: rping -V with 65000-byte buffers (rping's largest)" \
		pair rping64 7174 kiwiB rping -s -a 192.0.2.2 -V -C 5 -S 65000 -- \
		kiwiA rping -c -a 192.0.2.2 -V -C 5 -S 65000
	check "$mode: rping -V over IPv6, 20 iterations of 4000 bytes" \
		pair rping6 7174 kiwiB rping -s -a 2001:db8::2 -V -C 20 -S 4000 -- \
		kiwiA rping -c -a 2001:db8::2 -V -C 20 -S 4000
	for t in send write read; do
		check "$mode: ib_${t}_bw -R, 64 KiB x 200" \
			pair "$t" 18515 kiwiB ib_${t}_bw -d kiwi1 -R -F -n 200 -s 65536 -- \
			kiwiA ib_${t}_bw -d kiwi0 -R -F -n 200 -s 65536 192.0.2.2
		check "$mode: ib_${t}_lat -R, 8 B x 200" \
			pair "${t}lat" 18515 kiwiB ib_${t}_lat -d kiwi1 -R -F -n 200 -s 8 -- \
			kiwiA ib_${t}_lat -d kiwi0 -R -F -n 200 -s 8 192.0.2.2
	done
	# ucmatose's server listens on the IPv6 wildcard: IPv4 clients too.
	check "$mode: ucmatose, IPv4 client to a wildcard server" \
		pair ucma 7471 kiwiB ucmatose -- kiwiA ucmatose -s 192.0.2.2
	check "$mode: ucmatose over IPv6" \
		pair ucma6 7471 kiwiB ucmatose -- kiwiA ucmatose -s 2001:db8::2
	# qperf's RC tests that iWARP can run: none with immediate data (its
	# RDMA Write bandwidth and latency tests), no atomics, and no rc_bw,
	# whose sender may outrun the receiver's posted buffers (iWARP has no
	# receiver-not-ready retry).
	check "$mode: qperf -cm1 rc_lat rc_rdma_read_bw rc_rdma_read_lat rc_rdma_write_poll_lat" \
		pair qperf 19765 kiwiB qperf -lp 19765 -- kiwiA qperf -lp 19765 -cm1 -t 1 \
		192.0.2.2 rc_lat rc_rdma_read_bw rc_rdma_read_lat rc_rdma_write_poll_lat quit
	kiwi_two_devs_del
done
rm -rf "$out"
tap_end
