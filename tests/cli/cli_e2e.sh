#!/bin/bash
# cli_e2e.sh: every verb of ncclscope on the real pipeline. `ncclscope up`
# starts a collector and an agent (free ports, temp run dir), ncclscope-emu
# runs a job through the real plugin, then each verb's --json is checked
# against the emulator's --summary (cli_e2e_check.py), --db on an mdb_copy of
# the store must print the same JSON as the HTTP API, and `ncclscope down`
# stops both. The store itself is checked against the summary by
# tests/e2e's nsc-e2e-store-check (every event exactly once) in the clean run.
#
#   cli_e2e.sh BIN_DIR PLUGIN MODE
# ring: 4 nodes x 1 rank, RING (every leg a network ProxyOp: full rings).
# hang: 1 node x 4 ranks, rank 2 stops; diagnose must name rank 2.
# kill: 1 node x 4 ranks, rank 1 SIGKILLs itself; diagnose must name rank 1.
# straggler: 1 node x 4 ranks, rank 3 late at every collective; diagnose must name it.
# All nodes' run directories are links to the one agent's, so one agent
# serves the job. Every wait is bounded. NSC_KEEP=1 keeps the temp folder of
# a failed run (logs, store, every verb's JSON) and says where.
set -euo pipefail
bin=$1 plugin=$2 mode=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../e2e/lib.sh"
job=cli-$$
cli() { "$bin/ncclscope" "$@"; }
before_cleanup() { cli down --run-dir "$dir/node0" --wait 5 >/dev/null 2>&1; }

# Lag and death thresholds short enough for a test; the agent names its host
# as the emulator names node 0.
export NCCLSCOPE_HANG_MS=300 NCCLSCOPE_HEARTBEAT_TIMEOUT_MS=60000 NCCLSCOPE_HOSTNAME=node0
cli up --run-dir "$dir/node0" --port 0 --zmq-port 0 --agent-port 0 --wait 20 >"$dir/up.out" || die "up failed"
url=$(sed -n 's/^collector \(http:[^ ]*\) .*/\1/p' "$dir/up.out")
[ -n "$url" ] || die "up printed no collector URL"
cli --collector "$url" --json status >/dev/null || die "status right after up failed"

case $mode in
ring) shape=(--nodes 4 --ranks-per-node 1 --scenario ring --iters 5) ;;
straggler) shape=(--nodes 1 --ranks-per-node 4 --scenario coll --iters 12 --slow-rank 3 --slow-us 5000) ;;
hang) shape=(--nodes 1 --ranks-per-node 4 --scenario hang --hang-rank 2 --hang-after 2 --hang-ms 500 --iters 4) ;;
kill)  # rank 1's unsent batches die with it: the check takes what reached the store
    shape=(--nodes 1 --ranks-per-node 4 --scenario kill --kill-rank 1 --kill-after 2 --iters 4 --pace-us 20000) ;;
*) die "unknown mode $mode" ;;
esac
for n in 1 2 3; do ln -s node0 "$dir/node$n"; done
NCCLSCOPE_JOB=$job NCCLSCOPE_EVENT_MASK=all "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" \
    --channels 2 "${shape[@]}" --summary "$dir/emu.json" >"$dir/emu.log" 2>&1 || [ "$mode" = kill ] ||
    die "emulator failed"

# Delivered: the agent has nothing left to send. In a clean run the store
# must then hold exactly what the emulator emitted (tests/e2e's checker; it
# counts stopped events, so it does not apply to hung or killed ranks, whose
# open events the store also holds).
agent=$(cat "$dir/node0/agent.http")
# Every process of the job seen and its end noticed (a killed one may never
# have flushed anything), then nothing left to send.
procs=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["processes"]))' "$dir/emu.json")
[ "$mode" = kill ] && procs=$((procs - 1))
delivered() {
    [ "$(metric 0 ncclscope_agent_processes_started_total)" -ge "$procs" ] &&
        [ "$(metric 0 'ncclscope_agent_processes{state="alive"}')" = 0 ] &&
        [ "$(metric 0 ncclscope_agent_spool_entries)" = 0 ] && [ "$(metric 0 ncclscope_agent_pxn_pending)" = 0 ] &&
        [ "$(metric 0 ncclscope_agent_forward_inflight)" = 0 ]
}
# (three checks in a row: lifecycle records of exiting processes come later)
quiet=0
for _ in $(seq 600); do
    if delivered; then quiet=$((quiet + 1)); else quiet=0; fi
    [ $quiet = 3 ] && break
    sleep 0.1
done
[ $quiet = 3 ] || die "the agent did not deliver its spool: $(curl -s "http://$agent/metrics" | grep -E '^ncclscope_agent_(spool_entries|pxn_pending|forward_inflight|processes)' | tr '\n' ' ')"
if [ "$mode" = ring ] || [ "$mode" = straggler ]; then
    "$bin/nsc-e2e-store-check" "$dir/emu.json" "$dir/node0/store" "$job" || die "the store differs from what was emitted"
fi
# A hung rank is one NCCLSCOPE_HANG_MS behind: diagnose finds a problem (exit
# 1) once that much has passed; a clean run has none to wait for.
diagnosed() { local rc=0; cli --collector "$url" --json diagnose >/dev/null 2>&1 || rc=$?; [ $rc = 1 ]; }
case $mode in
hang|kill|straggler) wait_until 10 diagnosed || die "diagnose found no problem in mode $mode" ;;
esac

# Every verb from the collector, then from a copy of its store.
comm=$(cli --collector "$url" --json comms | python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
verbs() {  # verbs OUTDIR SOURCE-OPTIONS...
    local out=$1
    shift
    mkdir -p "$out"
    cli "$@" --json comms >"$out/comms.json"
    cli "$@" --json status >"$out/status.json"
    cli "$@" --json collectives --comm "$comm" >"$out/collectives.ndjson"
    cli "$@" --json timeline --comm "$comm" >"$out/timeline.ndjson"
    cli "$@" --json topology --comm "$comm" >"$out/topology.json"
    cli "$@" --json stats --comm "$comm" >"$out/stats.json"
    local rc=0
    cli "$@" --json diagnose >"$out/diagnose.json" || rc=$?
    echo "$rc" >"$out/diagnose.rc"
}
same=0
for _ in 1 2 3; do  # the collector persists clock models now and then: retry a copy taken between two writes
    verbs "$dir/http" --collector "$url" || die "a verb failed against the collector"
    rm -rf "$dir/copy" && mkdir "$dir/copy" && mdb_copy "$dir/node0/store" "$dir/copy" || die "mdb_copy failed"
    verbs "$dir/db" --db "$dir/copy" || die "a verb failed on the store copy"
    if python3 "$here/cli_e2e_check.py" same "$dir/http" "$dir/db"; then same=1; break; fi
done
[ $same = 1 ] || die "--db on a copy of the store differs from the HTTP API"
python3 "$here/cli_e2e_check.py" truth "$dir/emu.json" "$dir/http" "$mode" || die "the CLI's JSON differs from the emulator's summary"
# --limit N: the first N records of the whole answer, and a note on stderr
# when more remain (none when N covers them all); from both sources. Records
# are compared by identity: aligned times move when the collector refits a
# clock model between two queries.
first_n() {  # first_n FULL PART N: PART's records are FULL's first N
    python3 -c 'import json,sys
key = lambda r: tuple(r.get(k) for k in ("kind", "type", "pid", "id", "func", "seq"))
recs = lambda f: [key(r) for r in map(json.loads, open(f)) if r.get("kind") not in ("header", "end")]
full, part, n = recs(sys.argv[1]), recs(sys.argv[2]), int(sys.argv[3])
sys.exit(0 if len(full) > n and part == full[:n] else "%d of %d records, not the first %d" % (len(part), len(full), n))' "$@"
}
for src in "--collector $url" "--db $dir/copy"; do
    # shellcheck disable=SC2086
    cli $src --json timeline --comm "$comm" --limit 7 >"$dir/limit.ndjson" 2>"$dir/limit.err" || die "timeline --limit failed ($src)"
    first_n "$dir/http/timeline.ndjson" "$dir/limit.ndjson" 7 || die "timeline --limit 7 ($src)"
    grep -q "stopped at --limit 7" "$dir/limit.err" || die "timeline --limit 7: no note on stderr ($src)"
    # shellcheck disable=SC2086
    cli $src --json collectives --comm "$comm" --limit 2 >"$dir/limit.ndjson" 2>"$dir/limit.err" || die "collectives --limit failed ($src)"
    first_n "$dir/http/collectives.ndjson" "$dir/limit.ndjson" 2 || die "collectives --limit 2 ($src)"
    # shellcheck disable=SC2086
    cli $src --json timeline --comm "$comm" --limit 1000000 >"$dir/limit.ndjson" 2>"$dir/limit.err" || die "timeline --limit 1000000 failed ($src)"
    [ ! -s "$dir/limit.err" ] || die "timeline --limit 1000000: $(cat "$dir/limit.err")"
done
cli --collector "$url" status >"$dir/status.txt" || die "status (text) failed"
grep -q "communicators by shape" "$dir/status.txt" || die "status text has no shape section"
# Counts of one are singular: "1 communicator", "1 job".
grep -q " in 1 communicator, " "$dir/status.txt" || die "status: not '1 communicator': $(grep '^job' "$dir/status.txt")"
cli --collector "$url" hosts >"$dir/hosts.txt" || die "hosts (text) failed"
grep -qx "1 job analysed" "$dir/hosts.txt" || die "hosts: not '1 job analysed': $(head -1 "$dir/hosts.txt")"
if [ "$mode" = hang ]; then  # every process has exited: the job ended hung, rank 2 never arrived
    grep -qE "^  ended    comm .*: ended hung at AllReduce seq [0-9]+: rank 2 never arrived" "$dir/status.txt" ||
        die "status: $(cat "$dir/status.txt")"
    cli --collector "$url" --raw status >"$dir/status-raw.txt" || die "status --raw failed"
    grep -qE "^  ended    comm .*: rank 2 never arrived" "$dir/status-raw.txt" ||
        die "status --raw: $(cat "$dir/status-raw.txt")"
fi
cli --collector "$url" collectives --comm "$comm" >"$dir/collectives.txt" || die "collectives (text) failed"
grep -q "^SEQ .*LAST" "$dir/collectives.txt" || die "collectives text has no table: $(head -3 "$dir/collectives.txt")"
cli --collector "$url" watch --count 1 >"$dir/watch.txt" || die "watch failed"
grep -q "events/s" "$dir/watch.txt" || die "watch printed no summary"
cli down --run-dir "$dir/node0" >/dev/null || die "down failed"
cli --collector "$url" --timeout 2 status >/dev/null 2>&1 && die "the collector still answers after down"
echo "cli_e2e.sh $mode: ok"
