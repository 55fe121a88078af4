/* config.c: the collector's option table and its sources (see config.h). */
#include "config.h"

#include <string.h>

#include "cfg.h"

#define TXT(...) NSC_OPT_TXT(nsc_coll_cfg, __VA_ARGS__)
#define NUM(...) NSC_OPT_NUM(nsc_coll_cfg, __VA_ARGS__)
#define KB(...) NSC_OPT_KB(nsc_coll_cfg, __VA_ARGS__)
#define MB(...) NSC_OPT_MB(nsc_coll_cfg, __VA_ARGS__)
#define MS(...) NSC_OPT_MS(nsc_coll_cfg, __VA_ARGS__)
#define SEC(...) NSC_OPT_S(nsc_coll_cfg, __VA_ARGS__)

static const nsc_opt opts[] = {
    TXT("listen", "NCCLSCOPE_COLLECTOR_LISTEN", listen, "tcp://127.0.0.1:7760", "ZeroMQ endpoint the agents connect to (tcp://ADDR:PORT, port 0 picks one)"),
    TXT("clock_udp", "NCCLSCOPE_CLOCK_UDP", clock_udp, "listen", "UDP ADDR:PORT where clock probes are answered (port 0 picks one; 'listen': listen's address, a port picked; 'off': probes over ZeroMQ only, as with CURVE)"),
    TXT("http", "NCCLSCOPE_COLLECTOR_HTTP", http, "127.0.0.1:7761", "HTTP API address (ADDR:PORT, port 0 picks one, 'off')"),
    TXT("db", "NCCLSCOPE_DB", db, "/var/lib/ncclscope/db", "LMDB store directory (created if missing); with clickhouse, the query cache's"),
    TXT("store", "NCCLSCOPE_STORE", store, "lmdb", "where batches go: lmdb (the db directory) or clickhouse://HOST:HTTP_PORT/DB[?cluster=NAME] (docs/clickhouse.md)"),
    TXT("ch_shards", "NCCLSCOPE_CH_SHARDS", ch_shards, "", "clickhouse: HOST:HTTP_PORT,... of the shards whose local tables the collector creates (empty: the store's server)"),
    TXT("ch_user", "NCCLSCOPE_CH_USER", ch_user, "", "clickhouse: user name (HTTP basic authentication; empty: the server's default user)"),
    TXT("ch_password_file", "NCCLSCOPE_CH_PASSWORD_FILE", ch_password_file, "", "clickhouse: file whose first line is ch_user's password (empty: none)"),
    NUM("ch_tls", "NCCLSCOPE_CH_TLS", ch_tls, "0", "clickhouse: 1 reaches every server by https (their HTTPS ports), verifying its certificate"),
    TXT("ch_ca_file", "NCCLSCOPE_CH_CA_FILE", ch_ca_file, "", "clickhouse: CA certificates (PEM) that verify the servers (empty: the system's)"),
    NUM("ch_query_cache", "NCCLSCOPE_CH_QUERY_CACHE", ch_query_cache, "4", "clickhouse: jobs kept between queries, read again only when changed (0..256; 0: every query reads its jobs)"),
    NUM("ch_scope_records", "NCCLSCOPE_CH_SCOPE_RECORDS", ch_scope_records, "65536", "clickhouse: a ledger, collectives or stats window of at most this many records reads them alone from ledger_recs, a wider one the ledger batches holding them (0: always the batches)"),
    MS("ch_flush_ms", "NCCLSCOPE_CH_FLUSH_MS", ch_flush_ms, "1000", "clickhouse: a batch waits at most this long for the insert that holds it"),
    TXT("collector_id", "NCCLSCOPE_COLLECTOR_ID", collector_id, "", "clickhouse: this collector's name among those sharing the store, for its live snapshot (empty: HOSTNAME:ZMQ_PORT)"),
    MB("ch_flush_mb", "NCCLSCOPE_CH_FLUSH_MB", ch_flush_mb, "128", "clickhouse: insert as soon as this many MiB of rows wait"),
    TXT("token_file", "NCCLSCOPE_TOKEN_FILE", token_file, "", "file holding the HTTP bearer token (empty: no token)"),
    TXT("curve_secret_file", "NCCLSCOPE_CURVE_SECRET_FILE", curve_secret_file, "", "CURVE server secret key file (ncclscope-agent --gen-keys makes one; empty: no CURVE)"),
    TXT("port_file", "NCCLSCOPE_COLLECTOR_PORT_FILE", port_file, "", "write the bound ports here ('zmq P', 'http P' and 'udp P' lines; udp 0: no UDP clock port)"),
    MB("map_initial_mb", "NCCLSCOPE_MAP_INITIAL_MB", map_initial_mb, "64", "initial LMDB map size; it doubles when full"),
    MB("map_max_mb", "NCCLSCOPE_MAP_MAX_MB", map_max_mb, "1048576", "the map grows up to this"),
    MB("retain_mb", "NCCLSCOPE_RETAIN_MB", retain_mb, "0", "delete the oldest blocks beyond this many MiB in use (0: no limit)"),
    SEC("retain_age_s", "NCCLSCOPE_RETAIN_AGE_S", retain_age_s, "0", "delete blocks committed longer ago than this (0: keep)"),
    NUM("credit", "NCCLSCOPE_CREDIT", credit, "32", "batches an agent may send beyond those acknowledged"),
    MB("max_msg_mb", "NCCLSCOPE_MAX_MSG_MB", max_msg_mb, "64", "largest message accepted (ZMQ_MAXMSGSIZE)"),
    NUM("group_max", "NCCLSCOPE_GROUP_MAX", group_max, "256", "batches committed in one transaction at most"),
    SEC("clock_persist_s", "NCCLSCOPE_CLOCK_PERSIST_S", clock_persist_s, "5", "clock models are written to the store this often"),
    MS("heartbeat_timeout_ms", "NCCLSCOPE_HEARTBEAT_TIMEOUT_MS", heartbeat_timeout_ms, "15000", "a process or agent silent this long is reported dead"),
    MS("hang_ms", "NCCLSCOPE_HANG_MS", hang_ms, "10000", "lag/hang threshold: ranks behind (or a collective in flight) this long"),
    MS("live_interval_ms", "NCCLSCOPE_LIVE_INTERVAL_MS", live_interval_ms, "1000", "period of /api/v1/live summaries"),
    NUM("metrics_max_comms", "NCCLSCOPE_METRICS_MAX_COMMS", metrics_max_comms, "128", "communicators in /metrics at most, the most recently active (0..4096)"),
    NUM("metrics_max_hosts", "NCCLSCOPE_METRICS_MAX_HOSTS", metrics_max_hosts, "256", "hosts (and host pairs) in the root-cause metrics at most, those with the most causes (0..4096)"),
    MS("rootcause_interval_ms", "NCCLSCOPE_ROOTCAUSE_INTERVAL_MS", rootcause_interval_ms, "30000", "diagnose every job of the live state this often for the root-cause metrics (0: never)"),
    MS("rootcause_trigger_ms", "NCCLSCOPE_ROOTCAUSE_TRIGGER_MS", rootcause_trigger_ms, "1000", "a root-cause pass also runs once new ledger records were stored, this long after the last pass at the soonest (0: only every rootcause_interval_ms)"),
    NUM("rootcause_window_seqs", "NCCLSCOPE_ROOTCAUSE_WINDOW_SEQS", rootcause_window_seqs, "2048", "a root-cause pass reads each communicator from the last pass's settled point, its last this many seqs at most; verdicts found before stay (0: the whole job at every pass)"),
    MS("rootcause_p2p_lag_ms", "NCCLSCOPE_ROOTCAUSE_P2P_LAG_MS", rootcause_p2p_lag_ms, "10000", "a root-cause pass settles a communicator's Send/Recv pairs only this long before its latest event; a record later than this behind its rank's later ones is missed"),
    MS("rootcause_recheck_ms", "NCCLSCOPE_ROOTCAUSE_RECHECK_MS", rootcause_recheck_ms, "10000", "a job whose processes all stopped is analysed again when the store holds more of it until this long after they stopped (its version read at every pass until then)"),
    TXT("webhook_url", "NCCLSCOPE_WEBHOOK_URL", webhook_url, "", "POST each verdict of the root-cause passes here as JSON once it settled (http:// or https://; empty: no webhook)"),
    NUM("webhook_queue", "NCCLSCOPE_WEBHOOK_QUEUE", webhook_queue, "256", "verdicts waiting for the webhook at most; more are dropped, counted (1..65536)"),
    MS("webhook_timeout_ms", "NCCLSCOPE_WEBHOOK_TIMEOUT_MS", webhook_timeout_ms, "2000", "a webhook POST without an answer this long has failed"),
    NUM("webhook_retries", "NCCLSCOPE_WEBHOOK_RETRIES", webhook_retries, "5", "retries of a failed webhook POST before the verdict is given up (0..30)"),
    MS("webhook_backoff_ms", "NCCLSCOPE_WEBHOOK_BACKOFF_MS", webhook_backoff_ms, "500", "wait before the first retry; it doubles at each retry, to 60 s at most"),
    MS("webhook_settle_ms", "NCCLSCOPE_WEBHOOK_SETTLE_MS", webhook_settle_ms, "3000", "a verdict is posted once every root-cause pass over this long found it (one found on a partial view, a share of the job still on its way, is gone before then)"),
    TXT("detail", "NCCLSCOPE_COLLECTOR_DETAIL", detail, "all", "all: the agents send every raw event; on-demand: they keep them (agent detail = on-demand) and timeline, export and the web timeline fetch their window first"),
    MS("detail_wait_ms", "NCCLSCOPE_DETAIL_WAIT_MS", detail_wait_ms, "5000", "detail = on-demand: a query waits this long at most for the agents' detail, then answers with what is held and says what is missing"),
    MS("detail_span_ms", "NCCLSCOPE_DETAIL_SPAN_MS", detail_span_ms, "10000", "detail = on-demand: each verdict (hang, stall, straggler, slow link or NIC) fetches its job's detail this long before and after it, and keeps it"),
    /* HTTP limits */
    NSC_HGUARD_OPTS(nsc_coll_cfg, hg, "NCCLSCOPE_COLLECTOR"),
    KB("http_sse_buffer_kb", "NCCLSCOPE_COLLECTOR_HTTP_SSE_BUFFER_KB", http_sse_buffer_kb, "1024", "a /api/v1/live client with more unsent output than this is cut off"),
    /* limits on what a peer can make the collector hold (each hit is counted and logged) */
    NUM("max_ranks", "NCCLSCOPE_MAX_RANKS", max_ranks, "65536", "ranks a communicator may claim; a batch with a context beyond it is rejected (1..1048576)"),
    NUM("max_jobs", "NCCLSCOPE_MAX_JOBS", max_jobs, "1024", "jobs the live state tracks at once; batches of others are stored, not tracked"),
    NUM("max_comms_per_job", "NCCLSCOPE_MAX_COMMS_PER_JOB", max_comms_per_job, "16384", "communicators the live state tracks per job"),
    NUM("max_procs_per_job", "NCCLSCOPE_MAX_PROCS_PER_JOB", max_procs_per_job, "16384", "processes the live state tracks per job"),
    NUM("max_procs_per_agent", "NCCLSCOPE_MAX_PROCS_PER_AGENT", max_procs_per_agent, "4096", "processes the live state tracks per agent"),
    NUM("live_open_colls", "NCCLSCOPE_LIVE_OPEN_COLLS", live_open_colls, "256", "collectives per communicator the live state holds until every rank's ledger record came (then figured); one still open when a collective this many seqs later comes gives way, counted"),
    NUM("max_hosts", "NCCLSCOPE_MAX_HOSTS", max_hosts, "4096", "hosts with a clock model (kept and stored); samples of others are refused"),
    NUM("max_hosts_per_agent", "NCCLSCOPE_MAX_HOSTS_PER_AGENT", max_hosts_per_agent, "16", "hosts one agent's clock samples may give a model (an agent probes for its own host)"),
    NUM("max_agents", "NCCLSCOPE_MAX_AGENTS", max_agents, "1024", "agents (routing ids) with batches in the collector at once; with credit, bounds the writer's queue"),
    SEC("live_evict_s", "NCCLSCOPE_LIVE_EVICT_S", live_evict_s, "3600", "a job whose processes all ended and that sent nothing this long ago leaves the live state (its records stay in the store; 0: never)"),
};

static const nsc_cfg_spec spec = {
    .prog = "ncclscope-collector",
    .about = "usage: ncclscope-collector [--config FILE] [--OPTION VALUE]...\n"
             "The ncclscope collector: agents' batches into an LMDB store (or ClickHouse),\n"
             "live state and the HTTP API.\n",
    .config_env = "NCCLSCOPE_COLLECTOR_CONFIG",
    .opts = opts,
    .nopts = sizeof opts / sizeof opts[0],
};

static int check(const nsc_coll_cfg *cfg, FILE *err)
{
    if (cfg->credit == 0 || cfg->credit > 65536 || cfg->group_max == 0 || cfg->max_msg_mb == 0 ||
        cfg->max_msg_mb > 1024 || cfg->live_interval_ms == 0 || cfg->map_initial_mb == 0 ||
        cfg->map_max_mb < cfg->map_initial_mb || cfg->metrics_max_comms > 4096 || cfg->metrics_max_hosts > 4096 ||
        cfg->ch_flush_mb == 0 || cfg->ch_tls > 1 || cfg->ch_query_cache > 256 || cfg->ch_scope_records > (1ull << 40) || (strcmp(cfg->store, "lmdb") && strncmp(cfg->store, "clickhouse://", 13))) {
        fprintf(err, "ncclscope-collector: credit (1..65536), group_max, max_msg_mb (1..1024), "
                     "live_interval_ms, map_initial_mb (<= map_max_mb), metrics_max_comms, metrics_max_hosts "
                     "(<= 4096), ch_flush_mb, ch_tls (0 or 1), ch_query_cache (<= 256) or ch_scope_records (<= 2^40) out of range, or store neither lmdb nor clickhouse://...\n");
        return -1;
    }
    const uint64_t *lim[] = {&cfg->max_jobs, &cfg->max_comms_per_job, &cfg->max_procs_per_job,
                             &cfg->max_procs_per_agent, &cfg->max_hosts, &cfg->max_hosts_per_agent,
                             &cfg->max_agents, &cfg->live_open_colls};
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
        if (*lim[i] == 0 || *lim[i] > UINT32_MAX) {
            fprintf(err, "ncclscope-collector: max_jobs, max_comms_per_job, max_procs_per_job, "
                         "max_procs_per_agent, max_hosts, max_hosts_per_agent, max_agents and live_open_colls: 1..4294967295\n");
            return -1;
        }
    if (cfg->max_ranks == 0 || cfg->max_ranks > (1u << 20)) {
        fprintf(err, "ncclscope-collector: max_ranks out of range (1..1048576)\n");
        return -1;
    }
    if (cfg->webhook_url[0] && (strncmp(cfg->webhook_url, "http://", 7) && strncmp(cfg->webhook_url, "https://", 8))) {
        fprintf(err, "ncclscope-collector: webhook_url must start with http:// or https://\n");
        return -1;
    }
    if (cfg->webhook_url[0] && !cfg->rootcause_interval_ms) {
        fprintf(err, "ncclscope-collector: webhook_url needs the root-cause passes (rootcause_interval_ms > 0)\n");
        return -1;
    }
    if (cfg->webhook_queue == 0 || cfg->webhook_queue > 65536 || cfg->webhook_retries > 30 ||
        cfg->webhook_timeout_ms == 0 || cfg->webhook_backoff_ms == 0) {
        fprintf(err, "ncclscope-collector: webhook_queue (1..65536), webhook_retries (0..30), "
                     "webhook_timeout_ms or webhook_backoff_ms (> 0) out of range\n");
        return -1;
    }
    if (strcmp(cfg->detail, "all") && strcmp(cfg->detail, "on-demand")) {
        fprintf(err, "ncclscope-collector: detail must be all or on-demand, not '%s'\n", cfg->detail);
        return -1;
    }
    if (cfg->http_sse_buffer_kb == 0) {
        fprintf(err, "ncclscope-collector: http_sse_buffer_kb must be at least 1\n");
        return -1;
    }
    return nsc_hguard_cfg_check(&cfg->hg, "ncclscope-collector", err);
}

int nsc_coll_cfg_load(nsc_coll_cfg *cfg, int argc, char **argv, FILE *err)
{
    memset(cfg, 0, sizeof *cfg);
    int rc = nsc_cfg_load(&spec, cfg, argc, argv, err);
    return rc ? rc : check(cfg, err);
}

void nsc_coll_cfg_usage(FILE *out)
{
    nsc_cfg_usage(&spec, out);
}
