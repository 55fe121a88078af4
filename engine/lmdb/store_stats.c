/* store_stats.c: the store's totals.
 *
 * Owns the totals record in the meta database (written with every
 * transaction, read when the store opens and by readers) and the size of
 * the pages in use.
 */
#include "store_int.h"

#include "bytes.h"

#define NSTATS 12
#define NSTATS_V1 9  /* before unattached_states and the ledger's: read as 0 */

static uint64_t db_bytes(MDB_txn *txn, MDB_dbi dbi)
{
    MDB_stat s;
    if (mdb_stat(txn, dbi, &s) != 0)
        return 0;
    return (uint64_t)(s.ms_branch_pages + s.ms_leaf_pages + s.ms_overflow_pages) * s.ms_psize;
}

uint64_t nsc_st_live_bytes(MDB_txn *txn, const MDB_dbi *dbi)
{
    uint64_t total = 0;
    for (int i = 0; i < NDBS; i++)
        total += db_bytes(txn, dbi[i]);
    return total;
}

int nsc_st_read_stats(MDB_txn *txn, const MDB_dbi *dbi, nsc_store_stats *s)
{
    MDB_val key = nsc_st_mval("stats", 5), val;
    memset(s, 0, sizeof *s);
    int rc = mdb_get(txn, dbi[DB_META], &key, &val);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (val.mv_size % 8 || val.mv_size < NSTATS_V1 * 8 || val.mv_size > NSTATS * 8)
        return NSC_STORE_ECORRUPT;
    uint64_t *f[NSTATS] = {&s->events,      &s->states,      &s->completions,
                           &s->blocks,      &s->block_bytes, &s->unknown_ctx,
                           &s->unknown_str, &s->next_block_seq, &s->max_span_ns,
                           &s->unattached_states, &s->ledger_records, &s->ledger_bytes};
    for (size_t i = 0; i < val.mv_size / 8; i++)
        *f[i] = nsc_get_be64((const uint8_t *)val.mv_data + 8 * i);
    return 0;
}

int nsc_st_write_stats(nsc_store *st)
{
    const nsc_store_stats *s = &st->w.pending;
    const uint64_t f[NSTATS] = {s->events,      s->states,      s->completions,
                                s->blocks,      s->block_bytes, s->unknown_ctx,
                                s->unknown_str, s->next_block_seq, s->max_span_ns,
                                s->unattached_states, s->ledger_records, s->ledger_bytes};
    uint8_t buf[NSTATS * 8];
    for (int i = 0; i < NSTATS; i++)
        nsc_put_be64(buf + 8 * i, f[i]);
    return nsc_st_put(st, DB_META, "stats", 5, buf, sizeof buf);
}

int nsc_store_stats_get(nsc_store_reader *rd, nsc_store_stats *s)
{
    int rc = nsc_st_read_stats(rd->txn, rd->st->env.dbi, s);
    if (rc)
        return rc;
    MDB_envinfo info;
    s->live_bytes = nsc_st_live_bytes(rd->txn, rd->st->env.dbi);
    s->ledger_live_bytes = db_bytes(rd->txn, rd->st->env.dbi[DB_LEDGER]);
    rc = mdb_env_info(rd->st->env.mdb, &info);
    s->map_bytes = rc ? 0 : info.me_mapsize;
    return rc;
}
