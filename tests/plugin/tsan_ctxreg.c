/* tsan_ctxreg.c: the communicator registry under ThreadSanitizer (issue 15,
 * item 4a): the shipper copies a context's definition while an NCCL thread,
 * at a v3 context's first Coll, learns the communicator.
 *
 * Built with -fsanitize=thread together with plugin/ctxreg.c alone, and only
 * where such a binary runs (tests/plugin/CMakeLists.txt). For every context
 * the reader (the shipper's role) copies the definition first and says so
 * with a relaxed store, which orders nothing for ThreadSanitizer; the writer
 * waits for that before it learns. A definition rewritten in place is then a
 * race on every context whatever the timing (ThreadSanitizer exits 66), and
 * every copy is also checked to be one whole definition, old or new.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

enum { CTXS = 256 };

static nsc_pctx *ctxs[CTXS];
static _Atomic int copied[CTXS]; /* relaxed only: no happens-before */
static _Atomic int torn;

static void expect_new(int i, nsc_ctx_def *want)
{
    *want = (nsc_ctx_def){.comm_id = 0x5000u + (uint64_t)i, .index = (uint16_t)i, .nnodes = 1,
                          .nranks = 8, .rank = i % 8, .api_version = 3};
    snprintf(want->name, sizeof want->name, "learnt-communicator-%d", i);
}

static int same(const nsc_ctx_def *a, const nsc_ctx_def *b)
{
    return a->comm_id == b->comm_id && a->index == b->index && a->nnodes == b->nnodes &&
           a->nranks == b->nranks && a->rank == b->rank && a->api_version == b->api_version &&
           strcmp(a->name, b->name) == 0;
}

static void *shipper(void *arg)
{
    (void)arg;
    for (int i = 0; i < CTXS; i++) {
        nsc_ctx_def old = {.index = (uint16_t)i, .nnodes = 1, .nranks = 8, .rank = -1,
                           .api_version = 3};
        nsc_ctx_def learnt;
        expect_new(i, &learnt);
        for (uint32_t version = 0; version != 2;) {
            const nsc_ctx_def *d;
            version = nsc_ctx_def_get(ctxs[i], &d);
            nsc_ctx_def copy = *d;
            if (!same(&copy, version == 2 ? &learnt : &old))
                atomic_fetch_add(&torn, 1);
            atomic_store_explicit(&copied[i], 1, memory_order_relaxed);
        }
    }
    return NULL;
}

static void *nccl_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < CTXS; i++) {
        while (!atomic_load_explicit(&copied[i], memory_order_relaxed))
            ;
        nsc_ctx_def want;
        expect_new(i, &want);
        nsc_ctx_learn_comm(ctxs[i], want.comm_id, want.name, want.rank);
    }
    return NULL;
}

int main(void)
{
    for (int i = 0; i < CTXS; i++)
        if (!(ctxs[i] = nsc_ctx_create(0, NULL, 1, 8, -1, 3)))
            return 1;
    pthread_t a, b;
    if (pthread_create(&a, NULL, shipper, NULL) || pthread_create(&b, NULL, nccl_thread, NULL))
        return 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    int n = atomic_load(&torn);
    printf("%d contexts learnt while copied, %d torn copies\n", CTXS, n);
    return n != 0;
}
