#!/usr/bin/env bash
# Run every ncclscope test: installs what is missing, builds, runs the suite with
# ctest, then builds and runs it again under AddressSanitizer + UBSan (with clang,
# which also builds the libFuzzer targets and runs them for a bounded time), then
# cross-builds for aarch64 and runs the plugin's and the emulator's tests under
# qemu-user (scripts/aarch64.sh; skipped with its reason where it cannot install).
#   scripts/test.sh --quick   the inner loop (docs/hacking.md, "Test tiers"): the
#                             release tree only, its unit and e2e tests less those
#                             labelled slow; no sanitizer or aarch64 stage
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. scripts/lib.sh
jobs=$(nproc 2>/dev/null || echo 2)
ctest_select=()
case "${1:-}" in
  "") ;;
  --quick) ctest_select=(-L '^(unit|e2e)$' -LE '^slow$') ;;
  *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac

scripts/deps.sh --test

run_suite() {  # run_suite BUILD_DIR (relative to the repo) LABEL CMAKE_ARGS...
  local dir=$root/$1 label=$2; shift 2
  echo "== $label: configure and build ($dir)"
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >"$dir/build.log" 2>&1 || { cat "$dir/build.log"; return 1; }
  echo "== $label: ctest"
  local rc=0
  (cd "$dir" && ctest -V -j"$jobs" --timeout 600 ${ctest_select[@]+"${ctest_select[@]}"} >"$dir/ctest.log" 2>&1) || rc=$?
  ctest_report "$dir" "$label" "$rc"
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
run_suite build "release" || status=1
if [ ${#ctest_select[@]} -gt 0 ]; then
  if [ $status -eq 0 ]; then echo "test.sh --quick: passed"; else echo "test.sh --quick: FAILED"; fi
  exit $status
fi
sanitize_cc=cc
command -v clang >/dev/null && sanitize_cc=clang
CC=$sanitize_cc run_suite build-sanitize "sanitize" -DNCCLSCOPE_SANITIZE=ON \
  -DNCCLSCOPE_FUZZ=$([ "$sanitize_cc" = clang ] && echo ON || echo OFF) || status=1
scripts/aarch64.sh test || status=1

if [ $status -eq 0 ]; then echo "test.sh: all suites passed"; else echo "test.sh: FAILED"; fi
exit $status
