#!/usr/bin/env python3
"""drift_check.py EMU.json TIMELINE.ndjson COLLECTIVES.ndjson

Under the emulator's drifting-kernelch quirk (drift.sh): each KernelCh's GPU
times in the timeline, where given, are its own collective's: its start no
earlier than the device was ready for it (the emulator reads the start timer
1.5 us before the proxy's call) and its stop no later than it completed, each
within its gpu_err_ns, whose part beyond the host model's (err_ns) stays
under 1 ms (the other work's timers did not bend the GPU line: taken into it,
they widened the bounds to 12-25 ms); the
collectives mark some rank uncertain because its
timers were other work's; and the AllReduce after every Broadcast lost its
GPU times to that, none before the first. The collector's clock is the
emulator's true clock (one machine, no node clock skewed).
"""
import json
import sys

STALE = "a KernelCh timer of other work"
START_LAG_NS = 2000
MAX_ERR_NS = 1000000


def main(emu_path, tl_path, colls_path):
    emu = json.load(open(emu_path))
    truth = {(r["rank"], c["func"], c["seq"]): c for r in emu["ranks"] for c in r["collectives"]}
    events = [json.loads(line) for line in open(tl_path)]
    colls = {(e["rank"], e["id"]): e for e in events if e.get("type") == "Coll"}
    shown = 0
    for e in events:
        if e.get("type") != "KernelCh" or e.get("gpu_start_ns") is None:
            continue
        coll = colls[(e["rank"], e["parent"])]
        t = truth[(e["rank"], coll["func"], coll["seq"])]
        err = e["gpu_err_ns"]
        if err - e["err_ns"] >= MAX_ERR_NS:
            sys.exit("rank %d %s seq %d: GPU bound %d ns, host's %d: the line was moved" %
                     (e["rank"], coll["func"], coll["seq"], err, e["err_ns"]))
        if e["gpu_start_ns"] + err + START_LAG_NS < t["ready_ns"] or e["gpu_stop_ns"] - err > t["complete_ns"]:
            sys.exit("rank %d %s seq %d channel %d: GPU %d..%d +- %d is not its own (ready %d, completed %d)" %
                     (e["rank"], coll["func"], coll["seq"], e["channel"], e["gpu_start_ns"], e["gpu_stop_ns"], err,
                      t["ready_ns"], t["complete_ns"]))
        shown += 1
    stale = {}
    for line in open(colls_path):
        c = json.loads(line)
        if c["kind"] == "collective":
            for r in c["ranks"]:
                stale[(r["rank"], c["func"], c["seq"])] = (r["uncertain_reason"] or "").startswith(STALE)
    allreduce = sorted(k for k in stale if k[1] == "AllReduce")
    want = {k: k[2] > 0 for k in allreduce}
    got = {k: stale[k] for k in allreduce}
    if got != want:
        sys.exit("ranks marked for stale timers: %s, want every AllReduce after the first Broadcast" %
                 sorted(k for k, v in got.items() if v))
    print("drift: %d KernelChs with GPU times, each its own; %d of %d AllReduce ranks marked stale" %
          (shown, sum(got.values()), len(got)))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
