#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the VM, after tools/bench/run.sh: the rows of programs that reach
# kiwi through a library, each against the same program over TCP on the
# same path (the namespaces kiwiA and kiwiB over the veth pair):
#   mpi_lat   8 / 4096 pingpong   Open MPI (OFI MTL on verbs;ofi_rxm)
#                                 ping-pong, half a round trip, us
#   mpi_bw    1048576 stream      a stream of 1 MiB MPI messages, MiB/s
#   rsocket_bw 131072 iperf       iperf (2) through librspreload, MiB/s
# kiwi_mpi (mpi.sh's program) checks every byte it receives. Rows go to
# OUTDIR/raw.csv as transport kiwi or tcp; report.py prints kiwi/TCP.
# BENCH_RUNS and BENCH_QUICK as for run.sh; the rounds interleave kiwi
# and TCP. One host only: on the two-host path mpirun would need a remote
# shell into the other VM.
#
#   tools/bench/programs.sh OUTDIR
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
source "$KIWI_TESTDIR/lib_programs.sh"

out=${1:?usage: programs.sh OUTDIR}
raw=$out/raw.csv
logs=$out/logs
mkdir -p "$logs"
if [ "${BENCH_QUICK:-0}" = 1 ]; then runs=${BENCH_RUNS:-1}; else runs=${BENCH_RUNS:-3}; fi
[ -s "$raw" ] || echo "transport,test,size,mode,iters,run,value,unit,status" >"$raw"
"$root/scripts/vm-install.sh" || { echo "programs: cannot install kiwi in the VM" >&2; exit 1; }

row() { # TRANSPORT TEST SIZE MODE RUN VALUE UNIT
	local status=ok
	[[ "$6" =~ ^[0-9]+(\.[0-9]+)?$ ]] && [[ ! "$6" =~ ^0*(\.0*)?$ ]] || status=fail
	echo "$1,$2,$3,$4,1,$5,$([ $status = ok ] && echo "$6"),$7,$status" >>"$raw"
	printf '# %-4s %-10s %7s %-8s run %d: %s %s\n' "$1" "$2" "$3" "$4" "$5" \
		"${6:-fail}" "$7"
}

kiwi_mpi_args "$KIWI_TESTDIR/mpi_rsh.sh"

# mpi TRANSPORT RUN: kiwi_mpi's two ranks, one a host; its figures as rows.
mpi() {
	local tr=$1 run=$2 log=$logs/mpi-$1-$2.log
	local -n via=KIWI_MPI_$([ "$tr" = kiwi ] && echo OFI || echo TCP)

	ip netns exec kiwiA timeout 300 mpirun --np 2 --host 192.0.2.1:1,192.0.2.2:1 \
		"${KIWI_MPI_COMMON[@]}" "${via[@]}" "$KIWI_TESTDIR/kiwi_mpi" </dev/null >"$log" 2>&1
	grep -qx "end 0" "$log" || : >"$log.failed"
	for size in 8 4096; do
		row "$tr" mpi_lat $size pingpong "$run" \
			"$([ -e "$log.failed" ] || sed -n "s/^pingpong $size B: \(.*\) us$/\1/p" "$log")" us
	done
	row "$tr" mpi_bw 1048576 stream "$run" \
		"$([ -e "$log.failed" ] || sed -n 's/^bandwidth 1048576 B: \(.*\) MiB\/s$/\1/p' "$log")" MiB/s
}

# rsocket TRANSPORT RUN: iperf -n 256M from kiwiA to kiwiB, through the
# preload for kiwi; MiB/s from the client's byte count and time.
rsocket() {
	local tr=$1 run=$2 name=logs/rsocket-$1-$2 pre=() v=

	[ "$tr" = kiwi ] && pre=(env LD_PRELOAD="$KIWI_RSPRELOAD")
	srv_start "$name" 5001 kiwiB "${pre[@]}" iperf -s -B 192.0.2.2 -p 5001 &&
		KIWI_TIMEOUT=120 cli_run "$name" kiwiA "${pre[@]}" iperf -c 192.0.2.2 -p 5001 \
			-n 256M -f m && v=$(awk '/256 MBytes/ { print $(NF - 1) }' "$out/$name.cli")
	srv_stop "$name" 5
	# iperf's "Mbits/sec" is 10^6 bits a second.
	[ -n "$v" ] && v=$(awk -v m="$v" 'BEGIN { printf "%.1f", m * 1e6 / 8 / 1048576 }')
	row "$tr" rsocket_bw 131072 iperf "$run" "$v" MiB/s
}

for run in $(seq 1 "$runs"); do
	for tr in kiwi tcp; do
		if ! kiwi_two_devs >/dev/null; then
			echo "# programs: kiwi devices not made"
			kiwi_two_devs_del
			continue
		fi
		ip -n kiwiA link set lo up && ip -n kiwiB link set lo up
		mpi "$tr" "$run"
		rsocket "$tr" "$run"
		kiwi_two_devs_del
		kiwi_devs_unload
	done
done
