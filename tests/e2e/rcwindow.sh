#!/bin/bash
# rcwindow.sh: a root-cause pass reads each communicator's last
# rootcause_window_seqs seqs, and a verdict found before its seq left the
# window stays (docs/collector-http.md, "Root-cause metrics"). One collector
# (window 8 seqs, passes every 100 ms) and one agent; a ring of 4 ranks, one
# collective every 400 ms, rank 1 disagreeing on the count at seq 3. Once the
# live state reached seq 3 the emulator is stopped (SIGSTOP) until a pass
# found the mismatch (ncclscope_host_causes{host="node0",cause="other"}),
# then runs to its end at seq 19, past the window; the verdict must still
# be there after ten more passes, while /api/v1/diagnose, which reads the
# whole job, names it too.
#
#   rcwindow.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=1
. "$(dirname "$0")/lib.sh"

other_on_node0() { [ "$(curl -sf -m 5 "http://127.0.0.1:$http/metrics" |
    awk '$1 == "ncclscope_host_causes{host=\"node0\",cause=\"other\"}" { print $2 }')" = 1 ]; }
# the emulator and its node's worker (a child)
emu_procs() { echo "$1" $(cat /proc/"$1"/task/*/children 2>/dev/null); }
reached() {
    status_has "any(f['max_seq'] >= $1 for j in s['jobs'] if j['job'] == 'rc-window' for c in j['comms'] for f in c['funcs'])"
}

start_all --rootcause-interval-ms 100 --rootcause-window-seqs 8 --hang-ms 600000
NCCLSCOPE_JOB=rc-window "$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --nodes 1 --ranks-per-node 4 \
    --ranks-as threads --scenario ring --iters 20 --pace-us 400000 --mismatch 1:3:count \
    --summary "$dir/emu.json" >"$dir/emu.log" 2>&1 &
pids[emu]=$!
wait_until 30 reached 3 || die "the job never reached seq 3"
procs=$(emu_procs "${pids[emu]}")
kill -STOP $procs
reached 11 && die "the job ran past the window before it was stopped"
wait_until 20 other_on_node0 || die "no pass found the mismatch at seq 3"
kill -CONT $procs
wait "${pids[emu]}" || die "emulator failed"
unset "pids[emu]"
wait_until 30 reached 19 || die "the job's last seqs never reached the live state"
p0=$(collector_metric ncclscope_collector_rootcause_passes_total)
wait_until 30 collector_metric_above ncclscope_collector_rootcause_passes_total $((p0 + 9)) || die "no ten passes"
other_on_node0 || die "the mismatch left /metrics with its seq out of the window: $(curl -sf -m 5 \
    "http://127.0.0.1:$http/metrics" | grep '^ncclscope_host_causes')"
curl -sf -m 30 "http://127.0.0.1:$http/api/v1/diagnose?job=rc-window" | grep -q '"kind":"mismatch"' ||
    die "diagnose of the whole job does not name the mismatch"
echo "rcwindow: the mismatch at seq 3 stays after the window moved to seq 19"
