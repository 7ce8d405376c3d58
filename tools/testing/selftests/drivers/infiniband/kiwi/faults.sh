#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Allocation failures (debug kernel only: CONFIG_FAULT_INJECTION). kiwi
# guards each of its allocations with its "fail_alloc" fault attribute
# (kiwi_fault.h); this script makes them fail:
#  - at module load, each of the two allocations module init makes;
#  - site by site: a workload runs once to learn which allocation sites it
#    calls, then once per site not failed yet with that site's first call
#    failing (fail_site). Workloads: device creation, an rping -V
#    connection with data, and programs that reach the other sites: SRQ,
#    memory windows, CQ resize, zero copy, kernel consumers (FRMR, SRQ), a
#    wildcard listen, MPA CRCs (the receive engine's hold buffer);
#  - at random (probability 5 %) over those programs together;
#  - through the kernel's failslab and fail_page_alloc, restricted with
#    task-filter to the workload's own processes once they have started
#    (kiwi, ib_core, uverbs and the socket layer fail alike).
# Every workload must end (no hang), leave nothing in `rdma resource`, and
# the devices must then still move verified data. At the end every guarded
# site in the source must have been failed at least once, and the module
# unloads; run_vm.sh checks the kernel log and kmemleak.
# KIWI_FAULT_ROUNDS (1) and KIWI_FAILSLAB_ROUNDS (3) set how many rounds the
# random and the failslab parts run.
source "$(dirname "$0")/lib.sh"
tap_begin "allocation failures"

D=/sys/kernel/debug/kiwi
FA=$D/fail_alloc
T=$KIWI_TESTDIR

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
kiwi_unload
modprobe kiwi
if [ ! -d "$FA" ]; then
	ok "allocation failures # SKIP kernel without CONFIG_FAULT_INJECTION"
	kiwi_unload
	tap_end
fi
kiwi_unload

# Module load: the first and the second allocation of init fail in turn.
for n in 1 2; do
	check "modprobe kiwi fails cleanly when allocation $n of module init fails" \
		fails_with "Cannot allocate memory" modprobe kiwi fail_alloc=$n,100,0,1
	check "  and leaves no kiwi module behind" eval '! grep -q "^kiwi " /proc/modules'
done

# fa KNOB VALUE...: set fail_alloc knobs.
fa() {
	while [ $# -gt 0 ]; do
		echo "$2" >"$FA/$1"
		shift 2
	done
}

quiet() {
	fa probability 0 times 0 space 0 interval 1 verbose 0
	echo 0 >"$D/fail_site"
}

# idle: `rdma resource show` counts no PD, CQ, QP, cm_id, MR or SRQ on
# kiwi0 or kiwi1 (one call: each costs half a second on the debug kernel).
idle() {
	local out line
	out=$(rdma resource show) || return 1
	while IFS= read -r line; do
		[[ $line =~ ^[0-9]+:\ kiwi[01]: ]] || continue
		[[ $line =~ \ (pd|cq|qp|cm_id|mr|srq)\ [1-9] ]] && return 1
	done <<<"$out"
	return 0
}

# settled: nothing of kiwi0/kiwi1 in `rdma resource`, waiting a little for
# teardown that finishes after process exit.
settled() {
	wait_for 20 idle
}

# run_pair NAME SRV... -- CLI...: the server in kiwiB, the client in kiwiA,
# each killed after 60 s; the server is stopped once the client is done.
# Returns 0 when the client did not need killing (their own exit status
# does not matter here: they are expected to fail when an allocation fails).
run_pair() {
	local name=$1 srv=() crc KIWI_TIMEOUT=60 KIWI_SIGNAL=KILL
	shift
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	srv_start "$name" 7500 kiwiB "${srv[@]}"
	cli_run "$name" kiwiA "$@"
	crc=$?
	# A server whose client failed may wait for nothing: stop it.
	if [ "$crc" = 0 ]; then
		srv_stop "$name" 10
	else
		srv_stop "$name"
	fi
	[ "$crc" != 137 ] || {
		echo "# $name: the client hung (killed after 60 s); what each end said last:"
		tail -n 8 "$out/$name.cli" | sed "s/^/# $name client: /"
		tail -n 8 "$out/$name.srv" | sed "s/^/# $name server: /"
		return 1
	}
}

rping_pair() {
	run_pair "$1" rping -s -a 192.0.2.2 -p 7500 -V -C 3 -S 2000 -- \
		rping -c -a 192.0.2.2 -p 7500 -V -C 3 -S 2000
}

# sites: "id calls failures" for every site kiwi has called so far.
sites() { awk '{ print $1, $3, $4 }' "$D/fail_sites" | sort -k1,1; }
site_name() { awk -v id="$1" '$1 == id { print $2 }' "$D/fail_sites"; }

# site_walk NAME CMD...: run CMD once with nothing failing, to learn which
# allocation sites it calls; then, for each of those not failed yet, run it
# again with that site's first call failing (fail_site, times 1). CMD must
# return 0 (it did not hang) and leave nothing behind every time.
site_walk() {
	local name=$1 id bad=0 n=0 hit=0 t0=$SECONDS t1
	shift
	sites >"$out/before"
	"$@" || { echo "# $name: the workload hung with nothing failing"; return 1; }
	settled || { echo "# $name: left resources behind with nothing failing"; return 1; }
	sites >"$out/after"
	for id in $(join -a 2 -o 0,1.2,2.2,2.3 -e 0 "$out/before" "$out/after" |
		    awk '$3 > $2 && $4 == 0 { print $1 }'); do
		echo "$id" >"$D/fail_site"
		fa probability 100 interval 1 space 0 times 1
		t1=$SECONDS
		if ! "$@"; then
			echo "# $name: failing $(site_name "$id"): the workload hung"
			bad=1
		fi
		[ "$(cat "$FA/times")" = 0 ] && hit=$((hit + 1))
		quiet
		echo "# $name: failing $(site_name "$id"): $((SECONDS - t1)) s"
		if ! settled; then
			echo "# $name: failing $(site_name "$id") left resources behind:"
			rdma resource show 2>&1 | grep -w -e kiwi0 -e kiwi1 | head -5 | sed 's/^/#   /'
			bad=1
		fi
		n=$((n + 1))
	done
	echo "# $name: $n new sites called, $hit of them failed in turn ($((SECONDS - t0)) s)"
	[ "$bad" = 0 ]
}

devs_create() {
	ip netns exec kiwiA rdma link add kiwi0 type kiwi netdev kvA 2>/dev/null
	ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvB 2>/dev/null
	ip netns exec kiwiA rdma link del kiwi0 2>/dev/null
	ip netns exec kiwiB rdma link del kiwi1 2>/dev/null
	wait_for 10 eval 'ibdev_absent kiwi0 && ibdev_absent kiwi1'
}

check "kiwi loads; two hosts" eval 'modprobe kiwi && kiwi_two_hosts'
quiet
check "each site of creating and deleting two devices, failed in turn: clean ends" \
	site_walk devices devs_create
check "the devices are created with no failure injected" eval \
	'ip netns exec kiwiA rdma link add kiwi0 type kiwi netdev kvA &&
	 ip netns exec kiwiB rdma link add kiwi1 type kiwi netdev kvB'
check "each site of an rping -V connection (MRs, Send, Read, Write), failed in turn: clean ends" \
	site_walk rping rping_pair rping

# Programs that reach the remaining sites.
zc() { echo "$1" >/sys/module/kiwi/parameters/zcopy_min; }
srq_pair() { run_pair srq "$T/kiwi_srq" server 192.0.2.2 7500 -- "$T/kiwi_srq" client 192.0.2.2 7500; }
mw_pair() { run_pair mw "$T/kiwi_mw" server 192.0.2.2 7500 -- "$T/kiwi_mw" client 192.0.2.2 7500; }
queues() {
	ip netns exec kiwiA timeout -s KILL 60 "$T/kiwi_queues" kiwi0 >"$out/queues" 2>&1
	[ $? != 137 ] || { echo "# kiwi_queues hung"; return 1; }
}
zc_pair() {
	zc 1
	run_pair zc "$T/kiwi_xfer" server 192.0.2.2 7500 65536 20 -- \
		"$T/kiwi_xfer" client 192.0.2.2 7500 65536 20
	local rc=$?
	zc 0
	return $rc
}
# The kernel consumer's cases that reach the kernel-only sites (its CQ and
# QP rings, CQ resize, fast-register MRs, the DMA MR); the others (limits,
# STag reuse, completion vectors) reach none the rest do not, and cost
# minutes on the debug kernel, once per site.
ktest() {
	insmod "$T/kiwi_ktest/kiwi_ktest.ko" dev=kiwi0 \
		skip=max_mr,max_cq_qp,alloc_mr_limits,stag_reuse,comp_vector >/dev/null 2>&1
	rmmod kiwi_ktest 2>/dev/null
	return 0
}
# A kernel consumer's SRQ (its ring is kernel memory), between the two
# namespaces.
ksrq() {
	modprobe rdma_cm
	insmod "$T/kiwi_ktest/kiwi_ktest_srq.ko" netns_a=3 netns_b=4 \
		3</run/netns/kiwiA 4</run/netns/kiwiB >/dev/null 2>&1
	rmmod kiwi_ktest_srq 2>/dev/null
	return 0
}
# ucmatose's server listens on the wildcard address (kiwi listens on each
# of the netdev's addresses).
ucma_pair() { run_pair ucma ucmatose -p 7500 -- ucmatose -s 192.0.2.2 -p 7500; }
# kiwi_evilpeer, a plain TCP peer, asks kiwi1 for MPA CRCs.
crc_pair() {
	run_pair crc "$T/kiwi_terminate" 192.0.2.2 7500 1 -- \
		"$T/kiwi_evilpeer" -c 192.0.2.2 7500 crc-split
}
for w in srq_pair mw_pair queues zc_pair ktest ksrq ucma_pair crc_pair; do
	check "each new site of $w, failed in turn: clean ends" site_walk "$w" "$w"
done
mix() { srq_pair && mw_pair && queues && zc_pair && ktest; }
random_rounds() {
	local r bad=0
	for r in $(seq 1 "$1"); do
		fa probability "$2" interval 1 space 0 times -1
		mix || bad=1
		quiet
		zc 0
		settled || { echo "# round $r left resources behind"; bad=1; }
	done
	[ "$bad" = 0 ]
}
check "at random (5 %), SRQ, MW, CQ resize, zero copy and kernel FRMR programs end cleanly" \
	random_rounds "${KIWI_FAULT_ROUNDS:-1}" 5

# Every guarded site in the source has failed at least once.
sites_in_source=$(grep -ho 'kiwi_fault()' "$KIWI_ROOT"/drivers/infiniband/sw/kiwi/*.c | wc -l)
sites_failed=$(awk '$4 > 0' "$D/fail_sites" | wc -l)
sort -n "$D/fail_sites" | sed 's/^/# site, calls, failures: /' 
check "each of the $sites_in_source guarded allocation sites failed at least once ($sites_failed did; init's 2 before this load)" \
	test "$((sites_failed + 2))" -ge "$sites_in_source"

# The kernel's own failslab and fail_page_alloc, for the workload's tasks.
kfail() {
	local a
	for a in failslab fail_page_alloc; do
		echo "$1" >"/sys/kernel/debug/$a/probability"
		echo Y >"/sys/kernel/debug/$a/task-filter"
		echo 0 >"/sys/kernel/debug/$a/verbose"
		echo N >"/sys/kernel/debug/$a/ignore-gfp-wait"
		echo 100000 >"/sys/kernel/debug/$a/times"
	done
	echo N >/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem
}
# froot DIR: a root file system on tmpfs with rping, bash, the kiwi
# provider and what they load (libgcc_s: pthread_exit's dlopen). The
# failslab round runs rping there, failing from its exec on: failing the
# allocations of the VM's own root file system (9p under overlayfs)
# instead leaves it answering EINVAL to every later open, for every
# process (p9_client_clunk and p9_tag_alloc failed): outside kiwi, and the
# end of the test run. tmpfs fails cleanly. The root is a tmpfs mount of
# its own: the guest's /tmp is an overlay whose lower layer is the host's
# /tmp over 9p, and a lookup there may reach 9p.
froot() {
	local r=$1 f prov
	prov=$(ls /usr/lib/*/libibverbs/libkiwi-rdmav*.so | head -n1)
	mkdir -p "$r" && mount -t tmpfs -o size=256m froot "$r" || return 1
	mkdir -p "$r"/usr/bin "$r"/usr/lib "$r"/usr/lib64 "$r"/dev "$r"/sys "$r"/proc "$r"/tmp &&
	ln -s usr/bin "$r"/bin && ln -s usr/lib "$r"/lib && ln -s usr/lib64 "$r"/lib64 || return 1
	for f in "$(command -v rping)" "$(command -v bash)" "$prov" /etc/ld.so.cache \
		 /etc/libibverbs.d/kiwi.driver /usr/lib/*/libgcc_s.so.1 \
		 $(ldd "$(command -v rping)" "$(command -v bash)" "$prov" |
		   awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }' | sort -u); do
		mkdir -p "$(dirname "$r$f")" && cp -L "$f" "$r$f" || return 1
	done
}
check "a root on tmpfs for the failslab round" froot "$out/froot"
# A command run in that root, in a mount namespace of its own (/dev, /sys
# and /proc bound in), whose tasks the task filter lets fail.
FAILING=(unshare -m bash -c 'r=$0
	mount --rbind /dev "$r/dev" && mount --rbind /sys "$r/sys" &&
	mount -t proc proc "$r/proc" &&
	exec chroot "$r" /bin/bash -c "echo 1 >/proc/self/make-it-fail && exec \"\$@\"" failing "$@"' \
	"$out/froot")
check "rping -V runs from a root on tmpfs (nothing failing yet)" \
	pair froot 7500 kiwiB "${FAILING[@]}" rping -s -a 192.0.2.2 -p 7500 -V -C 3 -S 2000 -- \
		kiwiA "${FAILING[@]}" rping -c -a 192.0.2.2 -p 7500 -V -C 3 -S 2000
kfail_rounds() {
	local r bad=0
	# A failed allocation past exec's point of no return ends the task
	# with SIGSEGV, as may one rping does not check: the shell reports it.
	echo "# failing rounds: a \"Segmentation fault\" below is a task a failed allocation ended"
	kfail 2
	for r in $(seq 1 "$1"); do
		run_pair "ks$r" "${FAILING[@]}" rping -s -a 192.0.2.2 -p 7500 -V -C 3 -S 2000 -- \
			"${FAILING[@]}" rping -c -a 192.0.2.2 -p 7500 -V -C 3 -S 2000 || bad=1
		settled || { echo "# failslab round $r left resources behind"; bad=1; }
	done
	local slab=$((100000 - $(cat /sys/kernel/debug/failslab/times)))
	echo "# failslab failed $slab allocations, fail_page_alloc $((100000 - $(cat /sys/kernel/debug/fail_page_alloc/times)))"
	kfail 0
	[ "$slab" -gt 0 ] || { echo "# no allocation was failed"; bad=1; }
	[ "$bad" = 0 ]
}
# lsm_active NAME: the security module NAME runs in this kernel.
lsm_active() {
	local f=/sys/kernel/security/lsm
	[ -r "$f" ] || mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
	tr , '\n' <"$f" | grep -qx "$1"
}
# TOMOYO with no policy loaded panics the kernel when an allocation of its
# own fails ("MAC Initialization failed"), as one in the exec of a failing
# task may: scripts/test-debug.sh boots without it (lsm=).
if lsm_active tomoyo; then
	ok "failslab and fail_page_alloc on rping's tasks # SKIP TOMOYO is active: an allocation failure in it panics the kernel (boot with an lsm= list without tomoyo)"
else
	check "failslab and fail_page_alloc (2 %) on rping's tasks: every run ends, nothing left behind" \
		kfail_rounds "${KIWI_FAILSLAB_ROUNDS:-3}"
fi
umount "$out/froot"

quiet
check "afterwards the devices still move verified data (rping -V)" \
	pair_rping rping 7500 kiwiB 192.0.2.2 kiwiA 20 4000
kiwi_two_hosts_del
check "the devices go with their namespaces" \
	wait_for 20 eval 'ibdev_absent kiwi0 && ibdev_absent kiwi1'
check "kiwi unloads" modprobe -r kiwi

# The allocation failures this script caused outside kiwi_fault() (vmalloc
# and the page allocator) print warnings with a stack trace. Take the log
# here and fail on anything else that run_vm.sh would fail on.
log_check() {
	awk -v bad="$KIWI_BAD_LOG" '
	     /page allocation failure|vmalloc error/ { expected = 1; next }
	     # the trace of that warning (its frames may name kmemleak_alloc)
	     expected && (/Call Trace:|<\/?TASK>/ || /\] +(\? )?[A-Za-z0-9_.]+\+0x/) { next }
	     $0 ~ bad { expected = 0; print }' >"$out/bad"
	[ ! -s "$out/bad" ] || { sed 's/^/# dmesg: /' "$out/bad" | head -40; return 1; }
}
dmesg -c >"$out/dmesg"
echo "# kernel log: $(grep -cE 'page allocation failure|vmalloc error' "$out/dmesg") allocation-failure warnings"
check "the kernel log has no report other than the allocation failures caused" \
	log_check <"$out/dmesg"
tap_end
