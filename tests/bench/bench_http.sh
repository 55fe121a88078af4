#!/bin/bash
# bench_http.sh: the collector's and the agent's memory under each HTTP flood
# of issue 29 (a benchmark, not run by ctest).
#
#   tests/bench/bench_http.sh BIN_DIR
#
# Both daemons run with their default limits and RLIMIT_NOFILE 1024 (a stock
# shell's); the clients are tests/e2e/hflood.py on 127.0.0.1. For each probe
# it prints the daemon's RSS before, its peak during the probe (VmHWM, reset
# before it through /proc/PID/clear_refs), its RSS after, and the slowest
# /healthz answer to a client polling from 127.0.0.2 meanwhile:
#   body     4 requests with a 1 GiB body at once
#   header   4 requests with a 64 MiB header at once
#   url      4 requests with a 64 MiB URL at once
#   slowloris 5000 connections trickling their headers, 15 s
#   idle     1100 idle connections, 12 s
#   sse      20 /api/v1/live clients that never read, 40 s (collector)
#   timeline 8 timeline clients that never read, 40 s (collector; a ~90 MB
#            timeline each)
set -euo pipefail
bin=$(cd "$1" && pwd)
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
ulimit -Sn 1024

# probe NAME PID ADDR:PORT SECS CMD...: run CMD (a flood) and report.
probe() {
    local name=$1 pid=$2 addr=$3 secs=$4
    shift 4
    local before fp
    before=$(vm "$pid" VmRSS)
    echo 5 > "/proc/$pid/clear_refs"
    "$@" > /dev/null 2>&1 &
    fp=$!
    "$hflood" health "$addr" "$secs" "$dir/health" --src 127.0.0.2 || true
    wait "$fp" || true
    printf '%-10s %-9s RSS %7s kB before, peak %7s kB, after %7s kB; /healthz slowest %s s\n' "$name" \
        "$daemon" "$before" "$(vm "$pid" VmHWM)" "$(vm "$pid" VmRSS)" "$(cat "$dir/health")"
}
four() { for _ in 1 2 3 4; do timeout 60 "$hflood" "$@" & done; wait; }  # in a subshell of its own
floods() {  # floods PID ADDR:PORT: the probes both daemons take
    local pid=$1 a=$2 k mib
    for k in body header url; do
        mib=64; [ $k = body ] && mib=1024
        probe $k "$pid" "$a" 3 four big $k "$a" $mib
    done
    probe slowloris "$pid" "$a" 15 "$hflood" hold "$a" 5000 15 --trickle
    probe idle "$pid" "$a" 12 "$hflood" hold "$a" 1100 12
}

"$bin/nsc-feed" --direct "$dir/db" --agents 1 --procs 4 --batches 48 > /dev/null
start_collector 0
daemon=collector
c="127.0.0.1:$http"
floods "${pids[collector]}" "$c"
probe sse "${pids[collector]}" "$c" 40 "$hflood" hold "$c" 20 40 --request /api/v1/live
probe timeline "${pids[collector]}" "$c" 40 "$hflood" hold "$c" 8 40 \
    --request "/api/v1/timeline?job=feed&comm=0xfeed&limit=1000000"
stop collector

run_agent 0
daemon=agent
floods "${pids[agent0]}" "$(cat "$dir/node0/agent.http")"
stop agent0
