#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Where kiwi answers the peer's RDMA Reads and atomics: a response of at
# most 4 KiB goes out from the receive softirq that read its request (port
# counter tx_resp_softirq), without a worker's wake-up; a larger one from
# the transmit work item (tx_resp_worker). perftest's Read and atomic
# latency tests ask for small ones, ib_read_bw for 64 KiB ones; with and
# without MPA CRCs, so the softirq computes CRCs too (a wrong one would
# end the connection with a Terminate and the test with an error).
source "$(dirname "$0")/lib.sh"
tap_begin "Read and atomic responses: from the receive softirq or the worker"

# counter NAME: the responder's (kiwi1's) port counter NAME.
counter() {
	cat "/sys/class/infiniband/kiwi1/ports/1/hw_counters/$1"
}

# run NAME TEST ITERS [ARGS...]: a perftest pair, kiwi0 in kiwiA asking
# kiwi1 in kiwiB; then s and w tell how many responses kiwi1 sent from its
# receive softirq and from its worker meanwhile.
run() {
	local opt=(-R -F -p 18530 -n "$3" "${@:4}") s0 w0 rc

	s0=$(counter tx_resp_softirq) w0=$(counter tx_resp_worker)
	perftest_pair "$1" 18530 kiwiB "$2" -d kiwi1 "${opt[@]}" -- \
		kiwiA "$2" -d kiwi0 "${opt[@]}" 192.0.2.2
	rc=$?
	s=$(($(counter tx_resp_softirq) - s0)) w=$(($(counter tx_resp_worker) - w0))
	return $rc
}

# Not all of them from the softirq: a request that TCP takes while a
# process owns the socket (the work item sending, a close) is handed over
# in release_sock(), in process context, where kiwi_tx_answer() only kicks
# the work item. ib_read_lat's responder posts nothing, so that is rare:
# every run so far had them all from the softirq (2000 of 2000).
for params in "" crc_required=1; do
	m=${params:-no CRC}
	check "$m: two hosts with a kiwi device each" kiwi_two_devs $params
	check "$m: ib_read_lat -R, 2000 x 8 B" run rlat ib_read_lat 2000 -s 8
	check "$m: at least 2000 responses, 95 % from the receive softirq ($s, worker $w)" \
		eval '[ $((s + w)) -ge 2000 ] && [ $((s * 100)) -ge $((95 * (s + w))) ]'
	check "$m: ib_atomic_lat -R, 500 FETCH_AND_ADD" run alat ib_atomic_lat 500
	check "$m: at least 500 responses, 95 % from the receive softirq ($s, worker $w)" \
		eval '[ $((s + w)) -ge 500 ] && [ $((s * 100)) -ge $((95 * (s + w))) ]'
	check "$m: ib_read_bw -R, 300 x 64 KiB" run rbw ib_read_bw 300 -s 65536
	check "$m: all 300 responses by the worker, none from the softirq ($s, worker $w)" \
		eval '[ "$w" -ge 300 ] && [ "$s" = 0 ]'
	kiwi_two_devs_del
done
tap_end
