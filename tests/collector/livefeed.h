/* livefeed.h: feeding and reading a live state (engine/live) in tests: the
 * snapshot and merge tests and the snapshot fuzzer's seeds. */
#ifndef NCCLSCOPE_TEST_LIVEFEED_H
#define NCCLSCOPE_TEST_LIVEFEED_H

#include <stdint.h>

#include "json.h"
#include "live.h"

/* Who sends and what: process pid on host (job), as rank of an nranks
 * communicator comm doing func on ncclFloat32, through agent. */
typedef struct nsc_test_feed {
    const char *agent, *job, *host, *func;
    uint32_t pid;
    int rank, nranks;
    uint64_t comm;
} nsc_test_feed;

/* One section of the process's Colls seq [from, to] (at most 32), each
 * completed 0.5 ms after its start but the last when open_last; then the
 * agent is seen. At now. 0, or -1 when the live state refused it. */
int nsc_test_feed_colls(nsc_live *l, const nsc_test_feed *f, uint64_t from, uint64_t to, int open_last,
                        uint64_t now);

/* The status document at now (malloc'd text, *len bytes if len), or NULL. */
char *nsc_test_live_status(const nsc_live *l, uint64_t now, size_t *len);
/* The same, parsed into *doc (the caller frees it): 0, or -1 with *why
 * saying what failed. */
int nsc_test_live_status_doc(const nsc_live *l, uint64_t now, nsc_json_doc *doc, const char **why);

#endif
