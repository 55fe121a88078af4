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
dir=$(mktemp -d /tmp/nsc-bench-api.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT

mdb_copy "$store" "$dir/db" 2>/dev/null || { mkdir -p "$dir/db" && mdb_copy "$store" "$dir/db"; }
"$bin/ncclscope-collector" --db "$dir/db" --listen tcp://127.0.0.1:0 --http 127.0.0.1:0 \
  --port-file "$dir/ports" 2>"$dir/collector.log" &
pid=$!
for _ in $(seq 100); do grep -q http "$dir/ports" 2>/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$(awk '$1 == "http" {print $2}' "$dir/ports")
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
