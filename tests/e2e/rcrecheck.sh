#!/bin/bash
# rcrecheck.sh: the root-cause passes read the store's version of an ended
# job only while it ended within rootcause_recheck_ms, then keep its
# verdict without reading (docs/collector-http.md, "Root-cause metrics").
# One collector and one agent; a ring of 4 ranks with a late host runs to
# its end; passes every 100 ms. While the job is recent the passes read its
# version (ncclscope_collector_rootcause_version_reads_total grows); once it
# ended over rootcause_recheck_ms (1 s) ago, ten passes more read none, and
# its causes in /metrics (ncclscope_host_causes) stay as they were.
#
#   rcrecheck.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=1
. "$(dirname "$0")/lib.sh"

reads() { collector_metric ncclscope_collector_rootcause_version_reads_total; }
passes() { collector_metric ncclscope_collector_rootcause_passes_total; }
causes() { curl -sf -m 5 "http://127.0.0.1:$http/metrics" | grep '^ncclscope_host_causes'; }

start_all --rootcause-interval-ms 100 --rootcause-recheck-ms 1000 --live-interval-ms 100
run_to_end rc-recheck --scenario ring --ranks-per-node 4 --ranks-as threads --iters 24 --slow-rank 2 --slow-us 4000
wait_until 20 collector_metric_above ncclscope_collector_rootcause_version_reads_total 0 ||
    die "no version read while the job was recent"

# still: no version read over ten passes (ended long enough ago), the
# causes held as they were
still() {
    local r0 p0
    r0=$(reads) p0=$(passes) c0=$(causes)
    wait_until 20 collector_metric_above ncclscope_collector_rootcause_passes_total $((p0 + 9)) || return 1
    [ "$(reads)" = "$r0" ]
}
ok=0
for _ in $(seq 20); do still && { ok=1; break; }; done
[ $ok = 1 ] || die "the passes still read the ended job's version: $(reads) reads after $(passes) passes"
[ "$(causes)" = "$c0" ] || die "the job's causes changed without a version read: $c0 -> $(causes)"
collector_metric_is ncclscope_collector_rootcause_jobs 1 || die "the job left the root-cause metrics"
echo "rcrecheck: $(reads) version reads, none over the last ten of $(passes) passes"
