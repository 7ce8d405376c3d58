#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): Documentation/infiniband/kiwi-conformance.rst has one
# row per item of the RDMA Verbs checklist, each with a test that exists or
# a reason (conformance_check.py). Every item has one now, so a PENDING or
# UNTESTED row fails (--final). Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
exec python3 "$root/tools/testing/selftests/drivers/infiniband/kiwi/conformance_check.py" --final "$@"
