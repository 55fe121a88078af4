#!/bin/bash
# cstore.sh TEST: the collector's store interface against ClickHouse: the
# cases of TEST (test_collector_cstore, tests/collector/test_cstore.c, which
# ctest collector_cstore runs against LMDB) with NSC_CSTORE_URL naming a
# real clickhouse-server started here on loopback (lib.sh), the store's
# server and its one shard. Fails without clickhouse-server where it can be
# installed, skips (77) where no package provides it.
test=$1 bin=$(dirname "$1") mode=cstore
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"
ch_require
ch_start one
NSC_CSTORE_URL="clickhouse://127.0.0.1:${chhttp[one]}/nsc" "$test" --jobs 1 ||
    die "the store's cases failed against clickhouse ($(tail -n 3 "$dir/ch/one/error.log" 2>/dev/null))"
