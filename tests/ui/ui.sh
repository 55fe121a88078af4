#!/bin/bash
# ui.sh: the web view as a person sees it, in headless Chromium (Debian's
# package; scripts/deps.sh --test installs it), against real processes on
# loopback (tests/e2e/lib.sh): ncclscope-emu (real plugin) -> one agent per
# simulated node -> the collector, with a bearer token.
#
#   ui.sh BIN_DIR PLUGIN OUT_DIR
#
# The job: 4 ranks on 2 nodes, rank 1 a straggler (200 ms late at every
# AllReduce: a straggler needs 8 collectives, docs/api-figures.md "Figures"), rank 3
# stops after 10 collectives and the others hang in the eleventh (seq 10) for
# 60 s (the most the emulator holds). While they hang:
#   - HTTP: /ui/ without the token is a 401 page; ?token= sets the cookie,
#     which then opens the API; a wrong token does not; every file has its
#     Content-Type, the pages a Content-Security-Policy of this origin only;
#   - Chromium logs in once with ?token= (then the cookie carries it) and
#     loads the overview (waiting for 2 live summaries over SSE), the
#     communicator page, the hang view and the timeline. Each must become
#     ready with no console error, uncaught exception or failed load, and
#     show: the lagging rank on the overview, and the verdict of a job
#     that ended hung before (rank 3 never arrived at AllReduce seq 2), the
#     profiler's cost of each job (the self-cost guard); rank 1's heat map row, and only
#     it, marked straggler, its median wait under 50 ms and every other
#     rank's over 100 ms; AllReduce seq 10 named hung with rank 3 missing;
#     events of every rank on the timeline, in a whole window, a click on
#     one (the mouse, where an event is drawn) giving its details and the
#     wheel zooming to 0.8 of the window; diagnose's
#     verdict (/api/v1/diagnose) naming seq 10 and rank 3 on the hang view;
#     the 4 inter-node links of the ring, none slow, and rank 3's host
#     blamed in the hosts table;
#   - the timeline's Download button, clicked, saves a trace of the window:
#     every event the page showed, each slice (by rank, type and event id)
#     on the lane, with the very name, start and duration that `ncclscope
#     export --format chrome` writes for that window (the agents send no
#     clock probes, so no host clock model is refitted between the two reads:
#     a refit moves aligned times by microseconds, and the GPU clock line
#     fitted through them, extrapolated over the window, by up to
#     milliseconds);
#   - a page with an API error (an unknown communicator) is reported as
#     failed, so the checks above can fail.
# OUT_DIR keeps each page's DOM, console log and screenshot.
set -eu
bin=$1 plugin=$2 out=$3 mode=ui
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v chromium >/dev/null; then
    echo "ui.sh: FAILED: chromium is not installed (Debian package chromium; scripts/deps.sh --test installs it)" >&2
    exit 1
fi
. "$here/../e2e/lib.sh"
slow_rank=1 hang_rank=3 hang_after=10
head -c 24 /dev/urandom | base64 >"$dir/token"
token=$(cat "$dir/token")
auth=(-H "Authorization: Bearer $token")
enc_token=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$token")

start_collector 0 --hang-ms 300 --live-interval-ms 200 --token-file "$dir/token"
start_agent 0 --probe-ms 0
start_agent 1 --probe-ms 0
# A second job first, to its end: a send/receive exchange, then a ring
# AllReduce over a 4x slow link node0 -> node1; both communicators are called
# "world", with the same ranks and hosts.
two=$job-two
run_two() {
    local what=$1
    shift
    NCCLSCOPE_JOB=${run_job:-$two} NCCLSCOPE_EVENT_MASK=all NCCLSCOPE_FLUSH_MS=50 "$bin/ncclscope-emu" --plugin "$plugin" \
        --rundir-base "$dir" --nodes 2 --ranks-per-node 2 --summary "$dir/$what.json" --scenario "$@" \
        >"$dir/$what.log" 2>&1 || die "the $what emulator failed: $(tail -5 "$dir/$what.log")"
}
run_two p2p p2p --iters 6 --seed 7
run_two slowlink ring --iters 8 --channels 2 --count 4194304 --chunk-size 2097152 --slow-link 0:1:4 --seed 3
comm_of() { python3 -c 'import json, sys; print(hex(json.load(open(sys.argv[1]))["ranks"][0]["comm_id"]))' "$dir/$1.json"; }
p2p_comm=$(comm_of p2p) slow_comm=$(comm_of slowlink)
# A third job ends hung: rank 3 stops after 2 AllReduces, the others wait 1 s
# in the third, then every process exits.
ended=$job-ended
run_job=$ended run_two ended hang --iters 4 --hang-rank 3 --hang-after 2 --hang-ms 1000
NCCLSCOPE_FLUSH_MS=50 scenario=hang emulate --iters 12 --hang-rank $hang_rank --hang-after $hang_after \
    --hang-ms 60000 --slow-rank $slow_rank --slow-us 200000 &
emu=$!
api() { curl -sf -m 10 "${auth[@]}" "http://127.0.0.1:$http/api/v1/$1"; }
# the hang as the collector sees it: rank 3 lagging, the collectives before
# seq hang_after matched on every rank and that seq on all but rank 3
hung() {
    api status | python3 -c 'import json, sys
s = json.load(sys.stdin)
sys.exit(0 if any(l["rank"] == 3 for j in s["jobs"] for c in j["comms"] for l in c["lagging"]) else 1)' &&
        api "collectives?job=$job&comm=world&func=AllReduce" | python3 -c 'import json, sys
c = [json.loads(l) for l in sys.stdin if "\"collective\"" in l]
seen = {x["seq"]: x["ranks_seen"] for x in c}
n = int(sys.argv[1])
sys.exit(0 if all(seen.get(s) == 4 for s in range(n)) and seen.get(n) == 3 else 1)' "$hang_after"
}
wait_until 60 hung || die "the collector never saw the hang: $(api status)"
comm=$(api comms | python3 -c 'import json, sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
u=http://127.0.0.1:$http/ui

# ---- HTTP: token, cookie, types ----
code() { curl -s -o /dev/null -m 10 -w '%{http_code} %{content_type}' "$@"; }
[ "$(code "$u/")" = "401 text/html; charset=utf-8" ] || die "/ui/ without the token: $(code "$u/")"
[ "$(code "$u/?token=wrong")" = "401 text/html; charset=utf-8" ] || die "/ui/ with a wrong token: $(code "$u/?token=wrong")"
curl -s -m 10 -D "$dir/login.h" -o /dev/null "$u/?token=$enc_token"
grep -qi '^Set-Cookie: ncclscope_token=[0-9a-f]*; Path=/; HttpOnly; SameSite=Strict' "$dir/login.h" || die "no cookie: $(cat "$dir/login.h")"
grep -qi "^Content-Security-Policy: default-src 'self'" "$dir/login.h" || die "no CSP: $(cat "$dir/login.h")"
cookie=$(sed -nE 's/^Set-Cookie: (ncclscope_token=[0-9a-f]*);.*/\1/ip' "$dir/login.h" | tr -d '\r')
[ "$(code -H "Cookie: theme=dark; $cookie" "http://127.0.0.1:$http/api/v1/status")" = "200 application/json" ] ||
    die "the cookie does not open the API"
[ "$(code -H "Cookie: ${cookie}00" "http://127.0.0.1:$http/api/v1/status")" = "401 application/json" ] ||
    die "a wrong cookie opens the API"
for f in index.html:text/html comm.js:text/javascript ui.css:text/css; do
    [ "$(code "${auth[@]}" "$u/${f%%:*}")" = "200 ${f#*:}; charset=utf-8" ] || die "$f: $(code "${auth[@]}" "$u/${f%%:*}")"
done
[ "$(code "${auth[@]}" "$u/nothing.js")" = "404 application/json" ] || die "an unknown file is not 404"
echo "ok: token, cookie and content types"
# the Perfetto download's endpoint refuses what it cannot write, saying why
for bad in "format=svg:format: perfetto or chrome" "limit=5:unknown parameter limit for export"; do
    body=$(curl -s -m 10 "${auth[@]}" -w ' %{http_code}' "http://127.0.0.1:$http/api/v1/export?job=$job&comm=$comm&${bad%%:*}")
    [[ $body == *"${bad#*:}"*"400" ]] || die "export?${bad%%:*}: $body"
done
echo "ok: export refuses a bad format or parameter"

# ---- the pages in Chromium ----
# where the timeline drew an event (5 px wide at least), in the viewport
drawn='(() => { const c = document.getElementById("lanes"), r = c.getBoundingClientRect();
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data, lit = (x, y) => d[(y * c.width + x) * 4 + 3] > 0;
    for (let y = 8; y < c.height; y += 16)
        for (let x = 202; x + 5 < c.width; x++)
            if ([0, 1, 2, 3, 4].every(i => lit(x + i, y))) return [r.left + x + 2, r.top + y];
    return null; })()'
# the middle of an element (CSS selector) in the viewport
at() { echo "click:(r => [r.left + r.width / 2, r.top + r.height / 2])(document.querySelector('$1').getBoundingClientRect())"; }
# the name of the first rank's row on the timeline
rank0='click:(r => [r.left + 30, r.top + 8])(document.getElementById("lanes").getBoundingClientRect())'
tl_is() { echo "await:document.getElementById('timeline').dataset.$1"; }
rm -rf "$out"
python3 "$here/browser.py" "$out" "login=$u/?token=$enc_token" \
    "overview=$u/" loading:1 "wait:Number(document.getElementById('live').dataset.summaries || 0) >= 2" \
    "comm=$u/comm.html?comm=$comm&job=$job" loading:1 "hang=$u/hang.html?job=$job" loading:1 \
    "timeline=$u/timeline.html?comm=$comm&job=$job" loading:1 "$(tl_is 'rows === "4"')" "$rank0" "$(tl_is 'open === "0"')" \
        "point:$drawn" download:download \
    "links=$u/links.html?comm=$comm&job=$job" loading:1 \
    "slowcomm=$u/comm.html?comm=$slow_comm&job=$two" \
    "arrows=$u/timeline.html?comm=$p2p_comm&job=$two" \
    "perfetto=$u/timeline.html?comm=$comm&job=$job" download:perfetto \
    "window=$u/timeline.html?comm=$comm&job=$job" "fill:span=2 ms" "$(at 'button[type=submit]')" \
        "await:document.getElementById('timeline').dataset.window.split('-').reduce((a, b) => b - a) === 2e6" \
    || die "a page failed in Chromium (see $out)"
# where the slow link's verdict points: that timeline, loaded as a person
# following the link would
place=$(python3 -c 'import html, re, sys
m = re.search(r"<li class=\"bad\" data-kind=\"slow_link\"[^>]*>.*?<a class=\"place\" href=\"([^\"]*)\"", open(sys.argv[1]).read())
print(html.unescape(m.group(1)) if m else "")' "$out/slowcomm.html")
[ -n "$place" ] || die "the communicator page shows no slow link verdict linked to the timeline (see $out/slowcomm.html)"
python3 "$here/browser.py" "$out" "login=$u/?token=$enc_token" "place=$u/$place" || die "the verdict's timeline failed (see $out)"
api "p2p?job=$two&comm=$p2p_comm&$(python3 -c 'import re, sys
a, b = re.search(r"data-window=\"(\d+)-(\d+)\"", open(sys.argv[1]).read()).groups()
print("t0_ns=%s&t1_ns=%s" % (a, b))' "$out/arrows.html")" >"$dir/p2p.json" || die "p2p failed"
api "timeline?job=$job&comm=$comm&format=compact&states=0&limit=1" | head -1 >"$dir/tlhead.json" || die "timeline failed"
api "diagnose?job=$two&comm=$slow_comm" >"$dir/diag2.json" || die "diagnose failed"
api "comms?job=$two" >"$dir/comms2.json" || die "comms failed"
api "comms?job=$job" >"$dir/comms1.json" || die "comms failed"
api "collectives?job=$job&comm=$comm" >"$dir/colls1.ndjson" || die "collectives failed"
python3 - "$out" "$slow_rank" "$hang_rank" "$hang_after" "$dir" "$p2p_comm" "$slow_comm" "$comm" "$ended" <<'PY' || die "the pages do not show the job (see $out)"
import html, json, re, sys
from datetime import datetime, timezone
out, slow, hang, hseq, tmp, p2p_comm, slow_comm, comm_id, ended = sys.argv[1:10]
def page(name):
    return open("%s/%s.html" % (out, name)).read()
def attrs(html, ident):
    """The attributes of the element with id ident."""
    tag = re.search(r'<[a-z0-9]+ id="%s"[^>]*>' % ident, html)
    return dict(re.findall(r'([a-z-]+)="([^"]*)"', tag.group(0))) if tag else {}
fails = []
def check(ok, what):
    print(("ok: " if ok else "FAILED: ") + what)
    if not ok:
        fails.append(what)
for name in ("overview", "comm", "hang", "timeline", "links"):
    h = page(name)
    check('data-js-errors="0"' in h and 'data-api-errors="0"' in h and 'data-state="ready"' in h,
          "%s: ready, no script or API error" % name)
ov = page("overview")
check(re.search(r'id="card-lagging"><div class="value">1<', ov) is not None, "overview: 1 lagging rank")
check(re.search(r"lagging: rank %s at AllReduce seq %d of %s" % (hang, int(hseq) - 1, hseq), ov) is not None,
      "overview: rank %s named lagging" % hang)
check(re.search(r'<li class="bad" data-ended="%s">job %s ended hung at AllReduce seq 2: rank 3 never arrived '
                r'\(process alive until \d\d:\d\d:\d\d UTC\) on ' % (ended, ended), ov) is not None,
      "overview: the ended job's verdict")
# the processes (two jobs' on both nodes, which the status lists as they
# came) and the agents by host
for table in ("processes", "agents"):
    part = ov[ov.index('id="%s"' % table):]
    part = part[:part.index("</table>")]
    col = 0 if table == "processes" else 1
    hosts = [re.findall(r"<td>([^<]*)</td>", r)[col] for r in re.findall(r"<tr[^>]*>(.*?)</tr>", part) if "<td>" in r]
    check(len(hosts) >= 2 and len(set(hosts)) == 2 and hosts == sorted(hosts), "overview: %s by host (%s)" % (table, hosts))
check(re.search(r'<span class="note cost" data-shed=""> profiler cost [0-9.]+ % of collective time</span>', ov) is not None,
      "overview: the profiler's cost of each job")
cm = page("comm")
rows = re.findall(r'<div class="hm-row( straggler)?" data-rank="(\d+)" data-median-ns="(\d*)"', cm)
check(len(rows) == 4, "comm: a heat map row per rank (%d)" % len(rows))
check([r for s, r, _ in rows if s] == [slow], "comm: only rank %s marked straggler (%s)" % (slow, [r for s, r, _ in rows if s]))
med = {r: int(m) if m else None for _, r, m in rows}
check(med.get(slow) is not None and med[slow] < 50e6, "comm: the straggler's median wait under 50 ms (%s)" % med.get(slow))
check(all(m is not None and m > 100e6 for r, m in med.items() if r != slow), "comm: the others wait over 100 ms (%s)" % med)
# the rings: 2 ranks per node, so ProxyOps show the network legs only, and
# the page says the order within a node is unknown rather than draw nothing
rg = attrs(cm, "rings")
check(int(rg.get("data-channels", 0)) > 0 and rg.get("data-unknown") == rg.get("data-channels")
      and cm.count("network legs only: the ring within each node is unknown") == int(rg.get("data-channels", 0)),
      "comm: each channel's network legs, the ring within a node said unknown (%s)" % rg)
# when each collective started, in UTC as the API gives it (start_utc)
api_utc = {c["start_utc"] for c in map(json.loads, open(tmp + "/colls1.ndjson")) if c.get("kind") == "collective"}
shown_utc = re.findall(r'<span class="utc">([^<]*)</span>', cm)
check(shown_utc and None not in api_utc and set(shown_utc) <= api_utc,
      "comm: each collective's start in UTC, the API's start_utc (%d shown: %s)" % (len(shown_utc), shown_utc[:2]))
hm = attrs(cm, "heatmap")
check(hm.get("data-ranks") == "4" and int(hm.get("data-collectives", 0)) == int(hseq) + 1,
      "comm: every rank and collective in the heat map (%s)" % hm)
hg = page("hang")
check(re.search(r'<h2 class="hung-coll" data-func="AllReduce" data-seq="%s" [^>]*data-missing="%s">AllReduce seq %s is hung'
                % (hseq, hang, hseq), hg) is not None, "hang: AllReduce seq %s named hung, rank %s missing" % (hseq, hang))
check('data-hung="1"' in hg, "hang: exactly one hung collective")
check(re.search(r'<p class="verdict bad" data-kind="missing">diagnose, job [^:]*: PROBLEM: comm [^:]*: AllReduce seq %s: rank %s has not arrived \(process alive\)'
                % (hseq, hang), hg) is not None, "hang: diagnose's verdict names AllReduce seq %s and rank %s" % (hseq, hang))
lk = page("links")
# the ring 0-1-2-3 over two nodes crosses them at 1->2 and 3->0, on 2 channels
check(attrs(lk, "links").get("data-links") == "4" and attrs(lk, "links").get("data-slow") == "0",
      "links: 4 inter-node links, none slow (%s)" % attrs(lk, "links"))
check(re.search(r'<tr class="bad" data-host="node%d">' % (int(hang) // 2), lk) is not None,
      "links: the hung rank's host node%d blamed in hosts" % (int(hang) // 2))
tlh = page("timeline")
check(re.search(r'<div id="details" class="details"><h3>[^<]* \(\w+\), rank \d', tlh) is not None,
      "timeline: a click on an event shows its details")
tl = attrs(page("timeline"), "timeline")
check(int(tl.get("data-events", 0)) > 0 and tl.get("data-ranks") == "4" and int(tl.get("data-lanes", 0)) >= 16
      and tl.get("data-more") == "0", "timeline: events in lanes of every rank, the whole window (%s)" % tl)
span = lambda v: (lambda a, b: float(b) - float(a))(*v.split("-"))
check(0.75 < span(tl["data-view"]) / span(tl["data-window"]) < 0.85, "timeline: one wheel notch shows 0.8 of the window (%s)"
      % (span(tl["data-view"]) / span(tl["data-window"])))
# a row per rank until one is opened (the test waited for 4 rows before the
# click on rank 0's name): then rank 0's label row and its lanes
check(tl.get("data-open") == "0" and int(tl.get("data-rows", 0)) > 4 + 4, "timeline: rank 0 opened into its lanes (%s)" % tl)
legend = re.findall(r'<span class="type" data-type="(\w+)" data-colour="#([0-9a-f]{6})">', tlh)
rgb = [tuple(int(c[i:i + 2], 16) for i in (0, 2, 4)) for _, c in legend]
gap = min([sum((a - b) ** 2 for a, b in zip(x, y)) ** 0.5 for i, x in enumerate(rgb) for y in rgb[i + 1:]] or [0])
check(len(legend) >= 5 and len(set(rgb)) == len(legend) and gap >= 60,
      "timeline: a legend with a distinct colour per event type (%d types, nearest two %.0f apart: %s)" % (len(legend), gap, legend))
ax = attrs(tlh, "axis")
ticks = ax.get("data-ticks", "").split("|")
check(len(ticks) >= 3 and all(re.fullmatch(r"[+-]\d+(\.\d+)? (ns|us|ms|s)", x) for x in ticks),
      "timeline: a time axis in human units (%s)" % ticks)
head = json.load(open(tmp + "/tlhead.json"))
w0 = int(tl["data-window"].split("-")[0])
if "wall_offset_ns" in head:
    wall = head["wall_offset_ns"] + w0
    want = datetime.fromtimestamp(wall // 10**9, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + ".%06dZ" % (wall % 10**9 // 1000)
    check(ax.get("data-wall") == want, "timeline: the window's start in UTC, %s (%s)" % (want, ax.get("data-wall")))
else:
    check(ax.get("data-wall") == "unknown" and "wall clock unknown" in tlh,
          "timeline: without wall_offset_ns, 'wall clock unknown' (%s)" % ax.get("data-wall"))
check(re.search(r'<button type="button" id="download"[^>]*>Download Chrome JSON trace \(\.json\)</button>', tlh) is not None,
      "timeline: the Download button says it saves Chrome JSON")
wn = attrs(page("window"), "timeline")
check(span(wn.get("data-window", "0-0")) == 2e6, "timeline: a window typed in human units ('2 ms') is read (%s)" % wn)
ar = attrs(page("arrows"), "timeline")
p2p = json.load(open(tmp + "/p2p.json"))
check(ar.get("data-more") == "0" and p2p["matched"] > 0 and ar.get("data-arrows") == str(p2p["matched"]),
      "timeline: an arrow per Send -> Recv that /api/v1/p2p matches in the window (%s arrows, %s matched)"
      % (ar.get("data-arrows"), p2p["matched"]))
# both of the second job's communicators are "world", 4 ranks on node0 and
# node1: the overview names them apart, by the API's labels (the one
# definition, common/commlabel.c); so do the communicator page and the timeline
names = dict((c, html.unescape(n)) for c, n in re.findall(
    r'<tr data-comm="[^"/]*-two/(0x[0-9a-f]+)"[^>]*><td class="name"><a [^>]*>([^<]*)</a>', ov))
labels = {c["comm"]: c["label"] for c in json.load(open(tmp + "/comms2.json"))["comms"]}
check(len(names) == 2 and len(set(names.values())) == 2 and names == labels,
      "overview: two 'world' communicators named by the API's distinct labels (%s, API %s)" % (names, labels))
bws = re.findall(r'<tr data-comm="[^"/]*-two/0x[0-9a-f]+"[^>]*>.*?<td class="num bw">([^<]*)</td>', ov)
check(bws == ["-", "-"], "overview: a finished communicator's busBW is no figure, not 0 (%s)" % bws)
label1 = {c["comm"]: c["label"] for c in json.load(open(tmp + "/comms1.json"))["comms"]}
title = lambda name: html.unescape((re.search(r'<h1 id="title"[^>]*>([^<]*)</h1>', page(name)) or re.search("()", "")).group(1))
check(title("comm").startswith("Communicator %s, job " % label1.get(comm_id)),
      "communicator: titled by the API's label (%s, API %s)" % (title("comm"), label1.get(comm_id)))
check(title("timeline").startswith("Timeline of %s" % label1.get(comm_id)),
      "timeline: titled by the API's label (%s, API %s)" % (title("timeline"), label1.get(comm_id)))
sc = page("slowcomm")
diag = json.load(open(tmp + "/diag2.json"))
slowp = [p for p in diag["problems"] if p["kind"] == "slow_link"]
check(len(slowp) == 1, "the second job's ring has one slow link (%s)" % diag["verdict"])
shown = [(k, dict(re.findall(r'([a-z-]+)="([^"]*)"', a)))
         for k, a in re.findall(r'<li class="bad" data-kind="(\w+)"([^>]*)>', sc)]
shown = [(k, a.get("data-rank", ""), a.get("data-peer", "")) for k, a in shown]
check(shown and [k for k, _, _ in shown] == [p["kind"] for p in diag["problems"]] and slowp and
      ("slow_link", str(slowp[0]["rank"]), str(slowp[0]["peer"])) in shown,
      "communicator: diagnose's verdicts on it, the slow link with its ranks (%s)" % shown)
pl = page("place")
pa = attrs(pl, "timeline")
m = re.search(r'data-kind="slow_link".*?<a class="place" href="([^"]*)"', sc)
href = html.unescape(m.group(1)) if m else ""
q = dict(re.findall(r"[?&]([a-z0-9_]+)=([^&]*)", href))
pair = sorted([slowp[0]["rank"], slowp[0]["peer"]]) if slowp else []
check(pa.get("data-open") == ",".join(map(str, pair)) and pa.get("data-ranks") == "2"
      and pa.get("data-window") == "%s-%s" % (q.get("t0_ns"), q.get("t1_ns")) and int(pa.get("data-events", 0)) > 0,
      "communicator: the slow link's timeline link opens its two ranks over the collective (%s, %s)" % (href, pa))
sys.exit(1 if fails else 0)
PY
# The trace the Download button saved: the CLI's Chrome export of the same
# window writes every one of its slices (same rank, lane, name, type, start
# and duration), and it holds every event the page showed.
view=$(python3 -c 'import re, sys; print(re.search(r"data-window=\"(\d+)-(\d+)\"", open(sys.argv[1]).read()).expand(r"\1 \2"))' \
    "$out/timeline.html")
"$bin/ncclscope" --collector "http://127.0.0.1:$http" --token-file "$dir/token" --job "$job" export --comm "$comm" \
    --t0 "${view% *}" --t1 "${view#* }" --format chrome -o "$dir/cli.json" || die "ncclscope export failed"
python3 - "$out"/timeline.download/* "$dir/cli.json" "$out/timeline.html" <<'PY' || die "the downloaded trace is not the window's"
import json, re, sys
# Slices by (rank, type, event id), compared to the nanosecond (the two
# writers may round microseconds differently): the CLI reads the window
# seconds later, but from the same events and the same (absent) host clock
# models.
def slices(path):
    d = json.load(open(path))["traceEvents"]
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in d if e.get("name") == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in d if e.get("name") == "process_name"}
    out = {(e["pid"], e["cat"], e["args"]["id"]): (lanes[(e["pid"], e["tid"])], e["name"], e["ph"], e["ts"], e.get("dur"))
           for e in d if e["ph"] in ("X", "B")}
    return out, procs
ui, ui_procs = slices(sys.argv[1])
cli, cli_procs = slices(sys.argv[2])
shown = int(re.search(r'data-events="(\d+)"', open(sys.argv[3]).read()).group(1))
bad = [(k, v, cli.get(k)) for k, v in ui.items()
       if k not in cli or v[:3] != cli[k][:3] or abs(v[3] - cli[k][3]) > 0.001 or abs((v[4] or 0) - (cli[k][4] or 0)) > 0.001]
moved = max([abs(v[3] - cli[k][3]) for k, v in ui.items() if k in cli] or [0])
print("download: %d slices (the page showed %d events), the CLI's export %d; differing: %d; times moved by up to %.3f us"
      % (len(ui), shown, len(cli), len(bad), moved))
assert len(ui) == shown and shown > 0, "the download is not the window the page showed"
assert not bad, "slices the CLI writes otherwise: %s" % bad[:3]
assert ui_procs == cli_procs and len(ui_procs) == 4, "process names differ: %s / %s" % (ui_procs, cli_procs)
PY
echo "ok: the downloaded trace is the window, as ncclscope export writes it"
# The Perfetto button saves the bytes `ncclscope export --format perfetto`
# writes for the window (one writer, common/export.c).
view=$(python3 -c 'import re, sys; print(re.search(r"data-window=\"(\d+)-(\d+)\"", open(sys.argv[1]).read()).expand(r"\1 \2"))' \
    "$out/perfetto.html")
"$bin/ncclscope" --collector "http://127.0.0.1:$http" --token-file "$dir/token" --job "$job" export --comm "$comm" \
    --t0 "${view% *}" --t1 "${view#* }" --format perfetto -o "$dir/cli.pftrace" || die "ncclscope export failed"
ls "$out"/perfetto.download/*.pftrace >/dev/null || die "the Perfetto button saved no .pftrace: $(ls "$out/perfetto.download")"
cmp "$out"/perfetto.download/*.pftrace "$dir/cli.pftrace" || die "the Perfetto download differs from ncclscope export's"
echo "ok: the Perfetto download is ncclscope export's trace of the window, $(stat -c %s "$dir/cli.pftrace") bytes"
# a page that cannot show its communicator must be reported
if python3 "$here/browser.py" "$dir/bad" "login=$u/?token=$enc_token" "bad=$u/comm.html?comm=0xdead&job=$job" \
    >"$dir/bad.out" 2>&1; then
    die "a page with an API error passed: $(cat "$dir/bad.out")"
fi
grep -q '^bad: FAILED' "$dir/bad.out" && grep -q 'data-api-errors="1"' "$dir/bad/bad.html" || die "the API error was not recorded: $(cat "$dir/bad.out")"
echo "ok: a page with an API error is reported"
wait $emu || die "emulator failed"
# no store check: the hung collectives are flushed open at finalize, which
# the emulator's summary does not count (as e2e.sh hang)
