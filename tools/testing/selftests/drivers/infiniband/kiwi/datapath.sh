#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Data moves between two kiwi devices in two namespaces through rdma_cm:
# rping with verification (Send, RDMA Read, RDMA Write), and perftest's
# ib_send_bw, ib_write_bw and ib_read_bw with -R, first with MPA CRC
# negotiated off, then with crc_required=1.
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
	for t in send write read; do
		check "$mode: ib_${t}_bw -R, 64 KiB x 200" \
			pair "$t" 18515 kiwiB ib_${t}_bw -d kiwi1 -R -F -n 200 -s 65536 -- \
			kiwiA ib_${t}_bw -d kiwi0 -R -F -n 200 -s 65536 192.0.2.2
	done
	check "$mode: ib_send_lat -R, 8 B x 200" \
		pair lat 18515 kiwiB ib_send_lat -d kiwi1 -R -F -n 200 -s 8 -- \
		kiwiA ib_send_lat -d kiwi0 -R -F -n 200 -s 8 192.0.2.2
	kiwi_two_devs_del
done
rm -rf "$out"
tap_end
