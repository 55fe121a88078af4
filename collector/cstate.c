/* cstate.c: what every part does with the shared state (see cstate.h). */
#include "cstate.h"

nsc_live_cfg nsc_collector_live_cfg(const nsc_coll_cfg *cfg)
{
    return (nsc_live_cfg){.heartbeat_timeout_ns = cfg->heartbeat_timeout_ms * 1000000ull,
                          .lag_ns = cfg->hang_ms * 1000000ull,
                          .evict_ns = cfg->live_evict_s * 1000000000ull,
                          .max_jobs = (uint32_t)cfg->max_jobs,
                          .max_comms_per_job = (uint32_t)cfg->max_comms_per_job,
                          .max_procs_per_job = (uint32_t)cfg->max_procs_per_job,
                          .max_procs_per_agent = (uint32_t)cfg->max_procs_per_agent,
                          .open_colls = (uint32_t)cfg->live_open_colls};
}

int nsc_cstore_own_live(nsc_collector *c, nsc_cstore_live_fn fn, void *arg)
{
    pthread_mutex_lock(&c->live_mu);
    int rc = fn(arg, c->live, nsc_mono_ns());
    pthread_mutex_unlock(&c->live_mu);
    return rc;
}
