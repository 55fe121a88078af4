#!/bin/bash
# hosts.sh: `ncclscope hosts` counts, per host across jobs, the causes
# diagnose places there (docs/cli-links.md "hosts", issue 17 item 5). One collector
# and one agent per simulated node (a 4-node ring, rank r on node r) see five
# jobs in turn: a clean one, a late host on node1, a slow NIC on node2, a slow
# link node3 -> node0 and rank 0 killed on node0; the counts of each cause
# class must be exactly those faults (a slow link counts at both ends). The
# collector's /api/v1/{diagnose,links,hosts} must answer byte for byte what
# the CLI's --json prints, for every job, and only with the bearer token;
# the root-cause metrics of /metrics must count what hosts counts.
#
#   hosts.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2 mode=ci
nodes=4
. "$(dirname "$0")/lib.sh"

# run NAME ARGS...: job NAME (the emulator's base shape, then ARGS) to its
# end, every event delivered.
run() {
    run_to_end "$1" --ranks-per-node 1 --iters 12 --channels 2 --count 4194304 --chunk-size 2097152 --seed 1 "${@:2}"
}

# Root-cause passes every 3 s: often enough for the check at the end, rarely
# enough that analysing the running jobs does not slow the emulator's ranks
# (their step times are what the slow-link judgement reads).
echo "hosts-e2e-token" >"$dir/token"
export NCCLSCOPE_TOKEN=hosts-e2e-token
start_all --hang-ms 300 --token-file "$dir/token" --rootcause-interval-ms 3000
run h-none --scenario ring
run h-late --scenario ring --slow-rank 1 --slow-us 4000
run h-nic --scenario ring --slow-nic 2:4
run h-link --scenario ring --slow-link 3:0:4
run h-kill --scenario kill --kill-rank 0 --kill-after 2 --pace-us 20000
"$bin/ncclscope" --collector "http://127.0.0.1:$http" --json hosts >"$dir/hosts.json" || die "hosts failed"
"$bin/ncclscope" --collector "http://127.0.0.1:$http" hosts >"$dir/hosts.txt" || die "hosts (table) failed"
python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
causes=("late","slow_link","slow_nic","stall","dead","dropped")
got={h["host"]: {k: h[k] for k in causes if h[k]} for h in d["hosts"]}
got={h: c for h, c in got.items() if c}
want={"node0": {"slow_link": 1, "dead": 1}, "node1": {"late": 1}, "node2": {"slow_nic": 1}, "node3": {"slow_link": 1}}
sys.exit(0 if d["jobs"] == 5 and got == want else "jobs %d, causes %s, want %s" % (d["jobs"], got, want))' \
    "$dir/hosts.json" || die "hosts: $(cat "$dir/hosts.json")"
grep -q '^node0 ' "$dir/hosts.txt" || die "hosts table: $(cat "$dir/hosts.txt")"
cat "$dir/hosts.txt"

# api_same PATH CLI-ARGS...: the endpoint's body equals the CLI's --json output
# (but for the ages in lagging and hung problems' text).
api_same() {
    local path=$1
    shift
    curl -sf -m 60 -H "Authorization: Bearer $NCCLSCOPE_TOKEN" "http://127.0.0.1:$http/api/v1/$path" \
        >"$dir/api.json" || die "GET $path failed"
    "$bin/ncclscope" --collector "http://127.0.0.1:$http" --json "$@" >"$dir/cli.json" || [ "$1" = diagnose ] ||
        die "ncclscope $* failed"
    # how long a rank has lagged is measured when asked: the two answers
    # may be a tenth of a second apart
    sed -Ei 's/for [0-9.]+ s([,)"])/for N s\1/g' "$dir/api.json" "$dir/cli.json"
    cmp -s "$dir/api.json" "$dir/cli.json" || die "$path differs from ncclscope $*: $(diff "$dir/api.json" "$dir/cli.json")"
}
# The agents' clock probes move the aligned times by microseconds between two
# requests while the clock models settle (more under the sanitizers): with
# the agents stopped, the store and the live state hold still.
for n in $(seq 0 $((nodes - 1))); do stop agent$n; done
for j in h-none h-late h-nic h-link h-kill; do
    api_same "diagnose?job=$j" diagnose --job $j
    api_same "links?job=$j" links --job $j
    api_same "links?job=$j&comm=world" links --job $j --comm world
done
api_same "diagnose?job=h-link&comm=world" diagnose --job h-link --comm world
grep -q '"kind":"slow_link"' "$dir/api.json" || die "the slow link's job: no slow_link in $(cat "$dir/api.json")"
api_same hosts hosts
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 "http://127.0.0.1:$http/api/v1/diagnose?job=h-kill")
[ "$code" = 401 ] || die "diagnose without the token: HTTP $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 -H "Authorization: Bearer $NCCLSCOPE_TOKEN" \
    "http://127.0.0.1:$http/api/v1/diagnose?job=nosuchjob")
[ "$code" = 404 ] || die "diagnose of an unknown job: HTTP $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 -H "Authorization: Bearer $NCCLSCOPE_TOKEN" \
    "http://127.0.0.1:$http/api/v1/hosts?job=h-kill")
[ "$code" = 400 ] || die "hosts with a parameter it does not take: HTTP $code"
echo "the API's diagnose, links and hosts equal the CLI's --json"

# rc_metrics_match: ncclscope_host_causes and ncclscope_link_slow_jobs equal
# what hosts counted, over the same five jobs.
rc_metrics_match() {
    curl -sf -m 10 -H "Authorization: Bearer $NCCLSCOPE_TOKEN" "http://127.0.0.1:$http/metrics" >"$dir/metrics.txt" &&
        python3 -c 'import json,re,sys
d=json.load(open(sys.argv[1])); m=open(sys.argv[2]).read()
got={}; pairs={}
for h, c, v in re.findall(r"^ncclscope_host_causes\{host=\"([^\"]*)\",cause=\"([^\"]*)\"\} (\d+)$", m, re.M):
    got.setdefault(h, {})[c]=int(v)
for a, b, v in re.findall(r"^ncclscope_link_slow_jobs\{src_host=\"([^\"]*)\",dst_host=\"([^\"]*)\"\} (\d+)$", m, re.M):
    pairs[(a, b)]=int(v)
want={h["host"]: {k: h[k] for k in ("late","slow_link","slow_nic","stall","dead","dropped","other")} for h in d["hosts"]}
jobs=re.search(r"^ncclscope_collector_rootcause_jobs (\d+)$", m, re.M)
ok=jobs and int(jobs.group(1)) == 5 and got == want and pairs.get(("node3", "node0")) == 1
sys.exit(0 if ok else 1)' "$dir/hosts.json" "$dir/metrics.txt"
}
wait_until 30 rc_metrics_match || die "root-cause metrics: $(grep -E '^ncclscope_(host_causes|link_slow|collector_rootcause)' "$dir/metrics.txt")"
echo "/metrics' root-cause families count what hosts counts"
