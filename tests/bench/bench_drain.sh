#!/bin/bash
# bench_drain.sh BIN_DIR [PERF_OUT]: the collector alone at full speed. Fills an
# agent spool with 2 M Coll events (4 nsc-agent-send x 500 batches x 1000
# events, agent with no collector), then starts a fresh collector and times the
# agent draining the spool into it; prints the CPU ticks (1 tick = 10 ms) of
# each collector thread (main, ZeroMQ reaper and I/O, writer, ingest) and the
# drain rate. With PERF_OUT, perf records the collector meanwhile. Not a ctest;
# docs/benchmarks.md, "Collector" (history: docs/benchmarks-history.md, "Collective index").
set -euo pipefail
bin=$1 perfout=${2:-}
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
agent_metrics() { echo "http://$(cat "$dir/node0/agent.http")/metrics"; }
run_agent 0 --spool-max-mb 4096
for i in 1 2 3 4; do "$bin/nsc-agent-send" "ipc://$dir/node0/agent.sock" 500 1000 64 0 & pids[send$i]=$!; done
for i in 1 2 3 4; do wait "${pids[send$i]}"; unset "pids[send$i]"; done
"$bin/nsc-bench-wait" "$(agent_metrics)" ncclscope_agent_events_out_total=2000000 >/dev/null
stop agent0
start_collector 0
c=${pids[collector]}
if [ -n "$perfout" ]; then
    perf record -e cycles:u --call-graph dwarf,16384 -F 1000 -p "$c" -o "$perfout" 2>/dev/null &
    pids[perf]=$!
    sleep 0.3
fi
run_agent 0 --spool-max-mb 4096 --collector "tcp://127.0.0.1:$port"
t0=$(date +%s.%N)
t1=$("$bin/nsc-bench-wait" "$(agent_metrics)" ncclscope_agent_forward_events_acked_total=2000000)
for t in /proc/$c/task/*; do echo "$(cat "$t/comm") $(awk '{sub(/.*\) /,""); print $12+$13}' "$t/stat")"; done | tr '\n' ' '
if [ -n "$perfout" ]; then kill -INT "${pids[perf]}"; wait "${pids[perf]}"; unset "pids[perf]"; fi
stop agent0
stop collector
echo "drain $(echo "2 / ($t1 - $t0)" | bc -l | cut -c1-5) Mev/s"
