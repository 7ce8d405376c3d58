#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the VM: where the time of a small-message round trip goes (or,
# for a bandwidth test, the CPU time of a stream). For each transport and
# test, one perftest run (-R, PROF_SIZE bytes) gives the latency (or the
# bandwidth) and, under "perf stat -a", the context switches per round
# trip (message); a second run under "perf record -a -g" gives the
# kernel and user symbols that take the CPU time of both ends. The host side is
# "make bench-profile" (tools/bench/Makefile's caller), which boots the VM.
#
#   tools/bench/profile.sh OUTDIR
#
# Environment: PROF_TRANSPORTS (default "kiwi siw"), PROF_TESTS (default
# "write_lat send_lat read_lat"; write_bw, send_bw, read_bw work too),
# PROF_ITERS (round trips or messages per run, default 50000), PROF_SIZE
# (bytes per message, default 8), PROF_EVENT=1 (perftest -e: completion
# events, not polling),
# BENCH_KIWI_PARAMS (kiwi's module parameters).
#
# A third run (PROF_TRACE=0 leaves it out; PROF_TRACE_ITERS round trips,
# default 3000) has the function tracer on the functions along the path
# (trace_funcs) and tools/bench/stages.py turns their entry times into
# steps: the median time from one to the next, over both ends. Tracing
# slows each step; compare the transports' steps with each other.
#
# Results: OUTDIR/summary.txt (a line per run), OUTDIR/TR-TEST.report (perf
# report, the top symbols by self time), OUTDIR/TR-TEST.children (the same
# with their callees' time), OUTDIR/TR-TEST.stages (the traced steps),
# OUTDIR/TR-TEST.{data,trace,srv,cli,stat}.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
source "$root/tools/bench/lib-bench.sh"

out=${1:?usage: profile.sh OUTDIR}
iters=${PROF_ITERS:-50000}
size=${PROF_SIZE:-8}
mkdir -p "$out"
command -v perf >/dev/null || { echo "profile: no perf (linux-perf)" >&2; exit 1; }

port=19515
# lat_run TR TEST WRAP...: a server in kiwiB, the client in kiwiA under the
# WRAP command line (perf, system-wide, so both ends count); the server's
# exit status.
lat_run() {
	local tr=$1 test=$2 args srv cli wrap limit=300
	shift 2
	port=$((port + 1))
	args=(-R -F -p "$port" -n "$iters" -s "$size")
	[ "${PROF_EVENT:-0}" = 1 ] && args+=(-e)
	# perftest's Send credits over iWARP (lib-bench.sh)
	[ "$test" = send_bw ] && args+=(-r "$(rx_depth "$iters")")
	srv=("ib_$test" -d "$sdev" "${args[@]}")
	cli=("ib_$test" -d "$cdev" "${args[@]}" "$saddr")
	wrap=("$@")
	pair_run
}

# Functions along the round trip, traced with their entry times.
trace_funcs() {
	case $1 in
	kiwi)
		echo kiwi_post_send kiwi_tx_message kiwi_rx_data_ready kiwi_fpdu_end \
			kiwi_irq_add kiwi_tx_kick kiwi_tx_work kiwi_tx_read_resp \
			kiwi_sq_complete kiwi_cq_add ;;
	siw)
		echo siw_post_send siw_qp_sq_process siw_tx_ctrl siw_qp_llp_data_ready \
			siw_rdmap_complete siw_sq_start siw_sq_resume siw_sqe_complete \
			siw_rqe_complete ;;
	esac
	echo sock_sendmsg veth_xmit tcp_read_sock queue_work_on try_to_wake_up
}

# trace_run TR TEST: a run under the function tracer; its steps go to
# $log.stages (tools/bench/stages.py).
trace_run() {
	local t=/sys/kernel/tracing f ok=0
	[ -d "$t/events" ] || mount -t tracefs nodev "$t" || return 1
	echo nop >"$t/current_tracer"
	echo >"$t/set_ftrace_filter"
	for f in $(trace_funcs "$1"); do
		# One at a time: a name the kernel lacks fails only itself.
		echo "$f" >>"$t/set_ftrace_filter" 2>/dev/null && ok=1
	done
	[ $ok = 1 ] || return 1
	echo >"$t/trace"
	echo function >"$t/current_tracer"
	echo 1 >"$t/tracing_on"
	iters=${PROF_TRACE_ITERS:-3000} lat_run "$1" "$2"
	ok=$?
	echo 0 >"$t/tracing_on"
	# Before the tracer changes: that empties the buffer.
	cat "$t/trace" >"$log.trace"
	echo nop >"$t/current_tracer"
	echo >"$t/set_ftrace_filter"
	[ $ok = 0 ] && /usr/bin/python3 "$root/tools/bench/stages.py" "$log.trace" >"$log.stages"
}

bench_vm_prep || exit 1
echo "# profile: $iters round trips (messages) of $size B, $([ "${PROF_EVENT:-0}" = 1 ] && echo events || echo polling)" |
	tee "$out/summary.txt"
for tr in ${PROF_TRANSPORTS:-kiwi siw}; do
	setup "$tr" >"$out/setup-$tr" 2>&1 || { echo "profile: cannot set up $tr" >&2; continue; }
	for test in ${PROF_TESTS:-write_lat send_lat read_lat}; do
		log=$out/$tr-$test
		if ! lat_run "$tr" "$test" perf stat -a -x, -o "$log.stat" \
			-e context-switches,cpu-migrations --; then
			echo "$tr $test: failed (see $log.cli)" | tee -a "$out/summary.txt"
			continue
		fi
		# perftest's columns: t_typical (latency), BW average (bandwidth)
		case $test in
		*_bw) what="BW average, MB/s" lat=$(parse_perftest "$log.cli" 4) ;;
		*) what="t_typical, us" lat=$(parse_perftest "$log.cli" 5) ;;
		esac
		cs=$(awk -F, '$3 == "context-switches" { print $1 }' "$log.stat")
		printf '%-4s %-9s %s %s, %s context switches per round trip (message)\n' \
			"$tr" "$test" "$what" "${lat:-?}" "$(awk -v c="${cs:-0}" -v n="$iters" \
			'BEGIN { printf "%.2f", c / n }')" | tee -a "$out/summary.txt"
		lat_run "$tr" "$test" perf record -a -g -q -o "$log.data" -- ||
			echo "$tr $test: the profiled run failed" | tee -a "$out/summary.txt"
		# Self time per symbol, and time including callees (the stages:
		# the system call, TCP's send, the receive softirq, placement).
		perf report -i "$log.data" --stdio --no-children --percent-limit 0.5 \
			--sort dso,sym -g none 2>/dev/null | grep -v '^[#]*$' >"$log.report"
		perf report -i "$log.data" --stdio --children --percent-limit 1.5 \
			--sort sym -g none 2>/dev/null | grep -v '^[#]*$' >"$log.children"
		if [ "${PROF_TRACE:-1}" = 1 ] && ! trace_run "$tr" "$test"; then
			echo "$tr $test: the traced run failed" | tee -a "$out/summary.txt"
		fi
	done
	teardown "$tr"
done
kiwi_two_hosts_del
