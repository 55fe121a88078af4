#!/bin/bash
# bench_detail.sh BIN [RUNS]: GPUs one LMDB collector carries at job B's rate
# (docs/clickhouse.md, "Sizing": 1,350 collectives/s and 33,800 events/s per
# rank) with detail = all against detail = on-demand, alternating in the
# same run (docs/benchmarks.md, "Detail on demand"). Not a ctest.
#   all: nsc-feed sends the raw mix (8 agents x 2 processes x 250 batches of
#     50 collectives per section, bench_collector.sh's feed): events/s
#     committed, / 33,800.
#   on-demand: what on-demand agents send, the ledger (8 x 8 x 100 batches
#     of 256 ledger records per process, beside one collective's events, more
#     than the definitions and counters that travel with them): ledger
#     records/s committed, / 1,350.
# Zero loss: nsc-feed exits 0 only when every batch was acknowledged, and the
# collector's stored counters must equal what was sent.
set -euo pipefail
bin=$1
RUNS=${2:-3}
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
COMMON="--agents 8 --timeout-ms 300000"

# feed MODE ARGS...: one collector, one feed; prints the rate committed.
feed() {
    local mode=$1; shift
    rm -rf "$dir/db"
    start_collector 0 --map-initial-mb 2048
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" $COMMON "$@" > "$dir/out" ||
        die "$mode: not every batch was acknowledged"
    local secs; secs=$(awk -F= '/^seconds=/{print $2}' "$dir/out")
    if [ "$mode" = all ]; then
        collector_metric_is ncclscope_collector_events_in_total "$(awk -F= '/^events=/{print $2}' "$dir/out")" ||
            die "all: events lost or doubled"
        awk -F= '/^events_per_s=/{print $2}' "$dir/out"
    else
        collector_metric_is ncclscope_collector_ledger_records_stored_total 1638400 ||
            die "on-demand: ledger records lost or doubled"
        awk -v s="$secs" 'BEGIN {printf "%.0f\n", 1638400 / s}'
    fi
    stop collector
}

for i in $(seq "$RUNS"); do
    a=$(feed all --procs 2 --batches 250 --colls 50 --pool 16)
    o=$(feed on-demand --procs 8 --batches 100 --colls 1 --ledger 256)
    echo "$a" >> "$dir/all"
    echo "$o" >> "$dir/od"
    echo "run $i: all $a events/s = $((a / 33800)) GPUs; on-demand $o ledger records/s = $((o / 1350)) GPUs (load $(cut -d' ' -f1 /proc/loadavg))"
done
a=$(median < "$dir/all") o=$(median < "$dir/od")
echo "median: detail = all $a events/s, $((a / 33800)) GPUs at job B; detail = on-demand $o ledger records/s, $((o / 1350)) GPUs at job B"
