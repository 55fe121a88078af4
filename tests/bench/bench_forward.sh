#!/bin/bash
# bench_forward.sh: events/s through ncclscope-agent to ncclscope-collector, and
# the agent's resident memory (a benchmark, not run by ctest).
#
#   tests/bench/bench_forward.sh BIN_DIR [SENDERS BATCHES EVENTS RUNS [BASE_AGENT]]
#
# SENDERS emulated rank processes (nsc-agent-send, blocking sends: nothing is
# dropped before the agent) send BATCHES x EVENTS Coll events each. Two modes,
# alternated RUNS times in the same session:
#   spool:   the agent alone (no --collector): the baseline, done when every
#            event is in the spool (events_out_total);
#   forward: agent -> collector (its own fresh store): done when the collector
#            acknowledged every event (forward_events_acked_total).
# With BASE_AGENT (another ncclscope-agent binary, e.g. main's), each run also
# does both modes with it (base-spool, base-forward): a same-run baseline.
# Zero loss is checked (the totals must match exactly, nothing refused).
# Prints one line per run and the medians: events/s, agent RSS (median of the
# 20 ms samples, max, VmHWM) and its anonymous part (the rest is the spool's
# file-backed LMDB map and the binaries).
set -eu
bin=$1 senders=${2:-4} batches=${3:-500} events=${4:-1000} runs=${5:-3} base=${6:-}
total=$((senders * batches * events))
dir=$(mktemp -d /tmp/nsc-fwd-bench-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL $p 2>/dev/null || true; done; rm -rf "$dir"' EXIT

metric() { curl -sf "http://$(cat "$1/agent.http")/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }

run() {  # run MODE N [AGENT]
    local mode=$1 r="$dir/$1-$2" agent=${3:-$bin/ncclscope-agent} done_metric=ncclscope_agent_events_out_total args=()
    mkdir -p "$r"
    if [ "${mode#base-}" = forward ]; then
        "$bin/ncclscope-collector" --listen tcp://127.0.0.1:0 --http off --db "$r/db" --port-file "$r/ports" 2>/dev/null &
        cpid=$!
        pids+=($cpid)
        for _ in $(seq 500); do grep -q zmq "$r/ports" 2>/dev/null && break; sleep 0.01; done
        args=(--collector "tcp://127.0.0.1:$(awk '$1 == "zmq" {print $2}' "$r/ports")")
        done_metric=ncclscope_agent_forward_events_acked_total
    fi
    "$agent" --rundir "$r" --http 127.0.0.1:0 --spool-max-mb 4096 "${args[@]}" 2>/dev/null &
    apid=$!
    pids+=($apid)
    for _ in $(seq 500); do [ -e "$r/agent.http" ] && break; sleep 0.01; done
    (while kill -0 $apid 2>/dev/null; do
        awk '$1 == "Rss:" { r = $2 } $1 == "Anonymous:" { a = $2 } END { if (r) print r, a }' /proc/$apid/smaps_rollup
        sleep 0.02
    done >"$r/rss" 2>/dev/null) &
    t0=$(date +%s.%N)
    local sp=()
    for _ in $(seq "$senders"); do
        "$bin/nsc-agent-send" "ipc://$r/agent.sock" "$batches" "$events" 64 0 &
        sp+=($!)
    done
    for p in "${sp[@]}"; do wait "$p"; done
    got=0
    for _ in $(seq 6000); do
        got=$(metric "$r" $done_metric)
        [ "$got" = "$total" ] && break
        sleep 0.01
    done
    t1=$(date +%s.%N)
    hwm=$(awk '/VmHWM/ {print $2}' /proc/$apid/status)
    refused=$(metric "$r" ncclscope_agent_spool_refused_events_total)
    resent=$(metric "$r" ncclscope_agent_forward_batches_resent_total)
    kill -TERM $apid
    wait $apid
    [ "${mode#base-}" = forward ] && { kill -TERM $cpid; wait $cpid || true; }
    [ "$got" = "$total" ] && [ "$refused" = 0 ] || { echo "$mode: LOSS: $got/$total events, $refused refused" >&2; exit 1; }
    anon=$(sort -n -k2 "$r/rss" | awk '{ a[NR] = $2 } END { printf "%d %d", a[int(NR / 2) + 1], a[NR] }')
    sort -n "$r/rss" | awk -v mode="$mode" -v n="$total" -v t0="$t0" -v t1="$t1" -v hwm="$hwm" -v resent="$resent" -v anon="$anon" \
        '{ a[NR] = $1 } END { printf "%s %.3f %d %d %d %s %s\n", mode, n / (t1 - t0) / 1e6, a[int(NR / 2) + 1], a[NR], hwm, resent, anon }' \
        >>"$dir/results"
    tail -n 1 "$dir/results"
    rm -rf "$r"
}

echo "load $(cat /proc/loadavg)"
echo "mode Mev/s rss_median_KiB rss_max_KiB vmhwm_KiB resent anon_median_KiB anon_max_KiB  ($senders senders x $batches x $events = $total events)"
for i in $(seq "$runs"); do
    run spool "$i"
    run forward "$i"
    if [ -n "$base" ]; then
        run base-spool "$i" "$base"
        run base-forward "$i" "$base"
    fi
done
echo "load $(cat /proc/loadavg)"
echo "medians:"
for mode in spool forward ${base:+base-spool base-forward}; do
    awk -v m=$mode '$1 == m' "$dir/results" | sort -k2 -n | awk '{ v[NR] = $2 } END { printf "  %s events/s %.2f M", $1, v[int((NR + 1) / 2)] }'
    awk -v m=$mode '$1 == m' "$dir/results" | sort -k3 -n | awk '{ v[NR] = $3; x[NR] = $4 } END { printf ", RSS median %.1f MiB", v[int((NR + 1) / 2)] / 1024 }'
    awk -v m=$mode '$1 == m' "$dir/results" | sort -k4 -n | awk '{ v[NR] = $4 } END { printf ", RSS max (median of runs) %.1f MiB", v[int((NR + 1) / 2)] / 1024 }'
    awk -v m=$mode '$1 == m' "$dir/results" | sort -k8 -n | awk '{ v[NR] = $8 } END { printf ", anonymous max (median of runs) %.1f MiB\n", v[int((NR + 1) / 2)] / 1024 }'
done
