#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Socket programs that know nothing of RDMA, over kiwi through rdma-core's
# rsocket preload library (librspreload), each run the same way over plain
# TCP for comparison: wget fetches a 32 MiB file of random bytes from
# python3's http.server and the copy must be identical; iperf (2) moves
# 128 MiB and both ends must count all of it. kiwi's CQs must have seen
# the traffic. Which programs rsockets cannot carry, on kiwi or on siw,
# and why: Documentation/infiniband/kiwi.rst, "Real programs".
source "$(dirname "$0")/lib.sh"
source "$KIWI_TESTDIR/lib_programs.sh"
tap_begin "socket programs over rsockets (librspreload) on kiwi, and over TCP"

check "rdma-core's rsocket preload library is installed ($KIWI_RSPRELOAD)" test -n "$KIWI_RSPRELOAD"
check "two hosts with a kiwi device each" kiwi_two_devs

mkdir -p "$out/www"
head -c 32M /dev/urandom >"$out/www/file"
declare -A secs cq

# fetch MODE: wget in kiwiA fetches the file from http.server in kiwiB,
# over TCP (MODE tcp) or rsockets (rs); the copy is compared.
fetch() {
	local mode=$1 pre=() c0 t0 rc

	[ "$mode" = rs ] && pre=(env LD_PRELOAD="$KIWI_RSPRELOAD")
	c0=$(kiwi_cqes)
	srv_start "http-$mode" 8000 kiwiB "${pre[@]}" python3 -m http.server \
		-b 192.0.2.2 -d "$out/www" 8000 || { echo "# http.server did not listen"; return 1; }
	t0=$SECONDS
	KIWI_TIMEOUT=60 cli_run "http-$mode" kiwiA "${pre[@]}" wget -nv \
		-O "$out/copy-$mode" http://192.0.2.2:8000/file
	rc=$?
	secs[$mode]=$((SECONDS - t0))
	srv_stop "http-$mode"
	cq[$mode]=$(($(kiwi_cqes) - c0))
	[ $rc = 0 ] || { echo "# wget: exit $rc"; sed 's/^/#   /' "$out/http-$mode.cli"; return 1; }
	cmp "$out/www/file" "$out/copy-$mode"
}

# stream MODE: iperf -n 128M from kiwiA to kiwiB; prints the client's
# bit rate into $out/rate-MODE. Both ends must report 128 MBytes.
stream() {
	local mode=$1 pre=() c0 rc

	[ "$mode" = rs ] && pre=(env LD_PRELOAD="$KIWI_RSPRELOAD")
	c0=$(kiwi_cqes)
	srv_start "iperf-$mode" 5001 kiwiB "${pre[@]}" iperf -s -B 192.0.2.2 -p 5001 ||
		{ echo "# iperf -s did not listen"; return 1; }
	KIWI_TIMEOUT=60 cli_run "iperf-$mode" kiwiA "${pre[@]}" iperf -c 192.0.2.2 -p 5001 -n 128M
	rc=$?
	# The server reports once the stream has ended; then it is stopped.
	wait_for 10 grep -q "128 MBytes" "$out/iperf-$mode.srv"
	srv_stop "iperf-$mode"
	cq[$mode]=$(($(kiwi_cqes) - c0))
	[ $rc = 0 ] || { echo "# iperf: exit $rc"; sed 's/^/#   /' "$out/iperf-$mode.cli"; return 1; }
	grep -o "128 MBytes.*" "$out/iperf-$mode.cli" | awk '{ print $3, $4 }' >"$out/rate-$mode"
	grep -q "128 MBytes" "$out/iperf-$mode.cli" && grep -q "128 MBytes" "$out/iperf-$mode.srv" &&
		return 0
	echo "# iperf: not all 128 MiB counted at both ends"
	sed 's/^/#   /' "$out/iperf-$mode.cli" "$out/iperf-$mode.srv"
	return 1
}

# over_kiwi MIN: at least MIN completions on kiwi's CQs in the last rs run.
over_kiwi() {
	[ "${cq[rs]}" -ge "$1" ] && return 0
	echo "# only ${cq[rs]} completions on kiwi's CQs"
	return 1
}

check "TCP: wget fetches 32 MiB from python3's http.server, identical" fetch tcp
# A 128 KiB rsocket buffer a completion at most: 256 for 32 MiB.
check "rsockets on kiwi: the same fetch, identical, through kiwi's CQs" \
	eval 'fetch rs && over_kiwi 256'
echo "# wget of 32 MiB: TCP ${secs[tcp]} s, rsockets on kiwi ${secs[rs]} s (cqes ${cq[rs]})"
check "TCP: iperf moves 128 MiB" stream tcp
check "rsockets on kiwi: iperf moves 128 MiB, through kiwi's CQs" \
	eval 'stream rs && over_kiwi 1024'
echo "# iperf 128 MiB: TCP $(cat "$out/rate-tcp" 2>/dev/null), rsockets on kiwi $(cat "$out/rate-rs" 2>/dev/null) (cqes ${cq[rs]})"

kiwi_two_devs_del
check "kiwi unloads" kiwi_devs_unload
tap_end
