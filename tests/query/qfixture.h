/* qfixture.h: a small job with known answers for the query tests, written
 * through the real store writer, and a helper that runs a query into memory. */
#ifndef NCCLSCOPE_TEST_QFIXTURE_H
#define NCCLSCOPE_TEST_QFIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define QF_COMM 0xabc123ull
#define QF_SUB 0xfedcba9876543210ull  /* split child: ranks 0 and 1 of QF_COMM's processes; 16 hex digits */
#define QF_RANKS 4
#define QF_COLLS 4              /* seq 0..3; seq 3: rank 3 uses ncclFloat16 */
#define QF_CHANNELS 2
#define QF_LATE_RANK 2          /* arrives QF_SKEW after the others */
#define QF_SKEW 5000
#define QF_OFF1 1000000000ll    /* host h1's clock: reference = host + QF_OFF1 */
#define QF_T0 2000000000000ull  /* aligned time of the first collective */
#define QF_PERIOD 1000000ull    /* between collectives */
#define QF_DONE 100000ull       /* completion after the first arrival */
#define QF_KERNEL 47000ull      /* each KernelCh: 3 us to 50 us after its rank's enqueue */
#define QF_EVENTS_PER_COLL (1 + 2 * QF_CHANNELS)

/* Fill dir with the fixture job "jobA" (and an older job "old"). */
int qf_fill(const char *dir);
/* Aligned (true) time of rank's enqueue of collective seq. */
uint64_t qf_enqueue(int rank, uint64_t seq);

typedef struct qf_result {
    int rc;
    char err[256];
    char *text;
    size_t len;
    uint64_t blocks;  /* the blocks the query decoded */
} qf_result;

/* Parse and run name?qs against the store in dir; text is NUL-terminated. */
qf_result qf_run(nsc_store *st, const char *name, const char *qs);
void qf_result_free(qf_result *r);

#endif
