#!/usr/bin/env python3
"""check_k8s.py [--render [--compare FILE]] MANIFEST_DIR BIN_DIR SRC_DIR: offline
checks of the Kubernetes manifests in containers/k8s (or, with --render, of what the
kustomization in MANIFEST_DIR builds: containers/k8s-distributed; --compare FILE:
that build must equal FILE, `kubectl kustomize`'s) against Kubernetes' required fields, against each other
(selectors, ports, volumes, services, the shared run directory) and against the
programs (every flag and NCCLSCOPE_* variable set must be one the program reads:
`--help` of the agent and the collector, the plugin's sources; ports as in
docs/architecture.md; the distributed mode: collectors, ClickHouse shards and
remote_servers, agents' collector list agree). Prints one line per problem and
exits 1 if there is any."""
import glob, os, re, subprocess, sys
import yaml

import kustomize_lite
from check_distributed import check_distributed

PORTS = {"ncclscope-collector": {"zmq": 7760, "clock": 7760, "http": 7761}, "ncclscope-agent": {"http": 7762}}
REQUIRED = {  # kind -> dotted paths that must be present
    "Namespace": [],
    "Service": ["spec.ports", "spec.selector"],
    "StatefulSet": ["spec.serviceName", "spec.selector.matchLabels", "spec.template.spec.containers"],
    "DaemonSet": ["spec.selector.matchLabels", "spec.template.spec.containers"],
    "Job": ["spec.template.spec.containers", "spec.template.spec.restartPolicy"],
    "Secret": [],
    "ConfigMap": ["data"],
    "NetworkPolicy": ["spec.podSelector"],
    "Kustomization": ["resources"],
}
problems = []


def bad(where, msg):
    problems.append(f"{where}: {msg}")


def get(obj, path):
    for part in path.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def program_options(bin_dir, prog):
    """(flags, env names) a program documents in --help."""
    out = subprocess.run([os.path.join(bin_dir, prog), "--help"], capture_output=True, text=True, timeout=10)
    text = out.stdout + out.stderr
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", text)), set(re.findall(r"\b(NCCLSCOPE_[A-Z0-9_]+)", text))


def plugin_env(src_dir):
    """Environment variables the plugin reads: getenv/env("...") calls in plugin/."""
    names = set()
    for path in glob.glob(os.path.join(src_dir, "plugin", "*.c")):
        with open(path) as f:
            names |= set(re.findall(r'\b(?:getenv|env)\("([A-Z0-9_]+)"\)', f.read()))
    return names


def load(manifest_dir):
    docs = []
    for path in sorted(glob.glob(os.path.join(manifest_dir, "*.yaml"))):
        with open(path) as f:
            try:
                for doc in yaml.safe_load_all(f):
                    if doc is not None:
                        docs.append((os.path.basename(path), doc))
            except yaml.YAMLError as e:
                bad(os.path.basename(path), f"not YAML: {e}".replace("\n", " "))
    return docs


def check_basics(where, doc):
    kind = doc.get("kind")
    if kind not in REQUIRED:
        return bad(where, f"unexpected kind {kind!r}")
    if kind != "Kustomization":
        for f in ("apiVersion", "metadata.name"):
            if get(doc, f) is None:
                bad(where, f"missing {f}")
        if kind not in ("Namespace",) and get(doc, "metadata.namespace") is None:
            bad(where, "missing metadata.namespace")
    for f in REQUIRED[kind]:
        if get(doc, f) is None:
            bad(where, f"missing {f}")


def env_value(container, name):
    for e in container.get("env", []):
        if e.get("name") == name:
            return e.get("value"), e.get("valueFrom")
    return None, None


def check_pod(where, doc, progs, plugin_names, services):
    spec = get(doc, "spec.template.spec") or {}
    labels = get(doc, "spec.template.metadata.labels") or {}
    for k, v in (get(doc, "spec.selector.matchLabels") or {}).items():
        if labels.get(k) != v:
            bad(where, f"selector {k}={v} does not match the pod template's labels")
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    volumes.update({get(v, "metadata.name"): v for v in get(doc, "spec.volumeClaimTemplates") or []})
    used = set()
    for c in spec.get("initContainers", []) + spec.get("containers", []):
        cw = f"{where} container {c.get('name')}"
        if not c.get("name") or not c.get("image"):
            bad(cw, "needs a name and an image")
            continue
        for m in c.get("volumeMounts", []):
            used.add(m["name"])
            if m["name"] not in volumes:
                bad(cw, f"mounts undefined volume {m['name']}")
        ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
        for probe in ("readinessProbe", "livenessProbe"):
            port = get(c, f"{probe}.httpGet.port")
            if port is not None and port not in ports and port not in ports.values():
                bad(cw, f"{probe} uses port {port} the container does not declare")
        image = c["image"].split("/")[-1].split(":")[0]
        if image in progs:
            check_program(cw, c, image, progs[image], ports, services)
        if env_value(c, "NCCL_PROFILER_PLUGIN")[0] is not None:
            check_training(cw, c, spec, volumes, plugin_names)
    for name in volumes:
        if name not in used:
            bad(where, f"volume {name} is mounted by no container")
    return spec


def check_program(cw, c, image, opts, ports, services):
    flags, envs = opts
    for a in c.get("args", []):
        if a.startswith("--") and a not in flags:
            bad(cw, f"{image} has no flag {a}")
    for e in c.get("env", []):
        if e["name"].startswith("NCCLSCOPE_") and e["name"] not in envs:
            bad(cw, f"{image} does not read {e['name']}")
    if ports != PORTS[image]:
        bad(cw, f"ports {ports}, docs/architecture.md says {PORTS[image]}")
    args = c.get("args", [])
    served = {"--listen": ("zmq", r"tcp://0\.0\.0\.0:(\d+)$"), "--clock-udp": ("clock", r"0\.0\.0\.0:(\d+)$"),
              "--http": ("http", r"0\.0\.0\.0:(\d+)$")}
    for flag, (name, want) in served.items():
        if flag in args:
            m = re.match(want, args[args.index(flag) + 1])
            if not m or int(m.group(1)) != ports.get(name):
                bad(cw, f"{flag} {args[args.index(flag) + 1]} does not serve port {name}={ports.get(name)} on all addresses")
    addr = env_value(c, "NCCLSCOPE_COLLECTOR_ADDR")[0]
    for entry in (addr or "").split(",") if addr is not None else []:
        m = re.match(r"(?:dns\+)?tcp://([a-z0-9.-]+)\.([a-z0-9-]+)\.svc:(\d+)$", entry)
        if not m or (m.group(1), m.group(2)) not in services or \
                int(m.group(3)) not in services[(m.group(1), m.group(2))]:
            bad(cw, f"NCCLSCOPE_COLLECTOR_ADDR entry {entry} names no Service port of these manifests")


def check_training(cw, c, spec, volumes, plugin_names):
    for e in c.get("env", []):
        if e["name"].startswith("NCCLSCOPE_") and e["name"] not in plugin_names:
            bad(cw, f"the plugin does not read {e['name']}")
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    plugin = env_value(c, "NCCL_PROFILER_PLUGIN")[0]
    pdir = os.path.dirname(plugin)
    vol = mounts.get(pdir)
    inits = [i for i in spec.get("initContainers", []) if "ncclscope-plugin" in i.get("image", "")]
    if not vol or not inits or not any(m["name"] == vol and m["mountPath"] == "/ncclscope"
                                       for i in inits for m in i.get("volumeMounts", [])):
        bad(cw, f"{plugin}: no init container of the plugin image fills {pdir} (its image copies into /ncclscope)")
    rundir = env_value(c, "NCCLSCOPE_RUNDIR")[0]
    if rundir not in mounts or "hostPath" not in volumes.get(mounts[rundir], {}):
        bad(cw, f"NCCLSCOPE_RUNDIR {rundir} is not a hostPath mount")
    job = env_value(c, "JOB_NAME")[1]
    if "JOB_NAME" not in plugin_names or get(job or {}, "fieldRef.fieldPath") != \
            "metadata.labels['batch.kubernetes.io/job-name']":
        bad(cw, "JOB_NAME must come from the batch.kubernetes.io/job-name label (and the plugin read it)")


def shared_rundir(where, pods):
    """The agent's rundir hostPath, env and mount must be those of every training pod."""
    seen = set()
    for w, spec in pods:
        for c in spec.get("containers", []):
            rundir = env_value(c, "NCCLSCOPE_RUNDIR")[0]
            if rundir is None:
                continue
            mount = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}.get(rundir)
            vol = {v["name"]: v for v in spec.get("volumes", [])}.get(mount, {})
            seen.add((rundir, get(vol, "hostPath.path")))
            if not spec.get("hostPID"):
                bad(w, "hostPID must be true: the agent watches the ranks' pids")
    if len(seen) != 1:
        bad(where, f"agent and training pods disagree on the run directory: {sorted(seen, key=str)}")


def check_service(where, doc, docs):
    """A Service selects a pod whose containers declare every targetPort it names."""
    sel = get(doc, "spec.selector") or {}
    for _, d in docs:
        labels = get(d, "spec.template.metadata.labels") or {}
        if d.get("kind") in ("StatefulSet", "DaemonSet") and all(labels.get(k) == v for k, v in sel.items()):
            declared = {(p.get("name"), p.get("containerPort")) for c in get(d, "spec.template.spec.containers")
                        for p in c.get("ports", [])}
            for p in get(doc, "spec.ports") or []:
                if (p.get("targetPort"), p.get("port")) not in declared:
                    bad(where, f"Service port {p.get('port')} -> {p.get('targetPort')} is not a container port of the pods")
            return
    bad(where, f"Service {get(doc, 'metadata.name')} selects no pod")


def pod_names(docs):
    """(pod.service, namespace) -> ports of each StatefulSet pod's stable DNS name."""
    names = {}
    for _, d in docs:
        if d.get("kind") == "StatefulSet":
            ports = {p.get("containerPort") for c in get(d, "spec.template.spec.containers") or []
                     for p in c.get("ports", [])}
            for i in range(get(d, "spec.replicas") or 1):
                names[(f"{get(d, 'metadata.name')}-{i}.{get(d, 'spec.serviceName')}",
                       get(d, "metadata.namespace"))] = ports
    return names


def main():
    args = sys.argv[1:]
    render = args[0] == "--render"
    compare = None
    if render:
        args = args[1:]
        if args[0] == "--compare":
            compare, args = args[1], args[2:]
    manifest_dir, bin_dir, src_dir = args[:3]
    progs = {p: program_options(bin_dir, p) for p in PORTS}
    plugin_names = plugin_env(src_dir)
    if render:
        docs = kustomize_lite.build(manifest_dir, bad)
        if compare:
            kustomize_lite.compare(docs, compare, bad)
    else:
        docs = load(manifest_dir)
    services = {}
    for where, doc in docs:
        check_basics(where, doc)
        if doc.get("kind") == "Service":
            key = (get(doc, "metadata.name"), get(doc, "metadata.namespace"))
            services[key] = {p.get("port") for p in get(doc, "spec.ports") or []}
    services.update(pod_names(docs))
    pods = []
    names = {(d.get("kind"), get(d, "metadata.name")) for _, d in docs}
    for where, doc in docs:
        kind = doc.get("kind")
        if kind == "StatefulSet" and ("Service", doc["spec"].get("serviceName")) not in names:
            bad(where, f"serviceName {doc['spec'].get('serviceName')} is no Service here")
        if kind in ("StatefulSet", "DaemonSet", "Job"):
            pods.append((where, check_pod(f"{where} {kind} {get(doc, 'metadata.name')}", doc, progs,
                                          plugin_names, services)))
        if kind == "Kustomization" and not render:
            for r in doc["resources"]:
                if not os.path.exists(os.path.join(manifest_dir, r)):
                    bad(where, f"resource {r} does not exist")
    shared_rundir(manifest_dir, pods)
    for where, doc in docs:
        if doc.get("kind") == "Service":
            check_service(where, doc, docs)
    check_distributed(docs, get, bad)
    for p in problems:
        print(p)
    print(f"check_k8s: {len(docs)} objects, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
