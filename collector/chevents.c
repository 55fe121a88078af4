/* chevents.c: the events table's columns and values from event_fields.h (see
 * chevents.h).
 *
 * The preprocessor cannot merge the types' rows by name, so the columns are
 * made once at run time from a table of every row (name, place in nsc_event,
 * size, signedness); what the merge relies on is checked at compile time
 * below. A column's ClickHouse type follows from its rows' C type: (U)IntN of
 * the member's width, signed as the kind is; a string id is its UInt16. */
#include "chevents.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bytes.h"
#include "event_fields.h"

/* Names, checked at compile time: every name is a typedef of the C type its
 * rows hold (an array whose length says the kind: number, signed, string
 * id), and C11 allows a typedef to be repeated only with the same type. So
 * types that share a name share its C type and kind (one column fits all),
 * and no per-type name is one of the row's common columns (those are
 * typedefs of a type no field has), which would make two columns of one
 * name. A clash fails the build here; rename the member in event_fields.h. */
struct nsc_ch_common_column;
#define COMMON_NAME(a, kind, m, wire, store, json, nccl) typedef struct nsc_ch_common_column nsc_ch_name_##m;
#define FIELD_NAME(a, kind, m, wire, store, json, nccl) typedef NSC_CTYPE_##kind nsc_ch_name_##m[1 + NSC_VAL_##kind];
#define TYPE_NAMES(t, s, list) list(FIELD_NAME, _)
NSC_FIELDS_HEAD(COMMON_NAME, _)
NSC_FIELDS_ORIGIN(COMMON_NAME, _)
typedef struct nsc_ch_common_column nsc_ch_name_job, nsc_ch_name_host, nsc_ch_name_pid, nsc_ch_name_type,
    nsc_ch_name_agent, nsc_ch_name_epoch, nsc_ch_name_batch_seq, nsc_ch_name_section, nsc_ch_name_idx;
NSC_EVENT_TYPES(TYPE_NAMES)

/* One row of event_fields.h: type ALL for the fields every event has. */
enum { ALL = -1 };
typedef struct field {
    const char *name;
    size_t offset;
    uint8_t size, val;
    int8_t type;
    uint8_t col;  /* its column, set when the columns are made */
} field;

#define FIELD_AT(t, member, kind, m) {#m, offsetof(nsc_event, member), sizeof(NSC_CTYPE_##kind), NSC_VAL_##kind, t, 0},
#define COMMON_FIELD(a, kind, m, wire, store, json, nccl) FIELD_AT(ALL, m, kind, m)
#define TYPE_OF(t, s) t
#define STRUCT_OF(t, s) s
#define TYPE_FIELD(a, kind, m, wire, store, json, nccl) FIELD_AT(TYPE_OF a, d.STRUCT_OF a.m, kind, m)
#define TYPE_FIELDS(t, s, list) list(TYPE_FIELD, (t, s))

static field fields[] = {
    NSC_FIELDS_HEAD(COMMON_FIELD, _) NSC_FIELDS_ORIGIN(COMMON_FIELD, _) NSC_EVENT_TYPES(TYPE_FIELDS)};
#define NFIELDS (sizeof fields / sizeof fields[0])

/* The column list's length at most: every row's name with the longest type. */
#define NAME_ROOM(a, kind, m, wire, store, json, nccl) +sizeof(#m ", UInt64")
#define TYPE_ROOM(t, s, list) list(NAME_ROOM, _)
#define LEAD NSC_CH_PROC_COLUMNS ", type UInt8"
enum {
    COLUMNS_ROOM = sizeof(LEAD ", " NSC_CH_ORIGIN_COLUMNS) NSC_FIELDS_HEAD(NAME_ROOM, _)
        NSC_FIELDS_ORIGIN(NAME_ROOM, _) NSC_EVENT_TYPES(TYPE_ROOM)
};
_Static_assert(NFIELDS <= UINT8_MAX, "a column's index is a uint8_t");

typedef struct column {
    const char *name;
    size_t at;  /* byte offset in the row's values after type */
    uint8_t size;
} column;

static struct {
    pthread_once_t once;
    char text[COLUMNS_ROOM];
    column cols[NFIELDS];
    size_t ncols, width;        /* columns, bytes of a row's values after type */
    size_t first[NSC_T_COUNT];  /* a type's rows: fields[first .. first + count) */
    size_t count[NSC_T_COUNT];
    int16_t src[NSC_T_COUNT][NFIELDS];  /* a type's field in each column, -1 none */
} ch = {.once = PTHREAD_ONCE_INIT};

static uint8_t column_of(const field *f)
{
    size_t c = 0;
    while (c < ch.ncols && strcmp(ch.cols[c].name, f->name) != 0)
        c++;
    if (c == ch.ncols) {
        ch.cols[c] = (column){f->name, ch.width, f->size};
        ch.width += f->size;
        ch.ncols++;
        size_t n = strlen(ch.text);
        snprintf(ch.text + n, sizeof ch.text - n, ", %s %sInt%d", f->name, f->val == NSC_VAL_SIGNED ? "" : "U",
                 8 * f->size);
    }
    return (uint8_t)c;
}

static void make_columns(void)
{
    strcpy(ch.text, LEAD);
    for (size_t i = 0; i < NFIELDS; i++) {
        field *f = &fields[i];
        f->col = column_of(f);
        if (f->type == ALL)
            continue;
        /* the table lists a type's rows together */
        if (!ch.count[f->type])
            ch.first[f->type] = i;
        ch.count[f->type]++;
    }
    strcat(ch.text, ", " NSC_CH_ORIGIN_COLUMNS);
    memset(ch.src, 0xff, sizeof ch.src);
    for (size_t i = 0; i < NFIELDS; i++)
        for (int t = 0; t < NSC_T_COUNT; t++)
            if (fields[i].type == ALL || fields[i].type == t)
                ch.src[t][fields[i].col] = (int16_t)i;
}

const char *nsc_ch_event_columns(void)
{
    pthread_once(&ch.once, make_columns);
    return ch.text;
}

/* A column holds the member's bits in its width, whatever its sign; a
 * column of another type's member holds 0. */
void nsc_ch_event_values(nsc_ch_cols *t, const nsc_event *e)
{
    pthread_once(&ch.once, make_columns);
    const int16_t *src = ch.src[e->type < NSC_T_COUNT ? e->type : 0];
    nsc_ch_put_uint(t, e->type, 1);
    for (size_t c = 0; c < ch.ncols; c++) {
        const field *f = src[c] < 0 ? NULL : &fields[src[c]];
        nsc_ch_put_uint(t, f ? nsc_load_uint((const uint8_t *)e + f->offset, f->size) : 0, ch.cols[c].size);
    }
}

static void get_field(const uint8_t *row, nsc_event *e, const field *f)
{
    const uint8_t *at = row + ch.cols[f->col].at;
    uint64_t v = 0;
    for (size_t i = 0; i < f->size; i++)
        v |= (uint64_t)at[i] << (8 * i);
    nsc_store_uint((uint8_t *)e + f->offset, f->size, v);
}

size_t nsc_ch_event_read(const uint8_t *p, size_t len, nsc_event *e)
{
    pthread_once(&ch.once, make_columns);
    if (len < 1 + ch.width || p[0] >= NSC_T_COUNT)
        return 0;
    memset(e, 0, sizeof *e);
    e->type = p[0];
    for (size_t i = 0; i < NFIELDS && fields[i].type == ALL; i++)
        get_field(p + 1, e, &fields[i]);
    for (size_t i = ch.first[e->type]; i < ch.first[e->type] + ch.count[e->type]; i++)
        get_field(p + 1, e, &fields[i]);
    return 1 + ch.width;
}
