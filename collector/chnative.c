/* chnative.c: RowBinary rows to a sorted Native block (see chnative.h). */
#include "chnative.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* A key value is read with memcpy into an integer. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "RowBinary keys are read as host integers");

#define COLS_MAX 128
#define KEYS_MAX 16
#define PIECES_MAX 16
#define CHUNK 64  /* rows gathered at once, column by column */

typedef struct column {
    const char *name, *type;
    size_t name_len, type_len;
    uint8_t width;  /* bytes of a value; 0 for a String */
    uint8_t is_signed;
    int key;        /* its place in the ordering key, -1 when not in it */
    size_t bytes;   /* of its values in all rows */
    uint8_t piece;  /* the row's piece that holds it */
    uint32_t at;    /* where in that piece, for a fixed width value */
} column;

/* A distinct String of a key column, in the rows' buffer. */
typedef struct text {
    const uint8_t *p;
    size_t len;
} text;

/* A row to sort: its leading key columns packed into one 128-bit number
 * (hi, lo), each as its value less the buffer's least, in as many bits as
 * the buffer's range of it needs. */
typedef struct entry {
    uint64_t hi, lo;
    uint32_t row;
} entry;

struct nsc_ch_native {
    column cols[COLS_MAX];
    size_t ncols, nkeys, nrows;
    /* A row is pieces: each String, and each run of fixed width columns
     * (width the run's bytes), so a row is walked in a few steps. */
    uint32_t piece_width[PIECES_MAX];  /* 0: a String */
    size_t npieces;
    size_t key_col[KEYS_MAX], text_col[COLS_MAX], ntext_cols;
    int key_is_text[KEYS_MAX];
    text last[KEYS_MAX];   /* a String key's last value and its index */
    uint64_t last_id[KEYS_MAX];
    size_t *offs;          /* each row's start in the buffer */
    uint64_t *keys;        /* nkeys per row, compared as unsigned */
    entry *ent, *tmp;      /* the rows, sorted; merge scratch */
    int packed_all;        /* every key column is in the entries */
    size_t *runs;          /* starts of the runs already in order */
    size_t offs_cap, keys_cap, ent_cap, tmp_cap, runs_cap;
    text *texts;           /* interned key Strings; the key holds the index */
    uint32_t *slots;       /* hash of texts: index + 1, 0 empty */
    uint64_t *rank;        /* a text's place among all of them in order */
    size_t ntexts, texts_cap, nslots, rank_cap;
};

nsc_ch_native *nsc_ch_native_new(void) { return calloc(1, sizeof(nsc_ch_native)); }

void nsc_ch_native_free(nsc_ch_native *n)
{
    if (!n)
        return;
    free(n->offs), free(n->keys), free(n->ent), free(n->tmp), free(n->runs);
    free(n->texts), free(n->slots), free(n->rank);
    free(n);
}

/* "String", "UInt32", "Int64", ...: 0 when known. */
static int type_of(column *c)
{
    const char *t = c->type;
    size_t len = c->type_len;
    if (len == 6 && !memcmp(t, "String", 6))
        return c->width = 0, 0;
    c->is_signed = t[0] == 'I';
    size_t skip = c->is_signed ? 3 : 4;
    if (len <= skip || memcmp(t, c->is_signed ? "Int" : "UInt", skip) != 0)
        return -1;
    int bits = atoi(t + skip);
    if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
        return -1;
    c->width = (uint8_t)(bits / 8);
    return 0;
}

/* Column c's piece: a String is one; a fixed width value joins the run
 * before it or starts one. */
static int place(nsc_ch_native *n, column *c)
{
    if (c->width && n->npieces && n->piece_width[n->npieces - 1]) {
        c->piece = (uint8_t)(n->npieces - 1);
        c->at = n->piece_width[c->piece];
        n->piece_width[c->piece] += c->width;
        return 0;
    }
    if (n->npieces == PIECES_MAX)
        return -1;
    if (!c->width)
        n->text_col[n->ntext_cols++] = (size_t)(c - n->cols);
    c->piece = (uint8_t)n->npieces;
    n->piece_width[n->npieces++] = c->width;
    return 0;
}

/* "name Type, name Type, ..." into n->cols. */
static int parse_columns(nsc_ch_native *n, const char *s)
{
    n->ncols = n->npieces = n->ntext_cols = 0;
    while (*s) {
        if (n->ncols == COLS_MAX)
            return -1;
        column *c = &n->cols[n->ncols++];
        *c = (column){.name = s, .name_len = strcspn(s, " "), .key = -1};
        if (s[c->name_len] != ' ')
            return -1;
        c->type = s + c->name_len + 1;
        c->type_len = strcspn(c->type, ",");
        if (type_of(c) || place(n, c))
            return -1;
        s = c->type + c->type_len;
        s += strspn(s, ", ");
    }
    return 0;
}

/* "name, name, ..." of the ordering key: each its column's key place. */
static int parse_key(nsc_ch_native *n, const char *s)
{
    n->nkeys = 0;
    while (*s) {
        size_t len = strcspn(s, ",");
        size_t c = 0;
        while (c < n->ncols && (n->cols[c].name_len != len || memcmp(n->cols[c].name, s, len)))
            c++;
        if (c == n->ncols || n->nkeys == KEYS_MAX || n->cols[c].key >= 0)
            return -1;
        n->key_is_text[n->nkeys] = n->cols[c].width == 0;
        n->key_col[n->nkeys] = c;
        n->cols[c].key = (int)n->nkeys++;
        s += len;
        s += strspn(s, ", ");
    }
    return 0;
}

static uint64_t text_hash(const uint8_t *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Room for one more text, the hash at most half full. */
static int texts_room(nsc_ch_native *n)
{
    if (nsc_grow(&n->texts, n->ntexts, &n->texts_cap, sizeof *n->texts, 64))
        return -1;
    if (2 * (n->ntexts + 1) <= n->nslots)
        return 0;
    size_t nslots = n->nslots ? 2 * n->nslots : 256;
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < n->ntexts; i++) {
        size_t at = text_hash(n->texts[i].p, n->texts[i].len) & (nslots - 1);
        while (slots[at])
            at = (at + 1) & (nslots - 1);
        slots[at] = (uint32_t)i + 1;
    }
    free(n->slots);
    n->slots = slots;
    n->nslots = nslots;
    return 0;
}

/* Where text (p, len) is in the hash, or the empty slot it would take. */
static size_t slot_of(const nsc_ch_native *n, const uint8_t *p, size_t len)
{
    size_t at = text_hash(p, len) & (n->nslots - 1);
    for (; n->slots[at]; at = (at + 1) & (n->nslots - 1)) {
        const text *t = &n->texts[n->slots[at] - 1];
        if (t->len == len && !memcmp(t->p, p, len))
            break;
    }
    return at;
}

/* The index of text (p, len), interned on first sight; -1 out of memory
 * (only a text not seen yet can fail). */
static int64_t intern(nsc_ch_native *n, const uint8_t *p, size_t len)
{
    size_t at = n->nslots ? slot_of(n, p, len) : 0;
    if (n->nslots && n->slots[at])
        return n->slots[at] - 1;
    if (texts_room(n))
        return -1;
    at = slot_of(n, p, len);  /* the hash may have grown */
    n->texts[n->ntexts] = (text){p, len};
    n->slots[at] = (uint32_t)++n->ntexts;
    return (int64_t)n->ntexts - 1;
}

/* A fixed width value as an unsigned whose order is the value's. */
static uint64_t key_value(const column *c, const uint8_t *p)
{
    uint64_t v = 0;
    uint32_t v32;
    uint16_t v16;
    switch (c->width) {  /* RowBinary is little-endian, as the host */
    case 1: v = *p; break;
    case 2: memcpy(&v16, p, 2), v = v16; break;
    case 4: memcpy(&v32, p, 4), v = v32; break;
    default: memcpy(&v, p, 8);
    }
    if (!c->is_signed)
        return v;
    unsigned shift = 64 - 8u * c->width;
    return (uint64_t)((int64_t)(v << shift) >> shift) ^ (1ull << 63);
}

/* A String at *p: most are shorter than 128 bytes, one length byte. */
static inline const uint8_t *take_text(const uint8_t **p, const uint8_t *end, size_t *len)
{
    const uint8_t *q = *p;
    if (q == end || *q >= 0x80)
        return nsc_ch_take_string(p, end, len);
    if ((size_t)(end - q - 1) < *q)
        return NULL;
    *len = *q;
    *p = q + 1 + *q;
    return q + 1;
}

/* Where each piece of the row at p starts, and in starts[npieces] where
 * the row ends; NULL when the row is cut short. */
static const uint8_t *row_pieces(const nsc_ch_native *n, const uint8_t *p, const uint8_t *end, const uint8_t **starts)
{
    for (size_t k = 0; k < n->npieces; k++) {
        size_t w = n->piece_width[k], len;
        starts[k] = p;
        if (w ? (size_t)(end - p) < w : !take_text(&p, end, &len))
            return NULL;
        p += w;
    }
    return starts[n->npieces] = p;
}

/* The index of String key k's value at p: the last row's, most often. */
static int64_t text_key(nsc_ch_native *n, size_t k, const uint8_t *p, const uint8_t *end)
{
    size_t len;
    const uint8_t *s = take_text(&p, end, &len);
    text *last = &n->last[k];
    if (last->p && last->len == len && !memcmp(last->p, s, len))
        return (int64_t)n->last_id[k];
    int64_t id = intern(n, s, len);
    *last = (text){s, len};
    n->last_id[k] = (uint64_t)id;
    return id;
}

/* One row at *p: its keys, its Strings' byte counts; *p moves past it. */
static int scan_row(nsc_ch_native *n, const uint8_t **p, const uint8_t *end, uint64_t *keys)
{
    const uint8_t *starts[PIECES_MAX + 1];
    if (!(*p = row_pieces(n, *p, end, starts)))
        return -1;
    for (size_t k = 0; k < n->nkeys; k++) {
        const column *c = &n->cols[n->key_col[k]];
        int64_t id = c->width ? 0 : text_key(n, k, starts[c->piece], end);
        if (id < 0)
            return -1;
        keys[k] = c->width ? key_value(c, starts[c->piece] + c->at) : (uint64_t)id;
    }
    for (size_t t = 0; t < n->ntext_cols; t++) {
        column *c = &n->cols[n->text_col[t]];
        c->bytes += (size_t)(starts[c->piece + 1] - starts[c->piece]);
    }
    return 0;
}

static int texts_cmp(const void *a, const void *b)
{
    const text *x = a, *y = b;
    int r = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);
    return r ? r : (x->len > y->len) - (x->len < y->len);
}

/* Each String key's index replaced by its rank in ClickHouse's order of
 * Strings (bytes compared unsigned, a prefix first). */
static int rank_texts(nsc_ch_native *n)
{
    if (!n->ntexts)
        return 0;
    if (nsc_grow_to(&n->rank, n->ntexts, &n->rank_cap, sizeof *n->rank, 64))
        return -1;
    text *sorted = malloc(n->ntexts * sizeof *sorted);
    if (!sorted)
        return -1;
    memcpy(sorted, n->texts, n->ntexts * sizeof *sorted);
    qsort(sorted, n->ntexts, sizeof *sorted, texts_cmp);
    for (size_t i = 0; i < n->ntexts; i++)
        n->rank[n->slots[slot_of(n, sorted[i].p, sorted[i].len)] - 1] = i;
    free(sorted);
    for (size_t r = 0; r < n->nrows; r++)
        for (size_t k = 0; k < n->nkeys; k++)
            if (n->key_is_text[k])
                n->keys[r * n->nkeys + k] = n->rank[n->keys[r * n->nkeys + k]];
    return 0;
}

/* Every row's start and keys. */
static int scan_rows(nsc_ch_native *n, const nsc_ch_buf *rows)
{
    const uint8_t *p = rows->p, *end = rows->p + rows->len;
    n->nrows = n->ntexts = 0;
    memset(n->last, 0, sizeof n->last);
    if (n->nslots)
        memset(n->slots, 0, n->nslots * sizeof *n->slots);
    while (p != end) {
        size_t r = n->nrows;
        if (nsc_grow(&n->offs, r, &n->offs_cap, sizeof *n->offs, 1024) ||
            nsc_grow_to(&n->keys, (r + 1) * n->nkeys, &n->keys_cap, sizeof *n->keys, 1024) || r == UINT32_MAX)
            return -1;
        n->offs[r] = (size_t)(p - rows->p);
        if (scan_row(n, &p, end, n->keys + r * n->nkeys))
            return -1;
        n->nrows++;
    }
    for (size_t i = 0; i < n->ncols; i++)
        if (n->cols[i].width)
            n->cols[i].bytes = n->cols[i].width * n->nrows;
    return n->nrows == rows->rows ? rank_texts(n) : -1;
}

static int row_cmp(const nsc_ch_native *n, uint32_t a, uint32_t b)
{
    const uint64_t *x = n->keys + (size_t)a * n->nkeys, *y = n->keys + (size_t)b * n->nkeys;
    for (size_t k = 0; k < n->nkeys; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

/* Entries compare by their packed keys; only a tie there, when not every
 * key column fit, looks at the row's keys. */
static int entry_cmp(const nsc_ch_native *n, const entry *a, const entry *b)
{
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return n->packed_all ? 0 : row_cmp(n, a->row, b->row);
}

/* (hi, lo) shifted left by bits (1..64), v in the bits freed. */
static void pack(entry *e, uint64_t v, unsigned bits)
{
    e->hi = bits == 64 ? e->lo : e->hi << bits | e->lo >> (64 - bits);
    e->lo = bits == 64 ? v : e->lo << bits | v;
}

/* How many leading key columns fit 128 bits as (value - min) of the bits
 * their range needs; bits[k] and low[k] of each. */
static size_t packed_keys(nsc_ch_native *n, unsigned *bits, uint64_t *low)
{
    uint64_t high[KEYS_MAX] = {0};
    size_t k, used = 0;
    for (k = 0; k < n->nkeys; k++)
        low[k] = UINT64_MAX;
    for (size_t r = 0; r < n->nrows; r++)
        for (k = 0; k < n->nkeys; k++) {
            uint64_t v = n->keys[r * n->nkeys + k];
            low[k] = v < low[k] ? v : low[k];
            high[k] = v > high[k] ? v : high[k];
        }
    for (k = 0; k < n->nkeys; k++) {
        bits[k] = high[k] == low[k] ? 0 : 64 - (unsigned)__builtin_clzll(high[k] - low[k]);
        if (used + bits[k] > 128)
            break;
        used += bits[k];
    }
    return k;
}

/* Each row's entry: its leading keys packed into 128 bits, so that most
 * compares are two integers in the entry itself. */
static int make_entries(nsc_ch_native *n)
{
    unsigned bits[KEYS_MAX];
    uint64_t low[KEYS_MAX];
    if (nsc_grow_to(&n->ent, n->nrows, &n->ent_cap, sizeof *n->ent, 1024) ||
        nsc_grow_to(&n->tmp, n->nrows, &n->tmp_cap, sizeof *n->tmp, 1024) ||
        nsc_grow_to(&n->runs, n->nrows + 1, &n->runs_cap, sizeof *n->runs, 1024))
        return -1;
    size_t packed = packed_keys(n, bits, low);
    n->packed_all = packed == n->nkeys;
    for (size_t r = 0; r < n->nrows; r++) {
        entry *e = &n->ent[r];
        *e = (entry){.row = (uint32_t)r};
        for (size_t k = 0; k < packed; k++)
            if (bits[k])
                pack(e, n->keys[r * n->nkeys + k] - low[k], bits[k]);
    }
    return 0;
}

/* src[lo, mid) and src[mid, hi), each in order, merged into dst[lo, hi);
 * on equal keys the left row first. */
static void merge(const nsc_ch_native *n, const entry *src, entry *dst, size_t lo, size_t mid, size_t hi)
{
    size_t i = lo, j = mid, o = lo;
    while (i < mid && j < hi)
        dst[o++] = entry_cmp(n, &src[j], &src[i]) < 0 ? src[j++] : src[i++];
    memcpy(dst + o, src + i, (mid - i) * sizeof *dst);
    o += mid - i;
    memcpy(dst + o, src + j, (hi - j) * sizeof *dst);
}

/* n->ent: the rows in key order. A natural merge sort: the rows come in
 * runs already in order (a section's rows of one process), merged in pairs
 * until one is left; stable. */
static int sort_rows(nsc_ch_native *n)
{
    size_t rows = n->nrows, nruns = 0;
    if (make_entries(n))
        return -1;
    for (size_t r = 0; r < rows; r++)
        if (r == 0 || entry_cmp(n, &n->ent[r - 1], &n->ent[r]) > 0)
            n->runs[nruns++] = r;
    entry *src = n->ent, *dst = n->tmp;
    while (nruns > 1) {
        size_t kept = 0;
        for (size_t i = 0; i < nruns; i += 2) {
            size_t lo = n->runs[i], mid = i + 1 < nruns ? n->runs[i + 1] : rows;
            size_t hi = i + 2 < nruns ? n->runs[i + 2] : rows;
            merge(n, src, dst, lo, mid, hi);
            n->runs[kept++] = lo;
        }
        nruns = kept;
        entry *t = src;
        src = dst, dst = t;
    }
    if (src != n->ent)
        memcpy(n->ent, src, rows * sizeof *n->ent);
    return 0;
}

/* A Native String: LEB128 length, bytes. */
static void put_text(nsc_ch_buf *out, const char *s, size_t len)
{
    nsc_ch_put_varint(out, len);
    uint8_t *at = nsc_ch_room(out, len);
    if (at)
        memcpy(at, s, len);
}

/* The block's header and each column's header, with the room for its
 * values left behind it: at[c] is where column c's values go. */
static int block_layout(nsc_ch_native *n, nsc_ch_buf *out, size_t *at)
{
    *out = (nsc_ch_buf){.p = out->p, .cap = out->cap};
    nsc_ch_put_varint(out, n->ncols);
    nsc_ch_put_varint(out, n->nrows);
    for (size_t i = 0; i < n->ncols; i++) {
        const column *c = &n->cols[i];
        put_text(out, c->name, c->name_len);
        put_text(out, c->type, c->type_len);
        if (nsc_ch_reserve(out, c->bytes))
            return -1;
        at[i] = out->len;
        out->len += c->bytes;
    }
    out->rows = n->nrows;
    return 0;
}

/* Column c's values of m rows (their pieces in starts) to *to. */
static void gather_column(const column *c, const uint8_t *(*starts)[PIECES_MAX + 1], size_t m, uint8_t **to)
{
    uint8_t *o = *to;
    size_t pc = c->piece;
    switch (c->width) {  /* fixed sizes: copies the compiler inlines */
    case 1: for (size_t r = 0; r < m; r++) o[r] = starts[r][pc][c->at]; break;
    case 2: for (size_t r = 0; r < m; r++) memcpy(o + 2 * r, starts[r][pc] + c->at, 2); break;
    case 4: for (size_t r = 0; r < m; r++) memcpy(o + 4 * r, starts[r][pc] + c->at, 4); break;
    case 8: for (size_t r = 0; r < m; r++) memcpy(o + 8 * r, starts[r][pc] + c->at, 8); break;
    default:
        for (size_t r = 0; r < m; r++) {
            size_t len = (size_t)(starts[r][pc + 1] - starts[r][pc]);
            memcpy(o, starts[r][pc], len);
            o += len;
        }
        *to = o;
        return;
    }
    *to = o + c->width * m;
}

/* The rows' values, in key order, to their columns' places: CHUNK rows at
 * a time, column by column, so each column is written in runs. */
static void gather(nsc_ch_native *n, const nsc_ch_buf *rows, nsc_ch_buf *out, size_t *at)
{
    const uint8_t *end = rows->p + rows->len, *starts[CHUNK][PIECES_MAX + 1];
    for (size_t r0 = 0; r0 < n->nrows; r0 += CHUNK) {
        size_t m = n->nrows - r0 < CHUNK ? n->nrows - r0 : CHUNK;
        for (size_t r = 0; r < m; r++)
            row_pieces(n, rows->p + n->offs[n->ent[r0 + r].row], end, starts[r]);
        for (size_t i = 0; i < n->ncols; i++) {
            uint8_t *to = out->p + at[i];
            gather_column(&n->cols[i], starts, m, &to);
            at[i] = (size_t)(to - out->p);
        }
    }
}

int nsc_ch_native_block(nsc_ch_native *n, const nsc_ch_table_def *d, const nsc_ch_buf *rows, nsc_ch_buf *out)
{
    size_t at[COLS_MAX];
    if (parse_columns(n, d->columns) || parse_key(n, d->order_by) || scan_rows(n, rows) || sort_rows(n) ||
        block_layout(n, out, at))
        return -1;
    gather(n, rows, out, at);
    return 0;
}
