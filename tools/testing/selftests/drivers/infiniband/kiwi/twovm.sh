#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kiwi across two kernels: one VM ("a") and its peer ("b"), joined by a
# QEMU network, booted by scripts/vm-pair.sh, which runs this script in
# both (scripts/test.sh does that). kiwi is loaded with llp_timeout=5.
#
#  1. kiwi <-> kiwi: kiwi_xfer (RDMA Write + Send rounds, checked by the
#     server) from a to b, and a checked stream of Sends from b to a.
#     Then Open MPI across the two (mpi.sh's kiwi_mpi, two ranks, one a
#     VM, on the OFI MTL over verbs;ofi_rxm): mpirun on a starts b's
#     rank through pair_rsh.sh, which b serves (pair_rsh_serve).
#  2. kiwi <-> siw: b swaps kiwi for the upstream siw; kiwi_xfer from a
#     to b and from b to a.
#  3. The peer killed: a streams Sends to b and b streams to a (256 WRs
#     of 64 KiB deep, kiwi_xfer -S -l), and a has vm-pair.sh SIGKILL b's
#     QEMU. On a, both QPs must fail within the LLP timeout (plus the
#     keepalive probe interval, a third of it, and slack for emulation),
#     every posted WR complete (flushed once the QP failed; the sender's
#     send queue must hold some), IBV_EVENT_QP_FATAL come, and rdma_cm
#     report DISCONNECTED. b boots again and a's same device connects to
#     it with checked data. Then a's device is deleted and kiwi unloaded,
#     each within a bounded time, and a's kernel log must be clean.
#  4. The peer frozen: the same streams, and b's QEMU gets SIGSTOP, for
#     longer than the LLP timeout, then SIGCONT. a checks as in 3; b,
#     thawed, must see its own QPs fail the same way (its kernel learns
#     the connections are gone), and a fresh connection between the two
#     then works. Both delete their device and unload kiwi in bounded
#     time, with clean kernel logs.
#
# The programs' outputs, and each boot's log, stay in build/pair.
source "$(dirname "$0")/lib.sh"
source "$KIWI_TESTDIR/lib_pair.sh"
source "$KIWI_TESTDIR/lib_programs.sh"
root=$(cd "$KIWI_TESTDIR/../../../../../.." && pwd)
SIW=$root/build/siw/siw.ko
X=$KIWI_TESTDIR/kiwi_xfer
LLP=5
# How late past the LLP timeout a failure may be seen: the keepalive probe
# interval (a third of the timeout) and slack for the emulated VM.
LATE=$((LLP / 3 + 3))
DEPTH=256
R=$PAIR_ROLE
tap_begin "kiwi across two VMs: $R, boot $PAIR_BOOT"
dmesg -C

out() { echo "$PAIR_DIR/${2:-$R}.$1.out"; }

# bg NAME CMD...: CMD in the background, output to $(out NAME); its PID
# in $bgpid.
bg() {
	local name=$1
	shift
	timeout -s KILL 300 "$@" >"$(out "$name")" 2>&1 &
	bgpid=$!
}

# collect NAME PID SECONDS WHAT: PID (NAME's program) exits within
# SECONDS, successfully; its TAP becomes ours.
collect() {
	local name=$1 pid=$2 t=$3 what=$4 rc

	if ! pair_wait "$t" pair_gone "$pid"; then
		not_ok "$R: $what: ends within $t s"
		kill -KILL "$pid"
	fi
	wait "$pid"
	rc=$?
	tap_import "$R: $what" "$(out "$name")"
	check "$R: $what: exit status 0 (got $rc)" test "$rc" -eq 0
}

# client NAME PEER WHAT CMD...: once the server of NAME on PEER listens,
# CMD, collected as above.
client() {
	local name=$1 peer=$2 what=$3
	shift 3
	if ! pair_said "$(out "$name" "$peer")" listening 90; then
		not_ok "$R: $what: the server on $peer listens"
		return 1
	fi
	bg "$name" "$@"
	collect "$name" "$bgpid" 240 "$what"
}

# server NAME WHAT CMD...: CMD in the background, collected as above.
server() {
	local name=$1 what=$2
	shift 2
	bg "$name" "$@"
	collect "$name" "$bgpid" 240 "$what"
}

up() {
	"$root/scripts/vm-install.sh" >/dev/null &&
		modprobe kiwi llp_timeout=$LLP && pair_net &&
		rdma link add kiwi0 type kiwi netdev "$PAIR_DEV"
}

# mpi_across: Open MPI's two ranks, one in each VM, over kiwi; kiwi_mpi
# checks every byte and ends with "end 0".
mpi_across() {
	local log
	log=$(out mpi)
	kiwi_mpi_args "$KIWI_TESTDIR/pair_rsh.sh"
	timeout 300 mpirun --np 2 --host $PAIR_A:1,$PAIR_B:1 "${KIWI_MPI_COMMON[@]}" \
		"${KIWI_MPI_OFI[@]}" "$KIWI_TESTDIR/kiwi_mpi" </dev/null >"$log" 2>&1
	local rc=$?
	sed -n 's/^\(pingpong\|bandwidth\|allreduce\)/# a: MPI: &/p' "$log"
	[ $rc = 0 ] && grep -qx "end 0" "$log" && return 0
	echo "# a: mpirun exit $rc"
	tail -n 15 "$log" | sed 's/^/# a: mpirun: /'
	return 1
}

kiwi_again() {
	modprobe kiwi llp_timeout=$LLP &&
		rdma link add kiwi0 type kiwi netdev "$PAIR_DEV"
}

# teardown WHEN: the device deleted and kiwi unloaded, each in bounded
# time, and the kernel log clean.
teardown() {
	pair_bounded 30 "rdma link del kiwi0 $1" rdma link del kiwi0
	pair_bounded 60 "rmmod kiwi $1" modprobe -r kiwi
	pair_log_clean "$1"
}

# lost_field FILE KEY: a value from the "# lost:" line of kiwi_xfer -l.
lost_field() {
	sed -n "s/^# lost: .*\b$2=\([^ ]*\).*/\1/p" "$1"
}

# peer_lost ACTION TAG PORT: a streams to b and b to a, then ACTION (kill,
# stop) b; a's checks. b serves on PORT and PORT + 1.
peer_lost() {
	local act=$1 tag=$2 port=$3 t0 f p1 p2 dt gone fail
	local s1 s2 c1 c2

	s1=$(out "${tag}1" b)
	s2=$(out "${tag}2" b)
	if ! pair_said "$s1" listening 90 || ! pair_said "$s2" listening 90; then
		not_ok "$R: $act: b's stream servers listen"
		return 1
	fi
	bg "${tag}1" "$X" -S send -l -t 120 -d $DEPTH client $PAIR_B "$port" 65536 0
	p1=$bgpid
	bg "${tag}2" "$X" -S recv -l -t 120 -d $DEPTH client $PAIR_B $((port + 1)) 65536 0
	p2=$bgpid
	c1=$(out "${tag}1")
	c2=$(out "${tag}2")
	check "$R: $act: both streams run" \
		eval 'pair_said "$c1" streaming 60 && pair_said "$c2" streaming 60'
	# Let the sender's queue fill up behind a full TCP send buffer.
	sleep 2
	t0=$(date +%s.%N)
	check "$R: vm-pair.sh: $act b" pair_req "$act" b
	echo "# $R: $act b at $t0"
	# b's next boot takes a minute; its NIC comes up long after this.
	[ "$act" = kill ] && check "a: vm-pair.sh: boot b again" pair_req boot b
	check "$R: $act: both stream programs end within $((3 * LLP + 30)) s" \
		pair_wait $((3 * LLP + 30)) eval 'pair_gone $p1 && pair_gone $p2'
	wait "$p1"
	wait "$p2"
	tap_import "$R: $act: sending" "$c1"
	tap_import "$R: $act: receiving" "$c2"
	# b streamed to the end: its last message here is when it went away
	# (the host's kill or stop comes a moment after the request).
	gone=$(lost_field "$c2" heard_at)
	for f in "$c1" "$c2"; do
		fail=$(lost_field "$f" fail_at)
		dt=$(awk -v a="$fail" -v b="$gone" \
			'BEGIN { if (a > 0 && b > 0) printf "%.1f", a - b; else print "never" }')
		echo "# $R: $act: $(basename "$f"): QP failed $dt s after b was last heard from ($(awk -v a="$fail" -v b="$t0" 'BEGIN { printf "%.1f", a - b }') s after the request): $(grep '^# lost:' "$f" | cut -c9-)"
		check "$R: $act: $(basename "$f" .out): the QP failed after the request, within $LLP + $LATE s of b's last message ($dt s)" \
			awk -v d="$dt" -v m=$((LLP + LATE)) -v f="$fail" -v t="$t0" \
			'BEGIN { exit !(d != "never" && d > 0 && d <= m && f > t) }'
	done
	check "$R: $act: WRs of the sender's send queue were outstanding, and flushed ($(lost_field "$c1" sq_flushed))" \
		test "$(lost_field "$c1" sq_flushed)" -gt 0
}

a_main() {
	check "a: kiwi0 on the pair's NIC, llp_timeout=$LLP" up ||
		pair_abort "setup failed"
	pair_flag up.a
	pair_await up.b.1 600 || pair_abort "b did not come up"
	check "a: b answers ping" wait_for 30 ping -c 1 -W 1 $PAIR_B
	pair_log_clean "after setup"

	client xfer1 b "kiwi -> kiwi: Write + Send rounds, client" \
		"$X" client $PAIR_B 7101 65536 32
	client stream1 b "kiwi <- kiwi: stream of Sends, receiving" \
		"$X" -S recv client $PAIR_B 7102 65536 200
	pair_log_clean "after kiwi <-> kiwi"
	# A rank reaches its daemon at its VM's own address, through lo.
	ip link set lo up
	check "a: Open MPI across the VMs over kiwi (OFI MTL, verbs;ofi_rxm): ping-pong 8 B to 1 MiB, stream, allreduce, every byte checked" \
		mpi_across
	pair_flag mpi.done
	pair_log_clean "after Open MPI"

	client xfer2 b "kiwi -> siw: Write + Send rounds, client on kiwi" \
		"$X" client $PAIR_B 7103 65536 32
	server xfer3 "siw -> kiwi: Write + Send rounds, server on kiwi" \
		"$X" server $PAIR_A 7104 65536 32
	pair_log_clean "after the siw interop"

	pair_await kiwi.b.1 120 || pair_abort "b did not load kiwi again"
	peer_lost kill kill 7201
	pair_await up.b.2 600 || pair_abort "b did not come up again"
	client xfer4 b "after the kill: the same device connects to b's next boot" \
		"$X" client $PAIR_B 7301 65536 32
	teardown "after the kill"
	check "a: kiwi0 again" kiwi_again

	peer_lost stop stop 7211
	sleep 2
	check "a: vm-pair.sh: cont b (frozen for longer than llp_timeout)" \
		pair_req cont b
	pair_await thawed.b 120 || pair_abort "b did not recover from the freeze"
	client xfer5 b "after the thaw: a fresh connection" \
		"$X" client $PAIR_B 7401 65536 32
	teardown "at the end"
	pair_await done.b 120
}

b_first() {
	check "b: kiwi0 on the pair's NIC, llp_timeout=$LLP" up ||
		pair_abort "setup failed"
	pair_flag up.b.1
	pair_await up.a 600 || pair_abort "a did not come up"
	pair_log_clean "after setup"

	server xfer1 "kiwi -> kiwi: Write + Send rounds, server" \
		"$X" server $PAIR_B 7101 65536 32
	server stream1 "kiwi <- kiwi: stream of Sends, sending" \
		"$X" -S send server $PAIR_B 7102 65536 200
	pair_log_clean "after kiwi <-> kiwi"
	ip link set lo up
	# a's mpirun starts this VM's rank through pair_rsh.sh.
	pair_rsh_serve mpi.done
	pair_log_clean "after Open MPI"

	pair_bounded 30 "rdma link del kiwi0" rdma link del kiwi0
	pair_bounded 60 "rmmod kiwi" modprobe -r kiwi
	check "b: siw0 on the pair's NIC (upstream siw)" \
		eval 'modprobe -a ib_core ib_uverbs iw_cm rdma_ucm libcrc32c crc32c_generic && insmod "$SIW" &&
		      rdma link add siw0 type siw netdev "$PAIR_DEV"'
	server xfer2 "kiwi -> siw: Write + Send rounds, server on siw" \
		"$X" server $PAIR_B 7103 65536 32
	client xfer3 a "siw -> kiwi: Write + Send rounds, client on siw" \
		"$X" client $PAIR_A 7104 65536 32
	pair_bounded 30 "rdma link del siw0" rdma link del siw0
	pair_bounded 60 "rmmod siw" rmmod siw
	check "b: kiwi0 again" kiwi_again
	pair_log_clean "after the siw interop"
	pair_flag kiwi.b.1

	bg kill1 "$X" -S recv -l -t 300 -d $DEPTH server $PAIR_B 7201 65536 0
	bg kill2 "$X" -S send -l -t 300 -d $DEPTH server $PAIR_B 7202 65536 0
	# a has this VM killed now.
	pair_await never 600
	not_ok "b: killed by vm-pair.sh during the streams"
}

b_again() {
	check "b: kiwi0 on the pair's NIC, boot $PAIR_BOOT" up ||
		pair_abort "setup failed"
	pair_flag up.b.$PAIR_BOOT
	server xfer4 "after the kill: a new connection from a's same device" \
		"$X" server $PAIR_B 7301 65536 32
	pair_log_clean "before the freeze"

	# a freezes this VM under the streams, then thaws it; the QPs here
	# must fail too, their kernel knowing the connections are gone.
	bg stop1 "$X" -S recv -l -t 300 -d $DEPTH server $PAIR_B 7211 65536 0
	local p1=$bgpid
	bg stop2 "$X" -S send -l -t 300 -d $DEPTH server $PAIR_B 7212 65536 0
	local p2=$bgpid
	collect stop1 "$p1" 300 "frozen and thawed: receiving"
	collect stop2 "$p2" 60 "frozen and thawed: sending"
	local f
	for f in stop1 stop2; do
		echo "# b: $f: $(grep '^# lost:' "$(out $f)" | cut -c9-)"
	done
	pair_log_clean "after the freeze"
	pair_flag thawed.b
	server xfer5 "after the thaw: a fresh connection" \
		"$X" server $PAIR_B 7401 65536 32
	teardown "at the end"
	pair_flag done.b
}

case "$R.$PAIR_BOOT" in
a.1) a_main ;;
b.1) b_first ;;
b.*) b_again ;;
*) not_ok "no part for $R.$PAIR_BOOT" ;;
esac
echo "# $R.$PAIR_BOOT: ${SECONDS} s"
tap_end
