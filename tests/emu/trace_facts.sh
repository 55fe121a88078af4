#!/bin/bash
# trace_facts.sh BIN_DIR LIB_DIR: the facts of real NCCL's calls
# (trace_facts.py) hold in the GPU check's call logs of NCCL 2.28.9, fail on
# one that breaks them, and hold in the emulator's graph, p2p and ring jobs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$1 lib=$2
real=$here/../data/nccl-traces/gpu-check-2rank-nccl2.28.9
dir=$(mktemp -d /tmp/nsc-trace-facts-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "trace_facts: $*" >&2; cat "$dir"/*.txt >&2 2>/dev/null || true; exit 1; }

python3 "$here/trace_facts.py" "$real"-rank0.jsonl "$real"-rank1.jsonl >"$dir/real.txt" || fail "real logs"
# The replays moved onto the capturing thread: what the emulator once did.
sed 's/"tid":950,/"tid":926,/' "$real"-rank0.jsonl >"$dir/moved.jsonl"
python3 "$here/trace_facts.py" "$dir/moved.jsonl" >"$dir/moved.txt" && fail "a moved replay passed"
grep -q "^FAIL moved.jsonl: a replay's Coll starts on another thread (2 of 2)" "$dir/moved.txt" ||
    fail "a moved replay: no failure"
rm "$dir/moved.txt"

for sc in graph p2p ring; do
    mkdir "$dir/$sc"
    NCCLSCOPE_TEST_RECORD_FILE="$dir/$sc/rec-%p.jsonl" "$bin/ncclscope-emu" \
        --plugin "$lib/libnccl-profiler-record.so" --api 5 --scenario $sc --nodes 2 --ranks-per-node 1 \
        --iters 3 --rundir-base "$dir/$sc/base" >"$dir/$sc.log" 2>&1 || fail "emulator $sc"
    python3 "$here/trace_facts.py" "$dir/$sc"/rec-*.jsonl >"$dir/$sc.txt" || fail "emulator $sc"
done
echo "trace_facts: ok"
