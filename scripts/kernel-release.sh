#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Print the release of the Debian 12 kernel the VM boots and the module is
# built for: KVER if set, else the newest installed linux-image-*-amd64.
set -euo pipefail
if [ -n "${KVER:-}" ]; then
	echo "$KVER"
	exit 0
fi
k=$(ls /boot/vmlinuz-*-amd64 2>/dev/null | sed 's|/boot/vmlinuz-||' | sort -V | tail -n1)
[ -n "$k" ] || { echo "kiwi: no /boot/vmlinuz-*-amd64; run scripts/setup.sh" >&2; exit 1; }
echo "$k"
