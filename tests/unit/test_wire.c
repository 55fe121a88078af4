/* Unit tests for the wire codec: round trips of every record kind, an
 * independent msgpack-c reading of the output, the malformed-input corpus
 * (each case asserting its exact error), and the encoder's FULL contract. */
#include <criterion/criterion.h>
#include <msgpack.h>
#include <string.h>

#include "wire.h"
#include "wire_samples.h"

#define CAP (1 << 16)
static uint8_t buf[CAP];

/* Fields after the tag: 8 common + the type's own + 3 origin (docs/protocol.md). */
static const unsigned type_fields[NSC_T_COUNT] = {0, 14, 7, 6, 1, 0, 4, 2, 1, 6, 5, 1, 12, 2, 3, 4};
#define EV_MIN 8
#define EV_MAX(t) (EV_MIN + type_fields[t] + 3)

/* Decode; on error the output must be all zero (nothing to release). */
static int decode_rc(const void *msg, size_t len, const nsc_dec_limits *lim)
{
    nsc_batch b, zero;
    memset(&b, 0xa5, sizeof b);
    memset(&zero, 0, sizeof zero);
    int rc = nsc_batch_decode(msg, len, lim, &b);
    if (rc != NSC_WIRE_OK)
        cr_assert(memcmp(&b, &zero, sizeof b) == 0, "output not zeroed after %s", nsc_wire_strerror(rc));
    nsc_batch_release(&b);
    return rc;
}

#define expect_rc(msg, len, lim, want)                                                 \
    do {                                                                              \
        int rc_ = decode_rc(msg, len, lim);                                           \
        cr_assert_eq(rc_, want, "%s:%d: got %d (%s), want %d (%s)", __FILE__, __LINE__, \
                     rc_, nsc_wire_strerror(rc_), want, nsc_wire_strerror(want));     \
    } while (0)

static void decode_ok(const void *msg, size_t len, nsc_batch *b)
{
    int rc = nsc_batch_decode(msg, len, NULL, b);
    cr_assert_eq(rc, NSC_WIRE_OK, "decode: %s", nsc_wire_strerror(rc));
}

#define EQ(f) cr_assert_eq(a->f, b->f, "type %u: " #f " differs", (unsigned)a->type)

static void assert_event_eq(const nsc_event *a, const nsc_event *b)
{
    EQ(type); EQ(id); EQ(parent); EQ(start_ns); EQ(stop_ns); EQ(tid); EQ(rank); EQ(ctx);
    EQ(flags); EQ(origin_pid); EQ(origin_parent); EQ(origin_ctx);
    EQ(d.group_api.depth);
    EQ(d.coll_api.func); EQ(d.coll_api.datatype); EQ(d.coll_api.root); EQ(d.coll_api.count);
    EQ(d.coll_api.stream); EQ(d.coll_api.user_tag);
    EQ(d.kernel_launch.stream);
    EQ(d.coll.seq); EQ(d.coll.count); EQ(d.coll.user_tag); EQ(d.coll.traffic_bytes);
    EQ(d.coll.parent_group); EQ(d.coll.root); EQ(d.coll.func); EQ(d.coll.datatype);
    EQ(d.coll.algo); EQ(d.coll.proto); EQ(d.coll.kernel_variant); EQ(d.coll.nchannels);
    EQ(d.coll.nwarps); EQ(d.coll.op);
    EQ(d.p2p.count); EQ(d.p2p.user_tag); EQ(d.p2p.parent_group); EQ(d.p2p.peer);
    EQ(d.p2p.func); EQ(d.p2p.datatype); EQ(d.p2p.nchannels);
    EQ(d.proxy_op.peer); EQ(d.proxy_op.nsteps); EQ(d.proxy_op.chunk_size);
    EQ(d.proxy_op.op_pid); EQ(d.proxy_op.channel); EQ(d.proxy_op.is_send);
    EQ(d.proxy_step.step);
    EQ(d.kernel_ch.ptimer_start); EQ(d.kernel_ch.ptimer_stop); EQ(d.kernel_ch.ptimer_stop_ns);
    EQ(d.kernel_ch.channel);
    EQ(d.net_plugin.plugin_id); EQ(d.net_plugin.data);
    EQ(d.ce_coll.seq); EQ(d.ce_coll.count); EQ(d.ce_coll.stream); EQ(d.ce_coll.user_tag);
    EQ(d.ce_coll.root); EQ(d.ce_coll.batch_size); EQ(d.ce_coll.num_batches);
    EQ(d.ce_coll.ce_seq); EQ(d.ce_coll.func); EQ(d.ce_coll.datatype);
    EQ(d.ce_coll.sync_strategy); EQ(d.ce_coll.intra_batch_sync);
    EQ(d.ce_sync.nranks); EQ(d.ce_sync.is_complete);
    EQ(d.ce_batch.total_bytes); EQ(d.ce_batch.num_ops); EQ(d.ce_batch.use_intra_sync);
    EQ(d.kernel_phase.ptimer); EQ(d.kernel_phase.phase_name); EQ(d.kernel_phase.channel);
    EQ(d.kernel_phase.phase_id);
}
#undef EQ

static void assert_state_eq(const nsc_state_rec *a, const nsc_state_rec *b)
{
    cr_assert_eq(a->id, b->id);
    cr_assert_eq(a->ts_ns, b->ts_ns);
    cr_assert_eq(a->arg, b->arg);
    cr_assert_eq(a->tid, b->tid);
    cr_assert_eq(a->state, b->state);
}

static void assert_hdr_eq(const nsc_batch_hdr *a, const nsc_batch_hdr *b)
{
    cr_assert_eq(a->version, NSC_WIRE_VERSION);
    cr_assert_eq(a->seq, b->seq);
    cr_assert_eq(a->stream, b->stream);
    cr_assert_eq(a->acked, b->acked);
    cr_assert_eq(a->base_ns, b->base_ns);
    cr_assert_eq(a->sent_ns, b->sent_ns);
    cr_assert_eq(a->clock_err_ns, b->clock_err_ns);
    cr_assert_eq(a->proc.pid, b->proc.pid);
    cr_assert_eq(a->proc.local_rank, b->proc.local_rank);
    cr_assert_eq(a->proc.gpu, b->proc.gpu);
    cr_assert_str_eq(a->proc.job, b->proc.job);
    cr_assert_str_eq(a->proc.host, b->proc.host);
}

/* ---- round trips ---------------------------------------------------------- */

Test(wire, every_event_type_round_trips)
{
    nsc_batch_hdr h;
    nsc_enc e;
    nsc_event sent[2 * NSC_T_COUNT];
    sample_hdr(&h);
    cr_assert_eq(nsc_enc_begin(&e, buf, CAP, &h), 0);
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        sample_event(&sent[2 * t], t, 1000 + 2 * t, &h);
        sent[2 * t + 1] = sent[2 * t];
        sample_make_foreign(&sent[2 * t + 1], &h);
        sent[2 * t + 1].id++;
        cr_assert_eq(nsc_enc_event(&e, &sent[2 * t]), 0);
        cr_assert_eq(nsc_enc_event(&e, &sent[2 * t + 1]), 0);
    }
    nsc_batch b;
    decode_ok(buf, nsc_enc_finish(&e), &b);
    assert_hdr_eq(&b.hdr, &h);
    cr_assert_eq(b.nevents, 2 * NSC_T_COUNT);
    cr_assert_eq(b.nstates + b.ncompletions + b.nstrs + b.nctxs, 0);
    cr_assert_eq(b.has_counters, 0);
    for (unsigned i = 0; i < b.nevents; i++)
        assert_event_eq(&b.events[i], &sent[i]);
    nsc_batch_release(&b);
    cr_assert_null(b.mem);
}

Test(wire, every_state_round_trips)
{
    nsc_batch_hdr h;
    nsc_enc e;
    nsc_state_rec sent[NSC_S_COUNT + 1];
    sample_hdr(&h);
    cr_assert_eq(nsc_enc_begin(&e, buf, CAP, &h), 0);
    for (unsigned s = 0; s < NSC_S_COUNT; s++)
        sample_state(&sent[s], s, 500 - 7 * s, &h);
    sample_state(&sent[NSC_S_COUNT], 9, 1, &h);
    sent[NSC_S_COUNT].arg = 0;  /* trailing optional field omitted */
    for (unsigned s = 0; s <= NSC_S_COUNT; s++)
        cr_assert_eq(nsc_enc_state(&e, &sent[s]), 0);
    nsc_batch b;
    decode_ok(buf, nsc_enc_finish(&e), &b);
    cr_assert_eq(b.nstates, NSC_S_COUNT + 1);
    for (unsigned s = 0; s <= NSC_S_COUNT; s++)
        assert_state_eq(&b.states[s], &sent[s]);
    nsc_batch_release(&b);
}

Test(wire, completions_strings_contexts_counters_round_trip)
{
    nsc_batch_hdr h;
    nsc_enc e;
    sample_hdr(&h);
    cr_assert_eq(nsc_enc_begin(&e, buf, CAP, &h), 0);
    nsc_str_def strs[3];
    sample_str(&strs[0], 1);
    sample_str(&strs[1], UINT16_MAX);
    sample_str(&strs[2], 77);
    memset(strs[2].text, 'x', 63);  /* the longest text that fits */
    nsc_ctx_def ctxs[2];
    sample_ctx(&ctxs[0], 0);
    sample_ctx(&ctxs[1], NSC_CTX_NONE - 1);
    ctxs[1].name[0] = '\0';  /* optional trailing name omitted */
    ctxs[1].comm_id = UINT64_MAX;
    ctxs[1].nnodes = INT32_MIN;
    nsc_completion done[2] = {{.id = 5, .ts_ns = h.base_ns + 1}, {.id = UINT64_MAX, .ts_ns = 1}};
    nsc_counters cn;
    sample_counters(&cn);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(nsc_enc_str(&e, &strs[i]), 0);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(nsc_enc_ctx(&e, &ctxs[i]), 0);
        cr_assert_eq(nsc_enc_completion(&e, &done[i]), 0);
    }
    cr_assert_eq(nsc_enc_counters(&e, &cn), 0);

    nsc_batch b;
    decode_ok(buf, nsc_enc_finish(&e), &b);
    cr_assert_eq(b.nstrs, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(b.strs[i].id, strs[i].id);
        cr_assert_str_eq(b.strs[i].text, strs[i].text);
    }
    cr_assert_eq(b.nctxs, 2);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(b.ctxs[i].comm_id, ctxs[i].comm_id);
        cr_assert_eq(b.ctxs[i].index, ctxs[i].index);
        cr_assert_eq(b.ctxs[i].nnodes, ctxs[i].nnodes);
        cr_assert_eq(b.ctxs[i].nranks, ctxs[i].nranks);
        cr_assert_eq(b.ctxs[i].rank, ctxs[i].rank);
        cr_assert_eq(b.ctxs[i].api_version, ctxs[i].api_version);
        cr_assert_str_eq(b.ctxs[i].name, ctxs[i].name);
    }
    cr_assert_eq(b.ncompletions, 2);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(b.completions[i].id, done[i].id);
        cr_assert_eq(b.completions[i].ts_ns, done[i].ts_ns);
    }
    cr_assert_eq(b.has_counters, 1);
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        cr_assert_eq(b.counters.emitted[t], cn.emitted[t]);
        cr_assert_eq(b.counters.dropped[t], cn.dropped[t]);
        cr_assert_eq(b.counters.completions_emitted[t], cn.completions_emitted[t]);
        cr_assert_eq(b.counters.completions_dropped[t], cn.completions_dropped[t]);
    }
    cr_assert_eq(b.counters.states_emitted, cn.states_emitted);
    cr_assert_eq(b.counters.states_dropped, cn.states_dropped);
    cr_assert_eq(b.counters.bad_handles, cn.bad_handles);
    cr_assert_eq(b.counters.cost_ns, cn.cost_ns);
    cr_assert_eq(b.counters.coll_ns, cn.coll_ns);
    cr_assert_eq(b.counters.shed_mask, cn.shed_mask);
    cr_assert_eq(b.counters.shed_changes, cn.shed_changes);
    cr_assert_eq(b.counters.shed_events, cn.shed_events);
    nsc_batch_release(&b);
}

/* The guard's fields close the counters record and are left out while zero:
 * a plugin without a guard sends the 7 fields an older receiver reads, and a
 * record of 7 decodes with the guard's fields zero. */
Test(wire, counters_without_the_guard_keep_the_old_arity)
{
    nsc_enc e;
    nsc_batch_hdr hdr = {.version = NSC_WIRE_VERSION, .seq = 1, .proc = {.pid = 7}};
    nsc_counters cn;
    sample_counters(&cn);
    cn.cost_ns = cn.coll_ns = cn.shed_mask = cn.shed_changes = cn.shed_events = 0;
    cr_assert_eq(nsc_enc_begin(&e, buf, CAP, &hdr), 0);
    cr_assert_eq(nsc_enc_counters(&e, &cn), 0);
    size_t len = nsc_enc_finish(&e);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    cr_assert_eq(msgpack_unpack_next(&u, (const char *)buf, len, NULL), MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *recs = &u.data.via.array.ptr[1];
    cr_assert_eq(recs->via.array.size, 1);
    cr_assert_eq(recs->via.array.ptr[0].via.array.size, 1 + 7, "tag and the 7 old fields");
    msgpack_unpacked_destroy(&u);
    nsc_batch b;
    cr_assert_eq(nsc_batch_decode(buf, len, NULL, &b), 0);
    cr_assert_eq(b.counters.bad_handles, cn.bad_handles);
    cr_assert_eq(b.counters.cost_ns, 0);
    cr_assert_eq(b.counters.shed_mask, 0);
    nsc_batch_release(&b);
}

Test(wire, header_fields_round_trip)
{
    nsc_batch_hdr h;
    nsc_enc e;
    nsc_batch b;
    sample_hdr(&h);
    size_t len = (nsc_enc_begin(&e, buf, CAP, &h), nsc_enc_finish(&e));
    decode_ok(buf, len, &b);
    assert_hdr_eq(&b.hdr, &h);
    cr_assert_eq(b.nevents, 0);
    cr_assert_null(b.mem);
    nsc_batch_release(&b);

    h.seq = UINT64_MAX;
    h.base_ns = 0;
    h.sent_ns = UINT64_MAX;
    h.proc.pid = UINT32_MAX;
    h.proc.local_rank = -1;
    h.proc.gpu = INT32_MIN;
    h.proc.job[0] = '\0';
    memset(h.proc.host, 'h', 63);
    h.proc.host[63] = '\0';
    len = (nsc_enc_begin(&e, buf, CAP, &h), nsc_enc_finish(&e));
    decode_ok(buf, len, &b);
    assert_hdr_eq(&b.hdr, &h);
    nsc_batch_release(&b);
}

/* clock_err_ns is newer than the first decoders: a sender with an exact
 * clock leaves it out, so its batches are byte for byte what they were. */
Test(wire, clock_err_is_sent_only_when_not_zero)
{
    nsc_batch_hdr h;
    nsc_enc e;
    nsc_batch b;
    sample_hdr(&h);
    h.clock_err_ns = 0;
    size_t without = (nsc_enc_begin(&e, buf, CAP, &h), nsc_enc_finish(&e));
    cr_assert_null(memmem(buf, without, "clock_err_ns", 12));
    decode_ok(buf, without, &b);
    assert_hdr_eq(&b.hdr, &h);
    nsc_batch_release(&b);

    h.clock_err_ns = UINT64_MAX;
    size_t with = (nsc_enc_begin(&e, buf, CAP, &h), nsc_enc_finish(&e));
    cr_assert_eq(with, without + 1 + 12 + 9, "the key and a uint64");
    decode_ok(buf, with, &b);
    assert_hdr_eq(&b.hdr, &h);
    nsc_batch_release(&b);
}

/* A resend rewrites "acked" in the bytes of a batch encoded earlier: every
 * other field, and the records, stay as they were. */
Test(wire, set_acked_rewrites_only_acked)
{
    nsc_batch_hdr h;
    nsc_enc e;
    nsc_batch b;
    nsc_event ev;
    sample_hdr(&h);
    for (int i = 0; i < 2; i++) {
        h.acked = i ? UINT64_MAX : 0;  /* the widths a min-width writer would change */
        nsc_enc_begin(&e, buf, CAP, &h);
        sample_event(&ev, NSC_T_COLL, 1, &h);
        cr_assert_eq(nsc_enc_event(&e, &ev), NSC_WIRE_OK);
        size_t len = nsc_enc_finish(&e);
        nsc_wire_set_acked(buf, 77);
        decode_ok(buf, len, &b);
        h.acked = 77;
        assert_hdr_eq(&b.hdr, &h);
        cr_assert_eq(b.nevents, 1);
        assert_event_eq(&b.events[0], &ev);
        nsc_batch_release(&b);
    }
}

Test(wire, ack_round_trips)
{
    nsc_ack a = {.stream = 0x0102030405060708ull, .next = UINT64_MAX, .instance = 42, .kind = NSC_ACK_RESEND}, d;
    uint8_t msg[NSC_ACK_LEN];
    nsc_ack_encode(&a, msg);
    cr_assert_eq(msg[0], 0x01, "the stream leads, big-endian: the subscription prefix");
    cr_assert_eq(msg[7], 0x08);
    cr_assert_eq(nsc_ack_decode(msg, sizeof msg, &d), NSC_WIRE_OK);
    cr_assert(d.stream == a.stream && d.next == a.next && d.instance == a.instance && d.kind == a.kind);
}

Test(wire, malformed_acks_are_rejected)
{
    nsc_ack a = {.stream = 9, .next = 1, .instance = 2, .kind = NSC_ACK_STORED}, d = {0};
    uint8_t msg[NSC_ACK_LEN + 1] = {0};
    nsc_ack_encode(&a, msg);
    cr_assert_eq(nsc_ack_decode(msg, 0, &d), NSC_WIRE_TRUNCATED);
    cr_assert_eq(nsc_ack_decode(msg, NSC_ACK_LEN - 1, &d), NSC_WIRE_TRUNCATED);
    cr_assert_eq(nsc_ack_decode(msg, NSC_ACK_LEN + 1, &d), NSC_WIRE_TRAILING);
    msg[NSC_ACK_LEN - 1] = NSC_ACK_RESEND + 1;
    cr_assert_eq(nsc_ack_decode(msg, NSC_ACK_LEN, &d), NSC_WIRE_BAD_VALUE, "unknown kind");
    nsc_ack_encode(&(nsc_ack){.stream = 0, .next = 1}, msg);
    cr_assert_eq(nsc_ack_decode(msg, NSC_ACK_LEN, &d), NSC_WIRE_BAD_VALUE, "stream 0 names no stream");
    cr_assert_eq(d.stream, 0, "nothing is written on an error");
}

Test(wire, deltas_round_trip_at_the_extremes)
{
    nsc_batch_hdr h;
    nsc_enc e;
    sample_hdr(&h);
    h.proc.pid = UINT32_MAX;
    nsc_event ev[4];
    sample_event(&ev[0], NSC_T_COLL, UINT64_MAX, &h);
    ev[0].parent = 1;
    ev[0].d.coll.parent_group = UINT64_MAX - 1;
    ev[0].start_ns = 0;  /* before base_ns */
    ev[0].stop_ns = UINT64_MAX;
    ev[0].tid = 0;
    sample_event(&ev[1], NSC_T_P2P, 0, &h);
    ev[1].parent = UINT64_MAX;
    ev[1].stop_ns = ev[1].start_ns - 5;  /* stop before start still round-trips */
    sample_make_foreign(&ev[1], &h);
    ev[1].origin_pid = 0;
    ev[1].origin_ctx = UINT64_MAX;
    sample_event(&ev[2], NSC_T_PROXY_OP, 1ull << 63, &h);
    ev[2].parent = 0;  /* absent */
    ev[2].d.proxy_op.op_pid = 0;
    ev[2].rank = INT32_MIN;
    sample_event(&ev[3], NSC_T_GROUP, 7, &h);
    ev[3].parent = 7;  /* delta 0, distinct from absent */
    ev[3].flags = 0;
    ev[3].ctx = NSC_CTX_NONE;
    cr_assert_eq(nsc_enc_begin(&e, buf, CAP, &h), 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(nsc_enc_event(&e, &ev[i]), 0);
    nsc_batch b;
    decode_ok(buf, nsc_enc_finish(&e), &b);
    cr_assert_eq(b.nevents, 4);
    for (int i = 0; i < 4; i++)
        assert_event_eq(&b.events[i], &ev[i]);
    nsc_batch_release(&b);
}

Test(wire, records_keep_order_and_the_last_counters_win)
{
    nsc_batch_hdr h;
    nsc_enc e;
    sample_hdr(&h);
    cr_assert_eq(nsc_enc_begin(&e, buf, CAP, &h), 0);
    nsc_counters first, last;
    sample_counters(&first);
    sample_counters(&last);
    last.bad_handles = 99;
    nsc_event ev;
    nsc_state_rec st;
    for (unsigned i = 0; i < 10; i++) {
        sample_event(&ev, i % 2 ? NSC_T_PROXY_STEP : NSC_T_KERNEL_CH, 10 * i, &h);
        sample_state(&st, i, 10 * i + 1, &h);
        cr_assert_eq(nsc_enc_event(&e, &ev), 0);
        cr_assert_eq(nsc_enc_state(&e, &st), 0);
        if (i == 2)
            cr_assert_eq(nsc_enc_counters(&e, &first), 0);
    }
    cr_assert_eq(nsc_enc_counters(&e, &last), 0);
    cr_assert_eq(e.nrecords, 22);
    nsc_batch b;
    decode_ok(buf, nsc_enc_finish(&e), &b);
    cr_assert_eq(b.nevents, 10);
    cr_assert_eq(b.nstates, 10);
    for (unsigned i = 0; i < 10; i++) {
        cr_assert_eq(b.events[i].id, 10 * i);
        cr_assert_eq(b.states[i].id, 10 * i + 1);
        cr_assert_eq(b.states[i].state, i);
    }
    cr_assert_eq(b.counters.bad_handles, 99);
    nsc_batch_release(&b);
}

/* A Coll with realistic values (seq ~1e6, 32 Mi elements, 1e13 ns base,
 * microsecond duration) stays within the 40-byte budget. */
Test(wire, realistic_coll_is_compact)
{
    nsc_batch_hdr h;
    nsc_enc e;
    sample_hdr(&h);
    cr_assert_eq(nsc_enc_begin(&e, buf, CAP, &h), 0);
    nsc_event ev = {.type = NSC_T_COLL, .id = 41, .parent = 40, .tid = h.proc.pid, .ctx = 1,
                    .rank = 5};
    ev.start_ns = h.base_ns + 3000000;
    ev.stop_ns = ev.start_ns + 8500;
    ev.d.coll.seq = 1000000;
    ev.d.coll.count = 33554432;
    ev.d.coll.parent_group = 38;
    ev.d.coll.func = 1;
    ev.d.coll.datatype = 2;
    ev.d.coll.algo = 3;
    ev.d.coll.proto = 4;
    ev.d.coll.nchannels = 16;
    ev.d.coll.nwarps = 16;
    ev.d.coll.kernel_variant = 5;
    cr_assert_eq(nsc_enc_event(&e, &ev), 0);
    size_t before = e.len;
    ev.id = 60;
    ev.parent = 59;
    cr_assert_eq(nsc_enc_event(&e, &ev), 0);
    cr_assert_leq(e.len - before, 40, "a realistic Coll took %zu bytes", e.len - before);
}

/* ---- an independent reading with msgpack-c -------------------------------- */

static const msgpack_object *map_get(const msgpack_object *map, const char *key)
{
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[i];
        if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == strlen(key) &&
            memcmp(kv->key.via.str.ptr, key, strlen(key)) == 0)
            return &kv->val;
    }
    return NULL;
}

static void assert_uint_obj(const msgpack_object *o, uint64_t v)
{
    cr_assert_not_null(o);
    cr_assert_eq(o->type, MSGPACK_OBJECT_POSITIVE_INTEGER);
    cr_assert_eq(o->via.u64, v);
}

Test(wire, output_is_standard_msgpack)
{
    nsc_batch_hdr h;
    nsc_enc e;
    sample_hdr(&h);
    cr_assert_eq(nsc_enc_begin(&e, buf, CAP, &h), 0);
    nsc_str_def s;
    sample_str(&s, 3);
    nsc_event ev;
    sample_event(&ev, NSC_T_COLL, 1000, &h);
    ev.parent = 0;
    nsc_state_rec st;
    sample_state(&st, NSC_S_PROXY_STEP_SEND_WAIT, 1002, &h);
    cr_assert_eq(nsc_enc_str(&e, &s), 0);
    cr_assert_eq(nsc_enc_event(&e, &ev), 0);
    cr_assert_eq(nsc_enc_state(&e, &st), 0);
    size_t len = nsc_enc_finish(&e), off = 0;

    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    cr_assert_eq(msgpack_unpack_next(&u, (const char *)buf, len, &off), MSGPACK_UNPACK_SUCCESS);
    cr_assert_eq(off, len, "msgpack-c read %zu of %zu bytes", off, len);
    const msgpack_object *root = &u.data;
    cr_assert_eq(root->type, MSGPACK_OBJECT_ARRAY);
    cr_assert_eq(root->via.array.size, 2);

    const msgpack_object *hdr = &root->via.array.ptr[0];
    cr_assert_eq(hdr->type, MSGPACK_OBJECT_MAP);
    cr_assert_str_eq(hdr->via.map.ptr[0].key.via.str.size == 1 ? "v" : "?", "v");
    assert_uint_obj(map_get(hdr, "v"), NSC_WIRE_VERSION);
    assert_uint_obj(map_get(hdr, "seq"), h.seq);
    assert_uint_obj(map_get(hdr, "base_ns"), h.base_ns);
    assert_uint_obj(map_get(hdr, "sent_ns"), h.sent_ns);
    assert_uint_obj(map_get(hdr, "pid"), h.proc.pid);
    assert_uint_obj(map_get(hdr, "local_rank"), 3);
    assert_uint_obj(map_get(hdr, "gpu"), 7);
    const msgpack_object *job = map_get(hdr, "job");
    cr_assert_eq(job->type, MSGPACK_OBJECT_STR);
    cr_assert_eq(job->via.str.size, strlen(h.proc.job));
    cr_assert(memcmp(job->via.str.ptr, h.proc.job, job->via.str.size) == 0);

    const msgpack_object *recs = &root->via.array.ptr[1];
    cr_assert_eq(recs->type, MSGPACK_OBJECT_ARRAY);
    cr_assert_eq(recs->via.array.size, 3);
    const msgpack_object *str = recs->via.array.ptr[0].via.array.ptr;
    assert_uint_obj(&str[0], NSC_WIRE_TAG_STR);
    assert_uint_obj(&str[1], 3);
    cr_assert_eq(str[2].type, MSGPACK_OBJECT_STR);

    const msgpack_object_array *coll = &recs->via.array.ptr[1].via.array;
    cr_assert_eq(coll->size, 1 + EV_MIN + type_fields[NSC_T_COLL]);  /* no origin fields */
    assert_uint_obj(&coll->ptr[0], NSC_T_COLL);
    assert_uint_obj(&coll->ptr[1], 2000);                   /* zigzag(1000 - 0) */
    cr_assert_eq(coll->ptr[2].type, MSGPACK_OBJECT_NIL);    /* no parent */
    assert_uint_obj(&coll->ptr[3], 2 * (ev.start_ns - h.base_ns));
    assert_uint_obj(&coll->ptr[4], 2 * (ev.stop_ns - ev.start_ns));
    assert_uint_obj(&coll->ptr[5], 2 * (ev.tid - h.proc.pid));
    assert_uint_obj(&coll->ptr[6], ev.ctx);
    cr_assert_eq(coll->ptr[7].type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
    cr_assert_eq(coll->ptr[7].via.i64, ev.rank);
    assert_uint_obj(&coll->ptr[8], ev.flags);
    assert_uint_obj(&coll->ptr[9], ev.d.coll.seq);
    assert_uint_obj(&coll->ptr[10], ev.d.coll.count);
    cr_assert_eq(coll->ptr[11].via.i64, ev.d.coll.root);
    assert_uint_obj(&coll->ptr[12], ev.d.coll.func);
    assert_uint_obj(&coll->ptr[19], ev.d.coll.kernel_variant);
    assert_uint_obj(&coll->ptr[20], UINT64_MAX);            /* user_tag */
    assert_uint_obj(&coll->ptr[22], ev.d.coll.traffic_bytes);

    const msgpack_object_array *state = &recs->via.array.ptr[2].via.array;
    cr_assert_eq(state->size, 6);
    assert_uint_obj(&state->ptr[0], NSC_WIRE_TAG_STATE);
    assert_uint_obj(&state->ptr[1], 4);                     /* zigzag(1002 - 1000) */
    assert_uint_obj(&state->ptr[3], NSC_S_PROXY_STEP_SEND_WAIT);
    assert_uint_obj(&state->ptr[5], st.arg);
    msgpack_unpacked_destroy(&u);
}

/* ---- malformed input ------------------------------------------------------ */

typedef struct packed {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} packed;

static void pk_init(packed *p)
{
    msgpack_sbuffer_init(&p->sb);
    msgpack_packer_init(&p->pk, &p->sb, msgpack_sbuffer_write);
}

static void pk_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

enum { HK_V, HK_SEQ, HK_BASE, HK_SENT, HK_CLOCK_ERR, HK_PID, HK_JOB, HK_HOST, HK_LRANK, HK_GPU, HK_N };
static const char *const hkeys[HK_N] = {"v", "seq", "base_ns", "sent_ns", "clock_err_ns", "pid",
                                        "job", "host", "local_rank", "gpu"};

/* A header with every key but `omit`, key `bad` holding a wrong-typed value. */
static void pk_header(msgpack_packer *pk, int omit, int bad)
{
    msgpack_pack_map(pk, omit >= 0 ? HK_N - 1 : HK_N);
    for (int k = 0; k < HK_N; k++) {
        if (k == omit)
            continue;
        pk_str(pk, hkeys[k]);
        if (k == bad) {
            if (k == HK_JOB || k == HK_HOST)
                msgpack_pack_int(pk, 5);
            else
                pk_str(pk, "1");
            continue;
        }
        switch (k) {
        case HK_V: msgpack_pack_uint64(pk, NSC_WIRE_VERSION); break;
        case HK_PID: msgpack_pack_uint64(pk, 1000); break;
        case HK_JOB: pk_str(pk, "j"); break;
        case HK_HOST: pk_str(pk, "h"); break;
        case HK_LRANK: msgpack_pack_int(pk, -1); break;
        default: msgpack_pack_uint64(pk, 7 + (uint64_t)k); break;
        }
    }
}

static void pk_batch_begin(packed *p, uint32_t nrecords)
{
    pk_init(p);
    msgpack_pack_array(&p->pk, 2);
    pk_header(&p->pk, -1, -1);
    msgpack_pack_array(&p->pk, nrecords);
}

/* A record of nfields fields after the tag, each the integer 1 (valid for
 * every event, state and completion field), but field `bad` (1-based) a str. */
static void pk_ones_record(msgpack_packer *pk, unsigned tag, unsigned nfields, unsigned bad)
{
    msgpack_pack_array(pk, 1 + nfields);
    msgpack_pack_uint64(pk, tag);
    for (unsigned i = 1; i <= nfields; i++)
        if (i == bad)
            pk_str(pk, "x");
        else
            msgpack_pack_uint64(pk, 1);
}

#define expect_packed(p, want)                         \
    do {                                               \
        expect_rc((p)->sb.data, (p)->sb.size, NULL, want); \
        msgpack_sbuffer_destroy(&(p)->sb);             \
    } while (0)

/* One record in an otherwise valid batch. */
static void expect_one_record(unsigned tag, unsigned nfields, unsigned bad, int want)
{
    packed p;
    pk_batch_begin(&p, 1);
    pk_ones_record(&p.pk, tag, nfields, bad);
    expect_packed(&p, want);
}

Test(wire, empty_and_too_large)
{
    expect_rc(buf, 0, NULL, NSC_WIRE_EMPTY);
    expect_rc(NULL, 0, NULL, NSC_WIRE_EMPTY);
    size_t len = sample_batch(buf, CAP);
    cr_assert_gt(len, 0);
    nsc_dec_limits lim = {.max_msg = len - 1};
    expect_rc(buf, len, &lim, NSC_WIRE_TOO_LARGE);
    lim.max_msg = len;
    expect_rc(buf, len, &lim, NSC_WIRE_OK);
    expect_rc(buf, (size_t)NSC_WIRE_MAX_MSG + 1, NULL, NSC_WIRE_TOO_LARGE);
}

Test(wire, every_prefix_is_truncated)
{
    size_t len = sample_batch(buf, CAP);
    cr_assert_gt(len, 1000);
    expect_rc(buf, len, NULL, NSC_WIRE_OK);
    for (size_t n = 1; n < len; n++) {
        int rc = decode_rc(buf, n, NULL);
        cr_assert_eq(rc, NSC_WIRE_TRUNCATED, "prefix %zu of %zu: %s", n, len, nsc_wire_strerror(rc));
    }
}

Test(wire, trailing_bytes)
{
    size_t len = sample_batch(buf, CAP);
    buf[len] = 0xc0;
    expect_rc(buf, len + 1, NULL, NSC_WIRE_TRAILING);
}

Test(wire, huge_declared_lengths)
{
    static const uint8_t array32[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
    expect_rc(array32, sizeof array32, NULL, NSC_WIRE_TOO_MANY);
    static const uint8_t map32[] = {0x92, 0xdf, 0xff, 0xff, 0xff, 0xff};
    expect_rc(map32, sizeof map32, NULL, NSC_WIRE_TOO_MANY);
    static const uint8_t key_str32[] = {0x92, 0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 'v'};
    expect_rc(key_str32, sizeof key_str32, NULL, NSC_WIRE_TOO_MANY);
    /* under every limit but longer than the message: it ends inside the value */
    static const uint8_t array16[] = {0xdc, 0xff, 0xff, 0x01};
    expect_rc(array16, sizeof array16, NULL, NSC_WIRE_TRUNCATED);

    const uint8_t huge_values[][6] = {
        {0xdb, 0xff, 0xff, 0xff, 0xff},        /* str32 */
        {0xc6, 0xff, 0xff, 0xff, 0xff},        /* bin32 */
        {0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},  /* ext32 */
        {0xdd, 0xff, 0xff, 0xff, 0xff},        /* array32 */
    };
    for (size_t i = 0; i < sizeof huge_values / sizeof huge_values[0]; i++) {
        packed p;  /* an unknown header key holding the value */
        pk_init(&p);
        msgpack_pack_array(&p.pk, 2);
        msgpack_pack_map(&p.pk, 4);
        pk_str(&p.pk, "v");
        msgpack_pack_uint64(&p.pk, 1);
        pk_str(&p.pk, "seq");
        msgpack_pack_uint64(&p.pk, 1);
        pk_str(&p.pk, "pid");
        msgpack_pack_uint64(&p.pk, 1);
        pk_str(&p.pk, "future");
        msgpack_sbuffer_write(&p.sb, (const char *)huge_values[i], 6);
        expect_packed(&p, NSC_WIRE_TOO_MANY);
    }

    packed p;
    pk_batch_begin(&p, UINT32_MAX);
    expect_packed(&p, NSC_WIRE_TOO_MANY);
    nsc_dec_limits lim = {.max_records = 10};
    pk_batch_begin(&p, 11);
    for (int i = 0; i < 11; i++)
        pk_ones_record(&p.pk, NSC_WIRE_TAG_COMPLETION, 2, 0);
    expect_rc(p.sb.data, p.sb.size, &lim, NSC_WIRE_TOO_MANY);
    lim.max_records = 11;
    expect_rc(p.sb.data, p.sb.size, &lim, NSC_WIRE_OK);
    msgpack_sbuffer_destroy(&p.sb);
}

Test(wire, wrong_types_in_every_header_field)
{
    for (int k = 0; k < HK_N; k++) {
        packed p;
        pk_init(&p);
        msgpack_pack_array(&p.pk, 2);
        pk_header(&p.pk, -1, k);
        msgpack_pack_array(&p.pk, 0);
        expect_packed(&p, NSC_WIRE_BAD_TYPE);
    }
    packed p;
    pk_init(&p);  /* a non-string key */
    msgpack_pack_array(&p.pk, 2);
    msgpack_pack_map(&p.pk, 1);
    msgpack_pack_uint64(&p.pk, 1);
    msgpack_pack_uint64(&p.pk, 1);
    msgpack_pack_array(&p.pk, 0);
    expect_packed(&p, NSC_WIRE_BAD_TYPE);

    static const uint8_t not_array[] = {0x81, 0xa1, 'v', 0x01};
    expect_rc(not_array, sizeof not_array, NULL, NSC_WIRE_BAD_TYPE);
    static const uint8_t header_not_map[] = {0x92, 0x90, 0x90};
    expect_rc(header_not_map, sizeof header_not_map, NULL, NSC_WIRE_BAD_TYPE);
    static const uint8_t never_used[] = {0xc1};
    expect_rc(never_used, sizeof never_used, NULL, NSC_WIRE_BAD_TYPE);

    pk_init(&p);  /* records not an array */
    msgpack_pack_array(&p.pk, 2);
    pk_header(&p.pk, -1, -1);
    msgpack_pack_map(&p.pk, 0);
    expect_packed(&p, NSC_WIRE_BAD_TYPE);
    pk_batch_begin(&p, 1);  /* a record not an array */
    msgpack_pack_uint64(&p.pk, 1);
    expect_packed(&p, NSC_WIRE_BAD_TYPE);
}

Test(wire, wrong_types_in_every_record_field)
{
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        expect_one_record(t, EV_MAX(t), 0, NSC_WIRE_OK);
        for (unsigned i = 1; i <= EV_MAX(t); i++)
            expect_one_record(t, EV_MAX(t), i, NSC_WIRE_BAD_TYPE);
    }
    for (unsigned i = 1; i <= 5; i++)
        expect_one_record(NSC_WIRE_TAG_STATE, 5, i, NSC_WIRE_BAD_TYPE);
    for (unsigned i = 1; i <= 2; i++)
        expect_one_record(NSC_WIRE_TAG_COMPLETION, 2, i, NSC_WIRE_BAD_TYPE);
    expect_one_record(NSC_WIRE_TAG_STR, 2, 1, NSC_WIRE_BAD_TYPE);  /* id a str */
    expect_one_record(NSC_WIRE_TAG_STR, 2, 0, NSC_WIRE_BAD_TYPE);  /* text an int */
    expect_one_record(NSC_WIRE_TAG_STR, 2, 2, NSC_WIRE_OK);
    expect_one_record(NSC_WIRE_TAG_CTX, 7, 0, NSC_WIRE_BAD_TYPE);  /* name an int */
    expect_one_record(NSC_WIRE_TAG_COUNTERS, 2, 0, NSC_WIRE_BAD_TYPE);  /* arrays are ints */

    packed p;
    pk_batch_begin(&p, 1);  /* nil where only an integer is allowed */
    msgpack_pack_array(&p.pk, 1 + EV_MIN);
    msgpack_pack_uint64(&p.pk, NSC_T_GROUP);
    msgpack_pack_nil(&p.pk);
    for (unsigned i = 2; i <= EV_MIN; i++)
        msgpack_pack_uint64(&p.pk, 1);
    expect_packed(&p, NSC_WIRE_BAD_TYPE);
}

Test(wire, record_tags_and_arities)
{
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        expect_one_record(t, EV_MIN, 0, NSC_WIRE_OK);
        expect_one_record(t, EV_MIN - 1, 0, NSC_WIRE_BAD_RECORD);
        expect_one_record(t, EV_MAX(t) + 1, 0, NSC_WIRE_BAD_RECORD);
    }
    expect_one_record(NSC_WIRE_TAG_STATE, 4, 0, NSC_WIRE_OK);
    expect_one_record(NSC_WIRE_TAG_STATE, 3, 0, NSC_WIRE_BAD_RECORD);
    expect_one_record(NSC_WIRE_TAG_STATE, 6, 0, NSC_WIRE_BAD_RECORD);
    expect_one_record(NSC_WIRE_TAG_COMPLETION, 1, 0, NSC_WIRE_BAD_RECORD);
    expect_one_record(NSC_WIRE_TAG_COMPLETION, 3, 0, NSC_WIRE_BAD_RECORD);
    expect_one_record(NSC_WIRE_TAG_STR, 1, 0, NSC_WIRE_BAD_RECORD);
    expect_one_record(NSC_WIRE_TAG_CTX, 5, 0, NSC_WIRE_BAD_RECORD);
    expect_one_record(NSC_WIRE_TAG_CTX, 6, 0, NSC_WIRE_OK);  /* name omitted */
    expect_one_record(NSC_WIRE_TAG_COUNTERS, 1, 0, NSC_WIRE_BAD_RECORD);
    expect_one_record(NSC_WIRE_TAG_COUNTERS, 13, 0, NSC_WIRE_BAD_RECORD);  /* 7 + the guard's 5, + 1 */
    for (unsigned tag = NSC_WIRE_TAG_COUNT; tag < 256; tag += 47)
        expect_one_record(tag, EV_MIN, 0, NSC_WIRE_BAD_RECORD);
    expect_one_record(0, 0, 0, NSC_WIRE_BAD_RECORD);  /* no fields at all */

    packed p;
    pk_batch_begin(&p, 1);  /* an empty record */
    msgpack_pack_array(&p.pk, 0);
    expect_packed(&p, NSC_WIRE_BAD_RECORD);
    pk_batch_begin(&p, 1);  /* a negative tag */
    msgpack_pack_array(&p.pk, 2);
    msgpack_pack_int(&p.pk, -1);
    msgpack_pack_int(&p.pk, 1);
    expect_packed(&p, NSC_WIRE_BAD_RECORD);
    pk_batch_begin(&p, 1);  /* a str tag */
    msgpack_pack_array(&p.pk, 2);
    pk_str(&p.pk, "coll");
    msgpack_pack_int(&p.pk, 1);
    expect_packed(&p, NSC_WIRE_BAD_TYPE);
    pk_batch_begin(&p, 1);  /* a counters array of 15 */
    msgpack_pack_array(&p.pk, 3);
    msgpack_pack_uint64(&p.pk, NSC_WIRE_TAG_COUNTERS);
    for (int a = 0; a < 2; a++) {
        msgpack_pack_array(&p.pk, NSC_T_COUNT - (unsigned)a);
        for (unsigned i = 0; i < NSC_T_COUNT - (unsigned)a; i++)
            msgpack_pack_uint64(&p.pk, i);
    }
    expect_packed(&p, NSC_WIRE_BAD_RECORD);
}

/* A batch of one record whose field `at` (1-based) is replaced by `value`. */
static void expect_field_value(unsigned tag, unsigned nfields, unsigned at,
                               void (*value)(msgpack_packer *), int want)
{
    packed p;
    pk_batch_begin(&p, 1);
    msgpack_pack_array(&p.pk, 1 + nfields);
    msgpack_pack_uint64(&p.pk, tag);
    for (unsigned i = 1; i <= nfields; i++)
        if (i == at)
            value(&p.pk);
        else
            msgpack_pack_uint64(&p.pk, 1);
    expect_packed(&p, want);
}

static void v_256(msgpack_packer *pk) { msgpack_pack_uint64(pk, 256); }
static void v_32(msgpack_packer *pk) { msgpack_pack_uint64(pk, 32); }
static void v_31(msgpack_packer *pk) { msgpack_pack_uint64(pk, 31); }
static void v_65536(msgpack_packer *pk) { msgpack_pack_uint64(pk, 65536); }
static void v_2p31(msgpack_packer *pk) { msgpack_pack_uint64(pk, 1ull << 31); }
static void v_m2p31m1(msgpack_packer *pk) { msgpack_pack_int64(pk, -(1ll << 31) - 1); }
static void v_m1(msgpack_packer *pk) { msgpack_pack_int64(pk, -1); }
static void v_2p63(msgpack_packer *pk) { msgpack_pack_uint64(pk, 1ull << 63); }
static void v_2p33(msgpack_packer *pk) { msgpack_pack_uint64(pk, 1ull << 33); }
static void v_text64(msgpack_packer *pk) { pk_str(pk, "0123456789012345678901234567890123456789012345678901234567890123"); }
static void v_text_nul(msgpack_packer *pk) { msgpack_pack_str(pk, 3); msgpack_pack_str_body(pk, "a\0b", 3); }

/* A state record [tag, id, ts, state, tid] with every integer and the record's
 * array written in their widest msgpack form (0xdc array16, 0xcf uint64): the
 * decoder reads fixarrays and fixints by a shorter path, the wide forms by
 * the general readers; both must give the same record and the same checks. */
static int decode_wide_state(uint64_t state, nsc_batch *out)
{
    packed p;
    pk_batch_begin(&p, 1);
    const uint8_t head[] = {0xdc, 0x00, 0x05};
    msgpack_sbuffer_write(&p.sb, (const char *)head, sizeof head);
    const uint64_t v[] = {NSC_WIRE_TAG_STATE, 14, 6, state, 2};  /* id 7, tid pid + 1 */
    for (unsigned i = 0; i < 5; i++) {
        uint8_t b[9] = {0xcf};
        for (int k = 0; k < 8; k++)
            b[1 + k] = (uint8_t)(v[i] >> (56 - 8 * k));
        msgpack_sbuffer_write(&p.sb, (const char *)b, sizeof b);
    }
    int rc = nsc_batch_decode(p.sb.data, p.sb.size, NULL, out);
    msgpack_sbuffer_destroy(&p.sb);
    return rc;
}

Test(wire, wide_encodings_decode_like_fixints)
{
    nsc_batch wide, fix;
    cr_assert_eq(decode_wide_state(NSC_S_COUNT - 1, &wide), NSC_WIRE_OK);
    packed p;
    pk_batch_begin(&p, 1);
    msgpack_pack_array(&p.pk, 5);
    const uint64_t v[] = {NSC_WIRE_TAG_STATE, 14, 6, NSC_S_COUNT - 1, 2};
    for (unsigned i = 0; i < 5; i++)
        msgpack_pack_uint64(&p.pk, v[i]);
    cr_assert_eq(nsc_batch_decode(p.sb.data, p.sb.size, NULL, &fix), NSC_WIRE_OK);
    msgpack_sbuffer_destroy(&p.sb);
    cr_assert_eq(wide.nstates, 1);
    cr_assert_eq(fix.nstates, 1);
    cr_assert_eq(wide.states[0].id, 7);
    cr_assert_eq(wide.states[0].state, NSC_S_COUNT - 1);
    cr_assert_eq(wide.states[0].tid, wide.hdr.proc.pid + 1);
    cr_assert(memcmp(&wide.states[0], &fix.states[0], sizeof wide.states[0]) == 0);
    nsc_batch_release(&wide);
    nsc_batch_release(&fix);
    cr_assert_eq(decode_wide_state(NSC_S_COUNT, &wide), NSC_WIRE_BAD_VALUE);
}

Test(wire, values_out_of_range)
{
    const unsigned state = NSC_WIRE_TAG_STATE;
    expect_field_value(state, 5, 3, v_32, NSC_WIRE_BAD_VALUE);          /* state >= 32 */
    expect_field_value(state, 5, 3, v_31, NSC_WIRE_OK);
    expect_field_value(state, 5, 4, v_2p33, NSC_WIRE_BAD_VALUE);        /* tid beyond uint32 */
    expect_field_value(NSC_T_COLL, 8, 8, v_256, NSC_WIRE_BAD_VALUE);    /* flags */
    expect_field_value(NSC_T_COLL, 8, 6, v_65536, NSC_WIRE_BAD_VALUE);  /* ctx */
    expect_field_value(NSC_T_COLL, 8, 7, v_2p31, NSC_WIRE_BAD_VALUE);   /* rank > INT32_MAX */
    expect_field_value(NSC_T_COLL, 8, 7, v_m2p31m1, NSC_WIRE_BAD_VALUE);
    expect_field_value(NSC_T_COLL, 8, 7, v_m1, NSC_WIRE_OK);
    expect_field_value(NSC_T_COLL, 9, 9, v_m1, NSC_WIRE_BAD_VALUE);     /* seq negative */
    expect_field_value(NSC_T_COLL, 8, 1, v_m1, NSC_WIRE_BAD_VALUE);     /* id negative */
    expect_field_value(NSC_T_NET_PLUGIN, 9, 9, v_2p63, NSC_WIRE_BAD_VALUE);  /* int64 id */
    expect_field_value(NSC_T_COLL, 16, 16, v_256, NSC_WIRE_BAD_VALUE);  /* nwarps */
    expect_field_value(NSC_WIRE_TAG_STR, 2, 2, v_text64, NSC_WIRE_BAD_VALUE);
    expect_field_value(NSC_WIRE_TAG_STR, 2, 2, v_text_nul, NSC_WIRE_BAD_VALUE);
    expect_field_value(NSC_WIRE_TAG_STR, 2, 1, v_65536, NSC_WIRE_BAD_VALUE);

    for (int k = HK_PID; k <= HK_LRANK; k += HK_LRANK - HK_PID) {
        packed p;
        pk_init(&p);
        msgpack_pack_array(&p.pk, 2);
        msgpack_pack_map(&p.pk, 4);
        pk_str(&p.pk, "v");
        msgpack_pack_uint64(&p.pk, 1);
        pk_str(&p.pk, "seq");
        msgpack_pack_uint64(&p.pk, 1);
        pk_str(&p.pk, k == HK_PID ? "job" : "pid");
        if (k == HK_PID)
            v_text64(&p.pk);
        else
            msgpack_pack_uint64(&p.pk, 1ull << 32);
        pk_str(&p.pk, "local_rank");
        v_2p31(&p.pk);
        msgpack_pack_array(&p.pk, 0);
        expect_packed(&p, NSC_WIRE_BAD_VALUE);
    }
}

Test(wire, encoder_rejects_unknown_type_and_state)
{
    nsc_batch_hdr h;
    nsc_enc e;
    sample_hdr(&h);
    cr_assert_eq(nsc_enc_begin(&e, buf, CAP, &h), 0);
    size_t len = e.len;
    nsc_event ev;
    sample_event(&ev, NSC_T_COLL, 1, &h);
    ev.type = NSC_T_COUNT;
    nsc_state_rec st;
    sample_state(&st, 0, 1, &h);
    st.state = NSC_S_COUNT;
    cr_assert_eq(nsc_enc_event(&e, &ev), NSC_WIRE_BAD_VALUE);
    cr_assert_eq(nsc_enc_state(&e, &st), NSC_WIRE_BAD_VALUE);
    cr_assert_eq(e.len, len);
    cr_assert_eq(e.nrecords, 0);
}

static size_t nested_header(uint8_t *out, size_t depth)
{
    size_t n = 0;
    static const uint8_t head[] = {0x92, 0x84, 0xa1, 'v', 0x01, 0xa3, 's', 'e', 'q', 0x00,
                                   0xa3, 'p', 'i', 'd', 0x01, 0xa1, 'x'};
    memcpy(out, head, sizeof head);
    n = sizeof head;
    memset(out + n, 0x91, depth);  /* [[[...[nil]...]]] */
    n += depth;
    out[n++] = 0xc0;
    out[n++] = 0x90;  /* no records */
    return n;
}

Test(wire, deep_nesting)
{
    size_t len = nested_header(buf, 10000);
    expect_rc(buf, len, NULL, NSC_WIRE_TOO_DEEP);
    len = nested_header(buf, NSC_WIRE_MAX_DEPTH - 3);  /* the value sits at depth 3 */
    expect_rc(buf, len, NULL, NSC_WIRE_OK);
    len = nested_header(buf, NSC_WIRE_MAX_DEPTH - 2);
    expect_rc(buf, len, NULL, NSC_WIRE_TOO_DEEP);
}

Test(wire, unknown_header_keys_of_every_type_are_skipped)
{
    static const uint8_t values[] = {
        0xc0, 0xc2, 0xc3, 0x7f, 0xe0, 0xcc, 1, 0xcd, 1, 2, 0xce, 1, 2, 3, 4,
        0xcf, 1, 2, 3, 4, 5, 6, 7, 8, 0xd0, 0x80, 0xd1, 1, 2, 0xd2, 1, 2, 3, 4,
        0xd3, 1, 2, 3, 4, 5, 6, 7, 8, 0xca, 1, 2, 3, 4, 0xcb, 1, 2, 3, 4, 5, 6, 7, 8,
        0xa2, 'h', 'i', 0xd9, 1, 'x', 0xda, 0, 1, 'x', 0xdb, 0, 0, 0, 1, 'x',
        0xc4, 1, 9, 0xc5, 0, 1, 9, 0xc6, 0, 0, 0, 1, 9,
        0xd4, 1, 9, 0xd5, 1, 9, 9, 0xd6, 1, 9, 9, 9, 9, 0xd7, 1, 1, 2, 3, 4, 5, 6, 7, 8,
        0xd8, 1, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8,
        0xc7, 1, 5, 9, 0xc8, 0, 1, 5, 9, 0xc9, 0, 0, 0, 1, 5, 9,
        0x92, 0x81, 0xa1, 'k', 0x90, 0xdc, 0, 1, 0x80, 0xdd, 0, 0, 0, 0,
        0xde, 0, 1, 1, 2, 0xdf, 0, 0, 0, 1, 0xa0, 0xc0};
    /* split values into one header entry each by walking them with msgpack-c */
    size_t off = 0, nvalues = 0, starts[64];
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    while (off < sizeof values) {
        starts[nvalues++] = off;
        cr_assert_eq(msgpack_unpack_next(&u, (const char *)values, sizeof values, &off),
                     MSGPACK_UNPACK_SUCCESS, "value at %zu", starts[nvalues - 1]);
    }
    msgpack_unpacked_destroy(&u);
    starts[nvalues] = sizeof values;

    packed p;
    pk_init(&p);
    msgpack_pack_array(&p.pk, 2);
    msgpack_pack_map(&p.pk, HK_N + nvalues);
    for (size_t i = 0; i < nvalues; i++) {
        char key[16];
        snprintf(key, sizeof key, "x%zu", i);
        pk_str(&p.pk, key);
        msgpack_sbuffer_write(&p.sb, (const char *)values + starts[i], starts[i + 1] - starts[i]);
    }
    for (int k = HK_N - 1; k >= 0; k--) {  /* known keys after the unknown ones, v last */
        pk_str(&p.pk, hkeys[k]);
        if (k == HK_JOB || k == HK_HOST)
            pk_str(&p.pk, hkeys[k]);
        else
            msgpack_pack_int64(&p.pk, k == HK_V ? 1 : k >= HK_LRANK ? -k : k);
    }
    msgpack_pack_array(&p.pk, 0);
    nsc_batch b;
    decode_ok(p.sb.data, p.sb.size, &b);
    cr_assert_eq(nvalues, 34, "%zu values", nvalues);
    cr_assert_eq(b.hdr.version, 1);
    cr_assert_str_eq(b.hdr.proc.job, "job");
    cr_assert_str_eq(b.hdr.proc.host, "host");
    cr_assert_eq(b.hdr.proc.gpu, -HK_GPU);
    cr_assert_eq(b.hdr.proc.local_rank, -HK_LRANK);
    nsc_batch_release(&b);
    msgpack_sbuffer_destroy(&p.sb);
}

Test(wire, versions_and_required_header_fields)
{
    static const uint8_t v2[] = {0x92, 0x83, 0xa1, 'v', 0x02, 0xa3, 's', 'e', 'q', 0x00,
                                 0xa3, 'p', 'i', 'd', 0x01, 0x90};
    expect_rc(v2, sizeof v2, NULL, NSC_WIRE_BAD_VERSION);
    uint8_t v[sizeof v2];
    memcpy(v, v2, sizeof v);
    v[4] = 0x00;
    expect_rc(v, sizeof v, NULL, NSC_WIRE_BAD_VERSION);
    v[4] = 0xff;  /* -1 */
    expect_rc(v, sizeof v, NULL, NSC_WIRE_BAD_VERSION);
    v[4] = 0x01;
    expect_rc(v, sizeof v, NULL, NSC_WIRE_OK);
    v[0] = 0x93;  /* a v1 batch has exactly two elements */
    expect_rc(v, sizeof v, NULL, NSC_WIRE_BAD_RECORD);
    v[0] = 0x91;
    expect_rc(v, sizeof v - 1, NULL, NSC_WIRE_BAD_RECORD);
    static const uint8_t empty_batch[] = {0x90};
    expect_rc(empty_batch, sizeof empty_batch, NULL, NSC_WIRE_BAD_RECORD);
    /* a future batch with more elements is a version error, not a shape error */
    static const uint8_t v9[] = {0x93, 0x81, 0xa1, 'v', 0x09, 0x90, 0x90};
    expect_rc(v9, sizeof v9, NULL, NSC_WIRE_BAD_VERSION);

    const int required[] = {HK_V, HK_SEQ, HK_PID};
    for (int i = 0; i < 3; i++) {
        packed p;
        pk_init(&p);
        msgpack_pack_array(&p.pk, 2);
        pk_header(&p.pk, required[i], -1);
        msgpack_pack_array(&p.pk, 0);
        expect_packed(&p, NSC_WIRE_MISSING);
    }
    for (int k = HK_BASE; k < HK_N; k++) {
        if (k == HK_PID)
            continue;
        packed p;
        pk_init(&p);
        msgpack_pack_array(&p.pk, 2);
        pk_header(&p.pk, k, -1);
        msgpack_pack_array(&p.pk, 0);
        expect_packed(&p, NSC_WIRE_OK);
    }
}

/* ---- encoder -------------------------------------------------------------- */

Test(wire, full_leaves_the_buffer_unchanged_and_the_batch_decodes)
{
    static uint8_t small[700], before[700];
    nsc_batch_hdr h;
    nsc_enc e;
    sample_hdr(&h);
    cr_assert_eq(nsc_enc_begin(&e, small, 40, &h), NSC_WIRE_FULL);
    cr_assert_eq(nsc_enc_finish(&e), 0);

    memset(small, 0x5a, sizeof small);
    cr_assert_eq(nsc_enc_begin(&e, small, sizeof small, &h), 0);
    nsc_event sent[64];
    nsc_enc saved;
    unsigned n = 0;
    int rc;
    for (;;) {
        sample_event(&sent[n], n % NSC_T_COUNT, 10 + 3 * n, &h);
        sample_make_foreign(&sent[n], &h);
        saved = e;
        memcpy(before, small, sizeof small);
        if ((rc = nsc_enc_event(&e, &sent[n])) != 0)
            break;
        n++;
        cr_assert_lt(n, 64);
    }
    cr_assert_eq(rc, NSC_WIRE_FULL);
    cr_assert_gt(n, 3);
    cr_assert(memcmp(before, small, sizeof small) == 0, "FULL changed the buffer");
    cr_assert(saved.len == e.len && saved.nrecords == e.nrecords && saved.last_id == e.last_id,
              "FULL changed the encoder");
    size_t len_at_full = e.len;
    uint32_t nrec = e.nrecords;
    uint64_t last_id = e.last_id;
    nsc_completion done = {.id = 5, .ts_ns = h.base_ns};
    rc = nsc_enc_completion(&e, &done);  /* a small record may still fit */
    cr_assert(rc == NSC_WIRE_OK || rc == NSC_WIRE_FULL);
    if (rc == NSC_WIRE_FULL) {
        cr_assert_eq(e.len, len_at_full);
        cr_assert_eq(e.nrecords, nrec);
    }
    cr_assert_eq(last_id, sent[n - 1].id);

    nsc_batch b;
    decode_ok(small, nsc_enc_finish(&e), &b);
    cr_assert_eq(b.nevents, n);
    cr_assert_eq(b.ncompletions, rc == NSC_WIRE_OK);
    for (unsigned i = 0; i < n; i++)
        assert_event_eq(&b.events[i], &sent[i]);
    if (rc == NSC_WIRE_OK)
        cr_assert_eq(b.completions[0].id, 5);
    nsc_batch_release(&b);
}

Test(wire, strerror_names_every_code)
{
    for (int err = NSC_WIRE_OK; err > -NSC_WIRE_NERR; err--) {
        const char *s = nsc_wire_strerror(err);
        cr_assert(s && *s && strcmp(s, nsc_wire_strerror(1)) != 0, "code %d", err);
        for (int other = err - 1; other > -NSC_WIRE_NERR; other--)
            cr_assert_str_neq(s, nsc_wire_strerror(other));
    }
    cr_assert_str_eq(nsc_wire_strerror(-99), "unknown wire error");
}

/* The reserve keeps room for the counters that end a batch: records fill the
 * rest, the counters still fit, and a reserve larger than the room is refused. */
Test(wire, reserve_is_for_the_counters_only)
{
    static uint8_t buf[4096];
    nsc_batch_hdr h;
    nsc_enc e;
    nsc_counters cn;
    sample_hdr(&h);
    sample_counters(&cn);
    cr_assert_eq(nsc_enc_begin(&e, buf, sizeof buf, &h), 0);
    cr_assert_eq(nsc_enc_reserve(&e, sizeof buf), NSC_WIRE_FULL, "more than is free");
    cr_assert_eq(e.reserve, 0);
    cr_assert_eq(nsc_enc_reserve(&e, NSC_WIRE_REC_MAX), 0);
    nsc_event ev;
    unsigned n = 0;
    for (;; n++) {
        sample_event(&ev, NSC_T_COLL, 10 + n, &h);
        if (nsc_enc_event(&e, &ev) != 0)
            break;
    }
    cr_assert_gt(n, 3);
    cr_assert_leq(e.len, sizeof buf - NSC_WIRE_REC_MAX, "events never touch the reserve");
    cr_assert_eq(nsc_enc_counters(&e, &cn), 0, "the counters use it");
    nsc_batch b;
    decode_ok(buf, nsc_enc_finish(&e), &b);
    cr_assert_eq(b.nevents, n);
    cr_assert_eq(b.has_counters, 1);
    cr_assert_eq(b.counters.completions_dropped[NSC_T_COLL], 2);
    nsc_batch_release(&b);
}
