#!/bin/bash
# bench_drain.sh BIN_DIR [PERF_OUT]: the collector alone at full speed. Fills an
# agent spool with 2 M Coll events (4 nsc-agent-send x 500 batches x 1000
# events, agent with no collector), then starts a fresh collector and times the
# agent draining the spool into it; prints the CPU ticks (1 tick = 10 ms) of
# each collector thread (main, ZeroMQ reaper and I/O, writer, ingest) and the
# drain rate. With PERF_OUT, perf records the collector meanwhile. Not a ctest;
# docs/benchmarks.md, "Collective index".
set -u
bin=$1 perfout=${2:-}
d=$(mktemp -d /tmp/drain-XXXX)
"$bin/ncclscope-agent" --rundir $d --http 127.0.0.1:0 --spool-max-mb 4096 2>/dev/null & a=$!
for _ in $(seq 500); do [ -e $d/agent.http ] && break; sleep 0.01; done
for i in 1 2 3 4; do "$bin/nsc-agent-send" ipc://$d/agent.sock 500 1000 64 0 & done; wait %2 %3 %4 %5 2>/dev/null
"$bin/nsc-bench-wait" "http://$(cat $d/agent.http)/metrics" ncclscope_agent_events_out_total=2000000 >/dev/null || exit 1
kill -TERM $a; wait $a
"$bin/ncclscope-collector" --listen tcp://127.0.0.1:0 --http off --db $d/db --port-file $d/ports 2>/dev/null & c=$!
for _ in $(seq 500); do grep -q zmq $d/ports 2>/dev/null && break; sleep 0.01; done
[ -n "$perfout" ] && { perf record -e cycles:u --call-graph dwarf,16384 -F 1000 -p $c -o $perfout 2>/dev/null & p=$!; sleep 0.3; }
rm -f $d/agent.http
"$bin/ncclscope-agent" --rundir $d --http 127.0.0.1:0 --spool-max-mb 4096 --collector tcp://127.0.0.1:$(awk '$1=="zmq"{print $2}' $d/ports) 2>/dev/null & a=$!
for _ in $(seq 500); do [ -e $d/agent.http ] && break; sleep 0.01; done
t0=$(date +%s.%N)
t1=$("$bin/nsc-bench-wait" "http://$(cat $d/agent.http)/metrics" ncclscope_agent_forward_events_acked_total=2000000) || exit 1
for t in /proc/$c/task/*; do echo "$(cat $t/comm) $(awk '{sub(/.*\) /,""); print $12+$13}' $t/stat)"; done | tr '\n' ' '
[ -n "$perfout" ] && { kill -INT $p; wait $p; }
kill -TERM $a $c; wait
echo "drain $(echo "2 / ($t1 - $t0)" | bc -l | cut -c1-5) Mev/s"
rm -rf $d
