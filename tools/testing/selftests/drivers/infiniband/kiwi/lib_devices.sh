#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# lib.sh's part for devices and hosts: kiwi devices on veth pairs, the two
# namespaces kiwiA and kiwiB, port state and counters, what must be left
# (nothing) when a test ends, and the module's unloading.

ibdev_exists() { [ -e "/sys/class/infiniband/$1" ]; }
ibdev_absent() { [ ! -e "/sys/class/infiniband/$1" ]; }

port_state() {
	cat "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null
}

port_phys_state() {
	cat "/sys/class/infiniband/$1/ports/1/phys_state" 2>/dev/null
}

# query_field DEV FIELD: one value from "kiwi_uverbs query".
query_field() {
	"$KIWI_UVERBS" query "$1" | sed -n "s/^$2=//p"
}

# kiwi_veth_dev DEV: fresh module, a veth pair kva/kvb that is up, and
# kiwi device DEV on kva.
kiwi_veth_dev() {
	kiwi_unload
	modprobe kiwi &&
	ip link add kva type veth peer name kvb &&
	ip link set kva up &&
	ip link set kvb up &&
	rdma link add "$1" type kiwi netdev kva
}

# kiwi_two_hosts: namespaces kiwiA and kiwiB joined by the veth pair
# kvA/kvB, with 192.0.2.1 and 192.0.2.2 (and 2001:db8::1 and ::2), up.
# The ends get different ifindexes: siw binds a wildcard listener to its
# netdev's ifindex in the listener's namespace, so with equal ones a
# wildcard listen (perftest's server) fails on siw's second device.
kiwi_two_hosts() {
	ip netns add kiwiA &&
	ip netns add kiwiB &&
	ip link add kvA index 12 netns kiwiA type veth peer name kvB index 13 netns kiwiB &&
	ip -n kiwiA addr add 192.0.2.1/24 dev kvA &&
	ip -n kiwiB addr add 192.0.2.2/24 dev kvB &&
	ip -n kiwiA addr add 2001:db8::1/64 dev kvA nodad &&
	ip -n kiwiB addr add 2001:db8::2/64 dev kvB nodad &&
	ip -n kiwiA link set kvA up &&
	ip -n kiwiB link set kvB up
}

kiwi_two_hosts_del() {
	ip netns del kiwiA
	ip netns del kiwiB
}

# kiwi_devs PEER [MODPARAM=VALUE...]: on kiwi_two_hosts, kiwi loaded with
# the parameters, kiwi0 on kvA in kiwiA, and PEER on kvB in kiwiB: kiwi1,
# or siw0 of the upstream siw (loaded here: $KIWI_SIW_KO if set, else
# $KIWI_SIW).
kiwi_devs() {
	local peer=$1
	shift
	# rdma_ucm (librdmacm's kernel end) is not a dependency of kiwi: a
	# test before may have unloaded it with the kernel ULPs.
	modprobe -a rdma_ucm ib_uverbs ||
		{ echo "# modprobe rdma_ucm ib_uverbs failed"; return 1; }
	modprobe kiwi "$@" || { echo "# modprobe kiwi $* failed"; return 1; }
	ip netns exec kiwiA rdma link add kiwi0 type kiwi netdev kvA ||
		{ echo "# rdma link add kiwi0 on kvA failed"; return 1; }
	if [ "$peer" = siw0 ]; then
		modprobe -r siw 2>/dev/null
		modprobe -a ib_core libcrc32c crc32c_generic 2>/dev/null
		insmod "${KIWI_SIW_KO:-$KIWI_SIW}" &&
		ip netns exec kiwiB rdma link add siw0 type siw netdev kvB
	else
		ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvB
	fi
}

# kiwi_devs_unload: once kiwi0, kiwi1 and siw0 are gone, unload siw and
# kiwi.
kiwi_devs_unload() {
	wait_for 20 eval 'ibdev_absent kiwi0 && ibdev_absent kiwi1 && ibdev_absent siw0'
	! grep -q "^siw " /proc/modules || rmmod siw
	kiwi_unload
}

# kiwi_two_devs [MODPARAM=VALUE...]: a fresh kiwi module loaded with the
# parameters, kiwi_two_hosts, and kiwi0 on kvA in kiwiA, kiwi1 on kvB in
# kiwiB.
kiwi_two_devs() {
	kiwi_unload
	kiwi_two_hosts || { echo "# the namespaces kiwiA, kiwiB and veth kvA/kvB: not made"; return 1; }
	kiwi_devs kiwi1 "$@"
}

# kiwi_two_devs_del: undo kiwi_two_devs (or kiwi_two_hosts and kiwi_devs).
kiwi_two_devs_del() {
	kiwi_two_hosts_del
	kiwi_devs_unload
}

# ---- port counters of errors (kiwi.rst, "Port counters")
#
# Read with shell builtins only: a process costs up to seconds in the VM.
KIWI_ERRC=(mpa_frame_err mpa_negotiation_err mpa_reject_sent mpa_reject_rcvd
	mpa_timeout cm_conn_err llp_reset llp_timeout llp_bad_close
	llp_data_after_fin rx_crc_err rx_fpdu_len_err rx_ddp_inv_stag
	rx_ddp_bounds_err rx_ddp_access_err rx_ddp_version_err rx_ddp_inv_qn
	rx_no_recv_buf rx_ddp_inv_msn rx_ddp_inv_mo rx_ddp_too_long
	rx_rdmap_inv_stag rx_rdmap_bounds_err rx_rdmap_access_err rx_inval_err
	rx_rdmap_version_err rx_rdmap_opcode_err rx_rdmap_op_err
	rx_ird_overflow rx_resp_err rx_local_err term_sent term_rcvd cqe_err
	cqe_flush_err cqe_loc_prot_err cqe_loc_len_err cqe_loc_qp_op_err
	cqe_mw_bind_err cqe_rem_err cq_overflow qp_fatal_event qp_access_event)
KIWI_PERFC=(tx_zcopy_bytes tx_zcopy_copied tx_zcopy_nobufs rx_crc_held_bytes
	tx_resp_softirq tx_resp_worker)

# errc_snap ARRAY DEV: ARRAY (associative) gets DEV's error counters.
errc_snap() {
	local -n _s=$1
	local n
	for n in "${KIWI_ERRC[@]}"; do
		read -r "_s[$n]" <"/sys/class/infiniband/$2/ports/1/hw_counters/$n" ||
			_s[$n]=missing
	done
}

# kiwi_errc_show PREFIX: each kiwi device's error counters that are not
# zero, as TAP comments.
kiwi_errc_show() {
	local d n v

	for d in /sys/class/infiniband/kiwi*; do
		[ -e "$d" ] || continue
		for n in "${KIWI_ERRC[@]}"; do
			read -r v <"$d/ports/1/hw_counters/$n" 2>/dev/null || continue
			[ "$v" = 0 ] || echo "# $1: ${d##*/} $n $v"
		done
	done
}

# errc_diff BEFORE AFTER WANT: $errc_bad lists, as NAME=DELTA(want N), the
# error counters that did not move from BEFORE to AFTER by WANT[NAME] (an
# associative array; 0 where unset); empty when all did.
errc_diff() {
	local -n _b=$1 _a=$2 _w=$3
	local n d
	errc_bad=
	for n in "${KIWI_ERRC[@]}"; do
		d=$((_a[$n] - _b[$n]))
		[ "$d" -eq "${_w[$n]:-0}" ] || errc_bad+=" $n=$d(want ${_w[$n]:-0})"
	done
}

# errc_want ARRAY LIST: ARRAY (associative; not named _word or _w) gets
# LIST's NAME or NAME=N words, N being 1 where not given.
errc_want() {
	local -n _w=$1
	local _word
	_w=()
	for _word in $2; do
		if [[ $_word == *=* ]]; then
			_w[${_word%=*}]=${_word#*=}
		else
			_w[$_word]=1
		fi
	done
}

# What kiwi_qpstate and kiwi_wrflow get (env) to hold an RDMA Read
# outstanding: commands that drop, and stop dropping, every packet the
# server in kiwiB sends.
KIWI_NETEM=("KIWI_BLOCK=ip netns exec kiwiB tc qdisc add dev kvB root netem loss 100%"
	    "KIWI_UNBLOCK=ip netns exec kiwiB tc qdisc del dev kvB root")

# kiwi_veth_dev_del DEV: undo kiwi_veth_dev.
kiwi_veth_dev_del() {
	kiwi_own_addr_dev_del "$1"
	kiwi_unload
}

# kiwi_no_leftovers NAME DEV RESOURCE...: one test point, failing when
# `rdma resource show RESOURCE` lists anything of DEV, or cannot be read.
# (iproute2 6.1 has no "dev" filter for every resource: select by name.)
kiwi_no_leftovers() {
	local name=$1 dev=$2 r out
	shift 2
	out=$(for r in "$@"; do
		rdma resource show "$r" || echo "rdma resource show $r failed"
	done 2>&1 | grep -w -e "$dev" -e failed)
	if [ -z "$out" ]; then
		echo "ok - $name: no $* left on $dev"
		return 0
	fi
	echo "not ok - $name: $* left on $dev"
	sed 's/^/# /' <<<"$out"
	return 1
}

# kiwi_cm_counts: kiwi's connection endpoints and sockets (debugfs).
kiwi_cm_counts() {
	local d=/sys/kernel/debug/kiwi
	echo "$(cat $d/cm_endpoints 2>/dev/null || echo none)" \
		"$(cat $d/cm_sockets 2>/dev/null || echo none)"
}

# kiwi_cq_cpus: kiwi's per-CPU completion work (debugfs cq_cpus), a line
# "CPU CQES HANDLERS REMOTE" per possible CPU; nothing without kiwi.
kiwi_cq_cpus() {
	tail -n +2 /sys/kernel/debug/kiwi/cq_cpus 2>/dev/null
}

# kiwi_cqes: the completions kiwi's CQs took so far, all CPUs together.
kiwi_cqes() {
	kiwi_cq_cpus | awk '{ n += $2 } END { print n + 0 }'
}

# kiwi_cq_cpus_delta BEFORE [PREFIX]: the growth of each CPU's counts
# since BEFORE (an earlier kiwi_cq_cpus), in kiwi_cq_cpus' format; with
# PREFIX, as CSV rows "PREFIX,CPU,CQES,HANDLERS,REMOTE".
kiwi_cq_cpus_delta() {
	awk -v p="${2:-}" 'NR == FNR { c[$1] = $2; h[$1] = $3; r[$1] = $4; next }
	     { d = $1 " " $2 - c[$1] " " $3 - h[$1] " " $4 - r[$1]
	       if (p != "") { gsub(/ /, ",", d); d = p "," d }
	       print d }' \
		<(echo "$1") <(kiwi_cq_cpus)
}

kiwi_unload() {
	modprobe -r kiwi 2>/dev/null || true
}

# kiwi_own_addr_dev DEV ADDR: a new veth pair kva/kvb, up, with ADDR/24 on
# kva and kiwi device DEV on it; nothing waits between the steps (the
# storage tests connect to the device's own address).
kiwi_own_addr_dev() {
	ip link add kva type veth peer name kvb &&
	ip addr add "$2/24" dev kva &&
	ip link set kva up &&
	ip link set kvb up &&
	rdma link add "$1" type kiwi netdev kva
}

# kiwi_own_addr_dev_del DEV: the veth pair deleted, and DEV gone with it.
kiwi_own_addr_dev_del() {
	ip link del kva 2>/dev/null
	wait_for 20 ibdev_absent "$1"
}
