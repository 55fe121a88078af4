#!/bin/bash
# drift.sh: NCCL 2.29's drifting KernelCh timers (the emulator's
# drifting-kernelch quirk, docs/nccl-abi.md "Known NCCL bugs") are caught by
# the query layer's GPU lines, end to end: a 2-node ring job calling a
# Broadcast after each AllReduce, through the agents and the collector, read
# through the API. drift_check.py: every KernelCh GPU time in the timeline is
# its own collective's (the emulator's truth) or absent, and the collectives
# mark the ranks whose timers were other work's uncertain, with the reason.
# Iterations 20 ms apart: the timers read are at least that old, where the
# line tells them apart (a drift under 1 ms is not caught: docs/collector-clock.md).
#
#   drift.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=2
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

start_all
run_to_end drift --ranks-per-node 2 --scenario ring --iters 10 --also-func Broadcast \
    --nccl-quirk drifting-kernelch --pace-us 20000
get() { curl -sf -m 30 "http://127.0.0.1:$http/api/v1/$1"; }
comm=$(get "comms?job=drift" | python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
get "collectives?job=drift&comm=$comm&limit=100000" >"$dir/collectives.ndjson"
get "timeline?job=drift&comm=$comm&limit=100000" >"$dir/timeline.ndjson"
python3 "$here/drift_check.py" "$dir/emu-drift.json" "$dir/timeline.ndjson" "$dir/collectives.ndjson" ||
    die "a KernelCh timer of other work shown as a fact"
for n in 0 1; do stop agent$n; done
stop collector
