#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Wire interop with the upstream siw (built by scripts/build-siw.sh from
# Debian's linux-source-6.1): kiwi in one namespace, siw in the other,
# rping -V in both directions over IPv4 and IPv6, and perftest's bandwidth
# and latency tests over rdma_cm, CRC off and required by kiwi.
source "$(dirname "$0")/lib.sh"
tap_begin "interop with siw"
root=$(cd "$KIWI_TESTDIR/../../../../../.." && pwd)
SIW=$root/build/siw/siw.ko
out=$(mktemp -d)

setup() {
	kiwi_unload
	modprobe -r siw 2>/dev/null
	modprobe -a ib_core libcrc32c crc32c_generic 2>/dev/null
	modprobe kiwi "$@" && insmod "$SIW" && kiwi_two_hosts || return 1
	ip netns exec kiwiA rdma link add kiwi0 type kiwi netdev kvA &&
	ip netns exec kiwiB rdma link add siw0 type siw netdev kvB
}

teardown() {
	kiwi_two_hosts_del
	wait_for 20 eval 'ibdev_absent kiwi0 && ibdev_absent siw0'
	rmmod siw
	kiwi_unload
}

if [ ! -f "$SIW" ]; then
	not_ok "siw.ko was built (scripts/build-siw.sh)"
	tap_end
fi

for mode in "crc off" "crc required by kiwi"; do
	if [ "$mode" = "crc off" ]; then
		check "$mode: kiwi and siw devices on the two ends" setup
	else
		check "$mode: kiwi and siw devices on the two ends" setup crc_required=1
	fi
	check "$mode: rping -V, kiwi client -> siw server" \
		pair r1 7174 kiwiB rping -s -a 192.0.2.2 -V -C 10 -S 4000 -- \
		kiwiA rping -c -a 192.0.2.2 -V -C 10 -S 4000
	check "$mode: rping -V, siw client -> kiwi server" \
		pair r2 7174 kiwiA rping -s -a 192.0.2.1 -V -C 10 -S 4000 -- \
		kiwiB rping -c -a 192.0.2.1 -V -C 10 -S 4000
	check "$mode: rping -V over IPv6, kiwi client -> siw server" \
		pair r3 7174 kiwiB rping -s -a 2001:db8::2 -V -C 10 -S 4000 -- \
		kiwiA rping -c -a 2001:db8::2 -V -C 10 -S 4000
	check "$mode: rping -V over IPv6, siw client -> kiwi server" \
		pair r4 7174 kiwiA rping -s -a 2001:db8::1 -V -C 10 -S 4000 -- \
		kiwiB rping -c -a 2001:db8::1 -V -C 10 -S 4000
	# perftest's server listens on the wildcard address, which makes
	# rdma_cm listen on every iWARP device; siw refuses that for a device
	# whose netdev is in another namespace (kiwi listens on nothing there),
	# so a perftest server can only run on the siw side here.
	for t in send write read; do
		check "$mode: ib_${t}_bw -R, kiwi client -> siw server" \
			pair "$t" 18515 kiwiB ib_${t}_bw -d siw0 -R -F -n 100 -s 16384 -- \
			kiwiA ib_${t}_bw -d kiwi0 -R -F -n 100 -s 16384 192.0.2.2
		check "$mode: ib_${t}_lat -R, kiwi client -> siw server" \
			pair "${t}lat" 18515 kiwiB ib_${t}_lat -d siw0 -R -F -n 100 -s 8 -- \
			kiwiA ib_${t}_lat -d kiwi0 -R -F -n 100 -s 8 192.0.2.2
	done
	teardown
done
rm -rf "$out"
tap_end
