#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rdma-core sees kiwi devices: one kiwi device at each end of a veth pair in
# two network namespaces, as in README's demo; ibv_devices and ibv_devinfo
# show them as iWARP devices, user space allocates PDs, nothing leaks, and
# libkiwi takes kiwi devices only (an rxe device keeps its own provider).
source "$(dirname "$0")/lib.sh"
tap_begin "verbs tools"

# Everything ibv_devinfo -v prints (ibv_query_device_ex, ibv_query_port) is
# what kiwi does: each line, blanks squeezed, must match in order. Limits
# are enforced where ibv_devinfo says (see kiwi-conformance.rst, V-LIM-*);
# zeros are what kiwi does not have (no atomics, UD, multicast, AHs, FMRs,
# raw QPs, ODP, P_Keys, LIDs, VLs, timestamps, TSO, RSS, rate limits, tag
# matching); the node GUID is the EUI-64 of the MAC, and the system image
# GUID the same (one device per system image); the port's speed and width
# are the netdev's. No GID line: libibverbs prints only GIDs with a RoCE
# type, and an iWARP GID has none.
devinfo_expected() {
	cat <<-EOF
	hca_id: kiwi0
	transport: iWARP \(1\)
	fw_ver: 0\.1\.0
	node_guid: $guid
	sys_image_guid: $guid
	vendor_id: 0x6b6977
	vendor_part_id: 0
	hw_ver: 0x0
	phys_port_cnt: 1
	max_mr_size: 0x1000000000
	page_size_cap: 0x1000
	max_qp: 16384
	max_qp_wr: 16384
	device_cap_flags: 0x01220c00
	PORT_ACTIVE_EVENT
	SYS_IMAGE_GUID
	MEM_WINDOW
	MEM_MGT_EXTENSIONS
	MEM_WINDOW_TYPE_2B
	max_sge: 6
	max_sge_rd: 1
	max_cq: 16384
	max_cqe: 262144
	max_mr: 65536
	max_pd: 65536
	max_qp_rd_atom: 128
	max_ee_rd_atom: 0
	max_res_rd_atom: 2097152
	max_qp_init_rd_atom: 128
	max_ee_init_rd_atom: 0
	atomic_cap: ATOMIC_HCA \(1\)
	max_ee: 0
	max_rdd: 0
	max_mw: 4096
	max_raw_ipv6_qp: 0
	max_raw_ethy_qp: 0
	max_mcast_grp: 0
	max_mcast_qp_attach: 0
	max_total_mcast_qp_attach: 0
	max_ah: 0
	max_fmr: 0
	max_srq: 16384
	max_srq_wr: 16384
	max_srq_sge: 6
	max_pkeys: 0
	local_ca_ack_delay: 0
	general_odp_caps:
	rc_odp_caps:
	NO SUPPORT
	uc_odp_caps:
	NO SUPPORT
	ud_odp_caps:
	NO SUPPORT
	xrc_odp_caps:
	NO SUPPORT
	completion_timestamp_mask not supported
	core clock not supported
	device_cap_flags_ex: 0x1220C00
	tso_caps:
	max_tso: 0
	rss_caps:
	max_rwq_indirection_tables: 0
	max_rwq_indirection_table_size: 0
	rx_hash_function: 0x0
	rx_hash_fields_mask: 0x0
	max_wq_type_rq: 0
	packet_pacing_caps:
	qp_rate_limit_min: 0kbps
	qp_rate_limit_max: 0kbps
	tag matching not supported
	num_comp_vectors: $(nproc)
	port: 1
	state: PORT_ACTIVE \(4\)
	max_mtu: 4096 \(5\)
	active_mtu: 1024 \(3\)
	sm_lid: 0
	port_lid: 0
	port_lmc: 0x00
	link_layer: Ethernet
	max_msg_sz: 0xffffffff
	port_cap_flags: 0x00010000
	port_cap_flags2: 0x0000
	max_vl_num: invalid value \(0\)
	bad_pkey_cntr: 0x0
	qkey_viol_cntr: 0x0
	sm_sl: 0
	pkey_tbl_len: 0
	gid_tbl_len: 1
	subnet_timeout: 0
	init_type_reply: 0
	active_width: [0-9]+X \([0-9]+\)
	active_speed: [0-9.]+ Gbps \([0-9]+\)
	EOF
}

# devinfo_matches OUTPUT: each non-blank line of OUTPUT against the same
# line of devinfo_expected (a whole-line extended regex).
devinfo_matches() {
	local got want bad=0 i
	mapfile -t got < <(sed -E 's/^[[:space:]]+//; s/[[:space:]]+/ /g; /^$/d' <<<"$1")
	mapfile -t want < <(devinfo_expected)
	for ((i = 0; i < ${#want[@]} || i < ${#got[@]}; i++)); do
		[[ "${got[i]-}" =~ ^${want[i]-}$ ]] && continue
		echo "# line $((i + 1)): '${got[i]-}', expected '${want[i]-}'"
		# Past a few, the rest is likely one line out of step.
		[ $((++bad)) -lt 8 ] || break
	done
	[ "$bad" -eq 0 ]
}

kiwi_unload
modprobe kiwi
kiwi_two_hosts || echo "not ok - set up two hosts"

check "kiwi0 created on kvA in namespace kiwiA" \
	ip netns exec kiwiA rdma link add kiwi0 type kiwi netdev kvA
check "kiwi1 created on kvB in namespace kiwiB" \
	ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvB
check "kvA is not visible from the initial namespace (kiwi1 add refused)" \
	fails_with "No such device" rdma link add kiwi9 type kiwi netdev kvA

out=$(ibv_devices 2>&1)
echo "$out" | sed 's/^/# /'
check "ibv_devices lists kiwi0" has_line "$out" "^[[:space:]]+kiwi0[[:space:]]+[0-9a-f]{16}$"
check "ibv_devices lists kiwi1" has_line "$out" "^[[:space:]]+kiwi1[[:space:]]+[0-9a-f]{16}$"

out=$(ibv_devinfo -d kiwi0 2>&1)
echo "$out" | sed 's/^/# /'
check "ibv_devinfo: transport iWARP" has_line "$out" "transport:[[:space:]]+iWARP \(1\)"
check "ibv_devinfo: port 1 PORT_ACTIVE" has_line "$out" "state:[[:space:]]+PORT_ACTIVE \(4\)"
check "ibv_devinfo: link_layer Ethernet" has_line "$out" "link_layer:[[:space:]]+Ethernet"
check "ibv_devinfo: fw_ver from the module" has_line "$out" "fw_ver:[[:space:]]+0\.1\.0"
mac=$(ip -n kiwiA -br link show kvA | awk '{print $3}')
IFS=: read -r m1 m2 m3 m4 m5 m6 <<<"$mac"
guid=$(printf '%02x%s:%sff:fe%s:%s%s' $((0x$m1 ^ 2)) "$m2" "$m3" "$m4" "$m5" "$m6")
check "node GUID is the EUI-64 of kvA's MAC ($mac -> $guid)" \
	eval '[ ${#guid} -eq 19 ] && has_line "$out" "node_guid:[[:space:]]+$guid$"'
check "GID 0 is kvA's MAC address" \
	test "$(query_field kiwi0 gid)" = "$(tr -d : <<<"$mac")00000000000000000000"
out=$(ip netns exec kiwiA ip link set kvA mtu 1500 && ibv_devinfo -v -d kiwi0 2>&1)
check "ibv_devinfo -v: every line is what kiwi does" devinfo_matches "$out"
check "ibv_devinfo -d kiwi1 shows iWARP too" \
	has_line "$(ibv_devinfo -d kiwi1 2>&1)" "transport:[[:space:]]+iWARP"

q=$("$KIWI_UVERBS" query kiwi1)
check "query_device: the limits kiwi enforces (PD 65536, QP 16384, CQ 16384, MR 65536)" \
	eval 'has_line "$q" "^max_pd=65536$" && has_line "$q" "^max_qp=16384$" &&
	      has_line "$q" "^max_cq=16384$" && has_line "$q" "^max_mr=65536$"'
check "query_device: vendor_id is KIWI_VENDOR_ID (0x6b6977, not 0)" \
	has_line "$q" "^vendor_id=0x6b6977$"
check "query_device: RFC 7306 atomics (IBV_ATOMIC_HCA); the device and port capabilities kiwi has" \
	eval 'has_line "$q" "^atomic_cap=1$" &&
	      has_line "$q" "^device_cap_flags=0x1220c00$" &&
	      has_line "$q" "^port_cap_flags=0x10000$"'

check "user space allocates and frees 1000 PDs" "$KIWI_UVERBS" pd kiwi0 1000
check "no PD is left behind" test -z "$(rdma resource show pd dev kiwi0 2>/dev/null)"
check "a PD from inside a namespace works" \
	ip netns exec kiwiB "$KIWI_UVERBS" pd kiwi1 10

# rxe keeps its own provider; kiwi's binding is by driver id, not name.
ip link add kvr type dummy
ip link set kvr up
if modprobe rdma_rxe 2>/dev/null && rdma link add kiwirxe type rxe netdev kvr; then
	out=$(ibv_devinfo -d kiwirxe 2>&1)
	check "an rxe device named kiwirxe is not taken by libkiwi" \
		has_line "$out" "transport:[[:space:]]+InfiniBand \(0\)"
	rdma link del kiwirxe
else
	not_ok "could not create an rxe device to cross-check provider matching"
fi
ip link del kvr
modprobe -r rdma_rxe 2>/dev/null

kiwi_two_hosts_del
check "both devices go with their namespaces' veths" \
	wait_for 20 eval 'ibdev_absent kiwi0 && ibdev_absent kiwi1'
kiwi_unload
tap_end
