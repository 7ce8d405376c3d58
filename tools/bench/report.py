#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the bench's raw runs into medians, ratios against the anchors and a plot.

    report.py RAW_CSV OUTDIR [--no-plot]

Reads RAW_CSV (one row per run, written by tools/bench/run.sh) and writes
OUTDIR/medians.csv, OUTDIR/ratios.txt (also printed) and OUTDIR/bench.png.
A cell is the median of its runs; a cell with a failed or timed-out run is
reported as missing. Exits 1 when any cell is missing, else 0.

Aims for kiwi (issue 13): bandwidth at 4 KiB at least 2x siw's, at 64 KiB
and 1 MiB at least 0.9x TCP's on the same path; Write and Send latency at
most 0.8x siw's and 1.1x TCP's ping-pong, Read latency at most 0.6x siw's.
Storage rows (tools/bench/storage.sh: NVMe-oF and NFSv4.2, kiwi against
the same ULP over TCP): at least 1.0x. Scaling (scale_qp: one process
with N QPs; scale_proc: N processes): kiwi's aggregate with N at least
0.9x its aggregate with 1 (it must not fall as QPs are added). Also
printed: kiwi with the MPA CRC on (transport kiwi_crc) against off, kiwi
with one TCP segment per FPDU (kiwi_mss: fpdu_segs=1, as toward a peer
that did not agree to large FPDUs) against its default (large FPDUs),
CPU seconds per GiB against TCP's, the programs' rows (tools/bench/programs.sh:
Open MPI and iperf through rsockets, kiwi against TCP), and, from OUTDIR/cq_cpus.csv when it is
there (beside RAW_CSV), each CPU's share of kiwi's completion work. Each
cell's runs are shown lowest to highest, with the range of each ratio they
allow and whether its aim lies inside it (the verdict left open). Last,
for each missed aim, its reason in the run's own numbers (an aim below
TCP's own time on the path, the FPDU size, the CPU time per
GiB, the RDMA cell a storage cell rides on) and what meeting it would take.
"""
import csv
import os
import statistics
import sys
import textwrap

TRANSPORTS = ("kiwi", "siw", "rxe", "tcp")   # the main table's columns
BW_MIN_SIW = 2.0        # 4 KiB
BW_MIN_TCP = 0.9        # 64 KiB and 1 MiB
LAT_MAX_SIW = 0.8       # Write and Send
LAT_MAX_TCP = 1.1       # Write and Send
READ_LAT_MAX_SIW = 0.6
STORAGE_MIN_TCP = 1.0
SCALE_MIN_ONE = 0.9


def is_storage(test):
    """A row of tools/bench/storage.sh: a ULP over kiwi against it over TCP."""
    return test.startswith(("nvme_", "nfs_", "smb_"))


def is_program(test):
    """A row of tools/bench/programs.sh: Open MPI or rsockets over kiwi
    against the same program over TCP."""
    return test.startswith(("mpi_", "rsocket_"))


def is_extra(test):
    """A scaling or CPU row: tables of their own."""
    return test.startswith(("scale_", "cpu_")) or test == "tcp_cpu"


def load(path):
    """Map (transport, test, size, mode) to the list of its runs' rows."""
    cells = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["transport"], row["test"], int(row["size"]), row["mode"])
            cells.setdefault(key, []).append(row)
    return cells


def summarize(rows):
    """(state, median, ok runs): state is ok, missing or skip."""
    status = [r["status"] for r in rows]
    if all(s == "skip" for s in status):
        return "skip", None, 0
    values = [float(r["value"]) for r in rows if r["status"] == "ok"]
    if len(values) != len(status):
        return "missing", None, len(values)
    return "ok", statistics.median(values), len(values)


def tcp_reference(test, size, mode):
    """The TCP cell an RDMA cell compares with, and the factor applied:
    bandwidth against a TCP stream of the same message size; Send and Write
    latency (one way, as perftest reports them) against one-way TCP
    ping-pong latency in the same mode; Read latency (a full round trip in
    perftest) against the TCP round trip."""
    if test.endswith("_bw"):
        return ("tcp", "tcp_bw", size, "any"), 1.0
    return ("tcp", "tcp_lat", size, mode), 2.0 if test == "read_lat" else 1.0


def aims(test, size):
    """The cell's aims: (maximum or minimum kiwi/siw, the same for
    kiwi/TCP) as ("min"|"max", factor) or None where there is none."""
    if test.endswith("_bw"):
        if size <= 4096:
            return ("min", BW_MIN_SIW), None
        return None, ("min", BW_MIN_TCP)
    if test == "read_lat":
        return ("max", READ_LAT_MAX_SIW), None
    return ("max", LAT_MAX_SIW), ("max", LAT_MAX_TCP)


def meets(r, aim):
    """True, False, or None when there is no aim or no ratio."""
    if aim is None or r is None:
        return None
    return r >= aim[1] if aim[0] == "min" else r <= aim[1]


def aim_text(aim):
    if aim is None:
        return ""
    return (">=" if aim[0] == "min" else "<=") + f"{aim[1]:.1f}"


def fmt(v, width=8):
    return f"{v:{width}.2f}" if isinstance(v, float) else f"{v:>{width}}"


def ratio(a, b):
    if isinstance(a, float) and isinstance(b, float) and b > 0:
        return a / b
    return None


def cell_value(summary, key, factor=1.0):
    """The cell's median (times @factor), its state when it has none, or "-"."""
    if key not in summary:
        return "-"
    state, median, _ = summary[key]
    return median * factor if state == "ok" else state


def build(cells):
    """The table rows, one per RDMA (test, size, mode) cell, plus the
    names of the cells (of any transport) that are missing."""
    summary = {k: summarize(v) for k, v in cells.items()}
    missing = sorted("%s %s %d %s" % k for k, s in summary.items() if s[0] == "missing")

    order = {t: i for i, t in enumerate(
        ("write_bw", "read_bw", "send_bw", "write_lat", "read_lat", "send_lat"))}
    keys = sorted({k[1:] for k in cells if k[0] != "tcp" and not is_storage(k[1])
                   and not is_extra(k[1]) and not is_program(k[1])},
                  key=lambda k: (order.get(k[0], 99), k[1], k[2] != "poll"))
    rows = []
    for test, size, mode in keys:
        vals = {t: cell_value(summary, (t, test, size, mode))
                for t in TRANSPORTS if t != "tcp"}
        ref, factor = tcp_reference(test, size, mode)
        vals["tcp"] = cell_value(summary, ref, factor)
        k = vals["kiwi"]
        r_siw, r_rxe, r_tcp = (ratio(k, vals[t]) for t in ("siw", "rxe", "tcp"))
        bw = test.endswith("_bw")
        checks = [meets(r, a) for r, a in zip((r_siw, r_tcp), aims(test, size))
                  if a is not None]
        known = None not in checks
        if not isinstance(k, float):
            verdict = "MISSING" if k == "missing" else k
        elif not known:
            verdict = "n/a"
        else:
            verdict = "met" if all(checks) else "MISSED"
        rows.append({"test": test, "size": size, "mode": mode, "vals": vals,
                     "ratios": (r_siw, r_rxe, r_tcp), "bw": bw, "verdict": verdict})
    return summary, rows, missing


def mark(r, ok):
    """A ratio, with ok or NO against its aim (blank where it has none)."""
    if r is None:
        return f"{'-':>10}"
    return f"{r:6.2f} {'' if ok is None else 'ok' if ok else 'NO':>3}"


def table(rows, runs):
    lines = [
        f"kiwi benchmark: median of {runs} run(s) per cell; bandwidth in MiB/s"
        " (higher is better), latency in us (lower is better)",
        f"aims: bandwidth at 4 KiB >= {BW_MIN_SIW:.1f}x siw, at 64 KiB and 1 MiB"
        f" >= {BW_MIN_TCP:.1f}x TCP; Write and Send latency <= {LAT_MAX_SIW:.1f}x siw"
        f" and <= {LAT_MAX_TCP:.1f}x TCP, Read latency <= {READ_LAT_MAX_SIW:.1f}x siw",
        "TCP: iperf3 stream with the same message size; tcp_lat ping-pong"
        " (one way; the round trip for read_lat)",
        "",
        f"{'test':<10}{'size':>8} {'mode':<6}|{'kiwi':>9}{'siw':>9}{'rxe':>9}{'TCP':>9} |"
        f"{'kiwi/siw':>11}{'kiwi/rxe':>9}{'kiwi/TCP':>11} | aim",
    ]
    lines.append("-" * len(lines[-1]))
    for r in rows:
        v = r["vals"]
        r_siw, r_rxe, r_tcp = r["ratios"]
        a_siw, a_tcp = aims(r["test"], r["size"])
        siw_m = mark(r_siw, meets(r_siw, a_siw))
        tcp_m = mark(r_tcp, meets(r_tcp, a_tcp))
        rxe_m = f"{r_rxe:9.2f}" if r_rxe is not None else f"{'-':>9}"
        lines.append(
            f"{r['test']:<10}{r['size']:>8} {r['mode']:<6}|"
            + "".join(" " + fmt(v[t]) for t in TRANSPORTS)
            + f" | {siw_m}{rxe_m} {tcp_m} | {r['verdict']}")
    met = sum(r["verdict"] == "met" for r in rows)
    judged = sum(r["verdict"] in ("met", "MISSED") for r in rows)
    lines.append("")
    lines.append(f"kiwi meets its aim in {met} of {judged} cells with data")
    return "\n".join(lines) + "\n"


def spread_mark(lo, hi, aim):
    """Is a verdict settled by the runs? ok or NO when the whole range of
    the ratio lies on one side of its aim, ~ when the aim is inside it."""
    if aim is None:
        return ""
    kind, bound = aim
    if (lo >= bound) if kind == "min" else (hi <= bound):
        return "ok"
    if (hi < bound) if kind == "min" else (lo > bound):
        return "NO"
    return "~"


def spread_table(rows, cells):
    """Each cell's runs, lowest to highest, kiwi's and its anchors', and
    the range of each ratio with an aim that those runs allow: a verdict
    whose aim lies inside that range is not settled by this run."""
    lines = ["", "spread of the runs (lowest-highest); kiwi/siw and kiwi/TCP range from"
             " kiwi's worst run against the anchor's best",
             "to its best against the anchor's worst: ok or NO when the whole range"
             " lies on one side of the aim, ~ when the aim is inside it",
             f"{'test':<10}{'size':>8} {'mode':<6}|{'kiwi':>16}{'siw':>16}{'TCP':>16} |"
             f"{'kiwi/siw':>15}{'kiwi/TCP':>15}"]
    lines.append("-" * len(lines[-1]))
    unsettled = 0
    for r in rows:
        test, size, mode = r["test"], r["size"], r["mode"]
        ref, factor = tcp_reference(test, size, mode)
        ranges = {"kiwi": run_range(cells, ("kiwi", test, size, mode)),
                  "siw": run_range(cells, ("siw", test, size, mode)),
                  "tcp": run_range(cells, ref)}
        if ranges["tcp"]:
            ranges["tcp"] = tuple(v * factor for v in ranges["tcp"])
        if not ranges["kiwi"] or not isinstance(r["vals"]["kiwi"], float):
            continue
        cols = []
        for t, aim in zip(("siw", "tcp"), aims(test, size)):
            k, a = ranges["kiwi"], ranges[t]
            # An anchor with a failed run has no verdict in the main table.
            if (aim is None or not a or min(a) <= 0
                    or not isinstance(r["vals"][t], float)):
                cols.append(f"{'-':>15}")
                continue
            lo, hi = k[0] / a[1], k[1] / a[0]
            m = spread_mark(lo, hi, aim)
            unsettled += m == "~"
            cols.append(f"{lo:6.2f}-{hi:<5.2f} {m:>2}")
        lines.append(f"{test:<10}{size:>8} {mode:<6}|"
                     + "".join(f"{f'{v[0]:.1f}-{v[1]:.1f}' if v else '-':>16}"
                               for v in (ranges[t] for t in ("kiwi", "siw", "tcp")))
                     + " |" + "".join(cols))
    lines.append(f"verdicts the runs' spread leaves open: {unsettled}")
    return "\n".join(lines) + "\n"


def storage_ratio(summary, key):
    """A storage cell's kiwi/TCP (@key: test, size, mode), its target's
    ratio, or None."""
    return ratio(cell_value(summary, ("kiwi",) + key), cell_value(summary, ("tcp",) + key))


def scale_ratio(summary, key):
    """A scaling cell's kiwi aggregate against kiwi's with N = 1 (@key:
    test, size, N), its aim's ratio, or None."""
    return ratio(cell_value(summary, ("kiwi",) + key),
                 cell_value(summary, ("kiwi", key[0], key[1], "1")))


def cell_unit(cells, key):
    """The unit of a cell (@key: test, size, mode) from kiwi's runs, else
    TCP's, else empty."""
    runs = cells.get(("kiwi",) + key) or cells.get(("tcp",) + key) or [{}]
    return runs[0].get("unit", "")


def storage_table(cells, summary):
    """kiwi against siw and TCP for each storage cell (the target is
    against TCP); empty when there is none."""
    keys = sorted({k[1:] for k in cells if is_storage(k[1])},
                  key=lambda k: (not k[0].startswith("nvme_"), k[0], k[1], k[2]))
    if not keys:
        return ""

    lines = [
        "",
        "storage: the same ULP over kiwi, over siw and over TCP on the same path"
        f" (target: kiwi >= {STORAGE_MIN_TCP:.1f}x TCP; higher is better)",
        f"{'test':<15}{'size':>8} {'mode':<6}{'unit':>6} |{'kiwi':>10}{'siw':>10}{'TCP':>10} |"
        f"{'kiwi/siw':>9}{'kiwi/TCP':>9} | aim",
    ]
    lines.append("-" * len(lines[-1]))
    met = judged = 0
    for test, size, mode in keys:
        k = cell_value(summary, ("kiwi", test, size, mode))
        t = cell_value(summary, ("tcp", test, size, mode))
        sv = cell_value(summary, ("siw", test, size, mode))
        unit = cell_unit(cells, (test, size, mode))
        rsiw = ratio(k, sv)
        rsiw = f"{rsiw:9.2f}" if rsiw is not None else f"{'-':>9}"
        r = storage_ratio(summary, (test, size, mode))
        if r is None:
            verdict = "MISSING" if "missing" in (k, t) else "n/a"
            rs = f"{'-':>9}"
        else:
            judged += 1
            met += r >= STORAGE_MIN_TCP
            verdict = "met" if r >= STORAGE_MIN_TCP else "MISSED"
            rs = f"{r:9.2f}"
        lines.append(f"{test:<15}{size:>8} {mode:<6}{unit:>6} | {fmt(k, 9)} {fmt(sv, 9)} "
                     f"{fmt(t, 9)} |{rsiw}{rs} | {verdict}")
    lines.append("")
    lines.append(f"kiwi meets its storage target in {met} of {judged} cells with data")
    return "\n".join(lines) + "\n"


def program_table(cells, summary):
    """Each program's cell over kiwi and over TCP (no aim: the issue asks
    for the figures); empty when there is none."""
    keys = sorted({k[1:] for k in cells if is_program(k[1])})
    if not keys:
        return ""
    lines = heading(["programs: Open MPI (OFI MTL on verbs;ofi_rxm) and iperf through"
                     " rsockets' preload, over kiwi and over TCP on the same path",
                     "(mpi_lat: half a round trip, lower is better; the others MiB/s)"],
                    f"{'test':<11}{'size':>8} {'mode':<9}{'unit':>6} |{'kiwi':>9}{'TCP':>9} |"
                    f"{'kiwi/TCP':>9}")
    for test, size, mode in keys:
        k = cell_value(summary, ("kiwi", test, size, mode))
        t = cell_value(summary, ("tcp", test, size, mode))
        unit = cell_unit(cells, (test, size, mode))
        lines.append(f"{test:<11}{size:>8} {mode:<9}{unit:>6} | {fmt(k)} {fmt(t)} |"
                     f"{rfmt(ratio(k, t))}")
    return "\n".join(lines) + "\n"


def heading(titles, columns):
    """A table's first lines: a blank line, its titles, its column heads
    and a rule as long as they are."""
    return [""] + titles + [columns, "-" * len(columns)]


def rfmt(r, width=9):
    return f"{r:{width}.2f}" if r is not None else f"{'-':>{width}}"


def variant_table(cells, summary, tr, titles, name):
    """kiwi loaded with other parameters (transport @tr, column @name)
    against kiwi as loaded by default, per bandwidth and latency cell, and
    against TCP; empty without @tr rows."""
    keys = sorted({k[1:] for k in cells if k[0] == tr and not is_extra(k[1])},
                  key=lambda k: (k[0], k[1], k[2]))
    if not keys:
        return ""
    lines = heading(titles, f"{'test':<10}{'size':>8} {'mode':<6}|{'kiwi':>9}{name:>9}"
                    f"{'TCP':>9} |{name + '/kiwi':>13}{name + '/TCP':>13}")
    for test, size, mode in keys:
        k = cell_value(summary, ("kiwi", test, size, mode))
        c = cell_value(summary, (tr, test, size, mode))
        t = cell_value(summary, *tcp_reference(test, size, mode))
        lines.append(f"{test:<10}{size:>8} {mode:<6}| {fmt(k)} {fmt(c)} {fmt(t)} |"
                     f"{rfmt(ratio(c, k), 13)}{rfmt(ratio(c, t), 13)}")
    return "\n".join(lines) + "\n"


def crc_table(cells, summary):
    """kiwi with the MPA CRC (kiwi_crc) against kiwi without."""
    return variant_table(cells, summary, "kiwi_crc", [
        "MPA CRC: kiwi with crc_required=1 (both ends send and check the CRC)"
        " against kiwi without; bandwidth in MiB/s, latency in us"], "CRC")


def fpdu_table(cells, summary):
    """kiwi with one-segment FPDUs (kiwi_mss) against kiwi's default."""
    return variant_table(cells, summary, "kiwi_mss", [
        "FPDU size: kiwi with fpdu_segs=1 (one TCP segment per FPDU, as toward a"
        " peer that did not agree to large FPDUs) against kiwi's default (FPDUs of"
        " up to 64 KiB between kiwis); MiB/s"], "MSS")


def scale_table(cells, summary):
    """Aggregate bandwidth with N QPs (one process) and N processes, kiwi
    against siw and TCP, and kiwi against its own N = 1."""
    keys = sorted({k[1:] for k in cells if k[1].startswith("scale_")},
                  key=lambda k: (k[0], k[1], int(k[2])))
    if not keys:
        return ""
    lines = heading(["scaling: aggregate MiB/s over N QPs (scale_qp: one process, perftest -q;"
                     " TCP: iperf3 -P) and N processes (scale_proc, one QP each; TCP: N iperf3)",
                     f"aim: kiwi's aggregate with N >= {SCALE_MIN_ONE:.1f}x its aggregate with 1"],
                    f"{'test':<11}{'N':>3} |{'kiwi':>9}{'siw':>9}{'TCP':>9} |"
                    f"{'kiwi/siw':>9}{'kiwi/TCP':>9}{'kiwi/N=1':>9} | aim")
    met = judged = 0
    for test, size, mode in keys:
        v = {t: cell_value(summary, (t, test, size, mode)) for t in ("kiwi", "siw", "tcp")}
        one = cell_value(summary, ("kiwi", test, size, "1"))
        r1 = scale_ratio(summary, (test, size, mode))
        if mode == "1":
            verdict = "base"
        elif r1 is None:
            verdict = "MISSING" if v["kiwi"] == "missing" or one == "missing" else "n/a"
        else:
            judged += 1
            met += r1 >= SCALE_MIN_ONE
            verdict = "met" if r1 >= SCALE_MIN_ONE else "MISSED"
        lines.append(f"{test:<11}{mode:>3} |" + "".join(" " + fmt(v[t]) for t in v)
                     + f" |{rfmt(ratio(v['kiwi'], v['siw']))}{rfmt(ratio(v['kiwi'], v['tcp']))}"
                     f"{rfmt(r1)} | {verdict}")
    lines.append("")
    lines.append(f"kiwi meets its scaling aim in {met} of {judged} cells with data")
    return "\n".join(lines) + "\n"


def cpu_table(cells, summary):
    """CPU seconds per GiB moved: RDMA cpu_* cells against TCP's."""
    keys = sorted({k[1:] for k in cells if k[1].startswith("cpu_")})
    if not keys:
        return ""
    lines = heading(["CPU time per GiB moved (all CPUs, both ends, user and kernel; lower is"
                     " better): ib_send_bw -e 64 KiB against an iperf3 stream"],
                    f"{'test':<10}{'size':>8} {'mode':<6}|{'kiwi':>9}{'kiwi+CRC':>9}{'kiwi big':>9}"
                    f"{'siw':>9}"
                    f"{'TCP':>9} |{'kiwi/siw':>9}{'kiwi/TCP':>9}")
    for test, size, mode in keys:
        v = [cell_value(summary, (t, test, size, mode))
             for t in ("kiwi", "kiwi_crc", "kiwi_mss", "siw")]
        t = cell_value(summary, ("tcp", "tcp_cpu", size, mode))
        lines.append(f"{test:<10}{size:>8} {mode:<6}|" + "".join(" " + fmt(x) for x in v + [t])
                     + f" |{rfmt(ratio(v[0], v[3]))}{rfmt(ratio(v[0], t))}")
    return "\n".join(lines) + "\n"


def cq_cpu_table(path):
    """Each CPU's share of kiwi's completions and completion handlers per
    cell, summed over its runs, from cq_cpus.csv (run.sh, storage.sh)
    beside the raw runs."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError:
        return ""
    cells = {}
    for r in rows:
        if r["transport"] != "kiwi":
            continue
        if not (r["test"].startswith(("scale_", "cpu_", "nvme_"))):
            continue
        key = (r["test"], int(r["size"]), r["mode"])
        per = cells.setdefault(key, {})
        c = per.setdefault(int(r["cpu"]), [0, 0, 0])
        for i, name in enumerate(("cqes", "handlers", "remote")):
            c[i] += int(r[name])
    if not cells:
        return ""
    lines = heading(["kiwi's completion work per CPU (debugfs cq_cpus, summed over the runs):"
                     " completions made there, handlers run there (from another CPU)"],
                    f"{'test':<14}{'size':>8} {'mode':<7}| per CPU: completions % / handlers (remote)")
    for key in sorted(cells):
        per = cells[key]
        total = sum(c[0] for c in per.values()) or 1
        parts = [f"cpu{cpu} {100.0 * c[0] / total:5.1f}% / {c[1]} ({c[2]})"
                 for cpu, c in sorted(per.items())]
        lines.append(f"{key[0]:<14}{key[1]:>8} {key[2]:<7}| " + "  ".join(parts))
    return "\n".join(lines) + "\n"


def median_of(summary, key):
    """The cell's median, or None where it has none."""
    v = cell_value(summary, key)
    return v if isinstance(v, float) else None


def why_latency(r, summary):
    """Why a missed latency cell is missed: each aim as an absolute time,
    set against the time of TCP itself on this path (its polling
    ping-pong, the shortest TCP has), which both devices ride."""
    k, siw, tcp = (r["vals"][t] for t in ("kiwi", "siw", "tcp"))
    a_siw, a_tcp = aims(r["test"], r["size"])
    what = "round trip" if r["test"] == "read_lat" else "one-way time"
    ref, factor = tcp_reference(r["test"], r["size"], "poll")
    floor = median_of(summary, ref)
    out = []
    if isinstance(siw, float) and not meets(ratio(k, siw), a_siw):
        goal = a_siw[1] * siw
        if floor is not None and goal < floor * factor:
            out.append(f"{a_siw[1]:.1f}x siw is {goal:.1f} us, below TCP's own {what} on"
                       f" this path ({floor * factor:.1f} us, polling), which kiwi and siw"
                       " both ride: no device on this TCP can meet it")
        elif r["mode"] != "poll" and isinstance(tcp, float) and goal < tcp <= k:
            out.append(f"{a_siw[1]:.1f}x siw is {goal:.1f} us, below TCP's own {what} with a"
                       f" blocking reader ({tcp:.1f} us), which pays the wake-up a completion"
                       " event does")
        else:
            out.append(f"{a_siw[1]:.1f}x siw ({goal:.1f} us) takes {k - goal:.1f} us off"
                       " kiwi's time")
    if a_tcp and isinstance(tcp, float) and not meets(ratio(k, tcp), a_tcp):
        out.append(f"kiwi's own steps (post, framing, placement, completion, poll) add"
                   f" {k - tcp:.1f} us to TCP's {tcp:.1f}; {a_tcp[1]:.1f}x TCP takes"
                   f" {k - a_tcp[1] * tcp:.1f} us off them (make bench-profile times each step)")
    return out


def why_small(r, summary):
    """Why a missed 4 KiB cell (aim against siw) is missed: the time each
    message takes, and what completion events add to it."""
    test, size, mode = r["test"], r["size"], r["mode"]
    k, siw = r["vals"]["kiwi"], r["vals"]["siw"]

    def per(bw):
        """Microseconds per message at @bw MiB/s."""
        return size / 1.048576 / bw

    out = [f"kiwi takes {per(k):.1f} us a message, siw {per(siw):.1f};"
           f" {BW_MIN_SIW:.0f}x siw takes {per(k) - per(siw) / BW_MIN_SIW:.1f} us off kiwi's"]
    poll = median_of(summary, ("kiwi", test, size, "poll"))
    if mode != "poll" and poll is not None:
        out.append(f"polling, kiwi takes {per(poll):.1f} us: completion events add"
                   f" {per(k) - per(poll):.1f} us a message")
    return out


def why_stream(missed, summary):
    """One paragraph for the missed 64 KiB and 1 MiB cells, whose aim is
    against TCP's stream: each cell's ratio, with one-segment FPDUs too, and
    the CPU time per GiB they all share."""
    cellnames = []
    for r in missed:
        tcp = r["vals"]["tcp"]
        mss = median_of(summary, ("kiwi_mss", r["test"], r["size"], r["mode"]))
        more = f", {mss / tcp:.2f}x with one-segment FPDUs" if mss is not None else ""
        cellnames.append(f"{r['test']} {r['size']} {r['mode']} ({r['ratios'][2]:.2f}x{more})")
    out = [", ".join(cellnames) + " of TCP's stream"]
    cpu = [median_of(summary, key) for key in (
        ("kiwi", "cpu_send", 65536, "event"), ("kiwi_mss", "cpu_send", 65536, "event"),
        ("tcp", "tcp_cpu", 65536, "event"))]
    if cpu[0] is not None and cpu[2]:
        more = (f" ({cpu[1] / cpu[2]:.1f}x with one-segment FPDUs)"
                if cpu[1] is not None else "")
        out.append(f"kiwi spends {cpu[0] / cpu[2]:.1f}x TCP's CPU time per GiB"
                   f" (cpu_send){more}: framing, placement and completions on top of"
                   " the two copies TCP makes too")
    out.append("make bench-profile (PROF_TESTS=\"write_bw send_bw\" PROF_SIZE=65536)"
               " shows where the rest goes")
    return out


# The RDMA cell whose bytes a storage cell moves: NVMe, NFS and SMB reads
# come back as RDMA Writes from the target, writes are RDMA Reads by it.
STORAGE_CARRIER = {"nvme_read": "write_bw", "nfs_read": "write_bw", "smb_read": "write_bw",
                   "nvme_write": "read_bw", "nfs_write": "read_bw", "smb_write": "read_bw"}


def why_storage(test, summary):
    """What a missed storage cell rides on, with that cell's ratio to TCP."""
    if test == "nvme_randread":
        k = median_of(summary, ("kiwi", "send_lat", 8, "poll"))
        t = median_of(summary, ("tcp", "tcp_lat", 8, "poll"))
        if k is None or not t:
            return ["this run has no 8-byte Send row to compare"]
        return [f"each 4 KiB read is a command Send, a data Write and a response Send; kiwi's"
                f" 8-byte Send takes {k / t:.2f}x TCP's one-way time in this run, and both"
                " CPUs serve fio, the target and both TCP stacks"]
    carrier = STORAGE_CARRIER.get(test)
    k = median_of(summary, ("kiwi", carrier, 65536, "poll"))
    t = median_of(summary, ("tcp", "tcp_bw", 65536, "any"))
    if k is None or not t:
        return [f"this run has no 64 KiB {carrier} row to compare"]
    return [f"its data moves as RDMA {'Writes' if carrier == 'write_bw' else 'Reads'}; kiwi's"
            f" 64 KiB {carrier} is {k / t:.2f}x TCP's stream in this run (see its row)"]


def run_range(cells, key):
    """(lowest, highest) of a cell's good runs, or None."""
    values = [float(r["value"]) for r in cells.get(key, []) if r["status"] == "ok"]
    return (min(values), max(values)) if values else None


def why_scale(test, n, cells, summary):
    """A missed scaling cell: kiwi's and TCP's aggregate against their N = 1,
    and whether kiwi's runs with N and with 1 overlap."""
    out = []
    for tr, name in (("kiwi", "kiwi"), ("tcp", "TCP")):
        one = median_of(summary, (tr, test, 65536, "1"))
        v = median_of(summary, (tr, test, 65536, n))
        if one and v is not None:
            out.append(f"{name} with {n} at {v / one:.2f}x its aggregate with 1")
    rn = run_range(cells, ("kiwi", test, 65536, n))
    r1 = run_range(cells, ("kiwi", test, 65536, "1"))
    if rn and r1:
        spread = (f"kiwi's runs moved {rn[0]:.0f}-{rn[1]:.0f} MiB/s with {n}, {r1[0]:.0f}-{r1[1]:.0f}"
                  " with 1")
        if rn[1] >= r1[0]:
            spread += (": the ranges overlap, the fall is within the runs' spread; longer runs"
                       " (BENCH_BW_MB) would tell")
        out.append(spread)
    return out


def why_table(rows, cells, summary):
    """For each missed aim, the measured reason and what it would take."""
    lines = []
    stream = [r for r in rows if r["verdict"] == "MISSED" and r["bw"] and r["size"] > 4096]
    for r in rows:
        if r["verdict"] != "MISSED" or r in stream:
            continue
        why = why_small(r, summary) if r["bw"] else why_latency(r, summary)
        lines.append(f"{r['test']} {r['size']} {r['mode']}: " + "; ".join(why) + ".")
    if stream:
        lines.append("; ".join(why_stream(stream, summary)) + ".")
    for key in sorted({k[1:] for k in cells if is_storage(k[1])}):
        r = storage_ratio(summary, key)
        if r is not None and r < STORAGE_MIN_TCP:
            lines.append("%s %d %s: " % key + "; ".join(why_storage(key[0], summary)) + ".")
    for key in sorted({k[1:] for k in cells if k[1].startswith("scale_")}):
        r = scale_ratio(summary, key)
        if key[2] != "1" and r is not None and r < SCALE_MIN_ONE:
            lines.append("%s %s: " % (key[0], key[2])
                         + "; ".join(why_scale(key[0], key[2], cells, summary)) + ".")
    if not lines:
        return ""
    text = ["", "why each aim is missed, from this run's own numbers, and what it would take:"]
    text += [textwrap.fill(line, 100, subsequent_indent="    ") for line in lines]
    return "\n".join(text) + "\n"


def write_medians(path, cells, summary):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["transport", "test", "size", "mode", "runs", "runs_ok",
                    "median", "unit", "state"])
        for key in sorted(cells):
            state, median, ok = summary[key]
            w.writerow(list(key) + [len(cells[key]), ok,
                                    "" if median is None else f"{median:.2f}",
                                    cells[key][0]["unit"], state])


def plot(path, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [[r for r in rows if r["bw"]], [r for r in rows if not r["bw"]]]
    fig, axes = plt.subplots(2, 1, figsize=(14, 9),
                             gridspec_kw={"height_ratios": [3, 2]})
    width = 0.2
    for ax, group, unit in zip(axes, groups, ("MiB/s (log)", "us (log)")):
        for i, t in enumerate(TRANSPORTS):
            xs = [j + (i - 1.5) * width for j in range(len(group))]
            ys = [r["vals"][t] if isinstance(r["vals"][t], float) else 0 for r in group]
            ax.bar(xs, ys, width, label="TCP" if t == "tcp" else t)
        ax.set_xticks(range(len(group)))
        ax.set_xticklabels([f"{r['test']}\n{r['size']} {r['mode']}" for r in group],
                           fontsize=7)
        ax.set_ylabel(unit)
        ax.set_yscale("log")
        if group is groups[0]:
            ax.set_title("bandwidth (higher is better)")
        else:
            ax.set_title("latency, 8 B (lower is better)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv):
    args = [a for a in argv[1:] if a != "--no-plot"]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    raw, outdir = args
    cells = load(raw)
    summary, rows, missing = build(cells)
    runs = max((len(v) for v in cells.values()), default=0)
    text = (table(rows, runs) + spread_table(rows, cells)
            + storage_table(cells, summary) + program_table(cells, summary)
            + crc_table(cells, summary)
            + fpdu_table(cells, summary) + scale_table(cells, summary) + cpu_table(cells, summary)
            + cq_cpu_table(os.path.join(os.path.dirname(raw), "cq_cpus.csv"))
            + why_table(rows, cells, summary))
    if missing:
        text += "missing (a run failed or timed out): " + ", ".join(missing) + "\n"
    print(text, end="")
    with open(f"{outdir}/ratios.txt", "w") as f:
        f.write(text)
    write_medians(f"{outdir}/medians.csv", cells, summary)
    if "--no-plot" not in argv:
        try:
            plot(f"{outdir}/bench.png", rows)
        except ImportError:
            print("report: no matplotlib for this python3: no plot"
                  " (apt-get install python3-matplotlib)", file=sys.stderr)
            return 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
