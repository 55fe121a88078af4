#!/bin/sh
# collector_e2e.sh BIN MODE: ncclscope-collector with real processes on loopback.
#   ingest:  4 agents x 150 batches, 40 sent again: every batch stored exactly
#            once, duplicates acknowledged again and counted, not stored.
#   kill9:   20 short rounds: nsc-feed writes while the collector is killed
#            with SIGKILL; the store must open and hold every acknowledged
#            batch exactly once; the next round restarts on the same store and
#            sends every sequence from 0 again (duplicates across a restart).
#   garbage: malformed messages of every kind and bad HTTP requests are
#            rejected and counted; the collector keeps serving.
#   stream:  a ~90 MB timeline read by a client limited to 40 MB/s streams
#            out whole (chunked) while the collector's anonymous memory
#            (RssAnon: the store's mmap aside) grows by less than 40 MiB; a
#            client that leaves mid-stream and a stop during a stream are
#            handled; a small result still comes whole with Content-Length.
#   slowgrow: a timeline read at 2 kB/s while ~6 M more events make the map
#            grow: /healthz answers within 2 s throughout, every batch is
#            acknowledged, the slow stream is cut off (logged and counted),
#            and SIGTERM with a slow client attached ends within 10 s.
# Ports are picked by the kernel (port 0) and read from --port-file.
set -u
BIN=$1
MODE=$2
T=$(mktemp -d /tmp/nsc_coll_e2e.XXXXXX)
CPID=
SLOW=
cleanup() {
    [ -n "$CPID" ] && kill -9 "$CPID" 2>/dev/null
    [ -n "$SLOW" ] && kill "$SLOW" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- collector log"; tail -20 "$T/log"; exit 1; }

start() {  # start [extra flags]: collector on the store $T/db
    rm -f "$T/ports"
    "$BIN/ncclscope-collector" --db "$T/db" --listen tcp://127.0.0.1:0 --http 127.0.0.1:0 \
        --port-file "$T/ports" "$@" 2>>"$T/log" &
    CPID=$!
    i=0
    while [ ! -s "$T/ports" ]; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "collector did not start"; sleep 0.05
    done
    ZP=$(awk '/^zmq/{print $2}' "$T/ports"); HP=$(awk '/^http/{print $2}' "$T/ports")
}
stop() { kill -TERM "$CPID"; wait "$CPID" || fail "collector exit status $?"; CPID=; }
metric() { curl -s -m 5 "http://127.0.0.1:$HP/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
code() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HP$1"; }

case $MODE in
ingest)
    start
    "$BIN/nsc-feed" --endpoint "tcp://127.0.0.1:$ZP" --agents 4 --batches 150 --resend 40 \
        --timeout-ms 30000 > "$T/out" || fail "not every batch was acknowledged: $(cat "$T/out")"
    grep -q '^resent_acked=yes' "$T/out" || fail "duplicates not acknowledged"
    [ "$(metric ncclscope_collector_duplicates_total)" = 160 ] || fail "duplicates_total $(metric ncclscope_collector_duplicates_total), want 160"
    [ "$(metric ncclscope_collector_batches_in_total)" = 600 ] || fail "batches_in_total $(metric ncclscope_collector_batches_in_total), want 600"
    stop
    "$BIN/nsc-feed" --check "$T/db" --agents 4 --batches 150 || fail "store check"
    # After a restart the same batches are duplicates: acknowledged, not stored.
    start
    "$BIN/nsc-feed" --endpoint "tcp://127.0.0.1:$ZP" --agents 4 --batches 150 --timeout-ms 30000 > "$T/out" \
        || fail "resent batches after restart not acknowledged"
    [ "$(metric ncclscope_collector_duplicates_total)" = 600 ] || fail "after restart: duplicates_total $(metric ncclscope_collector_duplicates_total), want 600"
    stop
    "$BIN/nsc-feed" --check "$T/db" --agents 4 --batches 150 || fail "store check after restart"
    ;;
kill9)
    : > "$T/acks"
    r=0
    while [ $r -lt 20 ]; do
        start
        # Every round starts at seq 0: what earlier rounds committed comes again
        # (duplicates across a restart), then new batches until the kill.
        "$BIN/nsc-feed" --endpoint "tcp://127.0.0.1:$ZP" --agents 3 --colls 20 \
            --batches 100000 --timeout-ms 5000 --ack-log "$T/acks" > /dev/null 2>&1 &
        FP=$!
        sleep 0.$((3 + r % 5))
        kill -9 "$CPID"; wait "$CPID" 2>/dev/null; CPID=
        kill "$FP" 2>/dev/null; wait "$FP" 2>/dev/null
        "$BIN/nsc-feed" --check "$T/db" --agents 3 --colls 20 --ack-log "$T/acks" > "$T/check" \
            || fail "round $r: $(cat "$T/check")"
        r=$((r + 1))
    done
    grep acks_checked "$T/check"
    ;;
garbage)
    echo secret > "$T/token"
    start --token-file "$T/token"
    "$BIN/nsc-feed" --endpoint "tcp://127.0.0.1:$ZP" --agents 2 --batches 20 --garbage \
        --timeout-ms 30000 > "$T/out" || fail "valid batches after garbage not acknowledged"
    [ "$(code /healthz)" = 200 ] || fail "healthz"
    [ "$(code /metrics)" = 401 ] || fail "metrics without token: $(code /metrics)"
    A="Authorization: Bearer secret"
    m=$(curl -s -H "$A" "http://127.0.0.1:$HP/metrics")
    for r in multipart kind a2c_empty a2c_truncated a2c_bad_type section_truncated; do
        echo "$m" | grep -q "^ncclscope_collector_rejects_total{agent=\"[a-z]*\",reason=\"$r\"} [1-9]" || fail "reject $r not counted"
    done
    c() { curl -s -o "$T/body" -w '%{http_code}' -H "$A" "http://127.0.0.1:$HP$1"; }
    [ "$(c '/api/v1/timeline?t0_ns=abc')" = 400 ] || fail "bad parameter not 400"
    grep -q '"error"' "$T/body" || fail "no JSON error"
    [ "$(c '/api/v1/nothing')" = 404 ] || fail "unknown path not 404"
    [ "$(c '/api/v1/comms?job=nosuchjob')" = 404 ] || fail "unknown job not 404: $(cat "$T/body")"
    [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "$A" "http://127.0.0.1:$HP/api/v1/status")" = 405 ] || fail "POST not 405"
    # An SSE client that goes away, then the collector still answers.
    timeout 1.5 curl -s -N -H "$A" "http://127.0.0.1:$HP/api/v1/live" > "$T/sse"
    grep -q '^event: summary' "$T/sse" || fail "no live summary"
    [ "$(c '/api/v1/status')" = 200 ] || fail "status after garbage"
    grep -q '"ranks_seen":2' "$T/body" || fail "status: $(head -c 300 "$T/body")"
    "$BIN/nsc-feed" --endpoint "tcp://127.0.0.1:$ZP" --agents 2 --batches 30 --timeout-ms 30000 > "$T/out" \
        || fail "collector stopped serving"
    stop
    "$BIN/nsc-feed" --check "$T/db" --agents 2 --batches 30 || fail "store check"
    ;;
stream)
    "$BIN/nsc-feed" --direct "$T/db" --agents 1 --procs 4 --batches 48 > "$T/out" || fail "nsc-feed --direct"
    # Under AddressSanitizer freed memory waits in a quarantine (256 MiB by
    # default) and would count as growth; keep it small (no effect otherwise).
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4" start
    Q="http://127.0.0.1:$HP/api/v1/timeline?job=feed&comm=0xfeed&limit=1000000"
    anon() { awk '/^RssAnon/ {print $2}' "/proc/$CPID/status"; }
    base=$(anon)
    curl -s -D "$T/hdr" -o "$T/big" --limit-rate 40M "$Q" &
    CURL=$!
    peak=$base
    while kill -0 $CURL 2>/dev/null; do
        a=$(anon); [ "$a" -gt "$peak" ] && peak=$a; sleep 0.05
    done
    wait $CURL || fail "curl failed"
    size=$(stat -c %s "$T/big")
    echo "timeline: $size bytes; collector RssAnon $base kB before, $peak kB at most"
    [ "$size" -gt 50000000 ] || fail "timeline only $size bytes"
    grep -qi '^transfer-encoding: chunked' "$T/hdr" || fail "not chunked: $(cat "$T/hdr")"
    tail -n 1 "$T/big" | grep -q '^{"kind":"end","events":' || fail "no end line: $(tail -c 200 "$T/big")"
    [ $((peak - base)) -lt 40960 ] || fail "RssAnon grew by $((peak - base)) kB"
    # Small results: whole, with a length.
    curl -s -D "$T/hdr" -o /dev/null "http://127.0.0.1:$HP/api/v1/comms"
    grep -qi '^content-length:' "$T/hdr" || fail "small reply not whole: $(cat "$T/hdr")"
    # A client that leaves part way; then the collector still answers.
    curl -s -o /dev/null --limit-rate 1M --max-time 0.5 "$Q"
    [ "$(code /api/v1/comms)" = 200 ] || fail "no answer after a client left mid-stream"
    # Stop while a slow client is reading: clean exit.
    curl -s -o /dev/null --limit-rate 1M --max-time 5 "$Q" &
    CURL=$!
    sleep 0.5
    stop
    wait $CURL
    ;;
slowgrow)
    # Issue 15's deadlock: a stream read by a slow client holds a store
    # reader; the map must grow under it. Health stays answered, every batch
    # is acknowledged, the stream is cut off (logged, counted), and a stop
    # with another slow client attached ends within 10 s.
    start --map-initial-mb 4
    feed() {  # feed FIRST: 2 agents x 4 processes x 200 batches (~6 M events)
        "$BIN/nsc-feed" --endpoint "tcp://127.0.0.1:$ZP" --agents 2 --procs 4 --batches 200 \
            --colls 50 --first "$1" --timeout-ms 60000 > "$T/out" ||
            fail "not every batch was acknowledged: $(cat "$T/out")"
    }
    feed 0
    map0=$(metric ncclscope_collector_store_map_bytes)
    Q="http://127.0.0.1:$HP/api/v1/timeline?job=feed&comm=0xfeed"
    slow_stream() {  # a client at 2 kB/s; waits until the collector streams to it
        rm -f "$T/slow.out"
        curl -s -o "$T/slow.out" --limit-rate 2k "$Q" &
        SLOW=$!
        i=0
        until [ -s "$T/slow.out" ]; do
            i=$((i + 1)); [ $i -gt 200 ] && fail "the slow stream did not start"; sleep 0.05
        done
        sleep 1  # the worker fills its buffer and waits for the client
    }
    slow_stream
    : > "$T/health"
    (while [ -e "$T/health" ]; do
        curl -sf -m 2 -o /dev/null "http://127.0.0.1:$HP/healthz" || echo "healthz unanswered in 2 s at $(date +%T.%N)" >> "$T/health.fail"
        sleep 0.1
    done) &
    POLL=$!
    feed 200
    rm -f "$T/health"
    wait $POLL
    [ ! -e "$T/health.fail" ] || fail "$(cat "$T/health.fail")"
    map1=$(metric ncclscope_collector_store_map_bytes)
    echo "map $map0 -> $map1 bytes under the slow stream"
    [ "$map1" -gt "$map0" ] || fail "the map did not grow ($map0 -> $map1): the scenario was not reproduced"
    [ "$(metric 'ncclscope_collector_query_cutoffs_total{reason="map_growth"}')" -ge 1 ] ||
        fail "the slow stream was not cut off for the map growth"
    grep -q "stream cut off: the store's map must grow" "$T/log" || fail "the cut-off was not logged"
    kill "$SLOW" 2>/dev/null || true  # at 2 kB/s its socket buffers would take hours
    slow_stream
    kill -TERM "$CPID"
    i=0
    while kill -0 "$CPID" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "SIGTERM did not end the collector within 10 s"; sleep 0.1
    done
    wait "$CPID" || fail "collector exit status $?"
    CPID=
    kill "$SLOW" 2>/dev/null || true
    "$BIN/nsc-feed" --check "$T/db" --agents 2 --procs 4 --colls 50 --batches 400 || fail "store check"
    ;;
*)
    echo "usage: $0 BIN ingest|kill9|garbage|stream|slowgrow"; exit 2 ;;
esac
echo "collector_e2e $MODE: ok"
