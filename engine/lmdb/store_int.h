/* store_int.h: what the store's own files share (engine/lmdb/store*.c);
 * nothing outside the store includes it.
 *
 * Owns the store object, split by who owns each part and how long it lives:
 * the environment (opened once, shared by the writer and every reader
 * thread), the writer (its open transaction, the operations to replay it
 * after the map grew, the totals), and the scratch one batch is put with
 * (reused from batch to batch, meaningful only while one batch is put).
 * Also the database numbering, the reader, and the functions one of the
 * store's files provides to another (nsc_st_*).
 *
 * Which file owns what:
 *   store.c         the environment: open, close, schema, map growth, errors
 *   store_txn.c     the writer's transaction: begin, put, commit, replay
 *   store_batch.c   one batch into blocks: identities, grouping, block writes
 *   store_group.c   a batch's records grouped and ordered by (comm, rank)
 *   store_names.c   names and identities: jobs, processes, strings, comms, ranks
 *   store_colls.c   the block indexes: the collective index (its runs, writes
 *                   and lookups) and the p2p index (blocks holding a P2p event)
 *   store_retain.c  retention: deleting the oldest blocks and ledger values
 *   store_ledger.c  the ledger: upserting records, deleting values, reading
 *   store_lends.c   the ledger writer's memory of where the values it wrote end
 *   store_stats.c   the totals record and live size
 *   store_read.c    readers: transactions, block iteration, scans
 *   store_meta.c    meta records: clock models, agents, lifecycle, progress
 */
#ifndef NCCLSCOPE_STORE_INT_H
#define NCCLSCOPE_STORE_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "ledger_pack.h"
#include "store.h"

enum { DB_META, DB_JOBS, DB_PROCS, DB_STRS, DB_COMMS, DB_RANKS, DB_BLOCKS, DB_COLLS, DB_AGE, DB_LEDGER, DB_P2P, NDBS };

#define MEMO_SIZE 65536 /* every u16 context index and string id */

enum { K_EVENTS, K_STATES, K_COMPL };

typedef enum op_kind { OP_BATCH, OP_META, OP_LEDGER } op_kind;

/* What the open transaction did, kept to replay it after the map grew. */
typedef struct op {
    op_kind kind;
    const nsc_store_batch *batch;
    nsc_store_ledger *ledger;
    uint8_t *key;
    size_t klen;
    uint8_t *val;
    size_t len;
} op;

typedef struct group {
    uint64_t comm;
    int32_t rank;
} group;

/* Colls of one function in one block, in stored order, whose seqNumbers
 * count up by one: what one collective index entry stands for. */
typedef struct coll_run {
    uint32_t func;
    uint32_t position;  /* event index of the first */
    uint64_t first, last;
} coll_run;

typedef struct memo {
    uint32_t stamp;
    uint32_t value;  /* group (contexts) or store-wide id (strings) */
} memo;

/* Opened once; readers of any thread use it beside the writer. */
typedef struct nsc_st_env {
    MDB_env *mdb;
    MDB_dbi dbi[NDBS];
    nsc_store_opts opts;
    pthread_rwlock_t resize;  /* readers share it; growing the map takes it alone */
    atomic_int grow_waiters;  /* threads waiting for (or holding) resize alone */
} nsc_st_env;

/* Where the ledger values last written end (store_lends.c). */
typedef struct nsc_st_lend nsc_st_lend;
typedef struct nsc_st_lends {
    nsc_st_lend **slots;  /* NULL until the first is kept */
} nsc_st_lends;

/* The single writer's transaction, and what outlives one. */
typedef struct nsc_st_writer {
    MDB_txn *txn;
    int txn_rc;               /* first failure in the open transaction */
    uint64_t now_ns;
    uint64_t life_ns;         /* key time of the last lifecycle record put */
    nsc_store_wall_state wall;
    int wall_read;            /* the store's latest wall record was looked for */
    op *ops;
    size_t nops, ops_cap;
    nsc_store_stats committed, pending;
    nsc_st_lends lends;
} nsc_st_writer;

/* Scratch of the batch being put (and of the block being indexed). */
typedef struct nsc_st_scratch {
    nsc_block_enc *enc;
    uint32_t stamp;
    uint32_t proc;
    memo *ctx_memo, *str_memo;
    group *groups;
    size_t ngroups, groups_cap;
    uint32_t *ev_group;       /* group of each event, */
    size_t ev_cap;
    uint32_t *rec_group;      /* of each state, then each completion */
    size_t rec_cap;
    uint64_t *id_keys;
    uint32_t *id_groups;
    size_t id_cap;
    uint64_t id_lo;           /* the events' ids span [id_lo, id_lo + id_span); */
    size_t id_span;           /* 0: too sparse to be counted */
    /* Each kind's records in the order they go to their blocks (one per
     * group): at[k][first[k][g]] up to at[k][first[k][g + 1]] are group g's. */
    uint32_t *at[3], *first[3];
    size_t at_cap[3], first_cap[3];
    uint32_t *by_id, *id_count, *cursor;
    size_t by_id_cap, id_count_cap, cursor_cap;
    coll_run *runs;           /* a block's runs of collectives */
    size_t runs_cap;
    nsc_ledger_rec *lrecs;    /* a ledger batch's valid records, strings mapped, */
    size_t lrecs_cap;
    const nsc_ledger_rec **lsorted;  /* in key order; */
    size_t lsorted_cap;
    const nsc_ledger_rec **lmerged;  /* one value's records after the upsert */
    size_t lmerged_cap;
    nsc_lpack lstored;        /* the value's records before it */
    uint8_t *lval;            /* its new value */
    size_t lval_cap;
} nsc_st_scratch;

struct nsc_store {
    nsc_st_env env;
    nsc_st_writer w;
    nsc_st_scratch scratch;
};

struct nsc_store_reader {
    nsc_store *st;
    MDB_txn *txn;
    uint64_t blocks_decoded;  /* by its block iterators */
};

static inline MDB_val nsc_st_mval(const void *p, size_t n)
{
    MDB_val v = {n, (void *)p};
    return v;
}

static inline MDB_dbi nsc_st_rdbi(const nsc_store_reader *rd, int db)
{
    return rd->st->env.dbi[db];
}

static inline size_t nsc_st_text_len(const char *s, size_t cap)
{
    return strnlen(s, cap);
}

/* store_meta.c: the wall-clock record of begin (nsc_store_wall). */
int nsc_st_record_wall(nsc_store *st, uint64_t now_ns);

/* store.c */
int nsc_st_put(nsc_store *st, int db, const void *k, size_t klen, const void *v, size_t vlen);
int nsc_st_get_u32(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen, uint32_t *out);
int nsc_st_set_mapsize(nsc_store *st, size_t size);
int nsc_st_grow_map(nsc_store *st);

/* store_stats.c */
uint64_t nsc_st_live_bytes(MDB_txn *txn, const MDB_dbi *dbi);
int nsc_st_read_stats(MDB_txn *txn, const MDB_dbi *dbi, nsc_store_stats *s);
int nsc_st_write_stats(nsc_store *st);

/* store_txn.c */
int nsc_st_open_txn(nsc_store *st);
int nsc_st_push_meta(nsc_store *st, const void *key, size_t klen, const void *val, size_t vlen);

/* store_batch.c */
int nsc_st_put_batch(nsc_store *st, const nsc_store_batch *b);

/* store_ledger.c */
int nsc_st_put_ledger(nsc_store *st, nsc_store_ledger *l);
int nsc_st_delete_ledger(nsc_store *st, const MDB_val *key);

/* store_lends.c: where the value at k ends when its stored bytes are val
 * (len) as it was kept, else NULL; keep a value just written (or read). */
const nsc_lpack_end *nsc_st_lends_find(nsc_st_lends *c, const nsc_ledger_key *k, const void *val, size_t len);
void nsc_st_lends_keep(nsc_st_lends *c, const nsc_ledger_key *k, const void *val, size_t len,
                       const nsc_lpack_end *end);
void nsc_st_lends_free(nsc_st_lends *c);

/* store_names.c */
int nsc_st_intern(nsc_store *st, int db, const void *name, size_t len, const char *counter,
                  uint32_t *id);
int nsc_st_proc_identity(nsc_store *st, uint32_t job, const nsc_proc *p, uint32_t *proc);
int nsc_st_put_ctx(nsc_store *st, uint32_t job, const nsc_proc *p, const nsc_ctx_def *c);
int nsc_st_put_str(nsc_store *st, const nsc_str_def *s);

/* store_group.c */
void nsc_st_group_begin(nsc_st_scratch *sc);
int nsc_st_group_records(nsc_store *st, const nsc_store_batch *b);
nsc_str nsc_st_proc_str(nsc_store *st, nsc_str id);
nsc_str nsc_st_map_str(void *arg, nsc_str id);

/* store_colls.c: index the runs of a block just written, and the block in
 * `p2p` when it holds a P2p event; remove the entries of a block being
 * deleted. */
int nsc_st_index_block(nsc_store *st, const nsc_block_key *bk, const uint8_t *bkey,
                       const nsc_event *ev, size_t n);
int nsc_st_unindex_block(nsc_store *st, const nsc_block_key *bk, const uint8_t *bkey,
                         const nsc_event *ev, size_t n);

#endif
