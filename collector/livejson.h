/* livejson.h: the live state as JSON for the API's answers (the status
 * endpoint, the live stream, the analysis's status document).
 *
 * Owns rendering it through the collector's store (its own live state or one
 * merged with other collectors', cstore.h's live_read), under the store's
 * lock, into one malloc'd text.
 */
#ifndef NCCLSCOPE_COLLECTOR_LIVEJSON_H
#define NCCLSCOPE_COLLECTOR_LIVEJSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cstate.h"

/* JSON of the live state (nsc_live_status_json, ...), written under its
 * lock; malloc'd text and its length, or NULL when out of memory. */
typedef int (*nsc_http_live_fn)(const nsc_live *l, uint64_t now, FILE *out);
char *nsc_http_live_json(nsc_collector *c, nsc_http_live_fn fn, size_t *len);

#endif
