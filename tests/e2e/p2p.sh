#!/bin/bash
# p2p.sh: Send/Recv pairs matched (docs/cli.md "p2p", issue 17 item 1). A
# job of the emulator's p2p (send to rank+1, receive from rank-1) or
# alltoall (a Send to and a Recv from every rank) scenario goes through the
# real plugin, agents and collector; `ncclscope p2p` over the store must
# match every pair, with the directions the scenario has, each rank's Send
# and Recv counts those the emulator's summary lists, no size mismatch, and
# (p2p) each direction's wait that of the summary's true start times.
#
#   p2p.sh BIN_DIR PLUGIN p2p|alltoall
set -euo pipefail
bin=$1 plugin=$2 scenario=$3 mode=$3
nodes=2
. "$(dirname "$0")/lib.sh"

start_all
emulate --iters 6
finish
"$bin/ncclscope" --db "$dir/db" --job "$job" --json p2p --comm world >"$dir/p2p.json" || die "p2p failed"
"$bin/ncclscope" --db "$dir/db" --job "$job" p2p --comm world >"$dir/p2p.txt" || die "p2p (table) failed"
grep -q '^unmatched_recvs: 0$' "$dir/p2p.txt" || die "p2p table: $(cat "$dir/p2p.txt")"
python3 - "$dir/p2p.json" "$dir/emu.json" "$scenario" <<'PY' || die "p2p: $(cat "$dir/p2p.json")"
import json, sys
got, emu, scenario = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
ranks = {r["rank"]: r for r in emu["ranks"]}
n = len(ranks)
def ops(r, func):
    return [c for c in ranks[r]["collectives"] if c["func"] == func]
fail = []
want_dirs = {(a, (a + 1) % n) for a in range(n)} if scenario == "p2p" else {(a, b) for a in range(n) for b in range(n)}
dirs = {(p["from"], p["to"]): p for p in got["pairs"]}
if set(dirs) != want_dirs:
    fail.append("directions %s, want %s" % (sorted(dirs), sorted(want_dirs)))
for r in range(n):
    sends = sum(p["sends"] for p in got["pairs"] if p["from"] == r)
    recvs = sum(p["recvs"] for p in got["pairs"] if p["to"] == r)
    if (sends, recvs) != (len(ops(r, "Send")), len(ops(r, "Recv"))) or not sends:
        fail.append("rank %d: %d sends, %d recvs; the summary %d, %d" % (r, sends, recvs, len(ops(r, "Send")), len(ops(r, "Recv"))))
for p in got["pairs"]:
    if not (p["sends"] == p["recvs"] == p["matched"] > 0) or p["unmatched_sends"] or p["unmatched_recvs"] or p["size_mismatches"]:
        fail.append("pair %s" % p)
total = sum(len(ops(r, "Send")) for r in range(n))
if (got["sends"], got["recvs"], got["matched"], got["unmatched"]) != (total, total, total, []):
    fail.append("totals %d/%d/%d of %d, unmatched %s" % (got["sends"], got["recvs"], got["matched"], total, got["unmatched"]))
if scenario == "p2p":
    # the n-th Send of a meets the n-th Recv of a+1: the true wait, within
    # 2 ms (the plugin reads its clock beside the emulator's, not with it)
    for (a, b), p in dirs.items():
        waits = [rv["start_ns"] - sd["start_ns"] for sd, rv in zip(ops(a, "Send"), ops(b, "Recv"))]
        mean = sum(waits) // len(waits)
        if abs(p["wait_ns_mean"] - mean) > 2000000 or abs(p["wait_ns_max"] - max(waits)) > 2000000:
            fail.append("pair %d->%d: wait mean %d max %d, true %d %d" % (a, b, p["wait_ns_mean"], p["wait_ns_max"], mean, max(waits)))
sys.exit("; ".join(fail) if fail else 0)
PY
echo "p2p ($scenario): $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["pairs"]), "directions,", d["matched"], "pairs matched")' "$dir/p2p.json")"
