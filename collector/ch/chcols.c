/* chcols.c: rows column by column, their texts kept once (see chcols.h). */
#include "chcols.h"

#include <stdlib.h>

#include "grow.h"

#define COL_FIRST 4096  /* bytes of a column's first buffer */

int nsc_ch_reserve(nsc_ch_buf *b, size_t n)
{
    if (!b->failed && nsc_grow_to(&b->p, b->len + n, &b->cap, 1, 1 << 16))
        b->failed = 1;
    return b->failed ? -1 : 0;
}

uint8_t *nsc_ch_room(nsc_ch_buf *b, size_t n)
{
    if (nsc_ch_reserve(b, n))
        return NULL;
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}

uint8_t *nsc_ch_varint_at(uint8_t *o, size_t v)
{
    do {
        *o++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return o;
}

int nsc_ch_take_varint(const uint8_t **p, const uint8_t *end, size_t *v)
{
    *v = 0;
    for (int shift = 0;; shift += 7) {
        if (*p == end || shift > 28)
            return -1;
        uint8_t b = *(*p)++;
        *v |= (size_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
}

void nsc_ch_put_varint(nsc_ch_buf *b, size_t v)
{
    if (!nsc_ch_reserve(b, 10))
        b->len = (size_t)(nsc_ch_varint_at(b->p + b->len, v) - b->p);
}

void nsc_ch_append_grow(nsc_ch_cols *c, nsc_ch_buf *b, uint64_t v, size_t width)
{
    if (nsc_grow_to(&b->p, b->len + 8, &b->cap, 1, COL_FIRST)) {
        c->failed = 1;
        return;
    }
    memcpy(b->p + b->len, &v, 8);
    b->len += width;
}

static uint32_t text_hash(const uint8_t *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return (uint32_t)(h ^ h >> 32);
}

static int same_text(const nsc_ch_cols *c, uint32_t id, const void *s, size_t len)
{
    return c->texts[id].len == len && !memcmp(c->bytes.p + c->texts[id].at, s, len);
}

/* Where text (s, len) is in the hash, or the empty slot it would take. */
static size_t slot_of(const nsc_ch_cols *c, const void *s, size_t len)
{
    size_t at = text_hash(s, len) & (c->nslots - 1);
    while (c->slots[at] && !same_text(c, c->slots[at] - 1, s, len))
        at = (at + 1) & (c->nslots - 1);
    return at;
}

/* Room for one more text, the hash at most half full. */
static int texts_room(nsc_ch_cols *c)
{
    if (nsc_grow(&c->texts, c->ntexts, &c->texts_cap, sizeof *c->texts, 64))
        return -1;
    if (2 * (c->ntexts + 1) <= c->nslots)
        return 0;
    size_t nslots = c->nslots ? 2 * c->nslots : 256;
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -1;
    free(c->slots);
    c->slots = slots;
    c->nslots = nslots;
    for (size_t i = 0; i < c->ntexts; i++)
        slots[slot_of(c, c->bytes.p + c->texts[i].at, c->texts[i].len)] = (uint32_t)i + 1;
    return 0;
}

/* The index of text (s, len), kept on first sight; -1 out of memory. */
static int64_t intern(nsc_ch_cols *c, const void *s, size_t len)
{
    size_t at = c->nslots ? slot_of(c, s, len) : 0;
    if (c->nslots && c->slots[at])
        return c->slots[at] - 1;
    if (len > UINT32_MAX || c->ntexts >= UINT32_MAX - 1 || texts_room(c) ||
        nsc_ch_reserve(&c->bytes, len + NSC_CH_TEXT_PAD) || c->bytes.len > UINT32_MAX - len)
        return -1;
    c->texts[c->ntexts] = (nsc_ch_text){(uint32_t)c->bytes.len, (uint32_t)len};
    memcpy(c->bytes.p + c->bytes.len, s, len);
    c->bytes.len += len;
    c->slots[slot_of(c, s, len)] = (uint32_t)++c->ntexts;
    return (int64_t)c->ntexts - 1;
}

uint32_t nsc_ch_text_id(nsc_ch_cols *c, const void *s, size_t len)
{
    int64_t id = intern(c, s, len);
    if (id < 0)
        c->failed = 1;
    return id < 0 ? 0 : (uint32_t)id;
}

void nsc_ch_put_text(nsc_ch_cols *c, const void *s, size_t len)
{
    size_t k = c->next;
    if (k >= NSC_CH_COLS_MAX) {
        c->failed = 1;
        return;
    }
    uint32_t last = c->last[k];  /* most often the column's last text again */
    int64_t id = last && same_text(c, last - 1, s, len) ? (int64_t)last - 1 : intern(c, s, len);
    if (id < 0) {
        c->failed = 1;
        c->next++;
        return;
    }
    c->last[k] = (uint32_t)id + 1;
    nsc_ch_put_uint(c, (uint64_t)id, 4);
}

void nsc_ch_end_row(nsc_ch_cols *c)
{
    if (c->next > c->ncols)
        c->ncols = c->next;
    c->next = 0;
    c->rows++;
}

size_t nsc_ch_cols_bytes(const nsc_ch_cols *c)
{
    size_t n = c->bytes.len;
    for (size_t k = 0; k < c->ncols; k++)
        n += c->col[k].len + c->elems[k].len;
    return n;
}

void nsc_ch_cols_clear(nsc_ch_cols *c)
{
    for (size_t k = 0; k < NSC_CH_COLS_MAX && (k < c->ncols || k < c->next); k++)
        c->col[k].len = c->elems[k].len = 0;
    if (c->nslots)
        memset(c->slots, 0, c->nslots * sizeof *c->slots);
    memset(c->last, 0, sizeof c->last);
    c->bytes.len = 0;
    c->next = c->ncols = c->ntexts = 0;
    c->rows = 0;
    c->failed = 0;
}

void nsc_ch_cols_free(nsc_ch_cols *c)
{
    for (size_t k = 0; k < NSC_CH_COLS_MAX; k++)
        free(c->col[k].p), free(c->elems[k].p);
    free(c->bytes.p), free(c->texts), free(c->slots);
    *c = (nsc_ch_cols){0};
}
