#!/bin/bash
# k8s.sh SRC_DIR BIN_DIR: the Kubernetes manifests (containers/k8s, and what the
# distributed overlay containers/k8s-distributed builds) pass check_k8s.py, and the
# checker catches each kind of mistake in a broken copy (so a pass means something).
# Where kubectl is installed the checker's own build of the overlay must equal
# `kubectl kustomize`'s.
set -euo pipefail
src=$1 bin=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed (scripts/deps.sh --test installs it)"
dir=$(mktemp -d /tmp/nsc-k8s-XXXXXX)
trap 'rm -rf "$dir"' EXIT
check() { python3 "$here/check_k8s.py" "$1" "$bin" "$src"; }

check "$src/containers/k8s" || fail "the manifests do not pass"

# The distributed overlay, as the checker builds it (it includes ../k8s and ../grafana).
over=(--render)
if command -v kubectl >/dev/null; then
    kubectl kustomize "$src/containers/k8s-distributed" >"$dir/kubectl.yaml" || fail "kubectl kustomize refuses the overlay"
    over+=(--compare "$dir/kubectl.yaml")
else
    echo "k8s: kubectl not installed: the overlay's build is not compared with kustomize's"
fi
python3 "$here/check_k8s.py" "${over[@]}" "$src/containers/k8s-distributed" "$bin" "$src" ||
    fail "the distributed overlay does not pass"

# refused MODE FILE SED_EXPR EXPECTED: a copy of containers/ with one change in FILE
# of k8s/ (MODE base) or of k8s-distributed/ (MODE overlay, built by the checker)
# must fail with EXPECTED.
refused() {
    local sub=k8s opts=() out
    [ "$1" = overlay ] && sub=k8s-distributed opts=(--render)
    rm -rf "$dir/c" && mkdir "$dir/c" && cp -r "$src/containers/"{k8s,k8s-distributed,grafana,prometheus} "$dir/c/"
    sed -i "$3" "$dir/c/$sub/$2"
    cmp -s "$src/containers/$sub/$2" "$dir/c/$sub/$2" && fail "the edit '$3' changed nothing in $sub/$2"
    out=$(python3 "$here/check_k8s.py" "${opts[@]}" "$dir/c/$sub" "$bin" "$src") &&
        fail "a broken $sub/$2 ('$3') passes"
    grep -qF -- "$4" <<<"$out" || fail "broken $sub/$2 ('$3'): expected '$4', got: $out"
}
# One case a line: MODE|FILE|SED_EXPR|EXPECTED.
cases=0
while IFS='|' read -r mode file expr want; do
    refused "$mode" "$file" "$expr" "$want" </dev/null
    cases=$((cases + 1))
done <<'EOF'
base|agent.yaml|s/svc:7760/svc:7769/|names no Service port
base|agent.yaml|s/NCCLSCOPE_SPOOL,/NCCLSCOPE_SPOOLDIR,/|does not read NCCLSCOPE_SPOOLDIR
base|agent.yaml|s/"--http", "0.0.0.0:7762"/"--http-addr", "0.0.0.0:7762"/|has no flag --http-addr
base|agent.yaml|s/hostPID: true/hostPID: false/|hostPID must be true
base|collector.yaml|s/containerPort: 7761/containerPort: 8080/|docs/architecture.md says
base|collector.yaml|s/"tcp:\/\/0.0.0.0:7760"/"tcp:\/\/127.0.0.1:7760"/|does not serve port zmq
base|collector.yaml|s/"--clock-udp", "0.0.0.0:7760"/"--clock-udp", "0.0.0.0:7770"/|does not serve port clock
base|collector.yaml|s/serviceName: ncclscope-collector-hl/serviceName: nope/|serviceName nope
base|collector.yaml|0,/targetPort: http/s//targetPort: web/|is not a container port
base|collector.yaml|s/- {name: store, mountPath/- {name: stor, mountPath/|mounts undefined volume stor
base|training-job.yaml|s/path: \/run\/ncclscope, type: Directory}/path: \/run\/other, type: Directory}/|disagree on the run directory
base|training-job.yaml|s/mountPath: \/ncclscope}/mountPath: \/plugin}/|no init container of the plugin image
base|training-job.yaml|s/batch.kubernetes.io\/job-name/job-name/|JOB_NAME must come from
base|training-job.yaml|s/NCCLSCOPE_RUNDIR, value/NCCLSCOPE_RUN_DIR, value/|the plugin does not read NCCLSCOPE_RUN_DIR
base|namespace.yaml|s/name: ncclscope/name: [ncclscope/|not YAML
base|secret.yaml|/namespace: ncclscope/d|missing metadata.namespace
base|kustomization.yaml|s/agent.yaml/agents.yaml/|resource agents.yaml does not exist
overlay|collector-patch.yaml|s/"--ch-shards"/"--ch-shard"/|has no flag --ch-shard
overlay|collector-patch.yaml|s/?cluster=nsc"/?cluster=nsc2"/|cluster nsc2 is not in any remote_servers
overlay|collector-patch.yaml|s/ncclscope-clickhouse-1.ncclscope-clickhouse-hl.ncclscope.svc:8123"/ncclscope-clickhouse-2.ncclscope-clickhouse-hl.ncclscope.svc:8123"/|names no StatefulSet pod
overlay|collector-patch.yaml|s/ncclscope-clickhouse-1.ncclscope-clickhouse-hl.ncclscope.svc:8123"/ncclscope-clickhouse-1.ncclscope-clickhouse-hl.ncclscope.svc:9000"/|is not the pod's http port
overlay|collector-patch.yaml|/"--store", /d|replicas on LMDB stores
overlay|clickhouse.yaml|s/replicas: 2/replicas: 3/|3 ClickHouse pods, --ch-shards lists 2
overlay|clickhouse.yaml|s/<host>ncclscope-clickhouse-1.ncclscope-clickhouse-hl.ncclscope.svc</<host>ncclscope-clickhouse-0.ncclscope-clickhouse-hl.ncclscope.svc</|differ from --ch-shards
overlay|clickhouse.yaml|0,/<port>9000</s//<port>9440</|port 9440 is not the pod's native port
overlay|clickhouse.yaml|s/remote_servers>/remote-servers>/g|cluster nsc is not in any remote_servers
overlay|clickhouse.yaml|s/<\/shard>$/<\/shard/|is not XML
overlay|clickhouse.yaml|s/{name: http, containerPort: 8123}/{name: http, containerPort: 8124}/|is not a container port
overlay|agent-patch.yaml|s/dns+tcp:\/\/ncclscope-collector-hl/dns+tcp:\/\/ncclscope-collector/|is not the collectors' headless Service
overlay|agent-patch.yaml|s/-hl.ncclscope.svc:7760/-hl.ncclscope.svc:7769/|names no Service port
overlay|agent-patch.yaml|s/name: ncclscope-agent/name: ncclscope-agents/|patch target DaemonSet ncclscope-agents
overlay|kustomization.yaml|s/path: agent-patch.yaml/path: agent-patches.yaml/|patch agent-patches.yaml does not exist
EOF
echo "k8s: the manifests and the distributed overlay pass; $cases broken copies were each refused for the right reason"
