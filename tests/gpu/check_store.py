"""check_store.py: what the GPU check's job left in the collector, checked.

  check_store.py CLI COLLECTOR_URL JOB EXPECT.json LOG [--json OUT]
  check_store.py --cost CLI COLLECTOR_URL JOB OUT.json

EXPECT.json (written by workload.py, or by selftest.sh for an emulated job):
ranks, funcs {name: at least this many collectives}, p2p (P2p events per
rank, at least), graph_captured (collectives, at least), nccl (X.Y.Z).
Checks: every collective matched on every rank; KernelCh GPU times present,
fitted to the CPU time base and plausible; the plugin's log line names the
NCCL version and the ABI it serves (the store does not carry them); nothing
dropped. Prints one line per check; exit 0 when all pass, 1 otherwise. Also
the plugin's cost as its self-cost guard measured it in the job's processes
(docs/plugin.md), per profiler call and as a share of collective time: a
figure, not a check. --cost writes only that, for another job.
"""
import json
import re
import subprocess
import sys

SERVING = re.compile(r"ncclscope: (NCCL|RCCL) (\d+\.\d+\.\d+) \(([^)]*)\): serving ncclProfiler_v(\d+)")
PLAUSIBLE_KERNEL_NS = 10_000_000_000  # a small collective's kernel: far below 10 s
FIT_SLACK_NS = 1_000_000_000          # kernel start vs enqueue on the aligned base


class Check:
    def __init__(self):
        self.results = []

    def __call__(self, name, ok, detail=""):
        self.results.append({"check": name, "ok": bool(ok), "detail": detail})
        print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")


def cli(argv, url, job, *args):
    out = subprocess.run([argv, "--collector", url, "--job", job, "--json", *args],
                         check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def collectives(argv, url, job):
    comms = cli(argv, url, job, "comms")[0]["comms"]
    rows = []
    for c in comms:
        rows += [r for r in cli(argv, url, job, "collectives", "--comm", c["comm"])
                 if r.get("kind") == "collective"]
    return comms, rows


def check_matched(check, rows, expect):
    unmatched = [r for r in rows if r["missing_ranks"] or r["ranks_seen"] != r["nranks"]]
    check("every collective matched on every rank", not unmatched and rows,
          f"{len(rows)} collectives, {len(unmatched)} unmatched")
    for func, least in expect["funcs"].items():
        n = sum(1 for r in rows if r["func"] == func)
        check(f"{func} collectives stored", n >= least, f"{n} (at least {least})")
    g = sum(1 for r in rows if r.get("graph_captured"))
    check("graph-captured collectives stored", g >= expect.get("graph_captured", 0),
          f"{g} (at least {expect.get('graph_captured', 0)})")


def check_kernels(check, rows):
    eager = [(r, k) for r in rows if not r.get("graph_captured") for k in r["ranks"]]
    timed = [(r, k) for r, k in eager if k.get("kernel_start_ns") and k.get("kernel_end_ns")]
    check("KernelCh GPU times on every rank of every eager collective",
          eager and len(timed) == len(eager), f"{len(timed)} of {len(eager)}")
    bad = [(r["func"], r["seq"], k["rank"]) for r, k in timed
           if not (0 < k["kernel_end_ns"] - k["kernel_start_ns"] < PLAUSIBLE_KERNEL_NS
                   and abs(k["kernel_start_ns"] - k["enqueue_ns"]) < FIT_SLACK_NS)]
    check("GPU times plausible on the aligned time base", not bad, f"implausible: {bad[:5]}")


def check_clocks(check, argv, url, job, comms):
    unfitted = []
    for c in comms:
        header = cli(argv, url, job, "timeline", "--comm", c["comm"], "--limit", "1")[0]
        unfitted += [(c["name"], r["rank"], r["gpu_clock"]) for r in header["ranks"]
                     if r["gpu_clock"] != "fitted"]
    check("every rank's GPU clock fitted", not unfitted, f"not fitted: {unfitted[:5]}")


def check_p2p(check, argv, url, job, comms, expect):
    if not expect.get("p2p"):
        check("Send/Recv", True, "not run (one rank: PyTorch refuses a send to itself)")
        return
    per_rank = {}
    for c in comms:
        for e in cli(argv, url, job, "timeline", "--comm", c["comm"], "--type", "p2p"):
            if e.get("type") == "P2p":
                per_rank[e["rank"]] = per_rank.get(e["rank"], 0) + 1
    low = {r: n for r, n in per_rank.items() if n < expect["p2p"]}
    check("Send/Recv P2p events on every rank", len(per_rank) == expect["ranks"] and not low,
          f"per rank {per_rank} (at least {expect['p2p']})")


def check_drops(check, argv, url, job):
    status = cli(argv, url, job, "status")[0]
    mine = [j for j in status["jobs"] if j["job"] == job]
    procs = [p for p in status["processes"] if p["job"] == job]
    lost = sum(j["events_dropped"] + j["states_dropped"] for j in mine)
    lost += sum(p["events_dropped"] + p["states_dropped"] for p in procs)
    check("nothing dropped", mine and lost == 0, f"{len(procs)} processes, {lost} dropped")


def plugin_cost(argv, url, job):
    """The job's processes' own measure: CPU ns per profiler call (a start and
    a stop per event, one call per state) and % of collective time."""
    procs = [p for p in cli(argv, url, job, "status")[0]["processes"] if p["job"] == job]
    cost = sum(p["profiler_cost_ns"] for p in procs)
    coll = sum(p["collective_ns"] for p in procs)
    calls = sum(2 * p["events_emitted"] + p["states_emitted"] for p in procs)
    return {"processes": len(procs), "calls": calls, "cost_ns": cost,
            "ns_per_call": round(cost / calls, 1) if calls else None,
            "pct_of_collectives": round(100 * cost / coll, 4) if coll else None}


def check_version(check, log, expect):
    found = SERVING.findall(open(log, errors="replace").read())
    served = sorted({f"{d} {v} ncclProfiler_v{a}" for d, v, _, a in found})
    check("NCCL version and ABI logged by the plugin", found, "; ".join(served) or "no line")
    if found and expect.get("nccl"):
        check("logged version is the job's NCCL", all(v == expect["nccl"] for _, v, _, _ in found),
              f"job {expect['nccl']}")
    return served


def main(argv):
    if len(argv) == 6 and argv[1] == "--cost":
        with open(argv[5], "w") as f:
            json.dump(plugin_cost(*argv[2:5]), f)
        return 0
    if len(argv) not in (6, 8):
        print(__doc__, file=sys.stderr)
        return 2
    exe, url, job, expect_file, log = argv[1:6]
    expect = json.load(open(expect_file))
    check = Check()
    comms, rows = collectives(exe, url, job)
    check_matched(check, rows, expect)
    check_kernels(check, rows)
    check_clocks(check, exe, url, job, comms)
    check_p2p(check, exe, url, job, comms, expect)
    check_drops(check, exe, url, job)
    served = check_version(check, log, expect)
    cost = plugin_cost(exe, url, job)
    print(f"cost plugin: {cost['ns_per_call']} ns per profiler call ({cost['calls']} calls), "
          f"{cost['pct_of_collectives']} % of collective time")
    if len(argv) == 8:
        with open(argv[7], "w") as f:
            json.dump({"served": served, "collectives": len(rows), "checks": check.results,
                       "cost": cost}, f, indent=1)
    return 0 if all(r["ok"] for r in check.results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
