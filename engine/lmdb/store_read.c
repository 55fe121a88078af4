/* store_read.c: readers.
 *
 * Owns the read transactions (which wait, or refuse, while the map grows)
 * and reading events: the blocks of one (job, comm, rank) that may overlap
 * a time window, and the scan of their events.
 */
#include "store_int.h"

#include <stdlib.h>

#include "bytes.h"

static int read_begin(nsc_store *st, nsc_store_reader **out, int wait)
{
    nsc_store_reader *rd = calloc(1, sizeof *rd);
    if (!rd)
        return NSC_STORE_ENOMEM;
    rd->st = st;
    int rc;
    for (;;) {
        if (wait) {
            pthread_rwlock_rdlock(&st->env.resize);
        } else if (atomic_load(&st->env.grow_waiters) ||
                   pthread_rwlock_tryrdlock(&st->env.resize)) {
            free(rd);
            return NSC_STORE_EBUSY;
        }
        rc = mdb_txn_begin(st->env.mdb, NULL, MDB_RDONLY, &rd->txn);
        if (rc != MDB_MAP_RESIZED)
            break;
        /* Another process grew the map: adopt its size, with no reader open here. */
        pthread_rwlock_unlock(&st->env.resize);
        if ((rc = nsc_st_set_mapsize(st, 0))) {
            free(rd);
            return rc;
        }
    }
    if (rc) {
        pthread_rwlock_unlock(&st->env.resize);
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
    return atomic_load_explicit(&st->env.grow_waiters, memory_order_relaxed) != 0;
}

void nsc_store_read_end(nsc_store_reader *rd)
{
    if (!rd)
        return;
    mdb_txn_abort(rd->txn);
    pthread_rwlock_unlock(&rd->st->env.resize);
    free(rd);
}

uint64_t nsc_store_read_blocks_decoded(const nsc_store_reader *rd)
{
    return rd->blocks_decoded;
}

static int overlaps(const nsc_event *ev, uint64_t t0, uint64_t t1)
{
    uint64_t end = ev->stop_ns > ev->start_ns ? ev->stop_ns : ev->start_ns;
    return ev->start_ns <= t1 && end >= t0;
}

struct nsc_store_blocks {
    nsc_store_reader *rd;
    MDB_cursor *cur;     /* on `blocks`, or on `p2p` (a block's key, its value in `blocks`) */
    MDB_dbi blocks;
    int indexed;         /* cur walks `p2p` */
    uint8_t prefix[16];  /* (job, comm, rank) */
    uint64_t lo, t1;     /* the starts walked: from t0 less the longest span */
    MDB_val k, v;
    int has;             /* k, v hold the next block */
    int damage;          /* the last damaged block's nsc_block_err; 1: its key */
    nsc_block_dec *dec;
};

static uint64_t key_start(const MDB_val *k)
{
    return nsc_get_be64((const uint8_t *)k->mv_data + 16);
}

/* Whether k is a block of the prefix starting in [lo, t1]; through the p2p
 * index, its value read from `blocks` (an entry without one is corrupt). */
static int blocks_here(nsc_store_blocks *it, int rc)
{
    it->has = rc == 0 && it->k.mv_size == NSC_KEY_BLOCK_LEN &&
              memcmp(it->k.mv_data, it->prefix, sizeof it->prefix) == 0 && key_start(&it->k) >= it->lo &&
              key_start(&it->k) <= it->t1;
    if (it->has && it->indexed && (rc = mdb_get(it->rd->txn, it->blocks, &it->k, &it->v)))
        return it->has = 0, rc == MDB_NOTFOUND ? NSC_STORE_ECORRUPT : rc;
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Move to the next block of the prefix that starts no later than t1. */
static int blocks_step(nsc_store_blocks *it, MDB_cursor_op op)
{
    return blocks_here(it, mdb_cursor_get(it->cur, &it->k, &it->v, op));
}

static int blocks_open(nsc_store_reader *rd, int db, uint32_t job, uint64_t comm, int32_t rank, uint64_t t0,
                       uint64_t t1, nsc_store_blocks **out)
{
    nsc_store_stats s;
    int rc = nsc_st_read_stats(rd->txn, rd->st->env.dbi, &s);
    if (rc)
        return rc;
    nsc_store_blocks *it = calloc(1, sizeof *it);
    if (!it)
        return NSC_STORE_ENOMEM;
    if (nsc_block_dec_new(&it->dec)) {
        free(it);
        return NSC_STORE_ENOMEM;
    }
    if ((rc = mdb_cursor_open(rd->txn, nsc_st_rdbi(rd, db), &it->cur))) {
        nsc_block_dec_free(it->dec);
        free(it);
        return rc;
    }
    it->rd = rd;
    it->blocks = nsc_st_rdbi(rd, DB_BLOCKS);
    it->indexed = db == DB_P2P;
    /* A block starting up to max_span before t0 may still reach into the window. */
    nsc_block_key from = {job, comm, rank, t0 > s.max_span_ns ? t0 - s.max_span_ns : 0, 0};
    uint8_t start[NSC_KEY_BLOCK_LEN];
    nsc_key_block(start, &from);
    memcpy(it->prefix, start, sizeof it->prefix);
    it->lo = from.start_ns;
    it->t1 = t1;
    it->k = nsc_st_mval(start, sizeof start);
    if ((rc = blocks_step(it, MDB_SET_RANGE))) {
        nsc_store_blocks_close(it);
        return rc;
    }
    *out = it;
    return 0;
}

int nsc_store_blocks_open(nsc_store_reader *rd, uint32_t job, uint64_t comm, int32_t rank,
                          uint64_t t0, uint64_t t1, nsc_store_blocks **out)
{
    return blocks_open(rd, DB_BLOCKS, job, comm, rank, t0, t1, out);
}

int nsc_store_p2p_blocks_open(nsc_store_reader *rd, uint32_t job, uint64_t comm, int32_t rank, uint64_t t0,
                              uint64_t t1, nsc_store_blocks **out)
{
    return blocks_open(rd, DB_P2P, job, comm, rank, t0, t1, out);
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
    memset(key, 0, sizeof *key);
    int bad = nsc_key_block_parse(it->k.mv_data, it->k.mv_size, key) ? 1 : 0;
    it->rd->blocks_decoded += !bad;
    if (!bad)
        bad = nsc_block_decode_with(it->dec, it->v.mv_data, it->v.mv_size, types, parts, blk);
    int rc = blocks_step(it, MDB_NEXT);
    if (bad) {  /* stepped over: the blocks after it still read */
        it->damage = bad;
        return rc ? rc : NSC_STORE_EBLOCK;
    }
    if (rc)
        nsc_block_release(blk);
    return rc;
}

int nsc_store_blocks_skip_before(nsc_store_blocks *it, uint64_t t)
{
    nsc_block_hdr h;
    int rc = 0;
    /* a header that does not read is left for next to report */
    while (!rc && it->has && nsc_block_read_hdr(it->v.mv_data, it->v.mv_size, &h) == 0 && h.t_max < t)
        rc = blocks_step(it, MDB_NEXT);
    return rc;
}

const char *nsc_store_blocks_damage(const nsc_store_blocks *it)
{
    return it->damage == 1 ? "its key is malformed" : nsc_block_strerror(it->damage);
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
