/* config.c: the plugin's configuration, read once from the environment at the
 * first init of a load (see docs/plugin.md for every variable and default). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "rundir.h"
#include "shed.h"

#define DEFAULT_BUFFER_MB 64
#define DEFAULT_THREADS 32
#define DEFAULT_HEARTBEAT_MS 1000
#define DEFAULT_FLUSH_MS 1000
#define DEFAULT_STATE_HOLD_MS 1000

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Unsigned integer in [lo, hi] from name, or def when unset. */
static int env_uint(const char *name, uint64_t lo, uint64_t hi, uint64_t def, uint64_t *out,
                    char *err, size_t errlen)
{
    const char *v = env(name);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end || n < lo || n > hi || v[0] == '-') {
        snprintf(err, errlen, "%s=%s: expected an integer in [%llu, %llu]", name, v,
                 (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    *out = n;
    return 0;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* Job identity: NCCLSCOPE_JOB > SLURM_JOB_ID > JOB_NAME inside a Kubernetes pod
 * (set from the job-name label through the downward API) > "local". */
static const char *job_name(void)
{
    if (env("NCCLSCOPE_JOB"))
        return env("NCCLSCOPE_JOB");
    if (env("SLURM_JOB_ID"))
        return env("SLURM_JOB_ID");
    if (env("KUBERNETES_SERVICE_HOST") && env("JOB_NAME"))
        return env("JOB_NAME");
    return "local";
}

/* First of the launchers' local-rank variables that is set, else -1. */
static int32_t local_rank(void)
{
    static const char *const vars[] = {"LOCAL_RANK", "SLURM_LOCALID",
                                       "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = env(vars[i]);
        char *end;
        long n = v ? strtol(v, &end, 10) : -1;
        if (v && !*end && n >= 0 && n < 1 << 20)
            return (int32_t)n;
    }
    return -1;
}

/* The GPU is knowable only when CUDA_VISIBLE_DEVICES names exactly one index. */
static int32_t visible_gpu(void)
{
    const char *v = env("CUDA_VISIBLE_DEVICES");
    char *end;
    long n = v ? strtol(v, &end, 10) : -1;
    return v && !*end && n >= 0 && n < 1 << 16 ? (int32_t)n : -1;
}

static void load_identity(nsc_proc *p)
{
    memset(p, 0, sizeof *p);
    if (env("NCCLSCOPE_HOSTNAME")) {
        copy_str(p->host, sizeof p->host, env("NCCLSCOPE_HOSTNAME"));
    } else if (gethostname(p->host, sizeof p->host) != 0) {
        copy_str(p->host, sizeof p->host, "unknown");
    }
    p->host[sizeof p->host - 1] = '\0';
    copy_str(p->job, sizeof p->job, job_name());
    p->local_rank = local_rank();
    p->gpu = visible_gpu();
}

static int load_endpoint(nsc_config *cfg, char *err, size_t errlen)
{
    const char *ep = env("NCCLSCOPE_ENDPOINT"), *rundir = env("NCCLSCOPE_RUNDIR");
    char dflt[sizeof cfg->endpoint];
    int n = -1;
    if (ep)
        n = snprintf(cfg->endpoint, sizeof cfg->endpoint, "%s", ep);
    else if (rundir || nsc_rundir_plugin_default(dflt, sizeof dflt) == 0)
        n = snprintf(cfg->endpoint, sizeof cfg->endpoint, "ipc://%s/agent.sock", rundir ? rundir : dflt);
    if (n < 0 || (size_t)n >= sizeof cfg->endpoint) {
        snprintf(err, errlen, "endpoint longer than %zu bytes", sizeof cfg->endpoint - 1);
        return -1;
    }
    return 0;
}

int nsc_config_load(nsc_config *cfg, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->mask = NSC_DEFAULT_MASK;
    const char *mask = env("NCCLSCOPE_EVENT_MASK");
    if (mask && nsc_mask_parse(mask, &cfg->mask) != 0) {
        snprintf(err, errlen, "NCCLSCOPE_EVENT_MASK=%s: expected all, a number or type names",
                 mask);
        return -1;
    }
    uint64_t mb, threads, hb, flush, hold;
    if (env_uint("NCCLSCOPE_BUFFER_MB", 1, 1 << 16, DEFAULT_BUFFER_MB, &mb, err, errlen) ||
        env_uint("NCCLSCOPE_THREADS", 1, NSC_MAX_THREADS, DEFAULT_THREADS, &threads, err,
                 errlen) ||
        env_uint("NCCLSCOPE_HEARTBEAT_MS", 10, 3600000, DEFAULT_HEARTBEAT_MS, &hb, err,
                 errlen) ||
        env_uint("NCCLSCOPE_FLUSH_MS", 0, 600000, DEFAULT_FLUSH_MS, &flush, err, errlen) ||
        env_uint("NCCLSCOPE_STATE_HOLD_MS", 0, 600000, DEFAULT_STATE_HOLD_MS, &hold, err, errlen))
        return -1;
    cfg->buffer_bytes = mb << 20;
    cfg->max_threads = (uint32_t)threads;
    cfg->heartbeat_ms = (uint32_t)hb;
    cfg->flush_ms = (uint32_t)flush;
    cfg->state_hold_ms = (uint32_t)hold;
    if (load_endpoint(cfg, err, errlen))
        return -1;
    const char *chain = env("NCCLSCOPE_CHAIN");
    if (chain && strlen(chain) >= sizeof cfg->chain) {
        snprintf(err, errlen, "NCCLSCOPE_CHAIN longer than %zu bytes", sizeof cfg->chain - 1);
        return -1;
    }
    copy_str(cfg->chain, sizeof cfg->chain, chain);
    const char *budget = env("NCCLSCOPE_BUDGET_PCT");
    if (budget && nsc_shed_parse(budget, &cfg->budget_ppm) != 0) {
        snprintf(err, errlen, "NCCLSCOPE_BUDGET_PCT=%s: expected a percentage in [0, 100] or off",
                 budget);
        return -1;
    }
    load_identity(&cfg->proc);
    return 0;
}
