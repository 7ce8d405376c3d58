#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run sparse over every module source, the kernel test modules too (make
# C=2); fail on any report.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v sparse >/dev/null || { echo "sparse not installed; run scripts/setup.sh" >&2; exit 1; }
out=$(make -s -j"$(nproc)" -C "$root" sparse 2>&1)
echo "$out"
! grep -qE "warning:|error:" <<<"$out"
