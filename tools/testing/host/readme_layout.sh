#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): README's "Layout" names every file of the module and
# every folder under tools/, so that a newcomer finds each one there.
# Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
cd "$root" || exit 1
tap_begin "README's layout"
layout=$(sed -n '/^## Layout/,/^## /p' README.md)
mod=drivers/infiniband/sw/kiwi

# named NAME: NAME stands in the layout as a word of its own.
named() { grep -qE "(^|[ ,])$1([ ,/]|$)" <<<"$layout"; }

# none MISSING: true when MISSING is empty, else each of its lines shown.
none() {
	[ -z "$1" ] && return 0
	echo "$1" | sed 's/^/# not in README'"'"'s layout: /'
	return 1
}

files=$(git ls-files "$mod" | grep -v '/\.gitignore$' | xargs -n1 basename)
dirs=$(git ls-files tools | awk -F/ 'NF > 2 { print $1 "/" $2 }
	$1 "/" $2 == "tools/testing" && NF > 3 { print $1 "/" $2 "/" $3 }' |
	grep -vx tools/testing | sort -u)
miss_f=$(for f in $files; do named "${f//./\\.}" || echo "$f"; done)
miss_d=$(for d in $dirs; do named "$d" || echo "$d/"; done)
check "README's layout names each of the module's $(echo "$files" | wc -w) files" \
	none "$miss_f"
check "README's layout names each of the $(echo "$dirs" | wc -w) folders under tools/" \
	none "$miss_d"
tap_end
