#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NFS over RDMA over kiwi: the kernel's nfsd with its RDMA listener
# (svcrdma, port 20049) and the NFS client (xprtrdma), NFSv3 and NFSv4.2.
#
# The server lives in the initial network namespace with kiwi0 on kva
# (192.0.2.1). Each version is mounted twice: by a client in the same
# namespace, connecting to the device's own address, and by a client in
# namespace kiwiB with kiwi1 on the veth peer kvb (192.0.2.2); that mount
# is made with only the network namespace entered, so xprtrdma's rdma_cm ID
# lives in kiwiB while the mount is seen from here. On each mount: small
# files, a file larger than the memory its writer may use (a memory cgroup
# that forces write-back while it is written) read back after the caches
# are dropped, O_DIRECT chunks, directory operations; every byte compared
# on the client and in the server's export, then unmount.
#
# Then faults, each while a writer logs every chunk whose O_DIRECT|O_DSYNC
# write completed (a stable write: the server has it); the mount is hard,
# so NFS retransmits until the server is back, and afterwards every logged
# chunk must read back intact. On the NFSv4.2 mount of kiwiB:
#   - kva down for a few seconds: the link is cut, the connection lives on;
#   - nfsd stopped (its listeners and transports go) and started again:
#     the client reconnects and reclaims its state in the grace period;
#   - rdma link del of the server's kiwi0, then add: svcrdma lets go of
#     the device, its wildcard listener comes back on the new one.
# Then, with kiwi0 alone, on an NFSv4.2 mount to its own address:
#   - the netdev deleted, then made again;
#   - rmmod kiwi with both ULPs on it.
# The client recovers from each by itself; at the end nothing of kiwi is
# left and the module unloads.
#
# KIWI_STORAGE_LONG=1 moves more data (a longer run, by hand).
source "$(dirname "$0")/lib.sh"
tap_begin "NFS over RDMA (svcrdma, xprtrdma) over kiwi"

exp=$out/export
mnt=$out/mnt
srv=192.0.2.1
cli=192.0.2.2
cg=/sys/fs/cgroup/kiwi-nfs
if [ -n "${KIWI_STORAGE_LONG:-}" ]; then
	big_mb=768 small_n=400 direct_chunks=256
else
	big_mb=96 small_n=60 direct_chunks=32
fi

# kva here with kiwi0, kvb in kiwiB with kiwi1.
nfs_devs() {
	ip netns add kiwiB 2>/dev/null
	ip link add kva type veth peer name kvb netns kiwiB &&
	ip addr add $srv/24 dev kva &&
	ip -n kiwiB addr add $cli/24 dev kvb &&
	ip link set kva up &&
	ip -n kiwiB link set kvb up &&
	ip -n kiwiB link set lo up &&
	rdma link add kiwi0 type kiwi netdev kva &&
	ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvb
}

nfs_devs_gone() { ibdev_absent kiwi0 && ibdev_absent kiwi1; }

# The server: rpcbind and mountd (NFSv3 needs both), nfsd on TCP 2049 and
# RDMA 20049. The lease and grace times are the shortest nfsd allows, so a
# restarted server lets its clients reclaim state soon.
nfsd_start() {
	rpc.nfsd --rdma=20049 -V 3 -V 4.2 4 >"$out/nfsd" 2>&1 &&
		grep -q "rdma 20049" /proc/fs/nfsd/portlist
}

nfsd_stop() { rpc.nfsd 0 >/dev/null 2>&1; }

nfs_server() {
	mkdir -p "$exp" "$mnt" /run/rpcbind &&
	mount -t tmpfs -o size=$((big_mb * 2 + 128))m tmpfs "$exp" &&
	{ mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd; } &&
	echo 10 >/proc/fs/nfsd/nfsv4leasetime &&
	echo 10 >/proc/fs/nfsd/nfsv4gracetime &&
	{ pgrep -x rpcbind >/dev/null || rpcbind -w; } &&
	# fsid=0: the export is NFSv4's root (the VM's / has no UUID
	# that mountd could name a pseudo-root by).
	exportfs -o rw,no_root_squash,insecure,sync,fsid=0 "192.0.2.0/24:$exp" &&
	rpc.mountd >/dev/null 2>&1 &&
	nfsd_start
}

nfs_server_stop() {
	nfsd_stop
	pkill -x rpc.mountd
	exportfs -ua 2>/dev/null
	pkill -x rpcbind
	umount "$exp" 2>/dev/null
}

# nfs_mount WHERE VERS: mount the export on $mnt over RDMA, from the
# initial namespace (WHERE=here, to the own address) or from kiwiB.
nfs_mount() {
	local where=$1 vers=$2 opts="vers=$2,proto=rdma,port=20049,hard,timeo=100"
	local run=() path=/

	[ "$vers" = 3 ] && opts+=",nolock" path=$exp
	[ "$where" = kiwiB ] && run=(nsenter --net=/run/netns/kiwiB)
	"${run[@]}" mount -t nfs -o "$opts" "$srv:$path" "$mnt" >"$out/mount" 2>&1 ||
		{ sed 's/^/# mount: /' "$out/mount"; return 1; }
}

nfs_umount() { umount "$mnt" && ! mountpoint -q "$mnt"; }

# No NFS client of namespace NS (here: the initial one) holds state at the
# server any more: an NFSv4 client lets go of its client ID after the last
# umount, and must find the server there to do it.
nfs_clients_gone() {
	local run=()

	[ "$1" = here ] || run=(ip netns exec "$1")
	! "${run[@]}" grep -q "$srv" /proc/fs/nfsfs/servers 2>/dev/null
}

# The mount's options as the kernel reports them.
mount_opts() { awk -v m="$mnt" '$2 == m && $3 ~ /^nfs/ { print $4 }' /proc/mounts; }

nfs_cleanup() {
	fs_unmount_all
	nfs_server_stop
	rmdir "$cg" 2>/dev/null
	ip link del kva 2>/dev/null
	ip netns del kiwiB 2>/dev/null
	wait_for 20 nfs_devs_gone
}
trap 'nfs_cleanup; rm -rf "$out"' EXIT

# ---- verified data on one mount

dir_ops() {
	local d=$mnt/tree

	fs_dir_ops "$mnt" &&
	ln "$d/a/n2" "$d/a/hard" &&
	ln -s ../a/n3 "$d/b/sym" &&
	[ "$(cat "$d/b/sym")" = 3 ] &&
	[ "$(stat -c %h "$d/a/n2")" = 2 ]
}

# The tree as seen from DIR: names, types, sizes, link targets.
tree_of() { (cd "$1/tree" && find . -printf '%p %y %s %n %l\n' | sort); }

# verified_mount WHERE VERS: everything above on one mount.
verified_mount() {
	local where=$1 vers=$2 name="NFSv$2 from $1" nq

	check "$name: mount -o rdma,port=20049" nfs_mount "$where" "$vers"
	mountpoint -q "$mnt" || return
	check "$name: the kernel mounted vers=$vers over proto=rdma" \
		eval "mount_opts | grep -q 'vers=$vers.*proto=rdma'"
	echo "# $name: $(mount_opts)"
	if [ "$where" = here ]; then
		nq=$(fs_qps kiwi0)
		check "$name: kiwi0 carries client and server QPs ($nq)" test "$nq" -ge 2
	else
		check "$name: the client's QP is on kiwi1, the server's on kiwi0" \
			eval '[ $(fs_qps kiwi1) -ge 1 ] && [ $(fs_qps kiwi0) -ge 1 ]'
	fi
	rm -rf "${mnt:?}"/* "$out/small"
	check "$name: $small_n small files written" fs_small_files "$mnt" "$small_n"
	check "$name: a ${big_mb} MiB file written by a writer with 32 MiB of memory" \
		fs_big_file "$mnt" "$big_mb" "$cg"
	drop_caches
	check "$name: small files read back intact" \
		fs_small_ok "$mnt"
	check "$name: the big file reads back intact" \
		fs_big_ok "$mnt"
	check "$name: the server's export holds the same bytes" \
		eval 'fs_small_ok "$exp" && fs_big_ok "$exp"'
	fs_direct "$name" "$mnt" "$exp" "${vers//./}"
	check "$name: mkdir, rename, link, symlink, unlink, rmdir" dir_ops
	drop_caches
	check "$name: the client sees the tree the server has" \
		eval '[ "$(tree_of "$mnt")" = "$(tree_of "$exp")" ] &&
		      [ $(tree_of "$mnt" | wc -l) -eq 55 ]'
	check "$name: umount" nfs_umount
	check "$name: the client's QPs are gone" \
		wait_for 20 eval '[ $(fs_qps kiwi1) -eq 0 ] && [ $(fs_qps kiwi0) -eq 0 ]'
}

# ---- the devices, the server

kiwi_unload
read -ra kparams <<<"${KIWI_STORAGE_PARAMS:-}"
modprobe kiwi "${kparams[@]}" || not_ok "modprobe kiwi ${kparams[*]}"
check "modprobe nfsd, svcrdma, xprtrdma" modprobe -a nfsd rpcrdma
check "kiwi0 on kva ($srv), kiwi1 on kvb ($cli) in namespace kiwiB" nfs_devs
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
check "a memory cgroup of 32 MiB for the big file's writer" \
	eval "mkdir -p $cg && echo 32M >$cg/memory.max"
check "nfsd exports a tmpfs and listens on RDMA port 20049" nfs_server
nfs_listening() {
	rdma resource show cm_id | grep "link kiwi0/" | grep LISTEN | grep -q ":20049"
}
check "nfsd's RDMA listener is a kiwi cm_id" wait_for 10 nfs_listening

for vers in 3 4.2; do
	for where in here kiwiB; do
		verified_mount "$where" "$vers"
		mountpoint -q "$mnt" && umount -f "$mnt"
	done
done
storage_zcopy_check kiwi0 kiwi1

# ---- faults under a verified writer, on NFSv4.2 from kiwiB

if [ "${KIWI_STORAGE_FAULTS:-1}" = 1 ]; then

# The server's QPs on kiwi0, by number.
server_qps() {
	rdma resource show qp | awk '$2 == "kiwi0/1" { print $4 }' | sort -n | paste -sd ' '
}

# fault SEED NAME FAULT FELT HEAL [same]: lib.sh's fs_fault; with "same",
# the mount writes on over the same connection.
fault() {
	fault_same=${6:-}
	fs_fault "$@"
}
fs_srv_dir=$exp fs_dmesg="rpcrdma|svcrdma|nfs: server"
fault_before() { fault_qps=$(server_qps); }
fault_healed() {
	check "$1: nfsd's RDMA listener is on kiwi0 again" wait_for 20 nfs_listening
}
fault_after() {
	[ -z "$fault_same" ] ||
		check "$1: over the same connection (server QP $fault_qps)" \
			test "$(server_qps)" = "$fault_qps"
}

nfs_mount kiwiB 4.2 || not_ok "NFSv4.2 from kiwiB for the faults: mount"

# An RNIC's connection outlives a short link outage; kiwi's too, although
# TCP's MSS drops to 36 while the route is gone.
fault 21 "kva down 4 s" "ip link set kva down" \
	'[ "$(port_state kiwi0)" = "1: DOWN" ]' "ip link set kva up" same
fault 22 "nfsd stopped 4 s" nfsd_stop \
	'! grep -q rdma /proc/fs/nfsd/portlist' nfsd_start
fault 23 "rdma link del kiwi0" "rdma link del kiwi0" "ibdev_absent kiwi0" \
	"rdma link add kiwi0 type kiwi netdev kva"
check "the fault mount unmounts" nfs_umount

# Faults that take the client's device away too are made on a mount to
# the own address over one device. With two, a client that reconnects
# through the second device while that one is being removed meets a bug of
# xprtrdma in 6.1: DEVICE_REMOVAL during rpcrdma_create_id() finds the
# endpoint's re_id still NULL ("BUG: kernel NULL pointer dereference" in
# rpcrdma_cm_event_handler), seen once under rmmod kiwi.
one_dev() {
	kiwi_own_addr_dev kiwi0 $srv
}
check "the kiwiB client let go of the server" wait_for 60 nfs_clients_gone kiwiB
ip link del kva
ip netns del kiwiB
check "both devices go with their netdevs" wait_for 20 nfs_devs_gone
check "kiwi0 alone on a new kva" one_dev
check "nfsd's RDMA listener is on the new kiwi0" wait_for 20 nfs_listening
nfs_mount here 4.2 || not_ok "NFSv4.2 to the own address for the faults: mount"
fault 24 "netdev deleted" "ip link del kva" "ibdev_absent kiwi0" one_dev
fault 25 "rmmod kiwi" "modprobe -r kiwi" "ibdev_absent kiwi0" \
	"modprobe kiwi ${kparams[*]} && rdma link add kiwi0 type kiwi netdev kva"
check "the fault mount unmounts" nfs_umount
check "the client let go of the server" wait_for 60 nfs_clients_gone here
fi

# ---- the end: nothing left, and kiwi unloads

nfs_server_stop
check "nfsd has no listener left" eval '! grep -q . /proc/fs/nfsd/portlist'
check "no PD, MR, CQ in use, QP or cm_id left on kiwi0" eval '! storage_leftovers kiwi0 kiwi1'
ip link del kva
check "kiwi0 goes with its netdev" wait_for 20 ibdev_absent kiwi0
check "kiwi unloads" modprobe -r kiwi
check "rpcrdma unloads" modprobe -r rpcrdma
tap_end
