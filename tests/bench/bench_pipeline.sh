#!/bin/bash
# bench_pipeline.sh: records/s from emulated NCCL ranks through one
# ncclscope-agent to ncclscope-collector, with zero loss (a benchmark, not run
# by ctest).
#
#   tests/bench/bench_pipeline.sh BIN_DIR [RANKS ITERS RUNS [CHANNELS [MASK]]]
#
# The job: ncclscope-emu, RANKS rank processes (default 4) on 2 emulated
# nodes, scenario ring (AllReduce, so the ranks at the node boundaries run
# ProxyOps, ProxySteps with their states and one NetPlugin event per step),
# CHANNELS channels (default 4), ITERS collectives per rank (default 4000),
# NCCLSCOPE_EVENT_MASK=MASK (default all; the plugin's default mask is
# Group,Coll,P2p,ProxyOp,ProxyStep,KernelCh,GroupApi,CollApi,P2pApi,KernelLaunch,CeColl,
# docs/plugin.md), no pacing: every rank runs flat out. Both nodes'
# rundirs are one folder, so all ranks feed one agent. Three modes, alternated
# RUNS times (default 5) in the same session:
#   empty:   the same job with the empty plugin (--mask MASK): the emulator's
#            own ceiling and CPU, the same-run baseline;
#   spool:   the ncclscope plugin into the agent alone (no collector): done
#            when the agent has taken every record;
#   forward: plugin -> agent -> a fresh collector: done when the collector has
#            stored every event and state and acknowledged (committed) them all.
# Times run from the job's launch to done. Counted records: events (one per
# startEvent) and states (recordEventState calls; KernelChStop travels inside
# its KernelCh event, so it is not a stored state); completions are extra
# records the plugin derives, reported apart.
# Zero loss, checked every run, the script fails on any loss: the emulator's
# own accounting (its --summary) says what the job emitted; the agent (spool)
# or the collector's store (forward) holds exactly that many events and
# states; forward: the plugins' own counters (carried in every batch, read
# from the collector's /api/v1/status) report 0 events and 0 states dropped
# and as many emitted as the emulator counted; the agent refused and lost
# nothing.
# Prints a line per run and the medians: Mrecords/s, events, states, CPU time
# (user + system, all threads) per record of the emulated ranks (the
# emulator and the plugin with its shipper thread), the agent and the
# collector, and the load average at the start of each run.
# The NCCLSCOPE_* environment reaches the plugin, the agent and the collector
# (e.g. NCCLSCOPE_BUFFER_MB=128 for the plugin's buffers).
set -euo pipefail
bin=$1 ranks=${2:-4} iters=${3:-4000} runs=${4:-5} channels=${5:-4} mask=${6:-all}
nodes=2
[ $((ranks % nodes)) = 0 ] || { echo "bench_pipeline.sh: RANKS must be a multiple of $nodes" >&2; exit 2; }
lib=$(cd "$bin/../lib" && pwd)
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
r=$dir  # the run's folder: the agent's node0 (the other nodes link to it), the store; emptied after each run

# CPU time (user + system, all threads) of a live process, in ns.
cpu_ns() { awk -v tck="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.0f", ($12 + $13) / tck * 1e9 }' /proc/$1/stat; }

# scrape HOST:PORT: every unlabelled metric into m[]. Bash alone, no process
# per poll: the poll must not take CPU from the pipeline it times.
declare -A m
scrape() {
    local name val
    m=()
    exec 3<>"/dev/tcp/${1%:*}/${1#*:}" || return 1
    printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
    while read -r name val <&3; do [[ $name == ncclscope_* ]] && m[$name]=${val%$'\r'}; done
    exec 3<&-
}

bench_collector() {  # the collector (cpid, chttp) and the agent's collector args
    start_collector 0
    cpid=${pids[collector]}
    chttp=127.0.0.1:$http
    args=(--collector "tcp://127.0.0.1:$port")
}

bench_agent() {  # the agent on node0 (apid, ahttp)
    run_agent 0 --spool-max-mb 4096 "${args[@]}"
    apid=${pids[agent0]}
    ahttp=$(cat "$r/node0/agent.http")
}

emulate() {  # emulate PLUGIN ARGS...: the job $job; its ranks' CPU time in $r/emu-times
    local plugin=$1
    shift
    (NCCLSCOPE_JOB=$job NCCLSCOPE_EVENT_MASK=$mask LD_LIBRARY_PATH=$lib "$bin/ncclscope-emu" \
        --plugin "$plugin" --scenario ring --nodes $nodes --ranks-per-node $((ranks / nodes)) \
        --channels "$channels" --iters "$iters" --rundir-base "$r" --summary "$r/emu.json" --time-scale 0 "$@" \
        >"$r/emu.log" 2>&1 || die "the emulator failed: $(tail -n 5 "$r/emu.log")"
     times >"$r/emu-times")  # its second line: this subshell's children, the emulator and its ranks
}

# expected: what the job emitted, from the emulator's summary: sets
# events, states (stored ones), states_all (recordEventState calls) and procs.
expected() {
    read -r events states states_all procs < <(python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); t = s["totals"]
ev = sum(t["calls"]["start"].values()) + sum(t["foreign"]["start"].values())
st = sum(t["states"].values())
print(ev, st - t["states"].get("KernelChStop", 0), st, len(s["processes"]))' "$r/emu.json")
}

# stored_all: the collector stored every event and state and acknowledged all.
stored_all() {
    scrape "$chttp" && [ "${m[ncclscope_collector_events_in_total]}" = "$events" ] &&
        [ "${m[ncclscope_collector_states_in_total]}" = "$states" ] &&
        scrape "$ahttp" && [ "${m[ncclscope_agent_forward_events_acked_total]}" = "$events" ]
}
# spooled_all: the agent took every event and state and spooled them.
spooled_all() {
    scrape "$ahttp" && [ "${m[ncclscope_agent_events_in_total]}" = "$events" ] &&
        [ "${m[ncclscope_agent_states_in_total]}" = "$states" ] &&
        [ "${m[ncclscope_agent_events_out_total]}" = "$events" ]
}
wait_done() {  # wait_done CHECK: poll every 5 ms until CHECK holds; fails after 2 s without progress
    local last='' still=0 now
    while [ $still -lt 400 ]; do
        "$1" && return 0
        now="${m[ncclscope_agent_events_in_total]:-} ${m[ncclscope_agent_forward_events_acked_total]:-} ${m[ncclscope_collector_events_in_total]:-} ${m[ncclscope_collector_states_in_total]:-}"
        if [ "$now" = "$last" ]; then still=$((still + 1)); else still=0 last=$now; fi
        sleep 0.005
    done
    return 1
}

# check_plugins: the plugins' own counters, as the collector last got
# them: nothing dropped, and as many emitted as the emulator counted.
check_plugins() {
    curl -sf "http://$chttp/api/v1/status" >"$r/status.json" || die "no status from the collector"
    python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); job = sys.argv[2]
p = [x for x in s["processes"] if x["job"] == job]
got = (len(p), sum(x["events_emitted"] for x in p), sum(x["states_emitted"] for x in p),
       sum(x["events_dropped"] for x in p), sum(x["states_dropped"] for x in p))
want = tuple(int(v) for v in sys.argv[3:]) + (0, 0)
sys.exit(0 if got == want else "plugins (processes, events and states emitted, dropped) %s, want %s" % (got, want))' \
        "$r/status.json" "$job" "$procs" "$events" "$states_all" || die "LOSS in $job"
}

run() {  # run MODE N: one line into $dir/results
    local mode=$1 n
    local load
    job=$1-$2
    load=$(cut -d' ' -f1 /proc/loadavg)
    mkdir -p "$r/node0"
    for n in $(seq 1 $((nodes - 1))); do ln -s node0 "$r/node$n"; done
    args=()
    cpid='' apid='' comp=0 acpu=0 ccpu=0
    [ "$mode" != forward ] || bench_collector
    [ "$mode" = empty ] || bench_agent
    t0=$(date +%s%N)
    if [ "$mode" = empty ]; then emulate empty --mask "$mask"; else emulate ncclscope; fi
    expected
    case $mode in
    forward) wait_done stored_all || die "LOSS: the collector stored ${m[ncclscope_collector_events_in_total]:-?} of $events events, ${m[ncclscope_collector_states_in_total]:-?} of $states states" ;;
    spool) wait_done spooled_all || die "LOSS: the agent took ${m[ncclscope_agent_events_in_total]:-?} of $events events, ${m[ncclscope_agent_states_in_total]:-?} of $states states" ;;
    esac
    t1=$(date +%s%N)
    if [ -n "$apid" ]; then
        acpu=$(cpu_ns $apid)
        scrape "$ahttp"
        for k in spool_refused_events_total spool_refused_records_total records_lost_total; do
            [ "${m[ncclscope_agent_$k]}" = 0 ] || die "LOSS: agent $k ${m[ncclscope_agent_$k]}"
        done
    fi
    if [ -n "$cpid" ]; then
        ccpu=$(cpu_ns $cpid)
        scrape "$chttp"
        comp=${m[ncclscope_collector_completions_in_total]}
        [ "${m[ncclscope_collector_store_events]}" = "$events" ] || die "LOSS: the store holds ${m[ncclscope_collector_store_events]} of $events events"
        check_plugins
    fi
    [ -z "$apid" ] || stop agent0
    [ -z "$cpid" ] || stop collector
    ecpu=$(sed -n 2p "$r/emu-times" | awk '{ split($1, u, "m"); split($2, y, "m"); printf "%.0f", (u[1] * 60 + u[2] + y[1] * 60 + y[2]) * 1e9 }')
    awk -v mode="$mode" -v t="$((t1 - t0))" -v e="$events" -v s="$states" -v c="$comp" -v ecpu="$ecpu" \
        -v acpu="$acpu" -v ccpu="$ccpu" -v load="$load" 'BEGIN { n = e + s
        printf "%s %.3f %d %d %d %.0f %.0f %.0f %.0f %s %.3f\n", mode, n / t * 1e3, e, s, c, ecpu / n, acpu / n, ccpu / n,
            (ecpu + acpu + ccpu) / n, load, t / 1e9 }' | tee -a "$dir/results"
    rm -rf "$r"/node* "$r/db" "$r"/emu* "$r/status.json"
}

echo "load $(cat /proc/loadavg)"
echo "job: $ranks ranks (ring, $nodes nodes, $channels channels, $iters iterations, mask $mask) -> 1 agent${NCCLSCOPE_BUFFER_MB:+, NCCLSCOPE_BUFFER_MB=$NCCLSCOPE_BUFFER_MB}"
echo "mode Mrecords/s events states completions CPU_ns/record:ranks agent collector sum load1 seconds"
for i in $(seq "$runs"); do
    for mode in empty spool forward; do run $mode "$i"; done
done
echo "load $(cat /proc/loadavg)"
echo "medians of $runs runs:"
for mode in empty spool forward; do
    awk -v m=$mode '$1 == m' "$dir/results" | awk '
        function med(c,   i, j, v, t) { for (i = 1; i <= NR; i++) v[i] = col[i, c]
            for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
            return v[int((NR + 1) / 2)] }
        { for (c = 1; c <= NF; c++) col[NR, c] = $c }
        END { printf "  %-8s %.2f M records/s (events %d + states %d), CPU ns/record: ranks %d, agent %d, collector %d, sum %d\n",
              $1, med(2), med(3), med(4), med(6), med(7), med(8), med(9) }'
done
