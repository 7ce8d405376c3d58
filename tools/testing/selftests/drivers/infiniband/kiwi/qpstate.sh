#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The QP state machine and work request rules (kiwi_qpstate): every
# modify_qp transition of an unconnected QP; then, between two namespaces,
# query_qp after connect, the RTS and SQD rows, inline/SGE limits, post
# lists, the Read fence, ORD queueing, unsignalled completions, graceful
# and abortive closes with their flushes, then the Terminates kiwi sends
# for a local error, Modify to SQE and a CQ overflow, with a second server
# for a connection that must outlive the overflow. The server's packets are
# dropped (netem on kvB) to hold a Read outstanding. Then RDMA Read
# resources (rdserver/rdclient: ORD 0, ORD lowered in RTS, many QPs).
# Last, a process killed with a
# connection and its objects open is cleaned up: nothing left, the peer
# sees the connection end, the module unloads.
source "$(dirname "$0")/lib.sh"
tap_begin "QP state machine and work requests"
Q=$KIWI_TESTDIR/kiwi_qpstate
rc=0

check "kiwi0 on a veth pair" kiwi_veth_dev kiwi0
tap_run "$Q" local kiwi0 || rc=1
kiwi_no_leftovers qpstate-local kiwi0 qp cq pd || rc=1
kiwi_veth_dev_del kiwi0

check "two hosts with a kiwi device each" kiwi_two_devs
KIWI_TIMEOUT=300
check "server listens" srv_start srv 7400 kiwiB "$Q" server 192.0.2.2 7400 7
check "second server listens" srv_start srv2 7402 kiwiB "$Q" server 192.0.2.2 7402 1
tap_run ip netns exec kiwiA timeout 300 env KIWI_PORT2=7402 "${KIWI_NETEM[@]}" \
	"$Q" client 192.0.2.2 7400 || rc=1
check "V-ST-E2: server: 7 connections ended with DISCONNECTED, QP in ERR, receives flushed" \
	srv_end srv
sed 's/^/# /' "$out/srv.srv"
check "V-ERR-8: second server: its connection ended with DISCONNECTED, QP in ERR, receives flushed" \
	srv_end srv2
sed 's/^/# /' "$out/srv2.srv"
kiwi_no_leftovers qpstate kiwi0 qp cq mr pd || rc=1

# RDMA Read resources: ORD 0 fails a Read and the QP, ORD lowered in RTS,
# and many QPs with a Read outstanding on each at once.
tap_pair read-resources 7410 \
	kiwiB env KIWI_BLOCKED="tc qdisc show dev kvB | grep -q netem" \
		"$Q" rdserver 192.0.2.2 7410 -- \
	kiwiA env "${KIWI_NETEM[@]}" "$Q" rdclient 192.0.2.2 7410 || rc=1
kiwi_no_leftovers qpstate-rd kiwi0 qp cq mr pd || rc=1

# A process killed while connected, with a PD, MR, CQs and a QP open.
KIWI_TIMEOUT=120
check "server listens" srv_start kill 7401 kiwiB "$Q" server 192.0.2.2 7401 1
ip netns exec kiwiA "$Q" hold 192.0.2.2 7401 >"$out/hold" 2>&1 &
hpid=$!
check "a client connects and holds its objects" wait_for 60 grep -q connected "$out/hold"
kill -KILL $hpid
# Gone, not stuck in its exit: a zombie (or nothing) is what must be left.
check "SIGKILLed client: the process exits" \
	wait_for 30 eval "[ ! -d /proc/$hpid ] || grep -q '^State:.*Z' /proc/$hpid/status"
check "SIGKILLed client: the server saw DISCONNECTED, its QP in ERR, receives flushed" \
	srv_end kill
sed 's/^/# /' "$out/kill.srv"
check "SIGKILLed client: no QP, CQ, MR, PD or cm_id left on kiwi0" \
	wait_for 20 eval 'kiwi_no_leftovers kill kiwi0 qp cq mr pd cm_id >/dev/null'
kiwi_two_hosts_del
wait_for 20 eval 'ibdev_absent kiwi0 && ibdev_absent kiwi1'
check "the module unloads" modprobe -r kiwi
[ $rc -eq 0 ] || not_ok "kiwi_qpstate reported failures"
tap_end
