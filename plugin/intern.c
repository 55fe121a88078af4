/* intern.c: per-process string interning for func, datatype, algo, proto and
 * the other names NCCL passes as `const char *`.
 *
 * NCCL's names are static strings, so the table is keyed by pointer: a lookup
 * is a hash and a compare, lock-free, in a table preallocated in .bss. The
 * first thread to see a pointer claims an entry with one CAS and copies the
 * text; the id is the entry's position, so it is known at once. The shipper
 * sends an id's text before the first record that uses it (shipper.c).
 */
#include <string.h>

#include "internal.h"

#define MAX_PROBES 32u
#define READY_SPINS 1000000u

typedef struct intern_entry {
    _Atomic uintptr_t key;
    _Atomic uint32_t ready;
    char text[sizeof(((nsc_str_def *)0)->text)];
} intern_entry;

static intern_entry table[NSC_INTERN_CAP];

static uint32_t hash_ptr(uintptr_t p)
{
    return (uint32_t)(((uint64_t)p * 0x9e3779b97f4a7c15ull) >> 40) & (NSC_INTERN_CAP - 1);
}

static void fill(intern_entry *e, const char *s)
{
    size_t n = strnlen(s, sizeof e->text - 1);
    memcpy(e->text, s, n);
    e->text[n] = '\0';
    atomic_store_explicit(&e->ready, 1, memory_order_release);
}

nsc_str nsc_intern(const char *s)
{
    if (!s)
        return 0;
    uintptr_t key = (uintptr_t)s;
    uint32_t h = hash_ptr(key);
    for (uint32_t probe = 0; probe < MAX_PROBES; probe++) {
        uint32_t i = (h + probe) & (NSC_INTERN_CAP - 1);
        intern_entry *e = &table[i];
        uintptr_t cur = atomic_load_explicit(&e->key, memory_order_acquire);
        if (cur == 0 && atomic_compare_exchange_strong(&e->key, &cur, key)) {
            fill(e, s);
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
    intern_entry *e = &table[id - 1];
    /* The claiming thread is between its CAS and its copy: nanoseconds. */
    for (uint32_t spin = 0; spin < READY_SPINS; spin++)
        if (atomic_load_explicit(&e->ready, memory_order_acquire))
            return e->text;
    return NULL;
}
