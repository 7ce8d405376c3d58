#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check an iWARP capture with Wireshark's own dissectors.

    iwarp_check.py CAPTURE --run NAME CRC KIWI [segs=N] [large=on|off]
                   PORT:KIND:ITERS:SIZE... [--run ...]

tshark decodes CAPTURE with its iwarp_mpa (heuristic, on by default) and
iwarp_ddp_rdmap dissectors; iwarp_dump.lua prints the decoded fields and
tshark's expert summary follows. The checks below run on that decode, each
printed as one TAP line ("ok - ..." or "not ok - ...") with "# " details.
The exit status is 1 when any check failed.

A run is the part of the capture made by one configuration: the
connections to the server PORTs it names. CRC (on or off) is what its MPA
exchange must negotiate; KIWI (client, server, both or none) names the ends
that are kiwi, whose non-last DDP segments must fill the EMSS and whose pad
and unused CRC fields must be zero. large=on: every connection's MPA
Request and Reply both carry the large-FPDU flag (0x08, the upstream siw's
GSO_EXP bit), and on such a connection FPDUs may span several segments:
kiwi's fill segs=N times the EMSS (its fpdu_segs, default 64; to the 16-bit
ULPDU_Length's limit), which no FPDU may exceed. large=off (the default): no
connection agreed, and every FPDU fits the EMSS. A Reply carries the flag
only when its Request did. KIND is the tool that ran on PORT:
rping (rping -V -C ITERS -S SIZE), write, read or send (ib_<KIND>_bw -R -n
ITERS -s SIZE); it gives the bytes the DDP headers must account for.

FPDU sizes are checked from the MPA length fields against the EMSS the SYN
options give (MSS less the timestamp option), not from TCP segment sizes:
with TSO/GSO on the veth the capture holds segments of up to 64 KiB.
Segments can reach the capture out of order: the veth hands each sender
CPU's packets to that CPU's backlog, so a socket transmitting from both
process context and softirq can overtake itself. tshark is told to
reassemble out-of-order segments, and its "not captured" warnings are
notes; a segment really missing from the capture leaves bytes no decoded
frame covers, and the framing check fails.

Two behaviours of Wireshark 4.0 are not kiwi's and are allowed here:
  * iwarp_mpa knows only RFC 5044, so an MPA revision 2 Request (RFC 6581)
    draws the warnings "Rev field is NOT set to one" and "Res field is NOT
    set to zero" (the enhanced-mode bit, and the large-FPDU bit); the
    upstream siw's Requests draw the same. They are accepted only when
    every Request is revision 2 with no reserved bit but those two.
  * the rpcordma and smb_direct heuristics claim RDMA Send payloads that
    are neither (perftest's and rping's own messages) and call them
    malformed: they are disabled for the decode.
"""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DUMP_LUA = os.path.join(HERE, "iwarp_dump.lua")

OP_WRITE, OP_READ_REQ, OP_READ_RESP, OP_SEND = 0, 1, 2, 3
OP_SEND_INV, OP_SEND_SE, OP_SEND_SE_INV, OP_TERMINATE = 4, 5, 6, 7
OP_NAMES = {0: "RDMA Write", 1: "Read Request", 2: "Read Response",
            3: "Send", 4: "Send with Invalidate", 5: "Send with SE",
            6: "Send with SE and Invalidate", 7: "Terminate"}
TAGGED_OPS = (OP_WRITE, OP_READ_RESP)
# RFC 5040 Fig. 4: the untagged queue each untagged opcode uses.
OP_QN = {OP_READ_REQ: 1, OP_SEND: 0, OP_SEND_INV: 0, OP_SEND_SE: 0,
         OP_SEND_SE_INV: 0, OP_TERMINATE: 2}
TAGGED_HDR, UNTAGGED_HDR, READ_REQ_HDR = 14, 18, 28
MPA_KEY_REQ = b"MPA ID Req Frame".hex()
MPA_KEY_REP = b"MPA ID Rep Frame".hex()
ENHANCED = 0x10         # RFC 6581 bit in the MPA Request/Reply flags
LARGE_FPDU = 0x08       # siw's GSO_EXP bit: FPDUs may span TCP segments
TCP_OPT_TIMESTAMP = 8
# What each tool's traffic must contain (RFC 5040 opcodes).
KIND_OPS = {"rping": {OP_SEND, OP_WRITE, OP_READ_REQ, OP_READ_RESP},
            "write": {OP_WRITE}, "read": {OP_READ_REQ, OP_READ_RESP},
            "send": {OP_SEND}}
# tshark's expert warnings that come from its RFC 5044-only MPA parser.
RFC6581_WARNINGS = ("Rev field is NOT set to one", "Res field is NOT set to zero")


def num(text):
    """The number in a displayed field: '1442 bytes', 'Write (0x0)', '0x10'."""
    m = re.search(r"\((0x[0-9a-fA-F]+|\d+)\)\s*$", text)
    tok = m.group(1) if m else text.split()[0]
    return int(tok, 16) if tok.lower().startswith("0x") else int(tok)


def flag(text):
    return text in ("True", "Set")


class Item:
    """One MPA Request, Reply or FPDU as the dissectors decoded it."""

    def __init__(self, frame, stream, src, seq):
        self.frame, self.stream, self.src, self.seq = frame, stream, src, seq
        self.kind = None        # "req", "rep" or "fpdu"
        self.f = {}             # field name -> displayed text

    def get(self, name, default=None):
        return self.f.get(name, default)

    @property
    def ulpdu(self):
        return num(self.f["iwarp_mpa.ulpdulength"])

    @property
    def pad(self):
        return (4 - (self.ulpdu + 2) % 4) % 4

    @property
    def wire_len(self):
        if self.kind == "fpdu":
            return 2 + self.ulpdu + self.pad + 4
        return 20 + num(self.f["iwarp_mpa.pdlength"])

    @property
    def opcode(self):
        return num(self.f["iwarp_rdma.opcode"])

    @property
    def tagged(self):
        return flag(self.f["iwarp_ddp.tagged_flag"])

    @property
    def last(self):
        return flag(self.f["iwarp_ddp.last_flag"])

    @property
    def payload(self):
        hdr = TAGGED_HDR if self.tagged else UNTAGGED_HDR
        if self.opcode == OP_READ_REQ:
            hdr += READ_REQ_HDR
        return self.ulpdu - hdr

    def where(self):
        return "frame %d" % self.frame


class Stream:
    """One TCP connection: who opened it and what each side sent."""

    def __init__(self, sid):
        self.sid = sid
        self.client = self.server = None       # ports
        self.mss = {}                          # port -> MSS option
        self.ts = {}                           # port -> timestamps on SYN
        self.end = {}                          # port -> highest seq + len
        self.fin = {}                          # port -> first FIN frame
        self.rst = {}
        self.items = []

    def side(self, port):
        return "client" if port == self.client else "server"

    def name(self):
        return "connection %d (%s -> %s)" % (self.sid, self.client, self.server)

    def fpdus(self, port=None):
        return [i for i in self.items if i.kind == "fpdu" and
                (port is None or i.src == port)]

    def emss(self):
        """RFC 5044 EMSS: the negotiated MSS less the TCP options sent."""
        if len(self.mss) < 2:
            return None
        opts = 12 if all(self.ts.values()) and len(self.ts) == 2 else 0
        return min(self.mss.values()) - opts


def run_tshark(capture, tshark):
    cmd = [tshark, "-r", capture, "-n", "-q",
           "-o", "tcp.reassemble_out_of_order:TRUE",
           "--disable-protocol", "rpcordma", "--disable-protocol", "smb_direct",
           "-X", "lua_script:" + DUMP_LUA, "-z", "expert"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, check=False)
    except OSError as e:
        return 1, "", "%s: %s" % (tshark, e)
    return p.returncode, p.stdout, p.stderr


def parse(text):
    """The dump's per-frame fields and tshark's expert summary rows."""
    streams, malformed, experts = {}, [], []
    frames = {}
    severity = None
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].isdigit():
            frames.setdefault(int(parts[0]), []).append((parts[1], parts[2]))
            continue
        m = re.match(r"^(Errors|Warns|Notes|Chats) \(\d+\)", line)
        if m:
            severity = m.group(1)
            continue
        m = re.match(r"^\s+(\d+)\s+(\S+)\s+(\S+)\s+(.*\S)\s*$", line)
        if m and severity:
            experts.append((severity, int(m.group(1)), m.group(2),
                            m.group(3), m.group(4)))

    for frame in sorted(frames):
        tcp, kinds, cur = {}, [], None
        items = []
        for name, shown in frames[frame]:
            if name.startswith("tcp."):
                if name == "tcp.option_kind":
                    kinds.append(num(shown))
                else:
                    tcp.setdefault(name, shown)
            elif name == "_ws.malformed":
                malformed.append(frame)
            elif name == "iwarp_mpa":
                cur = Item(frame, None, None, None)
                items.append(cur)
            elif name in ("iwarp_mpa.req", "iwarp_mpa.rep", "iwarp_mpa.fpdu"):
                if cur is not None:
                    cur.kind = name.split(".")[1]
            elif name.startswith("iwarp") and cur is not None:
                cur.f.setdefault(name, shown)
        if "tcp.stream" not in tcp:
            continue
        st = streams.setdefault(num(tcp["tcp.stream"]), Stream(num(tcp["tcp.stream"])))
        src, dst = num(tcp["tcp.srcport"]), num(tcp["tcp.dstport"])
        seq, length = num(tcp["tcp.seq"]), num(tcp["tcp.len"])
        if flag(tcp.get("tcp.flags.syn", "")):
            if not flag(tcp.get("tcp.flags.ack", "")):
                st.client, st.server = src, dst
            if "tcp.options.mss_val" in tcp:
                st.mss[src] = num(tcp["tcp.options.mss_val"])
            st.ts[src] = TCP_OPT_TIMESTAMP in kinds
        if length:
            st.end[src] = max(st.end.get(src, 0), seq + length)
        if flag(tcp.get("tcp.flags.fin", "")):
            st.fin.setdefault(src, frame)
        if flag(tcp.get("tcp.flags.reset", "")):
            st.rst.setdefault(src, frame)
        for it in items:
            it.stream, it.src, it.seq = st.sid, src, seq
            st.items.append(it)
        if st.client is None and any(i.kind == "req" for i in items):
            st.client, st.server = src, dst
    return streams, malformed, experts


class Report:
    def __init__(self):
        self.failed = 0

    def point(self, ok, desc, details=()):
        print("%s - %s" % ("ok" if ok else "not ok", desc))
        for d in details[:40]:
            print("# " + d)
        if len(details) > 40:
            print("# ... %d more" % (len(details) - 40))
        if not ok:
            self.failed += 1


def decode_v2(pdata):
    """RFC 6581 IRD/ORD words at the start of the private data."""
    raw = bytes.fromhex(pdata)
    ird, ordw = int.from_bytes(raw[0:2], "big"), int.from_bytes(raw[2:4], "big")
    rtr = set()
    if ird & 0x4000:
        rtr.add("send")
    if ordw & 0x8000:
        rtr.add("write")
    if ordw & 0x4000:
        rtr.add("read")
    return {"p2p": bool(ird & 0x8000), "ird": ird & 0x3fff,
            "ord": ordw & 0x3fff, "rtr": rtr}


def check_handshake(st, crc, large, kiwi_client):
    """MPA Request and Reply of one connection. Returns (errors, v2, text);
    sets st.large to whether both frames offered large FPDUs. kiwi offers
    peer-to-peer RTR messages when it connects; siw does not by default."""
    errs = []
    reqs = [i for i in st.items if i.kind == "req"]
    reps = [i for i in st.items if i.kind == "rep"]
    if len(reqs) != 1 or len(reps) != 1:
        return ["%d MPA Requests and %d Replies decoded" % (len(reqs), len(reps))], None, ""
    req, rep = reqs[0], reps[0]
    v2 = {}
    for it, who, key, keyname in ((req, st.client, MPA_KEY_REQ, "iwarp_mpa.key.req"),
                                  (rep, st.server, MPA_KEY_REP, "iwarp_mpa.key.rep")):
        label = "Request" if it.kind == "req" else "Reply"
        if it.src != who or it.seq != 1:
            errs.append("%s is not the first byte its sender (%s) sent" % (label, it.src))
        if it.get(keyname, "").lower() != key:
            errs.append("%s key %s" % (label, it.get(keyname)))
        if flag(it.get("iwarp_mpa.marker_flag", "")):
            errs.append("%s asks for markers" % label)
        if it.kind == "req" and flag(it.get("iwarp_mpa.rej_flag", "")):
            errs.append("Request has the R flag")
        if it.kind == "rep" and flag(it.get("iwarp_mpa.rej_flag", "")):
            errs.append("Reply rejects the connection")
        rev = num(it.get("iwarp_mpa.rev", "0"))
        res = num(it.get("iwarp_mpa.res", "0"))
        if rev != 2 or res & ~LARGE_FPDU != ENHANCED:
            errs.append("%s revision %d reserved bits 0x%x (want 2, 0x10 or 0x18)" %
                        (label, rev, res))
        v2[it.kind + "_large"] = bool(res & LARGE_FPDU)
        pdata = it.get("iwarp_mpa.privatedata", "")
        pdlen = num(it.get("iwarp_mpa.pdlength", "0"))
        if pdlen != len(pdata) // 2 or pdlen < 4:
            errs.append("%s PD_Length %d, %d bytes of private data" % (label, pdlen, len(pdata) // 2))
            continue
        v2[it.kind] = decode_v2(pdata)
        v2[it.kind]["crc"] = flag(it.get("iwarp_mpa.crc_flag", ""))
    if errs:
        return errs, None, ""
    q, p = v2["req"], v2["rep"]
    st.large = v2["req_large"] and v2["rep_large"]
    if v2["rep_large"] and not v2["req_large"]:
        errs.append("Reply offers large FPDUs to a Request that did not")
    if st.large != large:
        errs.append("large FPDUs %sagreed (Request %s, Reply %s), %s expected" %
                    ("" if st.large else "not ", v2["req_large"], v2["rep_large"],
                     "on" if large else "off"))
    if (q["crc"] or p["crc"]) != crc:
        errs.append("CRC flags Request %s Reply %s, CRC %s expected" %
                    (q["crc"], p["crc"], "on" if crc else "off"))
    if kiwi_client and (not q["p2p"] or not q["rtr"]):
        errs.append("Request offers no peer-to-peer RTR")
    if len(p["rtr"]) > 1 or not p["rtr"] <= q["rtr"] or (p["p2p"] and not p["rtr"]):
        errs.append("Reply picks RTR %s of %s" % (sorted(p["rtr"]), sorted(q["rtr"])))
    text = ("Request C=%d L=%d IRD %d ORD %d RTR offered %s; "
            "Reply C=%d L=%d IRD %d ORD %d RTR %s" %
            (q["crc"], v2["req_large"], q["ird"], q["ord"], ",".join(sorted(q["rtr"])),
             p["crc"], v2["rep_large"], p["ird"], p["ord"],
             ",".join(sorted(p["rtr"])) or "none"))
    return errs, (next(iter(p["rtr"])) if p["p2p"] and p["rtr"] else None), text


def check_rtr(st, rtr):
    """RFC 6581: the initiator's first FPDU is the agreed zero-length
    message, and the responder sends nothing before it."""
    mine, theirs = st.fpdus(st.client), st.fpdus(st.server)
    if rtr is None:
        return []
    if not mine:
        return ["no FPDU from the initiator"]
    first = mine[0]
    want = {"write": (OP_WRITE, True), "send": (OP_SEND, False),
            "read": (OP_READ_REQ, False)}[rtr]
    errs = []
    if (first.opcode, first.tagged) != want or not first.last:
        errs.append("first FPDU is %s, not the %s RTR" % (OP_NAMES.get(first.opcode), rtr))
    elif rtr == "read" and num(first.get("iwarp_rdma.rdmardsz", "1")) != 0:
        errs.append("RTR Read Request asks for bytes")
    elif rtr != "read" and first.payload != 0:
        errs.append("RTR carries %d bytes" % first.payload)
    if theirs and theirs[0].frame <= first.frame:
        errs.append("responder sent an FPDU (frame %d) before the RTR (frame %d)" %
                    (theirs[0].frame, first.frame))
    return errs


class Flow:
    """The DDP messages of one direction of one connection."""

    def __init__(self):
        self.open_untagged = {}     # qn -> (msn, next mo, frames)
        self.next_msn = {0: 1, 1: 1, 2: 1}
        self.open_tagged = {}       # (opcode, stag) -> [first to, next to, bytes, segs]
        self.messages = []          # (opcode, bytes, segments, first item, extra)
        self.read_reqs = []         # Read Request items, in order


def walk_ddp(st, port, errs):
    """Reassemble one direction's DDP messages, checking the headers."""
    fl = Flow()
    for it in st.fpdus(port):
        if "iwarp_rdma.opcode" not in it.f or "iwarp_ddp.tagged_flag" not in it.f:
            errs.append("%s: FPDU without a decoded DDP/RDMAP header" % it.where())
            continue
        op, tagged, last = it.opcode, it.tagged, it.last
        if num(it.get("iwarp_ddp.dv", "0")) != 1 or num(it.get("iwarp_rdma.version", "0")) != 1:
            errs.append("%s: DDP/RDMAP version not 1" % it.where())
        if num(it.get("iwarp_ddp.rsvd", "0")) or num(it.get("iwarp_rdma.rsv", "0")):
            errs.append("%s: reserved DDP/RDMAP bits set" % it.where())
        if op not in OP_NAMES:
            errs.append("%s: unknown opcode %d" % (it.where(), op))
            continue
        if tagged != (op in TAGGED_OPS):
            errs.append("%s: %s with T=%d" % (it.where(), OP_NAMES[op], tagged))
            continue
        if it.payload < 0:
            errs.append("%s: ULPDU of %d bytes is shorter than its headers" % (it.where(), it.ulpdu))
            continue
        if tagged:
            stag = num(it.get("iwarp_ddp.stag"))
            to = num(it.get("iwarp_ddp.tagged_offset"))
            m = fl.open_tagged.get((op, stag))
            if m is None:
                m = fl.open_tagged[(op, stag)] = [to, to, 0, 0, it]
            elif to != m[1]:
                errs.append("%s: %s TO 0x%x, 0x%x expected" % (it.where(), OP_NAMES[op], to, m[1]))
            m[1] = to + it.payload
            m[2] += it.payload
            m[3] += 1
            if last:
                fl.messages.append((op, m[2], m[3], m[4], (stag, m[0])))
                del fl.open_tagged[(op, stag)]
            continue
        qn, msn, mo = (num(it.get("iwarp_ddp.qn")), num(it.get("iwarp_ddp.msn")),
                       num(it.get("iwarp_ddp.mo")))
        if qn != OP_QN[op]:
            errs.append("%s: %s on queue %d" % (it.where(), OP_NAMES[op], qn))
            continue
        m = fl.open_untagged.get(qn)
        if m is None:
            if msn != fl.next_msn[qn] or mo != 0:
                errs.append("%s: queue %d MSN %d MO %d, MSN %d MO 0 expected" %
                            (it.where(), qn, msn, mo, fl.next_msn[qn]))
            m = fl.open_untagged[qn] = [msn, mo, 0, 0, it]
            fl.next_msn[qn] = msn + 1
        elif msn != m[0] or mo != m[1]:
            errs.append("%s: queue %d MSN %d MO %d, MSN %d MO %d expected" %
                        (it.where(), qn, msn, mo, m[0], m[1]))
        m[1] = mo + it.payload
        m[2] += it.payload
        m[3] += 1
        if op == OP_READ_REQ:
            if it.ulpdu != UNTAGGED_HDR + READ_REQ_HDR or not last:
                errs.append("%s: Read Request of %d bytes, L=%d" % (it.where(), it.ulpdu, last))
            fl.read_reqs.append(it)
        if last:
            fl.messages.append((op, m[2], m[3], m[4], None))
            del fl.open_untagged[qn]
    for (op, stag), m in fl.open_tagged.items():
        errs.append("%s: %s to STag 0x%x never ends (no L flag)" % (m[4].where(), OP_NAMES[op], stag))
    for qn, m in fl.open_untagged.items():
        errs.append("%s: message MSN %d on queue %d never ends" % (m[4].where(), m[0], qn))
    return fl


def match_reads(requests, responses, errs, label):
    """Each Read Response answers the oldest open Read Request, in full."""
    resp = [m for m in responses.messages if m[0] == OP_READ_RESP]
    for i, rq in enumerate(requests.read_reqs):
        want = (num(rq.get("iwarp_rdma.sinkstag")), num(rq.get("iwarp_rdma.sinkto")),
                num(rq.get("iwarp_rdma.rdmardsz")))
        if i >= len(resp):
            errs.append("%s: Read Request %s has no Read Response" % (label, rq.where()))
            continue
        op, nbytes, segs, first, (stag, to) = resp[i]
        if (stag, to, nbytes) != want:
            errs.append("%s: Read Response %s STag 0x%x TO 0x%x %d bytes for Request %s "
                        "(0x%x 0x%x %d)" % (label, first.where(), stag, to, nbytes,
                                            rq.where(), *want))
        elif first.frame < rq.frame:
            errs.append("%s: Read Response %s precedes its Request" % (label, first.where()))
    if len(resp) > len(requests.read_reqs):
        errs.append("%s: %d Read Responses for %d Requests" %
                    (label, len(resp), len(requests.read_reqs)))


class Run:
    """One part of the capture: the connections to some server ports."""

    def __init__(self, words):
        self.segs, self.large = 64, False
        while len(words) > 3 and words[3].startswith(("segs=", "large=")):
            key, val = words[3].split("=", 1)
            if key == "segs":
                self.segs = int(val)
            elif val in ("on", "off"):
                self.large = val == "on"
            else:
                self.segs = 0
            words = words[:3] + words[4:]
        if len(words) < 4 or words[1] not in ("on", "off") or \
           words[2] not in ("client", "server", "both", "none") or \
           not 1 <= self.segs <= 64:
            raise SystemExit("--run NAME on|off client|server|both|none "
                             "[segs=1..64] [large=on|off] PORT:KIND:ITERS:SIZE...")
        self.name, self.crc, self.kiwi = words[0], words[1] == "on", words[2]
        self.expect = [expectation(w) for w in words[3:]]
        self.ports = {e[0] for e in self.expect}

    def kiwi_sent(self, st, it):
        return self.kiwi in ("both", st.side(it.src))


def check_global(streams, malformed, experts, runs, rep):
    """Checks of the whole decode. Returns the connections."""
    conns = [s for s in streams.values() if s.items or s.end]
    nfpdu = sum(len(s.fpdus()) for s in conns)
    stray = [s.name() for s in conns if not any(s.server in r.ports for r in runs)]
    rep.point(conns and nfpdu > 0 and not stray,
              "tshark decoded %d FPDUs in %d TCP connections, each to a port a "
              "tool ran on" % (nfpdu, len(conns)), ["unexpected: " + x for x in stray])

    errs, notes = [], []
    reqs = [i for s in conns for i in s.items if i.kind == "req"]
    v2_ok = reqs and all(num(i.get("iwarp_mpa.rev", "0")) == 2 and
                         num(i.get("iwarp_mpa.res", "0")) & ~LARGE_FPDU == ENHANCED
                         for i in reqs)
    if malformed:
        errs.append("malformed frames: %s" % " ".join(map(str, sorted(set(malformed))[:20])))
    for sev, count, group, proto, summary in experts:
        line = "%s: %d x %s %s: %s" % (sev, count, proto, group, summary)
        if sev not in ("Errors", "Warns"):
            continue
        if proto.upper().startswith("IWARP"):
            if v2_ok and summary.startswith(RFC6581_WARNINGS):
                notes.append(line + " (RFC 6581 revision 2, unknown to Wireshark 4.0)")
            else:
                errs.append(line)
        elif sev == "Errors":
            errs.append(line)
        else:
            notes.append(line)
    rep.point(not errs, "no malformed frame, no expert error or warning from "
              "iwarp_mpa/iwarp_ddp_rdmap", errs + notes)
    return conns


def check_run(run, conns, streams, rep):
    """The checks of one run, each a test point named after it."""
    def point(ok, desc, details=()):
        rep.point(ok, "%s: %s" % (run.name, desc), details)

    conns = [s for s in conns if s.server in run.ports]
    if not conns:
        point(False, "its connections are in the capture")
        return

    # MPA Request and Reply, and the RTR that follows them.
    errs, texts, rtrs = [], [], {}
    for st in conns:
        e, rtr, text = check_handshake(st, run.crc, run.large,
                                       run.kiwi in ("client", "both"))
        errs += ["%s: %s" % (st.name(), x) for x in e]
        if not e:
            rtrs[st.sid] = rtr
            texts.append("%s: %s" % (st.name(), text))
    point(not errs, "MPA Request and Reply decoded in every connection: key, "
          "revision 2, M=0, R=0, C as negotiated, large FPDUs %s, RFC 6581 IRD/ORD "
          "and RTR" % ("agreed" if run.large else "not agreed"), errs or texts)
    errs = []
    for st in conns:
        if st.sid in rtrs:
            errs += ["%s: %s" % (st.name(), x) for x in check_rtr(st, rtrs[st.sid])]
    seen = sorted(set(v or "none" for v in rtrs.values()))
    point(not errs and len(rtrs) == len(conns),
          "the initiator's first FPDU is the zero-length RTR the Reply chose (%s), "
          "and the responder sends nothing before it" % (",".join(seen) or "none"), errs)

    # Every payload byte is MPA framing around a decoded DDP/RDMAP header.
    errs, total = [], 0
    for st in conns:
        for port in (st.client, st.server):
            sent = st.end.get(port, 1) - 1
            framed = sum(i.wire_len for i in st.items if i.src == port)
            total += sent
            if sent != framed:
                errs.append("%s: %s sent %d payload bytes, the decoded MPA frames cover %d" %
                            (st.name(), st.side(port), sent, framed))
        for it in st.fpdus():
            if "iwarp_rdma.opcode" not in it.f:
                errs.append("%s: FPDU without a DDP/RDMAP header" % it.where())
    point(not errs and total > 0, "all %d TCP payload bytes are MPA Request/Reply or "
          "FPDUs (length, pad, CRC) carrying a DDP/RDMAP header" % total, errs)

    # CRC.
    errs, good = [], 0
    fpdus = [i for s in conns for i in s.fpdus()]
    for it in fpdus:
        chk = it.get("iwarp_mpa.crc_check")
        if run.crc:
            if chk is None or "Good CRC32" not in chk:
                errs.append("%s: CRC %s" % (it.where(), chk or "not checked"))
            else:
                good += 1
        elif chk is not None:
            errs.append("%s: CRC checked although CRC is off" % it.where())
        elif run.kiwi_sent(streams[it.stream], it) and num(it.get("iwarp_mpa.crc", "1")):
            errs.append("%s: kiwi sent CRC field %s with CRC off" %
                        (it.where(), it.get("iwarp_mpa.crc")))
    if run.crc:
        point(not errs and good == len(fpdus) > 0,
              "the dissector verified the CRC32c of all %d FPDUs as good" % good, errs)
    else:
        point(not errs and fpdus, "CRC off: no FPDU is CRC-checked, and kiwi's CRC "
              "fields are 0 (the receiver ignores them)", errs)

    # DDP/RDMAP headers, messages, opcodes.
    errs, flows = [], {}
    for st in conns:
        for port in (st.client, st.server):
            flows[(st.sid, port)] = walk_ddp(st, port, errs)
        match_reads(flows[(st.sid, st.client)], flows[(st.sid, st.server)], errs,
                    st.name() + " server reads")
        match_reads(flows[(st.sid, st.server)], flows[(st.sid, st.client)], errs,
                    st.name() + " client reads")
    nmsg = sum(len(f.messages) for f in flows.values())
    multi = sum(1 for f in flows.values() for m in f.messages if m[2] > 1)
    point(not errs and nmsg > 0, "DDP/RDMAP headers of %d messages (%d of several "
          "segments) are consistent: versions, T flag and queue per opcode, MSN, MO "
          "and TO continuous, L ends each message, Read Responses answer their "
          "Requests" % (nmsg, multi), errs)
    ops = {}
    for it in fpdus:
        if "iwarp_rdma.opcode" in it.f:
            ops[it.opcode] = ops.get(it.opcode, 0) + 1
    want = set()
    for e in run.expect:
        want |= KIND_OPS[e[1]]
    missing = sorted(want - set(ops))
    terms = [str(i.frame) for i in fpdus
             if "iwarp_rdma.opcode" in i.f and i.opcode == OP_TERMINATE]
    point(not missing and not terms, "RDMAP opcodes: %s; no Terminate" %
          ", ".join("%s %d" % (OP_NAMES.get(o, o), n) for o, n in sorted(ops.items())),
          ["missing: %s" % OP_NAMES[o] for o in missing] +
          (["Terminate in frames %s" % " ".join(terms)] if terms else []))

    # FPDU sizes against the EMSS.
    errs, info, full, fills = [], [], 0, [0]
    for st in conns:
        emss = st.emss()
        if emss is None:
            errs.append("%s: SYN/SYN-ACK MSS options not captured" % st.name())
            continue
        biggest = max((i.wire_len for i in st.fpdus()), default=0)
        # kiwi_mpa_mulpdu(): length field, ULPDU and pad a multiple of 4,
        # then the CRC; the ULPDU at most 0xffff (then 3 bytes of pad).
        # Only a connection that agreed to large FPDUs may have them.
        segs = run.segs if getattr(st, "large", False) else 1
        limit = emss * segs
        fill = ((limit - 4) & ~3) + 4
        if fill - 6 > 0xffff:
            limit = fill = 2 + 0xffff + 3 + 4
        fills.append(fill)
        info.append("%s: MSS %d, EMSS %d, largest FPDU %d%s" %
                    (st.name(), min(st.mss.values()), emss, biggest,
                     ", large FPDUs agreed, kiwi's fpdu_segs %d: at most %d" %
                     (segs, limit) if segs > 1 else ", at most %d" % limit))
        for it in st.fpdus():
            if it.wire_len > limit:
                errs.append("%s: FPDU of %d bytes exceeds %d" %
                            (it.where(), it.wire_len, limit))
            elif "iwarp_ddp.last_flag" in it.f and not it.last and run.kiwi_sent(st, it):
                if it.wire_len != fill:
                    errs.append("%s: non-last segment in an FPDU of %d bytes, %d fits" %
                                (it.where(), it.wire_len, fill))
                else:
                    full += 1
    if any(e[3] > max(fills) for e in run.expect) and not full and run.kiwi != "none":
        errs.append("no message from kiwi took several FPDUs")
    what = "every FPDU fits the EMSS (MSS option less TCP options)" if not run.large \
        else "every FPDU fits %d times the EMSS" % run.segs
    point(not errs, "%s; %d non-last segments from kiwi fill it" % (what, full),
          errs or info)

    # Padding.
    errs, notes, padded = [], [], 0
    for it in fpdus:
        pad = it.get("iwarp_mpa.pad")
        if not it.pad:
            if pad is not None:
                errs.append("%s: ULPDU %d needs no pad, got %s" % (it.where(), it.ulpdu, pad))
            continue
        padded += 1
        if pad is None or len(pad) != 2 * it.pad:
            errs.append("%s: ULPDU %d, pad %s" % (it.where(), it.ulpdu, pad))
        elif int(pad, 16):
            what = "%s: ULPDU %d, pad %s" % (it.where(), it.ulpdu, pad)
            if run.kiwi_sent(streams[it.stream], it):
                errs.append(what)
            else:
                notes.append(what + " (not zero, from the peer)")
    if any(e[3] % 4 for e in run.expect) and not padded:
        errs.append("odd sizes ran, but no FPDU is padded")
    point(not errs, "%d FPDUs carry 1 to 3 pad bytes, so that length field, ULPDU "
          "and pad end 4-aligned; kiwi's pad bytes are zero" % padded, errs + notes)

    # Bytes moved, per tool run.
    for port, kind, iters, size in run.expect:
        sts = [s for s in conns if s.server == port]
        c2s = [m for s in sts for m in flows[(s.sid, s.client)].messages]
        s2c = [m for s in sts for m in flows[(s.sid, s.server)].messages]
        creq = [r for s in sts for r in flows[(s.sid, s.client)].read_reqs]
        sreq = [r for s in sts for r in flows[(s.sid, s.server)].read_reqs]

        def total(msgs, op):
            return sum(m[1] for m in msgs if m[0] == op)

        def count(msgs, op, size=size):
            return sum(1 for m in msgs if m[0] == op and m[1] == size)

        def rsize(reqs, size=size):
            return sum(1 for r in reqs if num(r.get("iwarp_rdma.rdmardsz")) == size)

        want = iters * size
        if kind == "rping":
            got = [("Read Response bytes client->server", total(c2s, OP_READ_RESP)),
                   ("RDMA Write bytes server->client", total(s2c, OP_WRITE)),
                   ("Read Requests of SIZE server->client", rsize(sreq) * size)]
        elif kind == "write":
            got = [("RDMA Write bytes client->server", total(c2s, OP_WRITE)),
                   ("RDMA Writes of SIZE", count(c2s, OP_WRITE) * size)]
        elif kind == "read":
            got = [("Read Response bytes server->client", total(s2c, OP_READ_RESP)),
                   ("Read Requests of SIZE client->server", rsize(creq) * size)]
        else:
            got = [("Sends of SIZE client->server", count(c2s, OP_SEND) * size)]
        bad = ["%s: %d, %d expected" % (what, n, want) for what, n in got if n != want]
        point(sts and not bad, "%s %d x %d bytes on port %d: the DDP headers account "
              "for %d bytes (%s)" % (kind, iters, size, port, want,
                                     "; ".join(w for w, _ in got)),
              bad if sts else ["no connection to port %d" % port])

    # Disconnect. rping waits for the DISCONNECTED event on both sides, so
    # its close must be graceful; perftest destroys its QP right after
    # rdma_disconnect(), which iw_cm turns into an abortive close.
    errs, info = [], []
    graceful = {e[0] for e in run.expect if e[1] == "rping"}
    for st in conns:
        if not st.fin and not st.rst:
            errs.append("%s: neither FIN nor RST captured" % st.name())
        for port, frame in st.fin.items():
            if any(i.src == port and i.frame > frame for i in st.items):
                errs.append("%s: %s sent an FPDU after its FIN" % (st.name(), st.side(port)))
        if st.server in graceful and (len(st.fin) != 2 or st.rst):
            errs.append("%s: rping's close is not a FIN from each side" % st.name())
        info.append("%s: FIN from %s, RST from %s" %
                    (st.name(), "+".join(st.side(p) for p in sorted(st.fin)) or "nobody",
                     "+".join(st.side(p) for p in sorted(st.rst)) or "nobody"))
    point(not errs, "every connection ends with a FIN or RST after its last FPDU; "
          "rping's with a FIN from each side", errs + info)


def expectation(text):
    port, kind, iters, size = text.split(":")
    if kind not in KIND_OPS:
        raise SystemExit("unknown kind %s in %s" % (kind, text))
    return int(port), kind, int(iters), int(size)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("capture")
    ap.add_argument("--run", nargs="+", action="append", required=True,
                    metavar="WORD", help="NAME on|off KIWI-ENDS PORT:KIND:ITERS:SIZE...")
    ap.add_argument("--tshark", default="tshark")
    args = ap.parse_args()
    runs = [Run(words) for words in args.run]

    rep = Report()
    rc, out, err = run_tshark(args.capture, args.tshark)
    if rc != 0:
        rep.point(False, "tshark decodes %s" % args.capture,
                  err.strip().splitlines()[-5:])
        return 1
    streams, malformed, experts = parse(out)
    conns = check_global(streams, malformed, experts, runs, rep)
    for run in runs:
        check_run(run, conns, streams, rep)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
