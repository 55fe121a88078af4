#!/usr/bin/env python3
"""check_dashboard.py: the Grafana dashboard's queries against what ncclscope exports.

  check_dashboard.py names DASHBOARD METRICS_FILE...
      every metric a query names (panel targets and label_values() variables)
      is a sample name or a declared family in one of the scraped /metrics
      files, and the layout is
      one Grafana can load (unique panel ids, panels that do not overlap on
      its 24-column grid, every $variable used is defined); prints one line
      per problem, then "names: N queries, M metrics", exits 1 on any problem.
  check_dashboard.py query DASHBOARD PROMETHEUS_URL
      every panel query, with the dashboard's variables matching everything,
      is valid PromQL for a real Prometheus and returns at least one series.
"""
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan"}
# Grafana's variables, as the test runs the queries: every value, a wide window.
SUBSTITUTE = [("$__rate_interval", "5m"), ("$__interval", "1m"), ("$__range", "5m")]


def panels(dash):
    for p in dash.get("panels", []):
        yield p
        yield from p.get("panels", [])  # collapsed rows hold their panels


def queries(dash):
    """(where, expr) of every panel target."""
    for p in panels(dash):
        for t in p.get("targets", []):
            if t.get("expr"):
                yield f"panel {p.get('title')!r} ref {t.get('refId')}", t["expr"]


def variable_queries(dash):
    """(where, metric selector) of every label_values(SELECTOR, LABEL) variable."""
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else q or ""
        m = re.fullmatch(r"\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*", q)
        if not m:
            raise SystemExit(f"variable {v.get('name')}: not label_values(SELECTOR, LABEL): {q!r}")
        yield f"variable {v.get('name')}", m.group(1)


def metric_names(expr):
    """The metric names a PromQL expression selects (functions, keywords, label
    names in matchers and grouping clauses, durations, offset and @ modifiers
    and numbers left out)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\boffset\s+-?[0-9a-zA-Z]+|@\s*[-+.0-9a-z()]+", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"(?<![A-Za-z0-9_:])\d+(\.\d+)?([eE][-+]?\d+)?", " ", e)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        rest = e[m.end():].lstrip()
        if m.group(0).lower() in KEYWORDS or rest.startswith("("):
            continue
        names.add(m.group(0))
    return names


def exported(paths):
    """Sample names, and families declared by a TYPE line (a family such as
    ncclscope_link_slow_jobs has no sample until its first slow link)."""
    names = set()
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.startswith("# TYPE "):
                    names.add(line.split()[2])
                elif line.strip() and not line.startswith("#"):
                    names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return names


def layout_problems(dash):
    problems, ids, cells = [], set(), {}
    defined = {v["name"] for v in dash.get("templating", {}).get("list", [])}
    for p in panels(dash):
        where = f"panel {p.get('title')!r}"
        if p.get("id") in ids:
            problems.append(f"{where}: id {p.get('id')} used twice")
        ids.add(p.get("id"))
        g = p.get("gridPos", {})
        if g.get("x", 0) + g.get("w", 0) > 24 or not g.get("w") or not g.get("h"):
            problems.append(f"{where}: gridPos {g} does not fit the 24-column grid")
        for x in range(g.get("x", 0), g.get("x", 0) + g.get("w", 0)):
            for y in range(g.get("y", 0), g.get("y", 0) + g.get("h", 0)):
                if (x, y) in cells:
                    problems.append(f"{where}: overlaps panel {cells[(x, y)]!r} at ({x}, {y})")
                    break
                cells[(x, y)] = p.get("title")
            else:
                continue
            break
        for use in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", json.dumps(p)):
            if not use.startswith("__") and use not in defined:
                problems.append(f"{where}: variable ${use} is not defined")
    return problems


def check_names(dash, metric_files):
    have = exported(metric_files)
    problems, used, n = layout_problems(dash), set(), 0
    for where, expr in list(queries(dash)) + list(variable_queries(dash)):
        n += 1
        names = metric_names(expr)
        if not names:
            problems.append(f"{where}: names no metric: {expr}")
        for name in sorted(names - have):
            problems.append(f"{where}: {name} is not exported (query: {expr})")
        used |= names
    for p in problems:
        print(p)
    print(f"names: {n} queries, {len(used)} metrics")
    return 1 if problems else 0


def substitute(expr, dash):
    for var, value in SUBSTITUTE:
        expr = expr.replace(var, value)
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            expr = re.sub(r"\$\{?" + re.escape(v["name"]) + r"\b\}?", ".*", expr)
    return expr


def ask(url, q):
    data = urllib.parse.urlencode({"query": q}).encode()
    try:
        with urllib.request.urlopen(url + "/api/v1/query", data, timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


def check_queries(dash, url):
    problems, n = [], 0
    for where, expr in queries(dash):
        n += 1
        q = substitute(expr, dash)
        res = ask(url, q)
        # A scrape that timed out on a loaded machine leaves the target's
        # series stale until the next one (200 ms to 1 s): ask again.
        for _ in range(10):
            if res.get("status") != "success" or res["data"]["result"]:
                break
            time.sleep(0.5)
            res = ask(url, q)
        if res.get("status") != "success":
            problems.append(f"{where}: {res.get('errorType')}: {res.get('error')} (query: {q})")
        elif not res["data"]["result"]:
            problems.append(f"{where}: no series (query: {q})")
    for p in problems:
        print(p)
    print(f"query: {n} queries answered by Prometheus, {len(problems)} problems")
    return 1 if problems else 0


def main():
    mode, path = sys.argv[1:3]
    with open(path) as f:
        dash = json.load(f)
    if mode == "names":
        return check_names(dash, sys.argv[3:])
    if mode == "query":
        return check_queries(dash, sys.argv[3])
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
