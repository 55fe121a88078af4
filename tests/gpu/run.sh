#!/bin/bash
# run.sh [OUT_DIR]: the GPU check, one command, on a machine with CUDA, PyTorch
# and PyTorch's NCCL (docs/benchmarks.md "GPU check").
#
# 1. builds ncclscope (build-gpu/, RelWithDebInfo) unless NCCLSCOPE_BUILD names a
#    build folder that has one;
# 2. starts a local collector and agent (ncclscope up, free ports);
# 3. runs workload.py check with torchrun, one rank per visible GPU (two ranks
#    on a machine with one; NCCLSCOPE_GPU_RANKS sets the number), our plugin
#    loaded by PyTorch's NCCL, and checks the store (check_store.py);
# 4. times NCCL's own latency per operation (small messages, many iterations)
#    with no plugin, the empty plugin and ours (agent running);
# 5. writes OUT_DIR/report.md (default ./gpu-check-<date>).
# Exit 0: every check passed; 1: a check failed; 3: no GPU, PyTorch or NCCL here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=${1:-gpu-check-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" && out=$(cd "$out" && pwd)
python=${PYTHON:-python3}
iters=${NCCLSCOPE_GPU_ITERS:-20}
bench_iters=${NCCLSCOPE_GPU_BENCH_ITERS:-2000}
bench_count=${NCCLSCOPE_GPU_BENCH_COUNT:-256}   # float32 elements: 1 KiB per rank
unavailable() { echo "gpu check: $*; nothing run" >&2; exit 3; }

command -v nvidia-smi >/dev/null || unavailable "no nvidia-smi (no NVIDIA driver)"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "$ngpu" -gt 0 ] || unavailable "nvidia-smi lists no GPU"
probe=$("$python" -c 'import torch, torch.distributed as d
assert torch.cuda.is_available(), "CUDA not available to PyTorch"
assert d.is_nccl_available(), "PyTorch built without NCCL"
print(torch.cuda.device_count(), ".".join(map(str, torch.cuda.nccl.version())), torch.__version__)' 2>&1) ||
    unavailable "PyTorch with CUDA and NCCL is needed: ${probe##*$'\n'}"
read -r ngpus nccl torch_version <<<"$probe"
# NCCL runs a one-rank communicator's collectives as a plain copy and tells the
# profiler nothing, so one GPU gets two ranks: each with its own NCCL_HOSTID
# (workload.py), NCCL takes them for two nodes and they talk over its network
# transport.
nranks=${NCCLSCOPE_GPU_RANKS:-$((ngpus > 1 ? ngpus : 2))}
shared=""
[ "$nranks" -le "$ngpus" ] || shared=", shared by $nranks ranks (NCCL_HOSTID per rank)"
echo "gpu check: $nranks rank(s) on $ngpus GPU(s)$shared, PyTorch $torch_version, NCCL $nccl; output in $out"

build=${NCCLSCOPE_BUILD:-$src/build-gpu}
if [ ! -x "$build/bin/ncclscope" ] || [ -z "${NCCLSCOPE_BUILD:-}" ]; then
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$out/build.log" 2>&1
    cmake --build "$build" -j"$(nproc)" >>"$out/build.log" 2>&1 || { tail -20 "$out/build.log" >&2; exit 1; }
fi
bin=$build/bin lib=$build/lib

run=$out/run
cleanup() { "$bin/ncclscope" down --run-dir "$run" >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$bin/ncclscope" up --run-dir "$run" --port 0 --zmq-port 0 --agent-port 0 >"$out/up.log" 2>&1 ||
    { cat "$out/up.log" >&2; exit 1; }
url=http://127.0.0.1:$(awk '$1 == "http" { print $2 }' "$run/collector.ports")

# torchrun's processes: our plugin, the local agent's socket, one job name.
torchrun() {
    "$python" -m torch.distributed.run --standalone --nproc_per_node="$nranks" "$here/workload.py" "$@"
}
job=gpu-check-$$
echo "== check: $nranks rank(s), $iters iterations per operation"
NCCL_PROFILER_PLUGIN=$lib/libnccl-profiler-ncclscope.so NCCLSCOPE_RUNDIR=$run NCCLSCOPE_JOB=$job \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT \
    torchrun check --iters "$iters" --expect "$out/expect.json" >"$out/check.log" 2>&1 ||
    { tail -30 "$out/check.log" >&2; exit 1; }
# The agent forwards within a second or two; the last batches may still be on their way.
sleep 3
rc=0
"$python" "$here/check_store.py" "$bin/ncclscope" "$url" "$job" "$out/expect.json" "$out/check.log" \
    --json "$out/check.json" | tee "$out/check.txt" || rc=1

echo "== latency: $bench_iters iterations of $((bench_count * 4)) B per rank, per operation"
for mode in none empty ncclscope; do
    case $mode in
    none) plugin=none ;;
    empty) plugin=$lib/libnccl-profiler-empty.so ;;
    ncclscope) plugin=$lib/libnccl-profiler-ncclscope.so ;;
    esac
    NCCL_PROFILER_PLUGIN=$plugin NCCLSCOPE_RUNDIR=$run NCCLSCOPE_JOB=$job-bench \
        torchrun bench --iters "$bench_iters" --count "$bench_count" --out "$out/bench-$mode.jsonl" \
        >"$out/bench-$mode.log" 2>&1 || { tail -30 "$out/bench-$mode.log" >&2; exit 1; }
done

sleep 3  # the latency job's last batches, as for the check's
"$python" "$here/check_store.py" --cost "$bin/ncclscope" "$url" "$job-bench" "$out/cost-bench.json" || rc=1
"$python" "$here/report.py" "$out" "$nranks" "$torch_version" "$nccl" \
    "$(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | sed 's/^ *//' | paste -sd ';')$shared" \
    >"$out/report.md"
echo "gpu check: report in $out/report.md"
exit $rc
