#!/bin/bash
# bench_mask_cpu.sh: the plugin's CPU per collective at each event mask, in
# one run (a benchmark, not run by ctest; docs/benchmarks.md "Default mask").
#
#   tests/bench/bench_mask_cpu.sh RUNS BIN_DIR PLUGIN MASK...
#
# The full pipeline on loopback (lib.sh: a collector, one agent per node).
# A job is the emulator's ring of 2 nodes x 2 ranks, 2 channels, 300 x 4 MiB
# AllReduce in 2 MiB steps; a run is `perf stat` task-clock of the emulator
# and its rank processes (not the agents' or the collector's) divided by the
# collectives (iterations x ranks). Per mask, the job runs with the real
# plugin (NCCLSCOPE_EVENT_MASK) and with the empty one (--mask: the
# emulator's own cost at that mask); the plugin's cost is the difference.
# Masks and plugins alternate within each of RUNS rounds, so they share the
# load; the medians come last.
set -euo pipefail
bin=$1 plugin=$2 runs=$3
shift 3
masks=("$@")
nodes=2
. "$(dirname "$0")/../e2e/lib.sh"
iters=300
args=(--scenario ring --nodes $nodes --ranks-per-node 2 --channels 2 --count 1048576 --chunk-size 2097152
      --iters $iters)
start_all

# one_run MASK real|empty: prints the CPU ns per collective
one_run() {
    local out ms
    if [ "$2" = real ]; then
        out=$(NCCLSCOPE_JOB=bench NCCLSCOPE_EVENT_MASK=$1 perf stat -x, -e task-clock "$bin/ncclscope-emu" \
            --plugin "$plugin" --rundir-base "$dir" "${args[@]}" 2>&1 >/dev/null)
    else
        out=$(perf stat -x, -e task-clock "$bin/ncclscope-emu" --plugin empty --mask "$1" \
            --rundir-base "$dir" "${args[@]}" 2>&1 >/dev/null)
    fi
    ms=$(echo "$out" | awk -F, '/task-clock/{print $1}')
    python3 -c 'import sys; print("%.0f" % (float(sys.argv[1]) * 1e6 / float(sys.argv[2])))' "$ms" $((iters * 4))
}

for ((i = 0; i < runs; i++)); do
    for m in "${masks[@]}"; do
        for p in real empty; do echo "$m $p $(one_run "$m" $p)" | tee -a "$dir/all"; done
    done
    echo "round $((i + 1)): $(uptime)"
done
python3 - "$dir/all" <<'EOF'
import collections, statistics, sys
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m, p, ns = line.split()
    v[(m, p)].append(float(ns))
for m in dict.fromkeys(k[0] for k in v):
    real, empty = statistics.median(v[(m, "real")]), statistics.median(v[(m, "empty")])
    print("mask %s: %.0f ns CPU per collective with the plugin, %.0f without: the plugin %.0f ns"
          % (m, real, empty, real - empty))
EOF
