#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Wire interop with the upstream siw (built by scripts/build-siw.sh from
# Debian's linux-source-6.1): kiwi in one namespace, siw in the other,
# rping -V in both directions over IPv4 and IPv6, and perftest's bandwidth
# and latency tests over rdma_cm, CRC off and required by kiwi.
source "$(dirname "$0")/lib.sh"
tap_begin "interop with siw"

# setup MODPARAM...: kiwi0 in kiwiA, siw0 in kiwiB.
setup() {
	kiwi_unload
	kiwi_two_hosts && kiwi_devs siw0 "$@"
}

if [ ! -f "$KIWI_SIW" ]; then
	not_ok "siw.ko was built (scripts/build-siw.sh)"
	tap_end
fi

for mode in "crc off" "crc required by kiwi"; do
	params=()
	[ "$mode" = "crc off" ] || params=(crc_required=1)
	check "$mode: kiwi and siw devices on the two ends" setup "${params[@]}"
	# kiwi client and siw server, then the other way round
	rping_check "$mode" r1 kiwiB 192.0.2.2 kiwiA 10 4000
	rping_check "$mode" r2 kiwiA 192.0.2.1 kiwiB 10 4000
	rping_check "$mode" r3 kiwiB 2001:db8::2 kiwiA 10 4000
	rping_check "$mode" r4 kiwiA 2001:db8::1 kiwiB 10 4000
	# perftest's server listens on the wildcard address, which makes
	# rdma_cm listen on every iWARP device; siw refuses that for a device
	# whose netdev is in another namespace (kiwi listens on nothing there),
	# so a perftest server can only run on the siw side here.
	perftest_checks "$mode" siw0 100 16384
	kiwi_two_devs_del
done
tap_end
