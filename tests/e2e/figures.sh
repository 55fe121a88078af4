#!/bin/bash
# figures.sh: the figures of a collective (docs/api-figures.md, "Figures") agree
# across every view and are possible. The full pipeline on loopback
# (ncclscope-emu with the real plugin, one agent per simulated node, a
# collector) runs the demo's jobs, 2 nodes x 4 ranks: an AllReduce with PXN
# and rank 5 late by 10 ms ("strag": more than a loaded machine's pauses), a ring AllReduce over a 4x slow link
# node0 -> node1 ("link": its receiver arrives last, a straggler of no view),
# and the same with rank 5 late too ("slowlink"); and a job read while rank
# 3 never arrives at a collective the others wait in ("hang": one hung
# collective in every view). Once delivered, the
# agents stop, and each job is read through the API (collectives, stats, the
# web view's stats, diagnose, links, the ledger, status, /metrics) and the
# CLI (--json and text): figures_check.py compares them, and
# live_ledger_check.py the durations status and /metrics count with the
# collectives endpoint's. The collector stores its clock
# models now and then, and views read across a store see other aligned
# times: a job is read again until one reading agrees, three times at most
# among readings that no store came between (the collector's count of
# models stored did not move), eight in all. Then, the collector stopped,
# nsc-e2e-clock-check --check-bounds: every GPU time's bound, in the timeline
# and in the collectives, holds the emulator's truth; it prints the median
# bound.
#
#   figures.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=2
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

# hang_ms 1 s: the hang job's in-flight ledger records (agents) and its hung
# collective (collector) come within the test
start_collector 0 --hang-ms 1000
for n in $(seq 0 $((nodes - 1))); do start_agent $n --hang-ms 1000; done
run_to_end strag --ranks-per-node 4 --scenario pxn --iters 40 --count 1048576 --slow-rank 5 --slow-us 10000
ring=(--ranks-per-node 4 --scenario ring --iters 12 --channels 2 --count 4194304 --chunk-size 2097152
      --slow-link 0:1:4 --seed 3)
run_to_end link "${ring[@]}"
run_to_end slowlink "${ring[@]}" --slow-rank 5 --slow-us 4000
# hang: rank 3 stops before AllReduce seq 5 and the others wait in it for
# 20 s, the job read meanwhile (once status sees rank 3 lag past hang_ms).
NCCLSCOPE_JOB=hang "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --nodes "$nodes" --ranks-per-node 4 \
    --scenario hang --hang-rank 3 --hang-after 5 --hang-ms 20000 --iters 8 --summary "$dir/emu-hang.json" \
    >"$dir/emu-hang.log" 2>&1 &
hang_emu=$!

url=http://127.0.0.1:$http
cli() { "$bin/ncclscope" --collector "$url" "$@"; }
get() { curl -sf -m 30 "$url/api/v1/$1"; }
# read JOB STRAGGLER: every view of JOB's communicator into $dir/JOB, checked.
read_views() {
    local job=$1 out=$dir/$1 comm seqs
    mkdir -p "$out"
    comm=$(get "comms?job=$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
    get "collectives?job=$job&comm=$comm&limit=100000" >"$out/collectives.ndjson"
    get "stats?job=$job&comm=$comm" >"$out/stats.json"
    # the communicator page's stats: the seqs of the collectives it shows
    seqs=$(python3 -c 'import json,sys
s=[c["seq"] for c in map(json.loads, open(sys.argv[1])) if c["kind"] == "collective"][-60:]
print("%d-%d" % (min(s), max(s)))' "$out/collectives.ndjson")
    get "stats?job=$job&comm=$comm&seq=$seqs" >"$out/stats_web.json"
    get "diagnose?job=$job&comm=$comm" >"$out/diagnose.json"
    get "links?job=$job&comm=$comm" >"$out/links.json"
    get "ledger?job=$job&comm=$comm&limit=1000000" >"$out/ledger.ndjson"
    cli --json links --job "$job" --comm "$comm" >"$out/cli_links.json"
    get status >"$out/status.json"
    curl -sf -m 30 "$url/metrics" >"$out/metrics.txt"
    cli --json collectives --job "$job" --comm "$comm" --limit 100000 >"$out/cli_collectives.ndjson"
    cli --json stats --job "$job" --comm "$comm" >"$out/cli_stats.json"
    cli --raw collectives --job "$job" --comm "$comm" --limit 100000 >"$out/cli_collectives.txt"
    cli --raw stats --job "$job" --comm "$comm" >"$out/cli_stats.txt"
    python3 "$here/figures_check.py" "$out" "$job" "$2" && python3 "$here/live_ledger_check.py" "$out" "$job" "$comm"
}
# views JOB STRAGGLER: read_views until a reading agrees: three at most
# during which the collector stored no clock model, eight in all.
views() {
    local i calm=0 before after
    for i in 1 2 3 4 5 6 7 8; do
        before=$(collector_metric ncclscope_collector_clock_models_stored_total)
        read_views "$@" && return 0
        after=$(collector_metric ncclscope_collector_clock_models_stored_total)
        echo "$1: reading $i disagreed; clock models stored meanwhile: $((after - before))"
        [ "$after" = "$before" ] && calm=$((calm + 1))
        [ $calm -lt 3 ] || break
    done
    die "$1: the views disagree or show an impossible figure ($i readings, $calm with no clock model stored meanwhile)"
}
wait_until 15 status_has '[c for j in s["jobs"] if j["job"] == "hang" for c in j["comms"] if c["lagging"]]' ||
    die "hang: no rank lagging: $(cat "$dir/status.json")"
views hang hang
wait $hang_emu || die "hang: the emulator failed: $(tail -3 "$dir/emu-hang.log")"
for n in $(seq 0 $((nodes - 1))); do stop agent$n; done
views strag 5:10000000
views link none
views slowlink any
[ "$(collector_metric ncclscope_collector_clock_models_stored_total)" -ge "$nodes" ] || die "fewer clock models stored than hosts"
stop collector
for job in strag link slowlink; do
    "$bin/nsc-e2e-clock-check" --check-bounds "$dir/emu-$job.json" "$dir/db" "$job" | grep bounds= ||
        die "$job: a GPU time's bound misses the truth"
done
echo "figures.sh: ok"
