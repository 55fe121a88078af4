#!/usr/bin/env python3
"""spool_flip.py: change one byte of a spooled batch in an agent's spool file,
as a bad disk or a stray write would (faults.sh poisoned_spool).

    spool_flip.py DATA.MDB AGENT framing|value [SEQ]

Finds every copy of AGENT's version 4 batches in the LMDB file (the live
value and stale copies in freed pages; all copies of the chosen batch are
changed, so the live one is), picks the first batch from SEQ on (default: the
middle one, well after the definitions at the start of a job) that has what
is to be changed, and changes in each copy:
  framing: the batch's array header (12 elements become 11);
  value:   the lowest bit of a uint inside its first section's records (an
           event's field: the message still decodes; only its CRC tells).
Prints the seq it changed. Exit 1 when no batch or no such value is found.
"""
import sys

FIXED = {0xc0: 0, 0xc2: 0, 0xc3: 0, 0xca: 4, 0xcb: 8, 0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8,
         0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8, 0xd4: 2, 0xd5: 3, 0xd6: 5, 0xd7: 9, 0xd8: 17}
SIZED = {0xc4: 1, 0xc5: 2, 0xc6: 4, 0xd9: 1, 0xda: 2, 0xdb: 4, 0xc7: 1, 0xc8: 2, 0xc9: 4}
CONTAINERS = {0xdc: (2, 1), 0xdd: (4, 1), 0xde: (2, 2), 0xdf: (4, 2)}
UINTS = (0xcc, 0xcd, 0xce, 0xcf)


def skip(b, i, uints=None):
    """Offset after the msgpack value at i; uints collects (offset, width)."""
    t = b[i]
    if t <= 0x7f or t >= 0xe0:
        return i + 1
    if 0xa0 <= t <= 0xbf:
        return i + 1 + (t & 0x1f)
    if 0x80 <= t <= 0x9f:
        n, per, i = t & 0x0f, 2 if t < 0x90 else 1, i + 1
    elif t in CONTAINERS:
        k, per = CONTAINERS[t]
        n, i = int.from_bytes(b[i + 1:i + 1 + k], "big"), i + 1 + k
    elif t in FIXED:
        if uints is not None and t in UINTS:
            uints.append((i, FIXED[t]))
        return i + 1 + FIXED[t]
    elif t in SIZED:
        k = SIZED[t]
        return i + 1 + k + int.from_bytes(b[i + 1:i + 1 + k], "big") + (t in (0xc7, 0xc8, 0xc9))
    else:
        raise ValueError("bad type %#x" % t)
    for _ in range(n * per):
        i = skip(b, i, uints)
    return i


def head(b, at, agent):
    """(seq, offset of the first section's bytes) of the batch at `at`."""
    i = at + 3 + 1 + len(agent)
    epoch_end = skip(b, i)
    seq_end = skip(b, epoch_end)
    seq = int.from_bytes(b[epoch_end + 1:seq_end], "big") if b[epoch_end] >= 0xcc else b[epoch_end]
    i = skip(b, skip(b, seq_end))  # host, sent_ns
    if not 0x91 <= b[i] <= 0x9f:
        raise ValueError("no section")
    t = b[i + 1]
    if t not in (0xc4, 0xc5, 0xc6):
        raise ValueError("section not bin")
    k = SIZED[t]
    return seq, i + 2 + k


def change(b, at, sect, how):
    """Change the copy of a batch at `at` (first section at sect): 1, or 0
    when it has no such thing (a stale copy partly overwritten, no uint)."""
    if how == "framing":
        b[at] ^= 0x9c ^ 0x9b
        return 1
    try:
        records = skip(b, sect + 1)  # the section is [header, records]
        uints = []
        skip(b, records, uints)
    except (ValueError, IndexError):
        return 0
    if not uints:
        return 0
    off, width = uints[len(uints) // 2]
    b[off + width] ^= 1
    return 1


def main():
    path, agent, how = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
    b = bytearray(open(path, "rb").read())
    prefix = b"\x9c\x01\x04" + bytes([0xa0 | len(agent)]) + agent
    copies = {}
    at = b.find(prefix)
    while at >= 0:
        try:
            seq, sect = head(b, at, agent)
            copies.setdefault(seq, []).append((at, sect))
        except (ValueError, IndexError):
            pass  # a stale copy that was partly overwritten
        at = b.find(prefix, at + 1)
    if not copies:
        sys.exit("spool_flip: no batch of %s in %s" % (agent.decode(), path))
    seqs = sorted(copies)
    first = int(sys.argv[4]) if len(sys.argv) > 4 else seqs[len(seqs) // 2]
    for seq in (s for s in seqs if s >= first):
        if sum(change(b, at, sect, how) for at, sect in copies[seq]):
            open(path, "r+b").write(b)
            print(seq)
            return
    sys.exit("spool_flip: no batch of %s from %d on has a %s to change" % (agent.decode(), first, how))


main()
