#!/bin/bash
# detail_query.sh: fetch before query (issue 30, detail on demand, the
# collector side). A collector with detail = on-demand and two agents in
# that mode: a ring job's ledger arrives and no raw event; the first page
# of a timeline then fetches the job's window from both agents before it
# answers, so it has the job's collectives, every raw event the agents took
# in is stored once, and its header says the detail is complete. A window
# older than the rings answers with what is held: the header says, agent by
# agent, which window each ring still holds, and so does the CLI on stderr.
# An export fetches too, and says what it got in its X-Ncclscope-Detail
# header. An agent that does not answer (stopped) is named after
# detail_wait_ms, and the timeline has what is held.
# ui: the web timeline of a window older than the rings says, agent by
# agent, what each ring holds (headless Chromium, tests/ui/browser.py).
# busy: the timeline is asked again and again while nsc-feed, as four more
# on-demand agents, sends the collector ledger at full rate: every fetch
# comes back complete, every batch of the feed is acknowledged (acks flow),
# and the ledger records and events stored are exactly those sent (none
# lost, none twice); the fetches go to the job's agents only.
# verdict: a job hangs while the root-cause pass looks every 300 ms: the
# verdicts (a rank missing, lagging, late) ask the job's two agents for
# their window on their own (no query asks), and both answer.
#
#   detail_query.sh BIN_DIR PLUGIN [busy|verdict|ui]
set -euo pipefail
bin=$1 plugin=$2 mode=${3:-}
nodes=2 scenario=ring
. "$(dirname "$0")/lib.sh"

# a fetch the test waits for is never cut short by detail_wait_ms
if [ "$mode" = verdict ]; then
    # verdicts form from raw events today (the live state and diagnose do not
    # read the ledger yet), so the agents send them all and answer the
    # verdicts' fetches with nothing
    start_collector 0 --detail on-demand --rootcause-interval-ms 300 --detail-span-ms 300 --hang-ms 1000
    for n in 0 1; do start_agent $n; done
else
    # busy: 60 s; else 20 s, which the agent stopped below makes the test wait
    start_collector 0 --detail on-demand --detail-wait-ms $([ "$mode" = busy ] && echo 60000 || echo 20000)
    for n in 0 1; do start_agent $n --detail on-demand --ack-timeout-ms 2000; done
fi
api="http://127.0.0.1:$http/api/v1"
asked=0
# timeline [QUERY]: the timeline of the job's communicator (QUERY appended;
# default: all of it) in $dir/timeline
timeline() {
    asked=$((asked + 1))
    curl -sf -m 120 "$api/timeline?job=$job&comm=$comm${1:-&limit=1000000}" > "$dir/timeline" || die "timeline${1:-}"
}
# detail_is PYTHON-EXPRESSION: true of the timeline header's "detail" (as d).
detail_is() {
    python3 - "$dir/timeline" "$1" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).readline())["detail"]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
if [ "$mode" = verdict ]; then
    NCCLSCOPE_JOB=$job "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --scenario hang --nodes 2 \
        --ranks-per-node 2 --iters 100000 --pace-us 2000 --hang-rank 3 --hang-after 20 --hang-ms 60000 \
        >"$dir/emu.log" 2>&1 &
    emu=$!
    answered() { metric_above 0 ncclscope_agent_detail_fetches_answered_total 0 &&
                 metric_above 1 ncclscope_agent_detail_fetches_answered_total 0; }
    wait_until 60 answered || die "no verdict's fetch was answered by both agents: $(collector_metric ncclscope_collector_detail_verdicts_total) verdicts, $(collector_metric ncclscope_collector_detail_fetches_total) fetches sent"
    kill $emu
    wait $emu || true
    collector_metric_above ncclscope_collector_detail_verdicts_total 0 || die "no verdict counted"
    collector_metric_above ncclscope_collector_detail_verdict_fetches_total 0 || die "no verdict fetch counted"
    collector_metric_is ncclscope_collector_detail_query_fetches_total 0 || die "a query fetched"
    collector_metric_is ncclscope_collector_detail_verdict_fetch_failures_total 0 || die "a verdict's fetch failed"
    echo "detail_query.sh verdict: $(collector_metric ncclscope_collector_detail_verdicts_total) verdicts," \
        "$(collector_metric ncclscope_collector_detail_verdict_fetches_total) fetches"
    exit 0
fi
emulate --iters 20
settle_nodes
wait_until 10 collector_metric_is ncclscope_collector_ledger_records_stored_total "$ledger" ||
    die "the ledger did not arrive"
collector_metric_is ncclscope_collector_events_in_total 0 || die "raw events reached the collector before a query asked"
comm=$(curl -sf "$api/comms?job=$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
stored=$events
if [ "$mode" = ui ]; then
    # the web timeline of a window older than the rings, in Chromium
    python3 "$(dirname "$0")/../ui/browser.py" "$dir/ui" \
        "old=http://127.0.0.1:$http/ui/timeline.html?job=$job&comm=$comm&t0_ns=1000000000&t1_ns=2000000000" ||
        die "the timeline page failed in Chromium: $(cat "$dir/ui/"*.console 2>/dev/null)"
    [ "$(grep -o 'missing: older than the ring; its ring holds 20[0-9T:.Z-]* to 20[0-9T:.Z-]*' "$dir/ui/old.html" |
         wc -l)" = 2 ] || die "the web timeline does not say what each ring holds: $(grep -o '<p id="detail".*</p>' "$dir/ui/old.html")"
    echo "detail_query.sh ui: the web timeline says what each ring holds"
    exit 0
fi
if [ "$mode" = busy ]; then
    # 4 agents x 8 processes x 400 batches, 256 ledger records per process and batch
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 4 --procs 8 --batches 400 --colls 1 --ledger 256 \
        --timeout-ms 300000 > "$dir/feed" 2>&1 &
    feed=$!
    during=0
    while kill -0 $feed 2>/dev/null; do
        timeline "&limit=10"
        detail_is 'd["complete"]' || die "a fetch while the feed ran: $(head -1 "$dir/timeline")"
        ! kill -0 $feed 2>/dev/null || during=$((during + 1))
    done
    wait $feed || die "nsc-feed: not every batch was acknowledged: $(cat "$dir/feed")"
    [ "$during" -gt 0 ] || die "no timeline answered while the feed ran"
    ledger=$((ledger + 4 * 8 * 400 * 256))
    stored=$((events + $(awk -F= '/^events=/{print $2}' "$dir/feed")))
    wait_until 10 collector_metric_is ncclscope_collector_queue_depth 0 || die "the writer did not drain"
    collector_metric_is ncclscope_collector_ledger_records_stored_total "$ledger" ||
        die "$(collector_metric ncclscope_collector_ledger_records_stored_total) ledger records stored, $ledger sent"
    echo "detail_query.sh busy: $during timelines answered while the feed ran"
fi
# the whole job's window: everything comes before the answer
timeline
detail_is 'd["complete"] and d["missing"] == []' || die "detail not complete: $(head -1 "$dir/timeline")"
grep -q '"type":"Coll"' "$dir/timeline" || die "the timeline has no Coll: the detail was not fetched first"
collector_metric_is ncclscope_collector_events_in_total "$stored" ||
    die "$(collector_metric ncclscope_collector_events_in_total) events stored when the timeline answered, $stored sent"
collector_metric_is ncclscope_collector_detail_query_fetches_total "$asked" || die "a timeline did not fetch"
collector_metric_is ncclscope_collector_detail_query_incomplete_total 0 || die "a fetch came back incomplete"
collector_metric_is ncclscope_collector_detail_fetches_total "$((2 * asked))" ||
    die "$(collector_metric ncclscope_collector_detail_fetches_total) fetches sent for $asked timelines: not to the job's 2 agents only"
collector_metric_is ncclscope_collector_ledger_records_stored_total "$ledger" || die "ledger records stored twice"
# a window older than the rings (the collector's clock, 1 s .. 2 s after
# its host booted): what each ring still holds is said
timeline "&t0_ns=1000000000&t1_ns=2000000000"
detail_is 'not d["complete"] and len(d["missing"]) == 2 and all(m["reason"] == "older than the ring" and
           2000000000 < m["held_from_ns"] <= m["held_to_ns"] for m in d["missing"])' ||
    die "a window older than the rings: $(head -1 "$dir/timeline")"
"$bin/ncclscope" --collector "http://127.0.0.1:$http" timeline --job "$job" --comm "$comm" --t0 1000000000 \
    --t1 2000000000 > "$dir/cli.out" 2> "$dir/cli.err" || die "ncclscope timeline: $(cat "$dir/cli.err")"
[ "$(grep -c 'missing: older than the ring; its ring holds' "$dir/cli.err")" = 2 ] ||
    die "the CLI did not say what is held: $(cat "$dir/cli.err")"
collector_metric_is ncclscope_collector_events_in_total "$stored" || die "a window fetched again was stored twice"
# export fetches too and says so in its header (its trace has no room)
curl -sf -D "$dir/export.head" -o "$dir/export.json" "$api/export?job=$job&comm=$comm&format=chrome" || die "export"
grep -qi '^X-Ncclscope-Detail: {"fetch":[0-9]*,"missing":\[\],"complete":true}' "$dir/export.head" ||
    die "export's detail header: $(cat "$dir/export.head")"
grep -q '"AllReduce' "$dir/export.json" || die "the export has no collective"
collector_metric_is ncclscope_collector_detail_query_fetches_total "$((asked + 2))" || die "the export did not fetch"
[ "$mode" = busy ] && exit 0
# an agent that does not answer: after detail_wait_ms the timeline answers
# with what is held and names it
incomplete=$(collector_metric ncclscope_collector_detail_query_incomplete_total)
kill -STOP "${pids[agent1]}"
timeline
kill -CONT "${pids[agent1]}"
detail_is 'not d["complete"] and [(m["agent"], m["reason"]) for m in d["missing"]] == [("node1", "no answer")]' ||
    die "an agent that did not answer: $(head -1 "$dir/timeline")"
grep -q '"type":"Coll"' "$dir/timeline" || die "the timeline without node1's answer has no Coll"
collector_metric_is ncclscope_collector_detail_query_incomplete_total $((incomplete + 1)) || die "the fetch without an answer is not counted"
echo "detail_query.sh: $events events fetched before the timeline answered"
