#!/bin/bash
# dns.sh: the agents' dns+tcp://NAME:PORT collector entry (docs/agent-forwarding.md,
# "Failover") with real processes: two LMDB collectors, a on 127.0.0.1 and b
# on 127.0.0.2, one port; the agents run in a mount namespace of their own
# (unshare -rm) where the test's files are bind-mounted over /etc/hosts
# and /etc/nsswitch.conf (hosts: files), so collectors.nsc.test resolves to
# what the test writes there and to nothing else; the emulated job as in
# e2e.sh. The hosts file is rewritten in place (the mount holds its inode)
# with each line a prefix can cut never dropping the address in use.
#
#   dns.sh BIN_DIR PLUGIN MODE
#
# kill:    the name stands for both (written b first: the agents sort), the
#          agents start at the address their id picks (agent ids node0-agent
#          and node1-agent: they pick different ones); kill -9 of node 0's collector mid-stream: node 0
#          resolves the name again and moves to the other (metric, log), node
#          1 stays; every event spooled is acknowledged, nothing refused, the
#          survivor stored batches. (Two LMDB stores cannot show exactly
#          once across a move: a batch stored but not acknowledged is in both.)
# kill_clickhouse: the same with both collectors on one ClickHouse cluster
#          (tests/clickhouse/lib.sh: two shards and a front instance; fails
#          without clickhouse-server where it is installable, skips, 77,
#          where not): the events ClickHouse holds equal those emitted,
#          every one once (nsc-ch-check), whatever a stored unacknowledged.
# refresh: the name does not resolve at start: the agents keep trying
#          (failures counted, no connection); then it is a only: they
#          connect, job 1 is delivered; a and b: b outweighs a for node 0,
#          which moves to b (a rebalance, counted apart), node 1 stays;
#          b only: node 1 moves to b without a dying; then nothing: failures
#          counted, the last list kept, still on b; job 2 is delivered. Job 1
#          is exactly in a's store, job 2 exactly in b's.
# Skips (77) where the namespace cannot be made (unshare -rm, mount --bind).
set -euo pipefail
bin=$1 plugin=$2 mode=$3
. "$(dirname "$0")/lib.sh"
store_args=()
if [ "$mode" = kill_clickhouse ]; then
    . "$(dirname "$0")/../clickhouse/lib.sh"
    ch_require
fi

name=collectors.nsc.test
hosts=$dir/hosts
printf 'hosts: files\n' >"$dir/nsswitch.conf"
: >"$hosts"
# agent_bin for run_agent: the agent in its namespace, with the same pid
# (unshare and sh exec), so kill9 and stop reach the agent itself.
cat >"$dir/agent-ns" <<EOF
#!/bin/sh
exec unshare -rm sh -c 'mount --bind "\$1" /etc/hosts && mount --bind "\$2" /etc/nsswitch.conf && shift 2 && exec "\$@"' \\
    agent-ns "$hosts" "$dir/nsswitch.conf" "$bin/ncclscope-agent" "\$@"
EOF
chmod +x "$dir/agent-ns"
agent_bin=$dir/agent-ns
printf '127.0.0.2 %s\n' "$name" >"$hosts"
if ! unshare -rm sh -c 'mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/nsswitch.conf && getent ahostsv4 "$3"' \
        probe "$hosts" "$dir/nsswitch.conf" "$name" 2>"$dir/unshare.log" | grep -q '^127\.0\.0\.2 '; then
    echo "SKIPPED: no private /etc/hosts in a mount namespace here (unshare -rm, mount --bind): $(head -c 300 "$dir/unshare.log")"
    exit 77
fi
: >"$hosts"

# Collectors a (127.0.0.1, port 0) and b (127.0.0.2, a's port), stores db_a
# and db_b (or $store_args): pids[collector_a|collector_b], http_a, http_b, $port.
start_collectors() {
    collector_db=$dir/db_a start_collector 0 "${store_args[@]}"
    pids[collector_a]=${pids[collector]} http_a=$http
    unset "pids[collector]"
    listen_host=127.0.0.2 collector_db=$dir/db_b start_collector "$port" "${store_args[@]}"
    pids[collector_b]=${pids[collector]} http_b=$http
    unset "pids[collector]"
}
addr_a() { echo "tcp://127.0.0.1:$port"; }
addr_b() { echo "tcp://127.0.0.2:$port"; }
# on N ENDPOINT: node N's agent uses ENDPOINT.
# (the answer read whole first: grep -q ending early would fail curl, and the pipeline, with SIGPIPE)
on() {
    local m
    m=$(curl -sf -m 5 "http://$(cat "$dir/node$1/agent.http")/metrics") &&
        grep -qF "ncclscope_agent_collector_info{endpoint=\"$2\"} 1" <<<"$m"
}
wait_on() { wait_until 30 on "$1" "$2" || die "node $1 is not on $2"; }
start_agents() {
    local n
    for n in 0 1; do
        run_agent $n --host-name "node$n" --agent-id "node$n-agent" --collector "dns+tcp://$name:$port" --reconnect-ms 20 \
            --reconnect-max-ms 200 --failover-ms 3000 --probe-ms 200 "$@"
    done
}
delivered_all() {
    local n
    for n in 0 1; do wait_until 60 delivered $n || die "node $n did not deliver its spool"; done
}

# The events of the job in ClickHouse equal those emitted, each once.
check_clickhouse() {
    ch_sql front "SELECT type, count() FROM nsc.events FINAL WHERE job = '$job' GROUP BY type FORMAT TabSeparated" \
        >"$dir/counts.tsv" || die "cannot count the events"
    "$bin/nsc-ch-check" "$dir/emu.json" "$dir/counts.tsv" || die "ClickHouse differs from what was emitted"
}

case $mode in
kill | kill_clickhouse)
    if [ "$mode" = kill_clickhouse ]; then
        ch_cluster
        store_args=(--store "clickhouse://127.0.0.1:${chhttp[front]}/nsc?cluster=nsc"
                    --ch-shards "127.0.0.1:${chhttp[shard0]},127.0.0.1:${chhttp[shard1]}")
    fi
    start_collectors
    printf '127.0.0.2 %s\n127.0.0.1 %s\n' "$name" "$name" >"$hosts"
    start_agents
    for n in 0 1; do
        wait_metric $n ncclscope_agent_dns_addresses 2
        wait_metric $n ncclscope_agent_collector_connected 1
    done
    on 0 "$(addr_a)" && { first=a ep=$(addr_a) other=b other_ep=$(addr_b); } ||
        { first=b ep=$(addr_b) other=a other_ep=$(addr_a); }
    on 0 "$ep" || die "node 0 is on neither address"
    on 1 "$other_ep" || die "node 1 is not on the address node 0 did not pick"
    [ "$(metric 0 ncclscope_agent_collector_index)" = "$([ $first = a ] && echo 0 || echo 1)" ] ||
        die "node 0's index is not its address's place in the sorted list"
    emulate --iters 120 --pace-us 40000 &
    emu=$!
    wait_until 30 metric_above 0 ncclscope_agent_forward_batches_acked_total 2 || die "node 0: nothing acknowledged"
    resolved=$(metric 0 ncclscope_agent_dns_resolutions_total)
    kill9 collector_$first
    wait_on 0 "$other_ep"
    metric_is 0 ncclscope_agent_collector_failovers_total 1 || die "node 0 moved more than once"
    grep -qF "collector $ep ($([ $first = a ] && echo 1 || echo 2) of 2): no connection for 3.0 s; moving to $other_ep" \
        "$dir/agent0.log" || die "node 0 did not log its move"
    wait_until 10 metric_above 0 ncclscope_agent_dns_resolutions_total "$resolved" ||
        die "node 0 did not resolve the name again on its collector's death (the refresh is 30 s)"
    wait $emu || die "emulator failed"
    delivered_all
    for n in 0 1; do
        [ "$(metric $n ncclscope_agent_spool_refused_entries_total)" = 0 ] || die "node $n refused batches"
        [ "$(metric $n ncclscope_agent_forward_events_acked_total)" = "$(metric $n ncclscope_agent_events_out_total)" ] ||
            die "node $n: events spooled and acknowledged differ"
    done
    metric_is 1 ncclscope_agent_collector_failovers_total 0 || die "node 1 moved off a live collector"
    on 1 "$other_ep" || die "node 1 left the survivor"
    http=$([ $other = a ] && echo "$http_a" || echo "$http_b")
    collector_metric_above ncclscope_collector_batches_in_total 2 || die "the survivor stored next to nothing"
    for n in 0 1; do stop agent$n; done
    stop collector_$other
    [ "$mode" != kill_clickhouse ] || check_clickhouse
    ;;
refresh)
    start_collectors
    start_agents --dns-refresh-ms 300
    for n in 0 1; do
        wait_until 30 metric_above $n ncclscope_agent_dns_failures_total 2 || die "node $n: no failed resolutions counted"
        metric_is $n ncclscope_agent_collector_connects_total 0 || die "node $n connected without an address"
        metric_is $n ncclscope_agent_dns_addresses 0 || die "node $n has addresses of a name that does not resolve"
    done
    grep -q "cannot resolve (.*); no address yet, trying again" "$dir/agent0.log" || die "node 0 did not log the failure"
    printf '127.0.0.1 %s\n' "$name" >"$hosts"
    for n in 0 1; do wait_on $n "$(addr_a)"; done
    emulate
    cp "$dir/emu.json" "$dir/emu1.json"
    delivered_all
    printf '127.0.0.1 %s\n127.0.0.2 %s\n' "$name" "$name" >"$hosts"
    for n in 0 1; do wait_metric $n ncclscope_agent_dns_addresses 2; done
    # b joined: it outweighs a for node0-agent, which moves (a rebalance);
    # a still outweighs b for node1-agent, which stays
    wait_on 0 "$(addr_b)"
    metric_is 0 ncclscope_agent_collector_rebalances_total 1 || die "node 0 did not count its rebalance"
    metric_is 0 ncclscope_agent_collector_failovers_total 0 || die "node 0's rebalance counted as a failover"
    grep -qF "collector $(addr_a) is still listed, but an address that joined outweighs it for this agent (a rebalance); using $(addr_b) (2 of 2)" \
        "$dir/agent0.log" || die "node 0 did not log its rebalance"
    on 1 "$(addr_a)" || die "node 1 left a, still its pick"
    metric_is 1 ncclscope_agent_collector_rebalances_total 0 || die "node 1 rebalanced"
    metric_is 1 ncclscope_agent_collector_connects_total 1 || die "node 1 reconnected"
    printf '127.0.0.2 %s\n' "$name" >"$hosts"
    wait_on 1 "$(addr_b)"
    metric_is 1 ncclscope_agent_collector_failovers_total 1 || die "node 1: not one move"
    grep -qF "collector $(addr_a) is no longer among the name's addresses; using $(addr_b) (1 of 1)" "$dir/agent1.log" ||
        die "node 1 did not log its move"
    on 0 "$(addr_b)" || die "node 0 left b"
    metric_is 0 ncclscope_agent_collector_failovers_total 0 || die "node 0 moved off b, still listed"
    failed=$(metric 0 ncclscope_agent_dns_failures_total)
    : >"$hosts"
    wait_until 30 metric_above 0 ncclscope_agent_dns_failures_total "$failed" || die "node 0: no failure counted"
    for n in 0 1; do
        metric_is $n ncclscope_agent_dns_addresses 1 || die "node $n dropped its last good list"
        on $n "$(addr_b)" || die "node $n left b"
    done
    job=$job-2
    emulate
    delivered_all
    for n in 0 1; do stop agent$n; done
    stop collector_a
    stop collector_b
    "$bin/nsc-e2e-store-check" "$dir/emu1.json" "$dir/db_a" "${job%-2}" || die "a's store differs from job 1"
    "$bin/nsc-e2e-store-check" "$dir/emu.json" "$dir/db_b" "$job" || die "b's store differs from job 2"
    ;;
*)
    die "unknown mode $mode"
    ;;
esac
echo "dns.sh ($mode): ok"
