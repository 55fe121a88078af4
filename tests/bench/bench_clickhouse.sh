#!/bin/bash
# bench_clickhouse.sh BIN_DIR [RUNS] [BATCHES] [SHARD_COUNTS]: the collector's
# ingest into ClickHouse against LMDB, in the same run. nsc-feed (8 agents x 2
# processes, 50 collectives of the realistic mix per section, BATCHES batches
# per agent, default 50: 3.08 M events, 7.7 M states; --distinct with a pool
# of BATCHES: no section is sent twice and every agent has its own host, as
# real agents, so no table holds copies that compress to nothing) sends to a collector
# with a fresh LMDB store, then, for each count N in SHARD_COUNTS (default
# "2"; "1 2 3" for the scaling per shard), to a collector with
# --store clickhouse:// and --ch-shards over N local clickhouse-server shards
# (tests/clickhouse/lib.sh, a fresh database per run). NSC_CH_ARGS adds
# collector options to the ClickHouse runs; NSC_CH_BASE_BIN, another build's
# bin directory, runs its collector after this one's in each ClickHouse run
# (a change measured against the previous in the same run). NSC_CH_DATA, a
# folder (/dev/shm), holds the servers' data instead of the test's folder
# in /tmp: on a file system without a journal (this VM's root) ext4 scans
# its recently deleted inodes at every file it creates, and a MergeTree part
# is two files per column. Prints per run the events/s
# acknowledged (and the middle rate: from a tenth of the batches acknowledged
# to nine tenths, without the pipeline's fill and the last insert's wait for
# ch_flush_ms; it needs a feed of many inserts, BATCHES 200), the collector's CPU ns/event, for ClickHouse the CPU ns/event
# of the N servers from the feed's start until their merges are done (none
# running for 1.5 s, at most 60 s after the collector stopped; and the part
# of it after the collector stopped: merges), and the bytes
# stored per event (system.parts after OPTIMIZE ... FINAL: every table, and
# the events table alone, and all tables uncompressed). Not a ctest; docs/benchmarks.md, "ClickHouse store".
bin=$1 runs=${2:-3} batches=${3:-50} counts=${4:-2} mode=bench nodes=0
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/../clickhouse/lib.sh"
ch_require
if [ -n "${NSC_CH_DATA:-}" ]; then
    chdata=$(mktemp -d "$NSC_CH_DATA/nsc-ch-XXXXXX") || die "no folder in $NSC_CH_DATA"
    ln -s "$chdata" "$dir/ch"
    before_cleanup() { rm -rf "$chdata"; }
fi
max=0
for n in $counts; do
    [ "$n" -gt "$max" ] && max=$n
done
for s in $(seq 0 $((max - 1))); do
    ch_start shard$s
done
k=0
args="--agents 8 --procs 2 --colls 50 --batches $batches --pool $batches --distinct"

# ticks PID...: their CPU ticks (utime + stime) so far.
ticks() {
    local p t=0
    for p in "$@"; do
        t=$((t + $(sed 's/.*) //' /proc/$p/stat | awk '{print $12 + $13}')))
    done
    echo $t
}

# settle SHARD...: wait until no merge runs on them (three looks 0.5 s apart).
settle() {
    local quiet=0 s n i
    for i in $(seq 120); do
        n=0
        for s in "$@"; do
            n=$((n + $(ch_sql "$s" "SELECT count() FROM system.merges")))
        done
        if [ "$n" = 0 ]; then
            quiet=$((quiet + 1))
            [ $quiet = 3 ] && return 0
        else
            quiet=0
        fi
        sleep 0.5
    done
}

# feed "SHARD..." ARGS...: a collector with ARGS, nsc-feed into it; prints
# "EV/S COLLECTOR-NS/EVENT CLICKHOUSE-NS/EVENT BUSIEST-THREAD-NS/EVENT
# CLICKHOUSE-AFTER-NS/EVENT" (the servers of SHARD..., the last their CPU
# after the collector stopped: merges; the collector's busiest thread bounds
# its rate).
feed() {
    local shards=($1) s chp=()
    shift
    for s in "${shards[@]}"; do
        chp+=("${pids[ch_$s]}")
    done
    rm -f "$dir/ports"
    # credit as deep as the feed's window: with the default 32, a loaded
    # machine's feed waited on credit it could never get
    "${cbin:-$bin}/ncclscope-collector" --db "$dir/db" --listen tcp://127.0.0.1:0 --http off --map-initial-mb 1024 \
        --credit 64 --port-file "$dir/ports" "$@" 2>>"$dir/collector.log" &
    local c=$!
    wait_until 60 test -s "$dir/ports" || die "collector did not start"
    local ch0 ch1 chs t
    ch0=$(ticks "${chp[@]}")
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$(awk '$1 == "zmq" { print $2 }' "$dir/ports")" $args \
        --window 64 --timeout-ms 600000 >"$dir/out" || die "nsc-feed failed"
    t=$(ticks $c)
    top=$(for p in /proc/$c/task/*; do sed 's/.*) //' $p/stat | awk '{print $12 + $13}'; done | sort -n | tail -1)
    kill -TERM $c
    wait $c || die "collector exited with $?"
    chs=$(ticks "${chp[@]}")
    [ ${#shards[@]} = 0 ] || settle "${shards[@]}"
    ch1=$(ticks "${chp[@]}")
    awk -F= -v t="$t" -v ch=$((ch1 - ch0)) -v after=$((ch1 - chs)) -v top="$top" -v hz="$(getconf CLK_TCK)" \
        '/^events_per_s=/ { r = $2 } /^middle_events_per_s=/ { m = $2 } /^events=/ { n = $2 }
        END { printf "%.0f %.0f %.0f %.0f %.0f %.0f\n", r, t / hz * 1e9 / n, ch / hz * 1e9 / n, top / hz * 1e9 / n,
              after / hz * 1e9 / n, m }' "$dir/out"
}

# stored DB SHARD...: bytes per event on the shards, all tables and events
# alone, and all tables uncompressed (what the shards read, copy, compress
# and write per event).
stored() {
    local db=$1 s t all=0 ev=0 raw=0 n=0
    shift
    for s in "$@"; do
        for t in $(ch_sql $s "SELECT name FROM system.tables WHERE database = '$db'"); do
            ch_sql $s "OPTIMIZE TABLE $db.$t FINAL" || die "optimize $t on $s"
        done
        all=$((all + $(ch_sql $s "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = '$db'")))
        ev=$((ev + $(ch_sql $s "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = '$db' AND table = 'events_local'")))
        raw=$((raw + $(ch_sql $s "SELECT sum(data_uncompressed_bytes) FROM system.parts WHERE active AND database = '$db'")))
        n=$((n + $(ch_sql $s "SELECT count() FROM $db.events_local FINAL")))
    done
    echo "$n events stored, $(echo "scale=1; $all / $n" | bc) B/event all tables, $(echo "scale=1; $ev / $n" | bc) B/event events table, $(echo "scale=1; $raw / $n" | bc) B/event uncompressed"
}

for i in $(seq "$runs"); do
    rm -rf "$dir/db"
    read -r lr lc _ lt _ lm < <(feed "")
    echo "run $i: LMDB $lr events/s (middle $lm; $lc ns/event, busiest thread $lt)"
    for n in $counts; do
        shards=() list=""
        for s in $(seq 0 $((n - 1))); do
            shards+=(shard$s)
            list+="${list:+,}127.0.0.1:${chhttp[shard$s]}"
        done
        for cbin in "$bin" ${NSC_CH_BASE_BIN:-}; do
            rm -rf "$dir/db"
            db=nsc_bench$((++k))
            read -r cr cc cs ct ca cm < <(feed "${shards[*]}" --store "clickhouse://127.0.0.1:${chhttp[shard0]}/$db" \
                --ch-shards "$list" ${NSC_CH_ARGS:-})
            echo "run $i: $n shard(s)$([ "$cbin" = "$bin" ] || echo ", $cbin"): ClickHouse $cr events/s" \
                 "(middle $cm; $cc ns/event, busiest thread $ct, clickhouse-servers $cs ns/event, $ca of it after the feed);" \
                 "$(stored $db "${shards[@]}") (load $(cut -d' ' -f1 /proc/loadavg))"
        done
        cbin=
    done
done
