#!/bin/bash
# detail.sh: detail on demand (issue 30) from the emulator to the collector's
# store. A ring job goes through the real plugin and two agents with
# detail = on-demand into the collector: the ledger arrives and no raw event;
# GET /api/v1/detail asks both agents for the job's window, and every raw
# event the agents received is then stored (events counted by the collector
# = events the agents took in), and the timeline has them; the same window
# fetched again is answered by both agents and stored once (nothing new).
# A window older than the rings brings nothing, and each agent's held
# window is in the next answer. Malformed chunks are counted, not stored.
# busy: the job runs paced while the whole window is fetched again and
# again: ingest is not held up (no raw record lost, no batch waits for its
# ack past the timeout, every batch delivered), and at the end the fetched
# events are all the agents took in, each stored once.
#
#   detail.sh BIN_DIR PLUGIN [busy]
set -euo pipefail
bin=$1 plugin=$2 mode=${3:-}
nodes=2 scenario=ring
. "$(dirname "$0")/lib.sh"

start_collector 0
for n in 0 1; do start_agent $n --detail on-demand --ack-timeout-ms 2000; done
api="http://127.0.0.1:$http/api/v1"
asked=0
# fetch [WINDOW]: ask for the job's window (default: all); both agents answer it.
fetch() {
    asked=$((asked + 1))
    curl -sf "$api/detail?job=$job${1:-}" > "$dir/fetch" || die "GET /api/v1/detail"
    grep -q '"fetch":' "$dir/fetch" || die "GET /api/v1/detail: $(cat "$dir/fetch")"
    for n in 0 1; do wait_metric $n ncclscope_agent_detail_fetches_answered_total "$asked"; done
}
if [ "$mode" = busy ]; then
    NCCLSCOPE_JOB=$job "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --scenario ring --nodes 2 \
        --ranks-per-node 2 --iters 300 --pace-us 5000 --summary "$dir/emu.json" >"$dir/emu.log" 2>&1 &
    emu=$!
    wait_until 20 metric_above 0 ncclscope_agent_ledger_spooled_total 0 || die "the job did not start"
    while kill -0 $emu 2>/dev/null; do fetch; done
    wait $emu || die "emulator failed"
    for n in 0 1; do
        [ "$(metric $n ncclscope_agent_detail_lost_records_total)" = 0 ] || die "node $n: raw records lost"
        [ "$(metric $n 'ncclscope_agent_forward_rewinds_total{reason="timeout"}')" = 0 ] ||
            die "node $n: a batch waited for its ack past the timeout"
    done
    echo "detail.sh busy: $asked fetches while the job ran"
else
    emulate --iters 20
fi
settle_nodes
wait_until 10 collector_metric_is ncclscope_collector_ledger_records_stored_total "$ledger" ||
    die "the ledger did not arrive"
if [ "$mode" != busy ]; then
    collector_metric_is ncclscope_collector_events_in_total 0 || die "raw events reached the collector without a fetch"
    # a window older than the rings: nothing comes, and the answer after
    # says what each ring holds
    fetch "&from_ns=0&to_ns=1"
    collector_metric_is ncclscope_collector_detail_pieces_total 0 || die "a window older than the rings brought detail"
    fetch
    python3 - "$dir/fetch" <<'PY' || die "the held windows: $(cat "$dir/fetch")"
import json, sys
held = json.load(open(sys.argv[1]))["held"]
sys.exit(0 if len(held) == 2 and all(1 < h["from_ns"] <= h["to_ns"] for h in held) else 1)
PY
else
    fetch
fi
wait_collector_metric ncclscope_collector_events_in_total "$events"
stored=$(collector_metric ncclscope_collector_detail_batches_stored_total)
[ "$stored" -gt 0 ] || die "no detail batch stored"
comm=$(curl -sf "$api/comms?job=$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
curl -sf "$api/timeline?job=$job&comm=$comm&limit=1000000" > "$dir/timeline" || die "timeline"
grep -q '"type":"Coll"' "$dir/timeline" || die "the timeline has no fetched Coll"
fetch
wait_collector_metric ncclscope_collector_detail_chunks_total \
    "$(( $(metric 0 ncclscope_agent_detail_chunks_total) + $(metric 1 ncclscope_agent_detail_chunks_total) ))"
wait_until 10 collector_metric_is ncclscope_collector_queue_depth 0 || die "the writer did not drain"
collector_metric_is ncclscope_collector_events_in_total "$events" ||
    die "fetched twice: $(collector_metric ncclscope_collector_events_in_total) events stored, $events taken in"
collector_metric_is ncclscope_collector_detail_batches_stored_total "$stored" || die "a window fetched twice was stored twice"
curl -s "$api/detail" > "$dir/refused"
grep -q '"error"' "$dir/refused" || die "a fetch without a job was not refused"
# chunks nobody asked for, one cut short, one with a piece that is no batch: counted, nothing stored
"$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --hostile detail --timeout-ms 100 > "$dir/hostile" ||
    die "nsc-feed --hostile detail: $(cat "$dir/hostile")"
wait_collector_metric ncclscope_collector_detail_bad_total 2
collector_metric_is ncclscope_collector_events_in_total "$events" || die "a bad chunk stored events"
echo "detail.sh: $events events fetched in $stored batches, stored once"
