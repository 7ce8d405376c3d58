#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): the capture checker that capture.sh runs on kiwi's
# traffic (iwarp_check.py, through tshark's iwarp_mpa and iwarp_ddp_rdmap
# dissectors) passes a correct synthetic iWARP conversation, with CRC off
# and on, and flags each fault iwarp_pcap.py plants in a copy of it with
# the check that covers it. Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
dir=$root/tools/testing/selftests/drivers/infiniband/kiwi
source "$dir/lib.sh"
tap_begin "iWARP capture checker"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect=7174:rping:1:4001	# iwarp_pcap.py's one rping iteration

# verdict VARIANT CRC [RUN-WORD...]: run the checker on a synthetic
# capture, as one run named "synth" between two kiwi ends (with the
# RUN-WORDs, such as large=on); its output is in $tmp/VARIANT.log and its
# exit status in $rc.
verdict() {
	local v=$1 crc=$2
	shift 2
	"$dir/iwarp_pcap.py" synth "$v" "$tmp/$v.pcap" &&
	"$dir/iwarp_check.py" "$tmp/$v.pcap" --run synth "$crc" both "$@" $expect \
		>"$tmp/$v.log" 2>&1
	rc=$?
}

# passes VARIANT CRC [RUN-WORD...]: every check passes.
passes() {
	verdict "$@"
	[ $rc -eq 0 ] && ! grep -q "^not ok" "$tmp/$1.log" && grep -q "^ok" "$tmp/$1.log" ||
		{ sed 's/^/#   /' "$tmp/$1.log"; return 1; }
}

# flags VARIANT CRC CHECK [RUN-WORD...]: the checker exits 1 and CHECK
# (the start of a check's description, after "synth: " for the run's own
# checks) is among the checks that fail.
flags() {
	verdict "$1" "$2" "${@:4}"
	[ $rc -eq 1 ] && grep -qE "^not ok - (synth: )?$3" "$tmp/$1.log" ||
		{ sed 's/^/#   /' "$tmp/$1.log"; return 1; }
}

if ! command -v tshark >/dev/null; then
	not_ok "tshark is installed (scripts/setup.sh)"
	tap_end
fi

check "a correct conversation passes every check, CRC off" passes good off
check "a correct conversation passes every check, CRC on (CRC32c least significant octet first)" \
	passes crc on
check "a plain TCP flow: its bytes are not MPA framing" \
	flags plain off "all [0-9]* TCP payload bytes are MPA"
check "one payload byte changed after the CRC was computed: bad CRC" \
	flags badcrc on "the dissector verified the CRC32c"
check "CRC expected but not negotiated: flagged" \
	flags good on "the dissector verified the CRC32c"
check "CRC negotiated where it should be off: flagged" \
	flags crc off "MPA Request and Reply decoded"
check "a non-zero CRC field from kiwi with CRC off: flagged" \
	flags crcfield off "CRC off: no FPDU is CRC-checked"
check "MPA revision 1 without RFC 6581 data: flagged" \
	flags rev1 off "MPA Request and Reply decoded"
check "no RTR after an RTR was agreed: flagged" \
	flags nortr off "the initiator's first FPDU is the zero-length RTR"
check "the responder sends before the RTR: flagged" \
	flags early off "the initiator's first FPDU is the zero-length RTR"
check "an FPDU larger than the EMSS: flagged" \
	flags big off "every FPDU fits the EMSS"
check "a non-last segment that does not fill the EMSS: flagged" \
	flags small off "every FPDU fits the EMSS"
check "large FPDUs where both MPA frames carry flag 0x08: every check passes (large=on)" \
	passes large off large=on
check "both frames offer large FPDUs where the run expects none: flagged" \
	flags large off "MPA Request and Reply decoded"
check "large FPDUs offered by the Request alone: an FPDU past the EMSS flagged" \
	flags largereq off "every FPDU fits the EMSS"
check "large FPDUs offered by the Reply alone: flagged" \
	flags largerep off "MPA Request and Reply decoded"
check "large=on where the Reply did not agree: flagged" \
	flags largereq off "MPA Request and Reply decoded" large=on
check "a skipped MSN: flagged" \
	flags msn off "DDP/RDMAP headers of"
check "a gap in a Send's message offsets: flagged" \
	flags mo off "DDP/RDMAP headers of"
check "a Read Response at the wrong offset: flagged" \
	flags to off "DDP/RDMAP headers of"
check "a Terminate: flagged" \
	flags term off "RDMAP opcodes"
check "non-zero pad bytes: flagged" \
	flags pad off "[0-9]* FPDUs carry 1 to 3 pad bytes"
check "a stream that ends inside an FPDU: flagged" \
	flags cut off "all [0-9]* TCP payload bytes are MPA"
check "a connection that never closes: flagged" \
	flags nofin off "every connection ends with a FIN or RST"
check "two segments captured out of order (as a veth delivers them): every check passes" \
	passes reorder off
check "a segment missing from the capture: flagged" \
	flags gap off "all [0-9]* TCP payload bytes are MPA"
expect=7174:rping:2:4001
check "a tool that moved more bytes than the capture shows: flagged" \
	flags good off "rping 2 x 4001 bytes on port 7174"
expect=7175:rping:1:4001
check "a connection to a port no tool ran on: flagged" \
	flags good off "tshark decoded [0-9]* FPDUs in 1 TCP connections, each to a port"
expect=7174:rping:1:4001

"$dir/iwarp_pcap.py" synth crc "$tmp/crc.pcap"
"$dir/iwarp_pcap.py" flip "$tmp/crc.pcap" "$tmp/flipped.pcap" 7174 7999
"$dir/iwarp_check.py" "$tmp/flipped.pcap" --run synth on both $expect \
	--run flipped on both 7999:rping:1:4001 >"$tmp/flipped.log" 2>&1
rc=$?
check "iwarp_pcap.py flip (as capture.sh uses it): the flipped copy fails the CRC check, and nothing else fails" \
	eval '[ $rc -eq 1 ] && grep -q "Bad CRC32" "$tmp/flipped.log" &&
	      [ "$(grep -c "^not ok" "$tmp/flipped.log")" = 1 ] &&
	      grep -q "^not ok - flipped: the dissector verified the CRC32c" "$tmp/flipped.log"'
tap_end
