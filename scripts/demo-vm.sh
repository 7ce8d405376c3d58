#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the VM (scripts/demo.sh boots it): two hosts, as network
# namespaces joined by a veth pair, each with a kiwi device on its end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

show() {
	echo
	echo "\$ $*"
	"$@"
}

"$root/scripts/vm-install.sh"
show modprobe kiwi
ip netns add hostA
ip netns add hostB
ip link add ethA netns hostA type veth peer name ethB netns hostB
ip -n hostA addr add 192.0.2.1/24 dev ethA
ip -n hostB addr add 192.0.2.2/24 dev ethB
ip -n hostA link set ethA up
ip -n hostB link set ethB up
show ip netns exec hostA rdma link add kiwi0 type kiwi netdev ethA
show ip netns exec hostB rdma link add kiwi1 type kiwi netdev ethB
show ip netns exec hostA rdma link show
show ip netns exec hostB rdma link show
show ip netns exec hostA ping -c 2 -W 5 192.0.2.2
show ibv_devices
show ibv_devinfo -d kiwi0
show ibv_devinfo -d kiwi1
echo
echo "kiwi: two software iWARP devices are up, one per host."
