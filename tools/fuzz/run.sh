#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build and run each fuzzer named on the command line for FUZZ_SECONDS
# (default 30), starting from the generated seeds plus whatever corpus
# earlier runs kept. Prints one TAP line per fuzzer; exits 1 if any
# fuzzer fails to build or finds a crash. Called by "make run".
cd "$(dirname "$0")" || exit 1
secs=${FUZZ_SECONDS:-30}
make=${MAKE:-make}
n=0
failed=0

echo "TAP version 13"
echo "# kiwi wire-format fuzzers, $secs s each"
mkdir -p logs artifacts
if ! $make -s seeds >logs/seeds.log 2>&1; then
	sed 's/^/# /' logs/seeds.log | tail -20
	echo "# seed generation failed: fuzzing from an empty corpus"
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
	mkdir -p "corpus/$fz" "seeds/$fz"
	./"$fz" -max_total_time="$secs" -print_final_stats=1 -timeout=10 \
		-max_len=4096 -artifact_prefix="artifacts/$fz-" \
		"corpus/$fz" "seeds/$fz" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
		echo "ok $n - $fz ran $secs s, $runs runs, no crash"
	else
		grep -E 'ERROR|invariant|SUMMARY|Test unit written' "$log" |
			head -20 | sed 's/^/# /'
		tail -n 15 "$log" | sed 's/^/# /'
		echo "not ok $n - $fz ran $secs s: crash or failure (exit $rc; see tools/fuzz/$log and artifacts/)"
		failed=$((failed + 1))
	fi
done
echo "1..$n"
[ "$failed" -eq 0 ]
