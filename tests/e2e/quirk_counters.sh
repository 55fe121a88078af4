#!/bin/bash
# quirk_counters.sh: faults the plugin tolerates are counted where an
# operator sees them, the agents' /metrics (issue 34): every ProxyOp and
# KernelCh start NCCL made under a NULL parent (the emulator's null-parent
# quirk) as an orphan, and every failed call of a chained plugin (the record
# plugin, failing each call) as a chain error.
#
#   quirk_counters.sh BIN_DIR PLUGIN RECORD_PLUGIN
set -euo pipefail
bin=$1 plugin=$2 record=$3
nodes=2
. "$(dirname "$0")/lib.sh"

start_all
scenario=ring
NCCLSCOPE_CHAIN=$record NCCLSCOPE_TEST_RECORD_FILE=/dev/null NCCLSCOPE_TEST_RECORD_FAIL_CALLS=1 \
    emulate --iters 20 --nccl-quirk null-parent
for n in 0 1; do
    wait_until 20 metric_is $n 'ncclscope_agent_processes{state="alive"}' 0 || die "node $n: processes still alive"
    wait_until 20 delivered $n || die "node $n did not deliver"
done
children=$(python3 -c 'import json,sys; c = json.load(open(sys.argv[1]))["totals"]["calls"]["start"]; print(c.get("ProxyOp", 0) + c.get("KernelCh", 0))' "$dir/emu.json")
[ "$children" -gt 0 ] || die "the emulator started no ProxyOp or KernelCh"
[ "$(sum_metric ncclscope_agent_process_orphan_children_total)" = "$children" ] ||
    die "orphans: $(sum_metric ncclscope_agent_process_orphan_children_total), want $children"
[ "$(sum_metric ncclscope_agent_process_chain_errors_total)" -gt 0 ] || die "no chain error counted"
for n in 0 1; do stop agent$n; done
stop collector
