#!/bin/bash
# fuzz_query_seeds.sh DIR: seed queries for fuzz_query (selector byte + query string).
set -euo pipefail
mkdir -p "$1"
i=0
for s in '\001comm=0xabc&rank=0,2-5&t0_ns=1&t1_ns=99&type=coll,kernelch&limit=10&cursor=1.2.3' \
         '\002comm=world&func=AllReduce&seq=5-9&format=json' \
         '\000job=local' '\003comm=w%6Frld+x' '\004comm=0x1&rank=7' \
         '\005comm=0x1&t0_ns=3&settle_lag_ns=10000000000'; do
  printf "$s" >"$1/seed$i"; i=$((i + 1))
done
