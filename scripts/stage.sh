#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Prepare build/stage: the built module with a module index (modules.dep,
# modules.alias, ...) computed here for the VM's kernel, so that the VM only
# copies files (depmod under emulation takes minutes). Run after make.
# With KDIR set to a kernel build tree (the debug kernel), stage for that
# tree's kernel and the module directory virtme-ng makes of it. With KMODS
# set to a kernel's module folder (Debian 13's, unpacked by
# scripts/debian13-kernel.sh), stage for that kernel, release KVER.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${KMODS:-}" ]; then
	kver=${KVER:?stage: KMODS needs KVER}
	kmods=$KMODS
elif [ -n "${KDIR:-}" ]; then
	kver=$(make -s -C "$KDIR" kernelrelease)
	[ -f "$KDIR/.virtme_mods/lib/modules/0.0.0/modules.order" ] || (cd "$KDIR" && virtme-prep-kdir-mods)
	kmods=$KDIR/.virtme_mods/lib/modules/0.0.0
else
	kver=$("$root/scripts/kernel-release.sh")
	kmods=/lib/modules/$kver
fi
ko=$root/drivers/infiniband/sw/kiwi/kiwi.ko
[ -f "$ko" ] || { echo "stage: $ko not built; run make" >&2; exit 1; }

stage=$root/build/stage
mods=$stage/lib/modules/$kver
rm -rf "$stage"
mkdir -p "$mods/updates"
cp "$ko" "$mods/updates/kiwi.ko"
ln -s "$kmods/kernel" "$mods/kernel"
cp "$kmods"/modules.{order,builtin,builtin.modinfo} "$mods/"
depmod -b "$stage" "$kver"
rm "$mods/kernel"
echo "$kver" > "$stage/kver"
