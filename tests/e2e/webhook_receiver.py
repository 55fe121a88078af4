#!/usr/bin/env python3
"""webhook_receiver.py PORT_FILE LOG [--fail-first N | --hold]: the receiving
end of the collector's webhook in tests (webhook.sh). Listens on 127.0.0.1,
a port of its choice written to PORT_FILE once it listens. Each POST's body
is appended to LOG as one line and answered 200; with --fail-first N the
first N POSTs are answered 500 and not logged (the collector must retry).
With --hold it never accepts a connection: a receiver that is up but stuck."""
import argparse
import http.server
import os
import socket
import time


def write_port(path, port):
    with open(path + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port_file")
    ap.add_argument("log")
    ap.add_argument("--fail-first", type=int, default=0)
    ap.add_argument("--hold", action="store_true")
    a = ap.parse_args()
    if a.hold:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        write_port(a.port_file, s.getsockname()[1])
        while True:
            time.sleep(3600)
    failed = [0]

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if failed[0] < a.fail_first:
                failed[0] += 1
                self.send_response(500)
            else:
                with open(a.log, "ab") as f:
                    f.write(body.rstrip(b"\n") + b"\n")
                self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    write_port(a.port_file, srv.server_address[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
