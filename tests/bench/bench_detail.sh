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
# Each rate comes with the collector's capacity on its own cores: what it
# committed per CPU second of its busiest thread (the ingest thread and the
# writer run in a pipeline, so the busiest bounds it), which the load of
# other processes on shared cores does not change.
set -euo pipefail
bin=$1
RUNS=${2:-3}
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
COMMON="--agents 8 --timeout-ms 300000"

# feed MODE ARGS...: one collector, one feed; prints the rate committed and
# the rate per CPU second of the collector's busiest thread.
feed() {
    local mode=$1 units top; shift
    rm -rf "$dir/db"
    start_collector 0 --map-initial-mb 2048
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" $COMMON "$@" > "$dir/out" ||
        die "$mode: not every batch was acknowledged"
    top=$(for t in /proc/${pids[collector]}/task/*; do sed 's/.*) //' "$t/stat" | awk '{print $12 + $13}'; done |
        sort -n | tail -1)
    if [ "$mode" = all ]; then
        units=$(awk -F= '/^events=/{print $2}' "$dir/out")
        collector_metric_is ncclscope_collector_events_in_total "$units" || die "all: events lost or doubled"
    else
        units=1638400
        collector_metric_is ncclscope_collector_ledger_records_stored_total $units ||
            die "on-demand: ledger records lost or doubled"
    fi
    awk -F= -v n="$units" -v top="$top" -v hz="$(getconf CLK_TCK)" \
        '/^seconds=/ { printf "%.0f %.0f\n", n / $2, n / (top / hz) }' "$dir/out"
    stop collector
}

for i in $(seq "$RUNS"); do
    read -r a ac < <(feed all --procs 2 --batches 250 --colls 50 --pool 16)
    read -r o oc < <(feed on-demand --procs 8 --batches 100 --colls 1 --ledger 256)
    echo "$a" >> "$dir/all"
    echo "$o" >> "$dir/od"
    echo "$ac" >> "$dir/allc"
    echo "$oc" >> "$dir/odc"
    echo "run $i: all $a events/s = $((a / 33800)) GPUs; on-demand $o ledger records/s = $((o / 1350)) GPUs;" \
         "per busiest-thread CPU second: all $((ac / 33800)), on-demand $((oc / 1350)) GPUs (load $(cut -d' ' -f1 /proc/loadavg))"
done
a=$(median < "$dir/all") o=$(median < "$dir/od") ac=$(median < "$dir/allc") oc=$(median < "$dir/odc")
echo "median: detail = all $a events/s, $((a / 33800)) GPUs at job B; detail = on-demand $o ledger records/s, $((o / 1350)) GPUs at job B"
echo "median per busiest-thread CPU second: detail = all $ac events, $((ac / 33800)) GPUs; on-demand $oc ledger records, $((oc / 1350)) GPUs"
