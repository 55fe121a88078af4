#!/bin/bash
# faults.sh: the fault suite (docs/faults.md): the full pipeline with real
# processes on loopback (ncclscope-emu with the real plugin -> one
# ncclscope-agent per simulated node -> ncclscope-collector) under one fault
# each. Every case asserts that nothing acknowledged is lost and nothing is
# stored twice (nsc-e2e-store-check against the emulator's summary), that
# every loss is counted (emitted = stored + counted), and that every
# component still serves its HTTP endpoints.
#
#   faults.sh BIN_DIR PLUGIN MODE
#
# collector_stop: the collector is SIGSTOPped for 60 s while a paced job runs:
#                 in flight stays bounded, the agents' spools grow, the job
#                 keeps its pace; after SIGCONT everything is delivered.
# slow_collector: the collector runs 5% of the time (SIGSTOP/SIGCONT duty
#                 cycle) while the agents have a 1 MiB spool: the spool refuses
#                 and counts events; emitted = stored + refused.
# map_full:       the collector's LMDB map starts at 1 MiB and may grow to
#                 2 MiB: it grows, then commits fail; nothing is acknowledged,
#                 failures are counted and logged, queries are answered, the
#                 agents keep the batches; restarted with a larger map,
#                 everything is delivered.
# agent_late:     the agents start while the job runs, the plugins' buffers
#                 are too small to hold what it emits meanwhile: they drop;
#                 emitted = stored + the drops the plugins counted (which
#                 reach the collector's status), by type.
# ranks1000:      1000 ranks, one process each, on one node and one agent,
#                 a 10 s flush budget: every process registered once, the
#                 store exact.
# comms100:       every rank inits 100 communicators: /api/v1/comms lists
#                 100, each one's collectives are matched across its ranks.
# poisoned_spool: a job spooled with no collector; then one byte of two of
#                 node 0's spooled batches is changed in the spool file, one
#                 in the framing and one inside a value (spool_flip.py):
#                 the agent moves both to its quarantine, logs each once by
#                 seq, counts them, delivers the rest and sends neither
#                 again; the collector stores no corrupt value (emitted =
#                 stored + quarantined + dropped).
# agent_kills:    2 nodes x 4 ranks, a paced ring job at full event mask; the
#                 node agents are killed -9 ($kills times in all, each once it
#                 has taken batches again) and restarted while the job runs:
#                 what a killed agent held is sent again to its successor or
#                 counted by the plugins; emitted = stored + counted, by type,
#                 nothing twice.
# agent_kills_pxn: the same with the PXN scenario: the foreign events an
#                 agent held when it was killed, and what it knew of their
#                 origins, are its successor's (the spool keeps them): every
#                 foreign event is stored re-attached, none lost.
# agent_unheard:  the agents are killed -9 mid-job and restarted after it
#                 ended: the stream marks of the processes that ended while
#                 no agent ran are deleted linger_ms after the start.
set -euo pipefail
bin=$1 plugin=$2 mode=$3
case $mode in ranks1000 | comms100) nodes=1 ;; esac
. "$(dirname "$0")/lib.sh"

# serving: the collector and every agent answer /healthz and /metrics, the
# collector /api/v1/status too.
serving() {
    local n
    curl -sf -m 5 "http://127.0.0.1:$http/healthz" >/dev/null || die "collector: no /healthz"
    curl -sf -m 5 "http://127.0.0.1:$http/metrics" >/dev/null || die "collector: no /metrics"
    curl -sf -m 5 "http://127.0.0.1:$http/api/v1/status" >/dev/null || die "collector: no /api/v1/status"
    for n in $(seq 0 $((nodes - 1))); do
        curl -sf -m 5 "http://$(cat "$dir/node$n/agent.http")/healthz" >/dev/null || die "agent $n: no /healthz"
        metric $n ncclscope_agent_uptime_seconds >/dev/null || die "agent $n: no /metrics"
    done
}
agents_serving() {
    local n
    for n in $(seq 0 $((nodes - 1))); do
        curl -sf -m 5 "http://$(cat "$dir/node$n/agent.http")/healthz" >/dev/null || die "agent $n: no /healthz"
    done
}
# issued_at_least K: the emulator's rank 0 has issued K iterations.
issued_at_least() { [ "$(cat "$dir/progress" 2>/dev/null || echo 0)" -ge "$1" ]; }
# sum_metric NAME: NAME summed over the agents.
sum_metric() {
    local n s=0
    for n in $(seq 0 $((nodes - 1))); do s=$((s + $(metric $n "$1"))); done
    echo $s
}
# plugin_lost: sets dropped (the events the plugins counted as dropped, from
# the collector's status; states dropped are not events), nulls, and lost (the
# store check's argument for them). The plugins count a drop per event
# started: one refused at its start (a NULL handle, never stopped: the
# emulator's null_handles) is not among the emulator's stop calls, one dropped
# later is; so the store holds the stop calls less (dropped - nulls). Without
# NULL handles the drops are exact by type (--lost-by-type).
plugin_lost() {
    wait_until 10 status_has "[j for j in s['jobs'] if j['job'] == '$job']" || die "job not in status"
    read -r dropped nulls by_type < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); e=json.load(open(sys.argv[3]))
j = [j for j in s["jobs"] if j["job"] == sys.argv[2]][0]
print(j["events_dropped"], sum(r["null_handles"] for r in e["ranks"]),
      ",".join("%s=%d" % kv for kv in j["events_dropped_by_type"].items()) or "-")' \
        "$dir/status.json" "$job" "$dir/emu.json")
    [ "$nulls" -le "$dropped" ] || die "$nulls events refused at their start, only $dropped drops counted"
    if [ "$nulls" = 0 ]; then lost=(--lost-by-type "${by_type#-}"); else lost=(--lost $((dropped - nulls))); fi
}

case $mode in
collector_stop)
    start_all
    # 64 s of paced collectives: every 400 ms one iteration
    iters=160 pace_us=400000
    t0=$(date +%s)
    emulate --iters $iters --pace-us $pace_us &
    emu=$!
    wait_until 20 metric_above 0 ncclscope_agent_forward_batches_acked_total 0 || die "nothing acknowledged"
    kill -STOP "${pids[collector]}"
    before=$(sum_metric ncclscope_agent_spool_entries)
    max_inflight=0
    for _ in $(seq 6); do  # 60 s stopped, looked at every 10 s
        sleep 10
        agents_serving
        for n in 0 1; do
            f=$(metric $n ncclscope_agent_forward_inflight)
            [ "$f" -le 32 ] || die "node $n: $f batches in flight (max_inflight is 32)"
            [ "$f" -gt "$max_inflight" ] && max_inflight=$f
        done
    done
    during=$(sum_metric ncclscope_agent_spool_entries)
    [ "$during" -gt "$before" ] || die "the spools did not grow while the collector was stopped ($before -> $during)"
    kill -CONT "${pids[collector]}"
    wait $emu || die "emulator failed"
    took=$(($(date +%s) - t0))
    # the plugin never blocked: the job kept its pace through the stop
    [ "$took" -le $((iters * pace_us / 1000000 + 15)) ] || die "the job took $took s: the plugin blocked"
    echo "collector_stop: spool entries $before -> $during while stopped, max in flight $max_inflight, job $took s" >&2
    serving
    finish
    ;;
slow_collector)
    start_collector 0
    for n in 0 1; do start_agent $n --spool-max-mb 1 --flush-kb 64; done
    # the collector runs 50 ms of every second
    kill -STOP "${pids[collector]}"
    (while sleep 0.95; do kill -CONT "${pids[collector]}"; sleep 0.05; kill -STOP "${pids[collector]}"; done) &
    throttle=$!
    pids[throttle]=$throttle
    scenario=ring emulate --iters 600 --channels 4 --pace-us 2000
    wait_until 20 metric_above 0 ncclscope_agent_spool_refused_events_total 0 ||
        metric_above 1 ncclscope_agent_spool_refused_events_total 0 || die "the spools refused nothing"
    agents_serving
    kill "$throttle"
    wait "$throttle" 2>/dev/null || true
    unset "pids[throttle]"
    kill -CONT "${pids[collector]}"
    for n in 0 1; do wait_until 30 delivered $n || die "node $n did not deliver its spool"; done
    serving
    refused=$(sum_metric ncclscope_agent_spool_refused_events_total)
    echo "slow_collector: $refused events refused by the spools" >&2
    for n in 0 1; do stop agent$n; done
    stop collector
    "$bin/nsc-e2e-store-check" "$dir/emu.json" "$dir/db" "$job" --lost "$refused" ||
        die "emitted != stored + refused"
    ;;
map_full)
    start_all --map-initial-mb 1 --map-max-mb 2
    # 256 MiB buffers hold seconds of backlog on a loaded machine (sanitizers):
    # the last finalize gets 10 s to hand it over, or it is lost uncounted;
    # stamped at the model's times its events take about a byte each in the
    # store: 4.8 M of them take 4.2 MB, twice the 2 MiB (2.5 M took 2.3 MB,
    # too close: in CI they fitted)
    NCCLSCOPE_FLUSH_MS=10000 NCCLSCOPE_BUFFER_MB=256 scenario=ring emulate --iters 10000 --channels 8 --pace-us 500
    wait_until 30 collector_metric_above ncclscope_collector_commit_failures_total 0 || die "no commit failed"
    map=$(collector_metric ncclscope_collector_store_map_bytes)
    [ "$map" -gt $((1 << 20)) ] || die "the map did not grow ($map bytes)"
    grep -q "commit (nothing acknowledged)" "$dir/collector.log" || die "the failed commit is not logged"
    serving
    curl -sf -m 5 "http://127.0.0.1:$http/api/v1/comms?job=$job" >/dev/null || die "no answer to a query"
    # the agents keep what was not acknowledged
    wait_until 10 eval '[ "$(sum_metric ncclscope_agent_spool_entries)" -gt 0 ]' ||
        die "the agents have nothing left though commits fail"
    left=$(sum_metric ncclscope_agent_spool_entries)
    [ "$(sum_metric ncclscope_agent_spool_refused_entries_total)" = 0 ] || die "the agents refused batches"
    echo "map_full: map $map bytes, $(collector_metric ncclscope_collector_commit_failures_total) commits failed, $left batches kept" >&2
    stop collector
    start_collector "$port" --map-initial-mb 1 --map-max-mb 256
    for n in 0 1; do wait_until 30 delivered $n || die "node $n did not deliver"; done
    serving
    plugin_lost  # a loaded machine may make the unpaced plugins drop (counted)
    for n in 0 1; do stop agent$n; done
    stop collector
    "$bin/nsc-e2e-store-check" "$dir/emu.json" "$dir/db" "$job" "${lost[@]}" ||
        die "emitted != stored + dropped"
    ;;
agent_late)
    start_collector 0
    # 9 chunks of records a process, and a 0.5 MiB backlog: less than the
    # job emits while the agents are absent, so the plugins drop. Unsynced
    # init: each rank emits from its start, not after the slowest (under the
    # sanitizers that can be most of the agents' absence). A 10 s budget for
    # the last finalize: agents that just arrived, busy with every rank's
    # backlog, may not take a rank's last batches within the default 1 s
    # The agents start once rank 0 has issued 40 of the 60 iterations (what
    # the job reached, not a guessed delay: a loaded machine may spend
    # seconds starting the ranks).
    NCCLSCOPE_FLUSH_MS=10000 NCCLSCOPE_THREADS=8 NCCLSCOPE_BUFFER_MB=1 scenario=ring emulate --iters 60 --pace-us 20000 --unsynced-init --progress "$dir/progress" &
    emu=$!
    wait_until 120 issued_at_least 40 || die "the job did not reach iteration 40"
    for n in 0 1; do start_agent $n; done
    wait $emu || die "emulator failed"
    for n in 0 1; do wait_until 20 delivered $n || die "node $n did not deliver"; done
    serving
    plugin_lost
    [ "$dropped" -gt 0 ] || die "the plugins dropped nothing: the case tests no accounting"
    echo "agent_late: the plugins counted $dropped events dropped ($nulls at their start; ${by_type#-})" >&2
    for n in 0 1; do stop agent$n; done
    stop collector
    "$bin/nsc-e2e-store-check" "$dir/emu.json" "$dir/db" "$job" "${lost[@]}" ||
        die "emitted != stored + dropped"
    ;;
ranks1000)
    start_all
    # the agent takes 1000 connections at once: a rank's last finalize may
    # wait seconds for its turn (60 s budget; the default is 1 s: with 10 s,
    # 1000 processes on a busy 2-core machine now and then gave batches up,
    # "not taken within NCCLSCOPE_FLUSH_MS"). Unsynced init: 1000 live rank
    # processes at once would measure 2 cores, not the agent
    NCCLSCOPE_FLUSH_MS=60000 scenario=coll emulate --ranks-per-node 1000 --iters 1 --channels 1 --unsynced-init
    wait_until 100 delivered 0 || die "node 0 did not deliver"
    [ "$(metric 0 ncclscope_agent_processes_started_total)" = 1000 ] ||
        die "the agent registered $(metric 0 ncclscope_agent_processes_started_total) processes"
    wait_until 30 status_has "len([p for p in s['processes'] if p['job'] == '$job']) == 1000" ||
        die "the collector's status does not list 1000 processes"
    serving
    finish
    ;;
comms100)
    start_all
    # 101 threads a process (a proxy thread per communicator): all get a
    # buffer, with rings deep enough for this loaded machine (the plugin's
    # defaults, 32 threads and 64 MiB, would drop and count)
    NCCLSCOPE_BUFFER_MB=512 NCCLSCOPE_THREADS=128 scenario=coll emulate --comms 100 --iters 2 --channels 1
    wait_until 20 delivered 0 || die "node 0 did not deliver"
    serving
    # 100 communicators of 2 ranks; in each, its 2 AllReduces matched across both ranks
    python3 -c 'import json,sys,urllib.request
base, job = sys.argv[1], sys.argv[2]
get = lambda q: urllib.request.urlopen(base + q, timeout=10).read().decode()
comms = json.loads(get("/api/v1/comms?job=" + job))["comms"]
assert len(comms) == 100 and all(c["ranks_seen"] == 2 for c in comms), [(c["comm"], c["ranks_seen"]) for c in comms]
for c in comms:
    l = [json.loads(x) for x in get("/api/v1/collectives?job=%s&comm=%s" % (job, c["comm"])).splitlines()]
    m = [(x["seq"], x["ranks_seen"], x["missing_ranks"]) for x in l if x["kind"] == "collective"]
    assert m == [(0, 2, []), (1, 2, [])], (c["comm"], m)' "http://127.0.0.1:$http" "$job" ||
        die "the job should have 100 communicators of 2 ranks, each with its collectives matched"
    finish
    ;;
poisoned_spool)
    collector_port_for_later
    for n in 0 1; do start_agent $n --ack-timeout-ms 500 --drain-ms 0; done
    # paced over about a second: each agent spools a few dozen batches
    scenario=ring emulate --iters 50 --pace-us 20000
    for n in 0 1; do stop agent$n; done
    flip() { python3 "$(dirname "$0")/spool_flip.py" "$dir/node0/spool/data.mdb" node0 "$@"; }
    framing=$(flip framing) || die "no batch to change"
    value=$(flip value $((framing + 1))) || die "no value to change"
    start_collector "$port"
    for n in 0 1; do start_agent $n --ack-timeout-ms 500; done
    for n in 0 1; do wait_until 30 delivered $n || die "node $n did not deliver"; done
    [ "$(metric 0 'ncclscope_agent_forward_quarantined_total{reason="corrupt"}')" = 2 ] ||
        die "quarantined: $(metric 0 'ncclscope_agent_forward_quarantined_total{reason="corrupt"}'), expected 2"
    [ "$(metric 0 ncclscope_agent_spool_quarantined_entries_total)" = 2 ] || die "the spool's quarantine does not hold 2"
    [ "$(metric 1 ncclscope_agent_spool_quarantined_entries_total)" = 0 ] || die "node 1 quarantined a batch"
    for seq in "$framing" "$value"; do
        [ "$(grep -c "spooled batch $seq .*is corrupt.*moved to the spool's quarantine" "$dir/agent0.log")" = 1 ] ||
            die "batch $seq is not logged once"
    done
    grep -q "spooled batch $value .*checksum does not match" "$dir/agent0.log" || die "the changed value is not named a checksum mismatch"
    # two ack timeouts later nothing more was sent: the quarantined batches are not resent
    sent=$(metric 0 ncclscope_agent_forward_batches_sent_total)
    sleep 1.2
    [ "$(metric 0 ncclscope_agent_forward_batches_sent_total)" = "$sent" ] || die "node 0 still sends"
    [ "$(collector_metric 'ncclscope_collector_rejects_total{agent="node0",reason="a2c_bad_checksum"}')" = "" ] ||
        die "a corrupt batch reached the collector"
    serving
    plugin_lost
    quarantined=$(metric 0 ncclscope_agent_spool_quarantined_events_total)
    [ "$quarantined" -gt 0 ] || die "the quarantined batches held no events"
    echo "poisoned_spool: batches $framing (framing) and $value (value) quarantined, $quarantined events" >&2
    for n in 0 1; do stop agent$n; done
    stop collector
    "$bin/nsc-e2e-store-check" "$dir/emu.json" "$dir/db" "$job" --lost $((quarantined + dropped - nulls)) ||
        die "emitted != stored + quarantined + dropped"
    ;;
agent_kills | agent_kills_pxn)
    kills=${NSC_AGENT_KILLS:-20}
    scenario=ring agent_args=()
    # PXN: a foreign event waits up to 10 s for its origin (a loaded machine
    # may take seconds to bring a restarted agent every process's batches)
    [ "$mode" = agent_kills ] || scenario=pxn agent_args=(--pxn-hold-ms 10000)
    start_collector 0
    for n in 0 1; do start_agent $n "${agent_args[@]}"; done
    # about 10 s of paced iterations: the kills end long before the job does
    emulate --ranks-per-node 4 --iters 200 --pace-us 50000 --progress "$dir/progress" &
    emu=$!
    wait_until 60 issued_at_least 5 || die "the job did not start"
    for k in $(seq "$kills"); do
        n=$((k % 2))
        # the agent took batches (it holds some in memory or in its queue)
        wait_until 20 metric_above $n ncclscope_agent_messages_in_total 20 || die "node $n took nothing before kill $k"
        kill9 agent$n
        start_agent $n "${agent_args[@]}"
    done
    issued=$(cat "$dir/progress")
    [ "$issued" -lt 200 ] || die "the job ended before the last kill: the kills hit no running job"
    wait $emu || die "emulator failed"
    serving
    plugin_lost
    echo "$mode: $kills kills by iteration $issued of 200; the plugins counted $dropped events dropped (${by_type#-})" >&2
    finish "${lost[@]}"
    ;;
agent_unheard)
    start_all
    scenario=ring emulate --iters 40 --pace-us 50000 --progress "$dir/progress" &
    emu=$!
    for n in 0 1; do wait_until 60 metric_above $n ncclscope_agent_spool_streams 1 || die "node $n: no stream marks"; done
    for n in 0 1; do kill9 agent$n; done
    wait $emu || die "emulator failed"
    for n in 0 1; do start_agent $n --linger-ms 1000; done
    for n in 0 1; do
        wait_metric $n ncclscope_agent_streams_forgotten_total 2
        wait_metric $n ncclscope_agent_spool_streams 0
    done
    serving
    for n in 0 1; do stop agent$n; done
    stop collector
    ;;
*) die "unknown mode $mode" ;;
esac
echo "faults.sh $mode: ok"
