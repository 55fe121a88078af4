#!/usr/bin/env bash
# bench_api.sh: latency of the collector's HTTP API on a store, against
# /healthz (the same server and connection setup, no work) in the same run.
#
#   tests/bench/bench_api.sh BIN_DIR STORE_DIR [REQUESTS]
#
# Starts ncclscope-collector on a copy of STORE_DIR (127.0.0.1, free ports),
# asks each endpoint REQUESTS times (default 50) with curl, one request at a
# time, and prints the median and p90 of curl's total time per endpoint.
# The communicator asked about is the store's first one.
set -euo pipefail
bin=$1 store=$2 n=${3:-50}
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"

mdb_copy "$store" "$dir/db" 2>/dev/null || { mkdir -p "$dir/db" && mdb_copy "$store" "$dir/db"; }
start_collector 0
url=http://127.0.0.1:$http
comm=$(curl -sf "$url/api/v1/comms" | python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])')

measure() {  # measure NAME PATH
  for _ in $(seq "$n"); do curl -sf -o /dev/null -w '%{time_total}\n' "$url$2"; done |
    sort -n | awk -v name="$1" '{ t[NR] = $1 * 1000 }
      END { printf "%-28s median %7.2f ms  p90 %7.2f ms  (%d requests)\n", name, t[int((NR + 1) / 2)], t[int(NR * 0.9)], NR }'
}
measure "healthz (baseline)" /healthz
measure status /api/v1/status
measure comms /api/v1/comms
measure topology "/api/v1/topology?comm=$comm"
measure stats "/api/v1/stats?comm=$comm"
measure "collectives (8)" "/api/v1/collectives?comm=$comm&limit=8"
measure "timeline (1000 events)" "/api/v1/timeline?comm=$comm&limit=1000"
