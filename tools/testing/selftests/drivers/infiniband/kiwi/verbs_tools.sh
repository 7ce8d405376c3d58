#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rdma-core sees kiwi devices: one kiwi device at each end of a veth pair in
# two network namespaces, as in README's demo; ibv_devices and ibv_devinfo
# show them as iWARP devices, user space allocates PDs, nothing leaks, and
# libkiwi takes kiwi devices only (an rxe device keeps its own provider).
source "$(dirname "$0")/lib.sh"
tap_begin "verbs tools"

kiwi_unload
modprobe kiwi
kiwi_two_hosts || echo "not ok - set up two hosts"

check "kiwi0 created on kvA in namespace kiwiA" \
	ip netns exec kiwiA rdma link add kiwi0 type kiwi netdev kvA
check "kiwi1 created on kvB in namespace kiwiB" \
	ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvB
check "kvA is not visible from the initial namespace (kiwi1 add refused)" \
	fails_with "No such device" rdma link add kiwi9 type kiwi netdev kvA

out=$(ibv_devices 2>&1)
echo "$out" | sed 's/^/# /'
check "ibv_devices lists kiwi0" has_line "$out" "^[[:space:]]+kiwi0[[:space:]]+[0-9a-f]{16}$"
check "ibv_devices lists kiwi1" has_line "$out" "^[[:space:]]+kiwi1[[:space:]]+[0-9a-f]{16}$"

out=$(ibv_devinfo -d kiwi0 2>&1)
echo "$out" | sed 's/^/# /'
check "ibv_devinfo: transport iWARP" has_line "$out" "transport:[[:space:]]+iWARP \(1\)"
check "ibv_devinfo: port 1 PORT_ACTIVE" has_line "$out" "state:[[:space:]]+PORT_ACTIVE \(4\)"
check "ibv_devinfo: link_layer Ethernet" has_line "$out" "link_layer:[[:space:]]+Ethernet"
check "ibv_devinfo: fw_ver from the module" has_line "$out" "fw_ver:[[:space:]]+0\.1\.0"
mac=$(ip -n kiwiA -br link show kvA | awk '{print $3}')
IFS=: read -r m1 m2 m3 m4 m5 m6 <<<"$mac"
guid=$(printf '%02x%s:%sff:fe%s:%s%s' $((0x$m1 ^ 2)) "$m2" "$m3" "$m4" "$m5" "$m6")
check "node GUID is the EUI-64 of kvA's MAC ($mac -> $guid)" \
	eval '[ ${#guid} -eq 19 ] && has_line "$out" "node_guid:[[:space:]]+$guid$"'
check "GID 0 is kvA's MAC address" \
	test "$(query_field kiwi0 gid)" = "$(tr -d : <<<"$mac")00000000000000000000"
check "ibv_devinfo -d kiwi1 shows iWARP too" \
	has_line "$(ibv_devinfo -d kiwi1 2>&1)" "transport:[[:space:]]+iWARP"

q=$("$KIWI_UVERBS" query kiwi1)
check "query_device: the limits kiwi enforces (PD 65536, QP 16384, CQ 16384, MR 65536)" \
	eval 'has_line "$q" "^max_pd=65536$" && has_line "$q" "^max_qp=16384$" &&
	      has_line "$q" "^max_cq=16384$" && has_line "$q" "^max_mr=65536$"'
check "user space allocates and frees 1000 PDs" "$KIWI_UVERBS" pd kiwi0 1000
check "no PD is left behind" test -z "$(rdma resource show pd dev kiwi0 2>/dev/null)"
check "a PD from inside a namespace works" \
	ip netns exec kiwiB "$KIWI_UVERBS" pd kiwi1 10

# rxe keeps its own provider; kiwi's binding is by driver id, not name.
ip link add kvr type dummy
ip link set kvr up
if modprobe rdma_rxe 2>/dev/null && rdma link add kiwirxe type rxe netdev kvr; then
	out=$(ibv_devinfo -d kiwirxe 2>&1)
	check "an rxe device named kiwirxe is not taken by libkiwi" \
		has_line "$out" "transport:[[:space:]]+InfiniBand \(0\)"
	rdma link del kiwirxe
else
	not_ok "could not create an rxe device to cross-check provider matching"
fi
ip link del kvr
modprobe -r rdma_rxe 2>/dev/null

kiwi_two_hosts_del
check "both devices go with their namespaces' veths" \
	wait_for 20 eval 'ibdev_absent kiwi0 && ibdev_absent kiwi1'
kiwi_unload
tap_end
