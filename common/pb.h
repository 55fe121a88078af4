/* pb.h: the protobuf wire format, encode side only, for Perfetto traces.
 *
 * Owns a growable byte buffer and the four wire types we need (varint,
 * 64-bit, length-delimited, and nested messages as length-delimited bytes).
 * A message is built in its own buffer and then appended to its parent, so
 * no length has to be patched afterwards. Allocation failure is sticky: the
 * buffer remembers it and nsc_pb_ok() reports it once at the end.
 */
#ifndef NCCLSCOPE_PB_H
#define NCCLSCOPE_PB_H

#include <stddef.h>
#include <stdint.h>

typedef struct nsc_pb {
    uint8_t *data;
    size_t len, cap;
    int failed;
} nsc_pb;

void nsc_pb_reset(nsc_pb *b);  /* empty it, keep the memory */
void nsc_pb_free(nsc_pb *b);
int nsc_pb_ok(const nsc_pb *b);

void nsc_pb_uint(nsc_pb *b, uint32_t field, uint64_t v);   /* uint64, enum, bool */
void nsc_pb_int(nsc_pb *b, uint32_t field, int64_t v);     /* int64 (not zigzag) */
void nsc_pb_double(nsc_pb *b, uint32_t field, double v);
void nsc_pb_bytes(nsc_pb *b, uint32_t field, const void *p, size_t n);
void nsc_pb_str(nsc_pb *b, uint32_t field, const char *s);
void nsc_pb_msg(nsc_pb *b, uint32_t field, const nsc_pb *sub);
/* Bytes as they are, no tag: whole messages, or any other output gathered
 * in the buffer before one write. */
void nsc_pb_raw(nsc_pb *b, const void *p, size_t n);

#endif
