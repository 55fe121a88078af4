#!/bin/bash
# bench_chquery.sh BIN_DIR PLUGIN [ITERS] [RUNS]: a timeline query answered
# from ClickHouse against the same query answered from LMDB, in the same run.
# One emulated job (PXN scenario, 2 nodes x 2 ranks, every event type, no time
# model, ITERS collectives, default 7000: about 1 M events in its one
# communicator) is stored both in two local clickhouse-server shards behind
# Distributed tables and by an LMDB collector (tests/clickhouse/lib.sh,
# ch_lmdb_job); then a collector on ClickHouse with no agent answers
# /api/v1/timeline?job=..&comm=..&limit=1000000, started afresh for each of
# RUNS runs (default 3): the first answer reads the job from ClickHouse
# (cold), the second the job the query cache kept (warm, docs/clickhouse-read.md,
# "Queries"); the LMDB collector answers the same request. Wall time of each
# answer (curl's time_total), its size, and that the answers are the same
# bytes. Not a ctest; the figures go to docs/benchmarks.md.
bin=$1 plugin=$2 iters=${3:-7000} runs=${4:-3} mode=bench
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/../clickhouse/lib.sh"
ch_require
ch_cluster_store

ch_lmdb_job --iters "$iters" --time-scale 0
comm=$(curl -sf -m 600 "http://127.0.0.1:$http_lmdb/api/v1/comms?job=$job" |
       python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])') || die "no communicator"
q="timeline?job=$job&comm=$comm&limit=1000000"

# timed PORT FILE: seconds the answer of $q took, into $dir/FILE.
timed() { curl -sf -m 600 -o "$dir/$2" -w '%{time_total}' "http://127.0.0.1:$1/api/v1/$q" || die "$q failed"; }

for i in $(seq "$runs"); do
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    tl=$(timed "$http_lmdb" lmdb.ndjson)
    tc=$(timed "$http" ch.ndjson)
    cmp -s "$dir/lmdb.ndjson" "$dir/ch.ndjson" || die "the answers differ"
    tw=$(timed "$http" ch.ndjson)
    cmp -s "$dir/lmdb.ndjson" "$dir/ch.ndjson" || die "the warm answer differs"
    stop collector
    events=$(tail -n 1 "$dir/lmdb.ndjson" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
    echo "run $i: $events events, $(stat -c %s "$dir/lmdb.ndjson") bytes: LMDB ${tl} s," \
         "ClickHouse cold ${tc} s, warm ${tw} s (load $(cut -d' ' -f1 /proc/loadavg))"
done
stop collector_lmdb
