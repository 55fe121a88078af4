#!/bin/bash
# bench_chtimeline.sh BIN_DIR PLUGIN [ITERS] [GROWTH] [TRIES] [BASE_BIN]: what a
# timeline window read from ClickHouse costs as its job grows. Two emulated
# jobs (2 nodes, 4 ranks, every event type, 10 ms between iterations) go
# through a collector into two local clickhouse-server shards behind
# Distributed tables (tests/clickhouse/lib.sh): "small" of ITERS iterations
# (default 300) and "large" of GROWTH times as many (default 10). Once the
# shards' merges settled, a collector started afresh that keeps no job
# (ch_query_cache 0: each query loads what it reads, as for a running job) is
# asked, of each job, the timeline of its first communicator from 1 s after
# the job's first event to 2 s after: wall time (curl's time_total, median
# and best of TRIES, default 5), the answer's size, the bytes the collector
# read from ClickHouse, the rows ClickHouse read (query_log of both shards);
# and the timeline of the whole job, for scale. With BASE_BIN (another
# build's bin folder: the baseline), its collector is asked the same on the
# same store, alternately, and must answer the same bytes but for GPU times
# (a baseline from before 7bf9753 fits GPU lines otherwise). Not a ctest; the
# figures go to docs/benchmarks.md. NSC_BENCH_PACE_US sets the time between
# iterations (default 10000: a big job then takes hours on 2 cores; the
# window holds ten times the events at 1000), NSC_BENCH_WHOLE=0 leaves the
# whole job's timeline out (it loads every event of the job, TRIES times).
bin=$1 plugin=$2 iters=${3:-300} growth=${4:-10} tries=${5:-5} base=${6:-} mode=bench
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/../clickhouse/lib.sh"
whole=yes
[ "${NSC_BENCH_WHOLE:-1}" = 0 ] && whole=
ch_require
ch_log_queries
ch_cluster_store

# store NAME ITERS: job NAME through the agents into ClickHouse.
store() {
    local n
    job=$1
    # the agents fall behind the large job by hundreds of batches a rank:
    # buffers that hold them, and the last flush the time to hand them over
    # (at the default 64 MiB and 1 s the large job lost 15 to 20 % of its
    # events; with these about 1.4 % of its groups are still missing, not
    # traced)
    NCCLSCOPE_BUFFER_MB=256 NCCLSCOPE_FLUSH_MS=300000 emulate --iters "$2" --pace-us "${NSC_BENCH_PACE_US:-10000}"
    for n in 0 1; do wait_until 600 delivered $n || die "node $n did not deliver $1"; done
}

# ask NAME: its timelines from a fresh collector (and the baseline's).
ask() {
    local q name times base_times read rows comm first http_base=
    wait_until 600 ch_settled || die "the shards' merges did not settle in 10 minutes"
    if [ -n "$base" ]; then
        bin=$base NCCLSCOPE_CH_QUERY_CACHE=0 start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb-base"
        pids[collector_base]=${pids[collector]} http_base=$http
        unset "pids[collector]"
    fi
    NCCLSCOPE_CH_QUERY_CACHE=0 start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    comm=$(curl -sf -m 600 "http://127.0.0.1:$http/api/v1/comms?job=$1" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])') || die "no comms of $1"
    first=$(curl -sf -m 600 "http://127.0.0.1:$http/api/v1/timeline?job=$1&comm=$comm&type=coll&limit=1" |
        python3 -c 'import json,sys; print([json.loads(l)["start_ns"] for l in sys.stdin if "start_ns" in l][0])') ||
        die "no first event of $1"
    for q in "timeline?job=$1&comm=$comm&t0_ns=$((first + 1000000000))&t1_ns=$((first + 2000000000))&limit=1000000" \
             ${whole:+"timeline?job=$1&comm=$comm&limit=1000000"}; do
        name=window
        case $q in *t0_ns*) ;; *) name=whole ;; esac
        ch_time_query "$q" "$dir/$1.$name" "$tries"
        echo "$1: $name $(ch_median "${times[@]}"), $(stat -c %s "$dir/$1.$name") bytes," \
             "$(grep -c '"kind":"event"' "$dir/$1.$name") events, read $read bytes, ClickHouse read $rows rows"
        if [ -n "$http_base" ]; then
            # GPU times aside: a baseline from before 7bf9753 fits its GPU lines
            # with blocks that ended before the window too
            cmp -s <(sed -E 's/"gpu_(start|stop|err)_ns":[0-9]+//g' "$dir/$1.$name") \
                <(sed -E 's/"gpu_(start|stop|err)_ns":[0-9]+//g' "$dir/$1.$name.base") ||
                die "$1 $name: the baseline answered other bytes"
            echo "$1: $name baseline $(ch_median "${base_times[@]}")"
        fi
    done
    stop collector
    [ -z "$http_base" ] || stop collector_base
}

start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
start_agent 0
start_agent 1
store small "$iters"
store large $((iters * growth))
for n in 0 1; do stop agent$n; done
stop collector
echo "events stored: small $(ch_sql front "SELECT count() FROM nsc.events WHERE job = 'small'")," \
     "large $(ch_sql front "SELECT count() FROM nsc.events WHERE job = 'large'")"
ask small
ask large
echo "load $(cut -d' ' -f1 /proc/loadavg)"
