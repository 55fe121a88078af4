/* Unit tests for the PXN resolver: resolution by handle AND time (a reused
 * handle value), an originator that arrives after its foreign events, children
 * of a foreign ProxyOp, expiry as unresolved, a full queue, and shutdown. */
#include <criterion/criterion.h>
#include <string.h>

#include "pxn.h"

#define MS 1000000ull

/* The test's "registry": process key = pid, known when listed. */
static uint32_t known[8];
static unsigned nknown;

typedef struct emitted {
    uint64_t section;
    nsc_event ev;
    int has_alias;
    nsc_a2c_alias alias;
} emitted;
static emitted out[64];
static unsigned nout;

static uint64_t origin(void *arg, uint64_t proxy_key, uint32_t pid)
{
    (void)arg;
    (void)proxy_key;
    for (unsigned i = 0; i < nknown; i++)
        if (known[i] == pid)
            return pid;
    return 0;
}

static void emit(void *arg, uint64_t section, const nsc_event *ev, const nsc_a2c_alias *alias)
{
    (void)arg;
    cr_assert_lt(nout, 64);
    out[nout] = (emitted){section, *ev, alias != NULL, alias ? *alias : (nsc_a2c_alias){0}};
    nout++;
}

static nsc_pxn *make(uint32_t pending)
{
    nknown = nout = 0;
    nsc_pxn_cfg cfg = {.window_ns = 100 * MS, .hold_ns = 50 * MS, .recent_cap = 16, .pending_cap = pending};
    nsc_pxn_sink sink = {NULL, origin, emit};
    nsc_pxn *x = nsc_pxn_new(&cfg, &sink);
    cr_assert_not_null(x);
    return x;
}

static nsc_event coll(uint64_t id, uint64_t start, uint16_t ctx, int32_t rank)
{
    return (nsc_event){.id = id, .start_ns = start, .stop_ns = start + 10, .ctx = ctx, .rank = rank,
                       .type = NSC_T_COLL};
}

static nsc_event foreign_op(uint64_t id, uint64_t start, uint32_t origin_pid, uint64_t origin_parent)
{
    return (nsc_event){.id = id, .start_ns = start, .stop_ns = start + 5, .ctx = NSC_CTX_NONE, .rank = 7,
                       .type = NSC_T_PROXY_OP, .flags = NSC_EVF_FOREIGN, .origin_pid = origin_pid,
                       .origin_parent = origin_parent, .origin_ctx = 0xdead0000};
}

Test(pxn, reused_handle_resolves_by_time)
{
    nsc_pxn *x = make(8);
    known[nknown++] = 100;
    /* Process 100 used handle 0x42 twice: at 1 s (ctx 1, rank 0) and at 2 s (ctx 2, rank 4). */
    nsc_event a = coll(0x42, 1000 * MS, 1, 0), b = coll(0x42, 2000 * MS, 2, 4);
    nsc_pxn_note(x, 100, &a);
    nsc_pxn_note(x, 100, &b);
    nsc_event late = foreign_op(9, 2000 * MS + 5 * MS, 100, 0x42);   /* belongs to the second */
    nsc_event early = foreign_op(10, 1000 * MS + 1 * MS, 100, 0x42); /* belongs to the first */
    nsc_pxn_submit(x, 200, 200, &late, 0);
    nsc_pxn_submit(x, 200, 200, &early, 0);
    cr_assert_eq(nout, 2);
    cr_assert_eq(out[0].section, 100);
    cr_assert_eq(out[0].ev.ctx, 2);
    cr_assert_eq(out[0].ev.rank, 4);
    cr_assert_eq(out[0].ev.parent, 0x42);
    cr_assert_eq(out[1].ev.ctx, 1);
    cr_assert_eq(out[1].ev.rank, 0);
    for (unsigned i = 0; i < 2; i++) {
        cr_assert(out[i].ev.id & NSC_PXN_NEW_ID_BIT);
        cr_assert_eq(out[i].ev.flags & (NSC_EVF_FOREIGN | NSC_EVF_UNRESOLVED), NSC_EVF_FOREIGN);
        cr_assert_eq(out[i].ev.origin_pid, 200);  /* now names the proxy */
        cr_assert(out[i].has_alias);
        cr_assert_eq(out[i].alias.proxy_pid, 200);
        cr_assert_eq(out[i].alias.origin_pid, 100);
        cr_assert_eq(out[i].alias.new_id, out[i].ev.id);
    }
    cr_assert_eq(out[0].alias.proxy_id, 9);
    cr_assert_neq(out[0].ev.id, out[1].ev.id);
    /* Outside the window of either use: not resolved (held). */
    nsc_event stale = foreign_op(11, 2000 * MS + 500 * MS, 100, 0x42);
    nsc_pxn_submit(x, 200, 200, &stale, 0);
    nsc_event before = foreign_op(12, 999 * MS, 100, 0x42);  /* before any use */
    nsc_pxn_submit(x, 200, 200, &before, 0);
    cr_assert_eq(nout, 2);
    nsc_pxn_stats st;
    nsc_pxn_stats_get(x, &st);
    cr_assert_eq(st.resolved, 2);
    cr_assert_eq(st.pending, 2);
    nsc_pxn_free(x);
}

Test(pxn, late_origin_and_children)
{
    nsc_pxn *x = make(8);
    /* The proxy's child ProxyStep stops (and arrives) first, then the ProxyOp;
     * the originator is not even known yet. */
    nsc_event step = {.id = 21, .parent = 20, .start_ns = 1002 * MS, .type = NSC_T_PROXY_STEP,
                      .flags = NSC_EVF_FOREIGN, .origin_pid = 100, .ctx = NSC_CTX_NONE};
    nsc_event op = foreign_op(20, 1001 * MS, 100, 0x7);
    nsc_pxn_submit(x, 200, 200, &step, 10 * MS);
    nsc_pxn_submit(x, 200, 200, &op, 10 * MS);
    nsc_pxn_tick(x, 20 * MS);
    cr_assert_eq(nout, 0);
    known[nknown++] = 100;
    nsc_event c = coll(0x7, 1000 * MS, 3, 5);
    nsc_pxn_note(x, 100, &c);
    nsc_pxn_tick(x, 30 * MS);  /* within hold: both resolve, the child after its parent */
    cr_assert_eq(nout, 2);
    cr_assert_eq(out[0].ev.type, NSC_T_PROXY_OP);
    cr_assert_eq(out[0].ev.parent, 0x7);
    cr_assert_eq(out[1].ev.type, NSC_T_PROXY_STEP);
    cr_assert_eq(out[1].ev.parent, out[0].ev.id);
    cr_assert_eq(out[1].section, 100);
    cr_assert_eq(out[1].ev.ctx, 3);
    cr_assert_eq(out[1].ev.rank, 5);
    cr_assert_eq(out[1].alias.origin_pid, 100);
    nsc_pxn_stats st;
    nsc_pxn_stats_get(x, &st);
    cr_assert_eq(st.resolved, 2);
    cr_assert_eq(st.pending, 0);
    nsc_pxn_free(x);
}

Test(pxn, expiry_overflow_and_drain)
{
    nsc_pxn *x = make(2);
    nsc_event a = foreign_op(1, 1000 * MS, 300, 0x1), b = foreign_op(2, 1000 * MS, 300, 0x2),
              c = foreign_op(3, 1000 * MS, 300, 0x3);
    nsc_pxn_submit(x, 200, 200, &a, 0);
    nsc_pxn_submit(x, 200, 200, &b, 40 * MS);
    nsc_pxn_submit(x, 200, 200, &c, 40 * MS);  /* queue full: out at once, flagged */
    cr_assert_eq(nout, 1);
    cr_assert_eq(out[0].ev.id, 3);
    cr_assert_eq(out[0].section, 200);
    cr_assert(out[0].ev.flags & NSC_EVF_UNRESOLVED);
    cr_assert_not(out[0].has_alias);
    nsc_pxn_tick(x, 60 * MS);  /* a held 60 ms > 50: given up; b only 20 ms */
    cr_assert_eq(nout, 2);
    cr_assert_eq(out[1].ev.id, 1);
    cr_assert_eq(out[1].ev.origin_parent, 0x1);  /* unchanged apart from the flag */
    cr_assert(out[1].ev.flags & NSC_EVF_UNRESOLVED);
    nsc_pxn_drain(x);
    cr_assert_eq(nout, 3);
    cr_assert_eq(out[2].ev.id, 2);
    nsc_pxn_stats st;
    nsc_pxn_stats_get(x, &st);
    cr_assert_eq(st.unresolved, 3);
    cr_assert_eq(st.overflow, 1);
    cr_assert_eq(st.expired, 1);
    cr_assert_eq(st.resolved, 0);
    cr_assert_eq(st.pending, 0);
    nsc_pxn_free(x);
}

Test(pxn, forgets_oldest_candidates)
{
    nsc_pxn *x = make(4);
    known[nknown++] = 100;
    for (uint64_t i = 0; i < 17; i++) {  /* capacity 16: id 0x100 is overwritten */
        nsc_event c = coll(0x100 + i, 1000 * MS, 1, 0);
        nsc_pxn_note(x, 100, &c);
    }
    nsc_event gone = foreign_op(1, 1001 * MS, 100, 0x100), kept = foreign_op(2, 1001 * MS, 100, 0x110);
    nsc_pxn_submit(x, 200, 200, &gone, 0);
    nsc_pxn_submit(x, 200, 200, &kept, 0);
    cr_assert_eq(nout, 1);
    cr_assert_eq(out[0].ev.parent, 0x110);
    nsc_pxn_free(x);
}

/* The lazily built index against a brute-force reading of the last 16
 * candidates: few handles reused many times, lookups between puts (so the
 * index catches up in steps, entries die while indexed, and the index is
 * rebuilt), unordered starts, ties. */
Test(pxn, index_matches_brute_force)
{
    nsc_pxn *x = make(4096);
    known[nknown++] = 100;
    nsc_event notes[4000];
    uint64_t rnd = 12345, t = 1000 * MS;
    unsigned resolved = 0;
    for (unsigned n = 0; n < 4000; n++) {
        rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
        t += (rnd >> 40) % (20 * MS);
        notes[n] = coll(0x40 + (rnd >> 33) % 5, t - (rnd >> 20) % (30 * MS), (uint16_t)n, 0);
        nsc_pxn_note(x, 100, &notes[n]);
        if ((rnd >> 13) % 3 != 0)
            continue;
        uint64_t parent = 0x40 + (rnd >> 50) % 6, at = t - (rnd >> 7) % (60 * MS);
        const nsc_event *best = NULL;
        for (unsigned k = n + 1; k-- > 0 && k + 16 > n;)
            if (notes[k].id == parent && notes[k].start_ns <= at && at - notes[k].start_ns <= 100 * MS &&
                (!best || notes[k].start_ns > best->start_ns))
                best = &notes[k];
        nout = 0;
        nsc_event op = foreign_op(n, at, 100, parent);
        nsc_pxn_submit(x, 200, 200, &op, 0);
        cr_assert_eq(nout, best != NULL, "lookup %u", n);
        if (best)
            cr_assert_eq(out[0].ev.ctx, best->ctx, "lookup %u: note %u, expected %u", n, out[0].ev.ctx, best->ctx);
        resolved += nout;
    }
    cr_assert_gt(resolved, 500);  /* the comparison covered both outcomes */
    nsc_pxn_stats st;
    nsc_pxn_stats_get(x, &st);
    cr_assert_gt(st.pending, 100);
    nsc_pxn_free(x);
}

typedef struct unsaved {
    uint64_t hid[8];
    unsigned n;
} unsaved;

static void note_unsaved(void *arg, uint64_t hid, uint64_t proxy_key, const nsc_event *ev)
{
    unsaved *u = arg;
    cr_assert_lt(u->n, 8);
    cr_assert_eq(proxy_key, 200);
    cr_assert(ev->flags & NSC_EVF_FOREIGN);
    u->hid[u->n++] = hid;
}

/* What a save must write: the events held since the last one, then the
 * saved ones that left (resolved or given up); a restored event is saved
 * already, keeps its id, and later ids do not reuse it. */
Test(pxn, saves_what_changed_and_restores)
{
    nsc_pxn *x = make(2);
    nsc_event a = foreign_op(1, 1000 * MS, 100, 0x1), b = foreign_op(2, 1000 * MS, 300, 0x2);
    nsc_pxn_submit(x, 200, 200, &a, 0);
    nsc_pxn_submit(x, 200, 200, &b, 0);
    unsaved u = {0};
    size_t ngone;
    nsc_pxn_unsaved(x, note_unsaved, &u);
    cr_assert_eq(u.n, 2);
    nsc_pxn_gone(x, &ngone);
    cr_assert_eq(ngone, 0);
    nsc_pxn_saved(x);
    u.n = 0;
    nsc_pxn_unsaved(x, note_unsaved, &u);
    cr_assert_eq(u.n, 0, "saved: nothing to write again");
    /* a's origin arrives: a resolves and leaves. */
    known[nknown++] = 100;
    nsc_event c = coll(0x1, 1000 * MS - 1, 1, 0);
    nsc_pxn_note(x, 100, &c);
    nsc_pxn_tick(x, 1 * MS);
    cr_assert_eq(nout, 1);
    const uint64_t *gone = nsc_pxn_gone(x, &ngone);
    cr_assert_eq(ngone, 1);
    cr_assert_eq(gone[0], 1, "a's id");
    nsc_pxn_saved(x);
    nsc_pxn_free(x);

    /* The next agent process: b comes back as saved, the queue of 2 then
     * full, so a third restored event is given up; its id must go. */
    x = make(2);
    nsc_event d = foreign_op(4, 1000 * MS, 300, 0x4), e = foreign_op(5, 1000 * MS, 300, 0x5);
    cr_assert_eq(nsc_pxn_restore(x, 2, 200, 200, &b, 0), 0);
    cr_assert_eq(nsc_pxn_restore(x, 7, 200, 200, &d, 0), 0);
    cr_assert_eq(nsc_pxn_restore(x, 8, 200, 200, &e, 0), 0);
    cr_assert_eq(nout, 1);
    cr_assert(out[0].ev.flags & NSC_EVF_UNRESOLVED);
    gone = nsc_pxn_gone(x, &ngone);
    cr_assert_eq(ngone, 1);
    cr_assert_eq(gone[0], 8);
    cr_assert_eq(nsc_pxn_restore(x, 9, 200, 200, &e, 0), 0, "gone has room for 2");
    cr_assert_eq(nsc_pxn_restore(x, 10, 200, 200, &e, 0), -1, "gone is full: save first");
    nsc_pxn_stats st;
    nsc_pxn_stats_get(x, &st);
    cr_assert_eq(st.restored, 4, "the refused one is not");
    cr_assert_eq(st.overflow, 2);
    u.n = 0;
    nsc_pxn_unsaved(x, note_unsaved, &u);
    cr_assert_eq(u.n, 0, "restored events are saved");
    nsc_pxn_saved(x);
    nsc_pxn_drain(x);
    nsc_event f = foreign_op(6, 1000 * MS, 300, 0x6);
    nsc_pxn_submit(x, 200, 200, &f, 0);
    u.n = 0;
    nsc_pxn_unsaved(x, note_unsaved, &u);
    cr_assert_eq(u.n, 1);
    cr_assert_eq(u.hid[0], 10, "after the ids restored");
    nsc_pxn_free(x);
}

typedef struct remembered {
    uint64_t key[8], id[8], new_id[8];
    uint32_t origin_pid[8];
    int32_t rank[8];
    unsigned n;
} remembered;

static void note_entry(void *arg, uint64_t key, const nsc_event *ev, uint32_t origin_pid, uint64_t new_id)
{
    remembered *r = arg;
    cr_assert_lt(r->n, 8);
    r->key[r->n] = key;
    r->id[r->n] = ev->id;
    r->rank[r->n] = ev->rank;
    r->origin_pid[r->n] = origin_pid;
    r->new_id[r->n++] = new_id;
}

/* What a successor needs of a predecessor's memory: the candidates and the
 * moved events since a sequence; given back, a foreign event whose origin
 * and a child whose foreign parent only the predecessor saw re-attach as
 * they would have there, under the predecessor's ids. */
Test(pxn, successor_resolves_with_what_was_remembered)
{
    nsc_pxn *x = make(8);
    known[nknown++] = 100;
    nsc_event c = coll(0x7, 1000 * MS, 3, 5), op = foreign_op(20, 1001 * MS, 100, 0x7);
    nsc_pxn_note(x, 100, &c);
    remembered cands = {0}, moved = {0};
    cr_assert_eq(nsc_pxn_candidates(x, 0, note_entry, &cands), 1);
    cr_assert_eq(nsc_pxn_candidates(x, 1, note_entry, &cands), 1, "nothing new since 1");
    cr_assert_eq(cands.n, 1);
    cr_assert_eq(cands.key[0], 100);
    cr_assert_eq(cands.id[0], 0x7);
    cr_assert_eq(cands.rank[0], 5);
    cr_assert_eq(cands.new_id[0], 0, "a candidate");
    nsc_pxn_submit(x, 200, 200, &op, 0);
    cr_assert_eq(nout, 1);
    uint64_t given = out[0].ev.id;
    cr_assert_eq(nsc_pxn_moved_since(x, 0, note_entry, &moved), 1);
    cr_assert_eq(moved.key[0], 200);
    cr_assert_eq(moved.id[0], 20, "the proxy's id");
    cr_assert_eq(moved.origin_pid[0], 100);
    cr_assert_eq(moved.new_id[0], given);
    nsc_pxn_free(x);

    /* The successor: processes under new keys (the origin's is 100 again,
     * as the test's registry names them by pid). */
    x = make(8);
    nsc_event back = coll(cands.id[0], 1000 * MS, 3, cands.rank[0]),
              moved_op = {.id = moved.id[0], .start_ns = 1001 * MS, .rank = 5, .ctx = 3};
    nsc_pxn_note(x, 100, &back);
    nsc_pxn_moved(x, 200, &moved_op, moved.origin_pid[0], moved.new_id[0]);
    nsc_event step = {.id = 21, .parent = 20, .start_ns = 1002 * MS, .type = NSC_T_PROXY_STEP,
                      .flags = NSC_EVF_FOREIGN, .origin_pid = 100, .ctx = NSC_CTX_NONE};
    nsc_event op2 = foreign_op(30, 1003 * MS, 100, 0x7);
    nsc_pxn_submit(x, 200, 200, &step, 0);
    cr_assert_eq(nout, 0, "the origin is not heard yet: the child waits");
    known[nknown++] = 100;
    nsc_pxn_tick(x, 10 * MS);
    cr_assert_eq(nout, 1);
    cr_assert_eq(out[0].section, 100);
    cr_assert_eq(out[0].ev.parent, given, "under the id the predecessor gave its parent");
    cr_assert_eq(out[0].ev.rank, 5);
    nsc_pxn_submit(x, 200, 200, &op2, 10 * MS);
    cr_assert_eq(nout, 2);
    cr_assert_eq(out[1].ev.parent, 0x7, "the predecessor's candidate");
    cr_assert_eq(out[1].ev.ctx, 3);
    nsc_pxn_free(x);
}
