#!/bin/bash
# e2e.sh: the full pipeline with real processes on loopback: ncclscope-emu
# (real plugin, --nodes 2, one rundir and host name per simulated node) -> one
# ncclscope-agent per node -> ncclscope-collector; then nsc-e2e-store-check
# compares the emulator's summary with the collector's store (every event
# exactly once, PXN events on their rank and parent).
#
#   e2e.sh BIN_DIR PLUGIN MODE
#
# pxn:            everything running; PXN scenario.
# collector_kill: kill -9 the collector mid-stream, restart it on the same
#                 port and store.
# agent_kill:     the agents spool while the collector is away; node 0's agent
#                 is killed -9 with its whole spool undelivered and restarted
#                 with one batch in flight at a time; the collector comes, the
#                 agent is killed -9 again once it has delivered something (if
#                 it has not finished: it reports how much was left) and
#                 restarted: the spool is replayed, nothing lost or doubled.
# collector_late: the collector starts only after the job ended; the agents
#                 deliver their spools when it comes.
# curve:          the collector runs CURVE (curve_secret_file); node 0's agent
#                 has its public key and delivers, node 1's has another key:
#                 its handshakes fail, the collector counts and logs them and
#                 stores nothing of node 1; restarted with the right key,
#                 node 1 delivers its spool and the store is exact. The
#                 collector has no UDP clock port: node 0 probes over ZeroMQ.
# hang:           --scenario hang (rank 3 stops after 2 iterations, the others
#                 wait 4 s in its collective): /api/v1/status reports rank 3
#                 lagging (or hung) within that wait.
# kill:           --scenario kill (rank 1's process SIGKILLs itself in
#                 iteration 2 while the others go on): /api/v1/status reports
#                 that process dead, with its host and pid (from the
#                 emulator's summary), while the others are still alive.
# Ports: the collector's is picked by the kernel (port 0) or found free; agent
# HTTP on port 0. Every wait is bounded. Shared helpers: lib.sh.
set -euo pipefail
bin=$1 plugin=$2 mode=$3
. "$(dirname "$0")/lib.sh"

case $mode in
pxn)
    start_all
    emulate --iters 5
    finish
    ;;
collector_kill)
    start_all
    emulate --iters 60 --pace-us 40000 &
    emu=$!
    wait_until 20 metric_above 0 ncclscope_agent_forward_batches_acked_total 2 || die "nothing acknowledged"
    kill9 collector
    sleep 0.5
    start_collector "$port"
    wait $emu || die "emulator failed"
    reconnected 20
    finish
    ;;
agent_kill)
    collector_port_for_later
    start_agent 0 --flush-ms 5 --flush-kb 2
    start_agent 1 --flush-ms 5 --flush-kb 2
    NCCLSCOPE_FLUSH_MS=2 emulate --iters 40 --pace-us 5000
    for n in 0 1; do wait_until 20 metric_is $n ncclscope_agent_pxn_pending 0 || die "node $n PXN pending"; done
    # several entries, so that delivering them one at a time leaves some for the kill
    wait_until 10 metric_above 0 ncclscope_agent_spool_entries 2 ||
        die "node 0 spooled only $(metric 0 ncclscope_agent_spool_entries) batches"
    spooled=$(metric 0 ncclscope_agent_spool_entries)
    kill9 agent0   # restart node 0's agent with a slow link: one batch in flight
    start_agent 0 --max-inflight 1 --window 1
    start_collector "$port"
    wait_until 20 metric_above 0 ncclscope_agent_forward_batches_acked_total 1 || die "node 0 delivered nothing"
    kill9 agent0   # mid-delivery
    # what the killed agent left, read from its spool (its metrics died with it)
    left=$(mdb_stat -s batches "$dir/node0/spool" | awk '/Entries:/ {print $2}')
    echo "node 0: $spooled batches spooled, killed with $left left" >&2
    start_agent 0
    wait_until 20 metric_is 0 ncclscope_agent_spool_entries 0 || die "the spool was not replayed"
    [ "$left" = 0 ] || metric_above 0 ncclscope_agent_forward_batches_acked_total 0 || die "restarted agent delivered nothing"
    finish
    ;;
collector_late)
    collector_port_for_later
    start_agent 0
    start_agent 1
    emulate --iters 5
    for n in 0 1; do
        wait_until 10 metric_above $n ncclscope_agent_spool_entries 0 || die "node $n spooled nothing"
        metric_is $n ncclscope_agent_collector_connected 0 || die "connected to nothing?"
    done
    start_collector "$port"
    finish
    ;;
curve)
    for k in server wrong node0 node1; do "$bin/ncclscope-agent" --gen-keys "$dir/$k" >/dev/null || die "gen-keys $k"; done
    start_collector 0 --curve-secret-file "$dir/server.key"
    start_agent 0 --collector-key "$dir/server.pub" --curve-key "$dir/node0.key"
    start_agent 1 --collector-key "$dir/wrong.pub" --curve-key "$dir/node1.key"
    emulate --iters 5
    wait_until 20 delivered 0 || die "node 0 (right key) did not deliver"
    # a datagram is not authenticated: a CURVE collector's probes stay on the link
    [ "$(awk '$1 == "udp" { print $2 }' "$dir/ports")" = 0 ] || die "a CURVE collector has a UDP clock port"
    wait_until 20 metric_above 0 ncclscope_agent_clock_samples_total 0 || die "node 0 has no clock sample"
    [ "$(metric 0 ncclscope_agent_clock_udp_probes_total)" = 0 ] || die "node 0 probed over UDP with CURVE on"
    wait_until 20 collector_metric_above ncclscope_collector_handshake_failures_total 0 ||
        die "no handshake failure counted"
    grep -q "handshake on .* failed" "$dir/collector.log" || die "handshake failure not logged"
    metric_above 1 ncclscope_agent_spool_entries 0 || die "node 1 has nothing waiting"
    [ "$(metric 1 ncclscope_agent_forward_batches_acked_total)" = 0 ] || die "node 1 (wrong key) got acks"
    status=$(curl -sf "http://127.0.0.1:$http/api/v1/status") || die "no status"
    python3 -c 'import json,sys; s=json.loads(sys.argv[1])
hosts={a["host"] for a in s["agents"]} | {p["host"] for p in s["processes"]}
sys.exit(0 if "node0" in hosts and "node1" not in hosts else 1)' "$status" ||
        die "status should show node0 and nothing of node1: $status"
    stop agent1
    start_agent 1 --collector-key "$dir/server.pub" --curve-key "$dir/node1.key"
    finish
    ;;
hang)
    start_all --hang-ms 300
    scenario=hang emulate --iters 5 --hang-after 2 --hang-ms 4000 --pace-us 20000 &
    emu=$!
    wait_until 8 status_has '[x for j in s["jobs"] for c in j["comms"] for x in c["lagging"] + c["hangs"] if x["rank"] == 3]' ||
        die "rank 3 not reported lagging or hung: $(cat "$dir/status.json")"
    status_has 's["lagging"] + s["hangs"] >= 1' || die "status totals: $(cat "$dir/status.json")"
    status_has 'not [x for j in s["jobs"] for c in j["comms"] for x in c["lagging"] if x["rank"] != 3]' ||
        die "a rank other than 3 reported lagging: $(cat "$dir/status.json")"
    wait $emu || die "emulator failed"
    ;;
kill)
    start_all --hang-ms 40000
    scenario=kill emulate --iters 40 --kill-rank 1 --kill-after 2 --pace-us 100000 &
    emu=$!
    # The process of rank 1 (status ranks give its host and pid) is dead while
    # every other process is still alive.
    rank1='[(r["host"], r["pid"]) for j in s["jobs"] for c in j["comms"] for r in c["ranks"] if r["rank"] == 1]'
    wait_until 8 status_has "[p for p in s['processes'] if p['state'] == 'dead' and (p['host'], p['pid']) in $rank1]" ||
        die "rank 1's process not reported dead: $(cat "$dir/status.json")"
    status_has "len([p for p in s['processes'] if p['state'] == 'alive']) == 3" ||
        die "the other processes should be alive: $(cat "$dir/status.json")"
    cp "$dir/status.json" "$dir/status.kill.json"
    wait $emu || true  # the emulator reports the killed rank
    [ -s "$dir/emu.json" ] || die "emulator wrote no summary"
    python3 -c 'import json,sys
e=json.load(open(sys.argv[1])); s=json.load(open(sys.argv[2]))
killed=[p for p in e["processes"] if p["signal"] == 9]
dead=[p for p in s["processes"] if p["state"] == "dead"]
assert len(killed) == 1 and len(dead) == 1, (killed, dead)
assert dead[0]["pid"] == killed[0]["pid"] and dead[0]["host"] == "node%d" % killed[0]["node"], (killed, dead)' \
        "$dir/emu.json" "$dir/status.kill.json" || die "the dead process is not the killed one"
    ;;
*) die "unknown mode $mode" ;;
esac
echo "e2e.sh $mode: ok"
