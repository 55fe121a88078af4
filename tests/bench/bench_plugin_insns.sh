#!/bin/bash
# bench_plugin_insns.sh: instructions per plugin call, counted by callgrind
# (a benchmark, not run by ctest; docs/benchmarks.md, "## Plugin"). A count,
# not a time: the same on a loaded machine as on a quiet one.
#
#   tests/bench/bench_plugin_insns.sh BUILD_DIR API [PLUGIN ...]
#
# `ncclscope-emu --bench` (startEvent, recordEventState, stopEvent of a Coll,
# 50,000 times) with a test receiver on the socket, under
# `valgrind --tool=callgrind --separate-threads=yes`; a plugin's figure is the
# calling thread's instructions (the bench loop inclusive) per call, less the
# empty plugin's. PLUGIN defaults to BUILD_DIR's own.
set -euo pipefail
build=$(cd "$1" && pwd) api=$2
shift 2
[ $# -gt 0 ] || set -- "$build/lib/libnccl-profiler-ncclscope.so"
iters=50000
d=$(mktemp -d)
rp=
trap '[ -z "$rp" ] || { kill "$rp"; wait "$rp"; } 2>/dev/null || true; rm -rf "$d"' EXIT
ep="ipc://$d/recv.sock"
"$build/bin/ncclscope-test-receiver" "$ep" "$d/recv.json" --ready "$d/ready" >/dev/null &
rp=$!
for _ in $(seq 200); do [ -e "$d/ready" ] && break; sleep 0.05; done
[ -e "$d/ready" ] || { echo "bench_plugin_insns: the receiver did not start" >&2; exit 1; }

# per_call PLUGIN: the bench thread's instructions per call
per_call() {
    rm -f "$d"/cg.*
    NCCLSCOPE_ENDPOINT="$ep" valgrind --tool=callgrind --separate-threads=yes \
        --callgrind-out-file="$d/cg.%p" "$build/bin/ncclscope-emu" --plugin "$1" --bench \
        --api "$api" --bench-iters "$iters" --reps 1 >/dev/null 2>"$d/valgrind.log"
    local f best=0 n
    for f in "$d"/cg.*; do
        n=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
            awk '/bench_main/ { gsub(",", "", $1); if ($1 + 0 > m) m = $1 + 0 } END { print m + 0 }')
        [ "$n" -gt "$best" ] && best=$n
    done
    [ "$best" -gt 0 ] || { echo "bench_plugin_insns: no bench thread in $1's profile" >&2; exit 1; }
    echo "$best $iters" | awk '{ printf "%.1f\n", $1 / (3 * $2) }'
}

empty=$(per_call "$build/lib/libnccl-profiler-empty.so")
echo "api v$api: empty plugin $empty instructions per call (the bench loop's)"
for p in "$@"; do
    mine=$(per_call "$p")
    echo "$p $mine" | awk -v e="$empty" '{ printf "%s: %.1f instructions per call over the empty plugin\n", $1, $2 - e }'
done
