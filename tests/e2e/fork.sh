#!/bin/bash
# fork.sh: fork() in a profiled process, end to end (docs/plugin-internals.md, "Life
# cycle"): nsc-e2e-fork-job (real plugin) -> ncclscope-agent -> collector.
# The job forks idle children that live for many heartbeat periods (as
# DataLoader workers do) and one child that inits a communicator of its own.
# The agent and the collector must know exactly two processes, the parent and
# the calling child, and the store must hold exactly their events.
#
#   fork.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2 mode=fork nodes=1
. "$(dirname "$0")/lib.sh"

start_all
# A child that calls in allocates (its ZeroMQ context and threads). Under ASan
# (clang 14's runtime takes no allocator lock around fork) that can wait
# forever on a lock one of the parent's threads held at the fork; so the job
# forks only once the agent has its first events (its shipper is idle then,
# the next heartbeat a second away), and its exit-time leak check, which
# locks the whole allocator, is off. Release builds are not affected: glibc's
# malloc is fork-safe. The idle children live for 2.5 heartbeat periods.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 NCCLSCOPE_JOB=$job \
    NCCLSCOPE_RUNDIR=$dir/node0 NCCLSCOPE_EVENT_MASK=all NCCLSCOPE_HEARTBEAT_MS=1000 \
    "$bin/nsc-e2e-fork-job" "$plugin" --idle 4 --child-ms 2500 --calling \
    --go "$dir/go" --pids "$dir/pids.json" 2>"$dir/job.log" &
pids[job]=$!
wait_until 20 metric_above 0 ncclscope_agent_events_out_total 99 || die "the agent did not get the job's first events"
touch "$dir/go"
wait "${pids[job]}" || die "the job or one of its children failed: $(cat "$dir/job.log")"
unset "pids[job]"
wait_until 20 delivered 0 || die "node 0 did not deliver its spool"
started=$(metric 0 ncclscope_agent_processes_started_total)
[ "$started" = 2 ] || die "the agent saw $started processes, not the parent and the calling child"
# parent: 200 KernelLaunch + its Coll; calling child: 50 KernelLaunch
wait_until 20 collector_metric_is ncclscope_collector_store_events 251 ||
    die "the store holds $(collector_metric ncclscope_collector_store_events) events, not 251"
want="json.load(open('$dir/pids.json'))"
status_has "sorted(p['pid'] for p in s['processes']) == sorted([$want['parent'], $want['calling']])" ||
    die "the collector's processes are not the parent and the calling child: $(cat "$dir/status.json") vs $(cat "$dir/pids.json")"
stop agent0
stop collector
echo "fork.sh: ok"
