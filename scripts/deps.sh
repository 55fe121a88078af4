#!/usr/bin/env bash
# Install the Debian packages ncclscope needs, only those missing.
#   scripts/deps.sh          what the demo needs: build the programs and run them
#   scripts/deps.sh --test   also what the test suite needs (Criterion and
#                            msgpack-c, sanitizer and fuzz builds, protoc, the
#                            deployment tests, Prometheus, Chromium, ClickHouse)
#   scripts/deps.sh --arm64  the aarch64 cross build and qemu-user (scripts/aarch64.sh)
set -euo pipefail
[ "${1:-}" = --arm64 ] && exec "$(dirname "$0")/aarch64.sh" deps

pkgs=(build-essential cmake pkg-config python3
      libzmq3-dev liblmdb-dev lmdb-utils libevent-dev libzstd-dev libcurl4-openssl-dev)
want_test=
if [ "${1:-}" = --test ]; then
  shift
  want_test=1
  pkgs+=(libcriterion-dev libmsgpack-dev  # only the tests link them
         git clang protobuf-compiler
         # deployment tests (tests/deploy/): images, the manifest checker, a real Slurm
         podman buildah debootstrap python3-yaml slurm-wlm munge
         # a real Prometheus scraping the collector and agents (tests/e2e/prometheus.sh)
         prometheus
         # a real browser loading the web view (tests/ui/ui.sh)
         chromium
         # real ClickHouse servers for the collector's ClickHouse store (tests/clickhouse/;
         # ss finds the ports they bound; openssl makes the HTTPS test's certificate)
         clickhouse-server clickhouse-client iproute2 openssl
         # the CLI's man page read by groff (tests/cli/cli_docs.sh)
         groff-base)
fi
pkgs+=("$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# A current ClickHouse release for tests/clickhouse/ch.sh current (Debian
# has only 18.16): chDB's build of ClickHouse 26.7 as one shared library,
# from the npm registry. Where none can be had, the reason is written beside
# it and that test skips.
. "$(dirname "$0")/chdb.env"
chdb() {
  [ -r "$CHDB_DIR/libchdb.so" ] && return 0
  $SUDO mkdir -p "$CHDB_DIR"
  if [ "$(uname -m)" != x86_64 ]; then
    echo "chDB's $CHDB_PKG is built for x86_64 only" | $SUDO tee "$CHDB_DIR.unavailable" >/dev/null
    return 0
  fi
  command -v npm >/dev/null || $SUDO apt-get install -y -qq --no-install-recommends npm
  local tmp
  tmp=$(mktemp -d)
  echo "deps: fetching $CHDB_PKG (a current ClickHouse, about 180 MB)"
  if (cd "$tmp" && npm pack --silent "$CHDB_PKG" >/dev/null 2>"$tmp/err" && tar xzf ./*.tgz package/libchdb.so); then
    $SUDO mv "$tmp/package/libchdb.so" "$CHDB_DIR/libchdb.so"
    $SUDO rm -f "$CHDB_DIR.unavailable"
  else
    echo "npm pack $CHDB_PKG failed: $(tail -n 2 "$tmp/err" | tr '\n' ' ')" | $SUDO tee "$CHDB_DIR.unavailable" >&2
  fi
  rm -rf "$tmp"
}
[ -z "$want_test" ] || chdb
