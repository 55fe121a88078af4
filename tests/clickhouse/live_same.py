#!/usr/bin/env python3
"""live_same.py DIR_A DIR_B SLACK_NS: two collectors of one ClickHouse store
answer the live-state endpoints alike (docs/clickhouse-live.md).

Each folder holds one collector's status.json (/api/v1/status), live.json
(the first summary of /api/v1/live), hosts.json (/api/v1/hosts) and
metrics.txt (/metrics). Compared, after dropping the fields whose value is a
time or a rate over the collector's last interval (TIMED below): the status
and the live summary in full otherwise (jobs, drops, communicators, their
functions and max_seq, ranks with host, pid, state and each function's seq
and in_flight, lagging and hung; processes and agents with their states;
event totals and counts); hosts in full; and of /metrics the live-state
gauges and the per-communicator figures that are not times (sorted lines).
Each collector reads this host's wall clock on its own: their
wall_offset_ns may be up to SLACK_NS apart (ch.sh's wall_slack_ns: a clock
step during the test, the millisecond the offset is rounded to), and where
they differ so may the times made from it ("alive until 12:04:31 UTC"),
which are then compared without them (same_answer.py).
Exit 0 when all agree, 1 with the differences printed."""
import json
import sys

import same_answer

TIMED = {"now_ns", "now_utc", "ended_ns", "last_seen_ns", "last_seen_utc", "for_ns", "since_utc", "events_per_s", "bus_bw_gbps"}
METRICS = ("ncclscope_collector_live_processes", "ncclscope_collector_live_agents",
           "ncclscope_collector_live_comms", "ncclscope_collector_live_hangs",
           "ncclscope_collector_live_lagging", "ncclscope_comm_ranks", "ncclscope_comm_ranks_seen",
           "ncclscope_comm_events_total", "ncclscope_comm_lagging_ranks", "ncclscope_comm_hung_ranks",
           "ncclscope_comm_collectives_in_flight", "ncclscope_comm_info",
           "ncclscope_comm_collectives_total", "ncclscope_comm_collective_duration_seconds",
           "ncclscope_comm_arrival_delay_seconds")


def untimed(v):
    if isinstance(v, dict):
        return {k: untimed(x) for k, x in v.items() if k not in TIMED}
    if isinstance(v, list):
        return [untimed(x) for x in v]
    return v


def wall_apart(a, b, slack):
    """None when the status' offsets are within slack (then both answers'
    times of day are compared without their time where the offsets differ)."""
    oa, ob = a["status"].pop("wall_offset_ns", None), b["status"].pop("wall_offset_ns", None)
    why = same_answer.wall_apart([] if oa is None else [oa], [] if ob is None else [ob], slack)
    if not why and oa != ob:
        for x in (a, b):
            for what in ("status", "live", "hosts"):
                x[what] = same_answer.without_wall(x[what])
    return why and "status." + why


def metric_lines(path):
    keep = []
    for line in open(path):
        name = line.split("{")[0].split(" ")[0]
        if any(name == m or name.startswith(m + "_") for m in METRICS):
            keep.append(line.rstrip("\n"))
    return sorted(keep)


def load(folder):
    return {
        "status": untimed(json.load(open(folder + "/status.json"))),
        "live": untimed(json.load(open(folder + "/live.json"))),
        "hosts": json.load(open(folder + "/hosts.json")),
        "metrics": metric_lines(folder + "/metrics.txt"),
    }


def first_difference(a, b, path=""):
    if type(a) is not type(b):
        return "%s: %r against %r" % (path, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s.%s: only in %s" % (path, k, "A" if k in a else "B")
            d = first_difference(a[k], b[k], path + "." + k)
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d items against %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: %r against %r" % (path, a, b)


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    bad = 0
    d = wall_apart(a, b, int(sys.argv[3]))
    if d:
        bad += 1
        print("live-same: %s" % d, file=sys.stderr)
    for what in ("status", "live", "hosts", "metrics"):
        d = first_difference(a[what], b[what], what)
        if d:
            bad += 1
            print("live-same: %s" % d, file=sys.stderr)
    sys.exit(1 if bad else 0)


main()
