#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kiwi's tracepoints (kiwi_trace.h, /sys/kernel/tracing/events/kiwi/)
# fire with the right fields in real connections: kiwi_evilpeer, a raw TCP
# peer in kiwiA, connects to kiwi_terminate's rdma_cm server on kiwi1 in
# kiwiB (as terminate.sh does) and
#   - moves data in MPA revision 2 and 1, with and without the CRC and an
#     RFC 6581 RTR: the connection manager's events with the addresses,
#     the MPA result (revision, CRC, RTR, IRD/ORD) and the QP's states;
#   - writes to an STag that does not exist: the Terminate kiwi sends
#     (DDP, tagged buffer, invalid STag, M and D set) and the receives it
#     flushes (error completions);
#   - sends a Terminate: the one kiwi receives;
#   - makes the server post a Send with a bad lkey: its error completion
#     (Local Protection Error) and kiwi's Local Catastrophic Terminate.
# With the events disabled a connection traces nothing.
source "$(dirname "$0")/lib.sh"
tap_begin "tracepoints"
P=$KIWI_TESTDIR/kiwi_evilpeer
S=$KIWI_TESTDIR/kiwi_terminate
PORT=7900
T=/sys/kernel/tracing

mountpoint -q $T || mount -t tracefs nodev $T 2>/dev/null
kiwi_unload
check "two hosts, kiwi1 in kiwiB" eval 'modprobe kiwi && kiwi_two_hosts &&
	ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvB'
for e in qp_state cm_event mpa terminate cqe_error; do
	check "event kiwi:kiwi_$e exists" test -d $T/events/kiwi/kiwi_$e
done
echo 0 >$T/tracing_on
echo >$T/trace
echo 1 >$T/events/kiwi/enable
echo 1 >$T/tracing_on

KIWI_TIMEOUT=600 check "server listens" srv_start term $PORT kiwiB "$S" 192.0.2.2 $PORT 0

# traced CASE WANT [PEER-OPTIONS...]: the peer runs CASE, expecting WANT;
# then the trace (emptied first) is in $out/trace once the server has
# reported the connection (its summary line).
nsum=0
traced() {
	local case=$1 want=$2
	shift 2
	echo >$T/trace
	"$P" -N kiwiA -e "$want" "$@" 192.0.2.2 $PORT "$case" >"$out/peer" 2>&1 ||
		sed 's/^/# peer: /' "$out/peer"
	nsum=$((nsum + 1))
	wait_for 30 eval '[ "$(grep -c "^summary" "$out/term.srv")" -ge $nsum ]'
	grep -E ' kiwi_[a-z_]+: ' $T/trace >"$out/trace"
}

# has WHY REGEX: one point: a line of the trace matches REGEX.
has() {
	if grep -qE -- "$2" "$out/trace"; then
		ok "$1"
	else
		not_ok "$1"
		echo "# no line matches: $2"
		sed 's/^/#   /' "$out/trace" | tail -20
	fi
}

addr='local=192\.0\.2\.2:'"$PORT"' remote=192\.0\.2\.1:[0-9]+'
traced control "reply verified"
has "cm_event: CONNECT_REQUEST with IRD/ORD and both addresses" \
	"kiwi_cm_event: dev=kiwi1 CONNECT_REQUEST status=0 ird=[0-9]+ ord=[0-9]+ pdata=[0-9]+ $addr\$"
has "mpa: the responder's result, revision 2, no CRC, no large FPDUs (not offered), no RTR" \
	'kiwi_mpa: dev=kiwi1 qpn=[0-9]+ responder rev=2 crc=0 large_fpdus=0 rtr=none ird=[0-9]+ ord=[0-9]+$'
has "qp_state: the server's QP enters RTS" \
	'kiwi_qp_state: dev=kiwi1 qpn=[0-9]+ (INIT|RTR) -> RTS$'
has "cm_event: ESTABLISHED" "kiwi_cm_event: dev=kiwi1 ESTABLISHED status=0 .*$addr\$"
has "cm_event: the close (DISCONNECT or CLOSE)" 'kiwi_cm_event: dev=kiwi1 (DISCONNECT|CLOSE) '
has "qp_state: the QP leaves RTS at the close" 'kiwi_qp_state: dev=kiwi1 qpn=[0-9]+ RTS -> (SQD|ERR)$'

traced control "reply verified" -r 1
has "mpa: revision 1 when the peer asks for it" \
	'kiwi_mpa: dev=kiwi1 qpn=[0-9]+ responder rev=1 crc=0 large_fpdus=0 rtr=none '
traced control "reply verified" -c -t write
has "mpa: the CRC and an RTR Write when the peer asks for them" \
	'kiwi_mpa: dev=kiwi1 qpn=[0-9]+ responder rev=2 crc=1 large_fpdus=0 rtr=write '

traced write-badstag "term 1/1/00 md"
has "terminate: sent, DDP tagged buffer error, invalid STag, M and D" \
	'kiwi_terminate: dev=kiwi1 qpn=[0-9]+ sent layer=1 etype=1 ecode=0x00 m=1 d=1 r=0$'
has "cqe_error: a receive flushed (IB_WC_RECV 128, IB_WC_WR_FLUSH_ERR 5)" \
	'kiwi_cqe_error: dev=kiwi1 qpn=[0-9]+ wr_id=0x[0-9a-f]+ opcode=128 status=5$'
has "qp_state: RTS -> ERR after the Terminate" 'kiwi_qp_state: dev=kiwi1 qpn=[0-9]+ RTS -> ERR$'

traced peer-terminate closed
has "terminate: received, RDMAP remote operation error 0xff, no headers" \
	'kiwi_terminate: dev=kiwi1 qpn=[0-9]+ received layer=0 etype=2 ecode=0xff m=0 d=0 r=0$'
check "terminate: none sent in answer to it" eval '! grep -q " sent layer=" "$out/trace"'

traced local-lkey "term 0/0/00 -" -t write
has "cqe_error: the Send with a bad lkey (IB_WC_SEND 0, IB_WC_LOC_PROT_ERR 4)" \
	'kiwi_cqe_error: dev=kiwi1 qpn=[0-9]+ wr_id=0x[0-9a-f]+ opcode=0 status=4$'
has "terminate: sent, Local Catastrophic, no headers" \
	'kiwi_terminate: dev=kiwi1 qpn=[0-9]+ sent layer=0 etype=0 ecode=0x00 m=0 d=0 r=0$'

echo 0 >$T/events/kiwi/enable
traced control "reply verified"
check "disabled, a whole connection traces nothing" test ! -s "$out/trace"

srv_stop term
echo >$T/trace
kiwi_two_hosts_del
check "the device goes with its namespace" wait_for 20 ibdev_absent kiwi1
kiwi_unload
check "module unloads" test ! -e /sys/module/kiwi
tap_end
