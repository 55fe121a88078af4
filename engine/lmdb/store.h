/* store.h: the collector's LMDB store.
 *
 * Owns the on-disk layout (one LMDB environment in a directory, several named
 * databases; docs/collector-store.md, "Storage layout"), the single writer's
 * transactions with map growth and retention, and the read-only queries the
 * collector's API and the CLI run against the same files.
 *
 * Writer: one thread calls begin, put (any number of batches), commit. commit
 * returns 0 only once the transaction is durable, so the caller may then
 * acknowledge every batch it holds. A put that fills the map is not an error:
 * commit grows the map and replays the transaction, so the batches passed to
 * put must stay valid until commit returns. Raw timestamps are stored
 * unchanged; clock models are stored beside them and applied when reading.
 *
 * Readers: any thread (MDB_NOTLS), any process (open with read_only). A reader
 * never blocks the writer's commits; only growing the map waits for this
 * process's open readers to finish.
 *
 * Errors: 0, a negative NSC_STORE_E* (store_err.h), or an LMDB / errno code passed
 * through; nsc_store_strerror explains all of them.
 *
 * The implementation is one file per concern (store.c, store_*.c);
 * store_int.h, private to them, says which file owns what.
 */
#ifndef NCCLSCOPE_STORE_H
#define NCCLSCOPE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "block.h"
#include "clock.h"
#include "event.h"
#include "keys.h"
#include "ledger.h"
#include "store_err.h"

/* 3: the ledger database (docs/collector-store.md); 4: its values' version 2
 * (ledger_pack.c); 5: its keys by rank and first seq, values of a page
 * (keys.h); 6: the p2p index (database `p2p`); a store of another version
 * is refused (ESCHEMA), not migrated. */
#define NSC_STORE_SCHEMA 6
/* Records whose communicator context is unknown or none (ProxyCtrl), and
 * states/completions whose event is not in the same batch, go to the
 * process's own blocks: comm NSC_STORE_PROC_COMM, rank = the process id. */
#define NSC_STORE_PROC_COMM UINT64_MAX

const char *nsc_store_strerror(int err);

typedef struct nsc_store_opts {
    size_t initial_map;      /* bytes; 0: 64 MiB. The map doubles when full. */
    size_t max_map;          /* growth stops here; 0: 1 TiB */
    int read_only;
    int zstd_level;          /* 0: default 3; -1: store blocks uncompressed */
    uint64_t retain_bytes;   /* retention by size of live pages; 0: none */
    uint64_t retain_age_ns;  /* retention by age of commit; 0: none */
    int wall_clock;          /* the collector: record the wall clock of its time base (nsc_store_wall) */
    int no_sync;             /* a cache rebuilt after a crash: commits skip fsync (lost at power failure) */
} nsc_store_opts;

typedef struct nsc_store nsc_store;

int nsc_store_open(const char *dir, const nsc_store_opts *opts, nsc_store **out);
void nsc_store_close(nsc_store *st);

/* What one decoded batch brings: the sender's identity and records. */
typedef struct nsc_store_batch {
    const nsc_proc *proc;
    const nsc_ctx_def *ctxs;
    size_t nctxs;
    const nsc_str_def *strs;
    size_t nstrs;
    const nsc_event *events;
    size_t nevents;
    const nsc_state_rec *states;
    size_t nstates;
    const nsc_completion *completions;
    size_t ncompletions;
} nsc_store_batch;

/* ---- writer (one thread) ---- */
int nsc_store_begin(nsc_store *st, uint64_t now_ns);  /* now: collector time, for ages */
int nsc_store_put(nsc_store *st, const nsc_store_batch *b);
int nsc_store_put_clock(nsc_store *st, const char *host, const nsc_clock_model *m);
int nsc_store_commit(nsc_store *st);
void nsc_store_abort(nsc_store *st);

/* What putting one process's ledger records did: records new to the store,
 * records that replaced a stored one of the same key (an in-flight record
 * by a later one), in-flight records refused because their collective is
 * stored completed already, and malformed records (a negative rank, unknown
 * flags, a string the batch does not define, too many edges), which are
 * skipped while the others are stored. */
typedef struct nsc_store_ledger_counts {
    uint64_t stored, replaced, stale, rejected;
} nsc_store_ledger_counts;

/* A process's ledger records to put; proc, batch and the struct itself must
 * stay valid until commit returns (like a batch), and counts is set again
 * when the transaction is replayed, so it is exact once commit returned 0. */
typedef struct nsc_store_ledger {
    const nsc_proc *proc;
    const nsc_ledger_batch *batch;
    nsc_store_ledger_counts counts;
} nsc_store_ledger;
int nsc_store_put_ledger(nsc_store *st, nsc_store_ledger *l);

/* Delete the oldest blocks and ledger values (by commit time) beyond the age and size limits,
 * with their index entries, in one durable transaction. */
int nsc_store_retain(nsc_store *st, uint64_t now_ns, uint64_t *deleted_blocks);

/* Totals kept in the meta database, updated in every transaction. */
typedef struct nsc_store_stats {
    uint64_t events, states, completions, blocks;
    uint64_t block_bytes;     /* stored block values */
    uint64_t unknown_ctx;     /* events whose context was never defined */
    uint64_t unknown_str;     /* string ids never defined (stored as 0) */
    uint64_t unattached_states; /* states whose event was not in their batch (never joined) */
    uint64_t next_block_seq;
    uint64_t max_span_ns;     /* longest block (t_max - t_min): how far back a scan looks */
    uint64_t ledger_records;  /* ledger records stored */
    uint64_t ledger_bytes;    /* their stored values */
    uint64_t ledger_live_bytes; /* pages in use by the ledger database (not persisted) */
    uint64_t live_bytes;      /* pages in use by all databases (not persisted) */
    uint64_t map_bytes;       /* current map size (not persisted) */
} nsc_store_stats;

/* ---- readers (any thread) ---- */
typedef struct nsc_store_reader nsc_store_reader;

int nsc_store_read_begin(nsc_store *st, nsc_store_reader **out);
/* As read_begin, but NSC_STORE_EBUSY at once where it would wait for the map
 * to grow: for threads that must never wait on the writer (the HTTP loop). */
int nsc_store_read_begin_nowait(nsc_store *st, nsc_store_reader **out);
void nsc_store_read_end(nsc_store_reader *rd);
/* The blocks the reader's block iterators decoded (or tried to) so far:
 * what a read of raw events cost. */
uint64_t nsc_store_read_blocks_decoded(const nsc_store_reader *rd);
/* Nonzero while the writer waits to grow the map: a reader that is itself
 * waiting on something slow (a client) must end its transaction now, since
 * the writer and every new reader wait for it. */
int nsc_store_grow_pending(nsc_store *st);

int nsc_store_stats_get(nsc_store_reader *rd, nsc_store_stats *s);
int nsc_store_job_id(nsc_store_reader *rd, const char *job, uint32_t *id);
/* Store-wide string id -> text (copied, NUL-terminated, truncated to cap). */
int nsc_store_str(nsc_store_reader *rd, uint32_t id, char *text, size_t cap);
int nsc_store_str_id(nsc_store_reader *rd, const char *text, uint32_t *id);

typedef struct nsc_store_comm {
    uint64_t comm_id;
    int32_t nranks;
    char name[64];
} nsc_store_comm;
/* Communicators of a job, in comm id order; *out is malloc'd (free it). */
int nsc_store_comms(nsc_store_reader *rd, uint32_t job, nsc_store_comm **out, size_t *n);

typedef struct nsc_store_rank {
    uint32_t proc_id;
    uint32_t pid;
    int32_t gpu, local_rank;
    char host[64];
} nsc_store_rank;
int nsc_store_rank_info(nsc_store_reader *rd, uint32_t job, uint64_t comm, int32_t rank,
                        nsc_store_rank *out);

typedef struct nsc_store_rank_entry {
    int32_t rank;
    nsc_store_rank info;
} nsc_store_rank_entry;
/* The ranks of (job, comm) seen so far, in rank order; *out is malloc'd. */
int nsc_store_comm_ranks(nsc_store_reader *rd, uint32_t job, uint64_t comm,
                         nsc_store_rank_entry **out, size_t *n);

/* The process pid of host (as the process named its host) that the store
 * holds: its job, the latest by id where the pid came back in another job;
 * local_rank and gpu -1. A scan of every process: for the rare caller (a
 * collector placing a ledger batch after its restart). 0, or ENOTFOUND. */
int nsc_store_find_proc(nsc_store_reader *rd, const char *host, uint32_t pid, nsc_proc *out);

typedef struct nsc_store_job {
    uint32_t id;  /* creation order: a later job has a larger id */
    char name[64];
} nsc_store_job;
/* Every job, in id order; *out is malloc'd. */
int nsc_store_jobs(nsc_store_reader *rd, nsc_store_job **out, size_t *n);

/* The blocks of (job, comm, rank) that may hold records overlapping [t0, t1]
 * (raw host times), one at a time in block start order. Lives inside the
 * reader's transaction: close it before read_end. */
typedef struct nsc_store_blocks nsc_store_blocks;
int nsc_store_blocks_open(nsc_store_reader *rd, uint32_t job, uint64_t comm, int32_t rank,
                          uint64_t t0, uint64_t t1, nsc_store_blocks **out);
/* The same over the blocks holding a P2p event only (the p2p index). */
int nsc_store_p2p_blocks_open(nsc_store_reader *rd, uint32_t job, uint64_t comm, int32_t rank, uint64_t t0,
                              uint64_t t1, nsc_store_blocks **out);
/* The next block's key without decoding it: 0, 1 at the end, or an error. */
int nsc_store_blocks_peek(const nsc_store_blocks *it, nsc_block_key *key);
/* Decode the next block (release it with nsc_block_release) and advance:
 * 0, 1 at the end, or an error. NSC_STORE_EBLOCK: the block in *key is
 * damaged (it does not decode; nothing to release) and was stepped over, so
 * the next call reads the one after it: the damage stays that block's. */
int nsc_store_blocks_next(nsc_store_blocks *it, nsc_block_key *key, nsc_block *blk);
/* The same, decoding only the event types and parts asked for
 * (nsc_block_decode_sel). */
int nsc_store_blocks_next_sel(nsc_store_blocks *it, uint32_t types, unsigned parts,
                              nsc_block_key *key, nsc_block *blk);
/* Step over the next blocks whose records all end before t (raw host time,
 * their header's t_max) without decoding them: for a reader of the records
 * that start from t on, as open reaches max_span back for the others. 0, or
 * an error. */
int nsc_store_blocks_skip_before(nsc_store_blocks *it, uint64_t t);
/* What was wrong with the block the last NSC_STORE_EBLOCK stepped over. */
const char *nsc_store_blocks_damage(const nsc_store_blocks *it);
void nsc_store_blocks_close(nsc_store_blocks *it);

/* Every event of (job, comm, rank) that overlaps [t0, t1] (raw host times),
 * block by block in block start order. fn returns nonzero to stop (returned). */
typedef int (*nsc_store_event_fn)(void *arg, const nsc_block_key *key, const nsc_block *blk,
                                  const nsc_event *ev);
int nsc_store_scan(nsc_store_reader *rd, uint32_t job, uint64_t comm, int32_t rank, uint64_t t0,
                   uint64_t t1, nsc_store_event_fn fn, void *arg);

/* A job's ledger records of one communicator with seq in [seq_lo, seq_hi]
 * and rank in [rank_lo, rank_hi], in (seq, rank, func, peer) order; string
 * fields hold store-wide string ids (nsc_store_str). fn returns nonzero to
 * stop (returned); the record is valid during the call. */
typedef struct nsc_store_ledger_q {
    uint32_t job;
    uint64_t comm;
    uint64_t seq_lo, seq_hi;
    int32_t rank_lo, rank_hi;
} nsc_store_ledger_q;
typedef int (*nsc_store_ledger_fn)(void *arg, const nsc_ledger_rec *r);
int nsc_store_ledger_read(nsc_store_reader *rd, const nsc_store_ledger_q *q, nsc_store_ledger_fn fn,
                          void *arg);

/* One rank's record of a collective. */
typedef struct nsc_store_coll_hit {
    int32_t rank;
    nsc_block_key block;
    uint32_t position;  /* index of the Coll event in the block */
    nsc_event event;
} nsc_store_coll_hit;
/* The collective (comm, func, seq) across ranks, in rank order; at most max. */
int nsc_store_find_coll(nsc_store_reader *rd, uint32_t job, uint64_t comm, const char *func,
                        uint64_t seq, nsc_store_coll_hit *hits, size_t max, size_t *n);

int nsc_store_get_clock(nsc_store_reader *rd, const char *host, nsc_clock_model *m);

/* The wall clock of the collector's time base, which aligned times are on:
 * UTC ns since the epoch = collector time + *offset_ns. With the wall_clock
 * option each begin records it (nsc_store_wall_due) when it moved by more
 * than NSC_STORE_WALL_SLACK_NS from the store's latest record (an NTP step,
 * a reboot); the latest record is returned. *reset: the collector's clock
 * went back between two records (its host rebooted), so times stored before
 * that are on another base and their wall time is not known. ENOTFOUND: no
 * record (a store of an older collector). */
#define NSC_STORE_WALL_SLACK_NS 10000000ll
int nsc_store_wall(nsc_store_reader *rd, int64_t *offset_ns, int *reset);

/* One record of the wall clock: UTC ns when taken, the collector's time then
 * (ref_ns), and CLOCK_REALTIME - CLOCK_MONOTONIC read back to back, rounded
 * to the millisecond (offset_ns). */
typedef struct nsc_store_wall_rec {
    uint64_t utc_ns, ref_ns;
    int64_t offset_ns;
} nsc_store_wall_rec;
/* A writer's wall clock: the offset known (its store's latest record, or
 * the one it recorded), and whether that record is in the store. Two
 * readings of one host's offset, each rounded to the millisecond, differ
 * by 1 ms where it lies on a millisecond's boundary: kept while a reading
 * is within the slack, one offset stays the store's, whichever collector
 * or restart reads it (docs/api.md, "Wall-clock time"). */
typedef struct nsc_store_wall_state {
    int64_t offset_ns;
    int known, stored;
} nsc_store_wall_state;
/* The wall clock at collector time now_ns into *r, the known offset where
 * the reading is within the slack of it; 1 when r is to be recorded (not
 * stored yet, or it moved by more than the slack), else 0. The LMDB store's
 * begin and the ClickHouse writer (collector/ch/chstore.c) decide alike. */
int nsc_store_wall_due(const nsc_store_wall_state *w, uint64_t now_ns, nsc_store_wall_rec *r);
/* r was recorded: its offset is the one known and stored. */
void nsc_store_wall_recorded(nsc_store_wall_state *w, const nsc_store_wall_rec *r);
/* The offset st's begin recorded last (the wall_clock option): 0, or -1
 * when none yet. */
int nsc_store_wall_kept(const nsc_store *st, int64_t *offset_ns);
/* A wall record in the open transaction (a query's store loaded from
 * ClickHouse gets the collectors' records this way). */
int nsc_store_put_wall(nsc_store *st, const nsc_store_wall_rec *r);

/* ---- collector bookkeeping (meta records, written in the open transaction) ----
 * So that what the collector promised survives with the batches it stored:
 * which batch sequences of each agent are committed (dedupe across restarts),
 * the processes' lifecycle records, and each rank's last collective. */

/* Committed batch sequences of one agent epoch (docs/protocol.md: an agent's
 * spool identity; 0 for agents without one): sorted disjoint ranges [lo, hi). */
typedef struct nsc_store_seq_range {
    uint64_t lo, hi;
} nsc_store_seq_range;
/* Replaces the stored ranges of (agent, epoch). */
int nsc_store_put_agent_seqs(nsc_store *st, const char *agent, uint64_t epoch,
                             const nsc_store_seq_range *r, size_t n);

/* A process lifecycle record (docs/protocol.md: life), as the collector got it. */
typedef struct nsc_store_life {
    char host[64], job[64], agent[64];
    uint32_t pid;
    uint8_t event, reason;    /* NSC_A2C_STARTED / DIED, NSC_A2C_REASON_* */
    uint64_t ts_ns;           /* the agent's clock when it saw it (raw host time) */
    uint64_t ref_ns;          /* the collector's clock when it received it; records
                               * put with one time are stored a nanosecond apart */
    uint64_t last_batch_seq;  /* the process's last batch sequence */
} nsc_store_life;
int nsc_store_put_life(nsc_store *st, const nsc_store_life *l);

/* The last collective of one rank and function (overwritten as it moves on). */
typedef struct nsc_store_progress {
    char job[64], func[64];
    uint64_t comm_id;
    int32_t rank;
    uint64_t seq;      /* Coll seqNumber */
    uint64_t ref_ns;   /* collector time of the last change */
    uint8_t done;      /* its completion came (stores older than this flag: 1) */
} nsc_store_progress;
int nsc_store_put_progress(nsc_store *st, const nsc_store_progress *p);

/* Readers of the above, in key order (agent; host, pid, time; job, comm, rank,
 * func). fn returns nonzero to stop (returned); r is valid during the call. */
typedef int (*nsc_store_agent_fn)(void *arg, const char *agent, uint64_t epoch,
                                  const nsc_store_seq_range *r, size_t n);
int nsc_store_agents(nsc_store_reader *rd, nsc_store_agent_fn fn, void *arg);
typedef int (*nsc_store_life_fn)(void *arg, const nsc_store_life *l);
int nsc_store_lives(nsc_store_reader *rd, nsc_store_life_fn fn, void *arg);
typedef int (*nsc_store_progress_fn)(void *arg, const nsc_store_progress *p);
int nsc_store_progresses(nsc_store_reader *rd, nsc_store_progress_fn fn, void *arg);
/* Every stored host clock model, by host; m is freed after the call (copy
 * what you keep, e.g. by serializing it). */
typedef int (*nsc_store_clock_fn)(void *arg, const char *host, const nsc_clock_model *m);
int nsc_store_clocks(nsc_store_reader *rd, nsc_store_clock_fn fn, void *arg);

#endif
