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
exec {nap}<> <(:)	# read -t on it: a sleep without a process

# One server for every case: the listener must outlive all of them.
KIWI_TIMEOUT=1200 check "server listens" srv_start term $PORT kiwiB "$S" 192.0.2.2 $PORT 0
nsum=0

# What the server reports for a good connection the client closed.
GOOD="async=none flushed=1 recv_ok=1 state=ERR mem=written rst=0"
# ... and for one that failed: QP in ERR, both receives flushed, no memory
# written (the offending data placed nowhere), and kiwi's socket closed
# with a FIN, no reset, so that the Terminate is delivered (R-TRM-5).
FATAL="async=QP_FATAL flushed=2 recv_ok=0 state=ERR mem=intact rst=0"
ACCESS="async=QP_ACCESS_ERR flushed=2 recv_ok=0 state=ERR mem=intact rst=0"

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
		read -r -t 0.2 -u $nap
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
	else
		next_summary
		# SERVER-SUMMARY is a pattern (extglob): "@(OK|FLUSH)"
		if [[ $got == "summary case=$case "$srv ]]; then
			ok "$label: server: $srv"
		else
			not_ok "$label: server: $srv"
			echo "# $label server: $got"
		fi
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
evil mpa-garbage closed - "no MPA Request"
evil mpa-badkey closed - "wrong key"
evil mpa-badrev closed - "revision 3"
evil mpa-rev0 closed - "revision 0"
evil mpa-pdlen closed - "PD_Length over 512"
evil mpa-rflag closed - "Reject flag in a Request"
evil mpa-markers rejected - "markers: refused with an MPA Reply, R set"

# MPA framing (LLP, Layer 2 - or DDP where no DDP segment can be found).
evil fpdu-short "term 1/0/00 -" "$FATAL" \
	"ULPDU shorter than a DDP header: RDMAC 0x1000 segment size invalid, R-TCODE-19"
evil fpdu-truncated closed \
	"async=none flushed=2 recv_ok=0 state=ERR mem=intact rst=0" \
	"FIN inside an FPDU: the Send is never delivered, R-ORD-4, R-TD-3"
evil fpdu-oversized "term 1/2/05 md" "$FATAL" \
	"ULPDU_Length 65535 for a 4 KiB receive: caught at the header, R-SND-9"
evil crc-bad "term 2/0/02 -" "$FATAL" "MPA CRC error, R-TCODE-18, R-TCODE-23" -c
# RDMA Writes whose payload lost a bit after the CRC was computed: the
# target region must keep its pattern byte for byte (RFC 5044 section 6:
# the CRC is verified before the ULPDU goes to DDP), whether the FPDU
# arrives in one piece or in three, 200 ms apart. The good split Writes
# must land whole (read back, then the control case's check).
evil crc-write "term 2/0/02 -" "$FATAL" \
	"1 KiB Write, a payload bit flipped after its CRC: nothing placed" -c
evil crc-write-split "term 2/0/02 -" "$FATAL" \
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
evil opcode-unknown "term 0/2/06 md" "$FATAL" "R-HDR-15, R-VAL-2"
evil opcode-tflag "term 0/2/06 md" "$FATAL" "T flag against Fig. 4, R-HDR-13"
evil rdmap-version "term 0/2/05 md" "$FATAL" "R-HDR-7, R-VAL-3"
evil ddp-version "term 1/2/06 md" "$FATAL" "untagged, R-VAL-1"
evil ddp-version-tagged "term 1/1/04 md" "$FATAL" "tagged, R-VAL-1"

# Tagged (RDMA Write) placement: DDP tagged buffer errors (D-DDP-14).
evil write-bounds "term 1/1/01 md" "$ACCESS" "R-SEC-3"
evil write-below "term 1/1/01 md" "$ACCESS" "R-SEC-3"
evil write-wrap "term 1/1/03 md" "$ACCESS" "R-VAL-12, D-DDP-12"
evil write-badstag "term 1/1/00 md" "$ACCESS" "no such STag"
evil write-stag0 "term 1/1/00 md" "$ACCESS" "STag 0 is never valid"
evil write-badkey "term 1/1/00 md" "$ACCESS" "right index, wrong key"
evil write-foreign "term 1/1/02 md" "$ACCESS" "other PD, R-SEC-1"
evil write-noaccess "term 1/1/02 md" "$ACCESS" \
	"no remote write: RDMAC 0x1102 access rights, R-AMB-6, R-SEC-5"

# RDMA Read Requests: RDMAP protection errors echo the 28-byte header.
evil read-badstag "term 0/1/00 mdr" "$ACCESS" "R-VAL-8, R-RRQ-10, R-HDR-27"
evil read-foreign "term 0/1/03 mdr" "$ACCESS" "R-VAL-9, R-SEC-1"
evil read-noaccess "term 0/1/02 mdr" "$ACCESS" "R-VAL-13"
evil read-bounds "term 0/1/01 mdr" "$ACCESS" "R-VAL-11"
evil read-wrap "term 0/1/04 mdr" "$ACCESS" "R-VAL-12"
evil read-ird "term 1/2/03 md" "$FATAL" \
	"beyond IRD 1: RDMAC 0x1203 too many Read Requests, R-RRQ-15, R-INIT-7"
evil read-long "term 0/2/ff md" "$FATAL" "R-HDR-14, R-AMB-14"
evil read-short "term 0/2/ff md" "$FATAL" "R-HDR-21, R-AMB-14"

# Untagged (Send) placement: DDP untagged buffer errors.
evil send-norecv "term 1/2/02 md" \
	"async=QP_FATAL flushed=0 recv_ok=0 state=ERR mem=intact rst=0" \
	"no receive posted, R-SND-11, P-TR-6" -n 0
evil send-qn "term 1/2/01 md" "$FATAL" "queue number 3, R-HDR-18"
evil send-msn "term 1/2/03 md" "$FATAL" "R-HDR-19"
evil send-mo "term 1/2/04 md" "$FATAL" "R-HDR-20"
evil send-toolong "term 1/2/05 md" "$FATAL" "R-SND-9"
evil sendinv-foreign "term 0/1/03 md" "$ACCESS" "R-INV-1, R-VAL-5"
evil sendinv-user-mr "term 0/1/09 md" "$ACCESS" \
	"only fast-register MRs are invalidated, R-INV-1, R-AMB-3"
evil sendinv-badstag "term 0/1/00 md" "$ACCESS" "R-VAL-4"
evil readresp-unsolicited "term 0/2/06 md" "$FATAL" "R-RRS-7"

# RFC 7306 toward kiwi, in the order kiwi checks (kiwi.rst, "Atomics and
# immediate data"): nothing is carried out, nothing completes at the
# server. An Atomic Response answers no request; the Atomic Request's
# code, then its STag and access, then its alignment; Immediate Data is
# exactly 8 bytes, and one marked for the Send behind it may not follow
# another.
evil atomic-resp-unsolicited "term 0/2/06 md" "$FATAL" \
	"Atomic Response with nothing outstanding: Unexpected OpCode"
evil atomic-badcode "term 0/2/ff md" "$FATAL" \
	"Atomic Operation code 1: Remote Operation Error, Unspecified"
evil atomic-badstag "term 0/1/00 md" "$ACCESS" "Invalid STag"
evil atomic-noaccess "term 0/1/02 md" "$ACCESS" \
	"region without IBV_ACCESS_REMOTE_ATOMIC: access rights"
evil atomic-misaligned "term 0/2/07 md" "$FATAL" \
	"Tagged Offset not 8-byte aligned: Catastrophic error localized to the RDMAP Stream (RFC 7306 8.2)"
evil imm-long "term 0/2/ff md" "$FATAL" "12-byte Immediate Data"
evil imm-short "term 0/2/ff md" "$FATAL" "4-byte Immediate Data with SE"
evil imm-twice "term 0/2/ff md" "$FATAL" \
	"a second Immediate Data for the Send before the Send"

# A Terminate from the peer is delivered, never answered (R-TRM-2, R-TRM-7).
evil peer-terminate closed "$FATAL" "R-TRM-7"

# The server fails its own QP (V-CS-3): the failed WR completes with its
# error, the rest flush, its QP raises no async event (V-ST-T7), and the
# peer gets the Terminate in place of the WR, after whole FPDUs (V-TERM-5):
# Local Catastrophic, RDMAP layer, header bits zero. kiwi checks every SGE
# before a message's first segment, so a bad second SGE of a 64 KiB Send
# sends none of it (V-TERM-2). A CQ overflow sends RDMAC Fig. 24's 0x0207
# and raises QP_FATAL (V-ERR-7, V-TERM-7).
LOCAL="async=none flushed=2 recv_ok=0 state=ERR mem=intact rst=0"
evil local-lkey "term 0/0/00 -" "$LOCAL sends=OK,LOC_PROT_ERR,FLUSH" \
	"64 KiB Send, bad lkey in SGE 2: Local Catastrophic 0x0000" -t write
evil local-bind "term 0/0/00 -" "$LOCAL sends=OK,MW_BIND_ERR,FLUSH" \
	"refused window bind: Local Catastrophic 0x0000, V-AMB-7" -t write
evil local-sqe "term 0/0/00 -" "$LOCAL sends=OK,SQE" \
	"Modify RTS -> SQE: Local Catastrophic 0x0000, V-ST-R6, V-LLP-8" -t write
evil local-bindok "reply after" \
	"async=none flushed=2 recv_ok=0 state=ERR mem=intact rst=0 sends=OK,OK,OK,OK" \
	"V-WR-9: a window Bind and Local Invalidate between two Sends send nothing" -t write
evil local-err reset "async=none flushed=2 recv_ok=0 state=ERR mem=intact rst=1 sends=OK,ERR" \
	"V-ST-R10, V-LLP-6: Modify RTS -> ERR: after \"before\", a reset and no Terminate" -t write
evil local-sqd "send 1048576 last fin" "async=none flushed=2 recv_ok=0 state=ERR mem=intact rst=0 sends=OK,OK" \
	"V-TERM-4: 1 MiB Send, then Modify to SQD: the whole message in whole FPDUs, then the FIN" -c -t write
evil local-sqe-big "segments, term 0/0/00 -" "$LOCAL sends=OK,SQE,@(OK|FLUSH)" \
	"V-TERM-4: 1 MiB Send, then Modify to SQE: whole FPDUs, then the Terminate" -c -t write
evil local-cqof "term 0/2/07 -" \
	"async=QP_FATAL flushed=0 recv_ok=0 state=ERR mem=intact rst=0 sends=OK,OK" \
	"CQ overflow: RDMAC 0x0207, header bits zero" -n 0 -t write
evil local-rcqof "term 0/2/07 -" \
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
evil two-bad "term 1/1/00 md" "$ACCESS" "V-TERM-8: two bad Writes in one TCP segment"
# V-TERM-1: an invalid Send while the device streams a 1 MiB Read Response
# into our small window: whole, valid FPDUs (MPA CRC checked), then the
# Terminate, then nothing.
evil term-stream "term 0/2/06 md" "$FATAL" \
	"V-TERM-1: the Terminate follows the last whole Read Response FPDU" -c

# How a connection ends (RDMAC verbs, digest-verbs.md). A reset from the
# peer fails the QP with an event and no Terminate; a FIN with work
# outstanding is a Bad LLP Close, RDMAC 0x0207 (RFC 5040 Catastrophic
# Error, localized to RDMAP Stream).
evil rst reset-sent \
	"async=QP_FATAL flushed=2 recv_ok=0 state=ERR mem=intact rst=0" \
	"V-LLP-12, V-ERR-4: a reset in RTS: ERR and QP_FATAL, no Terminate"
evil fin-read "term 0/2/07 -" "$FATAL" \
	"V-ST-R4, V-LLP-11: FIN with the server's Read outstanding, Bad LLP Close" -t write
evil fin-readreq "term 0/2/07 -" "$FATAL" \
	"V-ERR-5: FIN while the server answers our Read, Bad LLP Close"
evil write-badstag "term 1/1/00 md" "$ACCESS" \
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
evil term-stall reset "async=QP_FATAL,QP_FATAL flushed=2 recv_ok=0 state=ERR mem=intact rst=1" \
	"V-ST-T1, V-ST-T5, V-LLP-8: an undeliverable Terminate ends in a reset"
# One reset when the QP fails (srv_said below checks it then); by the
# summary the server's TCP may have answered a late segment of the peer's
# with one more (seen once on the debug kernel), which is TCP's, not kiwi's.
evil close-read-stall reset "${LOST%rst=1}rst=[12]" \
	"V-SEC-6, V-ST-C6: SQD held by a Read never answered ends in a reset"
check "close-read-stall: reset, then ERR, then the event (V-ST-C7)" \
	srv_said close-read-stall "async QP_FATAL state=ERR rst=1"
# After our FIN: only the peer's FIN may come. A long timeout, so that
# only the data can end these within the peer's 30 s.
echo 60 >$T
evil send-after-fin reset "$LOST" \
	"V-ST-C2, V-ST-C6: a Send after our FIN is not placed, the QP fails" -w 30
check "send-after-fin: reset, then ERR, then the event (V-ST-C7)" \
	srv_said send-after-fin "async QP_FATAL state=ERR rst=1"
evil readresp-after-fin reset "$LOST" \
	"V-AMB-26: a Read Response after our FIN is not placed, the QP fails" -w 30
# The server floods a peer that reads nothing, then closes: posting never
# waits for the peer (V-POST-2) and the close ends within the timeout.
echo 20 >$T
evil flood-stall reset "$LOST" "V-SEC-6: a close behind sends the peer never reads"
posted=$(sed -n "/^established case=flood-stall\$/,/^summary case=flood-stall /s/^posted //p" "$out/term.srv")
echo "# flood-stall server: posted $posted (llp_timeout 20 s)"
check "V-POST-2: ibv_post_send returns at once with the peer's window full" \
	eval '[[ $posted =~ ^12\ slowest_ms=([0-9]+)$ ]] &&
	      [ "${BASH_REMATCH[1]}" -lt 10000 ]'
echo 30 >$T

evil control "reply verified" "$GOOD" "the listener outlived every case"
srv_stop term
exec {nap}<&-
grep -vE '^(listening|request|established|recv len|summary)' "$out/term.srv" | sed 's/^/# server: /'

kiwi_two_hosts_del
check "the device goes with its namespace" wait_for 20 ibdev_absent kiwi1
kiwi_unload
check "module unloads after all that (nothing held)" test ! -e /sys/module/kiwi
tap_end
