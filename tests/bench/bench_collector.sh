#!/bin/bash
# bench_collector.sh BIN [RUNS]: collector ingest, events/s committed to LMDB
# from pre-encoded batches (nsc-feed: 8 agents x 2 processes, 50 collectives
# of the realistic mix per section), against the baseline in the same run:
# the same sections decoded and put straight into a store (nsc-feed --direct,
# no network, no collector). Prints every run and the medians, and the
# collector's CPU time per event (all its threads: on a shared machine it
# moves much less than the rate). Not a ctest.
set -euo pipefail
bin=$1
RUNS=${2:-5}
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
T=$dir
ARGS="--agents 8 --procs 2 --colls 50 --batches 250 --pool 16"
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
i=0
while [ $i -lt "$RUNS" ]; do
    rm -rf "$T/db" "$T/direct"; mkdir "$T/direct"
    "$bin/nsc-feed" --direct "$T/direct" $ARGS | awk -F= '/events_per_s/{print $2}' >> "$T/base"
    start_collector 0 --map-initial-mb 1024
    CP=${pids[collector]}
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" $ARGS --window 64 --timeout-ms 120000 \
        > "$T/out"
    awk -F= '/events_per_s/{print $2}' "$T/out" >> "$T/coll"
    # utime + stime in clock ticks (fields 14, 15 after the command name)
    TICKS=$(sed 's/.*) //' /proc/$CP/stat | awk '{print $12 + $13}')
    awk -F= -v t="$TICKS" -v hz="$(getconf CLK_TCK)" '/^events=/{printf "%.0f\n", t / hz * 1e9 / $2}' \
        "$T/out" >> "$T/cpu"
    stop collector
    echo "run $i: direct $(tail -1 "$T/base") ev/s, collector $(tail -1 "$T/coll") ev/s," \
         "collector CPU $(tail -1 "$T/cpu") ns/event (load $(cut -d' ' -f1 /proc/loadavg))"
    i=$((i + 1))
done
echo "median direct (baseline): $(median < "$T/base") events/s"
echo "median collector:         $(median < "$T/coll") events/s"
echo "median collector CPU:     $(median < "$T/cpu") ns/event"
