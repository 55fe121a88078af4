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
if [ "${1:-}" = --test ]; then
  shift
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
         clickhouse-server clickhouse-client iproute2 openssl)
fi
pkgs+=("$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
