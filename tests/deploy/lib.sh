# lib.sh: helpers shared by the deployment tests (sourced, not run).
# skip MESSAGE: ctest reports the test as skipped (SKIP_RETURN_CODE 77).
set -euo pipefail
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root ($1)"; }
need_cmds() {  # need_cmds WHAT CMD...: skip unless every CMD is installed
    local what=$1 c; shift
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || skip "$c is not installed ($what; scripts/deps.sh --test installs it)"
    done
}
