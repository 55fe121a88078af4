#!/bin/bash
# hosts.sh: `ncclscope hosts` counts, per host across jobs, the causes
# diagnose places there (docs/cli.md "hosts", issue 17 item 5). One collector
# and one agent per simulated node (a 4-node ring, rank r on node r) see five
# jobs in turn: a clean one, a late host on node1, a slow NIC on node2, a slow
# link node3 -> node0 and rank 0 killed on node0; the counts of each cause
# class must be exactly those faults (a slow link counts at both ends).
#
#   hosts.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2 mode=ci
nodes=4
. "$(dirname "$0")/lib.sh"

# run NAME ARGS...: job NAME (the emulator's base shape, then ARGS) to its
# end, every event delivered.
run() {
    local name=$1 n
    shift
    NCCLSCOPE_JOB=$name NCCLSCOPE_EVENT_MASK=all "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" \
        --nodes $nodes --ranks-per-node 1 --iters 12 --channels 2 --count 4194304 --chunk-size 2097152 \
        --seed 1 "$@" --summary "$dir/emu-$name.json" >"$dir/emu.log" 2>&1 || true
    [ -s "$dir/emu-$name.json" ] || die "$name: the emulator wrote no summary"
    for n in $(seq 0 $((nodes - 1))); do
        wait_until 20 metric_is $n 'ncclscope_agent_processes{state="alive"}' 0 || die "node $n: processes still alive"
        wait_until 20 delivered $n || die "node $n did not deliver"
    done
}

start_all --hang-ms 300
run h-none --scenario ring
run h-late --scenario ring --slow-rank 1 --slow-us 4000
run h-nic --scenario ring --slow-nic 2:4
run h-link --scenario ring --slow-link 3:0:4
run h-kill --scenario kill --kill-rank 0 --kill-after 2 --pace-us 20000
"$bin/ncclscope" --collector "http://127.0.0.1:$http" --json hosts >"$dir/hosts.json" || die "hosts failed"
"$bin/ncclscope" --collector "http://127.0.0.1:$http" hosts >"$dir/hosts.txt" || die "hosts (table) failed"
python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
causes=("late","slow_link","slow_nic","stall","dead","dropped")
got={h["host"]: {k: h[k] for k in causes if h[k]} for h in d["hosts"]}
got={h: c for h, c in got.items() if c}
want={"node0": {"slow_link": 1, "dead": 1}, "node1": {"late": 1}, "node2": {"slow_nic": 1}, "node3": {"slow_link": 1}}
sys.exit(0 if d["jobs"] == 5 and got == want else "jobs %d, causes %s, want %s" % (d["jobs"], got, want))' \
    "$dir/hosts.json" || die "hosts: $(cat "$dir/hosts.json")"
grep -q '^node0 ' "$dir/hosts.txt" || die "hosts table: $(cat "$dir/hosts.txt")"
cat "$dir/hosts.txt"
