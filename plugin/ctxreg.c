/* ctxreg.c: the registry of communicator contexts this process created.
 *
 * The context pointer handed to NCCL is an entry of a static table, so "is
 * this context ours?" is a range and alignment check on the address alone; a
 * foreign (PXN) context is never dereferenced. Indices are handed out once per
 * load, in init order, and name the context on the wire.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static nsc_pctx table[NSC_MAX_CTX];
static _Atomic uint32_t count;

nsc_pctx *nsc_ctx_create(uint64_t comm_id, const char *name, int nnodes, int nranks, int rank,
                         int api_version)
{
    uint32_t i = atomic_load(&count);
    if (i >= NSC_MAX_CTX)
        return NULL;
    nsc_pctx *c = &table[i];
    memset(c, 0, sizeof *c);
    c->index = (uint16_t)i;
    c->def.index = (uint16_t)i;
    c->def.comm_id = comm_id;
    c->def.nnodes = nnodes;
    c->def.nranks = nranks;
    c->def.rank = rank;
    c->def.api_version = api_version;
    snprintf(c->def.name, sizeof c->def.name, "%s", name ? name : "");
    atomic_store(&c->def_version, 1);
    atomic_store(&count, i + 1);
    return c;
}

nsc_pctx *nsc_ctx_lookup(const void *p)
{
    uintptr_t a = (uintptr_t)p, base = (uintptr_t)table;
    if (a < base || a >= base + sizeof table || (a - base) % sizeof(nsc_pctx))
        return NULL;
    uintptr_t i = (a - base) / sizeof(nsc_pctx);
    return i < atomic_load_explicit(&count, memory_order_acquire) ? &table[i] : NULL;
}

nsc_pctx *nsc_ctx_at(uint16_t index)
{
    return index < atomic_load_explicit(&count, memory_order_acquire) ? &table[index] : NULL;
}

uint32_t nsc_ctx_count(void)
{
    return atomic_load_explicit(&count, memory_order_acquire);
}

/* v3's init knows nothing of the communicator; its first Coll or P2p does. */
void nsc_ctx_learn_comm(nsc_pctx *c, uint64_t comm_id, const char *name, int rank)
{
    uint32_t expect = 0;
    if (!atomic_compare_exchange_strong(&c->learned, &expect, 1))
        return;
    c->def.comm_id = comm_id;
    c->def.rank = rank;
    snprintf(c->def.name, sizeof c->def.name, "%s", name ? name : "");
    atomic_fetch_add_explicit(&c->def_version, 1, memory_order_release);
}
