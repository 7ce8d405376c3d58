#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The steps of a round trip in an ftrace function trace.

    stages.py TRACE [N]

TRACE is the text of /sys/kernel/tracing/trace with the function tracer
on a few functions along the path (tools/bench/profile.sh). Each pair of
consecutive entries, whichever CPU made them, is a step from the first
function to the second; prints the N steps (default 14) that took the most
time in all, each with how often it came and its median length in
microseconds. Steps that came less than a tenth as often as the commonest
(the start, the end, a timer now and then) are left out.
"""
import collections
import re
import statistics
import sys

LINE = re.compile(r"\s*\S+-\d+\s+\[\d+\]\s+\S+\s+([\d.]+):\s+(\S+)")


def steps(path):
    """Map (from, to) to the list of that step's lengths in microseconds."""
    entries = []
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if m and not line.startswith("#"):
                entries.append((float(m.group(1)) * 1e6, m.group(2)))
    out = collections.defaultdict(list)
    for (t0, f0), (t1, f1) in zip(entries, entries[1:]):
        out[(f0, f1)].append(t1 - t0)
    return out


def main():
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 14
    found = steps(sys.argv[1])
    if not found:
        sys.exit("stages.py: no trace entries in " + sys.argv[1])
    most = max(len(v) for v in found.values())
    found = {k: v for k, v in found.items() if len(v) * 10 >= most}
    print(f"{'from':>24} -> {'to':<24} {'count':>7} {'median us':>10}")
    for (f0, f1), v in sorted(found.items(), key=lambda kv: -sum(kv[1]))[:n]:
        print(f"{f0[:24]:>24} -> {f1[:24]:<24} {len(v):7d} {statistics.median(v):10.1f}")


if __name__ == "__main__":
    main()
