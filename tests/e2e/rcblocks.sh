#!/bin/bash
# rcblocks.sh: a root-cause pass over a running ring decodes no raw event
# block, not the job's: a ring has no Send/Recv, and the pass's Send/Recv
# check reads the blocks the store's p2p index names, and takes where each
# rank reported last from them alone (docs/collector-store.md, "P2p
# index"). One collector (passes
# every 250 ms; rootcause_p2p_lag_ms over the job's length, so that the check
# spans the whole job, as it does the last 10 s of a real one) and one agent; a ring of 4 ranks of 2,000 collectives as
# fast as the emulator runs, then rank 0 hangs, so the job stays alive and
# every pass reads it. Once every agent's batches are stored, over 5
# passes ncclscope_collector_rootcause_blocks_decoded_total grows by fewer
# blocks a pass than the ring has ranks (0 measured), where the job holds
# tens of blocks a rank (before: the last of each rank's; before that,
# every one of them at every pass).
# MODE stall: 4 nodes of one rank, 6,000 collectives, and rank 1 also stops
# sending in the collective before the hang, which every rank entered: a
# pass also reads the stuck collective's raw proxy events, from the
# collectives just before it on, and decodes fewer blocks than half the
# sections the job stored (16-28 %, quiet or beside a build; before, from
# the job's start, 77-82 %: the emulator runs far ahead of real time, so a
# loaded machine's batches hold less of the job and a window spans more of
# them, and a bound in blocks held only on a quiet machine), and finds the
# stall once it is older than hang_ms
# (1 s here, for the agents' in-flight ledger records too; its orphan steps
# take their channel's peer from the ProxyOps before it).
#
#   rcblocks.sh BIN_DIR PLUGIN [hang|stall]
set -euo pipefail
bin=$1 plugin=$2 mode=${3:-hang}
nodes=1 per_node=4 hang_ms=600000 iters=2000
[ "$mode" = hang ] || nodes=4 per_node=1 hang_ms=1000 iters=6000
export NCCLSCOPE_HANG_MS=$hang_ms  # the agents' in-flight ledger records
. "$(dirname "$0")/lib.sh"
ranks=4

start_all --rootcause-interval-ms 250 --rootcause-trigger-ms 0 --rootcause-p2p-lag-ms 600000 --hang-ms $hang_ms
fault=()
[ "$mode" = hang ] || fault=(--stall 1:$((iters - 1)):0:2)
NCCLSCOPE_JOB=rc-blocks "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --scenario hang --nodes $nodes \
    --ranks-per-node $per_node --ranks-as threads --iters $((iters + 1)) --hang-rank 0 --hang-after $iters \
    --hang-ms 60000 "${fault[@]}" >"$dir/emu.log" 2>&1 &
pids[emu]=$!
wait_until 90 status_has "any(f['max_seq'] >= $iters - 1 for j in s['jobs'] if j['job'] == 'rc-blocks'
    for c in j['comms'] for f in c['funcs'])" || die "the job never reached its hang"
for ((n = 0; n < nodes; n++)); do wait_until 30 delivered $n || die "agent $n's batches were not all stored"; done
p0=$(collector_metric ncclscope_collector_rootcause_passes_total)
wait_until 30 collector_metric_above ncclscope_collector_rootcause_passes_total $((p0 + 1)) || die "no pass"
p0=$(collector_metric ncclscope_collector_rootcause_passes_total)
b0=$(collector_metric ncclscope_collector_rootcause_blocks_decoded_total)
wait_until 60 collector_metric_above ncclscope_collector_rootcause_passes_total $((p0 + 4)) || die "no 5 passes"
p1=$(collector_metric ncclscope_collector_rootcause_passes_total)
b1=$(collector_metric ncclscope_collector_rootcause_blocks_decoded_total)
status_has "any(p['state'] == 'alive' for p in s['processes'] if p['job'] == 'rc-blocks')" ||
    die "the job ended before its passes were counted"
per=$(((b1 - b0) / (p1 - p0)))
if [ "$mode" = hang ]; then
    [ "$per" -lt "$ranks" ] || die "a pass decoded $per blocks (over $((p1 - p0)) passes), not fewer than the $ranks ranks"
else
    sections=$(collector_metric ncclscope_collector_sections_in_total)
    [ $((2 * per)) -lt "$sections" ] ||
        die "a pass decoded $per blocks (over $((p1 - p0)) passes), half the job's $sections sections or more"
    curl -sf -m 60 "http://127.0.0.1:$http/api/v1/diagnose?job=rc-blocks" >"$dir/diagnose.json" ||
        die "no diagnose answer"
    grep -q '"kind":"stall"' "$dir/diagnose.json" || die "no stall found: $(head -c 600 "$dir/diagnose.json")"
fi
echo "rcblocks ($mode): a pass over the running ring decoded $per blocks${sections:+ (the job stored $sections sections)}"
