#!/usr/bin/env bash
# CLI export benchmark: N timeline events (NDJSON, as /api/v1/timeline writes
# them: 8 ranks, Coll + KernelCh lanes) converted to Perfetto and Chrome JSON.
# Prints wall time and peak RSS for N/10 and N events, so memory independent
# of the result size shows as equal RSS. Usage: bench_cli_export.sh BIN_DIR [N]
set -eu
cli=$1/ncclscope
n=${2:-1000000}
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
      /usr/bin/time -f "%e %M" -o "$tmp/time" "$cli" export --format $fmt --input "$tmp/t.ndjson" -o "$tmp/out" 2>/dev/null
      echo "$count $fmt $(cat "$tmp/time") $(stat -c %s "$tmp/out")"
    done
  done
done | python3 -c '
import sys, collections
runs = collections.defaultdict(list)
for line in sys.stdin:
    n, fmt, sec, rss, size = line.split()
    runs[(int(n), fmt)].append((float(sec), int(rss), int(size)))
for (n, fmt), r in sorted(runs.items()):
    secs = sorted(x[0] for x in r)
    print("%8d events %-8s median %.2f s  peak RSS %d KiB  output %d bytes" % (n, fmt, secs[len(secs) // 2], max(x[1] for x in r), r[0][2]))
'
