#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The remote peer is untrusted. kiwi_evilpeer (beside it), a raw TCP
# peer, negotiates MPA with a kiwi device behind rdma_cm (kiwi_terminate)
# and sends one malformed frame; each must end in the right Terminate -
# Layer/EType/Error Code, M/D/R flags, the offending headers echoed byte
# for byte - sent once and followed by the connection's close, or in a
# plain close before RDMA mode. The server must see its QP in ERR, its
# posted receives flushed, no memory touched, and the listener must then
# serve a good connection: every case goes to one listener, and the control
# case, which moves and checks data, runs first, after each case that never
# reaches RDMA mode, and last.
#
# Codes: RFC 5040 Fig. 9/10 (digest IDs R-*, shared/spec/digest-rdmap.md),
# RFC 5041 DDP codes (digest section 2.3), RFC 5044 MPA codes (2.4), and
# where the RFCs leave a choice, the RDMAC Verbs' Fig. 24 ("RDMAC 0xNNNN").
source "$(dirname "$0")/lib.sh"
shopt -s extglob
tap_begin "malicious peer: Terminate matrix"
P=$KIWI_TESTDIR/kiwi_evilpeer
S=$KIWI_TESTDIR/kiwi_terminate

kiwi_unload
check "two hosts, kiwi1 in kiwiB" eval 'modprobe kiwi && kiwi_two_hosts &&
	ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvB'
PORT=7700
# Starting a process costs up to seconds in the emulated VM: per case, only
# the peer runs; everything else here is a shell builtin. The peer enters
# kiwiA itself (-N) and has its own timeouts.

# One server for every case: the listener must outlive all of them.
KIWI_TIMEOUT=1200 check "server listens" srv_start term $PORT kiwiB "$S" 192.0.2.2 $PORT 0
nsum=0
names=(/sys/class/infiniband/kiwi1/ports/1/hw_counters/!(lifespan))
names=("${names[@]##*/}")
check "kiwi1's port counters: ${#KIWI_PERFC[@]} of performance, ${#KIWI_ERRC[@]} of errors" \
	test "$(printf '%s\n' "${names[@]}" | sort)" = \
	"$(printf '%s\n' "${KIWI_PERFC[@]}" "${KIWI_ERRC[@]}" | sort)"

# What the server reports for a good connection the client closed.
GOOD="async=none flushed=1 recv_ok=1 state=ERR mem=written rst=0"
# ... and for one that failed: QP in ERR, both receives flushed, no memory
# written (the offending data placed nowhere), and kiwi's socket closed
# with a FIN, no reset, so that the Terminate is delivered (R-TRM-5).
FATAL="async=QP_FATAL flushed=2 recv_ok=0 state=ERR mem=intact rst=0"
ACCESS="async=QP_ACCESS_ERR flushed=2 recv_ok=0 state=ERR mem=intact rst=0"

# kiwi1's port counters of errors (kiwi.rst, "Port counters"): around
# each case every one is read (builtins only), and each must have moved
# by exactly what the case caused - most are named with the case, in $E;
# flushes and async events are what the server itself saw - and the rest
# not at all.
declare -A c0 c1
E=

# counters_moved LABEL SUMMARY: c0 -> c1 moved by $E (NAME or NAME=N,
# N defaulting to 1) plus what the server's SUMMARY line reports: its
# flushed receives and sends, its async events, its sends that completed
# in error (cqe_err); every other error counter stayed. Flushes the
# summary does not show (sends outside the local cases) are in $E.
counters_moved() {
	local -A want=()
	local w sends
	errc_want want "$E"
	[[ $2 =~ flushed=([0-9]+) ]] &&
		want[cqe_flush_err]=$((want[cqe_flush_err] + BASH_REMATCH[1]))
	[[ $2 =~ sends=([A-Z_,-]+) ]] && sends=${BASH_REMATCH[1]} || sends=
	for w in ${sends//,/ }; do
		case $w in
		FLUSH) want[cqe_flush_err]=$((want[cqe_flush_err] + 1)) ;;
		OK | ERR | SQE*) ;;
		*) want[cqe_err]=$((want[cqe_err] + 1)) ;;
		esac
	done
	[[ $2 =~ async=([A-Z_,]+) ]] && for w in ${BASH_REMATCH[1]//,/ }; do
		case $w in
		QP_FATAL) want[qp_fatal_event]=$((want[qp_fatal_event] + 1)) ;;
		QP_ACCESS_ERR) want[qp_access_event]=$((want[qp_access_event] + 1)) ;;
		esac
	done
	errc_diff c0 c1 want
	if [ -z "$errc_bad" ]; then
		ok "$1: error counters moved by${E:+ $E,} the server's flushes and events, no other"
	else
		not_ok "$1: error counters moved by${E:+ $E,} the server's flushes and events, no other"
		echo "# $1 counters:$errc_bad"
	fi
}

# comment PREFIX FILE: FILE's lines as TAP comments.
comment() {
	local l
	while IFS= read -r l; do echo "# $1: $l"; done <"$2"
}

# next_summary: $got becomes the server's report of its next connection,
# once it is in (empty after a minute without it).
next_summary() {
	local deadline=$((SECONDS + 60)) l n
	nsum=$((nsum + 1))
	got=
	while [ $SECONDS -lt $deadline ]; do
		n=0
		while IFS= read -r l; do
			[[ $l == summary* ]] && n=$((n + 1))
			[ $n -eq $nsum ] && { got=$l; return; }
		done <"$out/term.srv"
		nap 0.2
	done
}

# evil CASE PEER-RESULT SERVER-SUMMARY WHY [PEER-OPTIONS...]: the peer
# runs CASE and must see PEER-RESULT; the server must report
# SERVER-SUMMARY for the connection. "-": the connection must never reach
# the server, and a control client after it must be served.
evil() {
	local case=$1 want=$2 srv=$3 why=$4 label prc crc
	shift 4
	label=$case${*:+ $*}
	errc_snap c0 kiwi1
	"$P" -N kiwiA -e "$want" "$@" 192.0.2.2 $PORT "$case" >"$out/peer" 2>&1
	prc=$?
	comment "$label peer" "$out/peer"
	check "$label: $want ($why)" test $prc -eq 0
	if [ "$srv" = - ]; then
		"$P" -N kiwiA -e "reply verified" 192.0.2.2 $PORT control \
			>"$out/ctl" 2>&1
		crc=$?
		next_summary
		if [ $crc -eq 0 ] && [ "$got" = "summary case=control $GOOD" ]; then
			ok "$label: never reaches the server, which then serves a good connection"
		else
			not_ok "$label: never reaches the server, which then serves a good connection"
			comment "$label control" "$out/ctl"
			echo "# $label server: $got"
		fi
		errc_snap c1 kiwi1
		counters_moved "$label" "$got"
	else
		next_summary
		# SERVER-SUMMARY is a pattern (extglob): "@(OK|FLUSH)"
		if [[ $got == "summary case=$case "$srv ]]; then
			ok "$label: server: $srv"
		else
			not_ok "$label: server: $srv"
			echo "# $label server: $got"
		fi
		errc_snap c1 kiwi1
		counters_moved "$label" "$got"
	fi
}

# Control: valid traffic in each negotiation the peer can ask for. Write,
# Read it back (R-ORD-12), zero-length Read with a bogus source (R-RRQ-14),
# Send; the server checks the Write landed before the Send (R-ORD-10).
evil control "reply verified" "$GOOD" "MPA rev 2, IRD/ORD"
evil control "reply verified" "$GOOD" "MPA rev 1" -r 1
evil control "reply verified" "$GOOD" "MPA CRC on" -c
evil control "reply verified" "$GOOD" "RFC 6581 RTR Write" -t write
evil control "reply verified" "$GOOD" "RFC 6581 RTR Read" -t read

# Before RDMA mode there is no Terminate: the responder closes (RFC 5044
# section 7.1, D-MPA; R-INIT-2), or rejects a frame it understands.
E="mpa_frame_err" evil mpa-garbage closed - "no MPA Request"
E="mpa_frame_err" evil mpa-badkey closed - "wrong key"
E="mpa_frame_err" evil mpa-badrev closed - "revision 3"
E="mpa_frame_err" evil mpa-rev0 closed - "revision 0"
E="mpa_frame_err" evil mpa-pdlen closed - "PD_Length over 512"
E="mpa_frame_err" evil mpa-rflag closed - "Reject flag in a Request"
E="mpa_negotiation_err mpa_reject_sent" evil mpa-markers rejected - "markers: refused with an MPA Reply, R set"

# MPA framing (LLP, Layer 2 - or DDP where no DDP segment can be found).
E="rx_fpdu_len_err term_sent" evil fpdu-short "term 1/0/00 -" "$FATAL" \
	"ULPDU shorter than a DDP header: RDMAC 0x1000 segment size invalid, R-TCODE-19"
evil fpdu-truncated closed \
	"async=none flushed=2 recv_ok=0 state=ERR mem=intact rst=0" \
	"FIN inside an FPDU: the Send is never delivered, R-ORD-4, R-TD-3"
E="rx_ddp_too_long term_sent" evil fpdu-oversized "term 1/2/05 md" "$FATAL" \
	"ULPDU_Length 65535 for a 4 KiB receive: caught at the header, R-SND-9"
E="rx_crc_err term_sent" evil crc-bad "term 2/0/02 -" "$FATAL" "MPA CRC error, R-TCODE-18, R-TCODE-23" -c
# RDMA Writes whose payload lost a bit after the CRC was computed: the
# target region must keep its pattern byte for byte (RFC 5044 section 6:
# the CRC is verified before the ULPDU goes to DDP), whether the FPDU
# arrives in one piece or in three, 200 ms apart. The good split Writes
# must land whole (read back, then the control case's check).
E="rx_crc_err term_sent" evil crc-write "term 2/0/02 -" "$FATAL" \
	"1 KiB Write, a payload bit flipped after its CRC: nothing placed" -c
E="rx_crc_err term_sent" evil crc-write-split "term 2/0/02 -" "$FATAL" \
	"16000-byte Write in three pieces, a bit flipped: nothing placed" -c
HELD=/sys/class/infiniband/kiwi1/ports/1/hw_counters/rx_crc_held_bytes
held=$(cat "$HELD")
evil crc-split "reply verified" "$GOOD" \
	"valid 16000-byte Writes in three pieces each land whole" -c
# Of each 16020-byte FPDU the first two pieces (10664 payload bytes) came
# before its trailer: placed from the hold buffer, counted there.
held=$(($(cat "$HELD") - held))
check "crc-split: $held payload bytes waited for their CRC (2 x 10664 at least)" \
	test "$held" -ge 21328

# RDMAP and DDP control fields.
E="rx_rdmap_opcode_err term_sent" evil opcode-unknown "term 0/2/06 md" "$FATAL" "R-HDR-15, R-VAL-2"
E="rx_rdmap_opcode_err term_sent" evil opcode-tflag "term 0/2/06 md" "$FATAL" "T flag against Fig. 4, R-HDR-13"
E="rx_rdmap_version_err term_sent" evil rdmap-version "term 0/2/05 md" "$FATAL" "R-HDR-7, R-VAL-3"
E="rx_ddp_version_err term_sent" evil ddp-version "term 1/2/06 md" "$FATAL" "untagged, R-VAL-1"
E="rx_ddp_version_err term_sent" evil ddp-version-tagged "term 1/1/04 md" "$FATAL" "tagged, R-VAL-1"

# Tagged (RDMA Write) placement: DDP tagged buffer errors (D-DDP-14).
E="rx_ddp_bounds_err term_sent" evil write-bounds "term 1/1/01 md" "$ACCESS" "R-SEC-3"
E="rx_ddp_bounds_err term_sent" evil write-below "term 1/1/01 md" "$ACCESS" "R-SEC-3"
E="rx_ddp_bounds_err term_sent" evil write-wrap "term 1/1/03 md" "$ACCESS" "R-VAL-12, D-DDP-12"
E="rx_ddp_inv_stag term_sent" evil write-badstag "term 1/1/00 md" "$ACCESS" "no such STag"
E="rx_ddp_inv_stag term_sent" evil write-stag0 "term 1/1/00 md" "$ACCESS" "STag 0 is never valid"
E="rx_ddp_inv_stag term_sent" evil write-badkey "term 1/1/00 md" "$ACCESS" "right index, wrong key"
E="rx_ddp_access_err term_sent" evil write-foreign "term 1/1/02 md" "$ACCESS" "other PD, R-SEC-1"
E="rx_ddp_access_err term_sent" evil write-noaccess "term 1/1/02 md" "$ACCESS" \
	"no remote write: RDMAC 0x1102 access rights, R-AMB-6, R-SEC-5"

# RDMA Read Requests: RDMAP protection errors echo the 28-byte header.
E="rx_rdmap_inv_stag term_sent" evil read-badstag "term 0/1/00 mdr" "$ACCESS" "R-VAL-8, R-RRQ-10, R-HDR-27"
E="rx_rdmap_access_err term_sent" evil read-foreign "term 0/1/03 mdr" "$ACCESS" "R-VAL-9, R-SEC-1"
E="rx_rdmap_access_err term_sent" evil read-noaccess "term 0/1/02 mdr" "$ACCESS" "R-VAL-13"
E="rx_rdmap_bounds_err term_sent" evil read-bounds "term 0/1/01 mdr" "$ACCESS" "R-VAL-11"
E="rx_rdmap_bounds_err term_sent" evil read-wrap "term 0/1/04 mdr" "$ACCESS" "R-VAL-12"
E="rx_ird_overflow term_sent" evil read-ird "term 1/2/03 md" "$FATAL" \
	"beyond IRD 1: RDMAC 0x1203 too many Read Requests, R-RRQ-15, R-INIT-7"
E="rx_rdmap_op_err term_sent" evil read-long "term 0/2/ff md" "$FATAL" "R-HDR-14, R-AMB-14"
E="rx_rdmap_op_err term_sent" evil read-short "term 0/2/ff md" "$FATAL" "R-HDR-21, R-AMB-14"

# Untagged (Send) placement: DDP untagged buffer errors.
E="rx_no_recv_buf term_sent" evil send-norecv "term 1/2/02 md" \
	"async=QP_FATAL flushed=0 recv_ok=0 state=ERR mem=intact rst=0" \
	"no receive posted, R-SND-11, P-TR-6" -n 0
E="rx_ddp_inv_qn term_sent" evil send-qn "term 1/2/01 md" "$FATAL" "queue number 3, R-HDR-18"
E="rx_ddp_inv_msn term_sent" evil send-msn "term 1/2/03 md" "$FATAL" "R-HDR-19"
E="rx_ddp_inv_mo term_sent" evil send-mo "term 1/2/04 md" "$FATAL" "R-HDR-20"
E="rx_ddp_too_long term_sent" evil send-toolong "term 1/2/05 md" "$FATAL" "R-SND-9"
E="rx_rdmap_access_err term_sent" evil sendinv-foreign "term 0/1/03 md" "$ACCESS" "R-INV-1, R-VAL-5"
E="rx_inval_err term_sent" evil sendinv-user-mr "term 0/1/09 md" "$ACCESS" \
	"only fast-register MRs are invalidated, R-INV-1, R-AMB-3"
E="rx_rdmap_inv_stag term_sent" evil sendinv-badstag "term 0/1/00 md" "$ACCESS" "R-VAL-4"
E="rx_resp_err term_sent" evil readresp-unsolicited "term 0/2/06 md" "$FATAL" "R-RRS-7"

# RFC 7306 toward kiwi, in the order kiwi checks (kiwi.rst, "Atomics and
# immediate data"): nothing is carried out, nothing completes at the
# server. An Atomic Response answers no request; the Atomic Request's
# code, then its STag and access, then its alignment; Immediate Data is
# exactly 8 bytes, and one marked for the Send behind it may not follow
# another.
E="rx_resp_err term_sent" evil atomic-resp-unsolicited "term 0/2/06 md" "$FATAL" \
	"Atomic Response with nothing outstanding: Unexpected OpCode"
E="rx_rdmap_op_err term_sent" evil atomic-badcode "term 0/2/ff md" "$FATAL" \
	"Atomic Operation code 1: Remote Operation Error, Unspecified"
E="rx_rdmap_inv_stag term_sent" evil atomic-badstag "term 0/1/00 md" "$ACCESS" "Invalid STag"
E="rx_rdmap_access_err term_sent" evil atomic-noaccess "term 0/1/02 md" "$ACCESS" \
	"region without IBV_ACCESS_REMOTE_ATOMIC: access rights"
E="rx_rdmap_op_err term_sent" evil atomic-misaligned "term 0/2/07 md" "$FATAL" \
	"Tagged Offset not 8-byte aligned: Catastrophic error localized to the RDMAP Stream (RFC 7306 8.2)"
E="rx_rdmap_op_err term_sent" evil imm-long "term 0/2/ff md" "$FATAL" "12-byte Immediate Data"
E="rx_rdmap_op_err term_sent" evil imm-short "term 0/2/ff md" "$FATAL" "4-byte Immediate Data with SE"
E="rx_rdmap_op_err term_sent" evil imm-twice "term 0/2/ff md" "$FATAL" \
	"a second Immediate Data for the Send before the Send"

# A Terminate from the peer is delivered, never answered (R-TRM-2, R-TRM-7).
E="term_rcvd" evil peer-terminate closed "$FATAL" "R-TRM-7"

# The server fails its own QP (V-CS-3): the failed WR completes with its
# error, the rest flush, its QP raises no async event (V-ST-T7), and the
# peer gets the Terminate in place of the WR, after whole FPDUs (V-TERM-5):
# Local Catastrophic, RDMAP layer, header bits zero. kiwi checks every SGE
# before a message's first segment, so a bad second SGE of a 64 KiB Send
# sends none of it (V-TERM-2). A CQ overflow sends RDMAC Fig. 24's 0x0207
# and raises QP_FATAL (V-ERR-7, V-TERM-7).
LOCAL="async=none flushed=2 recv_ok=0 state=ERR mem=intact rst=0"
E="cqe_loc_prot_err term_sent" evil local-lkey "term 0/0/00 -" "$LOCAL sends=OK,LOC_PROT_ERR,FLUSH" \
	"64 KiB Send, bad lkey in SGE 2: Local Catastrophic 0x0000" -t write
E="cqe_mw_bind_err term_sent" evil local-bind "term 0/0/00 -" "$LOCAL sends=OK,MW_BIND_ERR,FLUSH" \
	"refused window bind: Local Catastrophic 0x0000, V-AMB-7" -t write
E="term_sent" evil local-sqe "term 0/0/00 -" "$LOCAL sends=OK,SQE" \
	"Modify RTS -> SQE: Local Catastrophic 0x0000, V-ST-R6, V-LLP-8" -t write
evil local-bindok "reply after" \
	"async=none flushed=2 recv_ok=0 state=ERR mem=intact rst=0 sends=OK,OK,OK,OK" \
	"V-WR-9: a window Bind and Local Invalidate between two Sends send nothing" -t write
evil local-err reset "async=none flushed=2 recv_ok=0 state=ERR mem=intact rst=1 sends=OK,ERR" \
	"V-ST-R10, V-LLP-6: Modify RTS -> ERR: after \"before\", a reset and no Terminate" -t write
evil local-drain closed "async=none flushed=2 recv_ok=0 state=ERR mem=intact rst=0 sends=OK,ERR" \
	"rdma_disconnect, then Modify SQD -> ERR as ib_drain_qp does, nothing left to send: the FIN, no reset" -t write
evil local-sqd "send 1048576 last fin" "async=none flushed=2 recv_ok=0 state=ERR mem=intact rst=0 sends=OK,OK" \
	"V-TERM-4: 1 MiB Send, then Modify to SQD: the whole message in whole FPDUs, then the FIN" -c -t write
# The 1 MiB Send completes OK when all of it went out before the modify
# to SQE stopped the send queue, FLUSH when the modify came first (and
# its FPDUs so far went whole): the two race, as they may (V-TERM-4); the
# peer's part, whole FPDUs then the Terminate, holds either way.
E="term_sent" evil local-sqe-big "segments, term 0/0/00 -" "$LOCAL sends=OK,SQE,@(OK|FLUSH)" \
	"V-TERM-4: 1 MiB Send, then Modify to SQE: whole FPDUs, then the Terminate" -c -t write
E="cq_overflow term_sent" evil local-cqof "term 0/2/07 -" \
	"async=QP_FATAL flushed=0 recv_ok=0 state=ERR mem=intact rst=0 sends=OK,OK" \
	"CQ overflow: RDMAC 0x0207, header bits zero" -n 0 -t write
E="cq_overflow term_sent" evil local-rcqof "term 0/2/07 -" \
	"async=QP_FATAL flushed=0 recv_ok=1 state=ERR mem=intact rst=0 sends=OK" \
	"CQ overflow by receive completions: RDMAC 0x0207" -t write

# RFC 5044: without an RTR, the MPA responder sends nothing before the
# initiator's first FPDU (the cases above offer one: their server sends
# first, after our RTR).
QUIET="async=none flushed=1 recv_ok=1 state=ERR mem=intact rst=0 sends=OK"
evil local-quiet "reply before" "$QUIET" \
	"no RTR: the server's Send \"before\" waits for our first Send"

# V-TERM-8: of two bad segments delivered together, the first decides:
# one Terminate, echoing the first one's header (a Write to no STag, not
# the Write across rw's end behind it).
E="rx_ddp_inv_stag term_sent" evil two-bad "term 1/1/00 md" "$ACCESS" "V-TERM-8: two bad Writes in one TCP segment"
# V-TERM-1: an invalid Send while the device streams a 1 MiB Read Response
# into our small window: whole, valid FPDUs (MPA CRC checked), then the
# Terminate, then nothing.
E="rx_rdmap_opcode_err term_sent" evil term-stream "term 0/2/06 md" "$FATAL" \
	"V-TERM-1: the Terminate follows the last whole Read Response FPDU" -c

# How a connection ends (RDMAC verbs, digest-verbs.md). A reset from the
# peer fails the QP with an event and no Terminate; a FIN with work
# outstanding is a Bad LLP Close, RDMAC 0x0207 (RFC 5040 Catastrophic
# Error, localized to RDMAP Stream).
E="llp_reset" evil rst reset-sent \
	"async=QP_FATAL flushed=2 recv_ok=0 state=ERR mem=intact rst=0" \
	"V-LLP-12, V-ERR-4: a reset in RTS: ERR and QP_FATAL, no Terminate"
E="llp_bad_close term_sent cqe_flush_err" evil fin-read "term 0/2/07 -" "$FATAL" \
	"V-ST-R4, V-LLP-11: FIN with the server's Read outstanding, Bad LLP Close" -t write
E="llp_bad_close term_sent" evil fin-readreq "term 0/2/07 -" "$FATAL" \
	"V-ERR-5: FIN while the server answers our Read, Bad LLP Close"
E="rx_ddp_inv_stag term_sent" evil write-badstag "term 1/1/00 md" "$ACCESS" \
	"V-ST-T5: we reset right after the Terminate" -k

# srv_said CASE TEXT: the server printed the line TEXT for connection CASE.
srv_said() {
	sed -n "/^established case=$1\$/,/^summary case=$1 /p" "$out/term.srv" |
		grep -qxF "$2"
}

# Peers that stop reading, or break a close; each ends within the LLP
# timeout (module parameter llp_timeout) in a reset: the stream reset, the
# QP in ERR, then the event (V-ST-C7: the server reads the event with the
# QP in ERR and the reset sent).
LOST="async=QP_FATAL flushed=2 recv_ok=0 state=ERR mem=intact rst=1"
T=/sys/module/kiwi/parameters/llp_timeout
check "llp_timeout defaults to 30 s and takes 5" \
	eval '[ "$(cat $T)" = 30 ] && echo 5 >$T && [ "$(cat $T)" = 5 ]'
E="rx_rdmap_op_err llp_timeout" evil term-stall reset "async=QP_FATAL,QP_FATAL flushed=2 recv_ok=0 state=ERR mem=intact rst=1" \
	"V-ST-T1, V-ST-T5, V-LLP-8: an undeliverable Terminate ends in a reset"
# One reset when the QP fails (srv_said below checks it then); by the
# summary the server's TCP may have answered a late segment of the peer's
# with one more (seen once on the debug kernel), which is TCP's, not kiwi's.
E="llp_timeout cqe_flush_err" evil close-read-stall reset "${LOST%rst=1}rst=[12]" \
	"V-SEC-6, V-ST-C6: SQD held by a Read never answered ends in a reset"
check "close-read-stall: reset, then ERR, then the event (V-ST-C7)" \
	srv_said close-read-stall "async QP_FATAL state=ERR rst=1"
# After our FIN: only the peer's FIN may come. A long timeout, so that
# only the data can end these within the peer's 30 s.
echo 60 >$T
E="llp_data_after_fin" evil send-after-fin reset "$LOST" \
	"V-ST-C2, V-ST-C6: a Send after our FIN is not placed, the QP fails" -w 30
check "send-after-fin: reset, then ERR, then the event (V-ST-C7)" \
	srv_said send-after-fin "async QP_FATAL state=ERR rst=1"
E="llp_data_after_fin" evil readresp-after-fin reset "$LOST" \
	"V-AMB-26: a Read Response after our FIN is not placed, the QP fails" -w 30
# The server floods a peer that reads nothing, then closes: posting never
# waits for the peer (V-POST-2) and the close ends within the timeout.
echo 20 >$T
E="llp_timeout cqe_flush_err=12" evil flood-stall reset "$LOST" "V-SEC-6: a close behind sends the peer never reads"
posted=$(sed -n "/^established case=flood-stall\$/,/^summary case=flood-stall /s/^posted //p" "$out/term.srv")
echo "# flood-stall server: posted $posted (llp_timeout 20 s)"
check "V-POST-2: ibv_post_send returns at once with the peer's window full" \
	eval '[[ $posted =~ ^12\ slowest_ms=([0-9]+)$ ]] &&
	      [ "${BASH_REMATCH[1]}" -lt 10000 ]'
echo 30 >$T

evil control "reply verified" "$GOOD" "the listener outlived every case"
# rdma statistic shows the same counters, with the same values.
errc_snap c0 kiwi1
stat=$(rdma statistic show link kiwi1/1)
bad=
for n in "${KIWI_ERRC[@]}"; do
	[[ " $stat " =~ \ $n\ ([0-9]+)\  ]] && [ "${BASH_REMATCH[1]}" = "${c0[$n]}" ] ||
		bad+=" $n"
done
check "rdma statistic show link kiwi1/1: every error counter, as in sysfs${bad:+ (not:$bad)}" \
	test -z "$bad"
echo "# $stat"
srv_stop term
grep -vE '^(listening|request|established|recv len|summary)' "$out/term.srv" | sed 's/^/# server: /'

kiwi_two_hosts_del
check "the device goes with its namespace" wait_for 20 ibdev_absent kiwi1
kiwi_unload
check "module unloads after all that (nothing held)" test ! -e /sys/module/kiwi
tap_end
