#!/bin/bash
# rootcause_replay.sh: diagnose the runs rootcause.sh kept (ROOTCAUSE_KEEP,
# ROOTCAUSE_KEEP_ALL=1) again, from their stores, and check each verdict as
# the live run was checked: a rule changed in the engine tried on the same
# recorded jobs, without a loaded machine's new pauses.
#
#   rootcause_replay.sh BIN_DIR KEPT_DIR...   one line per run ("FAULT-I:
#                                             right/wrong/unplayed: ..."),
#                                             then how many were right and,
#                                             of the others, how many the
#                                             emulator did not play
set -euo pipefail
bin=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
right=0 unplayed=0 runs=0
for run in "$@"; do
    if [ ! -d "$run/db" ] || [ ! -s "$run/emu.json" ]; then
        echo "${run##*/}: no store or summary" >&2
        continue
    fi
    out=$(mktemp)
    "$bin/ncclscope" --db "$run/db" --json diagnose >"$out" || true
    rc=0
    verdict=$(python3 "$here/rootcause_check.py" "$run/emu.json" "$out") || rc=$?
    rm -f "$out"
    echo "${run##*/}: $verdict"
    runs=$((runs + 1))
    case $rc in 0) right=$((right + 1)) ;; 2) unplayed=$((unplayed + 1)) ;; esac
done
echo "right $right of $runs, unplayed $unplayed"
