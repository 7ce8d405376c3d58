#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the VM, after tools/bench/run.sh: the storage rows of the bench.
# NVMe-oF over kiwi (nvme-rdma/nvmet-rdma) against NVMe/TCP
# (nvme-tcp/nvmet-tcp), NFSv4.2 over kiwi against NFSv4.2 over TCP and
# SMB Direct over kiwi against SMB3 over TCP,
# on the same path: one veth end kva with 192.0.2.1 in the initial
# namespace, each initiator connecting to that address (nvme-rdma and
# nvmet-rdma live in the initial namespace only). Rows are appended to
# OUTDIR/raw.csv as transport kiwi, siw or tcp; report.py prints kiwi/siw
# and kiwi/TCP. siw (build/siw/siw.ko, when BENCH_TRANSPORTS names it)
# takes kiwi's place on kva for its rounds: the RDMA CM picks a device by
# its netdev, so one at a time. On the two-host path (BENCH_PAIR, VM b of
# tools/bench/pair.sh) the target (nvmet, nfsd and their device) is VM a's
# on its NIC, the initiators b's on its own, and the address a's.
#
#   tools/bench/storage.sh OUTDIR
#
# Cells (fio, libaio, O_DIRECT, fixed byte counts, never durations):
#   nvme_randread 4096 qd32    4 KiB random reads, IOPS
#   nvme_randread 4096 qd32x2  the same from 2 fio jobs, one per CPU: each
#                              CPU's own I/O queue, whose CQs nvme-rdma
#                              puts on that CPU's completion vector
#   nvme_read   131072 qd16    128 KiB sequential reads, MiB/s
#   nvme_write  131072 qd16    128 KiB sequential writes, MiB/s
#   nfs_write  1048576 seq     a large file written with dd, fsync'ed, MiB/s
#   nfs_read   1048576 seq     read back after dropping caches, MiB/s
#   smb_write  1048576 seq     the same over SMB 3.1.1: SMB Direct (ksmbd
#   smb_read   1048576 seq     and cifs of scripts/build-smbdirect.sh)
#                              against SMB3 over TCP; kiwi and TCP only
# The NVMe namespace is a null_blk device (no data kept: the bench
# measures the transport); NFS and SMB share a tmpfs.
#
# Environment: BENCH_RUNS and BENCH_QUICK as for run.sh (the rounds
# interleave kiwi and TCP), BENCH_STORAGE_MB (MiB moved per cell, default
# 256; quick: 64).
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"

SIW=$root/build/siw/siw.ko
cfg=/sys/kernel/config/nvmet
nqn=nqn.2026-11.org.kiwi:bench
exp=/run/kiwi-bench-export
mnt=/run/kiwi-bench-mnt
smbd_dir=/run/kiwi-bench-smbd

row() { # TRANSPORT TEST SIZE MODE RUN VALUE UNIT
	local status=ok
	[[ "$6" =~ ^[0-9]+(\.[0-9]+)?$ ]] || status=fail
	# Nothing moved is a failed cell, not a measurement.
	[[ "$6" =~ ^0*(\.0*)?$ ]] && status=fail
	echo "$1,$2,$3,$4,$mb,$5,$([ $status = ok ] && echo "$6"),$7,$status" >>"$raw"
	printf '# %-4s %-13s %7s %-5s run %d: %s %s\n' "$1" "$2" "$3" "$4" "$5" \
		"${6:-fail}" "$7"
}

# ---- the target: in this VM on one host, VM a's on two (run there by
# "tgt", with this file sourced for its functions).

# st_target_setup ADDR NETDEV: null_blk behind nvmet's RDMA and TCP ports
# and nfsd's TCP and RDMA listeners, on ADDR; kiwi0 on NETDEV (one host:
# the veth end kva, made here) or kiwi1 (two hosts).
st_target_setup() {
	local a=$1 nd=$2 p tr svc dev=kiwi1
	modprobe -a kiwi null_blk nvmet nvmet-rdma nvmet-tcp rpcrdma nfsd || return 1
	# null_blk's defaults: one 250 GiB device, no memory kept.
	[ -b /dev/nullb0 ] || return 1
	if [ "$nd" = kva ]; then
		kiwi_own_addr_dev kiwi0 "$a" || return 1
	else
		rdma link add $dev type kiwi netdev "$nd" || return 1
	fi
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	mkdir "$cfg/subsystems/$nqn" &&
	echo 1 >"$cfg/subsystems/$nqn/attr_allow_any_host" &&
	mkdir "$cfg/subsystems/$nqn/namespaces/1" &&
	echo /dev/nullb0 >"$cfg/subsystems/$nqn/namespaces/1/device_path" &&
	echo 1 >"$cfg/subsystems/$nqn/namespaces/1/enable" || return 1
	for p in 1 2; do
		tr=$([ $p = 1 ] && echo rdma || echo tcp)
		svc=$([ $p = 1 ] && echo 4420 || echo 4421)
		mkdir "$cfg/ports/$p" &&
		echo "$tr" >"$cfg/ports/$p/addr_trtype" &&
		echo ipv4 >"$cfg/ports/$p/addr_adrfam" &&
		echo "$a" >"$cfg/ports/$p/addr_traddr" &&
		echo $svc >"$cfg/ports/$p/addr_trsvcid" &&
		ln -s "$cfg/subsystems/$nqn" "$cfg/ports/$p/subsystems/$nqn" || return 1
	done
	# NFS: nfsd listens on TCP 2049 and RDMA 20049; NFSv4 only, so no
	# rpcbind: mountd answers the kernel's export upcalls.
	mkdir -p $exp && mount -t tmpfs -o size=1200m tmpfs $exp &&
	{ mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd; } &&
	exportfs -o rw,no_root_squash,insecure,fsid=0 "$a/24:$exp" &&
	rpc.mountd -N 3 >/dev/null 2>&1 &&
	rpc.nfsd -N 3 -V 4.2 --rdma=20049 4 >/dev/null 2>&1 &&
	grep -q "rdma 20049" /proc/fs/nfsd/portlist || return 1
	# SMB: ksmbd on TCP 445 and SMB Direct 5445, sharing a folder of it.
	rm -rf $smbd_dir && mkdir -p $exp/smb $smbd_dir &&
	smbd_load ksmbd &&
	smbd_setup $smbd_dir $exp/smb &&
	smbd_start $smbd_dir &&
	wait_for 20 eval "rdma resource show cm_id | grep LISTEN | grep -q ':5445'"
}

st_target_teardown() {
	smbd_stop
	smbd_unload
	rpc.nfsd 0 >/dev/null 2>&1
	pkill -x rpc.mountd
	exportfs -ua
	umount $exp 2>/dev/null
	rm -f "$cfg"/ports/*/subsystems/$nqn
	rmdir "$cfg"/ports/* "$cfg/subsystems/$nqn/namespaces/1" \
		"$cfg/subsystems/$nqn" 2>/dev/null
	ip link del kva 2>/dev/null
	rdma link del kiwi1 2>/dev/null
	rdma link del siw1 2>/dev/null
	wait_for 20 eval 'ibdev_absent kiwi0 && ibdev_absent kiwi1 && ibdev_absent siw1'
	grep -q "^siw " /proc/modules && rmmod siw
	modprobe -r nvmet-rdma nvmet-tcp null_blk 2>/dev/null
	return 0
}

# st_target_dev OLD NEW TYPE NETDEV ADDR: the target's RDMA device OLD
# replaced by NEW of TYPE (kiwi, siw) on NETDEV, and nvmet's RDMA port
# enabled on it again (nvmet-rdma drops its listener with a device);
# nfsd's wildcard listener finds a new device by itself.
st_target_dev() {
	rdma link del "$1" && wait_for 20 ibdev_absent "$1" || return 1
	if [ "$3" = siw ] && ! grep -q "^siw " /proc/modules; then
		insmod "$SIW" || return 1
	fi
	rdma link add "$2" type "$3" netdev "$4" || return 1
	rm -f "$cfg/ports/1/subsystems/$nqn"
	ln -s "$cfg/subsystems/$nqn" "$cfg/ports/1/subsystems/$nqn" &&
		wait_for 20 eval "rdma resource show cm_id | grep LISTEN | grep -q '$2/.*$5:4420'"
}

# When sourced by VM a's agent, only the functions above are wanted.
[ "${1:-}" = --lib ] && return 0

out=${1:?usage: storage.sh OUTDIR}
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	runs=${BENCH_RUNS:-1}
	mb=${BENCH_STORAGE_MB:-64}
else
	runs=${BENCH_RUNS:-3}
	mb=${BENCH_STORAGE_MB:-256}
fi
transports=kiwi
[[ " ${BENCH_TRANSPORTS:-siw} " == *" siw "* ]] && [ -f "$SIW" ] && transports+=" siw"
transports+=" tcp"
raw=$out/raw.csv
logs=$out/logs
mkdir -p "$logs"
[ -s "$raw" ] || echo "transport,test,size,mode,iters,run,value,unit,status" >"$raw"
[ -s "$out/cq_cpus.csv" ] ||
	echo "transport,test,size,mode,run,cpu,cqes,handlers,remote" >"$out/cq_cpus.csv"

addr=192.0.2.1
tdev=kva	# the target's netdev
idev=kva	# the initiators'
if [ -n "${BENCH_PAIR:-}" ]; then
	source "$root/tools/bench/lib-bench.sh"
	addr=$PAIR_A
	tdev=$(cat "$PAIR_DIR/bench-adev")
	idev=$PAIR_DEV
fi

# tgt CMD: the command line CMD where the target is.
tgt() {
	if [ -n "${BENCH_PAIR:-}" ]; then
		remote "source $root/tools/bench/storage.sh --lib; $*"
	else
		eval "$*"
	fi
}

setup() {
	modprobe -a kiwi nvme-rdma nvme-tcp rpcrdma || return 1
	tgt st_target_setup "$addr" "$tdev" || return 1
	# The client: in this VM on one host, after the server's ksmbd.
	smbd_load cifs || return 1
	if [ -n "${BENCH_PAIR:-}" ]; then
		rdma link add kiwi0 type kiwi netdev "$idev" || return 1
	fi
	mkdir -p $mnt
}

teardown() {
	umount $mnt 2>/dev/null
	nvme disconnect-all >/dev/null 2>&1
	tgt st_target_teardown
	rdma link del "$rdev" 2>/dev/null
	wait_for 20 ibdev_absent "$rdev"
	grep -q "^siw " /proc/modules && rmmod siw
	smbd_unload
	modprobe -r nvme-rdma nvme-tcp 2>/dev/null
}

nvme_disk() {
	local d

	for d in /sys/block/nvme*n1; do
		# Not a multipath path's hidden disk (nvme0c0n1): it has no node.
		[ -b "/dev/${d##*/}" ] &&
			[ "$(cat "$d/device/subsysnqn" 2>/dev/null)" = "$nqn" ] &&
			[ "$(cat "$d/size" 2>/dev/null)" -gt 0 ] 2>/dev/null &&
			{ echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}

# fio_cell TRANSPORT RUN TEST SIZE MODE FIO-ARGS...: one fio run on the
# disk; for kiwi, each CPU's completion work in it goes to cq_cpus.csv.
fio_cell() {
	local tr=$1 run=$2 test=$3 size=$4 mode=$5 log v cpus
	shift 5
	cpus=$(kiwi_cq_cpus)
	[ "$tr" = kiwi ] || cpus=''
	log=$logs/$tr-$test-$size-$mode-$run.json
	timeout 300 fio --name="$test" --filename="$disk" --ioengine=libaio \
		--direct=1 --bs="$size" --io_size=${mb}M --size=4G \
		--output-format=json --output="$log" "$@" >/dev/null 2>&1 ||
		{ row "$tr" "$test" "$size" "$mode" "$run" "" \
			"$([ "$test" = nvme_randread ] && echo IOPS || echo MiB/s)"; return; }
	if [ "$test" = nvme_randread ]; then
		v=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; print("%.0f" % j["read"]["iops"])' "$log" 2>/dev/null)
		row "$tr" "$test" "$size" "$mode" "$run" "$v" IOPS
	else
		v=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; d=j["read"] if j["read"]["io_bytes"] else j["write"]; print("%.1f" % (d["bw_bytes"] / 1048576))' "$log" 2>/dev/null)
		row "$tr" "$test" "$size" "$mode" "$run" "$v" MiB/s
	fi
	[ -n "$cpus" ] &&
		kiwi_cq_cpus_delta "$cpus" "$tr,$test,$size,$mode,$run" >>"$out/cq_cpus.csv"
}

# use_dev kiwi|siw: that RDMA device in use, at both ends (one host: on
# kva, which both ends share).
rdev=kiwi0
trdev=kiwi1
[ -n "${BENCH_PAIR:-}" ] || trdev=kiwi0
use_dev() {
	local want=${1}0 twant=${1}1

	[ "$rdev" = "$want" ] && return 0
	if [ -z "${BENCH_PAIR:-}" ]; then
		st_target_dev "$rdev" "$want" "$1" kva "$addr" || return 1
		rdev=$want
		return 0
	fi
	tgt st_target_dev "$trdev" "$twant" "$1" "$tdev" "$addr" || return 1
	trdev=$twant
	rdma link del "$rdev" && wait_for 20 ibdev_absent "$rdev" || return 1
	if [ "$1" = siw ] && ! grep -q "^siw " /proc/modules; then
		insmod "$SIW" || return 1
	fi
	rdma link add "$want" type "$1" netdev "$idev" || return 1
	rdev=$want
}

nvme_cells() {
	local tr=$1 run=$2 t svc

	t=$([ "$tr" = tcp ] && echo tcp || echo rdma)
	svc=$([ "$tr" = tcp ] && echo 4421 || echo 4420)
	if ! nvme connect -t "$t" -a $addr -s $svc -n $nqn -i "$(nproc)" \
		>"$logs/$tr-nvme-connect-$run" 2>&1; then
		# Both kernels' last words, for the log.
		{ dmesg | tail -20; tgt "dmesg | tail -20"; } >>"$logs/$tr-nvme-connect-$run" 2>&1
	fi
	wait_for 30 nvme_disk
	disk=$(nvme_disk) || disk=/dev/null-missing
	fio_cell "$tr" "$run" nvme_randread 4096 qd32 --rw=randread --iodepth=32
	# Two jobs, one per CPU: not with one CPU.
	[ "$(nproc)" -lt 2 ] ||
		fio_cell "$tr" "$run" nvme_randread 4096 qd32x2 --rw=randread --iodepth=32 \
			--numjobs=2 --group_reporting --cpus_allowed=0-1 --cpus_allowed_policy=split
	fio_cell "$tr" "$run" nvme_read 131072 qd16 --rw=read --iodepth=16
	fio_cell "$tr" "$run" nvme_write 131072 qd16 --rw=write --iodepth=16
	nvme disconnect -n $nqn >/dev/null 2>&1
}

# dd_mibs LOG: MiB/s from dd's summary line (bytes and seconds).
dd_mibs() {
	sed -n 's/^\([0-9]*\) bytes .* copied, \([0-9.]*\) s.*/\1 \2/p' "$1" |
		awk '$2 > 0 { printf "%.1f\n", $1 / $2 / 1048576 }'
}

# fs_cells TRANSPORT RUN NAME MOUNT...: rows NAME_write, a file of $mb MiB
# written with dd and fsync'ed, and NAME_read, the file read back after
# dropping the caches, on $mnt as the command MOUNT... mounts it.
fs_cells() {
	local tr=$1 run=$2 name=$3 log=$logs/$1-$3-$2

	shift 3
	if "$@"; then
		timeout 300 dd if=/dev/zero of=$mnt/big bs=1M count=$mb conv=fsync \
			>"$log.write" 2>&1
		row "$tr" "${name}_write" 1048576 seq "$run" "$(dd_mibs "$log.write")" MiB/s
		umount $mnt
		echo 3 >/proc/sys/vm/drop_caches
		"$@"
		timeout 300 dd if=$mnt/big of=/dev/null bs=1M >"$log.read" 2>&1
		row "$tr" "${name}_read" 1048576 seq "$run" "$(dd_mibs "$log.read")" MiB/s
		rm -f $mnt/big
		umount $mnt
	else
		row "$tr" "${name}_write" 1048576 seq "$run" "" MiB/s
		row "$tr" "${name}_read" 1048576 seq "$run" "" MiB/s
	fi
}

nfs_mount() { timeout 60 mount -t nfs -o "$1" "$addr:/" $mnt; }

# NFSv4.2 over RDMA or (tcp) over TCP.
nfs_cells() {
	local opts=vers=4.2,proto=tcp

	[ "$1" = tcp ] || opts=vers=4.2,proto=rdma,port=20049
	fs_cells "$1" "$2" nfs nfs_mount "$opts"
}

# SMB 3.1.1 on SMB Direct or (tcp) on TCP.
smb_cells() {
	local opts=vers=3.1.1

	[ "$1" = tcp ] || opts+=,rdma
	fs_cells "$1" "$2" smb smbd_mount $addr $mnt "$opts"
}

if ! setup >"$logs/setup-storage" 2>&1; then
	echo "bench: cannot set up storage (see $logs/setup-storage)" >&2
	for run in $(seq "$runs"); do
		for tr in $transports; do
			row "$tr" nvme_randread 4096 qd32 "$run" "" IOPS
		done
	done
	teardown >/dev/null 2>&1
	exit 1
fi
start=$SECONDS
for run in $(seq "$runs"); do
	for tr in $transports; do
		if [ "$tr" != tcp ] && ! use_dev "$tr" >>"$logs/setup-storage" 2>&1; then
			echo "bench: cannot put $tr on kva (see $logs/setup-storage)" >&2
			continue
		fi
		nvme_cells "$tr" "$run"
		nfs_cells "$tr" "$run"
		[ "$tr" = siw ] || smb_cells "$tr" "$run"
	done
done
teardown >"$logs/teardown-storage" 2>&1
echo "# bench: storage, $runs run(s) of each cell in $((SECONDS - start)) s"
