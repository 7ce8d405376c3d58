#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Zero-copy transmit (module parameter zcopy_min): kiwi_xfer moves checked
# RDMA Writes and Sends whose sender overwrites its buffer the moment the
# Send completes. With zero copy TCP still references those pages until the
# peer acknowledges them, so a completion that came too early would show as
# poisoned data or a CRC error at the receiver once TCP retransmits; netem
# drops packets on the sender's link to force retransmissions. The port
# counters show which path the data took.
source "$(dirname "$0")/lib.sh"
tap_begin "zero-copy transmit"

T=$KIWI_TESTDIR/kiwi_xfer

# counter NAME: kiwi0's port counter NAME.
counter() {
	cat "/sys/class/infiniband/kiwi0/ports/1/hw_counters/$1"
}

# xfer NAME SIZE COUNT: one kiwi_xfer run between kiwiA and kiwiB.
xfer() {
	pair "$1" 7300 kiwiB "$T" server 192.0.2.2 7300 "$2" "$3" -- \
		kiwiA "$T" client 192.0.2.2 7300 "$2" "$3"
}

loss() {
	ip netns exec kiwiA tc qdisc add dev kvA root netem loss "$1"
}

for mode in copy zcopy zcopy-crc; do
	case $mode in
	copy) params=() ;;
	zcopy) params=(zcopy_min=65536) ;;
	zcopy-crc) params=(zcopy_min=65536 crc_required=1) ;;
	esac
	check "$mode: two hosts with a kiwi device each (${params[*]:-defaults})" \
		kiwi_two_devs "${params[@]}"
	check "$mode: 1 MiB Write + Send x 20, buffer poisoned at completion" \
		xfer "$mode-1m" 1048576 20
	check "$mode: 100000-byte (odd pages) Write + Send x 20" \
		xfer "$mode-odd" 100000 20
	bytes=$(counter tx_zcopy_bytes)
	if [ "$mode" = copy ]; then
		check "$mode: nothing went out by reference (tx_zcopy_bytes $bytes)" \
			test "$bytes" = 0
	else
		# 20 x (1 MiB + 100000 B) twice (Write and Send), plus framing
		check "$mode: the payload went out by reference (tx_zcopy_bytes $bytes)" \
			test "$bytes" -ge $((2 * 20 * (1048576 + 100000)))
	fi
	check "$mode: 5% packet loss on the sender's link" loss 5%
	check "$mode: 256 KiB Write + Send x 30 through retransmissions" \
		xfer "$mode-loss" 262144 30
	check "$mode: TCP retransmitted" \
		eval "ip netns exec kiwiA nstat -az TcpRetransSegs | awk '/TcpRetransSegs/ { exit !(\$2 > 0) }'"
	kiwi_two_devs_del
done
tap_end
