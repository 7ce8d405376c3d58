#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Work request flow, error completions and ordering (kiwi_wrflow) between
# two kiwi devices in two namespaces: a full send queue, an unsignalled WR
# that fails among others (its error WC, the flushes after it, no async
# event), completions left unpolled when the QP fails, a Send behind a
# large Read, a burst of Sends, bursts on three QPs sharing an SRQ, a QP
# destroyed with a Read in flight, one QP connected twice. The server's
# packets are dropped (netem on kvB) to hold a Read outstanding.
source "$(dirname "$0")/lib.sh"
tap_begin "work request flow, error completions, ordering"
W=$KIWI_TESTDIR/kiwi_wrflow
out=$(mktemp -d)
rc=0

check "two hosts with a kiwi device each" kiwi_two_devs
ip netns exec kiwiB timeout 400 "$W" server 192.0.2.2 7500 >"$out/srv" 2>&1 &
spid=$!
check "server listens" wait_for 60 grep -q listening "$out/srv"
KIWI_BLOCK="ip netns exec kiwiB tc qdisc add dev kvB root netem loss 100%" \
KIWI_UNBLOCK="ip netns exec kiwiB tc qdisc del dev kvB root" \
	ip netns exec kiwiA timeout 400 "$W" client 192.0.2.2 7500 |
	tap_sub
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
wait $spid
src=$?
sed 's/^/# /' "$out/srv"
check "the server saw all its connections end" test $src -eq 0
for d in kiwi0 kiwi1; do
	check "nothing left on $d (qp cq mr pd cm_id)" \
		wait_for 20 eval "kiwi_no_leftovers wrflow $d qp cq mr pd cm_id >/dev/null"
done
kiwi_two_devs_del
rm -rf "$out"
[ $rc -eq 0 ] || not_ok "kiwi_wrflow reported failures"
tap_end
