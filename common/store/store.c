/* store.c: LMDB environment, writer transactions (map growth, replay,
 * retention) and reader queries. Layout: docs/collector.md. */
#include "store.h"

#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bytes.h"
#include "grow.h"

enum { DB_META, DB_JOBS, DB_PROCS, DB_STRS, DB_COMMS, DB_RANKS, DB_BLOCKS, DB_COLLS, DB_AGE, NDBS };
static const char *const db_names[NDBS] = {"meta",  "jobs",   "procs", "strs", "comms",
                                            "ranks", "blocks", "colls", "age"};

#define DEFAULT_MAP (64ull << 20)
#define DEFAULT_MAX_MAP (1ull << 40)
#define NSTATS 9
#define NO_GROUP UINT32_MAX
#define MEMO_SIZE 65536 /* every u16 context index and string id */
/* A batch's event ids are counted (to order its records) when they span at
 * most this many slots per event, plus a few thousand; a process numbers its
 * events one after another, so they are dense unless the batch is odd. */
#define ID_SLOTS_PER_EVENT 4
#define ID_SLOTS_MIN 4096
/* A Coll extends its function's newest run among this many latest runs:
 * bounds the search when a block interleaves many functions. */
#define RUN_LOOKBACK 16

typedef enum op_kind { OP_BATCH, OP_META } op_kind;

/* What the open transaction did, kept to replay it after the map grew. */
typedef struct op {
    op_kind kind;
    const nsc_store_batch *batch;
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

struct nsc_store {
    MDB_env *env;
    MDB_dbi dbi[NDBS];
    nsc_store_opts opts;
    pthread_rwlock_t resize;  /* readers share it; growing the map takes it alone */
    atomic_int grow_waiters;  /* threads waiting for (or holding) resize alone */
    /* writer state */
    MDB_txn *txn;
    int txn_rc;               /* first failure in the open transaction */
    uint64_t now_ns;
    uint64_t life_ns;         /* key time of the last lifecycle record put */
    op *ops;
    size_t nops, ops_cap;
    nsc_store_stats committed, pending;
    nsc_block_enc *enc;
    /* per-batch scratch */
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
};

enum { K_EVENTS, K_STATES, K_COMPL };

struct nsc_store_reader {
    nsc_store *st;
    MDB_txn *txn;
};

static const char *const err_text[] = {
    "ok", "out of memory",
    "store holds another schema version (another ncclscope release wrote it; use a new directory)",
    "store call out of order or writing a read-only store", "not found",
    "stored value failed to decode", "store map cannot grow past its maximum",
    "store busy: the map is being grown"};

const char *nsc_store_strerror(int err)
{
    if (err <= 0 && err > -(int)(sizeof err_text / sizeof *err_text))
        return err_text[-err];
    return mdb_strerror(err);
}

/* ---- small LMDB helpers ------------------------------------------------ */

static MDB_val mval(const void *p, size_t n)
{
    MDB_val v = {n, (void *)p};
    return v;
}

static int put(nsc_store *st, int db, const void *k, size_t klen, const void *v, size_t vlen)
{
    MDB_val key = mval(k, klen), val = mval(v, vlen);
    return mdb_put(st->txn, st->dbi[db], &key, &val, 0);
}

static int get_u32(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen, uint32_t *out)
{
    MDB_val key = mval(k, klen), val;
    int rc = mdb_get(txn, dbi, &key, &val);
    if (rc == MDB_NOTFOUND)
        return NSC_STORE_ENOTFOUND;
    if (rc)
        return rc;
    if (val.mv_size < 4)
        return NSC_STORE_ECORRUPT;
    *out = nsc_get_be32(val.mv_data);
    return 0;
}

static uint64_t live_bytes(MDB_txn *txn, const MDB_dbi *dbi)
{
    uint64_t total = 0;
    for (int i = 0; i < NDBS; i++) {
        MDB_stat s;
        if (mdb_stat(txn, dbi[i], &s) == 0)
            total += (uint64_t)(s.ms_branch_pages + s.ms_leaf_pages + s.ms_overflow_pages) *
                     s.ms_psize;
    }
    return total;
}

static int read_stats(MDB_txn *txn, const MDB_dbi *dbi, nsc_store_stats *s)
{
    MDB_val key = mval("stats", 5), val;
    memset(s, 0, sizeof *s);
    int rc = mdb_get(txn, dbi[DB_META], &key, &val);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (val.mv_size != NSTATS * 8)
        return NSC_STORE_ECORRUPT;
    uint64_t *f[NSTATS] = {&s->events,      &s->states,      &s->completions,
                           &s->blocks,      &s->block_bytes, &s->unknown_ctx,
                           &s->unknown_str, &s->next_block_seq, &s->max_span_ns};
    for (int i = 0; i < NSTATS; i++)
        *f[i] = nsc_get_be64((const uint8_t *)val.mv_data + 8 * i);
    return 0;
}

static int write_stats(nsc_store *st)
{
    const nsc_store_stats *s = &st->pending;
    const uint64_t f[NSTATS] = {s->events,      s->states,      s->completions,
                                s->blocks,      s->block_bytes, s->unknown_ctx,
                                s->unknown_str, s->next_block_seq, s->max_span_ns};
    uint8_t buf[NSTATS * 8];
    for (int i = 0; i < NSTATS; i++)
        nsc_put_be64(buf + 8 * i, f[i]);
    return put(st, DB_META, "stats", 5, buf, sizeof buf);
}

/* ---- map growth -------------------------------------------------------- */

/* Remap with every reader of this process out; readers that wait on
 * something else see grow_waiters and leave (nsc_store_grow_pending). */
static int set_mapsize(nsc_store *st, size_t size)
{
    atomic_fetch_add(&st->grow_waiters, 1);
    pthread_rwlock_wrlock(&st->resize);
    int rc = mdb_env_set_mapsize(st->env, size);
    pthread_rwlock_unlock(&st->resize);
    atomic_fetch_sub(&st->grow_waiters, 1);
    return rc;
}

static int grow_map(nsc_store *st)
{
    MDB_envinfo info;
    int rc = mdb_env_info(st->env, &info);
    if (rc)
        return rc;
    if (info.me_mapsize >= st->opts.max_map)
        return NSC_STORE_EFULL;
    size_t next = info.me_mapsize * 2;
    if (next > st->opts.max_map)
        next = st->opts.max_map;
    /* LMDB may only remap while no transaction of this process is open. */
    return set_mapsize(st, next);
}

/* ---- names and identities ---------------------------------------------- */

/* name -> id in db: keys 'n'+name -> id and 'i'+id -> name; a new name takes
 * the next id from the meta counter `counter` (ids start at 1). */
static int intern(nsc_store *st, int db, const void *name, size_t len, const char *counter,
                  uint32_t *id)
{
    uint8_t key[1 + 128];
    if (len > sizeof key - 1)
        return NSC_STORE_ECORRUPT;
    key[0] = 'n';
    memcpy(key + 1, name, len);
    int rc = get_u32(st->txn, st->dbi[db], key, len + 1, id);
    if (rc != NSC_STORE_ENOTFOUND)
        return rc;
    uint32_t last = 0;
    rc = get_u32(st->txn, st->dbi[DB_META], counter, strlen(counter), &last);
    if (rc && rc != NSC_STORE_ENOTFOUND)
        return rc;
    uint8_t idbuf[4], rkey[5] = {'i'};
    *id = last + 1;
    nsc_put_be32(idbuf, *id);
    nsc_put_be32(rkey + 1, *id);
    if ((rc = put(st, DB_META, counter, strlen(counter), idbuf, 4)) ||
        (rc = put(st, db, key, len + 1, idbuf, 4)) || (rc = put(st, db, rkey, 5, name, len)))
        return rc;
    return 0;
}

static size_t text_len(const char *s, size_t cap)
{
    return strnlen(s, cap);
}

static int proc_identity(nsc_store *st, uint32_t job, const nsc_proc *p, uint32_t *proc)
{
    uint8_t name[8 + sizeof p->host];
    size_t hl = text_len(p->host, sizeof p->host);
    nsc_put_be32(name, job);
    nsc_put_be32(name + 4, p->pid);
    memcpy(name + 8, p->host, hl);
    return intern(st, DB_PROCS, name, 8 + hl, "next_proc", proc);
}

static int put_ctx(nsc_store *st, uint32_t job, const nsc_proc *p, const nsc_ctx_def *c)
{
    uint8_t ckey[7] = {'c'}, cval[16], comm[NSC_KEY_COMM_LEN], rank[NSC_KEY_RANK_LEN];
    uint8_t commval[4 + sizeof c->name], rankval[16 + sizeof p->host];
    nsc_put_be32(ckey + 1, st->proc);
    nsc_put_be16(ckey + 5, c->index);
    nsc_put_be64(cval, c->comm_id);
    nsc_put_be32(cval + 8, (uint32_t)c->rank);
    nsc_put_be32(cval + 12, (uint32_t)c->nranks);
    size_t nl = text_len(c->name, sizeof c->name), hl = text_len(p->host, sizeof p->host);
    nsc_put_be32(commval, (uint32_t)c->nranks);
    memcpy(commval + 4, c->name, nl);
    nsc_put_be32(rankval, st->proc);
    nsc_put_be32(rankval + 4, p->pid);
    nsc_put_be32(rankval + 8, (uint32_t)p->gpu);
    nsc_put_be32(rankval + 12, (uint32_t)p->local_rank);
    memcpy(rankval + 16, p->host, hl);
    nsc_key_comm(comm, job, c->comm_id);
    nsc_key_rank(rank, job, c->comm_id, c->rank);
    int rc;
    if ((rc = put(st, DB_PROCS, ckey, sizeof ckey, cval, sizeof cval)) ||
        (rc = put(st, DB_COMMS, comm, sizeof comm, commval, 4 + nl)) ||
        (rc = put(st, DB_RANKS, rank, sizeof rank, rankval, 16 + hl)))
        return rc;
    return 0;
}

static int put_str(nsc_store *st, const nsc_str_def *s)
{
    uint32_t gid;
    uint8_t skey[7] = {'s'}, val[4];
    int rc = intern(st, DB_STRS, s->text, text_len(s->text, sizeof s->text), "next_str", &gid);
    if (rc)
        return rc;
    nsc_put_be32(skey + 1, st->proc);
    nsc_put_be16(skey + 5, s->id);
    nsc_put_be32(val, gid);
    return put(st, DB_PROCS, skey, sizeof skey, val, 4);
}

/* ---- grouping a batch by (comm, rank) ------------------------------------ */

static int group_for(nsc_store *st, uint64_t comm, int32_t rank, uint32_t *g)
{
    for (size_t i = 0; i < st->ngroups; i++)
        if (st->groups[i].comm == comm && st->groups[i].rank == rank) {
            *g = (uint32_t)i;
            return 0;
        }
    if (nsc_grow(&st->groups, st->ngroups, &st->groups_cap, sizeof *st->groups, 16))
        return NSC_STORE_ENOMEM;
    st->groups[st->ngroups] = (group){comm, rank};
    *g = (uint32_t)st->ngroups++;
    return 0;
}

/* The group of a context index: its (comm, rank), or the process group. */
static int ctx_group(nsc_store *st, uint16_t ctx, uint32_t *g)
{
    memo *m = &st->ctx_memo[ctx];
    if (m->stamp == st->stamp) {
        *g = m->value;
        return 0;
    }
    uint8_t ckey[7] = {'c'};
    nsc_put_be32(ckey + 1, st->proc);
    nsc_put_be16(ckey + 5, ctx);
    MDB_val key = mval(ckey, sizeof ckey), val;
    int rc = ctx == NSC_CTX_NONE ? MDB_NOTFOUND : mdb_get(st->txn, st->dbi[DB_PROCS], &key, &val);
    if (rc == MDB_NOTFOUND) {
        *g = 0;
    } else if (rc) {
        return rc;
    } else if (val.mv_size != 16) {
        return NSC_STORE_ECORRUPT;
    } else if ((rc = group_for(st, nsc_get_be64(val.mv_data),
                               (int32_t)nsc_get_be32((uint8_t *)val.mv_data + 8), g))) {
        return rc;
    }
    m->stamp = st->stamp;
    m->value = *g;
    return 0;
}

/* Process-local string id -> store-wide id (0 when never defined). Ids past
 * the 16-bit field are stored as 0 too; both are counted. */
static nsc_str map_str(void *arg, nsc_str id)
{
    nsc_store *st = arg;
    memo *m = &st->str_memo[id];
    if (id == 0 || st->txn_rc)
        return 0;
    if (m->stamp != st->stamp) {
        uint8_t skey[7] = {'s'};
        uint32_t gid = 0;
        nsc_put_be32(skey + 1, st->proc);
        nsc_put_be16(skey + 5, id);
        int rc = get_u32(st->txn, st->dbi[DB_PROCS], skey, sizeof skey, &gid);
        if (rc && rc != NSC_STORE_ENOTFOUND)
            st->txn_rc = rc;
        m->stamp = st->stamp;
        m->value = gid <= UINT16_MAX ? gid : 0;
    }
    if (m->value == 0)
        st->pending.unknown_str++;
    return (nsc_str)m->value;
}

static size_t id_slot(const nsc_store *st, uint64_t id)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & (st->id_cap - 1);
}

/* Event id -> group, for the states and completions of the same batch. */
static int index_ids(nsc_store *st, const nsc_store_batch *b)
{
    size_t need = 16;
    while (need < 2 * b->nevents)
        need *= 2;
    if (need > st->id_cap) {
        uint64_t *k = realloc(st->id_keys, need * sizeof *k);
        if (k)
            st->id_keys = k;
        uint32_t *g = realloc(st->id_groups, need * sizeof *g);
        if (g)
            st->id_groups = g;
        if (!k || !g)
            return NSC_STORE_ENOMEM;
        st->id_cap = need;
    }
    for (size_t i = 0; i < st->id_cap; i++)
        st->id_groups[i] = NO_GROUP;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < b->nevents; i++) {
        lo = b->events[i].id < lo ? b->events[i].id : lo;
        hi = b->events[i].id > hi ? b->events[i].id : hi;
        size_t s = id_slot(st, b->events[i].id);
        while (st->id_groups[s] != NO_GROUP && st->id_keys[s] != b->events[i].id)
            s = (s + 1) & (st->id_cap - 1);
        if (st->id_groups[s] == NO_GROUP) {
            st->id_keys[s] = b->events[i].id;
            st->id_groups[s] = st->ev_group[i];
        }
    }
    st->id_lo = lo;
    st->id_span = b->nevents && hi - lo < (uint64_t)b->nevents * ID_SLOTS_PER_EVENT + ID_SLOTS_MIN
                      ? (size_t)(hi - lo) + 1
                      : 0;
    return 0;
}

static uint32_t id_group(const nsc_store *st, uint64_t id)
{
    for (size_t s = id_slot(st, id);; s = (s + 1) & (st->id_cap - 1)) {
        if (st->id_groups[s] == NO_GROUP)
            return 0;
        if (st->id_keys[s] == id)
            return st->id_groups[s];
    }
}

static int grow_u32(uint32_t **a, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    uint32_t *g = realloc(*a, n * sizeof *g);
    if (!g)
        return NSC_STORE_ENOMEM;
    *a = g;
    *cap = n;
    return 0;
}

/* The group of every state and completion: its event's, when the event is
 * in the batch, else the process group. */
static int group_others(nsc_store *st, const nsc_store_batch *b)
{
    if (grow_u32(&st->rec_group, &st->rec_cap, b->nstates + b->ncompletions))
        return NSC_STORE_ENOMEM;
    for (size_t i = 0; i < b->nstates; i++)
        st->rec_group[i] = id_group(st, b->states[i].id);
    for (size_t i = 0; i < b->ncompletions; i++)
        st->rec_group[b->nstates + i] = id_group(st, b->completions[i].id);
    return 0;
}

/* A record's slot in the count of ids: its id's offset from the events'
 * lowest, or id_span for an id past the events' (and any in a sparse batch). */
static size_t id_slot_of(const nsc_store *st, const void *rec)
{
    uint64_t id, d;
    memcpy(&id, rec, sizeof id);
    d = id - st->id_lo;
    return d < st->id_span ? (size_t)d : st->id_span;
}

/* Kind k's n records (`size` bytes each, their id first) in the order they
 * go to their blocks: by group, within a group by id when the batch's ids
 * are dense, records of equal ids (or of sparse ids) in batch order. That is
 * the blocks' stored order whenever an id's records come in time order, as
 * the plugin writes them, so the encoder need not sort. Two stable counting
 * sorts over indices: by id, then by group. */
static int order_kind(nsc_store *st, int k, const void *recs, size_t size, size_t n,
                      const uint32_t *group)
{
    size_t ng = st->ngroups;
    if (grow_u32(&st->at[k], &st->at_cap[k], n) ||
        grow_u32(&st->first[k], &st->first_cap[k], ng + 1) ||
        grow_u32(&st->by_id, &st->by_id_cap, n) || grow_u32(&st->cursor, &st->cursor_cap, ng) ||
        grow_u32(&st->id_count, &st->id_count_cap, st->id_span + 1))
        return NSC_STORE_ENOMEM;
    const uint8_t *r = recs;
    uint32_t *by_id = st->by_id, *cnt = st->id_count, *cur = st->cursor, *first = st->first[k];
    memset(cnt, 0, (st->id_span + 1) * sizeof *cnt);
    for (size_t i = 0; i < n; i++)
        cnt[id_slot_of(st, r + i * size)]++;
    for (size_t s = 0, sum = 0; s <= st->id_span; s++) {
        uint32_t c = cnt[s];
        cnt[s] = (uint32_t)sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++)
        by_id[cnt[id_slot_of(st, r + i * size)]++] = (uint32_t)i;
    memset(cur, 0, ng * sizeof *cur);
    for (size_t i = 0; i < n; i++)
        cur[group[i]]++;
    for (size_t g = 0, sum = 0; g < ng; g++) {
        first[g] = (uint32_t)sum;
        sum += cur[g];
        cur[g] = first[g];
    }
    first[ng] = (uint32_t)n;
    for (size_t j = 0; j < n; j++)
        st->at[k][cur[group[by_id[j]]]++] = by_id[j];
    return 0;
}

static int group_records(nsc_store *st, const nsc_store_batch *b)
{
    if (grow_u32(&st->ev_group, &st->ev_cap, b->nevents))
        return NSC_STORE_ENOMEM;
    st->ngroups = 0;
    uint32_t proc_group;
    int rc = group_for(st, NSC_STORE_PROC_COMM, (int32_t)st->proc, &proc_group);
    for (size_t i = 0; !rc && i < b->nevents; i++) {
        rc = ctx_group(st, b->events[i].ctx, &st->ev_group[i]);
        if (!rc && st->ev_group[i] == 0 && b->events[i].ctx != NSC_CTX_NONE)
            st->pending.unknown_ctx++;
    }
    if (!rc)
        rc = index_ids(st, b);
    if (!rc)
        rc = group_others(st, b);
    if (!rc)
        rc = order_kind(st, K_EVENTS, b->events, sizeof *b->events, b->nevents, st->ev_group);
    if (!rc)
        rc = order_kind(st, K_STATES, b->states, sizeof *b->states, b->nstates, st->rec_group);
    if (!rc)
        rc = order_kind(st, K_COMPL, b->completions, sizeof *b->completions, b->ncompletions,
                        b->ncompletions ? st->rec_group + b->nstates : NULL);
    return rc;
}

/* ---- the collective index ------------------------------------------------ */

/* The runs of a block's events (stored order) into st->runs, in the order
 * they start. The writer indexes exactly these runs and retention deletes
 * exactly these: both derive them here. */
static int coll_runs(nsc_store *st, const nsc_event *ev, size_t n, size_t *nruns)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].type != NSC_T_COLL)
            continue;
        uint32_t func = ev[i].d.coll.func;
        uint64_t seq = ev[i].d.coll.seq;
        size_t back = count > RUN_LOOKBACK ? count - RUN_LOOKBACK : 0, r = count;
        while (r > back && st->runs[r - 1].func != func)
            r--;
        if (r > back && st->runs[r - 1].last + 1 == seq && seq != 0) {
            st->runs[r - 1].last = seq;
            continue;
        }
        if (nsc_grow(&st->runs, count, &st->runs_cap, sizeof *st->runs, 16))
            return NSC_STORE_ENOMEM;
        st->runs[count++] = (coll_run){func, (uint32_t)i, seq, seq};
    }
    *nruns = count;
    return 0;
}

/* The first entry at or after key k: 0 with it parsed, 1 when there is none
 * for k's (job, comm, func), or an error (a malformed entry: ECORRUPT). */
static int seek_entry(MDB_cursor *cur, const nsc_coll_key *k, nsc_coll_key *ek,
                      nsc_coll_val *ev)
{
    uint8_t key[NSC_KEY_COLL_LEN];
    nsc_key_coll(key, k);
    MDB_val mk = mval(key, sizeof key), mv;
    int rc = mdb_cursor_get(cur, &mk, &mv, MDB_SET_RANGE);
    if (rc)
        return rc == MDB_NOTFOUND ? 1 : rc;
    if (mk.mv_size < NSC_KEY_COLL_PREFIX || memcmp(mk.mv_data, key, NSC_KEY_COLL_PREFIX) != 0)
        return 1;
    if (nsc_key_coll_parse(mk.mv_data, mk.mv_size, ek) ||
        nsc_coll_val_parse(mv.mv_data, mv.mv_size, ev) || ev->seq_first > ek->seq)
        return NSC_STORE_ECORRUPT;
    return 0;
}

/* The lowest entry of k's rank that covers some of [k->seq, last]: 0, 1
 * when none does, or an error. A rank's entries never overlap, so the
 * first one ending at or after k->seq is the only candidate. */
static int seek_overlap(MDB_cursor *cur, const nsc_coll_key *k, uint64_t last, nsc_coll_key *ek,
                        nsc_coll_val *ev)
{
    int rc = seek_entry(cur, k, ek, ev);
    if (rc)
        return rc;
    return ek->rank == k->rank && ev->seq_first <= last ? 0 : 1;
}

static int put_entry(MDB_cursor *cur, const nsc_coll_key *k, const nsc_coll_val *v)
{
    uint8_t key[NSC_KEY_COLL_LEN], val[NSC_COLL_VAL_LEN];
    nsc_key_coll(key, k);
    nsc_coll_val_put(val, v);
    MDB_val mk = mval(key, sizeof key), mv = mval(val, sizeof val);
    return mdb_cursor_put(cur, &mk, &mv, 0);
}

typedef int (*run_fn)(MDB_cursor *cur, const uint8_t *bkey, const nsc_coll_key *k,
                      const coll_run *r);

/* Index run r (k: its first key) of block bkey. The later block wins: the
 * seqNumbers it covers are cut out of the rank's older entries, whose other
 * seqNumbers keep pointing where they did (an entry's position is where a
 * reader starts looking, so a cut-off head needs no new position). */
static int put_run(MDB_cursor *cur, const uint8_t *bkey, const nsc_coll_key *k,
                   const coll_run *r)
{
    nsc_coll_key ek;
    nsc_coll_val ev;
    int rc;
    while ((rc = seek_overlap(cur, k, r->last, &ek, &ev)) == 0) {
        if ((rc = mdb_cursor_del(cur, 0)))
            return rc;
        nsc_coll_key head = ek;
        head.seq = r->first - 1;
        if (ev.seq_first < r->first && (rc = put_entry(cur, &head, &ev)))
            return rc;
        ev.seq_first = r->last + 1;
        if (ek.seq > r->last && (rc = put_entry(cur, &ek, &ev)))
            return rc;
    }
    if (rc != 1)
        return rc;
    nsc_coll_key key = *k;
    nsc_coll_val val = {{0}, r->position, r->first};
    key.seq = r->last;
    memcpy(val.block, bkey, NSC_KEY_BLOCK_LEN);
    return put_entry(cur, &key, &val);
}

/* Delete the entries of block bkey that run r (k: its first key) left. */
static int delete_run(MDB_cursor *cur, const uint8_t *bkey, const nsc_coll_key *k,
                      const coll_run *r)
{
    nsc_coll_key from = *k, ek;
    nsc_coll_val ev;
    int rc;
    while ((rc = seek_overlap(cur, &from, r->last, &ek, &ev)) == 0) {
        if (memcmp(ev.block, bkey, NSC_KEY_BLOCK_LEN) == 0 && (rc = mdb_cursor_del(cur, 0)))
            return rc;
        if (ek.seq >= r->last)
            return 0;
        from.seq = ek.seq + 1;
    }
    return rc == 1 ? 0 : rc;
}

/* fn for each run of the block (bk, bkey) holding events ev; the process's
 * own blocks are not indexed. */
static int for_each_run(nsc_store *st, const nsc_block_key *bk, const uint8_t *bkey,
                        const nsc_event *ev, size_t n, run_fn fn)
{
    size_t nruns;
    MDB_cursor *cur;
    int rc = bk->comm == NSC_STORE_PROC_COMM ? 0 : coll_runs(st, ev, n, &nruns);
    if (rc || bk->comm == NSC_STORE_PROC_COMM || !nruns ||
        (rc = mdb_cursor_open(st->txn, st->dbi[DB_COLLS], &cur)))
        return rc;
    for (size_t i = 0; !rc && i < nruns; i++) {
        const coll_run *r = &st->runs[i];
        nsc_coll_key k = {bk->job, bk->comm, r->func, bk->rank, r->first};
        rc = fn(cur, bkey, &k, r);
    }
    mdb_cursor_close(cur);
    return rc;
}

/* ---- writing blocks ------------------------------------------------------ */

/* Encode the records of group g into one block and index it. */
static int write_group(nsc_store *st, const nsc_store_batch *b, uint32_t job, uint32_t g)
{
    nsc_block_enc *e = st->enc;
    const uint32_t *const *at = (const uint32_t *const *)st->at;
    uint32_t *const *first = st->first;
    size_t added = 0;
    int rc = 0;
    for (int k = 0; k < 3; k++)
        added += first[k][g + 1] - first[k][g];
    nsc_block_begin(e, st->proc);
    for (uint32_t j = first[K_EVENTS][g]; !rc && j < first[K_EVENTS][g + 1]; j++)
        rc = nsc_block_add_event(e, &b->events[at[K_EVENTS][j]]);
    for (uint32_t j = first[K_STATES][g]; !rc && j < first[K_STATES][g + 1]; j++)
        rc = nsc_block_add_state(e, &b->states[at[K_STATES][j]]);
    for (uint32_t j = first[K_COMPL][g]; !rc && j < first[K_COMPL][g + 1]; j++)
        rc = nsc_block_add_completion(e, &b->completions[at[K_COMPL][j]]);
    const uint8_t *val;
    size_t len;
    nsc_block_hdr h;
    if (rc || st->txn_rc || !added || (rc = nsc_block_finish(e, &val, &len, &h)))
        return rc ? rc : st->txn_rc;
    nsc_block_key bk = {job, st->groups[g].comm, st->groups[g].rank, h.t_min,
                        (uint32_t)st->pending.next_block_seq++};
    uint8_t key[NSC_KEY_BLOCK_LEN], age[NSC_KEY_AGE_LEN];
    nsc_key_block(key, &bk);
    nsc_key_age(age, st->now_ns, bk.seq);
    if ((rc = put(st, DB_BLOCKS, key, sizeof key, val, len)) ||
        (rc = put(st, DB_AGE, age, sizeof age, key, sizeof key)))
        return rc;
    size_t n;
    const nsc_event *stored = nsc_block_events(e, &n);
    rc = for_each_run(st, &bk, key, stored, n, put_run);
    nsc_store_stats *s = &st->pending;
    s->events += h.nevents;
    s->states += h.nstates;
    s->completions += h.ncompletions;
    s->blocks++;
    s->block_bytes += len;
    if (h.t_max - h.t_min > s->max_span_ns)
        s->max_span_ns = h.t_max - h.t_min;
    return rc;
}

static int put_batch(nsc_store *st, const nsc_store_batch *b)
{
    uint32_t job;
    const nsc_proc *p = b->proc;
    int rc = intern(st, DB_JOBS, p->job, text_len(p->job, sizeof p->job), "next_job", &job);
    if (rc || (rc = proc_identity(st, job, p, &st->proc)))
        return rc;
    if (++st->stamp == 0) {
        memset(st->ctx_memo, 0, MEMO_SIZE * sizeof *st->ctx_memo);
        memset(st->str_memo, 0, MEMO_SIZE * sizeof *st->str_memo);
        st->stamp = 1;
    }
    for (size_t i = 0; !rc && i < b->nctxs; i++)
        rc = put_ctx(st, job, p, &b->ctxs[i]);
    for (size_t i = 0; !rc && i < b->nstrs; i++)
        rc = put_str(st, &b->strs[i]);
    if (rc || (rc = group_records(st, b)))
        return rc;
    for (uint32_t g = 0; !rc && g < st->ngroups; g++)
        rc = write_group(st, b, job, g);
    return rc;
}

static int put_meta_op(nsc_store *st, const op *o)
{
    return put(st, DB_META, o->key, o->klen, o->val, o->len);
}

/* Run one op unless the transaction already failed; a full map is noted for
 * commit to grow and replay, any other failure is returned. */
static int run_op(nsc_store *st, const op *o)
{
    if (st->txn_rc)
        return st->txn_rc == MDB_MAP_FULL ? 0 : st->txn_rc;
    int rc = o->kind == OP_BATCH ? put_batch(st, o->batch) : put_meta_op(st, o);
    if (rc)
        st->txn_rc = rc;
    return rc == MDB_MAP_FULL ? 0 : rc;
}

static void clear_ops(nsc_store *st)
{
    for (size_t i = 0; i < st->nops; i++) {
        free(st->ops[i].key);
        free(st->ops[i].val);
    }
    st->nops = 0;
}

static int push_op(nsc_store *st, op o)
{
    if (nsc_grow(&st->ops, st->nops, &st->ops_cap, sizeof *st->ops, 64))
        return NSC_STORE_ENOMEM;
    st->ops[st->nops++] = o;
    return run_op(st, &st->ops[st->nops - 1]);
}

static int open_txn(nsc_store *st)
{
    st->pending = st->committed;
    st->txn_rc = 0;
    return mdb_txn_begin(st->env, NULL, 0, &st->txn);
}

int nsc_store_begin(nsc_store *st, uint64_t now_ns)
{
    if (st->txn || st->opts.read_only)
        return NSC_STORE_ESTATE;
    st->now_ns = now_ns;
    clear_ops(st);
    return open_txn(st);
}

int nsc_store_put(nsc_store *st, const nsc_store_batch *b)
{
    if (!st->txn)
        return NSC_STORE_ESTATE;
    return push_op(st, (op){OP_BATCH, b, NULL, 0, NULL, 0});
}

/* A meta record written in the open transaction (and replayed with it);
 * key and value are copied. */
static int push_meta(nsc_store *st, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (!st->txn)
        return NSC_STORE_ESTATE;
    op o = {OP_META, NULL, malloc(klen), klen, malloc(vlen ? vlen : 1), vlen};
    if (!o.key || !o.val) {
        free(o.key);
        free(o.val);
        return NSC_STORE_ENOMEM;
    }
    memcpy(o.key, key, klen);
    memcpy(o.val, val, vlen);
    return push_op(st, o);
}

int nsc_store_put_clock(nsc_store *st, const char *host, const nsc_clock_model *m)
{
    char key[6 + 64];
    size_t hl = strlen(host), len = nsc_clock_serialized_size(m);
    if (hl > sizeof key - 6)
        return NSC_STORE_ECORRUPT;
    uint8_t *val = malloc(len);
    if (!val)
        return NSC_STORE_ENOMEM;
    memcpy(key, "clock/", 6);
    memcpy(key + 6, host, hl);
    nsc_clock_serialize(m, val);
    int rc = push_meta(st, key, 6 + hl, val, len);
    free(val);
    return rc;
}

void nsc_store_abort(nsc_store *st)
{
    if (st->txn)
        mdb_txn_abort(st->txn);
    st->txn = NULL;
    clear_ops(st);
}

/* Commit; on a full map, grow it and run the whole transaction again. */
int nsc_store_commit(nsc_store *st)
{
    if (!st->txn)
        return NSC_STORE_ESTATE;
    int rc;
    for (;;) {
        rc = st->txn_rc ? st->txn_rc : write_stats(st);
        if (rc)
            mdb_txn_abort(st->txn);
        else
            rc = mdb_txn_commit(st->txn);
        st->txn = NULL;
        if (rc != MDB_MAP_FULL || (rc = grow_map(st)) || (rc = open_txn(st)))
            break;
        for (size_t i = 0; i < st->nops; i++)
            run_op(st, &st->ops[i]);
    }
    if (rc == 0)
        st->committed = st->pending;
    clear_ops(st);
    return rc;
}

/* ---- retention ------------------------------------------------------------ */

/* Delete one block and the collective index entries that point into it. */
static int delete_block(nsc_store *st, const MDB_val *bkey)
{
    nsc_block_key bk;
    MDB_val val;
    nsc_block blk;
    int rc = mdb_get(st->txn, st->dbi[DB_BLOCKS], (MDB_val *)bkey, &val);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (nsc_key_block_parse(bkey->mv_data, bkey->mv_size, &bk) ||
        nsc_block_decode(val.mv_data, val.mv_size, &blk))
        return NSC_STORE_ECORRUPT;
    rc = for_each_run(st, &bk, bkey->mv_data, blk.events, blk.hdr.nevents, delete_run);
    nsc_store_stats *s = &st->pending;
    s->events -= blk.hdr.nevents;
    s->states -= blk.hdr.nstates;
    s->completions -= blk.hdr.ncompletions;
    s->blocks--;
    s->block_bytes -= val.mv_size;
    nsc_block_release(&blk);
    return rc ? rc : mdb_del(st->txn, st->dbi[DB_BLOCKS], (MDB_val *)bkey, NULL);
}

static int over_limits(nsc_store *st, uint64_t commit_ns, uint64_t now_ns)
{
    uint64_t age = st->opts.retain_age_ns;
    if (age && now_ns > age && commit_ns < now_ns - age)
        return 1;
    return st->opts.retain_bytes && live_bytes(st->txn, st->dbi) > st->opts.retain_bytes;
}

static int retain_txn(nsc_store *st, uint64_t now_ns, uint64_t *deleted)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(st->txn, st->dbi[DB_AGE], &cur);
    if (rc)
        return rc;
    MDB_val k, v;
    *deleted = 0;
    while ((rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) == 0) {
        if (k.mv_size != NSC_KEY_AGE_LEN || !over_limits(st, nsc_get_be64(k.mv_data), now_ns))
            break;
        if ((rc = delete_block(st, &v)) || (rc = mdb_cursor_del(cur, 0)))
            break;
        ++*deleted;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int nsc_store_retain(nsc_store *st, uint64_t now_ns, uint64_t *deleted_blocks)
{
    uint64_t deleted = 0;
    if (st->txn || st->opts.read_only)
        return NSC_STORE_ESTATE;
    int rc;
    for (;;) {
        if ((rc = open_txn(st)))
            break;
        rc = retain_txn(st, now_ns, &deleted);
        if (!rc && deleted)
            rc = write_stats(st);
        if (rc)
            mdb_txn_abort(st->txn);
        else
            rc = mdb_txn_commit(st->txn);
        st->txn = NULL;
        /* Deleting copies pages too, so even retention can fill the map. */
        if (rc != MDB_MAP_FULL || (rc = grow_map(st)))
            break;
    }
    if (rc == 0)
        st->committed = st->pending;
    if (deleted_blocks)
        *deleted_blocks = rc ? 0 : deleted;
    return rc;
}

/* ---- open and close ------------------------------------------------------- */

static int check_schema(MDB_txn *txn, const MDB_dbi *dbi, int create)
{
    uint32_t v;
    int rc = get_u32(txn, dbi[DB_META], "schema", 6, &v);
    if (rc == NSC_STORE_ENOTFOUND && create) {
        uint8_t buf[4];
        nsc_put_be32(buf, NSC_STORE_SCHEMA);
        MDB_val k = mval("schema", 6), val = mval(buf, 4);
        return mdb_put(txn, dbi[DB_META], &k, &val, 0);
    }
    if (rc == NSC_STORE_ENOTFOUND)
        return NSC_STORE_ESCHEMA;
    return rc ? rc : v == NSC_STORE_SCHEMA ? 0 : NSC_STORE_ESCHEMA;
}

static int open_dbs_once(nsc_store *st)
{
    MDB_txn *txn;
    int ro = st->opts.read_only;
    int rc = mdb_txn_begin(st->env, NULL, ro ? MDB_RDONLY : 0, &txn);
    if (rc)
        return rc;
    for (int i = 0; !rc && i < NDBS; i++)
        rc = mdb_dbi_open(txn, db_names[i], ro ? 0 : MDB_CREATE, &st->dbi[i]);
    if (rc == MDB_NOTFOUND)
        rc = NSC_STORE_ESCHEMA;
    if (!rc)
        rc = check_schema(txn, st->dbi, !ro);
    if (!rc)
        rc = read_stats(txn, st->dbi, &st->committed);
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

static int open_dbs(nsc_store *st)
{
    int rc;
    while ((rc = open_dbs_once(st)) == MDB_MAP_FULL || rc == MDB_MAP_RESIZED) {
        if (rc == MDB_MAP_RESIZED)
            rc = mdb_env_set_mapsize(st->env, 0);
        else
            rc = grow_map(st);
        if (rc)
            return rc;
    }
    return rc;
}

static int open_env(nsc_store *st, const char *dir)
{
    int ro = st->opts.read_only;
    if (!ro && mkdir(dir, 0750) != 0 && errno != EEXIST)
        return errno;
    int rc = mdb_env_create(&st->env);
    if (rc || (rc = mdb_env_set_maxdbs(st->env, NDBS)) ||
        (rc = mdb_env_set_mapsize(st->env, st->opts.initial_map)) ||
        (rc = mdb_env_open(st->env, dir, MDB_NOTLS | (ro ? MDB_RDONLY : 0), 0640)))
        return rc;
    if ((rc = open_dbs(st)))
        return rc;
    if (ro)
        return 0;
    st->ctx_memo = calloc(MEMO_SIZE, sizeof *st->ctx_memo);
    st->str_memo = calloc(MEMO_SIZE, sizeof *st->str_memo);
    if (!st->ctx_memo || !st->str_memo)
        return NSC_STORE_ENOMEM;
    rc = nsc_block_enc_new(st->opts.zstd_level < 0 ? 0 : st->opts.zstd_level, &st->enc);
    if (!rc)
        nsc_block_set_str_map(st->enc, map_str, st);
    return rc;
}

int nsc_store_open(const char *dir, const nsc_store_opts *opts, nsc_store **out)
{
    nsc_store *st = calloc(1, sizeof *st);
    if (!st)
        return NSC_STORE_ENOMEM;
    if (opts)
        st->opts = *opts;
    if (!st->opts.initial_map)
        st->opts.initial_map = DEFAULT_MAP;
    if (!st->opts.max_map)
        st->opts.max_map = DEFAULT_MAX_MAP;
    if (!st->opts.zstd_level)
        st->opts.zstd_level = 3;
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    /* Writer preference: a growing map must not wait behind a stream of readers. */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&st->resize, &attr);
    pthread_rwlockattr_destroy(&attr);
    int rc = open_env(st, dir);
    if (rc) {
        nsc_store_close(st);
        return rc;
    }
    *out = st;
    return 0;
}

void nsc_store_close(nsc_store *st)
{
    if (!st)
        return;
    nsc_store_abort(st);
    if (st->env)
        mdb_env_close(st->env);
    pthread_rwlock_destroy(&st->resize);
    nsc_block_enc_free(st->enc);
    free(st->ops);
    free(st->ctx_memo);
    free(st->str_memo);
    free(st->groups);
    free(st->ev_group);
    free(st->rec_group);
    free(st->id_keys);
    free(st->id_groups);
    for (int k = 0; k < 3; k++) {
        free(st->at[k]);
        free(st->first[k]);
    }
    free(st->by_id);
    free(st->id_count);
    free(st->cursor);
    free(st->runs);
    free(st);
}

/* ---- readers ------------------------------------------------------------- */

static int read_begin(nsc_store *st, nsc_store_reader **out, int wait)
{
    nsc_store_reader *rd = calloc(1, sizeof *rd);
    if (!rd)
        return NSC_STORE_ENOMEM;
    rd->st = st;
    int rc;
    for (;;) {
        if (wait) {
            pthread_rwlock_rdlock(&st->resize);
        } else if (atomic_load(&st->grow_waiters) || pthread_rwlock_tryrdlock(&st->resize)) {
            free(rd);
            return NSC_STORE_EBUSY;
        }
        rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &rd->txn);
        if (rc != MDB_MAP_RESIZED)
            break;
        /* Another process grew the map: adopt its size, with no reader open here. */
        pthread_rwlock_unlock(&st->resize);
        if ((rc = set_mapsize(st, 0))) {
            free(rd);
            return rc;
        }
    }
    if (rc) {
        pthread_rwlock_unlock(&st->resize);
        free(rd);
        return rc;
    }
    *out = rd;
    return 0;
}

int nsc_store_read_begin(nsc_store *st, nsc_store_reader **out)
{
    return read_begin(st, out, 1);
}

int nsc_store_read_begin_nowait(nsc_store *st, nsc_store_reader **out)
{
    return read_begin(st, out, 0);
}

int nsc_store_grow_pending(nsc_store *st)
{
    return atomic_load_explicit(&st->grow_waiters, memory_order_relaxed) != 0;
}

void nsc_store_read_end(nsc_store_reader *rd)
{
    if (!rd)
        return;
    mdb_txn_abort(rd->txn);
    pthread_rwlock_unlock(&rd->st->resize);
    free(rd);
}

static MDB_dbi rdbi(const nsc_store_reader *rd, int db)
{
    return rd->st->dbi[db];
}

int nsc_store_stats_get(nsc_store_reader *rd, nsc_store_stats *s)
{
    int rc = read_stats(rd->txn, rd->st->dbi, s);
    if (rc)
        return rc;
    MDB_envinfo info;
    s->live_bytes = live_bytes(rd->txn, rd->st->dbi);
    rc = mdb_env_info(rd->st->env, &info);
    s->map_bytes = rc ? 0 : info.me_mapsize;
    return rc;
}

static int lookup_name(nsc_store_reader *rd, int db, const char *text, uint32_t *id)
{
    uint8_t key[1 + 128];
    size_t len = strlen(text);
    if (len > sizeof key - 1)
        return NSC_STORE_ENOTFOUND;
    key[0] = 'n';
    memcpy(key + 1, text, len);
    return get_u32(rd->txn, rdbi(rd, db), key, len + 1, id);
}

int nsc_store_job_id(nsc_store_reader *rd, const char *job, uint32_t *id)
{
    return lookup_name(rd, DB_JOBS, job, id);
}

int nsc_store_str_id(nsc_store_reader *rd, const char *text, uint32_t *id)
{
    return lookup_name(rd, DB_STRS, text, id);
}

int nsc_store_str(nsc_store_reader *rd, uint32_t id, char *text, size_t cap)
{
    uint8_t key[5] = {'i'};
    nsc_put_be32(key + 1, id);
    MDB_val k = mval(key, sizeof key), v;
    int rc = mdb_get(rd->txn, rdbi(rd, DB_STRS), &k, &v);
    if (rc)
        return rc == MDB_NOTFOUND ? NSC_STORE_ENOTFOUND : rc;
    size_t n = v.mv_size < cap - 1 ? v.mv_size : cap - 1;
    memcpy(text, v.mv_data, n);
    text[n] = 0;
    return 0;
}

int nsc_store_comms(nsc_store_reader *rd, uint32_t job, nsc_store_comm **out, size_t *n)
{
    MDB_cursor *cur;
    uint8_t start[NSC_KEY_COMM_LEN];
    nsc_key_comm(start, job, 0);
    MDB_val k = mval(start, sizeof start), v;
    nsc_store_comm *list = NULL;
    size_t count = 0, cap = 0;
    int rc = mdb_cursor_open(rd->txn, rdbi(rd, DB_COMMS), &cur);
    if (rc)
        return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != NSC_KEY_COMM_LEN || nsc_get_be32(k.mv_data) != job)
            break;
        if (v.mv_size < 4 || v.mv_size > 4 + sizeof list->name) {
            rc = NSC_STORE_ECORRUPT;
            break;
        }
        if ((rc = nsc_grow(&list, count, &cap, sizeof *list, 8) ? NSC_STORE_ENOMEM : 0))
            break;
        nsc_store_comm *c = &list[count++];
        memset(c, 0, sizeof *c);
        c->comm_id = nsc_get_be64((const uint8_t *)k.mv_data + 4);
        c->nranks = (int32_t)nsc_get_be32(v.mv_data);
        memcpy(c->name, (const uint8_t *)v.mv_data + 4, v.mv_size - 4);
    }
    mdb_cursor_close(cur);
    if (rc != 0 && rc != MDB_NOTFOUND) {
        free(list);
        return rc;
    }
    *out = list;
    *n = count;
    return 0;
}

static int decode_rank(const MDB_val *v, nsc_store_rank *out)
{
    const uint8_t *p = v->mv_data;
    if (v->mv_size < 16 || v->mv_size > 16 + sizeof out->host - 1)
        return NSC_STORE_ECORRUPT;
    memset(out, 0, sizeof *out);
    out->proc_id = nsc_get_be32(p);
    out->pid = nsc_get_be32(p + 4);
    out->gpu = (int32_t)nsc_get_be32(p + 8);
    out->local_rank = (int32_t)nsc_get_be32(p + 12);
    memcpy(out->host, p + 16, v->mv_size - 16);
    return 0;
}

int nsc_store_rank_info(nsc_store_reader *rd, uint32_t job, uint64_t comm, int32_t rank,
                        nsc_store_rank *out)
{
    uint8_t key[NSC_KEY_RANK_LEN];
    nsc_key_rank(key, job, comm, rank);
    MDB_val k = mval(key, sizeof key), v;
    int rc = mdb_get(rd->txn, rdbi(rd, DB_RANKS), &k, &v);
    if (rc)
        return rc == MDB_NOTFOUND ? NSC_STORE_ENOTFOUND : rc;
    return decode_rank(&v, out);
}

int nsc_store_comm_ranks(nsc_store_reader *rd, uint32_t job, uint64_t comm,
                         nsc_store_rank_entry **out, size_t *n)
{
    uint8_t start[NSC_KEY_RANK_LEN];
    nsc_key_rank(start, job, comm, INT32_MIN);
    MDB_val k = mval(start, sizeof start), v;
    nsc_store_rank_entry *list = NULL;
    size_t count = 0, cap = 0;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(rd->txn, rdbi(rd, DB_RANKS), &cur);
    if (rc)
        return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != NSC_KEY_RANK_LEN || memcmp(k.mv_data, start, NSC_KEY_COMM_LEN) != 0)
            break;
        if ((rc = nsc_grow(&list, count, &cap, sizeof *list, 8) ? NSC_STORE_ENOMEM : 0))
            break;
        list[count].rank =
            nsc_key_rank_from_bits(nsc_get_be32((const uint8_t *)k.mv_data + NSC_KEY_COMM_LEN));
        if ((rc = decode_rank(&v, &list[count].info)))
            break;
        count++;
    }
    mdb_cursor_close(cur);
    if (rc != 0 && rc != MDB_NOTFOUND) {
        free(list);
        return rc;
    }
    *out = list;
    *n = count;
    return 0;
}

int nsc_store_jobs(nsc_store_reader *rd, nsc_store_job **out, size_t *n)
{
    uint8_t start[1] = {'i'};
    MDB_val k = mval(start, 1), v;
    nsc_store_job *list = NULL;
    size_t count = 0, cap = 0;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(rd->txn, rdbi(rd, DB_JOBS), &cur);
    if (rc)
        return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 5 || ((const uint8_t *)k.mv_data)[0] != 'i')
            break;
        if (v.mv_size >= sizeof list->name) {
            rc = NSC_STORE_ECORRUPT;
            break;
        }
        if ((rc = nsc_grow(&list, count, &cap, sizeof *list, 8) ? NSC_STORE_ENOMEM : 0))
            break;
        list[count].id = nsc_get_be32((const uint8_t *)k.mv_data + 1);
        memcpy(list[count].name, v.mv_data, v.mv_size);
        list[count].name[v.mv_size] = 0;
        count++;
    }
    mdb_cursor_close(cur);
    if (rc != 0 && rc != MDB_NOTFOUND) {
        free(list);
        return rc;
    }
    *out = list;
    *n = count;
    return 0;
}

static int overlaps(const nsc_event *ev, uint64_t t0, uint64_t t1)
{
    uint64_t end = ev->stop_ns > ev->start_ns ? ev->stop_ns : ev->start_ns;
    return ev->start_ns <= t1 && end >= t0;
}

struct nsc_store_blocks {
    MDB_cursor *cur;
    uint8_t prefix[16];  /* (job, comm, rank) */
    uint64_t t1;
    MDB_val k, v;
    int has;             /* k, v hold the next block */
    nsc_block_dec *dec;
};

/* Move to the next block of the prefix that starts no later than t1. */
static int blocks_step(nsc_store_blocks *it, MDB_cursor_op op)
{
    int rc = mdb_cursor_get(it->cur, &it->k, &it->v, op);
    it->has = rc == 0 && it->k.mv_size == NSC_KEY_BLOCK_LEN &&
              memcmp(it->k.mv_data, it->prefix, sizeof it->prefix) == 0 &&
              nsc_get_be64((const uint8_t *)it->k.mv_data + 16) <= it->t1;
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int nsc_store_blocks_open(nsc_store_reader *rd, uint32_t job, uint64_t comm, int32_t rank,
                          uint64_t t0, uint64_t t1, nsc_store_blocks **out)
{
    nsc_store_stats s;
    int rc = read_stats(rd->txn, rd->st->dbi, &s);
    if (rc)
        return rc;
    nsc_store_blocks *it = calloc(1, sizeof *it);
    if (!it)
        return NSC_STORE_ENOMEM;
    if (nsc_block_dec_new(&it->dec)) {
        free(it);
        return NSC_STORE_ENOMEM;
    }
    if ((rc = mdb_cursor_open(rd->txn, rdbi(rd, DB_BLOCKS), &it->cur))) {
        nsc_block_dec_free(it->dec);
        free(it);
        return rc;
    }
    /* A block starting up to max_span before t0 may still reach into the window. */
    nsc_block_key from = {job, comm, rank, t0 > s.max_span_ns ? t0 - s.max_span_ns : 0, 0};
    uint8_t start[NSC_KEY_BLOCK_LEN];
    nsc_key_block(start, &from);
    memcpy(it->prefix, start, sizeof it->prefix);
    it->t1 = t1;
    it->k = mval(start, sizeof start);
    if ((rc = blocks_step(it, MDB_SET_RANGE))) {
        nsc_store_blocks_close(it);
        return rc;
    }
    *out = it;
    return 0;
}

int nsc_store_blocks_peek(const nsc_store_blocks *it, nsc_block_key *key)
{
    if (!it->has)
        return 1;
    return nsc_key_block_parse(it->k.mv_data, it->k.mv_size, key) ? NSC_STORE_ECORRUPT : 0;
}

int nsc_store_blocks_next(nsc_store_blocks *it, nsc_block_key *key, nsc_block *blk)
{
    return nsc_store_blocks_next_sel(it, NSC_MASK_ALL, NSC_BLOCK_STATES | NSC_BLOCK_COMPLETIONS,
                                     key, blk);
}

int nsc_store_blocks_next_sel(nsc_store_blocks *it, uint32_t types, unsigned parts,
                              nsc_block_key *key, nsc_block *blk)
{
    if (!it->has)
        return 1;
    if (nsc_key_block_parse(it->k.mv_data, it->k.mv_size, key) ||
        nsc_block_decode_with(it->dec, it->v.mv_data, it->v.mv_size, types, parts, blk))
        return NSC_STORE_ECORRUPT;
    int rc = blocks_step(it, MDB_NEXT);
    if (rc)
        nsc_block_release(blk);
    return rc;
}

void nsc_store_blocks_close(nsc_store_blocks *it)
{
    if (!it)
        return;
    mdb_cursor_close(it->cur);
    nsc_block_dec_free(it->dec);
    free(it);
}

int nsc_store_scan(nsc_store_reader *rd, uint32_t job, uint64_t comm, int32_t rank, uint64_t t0,
                   uint64_t t1, nsc_store_event_fn fn, void *arg)
{
    nsc_store_blocks *it;
    int rc = nsc_store_blocks_open(rd, job, comm, rank, t0, t1, &it);
    if (rc)
        return rc;
    nsc_block_key bk;
    nsc_block blk;
    int stop = 0;
    while (!stop && (rc = nsc_store_blocks_next(it, &bk, &blk)) == 0) {
        for (uint32_t i = 0; !stop && i < blk.hdr.nevents; i++)
            if (overlaps(&blk.events[i], t0, t1))
                stop = fn(arg, &bk, &blk, &blk.events[i]);
        nsc_block_release(&blk);
    }
    nsc_store_blocks_close(it);
    return stop ? stop : rc == 1 ? 0 : rc;
}

/* Collective k->func seq in the block entry v points at: the first Coll of
 * that function from v's position on whose seqNumber is not below seq must
 * be it (a run counts up by one), else the entry is corrupt. */
static int coll_hit(nsc_store_reader *rd, const nsc_coll_key *k, const nsc_coll_val *v,
                    uint64_t seq, nsc_store_coll_hit *hit)
{
    nsc_block blk;
    MDB_val bkey = mval(v->block, NSC_KEY_BLOCK_LEN), bval;
    int rc = mdb_get(rd->txn, rdbi(rd, DB_BLOCKS), &bkey, &bval);
    if (rc)
        return rc == MDB_NOTFOUND ? NSC_STORE_ECORRUPT : rc;
    if (nsc_key_block_parse(v->block, NSC_KEY_BLOCK_LEN, &hit->block) ||
        nsc_block_decode(bval.mv_data, bval.mv_size, &blk))
        return NSC_STORE_ECORRUPT;
    rc = NSC_STORE_ECORRUPT;
    for (uint32_t i = v->position; i < blk.hdr.nevents; i++) {
        const nsc_event *ev = &blk.events[i];
        if (ev->type != NSC_T_COLL || ev->d.coll.func != k->func || ev->d.coll.seq < seq)
            continue;
        if (ev->d.coll.seq == seq) {
            hit->rank = k->rank;
            hit->position = i;
            hit->event = *ev;
            rc = 0;
        }
        break;
    }
    nsc_block_release(&blk);
    return rc;
}

/* One seek per rank: to (rank, seq), which lands on the rank's only entry
 * that can cover seq, or on the next rank that has entries (then seek there). */
int nsc_store_find_coll(nsc_store_reader *rd, uint32_t job, uint64_t comm, const char *func,
                        uint64_t seq, nsc_store_coll_hit *hits, size_t max, size_t *n)
{
    uint32_t fid;
    *n = 0;
    int rc = nsc_store_str_id(rd, func, &fid);
    if (rc)
        return rc == NSC_STORE_ENOTFOUND ? 0 : rc;
    MDB_cursor *cur;
    if ((rc = mdb_cursor_open(rd->txn, rdbi(rd, DB_COLLS), &cur)))
        return rc;
    nsc_coll_key k = {job, comm, fid, INT32_MIN, seq}, ek;
    nsc_coll_val ev;
    while (*n < max && (rc = seek_entry(cur, &k, &ek, &ev)) == 0) {
        if (ek.rank != k.rank) {
            k.rank = ek.rank;
            continue;
        }
        if (ev.seq_first <= seq) {
            if ((rc = coll_hit(rd, &ek, &ev, seq, &hits[*n])))
                break;
            ++*n;
        }
        if (k.rank == INT32_MAX)
            break;
        k.rank++;
    }
    mdb_cursor_close(cur);
    return rc == 1 ? 0 : rc;
}

int nsc_store_get_clock(nsc_store_reader *rd, const char *host, nsc_clock_model *m)
{
    char key[6 + 64];
    size_t hl = strlen(host);
    if (hl > sizeof key - 6)
        return NSC_STORE_ENOTFOUND;
    memcpy(key, "clock/", 6);
    memcpy(key + 6, host, hl);
    MDB_val k = mval(key, 6 + hl), v;
    int rc = mdb_get(rd->txn, rdbi(rd, DB_META), &k, &v);
    if (rc)
        return rc == MDB_NOTFOUND ? NSC_STORE_ENOTFOUND : rc;
    return nsc_clock_deserialize(m, v.mv_data, v.mv_size) ? NSC_STORE_ECORRUPT : 0;
}

/* ---- collector bookkeeping (meta records) -------------------------------- */

/* Texts in meta values: u8 length, then the bytes (at most 63). */
static uint8_t *put_text(uint8_t *p, const char *s)
{
    size_t n = text_len(s, 63);
    *p++ = (uint8_t)n;
    memcpy(p, s, n);
    return p + n;
}

static int take_text(nsc_rbuf *r, char out[64])
{
    const uint8_t *n = nsc_rtake(r, 1);
    const uint8_t *t = n && *n < 64 ? nsc_rtake(r, *n) : NULL;
    if (!t)
        return NSC_STORE_ECORRUPT;
    memcpy(out, t, *n);
    out[*n] = 0;
    return 0;
}

/* Key "agent/" AGENT, then for a non-zero epoch NUL and the epoch (8 bytes,
 * big-endian); epoch 0 keeps the key of stores older than epochs. */
int nsc_store_put_agent_seqs(nsc_store *st, const char *agent, uint64_t epoch,
                             const nsc_store_seq_range *r, size_t n)
{
    uint8_t key[6 + 64 + 8];
    size_t al = text_len(agent, 63), kl = 6 + al;
    memcpy(key, "agent/", 6);
    memcpy(key + 6, agent, al);
    if (epoch) {
        key[kl++] = 0;
        nsc_put_be64(key + kl, epoch);
        kl += 8;
    }
    uint8_t *val = malloc(4 + 16 * n);
    if (!val)
        return NSC_STORE_ENOMEM;
    nsc_put_be32(val, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        nsc_put_be64(val + 4 + 16 * i, r[i].lo);
        nsc_put_be64(val + 12 + 16 * i, r[i].hi);
    }
    int rc = push_meta(st, key, kl, val, 4 + 16 * n);
    free(val);
    return rc;
}

int nsc_store_put_life(nsc_store *st, const nsc_store_life *l)
{
    uint8_t key[5 + 64 + 12], val[2 + 16 + 8 + 3 * 64];
    size_t hl = text_len(l->host, 63);
    /* The records of one agent message share its receive time (a process
     * that finished and exited at once): a later key time keeps each of them,
     * in the order put, where one key would keep only the last. */
    st->life_ns = l->ref_ns > st->life_ns ? l->ref_ns : st->life_ns + 1;
    memcpy(key, "life/", 5);
    memcpy(key + 5, l->host, hl);
    key[5 + hl] = 0;
    nsc_put_be32(key + 6 + hl, l->pid);
    nsc_put_be64(key + 10 + hl, st->life_ns);
    val[0] = l->event;
    val[1] = l->reason;
    nsc_put_be64(val + 2, l->ts_ns);
    nsc_put_be64(val + 10, l->last_batch_seq);
    uint8_t *end = put_text(put_text(val + 18, l->job), l->agent);
    return push_meta(st, key, 18 + hl, val, (size_t)(end - val));
}

int nsc_store_put_progress(nsc_store *st, const nsc_store_progress *p)
{
    uint8_t key[5 + 64 + 12 + 64], val[16];
    size_t jl = text_len(p->job, 63), fl = text_len(p->func, 63);
    memcpy(key, "prog/", 5);
    memcpy(key + 5, p->job, jl);
    key[5 + jl] = 0;
    nsc_put_be64(key + 6 + jl, p->comm_id);
    nsc_put_be32(key + 14 + jl, (uint32_t)p->rank ^ 0x80000000u);
    memcpy(key + 18 + jl, p->func, fl);
    nsc_put_be64(val, p->seq);
    nsc_put_be64(val + 8, p->ref_ns);
    return push_meta(st, key, 18 + jl + fl, val, sizeof val);
}

/* Every meta record whose key starts with prefix, in key order. */
typedef int (*meta_fn)(void *arg, const MDB_val *k, const MDB_val *v);

static int scan_meta(nsc_store_reader *rd, const char *prefix, meta_fn fn, void *arg)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(rd->txn, rdbi(rd, DB_META), &cur);
    if (rc)
        return rc;
    size_t pl = strlen(prefix);
    MDB_val k = mval(prefix, pl), v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < pl || memcmp(k.mv_data, prefix, pl) != 0)
            break;
        if ((rc = fn(arg, &k, &v)))
            break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

typedef struct agent_cb { nsc_store_agent_fn fn; void *arg; } agent_cb;
typedef struct life_cb { nsc_store_life_fn fn; void *arg; } life_cb;
typedef struct progress_cb { nsc_store_progress_fn fn; void *arg; } progress_cb;

static int agent_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    const agent_cb *cb = arg;
    char agent[64];
    const uint8_t *name = (const uint8_t *)k->mv_data + 6, *nul = memchr(name, 0, k->mv_size - 6);
    size_t al = nul ? (size_t)(nul - name) : k->mv_size - 6;
    uint64_t epoch = nul && k->mv_size == 6 + al + 9 ? nsc_get_be64(nul + 1) : 0;
    const uint8_t *p = v->mv_data;
    if (al >= sizeof agent || (nul && (k->mv_size != 6 + al + 9 || epoch == 0)) || v->mv_size < 4 ||
        (v->mv_size - 4) / 16 != nsc_get_be32(p) || (v->mv_size - 4) % 16)
        return NSC_STORE_ECORRUPT;
    memcpy(agent, name, al);
    agent[al] = 0;
    size_t n = nsc_get_be32(p);
    nsc_store_seq_range *r = malloc((n ? n : 1) * sizeof *r);
    if (!r)
        return NSC_STORE_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        r[i].lo = nsc_get_be64(p + 4 + 16 * i);
        r[i].hi = nsc_get_be64(p + 12 + 16 * i);
    }
    int rc = cb->fn(cb->arg, agent, epoch, r, n);
    free(r);
    return rc;
}

int nsc_store_agents(nsc_store_reader *rd, nsc_store_agent_fn fn, void *arg)
{
    agent_cb cb = {fn, arg};
    return scan_meta(rd, "agent/", agent_rec, &cb);
}

static int life_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    const life_cb *cb = arg;
    nsc_store_life l;
    memset(&l, 0, sizeof l);
    const uint8_t *key = k->mv_data;
    const uint8_t *nul = memchr(key + 5, 0, k->mv_size - 5);
    size_t hl = nul ? (size_t)(nul - key - 5) : 0;
    nsc_rbuf r = {v->mv_data, (const uint8_t *)v->mv_data + v->mv_size, 0};
    const uint8_t *head = nsc_rtake(&r, 18);
    if (!nul || hl >= 64 || k->mv_size != 18 + hl || !head || take_text(&r, l.job) ||
        take_text(&r, l.agent) || r.p != r.end)
        return NSC_STORE_ECORRUPT;
    memcpy(l.host, key + 5, hl);
    l.pid = nsc_get_be32(key + 6 + hl);
    l.ref_ns = nsc_get_be64(key + 10 + hl);
    l.event = head[0];
    l.reason = head[1];
    l.ts_ns = nsc_get_be64(head + 2);
    l.last_batch_seq = nsc_get_be64(head + 10);
    return cb->fn(cb->arg, &l);
}

int nsc_store_lives(nsc_store_reader *rd, nsc_store_life_fn fn, void *arg)
{
    life_cb cb = {fn, arg};
    return scan_meta(rd, "life/", life_rec, &cb);
}

static int progress_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    const progress_cb *cb = arg;
    nsc_store_progress p;
    memset(&p, 0, sizeof p);
    const uint8_t *key = k->mv_data;
    const uint8_t *nul = memchr(key + 5, 0, k->mv_size - 5);
    size_t jl = nul ? (size_t)(nul - key - 5) : 0;
    size_t fl = nul ? k->mv_size - 18 - jl : 0;
    if (!nul || jl >= 64 || k->mv_size < 18 + jl || fl >= 64 || v->mv_size != 16)
        return NSC_STORE_ECORRUPT;
    memcpy(p.job, key + 5, jl);
    p.comm_id = nsc_get_be64(key + 6 + jl);
    p.rank = (int32_t)(nsc_get_be32(key + 14 + jl) ^ 0x80000000u);
    memcpy(p.func, key + 18 + jl, fl);
    p.seq = nsc_get_be64(v->mv_data);
    p.ref_ns = nsc_get_be64((const uint8_t *)v->mv_data + 8);
    return cb->fn(cb->arg, &p);
}

int nsc_store_progresses(nsc_store_reader *rd, nsc_store_progress_fn fn, void *arg)
{
    progress_cb cb = {fn, arg};
    return scan_meta(rd, "prog/", progress_rec, &cb);
}

typedef struct clock_cb { nsc_store_clock_fn fn; void *arg; } clock_cb;

static int clock_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    const clock_cb *cb = arg;
    char host[64];
    size_t hl = k->mv_size - 6;
    nsc_clock_model m;
    if (hl >= sizeof host || nsc_clock_deserialize(&m, v->mv_data, v->mv_size))
        return NSC_STORE_ECORRUPT;
    memcpy(host, (const uint8_t *)k->mv_data + 6, hl);
    host[hl] = 0;
    int rc = cb->fn(cb->arg, host, &m);
    nsc_clock_free(&m);
    return rc;
}

int nsc_store_clocks(nsc_store_reader *rd, nsc_store_clock_fn fn, void *arg)
{
    clock_cb cb = {fn, arg};
    return scan_meta(rd, "clock/", clock_rec, &cb);
}
