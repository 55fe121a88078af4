#!/bin/bash
# p2p.sh: Send/Recv pairs matched (docs/cli.md "p2p", issue 17 item 1). A
# job of the emulator's p2p (send to rank+1, receive from rank-1) or
# alltoall (a Send to and a Recv from every rank) scenario goes through the
# real plugin, agents and collector; `ncclscope p2p` over the store must
# match every pair, with the directions the scenario has, each rank's Send
# and Recv counts those the emulator's summary lists, no size mismatch, and
# (p2p) each direction's wait that of the summary's true start times.
# hang: the p2p scenario with rank 2 stopping after 3 of 6 iterations: rank
# 3's last 3 Recvs from rank 2 and rank 1's last 3 Sends to it are left
# over, and `diagnose` names both as p2p_unmatched at the first of them.
#
#   p2p.sh BIN_DIR PLUGIN p2p|alltoall|hang
set -euo pipefail
bin=$1 plugin=$2 mode=$3
nodes=2
. "$(dirname "$0")/lib.sh"

start_all
if [ "$mode" = hang ]; then
    scenario=p2p emulate --iters 6 --hang-rank 2 --hang-after 3 --hang-ms 300
    # the hung ops' events never stopped: their plugins flush them at finalize
    finish
    "$bin/ncclscope" --db "$dir/db" --job "$job" --json p2p --comm world >"$dir/p2p.json" || die "p2p failed"
    "$bin/ncclscope" --db "$dir/db" --job "$job" --json diagnose >"$dir/diag.json" && die "diagnose found no problem"
    python3 - "$dir/p2p.json" "$dir/diag.json" <<'PY' || die "hang: $(cat "$dir/p2p.json" "$dir/diag.json")"
import json, sys
got, diag = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
fail = []
left = [(u["func"], u["rank"], u["peer"], u["nth"]) for u in got["unmatched"]]
want = [("Send", 1, 2, n) for n in (3, 4, 5)] + [("Recv", 3, 2, n) for n in (3, 4, 5)]
if left != want or got["matched"] != 18:
    fail.append("unmatched %s, %d matched" % (left, got["matched"]))
probs = [(p["kind"], p["rank"], p["peer"], p["figures"]["func"], p["figures"]["nth"], p["figures"]["unmatched"])
         for p in diag["problems"]]
if probs != [("p2p_unmatched", 1, 2, "Send", 3, 3), ("p2p_unmatched", 3, 2, "Recv", 3, 3)]:
    fail.append("problems %s" % probs)
# each verdict's start in UTC is p2p's for that operation (a store with a wall clock)
utc = {(u["rank"], u["nth"]): u["start_utc"] for u in got["unmatched"]}
if any(not p["figures"]["start_utc"] or p["figures"]["start_utc"] != utc.get((p["rank"], p["figures"]["nth"]))
       for p in diag["problems"]):
    fail.append("start_utc %s against p2p's %s" % ([p["figures"] for p in diag["problems"]], utc))
if "hung in p2p" not in diag["verdict"]:
    fail.append("verdict " + diag["verdict"])
sys.exit("; ".join(fail) if fail else 0)
PY
    echo "p2p (hang): $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$dir/diag.json")"
    exit 0
fi
scenario=$mode
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
