#!/bin/bash
# collector_e2e.sh BIN MODE: ncclscope-collector with real processes on loopback.
#   ingest:  4 agents x 150 batches, 40 sent again: every batch stored exactly
#            once, duplicates acknowledged again and counted, not stored.
#   kill9:   20 short rounds: nsc-feed writes while the collector is killed
#            with SIGKILL; the store must open and hold every acknowledged
#            batch exactly once; the next round restarts on the same store and
#            sends every sequence from 0 again (duplicates across a restart).
#   garbage: malformed messages of every kind and bad HTTP requests are
#            rejected and counted (a batch with one bit of a value changed
#            too: its CRC); each batch whose head names it is answered with
#            a rejection; the collector keeps serving.
#   stream:  a ~90 MB timeline read by a client limited to 40 MB/s streams
#            out whole (chunked) while the collector's anonymous memory
#            (RssAnon: the store's mmap aside) grows by less than 40 MiB; a
#            client that leaves mid-stream and a stop during a stream are
#            handled; a small result still comes whole with Content-Length.
#   slowgrow: a timeline read at 2 kB/s while ~6 M more events make the map
#            grow: /healthz answers within 2 s throughout, every batch is
#            acknowledged, the slow stream is cut off (logged and counted),
#            and SIGTERM with a slow client attached ends within 10 s.
#   ledger:  2 agents x 30 batches, each with 16 ledger records per process,
#            10 sent again: every record stored exactly once (metrics and
#            the store), none replaced; /api/v1/ledger answers a window of
#            seqs and ranks in (seq, rank) order and pages it by cursor, a
#            bad parameter gets a 400 with its error; ncclscope ledger reads
#            the same records from the collector and from the store (--db).
#            Then ledger records that come without their process's section
#            (in-flight records of a process that stopped sending events):
#            placed by what the agent's earlier batches said, and, from
#            agents the collector never heard, refused and counted; after a
#            restart, placed by the processes the store holds.
# Issue 29's HTTP probes (tests/e2e/hflood.py clients from 127.0.0.1; /healthz
# polled from 127.0.0.2 answers throughout each, each poll within 1 s; what
# load leaves alone is bounded instead: no turn of the HTTP loop costs over
# 50 ms of CPU, http_turns_ok in tests/e2e/lib.sh):
#   bigreq:  a 1 GiB body, a 64 MiB header and a 64 MiB URL are refused
#            (413/400 or closed) before they are buffered: peak RSS grows by
#            less than 32 MiB; counted by reason, the peer logged.
#   slowloris: 300 connections trickling their headers are closed by the
#            request deadline (http_header_timeout_ms), counted and logged.
#   idlefds: with RLIMIT_NOFILE 1024, 1100 idle connections: HTTP keeps to
#            its limit (idle ones of the client with the most closed) and a new agent connects and
#            has every batch acknowledged; 100 idle ones from one client
#            stop at http_max_conns_per_client.
#   backoff: with RLIMIT_NOFILE 64 and no descriptor reserve, accept() fails
#            (EMFILE): HTTP stops accepting for http_accept_backoff_ms, one
#            log line each time, no spin; it serves again afterwards.
#   sse:     20 /api/v1/live clients that never read are cut off once their
#            unsent output passes http_sse_buffer_kb, their connections freed
#            and their entries dropped (ncclscope_collector_live_clients 0).
#   neverread: 8 timeline clients that never read hold every query slot; the
#            guard cuts them after http_write_timeout_ms, which frees the
#            slots: other queries are answered again (not 503).
# Ports are picked by the kernel (port 0) and read from --port-file (tests/e2e/lib.sh).
set -euo pipefail
bin=$1 mode=$2
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
start() { start_collector 0 "$@"; }  # start [extra flags]: collector on the store $dir/db
code() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$http$1"; }

case $mode in
ingest)
    start
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 4 --batches 150 --resend 40 \
        --timeout-ms 30000 > "$dir/out" || die "not every batch was acknowledged: $(cat "$dir/out")"
    grep -q '^resent_acked=yes' "$dir/out" || die "duplicates not acknowledged"
    [ "$(collector_metric ncclscope_collector_duplicates_total)" = 160 ] || die "duplicates_total $(collector_metric ncclscope_collector_duplicates_total), want 160"
    [ "$(collector_metric ncclscope_collector_batches_in_total)" = 600 ] || die "batches_in_total $(collector_metric ncclscope_collector_batches_in_total), want 600"
    stop collector
    "$bin/nsc-feed" --check "$dir/db" --agents 4 --batches 150 || die "store check"
    # After a restart the same batches are duplicates: acknowledged, not stored.
    start
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 4 --batches 150 --timeout-ms 30000 > "$dir/out" \
        || die "resent batches after restart not acknowledged"
    [ "$(collector_metric ncclscope_collector_duplicates_total)" = 600 ] || die "after restart: duplicates_total $(collector_metric ncclscope_collector_duplicates_total), want 600"
    stop collector
    "$bin/nsc-feed" --check "$dir/db" --agents 4 --batches 150 || die "store check after restart"
    ;;
ledger)
    start
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 2 --procs 4 --batches 30 --ledger 16 --resend 10 \
        --timeout-ms 30000 > "$dir/out" || die "not every batch was acknowledged: $(cat "$dir/out")"
    wait_collector_metric ncclscope_collector_ledger_records_stored_total 3840
    collector_metric_is ncclscope_collector_ledger_records_replaced_total 0 || die "ledger records replaced"
    collector_metric_is ncclscope_collector_ledger_records_rejected_total 0 || die "ledger records rejected"
    L="http://127.0.0.1:$http/api/v1/ledger?job=feed&comm=0xfeed"
    curl -sf "$L&seq=14-17&rank=1-2" > "$dir/window" || die "ledger window"
    python3 - "$dir/window" <<'PY' || die "ledger window: $(head -c 600 "$dir/window")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
recs = [l for l in lines if l["kind"] == "record"]
want = [(s, r) for s in range(14, 18) for r in (1, 2)]
assert lines[0]["kind"] == "header" and lines[0]["comm"] == "0xfeed", lines[0]
assert [(x["seq"], x["rank"]) for x in recs] == want, [(x["seq"], x["rank"]) for x in recs]
assert all(x["state"] == "completed" and x["func"] == "AllReduce" and x["gpu_bound_ns"] >= x["gpu_err_ns"]
           and x["enqueue_ns"] < x["gpu_start_ns"] < x["gpu_end_ns"] for x in recs), recs[0]
assert lines[-1] == {"kind": "end", "records": 8, "next_cursor": None}, lines[-1]
PY
    # paged by 3: the pages together are the window
    : > "$dir/pages"
    cursor=
    for _ in $(seq 10); do
        curl -sf "$L&seq=14-17&rank=1-2&limit=3${cursor:+&cursor=$cursor}" > "$dir/page" || die "ledger page"
        grep '"kind":"record"' "$dir/page" >> "$dir/pages" || true
        cursor=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["next_cursor"] or "")' "$dir/page")
        [ -n "$cursor" ] || break
    done
    diff <(grep '"kind":"record"' "$dir/window") "$dir/pages" > /dev/null || die "ledger pages differ from the window"
    [ "$(code "/api/v1/ledger?job=feed&comm=0xfeed&seq=9-2")" = 400 ] || die "a bad seq window not refused"
    curl -s "$L&rank=x" | grep -q '"error":"rank: expected ranks' || die "a bad rank without its error"
    "$bin/ncclscope" --collector "http://127.0.0.1:$http" --raw ledger --comm 0xfeed --seq 14-17 --rank 1-2 > "$dir/cli" \
        || die "ncclscope ledger"
    [ "$(grep -c AllReduce "$dir/cli")" = 8 ] || die "ncclscope ledger: $(cat "$dir/cli")"
    stop collector
    "$bin/nsc-feed" --check "$dir/db" --agents 2 --procs 4 --batches 30 --ledger 16 || die "store check"
    "$bin/ncclscope" --db "$dir/db" --raw ledger --comm 0xfeed --seq 14-17 --rank 1-2 > "$dir/cli_db" || die "ledger --db"
    diff "$dir/cli" "$dir/cli_db" || die "ledger from the store differs from the collector's"
    start
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 2 --procs 4 --first 30 --batches 10 --ledger 16 \
        --ledger-alone 5 --timeout-ms 30000 > "$dir/out" || die "not every batch was acknowledged: $(cat "$dir/out")"
    wait_collector_metric ncclscope_collector_ledger_records_stored_total 1280
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 1 --procs 4 --prefix stranger --batches 3 --ledger 16 \
        --ledger-alone 3 --timeout-ms 30000 > "$dir/out" || die "not every batch was acknowledged: $(cat "$dir/out")"
    wait_collector_metric ncclscope_collector_ledger_records_rejected_total 192
    collector_metric_is ncclscope_collector_store_ledger_records $((3840 + 1280)) ||
        die "the store holds $(collector_metric ncclscope_collector_store_ledger_records) ledger records"
    # agents that name their host as their processes do (feedhostN): after a
    # restart, their ledger-only batches are placed by the store's processes
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 2 --procs 4 --prefix feedhost --distinct --first 100 \
        --batches 5 --ledger 16 --timeout-ms 30000 > "$dir/out" || die "not every batch was acknowledged: $(cat "$dir/out")"
    stop collector
    start
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 2 --procs 4 --prefix feedhost --distinct --first 105 \
        --batches 3 --ledger 16 --ledger-alone 3 --timeout-ms 30000 > "$dir/out" ||
        die "not every batch was acknowledged: $(cat "$dir/out")"
    wait_collector_metric ncclscope_collector_ledger_records_stored_total 384
    collector_metric_is ncclscope_collector_ledger_records_rejected_total 0 || die "ledger-only batches after a restart refused"
    ;;
kill9)
    : > "$dir/acks"
    r=0
    while [ $r -lt 20 ]; do
        start
        # Every round starts at seq 0: what earlier rounds committed comes again
        # (duplicates across a restart), then new batches until the kill.
        "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 3 --colls 20 \
            --batches 100000 --timeout-ms 5000 --ack-log "$dir/acks" > /dev/null 2>&1 &
        FP=$!
        sleep 0.$((3 + r % 5))
        kill9 collector
        kill "$FP" 2>/dev/null || true; wait "$FP" 2>/dev/null || true
        "$bin/nsc-feed" --check "$dir/db" --agents 3 --colls 20 --ack-log "$dir/acks" > "$dir/check" \
            || die "round $r: $(cat "$dir/check")"
        r=$((r + 1))
    done
    grep acks_checked "$dir/check"
    ;;
garbage)
    echo secret > "$dir/token"
    start --token-file "$dir/token"
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 2 --batches 20 --garbage \
        --timeout-ms 30000 > "$dir/out" || die "valid batches after garbage not acknowledged"
    [ "$(code /healthz)" = 200 ] || die "healthz"
    [ "$(code /metrics)" = 401 ] || die "metrics without token: $(code /metrics)"
    A="Authorization: Bearer secret"
    m=$(curl -s -H "$A" "http://127.0.0.1:$http/metrics")
    for r in multipart kind a2c_empty a2c_truncated a2c_bad_type section_truncated a2c_bad_checksum; do
        grep -q "^ncclscope_collector_rejects_total{agent=\"[a-z]*\",reason=\"$r\"} [1-9]" <<<"$m" || die "reject $r not counted"
    done
    # An agent id and a host name that try to forge a series stay label values:
    # the scrape parses, no forged line, and the log has no forged line either.
    ! grep -q '^ncclscope_injected_total' <<<"$m" || die "a peer forged a metric"
    grep -q '^ncclscope_collector_rejects_total{agent="x\\"} 1\\nncclscope_injected_total 42\\n",reason="section_truncated"} 1$' <<<"$m" \
        || die "the forged agent id's reject not counted under its escaped label"
    grep -q '^ncclscope_collector_clock_offset_seconds{host="x\\"} 1\\nncclscope_injected_total 42\\n"}' <<<"$m" \
        || die "the forged host's clock not exported under its escaped label"
    if command -v promtool >/dev/null; then
        promtool check metrics <<<"$m" > "$dir/promtool" 2>&1 || die "promtool: $(head -5 "$dir/promtool")"
    fi
    ! grep -q '^ncclscope_injected_total' "$dir/collector.log" || die "a peer forged a log line"
    # each batch it could name was answered with a rejection, not left to time out
    grep -qx 'garbage_rejected=a2c_truncated,section_truncated,a2c_bad_checksum' "$dir/out" ||
        die "rejections: $(grep garbage_rejected "$dir/out")"
    c() { curl -s -o "$dir/body" -w '%{http_code}' -H "$A" "http://127.0.0.1:$http$1"; }
    [ "$(c '/api/v1/timeline?t0_ns=abc')" = 400 ] || die "bad parameter not 400"
    grep -q '"error"' "$dir/body" || die "no JSON error"
    [ "$(c '/api/v1/nothing')" = 404 ] || die "unknown path not 404"
    [ "$(c '/api/v1/comms?job=nosuchjob')" = 404 ] || die "unknown job not 404: $(cat "$dir/body")"
    [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "$A" "http://127.0.0.1:$http/api/v1/status")" = 405 ] || die "POST not 405"
    # An SSE client that goes away, then the collector still answers.
    timeout 1.5 curl -s -N -H "$A" "http://127.0.0.1:$http/api/v1/live" > "$dir/sse" || true
    grep -q '^event: summary' "$dir/sse" || die "no live summary"
    [ "$(c '/api/v1/status')" = 200 ] || die "status after garbage"
    grep -q '"ranks_seen":2' "$dir/body" || die "status: $(head -c 300 "$dir/body")"
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 2 --batches 30 --timeout-ms 30000 > "$dir/out" \
        || die "collector stopped serving"
    stop collector
    "$bin/nsc-feed" --check "$dir/db" --agents 2 --batches 30 || die "store check"
    ;;
stream)
    "$bin/nsc-feed" --direct "$dir/db" --agents 1 --procs 4 --batches 48 > "$dir/out" || die "nsc-feed --direct"
    # Under AddressSanitizer freed memory waits in a quarantine (256 MiB by
    # default) and would count as growth; keep it small (no effect otherwise).
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4" start
    Q="http://127.0.0.1:$http/api/v1/timeline?job=feed&comm=0xfeed&limit=1000000"
    anon() { awk '/^RssAnon/ {print $2}' "/proc/${pids[collector]}/status"; }
    base=$(anon)
    curl -s -D "$dir/hdr" -o "$dir/big" --limit-rate 40M "$Q" &
    CURL=$!
    peak=$base
    while kill -0 $CURL 2>/dev/null; do
        a=$(anon); [ "$a" -gt "$peak" ] && peak=$a; sleep 0.05
    done
    wait $CURL || die "curl failed"
    size=$(stat -c %s "$dir/big")
    echo "timeline: $size bytes; collector RssAnon $base kB before, $peak kB at most"
    [ "$size" -gt 50000000 ] || die "timeline only $size bytes"
    grep -qi '^transfer-encoding: chunked' "$dir/hdr" || die "not chunked: $(cat "$dir/hdr")"
    tail -n 1 "$dir/big" | grep -q '^{"kind":"end","events":' || die "no end line: $(tail -c 200 "$dir/big")"
    [ $((peak - base)) -lt 40960 ] || die "RssAnon grew by $((peak - base)) kB"
    # Small results: whole, with a length.
    curl -s -D "$dir/hdr" -o /dev/null "http://127.0.0.1:$http/api/v1/comms"
    grep -qi '^content-length:' "$dir/hdr" || die "small reply not whole: $(cat "$dir/hdr")"
    # A client that leaves part way; then the collector still answers.
    curl -s -o /dev/null --limit-rate 1M --max-time 0.5 "$Q" || true
    [ "$(code /api/v1/comms)" = 200 ] || die "no answer after a client left mid-stream"
    # Stop while a slow client is reading: clean exit.
    curl -s -o /dev/null --limit-rate 1M --max-time 5 "$Q" &
    CURL=$!
    sleep 0.5
    stop collector
    wait $CURL || true  # cut off by the stop
    ;;
slowgrow)
    # Issue 15's deadlock: a stream read by a slow client holds a store
    # reader; the map must grow under it. Health stays answered, every batch
    # is acknowledged, the stream is cut off (logged, counted), and a stop
    # with another slow client attached ends within 10 s. The slow client
    # is never cut off for stalling (neverread checks that): on a loaded
    # machine the feed outlasts http_write_timeout_ms, and that cut would
    # come before the map growth's, which this mode is about.
    start --map-initial-mb 4 --http-write-timeout-ms 3600000
    feed() {  # feed FIRST: 2 agents x 4 processes x 200 batches (~6 M events)
        "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 2 --procs 4 --batches 200 \
            --colls 50 --first "$1" --timeout-ms 60000 > "$dir/out" ||
            die "not every batch was acknowledged: $(cat "$dir/out")"
    }
    feed 0
    map0=$(collector_metric ncclscope_collector_store_map_bytes)
    Q="http://127.0.0.1:$http/api/v1/timeline?job=feed&comm=0xfeed"
    slow_stream() {  # a client at 2 kB/s; waits until the collector streams to it
        rm -f "$dir/slow.out"
        curl -s -o "$dir/slow.out" --limit-rate 2k "$Q" &
        pids[slow]=$!
        i=0
        until [ -s "$dir/slow.out" ]; do
            i=$((i + 1)); [ $i -gt 200 ] && die "the slow stream did not start"; sleep 0.05
        done
        sleep 1  # the worker fills its buffer and waits for the client
    }
    slow_stream
    : > "$dir/health"
    (while [ -e "$dir/health" ]; do
        curl -sf -m 2 -o /dev/null "http://127.0.0.1:$http/healthz" || echo "healthz unanswered in 2 s at $(date +%T.%N)" >> "$dir/health.fail"
        sleep 0.1
    done) &
    POLL=$!
    feed 200
    rm -f "$dir/health"
    wait $POLL
    [ ! -e "$dir/health.fail" ] || die "$(cat "$dir/health.fail")"
    map1=$(collector_metric ncclscope_collector_store_map_bytes)
    echo "map $map0 -> $map1 bytes under the slow stream"
    [ "$map1" -gt "$map0" ] || die "the map did not grow ($map0 -> $map1): the scenario was not reproduced"
    [ "$(collector_metric 'ncclscope_collector_query_cutoffs_total{reason="map_growth"}')" -ge 1 ] ||
        die "the slow stream was not cut off for the map growth"
    grep -q "stream cut off: the store's map must grow" "$dir/collector.log" || die "the cut-off was not logged"
    kill "${pids[slow]}" 2>/dev/null || true  # at 2 kB/s its socket buffers would take hours
    slow_stream
    kill -TERM "${pids[collector]}"
    i=0
    while kill -0 "${pids[collector]}" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 100 ] && die "SIGTERM did not end the collector within 10 s"; sleep 0.1
    done
    wait "${pids[collector]}" || die "collector exit status $?"
    unset "pids[collector]"
    kill "${pids[slow]}" 2>/dev/null || true
    "$bin/nsc-feed" --check "$dir/db" --agents 2 --procs 4 --colls 50 --batches 400 || die "store check"
    ;;
bigreq)
    start
    big_requests collector "${pids[collector]}" "127.0.0.1:$http" "$dir/collector.log" 1
    http_turns_ok
    m=ncclscope_collector_http_rejects_total
    [ "$(collector_metric "$m{reason=\"body_too_large\"}")" = 1 ] || die "body not counted"
    [ "$(collector_metric "$m{reason=\"head_too_large\"}")" = 2 ] || die "header and URL not counted"
    stop collector
    ;;
slowloris)
    start --http-header-timeout-ms 1000 --http-max-conns-per-client 1000
    slowloris "127.0.0.1:$http" "$dir/collector.log"
    http_turns_ok
    [ "$(collector_metric ncclscope_collector_http_header_timeouts_total)" -ge 300 ] || die "timeouts not counted"
    stop collector
    ;;
idlefds)
    ulimit -Sn 1024  # the collector's; hflood.py raises its own
    start --http-max-conns-per-client 5000
    health_watch "127.0.0.1:$http" 6
    "$hflood" hold "127.0.0.1:$http" 1100 6 > "$dir/hold" &
    pids[hold]=$!
    wait_until 10 collector_metric_above 'ncclscope_collector_http_refused_total{limit="total"}' 500 ||
        die "1100 idle connections were not held to the limit"
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 2 --batches 20 --timeout-ms 20000 > "$dir/out" ||
        die "a new agent could not deliver while HTTP was flooded: $(cat "$dir/out")"
    wait "${pids[hold]}"; unset "pids[hold]"
    health_ok 1
    http_turns_ok
    echo "idle flood: $(cat "$dir/hold"), limit $(collector_metric ncclscope_collector_http_connections_max)"
    grep -Eq "connections, the limit: closing (an idle one of the client with the most|the newest one), from 127.0.0.1" \
        "$dir/collector.log" || die "not logged"
    stop collector
    start  # the default per-client limit, 32
    r=$("$hflood" hold "127.0.0.1:$http" 100 2)
    echo "100 idle from one client: $r"
    [ "$r" = "open=100 closed=68" ] || die "per-client limit: $r"
    [ "$(collector_metric 'ncclscope_collector_http_refused_total{limit="per_client"}')" = 68 ] || die "not counted"
    grep -q "127.0.0.1 has http_max_conns_per_client (32) connections" "$dir/collector.log" || die "peer not logged"
    stop collector
    ;;
backoff)
    ulimit -Sn 64
    start --http-fd-reserve 0 --http-max-conns-per-client 1000 --http-header-timeout-ms 1000 --http-accept-backoff-ms 500
    r=$("$hflood" hold "127.0.0.1:$http" 200 3)
    echo "200 connections with 64 descriptors: $r"
    errors=$(collector_metric ncclscope_collector_http_accept_errors_total)
    lines=$(grep -c "http: accept(): Too many open files; not accepting for 500 ms" "$dir/collector.log" || true)
    echo "accept() failures: $errors, logged $lines times"
    [ "$errors" -ge 1 ] || die "accept() never failed: the scenario was not reproduced"
    [ "$lines" = "$errors" ] && [ "$lines" -le 20 ] || die "$lines log lines for $errors back-offs"
    ! grep -q "Error from accept() call" "$dir/collector.log" || die "libevent's accept() error spun"
    wait_until 10 curl -sf -o /dev/null "http://127.0.0.1:$http/healthz" || die "not serving after the back-off"
    stop collector
    ;;
sse)
    start --http-sse-buffer-kb 4 --http-write-timeout-ms 600000 --live-interval-ms 100
    "$bin/nsc-feed" --endpoint "tcp://127.0.0.1:$port" --agents 2 --procs 4 --batches 10 > /dev/null || die "feed"
    health_watch "127.0.0.1:$http" 4
    "$hflood" hold "127.0.0.1:$http" 20 90 --request /api/v1/live > /dev/null &
    pids[hold]=$!
    wait_until 60 collector_metric_is 'ncclscope_collector_http_cutoffs_total{reason="overfull"}' 20 ||
        die "never-reading live clients not cut off: $(collector_metric 'ncclscope_collector_http_cutoffs_total{reason="overfull"}')"
    wait_until 10 collector_metric_is ncclscope_collector_http_connections 1 || die "their connections were not freed"
    [ "$(collector_metric ncclscope_collector_live_clients)" = 0 ] || die "live clients kept: $(collector_metric ncclscope_collector_live_clients)"
    health_ok 1
    http_turns_ok
    grep -q "cutting 127.0.0.1 off: its reply's unsent output is over the limit" "$dir/collector.log" || die "not logged"
    timeout 1.5 curl -s -N "http://127.0.0.1:$http/api/v1/live" > "$dir/sse" || true
    grep -q '^event: summary' "$dir/sse" || die "a reading live client gets nothing"
    stop collector
    ;;
neverread)
    "$bin/nsc-feed" --direct "$dir/db" --agents 1 --procs 4 --batches 48 > "$dir/out" || die "nsc-feed --direct"
    start --http-write-timeout-ms 2000
    health_watch "127.0.0.1:$http" 6
    "$hflood" hold "127.0.0.1:$http" 8 90 --request "/api/v1/timeline?job=feed&comm=0xfeed&limit=1000000" > /dev/null &
    pids[hold]=$!
    wait_until 10 collector_metric_is ncclscope_collector_query_streams 8 || die "the 8 streams did not start"
    wait_until 30 collector_metric_is ncclscope_collector_query_streams 0 || die "the never-read streams kept their slots"
    [ "$(code /api/v1/comms)" = 200 ] || die "queries still refused after the cut-off"
    health_ok 1
    http_turns_ok
    [ "$(collector_metric 'ncclscope_collector_http_cutoffs_total{reason="stalled"}')" -ge 8 ] || die "cut-offs not counted"
    grep -q "cutting 127.0.0.1 off: it took nothing of its reply" "$dir/collector.log" || die "not logged"
    stop collector
    ;;
*)
    echo "usage: $0 BIN ingest|kill9|garbage|stream|slowgrow|bigreq|slowloris|idlefds|backoff|sse|neverread"; exit 2 ;;
esac
echo "collector_e2e $mode: ok"
