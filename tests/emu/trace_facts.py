"""trace_facts.py: what real NCCL's profiler calls showed, checked in a call log.

  trace_facts.py LOG.jsonl...

LOG: the record plugin's lines (scripts/emu/plugins/record.c), one file per
process: a real job's (tests/data/nccl-traces/gpu-check-2rank-*, NCCL 2.28.9
on a GPU) or the emulator's. Every fact below held in the real logs; the
emulator's must show them too. Prints one line per fact and file; exit 0
when all hold, 1 otherwise.

- every stop and state names a handle started before in that process;
- a Coll or P2p names a CollApi or P2pApi started before as its parent;
- an eager Coll starts on its CollApi's thread; a graph replay's Coll (its
  parent captured) on another one, CUDA's callback thread, under a Group
  with no parent;
- a captured GroupApi has one KernelLaunch and no Group or Coll inside it;
- a Coll's or P2p's ProxyOps and KernelChs start on one thread, not its own;
- Coll seqNumbers count up by one per function, from 0, in start order;
- a KernelCh gets one KernelChStop; a ProxyCtrl one of Idle, Active,
  Sleep then Wakeup, Append then AppendEnd;
- a ProxyStep's states: SendGPUWait, SendPeerWait, SendWait, or RecvWait,
  RecvFlushWait, RecvGPUWait, in that order, each once.
"""
import json
import sys

SEND = ["ProxyStepSendGPUWait", "ProxyStepSendPeerWait", "ProxyStepSendWait"]
RECV = ["ProxyStepRecvWait", "ProxyStepRecvFlushWait", "ProxyStepRecvGPUWait"]
CTRL = [["ProxyCtrlIdle"], ["ProxyCtrlActive"], ["ProxyCtrlSleep", "ProxyCtrlWakeup"],
        ["ProxyCtrlAppend", "ProxyCtrlAppendEnd"]]


def load(path):
    """Events by handle, in start order, each with its states and stop."""
    events, order, unknown = {}, [], []
    for line in open(path):
        d = json.loads(line)
        call = d["call"]
        if call == "start":
            d["states"], d["stopped"] = [], False
            events[d["handle"]] = d
            order.append(d)
        elif call in ("stop", "state"):
            e = events.get(d["handle"])
            if e is None:
                unknown.append(d)
            elif call == "stop":
                e["stopped"] = True
            else:
                e["states"].append(d["name"])
    return events, order, unknown


def facts(path):
    events, order, unknown = load(path)
    out = [("stops and states name started events", not unknown, f"{len(unknown)} unknown")]
    colls = [e for e in order if e["type"] in ("Coll", "P2p")]
    apis = {e["handle"]: e for e in order if e["type"] in ("CollApi", "P2pApi")}
    orphans = [e for e in colls if e["parent"] not in apis or apis[e["parent"]]["ts"] > e["ts"]]
    out.append(("Coll and P2p name an API call before them", colls and not orphans,
                f"{len(orphans)} of {len(colls)}"))
    eager = [e for e in colls if e["parent"] in apis and not apis[e["parent"]]["graphCaptured"]]
    replays = [e for e in colls if e["parent"] in apis and apis[e["parent"]]["graphCaptured"]]
    off = [e for e in eager if e["tid"] != apis[e["parent"]]["tid"]]
    out.append(("an eager Coll starts on its API call's thread", not off, f"{len(off)} of {len(eager)}"))
    groups = {e["handle"]: e for e in order if e["type"] == "Group"}
    bad = [e for e in replays if e["tid"] == apis[e["parent"]]["tid"] or
           groups.get(e.get("parentGroup"), {}).get("parent", "(nil)") != "(nil)"]
    out.append(("a replay's Coll starts on another thread", not bad, f"{len(bad)} of {len(replays)}"))
    out.append(captures(order))
    out.append(children_thread(order, events))
    out.append(seq_numbers(colls))
    kch = [e for e in order if e["type"] == "KernelCh" and e["stopped"]]
    bad = [e for e in kch if e["states"] != ["KernelChStop"]]
    out.append(("a KernelCh gets one KernelChStop", kch and not bad, f"{len(bad)} of {len(kch)}"))
    ctrl = [e for e in order if e["type"] == "ProxyCtrl" and e["stopped"]]
    bad = [e for e in ctrl if e["states"] not in CTRL]
    out.append(("a ProxyCtrl's states", ctrl and not bad, f"{len(bad)} of {len(ctrl)}"))
    steps = [e for e in order if e["type"] == "ProxyStep" and e["stopped"]]
    bad = [e for e in steps if e["states"] not in (SEND, RECV)]
    out.append(("a ProxyStep's states", steps and not bad, f"{len(bad)} of {len(steps)}"))
    return out


def captures(order):
    """Per captured GroupApi on its thread: its KernelLaunches, Groups, Colls."""
    bad, n, open_ = 0, 0, {}
    for e in order:
        if e["type"] == "GroupApi" and e["graphCaptured"]:
            open_[e["tid"]] = {"launch": 0, "other": 0}
            n += 1
        elif e["tid"] in open_ and e["type"] == "KernelLaunch":
            open_[e["tid"]]["launch"] += 1
        elif e["tid"] in open_ and e["type"] in ("Group", "Coll"):
            open_[e["tid"]]["other"] += 1
        elif e["tid"] in open_ and e["type"] == "GroupApi":
            c = open_.pop(e["tid"])
            bad += c["launch"] != 1 or c["other"] != 0
    bad += sum(c["launch"] != 1 or c["other"] != 0 for c in open_.values())
    return ("a captured GroupApi launches once, no task inside", not bad, f"{bad} of {n}")


def children_thread(order, events):
    tids = {}
    for e in order:
        if e["type"] in ("ProxyOp", "KernelCh") and e["parent"] in events:
            tids.setdefault(e["parent"], set()).add(e["tid"])
    bad = [h for h, t in tids.items() if len(t) != 1 or events[h]["tid"] in t]
    return ("ProxyOps and KernelChs start on one thread, not the Coll's", tids and not bad,
            f"{len(bad)} of {len(tids)}")


def seq_numbers(colls):
    nxt, bad, n = {}, 0, 0
    for e in colls:
        if e["type"] != "Coll":
            continue
        n += 1
        bad += e["seqNumber"] != nxt.get(e["func"], 0)
        nxt[e["func"]] = e["seqNumber"] + 1
    return ("Coll seqNumbers count up by one per function", not bad, f"{bad} of {n}")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    ok = True
    for path in argv[1:]:
        for name, good, detail in facts(path):
            ok &= bool(good)
            print(f"{'ok  ' if good else 'FAIL'} {path.rsplit('/', 1)[-1]}: {name} ({detail})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
