#!/usr/bin/env python3
"""figures_check.py DIR JOB STRAGGLER: one job's figures, as every view got
them (files in DIR, written by figures.sh), agree and are possible
(docs/api-figures.md, "Figures").

DIR holds, for the job's communicator: the API's collectives.ndjson,
stats.json, stats_web.json (the stats the web view's communicator page asks
for: the seqs it shows), diagnose.json, status.json and metrics.txt; the
CLI's cli_collectives.ndjson and cli_stats.json (--json) and
cli_collectives.txt and cli_stats.txt (--raw text). STRAGGLER: RANK:NS, the
rank the emulator made late and by how much (checked where the job's median
GPU bound is under half of that: a loaded machine, the sanitizers', can
delay the emulator's GPU stamps by milliseconds, and then who came last is
not known), "none" for a job with no late rank (a slow link makes its
receiver arrive last, not late of its own), or "any" when it is not known in
advance, "hang" for a job read while one collective hangs.

Checked: the collectives and stats (API and CLI) made from the ledger; the same straggler in the API, the CLI (JSON and text), the web
view's data and any late-rank verdict of diagnose; the same duration, busBW
(per collective and per rank) and uncertainty in the API, the CLI's JSON and
its text; the same hung collectives (none once the job ended) in status, the
Hang and Overview pages' data, /metrics, the collectives and diagnose; and no figure
shown as a fact that breaks causality beyond its bound or a rank's busBW
above what its transport allows. Prints the counts
and the median bound. Exit 0 when all hold, 1 otherwise (each difference
printed)."""
import json
import os
import re
import statistics
import sys

bad = 0


def fail(msg):
    global bad
    bad += 1
    print("figures-check: " + msg)


def ndjson(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def colls_of(path):
    return {(c["func"], c["seq"]): c for c in ndjson(path) if c["kind"] == "collective"}


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-3 * max(1.0, abs(a))


NEEDS_ALL = ("AllReduce", "AllGather", "ReduceScatter", "AlltoAll")


def possible(c):
    """The figures of c shown as facts (not marked uncertain) that break
    causality: the demo's impossible figures, which must come out corrected
    within their bounds or marked."""
    out = []
    if c["uncertain"]:
        return out
    for r in c["ranks"]:
        if r["uncertain"] or r["kernel_start_ns"] is None:
            continue
        if r["kernel_start_ns"] < r["enqueue_ns"] - r["enqueue_err_ns"]:
            out.append("rank %d kernel start before enqueue" % r["rank"])
    ks = [r for r in c["ranks"] if r["kernel_start_ns"] is not None]
    if c["func"] in NEEDS_ALL and c["arrival"] == "gpu" and not c["missing_ranks"] and len(ks) == c["nranks"] > 1:
        last = max(r["kernel_start_ns"] for r in ks)
        for r in ks:
            if not r["uncertain"] and r["kernel_end_ns"] is not None and r["kernel_end_ns"] < last:
                out.append("rank %d kernel ends before the last kernel starts" % r["rank"])
        if c["duration_ns"] is not None and c["skew_ns"] > c["duration_ns"]:
            out.append("skew %d > duration %d" % (c["skew_ns"], c["duration_ns"]))
    caps = [r["busbw_cap_gbps"] for r in c["ranks"] if r["busbw_cap_gbps"] is not None]
    if caps and c["busbw_gbps"] is not None and c["busbw_gbps"] > min(caps) * (1 + 1e-3):
        out.append("busBW %.1f GB/s above its transport's %.0f" % (c["busbw_gbps"], min(caps)))
    for r in c["ranks"]:
        if r["moving_ns"] is not None and not r["uncertain"] and c["arrival"] == "gpu":
            start = max(r["kernel_start_ns"], c["last_arrival_ns"])
            # within its bound, a window too short for the transport is
            # made as long as the transport needs
            capped = r["moving_ns"] > r["kernel_end_ns"] - start and close(r["busbw_gbps"], r["busbw_cap_gbps"])
            if r["moving_ns"] != r["kernel_end_ns"] - start and not capped:
                out.append("rank %d busBW not counted from the last arrival" % r["rank"])
        if r["busbw_gbps"] is not None and not r["uncertain"] and r["busbw_gbps"] > r["busbw_cap_gbps"] * (1 + 1e-3):
            out.append("rank %d busBW %.1f GB/s above its transport's %.0f" % (r["rank"], r["busbw_gbps"],
                                                                               r["busbw_cap_gbps"]))
    return out


def text_rows(path):
    """The --raw collectives table: one dict per row, by header."""
    lines = [l for l in open(path) if l.strip()]
    head = next(i for i, l in enumerate(lines) if l.startswith("SEQ"))
    names = lines[head].split()
    return [dict(zip(names, l.split())) for l in lines[head + 1:]]


def main():
    d, job, want = sys.argv[1], sys.argv[2], sys.argv[3]
    api = colls_of(os.path.join(d, "collectives.ndjson"))
    cli = colls_of(os.path.join(d, "cli_collectives.ndjson"))
    if not api:
        fail("no collectives")
    # made from the ledger's records, not from raw events (docs/api-figures.md "Figures")
    for name in ("collectives.ndjson", "cli_collectives.ndjson", "stats.json", "stats_web.json", "cli_stats.json"):
        src = {json.loads(l).get("source") for l in open(os.path.join(d, name)) if '"source"' in l}
        if src != {"ledger"}:
            fail("%s: made from %s, not the ledger" % (name, src or "?"))
    if sorted(api) != sorted(cli):
        fail("the CLI's collectives %s differ from the API's %s" % (sorted(cli)[:5], sorted(api)[:5]))

    # durations, busBW and uncertainty: API = CLI JSON = CLI text
    rows = {(r["FUNC"], int(r["SEQ"])): r for r in text_rows(os.path.join(d, "cli_collectives.txt"))}
    for k, c in api.items():
        o = cli.get(k)
        if o is None:
            continue
        for key in ("duration_ns", "duration_err_ns", "skew_ns", "skew_err_ns", "last_rank", "uncertain"):
            if c[key] != o[key]:
                fail("%s %d: %s %s in the API, %s in the CLI" % (k[0], k[1], key, c[key], o[key]))
        if not close(c["busbw_gbps"], o["busbw_gbps"]):
            fail("%s %d: busBW %s in the API, %s in the CLI" % (k[0], k[1], c["busbw_gbps"], o["busbw_gbps"]))
        for a, b in zip(c["ranks"], o["ranks"]):
            if not close(a["busbw_gbps"], b["busbw_gbps"]) or a["uncertain"] != b["uncertain"]:
                fail("%s %d rank %d: busBW %s/%s" % (k[0], k[1], a["rank"], a["busbw_gbps"], b["busbw_gbps"]))
        t = rows.get(k)
        if t is None:
            fail("%s %d: not in the CLI's table" % k)
            continue
        dur = None if t["DURATION_NS"] == "-" else int(t["DURATION_NS"])
        bw = None if t["BUSBW_GBPS"] == "-" else float(t["BUSBW_GBPS"])
        if dur != c["duration_ns"] or not close(bw, c["busbw_gbps"]) or (t["UNCERTAIN"] == "yes") != c["uncertain"]:
            fail("%s %d: the CLI's table says %s" % (k[0], k[1], t))

    # the straggler: stats (API, CLI JSON and text), the web view's, diagnose's late rank
    st = json.load(open(os.path.join(d, "stats.json")))
    s_api = st["straggler"]["rank"] if st["straggler"] else None
    for name in ("cli_stats.json", "stats_web.json"):
        o = json.load(open(os.path.join(d, name)))
        got = o["straggler"]["rank"] if o["straggler"] else None
        if got != s_api:
            fail("straggler: %s in the API's stats, %s in %s" % (s_api, got, name))
    text = open(os.path.join(d, "cli_stats.txt")).read()
    m = re.search(r"^straggler:\n\s+rank: (\d+)", text, re.M)
    if (int(m.group(1)) if m else None) != s_api:
        fail("straggler: %s in the API, the CLI's text says %s" % (s_api, m and m.group(1)))
    # with no straggler (no rank last of its own at more than half: a loaded
    # machine's pauses make other ranks last as often), diagnose's late rank
    # is the one last most often, the first of `stragglers`
    top = st["stragglers"][0]["rank"] if st["stragglers"] else None
    diag = json.load(open(os.path.join(d, "diagnose.json")))
    for p in diag["problems"]:
        if p["kind"] in ("host_late", "gpu_late") and p["rank"] != s_api and (s_api is not None or p["rank"] != top):
            fail("diagnose names rank %s late, the straggler is %s, the rank last most often %s"
                 % (p["rank"], s_api, top))

    # links: the CLI's are the API's, each one's steps and bytes the sum of
    # the ledger's send edges that spent time in send wait, and its slow
    # links are diagnose's
    links = json.load(open(os.path.join(d, "links.json")))
    if json.load(open(os.path.join(d, "cli_links.json"))) != links:
        fail("links: the CLI's differ from the API's")
    edges = {}
    for r in ndjson(os.path.join(d, "ledger.ndjson")):
        for e in r.get("edges", []) if r["kind"] == "record" else []:
            if e["is_send"] and e["steps"] and e["wait_send_ns"]:
                k = (r["rank"], e["peer"], e["channel"])
                steps, nbytes = edges.get(k, (0, 0))
                edges[k] = (steps + e["steps"], nbytes + e["bytes"])
    for k in links["links"]:
        key = (k["from_rank"], k["to_rank"], k["channel"])
        if edges.get(key) != (k["steps"], k["bytes"]):
            fail("link %s: %d steps, %d bytes; the ledger's edges %s" % (key, k["steps"], k["bytes"], edges.get(key)))
    if len(links["links"]) != len(edges):
        fail("links: %d, the ledger has %d send edges" % (len(links["links"]), len(edges)))
    slow = {(k["from_host"], k["to_host"]) for k in links["links"] if k["state"] == "SLOW"}
    named = {tuple(p["hosts"]) for p in diag["problems"] if p["kind"] == "slow_link"}
    if named - slow:
        fail("diagnose names slow links %s, links marks %s" % (sorted(named), sorted(slow)))

    # hung collectives (docs/api.md "Hung collective"): the Overview's count
    # (the status's total: every other job has ended), the Hang page's list,
    # /metrics, the collectives not ended, diagnose's stuck collectives
    status = json.load(open(os.path.join(d, "status.json")))
    jobs = [j for j in status.get("jobs", []) if j["job"] == job]
    overview = status["hung_collectives"]
    page = sum(len(c["hung_collectives"]) for j in jobs for c in j["comms"])
    metric = sum(float(l.split()[-1]) for l in open(os.path.join(d, "metrics.txt"))
                 if l.startswith("ncclscope_comm_hung_collectives{") and 'job="%s"' % job in l)
    open_colls = sum(1 for c in api.values() if c["end_ns"] is None)
    hung_diag = len({p["seq"] for p in diag["problems"] if p["kind"] in ("hung", "in_flight", "missing")})
    if len({overview, page, int(metric), open_colls, hung_diag}) != 1:
        fail("hung: Overview %d, Hang page %d, /metrics %d, collectives not ended %d, diagnose %d"
             % (overview, page, metric, open_colls, hung_diag))
    elif want == "hang" and page != 1:
        fail("hung: %d hung collectives, the emulator hung one" % page)

    # only possible figures
    uncertain = 0
    for k, c in sorted(api.items()):
        for why in possible(c):
            fail("%s %d: %s, shown as a fact" % (k[0], k[1], why))
        uncertain += c["uncertain"]
    errs = [r[e] for c in api.values() for r in c["ranks"] for e in ("kernel_start_err_ns", "kernel_end_err_ns")
            if r[e] is not None]
    bound = statistics.median(errs) if errs else 0
    if want == "none" and s_api is not None:
        fail("straggler %s in a job with no late rank" % s_api)
    elif ":" in want:
        rank, late = map(int, want.split(":"))
        if 2 * bound >= late:
            print("figures-check: job %s: the straggler not checked against the emulator: median bound %.1f us"
                  % (job, bound / 1e3))
        elif s_api != rank and (s_api is not None or top != rank):
            fail("straggler %s, the rank last most often %s, the emulator made rank %d late" % (s_api, top, rank))
        elif s_api is None:
            print("figures-check: job %s: no straggler, the emulator's late rank %d last most often (a loaded machine)"
                  % (job, rank))
    print("figures-check: job %s: %d collectives, %d uncertain, straggler %s, median GPU bound %.1f us"
          % (job, len(api), uncertain, s_api, bound / 1e3))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
