#!/usr/bin/env bash
# The main job, end to end on one machine: install what is missing, build,
# start a collector and one agent per simulated node, run an emulated
# 2-node x 4-rank NCCL job through the real profiler plugin (AllReduce with PXN
# and one straggler, a send/receive exchange, a ring AllReduce over one slow
# link), after a small training job (TP2 x PP2 x DP2, one GPU slow from its
# 4th step on), and show what ncclscope saw: status, collectives, topology,
# stats, links, diagnose (with the root causes: for the training job the
# slow GPU's rank as the origin, its onset and cost, the ranks it delayed
# as affected) and a Perfetto trace.
# Everything it starts listens on 127.0.0.1 and is stopped at the end.
#
#   scripts/demo.sh [OUT_DIR]     (default: a new /tmp/ncclscope-demo.XXXXXX)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/deps.sh
echo "== build (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" \
  --target ncclscope-collector ncclscope-agent ncclscope ncclscope-emu nccl-profiler-ncclscope \
  >build/demo-build.log 2>&1 || { tail -40 build/demo-build.log; exit 1; }

bin=$root/build/bin
plugin=$root/build/lib/libnccl-profiler-ncclscope.so
out=${1:-$(mktemp -d /tmp/ncclscope-demo.XXXXXX)}
mkdir -p "$out"
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop_all EXIT

echo "== collector and agents (logs in $out)"
"$bin/ncclscope-collector" --db "$out/db" --listen tcp://127.0.0.1:0 --http 127.0.0.1:0 \
  --port-file "$out/ports" 2>"$out/collector.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$out/ports" ] && grep -q http "$out/ports" && break; sleep 0.1; done
zmq_port=$(awk '$1 == "zmq" {print $2}' "$out/ports")
http_port=$(awk '$1 == "http" {print $2}' "$out/ports")
[ -n "$zmq_port" ] && [ -n "$http_port" ] || { cat "$out/collector.log"; exit 1; }
export NCCLSCOPE_COLLECTOR=http://127.0.0.1:$http_port
for n in 0 1; do
  mkdir -p "$out/run/node$n"
  "$bin/ncclscope-agent" --rundir "$out/run/node$n" --host-name "node$n" --agent-id "agent-node$n" \
    --http off --collector "tcp://127.0.0.1:$zmq_port" 2>"$out/agent$n.log" &
  pids+=($!)
done
for n in 0 1; do
  for _ in $(seq 100); do [ -S "$out/run/node$n/agent.sock" ] && break; sleep 0.1; done
done

emu() {
  NCCLSCOPE_JOB=${job:-demo} "$bin/ncclscope-emu" --plugin "$plugin" --nodes 2 --ranks-per-node 4 \
    --rundir-base "$out/run" --host-prefix node "$@"
}
echo "== emulated job 'demo-train': TP2 x PP2 x DP2 on 2 nodes x 4 ranks, 1F1B over 3 microbatches,"
echo "   +-300 us jitter on every rank, rank 1's GPU 3 ms slow before each collective from step 3 on"
job=demo-train emu --scenario train --tp 2 --pp 2 --dp 2 --microbatches 3 --iters 8 --jitter-us 300 \
  --slow-gpu 1:3000 --fault-from 3 --seed 5 --summary "$out/train.json"
echo "== emulated job 'demo': 2 nodes x 4 ranks, AllReduce with PXN, rank 5 a straggler"
emu --scenario pxn --iters 40 --count 1048576 --slow-rank 5 --slow-us 4000 \
  --summary "$out/allreduce.json"
emu --scenario p2p --iters 10 --seed 7 --summary "$out/sendrecv.json"
echo "== emulated job 'demo': a ring AllReduce over the same ranks, the link node0 -> node1 4x slow"
# Every rank waits for the slow link, and the first to wait (node1's receiver)
# looks like a straggler by arrival alone; the network step times (ProxyStep,
# in the default event mask, folded into the agents' ledger) say which link.
emu --scenario ring --iters 12 --channels 2 --count 4194304 \
  --chunk-size 2097152 --slow-link 0:1:4 --seed 3 --summary "$out/slowlink.json"

# Everything the ranks emitted, then wait until the collector stored it all.
want=$(python3 -c 'import json,sys
t = [json.load(open(f))["totals"] for f in sys.argv[1:]]
print(sum(sum(x["calls"]["start"].values()) + sum(x["foreign"]["start"].values()) for x in t))' \
  "$out/allreduce.json" "$out/sendrecv.json" "$out/slowlink.json" "$out/train.json" 2>/dev/null || echo 0)
for _ in $(seq 100); do
  got=$("$bin/ncclscope" status --json | python3 -c 'import json,sys
print(json.load(sys.stdin)["events_total"])' 2>/dev/null || echo 0)
  [ "$want" -gt 0 ] && [ "$got" -ge "$want" ] && break
  sleep 0.2
done
echo "emitted $want events, collector holds $got"
# The agents fold each rank's part of a collective into a ledger record once
# it completed, and send those on their own flush: wait for them too, or the
# views would answer from the raw events alone.
want_ledger=$(python3 -c 'import json,sys
print(sum(len(r["collectives"]) for f in sys.argv[1:] for r in json.load(open(f))["ranks"]))' \
  "$out/allreduce.json" "$out/sendrecv.json" "$out/slowlink.json" "$out/train.json" 2>/dev/null || echo 0)
for _ in $(seq 100); do
  got_ledger=$(python3 -c 'import sys,urllib.request
for line in urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=5).read().decode().splitlines():
    if line.startswith("ncclscope_collector_store_ledger_records "):
        print(int(float(line.split()[1])))' "$NCCLSCOPE_COLLECTOR" 2>/dev/null || echo 0)
  [ "$want_ledger" -gt 0 ] && [ "${got_ledger:-0}" -ge "$want_ledger" ] && break
  sleep 0.2
done
echo "completed $want_ledger collective parts (ledger records), collector holds ${got_ledger:-0}"

# Both runs call their communicator "world": name them by id, from what the
# emulator says it created.
comm_of() { python3 -c 'import json,sys; print(hex(json.load(open(sys.argv[1]))["ranks"][0]["comm_id"]))' "$1"; }
allreduce=$(comm_of "$out/allreduce.json")
sendrecv=$(comm_of "$out/sendrecv.json")
slowlink=$(comm_of "$out/slowlink.json")
show() { echo; echo "\$ ncclscope $*"; "$bin/ncclscope" "$@" || true; }
show status
show comms
show collectives --comm "$allreduce" --seq 30-37
show ledger --comm "$allreduce" --seq 30 --rank 4-5
show topology --comm "$allreduce"
show stats --comm "$allreduce"
show timeline --comm "$sendrecv" --width 72
show links --comm "$slowlink"
show diagnose
python3 -c 'import json,sys; t = json.load(open(sys.argv[1]))["fault_truth"][0]["onset"]
print("\nthe training job'"'"'s truth (emulator): rank 1'"'"'s GPU slow from step %d, first in comm 0x%x seq %d"
      % (t["step"], t["comm_id"], t["seq"]))' "$out/train.json"
show --job demo-train diagnose
show export --comm "$allreduce" --format perfetto -o "$out/demo.pftrace"
echo
echo "Perfetto trace: $out/demo.pftrace (open it at https://ui.perfetto.dev)"
echo "Store: $out/db (read it later with: $bin/ncclscope --db $out/db status)"
