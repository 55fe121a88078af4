#!/bin/bash
# diagpoll.sh: /api/v1/diagnose of a job, polled while it runs, goes on from
# what the polls before carried of it (from its settled point: diag.h,
# nsc_rc_carry; docs/cli-diagnose.md, "diagnose") and still
# answers as the analysis of the whole job: once the job ended and was
# delivered its answer is that of `ncclscope diagnose`, which reads the job
# whole: the same problems (a late host and a slow link) at the same places
# and onsets with the same counts, their aligned times within what a later
# clock model moves them (the carry read them with an earlier one); and
# ncclscope_collector_diagnose_carried_total counts the polls that went on
# from a carry. One collector (no root-cause passes) and two agents; a ring
# of 2 nodes x 2 ranks, one collective every 50 ms, rank 1's host 20 ms late
# (beyond a loaded machine's pauses) and node 1's links to node 0 at 1/4 of
# their bandwidth.
#
#   diagpoll.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=2
. "$(dirname "$0")/lib.sh"

diagnose() { curl -sf -m 60 "http://127.0.0.1:$http/api/v1/diagnose?job=dp"; }

start_all --hang-ms 300000 --rootcause-interval-ms 0
NCCLSCOPE_JOB=dp NCCLSCOPE_EVENT_MASK=all "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" \
    --nodes $nodes --ranks-per-node 2 --scenario ring --iters 60 --pace-us 50000 --channels 2 --count 4194304 \
    --chunk-size 2097152 --seed 1 --slow-rank 1 --slow-us 20000 --slow-link 1:0:4 \
    --summary "$dir/emu.json" >"$dir/emu.log" 2>&1 &
pids[emu]=$!
polls=0
while kill -0 "${pids[emu]}" 2>/dev/null && [ $polls -lt 300 ]; do
    diagnose >/dev/null || true
    polls=$((polls + 1))
done
wait "${pids[emu]}" || die "emulator failed"
unset "pids[emu]"
for n in $(seq 0 $((nodes - 1))); do
    wait_until 20 metric_is $n 'ncclscope_agent_processes{state="alive"}' 0 || die "node $n: processes still alive"
    wait_until 20 delivered $n || die "node $n did not deliver"
done
diagnose >"$dir/api.json" || die "diagnose failed"
"$bin/ncclscope" --collector "http://127.0.0.1:$http" --json diagnose --job dp >"$dir/cli.json" || true
python3 - "$dir/api.json" "$dir/cli.json" <<'PY' || die "the polled diagnose differs from the whole job's"
import json, sys
a, c = (json.load(open(p)) for p in sys.argv[1:3])
def near(x, y):  # aligned times: the clock model the carry read them with may move them by microseconds
    return abs(x - y) <= max(1e-3 * abs(y), 1000000)
assert a["collectives_checked"] == c["collectives_checked"], (a["collectives_checked"], c["collectives_checked"])
assert len(a["problems"]) == len(c["problems"]), (a["problems"], c["problems"])
for x, y in zip(a["problems"], c["problems"]):
    for k in ("kind", "comm", "rank", "peer", "channel", "step", "seq", "hosts"):
        assert x[k] == y[k], (k, x, y)
    assert x["figures"].keys() == y["figures"].keys(), (x, y)
    for k, v in x["figures"].items():
        w = y["figures"][k]
        assert v == w or (k.endswith("_ns") and near(v, w)), (k, v, w)
    assert (x["began"] is None) == (y["began"] is None) and (x["began"] or "")[:19] == (y["began"] or "")[:19], (x, y)
PY
for kind in host_late slow_link; do
    grep -q "\"kind\":\"$kind\"" "$dir/api.json" || die "no $kind in $(cat "$dir/api.json")"
done
carried=$(collector_metric ncclscope_collector_diagnose_carried_total)
[ "${carried:-0}" -gt 0 ] 2>/dev/null || die "no poll went on from a carry ($polls polls, carried '${carried:-}')"
echo "diagpoll: $polls polls while the job ran, $carried from a carry; the last is the whole job's diagnose"
