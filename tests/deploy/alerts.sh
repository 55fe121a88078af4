#!/bin/bash
# alerts.sh SRC_DIR: the Prometheus alerting rules (containers/prometheus/
# ncclscope-alerts.yaml, docs/alerts.md) pass `promtool check rules` and the
# unit cases of alerts_test.yaml (`promtool test rules`); copies with a rule's
# threshold, wait or grouping changed fail those cases (so a pass means
# something); the Kubernetes build (containers/k8s, kustomize_lite.py) carries
# the file unchanged in its ConfigMap. That the rules fire on what a real
# collector exports: tests/e2e/prometheus.sh alerts.
set -euo pipefail
src=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
need_cmds "Debian package prometheus" promtool
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed (scripts/deps.sh --test installs it)"
rules=$src/containers/prometheus/ncclscope-alerts.yaml
dir=$(mktemp -d /tmp/nsc-alerts-XXXXXX)
trap 'rm -rf "$dir"' EXIT

out=$(promtool check rules "$rules" 2>&1) || fail "promtool check rules: $out"
grep -q "SUCCESS: 10 rules found" <<<"$out" || fail "expected 10 rules: $out"
# unit cases: rule_files names the rules beside the test file
cases() { cp "$here/alerts_test.yaml" "$1/" && (cd "$1" && promtool test rules alerts_test.yaml 2>&1); }
mkdir "$dir/ok" && cp "$rules" "$dir/ok/"
out=$(cases "$dir/ok") || fail "promtool test rules: $out"
echo "alerts: check and unit cases pass"

# broken SED_EXPR: a copy of the rules edited by SED_EXPR fails the cases.
broken() {
    rm -rf "$dir/bad" && mkdir "$dir/bad"
    sed "$1" "$rules" >"$dir/bad/ncclscope-alerts.yaml"
    cmp -s "$rules" "$dir/bad/ncclscope-alerts.yaml" && fail "the edit '$1' changed nothing"
    out=$(cases "$dir/bad") && fail "rules edited by '$1' pass the unit cases"
    grep -q FAILED <<<"$out" || fail "rules edited by '$1': $out"
}
n=0
while read -r expr; do broken "$expr"; n=$((n + 1)); done <<'EOF2'
s/(ncclscope_comm_hung_collectives) > 0/(ncclscope_comm_hung_collectives) > 1/
0,/for: 1m/s//for: 0m/
0,/for: 5m/s//for: 3m/
s/sum by (host) (ncclscope_host_causes{cause="dropped"})/sum(ncclscope_host_causes{cause="dropped"})/
s/cause="late"/cause="slow_link"/
s/up{job="ncclscope-agent"} == 0/up{job="ncclscope-agent"} < 0/
s/ or absent(up{job="ncclscope-collector"})//
EOF2
echo "alerts: $n broken copies fail the unit cases"

# The ConfigMap of containers/k8s carries the rules unchanged.
python3 - "$here" "$src/containers/k8s" "$rules" <<'PY' || fail "the Kubernetes build does not carry the rules"
import sys
sys.path.insert(0, sys.argv[1])
import kustomize_lite
errs = []
docs = kustomize_lite.build(sys.argv[2], lambda where, what: errs.append(f"{where}: {what}"))
maps = [d for _, d in docs if d["kind"] == "ConfigMap" and "ncclscope-alerts.yaml" in d.get("data", {})]
assert not errs, errs
assert len(maps) == 1 and maps[0]["metadata"]["namespace"] == "ncclscope", "one ConfigMap in ncclscope"
assert maps[0]["data"]["ncclscope-alerts.yaml"] == open(sys.argv[3]).read(), "the rules changed"
print("alerts: ConfigMap %s carries the rules" % maps[0]["metadata"]["name"])
PY
