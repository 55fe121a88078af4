#!/bin/bash
# prometheus.sh: the collector's and agents' /metrics as Prometheus and
# Grafana see them, with real processes on loopback (lib.sh): ncclscope-emu
# (real plugin) -> one agent per simulated node -> the collector.
#
#   prometheus.sh BIN_DIR PLUGIN MODE
#
# promql:    Debian's prometheus (skips with exit 77 when it is not installed:
#            scripts/deps.sh --test installs it) scrapes the collector every
#            200 ms and both agents every second while a 4-rank job runs with a straggler
#            (rank 3 arrives 500 ms late at each AllReduce); PromQL through
#            its HTTP API must give the job's ground truth: every collective
#            and every rank's duration counted, collectives per second > 0,
#            the median duration that of the ranks waiting for the straggler
#            and the 10th percentile the straggler's own, a bus bandwidth,
#            collectives in flight during the run and none after, the lag
#            saw-tooth and rank 3 as the rank behind, every rank's arrival
#            counted and a quarter of them late; promtool check metrics finds
#            nothing to say about the collector's and agents' /metrics; every
#            query of the Grafana dashboard is valid PromQL and returns
#            series.
# hang:      the same Prometheus, the collector with hang_ms 300, the emulator's
#            hang scenario (rank 3 stops after 2 iterations, the others wait
#            8 s inside the third collective): lagging_ranks reaches 1 (no
#            more) with lag_rank 3 whenever it is, the collectives stay in
#            flight and the oldest one's age passes 1 s; once every process
#            has exited, the ended job's gauges are 0 again.
# dashboard: every metric the dashboard's queries name is in the /metrics of
#            a collector and agents that saw a job, its panels do not overlap
#            and use only its variables; copies of the dashboard naming a
#            metric nobody exports, with overlapping panels or an undefined
#            variable are refused; the alerting rules (containers/prometheus/
#            ncclscope-alerts.yaml) name only exported metrics (besides
#            Prometheus' own up); every job family
#            exported has its row in docs/collector-http.md; the Kubernetes
#            kustomization (kubectl kustomize, when installed) carries the
#            dashboard unchanged in its ConfigMap.
# alerts:    the same Prometheus evaluating containers/prometheus/
#            ncclscope-alerts.yaml (every `for` 0 and every 250 ms, nothing
#            else changed) over 4 nodes of one rank, the collector with
#            hang_ms 300 and root-cause passes every second: a ring job with
#            the link from node1 to node2 4x slow fires NcclscopeSlowLink for
#            that pair, one with rank 2 20 ms late NcclscopeStraggler at node2,
#            the hang scenario (rank 3 stops) NcclscopeCollectiveHung and
#            NcclscopeRanksLagging for its job, cleared once it has ended;
#            agent 3 killed fires NcclscopeAgentDown for it, the collector
#            killed NcclscopeCollectorDown (states from /api/v1/alerts).
set -euo pipefail
bin=$1 plugin=$2 mode=$3
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
dashboard=$src/containers/grafana/ncclscope-dashboard.json
if [ "$mode" != dashboard ] && ! { command -v prometheus && command -v promtool; } >/dev/null; then
    echo "SKIPPED: prometheus or promtool is not installed (Debian package prometheus; scripts/deps.sh --test installs it)"
    exit 77
fi
[ "$mode" = alerts ] && nodes=4
. "$here/lib.sh"
iters=20 slow_us=500000 slow_rank=3 ranks=4

# The emulated job, its plugins flushing every 50 ms so that the collector's
# view follows the ranks closely.
straggler_job() {
    NCCLSCOPE_FLUSH_MS=50 scenario=coll emulate --iters "$iters" --func AllReduce \
        --slow-rank $slow_rank --slow-us $slow_us
}
scrape_all() {  # scrape_all: every component's /metrics into $dir/metrics.*
    curl -sf -m 5 "http://127.0.0.1:$http/metrics" >"$dir/metrics.collector" || die "collector /metrics"
    for n in 0 1; do
        curl -sf -m 5 "http://$(cat "$dir/node$n/agent.http")/metrics" >"$dir/metrics.agent$n" || die "agent $n /metrics"
    done
}

# start_prometheus [RULES]: scraping the collector and every node's agent,
# evaluating the rule file RULES when given.
start_prometheus() {
    local n agents=()
    for n in $(seq 0 $((nodes - 1))); do agents+=("\"$(cat "$dir/node$n/agent.http")\""); done
    cat >"$dir/prometheus.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
rule_files: [${1:-}]
scrape_configs:
  - job_name: ncclscope-collector
    scrape_interval: 200ms
    scrape_timeout: 200ms
    static_configs: [{targets: ["127.0.0.1:$http"]}]
  - job_name: ncclscope-agent
    static_configs: [{targets: [$(IFS=,; echo "${agents[*]}")]}]
YML
    # Prometheus takes port 0 but writes no port file: its port from ss.
    prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/prom" \
        --web.listen-address=127.0.0.1:0 --log.level=warn 2>>"$dir/prometheus.log" &
    pids[prometheus]=$!
    prom=http://127.0.0.1:$(listen_port "${pids[prometheus]}") || die "prometheus is not listening"
    wait_until 60 curl -sf -m 2 "$prom/-/ready" -o /dev/null || die "prometheus did not become ready"
}
# promql EXPR: the values of the instant vector EXPR (one per line, sorted);
# fails on an error.
promql() {
    curl -sf -m 10 "$prom/api/v1/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
if r["status"] != "success" or r["data"]["resultType"] != "vector":
    sys.exit("promql: %s" % r)
for v in sorted(float(s["value"][1]) for s in r["data"]["result"]):
    print("%.9g" % v)'
}
# promql_any EXPR: EXPR has a sample.
promql_any() { [ -n "$(promql "$1")" ]; }
# promql_is EXPR VALUE: EXPR is exactly one sample of VALUE.
promql_is() { [ "$(promql "$1")" = "$2" ]; }
# expect EXPR PYTHON-CONDITION-ON-v: one sample, and the condition holds.
expect() {
    local v
    v=$(promql "$1") || die "query failed: $1"
    [ "$(wc -l <<<"$v")" = 1 ] && [ -n "$v" ] || die "$1: expected one sample, got '$v'"
    python3 -c "import sys; v = float(sys.argv[1]); sys.exit(0 if ($2) else 1)" "$v" || die "$1 = $v, expected $2"
    echo "ok: $1 = $v ($2)"
}

# The straggler as the lag gauge shows it: rank 3 is behind for about 500 ms
# of each iteration, the lag rising from 0 to about 0.5 s; scraped every
# 200 ms, several samples of each rise are over 200 ms, and they name rank 3.
check_straggler() {
    curl -sf -m 10 "$prom/api/v1/query" --data-urlencode \
        "query=(ncclscope_comm_lag_rank and ncclscope_comm_lag_seconds > 0.2)[5m:200ms]" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
ranks = [float(v) for s in r for _, v in s["values"]]
behind = sum(1 for x in ranks if x == float(sys.argv[1]))
print("lag samples over 200 ms: %d, naming rank %s: %d" % (len(ranks), sys.argv[1], behind))
sys.exit(0 if len(ranks) >= 3 and behind >= 0.8 * len(ranks) else 1)' $slow_rank || die "the lag does not name rank $slow_rank"
}

# alert_state NAME LABEL=VALUE...: the state (pending, firing) of Prometheus'
# alert NAME with those labels, nothing when it has none.
alert_state() {
    curl -sf -m 5 "$prom/api/v1/alerts" | python3 -c '
import json, sys
want = dict(a.split("=", 1) for a in sys.argv[2:])
for a in json.load(sys.stdin)["data"]["alerts"]:
    l = a["labels"]
    if l.get("alertname") == sys.argv[1] and all(l.get(k) == v for k, v in want.items()):
        print(a["state"])' "$@"
}
firing() { [ "$(alert_state "$@")" = firing ]; }
# fire NAME LABEL=VALUE...: the alert fires soon (20 s of polls).
fire() {
    wait_until 20 firing "$@" || die "$* did not fire: $(curl -sf -m 5 "$prom/api/v1/alerts")"
    echo "ok: $* fires"
}
# fast_rules: the shipped rules as $dir/alerts.yml with every `for` 0 and
# every group evaluated each 250 ms, so that a test of seconds sees them fire.
fast_rules() {
    python3 - "$src/containers/prometheus/ncclscope-alerts.yaml" "$dir/alerts.yml" <<'PY' || die "cannot read the rules"
import sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
for g in r["groups"]:
    g["interval"] = "250ms"
    for rule in g["rules"]:
        rule["for"] = "0s"
yaml.safe_dump(r, open(sys.argv[2], "w"))
PY
}
# ring_job NAME ARGS...: a ring of one rank per node, 12 collectives of 2 MiB
# steps (as rootcause.sh), then ARGS, to its end.
ring_job() {
    local name=$1
    shift
    run_to_end "$name" --ranks-per-node 1 --scenario ring --channels 2 --count 4194304 --chunk-size 2097152 \
        --iters 12 --seed 3 "$@"
}

case $mode in
alerts)
    python3 -c 'import yaml' 2>/dev/null || { echo "SKIPPED: python3-yaml is not installed"; exit 77; }
    fast_rules
    start_all --hang-ms 300 --rootcause-interval-ms 1000
    start_prometheus "$dir/alerts.yml"
    wait_until 30 promql_any 'up{job="ncclscope-collector"} == 1' || die "prometheus never scraped the collector"
    ring_job slowlink --slow-link 1:2:4
    fire NcclscopeSlowLink src_host=node1 dst_host=node2
    ring_job straggler --slow-rank 2 --slow-us 20000
    fire NcclscopeStraggler host=node2
    NCCLSCOPE_JOB=hang "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --nodes $nodes \
        --ranks-per-node 1 --scenario hang --hang-rank 3 --hang-after 2 --hang-ms 8000 --iters 5 --pace-us 20000 \
        --summary "$dir/emu-hang.json" >"$dir/emu-hang.log" 2>&1 &
    emu=$!
    fire NcclscopeCollectiveHung nccl_job=hang
    fire NcclscopeRanksLagging nccl_job=hang
    wait $emu || die "the hang job failed"
    wait_until 30 eval '[ -z "$(alert_state NcclscopeCollectiveHung nccl_job=hang)" ]' ||
        die "the ended job's hang alert stays: $(alert_state NcclscopeCollectiveHung nccl_job=hang)"
    echo "ok: the ended job's hang alert cleared"
    agent3=$(cat "$dir/node3/agent.http")
    kill9 agent3
    fire NcclscopeAgentDown instance="$agent3"
    kill9 collector
    fire NcclscopeCollectorDown instance="127.0.0.1:$http"
    ;;
promql)
    start_all --rootcause-interval-ms 1000
    start_prometheus
    straggler_job
    for n in 0 1; do wait_until 20 delivered $n || die "node $n did not deliver"; done
    total=$((iters * ranks))
    # The final state is each series' last sample (last_over_time: a scrape
    # that timed out on the loaded machine marks the target's series stale
    # until the next one, and instant queries would see nothing).
    last() { echo "last_over_time($1[1m])"; }
    # Prometheus has scraped the final state: a duration per collective, once
    # every rank's ledger record came (docs/api-figures.md, "Figures").
    wait_until 30 promql_is "sum($(last ncclscope_comm_collective_duration_seconds_count))" $iters ||
        die "durations counted: $(promql "sum($(last ncclscope_comm_collective_duration_seconds_count))"), expected $iters"
    expect 'count(max_over_time(up{job="ncclscope-agent"}[1m]) == 1)' 'v == 2'
    expect 'count(max_over_time(up{job="ncclscope-collector"}[1m]) == 1)' 'v == 1'
    expect "min($(last ncclscope_agent_forward_batches_acked_total))" 'v > 0'
    expect "$(last "ncclscope_comm_collectives_total{nccl_job=\"$job\",func=\"AllReduce\"}")" "v == $iters"
    expect "$(last "ncclscope_comm_ranks{nccl_job=\"$job\"}")" "v == $ranks"
    expect 'sum by (comm) (rate(ncclscope_comm_collectives_total[5m]))' 'v > 0'
    # a collective lasts its slowest rank's kernel time: a rank that waits
    # about 500 ms in its kernel for the straggler, in every collective
    expect "histogram_quantile(0.5, sum by (le) ($(last ncclscope_comm_collective_duration_seconds_bucket)))" 'v >= 0.3 and v <= 3'
    expect "histogram_quantile(0.1, sum by (le) ($(last ncclscope_comm_collective_duration_seconds_bucket)))" 'v >= 0.1'
    expect 'max_over_time(ncclscope_comm_bus_bandwidth_bytes_per_second[5m])' 'v > 0'
    expect 'max_over_time(ncclscope_comm_collectives_in_flight[5m])' 'v >= 1'
    expect "$(last ncclscope_comm_collectives_in_flight)" 'v == 0'
    expect 'max_over_time(ncclscope_comm_lag_seconds[5m])' 'v >= 0.2 and v <= 5'
    check_straggler
    # diagnose's analysis blames the straggler's host as late (root-cause metrics)
    wait_until 20 promql_is "sum($(last 'ncclscope_host_causes{cause="late"}'))" 1 ||
        die "root-cause metrics: late causes $(promql "sum($(last 'ncclscope_host_causes{cause="late"}'))"), expected 1"
    # every rank's arrival at every collective; a quarter of them 500 ms late
    expect "sum($(last ncclscope_comm_arrival_delay_seconds_count))" "v == $total"
    expect "histogram_quantile(0.9, sum by (le) ($(last ncclscope_comm_arrival_delay_seconds_bucket)))" 'v >= 0.2 and v <= 3'
    expect "histogram_quantile(0.5, sum by (le) ($(last ncclscope_comm_arrival_delay_seconds_bucket)))" 'v < 0.2'
    # Prometheus' own linter (names, units, help texts) on every /metrics
    scrape_all
    for f in "$dir"/metrics.*; do
        lint=$(promtool check metrics <"$f" 2>&1) || die "promtool check metrics ${f##*/}: $lint"
        [ -z "$lint" ] || die "promtool check metrics ${f##*/}: $lint"
    done
    python3 "$here/check_dashboard.py" query "$dashboard" "$prom" || die "the dashboard's queries fail"
    finish
    ;;
hang)
    start_all --hang-ms 300
    start_prometheus
    # the lag lasts only while the job runs: scraping has begun before it
    wait_until 30 promql_any 'up{job="ncclscope-collector"} == 1' || die "prometheus never scraped the collector"
    NCCLSCOPE_FLUSH_MS=50 scenario=hang emulate --iters 5 --hang-after 2 --hang-ms 8000 --pace-us 20000 &
    emu=$!
    # over time: once every process has exited the job has ended and its
    # gauges return to 0 (docs/api.md), so the instant value may be past
    wait_until 20 promql_any 'max_over_time(ncclscope_comm_lagging_ranks[5m]) >= 1' || die "no rank reported lagging"
    wait_until 20 promql_any 'max_over_time(ncclscope_comm_in_flight_max_seconds[5m]) > 1' ||
        die "no collective in flight for 1 s"
    wait $emu || die "emulator failed"
    wait_until 20 promql_any 'ncclscope_comm_lagging_ranks == 0' || die "the ended job's lagging gauge is not back to 0"
    # ranks 0-2 in the hung collective (before it, all four may have been in flight)
    expect 'max_over_time(ncclscope_comm_collectives_in_flight[5m])' 'v >= 3 and v <= 4'
    expect 'max_over_time(ncclscope_comm_lagging_ranks[5m])' 'v == 1'
    expect 'min_over_time((ncclscope_comm_lag_rank and ncclscope_comm_lagging_ranks >= 1)[5m:200ms])' "v == $slow_rank"
    expect 'max_over_time((ncclscope_comm_lag_rank and ncclscope_comm_lagging_ranks >= 1)[5m:200ms])' "v == $slow_rank"
    # no store check: the collectives left open are flushed at finalize, which
    # the emulator's summary does not count (as e2e.sh hang)
    ;;
dashboard)
    start_all --rootcause-interval-ms 1000
    NCCLSCOPE_FLUSH_MS=50 scenario=coll emulate --iters 3
    for n in 0 1; do wait_until 20 delivered $n || die "node $n did not deliver"; done
    wait_until 20 collector_metric_above ncclscope_collector_rootcause_jobs 0 || die "no root-cause pass saw the job"
    scrape_all
    out=$(python3 "$here/check_dashboard.py" names "$dashboard" "$dir"/metrics.*) || die "dashboard: $out"
    echo "$out"
    used=$(sed -nE 's/^names: [0-9]+ queries, ([0-9]+) metrics$/\1/p' <<<"$out")
    [ "${used:-0}" -ge 15 ] || die "the checker found only ${used:-0} metrics in the dashboard"
    sed 's/ncclscope_comm_lag_seconds/ncclscope_comm_lag_secs/' "$dashboard" >"$dir/broken.json"
    out=$(python3 "$here/check_dashboard.py" names "$dir/broken.json" "$dir"/metrics.*) &&
        die "a dashboard naming ncclscope_comm_lag_secs passes"
    grep -q "ncclscope_comm_lag_secs is not exported" <<<"$out" || die "broken dashboard: $out"
    # and one whose panels overlap, or that uses an undefined variable
    python3 - "$dashboard" "$dir/overlap.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
lag = next(p for p in d["panels"] if p["title"] == "Lag")
lag["gridPos"]["x"] += 6
lag["targets"][0]["expr"] = lag["targets"][0]["expr"].replace("$comm", "$communicator")
json.dump(d, open(sys.argv[2], "w"))
PY
    out=$(python3 "$here/check_dashboard.py" names "$dir/overlap.json" "$dir"/metrics.*) &&
        die "a dashboard with overlapping panels passes"
    grep -q "overlaps panel 'Lag'" <<<"$out" && grep -q 'variable $communicator is not defined' <<<"$out" ||
        die "broken layout: $out"
    # every job family exported is in docs/collector-http.md's table
    fams=$(awk '$1 == "#" && $2 == "TYPE" && $3 ~ /^ncclscope_comm_/ { print $3 }' "$dir/metrics.collector")
    [ "$(wc -l <<<"$fams")" -ge 14 ] || die "only $(wc -l <<<"$fams") job families exported"
    for f in $fams; do
        grep -qE "^  \| \`$f[{\`]" "$src/docs/collector-http.md" || die "docs/collector-http.md does not list $f"
    done
    # the alerting rules' expressions (but those on Prometheus' up), as one panel
    python3 - "$src/containers/prometheus/ncclscope-alerts.yaml" >"$dir/alerts.json" <<'PY' || die "cannot read the rules"
import json, sys, yaml
rules = [r for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"] if not r["expr"].startswith("up{")]
print(json.dumps({"panels": [{"title": "alerting rules", "gridPos": {"x": 0, "y": 0, "w": 24, "h": 8}, "targets": [
    {"refId": r["alert"], "expr": r["expr"]} for r in rules]}]}))
PY
    out=$(python3 "$here/check_dashboard.py" names "$dir/alerts.json" "$dir"/metrics.*) || die "alerting rules: $out"
    grep -qE '^names: [0-9]+ queries' <<<"$out" && [ "$(sed -nE 's/^names: ([0-9]+) queries.*/\1/p' <<<"$out")" -ge 8 ] ||
        die "alerting rules: $out"
    echo "alerting rules: $out"
    if command -v kubectl >/dev/null; then
        kubectl kustomize "$src/containers/k8s" >"$dir/k8s.yaml" || die "kubectl kustomize containers/k8s fails"
        python3 - "$dir/k8s.yaml" "$dashboard" <<'PY' || die "the kustomization does not carry the dashboard"
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
want = json.load(open(sys.argv[2]))
maps = [d for d in docs if d["kind"] == "ConfigMap" and "ncclscope-dashboard.json" in d.get("data", {})]
assert len(maps) == 1, "one ConfigMap with the dashboard"
assert json.loads(maps[0]["data"]["ncclscope-dashboard.json"]) == want, "the dashboard changed"
assert maps[0]["metadata"]["labels"].get("grafana_dashboard") == "1", "no grafana_dashboard label"
print("kustomize: ConfigMap %s carries the dashboard" % maps[0]["metadata"]["name"])
PY
    fi
    finish
    ;;
*) die "unknown mode $mode" ;;
esac
