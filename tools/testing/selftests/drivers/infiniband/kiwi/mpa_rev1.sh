#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kiwi loaded with mpa_rev=1 connecting (the active side) to kiwi and to
# the upstream siw, and a capture on kvA showing MPA revision 1 in the
# Request and the Reply (iwarp_pcap.py mpa). To kiwi, rping -V moves
# Sends, RDMA Writes and RDMA Reads and checks every byte. To siw,
# kiwi_xfer moves checked RDMA Writes and Sends, and ib_read_bw has kiwi
# read from siw: rping cannot run there, since siw reports IRD and ORD 0
# in a revision-1 connect request (it learns them only from revision 2's
# private data), rping accepts with what the request says, and siw then
# refuses its server's RDMA Read (EINVAL). Then the one combination that
# cannot work: siw connecting with revision 2 and its "enhanced" mode to
# kiwi with mpa_rev=1, which answers with revision 1; siw insists on a
# revision-2 Reply (siw_cm.c: "The responder MUST reply with MPA version
# 2") and fails the connect, and kiwi's side ends cleanly.
source "$(dirname "$0")/lib.sh"
tap_begin "MPA revision 1 on the active side, against kiwi and siw"
pcap=$out/mpa.pcap

# mpa_seen PORT REQ-REV REPLY-REV: the first connection to PORT in the
# capture had an MPA Request of revision REQ-REV and a Reply of REPLY-REV.
mpa_seen() {
	local got

	got=$("$KIWI_TESTDIR/iwarp_pcap.py" mpa "$pcap" "$1" 2>&1)
	sed 's/^/# mpa: /' <<<"$got"
	grep -q "^request rev $2 " <<<"$got" && grep -q "^reply rev $3 " <<<"$got" &&
		return 0
	# What was captured instead.
	sed 's/^/# dumpcap: /' "$out/dumpcap.log"
	tshark -r "$pcap" 2>&1 | head -20 | sed 's/^/# tshark: /'
	return 1
}

if [ ! -f "$KIWI_SIW" ]; then
	not_ok "siw.ko was built (scripts/build-siw.sh)"
	tap_end
fi

check "kiwi with mpa_rev=1: a device on each end" kiwi_two_devs mpa_rev=1
check "the capture on kvA starts" pcap_start kiwiA kvA "$pcap"
rping_check "kiwi to kiwi, mpa_rev=1" r1 kiwiB 192.0.2.2 kiwiA 10 4000
pcap_stop
check "kiwi to kiwi: MPA Request and Reply of revision 1 on the wire" \
	mpa_seen 7174 1 1
kiwi_two_devs_del

check "kiwi with mpa_rev=1 in kiwiA, siw in kiwiB" \
	eval 'kiwi_two_hosts && kiwi_devs siw0 mpa_rev=1'
check "the capture on kvA starts" pcap_start kiwiA kvA "$pcap"
check "kiwi to siw, mpa_rev=1: kiwi_xfer, 20 checked RDMA Writes and Sends of 65536 B" \
	pair xfer 7500 kiwiB "$KIWI_TESTDIR/kiwi_xfer" server 192.0.2.2 7500 65536 20 -- \
	kiwiA "$KIWI_TESTDIR/kiwi_xfer" client 192.0.2.2 7500 65536 20
pcap_stop
check "kiwi to siw: siw answers a revision-1 Request with a revision-1 Reply" \
	mpa_seen 7500 1 1
check "kiwi to siw, mpa_rev=1: ib_read_bw -R, kiwi reads 100 x 16384 B from siw" \
	pair_perftest read 18515 ib_read_bw siw0 kiwi0 100 16384 192.0.2.2

# siw (revision 2, enhanced) connects to kiwi, which answers revision 1.
check "the capture on kvA starts" pcap_start kiwiA kvA "$pcap"
srv_start r3 7174 kiwiA rping -s -a 192.0.2.1 -p 7174 -V -C 1 -S 4000
cli_run r3 kiwiB rping -c -a 192.0.2.1 -p 7174 -V -C 1 -S 4000
crc=$?
check "siw to kiwi with mpa_rev=1: siw refuses the revision-1 Reply (REJECTED, ECONNRESET)" \
	eval '[ $crc -ne 0 ] && grep -q "RDMA_CM_EVENT_REJECTED, error -104" "$out/r3.cli"'
sed 's/^/# r3: client: /' "$out/r3.cli" | head -4
# kiwi's rping accepted; its connection must end, not hang.
srv_stop r3 30
src=$?
check "siw to kiwi with mpa_rev=1: kiwi's server ends by itself (exit $src)" \
	test $src -ne 143
sed 's/^/# r3: server: /' "$out/r3.srv" | head -4
pcap_stop
check "siw to kiwi: a revision-2 Request, kiwi's revision-1 Reply on the wire" \
	mpa_seen 7174 2 1
check "kiwi to siw again after that: ib_send_bw -R, 100 x 16384 B" \
	pair_perftest send 18515 ib_send_bw siw0 kiwi0 100 16384 192.0.2.2
for r in qp cm_id; do
	check "nothing left on kiwi0 ($r)" \
		wait_for 20 eval "kiwi_no_leftovers mpa_rev1 kiwi0 $r >/dev/null"
done
kiwi_two_devs_del
tap_end
