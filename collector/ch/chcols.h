/* chcols.h: a table's rows gathered column by column for one insert.
 *
 * Owns the rows' memory between the writer's puts and the insert: per
 * column its values in the order the rows came, a fixed width value as its
 * little-endian bytes, a String as the uint32 index of its text among the
 * table's distinct texts (kept once each: most String columns hold a few
 * values, a batch's job, host and agent), an Array (Array(UIntN)) as its
 * elements end to end in a second buffer and each row's end in it. chrows.c puts each row's values in
 * its table's column order; chnative.c makes the insert's Native block
 * straight from the columns, sorted, with no row read back. Also the
 * growable byte buffer both use.
 *
 * Why columns: ClickHouse's Native format is column by column, and a row
 * format turned into columns at insert time costs a parse of every row and
 * a scattered copy of every value; here each value is written once into its
 * column and copied once into the block.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHCOLS_H
#define NCCLSCOPE_COLLECTOR_CHCOLS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A value is stored as the host's bytes: little-endian, as ClickHouse's. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "column values are the host's integers");

#define NSC_CH_COLS_MAX 128
/* Readable bytes past every text's start (its bytes and then slack): a
 * short text may be copied as this many. Less than 128: its length is one
 * LEB128 byte. */
#define NSC_CH_TEXT_PAD 32

/* A growable byte buffer. */
typedef struct nsc_ch_buf {
    uint8_t *p;
    size_t len, cap;
    uint64_t rows;
    int failed;  /* out of memory once: the buffer must not be sent */
} nsc_ch_buf;

/* Room for n more bytes at b->p + b->len: 0, or -1 (out of memory, b->failed set). */
int nsc_ch_reserve(nsc_ch_buf *b, size_t n);
/* The next n bytes of b, taken (b->len grows by n); NULL when out of memory. */
uint8_t *nsc_ch_room(nsc_ch_buf *b, size_t n);
/* A Native (and RowBinary) String's length: LEB128, appended to b. */
void nsc_ch_put_varint(nsc_ch_buf *b, size_t v);
/* v in LEB128 at o (room for 10 bytes); returns where it ends. */
uint8_t *nsc_ch_varint_at(uint8_t *o, size_t v);
/* The inverse: a LEB128 length at *p (before end, 5 bytes at most) into *v,
 * *p moved past it. 0, or -1 when cut short or too long. */
int nsc_ch_take_varint(const uint8_t **p, const uint8_t *end, size_t *v);

/* A distinct text: its bytes in the texts buffer. */
typedef struct nsc_ch_text {
    uint32_t at, len;
} nsc_ch_text;

typedef struct nsc_ch_cols {
    nsc_ch_buf col[NSC_CH_COLS_MAX];  /* an Array column's: each row's end in elems (bytes, uint64) */
    nsc_ch_buf elems[NSC_CH_COLS_MAX];  /* an Array column's elements, the rows' end to end */
    size_t next;              /* the column the row's next value goes to */
    size_t ncols;             /* columns of the widest row */
    uint64_t rows;
    nsc_ch_buf bytes;         /* the texts' bytes */
    nsc_ch_text *texts;       /* by index */
    uint32_t *slots;          /* hash of texts: index + 1, 0 empty */
    uint32_t last[NSC_CH_COLS_MAX];  /* a String column's last text + 1 */
    size_t ntexts, texts_cap, nslots;
    int failed;               /* out of memory once: the rows must not be sent */
} nsc_ch_cols;

/* The slow path of nsc_ch_append: b grows. */
void nsc_ch_append_grow(nsc_ch_cols *c, nsc_ch_buf *b, uint64_t v, size_t width);

/* v's width low bytes appended to b, a buffer of c (out of memory:
 * c->failed set). */
static inline void nsc_ch_append(nsc_ch_cols *c, nsc_ch_buf *b, uint64_t v, size_t width)
{
    if (b->cap - b->len < 8) {
        nsc_ch_append_grow(c, b, v, width);
        return;
    }
    memcpy(b->p + b->len, &v, 8);  /* the bytes past width are overwritten next */
    b->len += width;
}

/* The row's next value, an integer of width bytes (1, 2, 4 or 8). */
static inline void nsc_ch_put_uint(nsc_ch_cols *c, uint64_t v, size_t width)
{
    if (c->next < NSC_CH_COLS_MAX)
        nsc_ch_append(c, &c->col[c->next++], v, width);
    else
        c->failed = 1;
}

/* The next element (width bytes) of the row's next value, an Array: its
 * elements are put one by one, then nsc_ch_end_array ends it. */
static inline void nsc_ch_put_elem(nsc_ch_cols *c, uint64_t v, size_t width)
{
    if (c->next < NSC_CH_COLS_MAX)
        nsc_ch_append(c, &c->elems[c->next], v, width);
    else
        c->failed = 1;
}

/* The row's Array value holds the elements put since the last one ended. */
static inline void nsc_ch_end_array(nsc_ch_cols *c)
{
    nsc_ch_put_uint(c, c->next < NSC_CH_COLS_MAX ? c->elems[c->next].len : 0, 8);
}

/* The index of text (s, len) among c's texts, kept on first sight: put as
 * a String column's value with nsc_ch_put_uint(c, id, 4). Out of memory:
 * c->failed set (the rows are not sent). */
uint32_t nsc_ch_text_id(nsc_ch_cols *c, const void *s, size_t len);
/* The row's next value, a String of len bytes at s. */
void nsc_ch_put_text(nsc_ch_cols *c, const void *s, size_t len);
/* The row is complete: the next value starts a row. */
void nsc_ch_end_row(nsc_ch_cols *c);
/* Text id's bytes and length. */
static inline const uint8_t *nsc_ch_text_of(const nsc_ch_cols *c, uint32_t id, size_t *len)
{
    *len = c->texts[id].len;
    return c->bytes.p + c->texts[id].at;
}
/* Bytes the rows take. */
size_t nsc_ch_cols_bytes(const nsc_ch_cols *c);
/* No rows (the memory kept for the next ones). */
void nsc_ch_cols_clear(nsc_ch_cols *c);
void nsc_ch_cols_free(nsc_ch_cols *c);

#endif
