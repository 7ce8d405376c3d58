#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers for kiwi's kselftest scripts: TAP output and device plumbing.
# Each test script sources this, calls tap_begin, runs its checks and ends
# with tap_end, which prints the plan and exits 1 if anything failed.

KIWI_TESTDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# kiwi's tree: the one these tests sit in, or, for a copy in a kernel tree
# run by the kernel's selftest runner, the one KIWI_ROOT names (Makefile).
KIWI_ROOT=${KIWI_ROOT:-$(cd "$KIWI_TESTDIR/../../../../../.." && pwd)}
# The upstream siw, built by scripts/build-siw.sh: the wire peer.
KIWI_SIW=$KIWI_ROOT/build/siw/siw.ko
# The same siw with its try_gso on: it offers large FPDUs and sends them
# where the peer agreed (scripts/build-siw.sh).
KIWI_SIW_GSO=$KIWI_ROOT/build/siw-gso/siw.ko
# Kernel log lines that mean a test broke the kernel (run_vm.sh checks the
# log after each test). On the debug kernel KASAN and lockdep reports start
# with "BUG:" or "WARNING:", and the rest of lockdep's and RCU's with "INFO:".
# A program's own crash ("traps: NAME[PID] general protection fault ip:")
# is not the kernel's: its exit status tells.
KIWI_BAD_LOG='WARNING:|BUG:|INFO:|KASAN|Oops|general protection fault(,|: [0-9a-f]{4})|Call Trace:|refcount_t:|unregister_netdevice: waiting|kmemleak|UBSAN|list_(add|del) corruption|blocked for more than'
KIWI_UVERBS=$KIWI_TESTDIR/kiwi_uverbs
_tap_n=0
_tap_failed=0

# tap_begin DESCRIPTION: the TAP header. $out becomes a scratch directory,
# removed when the script exits.
tap_begin() {
	echo "TAP version 13"
	echo "# $(basename "$0"): $*"
	out=$(mktemp -d)
	_tap_out=$out
	trap 'rm -rf "$_tap_out"' EXIT
}

# Each point is followed by the seconds it took (since the last point), to
# show where a slow suite spends its time; KIWI_TAP_TIMES=0 leaves that out.
_tap_time() {
	[ "${KIWI_TAP_TIMES:-1}" = 1 ] || return 0
	echo "# point took $((SECONDS - ${_tap_t:-0})) s"
	_tap_t=$SECONDS
}

ok() {
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n $*"
	_tap_time
}

not_ok() {
	_tap_n=$((_tap_n + 1))
	_tap_failed=$((_tap_failed + 1))
	echo "not ok $_tap_n $*"
	_tap_time
}

# check DESCRIPTION CMD...: one test point, passing when CMD succeeds.
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

tap_end() {
	echo "1..$_tap_n"
	[ "$_tap_failed" -eq 0 ]
	exit $?
}

# A task stuck in the kernel (D state) outlives any timeout, and the tests
# after it would stall behind it until the VM's limit: KIWI_WEDGED marks
# the run as wedged, and run_vm.sh then stops.
# (tools/testing/host/bounded.sh points it, and KIWI_SYSRQ, elsewhere.)
KIWI_WEDGED=${KIWI_WEDGED:-/run/kiwi-wedged}

# blocked_tasks: the kernel's stacks of every task in D state (sysrq w),
# as TAP comments.
blocked_tasks() {
	local since

	since=$(dmesg 2>/dev/null | wc -l)
	if [ -n "${KIWI_SYSRQ:-}" ]; then
		echo w >"$KIWI_SYSRQ"
	else
		echo 1 >/proc/sys/kernel/sysrq
		echo w >/proc/sysrq-trigger
	fi
	sleep 1
	# The stacks without their registers and unreliable (?) frames.
	dmesg 2>/dev/null | tail -n +"$((since + 1))" |
		grep -vE '\]  ?(\? |R[0-9A-Z]{2}:|RIP:|Code:)' | head -200 | sed 's/^/# blocked: /'
}

# bounded SECS CMD...: CMD, given SECS seconds to return. A CMD that
# has not returned by then is reported with the kernel's blocked tasks,
# the run is marked wedged, and the test ends here, without its EXIT trap.
bounded() {
	local secs=$1 pid n=0
	shift

	"$@" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null && [ "$n" -lt "$secs" ]; do
		sleep 1
		n=$((n + 1))
	done
	kill -0 "$pid" 2>/dev/null &&
		wedged "'$*' returns within $secs s (it has not: a task is stuck)"
	wait "$pid"
}

# wedged POINT: a task is stuck in the kernel. POINT fails, the kernel's
# blocked tasks are shown, the run is marked wedged, and the test ends
# here, without its EXIT trap: its own clean-up (an unmount, a module's
# removal) would wait behind the stuck task.
wedged() {
	not_ok "$1"
	blocked_tasks
	touch "$KIWI_WEDGED"
	trap - EXIT
	tap_end
}

# fails_with ERRMSG CMD...: CMD must fail and print ERRMSG on stderr.
fails_with() {
	local want=$1 out
	shift
	if out=$("$@" 2>&1); then
		echo "# unexpectedly succeeded: $*"
		return 1
	fi
	if [[ "$out" != *"$want"* ]]; then
		echo "# expected '$want', got: $out"
		return 1
	fi
	return 0
}

# Output must contain a line matching the regex.
has_line() {
	grep -qE "$2" <<<"$1" || { echo "# no line matching '$2' in:"; sed 's/^/#   /' <<<"$1"; return 1; }
}

ibdev_exists() { [ -e "/sys/class/infiniband/$1" ]; }
ibdev_absent() { [ ! -e "/sys/class/infiniband/$1" ]; }

# Count kiwi devices (any name): their driver id is KIWI_DRIVER_ID.
kiwi_dev_count() {
	rdma -j dev show 2>/dev/null | grep -o '"ifname":"[^"]*"' | wc -l
}

# nap SECONDS: sleep without a process. Under emulation a fork and exec
# costs a tenth of a second on the stock kernel and half a second on the
# debug one, more than the polls below wait between tries; read's timeout
# on a pipe that nobody writes to sleeps in the shell itself.
exec {_nap_fd}<> <(:)
nap() {
	read -r -t "$1" -u "$_nap_fd" _ || :
}

# wait_for SECONDS CMD...: poll until CMD succeeds.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || return 1
		nap 0.2
	done
}

# uverbs_dir DEV: the sysfs directory of DEV's uverbs character device.
uverbs_dir() {
	local d
	for d in /sys/class/infiniband_verbs/uverbs*; do
		[ "$(cat "$d/ibdev" 2>/dev/null)" = "$1" ] && { echo "$d"; return 0; }
	done
	return 1
}

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

# ---- a server in one namespace, its client in the other
#
# Each runs for $KIWI_TIMEOUT seconds at most (120 unless set), then gets
# $KIWI_SIGNAL (TERM unless set). Their outputs go to $out/NAME.srv and
# $out/NAME.cli.

declare -gA kiwi_srv_pid

# tcp_listens PORT FILE...: one of /proc's TCP tables FILE lists a
# listener on PORT. Shell built-ins only: on the debug kernel every
# program started costs about half a second, ss three.
tcp_listens() {
	local port f re
	# A listener's line: "N: LOCALADDR:PORT REMOTEADDR:PORT 0A ...". The
	# file is read whole and matched in the shell: bash reads a pipe or
	# /proc file byte by byte in a read loop, a system call each.
	printf -v port '%04X' "$1"
	re="(^|"$'\n'")[[:space:]]*[0-9]+: [0-9A-F]+:$port [0-9A-F]+:[0-9A-F]+ 0A "
	shift
	for f in "$@"; do
		[ -r "$f" ] || continue
		[[ $(<"$f") =~ $re ]] && return 0
	done
	return 1
}

# srv_listens NS PORT: something listens on TCP PORT in namespace NS.
srv_listens() {
	tcp_listens "$2" <(nsenter --net="/run/netns/$1" cat /proc/net/tcp /proc/net/tcp6)
}

# pid_listens NS PID PORT: PID is in namespace NS, which has a listener on
# TCP PORT (/proc/PID/net is PID's namespace).
pid_listens() {
	[[ /proc/$2/ns/net -ef /run/netns/$1 ]] &&
		tcp_listens "$3" "/proc/$2/net/tcp" "/proc/$2/net/tcp6"
}

# srv_start NAME PORT NS CMD...: server NAME, CMD in namespace NS in the
# background; returns once it listens on TCP PORT there, 1 if it ended or
# took two minutes without.
srv_start() {
	local name=$1 port=$2 ns=$3 pid
	shift 3
	# The last server on this port may still be closing its listener
	# (its cm_id goes after its process): that one must not count.
	wait_for 30 eval "! srv_listens $ns $port"
	ip netns exec "$ns" timeout -s "${KIWI_SIGNAL:-TERM}" "${KIWI_TIMEOUT:-120}" \
		"$@" >"$out/$name.srv" 2>&1 &
	pid=$!
	kiwi_srv_pid[$name]=$pid
	wait_for 120 eval "pid_listens $ns $pid $port || ! kill -0 $pid 2>/dev/null"
	srv_listens "$ns" "$port"
}

# srv_end NAME: wait for server NAME to end; returns its exit status.
srv_end() {
	wait "${kiwi_srv_pid[$1]}"
}

# srv_stop NAME [SECONDS]: give server NAME SECONDS (none) to end, then
# stop it with SIGTERM; returns its exit status.
srv_stop() {
	local pid=${kiwi_srv_pid[$1]}

	wait_for "${2:-0}" eval "! kill -0 $pid 2>/dev/null" || kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# cli_run NAME NS CMD...: client NAME, CMD in namespace NS; returns its
# exit status (timeout's when it was stopped: 124, or 137 for SIGKILL).
cli_run() {
	local name=$1 ns=$2
	shift 2
	ip netns exec "$ns" timeout -s "${KIWI_SIGNAL:-TERM}" "${KIWI_TIMEOUT:-120}" \
		"$@" >"$out/$name.cli" 2>&1
}

# pair_args SERVER-CMD... -- CLIENT-NS CLIENT-CMD...: into the caller's
# srv, cns and cli.
pair_args() {
	srv=() cli=()
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cns=$1
	shift
	cli=("$@")
}

# pair NAME PORT SERVER-NS SERVER-CMD... -- CLIENT-NS CLIENT-CMD...: start
# the server, wait until it listens on TCP PORT, run the client; both must
# exit 0. On failure their error lines are shown.
pair() {
	local name=$1 port=$2 sns=$3 srv cns cli crc src
	shift 3
	pair_args "$@"
	srv_start "$name" "$port" "$sns" "${srv[@]}"
	cli_run "$name" "$cns" "${cli[@]}"
	crc=$?
	# A server whose client failed may wait for it until its time limit.
	if [ $crc -eq 0 ]; then
		srv_end "$name"
	else
		srv_stop "$name" 10
	fi
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "# $name: client exit $crc, server exit $src"
		tail -n 12 "$out/$name.srv" | sed "s/^/# $name: server: /"
		tail -n 12 "$out/$name.cli" | sed "s/^/# $name: client: /"
		# What the kernel and the sockets looked like, to explain it.
		dmesg | tail -8 | sed "s/^/# $name: dmesg: /"
		{ ip netns exec "$sns" ss -tan; ip netns exec "$cns" ss -tan; } |
			grep -v "^State" | head -12 | sed "s/^/# $name: ss: /"
		# Which side refused, reset or timed out the connection.
		kiwi_errc_show "$name"
		return 1
	fi
}

# pair_rping NAME PORT SERVER-NS ADDR CLIENT-NS COUNT SIZE: pair of rping
# -V (Send, RDMA Read and Write, data verified), COUNT iterations of SIZE
# bytes, the server on ADDR.
pair_rping() {
	pair "$1" "$2" "$3" rping -s -a "$4" -p "$2" -V -C "$6" -S "$7" -- \
		"$5" rping -c -a "$4" -p "$2" -V -C "$6" -S "$7"
}

# rping_check WHAT NAME SERVER-NS ADDR CLIENT-NS COUNT SIZE: one point,
# pair_rping on port 7174 (rping's own).
rping_check() {
	check "$1: rping -V from $5 to $4 in $3, $6 x $7 B" \
		pair_rping "$2" 7174 "$3" "$4" "$5" "$6" "$7"
}

# pair_perftest NAME PORT TEST SERVER-DEV CLIENT-DEV ITERS SIZE ADDR: pair
# of perftest's TEST (ib_send_bw, ...) over rdma_cm, the server in kiwiB
# on SERVER-DEV at ADDR, the client in kiwiA on CLIENT-DEV.
pair_perftest() {
	local opt=(-R -F -p "$2" -n "$6" -s "$7")

	perftest_pair "$1" "$2" kiwiB "$3" -d "$4" "${opt[@]}" -- \
		kiwiA "$3" -d "$5" "${opt[@]}" "$8"
}

# perftest_pair NAME PORT SERVER-NS SERVER-CMD... -- CLIENT-NS CLIENT-CMD...:
# pair for perftest, once more after perftest's own race. With -R its
# server takes a first connection to exchange parameters, closes its
# listener and listens again on the same port for the test's; a client
# quicker than that is refused (REJECTED, ECONNREFUSED: nothing listens),
# and perftest 4.5's client then crashes in its retry (seen on kiwi and on
# siw servers alike).
perftest_pair() {
	pair "$@" && return 0
	grep -q "RDMA_CM_EVENT_REJECTED; error: -111" "$out/$1.cli" || return 1
	echo "# $1: perftest's client connected before its server listened again: once more"
	pair "$@"
}

# qperf_pair NAME PORT SERVER-NS SERVER-CMD... -- CLIENT-NS CLIENT-CMD...:
# pair for qperf -cm1, once more after qperf's own race. Debian's qperf
# (0.4.11) sends its client a test's port before it listens there
# (upstream's commit 118a571 swaps the two); a client quicker than that
# is refused, REJECTED, and ends the run. Seen on the debug kernel only.
qperf_pair() {
	pair "$@" && return 0
	grep -q "unexpected event from RDMA CM: Event rejected" "$out/$1.cli" || return 1
	echo "# $1: qperf's client connected before its server listened: once more"
	pair "$@"
}

# perftest_checks WHAT PEER ITERS SIZE: six points: ib_send, ib_write and
# ib_read, _bw with SIZE bytes and _lat with 8, ITERS iterations each, over
# rdma_cm from kiwi0 in kiwiA to a server on PEER in kiwiB (192.0.2.2).
perftest_checks() {
	local t

	for t in send write read; do
		check "$1: ib_${t}_bw -R to $2, $3 x $4 B" \
			pair_perftest "$t" 18515 ib_${t}_bw "$2" kiwi0 "$3" "$4" 192.0.2.2
		check "$1: ib_${t}_lat -R to $2, $3 x 8 B" \
			pair_perftest "${t}lat" 18515 ib_${t}_lat "$2" kiwi0 "$3" 8 192.0.2.2
	done
}

# tap_pair NAME PORT SERVER-NS SERVER-CMD... -- CLIENT-NS CLIENT-CMD...:
# start the server (a point: it listens on TCP PORT), run the client, whose
# TAP points become ours (tap_run), then one point for the server's exit
# status, its output shown as comments. Each runs for 300 s at most unless
# KIWI_TIMEOUT says otherwise. Returns 1 when either failed.
tap_pair() {
	local name=$1 port=$2 sns=$3 srv cns cli crc src
	local KIWI_TIMEOUT=${KIWI_TIMEOUT:-300}
	shift 3
	pair_args "$@"
	check "$name: server listens" srv_start "$name" "$port" "$sns" "${srv[@]}"
	tap_run ip netns exec "$cns" timeout "$KIWI_TIMEOUT" "${cli[@]}"
	crc=$?
	srv_end "$name"
	src=$?
	sed 's/^/# /' "$out/$name.srv"
	check "$name: the server ended cleanly" test "$src" -eq 0
	[ "$crc" -eq 0 ] && [ "$src" -eq 0 ]
}

# pcap_start NS DEV FILE [PEER]: dumpcap on DEV in namespace NS, TCP only,
# into FILE as classic pcap (iwarp_pcap.py reads it), until pcap_stop;
# returns once it captures. Its log is $out/dumpcap.log.
#
# dumpcap writes what it captured late, and only what it has read from
# the kernel's ring (TPACKET_V3 hands packets over a block at a time):
# its "File:" line is no proof that it captures, and stopped right after
# a short connection it had often none of it in the file (mpa_rev1.sh).
# So both ends wait for a marker: a connect from NS to port 9 of PEER
# (refused at once, no payload, no tool's port) shows up in FILE; the
# kernel delivers in order, so everything before it is in FILE too.
pcap_start() {
	pcap_ns=$1 pcap_file=$3 pcap_peer=${4:-192.0.2.2}
	rm -f "$pcap_file"
	ip netns exec "$1" dumpcap -q -P -i "$2" -f tcp -w "$pcap_file" \
		>"$out/dumpcap.log" 2>&1 &
	pcap_pid=$!
	wait_for 60 grep -q "^File:" "$out/dumpcap.log" &&
		wait_for 60 pcap_marked 0
}

# pcap_marked N: one more marker connect; then FILE has more than N.
pcap_marked() {
	ip netns exec "$pcap_ns" bash -c "exec 3<>/dev/tcp/$pcap_peer/9" 2>/dev/null
	sleep 0.3
	[ "$("$KIWI_TESTDIR/iwarp_pcap.py" syns "$pcap_file" 9)" -gt "$1" ]
}

# pcap_stop: once a marker made after the traffic is in the file, end
# pcap_start's capture (a background job ignores SIGINT). Returns 1 when
# the marker never came.
pcap_stop() {
	local n r=0
	n=$("$KIWI_TESTDIR/iwarp_pcap.py" syns "$pcap_file" 9)
	wait_for 60 pcap_marked "$n" || { echo "# pcap_stop: the capture took no marker"; r=1; }
	kill -TERM "$pcap_pid"
	wait "$pcap_pid"
	return $r
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

# kiwi_cm_idle NAME: one point: within 10 s kiwi has no connection
# endpoint and no socket left, as once every connection and listener is
# gone.
kiwi_cm_idle() {
	if wait_for 10 eval '[ "$(kiwi_cm_counts)" = "0 0" ]'; then
		echo "ok - $1: no connection endpoint or socket of kiwi's left"
		return 0
	fi
	echo "not ok - $1: kiwi's connection endpoints and sockets left: $(kiwi_cm_counts)"
	return 1
}

kiwi_unload() {
	modprobe -r kiwi 2>/dev/null || true
}

# ktest_run KO [PARAM=VALUE...]: load kernel test module KO (built by "make
# ktest"), whose cases run at load time and print TAP to the kernel log as
# "MODULE: ok N - ...". Re-emit those lines, with "$KTEST_TAG: " in front of
# each description when KTEST_TAG is set, check that the load failed
# exactly when a point failed, and unload the module. Returns 1 when
# anything failed.
ktest_run() {
	local ko=$1 mod marker lines plan passed failed ins err rc=0
	local start=$SECONDS tag=${KTEST_TAG:+$KTEST_TAG: }
	shift
	mod=$(basename "$ko" .ko)
	if [ ! -f "$ko" ]; then
		echo "not ok - $mod: $ko is built (make ktest)"
		return 1
	fi
	# Our lines follow the marker; earlier runs may still be in the log.
	marker="$mod: run $$ $RANDOM"
	echo "$marker" >/dev/kmsg
	err=$(insmod "$ko" "$@" 2>&1)
	ins=$?
	echo "# ${tag}insmod $mod $* returned $ins after $((SECONDS - start)) s"
	[ -z "$err" ] || sed 's/^/# /' <<<"$err"
	lines=$(dmesg --notime | sed -n "/^$marker\$/,\$p" |
		sed -n "s/^$mod: \(ok \|not ok \|1\.\.\|# \)/\1/p" |
		sed "s/^\(\(not \)\?ok [0-9]* - \)/\1$tag/")
	echo "$lines"

	plan=$(sed -n 's/^1\.\.//p' <<<"$lines")
	passed=$(grep -c '^ok ' <<<"$lines")
	failed=$(grep -c '^not ok ' <<<"$lines")
	if [ "$failed" -gt 0 ]; then
		rc=1
		if [ $ins -ne 0 ]; then
			echo "ok - $mod: ${tag}the failed points failed the module load"
		else
			echo "not ok - $mod: ${tag}the failed points failed the module load"
		fi
	elif [ $ins -eq 0 ] && [ "$passed" -gt 0 ] && [ "$plan" = "$passed" ]; then
		echo "ok - $mod: ${tag}insmod succeeded, all $passed points of the plan passed"
	else
		echo "not ok - $mod: ${tag}insmod status $ins, plan '$plan', $passed passed"
		rc=1
	fi
	if grep -qw "^$mod" /proc/modules; then
		if rmmod "$mod"; then
			echo "ok - $mod: ${tag}rmmod"
		else
			echo "not ok - $mod: ${tag}rmmod"
			rc=1
		fi
	fi
	return $rc
}

# ktest_run_ns KO [PARAM=VALUE...]: ktest_run, with namespaces kiwiA and
# kiwiB as the module's netns_a and netns_b (descriptors insmod inherits).
ktest_run_ns() {
	ktest_run "$@" netns_a=3 netns_b=4 3</run/netns/kiwiA 4</run/netns/kiwiB
}

# ktest_fails KO REGEX [PARAM=VALUE...]: the harness itself. A run of KO
# with the parameters must fail its load and report a TAP line that REGEX
# (extended) matches whole; the run's own lines become comments.
ktest_fails() {
	local ko=$1 want=$2 out mod
	shift 2
	mod=$(basename "$ko" .ko)
	out=$(ktest_run "$ko" "$@")
	sed 's/^/# /' <<<"$out"
	if grep -qx "ok - $mod: the failed points failed the module load" <<<"$out" &&
	   grep -qxE -- "$want" <<<"$out"; then
		echo "ok - $mod: a run with $* fails the load, reporting '$want'"
		return 0
	fi
	echo "not ok - $mod: a run with $* fails the load, reporting '$want'"
	return 1
}

# blkpat ARGS...: kiwi_blkpat, its report lines as TAP comments; killed
# after 15 minutes (a hard NFS mount that never comes back holds it).
blkpat() {
	timeout -s KILL 900 "$KIWI_TESTDIR/kiwi_blkpat" "$@" 2>&1 | sed 's/^/# /'
	return "${PIPESTATUS[0]}"
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

# ---- files on a mounted network file system (storage_nfs.sh,
# storage_smb.sh)

# fs_qps DEV: how many QPs of device DEV exist (rdma resource lists
# "link DEV/1").
fs_qps() { rdma resource show qp | grep -c "link $1/"; }

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# fs_small_files DIR N: N files of up to 20,000 random bytes in
# $out/small, their sums in $out/small.sum, copied to DIR/small.
fs_small_files() {
	local i

	rm -rf "$out/small"
	mkdir -p "$out/small" "$1/small" || return 1
	for i in $(seq "$2"); do
		head -c $(((i * 7919) % 20000)) /dev/urandom >"$out/small/f$i"
	done
	(cd "$out/small" && sha256sum f* >"$out/small.sum") &&
		cp "$out"/small/f* "$1/small/"
}

# fs_big_file DIR MB CGROUP: DIR/big, MB MiB of random bytes written
# through a pipe by a process of memory cgroup CGROUP (so that a file
# larger than its limit is written back while it is written), its sum
# taken on the way into $out/big.sum.
fs_big_file() {
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$3" \
		sh -c "head -c $2M /dev/urandom | tee '$1/big' | sha256sum >'$out/big.sum'" &&
		sed -i 's|-$|big|' "$out/big.sum"
}

# fs_dir_ops DIR: directory operations in DIR/tree, through the mount:
# mkdir, 50 files, rename across directories, unlink, rmdir, a directory
# renamed with its contents; 53 entries are left.
fs_dir_ops() {
	local d=$1/tree i

	mkdir -p "$d/a/b/c" "$d/gone" &&
	for i in $(seq 50); do echo "$i" >"$d/a/n$i"; done &&
	mv "$d/a/n1" "$d/a/b/c/moved" &&
	rm "$d/a/n4" && rmdir "$d/gone" &&
	mv "$d/a/b" "$d/b" &&
	[ "$(cat "$d/b/c/moved")" = 1 ]
}

# fs_unmount_all: at a test's end, the writer stopped and $mnt unmounted
# whatever state the server is in.
fs_unmount_all() {
	touch "$out/stop"
	wait
	umount -f "$mnt" 2>/dev/null
	umount -l "$mnt" 2>/dev/null
}

# fs_direct NAME DIR SRVDIR SEED: test points: $direct_chunks chunks of
# 64 KiB written to DIR/direct with O_DIRECT, read back with O_DIRECT,
# and read from the server's copy, SRVDIR/direct.
fs_direct() {
	: >"$2/direct"
	check "$1: $direct_chunks chunks of 64 KiB written with O_DIRECT" \
		blkpat write "$2/direct" --seed "$4" --chunks "$direct_chunks" --direct
	check "$1: and read back with O_DIRECT, intact" \
		blkpat verify "$2/direct" --seed "$4" --chunks "$direct_chunks" --direct
	check "$1: the server's file holds the same bytes" \
		blkpat verify "$3/direct" --seed "$4" --chunks "$direct_chunks"
}

# fs_fault SEED NAME FAULT FELT HEAL: FAULT while a writer (writer_running)
# writes $mnt/wSEED, FELT true while it is on; HEAL. Then the test's
# fault_healed NAME (its server listening again), the mount writing on by
# itself (a hard mount resends), the test's fault_after NAME, and every
# chunk the writer saw completed read back intact from the mount and from
# the server's copy, $fs_srv_dir/wSEED; the last kernel messages that
# match $fs_dmesg are shown. fault_before NAME runs as the writer runs.
fs_fault() {
	local seed=$1 name=$2 fault=$3 felt=$4 heal=$5 t

	: >"$mnt/w$seed"
	writer_running "$name" "$seed" "$mnt/w$seed" 0 100000
	fault_before "$name"
	t=$SECONDS
	bounded 120 eval "$fault"
	check "$name: '$fault' returns within 20 s ($((SECONDS - t)) s)" \
		test $((SECONDS - t)) -le 20
	check "$name: the fault is felt" wait_for 20 eval "$felt"
	sleep 3
	check "$name: healed ($heal)" eval "$heal"
	fault_healed "$name"
	t=$SECONDS
	check "$name: the mount writes on by itself" writer_progress "$seed" 4 150
	echo "# $name: writes went on $((SECONDS - t)) s after the heal"
	fault_after "$name"
	check "$name: every chunk the writer saw completed reads back intact ($(logged "$seed") chunks)" \
		writer_end "$seed" "$mnt/w$seed"
	check "$name: the server's file holds them too" \
		blkpat verify "$fs_srv_dir/w$seed" --seed "$seed" --log "$out/w$seed.log"
	dmesg | grep -E "$fs_dmesg" | tail -3 | sed "s/^/# $name: dmesg: /"
}

# fs_small_ok DIR, fs_big_ok DIR: DIR's small files, DIR/big, hold the
# bytes fs_small_files and fs_big_file wrote.
fs_small_ok() { (cd "$1/small" && sha256sum --quiet -c "$out/small.sum"); }
fs_big_ok() { (cd "$1" && sha256sum --quiet -c "$out/big.sum"); }

# ---- SMB Direct (storage_smb.sh, tools/bench/storage.sh): ksmbd and cifs
# as scripts/build-smbdirect.sh built them, with SMB Direct.

# smbd_load MODULE...: each of ksmbd and cifs in place of the
# distribution's, after what it depends on.
smbd_load() {
	local m ko deps

	for m in "$@"; do
		ko=$KIWI_ROOT/build/smbdirect/$m.ko
		[ ! -e "/sys/module/$m" ] || rmmod "$m" || return 1
		deps=$(modinfo -F depends "$ko" | tr , ' ') &&
			modprobe -a $deps && insmod "$ko" || return 1
	done
}

smbd_unload() {
	local m

	for m in cifs ksmbd; do
		[ ! -e "/sys/module/$m" ] || rmmod "$m" || return 1
	done
}

# smbd_setup DIR PATH: a configuration in DIR for ksmbd serving PATH as
# share "kiwi" to user root (password kiwi-test), and that user.
smbd_setup() {
	cat >"$1/ksmbd.conf" <<-EOF &&
	[global]
		netbios name = KIWI
		map to guest = never
	[kiwi]
		path = $2
		writeable = yes
		force user = root
		force group = root
	EOF
	ksmbd.adduser -a root -p kiwi-test -c "$1/ksmbd.conf" -i "$1/ksmbdpwd.db" \
		>"$1/adduser" 2>&1
}

# smbd_start DIR: ksmbd.mountd with smbd_setup's configuration in DIR.
# ksmbd listens on SMB Direct's iWARP port, 5445, when an iWARP device
# exists as it starts; make the device first.
smbd_start() {
	ksmbd.mountd -c "$1/ksmbd.conf" -u "$1/ksmbdpwd.db" >"$1/mountd" 2>&1
}

smbd_stop() {
	ksmbd.control -s >/dev/null 2>&1
	wait_for 20 eval '! pgrep -x ksmbd.mountd >/dev/null'
}

# smbd_mount ADDR MNT OPTIONS: share "kiwi" of ADDR on MNT, within 60 s.
smbd_mount() {
	timeout 60 mount -t cifs "//$1/kiwi" "$2" -o "username=root,password=kiwi-test,$3"
}

# ---- for the storage tests (storage_*.sh), which set $pat_chunks and
# $fio_mb.

# sysfs_find ATTR VALUE DIR...: the name of the first DIR whose file ATTR
# reads VALUE; returns 1 when none does.
sysfs_find() {
	local attr=$1 want=$2 d

	shift 2
	for d in "$@"; do
		[ "$(cat "$d/$attr" 2>/dev/null)" = "$want" ] &&
			{ basename "$d"; return 0; }
	done
	return 1
}

# storage_zcopy_check DEV...: with zcopy_min set (KIWI_STORAGE_PARAMS),
# one point: kernel consumers' payload went out by reference on the DEVs
# (port counter tx_zcopy_bytes), their pages or the DMA MR's; nothing
# without it.
storage_zcopy_check() {
	local d n=0
	[ "$(cat /sys/module/kiwi/parameters/zcopy_min)" != 0 ] || return 0
	for d in "$@"; do
		n=$((n + $(cat "/sys/class/infiniband/$d/ports/1/hw_counters/tx_zcopy_bytes" 2>/dev/null ||
			ip netns exec kiwiB cat "/sys/class/infiniband/$d/ports/1/hw_counters/tx_zcopy_bytes")))
	done
	check "zero copy: the ULPs' payload went out by reference ($n bytes on $*)" test "$n" -gt 0
}

# storage_fio DISK NAME ARGS...: a fio job with crc32c verification on
# DISK, after the pattern's chunks; its result lines as comments.
storage_fio() {
	local disk=$1 name=$2 rc
	shift 2
	fio --name="$name" --filename="$disk" --ioengine=libaio --direct=1 \
		--offset=$((pat_chunks * 64))k --size=${fio_mb}M \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 \
		--output="$out/$name.fio" "$@" &&
		grep -q "err= 0" "$out/$name.fio"
	rc=$?
	grep -E "^ *(write|read):" "$out/$name.fio" | sed 's/^ */# '"$name"': /'
	[ $rc -eq 0 ] || sed 's/^/# /' "$out/$name.fio" | tail -20
	return $rc
}

# storage_verified DISK BACKING WHAT: test points: $pat_chunks chunks of a
# pattern written through DISK, read back through it and straight from
# BACKING (WHAT names it), fio with crc32c (4 KiB random, 128 KiB
# sequential) after them, and the pattern still intact.
storage_verified() {
	local disk=$1 img=$2 what=$3

	check "write $pat_chunks chunks of 64 KiB with O_DIRECT through $disk" \
		blkpat write "$disk" --seed 11 --chunks "$pat_chunks" --direct
	check "read them back through $disk: every chunk intact" \
		blkpat verify "$disk" --seed 11 --chunks "$pat_chunks" --direct
	check "$what holds the same bytes" \
		blkpat verify "$img" --seed 11 --chunks "$pat_chunks" --direct
	check "fio 4 KiB random writes, QD 16, verified with crc32c" \
		storage_fio "$disk" rand4k --rw=randwrite --bs=4k --iodepth=16
	check "fio 128 KiB sequential writes, QD 4, verified with crc32c" \
		storage_fio "$disk" seq128k --rw=write --bs=128k --iodepth=4
	check "the pattern is still intact after fio" \
		blkpat verify "$disk" --seed 11 --chunks "$pat_chunks" --direct
}

# writer_start SEED PATH FIRST END: a writer of chunks FIRST .. END-1 of
# PATH, over and over (a chunk written again gets the same bytes), that
# logs each completed O_DIRECT|O_DSYNC write to $out/wSEED.log and goes on
# past failed ones, until $out/stop exists.
writer_start() {
	rm -f "$out/stop" "$out/w$1.log"
	: >"$out/w$1.log"
	wpath=$2
	while [ ! -e "$out/stop" ]; do
		blkpat write "$2" --seed "$1" --first "$3" --chunks $(($4 - $3)) \
			--direct --keep-going --log "$out/w$1.log" \
			--stop "$out/stop" || nap 0.5
	done >"$out/w$1.out" 2>&1 &
	wpid=$!
}

logged() { wc -l <"$out/w$1.log"; }

# writer_running NAME SEED PATH FIRST END: writer_start, and a point once
# the writer has logged 4 chunks.
writer_running() {
	writer_start "$2" "$3" "$4" "$5"
	check "$1: the writer runs before the fault" writer_progress "$2" 4
}

# writer_progress SEED N [SECONDS]: N more chunks than now are logged
# within SECONDS (60).
writer_progress() {
	local want=$(($(logged "$1") + $2))

	wait_for "${3:-60}" eval "[ \$(logged $1) -ge $want ]"
}

# writer_stop SEED: stop the writer and show its last words. One stuck in
# a write for a minute (a hard NFS mount that never came back) is killed;
# one that a kill does not end within 30 s wedges the run.
writer_stop() {
	touch "$out/stop"
	if ! wait_for 60 eval '! kill -0 $wpid 2>/dev/null'; then
		echo "# the writer is stuck in a write: killed"
		pkill -KILL -f "kiwi_blkpat write $wpath"
		wait_for 30 eval '! kill -0 $wpid 2>/dev/null' ||
			wedged "the stuck writer dies when killed (it has not)"
	fi
	wait "$wpid"
	tail -2 "$out/w$1.out"
}

# writer_end SEED PATH: writer_stop; the chunks it logged read back intact
# from PATH (with O_DIRECT).
writer_end() {
	writer_stop "$1"
	blkpat verify "$2" --seed "$1" --log "$out/w$1.log" --direct
}

# writer_recovered NAME SEED PATH: two points, once a fault is over: the
# writer logs 4 more chunks, and writer_end.
writer_recovered() {
	check "$1: writes go on after the fault" writer_progress "$2" 4
	check "$1: every chunk the writer saw completed reads back intact ($(logged "$2") chunks)" \
		writer_end "$2" "$3"
}

# device_fault NAME FAULT: FAULT, which takes kiwi0 away; points: it
# returns within 20 s (a netdev's removal waits until kiwi lets go of it),
# and kiwi0 is gone within 30.
device_fault() {
	local t=$SECONDS

	eval "$2"
	check "$1: '$2' returns within 20 s ($((SECONDS - t)) s)" \
		test $((SECONDS - t)) -le 20
	check "$1: kiwi0 is gone" wait_for 30 ibdev_absent kiwi0
}

# fault_healed NAME FAULT FELT HEAL: FAULT, a point once FELT is true
# (within 15 s), and 3 s later HEAL.
fault_healed() {
	eval "$2"
	check "$1: the fault is felt" wait_for 15 eval "$3"
	sleep 3
	eval "$4"
}

# storage_leftovers DEV...: what of the devices is left in use, as
# comments; true when anything is. The core's CQ pool keeps its CQs,
# unused, until the device goes: those do not count.
storage_leftovers() {
	local r dev pat=()

	for dev in "$@"; do pat+=(-e "$dev"); done
	for r in pd mr cq qp cm_id; do
		rdma resource show $r || echo "rdma resource show $r failed"
	done 2>&1 | grep -w "${pat[@]}" -e failed |
		grep -v "users 0 .*comm \[ib_core\]" | sed 's/^/# /' | grep .
}

# tap_import PREFIX FILE: the numbered TAP a kiwi_* program wrote to FILE
# as points of ours ("PREFIX: " before each description unless PREFIX is
# empty; a "Bail out!" is a failed point), its other lines as comments.
# Sets tap_plan to the program's plan; returns 1 unless that plan is there
# and every point of it was reported.
tap_import() {
	local pre=${1:+$1: } l seen=0
	local re='^(not )?ok [0-9]+ (- )?(.*)$'

	tap_plan=
	while IFS= read -r l; do
		if [[ $l =~ $re ]]; then
			seen=$((seen + 1))
			if [ -n "${BASH_REMATCH[1]}" ]; then
				not_ok "$pre${BASH_REMATCH[3]}"
			else
				ok "$pre${BASH_REMATCH[3]}"
			fi
			continue
		fi
		case $l in
		"TAP version"*) ;;
		1..*) tap_plan=${l#1..} ;;
		"Bail out!"*) not_ok "$pre$l" ;;
		"#"*) echo "$l" ;;
		*) echo "# $pre$l" ;;
		esac
	done <"$2"
	[ -n "$tap_plan" ] && [ "$tap_plan" -eq "$seen" ]
}

# tap_sub: a kiwi_* program's TAP on stdin as points of ours, unnumbered
# ("ok - ...": a pipe runs in a subshell), without its header and plan.
tap_sub() {
	sed -E 's/^((not )?ok) [0-9]+( -)?/\1 -/;/^TAP version|^1\.\./d'
}

# tap_run CMD...: CMD's TAP as points of ours (tap_sub); returns CMD's
# exit status.
tap_run() {
	"$@" | tap_sub
	return "${PIPESTATUS[0]}"
}
