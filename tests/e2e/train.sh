#!/bin/bash
# train.sh: a training-shaped job (the emulator's train scenario: TP2 x PP2 x
# DP2 on 2 nodes of 4 ranks, 1F1B over 3 microbatches, jitter on every rank)
# through the real plugin, one agent per node and the collector. The store
# holds every event exactly once (finish); `comms` lists world and every
# tp, pp and dp group with all its ranks, each split off world; `collectives`
# of each tp and dp group has every seqNumber of every func, dense from 0, on
# all its ranks, as many as the emulator's summary lists; `p2p` of each pp
# group matches every Send with its Recv.
#
#   train.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=2
. "$(dirname "$0")/lib.sh"

start_all
scenario=train emulate --ranks-per-node 4 --tp 2 --pp 2 --dp 2 --microbatches 3 --iters 3 --jitter-us 50
finish
"$bin/ncclscope" --db "$dir/db" --job "$job" --json comms >"$dir/comms.json" || die "comms failed"
# every communicator but world, with its kind: tp and dp run collectives, pp p2p
python3 - "$dir/emu.json" <<'PY' >"$dir/comms.list" || die "summary: $(head -c 2000 "$dir/emu.json")"
import json, sys
for r in json.load(open(sys.argv[1]))["ranks"]:
    if r["rank"] == 0 and r["nranks"] == 2:
        print("0x%x %s" % (r["comm_id"], "p2p" if "Send" in r["seq"] else "collectives"))
PY
[ "$(wc -l <"$dir/comms.list")" = 12 ] || die "communicators: $(cat "$dir/comms.list")"
while read -r comm what; do
    "$bin/ncclscope" --db "$dir/db" --job "$job" --json "$what" --comm "$comm" >"$dir/$what-$comm.json" ||
        die "$what --comm $comm failed"
done <"$dir/comms.list"
python3 - "$dir" <<'PY' || die "train: stored communicators, collectives or p2p pairs differ"
import glob, json, os, sys
d = sys.argv[1]
emu, comms = json.load(open(d + "/emu.json")), json.load(open(d + "/comms.json"))["comms"]
fail = []
want = {}
for r in emu["ranks"]:
    w = want.setdefault(r["comm_id"], {"nranks": r["nranks"], "seq": {}})
    for f, s in r["seq"].items():
        w["seq"].setdefault(f, []).append(len(s))
stored = {int(c["comm"], 16): c for c in comms}
world = [c["comm"] for c in comms if c["name"] == "world"]
if set(stored) != set(want):
    fail.append("communicators: %d stored, %d emulated" % (len(stored), len(want)))
for cid, c in stored.items():
    if c["ranks_seen"] != want.get(cid, {}).get("nranks") or (c["name"] != "world" and c["split_of"] != world):
        fail.append("comm %s" % c)
for path in glob.glob(d + "/collectives-0x*.json"):
    cid = int(path.rsplit("-", 1)[1][:-5], 16)
    got = [json.loads(l) for l in open(path)]
    got = [c for c in got if c["kind"] == "collective"]
    for f, counts in want[cid]["seq"].items():
        seqs = sorted(c["seq"] for c in got if c["func"] == f)
        if seqs != list(range(counts[0])) or len(set(counts)) != 1:
            fail.append("comm %x %s: seqs %s, the summary %s per rank" % (cid, f, seqs, counts))
    fail += ["comm %x %s %d: ranks %d, missing %s" % (cid, c["func"], c["seq"], c["ranks_seen"], c["missing_ranks"])
             for c in got if c["ranks_seen"] != want[cid]["nranks"] or c["missing_ranks"]]
for path in glob.glob(d + "/p2p-0x*.json"):
    cid = int(path.rsplit("-", 1)[1][:-5], 16)
    got = json.load(open(path))
    sends = sum(want[cid]["seq"]["Send"])
    if (got["sends"], got["recvs"], got["matched"], got["unmatched"]) != (sends, sends, sends, []):
        fail.append("comm %x p2p: %d/%d/%d of %d, unmatched %s" % (cid, got["sends"], got["recvs"], got["matched"], sends, got["unmatched"][:3]))
sys.exit("; ".join(fail) if fail else 0)
PY
echo "train: $(wc -l <"$dir/comms.list") communicators split off world, every seq stored on every rank, every Send matched"
