#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Module parameters: out-of-range values refuse the load with a message in
# the kernel log; valid values are taken.
source "$(dirname "$0")/lib.sh"
tap_begin "module parameters"

kiwi_unload

# refused PARAM=VALUE LOGTEXT: the load fails, nothing stays loaded, and the
# kernel log explains.
refused() {
	dmesg -C
	if modprobe kiwi "$1" 2>/dev/null; then
		echo "# modprobe kiwi $1 succeeded"
		kiwi_unload
		return 1
	fi
	[ ! -e /sys/module/kiwi ] || { echo "# module stayed loaded"; return 1; }
	dmesg | grep -qF "$2" || { echo "# kernel log lacks '$2':"; dmesg | sed 's/^/#   /'; return 1; }
}

check "mpa_rev=3 refused with a message" refused mpa_rev=3 "mpa_rev=3 is out of range"
check "mpa_rev=0 refused with a message" refused mpa_rev=0 "mpa_rev=0 is out of range"
check "mpa_rev=two refused with a message" refused mpa_rev=two "mpa_rev=two is out of range"
check "crc_required=maybe refused with a message" \
	refused crc_required=maybe "invalid for parameter \`crc_required'"
check "llp_timeout=0 refused with a message" \
	refused llp_timeout=0 "llp_timeout=0 is out of range"
check "fpdu_segs=0 refused with a message" \
	refused fpdu_segs=0 "fpdu_segs=0 is out of range"
check "fpdu_segs=65 refused with a message" \
	refused fpdu_segs=65 "fpdu_segs=65 is out of range"

check "mpa_rev=1 crc_required=1 loads" modprobe kiwi mpa_rev=1 crc_required=1
check "mpa_rev reads back 1" test "$(cat /sys/module/kiwi/parameters/mpa_rev)" = 1
check "crc_required reads back Y" \
	test "$(cat /sys/module/kiwi/parameters/crc_required)" = Y
kiwi_unload
check "defaults: mpa_rev 2, crc_required N, fpdu_segs 64 (large FPDUs offered)" \
	eval 'modprobe kiwi &&
	      test "$(cat /sys/module/kiwi/parameters/mpa_rev)" = 2 &&
	      test "$(cat /sys/module/kiwi/parameters/crc_required)" = N &&
	      test "$(cat /sys/module/kiwi/parameters/fpdu_segs)" = 64'
# setparam FILE VALUE: a write to a loaded module's parameter
setparam() { echo "$2" 2>/dev/null >"/sys/module/kiwi/parameters/$1"; }
check "fpdu_segs takes 1 at run time (the offer withdrawn)" \
	eval 'setparam fpdu_segs 1 && test "$(cat /sys/module/kiwi/parameters/fpdu_segs)" = 1'
check "fpdu_segs refuses 0 at run time, and keeps 1" \
	eval '! setparam fpdu_segs 0 && test "$(cat /sys/module/kiwi/parameters/fpdu_segs)" = 1'
kiwi_unload
tap_end
