"""check_distributed.py: the distributed mode's cross-object checks for check_k8s.py.
The collectors' --store and --ch-shards, the ClickHouse StatefulSet and the
remote_servers cluster in its ConfigMap, and the agents' collector list must agree:
every shard a pod of these manifests on its HTTP port, the cluster defined with the
same hosts in the same order on their native port, one shard per ClickHouse pod,
the agents listing every collector replica once, and several collectors only with
the ClickHouse store (docs/clickhouse.md, docs/kubernetes.md)."""
import re
import xml.etree.ElementTree as ET

POD = r"([a-z0-9-]+)-(\d+)\.([a-z0-9-]+)\.([a-z0-9-]+)\.svc"


def arg(args, flag):
    return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else None


def workloads(docs, get, kind):
    return [d for _, d in docs if d.get("kind") == kind]


def find_pod(sets, get, host):
    """(StatefulSet, container ports by name) of a stable pod name, or None."""
    m = re.fullmatch(POD, host)
    for s in sets if m else []:
        if (get(s, "metadata.name"), get(s, "spec.serviceName"), get(s, "metadata.namespace")) == \
                (m.group(1), m.group(3), m.group(4)) and int(m.group(2)) < (get(s, "spec.replicas") or 1):
            ports = {p.get("name"): p.get("containerPort")
                     for c in get(s, "spec.template.spec.containers") or [] for p in c.get("ports", [])}
            return s, ports
    return None


def clusters(docs, get, bad):
    """cluster name -> [(host, port)] of its shards' first replicas, from ConfigMaps' XML."""
    out = {}
    for _, d in docs:
        for key, text in (get(d, "data") or {}).items() if d.get("kind") == "ConfigMap" else []:
            if not key.endswith(".xml"):
                continue
            try:
                root = ET.fromstring(text)
            except ET.ParseError as e:
                bad(f"ConfigMap {get(d, 'metadata.name')}", f"{key} is not XML: {e}")
                continue
            for cluster in root.findall("remote_servers/*"):
                out[cluster.tag] = [(r.findtext("host"), int(r.findtext("port") or 0))
                                    for r in (s.find("replica") for s in cluster.findall("shard")) if r is not None]
    return out


def check_store(where, args, sets, defined, get, bad):
    """The collector's ClickHouse URL and shards against the manifests; the shard count."""
    m = re.fullmatch(r"clickhouse://([^:/]+):(\d+)/(\w+)(?:\?cluster=(\w+))?", arg(args, "--store") or "")
    if not m:
        return bad(where, f"--store {arg(args, '--store')} is not clickhouse://HOST:PORT/DB[?cluster=NAME]")
    shards = [s.rsplit(":", 1) for s in (arg(args, "--ch-shards") or "").split(",") if s]
    chset = None
    for host, port in [(m.group(1), m.group(2))] + shards:
        found = find_pod(sets, get, host)
        if not found:
            bad(where, f"ClickHouse host {host} names no StatefulSet pod of these manifests")
        elif int(port) != found[1].get("http"):
            bad(where, f"{host}:{port} is not the pod's http port {found[1].get('http')}")
        else:
            chset = found[0]
    if chset is not None and len(shards) != (get(chset, "spec.replicas") or 1):
        bad(where, f"{get(chset, 'spec.replicas')} ClickHouse pods, --ch-shards lists {len(shards)}")
    if m.group(4) is None:
        return
    if m.group(4) not in defined:
        return bad(where, f"cluster {m.group(4)} is not in any remote_servers of these manifests")
    native = {h: p for h, p in defined[m.group(4)]}
    if [h for h, _ in defined[m.group(4)]] != [h for h, _ in shards]:
        bad(where, f"remote_servers {m.group(4)} shards {list(native)} differ from --ch-shards (same hosts, same order)")
    for h, p in native.items():
        found = find_pod(sets, get, h or "")
        if found and p != found[1].get("native"):
            bad(where, f"remote_servers {m.group(4)}: {h} port {p} is not the pod's native port")


def check_headless_name(where, addr, docs, get, bad, collector):
    """A dns+tcp:// entry names the collectors' headless Service: every ready replica's address."""
    name = get(collector, "spec.serviceName")
    m = re.match(r"dns\+tcp://([a-z0-9-]+)\.[a-z0-9-]+\.svc:\d+$", addr)
    svc = next((d for _, d in docs if d.get("kind") == "Service" and get(d, "metadata.name") == name), {})
    if not m or m.group(1) != name or get(svc, "spec.clusterIP") != "None":
        bad(where, f"NCCLSCOPE_COLLECTOR_ADDR {addr} is not the collectors' headless Service {name} (clusterIP: None)")


def check_agents(docs, get, bad, collector):
    """The agents name the collectors' headless Service (dns+tcp://) or list every
    collector replica once; a wrapper keeps the agent's args."""
    replicas = get(collector, "spec.replicas") or 1
    want = {f"{get(collector, 'metadata.name')}-{i}.{get(collector, 'spec.serviceName')}" for i in range(replicas)}
    for ds in workloads(docs, get, "DaemonSet"):
        for c in get(ds, "spec.template.spec.containers") or []:
            where = f"DaemonSet {get(ds, 'metadata.name')} container {c.get('name')}"
            addr = next((e.get("value") for e in c.get("env", []) if e.get("name") == "NCCLSCOPE_COLLECTOR_ADDR"), None)
            if addr is None:
                continue
            listed = [re.sub(r"^tcp://|\.[a-z0-9-]+\.svc:\d+$", "", e) for e in addr.split(",")]
            if addr.startswith("dns+tcp://"):
                check_headless_name(where, addr, docs, get, bad, collector)
            elif replicas > 1 and sorted(listed) != sorted(want):
                bad(where, f"NCCLSCOPE_COLLECTOR_ADDR lists {listed}, not each of the {replicas} collector replicas once")
            if replicas == 1 and len(listed) > 1:
                bad(where, "several collectors listed for one collector replica")
            script = (c.get("command") or [None, None, ""])[2:3]
            if c.get("command") and not (c["command"][:2] == ["/bin/sh", "-c"] and script
                                         and 'exec /usr/bin/ncclscope-agent "$@"' in script[0]):
                bad(where, 'its command must be /bin/sh -c ending in exec /usr/bin/ncclscope-agent "$@" (keeping args)')


def check_distributed(docs, get, bad):
    sets = workloads(docs, get, "StatefulSet")
    defined = clusters(docs, get, bad)
    for s in sets:
        for c in get(s, "spec.template.spec.containers") or []:
            if not c.get("image", "").split("/")[-1].startswith("ncclscope-collector:"):
                continue
            where = f"StatefulSet {get(s, 'metadata.name')} container {c.get('name')}"
            args = c.get("args", [])
            if "--store" in args:
                check_store(where, args, sets, defined, get, bad)
            elif (get(s, "spec.replicas") or 1) > 1:
                bad(where, f"{get(s, 'spec.replicas')} replicas on LMDB stores: several collectors need the ClickHouse store")
            check_agents(docs, get, bad, s)
    for _, d in docs:
        if d.get("kind") == "NetworkPolicy":
            sel = get(d, "spec.podSelector.matchLabels") or {}
            if not any(all((get(w, "spec.template.metadata.labels") or {}).get(k) == v for k, v in sel.items())
                       for w in sets + workloads(docs, get, "DaemonSet")):
                bad(f"NetworkPolicy {get(d, 'metadata.name')}", "selects no pod of these manifests")
