#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the VM: install the staged module and its index, and the provider,
# into the guest's writable overlays (they vanish at shutdown).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stage=$root/build/stage
kver=$(uname -r)
[ "$(cat "$stage/kver")" = "$kver" ] ||
	{ echo "vm-install: staged for $(cat "$stage/kver"), running $kver" >&2; exit 1; }
# Booted from a kernel build tree, virtme-ng links /lib/modules/$kver (on a
# tmpfs) to the tree's read-only module folder: give kiwi a writable folder
# that still reaches the tree's modules.
if [ -L "/lib/modules/$kver" ]; then
	tree=$(readlink -f "/lib/modules/$kver")
	rm "/lib/modules/$kver"
	mkdir "/lib/modules/$kver"
	ln -s "$tree/kernel" "/lib/modules/$kver/kernel"
fi
install -D -m 0644 "$stage/lib/modules/$kver/updates/kiwi.ko" \
	"/lib/modules/$kver/updates/kiwi.ko"
cp "$stage/lib/modules/$kver"/modules.* "/lib/modules/$kver/"
make -s -C "$root/userspace" install
