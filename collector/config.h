/* config.h: the collector's configuration.
 *
 * Owns the option table (key, flag, NCCLSCOPE_* environment name, default,
 * help) and the range checks; common/cfg.h fills it from flags > environment
 * > config file (--config FILE or NCCLSCOPE_COLLECTOR_CONFIG, "key = value"
 * lines, '#' comments) > defaults.
 */
#ifndef NCCLSCOPE_COLLECTOR_CONFIG_H
#define NCCLSCOPE_COLLECTOR_CONFIG_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "hguard.h"

typedef struct nsc_coll_cfg {
    char listen[256];          /* ZeroMQ endpoint of the agents' ROUTER */
    char http[128];            /* ADDR:PORT; port 0 picks one; "off" disables */
    char clock_udp[128];       /* ADDR:PORT of the UDP clock port; "listen": listen's address; "off" */
    char db[PATH_MAX];         /* LMDB store directory */
    char store[512];           /* "lmdb" or clickhouse://HOST:PORT/DB[?cluster=NAME] */
    char ch_shards[1024];      /* HOST:PORT,... where the local tables are made */
    char ch_user[64];          /* ClickHouse user; empty: its default */
    char ch_password_file[PATH_MAX];  /* ch_user's password on its first line */
    uint64_t ch_tls;           /* 1: https to every ClickHouse server */
    char ch_ca_file[PATH_MAX]; /* CA certificates for ch_tls; empty: the system's */
    uint64_t ch_query_cache;   /* jobs kept for queries between requests */
    uint64_t ch_scope_records; /* a window of more records reads ledger batches */
    char collector_id[128];    /* its live snapshot's name in ClickHouse; empty: HOSTNAME:ZMQ_PORT */
    uint64_t ch_flush_ms, ch_flush_mb;  /* an insert at least this often / this large */
    char token_file[PATH_MAX]; /* bearer token for HTTP; empty: none */
    char curve_secret_file[PATH_MAX];  /* CURVE server secret key; empty: plain */
    char port_file[PATH_MAX];  /* written with "zmq PORT\nhttp PORT\nudp PORT\n" once bound */
    uint64_t map_initial_mb, map_max_mb;
    uint64_t retain_mb, retain_age_s;
    uint64_t credit;           /* batches an agent may have in flight beyond its acks */
    uint64_t max_msg_mb;       /* largest message; ZeroMQ drops peers sending more */
    uint64_t group_max;        /* batches per transaction at most */
    uint64_t clock_persist_s;  /* clock models are written this often */
    uint64_t heartbeat_timeout_ms;  /* a process silent this long is dead */
    uint64_t hang_ms;          /* a collective in flight this long while others moved on */
    uint64_t live_interval_ms; /* /api/v1/live summary period */
    uint64_t metrics_max_comms;  /* communicators in /metrics at most */
    uint64_t metrics_max_hosts;  /* hosts (and host pairs) in the root-cause metrics at most */
    uint64_t rootcause_interval_ms;  /* root-cause metrics' pass period; 0: none */
    uint64_t rootcause_trigger_ms;   /* a pass this soon after the last on new ledger records; 0: never */
    uint64_t rootcause_window_seqs;  /* seqs of each communicator a pass reads back; 0: all */
    uint64_t rootcause_p2p_lag_ms;   /* a pass settles Send/Recv pairs this long before the latest event */
    uint64_t rootcause_recheck_ms;   /* an ended job's store version is read this long after it ended */
    char webhook_url[1024];    /* a POST per new verdict (webhook.h); empty: none */
    uint64_t webhook_queue, webhook_timeout_ms, webhook_retries, webhook_backoff_ms;
    uint64_t webhook_settle_ms;  /* every pass holds a verdict this long before it is posted */
    char detail[16];           /* "all" or "on-demand": whether queries fetch raw detail first */
    uint64_t detail_wait_ms;   /* a query waits this long at most for the agents' detail */
    uint64_t detail_span_ms;   /* detail fetched this long before and after each verdict */
    nsc_hguard_cfg hg;         /* HTTP limits (hguard.h) */
    uint64_t http_sse_buffer_kb;  /* a /api/v1/live client's unsent output at most */
    /* What a peer can make the collector hold (docs/configuration.md, "Limits") */
    uint64_t max_ranks;        /* ranks a communicator may claim */
    uint64_t max_jobs, max_comms_per_job, max_procs_per_job, max_procs_per_agent;  /* live state */
    uint64_t live_open_colls;  /* collectives per communicator awaiting their ranks' ledger records */
    uint64_t max_hosts, max_hosts_per_agent;  /* hosts with a clock model: all, one agent's */
    uint64_t max_agents;       /* senders with batches in the collector at once */
    uint64_t live_evict_s;     /* an ended job leaves the live state this long after; 0: never */
} nsc_coll_cfg;

/* Fill cfg from all sources. Returns 0, 1 when --help was printed (exit 0),
 * or -1 after printing the problem to err (exit 2). */
int nsc_coll_cfg_load(nsc_coll_cfg *cfg, int argc, char **argv, FILE *err);
void nsc_coll_cfg_usage(FILE *out);

#endif
