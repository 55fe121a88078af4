#!/bin/bash
# bench_ledger.sh BIN PLUGIN [RUNS] [ITERS]: the collective ledger's cost in
# the collector's LMDB store (docs/benchmarks.md, "Ledger"). Not a ctest.
#   1. ingest: nsc-feed --direct puts 819,200 ledger records alone (8 x 8
#      processes x 200 batches x 64 records of nsc_mix_ledger) into a fresh
#      store, RUNS times: records/s, value and store bytes per record.
#   2. collector: nsc-feed sends 1,638,400 records through a collector (8
#      agents x 8 processes x 100 batches x 256 records; each agent's first
#      batch carries one collective's events per process, the other 99 the
#      ledger alone, placed by what the first said, as with on-demand detail):
#      records/s, and its CPU time per record.
#   3. the emulator's ring (2 nodes x 4 ranks, ITERS iterations, default
#      1000) through the plugin, two agents and the collector, at the default
#      event mask and at `all`: records stored, the ledger database's pages
#      and values per record (mdb_stat and mdb_dump of the stopped store).
set -euo pipefail
bin=$1 plugin=$2
RUNS=${3:-3} ITERS=${4:-1000}
nodes=2
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
load() { cut -d' ' -f1 /proc/loadavg; }

for i in $(seq "$RUNS"); do
    rm -rf "$dir/direct"
    "$bin/nsc-feed" --direct "$dir/direct" --agents 8 --procs 8 --batches 200 --ledger 64 > "$dir/out"
    awk -F= '/ledger_records_per_s/{print $2}' "$dir/out" >> "$dir/rate"
    echo "direct run $i: $(tr '\n' ' ' < "$dir/out")(load $(load))"
done
echo "median direct: $(median < "$dir/rate") ledger records/s"

start_collector 0 --map-initial-mb 1024
cp=${pids[collector]}
"$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 8 --procs 8 --batches 100 --colls 1 --ledger 256 \
    --ledger-alone 99 --timeout-ms 300000 > "$dir/out" || die "not every batch was acknowledged"
ticks=$(sed 's/.*) //' /proc/$cp/stat | awk '{print $12 + $13}')
secs=$(awk -F= '/^seconds=/{print $2}' "$dir/out")
awk -v s="$secs" -v t="$ticks" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "collector: 1638400 records in %.2f s: %.0f records/s, CPU %.0f ns/record\n", s, 1638400 / s, t / hz * 1e9 / 1638400}'
collector_metric_is ncclscope_collector_ledger_records_stored_total 1638400 || die "records lost or doubled"
stop collector

# value bytes of the ledger database's entries, from mdb_dump's hex lines
value_bytes() {
    mdb_dump -s ledger "$1" | awk '/^HEADER=END/ {on = 1; next} /^DATA=END/ {on = 0}
        on { if (++n % 2 == 0) b += (length($1)) / 2 } END { print b + 0 }'
}
for mask in default all; do
    rm -rf "$dir/db"
    start_all
    envs=(NCCLSCOPE_JOB="$job-$mask")
    [ "$mask" = default ] || envs+=(NCCLSCOPE_EVENT_MASK="$mask")
    env -u NCCLSCOPE_EVENT_MASK "${envs[@]}" "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" \
        --scenario ring --nodes 2 --ranks-per-node 4 --iters "$ITERS" >"$dir/emu.log" 2>&1 || die "emulator failed"
    for n in 0 1; do
        wait_until 60 eval "metric_is $n ncclscope_agent_ledger_open 0 && delivered $n" || die "node $n did not deliver"
        stop agent$n
    done
    recs=$(collector_metric ncclscope_collector_store_ledger_records)
    stop collector
    pages=$(mdb_stat -s ledger "$dir/db" | awk '/pages/ {p += $NF} END {print p * 4096}')
    awk -v r="$recs" -v p="$pages" -v v="$(value_bytes "$dir/db")" -v m="$mask" \
        'BEGIN {printf "emulator ring, mask %s: %d records, %.1f B values, %.1f B pages per record\n", m, r, v / r, p / r}'
done
