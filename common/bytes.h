/* bytes.h: big-endian integers, record members by size, zigzag varints, and
 * a bounds-checked reader.
 *
 * Owns the byte-level encoding every collector format shares: store keys (where
 * big-endian makes byte order equal numeric order), serialized clock models,
 * block headers and the delta-coded columns of blocks and ledger values. The reader never reads past its end: it latches a failure that
 * the decoder checks once, so decoders stay short and cannot overrun.
 */
#ifndef NCCLSCOPE_BYTES_H
#define NCCLSCOPE_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void nsc_put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void nsc_put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static inline void nsc_put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static inline uint16_t nsc_get_be16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t nsc_get_be32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t nsc_get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* width (at most 8) bytes at p, little-endian: a RowBinary value. */
static inline uint64_t nsc_get_le(const uint8_t *p, size_t width)
{
    uint64_t v = 0;
    for (size_t i = 0; i < width; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Doubles travel as the big-endian bits of their IEEE-754 representation. */
static inline uint64_t nsc_double_bits(double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    return v;
}

static inline double nsc_bits_double(uint64_t v)
{
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

/* An unsigned member of 1, 2, 4 or 8 bytes at p, in the machine's order:
 * the record fields that tables describe by offset and size (the block
 * columns, the ClickHouse event columns). Loads zero-extend; stores keep
 * the low bytes. */
static inline uint64_t nsc_load_uint(const void *p, size_t size)
{
    uint8_t v8;
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;
    switch (size) {
    case 1: memcpy(&v8, p, 1); return v8;
    case 2: memcpy(&v16, p, 2); return v16;
    case 4: memcpy(&v32, p, 4); return v32;
    default: memcpy(&v64, p, 8); return v64;
    }
}

static inline void nsc_store_uint(void *p, size_t size, uint64_t v)
{
    uint8_t v8 = (uint8_t)v;
    uint16_t v16 = (uint16_t)v;
    uint32_t v32 = (uint32_t)v;
    switch (size) {
    case 1: memcpy(p, &v8, 1); break;
    case 2: memcpy(p, &v16, 2); break;
    case 4: memcpy(p, &v32, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

/* Signed differences as small unsigned numbers (0, -1, 1, -2 -> 0, 1, 2, 3),
 * so that a varint of a small difference of either sign is short. */
static inline uint64_t nsc_zigzag(uint64_t d)
{
    return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static inline uint64_t nsc_unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

/* LEB128 varint at o (at most 10 bytes); returns the end. Most values are
 * small deltas: one byte, taken without the loop. The write pointer stays
 * local so that byte stores (which may alias anything) do not force the
 * caller's fields to be reloaded. */
static inline uint8_t *nsc_put_varint(uint8_t *o, uint64_t v)
{
    if (v < 0x80) {
        *o = (uint8_t)v;
        return o + 1;
    }
    do {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    } while (v >= 0x80);
    *o++ = (uint8_t)v;
    return o;
}

/* Writer over a caller-sized buffer (sized exactly beforehand by the format). */
typedef struct nsc_wbuf {
    uint8_t *p;
} nsc_wbuf;

static inline void nsc_w32(nsc_wbuf *w, uint32_t v) { nsc_put_be32(w->p, v); w->p += 4; }
static inline void nsc_w64(nsc_wbuf *w, uint64_t v) { nsc_put_be64(w->p, v); w->p += 8; }
static inline void nsc_wdbl(nsc_wbuf *w, double d) { nsc_w64(w, nsc_double_bits(d)); }

/* Reader: on overrun every later read returns 0 and `bad` stays set. */
typedef struct nsc_rbuf {
    const uint8_t *p, *end;
    int bad;
} nsc_rbuf;

static inline const uint8_t *nsc_rtake(nsc_rbuf *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    return at;
}

static inline uint32_t nsc_r32(nsc_rbuf *r)
{
    const uint8_t *p = nsc_rtake(r, 4);
    return p ? nsc_get_be32(p) : 0;
}

static inline uint64_t nsc_r64(nsc_rbuf *r)
{
    const uint8_t *p = nsc_rtake(r, 8);
    return p ? nsc_get_be64(p) : 0;
}

/* A varint (nsc_put_varint); more than 10 bytes, or past the end, is bad. */
static inline uint64_t nsc_rvarint(nsc_rbuf *r)
{
    uint64_t x = 0;
    for (int shift = 0; !r->bad && shift < 70; shift += 7) {
        const uint8_t *b = nsc_rtake(r, 1);
        if (b)
            x |= (uint64_t)(*b & 0x7f) << shift;
        if (b && !(*b & 0x80))
            return x;
    }
    r->bad = 1;
    return 0;
}

static inline double nsc_rdbl(nsc_rbuf *r)
{
    return nsc_bits_double(nsc_r64(r));
}

#endif
