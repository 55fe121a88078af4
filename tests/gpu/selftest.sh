#!/bin/bash
# selftest.sh BIN_DIR LIB_DIR: the GPU check's parts that need no GPU, against
# an emulated job (ncclscope-emu, two ranks, the real plugin, collector and
# agent): check_store.py passes on what was stored and fails when more was
# expected; a captured graph's replays are stored as graph-captured;
# report.py renders the checks and a latency table; run.sh on a machine
# without a GPU or PyTorch says so and exits 3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$1 lib=$2
dir=$(mktemp -d /tmp/nsc-gpu-self-XXXXXX)
trap '"$bin/ncclscope" down --run-dir "$dir/run" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
fail() { echo "selftest: $*" >&2; tail -n 20 "$dir"/*.log "$dir"/*.txt >&2 2>/dev/null || true; exit 1; }

"$bin/ncclscope" up --run-dir "$dir/run" --port 0 --zmq-port 0 --agent-port 0 >"$dir/up.log" 2>&1 || fail "up"
url=http://127.0.0.1:$(awk '$1 == "http" { print $2 }' "$dir/run/collector.ports")
mkdir "$dir/base" && ln -s "$dir/run" "$dir/base/node0"   # the emulator's node 0 is the local agent
NCCL_DEBUG=INFO NCCLSCOPE_JOB=self "$bin/ncclscope-emu" --plugin "$lib/libnccl-profiler-ncclscope.so" \
    --scenario coll --ranks-per-node 2 --iters 3 --rundir-base "$dir/base" >"$dir/job.log" 2>&1 || fail "emulator"

echo '{"ranks": 2, "funcs": {"AllReduce": 3}, "p2p": 0, "graph_captured": 0, "nccl": "2.31.2"}' >"$dir/expect.json"
check() { python3 "$here/check_store.py" "$bin/ncclscope" "$url" self "$1" "$dir/job.log" --json "$dir/check.json"; }
ok=0
for _ in $(seq 100); do  # the agent forwards within a second or so; 20 s under the sanitizers
    if check "$dir/expect.json" >"$dir/check.txt" 2>&1; then ok=1; break; fi
    sleep 0.2
done
[ $ok = 1 ] || fail "check_store.py failed on the emulated job"
grep -q "^ok   NCCL version and ABI logged by the plugin: NCCL 2.31.2 ncclProfiler_v7" "$dir/check.txt" ||
    fail "no version line"

echo '{"ranks": 2, "funcs": {"AllReduce": 4}, "p2p": 0, "graph_captured": 1, "nccl": "2.30.1"}' >"$dir/more.json"
check "$dir/more.json" >"$dir/more.txt" 2>&1 && fail "check_store.py passed with more expected than run"
for f in "AllReduce collectives stored: 3 (at least 4)" "graph-captured collectives stored: 0" \
         "logged version is the job's NCCL: job 2.30.1"; do
    grep -q "^FAIL $f" "$dir/more.txt" || fail "expected a failure: $f"
done

# A captured graph's replays name the capture's CollApi: each is graph-captured.
NCCLSCOPE_JOB=selfg "$bin/ncclscope-emu" --plugin "$lib/libnccl-profiler-ncclscope.so" \
    --scenario graph --ranks-per-node 2 --iters 3 --rundir-base "$dir/base" >"$dir/graph.log" 2>&1 || fail "emulator (graph)"
echo '{"ranks": 2, "funcs": {"AllReduce": 3}, "p2p": 0, "graph_captured": 3}' >"$dir/graph.json"
ok=0
for _ in $(seq 100); do
    python3 "$here/check_store.py" "$bin/ncclscope" "$url" selfg "$dir/graph.json" "$dir/graph.log" \
        >"$dir/graph.txt" 2>&1 || true
    if grep -q "^ok   graph-captured collectives stored: 3 " "$dir/graph.txt"; then ok=1; break; fi
    sleep 0.2
done
[ $ok = 1 ] || fail "graph replays not stored as graph-captured"

check "$dir/expect.json" >/dev/null
for m in none empty ncclscope; do  # latency inputs for the report: none < empty < ncclscope
    us=$(case $m in none) echo 10.0 ;; empty) echo 10.5 ;; ncclscope) echo 11.25 ;; esac)
    echo "{\"op\": \"AllReduce\", \"us\": $us, \"bytes\": 1024, \"iters\": 2000, \"blocks\": 20}" >"$dir/bench-$m.jsonl"
done
python3 "$here/report.py" "$dir" 2 2.x 2.31.2 "2 emulated" >"$dir/report.md"
grep -q "^| AllReduce | 10.00 | 10.50 | 11.25 | +1.25 | +0.75 |$" "$dir/report.md" || fail "report table"
grep -q "^- ok: every collective matched on every rank" "$dir/report.md" || fail "report checks"
grep -q "2000 iterations after a warm-up, in 20 timed blocks" "$dir/report.md" || fail "report: the blocks"
grep -Eq "^\| check job \| [1-9][0-9]* \| [0-9.]+ \| [0-9.]+ \|$" "$dir/report.md" || fail "report: the plugin's cost"

PATH=/usr/bin:/bin PYTHON=false "$here/run.sh" "$dir/gpu" >"$dir/run.txt" 2>&1 && fail "run.sh ran without a GPU"
rc=$?
[ $rc = 3 ] && grep -q "^gpu check: .*nothing run" "$dir/run.txt" || fail "run.sh without a GPU: exit $rc"
echo "selftest: ok"
