#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RFC 7306 atomics and immediate data between two kiwi devices
# (kiwi_atomic): FetchAdd and CmpSwap with the values checked, with
# ibv_post_send and the ibv_wr_* builders; RDMA Write and Send with
# Immediate, checked where they arrive; FetchAdds on the same 8 bytes
# from several QPs at once that sum exactly; and misused atomics, each
# answered with the Terminate this script finds in the kernel log, the
# atomic completing with the verbs' status at the requester.
source "$(dirname "$0")/lib.sh"
tap_begin "RFC 7306 atomics and immediate data, kiwi to kiwi"
P=$KIWI_TESTDIR/kiwi_atomic
rc=0

check "two hosts with a kiwi device each" kiwi_two_devs
log_mark=$(dmesg | wc -l)
tap_pair atomic 7610 kiwiB "$P" server 192.0.2.2 7610 -- \
	kiwiA "$P" client 192.0.2.2 7610 || rc=1
log=$(dmesg | tail -n +"$((log_mark + 1))")
# The responder (kiwi1) sends, the requester (kiwi0) hears: each code once
# per misuse. Codes: RDMAP Remote Operation / Catastrophic error localized
# to the RDMAP Stream (not aligned, RFC 7306 section 8.2),
# Remote Protection / Access rights, Invalid STag, Base or bounds.
for tc in 02070000 01020000 01000000 01010000; do
	check "Terminate $tc sent by the responder and received by the requester" \
		eval 'grep -q "sending Terminate $tc (opcode 10, ULPDU 70)" <<<"$log" &&
		      grep -q "peer sent Terminate $tc" <<<"$log"'
done
for d in kiwi0 kiwi1; do
	check "nothing left on $d (qp cq mr pd cm_id)" \
		wait_for 20 eval "kiwi_no_leftovers atomic $d qp cq mr pd cm_id >/dev/null"
done

# perftest's atomic tests (FETCH_AND_ADD and CMP_AND_SWAP, 8 bytes: they
# take no -s), kiwi to kiwi over rdma_cm.
atomic_perftest() {
	local opt=(-R -F -p 18515 -n "$2" "${@:3}")

	perftest_pair "$1" 18515 kiwiB "$1" -d kiwi1 "${opt[@]}" -- \
		kiwiA "$1" -d kiwi0 "${opt[@]}" 192.0.2.2
}
check "ib_atomic_bw -R, 2000 FETCH_AND_ADD" atomic_perftest ib_atomic_bw 2000
check "ib_atomic_bw -R, 2000 CMP_AND_SWAP" \
	atomic_perftest ib_atomic_bw 2000 -A CMP_AND_SWAP
check "ib_atomic_lat -R, 500 FETCH_AND_ADD" atomic_perftest ib_atomic_lat 500
for t in ib_atomic_bw ib_atomic_lat; do
	[ -f "$out/$t.cli" ] && grep -E "^ *8 " "$out/$t.cli" | sed "s/^/# $t: /"
done
kiwi_two_devs_del

# A peer without RFC 7306: the upstream siw answers with Terminates.
if [ -f "$KIWI_SIW" ]; then
	kiwi_unload
	check "kiwi and siw devices on the two ends" \
		eval 'kiwi_two_hosts && kiwi_devs siw0'
	log_mark=$(dmesg | wc -l)
	tap_pair atomic-siw 7611 kiwiB "$P" server 192.0.2.2 7611 -- \
		kiwiA "$P" noext 192.0.2.2 7611 || rc=1
	log=$(dmesg | tail -n +"$((log_mark + 1))")
	# siw means Remote Operation / Unexpected OpCode (0x02060000), but its
	# bitfields swap Layer and EType on the wire: 0x20060000.
	check "kiwi heard siw's Terminate for the unknown opcode (20060000) twice" \
		test "$(grep -c "kiwi0: QP .*: peer sent Terminate 20060000" <<<"$log")" -eq 2
	kiwi_two_devs_del
else
	not_ok "siw.ko was built (scripts/build-siw.sh)"
fi
[ $rc -eq 0 ] || not_ok "kiwi_atomic reported failures"
tap_end
