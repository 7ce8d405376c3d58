#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the VM: install the staged module and provider, run every kiwi
# selftest, and after each one check that the kernel log gained no oops,
# WARN, BUG or leak report. On a kernel with kmemleak (the debug kernel),
# unload kiwi at the end and fail on any leak kmemleak then reports.
# Prints TAP; exits 1 if anything failed.
dir=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$dir/../../../../../.." && pwd)
source "$dir/lib.sh"

BAD_LOG=$KIWI_BAD_LOG
KMEMLEAK=/sys/kernel/debug/kmemleak

# The packaging's tests (tools/testing/packaging) are no kernel selftests;
# provider_releases.sh runs by default, deb.sh and dkms.sh when named.
packaging=$root/tools/testing/packaging
tests=${KIWI_TESTS:-$(make -s --no-print-directory -C "$dir" print-tests) provider_releases.sh}

if ! "$root/scripts/vm-install.sh"; then
	echo "not ok 1 install kiwi into the VM"
	exit 1
fi

status=0
dmesg -C
rm -f "$KIWI_WEDGED"
# The whole kernel log, for reports longer than what is shown below.
if [ -n "${KIWI_DMESG_FILE:-}" ]; then
	dmesg -w >"$KIWI_DMESG_FILE" &
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
# Leaks from before kiwi was loaded are not kiwi's.
[ -e "$KMEMLEAK" ] && echo clear >"$KMEMLEAK"
for t in $tests; do
	echo "# ---- $t"
	if [ -x "$dir/$t" ]; then
		path=$dir/$t
	elif [ -x "$packaging/$t" ]; then
		path=$packaging/$t
	else
		echo "not ok - $t: no such test"
		status=1
		continue
	fi
	# 15 minutes a test; the soak runs as long as it is asked to, plus that.
	limit=900
	[ "$t" = soak.sh ] && limit=$((${KIWI_SOAK_SECONDS:-120} + 900))
	# DKMS builds the module in the VM: 11 minutes on Debian 13's kernel.
	[ "$t" = dkms.sh ] && limit=1800
	t0=$SECONDS
	timeout "$limit" "$path"
	rc=$?
	echo "# $t took $((SECONDS - t0)) s"
	if [ "$rc" -ne 0 ]; then
		# Its own "not ok" lines say what failed; this says it failed.
		echo "not ok - $t exited with status $rc"
		status=1
	fi
	# A test that ran out of time may have left a task stuck in the
	# kernel (D state): show the blocked tasks, and run no more.
	if [ "$rc" -eq 124 ] && ps -eo stat= | grep -q '^D'; then
		blocked_tasks
		touch "$KIWI_WEDGED"
	fi
	log=$(dmesg -c)
	# kiwi's own lines (Terminates, refusals) help explain failures.
	grep -E "kiwi[0-9]*: |infiniband kiwi" <<<"$log" | grep -vE "created on|loaded|unloaded|taints|verification" |
		head -20 | sed 's/^/# dmesg: /'
	if grep -qE "$BAD_LOG" <<<"$log"; then
		echo "not ok - $t: kernel log clean"
		grep -E -A20 "$BAD_LOG" <<<"$log" | head -60 | sed 's/^/# dmesg: /'
		status=1
	else
		echo "ok - $t: kernel log clean"
	fi
	if [ -e "$KIWI_WEDGED" ]; then
		echo "not ok - the tests after $t run: none did, a task is stuck in the kernel"
		# The VM's power-off may wait on that task (a sync of a
		# mount that hangs): after a minute it goes off regardless.
		(sleep 60; echo o >/proc/sysrq-trigger) &
		exit 1
	fi
done

# kmemleak_check: unload everything the tests load, let kmemleak scan twice
# (it reports an object only once it has stayed unreferenced over a scan
# and five seconds), and fail on any report.
kmemleak_check() {
	local leaks
	modprobe -r kiwi 2>/dev/null
	rmmod siw 2>/dev/null
	if lsmod | grep -qE '^(kiwi|siw) '; then
		echo "not ok - kiwi and siw unload after the tests"
		lsmod | grep -E '^(kiwi|siw|ib_|rdma|iw_)' | sed 's/^/# /'
		return 1
	fi
	echo scan >"$KMEMLEAK"
	sleep 6
	echo scan >"$KMEMLEAK"
	leaks=$(cat "$KMEMLEAK")
	if [ -n "$leaks" ]; then
		echo "not ok - kmemleak finds no leak after unloading kiwi ($(grep -c '^unreferenced object' <<<"$leaks") objects)"
		head -120 <<<"$leaks" | sed 's/^/# kmemleak: /'
		return 1
	fi
	echo "ok - kmemleak finds no leak after unloading kiwi"
}

if [ -e "$KMEMLEAK" ]; then
	kmemleak_check || status=1
fi
exit $status
