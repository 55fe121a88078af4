#!/bin/bash
# cli_contract.sh: the CLI's contract (docs/cli.md "Exit codes", "Choosing
# the job and the communicator", "Units") on the real pipeline: a collector
# and one agent per simulated node (2 nodes x 1 rank) see two jobs that share
# a communicator id, as two runs of one script do:
#   ja: a ring AllReduce (communicator X, network steps);
#   jb: an AllReduce of 2 ranks on one node (communicator Y, as large as X
#       and first by id, no network step), then the ring AllReduce again (X).
# Checked, from the collector and from its store (--db):
#   - X without --job is ambiguous: exit 2 naming both jobs; Y is found in jb;
#   - the only communicator of ja is used without --comm; jb needs --comm;
#   - links of jb without --comm is X's, the one with network steps;
#   - every header names the job and the communicator;
#   - bad values exit 2, nothing found or matched exits 1, each with one line;
#   - tables read in units for people, --raw gives the exact integers;
#   - collectives --sort FIELD --top N is the JSON's order and count;
#   - UTC times beside the collector's clock, --since/--until, lanes of the
#     ranks asked for only;
#   - status --db answers as the collector did (job jc: Send/Recv only);
#   - colour on a terminal only, NO_COLOR respected.
#
#   cli_contract.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=2
. "$(dirname "$0")/../e2e/lib.sh"

# run NAME ARGS...: job NAME to its end, every event delivered.
run() { run_to_end "$1" --ranks-per-node 1 --iters 6 --channels 2 --count 262144 "${@:2}"; }
start_all
run ja --scenario ring --seed 3
run jb --scenario coll --seed 5 --nodes 1 --ranks-per-node 2
run jb --scenario ring --seed 3
run jc --scenario p2p --seed 7  # a Send/Recv-only communicator
for n in $(seq 0 $((nodes - 1))); do stop agent$n; done  # the clock models hold still

fail=0
cli() { "$bin/ncclscope" $src "$@"; }
# expect CODE PATTERN ARGS...: the exit code, and one stderr line matching PATTERN.
expect() {
    local code=$1 pat=$2 rc=0
    shift 2
    cli "$@" >"$dir/out" 2>"$dir/err" || rc=$?
    if [ "$rc" -ne "$code" ] || [ "$(wc -l <"$dir/err")" -ne 1 ] || ! grep -qE "^ncclscope: $pat" "$dir/err"; then
        echo "FAIL ($src): ncclscope $* -> rc $rc (want $code), stderr: $(cat "$dir/err")"
        fail=1
    fi
}
# has PATTERN ARGS...: exit 0 and stdout has a line matching PATTERN.
has() {
    local pat=$1
    shift
    if ! cli "$@" >"$dir/out" 2>"$dir/err" || ! grep -qE "$pat" "$dir/out"; then
        echo "FAIL ($src): ncclscope $*: no line like '$pat' in: $(head -5 "$dir/out") $(cat "$dir/err")"
        fail=1
    fi
}

contract() {
    local x y
    x=$(cli --json --job ja comms | python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
    y=$(cli --json --job jb comms |
        python3 -c 'import json,sys; print([c["comm"] for c in json.load(sys.stdin)["comms"] if c["comm"] != sys.argv[1]][0])' "$x")
    # Which job: looked up in every job, ambiguity said, never a silent pick.
    expect 2 "comm: $x is in 2 jobs \(\"ja\", \"jb\"\); name one with job \(--job\)" collectives --comm "$x"
    has "^job jb, comm $y \(world\), 2 ranks$" collectives --comm "$y"
    has "^job ja, comm $x \(world\), 2 ranks$" --job ja collectives --comm "$x"
    has "^job ja, comm $x \(world\), 2 ranks$" --job ja collectives
    # Topology as people draw it: ranks per node, the ring in order, edges.
    has "^job ja, comm $x \(world\), 2 ranks on 2 nodes$" --job ja topology
    has "^node1: 1 rank \(clock: (model|identity)\)$" --job ja topology
    has "^  rank 1 +GPU ([0-9]+|unknown) +local rank ([0-9]+|unknown) +pid [0-9]+$" --job ja topology
    has "^  channel 1: [01] -> [01] -> [01] \(ring\)$" --job ja topology
    has "^1 +1 +0 +NET +(ok|slow|behind|unknown) " --job ja topology
    # Rings within a node cannot be drawn: said so, not left blank.
    has "^  rings unknown: no ProxyOp seen \(within a node NCCL's proxy traces no leg" --job jb topology --comm "$y"
    if grep -q -- "-1" "$dir/out"; then echo "FAIL ($src): topology shows -1: $(cat "$dir/out")"; fail=1; fi
    has "^comm: $x$" --job ja stats
    if grep -q "wall_offset_ns" "$dir/out"; then echo "FAIL ($src): stats shows wall_offset_ns"; fail=1; fi
    has "^comm: $x$" --job ja p2p
    expect 2 "comm: required: job \"jb\" has 2 communicators \(see comms\)" --job jb stats
    has "^job jb, comm $x$" --job jb links
    has "^job jb: (OK|PROBLEM)" --job jb diagnose --comm "$y"
    # Colour on a terminal (script(1) gives it one), never piped or with NO_COLOR.
    local esc=$'\033['
    script -qec "$bin/ncclscope $src --job jb links" /dev/null >"$dir/tty.txt" </dev/null || true
    grep -qF "$esc" "$dir/tty.txt" || { echo "FAIL ($src): links on a terminal has no colour"; fail=1; }
    NO_COLOR=1 script -qec "$bin/ncclscope $src --job jb links" /dev/null >"$dir/tty.txt" </dev/null || true
    ! grep -qF "$esc" "$dir/tty.txt" || { echo "FAIL ($src): links with NO_COLOR has colour"; fail=1; }
    cli --job jb links | grep -qF "$esc" && { echo "FAIL ($src): links piped has colour"; fail=1; }
    # Exit codes and what would be valid.
    expect 2 "func: expected one of AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AlltoAll, Gather, Scatter: \"Bogus\"" \
        --job ja collectives --func Bogus
    expect 2 "seq: expected N or N-M with N <= M: \"abc\"" --job ja collectives --seq abc
    expect 2 "limit: expected 1 to 1000000: \"0\"" --job ja collectives --limit 0
    expect 2 "clock: expected model or causal: \"exact\"" --job ja collectives --clock exact
    has "^job ja, comm $x \(world\), 2 ranks$" --job ja collectives --clock causal
    expect 2 "comm: expected 0x and 1 to 16 hex digits, or a name" --job ja collectives --comm 0xzz
    expect 1 "rank: no such rank in communicator $x \(its ranks: 0-1\)" --job ja collectives --rank 99
    expect 1 "no collectives matched" --job ja collectives --seq 999
    expect 1 "no job \"nosuch\"" --job nosuch status
    expect 1 "no job \"nosuch\" in the store" --job nosuch comms
    # Units for people; --raw the exact integers; --sort and --top.
    has "^[0-9]+ +AllReduce +1\.00 MiB +2 +[0-9.]+ (us|ms|s) " --job ja collectives
    has "^SEQ +FUNC +BYTES +RANKS +DURATION_NS +SKEW_NS " --raw --job ja collectives
    has "^[0-9]+ +AllReduce +1048576 +2 +[0-9]+ " --raw --job ja collectives
    # Wall-clock time: the collector's offset in every answer with times, the
    # same from its store; UTC beside the collector's clock; --since/--until.
    cli --json --job ja collectives >"$dir/colls.ndjson"
    head -1 "$dir/colls.ndjson" | grep -qE '"wall_offset_ns":-?[0-9]+' ||
        { echo "FAIL ($src): no wall_offset_ns in the collectives header"; fail=1; }
    has " 20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z *$" --job ja collectives
    has "^t0 20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-9:]{8}\.[0-9]{6}Z, [0-9.]+ (ns|us|ms|s) per column" --job ja timeline
    has "^[0-9]+ +AllReduce " --job ja collectives --since 1h
    has "^[0-9]+ +AllReduce " --job ja collectives --since 1h --until 0s
    expect 1 "no collectives matched" --job ja collectives --until 1h
    expect 2 "--since wants a length of time before now \(90s, 5m, 2h\) or a UTC time like 2026-11-28T17:30:00Z, got '5x'" \
        --job ja collectives --since 5x
    expect 2 "give --t0 or --since, and --t1 or --until, not both" --job ja collectives --since 1h --t0 5
    # A Chrome trace's metadata: the job, the communicator and the window,
    # in UTC as the API gives it.
    cli --job ja export --comm "$x" --since 1h --format chrome -o "$dir/trace.json" 2>/dev/null
    python3 - "$dir/trace.json" "$x" <<'PY' || { echo "FAIL ($src): export's metadata"; fail=1; }
import json, sys
from datetime import datetime, timezone
m = json.load(open(sys.argv[1]))["metadata"]
w = m["t0_ns"] + m["wall_offset_ns"]
want = datetime.fromtimestamp(w // 10**9, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + ".%06dZ" % (w % 10**9 // 1000)
sys.exit(0 if m["job"] == "ja" and m["comm"] == sys.argv[2] and m["t0_utc"] == want and m["t1_utc"] is None
         else "metadata %s, t0_utc wanted %s" % (m, want))
PY
    # --rank draws the lanes asked for only.
    cli --job ja timeline --rank 1 >"$dir/lanes.txt"
    if ! grep -q "^rank    1 |" "$dir/lanes.txt" || grep -q "^rank    0 |" "$dir/lanes.txt"; then
        echo "FAIL ($src): timeline --rank 1: $(cat "$dir/lanes.txt")"; fail=1
    fi
    cli --raw --job ja collectives --sort duration --top 3 >"$dir/top.txt"
    python3 - "$dir/colls.ndjson" "$dir/top.txt" <<'PY' || { echo "FAIL ($src): --sort duration --top 3"; fail=1; }
import json, sys
recs = [r for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "collective"]
want = [r["seq"] for r in sorted(recs, key=lambda r: -r["duration_ns"])[:3]]
rows = [l.split() for l in open(sys.argv[2]).read().splitlines()[2:]]
sys.exit(0 if len(recs) > 3 and [int(r[0]) for r in rows] == want else "rows %s, want seq %s" % (rows, want))
PY
}

# utc_of FILE: the status's instants in UTC are its wall clock's, made as
# the API makes every *_utc (docs/api.md "Wall-clock time").
utc_of() {
    python3 - "$1" <<'PY' || { echo "FAIL: $1: the status's UTC times"; fail=1; }
import json, sys
from datetime import datetime, timezone
s = json.load(open(sys.argv[1]))
off = s["wall_offset_ns"]
iso = lambda ns: datetime.fromtimestamp((ns + off) // 10**9, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + \
    ".%06dZ" % ((ns + off) % 10**9 // 1000)
pairs = [(s["now_ns"], s["now_utc"])] + [(x["last_seen_ns"], x["last_seen_utc"]) for x in s["processes"] + s["agents"]]
bad = [(a, b) for a, b in pairs if iso(a) != b]
sys.exit("%d instants, wrong: %s" % (len(pairs), bad[:3]) if bad or len(pairs) < 3 else 0)
PY
}
src="--collector http://127.0.0.1:$http"
contract
cli --json status >"$dir/status-http.json"
utc_of "$dir/status-http.json"
stop collector
src="--db $dir/db"
contract
# status --db answers as the collector did: every communicator, the
# Send/Recv-only one too, with its name, ranks and progress.
cli --json status >"$dir/status-db.json"
utc_of "$dir/status-db.json"
python3 "$(dirname "$0")/cli_e2e_check.py" status "$dir/status-http.json" "$dir/status-db.json" ||
    { echo "FAIL: status --db differs from the collector's"; fail=1; }
# No rate is stored: a finished communicator's bus bandwidth is no figure, not 0.
has "^0x[0-9a-f]+ +world +2/2 +finished .* -  *$" --job ja status
if grep -q " 0\.00 *$" "$dir/out"; then echo "FAIL: status --db shows BUSBW 0.00: $(cat "$dir/out")"; fail=1; fi
python3 -c 'import json,sys
s=json.load(open(sys.argv[1])); c=[c for j in s["jobs"] if j["job"] == "jc" for c in j["comms"]]
sys.exit(0 if c and all(x["name"] for x in c) else "jc: %s" % c)' "$dir/status-db.json" ||
    { echo "FAIL: status --db: the Send/Recv-only communicator, named"; fail=1; }
[ $fail = 0 ] || exit 1
echo "cli_contract.sh: ok"
