#!/usr/bin/env python3
"""cli_e2e_check.py: checks for cli_e2e.sh.

  same HTTP_DIR DB_DIR         the --json of every verb from the collector and
                               from a copy of its store: identical (status: the
                               stored part, since the live part is not stored)
  truth EMU_SUMMARY DIR MODE   the collector's answers against what the
                               emulator emitted
"""
import json
import sys


def ndjson(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def load(d, name):
    return ndjson(f"{d}/{name}") if name.endswith(".ndjson") else json.load(open(f"{d}/{name}"))


def fail(msg):
    print(f"cli_e2e_check: {msg}", file=sys.stderr)
    sys.exit(1)


def stored_status(st):
    """What a store holds of the status: communicators (a Send/Recv-only one
    too, with its name), ranks, progress."""
    out = []
    for j in st["jobs"]:
        for c in j["comms"]:
            out.append((j["job"], c["comm"], c["name"], c["nranks"], c["ranks_seen"],
                        sorted((f["func"], f["max_seq"]) for f in c["funcs"]),
                        sorted((r["rank"], r["host"], r["pid"], tuple(sorted((x["func"], x["seq"]) for x in r["collectives"])))
                               for r in c["ranks"])))
    return sorted(out)


def same(http, db):
    for name in ["comms.json", "collectives.ndjson", "timeline.ndjson", "topology.json", "stats.json"]:
        a, b = open(f"{http}/{name}").read(), open(f"{db}/{name}").read()
        if a != b:
            print(f"cli_e2e_check: {name} differs between HTTP and --db", file=sys.stderr)
            return False
    if stored_status(load(http, "status.json")) != stored_status(load(db, "status.json")):
        print("cli_e2e_check: status (stored part) differs between HTTP and --db", file=sys.stderr)
        return False
    # diagnose: the same problems from both, apart from the live part (hung: in-flight state is not stored).
    def stored_problems(d):
        return [(p["kind"], p["comm"], p["rank"], p["seq"]) for p in load(d, "diagnose.json")["problems"]
                if p["kind"] not in ("hung", "lagging")]
    if stored_problems(http) != stored_problems(db):
        print(f"cli_e2e_check: diagnose differs between HTTP and --db: {stored_problems(http)} vs {stored_problems(db)}",
              file=sys.stderr)
        return False
    return True


def killed_prefix(r, tl):
    """The killed rank as far as it was delivered. SIGKILL loses what its
    plugin had not yet handed to the agent (a batch leaves when 20 ms old),
    so the store holds, per function, the first collectives it emitted and
    none after a gap: check that, then expect only those."""
    kept = {}
    for f, emitted in r["seq"].items():
        got = sorted(e["seq"] for e in tl
                     if e["kind"] == "event" and e["type"] == "Coll" and e["rank"] == r["rank"] and e["func"] == f)
        if got != sorted(emitted)[:len(got)]:
            fail(f"timeline: killed rank {r['rank']} {f} seqs {got}: not the first of those emitted, {emitted}")
        kept[f] = got
    lost = sum(len(l) for l in r["seq"].values()) - sum(len(l) for l in kept.values())
    print(f"cli_e2e_check: kill: rank {r['rank']}: its last {lost} collectives died with it (not delivered)")
    return dict(r, seq=kept, collectives=[c for c in r["collectives"] if c["seq"] in kept.get(c["func"], [])])


def truth(emu_path, d, mode):
    emu = json.load(open(emu_path))
    ranks = emu["ranks"]
    comm_id = "0x%x" % ranks[0]["comm_id"]
    nranks = ranks[0]["nranks"]
    comms = load(d, "comms.json")["comms"]
    c = next((c for c in comms if c["comm"] == comm_id), None)
    if not c:
        fail(f"comms: no {comm_id} in {[x['comm'] for x in comms]}")
    present = sorted(c["ranks"])
    # a killed rank's last events die with it in the plugin's buffer: it may never have been seen
    allowed = [list(range(nranks))] + ([[k for k in range(nranks) if k != 1]] if mode == "kill" else [])
    if c["nranks"] != nranks or c["ranks_seen"] != len(present) or present not in allowed:
        fail(f"comms: {c} for {nranks} ranks")
    ranks = [r for r in ranks if r["rank"] in present]
    tl = load(d, "timeline.ndjson")
    if mode == "kill":
        ranks = [killed_prefix(r, tl) if r["rank"] == 1 else r for r in ranks]

    # collectives: one per (func, seq) any rank entered, ranks and last arriver as emitted
    emitted = {}
    for r in ranks:
        for col in r["collectives"]:
            emitted.setdefault((col["func"], col["seq"]), {})[r["rank"]] = col
    got = [x for x in load(d, "collectives.ndjson") if x["kind"] == "collective"]
    if sorted((x["func"], x["seq"]) for x in got) != sorted(emitted):
        fail(f"collectives: {sorted((x['func'], x['seq']) for x in got)} != emitted {sorted(emitted)}")
    checked_last = 0
    for x in got:
        e = emitted[(x["func"], x["seq"])]
        missing = sorted(set(present) - set(e))  # the query counts ranks it has seen
        if sorted(x["missing_ranks"]) != missing:
            fail(f"collective {x['func']} {x['seq']}: missing {x['missing_ranks']}, emitted by {sorted(e)}")
        # the last arriver, where the emulator's arrivals are apart by more than
        # the error: the query's arrival is the GPU side (kernel start: the
        # emulator's ready_ns) when every rank has kernel times, else the
        # enqueue; the emulator makes GPU timestamps when its proxy thread
        # runs, late by milliseconds on loaded cores (sanitizers, parallel
        # tests): 3 ms (the straggler mode's rank is 5 ms late)
        gpu = x["arrival"] == "gpu"
        starts = sorted((col["ready_ns"] if gpu else col["start_ns"], rk) for rk, col in e.items())
        if len(starts) > 1 and starts[-1][0] - starts[-2][0] > (3000000 if gpu else 200000):
            checked_last += 1
            if x["last_rank"] != starts[-1][1]:
                fail(f"collective {x['func']} {x['seq']}: last_rank {x['last_rank']}, emulator: {starts[-1][1]}")
    print(f"cli_e2e_check: {len(got)} collectives, last arriver checked on {checked_last}")

    # timeline: every Coll event each rank started, with its seqNumber
    if tl[0]["kind"] != "header" or tl[-1]["kind"] != "end":
        fail("timeline: no header or end line")
    for r in ranks:
        seqs = sorted(e["seq"] for e in tl if e["kind"] == "event" and e["type"] == "Coll" and e["rank"] == r["rank"])
        want = sorted(s for f, l in r["seq"].items() if f not in ("Send", "Recv") for s in l)
        if seqs != want:
            fail(f"timeline: rank {r['rank']} Coll seqs {seqs}, emitted {want}")
        n = sum(1 for e in tl if e["kind"] == "event" and e["rank"] == r["rank"])
        if n != sum(r["calls"]["start"].values()) - r["null_handles"]:
            print(f"cli_e2e_check: note: rank {r['rank']}: {n} events, {sum(r['calls']['start'].values())} starts, "
                  f"{r['null_handles']} null handles")

    # topology: hosts and pids as emitted; rings from ProxyOp peers (4 nodes x 1 rank: every leg is one)
    topo = load(d, "topology.json")
    for r in ranks:
        t = next(t for t in topo["ranks"] if t["rank"] == r["rank"])
        if (t["host"], t["pid"]) != (r["host"], r["pid"]):
            fail(f"topology: rank {r['rank']} {t['host']}/{t['pid']}, emitted {r['host']}/{r['pid']}")
    if mode == "ring":
        chans = topo["channels"]
        if len(chans) != emu["channels"] or any(ch["ring"] != list(range(nranks)) or not ch["complete"] for ch in chans):
            fail(f"topology: rings {chans}, expected {emu['channels']} x {list(range(nranks))}")

    # stats: every collective counted once
    stats = load(d, "stats.json")
    counted = sum(b["count"] for b in stats["buckets"])
    complete = sum(1 for x in got if x["end_ns"] is not None)
    if counted not in (len(got), complete):
        fail(f"stats: {counted} collectives counted, {len(got)} matched ({complete} complete)")

    # status: progress per rank as emitted
    st = load(d, "status.json")
    sc = next(c for j in st["jobs"] for c in j["comms"] if c["comm"] == comm_id)
    for r in ranks:
        sr = next((x for x in sc["ranks"] if x["rank"] == r["rank"]), None)
        for f, l in r["seq"].items():
            if l and (not sr or (f, max(l)) not in [(x["func"], x["seq"]) for x in sr["collectives"]]):
                fail(f"status: rank {r['rank']} {f}: {sr and sr['collectives']}, emitted up to {max(l)}")

    # diagnose: the hung or killed rank named first, exit 1; a clean run: OK, exit 0
    diag = load(d, "diagnose.json")
    rc = int(open(f"{d}/diagnose.rc").read())
    if mode in ("hang", "kill", "straggler"):
        want = {"hang": 2, "kill": 1, "straggler": 3}[mode]
        if rc != 1 or not diag["problems"] or diag["problems"][0]["rank"] != want or f"rank {want}" not in diag["verdict"]:
            fail(f"diagnose (rc {rc}) did not name rank {want}: {diag}")
    elif rc != 0 or diag["problems"]:
        fail(f"diagnose (rc {rc}) found problems in a clean run: {diag}")
    print(f"cli_e2e_check: {mode}: verdict: {diag['verdict']}")


if __name__ == "__main__":
    if sys.argv[1] == "same":
        sys.exit(0 if same(sys.argv[2], sys.argv[3]) else 1)
    if sys.argv[1] == "status":  # status FILE FILE: the stored part of two status documents
        a, b = (stored_status(json.load(open(f))) for f in sys.argv[2:4])
        if a != b:
            print(f"cli_e2e_check: status differs:\n{a}\n{b}", file=sys.stderr)
        sys.exit(0 if a == b else 1)
    truth(sys.argv[2], sys.argv[3], sys.argv[4])
