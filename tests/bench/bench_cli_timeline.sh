#!/usr/bin/env bash
# bench_cli_timeline.sh BIN_DIR [BASE_BIN_DIR] [BATCHES] [REPS]: the CLI's
# timeline (text lanes, --json, --csv) and export (Perfetto, Chrome JSON) of
# one communicator of ~1 M events (nsc-feed --direct: 8 ranks, realistic mix,
# BATCHES x 30,800 events; default 33 = 1,016,400), read through a collector
# on loopback and through --db on the same store. With BASE_BIN_DIR (another
# build's ncclscope, e.g. main's) each case runs both CLIs in turn: a
# same-run baseline. The source alone is measured too: curl of the timeline
# endpoint. Prints the median wall and CPU (user+sys) seconds and the peak
# RSS of REPS runs (default 3) per case. Not a ctest.
set -euo pipefail
bin=$1 base=${2:-} batches=${3:-33} reps=${4:-3}
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
tmp=$dir

mkdir "$tmp/db"
"$bin/nsc-feed" --direct "$tmp/db" --agents 1 --procs 8 --colls 50 --batches "$batches" | grep '^events='
start_collector 0
url=http://127.0.0.1:$http
echo "load before: $(cat /proc/loadavg)"

run() {  # run LABEL COMMAND... : REPS timed runs, one line each
  local label=$1; shift
  for _ in $(seq "$reps"); do
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" >"$tmp/out" 2>/dev/null
    echo "$label $(cat "$tmp/time") $(stat -c %s "$tmp/out" "$tmp/out.trace" 2>/dev/null | sort -n | tail -1)"
    rm -f "$tmp/out.trace"
  done
}
q="comm=0xfeed&limit=1000000"
{
  run "curl(source-alone) json" curl -sf "$url/api/v1/timeline?$q"
  run "curl(source-alone) json,states=0" curl -sf "$url/api/v1/timeline?$q&states=0"
  for cli in ${base:+base:$base} new:$bin; do
    name=${cli%%:*} dir=${cli#*:}
    for src in "collector --collector $url" "db --db $tmp/db"; do
      s=${src%% *} flags=${src#* }
      # shellcheck disable=SC2086
      {
        run "$name $s timeline-text" "$dir/ncclscope" $flags timeline --comm 0xfeed
        run "$name $s timeline-json" "$dir/ncclscope" $flags --json timeline --comm 0xfeed
        run "$name $s timeline-csv" "$dir/ncclscope" $flags timeline --comm 0xfeed --csv
        run "$name $s export-perfetto" "$dir/ncclscope" $flags export --comm 0xfeed -o "$tmp/out.trace"
        run "$name $s export-chrome" "$dir/ncclscope" $flags export --comm 0xfeed --format chrome -o "$tmp/out.trace"
      }
    done
  done
} | python3 -c '
import sys, collections
runs = collections.OrderedDict()
for line in sys.stdin:
    f = line.split()
    runs.setdefault(" ".join(f[:-5]), []).append((float(f[-5]), float(f[-4]) + float(f[-3]), int(f[-2]), int(f[-1])))
med = lambda v: sorted(v)[len(v) // 2]
for k, r in runs.items():
    print("%-40s wall %6.2f s  cpu %6.2f s  peak RSS %7d KiB  output %5d MB" % (
        k, med([x[0] for x in r]), med([x[1] for x in r]), max(x[2] for x in r), r[0][3] // 1000000))
'
echo "load after: $(cat /proc/loadavg)"
