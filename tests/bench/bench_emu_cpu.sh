#!/bin/bash
# bench_emu_cpu.sh: the emulator's CPU per plugin call with the time model
# (a benchmark, not run by ctest).
#
#   tests/bench/bench_emu_cpu.sh RUNS BUILD_DIR [BUILD_DIR ...]
#
# Each BUILD_DIR holds bin/ncclscope-emu and lib/libnccl-profiler-empty.so
# (this tree's build, and baselines built from older commits: issue 16's is
# ef47e90, the emulator before the time model). Two jobs, both a ring of 2
# nodes x 2 ranks with 4 channels and the empty plugin, mask all: 4000 x 256
# KiB AllReduce and 1000 x 4 MiB. A run is `perf stat` task-clock (CPU of the
# launcher and every rank process, all threads) and context switches, divided
# by the calls the summary counts (start, stop and state, every rank). The
# builds alternate within each of RUNS rounds, so they share the load; the
# medians (with the range, and the ratio to the first BUILD_DIR) come last.
# NSC_BENCH_EMU_TRAIN=1: the jobs are instead a ring and a train job of the
# same 2 nodes x 4 ranks and op size, 256 KiB (ring: 2000 AllReduces; train:
# TP2 x PP2 x DP2, 4 microbatches, 100 steps), alternating in each round; the
# ratio to the ring job comes last too.
set -euo pipefail
runs=$1
shift
builds=()
for b in "$@"; do builds+=("$(cd "$b" && pwd)"); done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jobs=("--scenario ring --nodes 2 --ranks-per-node 2 --channels 4 --iters 4000"
      "--scenario ring --nodes 2 --ranks-per-node 2 --channels 4 --iters 1000 --count 1048576")
names=("256KiB" "4MiB")
if [ "${NSC_BENCH_EMU_TRAIN:-0}" = 1 ]; then
    jobs=("--scenario ring --nodes 2 --ranks-per-node 4 --iters 2000"
          "--scenario train --nodes 2 --ranks-per-node 4 --tp 2 --pp 2 --dp 2 --microbatches 4 --iters 100")
    names=("ring" "train")
fi

# one_run BUILD JOB_INDEX: prints "ns_per_call context_switches"
one_run() {
    local out ms cs
    out=$(perf stat -x, -e task-clock,context-switches env LD_LIBRARY_PATH="$1/lib" "$1/bin/ncclscope-emu" \
        --plugin empty --mask all ${jobs[$2]} \
        --summary "$tmp/s.json" 2>&1 >/dev/null)
    ms=$(echo "$out" | awk -F, '/task-clock/{print $1}')
    cs=$(echo "$out" | awk -F, '/context-switches/{print $1}')
    python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))["totals"]["calls"]
print("%.1f" % (float(sys.argv[2]) * 1e6 / sum(sum(v.values()) for v in t.values())), sys.argv[3])' \
        "$tmp/s.json" "$ms" "$cs"
}

for ((i = 0; i < runs; i++)); do
    for b in "${builds[@]}"; do
        for j in 0 1; do
            echo "$b ${names[$j]} $(one_run "$b" $j)" | tee -a "$tmp/all"
        done
    done
    echo "round $((i + 1)): $(uptime)"
done
python3 - "$tmp/all" "${builds[0]}" <<'EOF'
import collections, statistics, sys
ns, cs = collections.defaultdict(list), collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    b, job, n, c = line.split()
    if (b, job) not in ns:
        order.append((b, job))
    ns[(b, job)].append(float(n))
    cs[(b, job)].append(int(c))
for b, job in order:
    v = ns[(b, job)]
    base = statistics.median(ns[(sys.argv[2], job)])
    first_job = statistics.median(ns[(b, order[0][1])])
    print("%s %s: %.1f ns/call (%.1f-%.1f), %d context switches, %.2fx the first build, %.2fx the first job"
          % (b, job, statistics.median(v), min(v), max(v), statistics.median(cs[(b, job)]),
             statistics.median(v) / base, statistics.median(v) / first_job))
EOF
