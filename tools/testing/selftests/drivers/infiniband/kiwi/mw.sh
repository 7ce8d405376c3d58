#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Memory windows, type 1 and type 2 (RDMA Verbs V-MW-*, digest section
# 12.9): kiwi_mw's server binds windows over its memory in kiwiB, the
# client in kiwiA RDMA Writes and Reads through them, and every refusal
# is checked by its exact errno or completion status (see kiwi_mw.c).
# Each of kiwi_mw's test points becomes one here.
source "$(dirname "$0")/lib.sh"
tap_begin "memory windows"
M=$KIWI_TESTDIR/kiwi_mw
out=$(mktemp -d)

check "two hosts with a kiwi device each" kiwi_two_devs

ip netns exec kiwiB timeout 600 "$M" server 192.0.2.2 7390 >"$out/srv" 2>&1 &
spid=$!
check "server listens" wait_for 120 grep -q listening "$out/srv"
ip netns exec kiwiA timeout 600 "$M" client 192.0.2.2 7390 >"$out/cli" 2>&1
crc=$?
wait $spid
src=$?

tap_import server "$out/srv"
swhole=$?
tap_import client "$out/cli"
cwhole=$?
check "server ran every case (exit $src)" eval '[ $src -eq 0 ] && [ $swhole -eq 0 ]'
check "client ran every case (exit $crc)" eval '[ $crc -eq 0 ] && [ $cwhole -eq 0 ]'
check "no MR or QP of the test left on kiwi1" \
	eval 'kiwi_no_leftovers mw kiwi1 mr qp | sed "s/^/# /"; [ ${PIPESTATUS[0]} -eq 0 ]'
kiwi_two_devs_del
rm -rf "$out"
tap_end
