/* store_retain.c: retention.
 *
 * Owns deleting the oldest blocks and ledger values (by commit time,
 * database `age`) beyond the age and size limits, with their collective
 * index entries and their share of the totals, in one durable transaction
 * of its own.
 */
#include "store_int.h"

#include "bytes.h"

/* Delete one block and the collective index entries that point into it. */
static int delete_block(nsc_store *st, const MDB_val *bkey)
{
    nsc_block_key bk;
    MDB_val val;
    nsc_block blk;
    int rc = mdb_get(st->w.txn, st->env.dbi[DB_BLOCKS], (MDB_val *)bkey, &val);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (nsc_key_block_parse(bkey->mv_data, bkey->mv_size, &bk) ||
        nsc_block_decode(val.mv_data, val.mv_size, &blk))
        return NSC_STORE_ECORRUPT;
    rc = nsc_st_unindex_block(st, &bk, bkey->mv_data, blk.events, blk.hdr.nevents);
    nsc_store_stats *s = &st->w.pending;
    s->events -= blk.hdr.nevents;
    s->states -= blk.hdr.nstates;
    s->completions -= blk.hdr.ncompletions;
    s->blocks--;
    s->block_bytes -= val.mv_size;
    nsc_block_release(&blk);
    return rc ? rc : mdb_del(st->w.txn, st->env.dbi[DB_BLOCKS], (MDB_val *)bkey, NULL);
}

static int over_limits(nsc_store *st, uint64_t commit_ns, uint64_t now_ns)
{
    uint64_t age = st->env.opts.retain_age_ns;
    if (age && now_ns > age && commit_ns < now_ns - age)
        return 1;
    uint64_t most = st->env.opts.retain_bytes;
    return most && nsc_st_live_bytes(st->w.txn, st->env.dbi) > most;
}

static int retain_txn(nsc_store *st, uint64_t now_ns, uint64_t *deleted)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(st->w.txn, st->env.dbi[DB_AGE], &cur);
    if (rc)
        return rc;
    MDB_val k, v;
    *deleted = 0;
    while ((rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) == 0) {
        if (k.mv_size != NSC_KEY_AGE_LEN || !over_limits(st, nsc_get_be64(k.mv_data), now_ns))
            break;
        rc = v.mv_size == NSC_KEY_LEDGER_LEN ? nsc_st_delete_ledger(st, &v) : delete_block(st, &v);
        if (rc || (rc = mdb_cursor_del(cur, 0)))
            break;
        ++*deleted;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int nsc_store_retain(nsc_store *st, uint64_t now_ns, uint64_t *deleted_blocks)
{
    uint64_t deleted = 0;
    if (st->w.txn || st->env.opts.read_only)
        return NSC_STORE_ESTATE;
    int rc;
    for (;;) {
        if ((rc = nsc_st_open_txn(st)))
            break;
        rc = retain_txn(st, now_ns, &deleted);
        if (!rc && deleted)
            rc = nsc_st_write_stats(st);
        if (rc)
            mdb_txn_abort(st->w.txn);
        else
            rc = mdb_txn_commit(st->w.txn);
        st->w.txn = NULL;
        /* Deleting copies pages too, so even retention can fill the map. */
        if (rc != MDB_MAP_FULL || (rc = nsc_st_grow_map(st)))
            break;
    }
    if (rc == 0)
        st->w.committed = st->w.pending;
    if (deleted_blocks)
        *deleted_blocks = rc ? 0 : deleted;
    return rc;
}
