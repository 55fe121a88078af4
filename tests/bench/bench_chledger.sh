#!/bin/bash
# bench_chledger.sh BIN_DIR PLUGIN [RECORDS] [GROWTH] [WINDOW] [TRIES] [BASE_BIN]: what a ledger
# query read from ClickHouse costs as its job grows. nsc-feed stores a job of
# RECORDS ledger records (default 1 M; 2 agents x 4 processes, 256 records per
# process and batch; a first batch with sections defining the communicator,
# then ledger records alone) through a collector on two local
# clickhouse-server shards behind Distributed tables (tests/clickhouse/lib.sh);
# then collectives, stats and ledger of one window of WINDOW seqs (default
# 1,000 seqs of the 4 ranks), a timeline of the last second of the first
# agent's records and collectives of its last 60 s are asked of a collector
# started afresh, the job grown to GROWTH times its size (default 10) by more
# batches of the same agents, and the same asked again. Before asking, the
# shards' merges are let settle (at most 10 minutes). Wall time of each
# answer (curl's time_total, median and best of TRIES, default 7), its size,
# the bytes the collector read from ClickHouse for it, the rows ClickHouse
# read for it (query_log of both shards, one untimed request first), and
# that each answer of the fixed window is the same bytes at both sizes.
# With BASE_BIN (another build's bin folder: the baseline), its collector is
# asked too, alternately with this one's, on the same store, and must give
# the same bytes (but for the ranks' ids of collectives: docs/api-events.md). Both keep no job between queries (ch_query_cache 0: each
# query loads what it reads, as for a running job). Not a ctest; the figures go to docs/benchmarks.md.
bin=$1 plugin=$2 records=${3:-1000000} growth=${4:-10} window=${5:-1000} tries=${6:-7} base=${7:-} mode=bench
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/../clickhouse/lib.sh"
ch_require
ch_log_queries
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

# window_of LAST_SEQ: "t0_ns=..&t1_ns=.." for the 60 s before the end of the
# first agent's collective LAST_SEQ (its end_ns, as this collector answers;
# from 0 when the job is shorter).
window_of() {
    local end
    end=$(curl -sf -m 600 "http://127.0.0.1:$http/api/v1/collectives?job=feed&comm=0xfeed&seq=$1-$1" |
        python3 -c 'import json,sys; print([json.loads(l)["end_ns"] for l in sys.stdin if "end_ns" in l][0])') ||
        die "no collective $1"
    echo "t0_ns=$((end > 60000000000 ? end - 60000000000 : 0))&t1_ns=$end"
}

# ask SIZE: the answers from a fresh collector (and the baseline's, each try
# the baseline first), TRIES times each.
ask() {
    local q name times base_times read rows last http_base= t=$SECONDS
    wait_until 600 ch_settled || die "the shards' merges did not settle in 10 minutes"
    echo "$1 records: merges settled in $((SECONDS - t)) s; parts of ledger_recs:" \
        "$(ch_sql shard0 "SELECT count() FROM system.parts WHERE active AND table = 'ledger_recs_local'")"
    if [ -n "$base" ]; then
        bin=$base NCCLSCOPE_CH_QUERY_CACHE=0 start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb-base"
        pids[collector_base]=${pids[collector]} http_base=$http
        unset "pids[collector]"
    fi
    NCCLSCOPE_CH_QUERY_CACHE=0 start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    last=$(window_of $((first * 256 - 1)))
    for q in "collectives?job=feed&comm=0xfeed&seq=1000-$((1000 + window - 1))" \
             "stats?job=feed&comm=0xfeed&seq=1000-$((1000 + window - 1))" \
             "ledger?job=feed&comm=0xfeed&seq=1000-$((1000 + window - 1))&limit=1000000" \
             "timeline?job=feed&comm=0xfeed&t0_ns=$((${last##*=} - 1000000000))&t1_ns=${last##*=}&limit=1000000" \
             "collectives?job=feed&comm=0xfeed&$last"; do
        name=${q%%\?*}
        case $q in *"&$last") name=$name-60s ;; esac
        ch_time_query "$q" "$dir/$1.$name" "$tries"
        echo "$1 records: $name $(ch_median "${times[@]}"), $(stat -c %s "$dir/$1.$name") bytes, read $read bytes," \
            "ClickHouse read $rows rows"
        if [ -n "$http_base" ]; then
            # a collective's ranks' ids: their records' seqs now, their places before
            cmp -s <(sed -E 's/"id":[0-9]+,//g' "$dir/$1.$name") <(sed -E 's/"id":[0-9]+,//g' "$dir/$1.$name.base") ||
                die "$name: the baseline answered other bytes"
            echo "$1 records: $name baseline $(ch_median "${base_times[@]}")"
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
