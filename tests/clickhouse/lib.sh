# lib.sh: real clickhouse-server instances for the ClickHouse store's tests
# (sourced after tests/e2e/lib.sh, which gives $dir, pids, die and waits).
# Each instance runs from its own folder $dir/ch/NAME (config, data, logs) on
# loopback, as the test's user, with both ports picked by the kernel (port 0):
# ClickHouse writes no port file, so the ports are read back from the
# listening sockets of its pid (ss), and the HTTP one is the port that answers
# /ping; nothing is bound, closed and handed over, so no other process can
# take a port in between.
#   ch_require          fail (or skip, 77, where no package provides it)
#                       without clickhouse-server
#   ch_current          print the path of a current ClickHouse release, as
#                       chDB's libchdb.so ($NSC_CHDB_LIB, else where
#                       scripts/deps.sh --test put it); fail where it is
#                       missing but could be installed, skip (77) where
#                       deps.sh found none for this machine
#   ch_start NAME [XML] start instance NAME, XML added to its config;
#                       sets chhttp[NAME] and chtcp[NAME] (and chhttps[NAME]
#                       with ch_secure). Started again
#                       (after a kill) it keeps its data and its ports: the
#                       cluster's configuration names them
#   ch_cluster          shard0 and shard1, and front, whose remote_servers
#                       define cluster "nsc" over the two shards
#   ch_sql NAME QUERY   run QUERY on NAME, print the answer (TabSeparated)
#   ch_log_queries      from now on instances log every query in
#                       system.query_log (what a benchmark reads back: the
#                       rows and parts each SELECT read)
#   ch_selects NAME [TABLE]  "COUNT ROWS": the SELECTs of the store's
#                       tables NAME finished so far (of table TABLE alone:
#                       FROM nsc.TABLE, a Distributed one on front) and the
#                       rows they read (query_log, logs flushed first)
#   ch_shard_rows       the rows both shards' SELECTs read so far, once
#                       none is running; ch_read_log NAME: NAME's 12
#                       latest store SELECTs and the rows each read
#   ch_unacked_job AGENT-ARGS... -- EMULATE-ARGS...  a job in ClickHouse
#                       whose agents got no acknowledgement (below)
#   ch_lmdb_job EMULATE-ARGS...  one emulated job stored both in ClickHouse
#                       and by an LMDB collector left running (below)
#   ch_secure           from now on instances also serve HTTPS (a
#                       self-signed certificate for 127.0.0.1 in
#                       $dir/ch/tls/server.crt) and know user nsc with the
#                       password in $dir/ch/tls/password (default stays open
#                       for the test's own queries)
#   kill9 NAME          SIGKILL a process of pids and reap it
declare -A chhttp=() chtcp=() chhttps=()
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/chdb.env"
ch_tls=
ch_users=

ch_require() {
    command -v clickhouse-server >/dev/null && return 0
    if apt-cache show clickhouse-server >/dev/null 2>&1; then
        echo "${0##*/}: clickhouse-server is not installed: run scripts/deps.sh --test" >&2
        exit 1
    fi
    echo "${0##*/}: skipped: no clickhouse-server package for this system" >&2
    exit 77
}

ch_current() {
    local lib=${NSC_CHDB_LIB:-$CHDB_DIR/libchdb.so}
    [ -r "$lib" ] && { echo "$lib"; return 0; }
    if [ -z "${NSC_CHDB_LIB:-}" ] && [ -r "$CHDB_DIR.unavailable" ]; then
        echo "${0##*/}: skipped: no current ClickHouse release: $(cat "$CHDB_DIR.unavailable")" >&2
        return 77
    fi
    echo "${0##*/}: no current ClickHouse release at $lib: run scripts/deps.sh --test" >&2
    return 1
}

# ch_ports NAME PID: PID's listening ports, each told apart by what answers
# /ping on it (plain HTTP, or HTTPS with ch_secure; else the native port).
ch_ports() {
    local p ports want=$((${ch_tls:+1} + 2))
    ports=$(ss -ltnpH 2>/dev/null | awk -v pid="pid=$2," 'index($0, pid) { n = split($4, a, ":"); print a[n] }')
    [ "$(echo "$ports" | wc -w)" = $want ] || return 1
    for p in $ports; do
        if [ "$(curl -s -m 2 "http://127.0.0.1:$p/ping")" = "Ok." ]; then
            chhttp[$1]=$p
        elif [ -n "$ch_tls" ] && [ "$(curl -s -m 2 --cacert "$ch_tls/server.crt" "https://127.0.0.1:$p/ping")" = "Ok." ]; then
            chhttps[$1]=$p
        else
            chtcp[$1]=$p
        fi
    done
    [ -n "${chhttp[$1]:-}" ] && [ -n "${chtcp[$1]:-}" ] && { [ -z "$ch_tls" ] || [ -n "${chhttps[$1]:-}" ]; }
}

# ch_tls_xml NAME: the HTTPS port and certificate of NAME's config (ch_secure).
ch_tls_xml() {
    [ -n "$ch_tls" ] || return 0
    echo "<https_port>${chhttps[$1]:-0}</https_port>
  <openSSL><server><certificateFile>$ch_tls/server.crt</certificateFile>
    <privateKeyFile>$ch_tls/server.key</privateKeyFile><verificationMode>none</verificationMode>
    <loadDefaultCAFile>false</loadDefaultCAFile></server></openSSL>"
}

ch_secure() {
    ch_tls=$dir/ch/tls
    mkdir -p "$ch_tls"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
        -keyout "$ch_tls/server.key" -out "$ch_tls/server.crt" 2>"$ch_tls/openssl.log" ||
        die "openssl cannot make a certificate: $(tail -n 2 "$ch_tls/openssl.log")"
    head -c 18 /dev/urandom | base64 | tr '+/' 'xy' >"$ch_tls/password"
    sed "s|<users>|<users><nsc><password>$(cat "$ch_tls/password")</password><networks><ip>::/0</ip></networks><profile>default</profile><quota>default</quota></nsc>|" \
        /etc/clickhouse-server/users.xml >"$ch_tls/users.xml"
}

ch_start() {
    local name=$1 extra=${2:-} d=$dir/ch/$1
    mkdir -p "$d/data"
    cat >"$d/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$d/server.log</log><errorlog>$d/error.log</errorlog></logger>
  <http_port>${chhttp[$1]:-0}</http_port>
  <tcp_port>${chtcp[$1]:-0}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$d/data/</path>
  <tmp_path>$d/data/tmp/</tmp_path>
  <user_files_path>$d/data/user_files/</user_files_path>
  <format_schema_path>$d/data/format_schemas/</format_schema_path>
  <users_config>${ch_users:-${ch_tls:-/etc/clickhouse-server}/users.xml}</users_config>
  ${ch_users:+<query_log><database>system</database><table>query_log</table></query_log>}
  $(ch_tls_xml "$1")
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  $extra
</yandex>
XML
    clickhouse-server --config-file="$d/config.xml" >"$d/stdout.log" 2>&1 &
    pids[ch_$name]=$!
    wait_until 60 ch_ports "$name" "${pids[ch_$name]}" ||
        die "clickhouse-server $name did not start ($(tail -n 3 "$d/error.log" 2>/dev/null))"
}

ch_sql() {
    curl -sS -m 60 --fail-with-body "http://127.0.0.1:${chhttp[$1]}/" --data-binary "$2"
}

# log_queries is a setting of the user's profile, not of the server: the
# default profile of the users file gets it.
ch_log_queries() {
    ch_users=$dir/ch/users.xml
    mkdir -p "$dir/ch"
    sed '0,/<default>/s|<default>|<default><log_queries>1</log_queries>|' \
        "${ch_tls:-/etc/clickhouse-server}/users.xml" >"$ch_users"
}

# A SELECT of the store's tables (in query_log or system.processes): the
# live state's polls are not a query's.
ch_store_select="query LIKE 'SELECT%' AND query NOT LIKE '%system.%' AND query NOT LIKE '%.live%'"
# query_log's type 2 is QueryFinish (an Enum in later releases, a number in
# 18.16).
ch_selects() {
    ch_sql "$1" "SYSTEM FLUSH LOGS" >/dev/null
    ch_sql "$1" "SELECT count(), sum(read_rows) FROM system.query_log WHERE type = 2 AND $ch_store_select
        ${2:+ AND query LIKE '%FROM nsc.$2 %'}"
}

ch_cluster() {
    ch_start shard0
    ch_start shard1
    ch_start front "<remote_servers><nsc>
      <shard><replica><host>127.0.0.1</host><port>${chtcp[shard0]}</port></replica></shard>
      <shard><replica><host>127.0.0.1</host><port>${chtcp[shard1]}</port></replica></shard>
    </nsc></remote_servers>"
}

# ch_cluster_store: ch_cluster, and the --store ($store) and --ch-shards
# ($shards) of a collector on it.
ch_cluster_store() {
    ch_cluster
    store="clickhouse://127.0.0.1:${chhttp[front]}/nsc?cluster=nsc"
    shards="127.0.0.1:${chhttp[shard0]},127.0.0.1:${chhttp[shard1]}"
}

kill9() {
    kill -KILL "${pids[$1]}"
    wait "${pids[$1]}" 2>/dev/null || true
    unset "pids[$1]"
}

# ch_unacked_job AGENT-ARGS... -- EMULATE-ARGS...: a collector on ClickHouse
# ($store, $shards) takes the whole emulated job acknowledging none of it
# (the agents, given AGENT-ARGS too, hold every batch in flight), then the
# agents are stopped (SIGSTOP) and the collector stops, inserting the job and
# acknowledging into the void; $emitted is the job's events. The caller ends
# the stopped agents.
ch_unacked_job() {
    local agent_args=()
    while [ "$1" != -- ]; do agent_args+=("$1"); shift; done
    shift
    # a credit as large as the agents' window: the collector enforces credit
    start_collector 0 --store "$store" --ch-shards "$shards" --ch-flush-ms 3600000 --ch-flush-mb 65536 \
        --group-max 1000000 --credit 65536
    local n
    for n in 0 1; do
        start_agent $n --window 65536 --max-inflight 65536 --max-inflight-mb 4096 --ack-timeout-ms 3600000 \
            "${agent_args[@]}"
    done
    # every batch handed to the agents at the ranks' exit, however long a
    # loaded machine keeps them from taking it (1 s by default: under the
    # sanitizers some were given up, and the job never arrived whole)
    NCCLSCOPE_FLUSH_MS=60000 emulate "$@"
    emitted=$("$bin/nsc-ch-check" "$dir/emu.json" --emitted)
    # the collector counts what it stored, nothing here yet: every event sent
    # by the agents, their ledger too (no record held open, every batch they
    # spooled sent: else whether ClickHouse gets the ledger depends on how
    # soon this loop looks), and each batch they sent taken by the collector
    # (its messages less the clock probes and samples)
    sent_whole() {
        local events=0 batches=0 n
        for n in 0 1; do
            metric_is $n ncclscope_agent_ledger_open 0 &&
                [ "$(metric $n ncclscope_agent_spool_batches_total)" = "$(metric $n ncclscope_agent_forward_batches_sent_total)" ] ||
                return 1
            events=$((events + $(metric $n ncclscope_agent_forward_events_sent_total)))
            batches=$((batches + $(metric $n ncclscope_agent_forward_batches_sent_total)))
        done
        local taken=$(($(collector_metric ncclscope_collector_messages_in_total) -
            $(collector_metric ncclscope_collector_probes_total) - $(collector_metric ncclscope_collector_samples_total)))
        [ "$events" = "$emitted" ] && [ "$taken" = "$batches" ]
    }
    wait_until 600 sent_whole ||
        die "the collector did not get the whole job ($(metric 0 ncclscope_agent_forward_events_sent_total) + $(metric 1 ncclscope_agent_forward_events_sent_total) events sent of $emitted)"
    [ "$(collector_metric ncclscope_collector_acks_total)" = 0 ] || die "batches acknowledged before the stop"
    kill -STOP "${pids[agent0]}" "${pids[agent1]}"
    stop collector
}

# ch_lmdb_job EMULATE-ARGS...: the same batches of one emulated job in
# ClickHouse (ch_unacked_job) and in an LMDB collector left running
# (pids[collector_lmdb], HTTP port $http_lmdb, store $dir/lmdb): the agents,
# killed -9, start again with the LMDB collector and their spools send it
# every batch again. No clock probes: each collector would fit clock models
# of its own from its own samples.
ch_lmdb_job() {
    ch_unacked_job --probe-ms 0 -- "$@"
    kill9 agent0
    kill9 agent1
    start_collector 0 --db "$dir/lmdb"
    pids[collector_lmdb]=${pids[collector]} http_lmdb=$http
    unset "pids[collector]"
    start_agent 0 --probe-ms 0
    start_agent 1 --probe-ms 0
    wait_until 600 collector_metric_is ncclscope_collector_events_in_total "$emitted" ||
        die "the LMDB collector did not get the whole job ($(collector_metric ncclscope_collector_events_in_total) of $emitted)"
    local n
    for n in 0 1; do wait_until 600 delivered $n || die "node $n did not deliver its spool"; done
    for n in 0 1; do stop agent$n; done
}

# Shared by the ClickHouse benchmarks (tests/bench/bench_ch*.sh).
# ch_settled: no merge runs on either shard (the ask that follows times the
# reads, not ClickHouse's merging of the inserts just made).
ch_settled() {
    [ "$(ch_sql shard0 "SELECT count() FROM system.merges")$(ch_sql shard1 "SELECT count() FROM system.merges")" = 00 ]
}
# ch_shard_rows: the rows both shards' SELECTs read so far, once none runs.
# A shard's part of a query with a LIMIT may still run (and log its rows
# later) after the front answered and cancelled it: counted then, its rows
# would be the next query's.
ch_shard_running() {
    [ "$(ch_sql "$1" "SELECT count() FROM system.processes WHERE $ch_store_select")" = 0 ]
}
ch_shard_rows() {
    wait_until 30 eval 'ch_shard_running shard0 && ch_shard_running shard1' || die "a shard's SELECT ran for 30 s"
    echo $(($(ch_selects shard0 | cut -f2) + $(ch_selects shard1 | cut -f2)))
}
# ch_read_log NAME: NAME's latest store SELECTs, newest first (what a
# failing count of rows read shows).
ch_read_log() {
    ch_sql "$1" "SELECT event_time, read_rows, substring(replaceAll(query, '\n', ' '), 1, 300) FROM system.query_log
        WHERE type = 2 AND $ch_store_select ORDER BY event_time DESC LIMIT 12 FORMAT TabSeparated"
}
# ch_median TIMES...: "median M s, best B s".
ch_median() {
    python3 -c 'import statistics,sys; t=[float(x) for x in sys.argv[1:]]
print("median %.3f s, best %.3f s" % (statistics.median(t), min(t)))' "$@"
}
# ch_time_query Q OUT TRIES: asks the collector on $http (and the baseline's on
# $http_base, when set) for /api/v1/Q, TRIES times each, the answers in OUT
# (OUT.base); sets rows (ClickHouse rows read by a first ask), read (bytes the
# collector read per ask), times and base_times (curl's time_total).
ch_time_query() {
    local q=$1 out=$2 tries=$3
    times=() base_times=()
    rows=$(ch_shard_rows)
    curl -sf -m 600 -o /dev/null "http://127.0.0.1:$http/api/v1/$q" || die "$q failed"
    rows=$(($(ch_shard_rows) - rows))
    read=$(collector_metric ncclscope_collector_query_read_bytes_total)
    for _ in $(seq "$tries"); do
        [ -z "$http_base" ] || base_times+=("$(curl -sf -m 600 -o "$out.base" -w '%{time_total}' \
            "http://127.0.0.1:$http_base/api/v1/$q")") || die "$q failed (baseline)"
        times+=("$(curl -sf -m 600 -o "$out" -w '%{time_total}' "http://127.0.0.1:$http/api/v1/$q")") ||
            die "$q failed"
    done
    read=$((($(collector_metric ncclscope_collector_query_read_bytes_total) - read) / tries))
}
