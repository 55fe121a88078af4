/* block_int.h: the block format as the block's own files share it
 * (block.c, block_enc.c, block_dec.c); nothing else includes it.
 *
 * Owns the frame constants (magic, codecs), the field tables that say what
 * each column holds and what its values are relative to, the column
 * numbering, and reading and writing a field of a record. The tables are
 * static so that each direction's loops see constant tables, as they did
 * when both lived in one file.
 */
#ifndef NCCLSCOPE_BLOCK_INT_H
#define NCCLSCOPE_BLOCK_INT_H

#include <stddef.h>
#include <string.h>

#include "block.h"
#include "bytes.h"

#define BLOCK_MAGIC 0x4e534201u /* "NSB", version 1 */
#define BLOCK_MAGIC_MASK 0xffffff00u
#define CODEC_RAW 0u
#define CODEC_ZSTD 1u

/* ---- field tables ------------------------------------------------------ */

enum { F_SIGNED = 1, F_STR = 2 };
#define NO_REL 0xffffu

/* One stored field: where it lives in its record, and what its value is
 * encoded against (rel: another uint64 field of the same record, else the
 * same field of the previous record of the same type). */
typedef struct field {
    uint16_t off;
    uint8_t size;
    uint8_t flags;
    uint16_t rel;
} field;

#define MEMBER_SIZE(T, m) ((uint8_t)sizeof(((T *)0)->m))
#define STORE_FLAGS(kind)                                                                     \
    (NSC_VAL_##kind == NSC_VAL_SIGNED ? F_SIGNED : NSC_VAL_##kind == NSC_VAL_STR ? F_STR : 0)
#define STORE_FIELD(path, kind, rel)                                                          \
    {offsetof(nsc_event, path), MEMBER_SIZE(nsc_event, path), STORE_FLAGS(kind), rel},
#define STORE_HEAD_ROW(a, kind, m, wire, store, json, nccl) STORE_FIELD(m, kind, store)
#define STORE_ROW(a, kind, m, wire, store, json, nccl) STORE_FIELD(a.m, kind, store)
_Static_assert(NSC_PREV == NO_REL, "event_fields.h's NSC_PREV is the block's NO_REL");

/* Common columns: event_fields.h's head rows, then its origin rows. The
 * decoder zeroes only the payload union: event.h checks that these and the
 * type fill every byte before it. */
#define NCOMMON (0 NSC_FIELDS_HEAD(NSC_ROW_COUNT, ~) NSC_FIELDS_ORIGIN(NSC_ROW_COUNT, ~))
_Static_assert(NCOMMON == 11, "a common field more or less needs a new block version");
static const field common_fields[NCOMMON] = {NSC_FIELDS_HEAD(STORE_HEAD_ROW, ~)
                                                 NSC_FIELDS_ORIGIN(STORE_HEAD_ROW, ~)};

/* Payload columns: a type's k-th row in event_fields.h is stored in slot k
 * (the rows are in struct order). Slots are numbered across types, so a
 * type with more rows than NPAYLOAD needs a new block version. */
#define NPAYLOAD 14
typedef struct type_fields {
    uint8_t n;
    field f[NPAYLOAD];
} type_fields;

#define STORE_TYPE(type, s, list) [type] = {0 list(NSC_ROW_COUNT, ~), {list(STORE_ROW, d.s)}},
#define STORE_FITS(type, s, list)                                                             \
    _Static_assert(0 list(NSC_ROW_COUNT, ~) <= NPAYLOAD, #type ": more fields than slots");
NSC_EVENT_TYPES(STORE_FITS)
static const type_fields payload_fields[NSC_T_COUNT] = {NSC_EVENT_TYPES(STORE_TYPE)};

#define NSTATE 5
static const field state_fields[NSTATE] = {
    {offsetof(nsc_state_rec, id), 8, 0, NO_REL},
    {offsetof(nsc_state_rec, ts_ns), 8, 0, NO_REL},
    {offsetof(nsc_state_rec, arg), 8, 0, NO_REL},
    {offsetof(nsc_state_rec, tid), 4, 0, NO_REL},
    {offsetof(nsc_state_rec, state), 1, 0, NO_REL}};

#define NCOMPL 2
static const field compl_fields[NCOMPL] = {
    {offsetof(nsc_completion, id), 8, 0, NO_REL},
    {offsetof(nsc_completion, ts_ns), 8, 0, NO_REL}};

/* Columns: event type, common fields, payload slots, state fields, completion fields. */
enum {
    C_TYPE = 0,
    C_COMMON = 1,
    C_PAYLOAD = C_COMMON + NCOMMON,
    C_STATE = C_PAYLOAD + NPAYLOAD,
    C_COMPL = C_STATE + NSTATE,
    NCOLS = C_COMPL + NCOMPL
};
#define EVENT_MIN_BYTES (1 + NCOMMON) /* every event writes at least one byte per column */

static inline uint64_t load(const void *rec, const field *f)
{
    uint64_t v = nsc_load_uint((const uint8_t *)rec + f->off, f->size);
    if (!(f->flags & F_SIGNED))
        return v;
    switch (f->size) {
    case 1: return (uint64_t)(int64_t)(int8_t)v;
    case 2: return (uint64_t)(int64_t)(int16_t)v;
    case 4: return (uint64_t)(int64_t)(int32_t)v;
    default: return v;
    }
}

static inline void store(void *rec, const field *f, uint64_t v) { nsc_store_uint((uint8_t *)rec + f->off, f->size, v); }

static inline uint64_t load_u64(const void *rec, uint16_t off)
{
    uint64_t v;
    memcpy(&v, (const uint8_t *)rec + off, 8);
    return v;
}

/* block.c */
void nsc_blk_write_hdr(uint8_t *p, uint32_t codec, uint32_t raw_len, const nsc_block_hdr *h);

#endif
