#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# lib.sh's part for programs in pairs: a server in one namespace and its
# client in the other (rping, perftest, ucmatose, the kiwi_* programs), and
# packet captures of what they send.

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

# pair_once_more RACE WHY NAME PORT SERVER-NS SERVER-CMD... -- CLIENT-NS
# CLIENT-CMD...: pair, once more when the client failed with a line
# matching RACE, a program's own race that WHY names.
pair_once_more() {
	local race=$1 why=$2
	shift 2
	pair "$@" && return 0
	grep -q "$race" "$out/$1.cli" || return 1
	echo "# $1: $why: once more"
	pair "$@"
}

# perftest_pair NAME PORT SERVER-NS SERVER-CMD... -- CLIENT-NS CLIENT-CMD...:
# pair for perftest, once more after perftest's own race. With -R its
# server takes a first connection to exchange parameters, closes its
# listener and listens again on the same port for the test's; a client
# quicker than that is refused (REJECTED, ECONNREFUSED: nothing listens),
# and perftest 4.5's client then crashes in its retry (seen on kiwi and on
# siw servers alike).
perftest_pair() {
	pair_once_more "RDMA_CM_EVENT_REJECTED; error: -111" \
		"perftest's client connected before its server listened again" "$@"
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
