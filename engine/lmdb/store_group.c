/* store_group.c: a batch's records grouped by (comm, rank).
 *
 * Owns the per-batch scratch that finds each event's group from its context
 * (memoized per batch), each state's and completion's group from its event,
 * and the order in which the records of each group go to their block; also
 * the mapping of process-local string ids to store-wide ones that the block
 * encoder calls.
 */
#include "store_int.h"

#include <stdlib.h>

#include "bytes.h"
#include "grow.h"

#define NO_GROUP UINT32_MAX
/* A batch's event ids are counted (to order its records) when they span at
 * most this many slots per event, plus a few thousand; a process numbers its
 * events one after another, so they are dense unless the batch is odd. */
#define ID_SLOTS_PER_EVENT 4
#define ID_SLOTS_MIN 4096

/* A new batch: the memos of the last one (another process's contexts and
 * strings, or older definitions) no longer hold. */
void nsc_st_group_begin(nsc_st_scratch *sc)
{
    if (++sc->stamp == 0) {
        memset(sc->ctx_memo, 0, MEMO_SIZE * sizeof *sc->ctx_memo);
        memset(sc->str_memo, 0, MEMO_SIZE * sizeof *sc->str_memo);
        sc->stamp = 1;
    }
}

static int group_for(nsc_st_scratch *sc, uint64_t comm, int32_t rank, uint32_t *g)
{
    for (size_t i = 0; i < sc->ngroups; i++)
        if (sc->groups[i].comm == comm && sc->groups[i].rank == rank) {
            *g = (uint32_t)i;
            return 0;
        }
    if (nsc_grow(&sc->groups, sc->ngroups, &sc->groups_cap, sizeof *sc->groups, 16))
        return NSC_STORE_ENOMEM;
    sc->groups[sc->ngroups] = (group){comm, rank};
    *g = (uint32_t)sc->ngroups++;
    return 0;
}

/* The group of a context index: its (comm, rank), or the process group. */
static int ctx_group(nsc_store *st, uint16_t ctx, uint32_t *g)
{
    memo *m = &st->scratch.ctx_memo[ctx];
    if (m->stamp == st->scratch.stamp) {
        *g = m->value;
        return 0;
    }
    uint8_t ckey[7] = {'c'};
    nsc_put_be32(ckey + 1, st->scratch.proc);
    nsc_put_be16(ckey + 5, ctx);
    MDB_val key = nsc_st_mval(ckey, sizeof ckey), val;
    int rc = ctx == NSC_CTX_NONE ? MDB_NOTFOUND
                                 : mdb_get(st->w.txn, st->env.dbi[DB_PROCS], &key, &val);
    if (rc == MDB_NOTFOUND) {
        *g = 0;
    } else if (rc) {
        return rc;
    } else if (val.mv_size != 16) {
        return NSC_STORE_ECORRUPT;
    } else if ((rc = group_for(&st->scratch, nsc_get_be64(val.mv_data),
                               (int32_t)nsc_get_be32((uint8_t *)val.mv_data + 8), g))) {
        return rc;
    }
    m->stamp = st->scratch.stamp;
    m->value = *g;
    return 0;
}

/* Process-local string id -> store-wide id of the process being put (0:
 * never defined, or past the 16-bit field), memoized for its batch. */
nsc_str nsc_st_proc_str(nsc_store *st, nsc_str id)
{
    memo *m = &st->scratch.str_memo[id];
    if (id == 0 || st->w.txn_rc)
        return 0;
    if (m->stamp != st->scratch.stamp) {
        uint8_t skey[7] = {'s'};
        uint32_t gid = 0;
        nsc_put_be32(skey + 1, st->scratch.proc);
        nsc_put_be16(skey + 5, id);
        int rc = nsc_st_get_u32(st->w.txn, st->env.dbi[DB_PROCS], skey, sizeof skey, &gid);
        if (rc && rc != NSC_STORE_ENOTFOUND)
            st->w.txn_rc = rc;
        m->stamp = st->scratch.stamp;
        m->value = gid <= UINT16_MAX ? gid : 0;
    }
    return (nsc_str)m->value;
}

/* nsc_st_proc_str for the blocks: an id never defined, or past the 16-bit
 * field, is stored as 0 and counted. */
nsc_str nsc_st_map_str(void *arg, nsc_str id)
{
    nsc_store *st = arg;
    nsc_str g = nsc_st_proc_str(st, id);
    if (id != 0 && g == 0)
        st->w.pending.unknown_str++;
    return g;
}

static size_t id_slot(const nsc_st_scratch *sc, uint64_t id)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & (sc->id_cap - 1);
}

/* Event id -> group, for the states and completions of the same batch. */
static int index_ids(nsc_st_scratch *sc, const nsc_store_batch *b)
{
    size_t need = 16;
    while (need < 2 * b->nevents)
        need *= 2;
    if (need > sc->id_cap) {
        uint64_t *k = realloc(sc->id_keys, need * sizeof *k);
        if (k)
            sc->id_keys = k;
        uint32_t *g = realloc(sc->id_groups, need * sizeof *g);
        if (g)
            sc->id_groups = g;
        if (!k || !g)
            return NSC_STORE_ENOMEM;
        sc->id_cap = need;
    }
    for (size_t i = 0; i < sc->id_cap; i++)
        sc->id_groups[i] = NO_GROUP;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < b->nevents; i++) {
        lo = b->events[i].id < lo ? b->events[i].id : lo;
        hi = b->events[i].id > hi ? b->events[i].id : hi;
        size_t s = id_slot(sc, b->events[i].id);
        while (sc->id_groups[s] != NO_GROUP && sc->id_keys[s] != b->events[i].id)
            s = (s + 1) & (sc->id_cap - 1);
        if (sc->id_groups[s] == NO_GROUP) {
            sc->id_keys[s] = b->events[i].id;
            sc->id_groups[s] = sc->ev_group[i];
        }
    }
    sc->id_lo = lo;
    sc->id_span = b->nevents && hi - lo < (uint64_t)b->nevents * ID_SLOTS_PER_EVENT + ID_SLOTS_MIN
                      ? (size_t)(hi - lo) + 1
                      : 0;
    return 0;
}

/* NO_GROUP: the id's event is not in the batch. */
static uint32_t id_group(const nsc_st_scratch *sc, uint64_t id)
{
    for (size_t s = id_slot(sc, id);; s = (s + 1) & (sc->id_cap - 1)) {
        if (sc->id_groups[s] == NO_GROUP || sc->id_keys[s] == id)
            return sc->id_groups[s];
    }
}

/* A state's group is its event's. One whose event is not in the batch can
 * never be joined to it (queries join states within their event's block)
 * and goes, counted, to the process group. A completion comes after its
 * event by nature: it goes there too, where queries look for it. */
static uint32_t group_of(const nsc_st_scratch *sc, uint64_t id, uint64_t *unattached)
{
    uint32_t g = id_group(sc, id);
    if (g != NO_GROUP)
        return g;
    if (unattached)
        ++*unattached;
    return 0;
}

static int grow_u32(uint32_t **a, size_t *cap, size_t n)
{
    return nsc_grow_to(a, n, cap, sizeof **a, 64) ? NSC_STORE_ENOMEM : 0;
}

/* The group of every state and completion (group_of). */
static int group_others(nsc_st_scratch *sc, const nsc_store_batch *b, uint64_t *unattached)
{
    if (grow_u32(&sc->rec_group, &sc->rec_cap, b->nstates + b->ncompletions))
        return NSC_STORE_ENOMEM;
    for (size_t i = 0; i < b->nstates; i++)
        sc->rec_group[i] = group_of(sc, b->states[i].id, unattached);
    for (size_t i = 0; i < b->ncompletions; i++)
        sc->rec_group[b->nstates + i] = group_of(sc, b->completions[i].id, NULL);
    return 0;
}

/* A record's slot in the count of ids: its id's offset from the events'
 * lowest, or id_span for an id past the events' (and any in a sparse batch). */
static size_t id_slot_of(const nsc_st_scratch *sc, const void *rec)
{
    uint64_t id, d;
    memcpy(&id, rec, sizeof id);
    d = id - sc->id_lo;
    return d < sc->id_span ? (size_t)d : sc->id_span;
}

/* Kind k's n records (`size` bytes each, their id first) in the order they
 * go to their blocks: by group, within a group by id when the batch's ids
 * are dense, records of equal ids (or of sparse ids) in batch order. That is
 * the blocks' stored order whenever an id's records come in time order, as
 * the plugin writes them, so the encoder need not sort. Two stable counting
 * sorts over indices: by id, then by group. */
static int order_kind(nsc_st_scratch *sc, int k, const void *recs, size_t size, size_t n,
                      const uint32_t *group)
{
    size_t ng = sc->ngroups;
    if (grow_u32(&sc->at[k], &sc->at_cap[k], n) ||
        grow_u32(&sc->first[k], &sc->first_cap[k], ng + 1) ||
        grow_u32(&sc->by_id, &sc->by_id_cap, n) || grow_u32(&sc->cursor, &sc->cursor_cap, ng) ||
        grow_u32(&sc->id_count, &sc->id_count_cap, sc->id_span + 1))
        return NSC_STORE_ENOMEM;
    const uint8_t *r = recs;
    uint32_t *by_id = sc->by_id, *cnt = sc->id_count, *cur = sc->cursor, *first = sc->first[k];
    memset(cnt, 0, (sc->id_span + 1) * sizeof *cnt);
    for (size_t i = 0; i < n; i++)
        cnt[id_slot_of(sc, r + i * size)]++;
    for (size_t s = 0, sum = 0; s <= sc->id_span; s++) {
        uint32_t c = cnt[s];
        cnt[s] = (uint32_t)sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++)
        by_id[cnt[id_slot_of(sc, r + i * size)]++] = (uint32_t)i;
    memset(cur, 0, ng * sizeof *cur);
    for (size_t i = 0; i < n; i++)
        cur[group[i]]++;
    for (size_t g = 0, sum = 0; g < ng; g++) {
        first[g] = (uint32_t)sum;
        sum += cur[g];
        cur[g] = first[g];
    }
    first[ng] = (uint32_t)n;
    for (size_t j = 0; j < n; j++)
        sc->at[k][cur[group[by_id[j]]]++] = by_id[j];
    return 0;
}

int nsc_st_group_records(nsc_store *st, const nsc_store_batch *b)
{
    nsc_st_scratch *sc = &st->scratch;
    if (grow_u32(&sc->ev_group, &sc->ev_cap, b->nevents))
        return NSC_STORE_ENOMEM;
    sc->ngroups = 0;
    uint32_t proc_group;
    int rc = group_for(sc, NSC_STORE_PROC_COMM, (int32_t)sc->proc, &proc_group);
    for (size_t i = 0; !rc && i < b->nevents; i++) {
        rc = ctx_group(st, b->events[i].ctx, &sc->ev_group[i]);
        if (!rc && sc->ev_group[i] == 0 && b->events[i].ctx != NSC_CTX_NONE)
            st->w.pending.unknown_ctx++;
    }
    if (!rc)
        rc = index_ids(sc, b);
    if (!rc)
        rc = group_others(sc, b, &st->w.pending.unattached_states);
    if (!rc)
        rc = order_kind(sc, K_EVENTS, b->events, sizeof *b->events, b->nevents, sc->ev_group);
    if (!rc)
        rc = order_kind(sc, K_STATES, b->states, sizeof *b->states, b->nstates, sc->rec_group);
    if (!rc)
        rc = order_kind(sc, K_COMPL, b->completions, sizeof *b->completions, b->ncompletions,
                        b->ncompletions ? sc->rec_group + b->nstates : NULL);
    return rc;
}
