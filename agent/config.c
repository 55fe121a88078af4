/* config.c: the agent's option table and its sources (see config.h). */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "endpoints.h"
#include "rundir.h"

#define TXT(...) NSC_OPT_TXT(nsc_agent_cfg, __VA_ARGS__)
#define NUM(...) NSC_OPT_NUM(nsc_agent_cfg, __VA_ARGS__)
#define KB(...) NSC_OPT_KB(nsc_agent_cfg, __VA_ARGS__)
#define MB(...) NSC_OPT_MB(nsc_agent_cfg, __VA_ARGS__)
#define MS(...) NSC_OPT_MS(nsc_agent_cfg, __VA_ARGS__)

static const nsc_opt opts[] = {
    TXT("rundir", "NCCLSCOPE_RUNDIR", rundir, "", "directory of agent.sock (the plugins' NCCLSCOPE_RUNDIR); owned by this user, writable by no one else (default: /run/ncclscope as root, else $XDG_RUNTIME_DIR/ncclscope, else /tmp/ncclscope-UID)"),
    TXT("spool", "NCCLSCOPE_SPOOL", spool, "", "LMDB spool directory (default <rundir>/spool)"),
    MB("spool_max_mb", "NCCLSCOPE_SPOOL_MAX_MB", spool_max_mb, "1024", "spool size cap; entries beyond it are refused and counted"),
    TXT("http", "NCCLSCOPE_AGENT_HTTP", http, "127.0.0.1:7762", "/healthz and /metrics address (ADDR:PORT, port 0 picks one, 'off')"),
    TXT("agent_id", "NCCLSCOPE_AGENT_ID", agent_id, "", "agent identity sent to the collector (default: host name)"),
    TXT("host_name", "NCCLSCOPE_HOSTNAME", host, "", "host identity (default gethostname())"),
    KB("max_batch_kb", "NCCLSCOPE_MAX_BATCH_KB", max_batch_kb, "8192", "largest batch accepted; ZeroMQ cuts peers sending twice this"),
    MS("pxn_window_ms", "NCCLSCOPE_PXN_WINDOW_MS", pxn_window_ms, "10000", "a foreign event starts at most this long after its parent"),
    MS("pxn_hold_ms", "NCCLSCOPE_PXN_HOLD_MS", pxn_hold_ms, "2000", "how long an unresolved foreign event waits for its origin"),
    NUM("pxn_recent", "NCCLSCOPE_PXN_RECENT", pxn_recent, "65536", "PXN parent candidates and re-attached events remembered"),
    NUM("pxn_pending", "NCCLSCOPE_PXN_PENDING", pxn_pending, "65536", "foreign events held at most while waiting"),
    MS("heartbeat_timeout_ms", "NCCLSCOPE_HEARTBEAT_TIMEOUT_MS", heartbeat_timeout_ms, "10000", "a silent process is reported dead after this"),
    MS("linger_ms", "NCCLSCOPE_LINGER_MS", linger_ms, "30000", "a dead process's tables are kept this long; so is the spool's mark of a stream unheard since the start"),
    MS("hang_ms", "NCCLSCOPE_HANG_MS", hang_ms, "10000", "a collective not completed this long (or open when its process ended) gets an in-flight ledger record, again while it changes (the collector's hang_ms)"),
    NUM("ledger_max_open", "NCCLSCOPE_LEDGER_MAX_OPEN", ledger_max_open, "1024", "open collectives kept per process by the ledger builder (1..1048576); past it the oldest is written if it completed, else dropped, counted"),
    MS("ledger_pxn_wait_ms", "NCCLSCOPE_LEDGER_PXN_WAIT_MS", ledger_pxn_wait_ms, "1000", "a completed collective that waits for network legs another process ran (PXN: its process has PXN traffic, or it has no network leg of its own on a communicator spanning nodes) waits this long before its ledger record is written"),
    TXT("detail", "NCCLSCOPE_DETAIL", detail, "all", "all: every raw event goes to the collector; on-demand: raw events stay in the detail ring (<spool>/detail) until the collector fetches a window of them, and the ledger, process life and PXN aliases go as always"),
    MB("detail_ring_mb", "NCCLSCOPE_DETAIL_RING_MB", detail_ring_mb, "1024", "detail = on-demand: the detail ring's size; the oldest raw sections give way, counted"),
    NSC_OPT_S(nsc_agent_cfg, "detail_ring_s", "NCCLSCOPE_DETAIL_RING_S", detail_ring_s, "3600", "detail = on-demand: raw sections older than this leave the ring, counted (0: kept while there is room)"),
    MS("flush_ms", "NCCLSCOPE_AGENT_FLUSH_MS", flush_ms, "50", "longest wait before waiting data becomes a spool entry"),
    KB("flush_kb", "NCCLSCOPE_AGENT_FLUSH_KB", flush_kb, "1024", "waiting data that makes a spool entry at once"),
    NUM("burst", "NCCLSCOPE_AGENT_BURST", burst, "256", "messages taken per loop iteration (fairness with HTTP and timers)"),
    NUM("queue", "NCCLSCOPE_AGENT_QUEUE", queue, "64", "messages queued per sending process (ZMQ_RCVHWM); beyond it the sender waits"),
    TXT("collector", "NCCLSCOPE_COLLECTOR_ADDR", collector, "", "collector endpoint tcp://HOST:7760, several separated by commas (failover), or dns+tcp://NAME:7760 (all of NAME's addresses; empty: spool only)"),
    TXT("collector_key", "NCCLSCOPE_COLLECTOR_KEY", collector_key, "", "collector's CURVE public key file (enables CURVE)"),
    TXT("curve_key", "NCCLSCOPE_AGENT_CURVE_KEY", curve_key, "", "this agent's CURVE secret key file (--gen-keys makes one)"),
    NUM("window", "NCCLSCOPE_AGENT_WINDOW", window, "4", "batches in flight before the collector grants credit"),
    NUM("max_inflight", "NCCLSCOPE_AGENT_MAX_INFLIGHT", max_inflight, "32", "batches in flight at most, whatever the credit"),
    MB("max_inflight_mb", "NCCLSCOPE_AGENT_MAX_INFLIGHT_MB", max_inflight_mb, "8", "no new batch goes while this many MiB are unacknowledged"),
    MS("ack_timeout_ms", "NCCLSCOPE_AGENT_ACK_TIMEOUT_MS", ack_timeout_ms, "10000", "unacknowledged this long: re-send from the oldest"),
    MS("reconnect_ms", "NCCLSCOPE_AGENT_RECONNECT_MS", reconnect_ms, "100", "first reconnection delay (doubles)"),
    MS("reconnect_max_ms", "NCCLSCOPE_AGENT_RECONNECT_MAX_MS", reconnect_max_ms, "5000", "longest reconnection delay"),
    MS("failover_ms", "NCCLSCOPE_AGENT_FAILOVER_MS", failover_ms, "5000", "several collectors: move to the next after this long unconnected, or silent after a batch or probe"),
    MS("dns_refresh_ms", "NCCLSCOPE_AGENT_DNS_REFRESH_MS", dns_refresh_ms, "30000", "dns+tcp://NAME: resolve NAME again this often (and when the collector in use dies)"),
    MS("probe_ms", "NCCLSCOPE_AGENT_PROBE_MS", probe_ms, "1000", "clock probe interval (the first 5 come 10x faster; 0: none)"),
    NUM("probe_spin_us", "NCCLSCOPE_AGENT_PROBE_SPIN_US", probe_spin_us, "1000", "wait this long at most for a probe's answer without sleeping (0: sleep), so that its round trip has no thread wake-up in it"),
    MS("drain_ms", "NCCLSCOPE_AGENT_DRAIN_MS", drain_ms, "2000", "on shutdown, wait this long at most for the spool to be acknowledged"),
    NSC_HGUARD_OPTS(nsc_agent_cfg, hg, "NCCLSCOPE_AGENT"),
};
#define NOPTS (sizeof opts / sizeof opts[0])

static const nsc_cfg_spec spec = {
    .prog = "ncclscope-agent",
    .about = "usage: ncclscope-agent [--config FILE] [--OPTION VALUE]...\n"
             "The ncclscope node agent: receives the profiler plugins' batches on\n"
             "ipc://<rundir>/agent.sock, re-attaches PXN events, tracks processes and\n"
             "writes everything to a durable spool for the collector.\n",
    .more_help = "  --gen-keys PREFIX        write a CURVE keypair to PREFIX.pub and PREFIX.key (0600), exit\n",
    .opts = opts,
    .nopts = sizeof opts / sizeof opts[0],
};

void nsc_agent_cfg_usage(FILE *out)
{
    nsc_cfg_usage(&spec, out);
}

/* The forwarding options: ranges, the collector list, CURVE's two files. */
static int check_forwarding(const nsc_agent_cfg *cfg, FILE *err)
{
    if (cfg->window == 0 || cfg->max_inflight == 0 || cfg->max_inflight > 65536 || cfg->ack_timeout_ms == 0 ||
        cfg->ack_timeout_ms > 3600000 || cfg->reconnect_ms == 0 || cfg->reconnect_max_ms > 3600000 ||
        cfg->reconnect_ms > cfg->reconnect_max_ms || cfg->failover_ms == 0 || cfg->failover_ms > 3600000 ||
        cfg->dns_refresh_ms == 0 || cfg->dns_refresh_ms > 86400000) {
        fprintf(err, "ncclscope-agent: window, max_inflight (1..65536), ack_timeout_ms (1..3600000), "
                     "reconnect_ms <= reconnect_max_ms (<= 3600000), failover_ms (1..3600000) and dns_refresh_ms "
                     "(1..86400000) are out of range\n");
        return -1;
    }
    static nsc_endpoints eps;  /* 17 KiB: not on the stack */
    char why[256];
    if (cfg->collector[0] && nsc_endpoints_parse(cfg->collector, &eps, why) != 0) {
        fprintf(err, "ncclscope-agent: %s\n", why);
        return -1;
    }
    if (!cfg->collector_key[0] != !cfg->curve_key[0]) {
        fprintf(err, "ncclscope-agent: CURVE needs both collector_key and curve_key\n");
        return -1;
    }
    return 0;
}

int nsc_agent_cfg_load(nsc_agent_cfg *cfg, int argc, char **argv, FILE *err)
{
    memset(cfg, 0, sizeof *cfg);
    int rc = nsc_cfg_load(&spec, cfg, argc, argv, err);
    if (rc)
        return rc;
    if (!cfg->host[0] && gethostname(cfg->host, sizeof cfg->host - 1) != 0)
        strcpy(cfg->host, "localhost");
    if (!cfg->agent_id[0])
        strcpy(cfg->agent_id, cfg->host);
    if (!cfg->rundir[0] && nsc_rundir_default(cfg->rundir, sizeof cfg->rundir, geteuid()) != 0) {
        fprintf(err, "ncclscope-agent: the default rundir is too long ($XDG_RUNTIME_DIR); set rundir\n");
        return -1;
    }
    if (!cfg->spool[0] && snprintf(cfg->spool, sizeof cfg->spool, "%s/spool", cfg->rundir) >= (int)sizeof cfg->spool) {
        fprintf(err, "ncclscope-agent: rundir too long\n");
        return -1;
    }
    if (cfg->max_batch_kb == 0 || cfg->max_batch_kb > (1u << 20) || cfg->burst == 0 || cfg->pxn_recent == 0 ||
        cfg->pxn_recent > (1u << 30) || cfg->pxn_pending > (1u << 30)) {
        fprintf(err, "ncclscope-agent: max_batch_kb (1..1048576), burst, pxn_recent (1..2^30) and pxn_pending are out of range\n");
        return -1;
    }
    if (cfg->ledger_max_open == 0 || cfg->ledger_max_open > (1u << 20) || cfg->hang_ms == 0) {
        fprintf(err, "ncclscope-agent: ledger_max_open (1..1048576) and hang_ms (> 0) are out of range\n");
        return -1;
    }
    cfg->on_demand = strcmp(cfg->detail, "on-demand") == 0;
    if ((!cfg->on_demand && strcmp(cfg->detail, "all") != 0) || (cfg->on_demand && cfg->detail_ring_mb == 0)) {
        fprintf(err, "ncclscope-agent: detail is 'all' or 'on-demand' (with detail_ring_mb > 0), not '%s'\n", cfg->detail);
        return -1;
    }
    return check_forwarding(cfg, err) ? -1 : nsc_hguard_cfg_check(&cfg->hg, "ncclscope-agent", err);
}
