#!/bin/bash
# bench_emu_steady.sh: how far a loaded machine moves the emulator's times
# (a benchmark, not run by ctest).
#
#   tests/bench/bench_emu_steady.sh RUNS LOOPS BUILD_DIR [BUILD_DIR ...]
#
# Each BUILD_DIR holds bin/ncclscope-emu, lib/libnsc-clockshim.so and
# lib/libnccl-profiler-empty.so (this tree's build, and a baseline built
# from an older commit). The job is rootcause.sh's 64-rank train job
# (TP4 x PP2 x DP8 on 8 nodes, 4 microbatches, 40 steps, +-300 us jitter)
# with the empty plugin, one seed. Per build, a quiet run, then RUNS runs
# with LOOPS busy loops beside it. A call's host lateness is its API start
# less the median of its communicator's ranks' for that call; the figure is
# how many of the 64,000 calls' lateness moved by 1 ms or more against the
# quiet run's (and how many of those are in the first step, where the
# processes start one by one). The same seed should give the same times
# (docs/emulator-model.md, "A machine's pauses").
set -euo pipefail
runs=$1 loops=$2
shift 2
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
job="--plugin empty --mask all --scenario train --nodes 8 --ranks-per-node 8 --tp 4 --pp 2 --dp 8 --microbatches 4
 --iters 40 --jitter-us 300 --count 65536 --chunk-size 131072"

# emu BUILD OUT: one run of the job, its summary in OUT
emu() {
    LD_LIBRARY_PATH="$1/lib" "$1/bin/ncclscope-emu" $job --summary "$2" >/dev/null 2>&1
}

for b in "$@"; do
    b=$(cd "$b" && pwd)
    emu "$b" "$tmp/quiet.json"
    for ((i = 0; i < runs; i++)); do
        pids=()
        for ((k = 0; k < loops; k++)); do
            sh -c 'while :; do :; done' &
            pids+=($!)
        done
        emu "$b" "$tmp/loaded.json"
        kill "${pids[@]}"
        wait "${pids[@]}" 2>/dev/null || true
        python3 - "$b" "$tmp/quiet.json" "$tmp/loaded.json" <<'EOF'
import json, statistics, sys

def lateness(path):
    """Each call's API start less its communicator's median, in ms, by
    (comm, func, seq, peer, rank), with its step."""
    by = {}
    for r in json.load(open(path))["ranks"]:
        for c in r["collectives"]:
            by.setdefault((r["comm_id"], c["func"], c["seq"], c["peer"]), []).append((r["rank"], c))
    out = {}
    for k, v in by.items():
        m = statistics.median_low([c["api_start_ns"] for _, c in v])
        for rank, c in v:
            out[k + (rank,)] = ((c["api_start_ns"] - m) / 1e6, c["step"])
    return out

quiet, loaded = lateness(sys.argv[2]), lateness(sys.argv[3])
moved = [quiet[k][1] for k in quiet if k in loaded and abs(quiet[k][0] - loaded[k][0]) >= 1]
print("%s: %d of %d calls moved 1 ms or more (%d in the first step)" %
      (sys.argv[1], len(moved), len(quiet), sum(s == 0 for s in moved)))
EOF
    done
done
