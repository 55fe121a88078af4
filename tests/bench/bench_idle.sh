#!/bin/bash
# bench_idle.sh: what the plugin costs a rank process that records nothing
# (a benchmark, not run by ctest).
#
#   tests/bench/bench_idle.sh BIN_DIR [PLUGIN ...]
#
# Between collectives (compute, data loading, a checkpoint) a rank records
# nothing for seconds, but its shipper thread keeps waking. For each PLUGIN
# (default: BIN_DIR/../lib/libnccl-profiler-ncclscope.so; give an older build's
# .so as a second one for a same-run baseline) and for each of two cases,
# "agent" (an ncclscope-agent takes the batches) and "none" (no agent: the
# socket is absent), the emulator runs 4 rank processes that each issue one
# collective, then sit idle for 6 s (--pace-us). From the 2nd to the 5th
# second of that idle time it reads, for every thread named ncclscope-ship,
# the voluntary context switches (wake-ups) and the CPU time (utime + stime,
# in clock ticks) from /proc, and prints per process: wake-ups/s and CPU
# ms/s. The agent has no collector (it spools). Three runs of each; the
# medians are printed last.
set -euo pipefail
bin=$(cd "$1" && pwd)
shift
plugins=("$@")
[ ${#plugins[@]} -gt 0 ] || plugins=("$bin/../lib/libnccl-profiler-ncclscope.so")
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
tick_ms=$((1000 / $(getconf CLK_TCK)))

# ship_stats: "WAKEUPS CPU_TICKS" summed over the shipper threads of the
# emulator's worker processes
ship_stats() {
    local w=0 c=0 p t v s
    for p in $(pgrep -f -- --_worker); do
        for t in /proc/$p/task/*; do
            [ "$(cat "$t/comm" 2>/dev/null)" = ncclscope-ship ] || continue
            v=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null) || continue
            s=$(awk '{print $14 + $15}' "$t/stat" 2>/dev/null) || continue
            w=$((w + ${v:-0})) c=$((c + ${s:-0}))
        done
    done
    echo "$w $c"
}

run_one() {  # run_one PLUGIN CASE: prints "wakeups/s/proc cpu_ms/s/proc"
    local plugin=$1 case=$2
    rm -rf "$dir/node0" && mkdir -p "$dir/node0"
    [ "$case" != agent ] || run_agent 0
    NCCLSCOPE_EVENT_MASK=all "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --scenario coll \
        --nodes 1 --ranks-per-node 4 --iters 1 --channels 1 --pace-us 6000000 >"$dir/emu.log" 2>&1 &
    local emu=$!
    sleep 2
    local a b
    a=$(ship_stats)
    sleep 3
    b=$(ship_stats)
    wait $emu
    [ "$case" != agent ] || stop agent0
    set -- $a $b
    awk -v w=$(($3 - $1)) -v c=$(($4 - $2)) -v t=$tick_ms 'BEGIN { printf "%.0f %.2f\n", w / 3 / 4, c * t / 3 / 4 }'
}

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

for i in 1 2 3; do
    for case in agent none; do
        for p in "${plugins[@]}"; do
            r=$(run_one "$p" "$case")
            echo "run $i  $case  $p: wake-ups/s $(echo "$r" | cut -d' ' -f1), CPU ms/s $(echo "$r" | cut -d' ' -f2) per process (load $(cut -d' ' -f1 /proc/loadavg))"
            echo "$r" >>"$dir/all.$case.$(echo "$p" | md5sum | cut -c1-8)"
        done
    done
done
for case in agent none; do
    for p in "${plugins[@]}"; do
        f=$dir/all.$case.$(echo "$p" | md5sum | cut -c1-8)
        echo "median  $case  $p: wake-ups/s $(cut -d' ' -f1 "$f" | median), CPU ms/s $(cut -d' ' -f2 "$f" | median) per process"
    done
done
