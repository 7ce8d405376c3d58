#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Open MPI's remote launcher for mpi.sh (plm_rsh_agent), in place of ssh:
# "mpi_rsh.sh HOST WORD..." runs WORD... as a shell command line in the
# network namespace that holds HOST's address (kiwiA 192.0.2.1, kiwiB
# 192.0.2.2), as ssh would on that host.
host=$1
shift
case $host in
192.0.2.1) ns=kiwiA ;;
192.0.2.2) ns=kiwiB ;;
*) echo "mpi_rsh.sh: no namespace for host $host" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" sh -c "$*"
