#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the VM (tools/bench/bench.sh boots it): measure kiwi, the
# upstream siw, rxe and plain TCP on the same path and append every run to
# OUTDIR/raw.csv; tools/bench/report.py turns that into medians and ratios.
#
#   tools/bench/run.sh OUTDIR
#
# Environment: BENCH_RUNS (runs per cell, default 3), BENCH_QUICK=1
# (iteration counts / 5, one run unless BENCH_RUNS says otherwise),
# BENCH_TRANSPORTS (default "kiwi siw rxe tcp"), BENCH_TIMEOUT (seconds one
# run may take before it counts as failed, default 120), BENCH_SKIP (cells
# not to run, "transport:test:size:mode" words; default: the known upstream
# hangs below), BENCH_KIWI_PARAMS (kiwi's module parameters, for example
# "zcopy_min=65536"), BENCH_TESTS (only these tests, for example
# "write_lat send_lat tcp_lat"; default all), BENCH_STORAGE=0 (no storage rows; see
# tools/bench/storage.sh, which also reads BENCH_STORAGE_MB).
#
# kiwi, siw and TCP run between the namespaces kiwiA and kiwiB over the
# veth pair kvA/kvB of lib.sh's kiwi_two_hosts. rxe in this kernel (6.1)
# opens its UDP socket and routes only in the initial namespace, so it
# runs on a veth pair there, with policy routing that sends each peer
# address out of the other end: its packets still cross a veth.
#
# Only one RDMA driver's devices exist at a time (a wildcard rdma_cm
# listen, which perftest's server makes, tries every iWARP device). The
# rounds go kiwi, siw, rxe, TCP and repeat BENCH_RUNS times, so that a
# change in the machine's load touches every transport alike.
# Every count is an iteration count (perftest -n, iperf3 -n), never a time.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
source "$root/tools/bench/lib-bench.sh"

out=${1:?usage: run.sh OUTDIR}
quick=${BENCH_QUICK:-0}
if [ "$quick" = 1 ]; then
	runs=${BENCH_RUNS:-1}
	div=5
else
	runs=${BENCH_RUNS:-3}
	div=1
fi
transports=${BENCH_TRANSPORTS:-kiwi siw rxe tcp}
limit=${BENCH_TIMEOUT:-120}
# Measured hangs of the upstream drivers in this kernel: a hung run costs
# the whole timeout, so by default these are recorded as skipped instead.
skip=${BENCH_SKIP-rxe:read_bw:1048576:poll rxe:read_bw:1048576:event}

TCP_LAT=$root/tools/bench/tcp_lat
raw=$out/raw.csv
logs=$out/logs
mkdir -p "$logs"
[ -s "$raw" ] || echo "transport,test,size,mode,iters,run,value,unit,status" >"$raw"

# The cells: test size mode. perftest refuses -e for RDMA Write, so Write
# runs in polling mode only.
cells() {
	local s
	for s in 4096 65536 1048576; do
		echo "write_bw $s poll"
		echo "read_bw $s poll"
		echo "read_bw $s event"
		echo "send_bw $s poll"
		echo "send_bw $s event"
	done
	echo "write_lat 8 poll"
	echo "read_lat 8 poll"
	echo "read_lat 8 event"
	echo "send_lat 8 poll"
	echo "send_lat 8 event"
}

tcp_cells() {
	echo "tcp_bw 4096 any"
	echo "tcp_bw 65536 any"
	echo "tcp_bw 1048576 any"
	echo "tcp_lat 8 poll"
	echo "tcp_lat 8 event"
}

# iters SIZE: messages per run, the same for every transport and test.
# Odd and below 512 for the bandwidth tests: over iWARP perftest's
# ib_send_bw paces the sender with credits that the receiver returns by
# RDMA Write every rx_depth/3 messages (rx_depth = min(iters, 512), made
# even), and such a Write completes nothing at the sender. In event mode a
# sender that runs out of credit with no signaled Send outstanding sleeps
# on its CQ for good; with iters odd and below 512, rx_depth = iters + 1
# and the credit never runs out.
iters() {
	local n
	case $1 in
	8) n=5000 ;;
	4096) n=511 ;;
	65536) n=255 ;;
	*) n=31 ;;
	esac
	n=$((n / div))
	[ "$1" = 8 ] || n=$((n | 1))
	echo "$n"
}

parse_iperf3() {
	python3 -c 'import json, sys
print("%.2f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 8 / 2**20))' "$1" 2>/dev/null
}

port=18515
broken=''

# commands: the server and client command lines of one run, on a fresh
# port. Uses one()'s variables.
commands() {
	port=$((port + 1))
	case $test in
	tcp_bw)
		srv=(iperf3 -s -1 -p "$port")
		cli=(iperf3 -c "$saddr" -p "$port" -n $((n * size)) -l "$size" -J) ;;
	tcp_lat)
		srv=("$TCP_LAT" -s -p "$port")
		cli=("$TCP_LAT" -c "$saddr" -p "$port" -n "$n" -m "$size")
		[ "$mode" = poll ] && { srv+=(-P); cli+=(-P); } ;;
	*)
		local args=(-R -F -p "$port" -n "$n" -s "$size")
		[ "$mode" = event ] && args+=(-e)
		srv=("ib_$test" -d "$sdev" "${args[@]}")
		cli=("ib_$test" -d "$cdev" "${args[@]}" "$saddr") ;;
	esac
}

# result: value and status of the run just made.
result() {
	value='' status=ok
	if [ $crc -eq 124 ]; then
		status=timeout
		return
	elif [ $crc -ne 0 ]; then
		status=fail
		return
	fi
	case $test in
	tcp_bw) value=$(parse_iperf3 "$log.cli") ;;
	tcp_lat) value=$(sed -n 's/.*median_us=\([0-9.]*\).*/\1/p' "$log.cli") ;;
	*_bw) value=$(parse_perftest "$log.cli" 4) ;;
	*) value=$(parse_perftest "$log.cli" 5) ;;
	esac
	# A number, and not zero (perftest's sign of a failed clock).
	[[ "$value" =~ ^[0-9]+(\.[0-9]+)?$ && ! "$value" =~ ^[0.]+$ ]] ||
		{ value=''; status=fail; }
}

# one TRANSPORT TEST SIZE MODE RUN: one run, appended to raw.csv.
one() {
	local tr=$1 test=$2 size=$3 mode=$4 run=$5 n unit value='' status=ok
	local log=$logs/$tr-$test-$size-$mode-$run srv cli crc attempt
	n=$(iters "$size")
	case $test in
	*_bw) unit=MiB/s ;;
	*) unit=us ;;
	esac
	if [[ " $skip " == *" $tr:$test:$size:$mode "* ]]; then
		status=skip
	elif [ -n "$broken" ]; then
		status=fail
	else
		# perftest times with the TSC, calibrated against the wall clock
		# at start; under load the calibration fails ("Correlation
		# coefficient ... < 0.9") and the run reports 0 or inf: retry.
		# A clean exit with a zero result is the same failure unannounced.
		for attempt in 1 2 3; do
			commands
			pair_run
			result
			grep -q "^Correlation coefficient" "$log.cli" && continue
			# perftest -R's server refuses a client that connects
			# before it listens again (lib.sh, perftest_pair).
			grep -q "RDMA_CM_EVENT_REJECTED; error: -111" "$log.cli" && continue
			[ "$status" = fail ] && [ "$crc" -eq 0 ] && continue
			break
		done
	fi
	echo "$tr,$test,$size,$mode,$n,$run,$value,$unit,$status" >>"$raw"
	printf '# %-4s %-9s %7s %-5s run %d: %s %s\n' "$tr" "$test" "$size" "$mode" \
		"$run" "${value:-$status}" "$unit"
	[ "$status" = fail ] && grep -hiE -m1 "error|fail|unable|refused|reject" \
		"$log.cli" "$log.srv" 2>/dev/null | head -n1 | sed 's/^/#   /'
	# After a timeout the cell is not run again: it would only hang again.
	[ "$status" = timeout ] && skip+=" $tr:$test:$size:$mode"
}

bench_vm_prep || exit 1

start=$SECONDS
for run in $(seq "$runs"); do
	for tr in $transports; do
		broken=''
		if ! setup "$tr" >"$logs/setup-$tr-$run" 2>&1; then
			# Its cells are recorded as failed runs, not left out.
			echo "bench: cannot set up $tr (see $logs/setup-$tr-$run)" >&2
			broken=1
		fi
		while read -r test size mode; do
			[ -z "${BENCH_TESTS:-}" ] || [[ " $BENCH_TESTS " == *" $test "* ]] ||
				continue
			one "$tr" "$test" "$size" "$mode" "$run" </dev/null
		done < <(if [ "$tr" = tcp ]; then tcp_cells; else cells; fi)
		teardown "$tr"
	done
done
kiwi_two_hosts_del
echo "# bench: $runs run(s) of each cell in $((SECONDS - start)) s"

# The storage rows: NVMe-oF and NFS over kiwi against them over TCP.
if [ "${BENCH_STORAGE:-1}" != 0 ] && [[ " $transports " == *" kiwi "* ]]; then
	"$root/tools/bench/storage.sh" "$out" ||
		echo "bench: the storage rows could not be measured" >&2
fi
