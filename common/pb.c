/* pb.c: the protobuf wire format, encode side (see pb.h). */
#include "pb.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2 };

/* Room for n more bytes; the buffer doubles when short. */
static int grow(nsc_pb *b, size_t n)
{
    if (b->failed)
        return -1;
    if (nsc_grow_to(&b->data, b->len + n, &b->cap, 1, 256)) {
        b->failed = 1;
        return -1;
    }
    return 0;
}

/* The common case (room left) inline: it runs for every field written. */
static inline int reserve(nsc_pb *b, size_t n) { return b->len + n <= b->cap && !b->failed ? 0 : grow(b, n); }

static inline void varint(nsc_pb *b, uint64_t v)
{
    if (reserve(b, 10) != 0)
        return;
    while (v >= 0x80) {
        b->data[b->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->data[b->len++] = (uint8_t)v;
}

static void tag(nsc_pb *b, uint32_t field, unsigned wire) { varint(b, (uint64_t)field << 3 | wire); }

void nsc_pb_reset(nsc_pb *b)
{
    b->len = 0;
    b->failed = 0;
}

void nsc_pb_free(nsc_pb *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

int nsc_pb_ok(const nsc_pb *b) { return !b->failed; }

void nsc_pb_uint(nsc_pb *b, uint32_t field, uint64_t v)
{
    tag(b, field, WIRE_VARINT);
    varint(b, v);
}

void nsc_pb_int(nsc_pb *b, uint32_t field, int64_t v) { nsc_pb_uint(b, field, (uint64_t)v); }

void nsc_pb_double(nsc_pb *b, uint32_t field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    tag(b, field, WIRE_I64);
    if (reserve(b, 8) != 0)
        return;
    for (int i = 0; i < 8; i++)
        b->data[b->len++] = (uint8_t)(bits >> (8 * i));
}

void nsc_pb_raw(nsc_pb *b, const void *p, size_t n)
{
    if (reserve(b, n) != 0)
        return;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

void nsc_pb_bytes(nsc_pb *b, uint32_t field, const void *p, size_t n)
{
    tag(b, field, WIRE_LEN);
    varint(b, n);
    nsc_pb_raw(b, p, n);
}

void nsc_pb_str(nsc_pb *b, uint32_t field, const char *s) { nsc_pb_bytes(b, field, s, strlen(s)); }

void nsc_pb_msg(nsc_pb *b, uint32_t field, const nsc_pb *sub)
{
    if (sub->failed)
        b->failed = 1;
    nsc_pb_bytes(b, field, sub->data, sub->len);
}
