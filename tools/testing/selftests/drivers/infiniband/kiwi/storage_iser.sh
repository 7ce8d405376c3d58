#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# iSER over kiwi: the LIO target (configured with targetcli) with iSER
# enabled on its portal, and open-iscsi's initiator on the iser transport,
# both in the initial network namespace, the initiator connecting to the
# kiwi device's own address.
#
# LIO opens a TCP listener on a portal's address before iSER can be enabled
# on it, and kiwi listens with a TCP socket of the host's stack, so both on
# 192.0.2.1:3260 collide: "isert: isert_setup_id: rdma_listen() failed: -98".
# A hardware RNIC has its own port space. LIO creates that TCP listener in
# the network namespace of the process that makes the portal, and isert
# always listens in the initial one: the portal is made by a targetcli in
# namespace kiwiT, where a dummy device has the address, and iSER on it then
# listens on kiwi0 alone.
#
# The target exports a RAM disk (brd, through the block backstore) in demo
# mode. The initiator discovers it over iSER, logs in, writes and reads
# back a per-chunk pattern (also read straight from the RAM disk), runs fio
# with crc32c verification (4 KiB random, 128 KiB sequential) and logs out.
#
# Then faults, each while a writer logs every chunk whose O_DIRECT|O_DSYNC
# write completed; afterwards every logged chunk must read back intact:
#   - the netdev down for a few seconds: the port goes DOWN, the
#     connection (TCP over loopback to the own address) lives on;
#   - the target's portal removed and made again: LIO keeps the logged-in
#     session (only the listener goes), the session stays up;
#   - rdma link del, then add: both ULPs let go of the device (ib_iser gets
#     DEVICE_REMOVAL, the session fails and queues I/O for the replacement
#     timeout); isert does not listen again by itself, so iSER is enabled
#     again on the portal by hand; iscsid then recovers the same session;
#   - the netdev deleted, then made again: the same;
#   - rmmod kiwi with both ULPs on it: the module goes, the ULPs let go,
#     the same again after the module and device are back.
# At the end nothing of kiwi is left and the modules unload.
#
# KIWI_STORAGE_LONG=1 writes and verifies more (a longer run, by hand).
# KIWI_ISER_REMOVALS=0 leaves out the portal removal and the three device
# removals: upstream ib_isert frees memory it still uses there (see
# "Debug kernel and faults" in kiwi.rst), which KASAN reports; the debug
# kernel's run sets it, Debian's kernel runs them.
source "$(dirname "$0")/lib.sh"
[ -z "${KIWI_X:-}" ] || set -x
tap_begin "iSER (LIO isert, open-iscsi ib_iser) over kiwi"

iqn=iqn.2026-11.org.kiwi:storage-iser
addr=192.0.2.1
portal=$addr:3260
tpg=/sys/kernel/config/target/iscsi/$iqn/tpgt_1
tpath=/iscsi/$iqn/tpg1
img=/dev/ram0
if [ -n "${KIWI_STORAGE_LONG:-}" ]; then
	img_mb=1024 fio_mb=256 pat_chunks=2048
else
	img_mb=192 fio_mb=16 pat_chunks=64
fi
# targetcli keeps its preferences and log here, not in $HOME.
export TARGETCLI_HOME=$out/targetcli
# targetcli asks the system bus for tcmu-runner's backstores and gives up
# without one: a private bus (with nothing on it) answers.
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$out/bus
dbus_pid='' iscsid_pid=''

# tcli CMD...: one targetcli command, made in namespace kiwiT (see above).
tcli() {
	echo "> $*" >>"$out/tcli.log"
	nsenter --net=/run/netns/kiwiT targetcli "$@" >>"$out/tcli.log" 2>&1
}

# tcli_batch: the commands on stdin in one targetcli (it starts slowly);
# it does not say which failed, the callers check configfs.
tcli_batch() {
	tee -a "$out/tcli.log" |
		nsenter --net=/run/netns/kiwiT targetcli >>"$out/tcli.log" 2>&1
}

is_iser_on() { [ "$(cat "$tpg/np/$portal/iser" 2>/dev/null)" = 1 ]; }

# The target's iSER listener: a kiwi cm_id on the portal's address.
is_listening() {
	rdma resource show cm_id | grep kiwi0 | grep LISTEN | grep -q "$portal"
}

is_attr() { [ "$(cat "$tpg/attrib/$1" 2>/dev/null)" = "$2" ]; }

is_target() {
	ip netns add kiwiT &&
	ip -n kiwiT link add kvt type dummy &&
	ip -n kiwiT addr add $addr/32 dev kvt &&
	ip -n kiwiT link set kvt up &&
	modprobe brd rd_nr=1 rd_size=$((img_mb * 1024)) &&
	[ -b "$img" ] || return 1
	tcli_batch <<-EOF
	set global auto_save_on_exit=false auto_add_default_portal=false
	/backstores/block create name=kiwiram dev=$img
	/iscsi create $iqn
	$tpath/luns create /backstores/block/kiwiram
	$tpath/portals create $addr 3260
	$tpath/portals/$portal enable_iser boolean=true
	$tpath set attribute generate_node_acls=1 authentication=0 demo_mode_write_protect=0 cache_dynamic_acls=1
	EOF
	[ -d "$tpg/lun/lun_0" ] && is_iser_on &&
		is_attr generate_node_acls 1 && is_attr authentication 0 &&
		is_attr demo_mode_write_protect 0 && is_attr cache_dynamic_acls 1 &&
		[ "$(cat "$tpg/enable")" = 1 ]
}

# The initiator's session of our target, and its disk.
is_session() { sysfs_find targetname "$iqn" /sys/class/iscsi_session/session*; }

is_live() {
	[ "$(cat "/sys/class/iscsi_session/$(is_session)/state" 2>/dev/null)" = LOGGED_IN ]
}

is_disk() {
	local s d

	s=$(is_session) || return 1
	for d in /sys/class/iscsi_session/"$s"/device/target*/*/block/*; do
		[ -b "/dev/$(basename "$d")" ] &&
			[ "$(cat "$d/size" 2>/dev/null)" -gt 0 ] 2>/dev/null &&
			{ echo "/dev/$(basename "$d")"; return 0; }
	done
	return 1
}

is_node() {
	iscsiadm -m node -T $iqn -p $portal -I iser "$@" >>"$out/iscsiadm" 2>&1
}

is_login() { is_node --login && wait_for 60 is_disk; }

is_logout() {
	is_node --logout && wait_for 20 eval '! is_session'
}

is_iscsid() {
	# No systemd here: iscsiadm would ask it to start iscsid.
	[ -s /etc/iscsi/initiatorname.iscsi ] ||
		echo "InitiatorName=$(iscsi-iname)" >/etc/iscsi/initiatorname.iscsi
	# Its own session: when it ends it signals its whole process group.
	setsid iscsid -f >"$out/iscsid" 2>&1 &
	iscsid_pid=$!
	# It listens for iscsiadm on an abstract unix socket.
	wait_for 20 eval 'ss -Hxl | grep -q ISCSIADM_ABSTRACT_NAMESPACE'
}

is_cleanup() {
	touch "$out/stop"
	wait "$wpid" 2>/dev/null
	iscsiadm -m node -T $iqn -p $portal -I iser --logout >/dev/null 2>&1
	iscsiadm -m node -T $iqn -o delete >/dev/null 2>&1
	iscsiadm -m discoverydb -t st -p $portal -I iser -o delete >/dev/null 2>&1
	[ -z "$iscsid_pid" ] || kill "$iscsid_pid" 2>/dev/null
	[ ! -d "$tpg" ] || echo "clearconfig confirm=True" | tcli_batch
	[ -z "$dbus_pid" ] || kill "$dbus_pid" 2>/dev/null
	wait
	ip netns del kiwiT 2>/dev/null
	modprobe -r ib_isert ib_iser brd 2>/dev/null
	kiwi_own_addr_dev_del kiwi0
}
trap 'is_cleanup; rm -rf "$out"' EXIT

# ---- the device, the target, the initiator

t0=$SECONDS
kiwi_unload
modprobe kiwi || not_ok "modprobe kiwi"
check "modprobe target_core_mod, iscsi_target_mod, ib_isert, ib_iser" \
	modprobe -a target_core_mod iscsi_target_mod ib_isert ib_iser
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
dbus-daemon --session --address="$DBUS_SYSTEM_BUS_ADDRESS" --nofork \
	--nopidfile >"$out/dbus.log" 2>&1 &
dbus_pid=$!
check "a private system bus for targetcli" wait_for 20 test -S "${DBUS_SYSTEM_BUS_ADDRESS#unix:path=}"
check "kiwi0 on a new veth with $addr" kiwi_own_addr_dev kiwi0 $addr
t=$SECONDS
check "LIO target $iqn: a ${img_mb} MiB RAM disk as LUN 0, demo mode, portal $portal with iSER" \
	is_target
echo "# targetcli set the target up in $((SECONDS - t)) s"
check "the portal's iSER listener is a kiwi cm_id" wait_for 10 is_listening
check "the portal's TCP listener is in namespace kiwiT" \
	eval 'ip netns exec kiwiT ss -Hltn | grep -q "$portal"'
grep -iE "error|fail|cannot|not " "$out/tcli.log" | head -5 | sed 's/^/# targetcli: /'
check "iscsid runs" is_iscsid

is_discover() {
	iscsiadm -m discovery -t st -p $portal -I iser >"$out/discover" 2>&1 &&
		grep -q "^$portal,1 $iqn\$" "$out/discover"
}
check "iscsiadm discovery over iSER lists $iqn on $portal" is_discover
sed 's/^/# /' "$out/discover" | head -4
# I/O waits this long for a failed session to come back before it fails.
check "node.session.timeo.replacement_timeout = 120" \
	is_node -o update -n node.session.timeo.replacement_timeout -v 120

t=$SECONDS
check "login over iSER: the disk appears" is_login
echo "# logged in after $((SECONDS - t)) s"
sess=$(is_session)
disk=$(is_disk)
echo "# $sess, disk $disk"
iscsiadm -m session -P 3 >"$out/session" 2>&1
check "$sess uses the iser transport" grep -q "Iface Transport: iser" "$out/session"
check "the node's iface.transport_name is iser" \
	eval 'iscsiadm -m node -T $iqn -p $portal -I iser | grep -q "^iface.transport_name = iser$"'
# One connection: a QP at each end.
rdma resource show qp >"$out/qp"
nqp=$(grep -c "kiwi0/" "$out/qp")
check "kiwi0 carries the connection: $nqp QPs, want 2" test "$nqp" -eq 2
[ "$nqp" -eq 2 ] || sed 's/^/# /' "$out/qp"

# ---- verified data

storage_verified "$disk" "$img" "the target's RAM disk"
check "logout: the session ends" is_logout
check "the disk is gone" wait_for 10 eval "[ ! -b $disk ] || ! is_disk"
echo "# set up, verified and logged out after $((SECONDS - t0)) s"

# ---- faults under a verified writer

# The writer (lib.sh) writes the chunks after the pattern to the end of
# the disk, over and over; writer_end reads them back through the disk.

# dmesg_since MARK NAME: the initiator's and target's kernel lines since MARK.
dmesg_mark() {
	local m="kiwi storage_iser: $1 $RANDOM"

	echo "$m" >/dev/kmsg
	echo "$m"
}

dmesg_since() {
	dmesg --notime | sed -n "/^$1\$/,\$p" |
		grep -E "iser|isert|iscsi|connection|session|sd [0-9]|kiwi0" |
		grep -v "^$1" | head -${3:-8} | sed "s/^/# $2: dmesg: /"
}

# A fault the initiator rides out: FAULT, then HEAL, with FELT true while
# the fault is on.
self_healing() {
	local seed=$1 name=$2 fault=$3 felt=$4 heal=$5 mark

	is_login || { not_ok "$name: login"; return; }
	sess=$(is_session)
	writer_running "$name" "$seed" "$(is_disk)" "$pat_chunks" $((img_mb * 16))
	mark=$(dmesg_mark "$name")
	fault_healed "$name" "$fault" "$felt" "$heal"
	check "$name: $sess is logged in" wait_for 60 is_live
	check "$name: the same session ($sess), no new one" test "$(is_session)" = "$sess"
	writer_recovered "$name" "$seed" "$(is_disk)"
	dmesg_since "$mark" "$name"
	check "$name: logout" is_logout
}

# Over the device's own address the connection runs over loopback: a
# netdev that is down for a few seconds takes the port DOWN but the
# connection's TCP stream lives on.
self_healing 21 "netdev down 4 s" "ip link set kva down" \
	'[ "$(port_state kiwi0)" = "1: DOWN" ]' "ip link set kva up"
is_portal_del() { tcli "$tpath/portals" delete $addr 3260; }

is_portal_add() {
	printf '%s\n' "$tpath/portals create $addr 3260" \
		"$tpath/portals/$portal enable_iser boolean=true" | tcli_batch
}
# LIO ends a removed portal's listener, not its logged-in sessions.
removals=${KIWI_ISER_REMOVALS:-1}
if [ "$removals" = 0 ]; then
	ok "target portal removed # SKIP KIWI_ISER_REMOVALS=0: isert's use-after-free"
else
	self_healing 22 "target portal removed" is_portal_del '! is_listening' is_portal_add
fi

# The target's listener again after the device came back. isert in 6.1
# forgets its listener on DEVICE_REMOVAL and makes a new one only on an
# address change, so when it does not come back by itself in a few
# seconds, iSER is enabled again on the portal by hand, as an
# administrator must: off and on in the portal's configfs attribute, as
# targetcli's enable_iser does (targetcli takes long to start here).
is_relisten() {
	if wait_for 10 is_listening; then
		echo "# $1: isert listens again by itself"
	else
		echo "# $1: isert does not listen again by itself: iSER enabled again by hand"
		echo 0 >"$tpg/np/$portal/iser" &&
			echo 1 >"$tpg/np/$portal/iser" &&
			is_iser_on && wait_for 10 is_listening
	fi
}

# A fault that takes the device away: FAULT, then HEAL. ib_iser lets go of
# the device, the session fails and holds its I/O for the replacement
# timeout; once the target listens again iscsid recovers the session, and
# every chunk whose write completed reads back intact.
device_gone() {
	local seed=$1 name=$2 fault=$3 heal=$4 t mark

	is_login || { not_ok "$name: login"; return; }
	sess=$(is_session)
	writer_running "$name" "$seed" "$(is_disk)" "$pat_chunks" $((img_mb * 16))
	mark=$(dmesg_mark "$name")
	device_fault "$name" "$fault"
	check "$name: $sess failed (it is not logged in)" wait_for 30 eval '! is_live'
	check "$name: the device is back" eval "$heal"
	check "$name: the target's portal listens on kiwi0 again" is_relisten "$name"
	t=$SECONDS
	if wait_for 90 is_live; then
		echo "# $name: iscsid recovered $sess by itself in $((SECONDS - t)) s"
		ok "$name: the initiator recovers the session by itself"
	else
		not_ok "$name: the initiator recovers the session by itself"
		echo "# $name: logging in anew"
		touch "$out/stop"
		is_logout
		is_login
	fi
	check "$name: the same session ($sess)" test "$(is_session)" = "$sess"
	writer_recovered "$name" "$seed" "$(is_disk)"
	dmesg_since "$mark" "$name" 12
	check "$name: logout" is_logout
}

if [ "$removals" = 0 ]; then
	ok "device removals # SKIP KIWI_ISER_REMOVALS=0: isert's use-after-free"
else
	device_gone 31 "rdma link del" "rdma link del kiwi0" "rdma link add kiwi0 type kiwi netdev kva"
	device_gone 32 "netdev deleted" "ip link del kva" "kiwi_own_addr_dev kiwi0 $addr"
	device_gone 33 "rmmod kiwi" "modprobe -r kiwi" "modprobe kiwi && rdma link add kiwi0 type kiwi netdev kva"
fi

# ---- the end: nothing left, and the modules unload

iscsiadm -m node -T $iqn -o delete >/dev/null 2>&1
iscsiadm -m discoverydb -t st -p $portal -I iser -o delete >/dev/null 2>&1
kill "$iscsid_pid" 2>/dev/null
wait "$iscsid_pid" 2>/dev/null
iscsid_pid=
echo "clearconfig confirm=True" | tcli_batch
check "targetcli clearconfig: the target's configuration is gone" test ! -e "$tpg"
check "no PD, MR, CQ in use, QP or cm_id left on kiwi0" eval '! storage_leftovers kiwi0'
check "ib_isert, ib_iser and the RAM disk unload" modprobe -r ib_isert ib_iser brd
# targetcli loads every backstore's module.
modprobe -r iscsi_target_mod target_core_iblock target_core_file \
	target_core_pscsi target_core_user target_core_mod 2>/dev/null ||
	echo "# still loaded: $(grep -oE "^(iscsi_target_mod|target_core_[a-z]+)" /proc/modules | tr '\n' ' ')"
kiwi_own_addr_dev_del kiwi0
check "kiwi unloads" modprobe -r kiwi
echo "# storage_iser.sh ran $((SECONDS - t0)) s"
tap_end
