#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write and verify a checksummable pattern on a block device or file.

Used by the storage tests to prove that every write a ULP reported as done
reads back intact, also across faults:

  kiwi_blkpat.py write PATH --seed S --chunks N [--chunk BYTES] [--first I]
                 [--log FILE] [--direct] [--keep-going]
      Write chunks I .. I+N-1, each a pseudo-random block derived from
      (seed, chunk index), at offset index * chunk. Each chunk is written
      with O_DSYNC (and O_DIRECT with --direct), and its index is appended
      to --log once the write returned, so the log lists exactly the
      chunks the kernel reported as written. With --keep-going a failed
      write is reported and the next chunk is tried (a fault is expected);
      otherwise the first failure ends the run with status 1. With
      --stop FILE the run ends before the next chunk once FILE exists.

  kiwi_blkpat.py verify PATH --seed S (--chunks N [--first I] | --log FILE)
                 [--chunk BYTES] [--direct]
      Read the chunks back and compare. Prints the number checked and each
      mismatch; status 1 when any chunk differs or cannot be read.
"""
import argparse
import mmap
import os
import random
import sys
import time


def block(seed, index, size):
    """The pattern of chunk @index: deterministic, distinct per chunk."""
    rnd = random.Random(seed * 1000003 + index)
    head = b"kiwi %10d %10d " % (seed, index)
    return head + rnd.randbytes(size - len(head))


def aligned(size):
    """A page-aligned buffer, as O_DIRECT needs."""
    return mmap.mmap(-1, size)


def open_path(path, write, direct):
    flags = os.O_RDWR | os.O_DSYNC if write else os.O_RDONLY
    if direct:
        flags |= os.O_DIRECT
    return os.open(path, flags)


def do_write(a):
    fd = open_path(a.path, True, a.direct)
    buf = aligned(a.chunk)
    log = open(a.log, "a") if a.log else None
    failed = written = 0
    for i in range(a.first, a.first + a.chunks):
        if a.stop and os.path.exists(a.stop):
            break
        buf.seek(0)
        buf.write(block(a.seed, i, a.chunk))
        try:
            n = os.pwritev(fd, [buf], i * a.chunk)
            if n != a.chunk:
                raise OSError(0, "short write of %d bytes" % n)
        except OSError as e:
            failed += 1
            print("chunk %d: write failed: %s" % (i, e), file=sys.stderr)
            if not a.keep_going:
                return 1
            time.sleep(0.2)
            continue
        written += 1
        if log:
            log.write("%d\n" % i)
            log.flush()
    print("wrote %d chunks of %d bytes, %d writes failed" %
          (written, a.chunk, failed))
    return 0


def do_verify(a):
    if a.log:
        with open(a.log) as f:
            chunks = sorted({int(x) for x in f.read().split()})
    else:
        chunks = range(a.first, a.first + a.chunks)
    fd = open_path(a.path, False, a.direct)
    buf = aligned(a.chunk)
    bad = 0
    for i in chunks:
        try:
            n = os.preadv(fd, [buf], i * a.chunk)
        except OSError as e:
            print("chunk %d: read failed: %s" % (i, e))
            bad += 1
            continue
        if n != a.chunk or buf[:a.chunk] != block(a.seed, i, a.chunk):
            print("chunk %d: differs (read %d bytes, starts %r)" %
                  (i, n, bytes(buf[:24])))
            bad += 1
    print("verified %d chunks of %d bytes, %d bad" %
          (len(chunks), a.chunk, bad))
    return 1 if bad or not chunks else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("op", choices=["write", "verify"])
    p.add_argument("path")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--chunk", type=int, default=65536)
    p.add_argument("--first", type=int, default=0)
    p.add_argument("--chunks", type=int, default=0)
    p.add_argument("--log")
    p.add_argument("--direct", action="store_true")
    p.add_argument("--keep-going", action="store_true")
    p.add_argument("--stop")
    a = p.parse_args()
    if a.chunk % 4096:
        p.error("--chunk must be a multiple of 4096")
    if a.op == "write":
        return do_write(a)
    if not a.log and not a.chunks:
        p.error("verify needs --chunks or --log")
    return do_verify(a)


if __name__ == "__main__":
    sys.exit(main())
