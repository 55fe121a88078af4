/* store_ledger.c: the ledger database.
 *
 * Owns putting a process's ledger records (the rank's value each record
 * joins (keys.h) read, merged with the batch's records by the upsert rule,
 * written back, filled to one LMDB page and the rest starting new ones, so
 * a value once full is not written again and the pages hold values, not
 * gaps; a value new to the store gets its age entry,
 * so retention takes it like a block), deleting a value for retention, and
 * reading a window of seqs and ranks. A record's strings are the process's own ids, and one
 * whose comm_id is 0 names its communicator by the process's context index
 * (its agent never saw the definitions): both resolve through the
 * process's definitions, stored with its batches. The upsert rule: a later
 * record of the same (comm, seq, rank, func, peer) replaces the stored one,
 * except that an in-flight record never replaces a completed one.
 */
#include "store_int.h"

#include <stdlib.h>

#include "bytes.h"
#include "grow.h"

/* ---- writer ------------------------------------------------------------ */

/* The batch's process and its string definitions (the process's own ids,
 * as in its wire batches: put like a batch's, so the memo resolves every id
 * the process ever defined). */
static int put_identity(nsc_store *st, uint32_t job, const nsc_store_ledger *l)
{
    int rc = nsc_st_proc_identity(st, job, l->proc, &st->scratch.proc);
    nsc_st_group_begin(&st->scratch);
    for (uint32_t i = 0; !rc && i < l->batch->nstrs; i++)
        rc = nsc_st_put_str(st, &l->batch->strs[i]);
    return rc;
}

/* A string field: its store-wide id, or -1 where the process never defined it. */
static long map_str(nsc_store *st, nsc_str id)
{
    nsc_str g = nsc_st_proc_str(st, id);
    return id && !g ? -1 : (long)g;
}

/* comm_id 0 (its agent never saw the context defined): the communicator and
 * rank of the process's context ctx. 0, or -1 where it is not known. */
static int resolve_ctx(nsc_store *st, nsc_ledger_rec *r)
{
    uint8_t ckey[7] = {'c'};
    nsc_put_be32(ckey + 1, st->scratch.proc);
    nsc_put_be16(ckey + 5, r->ctx);
    MDB_val k = nsc_st_mval(ckey, sizeof ckey), v;
    int rc = mdb_get(st->w.txn, st->env.dbi[DB_PROCS], &k, &v);
    if (rc && rc != MDB_NOTFOUND)
        st->w.txn_rc = rc;
    if (rc || v.mv_size != 16)
        return -1;
    r->comm_id = nsc_get_be64(v.mv_data);
    r->rank = (int32_t)nsc_get_be32((const uint8_t *)v.mv_data + 8);
    return 0;
}

#define KNOWN_FLAGS                                                                               \
    (NSC_LEDGER_INFLIGHT | NSC_LEDGER_GRAPH | NSC_LEDGER_CE | NSC_LEDGER_PXN | NSC_LEDGER_P2P |  \
     NSC_LEDGER_NO_GPU | NSC_LEDGER_NO_NET | NSC_LEDGER_GPU_STALE)

/* The record with its communicator and strings resolved, or 0 when it is
 * malformed or names what the process never defined. */
static int map_record(nsc_store *st, const nsc_ledger_rec *in, nsc_ledger_rec *out)
{
    *out = *in;
    long func = map_str(st, in->func), dt = map_str(st, in->datatype), algo = map_str(st, in->algo),
         proto = map_str(st, in->proto);
    if ((in->comm_id == 0 && resolve_ctx(st, out)) || out->rank < 0 || (in->flags & ~(uint32_t)KNOWN_FLAGS) ||
        func < 0 || dt < 0 || algo < 0 || proto < 0 || in->nedges > NSC_LPACK_MAX_EDGES || (in->nedges && !in->edges))
        return 0;
    out->func = (nsc_str)func;
    out->datatype = (nsc_str)dt;
    out->algo = (nsc_str)algo;
    out->proto = (nsc_str)proto;
    return 1;
}

static int key_cmp(const void *pa, const void *pb)
{
    const nsc_ledger_rec *a = *(const nsc_ledger_rec *const *)pa, *b = *(const nsc_ledger_rec *const *)pb;
    if (a->comm_id != b->comm_id)
        return a->comm_id < b->comm_id ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    int c = nsc_lpack_cmp(a, b);
    /* the same record twice in one batch: the later one is put last */
    return c ? c : a < b ? -1 : a > b;
}

/* The batch's valid records in key order, in sc->lsorted; *n of them. */
static int sort_records(nsc_store *st, nsc_store_ledger *l, size_t *n)
{
    nsc_st_scratch *sc = &st->scratch;
    const nsc_ledger_batch *b = l->batch;
    if (nsc_grow_to(&sc->lrecs, b->nrecs, &sc->lrecs_cap, sizeof *sc->lrecs, 64) ||
        nsc_grow_to(&sc->lsorted, b->nrecs, &sc->lsorted_cap, sizeof *sc->lsorted, 64))
        return NSC_STORE_ENOMEM;
    size_t k = 0;
    for (uint32_t i = 0; i < b->nrecs; i++) {
        if (map_record(st, &b->recs[i], &sc->lrecs[k]))
            sc->lsorted[k] = &sc->lrecs[k], k++;
        else
            l->counts.rejected++;
    }
    if (k > 1)
        qsort(sc->lsorted, k, sizeof *sc->lsorted, key_cmp);
    *n = k;
    return 0;
}

/* Put cand after the merged records *m (n of them) by the upsert rule. */
static void upsert(const nsc_ledger_rec **m, size_t *n, const nsc_ledger_rec *cand, int is_new,
                   nsc_store_ledger_counts *c)
{
    const nsc_ledger_rec *last = *n ? m[*n - 1] : NULL;
    if (!last || nsc_lpack_cmp(last, cand) != 0) {
        m[(*n)++] = cand;
        c->stored += is_new;
        return;
    }
    if ((cand->flags & NSC_LEDGER_INFLIGHT) && !(last->flags & NSC_LEDGER_INFLIGHT)) {
        c->stale++;
        return;
    }
    m[*n - 1] = cand;
    c->replaced++;
}

/* Merge the value's stored records with the batch's new ones (both sorted)
 * into sc->lmerged; *n of them. */
static int merge(nsc_st_scratch *sc, const nsc_ledger_rec *const *add, size_t nadd,
                 nsc_store_ledger_counts *c, size_t *n)
{
    const nsc_lpack *old = &sc->lstored;
    if (nsc_grow_to(&sc->lmerged, old->n + nadd, &sc->lmerged_cap, sizeof *sc->lmerged, 64))
        return NSC_STORE_ENOMEM;
    size_t i = 0, j = 0;
    *n = 0;
    while (i < old->n || j < nadd) {
        int take_old = j == nadd || (i < old->n && nsc_lpack_cmp(&old->recs[i], add[j]) <= 0);
        if (take_old)
            upsert(sc->lmerged, n, &old->recs[i++], 0, c);
        else
            upsert(sc->lmerged, n, add[j++], 1, c);
    }
    return 0;
}

/* LMDB's page header: a value of a page's size less this takes one
 * overflow page whole. */
#define LMDB_PAGE_HDR 16

/* The value at the cursor after op, when it is want's rank's (*same). */
static int cursor_rank(MDB_cursor *cur, MDB_val *k, MDB_cursor_op op, const nsc_ledger_key *want,
                       nsc_ledger_key *at, int *same)
{
    MDB_val v;
    int rc = mdb_cursor_get(cur, k, &v, op);
    *same = !rc && !nsc_key_ledger_parse(k->mv_data, k->mv_size, at) && at->job == want->job &&
            at->comm == want->comm && at->rank == want->rank;
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The rank's value a record of seq k->first joins: the one with the
 * greatest first seq not above it (*found; k->first becomes its), else a
 * new one at seq. *next: the first seq of the rank's value after it,
 * UINT64_MAX when there is none. */
static int find_value(MDB_cursor *cur, nsc_ledger_key *k, int *found, uint64_t *next)
{
    uint8_t key[NSC_KEY_LEDGER_LEN];
    nsc_ledger_key at, want = *k;
    nsc_key_ledger(key, k);
    MDB_val mk = nsc_st_mval(key, sizeof key), v;
    int same, rc = mdb_cursor_get(cur, &mk, &v, MDB_SET_RANGE), past_end = rc == MDB_NOTFOUND;
    if (rc && !past_end)
        return rc;
    same = !past_end && !nsc_key_ledger_parse(mk.mv_data, mk.mv_size, &at) && at.job == want.job &&
           at.comm == want.comm && at.rank == want.rank;
    *found = same && at.first == want.first;
    *next = UINT64_MAX;
    if (*found) {
        rc = cursor_rank(cur, &mk, MDB_NEXT, &want, &at, &same);
        *next = same ? at.first : UINT64_MAX;
        return rc;
    }
    if (same)
        *next = at.first;
    if ((rc = cursor_rank(cur, &mk, past_end ? MDB_LAST : MDB_PREV, &want, &at, &same)) || !same)
        return rc;
    *found = 1;
    k->first = at.first;
    return 0;
}

/* Write st->scratch.lval (len bytes, n records) as the value at k, which
 * held old_len bytes of old_n records (fresh: none, given its age entry). */
static int write_value(nsc_store *st, const nsc_ledger_key *k, size_t n, size_t len, size_t old_n,
                       size_t old_len, int fresh)
{
    uint8_t key[NSC_KEY_LEDGER_LEN];
    nsc_key_ledger(key, k);
    int rc = nsc_st_put(st, DB_LEDGER, key, sizeof key, st->scratch.lval, len);
    if (rc)
        return rc;
    nsc_store_stats *s = &st->w.pending;
    s->ledger_records += n - old_n;
    s->ledger_bytes += len - old_len;
    if (!fresh)
        return 0;
    uint8_t age[NSC_KEY_AGE_LEN];
    nsc_key_age(age, st->w.now_ns, (uint32_t)s->next_block_seq++);
    return nsc_st_put(st, DB_AGE, age, sizeof age, key, sizeof key);
}

/* The stored value at k (found: one is) and where it ends: from the
 * writer's memory when the records add to it all come after its last, else
 * decoded into sc->lstored. */
static int stored_end(nsc_store *st, const nsc_ledger_key *k, int found, const nsc_ledger_rec *first, MDB_val *mv,
                      nsc_lpack_end *end)
{
    nsc_st_scratch *sc = &st->scratch;
    uint8_t key[NSC_KEY_LEDGER_LEN];
    MDB_val mk = nsc_st_mval(key, sizeof key);
    int rc;
    nsc_lpack_clear(&sc->lstored);
    *mv = nsc_st_mval(NULL, 0);
    *end = nsc_lpack_ending(&sc->lstored);
    if (!found)
        return 0;
    nsc_key_ledger(key, k);
    if ((rc = mdb_get(st->w.txn, st->env.dbi[DB_LEDGER], &mk, mv)))
        return rc;
    const nsc_lpack_end *kept = nsc_st_lends_find(&st->w.lends, k, mv->mv_data, mv->mv_size);
    if (kept && nsc_lpack_cmp(kept->last, first) < 0) {
        *end = *kept;
        return 0;
    }
    if ((rc = nsc_lpack_decode(k, mv->mv_data, mv->mv_size, &sc->lstored)))
        return rc;
    *end = nsc_lpack_ending(&sc->lstored);
    return 0;
}

/* The records add[0..nadd) merged into the value at k (found: stored),
 * all below the rank's next value's first seq: the value takes what fits in
 * max bytes and new values the rest, each as full (a late record in a full
 * value splits it). Each value written is kept in the writer's memory. */
static int put_value(nsc_store *st, nsc_ledger_key k, int found, size_t max, const nsc_ledger_rec *const *add,
                     size_t nadd, nsc_store_ledger_counts *c)
{
    nsc_st_scratch *sc = &st->scratch;
    nsc_st_lends *lends = &st->w.lends;
    MDB_val mv;
    nsc_lpack_end end, after;
    size_t n, take, len;
    int rc = stored_end(st, &k, found, add[0], &mv, &end);
    if (rc)
        return rc;
    /* merged: the stored records read (none when remembered), then the new */
    size_t old_n = end.n, read = sc->lstored.n;
    /* records all after the stored ones are told on from its last: the stored ones are not told again */
    int tail = old_n && nsc_lpack_cmp(end.last, add[0]) < 0;
    if ((rc = merge(sc, add, nadd, c, &n)))
        return rc;
    if (nsc_grow_to(&sc->lval, mv.mv_size + nsc_lpack_bound(sc->lmerged, n), &sc->lval_cap, 1, 4096))
        return NSC_STORE_ENOMEM;
    if (tail) {
        len = nsc_lpack_append_fit(mv.mv_data, mv.mv_size, &end, sc->lmerged + read, n - read, max, sc->lval,
                                   &take, &after);
        take += read;
        if (take > read && !(rc = write_value(st, &k, after.n, len, old_n, mv.mv_size, 0)))
            nsc_st_lends_keep(lends, &k, sc->lval, len, &after);
        else if (take == read && read)  /* full, unchanged: kept as read */
            nsc_st_lends_keep(lends, &k, mv.mv_data, mv.mv_size, &end);
    } else {
        len = nsc_lpack_encode_fit(&k, sc->lmerged, n, max, sc->lval, &take, &after);
        if (!(rc = write_value(st, &k, take, len, old_n, mv.mv_size, !found)))
            nsc_st_lends_keep(lends, &k, sc->lval, len, &after);
    }
    for (size_t at = take; !rc && at < n; at += take) {
        k.first = sc->lmerged[at]->seq;
        len = nsc_lpack_encode_fit(&k, sc->lmerged + at, n - at, max, sc->lval, &take, &after);
        if (!(rc = write_value(st, &k, take, len, 0, 0, 1)))
            nsc_st_lends_keep(lends, &k, sc->lval, len, &after);
    }
    return rc;
}

/* A rank's records r[0..n) (one comm's, in key order), value by value. */
static int put_rank(nsc_store *st, MDB_cursor *cur, uint32_t job, size_t max, const nsc_ledger_rec *const *r,
                    size_t n, nsc_store_ledger_counts *c)
{
    int rc = 0;
    for (size_t i = 0, j; !rc && i < n; i = j) {
        nsc_ledger_key k = {job, r[i]->comm_id, r[i]->seq, r[i]->rank};
        int found;
        uint64_t next;
        if ((rc = find_value(cur, &k, &found, &next)))
            break;
        for (j = i + 1; j < n && r[j]->seq < next; j++)
            ;
        rc = put_value(st, k, found, max, r + i, j - i, c);
    }
    return rc;
}

int nsc_st_put_ledger(nsc_store *st, nsc_store_ledger *l)
{
    memset(&l->counts, 0, sizeof l->counts);
    const nsc_proc *p = l->proc;
    uint32_t job;
    size_t n;
    MDB_stat ms;
    MDB_cursor *cur;
    int rc = nsc_st_intern(st, DB_JOBS, p->job, nsc_st_text_len(p->job, sizeof p->job), "next_job",
                           &job);
    if (rc || (rc = put_identity(st, job, l)) || (rc = sort_records(st, l, &n)) || (rc = st->w.txn_rc) ||
        (rc = mdb_env_stat(st->env.mdb, &ms)) || (rc = mdb_cursor_open(st->w.txn, st->env.dbi[DB_LEDGER], &cur)))
        return rc;
    const nsc_ledger_rec **r = st->scratch.lsorted;
    for (size_t i = 0, j; !rc && i < n; i = j) {
        for (j = i + 1; j < n && r[j]->comm_id == r[i]->comm_id && r[j]->rank == r[i]->rank; j++)
            ;
        rc = put_rank(st, cur, job, ms.ms_psize - LMDB_PAGE_HDR, r + i, j - i, &l->counts);
    }
    mdb_cursor_close(cur);
    return rc;
}

/* Retention: the value at key, with its share of the totals. */
int nsc_st_delete_ledger(nsc_store *st, const MDB_val *key)
{
    nsc_st_scratch *sc = &st->scratch;
    nsc_ledger_key k;
    MDB_val val;
    int rc = mdb_get(st->w.txn, st->env.dbi[DB_LEDGER], (MDB_val *)key, &val);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return rc;
    nsc_lpack_clear(&sc->lstored);
    if (nsc_key_ledger_parse(key->mv_data, key->mv_size, &k) ||
        nsc_lpack_decode(&k, val.mv_data, val.mv_size, &sc->lstored))
        return NSC_STORE_ECORRUPT;
    st->w.pending.ledger_records -= sc->lstored.n;
    st->w.pending.ledger_bytes -= val.mv_size;
    return mdb_del(st->w.txn, st->env.dbi[DB_LEDGER], (MDB_val *)key, NULL);
}

/* ---- readers ----------------------------------------------------------- */

/* Seqs read together: a rank's records of them decoded at once for every
 * rank asked for, then given out in (seq, rank) order. */
#define READ_SEQS 64

typedef struct window {
    const nsc_store_ledger_q *q;
    uint64_t lo, hi;               /* the seqs being read */
    uint64_t next;                 /* the first seq above hi of any rank asked for; UINT64_MAX: none */
    nsc_lpack recs;                /* their records, of the ranks asked for */
    const nsc_ledger_rec **order;  /* those in (seq, rank) order */
    size_t order_cap;
} window;

static int window_cmp(const void *pa, const void *pb)
{
    const nsc_ledger_rec *a = *(const nsc_ledger_rec *const *)pa, *b = *(const nsc_ledger_rec *const *)pb;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return nsc_lpack_cmp(a, b);
}

/* The seqs' records gathered, in order, to fn. */
static int emit_seqs(window *w, nsc_store_ledger_fn fn, void *arg)
{
    if (nsc_grow_to(&w->order, w->recs.n, &w->order_cap, sizeof *w->order, 64))
        return NSC_STORE_ENOMEM;
    for (size_t i = 0; i < w->recs.n; i++)
        w->order[i] = &w->recs.recs[i];
    if (w->recs.n > 1)
        qsort(w->order, w->recs.n, sizeof *w->order, window_cmp);
    int rc = 0;
    for (size_t i = 0; !rc && i < w->recs.n; i++)
        rc = fn(arg, w->order[i]);
    nsc_lpack_clear(&w->recs);
    return rc;
}

/* The key at the cursor is of the job and comm asked for: 1, its fields in *at. */
static int in_comm(const window *w, const MDB_val *k, nsc_ledger_key *at)
{
    return !nsc_key_ledger_parse(k->mv_data, k->mv_size, at) && at->job == w->q->job && at->comm == w->q->comm;
}

/* Rank k->rank's records of the seqs gathered into w: from its value that
 * holds w->lo (the last one starting at or before it) to the last one
 * starting at or before w->hi. */
static int gather_rank(MDB_cursor *cur, window *w, const nsc_ledger_key *want)
{
    uint8_t key[NSC_KEY_LEDGER_LEN];
    nsc_ledger_key at = *want;
    at.first = w->lo;
    nsc_key_ledger(key, &at);
    MDB_val k = nsc_st_mval(key, sizeof key), v;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND || (!rc && !(in_comm(w, &k, &at) && at.rank == want->rank && at.first == w->lo))) {
        /* the value before holds w->lo when it is the rank's; else start where the seek did */
        MDB_val pk;
        int prc = mdb_cursor_get(cur, &pk, &v, rc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
        if (prc && prc != MDB_NOTFOUND)
            return prc;
        if (!prc && in_comm(w, &pk, &at) && at.rank == want->rank) {
            k = pk;
            rc = 0;
        } else {
            k = nsc_st_mval(key, sizeof key);
            rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        }
    }
    while (!rc && in_comm(w, &k, &at) && at.rank == want->rank) {
        if (at.first > w->hi) {
            w->next = at.first < w->next ? at.first : w->next;
            break;
        }
        if ((rc = nsc_lpack_decode_seqs(&at, v.mv_data, v.mv_size, w->lo, w->hi, &w->recs, &w->next)))
            break;
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Every rank asked for: its records of the seqs gathered into w. */
static int gather_seqs(MDB_cursor *cur, window *w)
{
    const nsc_store_ledger_q *q = w->q;
    for (int64_t rank = q->rank_lo; rank <= q->rank_hi;) {
        uint8_t key[NSC_KEY_LEDGER_LEN];
        nsc_ledger_key at = {q->job, q->comm, 0, (int32_t)rank};
        nsc_key_ledger(key, &at);
        MDB_val k = nsc_st_mval(key, sizeof key), v;
        int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        if (rc == MDB_NOTFOUND || (!rc && (!in_comm(w, &k, &at) || at.rank > q->rank_hi)))
            return 0;
        if (rc || (rc = gather_rank(cur, w, &at)))
            return rc;
        rank = (int64_t)at.rank + 1;
    }
    return 0;
}

int nsc_store_ledger_read(nsc_store_reader *rd, const nsc_store_ledger_q *q, nsc_store_ledger_fn fn,
                          void *arg)
{
    MDB_cursor *cur;
    if (q->seq_lo > q->seq_hi || q->rank_lo > q->rank_hi)
        return 0;
    int rc = mdb_cursor_open(rd->txn, nsc_st_rdbi(rd, DB_LEDGER), &cur);
    if (rc)
        return rc;
    window w = {q, q->seq_lo, 0, 0, {0}, NULL, 0};
    for (;;) {  /* from one read to the next, skipping seqs no rank has */
        w.hi = q->seq_hi - w.lo < READ_SEQS ? q->seq_hi : w.lo + READ_SEQS - 1;
        w.next = UINT64_MAX;
        if ((rc = gather_seqs(cur, &w)) || (rc = emit_seqs(&w, fn, arg)) || w.next == UINT64_MAX ||
            w.next > q->seq_hi)
            break;
        w.lo = w.next;
    }
    mdb_cursor_close(cur);
    nsc_lpack_free(&w.recs);
    free(w.order);
    return rc;
}
