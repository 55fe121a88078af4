/* live_int.h: what the live state's own files share (engine/live/live*.c);
 * nothing outside them includes it.
 *
 * Owns the live state's tables: jobs, communicators (their ranks' progress
 * per function, first-seen times, histograms), processes (their contexts,
 * strings and Colls awaiting completion), agents, and the (comm, rank,
 * function) cells changed since progress was last taken. Tables are small
 * arrays searched linearly: a collector sees hundreds of processes and
 * communicators, and the per-section work touches a process's few contexts
 * and its Coll events.
 *
 * Which file owns what:
 *   live.c       the tables: building them from sections, lifecycle records
 *                and ticks; eviction
 *   live_store.c the progress taken for the store, the tables rebuilt from it
 *   live_read.c  reading them: judgements (alive, lagging, hung), counts,
 *                per-communicator metrics, the status and summary JSON
 *   live_snap.c  the snapshot: the tables serialized, and decoded into
 *                another collector's time base
 *   live_merge.c one state merged into another (several collectors' views)
 *   live_ledger.c the communicators' figures from the ledger records
 */
#ifndef NCCLSCOPE_LIVE_INT_H
#define NCCLSCOPE_LIVE_INT_H

#include "live.h"

#define SEEN_RING 256  /* first-seen times of the latest seqNumbers per (comm, func) */
#define MAX_FUNCS NSC_LIVE_MAX_FUNCS
#define PENDING 128    /* Colls per process awaiting their completion (oldest forgotten) */

typedef struct prog {        /* one rank's last collective of one function */
    uint64_t seq, coll_id;
    uint64_t since_ns;       /* collector time it was seen */
    /* collector time it is known as of: 0 now (this collector's own);
     * read from another collector's snapshot, when that was taken (what
     * the rank did after it is unknown, so it is judged then) */
    uint64_t known_ns;
    int done;                /* completion seen */
} prog;

typedef struct rank_st {
    int seen;
    uint32_t proc;           /* index + 1 into processes; 0 unknown */
    char host[64];
    uint32_t pid;
    prog p[MAX_FUNCS];       /* by the communicator's func index */
    int has[MAX_FUNCS];
} rank_st;

typedef struct func_st {
    char name[32];
    uint64_t max_seq;
    uint64_t ring_seq[SEEN_RING], ring_ns[SEEN_RING];  /* first time a seq was seen */
    nsc_live_hist duration;
} func_st;

typedef struct comm_st {
    uint32_t job;
    uint64_t id;
    int32_t nranks;
    char name[64];
    rank_st *ranks;          /* grown to the highest rank seen, not to nranks */
    int32_t nalloc;
    func_st *f;              /* grown as functions are seen (MAX_FUNCS at most) */
    int nf;
    size_t fcap;
    uint64_t events, tick_events;
    uint64_t last_ns;        /* collector time of its latest event */
    nsc_live_hist arrival;
    double rate, bw_sum, bw_avg;
    uint64_t bw_n;
    /* Its figures come from the ledger (live_ledger.c) once one of its
     * records came, from its raw Colls until then. */
    int from_ledger;
    struct open_coll *open;  /* nopen (cfg.open_colls) slots, allocated at its first record */
    uint32_t nopen;
} comm_st;

typedef struct ctx_map {
    uint16_t index;
    uint32_t comm;           /* index into comms */
    int32_t rank;
} ctx_map;

typedef struct pending {   /* a Coll whose completion has not come yet */
    uint64_t id, start_ns, count;  /* its host start and element count */
    uint32_t comm;
    int32_t rank;
    int func;
    unsigned tsize;
    int used;
} pending;

typedef struct str_map {
    uint16_t id;
    char text[32];
} str_map;

typedef struct proc_st {
    char host[64], job[64], agent[64];
    uint32_t pid;
    uint64_t last_ns;
    int died, reason;
    int finished;  /* its plugin shut down cleanly (NSC_A2C_FINISHED) */
    uint64_t died_ns, finished_ns;
    ctx_map *ctx;
    size_t nctx, ctx_cap;
    str_map *str;
    size_t nstr, str_cap;
    nsc_counters counters; /* the latest the plugin sent: cumulative, so replaced */
    uint64_t shed_ns;      /* when its self-cost guard's shed types last changed */
    pending pend[PENDING]; /* a ring; completions come in the same or a later section */
    unsigned pend_next;
} proc_st;

typedef struct agent_st {
    char id[64], host[64];
    uint64_t last_ns;
} agent_st;

typedef struct dirty {
    uint32_t comm;
    int32_t rank;
    int func;
} dirty;

/* A job: its name, and when it last sent a section. Its processes say when
 * it ran, except those refused by a limit: a job sending only for them has
 * not ended. */
typedef struct job_st {
    char name[64];
    uint64_t sent_ns;
} job_st;

struct nsc_live {
    nsc_live_cfg cfg;
    job_st *jobs;
    size_t njobs, jobs_cap;
    comm_st *comms;
    size_t ncomms, comms_cap;
    proc_st *procs;
    size_t nprocs, procs_cap;
    agent_st *agents;
    size_t nagents, agents_cap;
    dirty *dirty;
    size_t ndirty, dirty_cap;
    uint64_t tick_ns, events;
    uint64_t evicted_jobs, refused[NSC_LIVE_LIMITS];
    uint64_t ledger_dropped;  /* ledger records no figure was made of (live_ledger.c) */
    int has_wall;     /* the wall clock of the time base is known: UTC ns = time + wall_ns */
    int64_t wall_ns;
};

/* Find-or-add of live.c's tables (live_merge.c adds with them too): an
 * index, or -1 (memory); nsc_live_rank: NULL for a rank out of range or
 * memory; nsc_live_func: -1 when MAX_FUNCS are taken or memory. None of
 * them applies the limits (a merge holds what the collectors held). */
long nsc_live_job(nsc_live *l, const char *job);
long nsc_live_comm(nsc_live *l, uint32_t job, uint64_t id, int32_t nranks);
rank_st *nsc_live_rank(comm_st *c, int32_t rank);
long nsc_live_proc(nsc_live *l, const char *host, uint32_t pid);
int nsc_live_func(comm_st *c, const char *name);

/* live.c's steps that the ledger's records (live_ledger.c) and the rebuild
 * from the store (live_store.c) take too. */
int nsc_live_admit_job(nsc_live *l, const char *job, long *out);
int nsc_live_admit_comm(nsc_live *l, uint32_t job, uint64_t id, int32_t nranks, long *out);
int nsc_live_admit_proc(nsc_live *l, const char *host, uint32_t pid, const char *job, const char *agent,
                        long *out);
const ctx_map *nsc_live_ctx_of(const proc_st *p, uint16_t index);
int nsc_live_mark_dirty(nsc_live *l, uint32_t comm, int32_t rank, int func);
void nsc_live_observe(nsc_live_hist *h, double s);
/* The rank moved to collective seq of func (seen at now): *rout is its
 * state when that is its latest, *fout the function's index. 0 or -1. */
int nsc_live_advance(nsc_live *l, uint32_t ci, int32_t rank, const char *func, uint64_t seq, uint64_t now,
                     rank_st **rout, int *fout);
/* A communicator's open collectives, freed with it. */
void nsc_live_ledger_free(comm_st *c);

/* The definitions status, watch, diagnose, the web view and /metrics share
 * (live_read.c; docs/api.md, "Alive, dead, lagging, hung, ended"). */
/* Alive: neither finished nor dead, and heard within the heartbeat timeout. */
int nsc_live_proc_alive(const nsc_live *l, const proc_st *p, uint64_t now);
/* When a process that is not alive stopped: finished, died or last heard. */
uint64_t nsc_live_proc_end(const proc_st *p);
/* Per job (by index), when its last process stopped, or 0 while one of them
 * is alive (or none is known): malloc'd, NULL when out of memory. */
uint64_t *nsc_live_job_ends(const nsc_live *l, uint64_t now);
/* Per function of a communicator, the furthest collective any rank reached
 * and how many ranks completed it: what hung compares a rank against, made
 * once per communicator (one pass over its ranks, not one per rank). */
typedef struct front {
    uint64_t seq[MAX_FUNCS];
    uint32_t done[MAX_FUNCS];
} front;
void nsc_live_front_of(const comm_st *c, front *fr);
/* Lagging (nsc_fig_lagging) in function f; *for_ns: for how long. */
int nsc_live_lagging(const nsc_live *l, const comm_st *c, const rank_st *r, int f, uint64_t now, uint64_t *for_ns);
/* Hung (nsc_fig_hung) in function f, against the communicator's front. */
int nsc_live_hung(const nsc_live *l, const front *fr, const rank_st *r, int f, uint64_t now);
/* Hung collective (docs/api-figures.md "Hung"): one a rank is stuck at. The
 * function's one with the largest seq below `below`; 0 when none. Walking
 * down from UINT64_MAX lists each once without memory: a communicator's
 * stuck ranks are nearly always at one or two collectives. */
int nsc_live_hung_coll_below(const nsc_live *l, const comm_st *c, const front *fr, int f, uint64_t now,
                             uint64_t below, uint64_t *seq);

#endif
