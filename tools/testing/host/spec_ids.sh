#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): every requirement ID (R-*, V-*) that the module, the
# provider, the tests, the tools or the documentation cite is listed in
# Documentation/infiniband/kiwi-spec-ids.rst, so a reader can look each one
# up. Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
index=Documentation/infiniband/kiwi-spec-ids.rst
cd "$root" || exit 1
tap_begin "the requirement IDs cited are in the index"
id_re='\b[RV]-[A-Z]+(-[A-Z0-9]+)*-[0-9]+[a-z]?\b'
cited=$(git ls-files -- '*.c' '*.h' '*.sh' '*.py' '*.lua' '*.rst' '*.md' 2>/dev/null |
	grep -vx "$index" | xargs grep -hoE "$id_re" | sort -u)
listed=$(grep -oE "^$id_re" "$index" | sort -u)
missing=$(comm -23 <(echo "$cited") <(echo "$listed"))
[ -n "$missing" ] && echo "$missing" | sed 's/^/# not in the index: /'
check "every cited requirement ID ($(echo "$cited" | wc -l)) is in $index" \
	test -n "$cited" -a -z "$missing"
tap_end
