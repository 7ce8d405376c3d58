#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Data moves between two kiwi devices in two namespaces through rdma_cm:
# rping with verification (Send, RDMA Read, RDMA Write), and perftest's
# ib_send_bw, ib_write_bw and ib_read_bw with -R, first with MPA CRC
# negotiated off, then with crc_required=1.
source "$(dirname "$0")/lib.sh"
tap_begin "data path"

setup() {
	kiwi_unload
	modprobe kiwi "$@"
	ip netns add kiwiA
	ip netns add kiwiB
	ip link add kvA netns kiwiA type veth peer name kvB netns kiwiB
	ip -n kiwiA addr add 192.0.2.1/24 dev kvA
	ip -n kiwiB addr add 192.0.2.2/24 dev kvB
	ip -n kiwiA link set kvA up
	ip -n kiwiB link set kvB up
	ip netns exec kiwiA rdma link add kiwi0 type kiwi netdev kvA
	ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvB
}

teardown() {
	ip netns del kiwiA
	ip netns del kiwiB
	wait_for 20 eval 'ibdev_absent kiwi0 && ibdev_absent kiwi1'
	kiwi_unload
}

out=$(mktemp -d)

# pair NAME PORT SERVER-CMD -- CLIENT-CMD: start the server, wait until it
# listens on PORT, run the client; both must exit 0.
pair() {
	local name=$1 port=$2 srv=() cli=()
	shift 2
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	ip netns exec kiwiB timeout 120 "${srv[@]}" >"$out/$name.srv" 2>&1 &
	local spid=$!
	wait_for 30 eval "ip netns exec kiwiB ss -Hltn | grep -q ':$port '"
	ip netns exec kiwiA timeout 120 "${cli[@]}" >"$out/$name.cli" 2>&1
	local crc=$?
	wait "$spid"
	local src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "# $name: client exit $crc, server exit $src"
		grep -ihE "error|fail|unable|unexpected|invalid" "$out/$name.srv" |
			sed "s/^/# $name server: /"
		grep -ihE "error|fail|unable|unexpected|invalid" "$out/$name.cli" |
			sed "s/^/# $name client: /"
		return 1
	fi
}

for mode in "crc negotiated off" "crc required"; do
	if [ "$mode" = "crc required" ]; then setup crc_required=1; else setup; fi
	check "$mode: rping -V, 20 iterations of 4000 bytes, data verified" \
		pair rping 7174 rping -s -a 192.0.2.2 -V -C 20 -S 4000 -- \
		rping -c -a 192.0.2.2 -V -C 20 -S 4000
	check "$mode: rping -V with 65000-byte buffers (rping's largest)" \
		pair rping64 7174 rping -s -a 192.0.2.2 -V -C 5 -S 65000 -- \
		rping -c -a 192.0.2.2 -V -C 5 -S 65000
	for t in send write read; do
		check "$mode: ib_${t}_bw -R, 64 KiB x 200" \
			pair "$t" 18515 ib_${t}_bw -d kiwi1 -R -F -n 200 -s 65536 -- \
			ib_${t}_bw -d kiwi0 -R -F -n 200 -s 65536 192.0.2.2
	done
	check "$mode: ib_send_lat -R, 8 B x 200" \
		pair lat 18515 ib_send_lat -d kiwi1 -R -F -n 200 -s 8 -- \
		ib_send_lat -d kiwi0 -R -F -n 200 -s 8 192.0.2.2
	teardown
done
rm -rf "$out"
tap_end
