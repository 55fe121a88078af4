#!/bin/bash
# agent_e2e.sh: end-to-end agent tests with real processes on ipc sockets in a
# temp dir (tests/e2e/lib.sh): agents, the emulator with the real plugin, a
# garbage sender.
#
#   agent_e2e.sh BIN_DIR PLUGIN pxn|garbage|kill|epoch|bigreq|slowloris|idlefds|ledger [MASK]|ledger_p2p|ledger_drift|ledger_kill|ondemand|ondemand_ring
#
# pxn: two simulated nodes, one agent each, emulator --scenario pxn; every
#   foreign event must be re-attached to the right rank and parent (check.c).
# ledger [MASK]: a 2-node ring job (a node agent each, spool only) at the
#   event mask MASK (default: the plugin's): one completed ledger record per
#   collective and rank, with the emulator's truths (check.c); nothing is
#   left unattached. ledger_p2p: the same with an AllToAll job, one record
#   per Send and Recv.
# ledger_drift: the ledger job with a Broadcast after each AllReduce under
#   the emulator's drifting-kernelch quirk (NCCL 2.29's KernelCh hands out
#   older tasks' timers): every record's GPU times are its own or absent and
#   flagged, and the agents count the KernelChs refused (iterations 20 ms
#   apart: older timers than the 1 ms a drift must pass to be caught).
# ledger_kill: the ledger job, rank 1 late by 50 ms each iteration (the
#   others' collectives open meanwhile), while each agent is killed -9 three
#   times and restarted: the same checks as ledger, so no record is lost or
#   written twice, every GPU bound holds its truth and nothing is left
#   unattached; the last agent of each node takes back the open state of its
#   node's two ranks from the spool. Before the state was saved, some
#   collectives open at a kill never closed.
# ondemand: the ledger job with detail = on-demand: the same ledger records
#   are spooled, nothing left unattached, and every raw event, state and
#   completion received goes to the detail ring, none to the spool.
# ondemand_ring: the ring job at the full mask into a 1 MiB ring: it stays
#   within its size, the oldest sections are dropped and counted, and every
#   section kept is either held or counted dropped; every raw record
#   received went to the ring.
# garbage: a sender floods bad messages beside a well-behaved stream; each
#   reject is counted by reason in /metrics and every good event arrives.
# kill: a rank SIGKILLs itself; the agent reports it dead with its last progress.
# epoch: one agent id, a real collector: a copy of a spool replayed (same epoch)
#   is stored once; the spool deleted and made anew (new epoch, sequences from
#   0 again) is stored in full, not dropped as duplicates.
# bigreq (issue 29): a 1 GiB body, a 64 MiB header and a 64 MiB URL to the
#   HTTP port are refused before they are buffered (peak RSS grows by less
#   than 32 MiB), counted by reason, the peer logged; /healthz, polled from
#   another client, answers within 1 s throughout, and no turn of the agent's
#   loop (which serves HTTP) ran 50 ms of CPU or ran and blocked 250 ms, its
#   spool's fsync included (http_turns_ok in tests/e2e/lib.sh: bounds that
#   the machine's load leaves alone).
# slowloris (issue 29): 300 connections trickling their headers are closed by
#   http_header_timeout_ms, counted, the peer logged; /healthz and the loop's
#   turns as in bigreq.
# idlefds (issue 29): with RLIMIT_NOFILE 1024, 1100 idle HTTP connections are
#   held to the limit while a new plugin connects on the ipc socket and every
#   event it sends arrives; /healthz and the loop's turns as in bigreq.
set -euo pipefail
bin=$1 plugin=$2 mode=$3
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"

# Nothing of node $1's job was left unattached to a ledger record.
ledger_attached() {
    local r v
    for r in no_collective no_proxy_op no_proxy_step max_open process_gone nomem late; do
        v=$(metric "$1" "ncclscope_agent_ledger_unattached_total{reason=\"$r\"}")
        [ "$v" = 0 ] || die "node $1: ledger unattached $r: $v"
    done
}

# Every raw record node $1 received went to its detail ring, none to the
# spool, and none was lost on the way.
raw_all_in_ring() {
    local n=$1 raw
    wait_until 20 metric_above "$n" ncclscope_agent_detail_records_total 0 || die "node $n: nothing in the ring"
    raw=$(( $(metric "$n" ncclscope_agent_events_in_total) + $(metric "$n" ncclscope_agent_states_in_total) +
            $(metric "$n" ncclscope_agent_completions_in_total) ))
    wait_metric "$n" ncclscope_agent_detail_records_total "$raw"
    [ "$(metric "$n" ncclscope_agent_events_out_total)" = 0 ] || die "node $n: raw events spooled"
    [ "$(metric "$n" ncclscope_agent_detail_lost_records_total)" = 0 ] || die "node $n: raw records lost"
}

case $mode in
pxn)
    # Records wait for PXN legs far longer than the job: the agents' stop writes them.
    run_agent 0 --ledger-pxn-wait-ms 600000
    run_agent 1 --ledger-pxn-wait-ms 600000
    NCCLSCOPE_EVENT_MASK=all "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" \
        --scenario pxn --nodes 2 --ranks-per-node 2 --iters 3 --summary "$dir/emu.json" || die "emulator failed"
    for n in 0 1; do wait_metric $n ncclscope_agent_pxn_pending 0; done
    for n in 0 1; do
        [ "$(metric $n ncclscope_agent_pxn_unresolved_total)" = 0 ] || die "node $n: unresolved PXN events"
        [ "$(metric $n ncclscope_agent_ledger_open)" = 6 ] || die "node $n: $(metric $n ncclscope_agent_ledger_open) open, not 6"
        ledger_attached $n
        stop agent$n
    done
    "$bin/nsc-agent-check" pxn "$dir/emu.json" "$dir/node0/spool" "$dir/node1/spool"
    "$bin/nsc-agent-check" ledger-pxn "$dir/emu.json" "$dir/node0/spool" "$dir/node1/spool"
    ;;
garbage)
    run_agent 0 --max-batch-kb 64
    "$bin/nsc-agent-send" "ipc://$dir/node0/agent.sock" 50 200 64 20 &
    spid=$!
    wait $spid || die "sender failed"
    for r in empty bad_type truncated too_large multipart bad_version trailing; do
        wait_metric 0 "ncclscope_agent_rejects_total{reason=\"$r\"}" 20
    done
    wait_metric 0 ncclscope_agent_events_in_total 10000
    grep -q '"status":"ok"' <<<"$(curl -sf "http://$(cat "$dir/node0/agent.http")/healthz")" || die "healthz"
    stop agent0
    "$bin/nsc-agent-check" count "$spid" 10000 "$dir/node0/spool"
    ;;
kill)
    run_agent 0
    "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --scenario kill --nodes 1 \
        --ranks-per-node 3 --iters 6 --kill-rank 1 --kill-after 4 --pace-us 30000 --summary "$dir/emu.json" || true
    [ -s "$dir/emu.json" ] || die "emulator wrote no summary"
    wait_metric 0 'ncclscope_agent_processes{state="dead"}' 3
    wait_metric 0 'ncclscope_agent_processes{state="alive"}' 0
    stop agent0
    "$bin/nsc-agent-check" kill "$dir/emu.json" "$dir/node0/spool"
    ;;
epoch)
    # run_agent ARGS...: agent 0 as "same-id", forwarding, until the collector
    # acknowledged everything spooled, then stopped.
    start_collector 0
    send() { "$bin/nsc-agent-send" "ipc://$dir/node0/agent.sock" 20 100 64 0 || die "sender failed"; }
    # 1. Spool only: 2000 events in spool A, then a copy of it.
    run_agent 0 --agent-id same-id --spool "$dir/spoolA"
    send
    wait_metric 0 ncclscope_agent_events_out_total 2000
    stop agent0
    cp -a "$dir/spoolA" "$dir/spoolA-copy"
    # 2. Deliver spool A.
    run_agent 0 --agent-id same-id --spool "$dir/spoolA" --collector "tcp://127.0.0.1:$port"
    wait_metric 0 ncclscope_agent_spool_entries 0
    stop agent0
    wait_collector_metric ncclscope_collector_store_events 2000
    # 3. Replay the copy: same epoch, same sequences: all duplicates.
    run_agent 0 --agent-id same-id --spool "$dir/spoolA-copy" --collector "tcp://127.0.0.1:$port"
    wait_metric 0 ncclscope_agent_spool_entries 0
    stop agent0
    [ "$(collector_metric ncclscope_collector_duplicates_total)" -ge 1 ] || die "the replay was not seen as duplicates"
    # 4. The spool deleted: a new one under the same id starts at sequence 0 again.
    rm -rf "$dir/spoolA" "$dir/spoolA-copy"
    run_agent 0 --agent-id same-id --spool "$dir/spoolA" --collector "tcp://127.0.0.1:$port"
    send
    wait_metric 0 ncclscope_agent_events_in_total 2000
    wait_metric 0 ncclscope_agent_forward_events_acked_total 2000
    stop agent0
    wait_collector_metric ncclscope_collector_store_events 4000
    sleep 0.2
    [ "$(collector_metric ncclscope_collector_store_events)" = 4000 ] || die "stored events changed after the last ack"
    stop collector
    ;;
bigreq)
    run_agent 0
    big_requests agent "${pids[agent0]}" "$(cat "$dir/node0/agent.http")" "$dir/agent0.log" 1
    http_turns_ok 0.05 0 0.25
    [ "$(metric 0 'ncclscope_agent_http_rejects_total{reason="body_too_large"}')" = 1 ] || die "body not counted"
    [ "$(metric 0 'ncclscope_agent_http_rejects_total{reason="head_too_large"}')" = 2 ] || die "header and URL not counted"
    stop agent0
    ;;
slowloris)
    run_agent 0 --http-header-timeout-ms 1000 --http-max-conns-per-client 1000
    slowloris "$(cat "$dir/node0/agent.http")" "$dir/agent0.log"
    http_turns_ok 0.05 0 0.25
    [ "$(metric 0 ncclscope_agent_http_header_timeouts_total)" -ge 300 ] || die "timeouts not counted"
    stop agent0
    ;;
idlefds)
    ulimit -Sn 1024  # the agent's; hflood.py raises its own
    run_agent 0 --http-max-conns-per-client 5000
    a=$(cat "$dir/node0/agent.http")
    health_watch "$a" 6
    "$hflood" hold "$a" 1100 6 > "$dir/hold" &
    pids[hold]=$!
    wait_until 10 metric_above 0 'ncclscope_agent_http_refused_total{limit="total"}' 500 ||
        die "1100 idle connections were not held to the limit"
    "$bin/nsc-agent-send" "ipc://$dir/node0/agent.sock" 20 100 64 0 || die "a new plugin could not send"
    wait_metric 0 ncclscope_agent_events_in_total 2000
    wait "${pids[hold]}"; unset "pids[hold]"
    health_ok 1
    http_turns_ok 0.05 0 0.25
    echo "idle flood: $(cat "$dir/hold"), limit $(metric 0 ncclscope_agent_http_connections_max)"
    stop agent0
    ;;
ledger | ledger_p2p)
    run_agent 0
    run_agent 1
    scenario=ring
    [ "$mode" = ledger_p2p ] && scenario=alltoall  # a Send to and a Recv from every rank: seqs per peer and func
    ${4:+env NCCLSCOPE_EVENT_MASK=$4} "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" \
        --scenario $scenario --nodes 2 --ranks-per-node 2 --iters 20 --summary "$dir/emu.json" || die "emulator failed"
    for n in 0 1; do
        wait_metric $n 'ncclscope_agent_processes{state="alive"}' 0
        wait_metric $n ncclscope_agent_ledger_open 0
        ledger_attached $n
        stop agent$n
    done
    "$bin/nsc-agent-check" ledger "$dir/emu.json" "$dir/node0/spool" "$dir/node1/spool"
    ;;
ledger_drift)
    run_agent 0
    run_agent 1
    "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --scenario ring --nodes 2 --ranks-per-node 2 \
        --iters 10 --also-func Broadcast --nccl-quirk drifting-kernelch --pace-us 20000 --summary "$dir/emu.json" ||
        die "emulator failed"
    for n in 0 1; do
        wait_metric $n 'ncclscope_agent_processes{state="alive"}' 0
        wait_metric $n ncclscope_agent_ledger_open 0
        ledger_attached $n
        metric_above $n ncclscope_agent_ledger_stale_gpu_timers_total 0 || die "node $n: no stale KernelCh timer counted"
        stop agent$n
    done
    "$bin/nsc-agent-check" ledger-drift "$dir/emu.json" "$dir/node0/spool" "$dir/node1/spool"
    ;;
ondemand)
    run_agent 0 --detail on-demand
    run_agent 1 --detail on-demand
    "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" \
        --scenario ring --nodes 2 --ranks-per-node 2 --iters 20 --summary "$dir/emu.json" || die "emulator failed"
    for n in 0 1; do
        wait_metric $n 'ncclscope_agent_processes{state="alive"}' 0
        wait_metric $n ncclscope_agent_ledger_open 0
        ledger_attached $n
        raw_all_in_ring $n
        [ "$(metric $n ncclscope_agent_detail_ring_dropped_total)" = 0 ] || die "node $n: ring dropped sections"
        stop agent$n
    done
    "$bin/nsc-agent-check" ledger "$dir/emu.json" "$dir/node0/spool" "$dir/node1/spool"
    ;;
ondemand_ring)
    run_agent 0 --detail on-demand --detail-ring-mb 1 --flush-kb 64
    NCCLSCOPE_EVENT_MASK=all "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" \
        --scenario ring --nodes 1 --ranks-per-node 4 --iters 1500 --summary "$dir/emu.json" || die "emulator failed"
    wait_metric 0 'ncclscope_agent_processes{state="alive"}' 0
    raw_all_in_ring 0
    cap=$(metric 0 ncclscope_agent_detail_ring_cap_bytes) bytes=$(metric 0 ncclscope_agent_detail_ring_bytes)
    put=$(metric 0 ncclscope_agent_detail_ring_put_total) dropped=$(metric 0 ncclscope_agent_detail_ring_dropped_total)
    held=$(metric 0 ncclscope_agent_detail_ring_pieces)
    [ "$cap" = 1048576 ] && [ "$bytes" -le "$cap" ] || die "ring holds $bytes bytes, cap $cap"
    [ "$dropped" -gt 0 ] || die "a 1 MiB ring dropped nothing of $put sections"
    [ $((held + dropped)) = "$put" ] || die "ring: $put kept, $held held + $dropped dropped"
    echo "ring: $put sections kept, $dropped dropped, $held held in $bytes bytes"
    stop agent0
    ;;
ledger_kill)
    # 80 iterations (4 s at least): with 30, a loaded machine now and then
    # ended the job before node 0's last agent had seen a process
    run_agent 0
    run_agent 1
    "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --scenario ring --nodes 2 --ranks-per-node 2 \
        --iters 80 --slow-rank 1 --slow-us 50000 --summary "$dir/emu.json" &
    emu=$!
    for k in 1 2 3 4 5 6; do
        n=$((k % 2))
        wait_until 20 metric_above $n ncclscope_agent_ledger_spooled_total 2 || die "node $n: no record before kill $k"
        kill9 agent$n
        run_agent $n
    done
    wait $emu || die "emulator failed"
    for n in 0 1; do
        wait_metric $n 'ncclscope_agent_processes{state="alive"}' 0
        wait_metric $n ncclscope_agent_ledger_open 0
        [ "$(metric $n ncclscope_agent_ledger_restored_total)" = 2 ] ||
            die "node $n: $(metric $n ncclscope_agent_ledger_restored_total) ledger states taken back, not 2"
        ledger_attached $n
        stop agent$n
    done
    "$bin/nsc-agent-check" ledger "$dir/emu.json" "$dir/node0/spool" "$dir/node1/spool"
    ;;
*) die "unknown mode $mode" ;;
esac
