#!/bin/bash
# ch.sh: the collector's ClickHouse store end to end: two clickhouse-server
# shards and a front instance holding the Distributed tables (lib.sh), the
# collector with --store clickhouse://FRONT/nsc?cluster=nsc, one agent per
# simulated node and ncclscope-emu (tests/e2e/lib.sh); then the job as
# ClickHouse holds it is compared with the emulator's summary (nsc-ch-check).
#
#   ch.sh BIN_DIR PLUGIN MODE
#
# p2p_window:     a Send/Recv job; comms and p2p windows from a collector
#                 keeping no job read only definitions or the window's
#                 sections, and answer as LMDB does.
# exact:          everything running; PXN scenario; no LMDB store is opened
#                 or reported in /metrics.
# collector_kill: kill -9 the collector mid-stream and restart it on the same
#                 port: batches in flight are sent again, some of them
#                 inserted already; every event is still there exactly once.
# ch_kill:        kill -9 shard 1 mid-stream: the collector's inserts fail,
#                 nothing is acknowledged, the agents keep their batches;
#                 shard 1 restarted (same data, same ports): everything is
#                 delivered, exactly once.
# two_collectors: two collectors write the same cluster at once, node 0's
#                 agent to one, node 1's to the other; the job is exact.
# replay:         a batch inserted whose acknowledgement never reached its
#                 agent, for every batch of the job: the collector holds the
#                 whole job (no timed insert, credit for all of it), the
#                 agents are stopped (SIGSTOP), the collector stops (inserts,
#                 acknowledges into the void), the agents are killed -9 and
#                 restarted with a new collector: their spools send the job
#                 again, every row is inserted twice (merges stopped, so
#                 both copies stay) and read once.
# failover:       two collectors a and b on the cluster; the agents get both
#                 (a listed first, --failover-ms 3000, probes every 200 ms:
#                 their answers show a healthy collector alive while it
#                 holds acks for its 1 s inserts) and use a; kill -9 of
#                 a mid-stream: the agents move to b (metric, log) and send
#                 it what a did not acknowledge; the job is exact, and b and
#                 the agents serve; b and a new collector c answer the
#                 live-state endpoints alike (live_same.py).
# diff:           the same job in an LMDB collector and in ClickHouse (its
#                 batches sent to both: the agents' spools again, as in
#                 replay): every query endpoint, with several parameter
#                 sets (ranks, time window, types, compact, limit and
#                 cursor, func and seq, errors; the ledger's seq and rank
#                 windows and pages), answers byte for byte alike
#                 from a collector on ClickHouse; again after that
#                 collector is killed -9 0.2 s into a query and started again.
# failover_stop:  the same with a stopped (SIGSTOP) instead of killed: its
#                 connections stay up but nothing is acknowledged, the agents
#                 move to b; a, continued, inserts what it held and what
#                 reached it while stopped, which b inserted too (merges
#                 stopped: both copies are counted), and stops cleanly.
# secure:         every server also on HTTPS (a self-signed certificate)
#                 with user nsc and a password: a collector with a wrong
#                 password, or without the CA that signed the servers'
#                 certificate, refuses to start and says why; with both
#                 (ch_user, ch_password_file, ch_tls, ch_ca_file) it stores
#                 the job over HTTPS and answers queries from it.
# live_same:      two collectors a and b, one agent each: once the job is
#                 delivered, a and b answer status, live, hosts and the
#                 live-state figures of /metrics alike (live_same.py, the
#                 fields compared: docs/clickhouse-read.md); a garbage row in
#                 the live table is left out and counted, the answers still
#                 agree; after kill -9 of a, b and a new collector c with
#                 no agent answer alike too; once a's snapshot is older
#                 than the heartbeat timeout (4 s here) b no longer holds
#                 node 0's part of the job; a started again with its
#                 collector_id reads its last snapshot back: a and b hold
#                 the whole job again and agree.
# retain:         retain_age_s 3: the job stored, then, no insert touching
#                 it for 3 s, deleted from every table of both shards (the
#                 collector's retention pass, ALTER TABLE ... DELETE),
#                 counted and logged; a second job written meanwhile stays.
# ledger:         the same batches with ledger records (nsc-feed --ledger,
#                 sent twice: a batch inserted twice) into an LMDB collector
#                 and a collector on ClickHouse: /api/v1/ledger answers byte
#                 for byte alike (windows of seqs and ranks, pages); SQL
#                 over ledger_recs finds the window's records, values and
#                 edges as LMDB's answer has them, each record once; each
#                 ledger, collectives and stats query read only its
#                 window, one whose window holds no record the whole job.
# window:         the same with 256 records per process and batch: windows
#                 across batches answer byte for byte alike; a window of
#                 one record reads fewer bytes from ClickHouse than one
#                 stored batch (ncclscope_collector_query_read_bytes_total):
#                 its records alone, not the batches holding them; with
#                 ch_scope_records 100 the wide windows (read as batches)
#                 answer alike too, and with 0 the one record reads at
#                 least a batch. Time windows (t0_ns) answer alike, each
#                 rank's previous kernel end 1,000 records before t0
#                 (nsc-feed --ledger-open), and read a fraction of the
#                 bytes of their seqs read whole (with t1_ns: not the
#                 records enqueued after it but its collectives' own).
# window_rows:    a time window (t0_ns, t1_ns) of about 100 seqs whose
#                 ranks' previous kernel ends lie two buckets of seqs back
#                 (ledger_marks: docs/clickhouse-read.md) answers byte for
#                 byte alike, and the rows ClickHouse reads for it
#                 (query_log) stay within twice as many once the job is
#                 four times longer; a collector on a database whose
#                 ledger_recs has no ledger_marks refuses to start.
# timeline_rows:  an emulated job stored both ways (2,400 iterations over
#                 12 s, its parts merged: the plugins send their
#                 definitions again every 10 s, and ClickHouse keeps the
#                 last of each, which a load gives the process's first
#                 section: else the events before it name contexts not yet
#                 defined, and the answers left them out); timeline windows of a 32nd of it (t0_ns and
#                 t1_ns, compact with states, a page and the next, open ends)
#                 answer byte for byte alike, each a scoped load (event_marks:
#                 docs/clickhouse-read.md), and the rows ClickHouse reads
#                 (query_log) for one with 27 32nds of the job before it stay
#                 within twice those of one with 4 before it (times the
#                 ratio of their events, where it has more), and a third of
#                 the whole job's; the same window of rank 1 alone reads at
#                 most two thirds of its rows (its process's sections
#                 alone; the definitions of every process and the granules
#                 of the small parts stay); a window of a 32nd of the job
#                 reads at most an eighth of its rows; a collector on a
#                 database whose events table has ClickHouse's own granules
#                 (8,192 rows: an older version's) says so and starts.
# verdict_one:    two collectors a and b, node 0's agent to a and node 1's to
#                 b, hang_ms 1 s; rank 3 (node 1) hangs before collective 3
#                 and the others wait in it (20 s): both collectors' diagnose
#                 reach one verdict, the same (a learns rank 3's process from
#                 b's live snapshot), naming rank 3 at seq 3 (the missing
#                 rank) once, not once per collector's share; the webhook
#                 receiver gets it, and each verdict once (one collector of
#                 the two announces the job), 10 passes of each later.
# verdict_kill:   the same hang, rank 1 (node 0) hung, node 0's agent
#                 given a then b and node 1's b then a (failover 1 s):
#                 kill -9 of a once the hang began but before hang_ms
#                 passed: b's diagnose still reaches the verdict, and b
#                 posts it to the webhook (the job is b's to announce, or
#                 becomes b's once a's snapshot is stale), and no missing
#                 verdict at another rank (a partial view's) is posted.
# current:        a current ClickHouse release: a recording proxy
#                 (record.py) in front of each of the three 18.16 servers
#                 while a collector stores a job, answers every query
#                 endpoint, starts again and deletes the job by retention;
#                 then nsc-ch-replay makes every recorded request, in the
#                 same order, of ClickHouse 26.7 (chDB's libchdb.so, which
#                 scripts/deps.sh --test fetches), as a cluster of one local
#                 shard: every statement runs, and every SELECT answers the
#                 bytes 18.16 answered (those that 18.16's timing or its
#                 shard split decided are run, not compared; the summary
#                 counts them). Skips where deps.sh found no chDB build.
#
# Checked after the agents delivered everything and the collector stopped:
# events per type equal the emulator's (nothing acknowledged lost, nothing
# twice); each rank's Coll events (function name, seqNumber) are the
# emulator's collectives (coll_check.py: the columns and the `fields` elements
# hold the right fields); the batches table's record totals equal the events
# table's rows and the states and completions tables' Array elements; the two shards' rows add up to the Distributed
# table's and each process's events are on one shard; each node's clock
# model and each process's start are stored, and a collector started
# afterwards loads the clock models.
bin=$1 plugin=$2 mode=$3
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
ch_require

# host_wall_ns: this host's CLOCK_REALTIME minus CLOCK_MONOTONIC (what a
# collector records as its wall_offset_ns); wall_slack_ns: how far two
# collectors' offsets may be apart, each read on its own: the move of this
# host's offset since the test began (a clock step) and the millisecond
# they are rounded to (docs/api.md, "Wall-clock time").
host_wall_ns() {
    python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC))'
}
wall_at_start=$(host_wall_ns)
wall_slack_ns() {
    local d=$(($(host_wall_ns) - wall_at_start))
    echo $((${d#-} + 1000000))
}

[ "$mode" != secure ] || ch_secure
case $mode in diff | window_rows | timeline_rows) ch_log_queries ;; esac
if [ "$mode" = current ]; then
    chdb=$(ch_current) || exit $?
fi
ch_cluster
store="clickhouse://127.0.0.1:${chhttp[front]}/nsc?cluster=nsc"
shards="127.0.0.1:${chhttp[shard0]},127.0.0.1:${chhttp[shard1]}"
if [ "$mode" = secure ]; then
    store="clickhouse://127.0.0.1:${chhttps[front]}/nsc?cluster=nsc"
    shards="127.0.0.1:${chhttps[shard0]},127.0.0.1:${chhttps[shard1]}"
fi

# refused WHY COLLECTOR-ARGS...: a collector on the store with these
# arguments exits non-zero at start and its error names WHY (a pattern).
refused() {
    local why=$1
    shift
    if timeout 60 "$bin/ncclscope-collector" --listen tcp://127.0.0.1:0 --http 127.0.0.1:0 --db "$dir/refused" \
        --store "$store" --ch-shards "$shards" "$@" 2>"$dir/refused.log"; then
        die "a collector started with $*"
    fi
    grep -q -- "$why" "$dir/refused.log" || die "a collector refused ($*) without saying $why: $(cat "$dir/refused.log")"
}

# one_value NAME QUERY: the query's single answer on NAME.
one_value() { ch_sql "$1" "$2" || die "query failed: $2"; }

# coll_field NAME: NAME's place (from 1) in Coll's list of common/event_fields.h:
# its element of the events table's `fields` Array.
coll_field() {
    awk -v m="$1" '/^#define NSC_FIELDS_COLL\(/ { on = 1; next }
        on && /X\(a,/ { n++; split($0, f, ","); gsub(/ /, "", f[3]); if (f[3] == m) { print n; exit } }
        on && !/\\$/ { exit }' "$(dirname "$0")/../../common/event_fields.h"
}

check_clickhouse() {
    local j="job = '$job'" seq func
    seq=$(coll_field seq) func=$(coll_field func)
    [ -n "$seq" ] && [ -n "$func" ] || die "no seq or func in NSC_FIELDS_COLL"
    ch_sql front "SELECT type, count() FROM nsc.events FINAL WHERE $j GROUP BY type FORMAT TabSeparated" \
        >"$dir/counts.tsv" || die "cannot count the events"
    "$bin/nsc-ch-check" "$dir/emu.json" "$dir/counts.tsv" || die "ClickHouse differs from what was emitted"
    ch_sql front "SELECT host, pid, rank, fields[$seq], fields[$func] FROM nsc.events FINAL WHERE $j AND type = 1 FORMAT TabSeparated" \
        >"$dir/colls.tsv" && ch_sql front "SELECT host, pid, id, text FROM nsc.strings FINAL WHERE $j FORMAT TabSeparated" \
        >"$dir/strings.tsv" || die "cannot read the collectives"
    "$(dirname "$0")/coll_check.py" "$dir/emu.json" "$dir/colls.tsv" "$dir/strings.tsv" ||
        die "ClickHouse's collectives differ from the emulator's"
    local want got
    want=$(one_value front "SELECT sum(events), sum(states), sum(completions) FROM nsc.batches FINAL WHERE $j")
    got=$(one_value front "SELECT (SELECT count() FROM nsc.events FINAL WHERE $j), (SELECT sum(length(tid)) FROM nsc.states FINAL WHERE $j), (SELECT sum(length(id)) FROM nsc.completions FINAL WHERE $j)")
    [ "$want" = "$got" ] || die "batches say events/states/completions '$want', the tables hold '$got'"
    local per_shard=0 split
    for s in shard0 shard1; do
        per_shard=$((per_shard + $(one_value $s "SELECT count() FROM nsc.events_local FINAL WHERE $j")))
        one_value $s "SELECT DISTINCT host, pid FROM nsc.events_local WHERE $j" >>"$dir/procs.tsv"
    done
    [ "$per_shard" = "$(one_value front "SELECT count() FROM nsc.events FINAL WHERE $j")" ] ||
        die "the shards' events ($per_shard) are not the Distributed table's"
    split=$(sort "$dir/procs.tsv" | uniq -d)
    [ -z "$split" ] || die "processes with events on both shards: $split"
    [ "$(one_value front "SELECT uniqExact(host) FROM nsc.clocks FINAL")" = "$nodes" ] || die "not every node's clock model is stored"
    [ "$(one_value front "SELECT uniqExact(host, pid) FROM nsc.lifecycle FINAL WHERE $j AND event = 1")" = \
      "$(python3 -c 'import json,sys; print(len({(r["host"], r["pid"]) for r in json.load(open(sys.argv[1]))["ranks"]}))' "$dir/emu.json")" ] ||
        die "not every process's start is stored"
    echo "ch.sh ($mode): rows inserted $(one_value front "SELECT count() FROM nsc.events WHERE $j"), after folding $(one_value front "SELECT count() FROM nsc.events FINAL WHERE $j")"
}

# finish_ch: every agent delivers and stops, the collector stops cleanly.
finish_ch() {
    local n
    for n in $(seq 0 $((nodes - 1))); do wait_until 60 delivered $n || die "node $n did not deliver its spool"; done
    for n in $(seq 0 $((nodes - 1))); do stop agent$n; done
    stop collector
    check_clickhouse
    # a collector started on the store with no agent has the nodes' clock
    # models: it loaded them from ClickHouse
    start_collector 0 --store "$store" --ch-shards "$shards"
    curl -sf -m 5 "http://127.0.0.1:$http/metrics" >"$dir/metrics" || die "no /metrics"
    for n in $(seq 0 $((nodes - 1))); do
        grep -q "^ncclscope_collector_clock_offset_seconds{host=\"node$n\"}" "$dir/metrics" ||
            die "node$n's clock model was not loaded from ClickHouse"
    done
    stop collector
}

# paced_job: collector, agents and a 2.4 s job in the background ($emu),
# once the first batches are acknowledged.
paced_job() {
    start_collector 0 --store "$store" --ch-shards "$shards"
    start_agent 0
    start_agent 1
    emulate --iters 60 --pace-us 40000 &
    emu=$!
    wait_until 30 metric_above 0 ncclscope_agent_forward_batches_acked_total 2 || die "nothing acknowledged"
}


# failover_job: collectors a (pids[collector_a]) and b (pids[collector]), the
# agents given both, a first; a 4.8 s job in the background ($emu), once a
# acknowledged batches of both nodes.
failover_job() {
    start_collector 0 --store "$store" --ch-shards "$shards"
    pids[collector_a]=${pids[collector]} port_a=$port
    unset "pids[collector]"
    start_collector 0 --store "$store" --ch-shards "$shards"
    local n
    for n in 0 1; do
        run_agent $n --host-name "node$n" --collector "tcp://127.0.0.1:$port_a, tcp://127.0.0.1:$port" \
            --reconnect-ms 20 --reconnect-max-ms 200 --failover-ms 3000 --probe-ms 200
    done
    emulate --iters 120 --pace-us 40000 &
    emu=$!
    for n in 0 1; do
        wait_until 30 metric_above $n ncclscope_agent_forward_batches_acked_total 2 || die "node $n: nothing acknowledged"
        metric_is $n ncclscope_agent_collector_index 0 || die "node $n does not use the first collector"
    done
    collector_metric_is ncclscope_collector_batches_in_total 0 || die "collector b took batches while a served"
}

# failed_over: both agents use b, moved once and said so; the job ends; b
# took batches; b and the agents serve.
failed_over() {
    local n
    for n in 0 1; do
        wait_until 30 metric_is $n ncclscope_agent_collector_index 1 || die "node $n did not move to collector b"
        metric_is $n ncclscope_agent_collector_failovers_total 1 || die "node $n moved more than once"
        grep -q "collector tcp://127.0.0.1:$port_a (1 of 2): .*; moving to tcp://127.0.0.1:$port (2 of 2)" "$dir/agent$n.log" ||
            die "node $n did not log its move"
    done
    wait $emu || die "emulator failed"
    for n in 0 1; do
        wait_until 60 delivered $n || die "node $n did not deliver its spool to b"
        curl -sf -m 5 "http://$(cat "$dir/node$n/agent.http")/healthz" | grep -q '"collector_connected":true' ||
            die "node $n's /healthz does not answer connected"
    done
    collector_metric_above ncclscope_collector_batches_in_total 0 || die "collector b took no batch"
    status_has "'$job' in json.dumps(s)" || die "collector b's status does not list $job"
}

# stop_merges: from here on no background merge folds the copies of a row on
# either shard. STOP MERGES holds for the tables that exist: a collector makes
# them first.
stop_merges() {
    start_collector 0 --store "$store" --ch-shards "$shards"
    stop collector
    for s in shard0 shard1; do ch_sql $s "SYSTEM STOP MERGES" || die "cannot stop merges on $s"; done
}

# ask PATH?QUERY: collector $1's answer (HTTP port) into $dir/$2, its status printed.
ask() { curl -s -m 120 -o "$dir/$2" -w '%{http_code}' "http://127.0.0.1:$1/api/v1/$3"; }

# same CODE PATH?QUERY: the LMDB collector ($http_lmdb) and the ClickHouse
# one ($http) answer with status CODE and the same bytes, their wall clock
# and UTC times too (both collectors' record of this host's clock, docs/api.md
# "Wall-clock time"), unless this host's clock moved: then alike but for
# offsets within wall_slack_ns (same_answer.py).
same() {
    local a b
    a=$(ask "$http_lmdb" lmdb.out "$2") b=$(ask "$http" ch.out "$2")
    [ "$a" = "$1" ] || die "$2: the LMDB collector answered $a, not $1: $(head -c 300 "$dir/lmdb.out")"
    [ "$b" = "$a" ] && { cmp -s "$dir/lmdb.out" "$dir/ch.out" ||
        "$(dirname "$0")/same_answer.py" "$dir/lmdb.out" "$dir/ch.out" "$(wall_slack_ns)"; } ||
        die "$2: ClickHouse answered $b and other bytes than LMDB ($a): $(cmp "$dir/lmdb.out" "$dir/ch.out" || true)
 LMDB: $(head -c 400 "$dir/lmdb.out")
 CH:   $(head -c 400 "$dir/ch.out")"
    compared=$((compared + 1))
}

# ledger_both FEED-ARGS...: nsc-feed's job (2 agents of 4 processes, FEED-ARGS)
# into an LMDB collector ($http_lmdb, left running) and into ClickHouse, then
# a collector started afresh on ClickHouse ($http); $j names the job's
# communicator, $compared counts the answers compared.
ledger_both() {
    feed() { "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 2 --procs 4 "$@" --timeout-ms 60000 \
        > "$dir/feed.out" || die "not every batch was acknowledged: $(cat "$dir/feed.out")"; }
    start_collector 0 --db "$dir/lmdb"
    pids[collector_lmdb]=${pids[collector]} http_lmdb=$http port_lmdb=$port
    unset "pids[collector]"
    feed "$@"
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    feed "$@"
    stop collector
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    j="job=feed&comm=0xfeed" compared=0
}

comms_name_job() {  # the answer read whole first (grep -q ending early would fail curl with SIGPIPE)
    local a
    a=$(curl -sf -m 60 "http://127.0.0.1:$http/api/v1/comms?job=$job") && grep -q "\"job\":\"$job\"" <<<"$a"
}

# from_lmdb FILE PYTHON: a value taken from the LMDB collector's answer FILE
# (NDJSON lines as l, or JSON as d).
from_lmdb() {
    python3 -c 'import json,sys
t = open(sys.argv[1]).read()
l = [json.loads(x) for x in t.splitlines() if x.strip()]
d = l[0] if len(l) == 1 else None
print(eval(sys.argv[2]))' "$dir/$1" "$2"
}

# every_query: each endpoint with several parameter sets, the same from both.
every_query() {
    local j="job=$job" comm t0 t1 cur
    compared=0
    same 200 "comms?$j"
    same 200 comms
    cp "$dir/lmdb.out" "$dir/comms.json"
    grep -q '"wall_offset_ns":' "$dir/comms.json" || die "no wall clock in the answers: $(head -c 300 "$dir/comms.json")"
    comm=$(from_lmdb comms.json "d['comms'][0]['comm']")
    same 200 "timeline?$j&comm=$comm"
    cp "$dir/lmdb.out" "$dir/timeline.ndjson"
    [ "$(from_lmdb timeline.ndjson "l[-1]['events']")" -gt 1000 ] || die "the timeline is too short to compare"
    t0=$(from_lmdb timeline.ndjson "sorted(e['start_ns'] for e in l if e['kind'] == 'event')[len(l) // 4]")
    t1=$(from_lmdb timeline.ndjson "sorted(e['start_ns'] for e in l if e['kind'] == 'event')[len(l) // 2]")
    same 200 "timeline?$j&comm=$comm&rank=1,3"
    same 200 "timeline?$j&comm=$comm&t0_ns=$t0&t1_ns=$t1&type=coll,proxyop,kernelch"
    same 200 "timeline?$j&comm=$comm&format=compact"
    same 200 "timeline?$j&comm=$comm&format=compact&states=1&rank=0"
    same 200 "timeline?$j&comm=$comm&limit=300"
    cur=$(from_lmdb lmdb.out "l[-1]['next_cursor']")
    same 200 "timeline?$j&comm=$comm&limit=300&cursor=$cur"
    same 200 "collectives?$j&comm=$comm"
    same 200 "collectives?$j&comm=$comm&func=AllReduce&seq=3-7"
    same 200 "collectives?$j&comm=$comm&rank=0,2&t0_ns=$t0"
    same 200 "collectives?$j&comm=$comm&limit=4"
    cur=$(from_lmdb lmdb.out "l[-1]['next_cursor']")
    same 200 "collectives?$j&comm=$comm&limit=4&cursor=$cur"
    same 200 "stats?$j&comm=$comm"
    same 200 "stats?$j&comm=$comm&rank=1&func=allreduce&t1_ns=$t1"
    same 200 "p2p?$j&comm=$comm"
    same 200 "p2p?$j&comm=$comm&t0_ns=$t0&settle_lag_ns=1000000"
    same 200 "p2p?$j&comm=$comm&t0_ns=$t0&t1_ns=$t1"
    same 200 "topology?$j&comm=$comm"
    same 200 "topology?$j&comm=$comm&t0_ns=$t0&t1_ns=$t1"
    same 200 "ledger?$j&comm=$comm"
    same 200 "ledger?$j&comm=$comm&seq=3-7&rank=1,3"
    same 200 "ledger?$j&comm=$comm&limit=5"
    cur=$(from_lmdb lmdb.out "l[-1]['next_cursor'] or ''")
    same 200 "ledger?$j&comm=$comm&limit=5${cur:+&cursor=$cur}"
    same 400 "ledger?$j&comm=$comm&seq=7-3"
    same 200 "diagnose?$j"
    same 200 "links?$j"
    # not hosts: it tallies the jobs of the live status, which this
    # collector (never an agent) holds only while the stopped collector's
    # snapshot is younger than the heartbeat timeout (mode live_same
    # compares hosts between collectors of one store)
    same 404 "timeline?job=no-such-job&comm=$comm"
    same 404 "timeline?$j&comm=0x1"
    same 400 "timeline?$j&comm=$comm&t0_ns=12x"
    echo "ch.sh ($mode): $compared answers identical"
}

# live_answers NAME HTTP_PORT: a collector's live-state answers into $dir/live_NAME.
live_answers() {
    local d="$dir/live_$1" u="http://127.0.0.1:$2"
    mkdir -p "$d"
    curl -sf -m 10 "$u/api/v1/status" >"$d/status.json" && curl -sf -m 120 "$u/api/v1/hosts" >"$d/hosts.json" &&
        curl -sf -m 10 "$u/metrics" >"$d/metrics.txt" || return 1
    curl -s -N -m 1 "$u/api/v1/live" >"$d/live.sse" || true  # the first summary comes at once
    grep -m1 '^data: ' "$d/live.sse" | cut -c7- >"$d/live.json"
}

# live_same HTTP_A HTTP_B: the two collectors' live-state answers agree.
live_same() {
    live_answers A "$1" && live_answers B "$2" &&
        "$(dirname "$0")/live_same.py" "$dir/live_A" "$dir/live_B" "$(wall_slack_ns)" 2>"$dir/live_same.err"
}

# live_agree HTTP_A HTTP_B: live_same within 30 s (a try takes a second or
# more: the live stream is read for one, hosts runs the analysis).
live_agree() {
    local end=$((SECONDS + 30))
    until live_same "$1" "$2"; do
        [ $SECONDS -lt $end ] || return 1
        sleep 0.5
    done
}

# live_agree_new: collector b (pids[collector], $http) and a new collector
# c with no agent answer the live state alike; then c stops and b is
# pids[collector] again.
live_agree_new() {
    local b_pid=${pids[collector]} b_http=$http
    unset "pids[collector]"
    start_collector 0 --store "$store" --ch-shards "$shards"
    live_agree "$b_http" "$http" || die "b and a new collector answer differently: $(cat "$dir/live_same.err")"
    stop collector
    pids[collector]=$b_pid http=$b_http
}

# two_collectors: collectors a (pids[collector_a], $http_a) and b, node 0's
# agent sending to a and node 1's to b.
two_collectors() {
    start_collector 0 --store "$store" --ch-shards "$shards" --collector-id a "${hook_args[@]}"
    pids[collector_a]=${pids[collector]} http_a=$http
    unset "pids[collector]"
    start_agent 0
    start_collector 0 --store "$store" --ch-shards "$shards" --collector-id b "${hook_args[@]}"
    start_agent 1
}

# hook_receiver: the webhook's receiver (tests/e2e/webhook_receiver.py), its
# bodies in $dir/hook.log; hook_args the collectors' settings for it, with
# root-cause passes every 300 ms.
hook_args=()
hook_receiver() {
    python3 "$(dirname "$0")/../e2e/webhook_receiver.py" "$dir/hook.port" "$dir/hook.log" &
    pids[receiver]=$!
    wait_until 10 test -s "$dir/hook.port" || die "the webhook receiver did not start"
    hook_args=(--webhook-url "http://127.0.0.1:$(cat "$dir/hook.port")/hook" --rootcause-interval-ms 300)
}

# hook_has KIND RANK [once]: the receiver got a verdict KIND at RANK of the
# job; with once, it got no verdict (job, kind and place) more than once.
hook_has() {
    [ -s "$dir/hook.log" ] && python3 -c 'import json, sys
log, job, kind, rank = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
got = [dict(b["problem"], job=b["job"]) for b in map(json.loads, open(log))]
keys = [(p["job"], p["kind"], p["comm"], p["rank"], p["peer"], p["channel"], tuple(p["hosts"])) for p in got]
if len(sys.argv) > 5 and len(set(keys)) != len(keys):
    sys.exit("posted more than once: %s" % sorted({k for k in keys if keys.count(k) > 1}))
sys.exit(0 if any(k[:2] == (job, kind) and k[3] == rank for k in keys) else 1)' "$dir/hook.log" "$job" "$1" "$2" ${3:-}
}

# hook_only KIND RANK: every verdict KIND of the job the receiver got is at RANK.
hook_only() {
    python3 -c 'import json, sys
log, job, kind, rank = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
got = [b["problem"] for b in map(json.loads, open(log)) if b["job"] == job and b["problem"]["kind"] == kind]
sys.exit(0 if got and all(p["rank"] == rank for p in got) else 1)' "$dir/hook.log" "$job" "$1" "$2"
}

# two_collectors_job: two_collectors, and a 20-iteration job delivered.
two_collectors_job() {
    two_collectors
    # rank 1 late on the host: a fault for the root-cause metrics to place
    emulate --iters 20 --pace-us 20000 --slow-rank 1 --slow-us 5000
    local n
    for n in 0 1; do wait_until 60 delivered $n || die "node $n did not deliver its spool"; done
}

# rc_metrics_late: the collector's ncclscope_host_causes equal its hosts
# answer, host by host and cause by cause (blameless hosts aside), and a
# host has a late cause.
rc_metrics_late() {
    curl -sf -m 10 "http://127.0.0.1:$http/metrics" >"$dir/rc_metrics.txt" &&
        curl -sf -m 60 "http://127.0.0.1:$http/api/v1/hosts" >"$dir/rc_hosts.json" &&
        python3 -c 'import json, re, sys
d = json.load(open(sys.argv[1])); m = open(sys.argv[2]).read()
got = {}
for h, c, v in re.findall(r"^ncclscope_host_causes\{host=\"([^\"]*)\",cause=\"([^\"]*)\"\} (\d+)$", m, re.M):
    got.setdefault(h, {})[c] = int(v)
want = {h["host"]: {k: h[k] for k in ("late", "slow_link", "slow_nic", "stall", "dead", "dropped", "other")} for h in d["hosts"]}
got = {h: c for h, c in got.items() if any(c.values())}  # a blameless host has zeros
want = {h: c for h, c in want.items() if any(c.values())}
ok = got == want and any(c["late"] for c in got.values())
if not ok:
    print("metrics %s, hosts %s" % (got, want), file=sys.stderr)
sys.exit(0 if ok else 1)' "$dir/rc_hosts.json" "$dir/rc_metrics.txt" 2>"$dir/rc.err"
}

# job_whole: the status lists every process of the emulator finished and
# every rank of its communicators.
job_whole() {
    status_has "(sorted((p['host'], p['pid'], p['state']) for p in s['processes']) ==
        sorted({(r['host'], r['pid'], 'finished') for r in json.load(open('$dir/emu.json'))['ranks'] if r['profiled']}) and
        sum(len(c['ranks']) for j in s['jobs'] if j['job'] == '$job' for c in j['comms']) ==
        len([r for r in json.load(open('$dir/emu.json'))['ranks'] if r['profiled']]))"
}

# live_whole: job_whole, and both agents alive.
live_whole() {
    status_has "len([a for a in s['agents'] if a['state'] == 'alive']) == $nodes" && job_whole
}

# hang_verdict HTTP RANK SEQ: the collector's diagnose of the job has the
# hang's verdict (first problem: RANK missing from collective SEQ) and names
# that place once; the answer in $dir/verdict_HTTP.json.
hang_verdict() {
    curl -sf -m 30 "http://127.0.0.1:$1/api/v1/diagnose?job=$job" >"$dir/verdict_$1.json" &&
        python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["problems"]
at = lambda x: (x["kind"], x["rank"], x["seq"]) == ("missing", int(sys.argv[2]), int(sys.argv[3]))
sys.exit(0 if p and at(p[0]) and sum(map(at, p)) == 1 else 1)' "$dir/verdict_$1.json" "$2" "$3"
}

# verdict_of HTTP: the verdict line of the collector's last answer.
verdict_of() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["verdict"])' "$dir/verdict_$1.json"; }

# hang_job RANK: a job whose rank RANK stops before collective 3, the
# others holding in it for 20 s (in the background: $emu; hang_end waits).
hang_job() {
    scenario=hang emulate --iters 6 --hang-rank "$1" --hang-after 3 --hang-ms 20000 --pace-us 20000 &
    emu=$!
}
hang_end() { wait $emu || die "emulator failed"; }

case $mode in
diff)
    ch_lmdb_job --iters 24 --slow-rank 1 --slow-us 5000
    # a collector on ClickHouse with no agent answers the queries
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    every_query
    # killed 0.2 s into a query (done or not) and started again: the same answers, nothing left behind
    curl -s -m 60 -o /dev/null "http://127.0.0.1:$http/api/v1/timeline?job=$job&comm=$(from_lmdb comms.json "d['comms'][0]['comm']")" &
    sleep 0.2
    kill9 collector
    # where the kill lands is chance: what it leaves at worst, a store and
    # an answer's file made and not unlinked yet (chanswer.h), made sure of
    mkdir -p "$dir/chdb/tmp/query-left" && : >"$dir/chdb/tmp/query-left/data.mdb" && : >"$dir/chdb/tmp/answer-left"
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    [ -z "$(ls "$dir/chdb/tmp")" ] || die "the killed collector's query folders are still there: $(ls "$dir/chdb/tmp")"
    every_query
    # the job was read from ClickHouse once and kept (with the empty store
    # of the unknown job): every other query of it was a hit, but those that
    # read the ledger's rows alone (ClickHouse holds the job's ledger)
    m=ncclscope_collector_query
    hits=$(collector_metric ${m}_cache_hits_total) scoped=$(collector_metric ${m}_scoped_loads_total)
    [ "$(collector_metric ${m}_loads_total)" = 2 ] && [ "$scoped" -gt 0 ] && [ $((hits + scoped)) -gt 20 ] ||
        die "the query cache did not keep the job: $(collector_metric ${m}_loads_total) loads, $hits hits, $scoped scoped loads"
    [ "$(ls "$dir/chdb/tmp" | wc -l)" = 2 ] || die "not the 2 kept stores in chdb/tmp: $(ls "$dir/chdb/tmp")"
    # keeping no job, each query loads what it reads: a timeline or p2p
    # (clock=model) the job without its ledger, not one SELECT of it, and
    # the same answers
    stop collector
    NCCLSCOPE_CH_QUERY_CACHE=0 start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    comm=$(from_lmdb comms.json "d['comms'][0]['comm']") before=$(ch_selects front ledger | cut -f1)
    read0=$(collector_metric ncclscope_collector_query_read_bytes_total)
    same 200 "timeline?job=$job&comm=$comm"
    read1=$(collector_metric ncclscope_collector_query_read_bytes_total)
    same 200 "p2p?job=$job&comm=$comm"
    read2=$(collector_metric ncclscope_collector_query_read_bytes_total)
    [ "$(ch_selects front ledger | cut -f1)" = "$before" ] || die "a timeline or p2p read the ledger"
    # the ring holds no Send/Recv: its p2p read loads no section of events
    [ $((read2 - read1)) -lt $(((read1 - read0) / 10)) ] ||
        die "the ring's p2p read $((read2 - read1)) bytes, its whole timeline $((read1 - read0))"
    same 200 "timeline?job=$job&comm=$comm&clock=causal"
    [ "$(ch_selects front ledger | cut -f1)" -gt "$before" ] || die "a causal timeline did not read the ledger"
    every_query
    stop collector
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    # node0's states and completions rewritten with their times and args
    # whole (chrows.h), as a collector writes a section whose values lie
    # further apart than 32 bits: read afresh, the same answers
    whole() { echo "$1_wide = arrayMap((x, b) -> b + x, $1_off, replicate($1_base, $1_off))"; }
    rewrite() {  # TABLE SET: in order (one UPDATE may see the other's result)
        ch_sql $n "ALTER TABLE nsc.$1_local UPDATE $2 WHERE job = '$job' AND host = 'node0'" || die "cannot rewrite $1 on $n"
    }
    for n in shard0 shard1; do
        rewrite states "$(whole ts), $(whole arg)"
        rewrite states "ts_off = emptyArrayUInt32(), arg_off = emptyArrayUInt32()"
        rewrite completions "$(whole ts)"
        rewrite completions "ts_off = emptyArrayUInt32()"
    done
    forms() { one_value front "SELECT countIf(notEmpty(ts_off)), countIf(notEmpty(ts_wide)) FROM nsc.$1 WHERE job = '$job' FORMAT CSV"; }
    wait_until 60 eval '[ "$(forms states | grep -c "^[1-9][0-9]*,[1-9]")" = 1 ]' ||
        die "the states are not half rewritten: $(forms states)"
    wait_until 60 eval '[ "$(forms completions | grep -c "^[1-9][0-9]*,[1-9]")" = 1 ]' ||
        die "the completions are not half rewritten: $(forms completions)"
    stop collector
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    every_query
    # the job changes in ClickHouse (node0's sections deleted): the next
    # query reads it again and answers from what is there now
    local_sections() { one_value front "SELECT count() FROM nsc.batches FINAL WHERE job = '$job'"; }
    before=$(local_sections)
    for n in shard0 shard1; do
        ch_sql $n "ALTER TABLE nsc.batches_local DELETE WHERE job = '$job' AND host = 'node0'" || die "cannot delete on $n"
    done
    wait_until 60 eval '[ "$(local_sections)" -lt "$before" ]' || die "node0's sections were not deleted"
    comm=$(from_lmdb comms.json "d['comms'][0]['comm']")
    [ "$(ask "$http" ch.out "timeline?job=$job&comm=$comm")" = 200 ] || die "no timeline after the change: $(head -c 300 "$dir/ch.out")"
    [ "$(collector_metric ncclscope_collector_query_loads_total)" = 3 ] ||
        die "a changed job was not read again: $(collector_metric ncclscope_collector_query_loads_total) loads"
    ask "$http_lmdb" lmdb.out "timeline?job=$job&comm=$comm" >/dev/null
    ! cmp -s "$dir/lmdb.out" "$dir/ch.out" || die "the timeline did not change with the job"
    grep -q '"host":"node1"' "$dir/ch.out" && ! grep -q '"host":"node0"' "$dir/ch.out" ||
        die "the timeline read again is not node1's alone: $(head -c 300 "$dir/ch.out")"
    stop collector
    [ -z "$(ls "$dir/chdb/tmp")" ] || die "a stopped collector left query stores behind: $(ls "$dir/chdb/tmp")"
    stop collector_lmdb
    echo "ch.sh ($mode): the ring's p2p read $((read2 - read1)) bytes, its whole timeline $((read1 - read0))"
    ;;
ledger)
    ledger_both --batches 12 --ledger 16 --resend 4
    same 200 "ledger?$j"
    [ "$(grep -c '"kind":"record"' "$dir/lmdb.out")" = 1000 ] || die "not a full page of ledger records: $(tail -1 "$dir/lmdb.out")"
    same 200 "ledger?$j&seq=5-40&rank=0,2-3"
    # the same window by SQL over ledger_recs (a row per record): the same
    # records with the same values, edges included
    lmdb_recs=$(from_lmdb lmdb.out "'\\n'.join('\\t'.join(str(x) for x in (r['seq'], r['rank'], r['count'], r['bytes'],
        r['nchannels'], len(r['edges']), sum(e['bytes'] for e in r['edges']), sum(e['steps'] for e in r['edges'])))
        for r in l if r['kind'] == 'record')")
    sql_recs=$(one_value front "SELECT seq, rank, count, bytes, nchannels, length(edge_peer), arraySum(edge_bytes),
        arraySum(edge_steps) FROM nsc.ledger_recs FINAL WHERE job = 'feed' AND comm_id = $((0xfeed))
        AND seq BETWEEN 5 AND 40 AND rank IN (0, 2, 3) ORDER BY seq, rank FORMAT TabSeparated")
    [ -n "$lmdb_recs" ] && [ "$sql_recs" = "$lmdb_recs" ] ||
        die "ledger_recs' window differs from LMDB's: $(diff <(echo "$lmdb_recs") <(echo "$sql_recs") | head -5)"
    # every batch was sent twice: a row per record after folding
    [ "$(one_value front "SELECT count() FROM nsc.ledger_recs FINAL WHERE job = 'feed'")" = $((2 * 4 * 12 * 16)) ] ||
        die "ledger_recs does not hold each record once"
    same 200 "ledger?$j&limit=7"
    cur=$(from_lmdb lmdb.out "l[-1]['next_cursor']")
    same 200 "ledger?$j&limit=7&cursor=$cur"
    same 200 "collectives?$j"
    grep -q '"source":"ledger"' "$dir/lmdb.out" || die "the collectives are not the ledger's: $(head -c 300 "$dir/lmdb.out")"
    same 200 "collectives?$j&seq=5-40&rank=0,2-3"
    same 200 "collectives?$j&func=AllReduce&limit=3"
    same 200 "stats?$j"
    same 200 "stats?$j&rank=1&seq=2-30"
    # each answered from the batches holding its window (ledger_recs), none
    # from the whole job; a window without a ledger record reads the whole
    # job (the answer comes from the raw events, as from LMDB)
    collector_metric_is ncclscope_collector_query_scoped_loads_total "$compared" &&
        collector_metric_is ncclscope_collector_query_loads_total 0 ||
        die "ledger queries read whole jobs: $(curl -s "http://127.0.0.1:$http/metrics" | grep query_)"
    same 200 "collectives?$j&seq=$((1 << 40))-$((1 << 41))"
    collector_metric_is ncclscope_collector_query_loads_total 1 || die "an empty window did not read the whole job"
    echo "ch.sh ($mode): $compared answers identical"
    stop collector
    stop collector_lmdb
    ;;
window)
    # every 1,024th seq's kernels ended: a record's previous kernel end lies up to 1,024 records back
    ledger_both --batches 4 --ledger 256 --ledger-open 1024
    blob=$(one_value front "SELECT min(length(data)) FROM nsc.ledger WHERE job = 'feed'")
    # one_record: $got, the bytes the collective of seq 300 at rank 1 read from ClickHouse
    one_record() {
        got=$(collector_metric ncclscope_collector_query_read_bytes_total)
        same 200 "collectives?$j&seq=300-300&rank=1"
        [ "$(grep -c '"seq":300' "$dir/ch.out")" = 1 ] || die "not the one collective asked for: $(head -c 300 "$dir/ch.out")"
        got=$(($(collector_metric ncclscope_collector_query_read_bytes_total) - got))
    }
    # wide: windows across batches; all from the window alone
    wide() {
        same 200 "ledger?$j&seq=200-700&rank=0,3"
        same 200 "collectives?$j&seq=250-800&rank=1-2"
        same 200 "stats?$j&seq=1-1000"
        collector_metric_is ncclscope_collector_query_scoped_loads_total "$compared" ||
            die "window queries read whole jobs: $(curl -s "http://127.0.0.1:$http/metrics" | grep query_)"
    }
    # timed: a time window from the first agent's seq 1000 on (the second
    # agent's seqs are past 2^32) reads each rank's records from then on and
    # its last collective whose kernel ended (seq 0), not the communicator's
    # seqs; with BYTES, it reads fewer than a quarter of those
    timed() {
        local t0 at whole
        same 200 "collectives?$j&seq=1000-1000"
        t0=$(from_lmdb lmdb.out "[x['start_ns'] for x in l if x['kind'] == 'collective'][0]")
        at=$(collector_metric ncclscope_collector_query_read_bytes_total)
        same 200 "collectives?$j&seq=0-2000&t0_ns=$t0"
        [ "$(grep -c '"kind":"collective"' "$dir/ch.out")" = 24 ] || die "not seqs 1000-1023: $(tail -1 "$dir/ch.out")"
        at=$(($(collector_metric ncclscope_collector_query_read_bytes_total) - at))
        whole=$(collector_metric ncclscope_collector_query_read_bytes_total)
        same 200 "collectives?$j&seq=0-2000"
        whole=$(($(collector_metric ncclscope_collector_query_read_bytes_total) - whole))
        same 200 "stats?$j&seq=0-2000&t0_ns=$t0&rank=1-2"
        [ -z "${1:-}" ] || [ "$at" -lt $((whole / 4)) ] ||
            die "a time window read $at bytes from ClickHouse, its seqs $whole"
        # t1 ends it: not the second agent's seqs, all enqueued later
        at=$(collector_metric ncclscope_collector_query_read_bytes_total)
        same 200 "collectives?$j&t0_ns=$((t0 + 5000000))&t1_ns=$((t0 + 9000000))&rank=0,3"
        at=$(($(collector_metric ncclscope_collector_query_read_bytes_total) - at))
        [ -z "${1:-}" ] || [ "$at" -lt $((whole / 4)) ] ||
            die "a window ending at t1 read $at bytes from ClickHouse, the first agent's seqs $whole"
    }
    one_record
    read=$got
    timed bytes
    [ "$read" -gt 0 ] && [ "$read" -lt "$blob" ] ||
        die "a window of one record read $read bytes from ClickHouse, not fewer than a stored batch ($blob)"
    wide
    # windows of more records than ch_scope_records read the batches holding them
    stop collector
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb" --ch-scope-records 100
    before=$compared compared=0
    wide
    timed
    before=$((before + compared))
    stop collector
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb" --ch-scope-records 0
    compared=0
    one_record
    batches=$got
    [ "$batches" -ge "$blob" ] || die "with ch_scope_records 0 one record read $batches bytes, less than a batch ($blob)"
    echo "ch.sh ($mode): $((before + compared)) answers identical, a one-record window read $read bytes" \
         "(a batch: $blob; by batches: $batches)"
    stop collector
    stop collector_lmdb
    ;;
window_rows)
    # 28 batches of 256 records a process: seqs 0-7167; kernels ended at
    # seqs 0 and 4096, so seqs 6500-6600 (bucket 6) reach back to bucket 4
    ledger_both --batches 28 --ledger 256 --ledger-open 4096 --ledger-alone 27
    # window: its answer from both, and the rows both shards read for it in $rows
    window() {
        local at
        [ -n "${t0:-}" ] || {
            same 200 "collectives?$j&seq=6500-6500"
            t0=$(from_lmdb lmdb.out "[x['start_ns'] for x in l if x['kind'] == 'collective'][0]")
            same 200 "collectives?$j&seq=6600-6600"
            t1=$(from_lmdb lmdb.out "[x['start_ns'] for x in l if x['kind'] == 'collective'][0]")
        }
        at=$(ch_shard_rows)
        same 200 "collectives?$j&t0_ns=$t0&t1_ns=$t1"
        rows=$(($(ch_shard_rows) - at))
    }
    window
    [ "$(grep -c '"kind":"collective"' "$dir/ch.out")" -ge 50 ] || die "not the window's collectives: $(tail -1 "$dir/ch.out")"
    cp "$dir/ch.out" "$dir/window.small"
    small=$rows
    stop collector
    # the job four times longer, in both stores
    port=$port_lmdb
    feed --first 28 --batches 84 --ledger 256 --ledger-open 4096 --ledger-alone 83
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    feed --first 28 --batches 84 --ledger 256 --ledger-open 4096 --ledger-alone 83
    stop collector
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    window
    cmp -s "$dir/ch.out" "$dir/window.small" || die "the window's answer changed as the job grew"
    [ "$rows" -le $((2 * small)) ] || die "the window read $rows rows of ClickHouse at 4x the job, $small before"
    echo "ch.sh ($mode): a window read $small rows of ClickHouse, $rows at 4x the job"
    stop collector
    stop collector_lmdb
    ch_sql shard1 "DROP TABLE nsc.ledger_marks_local" || die "cannot drop ledger_marks_local"
    refused "without ledger_marks"
    ;;
timeline_rows)
    ch_lmdb_job --iters 2400 --pace-us 5000
    # the job's parts merged, as ClickHouse does in its time: how many rows
    # a read takes depends on the parts it meets, which merges change. An
    # OPTIMIZE that meets a merge already running merges nothing: asked
    # again until one part a partition is left
    merged() {
        local n t
        for n in shard0 shard1; do
            for t in events states completions event_marks batches; do
                [ -z "$(ch_sql $n "SELECT partition FROM system.parts WHERE active AND database = 'nsc' AND
                    table = '${t}_local' GROUP BY partition HAVING count() > 1")" ] && continue
                ch_sql $n "OPTIMIZE TABLE nsc.${t}_local FINAL" >/dev/null
                return 1
            done
        done
    }
    wait_until 120 merged || die "the job's parts are not merged"
    # no root-cause pass: one that read the job while a window is asked
    # would count its rows as the window's (a loaded machine's run outlasts
    # the first pass, 30 s in)
    start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb" --rootcause-interval-ms 0
    compared=0
    # the whole job's rows (its ledger aside), read by the first query that
    # reads it whole (a timeline without a window; comms reads the
    # definitions alone)
    at=$(ch_shard_rows)
    same 200 "comms?job=$job"
    defs=$(($(ch_shard_rows) - at))
    j="job=$job&comm=$(from_lmdb lmdb.out "d['comms'][0]['comm']")"
    at=$(ch_shard_rows)
    same 200 "timeline?$j&type=coll"
    whole=$(($(ch_shard_rows) - at))
    [ "$defs" -le $((whole / 20)) ] || die "comms read $defs rows of ClickHouse, the whole job $whole"
    first=$(from_lmdb lmdb.out "min(e['start_ns'] for e in l if e['kind'] == 'event')")
    last=$(from_lmdb lmdb.out "max(e['start_ns'] for e in l if e['kind'] == 'event')")
    width=$(((last - first) / 32))
    [ "$width" -gt 20000000 ] || die "the job lasts $((last - first)) ns: too short for windows"
    [ $((last - first)) -gt 10000000000 ] || die "the job lasts $((last - first)) ns: its plugins sent no definition again"
    # window FROM: its answers from both (every type and state, compact, a
    # page and the next, open ends), the rows the shards read for the first in $rows
    window() {
        local t0=$1 t1=$(($1 + width)) cur
        at=$(ch_shard_rows)
        same 200 "timeline?$j&t0_ns=$t0&t1_ns=$t1"
        rows=$(($(ch_shard_rows) - at))
        { ch_read_log shard0; ch_read_log shard1; } >"$dir/reads.$t0"
        events=$(from_lmdb lmdb.out "l[-1]['events']")
        [ "$events" -gt 100 ] || die "a window of few events: $(tail -1 "$dir/lmdb.out")"
        same 200 "timeline?$j&t0_ns=$t0&t1_ns=$t1&format=compact&states=1&rank=1"
        same 200 "timeline?$j&t0_ns=$t0&t1_ns=$t1&type=kernelch,proxyop&limit=200"
        cur=$(from_lmdb lmdb.out "l[-1]['next_cursor']")
        same 200 "timeline?$j&t0_ns=$t0&t1_ns=$t1&type=kernelch,proxyop&limit=200&cursor=$cur"
    }
    window $((first + 4 * width))
    early=$rows early_events=$events early_reads=$dir/reads.$((first + 4 * width))
    window $((first + 27 * width))
    late=$rows late_events=$events late_reads=$dir/reads.$((first + 27 * width))
    # rank 1 alone: the sections of its process (one of four), no other's
    at=$(ch_shard_rows)
    same 200 "timeline?$j&t0_ns=$((first + 27 * width))&t1_ns=$((first + 28 * width))&rank=1"
    one=$(($(ch_shard_rows) - at))
    [ "$one" -le $((late * 2 / 3)) ] || die "a window of rank 1 read $one rows of ClickHouse, of every rank $late"
    same 200 "timeline?$j&t0_ns=$((first + 30 * width))"
    same 200 "timeline?$j&t1_ns=$((first + width))&type=coll"
    [ "$(collector_metric ncclscope_collector_query_scoped_loads_total)" = $((compared - 1)) ] ||
        die "not every window read alone: $(collector_metric ncclscope_collector_query_scoped_loads_total) scoped loads, $compared answers"
    # a window with 27 thirty-seconds of the job before it reads about what
    # one with 4 does, a fraction of the whole job: the granules holding the
    # window (1,024 rows of events, 64 of the tables with a row per section)
    # and those at the edges of each process's and ctx's run (at 8,192 rows
    # a window read a fifth of the job); the denser window (a loaded
    # machine's emulator makes some stretches of the job denser) may read
    # more in proportion
    most=$((early_events > late_events ? early_events : late_events))
    [ $((late * early_events)) -le $((2 * early * most)) ] && [ $((early * late_events)) -le $((2 * late * most)) ] ||
        die "windows of one width read $early rows of ClickHouse for $early_events events and $late for $late_events; the reads up to the early one:
$(cat "$early_reads")
and up to the late one:
$(cat "$late_reads")"
    [ "$late" -le $((whole / 8)) ] || die "a 32nd of the job read $late rows of ClickHouse, the whole job $whole"
    echo "ch.sh ($mode): $compared answers identical; a 32nd of the job read $early rows for $early_events events and $late for $late_events (rank 1: $one rows)," \
         "the whole job $whole, comms $defs"
    stop collector
    stop collector_lmdb
    ! grep -q "was made without index_granularity" "$dir/collector.log" || die "a new database's granules were doubted"
    # an events table of ClickHouse's own granules (an older version's,
    # with its event_marks): the collector says so and serves it
    for n in shard0 shard1; do
        ch_sql $n "CREATE DATABASE nsc_coarse" || die "cannot make database nsc_coarse on $n"
        for t in events event_marks; do
            ddl=$(ch_sql $n "SHOW CREATE TABLE nsc.${t}_local FORMAT TSVRaw") || die "no $t table on $n"
            ddl=${ddl/nsc.${t}_local/nsc_coarse.${t}_local}
            [ $t = event_marks ] || ddl=${ddl/index_granularity = 1024/index_granularity = 8192}
            ch_sql $n "$ddl" || die "cannot make the coarse $t table on $n"
        done
    done
    start_collector 0 --store "clickhouse://127.0.0.1:${chhttp[front]}/nsc_coarse?cluster=nsc" --ch-shards "$shards" \
        --db "$dir/chdb-coarse"
    wait_until 30 grep -q "nsc_coarse.events_local on .* was made without index_granularity = 1024" "$dir/collector.log" ||
        die "a collector on a coarse events table did not say so"
    stop collector
    ;;
retain)
    start_collector 0 --store "$store" --ch-shards "$shards" --retain-age-s 3
    start_agent 0
    start_agent 1
    emulate --iters 10
    first=$job
    for n in 0 1; do wait_until 60 delivered $n || die "node $n did not deliver its spool"; done
    [ "$(one_value front "SELECT count() FROM nsc.events WHERE job = '$first'")" -gt 0 ] || die "the job was not stored"
    # a second job keeps being written while the first one ages
    job=$first-later
    emulate --iters 400 --pace-us 20000 &
    emu=$!
    rows_of() { one_value front "SELECT (SELECT count() FROM nsc.events WHERE job = '$1') + (SELECT count() FROM nsc.batches WHERE job = '$1') + (SELECT count() FROM nsc.states WHERE job = '$1') + (SELECT count() FROM nsc.contexts WHERE job = '$1') + (SELECT count() FROM nsc.jobs WHERE job = '$1') + (SELECT count() FROM nsc.ledger_marks WHERE job = '$1') + (SELECT count() FROM nsc.event_marks WHERE job = '$1')"; }
    wait_until 60 eval '[ "$(rows_of "$job")" -gt 0 ]' || die "the second job was not stored"
    wait_until 60 eval '[ "$(rows_of "$first")" = 0 ]' || die "the old job was not deleted: $(rows_of "$first") rows left"
    collector_metric_above ncclscope_collector_retained_jobs_total 0 || die "retention did not count the job"
    grep -q "retention: 1 job(s) not written for 3 s deleted: '$first'" "$dir/collector.log" || die "retention did not log the job"
    [ "$(rows_of "$job")" -gt 0 ] || die "the job being written was deleted too"
    wait $emu || die "emulator failed"
    for n in 0 1; do stop agent$n; done
    stop collector
    ;;
p2p_window)
    # a Send/Recv job: a collector keeping no job answers comms from the
    # job's definitions alone and a p2p window from its sections reaching
    # into it (no whole load), as LMDB does
    ch_lmdb_job --scenario p2p --iters 120 --pace-us 10000
    NCCLSCOPE_CH_QUERY_CACHE=0 start_collector 0 --store "$store" --ch-shards "$shards" --db "$dir/chdb"
    compared=0
    same 200 "comms?job=$job"
    cp "$dir/lmdb.out" "$dir/comms.json"
    j="job=$job&comm=$(from_lmdb comms.json "d['comms'][0]['comm']")"
    same 200 "p2p?$j"
    read_bytes() { collector_metric ncclscope_collector_query_read_bytes_total; }
    whole=$(read_bytes)
    [ "$(from_lmdb lmdb.out "d['sends']")" -ge 240 ] || die "too few Sends to compare: $(head -c 300 "$dir/lmdb.out")"
    same 200 "timeline?$j&type=p2p"
    cp "$dir/lmdb.out" "$dir/p2p.ndjson"
    starts="sorted(e['start_ns'] for e in l if e.get('kind') == 'event')"
    t0=$(from_lmdb p2p.ndjson "$starts[len($starts) // 2]")
    t1=$(from_lmdb p2p.ndjson "$starts[len($starts) * 3 // 4]")
    loads=$(collector_metric ncclscope_collector_query_scoped_loads_total) before=$(read_bytes)
    same 200 "p2p?$j&t0_ns=$t0"
    cp "$dir/lmdb.out" "$dir/p2p_late.json"
    late=$(($(read_bytes) - before))
    [ "$late" -lt $((whole * 3 / 4)) ] || die "a p2p window of the last half read $late bytes, the whole job $whole"
    same 200 "p2p?$j&t0_ns=$t0&t1_ns=$t1&settle_lag_ns=1000000"
    same 200 "p2p?$j&t1_ns=$t1"
    [ "$(collector_metric ncclscope_collector_query_scoped_loads_total)" = $((loads + 3)) ] ||
        die "not every p2p window was a scoped load: $(collector_metric ncclscope_collector_query_scoped_loads_total) after $loads"
    [ "$(from_lmdb p2p_late.json "d['sends']")" -gt 0 ] || die "the window holds no Send: $(head -c 300 "$dir/p2p_late.json")"
    same 200 "diagnose?job=$job"
    echo "ch.sh ($mode): $compared answers identical; the last half's p2p read $late bytes, the whole job's $whole"
    stop collector
    stop collector_lmdb
    ;;
secure)
    echo wrong >"$dir/wrong"
    refused "password" --ch-user nsc --ch-password-file "$dir/wrong" --ch-tls 1 --ch-ca-file "$ch_tls/server.crt"
    refused "certificate" --ch-user nsc --ch-password-file "$ch_tls/password" --ch-tls 1
    refused "ch_password_file needs ch_user" --ch-password-file "$ch_tls/password" --ch-tls 1
    export NCCLSCOPE_CH_USER=nsc NCCLSCOPE_CH_PASSWORD_FILE=$ch_tls/password NCCLSCOPE_CH_TLS=1 \
        NCCLSCOPE_CH_CA_FILE=$ch_tls/server.crt
    ;&
exact)
    if [ "$mode" = exact ]; then
        # a database whose states table has the layout of before (a row per
        # section, ids and times whole): the collector refuses it at start
        # and says why
        ch_sql shard0 "CREATE DATABASE nsc_old" && ch_sql shard0 "CREATE TABLE nsc_old.states_local (job String, host String, pid UInt32, id Array(UInt64), ts_ns Array(UInt64), arg Array(UInt64), tid Array(UInt32), state Array(UInt8), agent String, epoch UInt64, batch_seq UInt64, section UInt32) ENGINE = ReplacingMergeTree() PARTITION BY cityHash64(job) % 16 ORDER BY (job, host, pid, agent, epoch, batch_seq, section)" ||
            die "cannot make the old states table"
        store="clickhouse://127.0.0.1:${chhttp[front]}/nsc_old" refused "states_local on .* has the columns of another ncclscope version"
    fi
    start_collector 0 --store "$store" --ch-shards "$shards"
    start_agent 0
    start_agent 1
    emulate --iters 20
    # the live status is fed once a batch is committed, which in this mode
    # waits for ClickHouse's insert
    wait_until 20 status_has "[j for j in s['jobs'] if j['job'] == '$job']" || die "status does not list $job"
    # queries read ClickHouse (mode diff compares them with LMDB's), once
    # the rows are inserted
    wait_until 20 comms_name_job || die "comms in ClickHouse mode does not name $job"
    # ClickHouse is the one store: no LMDB store in the db directory, none
    # of its lines in /metrics (the query cache's are there)
    [ ! -e "$dir/db/data.mdb" ] || die "an LMDB store was opened in $dir/db"
    [ -n "$(collector_metric ncclscope_collector_query_loads_total)" ] || die "/metrics lacks the query cache's lines"
    [ -z "$(collector_metric ncclscope_collector_store_map_bytes)" ] || die "/metrics reports an LMDB store"
    finish_ch
    ;;
collector_kill)
    paced_job
    kill9 collector
    start_collector "$port" --store "$store" --ch-shards "$shards"
    wait $emu || die "emulator failed"
    for n in 0 1; do
        wait_until 30 metric_above $n ncclscope_agent_collector_connects_total 1 || die "node $n did not reconnect"
    done
    finish_ch
    ;;
ch_kill)
    paced_job
    kill9 ch_shard1
    wait_until 30 collector_metric_above ncclscope_collector_commit_failures_total 0 ||
        die "no insert failed while shard1 was down"
    ch_start shard1
    wait $emu || die "emulator failed"
    finish_ch
    ;;
two_collectors)
    two_collectors_job
    collector_metric_above ncclscope_collector_batches_in_total 0 || die "collector b took no batch"
    http=$http_a collector_metric_above ncclscope_collector_batches_in_total 0 || die "collector a took no batch"
    stop collector_a
    finish_ch
    ;;
replay)
    # no background merge may fold the two copies before they are counted
    stop_merges
    ch_unacked_job -- --iters 20
    [ "$(one_value front "SELECT count() FROM nsc.events WHERE job = '$job'")" = "$emitted" ] ||
        die "the stopping collector did not insert the job"
    kill9 agent0
    kill9 agent1
    start_collector 0 --store "$store" --ch-shards "$shards"
    start_agent 0
    start_agent 1
    finish_ch
    [ "$(one_value front "SELECT count() FROM nsc.events WHERE job = '$job'")" = $((2 * emitted)) ] ||
        die "the agents did not send the job again"
    ;;
live_same)
    # a dead collector's snapshot leaves the answers after 4 s (agents
    # probe every second: they stay alive)
    export NCCLSCOPE_ROOTCAUSE_INTERVAL_MS=500 NCCLSCOPE_HEARTBEAT_TIMEOUT_MS=4000
    two_collectors_job
    live_agree "$http_a" "$http" || die "collectors a and b answer differently: $(cat "$dir/live_same.err")"
    live_whole || die "b's status does not hold the whole job: $(head -c 600 "$dir/status.json")"
    http=$http_a live_whole || die "a's status does not hold the whole job: $(head -c 600 "$dir/status.json")"
    # the root-cause metrics diagnose the job's events read from ClickHouse:
    # on both collectors they count what hosts counts, the late rank's host
    # among them
    for h in "$http_a" "$http"; do
        http=$h wait_until 30 rc_metrics_late ||
            die "root-cause metrics of the collector on $h: $(cat "$dir/rc.err"); its diagnose:" \
                "$(curl -s -m 60 "http://127.0.0.1:$h/api/v1/diagnose?job=$job" | head -c 1500)"
    done
    # a snapshot that does not decode: left out and counted, nothing else lost
    ch_sql shard0 "INSERT INTO nsc.live_local VALUES ('garbage', toUInt64(now()) * 1000000000, 'these bytes are not a live snapshot')" ||
        die "cannot insert the garbage row"
    for h in "$http_a" "$http"; do
        http=$h wait_until 30 collector_metric_above ncclscope_collector_live_snapshots_rejected_total 0 ||
            die "collector on $h did not count the garbage snapshot"
        http=$h collector_metric_is ncclscope_collector_live_peers 1 || die "collector on $h lost its peer"
    done
    grep -q "snapshot of garbage left out: not a live snapshot" "$dir/collector.log" || die "the garbage row was not logged"
    live_agree "$http_a" "$http" || die "a and b differ beside a garbage row: $(cat "$dir/live_same.err")"
    live_whole || die "b lost the job beside a garbage row"
    # a dies: b and a new collector c (no agent) still answer alike
    kill9 collector_a
    live_agree_new
    # once a's snapshot is older than the heartbeat timeout b leaves it out,
    # and with it node 0's processes and ranks, which only a had taken
    wait_until 30 eval '! job_whole' || die "b kept a's snapshot past the heartbeat timeout"
    # a started again as collector a reads its last snapshot back before
    # its first write: a and b hold the whole job again, and agree
    b_pid=${pids[collector]} b_http=$http
    unset "pids[collector]"
    start_collector 0 --store "$store" --ch-shards "$shards" --collector-id a
    pids[collector_a]=${pids[collector]} http_a=$http
    pids[collector]=$b_pid http=$b_http
    # (the live-state thread reads it back after the collector is up)
    wait_until 30 grep -q "collector 'a' resumed from its snapshot of" "$dir/collector.log" ||
        die "a did not resume from its snapshot"
    http=$http_a wait_until 30 job_whole || die "a restarted lost its part of the job: $(head -c 600 "$dir/status.json")"
    wait_until 30 job_whole || die "b does not see a's part again: $(head -c 600 "$dir/status.json")"
    live_agree "$http_a" "$http" || die "a restarted and b answer differently: $(cat "$dir/live_same.err")"
    stop collector_a
    finish_ch
    ;;
failover)
    failover_job
    kill9 collector_a
    failed_over
    # the agents and processes are in a's last snapshot and in b's state:
    # b and a new collector c (no agent) answer alike
    live_agree_new
    finish_ch
    ;;
failover_stop)
    stop_merges
    failover_job
    kill -STOP "${pids[collector_a]}"
    failed_over
    kill -CONT "${pids[collector_a]}"
    stop collector_a
    finish_ch
    [ "$(one_value front "SELECT count() FROM nsc.events WHERE job = '$job'")" -gt \
      "$(one_value front "SELECT count() FROM nsc.events FINAL WHERE job = '$job'")" ] ||
        die "no batch reached ClickHouse through both collectors"
    ;;
verdict_one)
    export NCCLSCOPE_HANG_MS=1000
    hook_receiver
    two_collectors
    hang_job 3
    # a learns what b's share knows of rank 3's process (alive) from b's
    # live snapshot a live interval later: until then its evidence differs
    one_verdict() {
        hang_verdict "$http_a" 3 3 && hang_verdict "$http" 3 3 && [ "$(verdict_of "$http_a")" = "$(verdict_of "$http")" ]
    }
    wait_until 60 one_verdict || die "not one verdict at rank 3: a: $(head -c 1500 "$dir/verdict_$http_a.json")
 b: $(head -c 1500 "$dir/verdict_$http.json")"
    # one of them posts it to the webhook, once, however many passes follow
    wait_until 30 hook_has missing 3 || die "the verdict was not posted: $(cat "$dir/hook.log" 2>/dev/null)"
    passes_a=$(http=$http_a collector_metric ncclscope_collector_rootcause_passes_total)
    passes_b=$(collector_metric ncclscope_collector_rootcause_passes_total)
    more_passes() {
        [ "$(http=$http_a collector_metric ncclscope_collector_rootcause_passes_total)" -ge $((passes_a + 10)) ] &&
            [ "$(collector_metric ncclscope_collector_rootcause_passes_total)" -ge $((passes_b + 10)) ]
    } 2>/dev/null
    wait_until 30 more_passes || die "the collectors ran no more passes"
    hook_has missing 3 once || die "the webhook's verdicts: $(cat "$dir/hook.log")"
    hang_end
    ;;
verdict_kill)
    export NCCLSCOPE_HANG_MS=1000
    hook_receiver
    start_collector 0 --store "$store" --ch-shards "$shards" --collector-id a "${hook_args[@]}"
    pids[collector_a]=${pids[collector]} port_a=$port http_a=$http
    unset "pids[collector]"
    start_collector 0 --store "$store" --ch-shards "$shards" --collector-id b "${hook_args[@]}"
    run_agent 0 --host-name node0 --collector "tcp://127.0.0.1:$port_a, tcp://127.0.0.1:$port" \
        --reconnect-ms 20 --reconnect-max-ms 200 --failover-ms 1000 --probe-ms 200
    run_agent 1 --host-name node1 --collector "tcp://127.0.0.1:$port, tcp://127.0.0.1:$port_a" \
        --reconnect-ms 20 --reconnect-max-ms 200 --failover-ms 1000 --probe-ms 200
    hang_job 1
    # the verdict is being formed: a holds the hung rank's share, the
    # others are in collective 3 (its missing rank), hang_ms not yet passed
    wait_until 30 metric_above 0 ncclscope_agent_forward_batches_acked_total 0 || die "a acknowledged nothing of node 0"
    wait_until 30 eval 'curl -sf -m 5 "http://127.0.0.1:$http_a/api/v1/diagnose?job=$job" | grep -q "\"seq\":3,"' ||
        die "collector a never saw collective 3"
    kill9 collector_a
    wait_until 60 hang_verdict "$http" 1 3 || die "b: no hang verdict at rank 1: $(head -c 1500 "$dir/verdict_$http.json")"
    # b posts it: a announced none, and b takes a's jobs once a's snapshot is stale
    wait_until 30 hook_has missing 1 || die "b did not post the verdict: $(cat "$dir/hook.log" 2>/dev/null)"
    hang_end
    # nor one that diagnose replaced: a view without rank 0's record in
    # collective 3 (a's rows not inserted, or sent to b again) has rank 0 missing too
    hook_only missing 1 || die "a verdict diagnose replaced was posted: $(cat "$dir/hook.log")"
    ;;
current)
    # every request the collector makes of the 18.16 cluster, through a
    # recording proxy in front of each server
    python3 "$(dirname "$0")/record.py" --upstream "http://127.0.0.1:${chhttp[front]}" \
        --upstream "http://127.0.0.1:${chhttp[shard0]}" --upstream "http://127.0.0.1:${chhttp[shard1]}" \
        --dir "$dir/record" --port-file "$dir/record.port" 2>"$dir/record.log" &
    pids[record]=$!
    wait_until 30 test -s "$dir/record.port" || die "the recording proxy did not start: $(cat "$dir/record.log")"
    mapfile -t via <"$dir/record.port"
    store="clickhouse://127.0.0.1:${via[0]}/nsc?cluster=nsc" shards="127.0.0.1:${via[1]},127.0.0.1:${via[2]}"
    start_collector 0 --store "$store" --ch-shards "$shards"
    start_agent 0
    start_agent 1
    emulate --iters 24 --slow-rank 1 --slow-us 5000
    for n in 0 1; do wait_until 60 delivered $n || die "node $n did not deliver its spool"; done
    for n in 0 1; do stop agent$n; done
    comm=$(curl -sf -m 60 "http://127.0.0.1:$http/api/v1/comms?job=$job" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])') || die "no comms answer"
    for q in "timeline?job=$job&comm=$comm" "timeline?job=$job&comm=$comm&format=compact&states=1" \
             "collectives?job=$job&comm=$comm" "stats?job=$job&comm=$comm" "p2p?job=$job&comm=$comm" \
             "topology?job=$job&comm=$comm" "diagnose?job=$job" "links?job=$job" "status" "hosts"; do
        [ "$(curl -s -m 120 -o "$dir/answer" -w '%{http_code}' "http://127.0.0.1:$http/api/v1/$q")" = 200 ] ||
            die "$q: $(head -c 300 "$dir/answer")"
    done
    # started again (its clock models and live state read back), with
    # retention: the job, not written for a second, is deleted
    stop collector
    start_collector 0 --store "$store" --ch-shards "$shards" --retain-age-s 1
    wait_until 60 collector_metric_above ncclscope_collector_retained_jobs_total 0 || die "retention did not delete the job"
    stop collector
    stop record
    "$bin/nsc-ch-replay" --cluster nsc "$chdb" "$dir/record" "$dir/chdb" >"$dir/replay.out" 2>&1 ||
        die "a current ClickHouse answers the collector otherwise: $(head -c 3000 "$dir/replay.out")"
    echo "ch.sh ($mode): $(tail -n 1 "$dir/replay.out")"
    ;;
*)
    die "unknown mode $mode"
    ;;
esac
