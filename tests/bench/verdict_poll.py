#!/usr/bin/env python3
"""verdict_poll.py: how long after a fault's onset the collectors'
/api/v1/diagnose names its cause and place (bench_verdict.sh).

    verdict_poll.py poll OUT_DIR JOB PERIOD STOP_FILE NAME=HOST:PORT...

asks each collector in turn, every PERIOD seconds, until STOP_FILE exists,
and keeps each answer (OUT_DIR/NNNNN-NAME.json) and one line per answer in
OUT_DIR/index: "NNNNN NAME DONE_NS", DONE_NS the CLOCK_MONOTONIC time the
answer was whole (the clock of the emulator's summary times).

    verdict_poll.py first OUT_DIR EMU_SUMMARY KIND

once the job has ended (its summary holds the ground truth): checks the
answers in order with tests/e2e/rootcause_check.py and prints
"FIRST NAME AMONG NAME": the seconds from the fault's onset to the first
answer whose verdict (first problem) names the fault's cause and place, and
to the first that names it among its problems, and which collector
answered ("none -" where none did).
"""
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def poll(out, job, period, stop, targets):
    q = urllib.parse.urlencode({"job": job})
    n = 0
    with open(os.path.join(out, "index"), "w") as index:
        while not os.path.exists(stop):
            t0 = time.monotonic()
            for name, addr in targets:
                try:
                    body = urllib.request.urlopen("http://%s/api/v1/diagnose?%s" % (addr, q), timeout=60).read()
                except (urllib.error.URLError, OSError):
                    continue  # no job yet (404) or a collector gone: the next turn asks again
                done = time.monotonic_ns()
                with open(os.path.join(out, "%05d-%s.json" % (n, name)), "wb") as f:
                    f.write(body)
                index.write("%05d %s %d\n" % (n, name, done))
                index.flush()
                n += 1
            time.sleep(max(0.0, period - (time.monotonic() - t0)))


def onset_ns(emu, kind):
    """When the fault began (CLOCK_MONOTONIC ns): a late host's or slow
    link's first affected collective began (fault_truth); a stalled
    collective began on its rank; a hang began when the first other rank
    entered the collective the hung rank never reached."""
    if kind in ("host_late", "slow_link"):
        return min(t["onset"]["api_start_ns"] for t in emu["fault_truth"] if t["kind"] == kind)
    f = next(x for x in emu["faults"] if x["kind"] == kind)
    starts = [r["collectives"][f["coll"]]["start_ns"] for r in emu["ranks"]
              if len(r["collectives"]) > f["coll"] and (kind == "hang") != (r["rank"] == f["rank"])]
    return min(starts)


def first(out, summary, kind):
    """Seconds from the onset to the first answer naming the fault first
    (the verdict) and to the first naming it among its problems; None for
    never."""
    emu = json.load(open(summary))
    t0 = onset_ns(emu, kind)
    check = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "rootcause_check.py")
    got = {"first": None, "among": None}
    for line in open(os.path.join(out, "index")):
        n, name, done = line.split()
        answer = os.path.join(out, "%s-%s.json" % (n, name))
        for how, extra in (("first", []), ("among", [kind])):
            if got[how] is None and subprocess.run([sys.executable, check, summary, answer] + extra,
                                                   stdout=subprocess.DEVNULL).returncode == 0:
                got[how] = ((int(done) - t0) / 1e9, name)
        if got["first"]:
            break
    print(" ".join("%.3f %s" % got[h] if got[h] else "none -" for h in ("first", "among")))
    return 0


def main():
    if sys.argv[1] == "poll":
        poll(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5], [a.split("=", 1) for a in sys.argv[6:]])
        return 0
    return first(sys.argv[2], sys.argv[3], sys.argv[4])


if __name__ == "__main__":
    sys.exit(main())
