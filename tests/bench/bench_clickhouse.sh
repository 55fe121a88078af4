#!/bin/bash
# bench_clickhouse.sh BIN_DIR [RUNS] [BATCHES]: the collector's ingest into
# ClickHouse against LMDB, in the same run. nsc-feed (8 agents x 2 processes,
# 50 collectives of the realistic mix per section, BATCHES batches per agent,
# default 50: 3.08 M events, 7.7 M states) sends to a collector with a fresh
# LMDB store, then to a collector with --store clickhouse:// over two local
# clickhouse-server shards behind Distributed tables (tests/clickhouse/lib.sh,
# a fresh database per run). Prints per run the events/s acknowledged, the
# collector's CPU ns/event, for ClickHouse the CPU ns/event of the three
# servers during the run (merges included) and the bytes stored per event
# (system.parts of both shards after OPTIMIZE ... FINAL: every table, and the
# events table alone). Not a ctest; docs/benchmarks.md, "ClickHouse store".
bin=$1 runs=${2:-3} batches=${3:-50} mode=bench nodes=0
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/../clickhouse/lib.sh"
ch_require
ch_cluster
args="--agents 8 --procs 2 --colls 50 --batches $batches --pool 16"

# ch_ticks: CPU ticks (utime + stime) of the three clickhouse-servers so far.
ch_ticks() {
    local p t=0
    for p in "${pids[ch_shard0]}" "${pids[ch_shard1]}" "${pids[ch_front]}"; do
        t=$((t + $(sed 's/.*) //' /proc/$p/stat | awk '{print $12 + $13}')))
    done
    echo $t
}

# feed ARGS...: a collector with ARGS, nsc-feed into it; prints "EV/S
# COLLECTOR-NS/EVENT CLICKHOUSE-NS/EVENT".
feed() {
    rm -f "$dir/ports"
    "$bin/ncclscope-collector" --db "$dir/db" --listen tcp://127.0.0.1:0 --http off --map-initial-mb 1024 \
        --port-file "$dir/ports" "$@" 2>>"$dir/collector.log" &
    local c=$!
    wait_until 60 test -s "$dir/ports" || die "collector did not start"
    local ch0 ch1
    ch0=$(ch_ticks)
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$(awk '$1 == "zmq" { print $2 }' "$dir/ports")" $args \
        --window 64 --timeout-ms 600000 >"$dir/out" || die "nsc-feed failed"
    local ticks
    ticks=$(sed 's/.*) //' /proc/$c/stat | awk '{print $12 + $13}')
    kill -TERM $c
    wait $c || die "collector exited with $?"
    ch1=$(ch_ticks)
    awk -F= -v t="$ticks" -v ch=$((ch1 - ch0)) -v hz="$(getconf CLK_TCK)" '/^events_per_s=/ { r = $2 } /^events=/ { n = $2 }
        END { printf "%.0f %.0f %.0f\n", r, t / hz * 1e9 / n, ch / hz * 1e9 / n }' "$dir/out"
}

# stored DB: bytes per event on both shards, all tables and events alone.
stored() {
    local s t all=0 ev=0 n
    for s in shard0 shard1; do
        for t in $(ch_sql $s "SELECT name FROM system.tables WHERE database = '$1'"); do
            ch_sql $s "OPTIMIZE TABLE $1.$t FINAL" || die "optimize $t on $s"
        done
        all=$((all + $(ch_sql $s "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = '$1'")))
        ev=$((ev + $(ch_sql $s "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = '$1' AND table = 'events_local'")))
    done
    n=$(ch_sql front "SELECT count() FROM $1.events FINAL")
    echo "$n events stored, $(echo "scale=1; $all / $n" | bc) B/event all tables, $(echo "scale=1; $ev / $n" | bc) B/event events table"
}

for i in $(seq "$runs"); do
    rm -rf "$dir/db"
    read -r lr lc _ < <(feed)
    rm -rf "$dir/db"
    db=nsc_bench$i
    read -r cr cc cs < <(feed --store "clickhouse://127.0.0.1:${chhttp[front]}/$db?cluster=nsc" \
        --ch-shards "127.0.0.1:${chhttp[shard0]},127.0.0.1:${chhttp[shard1]}" ${NSC_CH_ARGS:-})
    echo "run $i: LMDB $lr events/s ($lc ns/event), ClickHouse $cr events/s ($cc ns/event," \
         "clickhouse-servers $cs ns/event);" \
         "$(stored $db) (load $(cut -d' ' -f1 /proc/loadavg))"
done
