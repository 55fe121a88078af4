#!/bin/bash
# webhook.sh: the collector's verdict webhook (docs/alerts.md, "Webhook")
# with real processes on loopback (lib.sh): ncclscope-emu (real plugin), one
# agent per simulated node (4, one rank each), the collector with root-cause
# passes every 300 ms, and the receiver webhook_receiver.py.
#
#   webhook.sh BIN_DIR PLUGIN once   the receiver answers its first 2 POSTs
#                                    500 (webhook_settle_ms 1 s); a ring job
#                                    with a slow link and one
#                                    that hangs: once both jobs have ended and
#                                    15 more passes have run, the receiver has
#                                    each verdict exactly once (job, kind and
#                                    place), the slow link's job and the hang
#                                    among them, every problem diagnose now finds
#                                    for each job, a slow link or NIC dated
#                                    within its job from the fault's onset
#                                    on, and the collector counted
#                                    the 2 failures and every POST delivered;
#                                    it stops cleanly
#   webhook.sh BIN_DIR PLUGIN down   the receiver accepts no connection
#                                    (webhook_queue 2): 5 jobs, each with a rank
#                                    killed, are all delivered and stored
#                                    (diagnose names the dead rank) while /healthz
#                                    answers within 0.5 s (a POST that blocked
#                                    it would take 1 s); the queue holds 2,
#                                    the other verdicts are dropped, counted;
#                                    SIGTERM stops the collector within 5 s
#   webhook.sh BIN_DIR PLUGIN soon   passes every 10 min (rootcause_interval_ms,
#                                    the first at start): a job whose rank 3
#                                    hangs and holds for 20 s; its verdict
#                                    reaches the receiver while the job
#                                    holds: a pass runs once new ledger
#                                    records were stored (rootcause_trigger_ms,
#                                    default 1 s), counted as triggered;
#                                    each verdict says when it began (after
#                                    the job started, before it was found)
#   webhook.sh BIN_DIR PLUGIN window a ring job (12 collectives) whose rank
#                                    1's host is late, stored by a collector
#                                    without passes; then one on the same
#                                    store with passes over a window of 8
#                                    seqs: the late rank's verdict posted
#                                    has the figures and evidence diagnose
#                                    of the whole job gives it (what left
#                                    the window carried, docs/collector-http.md
#                                    "Root-cause metrics")
set -euo pipefail
bin=$1 plugin=$2 mode=$3
nodes=4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

# receiver ARGS...: webhook_receiver.py, its bodies in $dir/hook.log; $hook its URL.
receiver() {
    python3 "$here/webhook_receiver.py" "$dir/hook.port" "$dir/hook.log" "$@" &
    pids[receiver]=$!
    wait_until 10 test -s "$dir/hook.port" || die "the receiver did not start"
    hook=http://127.0.0.1:$(cat "$dir/hook.port")/hook
}
# ring_job NAME ARGS...: 12 collectives of 2 MiB steps over the ring (as
# rootcause.sh), then ARGS, to its end.
ring_job() {
    local name=$1
    shift
    run_to_end "$name" --ranks-per-node 1 --scenario ring --channels 2 --count 4194304 --chunk-size 2097152 \
        --iters 12 --seed 3 "$@"
}
# passes_from N K: the collector has run K root-cause passes since its N-th.
passes_from() { [ "$(collector_metric ncclscope_collector_rootcause_passes_total)" -ge $(($1 + $2)) ] 2>/dev/null; }

# diagnose_job NAME: diagnose --json of job NAME into $dir/diag-NAME.json
# (its exit status is 1 when it finds a problem).
diagnose_job() {
    "$bin/ncclscope" --collector "http://127.0.0.1:$http" --json diagnose --job "$1" >"$dir/diag-$1.json" || true
    [ -s "$dir/diag-$1.json" ] || die "diagnose $1 gave nothing"
}

case $mode in
once)
    receiver --fail-first 2
    # the hang lasts 3 s, its lagging verdict 2.7 s of it (hang_ms 300 ms):
    # a verdict settles in 1 s here, as the 3 s default does for the
    # default hang_ms of 10 s
    start_all --hang-ms 300 --rootcause-interval-ms 300 --webhook-url "$hook" --webhook-backoff-ms 50 \
        --webhook-settle-ms 1000
    ring_job slowlink --slow-link 1:2:4
    NCCLSCOPE_JOB=hang "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --nodes $nodes \
        --ranks-per-node 1 --scenario hang --hang-rank 3 --hang-after 2 --hang-ms 3000 --iters 5 --pace-us 20000 \
        --summary "$dir/emu-hang.json" >"$dir/emu-hang.log" 2>&1 || die "the hang job failed"
    for n in $(seq 0 $((nodes - 1))); do wait_until 20 delivered $n || die "node $n did not deliver"; done
    # both jobs ended, then 15 passes (4.5 s: past the 2 live intervals after
    # which an ended job is analysed a last time, and more that post nothing new)
    wait_until 30 status_has 's["jobs"] and all(j["state"] == "ended" for j in s["jobs"])' || die "the jobs did not end"
    now=$(collector_metric ncclscope_collector_rootcause_passes_total)
    wait_until 30 passes_from "$now" 15 || die "no root-cause passes"
    for j in slowlink hang; do diagnose_job $j; done
    python3 - "$dir/hook.log" "$dir/diag-slowlink.json" "$dir/diag-hang.json" <<'PY' || die "the receiver's verdicts are wrong"
import json, sys
key = lambda job, p: (job, p["kind"], p["comm"], p["rank"], p["peer"], p["channel"], tuple(p["hosts"]))
got = [json.loads(l) for l in open(sys.argv[1])]
keys = [key(b["job"], b["problem"]) for b in got]
dup = {k for k in keys if keys.count(k) > 1}
assert not dup, "verdicts posted more than once: %s" % dup
assert all(b["found"].endswith("Z") and b["problem"]["evidence"] for b in got), got
kinds = {(k[0], k[1]) for k in keys}
# the link's kind and place are rootcause.sh's to check (a loaded machine may
# make it a slow NIC): here, that its job has verdicts
assert any(j == "slowlink" for j, k in kinds), "no verdict of the slow link's job: %s" % kinds
assert any(j == "hang" and k in ("hung", "lagging") for j, k in kinds), "no hang: %s" % kinds
for path in sys.argv[2:]:
    d = json.load(open(path))
    missing = [p for p in d["problems"] if key(d["job"], p) not in keys]
    assert not missing, "diagnose finds what was not posted: %s" % missing
print("webhook: %d verdicts, each once: %s" % (len(keys), sorted(kinds)))
PY
    # a slow link's or NIC's verdict began within its job, from the fault's
    # onset on (fault_truth: the link is slow from the job's first
    # collective; the emulator's times are CLOCK_MONOTONIC, this machine's)
    python3 - "$dir/hook.log" "$dir/emu-slowlink.json" <<'PY' || die "a slow link's verdict is not dated at its onset"
import datetime, json, sys, time
emu = json.load(open(sys.argv[2]))
utc = lambda mono_ns: (mono_ns + time.time_ns() - time.monotonic_ns()) / 1e9
onset = utc(min(t["onset"]["api_start_ns"] for t in emu["fault_truth"] if t["kind"] == "slow_link"))
end = utc(max(c["api_start_ns"] for r in emu["ranks"] for c in r["collectives"]))
links = [b["problem"] for b in map(json.loads, open(sys.argv[1]))
         if b["job"] == "slowlink" and b["problem"]["kind"] in ("slow_link", "slow_nic")]
for p in links:
    began = datetime.datetime.strptime(p["began"] or "", "%Y-%m-%dT%H:%M:%S.%fZ")
    at = began.replace(tzinfo=datetime.timezone.utc).timestamp()
    assert onset - 0.05 <= at <= end + 0.05, (p["kind"], p["began"], at - onset, end - onset)
    print("webhook: %s began %.3f s after the fault's onset (the job's last collective %.3f s)" %
          (p["kind"], at - onset, end - onset))
PY
    posts=$(wc -l <"$dir/hook.log")
    wait_collector_metric ncclscope_collector_webhook_posts_total "$posts"
    wait_collector_metric ncclscope_collector_webhook_failures_total 2
    wait_collector_metric ncclscope_collector_webhook_queue 0
    stop collector
    ;;
soon)
    receiver
    started=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
    start_all --hang-ms 300 --rootcause-interval-ms 600000 --webhook-url "$hook"
    NCCLSCOPE_JOB=hang "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --nodes $nodes \
        --ranks-per-node 1 --scenario hang --hang-rank 3 --hang-after 2 --hang-ms 20000 --iters 5 --pace-us 20000 \
        --summary "$dir/emu-hang.json" >"$dir/emu-hang.log" 2>&1 &
    emu=$!
    wait_until 15 grep -q '"rank":3,' "$dir/hook.log" || die "no verdict on rank 3 posted while the job holds: $(cat "$dir/hook.log")"
    kill -0 $emu 2>/dev/null || die "the job ended before its verdict was posted"
    # each verdict carries when it began: after the job started, before it
    # was found (a slow link or NIC too, which a loaded machine's emulator
    # now and then posts beside the hang)
    python3 - "$dir/hook.log" "$started" <<'PY' || die "a verdict without the time it began: $(cat "$dir/hook.log")"
import json, sys
for b in map(json.loads, open(sys.argv[1])):
    began = b["problem"]["began"]
    assert began and sys.argv[2] <= began <= b["found"], (began, sys.argv[2], b["found"])
PY
    collector_metric_above ncclscope_collector_rootcause_passes_triggered_total 0 || die "no triggered pass counted"
    wait $emu || die "the hang job failed"
    ;;
down)
    receiver --hold
    start_all --rootcause-interval-ms 300 --webhook-url "$hook" --webhook-queue 2 --webhook-timeout-ms 1000 \
        --webhook-backoff-ms 1000 --webhook-retries 30
    health_watch "127.0.0.1:$http" 8
    for i in 0 1 2 3 4; do
        run_to_end "dead$i" --ranks-per-node 1 --scenario kill --kill-rank $((i % 4)) --kill-after 2 --pace-us 20000
    done
    # a POST that blocked it would take webhook_timeout_ms (1 s); the bound
    # leaves room for the emulated jobs on the same cores
    health_ok 0.5
    # the five dead ranks found: one POST hangs, 2 wait, the others dropped
    wait_until 30 status_has 'len(s["jobs"]) == 5 and all(j["state"] == "ended" for j in s["jobs"])' || die "the jobs did not end"
    wait_until 30 collector_metric_above ncclscope_collector_webhook_dropped_total 1 ||
        die "webhook drops: $(collector_metric ncclscope_collector_webhook_dropped_total)"
    wait_collector_metric ncclscope_collector_webhook_queue 2
    [ "$(collector_metric ncclscope_collector_webhook_posts_total)" = 0 ] || die "a POST to a stuck receiver succeeded"
    collector_metric_above ncclscope_collector_webhook_failures_total 0 || die "no failed POST counted"
    echo "webhook down: queue 2, dropped $(collector_metric ncclscope_collector_webhook_dropped_total), failures $(collector_metric ncclscope_collector_webhook_failures_total), collector peak RSS $(vm "${pids[collector]}" VmHWM) kB"
    # every job stored: ingest went on
    for i in 0 1 2 3 4; do
        diagnose_job "dead$i"
        grep -q '"kind":"dead"' "$dir/diag-dead$i.json" || die "dead$i: no dead rank found"
    done
    kill -TERM "${pids[collector]}"
    wait_until 5 eval '! kill -0 "${pids[collector]}" 2>/dev/null' || die "the collector did not stop within 5 s"
    wait "${pids[collector]}" || die "the collector exited with $?"
    unset "pids[collector]"
    ;;
window)
    start_all --rootcause-interval-ms 0
    ring_job late --slow-rank 1 --slow-us 20000
    stop collector
    receiver
    start_collector 0 --rootcause-interval-ms 100 --rootcause-window-seqs 8 --webhook-url "$hook"
    wait_until 30 grep -q '"kind":"host_late"' "$dir/hook.log" || die "no late host posted: $(cat "$dir/hook.log")"
    diagnose_job late
    python3 - "$dir/hook.log" "$dir/diag-late.json" <<'PY' || die "the posted late host is not diagnose's"
import json, sys
late = lambda ps: [p for p in ps if p["kind"] == "host_late"]
posted = late(json.loads(l)["problem"] for l in open(sys.argv[1]))
whole = late(json.load(open(sys.argv[2]))["problems"])
assert len(posted) == 1 and len(whole) == 1, (posted, whole)
for k in ("rank", "seq", "figures", "evidence"):
    assert posted[0][k] == whole[0][k], "%s: posted %s, diagnose %s" % (k, posted[0][k], whole[0][k])
assert whole[0]["figures"]["collectives"] > 8, whole[0]["figures"]
print("webhook window: the late host over %d collectives, as diagnose" % whole[0]["figures"]["collectives"])
PY
    stop collector
    ;;
*) die "unknown mode $mode" ;;
esac
