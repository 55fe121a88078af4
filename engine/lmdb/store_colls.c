/* store_colls.c: the block indexes, the collective index (database
 * `colls`) and the p2p index (database `p2p`).
 *
 * Owns the runs of collectives a block holds, indexing them when a block is
 * written (a later block wins the seqNumbers it covers), removing them when
 * retention deletes the block, and finding a collective across ranks; and
 * the keys of the blocks that hold a P2p event, so that a reader of the
 * Send/Recv operations decodes those blocks only (a ring's none).
 */
#include "store_int.h"

#include "grow.h"

/* A Coll extends its function's newest run among this many latest runs:
 * bounds the search when a block interleaves many functions. */
#define RUN_LOOKBACK 16

/* The runs of a block's events (stored order) into st->scratch.runs, in the order
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
        while (r > back && st->scratch.runs[r - 1].func != func)
            r--;
        if (r > back && st->scratch.runs[r - 1].last + 1 == seq && seq != 0) {
            st->scratch.runs[r - 1].last = seq;
            continue;
        }
        if (nsc_grow(&st->scratch.runs, count, &st->scratch.runs_cap, sizeof *st->scratch.runs, 16))
            return NSC_STORE_ENOMEM;
        st->scratch.runs[count++] = (coll_run){func, (uint32_t)i, seq, seq};
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
    MDB_val mk = nsc_st_mval(key, sizeof key), mv;
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
    MDB_val mk = nsc_st_mval(key, sizeof key), mv = nsc_st_mval(val, sizeof val);
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
        (rc = mdb_cursor_open(st->w.txn, st->env.dbi[DB_COLLS], &cur)))
        return rc;
    for (size_t i = 0; !rc && i < nruns; i++) {
        const coll_run *r = &st->scratch.runs[i];
        nsc_coll_key k = {bk->job, bk->comm, r->func, bk->rank, r->first};
        rc = fn(cur, bkey, &k, r);
    }
    mdb_cursor_close(cur);
    return rc;
}

static int holds_p2p(const nsc_event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ev[i].type == NSC_T_P2P)
            return 1;
    return 0;
}

int nsc_st_index_block(nsc_store *st, const nsc_block_key *bk, const uint8_t *bkey,
                       const nsc_event *ev, size_t n)
{
    int rc = for_each_run(st, bk, bkey, ev, n, put_run);
    if (!rc && holds_p2p(ev, n))
        rc = nsc_st_put(st, DB_P2P, bkey, NSC_KEY_BLOCK_LEN, "", 0);
    return rc;
}

int nsc_st_unindex_block(nsc_store *st, const nsc_block_key *bk, const uint8_t *bkey,
                         const nsc_event *ev, size_t n)
{
    int rc = for_each_run(st, bk, bkey, ev, n, delete_run);
    MDB_val k = nsc_st_mval(bkey, NSC_KEY_BLOCK_LEN);
    if (rc || !holds_p2p(ev, n))
        return rc;
    rc = mdb_del(st->w.txn, st->env.dbi[DB_P2P], &k, NULL);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static int coll_hit(nsc_store_reader *rd, const nsc_coll_key *k, const nsc_coll_val *v,
                    uint64_t seq, nsc_store_coll_hit *hit)
{
    nsc_block blk;
    MDB_val bkey = nsc_st_mval(v->block, NSC_KEY_BLOCK_LEN), bval;
    int rc = mdb_get(rd->txn, nsc_st_rdbi(rd, DB_BLOCKS), &bkey, &bval);
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
    if ((rc = mdb_cursor_open(rd->txn, nsc_st_rdbi(rd, DB_COLLS), &cur)))
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
