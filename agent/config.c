/* config.c: the agent's option table and its sources (see config.h). */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum opt_kind { O_TEXT, O_U64 };

typedef struct opt {
    const char *key;  /* config file key; the flag is --key with '_' as '-' */
    const char *env;
    enum opt_kind kind;
    size_t off, size;
    const char *def;
    const char *help;
} opt;

#define TXT(k, env, f, def, help) {k, env, O_TEXT, offsetof(nsc_agent_cfg, f), sizeof(((nsc_agent_cfg *)0)->f), def, help}
#define NUM(k, env, f, def, help) {k, env, O_U64, offsetof(nsc_agent_cfg, f), 0, def, help}

static const opt opts[] = {
    TXT("rundir", "NCCLSCOPE_RUNDIR", rundir, "/tmp/ncclscope", "directory of agent.sock (the plugins' NCCLSCOPE_RUNDIR)"),
    TXT("spool", "NCCLSCOPE_SPOOL", spool, "", "LMDB spool directory (default <rundir>/spool)"),
    NUM("spool_max_mb", "NCCLSCOPE_SPOOL_MAX_MB", spool_max_mb, "1024", "spool size cap; entries beyond it are refused and counted"),
    TXT("http", "NCCLSCOPE_AGENT_HTTP", http, "127.0.0.1:7762", "/healthz and /metrics address (ADDR:PORT, port 0 picks one, 'off')"),
    TXT("agent_id", "NCCLSCOPE_AGENT_ID", agent_id, "", "agent identity sent to the collector (default: host name)"),
    TXT("host_name", "NCCLSCOPE_HOSTNAME", host, "", "host identity (default gethostname())"),
    NUM("max_batch_kb", "NCCLSCOPE_MAX_BATCH_KB", max_batch_kb, "8192", "largest batch accepted; ZeroMQ cuts peers sending twice this"),
    NUM("pxn_window_ms", "NCCLSCOPE_PXN_WINDOW_MS", pxn_window_ms, "10000", "a foreign event starts at most this long after its parent"),
    NUM("pxn_hold_ms", "NCCLSCOPE_PXN_HOLD_MS", pxn_hold_ms, "2000", "how long an unresolved foreign event waits for its origin"),
    NUM("pxn_recent", "NCCLSCOPE_PXN_RECENT", pxn_recent, "65536", "PXN parent candidates and re-attached events remembered"),
    NUM("pxn_pending", "NCCLSCOPE_PXN_PENDING", pxn_pending, "65536", "foreign events held at most while waiting"),
    NUM("heartbeat_timeout_ms", "NCCLSCOPE_HEARTBEAT_TIMEOUT_MS", heartbeat_timeout_ms, "10000", "a silent process is reported dead after this"),
    NUM("linger_ms", "NCCLSCOPE_LINGER_MS", linger_ms, "30000", "a dead process's tables are kept this long"),
    NUM("flush_ms", "NCCLSCOPE_AGENT_FLUSH_MS", flush_ms, "50", "longest wait before waiting data becomes a spool entry"),
    NUM("flush_kb", "NCCLSCOPE_AGENT_FLUSH_KB", flush_kb, "1024", "waiting data that makes a spool entry at once"),
    NUM("burst", "NCCLSCOPE_AGENT_BURST", burst, "256", "messages taken per loop iteration (fairness with HTTP and timers)"),
    TXT("collector", "NCCLSCOPE_COLLECTOR_ADDR", collector, "", "collector endpoint tcp://HOST:7760 (empty: spool only)"),
    TXT("collector_key", "NCCLSCOPE_COLLECTOR_KEY", collector_key, "", "collector's CURVE public key file (enables CURVE)"),
    TXT("curve_key", "NCCLSCOPE_AGENT_CURVE_KEY", curve_key, "", "this agent's CURVE secret key file (--gen-keys makes one)"),
    NUM("window", "NCCLSCOPE_AGENT_WINDOW", window, "4", "batches in flight before the collector grants credit"),
    NUM("max_inflight", "NCCLSCOPE_AGENT_MAX_INFLIGHT", max_inflight, "16", "batches in flight at most, whatever the credit"),
    NUM("max_inflight_mb", "NCCLSCOPE_AGENT_MAX_INFLIGHT_MB", max_inflight_mb, "8", "no new batch goes while this many MiB are unacknowledged"),
    NUM("ack_timeout_ms", "NCCLSCOPE_AGENT_ACK_TIMEOUT_MS", ack_timeout_ms, "10000", "unacknowledged this long: re-send from the oldest"),
    NUM("reconnect_ms", "NCCLSCOPE_AGENT_RECONNECT_MS", reconnect_ms, "100", "first reconnection delay (doubles)"),
    NUM("reconnect_max_ms", "NCCLSCOPE_AGENT_RECONNECT_MAX_MS", reconnect_max_ms, "5000", "longest reconnection delay"),
    NUM("probe_ms", "NCCLSCOPE_AGENT_PROBE_MS", probe_ms, "1000", "clock probe interval (the first 5 come 10x faster; 0: none)"),
    NUM("drain_ms", "NCCLSCOPE_AGENT_DRAIN_MS", drain_ms, "2000", "on shutdown, wait this long at most for the spool to be acknowledged"),
};
#define NOPTS (sizeof opts / sizeof opts[0])

static int set_opt(nsc_agent_cfg *cfg, const opt *o, const char *val, const char *src, FILE *err)
{
    char *dst = (char *)cfg + o->off;
    if (o->kind == O_TEXT) {
        if (strlen(val) >= o->size) {
            fprintf(err, "ncclscope-agent: %s: %s is too long\n", src, o->key);
            return -1;
        }
        strcpy(dst, val);
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || end == val || *end || val[0] == '-') {
        fprintf(err, "ncclscope-agent: %s: %s wants a number, got '%s'\n", src, o->key, val);
        return -1;
    }
    uint64_t u = v;
    memcpy(dst, &u, sizeof u);
    return 0;
}

static const opt *find_key(const char *key)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strcmp(opts[i].key, key) == 0)
            return &opts[i];
    return NULL;
}

static const opt *find_flag(const char *arg)
{
    if (strncmp(arg, "--", 2) != 0)
        return NULL;
    char key[64];
    size_t n = strlen(arg + 2);
    if (n >= sizeof key)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        key[i] = arg[2 + i] == '-' ? '_' : arg[2 + i];
    return find_key(key);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && strchr(" \t\r\n", e[-1]))
        *--e = 0;
    return s;
}

static int load_file(nsc_agent_cfg *cfg, const char *path, FILE *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(err, "ncclscope-agent: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[PATH_MAX + 64], src[PATH_MAX + 32];
    int rc = 0;
    for (unsigned n = 1; rc == 0 && fgets(line, sizeof line, f); n++) {
        char *s = trim(line), *eq = strchr(s, '=');
        if (*s == 0 || *s == '#')
            continue;
        snprintf(src, sizeof src, "%s:%u", path, n);
        const opt *o = NULL;
        if (eq) {
            *eq = 0;
            o = find_key(trim(s));
        }
        if (!o) {
            fprintf(err, "ncclscope-agent: %s: expected 'key = value' with a known key\n", src);
            rc = -1;
        } else {
            rc = set_opt(cfg, o, trim(eq + 1), src, err);
        }
    }
    fclose(f);
    return rc;
}

void nsc_agent_cfg_usage(FILE *out)
{
    fputs("usage: ncclscope-agent [--config FILE] [--OPTION VALUE]...\n"
          "The ncclscope node agent: receives the profiler plugins' batches on\n"
          "ipc://<rundir>/agent.sock, re-attaches PXN events, tracks processes and\n"
          "writes everything to a durable spool for the collector.\n"
          "Priority: flags > environment > config file > defaults.\n\n", out);
    for (size_t i = 0; i < NOPTS; i++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", opts[i].key);
        for (char *p = flag + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        fprintf(out, "  %-24s %s\n  %-24s env %s, default '%s'\n", flag, opts[i].help, "",
                opts[i].env, opts[i].def);
    }
    fputs("  --config FILE            read 'key = value' lines (keys as above, with '_')\n"
          "  --gen-keys PREFIX        write a CURVE keypair to PREFIX.pub and PREFIX.key (0600), exit\n"
          "  --help                   this text\n", out);
}

int nsc_agent_cfg_load(nsc_agent_cfg *cfg, int argc, char **argv, FILE *err)
{
    const char *file = NULL;
    memset(cfg, 0, sizeof *cfg);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            nsc_agent_cfg_usage(stdout);
            return 1;
        }
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            file = argv[++i];
    }
    for (size_t i = 0; i < NOPTS; i++)
        if (set_opt(cfg, &opts[i], opts[i].def, "default", err))
            return -1;
    if (file && load_file(cfg, file, err))
        return -1;
    for (size_t i = 0; i < NOPTS; i++) {
        const char *v = getenv(opts[i].env);
        if (v && set_opt(cfg, &opts[i], v, opts[i].env, err))
            return -1;
    }
    for (int i = 1; i < argc; i += 2) {  /* every flag takes one value */
        const opt *o = find_flag(argv[i]);
        int is_config = strcmp(argv[i], "--config") == 0;
        if ((!o && !is_config) || i + 1 >= argc) {
            fprintf(err, "ncclscope-agent: unknown option or missing value: %s (see --help)\n", argv[i]);
            return -1;
        }
        if (o && set_opt(cfg, o, argv[i + 1], argv[i], err))
            return -1;
    }
    if (!cfg->host[0] && gethostname(cfg->host, sizeof cfg->host - 1) != 0)
        strcpy(cfg->host, "localhost");
    if (!cfg->agent_id[0])
        strcpy(cfg->agent_id, cfg->host);
    if (!cfg->spool[0] && snprintf(cfg->spool, sizeof cfg->spool, "%s/spool", cfg->rundir) >= (int)sizeof cfg->spool) {
        fprintf(err, "ncclscope-agent: rundir too long\n");
        return -1;
    }
    if (cfg->max_batch_kb == 0 || cfg->max_batch_kb > (1u << 20) || cfg->burst == 0 || cfg->pxn_recent == 0 ||
        cfg->pxn_recent > (1u << 30) || cfg->pxn_pending > (1u << 30)) {
        fprintf(err, "ncclscope-agent: max_batch_kb (1..1048576), burst, pxn_recent (1..2^30) and pxn_pending are out of range\n");
        return -1;
    }
    if (cfg->window == 0 || cfg->max_inflight == 0 || cfg->max_inflight > 65536 || cfg->ack_timeout_ms == 0 ||
        cfg->ack_timeout_ms > 3600000 || cfg->reconnect_ms == 0 || cfg->reconnect_max_ms > 3600000 ||
        cfg->reconnect_ms > cfg->reconnect_max_ms) {
        fprintf(err, "ncclscope-agent: window, max_inflight (1..65536), ack_timeout_ms (1..3600000) and "
                     "reconnect_ms <= reconnect_max_ms (<= 3600000) are out of range\n");
        return -1;
    }
    if (!cfg->collector_key[0] != !cfg->curve_key[0]) {
        fprintf(err, "ncclscope-agent: CURVE needs both collector_key and curve_key\n");
        return -1;
    }
    return 0;
}
