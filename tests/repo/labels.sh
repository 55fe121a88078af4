#!/bin/bash
# labels.sh BUILD_DIR: every ctest of the build carries a tier label (unit, e2e,
# clickhouse, browser or deploy), so the tiers of docs/hacking.md between them
# run the whole suite.
set -euo pipefail
untiered=$(cd "$1" && ctest -N -LE '^(unit|e2e|clickhouse|browser|deploy)$' | grep -E '^ *Test +#' || true)
if [ -n "$untiered" ]; then
    echo "labels.sh: tests without a tier label (tests/CMakeLists.txt says how to add one):" >&2
    echo "$untiered" >&2
    exit 1
fi
echo "labels.sh: $(cd "$1" && ctest -N | grep -c -E '^ *Test +#') tests, each with a tier"
