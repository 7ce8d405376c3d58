#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): README's "Layout" names every file of the module and
# every folder under tools/, so that a newcomer finds each one there.
# Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root" || exit 1
layout=$(sed -n '/^## Layout/,/^## /p' README.md)
mod=drivers/infiniband/sw/kiwi

# named NAME: NAME stands in the layout as a word of its own.
named() { grep -qE "(^|[ ,])$1([ ,/]|$)" <<<"$layout"; }

point() {
	local n=$1 what=$2 missing=$3
	if [ -n "$missing" ]; then
		echo "$missing" | sed 's/^/# not in README'"'"'s layout: /'
		echo "not ok $n - $what"
		return 1
	fi
	echo "ok $n - $what"
}

files=$(git ls-files "$mod" | grep -v '/\.gitignore$' | xargs -n1 basename)
dirs=$(git ls-files tools | awk -F/ 'NF > 2 { print $1 "/" $2 }
	$1 "/" $2 == "tools/testing" && NF > 3 { print $1 "/" $2 "/" $3 }' |
	grep -vx tools/testing | sort -u)
miss_f=$(for f in $files; do named "${f//./\\.}" || echo "$f"; done)
miss_d=$(for d in $dirs; do named "$d" || echo "$d/"; done)
echo "TAP version 13"
echo "1..2"
rc=0
point 1 "README's layout names each of the module's $(echo "$files" | wc -w) files" \
	"$miss_f" || rc=1
point 2 "README's layout names each of the $(echo "$dirs" | wc -w) folders under tools/" \
	"$miss_d" || rc=1
exit $rc
