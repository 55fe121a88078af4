#!/bin/bash
# k8s.sh SRC_DIR BIN_DIR: the Kubernetes manifests pass check_k8s.py, and the checker
# catches each kind of mistake in a broken copy (so a pass means something).
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
echo "k8s: the manifests pass; 16 broken copies were each refused for the right reason"
