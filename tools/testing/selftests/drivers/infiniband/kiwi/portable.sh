#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Programs written for any RDMA device run unchanged on kiwi
# (kiwi_portable): the attribute masks of the IB verbs in modify_qp on an
# unconnected QP, with the exact errno of what kiwi cannot honour, and what
# the extended API (ibv_create_qp_ex, ibv_wr_*, ibv_create_cq_ex) refuses;
# then, between two namespaces, QPs brought up with those masks and
# connected by their numbers move checked data: one with ibv_post_send,
# one with every ibv_wr_* builder and setter kiwi offers, its completions
# read with ibv_start_poll and the ibv_wc_read_* readers.
source "$(dirname "$0")/lib.sh"
tap_begin "portability: IB attribute masks, the extended QP and CQ API"
P=$KIWI_TESTDIR/kiwi_portable
rc=0

check "kiwi0 on a veth pair" kiwi_veth_dev kiwi0
tap_run "$P" local kiwi0 || rc=1
kiwi_no_leftovers portable-local kiwi0 qp cq pd || rc=1
kiwi_veth_dev_del kiwi0

check "two hosts with a kiwi device each" kiwi_two_devs
tap_pair portable 7600 kiwiB "$P" server 192.0.2.2 7600 -- \
	kiwiA "$P" client 192.0.2.2 7600 || rc=1
for d in kiwi0 kiwi1; do
	check "nothing left on $d (qp cq mr pd cm_id)" \
		wait_for 20 eval "kiwi_no_leftovers portable $d qp cq mr pd cm_id >/dev/null"
done
kiwi_two_devs_del
[ $rc -eq 0 ] || not_ok "kiwi_portable reported failures"
tap_end
