#!/bin/bash
# ended.sh: a job that ends, ends (issue 30). The emulator's hang scenario
# (rank 3 stops after 2 iterations, the others wait in its collective, then
# every process exits) through the real plugin, agents and collector
# (hang_ms 300). Once every process has ended:
# - /api/v1/status calls the job ended, lists no lagging or hung rank, and
#   its verdict names the collective, rank 3 and its process's end as a
#   wall-clock time within the run ("ended hung at AllReduce seq N: rank 3
#   never arrived (process alive until HH:MM:SS UTC)");
# - two reads at least a second apart give the same frozen for_ns;
# - /metrics: every lag, hang and in-flight gauge of the job 0, one job ended;
# - the CLI: status, status --json, watch and diagnose say the same, and
#   diagnose says what is known of rank 3's process, never "hung or dead";
# - the same after the collector restarts on its store.
#
#   ended.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
. "$(dirname "$0")/lib.sh"

api() { curl -sf -m 5 "http://127.0.0.1:$http/api/v1/$1"; }
cli() { "$bin/ncclscope" --collector "http://127.0.0.1:$http" "$@"; }
# check NAME PYTHON: the expression, true of s (the status saved as NAME.json);
# t0, t1: the run's wall clock in seconds; verdict: the job's verdict pattern.
check() {
    python3 - "$dir/$1.json" "$t0" "$t1" "$2" <<'PY' || die "$1: $(cat "$dir/$1.json")"
import json, re, sys
s = json.load(open(sys.argv[1]))
t0, t1 = int(sys.argv[2]), int(sys.argv[3])
job = s["jobs"][0]
verdict = re.fullmatch(r"ended hung at AllReduce seq (\d+): rank 3 never arrived "
                       r"\(process alive until (\d\d):(\d\d):(\d\d) UTC\)", job["verdict"] or "")
def in_run(m):  # the time of day, within the run (mod one day)
    day = int(m.group(2)) * 3600 + int(m.group(3)) * 60 + int(m.group(4))
    return (day - t0) % 86400 <= t1 - t0 + 1
for_ns = [c["for_ns"] for cm in job["comms"] for r in cm["ranks"] for c in r["collectives"]]
sys.exit(0 if eval("(" + sys.argv[4] + ")") else 1)
PY
}
status_to() { api status >"$dir/$1.json" || die "no status"; }
gauge_sum() { curl -sf -m 5 "http://127.0.0.1:$http/metrics" | awk -v m="$1" 'index($1, m "{") == 1 { s += $2 } END { print s + 0 }'; }
ended_at_zero() {
    local g
    for g in ncclscope_comm_lag_seconds ncclscope_comm_lagging_ranks ncclscope_comm_hung_ranks \
        ncclscope_comm_collectives_in_flight ncclscope_comm_in_flight_max_seconds; do
        [ "$(gauge_sum $g)" = 0 ] || die "$1: $g is $(gauge_sum $g), expected 0"
    done
    collector_metric_is ncclscope_collector_live_jobs_ended 1 || die "$1: jobs_ended $(collector_metric ncclscope_collector_live_jobs_ended)"
    collector_metric_is ncclscope_collector_live_lagging 0 || die "$1: live_lagging $(collector_metric ncclscope_collector_live_lagging)"
    collector_metric_is ncclscope_collector_live_hangs 0 || die "$1: live_hangs $(collector_metric ncclscope_collector_live_hangs)"
}
# Two reads of the status, the second once the collector's clock moved a second on.
frozen() {
    status_to "$1-a"
    local then
    then=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["now_ns"])' "$dir/$1-a.json")
    wait_until 10 python3 -c 'import json,sys,urllib.request
s = json.load(urllib.request.urlopen("http://127.0.0.1:%s/api/v1/status" % sys.argv[1], timeout=5))
sys.exit(0 if s["now_ns"] >= int(sys.argv[2]) + 10**9 else 1)' "$http" "$then" || die "$1: the collector's clock stood still"
    status_to "$1-b"
    check "$1-a" 'job["state"] == "ended" and verdict and in_run(verdict) and s["lagging"] == 0 and s["hangs"] == 0 and
                  not [x for c in job["comms"] for x in c["lagging"] + c["hangs"]]'
    check "$1-b" "job['verdict'] == json.load(open('$dir/$1-a.json'))['jobs'][0]['verdict'] and
                  for_ns == [c['for_ns'] for cm in json.load(open('$dir/$1-a.json'))['jobs'][0]['comms']
                             for r in cm['ranks'] for c in r['collectives']] and max(for_ns) > 0"
    ended_at_zero "$1"
}
cli_agrees() {
    local v
    v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["verdict"])' "$dir/$1-b.json")
    cli status >"$dir/$1-status.txt" || die "$1: status failed"
    grep -qF "ended    comm " "$dir/$1-status.txt" && grep -qF ": $v" "$dir/$1-status.txt" ||
        die "$1: status does not show the verdict: $(cat "$dir/$1-status.txt")"
    cli --json status >"$dir/$1-cli.json" || die "$1: status --json failed"
    check "$1-cli" "job['verdict'] == '''$v'''"
    cli watch --count 1 >"$dir/$1-watch.txt" || die "$1: watch failed"
    grep -qF ": $v" "$dir/$1-watch.txt" && grep -q " 0 lagging, 0 hung" "$dir/$1-watch.txt" ||
        die "$1: watch: $(cat "$dir/$1-watch.txt")"
    cli diagnose >"$dir/$1-diag.txt" || true  # a problem found exits nonzero
    grep -q "AllReduce seq [0-9]*: rank 3 never arrived (process alive until [0-9:]* UTC)" "$dir/$1-diag.txt" &&
        ! grep -q "hung or dead" "$dir/$1-diag.txt" || die "$1: diagnose: $(cat "$dir/$1-diag.txt")"
}

start_all --hang-ms 300
t0=$(date -u +%s)
scenario=hang emulate --iters 5 --hang-after 2 --hang-ms 2000 --pace-us 20000
t1=$(date -u +%s)
wait_until 20 status_has 's["jobs"] and s["jobs"][0].get("state") == "ended"' || die "the job did not end: $(cat "$dir/status.json")"
t1=$(date -u +%s)
frozen live
cli_agrees live
echo "ended: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["verdict"])' "$dir/live-b.json")"

stop collector
start_collector 0 --hang-ms 300
frozen restarted
cli_agrees restarted
check restarted-b "job['verdict'] == json.load(open('$dir/live-b.json'))['jobs'][0]['verdict']"
echo "ended.sh: ok"
