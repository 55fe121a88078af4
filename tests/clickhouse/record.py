#!/usr/bin/env python3
"""record.py: an HTTP proxy on loopback that writes down every request the
collector makes of ClickHouse servers, and their answers, so that
nsc-ch-replay can make the same requests of another ClickHouse release.

    record.py --upstream http://127.0.0.1:PORT [--upstream URL ...] --dir DIR --port-file FILE

Listens on 127.0.0.1 once per upstream, each on port 0 (the kernel's pick;
FILE gets one port per line, in the upstreams' order, once all listen),
forwards each request to its port's upstream as it came (method, path and
query, body) and answers with the upstream's status and body. Request
N leaves three files in DIR: N.meta ("START END STATUS UPSTREAM METHOD TARGET":
two numbers from one counter, taken when the request arrived and when its
answer was back, so a replay can tell which requests overlapped; UPSTREAM
counts the --upstream options from 0), N.body and N.answer. Stops on SIGTERM.
"""
import argparse
import http.client
import http.server
import os
import signal
import sys
import threading
import urllib.parse

clock = threading.Lock()
counter = [0]


def tick():
    with clock:
        counter[0] += 1
        return counter[0]


def handler(upstream, index, out):
    up = urllib.parse.urlsplit(upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, and 100-continue as curl asks

        def log_message(self, *args):
            pass

        def forward(self):
            start = tick()
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=300)
            try:
                conn.request(self.command, self.path, body=body)
                r = conn.getresponse()
                status, answer = r.status, r.read()
            finally:
                conn.close()
            end = tick()
            base = os.path.join(out, "%08d" % start)
            with open(base + ".body", "wb") as f:
                f.write(body)
            with open(base + ".answer", "wb") as f:
                f.write(answer)
            with open(base + ".meta", "w") as f:  # last: a replay reads whole records only
                f.write("%d %d %d %d %s %s\n" % (start, end, status, index, self.command, self.path))
            self.send_response(status)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        do_GET = forward
        do_POST = forward

    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--upstream", required=True, action="append")
    p.add_argument("--dir", required=True)
    p.add_argument("--port-file", required=True)
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler(u, i, a.dir))
               for i, u in enumerate(a.upstream)]
    threads = [threading.Thread(target=s.serve_forever) for s in servers]
    for t in threads:
        t.start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("".join("%d\n" % s.server_address[1] for s in servers))
    os.rename(tmp, a.port_file)
    done.wait()
    for s in servers:
        s.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
