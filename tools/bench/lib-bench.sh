# SPDX-License-Identifier: GPL-2.0
#
# The benchmark's transports, shared by tools/bench/run.sh and
# tools/bench/profile.sh (inside the VM, after lib.sh): set one up and
# down, run a command in a namespace, tell when a server listens, run a
# server and client pair, size ib_send_bw's receive queue, and read
# perftest's result.
# Needs $root; BENCH_KIWI_PARAMS are kiwi's module parameters (transport
# kiwi_crc adds crc_required=1, kiwi_mss fpdu_segs=1). With BENCH_PAIR set
# (the two-host path, under scripts/vm-pair.sh), lib-bench-pair.sh
# replaces the parts that differ between two VMs.

SIW=$root/build/siw/siw.ko

# Per transport: the devices, namespaces and server address.
cdev='' sdev='' cns=kiwiA sns=kiwiB saddr=192.0.2.2

# nsprefix NS: sets the array "pre" to the prefix that runs a command in network
# namespace NS ("" is the initial one). nsenter joins only the network
# namespace; ip netns exec would also remount /sys, which costs a second or
# more per run under emulation.
nsprefix() {
	if [ -n "$1" ]; then pre=(nsenter --net="/run/netns/$1"); else pre=(); fi
}

rxe_net() {
	ip link add rxA type veth peer name rxB &&
	ip addr add 198.51.100.1/24 dev rxA &&
	ip addr add 198.51.100.2/24 dev rxB &&
	for c in all default rxA rxB; do
		sysctl -qw net.ipv4.conf.$c.rp_filter=0 net.ipv4.conf.$c.accept_local=1 || return 1
	done &&
	ip link set rxA up && ip link set rxB up &&
	# The local table must come after the rules that send each address
	# out of the other veth end, or the kernel short-cuts it over lo.
	ip rule add pref 100 lookup local &&
	ip rule del pref 0 lookup local &&
	ip route add 198.51.100.2/32 dev rxA table 10 &&
	ip route add 198.51.100.1/32 dev rxB table 11 &&
	ip rule add pref 10 iif lo to 198.51.100.2 lookup 10 &&
	ip rule add pref 11 iif lo to 198.51.100.1 lookup 11
}

rxe_net_del() {
	ip rule del pref 10 2>/dev/null
	ip rule del pref 11 2>/dev/null
	ip rule add pref 0 lookup local 2>/dev/null
	ip rule del pref 100 2>/dev/null
	ip link del rxA 2>/dev/null
}

setup() {
	cns=kiwiA sns=kiwiB saddr=192.0.2.2
	case $1 in
	kiwi | kiwi_crc | kiwi_mss)
		cdev=kiwi0 sdev=kiwi1
		# shellcheck disable=SC2086 # a list of parameters
		modprobe kiwi ${BENCH_KIWI_PARAMS:-} \
			$([ "$1" = kiwi_crc ] && echo crc_required=1) \
			$([ "$1" = kiwi_mss ] && echo fpdu_segs=1) &&
		ip netns exec kiwiA rdma link add kiwi0 type kiwi netdev kvA &&
		ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvB ;;
	siw)
		cdev=siw0 sdev=siw1
		modprobe -a ib_core iw_cm rdma_cm libcrc32c crc32c_generic &&
		insmod "$SIW" &&
		ip netns exec kiwiA rdma link add siw0 type siw netdev kvA &&
		ip netns exec kiwiB rdma link add siw1 type siw netdev kvB ;;
	rxe)
		cdev=rxe0 sdev=rxe1 cns='' sns='' saddr=198.51.100.2
		modprobe rdma_rxe && rxe_net &&
		rdma link add rxe0 type rxe netdev rxA &&
		rdma link add rxe1 type rxe netdev rxB ;;
	tcp) ;;
	esac
}

teardown() {
	case $1 in
	kiwi | kiwi_crc | kiwi_mss)
		ip netns exec kiwiA rdma link del kiwi0
		ip netns exec kiwiB rdma link del kiwi1
		rmmod kiwi ;;
	siw)
		ip netns exec kiwiA rdma link del siw0
		ip netns exec kiwiB rdma link del siw1
		rmmod siw ;;
	rxe)
		rdma link del rxe0
		rdma link del rxe1
		rxe_net_del
		rmmod rdma_rxe ;;
	esac
} >/dev/null 2>&1

# listening TRANSPORT PORT PID: is the server PID listening on PORT? iWARP
# and TCP servers have a TCP listener (read in bash from the server's own
# /proc/PID/net files: no process to start); rxe's (RoCE) is an rdma_cm id.
listening() {
	local hex sl laddr raddr st rest f
	if [ "$1" = rxe ]; then
		rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN.*:$2 "
		return
	fi
	printf -v hex ':%04X' "$2"
	for f in "/proc/$3/net/tcp" "/proc/$3/net/tcp6"; do
		while read -r sl laddr raddr st rest; do
			[[ $laddr == *"$hex" && $st == 0A ]] && return 0
		done <"$f"
	done 2>/dev/null
	return 1
}

# bp_keep_providers: libibverbs loads every provider named in
# /etc/libibverbs.d into every process, seconds of each run under
# emulation. In the VM /etc is an overlay that vanishes at shutdown: keep
# only the three measured here.
bp_keep_providers() {
	local f
	if [ "$(findmnt -no FSTYPE /etc)" = overlay ]; then
		for f in /etc/libibverbs.d/*.driver; do
			case ${f##*/} in
			kiwi.driver | siw.driver | rxe.driver) ;;
			*) rm -f "$f" ;;
			esac
		done
	fi
	echo "# bench: providers $(cd /etc/libibverbs.d && echo *.driver)"
}

# bp_busy_ticks: CPU time (user, nice, system, irq, softirq, steal) of
# all CPUs since boot, in clock ticks.
bp_busy_ticks() {
	local user nice sys irq softirq steal
	read -r _ user nice sys _ _ irq softirq steal _ </proc/stat
	echo $((user + nice + sys + irq + softirq + steal))
}

# busy_ticks: the CPU time of the machine both ends run on.
busy_ticks() {
	bp_busy_ticks
}

# bench_vm_prep: kiwi installed in the VM, only the measured providers
# left, the kernel's RDMA modules loaded and kiwi_two_hosts made.
bench_vm_prep() {
	"$root/scripts/vm-install.sh" || { echo "bench: cannot install kiwi in the VM" >&2; return 1; }
	bp_keep_providers
	modprobe -a ib_core iw_cm rdma_cm ib_uverbs rdma_ucm
	kiwi_two_hosts || { echo "bench: cannot set up the two hosts" >&2; return 1; }
	ip -n kiwiA link set lo up
	ip -n kiwiB link set lo up
}

# rx_depth N: perftest's receive queue depth for ib_send_bw (-r). Over
# iWARP ib_send_bw paces the sender with credits that the receiver
# returns by RDMA Write every rx_depth/3 messages, and such a Write
# completes nothing at the sender. In event mode a sender that runs out
# of credit with no signaled Send outstanding sleeps on its CQ for good
# (the default depth, 512, hangs every run of more than 512 messages).
# With a depth above the count (N odd: perftest takes min(depth, N) and
# N + 1 is out of its reach) the credit cannot run out. perftest allows
# at most 16384: the 4 KiB cells (65,537 messages) keep a window of
# 16,384 messages, 64 MiB, many times what the sockets between the two
# ends hold, so the sender runs out only if the receiver stops
# consuming for as long as 64 MiB take.
rx_depth() {
	local d=$(($1 + 1))
	[ $d -gt 16384 ] && d=16384
	echo "$d"
}

# perftest output: the line after the "#bytes" header; BW average is its
# 4th field, t_typical (the median) the 5th.
parse_perftest() {
	awk -v f="$2" 'hdr && $1 ~ /^[0-9]+$/ { print $f; exit } /#bytes/ { hdr = 1 }' "$1"
}

# pair_run: the server (array srv) in namespace $sns in the background,
# then, once it listens on $port, the client (array cli) in $cns, each
# under "timeout $limit" and the client after the prefix wrap (perf, or
# nothing); their output goes to $log.srv and $log.cli, $tr names the
# transport. crc is the client's exit status; returns the server's.
wrap=()
pair_run() {
	local spid pre
	# A simple command, so that $! is the server's pid, in its namespace.
	nsprefix "$sns"
	# Line-buffered, so that a server killed after its client failed has
	# told why.
	"${pre[@]}" stdbuf -oL -eL timeout "$limit" "${srv[@]}" >"$log.srv" 2>&1 &
	spid=$!
	nsprefix "$cns"
	if ! wait_for 30 listening "$tr" "$port" "$spid"; then
		echo "bench: ${log##*/}: the server never listened" >>"$log.cli"
		crc=1
	else
		"${wrap[@]}" "${pre[@]}" timeout "$limit" "${cli[@]}" >"$log.cli" 2>&1
		crc=$?
	fi
	# A server left waiting after its client failed only burns the timeout.
	[ $crc -eq 0 ] || kill "$spid" 2>/dev/null
	wait "$spid"
}

if [ -n "${BENCH_PAIR:-}" ]; then
	source "$root/tools/bench/lib-bench-pair.sh"
fi
