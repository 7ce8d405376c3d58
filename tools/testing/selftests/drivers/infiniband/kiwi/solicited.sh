#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Send with Solicited Event over a live connection (kiwi_solicit): the
# receiver arms its receive CQ for solicited completions only, or for the
# next one, and orders Sends with and without IBV_SEND_SOLICITED from the
# sender. A solicited-only arm fires for the solicited Send and not for a
# plain one; an arm for the next completion fires for both; the data is
# checked. kiwi to kiwi, then with the upstream siw at either end: siw's
# Send with Solicited Event raises kiwi's event; kiwi's Sends carry the
# opcode each asked for on the wire (a capture on kvA), but siw, as the
# receiver, never raises a solicited-only event (see kiwi_solicit.c), and
# that is checked too. The receiver's points are re-emitted here.
source "$(dirname "$0")/lib.sh"
tap_begin "Send with Solicited Event: kiwi and siw"
T=$KIWI_TESTDIR/kiwi_solicit

# se WHAT NAME SERVER-NS ADDR CLIENT-NS [SERVER-ARG]: kiwi_solicit's
# receiver (server) in SERVER-NS on ADDR, its sender in CLIENT-NS.
se() {
	local rc whole

	pair "$2" 7500 "$3" "$T" server "$4" 7500 $6 -- "$5" "$T" client "$4" 7500
	rc=$?
	tap_import "$1" "$out/$2.srv"
	whole=$?
	check "$1: both ends exited 0, all $tap_plan points of the receiver reported" \
		eval "[ $rc -eq 0 ] && [ $whole -eq 0 ]"
}

check "two hosts with a kiwi device each" kiwi_two_devs
se "kiwi to kiwi" kk kiwiB 192.0.2.2 kiwiA
kiwi_two_devs_del

if [ ! -f "$KIWI_SIW" ]; then
	not_ok "siw.ko was built (scripts/build-siw.sh)"
	tap_end
fi
check "kiwi in kiwiA, siw in kiwiB" eval 'kiwi_two_hosts && kiwi_devs siw0'
pcap=$out/se.pcap
check "the capture on kvA starts" pcap_start kiwiA kvA "$pcap"
se "kiwi sends, siw receives" ks kiwiB 192.0.2.2 kiwiA no-solicited-events
pcap_stop
# The client's greeting, then the Sends the server orders, in order: 3 is
# Send, 5 Send with Solicited Event (RFC 5040).
ops=$("$KIWI_TESTDIR/iwarp_pcap.py" sends "$pcap" 7500)
check "kiwi sends, siw receives: kiwi's RDMAP opcodes on the wire are 3 3 5 3 3 5 3 5 3 ($ops)" \
	test "$ops" = "3 3 5 3 3 5 3 5 3"
se "siw sends, kiwi receives" sk kiwiA 192.0.2.1 kiwiB
for r in qp cq cm_id; do
	check "nothing left on kiwi0 ($r)" \
		wait_for 20 eval "kiwi_no_leftovers solicited kiwi0 $r >/dev/null"
done
kiwi_two_devs_del
tap_end
