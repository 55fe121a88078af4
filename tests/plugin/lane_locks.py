#!/usr/bin/env python3
"""lane_locks.py: locked instructions the plugin runs per start, state and
stop of a Coll (issue 35: no atomics that a single-writer design does not
need; docs/plugin-internals.md, "Hot path").

    lane_locks.py BIN_DIR PLUGIN API MAX

Runs `ncclscope-emu --bench` (a Coll's startEvent, recordEventState and
stopEvent, repeated) with a test receiver on the socket under callgrind with
per-instruction counts, finds the plugin's lock-prefixed instructions with
objdump, and sums how often the bench thread ran them. A count, not a time:
the same on a loaded machine. Fails when a triple takes more than MAX.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

ITERS = 3000


def lock_addresses(plugin):
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", plugin], check=True,
                         capture_output=True, text=True).stdout
    return {int(m.group(1), 16) for m in re.finditer(r"^ *([0-9a-f]+):\s+lock ", dis, re.M)}


def name_tables(paths):
    """ob= and fn= names by their (id): callgrind names each once, in
    whichever thread's profile first met it."""
    tables = {"ob": {}, "fn": {}}
    for path in paths:
        with open(path) as f:
            for line in f:
                m = re.match(r"c?(ob|fn)=\((\d+)\) (.*)$", line.rstrip("\n"))
                if m:
                    tables[m.group(1)][m.group(2)] = m.group(3)
    return tables


def named(line, table):
    m = re.match(r"c?(?:ob|fn)=\((\d+)\)", line)
    return table.get(m.group(1), "") if m else line.split("=", 1)[1].strip()


def locked_runs(path, tables, plugin_name, locks):
    """(locked instructions run in the plugin, is this the bench thread)."""
    ob, addr, skip, n, bench = "", 0, False, 0, False
    with open(path) as f:
        for line in f:
            if line.startswith("ob="):
                ob = named(line, tables["ob"])
            elif line.startswith(("fn=", "cfn=")):
                bench |= named(line, tables["fn"]) == "bench_main"
            elif line.startswith("calls="):
                skip = True  # the next cost line is the call's, inclusive
            elif line[:1] and line[:1] in "0123456789+-*":
                pos, *rest = line.split()
                if pos.startswith("0x"):
                    addr = int(pos, 16)
                elif pos[0] in "+-":
                    addr += int(pos)
                if skip:
                    skip = False
                elif ob.endswith(plugin_name) and addr in locks and rest:
                    n += int(rest[-1])
    return n, bench


def main():
    bindir, plugin, api, most = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    locks = lock_addresses(plugin)
    with tempfile.TemporaryDirectory() as d:
        ep = "ipc://%s/recv.sock" % d
        recv = subprocess.Popen([os.path.join(bindir, "ncclscope-test-receiver"), ep,
                                 os.path.join(d, "recv.json"), "--ready",
                                 os.path.join(d, "ready")], stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(os.path.join(d, "ready")):
                if time.monotonic() > deadline or recv.poll() is not None:
                    sys.exit("lane_locks: the receiver did not start")
                time.sleep(0.05)
            subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                            "--dump-instr=yes", "--callgrind-out-file=%s/cg.%%p" % d,
                            os.path.join(bindir, "ncclscope-emu"), "--plugin", plugin, "--bench",
                            "--api", api, "--bench-iters", str(ITERS), "--reps", "1"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=dict(os.environ, NCCLSCOPE_ENDPOINT=ep), timeout=300)
        finally:
            recv.terminate()
            recv.wait(timeout=30)
        paths = [os.path.join(d, f) for f in os.listdir(d) if f.startswith("cg.") and "-" in f]
        tables = name_tables(paths)
        runs = [locked_runs(p, tables, os.path.basename(plugin), locks) for p in paths]
    bench = [n for n, is_bench in runs if is_bench]
    if len(bench) != 1:
        sys.exit("lane_locks: %d bench threads in the profiles" % len(bench))
    per = bench[0] / ITERS
    print("api v%s: %.2f locked instructions per start, state and stop of a Coll (at most %g)"
          % (api, per, most))
    sys.exit(0 if per <= most else 1)


if __name__ == "__main__":
    main()
