/* fuzz_query.c: libFuzzer target for the query parameter parser.
 * Input: an endpoint selector byte, then the query string. The parser must
 * return 0 with a query or an error with a one-line message, never crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"comms", "timeline", "collectives", "topology", "stats",
                                        "p2p", "nope"};
    if (size == 0)
        return 0;
    const char *name = names[data[0] % (sizeof names / sizeof names[0])];
    char *qs = malloc(size);
    if (!qs)
        return 0;
    memcpy(qs, data + 1, size - 1);
    qs[size - 1] = 0;
    nsc_query *q = NULL;
    char err[256];
    err[0] = 0;
    int rc = nsc_query_parse(name, qs, &q, err, sizeof err);
    if (rc == 0) {
        if (!q || !nsc_query_content_type(q))
            abort();
        nsc_query_free(q);
    } else if (q || !err[0] || strchr(err, '\n')) {
        abort();
    }
    free(qs);
    return 0;
}
