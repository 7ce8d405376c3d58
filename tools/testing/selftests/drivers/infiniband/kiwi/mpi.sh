#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# MPI over kiwi, unchanged: Open MPI's OFI MTL on libfabric's
# verbs;ofi_rxm RDM endpoint (Debian's Open MPI has no rdma_cm in its
# openib BTL, so OFI is its way onto an iWARP device). Two hosts, the
# namespaces kiwiA (kiwi0) and kiwiB (kiwi1); mpirun runs in kiwiA and
# starts kiwiB's ranks through mpi_rsh.sh, in ssh's place. kiwi_mpi checks
# every byte it receives: a ping-pong of 8 B to 1 MiB and a stream of
# 1 MiB messages between two ranks, then an allreduce over two ranks and
# over four (two a host). The same two ranks over Open MPI's TCP
# transport give the figures beside kiwi's.
source "$(dirname "$0")/lib.sh"
source "$KIWI_TESTDIR/lib_programs.sh"
tap_begin "MPI (Open MPI, OFI MTL on verbs;ofi_rxm) over kiwi"

# Each rank reaches its host's Open MPI daemon at the host's own address,
# which the kernel delivers through the namespace's loopback device.
check "two hosts with a kiwi device each, loopback up" \
	eval 'kiwi_two_devs && ip -n kiwiA link set lo up && ip -n kiwiB link set lo up'

# The launch and wire-up on the hosts' network.
kiwi_mpi_args "$KIWI_TESTDIR/mpi_rsh.sh"

# mpi NAME NP HOSTS TRANSPORT [ARG]: kiwi_mpi under mpirun in kiwiA over
# TRANSPORT (ofi or tcp); it must end well ("end 0", exit 0). Over kiwi
# (ofi), kiwi's CQs must have seen the traffic: at least MIN_CQES
# completions (default 1).
mpi() {
	local name=$1 np=$2 hosts=$3 rc c0
	local -n tr=KIWI_MPI_${4^^}

	c0=$(kiwi_cqes)
	ip netns exec kiwiA timeout 200 mpirun --np "$np" --host "$hosts" \
		"${KIWI_MPI_COMMON[@]}" "${tr[@]}" "$KIWI_TESTDIR/kiwi_mpi" ${5:+"$5"} \
		</dev/null >"$out/$name" 2>&1
	rc=$?
	if [ $rc != 0 ] || ! grep -qx "end 0" "$out/$name"; then
		echo "# $name: mpirun exit $rc"
		tail -n 15 "$out/$name" | sed "s/^/# $name: /"
		return 1
	fi
	[ "$4" = tcp ] && return 0
	c0=$(($(kiwi_cqes) - c0))
	[ "$c0" -ge "${MIN_CQES:-1}" ] && return 0
	echo "# $name: only $c0 completions on kiwi's CQs"
	return 1
}

# A ping-pong of 200 round trips a size and the stream's 144 MiB take
# far more than 2000 completions.
MIN_CQES=2000 check "kiwi: ping-pong 8 B to 1 MiB, 1 MiB stream, allreduce, 2 ranks, every byte checked" \
	mpi ofi2 2 192.0.2.1:1,192.0.2.2:1 ofi
sed -n 's/^\(pingpong\|bandwidth\|allreduce\)/# kiwi: &/p' "$out/ofi2"
check "kiwi: allreduce over 4 ranks, 2 a host, checked" \
	mpi ofi4 4 192.0.2.1:2,192.0.2.2:2 ofi allreduce
check "TCP: the same 2 ranks, for comparison" mpi tcp2 2 192.0.2.1:1,192.0.2.2:1 tcp
sed -n 's/^\(pingpong\|bandwidth\)/# TCP: &/p' "$out/tcp2"

kiwi_two_devs_del
check "kiwi unloads" kiwi_devs_unload
tap_end
