#!/bin/bash
# bench_rcpass.sh BIN PLUGIN [RUNS] [SHORT] [LONG]: the CPU of one
# root-cause pass over a running job (issue 31: flat between a 10-minute
# and a 60-minute job). Not a ctest.
#
# A job is a ring of 2 nodes x 4 ranks (ranks as threads, the plugin at its
# default event mask, one agent per node, LMDB store) of SHORT collectives
# (default 2,000: 10 minutes at one collective every 300 ms) or LONG (12,000:
# 60 minutes), fed as fast as the emulator runs; then rank 0 hangs for 60 s
# (NSC_HANG_S: a pass on ClickHouse takes longer),
# so the job stays alive and idle and every pass analyses it as a running
# one (a job that ended before its passes were measured is an error). Once
# the live state saw its last collective and its ledger records are stored
# (their count still over two passes), the collector's ncclscope_collector_rootcause_cpu_seconds_total
# over NSC_PASSES passes (default 10, every 250 ms) gives the CPU per pass.
# Each run measures the four in turn, the pass reading the whole job
# (rootcause_window_seqs 0, what every pass did before) and the window
# (NSC_WINDOW, default 2048 as the collector's), so that both see the same
# load (NSC_WINDOWS, default "0 NSC_WINDOW": the windows measured); prints
# each, then the medians with the load average. The window
# bounds the collectives and ledger a pass reads, and its Send/Recv check
# reads the raw events since the last pass settled them (docs/collector-http.md,
# "Root-cause metrics"), rootcause_p2p_lag_ms behind the latest event:
# NSC_P2P_LAG_MS (default the collector's 10 s) sets it, as the job here
# spans seconds where a real one spans its minutes (a collector that has no
# such setting ignores it). NSC_STORE=clickhouse runs the collector on two
# local ClickHouse shards behind a front (tests/clickhouse/lib.sh) instead of
# LMDB, and prints the bytes of ClickHouse's answers a pass read
# (ncclscope_collector_query_read_bytes_total) beside its CPU: the servers'
# work is not in the collector's CPU.
set -euo pipefail
bin=$1 plugin=$2 runs=${3:-3} short=${4:-2000} long=${5:-12000}
nodes=2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../e2e/lib.sh"
store_args=()
if [ "${NSC_STORE:-lmdb}" = clickhouse ]; then
    . "$here/../clickhouse/lib.sh"
    ch_require
    ch_cluster_store
    store_args=(--store "$store" --ch-shards "$shards")
fi
passes=${NSC_PASSES:-10}
window=${NSC_WINDOW:-2048}
windows=${NSC_WINDOWS:-0 $window}
[ -z "${NSC_P2P_LAG_MS:-}" ] || export NCCLSCOPE_ROOTCAUSE_P2P_LAG_MS=$NSC_P2P_LAG_MS
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
load() { cut -d' ' -f1 /proc/loadavg; }

# ledger_still: the stored ledger count did not move over two passes (on
# ClickHouse, which counts no record, the events taken moved by fewer than
# 1,000: the hung ranks' agents keep sending a few).
stored=ncclscope_collector_ledger_records_stored_total trickle=0
[ ${#store_args[@]} = 0 ] || stored=ncclscope_collector_events_in_total trickle=1000
ledger_still() {
    local s0 p0
    s0=$(collector_metric $stored)
    p0=$(collector_metric ncclscope_collector_rootcause_passes_total)
    wait_until 30 collector_metric_above ncclscope_collector_rootcause_passes_total $((p0 + 1)) || return 1
    [ "$s0" -gt 0 ] && [ "$(collector_metric $stored)" -le $((s0 + trickle)) ]
}

# read_bytes: the bytes the collector's loads read of ClickHouse (0 on LMDB).
read_bytes() {
    local b
    b=$(collector_metric ncclscope_collector_query_read_bytes_total)
    echo "${b:-0}"
}

# per_pass WINDOW ITERS: ms of CPU per pass into $ms, KiB read of ClickHouse
# per pass into $kib, a fresh collector and job.
per_pass() {
    local n p0 c0 p1 c1 ok
    rm -rf "$dir/db" "$dir"/node*
    start_all --rootcause-interval-ms 250 --rootcause-trigger-ms 0 --hang-ms 600000 --rootcause-window-seqs "$1" \
        "${store_args[@]}"
    NCCLSCOPE_JOB="rc-$1-$2" "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --scenario hang \
        --nodes $nodes --ranks-per-node 4 --ranks-as threads --iters $(($2 + 1)) --hang-rank 0 --hang-after "$2" \
        --hang-ms $((${NSC_HANG_S:-60} * 1000)) >"$dir/emu.log" 2>&1 &
    pids[emu]=$!
    wait_until 600 status_has "any(f['max_seq'] >= $2 - 1 for j in s['jobs'] if j['job'] == 'rc-$1-$2'
        for c in j['comms'] for f in c['funcs'])" || die "the job never reached its hang"
    ok=0
    for _ in $(seq 100); do ledger_still && { ok=1; break; }; done
    [ $ok = 1 ] || die "the job's ledger did not settle"
    p0=$(collector_metric ncclscope_collector_rootcause_passes_total)
    c0=$(collector_metric ncclscope_collector_rootcause_cpu_seconds_total)
    b0=$(read_bytes)
    wait_until 120 collector_metric_above ncclscope_collector_rootcause_passes_total $((p0 + passes - 1)) ||
        die "no $passes passes"
    p1=$(collector_metric ncclscope_collector_rootcause_passes_total)
    c1=$(collector_metric ncclscope_collector_rootcause_cpu_seconds_total)
    kib=$((($(read_bytes) - b0) / (p1 - p0) / 1024))
    status_has "any(p['state'] == 'alive' for p in s['processes'] if p['job'] == 'rc-$1-$2')" ||
        die "the job ended before its passes were measured: $(python3 -c 'import json, sys
print(sorted({p["state"] for p in json.load(open(sys.argv[1]))["processes"]}))' "$dir/status.json")"
    # the rank processes first: the launcher killed leaves them hanging
    pkill -P "${pids[emu]}" 2>/dev/null || true
    kill "${pids[emu]}" 2>/dev/null || true
    wait "${pids[emu]}" 2>/dev/null || true
    for n in collector emu agent0 agent1; do
        kill "${pids[$n]}" 2>/dev/null || true
        wait "${pids[$n]}" 2>/dev/null || true
        unset "pids[$n]"
    done
    ms=$(awk -v c="$c1" -v d="$c0" -v p="$p1" -v q="$p0" 'BEGIN { printf "%.2f", (c - d) * 1000 / (p - q) }')
}

for i in $(seq "$runs"); do
    for w in $windows; do
        for len in "$short" "$long"; do
            per_pass "$w" "$len"
            echo "$ms" >>"$dir/w$w-$len"
            echo "$kib" >>"$dir/k$w-$len"
            echo "run $i window $w job $len collectives: $ms ms CPU per pass, $kib KiB read per pass (load $(load))"
        done
    done
done
for w in $windows; do
    for len in "$short" "$long"; do
        echo "median window $w job $len: $(median <"$dir/w$w-$len") ms CPU per pass" \
             "(range $(sort -n "$dir/w$w-$len" | head -1)-$(sort -n "$dir/w$w-$len" | tail -1), $runs runs)," \
             "$(median <"$dir/k$w-$len") KiB read per pass"
    done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
