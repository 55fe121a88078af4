/* config.h: the agent's configuration.
 *
 * Owns the option table (one row per key: flag, environment variable, default,
 * help), the range checks and the derived defaults; common/cfg.h fills it
 * from flags > NCCLSCOPE_* environment > config file (--config FILE,
 * "key = value") > defaults.
 */
#ifndef NCCLSCOPE_AGENT_CONFIG_H
#define NCCLSCOPE_AGENT_CONFIG_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "hguard.h"

typedef struct nsc_agent_cfg {
    char rundir[PATH_MAX];     /* socket: <rundir>/agent.sock */
    char spool[PATH_MAX];      /* empty: <rundir>/spool */
    char http[128];            /* ADDR:PORT, port 0 picks one; "off" disables */
    char agent_id[64];         /* empty: the host name */
    char host[64];             /* empty: NCCLSCOPE_HOSTNAME, else gethostname() */
    uint64_t spool_max_mb;
    uint64_t max_batch_kb;     /* decoder limit; ZMQ_MAXMSGSIZE is twice this */
    uint64_t pxn_window_ms;    /* a foreign event starts at most this long after its parent */
    uint64_t pxn_hold_ms;      /* how long an unresolved foreign event waits */
    uint64_t pxn_recent;       /* parent candidates remembered, all processes */
    uint64_t pxn_pending;      /* foreign events held at most */
    uint64_t heartbeat_timeout_ms;
    uint64_t linger_ms;        /* a dead process's tables are kept this long */
    uint64_t hang_ms;          /* a collective open this long gets an in-flight ledger record */
    uint64_t ledger_max_open;  /* open collectives per process the ledger builder keeps */
    uint64_t ledger_pxn_wait_ms;  /* a PXN process's completed record waits this long for re-attached ProxyOps */
    char detail[16];           /* "all" or "on-demand" */
    int on_demand;             /* detail is "on-demand" */
    uint64_t detail_ring_mb;   /* the detail ring's size (on-demand) */
    uint64_t detail_ring_s;    /* and age (0: no age bound) */
    uint64_t flush_ms;         /* spool entry at least this often when data is waiting */
    uint64_t flush_kb;         /* or when this much is waiting */
    uint64_t burst;            /* messages taken per loop iteration */
    uint64_t queue;            /* messages ZeroMQ queues per sender (ZMQ_RCVHWM) */
    char collector[2048];      /* tcp://HOST:PORT[,...] or dns+tcp://NAME:PORT (endpoints.h); empty: spool only */
    char collector_key[PATH_MAX];  /* collector's public key file: enables CURVE */
    char curve_key[PATH_MAX];  /* the agent's secret key file (with collector_key) */
    uint64_t window;           /* batches in flight before the collector's first credit */
    uint64_t max_inflight;     /* batches in flight at most, whatever the credit */
    uint64_t max_inflight_mb;  /* and bytes: ZeroMQ holds a copy of each until acked */
    uint64_t ack_timeout_ms;   /* oldest unacknowledged batch older than this: re-send */
    uint64_t reconnect_ms, reconnect_max_ms;
    uint64_t failover_ms;      /* several collectors: the current one is dead after this */
    uint64_t dns_refresh_ms;   /* dns+tcp://: the name is resolved again this often */
    uint64_t probe_ms;         /* clock probe interval; 0: no probes */
    uint64_t probe_spin_us;    /* the loop polls without sleeping this long for a probe's answer */
    uint64_t drain_ms;         /* on shutdown, wait this long at most for acks */
    nsc_hguard_cfg hg;         /* HTTP limits (hguard.h) */
} nsc_agent_cfg;

/* Fill cfg from all sources. Returns 0, 1 when --help was printed (exit 0),
 * or -1 after printing the problem to err (exit 2). */
int nsc_agent_cfg_load(nsc_agent_cfg *cfg, int argc, char **argv, FILE *err);
void nsc_agent_cfg_usage(FILE *out);

#endif
