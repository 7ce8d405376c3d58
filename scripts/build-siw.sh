#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the upstream siw driver out of tree from Debian's linux-source-6.1
# package into build/siw/siw.ko: kiwi's wire-interop peer and performance
# anchor. Its source is unpacked at build time, never kept in this tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/siw
kdir=$(make -s -C "$root" --no-print-directory print-kdir)
[ -f "$out/siw.ko" ] && [ "$out/siw.ko" -nt "$kdir/Module.symvers" ] && exit 0

tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n1)
[ -n "$tarball" ] || { echo "build-siw: no linux-source tarball; run scripts/setup.sh" >&2; exit 1; }
top=$(basename "$tarball" .tar.xz)
rm -rf "$out"
mkdir -p "$out"
tar -C "$out" --strip-components=5 -xf "$tarball" "$top/drivers/infiniband/sw/siw"
make -s -C "$kdir" M="$out" CONFIG_RDMA_SIW=m modules >"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; exit 1; }
[ -f "$out/siw.ko" ]
