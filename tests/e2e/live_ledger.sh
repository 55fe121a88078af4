#!/bin/bash
# live_ledger.sh: the live state's figures are the ledger's (issue 30, item
# 3). Both agents at detail = on-demand: no raw Coll reaches the collector,
# only the ledger. A ring job (2 nodes x 2 ranks, default event mask) runs;
# while it runs, status --json gives its communicator a bus bandwidth within
# the collectives endpoint's per-collective busBW, read after it ended. Once
# it ended, status --json and /metrics count as many durations as the
# collectives endpoint has collectives with a duration, with the same sum
# (live_ledger_check.py).
#
#   live_ledger.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=2 job=liveledger
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

start_collector 0
for n in 0 1; do start_agent $n --detail on-demand; done
url=http://127.0.0.1:$http
NCCLSCOPE_JOB=$job "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --scenario ring --nodes 2 \
    --ranks-per-node 2 --iters 400 --pace-us 10000 --count 1048576 --summary "$dir/emu.json" >"$dir/emu.log" 2>&1 &
emu=$!
bw_seen() {
    "$bin/ncclscope" --collector "$url" --json status >"$dir/status_run.json" &&
        python3 -c 'import json,sys
s=json.load(open(sys.argv[1]))
sys.exit(0 if [c for j in s["jobs"] if j["job"] == sys.argv[2] for c in j["comms"] if c["bus_bw_gbps"] > 0] else 1)' \
            "$dir/status_run.json" "$job"
}
seen=0
while [ $seen = 0 ] && kill -0 $emu 2>/dev/null; do bw_seen && seen=1 || sleep 0.05; done
[ $seen = 1 ] || die "no bus bandwidth in status while the job ran: $(cat "$dir/status_run.json")"
wait $emu || die "emulator failed: $(tail -3 "$dir/emu.log")"
settle_nodes
collector_metric_is ncclscope_collector_events_in_total 0 || die "raw events reached the collector"
wait_until 10 collector_metric_is ncclscope_collector_ledger_records_stored_total "$ledger" ||
    die "the ledger did not arrive"
comm=$(curl -sf -m 30 "$url/api/v1/comms?job=$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
curl -sf -m 30 "$url/api/v1/collectives?job=$job&comm=$comm&limit=100000" >"$dir/collectives.ndjson"
"$bin/ncclscope" --collector "$url" --json status >"$dir/status.json"
curl -sf -m 30 "$url/metrics" >"$dir/metrics.txt"
python3 "$here/live_ledger_check.py" "$dir" "$job" "$comm" || die "the live figures are not the ledger's"
collector_metric_is ncclscope_collector_live_ledger_dropped_total 0 || die "ledger records dropped by the live state"
for n in 0 1; do stop agent$n; done
stop collector
echo "live_ledger.sh: ok"
