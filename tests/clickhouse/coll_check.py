#!/usr/bin/env python3
"""coll_check.py EMU.json COLLS.tsv STRINGS.tsv: the Coll events' fields as
ClickHouse returns them against the emulator's collectives.

COLLS.tsv: host, pid, rank, seq, func (string id) of every Coll event of the
job (SELECT ... FROM events FINAL WHERE type = 1); STRINGS.tsv: host, pid, id,
text of the job's string definitions. For every profiled rank of the summary,
its (function name, seqNumber) pairs must be exactly the emulator's
collectives of that rank: the RowBinary columns landed in the right places
(a shifted column gives other numbers) and the string ids resolve. Exit 0 when
they all match, 1 otherwise (each difference printed)."""
import collections
import json
import sys


def main():
    emu = json.load(open(sys.argv[1]))
    names = {}
    for line in open(sys.argv[3]):
        host, pid, sid, text = line.rstrip("\n").split("\t")
        names[(host, int(pid), int(sid))] = text
    got = collections.defaultdict(list)
    for line in open(sys.argv[2]):
        host, pid, rank, seq, func = line.rstrip("\n").split("\t")
        key = (host, int(pid), int(rank))
        got[key].append((names.get((host, int(pid), int(func)), "?%s" % func), int(seq)))
    bad = 0
    ranks = 0
    for r in emu["ranks"]:
        if not r["profiled"]:
            continue
        ranks += 1
        key = (r["host"], r["pid"], r["rank"])
        want = sorted((c["func"], c["seq"]) for c in r["collectives"])
        have = sorted(got.pop(key, []))
        if want != have:
            bad += 1
            print("coll-check: %s pid %d rank %d: emulator %d collectives, ClickHouse %d; first difference %s"
                  % (key[0], key[1], key[2], len(want), len(have),
                     next(((w, h) for w, h in zip(want, have) if w != h), "in the length")), file=sys.stderr)
    for key in got:
        bad += 1
        print("coll-check: %s pid %d rank %d: Coll events of no profiled rank" % key, file=sys.stderr)
    if ranks == 0:
        bad += 1
        print("coll-check: the summary has no profiled rank", file=sys.stderr)
    sys.exit(1 if bad else 0)


main()
