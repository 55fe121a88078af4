/* store_txn.c: the writer's transaction.
 *
 * Owns begin, put, commit and abort: every put is recorded as an operation
 * and run at once; when the map fills, commit grows it and runs the recorded
 * operations again in a new transaction (so batches must outlive commit).
 * Meta records reach the transaction through nsc_st_push_meta.
 */
#include "store_int.h"

#include <stdlib.h>

#include "grow.h"

static int put_meta_op(nsc_store *st, const op *o)
{
    return nsc_st_put(st, DB_META, o->key, o->klen, o->val, o->len);
}

/* Run one op unless the transaction already failed; a full map is noted for
 * commit to grow and replay, any other failure is returned. */
static int run_op(nsc_store *st, const op *o)
{
    if (st->w.txn_rc)
        return st->w.txn_rc == MDB_MAP_FULL ? 0 : st->w.txn_rc;
    int rc = o->kind == OP_BATCH    ? nsc_st_put_batch(st, o->batch)
             : o->kind == OP_LEDGER ? nsc_st_put_ledger(st, o->ledger)
                                    : put_meta_op(st, o);
    if (rc)
        st->w.txn_rc = rc;
    return rc == MDB_MAP_FULL ? 0 : rc;
}

static void clear_ops(nsc_store *st)
{
    for (size_t i = 0; i < st->w.nops; i++) {
        free(st->w.ops[i].key);
        free(st->w.ops[i].val);
    }
    st->w.nops = 0;
}

static int push_op(nsc_store *st, op o)
{
    if (nsc_grow(&st->w.ops, st->w.nops, &st->w.ops_cap, sizeof *st->w.ops, 64))
        return NSC_STORE_ENOMEM;
    st->w.ops[st->w.nops++] = o;
    return run_op(st, &st->w.ops[st->w.nops - 1]);
}

int nsc_st_open_txn(nsc_store *st)
{
    st->w.pending = st->w.committed;
    st->w.txn_rc = 0;
    return mdb_txn_begin(st->env.mdb, NULL, 0, &st->w.txn);
}

int nsc_store_begin(nsc_store *st, uint64_t now_ns)
{
    if (st->w.txn || st->env.opts.read_only)
        return NSC_STORE_ESTATE;
    st->w.now_ns = now_ns;
    clear_ops(st);
    int rc = nsc_st_open_txn(st);
    return rc || !st->env.opts.wall_clock ? rc : nsc_st_record_wall(st, now_ns);
}

int nsc_store_put(nsc_store *st, const nsc_store_batch *b)
{
    if (!st->w.txn)
        return NSC_STORE_ESTATE;
    return push_op(st, (op){OP_BATCH, b, NULL, NULL, 0, NULL, 0});
}

int nsc_store_put_ledger(nsc_store *st, nsc_store_ledger *l)
{
    if (!st->w.txn)
        return NSC_STORE_ESTATE;
    return push_op(st, (op){OP_LEDGER, NULL, l, NULL, 0, NULL, 0});
}

/* A meta record written in the open transaction (and replayed with it);
 * key and value are copied. */
int nsc_st_push_meta(nsc_store *st, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (!st->w.txn)
        return NSC_STORE_ESTATE;
    op o = {OP_META, NULL, NULL, malloc(klen), klen, malloc(vlen ? vlen : 1), vlen};
    if (!o.key || !o.val) {
        free(o.key);
        free(o.val);
        return NSC_STORE_ENOMEM;
    }
    memcpy(o.key, key, klen);
    memcpy(o.val, val, vlen);
    return push_op(st, o);
}

void nsc_store_abort(nsc_store *st)
{
    if (st->w.txn)
        mdb_txn_abort(st->w.txn);
    st->w.txn = NULL;
    st->w.wall.stored = 0;  /* its record, if any, went with the transaction */
    clear_ops(st);
}

/* Commit; on a full map, grow it and run the whole transaction again. */
int nsc_store_commit(nsc_store *st)
{
    if (!st->w.txn)
        return NSC_STORE_ESTATE;
    int rc;
    for (;;) {
        rc = st->w.txn_rc ? st->w.txn_rc : nsc_st_write_stats(st);
        if (rc)
            mdb_txn_abort(st->w.txn);
        else
            rc = mdb_txn_commit(st->w.txn);
        st->w.txn = NULL;
        if (rc != MDB_MAP_FULL || (rc = nsc_st_grow_map(st)) || (rc = nsc_st_open_txn(st)))
            break;
        for (size_t i = 0; i < st->w.nops; i++)
            run_op(st, &st->w.ops[i]);
    }
    if (rc == 0)
        st->w.committed = st->w.pending;
    clear_ops(st);
    return rc;
}
