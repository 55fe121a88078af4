#!/bin/bash
# bench_chledger.sh BIN_DIR PLUGIN [RECORDS] [GROWTH] [WINDOW] [TRIES] [BASE_BIN]: what a ledger
# query read from ClickHouse costs as its job grows. nsc-feed stores a job of
# RECORDS ledger records (default 1 M; 2 agents x 4 processes, 256 records per
# process and batch; a first batch with sections defining the communicator,
# then ledger records alone) through a collector on two local
# clickhouse-server shards behind Distributed tables (tests/clickhouse/lib.sh);
# then collectives, stats and ledger of one window of WINDOW seqs (default
# 1,000 seqs of the 4 ranks) are asked of a collector started afresh, the job
# grown to GROWTH times its size (default 10) by more batches of the same
# agents, and the same window asked again. Wall time of each answer (curl's
# time_total, median and best of TRIES, default 7), its size, the bytes the
# collector read from ClickHouse for it, and that each answer is the same
# bytes at both sizes. With BASE_BIN (another build's bin folder: the
# baseline), its collector is asked too, alternately with this one's, on the
# same store. Not a ctest; the figures go to docs/benchmarks.md.
bin=$1 plugin=$2 records=${3:-1000000} growth=${4:-10} window=${5:-1000} tries=${6:-7} base=${7:-} mode=bench
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/../clickhouse/lib.sh"
ch_require
ch_cluster_store
per_batch=$((4 * 256))  # records of one agent's batch
first=0

# feed BATCHES: each agent's next BATCHES batches, the first with sections.
feed() {
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 2 --procs 4 --first "$first" --batches "$1" \
        --ledger 256 --ledger-alone $(($1 - 1)) --colls 1 --timeout-ms 3600000 >"$dir/feed.out" || die "feed: $(cat "$dir/feed.out")"
    first=$((first + $1))
    stop collector
}

# median TIMES...: "median M s, best B s".
median() {
    python3 -c 'import statistics,sys; t=[float(x) for x in sys.argv[1:]]
print("median %.3f s, best %.3f s" % (statistics.median(t), min(t)))' "$@"
}

# ask SIZE: the window's answers from a fresh collector (and the baseline's,
# each try the baseline first), TRIES times each.
ask() {
    local q name times base_times read cmd=() http_base=
    if [ -n "$base" ]; then
        bin=$base start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb-base"
        pids[collector_base]=${pids[collector]} http_base=$http
        unset "pids[collector]"
    fi
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    for q in "collectives?job=feed&comm=0xfeed&seq=1000-$((1000 + window - 1))" \
             "stats?job=feed&comm=0xfeed&seq=1000-$((1000 + window - 1))" \
             "ledger?job=feed&comm=0xfeed&seq=1000-$((1000 + window - 1))&limit=1000000"; do
        name=${q%%\?*} times=() base_times=()
        read=$(collector_metric ncclscope_collector_query_read_bytes_total)
        for _ in $(seq "$tries"); do
            [ -z "$http_base" ] || base_times+=("$(curl -sf -m 600 -o "$dir/$1.$name.base" -w '%{time_total}' \
                "http://127.0.0.1:$http_base/api/v1/$q")") || die "$q failed (baseline)"
            times+=("$(curl -sf -m 600 -o "$dir/$1.$name" -w '%{time_total}' "http://127.0.0.1:$http/api/v1/$q")") ||
                die "$q failed"
        done
        read=$((($(collector_metric ncclscope_collector_query_read_bytes_total) - read) / tries))
        echo "$1 records: $name $(median "${times[@]}"), $(stat -c %s "$dir/$1.$name") bytes, read $read bytes"
        if [ -n "$http_base" ]; then
            cmp -s "$dir/$1.$name" "$dir/$1.$name.base" || die "$name: the baseline answered other bytes"
            echo "$1 records: $name baseline $(median "${base_times[@]}")"
        fi
    done
    echo "$1 records: $(collector_metric ncclscope_collector_query_scoped_loads_total) scoped loads," \
         "$(collector_metric ncclscope_collector_query_loads_total) whole-job loads"
    stop collector
    [ -z "$http_base" ] || stop collector_base
}

small=$((records / 2 / per_batch))
feed "$small"
ask $((2 * small * per_batch))
feed $((small * (growth - 1)))
ask $((2 * small * growth * per_batch))
for e in collectives stats ledger; do
    cmp -s "$dir/$((2 * small * per_batch)).$e" "$dir/$((2 * small * growth * per_batch)).$e" ||
        die "the $e answers differ between the sizes"
done
echo "load $(cut -d' ' -f1 /proc/loadavg)"
