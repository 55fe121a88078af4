#!/usr/bin/env bash
# Export: the .pftrace decodes with protoc --decode_raw and has one process
# track per rank, lane tracks sharing a sibling_merge_key (behaviour 3), the
# slices with their metadata and unmoved timestamps; Chrome JSON parses and
# has the same slices. Usage: cli_export.sh BIN_DIR SRC_DIR
set -euo pipefail
cli=$1/ncclscope
in=$2/timeline.ndjson
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v protoc >/dev/null || { echo "protoc missing (scripts/deps.sh --test installs protobuf-compiler)"; exit 1; }

"$cli" export --input "$in" -o "$tmp/t.pftrace" 2>"$tmp/log"
cat "$tmp/log"
grep -q "4 slices, 1 in flight" "$tmp/log"
protoc --decode_raw <"$tmp/t.pftrace" >"$tmp/t.txt"
python3 - "$tmp/t.txt" "$tmp/t.pftrace" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
raw = open(sys.argv[2], "rb").read()
# protoc --decode_raw prints field numbers: split into top-level packets (field 1).
packets = re.split(r'(?m)^1 \{\n', text)[1:]
assert len(packets) == 2 + 4 + 4 * 2 + 1, len(packets)  # 2 process, 4 lane tracks, 4 slices (begin+end), 1 open
procs = [p for p in packets if re.search(r'(?m)^  60 \{\n    1: \d+\n    3 \{', p)]
assert len(procs) == 2, procs
assert 'rank 0 node-a pid 4242 gpu 0' in procs[0] and 'rank 1 node-b pid 4343 gpu 1' in procs[1]
lanes = [p for p in packets if '15: 3' in p]
keys = sorted(re.search(r'16: "([^"]*)"', p).group(1) for p in lanes)
# rank 0's two AllReduce overlap: two backing tracks sharing one key; rank 1's
# Coll lane (the open one reuses its track) and its KernelCh lane.
assert keys == ['r0/Coll', 'r0/Coll', 'r1/Coll', 'r1/KernelCh ch1'], keys
begins = [p for p in packets if re.search(r'(?m)^    9: 1$', p)]
ends = [p for p in packets if re.search(r'(?m)^    9: 2$', p)]
assert len(begins) == 5 and len(ends) == 4, (len(begins), len(ends))
ts = sorted(int(re.search(r'(?m)^  8: (\d+)', p).group(1)) for p in begins + ends)
assert ts == [1000, 1500, 1700, 2000, 4000, 5000, 5100, 6000, 7000], ts
first = [p for p in begins if '8: 1000' in p][0]
for needle in ['10: "algo"', '6: "RING"', '10: "bytes"', '3: 4096', '10: "graph_captured"']:
    assert needle in first, needle
# decode_raw may show a short string as a nested message: check the name's bytes
# (TrackEvent.name, field 23, length 9) in the file itself.
assert b"\xba\x01\x09AllReduce" in raw
assert re.search(r'10: "graph_captured"\n\s+2: 1', first), first
print("perfetto: ok")
PY

"$cli" export --format chrome --input "$in" -o "$tmp/t.json" 2>/dev/null
python3 - "$tmp/t.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
b = [e for e in ev if e["ph"] == "B"]
assert len(x) == 4 and len(b) == 1, (len(x), len(b))
first = [e for e in x if e["ts"] == 1.0][0]
assert first["dur"] == 4.0 and first["name"] == "AllReduce" and first["pid"] == 1
assert first["args"]["bytes"] == 4096 and first["args"]["graph_captured"] is True and first["args"]["seq"] == 0
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert names == {"rank 0 node-a pid 4242 gpu 0", "rank 1 node-b pid 4343 gpu 1"}, names
print("chrome: ok")
PY
echo "cli_export: all passed"
