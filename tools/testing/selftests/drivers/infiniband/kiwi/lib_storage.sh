#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# lib.sh's part for the storage tests (storage_*.sh, tools/bench/storage.sh):
# the pattern writer and its checks, files on a mounted network file
# system, SMB Direct's server and client, fio, and the faults under a
# verified writer.

# blkpat ARGS...: kiwi_blkpat, its report lines as TAP comments; killed
# after 15 minutes (a hard NFS mount that never comes back holds it).
blkpat() {
	timeout -s KILL 900 "$KIWI_TESTDIR/kiwi_blkpat" "$@" 2>&1 | sed 's/^/# /'
	return "${PIPESTATUS[0]}"
}

# ---- files on a mounted network file system (storage_nfs.sh,
# storage_smb.sh)

# fs_qps DEV: how many QPs of device DEV exist (rdma resource lists
# "link DEV/1").
fs_qps() { rdma resource show qp | grep -c "link $1/"; }

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# fs_small_files DIR N: N files of up to 20,000 random bytes in
# $out/small, their sums in $out/small.sum, copied to DIR/small.
fs_small_files() {
	local i

	rm -rf "$out/small"
	mkdir -p "$out/small" "$1/small" || return 1
	for i in $(seq "$2"); do
		head -c $(((i * 7919) % 20000)) /dev/urandom >"$out/small/f$i"
	done
	(cd "$out/small" && sha256sum f* >"$out/small.sum") &&
		cp "$out"/small/f* "$1/small/"
}

# fs_big_file DIR MB CGROUP: DIR/big, MB MiB of random bytes written
# through a pipe by a process of memory cgroup CGROUP (so that a file
# larger than its limit is written back while it is written), its sum
# taken on the way into $out/big.sum.
fs_big_file() {
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$3" \
		sh -c "head -c $2M /dev/urandom | tee '$1/big' | sha256sum >'$out/big.sum'" &&
		sed -i 's|-$|big|' "$out/big.sum"
}

# fs_dir_ops DIR: directory operations in DIR/tree, through the mount:
# mkdir, 50 files, rename across directories, unlink, rmdir, a directory
# renamed with its contents; 53 entries are left.
fs_dir_ops() {
	local d=$1/tree i

	mkdir -p "$d/a/b/c" "$d/gone" &&
	for i in $(seq 50); do echo "$i" >"$d/a/n$i"; done &&
	mv "$d/a/n1" "$d/a/b/c/moved" &&
	rm "$d/a/n4" && rmdir "$d/gone" &&
	mv "$d/a/b" "$d/b" &&
	[ "$(cat "$d/b/c/moved")" = 1 ]
}

# fs_unmount_all: at a test's end, the writer stopped and $mnt unmounted
# whatever state the server is in.
fs_unmount_all() {
	touch "$out/stop"
	wait
	umount -f "$mnt" 2>/dev/null
	umount -l "$mnt" 2>/dev/null
}

# fs_direct NAME DIR SRVDIR SEED: test points: $direct_chunks chunks of
# 64 KiB written to DIR/direct with O_DIRECT, read back with O_DIRECT,
# and read from the server's copy, SRVDIR/direct.
fs_direct() {
	: >"$2/direct"
	check "$1: $direct_chunks chunks of 64 KiB written with O_DIRECT" \
		blkpat write "$2/direct" --seed "$4" --chunks "$direct_chunks" --direct
	check "$1: and read back with O_DIRECT, intact" \
		blkpat verify "$2/direct" --seed "$4" --chunks "$direct_chunks" --direct
	check "$1: the server's file holds the same bytes" \
		blkpat verify "$3/direct" --seed "$4" --chunks "$direct_chunks"
}

# fs_fault SEED NAME FAULT FELT HEAL: FAULT while a writer (writer_running)
# writes $mnt/wSEED, FELT true while it is on; HEAL. Then the test's
# fault_healed NAME (its server listening again), the mount writing on by
# itself (a hard mount resends), the test's fault_after NAME, and every
# chunk the writer saw completed read back intact from the mount and from
# the server's copy, $fs_srv_dir/wSEED; the last kernel messages that
# match $fs_dmesg are shown. fault_before NAME runs as the writer runs.
fs_fault() {
	local seed=$1 name=$2 fault=$3 felt=$4 heal=$5 t

	: >"$mnt/w$seed"
	writer_running "$name" "$seed" "$mnt/w$seed" 0 100000
	fault_before "$name"
	t=$SECONDS
	bounded 120 eval "$fault"
	check "$name: '$fault' returns within 20 s ($((SECONDS - t)) s)" \
		test $((SECONDS - t)) -le 20
	check "$name: the fault is felt" wait_for 20 eval "$felt"
	sleep 3
	check "$name: healed ($heal)" eval "$heal"
	fault_healed "$name"
	t=$SECONDS
	check "$name: the mount writes on by itself" writer_progress "$seed" 4 150
	echo "# $name: writes went on $((SECONDS - t)) s after the heal"
	fault_after "$name"
	check "$name: every chunk the writer saw completed reads back intact ($(logged "$seed") chunks)" \
		writer_end "$seed" "$mnt/w$seed"
	check "$name: the server's file holds them too" \
		blkpat verify "$fs_srv_dir/w$seed" --seed "$seed" --log "$out/w$seed.log"
	dmesg | grep -E "$fs_dmesg" | tail -3 | sed "s/^/# $name: dmesg: /"
}

# fs_small_ok DIR, fs_big_ok DIR: DIR's small files, DIR/big, hold the
# bytes fs_small_files and fs_big_file wrote.
fs_small_ok() { (cd "$1/small" && sha256sum --quiet -c "$out/small.sum"); }
fs_big_ok() { (cd "$1" && sha256sum --quiet -c "$out/big.sum"); }

# ---- SMB Direct (storage_smb.sh, tools/bench/storage.sh): ksmbd and cifs
# as scripts/build-smbdirect.sh built them, with SMB Direct.

# smbd_load MODULE...: each of ksmbd and cifs in place of the
# distribution's, after what it depends on.
smbd_load() {
	local m ko deps

	for m in "$@"; do
		ko=$KIWI_ROOT/build/smbdirect/$m.ko
		[ ! -e "/sys/module/$m" ] || rmmod "$m" || return 1
		deps=$(modinfo -F depends "$ko" | tr , ' ') &&
			modprobe -a $deps && insmod "$ko" || return 1
	done
}

smbd_unload() {
	local m

	for m in cifs ksmbd; do
		[ ! -e "/sys/module/$m" ] || rmmod "$m" || return 1
	done
}

# smbd_setup DIR PATH: a configuration in DIR for ksmbd serving PATH as
# share "kiwi" to user root (password kiwi-test), and that user.
smbd_setup() {
	cat >"$1/ksmbd.conf" <<-EOF &&
	[global]
		netbios name = KIWI
		map to guest = never
	[kiwi]
		path = $2
		writeable = yes
		force user = root
		force group = root
	EOF
	ksmbd.adduser -a root -p kiwi-test -c "$1/ksmbd.conf" -i "$1/ksmbdpwd.db" \
		>"$1/adduser" 2>&1
}

# smbd_start DIR: ksmbd.mountd with smbd_setup's configuration in DIR.
# ksmbd listens on SMB Direct's iWARP port, 5445, when an iWARP device
# exists as it starts; make the device first.
smbd_start() {
	ksmbd.mountd -c "$1/ksmbd.conf" -u "$1/ksmbdpwd.db" >"$1/mountd" 2>&1
}

smbd_stop() {
	ksmbd.control -s >/dev/null 2>&1
	wait_for 20 eval '! pgrep -x ksmbd.mountd >/dev/null'
}

# smbd_mount ADDR MNT OPTIONS: share "kiwi" of ADDR on MNT, within 60 s.
smbd_mount() {
	timeout 60 mount -t cifs "//$1/kiwi" "$2" -o "username=root,password=kiwi-test,$3"
}

# ---- for the storage tests (storage_*.sh), which set $pat_chunks and
# $fio_mb.

# sysfs_find ATTR VALUE DIR...: the name of the first DIR whose file ATTR
# reads VALUE; returns 1 when none does.
sysfs_find() {
	local attr=$1 want=$2 d

	shift 2
	for d in "$@"; do
		[ "$(cat "$d/$attr" 2>/dev/null)" = "$want" ] &&
			{ basename "$d"; return 0; }
	done
	return 1
}

# storage_zcopy_check DEV...: with zcopy_min set (KIWI_STORAGE_PARAMS),
# one point: kernel consumers' payload went out by reference on the DEVs
# (port counter tx_zcopy_bytes), their pages or the DMA MR's; nothing
# without it.
storage_zcopy_check() {
	local d n=0
	[ "$(cat /sys/module/kiwi/parameters/zcopy_min)" != 0 ] || return 0
	for d in "$@"; do
		n=$((n + $(cat "/sys/class/infiniband/$d/ports/1/hw_counters/tx_zcopy_bytes" 2>/dev/null ||
			ip netns exec kiwiB cat "/sys/class/infiniband/$d/ports/1/hw_counters/tx_zcopy_bytes")))
	done
	check "zero copy: the ULPs' payload went out by reference ($n bytes on $*)" test "$n" -gt 0
}

# storage_fio DISK NAME ARGS...: a fio job with crc32c verification on
# DISK, after the pattern's chunks; its result lines as comments.
storage_fio() {
	local disk=$1 name=$2 rc
	shift 2
	fio --name="$name" --filename="$disk" --ioengine=libaio --direct=1 \
		--offset=$((pat_chunks * 64))k --size=${fio_mb}M \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 \
		--output="$out/$name.fio" "$@" &&
		grep -q "err= 0" "$out/$name.fio"
	rc=$?
	grep -E "^ *(write|read):" "$out/$name.fio" | sed 's/^ */# '"$name"': /'
	[ $rc -eq 0 ] || sed 's/^/# /' "$out/$name.fio" | tail -20
	return $rc
}

# storage_verified DISK BACKING WHAT: test points: $pat_chunks chunks of a
# pattern written through DISK, read back through it and straight from
# BACKING (WHAT names it), fio with crc32c (4 KiB random, 128 KiB
# sequential) after them, and the pattern still intact.
storage_verified() {
	local disk=$1 img=$2 what=$3

	check "write $pat_chunks chunks of 64 KiB with O_DIRECT through $disk" \
		blkpat write "$disk" --seed 11 --chunks "$pat_chunks" --direct
	check "read them back through $disk: every chunk intact" \
		blkpat verify "$disk" --seed 11 --chunks "$pat_chunks" --direct
	check "$what holds the same bytes" \
		blkpat verify "$img" --seed 11 --chunks "$pat_chunks" --direct
	check "fio 4 KiB random writes, QD 16, verified with crc32c" \
		storage_fio "$disk" rand4k --rw=randwrite --bs=4k --iodepth=16
	check "fio 128 KiB sequential writes, QD 4, verified with crc32c" \
		storage_fio "$disk" seq128k --rw=write --bs=128k --iodepth=4
	check "the pattern is still intact after fio" \
		blkpat verify "$disk" --seed 11 --chunks "$pat_chunks" --direct
}

# writer_start SEED PATH FIRST END: a writer of chunks FIRST .. END-1 of
# PATH, over and over (a chunk written again gets the same bytes), that
# logs each completed O_DIRECT|O_DSYNC write to $out/wSEED.log and goes on
# past failed ones, until $out/stop exists.
writer_start() {
	rm -f "$out/stop" "$out/w$1.log"
	: >"$out/w$1.log"
	wpath=$2
	while [ ! -e "$out/stop" ]; do
		blkpat write "$2" --seed "$1" --first "$3" --chunks $(($4 - $3)) \
			--direct --keep-going --log "$out/w$1.log" \
			--stop "$out/stop" || nap 0.5
	done >"$out/w$1.out" 2>&1 &
	wpid=$!
}

logged() { wc -l <"$out/w$1.log"; }

# writer_running NAME SEED PATH FIRST END: writer_start, and a point once
# the writer has logged 4 chunks.
writer_running() {
	writer_start "$2" "$3" "$4" "$5"
	check "$1: the writer runs before the fault" writer_progress "$2" 4
}

# writer_progress SEED N [SECONDS]: N more chunks than now are logged
# within SECONDS (60).
writer_progress() {
	local want=$(($(logged "$1") + $2))

	wait_for "${3:-60}" eval "[ \$(logged $1) -ge $want ]"
}

# writer_stop SEED: stop the writer and show its last words. One stuck in
# a write for a minute (a hard NFS mount that never came back) is killed;
# one that a kill does not end within 30 s wedges the run.
writer_stop() {
	touch "$out/stop"
	if ! wait_for 60 eval '! kill -0 $wpid 2>/dev/null'; then
		echo "# the writer is stuck in a write: killed"
		pkill -KILL -f "kiwi_blkpat write $wpath"
		wait_for 30 eval '! kill -0 $wpid 2>/dev/null' ||
			wedged "the stuck writer dies when killed (it has not)"
	fi
	wait "$wpid"
	tail -2 "$out/w$1.out"
}

# writer_end SEED PATH: writer_stop; the chunks it logged read back intact
# from PATH (with O_DIRECT).
writer_end() {
	writer_stop "$1"
	blkpat verify "$2" --seed "$1" --log "$out/w$1.log" --direct
}

# writer_recovered NAME SEED PATH: two points, once a fault is over: the
# writer logs 4 more chunks, and writer_end.
writer_recovered() {
	check "$1: writes go on after the fault" writer_progress "$2" 4
	check "$1: every chunk the writer saw completed reads back intact ($(logged "$2") chunks)" \
		writer_end "$2" "$3"
}

# device_fault NAME FAULT: FAULT, which takes kiwi0 away; points: it
# returns within 20 s (a netdev's removal waits until kiwi lets go of it),
# and kiwi0 is gone within 30.
device_fault() {
	local t=$SECONDS

	eval "$2"
	check "$1: '$2' returns within 20 s ($((SECONDS - t)) s)" \
		test $((SECONDS - t)) -le 20
	check "$1: kiwi0 is gone" wait_for 30 ibdev_absent kiwi0
}

# fault_healed NAME FAULT FELT HEAL: FAULT, a point once FELT is true
# (within 15 s), and 3 s later HEAL.
fault_healed() {
	eval "$2"
	check "$1: the fault is felt" wait_for 15 eval "$3"
	sleep 3
	eval "$4"
}

# storage_leftovers DEV...: what of the devices is left in use, as
# comments; true when anything is. The core's CQ pool keeps its CQs,
# unused, until the device goes: those do not count.
storage_leftovers() {
	local r dev pat=()

	for dev in "$@"; do pat+=(-e "$dev"); done
	for r in pd mr cq qp cm_id; do
		rdma resource show $r || echo "rdma resource show $r failed"
	done 2>&1 | grep -w "${pat[@]}" -e failed |
		grep -v "users 0 .*comm \[ib_core\]" | sed 's/^/# /' | grep .
}
