/* qbase.h: what the query API (query.h) and its endpoints (qint.h) both name.
 *
 * Owns the query error codes, the handle of a parsed query and the write
 * callback results go out through. Apart from query.h so that the
 * endpoints, which query.c calls, need none of query.c to name them.
 */
#ifndef NCCLSCOPE_QBASE_H
#define NCCLSCOPE_QBASE_H

#include <stddef.h>

enum nsc_query_err {
    NSC_QUERY_OK = 0,
    NSC_QUERY_EUNKNOWN = -1,  /* no such endpoint: 404 */
    NSC_QUERY_EPARAM = -2,    /* bad parameter: 400 */
    NSC_QUERY_ENOTFOUND = -3, /* unknown job / comm: 404 */
    NSC_QUERY_ESTORE = -4,    /* store error: 500 */
    NSC_QUERY_EWRITE = -5     /* the write callback returned nonzero */
};

/* Parsed, validated parameters of one request. */
typedef struct nsc_query nsc_query;

/* Called with consecutive pieces of the result; nonzero stops the query. */
typedef int (*nsc_query_write_fn)(void *arg, const void *data, size_t len);

#endif
