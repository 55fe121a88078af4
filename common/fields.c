/* fields.c: one-pass member lookup by name (see fields.h). */
#include "fields.h"

#include <string.h>

/* Length and the first and last bytes tell the timeline's names apart well
 * enough that a probe rarely goes past its first slot. */
static size_t hash(const char *key, size_t len)
{
    if (len == 0)
        return 0;
    return (len * 31 + (unsigned char)key[0] * 7 + (unsigned char)key[len - 1] * 3 +
            (len > 2 ? (unsigned char)key[len / 2] : 0)) & (NSC_FIELDS_SLOTS - 1);
}

void nsc_fields_init(nsc_fields *f, const char *const *names, size_t n)
{
    memset(f, 0, sizeof *f);
    f->names = names;
    f->n = n < NSC_FIELDS_MAX ? n : NSC_FIELDS_MAX;
    for (size_t i = 0; i < f->n; i++) {
        f->len[i] = strlen(names[i]);
        size_t j = hash(names[i], f->len[i]);
        while (f->slot[j])
            j = (j + 1) & (NSC_FIELDS_SLOTS - 1);
        f->slot[j] = (uint8_t)(i + 1);
    }
}

int nsc_fields_id(const nsc_fields *f, const nsc_json *m)
{
    if (!m->key)
        return -1;
    for (size_t j = hash(m->key, m->key_len); f->slot[j]; j = (j + 1) & (NSC_FIELDS_SLOTS - 1)) {
        size_t i = f->slot[j] - 1u;
        if (f->len[i] == m->key_len && memcmp(f->names[i], m->key, m->key_len) == 0)
            return (int)i;
    }
    return -1;
}

void nsc_fields_pick(const nsc_fields *f, const nsc_json *obj, const nsc_json **out)
{
    for (size_t i = 0; i < f->n; i++)
        out[i] = NULL;
    if (!obj || obj->kind != NSC_JSON_OBJECT)
        return;
    for (const nsc_json *m = nsc_json_first(obj); m; m = nsc_json_next(obj, m)) {
        int id = nsc_fields_id(f, m);
        if (id >= 0 && !out[id])
            out[id] = m;
    }
}
