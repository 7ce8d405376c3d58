#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Two checks on the module's headers (and the kernel test modules'):
#  - each header compiles on its own, as the first and only include of a
#    translation unit (kbuild, W=1): it includes what it uses;
#  - the kernel's scripts/kernel-doc parses every /** comment of the module
#    and its test modules without a warning.
# scripts/kernel-doc comes from Debian's linux-source-6.1 package, unpacked
# next to checkpatch.pl in build/checkpatch.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
kdir=${KDIR:-$(make -s --no-print-directory print-kdir)}
mod=drivers/infiniband/sw/kiwi
ktest=tools/testing/selftests/drivers/infiniband/kiwi/kiwi_ktest
out=$root/build/hdrcheck
rc=0

rm -rf "$out"
mkdir -p "$out"
echo "ccflags-y += -I$root/include/uapi -I$root/$mod" >"$out/Kbuild"
objs=()
for h in "$mod"/*.h "$ktest"/*.h; do
	n=h_$(basename "$h" .h)
	printf '#include "%s"\n' "$root/$h" >"$out/$n.c"
	objs+=("$n.o")
done
if ! make -k -s -j"$(nproc)" -C "$kdir" M="$out" W=1 "${objs[@]}" >"$out/build.log" 2>&1 ||
   grep -qiE "warning|error" "$out/build.log"; then
	cat "$out/build.log"
	echo "header-check: a header does not compile on its own" >&2
	rc=1
fi

kd=$root/build/checkpatch/scripts/kernel-doc
if [ ! -x "$kd" ]; then
	tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n1)
	[ -n "$tarball" ] || { echo "no linux-source tarball; run scripts/setup.sh" >&2; exit 1; }
	mkdir -p "$root/build/checkpatch"
	tar -C "$root/build/checkpatch" --strip-components=1 -xf "$tarball" \
		"$(basename "$tarball" .tar.xz)/scripts/kernel-doc"
fi
doc=$("$kd" -none "$mod"/*.[ch] "$ktest"/*.[ch] 2>&1)
if [ -n "$doc" ]; then
	echo "$doc"
	echo "header-check: kernel-doc reports the comments above" >&2
	rc=1
fi
exit $rc
