#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libkiwi built against other rdma-core releases than the system's (by
# scripts/test.sh into build/provider/SUITE/: Debian 13's rdma-core 56 and
# the newest in Debian's unstable suite) works under that release's
# libibverbs and librdmacm: ibv_devinfo shows the device, rping -V moves
# verified data and perftest's ib_write_bw -R runs, each program loading
# that release's libraries and the provider built for it (its memory map
# shows both). A provider built for another layout of the provider ABI
# than its loader's refuses to register, saying why.
source "$(dirname "$0")/../selftests/drivers/infiniband/kiwi/lib.sh"
tap_begin "libkiwi on other rdma-core releases"

# Only the provider under test is loaded (libibverbs reads every file in
# /etc/libibverbs.d); RDMAV_DRIVERS names it by path, without the suffix.
mv /etc/libibverbs.d/kiwi.driver /etc/kiwi.driver.off
trap 'mv /etc/kiwi.driver.off /etc/libibverbs.d/kiwi.driver' EXIT

kiwi_unload
check "two hosts, kiwi0 in kiwiA and kiwi1 in kiwiB" kiwi_two_devs

# maps_have PID FILE...: the process PID (or its one child: ip netns exec
# and timeout run the program as a child) has each FILE mapped.
maps_have() {
	local pid=$1 f
	shift
	[ -n "$(pgrep -P "$pid")" ] && pid=$(pgrep -P "$pid" | head -n1)
	for f in "$@"; do
		grep -qF " $f" "/proc/$pid/maps" ||
			{ echo "# $f is not mapped by $pid"; return 1; }
	done
}

releases=("$KIWI_ROOT"/build/provider/*/)
[ -d "${releases[0]}" ] ||
	not_ok "a provider built for another rdma-core (scripts/test.sh builds them into build/provider/)"
for dir in "${releases[@]}"; do
	[ -d "$dir" ] || continue
	suite=$(basename "$dir")
	rel=$(cat "$dir/root")
	run=$rel/run
	ver=$(cat "$rel/version")
	lib=$(readlink -f "$dir"/libkiwi-rdmav*.so)
	verbs=$(readlink -f "$rel/usr/lib/x86_64-linux-gnu/libibverbs.so.1")
	what="$suite, rdma-core $ver, $(basename "$lib")"
	export RDMAV_DRIVERS=$dir/libkiwi

	devinfo=$(ip netns exec kiwiA "$run" ibv_devinfo -d kiwi0 2>&1)
	check "$what: ibv_devinfo shows kiwi0, iWARP, its port active" \
		eval 'has_line "$devinfo" "transport:[[:space:]]+iWARP" >/dev/null &&
		      has_line "$devinfo" "state:[[:space:]]+PORT_ACTIVE" >/dev/null' ||
		echo "$devinfo" | sed 's/^/# /'

	# The server listens on kiwi1 once its provider opened the device.
	check "$what: rping's server listens on kiwi1" \
		srv_start rel 7174 kiwiB "$run" rping -s -a 192.0.2.2 -p 7174 -V -C 200 -S 4096
	check "$what: the server runs this release's libibverbs and this provider" \
		maps_have "${kiwi_srv_pid[rel]}" "$verbs" "$lib"
	check "$what: rping -V from kiwiA, 200 x 4096 B verified" \
		cli_run rel kiwiA "$run" rping -c -a 192.0.2.2 -p 7174 -V -C 200 -S 4096
	check "$what: rping's server ends well" srv_end rel

	check "$what: ib_write_bw -R, 500 x 64 KiB" \
		perftest_pair wbw 18515 kiwiB "$run" /usr/bin/ib_write_bw -d kiwi1 -R -F \
			-p 18515 -n 500 -s 65536 -- \
			kiwiA "$run" /usr/bin/ib_write_bw -d kiwi0 -R -F -p 18515 -n 500 \
			-s 65536 192.0.2.2
	check "$what: ib_write_bw reports the bandwidth of 500 x 65536 B" \
		grep -qE '^ *65536 +500 +[0-9.]+ +[0-9.]+' "$out/wbw.cli"
done
unset RDMAV_DRIVERS

# Built for rdma-core 64's layout, loaded by the system's (44) libibverbs.
out_refused=$(RDMAV_DRIVERS=$KIWI_ROOT/userspace/libkiwi-rel64 \
	ip netns exec kiwiA ibv_devices 2>&1)
echo "$out_refused" | sed 's/^/# /'
check "a provider built for another layout refuses to register, saying why" \
	has_line "$out_refused" "libkiwi: built for rdma-core 64, loaded by rdma-core 44, whose provider ABI differs"
check "and kiwi0 is not offered" \
	eval '! has_line "$out_refused" "^[[:space:]]+kiwi0[[:space:]]" >/dev/null'

kiwi_two_devs_del
tap_end
