#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A remote shell between the two VMs of scripts/vm-pair.sh, for Open
# MPI's launcher (plm_rsh_agent) in twovm.sh, in ssh's place:
# "pair_rsh.sh HOST WORD..." hands WORD... as one shell command line to
# the other VM (lib_pair.sh's pair_rsh_serve runs it there) through a
# file in $KIWI_PAIR_DIR, which both VMs see, waits until the command
# ends, as ssh does, and exits with its status, after printing its output.
dir=${KIWI_PAIR_DIR:?run under scripts/vm-pair.sh}
# It waits as long as the remote command runs (an MPI job's daemon): with
# nap, not sleep, whose fork and exec would take a share of the VM's CPU.
source "$(dirname "$0")/lib_nap.sh"
shift
id=$(date +%s%N).$$
req=$dir/rsh/$id
mkdir -p "$dir/rsh"
echo "$*" >"$req.tmp" && mv "$req.tmp" "$req.cmd" || exit 255
# 10 minutes at most, as long as any twovm.sh step may take.
for _ in $(seq 3000); do
	if [ -e "$req.rc" ]; then
		cat "$req.out"
		exit "$(cat "$req.rc")"
	fi
	nap 0.2
done
echo "pair_rsh.sh: no answer from the other VM" >&2
exit 255
