/* test_event_fields.c: docs/protocol.md's table of descriptor fields says what
 * common/event_fields.h says: for each event type, the row "| Name (n) |
 * field kind, ... |" with the fields on the wire in their wire order. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "wire_samples.h"

typedef struct wire_field {
    int pos;
    const char *text;  /* "name kind" as the protocol's table writes it */
} wire_field;

/* The protocol's names of the kinds: a string id travels as u16. */
#define DOC_U8 "u8"
#define DOC_U16 "u16"
#define DOC_U32 "u32"
#define DOC_U64 "u64"
#define DOC_I32 "i32"
#define DOC_I64 "i64"
#define DOC_STR "u16"
#define DOC_REF "ref"
#define DOC_TIME "time"
#define DOC_PID "pid"

#define DOC_POS(...) DOC_POS_(__VA_ARGS__)
#define DOC_POS_(has, n) ((has) ? (n) : -1)
#define DOC_ROW(a, kind, m, wire, store, json, nccl) {DOC_POS(wire), #m " " DOC_##kind},
#define DOC_TYPE(type, s, list)                                                               \
    case type: {                                                                              \
        static const wire_field f[] = {list(DOC_ROW, ~)};                                     \
        *n = sizeof f / sizeof *f;                                                            \
        return f;                                                                             \
    }

static const wire_field *fields_of(unsigned type, size_t *n)
{
    switch (type) {
        NSC_EVENT_TYPES(DOC_TYPE)
    }
    *n = 0;
    return NULL;
}

/* The table's row for type: its wire fields by position. */
static void doc_row(unsigned type, char *out, size_t len)
{
    size_t n, at = (size_t)snprintf(out, len, "| %s (%u) | ", nsc_type_name(type), type);
    const wire_field *f = fields_of(type, &n);
    for (int pos = 0, found = 1; found; pos++) {
        found = 0;
        for (size_t i = 0; i < n; i++)
            if (f[i].pos == pos) {
                at += (size_t)snprintf(out + at, len - at, "%s%s", pos ? ", " : "", f[i].text);
                found = 1;
            }
    }
    snprintf(out + at, len - at, " |\n");
}

Test(event_fields, protocol_md_lists_every_types_wire_fields)
{
    const char *doc = sample_doc(NSC_PROTOCOL_MD);
    cr_assert(doc, "%s", NSC_PROTOCOL_MD);
    unsigned rows = 0;
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        size_t n;
        if (!fields_of(t, &n))
            continue;  /* Group, ProxyCtrl: no descriptor */
        char want[1024];
        doc_row(t, want, sizeof want);
        cr_assert(strstr(doc, want), "docs/protocol.md has no row %s", want);
        rows++;
    }
    cr_assert_eq(rows, NSC_T_COUNT - 2);
}
