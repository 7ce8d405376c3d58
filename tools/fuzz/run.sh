#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build and run each fuzzer named on the command line, starting from its
# corpus kept in git (corpus/<fuzzer>/) and the generated seeds; new
# inputs go to work/<fuzzer>/, so git's corpus is only read. Each runs for
# FUZZ_SECONDS (default 15), or, with FUZZ_RUNS set, for that many
# executions (FUZZ_SECONDS, when set too, still limits it). FUZZ_MAX_LEN
# caps the input size (default 4096). Prints one TAP line per fuzzer;
# exits 1 if any fuzzer fails to build or finds a crash. Called by
# "make run".
cd "$(dirname "$0")" || exit 1
secs=${FUZZ_SECONDS:-15}
runs=${FUZZ_RUNS:-}
maxlen=${FUZZ_MAX_LEN:-4096}
make=${MAKE:-make}
n=0
failed=0

if [ -n "$runs" ]; then
	limit="-runs=$runs"
	[ -n "${FUZZ_SECONDS:-}" ] && limit="$limit -max_total_time=$secs"
	what="$runs runs"
else
	limit="-max_total_time=$secs"
	what="$secs s"
fi

echo "TAP version 13"
echo "# kiwi fuzzers (wire format, receive state machine, ring entries), $what each"
mkdir -p logs artifacts
if ! $make -s seeds >logs/seeds.log 2>&1; then
	sed 's/^/# /' logs/seeds.log | tail -20
	echo "# seed generation failed: fuzzing from the kept corpus only"
fi

for fz in "$@"; do
	n=$((n + 1))
	log=logs/$fz.log
	if ! $make -s "$fz" >"$log" 2>&1; then
		sed 's/^/# /' "$log" | tail -20
		echo "not ok $n - $fz builds (clang -fsanitize=fuzzer,address,undefined)"
		failed=$((failed + 1))
		continue
	fi
	mkdir -p "work/$fz" "corpus/$fz" "seeds/$fz"
	# shellcheck disable=SC2086
	./"$fz" $limit -print_final_stats=1 -timeout=10 \
		-max_len="$maxlen" -artifact_prefix="artifacts/$fz-" \
		"work/$fz" "corpus/$fz" "seeds/$fz" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n1 |
	      sed -n 's/.*\(cov: [0-9]*\) \(ft: [0-9]*\).*/\1, \2/p')
	if [ "$rc" -eq 0 ] && [ -n "$execs" ]; then
		echo "ok $n - $fz ran $what: $execs runs${cov:+, $cov}, no crash"
	else
		grep -E 'ERROR|invariant|SUMMARY|Test unit written' "$log" |
			head -20 | sed 's/^/# /'
		tail -n 15 "$log" | sed 's/^/# /'
		echo "not ok $n - $fz ran $what: crash or failure (exit $rc; see tools/fuzz/$log and artifacts/)"
		failed=$((failed + 1))
	fi
done
echo "1..$n"
[ "$failed" -eq 0 ]
