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
#
# A second build, build/siw-gso/siw.ko, has siw's compile-time try_gso
# (siw_main.c) turned on: that siw offers large FPDUs in its MPA frames
# (flag 0x08, its MPA_RR_FLAG_GSO_EXP) and sends them to a peer that
# offered them too, as kiwi does by default (capture_siw.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/siw
gso=$root/build/siw-gso
kdir=$(make -s -C "$root" --no-print-directory print-kdir)
# A siw.ko built before that change (its source still has a plain reader)
# is built again.
[ -f "$out/siw.ko" ] && [ "$out/siw.ko" -nt "$kdir/Module.symvers" ] &&
	[ -f "$gso/siw.ko" ] && [ "$gso/siw.ko" -nt "$out/siw.ko" ] &&
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
rm -rf "$gso"
cp -r "$out" "$gso"
sed -i 's/^const bool try_gso;$/const bool try_gso = true;/' "$gso/siw_main.c"
grep -q '^const bool try_gso = true;$' "$gso/siw_main.c" ||
	{ echo "build-siw: siw_main.c has no 'const bool try_gso;' to turn on" >&2; exit 1; }
for d in "$out" "$gso"; do
	make -s -C "$kdir" M="$d" CONFIG_RDMA_SIW=m modules >"$d/build.log" 2>&1 ||
		{ cat "$d/build.log" >&2; exit 1; }
	[ -f "$d/siw.ko" ]
done
