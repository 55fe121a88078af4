#!/usr/bin/env python3
"""hflood.py: hostile HTTP clients for the daemons' limit tests and benchmark
(raw sockets on loopback; every wait bounded).

  hflood.py big body|header|url HOST:PORT MIB
      one request whose body, one header or the URL is MIB MiB, sent until the
      server closes; prints "reply=STATUS|closed secs=S".
  hflood.py hold HOST:PORT N SECS [--request PATH] [--trickle] [--src ADDR]
      N connections held SECS: idle (default), sending a request for PATH and
      never reading (small receive buffer), or trickling a request's headers
      a byte every 0.2 s (slowloris). Prints "open=N closed=M" (M: closed by
      the server while held, as far as a client that does not read can tell).
  hflood.py health HOST:PORT SECS OUT [--src ADDR]
      GET /healthz every 50 ms for SECS; writes the slowest answer (s) to OUT;
      exits 1 if one failed or took 1 s.
"""
import argparse
import resource
import selectors
import socket
import sys
import time


def addr(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


def connect(target, src=None, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    if src:
        s.bind((src, 0))
    s.settimeout(10)
    s.connect(target)
    return s


def big(a):
    target = addr(a.target)
    n = a.mib << 20
    pad = b"a" * (1 << 16)
    if a.kind == "body":
        head, left = b"PUT /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % n, n
    elif a.kind == "header":
        head, left = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ", n
    else:
        head, left = b"GET /healthz?pad=", n
    s = connect(target)
    t0 = time.monotonic()
    reply = "closed"
    try:
        s.sendall(head)
        while left > 0:
            s.sendall(pad[: min(left, len(pad))])
            left -= len(pad)
        s.sendall(b"\r\n\r\n" if a.kind != "url" else b" HTTP/1.1\r\nHost: x\r\n\r\n")
    except OSError:
        pass
    try:
        line = s.recv(64).split(b"\r\n")[0].split()
        if len(line) > 1:
            reply = line[1].decode()
    except OSError:
        pass
    print("reply=%s secs=%.2f" % (reply, time.monotonic() - t0))


def hold(a):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, a.n + 64)), hard))
    target = addr(a.target)
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(a.n):
        try:
            s = connect(target, a.src, 4096 if a.request else None)
        except OSError:
            continue
        s.setblocking(False)
        if a.request:
            s.send(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % a.request.encode())
        socks.append(s)
        if not a.request:  # a client that reads nothing cannot see a close
            sel.register(s, selectors.EVENT_READ)
    trickle = b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 100000
    pos = {}
    closed = set()
    end = time.monotonic() + a.secs
    next_byte = time.monotonic()
    while time.monotonic() < end and len(closed) < len(socks):
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                if s.recv(65536) == b"":
                    raise OSError
            except BlockingIOError:
                continue
            except OSError:
                closed.add(s)
                sel.unregister(s)
        if a.trickle and time.monotonic() >= next_byte:
            next_byte += 0.2
            for s in socks:
                if s in closed:
                    continue
                i = pos.get(s, 0)
                try:
                    s.send(trickle[i : i + 1])
                    pos[s] = i + 1
                except OSError:
                    closed.add(s)
                    sel.unregister(s)
    print("open=%d closed=%d" % (len(socks), len(closed)))
    for s in socks:
        s.close()


def health(a):
    target = addr(a.target)
    worst, failed, why = 0.0, 0, []
    start = time.monotonic()
    end = start + a.secs
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            s = connect(target, a.src)
            s.settimeout(1)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            head = s.recv(64)
            s.close()
            error = None if head.startswith(b"HTTP/1.1 200") else "answered %r" % head[:20]
        except OSError as e:
            error = str(e)
        took = time.monotonic() - t0
        worst = max(worst, took)
        if error:
            failed += 1
            why.append("poll at %.3f s: %s" % (t0 - start, error))
        time.sleep(0.05)
    with open(a.out, "w") as f:
        f.write("%.4f\n" % worst)
        f.writelines(w + "\n" for w in why[:5])
    sys.exit(1 if failed or worst >= 1 else 0)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("big")
    b.add_argument("kind", choices=["body", "header", "url"])
    b.add_argument("target")
    b.add_argument("mib", type=int)
    h = sub.add_parser("hold")
    h.add_argument("target")
    h.add_argument("n", type=int)
    h.add_argument("secs", type=float)
    h.add_argument("--request")
    h.add_argument("--trickle", action="store_true")
    h.add_argument("--src")
    c = sub.add_parser("health")
    c.add_argument("target")
    c.add_argument("secs", type=float)
    c.add_argument("out")
    c.add_argument("--src")
    a = p.parse_args()
    {"big": big, "hold": hold, "health": health}[a.cmd](a)


if __name__ == "__main__":
    main()
