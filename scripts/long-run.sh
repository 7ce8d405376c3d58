#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The long runs that README's figures come from, each writing what it
# measured to build/long/NAME-DATE.txt (and build/long/NAME.txt, the
# newest): README quotes only what such a file shows. Not part of
# scripts/test.sh, which runs short versions (a 1-minute soak, seconds of
# fuzzing).
#
#   scripts/long-run.sh soak [SECONDS]   soak.sh on the debug kernel
#                                        (KASAN, lockdep, kmemleak, UBSAN),
#                                        1800 s by default (make soak)
#   scripts/long-run.sh fuzz [RUNS]      every fuzzer of tools/fuzz for RUNS
#                                        executions, 10^8 by default
#                                        (make fuzz-long)
#
# Exits non-zero when the run failed; the file says so too.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-}
dir=$root/build/long
mkdir -p "$dir"
stamp=$(date +%Y%m%d-%H%M%S)
file=$dir/$what-$stamp.txt
log=$dir/$what-$stamp.log

case "$what" in
soak)
	secs=${2:-1800}
	t0=$SECONDS
	KIWI_DEBUG_TESTS=soak.sh KIWI_SOAK_SECONDS=$secs KIWI_DEBUG_TIMEOUT=$((secs + 1800)) \
		"$root/scripts/test-debug.sh" >"$log" 2>&1
	rc=$?
	{
		echo "soak.sh on the debug kernel, $secs s asked, $((SECONDS - t0)) s in all"
		grep -E '^# soak: [0-9]+ bytes verified' "$log"
		echo "points: $(grep -cE '^ok ' "$log") passed, $(grep -cE '^not ok ' "$log") failed"
		grep -E '^not ok ' "$log"
	} >"$file"
	;;
fuzz)
	runs=${2:-100000000}
	t0=$SECONDS
	FUZZ_RUNS=$runs make -s -C "$root/tools/fuzz" run >"$log" 2>&1
	rc=$?
	{
		echo "tools/fuzz, $runs executions asked of each fuzzer, $((SECONDS - t0)) s in all"
		grep -E '^(not )?ok ' "$log"
	} >"$file"
	;;
*)
	echo "usage: $0 soak [SECONDS] | fuzz [RUNS]" >&2
	exit 2
	;;
esac
{
	echo "commit: $(git -C "$root" log -1 --format=%h 2>/dev/null)"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), exit status $rc; the whole output in $(basename "$log")"
} >>"$file"
cp "$file" "$dir/$what.txt"
cat "$file"
exit "$rc"
