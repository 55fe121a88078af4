# lib.sh: what the test and benchmark scripts share (sourced after they set
# bin, and plugin and mode where they have them): a temporary folder $dir removed at exit
# with every process the script started (pids), the collector and agents
# started on loopback port 0 (the bound port read from a port file), metrics
# and status read over HTTP, bounded
# waits, the emulated job, and finish: everything delivered, the store exact.
# NSC_KEEP=1 keeps $dir (logs, store) after a failed run and says where.
# $nodes (default 2) is the number of simulated nodes, one agent each.
set -euo pipefail
nodes=${nodes:-2}
dir=$(mktemp -d /tmp/nsc-e2e-XXXXXX)
job=e2e-$$
declare -A pids=()
# A script's own last words (stopping what it started otherwise) go in a
# function before_cleanup, run first.
cleanup() {
    local rc=$?
    if declare -F before_cleanup >/dev/null; then before_cleanup || true; fi
    for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -KILL "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    if [ $rc -ne 0 ] && [ "${NSC_KEEP:-0}" = 1 ]; then echo "${0##*/}${mode:+ ($mode)}: kept $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT
die() {
    echo "${0##*/}${mode:+ ($mode)}: $*" >&2
    for n in $(seq 0 $((nodes - 1))); do
        [ -e "$dir/node$n/agent.http" ] &&
            curl -s -m 2 "http://$(cat "$dir/node$n/agent.http")/metrics" | grep -E '^ncclscope_agent_(forward|spool|collector|events|dns)' >&2 || true
    done
    local f
    for f in "$dir"/*.log "$dir"/node*/*.log; do [ ! -e "$f" ] || tail -v -n 20 "$f" >&2; done
    exit 1
}

# listen_port PID: the TCP port a process we started on port 0 listens on, for
# servers that cannot write a port file (prometheus); waits 10 s at most.
listen_port() {
    local p
    for _ in $(seq 200); do
        p=$(ss -Hltnp | awk -v pid="pid=$1," 'index($0, pid) { sub(/.*:/, "", $4); print $4; exit }')
        [ -n "$p" ] && { echo "$p"; return 0; }
        sleep 0.05
    done
    return 1
}
# closed_port: $closed, a loopback port that refuses connections for as long
# as the script runs: bound (port 0) by a process we start, never listened on.
closed_port() {
    python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0))
with open(sys.argv[1] + ".tmp", "w") as f: f.write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(3600)' "$dir/closed.port" >/dev/null &
    pids[closed_port]=$!
    wait_until 10 test -s "$dir/closed.port" || die "no closed port"
    closed=$(cat "$dir/closed.port")
}
# collector_port_for_later: a port for a collector started later (agents
# first): a collector on port 0 tells it (port file) and stops; $port stays.
collector_port_for_later() {
    start_collector 0
    stop collector
}
# start_collector PORT ARGS...: listen on tcp://$listen_host:PORT (0: any;
# listen_host default 127.0.0.1), store $collector_db (default $dir/db),
# HTTP on a port of its choice ($http).
start_collector() {
    local p=$1
    shift
    rm -f "$dir/ports"
    "$bin/ncclscope-collector" --listen "tcp://${listen_host:-127.0.0.1}:$p" --http 127.0.0.1:0 --db "${collector_db:-$dir/db}" \
        --port-file "$dir/ports" "$@" 2>>"$dir/collector.log" &
    pids[collector]=$!
    for _ in $(seq 500); do
        port=$(awk '$1 == "zmq" { print $2 }' "$dir/ports" 2>/dev/null || true)
        http=$(awk '$1 == "http" { print $2 }' "$dir/ports" 2>/dev/null || true)
        [ -n "$port" ] && [ -n "$http" ] && return 0
        sleep 0.01
    done
    die "collector did not start"
}
collector_metric() {  # collector_metric NAME
    curl -sf -m 5 "http://127.0.0.1:$http/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}
# status_has PYTHON-EXPRESSION: true of the collector's /api/v1/status (as s).
status_has() {
    curl -sf -m 5 "http://127.0.0.1:$http/api/v1/status" >"$dir/status.json" &&
        python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
            "$dir/status.json" "$1"
}
collector_metric_above() { [ "$(collector_metric "$1")" -gt "$2" ] 2>/dev/null; }
collector_metric_is() { [ "$(collector_metric "$1")" = "$2" ]; }
# run_agent N ARGS...: node N's agent (pids[agentN]), rundir $dir/nodeN, HTTP
# on port 0, written to $dir/nodeN/agent.http; nothing else implied.
# $agent_bin, when set, is another build's agent (a benchmark's baseline).
run_agent() {
    local n=$1
    shift
    rm -f "$dir/node$n/agent.http"
    "${agent_bin:-$bin/ncclscope-agent}" --rundir "$dir/node$n" --http 127.0.0.1:0 "$@" 2>>"$dir/agent$n.log" &
    pids[agent$n]=$!
    for _ in $(seq 500); do [ -e "$dir/node$n/agent.http" ] && return 0; sleep 0.01; done
    die "agent $n did not start"
}
# start_agent N ARGS...: run_agent as simulated node N (host name nodeN),
# forwarding to the collector on $port, reconnecting fast.
start_agent() {
    local n=$1
    shift
    run_agent "$n" --host-name "node$n" --collector "tcp://127.0.0.1:$port" --reconnect-ms 20 \
        --reconnect-max-ms 200 "$@"
}
# start_all COLLECTOR-ARGS...: the collector on port 0, then every node's agent.
start_all() {
    start_collector 0 "$@"
    local n
    for n in $(seq 0 $((nodes - 1))); do start_agent $n; done
}
sum_metric() {  # sum_metric NAME: a labelled family summed over every node's agent
    local n
    for n in $(seq 0 $((nodes - 1))); do curl -sf -m 5 "http://$(cat "$dir/node$n/agent.http")/metrics"; done |
        awk -v m="$1" 'index($1, m "{") == 1 { s += $2 } END { print s + 0 }'
}
metric() {  # metric N NAME
    curl -sf -m 5 "http://$(cat "$dir/node$1/agent.http")/metrics" | awk -v m="$2" '$1 == m { print $2 }'
}
# wait_metric N NAME VALUE / wait_collector_metric NAME VALUE: until the
# metric has VALUE (10 s at most), else die saying what it is.
wait_metric() {
    wait_until 10 metric_is "$@" || die "node $1: $2 is $(metric "$1" "$2" || true), expected $3"
}
wait_collector_metric() {
    wait_until 10 collector_metric_is "$@" || die "collector: $1 is $(collector_metric "$1" || true), expected $2"
}
# wait_until SECONDS CMD...: poll CMD every 50 ms.
wait_until() {
    local s=$1
    shift
    for _ in $(seq $((s * 20))); do "$@" && return 0; sleep 0.05; done
    return 1
}
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }
# reconnected SECS: within SECS, every node's agent connected to the collector again.
reconnected() {
    local n
    for n in $(seq 0 $((nodes - 1))); do
        wait_until "$1" metric_above $n ncclscope_agent_collector_connects_total 1 || die "node $n did not reconnect"
    done
}
metric_above() { [ "$(metric "$1" "$2")" -gt "$3" ] 2>/dev/null; }
# delivered N: node N's agent has nothing left in the spool or in the PXN queue.
delivered() { metric_is "$1" ncclscope_agent_spool_entries 0 && metric_is "$1" ncclscope_agent_pxn_pending 0 &&
              metric_is "$1" ncclscope_agent_forward_inflight 0; }
# settle_nodes: every node's agent delivered its spool and its ledger (no
# record held open); events gets the events they took in, ledger the ledger
# records they spooled; dies when they took in none.
settle_nodes() {
    local n
    events=0 ledger=0
    for n in $(seq 0 $((nodes - 1))); do
        wait_until 20 eval "metric_is $n ncclscope_agent_ledger_open 0 && delivered $n" ||
            die "node $n did not deliver its spool and ledger"
        events=$((events + $(metric $n ncclscope_agent_events_in_total)))
        ledger=$((ledger + $(metric $n ncclscope_agent_ledger_spooled_total)))
    done
    [ "$events" -gt 0 ] || die "the agents took in no event"
}
# emulate ARGS...: the job ($scenario, default PXN) over $nodes nodes, every event type on.
emulate() {
    NCCLSCOPE_JOB=$job NCCLSCOPE_EVENT_MASK=all "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" \
        --scenario "${scenario:-pxn}" --nodes "$nodes" --ranks-per-node 2 --summary "$dir/emu.json" "$@" >"$dir/emu.log" 2>&1 ||
        die "emulator failed"
}
# run_to_end NAME ARGS...: job NAME through the emulator (every event type
# on, $nodes nodes, then ARGS; summary in $dir/emu-NAME.json) to its end:
# every process ended and every node's agent delivered.
run_to_end() {
    local name=$1 n
    shift
    NCCLSCOPE_JOB=$name NCCLSCOPE_EVENT_MASK=all "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" \
        --nodes "$nodes" "$@" --summary "$dir/emu-$name.json" >"$dir/emu.log" 2>&1 || true
    [ -s "$dir/emu-$name.json" ] || die "$name: the emulator wrote no summary"
    for n in $(seq 0 $((nodes - 1))); do
        wait_until 20 metric_is $n 'ncclscope_agent_processes{state="alive"}' 0 || die "node $n: processes still alive"
        wait_until 20 delivered $n || die "node $n did not deliver"
    done
}
# Hostile HTTP clients (hflood.py). health_watch ADDR:PORT SECS: /healthz
# polled in the background from 127.0.0.2, a client other than the flood's
# 127.0.0.1; health_ok [SECONDS]: every poll answered, each within SECONDS
# (default 0.1, issue 29).
hflood="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/hflood.py"
health_watch() {
    "$hflood" health "$1" "$2" "$dir/health" --src 127.0.0.2 &
    pids[health]=$!
}
health_ok() {
    local bound=${1:-0.1}
    wait "${pids[health]}" ||
        die "/healthz failed or took 1 s (slowest: $(head -1 "$dir/health" 2>/dev/null) s; $(tail -n +2 "$dir/health" 2>/dev/null))"
    unset "pids[health]"
    echo "/healthz: slowest answer $(cat "$dir/health") s"
    awk -v b="$bound" 'NR == 1 { exit !($1 < b) }' "$dir/health" || die "/healthz took $(cat "$dir/health") s (bound: $bound s)"
}
# http_turns_ok [SECONDS] [NODE [STRETCH]]: no turn of the collector's HTTP
# loop (node NODE's agent loop, which serves its HTTP) cost over SECONDS
# (default 0.05) of its thread's CPU, and no request, tick or turn ran or
# blocked over STRETCH (default SECONDS; its wait for a CPU aside): no client
# stalled /healthz. Unlike a client's wait, neither figure grows with the
# machine's load. An agent's loop also commits its spool, so a disk's fsync
# counts in its stretch: its tests give that a bound of its own. Against a
# build with the sanitizers every bound is 4x: they cost the loop 2-4x its
# CPU, and the release build's tests hold the bound itself.
http_turns_ok() {
    local m t b who=collector
    [ -n "${2:-}" ] && who="node $2"
    for m in turn_cpu_max_seconds callback_max_seconds; do
        b=${1:-0.05}
        [ $m = callback_max_seconds ] && b=${3:-$b}
        ! grep -qa __asan_init "$bin/ncclscope-collector" || b=$(awk -v b="$b" 'BEGIN { print 4 * b }')
        if [ -n "${2:-}" ]; then t=$(metric "$2" "ncclscope_agent_http_$m"); else t=$(collector_metric "ncclscope_collector_http_$m"); fi
        echo "$who HTTP loop: $m $t"
        awk -v t="$t" -v b="$b" 'BEGIN { exit !(t != "" && t + 0 < b + 0) }' ||
            die "$who HTTP loop: $m is ${t} s (bound: $b s)"
    done
}
# vm PID FIELD: a /proc/PID/status figure in kB (VmHWM: peak RSS, VmRSS).
vm() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
# slowloris ADDR:PORT LOG: 300 connections from 127.0.0.1 trickling a
# request's headers (the daemon started with --http-header-timeout-ms 1000
# --http-max-conns-per-client 1000) are all closed by the request deadline,
# the peer in LOG; /healthz answered throughout, within 1 s (the caller bounds
# the daemon's own stall with http_turns_ok).
slowloris() {
    local r
    health_watch "$1" 4
    r=$("$hflood" hold "$1" 300 20 --trickle)  # ends once all are closed
    echo "slowloris: $r"
    [ "$r" = "open=300 closed=300" ] || die "slowloris connections left open: $r"
    health_ok 1
    grep -q "127.0.0.1 sent no whole request within http_header_timeout_ms" "$2" || die "peer not logged"
}
# big_requests NAME PID ADDR:PORT LOG [HEALTH-BOUND]: a 1 GiB body, a 64 MiB
# header and a 64 MiB URL to a daemon's HTTP port, each refused (413, 400 or
# closed) before it is buffered (peak RSS within 32 MiB of RSS after) with the
# peer in LOG; /healthz answered within HEALTH-BOUND s (0.1) throughout.
big_requests() {
    local name=$1 pid=$2 a=$3 log=$4 kind mib r hwm rss
    health_watch "$a" 4
    for kind in body header url; do
        mib=64; [ $kind = body ] && mib=1024
        r=$(timeout 30 "$hflood" big $kind "$a" $mib) || die "$kind: no reply within 30 s"
        echo "$mib MiB $kind: $r"
        case $r in reply=413* | reply=400* | reply=closed*) ;; *) die "$mib MiB $kind: $r" ;; esac
    done
    health_ok "${5:-0.1}"
    hwm=$(vm "$pid" VmHWM) rss=$(vm "$pid" VmRSS)
    echo "$name: peak RSS $hwm kB, RSS $rss kB after"
    [ "$hwm" -lt $((rss + 32768)) ] || die "peak RSS $hwm kB: a request was buffered"
    grep -q "413 to 127.0.0.1: body over http_max_body_kb" "$log" || die "body: peer not logged"
    grep -q "400 to 127.0.0.1: request line (URL) and headers over" "$log" || die "head: peer not logged"
}
kill9() {  # kill9 NAME: SIGKILL a process of pids and reap it
    kill -KILL "${pids[$1]}"
    wait "${pids[$1]}" 2>/dev/null || true
    unset "pids[$1]"
}
stop() {  # stop NAME: SIGTERM, must exit 0
    kill -TERM "${pids[$1]}"
    wait "${pids[$1]}" || die "$1 exited with $?"
    unset "pids[$1]"
}
# finish [STORE-CHECK-ARGS...]: every agent delivers, refused nothing and
# resolved every PXN event; all stop cleanly; the store holds every event
# emitted exactly once.
finish() {
    local n
    for n in $(seq 0 $((nodes - 1))); do wait_until 20 delivered $n || die "node $n did not deliver its spool"; done
    for n in $(seq 0 $((nodes - 1))); do
        [ "$(metric $n ncclscope_agent_spool_refused_entries_total)" = 0 ] || die "node $n refused batches"
        [ "$(metric $n ncclscope_agent_pxn_unresolved_total)" = 0 ] || die "node $n: unresolved PXN events"
        stop agent$n
    done
    stop collector
    "$bin/nsc-e2e-store-check" "$dir/emu.json" "$dir/db" "$job" "$@" || die "the store differs from what was emitted"
}
