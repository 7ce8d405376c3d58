#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A user process abuses the rings libkiwi shares with the kernel
# (kiwi_ringabuse, against its echo server in the other namespace):
# a REG_MR SQE written into the ring (V-ARCH-4, V-SEC-2); Send SQEs of
# more SGEs or inline bytes than the QP takes (V-SEC-16); a Send, a
# receive and an SRQ WQE naming a kernel PD's local_dma_lkey, which
# kiwi_ktest_lkey.ko holds (V-STAG0-3, V-SRQ-10); binds of a window, or
# over an MR, of another PD than the QP's (V-PD-5); then rounds of garbage
# SQEs, RQEs, CQEs and control words with doorbells rung, while another
# process's connection keeps echoing checked data (V-SEC-16). run_vm.sh
# checks the kernel log afterwards.
source "$(dirname "$0")/lib.sh"
tap_begin "user rings under abuse"

# Outputs under build/ so that the host can follow a run, the kernel log
# too (a wedged guest shows nothing else).
out=$KIWI_ROOT/build/test/ringabuse
rm -rf "$out" && mkdir -p "$out"
dmesg -w >"$out/dmesg.log" 2>&1 &
dmesg_pid=$!
T=$KIWI_TESTDIR/kiwi_ringabuse
ko=$KIWI_TESTDIR/kiwi_ktest/kiwi_ktest_lkey.ko
klk=/sys/module/kiwi_ktest_lkey/parameters
SRV=192.0.2.2

# run NAME PORT NCONN ARGS..: a server for NCONN connections and the client.
run() {
	local name=$1 port=$2 nconn=$3
	shift 3
	pair "$name" "$port" kiwiB "$T" server "$SRV" "$port" "$nconn" -- \
		kiwiA "$T" "$@"
	local rc=$?
	tap_import "" "$out/$name.cli"
	check "$name: client and server exited 0" test "$rc" -eq 0
}

# echoed NAME CONN N: the server echoed exactly N messages on connection CONN.
echoed() {
	grep -qx "# conn $2 echoed $3" "$out/$1.srv" ||
		{ sed "s/^/# $1 server: /" "$out/$1.srv"; return 1; }
}

check "two hosts with a kiwi device each" kiwi_two_devs
check "kiwi_ktest_lkey holds a kernel PD on kiwi0" insmod "$ko" dev=kiwi0
lkey=$(cat $klk/lkey)
buf=$(cat $klk/buf)
echo "# the kernel PD's local_dma_lkey 0x$(printf %x "$lkey"), its page at 0x$(printf %x "$buf")"

run regmr 7500 1 regmr "$SRV" 7500
check "regmr: the server echoed only the first message" echoed regmr 0 1

run badsqe 7506 2 badsqe "$SRV" 7506
check "badsqe: nothing went out for either: 1 echo on each connection" \
	eval 'echoed badsqe 0 1 && echoed badsqe 1 1'

run lkey 7501 2 lkey "$SRV" 7501 "$lkey" "$buf"
check "lkey: the Send naming local_dma_lkey put nothing on the wire: 1 echo" \
	echoed lkey 0 1
check "lkey: the second connection echoed its 2 messages" echoed lkey 1 2

run srq 7502 1 srq "$SRV" 7502 "$lkey" "$buf"

run bind 7505 3 bind "$SRV" 7505

check "rmmod kiwi_ktest_lkey" rmmod kiwi_ktest_lkey

# The bystander starts first and stops after the abuser is done.
rounds=${KIWI_RINGABUSE_ROUNDS:-12}
stop=$out/stop
KIWI_TIMEOUT=300
srv_start victim 7503 kiwiB "$T" server "$SRV" 7503 1
cli_run victim kiwiA "$T" victim "$SRV" 7503 "$stop" &
vc=$!
srv_start garbage 7504 kiwiB "$T" server "$SRV" 7504 "$rounds"
cli_run garbage kiwiA "$T" garbage "$SRV" 7504 "$rounds" 1234
grc=$?
touch "$stop"
srv_end garbage
gsrc=$?
wait $vc
vcrc=$?
srv_end victim
vsrc=$?
tap_import "" "$out/garbage.cli"
check "garbage: the abuser and its server exited 0 ($grc, $gsrc)" \
	eval '[ $grc -eq 0 ] && [ $gsrc -eq 0 ]'
tap_import "" "$out/victim.cli"
check "victim: the bystander and its server exited 0 ($vcrc, $vsrc)" \
	eval '[ $vcrc -eq 0 ] && [ $vsrc -eq 0 ]'
grep -h "^error" "$out"/*.cli "$out"/*.srv | head -5 | sed "s/^/# /"

no_leftovers() {
	{ kiwi_no_leftovers ringabuse kiwi0 pd mr cq qp srq cm_id &&
		kiwi_no_leftovers ringabuse kiwi1 pd mr cq qp srq cm_id; } | sed "s/^/# /"
	return "${PIPESTATUS[0]}"
}
check "nothing left on kiwi0 and kiwi1 (pd mr cq qp srq cm_id)" no_leftovers
kiwi_two_devs_del
kill "$dmesg_pid"
tap_end
