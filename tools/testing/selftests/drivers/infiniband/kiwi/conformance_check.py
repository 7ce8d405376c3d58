#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check kiwi's RDMA Verbs conformance table against the checklist.

Documentation/infiniband/kiwi-conformance.rst has one row per item of
shared/spec/digest-verbs.md (IDs V-...), each TESTED, REASON, PENDING(area)
or UNTESTED. This host test (no VM) prints TAP and fails when an ID of the
checklist has no row, a row names an ID the checklist lacks or repeats one,
a row has no test or reason, a cited file ("``FILE: "POINT"``") is missing
or does not contain its point, or the summary disagrees with the table.
PENDING and UNTESTED rows are "# pending" notes, and fail only in final
mode (--final, or KIWI_CONFORMANCE=final).

  conformance_check.py [--final] [--digest PATH] [--table PATH]
  conformance_check.py --summary     print the summary block for the table
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("KIWI_ROOT") or os.path.normpath(os.path.join(HERE, "../../../../../.."))
TABLE = os.path.join(ROOT, "Documentation/infiniband/kiwi-conformance.rst")
AREAS = ("srq", "mw", "rereg", "qpsm")
KINDS = ("TESTED", "REASON", "PENDING", "UNTESTED")

ID_RE = re.compile(r"\*\*(V-[A-Z0-9]+-[A-Z0-9]+)\*\*")
ROW_RE = re.compile(r"^   \* - (V-\S+)\s*$")
CITE_RE = re.compile(r'``([^`\s:]+): "([^"`]+)"``')
STATUS_RE = re.compile(r"^(TESTED|REASON|UNTESTED|PENDING\((\w+)\))$")


class Tap:
    """TAP test points, numbered, with '# ' comments for details."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def point(self, ok, desc, details=()):
        self.n += 1
        if not ok:
            self.failed += 1
        print("%sok %d - conformance: %s" % ("" if ok else "not ", self.n, desc))
        for line in list(details)[:40]:
            print("#   %s" % line)
        if len(details) > 40:
            print("#   ... and %d more" % (len(details) - 40))

    def end(self):
        print("1..%d" % self.n)
        return 1 if self.failed else 0


def find_digest(arg):
    """The checklist: --digest, $KIWI_DIGEST, or shared/spec beside the tree."""
    for path in (arg, os.environ.get("KIWI_DIGEST"),
                 os.path.join(ROOT, "../shared/spec/digest-verbs.md"),
                 "/work/shared/spec/digest-verbs.md"):
        if path and os.path.isfile(path):
            return path
    return None


def digest_ids(path):
    """IDs in the order the checklist defines them ("- [ ] **V-AREA-N** ...")."""
    ids = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("- [ ]"):
                m = ID_RE.search(line)
                if m:
                    ids.append(m.group(1))
    return ids


def parse_table(path):
    """Rows of every list-table: (line number, ID, status, text)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = ROW_RE.match(lines[i])
        if not m:
            i += 1
            continue
        start, rid = i + 1, m.group(1)
        i += 1
        cells = []
        while i < len(lines) and not ROW_RE.match(lines[i]) and lines[i].strip():
            if lines[i].startswith("     - "):
                cells.append(lines[i][7:].strip())
            elif lines[i].startswith("       ") and cells:
                cells[-1] += " " + lines[i].strip()
            else:
                break
            i += 1
        status = cells[0] if cells else ""
        text = cells[1] if len(cells) > 1 else ""
        rows.append((start, rid, status, text))
    return rows


def kind(status):
    m = STATUS_RE.match(status)
    if not m:
        return None, None
    return ("PENDING" if m.group(2) else m.group(1)), m.group(2)


def resolve(name):
    """A cited file: under the kiwi selftests, else from the top of the tree."""
    for base in (HERE, ROOT):
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            return path
    return None


def summary(rows):
    """The summary block the table's "Summary" section must hold."""
    count = {k: 0 for k in KINDS}
    areas = {a: 0 for a in AREAS}
    untested = []
    for _, rid, status, _ in rows:
        k, area = kind(status)
        if k:
            count[k] += 1
        if area in areas:
            areas[area] += 1
        if k == "UNTESTED":
            untested.append(rid)
    out = ["==========  =====", "Status      Items", "==========  ====="]
    out += ["%-10s  %d" % (k, count[k]) for k in KINDS]
    out += ["%-10s  %d" % ("Total", len(rows)), "==========  =====", ""]
    out.append("PENDING by area: " +
               ", ".join("``%s`` %d" % (a, areas[a]) for a in AREAS) + ".")
    out.append("")
    if not untested:
        out.append("UNTESTED items: none.")
        return out
    out.append("UNTESTED items (%d), each row says which test is missing:" %
               len(untested))
    out.append("")
    line = ""
    for i, rid in enumerate(untested):
        word = "``%s``%s" % (rid, "," if i + 1 < len(untested) else ".")
        if line and len(line) + 1 + len(word) > 72:
            out.append(line)
            line = word
        else:
            line = (line + " " + word) if line else word
    out.append(line)
    return out


def table_summary(path):
    """The lines between "Summary" and the next heading, blank ends trimmed."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    try:
        i = lines.index("Summary") + 2
    except ValueError:
        return []
    out = []
    while i + 1 < len(lines) and not re.match(r"^[-=]{4,}$", lines[i + 1]):
        out.append(lines[i])
        i += 1
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--final", action="store_true",
                    help="PENDING and UNTESTED rows fail")
    ap.add_argument("--digest", help="path of digest-verbs.md")
    ap.add_argument("--table", default=TABLE, help="path of the table")
    ap.add_argument("--summary", action="store_true",
                    help="print the summary block and exit")
    args = ap.parse_args()
    final = args.final or os.environ.get("KIWI_CONFORMANCE") == "final"

    rows = parse_table(args.table)
    if args.summary:
        print("\n".join(summary(rows)))
        return 0

    tap = Tap()
    print("TAP version 13")
    print("# conformance_check.py: %s%s" % (os.path.relpath(args.table, ROOT),
                                          ", final" if final else ""))
    tap.point(len(rows) > 0, "the table parses (%d rows)" % len(rows))

    digest = find_digest(args.digest)
    if digest:
        ids = digest_ids(digest)
        have = [r[1] for r in rows]
        missing = [i for i in ids if i not in have]
        extra = [i for i in have if i not in ids]
        dup = sorted({i for i in have if have.count(i) > 1})
        tap.point(bool(ids) and not missing,
                  "every ID of digest-verbs.md (%d) has a row" % len(ids),
                  ["no row: %s" % i for i in missing])
        tap.point(not extra, "every row names an ID of digest-verbs.md",
                  ["not in the digest: %s" % i for i in extra])
        tap.point(not dup, "no ID has two rows",
                  ["two rows: %s" % i for i in dup])
    elif final:
        tap.point(False, "digest-verbs.md found (--digest or KIWI_DIGEST)")
    else:
        print("ok %d - conformance: the table covers digest-verbs.md "
              "# SKIP digest-verbs.md not found (--digest or KIWI_DIGEST)"
              % (tap.n + 1))
        tap.n += 1

    bad, nofile, nopoint = [], [], []
    sources = {}
    for line, rid, status, text in rows:
        k, area = kind(status)
        cites = CITE_RE.findall(text)
        if not k:
            bad.append("line %d %s: status '%s'" % (line, rid, status))
        elif area is not None and area not in AREAS:
            bad.append("line %d %s: unknown area '%s'" % (line, rid, area))
        elif k == "TESTED" and not cites:
            bad.append("line %d %s: TESTED without a cited test" % (line, rid))
        elif len(CITE_RE.sub("", text).strip(" .;,()")) < 10 and not cites:
            bad.append("line %d %s: no test and no reason" % (line, rid))
        for name, point in cites:
            path = resolve(name)
            if not path:
                nofile.append("%s: %s does not exist" % (rid, name))
                continue
            if path not in sources:
                with open(path, encoding="utf-8", errors="replace") as f:
                    sources[path] = f.read()
            if point not in sources[path]:
                nopoint.append('%s: "%s" is not in %s' % (rid, point, name))
    tap.point(not bad, "every row has a valid status and a test or a reason", bad)
    tap.point(not nofile, "every cited script or program exists", nofile)
    tap.point(not nopoint, "every cited test point is in its source", nopoint)

    want, got = summary(rows), table_summary(args.table)
    diff = ["want: %s" % w for w in want if w not in got]
    tap.point(want == got, "the summary matches the table "
              "(conformance_check.py --summary prints it)", diff)

    open_rows = [(rid, status) for _, rid, status, _ in rows
                 if kind(status)[0] in ("PENDING", "UNTESTED")]
    if final:
        for k in ("PENDING", "UNTESTED"):
            left = [r for r, s in open_rows if kind(s)[0] == k]
            tap.point(not left, "no row is %s" % k, left)
    else:
        for rid, status in open_rows:
            print("# pending: %s %s" % (rid, status))
        print("# %d rows PENDING or UNTESTED: they fail with --final" %
              len(open_rows))
    return tap.end()


if __name__ == "__main__":
    sys.exit(main())
