/* ring.c: the detail ring (see ring.h). */
#include "ring.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bytes.h"

struct nsc_ring {
    MDB_env *env;
    MDB_dbi pieces;
    uint64_t next;        /* the next piece's number */
    uint64_t first;       /* the oldest held piece's number (== next: empty) */
    uint64_t first_from;  /* its from_ns */
    nsc_ring_stats st;
};

/* The header is stored as the struct: the ring is emptied at open, so no
 * other build's layout is ever read. */
#define HDR sizeof(nsc_ring_meta)

int nsc_ring_open(nsc_ring **out, const char *dir, uint64_t cap_bytes, uint64_t keep_ns, char err[128])
{
    nsc_ring *r = calloc(1, sizeof *r);
    MDB_txn *txn = NULL;
    int rc;
    *out = NULL;
    if (!r) {
        snprintf(err, 128, "out of memory");
        return -1;
    }
    r->st.cap_bytes = cap_bytes;
    r->st.keep_ns = keep_ns;
    if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
        snprintf(err, 128, "detail ring %.80s: %s", dir, strerror(errno));
        free(r);
        return -1;
    }
    /* Room for the cap plus LMDB's page overhead and the pages freed by
     * transactions a reader still sees: the cap, not the map, is the limit. */
    size_t map = (size_t)(2 * cap_bytes + (64u << 20));
    if ((rc = mdb_env_create(&r->env)) == 0 && (rc = mdb_env_set_maxdbs(r->env, 1)) == 0 &&
        (rc = mdb_env_set_mapsize(r->env, map)) == 0 &&
        (rc = mdb_env_open(r->env, dir, MDB_NOSYNC | MDB_NOMETASYNC, 0640)) == 0 &&
        (rc = mdb_txn_begin(r->env, NULL, 0, &txn)) == 0 &&
        (rc = mdb_dbi_open(txn, "pieces", MDB_CREATE, &r->pieces)) == 0 &&
        (rc = mdb_drop(txn, r->pieces, 0)) == 0) {
        rc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (txn)
        mdb_txn_abort(txn);
    if (rc) {
        snprintf(err, 128, "detail ring %.80s: %s", dir, mdb_strerror(rc));
        if (r->env)
            mdb_env_close(r->env);
        free(r);
        return -1;
    }
    *out = r;
    return 0;
}

void nsc_ring_close(nsc_ring *r)
{
    if (!r)
        return;
    mdb_env_close(r->env);
    free(r);
}

void nsc_ring_stats_get(const nsc_ring *r, nsc_ring_stats *st) { *st = r->st; }

/* The oldest held piece becomes r->first (and its from_ns the ring's start). */
static void note_first(nsc_ring *r, MDB_cursor *cur)
{
    MDB_val k, v;
    if (mdb_cursor_get(cur, &k, &v, MDB_FIRST) == 0 && k.mv_size == 8 && v.mv_size >= HDR) {
        nsc_ring_meta m;
        memcpy(&m, v.mv_data, HDR);
        r->first = nsc_get_be64(k.mv_data);
        r->first_from = m.from_ns;
    } else {
        r->first = r->next;
        r->first_from = 0;
    }
}

/* Drop oldest pieces while need more bytes do not fit or the oldest ended
 * before cutoff. *gone_pieces/bytes: what went (committed by the caller). */
static int drop_oldest(nsc_ring *r, MDB_txn *txn, uint64_t need, uint64_t cutoff, uint64_t *bytes,
                       uint64_t *gone_pieces, uint64_t *gone_bytes)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, r->pieces, &cur);
    if (rc)
        return rc;
    while ((rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) == 0) {
        nsc_ring_meta m = {0};
        if (v.mv_size >= HDR)
            memcpy(&m, v.mv_data, HDR);
        if (v.mv_size >= HDR && *bytes + need <= r->st.cap_bytes && m.to_ns >= cutoff)
            break;
        if ((rc = mdb_cursor_del(cur, 0)) != 0)
            break;
        *bytes -= v.mv_size;
        (*gone_pieces)++;
        *gone_bytes += v.mv_size;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static uint64_t cutoff_of(const nsc_ring *r, uint64_t now_ns)
{
    return r->st.keep_ns && now_ns > r->st.keep_ns ? now_ns - r->st.keep_ns : 0;
}

/* After committed changes: what is held, and its span from the oldest
 * piece to the newest to_ns. */
static void settle(nsc_ring *r, uint64_t bytes, uint64_t kept, uint64_t gone_pieces, uint64_t gone_bytes,
                   uint64_t newest_to)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    r->st.dropped_pieces += gone_pieces;
    r->st.dropped_bytes += gone_bytes;
    r->st.pieces = r->st.pieces + kept - gone_pieces;
    r->st.bytes = bytes;
    if (mdb_txn_begin(r->env, NULL, MDB_RDONLY, &txn) == 0) {
        if (mdb_cursor_open(txn, r->pieces, &cur) == 0) {
            note_first(r, cur);
            mdb_cursor_close(cur);
        }
        mdb_txn_abort(txn);
    }
    if (newest_to > r->st.held_to_ns)
        r->st.held_to_ns = newest_to;
    if (r->st.pieces == 0)
        r->st.held_from_ns = r->st.held_to_ns = 0;
    else
        r->st.held_from_ns = r->first_from;
}

static void refuse(nsc_ring *r, uint64_t bytes, int error)
{
    r->st.refused_pieces++;
    r->st.refused_bytes += bytes;
    r->st.errors += error != 0;
}

/* One piece in its own write, with room for slack more bytes made: 0, or
 * the LMDB error. */
static int put_one(nsc_ring *r, const nsc_ring_piece *p, uint64_t cutoff, uint64_t slack, uint64_t *bytes,
                   uint64_t *gp, uint64_t *gb)
{
    size_t len = HDR + p->len;
    uint8_t key[8];
    MDB_txn *txn;
    MDB_val k = {8, key}, v = {len, NULL};
    uint64_t b = *bytes, dp = 0, db = 0;
    nsc_put_be64(key, r->next);
    int rc = mdb_txn_begin(r->env, NULL, 0, &txn);
    if (rc)
        return rc;
    if ((rc = drop_oldest(r, txn, len + slack, cutoff, &b, &dp, &db)) == 0 &&
        (rc = mdb_put(txn, r->pieces, &k, &v, MDB_APPEND | MDB_RESERVE)) == 0) {
        memcpy(v.mv_data, &p->m, HDR);
        memcpy((uint8_t *)v.mv_data + HDR, p->data, p->len);
        rc = mdb_txn_commit(txn);
    } else {
        mdb_txn_abort(txn);
    }
    if (rc)
        return rc;
    r->next++;
    *bytes = b + len;
    *gp += dp;
    *gb += db;
    return 0;
}

size_t nsc_ring_put(nsc_ring *r, const nsc_ring_piece *p, size_t n, uint64_t now_ns)
{
    uint64_t bytes = r->st.bytes, gp = 0, gb = 0, newest = 0;
    uint64_t cutoff = cutoff_of(r, now_ns);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t len = HDR + p[i].len;
        if (len > r->st.cap_bytes || p[i].m.to_ns < cutoff) {
            refuse(r, len, 0);
            continue;
        }
        int rc = put_one(r, &p[i], cutoff, 0, &bytes, &gp, &gb);
        if (rc == MDB_MAP_FULL)  /* freed pages a reader still pins: drop a quarter of the cap more, once */
            rc = put_one(r, &p[i], cutoff, r->st.cap_bytes / 4, &bytes, &gp, &gb);
        if (rc) {
            refuse(r, len, rc != MDB_MAP_FULL);
            continue;
        }
        kept++;
        r->st.put_pieces++;
        r->st.put_bytes += len;
        newest = p[i].m.to_ns > newest ? p[i].m.to_ns : newest;
    }
    settle(r, bytes, kept, gp, gb, newest);
    return kept;
}

void nsc_ring_age(nsc_ring *r, uint64_t now_ns)
{
    uint64_t cutoff = cutoff_of(r, now_ns), bytes = r->st.bytes, gp = 0, gb = 0;
    MDB_txn *txn;
    if (r->first == r->next || cutoff == 0 || mdb_txn_begin(r->env, NULL, 0, &txn) != 0)
        return;
    int rc = drop_oldest(r, txn, 0, cutoff, &bytes, &gp, &gb);
    if (rc == 0 && gp && mdb_txn_commit(txn) == 0) {
        settle(r, bytes, 0, gp, gb, 0);
        return;
    }
    mdb_txn_abort(txn);
}

static int matches(const nsc_ring_query *q, const nsc_ring_meta *m)
{
    if (m->to_ns < q->from_ns || m->from_ns > q->to_ns || strcmp(m->job, q->job) != 0)
        return 0;
    if (q->types && m->types && !(m->types & q->types))
        return 0;
    if (q->npids == 0)
        return 1;
    for (uint32_t i = 0; i < q->npids; i++)
        if (q->pids[i] == m->pid)
            return 1;
    return 0;
}

int nsc_ring_scan(nsc_ring *r, const nsc_ring_query *q, uint64_t *at, size_t max_bytes, uint32_t max_seen,
                  nsc_ring_fn *fn, void *arg)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val k, v;
    uint8_t key[8];
    if (*at < r->first)
        *at = r->first;  /* what was dropped meanwhile is gone */
    if (*at >= r->next)
        return 0;
    nsc_put_be64(key, *at);
    k = (MDB_val){8, key};
    if (mdb_txn_begin(r->env, NULL, MDB_RDONLY, &txn) != 0)
        return -1;
    if (mdb_cursor_open(txn, r->pieces, &cur) != 0) {
        mdb_txn_abort(txn);
        return -1;
    }
    size_t sent = 0;
    uint32_t seen = 0;
    uint64_t last_seq = 0;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), seen++) {
        nsc_ring_meta m = {0};
        if (v.mv_size >= HDR)
            memcpy(&m, v.mv_data, HDR);
        /* the bounds end a call between batches only: a batch's pieces of a
         * window come in one call (a receiver names them by batch) */
        if ((seen >= max_seen || sent >= max_bytes) && (sent == 0 || m.seq != last_seq))
            break;
        *at = nsc_get_be64(k.mv_data) + 1;
        if (v.mv_size < HDR || !matches(q, &m))
            continue;
        fn(arg, &m, (const uint8_t *)v.mv_data + HDR, (uint32_t)(v.mv_size - HDR));
        sent += v.mv_size;
        last_seq = m.seq;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return -1;
    return *at < r->next ? 1 : 0;
}
