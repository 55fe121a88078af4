#!/usr/bin/env bash
# bench_metrics.sh: the cost of the collector's /metrics with many
# communicators, against /healthz (same server, no work) in the same run.
#
#   tests/bench/bench_metrics.sh BIN_DIR PLUGIN [COMMS] [REQUESTS]
#
# A collector and one agent on loopback (tests/e2e/lib.sh), an emulated job of
# 2 ranks each opening COMMS communicators (default 128) with 3 AllReduce each;
# then REQUESTS (default 50) sequential GETs of each endpoint with curl: the
# median and p90 of curl's total time, and /metrics' size and series.
set -euo pipefail
bin=$1 plugin=$2 comms=${3:-128} n=${4:-50} mode=bench nodes=1
. "$(dirname "$0")/../e2e/lib.sh"
start_collector 0
start_agent 0
# a proxy thread per communicator: room for them all in the plugin (faults.sh comms100)
NCCLSCOPE_BUFFER_MB=512 NCCLSCOPE_THREADS=$((comms + 32)) NCCLSCOPE_FLUSH_MS=50 scenario=coll \
    emulate --iters 3 --comms "$comms" --channels 1
wait_until 60 collector_metric_is ncclscope_collector_live_comms "$comms" || die "the collector has not seen every communicator"
url=http://127.0.0.1:$http
measure() {  # measure PATH
    for _ in $(seq "$n"); do curl -sf -o /dev/null -w '%{time_total}\n' "$url$1"; done |
        sort -n | awk -v name="$1" '{ t[NR] = $1 * 1000 }
      END { printf "%-10s median %7.2f ms  p90 %7.2f ms  (%d requests)\n", name, t[int((NR + 1) / 2)], t[int(NR * 0.9)], NR }'
}
curl -sf "$url/metrics" >"$dir/metrics"
echo "/metrics: $(wc -c <"$dir/metrics") bytes, $(grep -vc '^#' "$dir/metrics") series," \
     "$(grep -c '^ncclscope_comm_info' "$dir/metrics") communicators exported" \
     "(omitted: $(awk '$1 == "ncclscope_collector_metrics_comms_omitted" {print $2}' "$dir/metrics"))"
measure /healthz
measure /metrics
