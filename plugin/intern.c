/* intern.c: per-process string interning for func, datatype, algo, proto and
 * the other names NCCL passes as `const char *`.
 *
 * NCCL's names are static strings, so the table is keyed by pointer: a lookup
 * is a hash and a compare, lock-free, in a table preallocated in .bss. The
 * first thread to see a pointer claims an entry with one CAS and copies the
 * text; the id is the entry's position, so it is known at once. The shipper
 * sends an id's text before the first record that uses it (drain.c).
 */
#include <string.h>

#include "internal.h"

#define MAX_PROBES 32u
#define READY_SPINS 1000000u

/* Keys apart from the texts, so the hot path's lookup touches one dense array. */
_Atomic uintptr_t nsc_intern_keys[NSC_INTERN_CAP];

typedef struct intern_text {
    _Atomic uint32_t ready;
    char text[sizeof(((nsc_str_def *)0)->text)];
} intern_text;

static intern_text texts[NSC_INTERN_CAP];

static void fill(intern_text *e, const char *s)
{
    size_t n = strnlen(s, sizeof e->text - 1);
    memcpy(e->text, s, n);
    e->text[n] = '\0';
    atomic_store_explicit(&e->ready, 1, memory_order_release);
}

NSC_OUT_OF_LINE nsc_str nsc_intern_slow(const char *s)
{
    if (!s)
        return 0;
    uintptr_t key = (uintptr_t)s;
    uint32_t h = nsc_intern_hash(key);
    for (uint32_t probe = 0; probe < MAX_PROBES; probe++) {
        uint32_t i = (h + probe) & (NSC_INTERN_CAP - 1);
        uintptr_t cur = atomic_load_explicit(&nsc_intern_keys[i], memory_order_acquire);
        if (cur == 0 && atomic_compare_exchange_strong(&nsc_intern_keys[i], &cur, key)) {
            fill(&texts[i], s);
            return (nsc_str)(i + 1);
        }
        if (cur == key)
            return (nsc_str)(i + 1);
    }
    return 0; /* table crowded: the field is sent as absent */
}

const char *nsc_intern_text(nsc_str id)
{
    if (id == 0 || id > NSC_INTERN_CAP)
        return NULL;
    intern_text *e = &texts[id - 1];
    /* The claiming thread is between its CAS and its copy: nanoseconds. */
    for (uint32_t spin = 0; spin < READY_SPINS; spin++)
        if (atomic_load_explicit(&e->ready, memory_order_acquire))
            return e->text;
    return NULL;
}
