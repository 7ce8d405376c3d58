#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# SMB Direct over kiwi: the kernel's SMB3 server (ksmbd) and client (cifs)
# with SMB3 over RDMA (MS-SMBD), built with it from the kernel's source by
# scripts/build-smbdirect.sh, as Debian's kernel has it off.
#
# In this kernel ksmbd listens and cifs connects in the initial network
# namespace only, so one device, kiwi0 on kva (192.0.2.1), carries both
# ends: cifs mounts the device's own address. ksmbd listens on SMB
# Direct's iWARP port, 5445, when an iWARP device exists as it starts.
# The share is a tmpfs. On the mount, over SMB 3.0 and 3.1.1: small files,
# a file larger than the memory its writer may use, read back after the
# caches are dropped, O_DIRECT chunks (the client's RDMA registrations:
# the server reads and writes them by RDMA), fio with crc32c, directory
# operations; every byte compared on the mount and in the share.
#
# Then faults, each while a writer logs every chunk whose O_DIRECT|O_DSYNC
# write completed; the mount is hard, so cifs reconnects and resends, and
# afterwards every logged chunk must read back intact from the mount and
# from the share:
#   - kva down for a few seconds: the link is cut, the connection lives on;
#   - ksmbd stopped (its listener and connections go) and started again;
#   - rdma link del of kiwi0, then add;
#   - the netdev deleted, then made again;
#   - rmmod kiwi with both ends on it.
# At the end nothing of kiwi is left and the module unloads.
#
# KIWI_STORAGE_LONG=1 moves more data; KIWI_STORAGE_FAULTS=0 leaves the
# faults out, KIWI_SMB_REMOVALS=0 the last three (the device goes).
source "$(dirname "$0")/lib.sh"
tap_begin "SMB Direct (ksmbd, cifs) over kiwi"

srv=192.0.2.1
share=$out/share
mnt=$out/mnt
cg=/sys/fs/cgroup/kiwi-smb
if [ -n "${KIWI_STORAGE_LONG:-}" ]; then
	big_mb=768 small_n=400 direct_chunks=256 fio_mb=256
else
	big_mb=96 small_n=60 direct_chunks=32 fio_mb=16
fi
pat_chunks=0	# lib.sh's storage_fio starts fio after them: a file of its own

smb_conf() {
	mkdir -p "$share" "$mnt" &&
	mount -t tmpfs -o size=$((big_mb * 2 + 128))m tmpfs "$share" &&
	smbd_setup "$out" "$share"
}

ksmbd_start() { smbd_start "$out" && wait_for 20 smb_listening; }

# ksmbd's RDMA listener: a kiwi cm_id on SMB Direct's iWARP port.
smb_listening() {
	rdma resource show cm_id | grep "link kiwi0/" | grep LISTEN | grep -q ":5445"
}

smb_mount() { # VERS
	smbd_mount $srv "$mnt" "rdma,vers=$1,hard,echo_interval=5" >"$out/mount" 2>&1 ||
		{ sed 's/^/# mount: /' "$out/mount"; return 1; }
}

smb_umount() { umount "$mnt" && ! mountpoint -q "$mnt"; }

# The mount's options as the kernel reports them.
mount_opts() { awk -v m="$mnt" '$2 == m && $3 == "cifs" { print $4 }' /proc/mounts; }

# cifs says which transport each session rides.
smb_over_rdma() { grep -q "SMBDirect" /proc/fs/cifs/DebugData; }

smb_cleanup() {
	fs_unmount_all
	smbd_stop
	umount "$share" 2>/dev/null
	rmdir "$cg" 2>/dev/null
	kiwi_own_addr_dev_del kiwi0
	smbd_unload 2>/dev/null
}
trap 'smb_cleanup; rm -rf "$out"' EXIT

# ---- verified data on one mount

# rm -rf of the working directory on the mount removes it from the share.
wd_removed() {
	rm -rf "${wd:?}" 2>&1 | head -5 | sed 's/^/# rm: /'
	[ ! -e "$sd" ]
}

# The tree as seen from DIR: names, types, files' sizes (a directory's
# size is the file system's own).
tree_of() {
	(cd "$1/tree" && find . \( -type d -printf '%p d\n' \) -o -printf '%p %y %s\n' | sort)
}

# The mount's tree and the share's are the same, of 53 entries; a
# difference is shown.
tree_same() {
	tree_of "$wd" >"$out/tree.mnt"
	tree_of "$sd" >"$out/tree.share"
	diff "$out/tree.mnt" "$out/tree.share" | head -20 | sed 's/^/# /'
	echo "# $(wc -l <"$out/tree.mnt") entries on the mount, $(wc -l <"$out/tree.share") in the share"
	cmp -s "$out/tree.mnt" "$out/tree.share" && [ "$(wc -l <"$out/tree.mnt")" -eq 53 ]
}

verified_mount() { # VERS
	local vers=$1 name="SMB $1" nq

	# Each version works in a directory of its own: ksmbd in 6.1.192 lists
	# a share's top directory as empty (over TCP too), its
	# subdirectories in full.
	wd=$mnt/v${vers//./} sd=$share/v${vers//./}

	check "$name: mount -t cifs -o rdma" smb_mount "$vers"
	mountpoint -q "$mnt" || return
	check "$name: the kernel mounted vers=$vers with rdma" \
		eval "mount_opts | grep -q 'vers=$vers.*rdma'"
	check "$name: cifs reports the session on SMB Direct" smb_over_rdma
	nq=$(fs_qps kiwi0)
	check "$name: kiwi0 carries client and server QPs ($nq)" test "$nq" -ge 2
	rm -rf "$out/small"
	check "$name: a working directory made through the mount" mkdir "$wd"
	check "$name: $small_n small files written" fs_small_files "$wd" "$small_n"
	check "$name: a ${big_mb} MiB file written by a writer with 32 MiB of memory" \
		fs_big_file "$wd" "$big_mb" "$cg"
	drop_caches
	check "$name: small files read back intact" \
		fs_small_ok "$wd"
	check "$name: the big file reads back intact" \
		fs_big_ok "$wd"
	check "$name: the share holds the same bytes" \
		eval 'fs_small_ok "$sd" && fs_big_ok "$sd"'
	fs_direct "$name" "$wd" "$sd" "${vers//./}"
	check "$name: fio 4 KiB random writes, QD 16, verified with crc32c" \
		storage_fio "$wd/fio" rand4k --rw=randwrite --bs=4k --iodepth=16
	check "$name: fio 1 MiB sequential writes, QD 4, verified with crc32c" \
		storage_fio "$wd/fio" seq1m --rw=write --bs=1M --iodepth=4
	check "$name: mkdir, rename, unlink, rmdir" fs_dir_ops "$wd"
	drop_caches
	check "$name: the client sees the tree the share has" tree_same
	check "$name: the working directory removed through the mount" wd_removed
	check "$name: umount" smb_umount
	check "$name: the client's QPs are gone" \
		wait_for 20 eval '[ $(fs_qps kiwi0) -eq 0 ]'
}

# ---- the device, the server

kiwi_unload
modprobe kiwi || not_ok "modprobe kiwi"
check "ksmbd and cifs with SMB Direct load (scripts/build-smbdirect.sh)" smbd_load ksmbd cifs
check "kiwi0 on kva ($srv)" kiwi_own_addr_dev kiwi0 $srv
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
check "a memory cgroup of 32 MiB for the big file's writer" \
	eval "mkdir -p $cg && echo 32M >$cg/memory.max"
check "a share on a tmpfs and its user" smb_conf
check "ksmbd starts and its SMB Direct listener is a kiwi cm_id on 5445" ksmbd_start
# Without the server nothing below can pass: say so once.
[ "$_tap_failed" -eq 0 ] || tap_end

for vers in 3.0 3.1.1; do
	verified_mount "$vers"
	mountpoint -q "$mnt" && umount -f "$mnt"
done

# ---- faults under a verified writer

if [ "${KIWI_STORAGE_FAULTS:-1}" = 1 ]; then

# lib.sh's fs_fault, on the SMB 3.1.1 mount.
fs_srv_dir=$share fs_dmesg="CIFS|ksmbd"
fault_before() { :; }
fault_healed() {
	check "$1: ksmbd's RDMA listener is on kiwi0 again" wait_for 20 smb_listening
}
fault_after() { check "$1: the session is on SMB Direct again" smb_over_rdma; }

if smb_mount 3.1.1; then
	fs_fault 31 "kva down 4 s" "ip link set kva down" \
		'[ "$(port_state kiwi0)" = "1: DOWN" ]' "ip link set kva up"
	fs_fault 32 "ksmbd stopped 4 s" smbd_stop '! smb_listening' ksmbd_start
	if [ "${KIWI_SMB_REMOVALS:-1}" = 1 ]; then
		fs_fault 33 "rdma link del kiwi0" "rdma link del kiwi0" "ibdev_absent kiwi0" \
			"rdma link add kiwi0 type kiwi netdev kva"
		fs_fault 34 "netdev deleted" "ip link del kva" "ibdev_absent kiwi0" \
			"kiwi_own_addr_dev kiwi0 $srv"
		fs_fault 35 "rmmod kiwi" "modprobe -r kiwi" "ibdev_absent kiwi0" \
			"modprobe kiwi && rdma link add kiwi0 type kiwi netdev kva"
	fi
	check "the fault mount unmounts" smb_umount
else
	not_ok "SMB 3.1.1 for the faults: mount"
fi
fi

# ---- the end: nothing left, and kiwi unloads

smbd_stop
check "ksmbd has no listener left" wait_for 20 eval '! smb_listening'
check "no PD, MR, CQ in use, QP or cm_id left on kiwi0" eval '! storage_leftovers kiwi0'
ip link del kva
check "kiwi0 goes with its netdev" wait_for 20 ibdev_absent kiwi0
check "kiwi unloads" modprobe -r kiwi
check "ksmbd and cifs unload" smbd_unload
tap_end
