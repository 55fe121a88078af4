#!/bin/bash
# security.sh BIN_DIR: what docs/security.md promises and the programs implement today.
# - the collector's bearer token: /api/v1/* and /metrics refuse a request without the
#   token or with a wrong one (401), /healthz stays open (for probes), the CLI gets
#   through with --token-file or NCCLSCOPE_TOKEN;
# - the agent's socket is mode 0660, its spool and the collector's store 0750/0640; --gen-keys writes the
#   secret key 0600.
# Real processes on 127.0.0.1 with kernel-picked ports, files in a temp dir.
set -euo pipefail
bin=$1
. "$(dirname "$0")/lib.sh"
dir=$(mktemp -d /tmp/nsc-sec-XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; fail "$1 did not appear"; }

head -c 24 /dev/urandom | base64 >"$dir/token"
chmod 600 "$dir/token"
"$bin/ncclscope-collector" --listen tcp://127.0.0.1:0 --http 127.0.0.1:0 --db "$dir/db" \
    --token-file "$dir/token" --port-file "$dir/ports" 2>"$dir/collector.log" &
pids+=($!)
wait_file "$dir/ports"
url="http://127.0.0.1:$(awk '$1 == "http" { print $2 }' "$dir/ports")"

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code "$url/healthz")" = 200 ] || fail "/healthz needs no token"
for path in /api/v1/status /metrics; do
    [ "$(code "$url$path")" = 401 ] || fail "$path without a token is not refused"
    [ "$(code -H "Authorization: Bearer wrong" "$url$path")" = 401 ] || fail "$path with a wrong token is not refused"
    [ "$(code -H "Authorization: Bearer $(cat "$dir/token")" "$url$path")" = 200 ] || fail "$path with the token is refused"
done
out=$("$bin/ncclscope" --collector "$url" status --json 2>&1) && fail "the CLI without a token got through: $out"
grep -q "bearer token" <<<"$out" || fail "the CLI's refusal does not say why: $out"
out=$(NCCLSCOPE_TOKEN=wrong "$bin/ncclscope" --collector "$url" status --json 2>&1) && fail "a wrong NCCLSCOPE_TOKEN got through: $out"
"$bin/ncclscope" --collector "$url" --token-file "$dir/token" status --json >/dev/null || fail "--token-file refused"
NCCLSCOPE_TOKEN=$(cat "$dir/token") "$bin/ncclscope" --collector "$url" status --json >/dev/null || fail "NCCLSCOPE_TOKEN refused"

"$bin/ncclscope-agent" --rundir "$dir/run" --http off 2>"$dir/agent.log" &
pids+=($!)
for _ in $(seq 100); do [ -S "$dir/run/agent.sock" ] && break; sleep 0.1; done
[ "$(stat -c %a "$dir/run/agent.sock")" = 660 ] || fail "agent.sock is mode $(stat -c %a "$dir/run/agent.sock"), not 660"
check_mode() {  # check_mode PATH WANT
    [ "$(stat -c %a "$1")" = "$2" ] || fail "$1 is mode $(stat -c %a "$1"), not $2"
}
check_mode "$dir/run/spool" 750
check_mode "$dir/run/spool/data.mdb" 640
check_mode "$dir/db" 750
check_mode "$dir/db/data.mdb" 640

"$bin/ncclscope-agent" --gen-keys "$dir/agent" >/dev/null
[ "$(stat -c %a "$dir/agent.key")" = 600 ] || fail "the secret key is mode $(stat -c %a "$dir/agent.key")"
[ -s "$dir/agent.pub" ] || fail "no public key"
echo "security: token enforced on /api and /metrics, /healthz open, socket 0660, spool and store 0750/0640, secret key 0600"
