# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034 # sets what lib-bench.sh's callers use
#
# make bench's two-host path: the same cells between two VMs that
# scripts/vm-pair.sh boots (one vCPU each) and joins with a QEMU network,
# instead of two namespaces of one VM. tools/bench/pair.sh runs in both:
# VM b runs tools/bench/run.sh and storage.sh as on one host (the clients,
# the initiators, the records); VM a runs bp_agent, which carries out
# what b asks of it: its half of each transport's set-up and tear-down,
# each run's server, the storage target.
#
# Sourced by lib-bench.sh when BENCH_PAIR is set, after its own
# definitions, some of which it replaces (setup, teardown, pair_run,
# bench_vm_prep, busy_ticks). Needs lib_pair.sh and PAIR_DEV, the pair
# network's NIC, which pair.sh exports.

source "$KIWI_TESTDIR/lib_pair.sh"
#
# A request is a file $BP_DIR/N.cmd holding one shell command line; the
# agent runs it in its own shell (with lib.sh and lib-bench.sh), in the
# background, and writes its output to N.out, the PID of that shell to
# N.pid and, when it ends, its exit status to N.rc. N is the asking
# process's PID and its count of requests: run.sh and storage.sh both ask.

BP_DIR=$PAIR_DIR/bench
bp_seq=0

# bp_next: the name of this process's next request.
bp_next() {
	echo "$$-$((bp_seq + 1))"
}

# bp_start CMD...: have VM a start the command line CMD; its request
# name in $bp_id.
bp_start() {
	bp_id=$$-$((++bp_seq))
	printf '%s\n' "$*" >"$BP_DIR/$bp_id.tmp" &&
		mv "$BP_DIR/$bp_id.tmp" "$BP_DIR/$bp_id.cmd"
}

# bp_wait ID [SECONDS]: wait for request ID to end (default 600 s); print
# its output, return its exit status (124 when it did not end in time).
bp_wait() {
	pair_wait "${2:-600}" test -e "$BP_DIR/$1.rc" || return 124
	cat "$BP_DIR/$1.out" 2>/dev/null
	return "$(cat "$BP_DIR/$1.rc")"
}

# remote CMD...: run the command line CMD in VM a and wait for it.
remote() {
	bp_start "$@"
	bp_wait "$bp_id"
}

# bp_agent: VM a's loop, until b raises the flag bench-done (or abort).
bp_agent() {
	local f id
	mkdir -p "$BP_DIR"
	pair_flag bench-agent
	until [ -e "$PAIR_DIR/bench-done" ] || pair_aborted; do
		for f in "$BP_DIR"/*.cmd; do
			[ -e "$f" ] || continue
			id=${f%.cmd}
			mv "$f" "$id.run"
			(
				eval "$(cat "$id.run")" >"$id.out" 2>&1
				echo $? >"$id.rc.tmp"
				mv "$id.rc.tmp" "$id.rc"
			) </dev/null &
			echo $! >"$id.pid"
		done
		nap 0.05
	done
	wait
}

# bp_devs_del N: this VM's RDMA devices (kiwiN, siwN, rxeN: 0 in b, 1 in
# a) and their modules gone.
bp_devs_del() {
	local d
	for d in kiwi$1 siw$1 rxe$1; do
		ibdev_exists "$d" && rdma link del "$d"
	done
	wait_for 20 eval "ibdev_absent kiwi$1 && ibdev_absent siw$1 && ibdev_absent rxe$1"
	modprobe -r kiwi siw rdma_rxe 2>/dev/null
	return 0
}

# The transports: the client's device (cdev) here on b, the server's
# (sdev) on a, both on the pair network; servers listen on a's address.
setup() {
	local params=${BENCH_KIWI_PARAMS:-}
	cns='' sns='' saddr=$PAIR_A
	case $1 in
	kiwi | kiwi_crc | kiwi_mss)
		cdev=kiwi0 sdev=kiwi1
		[ "$1" = kiwi_crc ] && params+=" crc_required=1"
		[ "$1" = kiwi_mss ] && params+=" fpdu_segs=1"
		# shellcheck disable=SC2086 # a list of parameters
		remote "modprobe kiwi $params && rdma link add kiwi1 type kiwi netdev $BP_ADEV" &&
		modprobe kiwi $params &&
		rdma link add kiwi0 type kiwi netdev "$PAIR_DEV" ;;
	siw)
		cdev=siw0 sdev=siw1
		remote "modprobe -a ib_core iw_cm rdma_cm libcrc32c crc32c_generic &&
			insmod $SIW && rdma link add siw1 type siw netdev $BP_ADEV" &&
		modprobe -a ib_core iw_cm rdma_cm libcrc32c crc32c_generic &&
		insmod "$SIW" && rdma link add siw0 type siw netdev "$PAIR_DEV" ;;
	rxe)
		cdev=rxe0 sdev=rxe1
		remote "modprobe rdma_rxe && rdma link add rxe1 type rxe netdev $BP_ADEV" &&
		modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "$PAIR_DEV" ;;
	tcp) ;;
	esac
}

teardown() {
	bp_devs_del 0
	remote bp_devs_del 1
} >/dev/null 2>&1

# pair_run: the server (array srv) in VM a, then, once it listens on $port,
# the client (array cli) here, each under "timeout $limit" and the client
# after the prefix wrap; their output goes to $log.srv and $log.cli. crc
# is the client's exit status; returns the server's.
pair_run() {
	local id
	# The server's PID in ID.spid, to stop it by.
	id=$(bp_next)
	bp_start "stdbuf -oL -eL timeout $limit ${srv[*]@Q} >${log@Q}.srv 2>&1 &
		echo \$! >$BP_DIR/$id.spid; wait \$!"
	if ! remote "wait_for 30 listening $tr $port \$\$" >/dev/null; then
		echo "bench: ${log##*/}: the server never listened" >>"$log.cli"
		crc=1
	else
		"${wrap[@]}" timeout "$limit" "${cli[@]}" >"$log.cli" 2>&1
		crc=$?
	fi
	# A server left waiting after its client failed only burns the timeout.
	[ $crc -eq 0 ] || remote "kill \$(cat $BP_DIR/$id.spid) 2>/dev/null" >/dev/null
	bp_wait "$id" $((limit + 30)) >/dev/null
}

# busy_ticks: CPU time of both VMs since boot, in clock ticks.
busy_ticks() {
	echo $(($(bp_busy_ticks) + $(remote bp_busy_ticks)))
}

bench_vm_prep() {
	"$root/scripts/vm-install.sh" || { echo "bench: cannot install kiwi in the VM" >&2; return 1; }
	bp_keep_providers
	modprobe -a ib_core iw_cm rdma_cm ib_uverbs rdma_ucm
	# What the agent told of its NIC (pair.sh).
	BP_ADEV=$(cat "$PAIR_DIR/bench-adev")
	[ -n "$BP_ADEV" ] || { echo "bench: VM a's NIC unknown" >&2; return 1; }
}
