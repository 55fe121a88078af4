/* chevents.c: the events table's columns and values from event_fields.h (see
 * chevents.h).
 *
 * The columns are made once at run time from a table of every row of
 * event_fields.h (name, place in nsc_event, size, signedness): one column
 * per field every event has, then the Array `fields` of the type's own
 * fields in the order of its list, and of its origin fields where it has
 * one. */
#include "chevents.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bytes.h"
#include "chorigin.h"
#include "event_fields.h"

/* What a row of event_fields.h is: a field every event has, a foreign
 * event's origin, or a type's own (its nsc_type). */
enum { ALL = -1, ORIGIN = -2 };
typedef struct field {
    const char *name;
    size_t offset;
    uint8_t size, val;
    int8_t type;
} field;

#define FIELD_AT(t, member, kind, m) {#m, offsetof(nsc_event, member), sizeof(NSC_CTYPE_##kind), NSC_VAL_##kind, t},
#define COMMON_FIELD(a, kind, m, wire, store, json, nccl) FIELD_AT(ALL, m, kind, m)
#define ORIGIN_FIELD(a, kind, m, wire, store, json, nccl) FIELD_AT(ORIGIN, m, kind, m)
#define TYPE_OF(t, s) t
#define STRUCT_OF(t, s) s
#define TYPE_FIELD(a, kind, m, wire, store, json, nccl) FIELD_AT(TYPE_OF a, d.STRUCT_OF a.m, kind, m)
#define TYPE_FIELDS(t, s, list) list(TYPE_FIELD, (t, s))

static const field fields[] = {
    NSC_FIELDS_HEAD(COMMON_FIELD, _) NSC_FIELDS_ORIGIN(ORIGIN_FIELD, _) NSC_EVENT_TYPES(TYPE_FIELDS)};
#define NFIELDS (sizeof fields / sizeof fields[0])
#define COUNT(a, kind, m, wire, store, json, nccl) +1
enum { NHEAD = 0 NSC_FIELDS_HEAD(COUNT, _), NORIGIN = 0 NSC_FIELDS_ORIGIN(COUNT, _) };

/* The column list's length at most: every common field's name with the
 * longest type. */
#define NAME_ROOM(a, kind, m, wire, store, json, nccl) +sizeof(#m ", UInt64")
#define LEAD NSC_CH_PROC_COLUMNS ", type UInt8"
#define ARRAY ", fields Array(UInt64), "
enum { COLUMNS_ROOM = sizeof(LEAD ARRAY NSC_CH_ORIGIN_COLUMNS) NSC_FIELDS_HEAD(NAME_ROOM, _) };

static struct {
    pthread_once_t once;
    char text[COLUMNS_ROOM];
    size_t width;               /* bytes of the common columns */
    size_t first[NSC_T_COUNT];  /* a type's rows: fields[first .. first + count) */
    size_t count[NSC_T_COUNT];
} ch = {.once = PTHREAD_ONCE_INIT};

static void make_columns(void)
{
    strcpy(ch.text, LEAD);
    for (size_t i = 0; i < NFIELDS; i++) {
        const field *f = &fields[i];
        if (f->type == ALL) {
            size_t n = strlen(ch.text);
            snprintf(ch.text + n, sizeof ch.text - n, ", %s %sInt%d", f->name, f->val == NSC_VAL_SIGNED ? "" : "U",
                     8 * f->size);
            ch.width += f->size;
        } else if (f->type >= 0) {  /* the table lists a type's rows together */
            if (!ch.count[f->type])
                ch.first[f->type] = i;
            ch.count[f->type]++;
        }
    }
    strcat(ch.text, ARRAY NSC_CH_ORIGIN_COLUMNS);
}

const char *nsc_ch_event_columns(void)
{
    pthread_once(&ch.once, make_columns);
    return ch.text;
}

/* f's value in e, a signed member sign-extended to 64 bits. */
static uint64_t value_of(const nsc_event *e, const field *f)
{
    uint64_t v = nsc_load_uint((const uint8_t *)e + f->offset, f->size);
    unsigned shift = 64 - 8u * f->size;
    return f->val == NSC_VAL_SIGNED && shift ? (uint64_t)((int64_t)(v << shift) >> shift) : v;
}

static int has_origin(const nsc_event *e)
{
    for (size_t i = NHEAD; i < NHEAD + NORIGIN; i++)
        if (value_of(e, &fields[i]))
            return 1;
    return 0;
}

void nsc_ch_event_values(nsc_ch_cols *t, const nsc_event *e)
{
    pthread_once(&ch.once, make_columns);
    nsc_ch_put_uint(t, e->type, 1);
    for (size_t i = 0; i < NHEAD; i++)
        nsc_ch_put_uint(t, nsc_load_uint((const uint8_t *)e + fields[i].offset, fields[i].size), fields[i].size);
    if (e->type < NSC_T_COUNT)
        for (size_t i = ch.first[e->type]; i < ch.first[e->type] + ch.count[e->type]; i++)
            nsc_ch_put_elem(t, value_of(e, &fields[i]), 8);
    if (has_origin(e))
        for (size_t i = NHEAD; i < NHEAD + NORIGIN; i++)
            nsc_ch_put_elem(t, value_of(e, &fields[i]), 8);
    nsc_ch_end_array(t);
}

/* f's value from the size bytes at p (little-endian) into e. */
static void get_field(const uint8_t *p, size_t size, nsc_event *e, const field *f)
{
    nsc_store_uint((uint8_t *)e + f->offset, f->size, nsc_get_le(p, size));
}

size_t nsc_ch_event_read(const uint8_t *p, size_t len, nsc_event *e)
{
    pthread_once(&ch.once, make_columns);
    size_t at = 1 + ch.width, n;
    if (len < at || p[0] >= NSC_T_COUNT)
        return 0;
    const uint8_t *q = p + at;  /* the Array's length */
    if (nsc_ch_take_varint(&q, p + len, &n))
        return 0;
    at = (size_t)(q - p);
    size_t own = ch.count[p[0]];
    if ((n != own && n != own + NORIGIN) || len - at < 8 * n)
        return 0;
    memset(e, 0, sizeof *e);
    e->type = p[0];
    for (size_t i = 0, col = 1; i < NHEAD; col += fields[i++].size)
        get_field(p + col, fields[i].size, e, &fields[i]);
    for (size_t i = 0; i < n; i++)
        get_field(p + at + 8 * i, 8, e, &fields[i < own ? ch.first[e->type] + i : NHEAD + i - own]);
    return at + 8 * n;
}
