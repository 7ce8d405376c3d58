#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the upstream siw driver out of tree from Debian's linux-source-6.1
# package into build/siw/siw.ko: kiwi's wire-interop peer and performance
# anchor. Its source is unpacked at build time, never kept in this tree.
#
# One change is made to it: siw takes its sockets' sk_callback_lock for
# reading with softirqs on when TCP calls its data_ready from a process
# (the socket backlog, at release_sock()), and for writing in softirq
# (siw_rtr_data_ready() -> siw_qp_socket_assoc()): a reader interrupted
# on its CPU by that writer would spin forever. The debug kernel's lockdep
# reports it ("inconsistent {IN-SOFTIRQ-W} -> {SOFTIRQ-ON-R} usage"), and
# then turns itself off for the rest of the run. Its read sides here take
# the lock with softirqs off, as kiwi's do; nothing on the wire changes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/siw
kdir=$(make -s -C "$root" --no-print-directory print-kdir)
# A siw.ko built before that change (its source still has a plain reader)
# is built again.
[ -f "$out/siw.ko" ] && [ "$out/siw.ko" -nt "$kdir/Module.symvers" ] &&
	! grep -qs 'read_lock(&sk->sk_callback_lock)' "$out/siw_cm.c" "$out/siw_qp.c" &&
	exit 0

tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n1)
[ -n "$tarball" ] || { echo "build-siw: no linux-source tarball; run scripts/setup.sh" >&2; exit 1; }
top=$(basename "$tarball" .tar.xz)
rm -rf "$out"
mkdir -p "$out"
tar -C "$out" --strip-components=5 -xf "$tarball" "$top/drivers/infiniband/sw/siw"
sed -i -E 's/read_(un)?lock\(&sk->sk_callback_lock\)/read_\1lock_bh(\&sk->sk_callback_lock)/' \
	"$out/siw_cm.c" "$out/siw_qp.c"
n=$(cat "$out/siw_cm.c" "$out/siw_qp.c" | grep -c 'read_lock_bh(&sk->sk_callback_lock)' || true)
left=$(cat "$out/siw_cm.c" "$out/siw_qp.c" | grep -c 'read_lock(&sk->sk_callback_lock)' || true)
[ "$n" -gt 0 ] && [ "$left" = 0 ] ||
	{ echo "build-siw: siw's sk_callback_lock readers not as expected ($n changed, $left left)" >&2; exit 1; }
make -s -C "$kdir" M="$out" CONFIG_RDMA_SIW=m modules >"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; exit 1; }
[ -f "$out/siw.ko" ]
