#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build kiwi's debug kernel once and print its build tree: Debian's 6.1
# source (linux-source-6.1) configured small, as virtme-ng configures a
# kernel for its own boots (virtme-configkernel --defconfig), with what
# kiwi's tests use (scripts/debug-kernel/needs.config: RDMA, NVMe-oF, NFS,
# iSER, the networks) and the debug options (scripts/debug-kernel/
# debug.config: KASAN, lockdep, kmemleak, UBSAN, fault injection). The tree
# is cached in $KIWI_DEBUG_KERNEL_DIR and rebuilt only when a fragment,
# virtme-ng or the source package changes (a new source package from
# scratch, the others incrementally). About 18 minutes on 2 cores the first
# time, 27 beside scripts/test.sh's host-side builds (Debian's config, cut
# to the tests' modules, took 38 alone); a second run
# prints the tree at once.
#
#   scripts/debug-kernel.sh        build if needed, print the tree's path
#   scripts/debug-kernel.sh --dir  print where the tree is (or would be)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
frag=$root/scripts/debug-kernel/debug.config
needs=$root/scripts/debug-kernel/needs.config
# The one place that names the cache.
cache=${KIWI_DEBUG_KERNEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kiwi/debug-kernel}
tree=$cache/linux

if [ "${1:-}" = --dir ]; then
	echo "$tree"
	exit 0
fi

die() { echo "debug-kernel: $*" >&2; exit 1; }

# One build at a time: a second caller waits, then finds the tree built.
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9

tarball=$(ls /usr/src/linux-source-6.1.tar.xz 2>/dev/null) ||
	die "no /usr/src/linux-source-6.1.tar.xz; run scripts/setup.sh"
command -v virtme-configkernel >/dev/null || die "no virtme-configkernel; run scripts/setup.sh"
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
vngver=$(dpkg-query -W -f='${Version}' virtme-ng)

key=$({ cat "$needs" "$frag"; echo "$srcver $vngver"; } | sha256sum | cut -d' ' -f1)
if [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "$key" ] &&
   [ -f "$tree/arch/x86/boot/bzImage" ]; then
	echo "$tree"
	exit 0
fi

# A new source package starts from scratch; a changed fragment or
# virtme-ng rebuilds only what it affects.
if [ "$(cat "$cache/source" 2>/dev/null)" != "$srcver" ] || [ ! -d "$tree" ]; then
	echo "debug-kernel: building in $tree (linux-source-6.1 $srcver); this takes a while" >&2
	rm -rf "$cache"
	mkdir -p "$cache"
	tar -C "$cache" -xf "$tarball"
	mv "$cache"/linux-source-6.1 "$tree"
	echo "$srcver" >"$cache/source"
else
	echo "debug-kernel: the configuration changed; rebuilding $tree" >&2
	rm -f "$cache/stamp"
fi
cd "$tree"

rm -f .config
virtme-configkernel --defconfig >"$cache/config.log" 2>&1 ||
	die "virtme-configkernel failed; see $cache/config.log"
scripts/kconfig/merge_config.sh -m .config "$needs" "$frag" >>"$cache/config.log" 2>&1
make -s olddefconfig >>"$cache/config.log" 2>&1

# Every line of the fragments must have survived Kconfig's dependencies
# ("=m" is met by a built-in too).
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=m)
		grep -qE "^${line%=m}=[ym]\$" .config || { echo "debug-kernel: not in .config: $line" >&2; bad=1; } ;;
	CONFIG_*=*)
		grep -qxF "$line" .config || { echo "debug-kernel: not in .config: $line" >&2; bad=1; } ;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }
		opt=${opt%% *}
		! grep -q "^$opt=" .config || { echo "debug-kernel: still set: $opt" >&2; bad=1; } ;;
	esac
done < <(cat "$needs" "$frag")
[ "$bad" = 0 ] || die "the fragments do not apply to this source"

start=$(date +%s)
make -s -j"$(nproc)" bzImage modules >"$cache/build.log" 2>&1 ||
	{ tail -40 "$cache/build.log" >&2; die "build failed; see $cache/build.log"; }
# The module folder virtme-ng boots with (and scripts/stage.sh reads).
virtme-prep-kdir-mods >"$cache/prep-mods.log" 2>&1 ||
	die "virtme-prep-kdir-mods failed; see $cache/prep-mods.log"
echo "debug-kernel: built in $(( $(date +%s) - start )) s" >&2
echo "$key" >"$cache/stamp"
echo "$tree"
