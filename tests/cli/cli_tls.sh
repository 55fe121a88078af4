#!/bin/bash
# cli_tls.sh: the CLI speaks HTTPS (docs/cli.md "Global options",
# docs/security.md "HTTP API: bearer token"): a real collector with a
# bearer token behind a TLS-terminating proxy on loopback (python's ssl
# module, a certificate for 127.0.0.1 made by openssl), asked by ncclscope
# over https:// with the CA file as a flag and as NCCLSCOPE_CA_FILE; a
# certificate it cannot verify and a missing token are one-line errors.
#
#   cli_tls.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1
nodes=1
. "$(dirname "$0")/../e2e/lib.sh"
fail=0

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" >/dev/null 2>&1 || die "openssl could not make a certificate"
echo "tls-token" >"$dir/token"
start_collector 0 --token-file "$dir/token"

python3 - "$dir/cert.pem" "$dir/key.pem" "$http" "$dir/tls.port" <<'PY' 2>>"$dir/proxy.log" &
import os, socket, ssl, sys, threading
cert, key, upstream, portfile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
open(portfile + ".tmp", "w").write(str(ls.getsockname()[1]))
os.rename(portfile + ".tmp", portfile)
def pipe(a, b):  # a's bytes to b; either end closing closes both
    try:
        while (d := a.recv(65536)):
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.close()
        except OSError:
            pass
def serve(c):
    try:
        t = ctx.wrap_socket(c, server_side=True)
    except (ssl.SSLError, OSError):
        c.close()
        return
    u = socket.create_connection(("127.0.0.1", upstream))
    threading.Thread(target=pipe, args=(u, t), daemon=True).start()
    pipe(t, u)
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
pids[proxy]=$!
wait_until 10 test -s "$dir/tls.port" || die "the TLS proxy did not start: $(cat "$dir/proxy.log")"
url=https://127.0.0.1:$(cat "$dir/tls.port")

# expect CODE PATTERN ARGS...: exit code; one stderr line matching PATTERN ("" none).
expect() {
    local code=$1 pat=$2 rc=0
    shift 2
    "$@" >"$dir/out" 2>"$dir/err" || rc=$?
    if [ "$rc" -ne "$code" ] || { [ -n "$pat" ] && { [ "$(wc -l <"$dir/err")" -ne 1 ] || ! grep -qE "^ncclscope: $pat" "$dir/err"; }; }; then
        echo "FAIL: ${*:2} -> rc $rc (want $code), stderr: $(cat "$dir/err")"
        fail=1
    fi
}
cli="$bin/ncclscope"
expect 0 "" "$cli" --collector "$url" --ca-file "$dir/cert.pem" --token-file "$dir/token" --json status
grep -q '"jobs"' "$dir/out" || { echo "FAIL: status over https: $(cat "$dir/out")"; fail=1; }
expect 0 "" env NCCLSCOPE_CA_FILE="$dir/cert.pem" NCCLSCOPE_TOKEN=tls-token "$cli" --collector "$url" hosts
grep -q "^0 jobs analysed" "$dir/out" || { echo "FAIL: hosts over https: $(cat "$dir/out")"; fail=1; }
expect 1 "cannot reach collector at $url: .*(certificate|verify)" "$cli" --collector "$url" --token-file "$dir/token" status
expect 1 "missing or wrong bearer token" "$cli" --collector "$url" --ca-file "$dir/cert.pem" status
[ $fail = 0 ] || exit 1
echo "cli_tls.sh: ok"
