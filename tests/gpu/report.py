"""report.py OUT_DIR NRANKS TORCH NCCL GPUS: the GPU check's report (markdown).

Reads OUT_DIR/check.json (check_store.py) and OUT_DIR/bench-{none,empty,
ncclscope}.jsonl (workload.py bench): NCCL's latency per operation with no
plugin, the empty plugin and ncclscope, and what each plugin adds; and the
plugin's own measure of its cost in the check's job and, where
OUT_DIR/cost-bench.json is, in the latency job.
"""
import json
import os
import sys

MODES = ("none", "empty", "ncclscope")


def bench(out):
    table = {}
    for mode in MODES:
        with open(os.path.join(out, f"bench-{mode}.jsonl")) as f:
            for line in f:
                r = json.loads(line)
                table.setdefault(r["op"], {"bytes": r["bytes"], "iters": r["iters"],
                                           "blocks": r["blocks"]})[mode] = r["us"]
    return table


def main(argv):
    if len(argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    out, nranks, torch_version, nccl, gpus = argv[1:]
    check = json.load(open(os.path.join(out, "check.json")))
    print(f"# ncclscope GPU check\n\n{nranks} rank(s) on {gpus}; PyTorch {torch_version}, "
          f"NCCL {nccl}.\nPlugin served: {'; '.join(check['served']) or 'nothing logged'}.\n")
    print(f"## Store checks ({check['collectives']} collectives)\n")
    for r in check["checks"]:
        print(f"- {'ok' if r['ok'] else '**FAIL**'}: {r['check']}"
              f"{' (' + r['detail'] + ')' if r['detail'] else ''}")
    rows = bench(out)
    any_row = next(iter(rows.values()))
    print(f"\n## NCCL latency per operation\n\n{any_row['bytes']} B per rank, "
          f"{any_row['iters']} iterations after a warm-up, in {any_row['blocks']} timed blocks: the median "
          "block's mean per call, the slowest rank's; "
          "NCCL_PROFILER_PLUGIN=none, the empty plugin, ncclscope (default mask, local agent).\n")
    print("| operation | none (us) | empty (us) | ncclscope (us) | ncclscope - none | ncclscope - empty |")
    print("|---|---|---|---|---|---|")
    for op, r in rows.items():
        print(f"| {op} | {r['none']:.2f} | {r['empty']:.2f} | {r['ncclscope']:.2f} | "
              f"{r['ncclscope'] - r['none']:+.2f} | {r['ncclscope'] - r['empty']:+.2f} |")
    print_cost(out, check)
    return 0


def print_cost(out, check):
    jobs = [("check job", check.get("cost"))]
    path = os.path.join(out, "cost-bench.json")
    if os.path.exists(path):
        jobs.append(("latency job", json.load(open(path))))
    print("\n## The plugin's cost, as it measured it\n")
    print("CPU time on NCCL's threads per profiler call (startEvent, stopEvent, "
          "recordEventState), sampled by the self-cost guard (docs/plugin.md).\n")
    print("| job | calls | ns per call | % of collective time |")
    print("|---|---|---|---|")
    for name, c in jobs:
        if c:
            print(f"| {name} | {c['calls']} | {c['ns_per_call']} | {c['pct_of_collectives']} |")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
