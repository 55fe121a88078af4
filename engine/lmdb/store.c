/* store.c: the store's environment.
 *
 * Owns opening and closing a store (the LMDB environment, its databases, the
 * schema check, the writer's scratch allocations), growing the map, the
 * error texts, and the two small LMDB helpers every part uses. The other
 * parts are listed in store_int.h; the layout is in docs/collector-store.md.
 */
#include "store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "bytes.h"

#define DEFAULT_MAP (64ull << 20)
#define DEFAULT_MAX_MAP (1ull << 40)

static const char *const db_names[NDBS] = {"meta",  "jobs",   "procs", "strs", "comms", "ranks",
                                            "blocks", "colls", "age", "ledger", "p2p"};

static const char *const err_text[] = {
    "ok", "out of memory",
    "store holds another schema version (another ncclscope release wrote it; use a new directory)",
    "store call out of order or writing a read-only store", "not found",
    "stored value failed to decode", "store map cannot grow past its maximum",
    "store busy: the map is being grown",
    "a stored block is damaged (it does not decode)"};

const char *nsc_store_strerror(int err)
{
    if (err <= 0 && err > -(int)(sizeof err_text / sizeof *err_text))
        return err_text[-err];
    /* LMDB names the symptom; say what it means for the reader */
    if (err == MDB_CORRUPTED)
        return "the store's file is damaged: a page is not of the type its parent says "
               "(MDB_CORRUPTED; restore the store from a copy, or copy out what still reads)";
    if (err == MDB_PAGE_NOTFOUND)
        return "the store's file is damaged: a page points past the end of the data "
               "(MDB_PAGE_NOTFOUND; restore the store from a copy, or copy out what still reads)";
    return mdb_strerror(err);
}

int nsc_st_put(nsc_store *st, int db, const void *k, size_t klen, const void *v, size_t vlen)
{
    MDB_val key = nsc_st_mval(k, klen), val = nsc_st_mval(v, vlen);
    return mdb_put(st->w.txn, st->env.dbi[db], &key, &val, 0);
}

int nsc_st_get_u32(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen, uint32_t *out)
{
    MDB_val key = nsc_st_mval(k, klen), val;
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

/* ---- map growth -------------------------------------------------------- */

/* Remap with every reader of this process out; readers that wait on
 * something else see grow_waiters and leave (nsc_store_grow_pending). */
int nsc_st_set_mapsize(nsc_store *st, size_t size)
{
    atomic_fetch_add(&st->env.grow_waiters, 1);
    pthread_rwlock_wrlock(&st->env.resize);
    int rc = mdb_env_set_mapsize(st->env.mdb, size);
    pthread_rwlock_unlock(&st->env.resize);
    atomic_fetch_sub(&st->env.grow_waiters, 1);
    return rc;
}

int nsc_st_grow_map(nsc_store *st)
{
    MDB_envinfo info;
    int rc = mdb_env_info(st->env.mdb, &info);
    if (rc)
        return rc;
    if (info.me_mapsize >= st->env.opts.max_map)
        return NSC_STORE_EFULL;
    size_t next = info.me_mapsize * 2;
    if (next > st->env.opts.max_map)
        next = st->env.opts.max_map;
    /* LMDB may only remap while no transaction of this process is open. */
    return nsc_st_set_mapsize(st, next);
}

/* ---- open and close ------------------------------------------------------- */

static int check_schema(MDB_txn *txn, const MDB_dbi *dbi, int create)
{
    uint32_t v;
    int rc = nsc_st_get_u32(txn, dbi[DB_META], "schema", 6, &v);
    if (rc == NSC_STORE_ENOTFOUND && create) {
        uint8_t buf[4];
        nsc_put_be32(buf, NSC_STORE_SCHEMA);
        MDB_val k = nsc_st_mval("schema", 6), val = nsc_st_mval(buf, 4);
        return mdb_put(txn, dbi[DB_META], &k, &val, 0);
    }
    if (rc == NSC_STORE_ENOTFOUND)
        return NSC_STORE_ESCHEMA;
    return rc ? rc : v == NSC_STORE_SCHEMA ? 0 : NSC_STORE_ESCHEMA;
}

static int open_dbs_once(nsc_store *st)
{
    MDB_txn *txn;
    int ro = st->env.opts.read_only;
    int rc = mdb_txn_begin(st->env.mdb, NULL, ro ? MDB_RDONLY : 0, &txn);
    if (rc)
        return rc;
    for (int i = 0; !rc && i < NDBS; i++)
        rc = mdb_dbi_open(txn, db_names[i], ro ? 0 : MDB_CREATE, &st->env.dbi[i]);
    if (rc == MDB_NOTFOUND)
        rc = NSC_STORE_ESCHEMA;
    if (!rc)
        rc = check_schema(txn, st->env.dbi, !ro);
    if (!rc)
        rc = nsc_st_read_stats(txn, st->env.dbi, &st->w.committed);
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
            rc = mdb_env_set_mapsize(st->env.mdb, 0);
        else
            rc = nsc_st_grow_map(st);
        if (rc)
            return rc;
    }
    return rc;
}

static int open_env(nsc_store *st, const char *dir)
{
    int ro = st->env.opts.read_only;
    unsigned flags = MDB_NOTLS | (ro ? MDB_RDONLY : 0) | (st->env.opts.no_sync ? MDB_NOSYNC | MDB_NOMETASYNC : 0);
    if (!ro && mkdir(dir, 0750) != 0 && errno != EEXIST)
        return errno;
    int rc = mdb_env_create(&st->env.mdb);
    if (rc || (rc = mdb_env_set_maxdbs(st->env.mdb, NDBS)) ||
        (rc = mdb_env_set_mapsize(st->env.mdb, st->env.opts.initial_map)) ||
        (rc = mdb_env_open(st->env.mdb, dir, flags, 0640)))
        return rc;
    if ((rc = open_dbs(st)))
        return rc;
    if (ro)
        return 0;
    st->scratch.ctx_memo = calloc(MEMO_SIZE, sizeof *st->scratch.ctx_memo);
    st->scratch.str_memo = calloc(MEMO_SIZE, sizeof *st->scratch.str_memo);
    if (!st->scratch.ctx_memo || !st->scratch.str_memo)
        return NSC_STORE_ENOMEM;
    int level = st->env.opts.zstd_level < 0 ? 0 : st->env.opts.zstd_level;
    rc = nsc_block_enc_new(level, &st->scratch.enc);
    if (!rc)
        nsc_block_set_str_map(st->scratch.enc, nsc_st_map_str, st);
    return rc;
}

int nsc_store_open(const char *dir, const nsc_store_opts *opts, nsc_store **out)
{
    nsc_store *st = calloc(1, sizeof *st);
    if (!st)
        return NSC_STORE_ENOMEM;
    if (opts)
        st->env.opts = *opts;
    if (!st->env.opts.initial_map)
        st->env.opts.initial_map = DEFAULT_MAP;
    if (!st->env.opts.max_map)
        st->env.opts.max_map = DEFAULT_MAX_MAP;
    if (!st->env.opts.zstd_level)
        st->env.opts.zstd_level = 3;
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    /* Writer preference: a growing map must not wait behind a stream of readers. */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&st->env.resize, &attr);
    pthread_rwlockattr_destroy(&attr);
    int rc = open_env(st, dir);
    if (rc) {
        nsc_store_close(st);
        return rc;
    }
    *out = st;
    return 0;
}

static void free_scratch(nsc_st_scratch *sc)
{
    nsc_block_enc_free(sc->enc);
    free(sc->ctx_memo);
    free(sc->str_memo);
    free(sc->groups);
    free(sc->ev_group);
    free(sc->rec_group);
    free(sc->id_keys);
    free(sc->id_groups);
    for (int k = 0; k < 3; k++) {
        free(sc->at[k]);
        free(sc->first[k]);
    }
    free(sc->by_id);
    free(sc->id_count);
    free(sc->cursor);
    free(sc->runs);
    free(sc->lrecs);
    free(sc->lsorted);
    free(sc->lmerged);
    nsc_lpack_free(&sc->lstored);
    free(sc->lval);
}

void nsc_store_close(nsc_store *st)
{
    if (!st)
        return;
    nsc_store_abort(st);
    if (st->env.mdb)
        mdb_env_close(st->env.mdb);
    pthread_rwlock_destroy(&st->env.resize);
    free(st->w.ops);
    nsc_st_lends_free(&st->w.lends);
    free_scratch(&st->scratch);
    free(st);
}
