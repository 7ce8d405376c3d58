#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: stage the built module, boot the VM, run tools/bench/run.sh
# there, then write the report on the host; then the same between two VMs
# (scripts/vm-pair.sh, tools/bench/pair.sh) and its report. Everything
# lands in build/bench (BENCH_OUT): raw.csv (every run), medians.csv,
# ratios.txt, bench.png, logs/ (each run's perftest/iperf3 output),
# env.txt, vm.log; the two-host path's in build/bench/pair/ (its VMs'
# output in pair.log). Exits non-zero when a cell is missing or a VM run
# failed.
#
# The BENCH_* variables of tools/bench/run.sh pass through to the VMs;
# BENCH_VM_TIMEOUT (seconds, default 7200) bounds each path's VM run;
# BENCH_PATHS (default "host pair") picks the paths: "host" the one VM
# (two namespaces joined by a veth pair), "pair" the two VMs.
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
	BENCH_KIWI_PARAMS BENCH_STORAGE BENCH_STORAGE_MB BENCH_PROGRAMS; do
	[ -n "${!v+x}" ] && vars+=("$v=${!v}")
done
paths=${BENCH_PATHS:-host pair}

# report DIR TITLE: the report of one path's runs; 1 when cells are missing.
report() {
	[ -s "$1/raw.csv" ] || return 1
	echo
	echo "== $2"
	# Debian's python3-matplotlib is for the system python3.
	/usr/bin/python3 tools/bench/report.py "$1/raw.csv" "$1"
}

vmrc=0 rrc=0
if [[ " $paths " == *" host "* ]]; then
	scripts/vm-run.sh --timeout "${BENCH_VM_TIMEOUT:-7200}" -- \
		env "${vars[@]}" tools/bench/run.sh "$out" 2>&1 | tee "$out/vm.log"
	vmrc=${PIPESTATUS[0]}
	report "$out" "one host: two namespaces joined by a veth pair, one VM of 2 vCPUs" ||
		rrc=1
fi
if [[ " $paths " == *" pair "* ]]; then
	mkdir -p "$out/pair"
	[ ${#vars[@]} -eq 0 ] || printf 'export %q\n' "${vars[@]}" >"$out/pair/env"
	scripts/vm-pair.sh --net tap --cpus "${BENCH_PAIR_CPUS:-1}" --memory 2G \
		--timeout "${BENCH_VM_TIMEOUT:-7200}" -- \
		tools/bench/pair.sh "$out/pair" >"$out/pair/pair.log" 2>&1
	prc=$?
	grep -E "^# (tcp|kiwi|siw|rxe|bench)" "$out/pair/pair.log"
	[ $prc -eq 0 ] || { vmrc=$prc; tail -20 "$out/pair/pair.log"; }
	report "$out/pair" "two hosts: two VMs of ${BENCH_PAIR_CPUS:-1} vCPUs each, virtio-net NICs on a host bridge (TSO)" ||
		rrc=1
fi
echo "host load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/env.txt"
elapsed=$((SECONDS - start))
printf 'bench: total wall time %dm%02ds; results in %s\n' \
	$((elapsed / 60)) $((elapsed % 60)) "$out" | tee -a "$out/env.txt"
[ "$vmrc" -eq 0 ] && [ "$rrc" -eq 0 ]
