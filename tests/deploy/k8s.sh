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

# broken FILE SED_EXPR EXPECTED: a copy with one change must fail with EXPECTED.
broken() {
    rm -rf "$dir/m" && cp -r "$src/containers/k8s" "$dir/m"
    sed -i "$2" "$dir/m/$1"
    cmp -s "$src/containers/k8s/$1" "$dir/m/$1" && fail "the edit '$2' changed nothing in $1"
    local out
    out=$(check "$dir/m") && fail "a broken $1 ('$2') passes"
    grep -qF -- "$3" <<<"$out" || fail "broken $1 ('$2'): expected '$3', got: $out"
}
broken agent.yaml 's/svc:7760/svc:7769/' "names no Service port"
broken agent.yaml 's/NCCLSCOPE_SPOOL,/NCCLSCOPE_SPOOLDIR,/' "does not read NCCLSCOPE_SPOOLDIR"
broken agent.yaml 's/"--http", "0.0.0.0:7762"/"--http-addr", "0.0.0.0:7762"/' "has no flag --http-addr"
broken agent.yaml 's/hostPID: true/hostPID: false/' "hostPID must be true"
broken collector.yaml 's/containerPort: 7761/containerPort: 8080/' "docs/architecture.md says"
broken collector.yaml 's/"tcp:\/\/0.0.0.0:7760"/"tcp:\/\/127.0.0.1:7760"/' "does not serve port zmq"
broken collector.yaml 's/serviceName: ncclscope-collector-hl/serviceName: nope/' "serviceName nope"
broken collector.yaml '0,/targetPort: http/s//targetPort: web/' "is not a container port"
broken collector.yaml 's/- {name: store, mountPath/- {name: stor, mountPath/' "mounts undefined volume stor"
broken training-job.yaml 's/path: \/run\/ncclscope, type: Directory}/path: \/run\/other, type: Directory}/' "disagree on the run directory"
broken training-job.yaml 's/mountPath: \/ncclscope}/mountPath: \/plugin}/' "no init container of the plugin image"
broken training-job.yaml "s/batch.kubernetes.io\/job-name/job-name/" "JOB_NAME must come from"
broken training-job.yaml 's/NCCLSCOPE_RUNDIR, value/NCCLSCOPE_RUN_DIR, value/' "the plugin does not read NCCLSCOPE_RUN_DIR"
broken namespace.yaml 's/name: ncclscope/name: [ncclscope/' "not YAML"
broken secret.yaml '/namespace: ncclscope/d' "missing metadata.namespace"
broken kustomization.yaml 's/agent.yaml/agents.yaml/' "resource agents.yaml does not exist"

# The distributed overlay, built from a copy of containers/ (it includes ../k8s and
# ../grafana).
over=(--render)
if command -v kubectl >/dev/null; then
    kubectl kustomize "$src/containers/k8s-distributed" >"$dir/kubectl.yaml" || fail "kubectl kustomize refuses the overlay"
    over+=(--compare "$dir/kubectl.yaml")
else
    echo "k8s: kubectl not installed: the overlay's build is not compared with kustomize's"
fi
python3 "$here/check_k8s.py" "${over[@]}" "$src/containers/k8s-distributed" "$bin" "$src" ||
    fail "the distributed overlay does not pass"
overlay() {
    rm -rf "$dir/c" && mkdir "$dir/c" && cp -r "$src/containers/"{k8s,k8s-distributed,grafana} "$dir/c/"
    sed -i "$2" "$dir/c/k8s-distributed/$1"
    cmp -s "$src/containers/k8s-distributed/$1" "$dir/c/k8s-distributed/$1" && fail "the edit '$2' changed nothing in $1"
    local out
    out=$(python3 "$here/check_k8s.py" --render "$dir/c/k8s-distributed" "$bin" "$src") &&
        fail "a broken distributed $1 ('$2') passes"
    grep -qF -- "$3" <<<"$out" || fail "broken distributed $1 ('$2'): expected '$3', got: $out"
}
shard1=ncclscope-clickhouse-1.ncclscope-clickhouse-hl.ncclscope.svc
overlay collector-patch.yaml 's/"--ch-shards"/"--ch-shard"/' "has no flag --ch-shard"
overlay collector-patch.yaml 's/?cluster=nsc"/?cluster=nsc2"/' "cluster nsc2 is not in any remote_servers"
overlay collector-patch.yaml "s/$shard1:8123"/${shard1/-1./-2.}:8123"/" "names no StatefulSet pod"
overlay collector-patch.yaml "s/$shard1:8123"/$shard1:9000"/" "is not the pod's http port"
overlay collector-patch.yaml 's/replicas: 3/replicas: 4/' "not each of the 4 collector replicas once"
overlay collector-patch.yaml '/"--store", /d' "replicas on LMDB stores"
overlay clickhouse.yaml 's/replicas: 2/replicas: 3/' "3 ClickHouse pods, --ch-shards lists 2"
overlay clickhouse.yaml "s/<host>$shard1</<host>${shard1/-1./-0.}</" "differ from --ch-shards"
overlay clickhouse.yaml '0,/<port>9000</s//<port>9440</' "port 9440 is not the pod's native port"
overlay clickhouse.yaml 's/remote_servers>/remote-servers>/g' "cluster nsc is not in any remote_servers"
overlay clickhouse.yaml 's/<\/shard>$/<\/shard/' "is not XML"
overlay clickhouse.yaml 's/{name: http, containerPort: 8123}/{name: http, containerPort: 8124}/' "is not a container port"
overlay agent-patch.yaml 's/,tcp:\/\/ncclscope-collector-2[^"]*//' "not each of the 3 collector replicas once"
overlay agent-patch.yaml 's/ncclscope-agent "$@"/ncclscope-agent/' 'must be /bin/sh -c ending in exec'
overlay agent-patch.yaml 's/name: ncclscope-agent/name: ncclscope-agents/' "patch target DaemonSet ncclscope-agents"
overlay kustomization.yaml 's/path: agent-patch.yaml/path: agent-patches.yaml/' "patch agent-patches.yaml does not exist"
echo "k8s: the manifests and the distributed overlay pass; 16 + 16 broken copies were each refused for the right reason"
