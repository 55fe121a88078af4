/* chnative.c: a table's columns to a sorted Native block (see chnative.h). */
#include "chnative.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define COLS_MAX NSC_CH_COLS_MAX
#define KEYS_MAX 16
#define CHUNK 1024  /* rows made or gathered at once, column by column: their entries stay in cache */
#define DIGIT_BITS 11  /* of a packed key, per pass of the radix sort */
#define DIGITS (1u << DIGIT_BITS)
#define PASSES_MAX ((128 + DIGIT_BITS - 1) / DIGIT_BITS)

typedef struct column {
    const char *name, *type;
    size_t name_len, type_len;
    uint8_t width;  /* bytes of a value; 0 for a String (its text's index, 4 bytes) */
    uint8_t is_signed;
    uint8_t array;  /* Array(of width): a row's value is its elements' end (chcols.h) */
    int key;        /* its place in the ordering key, -1 when not in it */
    size_t bytes;   /* of its values in the block */
} column;

/* A row to sort: its leading key columns packed into one 128-bit number
 * (hi, lo), each as its value less the rows' least, in as many bits as
 * the rows' range of it needs. */
typedef struct entry {
    uint64_t hi, lo;
    uint32_t row;
} entry;

struct nsc_ch_native {
    column cols[COLS_MAX];
    size_t ncols, nkeys, nrows;
    size_t key_col[KEYS_MAX];
    const nsc_ch_cols *rows;  /* the block's rows, while it is made */
    entry *ent, *tmp;         /* the rows, sorted; merge scratch */
    int packed_all;           /* every key column is in the entries */
    unsigned used;            /* low bits of the entries' keys in use */
    uint32_t count[PASSES_MAX][DIGITS];  /* the radix sort's counts */
    size_t *runs;             /* starts of the runs already in order */
    uint64_t scratch[CHUNK];  /* a key column's values of CHUNK rows */
    size_t ent_cap, tmp_cap, runs_cap;
    uint32_t *order;          /* the texts by their bytes */
    uint64_t *rank;           /* a text's place among all of them in order */
    size_t order_cap, rank_cap;
};

nsc_ch_native *nsc_ch_native_new(void) { return calloc(1, sizeof(nsc_ch_native)); }

void nsc_ch_native_free(nsc_ch_native *n)
{
    if (!n)
        return;
    free(n->ent), free(n->tmp), free(n->runs), free(n->order), free(n->rank);
    free(n);
}

/* "String", "UInt32", "Int64", "Array(UInt64)", ...: 0 when known. */
static int type_of(column *c)
{
    const char *t = c->type;
    size_t len = c->type_len;
    c->array = len > 7 && !memcmp(t, "Array(", 6) && t[len - 1] == ')';
    if (c->array)
        t += 6, len -= 7;
    if (len == 6 && !memcmp(t, "String", 6))
        return c->array ? -1 : (c->width = 0, 0);
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

/* "name Type, name Type, ..." into n->cols. */
static int parse_columns(nsc_ch_native *n, const char *s)
{
    n->ncols = 0;
    while (*s) {
        if (n->ncols == COLS_MAX)
            return -1;
        column *c = &n->cols[n->ncols++];
        *c = (column){.name = s, .name_len = strcspn(s, " "), .key = -1};
        if (s[c->name_len] != ' ')
            return -1;
        c->type = s + c->name_len + 1;
        c->type_len = strcspn(c->type, ",");
        if (type_of(c))
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
        if (c == n->ncols || n->nkeys == KEYS_MAX || n->cols[c].key >= 0 || n->cols[c].array)
            return -1;
        n->key_col[n->nkeys] = c;
        n->cols[c].key = (int)n->nkeys++;
        s += len;
        s += strspn(s, ", ");
    }
    return 0;
}

static size_t varint_size(size_t v)
{
    size_t n = 1;
    while (v >>= 7)
        n++;
    return n;
}

/* Row r's value of column c as an unsigned whose order is the value's; a
 * String's is its text's rank in ClickHouse's order. */
static uint64_t key_at(const nsc_ch_native *n, const column *c, size_t r)
{
    const uint8_t *p = n->rows->col[c - n->cols].p;
    uint64_t v = 0;
    uint32_t v32;
    uint16_t v16;
    switch (c->width) {
    case 0: memcpy(&v32, p + 4 * r, 4); return n->rank[v32];
    case 1: v = p[r]; break;
    case 2: memcpy(&v16, p + 2 * r, 2), v = v16; break;
    case 4: memcpy(&v32, p + 4 * r, 4), v = v32; break;
    default: memcpy(&v, p + 8 * r, 8);
    }
    if (!c->is_signed)
        return v;
    unsigned shift = 64 - 8u * c->width;
    return (uint64_t)((int64_t)(v << shift) >> shift) ^ (1ull << 63);
}

/* An Array column's rows end in order, within its elements, on an
 * element: its bytes in the block (the offsets, then the elements). */
static int check_array(column *c, const nsc_ch_buf *ends, const nsc_ch_buf *elems, size_t nrows)
{
    uint64_t last = 0, end;
    for (size_t r = 0; r < nrows; r++) {
        memcpy(&end, ends->p + 8 * r, 8);
        if (end < last || end % c->width)
            return -1;
        last = end;
    }
    if (last != elems->len)
        return -1;
    c->bytes = 8 * nrows + elems->len;
    return 0;
}

/* Each column holds a value per row; a String column's bytes in the block. */
static int check_rows(nsc_ch_native *n, const nsc_ch_cols *rows)
{
    if (rows->failed || rows->ncols != n->ncols || rows->next || rows->rows > UINT32_MAX)
        return -1;
    n->rows = rows;
    n->nrows = rows->rows;
    for (size_t i = 0; i < n->ncols; i++) {
        column *c = &n->cols[i];
        const nsc_ch_buf *b = &rows->col[i];
        if (b->len != (c->array ? 8 : c->width ? c->width : 4) * n->nrows)
            return -1;
        if (c->array) {
            if (check_array(c, b, &rows->elems[i], n->nrows))
                return -1;
            continue;
        }
        c->bytes = c->width * n->nrows;
        for (size_t r = 0; !c->width && r < n->nrows; r++) {
            uint32_t id;
            memcpy(&id, b->p + 4 * r, 4);
            if (id >= rows->ntexts)
                return -1;
            c->bytes += rows->texts[id].len + varint_size(rows->texts[id].len);
        }
    }
    return 0;
}

static _Thread_local const nsc_ch_cols *sorting;  /* the texts qsort compares */

static int text_cmp(const void *a, const void *b)
{
    size_t xl, yl;
    const uint8_t *x = nsc_ch_text_of(sorting, *(const uint32_t *)a, &xl);
    const uint8_t *y = nsc_ch_text_of(sorting, *(const uint32_t *)b, &yl);
    int r = memcmp(x, y, xl < yl ? xl : yl);
    return r ? r : (xl > yl) - (xl < yl);
}

/* Each text's rank in ClickHouse's order of Strings (bytes compared
 * unsigned, a prefix first). */
static int rank_texts(nsc_ch_native *n)
{
    size_t nt = n->rows->ntexts;
    if (!nt)
        return 0;
    if (nsc_grow_to(&n->rank, nt, &n->rank_cap, sizeof *n->rank, 64) ||
        nsc_grow_to(&n->order, nt, &n->order_cap, sizeof *n->order, 64))
        return -1;
    for (size_t i = 0; i < nt; i++)
        n->order[i] = (uint32_t)i;
    sorting = n->rows;
    qsort(n->order, nt, sizeof *n->order, text_cmp);
    for (size_t i = 0; i < nt; i++)
        n->rank[n->order[i]] = i;
    return 0;
}

static int row_cmp(const nsc_ch_native *n, uint32_t a, uint32_t b)
{
    for (size_t k = 0; k < n->nkeys; k++) {
        const column *c = &n->cols[n->key_col[k]];
        uint64_t x = key_at(n, c, a), y = key_at(n, c, b);
        if (x != y)
            return x < y ? -1 : 1;
    }
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

/* Column c's values (as key_at) of m rows from r0 into n->scratch: the
 * width's loop. */
static void key_values(nsc_ch_native *n, const column *c, size_t r0, size_t m)
{
    const uint8_t *p = n->rows->col[c - n->cols].p;
    uint64_t *out = n->scratch;
    uint32_t v32;
    uint16_t v16;
    switch (c->width) {
    case 0: for (size_t r = 0; r < m; r++) memcpy(&v32, p + 4 * (r0 + r), 4), out[r] = n->rank[v32]; return;
    case 1: for (size_t r = 0; r < m; r++) out[r] = p[r0 + r]; break;
    case 2: for (size_t r = 0; r < m; r++) memcpy(&v16, p + 2 * (r0 + r), 2), out[r] = v16; break;
    case 4: for (size_t r = 0; r < m; r++) memcpy(&v32, p + 4 * (r0 + r), 4), out[r] = v32; break;
    default: memcpy(out, p + 8 * r0, 8 * m);
    }
    if (!c->is_signed)
        return;
    unsigned shift = 64 - 8u * c->width;
    for (size_t r = 0; r < m; r++)
        out[r] = (uint64_t)((int64_t)(out[r] << shift) >> shift) ^ (1ull << 63);
}

/* The bits column c's range of values needs; its least in *low. */
static unsigned key_bits(nsc_ch_native *n, const column *c, uint64_t *low)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t r0 = 0; r0 < n->nrows; r0 += CHUNK) {
        size_t m = n->nrows - r0 < CHUNK ? n->nrows - r0 : CHUNK;
        key_values(n, c, r0, m);
        for (size_t r = 0; r < m; r++) {
            lo = n->scratch[r] < lo ? n->scratch[r] : lo;
            hi = n->scratch[r] > hi ? n->scratch[r] : hi;
        }
    }
    *low = lo;
    return hi <= lo ? 0 : 64 - (unsigned)__builtin_clzll(hi - lo);
}

/* Each row's entry: as many leading key columns as fit packed into 128
 * bits (each as its value less the least, in the bits its range needs), so
 * that most compares are two integers in the entry itself. */
static int make_entries(nsc_ch_native *n)
{
    unsigned bits[KEYS_MAX], used = 0;
    uint64_t low[KEYS_MAX];
    size_t packed = 0;
    if (nsc_grow_to(&n->ent, n->nrows, &n->ent_cap, sizeof *n->ent, 1024) ||
        nsc_grow_to(&n->tmp, n->nrows, &n->tmp_cap, sizeof *n->tmp, 1024) ||
        nsc_grow_to(&n->runs, n->nrows + 1, &n->runs_cap, sizeof *n->runs, 1024))
        return -1;
    for (; packed < n->nkeys; packed++) {
        bits[packed] = key_bits(n, &n->cols[n->key_col[packed]], &low[packed]);
        if (used + bits[packed] > 128)
            break;
        used += bits[packed];
    }
    for (size_t r0 = 0; r0 < n->nrows; r0 += CHUNK) {
        size_t m = n->nrows - r0 < CHUNK ? n->nrows - r0 : CHUNK;
        entry *e = n->ent + r0;
        for (size_t r = 0; r < m; r++)
            e[r] = (entry){.row = (uint32_t)(r0 + r)};
        for (size_t k = 0; k < packed; k++) {
            if (!bits[k])
                continue;
            key_values(n, &n->cols[n->key_col[k]], r0, m);
            for (size_t r = 0; r < m; r++)
                pack(&e[r], n->scratch[r] - low[k], bits[k]);
        }
    }
    n->packed_all = packed == n->nkeys;
    n->used = used;
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

/* Bits [shift, shift + DIGIT_BITS) of e's packed key. */
static inline uint32_t digit(const entry *e, unsigned shift)
{
    uint64_t v = shift >= 64                 ? e->hi >> (shift - 64)
                 : shift > 64 - DIGIT_BITS ? e->lo >> shift | e->hi << (64 - shift)
                                            : e->lo >> shift;
    return (uint32_t)v & (DIGITS - 1);
}

/* n->ent in key order, every key column packed: a radix sort of the packed
 * keys, DIGIT_BITS at a time from the lowest (stable); a digit every row
 * shares costs no pass. The rows come in nearly as many runs as rows (a
 * table's key starts with columns a section's rows share, then values in no
 * order), so a merge of runs would take about log2(rows) passes. */
static void radix_sort(nsc_ch_native *n)
{
    unsigned passes = n->nrows > 1 ? (n->used + DIGIT_BITS - 1) / DIGIT_BITS : 0;
    entry *src = n->ent, *dst = n->tmp;
    memset(n->count, 0, passes * sizeof n->count[0]);
    for (size_t r = 0; r < n->nrows; r++)
        for (unsigned p = 0; p < passes; p++)
            n->count[p][digit(&src[r], p * DIGIT_BITS)]++;
    for (unsigned p = 0; p < passes; p++) {
        uint32_t *at = n->count[p], sum = 0;
        if (at[digit(&src[0], p * DIGIT_BITS)] == n->nrows)
            continue;
        for (size_t d = 0; d < DIGITS; d++) {
            uint32_t c = at[d];
            at[d] = sum;
            sum += c;
        }
        for (size_t r = 0; r < n->nrows; r++)
            dst[at[digit(&src[r], p * DIGIT_BITS)]++] = src[r];
        entry *t = src;
        src = dst, dst = t;
    }
    if (src != n->ent)
        memcpy(n->ent, src, n->nrows * sizeof *n->ent);
}

/* n->ent: the rows in key order. Keys wider than 128 bits: a natural merge
 * sort, runs merged in pairs until one is left; stable. */
static int sort_rows(nsc_ch_native *n)
{
    size_t rows = n->nrows, nruns = 0;
    if (make_entries(n))
        return -1;
    if (n->packed_all) {
        radix_sort(n);
        return 0;
    }
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

/* String column c's texts of m sorted rows from r0, in order, from src to
 * o (before end); returns where they end. A short text is copied as a
 * fixed NSC_CH_TEXT_PAD bytes (the texts are padded, see chcols.h), which
 * the compiler inlines; the bytes past it are written over by the next
 * one, and the last rows are copied exactly. */
static uint8_t *gather_texts(const nsc_ch_native *n, const uint8_t *src, size_t r0, size_t m, uint8_t *o,
                             const uint8_t *end)
{
    const entry *e = n->ent + r0;
    for (size_t r = 0; r < m; r++) {
        uint32_t id;
        size_t len;
        memcpy(&id, src + 4 * (size_t)e[r].row, 4);
        const uint8_t *t = nsc_ch_text_of(n->rows, id, &len);
        if (len < NSC_CH_TEXT_PAD && end - o > NSC_CH_TEXT_PAD) {
            *o = (uint8_t)len;
            memcpy(o + 1, t, NSC_CH_TEXT_PAD);
            o += 1 + len;
            continue;
        }
        o = nsc_ch_varint_at(o, len);
        memcpy(o, t, len);
        o += len;
    }
    return o;
}

/* Column c's values of m sorted rows from r0, in order, from src to o
 * (before end); returns where they end. */
static uint8_t *gather_column(const nsc_ch_native *n, const column *c, const uint8_t *src, size_t r0, size_t m,
                              uint8_t *o, const uint8_t *end)
{
    const entry *e = n->ent + r0;
    switch (c->width) {  /* fixed sizes: copies the compiler inlines */
    case 0: return gather_texts(n, src, r0, m, o, end);
    case 1: for (size_t r = 0; r < m; r++) o[r] = src[e[r].row]; break;
    case 2: for (size_t r = 0; r < m; r++) memcpy(o + 2 * r, src + 2 * (size_t)e[r].row, 2); break;
    case 4: for (size_t r = 0; r < m; r++) memcpy(o + 4 * r, src + 4 * (size_t)e[r].row, 4); break;
    default: for (size_t r = 0; r < m; r++) memcpy(o + 8 * r, src + 8 * (size_t)e[r].row, 8); break;
    }
    return o + (size_t)c->width * m;
}

/* Array column i's rows in key order to o: Native's offsets (each row's
 * end, counted in elements), then the elements. */
static void gather_array(const nsc_ch_native *n, size_t i, uint8_t *o)
{
    const uint8_t *ends = n->rows->col[i].p, *elems = n->rows->elems[i].p;
    uint8_t *v = o + 8 * n->nrows;
    uint64_t total = 0;
    for (size_t r = 0; r < n->nrows; r++) {
        size_t row = n->ent[r].row;
        uint64_t from = 0, to;
        if (row)
            memcpy(&from, ends + 8 * (row - 1), 8);
        memcpy(&to, ends + 8 * row, 8);
        if (to > from)  /* no elements yet: no buffer either */
            memcpy(v, elems + from, to - from);
        v += to - from;
        total += (to - from) / n->cols[i].width;
        memcpy(o + 8 * r, &total, 8);
    }
}

/* Every column's values in key order to their places (at[i]): CHUNK rows
 * at a time, column by column, so the rows' entries stay in cache; an
 * Array column whole. */
static void gather(const nsc_ch_native *n, nsc_ch_buf *out, size_t *at)
{
    uint8_t *o[COLS_MAX];
    const uint8_t *end[COLS_MAX];
    for (size_t i = 0; i < n->ncols; i++)
        o[i] = out->p + at[i], end[i] = o[i] + n->cols[i].bytes;
    for (size_t r0 = 0; r0 < n->nrows; r0 += CHUNK) {
        size_t m = n->nrows - r0 < CHUNK ? n->nrows - r0 : CHUNK;
        for (size_t i = 0; i < n->ncols; i++)
            if (!n->cols[i].array)
                o[i] = gather_column(n, &n->cols[i], n->rows->col[i].p, r0, m, o[i], end[i]);
    }
    for (size_t i = 0; i < n->ncols; i++)
        if (n->cols[i].array)
            gather_array(n, i, out->p + at[i]);
}

int nsc_ch_native_block(nsc_ch_native *n, const nsc_ch_table_def *d, const nsc_ch_cols *rows, nsc_ch_buf *out)
{
    size_t at[COLS_MAX];
    n->rows = rows;
    if (parse_columns(n, d->columns) || parse_key(n, d->order_by) || check_rows(n, rows) || rank_texts(n) ||
        sort_rows(n) || block_layout(n, out, at))
        return -1;
    gather(n, out, at);
    return 0;
}
