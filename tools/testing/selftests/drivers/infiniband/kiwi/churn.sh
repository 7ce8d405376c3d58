#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Connection churn and teardown races (kiwi_xfer churn, churn-server,
# churn-kills), clients in kiwiA on kiwi0, servers in kiwiB on kiwi1:
#  1. cycles of connect / Send + RDMA Write + RDMA Read, checked / end
#     (the client's disconnect, the server's, or a reset, in turn) from
#     several client processes at once, IPv4 and IPv6, every object made
#     anew each cycle; every cycle must pass;
#  2. clients SIGKILLed a random moment into connecting, moving data (an
#     RDMA Read of up to 2 MiB in flight) or ending a connection, while
#     their servers are SIGKILLed from outside at random moments and a
#     bystander connection loops beside them: each killed process is gone
#     within 30 s, the bystander is never cut, no connection moves wrong
#     data, and the servers then serve new clients;
#  3. while clients keep connecting: "rdma link del" of the servers'
#     device, then of the clients', then the servers killed and their
#     namespace deleted (both ends of the veth pair, and both devices, go
#     with it): nothing hangs, and once the devices are back the servers
#     listen again and every client passes again;
#  4. a connection left half open (TCP, no MPA Request) when its
#     listener's process ends, and when the devices and the module go.
# After each phase nothing is left: no QP, CQ, MR, PD or cm_id on the kiwi
# devices (rdma resource), kiwi's connection endpoints and sockets
# (/sys/kernel/debug/kiwi/cm_endpoints, cm_sockets) back where they were,
# and no bad line in the kernel log. Then the module unloads.
#
#   KIWI_CHURN_CYCLES=1000     cycles of phase 1, over all clients
#   KIWI_CHURN_CLIENTS=4       client processes (and servers) at once
#   KIWI_CHURN_KILLS=40        clients SIGKILLed in phase 2
#   KIWI_CHURN_PHASES="1 2 3 4"  the phases to run
# On the debug kernel (kmemleak present), about ten times slower, the
# defaults are 300 cycles, 2 clients and 20 kills.
source "$(dirname "$0")/lib.sh"
tap_begin "connection churn and teardown races"

X=$KIWI_TESTDIR/kiwi_xfer
DBG=/sys/kernel/debug/kiwi
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
if [ -e /sys/kernel/debug/kmemleak ]; then
	cycles=${KIWI_CHURN_CYCLES:-300}
	nc=${KIWI_CHURN_CLIENTS:-2}
	kills=${KIWI_CHURN_KILLS:-20}
else
	cycles=${KIWI_CHURN_CYCLES:-1000}
	nc=${KIWI_CHURN_CLIENTS:-4}
	kills=${KIWI_CHURN_KILLS:-40}
fi
small=32768		# transfers of 1 B to 32 KiB (phases 1 and 3)
big=$((2 << 20))	# phase 2: up to 2 MiB, so that kills land mid-Read

# The address client and server of slot I use: IPv6 for odd slots.
addr() { if [ $(($1 % 2)) = 1 ]; then echo 2001:db8::2; else echo 192.0.2.2; fi; }

# counts: kiwi's objects, one word each: QPs, CQs, MRs, PDs and cm_ids of
# kiwi devices in "rdma resource", the module's connection endpoints and
# sockets.
counts() {
	local r n
	for r in qp cq mr pd cm_id; do
		if n=$(rdma resource show $r 2>&1); then
			n=$(grep -cE "(dev|link) kiwi[0-9]+" <<<"$n")
		else
			n=failed
		fi
		printf '%s=%s ' $r "$n"
	done
	set -- $(kiwi_cm_counts)
	echo "endpoints=$1 sockets=$2"
}

# no_leaks NAME: one point: within 30 s the counts are back at $base.
no_leaks() {
	if wait_for 30 eval '[ "$(counts)" = "$base" ]'; then
		ok "$1: nothing left: $base"
	else
		not_ok "$1: nothing left: $(counts), was $base"
		for r in qp cq mr pd cm_id; do
			rdma resource show $r | grep -E "kiwi[0-9]+"
		done | head -20 | sed 's/^/# /'
	fi
}

# log_mark NAME / log_clean NAME: one point: the kernel log since the mark
# has no bad line (oops, WARN, lockdep, KASAN, hung task, netdev refs).
log_mark() { echo "churn.sh: $1 starts" >/dev/kmsg; }
log_clean() {
	local bad
	bad=$(dmesg | sed -n "/churn.sh: $1 starts/,\$p" | grep -E -A12 "$KIWI_BAD_LOG")
	if [ -z "$bad" ]; then
		ok "$1: kernel log clean"
	else
		not_ok "$1: kernel log clean"
		head -40 <<<"$bad" | sed 's/^/# dmesg: /'
	fi
}

# any_alive PID...: one of them still runs.
any_alive() {
	local p
	for p; do kill -0 "$p" 2>/dev/null && return 0; done
	return 1
}

# gone PID: the process has exited (a zombie or nothing left of it).
gone() { [ ! -d "/proc/$1" ] || grep -qs '^State:.*Z' "/proc/$1/status"; }

# reap PID NAME: the process (signalled already) exits within 30 s; its
# exit status is then in $status. One point only when it does not.
reap() {
	if wait_for 30 gone "$1"; then
		wait "$1"
		status=$?
		return 0
	fi
	not_ok "$2 (pid $1) exits within 30 s"
	grep -E "^State|^Name" "/proc/$1/status" | sed 's/^/# /'
	sed 's/^/#   /' "/proc/$1/stack" 2>/dev/null | head -20
	status=255
	return 1
}

# kill9 PID NAME: SIGKILL it; it exits within 30 s (one point if not).
# Its status is of no interest: out of the job table, it goes unreported.
kill9() {
	kill -KILL "$1" 2>/dev/null
	disown "$1" 2>/dev/null
	wait_for 30 gone "$1" && return 0
	not_ok "$2 (pid $1) exits within 30 s of SIGKILL"
	grep -E "^State" "/proc/$1/status" | sed 's/^/# /'
	sed 's/^/#   /' "/proc/$1/stack" 2>/dev/null | head -20
	return 1
}

runs=0
# server_bg SLOT PORT SIZE COUNT: start a churn server in kiwiB; its pid
# in spid[SLOT], its output file in sout[SLOT].
server_bg() {
	runs=$((runs + 1))
	sout[$1]=$out/s$1.$runs
	ip netns exec kiwiB "$X" churn-server "$(addr "$1")" "$2" "$3" "$4" \
		>"${sout[$1]}" 2>&1 &
	spid[$1]=$!
}

# listening SLOT...: wait until these servers listen.
listening() {
	local i
	for i; do
		wait_for 30 grep -q "^# listening" "${sout[$i]}" ||
			{ echo "# server $i does not listen:"; sed 's/^/#   /' "${sout[$i]}"; }
	done
}

# server SLOT PORT SIZE COUNT: server_bg, and wait until it listens.
server() {
	server_bg "$@"
	listening "$1"
}

# servers FIRST-PORT SIZE: a looping server on each slot, from FIRST-PORT.
servers() {
	local i
	for ((i = 0; i < nc; i++)); do server_bg $i $(($1 + i)) "$2" 0; done
	listening $(seq 0 $((nc - 1)))
}

# veth_again: the veth pair kvA/kvB between kiwiA and kiwiB made again,
# as kiwi_two_hosts makes it, with kiwi0 and kiwi1 on it.
veth_again() {
	ip link add kvA netns kiwiA type veth peer name kvB netns kiwiB &&
	ip -n kiwiA addr add 192.0.2.1/24 dev kvA &&
	ip -n kiwiB addr add 192.0.2.2/24 dev kvB &&
	ip -n kiwiA addr add 2001:db8::1/64 dev kvA nodad &&
	ip -n kiwiB addr add 2001:db8::2/64 dev kvB nodad &&
	ip -n kiwiA link set kvA up &&
	ip -n kiwiB link set kvB up &&
	ip netns exec kiwiA rdma link add kiwi0 type kiwi netdev kvA &&
	ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvB
}

# stamp WHAT: a comment with the time since the phase began.
stamp() { echo "# +$((SECONDS - pt0)) s: $*"; }

# client SLOT PORT SIZE COUNT: start a churn client in kiwiA; its pid in
# cpid[SLOT], its output file in cout[SLOT].
client() {
	runs=$((runs + 1))
	cout[$1]=$out/c$1.$runs
	ip netns exec kiwiA "$X" churn "$(addr "$1")" \
		"$2" "$3" "$4" >"${cout[$1]}" 2>&1 &
	cpid[$1]=$!
}

# whole WHO FILE STATUS: a program's report (FILE) and exit STATUS: its
# points become ours ("WHO: ..."), and one more says it exited 0 with its
# whole report, so that one that died before its plan, or crashed before
# printing anything, fails the test rather than leaving a comment.
whole() {
	local all=1
	tap_import "$1" "$2" || all=0
	check "$1: exits 0 with its whole report (exit $3)" test "$all" = 1 -a "$3" = 0
}

# stop WHO SLOT PID FILE: SIGTERM a looping client or server, which then
# reports to FILE; whole's points for it.
stop() {
	local pid=$3 file=$4
	kill -TERM "$pid" 2>/dev/null
	reap "$pid" "$1${2:+ $2}" || return 1
	whole "$1${2:+ $2}" "$file" "$status"
}

# ---- 1. churn: every cycle must pass
phase_churn() {
	log_mark "churn"
	t0=$SECONDS
	for ((i = 0; i < nc; i++)); do
		server_bg $i $((7700 + i)) $small $((cycles / nc + (i < cycles % nc)))
	done
	listening $(seq 0 $((nc - 1)))
	for ((i = 0; i < nc; i++)); do
		n=$((cycles / nc + (i < cycles % nc)))
		ip netns exec kiwiA timeout 300 "$X" churn "$(addr $i)" $((7700 + i)) \
			$small $n >"$out/c$i" 2>&1 &
		cpid[$i]=$!
	done
	for ((i = 0; i < nc; i++)); do
		wait "${cpid[$i]}"
		whole "client $i" "$out/c$i" $?
		reap "${spid[$i]}" "server $i" && whole "server $i" "${sout[$i]}" "$status"
	done
	passed=$(cat "$out"/c[0-9] | grep -c "^ok .*each passed")
	check "churn: $cycles cycles over $nc clients in $((SECONDS - t0)) s, all $nc clients passed" \
		test "$passed" = "$nc"
	no_leaks "churn"
	log_clean "churn"
}

# ---- 2. SIGKILL at random moments
# On each slot a "kiwi_xfer churn-kills" runs its share of $kills clients
# in turn, each SIGKILLed a random moment into a step of one of its first
# cycles: connect, data (with an RDMA Read of up to $big bytes in
# flight), end, in turn; each must be gone within 30 s of its kill.
# Meanwhile a bystander client on its own server loops through it all,
# and the servers of the killed clients are SIGKILLed now and then, from
# outside, at random moments, and started again.
phase_kills() {
	local i pids=() sk=0 bpid
	log_mark "kills"
	servers 7710 $big
	server $nc $((7710 + nc)) $small 0
	ip netns exec kiwiA "$X" churn "$(addr $nc)" $((7710 + nc)) $small 0 \
		>"$out/bystander" 2>&1 &
	bpid=$!
	for ((i = 0; i < nc; i++)); do
		ip netns exec kiwiA "$X" churn-kills "$(addr $i)" $((7710 + i)) $big \
			$((kills * (i + 1) / nc - kills * i / nc)) >"$out/kills$i" 2>&1 &
		pids+=($!)
	done
	while any_alive "${pids[@]}"; do
		sleep "$((2 + RANDOM % 3)).$((RANDOM % 10))"
		any_alive "${pids[@]}" || break
		i=$((RANDOM % nc))
		kill9 "${spid[$i]}" "SIGKILLed server $i"
		server $i $((7710 + i)) $big 0
		sk=$((sk + 1))
	done
	stamp "kill rounds done"
	for ((i = 0; i < nc; i++)); do
		wait "${pids[$i]}"
		whole "kills: slot $i" "$out/kills$i" $?
	done
	echo "# $sk servers SIGKILLed meanwhile, at random moments"
	stop bystander "" "$bpid" "$out/bystander"
	stamp "bystander stopped"
	check "kills: the bystander's connections were never cut" \
		grep -q " 0 cut short, 0 with wrong data" "$out/bystander"
	# The servers, killed or not, serve new clients.
	for ((i = 0; i < nc; i++)); do
		ip netns exec kiwiA timeout 120 "$X" churn "$(addr $i)" $((7710 + i)) \
			$big 3 >"$out/new$i" 2>&1 &
		cpid[$i]=$!
	done
	for ((i = 0; i < nc; i++)); do
		wait "${cpid[$i]}"
		whole "kills: new client $i" "$out/new$i" $?
	done
	stamp "new clients done"
	kill -TERM "${spid[@]}"
	for ((i = 0; i <= nc; i++)); do
		stop server $i "${spid[$i]}" "${sout[$i]}"
	done
	no_leaks "kills"
	log_clean "kills"
}

# ---- 3. devices removed while clients connect
phase_removal() {
	# passes SLOT: how often client SLOT passed again after cycles cut short.
	passes() { grep -c "passed again" "${cout[$1]}"; }
	# all_pass_again: each client passes again after what happened since
	# the counts in $before.
	all_pass_again() {
		local i
		for ((i = 0; i < nc; i++)); do
			[ "$(passes $i)" -gt "${before[$i]}" ] || return 1
		done
	}
	mark_passes() { for ((i = 0; i < nc; i++)); do before[$i]=$(passes $i); done; }
	# servers_say TEXT: each server has printed TEXT (within 30 s).
	servers_say() {
		local i
		for ((i = 0; i < nc; i++)); do
			wait_for 30 grep -q "$1" "${sout[$i]}" || return 1
		done
	}

	log_mark "removal"
	servers 7720 $small
	for ((i = 0; i < nc; i++)); do client $i $((7720 + i)) $small 0; done
	sleep 1

	mark_passes
	sleep "0.$((RANDOM % 10))"
	stamp "rdma link del kiwi1"
	check "rdma link del kiwi1 (the servers') returns within 60 s while clients connect" \
		timeout 60 ip netns exec kiwiB rdma link del kiwi1
	stamp "kiwi1 deleted"
	check "kiwi1 deleted: each server hears its device went away" \
		servers_say "the device went away"
	check "kiwi1 deleted: added again" ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvB
	check "kiwi1 deleted: each server listens again" servers_say "again"
	stamp "servers listen again"
	check "kiwi1 deleted: every client passes again" wait_for 60 all_pass_again
	stamp "clients pass again"

	mark_passes
	sleep "0.$((RANDOM % 10))"
	check "rdma link del kiwi0 (the clients') returns within 60 s while they connect" \
		timeout 60 ip netns exec kiwiA rdma link del kiwi0
	sleep 1
	check "kiwi0 deleted: added again" ip netns exec kiwiA rdma link add kiwi0 type kiwi netdev kvA
	check "kiwi0 deleted: every client passes again" wait_for 60 all_pass_again
	stamp "clients pass again"

	# The servers' namespace deleted as its processes are killed: the veth
	# pair, and with it both devices, go once the last socket there closes.
	mark_passes
	sleep "0.$((RANDOM % 10))"
	for ((i = 0; i < nc; i++)); do kill -KILL "${spid[$i]}"; disown "${spid[$i]}"; done
	ip netns del kiwiB
	for ((i = 0; i < nc; i++)); do kill9 "${spid[$i]}" "netns deleted: server $i"; done
	stamp "servers killed, netns deleted"
	check "netns deleted: kiwi0 and kiwi1 go within 30 s" \
		wait_for 30 eval 'ibdev_absent kiwi0 && ibdev_absent kiwi1'
	stamp "devices gone"
	check "netns deleted: made again, with both devices" \
		eval 'ip netns add kiwiB && veth_again'
	servers 7720 $small
	check "netns deleted: every client passes again" wait_for 60 all_pass_again
	stamp "clients pass again"
	kill -TERM "${cpid[@]}" "${spid[@]}"
	for ((i = 0; i < nc; i++)); do
		stop client $i "${cpid[$i]}" "${cout[$i]}"
		stop server $i "${spid[$i]}" "${sout[$i]}"
	done
	stamp "clients and servers stopped"
	no_leaks "removal"
	log_clean "removal"
}

# ---- 4. connections half open when things go
# First a connect whose peer, a plain TCP server, never answers its MPA
# Request: when its netdev goes, the connect fails at once, not at the
# MPA timeout (10 s): until it fails the device cannot go, and its netdev
# is held ("unregister_netdevice: waiting for kvA to become free").
# Then a connection that has not sent its MPA Request (TCP only): its
# endpoint must go when its listener goes (the consumer's process ends),
# and when the device goes: nothing can accept it any more, and its MPA
# timer must not outlive the device or the module: a timer or socket
# callback left behind would run into the unloaded module (a crash). So
# the module is unloaded only once nothing of kiwi's is left.
phase_half_open() {
	# half_open: a TCP connection to server 0 (port 7740) that sends
	# nothing; its pid in $hpid once the listener has a child.
	half_open() {
		ip netns exec kiwiA bash -c 'exec 3<>/dev/tcp/192.0.2.2/7740 && exec sleep 60' \
			>/dev/null 2>&1 &
		hpid=$!
		wait_for 10 eval '[ "$(cat $DBG/cm_endpoints)" -ge 2 ]'
	}
	nothing_left() { [ "$(kiwi_cm_counts)" = "0 0" ]; }
	log_mark "half-open"
	local mpid apid t
	ip netns exec kiwiB python3 -c 'if True:
		import socket, time
		s = socket.socket()
		s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
		s.bind(("192.0.2.2", 7750))
		s.listen()
		c = s.accept()
		time.sleep(60)' &
	mpid=$!
	wait_for 20 srv_listens kiwiB 7750
	ip netns exec kiwiA "$X" churn 192.0.2.2 7750 $small 1 >"$out/mute" 2>&1 &
	apid=$!
	check "half-open: a connect to a TCP server that never sends its MPA Reply" \
		wait_for 20 eval "ip netns exec kiwiA ss -Htn state established | grep -q ':7750'"
	# "ip link del" returns once the netdev is free: kiwi0 gone.
	t=$SECONDS
	ip -n kiwiA link del kvA
	t=$((SECONDS - t))
	check "half-open: its netdev deleted within 5 s ($t s), not at the MPA timeout" \
		eval "[ $t -le 5 ] && ibdev_absent kiwi0"
	reap "$apid" "half-open: the connecting client"
	sed 's/^/# client: /' "$out/mute"
	kill9 "$mpid" "half-open: the mute TCP server"
	check "half-open: both devices made again" \
		eval 'wait_for 10 ibdev_absent kiwi1 && veth_again'
	server 0 7740 $small 0
	check "half-open: a TCP connection to a listener that sends no MPA Request" half_open
	stop server 0 "${spid[0]}" "${sout[0]}"
	check "half-open: its endpoint goes with the listener's process" \
		wait_for 3 nothing_left
	kill9 "$hpid" "half-open: the TCP peer"
	server 0 7740 $small 0
	check "half-open: another one" half_open
	check "half-open: both devices deleted" eval \
		'ip netns exec kiwiB rdma link del kiwi1 && ip netns exec kiwiA rdma link del kiwi0'
	stop server 0 "${spid[0]}" "${sout[0]}"
	check "half-open: no endpoint or socket left once the devices are gone" \
		wait_for 3 nothing_left
	wait_for 15 nothing_left
	check "the module unloads" modprobe -r kiwi
	kill9 "$hpid" "half-open: the TCP peer"
	kiwi_two_hosts_del
	log_clean "half-open"
}

check "two hosts with a kiwi device each" kiwi_two_devs
base=$(counts)
echo "# at the start: $base"

phases=${KIWI_CHURN_PHASES:-1 2 3 4}
for p in $phases; do
	pt0=$SECONDS
	case $p in
	1) phase_churn ;;
	2) phase_kills ;;
	3) phase_removal ;;
	4) phase_half_open ;;
	esac
	echo "# phase $p took $((SECONDS - pt0)) s"
done
if [[ " $phases " != *" 4 "* ]]; then
	kiwi_two_devs_del
	check "the module unloads" modprobe -r kiwi
fi
tap_end
