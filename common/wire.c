/* wire.c: the msgpack batch codec.
 *
 * Owns the byte format of a batch (docs/protocol.md is its reference): a
 * hand-written msgpack writer that encodes records straight into the caller's
 * buffer, and a two-pass decoder with a bounded cursor: the first pass checks
 * the message's structure (every record's array, tag and field count) and
 * counts the records for the decoder's one allocation, the second reads and
 * checks every value into it.
 *
 * Every record is described by a layout: a table of (struct offset, field
 * kind). One table drives the encoder, the counting pass and the filling
 * pass, so the three can never disagree about the format.
 *
 * Over 700 lines because it is one codec, on purpose: the layout tables
 * drive five walkers (the encoder, the decoder's two passes, the
 * scanner and the splicer), and all five run on one field codec (load and
 * store, the delta kinds, the msgpack writer and the bounded reader) that the
 * compiler inlines into each walker's loop, the plugin's and the collector's
 * hottest. Split into files, that shared core (most of this file) would move
 * into a header of inline functions or become calls across files in those
 * loops. The sections below (layouts, writer, encoder, reader, decoder,
 * scanning, splicing, shared primitives) are its map.
 */
#include "wire.h"
#include "grow.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The field codec's readers and store, inlined into the decoder's loops:
 * left out of line, as GCC at -O2 chose, they cost the decode a third of
 * its speed (bench_codec: decode 5.8 -> 8.6 M events/s, the agent's scan
 * 4.3 -> 7.3 M, inlined). */
#define ALWAYS_INLINE __attribute__((always_inline))

/* ---- record layouts ------------------------------------------------------ */

/* How a struct field travels. Delta kinds keep typical values in one to five
 * bytes; every mapping is a bijection on the field's range, so all values
 * round-trip exactly. */
enum field_kind {
    K_U8, K_U16, K_U32, K_U64,  /* unsigned integers */
    K_I32, K_I64,               /* signed integers */
    K_STATE,                    /* uint8_t below NSC_S_COUNT */
    K_ID,    /* uint64: zigzag delta from the previous id in the batch */
    K_REF,   /* uint64 event id: nil when 0, else zigzag delta from this record's id */
    K_TIME,  /* uint64 ns: zigzag delta from the header's base_ns */
    K_DUR,   /* uint64 ns: zigzag delta from the record's last K_TIME */
    K_PID,   /* uint32 pid/tid: zigzag delta from the header's pid */
    K_TEXT,  /* char[64], NUL-terminated: a msgpack str of at most 63 bytes */
    K_U64X16,/* uint64_t[NSC_T_COUNT]: an array of exactly 16 unsigned integers */
    K_FIX64, /* uint64 always sent as 9 bytes (0xcf), so it can be rewritten in place */
    K_STR = K_U16  /* event_fields.h's interned string id */
};

typedef struct field {
    uint16_t off;
    uint8_t kind;
} field;

/* A record's positional fields after its tag; fields past nmin are optional
 * and omitted from the end while zero. */
typedef struct layout {
    const field *f;
    uint8_t nfields, nmin;
    uint16_t size;  /* sizeof the struct the record decodes into */
} layout;

/* Event layouts from event_fields.h: the head's fields lead at their
 * positions, the type's descriptor fields follow at theirs, the origin's
 * come last. */
#define EV(member, kind) {offsetof(nsc_event, member), kind}
#define EV_NCOMMON (0 NSC_FIELDS_HEAD(NSC_ROW_WIRE_COUNT, ~))
#define EV_NORIGIN (0 NSC_FIELDS_ORIGIN(NSC_ROW_WIRE_COUNT, ~))
#define HEAD_ROW(a, kind, m, wire, store, json, nccl) NSC_AT(wire, 0, EV(m, K_##kind))
#define WIRE_ROW(a, kind, m, wire, store, json, nccl) NSC_AT(wire, EV_NCOMMON, EV(a.m, K_##kind))
#define ORIGIN_ROW(ndesc, kind, m, wire, store, json, nccl)                                  \
    NSC_AT(wire, EV_NCOMMON + (ndesc), EV(m, K_##kind))
_Static_assert(NSC_DENSE(0 NSC_FIELDS_HEAD(NSC_ROW_WIRE_BITS, ~), EV_NCOMMON),
               "the head's wire positions are 0..n-1, each once");
_Static_assert(NSC_DENSE(0 NSC_FIELDS_ORIGIN(NSC_ROW_WIRE_BITS, ~),
                         0 NSC_FIELDS_ORIGIN(NSC_ROW_WIRE_COUNT, ~)),
               "the origin's wire positions are 0..n-1, each once");

static const field group_fields[] = {NSC_FIELDS_HEAD(HEAD_ROW, ~) NSC_FIELDS_ORIGIN(ORIGIN_ROW, 0)};

#define TYPE_FIELDS(type, s, list)                                                     \
    enum { nwire_##type = 0 list(NSC_ROW_WIRE_COUNT, ~) };                              \
    _Static_assert(NSC_DENSE(0 list(NSC_ROW_WIRE_BITS, ~), nwire_##type),              \
                   #type ": wire positions are 0..n-1, each once");                     \
    static const field type##_fields[] = {NSC_FIELDS_HEAD(HEAD_ROW, ~) list(WIRE_ROW, d.s) \
                                              NSC_FIELDS_ORIGIN(ORIGIN_ROW, nwire_##type)};
NSC_EVENT_TYPES(TYPE_FIELDS)

#define F(type, member, kind) {offsetof(type, member), kind}
static const field state_fields[] = {
    F(nsc_state_rec, id, K_ID), F(nsc_state_rec, ts_ns, K_TIME),
    F(nsc_state_rec, state, K_STATE), F(nsc_state_rec, tid, K_PID),
    F(nsc_state_rec, arg, K_U64)};
static const field completion_fields[] = {
    F(nsc_completion, id, K_ID), F(nsc_completion, ts_ns, K_TIME)};
static const field str_fields[] = {F(nsc_str_def, id, K_U16), F(nsc_str_def, text, K_TEXT)};
static const field ctx_fields[] = {
    F(nsc_ctx_def, index, K_U16), F(nsc_ctx_def, comm_id, K_U64),
    F(nsc_ctx_def, nnodes, K_I32), F(nsc_ctx_def, nranks, K_I32),
    F(nsc_ctx_def, rank, K_I32), F(nsc_ctx_def, api_version, K_I32),
    F(nsc_ctx_def, name, K_TEXT)};
static const field counters_fields[] = {
    F(nsc_counters, emitted, K_U64X16), F(nsc_counters, dropped, K_U64X16),
    F(nsc_counters, states_emitted, K_U64), F(nsc_counters, states_dropped, K_U64),
    F(nsc_counters, bad_handles, K_U64), F(nsc_counters, completions_emitted, K_U64X16),
    F(nsc_counters, completions_dropped, K_U64X16), F(nsc_counters, cost_ns, K_U64),
    F(nsc_counters, coll_ns, K_U64), F(nsc_counters, shed_mask, K_U64),
    F(nsc_counters, shed_changes, K_U64), F(nsc_counters, shed_events, K_U64),
    F(nsc_counters, chain_errors, K_U64), F(nsc_counters, orphans, K_U64),
    F(nsc_counters, cost_outliers, K_U64)};
/* The counters record sends its first 7 fields; the others travel in the
 * header's "counters" (nsc_batch_hdr). The self-cost guard's five, the first
 * of them, are still read from a record that carries them, as the guard's
 * first plugins sent them. */
enum { COUNTERS_SENT = 7, COUNTERS_READ = 12 };
static const field *const hdr_counter_fields = counters_fields + COUNTERS_SENT;
_Static_assert(sizeof counters_fields / sizeof counters_fields[0] ==
                   COUNTERS_SENT + NSC_WIRE_HDR_COUNTERS,
               "the header's counters end the counters");

#define NFIELDS(a) ((uint8_t)(sizeof(a) / sizeof((a)[0])))
#define EVENT_LAYOUT(a) {a, NFIELDS(a), EV_NCOMMON, sizeof(nsc_event)}

static const layout layouts[NSC_WIRE_TAG_COUNT] = {
    [NSC_T_GROUP] = EVENT_LAYOUT(group_fields),
    [NSC_T_PROXY_CTRL] = EVENT_LAYOUT(group_fields),
#define TYPE_LAYOUT(type, s, list) [type] = EVENT_LAYOUT(type##_fields),
    NSC_EVENT_TYPES(TYPE_LAYOUT)
    [NSC_WIRE_TAG_STATE] = {state_fields, NFIELDS(state_fields), 4, sizeof(nsc_state_rec)},
    [NSC_WIRE_TAG_COMPLETION] = {completion_fields, NFIELDS(completion_fields), 2,
                                 sizeof(nsc_completion)},
    [NSC_WIRE_TAG_STR] = {str_fields, NFIELDS(str_fields), 2, sizeof(nsc_str_def)},
    [NSC_WIRE_TAG_CTX] = {ctx_fields, NFIELDS(ctx_fields), 6, sizeof(nsc_ctx_def)},
    [NSC_WIRE_TAG_COUNTERS] = {counters_fields, COUNTERS_READ, 2, sizeof(nsc_counters)},
};

/* Header keys after "v" (which is always first), in the order they are sent.
 * "acked" comes right after "v" at a fixed width: nsc_wire_set_acked rewrites
 * it in a batch encoded earlier. A key newer than the first release is sent
 * only when not zero, so a batch that does not need it is byte for byte an
 * older sender's. */
typedef struct hdr_key {
    const char *name;
    field f;
    uint8_t newer;
} hdr_key;

#define H(name, member, kind) {name, F(nsc_batch_hdr, member, kind), 0}
#define HNEW(name, member, kind) {name, F(nsc_batch_hdr, member, kind), 1}
static const hdr_key hdr_keys[] = {
    H("acked", acked, K_FIX64), H("stream", stream, K_U64), H("seq", seq, K_U64), H("base_ns", base_ns, K_U64), H("sent_ns", sent_ns, K_U64),
    H("pid", proc.pid, K_U32), H("job", proc.job, K_TEXT), H("host", proc.host, K_TEXT),
    H("local_rank", proc.local_rank, K_I32), H("gpu", proc.gpu, K_I32), H("final", final, K_U8),
    HNEW("clock_err_ns", clock_err_ns, K_U64)};
#define NHDR_KEYS (sizeof hdr_keys / sizeof hdr_keys[0])
enum { HDR_SEQ = 2, HDR_PID = 5 };  /* required keys besides "v" */

#define TEXT_MAX 63  /* char[64] minus its NUL */

/* Delta state shared by the encoder and decoder while walking a batch. */
typedef struct deltas {
    uint64_t base_ns, last_id, cur_id, cur_time;
    uint32_t pid;
} deltas;

static uint64_t zigzag(uint64_t d) { return (d << 1) ^ (0 - (d >> 63)); }
static uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }

/* Scalar fields are loaded as 64-bit values (signed ones sign-extended). */
static inline uint64_t load(const uint8_t *rec, const field *f)
{
    const uint8_t *p = rec + f->off;
    switch (f->kind) {
    case K_U8: case K_STATE: return *p;
    case K_U16: { uint16_t v; memcpy(&v, p, sizeof v); return v; }
    case K_U32: case K_PID: { uint32_t v; memcpy(&v, p, sizeof v); return v; }
    case K_I32: { int32_t v; memcpy(&v, p, sizeof v); return (uint64_t)(int64_t)v; }
    default: { uint64_t v; memcpy(&v, p, sizeof v); return v; }
    }
}

ALWAYS_INLINE static inline void store(uint8_t *rec, const field *f, uint64_t v)
{
    uint8_t *p = rec + f->off;
    switch (f->kind) {
    case K_U8: case K_STATE: *p = (uint8_t)v; break;
    case K_U16: { uint16_t x = (uint16_t)v; memcpy(p, &x, sizeof x); break; }
    case K_U32: case K_PID: { uint32_t x = (uint32_t)v; memcpy(p, &x, sizeof x); break; }
    case K_I32: { int32_t x = (int32_t)(int64_t)v; memcpy(p, &x, sizeof x); break; }
    default: memcpy(p, &v, sizeof v); break;
    }
}

/* ---- msgpack writer: min-width encodings, no bounds checks (callers reserve
 * NSC_WIRE_REC_MAX bytes first) ---------------------------------------------- */

/* v's low n bytes (1 to 8), most significant first: moved to the top of the
 * word, put in memory order and stored at once, not a byte at a time (every
 * value wider than a fixint, several per record, comes here). */
static inline uint8_t *put_be(uint8_t *p, uint64_t v, int n)
{
    if (n == 1) {
        *p = (uint8_t)v;
        return p + 1;
    }
    uint64_t w = v << (64 - 8 * n);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    memcpy(p, &w, (size_t)n);
    return p + n;
}

static inline uint8_t *put_uint(uint8_t *p, uint64_t v)
{
    if (v < 0x80) { *p = (uint8_t)v; return p + 1; }
    if (v <= 0xff) { *p = 0xcc; return put_be(p + 1, v, 1); }
    if (v <= 0xffff) { *p = 0xcd; return put_be(p + 1, v, 2); }
    if (v <= 0xffffffffu) { *p = 0xce; return put_be(p + 1, v, 4); }
    *p = 0xcf;
    return put_be(p + 1, v, 8);
}

static uint8_t *put_int(uint8_t *p, int64_t v)
{
    if (v >= 0) return put_uint(p, (uint64_t)v);
    if (v >= -32) { *p = (uint8_t)(0xe0 | (v & 0x1f)); return p + 1; }
    if (v >= INT8_MIN) { *p = 0xd0; return put_be(p + 1, (uint64_t)v, 1); }
    if (v >= INT16_MIN) { *p = 0xd1; return put_be(p + 1, (uint64_t)v, 2); }
    if (v >= INT32_MIN) { *p = 0xd2; return put_be(p + 1, (uint64_t)v, 4); }
    *p = 0xd3;
    return put_be(p + 1, (uint64_t)v, 8);
}

/* Forced inline: GCC kept it out of line, a call per encoded record for a
 * header that is one store. (Forcing the other writers inline as well gained
 * nothing measurable and doubled this file's compile time, more under the
 * sanitizers.) */
ALWAYS_INLINE static inline uint8_t *put_array(uint8_t *p, uint32_t n)
{
    if (n <= 15) { *p = (uint8_t)(0x90 | n); return p + 1; }
    if (n <= 0xffff) { *p = 0xdc; return put_be(p + 1, n, 2); }
    *p = 0xdd;
    return put_be(p + 1, n, 4);
}

static uint8_t *put_str(uint8_t *p, const char *s, size_t n)  /* n <= 255 */
{
    if (n <= 31) *p++ = (uint8_t)(0xa0 | n);
    else { *p++ = 0xd9; *p++ = (uint8_t)n; }
    memcpy(p, s, n);
    return p + n;
}

/* A text or the 16 counters: only in definitions and counters records, so
 * kept out of the record loop. */
__attribute__((noinline)) static uint8_t *put_wide(uint8_t *p, const uint8_t *src, unsigned kind,
                                                   int *zero)
{
    if (kind == K_TEXT) {
        const char *s = (const char *)src;
        *zero = s[0] == 0;
        return put_str(p, s, strnlen(s, TEXT_MAX));
    }
    uint64_t a[NSC_T_COUNT], any = 0;
    memcpy(a, src, sizeof a);
    p = put_array(p, NSC_T_COUNT);
    for (int i = 0; i < NSC_T_COUNT; i++) {
        any |= a[i];
        p = put_uint(p, a[i]);
    }
    *zero = any == 0;
    return p;
}

/* One field, loaded and written in one dispatch on its kind (the encoder's
 * inner loop: a record costs one indirect jump per field); *zero says
 * whether its value was zero, for the trimming of optional fields. */
ALWAYS_INLINE static inline uint8_t *put_field(uint8_t *p, const uint8_t *rec, const field *f,
                                               deltas *d, int *zero)
{
    const uint8_t *src = rec + f->off;
    uint64_t v;
    uint32_t v32;
    switch (f->kind) {
    case K_U8: case K_STATE: v = *src; break;
    case K_U16: { uint16_t x; memcpy(&x, src, sizeof x); v = x; break; }
    case K_U32: memcpy(&v32, src, sizeof v32); v = v32; break;
    case K_PID:
        memcpy(&v32, src, sizeof v32);
        *zero = v32 == 0;
        return put_uint(p, zigzag((uint64_t)((int64_t)v32 - (int64_t)d->pid)));
    case K_I32: {
        int32_t x;
        memcpy(&x, src, sizeof x);
        *zero = x == 0;
        return put_int(p, x);
    }
    case K_TEXT: case K_U64X16: return put_wide(p, src, f->kind, zero);
    default: memcpy(&v, src, sizeof v); break;
    }
    *zero = v == 0;
    switch (f->kind) {
    case K_I64: return put_int(p, (int64_t)v);
    case K_ID:
        p = put_uint(p, zigzag(v - d->last_id));
        d->last_id = d->cur_id = v;
        return p;
    case K_REF:
        if (v == 0) { *p = 0xc0; return p + 1; }
        return put_uint(p, zigzag(d->cur_id - v));
    case K_TIME:
        d->cur_time = v;
        return put_uint(p, zigzag(v - d->base_ns));
    case K_DUR: return put_uint(p, zigzag(v - d->cur_time));
    case K_FIX64: *p = 0xcf; return put_be(p + 1, v, 8);
    default: return put_uint(p, v);
    }
}

/* ---- encoder ------------------------------------------------------------- */

/* Records are written in place when NSC_WIRE_REC_MAX bytes are free, else into
 * scratch and copied only if they fit: a record that does not fit never
 * touches the caller's buffer. */
static uint8_t *out_begin(const nsc_enc *e, size_t room, uint8_t *scratch)
{
    return room >= NSC_WIRE_REC_MAX ? e->buf + e->len : scratch;
}

static int out_commit(nsc_enc *e, size_t room, const uint8_t *start, const uint8_t *end)
{
    size_t n = (size_t)(end - start);
    if (start != e->buf + e->len) {
        if (room < n)
            return NSC_WIRE_FULL;
        memcpy(e->buf + e->len, start, n);
    }
    e->len += n;
    return NSC_WIRE_OK;
}

int nsc_enc_begin(nsc_enc *e, void *buf, size_t cap, const nsc_batch_hdr *hdr)
{
    memset(e, 0, sizeof *e);
    e->buf = buf;
    e->cap = cap;
    e->base_ns = hdr->base_ns;
    e->pid = hdr->proc.pid;

    uint8_t scratch[NSC_WIRE_REC_MAX];
    uint8_t *start = out_begin(e, cap, scratch), *p = start;
    deltas d = {0};
    p = put_array(p, 2);
    _Static_assert(2 + NHDR_KEYS <= 15, "the header is a fixmap");
    uint8_t *map = p++;
    unsigned nkeys = 2;  /* "v" and "counters" */
    p = put_str(p, "v", 1);
    p = put_uint(p, NSC_WIRE_VERSION);
    for (size_t i = 0; i < NHDR_KEYS; i++) {
        int zero;
        uint8_t *key = p;
        p = put_str(p, hdr_keys[i].name, strlen(hdr_keys[i].name));
        p = put_field(p, (const uint8_t *)hdr, &hdr_keys[i].f, &d, &zero);
        if (zero && hdr_keys[i].newer)
            p = key;
        else
            nkeys++;
    }
    *map = (uint8_t)(0x80 | nkeys);
    p = put_str(p, "counters", 8);
    p = put_array(p, NSC_WIRE_HDR_COUNTERS);
    e->counters_at = (size_t)(p - start);
    for (int i = 0; i < NSC_WIRE_HDR_COUNTERS; i++) {
        *p = 0xcf;
        p = put_be(p + 1, hdr->counters[i], 8);
    }
    size_t records_at = (size_t)(p - start);
    *p++ = 0xdd;  /* array32, count patched by nsc_enc_finish */
    p = put_be(p, 0, 4);
    if (out_commit(e, cap, start, p) != NSC_WIRE_OK) {
        e->cap = 0;  /* nothing can be added to a batch that never began */
        return NSC_WIRE_FULL;
    }
    e->records_at = records_at;
    return NSC_WIRE_OK;
}

/* The header's "counters" rewritten in place: each counters record brings
 * the latest, at the fixed width nsc_enc_begin gave them. */
static void set_hdr_counters(nsc_enc *e, const uint64_t v[NSC_WIRE_HDR_COUNTERS])
{
    for (int i = 0; i < NSC_WIRE_HDR_COUNTERS; i++)
        put_be(e->buf + e->counters_at + 9 * (size_t)i + 1, v[i], 8);
}

/* Fields past the layout's nmin are left off the end while zero: every field
 * is written, and the record ends after the last one that stays. Its array
 * header, 1 byte (fixarray) or 3, goes in front once the count is known: a
 * layout of more than 14 fields leaves 3 bytes for it, and a record trimmed
 * to a fixarray moves up by 2 (a few dozen bytes, rarer than a loop of
 * zero checks ahead of the writing on every record). */
ALWAYS_INLINE static inline int enc_record(nsc_enc *e, unsigned tag, const void *rec)
{
    const layout *L = &layouts[tag];
    const uint8_t *r = rec;
    unsigned nmax = tag == NSC_WIRE_TAG_COUNTERS ? COUNTERS_SENT : L->nfields;

    /* Only the counters may use the reserve. */
    size_t limit = tag == NSC_WIRE_TAG_COUNTERS ? e->cap : e->cap - e->reserve;
    size_t room = limit > e->len ? limit - e->len : 0;
    uint8_t scratch[NSC_WIRE_REC_MAX];
    uint8_t *start = out_begin(e, room, scratch);
    size_t hw = 1 + nmax <= 15 ? 1 : 3;
    uint8_t *p = start + hw, *end;
    deltas d = {.base_ns = e->base_ns, .last_id = e->last_id, .pid = e->pid};
    /* An event's origin, its last fields, is zero but for PXN's few: it would
     * be trimmed, so it is not written at all. */
    const nsc_event *ev = rec;
    int no_origin = tag < NSC_T_COUNT && !(ev->origin_pid | ev->origin_parent | ev->origin_ctx);
    *p++ = (uint8_t)tag;
    end = p;
    unsigned n = 0;
#pragma GCC unroll 32
    for (unsigned i = 0; i < nmax; i++) {
        int zero;
        if (no_origin && i == nmax - EV_NORIGIN)
            break;
        p = put_field(p, r, &L->f[i], &d, &zero);
        if (!zero || i < L->nmin) {
            end = p;
            n = i + 1;
        }
    }
    if (hw == 3 && 1 + n <= 15) {
        memmove(start + 1, start + 3, (size_t)(end - start - 3));
        end -= 2;
    }
    put_array(start, 1 + n);
    int rc = out_commit(e, room, start, end);
    if (rc == NSC_WIRE_OK) {
        e->last_id = d.last_id;
        e->nrecords++;
    }
    return rc;
}

/* A case per type: enc_record inlined with a constant tag, its layout's
 * loop unrolled and every field's kind known at compile time. */
int nsc_enc_event(nsc_enc *e, const nsc_event *ev)
{
    switch (ev->type) {
    case NSC_T_GROUP: return enc_record(e, NSC_T_GROUP, ev);
    case NSC_T_PROXY_CTRL: return enc_record(e, NSC_T_PROXY_CTRL, ev);
#define ENC_TYPE(type, s, list)                                                              \
    case type: return enc_record(e, type, ev);
    NSC_EVENT_TYPES(ENC_TYPE)
#undef ENC_TYPE
    default: return NSC_WIRE_BAD_VALUE;
    }
}

int nsc_enc_state(nsc_enc *e, const nsc_state_rec *s)
{
    if (s->state >= NSC_S_COUNT)
        return NSC_WIRE_BAD_VALUE;
    return enc_record(e, NSC_WIRE_TAG_STATE, s);
}

int nsc_enc_str(nsc_enc *e, const nsc_str_def *s) { return enc_record(e, NSC_WIRE_TAG_STR, s); }
int nsc_enc_ctx(nsc_enc *e, const nsc_ctx_def *c) { return enc_record(e, NSC_WIRE_TAG_CTX, c); }

int nsc_enc_completion(nsc_enc *e, const nsc_completion *c)
{
    return enc_record(e, NSC_WIRE_TAG_COMPLETION, c);
}

int nsc_enc_counters(nsc_enc *e, const nsc_counters *c)
{
    int rc = enc_record(e, NSC_WIRE_TAG_COUNTERS, c);
    if (rc == NSC_WIRE_OK) {
        uint64_t v[NSC_WIRE_HDR_COUNTERS];
        for (int i = 0; i < NSC_WIRE_HDR_COUNTERS; i++)
            v[i] = load((const uint8_t *)c, &hdr_counter_fields[i]);
        set_hdr_counters(e, v);
    }
    return rc;
}

int nsc_enc_reserve(nsc_enc *e, size_t n)
{
    if (e->cap - e->len < n)
        return NSC_WIRE_FULL;
    e->reserve = n;
    return NSC_WIRE_OK;
}

size_t nsc_enc_finish(nsc_enc *e)
{
    if (e->len == 0)
        return 0;
    put_be(e->buf + e->records_at + 1, e->nrecords, 4);
    return e->len;
}

/* ---- msgpack reader: a bounded cursor ------------------------------------ */

typedef nsc_mp_cursor cursor;

static size_t left(const cursor *c) { return (size_t)(c->end - c->p); }

static uint64_t get_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Consume n big-endian bytes as an unsigned value. */
static inline int take_be(cursor *c, int n, uint64_t *v)
{
    if (left(c) < (size_t)n)
        return NSC_WIRE_TRUNCATED;
    *v = get_be(c->p, n);
    c->p += n;
    return NSC_WIRE_OK;
}

/* Any msgpack integer; *neg says *v holds a negative int64's bits. */
static inline int rd_int(cursor *c, uint64_t *v, int *neg)
{
    if (left(c) < 1)
        return NSC_WIRE_TRUNCATED;
    uint8_t b = *c->p++;
    *neg = 0;
    if (b < 0x80) { *v = b; return NSC_WIRE_OK; }
    if (b >= 0xe0) { *v = (uint64_t)(int64_t)(int8_t)b; *neg = 1; return NSC_WIRE_OK; }
    if (b >= 0xcc && b <= 0xcf)
        return take_be(c, 1 << (b - 0xcc), v);
    if (b >= 0xd0 && b <= 0xd3) {
        int n = 1 << (b - 0xd0);
        int rc = take_be(c, n, v);
        if (rc == NSC_WIRE_OK && n < 8 && (*v >> (8 * n - 1)))
            *v |= ~0ull << (8 * n);  /* sign-extend */
        *neg = rc == NSC_WIRE_OK && (int64_t)*v < 0;
        return rc;
    }
    c->p--;
    return NSC_WIRE_BAD_TYPE;
}

static inline int rd_uint(cursor *c, uint64_t max, uint64_t *v)
{
    int neg, rc = rd_int(c, v, &neg);
    if (rc == NSC_WIRE_OK && (neg || *v > max))
        return NSC_WIRE_BAD_VALUE;
    return rc;
}

static int rd_sint(cursor *c, int64_t min, int64_t max, uint64_t *v)
{
    int neg, rc = rd_int(c, v, &neg);
    if (rc != NSC_WIRE_OK)
        return rc;
    if (neg ? (int64_t)*v < min : *v > (uint64_t)max)
        return NSC_WIRE_BAD_VALUE;
    return NSC_WIRE_OK;
}

/* A declared count of n items, each at least unit bytes long. */
static int check_count(const cursor *c, uint64_t n, uint64_t limit, size_t unit)
{
    if (n > limit)
        return NSC_WIRE_TOO_MANY;
    if (n > left(c) / unit)
        return NSC_WIRE_TRUNCATED;
    return NSC_WIRE_OK;
}

/* Header of an array, or of a map (is_map; *n counts pairs). */
static int rd_container(cursor *c, int is_map, uint32_t *n)
{
    if (left(c) < 1)
        return NSC_WIRE_TRUNCATED;
    uint8_t b = *c->p, fix = is_map ? 0x80 : 0x90, wide = is_map ? 0xde : 0xdc;
    uint64_t v = 0;
    int rc;
    if ((b & 0xf0) == fix) {
        c->p++;
        v = b & 0x0f;
        rc = NSC_WIRE_OK;
    } else if (b == wide || b == wide + 1) {
        c->p++;
        rc = take_be(c, b == wide ? 2 : 4, &v);
    } else {
        return NSC_WIRE_BAD_TYPE;
    }
    if (rc == NSC_WIRE_OK)
        rc = check_count(c, v, c->max_elems, is_map ? 2 : 1);
    *n = (uint32_t)v;
    return rc;
}

static int rd_array(cursor *c, uint32_t *n) { return rd_container(c, 0, n); }

/* A str, or a bin when is_bin (bin has no fix form). */
static int rd_blob(cursor *c, int is_bin, const uint8_t **s, uint32_t *n)
{
    if (left(c) < 1)
        return NSC_WIRE_TRUNCATED;
    uint8_t b = *c->p, first = is_bin ? 0xc4 : 0xd9;
    uint64_t v;
    int rc = NSC_WIRE_OK;
    if (!is_bin && (b & 0xe0) == 0xa0) {
        c->p++;
        v = b & 0x1f;
    } else if (b >= first && b <= first + 2) {
        c->p++;
        rc = take_be(c, 1 << (b - first), &v);
    } else {
        return NSC_WIRE_BAD_TYPE;
    }
    if (rc == NSC_WIRE_OK)
        rc = check_count(c, v, c->max_len, 1);
    if (rc != NSC_WIRE_OK)
        return rc;
    *s = c->p;
    *n = (uint32_t)v;
    c->p += v;
    return NSC_WIRE_OK;
}

static int rd_str(cursor *c, const uint8_t **s, uint32_t *n) { return rd_blob(c, 0, s, n); }

/* Skip a payload of extra bytes plus a length read from a hdr-byte prefix. */
static int skip_sized(cursor *c, int hdr, uint64_t extra)
{
    uint64_t n = 0;
    if (hdr) {
        int rc = take_be(c, hdr, &n);
        if (rc != NSC_WIRE_OK)
            return rc;
    }
    int rc = check_count(c, n, c->max_len, 1);
    if (rc == NSC_WIRE_OK)
        rc = check_count(c, n + extra, UINT64_MAX, 1);
    if (rc == NSC_WIRE_OK)
        c->p += n + extra;
    return rc;
}

/* Skip one value of any type (unknown header keys), nested at most to
 * NSC_WIRE_MAX_DEPTH. */
static int skip_value(cursor *c, int depth)
{
    if (depth > NSC_WIRE_MAX_DEPTH)
        return NSC_WIRE_TOO_DEEP;
    if (left(c) < 1)
        return NSC_WIRE_TRUNCATED;
    uint8_t b = *c->p;
    uint32_t n;
    int rc;
    if ((b & 0xf0) == 0x90 || b == 0xdc || b == 0xdd || (b & 0xf0) == 0x80 || b == 0xde ||
        b == 0xdf) {
        int is_map = (b & 0xf0) == 0x80 || b == 0xde || b == 0xdf;
        if ((rc = rd_container(c, is_map, &n)) != NSC_WIRE_OK)
            return rc;
        for (uint64_t i = 0; i < (uint64_t)n << is_map; i++)
            if ((rc = skip_value(c, depth + 1)) != NSC_WIRE_OK)
                return rc;
        return NSC_WIRE_OK;
    }
    c->p++;
    if (b < 0x80 || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
        return NSC_WIRE_OK;
    if ((b & 0xe0) == 0xa0)
        return skip_sized(c, 0, b & 0x1f);
    switch (b) {
    case 0xc4: case 0xd9: return skip_sized(c, 1, 0);  /* bin8, str8 */
    case 0xc5: case 0xda: return skip_sized(c, 2, 0);
    case 0xc6: case 0xdb: return skip_sized(c, 4, 0);
    case 0xc7: return skip_sized(c, 1, 1);  /* ext: length, type byte, data */
    case 0xc8: return skip_sized(c, 2, 1);
    case 0xc9: return skip_sized(c, 4, 1);
    case 0xca: return skip_sized(c, 0, 4);
    case 0xcb: return skip_sized(c, 0, 8);
    case 0xcc: case 0xd0: return skip_sized(c, 0, 1);
    case 0xcd: case 0xd1: return skip_sized(c, 0, 2);
    case 0xce: case 0xd2: return skip_sized(c, 0, 4);
    case 0xcf: case 0xd3: return skip_sized(c, 0, 8);
    case 0xd4: return skip_sized(c, 0, 2);  /* fixext: type byte + 1..16 */
    case 0xd5: return skip_sized(c, 0, 3);
    case 0xd6: return skip_sized(c, 0, 5);
    case 0xd7: return skip_sized(c, 0, 9);
    case 0xd8: return skip_sized(c, 0, 17);
    default: c->p--; return NSC_WIRE_BAD_TYPE;  /* 0xc1, never used */
    }
}

/* ---- decoder ------------------------------------------------------------- */

static int rd_text(cursor *c, char *dst)
{
    const uint8_t *s;
    uint32_t n;
    int rc = rd_str(c, &s, &n);
    if (rc != NSC_WIRE_OK)
        return rc;
    if (n > TEXT_MAX || memchr(s, 0, n))
        return NSC_WIRE_BAD_VALUE;  /* would not survive as a C string */
    memset(dst, 0, TEXT_MAX + 1);
    memcpy(dst, s, n);
    return NSC_WIRE_OK;
}

static int rd_u64x16(cursor *c, uint8_t *dst)
{
    uint32_t n;
    int rc = rd_array(c, &n);
    if (rc != NSC_WIRE_OK)
        return rc;
    if (n != NSC_T_COUNT)
        return NSC_WIRE_BAD_RECORD;
    for (unsigned i = 0; i < NSC_T_COUNT; i++, dst += sizeof(uint64_t)) {
        uint64_t v;
        if ((rc = rd_uint(c, UINT64_MAX, &v)) != NSC_WIRE_OK)
            return rc;
        memcpy(dst, &v, sizeof v);
    }
    return NSC_WIRE_OK;
}

/* A pid/tid sent as a zigzag delta z from the header's pid. */
static int pid_from_delta(uint32_t pid, uint64_t z, uint64_t *v)
{
    int64_t delta = (int64_t)unzigzag(z);
    if (delta < -(int64_t)UINT32_MAX || delta > (int64_t)UINT32_MAX)
        return NSC_WIRE_BAD_VALUE;
    int64_t r = (int64_t)pid + delta;
    if (r < 0 || r > (int64_t)UINT32_MAX)
        return NSC_WIRE_BAD_VALUE;
    *v = (uint64_t)r;
    return NSC_WIRE_OK;
}

/* A scalar field's value as sent, checked against its kind's range. A
 * positive fixint, nearly every field of a batch, is in every kind's range
 * but K_STATE's and is read without the general integer reader. */
ALWAYS_INLINE static inline int rd_scalar(cursor *c, unsigned kind, uint64_t *v)
{
    if (left(c) && *c->p < 0x80) {
        *v = *c->p++;
        return kind == K_STATE && *v >= NSC_S_COUNT ? NSC_WIRE_BAD_VALUE : NSC_WIRE_OK;
    }
    switch (kind) {
    case K_U8: return rd_uint(c, UINT8_MAX, v);
    case K_STATE: return rd_uint(c, NSC_S_COUNT - 1, v);
    case K_U16: return rd_uint(c, UINT16_MAX, v);
    case K_U32: return rd_uint(c, UINT32_MAX, v);
    case K_I32: return rd_sint(c, INT32_MIN, INT32_MAX, v);
    case K_I64: return rd_sint(c, INT64_MIN, INT64_MAX, v);
    default: return rd_uint(c, UINT64_MAX, v);  /* U64, and the deltas' zigzag values */
    }
}

/* Texts and the counters' arrays: the fields that are not a scalar. */
static int rd_compound(cursor *c, uint8_t *rec, const field *f)
{
    return f->kind == K_TEXT ? rd_text(c, (char *)rec + f->off) : rd_u64x16(c, rec + f->off);
}

ALWAYS_INLINE static inline int rd_field(cursor *c, uint8_t *rec, const field *f, deltas *d)
{
    uint64_t v;
    int rc;
    if (f->kind == K_TEXT || f->kind == K_U64X16)
        return rd_compound(c, rec, f);
    if (f->kind == K_REF && left(c) && *c->p == 0xc0) {  /* nil: no reference */
        c->p++;
        store(rec, f, 0);
        return NSC_WIRE_OK;
    }
    if ((rc = rd_scalar(c, f->kind, &v)) != NSC_WIRE_OK)
        return rc;
    switch (f->kind) {
    case K_ID: v = d->last_id = d->cur_id = d->last_id + unzigzag(v); break;
    case K_REF: v = d->cur_id - unzigzag(v); break;
    case K_TIME: v = d->cur_time = d->base_ns + unzigzag(v); break;
    case K_DUR: v = d->cur_time + unzigzag(v); break;
    case K_PID: rc = pid_from_delta(d->pid, v, &v); break;
    default: break;
    }
    if (rc == NSC_WIRE_OK)
        store(rec, f, v);
    return rc;
}

/* Record kinds, in the order their arrays share the batch's allocation
 * (8-byte aligned structs first, so every array stays aligned). */
enum { KIND_EVENT, KIND_STATE, KIND_COMPLETION, KIND_CTX, KIND_STR, KIND_COUNTERS, KIND_COUNT };

static unsigned tag_kind(unsigned tag)
{
    switch (tag) {
    case NSC_WIRE_TAG_STATE: return KIND_STATE;
    case NSC_WIRE_TAG_COMPLETION: return KIND_COMPLETION;
    case NSC_WIRE_TAG_CTX: return KIND_CTX;
    case NSC_WIRE_TAG_STR: return KIND_STR;
    case NSC_WIRE_TAG_COUNTERS: return KIND_COUNTERS;
    default: return KIND_EVENT;
    }
}

static uint8_t *record_slot(nsc_batch *b, unsigned kind, size_t i)
{
    switch (kind) {
    case KIND_EVENT: return (uint8_t *)&b->events[i];
    case KIND_STATE: return (uint8_t *)&b->states[i];
    case KIND_COMPLETION: return (uint8_t *)&b->completions[i];
    case KIND_CTX: return (uint8_t *)&b->ctxs[i];
    case KIND_STR: return (uint8_t *)&b->strs[i];
    default:  /* counters are cumulative: the batch keeps the last record */
        b->has_counters = 1;
        return (uint8_t *)&b->counters;
    }
}

/* A record's array header and tag: *nfields fields follow, as layout *L.
 * The encoders write every record as a fixarray with a fixint tag, read here
 * without the general readers (the same checks, in the same order). */
static inline int rd_record_head(cursor *c, uint32_t *nfields, uint64_t *tag, const layout **L)
{
    uint32_t n;
    int neg, rc;
    if (left(c) >= 2 && (c->p[0] & 0xf0) == 0x90 && c->p[1] < 0x80) {
        n = *c->p++ & 0x0f;
        rc = check_count(c, n, c->max_elems, 1);
    } else {
        rc = rd_array(c, &n);
    }
    if (rc != NSC_WIRE_OK)
        return rc;
    if (n == 0)
        return NSC_WIRE_BAD_RECORD;
    if ((rc = rd_int(c, tag, &neg)) != NSC_WIRE_OK)
        return rc;
    if (neg || *tag >= NSC_WIRE_TAG_COUNT)
        return NSC_WIRE_BAD_RECORD;
    *L = &layouts[*tag];
    if (n - 1 < (*L)->nmin || n - 1 > (*L)->nfields)
        return NSC_WIRE_BAD_RECORD;
    *nfields = n - 1;
    return NSC_WIRE_OK;
}

/* The bytes of the value that byte b starts, for an integer or nil (nearly
 * every field); 0 for any other type. */
static inline size_t scalar_width(uint8_t b)
{
    return b < 0x80 || b >= 0xe0 || b == 0xc0 ? 1 : b >= 0xcc && b <= 0xd3 ? 1 + (1u << ((b - 0xcc) & 3)) : 0;
}

/* Step over n fields; integers and nil inline, on a local pointer: the
 * cursor's own, whose address the other types' path takes, would be stored
 * and loaded again at every field. */
static inline int skip_fields(cursor *c, uint32_t n)
{
    const uint8_t *p = c->p, *end = c->end;
    int rc = NSC_WIRE_OK;
    for (uint32_t f = 0; rc == NSC_WIRE_OK && f < n; f++) {
        size_t w = p < end ? scalar_width(*p) : 1;
        if (w == 0) {
            c->p = p;
            rc = skip_value(c, 4);  /* in the batch, records and record arrays */
            p = c->p;
        } else if ((size_t)(end - p) < w) {
            rc = NSC_WIRE_TRUNCATED;
        } else {
            p += w;
        }
    }
    c->p = p;
    return rc;
}

static inline int skip_field(cursor *c) { return skip_fields(c, 1); }

/* Pass one: count the records of each kind, stepping over their fields
 * without reading them (pass two reads and checks every value). */
static int count_records(cursor *c, uint32_t nrecords, size_t count[KIND_COUNT])
{
    for (uint32_t i = 0; i < nrecords; i++) {
        uint32_t n;
        uint64_t tag;
        const layout *L;
        int rc = rd_record_head(c, &n, &tag, &L);
        if (rc == NSC_WIRE_OK)
            rc = skip_fields(c, n);
        if (rc != NSC_WIRE_OK)
            return rc;
        count[tag_kind((unsigned)tag)]++;
    }
    return NSC_WIRE_OK;
}

/* Pass two: decode one record into the batch, which has room for cap[kind]
 * records of each kind; count[] numbers the records filled. */
static int rd_record(cursor *c, deltas *d, nsc_batch *fill, const size_t cap[KIND_COUNT],
                     size_t count[KIND_COUNT])
{
    uint32_t n;
    uint64_t tag;
    const layout *L;
    int rc = rd_record_head(c, &n, &tag, &L);
    if (rc != NSC_WIRE_OK)
        return rc;
    unsigned kind = tag_kind((unsigned)tag);
    if (kind != KIND_COUNTERS && count[kind] == cap[kind])
        return NSC_WIRE_BAD_RECORD;  /* pass one counted otherwise: never */
    uint8_t *rec = record_slot(fill, kind, count[kind]);
    memset(rec, 0, L->size);
    if (kind == KIND_EVENT)
        ((nsc_event *)rec)->type = (uint8_t)tag;
    for (uint32_t i = 0; i < n; i++)
        if ((rc = rd_field(c, rec, &L->f[i], d)) != NSC_WIRE_OK)
            return rc;
    count[kind]++;
    return NSC_WIRE_OK;
}

static int rd_records(cursor *c, const nsc_batch_hdr *h, uint32_t n, nsc_batch *fill,
                      const size_t cap[KIND_COUNT], size_t count[KIND_COUNT])
{
    deltas d = {.base_ns = h->base_ns, .pid = h->proc.pid};
    for (uint32_t i = 0; i < n; i++) {
        int rc = rd_record(c, &d, fill, cap, count);
        if (rc != NSC_WIRE_OK)
            return rc;
    }
    return NSC_WIRE_OK;
}

static const hdr_key *find_hdr_key(const uint8_t *k, uint32_t n)
{
    for (size_t i = 0; i < NHDR_KEYS; i++)
        if (strlen(hdr_keys[i].name) == n && memcmp(hdr_keys[i].name, k, n) == 0)
            return &hdr_keys[i];
    return NULL;
}

/* The header's "counters": an array of integers, of which a longer one (a
 * newer sender's) gives its first NSC_WIRE_HDR_COUNTERS, a shorter one (an
 * older sender's) the first of them. */
static int rd_hdr_counters(cursor *c, nsc_batch_hdr *h)
{
    uint32_t n;
    int rc = rd_array(c, &n);
    for (uint32_t i = 0; rc == NSC_WIRE_OK && i < n; i++) {
        uint64_t v;
        rc = rd_uint(c, UINT64_MAX, i < NSC_WIRE_HDR_COUNTERS ? &h->counters[i] : &v);
    }
    return rc;
}

/* The counters the record left out (0), from the header's. */
static void merge_hdr_counters(nsc_batch *b)
{
    if (!b->has_counters)
        return;
    for (int i = 0; i < NSC_WIRE_HDR_COUNTERS; i++)
        if (load((const uint8_t *)&b->counters, &hdr_counter_fields[i]) == 0)
            store((uint8_t *)&b->counters, &hdr_counter_fields[i], b->hdr.counters[i]);
}

/* The version is checked as soon as "v" is seen (encoders send it first), so a
 * newer header is reported as BAD_VERSION rather than as whatever it broke. */
static int rd_version(cursor *c, nsc_batch_hdr *h)
{
    uint64_t v;
    int neg, rc = rd_int(c, &v, &neg);
    if (rc != NSC_WIRE_OK)
        return rc;
    if (neg || v != NSC_WIRE_VERSION)
        return NSC_WIRE_BAD_VERSION;
    h->version = (uint32_t)v;
    return NSC_WIRE_OK;
}

static int rd_header(cursor *c, nsc_batch_hdr *h)
{
    uint32_t n;
    int rc = rd_container(c, 1, &n);
    if (rc != NSC_WIRE_OK)
        return rc;
    memset(h, 0, sizeof *h);
    h->proc.local_rank = h->proc.gpu = -1;
    unsigned seen = 0;
    const unsigned seen_v = 1u << NHDR_KEYS;
    deltas d = {0};
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *k;
        uint32_t klen;
        if ((rc = rd_str(c, &k, &klen)) != NSC_WIRE_OK)
            return rc;
        const hdr_key *key = find_hdr_key(k, klen);
        if (klen == 1 && k[0] == 'v') {
            rc = rd_version(c, h);
            seen |= seen_v;
        } else if (key) {
            rc = rd_field(c, (uint8_t *)h, &key->f, &d);
            seen |= 1u << (key - hdr_keys);
        } else if (klen == 8 && memcmp(k, "counters", 8) == 0) {
            rc = rd_hdr_counters(c, h);
        } else {
            rc = skip_value(c, 3);  /* depth 3: inside the batch array and the header map */
        }
        if (rc != NSC_WIRE_OK)
            return rc;
    }
    const unsigned required = seen_v | 1u << HDR_SEQ | 1u << HDR_PID;
    return (seen & required) == required ? NSC_WIRE_OK : NSC_WIRE_MISSING;
}

/* The batch array, its header, and the records array's header. */
static int rd_batch_start(cursor *c, nsc_batch_hdr *h, uint32_t *nrecords)
{
    uint32_t n;
    int rc = rd_array(c, &n);
    if (rc != NSC_WIRE_OK)
        return rc;
    if (n == 0)
        return NSC_WIRE_BAD_RECORD;
    if ((rc = rd_header(c, h)) != NSC_WIRE_OK)
        return rc;
    if (n != 2)
        return NSC_WIRE_BAD_RECORD;
    return rd_array(c, nrecords);
}

static int batch_alloc(nsc_batch *b, const size_t count[KIND_COUNT])
{
    static const size_t size[KIND_COUNT] = {
        sizeof(nsc_event), sizeof(nsc_state_rec), sizeof(nsc_completion),
        sizeof(nsc_ctx_def), sizeof(nsc_str_def), 0};
    size_t total = 0;
    for (unsigned k = 0; k < KIND_COUNT; k++)
        total += count[k] * size[k];
    if (total == 0)
        return NSC_WIRE_OK;
    uint8_t *m = malloc(total);
    if (!m)
        return NSC_WIRE_NOMEM;
    b->mem = m;
    void *at[KIND_COUNT];
    for (unsigned k = 0; k < KIND_COUNT; k++) {
        at[k] = count[k] ? m : NULL;
        m += count[k] * size[k];
    }
    b->events = at[KIND_EVENT];
    b->states = at[KIND_STATE];
    b->completions = at[KIND_COMPLETION];
    b->ctxs = at[KIND_CTX];
    b->strs = at[KIND_STR];
    return NSC_WIRE_OK;
}

/* A cursor over a whole message under the decoder's limits. */
static int open_message(const void *buf, size_t len, const nsc_dec_limits *lim, cursor *c)
{
    size_t max_msg = lim && lim->max_msg ? lim->max_msg : NSC_WIRE_MAX_MSG;
    uint32_t max_records = lim && lim->max_records ? lim->max_records : 1u << 20;
    if (len == 0)
        return NSC_WIRE_EMPTY;
    if (len > max_msg)
        return NSC_WIRE_TOO_LARGE;
    *c = (cursor){buf, (const uint8_t *)buf + len, max_msg, max_records};
    return NSC_WIRE_OK;
}

int nsc_batch_decode(const void *buf, size_t len, const nsc_dec_limits *lim, nsc_batch *out)
{
    memset(out, 0, sizeof *out);
    cursor c;
    nsc_batch_hdr hdr;
    uint32_t nrecords;
    size_t cap[KIND_COUNT] = {0}, count[KIND_COUNT] = {0};
    int rc = open_message(buf, len, lim, &c);
    if (rc != NSC_WIRE_OK)
        return rc;
    rc = rd_batch_start(&c, &hdr, &nrecords);
    const uint8_t *records = c.p;
    if (rc == NSC_WIRE_OK)
        rc = count_records(&c, nrecords, cap);
    if (rc == NSC_WIRE_OK && c.p != c.end)
        rc = NSC_WIRE_TRAILING;
    if (rc == NSC_WIRE_OK)
        rc = batch_alloc(out, cap);
    if (rc != NSC_WIRE_OK)
        return rc;

    out->hdr = hdr;
    c.p = records;
    rc = rd_records(&c, &hdr, nrecords, out, cap, count);
    if (rc != NSC_WIRE_OK) {
        nsc_batch_release(out);
        return rc;
    }
    out->nevents = count[KIND_EVENT];
    out->nstates = count[KIND_STATE];
    out->ncompletions = count[KIND_COMPLETION];
    out->nctxs = count[KIND_CTX];
    out->nstrs = count[KIND_STR];
    merge_hdr_counters(out);
    return NSC_WIRE_OK;
}

/* ---- scanning: every record checked, some decoded ---------------------- */

/* Room for element n of an array of cap elements, as the scan's error. */
static int grow_array(void *arrp, size_t *cap, size_t n, size_t elem)
{
    return nsc_grow(arrp, n, cap, elem, 64) ? NSC_WIRE_NOMEM : NSC_WIRE_OK;
}

static int grow_events(nsc_scan *s)
{
    size_t cap = s->cap_events;  /* both arrays must have the room */
    int rc = grow_array(&s->b.events, &cap, s->b.nevents, sizeof *s->b.events);
    if (rc == NSC_WIRE_OK && cap != s->cap_events)
        rc = grow_array(&s->event_at, &s->cap_events, s->b.nevents, sizeof *s->event_at);
    return rc;
}

/* A field rd_field read into src, into dst (zeroed). */
static void copy_field(uint8_t *dst, const uint8_t *src, const field *f)
{
    if (f->kind == K_TEXT)
        memcpy(dst + f->off, src + f->off, TEXT_MAX + 1);
    else if (f->kind == K_U64X16)
        memcpy(dst + f->off, src + f->off, NSC_T_COUNT * sizeof(uint64_t));
    else
        store(dst, f, load(src, f));
}

/* The slot a record read as rec goes to, or NULL when the scan does not
 * keep it; *rc is NSC_WIRE_NOMEM when it should but cannot. */
static uint8_t *keep_slot(nsc_scan *s, unsigned tag, const uint8_t *rec, uint32_t index, int *rc)
{
    nsc_batch *b = &s->b;
    switch (tag_kind(tag)) {
    case KIND_EVENT:
        if (!(s->keep_types >> tag & 1) && !(((const nsc_event *)rec)->flags & s->keep_flags))
            return NULL;
        if ((*rc = grow_events(s)) != NSC_WIRE_OK)
            return NULL;
        s->event_at[b->nevents] = index;
        return (uint8_t *)&b->events[b->nevents++];
    case KIND_STR:
        if ((*rc = grow_array(&b->strs, &s->cap_strs, b->nstrs, sizeof *b->strs)) != NSC_WIRE_OK)
            return NULL;
        return (uint8_t *)&b->strs[b->nstrs++];
    case KIND_CTX:
        if ((*rc = grow_array(&b->ctxs, &s->cap_ctxs, b->nctxs, sizeof *b->ctxs)) != NSC_WIRE_OK)
            return NULL;
        return (uint8_t *)&b->ctxs[b->nctxs++];
    case KIND_COUNTERS:
        b->has_counters = 1;
        return (uint8_t *)&b->counters;
    case KIND_STATE:
        if (!s->keep_states ||
            (*rc = grow_array(&b->states, &s->cap_states, b->nstates, sizeof *b->states)) != NSC_WIRE_OK)
            return NULL;
        return (uint8_t *)&b->states[b->nstates++];
    case KIND_COMPLETION:
        if (!s->keep_states || (*rc = grow_array(&b->completions, &s->cap_completions, b->ncompletions,
                                                 sizeof *b->completions)) != NSC_WIRE_OK)
            return NULL;
        return (uint8_t *)&b->completions[b->ncompletions++];
    default:
        return NULL;
    }
}

/* One record's values read into rec and checked, or at the first value error
 * (*value_err) stepped over field by field: nsc_batch_decode reads no value
 * after that error and reports it only if the structure of the whole batch,
 * which this checks in every case, is sound. */
static int scan_fields(cursor *c, const layout *L, uint32_t n, uint8_t *rec, deltas *d, int *value_err)
{
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *at = c->p;
        int rc;
        if (*value_err == NSC_WIRE_OK) {
            if ((rc = rd_field(c, rec, &L->f[i], d)) == NSC_WIRE_OK)
                continue;
            *value_err = rc;
            c->p = at;
        }
        if ((rc = skip_field(c)) != NSC_WIRE_OK)
            return rc;
    }
    return NSC_WIRE_OK;
}

static int scan_record(cursor *c, nsc_scan *s, uint32_t index, deltas *d, int *value_err)
{
    union {
        nsc_event ev;
        nsc_state_rec state;
        nsc_completion completion;
        nsc_str_def str;
        nsc_ctx_def ctx;
        nsc_counters counters;
    } scratch;
    uint8_t *rec = (uint8_t *)&scratch;
    uint32_t n;
    uint64_t tag;
    const layout *L;
    int rc = rd_record_head(c, &n, &tag, &L);
    if (rc == NSC_WIRE_OK)
        rc = scan_fields(c, L, n, rec, d, value_err);
    if (rc != NSC_WIRE_OK || *value_err != NSC_WIRE_OK)
        return rc;
    unsigned kind = tag_kind((unsigned)tag);
    s->nevents += kind == KIND_EVENT;
    s->nstates += kind == KIND_STATE;
    s->ncompletions += kind == KIND_COMPLETION;
    uint8_t *slot = keep_slot(s, (unsigned)tag, rec, index, value_err);
    if (slot) {  /* as rd_record fills it: zeroed, then the fields sent */
        memset(slot, 0, L->size);
        if (kind == KIND_EVENT)
            ((nsc_event *)slot)->type = (uint8_t)tag;
        for (uint32_t i = 0; i < n; i++)
            copy_field(slot, rec, &L->f[i]);
    }
    return NSC_WIRE_OK;
}

/* The scan's results emptied; its arrays stay for the next scan. */
static void scan_empty(nsc_scan *s)
{
    nsc_batch *b = &s->b;
    memset(&b->hdr, 0, sizeof b->hdr);
    memset(&b->counters, 0, sizeof b->counters);
    b->nevents = b->nstrs = b->nctxs = b->nstates = b->ncompletions = 0;
    b->has_counters = 0;
    s->nevents = s->nstates = s->ncompletions = 0;
}

int nsc_batch_scan(const void *buf, size_t len, const nsc_dec_limits *lim, nsc_scan *s)
{
    scan_empty(s);
    cursor c;
    uint32_t nrecords;
    int rc = open_message(buf, len, lim, &c);
    if (rc == NSC_WIRE_OK)
        rc = rd_batch_start(&c, &s->b.hdr, &nrecords);
    /* Value errors and a failed allocation rank below the structure's errors
     * and trailing bytes, as in nsc_batch_decode (which allocates after its
     * structural pass); NOMEM is reported as one as well. */
    int late = NSC_WIRE_OK;
    deltas d = {.base_ns = s->b.hdr.base_ns, .pid = s->b.hdr.proc.pid};
    for (uint32_t i = 0; rc == NSC_WIRE_OK && i < nrecords; i++)
        rc = scan_record(&c, s, i, &d, &late);
    if (rc == NSC_WIRE_OK && c.p != c.end)
        rc = NSC_WIRE_TRAILING;
    if (rc == NSC_WIRE_OK)
        rc = late;
    if (rc != NSC_WIRE_OK)
        scan_empty(s);
    else
        merge_hdr_counters(&s->b);
    return rc;
}

void nsc_scan_free(nsc_scan *s)
{
    free(s->b.events);
    free(s->b.strs);
    free(s->b.ctxs);
    free(s->b.states);
    free(s->b.completions);
    free(s->event_at);
    memset(s, 0, sizeof *s);
}

/* ---- splicing: records of one batch into another ----------------------- */

int nsc_splice_begin(nsc_splice *s, const void *buf, size_t len)
{
    memset(s, 0, sizeof *s);
    s->c = (cursor){buf, (const uint8_t *)buf + len, len, UINT32_MAX};
    nsc_batch_hdr hdr;
    int rc = rd_batch_start(&s->c, &hdr, &s->left);
    if (rc != NSC_WIRE_OK) {
        s->left = 0;
        return rc;
    }
    s->base_ns = hdr.base_ns;
    s->pid = hdr.proc.pid;
    memcpy(s->counters, hdr.counters, sizeof s->counters);
    return NSC_WIRE_OK;
}

int nsc_splice_tag(const nsc_splice *s)
{
    cursor c = s->c;
    uint32_t n;
    uint64_t tag;
    const layout *L;
    if (s->left == 0 || rd_record_head(&c, &n, &tag, &L) != NSC_WIRE_OK)
        return -1;
    return (int)tag;
}

/* One id, time or pid field, the deltas between records: read from the
 * source batch's bases (src), written when p is not NULL from the
 * destination's (dst, whose last id follows). The other fields mean the same
 * in both batches and are copied as they are. */
static int splice_delta(cursor *c, const field *f, deltas *src, deltas *dst, uint8_t **p)
{
    uint64_t z, v;
    int rc = rd_scalar(c, f->kind, &z);
    if (rc != NSC_WIRE_OK)
        return rc;
    switch (f->kind) {
    case K_ID:
        v = src->last_id += unzigzag(z);
        z = zigzag(v - dst->last_id);
        dst->last_id = v;
        break;
    case K_TIME:
        z = zigzag(src->base_ns + unzigzag(z) - dst->base_ns);
        break;
    default:  /* K_PID */
        if ((rc = pid_from_delta(src->pid, z, &v)) != NSC_WIRE_OK)
            return rc;
        z = zigzag((uint64_t)((int64_t)v - (int64_t)dst->pid));
        break;
    }
    if (*p)
        *p = put_uint(*p, z);
    return NSC_WIRE_OK;
}

/* Append the verbatim bytes [from, to) at *p, within NSC_WIRE_REC_MAX of
 * start. Runs of small fields, the usual case, move as one fixed 16-byte
 * copy (no call) where both buffers have the room; *p then advances by the
 * run's length only. */
static int copy_run(const uint8_t *start, uint8_t **p, const uint8_t *from, const uint8_t *to,
                    const uint8_t *end)
{
    size_t n = (size_t)(to - from), used = (size_t)(*p - start);
    if (used + n > NSC_WIRE_REC_MAX)
        return NSC_WIRE_BAD_RECORD;
    if (n <= 16 && used + 16 <= NSC_WIRE_REC_MAX && (size_t)(end - from) >= 16)
        memcpy(*p, from, 16);
    else
        memcpy(*p, from, n);
    *p += n;
    return NSC_WIRE_OK;
}

static int is_delta(unsigned kind) { return kind == K_ID || kind == K_TIME || kind == K_PID; }

/* Walk a record's n fields, writing them from *p on unless *p is NULL. A
 * record nsc_batch_decode accepted fits in NSC_WIRE_REC_MAX even with padded
 * integers; the checks keep any other input out of the scratch buffer. */
static int splice_fields(cursor *c, const layout *L, uint32_t n, deltas *src, deltas *dst,
                         const uint8_t *start, uint8_t **p)
{
    const uint8_t *run = c->p;  /* verbatim fields not copied yet */
    for (uint32_t i = 0;; i++) {
        int rc;
        if (i < n && !is_delta(L->f[i].kind)) {
            if ((rc = skip_field(c)) != NSC_WIRE_OK)
                return rc;
            continue;
        }
        if (*p && (rc = copy_run(start, p, run, c->p, c->end)) != NSC_WIRE_OK)
            return rc;
        if (i == n)
            return NSC_WIRE_OK;
        if (*p && (size_t)(*p - start) + 9 > NSC_WIRE_REC_MAX)
            return NSC_WIRE_BAD_RECORD;
        if ((rc = splice_delta(c, &L->f[i], src, dst, p)) != NSC_WIRE_OK)
            return rc;
        run = c->p;
    }
}

int nsc_splice_copy(nsc_splice *s, nsc_enc *e)
{
    if (s->left == 0)
        return NSC_WIRE_BAD_RECORD;
    cursor c = s->c;
    uint32_t n;
    uint64_t tag;
    const layout *L;
    int rc = rd_record_head(&c, &n, &tag, &L);
    if (rc != NSC_WIRE_OK)
        return rc;
    deltas src = {.base_ns = s->base_ns, .last_id = s->last_id, .pid = s->pid};
    deltas dst = {.base_ns = e ? e->base_ns : 0, .last_id = e ? e->last_id : 0, .pid = e ? e->pid : 0};
    size_t room = 0;
    uint8_t scratch[NSC_WIRE_REC_MAX], *start = NULL, *p = NULL;
    if (e) {
        size_t limit = tag == NSC_WIRE_TAG_COUNTERS ? e->cap : e->cap - e->reserve;
        room = limit > e->len ? limit - e->len : 0;
        start = p = out_begin(e, room, scratch);
        p = put_array(p, 1 + n);
        *p++ = (uint8_t)tag;
    }
    if ((rc = splice_fields(&c, L, n, &src, &dst, start, &p)) != NSC_WIRE_OK)
        return rc;
    if (e) {
        if ((rc = out_commit(e, room, start, p)) != NSC_WIRE_OK)
            return rc;
        e->last_id = dst.last_id;
        e->nrecords++;
        if (tag == NSC_WIRE_TAG_COUNTERS)
            set_hdr_counters(e, s->counters);
    }
    s->c = c;
    s->last_id = src.last_id;
    s->tag = (unsigned)tag;
    s->left--;
    return NSC_WIRE_OK;
}

/* ---- msgpack primitives shared with the other codecs of common/ ---------- */

uint8_t *nsc_mp_put_uint(uint8_t *p, uint64_t v) { return put_uint(p, v); }
uint8_t *nsc_mp_put_int(uint8_t *p, int64_t v) { return put_int(p, v); }
uint8_t *nsc_mp_put_array(uint8_t *p, uint32_t n) { return put_array(p, n); }
uint8_t *nsc_mp_put_text(uint8_t *p, const char *s) { return put_str(p, s, strnlen(s, TEXT_MAX)); }

uint8_t *nsc_mp_put_bin(uint8_t *p, const void *data, uint32_t n)
{
    if (n <= 0xff) { *p = 0xc4; p = put_be(p + 1, n, 1); }
    else if (n <= 0xffff) { *p = 0xc5; p = put_be(p + 1, n, 2); }
    else { *p = 0xc6; p = put_be(p + 1, n, 4); }
    memcpy(p, data, n);
    return p + n;
}

int nsc_mp_rd_uint(nsc_mp_cursor *c, uint64_t max, uint64_t *v) { return rd_uint(c, max, v); }
int nsc_mp_rd_sint(nsc_mp_cursor *c, int64_t min, int64_t max, int64_t *v)
{
    uint64_t u = 0;
    int rc = rd_sint(c, min, max, &u);
    *v = (int64_t)u;
    return rc;
}
int nsc_mp_rd_array(nsc_mp_cursor *c, uint32_t *n) { return rd_array(c, n); }
int nsc_mp_rd_text(nsc_mp_cursor *c, char dst[64]) { return rd_text(c, dst); }
int nsc_mp_rd_bin(nsc_mp_cursor *c, const uint8_t **data, uint32_t *n)
{
    return rd_blob(c, 1, data, n);
}

void nsc_batch_release(nsc_batch *b)
{
    free(b->mem);
    memset(b, 0, sizeof *b);
}

/* ---- acknowledgements and the resend's header -------------------------------- */

/* Where nsc_enc_begin writes the value of "acked": after the heads of the
 * batch array and the header map, "v" and its fixint value, the key "acked"
 * and the 0xcf that opens its 8 bytes. */
_Static_assert(NSC_WIRE_VERSION < 0x80, "the version is one byte");
#define ACKED_AT (1 + 1 + 2 + 1 + 6 + 1)

void nsc_wire_set_acked(void *batch, uint64_t acked)
{
    put_be((uint8_t *)batch + ACKED_AT, acked, 8);
}

void nsc_ack_encode(const nsc_ack *a, uint8_t out[NSC_ACK_LEN])
{
    put_be(put_be(put_be(out, a->stream, 8), a->next, 8), a->instance, 8)[0] = a->kind;
}

int nsc_ack_decode(const void *buf, size_t len, nsc_ack *out)
{
    const uint8_t *p = buf;
    if (len != NSC_ACK_LEN)
        return len < NSC_ACK_LEN ? NSC_WIRE_TRUNCATED : NSC_WIRE_TRAILING;
    nsc_ack a = {get_be(p, 8), get_be(p + 8, 8), get_be(p + 16, 8), p[24]};
    if (a.stream == 0 || a.kind > NSC_ACK_RESEND)
        return NSC_WIRE_BAD_VALUE;
    *out = a;
    return NSC_WIRE_OK;
}

const char *nsc_wire_strerror(int err)
{
    switch (err) {
    case NSC_WIRE_OK: return "success";
    case NSC_WIRE_EMPTY: return "the message is empty";
    case NSC_WIRE_TOO_LARGE: return "the message is longer than the size limit";
    case NSC_WIRE_TRUNCATED: return "the message ends inside a value";
    case NSC_WIRE_BAD_TYPE: return "a value has the wrong msgpack type";
    case NSC_WIRE_TOO_MANY: return "a declared array, map or string length is over the limit";
    case NSC_WIRE_TOO_DEEP: return "values are nested too deeply";
    case NSC_WIRE_BAD_VERSION: return "the batch has an unknown protocol version";
    case NSC_WIRE_TRAILING: return "there are bytes after the end of the batch";
    case NSC_WIRE_BAD_RECORD: return "a record has an unknown tag or the wrong number of fields";
    case NSC_WIRE_BAD_VALUE: return "a value is out of its range";
    case NSC_WIRE_MISSING: return "a required header field (v, seq or pid) is missing";
    case NSC_WIRE_NOMEM: return "out of memory while allocating the decoded batch";
    case NSC_WIRE_FULL: return "the record does not fit in the encoder's buffer";
    case NSC_WIRE_BAD_CHECKSUM: return "the message's checksum does not match its bytes";
    default: return "unknown wire error";
    }
}
