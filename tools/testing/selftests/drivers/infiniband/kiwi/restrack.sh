#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# "rdma res show" with kiwi's own attributes (rdma -dd: the restrack
# fill_res_* hooks), read while ib_read_bw runs between kiwi0 and kiwi1
# with the MPA CRC required: each end's QP tells its connection (state,
# CRC, side, RTR message, addresses that mirror the other end's), ORD and
# IRD as the two ends negotiated them, and its queues; the CQs and MRs
# their sizes, CPU and pages.
source "$(dirname "$0")/lib.sh"
tap_begin "rdma res show: kiwi's attributes"

kiwi_unload
check "two hosts joined by kvA/kvB" kiwi_two_hosts
check "kiwi0 and kiwi1, crc_required=1" kiwi_devs kiwi1 crc_required=1

# -F as everywhere in these tests: perftest's report samples the clock,
# and on a busy TCG VM that sample may fail its fit (r^2 < 0.9); without
# -F perftest then exits 1 after a good run. No figure is checked here.
port=18840
check "ib_read_bw's server listens" \
	srv_start rb $port kiwiB ib_read_bw -d kiwi1 -R -F -e -n 20000 -s 65536 -p $port
ip netns exec kiwiA timeout 120 ib_read_bw -d kiwi0 -R -F -e -n 20000 -s 65536 -p $port \
	192.0.2.2 >"$out/cli" 2>&1 &
cpid=$!
# The streaming QPs (the second of each end) are in RTS once both show;
# the CQs and MRs are read right after, while the programs run. perftest
# sleeps on its completion events (-e, so a counted run: perftest times
# none with events); two polling processes would leave these commands
# little of the VM's two CPUs.
streaming() {
	ip netns exec kiwiA rdma -dd res show qp >"$out/qp" 2>&1 &&
	[ "$(grep -c "comm ib_read_bw .*drv_sq_size 128 .*drv_cep_state rdma" "$out/qp")" = 2 ]
}
check "ib_read_bw's two streaming QPs show, connected" wait_for 30 streaming
ip netns exec kiwiA rdma -dd res show cq >"$out/cq" 2>&1
ip netns exec kiwiA rdma -dd res show mr >"$out/mr" 2>&1
sed 's/^/# /' "$out/qp"

# field FILE MATCH KEY: KEY's value on the first line of FILE matching MATCH
field() {
	awk -v m="$2" -v k="$3" '$0 ~ m {
		for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$1"
}
c="link kiwi0/.*drv_sq_size 128 " s="link kiwi1/.*drv_sq_size 128 "
check "both ends: endpoint in RDMA mode, CRC on, RTR message as negotiated" \
	eval '[ "$(field "$out/qp" "$c" drv_crc)" = 1 ] && [ "$(field "$out/qp" "$s" drv_crc)" = 1 ] &&
	      [ "$(field "$out/qp" "$c" drv_rtr)" != "" ] &&
	      [ "$(field "$out/qp" "$c" drv_rtr)" = "$(field "$out/qp" "$s" drv_rtr)" ]'
check "the client's QP is the initiator, the server's not" \
	eval '[ "$(field "$out/qp" "$c" drv_initiator)" = 1 ] &&
	      [ "$(field "$out/qp" "$s" drv_initiator)" = 0 ]'
check "addresses: the client's peer is the server's local end (port $port) and back" \
	eval '[ "$(field "$out/qp" "$c" drv_peer)" = "192.0.2.2:$port" ] &&
	      [ "$(field "$out/qp" "$s" drv_local)" = "192.0.2.2:$port" ] &&
	      [ "$(field "$out/qp" "$s" drv_peer)" = "$(field "$out/qp" "$c" drv_local)" ] &&
	      [[ $(field "$out/qp" "$c" drv_local) == 192.0.2.1:* ]]'
check "ORD and IRD: each end's ORD is the other's IRD, and Reads may flow" \
	eval '[ "$(field "$out/qp" "$c" drv_ord)" = "$(field "$out/qp" "$s" drv_ird)" ] &&
	      [ "$(field "$out/qp" "$c" drv_ird)" = "$(field "$out/qp" "$s" drv_ord)" ] &&
	      [ "$(field "$out/qp" "$c" drv_ord)" -ge 1 ]'
check "queues: entries in use within the sizes" \
	eval '[ "$(field "$out/qp" "$c" drv_sq_used)" -le 128 ] &&
	      [ "$(field "$out/qp" "$c" drv_rq_used)" -le "$(field "$out/qp" "$c" drv_rq_size)" ]'
sed 's/^/# /' "$out/cq" "$out/mr"
cqe=$(field "$out/cq" "dev kiwi0 .*cqe 128 " drv_cqe_size)
check "the 128-entry CQ: a ring of 128 (a power of two), on a CPU there is, no overflow" \
	eval '[ "$cqe" = 128 ] &&
	      [ "$(field "$out/cq" "dev kiwi0 .*cqe 128 " drv_cpu)" -lt "$(nproc)" ] &&
	      [ "$(field "$out/cq" "dev kiwi0 .*cqe 128 " drv_overflow)" = 0 ] &&
	      [ "$(field "$out/cq" "dev kiwi0 .*cqe 128 " drv_cqe_used)" -le 128 ]'
m="dev kiwi0 .*mrlen 131072 "
check "the 128 KiB buffer's MR: user memory, valid, 32 pages, its STag the rkey" \
	eval '[ "$(field "$out/mr" "$m" drv_type)" = user ] &&
	      [ "$(field "$out/mr" "$m" drv_valid)" = 1 ] &&
	      [ "$(field "$out/mr" "$m" drv_pages)" = 32 ] &&
	      [ "$(field "$out/mr" "$m" drv_stag)" = "0x$(field "$out/mr" "$m" rkey | sed s/^0x//)" ]'

wait $cpid
crc=$?
srv_end rb
src=$?
check "ib_read_bw ends well on both sides" test "$crc$src" = 00
[ "$crc$src" = 00 ] || tail -n 30 "$out/cli" "$out/rb.srv" | sed 's/^/# /'
check "afterwards no kiwi QP is left" \
	eval '! ip netns exec kiwiA rdma res show qp | grep -q "link kiwi[01]/.*type RC"'
ip netns exec kiwiA rdma link del kiwi0
ip netns exec kiwiB rdma link del kiwi1
kiwi_two_hosts_del
check "kiwi unloads" kiwi_devs_unload
tap_end
