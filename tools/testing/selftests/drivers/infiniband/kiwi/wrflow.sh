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
rc=0

check "two hosts with a kiwi device each" kiwi_two_devs
KIWI_TIMEOUT=400 tap_pair wrflow 7500 kiwiB "$W" server 192.0.2.2 7500 -- \
	kiwiA env "${KIWI_NETEM[@]}" "$W" client 192.0.2.2 7500 || rc=1
for d in kiwi0 kiwi1; do
	check "nothing left on $d (qp cq mr pd cm_id)" \
		wait_for 20 eval "kiwi_no_leftovers wrflow $d qp cq mr pd cm_id >/dev/null"
done
kiwi_two_devs_del
[ $rc -eq 0 ] || not_ok "kiwi_wrflow reported failures"
tap_end
