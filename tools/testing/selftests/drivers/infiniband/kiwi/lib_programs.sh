#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What the tests and the bench that run programs reaching kiwi through a
# library share (mpi.sh, socket_programs.sh, twovm.sh,
# tools/bench/programs.sh). Sourced after lib.sh.

# Open MPI as root, in the VM.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# kiwi_mpi_args AGENT: mpirun's arguments for two hosts on 192.0.2.0/24
# into KIWI_MPI_COMMON, with AGENT (mpi_rsh.sh or pair_rsh.sh) in ssh's
# place; KIWI_MPI_OFI and KIWI_MPI_TCP pick the transport. No binding:
# each host's daemon would bind its first rank to CPU 0, and on one
# machine both hosts share its CPUs.
kiwi_mpi_args() {
	KIWI_MPI_COMMON=(--bind-to none --mca plm_rsh_agent "$1"
		--mca oob_tcp_if_include 192.0.2.0/24 -x PATH)
}
KIWI_MPI_OFI=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "verbs;ofi_rxm"
	-x FI_PROVIDER="verbs;ofi_rxm")
KIWI_MPI_TCP=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include 192.0.2.0/24)

# rdma-core's rsocket preload library, or nothing.
KIWI_RSPRELOAD=$(ls /usr/lib/*/rsocket/librspreload.so 2>/dev/null | head -n 1)
