#!/bin/bash
# clock.sh: clock alignment measured end to end. Three simulated nodes with
# their own clocks (the emulator's --node-clock: the clock shim in their
# ranks), each node's agent under the same shim with the same parameters and
# epoch, so its probes read the node's clock: ncclscope-emu (real plugin,
# ring over 3 nodes, GPU timers spread and drifting) -> agents -> collector.
# Then nsc-e2e-store-check (every event exactly once) and nsc-e2e-clock-check
# (every aligned time of the query layer's timeline against the truth). The
# probes go over the collector's UDP clock port (each agent has answers there).
#
#   clock.sh BIN_DIR PLUGIN MODE
#
# skew: node0 unskewed, node1 +0.8 s +100 ppm, node2 -1 s -100 ppm; p99 error
#       <= 10 us for CPU times, <= 20 us for GPU times (issue 5), where the
#       machine's loopback allows it: the alignment cannot be finer than the
#       probes' one-way asymmetry, which is thread wake-ups. If the slowest
#       agent's fastest probe round trip exceeds 100 us (a machine whose
#       context switches cost several times the usual; the targets were met
#       at 35-90 us), the bounds become a quarter of that round trip for CPU
#       times and 10 us more for GPU times, and the run says so.
# step: the same, and node1's clock steps +50 ms 1.5 s after the epoch,
#       node2's -20 ms 2.5 s after: each stored model has a new segment
#       starting within two probe intervals of its step, CPU times outside
#       that window within 50 us at p99, the store is exact; GPU times too
#       (a rank's GPU line is fitted against aligned time, so it inherits the
#       young segment's error, not the step: docs/collector-clock.md, "GPU pTimer").
# Environment (the benchmark): CLOCK_ITERS (default 60 iterations, 0.1 s
# apart), CLOCK_PROBE_MS (default 20), CLOCK_OUT (a file for the checker's
# report lines).
set -euo pipefail
bin=$1 plugin=$2 mode=$3
nodes=3
. "$(dirname "$0")/lib.sh"
probe_ms=${CLOCK_PROBE_MS:-20}
iters=${CLOCK_ITERS:-60}
case $mode in
skew) clocks=(0=0 1=800000000:100 2=-1000000000:-100) ;;
step) clocks=(0=0 1=800000000:100@1500:50000000 2=-1000000000:-100@2500:-20000000) ;;
*) die "unknown mode $mode" ;;
esac
# start_node_agent N: node N's agent with node N's clock, as the emulator's
# launcher gives it to the node's ranks (docs/emulator-model.md, "Node clock").
start_node_agent() {
    local spec=${clocks[$1]#*=} at_ms=0 step_ns=0 ppm=0
    if [[ $spec == *@* ]]; then
        step_ns=${spec#*@*:} at_ms=${spec#*@} spec=${spec%@*}
        at_ms=${at_ms%:*}
    fi
    [[ $spec == *:* ]] && ppm=${spec#*:}
    LD_PRELOAD=$bin/../lib/libnsc-clockshim.so NCCLSCOPE_TEST_CLOCK_OFFSET_NS=${spec%%:*} \
        NCCLSCOPE_TEST_CLOCK_DRIFT_PPM=$ppm NCCLSCOPE_TEST_CLOCK_EPOCH_NS=$NCCLSCOPE_EMU_EPOCH_NS \
        NCCLSCOPE_TEST_CLOCK_STEP_AT_NS=$((at_ms * 1000000)) NCCLSCOPE_TEST_CLOCK_STEP_NS=$step_ns \
        start_agent "$1" --probe-ms "$probe_ms"
}

# measure N: one whole run (attempt N), then the checker; its status.
measure() {
    rm -rf "$dir/db" "$dir"/node*
    job=clock-$$-$1
    # The epoch the nodes' drifts and steps count from: now, on the true
    # clock (CLOCK_MONOTONIC, which the collector also reads).
    NCCLSCOPE_EMU_EPOCH_NS=$(python3 -c 'import time; print(time.monotonic_ns())')
    export NCCLSCOPE_EMU_EPOCH_NS
    start_collector 0 --clock-persist-s 1
    for n in 0 1 2; do start_node_agent $n; done
    local args=() c
    for c in "${clocks[@]}"; do args+=(--node-clock "$c"); done
    scenario=ring emulate "${args[@]}" --iters "$iters" --pace-us 100000 --gpu-drift-ppm 50
    # A last probe window (1 s) closes after the job: every agent completes
    # 1.5 s of probes more (the collector writes the models as it stops).
    local rtt=0 n r had
    for n in 0 1 2; do
        had=$(metric $n ncclscope_agent_clock_samples_total)
        wait_until 20 metric_above $n ncclscope_agent_clock_samples_total $((had + 1500 / probe_ms)) ||
            die "node $n: its clock probes stopped"
        metric_above $n ncclscope_agent_clock_udp_answers_total 0 || die "node $n: no probe answered on the UDP clock port"
    done
    for n in 0 1 2; do
        r=$(metric $n ncclscope_agent_clock_rtt_seconds | awk '{ printf "%.0f", $1 * 1e9 }')
        [ "${r:-0}" -gt "$rtt" ] && rtt=$r
    done
    finish
    "$bin/nsc-e2e-clock-check" "${check[@]}" $(bounds "$rtt") "$dir/emu.json" "$dir/db" "$job" >"$dir/clock.txt"
}
# bounds RTT_NS: the checker's p99 bounds for this mode and machine.
bounds() {
    if [ "$mode" = step ]; then
        # After a step the new segment is young: its offset comes from a few
        # points and it keeps the old drift; measured 10-30 us p99 (docs/benchmarks.md).
        echo --expect-step --max-cpu-p99-ns 50000 --max-gpu-p99-ns 50000
    elif [ "$1" -le 100000 ]; then
        echo --max-cpu-p99-ns 10000 --max-gpu-p99-ns 20000
    else
        echo "clock.sh: the fastest probe round trip is $1 ns (> 100 us): bounds $(($1 / 4)) ns CPU, $(($1 / 4 + 10000)) ns GPU" >&2
        echo --max-cpu-p99-ns $(($1 / 4)) --max-gpu-p99-ns $(($1 / 4 + 10000))
    fi
}
check=(--step-window-ns $((2 * probe_ms * 1000000)))
# The probes' one-way asymmetry on loopback is a matter of thread wake-ups:
# on a machine loaded far beyond its cores a run can miss the bound, so the
# bound must hold in one of three runs (each reported).
for attempt in 1 2 3; do
    if measure $attempt; then
        cat "$dir/clock.txt"
        [ -z "${CLOCK_OUT:-}" ] || cp "$dir/clock.txt" "$CLOCK_OUT"
        echo "clock.sh $mode: ok (attempt $attempt)"
        exit 0
    fi
    cat "$dir/clock.txt"
    echo "clock.sh $mode: attempt $attempt out of bounds (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done
die "clock alignment out of bounds in 3 runs"
