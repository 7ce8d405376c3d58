#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the VM (scripts/demo.sh boots it): two hosts, as network
# namespaces joined by a veth pair, each with a kiwi device on its end,
# and a live RDMA transfer between them.
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

# A live transfer: rping verifies its data (Send, RDMA Read and Write),
# ib_write_bw measures RDMA Write bandwidth, both over rdma_cm.
listening() {
	for _ in $(seq 100); do
		ip netns exec hostB ss -Hltn | grep -q ":$1 " && return 0
		sleep 0.2
	done
	return 1
}
ip netns exec hostB rping -s -a 192.0.2.2 -V -C 10 -S 4000 &
listening 7174
show ip netns exec hostA rping -c -a 192.0.2.2 -V -C 10 -S 4000
wait
echo "rping: 10 round trips of 4000 bytes, every buffer verified"
ip netns exec hostB ib_write_bw -d kiwi1 -R -F -n 500 -s 65536 >/dev/null &
listening 18515
show ip netns exec hostA ib_write_bw -d kiwi0 -R -F -n 500 -s 65536 192.0.2.2
wait
echo
echo "kiwi: two software iWARP devices, one per host, moved verified data."
