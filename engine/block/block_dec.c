/* block_dec.c: decoding a block.
 *
 * Owns the decoder: it checks the frame, decompresses the columns into
 * reusable scratch, validates every column's length before it allocates,
 * and decodes only the event types and parts the caller asks for.
 */
#include "block_int.h"

#include <stdlib.h>
#include <zstd.h>

#include "bytes.h"

/* Decoding runs column by column: one field of every record before the next
 * field, so the loop body is the same for a whole column, a column nobody
 * asked for is never read, and no record is copied to serve as the base of
 * the next one (the bases live in a small per-type array). */

typedef struct colrd {
    const uint8_t *p, *end;
} colrd;

static int get_varint_checked(colrd *c, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (c->p == c->end)
            return NSC_BLOCK_ETRUNC;
        uint8_t b = *c->p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return NSC_BLOCK_ETRUNC;  /* more than 10 bytes: not a varint */
}

/* Ten bytes left in the column hold any varint: no check per byte then. */
static inline int get_varint(colrd *c, uint64_t *v)
{
    if (c->end - c->p < 10)
        return get_varint_checked(c, v);
    const uint8_t *p = c->p;
    uint64_t b = *p++, x = b & 0x7f;
    for (int shift = 7; b & 0x80; shift += 7) {
        if (shift == 70)
            return NSC_BLOCK_ETRUNC;
        b = *p++;
        x |= (b & 0x7f) << shift;
    }
    c->p = p;
    *v = x;
    return 0;
}

/* Skip k varints, eight bytes at a time while the k-th ends further on: the
 * values of a run of events nobody asked for. As strict as decoding them: run
 * counts the continuation bytes since the last value ended (at most nine). */
static int skip_varints(colrd *c, uint32_t k)
{
    const uint64_t high = 0x8080808080808080u;
    const uint8_t *p = c->p;
    unsigned run = 0;
    while (k && c->end - p >= 8) {
        uint64_t w = 0;
        for (unsigned i = 0; i < 8; i++)  /* little-endian: byte i is bits 8i.. */
            w |= (uint64_t)p[i] << 8 * i;
        uint64_t ends = ~w & high;  /* the high bit of each byte that ends a value */
        uint32_t nends = (uint32_t)(((ends >> 7) * 0x0101010101010101u) >> 56);
        if (nends >= k)
            break;  /* the k-th value ends in this word: byte by byte */
        if (!ends) {
            if ((run += 8) > 9)
                return NSC_BLOCK_ETRUNC;
        } else {
            if (run + (unsigned)__builtin_ctzll(ends) / 8 > 9)
                return NSC_BLOCK_ETRUNC;
            run = (unsigned)__builtin_clzll(ends) / 8;
        }
        k -= nends;
        p += 8;
    }
    for (; k; p++) {
        if (p == c->end)
            return NSC_BLOCK_ETRUNC;
        if (!(*p & 0x80))
            run = 0, k--;
        else if (++run > 9)
            return NSC_BLOCK_ETRUNC;
    }
    c->p = p;
    return 0;
}

/* Store v into f of rec; returns the value as load() reads it back. */
static inline uint64_t put_field(void *rec, const field *f, uint64_t v)
{
    store(rec, f, v);
    switch (f->size) {
    case 1: return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int8_t)v : (uint8_t)v;
    case 2: return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int16_t)v : (uint16_t)v;
    case 4: return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int32_t)v : (uint32_t)v;
    default: return v;
    }
}

/* The stored events and which of them the caller keeps. */
typedef struct ev_cols {
    const uint8_t *types;  /* the type column, one byte per stored event */
    uint32_t n;            /* stored events */
    uint32_t want;         /* type mask of the events kept */
    nsc_event *out;        /* the kept events, in stored order */
} ev_cols;

/* How many events from i on are not kept. */
static uint32_t run_not_kept(const ev_cols *d, uint32_t i)
{
    uint32_t j = i;
    while (j < d->n && !(d->want >> d->types[j] & 1))
        j++;
    return j - i;
}

/* One common field's column. Values of events not kept are skipped a run at
 * a time. */
static int decode_common_column(const ev_cols *d, colrd *c, const field *f)
{
    uint64_t prev[NSC_T_COUNT] = {0};
    nsc_event *ev = d->out;
    for (uint32_t i = 0; i < d->n; i++) {
        uint32_t skip = run_not_kept(d, i);
        if (skip && skip_varints(c, skip))
            return NSC_BLOCK_ETRUNC;
        if ((i += skip) == d->n)
            break;
        unsigned t = d->types[i];
        uint64_t z;
        if (get_varint(c, &z))
            return NSC_BLOCK_ETRUNC;
        uint64_t base = f->rel == NO_REL ? prev[t] : load_u64(ev, f->rel);
        prev[t] = put_field(ev, f, base + nsc_unzigzag(z));
        ev++;
    }
    return c->p == c->end ? 0 : NSC_BLOCK_ETRAILING;
}

/* Skip the payload values of the n events from i on (none kept) in the first
 * nslots slots: each slot holds a value per event whose type has it. */
static int skip_payload(const ev_cols *d, uint32_t i, uint32_t n, colrd *slots, unsigned nslots)
{
    uint32_t per_type[NSC_T_COUNT] = {0}, per_slot[NPAYLOAD] = {0};
    for (uint32_t k = i; k < i + n; k++)
        per_type[d->types[k]]++;
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        for (unsigned j = 0; per_type[t] && j < payload_fields[t].n && j < nslots; j++)
            per_slot[j] += per_type[t];
    for (unsigned j = 0; j < nslots; j++)
        if (per_slot[j] && skip_varints(&slots[j], per_slot[j]))
            return NSC_BLOCK_ETRUNC;
    return 0;
}

/* The payload slots, event by event: an event reads only the slots its type
 * has (most events have one or two of the fourteen). Only the slots a kept
 * type has are read (and checked). */
static int decode_payload(const ev_cols *d, colrd *slots)
{
    uint64_t prev[NSC_T_COUNT][NPAYLOAD];
    memset(prev, 0, sizeof prev);
    unsigned nslots = 0;
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        if (d->want >> t & 1 && payload_fields[t].n > nslots)
            nslots = payload_fields[t].n;
    nsc_event *ev = d->out;
    for (uint32_t i = 0; i < d->n; i++) {
        uint32_t skip = run_not_kept(d, i);
        if (skip && skip_payload(d, i, skip, slots, nslots))
            return NSC_BLOCK_ETRUNC;
        if ((i += skip) == d->n)
            break;
        unsigned t = d->types[i];
        const type_fields *tf = &payload_fields[t];
        for (unsigned j = 0; j < tf->n; j++) {
            const field *f = &tf->f[j];
            uint64_t z;
            if (get_varint(&slots[j], &z))
                return NSC_BLOCK_ETRUNC;
            uint64_t base = f->rel == NO_REL ? prev[t][j] : load_u64(ev, f->rel);
            prev[t][j] = put_field(ev, f, base + nsc_unzigzag(z));
        }
        ev++;
    }
    for (unsigned j = 0; j < nslots; j++)
        if (slots[j].p != slots[j].end)
            return NSC_BLOCK_ETRAILING;
    return 0;
}

/* One column of n records of `size` bytes (states, completions): each value
 * is relative to the same field of the previous record. */
static int decode_plain_column(colrd *c, void *recs, size_t size, uint32_t n, const field *f)
{
    uint64_t prev = 0;
    uint8_t *rec = recs;
    for (uint32_t i = 0; i < n; i++, rec += size) {
        uint64_t z;
        if (get_varint(c, &z))
            return NSC_BLOCK_ETRUNC;
        prev = put_field(rec, f, prev + nsc_unzigzag(z));
    }
    return c->p == c->end ? 0 : NSC_BLOCK_ETRAILING;
}

/* What decoding reuses from one block to the next: the zstd context (its
 * tables cost more to set up than a small block costs to decompress) and the
 * buffer the columns are decompressed into. */
struct nsc_block_dec {
    ZSTD_DCtx *zd;  /* NULL: a one-shot decode, zstd makes its own */
    uint8_t *raw;
    size_t cap;
};

int nsc_block_dec_new(nsc_block_dec **out)
{
    nsc_block_dec *d = calloc(1, sizeof *d);
    if (!d || !(d->zd = ZSTD_createDCtx())) {
        free(d);
        return NSC_BLOCK_ENOMEM;
    }
    *out = d;
    return 0;
}

void nsc_block_dec_free(nsc_block_dec *d)
{
    if (!d)
        return;
    ZSTD_freeDCtx(d->zd);
    free(d->raw);
    free(d);
}

/* The payload's raw column bytes, decompressed into d->raw when needed. */
static int payload(nsc_block_dec *d, const uint8_t *buf, size_t len, const nsc_block_hdr *h,
                   const uint8_t **raw, size_t *raw_len)
{
    uint64_t n = nsc_get_be32(buf + 24);
    uint64_t least = NCOLS + (uint64_t)h->nevents * EVENT_MIN_BYTES +
                     (uint64_t)h->nstates * NSTATE + (uint64_t)h->ncompletions * NCOMPL;
    uint64_t most = NCOLS * 10 +
                    ((uint64_t)h->nevents * (1 + NCOMMON + NPAYLOAD) +
                     (uint64_t)h->nstates * NSTATE + (uint64_t)h->ncompletions * NCOMPL) * 10;
    if (n < least || n > most)
        return NSC_BLOCK_ELIMIT;
    const uint8_t *body = buf + NSC_BLOCK_HDR_LEN;
    size_t body_len = len - NSC_BLOCK_HDR_LEN;
    *raw_len = (size_t)n;
    if (nsc_get_be32(buf + 4) == CODEC_RAW) {
        if (body_len != n)
            return NSC_BLOCK_ECOLUMN;
        *raw = body;
        return 0;
    }
    if (ZSTD_getFrameContentSize(body, body_len) != n)
        return NSC_BLOCK_EDECOMPRESS;
    if (n > d->cap) {
        uint8_t *p = realloc(d->raw, (size_t)n);
        if (!p)
            return NSC_BLOCK_ENOMEM;
        d->raw = p;
        d->cap = (size_t)n;
    }
    size_t got = d->zd ? ZSTD_decompressDCtx(d->zd, d->raw, (size_t)n, body, body_len)
                       : ZSTD_decompress(d->raw, (size_t)n, body, body_len);
    if (ZSTD_isError(got) || got != n)
        return NSC_BLOCK_EDECOMPRESS;
    *raw = d->raw;
    return 0;
}

/* Split raw into its columns; their lengths must add up to the rest exactly. */
static int split_columns(const uint8_t *raw, size_t raw_len, colrd *cols)
{
    colrd table = {raw, raw + raw_len};
    uint64_t lens[NCOLS], sum = 0;
    for (int i = 0; i < NCOLS; i++) {
        if (get_varint(&table, &lens[i]) || lens[i] > raw_len)
            return NSC_BLOCK_ECOLUMN;
        sum += lens[i];
    }
    if (sum != (uint64_t)(table.end - table.p))
        return NSC_BLOCK_ECOLUMN;
    const uint8_t *p = table.p;
    for (int i = 0; i < NCOLS; i++) {
        cols[i].p = p;
        cols[i].end = p + lens[i];
        p += lens[i];
    }
    return 0;
}

/* The type column: exactly one known type per stored event. */
static int check_types(const colrd *c, uint32_t n)
{
    if ((size_t)(c->end - c->p) < n)
        return NSC_BLOCK_ETRUNC;
    if ((size_t)(c->end - c->p) > n)
        return NSC_BLOCK_ETRAILING;
    for (uint32_t i = 0; i < n; i++)
        if (c->p[i] >= NSC_T_COUNT)
            return NSC_BLOCK_ETYPE;
    return 0;
}

static int is_time(const field *f)
{
    return f->off == offsetof(nsc_event, start_ns) || f->off == offsetof(nsc_event, stop_ns);
}

static int decode_events(colrd *cols, const ev_cols *d, unsigned parts)
{
    int rc = 0;
    /* The common columns and the type write every byte before the payload
     * union; only the union needs zeroing (a type fills part of it), or the
     * whole event when only the times of the common fields are decoded. */
    int times_only = parts & NSC_BLOCK_TIMES_ONLY;
    for (uint32_t i = 0, k = 0; i < d->n; i++)
        if (d->want >> d->types[i] & 1) {
            if (times_only)
                memset(&d->out[k], 0, sizeof *d->out);
            else
                memset(&d->out[k].d, 0, sizeof d->out->d);
            d->out[k++].type = d->types[i];
        }
    for (unsigned i = 0; !rc && i < NCOMMON; i++)
        if (!times_only || is_time(&common_fields[i]))
            rc = decode_common_column(d, &cols[C_COMMON + i], &common_fields[i]);
    return rc ? rc : decode_payload(d, &cols[C_PAYLOAD]);
}

static int decode_states(colrd *cols, nsc_block *b)
{
    int rc = 0;
    for (unsigned i = 0; !rc && i < NSTATE; i++)
        rc = decode_plain_column(&cols[C_STATE + i], b->states, sizeof *b->states,
                                 b->hdr.nstates, &state_fields[i]);
    for (uint32_t i = 0; !rc && i < b->hdr.nstates; i++)
        if (b->states[i].state >= NSC_S_COUNT)
            rc = NSC_BLOCK_ETYPE;
    return rc;
}

static int decode_completions(colrd *cols, nsc_block *b)
{
    int rc = 0;
    for (unsigned i = 0; !rc && i < NCOMPL; i++)
        rc = decode_plain_column(&cols[C_COMPL + i], b->completions, sizeof *b->completions,
                                 b->hdr.ncompletions, &compl_fields[i]);
    return rc;
}

static int decode(nsc_block_dec *dec, const uint8_t *buf, size_t len, uint32_t types,
                  unsigned parts, nsc_block *b)
{
    const uint8_t *raw;
    size_t raw_len;
    colrd cols[NCOLS];
    int rc = nsc_block_read_hdr(buf, len, &b->hdr);
    if (rc || (rc = payload(dec, buf, len, &b->hdr, &raw, &raw_len)) ||
        (rc = split_columns(raw, raw_len, cols)) ||
        (rc = check_types(&cols[C_TYPE], b->hdr.nevents)))
        return rc;
    ev_cols d = {cols[C_TYPE].p, b->hdr.nevents, types & NSC_MASK_ALL, NULL};
    b->hdr.nevents = 0;
    for (uint32_t i = 0; i < d.n; i++)
        b->hdr.nevents += d.want >> d.types[i] & 1;
    if (!(parts & NSC_BLOCK_STATES))
        b->hdr.nstates = 0;
    if (!(parts & NSC_BLOCK_COMPLETIONS))
        b->hdr.ncompletions = 0;
    size_t ev_bytes = b->hdr.nevents * sizeof *b->events;
    size_t st_bytes = b->hdr.nstates * sizeof *b->states;
    size_t co_bytes = b->hdr.ncompletions * sizeof *b->completions;
    if (!(b->mem = malloc(ev_bytes + st_bytes + co_bytes + 1)))
        return NSC_BLOCK_ENOMEM;
    memset((uint8_t *)b->mem + ev_bytes, 0, st_bytes); /* state records have padding */
    b->events = d.out = b->mem;
    b->states = (nsc_state_rec *)((uint8_t *)b->mem + ev_bytes);
    b->completions = (nsc_completion *)((uint8_t *)b->mem + ev_bytes + st_bytes);
    if (b->hdr.nevents && (rc = decode_events(cols, &d, parts)))
        return rc;
    if ((parts & NSC_BLOCK_STATES) && (rc = decode_states(cols, b)))
        return rc;
    return parts & NSC_BLOCK_COMPLETIONS ? decode_completions(cols, b) : 0;
}

int nsc_block_decode_with(nsc_block_dec *dec, const void *buf, size_t len, uint32_t types,
                          unsigned parts, nsc_block *out)
{
    memset(out, 0, sizeof *out);
    int rc = decode(dec, buf, len, types, parts, out);
    if (rc)
        nsc_block_release(out);
    return rc;
}

int nsc_block_decode_sel(const void *buf, size_t len, uint32_t types, unsigned parts,
                         nsc_block *out)
{
    nsc_block_dec once = {0};
    int rc = nsc_block_decode_with(&once, buf, len, types, parts, out);
    free(once.raw);
    return rc;
}

int nsc_block_decode(const void *buf, size_t len, nsc_block *out)
{
    return nsc_block_decode_sel(buf, len, NSC_MASK_ALL, NSC_BLOCK_STATES | NSC_BLOCK_COMPLETIONS,
                                out);
}

void nsc_block_release(nsc_block *b)
{
    free(b->mem);
    memset(b, 0, sizeof *b);
}
