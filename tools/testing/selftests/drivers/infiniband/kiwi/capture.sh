#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kiwi's wire format as Wireshark sees it. A capture on the veth in kiwiA
# records two kiwi devices with MPA CRC negotiated off, with large FPDUs
# agreed (the default) and without (fpdu_segs=1) (run as capture_crc.sh:
# with crc_required=1; as capture_siw.sh: kiwi against the upstream siw,
# CRC required by kiwi, each end connecting, siw as Debian's source has it
# and with its try_gso on) while rping -V and perftest (-R) move
# Sends, RDMA Writes and RDMA Reads of odd and multi-FPDU sizes, each tool
# on its own port. tshark's iwarp_mpa and iwarp_ddp_rdmap dissectors then
# decode the capture and iwarp_check.py checks it: the MPA v2 exchange and
# RTR, the large-FPDU flag (0x08) each end offered, the framing of every
# payload byte, the CRC, the opcodes, DDP sequencing, FPDU sizes against
# the EMSS (several segments only where both MPA frames agreed), padding,
# the bytes each tool moved, and the close. With CRC on, a copy of the rping connection with a
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

# mode NAME CRC KIWI PEER LARGE MODPARAM... -- KIND:PORT:ITERS:SIZE...:
# one configuration's traffic, a server in kiwiB and a client in kiwiA for
# each KIND (rping -V, or ib_KIND_bw; rping-back: rping's server in kiwiA,
# its client in kiwiB); adds its --run to the checker's arguments. LARGE
# (on or off): whether every connection must agree to large FPDUs. PEER
# siw0-gso is siw built with try_gso (scripts/build-siw.sh).
mode() {
	local name=$1 crc=$2 kiwi=$3 peer=$4 large=$5 params=() words t port n size p
	shift 5
	while [ "$1" != -- ]; do params+=("$1"); shift; done
	shift
	if [ "$peer" = siw0-gso ]; then
		peer=siw0
		KIWI_SIW_KO=$KIWI_SIW_GSO check "$name: kiwi0 and siw0 (try_gso)" \
			kiwi_devs siw0 "${params[@]}"
	else
		check "$name: kiwi0 and $peer" kiwi_devs "$peer" "${params[@]}"
	fi
	words=("$crc" "$kiwi" "large=$large")
	# kiwi's FPDUs span this many segments where agreed: the size rule
	for p in "${params[@]}"; do
		case $p in fpdu_segs=*) words+=("segs=${p#fpdu_segs=}") ;; esac
	done
	runs+=(--run "$name" "${words[@]}")
	for run in "$@"; do
		IFS=: read -r t port n size <<<"$run"
		if [ "$t" = rping-back ]; then
			check "$name: rping -V from kiwiB, $n x $size bytes" \
				pair_rping "rping$port" "$port" kiwiA 192.0.2.1 kiwiB "$n" "$size"
			t=rping
		elif [ "$t" = rping ]; then
			check "$name: rping -V, $n x $size bytes" \
				pair_rping "rping$port" "$port" kiwiB $srv kiwiA "$n" "$size"
			# With CRC on, a copy of this connection on port
			# 7999 with a byte flipped must fail the CRC check.
			[ "$crc" = on ] &&
				flipped=(--run flipped "${words[@]}" "7999:$t:$n:$size") &&
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
if [ "$what" = siw ] && { [ ! -f "$KIWI_SIW" ] || [ ! -f "$KIWI_SIW_GSO" ]; }; then
	not_ok "siw.ko was built, as Debian has it and with try_gso (scripts/build-siw.sh)"
	tap_end
fi
check "two hosts joined by kvA/kvB" kiwi_two_hosts
check "dumpcap captures on kvA" capture_start

# With large FPDUs agreed (kiwi's default between two kiwis), 65539 and
# 200001 bytes take several FPDUs of up to 64 KiB; 3 bytes is a Write far
# below one FPDU; 4001, 4097, 10001 and 65000 take one large FPDU, or,
# with fpdu_segs=1, several whose last segment needs pad. rping covers Send,
# Write and Read in each configuration; each perftest test and size runs
# once. Against siw, a perftest server runs on the siw side only (see
# interop.sh), and siw's FPDUs are not held to kiwi's rules (fill, zero
# pad, zero CRC field). siw as Debian builds it offers no large FPDUs when
# it connects, and its Reply repeats its Request's flags, the large-FPDU
# offer among them; with try_gso it offers them, and sends them where
# agreed.
case $what in
crc-off)
	mode crc-off off both kiwi1 on -- rping:7174:5:4001 write:18510:20:3 \
		read:18512:10:4097 write:18514:5:200001
	# fpdu_segs=1: no offer, one segment per FPDU
	mode mss off both kiwi1 off fpdu_segs=1 -- rping:7177:5:65000 \
		write:18516:5:10001 ;;
crc-required)
	mode crc-required on both kiwi1 on crc_required=1 -- rping:7175:5:4001 \
		write:18521:5:65539 send:18523:10:10001 ;;
siw)
	mode siw on client siw0 on crc_required=1 -- rping:7176:5:4001 write:18531:5:65539
	mode siw-connects on server siw0 off crc_required=1 -- rping-back:7178:5:10001
	mode siw-gso on client siw0-gso on crc_required=1 -- rping:7179:5:65000 \
		write:18533:5:200001
	mode siw-gso-connects on server siw0-gso on crc_required=1 -- \
		rping-back:7180:5:65000 ;;
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
