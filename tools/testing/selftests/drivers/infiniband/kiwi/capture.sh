#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kiwi's wire format as Wireshark sees it. A capture on the veth in kiwiA
# records two kiwi devices with MPA CRC negotiated off (run as
# capture_crc.sh: with crc_required=1; as capture_siw.sh: kiwi against the
# upstream siw, CRC required by kiwi) while rping -V and perftest (-R) move
# Sends, RDMA Writes and RDMA Reads of odd and multi-FPDU sizes, each tool
# on its own port. tshark's iwarp_mpa and iwarp_ddp_rdmap dissectors then
# decode the capture and iwarp_check.py checks it: the MPA v2 exchange and
# RTR, the framing of every payload byte, the CRC, the opcodes, DDP
# sequencing, FPDU sizes against the EMSS, padding, the bytes each tool
# moved, and the close. With CRC on, a copy of the rping connection with a
# payload byte flipped, decoded with the rest, must fail the CRC check and
# no other.
# The capture is kept in build/test/ for a developer to open in Wireshark.
#
# tshark starts slowly under emulation (half a minute, minutes the first
# time), hence one decode per script and three scripts, each well inside
# run_vm.sh's time limit on a loaded machine.
source "$(dirname "$0")/lib.sh"
what=${KIWI_CAPTURE:-crc-off}
tap_begin "wire capture decoded by Wireshark ($what)"
pcap=$KIWI_ROOT/build/test/capture-$what.pcap
srv=192.0.2.2

# capture_start: dumpcap on kvA, TCP only, classic pcap (so that
# iwarp_pcap.py can edit it), until capture_stop.
capture_start() {
	mkdir -p "$(dirname "$pcap")" && pcap_start kiwiA kvA "$pcap"
}

# capture_stop: end the capture (a background job ignores SIGINT); it must
# have dropped nothing.
capture_stop() {
	local r=0
	pcap_stop || r=1
	sed 's/^/# dumpcap: /' "$out/dumpcap.log"
	grep -qE "^Packets received/dropped on interface 'kvA': [0-9]+/0 " "$out/dumpcap.log" &&
		return $r
}

# devices_del: undo kiwi_devs, the hosts kept.
devices_del() {
	local d
	for d in kiwi0 kiwi1 siw0; do
		ibdev_exists $d && rdma link del $d
	done
	kiwi_devs_unload
}

# mode NAME CRC KIWI PEER MODPARAM... -- KIND:PORT:ITERS:SIZE...: one
# configuration's traffic, a server in kiwiB and a client in kiwiA for
# each KIND (rping -V, or ib_KIND_bw); adds its --run to the checker's
# arguments.
mode() {
	local name=$1 crc=$2 kiwi=$3 peer=$4 params=() t port n size p
	shift 4
	while [ "$1" != -- ]; do params+=("$1"); shift; done
	shift
	check "$name: kiwi0 and $peer" kiwi_devs "$peer" "${params[@]}"
	runs+=(--run "$name" "$crc" "$kiwi")
	# kiwi's FPDUs span this many segments: the checker's size rule
	for p in "${params[@]}"; do
		case $p in fpdu_segs=*) runs+=("segs=${p#fpdu_segs=}") ;; esac
	done
	for run in "$@"; do
		IFS=: read -r t port n size <<<"$run"
		if [ "$t" = rping ]; then
			check "$name: rping -V, $n x $size bytes" \
				pair_rping "rping$port" "$port" kiwiB $srv kiwiA "$n" "$size"
			# With CRC on, a copy of this connection on port
			# 7999 with a byte flipped must fail the CRC check.
			[ "$crc" = on ] &&
				flipped=(--run flipped on "$kiwi" "7999:$t:$n:$size") &&
				flip_port=$port
		else
			check "$name: ib_${t}_bw -R, $n x $size bytes" \
				pair_perftest "$t$port" "$port" ib_${t}_bw "$peer" kiwi0 "$n" "$size" $srv
		fi
		runs+=("$port:$t:$n:$size")
	done
	devices_del
}

# relay CMD...: every "ok"/"not ok" line CMD prints becomes one test
# point of this script, except those of the flipped copy, which go to
# $out/flipped.log; other lines pass through.
relay() {
	local line
	while IFS= read -r line; do
		case $line in
		*" - flipped: "*) echo "$line" >>"$out/flipped.log" ;;
		"ok - "*) ok "${line#ok - }" ;;
		"not ok - "*) not_ok "${line#not ok - }" ;;
		*) echo "$line" ;;
		esac
	done < <("$@" 2>&1)
}

kiwi_unload
modprobe -r siw 2>/dev/null
runs=() flipped=() flip_port=
if [ "$what" = siw ] && [ ! -f "$KIWI_SIW" ]; then
	not_ok "siw.ko was built (scripts/build-siw.sh)"
	tap_end
fi
check "two hosts joined by kvA/kvB" kiwi_two_hosts
check "dumpcap captures on kvA" capture_start

# 3 and 65539 bytes are Writes far below and above one FPDU; 4001, 4097
# and 10001 are multi-FPDU messages whose last segment needs pad. rping
# covers Send, Write and Read in each configuration; each perftest test
# and size runs once. Against siw, a perftest server runs on the siw side
# only (see interop.sh), and siw's FPDUs are not held to kiwi's rules
# (EMSS fill, zero pad, zero CRC field).
case $what in
crc-off)
	mode crc-off off both kiwi1 -- rping:7174:5:4001 write:18510:20:3 \
		read:18512:10:4097
	# FPDUs of up to 64 KiB (fpdu_segs): still framed, placed, checked
	mode fpdu-segs off both kiwi1 fpdu_segs=64 -- rping:7177:5:65000 \
		write:18514:5:200001 ;;
crc-required)
	mode crc-required on both kiwi1 crc_required=1 -- rping:7175:5:4001 \
		write:18521:5:65539 send:18523:10:10001 ;;
siw)
	mode siw on client siw0 crc_required=1 -- rping:7176:5:4001 write:18531:5:65539 ;;
esac
sleep 1		# the last FINs and ACKs
check "the capture dropped no packet" capture_stop
kiwi_two_hosts_del
echo "# traffic took $SECONDS s"

# Decode the capture, with CRC on with a copy of the rping connection
# appended, one byte of its first large payload inverted.
decode=$pcap
if [ -n "$flip_port" ]; then
	decode=$out/decode.pcap
	check "a copy of the rping connection, one byte flipped, is appended" \
		"$KIWI_TESTDIR/iwarp_pcap.py" flip "$pcap" "$decode" "$flip_port" 7999
fi
touch "$out/flipped.log"
relay "$KIWI_TESTDIR/iwarp_check.py" "$decode" "${runs[@]}" "${flipped[@]}"
echo "# traffic and decode took $SECONDS s"
if [ -n "$flip_port" ]; then
	sed 's/^/# /' "$out/flipped.log" | grep -E "not ok|Bad CRC"
	check "the flipped copy fails the CRC check, and no other" \
		eval '[ "$(grep -c "^not ok" "$out/flipped.log")" = 1 ] &&
		      grep -q "^not ok - flipped: the dissector verified the CRC32c" "$out/flipped.log"'
fi
tap_end
