"""workload.py: the GPU check's job, one process per GPU (started by torchrun).

check: torch.distributed with the NCCL backend runs AllReduce, AllGather,
ReduceScatter, Broadcast, Send/Recv (a ring; with one rank, to itself) and a
CUDA-graph-captured AllReduce; rank 0 writes what was run (--expect FILE) for
check_store.py.
bench: NCCL's own latency per operation, small messages and many iterations
(the feasibility study's method), one JSON line per operation (--out FILE):
the median over --blocks blocks of the mean per call, the slowest rank's.
More ranks than GPUs: each rank gets its own NCCL_HOSTID, so NCCL, which
refuses two ranks of one node on one GPU, takes every rank for a node of its
own and connects them through its network transport.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist


def p2p_ring(t, out):
    world, rank = dist.get_world_size(), dist.get_rank()
    ops = [dist.P2POp(dist.isend, t, (rank + 1) % world),
           dist.P2POp(dist.irecv, out, (rank - 1) % world)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()


def operations(n, dev):
    world = dist.get_world_size()
    x = torch.ones(n, device=dev)
    gathered = torch.empty(n * world, device=dev)
    scattered = torch.empty(n, device=dev)
    big = torch.ones(n * world, device=dev)
    recv = torch.empty(n, device=dev)
    ops = {
        "AllReduce": lambda: dist.all_reduce(x),
        "AllGather": lambda: dist.all_gather_into_tensor(gathered, x),
        "ReduceScatter": lambda: dist.reduce_scatter_tensor(scattered, big),
        "Broadcast": lambda: dist.broadcast(x, 0),
    }
    if world > 1:  # PyTorch refuses a send to the process's own rank
        ops["SendRecv"] = lambda: p2p_ring(x, recv)
    return ops


def graph_allreduce(n, dev, replays):
    """Capture one AllReduce in a CUDA graph and replay it."""
    x = torch.ones(n, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        dist.all_reduce(x)  # warm-up outside capture, as PyTorch requires
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dist.all_reduce(x)
    for _ in range(replays):
        g.replay()
    torch.cuda.synchronize()


def check(args, dev):
    ops = operations(args.count, dev)
    for name, fn in ops.items():
        for _ in range(args.iters):
            fn()
    torch.cuda.synchronize()
    graph_allreduce(args.count, dev, args.graph_replays)
    dist.barrier()
    if dist.get_rank() == 0:
        # AllReduce: the loop, the graph's warm-up and its capture.
        expect = {"ranks": dist.get_world_size(), "iters": args.iters,
                  "funcs": {"AllReduce": args.iters + 2, "AllGather": args.iters,
                            "ReduceScatter": args.iters, "Broadcast": args.iters},
                  "p2p": args.iters if "SendRecv" in ops else 0, "graph_captured": 1,
                  "nccl": ".".join(str(v) for v in torch.cuda.nccl.version()),
                  "torch": torch.__version__}
        with open(args.expect, "w") as f:
            json.dump(expect, f)


def bench(args, dev):
    ops = operations(args.count, dev)
    rows = []
    for name, fn in ops.items():
        for _ in range(args.warmup):
            fn()
        torch.cuda.synchronize()
        dist.barrier()
        per_block = max(1, args.iters // args.blocks)
        means = []
        for _ in range(args.blocks):
            t0 = time.perf_counter()
            for _ in range(per_block):
                fn()
            torch.cuda.synchronize()
            means.append((time.perf_counter() - t0) * 1e6 / per_block)
        worst = torch.tensor([statistics.median(means)], device=dev)
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        rows.append({"op": name, "us": worst.item(), "bytes": args.count * 4,
                     "iters": per_block * args.blocks, "blocks": args.blocks})
    if dist.get_rank() == 0:
        with open(args.out, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["check", "bench"])
    ap.add_argument("--count", type=int, default=1024, help="float32 elements per rank")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=20, help="bench: timed blocks, median reported")
    ap.add_argument("--graph-replays", type=int, default=5)
    ap.add_argument("--expect", default="expect.json")
    ap.add_argument("--out", default="bench.jsonl")
    args = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if int(os.environ.get("LOCAL_WORLD_SIZE", "1")) > torch.cuda.device_count():
        os.environ["NCCL_HOSTID"] = f"{socket.gethostname()}-rank{local}"
        local %= torch.cuda.device_count()
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    try:  # device_id (PyTorch 2.3+) makes the communicator now, not at the first call
        dist.init_process_group("nccl", device_id=dev)
    except TypeError:
        dist.init_process_group("nccl")
    try:
        (check if args.mode == "check" else bench)(args, dev)
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
