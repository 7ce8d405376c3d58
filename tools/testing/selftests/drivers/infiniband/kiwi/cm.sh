#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The iWARP connection manager through rdma_cm: MPA exchange with private
# data both ways, accept and reject, disconnect, a refused and a silent
# peer, a listener that survives garbage, IPv4 and IPv6. Two namespaces,
# one kiwi device in each.
source "$(dirname "$0")/lib.sh"
tap_begin "connection manager"
T=$KIWI_TESTDIR/kiwi_cm

check "two hosts with a kiwi device each" kiwi_two_devs
KIWI_TIMEOUT=60

# run_pair NAME ADDR PORT MODE [PDATA_LEN]: server in kiwiB, client in
# kiwiA, their lines as comments (both exit 0 whatever the outcome).
run_pair() {
	KIWI_SYNC=$out/$1.sync pair "$1" "$3" kiwiB "$T" server "$2" "$3" "$4" -- \
		kiwiA "$T" client "$2" "$3" ${5:+"$5"}
	sed "s/^/# $1 server: /" "$out/$1.srv"
	sed "s/^/# $1 client: /" "$out/$1.cli"
}

# Port counters of errors (kiwi.rst): snap_both before a case, moved
# after it checks that kiwi0's (the client's) and kiwi1's (the server's)
# moved by exactly CLIENT and SERVER (NAME or NAME=N words) and no other.
declare -A a0 a1 b0 b1 want
snap_both() {
	errc_snap a0 kiwi0
	errc_snap b0 kiwi1
}

# moved LABEL CLIENT SERVER
moved() {
	local bad
	errc_snap a1 kiwi0
	errc_snap b1 kiwi1
	errc_want want "$2"
	errc_diff a0 a1 want
	bad=${errc_bad:+ kiwi0:$errc_bad}
	errc_want want "$3"
	errc_diff b0 b1 want
	bad+=${errc_bad:+ kiwi1:$errc_bad}
	check "$1: error counters: kiwi0 ${2:-none}, kiwi1 ${3:-none}, no other${bad:+ (not:$bad)}" \
		test -z "$bad"
}

run_pair v4 192.0.2.2 7471 accept
check "server gets the client's private data" \
	grep -qx "request pdata=hello-from-client" "$out/v4.srv"
check "client is established with the server's private data" \
	grep -qx "established pdata=hello-from-server" "$out/v4.cli"
check "both QPs are in RTS once connected" \
	eval 'grep -qx "state RTS" "$out/v4.srv" && grep -qx "state RTS" "$out/v4.cli"'
check "client disconnect reaches the server, both see DISCONNECTED" \
	eval 'grep -qx disconnected "$out/v4.srv" && grep -qx disconnected "$out/v4.cli"'

snap_both
run_pair rej 192.0.2.2 7471 reject
check "reject reaches the client as REJECTED (ECONNREFUSED) with private data" \
	grep -qx "rejected status=-111 pdata=go-away" "$out/rej.cli"
moved reject mpa_reject_rcvd mpa_reject_sent

run_pair big 192.0.2.2 7471 accept 255
check "255 bytes of private data (rdma_cm's limit) arrive intact" \
	grep -qxE "request pdata=hello-from-clientx{238}" "$out/big.srv"

snap_both
KIWI_TIMEOUT=30 cli_run nolisten kiwiA "$T" client 192.0.2.2 7479
sed 's/^/# no listener: /' "$out/nolisten.cli"
check "no listener: REJECTED with ECONNREFUSED" \
	grep -qx "rejected status=-111 pdata=" "$out/nolisten.cli"
moved "no listener" cm_conn_err ""

# A TCP peer that never answers the MPA Request times the client out.
# Python starts slowly under emulation and load: srv_start waits for it.
KIWI_TIMEOUT=40 srv_start silent 7472 kiwiB python3 -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.0.2.2", 7472)); s.listen(1)
c, _ = s.accept(); time.sleep(30)'
snap_both
start=$SECONDS
KIWI_TIMEOUT=40 cli_run silent kiwiA "$T" client 192.0.2.2 7472
took=$((SECONDS - start))
moved "silent peer" mpa_timeout ""
srv_stop silent
sed 's/^/# silent peer: /' "$out/silent.cli"
check "a peer that never answers MPA: UNREACHABLE (ETIMEDOUT) after ~10 s (took ${took}s)" \
	eval 'grep -qx "error RDMA_CM_EVENT_UNREACHABLE status=-110" "$out/silent.cli" &&
	      [ $took -ge 9 ] && [ $took -le 30 ]'

# Garbage at a kiwi listener is dropped; the listener keeps serving. A
# connection that fails before RDMA mode is closed abortively (no linger:
# kiwi_cep_teardown), so the client reads a reset, never a FIN.
srv_start garb 7473 kiwiB "$T" server 192.0.2.2 7473 accept
snap_both
ip netns exec kiwiA python3 -c '
import socket
s = socket.create_connection(("192.0.2.2", 7473))
s.sendall(b"GET / HTTP/1.0\r\n\r\n" + bytes(range(64)))
s.settimeout(15)
try:
    print("closed" if s.recv(100) == b"" else "answered")
except socket.timeout:
    print("kept open")
except ConnectionResetError:
    print("reset")' >"$out/garb.py" 2>&1
sed 's/^/# garbage client: /' "$out/garb.py"
check "garbage instead of an MPA Request: the connection is reset" \
	grep -qx reset "$out/garb.py"
moved garbage "" mpa_frame_err
cli_run garb kiwiA "$T" client 192.0.2.2 7473
srv_end garb
check "the listener then accepts a proper client" \
	eval 'grep -qx "established pdata=hello-from-server" "$out/garb.cli" &&
	      grep -qx disconnected "$out/garb.srv"'

run_pair v6 2001:db8::2 7474 accept
check "IPv6: connect, private data, RTS and disconnect" \
	eval 'grep -qx "established pdata=hello-from-server" "$out/v6.cli" &&
	      grep -qx "state RTS" "$out/v6.srv" && grep -qx disconnected "$out/v6.srv"'

kiwi_two_hosts_del
check "devices go with the namespaces" \
	wait_for 20 eval 'ibdev_absent kiwi0 && ibdev_absent kiwi1'
kiwi_unload
check "module unloads after connections (nothing held)" test ! -e /sys/module/kiwi
tap_end
