/* live.h: the live state of jobs, communicators, ranks, processes and agents.
 *
 * Owns what the collector knows "now": per job and communicator the ranks
 * expected (nranks) and seen, each rank's last Coll seqNumber per function and
 * whether it completed, collectives in flight and for how long, events per
 * second, bus bandwidth (nccl-tests factors), drops (the plugins' counters),
 * processes and agents alive or dead (lifecycle records, heartbeat timeout),
 * lagging ranks (NCCL RAS's rule) and hangs, and per communicator the
 * histograms /metrics exports: collective durations (Coll start to its
 * completion, matched per process by event id) and ranks' arrival delays at
 * each collective. The collector feeds it from
 * ingest; nsc_live_from_store rebuilds it from a store (the CLI's --db mode),
 * so both print the same JSON (docs/collector-http.md, "HTTP API: status and live").
 *
 * Times are the collector's clock (ns): the caller passes `now`. Not
 * thread-safe: one lock around every call.
 */
#ifndef NCCLSCOPE_LIVE_H
#define NCCLSCOPE_LIVE_H

#include <stdint.h>
#include <stdio.h>

#include "a2c.h"
#include "ledger.h"
#include "store.h"
#include "wire.h"

typedef struct nsc_live_cfg {
    uint64_t heartbeat_timeout_ns;  /* silent this long: dead; default 15 s */
    uint64_t lag_ns;                /* behind (or in flight) this long: lagging / hung; 10 s */
    uint64_t evict_ns;              /* a job ended this long ago is evicted; 0: never */
    uint32_t max_jobs;              /* jobs at most; default 1024 */
    uint32_t max_comms_per_job;     /* communicators per job; 16384 */
    uint32_t max_procs_per_job;     /* processes per job; 16384 */
    uint32_t max_procs_per_agent;   /* processes per agent (all its jobs); 4096 */
    uint32_t open_colls;            /* collectives per communicator awaiting their ranks' ledger records; 256 */
} nsc_live_cfg;

/* What a peer can make the state hold is bounded: a job, communicator or
 * process beyond its limit is not tracked (its events are still counted and
 * the caller still stores them), and the refusal is counted by limit. */
enum nsc_live_limit {
    NSC_LIVE_LIM_JOBS,
    NSC_LIVE_LIM_COMMS_PER_JOB,
    NSC_LIVE_LIM_PROCS_PER_JOB,
    NSC_LIVE_LIM_PROCS_PER_AGENT,
    NSC_LIVE_LIMITS
};
/* The limit's setting name without "max_": "jobs", "comms_per_job", ... */
const char *nsc_live_limit_name(int lim);

typedef struct nsc_live nsc_live;

/* cfg NULL or zero fields: defaults. NULL on allocation failure. */
nsc_live *nsc_live_new(const nsc_live_cfg *cfg);
void nsc_live_free(nsc_live *l);

/* One decoded section an agent sent (its records and counters). 0, -1
 * (memory), or 1 + the nsc_live_limit that left (part of) it untracked. */
int nsc_live_section(nsc_live *l, const char *agent, const nsc_batch *b, uint64_t now);
/* One process's ledger records as the collector stored them (proc: its
 * job, host and pid). Its host times are turned to the collector's clock by
 * adding off (collector - host, modulo 2^64), within err (the host's clock
 * model; 0, 0 without one). A rank's record moves its progress like its
 * Coll; a collective whose ranks' completed records all came gets its
 * figures (duration, busBW: engine/query/figures.h). A communicator's
 * first record restarts its duration histograms and bandwidth window: from
 * then on they are the ledger's only. Each
 * communicator holds cfg.open_colls collectives awaiting their ranks; one
 * given way to a newer one, and a record of a communicator not known, is
 * counted (ledger_dropped). Returns as nsc_live_section does. */
int nsc_live_ledger(nsc_live *l, const char *agent, const nsc_proc *proc, const nsc_ledger_batch *b, uint64_t off,
                    uint64_t err, uint64_t now);
/* A lifecycle record from an agent about a process on host; returns as
 * nsc_live_section does. */
int nsc_live_life(nsc_live *l, const char *agent, const char *host, const nsc_a2c_life *life,
                  uint64_t now);
/* Any message from the agent (batch, sample): it is alive. */
int nsc_live_agent_seen(nsc_live *l, const char *agent, const char *host, uint64_t now);
/* Close the rate window: events/s and bus bandwidth over the time since the last tick. */
void nsc_live_tick(nsc_live *l, uint64_t now);
/* Evict the jobs that ended (each process died, finished or went silent
 * past the heartbeat timeout) more than evict_ns before now, with their
 * communicators and processes, and the agents silent that long. Their
 * records stay in the store, from which nsc_live_from_store (the CLI's
 * --db status) still shows each evicted job's last state. Returns the jobs
 * evicted; none when evict_ns is 0. */
size_t nsc_live_evict(nsc_live *l, uint64_t now);

/* A job has ended when none of its processes is alive (each finished, died
 * or went silent); its judgements are then made at the moment its last
 * process stopped, so its lag stops growing, and it has a verdict that
 * says where it stopped ("ended hung at AllReduce seq 5: rank 3 never
 * arrived (process alive until 12:04:31 UTC)"), in the status document. Its
 * communicators count no lagging or hung rank (/metrics, the counts): the
 * gauges of an ended job return to 0. */
/* The wall clock of the collector's time base (UTC ns since the epoch =
 * its time + off, as the store records it: nsc_store_wall), from which the
 * status writes its *_utc members; null there until it is set.
 * nsc_live_from_store sets the store's. */
void nsc_live_set_wall(nsc_live *l, int64_t off);
/* l's wall clock into *off: 0, or -1 when it is not known. */
int nsc_live_wall(const nsc_live *l, int64_t *off);

/* The /api/v1/status object and one /api/v1/live summary, as JSON. */
int nsc_live_status_json(const nsc_live *l, uint64_t now, FILE *out);
int nsc_live_summary_json(const nsc_live *l, uint64_t now, FILE *out);

/* Totals for tests and metrics. */
typedef struct nsc_live_counts {
    uint64_t events, procs_alive, procs_dead, procs_finished, agents_alive, agents_dead, comms, hangs,
        lagging, hung_colls;
    uint64_t jobs, jobs_ended, evicted_jobs, refused[NSC_LIVE_LIMITS];
    uint64_t ledger_dropped;  /* ledger records no figure was made of */
} nsc_live_counts;
void nsc_live_counts_get(const nsc_live *l, uint64_t now, nsc_live_counts *c);

/* Per-communicator figures for /metrics. Times are histograms with these
 * upper bounds (seconds, then +Inf). */
#define NSC_LIVE_HIST_BOUNDS 13
extern const double nsc_live_hist_le[NSC_LIVE_HIST_BOUNDS];
#define NSC_LIVE_MAX_FUNCS 16  /* collective functions tracked per communicator */

typedef struct nsc_live_hist {
    uint64_t buckets[NSC_LIVE_HIST_BOUNDS + 1];  /* per bound, not cumulative; last: +Inf */
    uint64_t count;
    double sum_s;
} nsc_live_hist;

typedef struct nsc_live_func_stat {
    char name[32];
    uint64_t collectives;  /* highest seqNumber seen + 1 */
    nsc_live_hist duration;  /* one per rank and collective: Coll start to completion (host clock) */
} nsc_live_func_stat;

typedef struct nsc_live_comm_stat {
    char job[64], name[64];
    uint64_t id;
    int32_t nranks, ranks_seen;
    uint64_t events;
    double bus_bw;           /* bytes/s, mean over the completions of the last rate window */
    double lag_s;            /* longest time a rank has been behind the furthest one (collector clock) */
    int32_t lag_rank;        /* that rank; -1: none behind */
    uint32_t lagging, hung;  /* rank x function pairs past the lag threshold (as status counts them) */
    uint32_t hung_colls;     /* its hung collectives (docs/api-figures.md "Hung") */
    uint32_t in_flight;      /* ranks' latest collectives started and not completed */
    double in_flight_max_s;  /* the oldest of those, seen this long ago */
    /* One per rank and collective: when the collector first saw the rank's
     * Coll, after it first saw any rank's (0 for the first to arrive). */
    nsc_live_hist arrival;
    int nf;
    nsc_live_func_stat f[NSC_LIVE_MAX_FUNCS];
} nsc_live_comm_stat;

/* The `max` communicators with the most recent events (all if fewer), most
 * recent first, into *out (allocated, the caller frees it; NULL if none):
 * *n of them, *omitted left out. 0, or -1 (memory). */
int nsc_live_comm_stats(const nsc_live *l, uint64_t now, size_t max, nsc_live_comm_stat **out,
                        size_t *n, size_t *omitted);

/* Rank progress changed since the last call, for the store (nsc_store_put_progress). */
typedef int (*nsc_live_progress_fn)(void *arg, const nsc_store_progress *p);
int nsc_live_take_progress(nsc_live *l, nsc_live_progress_fn fn, void *arg);

/* Rebuild from a store: communicators and their ranks, each rank's last
 * collective (progress records), lifecycle records, and the events the store
 * committed (events_total; a communicator's own count starts again at 0).
 * Processes with no death record count as alive when seen within the
 * heartbeat timeout of now. The limits apply; cfg's evict_ns too. */
int nsc_live_from_store(nsc_store_reader *rd, const nsc_live_cfg *cfg, uint64_t now,
                        nsc_live **out);

/* The state as a snapshot another collector can read (live_snap.c): *out
 * (malloc'd, the caller frees it), *len bytes. now is the collector's clock,
 * wall_ns the wall clock at the same moment. 0, or -1 (memory). */
int nsc_live_snapshot(const nsc_live *l, uint64_t now, uint64_t wall_ns, uint8_t **out, size_t *len);
/* A snapshot back into a state whose times are the reader's clock (now,
 * wall_now_ns: the reader's monotonic and wall clocks at one moment). 0,
 * or -1 with *why saying what is wrong (cut short, garbage, out of memory);
 * *out is then NULL. Only reads of the state (status, summary, counts,
 * metrics, merging) may use it: it has no contexts for sections. Its
 * ranks' progress is known as of the snapshot's time, and a rank is judged
 * lagging as it was then, also once merged into a fresher state. */
int nsc_live_from_snapshot(const void *buf, size_t len, const nsc_live_cfg *cfg, uint64_t now,
                           uint64_t wall_now_ns, nsc_live **out, const char **why);
/* Merge from into into (live_merge.c has the rules). Both in one time base.
 * 0, or -1 (memory; into is then partly merged). */
int nsc_live_merge(nsc_live *into, const nsc_live *from);

#endif
