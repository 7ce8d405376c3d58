#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench's two-host path, in both VMs of scripts/vm-pair.sh (one vCPU
# each, a QEMU network between them): VM a serves (bp_agent,
# lib-bench-pair.sh), VM b runs tools/bench/run.sh and storage.sh against
# it into OUTDIR, as the one-host path does in one VM.
#
#   scripts/vm-pair.sh -- tools/bench/pair.sh OUTDIR
#
# The BENCH_* variables of run.sh reach both VMs through the file
# OUTDIR/env (tools/bench/bench.sh writes it): vm-pair.sh hands its
# guests no environment of the caller's.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: pair.sh OUTDIR}
# shellcheck disable=SC1091 # written by bench.sh
[ -f "$out/env" ] && source "$out/env"
export BENCH_PAIR=1
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
source "$root/tools/bench/lib-bench.sh"

pair_net || { pair_flag abort; exit 1; }
export PAIR_DEV
if [ "$PAIR_ROLE" = a ]; then
	"$root/scripts/vm-install.sh" || { pair_flag abort; exit 1; }
	bp_keep_providers
	modprobe -a ib_core iw_cm rdma_cm ib_uverbs rdma_ucm
	echo "$PAIR_DEV" >"$PAIR_DIR/bench-adev"
	bp_agent
	exit 0
fi
rc=0
pair_await bench-agent 300 || { echo "bench: VM a's agent never started" >&2; exit 1; }
"$root/tools/bench/run.sh" "$out" || rc=1
pair_flag bench-done
exit $rc
