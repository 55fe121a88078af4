#!/bin/bash
# bench_forward.sh: events/s through ncclscope-agent to ncclscope-collector, and
# the agent's resident memory (a benchmark, not run by ctest).
#
#   tests/bench/bench_forward.sh BIN_DIR [SENDERS BATCHES EVENTS RUNS [BASE_AGENT]]
#
# SENDERS emulated rank processes (nsc-agent-send, blocking sends: nothing is
# dropped before the agent) send BATCHES x EVENTS Coll events each. Three modes,
# alternated RUNS times in the same session:
#   spool:   the agent alone (no --collector): the baseline, done when every
#            event is in the spool (events_out_total);
#   forward: agent -> collector (its own fresh store): done when the collector
#            acknowledged every event (forward_events_acked_total);
#   drain:   the spool is filled first with no collector, then the agent is
#            restarted with one and only the draining is timed: the forward
#            path (spool reads, credit, the collector's commits) without the
#            senders and the agent's ingest competing for the cores.
# With BASE_AGENT (another ncclscope-agent binary, e.g. main's), each run also
# does every mode with it (base-spool, ...): a same-run baseline.
# Zero loss is checked (the totals must match exactly, nothing refused).
# Prints one line per run and the medians: events/s, agent RSS (median of the
# 20 ms samples while timed, max, VmHWM), its anonymous part (the rest is the spool's
# file-backed LMDB map and the binaries), and the agent's CPU time (user +
# system, all its threads) per event: on a shared 2-core machine the senders
# compete for the same cores, so this is the figure that tracks the agent's
# own cost when the load moves. The collector's and the senders' CPU time per
# event are printed too (drain: the senders' of the fill): their sum with the
# agent's says whether the end-to-end rate is bound by the two cores.
# The NCCLSCOPE_* environment reaches the agent and the collector (e.g.
# NCCLSCOPE_AGENT_MAX_INFLIGHT_MB=32 to try a knob).
# NSC_BENCH_DNS=1: the agent under test reaches the collector through
# dns+tcp://127.0.0.1:PORT (its resolver thread and list hand-over), the
# baseline through tcp://.
set -euo pipefail
bin=$1 senders=${2:-4} batches=${3:-500} events=${4:-1000} runs=${5:-3} base=${6:-}
total=$((senders * batches * events))
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
r=$dir/node0  # the agent's run dir, emptied after each run

# CPU time (user + system, all threads) of a live process, ns per event.
cpu_ns() { awk -v tck="$(getconf CLK_TCK)" -v n="$total" '{ sub(/.*\) /, ""); printf "%.0f", ($12 + $13) / tck * 1e9 / n }' /proc/$1/stat; }

send_all() {  # send_all RUNDIR: the senders, their CPU time in RUNDIR/senders-cpu
    (for _ in $(seq "$senders"); do
        "$bin/nsc-agent-send" "ipc://$1/agent.sock" "$batches" "$events" 64 0 &
    done
    wait
    times >"$1/senders-cpu")  # not in a pipe: its second line is this subshell's children, the senders
}

# wait_total METRIC: until it reaches the total (60 s at most), the agent's
# RSS sampled every 20 ms meanwhile ($r/rss); sets t1 (when it did) and got.
# A waiting tool, not a curl loop: curl every 10 ms would take a third of a
# core from what is measured.
wait_total() {
    t1=$("$bin/nsc-bench-wait" --timeout-s 60 --rss "$apid:$r/rss" "http://$(cat "$r/agent.http")/metrics" "$1=$total") || true
    got=$(metric 0 "$1")
}
# bench_agent ARGS...: the agent under test (pids[agent0], apid) on $r.
bench_agent() {
    agent_bin=$agent run_agent 0 --spool-max-mb 4096 "$@"
    apid=${pids[agent0]}
}

run() {  # run MODE N [AGENT]
    local mode=$1 agent=${3:-$bin/ncclscope-agent} done_metric=ncclscope_agent_forward_events_acked_total
    local kind=${mode#base-}
    args=()
    mkdir -p "$r"
    if [ "$kind" = drain ]; then  # fill the spool with no collector, then time the forward alone
        bench_agent
        send_all "$r"
        wait_total ncclscope_agent_events_out_total
        stop agent0
    fi
    if [ "$kind" = spool ]; then
        done_metric=ncclscope_agent_events_out_total
    else
        start_collector 0
        cpid=${pids[collector]}
        args=(--collector "tcp://127.0.0.1:$port")
        # NSC_BENCH_DNS=1: the agent under test (not BASE_AGENT) names the
        # collector as dns+tcp://, the resolver thread's form (docs/agent.md).
        [ "${NSC_BENCH_DNS:-0}" = 1 ] && [ "$mode" = "$kind" ] && args=(--collector "dns+tcp://127.0.0.1:$port")
    fi
    bench_agent "${args[@]}"
    t0=$(date +%s.%N)
    [ "$kind" = drain ] || send_all "$r"
    wait_total $done_metric
    hwm=$(awk '/VmHWM/ {print $2}' /proc/$apid/status)
    cpu=$(cpu_ns "$apid")
    ccpu=0
    [ "$kind" = spool ] || ccpu=$(cpu_ns "$cpid")
    scpu=$(awk -v n="$total" '{ split($1, u, "m"); split($2, y, "m"); printf "%.0f", (u[1] * 60 + u[2] + y[1] * 60 + y[2]) * 1e9 / n }' <(sed -n 2p "$r/senders-cpu"))
    refused=$(metric 0 ncclscope_agent_spool_refused_events_total)
    resent=$(metric 0 ncclscope_agent_forward_batches_resent_total)
    stop agent0
    [ "$kind" = spool ] || stop collector
    [ "$got" = "$total" ] && [ "$refused" = 0 ] || { echo "$mode: LOSS: $got/$total events, $refused refused" >&2; exit 1; }
    anon=$(sort -n -k2 "$r/rss" | awk '{ a[NR] = $2 } END { printf "%d %d", a[int(NR / 2) + 1], a[NR] }')
    sort -n "$r/rss" | awk -v mode="$mode" -v n="$total" -v t0="$t0" -v t1="$t1" -v hwm="$hwm" -v resent="$resent" -v anon="$anon" -v cpu="$cpu" -v ccpu="$ccpu" -v scpu="$scpu" \
        '{ a[NR] = $1 } END { printf "%s %.3f %d %d %d %s %s %s %s %s\n", mode, n / (t1 - t0) / 1e6, a[int(NR / 2) + 1], a[NR], hwm, resent, anon, cpu, ccpu, scpu }' \
        >>"$dir/results"
    tail -n 1 "$dir/results"
    rm -rf "$r" "$dir/db"
}

echo "load $(cat /proc/loadavg)"
echo "mode Mev/s rss_median_KiB rss_max_KiB vmhwm_KiB resent anon_median_KiB anon_max_KiB agent_cpu_ns_per_event collector_cpu_ns_per_event senders_cpu_ns_per_event  ($senders senders x $batches x $events = $total events)"
for i in $(seq "$runs"); do
    for mode in spool forward drain; do
        run $mode "$i"
        [ -z "$base" ] || run base-$mode "$i" "$base"
    done
done
echo "load $(cat /proc/loadavg)"
echo "medians:"
for mode in spool forward drain ${base:+base-spool base-forward base-drain}; do
    awk -v m=$mode '$1 == m' "$dir/results" | sort -k2 -n | awk '{ v[NR] = $2 } END { printf "  %s events/s %.2f M", $1, v[int((NR + 1) / 2)] }'
    awk -v m=$mode '$1 == m' "$dir/results" | sort -k3 -n | awk '{ v[NR] = $3; x[NR] = $4 } END { printf ", RSS median %.1f MiB", v[int((NR + 1) / 2)] / 1024 }'
    awk -v m=$mode '$1 == m' "$dir/results" | sort -k4 -n | awk '{ v[NR] = $4 } END { printf ", RSS max (median of runs) %.1f MiB", v[int((NR + 1) / 2)] / 1024 }'
    awk -v m=$mode '$1 == m' "$dir/results" | sort -k8 -n | awk '{ v[NR] = $8 } END { printf ", anonymous max (median of runs) %.1f MiB", v[int((NR + 1) / 2)] / 1024 }'
    awk -v m=$mode '$1 == m' "$dir/results" | sort -k9 -n | awk '{ v[NR] = $9 } END { printf ", CPU ns/event: agent %d", v[int((NR + 1) / 2)] }'
    awk -v m=$mode '$1 == m' "$dir/results" | sort -k10 -n | awk '{ v[NR] = $10 } END { printf ", collector %d", v[int((NR + 1) / 2)] }'
    awk -v m=$mode '$1 == m' "$dir/results" | sort -k11 -n | awk '{ v[NR] = $11 } END { printf ", senders %d\n", v[int((NR + 1) / 2)] }'
done
