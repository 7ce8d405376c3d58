#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the kernel's checkpatch.pl --strict over the module and its UAPI
# header. checkpatch comes from Debian's linux-source-6.1 package, unpacked
# once into build/checkpatch (or CHECKPATCH_PL=path).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cp_dir=$root/build/checkpatch
pl=${CHECKPATCH_PL:-$cp_dir/scripts/checkpatch.pl}
if [ ! -x "$pl" ]; then
	tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n1)
	[ -n "$tarball" ] || { echo "no linux-source tarball; run scripts/setup.sh" >&2; exit 1; }
	mkdir -p "$cp_dir"
	top=$(basename "$tarball" .tar.xz)
	tar -C "$cp_dir" --strip-components=1 -xf "$tarball" \
		"$top/scripts/checkpatch.pl" "$top/scripts/spelling.txt" \
		"$top/scripts/const_structs.checkpatch"
fi
cd "$root"
# The kernel test modules too: they are kernel code.
ktest=tools/testing/selftests/drivers/infiniband/kiwi/kiwi_ktest
files=$(git ls-files 'drivers/*.[ch]' 'include/*.h' "$ktest/*.[ch]" 2>/dev/null ||
	find drivers include "$ktest" -name '*.[ch]' ! -name '*.mod.c')
trace=drivers/infiniband/sw/kiwi/kiwi_trace.h
compat=drivers/infiniband/sw/kiwi/kiwi_compat.h
files=$(tr ' ' '\n' <<<"$files" | grep -vxF -e "$trace" -e "$compat")
# No kernel tree here: skip the checks that need one (and its git).
"$pl" --strict --no-tree --terse --show-types \
	--ignore FILE_PATH_CHANGES \
	-f $files
# TRACE_EVENT()'s arguments are laid out as every kernel trace header lays
# them out (TP_STRUCT__entry( on a line of its own, TP_PROTO indented one
# tab), which --strict's alignment checks do not know.
"$pl" --strict --no-tree --terse --show-types \
	--ignore FILE_PATH_CHANGES,PARENTHESIS_ALIGNMENT,OPEN_ENDED_LINE \
	-f "$trace"
# The compat header is the one place that compares kernel versions, which
# an in-tree driver never does (LINUX_VERSION_CODE on the left of #if).
"$pl" --strict --no-tree --terse --show-types \
	--ignore FILE_PATH_CHANGES,LINUX_VERSION_CODE,CONSTANT_COMPARISON \
	-f "$compat"
