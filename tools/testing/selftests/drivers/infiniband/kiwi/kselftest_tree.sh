#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kiwi's selftests the kernel's way: this directory copied into the kernel
# tree of Debian's linux-source-6.1 (build/ksft/linux-source-6.1, where
# the host test tools/testing/host/kselftest_build.sh unpacks that tree,
# copies this directory in and builds it with the kernel's lib.mk), and
# the kernel's runner runs tests there with
#   make -C tools/testing/selftests TARGETS=drivers/infiniband/kiwi run_tests
# (a few tests, named by TEST_PROGS on the command line), printing TAP with
# the time limit of our "settings" file.
source "$(dirname "$0")/lib.sh"

# Count kiwi devices (any name): their driver id is KIWI_DRIVER_ID.
kiwi_dev_count() {
	rdma -j dev show 2>/dev/null | grep -o '"ifname":"[^"]*"' | wc -l
}

tap_begin "kselftest convention, in linux-source-6.1's tree"

# Run from such a copy (by the kernel's runner), there is nothing to copy.
if [ "$KIWI_TESTDIR" != "$KIWI_ROOT/tools/testing/selftests/drivers/infiniband/kiwi" ]; then
	echo "ok 1 # SKIP already in a kernel tree ($KIWI_TESTDIR)"
	echo "1..1"
	exit 4
fi
export KIWI_ROOT
tree=$KIWI_ROOT/build/ksft/linux-source-6.1
target=drivers/infiniband/kiwi
dest=$tree/tools/testing/selftests/$target
progs="verbs_tools.sh uverbs_abi.sh srq.sh"

if ! check "the kernel tree of linux-source-6.1 is there, with lib.mk" \
	test -f "$tree/tools/testing/selftests/lib.mk"; then
	tap_end
fi
# ksft ARGS...: the kernel's selftest make, from the tree's top.
ksft() {
	make -s -C "$tree/tools/testing/selftests" TARGETS=$target "$@"
}
check "the programs are built there (tools/testing/host/kselftest_build.sh)" \
	test -x "$dest/kiwi_srq"

# The runner appends each test's output to /dev/stdout, opened anew. In
# the VM virtme-ng links that to its own output port, not to
# /proc/self/fd/1: the output would go around what captures it here and
# rewrite the VM's output from its start. For this test it is the usual
# link.
stdout_link=$(readlink /dev/stdout)
ln -sfn /proc/self/fd/1 /dev/stdout
trap 'ln -sfn "$stdout_link" /dev/stdout; rm -rf "$_tap_out"' EXIT
ksft run_tests TEST_PROGS="$progs" >"$out/run.log" 2>&1
sed 's/^/# /' "$out/run.log" | grep -vE '^# # (ok|TAP|1\.\.)' | tail -20
check "run_tests prints one TAP document" \
	eval 'grep -qx "TAP version 13" "$out/run.log" && grep -qx "1\.\.3" "$out/run.log"'
n=0
for t in $progs; do
	n=$((n + 1))
	check "run_tests: ok $n selftests: $target: $t" \
		grep -qx "ok $n selftests: $target: $t" "$out/run.log"
done
check "run_tests: no test failed" eval '! grep -q "^not ok" "$out/run.log"'
check "run_tests' output holds the tests' own TAP, prefixed (# ok 1 kiwi0 created ...)" \
	grep -q "^# ok 1 kiwi0 created on kvA in namespace kiwiA" "$out/run.log"

# The runner takes its time limit from our settings file: with 1 second
# there, a test that takes longer is stopped and reported.
cp "$dest/settings" "$out/settings"
echo "timeout=1" >"$dest/settings"
ksft run_tests TEST_PROGS=verbs_tools.sh >"$out/timeout.log" 2>&1
cp "$out/settings" "$dest/settings"
check "the runner reads settings: a 1 s limit stops verbs_tools.sh" \
	grep -qx "not ok 1 selftests: $target: verbs_tools.sh # TIMEOUT 1 seconds" \
	"$out/timeout.log"
# What the stopped test left behind (verbs_tools.sh makes the namespaces
# kiwiA and kiwiB with a device each, then an rxe device on kvr), gone
# before the next test runs.
stopped_cleanup() {
	kiwi_two_hosts_del 2>/dev/null
	rdma link del kiwirxe 2>/dev/null
	ip link del kvr 2>/dev/null
	modprobe -r rdma_rxe 2>/dev/null
	wait_for 20 eval '[ "$(kiwi_dev_count)" = 0 ]' && kiwi_unload
	! ip netns list | grep -qE "^kiwi[AB]\b" && ! grep -q "^kiwi " /proc/modules
}
check "what the stopped test left is cleaned up (namespaces, devices, kiwi)" stopped_cleanup
tap_end
