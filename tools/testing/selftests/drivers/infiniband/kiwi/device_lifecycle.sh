#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kiwi device lifecycle: rdma link add/del, bad input refused with the
# right errno and no device, port state and events following the netdev,
# MTU, netdev removal, and rmmod with devices present.
source "$(dirname "$0")/lib.sh"
tap_begin "device lifecycle"

kiwi_unload
ip link add kva type veth peer name kvb
ip link set kva up
ip link set kvb up

check "modprobe kiwi loads the module" modprobe kiwi
check "module is live" test "$(cat /sys/module/kiwi/initstate 2>/dev/null)" = live

check "rdma link add kiwi0 on a veth succeeds" \
	rdma link add kiwi0 type kiwi netdev kva
check "kiwi0 is registered" ibdev_exists kiwi0
check "kiwi0 is an RNIC" grep -qx "4: RNIC" /sys/class/infiniband/kiwi0/node_type
check "kiwi0 port 1 is iWARP over Ethernet" \
	grep -qx Ethernet /sys/class/infiniband/kiwi0/ports/1/link_layer
check "rdma link shows kiwi0 on kva" \
	has_line "$(rdma link show kiwi0/1)" "netdev kva"
check "port is ACTIVE with the netdev up" test "$(port_state kiwi0)" = "4: ACTIVE"
check "phys_state is LinkUp" test "$(port_phys_state kiwi0)" = "5: LinkUp"

count=$(ls /sys/class/infiniband | wc -l)
check "duplicate device name refused with EEXIST" \
	fails_with "File exists" rdma link add kiwi0 type kiwi netdev kvb
check "a netdev with a kiwi device refuses a second one (EEXIST)" \
	fails_with "File exists" rdma link add kiwi1 type kiwi netdev kva
check "missing netdev refused with ENODEV" \
	fails_with "No such device" rdma link add kiwi1 type kiwi netdev nosuch0
check "loopback refused with EOPNOTSUPP" \
	fails_with "Operation not supported" rdma link add kiwi1 type kiwi netdev lo
ip link add kvtun type ipip local 198.51.100.1 remote 198.51.100.2
check "an IPIP tunnel (not Ethernet) refused with EOPNOTSUPP" \
	fails_with "Operation not supported" rdma link add kiwi1 type kiwi netdev kvtun
ip link del kvtun
check "refused requests created no device" \
	test "$(ls /sys/class/infiniband | wc -l)" -eq "$count"

# Port state and IB events follow the netdev.
evlog=$(mktemp)
"$KIWI_UVERBS" events kiwi0 20 PORT_ERR PORT_ACTIVE PORT_ERR PORT_ACTIVE \
	>"$evlog" 2>&1 &
evpid=$!
wait_for 20 grep -q ready "$evlog"
ip link set kva down
check "netdev down: port DOWN" wait_for 5 test "$(port_state kiwi0)" = "1: DOWN"
check "netdev down: phys_state Disabled" \
	test "$(port_phys_state kiwi0)" = "3: Disabled"
ip link set kva up
check "netdev up: port ACTIVE again" \
	wait_for 5 test "$(port_state kiwi0)" = "4: ACTIVE"
ip link set kvb down
check "peer down (no carrier): port DOWN, phys_state Polling" \
	wait_for 5 test "$(port_state kiwi0)/$(port_phys_state kiwi0)" = "1: DOWN/2: Polling"
ip link set kvb up
check "peer up: port ACTIVE again" \
	wait_for 5 test "$(port_state kiwi0)" = "4: ACTIVE"
check "IB events PORT_ERR, PORT_ACTIVE, PORT_ERR, PORT_ACTIVE delivered in order" \
	wait "$evpid"
sed 's/^/# /' "$evlog"
rm -f "$evlog"

# A new MAC is a new GID. (The 6.1 core updates its GID cache on our
# GID_CHANGE event but, for iWARP, does not pass the event on to consumers.)
ip link set kva address 02:00:00:00:4b:01
check "GID follows the new MAC address" \
	wait_for 5 test "$(query_field kiwi0 gid)" = "020000004b0100000000000000000000"

# A MAC address changed while the device registers (as udev gives a new
# veth one) must not leave a stale GID: rdma_cm would refuse to bind the
# netdev's addresses (-ENODEV). The change lands at a different moment of
# the registration each round.
gid_races() {
	local i mac bad=0

	for i in $(seq 10 29); do
		mac=02:00:00:00:4c:$i
		ip link add kvg type veth peer name kvh &&
		ip link set kvg up || return 1
		rdma link add kiwig type kiwi netdev kvg &
		sleep "0.0$((i % 10 * 3))"
		ip link set kvg address $mac
		wait $!
		if ! wait_for 2 test "$(query_field kiwig gid)" = "${mac//:/}00000000000000000000"; then
			echo "# round $i: GID $(query_field kiwig gid), MAC $mac"
			bad=$((bad + 1))
		fi
		ip link del kvg
		wait_for 10 ibdev_absent kiwig
	done
	return $bad
}
check "a MAC changed during rdma link add is the GID (20 rounds)" gid_races

# MTU is reported as the IB MTU enum that fits the netdev MTU.
ip link set kva mtu 9000
check "MTU 9000 reported as active_mtu 4096" \
	test "$(query_field kiwi0 active_mtu)" = 4096
ip link set kva mtu 1500
check "MTU 1500 reported as active_mtu 1024" \
	test "$(query_field kiwi0 active_mtu)" = 1024
ip link set kva mtu 600
check "MTU 600 reported as active_mtu 512" \
	test "$(query_field kiwi0 active_mtu)" = 512

# rdma link del, then the same name and netdev again.
check "rdma link del kiwi0 succeeds" rdma link del kiwi0
check "kiwi0 is gone" ibdev_absent kiwi0
check "kiwi0 can be added again after del" \
	rdma link add kiwi0 type kiwi netdev kva
check "a custom name (foo) works too" rdma link add foo type kiwi netdev kvb
check "foo gets the kiwi provider" test "$(query_field foo transport)" = iWARP

# Deleting the netdev removes its device; the netdev is released.
check "deleting a netdev removes its kiwi device and finishes" \
	timeout 30 ip link del kva
check "kiwi0 and foo are gone with the veth pair" \
	wait_for 10 eval 'ibdev_absent kiwi0 && ibdev_absent foo'

# A device that user space holds open goes away without waiting for it.
ip link add kva type veth peer name kvb
ip link set kva up
ip link set kvb up
rdma link add kiwi0 type kiwi netdev kva
holdlog=$(mktemp)
"$KIWI_UVERBS" hold kiwi0 30 >"$holdlog" 2>&1 &
holdpid=$!
wait_for 20 grep -q ready "$holdlog"
check "rdma link del with a process holding a context and PD returns" \
	timeout 30 rdma link del kiwi0
check "the process sees IBV_EVENT_DEVICE_FATAL and cleans up" wait "$holdpid"
rm -f "$holdlog"

# rmmod with devices present removes them all and leaves nothing behind.
rdma link add kiwi0 type kiwi netdev kva
rdma link add kiwi1 type kiwi netdev kvb
check "rmmod with two devices present succeeds" timeout 60 modprobe -r kiwi
check "no kiwi device is left" eval 'ibdev_absent kiwi0 && ibdev_absent kiwi1'
check "module is gone" test ! -e /sys/module/kiwi
check "the netdevs are released (veth deletes promptly)" timeout 30 ip link del kva
check "rdma link add autoloads the module" \
	eval 'ip link add kvc type veth peer name kvd &&
	      rdma link add kiwi2 type kiwi netdev kvc && ibdev_exists kiwi2'
ip link del kvc 2>/dev/null
wait_for 10 ibdev_absent kiwi2
kiwi_unload
tap_end
