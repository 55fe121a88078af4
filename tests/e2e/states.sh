#!/bin/bash
# states.sh: every state reaches its event (issue 30). A 2-node ring
# AllReduce job, every event type on, 30 x 4 Mi elements over 2 channels,
# through the real plugin, agents and collector, the agents flushing their
# spool every 5 ms so that many batch boundaries fall inside open steps
# (a boundary between a step's states and its stop once left the states
# where no query joined them: `links` counted fewer steps than were made).
# Then, against the emulator's summary:
# - the collector counted no state stored apart from its event, and stored
#   as many states as the ranks recorded (KernelChStop travels in its event);
# - the timeline has every state the ranks recorded, by name, and every
#   ProxyStep its whole sequence, in order;
# - `links` counts, per sending rank, exactly the ProxySteps that rank made
#   (in this ring with 2 ranks per node a rank's network legs all go one way).
#
#   states.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=2
. "$(dirname "$0")/lib.sh"

start_collector 0
for n in 0 1; do start_agent $n --flush-ms 5; done
scenario=ring emulate --iters 30 --channels 2 --count 4194304 --chunk-size 2097152 --seed 3
for n in 0 1; do wait_until 20 delivered $n || die "node $n did not deliver"; done
want=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["totals"]["states"]
print(sum(s.values()) - s.get("KernelChStop", 0))' "$dir/emu.json")
wait_until 20 collector_metric_is ncclscope_collector_states_in_total "$want" ||
    die "collector stored $(collector_metric ncclscope_collector_states_in_total) states of $want"
unattached=$(collector_metric ncclscope_collector_store_unattached_states_total)
[ "$unattached" = 0 ] || die "$unattached states stored apart from their event"
finish
"$bin/ncclscope" --db "$dir/db" --job "$job" --json timeline >"$dir/timeline.json" || die "timeline failed"
"$bin/ncclscope" --db "$dir/db" --job "$job" --json links >"$dir/links.json" || die "links failed"
python3 - "$dir/emu.json" "$dir/timeline.json" "$dir/links.json" <<'PY' || die "states or steps lost"
import collections, json, sys
emu = json.load(open(sys.argv[1]))
events = [json.loads(l) for l in open(sys.argv[2])]
links = json.load(open(sys.argv[3]))["links"]
fail = []
seen = collections.Counter(s["state"] for e in events for s in e.get("states", []))
want = {k: n for k, n in emu["totals"]["states"].items() if k != "KernelChStop"}
if dict(seen) != want:
    fail.append("states by name: %s, recorded %s" % (dict(seen), want))
full = {("ProxyStepSendGPUWait", "ProxyStepSendPeerWait", "ProxyStepSendWait"),
        ("ProxyStepRecvWait", "ProxyStepRecvFlushWait", "ProxyStepRecvGPUWait")}
steps = [e for e in events if e.get("type") == "ProxyStep"]
cut = [(e["rank"], e["id"], [s["state"] for s in e["states"]]) for e in steps
       if tuple(s["state"] for s in e.get("states", [])) not in full]
if cut or len(steps) != emu["totals"]["calls"]["start"]["ProxyStep"]:
    fail.append("%d of %d ProxySteps without their whole sequence, the first: %s" % (len(cut), len(steps), cut[:4]))
made = {r["rank"]: r["calls"]["start"].get("ProxyStep", 0) for r in emu["ranks"]}
counted = collections.Counter()
for k in links:
    counted[k["from_rank"]] += k["steps"]
senders = {r: n for r, n in made.items() if r in counted}
if not counted or dict(counted) != senders or len(links) != 2 * emu["channels"]:
    fail.append("links counted %s steps per sender, the ranks made %s" % (dict(counted), made))
print("states.sh: %d states, %d ProxySteps, links %s" % (sum(seen.values()), len(steps), dict(counted)))
sys.exit("; ".join(fail) if fail else 0)
PY
echo "states.sh: ok"
