#!/usr/bin/env python3
"""rootcause_check_test.py: rootcause_check.py tells a late GPU that
diagnose missed where the emulator played it (wrong, exit 1) from one it
missed where a loaded emulator stamped every collective late, so that no
recorded time carries the delay (unplayed, exit 2); a found one stays
right (exit 0). Summaries of a 4-rank ring, rank 2's GPU 4 ms slow; and a
train job's hung rank, named in a communicator split off the world one by
its rank there, at the collective after its last there, is right."""
import json
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rootcause_check.py")
COMM = 7
SEQS = range(12)
DELAY = 4000000


def summary(lag_ns):
    """The emulator's summary, each collective ending lag_ns after its
    modelled end on every rank."""
    colls = [{"func": "AllReduce", "seq": s, "end_ns": 1000000 * s, "complete_ns": 1000000 * s + lag_ns}
             for s in SEQS]
    ranks = [{"comm_id": COMM, "rank": r, "nranks": 4, "host": "node%d" % r, "collectives": colls}
             for r in range(4)]
    fault = {"kind": "slow_gpu", "rank": 2, "delay_ns": DELAY, "from": 0, "every": 1}
    truth = [{"kind": "slow_gpu", "onset": {"comm_id": COMM, "func": "AllReduce", "seq": 0},
              "collectives": [{"comm_id": COMM, "func": "AllReduce", "seq": s} for s in SEQS]}]
    return {"scenario": "ring", "faults": [fault], "ranks": ranks, "fault_truth": truth}


def train_hang():
    """A train job's summary: world rank 5 (pid 105) hung at step 1, rank 1
    of a tensor-parallel communicator (comm 9) there, which ran 16 collectives
    before; diagnose names it missing there by that communicator's rank."""
    world = [{"comm_id": 8, "rank": r, "nranks": 8, "host": "node0", "pid": 100 + r, "collectives": []}
             for r in range(8)]
    tp = [{"comm_id": 9, "rank": k, "nranks": 4, "host": "node0", "pid": 104 + k,
           "collectives": [{"func": "AllReduce", "seq": s} for s in range(16)]} for k in range(4)]
    emu = {"scenario": "train", "faults": [{"kind": "hang", "rank": 5, "coll": 1}], "ranks": world + tp}
    diag = {"verdict": "PROBLEM", "problems": [{"kind": "missing", "comm": "0x9", "rank": 1, "seq": 16,
                                                "hosts": ["node0"], "began": "2026-01-01T00:00:00Z"}]}
    return emu, diag


def found():
    return {"verdict": "SLOW", "problems": [{"kind": "gpu_late", "comm": "0x7", "rank": 2, "hosts": ["node2"],
                                             "began": "2026-01-01T00:00:00Z",
                                             "figures": {"onset_seq": 0, "every": 1}}]}


def check(tmp, emu, diag):
    paths = []
    for name, doc in (("emu.json", emu), ("diag.json", diag)):
        paths.append(os.path.join(tmp, name))
        with open(paths[-1], "w") as f:
            json.dump(doc, f)
    r = subprocess.run([sys.executable, CHECK] + paths, capture_output=True, text=True)
    return r.returncode, r.stdout.strip()


def main():
    nothing = {"verdict": "OK: no problem found in 12 collectives", "problems": []}
    cases = [
        ("played, missed", summary(0), nothing, 1, "wrong: "),
        ("stamped 10 ms late, missed", summary(10000000), nothing, 2, "unplayed: "),
        ("played, found", summary(0), found(), 0, "right: "),
        ("train hang, named by its communicator's rank", *train_hang(), 0, "right: "),
    ]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, emu, diag, want_rc, want in cases:
            rc, out = check(tmp, emu, diag)
            if rc != want_rc or not out.startswith(want):
                print("%s: exit %d, %r; want exit %d, %r" % (name, rc, out, want_rc, want))
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
