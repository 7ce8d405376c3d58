#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Make and damage iWARP captures, to prove iwarp_check.py catches faults.

    iwarp_pcap.py flip IN OUT PORT NEWPORT
                                     copy pcap IN to OUT and append a copy
                                     of its connection to TCP port PORT,
                                     moved to port NEWPORT, with one byte
                                     inverted inside the DDP payload of
                                     the first FPDU that has 64 bytes
    iwarp_pcap.py synth VARIANT OUT  write a synthetic kiwi-like iWARP
                                     conversation (one rping -V iteration
                                     of SYNTH_SIZE bytes, MPA v2, RTR
                                     Write), correct or with one fault

    iwarp_pcap.py mpa IN PORT        print the MPA Request and Reply of
                                     the first connection to TCP port
                                     PORT in pcap IN: "request rev R
                                     flags 0xFF" and "reply rev R flags
                                     0xFF", or what is missing
    iwarp_pcap.py syns IN PORT       print how many connects (SYN, no
                                     ACK) to TCP port PORT pcap IN has;
                                     IN may be a capture still being
                                     written (0 for no packet yet)
    iwarp_pcap.py sends IN PORT      print the RDMAP opcodes of the
                                     Send-type messages (Send, with
                                     Invalidate, with SE, with SE and
                                     Invalidate: 3 to 6) the client of
                                     that connection sent, in order

Variants: good and crc (good, CRC off and on), then faults: plain (a
TCP flow that is not iWARP), badcrc, crcfield (non-zero CRC field with CRC
off), rev1 (MPA revision 1), nortr (no RTR), early (the responder sends
before the RTR), big (an FPDU past the EMSS), small (a non-last segment
that does not fill the EMSS), msn (an MSN skipped), mo (a gap in a Send's
MO), to (a Read Response at the wrong offset), term (a Terminate), pad
(non-zero pad), cut (the capture ends inside an FPDU), nofin (no close),
gap (a segment of the server's Write missing from the capture). reorder
is correct: two of those segments captured in swapped order, as a veth
can deliver them. large is correct for a checker told large=on: both MPA
frames carry the large-FPDU flag (0x08) and each message is one FPDU of
4001 bytes; largereq has the flag in the Request only and largerep in the
Reply only, with the same large FPDUs.
"""

import os
import struct
import sys

SYNTH_SIZE = 4001
CLIENT, SERVER = ("192.0.2.1", 41000), ("192.0.2.2", 7174)
MSS, EMSS = 1460, 1448          # segments carry the 12-byte timestamp option
UNTAGGED_HDR = 18               # the longer DDP header
VARIANTS = ("good", "crc", "plain", "badcrc", "crcfield", "rev1", "nortr", "early",
            "big", "small", "msn", "mo", "to", "term", "pad", "cut", "nofin",
            "reorder", "gap", "large", "largereq", "largerep")

# ---- classic pcap files ----


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic not in (0xa1b2c3d4, 0xa1b23c4d):
        raise SystemExit("%s: not a little-endian classic pcap file" % path)
    recs, off = [], 24
    while off + 16 <= len(data):
        hdr = data[off:off + 16]
        caplen = struct.unpack("<I", hdr[8:12])[0]
        recs.append([hdr, bytearray(data[off + 16:off + 16 + caplen])])
        off += 16 + caplen
    return data[:24], recs


def write_pcap(path, head, recs):
    with open(path, "wb") as f:
        f.write(head)
        for hdr, pkt in recs:
            f.write(hdr[:8] + struct.pack("<II", len(pkt), len(pkt)) + hdr[16:])
            f.write(pkt)


def tcp_segment(pkt):
    """Offsets of an Ethernet/IPv4-or-IPv6/TCP frame's TCP header and
    payload, and the payload's length; None for other frames."""
    etype = struct.unpack("!H", pkt[12:14])[0]
    if etype == 0x0800 and pkt[23] == 6:
        tcp = 14 + (pkt[14] & 0xf) * 4
        end = 14 + struct.unpack("!H", pkt[16:18])[0]
    elif etype == 0x86dd and pkt[20] == 6:
        tcp, end = 54, 54 + struct.unpack("!H", pkt[18:20])[0]
    else:
        return None
    off = tcp + (pkt[tcp + 12] >> 4) * 4
    return tcp, off, max(0, min(end, len(pkt)) - off)


def payload_byte(recs, src):
    """Where, in the records of one direction (TCP source port src) of an
    MPA connection, lies a DDP payload byte: walk its byte stream past the
    MPA Request or Reply, then FPDU by FPDU by their length fields, to the
    first one with 64 bytes of payload. Returns (record, offset) or None."""
    segs = []
    for i, (_, pkt) in enumerate(recs):
        tcp, off, n = tcp_segment(pkt)
        if n and struct.unpack("!H", pkt[tcp:tcp + 2])[0] == src:
            segs.append((struct.unpack("!I", pkt[tcp + 4:tcp + 8])[0], i, off, n))
    if not segs:
        return None
    base = min(seq for seq, _, _, _ in segs)
    stream, where = bytearray(), []
    for seq, i, off, n in sorted(segs, key=lambda s: (s[0] - base) & 0xffffffff):
        skip = len(stream) - ((seq - base) & 0xffffffff)   # retransmitted bytes
        if 0 <= skip < n:
            where.append((len(stream), i, off + skip))
            stream += recs[i][1][off + skip:off + n]
    pos = 20 + struct.unpack("!H", stream[18:20])[0]
    while pos + 2 <= len(stream):
        ulpdu = struct.unpack("!H", stream[pos:pos + 2])[0]
        if ulpdu >= UNTAGGED_HDR + 64 and pos + 2 + ulpdu <= len(stream):
            target = pos + 2 + UNTAGGED_HDR + 32
            for start, i, off in reversed(where):
                if start <= target:
                    return i, off + target - start
        pos += 2 + ulpdu + (4 - (ulpdu + 2) % 4) % 4 + 4
    return None


def flip(src, dst, port, newport):
    head, recs = read_pcap(src)
    copy = []
    for hdr, pkt in recs:
        seg = tcp_segment(pkt)
        if seg and port in struct.unpack("!HH", pkt[seg[0]:seg[0] + 4]):
            pkt = bytearray(pkt)
            for i in (seg[0], seg[0] + 2):
                if struct.unpack("!H", pkt[i:i + 2])[0] == port:
                    pkt[i:i + 2] = struct.pack("!H", newport)
            copy.append([hdr, pkt])
    sports = {struct.unpack("!H", pkt[tcp_segment(pkt)[0]:][:2])[0] for _, pkt in copy}
    for sport in sorted(sports):
        hit = payload_byte(copy, sport)
        if hit:
            copy[hit[0]][1][hit[1]] ^= 0xff
            write_pcap(dst, head, recs + copy)
            return 0
    raise SystemExit("%s: no FPDU with 64 bytes of payload on port %d" % (src, port))


def stream_start(recs, src, dst, n):
    """The first n bytes (or fewer) that TCP port src sent to port dst,
    in sequence order, from the first SYN on."""
    segs = []
    for _, pkt in recs:
        seg = tcp_segment(pkt)
        if not seg:
            continue
        tcp, off, length = seg
        sport, dport = struct.unpack("!HH", pkt[tcp:tcp + 4])
        if (sport, dport) != (src, dst):
            continue
        seq = struct.unpack("!I", pkt[tcp + 4:tcp + 8])[0]
        if pkt[tcp + 13] & 0x02:            # SYN: the stream starts after it
            segs = [(seq + 1, b"")]
        elif segs and length:
            segs.append((seq, bytes(pkt[off:off + length])))
    if not segs:
        return b""
    base, stream = segs[0][0], bytearray()
    for seq, data in sorted(segs[1:], key=lambda s: (s[0] - base) & 0xffffffff):
        skip = len(stream) - ((seq - base) & 0xffffffff)
        if 0 <= skip < len(data):
            stream += data[skip:]
        if len(stream) >= n:
            break
    return bytes(stream[:n])


def connect_ports(pkt):
    """(source port, destination port) of a connect (a SYN, no ACK);
    None for any other frame."""
    seg = tcp_segment(pkt)
    if seg and pkt[seg[0] + 13] & 0x12 == 0x02:
        return struct.unpack("!HH", pkt[seg[0]:seg[0] + 4])
    return None


def first_client(src, port):
    """The records of pcap src and the TCP source port of its first
    connection to port; exits when there is none."""
    _, recs = read_pcap(src)
    for _, pkt in recs:
        ports = connect_ports(pkt)
        if ports and ports[1] == port:
            return recs, ports[0]
    raise SystemExit("no connection to port %d" % port)


def syns(src, port):
    if os.path.getsize(src) < 24:
        print(0)
        return 0
    _, recs = read_pcap(src)
    n = 0
    for _, pkt in recs:
        try:        # the last record may be cut short: still being written
            ports = connect_ports(pkt)
            n += bool(ports and ports[1] == port)
        except (IndexError, struct.error):
            pass
    print(n)
    return 0


def sends(src, port):
    recs, client = first_client(src, port)
    stream = stream_start(recs, client, port, 1 << 30)
    if len(stream) < 20:
        print("no MPA Request")
        return 1
    pos, ops = 20 + struct.unpack("!H", stream[18:20])[0], []
    while pos + 4 <= len(stream):
        ulpdu = struct.unpack("!H", stream[pos:pos + 2])[0]
        ddp, rdmap = stream[pos + 2], stream[pos + 3]
        if ddp & 0x40 and 3 <= rdmap & 0x0f <= 6:        # last segment
            ops.append(str(rdmap & 0x0f))
        pos += 2 + ulpdu + (4 - (ulpdu + 2) % 4) % 4 + 4
    print(" ".join(ops))
    return 0


def mpa(src, port):
    recs, client = first_client(src, port)
    rc = 0
    for what, a, b, key in (("request", client, port, b"MPA ID Req Frame"),
                            ("reply", port, client, b"MPA ID Rep Frame")):
        head = stream_start(recs, a, b, 20)
        if len(head) < 20 or head[:16] != key:
            print("%s: none" % what)
            rc = 1
        else:
            print("%s rev %d flags 0x%02x" % (what, head[17], head[16]))
    return rc


# ---- CRC32c, sent least significant octet first, as kiwi and siw do ----


def _table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82f63b78 if c & 1 else c >> 1
        t.append(c)
    return t


CRC_TABLE = _table()


def crc32c(data):
    c = 0xffffffff
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >> 8)
    return c ^ 0xffffffff

# ---- frames ----


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def ip4(addr):
    return bytes(int(x) for x in addr.split("."))


class Conn:
    """One TCP connection, written as Ethernet/IPv4 frames."""

    def __init__(self):
        self.recs, self.seq, self.t = [], {}, 0
        self.seq[CLIENT] = 1000
        self.seq[SERVER] = 5000

    def frame(self, src, flags, payload=b"", opts=None):
        dst = SERVER if src == CLIENT else CLIENT
        if opts is None:        # NOP NOP timestamps, like Linux
            opts = b"\x01\x01\x08\x0a" + struct.pack("!II", self.t + 1, self.t)
        ack = self.seq[dst] if flags & 0x10 else 0
        tcp = struct.pack("!HHIIBBHHH", src[1], dst[1], self.seq[src], ack,
                          (20 + len(opts)) // 4 << 4, flags, 64240, 0, 0) + opts
        pseudo = ip4(src[0]) + ip4(dst[0]) + struct.pack("!BBH", 0, 6, len(tcp) + len(payload))
        tcp = tcp[:16] + struct.pack("!H", csum(pseudo + tcp + payload)) + tcp[18:]
        iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0,
                          0x4000, 64, 6, 0, ip4(src[0]), ip4(dst[0]))
        iph = iph[:10] + struct.pack("!H", csum(iph)) + iph[12:]
        eth = bytes.fromhex("020000000002" if src == CLIENT else "020000000001")
        eth += bytes.fromhex("020000000001" if src == CLIENT else "020000000002") + b"\x08\x00"
        pkt = eth + iph + tcp + payload
        self.t += 1
        self.recs.append([struct.pack("<IIII", 1700000000, self.t * 1000, 0, 0), bytearray(pkt)])
        self.seq[src] = (self.seq[src] + len(payload) + (1 if flags & 0x03 else 0)) & 0xffffffff

    def handshake(self):
        syn_opts = (struct.pack("!BBH", 2, 4, MSS) + b"\x04\x02\x08\x0a" +
                    struct.pack("!II", 1, 0) + b"\x01\x03\x03\x07")
        self.frame(CLIENT, 0x02, opts=syn_opts)
        self.frame(SERVER, 0x12, opts=syn_opts)
        self.frame(CLIENT, 0x10)


def mpa_frame(reply, crc, rev=2, pdata=None, large=False):
    key = b"MPA ID Rep Frame" if reply else b"MPA ID Req Frame"
    if pdata is None:   # IRD/ORD 1, peer-to-peer; offer all RTRs, or pick Write
        pdata = bytes.fromhex("80018001" if reply else "c001c001")
    flags = (0x40 if crc else 0) | (0x10 if rev == 2 else 0) | (0x08 if large else 0)
    return key + struct.pack("!BBH", flags, rev, len(pdata)) + pdata


def fpdu(ulpdu, crc, pad_byte=0, crc_field=None):
    pad = (4 - (len(ulpdu) + 2) % 4) % 4
    body = struct.pack("!H", len(ulpdu)) + ulpdu + bytes([pad_byte]) * pad
    value = crc32c(body) if crc else 0
    return body + struct.pack("<I", value if crc_field is None else crc_field)


def tagged(op, last, stag, to):
    return struct.pack("!BBIQ", 0x81 | (0x40 if last else 0), 0x40 | op, stag, to)


def untagged(op, last, qn, msn, mo):
    return struct.pack("!BBIIII", 0x01 | (0x40 if last else 0), 0x40 | op, 0, qn, msn, mo)


def segments(size, room):
    off = 0
    while True:
        n = min(size - off, room)
        yield off, n, off + n == size
        off += n
        if off >= size:
            return


def synth(variant, path):
    crc = variant in ("crc", "badcrc")
    c = Conn()
    c.handshake()
    if variant == "plain":
        c.frame(CLIENT, 0x18, b"GET / HTTP/1.0\r\n\r\n")
        c.frame(SERVER, 0x18, b"HTTP/1.0 200 OK\r\n\r\n" + b"x" * 3000)
        c.frame(CLIENT, 0x11)
        c.frame(SERVER, 0x11)
        write_pcap(path, struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1), c.recs)
        return 0

    def send(src, ulpdu, **kw):
        c.frame(src, 0x18, fpdu(ulpdu, crc, **kw))

    payload = bytes((i * 7) & 0xff for i in range(SYNTH_SIZE))
    c.frame(CLIENT, 0x18, mpa_frame(False, crc, rev=1 if variant == "rev1" else 2,
                                     pdata=b"" if variant == "rev1" else None,
                                     large=variant in ("large", "largereq")))
    c.frame(SERVER, 0x18, mpa_frame(True, crc, rev=1 if variant == "rev1" else 2,
                                    pdata=b"" if variant == "rev1" else None,
                                    large=variant in ("large", "largerep")))
    if variant == "early":
        send(SERVER, untagged(3, True, 0, 1, 0) + b"\0" * 16)
    if variant not in ("nortr", "rev1"):
        send(CLIENT, tagged(0, True, 0, 0))                        # RTR
    # The client offers its buffers (a 16-byte Send, like rping's).
    send(CLIENT, untagged(3, True, 0, 1, 0) + b"\1" * 16,
         crc_field=0x1234 if variant == "crcfield" else None)
    # The server reads them: Read Request, then a multi-FPDU Read Response.
    rr = struct.pack("!IQIIQ", 0x100, 0x7000, SYNTH_SIZE, 0x200, 0x9000)
    send(SERVER, untagged(1, True, 1, 1, 0) + rr)
    room = ((EMSS - 4) & ~3) - 2 - 14
    if variant.startswith("large"):     # one FPDU per message
        room = SYNTH_SIZE
    for off, n, last in segments(SYNTH_SIZE, room - 100 if variant == "small" else room):
        to = 0x7000 + off + (8 if variant == "to" and off else 0)
        send(CLIENT, tagged(2, last, 0x100, to) + payload[off:off + n],
             pad_byte=0xaa if variant == "pad" and last else 0)
    if variant == "badcrc":
        pkt = c.recs[-2][1]
        _, off, n = tcp_segment(pkt)
        pkt[off + n // 2] ^= 0xff
    # It writes them back into the client's sink buffer, then Sends.
    first = len(c.recs)
    for off, n, last in segments(SYNTH_SIZE, room + 100 if variant == "big" else room):
        send(SERVER, tagged(0, last, 0x300, 0x5000 + off) + payload[off:off + n])
    if variant == "reorder":    # swap the frames, keep the timestamps
        c.recs[first][1], c.recs[first + 1][1] = c.recs[first + 1][1], c.recs[first][1]
    if variant == "gap":
        del c.recs[first + 1]
    send(SERVER, untagged(3, True, 0, 3 if variant == "msn" else 1, 0) + b"\2" * 16)
    # A 3000-byte Send from the server, in three FPDUs.
    for off, n, last in segments(3000, room - 4):
        mo = off + (4 if variant == "mo" and off else 0)
        send(SERVER, untagged(3, last, 0, 4 if variant == "msn" else 2, mo) + b"\3" * n)
    if variant == "term":
        send(CLIENT, untagged(7, True, 2, 1, 0) + struct.pack("!I", 0x20000000))
    if variant == "cut":       # the first 10 bytes of a Send, then the close
        c.frame(CLIENT, 0x18, fpdu(untagged(3, True, 0, 2, 0) + b"\4" * 16, crc)[:10])
    if variant != "nofin":
        c.frame(CLIENT, 0x11)
        c.frame(SERVER, 0x11)
        c.frame(CLIENT, 0x10)
    write_pcap(path, struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1), c.recs)
    return 0


def main(argv):
    if len(argv) == 6 and argv[1] == "flip":
        return flip(argv[2], argv[3], int(argv[4]), int(argv[5]))
    if len(argv) == 4 and argv[1] == "syns":
        return syns(argv[2], int(argv[3]))
    if len(argv) == 4 and argv[1] == "sends":
        return sends(argv[2], int(argv[3]))
    if len(argv) == 4 and argv[1] == "mpa":
        return mpa(argv[2], int(argv[3]))
    if len(argv) == 4 and argv[1] == "synth" and argv[2] in VARIANTS:
        return synth(argv[2], argv[3])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
