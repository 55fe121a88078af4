/* store_meta.c: the meta records beside the events.
 *
 * Owns the records the collector keeps in the meta database with its
 * batches: the host clock models, the wall clock of the collector's time
 * base, the committed batch sequences of each agent, the process lifecycle
 * records and each rank's last collective;
 * their encodings, writing them in the open transaction and reading them.
 */
#include "store_int.h"

#include <stdlib.h>

#include "bytes.h"
#include "mono.h"

/* ---- host clock models (key "clock/" HOST) ------------------------------ */

int nsc_store_put_clock(nsc_store *st, const char *host, const nsc_clock_model *m)
{
    char key[6 + 64];
    size_t hl = strlen(host), len = nsc_clock_serialized_size(m);
    if (hl > sizeof key - 6)
        return NSC_STORE_ECORRUPT;
    uint8_t *val = malloc(len);
    if (!val)
        return NSC_STORE_ENOMEM;
    memcpy(key, "clock/", 6);
    memcpy(key + 6, host, hl);
    nsc_clock_serialize(m, val);
    int rc = nsc_st_push_meta(st, key, 6 + hl, val, len);
    free(val);
    return rc;
}

int nsc_store_get_clock(nsc_store_reader *rd, const char *host, nsc_clock_model *m)
{
    char key[6 + 64];
    size_t hl = strlen(host);
    if (hl > sizeof key - 6)
        return NSC_STORE_ENOTFOUND;
    memcpy(key, "clock/", 6);
    memcpy(key + 6, host, hl);
    MDB_val k = nsc_st_mval(key, 6 + hl), v;
    int rc = mdb_get(rd->txn, nsc_st_rdbi(rd, DB_META), &k, &v);
    if (rc)
        return rc == MDB_NOTFOUND ? NSC_STORE_ENOTFOUND : rc;
    return nsc_clock_deserialize(m, v.mv_data, v.mv_size) ? NSC_STORE_ECORRUPT : 0;
}

/* ---- collector bookkeeping (meta records) -------------------------------- */

/* Texts in meta values: u8 length, then the bytes (at most 63). */
static uint8_t *put_text(uint8_t *p, const char *s)
{
    size_t n = nsc_st_text_len(s, 63);
    *p++ = (uint8_t)n;
    memcpy(p, s, n);
    return p + n;
}

static int take_text(nsc_rbuf *r, char out[64])
{
    const uint8_t *n = nsc_rtake(r, 1);
    const uint8_t *t = n && *n < 64 ? nsc_rtake(r, *n) : NULL;
    if (!t)
        return NSC_STORE_ECORRUPT;
    memcpy(out, t, *n);
    out[*n] = 0;
    return 0;
}

/* Key "agent/" AGENT, then for a non-zero epoch NUL and the epoch (8 bytes,
 * big-endian); epoch 0 keeps the key of stores older than epochs. */
int nsc_store_put_agent_seqs(nsc_store *st, const char *agent, uint64_t epoch,
                             const nsc_store_seq_range *r, size_t n)
{
    uint8_t key[6 + 64 + 8];
    size_t al = nsc_st_text_len(agent, 63), kl = 6 + al;
    memcpy(key, "agent/", 6);
    memcpy(key + 6, agent, al);
    if (epoch) {
        key[kl++] = 0;
        nsc_put_be64(key + kl, epoch);
        kl += 8;
    }
    uint8_t *val = malloc(4 + 16 * n);
    if (!val)
        return NSC_STORE_ENOMEM;
    nsc_put_be32(val, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        nsc_put_be64(val + 4 + 16 * i, r[i].lo);
        nsc_put_be64(val + 12 + 16 * i, r[i].hi);
    }
    int rc = nsc_st_push_meta(st, key, kl, val, 4 + 16 * n);
    free(val);
    return rc;
}

int nsc_store_put_life(nsc_store *st, const nsc_store_life *l)
{
    uint8_t key[5 + 64 + 12], val[2 + 16 + 8 + 3 * 64];
    size_t hl = nsc_st_text_len(l->host, 63);
    /* The records of one agent message share its receive time (a process
     * that finished and exited at once): a later key time keeps each of them,
     * in the order put, where one key would keep only the last. */
    st->w.life_ns = l->ref_ns > st->w.life_ns ? l->ref_ns : st->w.life_ns + 1;
    memcpy(key, "life/", 5);
    memcpy(key + 5, l->host, hl);
    key[5 + hl] = 0;
    nsc_put_be32(key + 6 + hl, l->pid);
    nsc_put_be64(key + 10 + hl, st->w.life_ns);
    val[0] = l->event;
    val[1] = l->reason;
    nsc_put_be64(val + 2, l->ts_ns);
    nsc_put_be64(val + 10, l->last_batch_seq);
    uint8_t *end = put_text(put_text(val + 18, l->job), l->agent);
    return nsc_st_push_meta(st, key, 18 + hl, val, (size_t)(end - val));
}

int nsc_store_put_progress(nsc_store *st, const nsc_store_progress *p)
{
    uint8_t key[5 + 64 + 12 + 64], val[17];
    size_t jl = nsc_st_text_len(p->job, 63), fl = nsc_st_text_len(p->func, 63);
    memcpy(key, "prog/", 5);
    memcpy(key + 5, p->job, jl);
    key[5 + jl] = 0;
    nsc_put_be64(key + 6 + jl, p->comm_id);
    nsc_put_be32(key + 14 + jl, (uint32_t)p->rank ^ 0x80000000u);
    memcpy(key + 18 + jl, p->func, fl);
    nsc_put_be64(val, p->seq);
    nsc_put_be64(val + 8, p->ref_ns);
    val[16] = p->done;
    return nsc_st_push_meta(st, key, 18 + jl + fl, val, sizeof val);
}

/* Every meta record whose key starts with prefix, in key order. */
typedef int (*meta_fn)(void *arg, const MDB_val *k, const MDB_val *v);

static int scan_meta(nsc_store_reader *rd, const char *prefix, meta_fn fn, void *arg)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(rd->txn, nsc_st_rdbi(rd, DB_META), &cur);
    if (rc)
        return rc;
    size_t pl = strlen(prefix);
    MDB_val k = nsc_st_mval(prefix, pl), v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < pl || memcmp(k.mv_data, prefix, pl) != 0)
            break;
        if ((rc = fn(arg, &k, &v)))
            break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* ---- wall clock (key "wall/" + be64 UTC ns: value be64 collector time,
 * be64 offset): in the order they were written, unless the wall clock
 * itself stepped back ------------------------------------------------------ */

int nsc_store_wall_due(const nsc_store_wall_state *w, uint64_t now_ns, nsc_store_wall_rec *r)
{
    /* the pair read closest together, so that a preemption between the
     * reads (a loaded host) does not move the offset: tries until one took
     * under 20 us, 16 at most */
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 16 && best > 20000; i++) {
        uint64_t m0 = nsc_mono_ns(), wall = nsc_wall_ns(), m1 = nsc_mono_ns();
        if (m1 - m0 < best) {
            best = m1 - m0;
            r->utc_ns = wall;
            r->offset_ns = (int64_t)(wall - m0 - (m1 - m0) / 2);
        }
    }
    int64_t ms = r->offset_ns >= 0 ? (r->offset_ns + 500000) / 1000000 : -((-r->offset_ns + 500000) / 1000000);
    r->offset_ns = ms * 1000000;
    r->ref_ns = now_ns;
    if (!w->known || llabs(r->offset_ns - w->offset_ns) > NSC_STORE_WALL_SLACK_NS)
        return 1;
    r->offset_ns = w->offset_ns;
    return !w->stored;
}

void nsc_store_wall_recorded(nsc_store_wall_state *w, const nsc_store_wall_rec *r)
{
    w->offset_ns = r->offset_ns;
    w->known = w->stored = 1;
}

int nsc_store_put_wall(nsc_store *st, const nsc_store_wall_rec *r)
{
    uint8_t key[5 + 8], val[16];
    memcpy(key, "wall/", 5);
    nsc_put_be64(key + 5, r->utc_ns);
    nsc_put_be64(val, r->ref_ns);
    nsc_put_be64(val + 8, (uint64_t)r->offset_ns);
    return nsc_st_push_meta(st, key, sizeof key, val, sizeof val);
}

int nsc_store_wall_kept(const nsc_store *st, int64_t *offset_ns)
{
    *offset_ns = st->w.wall.offset_ns;
    return st->w.wall.known ? 0 : -1;
}

typedef struct wall_scan {
    uint64_t last_ref;
    int64_t off;
    int found, reset;
} wall_scan;

static int wall_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    wall_scan *w = arg;
    if (k->mv_size != 13 || v->mv_size != 16)
        return NSC_STORE_ECORRUPT;
    uint64_t ref = nsc_get_be64(v->mv_data);
    w->reset |= w->found && ref < w->last_ref;
    w->last_ref = ref;
    w->off = (int64_t)nsc_get_be64((const uint8_t *)v->mv_data + 8);
    w->found = 1;
    return 0;
}

int nsc_store_wall(nsc_store_reader *rd, int64_t *offset_ns, int *reset)
{
    wall_scan w = {0};
    int rc = scan_meta(rd, "wall/", wall_rec, &w);
    if (rc)
        return rc;
    if (!w.found)
        return NSC_STORE_ENOTFOUND;
    *offset_ns = w.off;
    *reset = w.reset;
    return 0;
}

/* The store's latest wall record, once per writer: the offset it keeps
 * (nsc_store_wall_state), so that a restart adds none for the same clock. */
static int read_latest_wall(nsc_store *st)
{
    nsc_store_reader rd = {.st = st, .txn = st->w.txn};
    int64_t off;
    int reset, rc = nsc_store_wall(&rd, &off, &reset);
    if (rc == 0)
        st->w.wall = (nsc_store_wall_state){off, 1, 1};
    st->w.wall_read = rc == 0 || rc == NSC_STORE_ENOTFOUND;
    return st->w.wall_read ? 0 : rc;
}

int nsc_st_record_wall(nsc_store *st, uint64_t now_ns)
{
    nsc_store_wall_rec r;
    int rc = st->w.wall_read ? 0 : read_latest_wall(st);
    if (rc || !nsc_store_wall_due(&st->w.wall, now_ns, &r))
        return rc;
    rc = nsc_store_put_wall(st, &r);
    if (rc == 0)
        nsc_store_wall_recorded(&st->w.wall, &r);
    return rc;
}

typedef struct agent_cb { nsc_store_agent_fn fn; void *arg; } agent_cb;
typedef struct life_cb { nsc_store_life_fn fn; void *arg; } life_cb;
typedef struct progress_cb { nsc_store_progress_fn fn; void *arg; } progress_cb;

static int agent_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    const agent_cb *cb = arg;
    char agent[64];
    const uint8_t *name = (const uint8_t *)k->mv_data + 6, *nul = memchr(name, 0, k->mv_size - 6);
    size_t al = nul ? (size_t)(nul - name) : k->mv_size - 6;
    uint64_t epoch = nul && k->mv_size == 6 + al + 9 ? nsc_get_be64(nul + 1) : 0;
    const uint8_t *p = v->mv_data;
    if (al >= sizeof agent || (nul && (k->mv_size != 6 + al + 9 || epoch == 0)) || v->mv_size < 4 ||
        (v->mv_size - 4) / 16 != nsc_get_be32(p) || (v->mv_size - 4) % 16)
        return NSC_STORE_ECORRUPT;
    memcpy(agent, name, al);
    agent[al] = 0;
    size_t n = nsc_get_be32(p);
    nsc_store_seq_range *r = malloc((n ? n : 1) * sizeof *r);
    if (!r)
        return NSC_STORE_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        r[i].lo = nsc_get_be64(p + 4 + 16 * i);
        r[i].hi = nsc_get_be64(p + 12 + 16 * i);
    }
    int rc = cb->fn(cb->arg, agent, epoch, r, n);
    free(r);
    return rc;
}

int nsc_store_agents(nsc_store_reader *rd, nsc_store_agent_fn fn, void *arg)
{
    agent_cb cb = {fn, arg};
    return scan_meta(rd, "agent/", agent_rec, &cb);
}

/* The text of a key after its 5-byte prefix ("life/", "prog/") up to the NUL
 * that ends it, copied into out: its length, or -1 (no NUL, or too long). */
static long key_text(const MDB_val *k, char out[64])
{
    const uint8_t *key = k->mv_data;
    const uint8_t *nul = memchr(key + 5, 0, k->mv_size - 5);
    size_t n = nul ? (size_t)(nul - key - 5) : 0;
    if (!nul || n >= 64)
        return -1;
    memcpy(out, key + 5, n);
    return (long)n;
}

static int life_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    const life_cb *cb = arg;
    nsc_store_life l;
    memset(&l, 0, sizeof l);
    const uint8_t *key = k->mv_data;
    long hl = key_text(k, l.host);
    nsc_rbuf r = {v->mv_data, (const uint8_t *)v->mv_data + v->mv_size, 0};
    const uint8_t *head = nsc_rtake(&r, 18);
    if (hl < 0 || k->mv_size != 18 + (size_t)hl || !head || take_text(&r, l.job) ||
        take_text(&r, l.agent) || r.p != r.end)
        return NSC_STORE_ECORRUPT;
    l.pid = nsc_get_be32(key + 6 + hl);
    l.ref_ns = nsc_get_be64(key + 10 + hl);
    l.event = head[0];
    l.reason = head[1];
    l.ts_ns = nsc_get_be64(head + 2);
    l.last_batch_seq = nsc_get_be64(head + 10);
    return cb->fn(cb->arg, &l);
}

int nsc_store_lives(nsc_store_reader *rd, nsc_store_life_fn fn, void *arg)
{
    life_cb cb = {fn, arg};
    return scan_meta(rd, "life/", life_rec, &cb);
}

static int progress_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    const progress_cb *cb = arg;
    nsc_store_progress p;
    memset(&p, 0, sizeof p);
    const uint8_t *key = k->mv_data;
    long text = key_text(k, p.job);
    size_t jl = (size_t)text, fl = k->mv_size - 18 - jl;
    /* 16 bytes: a store from before the done flag, whose collectives count as done. */
    if (text < 0 || k->mv_size < 18 + jl || fl >= 64 || (v->mv_size != 16 && v->mv_size != 17) ||
        (v->mv_size == 17 && ((const uint8_t *)v->mv_data)[16] > 1))
        return NSC_STORE_ECORRUPT;
    p.comm_id = nsc_get_be64(key + 6 + jl);
    p.rank = (int32_t)(nsc_get_be32(key + 14 + jl) ^ 0x80000000u);
    memcpy(p.func, key + 18 + jl, fl);
    p.seq = nsc_get_be64(v->mv_data);
    p.ref_ns = nsc_get_be64((const uint8_t *)v->mv_data + 8);
    p.done = v->mv_size == 16 || ((const uint8_t *)v->mv_data)[16];
    return cb->fn(cb->arg, &p);
}

int nsc_store_progresses(nsc_store_reader *rd, nsc_store_progress_fn fn, void *arg)
{
    progress_cb cb = {fn, arg};
    return scan_meta(rd, "prog/", progress_rec, &cb);
}

typedef struct clock_cb { nsc_store_clock_fn fn; void *arg; } clock_cb;

static int clock_rec(void *arg, const MDB_val *k, const MDB_val *v)
{
    const clock_cb *cb = arg;
    char host[64];
    size_t hl = k->mv_size - 6;
    nsc_clock_model m;
    if (hl >= sizeof host || nsc_clock_deserialize(&m, v->mv_data, v->mv_size))
        return NSC_STORE_ECORRUPT;
    memcpy(host, (const uint8_t *)k->mv_data + 6, hl);
    host[hl] = 0;
    int rc = cb->fn(cb->arg, host, &m);
    nsc_clock_free(&m);
    return rc;
}

int nsc_store_clocks(nsc_store_reader *rd, nsc_store_clock_fn fn, void *arg)
{
    clock_cb cb = {fn, arg};
    return scan_meta(rd, "clock/", clock_rec, &cb);
}
