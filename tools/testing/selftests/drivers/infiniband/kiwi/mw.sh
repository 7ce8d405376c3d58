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

check "two hosts with a kiwi device each" kiwi_two_devs

KIWI_TIMEOUT=600
check "server listens" srv_start mw 7390 kiwiB "$M" server 192.0.2.2 7390
cli_run mw kiwiA "$M" client 192.0.2.2 7390
crc=$?
srv_end mw
src=$?

tap_import server "$out/mw.srv"
swhole=$?
tap_import client "$out/mw.cli"
cwhole=$?
check "server ran every case (exit $src)" eval '[ $src -eq 0 ] && [ $swhole -eq 0 ]'
check "client ran every case (exit $crc)" eval '[ $crc -eq 0 ] && [ $cwhole -eq 0 ]'
check "no MR or QP of the test left on kiwi1" \
	eval 'kiwi_no_leftovers mw kiwi1 mr qp | sed "s/^/# /"; [ ${PIPESTATUS[0]} -eq 0 ]'
kiwi_two_devs_del
tap_end
