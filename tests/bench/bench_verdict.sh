#!/bin/bash
# bench_verdict.sh BIN_DIR PLUGIN [RUNS] [NODES] [RANKS_PER_NODE] [FAULTS]:
# the time from a fault's onset to a right verdict (cause and place) from
# /api/v1/diagnose, on the ClickHouse store with two collectors each holding
# half of the agents (issue 31). Real processes on loopback: three
# clickhouse-server instances (two shards and the Distributed front,
# tests/clickhouse/lib.sh), collectors a and b (--store clickhouse://), one
# agent per simulated node (even nodes to a, odd to b), and ncclscope-emu
# with the real plugin at its default event mask: a ring of NODES x
# RANKS_PER_NODE ranks (defaults 8 x 4), ranks as threads (one process per
# node, so that many ranks fit a small machine; every rank has its own
# plugin context, events and ledger records, as under NCCL). Per run
# (RUNS per fault, default 10; FAULTS default "hang stall host_late
# slow_link", the place moving with the run) a new job:
#   hang       rank r stops before collective 6; the others wait 60 s in it
#   stall      rank r stops sending at collective 6 (channel 0, step 0); a
#              rank of another node hangs at collective 40, holding the job
#   host_late  rank r's host 4 ms late from collective 6 on
#   slow_link  node n's links to node n+1 at 1/4 bandwidth from collective 6 on
# (host_late and slow_link: NSC_ITERS collectives, default 500, one every
# 20 ms: about 10 s of job after the onset).
# verdict_poll.py asks both collectors for the job's diagnosis every 0.25 s
# while the job runs; once it ended, the answers are checked in order
# against the emulator's summary (tests/e2e/rootcause_check.py): the time
# from the fault's onset (the summary's true times) to the first answer
# whose verdict (first problem) names the fault's cause and place, and to
# the first that names it among its problems. Prints each run, then p50 and
# p90 of both per fault ("right": runs where one came). NSC_HANG_MS (default 2000) is the collectors'
# and agents' hang_ms (hang and stall are only found that long after their
# onset: docs/configuration.md). docs/benchmarks.md, "Time to a verdict".
#
# PLUGIN "feed": the ranks are timed ledger traffic instead (1,024 ranks do
# not fit this machine as emulated plugins: they drop events). nsc-vfeed
# (tests/bench/vfeed.c, vjob.c) plays the NODES agents in real time: what
# each sends its collector for a ring job of NODES x RANKS_PER_NODE ranks
# (one AllReduce every 20 ms) when agents keep raw events on their nodes
# (both collectors --detail on-demand): per 50 ms flush an a2c batch with
# each active process's section (definitions, counters), its ledger records
# (completed ones once the rank's part ended, with the network edges of the
# ranks that send or receive between nodes; in-flight ones hang_ms after a
# stuck collective's enqueue) and its life records; credit and acks, clock
# probes and samples; detail fetches answered empty. The same faults at
# the same places (hang: the rank never calls collective 6; stall: the last
# rank of node n stops channel 0 at step 0; host_late 4 ms; slow_link 4x),
# and its summary carries the emulator's fields that verdict_poll.py and
# rootcause_check.py read. Faithful to what the collectors see: the same
# messages, encoded by the real codecs (common/a2c.c, ledger.c, wire.c),
# at the agents' pace and volume; what is not exercised: the plugin, the
# agents' ledger builder and spool, and raw detail (the fed times follow
# vjob.c's model of a ring, not the emulator's). Each run's line adds the
# feed's records, its largest backlog of batches waiting for credit and its
# slowest ack. NSC_COLLECTOR_ARGS: more options for both collectors;
# NSC_VERDICT_CHECK=1: fail when a run finds no right verdict (the ctest
# clickhouse_verdict_feed: 64 ranks, one hang); NSC_FEED_ARGS: more options
# for nsc-vfeed (--max-inflight N: the agents' max_inflight).
# NSC_VERDICT_BASE=DIR (feed only): A/B in one run: two more collectors
# from DIR's ncclscope-collector (another build) on the same cluster, the
# runs alternating between the two pairs (odd runs DIR's, "B"); p50 and p90
# per build.
bin=$1 plugin=$2 runs=${3:-10} nodes=${4:-8} rpn=${5:-4} faults=${6:-"hang stall host_late slow_link"} mode=bench
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/../clickhouse/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
ch_require
ranks=$((nodes * rpn))
hang_ms=${NSC_HANG_MS:-2000} iters=${NSC_ITERS:-500}
ch_cluster
store="clickhouse://127.0.0.1:${chhttp[front]}/nsc?cluster=nsc"
shards="127.0.0.1:${chhttp[shard0]},127.0.0.1:${chhttp[shard1]}"
detail=()
[ "$plugin" = feed ] && detail=(--detail on-demand)  # what the fed agents keep on their nodes
# shellcheck disable=SC2206
detail+=(${NSC_COLLECTOR_ARGS:-})
# pair ID0 ID1: a collector of $bin for each half of the agents; its ports
# in pair_port[ID], pair_http[ID].
declare -A pair_port=() pair_http=()
pair() {
    for id in "$@"; do
        start_collector 0 --store "$store" --ch-shards "$shards" --collector-id "$id" --hang-ms "$hang_ms" "${detail[@]}"
        pids[collector_$id]=${pids[collector]} pair_port[$id]=$port pair_http[$id]=$http
        unset "pids[collector]"
    done
}
pair a b
port_a=${pair_port[a]} port_b=${pair_port[b]}
base=${NSC_VERDICT_BASE:-}
if [ -n "$base" ]; then
    [ "$plugin" = feed ] || die "NSC_VERDICT_BASE needs PLUGIN feed"
    own=$bin bin=$base
    pair c d
    bin=$own
fi
for n in $(seq 0 $((nodes - 1))); do
    p=$port_a
    [ $((n % 2)) = 1 ] && p=$port_b
    [ "$plugin" = feed ] || run_agent "$n" --host-name "node$n" --collector "tcp://127.0.0.1:$p" --hang-ms "$hang_ms"
done

# fault_args FAULT I: the emulator's fault for run I.
fault_args() {
    local r=$(($2 * 7 % ranks)) n=$(($2 % nodes))
    local edge=$((n * rpn + rpn - 1))  # its ring successor is on the next node
    case $1 in
    hang) echo "--scenario hang --hang-rank $r --hang-after 6 --hang-ms 15000 --iters 12" ;;
    stall) echo "--scenario hang --stall $edge:6:0:0 --hang-rank $(((edge + rpn) % ranks)) --hang-after 9 --hang-ms 15000 --iters 12" ;;
    host_late) echo "--scenario ring --slow-rank $r --slow-us 4000 --fault-from 6 --iters $iters --pace-us 20000" ;;
    slow_link) echo "--scenario ring --slow-link $n:$(((n + 1) % nodes)):4 --fault-from 6 --iters $iters --pace-us 20000" ;;
    esac
}

# feed_args FAULT I: nsc-vfeed's fault for run I, at the places of fault_args.
feed_args() {
    local r=$(($2 * 7 % ranks)) n=$(($2 % nodes))
    case $1 in
    hang) echo "--fault hang --place $r --from 6" ;;
    stall) echo "--fault stall --place $((n * rpn + rpn - 1)) --from 6" ;;
    host_late) echo "--fault host_late --place $r --from 6 --iters $iters" ;;
    slow_link) echo "--fault slow_link --place $n --from 6 --iters $iters" ;;
    esac
}

# build_of I: the pair of collectors run I goes to (A, or B: NSC_VERDICT_BASE's).
build_of() {
    [ -n "$base" ] && [ $(($1 % 2)) = 1 ] && echo B || echo A
}

# one FAULT I: run I of FAULT; prints verdict_poll.py first's line.
one() {
    local f=$1 i=$2 out="$dir/$1-$2" x=a y=b
    [ "$(build_of "$i")" = B ] && x=c y=d
    mkdir -p "$out"
    if [ "$plugin" = feed ]; then
        # shellcheck disable=SC2046,SC2086
        "$bin/nsc-vfeed" --collectors "tcp://127.0.0.1:${pair_port[$x]},tcp://127.0.0.1:${pair_port[$y]}" --nodes "$nodes" --rpn "$rpn" \
            --job "verdict-$f-$i" --hang-ms "$hang_ms" $(feed_args "$f" "$i") ${NSC_FEED_ARGS:-} --summary "$out/emu.json" >"$out/emu.log" 2>&1 &
    else
        # shellcheck disable=SC2046
        NCCLSCOPE_JOB="verdict-$f-$i" "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --nodes "$nodes" \
            --ranks-per-node "$rpn" --ranks-as threads --channels 2 --count 4194304 --chunk-size 2097152 --seed $((i + 1)) \
            $(fault_args "$f" "$i") --summary "$out/emu.json" >"$out/emu.log" 2>&1 &
    fi
    local emu=$!
    "$here/verdict_poll.py" poll "$out" "verdict-$f-$i" 0.25 "$out/stop" a=127.0.0.1:"${pair_http[$x]}" b=127.0.0.1:"${pair_http[$y]}" &
    local poller=$!
    wait $emu || true
    touch "$out/stop"
    wait $poller || true
    [ -s "$out/emu.json" ] || die "$f run $i: the emulator wrote no summary: $(tail -3 "$out/emu.log")"
    "$here/verdict_poll.py" first "$out" "$out/emu.json" "$f"
}

for f in $faults; do
    : >"$dir/$f.A.times"
    : >"$dir/$f.B.times"
    for i in $(seq 0 $((runs - 1))); do
        t=$(one "$f" "$i")
        fed='' ab=''
        [ "$plugin" = feed ] && fed="  ($(grep -E '^(records|backlog_max|ack_lag_max_ms)=' "$dir/$f-$i/emu.log" | tr '\n' ' '))"
        [ -n "$base" ] && ab=" ($(build_of "$i"))"
        echo "$f run $i$ab: $t$fed"
        [ "${NSC_VERDICT_CHECK:-0}" = 0 ] || [ "${t%% *}" != none ] ||
            die "$f run $i: no right verdict: $(tail -c 600 "$(ls "$dir/$f-$i"/*-?.json 2>/dev/null | tail -1)" 2>/dev/null)"
        echo "$t" >>"$dir/$f.$(build_of "$i").times"
    done
done
echo "ranks $ranks ($nodes nodes x $rpn), hang_ms $hang_ms, 2 collectors on ClickHouse (2 shards)"
for f in $faults; do
    for b in A B; do
        [ -s "$dir/$f.$b.times" ] || continue
        python3 -c 'import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for col, how in ((0, "verdict"), (2, "among")):
    v = sorted(float(r[col]) for r in rows if r[col] != "none")
    q = lambda p: "%.2f s" % v[min(len(v) - 1, int(p * len(v)))] if v else "-"
    print("%-10s %-7s runs %d right %d  p50 %s  p90 %s  max %s" % (sys.argv[2], how, len(rows), len(v), q(0.5), q(0.9),
                                                                 q(1.0)))' \
            "$dir/$f.$b.times" "$f${base:+ ($b)}"
    done
done
