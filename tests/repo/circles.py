#!/usr/bin/env python3
"""circles.py SRC_DIR [KNOWN]: no include circle between the project's files.

A unit is a .c file together with the .h of the same name in the same folder
(and its private x_int.h):
a unit depends on another when any of its files includes the other's header. A
header that several .c files share (no .c of its name) stands for the units
in its folder that define what it declares: including it makes a file depend on
those whose functions it calls. A circle (two or more units that reach each other) means neither can be read,
tested or moved without the other, so the check fails naming the files of each.

Quoted includes resolve as the compiler sees them here: next to the including
file first, then in the including program's folders (its top folder and their
subfolders), then in common/.

KNOWN lists the circles not yet broken, one a line (its files, space-separated
as printed; # comments): they are debt, not allowed. Any other circle fails, and
so does a listed one that is gone, so that the list only shrinks and stays
true. Exit 0 when the circles found are exactly those listed, 1 otherwise."""
import os
import re
import sys

ROOTS = ("common", "engine", "collector", "agent", "plugin", "cli", "scripts/emu")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A global function: declared anywhere in a header, defined at column 0 in a .c.
DECLARED = re.compile(r'\b(nsc_\w+)\s*\(')
DEFINED = re.compile(r'^(?!static\b)[A-Za-z].*?\b(nsc_\w+)\s*\([^;]*$', re.M)


def sources(src):
    """Every .c/.h under ROOTS, as paths relative to src."""
    found = []
    for root in ROOTS:
        for folder, _, names in os.walk(os.path.join(src, root)):
            for name in names:
                if name.endswith((".c", ".h")):
                    found.append(os.path.relpath(os.path.join(folder, name), src))
    return sorted(found)


def root_of(path):
    return next(r for r in ROOTS if path.startswith(r + "/"))


def resolve(path, name, headers):
    """The header `#include "name"` in path means, or None (system or generated)."""
    near = os.path.normpath(os.path.join(os.path.dirname(path), name))
    if near in headers:
        return near
    for root in (root_of(path), "common"):
        hits = sorted(h for h in headers
                      if h.startswith(root + "/") and (h == root + "/" + name or h.endswith("/" + name)))
        if hits:
            return hits[0]
    return None


def unit(path):
    """A private header (x_int.h) belongs to the unit of x.c."""
    stem = os.path.splitext(path)[0]
    return stem[:-4] if stem.endswith("_int") else stem


def owners(files, texts):
    """Header -> {unit: names}: its own unit (names None: any include counts),
    or, for a header several .c files share (no .c of its name), each unit in
    its folder that defines a function it declares, with those functions."""
    units = {unit(f) for f in files if f.endswith(".c")}
    defined = {}
    for f in files:
        if f.endswith(".c"):
            for name in DEFINED.findall(texts[f]):
                defined.setdefault((os.path.dirname(f), name), unit(f))
    out = {}
    for h in (f for f in files if f.endswith(".h")):
        if unit(h) in units:
            out[h] = {unit(h): None}
            continue
        folder = os.path.dirname(h)
        out[h] = {}
        for name in DECLARED.findall(texts[h]):
            if (folder, name) in defined:
                out[h].setdefault(defined[(folder, name)], set()).add(name)
    return out


def uses(text, names):
    return names is None or any(re.search(r"\b%s\b" % n, text) for n in names)


def reached(path, texts, headers):
    """Every header path's text pulls in, directly or through other headers."""
    seen, todo = set(), [path]
    while todo:
        f = todo.pop()
        for name in INCLUDE.findall(texts[f]):
            h = resolve(f, name, headers)
            if h is not None and h not in seen:
                seen.add(h)
                todo.append(h)
    return seen


def graph(src):
    files = sources(src)
    texts = {}
    for f in files:
        with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
            texts[f] = fh.read()
    headers = {f for f in files if f.endswith(".h")}
    stands_for = owners(files, texts)
    edges = {}
    members = {}
    for f in files:
        members.setdefault(unit(f), []).append(f)
        for h in reached(f, texts, headers):
            for u, names in stands_for[h].items():
                if u != unit(f) and uses(texts[f], names):
                    edges.setdefault(unit(f), set()).add(u)
    return edges, members


def circles(edges, nodes):
    """Strongly connected components of two or more units (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def known(path):
    if path is None:
        return set()
    with open(path, encoding="utf-8") as fh:
        return {line.strip() for line in fh if line.strip() and not line.startswith("#")}


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    edges, members = graph(sys.argv[1])
    found = {" ".join(f for u in comp for f in sorted(members[u]))
             for comp in circles(edges, members.keys())}
    listed = known(sys.argv[2] if len(sys.argv) == 3 else None)
    for line in sorted(found - listed):
        print("include circle: " + line)
    for line in sorted(listed - found):
        print("no longer a circle, remove it from the list: " + line)
    return 1 if found != listed else 0


if __name__ == "__main__":
    sys.exit(main())
