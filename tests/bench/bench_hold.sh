#!/bin/bash
# bench_hold.sh: what the shipper's state hold costs (a benchmark, not run by
# ctest; docs/benchmarks.md, "## Plugin").
#
#   tests/bench/bench_hold.sh RUNS BUILD_DIR
#
# A ring of 2 nodes x 2 ranks, 4 channels, mask all, 1000 x 1 Mi-element
# AllReduce through the real plugin into a test receiver, with
# NCCLSCOPE_STATE_HOLD_MS=0 (states shipped as drained) and the default
# (held until their event), alternating within each of RUNS rounds so that
# both share the load. A run's figure is the CPU (user + system) of the
# emulator and every rank process, all threads, the shippers included,
# divided by the calls its summary counts (start, stop and state); then the
# states the receiver found apart from their event's batch. Medians last.
set -euo pipefail
runs=$1 build=$(cd "$2" && pwd)
d=$(mktemp -d)
rp=
trap '[ -z "$rp" ] || kill "$rp" 2>/dev/null; rm -rf "$d"' EXIT
eps=""
for n in 0 1; do
    mkdir -p "$d/node$n"
    eps="$eps${eps:+,}ipc://$d/node$n/agent.sock"
done
# one_run HOLD_MS: prints "HOLD_MS ns_per_call states_apart"
one_run() {
    rm -f "$d/ready"
    "$build/bin/ncclscope-test-receiver" "$eps" "$d/recv.json" --ready "$d/ready" &
    rp=$!
    for _ in $(seq 100); do [ -e "$d/ready" ] && break; sleep 0.05; done
    local cpu
    cpu=$({ NCCLSCOPE_STATE_HOLD_MS=$1 NCCLSCOPE_EVENT_MASK=all /usr/bin/time -f "%U %S" \
        "$build/bin/ncclscope-emu" --plugin "$build/lib/libnccl-profiler-ncclscope.so" --rundir-base "$d" \
        --scenario ring --nodes 2 --ranks-per-node 2 --channels 4 --iters 1000 --count 1048576 \
        --summary "$d/emu.json" >/dev/null; } 2>&1 | tail -1)
    kill -TERM "$rp"
    wait "$rp" || true
    rp=
    python3 -c 'import json,sys
e=json.load(open(sys.argv[2])); r=json.load(open(sys.argv[3])); c=e["totals"]["calls"]
calls=sum(sum(c[k].values()) for k in ("start","stop","state"))
u,s=map(float,sys.argv[4].split())
print(sys.argv[1], round((u+s)*1e9/calls), r["states_apart"])' "$1" "$d/emu.json" "$d/recv.json" "$cpu"
}
for _ in $(seq "$runs"); do
    one_run 0
    one_run 1000
done | tee "$d/runs" >&2
python3 -c 'import collections,statistics,sys
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    h,ns,apart=l.split(); d[h].append((int(ns),int(apart)))
for h,v in sorted(d.items(), key=lambda x: int(x[0])):
    print("NCCLSCOPE_STATE_HOLD_MS=%s: %d ns CPU per call (median of %d, %d-%d), states apart from their event: median %d" % (
        h, statistics.median(x for x,_ in v), len(v), min(x for x,_ in v), max(x for x,_ in v), statistics.median(a for _,a in v)))' "$d/runs"
