#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# lib.sh's part for the in-kernel test modules (make ktest): loading one,
# its TAP from the kernel log, and the loads that must fail.

# ktest_run KO [PARAM=VALUE...]: load kernel test module KO (built by "make
# ktest"), whose cases run at load time and print TAP to the kernel log as
# "MODULE: ok N - ...". Re-emit those lines, with "$KTEST_TAG: " in front of
# each description when KTEST_TAG is set, check that the load failed
# exactly when a point failed, and unload the module. Returns 1 when
# anything failed.
ktest_run() {
	local ko=$1 mod marker lines plan passed failed ins err rc=0
	local start=$SECONDS tag=${KTEST_TAG:+$KTEST_TAG: }
	shift
	mod=$(basename "$ko" .ko)
	if [ ! -f "$ko" ]; then
		echo "not ok - $mod: $ko is built (make ktest)"
		return 1
	fi
	# Our lines follow the marker; earlier runs may still be in the log.
	marker="$mod: run $$ $RANDOM"
	echo "$marker" >/dev/kmsg
	err=$(insmod "$ko" "$@" 2>&1)
	ins=$?
	echo "# ${tag}insmod $mod $* returned $ins after $((SECONDS - start)) s"
	[ -z "$err" ] || sed 's/^/# /' <<<"$err"
	lines=$(dmesg --notime | sed -n "/^$marker\$/,\$p" |
		sed -n "s/^$mod: \(ok \|not ok \|1\.\.\|# \)/\1/p" |
		sed "s/^\(\(not \)\?ok [0-9]* - \)/\1$tag/")
	echo "$lines"

	plan=$(sed -n 's/^1\.\.//p' <<<"$lines")
	passed=$(grep -c '^ok ' <<<"$lines")
	failed=$(grep -c '^not ok ' <<<"$lines")
	if [ "$failed" -gt 0 ]; then
		rc=1
		if [ $ins -ne 0 ]; then
			echo "ok - $mod: ${tag}the failed points failed the module load"
		else
			echo "not ok - $mod: ${tag}the failed points failed the module load"
		fi
	elif [ $ins -eq 0 ] && [ "$passed" -gt 0 ] && [ "$plan" = "$passed" ]; then
		echo "ok - $mod: ${tag}insmod succeeded, all $passed points of the plan passed"
	else
		echo "not ok - $mod: ${tag}insmod status $ins, plan '$plan', $passed passed"
		rc=1
	fi
	if grep -qw "^$mod" /proc/modules; then
		if rmmod "$mod"; then
			echo "ok - $mod: ${tag}rmmod"
		else
			echo "not ok - $mod: ${tag}rmmod"
			rc=1
		fi
	fi
	return $rc
}

# ktest_run_ns KO [PARAM=VALUE...]: ktest_run, with namespaces kiwiA and
# kiwiB as the module's netns_a and netns_b (descriptors insmod inherits).
ktest_run_ns() {
	ktest_run "$@" netns_a=3 netns_b=4 3</run/netns/kiwiA 4</run/netns/kiwiB
}

# ktest_fails KO REGEX [PARAM=VALUE...]: the harness itself. A run of KO
# with the parameters must fail its load and report a TAP line that REGEX
# (extended) matches whole; the run's own lines become comments.
ktest_fails() {
	local ko=$1 want=$2 out mod
	shift 2
	mod=$(basename "$ko" .ko)
	out=$(ktest_run "$ko" "$@")
	sed 's/^/# /' <<<"$out"
	if grep -qx "ok - $mod: the failed points failed the module load" <<<"$out" &&
	   grep -qxE -- "$want" <<<"$out"; then
		echo "ok - $mod: a run with $* fails the load, reporting '$want'"
		return 0
	fi
	echo "not ok - $mod: a run with $* fails the load, reporting '$want'"
	return 1
}
