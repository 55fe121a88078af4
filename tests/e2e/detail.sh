#!/bin/bash
# detail.sh: detail on demand (issue 30) from the emulator to the collector's
# store. A ring job goes through the real plugin and two agents with
# detail = on-demand into the collector: the ledger arrives and no raw event;
# GET /api/v1/detail asks both agents for the job's window, and every raw
# event the agents received is then stored (events counted by the collector
# = events the agents took in), and the timeline has them; the same window
# fetched again is answered by both agents and stored once (nothing new).
#
#   detail.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=2 scenario=ring
. "$(dirname "$0")/lib.sh"

start_collector 0
for n in 0 1; do start_agent $n --detail on-demand; done
emulate --iters 20
events=0
settled() { metric_is "$1" ncclscope_agent_ledger_open 0 && delivered "$1"; }
for n in 0 1; do
    wait_until 20 settled $n || die "node $n did not deliver its spool and ledger"
    events=$((events + $(metric $n ncclscope_agent_events_in_total)))
done
[ "$events" -gt 0 ] || die "the agents took in no event"
wait_until 10 collector_metric_is ncclscope_collector_ledger_records_stored_total \
    "$(( $(metric 0 ncclscope_agent_ledger_spooled_total) + $(metric 1 ncclscope_agent_ledger_spooled_total) ))" ||
    die "the ledger did not arrive"
collector_metric_is ncclscope_collector_events_in_total 0 || die "raw events reached the collector without a fetch"
api="http://127.0.0.1:$http/api/v1"
# fetch WANT: ask for the job's whole window; both agents answer it, WANT times in all.
fetch() {
    curl -sf "$api/detail?job=$job" | grep -q '"fetch":' || die "GET /api/v1/detail"
    for n in 0 1; do wait_metric $n ncclscope_agent_detail_fetches_answered_total "$1"; done
}
fetch 1
wait_collector_metric ncclscope_collector_events_in_total "$events"
stored=$(collector_metric ncclscope_collector_detail_batches_stored_total)
[ "$stored" -gt 0 ] || die "no detail batch stored"
comm=$(curl -sf "$api/comms?job=$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
curl -sf "$api/timeline?job=$job&comm=$comm&limit=1000000" > "$dir/timeline" || die "timeline"
grep -q '"type":"Coll"' "$dir/timeline" || die "the timeline has no fetched Coll"
fetch 2
wait_collector_metric ncclscope_collector_detail_chunks_total \
    "$(( $(metric 0 ncclscope_agent_detail_chunks_total) + $(metric 1 ncclscope_agent_detail_chunks_total) ))"
wait_until 10 collector_metric_is ncclscope_collector_queue_depth 0 || die "the writer did not drain"
collector_metric_is ncclscope_collector_events_in_total "$events" ||
    die "fetched twice: $(collector_metric ncclscope_collector_events_in_total) events stored, $events taken in"
collector_metric_is ncclscope_collector_detail_batches_stored_total "$stored" || die "a window fetched twice was stored twice"
curl -s "$api/detail" > "$dir/refused"
grep -q '"error"' "$dir/refused" || die "a fetch without a job was not refused"
echo "detail.sh: $events events fetched in $stored batches, stored once"
