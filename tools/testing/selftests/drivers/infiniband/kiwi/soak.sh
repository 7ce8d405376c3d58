#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Soak: checked data over several connections at once for a given time,
# MPA CRC required. Four streams run side by side until the time is up,
# each a loop of connections with a random message size:
#  - two kiwi_xfer streams: RDMA Write and Send of a per-round pattern into
#    the server, which checks every byte (1 B to 1 MiB, 2 to 12 rounds);
#  - two rping -V streams: Send, RDMA Read and RDMA Write, verified by
#    rping (16 B to 64000 B, 5 to 24 iterations).
# Any failed run fails the soak. The report gives bytes moved per stream.
#
#   KIWI_SOAK_SECONDS=1800 ./soak.sh      (default 120)
source "$(dirname "$0")/lib.sh"
tap_begin "soak"

secs=${KIWI_SOAK_SECONDS:-120}
X=$KIWI_TESTDIR/kiwi_xfer
end=$((SECONDS + secs))

# stream KIND N: loop until the time is up; writes "runs bytes failures"
# to $out/KIND-N.sum and each failure's output to $out/KIND-N.fail.
stream() {
	local kind=$1 n=$2 port=$((7600 + $2)) runs=0 bytes=0 fails=0 size count
	local addr=192.0.2.2
	[ $((n % 2)) = 1 ] && addr=2001:db8::2
	while [ $SECONDS -lt $end ]; do
		if [ "$kind" = xfer ]; then
			size=$((1 + (RANDOM * 32768 + RANDOM) % 1048576))
			count=$((2 + RANDOM % 11))
			srv=("$X" server "$addr" "$port" "$size" "$count")
			cli=("$X" client "$addr" "$port" "$size" "$count")
		else
			size=$((16 + (RANDOM * 32768 + RANDOM) % 63985))
			count=$((5 + RANDOM % 20))
			srv=(rping -s -a "$addr" -p "$port" -V -C "$count" -S "$size")
			cli=(rping -c -a "$addr" -p "$port" -V -C "$count" -S "$size")
		fi
		runs=$((runs + 1))
		if KIWI_TIMEOUT=300 pair "$kind-$n" "$port" kiwiB "${srv[@]}" -- \
			kiwiA "${cli[@]}" >"$out/$kind-$n.why"; then
			# xfer: a Write and a Send per round; rping: a Read and a Write.
			bytes=$((bytes + 2 * size * count))
		else
			fails=$((fails + 1))
			{ echo "run $runs: size $size count $count"
			  cat "$out/$kind-$n.why"
			  tail -3 "$out/$kind-$n.cli" "$out/$kind-$n.srv"; } >>"$out/$kind-$n.fail"
		fi
	done
	echo "$runs $bytes $fails" >"$out/$kind-$n.sum"
}

check "two hosts with a kiwi device each, MPA CRC required" kiwi_two_devs crc_required=1
echo "# soaking for $secs s"
pids=()
for s in xfer:0 xfer:1 rping:2 rping:3; do
	stream "${s%%:*}" "${s##*:}" &
	pids+=($!)
done
wait "${pids[@]}"

total=0
for s in xfer-0 xfer-1 rping-2 rping-3; do
	read -r runs bytes fails <"$out/$s.sum" || { runs=0 bytes=0 fails=1; }
	total=$((total + bytes))
	check "$s: $runs runs, $bytes bytes verified, $fails failed" test "$fails" = 0 -a "$runs" -gt 0
	[ ! -f "$out/$s.fail" ] || head -20 "$out/$s.fail" | sed 's/^/# /'
done
# A corrupted FPDU fails its CRC, which ends that run with a Terminate.
echo "# soak: $total bytes verified in $secs s"
kiwi_no_leftovers soak kiwi0 qp cq mr pd cm_id
kiwi_two_devs_del
tap_end
