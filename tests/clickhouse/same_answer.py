#!/usr/bin/env python3
"""same_answer.py A B SLACK_NS: two query answers (JSON or NDJSON files) are
alike but for the wall clock, which each collector's store recorded on its
own.

Two stores written on one host hold the same wall_offset_ns unless the
host's clock was stepped between their first records or the offset lies on
a millisecond's boundary, where two readings round apart (docs/api.md,
"Wall-clock time"). ch.sh passes how far this host's offset moved during
the test, plus that millisecond, as SLACK_NS. The answers must then be
equal once every wall_offset_ns and every time made from it (a UTC string,
"2026-11-28T20:11:05.123456Z", or a time of day, "12:04:31 UTC") is left
out, and their offsets at most SLACK_NS apart. Exit 0 when alike, 1 with
the first difference printed. live_same.py uses without_wall too."""
import json
import re
import sys

UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z|\d\d:\d\d:\d\d UTC")


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
    """v less its wall_offset_ns members, its times of day as "UTC"."""
    if isinstance(v, dict):
        return {k: without_wall(x) for k, x in v.items() if k != "wall_offset_ns"}
    if isinstance(v, list):
        return [without_wall(x) for x in v]
    if isinstance(v, str):
        return UTC.sub("UTC", v)
    return v


def wall_apart(oa, ob, slack):
    """None when the offsets' lists pair up within slack, else why not."""
    if len(oa) != len(ob):
        return "%d wall offsets against %d" % (len(oa), len(ob))
    for x, y in zip(oa, ob):
        if abs(x - y) > slack:
            return "wall_offset_ns %d against %d, more than %d ns apart" % (x, y, slack)
    return None


def parse(path):
    return [json.loads(x) for x in open(path).read().splitlines() if x.strip()]


def main():
    a, b, slack = parse(sys.argv[1]), parse(sys.argv[2]), int(sys.argv[3])
    why = wall_apart(offsets(a, []), offsets(b, []), slack)
    if not why and without_wall(a) != without_wall(b):
        why = "the answers differ beyond the wall clock"
    if why:
        print("same-answer: " + why, file=sys.stderr)
    sys.exit(1 if why else 0)


if __name__ == "__main__":
    main()
