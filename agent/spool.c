/* spool.c: the LMDB spool (see spool.h). */
#include "spool.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fnv.h"
#include "grow.h"

struct nsc_spool {
    MDB_env *env;
    MDB_dbi batches, tally, meta, quarantine, streams, held, cands, lsave;
    uint64_t epoch;
    nsc_spool_held_change *stage;  /* what the next put writes beside its batch */
    uint64_t cand_end, cand_staged;  /* candidates ever kept; the same after the staged put */
    int cand_known;                  /* cand_end read from the database */
    nsc_spool_stats st;
};

/* The persisted part of the accounting (stored/bytes are recounted at open). */
typedef struct meta_rec {
    uint64_t next_seq, refused_entries, refused_bytes, refused_events, refused_records, errors;
} meta_rec;

static int held_put(nsc_spool *s, MDB_txn *txn);
static void held_written(nsc_spool *s);

static const char META_KEY[] = "accounting", EPOCH_KEY[] = "epoch", PXN_ID_KEY[] = "pxn_last_id";

static void be64(uint8_t k[8], uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        k[i] = (uint8_t)v;
}

static uint64_t from_be64(const uint8_t k[8])
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | k[i];
    return v;
}

static void meta_from(meta_rec *m, const nsc_spool_stats *st)
{
    *m = (meta_rec){st->next_seq, st->refused_entries, st->refused_bytes, st->refused_events,
                    st->refused_records, st->errors};
}

static int put_meta(nsc_spool *s, MDB_txn *txn, const nsc_spool_stats *st)
{
    meta_rec m;
    meta_from(&m, st);
    MDB_val k = {sizeof META_KEY, (void *)META_KEY}, v = {sizeof m, &m};
    return mdb_put(txn, s->meta, &k, &v, 0);
}

/* The plugin streams' progress, in the transaction that stores (or counts)
 * the records it vouches for. */
static int put_marks(nsc_spool *s, MDB_txn *txn, const nsc_spool_mark *m, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        uint8_t key[8], val[8];
        be64(key, m[i].stream);
        be64(val, m[i].next);
        MDB_val k = {8, key}, v = {8, val};
        rc = mdb_put(txn, s->streams, &k, &v, 0);
    }
    return rc;
}

/* Count one stored batch (of the spool or the quarantine): seqs stay above it. */
static void count_batch(nsc_spool *s, const MDB_val *k, size_t len, uint64_t *entries, uint64_t *bytes)
{
    (*entries)++;
    *bytes += len;
    if (k->mv_size == 8 && from_be64(k->mv_data) >= s->st.next_seq)
        s->st.next_seq = from_be64(k->mv_data) + 1;
}

/* Recount the spool and the quarantine. */
static int count_stored(nsc_spool *s, MDB_txn *txn)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, s->batches, &cur);
    if (rc)
        return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
        count_batch(s, &k, v.mv_size, &s->st.entries, &s->st.bytes);
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND || (rc = mdb_cursor_open(txn, s->quarantine, &cur)) != 0)
        return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        nsc_spool_tally t = {0, 0};
        if (v.mv_size >= sizeof t)
            memcpy(&t, v.mv_data, sizeof t);
        count_batch(s, &k, v.mv_size - (v.mv_size >= sizeof t ? sizeof t : 0), &s->st.quarantined_entries,
                    &s->st.quarantined_bytes);
        s->st.quarantined_events += t.events;
        s->st.quarantined_records += t.records;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Recount what is stored and read the persisted counters. */
static int load_state(nsc_spool *s, MDB_txn *txn)
{
    MDB_val k, v;
    int rc = count_stored(s, txn);
    if (rc)
        return rc;
    k = (MDB_val){sizeof META_KEY, (void *)META_KEY};
    rc = mdb_get(txn, s->meta, &k, &v);
    if (rc == 0 && v.mv_size == sizeof(meta_rec)) {
        meta_rec m;
        memcpy(&m, v.mv_data, sizeof m);
        if (m.next_seq > s->st.next_seq)
            s->st.next_seq = m.next_seq;
        s->st.refused_entries = m.refused_entries;
        s->st.refused_bytes = m.refused_bytes;
        s->st.refused_events = m.refused_events;
        s->st.refused_records = m.refused_records;
        s->st.errors = m.errors;
    }
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* A fresh epoch: random, never 0 (0 names a spool older than epochs). */
static int new_epoch(uint64_t *epoch)
{
    do {
        if (getrandom(epoch, sizeof *epoch, 0) != (ssize_t)sizeof *epoch)
            return EIO;
    } while (*epoch == 0);
    return 0;
}

/* Read the spool's epoch, or make one: a spool created now gets a random one;
 * a spool an older agent created (it has batches or accounting but no epoch)
 * gets 0, the epoch its batches were committed under. */
static int load_epoch(nsc_spool *s, MDB_txn *txn, int had_meta)
{
    MDB_val k = {sizeof EPOCH_KEY, (void *)EPOCH_KEY}, v;
    int rc = mdb_get(txn, s->meta, &k, &v);
    if (rc == 0 && v.mv_size == sizeof s->epoch) {
        memcpy(&s->epoch, v.mv_data, sizeof s->epoch);
        return 0;
    }
    if (rc != MDB_NOTFOUND)
        return rc ? rc : MDB_CORRUPTED;
    s->epoch = 0;
    if (!had_meta && s->st.entries == 0 && (rc = new_epoch(&s->epoch)) != 0)
        return rc;
    v = (MDB_val){sizeof s->epoch, &s->epoch};
    return mdb_put(txn, s->meta, &k, &v, 0);
}

int nsc_spool_open(nsc_spool **out, const char *dir, uint64_t cap_bytes, char err[128])
{
    nsc_spool *s = calloc(1, sizeof *s);
    MDB_txn *txn = NULL;
    int rc;
    *out = NULL;
    if (!s) {
        snprintf(err, 128, "out of memory");
        return -1;
    }
    s->st.cap_bytes = cap_bytes;
    if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
        snprintf(err, 128, "spool %.80s: %s", dir, strerror(errno));
        free(s);
        return -1;
    }
    /* Room for the cap plus LMDB's page overhead: the cap, not the map, is the limit. */
    size_t map = (size_t)(cap_bytes + cap_bytes / 2 + (64u << 20));
    if ((rc = mdb_env_create(&s->env)) == 0 && (rc = mdb_env_set_maxdbs(s->env, 8)) == 0 &&
        (rc = mdb_env_set_mapsize(s->env, map)) == 0 && (rc = mdb_env_open(s->env, dir, 0, 0640)) == 0 &&
        (rc = mdb_txn_begin(s->env, NULL, 0, &txn)) == 0 &&
        (rc = mdb_dbi_open(txn, "batches", MDB_CREATE, &s->batches)) == 0 &&
        (rc = mdb_dbi_open(txn, "tally", MDB_CREATE, &s->tally)) == 0 &&
        (rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &s->meta)) == 0 &&
        (rc = mdb_dbi_open(txn, "quarantine", MDB_CREATE, &s->quarantine)) == 0 &&
        (rc = mdb_dbi_open(txn, "streams", MDB_CREATE, &s->streams)) == 0 &&
        (rc = mdb_dbi_open(txn, "held", MDB_CREATE, &s->held)) == 0 &&
        (rc = mdb_dbi_open(txn, "cands", MDB_CREATE, &s->cands)) == 0 &&
        (rc = mdb_dbi_open(txn, "lsave", MDB_CREATE, &s->lsave)) == 0 && (rc = load_state(s, txn)) == 0 &&
        (rc = load_epoch(s, txn, s->st.next_seq != 0 || s->st.refused_entries != 0)) == 0) {
        rc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (txn)
        mdb_txn_abort(txn);
    if (rc) {
        snprintf(err, 128, "spool %.80s: %s", dir, mdb_strerror(rc));
        if (s->env)
            mdb_env_close(s->env);
        free(s);
        return -1;
    }
    *out = s;
    return 0;
}

void nsc_spool_close(nsc_spool *s)
{
    if (!s)
        return;
    mdb_env_close(s->env);
    free(s);
}

uint64_t nsc_spool_next_seq(const nsc_spool *s) { return s->st.next_seq; }

uint64_t nsc_spool_epoch(const nsc_spool *s) { return s->epoch; }

void nsc_spool_stats_get(const nsc_spool *s, nsc_spool_stats *st) { *st = s->st; }

/* Count a refusal; persisting it (and the streams' progress: what was refused
 * is counted, not to be sent again) is best effort (a full map may refuse that
 * too, and the counters in memory stay exact for /metrics). */
static void refuse(nsc_spool *s, size_t len, const nsc_spool_tally *t, int error, const nsc_spool_mark *marks,
                   size_t nmarks)
{
    s->st.refused_entries++;
    s->st.refused_bytes += len;
    s->st.refused_events += t->events;
    s->st.refused_records += t->records;
    s->st.errors += error != 0;
    MDB_txn *txn;
    if (mdb_txn_begin(s->env, NULL, 0, &txn) == 0) {
        if (put_meta(s, txn, &s->st) == 0 && put_marks(s, txn, marks, nmarks) == 0 &&
            held_put(s, txn) == 0 && mdb_txn_commit(txn) == 0)
            held_written(s);
        else
            mdb_txn_abort(txn);
    }
}

int nsc_spool_put(nsc_spool *s, const void *msg, size_t len, const nsc_spool_tally *t, const nsc_spool_mark *marks,
                  size_t nmarks)
{
    if (s->st.bytes + len > s->st.cap_bytes) {
        refuse(s, len, t, 0, marks, nmarks);
        return 1;
    }
    nsc_spool_stats next = s->st;
    next.next_seq++;
    next.entries++;
    next.bytes += len;
    uint8_t key[8];
    be64(key, s->st.next_seq);
    MDB_txn *txn;
    MDB_val k = {8, key}, v = {len, (void *)msg}, tv = {sizeof *t, (void *)t};
    int rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (rc == 0) {
        rc = mdb_put(txn, s->batches, &k, &v, MDB_NOOVERWRITE);
        if (rc == 0)
            rc = mdb_put(txn, s->tally, &k, &tv, 0);
        if (rc == 0)
            rc = put_meta(s, txn, &next);
        if (rc == 0)
            rc = put_marks(s, txn, marks, nmarks);
        if (rc == 0)
            rc = held_put(s, txn);
        rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
    }
    if (rc) {
        refuse(s, len, t, rc != MDB_MAP_FULL, marks, nmarks);
        return 1;
    }
    held_written(s);
    s->st = next;
    return 0;
}

uint64_t nsc_spool_stream_next(nsc_spool *s, uint64_t stream)
{
    MDB_txn *txn;
    uint8_t key[8];
    be64(key, stream);
    MDB_val k = {8, key}, v;
    uint64_t next = 0;
    if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn) != 0)
        return 0;
    if (mdb_get(txn, s->streams, &k, &v) == 0 && v.mv_size == 8)
        next = from_be64(v.mv_data);
    mdb_txn_abort(txn);
    return next;
}

void nsc_spool_stream_forget(nsc_spool *s, uint64_t stream)
{
    MDB_txn *txn;
    uint8_t key[8];
    be64(key, stream);
    MDB_val k = {8, key};
    if (mdb_txn_begin(s->env, NULL, 0, &txn) != 0)
        return;
    int rc = mdb_del(txn, s->streams, &k, NULL);
    if (rc == 0)
        mdb_txn_commit(txn);
    else
        mdb_txn_abort(txn);
}

/* The tally stored beside batch k (zero if absent: a spool older than the tally). */
static nsc_spool_tally get_tally(nsc_spool *s, MDB_txn *txn, MDB_val *k)
{
    nsc_spool_tally t = {0, 0};
    MDB_val v;
    if (mdb_get(txn, s->tally, k, &v) == 0 && v.mv_size == sizeof t)
        memcpy(&t, v.mv_data, sizeof t);
    return t;
}

/* Unmap the pages a value read from the map occupies. LMDB maps the file
 * shared and read-only, so this costs nothing but a fault on the next read
 * (the page cache keeps the data), and the pages of batches already handed
 * to the forwarder stop counting in the agent's resident memory. */
static void release_pages(const void *data, size_t len)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo = (uintptr_t)data & ~(page - 1);
    uintptr_t hi = ((uintptr_t)data + len + page - 1) & ~(page - 1);
    madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

int nsc_spool_foreach(nsc_spool *s, uint64_t from, int (*fn)(void *arg, const nsc_spool_entry *e), void *arg)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    uint8_t key[8];
    be64(key, from);
    MDB_val k = {8, key}, v;
    int ret = 0;
    if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn))
        return -1;
    if (mdb_cursor_open(txn, s->batches, &cur)) {
        mdb_txn_abort(txn);
        return -1;
    }
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 && ret == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        nsc_spool_entry e = {from_be64(k.mv_data), v.mv_data, v.mv_size, get_tally(s, txn, &k)};
        ret = fn(arg, &e);
        release_pages(v.mv_data, v.mv_size);
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return ret;
}

/* In txn: batch k (value v) becomes quarantine k, its tally before it. */
static int move_aside(nsc_spool *s, MDB_txn *txn, MDB_val *k, const MDB_val *v, const nsc_spool_tally *t)
{
    MDB_val q = {sizeof *t + v->mv_size, NULL};
    int rc = mdb_put(txn, s->quarantine, k, &q, MDB_RESERVE);
    if (rc)
        return rc;
    /* v is a clean page of "batches": writing "quarantine" leaves it in place */
    memcpy(q.mv_data, t, sizeof *t);
    memcpy((uint8_t *)q.mv_data + sizeof *t, v->mv_data, v->mv_size);
    if ((rc = mdb_del(txn, s->batches, k, NULL)) == 0)
        rc = mdb_del(txn, s->tally, k, NULL);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int nsc_spool_quarantine(nsc_spool *s, uint64_t seq, size_t *len, nsc_spool_tally *t)
{
    uint8_t key[8];
    be64(key, seq);
    MDB_val k = {8, key}, v;
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (rc == 0 && (rc = mdb_get(txn, s->batches, &k, &v)) == 0) {
        *len = v.mv_size;
        *t = get_tally(s, txn, &k);
        rc = move_aside(s, txn, &k, &v, t);
    }
    if (rc == 0)
        rc = mdb_txn_commit(txn);
    else if (txn)
        mdb_txn_abort(txn);
    if (rc == MDB_NOTFOUND)
        return 1;
    if (rc) {
        s->st.errors++;
        return -1;
    }
    s->st.entries--;
    s->st.bytes -= *len;
    s->st.quarantined_entries++;
    s->st.quarantined_bytes += *len;
    s->st.quarantined_events += t->events;
    s->st.quarantined_records += t->records;
    return 0;
}

int nsc_spool_delete(nsc_spool *s, const uint64_t *seqs, size_t n, uint64_t *deleted, nsc_spool_tally *gone)
{
    MDB_txn *txn = NULL;
    uint64_t count = 0, bytes = 0;
    nsc_spool_tally sum = {0, 0};
    int rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint8_t key[8];
        be64(key, seqs[i]);
        MDB_val k = {8, key}, v;
        rc = mdb_get(txn, s->batches, &k, &v);
        if (rc == MDB_NOTFOUND) {
            rc = 0;
            continue;
        }
        size_t len = v.mv_size;
        nsc_spool_tally t = get_tally(s, txn, &k);
        if (rc == 0 && (rc = mdb_del(txn, s->batches, &k, NULL)) == 0) {
            rc = mdb_del(txn, s->tally, &k, NULL);
            rc = rc == MDB_NOTFOUND ? 0 : rc;
        }
        count++;
        bytes += len;
        sum.events += t.events;
        sum.records += t.records;
    }
    if (rc == 0)
        rc = mdb_txn_commit(txn);
    else if (txn)
        mdb_txn_abort(txn);
    if (rc) {
        s->st.errors++;
        return -1;
    }
    s->st.entries -= count;
    s->st.bytes -= bytes;
    *deleted += count;
    gone->events += sum.events;
    gone->records += sum.records;
    return 0;
}

/* ---- held PXN events and the streams' marks ------------------------------ */

void nsc_spool_held_stage(nsc_spool *s, nsc_spool_held_change *c)
{
    if (c)
        c->written = 0;
    s->stage = c;
}

/* The staged changes, in the transaction that stores (or counts) the batch
 * holding the events resolved and the marks of the batches the new ones came in. */
/* How many candidates a chunk value holds (0: not a chunk of this build). */
static uint64_t chunk_len(const MDB_val *k, const MDB_val *v)
{
    return k->mv_size == 8 && v->mv_size % sizeof(nsc_spool_cand) == 0 ? v->mv_size / sizeof(nsc_spool_cand) : 0;
}

/* The chunk of c's candidates after the last one kept, and the chunks that
 * fall out of the newest cand_keep deleted (the resolver forgot them too). */
static int cands_put(nsc_spool *s, MDB_txn *txn, const nsc_spool_held_change *c)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, s->cands, &cur);
    if (rc)
        return rc;
    if (!s->cand_known) {
        rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
        s->cand_end = rc == 0 ? from_be64(k.mv_data) + chunk_len(&k, &v) : 0;
        s->cand_known = rc == 0 || rc == MDB_NOTFOUND;
    }
    uint8_t key[8];
    be64(key, s->cand_end);
    s->cand_staged = s->cand_end + c->ncand;
    k = (MDB_val){8, key};
    v = (MDB_val){c->ncand * sizeof *c->cand, (void *)c->cand};
    rc = s->cand_known ? mdb_put(txn, s->cands, &k, &v, 0) : MDB_CORRUPTED;
    for (int more = rc == 0 && mdb_cursor_get(cur, &k, &v, MDB_FIRST) == 0; more && rc == 0;
         more = mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0) {
        if (from_be64(k.mv_data) + chunk_len(&k, &v) + c->cand_keep > s->cand_staged)
            break;
        rc = mdb_cursor_del(cur, 0);
    }
    mdb_cursor_close(cur);
    return rc;
}

/* A ledger state's key: host hash, then pid. */
static MDB_val lsave_key(uint8_t key[12], uint64_t host, uint32_t pid)
{
    be64(key, host);
    for (int i = 0; i < 4; i++)
        key[8 + i] = (uint8_t)(pid >> (24 - 8 * i));
    return (MDB_val){12, key};
}

static int lsave_put(nsc_spool *s, MDB_txn *txn, const nsc_spool_held_change *c)
{
    int rc = 0;
    for (size_t i = 0; i < c->nlsave && rc == 0; i++) {
        uint8_t key[12];
        MDB_val k = lsave_key(key, c->lsave[i].host, c->lsave[i].pid), v = {c->lsave[i].len, (void *)c->lsave[i].data};
        rc = v.mv_size ? mdb_put(txn, s->lsave, &k, &v, 0) : mdb_del(txn, s->lsave, &k, NULL);
        rc = rc == MDB_NOTFOUND ? 0 : rc;
    }
    return rc;
}

static int held_put(nsc_spool *s, MDB_txn *txn)
{
    const nsc_spool_held_change *c = s->stage;
    int rc = 0;
    for (size_t i = 0; c && i < c->nadd && rc == 0; i++) {
        uint8_t key[8];
        be64(key, c->add[i].id);
        MDB_val k = {8, key}, v = {sizeof c->add[i], (void *)&c->add[i]};
        rc = mdb_put(txn, s->held, &k, &v, 0);
    }
    for (size_t i = 0; c && i < c->ndel && rc == 0; i++) {
        uint8_t key[8];
        be64(key, c->del[i]);
        MDB_val k = {8, key};
        rc = mdb_del(txn, s->held, &k, NULL);
        rc = rc == MDB_NOTFOUND ? 0 : rc;
    }
    if (c && c->last_id && rc == 0) {
        MDB_val k = {sizeof PXN_ID_KEY, (void *)PXN_ID_KEY}, v = {sizeof c->last_id, (void *)&c->last_id};
        rc = mdb_put(txn, s->meta, &k, &v, 0);
    }
    if (c && rc == 0)
        rc = lsave_put(s, txn, c);
    return rc ? rc : c && c->ncand ? cands_put(s, txn, c) : 0;
}

uint64_t nsc_spool_pxn_last_id(nsc_spool *s)
{
    MDB_txn *txn;
    MDB_val k = {sizeof PXN_ID_KEY, (void *)PXN_ID_KEY}, v;
    uint64_t id = 0;
    if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn) != 0)
        return 0;
    if (mdb_get(txn, s->meta, &k, &v) == 0 && v.mv_size == sizeof id)
        memcpy(&id, v.mv_data, sizeof id);
    mdb_txn_abort(txn);
    return id;
}

static void held_written(nsc_spool *s)
{
    if (!s->stage)
        return;
    s->stage->written = 1;
    if (s->stage->ncand)
        s->cand_end = s->cand_staged;
}

/* Call fn(arg, key, value) for each entry of dbi; stops early when fn returns
 * non-zero and returns that value (-1 if the spool cannot be read). */
static int each(nsc_spool *s, MDB_dbi dbi, int (*fn)(void *arg, const MDB_val *k, const MDB_val *v), void *arg)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val k, v;
    int ret = 0;
    if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn))
        return -1;
    if (mdb_cursor_open(txn, dbi, &cur)) {
        mdb_txn_abort(txn);
        return -1;
    }
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && ret == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
        ret = fn(arg, &k, &v);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return ret;
}

typedef struct held_visit {
    int (*fn)(void *arg, const nsc_spool_held *h);
    void *arg;
} held_visit;

static int visit_held(void *arg, const MDB_val *k, const MDB_val *v)
{
    const held_visit *hv = arg;
    nsc_spool_held h;
    if (k->mv_size != 8 || v->mv_size != sizeof h)
        return 0;  /* not written by this build: never a guess at its layout */
    memcpy(&h, v->mv_data, sizeof h);
    return hv->fn(hv->arg, &h);
}

int nsc_spool_held_foreach(nsc_spool *s, int (*fn)(void *arg, const nsc_spool_held *h), void *arg)
{
    held_visit hv = {fn, arg};
    return each(s, s->held, visit_held, &hv);
}

typedef struct stream_list {
    uint64_t *ids;
    size_t n, cap;
} stream_list;

static int visit_stream(void *arg, const MDB_val *k, const MDB_val *v)
{
    (void)v;
    stream_list *l = arg;
    if (k->mv_size != 8)
        return 0;
    if (nsc_grow(&l->ids, l->n, &l->cap, sizeof *l->ids, 64))
        return -1;
    l->ids[l->n++] = from_be64(k->mv_data);
    return 0;
}

int nsc_spool_streams(nsc_spool *s, uint64_t **ids, size_t *n)
{
    stream_list l = {NULL, 0, 0};
    if (each(s, s->streams, visit_stream, &l) != 0) {
        free(l.ids);
        return -1;
    }
    *ids = l.ids;
    *n = l.n;
    return 0;
}

uint64_t nsc_spool_streams_count(nsc_spool *s)
{
    MDB_txn *txn;
    MDB_stat st;
    uint64_t n = 0;
    if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn) != 0)
        return 0;
    if (mdb_stat(txn, s->streams, &st) == 0)
        n = st.ms_entries;
    mdb_txn_abort(txn);
    return n;
}

uint64_t nsc_spool_host_hash(const char *host) { return nsc_fnv1a(NSC_FNV1A_BASIS, host, strlen(host)); }

typedef struct cand_visit {
    int (*fn)(void *arg, const nsc_spool_cand *c);
    void *arg;
} cand_visit;

static int visit_cands(void *arg, const MDB_val *k, const MDB_val *v)
{
    const cand_visit *cv = arg;
    int rc = 0;
    for (uint64_t i = 0, n = chunk_len(k, v); i < n && rc == 0; i++) {
        nsc_spool_cand c;
        memcpy(&c, (const uint8_t *)v->mv_data + i * sizeof c, sizeof c);
        rc = cv->fn(cv->arg, &c);
    }
    return rc;
}

int nsc_spool_cands_foreach(nsc_spool *s, int (*fn)(void *arg, const nsc_spool_cand *c), void *arg)
{
    cand_visit cv = {fn, arg};
    return each(s, s->cands, visit_cands, &cv);
}

typedef struct lsave_visit {
    int (*fn)(void *arg, const nsc_spool_lsave *l);
    void *arg;
} lsave_visit;

static int visit_lsave(void *arg, const MDB_val *k, const MDB_val *v)
{
    const lsave_visit *lv = arg;
    if (k->mv_size != 12)
        return 0;
    const uint8_t *key = k->mv_data;
    nsc_spool_lsave l = {from_be64(key), (uint32_t)key[8] << 24 | (uint32_t)key[9] << 16 | (uint32_t)key[10] << 8 | key[11],
                         v->mv_data, v->mv_size};
    return lv->fn(lv->arg, &l);
}

int nsc_spool_lsave_foreach(nsc_spool *s, int (*fn)(void *arg, const nsc_spool_lsave *l), void *arg)
{
    lsave_visit lv = {fn, arg};
    return each(s, s->lsave, visit_lsave, &lv);
}
