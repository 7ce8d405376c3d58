#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot two VMs at once, "a" and "b" (each as scripts/vm-run.sh boots one),
# joined by a network of their own, run CMD in both, and carry out what
# the guests ask of the host: kill, freeze, thaw or boot again a VM.
#
#   scripts/vm-pair.sh [--timeout SECONDS] [--cpus N] [--memory SIZE]
#                      [--net dgram|tap] -- CMD...
#
# Each VM gets one vCPU and 1 GiB unless told: two emulated VMs share the
# host's cores, and one vCPU each boots and runs faster on two cores than
# two each.
#
# The network: each VM gets a second virtio-net NIC, MAC 52:54:00:6b:77:01
# in a and 52:54:00:6b:77:02 in b, whose frames QEMU sends to the other
# VM's Unix datagram socket on the host (-netdev dgram). Nothing else is on
# it, and it outlives either VM: frames sent to a killed VM are dropped,
# those sent to a frozen one wait in the host until it thaws, and a VM
# booted again is on the same network. The guest gives the NIC its address
# (tools/testing/selftests/drivers/infiniband/kiwi/lib_pair.sh does).
# With --net tap the NICs are instead host tap devices, kiwitapa and
# kiwitapb, on a host bridge, kiwibr0, made here and removed at the end:
# QEMU and the host's bridge pass the guests' segmentation and checksum
# offloads on (64 KiB TSO segments, as between two hosts with real NICs),
# which the datagram socket cannot, and which is a tenfold in throughput;
# the benchmark's two-host path uses it. A killed VM's tap goes down with
# it, so the kill and freeze tests keep the default.
#
# CMD runs in each guest with, in its environment:
#   KIWI_PAIR_ROLE   a or b
#   KIWI_PAIR_BOOT   which boot of that VM this is: 1, 2, ...
#   KIWI_PAIR_MAC    its NIC's MAC address
#   KIWI_PAIR_DIR    build/pair in this tree, emptied at the start: both
#                    guests and this script see it, for rendezvous files,
#                    outputs, and requests.
# A request is a file $KIWI_PAIR_DIR/req/NAME.req holding "ACTION VM":
#   kill VM    SIGKILL its QEMU, and wait until it is gone
#   stop VM    SIGSTOP its QEMU (the VM freezes: no CPU, no timers)
#   cont VM    SIGCONT it
#   boot VM    boot it again (it must be gone), CMD with the next BOOT
# Once done, $KIWI_PAIR_DIR/req/NAME.done says "ok" or "failed: WHY".
#
# Each boot's output goes to $KIWI_PAIR_DIR/ROLE.BOOT.log and is printed
# when both VMs are gone. Exit status: 124 when the run outlived the
# timeout (both VMs are then killed), 1 when a boot's command failed (a
# VM killed on request excepted), else 0.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
timeout=900
cpus=1
memory=1G
net=dgram
while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) timeout=$2; shift 2 ;;
	--cpus) cpus=$2; shift 2 ;;
	--memory) memory=$2; shift 2 ;;
	--net) net=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] && { [ "$net" = dgram ] || [ "$net" = tap ]; } ||
	{ echo "usage: $0 [--timeout S] [--cpus N] [--memory SIZE] [--net dgram|tap] -- CMD..." >&2; exit 2; }

dir=$root/build/pair
rm -rf "$dir"
mkdir -p "$dir/req"
# QEMU's sockets and PID files stay on the host (a Unix socket path is
# short, and no guest needs them).
sockdir=$(mktemp -d /tmp/kiwi-pair.XXXXXX)

# tap_net_del: the bridge and taps of --net tap gone.
tap_net_del() {
	ip link del kiwitapa 2>/dev/null
	ip link del kiwitapb 2>/dev/null
	ip link del kiwibr0 2>/dev/null
}
if [ "$net" = tap ]; then
	tap_net_del
	ip link add kiwibr0 type bridge && ip link set kiwibr0 up &&
	for r in a b; do
		ip tuntap add dev kiwitap$r mode tap &&
		ip link set kiwitap$r master kiwibr0 &&
		ip link set kiwitap$r up || break
	done ||
		{ echo "vm-pair: cannot make the host bridge kiwibr0 and its taps" >&2; tap_net_del; exit 1; }
fi

declare -A mac=([a]=52:54:00:6b:77:01 [b]=52:54:00:6b:77:02)
declare -A other=([a]=b [b]=a)
declare -A boots=([a]=0 [b]=0)
declare -A job=()	# the vm-run.sh job of a running VM
declare -A killed=()	# the VM was killed on request
status=0

# vm_start ROLE: boot ROLE in the background.
vm_start() {
	local r=$1 n nd
	n=$((boots[$r] + 1))
	boots[$r]=$n
	killed[$r]=
	rm -f "$sockdir/$r.sock" "$sockdir/$r.pid"
	if [ "$net" = tap ]; then
		nd="tap,id=kpair,ifname=kiwitap$r,script=no,downscript=no"
	else
		nd="dgram,id=kpair,local.type=unix,local.path=$sockdir/$r.sock,remote.type=unix,remote.path=$sockdir/${other[$r]}.sock"
	fi
	"$root/scripts/vm-run.sh" --timeout "$timeout" --cpus "$cpus" \
		--memory "$memory" --qemu-opts "-netdev $nd -device virtio-net-pci,netdev=kpair,mac=${mac[$r]} -pidfile $sockdir/$r.pid" \
		-- env KIWI_PAIR_ROLE="$r" KIWI_PAIR_BOOT="$n" \
		KIWI_PAIR_MAC="${mac[$r]}" KIWI_PAIR_DIR="$dir" "${cmd[@]}" \
		>"$dir/$r.$n.log" 2>&1 </dev/null &
	job[$r]=$!
	echo "# vm-pair: $r.$n booting"
}

# vm_reap ROLE: the VM's job ended; collect its status.
vm_reap() {
	local r=$1 rc
	wait "${job[$r]}"
	rc=$?
	unset "job[$r]"
	if [ -n "${killed[$r]}" ]; then
		echo "# vm-pair: $r.${boots[$r]} killed on request"
	elif [ "$rc" -ne 0 ]; then
		echo "# vm-pair: $r.${boots[$r]} exited with status $rc"
		[ "$rc" = 124 ] && status=124
		[ "$status" = 0 ] && status=1
	fi
}

# qemu_pid ROLE: the PID of ROLE's QEMU, once it wrote its PID file.
qemu_pid() {
	local _
	for _ in $(seq 100); do
		[ -s "$sockdir/$1.pid" ] && { cat "$sockdir/$1.pid"; return 0; }
		sleep 0.1
	done
	return 1
}

# act ACTION ROLE: carry out a request; the result line in $res.
act() {
	local a=$1 r=$2 pid
	case "$r" in a|b) ;; *) res="failed: no VM '$r'"; return ;; esac
	if [ "$a" = boot ]; then
		[ -z "${job[$r]:-}" ] || { res="failed: $r is running"; return; }
		vm_start "$r"
		res=ok
		return
	fi
	[ -n "${job[$r]:-}" ] && pid=$(qemu_pid "$r") ||
		{ res="failed: $r is not running"; return; }
	case "$a" in
	kill)
		killed[$r]=1
		kill -KILL "$pid"
		vm_reap "$r"
		;;
	stop) kill -STOP "$pid" ;;
	cont) kill -CONT "$pid" ;;
	*) res="failed: no action '$a'"; return ;;
	esac
	res=ok
}

cmd=("$@")
vm_start a
vm_start b
deadline=$((SECONDS + timeout))
while [ ${#job[@]} -gt 0 ]; do
	for req in "$dir"/req/*.req; do
		[ -e "$req" ] && [ ! -e "${req%.req}.done" ] || continue
		read -r action vm <"$req"
		act "$action" "$vm"
		echo "# vm-pair: $(date +%T.%N | cut -c1-12) $action $vm: $res"
		echo "$res" >"${req%.req}.done.tmp"
		mv "${req%.req}.done.tmp" "${req%.req}.done"
	done
	for r in "${!job[@]}"; do
		kill -0 "${job[$r]}" 2>/dev/null || vm_reap "$r"
	done
	if [ $SECONDS -gt $deadline ]; then
		echo "# vm-pair: the run outlived ${timeout}s; killing both VMs"
		for r in "${!job[@]}"; do
			pid=$(qemu_pid "$r") && kill -CONT "$pid" && kill -KILL "$pid"
			killed[$r]=1
			vm_reap "$r"
		done
		status=124
	fi
	sleep 0.1
done

for r in a b; do
	for n in $(seq "${boots[$r]}"); do
		echo "# ==== $r.$n"
		cat "$dir/$r.$n.log"
	done
done
rm -rf "$sockdir"
[ "$net" = tap ] && tap_net_del
exit "$status"
