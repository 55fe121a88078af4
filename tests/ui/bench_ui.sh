#!/bin/bash
# bench_ui.sh: how long the web view takes in headless Chromium on a large
# window (docs/benchmarks.md, "Web view"). Not a test: prints times.
#
#   tests/ui/bench_ui.sh BIN_DIR PLUGIN [ITERS]
#
# An emulated job (coll scenario, 4 ranks on 2 nodes, every event type, the
# time model off) of ITERS AllReduces (default 2000) through the agents into
# a collector; then browser.py loads the timeline of the whole job with a
# page of 100,000 events and clicks Download Chrome JSON (every page of the
# window), loads it again and clicks Download Perfetto (the collector's
# /api/v1/export), and the communicator page with the last 400 collectives;
# then the CLI's Chrome export of the same window, for comparison.
set -eu
bin=$1 plugin=$2 iters=${3:-2000} mode=bench
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../e2e/lib.sh"
start_collector 0
start_agent 0
start_agent 1
scenario=coll emulate --iters "$iters" --time-scale 0
for n in 0 1; do wait_until 60 delivered $n || die "node $n did not deliver"; done
api() { curl -sf -m 60 "http://127.0.0.1:$http/api/v1/$1"; }
comm=$(api comms | python3 -c 'import json, sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
read -r t0 t1 events < <(api "timeline?comm=$comm&format=compact&states=0&limit=1000000" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("[")]
print(min(r[5] for r in rows), max(max(r[5], r[6] or 0) for r in rows), len(rows))')
echo "job: $iters AllReduces, $events events in [$t0, $t1]"
u=http://127.0.0.1:$http/ui
python3 "$here/browser.py" "$dir/out" "timeline=$u/timeline.html?comm=$comm&job=$job&t0_ns=$t0&t1_ns=$t1&limit=100000" \
    download:download \
    "perfetto=$u/timeline.html?comm=$comm&job=$job&t0_ns=$t0&t1_ns=$t1&limit=100000" download:perfetto \
    "comm=$u/comm.html?comm=$comm&job=$job&last=400"
start=$(date +%s.%N)
"$bin/ncclscope" --collector "http://127.0.0.1:$http" --job "$job" export --comm "$comm" --t0 "$t0" --t1 "$t1" \
    --format chrome -o "$dir/cli.json"
echo "ncclscope export --format chrome of the same window: $(stat -c %s "$dir/cli.json") bytes in" \
    "$(python3 -c "import sys; print('%.2f s' % ($(date +%s.%N) - $start))")"
