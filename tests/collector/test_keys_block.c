/* Store keys (byte order == tuple order) and the block codec: round trips of
 * every event type, and malformed blocks rejected with precise errors. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "keys.h"
#include "mix.h"
#include "sim.h"

static int cmp_u64(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

static int cmp_block_keys(const nsc_block_key *a, const nsc_block_key *b)
{
    int c;
    if ((c = cmp_u64(a->job, b->job)) || (c = cmp_u64(a->comm, b->comm)) ||
        (c = (a->rank > b->rank) - (a->rank < b->rank)) || (c = cmp_u64(a->start_ns, b->start_ns)))
        return c;
    return cmp_u64(a->seq, b->seq);
}

static int sign(int v)
{
    return (v > 0) - (v < 0);
}

Test(keys, block_byte_order_is_tuple_order)
{
    nsc_sim_rng r = {7};
    static nsc_block_key k[500];
    static uint8_t enc[500][NSC_KEY_BLOCK_LEN];
    for (int i = 0; i < 500; i++) {
        /* Few distinct values per field, so ties force the later fields to decide. */
        k[i] = (nsc_block_key){(uint32_t)(nsc_sim_next(&r) % 3),
                               nsc_sim_next(&r) % 2 ? UINT64_MAX - nsc_sim_next(&r) % 2 : nsc_sim_next(&r) % 3,
                               (int32_t)(nsc_sim_next(&r) % 5) - 2,
                               nsc_sim_next(&r) % 3 ? nsc_sim_next(&r) % 4 : (1ull << 63) + 5,
                               (uint32_t)(nsc_sim_next(&r) % 3)};
        nsc_key_block(enc[i], &k[i]);
        nsc_block_key back;
        cr_assert_eq(nsc_key_block_parse(enc[i], NSC_KEY_BLOCK_LEN, &back), 0);
        cr_assert_eq(cmp_block_keys(&back, &k[i]), 0);
    }
    for (int i = 0; i < 500; i++)
        for (int j = 0; j < 500; j += 7)
            cr_assert_eq(sign(memcmp(enc[i], enc[j], NSC_KEY_BLOCK_LEN)),
                         sign(cmp_block_keys(&k[i], &k[j])), "keys %d and %d", i, j);
    nsc_block_key back;
    cr_assert_eq(nsc_key_block_parse(enc[0], NSC_KEY_BLOCK_LEN - 1, &back), -1);
}

Test(keys, coll_and_rank_order)
{
    /* (job, comm, func, rank, seq_last) */
    nsc_coll_key a = {1, 5, 2, -1, 9}, b = {1, 5, 2, -1, 10}, c = {1, 5, 2, 0, 3};
    uint8_t ka[NSC_KEY_COLL_LEN], kb[NSC_KEY_COLL_LEN], kc[NSC_KEY_COLL_LEN];
    nsc_key_coll(ka, &a);
    nsc_key_coll(kb, &b);
    nsc_key_coll(kc, &c);
    cr_assert_lt(memcmp(ka, kb, sizeof ka), 0, "a rank's runs in seq order");
    cr_assert_lt(memcmp(kb, kc, sizeof ka), 0, "rank decides before seq; -1 before 0");
    cr_assert_eq(memcmp(ka, kc, NSC_KEY_COLL_PREFIX), 0, "one collective's prefix");
    nsc_coll_key back;
    cr_assert_eq(nsc_key_coll_parse(ka, sizeof ka, &back), 0);
    cr_assert_eq(back.rank, -1);
    cr_assert_eq(back.seq, 9);
    cr_assert_eq(back.func, 2);
    cr_assert_eq(nsc_key_coll_parse(ka, sizeof ka - 1, &back), -1);
    nsc_coll_val v = {{0}, 77, 1ull << 40}, vb;
    memset(v.block, 0xab, sizeof v.block);
    uint8_t vbuf[NSC_COLL_VAL_LEN];
    nsc_coll_val_put(vbuf, &v);
    cr_assert_eq(nsc_coll_val_parse(vbuf, sizeof vbuf, &vb), 0);
    cr_assert_eq(memcmp(&v, &vb, sizeof v), 0);
    cr_assert_eq(nsc_coll_val_parse(vbuf, sizeof vbuf - 8, &vb), -1, "the schema 1 value size");
    uint8_t r1[NSC_KEY_RANK_LEN], r2[NSC_KEY_RANK_LEN];
    nsc_key_rank(r1, 1, 5, INT32_MIN);
    nsc_key_rank(r2, 1, 5, INT32_MAX);
    cr_assert_lt(memcmp(r1, r2, sizeof r1), 0);
    uint8_t a1[NSC_KEY_AGE_LEN], a2[NSC_KEY_AGE_LEN];
    nsc_key_age(a1, 255, 9);
    nsc_key_age(a2, 256, 0);
    cr_assert_lt(memcmp(a1, a2, sizeof a1), 0);
}

/* ---- blocks ------------------------------------------------------------- */

static uint64_t rnd(nsc_sim_rng *r)
{
    return nsc_sim_next(r);
}

/* Every field of every type set to an arbitrary value. */
static void random_event(nsc_sim_rng *r, nsc_event *e, unsigned type)
{
    memset(e, 0, sizeof *e);
    e->id = rnd(r), e->parent = rnd(r), e->start_ns = rnd(r), e->stop_ns = rnd(r);
    e->tid = (uint32_t)rnd(r), e->rank = (int32_t)rnd(r), e->ctx = (uint16_t)rnd(r);
    e->type = (uint8_t)type, e->flags = (uint8_t)rnd(r), e->origin_pid = (uint32_t)rnd(r);
    e->origin_parent = rnd(r), e->origin_ctx = rnd(r);
    switch (type) {
    case NSC_T_GROUP_API: e->d.group_api.depth = (uint32_t)rnd(r); break;
    case NSC_T_COLL_API:
    case NSC_T_P2P_API:
        e->d.coll_api.func = (nsc_str)rnd(r), e->d.coll_api.datatype = (nsc_str)rnd(r);
        e->d.coll_api.root = (int32_t)rnd(r), e->d.coll_api.count = rnd(r);
        e->d.coll_api.stream = rnd(r), e->d.coll_api.user_tag = rnd(r);
        break;
    case NSC_T_KERNEL_LAUNCH: e->d.kernel_launch.stream = rnd(r); break;
    case NSC_T_COLL:
        e->d.coll.seq = rnd(r), e->d.coll.count = rnd(r), e->d.coll.user_tag = rnd(r);
        e->d.coll.traffic_bytes = rnd(r), e->d.coll.parent_group = rnd(r);
        e->d.coll.root = (int32_t)rnd(r), e->d.coll.func = (nsc_str)rnd(r);
        e->d.coll.datatype = (nsc_str)rnd(r), e->d.coll.algo = (nsc_str)rnd(r);
        e->d.coll.proto = (nsc_str)rnd(r), e->d.coll.kernel_variant = (nsc_str)rnd(r);
        e->d.coll.nchannels = (uint8_t)rnd(r), e->d.coll.nwarps = (uint8_t)rnd(r);
        e->d.coll.op = (uint8_t)rnd(r);
        break;
    case NSC_T_P2P:
        e->d.p2p.count = rnd(r), e->d.p2p.user_tag = rnd(r), e->d.p2p.parent_group = rnd(r);
        e->d.p2p.peer = (int32_t)rnd(r), e->d.p2p.func = (nsc_str)rnd(r);
        e->d.p2p.datatype = (nsc_str)rnd(r), e->d.p2p.nchannels = (uint8_t)rnd(r);
        break;
    case NSC_T_PROXY_OP:
        e->d.proxy_op.peer = (int32_t)rnd(r), e->d.proxy_op.nsteps = (int32_t)rnd(r);
        e->d.proxy_op.chunk_size = (int32_t)rnd(r), e->d.proxy_op.op_pid = (uint32_t)rnd(r);
        e->d.proxy_op.channel = (uint8_t)rnd(r), e->d.proxy_op.is_send = (uint8_t)rnd(r);
        break;
    case NSC_T_PROXY_STEP: e->d.proxy_step.step = (int32_t)rnd(r); break;
    case NSC_T_KERNEL_CH:
        e->d.kernel_ch.ptimer_start = rnd(r), e->d.kernel_ch.ptimer_stop = rnd(r);
        e->d.kernel_ch.ptimer_stop_ns = rnd(r), e->d.kernel_ch.channel = (uint8_t)rnd(r);
        break;
    case NSC_T_NET_PLUGIN:
        e->d.net_plugin.plugin_id = (int64_t)rnd(r), e->d.net_plugin.data = rnd(r);
        break;
    case NSC_T_CE_COLL:
        e->d.ce_coll.seq = rnd(r), e->d.ce_coll.count = rnd(r), e->d.ce_coll.stream = rnd(r);
        e->d.ce_coll.user_tag = rnd(r), e->d.ce_coll.root = (int32_t)rnd(r);
        e->d.ce_coll.batch_size = (uint32_t)rnd(r), e->d.ce_coll.num_batches = (uint32_t)rnd(r);
        e->d.ce_coll.ce_seq = (uint32_t)rnd(r), e->d.ce_coll.func = (nsc_str)rnd(r);
        e->d.ce_coll.datatype = (nsc_str)rnd(r), e->d.ce_coll.sync_strategy = (nsc_str)rnd(r);
        e->d.ce_coll.intra_batch_sync = (uint8_t)rnd(r);
        break;
    case NSC_T_CE_SYNC:
        e->d.ce_sync.nranks = (int32_t)rnd(r), e->d.ce_sync.is_complete = (uint8_t)rnd(r);
        break;
    case NSC_T_CE_BATCH:
        e->d.ce_batch.total_bytes = rnd(r), e->d.ce_batch.num_ops = (int32_t)rnd(r);
        e->d.ce_batch.use_intra_sync = (uint8_t)rnd(r);
        break;
    case NSC_T_KERNEL_PHASE:
        e->d.kernel_phase.ptimer = rnd(r), e->d.kernel_phase.phase_name = (nsc_str)rnd(r);
        e->d.kernel_phase.channel = (uint8_t)rnd(r), e->d.kernel_phase.phase_id = (uint8_t)rnd(r);
        break;
    default: break;
    }
}

/* The stored order (block.h): events by id, states by (id, time). */
static int by_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int by_id_ts(const void *a, const void *b)
{
    const nsc_state_rec *x = a, *y = b;
    int c = by_id(&x->id, &y->id);
    return c ? c : (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/* Events compared field by field through memcmp: both sides are zero-filled
 * first, so padding is equal too. */
static void check_round_trip(int level)
{
    nsc_sim_rng r = {11};
    nsc_block_enc *e;
    cr_assert_eq(nsc_block_enc_new(level, &e), 0);
    static nsc_event ev[3 * NSC_T_COUNT];
    static nsc_state_rec st[40];
    static nsc_completion co[5];
    nsc_block_begin(e, 77);
    for (unsigned i = 0; i < 3 * NSC_T_COUNT; i++) {
        random_event(&r, &ev[i], i % NSC_T_COUNT);
        cr_assert_eq(nsc_block_add_event(e, &ev[i]), 0);
    }
    for (int i = 0; i < 40; i++) {
        memset(&st[i], 0, sizeof st[i]);  /* fields one by one: padding stays zero */
        st[i].id = rnd(&r), st[i].ts_ns = rnd(&r), st[i].arg = rnd(&r);
        st[i].tid = (uint32_t)rnd(&r), st[i].state = (uint8_t)(rnd(&r) % NSC_S_COUNT);
        cr_assert_eq(nsc_block_add_state(e, &st[i]), 0);
    }
    for (int i = 0; i < 5; i++) {
        co[i] = (nsc_completion){rnd(&r), rnd(&r)};
        cr_assert_eq(nsc_block_add_completion(e, &co[i]), 0);
    }
    const uint8_t *buf;
    size_t len;
    nsc_block_hdr h;
    cr_assert_eq(nsc_block_finish(e, &buf, &len, &h), 0);
    nsc_block b;
    cr_assert_eq(nsc_block_decode(buf, len, &b), 0);
    qsort(ev, 3 * NSC_T_COUNT, sizeof *ev, by_id);
    qsort(st, 40, sizeof *st, by_id_ts);
    qsort(co, 5, sizeof *co, by_id);
    cr_assert_eq(b.hdr.proc, 77);
    cr_assert_eq(b.hdr.nevents, 3 * NSC_T_COUNT);
    cr_assert_eq(b.hdr.t_min, h.t_min);
    for (unsigned i = 0; i < 3 * NSC_T_COUNT; i++)
        cr_assert_eq(memcmp(&b.events[i], &ev[i], sizeof ev[i]), 0, "event %u (%s)", i,
                     nsc_type_name(i % NSC_T_COUNT));
    cr_assert_eq(b.hdr.nstates, 40);
    for (int i = 0; i < 40; i++)
        cr_assert_eq(memcmp(&b.states[i], &st[i], sizeof st[i]), 0, "state %d", i);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(memcmp(&b.completions[i], &co[i], sizeof co[i]), 0);
    nsc_block_release(&b);
    nsc_block_enc_free(e);
}

static int by_id_start(const void *a, const void *b)
{
    const nsc_event *x = a, *y = b;
    int c = by_id(&x->id, &y->id);
    return c ? c : (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/* Dense ids (the encoder's counting sort) with repeats: two events per id,
 * and one id with more states than insertion handles, in random time order. */
Test(block, dense_ids_with_repeats_in_stored_order)
{
    enum { NEV = 200, NST = 300 };
    static nsc_event ev[NEV];
    static nsc_state_rec st[NST];
    nsc_sim_rng r = {23};
    nsc_block_enc *e;
    cr_assert_eq(nsc_block_enc_new(3, &e), 0);
    nsc_block_begin(e, 9);
    for (int i = 0; i < NEV; i++) {
        random_event(&r, &ev[i], NSC_T_PROXY_STEP);
        ev[i].id = 5000 + (uint64_t)(NEV - 1 - i) / 2;
        cr_assert_eq(nsc_block_add_event(e, &ev[i]), 0);
    }
    for (int i = 0; i < NST; i++) {
        memset(&st[i], 0, sizeof st[i]);
        st[i].id = i < 100 ? 5042 : 5000 + rnd(&r) % (NEV / 2);
        st[i].ts_ns = rnd(&r), st[i].state = (uint8_t)(rnd(&r) % NSC_S_COUNT);
        cr_assert_eq(nsc_block_add_state(e, &st[i]), 0);
    }
    const uint8_t *buf;
    size_t len;
    cr_assert_eq(nsc_block_finish(e, &buf, &len, NULL), 0);
    nsc_block b;
    cr_assert_eq(nsc_block_decode(buf, len, &b), 0);
    qsort(ev, NEV, sizeof *ev, by_id_start);
    qsort(st, NST, sizeof *st, by_id_ts);
    cr_assert_eq(b.hdr.nevents, NEV);
    cr_assert_eq(b.hdr.nstates, NST);
    for (int i = 0; i < NEV; i++)
        cr_assert_eq(memcmp(&b.events[i], &ev[i], sizeof ev[i]), 0, "event %d", i);
    for (int i = 0; i < NST; i++)
        cr_assert_eq(memcmp(&b.states[i], &st[i], sizeof st[i]), 0, "state %d", i);
    nsc_block_release(&b);
    nsc_block_enc_free(e);
}

/* The bytes of one block of the mix's records added in the order `at` gives
 * (the encoder's own block: valid until e's next begin). */
static const uint8_t *encode_in_order(nsc_block_enc *e, const nsc_mix *m, const size_t *ev_at,
                                      const size_t *st_at, size_t *len)
{
    nsc_block_begin(e, 4);
    for (size_t i = 0; i < m->nevents; i++)
        cr_assert_eq(nsc_block_add_event(e, &m->events[ev_at[i]]), 0);
    for (size_t i = 0; i < m->nstates; i++)
        cr_assert_eq(nsc_block_add_state(e, &m->states[st_at[i]]), 0);
    for (size_t i = 0; i < m->ncompletions; i++)
        cr_assert_eq(nsc_block_add_completion(e, &m->completions[m->ncompletions - 1 - i]), 0);
    const uint8_t *buf;
    cr_assert_eq(nsc_block_finish(e, &buf, len, NULL), 0);
    return buf;
}

/* Records added in stored order are encoded without the encoder's sort;
 * the block must be the one the sort gives for the same records in any other
 * order. Ties (a state's id and time twice, with different values) keep the
 * order they came in on both paths. */
Test(block, stored_order_input_encodes_like_sorted)
{
    nsc_mix m;
    cr_assert_eq(nsc_mix_init(&m, 17, 6), 0);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(nsc_mix_collective(&m, 0, 2), 0);
    for (size_t i = 0; i + 1 < m.nstates; i += 50) {  /* ties: a copy right after */
        m.states[i + 1] = m.states[i];
        m.states[i + 1].arg = 1000 + i;
    }
    static size_t ev_plugin[1000], ev_sorted[1000], st_plugin[2000], st_sorted[2000];
    cr_assert_leq(m.nevents, 1000);
    cr_assert_leq(m.nstates, 2000);
    for (size_t i = 0; i < m.nevents; i++)
        ev_plugin[i] = ev_sorted[i] = i;
    for (size_t i = 0; i < m.nstates; i++)
        st_plugin[i] = st_sorted[i] = i;
    /* Stable insertion sorts by (id, time): the stored order. */
    for (size_t i = 1; i < m.nevents; i++)
        for (size_t j = i; j > 0 && m.events[ev_sorted[j - 1]].id > m.events[ev_sorted[j]].id; j--) {
            size_t t = ev_sorted[j];
            ev_sorted[j] = ev_sorted[j - 1], ev_sorted[j - 1] = t;
        }
    for (size_t i = 1; i < m.nstates; i++)
        for (size_t j = i; j > 0; j--) {
            const nsc_state_rec *x = &m.states[st_sorted[j - 1]], *y = &m.states[st_sorted[j]];
            if (x->id < y->id || (x->id == y->id && x->ts_ns <= y->ts_ns))
                break;
            size_t t = st_sorted[j];
            st_sorted[j] = st_sorted[j - 1], st_sorted[j - 1] = t;
        }
    cr_assert_neq(memcmp(ev_plugin, ev_sorted, m.nevents * sizeof *ev_plugin), 0,
                  "the mix comes in stop order, not id order");
    nsc_block_enc *e;
    cr_assert_eq(nsc_block_enc_new(3, &e), 0);
    size_t len_plugin, len_sorted;
    const uint8_t *b = encode_in_order(e, &m, ev_plugin, st_plugin, &len_plugin);
    uint8_t *plugin = malloc(len_plugin);
    cr_assert_not_null(plugin);
    memcpy(plugin, b, len_plugin);
    b = encode_in_order(e, &m, ev_sorted, st_sorted, &len_sorted);
    cr_assert_eq(len_sorted, len_plugin);
    cr_assert_eq(memcmp(b, plugin, len_plugin), 0, "same block from sorted input");
    size_t n;
    const nsc_event *stored = nsc_block_events(e, &n);
    cr_assert_eq(n, m.nevents);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(memcmp(&stored[i], &m.events[ev_sorted[i]], sizeof *stored), 0);
    free(plugin);
    nsc_block_enc_free(e);
    nsc_mix_free(&m);
}

static nsc_str plus_100(void *arg, nsc_str id)
{
    ++*(int *)arg;
    return (nsc_str)(id + 100);
}

Test(block, string_map_rewrites_added_events)
{
    nsc_block_enc *e;
    cr_assert_eq(nsc_block_enc_new(0, &e), 0);
    int calls = 0;
    nsc_block_set_str_map(e, plus_100, &calls);
    nsc_block_begin(e, 1);
    nsc_event coll = {.id = 1, .type = NSC_T_COLL, .start_ns = 10, .stop_ns = 20};
    coll.d.coll.func = 1, coll.d.coll.algo = 3, coll.d.coll.seq = 7;
    nsc_event step = {.id = 2, .type = NSC_T_PROXY_STEP, .start_ns = 11, .stop_ns = 12};
    step.d.proxy_step.step = 5;
    cr_assert_eq(nsc_block_add_event(e, &coll), 0);
    cr_assert_eq(nsc_block_add_event(e, &step), 0);
    cr_assert_eq(coll.d.coll.func, 1, "the caller's record is left as it was");
    const uint8_t *buf;
    size_t len;
    cr_assert_eq(nsc_block_finish(e, &buf, &len, NULL), 0);
    nsc_block b;
    cr_assert_eq(nsc_block_decode(buf, len, &b), 0);
    cr_assert_eq(b.events[0].d.coll.func, 101);
    cr_assert_eq(b.events[0].d.coll.algo, 103);
    cr_assert_eq(b.events[0].d.coll.seq, 7, "numbers are not strings");
    cr_assert_eq(b.events[1].d.proxy_step.step, 5);
    cr_assert_eq(calls, 5, "one call per string field of the Coll, none for the step");
    nsc_block_release(&b);
    nsc_block_enc_free(e);
}

Test(block, every_type_round_trips_raw) { check_round_trip(0); }
Test(block, every_type_round_trips_zstd) { check_round_trip(3); }

Test(block, mix_compresses_and_round_trips)
{
    nsc_mix m;
    cr_assert_eq(nsc_mix_init(&m, 3, 40), 0);
    for (int i = 0; i < 40; i++)
        cr_assert_eq(nsc_mix_collective(&m, 0, 5), 0);
    nsc_block_enc *e;
    cr_assert_eq(nsc_block_enc_new(3, &e), 0);
    nsc_block_begin(e, 1);
    for (size_t i = 0; i < m.nevents; i++)
        cr_assert_eq(nsc_block_add_event(e, &m.events[i]), 0);
    for (size_t i = 0; i < m.nstates; i++)
        cr_assert_eq(nsc_block_add_state(e, &m.states[i]), 0);
    const uint8_t *buf;
    size_t len;
    cr_assert_eq(nsc_block_finish(e, &buf, &len, NULL), 0);
    cr_assert_lt((double)len / (double)m.nevents, 16.0, "%.2f bytes/event",
                 (double)len / (double)m.nevents);
    nsc_block b;
    cr_assert_eq(nsc_block_decode(buf, len, &b), 0);
    qsort(m.events, m.nevents, sizeof *m.events, by_id);
    qsort(m.states, m.nstates, sizeof *m.states, by_id_ts);
    cr_assert_eq(b.hdr.nevents, m.nevents);
    cr_assert_eq(memcmp(b.events, m.events, m.nevents * sizeof *m.events), 0);
    cr_assert_eq(memcmp(b.states, m.states, m.nstates * sizeof *m.states), 0);
    nsc_block_release(&b);
    nsc_block_enc_free(e);
    nsc_mix_free(&m);
}

/* A small uncompressed block (3 events) whose bytes the test can edit. */
static uint8_t *small_block(int level, size_t *len)
{
    nsc_sim_rng r = {5};
    nsc_block_enc *e;
    cr_assert_eq(nsc_block_enc_new(level, &e), 0);
    nsc_block_begin(e, 1);
    for (int i = 0; i < 3; i++) {
        nsc_event ev;
        random_event(&r, &ev, NSC_T_PROXY_STEP);
        ev.start_ns = 1000 + (uint64_t)i, ev.stop_ns = 2000, ev.id = (uint64_t)i;
        ev.parent = 0, ev.origin_parent = 0, ev.origin_ctx = 0, ev.tid = 1;
        cr_assert_eq(nsc_block_add_event(e, &ev), 0);
    }
    const uint8_t *buf;
    cr_assert_eq(nsc_block_finish(e, &buf, len, NULL), 0);
    uint8_t *copy = malloc(*len + 1);
    cr_assert_not_null(copy);
    memcpy(copy, buf, *len);
    nsc_block_enc_free(e);
    return copy;
}

static int decode_copy(const uint8_t *src, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    memcpy(copy, src, len);
    nsc_block b;
    int rc = nsc_block_decode(copy, len, &b);
    if (rc == 0)
        nsc_block_release(&b);
    free(copy);
    return rc;
}

#define NCOLS_IN_BLOCK 33 /* type + 11 common + 14 payload + 5 state + 2 completion */

Test(block, malformed_rejected_precisely)
{
    size_t len;
    uint8_t *raw = small_block(0, &len), *bad = malloc(len + 1);
    cr_assert_not_null(bad);
    cr_assert_eq(decode_copy(raw, len), 0);
    for (size_t cut = 0; cut < NSC_BLOCK_HDR_LEN; cut++)
        cr_assert_eq(decode_copy(raw, cut), NSC_BLOCK_ESHORT);
    for (size_t cut = NSC_BLOCK_HDR_LEN; cut < len; cut++)
        cr_assert_neq(decode_copy(raw, cut), 0, "cut at %zu", cut);
    size_t type_col = NSC_BLOCK_HDR_LEN + NCOLS_IN_BLOCK;
#define MUTATE(stmt, expect)                                     \
    do {                                                         \
        memcpy(bad, raw, len);                                   \
        stmt;                                                    \
        cr_assert_eq(decode_copy(bad, len), expect, #stmt);      \
    } while (0)
    MUTATE(bad[0] = 'X', NSC_BLOCK_EMAGIC);
    MUTATE(bad[3] = 2, NSC_BLOCK_EVERSION);
    MUTATE(bad[7] = 7, NSC_BLOCK_ECODEC);
    MUTATE(bad[12] = 0x7f, NSC_BLOCK_ELIMIT);                  /* 2 G events */
    MUTATE(bad[27] += 1, NSC_BLOCK_ECOLUMN);                    /* raw length != payload */
    MUTATE(bad[NSC_BLOCK_HDR_LEN] += 1, NSC_BLOCK_ECOLUMN);     /* column lengths != rest */
    MUTATE(bad[type_col] = 99, NSC_BLOCK_ETYPE);
    MUTATE(bad[15] = 4, NSC_BLOCK_ETRUNC);                      /* 4 events in columns for 3 */
    MUTATE(bad[15] = 2, NSC_BLOCK_ETRAILING);                   /* 2 events: bytes left over */
#undef MUTATE
    free(raw);

    uint8_t *z = small_block(3, &len);
    cr_assert_eq(decode_copy(z, len), 0);
    cr_assert_eq(z[7], 1, "compressed");
    for (size_t cut = NSC_BLOCK_HDR_LEN; cut < len; cut++)
        cr_assert_eq(decode_copy(z, cut), NSC_BLOCK_EDECOMPRESS, "cut at %zu", cut);
    memcpy(bad, z, len);
    bad[len - 1] ^= 0x5a;
    cr_assert_neq(decode_copy(bad, len), 0, "a corrupt frame never decodes as OK");
    free(z);
    free(bad);
}
