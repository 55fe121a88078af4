#!/usr/bin/env python3
"""live_ledger_check.py DIR JOB COMM: the live state's figures of JOB's
communicator COMM are the collectives endpoint's (docs/api-figures.md, "Figures").

DIR holds collectives.ndjson (the API's, made from the ledger), status.json
(status --json after the job ended, or while it hangs), status_run.json
(status --json while it ran; optional) and metrics.txt (/metrics after it ended). Checked: the status says its
figures are the ledger's; per function, status and
ncclscope_comm_collective_duration_seconds count one duration per collective
with a duration in the API, with the same sum within the sum of their
bounds (the live state aligns a host's times by its clock model at ingest,
the API by the model stored since); the bus bandwidth status gave
while the job ran lies within the API's per-collective busBW. Exit 0 when all
hold, 1 otherwise (each difference printed)."""
import json
import os
import re
import sys

d, job, comm = sys.argv[1:4]
problems = []
fail = problems.append


def comm_of(path):
    s = json.load(open(os.path.join(d, path)))
    for j in s["jobs"]:
        for c in j["comms"]:
            if j["job"] == job and c["comm"] == comm:
                return c
    return None


colls = [json.loads(line) for line in open(os.path.join(d, "collectives.ndjson")) if line.strip()]
colls = [c for c in colls if c["kind"] == "collective"]
api = {}
for c in colls:
    if c["duration_ns"] is not None:
        n, s, e = api.get(c["func"], (0, 0, 0))
        api[c["func"]] = (n + 1, s + c["duration_ns"] / 1e9, e + c["duration_err_ns"] / 1e9)
if not api:
    fail("the API has no collective with a duration")

st = comm_of("status.json")
if st is None:
    fail("status has no communicator %s" % comm)
else:
    if st.get("source") != "ledger":
        fail("status's figures are made from %s, not the ledger" % st.get("source"))
    live = {f["func"]: (f.get("durations", 0), f.get("duration_sum_s", 0.0)) for f in st["funcs"]}
    prom = {}
    pat = re.compile(r'^ncclscope_comm_collective_duration_seconds_(count|sum)\{([^}]*)\} (\S+)$')
    for line in open(os.path.join(d, "metrics.txt")):
        m = pat.match(line.strip())
        if m and 'comm="%s"' % comm in m.group(2) and 'nccl_job="%s"' % job in m.group(2):
            func = re.search(r'func="([^"]*)"', m.group(2)).group(1)
            n, s = prom.get(func, (0, 0.0))
            prom[func] = (float(m.group(3)), s) if m.group(1) == "count" else (n, float(m.group(3)))
    for func, (n, s, e) in api.items():
        for view, got in (("status", live), ("/metrics", prom)):
            ln, ls = got.get(func, (0, 0.0))
            if ln != n or abs(ls - s) > e + 1e-9 * n:
                fail("%s %s: %d durations summing %.9f s, the API %d summing %.9f s (bounds %.9f s)" %
                     (view, func, ln, ls, n, s, e))

run = comm_of("status_run.json") if os.path.exists(os.path.join(d, "status_run.json")) else False
bws = [c["busbw_gbps"] for c in colls if c["busbw_gbps"] is not None]
if run is False:
    pass
elif run is None or not bws:
    fail("no bus bandwidth to compare (status while running: %s)" % run)
elif not min(bws) * (1 - 1e-6) <= run["bus_bw_gbps"] <= max(bws) * (1 + 1e-6):
    fail("status's bus bandwidth %.3f GB/s outside the API's busBW %.3f .. %.3f" %
         (run["bus_bw_gbps"], min(bws), max(bws)))
for p in problems:
    print("live-ledger-check: " + p)
print("live-ledger-check: %d collectives, %s" % (len(colls), "%d differences" % len(problems) if problems else "ok"))
sys.exit(1 if problems else 0)
