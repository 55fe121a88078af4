#!/bin/bash
# fuzz_units_seeds.sh DIR: seed times for fuzz_units, as a person types them.
set -euo pipefail
mkdir -p "$1"
i=0
for s in 5m 90s 1.5s 250ms 2h 3d 1216282087127 .5us 2026-11-28T17:30:00Z 2026-11-28T17:30:00.123456789Z \
         2026-11-28T17:30:00.25+00:00 1970-01-01T00:00:00Z; do
  printf '%s' "$s" >"$1/seed$i"; i=$((i + 1))
done
