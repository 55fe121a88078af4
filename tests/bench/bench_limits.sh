#!/bin/bash
# bench_limits.sh: the collector's peak memory under the floods of issue 29
# (defect 2), with its default limits (a benchmark, not run by ctest).
#
#   tests/bench/bench_limits.sh BIN_DIR [BASELINE_COLLECTOR]
#
# For each flood a fresh collector (default settings, its own store) takes
# what nsc-feed --hostile (BIN_DIR's) sends as one agent, until its counters
# say everything was taken; then its peak RSS (VmHWM) and its RSS now
# (VmRSS) are read from /proc and /healthz is timed (after the processes,
# the slowest of 20 while 16 clients read the status). Floods: 6 batches
# claiming 1,000,000 ranks, one batch of 5,000 communicator definitions,
# 50,000 clock samples each of another host (then a restart on that store:
# the RSS it starts with), 2,000 batches of 256 sections sent ignoring the
# credit, 50,000 processes of one job. With BASELINE_COLLECTOR (an older
# build's ncclscope-collector), each flood runs against it too, for a
# same-machine comparison; a flood it never finishes taking is cut off after
# 120 s and marked so.
set -euo pipefail
bin=$(cd "$1" && pwd)
feed=$bin/nsc-feed
baseline=${2:-}
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"

hwm_kb() { awk '$1 == "VmHWM:" { print $2 }' "/proc/${pids[collector]}/status"; }
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/${pids[collector]}/status"; }
metric_sum() {  # metric_sum PATTERN: the sum of the samples whose name matches
    curl -sf -m 10 "http://127.0.0.1:$http/metrics" | awk -v p="$1" '$1 ~ p { s += $2 } END { print s + 0 }'
}
# within SECONDS CMD...: CMD true before SECONDS of wall time passed (a try
# may itself take seconds against a collector that holds too much)
within() {
    local end=$((SECONDS + $1))
    shift
    while [ $SECONDS -lt $end ]; do "$@" && return 0; sleep 0.2; done
    return 1
}
at_least() { [ "$(metric_sum "$1")" -ge "$2" ]; }
# taken FLOOD: the collector's counters account for the whole flood
taken() {
    case $1 in
    nranks) at_least 'rejects_total.*reason="ranks"' 6 || at_least '^ncclscope_collector_batches_in_total$' 6 ;;
    comms) at_least '^ncclscope_collector_batches_in_total$' 1 ;;
    hosts | hosts_restart) at_least '^ncclscope_collector_samples_total$|reason="hosts"' 50000 ;;
    credit) [ "$(metric_sum '^ncclscope_collector_queue_depth$')" = 0 ] &&
        at_least '^ncclscope_collector_acks_total$|reason="credit"' 2000 ;;
    procs) at_least '^ncclscope_collector_batches_in_total$' 196 ;;
    esac
}
flood() {
    case $1 in
    nranks) for _ in 1 2 3 4 5 6; do "$feed" --endpoint "tcp://127.0.0.1:$port" --hostile nranks --timeout-ms 100 >/dev/null; done ;;
    comms) "$feed" --endpoint "tcp://127.0.0.1:$port" --hostile comms --count 5000 --timeout-ms 120000 >/dev/null ;;
    hosts) "$feed" --endpoint "tcp://127.0.0.1:$port" --hostile hosts --count 50000 >/dev/null ;;
    credit) "$feed" --endpoint "tcp://127.0.0.1:$port" --hostile credit --count 2000 --timeout-ms 100 >/dev/null ;;
    procs) "$feed" --endpoint "tcp://127.0.0.1:$port" --hostile procs --count 50000 --timeout-ms 120000 >/dev/null ;;
    esac
}
# healthz_under_status: the slowest of 20 /healthz (seconds) while 16
# clients read /api/v1/status 3 times each
healthz_under_status() {
    local i worst=0 t
    for i in $(seq 16); do
        ( for _ in $(seq 3); do curl -s -m 60 -o /dev/null "http://127.0.0.1:$http/api/v1/status"; done ) &
        pids[status$i]=$!
    done
    for _ in $(seq 20); do
        t=$(curl -s -m 30 -o /dev/null -w '%{time_total}' "http://127.0.0.1:$http/healthz")
        worst=$(awk -v a="$worst" -v b="$t" 'BEGIN { print (b > a ? b : a) }')
        sleep 0.05
    done
    for i in $(seq 16); do wait "${pids[status$i]}" || true; unset "pids[status$i]"; done
    echo "$worst"
}
# run COLLECTOR FLOOD: one line, "FLOOD COLLECTOR hwm_mb rss_mb healthz_ms [cut off]"
run() {
    local coll=$1 what=$2 note=""
    rm -rf "$dir/db"
    start_collector 0 --clock-persist-s 1
    if [ "$what" = hosts_restart ]; then
        flood hosts
        within 120 taken hosts || note="(cut off)"
        sleep 2  # the models stored
        stop collector
        start_collector 0 --clock-persist-s 1
        sleep 1
    else
        flood "$what"
        within 120 taken "$what" || note="(cut off)"
    fi
    local h
    if [ "$what" = procs ]; then h=$(healthz_under_status); else
        h=$(curl -s -m 30 -o /dev/null -w '%{time_total}' "http://127.0.0.1:$http/healthz")
    fi
    awk -v w="$what" -v c="$coll" -v hwm="$(hwm_kb)" -v rss="$(rss_kb)" -v h="$h" -v n="$note" \
        'BEGIN { printf "%-14s %-9s %8.1f %8.1f %8.1f %s\n", w, c, hwm / 1024, rss / 1024, h * 1000, n }'
    kill -KILL "${pids[collector]}"
    wait "${pids[collector]}" 2>/dev/null || true
    unset "pids[collector]"
}

printf '%-14s %-9s %8s %8s %8s\n' flood collector hwm_MiB rss_MiB healthz_ms
mine="$bin/ncclscope-collector"
for what in nranks comms hosts hosts_restart credit procs; do
    for coll in this ${baseline:+baseline}; do
        if [ "$coll" = baseline ]; then
            mkdir -p "$dir/base"
            ln -sf "$baseline" "$dir/base/ncclscope-collector"
            bin_save=$bin bin=$dir/base
            run "$coll" "$what"
            bin=$bin_save
        else
            run "$coll" "$what"
        fi
    done
done
