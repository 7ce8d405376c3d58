#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): scripts/vm-run.sh refuses, before booting anything, a
# command too long for the guest kernel's command line, where virtme-ng
# puts it (a longer one panics the guest's early boot). Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
tap_begin "vm-run's arguments"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
long=$(printf 'tracepoints.sh %.0s' $(seq 60))
# A vng that only says it ran: a refusal never calls it. (Not a time
# limit: the host tests run beside a VM, at idle priority.)
mkdir "$tmp/bin"
printf '#!/bin/sh\ntouch "%s/vng-ran"\n' "$tmp" >"$tmp/bin/vng"
chmod +x "$tmp/bin/vng"
PATH=$tmp/bin:$PATH "$root/scripts/vm-run.sh" --timeout 60 -- env KIWI_TESTS="$long" true >"$tmp/out" 2>&1
rc=$?
check "a 900-character command is refused with status 2" test "$rc" = 2
check "... before booting anything (vng never ran)" test ! -e "$tmp/vng-ran"
check "... saying why" grep -q "does not fit on the guest kernel's command line" "$tmp/out"
tap_end
