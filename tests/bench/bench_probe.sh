#!/bin/bash
# bench_probe.sh: what the clock probes cost the agent and the collector (a
# benchmark, not run by ctest).
#
#   tests/bench/bench_probe.sh BIN_DIR [SECONDS]
#
# A collector and one idle agent (no job) on loopback, in three cases:
# "off" (probe_ms 0: no probes), "sleep" (probes, probe_spin_us 0: the agent
# sleeps until an answer comes) and "spin" (the defaults: the agent polls
# without sleeping while an answer is due). After the first, fast probes it
# reads for SECONDS (default 10) the CPU time of every thread of the agent
# and of the collector from /proc/PID/task/*/schedstat (nanoseconds) and the
# agent's clock_probes_total, and prints per case: agent and collector CPU
# in us per second, probes per second. Three rounds, the cases alternating;
# the medians are printed last. A case's cost is its CPU minus "off"'s.
set -euo pipefail
bin=$(cd "$1" && pwd)
secs=${2:-10}
nodes=1
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"

cpu_ns() {  # cpu_ns PID: CPU time of all its threads
    cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d\n", s }'
}
probes() {
    curl -sf -m 5 "http://$(cat "$dir/node0/agent.http")/metrics" |
        awk '$1 == "ncclscope_agent_clock_probes_total" { print $2 }'
}

run_one() {  # run_one CASE: prints "agent_us/s collector_us/s probes/s"
    local args=()
    case $1 in
    off) args=(--probe-ms 0) ;;
    sleep) args=(--probe-spin-us 0) ;;
    esac
    start_collector 0
    start_agent 0 "${args[@]}"
    sleep 2
    local a0 c0 p0 a1 c1 p1
    a0=$(cpu_ns "${pids[agent0]}") c0=$(cpu_ns "${pids[collector]}") p0=$(probes)
    sleep "$secs"
    a1=$(cpu_ns "${pids[agent0]}") c1=$(cpu_ns "${pids[collector]}") p1=$(probes)
    stop agent0
    stop collector
    rm -rf "$dir/db" "$dir/node0"
    awk -v a=$((a1 - a0)) -v c=$((c1 - c0)) -v p=$((${p1:-0} - ${p0:-0})) -v s="$secs" \
        'BEGIN { printf "%.0f %.0f %.1f\n", a / 1e3 / s, c / 1e3 / s, p / s }'
}

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

cases=(off sleep spin)
declare -A res=()
for round in 1 2 3; do
    for c in "${cases[@]}"; do
        r=$(run_one "$c")
        echo "round $round $c: agent_us/s collector_us/s probes/s = $r (load $(cut -d' ' -f1 /proc/loadavg))"
        res[$c]+="$r"$'\n'
    done
done
for c in "${cases[@]}"; do
    echo "median $c: agent $(printf %s "${res[$c]}" | awk NF | cut -d' ' -f1 | median) us/s," \
        "collector $(printf %s "${res[$c]}" | awk NF | cut -d' ' -f2 | median) us/s," \
        "probes $(printf %s "${res[$c]}" | awk NF | cut -d' ' -f3 | median)/s"
done
