/* ctxreg.c: the registry of communicator contexts this process created.
 *
 * The context pointer handed to NCCL is an entry of a static table, so "is
 * this context ours?" is a range and alignment check on the address alone; a
 * foreign (PXN) context is never dereferenced. Indices are handed out once per
 * load, in init order, and name the context on the wire.
 *
 * The shipper copies a definition while NCCL's threads run; a v3 context's
 * definition changes once, when its first Coll or P2p names the communicator.
 * So no definition is ever rewritten: the new one is built in the second
 * record and published with a release store of the version, and a reader
 * always sees one whole record (no lock, no retry).
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
    nsc_ctx_def *d = &c->defs[0];
    d->index = (uint16_t)i;
    d->comm_id = comm_id;
    d->nnodes = nnodes;
    d->nranks = nranks;
    d->rank = rank;
    d->api_version = api_version;
    snprintf(d->name, sizeof d->name, "%s", name ? name : "");
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

/* v3's init knows nothing of the communicator; its first Coll or P2p does.
 * The thread that wins the claim is the only writer of defs[1]. */
void nsc_ctx_learn_comm(nsc_pctx *c, uint64_t comm_id, const char *name, int rank)
{
    uint32_t expect = 0;
    if (!atomic_compare_exchange_strong(&c->learned, &expect, 1))
        return;
    nsc_ctx_def *d = &c->defs[1];
    *d = c->defs[0];
    d->comm_id = comm_id;
    d->rank = rank;
    snprintf(d->name, sizeof d->name, "%s", name ? name : "");
    atomic_store_explicit(&c->def_version, 2, memory_order_release);
}

uint32_t nsc_ctx_def_get(const nsc_pctx *c, const nsc_ctx_def **def)
{
    uint32_t version = atomic_load_explicit(&c->def_version, memory_order_acquire);
    *def = &c->defs[version - 1];
    return version;
}
