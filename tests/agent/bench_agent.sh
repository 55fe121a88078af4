#!/bin/bash
# bench_agent.sh: agent ingest throughput and memory (a benchmark, not run by ctest).
#
#   tests/agent/bench_agent.sh BIN_DIR BATCHES EVENTS_PER_BATCH [AGENT_ARGS...]
#
# One nsc-agent-send stream of BATCHES x EVENTS Coll events (blocking sends, so
# nothing is dropped) into a fresh agent with its spool in a temp dir. Prints the
# events/s until /metrics shows every event in, and the agent's resident memory
# sampled every 20 ms (median and max) and its peak (VmHWM).
set -euo pipefail
bin=$1 batches=$2 events=$3
shift 3
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
run_agent 0 --spool-max-mb 4096 "$@"
apid=${pids[agent0]}
total=$((batches * events))
(while kill -0 $apid 2>/dev/null; do awk '/VmRSS/ {print $2}' /proc/$apid/status; sleep 0.02; done >"$dir/rss") &
t0=$(date +%s.%N)
"$bin/nsc-agent-send" "ipc://$dir/node0/agent.sock" "$batches" "$events" 64 0
got=0
for _ in $(seq 3000); do
    got=$(metric 0 ncclscope_agent_events_in_total)
    [ "$got" = "$total" ] && break
    sleep 0.01
done
t1=$(date +%s.%N)
hwm=$(awk '/VmHWM/ {print $2}' /proc/$apid/status)
stop agent0
sort -n "$dir/rss" | awk -v n="$total" -v got="$got" -v t0="$t0" -v t1="$t1" -v hwm="$hwm" \
    '{ a[NR] = $1 } END { printf "events %d/%d in %.3f s: %.2f M events/s; RSS KiB median %d max %d (%d samples), VmHWM %d\n",
       got, n, t1 - t0, n / (t1 - t0) / 1e6, a[int(NR / 2) + 1], a[NR], NR, hwm }'
du -sh "$dir/node0/spool"
