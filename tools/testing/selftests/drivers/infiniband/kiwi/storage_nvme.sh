#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NVMe over Fabrics over kiwi: the kernel's nvmet-rdma target and nvme-rdma
# host, both in the initial network namespace (where those modules create
# their rdma_cm IDs), the host connecting to the kiwi device's own address
# as blktests runs nvme-rdma over soft RDMA.
#
# The target exports a RAM disk (brd, through nvmet's block backend) on an
# RDMA port that is enabled the moment the device exists (a GID that lags the MAC
# address would refuse the bind with -ENODEV). The host discovers it,
# connects with one I/O queue per CPU, writes and reads back a per-chunk
# pattern (also read straight from the target's file), runs fio with
# crc32c verification (4 KiB random, 128 KiB sequential) and disconnects.
#
# Then faults, each while a writer logs every chunk whose O_DIRECT|O_DSYNC
# write completed; afterwards every logged chunk must read back intact:
#   - the netdev down for a few seconds: the port goes DOWN, the queues
#     (TCP over loopback to the own address) live on;
#   - the target's port removed and restored: the host reconnects by itself;
#   - rdma link del, then add: both ULPs let go of the device; the target's
#     port is enabled again (by hand where nvmet-rdma does not), the host
#     connects anew;
#   - the netdev deleted, then made again: the same;
#   - rmmod kiwi with both ULPs on it: the module goes, the ULPs let go.
# At the end nothing of kiwi is left and the module unloads.
#
# KIWI_STORAGE_LONG=1 writes and verifies more (a longer run, by hand).
# KIWI_STORAGE_PARAMS are kiwi's module parameters (storage_nvme_zcopy.sh:
# zero-copy transmit), KIWI_STORAGE_FAULTS=0 leaves the faults out.
source "$(dirname "$0")/lib.sh"
tap_begin "NVMe-oF (nvmet-rdma, nvme-rdma) over kiwi"

cfg=/sys/kernel/config/nvmet
nqn=nqn.2026-11.org.kiwi:storage-test
addr=192.0.2.1
img=/dev/ram0
if [ -n "${KIWI_STORAGE_LONG:-}" ]; then
	img_mb=1024 fio_mb=256 pat_chunks=2048
else
	img_mb=192 fio_mb=16 pat_chunks=64
fi

nv_port_link() { ln -s "$cfg/subsystems/$nqn" "$cfg/ports/1/subsystems/$nqn"; }
nv_port_unlink() { rm -f "$cfg/ports/1/subsystems/$nqn"; }

nv_target() {
	local ns=$cfg/subsystems/$nqn/namespaces/1 port=$cfg/ports/1

	modprobe brd rd_nr=1 rd_size=$((img_mb * 1024)) &&
	[ -b "$img" ] &&
	mkdir "$cfg/subsystems/$nqn" &&
	echo 1 >"$cfg/subsystems/$nqn/attr_allow_any_host" &&
	mkdir "$ns" &&
	echo "$img" >"$ns/device_path" &&
	echo 1 >"$ns/enable" &&
	mkdir "$port" &&
	echo rdma >"$port/addr_trtype" &&
	echo ipv4 >"$port/addr_adrfam" &&
	echo $addr >"$port/addr_traddr" &&
	echo 4420 >"$port/addr_trsvcid"
}

nv_target_del() {
	nv_port_unlink
	rmdir "$cfg/ports/1" "$cfg/subsystems/$nqn/namespaces/1" \
		"$cfg/subsystems/$nqn" 2>/dev/null
}

# The host controller of our subsystem, and its namespace's block device.
nv_ctrl() { sysfs_find subsysnqn "$nqn" /sys/class/nvme/nvme*; }

nv_disk() {
	local d

	for d in /sys/block/nvme*n1; do
		# The disk appears before the namespace's size is read.
		[ "$(cat "$d/device/subsysnqn" 2>/dev/null)" = "$nqn" ] &&
			[ -b "/dev/$(basename "$d")" ] &&
			[ "$(cat "$d/size")" -gt 0 ] &&
			{ echo "/dev/$(basename "$d")"; return 0; }
	done
	return 1
}

# The target's listener: a kiwi cm_id on the port's address.
nv_listening() {
	rdma resource show cm_id | grep kiwi0 | grep LISTEN | grep -q "$addr:4420"
}

nv_live() { [ "$(cat "/sys/class/nvme/$(nv_ctrl)/state" 2>/dev/null)" = live ]; }

nv_connect() {
	nvme connect -t rdma -a $addr -s 4420 -n $nqn -i "$(nproc)" \
		--ctrl-loss-tmo=60 --reconnect-delay=1 >"$out/connect" 2>&1 &&
		wait_for 30 nv_disk
}

nv_disconnect() {
	nvme disconnect -n $nqn >"$out/disconnect" 2>&1 &&
		grep -q "disconnected 1 controller" "$out/disconnect"
}

nv_cleanup() {
	touch "$out/stop"
	wait
	nvme disconnect -n $nqn >/dev/null 2>&1
	nv_target_del
	modprobe -r nvme-rdma nvmet-rdma brd 2>/dev/null
	kiwi_own_addr_dev_del kiwi0
}
trap 'nv_cleanup; rm -rf "$out"' EXIT

# ---- the device, the target, the host

kiwi_unload
read -ra kparams <<<"${KIWI_STORAGE_PARAMS:-}"
modprobe kiwi "${kparams[@]}" || not_ok "modprobe kiwi ${kparams[*]}"
# One path, so no native multipath: its head's deferred partition scan
# makes lockdep report nvme-core (nvme_partition_scan_work against
# blkdev_put's open_mutex) at disconnect on Debian's 6.1, whatever the
# transport; the debug kernel run would fail on it.
modprobe -r nvme-rdma nvme-fabrics nvme-core 2>/dev/null
modprobe nvme-core multipath=N
check "modprobe nvmet, nvmet-rdma, nvme-rdma" modprobe -a nvmet nvmet-rdma nvme-rdma
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
check "kiwi0 on a new veth with $addr" kiwi_own_addr_dev kiwi0 $addr
check "nvmet subsystem $nqn: a ${img_mb} MiB RAM disk namespace, an RDMA port on $addr:4420" \
	nv_target
# Right after the device exists: the port binds to the device's address.
check "the RDMA port binds at once after the device was created" nv_port_link
check "the port is enabled on kiwi0 (target's listener is a kiwi cm_id)" \
	wait_for 10 nv_listening

nv_discover() {
	nvme discover -t rdma -a $addr -s 4420 >"$out/discover" 2>&1 &&
		grep -q "subnqn: *$nqn" "$out/discover" &&
		grep -q "trtype: *rdma" "$out/discover" &&
		grep -q "traddr: *$addr" "$out/discover"
}
# TCP's count of resets sent (OutRsts), in this namespace; builtins only.
tcp_out_rsts() {
	local line i names=() vals=()

	while read -r line; do
		[[ $line == Tcp:* ]] || continue
		if [ ${#names[@]} = 0 ]; then
			read -ra names <<<"$line"
		else
			read -ra vals <<<"$line"
		fi
	done </proc/net/snmp
	for i in "${!names[@]}"; do
		[ "${names[i]}" = OutRsts ] && echo "${vals[i]}"
	done
}

declare -A errc0
errc_snap errc0 kiwi0
rsts0=$(tcp_out_rsts)
check "nvme discover over kiwi lists $nqn on rdma $addr" nv_discover
sed 's/^/# /' "$out/discover" | grep -E "trtype|subnqn|traddr" | head -6

check "nvme connect -t rdma -i $(nproc): the namespace appears" nv_connect
ctrl=$(nv_ctrl)
disk=$(nv_disk)
echo "# controller $ctrl, namespace $disk"
check "$ctrl uses transport rdma" grep -qx rdma "/sys/class/nvme/$ctrl/transport"
# queue_count counts the admin queue too.
qc=$(cat "/sys/class/nvme/$ctrl/queue_count" 2>/dev/null)
check "$ctrl has one I/O queue per CPU ($((qc - 1)) for $(nproc))" \
	test "$((qc - 1))" -eq "$(nproc)"
# Each queue pair is a QP at each end: admin + I/O queues, twice.
rdma resource show qp >"$out/qp"
rdma resource show cq >"$out/cq"
nqp=$(grep -c "kiwi0/" "$out/qp")
check "kiwi0 carries the queues: $nqp QPs, want $((2 * qc))" test "$nqp" -eq $((2 * qc))
# nvme-rdma takes its I/O queues' CQs from the core's CQ pool (softirq
# polled), which has one CQ per completion vector: each must be in use.
ncq=$(grep kiwi0 "$out/cq" | grep "poll-ctx SOFTIRQ" | grep -vc "users 0 ")
check "the host's queues use a pool CQ on each of the $(nproc) completion vectors ($ncq)" \
	test "$ncq" -eq "$(nproc)"
[ "$nqp" -eq $((2 * qc)) ] && [ "$ncq" -eq "$(nproc)" ] || sed 's/^/# /' "$out/qp" "$out/cq"

# ---- verified data

storage_verified "$disk" "$img" "the target's RAM disk"
storage_zcopy_check kiwi0
check "nvme disconnect: 1 controller" nv_disconnect
check "the namespace is gone" wait_for 10 eval '! nv_disk'

# Discovery, connect, data and disconnect are orderly at both ends: every
# connection ends with FINs, no reset (TCP's OutRsts), no error counter of
# kiwi0 moves but for the receives that ib_drain_qp() flushes, and
# nvmet-rdma hears of no QP event. (kiwi used to reset the host's
# connection when nvme-rdma drained its QP after rdma_disconnect(); a
# target that read the reset before the FIN failed its QP with "QP fatal
# error".)
graceful_clean() {
	local -A errc1 want
	local rsts

	nap 1
	rsts=$(($(tcp_out_rsts) - rsts0))
	errc_snap errc1 kiwi0
	errc_want want "cqe_flush_err=$((errc1[cqe_flush_err] - errc0[cqe_flush_err]))"
	errc_diff errc0 errc1 want
	echo "# TCP resets sent: $rsts"
	[ -z "$errc_bad" ] || echo "# counters moved:$errc_bad"
	dmesg | grep "received IB QP event" | head -3 | sed 's/^/# dmesg: /'
	[ "$rsts" = 0 ] && [ -z "$errc_bad" ] &&
		! dmesg | grep -q "received IB QP event"
}
check "an orderly disconnect: no reset, no QP event at the target, no error counter moved" \
	graceful_clean

# ---- faults under a verified writer

if [ "${KIWI_STORAGE_FAULTS:-1}" = 1 ]; then

# The writer (lib.sh) writes the chunks after the pattern to the end of
# the namespace, over and over; writer_end reads them back through the
# namespace (the controller may be a new one).

# A fault the host recovers from by itself: FAULT, then HEAL, with FELT
# true while the fault is on (it was felt).
self_healing() {
	local seed=$1 name=$2 fault=$3 felt=$4 heal=$5 ctrl

	nv_connect || { not_ok "$name: connect"; return; }
	ctrl=$(nv_ctrl)
	writer_running "$name" "$seed" "$(nv_disk)" "$pat_chunks" $((img_mb * 16))
	fault_healed "$name" "$fault" "$felt" "$heal"
	check "$name: $ctrl is live again by itself" wait_for 60 nv_live
	check "$name: the same controller ($ctrl), no new one" test "$(nv_ctrl)" = "$ctrl"
	writer_recovered "$name" "$seed" "$(nv_disk)"
	dmesg | grep -E "nvme nvme[0-9]+: .*(econnect|rror|timeout)" |
		tail -3 | sed "s/^/# $name: dmesg: /"
	check "$name: nvme disconnect" nv_disconnect
}

# Over the device's own address the connection runs over loopback: a
# netdev that is down for a few seconds takes the port DOWN (and rdma_cm
# could not bind a new connection) but the queues' TCP streams live on, as
# on an RNIC, whose connections outlive a short link outage.
self_healing 21 "netdev down 4 s" "ip link set kva down" \
	'[ "$(port_state kiwi0)" = "1: DOWN" ]' "ip link set kva up"
# The target drops every queue of the port: the host reconnects.
self_healing 22 "target port removed 4 s" nv_port_unlink '! nv_live' nv_port_link

# The target's listener again after the device came back. nvmet-rdma in
# 6.1 destroys its listener on DEVICE_REMOVAL and repairs a port only after
# an address change, so when it does not come back by itself in a few
# seconds, the port is enabled again by hand (its subsystem unlinked and
# linked), as an administrator must.
nv_relisten() {
	if wait_for 10 nv_listening; then
		echo "# $1: nvmet-rdma listens again by itself"
	else
		echo "# $1: nvmet-rdma does not listen again by itself: port enabled again by hand"
		nv_port_unlink
		nv_port_link && wait_for 10 nv_listening
	fi
}

# A fault that takes the device away: FAULT, then HEAL; the host controller
# is deleted with the device (nvme-rdma's remove_one), and a new connect
# sees every chunk whose write completed.
device_gone() {
	local seed=$1 name=$2 fault=$3 heal=$4

	nv_connect || { not_ok "$name: connect"; return; }
	writer_running "$name" "$seed" "$(nv_disk)" "$pat_chunks" $((img_mb * 16))
	device_fault "$name" "$fault"
	check "$name: the host deleted its controller" wait_for 60 eval '! nv_ctrl'
	writer_stop "$seed"
	check "$name: the device is back" eval "$heal"
	check "$name: the target's port listens on kiwi0 again" nv_relisten "$name"
	check "$name: the host connects anew" nv_connect
	check "$name: every chunk the writer saw completed reads back intact ($(logged "$seed") chunks)" \
		blkpat verify "$(nv_disk)" --seed "$seed" --log "$out/w$seed.log" --direct
	check "$name: nvme disconnect" nv_disconnect
}

device_gone 31 "rdma link del" "rdma link del kiwi0" "rdma link add kiwi0 type kiwi netdev kva"
device_gone 32 "netdev deleted" "ip link del kva" "kiwi_own_addr_dev kiwi0 $addr"
device_gone 33 "rmmod kiwi" "modprobe -r kiwi" \
	"modprobe kiwi ${kparams[*]} && rdma link add kiwi0 type kiwi netdev kva"
fi

# ---- the end: nothing left, and kiwi unloads

nv_target_del
check "the target's configuration is gone" test ! -e "$cfg/subsystems/$nqn"
check "no PD, MR, CQ in use, QP or cm_id left on kiwi0" eval '! storage_leftovers kiwi0'
check "nvme-rdma, nvmet-rdma and the RAM disk unload" modprobe -r nvme-rdma nvmet-rdma brd
kiwi_own_addr_dev_del kiwi0
check "kiwi unloads" modprobe -r kiwi
tap_end
