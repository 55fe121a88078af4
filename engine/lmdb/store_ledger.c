/* store_ledger.c: the ledger database.
 *
 * Owns putting a process's ledger records (each value of a rank's chunk of
 * seqs read, merged with the batch's records by the upsert rule, written
 * back; a value new to the store gets its age entry, so retention takes it
 * like a block), deleting a value for retention, and reading a window of
 * seqs and ranks. A record's strings are the process's own ids, and one
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

/* One value: the records add[0..nadd) of one (comm, rank, chunk). */
static int put_value(nsc_store *st, uint32_t job, const nsc_ledger_rec *const *add, size_t nadd,
                     nsc_store_ledger_counts *c)
{
    nsc_st_scratch *sc = &st->scratch;
    nsc_ledger_key k = {job, add[0]->comm_id, add[0]->seq / NSC_LEDGER_CHUNK, add[0]->rank};
    uint8_t key[NSC_KEY_LEDGER_LEN];
    nsc_key_ledger(key, &k);
    MDB_val mk = nsc_st_mval(key, sizeof key), mv;
    nsc_lpack_clear(&sc->lstored);
    int rc = mdb_get(st->w.txn, st->env.dbi[DB_LEDGER], &mk, &mv), fresh = rc == MDB_NOTFOUND;
    size_t old_len = fresh ? 0 : mv.mv_size, n;
    if (rc && !fresh)
        return rc;
    if (!fresh && (rc = nsc_lpack_decode(&k, mv.mv_data, mv.mv_size, &sc->lstored)))
        return rc;
    size_t old_n = sc->lstored.n;
    if ((rc = merge(sc, add, nadd, c, &n)))
        return rc;
    size_t bound = nsc_lpack_bound(sc->lmerged, n);
    if (nsc_grow_to(&sc->lval, bound, &sc->lval_cap, 1, 4096))
        return NSC_STORE_ENOMEM;
    size_t len = nsc_lpack_encode(&k, sc->lmerged, n, sc->lval);
    if ((rc = nsc_st_put(st, DB_LEDGER, key, sizeof key, sc->lval, len)))
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

static int same_value(const nsc_ledger_rec *a, const nsc_ledger_rec *b)
{
    return a->comm_id == b->comm_id && a->rank == b->rank &&
           a->seq / NSC_LEDGER_CHUNK == b->seq / NSC_LEDGER_CHUNK;
}

int nsc_st_put_ledger(nsc_store *st, nsc_store_ledger *l)
{
    memset(&l->counts, 0, sizeof l->counts);
    const nsc_proc *p = l->proc;
    uint32_t job;
    size_t n;
    int rc = nsc_st_intern(st, DB_JOBS, p->job, nsc_st_text_len(p->job, sizeof p->job), "next_job",
                           &job);
    if (rc || (rc = put_identity(st, job, l)) || (rc = sort_records(st, l, &n)) || (rc = st->w.txn_rc))
        return rc;
    const nsc_ledger_rec **r = st->scratch.lsorted;
    for (size_t i = 0, j; !rc && i < n; i = j) {
        for (j = i + 1; j < n && same_value(r[i], r[j]); j++)
            ;
        rc = put_value(st, job, r + i, j - i, &l->counts);
    }
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

typedef struct window {
    const nsc_store_ledger_q *q;
    nsc_lpack recs;                /* one chunk's records of the ranks asked for */
    const nsc_ledger_rec **order;  /* those in the window, in (seq, rank) order */
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

/* The chunk's records gathered: those in the window, in order, to fn. */
static int emit_chunk(window *w, nsc_store_ledger_fn fn, void *arg)
{
    if (nsc_grow_to(&w->order, w->recs.n, &w->order_cap, sizeof *w->order, 64))
        return NSC_STORE_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < w->recs.n; i++)
        if (w->recs.recs[i].seq >= w->q->seq_lo && w->recs.recs[i].seq <= w->q->seq_hi)
            w->order[n++] = &w->recs.recs[i];
    if (n > 1)
        qsort(w->order, n, sizeof *w->order, window_cmp);
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++)
        rc = fn(arg, w->order[i]);
    nsc_lpack_clear(&w->recs);
    return rc;
}

/* From the cursor's key on: the values of its chunk and the ranks asked for
 * gathered into w (the cursor ends past them); MDB_NOTFOUND when the window
 * has no more. */
static int gather_chunk(MDB_cursor *cur, MDB_val *k, MDB_val *v, window *w, uint64_t *chunk)
{
    const nsc_store_ledger_q *q = w->q;
    nsc_ledger_key lk;
    int rc = 0;
    if (nsc_key_ledger_parse(k->mv_data, k->mv_size, &lk) || lk.job != q->job || lk.comm != q->comm ||
        lk.chunk > q->seq_hi / NSC_LEDGER_CHUNK)
        return MDB_NOTFOUND;
    *chunk = lk.chunk;
    while (!rc && lk.rank <= q->rank_hi) {
        if (lk.rank >= q->rank_lo && (rc = nsc_lpack_decode(&lk, v->mv_data, v->mv_size, &w->recs)))
            break;
        rc = mdb_cursor_get(cur, k, v, MDB_NEXT);
        if (!rc && (nsc_key_ledger_parse(k->mv_data, k->mv_size, &lk) || lk.job != q->job ||
                    lk.comm != q->comm || lk.chunk != *chunk))
            break;
    }
    return rc == MDB_NOTFOUND ? 0 : rc;
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
    window w = {q, {0}, NULL, 0};
    uint64_t chunk = q->seq_lo / NSC_LEDGER_CHUNK, last = q->seq_hi / NSC_LEDGER_CHUNK;
    for (;;) {
        uint8_t key[NSC_KEY_LEDGER_LEN];
        nsc_key_ledger(key, &(nsc_ledger_key){q->job, q->comm, chunk, q->rank_lo});
        MDB_val k = nsc_st_mval(key, sizeof key), v;
        if ((rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE)) ||
            (rc = gather_chunk(cur, &k, &v, &w, &chunk)) || (rc = emit_chunk(&w, fn, arg)) ||
            chunk >= last)
            break;
        chunk++;
    }
    mdb_cursor_close(cur);
    nsc_lpack_free(&w.recs);
    free(w.order);
    return rc == MDB_NOTFOUND ? 0 : rc;
}
