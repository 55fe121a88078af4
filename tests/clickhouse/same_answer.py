#!/usr/bin/env python3
"""same_answer.py A B SLACK_NS: two query answers (JSON or NDJSON files) are
alike but for the wall clock, which each collector measured on its own.

Two collectors of one host record the same wall_offset_ns (rounded to the
millisecond) unless the host's clock was stepped between their readings or
the offset lies on a millisecond's boundary (docs/api.md, "Wall-clock
time"). ch.sh passes how far this host's offset moved during the test, plus
that millisecond, as SLACK_NS. The answers must then be equal once every
wall_offset_ns and every UTC string (a *_utc member, made from the offset)
is left out, and their offsets at most SLACK_NS apart. Exit 0 when alike,
1 with the first difference printed."""
import json
import sys


def parse(path):
    return [json.loads(x) for x in open(path).read().splitlines() if x.strip()]


def offsets(v, out):
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "wall_offset_ns":
                out.append(x)
            else:
                offsets(x, out)
    elif isinstance(v, list):
        for x in v:
            offsets(x, out)
    return out


def without_wall(v):
    if isinstance(v, dict):
        return {k: without_wall(x) for k, x in v.items() if k != "wall_offset_ns" and not k.endswith("_utc")}
    if isinstance(v, list):
        return [without_wall(x) for x in v]
    return v


def main():
    a, b, slack = parse(sys.argv[1]), parse(sys.argv[2]), int(sys.argv[3])
    if without_wall(a) != without_wall(b):
        print("same-answer: the answers differ beyond the wall clock", file=sys.stderr)
        sys.exit(1)
    oa, ob = offsets(a, []), offsets(b, [])
    if len(oa) != len(ob):
        print("same-answer: %d wall offsets against %d" % (len(oa), len(ob)), file=sys.stderr)
        sys.exit(1)
    for x, y in zip(oa, ob):
        if abs(x - y) > slack:
            print("same-answer: wall_offset_ns %d against %d, more than %d ns apart" % (x, y, slack), file=sys.stderr)
            sys.exit(1)
    sys.exit(0)


main()
