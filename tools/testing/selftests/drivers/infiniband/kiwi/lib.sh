#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers for kiwi's kselftest scripts: TAP output and device plumbing.
# Each test script sources this, calls tap_begin, runs its checks and ends
# with tap_end, which prints the plan and exits 1 if anything failed.

KIWI_TESTDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KIWI_UVERBS=$KIWI_TESTDIR/kiwi_uverbs
_tap_n=0
_tap_failed=0

tap_begin() {
	echo "TAP version 13"
	echo "# $(basename "$0"): $*"
}

ok() {
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n $*"
}

not_ok() {
	_tap_n=$((_tap_n + 1))
	_tap_failed=$((_tap_failed + 1))
	echo "not ok $_tap_n $*"
}

# check DESCRIPTION CMD...: one test point, passing when CMD succeeds.
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

tap_end() {
	echo "1..$_tap_n"
	[ "$_tap_failed" -eq 0 ]
	exit $?
}

# fails_with ERRMSG CMD...: CMD must fail and print ERRMSG on stderr.
fails_with() {
	local want=$1 out
	shift
	if out=$("$@" 2>&1); then
		echo "# unexpectedly succeeded: $*"
		return 1
	fi
	if [[ "$out" != *"$want"* ]]; then
		echo "# expected '$want', got: $out"
		return 1
	fi
	return 0
}

# Output must contain a line matching the regex.
has_line() {
	grep -qE "$2" <<<"$1" || { echo "# no line matching '$2' in:"; sed 's/^/#   /' <<<"$1"; return 1; }
}

ibdev_exists() { [ -e "/sys/class/infiniband/$1" ]; }
ibdev_absent() { [ ! -e "/sys/class/infiniband/$1" ]; }

# Count kiwi devices (any name): their driver id is KIWI_DRIVER_ID.
kiwi_dev_count() {
	rdma -j dev show 2>/dev/null | grep -o '"ifname":"[^"]*"' | wc -l
}

# wait_for SECONDS CMD...: poll until CMD succeeds.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.2
	done
}

# uverbs_dir DEV: the sysfs directory of DEV's uverbs character device.
uverbs_dir() {
	local d
	for d in /sys/class/infiniband_verbs/uverbs*; do
		[ "$(cat "$d/ibdev" 2>/dev/null)" = "$1" ] && { echo "$d"; return 0; }
	done
	return 1
}

port_state() {
	cat "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null
}

port_phys_state() {
	cat "/sys/class/infiniband/$1/ports/1/phys_state" 2>/dev/null
}

# query_field DEV FIELD: one value from "kiwi_uverbs query".
query_field() {
	"$KIWI_UVERBS" query "$1" | sed -n "s/^$2=//p"
}

# kiwi_veth_dev DEV: fresh module, a veth pair kva/kvb that is up, and
# kiwi device DEV on kva.
kiwi_veth_dev() {
	kiwi_unload
	modprobe kiwi &&
	ip link add kva type veth peer name kvb &&
	ip link set kva up &&
	ip link set kvb up &&
	rdma link add "$1" type kiwi netdev kva
}

kiwi_unload() {
	modprobe -r kiwi 2>/dev/null || true
}
