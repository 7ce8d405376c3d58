#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): tools/bench/report.py turns raw runs into the right
# medians, ratios and target marks, reports a cell with a failed or
# timed-out run as missing and exits 1 for it, tells skipped cells from
# missing ones, and draws the plot. Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
tap_begin "bench report"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# Debian's python3-matplotlib is for the system python3.
report=(/usr/bin/python3 "$root/tools/bench/report.py")

# Three runs per cell, in no particular order. Cells and what they test:
#   write_bw 64K: kiwi 110 = 0.92x TCP: met (its aim is against TCP only)
#   send_bw 4K:   kiwi 30 = 1.5x siw: missed (its aim is against siw only)
#   send_lat:     kiwi 30 = 0.67x siw, 1.07x TCP one way (28): both met
#   write_lat:    kiwi 40 = 1.21x siw, 1.43x TCP: missed; 0.8x siw is
#                 below TCP's one-way time
#   read_lat:     kiwi 100 = 0.91x siw: missed; TCP round trip 2 x 25
#   read_bw 1M:   kiwi has a failed run: missing, the bench fails
#   write_bw 4K:  siw has a timed-out run: no ratio, no verdict
#   read_bw 1M event on rxe: skipped, not missing
#   nvme_randread (storage): kiwi 1200 IOPS = 1.2x NVMe/TCP: met, 2x siw
#   nfs_write (storage): kiwi 80 MiB/s = 0.8x NFS over TCP: missed; no siw
#   smb_read (storage): kiwi 150 MiB/s = 1.5x SMB3 over TCP: met; no siw
#   mpi_lat 8 (programs): kiwi 60 us against Open MPI over TCP's 40: 1.5x
cat >"$dir/raw.csv" <<'EOF'
transport,test,size,mode,iters,run,value,unit,status
kiwi,write_bw,65536,poll,255,1,120,MiB/s,ok
kiwi,write_bw,65536,poll,255,2,100,MiB/s,ok
kiwi,write_bw,65536,poll,255,3,110,MiB/s,ok
siw,write_bw,65536,poll,255,1,60,MiB/s,ok
siw,write_bw,65536,poll,255,2,40,MiB/s,ok
siw,write_bw,65536,poll,255,3,50,MiB/s,ok
rxe,write_bw,65536,poll,255,1,30,MiB/s,ok
rxe,write_bw,65536,poll,255,2,20,MiB/s,ok
rxe,write_bw,65536,poll,255,3,25,MiB/s,ok
tcp,tcp_bw,65536,any,255,1,110,MiB/s,ok
tcp,tcp_bw,65536,any,255,2,120,MiB/s,ok
tcp,tcp_bw,65536,any,255,3,130,MiB/s,ok
kiwi,send_bw,4096,poll,511,1,30,MiB/s,ok
kiwi,send_bw,4096,poll,511,2,29,MiB/s,ok
kiwi,send_bw,4096,poll,511,3,31,MiB/s,ok
siw,send_bw,4096,poll,511,1,20,MiB/s,ok
siw,send_bw,4096,poll,511,2,20,MiB/s,ok
siw,send_bw,4096,poll,511,3,20,MiB/s,ok
tcp,tcp_bw,4096,any,511,1,100,MiB/s,ok
tcp,tcp_bw,4096,any,511,2,90,MiB/s,ok
tcp,tcp_bw,4096,any,511,3,101,MiB/s,ok
kiwi,send_lat,8,poll,2000,1,31,us,ok
kiwi,send_lat,8,poll,2000,2,29,us,ok
kiwi,send_lat,8,poll,2000,3,30,us,ok
siw,send_lat,8,poll,2000,1,50,us,ok
siw,send_lat,8,poll,2000,2,45,us,ok
siw,send_lat,8,poll,2000,3,40,us,ok
tcp,tcp_lat,8,poll,2000,1,28,us,ok
tcp,tcp_lat,8,poll,2000,2,28,us,ok
tcp,tcp_lat,8,poll,2000,3,28,us,ok
kiwi,write_lat,8,poll,2000,1,40,us,ok
siw,write_lat,8,poll,2000,1,33,us,ok
kiwi,read_lat,8,event,2000,1,100,us,ok
kiwi,read_lat,8,event,2000,2,100,us,ok
kiwi,read_lat,8,event,2000,3,100,us,ok
siw,read_lat,8,event,2000,1,110,us,ok
siw,read_lat,8,event,2000,2,110,us,ok
siw,read_lat,8,event,2000,3,110,us,ok
tcp,tcp_lat,8,event,2000,1,25,us,ok
tcp,tcp_lat,8,event,2000,2,24,us,ok
tcp,tcp_lat,8,event,2000,3,26,us,ok
kiwi,read_bw,1048576,event,31,1,12,MiB/s,ok
kiwi,read_bw,1048576,event,31,2,,MiB/s,fail
kiwi,read_bw,1048576,event,31,3,14,MiB/s,ok
siw,read_bw,1048576,event,31,1,10,MiB/s,ok
siw,read_bw,1048576,event,31,2,10,MiB/s,ok
siw,read_bw,1048576,event,31,3,10,MiB/s,ok
rxe,read_bw,1048576,event,31,1,,MiB/s,skip
rxe,read_bw,1048576,event,31,2,,MiB/s,skip
rxe,read_bw,1048576,event,31,3,,MiB/s,skip
tcp,tcp_bw,1048576,any,31,1,200,MiB/s,ok
tcp,tcp_bw,1048576,any,31,2,200,MiB/s,ok
tcp,tcp_bw,1048576,any,31,3,200,MiB/s,ok
kiwi,write_bw,4096,poll,511,1,40,MiB/s,ok
kiwi,write_bw,4096,poll,511,2,40,MiB/s,ok
kiwi,write_bw,4096,poll,511,3,40,MiB/s,ok
siw,write_bw,4096,poll,511,1,10,MiB/s,ok
siw,write_bw,4096,poll,511,2,,MiB/s,timeout
siw,write_bw,4096,poll,511,3,10,MiB/s,ok
kiwi,nvme_randread,4096,qd32,256,1,1100,IOPS,ok
kiwi,nvme_randread,4096,qd32,256,2,1200,IOPS,ok
kiwi,nvme_randread,4096,qd32,256,3,1300,IOPS,ok
siw,nvme_randread,4096,qd32,256,1,600,IOPS,ok
siw,nvme_randread,4096,qd32,256,2,500,IOPS,ok
siw,nvme_randread,4096,qd32,256,3,700,IOPS,ok
tcp,nvme_randread,4096,qd32,256,1,1000,IOPS,ok
tcp,nvme_randread,4096,qd32,256,2,1000,IOPS,ok
tcp,nvme_randread,4096,qd32,256,3,1000,IOPS,ok
kiwi,nfs_write,1048576,seq,256,1,80,MiB/s,ok
kiwi,nfs_write,1048576,seq,256,2,80,MiB/s,ok
kiwi,nfs_write,1048576,seq,256,3,80,MiB/s,ok
tcp,nfs_write,1048576,seq,256,1,100,MiB/s,ok
tcp,nfs_write,1048576,seq,256,2,100,MiB/s,ok
tcp,nfs_write,1048576,seq,256,3,100,MiB/s,ok
kiwi,smb_read,1048576,seq,256,1,150,MiB/s,ok
tcp,smb_read,1048576,seq,256,1,100,MiB/s,ok
kiwi,mpi_lat,8,pingpong,1,1,50,us,ok
kiwi,mpi_lat,8,pingpong,1,2,60,us,ok
kiwi,mpi_lat,8,pingpong,1,3,70,us,ok
tcp,mpi_lat,8,pingpong,1,1,40,us,ok
tcp,mpi_lat,8,pingpong,1,2,45,us,ok
tcp,mpi_lat,8,pingpong,1,3,35,us,ok
kiwi_crc,write_bw,65536,poll,255,1,90,MiB/s,ok
kiwi_crc,write_bw,65536,poll,255,2,88,MiB/s,ok
kiwi_crc,write_bw,65536,poll,255,3,80,MiB/s,ok
kiwi_mss,write_bw,65536,poll,255,1,180,MiB/s,ok
kiwi_mss,write_bw,65536,poll,255,2,176,MiB/s,ok
kiwi_mss,write_bw,65536,poll,255,3,170,MiB/s,ok
kiwi,scale_qp,65536,1,4097,1,100,MiB/s,ok
kiwi,scale_qp,65536,2,2049,1,120,MiB/s,ok
kiwi,scale_qp,65536,4,1025,1,85,MiB/s,ok
siw,scale_qp,65536,2,2049,1,40,MiB/s,ok
tcp,scale_qp,65536,2,2049,1,150,MiB/s,ok
kiwi,scale_proc,65536,1,4097,1,100,MiB/s,ok
kiwi,scale_proc,65536,1,4097,2,140,MiB/s,ok
kiwi,scale_proc,65536,2,4097,1,80,MiB/s,ok
kiwi,scale_proc,65536,2,4097,2,110,MiB/s,ok
kiwi,cpu_send,65536,event,16385,1,2.0,s/GiB,ok
kiwi_crc,cpu_send,65536,event,16385,1,3.0,s/GiB,ok
kiwi_mss,cpu_send,65536,event,16385,1,1.5,s/GiB,ok
siw,cpu_send,65536,event,16385,1,8.0,s/GiB,ok
tcp,tcp_cpu,65536,event,16385,1,1.6,s/GiB,ok
EOF
# Each CPU's completion work: nvme's over two runs, 3:1 between the CPUs.
cat >"$dir/cq_cpus.csv" <<'EOF'
transport,test,size,mode,run,cpu,cqes,handlers,remote
kiwi,nvme_randread,4096,qd32x2,1,0,100,50,10
kiwi,nvme_randread,4096,qd32x2,1,1,50,40,0
kiwi,nvme_randread,4096,qd32x2,2,0,200,60,20
kiwi,nvme_randread,4096,qd32x2,2,1,50,30,5
siw,nvme_randread,4096,qd32x2,1,0,999,999,999
EOF

out=$("${report[@]}" "$dir/raw.csv" "$dir" 2>&1)
rc=$?
# The table with its runs of spaces squeezed: the values stay exact.
table=$(tr -s ' ' <"$dir/ratios.txt")
row() { grep -qxF -- "$1" <<<"$table" || { echo "# no row: $1"; sed 's/^/#   /' <<<"$table"; return 1; }; }
csv() { grep -qxF -- "$1" "$dir/medians.csv" || { echo "# no line: $1"; return 1; }; }

check "exits 1 when a cell is missing" test $rc -eq 1
check "prints the table it writes" eval '[ "$(tr -s " " <<<"$out")" = "$table" ]'
check "medians.csv: median of three unsorted runs" \
	csv "kiwi,write_bw,65536,poll,3,3,110.00,MiB/s,ok"
check "medians.csv: the TCP stream median" csv "tcp,tcp_bw,4096,any,3,3,100.00,MiB/s,ok"
check "medians.csv: a cell with a failed run is missing, with its good runs counted" \
	csv "kiwi,read_bw,1048576,event,3,2,,MiB/s,missing"
check "medians.csv: a timed-out run makes the cell missing too" \
	csv "siw,write_bw,4096,poll,3,2,,MiB/s,missing"
check "medians.csv: skipped runs make a skipped cell" \
	csv "rxe,read_bw,1048576,event,3,0,,MiB/s,skip"
check "64 KiB bandwidth at 0.92x TCP is met, 2.2x siw without a mark" \
	row "write_bw 65536 poll | 110.00 50.00 25.00 120.00 | 2.20 4.40 0.92 ok | met"
check "4 KiB bandwidth at 1.5x siw is missed; 0.3x TCP without a mark" \
	row "send_bw 4096 poll | 30.00 20.00 - 100.00 | 1.50 NO - 0.30 | MISSED"
check "latency at 0.67x siw and 1.07x TCP one way is met" \
	row "send_lat 8 poll | 30.00 45.00 - 28.00 | 0.67 ok - 1.07 ok | met"
check "latency at 0.91x siw is missed; read_lat compares with the TCP round trip" \
	row "read_lat 8 event | 100.00 110.00 - 50.00 | 0.91 NO - 2.00 | MISSED"
check "kiwi's failed run shows the cell as missing, skipped rxe as skip" \
	row "read_bw 1048576 event | missing 10.00 skip 200.00 | - - - | MISSING"
check "a missing siw cell leaves no ratio and no verdict" \
	row "write_bw 4096 poll | 40.00 missing - 100.00 | - - 0.40 | n/a"
check "the summary counts the cells with a verdict" \
	row "kiwi meets its aim in 2 of 5 cells with data"
check "the missing cells are named" \
	row "missing (a run failed or timed out): kiwi read_bw 1048576 event, siw write_bw 4096 poll"
check "spread: kiwi's runs and its anchors' lowest to highest; the aim inside kiwi/TCP's range leaves the verdict open" \
	row "write_bw 65536 poll | 100.0-120.0 40.0-60.0 110.0-130.0 | - 0.77-1.09 ~"
check "spread: a kiwi/siw range wholly below its aim settles the miss" \
	row "send_bw 4096 poll | 29.0-31.0 20.0-20.0 90.0-101.0 | 1.45-1.55 NO -"
check "spread: latency against siw settled, against TCP open (1.04-1.11 around 1.1)" \
	row "send_lat 8 poll | 29.0-31.0 40.0-50.0 28.0-28.0 | 0.58-0.78 ok 1.04-1.11 ~"
check "spread: an anchor with a failed run gives no range verdict, as it gives no ratio" \
	row "write_bw 4096 poll | 40.0-40.0 10.0-10.0 90.0-101.0 | - -"
check "spread: the verdicts left open are counted" \
	row "verdicts the runs' spread leaves open: 2"
check "storage: kiwi at 1.2x NVMe/TCP's IOPS meets its target; 2x siw's" \
	row "nvme_randread 4096 qd32 IOPS | 1200.00 600.00 1000.00 | 2.00 1.20 | met"
check "storage: NFS over kiwi at 0.8x NFS over TCP misses it" \
	row "nfs_write 1048576 seq MiB/s | 80.00 - 100.00 | - 0.80 | MISSED"
check "storage: SMB Direct over kiwi at 1.5x SMB3 over TCP meets it" \
	row "smb_read 1048576 seq MiB/s | 150.00 - 100.00 | - 1.50 | met"
check "storage: the summary counts the storage cells" \
	row "kiwi meets its storage target in 2 of 3 cells with data"
check "programs: Open MPI's latency over kiwi beside TCP's, and their ratio" \
	row "mpi_lat 8 pingpong us | 60.00 40.00 | 1.50"
check "programs' rows stay out of the RDMA table" \
	eval '! grep -q "^mpi_lat .*|.*|.*|" <<<"$table"'
check "storage rows stay out of the RDMA table" \
	eval '! grep -q "^nvme_randread [0-9]* qd32 |" <<<"$table"'
check "CRC: kiwi with the CRC against without and TCP, in a table of its own" \
	row "write_bw 65536 poll | 110.00 88.00 120.00 | 0.80 0.73"
check "FPDU size: kiwi with fpdu_segs=1 against its default and TCP" \
	eval 'row "write_bw 65536 poll | 110.00 176.00 120.00 | 1.60 1.47" &&
	      grep -q "^FPDU size: kiwi with fpdu_segs=1" <<<"$table"'
check "scaling: 2 QPs at 1.2x kiwi's 1 QP meet the aim; against siw and TCP too" \
	row "scale_qp 2 | 120.00 40.00 150.00 | 3.00 0.80 1.20 | met"
check "scaling: 4 QPs at 0.85x kiwi's 1 QP miss it" \
	row "scale_qp 4 | 85.00 - - | - - 0.85 | MISSED"
check "scaling: N = 1 is the base, not a verdict" \
	row "scale_qp 1 | 100.00 - - | - - 1.00 | base"
check "scaling: the summary counts its cells" \
	row "kiwi meets its scaling aim in 1 of 3 cells with data"
check "CPU per GiB: kiwi against kiwi with the CRC, with one-segment FPDUs, siw and TCP" \
	row "cpu_send 65536 event | 2.00 3.00 1.50 8.00 1.60 | 0.25 1.25"
check "completion work per CPU: kiwi's, summed over the runs, siw's left out" \
	row "nvme_randread 4096 qd32x2 | cpu0 75.0% / 110 (30) cpu1 25.0% / 70 (5)"
check "scaling and CPU rows stay out of the RDMA table" \
	eval '! grep -qE "^(scale_qp|cpu_send) " <<<"$(sed -n "1,/meets its aim/p" <<<"$table")"'
# The reasons for the missed aims, their wrapped lines joined again.
why=$(sed -n '/^why each aim is missed/,/^missing/p' "$dir/ratios.txt" |
	awk '/^    /{sub(/^ +/, ""); buf = buf " " $0; next} {if (buf != "") print buf; buf = $0}
	     END {print buf}')
reason() { grep -qxF -- "$1" <<<"$why" || { echo "# no reason: $1"; sed 's/^/#   /' <<<"$why"; return 1; }; }
check "why: a 4 KiB cell's time per message against the aim's" \
	reason "send_bw 4096 poll: kiwi takes 130.2 us a message, siw 195.3; 2x siw takes 32.6 us off kiwi's."
check "why: an aim below TCP's own one-way time is named so; kiwi's steps over TCP" \
	reason "write_lat 8 poll: 0.8x siw is 26.4 us, below TCP's own one-way time on this path (28.0 us, polling), which kiwi and siw both ride: no device on this TCP can meet it; kiwi's own steps (post, framing, placement, completion, poll) add 12.0 us to TCP's 28.0; 1.1x TCP takes 9.2 us off them (make bench-profile times each step)."
check "why: an aim above TCP's round trip is a time to take off kiwi's" \
	reason "read_lat 8 event: 0.6x siw (66.0 us) takes 34.0 us off kiwi's time."
check "why: a storage cell without its carrier's row says so" \
	reason "nfs_write 1048576 seq: this run has no 64 KiB read_bw row to compare."
check "why: a scaling cell against kiwi's and TCP's own N = 1, with its runs" \
	reason "scale_qp 4: kiwi with 4 at 0.85x its aggregate with 1; kiwi's runs moved 85-85 MiB/s with 4, 100-100 with 1."
check "why: a scaling cell whose runs overlap those with N = 1 says so" \
	reason "scale_proc 2: kiwi with 2 at 0.79x its aggregate with 1; kiwi's runs moved 80-110 MiB/s with 2, 100-140 with 1: the ranges overlap, the fall is within the runs' spread; longer runs (BENCH_BW_MB) would tell."
check "why: met cells have no reason" eval '! grep -qE "^(write_bw 65536|send_lat 8|nvme_randread|scale_qp 2)" <<<"$why"'
check "the plot is a PNG" eval '[ "$(head -c 4 "$dir/bench.png" | tail -c 3)" = PNG ]'

# Without the failed and timed-out runs nothing is missing: exit 0.
grep -vE ',(fail|timeout)$' "$dir/raw.csv" >"$dir/good.csv"
"${report[@]}" "$dir/good.csv" "$dir" --no-plot >/dev/null 2>&1
check "exits 0 when no cell is missing" test $? -eq 0
table=$(tr -s ' ' <"$dir/ratios.txt")
check "two runs give the mean of the two as the median" \
	row "read_bw 1048576 event | 13.00 10.00 skip 200.00 | 1.30 - 0.07 NO | MISSED"
why=$(sed -n '/^why each aim is missed/,$p' "$dir/ratios.txt" |
	awk '/^    /{sub(/^ +/, ""); buf = buf " " $0; next} {if (buf != "") print buf; buf = $0}
	     END {print buf}')
check "why: a stream cell against TCP, with the CPU time per GiB of the same run" \
	eval 'grep -q "^read_bw 1048576 event (0.07x) of TCP.s stream; kiwi spends 1.2x TCP.s CPU time per GiB (cpu_send) (0.9x with one-segment FPDUs): .*make bench-profile" <<<"$why"'
tap_end
