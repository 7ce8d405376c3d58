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
# BENCH_TRANSPORTS (default "kiwi kiwi_crc kiwi_mss siw rxe tcp"; kiwi_crc
# is kiwi loaded with crc_required=1, so that both ends send and check the
# MPA CRC; kiwi_mss is kiwi with fpdu_segs=1, one TCP segment per FPDU as
# toward a peer that did not agree to large FPDUs, run on the bandwidth
# cells of 64 KiB and more and cpu_send), BENCH_BW_MB (MiB each bandwidth cell moves, default 256),
# BENCH_TIMEOUT (seconds one
# run may take before it counts as failed, default 120), BENCH_SKIP (cells
# not to run, "transport:test:size:mode" words; default: the known upstream
# hangs below), BENCH_KIWI_PARAMS (kiwi's module parameters, for example
# "zcopy_min=65536"), BENCH_TESTS (only these tests, for example
# "write_lat send_lat tcp_lat"; default all), BENCH_STORAGE=0 (no storage rows; see
# tools/bench/storage.sh, which also reads BENCH_STORAGE_MB), BENCH_PROGRAMS=0
# (no rows of Open MPI and rsockets; tools/bench/programs.sh).
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
transports=${BENCH_TRANSPORTS:-kiwi kiwi_crc kiwi_mss siw rxe tcp}
bw_mb=${BENCH_BW_MB:-256}
limit=${BENCH_TIMEOUT:-120}
# Measured hangs of the upstream drivers in this kernel: a hung run costs
# the whole timeout, so by default these are recorded as skipped instead.
skip=${BENCH_SKIP-rxe:read_bw:1048576:poll rxe:read_bw:1048576:event}

TCP_LAT=$root/tools/bench/tcp_lat
raw=$out/raw.csv
logs=$out/logs
mkdir -p "$logs"
[ -s "$raw" ] || echo "transport,test,size,mode,iters,run,value,unit,status" >"$raw"
[ -s "$out/cq_cpus.csv" ] ||
	echo "transport,test,size,mode,run,cpu,cqes,handlers,remote" >"$out/cq_cpus.csv"

# The cells: test size mode. perftest refuses -e for RDMA Write, so Write
# runs in polling mode only. The scaling and CPU cells run for kiwi, siw
# and TCP (tcp_cells): rxe's are not asked for.
#   scale_qp 65536 N     one perftest write_bw with N QPs (-q N); TCP:
#                        iperf3 -P N
#   scale_proc 65536 N   N write_bw processes at once, one QP each; the
#                        aggregate is the sum. They run for a time (-D 10,
#                        measured for 6 s between 2 s margins) so that
#                        their measured windows overlap; TCP: N iperf3
#                        clients measuring 6 s after 2 s
#   cpu_send 65536 event CPU seconds per GiB moved (all CPUs, both ends,
#                        user and kernel): ib_send_bw -e, which sleeps on
#                        its events, once with 1 GiB and once with 15
#                        messages, the difference divided by the
#                        difference in bytes (so the programs' start-up
#                        cancels); TCP: tcp_cpu, iperf3 the same way
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
	[ "$tr" = rxe ] && return
	scale_cells
	echo "cpu_send 65536 event"
}

# The scaling cells: one host only (the two-host path measures one
# connection's cells, its CPU time and storage).
scale_cells() {
	local n
	[ -n "${BENCH_PAIR:-}" ] && return
	for n in 1 2 4 8; do echo "scale_qp 65536 $n"; done
	for n in 1 2 4; do echo "scale_proc 65536 $n"; done
}

tcp_cells() {
	echo "tcp_bw 4096 any"
	echo "tcp_bw 65536 any"
	echo "tcp_bw 1048576 any"
	echo "tcp_lat 8 poll"
	echo "tcp_lat 8 event"
	scale_cells
	echo "tcp_cpu 65536 event"
}

# iters SIZE [TEST MODE]: messages per run, the same for every transport.
# Bandwidth cells move BENCH_BW_MB (256 MiB: 65,537 messages of 4 KiB,
# 4,097 of 64 KiB, 257 of 1 MiB); latency cells make 5,000 round trips.
# scale_qp's count is per QP (perftest -n), so its total is the same.
iters() {
	local n
	if [ "$1" = 8 ]; then
		n=5000
	else
		n=$((bw_mb * 1048576 / $1))
		[ "${2:-}" = scale_qp ] && n=$((n / $3))
	fi
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

hz=$(getconf CLK_TCK)

# commands: the server and client command lines of one run (one pair of
# scale_proc's), on a fresh port. Uses one()'s variables.
commands() {
	local args
	port=$((port + 1))
	case $test in
	tcp_bw | tcp_cpu)
		srv=(iperf3 -s -1 -p "$port")
		cli=(iperf3 -c "$saddr" -p "$port" -n $((n * size)) -l "$size" -J) ;;
	tcp_lat)
		srv=("$TCP_LAT" -s -p "$port")
		cli=("$TCP_LAT" -c "$saddr" -p "$port" -n "$n" -m "$size")
		[ "$mode" = poll ] && { srv+=(-P); cli+=(-P); } ;;
	scale_qp | scale_proc)
		if [ "$tr" = tcp ]; then
			srv=(iperf3 -s -1 -p "$port")
			if [ "$test" = scale_qp ]; then
				cli=(iperf3 -c "$saddr" -p "$port" -P "$mode"
				     -n $((n * mode * size)) -l "$size" -J)
			else
				# -t counts after the omitted -O seconds.
				cli=(iperf3 -c "$saddr" -p "$port" -t 6 -O 2 -l "$size" -J)
			fi
		else
			args=(-R -F -p "$port" -s "$size")
			if [ "$test" = scale_qp ]; then
				args+=(-n "$n" -q "$mode")
			else
				args+=(-D 10 -f 2)
			fi
			srv=(ib_write_bw -d "$sdev" "${args[@]}")
			cli=(ib_write_bw -d "$cdev" "${args[@]}" "$saddr")
		fi ;;
	*)
		local t=$test
		args=(-R -F -p "$port" -n "$n" -s "$size")
		[ "$t" = cpu_send ] && t=send_bw
		[ "$mode" = event ] && args+=(-e)
		[ "$t" = send_bw ] && args+=(-r "$(rx_depth "$n")")
		srv=("ib_$t" -d "$sdev" "${args[@]}")
		cli=("ib_$t" -d "$cdev" "${args[@]}" "$saddr") ;;
	esac
}

# multi_run: scale_proc's $mode pairs at once: every server, then once all
# listen every client. Outputs in $log.srvI and $log.cliI, all clients'
# also in $log.cli; crc is 0 when every client succeeded, 124 when one
# timed out, else 1.
multi_run() {
	local i pre c rc spids=() cpids=() clis=() ports=()
	crc=0
	nsprefix "$sns"
	for ((i = 0; i < mode; i++)); do
		commands
		"${pre[@]}" stdbuf -oL -eL timeout "$limit" "${srv[@]}" >"$log.srv$i" 2>&1 &
		spids+=($!)
		ports+=("$port")
		clis+=("${cli[*]}")
	done
	for ((i = 0; i < mode; i++)); do
		wait_for 30 listening "$tr" "${ports[i]}" "${spids[i]}" && continue
		echo "bench: ${log##*/}: server $i never listened" >>"$log.cli0"
		crc=1
	done
	if [ $crc -eq 0 ]; then
		nsprefix "$cns"
		for ((i = 0; i < mode; i++)); do
			read -ra c <<<"${clis[i]}"
			"${pre[@]}" timeout "$limit" "${c[@]}" >"$log.cli$i" 2>&1 &
			cpids+=($!)
		done
		for ((i = 0; i < mode; i++)); do
			wait "${cpids[i]}"
			rc=$?
			[ $rc -eq 0 ] || [ $crc -eq 124 ] || crc=$rc
		done
		[ $crc -eq 0 ] || [ $crc -eq 124 ] || crc=1
	fi
	[ $crc -eq 0 ] || kill "${spids[@]}" 2>/dev/null
	wait "${spids[@]}"
	cat "$log".cli[0-9]* >"$log.cli" 2>/dev/null
}

# cpu_run: cpu_send's or tcp_cpu's two runs, 1 GiB and 15 messages
# (BENCH_QUICK: a fifth of the GiB); sets n (the large count), bytes
# (how many more the large run moved) and ticks (the CPU ticks those
# bytes took).
cpu_run() {
	local b0 b1 b2 b3 small=15
	n=$small
	commands
	b0=$(busy_ticks)
	pair_run
	b1=$(busy_ticks)
	mv "$log.cli" "$log.cli.small"
	n=$(((1024 * 1048576 / div / size) | 1))
	[ $crc -eq 0 ] || return
	commands
	b2=$(busy_ticks)
	pair_run
	b3=$(busy_ticks)
	ticks=$(((b3 - b2) - (b1 - b0)))
	bytes=$(((n - small) * size))
}

# bw_of LOG: the bandwidth one client reported (MiB/s). For scale_proc's
# perftest, the messages it counted in its measured window (-D 10 -f 2: 6
# seconds, timed by alarm()) over that window: its own figure divides by
# TSC cycles, whose calibration at start fails while the other processes
# of the cell start up and run beside it (it then reports 0).
bw_of() {
	if [ "$tr" = tcp ]; then
		parse_iperf3 "$1"
	elif [ "$test" = scale_proc ]; then
		parse_perftest "$1" 2 |
			awk -v s="$size" '$1 > 0 { printf "%.2f\n", $1 * s / 6 / 1048576 }'
	else
		parse_perftest "$1" 4
	fi
}

# result: value and status of the run just made.
result() {
	local i v
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
	scale_qp) value=$(bw_of "$log.cli") ;;
	scale_proc)
		value=0
		for ((i = 0; i < mode; i++)); do
			v=$(bw_of "$log.cli$i")
			[[ "$v" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { value=''; break; }
			value=$(awk -v a="$value" -v b="$v" 'BEGIN { printf "%.2f", a + b }')
		done ;;
	cpu_send | tcp_cpu)
		value=$(awk -v t="$ticks" -v hz="$hz" -v b="$bytes" \
			'BEGIN { if (t > 0) printf "%.3f", t / hz / (b / 2^30) }') ;;
	*_bw) value=$(parse_perftest "$log.cli" 4) ;;
	*) value=$(parse_perftest "$log.cli" 5) ;;
	esac
	# A number, and not zero (perftest's sign of a failed clock).
	[[ "$value" =~ ^[0-9]+(\.[0-9]+)?$ && ! "$value" =~ ^[0.]+$ ]] ||
		{ value=''; status=fail; }
}

# one TRANSPORT TEST SIZE MODE RUN: one run, appended to raw.csv; for
# kiwi, each CPU's completion work in it to cq_cpus.csv.
one() {
	local tr=$1 test=$2 size=$3 mode=$4 run=$5 n unit value='' status=ok
	local log=$logs/$tr-$test-$size-$mode-$run srv cli crc attempt ticks bytes cpus
	n=$(iters "$size" "$test" "$mode")
	case $test in
	*_bw | scale_*) unit=MiB/s ;;
	*_cpu | cpu_*) unit=s/GiB ;;
	*) unit=us ;;
	esac
	cpus=$(kiwi_cq_cpus)
	if [[ " $skip " == *" $tr:$test:$size:$mode "* ]]; then
		status=skip
	elif [ -n "$broken" ]; then
		status=fail
	else
		# perftest times with the TSC, calibrated against the wall clock
		# at start; under load the calibration fails ("Correlation
		# coefficient ... < 0.9") and the run reports 0 or inf: retry.
		# A clean exit with a zero result is the same failure unannounced.
		# Five tries: a full make bench met three failed calibrations
		# in a row once.
		for attempt in 1 2 3 4 5; do
			case $test in
			scale_proc) multi_run ;;
			cpu_send | tcp_cpu) cpu_run ;;
			*) commands; pair_run ;;
			esac
			result
			[ "$test" != scale_proc ] &&
				grep -q "^Correlation coefficient" "$log.cli" && continue
			# perftest -R's server refuses a client that connects
			# before it listens again (lib.sh, perftest_pair).
			grep -q "RDMA_CM_EVENT_REJECTED; error: -111" "$log.cli" && continue
			[ "$status" = fail ] && [ "$crc" -eq 0 ] && continue
			break
		done
	fi
	echo "$tr,$test,$size,$mode,$n,$run,$value,$unit,$status" >>"$raw"
	printf '# %-8s %-10s %7s %-5s run %d: %s %s\n' "$tr" "$test" "$size" "$mode" \
		"$run" "${value:-$status}" "$unit"
	[ "$status" = fail ] && grep -hiE -m1 "error|fail|unable|refused|reject" \
		"$log.cli" "$log.srv" 2>/dev/null | head -n1 | sed 's/^/#   /'
	# After a timeout the cell is not run again: it would only hang again.
	[ "$status" = timeout ] && skip+=" $tr:$test:$size:$mode"
	[ -n "$cpus" ] && [ "$status" = ok ] &&
		kiwi_cq_cpus_delta "$cpus" "$tr,$test,$size,$mode,$run" >>"$out/cq_cpus.csv"
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
			# The FPDU size matters where messages span FPDUs.
			[ "$tr" != kiwi_mss ] || [ "$test" = cpu_send ] ||
				{ [[ $test == *_bw ]] && [ "$size" -ge 65536 ]; } || continue
			one "$tr" "$test" "$size" "$mode" "$run" </dev/null
		done < <(if [ "$tr" = tcp ]; then tcp_cells; else cells; fi)
		teardown "$tr"
	done
done
[ -n "${BENCH_PAIR:-}" ] || kiwi_two_hosts_del
echo "# bench: $runs run(s) of each cell in $((SECONDS - start)) s"

# The storage rows: NVMe-oF and NFS over kiwi against them over TCP.
if [ "${BENCH_STORAGE:-1}" != 0 ] && [[ " $transports " == *" kiwi "* ]]; then
	"$root/tools/bench/storage.sh" "$out" ||
		echo "bench: the storage rows could not be measured" >&2
fi

# Programs reaching kiwi through a library (Open MPI, rsockets) against
# them over TCP; one host only (tools/bench/programs.sh).
if [ "${BENCH_PROGRAMS:-1}" != 0 ] && [ -z "${BENCH_PAIR:-}" ] &&
	[[ " $transports " == *" kiwi "* ]]; then
	"$root/tools/bench/programs.sh" "$out" ||
		echo "bench: the programs' rows could not be measured" >&2
fi
