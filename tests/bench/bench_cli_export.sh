#!/usr/bin/env bash
# CLI export benchmark: N timeline events (NDJSON, as /api/v1/timeline writes
# them: 8 ranks, Coll + KernelCh lanes) converted to Perfetto and Chrome JSON.
# Prints the median wall and CPU (user+sys) time and the peak RSS for N/10
# and N events, so memory independent of the result size shows as equal RSS.
# With BASE_BIN_DIR (another build, e.g. main's) its CLI runs each case too,
# in turn with ours: a same-run baseline.
# Usage: bench_cli_export.sh BIN_DIR [N] [BASE_BIN_DIR]
set -euo pipefail
n=${2:-1000000}
clis="new:$1/ncclscope${3:+ base:$3/ncclscope}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gen() {  # gen COUNT FILE
  python3 - "$1" "$2" <<'PY'
import sys
n, out = int(sys.argv[1]), open(sys.argv[2], "w")
out.write('{"kind":"header","job":"bench","comm":"0x1","nranks":8,"ranks":[%s]}\n' % ",".join(
    '{"rank":%d,"host":"node-%d","pid":%d,"gpu":%d}' % (r, r // 4, 1000 + r, r % 4) for r in range(8)))
for i in range(n):
    r, k = i % 8, i // 8
    t = 1_000_000_000 + k * 10_000 + r * 100
    if k % 2 == 0:
        out.write('{"kind":"event","type":"Coll","rank":%d,"pid":%d,"tid":1,"id":%d,"parent":0,"start_ns":%d,"stop_ns":%d,"flags":[],"seq":%d,"func":"AllReduce","datatype":"ncclFloat32","count":1048576,"algo":"RING","proto":"SIMPLE","nchannels":2,"complete_ns":%d}\n' % (r, 1000 + r, i, t, t + 2000, k // 2, t + 15000))
    else:
        out.write('{"kind":"event","type":"KernelCh","rank":%d,"pid":%d,"tid":2,"id":%d,"parent":%d,"start_ns":%d,"stop_ns":%d,"channel":%d,"gpu_start_ns":%d,"gpu_stop_ns":%d}\n' % (r, 1000 + r, i, i - 8, t + 100, t + 9000, k % 4, t + 150, t + 8900))
out.write('{"kind":"end","events":%d,"next_cursor":null}\n' % n)
PY
}
for count in $((n / 10)) $n; do
  gen $count "$tmp/t.ndjson"
  for fmt in perfetto chrome; do
    for rep in 1 2 3; do
      for c in $clis; do
        /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "${c#*:}" export --format $fmt --input "$tmp/t.ndjson" -o "$tmp/out" 2>/dev/null
        echo "${c%%:*} $count $fmt $(cat "$tmp/time") $(stat -c %s "$tmp/out")"
      done
    done
  done
done | python3 -c '
import sys, collections
runs = collections.defaultdict(list)
for line in sys.stdin:
    cli, n, fmt, sec, usr, sys_, rss, size = line.split()
    runs[(int(n), fmt, cli)].append((float(sec), float(usr) + float(sys_), int(rss), int(size)))
med = lambda v: sorted(v)[len(v) // 2]
for (n, fmt, cli), r in sorted(runs.items()):
    print("%-4s %8d events %-8s median %.2f s  cpu %.2f s  peak RSS %d KiB  output %d bytes" % (
        cli, n, fmt, med([x[0] for x in r]), med([x[1] for x in r]), max(x[2] for x in r), r[0][3]))
'
echo "load: $(cat /proc/loadavg)"
