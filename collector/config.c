/* config.c: the collector's option table and its sources (see config.h). */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum opt_kind { O_TEXT, O_U64 };

typedef struct opt {
    const char *key;  /* config file key; the flag is --key with '_' as '-' */
    const char *env;
    enum opt_kind kind;
    size_t off, size;
    const char *def;
    const char *help;
} opt;

#define TXT(k, env, f, def, help) {k, env, O_TEXT, offsetof(nsc_coll_cfg, f), sizeof(((nsc_coll_cfg *)0)->f), def, help}
#define NUM(k, env, f, def, help) {k, env, O_U64, offsetof(nsc_coll_cfg, f), 0, def, help}

static const opt opts[] = {
    TXT("listen", "NCCLSCOPE_COLLECTOR_LISTEN", listen, "tcp://127.0.0.1:7760", "ZeroMQ endpoint the agents connect to (tcp://ADDR:PORT, port 0 picks one)"),
    TXT("http", "NCCLSCOPE_COLLECTOR_HTTP", http, "127.0.0.1:7761", "HTTP API address (ADDR:PORT, port 0 picks one, 'off')"),
    TXT("db", "NCCLSCOPE_DB", db, "/var/lib/ncclscope/db", "LMDB store directory (created if missing)"),
    TXT("token_file", "NCCLSCOPE_TOKEN_FILE", token_file, "", "file holding the HTTP bearer token (empty: no token)"),
    TXT("curve_secret_file", "NCCLSCOPE_CURVE_SECRET_FILE", curve_secret_file, "", "CURVE server secret key (not supported yet; must be empty)"),
    TXT("port_file", "NCCLSCOPE_COLLECTOR_PORT_FILE", port_file, "", "write the bound ports here ('zmq P' and 'http P' lines)"),
    NUM("map_initial_mb", "NCCLSCOPE_MAP_INITIAL_MB", map_initial_mb, "64", "initial LMDB map size; it doubles when full"),
    NUM("map_max_mb", "NCCLSCOPE_MAP_MAX_MB", map_max_mb, "1048576", "the map grows up to this"),
    NUM("retain_mb", "NCCLSCOPE_RETAIN_MB", retain_mb, "0", "delete the oldest blocks beyond this many MiB in use (0: no limit)"),
    NUM("retain_age_s", "NCCLSCOPE_RETAIN_AGE_S", retain_age_s, "0", "delete blocks committed longer ago than this (0: keep)"),
    NUM("credit", "NCCLSCOPE_CREDIT", credit, "32", "batches an agent may send beyond those acknowledged"),
    NUM("max_msg_mb", "NCCLSCOPE_MAX_MSG_MB", max_msg_mb, "64", "largest message accepted (ZMQ_MAXMSGSIZE)"),
    NUM("group_max", "NCCLSCOPE_GROUP_MAX", group_max, "256", "batches committed in one transaction at most"),
    NUM("clock_persist_s", "NCCLSCOPE_CLOCK_PERSIST_S", clock_persist_s, "5", "clock models are written to the store this often"),
    NUM("heartbeat_timeout_ms", "NCCLSCOPE_HEARTBEAT_TIMEOUT_MS", heartbeat_timeout_ms, "15000", "a process or agent silent this long is reported dead"),
    NUM("hang_ms", "NCCLSCOPE_HANG_MS", hang_ms, "10000", "lag/hang threshold: ranks behind (or a collective in flight) this long"),
    NUM("live_interval_ms", "NCCLSCOPE_LIVE_INTERVAL_MS", live_interval_ms, "1000", "period of /api/v1/live summaries"),
};
#define NOPTS (sizeof opts / sizeof opts[0])

static int set_opt(nsc_coll_cfg *cfg, const opt *o, const char *val, const char *src, FILE *err)
{
    char *dst = (char *)cfg + o->off;
    if (o->kind == O_TEXT) {
        if (strlen(val) >= o->size) {
            fprintf(err, "ncclscope-collector: %s: %s is too long\n", src, o->key);
            return -1;
        }
        strcpy(dst, val);
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || end == val || *end || val[0] == '-') {
        fprintf(err, "ncclscope-collector: %s: %s wants a number, got '%s'\n", src, o->key, val);
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

/* "--some-key" -> the option "some_key" */
static const opt *find_flag(const char *arg)
{
    char key[64];
    size_t n = strlen(arg);
    if (strncmp(arg, "--", 2) != 0 || n - 2 >= sizeof key)
        return NULL;
    for (size_t i = 2; i <= n; i++)
        key[i - 2] = arg[i] == '-' ? '_' : arg[i];
    return find_key(key);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

/* The file's keys, except those in set (already given by a stronger source). */
static int load_file(nsc_coll_cfg *cfg, const char *path, const char *set, FILE *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(err, "ncclscope-collector: config %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[1024], src[PATH_MAX + 32];
    int lineno = 0, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        char *s = trim(line), *eq = strchr(s, '=');
        if (!*s || *s == '#')
            continue;
        snprintf(src, sizeof src, "%s:%d", path, lineno);
        if (!eq) {
            fprintf(err, "ncclscope-collector: %s: expected 'key = value'\n", src);
            rc = -1;
            break;
        }
        *eq = 0;
        const opt *o = find_key(trim(s));
        if (!o) {
            fprintf(err, "ncclscope-collector: %s: unknown key '%s'\n", src, trim(s));
            rc = -1;
        } else if (!set[o - opts]) {
            rc = set_opt(cfg, o, trim(eq + 1), src, err);
        }
    }
    fclose(f);
    return rc;
}

static int check(const nsc_coll_cfg *cfg, FILE *err)
{
    if (cfg->credit == 0 || cfg->credit > 65536 || cfg->group_max == 0 || cfg->max_msg_mb == 0 ||
        cfg->max_msg_mb > 1024 || cfg->live_interval_ms == 0 || cfg->map_initial_mb == 0 ||
        cfg->map_max_mb < cfg->map_initial_mb) {
        fprintf(err, "ncclscope-collector: credit (1..65536), group_max, max_msg_mb (1..1024), "
                     "live_interval_ms, map_initial_mb (<= map_max_mb) out of range\n");
        return -1;
    }
    if (cfg->curve_secret_file[0]) {
        fprintf(err, "ncclscope-collector: curve_secret_file: CURVE is not supported by this build\n");
        return -1;
    }
    return 0;
}

int nsc_coll_cfg_load(nsc_coll_cfg *cfg, int argc, char **argv, FILE *err)
{
    char set[NOPTS] = {0};
    const char *file = getenv("NCCLSCOPE_COLLECTOR_CONFIG");
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NOPTS; i++)
        set_opt(cfg, &opts[i], opts[i].def, "default", err);
    for (size_t i = 0; i < NOPTS; i++) {
        const char *v = getenv(opts[i].env);
        if (v && (set_opt(cfg, &opts[i], v, opts[i].env, err)))
            return -1;
        set[i] = v != NULL;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            nsc_coll_cfg_usage(stdout);
            return 1;
        }
        const opt *o = find_flag(argv[i]);
        int is_config = strcmp(argv[i], "--config") == 0;
        if (!o && !is_config) {
            fprintf(err, "ncclscope-collector: unknown option '%s' (see --help)\n", argv[i]);
            return -1;
        }
        if (i + 1 >= argc) {
            fprintf(err, "ncclscope-collector: %s needs a value\n", argv[i]);
            return -1;
        }
        const char *flag = argv[i++];
        if (is_config)
            file = argv[i];
        else if (set_opt(cfg, o, argv[i], flag, err))
            return -1;
        else
            set[o - opts] = 1;
    }
    if (file && load_file(cfg, file, set, err))
        return -1;
    return check(cfg, err);
}

void nsc_coll_cfg_usage(FILE *out)
{
    fprintf(out, "usage: ncclscope-collector [--config FILE] [--KEY VALUE]...\n"
                 "The ncclscope collector: agents' batches into an LMDB store, live state and\n"
                 "the HTTP API. Priority: flags > environment > config file > defaults.\n"
                 "  --config FILE  (NCCLSCOPE_COLLECTOR_CONFIG) 'key = value' lines\n");
    for (size_t i = 0; i < NOPTS; i++) {
        char flag[64];
        size_t n = strlen(opts[i].key);
        for (size_t j = 0; j <= n; j++)
            flag[j] = opts[i].key[j] == '_' ? '-' : opts[i].key[j];
        fprintf(out, "  --%s (%s, default '%s')\n      %s\n", flag, opts[i].env, opts[i].def,
                opts[i].help);
    }
}
