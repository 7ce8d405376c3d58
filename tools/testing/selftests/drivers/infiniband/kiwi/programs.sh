#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Real programs over kiwi, unchanged, each with its server on kiwi1 in
# kiwiB and its client on kiwi0 in kiwiA: librdmacm's rsockets tools
# rstream and riostream (blocking and nonblocking, several sizes, every
# byte verified by both ends with -T v; not their poll()-driven -T a, whose
# do_poll() takes POLLHUP for an error even with data still to read, so a
# client still reading when its server closes fails on any device), rdma_server and
# rdma_client, rdma_xserver and rdma_xclient, cmtime, libfabric's
# fi_pingpong (MSG and RDM endpoints, data checked); then the
# ibv_*_pingpong tools of rdma-core, which cannot run on iWARP: each is
# checked to stop where, and with the message that, the transport says it
# must (Documentation/infiniband/kiwi.rst, "Programs").
source "$(dirname "$0")/lib.sh"
tap_begin "real programs: rsockets, librdmacm's examples, cmtime, libfabric, the verbs pingpongs"

# prog WHAT NAME PORT SERVER-CMD... -- CLIENT-CMD...: a point: the server
# in kiwiB and the client in kiwiA both exit 0.
prog() {
	local what=$1 name=$2 port=$3 s=()
	shift 3
	while [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	check "$what" pair "$name" "$port" kiwiB "${s[@]}" -- kiwiA "$@"
}

# said NAME END TEXT: file $out/NAME.END (srv or cli) has a line TEXT.
said() {
	grep -qxF -- "$3" "$out/$1.$2" && return 0
	echo "# $1.$2 lacks '$3':"
	sed 's/^/#   /' "$out/$1.$2" | tail -8
	return 1
}

check "two hosts with a kiwi device each" kiwi_two_devs

# rsockets: rstream sends its data with RDMA Writes into the peer's
# receive buffer, riostream with riowrite() into a buffer the peer mapped
# with riomap(); -C transfers of -S bytes each way, checked with -T v.
for tool in rstream riostream; do
	for t in "b 1 500" "b 65536 40" "n 4095 100" "n 1048576 4"; do
		set -- $t
		mode=$1 size=$2 count=$3
		opt=(-T "$mode" -T v -S "$size" -C "$count")
		prog "$tool -T $mode -T v: $count x $size B each way, verified" \
			"$tool-$mode-$size" 7471 "$tool" -b 192.0.2.2 "${opt[@]}" -- \
			"$tool" -s 192.0.2.2 "${opt[@]}"
	done
done

# rdma_client sends 16 bytes inline, rdma_server receives them and
# answers; each checks its completions and ends with "end 0".
check "rdma_server and rdma_client: exchange a message, both end 0" \
	eval 'pair rdma 7471 kiwiB rdma_server -s 192.0.2.2 -- kiwiA rdma_client -s 192.0.2.2 &&
	      said rdma srv "rdma_server: end 0" && said rdma cli "rdma_client: end 0"'
# rdma_xclient posts 16 bytes inline on a QP that asked for no inline
# data: kiwi, like the IB providers, takes as many as its SGEs cover.
check "rdma_xserver and rdma_xclient (RC): a 16-byte inline Send, both end 0" \
	eval 'pair xrc 7471 kiwiB rdma_xserver -- kiwiA rdma_xclient -s 192.0.2.2 &&
	      said xrc srv "rdma_xserver: end 0" && said xrc cli "rdma_xclient: end 0"'
# XRC is an InfiniBand transport: no iWARP device has it.
check "rdma_xclient -c x (XRC): rdma_create_ep fails with EOPNOTSUPP" \
	eval '! cli_run xrc-x kiwiA rdma_xclient -s 192.0.2.2 -c x &&
	      said xrc-x cli "rdma_create_ep: Operation not supported"'

# cmtime: 20 connections set up at once, then torn down, each step
# timed. Its server serves until it is stopped.
check "cmtime -c 20: every connection set up and torn down" \
	eval 'srv_start cmtime 7471 kiwiB cmtime -b 192.0.2.2 -c 20 &&
	      cli_run cmtime kiwiA cmtime -s 192.0.2.2 -c 20 &&
	      said cmtime cli disconnecting && ! grep -qi error "$out/cmtime.cli"'
srv_stop cmtime
sed -n 's/^\(connect\|disconnect\) *:/# cmtime: &/p' "$out/cmtime.cli"

# The pingpongs trade LID, QPN, PSN and GID over a TCP socket of their
# own and move their QPs to RTS themselves. An iWARP QP reaches RTS only
# through its connection (the MPA exchange on a TCP stream that iw_cm
# sets up), so ibv_modify_qp() to RTS is refused (EINVAL; queues.sh), and
# UC, UD and XRC do not exist on iWARP. The upstream siw answers the same.
# pingpong KIND SERVER-TEXT: the server on kiwi1 must fail with a line
# SERVER-TEXT; the client is stopped once the server has ended (that of
# ibv_srq_pingpong spins on a closed socket).
pingpong() {
	local name=pp-$1 tool=ibv_$1_pingpong cpid=
	local src

	if srv_start "$name" 18515 kiwiB "$tool" -d kiwi1 -g 0 -n 10; then
		ip netns exec kiwiA timeout 60 "$tool" -d kiwi0 -g 0 -n 10 \
			192.0.2.2 >"$out/$name.cli" 2>&1 &
		cpid=$!
	fi
	srv_end "$name"
	src=$?
	if [ -n "$cpid" ]; then
		kill "$cpid" 2>/dev/null
		wait "$cpid" 2>/dev/null
	fi
	[ $src -ne 0 ] || { echo "# $tool: the server exited 0"; return 1; }
	said "$name" srv "$2"
}
# libfabric's verbs provider (fabtests' fi_pingpong, every size to 1 MiB,
# -c checking every byte): its MSG endpoint, and its RDM endpoint through
# ofi_rxm, which asks for a CQ of 262144 entries (its 256-peer universe).
for ep in msg rdm; do
	prov=verbs
	[ $ep = rdm ] && prov="verbs;ofi_rxm"
	prog "libfabric fi_pingpong -e $ep -p '$prov': every size to 1 MiB, data checked" \
		fi_$ep 47592 fi_pingpong -p "$prov" -e $ep -I 20 -c -- \
		fi_pingpong -p "$prov" -e $ep -I 20 -c 192.0.2.2
done

check "ibv_rc_pingpong: no RTS without an iWARP connection ('Failed to modify QP to RTS')" \
	pingpong rc "Failed to modify QP to RTS"
check "ibv_srq_pingpong: no RTS without an iWARP connection ('Failed to modify QP[0] to RTS')" \
	pingpong srq "Failed to modify QP[0] to RTS"
check "ibv_uc_pingpong: iWARP has no UC QPs ('Couldn't create QP')" \
	pingpong uc "Couldn't create QP"
check "ibv_ud_pingpong: iWARP has no UD QPs ('Couldn't create QP')" \
	pingpong ud "Couldn't create QP"
check "ibv_xsrq_pingpong: iWARP has no XRC domains (EOPNOTSUPP, 95)" \
	pingpong xsrq "Couldn't Open the XRC Domain 95"

for d in kiwi0 kiwi1; do
	check "nothing left on $d (qp cq mr pd cm_id)" \
		wait_for 20 eval "kiwi_no_leftovers programs $d qp cq mr pd cm_id >/dev/null"
done
kiwi_two_devs_del
tap_end
