#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Prepare build/stage: the built module with a module index (modules.dep,
# modules.alias, ...) computed here for the VM's kernel, so that the VM only
# copies files (depmod under emulation takes minutes). Run after make.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kver=$("$root/scripts/kernel-release.sh")
ko=$root/drivers/infiniband/sw/kiwi/kiwi.ko
[ -f "$ko" ] || { echo "stage: $ko not built; run make" >&2; exit 1; }

stage=$root/build/stage
mods=$stage/lib/modules/$kver
rm -rf "$stage"
mkdir -p "$mods/updates"
cp "$ko" "$mods/updates/kiwi.ko"
ln -s "/lib/modules/$kver/kernel" "$mods/kernel"
cp /lib/modules/"$kver"/modules.{order,builtin,builtin.modinfo} "$mods/"
depmod -b "$stage" "$kver"
rm "$mods/kernel"
echo "$kver" > "$stage/kver"
