#!/usr/bin/env bash
# CLI errors: each prints one line starting with "ncclscope: " and exits with
# the documented code (2 a bad command line or value, 1 an error or nothing
# found). Usage: cli_errors.sh BIN_DIR
set -euo pipefail
bin=$1
cli=$bin/ncclscope
fail=0
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
tmp=$dir
closed_port  # a port that refuses connections: $closed
port=$closed

expect() {  # expect CODE PATTERN CMD...: exit code, one stderr line matching PATTERN
  local code=$1 pat=$2; shift 2
  local rc=0
  "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if [ "$rc" -ne "$code" ] || [ "$lines" -ne 1 ] || ! grep -qE "^ncclscope: $pat" "$tmp/err"; then
    echo "FAIL: $* -> rc $rc (want $code), stderr:"; cat "$tmp/err"; fail=1
  else
    echo "ok: $(cat "$tmp/err")"
  fi
}

expect 1 "cannot reach collector at http://127.0.0.1:$port: Connection refused" \
  "$cli" --collector "http://127.0.0.1:$port" comms
NCCLSCOPE_COLLECTOR="http://127.0.0.1:$port" expect 1 "cannot reach collector at http://127.0.0.1:$port" "$cli" status
expect 2 "bad time range: --t0 5 is after --t1 3" "$cli" timeline --comm 0x1 --t0 5 --t1 3
expect 2 "--t0 wants a time on the collector's clock \(ns, or 1216.5s\) or a UTC time like 2026-11-28T17:30:00Z, got 'abc'" \
  "$cli" timeline --comm 0x1 --t0 abc
expect 2 "unknown command 'bogus'" "$cli" bogus
expect 2 "unknown option --nope for comms" "$cli" comms --nope
expect 2 "export needs -o FILE" "$cli" export --comm 0x1
expect 2 "--format wants perfetto or chrome" "$cli" export --format svg -o x --comm 0x1
expect 2 "collector URL must start with http://" "$cli" --collector ftp://x comms
expect 2 "collector URL must start with http://" "$cli" --collector notaurl comms
expect 2 "--db $tmp/none: not a store directory \(want the collector's --store directory, which holds data.mdb\)" \
  "$cli" --db "$tmp/none" comms
expect 2 "--db $tmp: not a store directory" "$cli" --db "$tmp" comms
expect 2 "--sort wants one of seq, func, bytes, ranks, duration, skew, last, busbw, duration_err, skew_err, uncertain, algo, proto, graph, mismatch, start \(got 'nope'\)" \
  "$cli" collectives --comm 0x1 --sort nope
expect 2 "--top wants a non-negative number, got 'x'" "$cli" collectives --top x
expect 2 "--sort and --top order the table" "$cli" --json collectives --top 3

# --version: every program, one line on stdout with the one version string.
for prog in ncclscope ncclscope-agent ncclscope-collector ncclscope-emu; do
  out=$("$bin/$prog" --version) || { echo "FAIL: $prog --version exits $?"; fail=1; }
  if [[ "$out" =~ ^$prog\ [0-9]+\.[0-9]+\.[0-9]+$ ]]; then echo "ok: $out"; else echo "FAIL: $prog --version: '$out'"; fail=1; fi
done
expect 1 "$tmp/bad.ndjson: bad JSON in line 2" \
  sh -c "printf '{\"kind\":\"header\"}\n{nope\n' >$tmp/bad.ndjson; exec $cli export --input $tmp/bad.ndjson -o $tmp/x.pftrace"

# serve N EXPR: a server on $tmp/port answering N requests with EXPR's
# (status, body), path being the request's; its pid in srv.
serve() {
    rm -f "$tmp/port"
    python3 - "$tmp/port" "$1" "$2" <<'PY' >/dev/null &
import http.server, sys, socketserver
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code, body = eval(sys.argv[3], {"path": self.path})
        self.send_response(code); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = socketserver.TCPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.timeout = 10
for _ in range(int(sys.argv[2])):
    s.handle_request()
PY
    srv=$!
    wait_until 5 test -s "$tmp/port" || die "the test server did not start"
}

# A server that answers with the API's error bodies: 404 for what is not
# there (exit 1), 400 for a bad value (exit 2); the message is shown as is.
serve 2 '((400, b"{\"error\": \"comm: expected 0x and 1 to 16 hex digits, or a name: \\\"0xzz\\\"\"}") if "comm=0xzz" in path
          else (404, b"{\"error\": \"no communicator 0x77 in job \\\"local\\\"\"}"))'
expect 1 'no communicator 0x77 in job "local"' "$cli" --collector "http://127.0.0.1:$(cat "$tmp/port")" timeline --comm 0x77
expect 2 'comm: expected 0x and 1 to 16 hex digits' "$cli" --collector "http://127.0.0.1:$(cat "$tmp/port")" collectives --comm 0xzz
wait $srv

# The UTC strings the API gives are shown as given, not made again from its
# wall clock (docs/api.md "Wall-clock time"): this server's offset says 1970.
serve 1 '(200, b"""{"kind":"header","job":"j","wall_offset_ns":0,"comm":"0x1","name":"w","nranks":2}
{"kind":"collective","comm":"0x1","func":"AllReduce","seq":0,"nranks":2,"ranks_seen":2,"start_ns":1,"end_ns":2,
 "start_utc":"2026-11-28T20:11:05.123456Z","end_utc":null,"duration_ns":1}
{"kind":"end","collectives":1,"next_cursor":null}
""".replace(b"\n ", b" "))'
out=$("$cli" --collector "http://127.0.0.1:$(cat "$tmp/port")" collectives --comm 0x1) || true
if [[ "$out" == *" 2026-11-28T20:11:05.123456Z"* ]]; then echo "ok: collectives shows the API's start_utc"
else echo "FAIL: collectives does not show the API's start_utc: $out"; fail=1; fi
wait $srv

[ $fail -eq 0 ] && echo "cli_errors: all passed"
exit $fail
