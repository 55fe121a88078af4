#!/bin/bash
# agent_e2e.sh: end-to-end agent tests with real processes on ipc sockets in a
# temp dir: agents, the emulator with the real plugin, a garbage sender.
#
#   agent_e2e.sh BIN_DIR PLUGIN pxn|garbage|kill|epoch
#
# pxn: two simulated nodes, one agent each, emulator --scenario pxn; every
#   foreign event must be re-attached to the right rank and parent (check.c).
# garbage: a sender floods bad messages beside a well-behaved stream; each
#   reject is counted by reason in /metrics and every good event arrives.
# kill: a rank SIGKILLs itself; the agent reports it dead with its last progress.
# epoch: one agent id, a real collector: a copy of a spool replayed (same epoch)
#   is stored once; the spool deleted and made anew (new epoch, sequences from
#   0 again) is stored in full, not dropped as duplicates.
set -eu
bin=$1 plugin=$2 mode=$3
dir=$(mktemp -d /tmp/nsc-agent-e2e-XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT
die() {
    echo "agent_e2e.sh: $*" >&2
    for f in "$dir"/node*/agent.http; do curl -s "http://$(cat "$f")/metrics" | grep -v '^#' >&2 || true; done
    for f in "$dir"/agent*.log; do cat "$f" >&2; done
    exit 1
}

# start_agent N ARGS...: agent for node N, rundir $dir/nodeN, HTTP on a free port.
start_agent() {
    local n=$1
    shift
    "$bin/ncclscope-agent" --rundir "$dir/node$n" --http 127.0.0.1:0 "$@" 2>"$dir/agent$n.log" &
    pids[$n]=$!
    for _ in $(seq 500); do [ -e "$dir/node$n/agent.http" ] && return 0; sleep 0.01; done
    die "agent $n did not start"
}
# stop_agent N: SIGTERM, which must flush and exit 0.
stop_agent() {
    kill -TERM "${pids[$1]}"
    wait "${pids[$1]}" || die "agent $1 exited with $?"
}
metric() {  # metric N NAME_WITH_LABELS
    curl -sf "http://$(cat "$dir/node$1/agent.http")/metrics" | awk -v m="$2" '$1 == m { print $2 }'
}
# wait_metric N NAME VALUE: poll /metrics until NAME has VALUE (10 s at most).
wait_metric() {
    for _ in $(seq 200); do [ "$(metric "$1" "$2")" = "$3" ] && return 0; sleep 0.05; done
    die "$2 is $(metric "$1" "$2"), expected $3"
}

case $mode in
pxn)
    start_agent 0
    start_agent 1
    NCCLSCOPE_EVENT_MASK=all "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" \
        --scenario pxn --nodes 2 --ranks-per-node 2 --iters 3 --summary "$dir/emu.json" || die "emulator failed"
    for n in 0 1; do wait_metric $n ncclscope_agent_pxn_pending 0; done
    for n in 0 1; do
        [ "$(metric $n ncclscope_agent_pxn_unresolved_total)" = 0 ] || die "node $n: unresolved PXN events"
        stop_agent $n
    done
    "$bin/nsc-agent-check" pxn "$dir/emu.json" "$dir/node0/spool" "$dir/node1/spool"
    ;;
garbage)
    start_agent 0 --max-batch-kb 64
    "$bin/nsc-agent-send" "ipc://$dir/node0/agent.sock" 50 200 64 20 &
    spid=$!
    wait $spid || die "sender failed"
    for r in empty bad_type truncated too_large multipart bad_version trailing; do
        wait_metric 0 "ncclscope_agent_rejects_total{reason=\"$r\"}" 20
    done
    wait_metric 0 ncclscope_agent_events_in_total 10000
    curl -sf "http://$(cat "$dir/node0/agent.http")/healthz" | grep -q '"status":"ok"' || die "healthz"
    stop_agent 0
    "$bin/nsc-agent-check" count "$spid" 10000 "$dir/node0/spool"
    ;;
kill)
    start_agent 0
    "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --scenario kill --nodes 1 \
        --ranks-per-node 3 --iters 6 --kill-rank 1 --kill-after 4 --pace-us 30000 --summary "$dir/emu.json" || true
    [ -s "$dir/emu.json" ] || die "emulator wrote no summary"
    wait_metric 0 'ncclscope_agent_processes{state="dead"}' 3
    wait_metric 0 'ncclscope_agent_processes{state="alive"}' 0
    stop_agent 0
    "$bin/nsc-agent-check" kill "$dir/emu.json" "$dir/node0/spool"
    ;;
epoch)
    # run_agent ARGS...: agent 0 as "same-id", forwarding, until the collector
    # acknowledged everything spooled, then stopped.
    col=$dir/collector
    mkdir -p "$col"
    "$bin/ncclscope-collector" --listen tcp://127.0.0.1:0 --http 127.0.0.1:0 --db "$col/db" \
        --port-file "$col/ports" 2>"$dir/collector.log" &
    pids[9]=$!
    for _ in $(seq 500); do grep -q http "$col/ports" 2>/dev/null && break; sleep 0.01; done
    zport=$(awk '$1 == "zmq" {print $2}' "$col/ports")
    cmetric() { curl -sf "http://127.0.0.1:$(awk '$1 == "http" {print $2}' "$col/ports")/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
    wait_cmetric() {
        for _ in $(seq 200); do [ "$(cmetric "$1")" = "$2" ] && return 0; sleep 0.05; done
        cat "$dir/collector.log" >&2
        die "collector: $1 is $(cmetric "$1"), expected $2"
    }
    send() { "$bin/nsc-agent-send" "ipc://$dir/node0/agent.sock" 20 100 64 0 || die "sender failed"; }
    # 1. Spool only: 2000 events in spool A, then a copy of it.
    start_agent 0 --agent-id same-id --spool "$dir/spoolA"
    send
    wait_metric 0 ncclscope_agent_events_out_total 2000
    stop_agent 0
    cp -a "$dir/spoolA" "$dir/spoolA-copy"
    # 2. Deliver spool A.
    start_agent 0 --agent-id same-id --spool "$dir/spoolA" --collector "tcp://127.0.0.1:$zport"
    wait_metric 0 ncclscope_agent_spool_entries 0
    stop_agent 0
    wait_cmetric ncclscope_collector_store_events 2000
    # 3. Replay the copy: same epoch, same sequences: all duplicates.
    start_agent 0 --agent-id same-id --spool "$dir/spoolA-copy" --collector "tcp://127.0.0.1:$zport"
    wait_metric 0 ncclscope_agent_spool_entries 0
    stop_agent 0
    [ "$(cmetric ncclscope_collector_duplicates_total)" -ge 1 ] || die "the replay was not seen as duplicates"
    # 4. The spool deleted: a new one under the same id starts at sequence 0 again.
    rm -rf "$dir/spoolA" "$dir/spoolA-copy"
    start_agent 0 --agent-id same-id --spool "$dir/spoolA" --collector "tcp://127.0.0.1:$zport"
    send
    wait_metric 0 ncclscope_agent_events_in_total 2000
    wait_metric 0 ncclscope_agent_forward_events_acked_total 2000
    stop_agent 0
    wait_cmetric ncclscope_collector_store_events 4000
    sleep 0.2
    [ "$(cmetric ncclscope_collector_store_events)" = 4000 ] || die "stored events changed after the last ack"
    ;;
*) die "unknown mode $mode" ;;
esac
