#!/bin/bash
# ledger.sh: the collective ledger from the emulator to the collector's store
# and API (issue 30). A job of the emulator's SCENARIO goes through the real
# plugin, two agents (which build the records) and the collector; then:
# every record the agents spooled was stored exactly once (the collector's
# stored counter and the store's gauge equal the agents' spooled counters,
# nothing replaced, refused or stale); /api/v1/ledger holds one record per
# rank of every collective /api/v1/collectives matched, with its function,
# and times aligned like the collectives' (each record's enqueue within the
# host bound of that rank's enqueue in collectives); `ncclscope --db ledger
# --json` gives the same records from the store as a collector on it; the
# bytes per record stored are printed (docs/benchmarks.md, "Ledger").
#
#   ledger.sh BIN_DIR PLUGIN SCENARIO
set -euo pipefail
bin=$1 plugin=$2 scenario=$3
nodes=2
. "$(dirname "$0")/lib.sh"

start_all
emulate --iters 20
spooled=0
settled() { metric_is "$1" ncclscope_agent_ledger_open 0 && delivered "$1"; }  # records held for PXN proxies too
for n in 0 1; do
    wait_until 20 settled $n || die "node $n did not deliver its spool and ledger"
    spooled=$((spooled + $(metric $n ncclscope_agent_ledger_spooled_total)))
done
[ "$spooled" -gt 0 ] || die "the agents built no ledger record"
wait_collector_metric ncclscope_collector_ledger_records_stored_total "$spooled"
for m in replaced stale rejected; do
    collector_metric_is ncclscope_collector_ledger_records_${m}_total 0 ||
        die "ledger records $m: $(collector_metric ncclscope_collector_ledger_records_${m}_total)"
done
collector_metric_is ncclscope_collector_store_ledger_records "$spooled" ||
    die "the store holds $(collector_metric ncclscope_collector_store_ledger_records) ledger records, $spooled spooled"
echo "ledger.sh ($scenario): $spooled records," \
    "$(python3 -c "print('%.1f' % ($(collector_metric ncclscope_collector_store_ledger_bytes) / $spooled))") B each in the ledger database"
comm=$(curl -sf "http://127.0.0.1:$http/api/v1/comms?job=$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
api="http://127.0.0.1:$http/api/v1"
curl -sf "$api/collectives?job=$job&comm=$comm&limit=1000000" > "$dir/colls" || die "collectives"
curl -sf "$api/ledger?job=$job&comm=$comm&limit=1000000" > "$dir/ledger" || die "ledger"
python3 - "$dir/colls" "$dir/ledger" <<'PY' || die "the ledger and the collectives disagree"
import json, sys
colls = [json.loads(l) for l in open(sys.argv[1])]
recs = {(r["func"], r["seq"], r["rank"]): r for r in map(json.loads, open(sys.argv[2])) if r["kind"] == "record"}
fail, n = [], 0
for c in colls:
    if c["kind"] != "collective":
        continue
    for x in c["ranks"]:
        n += 1
        r = recs.get((c["func"], c["seq"], x["rank"]))
        if r is None:
            fail.append("no record of %s seq %d rank %d" % (c["func"], c["seq"], x["rank"]))
        elif r["enqueue_ns"] is not None and abs(r["enqueue_ns"] - x["enqueue_ns"]) > 1000 + r["clock_err_ns"]:
            fail.append("%s seq %d rank %d: enqueue %d, collectives %d" % (c["func"], c["seq"], x["rank"],
                                                                          r["enqueue_ns"], x["enqueue_ns"]))
if n == 0:
    fail.append("no collective matched")
sys.exit("; ".join(fail[:5]) if fail else 0)
PY
# the clock models go on learning until the collector stops: the store's
# answer is compared with a collector's on the finished store
stop collector
start_collector 0
api="http://127.0.0.1:$http/api/v1"
curl -sf "$api/ledger?job=$job&comm=$comm&limit=1000000" > "$dir/ledger" || die "ledger after a restart"
stop collector
"$bin/ncclscope" --db "$dir/db" --job "$job" --json ledger --comm "$comm" --limit 1000000 > "$dir/ledger_db" ||
    die "ncclscope --db ledger"
cmp -s <(grep '"kind":"record"' "$dir/ledger") <(grep '"kind":"record"' "$dir/ledger_db") ||
    die "the store's ledger differs from the collector's"
