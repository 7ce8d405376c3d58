#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers for a test that runs in two VMs at once (scripts/vm-pair.sh boots
# them; see there for the environment). Sourced after lib.sh.
#
# Rendezvous: flags are files in $KIWI_PAIR_DIR, which both guests see.
# A guest that cannot go on raises the flag "abort", which ends every
# wait of the other one at once.

PAIR_DIR=${KIWI_PAIR_DIR:?run under scripts/vm-pair.sh}
PAIR_ROLE=${KIWI_PAIR_ROLE:?}
PAIR_BOOT=${KIWI_PAIR_BOOT:-1}
PAIR_A=192.0.2.1
PAIR_B=192.0.2.2
if [ "$PAIR_ROLE" = a ]; then
	PAIR_ME=$PAIR_A
else
	PAIR_ME=$PAIR_B
fi
_pair_req=0

# pair_net: the NIC vm-pair.sh gave this VM (by its MAC) in $PAIR_DEV, up,
# with $PAIR_ME/24.
pair_net() {
	PAIR_DEV=$(ip -o link | awk -F': ' -v mac="$KIWI_PAIR_MAC" \
		'index($0, "link/ether " mac) { print $2; exit }')
	[ -n "$PAIR_DEV" ] || { echo "# no NIC with MAC $KIWI_PAIR_MAC"; return 1; }
	ip addr add "$PAIR_ME/24" dev "$PAIR_DEV" &&
		ip link set "$PAIR_DEV" up
}

# pair_flag NAME: raise flag NAME for the other guest.
pair_flag() {
	: >"$PAIR_DIR/$1"
}

pair_aborted() {
	[ -e "$PAIR_DIR/abort" ]
}

# pair_abort WHY: tell the other guest to give up, and give up.
pair_abort() {
	echo "# giving up: $*"
	pair_flag abort
	not_ok "$PAIR_ROLE: $*"
	tap_end
}

# pair_wait SECONDS CMD...: wait_for, ended early by an abort.
pair_wait() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] && ! pair_aborted || return 1
		nap 0.2
	done
}

# pair_await NAME SECONDS: wait for flag NAME.
pair_await() {
	pair_wait "$2" test -e "$PAIR_DIR/$1"
}

# pair_said FILE TEXT SECONDS: wait until FILE has a line TEXT.
pair_said() {
	pair_wait "$3" grep -qx "$2" "$1"
}

# pair_req ACTION VM: ask vm-pair.sh to kill, stop, cont or boot VM, and
# wait until it did (up to a minute).
pair_req() {
	local f=$PAIR_DIR/req/$PAIR_ROLE.$PAIR_BOOT.$((++_pair_req))

	echo "$1 $2" >"$f.tmp" && mv "$f.tmp" "$f.req" &&
		wait_for 60 test -e "$f.done" &&
		[ "$(cat "$f.done")" = ok ] ||
		{ echo "# vm-pair: $1 $2: $(cat "$f.done" 2>/dev/null || echo no answer)"; return 1; }
}

# pair_log_clean WHAT: a point: the kernel log gained no line of
# $KIWI_BAD_LOG since the last call (which cleared it).
pair_log_clean() {
	local log

	log=$(dmesg -c)
	if grep -qE "$KIWI_BAD_LOG" <<<"$log"; then
		not_ok "$PAIR_ROLE: kernel log clean $1"
		grep -E -A20 "$KIWI_BAD_LOG" <<<"$log" | head -40 | sed 's/^/# dmesg: /'
	else
		ok "$PAIR_ROLE: kernel log clean $1"
	fi
	grep -E "kiwi[0-9]*: |infiniband kiwi" <<<"$log" |
		grep -vE "created on|loaded|unloaded|taints|verification" |
		head -10 | sed 's/^/# dmesg: /'
}

# pair_gone PID: process PID (a child) has exited, or is a zombie.
pair_gone() {
	local st

	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -z "$st" ] || [ "$st" = Z ]
}

# pair_bounded SECONDS WHAT CMD...: a point: CMD succeeds within SECONDS.
# One that hangs (in the kernel, where no signal reaches it) is left
# behind, its kernel stack shown.
pair_bounded() {
	local t=$1 what=$2 start=$SECONDS pid rc
	shift 2
	"$@" &
	pid=$!
	if ! wait_for "$t" pair_gone "$pid"; then
		not_ok "$PAIR_ROLE: $what (hung: still running after $t s)"
		sed 's/^/# stack: /' "/proc/$pid/stack" 2>/dev/null
		return 1
	fi
	wait "$pid"
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "$PAIR_ROLE: $what ($((SECONDS - start)) s)"
	else
		not_ok "$PAIR_ROLE: $what (exit $rc)"
	fi
}

# pair_rsh_serve FLAG: run the commands pair_rsh.sh hands over from the
# other VM, each in the background (its output and then its status into
# files beside it), until flag FLAG is raised or the pair is aborted.
pair_rsh_serve() {
	local req id

	mkdir -p "$PAIR_DIR/rsh"
	until [ -e "$PAIR_DIR/$1" ] || pair_aborted; do
		for req in "$PAIR_DIR"/rsh/*.cmd; do
			[ -e "$req" ] || continue
			id=${req%.cmd}
			mv "$req" "$id.run" || continue
			(sh -c "$(cat "$id.run")" >"$id.out" 2>&1 </dev/null
			 echo $? >"$id.rc.tmp" && mv "$id.rc.tmp" "$id.rc") &
		done
		nap 0.2
	done
}
