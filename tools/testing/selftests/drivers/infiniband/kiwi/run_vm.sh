#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the VM: install the staged module and provider, run every kiwi
# selftest, and after each one check that the kernel log gained no oops,
# WARN, BUG or leak report. Prints TAP; exits 1 if anything failed.
dir=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$dir/../../../../../.." && pwd)
source "$dir/lib.sh"

# Kernel log lines that mean a test broke the kernel.
BAD_LOG='WARNING:|BUG:|Oops|general protection fault|Call Trace:|refcount_t:|unregister_netdevice: waiting|kmemleak|UBSAN|list_(add|del) corruption|blocked for more than'

tests=${KIWI_TESTS:-$(make -s --no-print-directory -C "$dir" print-tests)}

if ! "$root/scripts/vm-install.sh"; then
	echo "not ok 1 install kiwi into the VM"
	exit 1
fi

status=0
dmesg -C
for t in $tests; do
	echo "# ---- $t"
	if [ ! -x "$dir/$t" ]; then
		echo "not ok - $t: no such test"
		status=1
		continue
	fi
	timeout 900 "$dir/$t"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		# Its own "not ok" lines say what failed; this says it failed.
		echo "not ok - $t exited with status $rc"
		status=1
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
done
exit $status
