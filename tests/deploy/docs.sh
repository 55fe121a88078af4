#!/bin/bash
# docs.sh SRC_DIR BIN_DIR: docs/configuration.md names every environment variable the
# agent's --help lists, docs/configuration-collector.md every one the collector's
# lists, with the same default (so the reference cannot drift from the programs).
set -euo pipefail
src=$1 bin=$2
. "$(dirname "$0")/lib.sh"
n=0
for prog in ncclscope-agent ncclscope-collector; do
    doc=$src/docs/configuration.md
    [ $prog = ncclscope-collector ] && doc=$src/docs/configuration-collector.md
    # "VAR DEFAULT" pairs from both --help layouts.
    pairs=$("$bin/$prog" --help | tr -d '\n' | grep -oE "NCCLSCOPE_[A-Z0-9_]+, default '[^']*'" \
        | sed -E "s/, default '([^']*)'/ \1/")
    [ -n "$pairs" ] || fail "$prog --help lists no variables"
    while read -r var dflt; do
        row=$(grep -F "| \`$var\` |" "$doc") || fail "$doc does not list $var ($prog)"
        if [ -n "$dflt" ]; then
            grep -qF "| \`$dflt\` |" <<<"$row" || fail "$doc: $var default is not $dflt: $row"
        else
            grep -qF "| (empty) |" <<<"$row" || fail "$doc: $var default is not empty: $row"
        fi
        n=$((n + 1))
    done <<<"$pairs"
done
echo "docs: $n variables of the agent and collector documented with their defaults"
