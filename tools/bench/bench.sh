#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: stage the built module, boot the VM, run tools/bench/run.sh
# there, then write the report on the host. Everything lands in
# build/bench (BENCH_OUT): raw.csv (every run), medians.csv, ratios.txt,
# bench.png, logs/ (each run's perftest/iperf3 output), env.txt, vm.log.
# Exits non-zero when a cell is missing or the VM run failed.
#
# The BENCH_* variables of tools/bench/run.sh pass through to the VM;
# BENCH_VM_TIMEOUT (seconds, default 7200) bounds the whole VM run.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${BENCH_OUT:-$root/build/bench}
cd "$root"
start=$SECONDS
rm -rf "$out"
mkdir -p "$out"
{
	echo "date: $(date -u '+%F %T') UTC"
	echo "host: $(uname -r), $(nproc) cores; VM: $(scripts/kernel-release.sh), 2 vCPUs, TCG"
	echo "host load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/env.txt"

scripts/stage.sh >"$out/stage.log" 2>&1 || { cat "$out/stage.log"; exit 1; }

# Pass on only the variables that are set: run.sh tells unset from empty.
vars=()
for v in BENCH_RUNS BENCH_QUICK BENCH_TRANSPORTS BENCH_TESTS BENCH_TIMEOUT BENCH_SKIP BENCH_BW_MB \
	BENCH_KIWI_PARAMS BENCH_STORAGE BENCH_STORAGE_MB; do
	[ -n "${!v+x}" ] && vars+=("$v=${!v}")
done
scripts/vm-run.sh --timeout "${BENCH_VM_TIMEOUT:-7200}" -- \
	env "${vars[@]}" tools/bench/run.sh "$out" 2>&1 | tee "$out/vm.log"
vmrc=${PIPESTATUS[0]}
echo "host load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/env.txt"

rrc=1
if [ -s "$out/raw.csv" ]; then
	echo
	# Debian's python3-matplotlib is for the system python3.
	/usr/bin/python3 tools/bench/report.py "$out/raw.csv" "$out"
	rrc=$?
fi
elapsed=$((SECONDS - start))
printf 'bench: total wall time %dm%02ds; results in %s\n' \
	$((elapsed / 60)) $((elapsed % 60)) "$out" | tee -a "$out/env.txt"
[ "$vmrc" -eq 0 ] && [ "$rrc" -eq 0 ]
