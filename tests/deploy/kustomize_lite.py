"""kustomize_lite.py: builds a kustomization offline, the subset ncclscope's
manifests use (resources: files and directories, configMapGenerator with files,
namespace, patches given by path as strategic merges), so check_k8s.py can check an
overlay where kubectl is not installed. Where it is, k8s.sh compares this build with
`kubectl kustomize` (compare below), so the subset cannot drift from kustomize."""
import os
import yaml

# List fields kustomize merges item by item (the Kubernetes patchMergeKey); every
# other list in a patch replaces the base's.
MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
              "volumeMounts": "mountPath", "ports": "containerPort"}


def load_file(path, bad):
    with open(path) as f:
        try:
            return [(os.path.basename(path), d) for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            bad(os.path.basename(path), f"not YAML: {e}".replace("\n", " "))
            return []


def merge(base, patch, field=None):
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = merge(base[k], v, k) if k in base else v
        return out
    key = MERGE_KEYS.get(field)
    if key and isinstance(base, list) and isinstance(patch, list):
        out = list(base)
        for item in patch:
            at = [i for i, b in enumerate(out) if b.get(key) == item.get(key)]
            if at:
                out[at[0]] = merge(out[at[0]], item)
            else:
                out.append(item)
        return out
    return patch


def generated(kdir, gen, bad):
    data = {}
    for f in gen.get("files", []):
        path = os.path.join(kdir, f)
        if not os.path.exists(path):
            bad(kdir, f"configMapGenerator file {f} does not exist")
            continue
        with open(path) as fh:
            data[os.path.basename(f)] = fh.read()
    meta = {"name": gen["name"]}
    for k in ("labels", "annotations"):
        if k in gen.get("options", {}):
            meta[k] = gen["options"][k]
    return ("configMapGenerator", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})


def build(kdir, bad):
    """The objects the kustomization in kdir produces, as (where, object) pairs."""
    kpath = os.path.join(kdir, "kustomization.yaml")
    if not os.path.exists(kpath):
        bad(kdir, "no kustomization.yaml")
        return []
    k = (load_file(kpath, bad) or [(None, {})])[0][1]
    docs = []
    for r in k.get("resources", []):
        path = os.path.normpath(os.path.join(kdir, r))
        if os.path.isdir(path):
            docs += build(path, bad)
        elif os.path.exists(path):
            docs += load_file(path, bad)
        else:
            bad(kpath, f"resource {r} does not exist")
    docs += [generated(kdir, g, bad) for g in k.get("configMapGenerator", [])]
    if "namespace" in k:
        for _, d in docs:
            d.setdefault("metadata", {})["namespace"] = k["namespace"]
    for p in k.get("patches", []):
        path = os.path.join(kdir, p.get("path", ""))
        if not os.path.isfile(path):
            bad(kpath, f"patch {p.get('path')} does not exist")
            continue
        for where, patch in load_file(path, bad):
            ident = (patch.get("kind"), patch.get("metadata", {}).get("name"))
            at = [i for i, (_, d) in enumerate(docs) if (d.get("kind"), d.get("metadata", {}).get("name")) == ident]
            if not at:
                bad(where, f"patch target {ident[0]} {ident[1]} is no object of {kdir}")
                continue
            docs[at[0]] = (f"{docs[at[0]][0]}+{where}", merge(docs[at[0]][1], patch))
    return docs


def normal(obj):
    """obj with named items in name order: kustomize puts a patch's items first."""
    if isinstance(obj, dict):
        return {k: normal(v) for k, v in obj.items()}
    if isinstance(obj, list):
        items = [normal(v) for v in obj]
        if items and all(isinstance(v, dict) and "name" in v for v in items):
            items.sort(key=lambda v: str(v["name"]))
        return items
    return obj


def compare(docs, rendered_file, bad):
    """Every object equals the one kustomize built, and there are as many."""
    with open(rendered_file) as f:
        theirs = {(d["kind"], d["metadata"]["name"]): normal(d) for d in yaml.safe_load_all(f) if d}
    ours = {(d["kind"], d["metadata"]["name"]): normal(d) for _, d in docs}
    for ident in sorted(set(ours) | set(theirs)):
        if ours.get(ident) != theirs.get(ident):
            bad("kustomize", f"{ident[0]} {ident[1]} differs from kubectl kustomize's build")
