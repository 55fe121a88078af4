/* drain.c: the shipper's batches filled (see shipper.c, internal.h).
 *
 * Owns what goes into the open batch and in which order: the threads' queues
 * drained in turn, each record after the definitions (strings, contexts) it
 * needs that this stream has not had, a ProxyStep state held (hold.c) until
 * its event comes and then shipped with it, the communicators announced in a
 * batch of their own, and, at a final stop, what cannot be kept counted as
 * dropped. Shipper thread only.
 */
#include <string.h>

#include "internal.h"
#include "wire.h"

void nsc_ship_reset_defs(uint64_t now)
{
    memset(nsc_ship.str_sent, 0, sizeof nsc_ship.str_sent);
    memset(nsc_ship.ctx_sent, 0, sizeof nsc_ship.ctx_sent);
    nsc_ship.defs_reset = now;
}

/* ---- encoding ---------------------------------------------------------------- */

static int enc_str(nsc_str id)
{
    if (id == 0 || nsc_ship.str_sent[id])
        return 0;
    nsc_str_def def = {.id = id};
    const char *text = nsc_intern_text(id);
    memcpy(def.text, text ? text : "?", text ? strlen(text) + 1 : 2);
    int rc = nsc_enc_str(&nsc_ship.enc, &def);
    if (rc == 0)
        nsc_ship.str_sent[id] = 1;
    return rc;
}

static NSC_INLINE int enc_ctx(uint16_t index)
{
    nsc_pctx *c = index == NSC_CTX_NONE ? NULL : nsc_ctx_at(index);
    if (!c)
        return 0;
    const nsc_ctx_def *def;
    uint32_t version = nsc_ctx_def_get(c, &def);
    if (nsc_ship.ctx_sent[index] == version)
        return 0;
    int rc = nsc_enc_ctx(&nsc_ship.enc, def);
    if (rc == 0)
        nsc_ship.ctx_sent[index] = version;
    return rc;
}

/* The strings an event refers to: its STR fields (event_fields.h), in the
 * order of its struct. */
#define STR_ROW(a, kind, m, wire, store, json, nccl)                                          \
    if (NSC_VAL_##kind == NSC_VAL_STR)                                                        \
        out[n++] = (nsc_str)ev->a.m;
#define STR_TYPE(type, s, list)                                                              \
    case type:                                                                               \
        list(STR_ROW, d.s) break;
#define STR_COUNT(a, kind, m, wire, store, json, nccl) +(NSC_VAL_##kind == NSC_VAL_STR)
#define STR_FITS(type, s, list)                                                              \
    _Static_assert(0 list(STR_COUNT, ~) <= EVENT_STRS_MAX, #type ": more strings than room");
#define EVENT_STRS_MAX 5
NSC_EVENT_TYPES(STR_FITS)

static NSC_INLINE size_t event_strs(const nsc_event *ev, nsc_str out[EVENT_STRS_MAX])
{
    size_t n = 0;
    switch (ev->type) {
        NSC_EVENT_TYPES(STR_TYPE)
    }
    return n;
}

/* The definitions an event needs, before it in the stream. */
static NSC_INLINE int enc_defs(const nsc_event *ev)
{
    nsc_str strs[EVENT_STRS_MAX];
    size_t n = event_strs(ev, strs);
    int rc = enc_ctx(ev->ctx);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = enc_str(strs[i]);
    return rc;
}

static int enc_event(const nsc_event *ev)
{
    int rc = enc_defs(ev);
    return rc ? rc : nsc_enc_event(&nsc_ship.enc, ev);
}

/* The states held for ev (the first at it), then ev. */
static int enc_group(const nsc_event *ev, uint64_t it)
{
    int rc = 0;
    while (it && rc == 0)
        rc = nsc_enc_state(&nsc_ship.enc, nsc_hold_at(it, &it));
    return rc ? rc : nsc_enc_event(&nsc_ship.enc, ev);
}

static int enc_record(const nsc_rec *r)
{
    switch (r->kind) {
    case NSC_REC_EVENT:
        return enc_event(r->u.ev);
    case NSC_REC_STATE:
        return nsc_enc_state(&nsc_ship.enc, &r->u.st);
    default:
        return nsc_enc_completion(&nsc_ship.enc, &r->u.done);
    }
}

static uint64_t rec_time(const nsc_rec *r)
{
    return r->kind == NSC_REC_EVENT ? r->u.ev->start_ns
           : r->kind == NSC_REC_STATE ? r->u.st.ts_ns
                                      : r->u.done.ts_ns;
}

/* ---- draining ------------------------------------------------------------------ */

/* Encode one record, opening and finishing batches as needed. Returns 0, or
 * -1 when the backlog has no room (the record stays in its queue). */
static int ship_now(const nsc_rec *r, uint64_t now)
{
    for (;;) {
        if (!nsc_ship.open && (nsc_ship_backlog_full() || nsc_ship_batch_begin(now, rec_time(r), 0) != 0))
            return -1;
        uint32_t before = nsc_ship.enc.nrecords;
        if (enc_record(r) == 0)
            return 0;
        if (before == 0 && nsc_ship.enc.nrecords == 0)
            return 0; /* cannot fit even an empty batch: impossible by sizes */
        nsc_ship_batch_finish();
        if (nsc_ship_backlog_full())
            return -1;
    }
}

/* The oldest held state goes alone: its event did not come in time. */
static int release_oldest(uint64_t now)
{
    uint64_t held_ns;
    nsc_rec r = {.kind = NSC_REC_STATE, .u.st = *nsc_hold_oldest(&held_ns)};
    if (ship_now(&r, now) != 0)
        return -1;
    nsc_hold_pop(r.u.st.id);
    return 0;
}

/* Every state held state_hold_ms or longer (all of them: every one). */
int nsc_ship_release_held(uint64_t now, int all)
{
    uint64_t held_ns;
    while (nsc_hold_oldest(&held_ns) && (all || now - held_ns >= nsc_ship.cfg.state_hold_ms * NSC_MS))
        if (release_oldest(now) != 0)
            return -1;
    return 0;
}

/* An event with the states held for it (the hold's entry), in one batch.
 * Its definitions may close the batch before (they stay there, ahead of
 * it). A group larger than an empty batch goes apart, the states first. */
static int ship_group(nsc_event *ev, uint32_t held, uint64_t now)
{
    for (;;) {
        int fresh = !nsc_ship.open;
        if (fresh && (nsc_ship_backlog_full() || nsc_ship_batch_begin(now, ev->start_ns, 0) != 0))
            return -1;
        if (enc_defs(ev) == 0) {
            nsc_enc mark = nsc_ship.enc;
            if (enc_group(ev, nsc_hold_first(held)) == 0) {
                nsc_hold_drop(held);
                return 0;
            }
            nsc_ship.enc = mark;
            if (fresh)
                break;
        }
        nsc_ship_batch_finish();
        if (nsc_ship_backlog_full())
            return -1;
    }
    for (uint64_t it, next; (it = nsc_hold_first(nsc_hold_find(ev->id))); nsc_hold_pop(ev->id)) {
        nsc_rec r = {.kind = NSC_REC_STATE, .u.st = *nsc_hold_at(it, &next)};
        if (ship_now(&r, now) != 0)
            return -1;
    }
    nsc_rec r = {.kind = NSC_REC_EVENT, .u.ev = ev};
    return ship_now(&r, now);
}

/* A state waits (hold.c) for its event, which it then travels with: read
 * from its cell into the hold, its time converted on the way (the common
 * record, taken without a copy of it first). */
static int hold_state(const nsc_cell *c, uint64_t now)
{
    if (nsc_hold_full() && release_oldest(now) != 0)
        return -1;
    nsc_rec r = {.kind = NSC_REC_STATE, .u.st = nsc_cell_state(c)};
    nsc_ship_rec_ns(&r);
    nsc_hold_put(&r.u.st, now);
    return 0;
}

static int ship_record(const nsc_rec *r, uint64_t now)
{
    uint32_t held = r->kind == NSC_REC_EVENT ? nsc_hold_find(r->u.ev->id) : 0;
    if (held)
        return ship_group(r->u.ev, held, now);
    return ship_now(r, now);
}

/* An event's times as its thread wrote them. Converted in its cells, they
 * are put back when the backlog blocks it: it is read, and converted, again
 * at the next drain. */
typedef struct raw_times {
    uint64_t start, stop, ptimer_stop;
} raw_times;

static raw_times raw_of(const nsc_event *ev)
{
    return (raw_times){ev->start_ns, ev->stop_ns, ev->d.kernel_ch.ptimer_stop_ns};
}

static void raw_put_back(nsc_event *ev, raw_times t)
{
    ev->start_ns = t.start;
    ev->stop_ns = t.stop;
    ev->d.kernel_ch.ptimer_stop_ns = t.ptimer_stop;
}

/* An orphan's state is read before its head: what its owner published before
 * it exited is then all there. */
static size_t drain_tbuf(nsc_tbuf *tb, uint64_t now, int *blocked)
{
    int orphan = atomic_load_explicit(&tb->state, memory_order_acquire) == NSC_TB_ORPHAN;
    uint64_t head = atomic_load_explicit(&tb->head, memory_order_acquire);
    size_t n = 0;
    int hold = nsc_ship.cfg.state_hold_ms != 0;
    for (nsc_cell *c; (c = nsc_tbuf_peek(tb, head)); n++) {
        if (hold && c->b[NSC_CELL_MARK] == NSC_CELL_STATE) {
            if (hold_state(c, now) != 0) {
                *blocked = 1;
                return n;
            }
            nsc_tbuf_take(tb, 1);
            continue;
        }
        nsc_rec r;
        uint32_t cells = nsc_cell_rec(c, &r);
        raw_times raw = r.kind == NSC_REC_EVENT ? raw_of(r.u.ev) : (raw_times){0};
        nsc_ship_rec_ns(&r);
        if (ship_record(&r, now) != 0) {
            if (r.kind == NSC_REC_EVENT)
                raw_put_back(r.u.ev, raw);
            *blocked = 1;
            return n;
        }
        nsc_tbuf_take(tb, cells);
    }
    if (orphan)
        nsc_tbuf_recycle(tb);
    return n;
}

size_t nsc_ship_drain(uint64_t now)
{
    size_t n = 0;
    int blocked = 0;
    uint32_t count = nsc_g_pool.ntbufs;
    for (uint32_t k = 0; k < count && !blocked; k++)
        n += drain_tbuf(&nsc_g_pool.tbufs[(nsc_ship.drain_from + k) % count], now, &blocked);
    nsc_ship.drain_from++;
    return n;
}

/* Final stop with a full backlog: what is left in the queues is lost; count it
 * so that emitted == shipped + dropped still holds at the receiver. */
void nsc_ship_count_leftovers(void)
{
    nsc_tcounters *c = &nsc_g_pool.shared;
    for (uint32_t i = 0; i < nsc_g_pool.ntbufs; i++) {
        nsc_tbuf *tb = &nsc_g_pool.tbufs[i];
        uint64_t head = atomic_load_explicit(&tb->head, memory_order_acquire);
        for (nsc_cell *cell; (cell = nsc_tbuf_peek(tb, head));) {
            nsc_rec r;
            nsc_tbuf_take(tb, nsc_cell_rec(cell, &r));
            if (r.kind == NSC_REC_EVENT) {
                nsc_count_shared(&c->dropped[r.u.ev->type]);
                if (r.u.ev->type == NSC_T_KERNEL_CH && r.u.ev->d.kernel_ch.ptimer_stop_ns)
                    nsc_count_shared(&c->states_dropped);
            } else if (r.kind == NSC_REC_STATE) {
                nsc_count_shared(&c->states_dropped);
            } else {
                nsc_count_shared(&c->completions_dropped[r.type]);
            }
        }
    }
    uint64_t held_ns;
    for (const nsc_state_rec *st; (st = nsc_hold_oldest(&held_ns)); nsc_hold_pop(st->id))
        nsc_count_shared(&c->states_dropped);
}

/* A communicator this process joined goes out as soon as the shipper sees
 * it, in a batch of its own, not with its first event: a rank killed before
 * its first batch would otherwise leave no trace, and diagnose could only
 * say it never joined, not that its process died (its agent's liveness
 * watch knows the process from this batch on). A v3 context, which knows
 * its communicator only from its first Coll or P2p, waits for that. */
void nsc_ship_announce(uint64_t now)
{
    int any = 0;
    for (uint16_t i = 0; nsc_ctx_at(i); i++) {
        const nsc_ctx_def *def;
        uint32_t version = nsc_ctx_def_get(nsc_ctx_at(i), &def);
        if (nsc_ship.ctx_sent[i] == version || def->rank < 0)
            continue;
        if (!nsc_ship.open && (nsc_ship_backlog_full() || nsc_ship_batch_begin(now, now, 0) != 0))
            return;
        if (enc_ctx(i) != 0)
            break;  /* the batch is full: the rest next pass */
        any = 1;
    }
    if (any)
        nsc_ship_batch_finish();
}

