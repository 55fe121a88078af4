/* fields.h: the members of a record by a fixed list of names, in one pass.
 *
 * Owns the lookup the record consumers (export, timeline lanes, CSV) do for
 * every line: instead of one walk over the members per name wanted (each
 * comparing every key), one walk that hashes each key once into a small
 * table of the wanted names. The first member of a name wins, as with
 * nsc_json_get.
 */
#ifndef NCCLSCOPE_FIELDS_H
#define NCCLSCOPE_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"

#define NSC_FIELDS_MAX 32
#define NSC_FIELDS_SLOTS 128

typedef struct nsc_fields {
    const char *const *names;
    size_t n;
    size_t len[NSC_FIELDS_MAX];
    uint8_t slot[NSC_FIELDS_SLOTS];  /* name index + 1; 0: empty */
} nsc_fields;

/* names: n <= NSC_FIELDS_MAX distinct names, kept by reference. */
void nsc_fields_init(nsc_fields *f, const char *const *names, size_t n);
/* The index of the member's name in the list, or -1. */
int nsc_fields_id(const nsc_fields *f, const nsc_json *member);
/* out[i]: the first member of obj named names[i], or NULL (obj not an object). */
void nsc_fields_pick(const nsc_fields *f, const nsc_json *obj, const nsc_json **out);

#endif
