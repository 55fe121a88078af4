#!/bin/bash
# rcrecheck.sh: the root-cause passes read the store's version of an ended
# job only while it ended within rootcause_recheck_ms, then keep its
# verdict without reading (docs/collector-http.md, "Root-cause metrics").
# One collector and one agent; a ring of 4 ranks with a late host runs to
# its end; passes every 100 ms. While the job is recent the passes read its
# version (ncclscope_collector_rootcause_version_reads_total grows); once it
# ended over rootcause_recheck_ms (1 s) ago, ten passes more read none, and
# the late host's verdict stays in /metrics.
#
#   rcrecheck.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=1
. "$(dirname "$0")/lib.sh"

reads() { collector_metric ncclscope_collector_rootcause_version_reads_total; }
passes() { collector_metric ncclscope_collector_rootcause_passes_total; }
late_on_node0() { [ "$(curl -sf -m 5 "http://127.0.0.1:$http/metrics" |
    awk '$1 == "ncclscope_host_causes{host=\"node0\",cause=\"late\"}" { print $2 }')" = 1 ]; }

start_all --rootcause-interval-ms 100 --rootcause-recheck-ms 1000 --live-interval-ms 100
run_to_end rc-recheck --scenario ring --ranks-per-node 4 --ranks-as threads --iters 24 --slow-rank 2 --slow-us 4000
wait_until 20 collector_metric_above ncclscope_collector_rootcause_version_reads_total 0 ||
    die "no version read while the job was recent"

# still: no version read over ten passes (ended long enough ago)
still() {
    local r0 p0
    r0=$(reads) p0=$(passes)
    wait_until 20 collector_metric_above ncclscope_collector_rootcause_passes_total $((p0 + 9)) || return 1
    [ "$(reads)" = "$r0" ]
}
ok=0
for _ in $(seq 20); do still && { ok=1; break; }; done
[ $ok = 1 ] || die "the passes still read the ended job's version: $(reads) reads after $(passes) passes"
late_on_node0 || die "the late host's verdict left /metrics: $(curl -sf -m 5 "http://127.0.0.1:$http/metrics" |
    grep '^ncclscope_host_causes')"
collector_metric_is ncclscope_collector_rootcause_jobs 1 || die "the job left the root-cause metrics"
echo "rcrecheck: $(reads) version reads, none over the last ten of $(passes) passes"
